#!/usr/bin/env bash
# What opening a database costs in peak memory, against the same database opened without value
# filters: runs `bfh stats` (which waits until every leaf is loaded) RUNS times with the value
# filters and RUNS times with --no-value-filters, each a fresh process, and prints the medians
# of its peak_rss_bytes (getrusage's ru_maxrss) and the ratio of the difference to what the
# index reports it holds, index_bytes + memtable_index_bytes (issue 45, 4: at most 1.3).
#   bash scripts/open-peak.sh DIR...
#   BFH        the bfh command (default build/bfh)
#   RUNS       processes per side (default 3)
# Prints a header naming every parameter, then CSV (one row per DIR).
set -euo pipefail
if [ $# -lt 1 ]; then
  echo "usage: bash scripts/open-peak.sh DIR..." >&2
  exit 2
fi
bfh=${BFH:-build/bfh}
runs=${RUNS:-3}

# The value of column $2 in the CSV of `bfh stats` ($1: its two lines).
col() {
  awk -F, -v name="$2" 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == name) c = i }
                        NR == 2 { print (c ? $c : "") }' <<<"$1"
}

median() { # numbers, one a line
  sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'
}

echo "# open-peak: bfh=$bfh runs=$runs"
echo "dir,tables,index_bytes,memtable_index_bytes,index_load_peak_bytes,peak_rss_bytes,peak_rss_bare_bytes,over_bytes,over_ratio"
for dir in "$@"; do
  with=() bare=()
  for ((r = 0; r < runs; r++)); do
    out=$("$bfh" stats "$dir" --csv)
    with+=("$(col "$out" peak_rss_bytes)")
    out_bare=$("$bfh" stats "$dir" --csv --no-value-filters)
    bare+=("$(col "$out_bare" peak_rss_bytes)")
  done
  peak=$(printf '%s\n' "${with[@]}" | median)
  peak_bare=$(printf '%s\n' "${bare[@]}" | median)
  index=$(col "$out" index_bytes)
  memtable=$(col "$out" memtable_index_bytes)
  awk -v d="$dir" -v t="$(col "$out" tables)" -v i="$index" -v m="$memtable" \
    -v l="$(col "$out" index_load_peak_bytes)" -v p="$peak" -v b="$peak_bare" \
    'BEGIN { printf "%s,%s,%s,%s,%s,%s,%s,%d,%.3f\n", d, t, i, m, l, p, b, p - b, (p - b) / (i + m) }'
done

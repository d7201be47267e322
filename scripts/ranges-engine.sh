#!/usr/bin/env bash
# Ranges and prefixes through the engine (issue 48, doc/query.md "Ranges"): a database of NUM
# records, each value "NAME,N" with NAME = w + 6 digits and N a distinct multiple of 4096, in
# random order, declared name=csv:1:range and n=csv:2:int:range; each query is run by auto
# (the filters' plan) and by scan, RUNS times for a median, and its figures written to one CSV:
#   commit,num,query,where,method,method_used,results,tables_live,tables_scanned,blocks_read,
#   seconds_median,scan_over_method
# The queries: an empty range of 1,024 codes between two held values, the point query of a
# held value (for scale), a range of 1,024 codes holding one value, prefixes of 5 and 4 bytes
# (NUM / 10,000 and NUM / 1,000 matches).
#   NUM    records (default 200000)
#   BUILD  build directory with the bfh command (default build-rel; configured RelWithDebInfo)
#   OUT    the CSV (default measurements/ranges/engine-NUM.csv)
#   RUNS   runs of each search (default 5)
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/measure-common.sh
bfh=$(bfh_cli)
num=${NUM:-200000}
runs=${RUNS:-5}
out=${OUT:-measurements/ranges/engine-$num.csv}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/bfh-ranges.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

# Records in random order (a fixed permutation: i * 7919 mod NUM, NUM not a multiple of 7919).
awk -v n="$num" 'BEGIN { for (i = 0; i < n; i++) { p = (i * 7919) % n; q = (i * 104729) % n;
  printf "k%07d\tw%06d,%.0f\n", i, q, p * 4096 } }' >"$tmp/records.tsv"
"$bfh" load "$tmp/db" --from "$tmp/records.tsv" --format tsv --table-bytes 65536 \
  --memtable-bytes 65536 --attr name=csv:1:range --attr n=csv:2:int:range >/dev/null

mid=$(( (num / 2) * 4096 ))
queries=(
  "empty-range-1024|n BETWEEN $((mid + 1000)) AND $((mid + 2023))"
  "point-present|n = $mid"
  "range-1024-one|n BETWEEN $((mid - 500)) AND $((mid + 523))"
  "prefix-5-bytes|name LIKE 'w0012%'"
  "prefix-4-bytes|name LIKE 'w012%'"
)

# The median of RUNS searches: seconds from --json, the other figures from the last run.
measure() {
  local where=$1 method=$2 json
  for r in $(seq "$runs"); do
    json=$("$bfh" search "$tmp/db" --where "$where" --method "$method" --json --count 2>/dev/null || true)
    echo "$json" | grep -o '"seconds": *[0-9.e-]*' | head -1 | sed 's/.*: *//' >>"$tmp/secs"
  done
  local med
  med=$(sort -g "$tmp/secs" | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }')
  rm -f "$tmp/secs"
  field() { echo "$json" | grep -o "\"$1\": *[^,}]*" | head -1 | sed 's/.*: *//; s/"//g'; }
  echo "$(field method_used),$(field results),$(field tables_live),$(field tables_scanned),$(field blocks_read),$med"
}

echo "commit,num,query,where,method,method_used,results,tables_live,tables_scanned,blocks_read,seconds_median,scan_over_method" >"$out"
for q in "${queries[@]}"; do
  name=${q%%|*}
  where=${q#*|}
  scan=$(measure "$where" scan)
  auto=$(measure "$where" auto)
  s_scan=${scan##*,}
  s_auto=${auto##*,}
  ratio=$(awk -v a="$s_scan" -v b="$s_auto" 'BEGIN { printf "%.1f", (b > 0 ? a / b : 0) }')
  echo "$commit,$num,$name,\"$where\",scan,$scan,1.0" >>"$out"
  echo "$commit,$num,$name,\"$where\",auto,$auto,$ratio" >>"$out"
done
cat "$out"

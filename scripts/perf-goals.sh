#!/usr/bin/env bash
# The performance goals of the engines' read paths, each figure against its rival measured in
# the same run, in one CSV (doc/lsm.md "Performance goals"):
#   commit,num,goal,bfh,rival,unit,ratio,target,met
# ratio is rival / bfh for times (> 1: bfh faster) and bfh / rival for bytes; target is the
# bound it must meet (>= for a ratio, <= for a time or a memory ratio: see `goal`).
#   NUM    entries (default 1000000; the medium run: NUM=10000000)
#   BUILD  build directory (default build-bench, as scripts/run-benchmarks.sh)
#   OUT    the CSV (default measurements/perf/goals-NUM.csv)
#   RUNS   runs of each shell command timed for a median (default 11)
#   ONLY   space-separated subset: db search peak rocksdb, or rocksdb_rw (run only when named)
#          (the gets' goals are stated at 1M,
#          and db_bench at 10M takes about an hour: NUM=10000000 ONLY="search peak rocksdb");
#          its rows replace those goals' rows in OUT, whose other rows stay
# met is yes or no, or n/a where NUM is below the size a goal is stated at (10M for a new
# process's search and for the peak memory).
# Run it on a quiet machine: at 1M it takes about 5 minutes on 2 cores; the medium run
# (NUM=10000000 ONLY="search peak rocksdb") about 10.
set -euo pipefail
cd "$(dirname "$0")/.."
commit=$(git rev-parse --short=12 HEAD) # what is measured: the tree as the run begins
git diff --quiet HEAD -- . ':!measurements' || commit="$commit-dirty"
bash scripts/install-deps.sh
build=${BUILD:-build-bench}
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DBFH_BUILD_TESTS=OFF -DBFH_NATIVE=ON >/dev/null
cmake --build "$build" -j"$(nproc)" >/dev/null
num=${NUM:-1000000}
runs=${RUNS:-11}
out=${OUT:-measurements/perf/goals-$num.csv}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/bfh-perf-goals.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$(dirname "$out")"
rows="$tmp/rows.csv"
: >"$rows"

# row GOAL BFH RIVAL UNIT RATIO TARGET MET
row() { echo "$commit,$num,$1,$2,$3,$4,$5,$6,$7" >>"$rows"; }
# stated_at N MET: MET, or "n/a" below N entries, the size the goal is stated at (the figure is
# kept all the same: at 1M a process's start is most of a search, and a small index shows the
# allocator's megabyte)
want() { [ -z "${ONLY:-}" ] || [[ " $ONLY " == *" $1 "* ]]; }
stated_at() { if [ "$num" -ge "$1" ]; then echo "$2"; else echo n/a; fi; }
# at_least X T / at_most X T: yes or no
at_least() { awk -v x="$1" -v t="$2" 'BEGIN { print (x >= t) ? "yes" : "no" }'; }
at_most() { awk -v x="$1" -v t="$2" 'BEGIN { print (x <= t) ? "yes" : "no" }'; }
median() { sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
div() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", b ? a / b : 0 }'; }
# ms_median CMD...: the median wall time in ms of RUNS runs of CMD (its output dropped): the
# command's fork, exec and run, read from bash's own clock ($EPOCHREALTIME, microseconds), so
# that no `date` process is timed with it
ms_median() {
  for _ in $(seq 1 "$runs"); do
    local t0 t1
    t0=$EPOCHREALTIME
    "$@" >/dev/null 2>&1
    t1=$EPOCHREALTIME
    awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f\n", (b - a) * 1000 }'
  done | median
}

# 1. The own engine's key path against stock LevelDB (db_bench: same process, medians of 3
#    rounds): with LevelDB's default 8 MiB block cache for both, and with a cache that holds
#    the data (LevelDB reads its tables through mmap, so the page cache serves it either way);
#    the own engine as it opens by default (pread) and with mmap_reads (rows *_mmap_*).
data_mb=$((num * 140 / 1048576 + 64))
want db && for cache in 8 "$data_mb"; do
  echo "perf-goals: db_bench at $num, cache $cache MiB" >&2
  "$build/db_bench" --num "$num" --value_size 100 --rounds 3 --cache_mb "$cache" \
    --benchmarks fillrandom,readrandom,readmissing >"$tmp/db_bench.csv"
  while IFS=, read -r w b l r; do
    case "$w" in
      '# fillrandom') g=fill t=1.0 ;;
      '# readrandom') g=get t=1.5 ;;
      '# readmissing') g=miss t=2.5 ;;
      '# bfh_mmap fillrandom') g=fill_mmap t=1.0 ;;
      '# bfh_mmap readrandom') g=get_mmap t=1.5 ;;
      '# bfh_mmap readmissing') g=miss_mmap t=2.5 ;;
      *) continue ;;
    esac
    row "${g}_vs_leveldb_cache_${cache}MiB" "$b" "$l" s "$r" ">=$t" "$(at_least "$r" "$t")"
  done <"$tmp/db_bench.csv"
done

# 2. A new process's search on the own engine against its full scan (warm page cache).
db="$tmp/lsm"
if want search || want peak; then
  echo "perf-goals: bfh load at $num" >&2
  "$build/bfh" load "$db" --synthetic "$num" >/dev/null 2>&1
fi
if want search; then
  echo "perf-goals: bfh search at $num" >&2
  value="Value$((num / 2 + 1))"
  "$build/bfh" search "$db" "$value" >/dev/null 2>&1 # warm, and found (else set -e stops here)
  "$build/bfh" search "$db" "$value" --method scan >/dev/null 2>&1
  s=$(ms_median "$build/bfh" search "$db" "$value")
  scan=$(ms_median "$build/bfh" search "$db" "$value" --method scan)
  r=$(div "$scan" "$s")
  row search_new_process_vs_scan "$s" "$scan" ms "$r" ">=5" \
    "$(stated_at 10000000 "$(at_least "$r" 5)")"
  row search_new_process_ms "$s" "" ms "" "<=15" "$(stated_at 10000000 "$(at_most "$s" 15)")"
fi

# 3. Peak memory of `bfh stats` (it loads every leaf) over the same database opened without
#    value filters, against what the index says it holds (scripts/open-peak.sh, medians).
if want peak; then
  echo "perf-goals: bfh stats peak memory at $num" >&2
  BFH="$build/bfh" RUNS=5 bash scripts/open-peak.sh "$db" >"$tmp/peak.csv"
  IFS=, read -r _ _ idx mem _ _ _ over r < <(grep -v '^#' "$tmp/peak.csv" | tail -n 1)
  row stats_peak_over_index "$over" $((idx + mem)) bytes "$r" "<=1.3" \
    "$(stated_at 10000000 "$(at_most "$r" 1.3)")"
fi
rm -rf "$db"

# 4. A live RocksDB read-only: AUTO against a RocksDB iterator scan (rocksdb_readonly_bench).
if want rocksdb; then
  echo "perf-goals: rocksdb_readonly_bench at $num" >&2
  "$build/rocksdb_readonly_bench" --num "$num" --dir "$tmp/rocksdb" >"$tmp/rro.csv"
  while IFS=, read -r kind us scan_ms ratio _; do
    case "$kind" in
      table) t=1000 ;;
      memtable) t=5000 ;;
      absent) t=10000 ;;
      *) continue ;;
    esac
    scan_us=$(awk -v x="$scan_ms" 'BEGIN { print x * 1000 }')
    row "rocksdb_readonly_${kind}_vs_iterator" "$us" "$scan_us" us "$ratio" ">=$t" \
      "$(at_least "$ratio" "$t")"
    if [ "$kind" = absent ]; then
      row rocksdb_readonly_absent_us "$us" "" us "" "<=20" "$(at_most "$us" 20)"
    fi
  done <"$tmp/rro.csv"
fi

# 5. The read-write RocksDB engine: AUTO against an iterator over a read-only RocksDB handle on
#    the same database, for a value in a table, one only in the memtable and WAL, and an
#    absent one; the bytes a present search reads; and the ingest with value filters on over
#    off (rocksdb_bench: medians, its 25 queries a class and 3 ingest runs each way). Only when
#    ONLY names it: its database and ingest runs take about 10 minutes.
if [[ " ${ONLY:-} " == *" rocksdb_rw "* ]]; then
  echo "perf-goals: rocksdb_bench at $num" >&2
  "$build/rocksdb_bench" --num "$num" --dir "$tmp/rocksdb_rw" >"$tmp/rrw.csv"
  awk -F, '$1 == "search" && $3 == "rocksdb_iterator" { print $2, $5 }' "$tmp/rrw.csv" \
    >"$tmp/rrw_base.txt"
  while IFS=, read -r kind class method _ ms ratio goal _; do
    [ "$kind" = search ] && [ "$method" = AUTO ] || continue
    base_ms=$(awk -v c="$class" '$1 == c { print $2 }' "$tmp/rrw_base.txt")
    us=$(awk -v x="$ms" 'BEGIN { printf "%.1f", x * 1000 }')
    base_us=$(awk -v x="$base_ms" 'BEGIN { printf "%.1f", x * 1000 }')
    row "rocksdb_rw_${class}_vs_iterator" "$us" "$base_us" us "$ratio" ">=$goal" \
      "$(at_least "$ratio" "$goal")"
  done <"$tmp/rrw.csv"
  IFS=, read -r _ _ _ _ _ _ bound _ _ bytes_max _ < <(grep '^goal,present,' "$tmp/rrw.csv")
  row rocksdb_rw_present_bytes_read_max "$bytes_max" "" bytes "" "<=$bound" \
    "$(at_most "$bytes_max" "$bound")"
  IFS=, read -r _ _ _ _ on_ms off_ms _ rest < <(grep '^goal,ingest,' "$tmp/rrw.csv")
  r=${rest%% *}
  row rocksdb_rw_ingest_on_over_off "$on_ms" "$off_ms" ms "$r" "<=1.15" "$(at_most "$r" 1.15)"
fi

# A subset (ONLY) replaces its own rows in an existing file and keeps the others' rows.
kept="$tmp/kept.csv"
: >"$kept"
if [ -n "${ONLY:-}" ] && [ -f "$out" ]; then
  awk -F, 'NR == FNR { mine[$3] = 1; next } FNR > 1 && !($3 in mine)' "$rows" "$out" >"$kept"
fi
{
  echo "commit,num,goal,bfh,rival,unit,ratio,target,met"
  cat "$kept" "$rows"
} >"$out"
cat "$out" >&2
echo "perf-goals: $out" >&2

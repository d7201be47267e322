#!/usr/bin/env bash
# Runs every benchmark and keeps its CSV in results/bench/ (one file per bench and size).
# Long: about an hour at the default sizes on a 2-core machine. Run it on a quiet machine;
# each bench measures its baseline (stock LevelDB, the full scan, leaf-by-leaf probing) in
# the same run and prints the ratios.
#   NUM        entries for the database benches (default 1000000; the goals are stated at
#              1M and 10M: NUM=10000000)
#   ONLY       space-separated subset: filter hierarchy db search leveldb beyond rocksdb ranges
#              ingest
# The questions `bfh run` answers (scripts/run-experiments.sh, doc/experiments.md) have no bench:
# the own engine beyond the paper (`bfh run beyond`), index memory against latency and the
# Cuckoo Index (`bfh run memory`), AUTO against the stand-alone index (`bfh run tradeoff`).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
build=${BUILD:-build-bench}
# For this machine's CPU: the benchmarks run where they are built (doc/portability.md).
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DBFH_BUILD_TESTS=OFF -DBFH_NATIVE=ON >/dev/null
cmake --build "$build" -j"$(nproc)" >/dev/null
num=${NUM:-1000000}
out=results/bench
mkdir -p "$out"

run() { # name, command...
  local name=$1; shift
  echo "$name: $*" >&2
  "$@" > "$out/$name.csv"
}
want() { [ -z "${ONLY:-}" ] || [[ " $ONLY " == *" $1 "* ]]; }

want filter && run filter_bench "$build/filter_bench"
want hierarchy && run hierarchy_bench "$build/hierarchy_bench"
want hierarchy && run hierarchy_bench_6434 "$build/hierarchy_bench" --max-leaves 6434 --sliced-only
want db && run "db_bench_$num" "$build/db_bench" --num "$num" --rounds 3
want search && run "search_bench_$num" "$build/search_bench" --num "$num"
want leveldb && run "leveldb_search_bench_$num" "$build/leveldb_search_bench" --num "$num" \
  --ingest-num 1000000 --ingest-rounds 3
want beyond && run block_filter_bench "$build/block_filter_bench"
want beyond && run block_scan_bench "$build/block_scan_bench"
want beyond && run "leveldb_search_bench_beyond_$num" "$build/leveldb_search_bench" --beyond \
  --num "$num"
want rocksdb && run "rocksdb_bench_$num" "$build/rocksdb_bench" --num "$num" --ingest-num 1000000
want ranges && run "ranges_bench_$num" "$build/ranges_bench" --num "$num"
want ingest && run "ingest_bench_$num" "$build/ingest_bench" --num "$num" --updates $((num / 3)) \
  --rounds 5 --commit "$(git rev-parse --short=12 HEAD)"
echo "results in $out" >&2

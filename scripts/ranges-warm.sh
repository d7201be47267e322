#!/usr/bin/env bash
# Ranges and prefixes measured warm (issue 48's goals, doc/query.md "Ranges"): bench/ranges_bench
# loads NUM records into one own-engine database with the stand-alone index, opens it once and
# times, in the same process, medians of RUNS rounds of an empty range of 1,024 codes, ranges of
# 10 and 100 matches and of 0.01% selectivity, a prefix matching 0.15%, by AUTO, SCAN and
# STANDALONE, and AUTO's absent and present point queries; it prints the goals' ratios. The CSV
# (its columns in bench/ranges_bench.c) goes to OUT.
#   NUM    records (default 1000000)
#   RUNS   rounds (default 15)
#   BUILD  build directory (default build-rel; configured RelWithDebInfo with the benches)
#   RISING 1: the values rise with the key (--rising), and the shares of the tables SLICED
#          skips and the zones rule out (default 0)
#   LEVELS n's range levels (--int-levels, e.g. 24; default: the declaration's default)
#   OUT    the CSV (default measurements/ranges/warm-NUM.csv; with RISING=1,
#          measurements/ranges/rising-NUM.csv; with LEVELS, -levels-LEVELS before .csv)
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/measure-common.sh
if [ ! -f "$build/CMakeCache.txt" ]; then
  cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DBFH_BUILD_TESTS=OFF >/dev/null
fi
cmake -S . -B "$build" -DBFH_BUILD_BENCH=ON >/dev/null
cmake --build "$build" -j"$(nproc)" --target ranges_bench >/dev/null
num=${NUM:-1000000}
runs=${RUNS:-15}
rising=()
kind=warm
if [ "${RISING:-0}" = 1 ]; then rising=(--rising); kind=rising; fi
levels=()
suffix=
if [ -n "${LEVELS:-}" ]; then levels=(--int-levels "$LEVELS"); suffix="-levels-${LEVELS//,/-}"; fi
out=${OUT:-measurements/ranges/$kind-$num$suffix.csv}
"$build/ranges_bench" --num "$num" --runs "$runs" --commit "$commit" "${rising[@]}" "${levels[@]}" |
  tee "$out.tmp"
grep -v '^#' "$out.tmp" >"$out"
rm -f "$out.tmp"

#!/usr/bin/env bash
# Builds bfh and reproduces the paper's tables and figures with `bfh run all` (at the small
# scale also `bfh run ycsb` and `bfh run ranges`), which also
# writes REPORT.md (the paper's numbers and ours side by side, with the commit and the
# command line; `bfh run report --out DIR` writes it again from the CSVs in DIR):
#   scripts/run-experiments.sh            # small scale (minutes), results in ./results
#   SCALE=medium scripts/run-experiments.sh
#   SCALE=paper ENGINE=leveldb OUT=/big/disk/results scripts/run-experiments.sh
# Environment: SCALE (small|medium|paper, default small), ENGINE (lsm|leveldb|rocksdb, default lsm),
# COLD (1: Table I and Fig. 8 also from a cold page cache; default 1 at medium and paper
# scale, 0 at small, where a database fits in any cache and the main job stays short),
# OUT (results directory, default <repo>/results), BUILD (build directory, default
# <repo>/build-release: Release, apart from the tests' build/), WORK (where databases are built,
# default $OUT/db), MAX_N (--max-n: skip database sizes above it; the paper scale stops at
# 100M unless MAX_N=500M asks for its 500M point), MIN_N (--min-n: skip sizes below it;
# MIN_N=500M runs that point alone), JOBS (make -j).
# Installs the Debian packages it needs (only if one is missing; needs root or sudo).
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
scale=${SCALE:-small}
engine=${ENGINE:-lsm}
out=${OUT:-$repo/results}
build=${BUILD:-$repo/build-release}
jobs=${JOBS:-$(nproc 2>/dev/null || echo 2)}

say() { printf '%s\n' "$*"; }
die() { printf 'run-experiments: %s\n' "$*" >&2; exit 1; }

case $scale in small|medium|paper) ;; *) die "SCALE must be small, medium or paper (got '$scale')";; esac
case $engine in lsm|leveldb|rocksdb) ;; *) die "ENGINE must be lsm, leveldb or rocksdb (got '$engine')";; esac

# 1. Packages: install only what is missing.
bash "$repo/scripts/install-deps.sh"

# 2. Build (optimized, no tests needed for the experiments; for this machine's CPU, since it
#    runs where it is built, as the figures of PAPER_NOTES.md were measured: doc/portability.md).
say "building in $build"
log=$(mktemp)
trap 'rm -f "$log"' EXIT
if ! cmake -S "$repo" -B "$build" -DCMAKE_BUILD_TYPE=Release -DBFH_BUILD_TESTS=OFF \
    -DBFH_BUILD_BENCH=OFF -DBFH_BUILD_CLI=ON -DBFH_NATIVE=ON >"$log" 2>&1; then
  cat "$log" >&2
  die "cmake configure failed"
fi
if ! cmake --build "$build" --target bfh_cli -j "$jobs" >"$log" 2>&1; then
  tail -n 40 "$log" >&2
  die "build failed"
fi

# 3. Run every experiment, then REPORT.md; the tool prints one line per experiment.
mkdir -p "$out"
args=(run all --scale "$scale" --engine "$engine" --out "$out" --plots "$repo/plots")
cold_default=1
if [ "$scale" = small ]; then cold_default=0; fi
if [ "${COLD:-$cold_default}" = 1 ]; then args+=(--cold); fi
if [ -n "${WORK:-}" ]; then args+=(--work "$WORK"); fi
if [ -n "${MAX_N:-}" ]; then args+=(--max-n "$MAX_N"); fi
if [ -n "${MIN_N:-}" ]; then args+=(--min-n "$MIN_N"); fi
say "running: $build/bfh ${args[*]}"
status=0
"$build/bfh" "${args[@]}" || status=$?

# 3b. Beyond the paper, at the small scale only (the larger ones take hours: run them by
#     name): YCSB recast for value search over every engine and the Debian data sets, and
#     the range filters; then REPORT.md again, now with their sections.
if [ "$scale" = small ]; then
  for extra in ycsb ranges; do
    extra_args=(run "$extra" --scale small --out "$out" --plots "$repo/plots")
    if [ -n "${WORK:-}" ]; then extra_args+=(--work "$WORK"); fi
    say "running: $build/bfh ${extra_args[*]}"
    "$build/bfh" "${extra_args[@]}" || status=$?
  done
  "$build/bfh" run report --out "$out" --plots "$repo/plots" || status=$?
fi

# 4. What was produced.
say "results in $out:"
(cd "$out" && ls -1 -- REPORT.md *.csv *.png *.svg 2>/dev/null | sed 's/^/  /') || true
exit $status

#!/usr/bin/env bash
# Builds bfh and reproduces the paper's tables and figures:
#   scripts/run-experiments.sh            # small scale (minutes), results in ./results
#   SCALE=medium scripts/run-experiments.sh
#   SCALE=paper ENGINE=leveldb OUT=/big/disk/results scripts/run-experiments.sh
# Environment: SCALE (small|medium|paper, default small), ENGINE (lsm|leveldb, default lsm),
# OUT (results directory, default <repo>/results), BUILD (build directory, default
# <repo>/build), WORK (where databases are built, default $OUT/db), JOBS (make -j).
# Installs the Debian packages it needs (only if one is missing; needs root or sudo).
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
scale=${SCALE:-small}
engine=${ENGINE:-lsm}
out=${OUT:-$repo/results}
build=${BUILD:-$repo/build}
jobs=${JOBS:-$(nproc 2>/dev/null || echo 2)}

say() { printf '%s\n' "$*"; }
die() { printf 'run-experiments: %s\n' "$*" >&2; exit 1; }

case $scale in small|medium|paper) ;; *) die "SCALE must be small, medium or paper (got '$scale')";; esac
case $engine in lsm|leveldb) ;; *) die "ENGINE must be lsm or leveldb (got '$engine')";; esac

# 1. Packages: install only what is missing.
packages="libleveldb-dev libsnappy-dev libxxhash-dev libcmocka-dev gnuplot-nox cmake gcc g++ pkg-config make"
missing=""
if command -v dpkg-query >/dev/null 2>&1; then
  for p in $packages; do
    if [ "$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null)" != "install ok installed" ]; then
      # gnuplot from another flavour (gnuplot-qt, gnuplot-x11) will do.
      if [ "$p" = gnuplot-nox ] && command -v gnuplot >/dev/null 2>&1; then continue; fi
      missing="$missing $p"
    fi
  done
fi
if [ -n "$missing" ]; then
  say "installing:$missing"
  sudo=""
  if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null 2>&1 || die "missing packages:$missing (run as root or install them)"
    sudo=sudo
  fi
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get update -qq >/dev/null
  # shellcheck disable=SC2086
  $sudo apt-get install -y -qq $missing >/dev/null
fi

# 2. Build (optimized, no tests needed for the experiments).
say "building in $build"
log=$(mktemp)
trap 'rm -f "$log"' EXIT
if ! cmake -S "$repo" -B "$build" -DCMAKE_BUILD_TYPE=Release -DBFH_BUILD_TESTS=OFF \
    -DBFH_BUILD_BENCH=ON >"$log" 2>&1; then
  cat "$log" >&2
  die "cmake configure failed"
fi
if ! cmake --build "$build" --target bfh_cli -j "$jobs" >"$log" 2>&1; then
  tail -n 40 "$log" >&2
  die "build failed"
fi

# 3. Run every experiment; the tool prints one line per experiment.
mkdir -p "$out"
args=(run all --scale "$scale" --engine "$engine" --out "$out" --plots "$repo/plots")
if [ -n "${WORK:-}" ]; then args+=(--work "$WORK"); fi
say "running: $build/bfh ${args[*]}"
status=0
"$build/bfh" "${args[@]}" || status=$?

# 4. What was produced.
say "results in $out:"
(cd "$out" && ls -1 -- *.csv *.png *.svg 2>/dev/null | sed 's/^/  /') || true
exit $status

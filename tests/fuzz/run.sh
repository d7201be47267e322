#!/usr/bin/env bash
# Builds the fuzz targets (clang, libFuzzer + ASan + UBSan), writes their seed corpora from
# real databases (fuzz_seeds), then runs each target for SECONDS (default 20).
#   bash tests/fuzz/run.sh [SECONDS]
# Environment: FUZZ_BUILD_DIR (default build-fuzz), FUZZ_TARGETS (a space-separated subset).
# Exits non-zero if any target crashed, leaked, hit a sanitizer report or timed out; the
# input that did it is in $FUZZ_BUILD_DIR/fuzz-crashes/<target>/ (doc/testing.md "Fuzzing").
set -euo pipefail
cd "$(dirname "$0")/../.."
seconds=${1:-20}
build=${FUZZ_BUILD_DIR:-build-fuzz}
targets=${FUZZ_TARGETS:-"block table log version_edit manifest db_params value_filter \
block_filter blocked_filter ldb_table ldb_log ldb_sstables leaf_cache ldb_precheck rdb_table \
rdb_log rdb_manifest rdb_sstables value_block_map persisted_index attr expr range_cover range_filter \
range_plan dataset standalone_key"}

bash scripts/install-deps.sh
if ! command -v clang >/dev/null 2>&1; then
  # As scripts/install-deps.sh installs things: apt, as root or through sudo.
  echo "installing: clang" >&2
  sudo=""
  if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null || { echo "need root to install clang" >&2; exit 1; }
    sudo=sudo
  fi
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get update -qq
  $sudo apt-get install -y -qq --no-install-recommends clang >/dev/null
fi

CC=clang CXX=clang++ cmake -S . -B "$build" -DBFH_FUZZ=ON -DBFH_BUILD_TESTS=OFF \
  -DBFH_BUILD_BENCH=OFF -DBFH_BUILD_CLI=OFF -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
# shellcheck disable=SC2086
cmake --build "$build" -j2 --target fuzz_seeds $(printf 'fuzz_%s ' $targets) >/dev/null

work="$build/fuzz-work"
corpus="$build/fuzz-corpus"
crashes="$build/fuzz-crashes"
logs="$build/fuzz-logs"
rm -rf "$work" "$corpus" "$logs" "$crashes"
mkdir -p "$crashes" "$logs"
# LevelDB's C++ library is not instrumented; the generator's leaks are not the parsers'.
ASAN_OPTIONS=detect_leaks=0 "$build/tests/fuzz/fuzz_seeds" "$work" "$corpus" >/dev/null
rm -rf "$work"

failed=()
total=0
printf '%-16s %12s  %s\n' target executions result
for t in $targets; do
  mkdir -p "$crashes/$t" "$corpus/$t"
  dirs=("$corpus/$t")
  [ -d "tests/fuzz/regress/$t" ] && dirs+=("tests/fuzz/regress/$t")
  rc=0
  "$build/tests/fuzz/fuzz_$t" -max_total_time="$seconds" -print_final_stats=1 -timeout=25 \
    -rss_limit_mb=2048 -artifact_prefix="$crashes/$t/" "${dirs[@]}" >"$logs/$t.log" 2>&1 || rc=$?
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$logs/$t.log" | tail -1)
  execs=${execs:-0}
  total=$((total + execs))
  if [ "$rc" -ne 0 ]; then
    failed+=("$t")
    printf '%-16s %12s  FAILED (exit %d): %s\n' "$t" "$execs" "$rc" "$logs/$t.log"
    grep -m1 -E 'ERROR: |runtime error|fuzz invariant' "$logs/$t.log" || true
    ls "$crashes/$t" | sed 's/^/  input: /'
  else
    printf '%-16s %12s  ok\n' "$t" "$execs"
  fi
done
printf '%-16s %12s\n' total "$total"
if [ ${#failed[@]} -ne 0 ]; then
  echo "fuzz: findings in: ${failed[*]}" >&2
  exit 1
fi

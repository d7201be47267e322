#!/usr/bin/env bash
# Builds bfh and runs every test: the README's test command (and the first step of CI).
#   --repeat N  run the built suite N times and report the passes of each run (exit status 1
#               if any run failed), to check that it is deterministic, e.g. on a loaded machine
#   BUILD_DIR   build directory (default build)
#   CMAKE_ARGS  extra configure arguments, e.g. -DBFH_SANITIZE=address,undefined
#   CTEST_ARGS  extra ctest arguments, e.g. "-R hierarchy"
set -euo pipefail
cd "$(dirname "$0")/.."
repeat=0
while [ $# -gt 0 ]; do
  case "$1" in
    --repeat)
      [ $# -ge 2 ] || { echo "test.sh: --repeat needs a count" >&2; exit 2; }
      repeat=$2
      shift 2
      ;;
    --repeat=*)
      repeat=${1#--repeat=}
      shift
      ;;
    *)
      echo "usage: bash scripts/test.sh [--repeat N]" >&2
      exit 2
      ;;
  esac
done
case "$repeat" in
  '' | *[!0-9]*)
    echo "test.sh: --repeat wants a positive number, not '$repeat'" >&2
    exit 2
    ;;
esac
bash scripts/install-deps.sh

build=${BUILD_DIR:-build}
# shellcheck disable=SC2086
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DBFH_BUILD_TESTS=ON ${CMAKE_ARGS:-} >/dev/null
cmake --build "$build" -j"$(nproc)"
if [ "$repeat" -eq 0 ]; then
  # shellcheck disable=SC2086
  ctest --test-dir "$build" -j"$(nproc)" --output-on-failure ${CTEST_ARGS:-}
  exit
fi

# --repeat N: the whole suite N times; each run's summary, then one line per run.
summary=()
failed_runs=0
for run in $(seq 1 "$repeat"); do
  echo "== run $run of $repeat"
  log=$(mktemp)
  start=$(date +%s)
  rc=0
  # shellcheck disable=SC2086
  ctest --test-dir "$build" -j"$(nproc)" --output-on-failure ${CTEST_ARGS:-} 2>&1 | tee "$log" ||
    rc=$?
  secs=$(($(date +%s) - start))
  # "100% tests passed, 0 tests failed out of 24"
  line=$(grep -E 'tests passed, [0-9]+ tests? failed out of [0-9]+' "$log" | tail -n 1 || true)
  total=$(sed -nE 's/.*failed out of ([0-9]+).*/\1/p' <<<"$line")
  failed=$(sed -nE 's/.* ([0-9]+) tests? failed.*/\1/p' <<<"$line")
  failing=$(sed -nE 's/^[[:space:]]*[0-9]+ - ([^ ]+) .*/\1/p' "$log" | paste -sd ' ' -)
  rm -f "$log"
  if [ -z "$total" ]; then
    summary+=("run $run: ctest gave no summary (exit status $rc), ${secs} s")
    failed_runs=$((failed_runs + 1))
    continue
  fi
  entry="run $run: $((total - failed))/$total tests passed, ${secs} s"
  if [ "$failed" -ne 0 ] || [ "$rc" -ne 0 ]; then
    entry="$entry; failed: ${failing:-?}"
    failed_runs=$((failed_runs + 1))
  fi
  summary+=("$entry")
done
echo "== $repeat runs, $((repeat - failed_runs)) passed every test"
printf '%s\n' "${summary[@]}"
[ "$failed_runs" -eq 0 ]

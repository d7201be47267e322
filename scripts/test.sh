#!/usr/bin/env bash
# Builds bfh and runs every test: the README's test command (and the first step of CI).
#   BUILD_DIR   build directory (default build)
#   CMAKE_ARGS  extra configure arguments, e.g. -DBFH_SANITIZE=address,undefined
#   CTEST_ARGS  extra ctest arguments, e.g. "-R hierarchy"
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh

build=${BUILD_DIR:-build}
# shellcheck disable=SC2086
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DBFH_BUILD_TESTS=ON ${CMAKE_ARGS:-} >/dev/null
cmake --build "$build" -j"$(nproc)"
# shellcheck disable=SC2086
ctest --test-dir "$build" -j"$(nproc)" --output-on-failure ${CTEST_ARGS:-}

#!/usr/bin/env bash
# The JSON libraries' extraction speed on bfh's values (bench/extract_bench.c), kept in
# measurements/query/extract-NUM.csv with the commit measured (doc/query.md "Why json-c").
#   NUM    values (default 1000000)
#   RUNS   runs per library and path, for the median (default 5)
#   BUILD  build directory (default build-bench, as scripts/run-benchmarks.sh)
# About a minute on 2 cores at the default size; run it on a quiet machine.
set -euo pipefail
cd "$(dirname "$0")/.."
commit=$(git rev-parse --short=12 HEAD) # what is measured: the tree as the run begins
git diff --quiet HEAD -- . ':!measurements' || commit="$commit-dirty"
bash scripts/install-deps.sh
bash scripts/install-deps.sh libjson-c-dev libjansson-dev libcjson-dev libsimdjson-dev # the rivals
build=${BUILD:-build-bench}
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DBFH_BUILD_TESTS=OFF -DBFH_NATIVE=ON >/dev/null
cmake --build "$build" -j"$(nproc)" --target extract_bench >/dev/null
num=${NUM:-1000000}
out=measurements/query/extract-$num.csv
mkdir -p "$(dirname "$out")"
"$build/extract_bench" --num "$num" --runs "${RUNS:-5}" --commit "$commit" >"$out.tmp"
mv "$out.tmp" "$out"
echo "extract-bench: $out" >&2

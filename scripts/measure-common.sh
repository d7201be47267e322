# What the measuring scripts share (sourced from the project's root, after set -euo pipefail):
#   commit   the head's short id, with -dirty when the tree differs from it outside
#            measurements/, for the CSVs' commit column
#   build    BUILD, or build-rel
#   bfh_cli  builds the bfh command in $build (RelWithDebInfo, no tests, no benches) unless it
#            is there; prints its path
commit=$(git rev-parse --short=12 HEAD)
git diff --quiet HEAD -- . ':!measurements' || commit="$commit-dirty"
build=${BUILD:-build-rel}

bfh_cli() {
  if [ ! -x "$build/bfh" ]; then
    cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DBFH_BUILD_TESTS=OFF \
      -DBFH_BUILD_BENCH=OFF >/dev/null
    cmake --build "$build" -j"$(nproc)" --target bfh_cli >/dev/null
  fi
  echo "$build/bfh"
}

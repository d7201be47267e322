#!/usr/bin/env bash
# Builds and runs the authors' own experiment code (a LevelDB 1.23 fork with the experiments in
# bloom_hierarchy/, https://github.com/wojciechmacyna/BloomHierarchy) on this machine, so that
# the paper's numbers, their code's and bfh's can be read side by side.
#
#   git clone https://github.com/wojciechmacyna/BloomHierarchy /somewhere/BloomHierarchy
#   scripts/authors-baseline.sh /somewhere/BloomHierarchy
#   SIZES="1M 10M 50M" BUILDS=shipped scripts/authors-baseline.sh /somewhere/BloomHierarchy
#
# Their checkout is only read: nothing is written into it, and none of their code is part of
# bfh. Their LevelDB is built with CMake as their leveldb/build/CMakeCache.txt records (Release,
# no snappy, crc32c or tcmalloc: their build found none), in $BUILD_DIR. Their experiment code
# is compiled with the exact command their Makefile prints (`make -n -B mybloom`: g++ -g -Wall
# ... -std=c++17, no -O), main.cpp replaced by scripts/authors/driver.cpp, which calls their
# DBOperation phases in their MainFlow's order and takes N, the domain and the query from the
# command line instead of constants edited into main.cpp. The build "shipped" is that command;
# "O2" is the same command with -O2 (their LevelDB is Release in both). Their main.cpp itself
# is compiled too, as shipped (not run), to show that it builds.
#
# Experiments (one process at a time, each on a fresh database):
#   two   their ExpTwo (MainFlow, values Value<i>, query "Value187719", d = 5; Table I's insert,
#         Fig. 8/9's three methods), then ExpSeven (first Get of "Key187719" after a reopen,
#         KEY_REPEATS times; Table I's key lookup) and ExpEight (their SSTable scan for
#         "Key187719"; Table I's scan)
#   ten   their ExpTen (MainFlow per domain: values Value<uniform 1..N/100*pct>, drawn with
#         replacement, query "Value1879"; Table III, Fig. 13), one process per domain
# Writes, in $OUT: table1.csv, fig8.csv, fig13.csv, table3.csv (bfh's column names, with
# source=authors and build=shipped|O2), phases.csv (every phase: their own figure, time_s, and
# the driver's clock around the call, time_wrap_s), each row ending with their checkout's
# commit and bfh's (authors_commit, commit); run.log (their stdout and stderr).
#
# Rows are appended to the CSVs in OUT, so runs at other sizes can be added later.
# Environment: OUT (default <repo>/results/authors), SIZES (default "1M 10M"; k, M suffixes),
# BUILDS (default "shipped O2"), EXPS (default "two ten"), DOMAINS (default "2 5 10 40 70 100"),
# RUNS (repetitions of each experiment, default 1), RUN_FIRST (number of the first, default 1,
# so that a later invocation adds runs to the same CSVs), KEY_REPEATS (default 5), BUILD_DIR
# (default $OUT/build), WORK (databases, default $OUT/work), KEEP=1 keeps the databases.
# Installs the Debian packages it needs (build-essential, cmake) if missing, as
# scripts/install-deps.sh does; nothing else is fetched.
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
say() { printf 'authors-baseline: %s\n' "$*" >&2; }
die() { say "$*"; exit 1; }

[ $# -eq 1 ] || die "usage: $0 AUTHORS_DIR (a checkout of github.com/wojciechmacyna/BloomHierarchy)"
src=$(cd "$1" && pwd) || die "$1: no such directory"
for f in Makefile main.cpp bloom_hierarchy/dbOperation.cpp leveldb/CMakeLists.txt; do
  [ -f "$src/$f" ] || die "$src/$f missing: is $src a checkout of BloomHierarchy?"
done

out=${OUT:-$repo/results/authors}
build=${BUILD_DIR:-$out/build}
work=${WORK:-$out/work}
sizes=${SIZES:-1M 10M}
builds=${BUILDS:-shipped O2}
exps=${EXPS:-two ten}
domains=${DOMAINS:-2 5 10 40 70 100}
runs=${RUNS:-1}
run_first=${RUN_FIRST:-1}
key_repeats=${KEY_REPEATS:-5}
mkdir -p "$out" "$build" "$work"
out=$(cd "$out" && pwd); build=$(cd "$build" && pwd); work=$(cd "$work" && pwd)
case $out/ in "$src"/*) die "OUT=$out is inside their checkout; choose another";; esac
case $build/ in "$src"/*) die "BUILD_DIR=$build is inside their checkout; choose another";; esac
log=$out/run.log
# The rows' commit columns: bfh's (this script and the driver; -dirty when either differs from
# HEAD) and their checkout's (unknown when it is not a git checkout).
commit=$(git -C "$repo" rev-parse --short=12 HEAD 2>/dev/null || echo unknown)
git -C "$repo" diff --quiet HEAD -- scripts/authors-baseline.sh scripts/authors/ 2>/dev/null ||
  commit="$commit-dirty"
their_commit=$(git -C "$src" rev-parse --short=12 HEAD 2>/dev/null || echo unknown)

bash "$repo/scripts/install-deps.sh" build-essential cmake make

# 1. Their LevelDB, as their leveldb/build/CMakeCache.txt records it.
say "building their LevelDB in $build/leveldb"
if ! { cmake -S "$src/leveldb" -B "$build/leveldb" -DCMAKE_BUILD_TYPE=Release \
         -DLEVELDB_BUILD_TESTS=OFF -DLEVELDB_BUILD_BENCHMARKS=OFF -DLEVELDB_INSTALL=OFF \
         -DHAVE_SNAPPY=OFF -DHAVE_CRC32C=OFF -DHAVE_TCMALLOC=OFF &&
       cmake --build "$build/leveldb" --target leveldb -j2; } >"$build/leveldb.log" 2>&1; then
  tail -20 "$build/leveldb.log" >&2
  die "their LevelDB did not build (whole log: $build/leveldb.log)"
fi

# 2. Their experiment code, with their Makefile's own command line.
cmd=$(make -s -n -B -C "$src" mybloom 2>/dev/null | grep -E '(^| )main\.cpp( |$)' | head -1) ||
  die "their Makefile prints no command that compiles main.cpp (make -n -B mybloom)"
case $cmd in *" -o ./out/main "*" -L ./leveldb/build/"*) ;;
  *) die "their Makefile's command is not the one this script knows: $cmd";; esac
say "their command: $cmd"
compile() { # $1 output, $2 main source, $3 extra flags
  local c=${cmd/ main.cpp / $2 }
  c=${c/-o .\/out\/main/-o $1}
  c=${c/-L .\/leveldb\/build\//-L $build\/leveldb}
  (cd "$src" && eval "$c -I . $3")
}
for b in $builds; do
  case $b in shipped) extra="";; O2) extra="-O2";; *) die "BUILDS: shipped or O2 (got $b)";; esac
  mkdir -p "$build/$b"
  say "compiling build $b${extra:+ ($extra)}"
  compile "$build/$b/authors_driver" "$repo/scripts/authors/driver.cpp" "$extra" \
    >"$build/$b/compile.log" 2>&1 || { cat "$build/$b/compile.log" >&2; die "build $b failed"; }
done
if compile "$build/main_as_shipped" main.cpp "" >"$build/main_as_shipped.log" 2>&1; then
  say "their main.cpp builds as shipped ($build/main_as_shipped, not run)"
else
  say "their main.cpp does not build as shipped: see $build/main_as_shipped.log"
fi

# 3. Runs, one at a time.
to_n() {
  case $1 in
    *[kK]) echo $(( ${1%[kK]} * 1000 ));;
    *M) echo $(( ${1%M} * 1000000 ));;
    *[0-9]) echo "$1";;
    *) die "size '$1': a number with an optional k or M suffix";;
  esac
}
run() { # driver arguments...
  rm -rf "$work/out/db"
  local t0=$SECONDS
  printf '== %s load %s: build %s run %s %s\n' "$(date -u +%FT%TZ)" "$(cut -d' ' -f1-3 /proc/loadavg)" \
    "$b" "$r" "$*" >>"$log"
  "$build/$b/authors_driver" --build "$b" --run "$r" --work "$work" --out "$out" \
    --key-repeats "$key_repeats" --commit "$commit" --their-commit "$their_commit" "$@" \
    >>"$log" 2>&1 || die "run failed: $* (see $log)"
  say "done in $((SECONDS - t0)) s: build $b run $r $*"
  [ "${KEEP:-0}" = 1 ] || rm -rf "$work/out/db"
}
for size in $sizes; do
  n=$(to_n "$size")
  for b in $builds; do
    for r in $(seq "$run_first" $((run_first + runs - 1))); do
      for e in $exps; do
        case $e in
          two) run --exp two --n "$n";;
          ten) for p in $domains; do run --exp ten --n "$n" --domain "$p"; done;;
          *) die "EXPS: two or ten (got $e)";;
        esac
      done
    done
  done
done
say "CSVs in $out"

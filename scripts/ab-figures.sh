#!/usr/bin/env bash
# A against B: the search, open and memory figures of two trees, measured side by side in one
# run (issue 46: "no worse than at 97829bf"). Builds A (a commit, in a temporary git worktree,
# removed at the end) and B (this checkout as it is, uncommitted changes included) with the
# same options, then runs ROUNDS rounds, each A's harnesses then B's, A B A B ...:
#   search  search_bench --num NUM --domains DOMAINS --queries QUERIES: every method's median
#           with the leaves in memory and on disk, the index rebuild at open and the leaves'
#           read, the ingest with value filters, the index's size (each side loads its own)
#   memory  bfh run memory at NUM: per configuration the bytes per entry and the heap's count
#           of them, the time until the index is ready, the ingest, each method's median
#           present and absent latency (each side builds its own databases)
#   open    a new process on one database (written once by A's `bfh load --synthetic NUM`, a
#           fresh copy of it per side and round; one of each side's own if B cannot open A's):
#           `bfh stats` and `bfh search` of a present value, wall ms (median of OPEN_RUNS) and
#           peak RSS (/usr/bin/time)
# Each side runs the harness it has for a question: search_bench; for memory `bfh run memory`,
# else memory_bench (whose figures are printed under their own names, so that a side without
# `bfh run memory` shows n/a against the other, never a false pair).
# Prints, per figure (grouped: search, open, memory, ingest), the median over the rounds of A
# and of B, B/A of the medians, the range of the rounds' own B/A, and whether B is within TOL:
# every figure is a time or a size, so worse means larger and "yes" means B/A <= 1 + TOL.
#   bash scripts/ab-figures.sh                         # A = 97829bf, NUM = 1000000, 5 rounds
#   NUM=100000 QUERIES=10 bash scripts/ab-figures.sh   # 13 minutes on 2 shared cores, builds
#                                                      # included; at 1M the loads take ~10x
# Environment:
#   A         the commit of side A (default 97829bf)
#   NUM       entries: 100000 or 1000000 (bfh run memory's small scale) or 10000000 (medium);
#             default 1000000
#   ROUNDS    rounds (default 5; at least 5 for the issue's check)
#   QUERIES   queries per harness run (default 25)
#   DOMAINS   value domains in percent, comma-separated (default 100; bfh run memory measures
#             100, 10 and 1 whatever it is, and the table shows the domains named here)
#   OPEN_RUNS processes per side and round for the open figures (default 5)
#   ONLY      space-separated subset of: search memory open (default all three)
#   TOL       tolerance (default 0.05)
#   JOBS      build jobs (default 2)
#   TMPDIR    where the worktree, the builds and the databases go (default /tmp)
#   KEEP      1: keep the builds and raw outputs (the worktree of A is removed all the same)
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
a_rev=${A:-97829bf}
num=${NUM:-1000000}
rounds=${ROUNDS:-5}
queries=${QUERIES:-25}
domains=${DOMAINS:-100}
open_runs=${OPEN_RUNS:-5}
only=${ONLY:-search memory open}
tol=${TOL:-0.05}
jobs=${JOBS:-2}

die() { echo "ab-figures: $*" >&2; exit 1; }
say() { echo "ab-figures: $*" >&2; }
want() { [[ " $only " == *" $1 "* ]]; }
case $num in
  100000 | 1000000) scale=small ;;
  10000000) scale=medium ;;
  *) die "NUM must be 100000, 1000000 or 10000000 (the sizes bfh run memory measures)" ;;
esac
[ -x /usr/bin/time ] || die "/usr/bin/time is missing (Debian package time)"
a_commit=$(git -C "$repo" rev-parse --short=12 "$a_rev^{commit}") || die "no commit $a_rev"
b_commit=$(git -C "$repo" rev-parse --short=12 HEAD)
git -C "$repo" diff --quiet HEAD -- . || b_commit="$b_commit-dirty"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/bfh-ab.XXXXXX")
cleanup() {
  git -C "$repo" worktree remove --force "$tmp/a-src" >/dev/null 2>&1 || true
  git -C "$repo" worktree prune >/dev/null 2>&1 || true
  if [ "${KEEP:-0}" = 1 ]; then say "kept $tmp"; else rm -rf "$tmp"; fi
}
trap cleanup EXIT
raw="$tmp/raw"
mkdir -p "$raw"

# 1. Builds: the same options on both sides (the benches and the bfh command, no tests).
git -C "$repo" worktree add --detach "$tmp/a-src" "$a_commit" >/dev/null 2>&1 ||
  die "cannot make a worktree of $a_commit"
build() { # SIDE SRC
  local b="$tmp/build-$1"
  say "building $1 ($2) in $b"
  cmake -S "$2" -B "$b" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DBFH_BUILD_TESTS=OFF \
    -DBFH_BUILD_BENCH=ON -DBFH_BUILD_CLI=ON >"$raw/cmake-$1.log" 2>&1 ||
    die "cmake of $1 failed: $raw/cmake-$1.log"
  local targets=(bfh_cli)
  if [ -f "$2/bench/search_bench.c" ]; then targets+=(search_bench); fi
  if [ -f "$2/bench/memory_bench.c" ]; then targets+=(memory_bench); fi
  cmake --build "$b" -j"$jobs" --target "${targets[@]}" >"$raw/build-$1.log" 2>&1 ||
    die "build of $1 failed: $raw/build-$1.log"
}
build a "$tmp/a-src"
build b "$repo"

# The harness each side has for memory: `bfh run memory`, else memory_bench.
mem_harness() { # SIDE
  local help
  help=$("$tmp/build-$1/bfh" run --help 2>&1 || true)
  if grep -qw memory <<<"$help"; then
    echo run-memory
  elif [ -x "$tmp/build-$1/memory_bench" ]; then
    echo memory_bench
  else
    echo none
  fi
}
for s in a b; do
  if want search && [ ! -x "$tmp/build-$s/search_bench" ]; then die "side $s has no search_bench"; fi
  if want memory && [ "$(mem_harness $s)" = none ]; then die "side $s has no memory harness"; fi
done

# Figures: one line per figure, "FIGURE|UNIT|VALUE", into $raw/figs.SIDE.ROUND.

# search_bench's CSV: columns by name (the header line beginning "num,domain_pct,").
search_figs() {
  awk -F, '
    /^num,domain_pct,/ { for (i = 1; i <= NF; i++) c[$i] = i; hdr = 1; next }
    /^#/ || !hdr || NF < 4 { next }
    {
      d = $c["domain_pct"]; l = $c["leaves_in"]
      printf "search: search_bench d%s%% leaves %s %s|ms|%s\n", d, l, $c["method"], $c["median_ms"]
      if (seen[d, l]++) next
      if ("open_read_ms" in c) printf "open: search_bench leaves read, %s d%s%%|ms|%s\n", l, d, $c["open_read_ms"]
      if (l != "memory") next
      printf "open: search_bench index rebuild d%s%%|ms|%s\n", d, $c["open_rebuild_ms"]
      printf "ingest: search_bench d%s%%|s|%s\n", d, $c["ingest_s"]
      printf "memory: search_bench index d%s%%|MiB|%s\n", d, $c["index_mib"]
    }'
}

# bfh run memory's memory.csv: the rows of NUM and DOMAINS, columns by name.
run_memory_figs() {
  awk -F, -v num="$num" -v doms="$domains" '
    BEGIN { n = split(doms, D, ","); for (i = 1; i <= n; i++) dom[D[i] + 0] = 1 }
    NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
    $c["n"] != num || !(($c["domain_pct"] + 0) in dom) { next }
    {
      cf = $c["config"]; d = $c["domain_pct"]
      printf "search: memory %s/%s d%s%% present|ms|%.6f\n", cf, $c["series"], d, $c["present_time_s"] * 1000
      printf "search: memory %s/%s d%s%% absent|ms|%.6f\n", cf, $c["series"], d, $c["absent_time_s"] * 1000
      if (seen[cf, d]++) next
      printf "memory: %s d%s%% bytes/entry (%s)|B|%s\n", cf, d, $c["bytes_source"], $c["bytes_per_entry"]
      if ("heap_index_per_entry" in c) printf "memory: %s d%s%% heap index/entry|B|%s\n", cf, d, $c["heap_index_per_entry"]
      if ("peak_over_bare_bytes" in c) printf "memory: %s d%s%% open peak over bare|B|%s\n", cf, d, $c["peak_over_bare_bytes"]
      printf "open: memory %s d%s%% index ready|s|%s\n", cf, d, $c["index_ready_s"]
      printf "ingest: memory %s d%s%%|s|%s\n", cf, d, $c["ingest_s"]
    }' "$1"
}

# memory_bench's CSV (a side without bfh run memory): every numeric column of every row, named
# memory_bench and the row's text fields, so that they pair with the same harness only.
memory_bench_figs() {
  awk -F, '
    /^#/ || NF < 3 { next }
    !hdr { for (i = 1; i <= NF; i++) h[i] = $i; hdr = 1; next }
    {
      key = ""
      for (i = 1; i <= NF; i++) if ($i !~ /^-?[0-9.]+(e-?[0-9]+)?$/) key = key " " $i
      for (i = 1; i <= NF; i++) if ($i ~ /^-?[0-9.]+(e-?[0-9]+)?$/) printf "memory: memory_bench%s %s||%s\n", key, h[i], $i
    }'
}

median() { sort -g | awk '{ v[NR] = $1 } END { if (NR) print (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2) }'; }

# open_figs SIDE DIR VALUE: a new process's bfh stats and bfh search on DIR, OPEN_RUNS times.
open_figs() {
  local bfh="$tmp/build-$1/bfh" cmd t0 t1 st
  for cmd in stats search; do
    local ms=() kb=()
    for ((i = 0; i < open_runs; i++)); do
      t0=${EPOCHREALTIME/./} # bash's clock in microseconds: no process timed with the command
      if [ "$cmd" = stats ]; then
        /usr/bin/time -f %M -o "$raw/time" "$bfh" stats "$2" >/dev/null 2>&1 && st=0 || st=$?
      else
        /usr/bin/time -f %M -o "$raw/time" "$bfh" search "$2" "$3" >/dev/null 2>&1 && st=0 || st=$?
      fi
      t1=${EPOCHREALTIME/./}
      [ "$st" = 0 ] || die "side $1: bfh $cmd $2 failed (exit $st)"
      ms+=("$(awk -v n=$((t1 - t0)) 'BEGIN { printf "%.3f", n / 1e3 }')")
      kb+=("$(tail -n 1 "$raw/time")")
    done
    echo "open: new process bfh $cmd|ms|$(printf '%s\n' "${ms[@]}" | median)"
    echo "memory: new process bfh $cmd peak RSS|KiB|$(printf '%s\n' "${kb[@]}" | median)"
  done
}

# 2. The database of the open figures: A's bfh load, a copy per side and round.
value="Value$((num / 2 + 1))"
if want open; then
  say "bfh load --synthetic $num with A"
  "$tmp/build-a/bfh" load "$tmp/db-a" --synthetic "$num" >"$raw/load-a.log" 2>&1 ||
    die "A's bfh load failed: $raw/load-a.log"
  cp -a "$tmp/db-a" "$tmp/probe"
  if "$tmp/build-b/bfh" stats "$tmp/probe" >/dev/null 2>&1 &&
    "$tmp/build-b/bfh" search "$tmp/probe" "$value" >/dev/null 2>&1; then
    db_b="$tmp/db-a"
    open_note="one database, written by A's bfh load, a fresh copy per side and round"
  else
    say "B cannot open A's database: each side opens one of its own"
    "$tmp/build-b/bfh" load "$tmp/db-b" --synthetic "$num" >"$raw/load-b.log" 2>&1 ||
      die "B's bfh load failed: $raw/load-b.log"
    db_b="$tmp/db-b"
    open_note="each side's own database (B could not open A's), a fresh copy per round"
  fi
  rm -rf "$tmp/probe"
fi

# 3. The rounds: A then B, ROUNDS times.
for ((r = 1; r <= rounds; r++)); do
  for s in a b; do
    f="$raw/figs.$s.$r"
    : >"$f"
    bin="$tmp/build-$s"
    if want search; then
      say "round $r/$rounds: $s search_bench"
      "$bin/search_bench" --num "$num" --queries "$queries" --domains "$domains" \
        --dir "$tmp/sb-$s" >"$raw/search.$s.$r.csv" 2>"$raw/search.$s.$r.err" ||
        die "side $s: search_bench failed: $raw/search.$s.$r.err"
      search_figs <"$raw/search.$s.$r.csv" >>"$f"
      rm -rf "$tmp/sb-$s"
    fi
    if want memory; then
      h=$(mem_harness $s)
      say "round $r/$rounds: $s $h"
      if [ "$h" = run-memory ]; then
        "$bin/bfh" run memory --scale "$scale" --min-n "$num" --max-n "$num" --queries "$queries" \
          --no-plot --out "$tmp/mem-$s.$r" --work "$tmp/memdb-$s" >"$raw/memory.$s.$r.log" 2>&1 ||
          die "side $s: bfh run memory failed: $raw/memory.$s.$r.log"
        run_memory_figs "$tmp/mem-$s.$r/memory.csv" >>"$f"
        mv "$tmp/mem-$s.$r/memory.csv" "$raw/memory.$s.$r.csv"
        rm -rf "$tmp/mem-$s.$r" "$tmp/memdb-$s"
      else
        mkdir -p "$tmp/mb-$s"
        "$bin/memory_bench" --num "$num" --queries "$queries" --engines lsm \
          --dir "$tmp/mb-$s" >"$raw/memory.$s.$r.csv" 2>"$raw/memory.$s.$r.err" ||
          die "side $s: memory_bench failed: $raw/memory.$s.$r.err"
        memory_bench_figs <"$raw/memory.$s.$r.csv" >>"$f"
        rm -rf "$tmp/mb-$s"
      fi
    fi
    if want open; then
      say "round $r/$rounds: $s new-process open"
      src="$tmp/db-a"
      if [ "$s" = b ]; then src=$db_b; fi
      rm -rf "$tmp/open-db"
      cp -a "$src" "$tmp/open-db"
      open_figs "$s" "$tmp/open-db" "$value" >>"$f"
      rm -rf "$tmp/open-db"
    fi
  done
done

# 4. The table: medians over the rounds, B/A, the rounds' own B/A, within TOL.
echo "# ab-figures: A=$a_commit B=$b_commit num=$num rounds=$rounds queries=$queries domains=$domains open_runs=$open_runs tol=$tol"
echo "# build: RelWithDebInfo, BFH_BUILD_BENCH=ON, BFH_BUILD_CLI=ON, both sides; rounds A then B, A B A B ..."
echo "# harnesses: search_bench (A, B); memory: $(mem_harness a) (A), $(mem_harness b) (B)${open_note:+; open: $open_note}"
echo "# every figure a time or a size: within = B/A <= 1 + tol; rounds_B/A = min..max of the rounds' own ratios"
for s in a b; do
  for ((r = 1; r <= rounds; r++)); do sed "s/^/$s|$r|/" "$raw/figs.$s.$r"; done
done | awk -F'|' -v tol="$tol" '
  function med(arr, n,   i, j, t) {
    for (i = 2; i <= n; i++) { t = arr[i]; for (j = i - 1; j >= 1 && arr[j] > t; j--) arr[j + 1] = arr[j]; arr[j + 1] = t }
    return n % 2 ? arr[(n + 1) / 2] : (arr[n / 2] + arr[n / 2 + 1]) / 2
  }
  {
    side = $1; r = $2; f = $3
    if (!(f in unit)) { order[++nf] = f; unit[f] = $4 }
    if ($5 == "") next
    val[side, f, r] = $5 + 0; has[side, f, r] = 1; cnt[side, f]++
    if (r > maxr) maxr = r
  }
  END {
    printf "%s,%s,%s,%s,%s,%s,%s\n", "figure", "unit", "A", "B", "B/A", "rounds_B/A", "within"
    ng = split("search open memory ingest", group, " ")
    for (g = 1; g <= ng; g++) for (k = 1; k <= nf; k++) {
      f = order[k]
      if (substr(f, 1, length(group[g]) + 1) != group[g] ":") continue
      for (s = 1; s <= 2; s++) {
        sd = s == 1 ? "a" : "b"; n = 0; delete tmp
        for (r = 1; r <= maxr; r++) if (has[sd, f, r]) tmp[++n] = val[sd, f, r]
        m[sd] = n ? med(tmp, n) : ""
      }
      lo = ""; hi = ""
      for (r = 1; r <= maxr; r++)
        if (has["a", f, r] && has["b", f, r] && val["a", f, r] > 0) {
          q = val["b", f, r] / val["a", f, r]
          if (lo == "" || q < lo) lo = q
          if (hi == "" || q > hi) hi = q
        }
      if (m["a"] == "" || m["b"] == "") { ratio = "n/a"; ok = "n/a" }
      else if (m["a"] == 0) { ratio = m["b"] == 0 ? "1.000" : "inf"; ok = m["b"] == 0 ? "yes" : "no" }
      else { ratio = sprintf("%.3f", m["b"] / m["a"]); ok = m["b"] / m["a"] <= 1 + tol ? "yes" : "no" }
      if (ok == "no") worse++
      if (ok != "n/a") paired++
      range = lo == "" ? "" : sprintf("%.2f..%.2f", lo, hi)
      printf "%s,%s,%s,%s,%s,%s,%s\n", f, unit[f], m["a"] == "" ? "n/a" : m["a"], m["b"] == "" ? "n/a" : m["b"], ratio, range, ok
    }
    printf "# %d figures paired, %d worse than A by more than %g%%\n", paired, worse, tol * 100
  }'

#!/usr/bin/env bash
# The long `bfh run` jobs of the reproduction (issue 50, "Runs"), one after another in the
# background: each job a `bfh run` command line in a queue file, run under nice with its own
# output folder, work folder and log. Not part of CI; the outputs stay out of the repository.
#   setsid nohup bash scripts/paper-runs.sh /big/runs >/big/runs/queue.log 2>&1 &
#   bash scripts/paper-runs.sh --list /big/runs      # the queue and each job's state
# The queue is OUT/queue: one job a line, "NAME ARGS...", ARGS the options of `bfh run`
# after the word run ('#' starts a comment). Written with the default jobs below when
# missing; the script reads it again before every job, so lines can be added, reordered or
# commented out while it runs. A job NAME writes OUT/NAME/ (CSVs, run.log, the bfh binary it
# ran, status: its exit code), with its databases in WORK/NAME (removed after the job).
# A job whose ARGS hold --keep builds in WORK/keep instead, shared by every such job (a
# database of the same content is built once: Fig. 11 and Fig. 8 at 10M read the same one),
# removed when the queue ends. A job with a status file is done and skipped; remove the file
# to run it again. Each CSV row is written when it is measured, so a job stopped half-way
# keeps the rows it finished.
# Environment:
#   BFH    the bfh binary (default <repo>/build-runs/bfh). Copied into OUT/NAME/ when the job
#          starts, so that a rebuild meanwhile changes only the jobs that start after it.
#   WORK   where databases are built (default OUT/work)
#   NICE   nice level of the jobs (default 5)
#   STOP   a file: when it exists, the queue stops before its next job (default OUT/STOP)
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
list=0
if [ "${1:-}" = --list ]; then
  list=1
  shift
fi
[ $# -eq 1 ] || { echo "usage: paper-runs.sh [--list] OUT" >&2; exit 2; }
out=$1
bfh=${BFH:-$repo/build-runs/bfh}
work=${WORK:-$out/work}
nice_level=${NICE:-5}
stop=${STOP:-$out/STOP}
queue=$out/queue

say() { printf '%s %s\n' "$(date -u +%H:%M:%S)" "$*"; }

mkdir -p "$out"
if [ ! -e "$queue" ]; then
  # The default order (issue 50): the LevelDB engine in the paper's geometry (uncompressed
  # tables of 2 MiB, m = 2M: 10M entries cut 119 tables, as the paper's), then Fig. 9-12
  # under the authors' costs with the own engine. --scale 10M runs Fig. 9 and 13 at 10M in the
  # paper's geometry too (their paper sizes, 100M and 50M, take longer than a job may; the
  # medium scale's 200 KiB tables are no geometry for LevelDB, which keeps no table under
  # 1 MiB: 257 tables at 10M, not 1,200). Times on 2 shared cores (load 5-7): Fig. 10 at 10M
  # 21 min (its three databases built, ~5 min each), Fig. 9 at medium 16 min; a search
  # reading all 119 tables ~0.5 s; Table I 2 min, Fig. 8 (warm, on Fig. 11's database)
  # 12 s, Fig. 9 at 10M 4 min, Fig. 13 at 10M ~30 min (twelve 10M databases), last of the
  # LevelDB jobs so that the shorter ones finish first. The authors' costs: a scan of 10M
  # entries dumped as text takes 15-40 s, so 5 queries a point; Fig. 9 with the own engine at
  # the medium scale (1,200 tables of 200 KiB, as the paper's 100M); Fig. 10 (every leaf
  # loaded and every table dumped at m = 20k) the longest.
  cat >"$queue" <<'EOF'
# NAME                  bfh run ARGS (after "run"); one job a line
ldb-10M-fig10           fig10  --engine leveldb --scale paper
ldb-10M-fig9            fig9   --engine leveldb --scale medium --queries 10
ldb-10M-fig11           fig11  --engine leveldb --scale paper --queries 10 --keep
ldb-10M-table1          table1 --engine leveldb --scale 10M
ldb-10M-fig8            fig8   --engine leveldb --scale 10M --queries 10 --keep
ldb-10M-fig9-paper      fig9   --engine leveldb --scale 10M --queries 10
ldb-10M-fig13           fig13  --engine leveldb --scale 10M --queries 10
authors-10M-fig11       fig11  --engine lsm --scale paper --costs authors --queries 5
authors-fig9-medium     fig9   --engine lsm --scale medium --costs authors --queries 5
authors-10M-fig10       fig10  --engine lsm --scale paper --costs authors --queries 5
EOF
fi

# The state of job $1: done (rc N), running, or queued.
state() {
  if [ -f "$out/$1/status" ]; then
    echo "done (rc $(cat "$out/$1/status"))"
  elif [ -f "$out/$1/running" ]; then
    echo "running since $(cat "$out/$1/running")"
  else
    echo queued
  fi
}

# The first job of the queue without a status file: "NAME ARGS..." on stdout, nothing if none.
next_job() {
  local name rest
  while read -r name rest; do
    case $name in '' | '#'*) continue ;; esac
    [ -f "$out/$name/status" ] && continue
    printf '%s %s\n' "$name" "$rest"
    return 0
  done <"$queue"
}

if [ $list = 1 ]; then
  while read -r name rest; do
    case $name in '' | '#'*) continue ;; esac
    printf '%-22s %-28s %s\n' "$name" "$(state "$name")" "$rest"
  done <"$queue"
  exit 0
fi

[ -x "$bfh" ] || { echo "paper-runs: no bfh binary at $bfh (BFH=...)" >&2; exit 1; }
say "queue $queue, binary $bfh, pid $$"
while :; do
  if [ -e "$stop" ]; then
    say "stop file $stop: stopping"
    break
  fi
  job=$(next_job)
  [ -n "$job" ] || {
    say "queue empty"
    rm -rf "${work:?}/keep"
    break
  }
  name=${job%% *}
  read -r -a args <<<"${job#* }"
  dir=$out/$name
  mkdir -p "$dir"
  cp "$bfh" "$dir/bfh"
  date -u +%FT%TZ >"$dir/running"
  say "start $name: bfh run ${args[*]}"
  t0=$(date +%s)
  jobwork=$work/$name
  case " ${args[*]} " in *" --keep "*) jobwork=$work/keep ;; esac
  rc=0
  nice -n "$nice_level" "$dir/bfh" run "${args[@]}" --out "$dir" --work "$jobwork" \
    --no-plot >"$dir/run.log" 2>&1 || rc=$?
  [ "$jobwork" = "$work/keep" ] || rm -rf "$jobwork"
  echo "$rc" >"$dir/status"
  rm -f "$dir/running"
  say "end   $name: rc $rc after $(($(date +%s) - t0)) s"
done

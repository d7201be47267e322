#!/usr/bin/env bash
# The newest K through the engine (doc/query.md "The newest K"): a database of NUM records
# written in random key order, each value "wNN,A,cCCC" with NN = the record's index mod 100,
# A = its index mod 90 and CCC = 31 x its index mod 1000, declared tag=csv:1, age=csv:2:int and
# city=csv:3 (three attributes), so that each tag is held by 1% of the keys; the newest 10 of
# one tag and its full answer are each run by auto RUNS times (a new process each: `bfh
# search --json`), and the medians written to one CSV:
#   commit,num,where,newest,method_used,results,tables_live,tables_scanned,blocks_read,
#   seconds_median,full_over_newest
# newest 0 is the full answer; full_over_newest is its median time over the newest 10's.
#   NUM    records (default 1000000)
#   BUILD  build directory with the bfh command (default build-rel; configured RelWithDebInfo)
#   OUT    the CSV (default measurements/query/newest-NUM.csv)
#   RUNS   runs of each search (default 5)
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/measure-common.sh
bfh=$(bfh_cli)
num=${NUM:-1000000}
runs=${RUNS:-5}
out=${OUT:-measurements/query/newest-$num.csv}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/bfh-newest.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

# Records in random key order (a fixed permutation: i * 7919 mod NUM, NUM not a multiple of
# 7919); record i's tag is w(i mod 100), so each tag's keys are written all along.
awk -v n="$num" 'BEGIN { for (i = 0; i < n; i++) { p = (i * 7919) % n;
  printf "k%08d\tw%02d,%d,c%03d\n", p, i % 100, i % 90, (31 * i) % 1000 } }' >"$tmp/records.tsv"
"$bfh" load "$tmp/db" --from "$tmp/records.tsv" --format tsv --attr tag=csv:1 \
  --attr age=csv:2:int --attr city=csv:3 >/dev/null

where="tag = 'w42'"

# The median of RUNS searches: seconds from --json, the other figures from the last run.
measure() {
  local newest=$1 json
  for r in $(seq "$runs"); do
    json=$("$bfh" search "$tmp/db" --where "$where" --newest "$newest" --json --count \
      2>/dev/null || true)
    echo "$json" | grep -o '"seconds": *[0-9.e-]*' | head -1 | sed 's/.*: *//' >>"$tmp/secs"
  done
  local med
  med=$(sort -g "$tmp/secs" | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }')
  rm -f "$tmp/secs"
  field() { echo "$json" | grep -o "\"$1\": *[^,}]*" | head -1 | sed 's/.*: *//; s/"//g'; }
  echo "$(field method_used),$(field results),$(field tables_live),$(field tables_scanned),$(field blocks_read),$med"
}

echo "commit,num,where,newest,method_used,results,tables_live,tables_scanned,blocks_read,seconds_median,full_over_newest" >"$out"
full=$(measure 0)
top=$(measure 10)
ratio=$(awk -v a="${full##*,}" -v b="${top##*,}" 'BEGIN { printf "%.1f", (b > 0 ? a / b : 0) }')
echo "$commit,$num,\"$where\",0,$full,1.0" >>"$out"
echo "$commit,$num,\"$where\",10,$top,$ratio" >>"$out"
cat "$out"

#!/usr/bin/env bash
# What one :int attribute's range terms cost in memory, and what its filters in memory pass
# (issue 48, doc/query.md "Ranges"): NUM records, key k<i>, value the integer (p - NUM/2) *
# 4096 for p a fixed permutation of i (distinct, negative and positive, 4096 apart), in random
# order, loaded three times with the default options:
#   whole  no declaration (the whole value, as today)
#   int    n=value:int            (the integer's term alone)
#   range  n=value:int:range      (the term and its range items at the default levels)
# Each load writes a row of kind "memory": index_bytes (every byte of the value index in
# memory) and the memtable index's bytes, per entry. On the range load, QUERIES empty ranges
# of 1,024 codes, by LEAVES (the tables whose leaf filters pass the range's items), each a
# new process:
#   correlated  n BETWEEN v+1 AND v+1024, v a held value: the range right beside it
#   uniform     n BETWEEN s AND s+1023, s uniform among the empty places between held values
# give rows of kind "fpr": the mean tables whose leaf filters passed, and that share of the
# live tables (the per-table false-positive rate of the leaves, every range being empty);
# the mean tables read after the zones and the maps' sketches and chunks, and that share (the
# per-table false-positive rate of all bfh keeps per table); the mean map chunks and data
# blocks read.
#   commit,num,kind,config,query,queries,tables_live,index_bytes,index_bytes_per_entry,
#   memtable_index_bytes,leaves_passed_mean,leaf_fpr,tables_read_mean,table_fpr,
#   map_chunks_read_mean,blocks_read_mean
#   NUM      records (default 1000000)
#   QUERIES  ranges of each kind (default 20)
#   BUILD    build directory with the bfh command (default build-rel)
#   OUT      the CSV (default measurements/ranges/memory-NUM.csv)
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/measure-common.sh
bfh=$(bfh_cli)
num=${NUM:-1000000}
queries=${QUERIES:-20}
out=${OUT:-measurements/ranges/memory-$num.csv}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/bfh-ranges-memory.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

# A fixed permutation: i * 7919 mod NUM (NUM not a multiple of 7919).
awk -v n="$num" 'BEGIN { h = int(n / 2); for (i = 0; i < n; i++) { p = (i * 7919) % n;
  printf "k%08d\t%d\n", i, (p - h) * 4096 } }' >"$tmp/records.tsv"

field() { grep -o "\"$2\": *[^,}]*" <<<"$1" | head -1 | sed 's/.*: *//; s/"//g'; }

echo "commit,num,kind,config,query,queries,tables_live,index_bytes,index_bytes_per_entry,memtable_index_bytes,leaves_passed_mean,leaf_fpr,tables_read_mean,table_fpr,map_chunks_read_mean,blocks_read_mean" >"$out"
for config in whole int range; do
  case $config in
    whole) attr=() ;;
    int) attr=(--attr n=value:int) ;;
    range) attr=(--attr n=value:int:range) ;;
  esac
  rm -rf "$tmp/db"
  "$bfh" load "$tmp/db" --from "$tmp/records.tsv" --format tsv "${attr[@]}" >/dev/null
  stats=$("$bfh" stats "$tmp/db" --json)
  tables=$(field "$stats" tables)
  ib=$(field "$stats" index_bytes)
  mib=$(field "$stats" memtable_index_bytes)
  per=$(awk -v b="$ib" -v n="$num" 'BEGIN { printf "%.4f", b / n }')
  echo "$commit,$num,memory,$config,,,$tables,$ib,$per,$mib,,,,,," >>"$out"
  [ "$config" = range ] || continue
  for query in correlated uniform; do
    passed=0 read=0 chunks=0 blocks=0 live=0
    for q in $(seq "$queries"); do
      p=$(( (q * 104729) % num ))
      v=$(( (p - num / 2) * 4096 ))
      if [ "$query" = correlated ]; then
        lo=$((v + 1))
      else
        lo=$((v + 1 + (q * 2654435761) % (4096 - 1024 - 1)))
      fi
      json=$("$bfh" search "$tmp/db" --where "n BETWEEN $lo AND $((lo + 1023))" --method leaves \
        --json --count || true) # exit status 1: nothing found
      [ -n "$json" ] || { echo "ranges-memory: the search of $lo failed" >&2; exit 1; }
      [ "$(field "$json" results)" = 0 ] || { echo "ranges-memory: $lo is not an empty range" >&2; exit 1; }
      passed=$((passed + $(field "$json" leaf_positives)))
      read=$((read + $(field "$json" tables_scanned)))
      chunks=$((chunks + $(field "$json" map_chunks_read)))
      blocks=$((blocks + $(field "$json" blocks_read)))
      live=$(field "$json" tables_live)
    done
    awk -v c="$commit" -v n="$num" -v k="$query" -v q="$queries" -v l="$live" -v p="$passed" \
      -v r="$read" -v ch="$chunks" -v b="$blocks" -v ib="$ib" -v per="$per" -v mib="$mib" 'BEGIN {
      printf "%s,%s,fpr,range,%s,%d,%d,%s,%s,%s,%.3f,%.5f,%.3f,%.5f,%.3f,%.3f\n", c, n, k, q, l,
        ib, per, mib, p / q, (l > 0 ? p / q / l : 0), r / q, (l > 0 ? r / q / l : 0), ch / q,
        b / q }' >>"$out"
  done
done
cat "$out"

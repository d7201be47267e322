#!/usr/bin/env bash
# What one :int attribute's range terms cost in memory and on disk, and what a table's
# filters let through (issue 48, doc/query.md "Ranges"): NUM records, key k<i>, value the
# integer (p - NUM/2) * 4096 for p a fixed permutation of i (distinct, negative and positive,
# 4096 apart), in random order, loaded four times with the default options:
#   whole    no declaration (the whole value, as today)
#   int      n=value:int            (the integer's term alone)
#   range    n=value:int:range      (the term and its range items at the default levels)
#   range24  n=value:int:range=24   (the term and one coarse level: the zones and the range
#                                    filters do the fine work)
# Each load writes a row of kind "memory": index_bytes (every byte of the value index in
# memory, as `bfh stats` reports it) per entry, and the tables' bytes on disk (data, leaves
# and maps) per entry. On the range loads, QUERIES empty ranges of 1,024 codes of each kind,
#   correlated  n BETWEEN v+1 AND v+1024, v a held value: the range right beside it
#   uniform     n BETWEEN s AND s+1023, s uniform among the empty places between held values
# are searched by LEAVES (every leaf filter asked, in the paper's layout that `bfh search
# --method leaves` opens: no maps, so no zones nor range filters) and by AUTO (the lean
# layout: the folded filters in memory, the zones, the range filters, then the maps' chunks),
# each search a new process; every range is checked
# empty, and the range from v itself to have its one value. A row of kind "fpr" per kind and
# method gives the means per search of the tables the leaf filters passed (leaf_positives:
# LEAVES asks every leaf; AUTO asks the folded ones in memory and counts none), the tables the
# range filters then ruled out and the pieces of them read (doc/query.md "Range filters"),
# the tables whose maps were probed, the tables read, the map chunks and data blocks read;
# passed_share and read_share divide by the live tables (read_share is the per-table
# false-positive rate of all a table keeps, every range being empty).
#   commit,num,kind,config,query,method,queries,tables_live,index_bytes,index_bytes_per_entry,
#   table_bytes_per_entry,passed_mean,passed_share,ranged_mean,range_pieces_mean,probed_mean,
#   read_mean,read_share,map_chunks_read_mean,blocks_read_mean,search_us_mean
# search_us_mean is the searches' own time (elapsed_ns), each in a new process: its reads of
# the tables' filters and maps come from the page cache or the disk, not a warm block cache.
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

# A fixed permutation: i * 7919 mod NUM (NUM not a multiple of 7919). %.0f, not %d: mawk's %d
# stops at 2^31 - 1, and the values reach NUM * 2048.
awk -v n="$num" 'BEGIN { h = int(n / 2); for (i = 0; i < n; i++) { p = (i * 7919) % n;
  printf "k%08d\t%.0f\n", i, (p - h) * 4096 } }' >"$tmp/records.tsv"

field() { grep -o "\"$2\": *[^,}]*" <<<"$1" | head -1 | sed 's/.*: *//; s/"//g'; }

# search WHERE METHOD: the --json line (its exit status 1, nothing found, is not an error).
search() {
  local json
  json=$("$bfh" search "$tmp/db" --where "$1" --method "$2" --json --count 2>/dev/null || true)
  [ -n "$json" ] || { echo "ranges-memory: the search '$1' failed" >&2; exit 1; }
  echo "$json"
}

echo "commit,num,kind,config,query,method,queries,tables_live,index_bytes,index_bytes_per_entry,table_bytes_per_entry,passed_mean,passed_share,ranged_mean,range_pieces_mean,probed_mean,read_mean,read_share,map_chunks_read_mean,blocks_read_mean,search_us_mean" >"$out"
for config in whole int range range24; do
  case $config in
    whole) attr=() ;;
    int) attr=(--attr n=value:int) ;;
    range) attr=(--attr n=value:int:range) ;;
    range24) attr=(--attr n=value:int:range=24) ;;
  esac
  rm -rf "$tmp/db"
  "$bfh" load "$tmp/db" --from "$tmp/records.tsv" --format tsv "${attr[@]}" >/dev/null
  stats=$("$bfh" stats "$tmp/db" --json 2>/dev/null)
  ib=$(field "$stats" index_bytes)
  tb=$(field "$stats" table_bytes)
  live=$(field "$stats" tables)
  awk -v c="$commit" -v n="$num" -v k="$config" -v l="$live" -v ib="$ib" -v tb="$tb" 'BEGIN {
    printf "%s,%s,memory,%s,,,,%s,%s,%.4f,%.2f,,,,,,,,,,\n", c, n, k, l, ib, ib / n, tb / n }' >>"$out"
  case $config in range*) ;; *) continue ;; esac
  for query in correlated uniform; do
    for method in leaves auto; do
      passed=0 ranged=0 pieces=0 probed=0 read=0 chunks=0 blocks=0 ns=0
      for q in $(seq "$queries"); do
        v=$(( ((q * 104729) % num - num / 2) * 4096 ))
        if [ "$query" = correlated ]; then
          lo=$((v + 1))
        else
          lo=$((v + 1 + (q * 2654435761) % (4096 - 1024 - 1)))
        fi
        if [ "$method" = leaves ] && [ "$query" = correlated ]; then
          json=$(search "n BETWEEN $v AND $((v + 1023))" leaves)
          [ "$(field "$json" results)" = 1 ] || { echo "ranges-memory: $v is not held" >&2; exit 1; }
        fi
        json=$(search "n BETWEEN $lo AND $((lo + 1023))" "$method")
        [ "$(field "$json" results)" = 0 ] || { echo "ranges-memory: $lo is not an empty range" >&2; exit 1; }
        passed=$((passed + $(field "$json" leaf_positives)))
        ranged=$((ranged + $(field "$json" tables_ranged)))
        pieces=$((pieces + $(field "$json" range_pieces_read)))
        probed=$((probed + $(field "$json" block_filters_probed)))
        read=$((read + $(field "$json" tables_scanned)))
        chunks=$((chunks + $(field "$json" map_chunks_read)))
        blocks=$((blocks + $(field "$json" blocks_read)))
        ns=$((ns + $(field "$json" elapsed_ns)))
      done
      awk -v c="$commit" -v n="$num" -v k="$query" -v m="$method" -v q="$queries" -v l="$live" \
        -v cf="$config" -v p="$passed" -v rg="$ranged" -v pc="$pieces" -v pr="$probed" -v r="$read" \
        -v ch="$chunks" -v b="$blocks" -v ns="$ns" -v ib="$ib" -v tb="$tb" 'BEGIN {
        printf "%s,%s,fpr,%s,%s,%s,%d,%d,%s,%.4f,%.2f,%.3f,%.5f,%.3f,%.3f,%.3f,%.3f,%.5f,%.3f,%.3f,%.1f\n",
          c, n, cf, k, m, q, l, ib, ib / n, tb / n, p / q, p / q / l, rg / q, pc / q, pr / q, r / q,
          r / q / l, ch / q, b / q, ns / q / 1000 }' >>"$out"
    done
  done
done
cat "$out"

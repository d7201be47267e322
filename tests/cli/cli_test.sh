#!/usr/bin/env bash
# The bfh command as a user runs it: options, help, exit statuses, the record format (load,
# scan, search, get), no database made by mistake, machine-readable output, put without a
# flush, and the manual against --help.
# usage: cli_test.sh BFH_BINARY [DB_BENCH_BINARY]
#   BFH_MAN: the manual to check (default: doc/bfh.1 next to this script)
#   BFH_LDB_HOLD: tests/cli/ldb_hold built (a stock LevelDB program that holds a database
#   open); without it the read-only LevelDB checks are skipped, saying so
#   BFH_LSM_HOLD: tests/cli/lsm_hold built (a read-write bfh handle that holds an own-engine
#   database open); without it the read-only own-engine checks are skipped, saying so
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
bfh=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
db_bench=${2:+$(cd "$(dirname "$2")" && pwd)/$(basename "$2")}
man=${BFH_MAN:-$here/../../doc/bfh.1}
ldb_hold=${BFH_LDB_HOLD:+$(cd "$(dirname "$BFH_LDB_HOLD")" && pwd)/$(basename "$BFH_LDB_HOLD")}
lsm_hold=${BFH_LSM_HOLD:+$(cd "$(dirname "$BFH_LSM_HOLD")" && pwd)/$(basename "$BFH_LSM_HOLD")}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work" # a stray database would appear here
checks=0

check() { echo "check: $*"; checks=$((checks + 1)); }
die() { echo "FAIL: $*" >&2; exit 1; }
# expect_status N CMD...: runs CMD (stdout to out, stderr to err), wants exit status N.
expect_status() {
  local want=$1 got=0
  shift
  "$@" >out 2>err || got=$?
  [ "$got" = "$want" ] || { cat err >&2; die "'$*' exited $got, expected $want"; }
}
expect_in() { grep -q -- "$2" "$1" || { cat "$1" >&2; die "$1 lacks '$2'"; }; }
expect_same() { cmp -s "$1" "$2" || { diff "$1" "$2" >&2 || true; die "$1 and $2 differ"; }; }
no_entry() { [ ! -e "$1" ] || die "$1 was created"; }

check "--version and version print the version"
expect_status 0 "$bfh" --version
grep -Eq '^bfh [0-9]+\.[0-9]+\.[0-9]+$' out || die "--version printed '$(cat out)'"
cp out v1
expect_status 0 "$bfh" version
expect_same out v1

check "every subcommand's --help and -h: usage on stdout, exit 0, nothing created"
for c in load put get delete search scan stats tables check repair run version; do
  expect_status 0 "$bfh" "$c" --help
  expect_in out "usage: bfh $c"
done
expect_status 0 "$bfh" stats -h
expect_in out "usage: bfh stats"
no_entry ./-h

check "unknown option and missing argument: named on stderr, exit 2"
expect_status 2 "$bfh" search db v --frobnicate
expect_in err "'--frobnicate'"
expect_in err "bfh search --help"
expect_status 2 "$bfh" search db v --method
expect_in err "'--method' needs an argument"
expect_status 2 "$bfh" nosuchcommand
expect_status 2 "$bfh"

check "get, search, stats, scan, delete, repair on a missing directory: exit 2, nothing created"
for c in "get typo k" "search typo v" "stats typo" "scan typo" "tables typo" "check typo" "delete typo k" "repair typo"; do
  # shellcheck disable=SC2086
  expect_status 2 "$bfh" $c
  expect_in err "no such database"
  no_entry typo
done

check "numbers are whole: 1.5 and 10x rejected, 1.5k is 1500"
expect_status 2 "$bfh" load num --synthetic 1.5
expect_in err "not a whole number"
expect_status 2 "$bfh" load num --synthetic 10x
expect_status 2 "$bfh" load num --synthetic 2.0001k
no_entry num
expect_status 0 "$bfh" load num --synthetic 1.5k
expect_in err "1500 entries"

check "search --method hierarchy runs the paper's layout (its tree) unless --index-bits says otherwise"
expect_status 0 "$bfh" search num Value17 --json --method hierarchy
expect_in out '"keys":\["Key17"\]'
expect_in out '"internal_maybe":1,' # the root of the paper's tree said maybe
expect_status 0 "$bfh" search num Value17 --json --method hierarchy --index-bits 10
expect_in out '"keys":\["Key17"\]'
expect_in out '"internal_maybe":0,' # the lean layout keeps no tree
expect_status 0 "$bfh" stats num --json
expect_in out '"hierarchy_height":0,' # the default: the lean layout
expect_status 0 "$bfh" stats num --json --index-bits 0
expect_in out '"hierarchy_height":1,'

check "load with neither --from nor --synthetic: exit 2"
expect_status 2 "$bfh" load none
expect_in err "either --from FILE or --synthetic N"
no_entry none

check "load --from CSV: quotes, doubled quotes, comma and newline in quotes, escapes, binary"
printf '%s\n' 'k1,v1' '"k,2","a ""q"" b"' '"multi' 'line",v1' '\x00bin\xff,\\back' '#hash,v1' >in.csv
expect_status 0 "$bfh" load csvdb --from in.csv
expect_in err "5 entries"
# Key order: \0bin < #hash < k,2 < k1 < multi\nline.
printf '%s\n' '\0bin\xff,\\back' '\x23hash,v1' '"k,2","a ""q"" b"' 'k1,v1' 'multi\nline,v1' >want.csv
expect_status 0 "$bfh" scan csvdb
expect_same out want.csv

check "get: the value escaped, exit 0; a missing key exits 1"
expect_status 0 "$bfh" get csvdb '#hash'
[ "$(cat out)" = v1 ] || die "get printed '$(cat out)'"
expect_status 0 "$bfh" get csvdb "$(printf 'k,2')"
[ "$(cat out)" = 'a "q" b' ] || die "get printed '$(cat out)'"
expect_status 1 "$bfh" get csvdb nokey
[ ! -s out ] || die "get of a missing key printed '$(cat out)'"

check "scan round trip: load the dump into another database, scan it again"
"$bfh" scan csvdb >dump1.csv
expect_status 0 "$bfh" load copy --from - <dump1.csv
"$bfh" scan copy >dump2.csv
expect_same dump1.csv dump2.csv

check "load --from TSV (by the .tsv name) and scan --format tsv"
printf 'a\\tb\tx,y\nq"uote\t\\n\n' >in.tsv
expect_status 0 "$bfh" load tsvdb --from in.tsv
printf 'a\\tb\tx,y\nq"uote\t\\n\n' >want.tsv
expect_status 0 "$bfh" scan tsvdb --format tsv
expect_same out want.tsv
expect_status 0 "$bfh" scan tsvdb
printf '%s\n' 'a\tb,"x,y"' '"q""uote",\n' >want-tsv.csv
expect_same out want-tsv.csv

check "search: keys escaped one per line on stdout, statistics on stderr; exit 0, 1, 2"
expect_status 0 "$bfh" search csvdb v1
sort out >got
printf '%s\n' '\x23hash' k1 'multi\nline' | sort >want
expect_same got want
expect_in err "# method auto"
expect_status 1 "$bfh" search csvdb nothing-has-this
[ ! -s out ] || die "a search that found nothing printed '$(cat out)'"
expect_status 0 "$bfh" search csvdb v1 --count
[ "$(cat out)" = 3 ] || die "--count printed '$(cat out)'"
expect_status 2 "$bfh" search csvdb v1 --method nosuch

check "search --json and stats --json: one well-formed object on stdout"
expect_status 0 "$bfh" search csvdb v1 --json
cp out search.json
expect_status 0 "$bfh" stats csvdb --json
cp out stats.json
for f in search.json stats.json; do
  [ "$(wc -l <$f)" = 1 ] || die "$f is not one line"
  if command -v python3 >/dev/null 2>&1; then
    python3 -m json.tool $f >/dev/null || die "$f does not parse"
  fi
  grep -Eq '^\{.*\}$' $f || die "$f is not an object"
done
expect_in search.json '"keys":\['
expect_in search.json '"multi\\\\nline"'
expect_in search.json '"count":3'
expect_in stats.json '"tables":'

check "load --header skips the first record; --batch N flushes every N puts"
printf '%s\n' key,value h1,x h2,x h3,x >hdr.csv
expect_status 0 "$bfh" load hdrdb --from hdr.csv --header --batch 2
expect_in err "3 entries"
expect_status 1 "$bfh" get hdrdb key
expect_status 0 "$bfh" stats hdrdb --json
tables=$(grep -o '"tables":[0-9]*' out | cut -d: -f2)
[ "$tables" -ge 2 ] || die "--batch 2 over 3 entries made $tables tables, expected 2"

check "a bad record: file:line named, entries written before it counted, exit 2"
printf '%s\n' 'a,1' 'b,2' 'c,"unclosed' >bad.csv
expect_status 2 "$bfh" load baddb --from bad.csv
expect_in err "bad.csv:3:"
expect_in err "2 entries written before it"
printf 'a,1\nb\\q,2\n' >esc.csv
expect_status 2 "$bfh" load baddb --from esc.csv
expect_in err "esc.csv:2: bad escape"

if command -v script >/dev/null 2>&1; then
  check "load on a terminal: a progress line with the rate and an ETA, then a summary with ops/s"
  script -qec "'$bfh' load progdb --synthetic 5000" /dev/null >tty.out || die "load on a terminal failed"
  expect_in tty.out "of 5000 .*ops/s, ETA"
  expect_in tty.out "5000 entries in .* ops/s)"
  expect_status 0 "$bfh" load progdb2 --synthetic 5000
  if grep -q ETA err; then die "a progress line went to stderr that is not a terminal"; fi
else
  echo "skipped: the progress line (no script(1) to give load a terminal)"
fi

check "put twice, then stats --json: the puts are in the log, no table"
expect_status 0 "$bfh" put putdb a 1
expect_status 0 "$bfh" put putdb b 1
expect_status 0 "$bfh" stats putdb --json
expect_in out '"tables":0,'
expect_status 0 "$bfh" search putdb 1 --count
[ "$(cat out)" = 2 ] || die "the two puts: search found '$(cat out)'"

check "tables: one row per live table, as text, --json and --csv; the entries add up"
# Each open may go on compacting, so the table count can change between two commands; the
# entries of the tables one command lists (one version) always add up to the keys loaded.
expect_status 0 "$bfh" load tabdb --synthetic 20k --memtable-bytes 64KiB --table-bytes 64KiB
expect_status 0 "$bfh" tables tabdb
expect_in out "^number  *level  *entries"
[ "$(wc -l <out)" -ge 3 ] || die "20k entries through a 64 KiB memtable: tables listed $(($(wc -l <out) - 1))"
expect_status 0 "$bfh" tables tabdb --csv
expect_in out "^number,level,entries,bytes,smallest,largest"
entries=$(tail -n +2 out | awk -F, '{n += $3} END {print n}')
[ "$entries" = 20000 ] || die "the tables hold $entries entries, expected 20000"
expect_status 0 "$bfh" tables tabdb --json
if command -v python3 >/dev/null 2>&1; then
  python3 -m json.tool out >/dev/null || die "tables --json does not parse"
fi
entries=$(grep -o '"entries": *[0-9]*' out | grep -o '[0-9]*$' | awk '{n += $1} END {print n}')
[ "$entries" = 20000 ] || die "tables --json: $entries entries, expected 20000"
expect_status 2 "$bfh" tables tabdb --json --csv
expect_in err "exclude each other"

check "search --csv: a header, then one key per line as a CSV field"
expect_status 0 "$bfh" search csvdb v1 --csv
[ "$(head -1 out)" = key ] || die "search --csv began with '$(head -1 out)'"
tail -n +2 out | sort >got
printf '%s\n' '\x23hash' k1 'multi\nline' | sort >want
expect_same got want

check "check: a clean database exits 0; a damaged table block exits 1 naming file and offset"
expect_status 0 "$bfh" check tabdb
expect_in out "no damage"
table=$(ls tabdb/*.sst | head -1)
printf '\xff\xff\xff\xff' | dd of="$table" bs=1 seek=100 conv=notrunc status=none
expect_status 1 "$bfh" check tabdb
expect_in out "$(basename "$table")"
expect_status 1 "$bfh" check tabdb --json
expect_in out '"offset": *0[,}]'

check "a damaged log record: check reports it alone; repair keeps every other record"
for i in $(seq 100 159); do "$bfh" put logdb "k$i" "v$i-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"; done
log=$(ls logdb/*.log)
size=$(wc -c <"$log")
[ "$size" = $((60 * 67)) ] || die "$log: $size bytes, expected 60 records of 67"
# A payload byte of the 11th record (a 7-byte header, then the write batch).
printf '\xff' | dd of="$log" bs=1 seek=$((10 * 67 + 7 + 30)) conv=notrunc status=none
expect_status 1 "$bfh" check logdb
expect_in out "$(basename "$log") *670 *checksum mismatch"
[ "$(grep -c 'checksum' out)" = 1 ] || { cat out >&2; die "check reported more than one damage"; }
expect_status 0 "$bfh" repair logdb
expect_in out "59 records kept"
expect_status 0 "$bfh" scan logdb
[ "$(wc -l <out)" = 59 ] || die "scan after repair: $(wc -l <out) keys, expected 59"

check "CURRENT removed: put refuses (exit 2, says to repair), deletes nothing; repair brings all back"
expect_status 0 "$bfh" load nocur --synthetic 3000
tables=$(ls nocur/*.sst | wc -l)
rm nocur/CURRENT
expect_status 2 "$bfh" put nocur k v
expect_in err "CURRENT is missing"
expect_in err "bfh repair"
[ "$(ls nocur/*.sst | wc -l)" = "$tables" ] || die "put deleted tables"
no_entry nocur/CURRENT
expect_status 2 "$bfh" load nocur --synthetic 10
expect_status 0 "$bfh" repair nocur
expect_status 0 "$bfh" scan nocur
[ "$(wc -l <out)" = 3000 ] || die "after repair: $(wc -l <out) keys, expected 3000"

check "load with a missing input or a bad option creates nothing; repair leaves a non-database alone"
expect_status 2 "$bfh" load noin --from /nonexistent.csv
no_entry noin
expect_status 2 "$bfh" load noin --synthetic 10 --domain 0
no_entry noin
mkdir plain
echo notes >plain/notes
expect_status 2 "$bfh" repair plain
expect_in err "not a bfh lsm database"
[ "$(ls plain)" = notes ] || die "repair changed a plain directory: $(ls plain | tr '\n' ' ')"

check "the README's session on RocksDB: put, get, search, scan and delete with --engine rocksdb"
expect_status 0 "$bfh" put rdb k1 Warsaw --engine rocksdb
expect_status 0 "$bfh" put rdb k2 Warsaw --engine rocksdb
expect_status 0 "$bfh" put rdb k3 Paris --engine rocksdb
ls rdb/OPTIONS-* >/dev/null 2>&1 || die "put --engine rocksdb made no RocksDB database (no OPTIONS file)"
expect_status 0 "$bfh" get rdb k1 --engine rocksdb
[ "$(cat out)" = Warsaw ] || die "get --engine rocksdb printed '$(cat out)'"
expect_status 1 "$bfh" get rdb k9 --engine rocksdb
expect_status 0 "$bfh" search rdb Warsaw --engine rocksdb
[ "$(sort out | tr '\n' ' ')" = "k1 k2 " ] || die "search --engine rocksdb printed '$(cat out)'"
for m in scan leaves hierarchy sliced auto; do
  expect_status 0 "$bfh" search rdb Paris --engine rocksdb --method $m
  [ "$(cat out)" = k3 ] || die "search --engine rocksdb --method $m printed '$(cat out)'"
done
expect_status 1 "$bfh" search rdb Oslo --engine rocksdb
expect_status 0 "$bfh" scan rdb --engine rocksdb
printf 'k1,Warsaw\nk2,Warsaw\nk3,Paris\n' >want
expect_same out want
expect_status 0 "$bfh" delete rdb k2 --engine rocksdb
expect_status 0 "$bfh" search rdb Warsaw --engine rocksdb
[ "$(cat out)" = k1 ] || die "search after delete printed '$(cat out)'"

check "LevelDB's and RocksDB's libraries are loaded only by a process that writes with them, snappy and RocksDB's decompressors only by one that reads their tables"
# The dynamic loader's trace (glibc's LD_DEBUG) names every library it maps. The writes prove
# the trace names them; the own engine's and the read-only searches map neither.
LD_DEBUG=files "$bfh" put rdb k4 Rome --engine rocksdb 2>ld.trace >/dev/null
grep -q 'file=librocksdb' ld.trace || die "put --engine rocksdb: the loader's trace names no librocksdb"
LD_DEBUG=files "$bfh" put ldb_lazy k1 Rome --engine leveldb 2>ld.trace >/dev/null
grep -q 'file=libleveldb' ld.trace || die "put --engine leveldb: the loader's trace names no libleveldb"
expect_status 0 "$bfh" put lazy k1 Rome
for args in "lazy Rome" "rdb Rome --engine rocksdb" "ldb_lazy Rome --engine leveldb"; do
  # shellcheck disable=SC2086
  LD_DEBUG=files "$bfh" search $args 2>ld.trace >out
  [ "$(cat out)" = "$(case $args in lazy*) echo k1 ;; rdb*) echo k4 ;; *) echo k1 ;; esac)" ] ||
    die "search $args printed '$(cat out)'"
  ! grep -E 'file=(librocksdb|libleveldb)' ld.trace || die "search $args loaded a stock engine's library"
  # the own engine's tables are not compressed: snappy and the decompressors stay unloaded (a
  # sanitizer runtime may bring the C++ runtime, which snappy would)
  case $args in
    lazy*) ! grep -E 'file=(libsnappy|libz\.|liblz4|libzstd|libbz2)' ld.trace ||
      die "search $args loaded snappy or a decompressor" ;;
  esac
done
expect_status 0 "$bfh" delete rdb k4 --engine rocksdb
# Without --engine, the engine that wrote it; with another, refused, naming the right one.
expect_status 0 "$bfh" search rdb Warsaw
[ "$(cat out)" = k1 ] || die "search without --engine printed '$(cat out)'"
expect_in err "reading rdb read-only (no RocksDB"
expect_status 2 "$bfh" search rdb Warsaw --engine lsm
expect_in err "open it with the rocksdb engine (--engine rocksdb)"

if [ -n "$ldb_hold" ]; then
  check "search a LevelDB database that a stock LevelDB program holds open: read-only, nothing written; check refuses it"
  mkfifo hold.in
  "$ldb_hold" live 20000 <hold.in >hold.out &
  holder=$!
  exec 3>hold.in # the holder runs until this closes
  while ! grep -q ready hold.out; do
    kill -0 $holder 2>/dev/null || die "ldb_hold exited before it was ready"
    sleep 0.1
  done
  ls -l --time-style=+%s.%N live >before.ls
  cksum live/* >before.sum
  expect_status 0 "$bfh" search live v3 --engine leveldb --count --index-dir "$work/idx"
  [ "$(cat out)" = 2000 ] || die "read-only search found '$(cat out)' keys of v3, expected 2000"
  expect_in err "read-only"
  expect_status 0 "$bfh" search live v3 --engine leveldb --method hierarchy --index-dir none
  [ "$(wc -l <out)" = 2000 ] || die "read-only hierarchy search printed $(wc -l <out) keys"
  expect_status 0 "$bfh" get live k13 --engine leveldb --index-dir "$work/idx"
  [ "$(cat out)" = v3 ] || die "read-only get printed '$(cat out)'"
  expect_status 0 "$bfh" tables live --engine leveldb --index-dir "$work/idx"
  expect_status 0 "$bfh" stats live --engine leveldb --json --index-dir "$work/idx"
  expect_in out '"engine":"leveldb"'
  [ -s "$work/idx/BFH-PARAMS" ] || die "the index directory holds no BFH-PARAMS"
  # check refuses it: a table the owner is writing would read as damaged.
  expect_status 2 "$bfh" check live --engine leveldb
  expect_in err "holds LevelDB's LOCK"
  # So does repair: LevelDB's RepairDB under the owner would break its database.
  expect_status 2 "$bfh" repair live --engine leveldb
  expect_in err "holds LevelDB's LOCK"
  ls -l --time-style=+%s.%N live >after.ls
  cksum live/* >after.sum
  expect_same before.ls after.ls
  expect_same before.sum after.sum
  # The holder still owns the database: LevelDB itself cannot open it (and, trying, stock
  # LevelDB renames the owner's LOG to LOG.old: one more reason to read without it).
  expect_status 2 "$bfh" search live v3 --engine leveldb --read-write
  expect_in err "lock"
  exec 3>&-
  wait $holder || die "ldb_hold failed (it lost its database?)"
else
  echo "skipped: the read-only LevelDB checks (BFH_LDB_HOLD is not set)"
fi

if [ -n "$lsm_hold" ]; then
  check "search an own-engine database that a bfh writer holds open: read-only by default, the right keys, nothing written; --read-write is refused"
  mkfifo lhold.in
  "$lsm_hold" own 20000 <lhold.in >lhold.out &
  lholder=$!
  exec 4>lhold.in # the holder runs until this closes
  while ! grep -q ready lhold.out; do
    kill -0 $lholder 2>/dev/null || die "lsm_hold exited before it was ready"
    sleep 0.1
  done
  ls -l --time-style=+%s.%N own >before.ls
  cksum own/* >before.sum
  expect_status 0 "$bfh" search own v3 --count
  [ "$(cat out)" = 2000 ] || die "read-only search found '$(cat out)' keys of v3, expected 2000"
  expect_in err "read-only"
  expect_status 0 "$bfh" search own v3 --method hierarchy
  [ "$(wc -l <out)" = 2000 ] || die "read-only hierarchy search printed $(wc -l <out) keys"
  grep -qx k13 out || die "read-only search missed k13 (in the writer's table)"
  grep -qx k19993 out || die "read-only search missed k19993 (in the writer's log)"
  grep -qx k14 out && die "read-only search printed k14 (its value is v4)"
  expect_status 0 "$bfh" get own k19993
  [ "$(cat out)" = v3 ] || die "read-only get printed '$(cat out)'"
  expect_status 0 "$bfh" scan own
  [ "$(wc -l <out)" = 20000 ] || die "read-only scan printed $(wc -l <out) records"
  expect_status 0 "$bfh" tables own
  expect_status 0 "$bfh" stats own --json
  expect_in out '"engine":"lsm"'
  ls -l --time-style=+%s.%N own >after.ls
  cksum own/* >after.sum
  expect_same before.ls after.ls
  expect_same before.sum after.sum
  expect_status 2 "$bfh" search own v3 --read-write
  expect_in err "LOCK"
  exec 4>&-
  wait $lholder || die "lsm_hold failed"
else
  echo "skipped: the read-only own-engine checks (BFH_LSM_HOLD is not set)"
fi

check "search with --standalone-index opens the own engine read-write (a read-only handle keeps no stand-alone index); without it, read-only"
expect_status 0 "$bfh" load sa --synthetic 2000 --standalone-index
expect_status 0 "$bfh" search sa Value42 --standalone-index --method standalone
[ "$(cat out)" = Key42 ] || die "stand-alone search printed '$(cat out)'"
expect_status 0 "$bfh" search sa Value42
[ "$(cat out)" = Key42 ] || die "read-only search printed '$(cat out)'"
expect_in err "read-only"

check "load --attr declares attributes at creation; index list shows them; a later load needs none, other ones are refused"
printf '%s\n' 'k1,"{""city"":""Oslo"",""tags"":[""a"",""b""],""n"":7}"' \
  'k2,"{""city"":""Rome"",""n"":8}"' 'k3,notjson' >attrs.csv
expect_status 0 "$bfh" load attrdb --from attrs.csv --attr city=json:city --attr tags=json:tags \
  --attr n=json:n:int
expect_status 0 "$bfh" index list attrdb
printf '%s\n' 'name  extractor   values_without_term' 'city  json:city                     0' \
  'tags  json:tags                     0' 'n     json:n:int                    0' >want_attrs
expect_same want_attrs out
expect_status 0 "$bfh" index list attrdb --json
expect_in out '"name": "n", "extractor": "json:n:int"'
expect_status 0 "$bfh" load attrdb --from attrs.csv
expect_status 2 "$bfh" load attrdb --from attrs.csv --attr city=json:town
expect_in err "the database has city=json:city"
expect_status 2 "$bfh" load attrdb2 --from attrs.csv --attr city
expect_in err "is not NAME=EXTRACTOR"
expect_status 2 "$bfh" load attrdb3 --from attrs.csv --attr city=xml:a
expect_in err "unknown extractor"
[ ! -e attrdb3/CURRENT ] || die "a refused declaration left a database"
expect_status 2 "$bfh" index drop attrdb
expect_status 0 "$bfh" load plain --synthetic 10
expect_status 0 "$bfh" index list plain
expect_in out "no attributes declared"

check "search --where: the keys whose value satisfies the predicate, by every method (standalone with its index, cuckoo refused); --json; errors name the column"
for m in scan leaves hierarchy sliced auto; do
  expect_status 0 "$bfh" search attrdb --where "tags = 'b' OR (city IN ('Rome', 'Paris') AND n = 008)" --method $m
  sort out >got_where
  printf '%s\n' k1 k2 >want_where
  expect_same want_where got_where
done
expect_status 1 "$bfh" search attrdb --where "city = 'Oslo' AND n = 8"
expect_status 0 "$bfh" search attrdb --where "city = 'Oslo'" --json
expect_in out '^{"where":"city = .Oslo.","method":"auto","keys":."k1".,"method_used":'
expect_status 2 "$bfh" search attrdb --where "city = 'Oslo' AND town = 'x'"
expect_in err "column 19: no attribute called town"
expect_status 2 "$bfh" search attrdb --where "city = 'Oslo'" --method cuckoo
expect_in err "whole values only"
expect_status 2 "$bfh" search attrdb --where "city = 'Oslo'" --method standalone
expect_in err "standalone_index = 1"
expect_status 0 "$bfh" search attrdb --where "tags = 'b' OR (city IN ('Rome', 'Paris') AND n = 008)" \
  --method standalone --standalone-index
sort out >got_where
expect_same want_where got_where
expect_status 2 "$bfh" search attrdb k1 --where "city = 'Oslo'"
expect_status 2 "$bfh" search attrdb
expect_status 2 "$bfh" search attrdb k1 --newest 2

check "search --where --newest K: the K matching keys written last, newest first, by every method; --json the same fields"
# attrs.csv was loaded twice: k2's last write came after k1's.
printf '%s\n' k2 k1 >want_newest
for m in scan leaves hierarchy sliced auto; do
  expect_status 0 "$bfh" search attrdb --where "tags = 'b' OR (city IN ('Rome', 'Paris') AND n = 008)" \
    --newest 5 --method $m
  expect_same want_newest out
done
expect_status 0 "$bfh" search attrdb --where "tags = 'b' OR city = 'Rome'" --newest 1 --json
expect_in out '^{"where":"tags = .b. OR city = .Rome.","method":"auto","keys":."k2".,"method_used":'

check "index add builds a new attribute into every table and declares it; list shows it; drop removes one, never the last; a database without declarations keeps its whole values"
expect_status 0 "$bfh" index add attrdb big=json:n:int
expect_in out "declared big=json:n:int"
[ -d attrdb/lost ] || die "index add kept no copy of the old database in attrdb/lost/"
expect_status 0 "$bfh" index list attrdb
expect_in out "big   json:n:int"
expect_status 2 "$bfh" index add attrdb big=json:m
expect_in err "big"
expect_status 2 "$bfh" index add attrdb big
expect_in err "NAME=EXTRACTOR"
expect_status 2 "$bfh" index add attrdb
expect_status 0 "$bfh" index drop attrdb big
expect_status 0 "$bfh" index list attrdb
if grep -q '^big' out; then die "index drop left big declared"; fi
expect_status 2 "$bfh" index drop attrdb big
expect_in err "declares no attribute big"
for a in city tags; do expect_status 0 "$bfh" index drop attrdb "$a"; done
expect_status 2 "$bfh" index drop attrdb n
expect_in err "last attribute"
expect_status 0 "$bfh" index add plain x=json:x
expect_status 0 "$bfh" index list plain
expect_in out "^value"
expect_status 0 "$bfh" search plain Value3
[ "$(cat out)" = Key3 ] || die "after index add, the whole-value search printed '$(cat out)'"

if [ -n "$db_bench" ]; then
  check "db_bench --tmp on a directory that does not exist"
  expect_status 0 "$db_bench" --num 1000 --engines bfh --benchmarks fillseq --tmp "$work/no/such/dir"
  [ -d "$work/no/such/dir" ] || die "db_bench did not create --tmp"
fi

check "run --scale N: N entries alone in the paper's geometry (2 MiB tables, m = 500k for Fig. 9)"
expect_status 0 "$bfh" run fig9 --scale 300k --queries 5 --no-plot --out "$work/res"
awk -F, 'NR==1{for(i=1;i<=NF;i++)h[$i]=i;next}{print $h["scale"], $h["n"], $h["m"], $h["table_bytes"]}' \
  "$work/res/fig9.csv" | sort -u >sizes
echo 'paper 300000 500000 2097152' >want_sizes
expect_same want_sizes sizes
expect_status 2 "$bfh" run fig9 --scale 0 --out "$work/res"
expect_status 2 "$bfh" run fig9 --scale 10X --out "$work/res"
rm -rf "$work/res"

check "run --costs authors then --costs bfh: one fig8.csv with the rows of both profiles"
run_fig8() { expect_status 0 "$bfh" run fig8 --scale small --max-n 100000 --queries 5 --no-plot \
  --out "$work/res" --work "$work/res/db" --keep "$@"; }
costs_of() { awk -F, 'NR==1{for(i=1;i<=NF;i++)if($i=="costs")c=i;next}{print $c}' "$work/res/fig8.csv" | sort | uniq -c; }
run_fig8 --costs authors
run_fig8 --costs bfh
costs_of >costs
grep -Eq '^ +7 authors$' costs || { cat costs >&2; die "the authors' rows are not kept"; }
grep -Eq '^ +[0-9]+ bfh$' costs || { cat costs >&2; die "no rows with bfh's costs"; }
ls "$work"/res/db/*/authors-leaves/*.bloom >/dev/null || die "no leaf files written"
run_fig8 # again, bfh's costs: its rows replaced, the authors' kept
costs_of >costs2
expect_same costs costs2
expect_status 2 "$bfh" run fig8 --costs nobody

check "run fig8 and table1 --costs authors --cold: cold rows under the authors' costs, every key right"
run_fig8 --costs authors --cold --cold-queries 2
awk -F, 'NR==1{for(i=1;i<=NF;i++)h[$i]=i;next} $h["costs"]=="authors" {
    if ($h["wrong"] != 0) { print "wrong keys: " $0; bad = 1 }
    if ($h["cache"] ~ /^cold/) { cold++; if ($h["queries"] != 2) { print "queries: " $0; bad = 1 } }
    else warm++ }
  END { if (warm != 7 || cold != 7) { print warm " warm and " cold " cold rows"; bad = 1 }
    exit bad }' "$work/res/fig8.csv" >acold || { cat acold >&2; die "the authors' cold rows of fig8"; }
expect_status 0 "$bfh" run table1 --scale small --max-n 100000 --cold --costs authors --no-plot \
  --out "$work/res" --work "$work/res/db"
awk -F, 'NR==1{for(i=1;i<=NF;i++)h[$i]=i;next}
  { rows++; if ($h["costs"] != "authors" || $h["cold_cache"] !~ /^cold/ || $h["wrong"] != 0 ||
               !($h["scan_lookup_cold_s"] > 0) || !($h["scan_lookup_cold_q3_s"] >= $h["scan_lookup_cold_q1_s"]) ||
               $h["key_lookups_cold"] != 21 || !($h["key_lookup_cold_s"] > 0)) bad = 1 }
  END { exit bad || rows != 1 }' "$work/res/table1.csv" || { cat "$work/res/table1.csv" >&2; die "bad authors' table1 row"; }
rm -rf "$work/res"

check "run fig8 --series/--cache: a run replaces only the rows it measured"
rows_of() { awk -F, 'NR==1{for(i=1;i<=NF;i++)h[$i]=i;next}
  {print $h["n"], $h["series"], $h["query"], ($h["cache"] ~ /^cold/ ? "cold" : $h["cache"]), $h["queries"]}' \
  "$work/res/fig8.csv"; }
run_fig8 --series scan,leaves-mem --cache warm
rows_of >rows1
printf '%s\n' '100000 scan present warm 5' '100000 leaves-mem present warm 5' \
  '100000 leaves-mem absent warm 5' >want1
expect_same want1 rows1
run_fig8 --series sliced-disk --cache both --cold-queries 2 # other series: the first kept
rows_of >rows2
printf '%s\n' '100000 sliced-disk present warm 5' '100000 sliced-disk absent warm 5' \
  '100000 sliced-disk present cold 2' '100000 sliced-disk absent cold 2' >want2
cat rows1 want2 >want2all
expect_same want2all rows2
run_fig8 --series leaves-mem,sliced-disk --cache cold # cold rows only: the warm ones kept
rows_of >rows3
grep -v ' cold ' rows2 >want3
printf '%s\n' '100000 sliced-disk present cold 5' '100000 sliced-disk absent cold 5' >>want3
grep -q 'leaves-mem .* cold' rows3 || die "no cold rows of leaves-mem"
grep -v 'leaves-mem .* cold' rows3 >rows3b
expect_same want3 rows3b
run_fig8 --min-n 250000 --max-n 250000 --series scan --cache warm # another size: 100000 kept
rows_of >rows4
# 250000 holds the paper's query, Value187719: its rows ("fixed") beside the drawn values'.
{ cat rows3; echo '250000 scan present warm 5'; echo '250000 scan fixed warm 5'; } >want4
expect_same want4 rows4
awk -F, 'NR==1{for(i=1;i<=NF;i++)h[$i]=i;next} $h["query"]=="fixed"{print $h["fixed_value"], $h["results"], $h["wrong"]}' \
  "$work/res/fig8.csv" >fixed
echo '187719 1 0' >want_fixed
expect_same want_fixed fixed
check "run fig8 stopped, then killed, before its first row: every row it keeps is on disk"
# The rows the run below keeps: all but n = 250000's (its scan row, which it measures again).
awk -F, 'NR==1{for(i=1;i<=NF;i++)if($i=="n")c=i} NR==1||$c!=250000' "$work/res/fig8.csv" >kept
"$bfh" run fig8 --scale small --min-n 250000 --max-n 250000 --series scan --cache warm \
  --queries 1000 --no-plot --out "$work/res" --work "$work/res/db" --keep >/dev/null 2>&1 &
pid=$!
# Wait for the state: the run holds fig8.csv open to write its rows (1000 scans to go).
while kill -0 "$pid" 2>/dev/null && ! ls -l "/proc/$pid/fd" 2>/dev/null | grep -q 'res/fig8\.csv$'; do
  sleep 0.01
done
kill -STOP "$pid" 2>/dev/null || true
head -n "$(wc -l <kept)" "$work/res/fig8.csv" >on_disk
expect_same kept on_disk
kill -KILL "$pid" 2>/dev/null || true
wait "$pid" 2>/dev/null || true
head -n "$(wc -l <kept)" "$work/res/fig8.csv" >on_disk
expect_same kept on_disk
expect_status 2 "$bfh" run fig8 --series scan,nosuch --out "$work/res"
grep -q "unknown series 'nosuch'.*leaves-mem" err ||
  die "an unknown series does not list the valid ones"
expect_status 2 "$bfh" run fig8 --cache lukewarm --out "$work/res"
expect_status 2 "$bfh" run fig8 --cold-queries 0 --out "$work/res"
expect_status 2 "$bfh" run table1 --series scan --out "$work/res"
check "run fig8 --cache both: a cold query (a child of the reopened database) counts what a warm one does"
run_fig8 --min-n 100000 --max-n 100000 --series scan,hierarchy-paper-disk,sliced-mem --cache both \
  --cold-queries 5
# The same 5 values warm and cold: every counter of the search must agree, and no answer be wrong.
awk -F, 'NR==1{for(i=1;i<=NF;i++)h[$i]=i;next}
  $h["n"]==100000 && $h["series"] ~ /^(scan|hierarchy-paper-disk|sliced-mem)$/{
    k=$h["series"] " " $h["query"]; c=($h["cache"] ~ /^cold/)
    v=$h["queries"] " " $h["wrong"] " " $h["leaf_probes"] " " $h["internal_probes"] " " \
      $h["tables_scanned"] " " $h["bytes_read"] " " $h["candidates"] " " $h["results"]
    if (c) cold[k]=v; else warm[k]=v }
  END{for(k in warm) print k ": " warm[k]; for(k in cold) print k ": " cold[k]}' \
  "$work/res/fig8.csv" | sort >counts
[ "$(wc -l <counts)" = 10 ] || { cat counts >&2; die "not 5 warm and 5 cold rows"; }
uniq -d counts >pairs # every warm line has its identical cold line
expect_same pairs <(sort -u counts)
awk '$3 != 5 || $4 != 0 { bad = 1 } END { exit bad }' pairs || { cat pairs >&2; die "wrong answers"; }
rm -rf "$work/res"
check "run table1 --cold: every cold get (a child of the reopened database) finds its key"
expect_status 0 "$bfh" run table1 --scale small --max-n 100000 --cold --no-plot --out "$work/res" \
  --work "$work/res/db"
! grep -q 'found nothing' err || { cat err >&2; die "a get found nothing"; }
awk -F, 'NR==1{for(i=1;i<=NF;i++)h[$i]=i;next}
  { rows++; if ($h["key_lookups_cold"] != 21 || !($h["key_lookup_cold_s"] > 0) ||
               $h["scan_results"] != 1 || !($h["scan_lookup_cold_s"] > 0)) bad = 1 }
  END { exit bad || rows != 1 }' "$work/res/table1.csv" || { cat "$work/res/table1.csv" >&2; die "bad table1 row"; }
check "run each driver at another size into the same --out: the other sizes' rows are kept"
for a in fig6 beyond table2 tradeoff; do # table1 ran at 100000 above
  expect_status 0 "$bfh" run $a --scale small --max-n 100000 --no-plot --out "$work/res" \
    --work "$work/res/db"
done
# Table II's synthetic rows (the 500M and 1B points as structures, at small scale a tenth of
# them) are measured by every run: replaced, never doubled.
grep -c ',synthetic,' "$work/res/table2.csv" >synthetic_rows
# The small scale's trade-off is at 100000 only: a run at 300000 measures none of its rows.
cp "$work/res/tradeoff.csv" tradeoff_before
cp "$work/res/tradeoff_goals.csv" goals_before
# The 500M point runs this way, after the sizes below it.
for a in table1 fig6 beyond table2 tradeoff; do
  expect_status 0 "$bfh" run $a --scale small --min-n 300000 --max-n 300000 --no-plot \
    --out "$work/res" --work "$work/res/db"
  [ $a = tradeoff ] && continue
  awk -F, 'NR==1{for(i=1;i<=NF;i++)h[$i]=i;next}
    !("source" in h) || $h["source"] != "synthetic" { print $h["n"] }' "$work/res/$a.csv" |
    sort -un >sizes
  printf '%s\n' 100000 300000 >want_sizes
  expect_same want_sizes sizes
done
grep -c ',synthetic,' "$work/res/table2.csv" >synthetic_after
expect_same synthetic_rows synthetic_after
expect_same tradeoff_before "$work/res/tradeoff.csv"
expect_same goals_before "$work/res/tradeoff_goals.csv"
rm -rf "$work/res"
check "run attributes: an ingest row for the whole value, one for three attributes and one with the composite, with the commit and both goals' figures; a query row per predicate and method, the newest 10 by auto and scan with auto's ratio to its full answer, and the filter-only rows with and without the composite, wrong = 0"
expect_status 0 "$bfh" run attributes --scale 20000 --queries 5 --no-plot --out "$work/attr" \
  --work "$work/attr/db"
awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) h[$i] = i
    split("commit n kind config attributes ingest_s ingest_cpu_s ingest_cpu_ratio index_bytes " \
          "index_bytes_per_entry_attribute goal_met query method method_used results wrong " \
          "time_s ratio ratio_goal", need, " ")
    for (j in need) if (!(need[j] in h)) { print "no column " need[j]; bad = 1 }
    next }
  $h["kind"] == "ingest" { seen[$h["config"]] = $h["attributes"]; ingest++
    if ($h["n"] != 20000 || $h["commit"] == "" || $h["ingest_cpu_s"] <= 0 ||
        $h["index_bytes_per_entry_attribute"] <= 0) { print "bad row " NR ": " $0; bad = 1 } }
  $h["kind"] == "query" { q[$h["config"] "/" $h["query"] "/" $h["method"]]++
    if ($h["wrong"] != 0 || $h["time_s"] <= 0 || $h["method_used"] != ($h["method"] == "auto" ? $h["method_used"] : $h["method"]))
      { print "bad row " NR ": " $0; bad = 1 }
    if ($h["query"] == "and" && $h["results"] != 23) { print "and: " $h["results"] " keys"; bad = 1 }
    if (($h["query"] == "and" || $h["query"] == "or") && $h["method"] != "scan" && $h["ratio"] <= 0)
      { print "no ratio: " $0; bad = 1 }
    if ($h["query"] == "newest" && ($h["results"] != 10 || ($h["method"] == "auto" && $h["ratio"] <= 0)))
      { print "newest: " $0; bad = 1 } }
  END { if (seen["whole"] != 1 || seen["attrs3"] != 3 || seen["pair"] != 4 || ingest != 3) { print "ingest rows: " ingest; bad = 1 }
    split("tag age and or in absent and_in", qs, " "); split("auto standalone scan", ms, " ")
    for (i in qs) for (j in ms) if (q["attrs3/" qs[i] "/" ms[j]] != 1) { print qs[i] " by " ms[j] ": " q["attrs3/" qs[i] "/" ms[j]] " rows"; bad = 1 }
    split("attrs3-filters pair", cs, " "); split("tag age and and_in", ps, " ")
    for (c in cs) for (i in ps) if (q[cs[c] "/" ps[i] "/auto"] != 1) { print cs[c] ": " ps[i] " by auto: " q[cs[c] "/" ps[i] "/auto"] " rows"; bad = 1 }
    if (q["attrs3/newest/auto"] != 1 || q["attrs3/newest/scan"] != 1 || q["attrs3/newest/standalone"] != "")
      { print "newest rows"; bad = 1 }
    if (NR != 35) { print NR - 1 " rows"; bad = 1 }
    exit bad }' "$work/attr/attributes.csv" >attrcheck || { cat attrcheck >&2; die "attributes.csv"; }
[ -z "$(ls -A "$work/attr/db" 2>/dev/null)" ] || die "run attributes left databases behind"
check "run memory: a row per configuration, method and domain, with the common columns"
expect_status 0 "$bfh" run memory --scale small --max-n 100000 --queries 5 --no-plot \
  --out "$work/mem" --work "$work/mem/db"
awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) h[$i] = i
    split("engine scale n domain_pct commit config series bytes_per_entry index_bytes " \
          "rss_index_bytes ingest_s ingest_off_s present_time_s present_time_q1_s " \
          "present_time_q3_s absent_time_s present_tables_read present_blocks_read wrong", need, " ")
    for (j in need) if (!(need[j] in h)) { print "no column " need[j]; bad = 1 }
    next }
  { rows[$h["domain_pct"] "/" $h["config"] "/" $h["series"]]++
    if ($h["n"] != 100000 || $h["scale"] != "small" || $h["wrong"] != 0 || $h["bytes_per_entry"] == "" ||
        $h["present_time_s"] <= 0) { print "bad row " NR ": " $0; bad = 1 }
    if ($h["config"] == "paper") paper[$h["domain_pct"]] = $h["index_bytes"]
    if ($h["config"] == "lean") lean[$h["domain_pct"]] = $h["index_bytes"]
    if ($h["config"] == "lean-map") leanmap[$h["domain_pct"]] = $h["index_bytes"] }
  END { for (d = 0; d < 3; d++) {
      dom = d == 0 ? 100 : d == 1 ? 10 : 1
      split("paper/hierarchy paper/auto lean/auto lean-map/auto cuckoo/cuckoo standalone/standalone", want, " ")
      for (j in want) if (rows[dom "/" want[j]] != 1) { print "domain " dom ": " want[j] " rows: " rows[dom "/" want[j]]; bad = 1 }
      if (!(lean[dom] > 0 && lean[dom] < paper[dom])) { print "domain " dom ": lean index not smaller"; bad = 1 }
      if (!(leanmap[dom] > 0 && leanmap[dom] < paper[dom])) { print "domain " dom ": lean-map index not smaller"; bad = 1 } }
    if (NR != 19) { print NR - 1 " rows"; bad = 1 }
    exit bad }' "$work/mem/memory.csv" >memcheck || { cat memcheck >&2; die "memory.csv"; }
no_entry "$work/mem/memory.png"
[ -z "$(ls -A "$work/mem/db" 2>/dev/null)" ] || die "run memory left databases behind"
cp "$work/mem/memory.csv" memory_before # a run at a size it does not measure keeps every row
expect_status 0 "$bfh" run memory --scale small --min-n 300000 --max-n 300000 --no-plot \
  --out "$work/mem" --work "$work/mem/db"
expect_same memory_before "$work/mem/memory.csv"
rm -rf "$work/mem"
check "run ycsb: every engine, source, workload and method, by value, by attribute, by range and newest K, wrong = 0 in every row; A's updates alone, with and without value filters"
# Under the sanitizers (10 minutes at 400 operations a method), 100 operations a method: every
# search of workload C (searches only) is then one of 100.
ycsb_ops=400
[ "${BFH_TEST_SCALE:-}" != sanitizer ] || ycsb_ops=100
ycsb_queries=()
ycsb_table_ops=200
[ "$ycsb_ops" = 400 ] || { ycsb_queries=(--queries "$ycsb_ops"); ycsb_table_ops=$ycsb_ops; }
expect_status 0 "$bfh" run ycsb --scale 2000 "${ycsb_queries[@]}" --no-plot --out "$work/ycsb" \
  --work "$work/ycsb/db"
# 5 sources x 4 workloads (A, B, C, F) by value; the 4 data sets x 4 workloads by attribute;
# the 5 sources' ranges (E) and newest 10 (D: synth's of the value, the data sets' of the
# attribute), whose ranges or newest K and inserts are the method's operations; for every
# method but CUCKOO, which answers whole values only
awk -F, 'BEGIN { split("words word oui vendor unicode name wordnet words", qa, " ")
    for (i = 1; i < 8; i += 2) qattr[qa[i]] = qa[i + 1] }
  NR == 1 { for (i = 1; i <= NF; i++) h[$i] = i
    split("workload dataset query engine method op ops p50_us p95_us p99_us wrong newest_k commit", need, " ")
    for (j in need) if (!(need[j] in h)) { print "no column " need[j]; bad = 1 }
    next }
  { if ($h["wrong"] != 0) { print "wrong: " $0; bad = 1 }
    if ($h["method"] == "-" && $h["op"] == "update" && $h["workload"] == "A") alone[$h["config"]]++
    # the methods that read whole tables run half the operations, unless --queries is given
    want = $h["method"] ~ /^(leaves|hierarchy|sliced)$/ ? table_ops : ops
    if ($h["workload"] == "C" && $h["method"] != "scan" && $h["ops"] != want) { print "ops: " $0; bad = 1 }
    if (($h["workload"] == "E" || $h["workload"] == "D") && $h["method"] != "scan")
      { k = $h["workload"] " " $h["dataset"] " " $h["engine"] " " $h["method"]; wops[k] += $h["ops"]; wwant[k] = want }
    if ($h["op"] == "newest" && ($h["newest_k"] != 10 || $h["query"] != ($h["dataset"] == "synth" ? "value" : qattr[$h["dataset"]]))) {
      print "newest: " $0; bad = 1 }
    if ($h["op"] == "search" || $h["op"] == "range" || $h["op"] == "newest") {
      rows[$h["engine"] " " $h["method"] " " ($h["op"] != "search" ? $h["op"] : $h["query"] == "value" ? "value" : "attr")]++
      if (!($h["p50_us"] > 0 && $h["p50_us"] <= $h["p99_us"])) { print "bad latency: " $0; bad = 1 } } }
  END { for (k in wops) if (wops[k] != wwant[k]) { print k ": " wops[k] " ranges or newest K and inserts"; bad = 1 }
    # the updates of A alone: one row per engine and source of each configuration
    if (alone["bare"] != 15 || alone["bfh"] != 15 || alone["standalone"] != 15 || alone["cuckoo"] != 15) {
      print "rows of the updates of A alone: bare " alone["bare"] ", bfh " alone["bfh"] ", standalone " alone["standalone"] ", cuckoo " alone["cuckoo"]; bad = 1 }
    split("lsm leveldb rocksdb", e, " ")
    split("scan leaves hierarchy sliced auto standalone cuckoo", m, " ")
    for (i in e) for (j in m) {
      if (rows[e[i] " " m[j] " value"] != 20) { print e[i] " " m[j] ": " rows[e[i] " " m[j] " value"] " value search rows"; bad = 1 }
      want = m[j] == "cuckoo" ? 0 : 16
      if (rows[e[i] " " m[j] " attr"] != want) { print e[i] " " m[j] ": " rows[e[i] " " m[j] " attr"] " attribute rows"; bad = 1 }
      want = m[j] == "cuckoo" ? 0 : 5
      if (rows[e[i] " " m[j] " range"] != want) { print e[i] " " m[j] ": " rows[e[i] " " m[j] " range"] " range rows"; bad = 1 }
      if (rows[e[i] " " m[j] " newest"] != want) { print e[i] " " m[j] ": " rows[e[i] " " m[j] " newest"] " newest rows"; bad = 1 } }
    exit bad }' ops="$ycsb_ops" table_ops="$ycsb_table_ops" "$work/ycsb/ycsb.csv" >ycsbcheck || { cat ycsbcheck >&2; die "ycsb.csv"; }
[ -z "$(ls -A "$work/ycsb/db" 2>/dev/null)" ] || die "run ycsb left databases behind"

check "run ycsb --engine and --series: that engine, those sources and methods alone, and their plots; an unknown name: exit 2"
expect_status 0 "$bfh" run ycsb --scale 2000 --queries 20 --engine lsm --series words,auto,bare \
  --out "$work/ycsb1" --work "$work/ycsb1/db"
if command -v gnuplot >/dev/null; then
  for f in ycsb ycsb_cdf; do
    [ -s "$work/ycsb1/$f.png" ] || die "run ycsb of a part did not draw $f"
    no_entry "$work/ycsb1/$f.gnuplot.log"
  done
fi
awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) h[$i] = i; next }
  { if ($h["engine"] != "lsm" || $h["dataset"] != "words" || $h["wrong"] != 0 ||
        !(($h["config"] == "bare" && $h["op"] == "load") || $h["method"] == "auto" ||
          ($h["method"] == "-" && $h["workload"] == "A" && $h["op"] == "update"))) {
      print "row: " $0; bad = 1 }
    n[$h["config"] " " $h["op"] ($h["method"] == "-" ? " alone" : "")]++ }
  END { if (n["bare load"] != 1 || n["bare update alone"] != 1 || n["bfh update alone"] != 1 || n["bfh search"] != 8 || n["bfh range"] != 1 || n["bfh newest"] != 1) {
      print n["bare load"] " load, " n["bare update alone"] " bare update, " n["bfh update alone"] " bfh update alone, " n["bfh search"] " search, " n["bfh range"] " range, " n["bfh newest"] " newest rows"; bad = 1 }
    exit bad }' "$work/ycsb1/ycsb.csv" >ycsbcheck || { cat ycsbcheck >&2; die "ycsb.csv of a part"; }
expect_status 2 "$bfh" run ycsb --series words,nosuch --out "$work/ycsb2"
expect_in err "unknown source or method 'nosuch'"
no_entry "$work/ycsb2"
rm -rf "$work/ycsb1"

check "run shards: 1 to 16 shards, summaries of at most 2 bytes per entry name the one shard a present value is on"
expect_status 0 "$bfh" run shards --scale 5000 --queries 50 --no-plot --out "$work/shards" \
  --work "$work/shards/db"
awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) h[$i] = i; next }
  { n++; if ($h["wrong"] != 0 || $h["summary_bytes_per_entry"] > 2.1) { print "bad row: " $0; bad = 1 }
    if ($h["query"] == "present" && !($h["contacted_mean"] >= 1 && $h["contacted_mean"] <= 1.5)) { print "present: " $0; bad = 1 }
    if ($h["query"] == "absent" && $h["contacted_mean"] > 0.5) { print "absent: " $0; bad = 1 } }
  END { if (n != 10) { print n " rows"; bad = 1 }; exit bad }' "$work/shards/shards.csv" >shardcheck ||
  { cat shardcheck >&2; die "shards.csv"; }

check "run ranges: no range holding a value answered no; the range filter within twice Grafite's bound"
expect_status 0 "$bfh" run ranges --scale 5000 --no-plot --out "$work/ranges"
awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) h[$i] = i; next }
  { n++; if ($h["missed"] != 0) { print "missed: " $0; bad = 1 }
    if ($h["structure"] == "grafite" && $h["fpr"] > 2 * $h["bound"] + 0.01) { print "over the bound: " $0; bad = 1 } }
  END { if (n != 200) { print n " rows"; bad = 1 }; exit bad }' "$work/ranges/ranges.csv" >rangecheck ||
  { cat rangecheck >&2; die "ranges.csv"; }

check "run report: REPORT.md from the CSVs in --out, with the commit, the command line and the rows"
mkdir -p res
printf 'engine,scale,n,domain_pct,domain_mode,placement,query,tables_live,leaf_filters_found,entries_found,commit\n' >res/table3.csv
printf 'lsm,small,1000,2,authors,paper,fixed,9,3,7.5,abc1234\n' >>res/table3.csv
printf 'lsm,small,1000,2,authors,paper,domain,9,2.123456,48.86667,abc1234\n' >>res/table3.csv
expect_status 0 "$bfh" run report --out res --no-plot # a CSV of a few columns: no plot of it
expect_in res/REPORT.md "^- Commit: "
expect_in res/REPORT.md "^- Command: \`bfh run report --out res --no-plot\`"
expect_in res/REPORT.md "^- Scale: small"
expect_in res/REPORT.md "table3.csv was measured at commit abc1234"
expect_in res/REPORT.md "| 2 | authors |  | paper | fixed | 9 | 3 |  | 7.5 |"
expect_in res/REPORT.md "| 2 | authors |  | paper | domain | 9 | 2.123 |  | 48.87 |"
expect_in res/REPORT.md "Not run (no fig8.csv)"
[ ! -e res/REPORT.md.tmp ] || die "REPORT.md.tmp left behind"
rm -rf res

check "run report on the authors' code's kept CSVs: their rows listed, no plot, exit 0"
mkdir -p res
cp "$here/../../measurements/paper/authors-code/"*.csv res/
expect_status 0 "$bfh" run report --out res
expect_in res/REPORT.md "^# The authors' code: their own phases, measured here"
expect_in res/REPORT.md "^## Fig. 8: their three methods for one value"
expect_in res/REPORT.md "| shipped | 10000000 | scan | Value187719 | "
expect_in res/REPORT.md "^## Table III: "
expect_in out "^plot     -- res/fig8.csv: the authors' code's rows"
! ls res/*.png res/*.gnuplot.log 2>/dev/null || die "run report drew the authors' rows"
rm -rf res

check "run report on kept CSVs: every plot and REPORT.md drawn again, a CSV of another run's name included"
kept=$here/../../measurements/paper
mkdir -p res
cp "$kept/leveldb-10M/table1.csv" "$kept/authors-costs/fig9-medium.csv" res/
expect_status 0 "$bfh" run report --out res
expect_in res/REPORT.md "^## Table I: basic operations without value filters"
expect_in res/REPORT.md "Not run (no fig8.csv)"
expect_in res/REPORT.md "^## Also in this directory: fig9-medium.csv"
expect_in res/REPORT.md "Drawn with plots/fig9.gp"
if command -v gnuplot >/dev/null; then
  for f in table1 fig9-medium; do
    [ -s res/$f.png ] && [ -s res/$f.svg ] || die "run report did not draw $f"
    expect_in out "^plot     -> res/$f.png"
    expect_in res/REPORT.md "^!\[$f\]($f.png)"
  done
  ! ls res/*.gnuplot.log 2>/dev/null || die "a gnuplot log left behind (a plot failed)"
  [ "$(ls res/*.png | wc -l)" = 2 ] || die "plots of CSVs that are not there: $(ls res/*.png)"
else
  echo "cli_test: gnuplot not installed: the plots of run report not checked"
fi
rm -rf res

check "the manual and --help list the same long options, and the manual the same version"
bash "$here/man_vs_help.sh" "$bfh" "$man"
version=$("$bfh" --version | cut -d' ' -f2)
grep -q "^\.TH BFH 1 .*\"bfh $version\"" "$man" || die "$man does not say bfh $version"

echo "cli_test: $checks checks passed"

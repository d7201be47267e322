/* Range filters (doc/query.md "Range filters"): each table's value-to-block map keeps, for
 * every attribute declared :range, a range filter of the codes of that attribute's terms in
 * the table (its head in memory, its body with the table), and a search asks it for each
 * written range after the filters and the zones.
 *
 * NKEYS records "w<i>,<N>" put in key order into small tables, N = (p - NKEYS/2) * 4096 for p
 * a fixed permutation of i: every table holds numbers from the whole domain, so the zones
 * rule nothing out, and the filters in memory, which hold the ranges' dyadic items, pass a
 * few tables per range. Empty ranges of 1,024 codes right beside a held number (the hard
 * case for a filter whose guarantee depends on where queries fall) must then read at most 1%
 * of the live tables (Grafite's bound for them at the maps' 20 bits per code is 0.39%), and
 * ranges holding numbers find every one; then keys overwritten and deleted. Every answer is
 * compared key by key with SCAN's, on the own engine read-write, after a reopen, read-only,
 * and on LevelDB and RocksDB read-write (maps in their filter cache files) and read-only (maps
 * built into an index_dir's cache files).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bfh.h"
#include "api/testbed.h"
#include "tests/test_util.h"
#include "tests/api/db_fixture.h"
#include "tests/api/same_as_scan.h"
#include "util/random.h"

#define NKEYS 20000
#define SPACING 4096
#define RNG_SEED 0x72616e676573ull

static int setup(void **state) {
  return db_fixture_setup(state, "range_filters_test");
}

static const bfh_attribute ATTRS[1] = {{"n", "csv:2:int:range"}};

static void options(bfh_options *o) {
  bfh_options_init(o);
  o->memtable_bytes = 64 << 10;
  o->table_bytes = 16 << 10;
  o->attributes = ATTRS;
  o->attribute_count = 1;
}

/* The number record i holds: a fixed permutation of i (NKEYS not a multiple of 7919). */
static long long number_of(unsigned i) {
  return ((long long)((i * 7919ull) % NKEYS) - NKEYS / 2) * SPACING;
}

static void put_record(bfh_db *db, unsigned key, long long n) {
  char k[16], v[64];
  snprintf(k, sizeof k, "k%06u", key);
  int len = snprintf(v, sizeof v, "w%u,%lld", key, n);
  assert_int_equal(bfh_put(db, k, strlen(k), v, (size_t)len), BFH_OK);
}

/* 50 tables on the own engine (db_fixture_table_by_table): a memtable's 64 KiB would hold
   about a twentieth of these records. */
#define TABLE_PUTS (NKEYS / 50)

static void write_spread(db_fixture_t *f, const bfh_options *o) {
  assert_int_equal(bfh_open(f->dir, o, &f->db), BFH_OK);
  for (unsigned i = 0; i < NKEYS; i++) {
    put_record(f->db, i, number_of(i));
    db_fixture_table_by_table(f->db, o->engine, i, TABLE_PUTS);
  }
  /* Key 100 moves 1 code past its old number's neighbour; key 200 is deleted. */
  put_record(f->db, 100, number_of(101) + 1);
  char k[16];
  snprintf(k, sizeof k, "k%06u", 200);
  assert_int_equal(bfh_delete(f->db, k, strlen(k)), BFH_OK);
  assert_int_equal(bfh_flush(f->db), BFH_OK);
}

/* Empty ranges of 1,024 codes right beside a held number, and ranges holding 1 to 20
   numbers, by each filter method against SCAN; the empty ones read at most 1% of the live
   tables in all, and the range filters ruled some out (the filters in memory pass a few).
   Then ranges of 1 to 4 codes, held or empty, without a range filter read. */
static void check(bfh_db *db, const char *label) {
  static const bfh_method methods[] = {BFH_SEARCH_LEAVES, BFH_SEARCH_SLICED, BFH_SEARCH_AUTO};
  rng_t g;
  rng_init(&g, RNG_SEED);
  uint64_t ranged = 0, live = 0, read = 0, pieces = 0;
  for (int q = 0; q < 40; q++) {
    unsigned i = 300 + (unsigned)rng_below(&g, NKEYS - 300);
    long long v = number_of(i);
    char where[160];
    if (q % 2 == 0)
      snprintf(where, sizeof where, "n BETWEEN %lld AND %lld", v + 1, v + 1024);
    else
      snprintf(where, sizeof where, "n BETWEEN %lld AND %lld", v,
               v + (long long)rng_below(&g, 20) * SPACING);
    for (size_t m = 0; m < sizeof methods / sizeof methods[0]; m++) {
      uint64_t want;
      bfh_search_stats st = same_as_scan(db, where, methods[m], NKEYS, &want);
      if (q % 2 == 1) {
        assert_true(want >= 1);
        continue;
      }
      assert_int_equal(want, 0);
      ranged += st.tables_ranged;
      live += st.tables_live;
      read += st.tables_scanned;
      pieces += st.range_pieces_read;
    }
  }
  print_message(
      "%s: empty ranges read %llu of %llu live tables; range filters ruled out %llu "
      "(%llu pieces read)\n",
      label, (unsigned long long)read, (unsigned long long)live, (unsigned long long)ranged,
      (unsigned long long)pieces);
  assert_true(read * 100 <= live);
  assert_true(ranged > 0);
  /* Ranges of 1 to 4 codes, which their items cover exactly: the maps' probes decide, and
     no range filter is read, held or empty. */
  uint64_t exact_read = 0, exact_live = 0;
  for (int q = 0; q < 40; q++) {
    unsigned i = 300 + (unsigned)rng_below(&g, NKEYS - 300);
    long long v = number_of(i) + (q % 2 ? 0 : 1), w = v + (long long)rng_below(&g, 4);
    char where[160];
    snprintf(where, sizeof where, "n BETWEEN %lld AND %lld", v, w);
    for (size_t m = 0; m < sizeof methods / sizeof methods[0]; m++) {
      uint64_t want;
      bfh_search_stats st = same_as_scan(db, where, methods[m], NKEYS, &want);
      assert_int_equal(want, q % 2 ? 1 : 0);
      assert_int_equal(st.range_pieces_read, 0);
      if (q % 2) continue;
      exact_read += st.tables_scanned;
      exact_live += st.tables_live;
    }
  }
  print_message("%s: empty exact ranges read %llu of %llu live tables\n", label,
                (unsigned long long)exact_read, (unsigned long long)exact_live);
  /* The filters in memory pass a table lacking an item about 1 time in 100, and an exact
     range has at most 4: 5% leaves room for the few tables of one LevelDB read-only view. */
  assert_true(exact_read * 20 <= exact_live);
  /* The moved key is found at its new number, beside its neighbour's; the deleted one
     nowhere. */
  uint64_t want;
  char where[160];
  snprintf(where, sizeof where, "n BETWEEN %lld AND %lld", number_of(101) + 1,
           number_of(101) + 1024);
  bfh_search_stats st = same_as_scan(db, where, BFH_SEARCH_SLICED, NKEYS, &want);
  assert_int_equal(want, 1);
  assert_int_equal(st.results, 1);
  snprintf(where, sizeof where, "n = %lld", number_of(200));
  same_as_scan(db, where, BFH_SEARCH_AUTO, NKEYS, &want);
  assert_int_equal(want, 0);
}

static void test_range_filters_own_engine(void **state) {
  db_fixture_t *f = *state;
  bfh_options o;
  options(&o);
  write_spread(f, &o);
  bfh_db_stats ds;
  assert_int_equal(bfh_stats(f->db, &ds), BFH_OK);
  if (ds.tables < 40) fail_msg("%llu tables, want at least 40", (unsigned long long)ds.tables);
  check(f->db, "read-write");
  assert_int_equal(bfh_close(f->db), BFH_OK);
  assert_int_equal(bfh_open(f->dir, &o, &f->db), BFH_OK);
  check(f->db, "reopened");
  assert_int_equal(bfh_close(f->db), BFH_OK);
  o.read_only = 1;
  assert_int_equal(bfh_open(f->dir, &o, &f->db), BFH_OK);
  check(f->db, "read-only");
  assert_int_equal(bfh_close(f->db), BFH_OK);
  f->db = NULL;
}

/* The state check() asks of a stock engine read-write: every live table indexed. The flush
   in write_spread indexes the tables it lists, but the library may still compact after it,
   and a table it installs then gets its filters from the background indexer a second later
   (a search reads it whole until then). A full sync indexes every live table now; again
   until three in a row, 100 ms apart, find the same tables all indexed, at most 100 times. */
static void index_every_table(bfh_db *db) {
  uint64_t last = UINT64_MAX;
  int same = 0;
  for (int i = 0; i < 100; i++) {
    err_t err;
    if (engine_stock_sync(bfh_internal_engine(db), &err) != BFH_OK) fail_msg("sync: %s", err.msg);
    bfh_db_stats ds;
    assert_int_equal(bfh_stats(db, &ds), BFH_OK);
    same = ds.leaf_filters == ds.tables && ds.tables == last ? same + 1 : 0;
    if (same == 2) return;
    last = ds.tables;
    usleep(100000);
  }
  fail_msg("the live tables kept changing for 10 s");
}

/* A stock engine read-write (the flush in write_spread reads every table's filters and maps
   into its filter cache files), then read-only with an index_dir: the maps, range filters
   included, are built from its tables into the index_dir's cache files, and the filters'
   bodies read from there. */
static void stock_engine(db_fixture_t *f, bfh_engine engine, const char *name) {
  bfh_options o;
  options(&o);
  o.engine = engine;
  write_spread(f, &o);
  index_every_table(f->db);
  char label[64];
  snprintf(label, sizeof label, "%s read-write", name);
  check(f->db, label);
  assert_int_equal(bfh_close(f->db), BFH_OK);
  char idx[4400];
  snprintf(idx, sizeof idx, "%s/index", f->root);
  o.read_only = 1;
  o.index_dir = idx;
  assert_int_equal(bfh_open(f->dir, &o, &f->db), BFH_OK);
  err_t err;
  index_sync_t *sync = bfh_internal_sync(f->db);
  if (sync && index_sync_loader_wait(sync, NULL, &err) != BFH_OK) fail_msg("load: %s", err.msg);
  snprintf(label, sizeof label, "%s read-only", name);
  check(f->db, label);
  assert_int_equal(bfh_close(f->db), BFH_OK);
  f->db = NULL;
}

static void test_range_filters_leveldb(void **state) {
  stock_engine(*state, BFH_ENGINE_LEVELDB, "leveldb");
}

static void test_range_filters_rocksdb(void **state) {
  stock_engine(*state, BFH_ENGINE_ROCKSDB, "rocksdb");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_range_filters_own_engine, setup, db_fixture_teardown),
      cmocka_unit_test_setup_teardown(test_range_filters_leveldb, setup, db_fixture_teardown),
      cmocka_unit_test_setup_teardown(test_range_filters_rocksdb, setup, db_fixture_teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

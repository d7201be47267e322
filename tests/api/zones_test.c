/* Zones (doc/query.md "Zones"): each table's value-to-block map keeps, for every attribute
 * declared :range, the least and largest code of the terms of that attribute in the table, and
 * a search rules out a table whose zone meets none of a leaf's codes, after the filters.
 *
 * NKEYS records "name<i>,<10 i>" put in key order in small tables, so that a table holds a
 * short stretch of names and of numbers (values rising with the key). `n` stores range items
 * at level 20 alone: a range inside one block of 2^20 codes is one item, held by nearly every
 * table, so the filters select nearly every table and the zones alone leave the few that hold
 * the range. Then keys overwritten and deleted: a table's zone counts every value of it,
 * stale or not, and validation drops what is no longer the latest. Every answer is compared
 * key by key with SCAN's, on the own engine read-write, after a reopen, read-only, and on
 * LevelDB read-only, whose maps are built into its index_dir's cache files.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bfh.h"
#include "api/testbed.h"
#include "tests/test_util.h"
#include "tests/api/db_fixture.h"
#include "tests/api/same_as_scan.h"
#include "util/random.h"

#define NKEYS 20000
#define RNG_SEED 0x7a6f6e6573ull

static int setup(void **state) {
  return db_fixture_setup(state, "zones_test");
}

static const bfh_attribute ATTRS[2] = {{"name", "csv:1:range"}, {"n", "csv:2:int:range=20"}};

static void options(bfh_options *o) {
  bfh_options_init(o);
  o->memtable_bytes = 64 << 10;
  o->table_bytes = 8 << 10;
  o->attributes = ATTRS;
  o->attribute_count = 2;
}

static void put_record(bfh_db *db, unsigned key, const char *name, long long n) {
  char k[16], v[64];
  snprintf(k, sizeof k, "k%06u", key);
  int len = snprintf(v, sizeof v, "%s,%lld", name, n);
  assert_int_equal(bfh_put(db, k, strlen(k), v, (size_t)len), BFH_OK);
}

/* 50 tables on the own engine (db_fixture_table_by_table): a memtable's 64 KiB would hold
   about a twentieth of these records. */
#define TABLE_PUTS (NKEYS / 50)

static void write_rising(db_fixture_t *f, const bfh_options *o) {
  assert_int_equal(bfh_open(f->dir, o, &f->db), BFH_OK);
  for (unsigned i = 0; i < NKEYS; i++) {
    char name[16];
    snprintf(name, sizeof name, "name%06u", i);
    put_record(f->db, i, name, 10LL * i);
    db_fixture_table_by_table(f->db, o->engine, i, TABLE_PUTS);
  }
  /* Overwrites far from their stretch, and deletes: key 100 moves to the top of the numbers
     and to the end of the names, key 200 is deleted. */
  put_record(f->db, 100, "zz-moved", 10LL * NKEYS + 5);
  char k[16];
  snprintf(k, sizeof k, "k%06u", 200);
  assert_int_equal(bfh_delete(f->db, k, strlen(k)), BFH_OK);
  assert_int_equal(bfh_flush(f->db), BFH_OK);
}

/* Ranges and prefixes by each filter method against SCAN; a range of at most 1% of the keys
   (up to 200 of 20,000) reads at most 5% of the live tables, or the two it may straddle, and the
   zones rule out most of those the filters select (with zones, want them to have ruled out some:
   every range here is one level-20 item, which nearly every table holds). */
static void check(bfh_db *db, const char *label, int zones) {
  static const bfh_method methods[] = {BFH_SEARCH_LEAVES, BFH_SEARCH_SLICED, BFH_SEARCH_AUTO};
  rng_t g;
  rng_init(&g, RNG_SEED);
  uint64_t zoned = 0, live = 0, read = 0, nq = 0;
  for (int q = 0; q < 20; q++) {
    unsigned a = (unsigned)rng_below(&g, NKEYS - 200);
    unsigned len = 1 + (unsigned)rng_below(&g, NKEYS / 100);
    char where[160];
    if (q % 4 == 3)
      snprintf(where, sizeof where, "name LIKE 'name%04u%%'", a / 100);
    else
      snprintf(where, sizeof where, "n BETWEEN %u AND %u", 10 * a + 3, 10 * (a + len));
    for (size_t m = 0; m < sizeof methods / sizeof methods[0]; m++) {
      uint64_t want;
      bfh_search_stats st = same_as_scan(db, where, methods[m], NKEYS, &want);
      zoned += st.tables_zoned;
      live += st.tables_live;
      read += st.tables_scanned;
      nq++;
      /* A prefix is resolved by the filters and zones to its first 7 bytes (doc/query.md
         "Ranges"): 10 times the names it matches. */
      if (q % 4 != 3 && st.tables_scanned > 2 && st.tables_scanned * 20 > st.tables_live)
        fail_msg("%s: '%s' by %s read %llu of %u tables (%llu ruled out by zones)", label, where,
                 bfh_method_name(methods[m]), (unsigned long long)st.tables_scanned, st.tables_live,
                 (unsigned long long)st.tables_zoned);
    }
  }
  print_message("%s: %llu searches read %llu of %llu live tables; zones ruled out %llu\n", label,
                (unsigned long long)nq, (unsigned long long)read, (unsigned long long)live,
                (unsigned long long)zoned);
  if (zones) assert_true(zoned > 0);
  /* The moved key is found at its new number and name, not its old ones; the deleted one
     nowhere. */
  uint64_t want;
  bfh_search_stats st = same_as_scan(db, "n >= 200000", BFH_SEARCH_AUTO, NKEYS, &want);
  assert_int_equal(want, 1);
  assert_int_equal(st.results, 1);
  same_as_scan(db, "n = 1000", BFH_SEARCH_AUTO, NKEYS, &want);
  assert_int_equal(want, 0);
  same_as_scan(db, "name LIKE 'zz%'", BFH_SEARCH_AUTO, NKEYS, &want);
  assert_int_equal(want, 1);
  same_as_scan(db, "n BETWEEN 1990 AND 2010", BFH_SEARCH_SLICED, NKEYS, &want);
  assert_int_equal(want, 2); /* 1990 and 2010; 2000 (key 200) was deleted */
}

static void test_zones_own_engine(void **state) {
  db_fixture_t *f = *state;
  bfh_options o;
  options(&o);
  write_rising(f, &o);
  bfh_db_stats ds;
  assert_int_equal(bfh_stats(f->db, &ds), BFH_OK);
  if (ds.tables < 40) fail_msg("%llu tables, want at least 40", (unsigned long long)ds.tables);
  check(f->db, "read-write", 1);
  assert_int_equal(bfh_close(f->db), BFH_OK);
  assert_int_equal(bfh_open(f->dir, &o, &f->db), BFH_OK);
  check(f->db, "reopened", 1);
  assert_int_equal(bfh_close(f->db), BFH_OK);
  o.read_only = 1;
  assert_int_equal(bfh_open(f->dir, &o, &f->db), BFH_OK);
  check(f->db, "read-only", 1);
  assert_int_equal(bfh_close(f->db), BFH_OK);
  f->db = NULL;
}

/* LevelDB read-only with an index_dir: the maps, zones included, are built from its tables
   into the cache files. */
static void test_zones_leveldb_read_only(void **state) {
  db_fixture_t *f = *state;
  bfh_options o;
  options(&o);
  o.engine = BFH_ENGINE_LEVELDB;
  write_rising(f, &o);
  assert_int_equal(bfh_close(f->db), BFH_OK);
  char idx[4400];
  snprintf(idx, sizeof idx, "%s/index", f->root);
  o.read_only = 1;
  o.index_dir = idx;
  assert_int_equal(bfh_open(f->dir, &o, &f->db), BFH_OK);
  err_t err;
  index_sync_t *sync = bfh_internal_sync(f->db);
  if (sync && index_sync_loader_wait(sync, NULL, &err) != BFH_OK) fail_msg("load: %s", err.msg);
  check(f->db, "leveldb read-only", 1);
  assert_int_equal(bfh_close(f->db), BFH_OK);
  f->db = NULL;
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_zones_own_engine, setup, db_fixture_teardown),
      cmocka_unit_test_setup_teardown(test_zones_leveldb_read_only, setup, db_fixture_teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

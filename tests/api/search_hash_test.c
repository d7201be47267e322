/* One hash per search (search/search_plan.h): for every search method and every engine row
 * (own engine with and without value filters, with the stand-alone index, without the
 * memtables' value index; LevelDB; LevelDB read-only), a bfh_search hashes its value exactly
 * once (bfh_value_hash_count, this thread's count of value hashes), whatever the value: in a
 * table, in the memtable only, absent, or long enough for the stand-alone index to store its
 * hash. The planner's hash reaches every filter: leaves, hierarchy, bit-sliced index, block
 * filters, the memtables' value index (own engine) and the log segments' (LevelDB), the
 * stand-alone index. A search is first run once untimed and uncounted, so that what it
 * builds on the way (the LevelDB engines read new logs and tables at a search, hashing their
 * values) is done; the counted run finds the database unchanged.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "bfh.h"
#include "filters/hash.h" /* bfh_value_hash_count: the test hook */
#include "tests/test_util.h"
#include "tests/api/db_fixture.h"

static int setup(void **state) {
  return db_fixture_setup(state, "search_hash_test");
}

#define NKEYS 3000
#define LONG_LEN ((1u << 19) + 10) /* past the stand-alone index's inline values */

typedef struct row {
  const char *name;
  bfh_engine engine;
  int value_filters, memtable_index, standalone, read_only;
} row_t;

static const row_t ROWS[] = {
    {"lsm", BFH_ENGINE_LSM, 1, 1, 0, 0},
    {"lsm standalone", BFH_ENGINE_LSM, 1, 1, 1, 0},
    {"lsm no memtable index", BFH_ENGINE_LSM, 1, 0, 0, 0},
    {"lsm no value filters", BFH_ENGINE_LSM, 0, 1, 0, 0},
    {"leveldb", BFH_ENGINE_LEVELDB, 1, 1, 0, 0},
    {"leveldb read-only", BFH_ENGINE_LEVELDB, 1, 1, 0, 1},
};

static void options(bfh_options *o, const row_t *r) {
  bfh_options_init(o);
  o->engine = r->engine;
  o->memtable_bytes = 64 << 10;
  o->table_bytes = 16 << 10;
  o->value_filter_bits = 8192;
  o->value_filters = r->value_filters;
  o->memtable_index = r->memtable_index;
  o->standalone_index = r->standalone;
  o->cuckoo_index = 1; /* CUCKOO too (its index reads the tables' values at a first search) */
}

static bfh_db *open_or_fail(const char *dir, const bfh_options *o) {
  bfh_db *db = NULL;
  int rc = bfh_open(dir, o, &db);
  if (rc != BFH_OK) fail_msg("bfh_open %s: %d %s", dir, rc, bfh_last_error(NULL));
  return db;
}

static void put_or_fail(bfh_db *db, const char *key, const void *val, size_t len) {
  int rc = bfh_put(db, key, strlen(key), val, len);
  if (rc != BFH_OK) fail_msg("bfh_put %s: %d %s", key, rc, bfh_last_error(db));
}

/* Tables of values v0000..v0499, a long value, then memtable entries of m000..m049. */
static void fill(bfh_db *db, char *longval) {
  char key[32], val[32];
  for (int i = 0; i < NKEYS; i++) {
    snprintf(key, sizeof key, "k%05d", i);
    snprintf(val, sizeof val, "v%04d", i % 500);
    put_or_fail(db, key, val, strlen(val));
  }
  put_or_fail(db, "long", longval, LONG_LEN);
  assert_int_equal(bfh_flush(db), BFH_OK);
  for (int i = 0; i < 100; i++) {
    snprintf(key, sizeof key, "m%05d", i);
    snprintf(val, sizeof val, "m%03d", i % 50);
    put_or_fail(db, key, val, strlen(val));
  }
}

/* Searches val by method twice and checks that the second search hashed it once. */
static void expect_one_hash(bfh_db *db, const row_t *r, bfh_method m, const void *val, size_t len,
                            uint64_t want_results) {
  bfh_search_stats st;
  int rc = bfh_search(db, val, len, m, NULL, NULL, &st);
  if (rc != BFH_OK) fail_msg("%s %s: %d %s", r->name, bfh_method_name(m), rc, bfh_last_error(db));
  uint64_t before = bfh_value_hash_count();
  rc = bfh_search(db, val, len, m, NULL, NULL, &st);
  uint64_t hashes = bfh_value_hash_count() - before;
  assert_int_equal(rc, BFH_OK);
  if (hashes != 1)
    fail_msg("%s, method %s (ran %s), value of %zu bytes: %llu value hashes, want 1", r->name,
             bfh_method_name(m), bfh_method_name((bfh_method)st.method_used), len,
             (unsigned long long)hashes);
  if (st.results != want_results)
    fail_msg("%s, method %s: %llu results, want %llu", r->name, bfh_method_name(m),
             (unsigned long long)st.results, (unsigned long long)want_results);
}

static void check_row(db_fixture_t *f, const row_t *r) {
  char dir[4300], idx[4300];
  snprintf(dir, sizeof dir, "%s/row%d", f->dir, (int)(r - ROWS));
  snprintf(idx, sizeof idx, "%s/idx%d", f->root, (int)(r - ROWS));
  assert_int_equal(test_mkdirs(f->dir), 0);
  char *longval = malloc(LONG_LEN);
  assert_non_null(longval);
  memset(longval, 'L', LONG_LEN);
  bfh_options o;
  options(&o, r);
  if (r->read_only) {
    /* Built read-write, then searched read-only (its memtable is in the logs). */
    bfh_options w = o;
    w.read_only = 0;
    f->db = open_or_fail(dir, &w);
    fill(f->db, longval);
    assert_int_equal(bfh_close(f->db), BFH_OK);
    o.read_only = 1;
    o.index_dir = idx;
    f->db = open_or_fail(dir, &o);
  } else {
    f->db = open_or_fail(dir, &o);
    fill(f->db, longval);
  }
  for (int m = 0; bfh_method_name((bfh_method)m); m++) {
    if (m == BFH_SEARCH_STANDALONE && !r->standalone) continue;
    expect_one_hash(f->db, r, (bfh_method)m, "v0042", 5, NKEYS / 500); /* in tables */
    expect_one_hash(f->db, r, (bfh_method)m, "m007", 4, 2);            /* in the memtable */
    expect_one_hash(f->db, r, (bfh_method)m, "absent", 6, 0);
    expect_one_hash(f->db, r, (bfh_method)m, longval, LONG_LEN, 1);
  }
  assert_int_equal(bfh_close(f->db), BFH_OK);
  f->db = NULL;
  free(longval);
}

static void test_search_hash_once_per_search(void **state) {
  db_fixture_t *f = *state;
  for (size_t i = 0; i < sizeof ROWS / sizeof ROWS[0]; i++) check_row(f, &ROWS[i]);
}

/* The hook counts: a value hashed is counted, a key hashed is not. */
static void test_search_hash_counter_counts(void **state) {
  (void)state;
  uint64_t before = bfh_value_hash_count();
  (void)bfh_value_hash("x", 1, 1);
  (void)bfh_hash64("x", 1, 1);
  assert_int_equal(bfh_value_hash_count() - before, 1);
}

/* An unknown method is refused before anything is hashed; the name table ends there. */
static void test_search_hash_unknown_method(void **state) {
  db_fixture_t *f = *state;
  bfh_options o;
  options(&o, &ROWS[0]);
  f->db = open_or_fail(f->dir, &o);
  int past = 0;
  while (bfh_method_name((bfh_method)past)) past++;
  assert_int_equal(past, BFH_SEARCH_CUCKOO + 1);
  assert_null(bfh_method_name((bfh_method)-1));
  uint64_t before = bfh_value_hash_count();
  assert_int_equal(bfh_search(f->db, "v", 1, (bfh_method)past, NULL, NULL, NULL), BFH_E_INVALID);
  assert_non_null(strstr(bfh_last_error(f->db), "standalone"));
  assert_int_equal(bfh_value_hash_count() - before, 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_search_hash_counter_counts),
      cmocka_unit_test_setup_teardown(test_search_hash_unknown_method, setup, db_fixture_teardown),
      cmocka_unit_test_setup_teardown(test_search_hash_once_per_search, setup, db_fixture_teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

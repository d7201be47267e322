/* The read-only RocksDB engine reading a named column family (bfh_options.column_family):
 * a stock RocksDB program writes the same keys with different values into "default" and
 * "blue" (each partly flushed, partly in the shared WAL, with a range deletion in "blue"); a
 * read-only handle on each family finds only that family's values, by every method and by
 * bfh_get; an unknown name is BFH_E_INVALID naming the families there are.
 * Without the column family wiring (the engine reading column family 0 whatever the name),
 * the "blue" handle answers with default's values and the test fails.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <rocksdb/c.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bfh.h"
#include "tests/test_util.h"

#define NKEYS 200

static char g_dir[512], g_db[600];

static int setup(void **state) {
  (void)state;
  if (test_tmpdir_create(g_dir, sizeof g_dir, "rocksdb_readonly_cf_test")) return -1;
  snprintf(g_db, sizeof g_db, "%s/db", g_dir);
  return 0;
}

static int teardown(void **state) {
  (void)state;
  return test_rmrf(g_dir);
}

static int count_cb(void *arg, const void *key, size_t kl) {
  (void)key, (void)kl;
  ++*(size_t *)arg;
  return 0;
}

static int open_ro(const char *cf, bfh_db **db) {
  bfh_options opt;
  bfh_options_init(&opt);
  opt.engine = BFH_ENGINE_ROCKSDB;
  opt.read_only = 1;
  opt.column_family = cf;
  *db = NULL;
  return bfh_open(g_db, &opt, db);
}

static void expect_count(bfh_db *db, const char *v, size_t want, const char *cf) {
  for (int m = BFH_SEARCH_SCAN; m <= BFH_SEARCH_AUTO; m++) {
    size_t c = 0;
    int rc = bfh_search(db, v, strlen(v), (bfh_method)m, count_cb, &c, NULL);
    if (rc != BFH_OK) fail_msg("%s: search %s method %d: %d %s", cf, v, m, rc, bfh_last_error(db));
    if (c != want) fail_msg("%s: search %s method %d: %zu keys, wanted %zu", cf, v, m, c, want);
  }
}

static void test_rocksdb_readonly_column_family(void **state) {
  (void)state;
  rocksdb_options_t *o = rocksdb_options_create();
  rocksdb_options_set_create_if_missing(o, 1);
  rocksdb_options_set_create_missing_column_families(o, 1);
  const char *names[2] = {"default", "blue"};
  const rocksdb_options_t *opts[2] = {o, o};
  rocksdb_column_family_handle_t *h[2];
  char *msg = NULL;
  rocksdb_t *rdb = rocksdb_open_column_families(o, g_db, 2, names, opts, h, &msg);
  if (msg) fail_msg("open: %s", msg);
  rocksdb_writeoptions_t *wo = rocksdb_writeoptions_create();
  rocksdb_flushoptions_t *fo = rocksdb_flushoptions_create();
  for (int half = 0; half < 2; half++) { /* the first half flushed, the second in the WAL */
    for (int i = half * NKEYS / 2; i < (half + 1) * NKEYS / 2; i++) {
      char k[16];
      int kl = sprintf(k, "k%04d", i);
      rocksdb_put_cf(rdb, wo, h[0], k, (size_t)kl, "red", 3, &msg);
      rocksdb_put_cf(rdb, wo, h[1], k, (size_t)kl, i % 2 ? "navy" : "teal", 4, &msg);
      if (msg) fail_msg("put: %s", msg);
    }
    if (half == 0) {
      rocksdb_flush_cf(rdb, fo, h[0], &msg);
      rocksdb_flush_cf(rdb, fo, h[1], &msg);
      if (msg) fail_msg("flush: %s", msg);
    }
  }
  rocksdb_delete_range_cf(rdb, wo, h[1], "k0000", 5, "k0010", 5, &msg); /* 5 navy, 5 teal */
  if (msg) fail_msg("delete_range: %s", msg);

  bfh_db *db;
  assert_int_equal(open_ro("blue", &db), BFH_OK);
  expect_count(db, "navy", NKEYS / 2 - 5, "blue");
  expect_count(db, "teal", NKEYS / 2 - 5, "blue");
  expect_count(db, "red", 0, "blue");
  void *v = NULL;
  size_t vl = 0;
  assert_int_equal(bfh_get(db, "k0011", 5, &v, &vl), BFH_OK);
  assert_true(vl == 4 && memcmp(v, "navy", 4) == 0);
  bfh_free(v);
  assert_int_equal(bfh_get(db, "k0003", 5, &v, &vl), BFH_NOT_FOUND);
  assert_int_equal(bfh_close(db), BFH_OK);

  assert_int_equal(open_ro(NULL, &db), BFH_OK); /* the default family */
  expect_count(db, "red", NKEYS, "default");
  expect_count(db, "navy", 0, "default");
  assert_int_equal(bfh_close(db), BFH_OK);

  assert_int_equal(open_ro("green", &db), BFH_E_INVALID);
  assert_non_null(strstr(bfh_last_error(NULL), "green"));
  assert_non_null(strstr(bfh_last_error(NULL), "'blue'"));

  rocksdb_flushoptions_destroy(fo);
  rocksdb_writeoptions_destroy(wo);
  for (int i = 0; i < 2; i++) rocksdb_column_family_handle_destroy(h[i]);
  rocksdb_close(rdb);
  rocksdb_options_destroy(o);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_rocksdb_readonly_column_family, setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

/* bfh_options.compression:
 *   - the LevelDB and RocksDB engines write their tables uncompressed with
 *     BFH_COMPRESSION_NONE and with snappy by default: the same 3,000 compressible entries
 *     (500-byte values of one repeated pattern) take at least 4 times the table bytes
 *     uncompressed (snappy keeps such a value in some 30 bytes), and snappy
 *     (BFH_COMPRESSION_SNAPPY) gives what the default gives;
 *   - every value is found again by the read-write handle's search and get, and by a
 *     read-only handle's search, through bfh's own table readers, in both forms;
 *   - the own engine refuses snappy, and an unknown compression is refused, both with
 *     BFH_E_INVALID and a message that names the option, and create no database.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "bfh.h"
#include "tests/test_util.h"

#define NKEYS 3000
#define VALUE_BYTES 500

static char tmpdir[TEST_PATH_MAX];

static size_t value_of(int i, char *v) {
  int n = snprintf(v, VALUE_BYTES + 1, "v%05d-", i);
  for (int j = n; j < VALUE_BYTES; j++) v[j] = "abcd"[j % 4];
  v[VALUE_BYTES] = '\0';
  return VALUE_BYTES;
}

static int count_match(void *arg, const void *key, size_t len) {
  (void)key, (void)len;
  ++*(int *)arg;
  return 0;
}

/* Values 0, 97, 194, ... each found once by a search of h. */
static void expect_found(bfh_db *h, const char *what) {
  char v[VALUE_BYTES + 1];
  for (int i = 0; i < NKEYS; i += 97) {
    int found = 0;
    size_t vl = value_of(i, v);
    assert_int_equal(bfh_search(h, v, vl, BFH_SEARCH_AUTO, count_match, &found, NULL), BFH_OK);
    if (found != 1) fail_msg("%s: value %d found %d times", what, i, found);
  }
}

/* A database of engine in tmpdir/name written with compression c; its table bytes. */
static uint64_t write_db(bfh_engine engine, const char *name, int c) {
  char db[2 * TEST_PATH_MAX];
  snprintf(db, sizeof db, "%s/%s", tmpdir, name);
  bfh_options o;
  bfh_options_init(&o);
  o.engine = engine;
  o.compression = c;
  o.value_filter_bits = 1 << 15;
  bfh_db *h;
  if (bfh_open(db, &o, &h) != BFH_OK) fail_msg("open %s: %s", db, bfh_last_error(NULL));
  char k[32], v[VALUE_BYTES + 1];
  for (int i = 0; i < NKEYS; i++) {
    int kl = snprintf(k, sizeof k, "key%05d", i);
    size_t vl = value_of(i, v);
    assert_int_equal(bfh_put(h, k, (size_t)kl, v, vl), BFH_OK);
  }
  assert_int_equal(bfh_flush(h), BFH_OK);
  expect_found(h, name);
  void *got = NULL;
  size_t got_len = 0;
  assert_int_equal(bfh_get(h, "key01234", 8, &got, &got_len), BFH_OK);
  value_of(1234, v);
  assert_int_equal(got_len, VALUE_BYTES);
  assert_memory_equal(got, v, VALUE_BYTES);
  bfh_free(got);
  bfh_db_stats st;
  assert_int_equal(bfh_stats(h, &st), BFH_OK);
  assert_int_equal(bfh_close(h), BFH_OK);

  bfh_options_init(&o); /* and read-only, through bfh's own readers */
  o.engine = engine;
  o.read_only = 1;
  assert_int_equal(bfh_open(db, &o, &h), BFH_OK);
  expect_found(h, name);
  assert_int_equal(bfh_close(h), BFH_OK);
  return st.table_bytes;
}

static void check_engine(bfh_engine engine, const char *name) {
  char n[64];
  snprintf(n, sizeof n, "%s-none", name);
  uint64_t none = write_db(engine, n, BFH_COMPRESSION_NONE);
  snprintf(n, sizeof n, "%s-default", name);
  uint64_t dflt = write_db(engine, n, BFH_COMPRESSION_DEFAULT);
  snprintf(n, sizeof n, "%s-snappy", name);
  uint64_t snappy = write_db(engine, n, BFH_COMPRESSION_SNAPPY);
  print_message("%s: table bytes none %llu, default %llu, snappy %llu\n", name,
                (unsigned long long)none, (unsigned long long)dflt, (unsigned long long)snappy);
  assert_true(none >= (uint64_t)NKEYS * VALUE_BYTES);
  assert_true(none >= 4 * dflt);
  assert_true(snappy == dflt);
}

static void test_compression_leveldb(void **state) {
  (void)state;
  check_engine(BFH_ENGINE_LEVELDB, "leveldb");
}

static void test_compression_rocksdb(void **state) {
  (void)state;
  check_engine(BFH_ENGINE_ROCKSDB, "rocksdb");
}

static void expect_invalid(bfh_engine engine, int c, const char *words) {
  char db[2 * TEST_PATH_MAX];
  snprintf(db, sizeof db, "%s/refused", tmpdir);
  bfh_options o;
  bfh_options_init(&o);
  o.engine = engine;
  o.compression = c;
  bfh_db *h = NULL;
  assert_int_equal(bfh_open(db, &o, &h), BFH_E_INVALID);
  const char *msg = bfh_last_error(NULL);
  if (!strstr(msg, words)) fail_msg("message '%s' does not say '%s'", msg, words);
  struct stat sb;
  assert_int_not_equal(stat(db, &sb), 0); /* nothing created */
}

static void test_compression_refused(void **state) {
  (void)state;
  expect_invalid(BFH_ENGINE_LSM, BFH_COMPRESSION_SNAPPY, "compression snappy");
  expect_invalid(BFH_ENGINE_LEVELDB, 7, "compression = 7");
}

static int setup(void **state) {
  (void)state;
  return test_tmpdir_create(tmpdir, sizeof tmpdir, "compression_test");
}

static int teardown(void **state) {
  (void)state;
  return test_rmrf(tmpdir);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_compression_leveldb),
      cmocka_unit_test(test_compression_rocksdb),
      cmocka_unit_test(test_compression_refused),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}

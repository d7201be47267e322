/* The newest K's early stop (search/search.c "The newest K"): the own engine records each
 * table's largest sequence number in its manifest, and a search for the newest K reads the
 * tables by decreasing largest sequence and stops once its K keys are newer than every table
 * left, so that when the matches are recent it reads fewer tables than the full answer, and
 * reports the same K keys the full answer's order would put first.
 *
 * NKEYS keys, every one holding a = 'x', written in key order in batches of PER_TABLE and
 * flushed after each batch into small tables: the newest keys are the last written, in the
 * newest tables (a compaction merges tables of neighbouring keys, written one after the
 * other, so each table still holds a short stretch of writes). Checked read-write, after a
 * reopen (the bounds come back from the manifest) and read-only; on LevelDB read-write and
 * read-only and on RocksDB read-write; and, with the newest writes still in the memtables,
 * that no table is read at all.
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
#include "tests/test_util.h"
#include "tests/api/db_fixture.h"

#define NKEYS 3000
#define PER_TABLE 100
#define K 10

static int setup(void **state) {
  return db_fixture_setup(state, "newest_test");
}

static const bfh_attribute ATTRS[1] = {{"a", "json:a"}};

static void options(bfh_options *o) {
  bfh_options_init(o);
  o->memtable_bytes = 64 << 10;
  o->table_bytes = 4 << 10;
  o->value_filter_bits = 8192;
  o->attributes = ATTRS;
  o->attribute_count = 1;
}

typedef struct keys {
  unsigned v[NKEYS];
  unsigned n;
} keys_t;

static int on_key(void *arg, const void *key, size_t len) {
  keys_t *k = arg;
  char buf[32];
  unsigned i;
  assert_true(len < sizeof buf);
  memcpy(buf, key, len);
  buf[len] = '\0';
  assert_int_equal(sscanf(buf, "key%05u", &i), 1);
  assert_true(k->n < NKEYS);
  k->v[k->n++] = i;
  return 0;
}

/* The newest K by method: the last K keys written, newest first, read from fewer tables than
   the full answer (which reads them all: every table holds matches). */
static void check_early_stop(bfh_db *db, bfh_method method, const char *label) {
  keys_t *got = calloc(1, sizeof *got);
  assert_non_null(got);
  bfh_search_stats all, newest;
  assert_int_equal(bfh_query(db, "a = 'x'", method, 0, NULL, NULL, &all), BFH_OK);
  assert_int_equal(all.results, NKEYS);
  assert_int_equal(bfh_query(db, "a = 'x'", method, K, on_key, got, &newest), BFH_OK);
  assert_int_equal(got->n, K);
  for (unsigned i = 0; i < K; i++)
    if (got->v[i] != NKEYS - 1 - i)
      fail_msg("%s: newest %u by %s: key%05u at %u, want key%05u", label, K,
               bfh_method_name(method), got->v[i], i, NKEYS - 1 - i);
  print_message("%s: newest %u by %s read %llu tables, the full answer %llu of %u\n", label, K,
                bfh_method_name(method), (unsigned long long)newest.tables_scanned,
                (unsigned long long)all.tables_scanned, all.tables_live);
  assert_true(all.tables_live >= 10);
  assert_true(newest.tables_scanned >= 1);
  /* The newest ten are in the newest table or two; the bound leaves room for a compaction's
     tables that span more of the last writes. */
  if (newest.tables_scanned * 4 > all.tables_scanned)
    fail_msg("%s: newest %u by %s read %llu tables, the full answer %llu", label, K,
             bfh_method_name(method), (unsigned long long)newest.tables_scanned,
             (unsigned long long)all.tables_scanned);
  free(got);
}

static void check_methods(bfh_db *db, const char *label) {
  static const bfh_method methods[] = {BFH_SEARCH_SCAN, BFH_SEARCH_LEAVES, BFH_SEARCH_SLICED,
                                       BFH_SEARCH_AUTO};
  for (size_t i = 0; i < sizeof methods / sizeof methods[0]; i++)
    check_early_stop(db, methods[i], label);
}

/* Opens f->dir with o and writes the keys, flushing after every PER_TABLE; leaves it open. */
static void write_keys(db_fixture_t *f, const bfh_options *o) {
  assert_int_equal(bfh_open(f->dir, o, &f->db), BFH_OK);
  for (unsigned i = 0; i < NKEYS; i++) {
    char key[32];
    snprintf(key, sizeof key, "key%05u", i);
    const char *val = "{\"a\":\"x\"}";
    assert_int_equal(bfh_put(f->db, key, strlen(key), val, strlen(val)), BFH_OK);
    if ((i + 1) % PER_TABLE == 0) assert_int_equal(bfh_flush(f->db), BFH_OK);
  }
}

static void test_newest_stops_early(void **state) {
  db_fixture_t *f = *state;
  bfh_options o;
  options(&o);
  write_keys(f, &o);
  check_methods(f->db, "read-write");
  assert_int_equal(bfh_close(f->db), BFH_OK);
  assert_int_equal(bfh_open(f->dir, &o, &f->db), BFH_OK);
  check_methods(f->db, "reopened");
  assert_int_equal(bfh_close(f->db), BFH_OK);
  o.read_only = 1;
  assert_int_equal(bfh_open(f->dir, &o, &f->db), BFH_OK);
  check_methods(f->db, "read-only");
  assert_int_equal(bfh_close(f->db), BFH_OK);
  f->db = NULL;
}

/* Between flushes the newest keys are in the memtables, which are read first: K of them newer
   than every table end the search before any table is read. */
static void test_newest_from_memtables(void **state) {
  db_fixture_t *f = *state;
  bfh_options o;
  options(&o);
  write_keys(f, &o);
  for (unsigned i = NKEYS; i < NKEYS + 2 * K; i++) { /* not flushed */
    char key[32];
    snprintf(key, sizeof key, "key%05u", i);
    const char *val = "{\"a\":\"x\"}";
    assert_int_equal(bfh_put(f->db, key, strlen(key), val, strlen(val)), BFH_OK);
  }
  static const bfh_method methods[] = {BFH_SEARCH_SCAN, BFH_SEARCH_LEAVES, BFH_SEARCH_SLICED,
                                       BFH_SEARCH_AUTO};
  for (size_t m = 0; m < sizeof methods / sizeof methods[0]; m++) {
    keys_t *got = calloc(1, sizeof *got);
    assert_non_null(got);
    bfh_search_stats st;
    assert_int_equal(bfh_query(f->db, "a = 'x'", methods[m], K, on_key, got, &st), BFH_OK);
    assert_int_equal(got->n, K);
    for (unsigned i = 0; i < K; i++) assert_int_equal(got->v[i], NKEYS + 2 * K - 1 - i);
    assert_int_equal(st.tables_scanned, 0);
    free(got);
  }
  assert_int_equal(bfh_close(f->db), BFH_OK);
  f->db = NULL;
}

/* The read-only LevelDB engine bounds each table by the MANIFEST edit that added it (a
   flush's last sequence, a compaction's inputs' bounds): the same early stop on a database
   stock LevelDB wrote. */
static void test_newest_stops_early_leveldb_readonly(void **state) {
  db_fixture_t *f = *state;
  bfh_options o;
  options(&o);
  o.engine = BFH_ENGINE_LEVELDB;
  write_keys(f, &o);
  assert_int_equal(bfh_close(f->db), BFH_OK);
  char idx[4400];
  snprintf(idx, sizeof idx, "%s/index", f->root);
  o.read_only = 1;
  o.index_dir = idx;
  assert_int_equal(bfh_open(f->dir, &o, &f->db), BFH_OK);
  check_methods(f->db, "leveldb read-only");
  assert_int_equal(bfh_close(f->db), BFH_OK);
  f->db = NULL;
}

/* The read-write LevelDB engine reads the bounds from the MANIFEST its LevelDB writes. */
static void test_newest_stops_early_leveldb(void **state) {
  db_fixture_t *f = *state;
  bfh_options o;
  options(&o);
  o.engine = BFH_ENGINE_LEVELDB;
  write_keys(f, &o);
  check_methods(f->db, "leveldb");
  assert_int_equal(bfh_close(f->db), BFH_OK);
  f->db = NULL;
}

/* The read-write RocksDB engine takes each table's largest sequence number from RocksDB's
   rocksdb.sstables property: the same early stop. */
static void test_newest_stops_early_rocksdb(void **state) {
  db_fixture_t *f = *state;
  bfh_options o;
  options(&o);
  o.engine = BFH_ENGINE_ROCKSDB;
  write_keys(f, &o);
  check_methods(f->db, "rocksdb");
  assert_int_equal(bfh_close(f->db), BFH_OK);
  f->db = NULL;
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_newest_stops_early, setup, db_fixture_teardown),
      cmocka_unit_test_setup_teardown(test_newest_from_memtables, setup, db_fixture_teardown),
      cmocka_unit_test_setup_teardown(test_newest_stops_early_leveldb_readonly, setup,
                                      db_fixture_teardown),
      cmocka_unit_test_setup_teardown(test_newest_stops_early_leveldb, setup, db_fixture_teardown),
      cmocka_unit_test_setup_teardown(test_newest_stops_early_rocksdb, setup, db_fixture_teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

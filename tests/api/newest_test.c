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
 *
 * Keys written in random order spread a table's newest writes over all its blocks: there the
 * stop goes by the bounds the value-to-block maps keep per value and block, and the newest
 * 10 of a term held by 1% of the keys read at most 16 blocks (test_newest_by_blocks).
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

/* Closes f->db and opens f->dir again read-only, its filters cached in an index_dir under
   f->root (idx: room for its path, which must outlive the handle). */
static void reopen_read_only(db_fixture_t *f, bfh_options *o, char *idx, size_t cap) {
  assert_int_equal(bfh_close(f->db), BFH_OK);
  snprintf(idx, cap, "%s/index", f->root);
  o->read_only = 1;
  o->index_dir = idx;
  assert_int_equal(bfh_open(f->dir, o, &f->db), BFH_OK);
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
  char idx[4400];
  reopen_read_only(f, &o, idx, sizeof idx);
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

/* ---- Random key order: the bounds per block ----------------------------------------------- */

#define RKEYS 40000 /* written in the order i x 7919 mod RKEYS, value "w" (i mod 100) */
#define RFLUSH 10000

static unsigned rkey(unsigned i) {
  return (unsigned)((uint64_t)i * 7919 % RKEYS);
}

static void write_random(db_fixture_t *f, const bfh_options *o) {
  assert_int_equal(bfh_open(f->dir, o, &f->db), BFH_OK);
  for (unsigned i = 0; i < RKEYS; i++) {
    char key[32], val[32];
    snprintf(key, sizeof key, "key%05u", rkey(i));
    snprintf(val, sizeof val, "{\"a\":\"w%02u\"}", i % 100);
    assert_int_equal(bfh_put(f->db, key, strlen(key), val, strlen(val)), BFH_OK);
    if ((i + 1) % RFLUSH == 0) assert_int_equal(bfh_flush(f->db), BFH_OK);
  }
}

/* The newest K of a = 'w42' by every method: the last K keys written with that value, newest
   first; with blocks set, AUTO, which reads by blocks, reads at most 16 blocks where the full
   answer reads every table's (nearly every block of a table holds some key of the term). */
static void check_by_blocks(bfh_db *db, const char *label, int blocks) {
  static const bfh_method methods[] = {BFH_SEARCH_SCAN, BFH_SEARCH_LEAVES, BFH_SEARCH_SLICED,
                                       BFH_SEARCH_AUTO};
  for (size_t m = 0; m < sizeof methods / sizeof methods[0]; m++) {
    keys_t *got = calloc(1, sizeof *got);
    assert_non_null(got);
    bfh_search_stats all, st;
    assert_int_equal(bfh_query(db, "a = 'w42'", methods[m], 0, NULL, NULL, &all), BFH_OK);
    assert_int_equal(all.results, RKEYS / 100);
    assert_int_equal(bfh_query(db, "a = 'w42'", methods[m], K, on_key, got, &st), BFH_OK);
    assert_int_equal(got->n, K);
    for (unsigned i = 0; i < K; i++) {
      unsigned want = rkey(RKEYS - 100 * (i + 1) + 42);
      if (got->v[i] != want)
        fail_msg("%s: newest %u by %s: key%05u at %u, want key%05u", label, K,
                 bfh_method_name(methods[m]), got->v[i], i, want);
    }
    if (blocks && methods[m] == BFH_SEARCH_AUTO) {
      print_message("%s: newest %u by auto read %llu blocks of %llu tables; the full answer "
                    "%llu tables of %u, %llu blocks\n",
                    label, K, (unsigned long long)st.blocks_read,
                    (unsigned long long)st.tables_scanned, (unsigned long long)all.tables_scanned,
                    all.tables_live, (unsigned long long)all.blocks_read);
      if (st.blocks_read < K || st.blocks_read > 16)
        fail_msg("%s: newest %u by auto read %llu blocks (want %u to 16)", label, K,
                 (unsigned long long)st.blocks_read, K);
      /* The full answer reads its tables whole (0 blocks) or more blocks than that. */
      assert_true(all.tables_scanned >= 1);
      assert_true(all.blocks_read == 0 || all.blocks_read > 16);
    }
    free(got);
  }
}

static void test_newest_by_blocks(void **state) {
  db_fixture_t *f = *state;
  bfh_options o;
  options(&o);
  o.memtable_bytes = 4 << 20;
  o.table_bytes = 256 << 10;
  write_random(f, &o);
  check_by_blocks(f->db, "read-write", 1);
  assert_int_equal(bfh_close(f->db), BFH_OK);
  o.read_only = 1;
  assert_int_equal(bfh_open(f->dir, &o, &f->db), BFH_OK);
  check_by_blocks(f->db, "read-only", 1);
  assert_int_equal(bfh_close(f->db), BFH_OK);
  f->db = NULL;
}

/* The same on LevelDB, whose maps are built from its tables into the index_dir's cache files:
   their bounds come from the tables' own sequence numbers. Read-write, LevelDB's compactions
   run on in the background and a new table is read whole until its map is made: only the
   answer is checked there; read-only, once the index is loaded, the blocks too. */
static void test_newest_by_blocks_leveldb(void **state) {
  db_fixture_t *f = *state;
  bfh_options o;
  options(&o);
  o.engine = BFH_ENGINE_LEVELDB;
  o.memtable_bytes = 4 << 20;
  o.table_bytes = 256 << 10;
  write_random(f, &o);
  check_by_blocks(f->db, "leveldb", 0);
  char idx[4400];
  reopen_read_only(f, &o, idx, sizeof idx);
  err_t err;
  index_sync_t *sync = bfh_internal_sync(f->db);
  if (sync && index_sync_loader_wait(sync, NULL, &err) != BFH_OK) fail_msg("load: %s", err.msg);
  check_by_blocks(f->db, "leveldb read-only", 1);
  assert_int_equal(bfh_close(f->db), BFH_OK);
  f->db = NULL;
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_newest_by_blocks, setup, db_fixture_teardown),
      cmocka_unit_test_setup_teardown(test_newest_by_blocks_leveldb, setup, db_fixture_teardown),
      cmocka_unit_test_setup_teardown(test_newest_stops_early, setup, db_fixture_teardown),
      cmocka_unit_test_setup_teardown(test_newest_from_memtables, setup, db_fixture_teardown),
      cmocka_unit_test_setup_teardown(test_newest_stops_early_leveldb_readonly, setup,
                                      db_fixture_teardown),
      cmocka_unit_test_setup_teardown(test_newest_stops_early_leveldb, setup, db_fixture_teardown),
      cmocka_unit_test_setup_teardown(test_newest_stops_early_rocksdb, setup, db_fixture_teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

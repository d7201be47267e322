/* The stand-alone index over stock LevelDB and RocksDB (bfh_options.standalone_index with
 * BFH_ENGINE_LEVELDB or BFH_ENGINE_ROCKSDB), with the real libraries and real files.
 *
 * Neither library tells bfh the writes its open replays, and another program may write the
 * database while bfh has it closed, so the index is trusted at an open only if bfh's last
 * close was clean and left the database's files as they are now (engine_kind_t.at_rest);
 * else it is built again. Each engine, in turn:
 *   - puts, overwrites and deletes through bfh, several tables' worth: STANDALONE answers every
 *     value exactly as the oracle (and so as SCAN);
 *   - a reopen after a clean close keeps the index (nothing built) and answers the same;
 *   - the library itself, opened by this test, writes and deletes while bfh has the database
 *     closed: the next open builds the index again, and STANDALONE sees those writes;
 *   - a close that never happened (the clean marker gone, as after a crash): built again;
 *   - an open without standalone_index is refused; bfh_check reads the index too.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <leveldb/c.h>
#include <rocksdb/c.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bfh.h"
#include "api/testbed.h" /* standalone_get_stats: whether an open built the index */
#include "tests/test_util.h"
#include "tests/api/db_fixture.h" /* after test_util.h */

#define KEYS 3000
#define VALUES 40 /* distinct values: about 75 keys each */
#define FOREIGN_KEY "zz-foreign"

static void options(bfh_options *o, bfh_engine engine, int standalone) {
  bfh_options_init(o);
  o->engine = engine;
  o->value_filter_bits = 8 * 1024;
  o->memtable_bytes = 64 << 10;
  o->table_bytes = 32 << 10;
  o->standalone_index = standalone;
}

/* The oracle: each key's value number, -1 when it has none. */
typedef struct oracle {
  int value[KEYS + 1]; /* [KEYS]: FOREIGN_KEY */
} oracle_t;

static size_t key_of(int i, char *buf) {
  if (i == KEYS) return (size_t)sprintf(buf, "%s", FOREIGN_KEY);
  return (size_t)sprintf(buf, "key%06d", i);
}

static size_t value_of(int v, char *buf) {
  return (size_t)sprintf(buf, "value-%03d-with-some-padding-to-fill-blocks", v);
}

typedef struct found {
  char keys[KEYS + 1][16];
  size_t n;
} found_t;

static int on_match(void *arg, const void *key, size_t len) {
  found_t *f = arg;
  assert_true(f->n <= KEYS && len < sizeof f->keys[0]);
  memcpy(f->keys[f->n], key, len);
  f->keys[f->n++][len] = '\0';
  return 0;
}

/* Every value by STANDALONE (and one by SCAN) gives exactly the oracle's keys. */
static void check_answers(bfh_db *db, const oracle_t *o) {
  for (int v = 0; v < VALUES; v++) {
    char val[64];
    size_t vl = value_of(v, val);
    found_t *f = calloc(1, sizeof *f);
    bfh_search_stats st;
    bfh_method method = v == 0 ? BFH_SEARCH_SCAN : BFH_SEARCH_STANDALONE;
    if (bfh_search(db, val, vl, method, on_match, f, &st) != BFH_OK)
      fail_msg("search %s: %s", val, bfh_last_error(db));
    if (method == BFH_SEARCH_STANDALONE) assert_int_equal(st.method_used, BFH_SEARCH_STANDALONE);
    size_t want = 0;
    for (int i = 0; i <= KEYS; i++) {
      if (o->value[i] != v) continue;
      want++;
      char key[16];
      key_of(i, key);
      size_t j = 0;
      while (j < f->n && strcmp(f->keys[j], key) != 0) j++;
      if (j == f->n) fail_msg("%s: %s holds it and was not found", val, key);
    }
    if (f->n != want) fail_msg("%s: %zu keys found, %zu hold it", val, f->n, want);
    free(f);
  }
}

static uint64_t built_entries(bfh_db *db) {
  standalone_stats_t ss;
  standalone_get_stats(bfh_internal_standalone(db), &ss);
  return ss.built_entries;
}

static bfh_db *open_or_fail(const char *dir, const bfh_options *o) {
  bfh_db *db = NULL;
  if (bfh_open(dir, o, &db) != BFH_OK) fail_msg("bfh_open %s: %s", dir, bfh_last_error(NULL));
  return db;
}

/* The library itself, without bfh: puts FOREIGN_KEY with value v and deletes key del. */
static void foreign_writes(bfh_engine engine, const char *dir, int v, int del) {
  char key[16], val[64];
  size_t kl = key_of(KEYS, key), vl = value_of(v, val);
  char dkey[16];
  size_t dl = key_of(del, dkey);
  char *err = NULL;
  if (engine == BFH_ENGINE_LEVELDB) {
    leveldb_options_t *opt = leveldb_options_create();
    leveldb_t *db = leveldb_open(opt, dir, &err);
    if (err) fail_msg("leveldb_open %s: %s", dir, err);
    leveldb_writeoptions_t *wo = leveldb_writeoptions_create();
    leveldb_put(db, wo, key, kl, val, vl, &err);
    if (!err) leveldb_delete(db, wo, dkey, dl, &err);
    if (err) fail_msg("leveldb write: %s", err);
    leveldb_writeoptions_destroy(wo);
    leveldb_close(db);
    leveldb_options_destroy(opt);
  } else {
    rocksdb_options_t *opt = rocksdb_options_create();
    rocksdb_t *db = rocksdb_open(opt, dir, &err);
    if (err) fail_msg("rocksdb_open %s: %s", dir, err);
    rocksdb_writeoptions_t *wo = rocksdb_writeoptions_create();
    rocksdb_put(db, wo, key, kl, val, vl, &err);
    if (!err) rocksdb_delete(db, wo, dkey, dl, &err);
    if (err) fail_msg("rocksdb write: %s", err);
    rocksdb_writeoptions_destroy(wo);
    rocksdb_close(db);
    rocksdb_options_destroy(opt);
  }
}

static void run_engine(bfh_engine engine) {
  db_fixture_t *f = NULL;
  assert_int_equal(db_fixture_setup((void **)&f, "standalone_stock"), 0);
  bfh_options o;
  options(&o, engine, 1);
  oracle_t *orc = calloc(1, sizeof *orc);
  for (int i = 0; i <= KEYS; i++) orc->value[i] = -1;

  /* Writes through bfh: puts, then overwrites and deletes of every third and fifth key. */
  f->db = open_or_fail(f->dir, &o);
  char key[16], val[64];
  for (int i = 0; i < KEYS; i++) {
    int v = (int)((i * 7u) % VALUES);
    assert_int_equal(bfh_put(f->db, key, key_of(i, key), val, value_of(v, val)), BFH_OK);
    orc->value[i] = v;
  }
  for (int i = 0; i < KEYS; i += 3) {
    int v = (int)((i * 11u + 5) % VALUES);
    assert_int_equal(bfh_put(f->db, key, key_of(i, key), val, value_of(v, val)), BFH_OK);
    orc->value[i] = v;
  }
  for (int i = 0; i < KEYS; i += 5) {
    assert_int_equal(bfh_delete(f->db, key, key_of(i, key)), BFH_OK);
    orc->value[i] = -1;
  }
  check_answers(f->db, orc);
  assert_int_equal(bfh_close(f->db), BFH_OK);

  /* A clean close, nothing written since: the index is kept. */
  f->db = open_or_fail(f->dir, &o);
  assert_int_equal(built_entries(f->db), 0);
  check_answers(f->db, orc);
  assert_int_equal(bfh_close(f->db), BFH_OK);

  /* Another program writes while bfh has the database closed: built again. */
  int del = 1; /* a key that holds a value (1 is neither a multiple of 3 nor of 5) */
  assert_true(orc->value[del] >= 0);
  foreign_writes(engine, f->dir, 9, del);
  orc->value[KEYS] = 9;
  orc->value[del] = -1;
  f->db = open_or_fail(f->dir, &o);
  assert_true(built_entries(f->db) > 0);
  check_answers(f->db, orc);
  assert_int_equal(bfh_close(f->db), BFH_OK);

  /* No clean close on record (a crash): built again. */
  char marker[4400];
  snprintf(marker, sizeof marker, "%s/bfh-standalone/CLOSED-CLEANLY", f->dir);
  assert_int_equal(unlink(marker), 0);
  f->db = open_or_fail(f->dir, &o);
  assert_true(built_entries(f->db) > 0);
  check_answers(f->db, orc);
  assert_int_equal(bfh_close(f->db), BFH_OK);
  f->db = NULL;

  /* A database with the index refuses an open without it; bfh_check reads both stores. */
  bfh_options plain;
  options(&plain, engine, 0);
  bfh_db *db = NULL;
  assert_int_equal(bfh_open(f->dir, &plain, &db), BFH_E_INVALID);
  assert_non_null(strstr(bfh_last_error(NULL), "stand-alone index"));
  bfh_check_report rep;
  if (bfh_check(f->dir, &o, NULL, NULL, &rep) != BFH_OK)
    fail_msg("bfh_check %s: %s", f->dir, bfh_last_error(NULL));
  assert_int_equal(rep.damaged, 0);
  assert_true(rep.files > 0);

  free(orc);
  void *state = f;
  assert_int_equal(db_fixture_teardown(&state), 0);
}

static void test_leveldb(void **state) {
  (void)state;
  run_engine(BFH_ENGINE_LEVELDB);
}

static void test_rocksdb(void **state) {
  (void)state;
  run_engine(BFH_ENGINE_ROCKSDB);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_leveldb),
      cmocka_unit_test(test_rocksdb),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

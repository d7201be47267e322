/* Model test of the lsm engine: random puts, deletes and gets checked against an
 * in-memory map, with a tiny memtable, tables and level budget so that hundreds of flushes
 * and compactions (reaching level 2) happen, periodic close/reopen cycles and
 * full iterator comparisons. Zero mismatches allowed.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "lsm/db.h"
#include "tests/lsm/db_test_util.h"

#define NKEYS 20000
#define MAX_VALUE 120

typedef struct model {
  uint64_t *stamp; /* per key id: 0 = absent, else the value's stamp */
} model_t;

static void small_options(lsm_options_t *o) {
  lsm_options_init(o);
  o->memtable_bytes = 64 << 10;
  o->table_bytes = 32 << 10;
  o->level1_bytes = 128 << 10;
}

static lsm_db_t *open_db(const char *dir, const lsm_options_t *o) {
  lsm_db_t *db = NULL;
  err_t e;
  err_clear(&e);
  int rc = lsm_open(dir, o, &db, &e);
  if (rc != ST_OK) fail_msg("lsm_open: %d %s", rc, e.msg);
  return db;
}

static void check_get(lsm_db_t *db, const model_t *m, uint64_t id) {
  char key[32];
  uint8_t want[MAX_VALUE];
  size_t klen = test_key(key, id);
  void *val = NULL;
  size_t vlen = 0;
  err_t e;
  err_clear(&e);
  int rc = lsm_get(db, key, klen, &val, &vlen, &e);
  if (m->stamp[id] == 0) {
    if (rc != ST_NOT_FOUND) fail_msg("get %s: want NOT_FOUND, got %d %s", key, rc, e.msg);
  } else {
    if (rc != ST_OK) fail_msg("get %s: want a value, got %d %s", key, rc, e.msg);
    size_t n = test_value(want, m->stamp[id], MAX_VALUE);
    if (vlen != n || memcmp(val, want, n) != 0)
      fail_msg("get %s: wrong value (len %zu, want %zu)", key, vlen, n);
  }
  free(val);
}

/* Iterates the whole db and compares with the model; also one seek. */
static void check_iter(lsm_db_t *db, const model_t *m, rng_t *r) {
  lsm_iter_t *it = lsm_iter_create(db);
  assert_non_null(it);
  uint64_t id = 0, seen = 0;
  uint8_t want[MAX_VALUE];
  char key[32];
  for (lsm_iter_seek_first(it); lsm_iter_valid(it); lsm_iter_next(it)) {
    while (id < NKEYS && m->stamp[id] == 0) id++;
    assert_true(id < NKEYS);
    size_t klen, vlen;
    const void *k = lsm_iter_key(it, &klen);
    const void *v = lsm_iter_value(it, &vlen);
    size_t wk = test_key(key, id);
    if (klen != wk || memcmp(k, key, wk) != 0)
      fail_msg("iterator: at entry %llu want key %s", (unsigned long long)seen, key);
    size_t n = test_value(want, m->stamp[id], MAX_VALUE);
    if (vlen != n || memcmp(v, want, n) != 0) fail_msg("iterator: wrong value for %s", key);
    id++;
    seen++;
  }
  err_t e;
  err_clear(&e);
  assert_int_equal(lsm_iter_status(it, &e), ST_OK);
  while (id < NKEYS && m->stamp[id] == 0) id++;
  assert_int_equal(id, NKEYS);
  /* Seek to a random key: the first live key at or after it. */
  uint64_t target = rng_below(r, NKEYS);
  size_t tl = test_key(key, target);
  lsm_iter_seek(it, key, tl);
  uint64_t expect = target;
  while (expect < NKEYS && m->stamp[expect] == 0) expect++;
  if (expect == NKEYS) {
    assert_false(lsm_iter_valid(it));
  } else {
    assert_true(lsm_iter_valid(it));
    size_t klen;
    const void *k = lsm_iter_key(it, &klen);
    size_t wk = test_key(key, expect);
    assert_int_equal(klen, wk);
    assert_memory_equal(k, key, wk);
  }
  lsm_iter_destroy(it);
}

/* The test's directory, database and model, released by the teardown even when the test
   failed with the database open. */
typedef struct fixture {
  char dir[TEST_PATH_MAX];
  lsm_db_t *db;
  model_t m;
} fixture_t;

static int setup(void **state) {
  fixture_t *f = calloc(1, sizeof *f);
  if (!f) return -1;
  f->m.stamp = calloc(NKEYS, sizeof(uint64_t));
  if (!f->m.stamp || test_tmpdir_create(f->dir, sizeof f->dir, "db_model") != 0) {
    free(f->m.stamp);
    free(f);
    return -1;
  }
  *state = f;
  return 0;
}

static int teardown(void **state) {
  fixture_t *f = *state;
  int rc = f->db && lsm_close(f->db) != ST_OK ? -1 : 0;
  if (test_rmrf(f->dir) != 0) rc = -1;
  free(f->m.stamp);
  free(f);
  return rc;
}

static void test_db_model_random_ops(void **state) {
  fixture_t *f = *state;
  model_t m = f->m;
  lsm_options_t o;
  small_options(&o);
  lsm_db_t *db = f->db = open_db(f->dir, &o);
  rng_t r;
  rng_init(&r, 20261122);
  const uint64_t total = (uint64_t)(1000000 * test_scale());
  const uint64_t reopen_every = total / 10, iter_every = total / 4;
  uint64_t stamp = 1, puts = 0, dels = 0, gets = 0, flushes = 0, compactions = 0;
  char key[32];
  uint8_t val[MAX_VALUE];
  for (uint64_t op = 1; op <= total; op++) {
    uint64_t id = rng_below(&r, NKEYS);
    uint64_t kind = rng_below(&r, 100);
    err_t e;
    err_clear(&e);
    if (kind < 45) {
      size_t klen = test_key(key, id);
      size_t vlen = test_value(val, stamp, MAX_VALUE);
      int rc = lsm_put(db, key, klen, val, vlen, &e);
      if (rc != ST_OK) fail_msg("put: %d %s", rc, e.msg);
      m.stamp[id] = stamp++;
      puts++;
    } else if (kind < 60) {
      size_t klen = test_key(key, id);
      int rc = lsm_delete(db, key, klen, &e);
      if (rc != ST_OK) fail_msg("delete: %d %s", rc, e.msg);
      m.stamp[id] = 0;
      dels++;
    } else {
      check_get(db, &m, id);
      gets++;
    }
    if (op % iter_every == 0) check_iter(db, &m, &r);
    if (op % reopen_every == 0) {
      err_t we;
      assert_int_equal(lsm_wait_idle(db, &we), ST_OK); /* every compaction due has run */
      lsm_stats_t st;
      lsm_get_stats(db, &st);
      flushes += st.flushes;
      compactions += st.compactions;
      f->db = NULL;
      assert_int_equal(lsm_close(db), ST_OK);
      db = f->db = open_db(f->dir, &o);
      for (int i = 0; i < 200; i++) check_get(db, &m, rng_below(&r, NKEYS));
    }
  }
  err_t e;
  err_clear(&e);
  assert_int_equal(lsm_wait_idle(db, &e), ST_OK);
  lsm_stats_t st;
  lsm_get_stats(db, &st);
  flushes += st.flushes;
  compactions += st.compactions;
  print_message(
      "ops %llu (puts %llu, deletes %llu, gets %llu): flushes %llu, compactions %llu, "
      "files per level %u %u %u %u %u\n",
      (unsigned long long)total, (unsigned long long)puts, (unsigned long long)dels,
      (unsigned long long)gets, (unsigned long long)flushes, (unsigned long long)compactions,
      st.files_per_level[0], st.files_per_level[1], st.files_per_level[2], st.files_per_level[3],
      st.files_per_level[4]);
  /* The tiny sizes must really have exercised flushes and compactions (the counters are
     per open: summed over the opens), and reached level 2 or deeper. The flushes follow from
     the bytes written. The compactions follow from them whatever the scheduling: every
     flush adds an L0 table; an L0 compaction takes at most 13 of them (writes stop at 12
     L0 tables, plus the one being flushed); and each of the 11 waits for idle (before every
     close, and at the end) leaves at most 3 (the trigger is 4). */
  uint64_t want = total >= 1000000 ? 200 : 20;
  assert_true(flushes >= want);
  assert_true(compactions * 13 + 3 * 11 >= flushes);
  assert_true(st.files_per_level[2] + st.files_per_level[3] + st.files_per_level[4] > 0);
  check_iter(db, &m, &r);
  for (uint64_t id = 0; id < NKEYS; id++) check_get(db, &m, id);
  f->db = NULL;
  assert_int_equal(lsm_close(db), ST_OK);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_db_model_random_ops, setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

/* The promises include/bfh.h makes beyond the status codes, on both engines where they
 * hold for both: a search callback may call back into the same handle (get, put, delete,
 * search, flush) without deadlock, and the search stays exact; fn may be NULL (the results
 * are only counted); bfh_last_error's message lives until the next failure on that handle
 * in that thread, whatever succeeds or fails elsewhere meanwhile; bfh_close of the own
 * engine syncs its log, so that a power loss right after it loses nothing even with
 * sync = 0 (env_drop_unsynced plays the power loss).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <unistd.h>

#include <cmocka.h>

#include "bfh.h"
#include "api/testbed.h" /* bfh_internal_open_io: a power loss after the close */
#include "tests/test_util.h"
#include "tests/api/db_fixture.h"
#include "tests/env_fault.h"

#define KEYS 200
#define DEADLOCK_SECONDS 120 /* a watchdog, not a measurement: a deadlock kills the test */

static int setup(void **state) {
  return db_fixture_setup(state, "contract_test");
}

static bfh_db *open_db(db_fixture_t *f, bfh_engine engine) {
  bfh_options o;
  bfh_options_init(&o);
  o.engine = engine;
  o.memtable_bytes = 64 << 10; /* the smallest: half of the keys in a table, half in it */
  o.value_filter_bits = 1 << 14;
  assert_int_equal(bfh_open(f->dir, &o, &f->db), BFH_OK);
  return f->db;
}

static void key_of(int i, char *buf, size_t cap) {
  snprintf(buf, cap, "key%05d", i);
}

/* KEYS keys with value "V", half of them flushed into tables, half in the memtable. */
static void load(bfh_db *db) {
  char key[16];
  for (int i = 0; i < KEYS; i++) {
    key_of(i, key, sizeof key);
    assert_int_equal(bfh_put(db, key, strlen(key), "V", 1), BFH_OK);
    if (i == KEYS / 2) assert_int_equal(bfh_flush(db), BFH_OK);
  }
}

static int count_match(void *arg, const void *key, size_t key_len) {
  (void)key;
  (void)key_len;
  ++*(int *)arg;
  return 0;
}

/* ---- A callback that calls back into the handle ----------------------------------------- */

typedef struct reentry {
  bfh_db *db;
  int calls;
  uint8_t seen[KEYS];
  int failures; /* calls into the handle that did not answer as they should */
} reentry_t;

/* For each key reported: get it (must be "V"), put a "W" twin, search "W" (a nested
   search), delete the key itself, and once flush. */
static int reenter(void *arg, const void *key, size_t key_len) {
  reentry_t *r = arg;
  char buf[16] = {0}; /* the key is not NUL-terminated */
  memcpy(buf, key, key_len < sizeof buf - 1 ? key_len : sizeof buf - 1);
  int i = atoi(buf + 3);
  if (key_len != 8 || i < 0 || i >= KEYS || r->seen[i]++) r->failures++;
  void *v = NULL;
  size_t vl = 0;
  if (bfh_get(r->db, key, key_len, &v, &vl) != BFH_OK || vl != 1 || memcmp(v, "V", 1) != 0)
    r->failures++;
  bfh_free(v);
  char twin[16];
  snprintf(twin, sizeof twin, "twin%05d", i);
  if (bfh_put(r->db, twin, strlen(twin), "W", 1) != BFH_OK) r->failures++;
  int nested = 0;
  if (bfh_search(r->db, "W", 1, BFH_SEARCH_AUTO, count_match, &nested, NULL) != BFH_OK ||
      nested != r->calls + 1)
    r->failures++;
  if (bfh_delete(r->db, key, key_len) != BFH_OK) r->failures++;
  if (r->calls == KEYS / 3 && bfh_flush(r->db) != BFH_OK) r->failures++;
  r->calls++;
  return 0;
}

static void check_reentry(bfh_engine engine, bfh_method method, void **state) {
  db_fixture_t *f = *state;
  bfh_db *db = open_db(f, engine);
  load(db);
  reentry_t r = {.db = db};
  alarm(DEADLOCK_SECONDS);
  assert_int_equal(bfh_search(db, "V", 1, method, reenter, &r, NULL), BFH_OK);
  alarm(0);
  assert_int_equal(r.failures, 0);
  assert_int_equal(r.calls, KEYS); /* each key exactly once (seen[] counted repeats) */
  int v = 0, w = 0;
  assert_int_equal(bfh_search(db, "V", 1, method, count_match, &v, NULL), BFH_OK);
  assert_int_equal(bfh_search(db, "W", 1, method, count_match, &w, NULL), BFH_OK);
  assert_int_equal(v, 0);
  assert_int_equal(w, KEYS);
}

static void test_callback_reenters_lsm_hierarchy(void **state) {
  check_reentry(BFH_ENGINE_LSM, BFH_SEARCH_HIERARCHY, state);
}
static void test_callback_reenters_lsm_auto(void **state) {
  check_reentry(BFH_ENGINE_LSM, BFH_SEARCH_AUTO, state);
}
static void test_callback_reenters_leveldb_hierarchy(void **state) {
  check_reentry(BFH_ENGINE_LEVELDB, BFH_SEARCH_HIERARCHY, state);
}
static void test_callback_reenters_leveldb_auto(void **state) {
  check_reentry(BFH_ENGINE_LEVELDB, BFH_SEARCH_AUTO, state);
}

/* ---- fn == NULL --------------------------------------------------------------------------- */

static void test_null_callback_counts_results(void **state) {
  db_fixture_t *f = *state;
  bfh_db *db = open_db(f, BFH_ENGINE_LSM);
  load(db);
  for (int m = BFH_SEARCH_SCAN; m <= BFH_SEARCH_AUTO; m++) {
    bfh_search_stats st;
    assert_int_equal(bfh_search(db, "V", 1, (bfh_method)m, NULL, NULL, &st), BFH_OK);
    assert_int_equal(st.results, KEYS);
  }
}

/* ---- bfh_last_error's lifetime ----------------------------------------------------------- */

static void *fail_in_other_thread(void *arg) {
  bfh_put(arg, "", 0, "x", 1); /* an empty key: BFH_E_INVALID, recorded for that thread */
  return NULL;
}

static void test_last_error_lives_until_next_failure_on_handle(void **state) {
  db_fixture_t *f = *state;
  bfh_db *db = open_db(f, BFH_ENGINE_LSM);
  assert_int_equal(bfh_put(db, "", 0, "x", 1), BFH_E_INVALID);
  const char *msg = bfh_last_error(db);
  char copy[512];
  snprintf(copy, sizeof copy, "%s", msg);
  assert_non_null(strstr(copy, "empty key"));

  /* Successes on the handle, failures without a handle and in another thread. */
  assert_int_equal(bfh_put(db, "k", 1, "v", 1), BFH_OK);
  assert_int_equal(bfh_search(db, "v", 1, BFH_SEARCH_AUTO, NULL, NULL, NULL), BFH_OK);
  bfh_db *none;
  assert_int_equal(bfh_open(NULL, NULL, &none), BFH_E_INVALID);
  pthread_t t;
  assert_int_equal(pthread_create(&t, NULL, fail_in_other_thread, db), 0);
  assert_int_equal(pthread_join(t, NULL), 0);
  assert_string_equal(bfh_last_error(db), copy);
  assert_string_equal(msg, copy); /* the same storage, unchanged */

  /* The next failure on the handle in this thread replaces it. */
  assert_int_equal(bfh_get(db, "k", 1, NULL, NULL), BFH_E_INVALID);
  assert_string_not_equal(bfh_last_error(db), copy);
}

/* ---- What bfh_close persists -------------------------------------------------------------- */

static void test_close_syncs_the_log(void **state) {
  db_fixture_t *f = *state;
  env_t *io = env_create_faulty();
  assert_non_null(io);
  bfh_options o;
  bfh_options_init(&o);
  o.sync = 0;
  o.value_filter_bits = 1 << 14;
  assert_int_equal(bfh_internal_open_io(f->dir, &o, io, &f->db), BFH_OK);
  load(f->db); /* half of the keys only in the memtable and its log */
  assert_int_equal(bfh_close(f->db), BFH_OK);
  f->db = NULL;
  err_t e;
  assert_int_equal(env_drop_unsynced(io, &e), BFH_OK); /* power loss */
  env_destroy(io);

  assert_int_equal(bfh_open(f->dir, &o, &f->db), BFH_OK);
  int n = 0;
  assert_int_equal(bfh_search(f->db, "V", 1, BFH_SEARCH_AUTO, count_match, &n, NULL), BFH_OK);
  assert_int_equal(n, KEYS);
}

/* A close that fails (a full disk when it records the clean close in the manifest) says
   which file and what failed, not only "i/o error"; the database opens again whole. */
static void test_close_error_names_the_file(void **state) {
  db_fixture_t *f = *state;
  env_t *io = env_create_faulty();
  assert_non_null(io);
  bfh_options o;
  bfh_options_init(&o);
  o.value_filter_bits = 1 << 14;
  assert_int_equal(bfh_internal_open_io(f->dir, &o, io, &f->db), BFH_OK);
  load(f->db);
  env_fault_t fault = {
      .op = ENV_OP_WRITE, .n = 1, .error = ENV_ERR_ENOSPC, .pattern = "MANIFEST-*"};
  assert_int_equal(env_fail_with(io, &fault), BFH_OK);
  assert_int_equal(bfh_close(f->db), BFH_E_IO);
  f->db = NULL;
  const char *msg = bfh_last_error(NULL);
  print_message("%s\n", msg);
  assert_true(env_faults_injected(io) >= 1);
  assert_non_null(strstr(msg, "bfh_close"));
  assert_non_null(strstr(msg, "MANIFEST-"));
  assert_non_null(strstr(msg, "No space left on device"));
  env_destroy(io);
  assert_int_equal(bfh_open(f->dir, &o, &f->db), BFH_OK);
  int n = 0;
  assert_int_equal(bfh_search(f->db, "V", 1, BFH_SEARCH_AUTO, count_match, &n, NULL), BFH_OK);
  assert_int_equal(n, KEYS);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_callback_reenters_lsm_hierarchy, setup,
                                      db_fixture_teardown),
      cmocka_unit_test_setup_teardown(test_callback_reenters_lsm_auto, setup, db_fixture_teardown),
      cmocka_unit_test_setup_teardown(test_callback_reenters_leveldb_hierarchy, setup,
                                      db_fixture_teardown),
      cmocka_unit_test_setup_teardown(test_callback_reenters_leveldb_auto, setup,
                                      db_fixture_teardown),
      cmocka_unit_test_setup_teardown(test_null_callback_counts_results, setup,
                                      db_fixture_teardown),
      cmocka_unit_test_setup_teardown(test_last_error_lives_until_next_failure_on_handle, setup,
                                      db_fixture_teardown),
      cmocka_unit_test_setup_teardown(test_close_syncs_the_log, setup, db_fixture_teardown),
      cmocka_unit_test_setup_teardown(test_close_error_names_the_file, setup, db_fixture_teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

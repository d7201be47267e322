/* The stand-alone index's exact answers (doc/standalone.md "Exact answers"), through
 * include/bfh.h with the real own engine and real files: an index with no stale entry reports
 * the keys whose writes are not in flight without a get (bfh_search_stats.trusted), and
 * validates every other key:
 *   - built, then closed cleanly and opened again: every result on the index's word, by a
 *     whole value and by a range and an AND of attributes;
 *   - a write in flight, stopped between its steps by the step hook: the entry it added before
 *     the database write and the one it has not yet removed are validated, not trusted;
 *   - a write that fails between its steps (an injected EIO on the database's log) and an open
 *     after a process killed without a close: the index is no longer exact, across a clean
 *     close and an open too, and every search validates; bfh_repair builds it exact again;
 *   - the database's files put back from an older copy beside the index of a later clean
 *     close: the open builds the index again (engine_kind_t.at_rest).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "bfh.h"
/* testbed.h: the handle's index (standalone_is_exact, the step hook) and the open through a
   faulty env. */
#include "api/testbed.h"
#include "index/standalone.h"
#include "tests/env_fault.h"
#include "tests/test_util.h"
#include "tests/api/db_fixture.h"

#define NKEYS 300
#define DOMAIN 10

static int setup(void **state) {
  return db_fixture_setup(state, "standalone_exact_test");
}

static const bfh_attribute ATTRS[2] = {{"n", "json:n:int"}, {"c", "json:c"}};

/* Small tables, so that both stores flush and compact; with attrs, the two of ATTRS. */
static void options(bfh_options *o, int attrs) {
  bfh_options_init(o);
  o->memtable_bytes = 64 << 10;
  o->table_bytes = 16 << 10;
  o->value_filter_bits = 4096;
  o->standalone_index = 1;
  if (attrs) {
    o->attributes = ATTRS;
    o->attribute_count = 2;
  }
}

static bfh_db *open_or_fail(const char *dir, const bfh_options *o) {
  bfh_db *db = NULL;
  int rc = bfh_open(dir, o, &db);
  if (rc != BFH_OK) fail_msg("bfh_open %s: %d %s", dir, rc, bfh_last_error(NULL));
  return db;
}

static void put_str(bfh_db *db, const char *k, const char *v) {
  int rc = bfh_put(db, k, strlen(k), v, strlen(v));
  if (rc != BFH_OK) fail_msg("put %s: %d %s", k, rc, bfh_last_error(db));
}

/* Key i's whole value: "v<i % DOMAIN>"; with attributes {"n": i, "c": "c<i % DOMAIN>"}. */
static void value_of(int i, int attrs, char *buf, size_t cap) {
  if (attrs)
    snprintf(buf, cap, "{\"n\":%d,\"c\":\"c%d\"}", i, i % DOMAIN);
  else
    snprintf(buf, cap, "v%d", i % DOMAIN);
}

static void fill(bfh_db *db, int attrs) {
  for (int i = 0; i < NKEYS; i++) {
    char k[16], v[64];
    snprintf(k, sizeof k, "k%04d", i);
    value_of(i, attrs, v, sizeof v);
    put_str(db, k, v);
  }
}

/* The keys a search reports: their count, and whether key `watch` came. */
typedef struct found {
  const char *watch;
  size_t n;
  int watched;
} found_t;

static int on_key(void *arg, const void *key, size_t len) {
  found_t *f = arg;
  f->n++;
  if (f->watch && len == strlen(f->watch) && memcmp(key, f->watch, len) == 0) f->watched++;
  return 0;
}

/* The search of val by STANDALONE: the keys found (and whether watch came) into *f. */
static bfh_search_stats search_value(bfh_db *db, const char *val, const char *watch, found_t *f) {
  *f = (found_t){watch, 0, 0};
  bfh_search_stats st;
  int rc = bfh_search(db, val, strlen(val), BFH_SEARCH_STANDALONE, on_key, f, &st);
  if (rc != BFH_OK) fail_msg("search %s: %d %s", val, rc, bfh_last_error(db));
  assert_int_equal(st.method_used, BFH_SEARCH_STANDALONE);
  assert_int_equal(st.results, f->n);
  return st;
}

static bfh_search_stats query(bfh_db *db, const char *where, found_t *f) {
  *f = (found_t){NULL, 0, 0};
  bfh_search_stats st;
  int rc = bfh_query(db, where, BFH_SEARCH_STANDALONE, 0, on_key, f, &st);
  if (rc != BFH_OK) fail_msg("query %s: %d %s", where, rc, bfh_last_error(db));
  assert_int_equal(st.results, f->n);
  return st;
}

/* Every key of every value comes, each on the index's word when trusted, else validated. */
static void expect_values(bfh_db *db, int trusted) {
  for (int d = 0; d < DOMAIN; d++) {
    char v[16];
    snprintf(v, sizeof v, "v%d", d);
    found_t f;
    bfh_search_stats st = search_value(db, v, NULL, &f);
    assert_int_equal(f.n, NKEYS / DOMAIN);
    assert_int_equal(st.trusted, trusted ? f.n : 0);
  }
}

static void test_exact_after_build_and_clean_close(void **state) {
  db_fixture_t *f = *state;
  bfh_options o;
  options(&o, 0);
  bfh_db *db = open_or_fail(f->dir, &o);
  fill(db, 0);
  assert_true(standalone_is_exact(bfh_internal_standalone(db)));
  expect_values(db, 1);
  assert_int_equal(bfh_close(db), BFH_OK);
  db = open_or_fail(f->dir, &o);
  assert_true(standalone_is_exact(bfh_internal_standalone(db)));
  expect_values(db, 1);
  found_t none;
  bfh_search_stats st = search_value(db, "v99", NULL, &none);
  assert_int_equal(none.n, 0);
  assert_int_equal(st.candidates, 0);
  assert_int_equal(bfh_close(db), BFH_OK);
}

/* Predicates: a range, an equality and their AND, each result on the index's word; an AND
   whose other leaf has too many postings to read leaves its candidates to validation. */
static void test_exact_predicates(void **state) {
  db_fixture_t *f = *state;
  bfh_options o;
  options(&o, 1);
  bfh_db *db = open_or_fail(f->dir, &o);
  fill(db, 1);
  /* Overwrites and deletes: the index's entries follow them. */
  for (int i = 0; i < NKEYS; i += 7) {
    char k[16], v[64];
    snprintf(k, sizeof k, "k%04d", i);
    if (i % 2) {
      assert_int_equal(bfh_delete(db, k, strlen(k)), BFH_OK);
    } else {
      snprintf(v, sizeof v, "{\"n\":%d,\"c\":\"moved\"}", i + 1000);
      put_str(db, k, v);
    }
  }
  found_t r;
  /* n in [100, 149]: 50 keys, less the 7 deleted or moved (105..147 step 7). */
  bfh_search_stats st = query(db, "n BETWEEN 100 AND 149", &r);
  assert_int_equal(r.n, 50 - 7);
  assert_int_equal(st.trusted, r.n);
  st = query(db, "c = 'c3'", &r);
  assert_int_equal(r.n, 30 - 4); /* less 63, 133, 203 and 273 */
  assert_int_equal(st.trusted, r.n);
  st = query(db, "c = 'c3' AND n < 100", &r);
  assert_int_equal(r.n, 10 - 1); /* 3, 13, ..., 93, less 63 (deleted) */
  assert_int_equal(st.trusted, r.n);
  st = query(db, "c = 'moved' OR n >= 1000", &r);
  assert_int_equal(r.n, 22); /* 0, 14, ..., 294 */
  assert_int_equal(st.trusted, r.n);
  /* Beside one key's leaf, a leaf of every key: read no further (its postings would cost
     more than the gets they save), so the candidate is validated. */
  st = query(db, "n >= 0 AND n = 5", &r);
  assert_int_equal(r.n, 1);
  assert_int_equal(st.trusted, 0);
  assert_int_equal(bfh_close(db), BFH_OK);
}

/* ---- A write in flight ------------------------------------------------------------------- */

typedef struct in_flight {
  bfh_db *db;
  int checked; /* steps checked */
} in_flight_t;

/* At each step of the write of k0042 from "v2" to "vnew": the searches of both values. */
static void check_step(void *arg, int step) {
  in_flight_t *w = arg;
  found_t old_f, new_f;
  bfh_search_stats old_st = search_value(w->db, "v2", "k0042", &old_f);
  bfh_search_stats new_st = search_value(w->db, "vnew", "k0042", &new_f);
  /* Both values have k0042's entry at either step (the new one is added first, the old one
     removed last); the database holds v2 before the store, vnew after. */
  int stored = step == STANDALONE_STEP_STORED;
  assert_int_equal(old_f.watched, !stored);
  assert_int_equal(new_f.watched, stored);
  assert_int_equal(new_st.candidates, 1);
  /* k0042 was validated (and any key of v2 that shares its stripe). */
  assert_true(old_st.trusted < old_st.candidates);
  assert_int_equal(new_st.trusted, 0);
  w->checked++;
}

static void test_in_flight_entries_are_validated(void **state) {
  db_fixture_t *f = *state;
  bfh_options o;
  options(&o, 0);
  bfh_db *db = open_or_fail(f->dir, &o);
  fill(db, 0);
  in_flight_t w = {db, 0};
  standalone_set_step_hook(bfh_internal_standalone(db), check_step, &w);
  put_str(db, "k0042", "vnew");
  standalone_set_step_hook(bfh_internal_standalone(db), NULL, NULL);
  assert_int_equal(w.checked, 2);
  /* The write done, both answers are on the index's word again. */
  found_t r;
  bfh_search_stats st = search_value(db, "vnew", "k0042", &r);
  assert_int_equal(r.watched, 1);
  assert_int_equal(st.trusted, 1);
  st = search_value(db, "v2", "k0042", &r);
  assert_int_equal(r.watched, 0);
  assert_int_equal(st.trusted, NKEYS / DOMAIN - 1);
  assert_int_equal(bfh_close(db), BFH_OK);
}

/* ---- Losing exactness -------------------------------------------------------------------- */

/* Not exact: every search validates, and finds every key; a clean close and an open do not
   bring exactness back; bfh_repair does. */
static void expect_inexact_until_repair(const char *dir, const bfh_options *o) {
  bfh_db *db = open_or_fail(dir, o);
  assert_false(standalone_is_exact(bfh_internal_standalone(db)));
  expect_values(db, 0);
  assert_int_equal(bfh_close(db), BFH_OK);
  db = open_or_fail(dir, o);
  assert_false(standalone_is_exact(bfh_internal_standalone(db)));
  assert_int_equal(bfh_close(db), BFH_OK);
  bfh_repair_report rep;
  assert_int_equal(bfh_repair(dir, o, &rep), BFH_OK);
  assert_true(rep.standalone_rebuilt);
  db = open_or_fail(dir, o);
  assert_true(standalone_is_exact(bfh_internal_standalone(db)));
  expect_values(db, 1);
  assert_int_equal(bfh_close(db), BFH_OK);
}

/* Arms the fault in arg (an env_t) once the index's entry is written, before the database's
   write. */
static void fail_next_log_write(void *arg, int step) {
  if (step != STANDALONE_STEP_INDEXED) return;
  env_fault_t fault = {ENV_OP_WRITE, 1, 0, ENV_ERR_EIO, "*.log"};
  assert_int_equal(env_fail_with(arg, &fault), BFH_OK);
}

/* A put whose database write fails (EIO on the database's log, after the index's entry was
   written): that entry is stale, and the index stops being exact at once. */
static void test_failed_write_ends_exactness(void **state) {
  db_fixture_t *f = *state;
  bfh_options o;
  options(&o, 0);
  bfh_db *db = open_or_fail(f->dir, &o);
  fill(db, 0);
  assert_int_equal(bfh_close(db), BFH_OK);
  env_t *io = env_create_faulty();
  assert_non_null(io);
  assert_int_equal(bfh_internal_open_io(f->dir, &o, io, &db), BFH_OK);
  assert_true(standalone_is_exact(bfh_internal_standalone(db)));
  standalone_set_step_hook(bfh_internal_standalone(db), fail_next_log_write, io);
  assert_int_not_equal(bfh_put(db, "k0042", 5, "vnew", 4), BFH_OK);
  standalone_set_step_hook(bfh_internal_standalone(db), NULL, NULL);
  char path[4096];
  env_last_fault_path(io, path, sizeof path);
  assert_non_null(strstr(path, ".log"));
  assert_null(strstr(path, STANDALONE_DIR)); /* the database's log failed, not the index's */
  assert_false(standalone_is_exact(bfh_internal_standalone(db)));
  found_t r;
  bfh_search_stats st = search_value(db, "vnew", "k0042", &r);
  assert_int_equal(st.candidates, 1); /* the stale entry */
  assert_int_equal(r.n, 0);
  (void)bfh_close(db); /* the failed log write may fail the close too */
  env_destroy(io);
  expect_inexact_until_repair(f->dir, &o);
}

/* A process killed with the database open: the open after it cannot tell whether a write
   was in flight, so the index is no longer exact. */
static void test_unclean_open_ends_exactness(void **state) {
  db_fixture_t *f = *state;
  bfh_options o;
  options(&o, 0);
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    bfh_db *db = NULL;
    if (bfh_open(f->dir, &o, &db) != BFH_OK) _exit(3);
    fill(db, 0);
    _exit(standalone_is_exact(bfh_internal_standalone(db)) ? 0 : 4); /* no close */
  }
  int status;
  assert_int_equal(waitpid(pid, &status, 0), pid);
  assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  expect_inexact_until_repair(f->dir, &o);
}

static uint64_t built_entries(bfh_db *db) {
  standalone_stats_t st;
  standalone_get_stats(bfh_internal_standalone(db), &st);
  return st.built_entries;
}

/* The database's files put back from a copy taken before an overwrite, its index kept as the
   last clean close left it (entries of the newer database): the open sees that the database
   is not as the index was closed with and builds the index again, so that neither the
   overwritten key's newer value (a false positive) nor its older one (a false negative, the
   index having removed that entry) is answered wrong. */
static void test_restored_database_is_indexed_again(void **state) {
  db_fixture_t *f = *state;
  char copy[TEST_PATH_MAX + 64], index[TEST_PATH_MAX + 256], kept[TEST_PATH_MAX + 64];
  snprintf(copy, sizeof copy, "%s/copy", f->root);
  snprintf(index, sizeof index, "%s/bfh-standalone", f->dir);
  snprintf(kept, sizeof kept, "%s/kept-index", f->root);
  bfh_options o;
  options(&o, 0);
  bfh_db *db = open_or_fail(f->dir, &o);
  fill(db, 0);
  assert_int_equal(bfh_close(db), BFH_OK);
  assert_int_equal(test_copy_dir(f->dir, copy), 0);
  db = open_or_fail(f->dir, &o);
  assert_int_equal(built_entries(db), 0); /* a clean close, nothing changed: kept */
  put_str(db, "k0000", "newer");
  assert_int_equal(bfh_close(db), BFH_OK);

  assert_int_equal(rename(index, kept), 0);
  assert_int_equal(test_rmrf(f->dir), 0);
  assert_int_equal(test_copy_dir(copy, f->dir), 0);
  assert_int_equal(test_rmrf(index), 0);
  assert_int_equal(rename(kept, index), 0);

  db = open_or_fail(f->dir, &o);
  assert_int_equal(built_entries(db), NKEYS);
  assert_true(standalone_is_exact(bfh_internal_standalone(db)));
  found_t r;
  (void)search_value(db, "newer", NULL, &r);
  assert_int_equal(r.n, 0);
  (void)search_value(db, "v0", "k0000", &r);
  assert_int_equal(r.watched, 1);
  expect_values(db, 1);
  assert_int_equal(bfh_close(db), BFH_OK);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_exact_after_build_and_clean_close, setup,
                                      db_fixture_teardown),
      cmocka_unit_test_setup_teardown(test_exact_predicates, setup, db_fixture_teardown),
      cmocka_unit_test_setup_teardown(test_in_flight_entries_are_validated, setup,
                                      db_fixture_teardown),
      cmocka_unit_test_setup_teardown(test_failed_write_ends_exactness, setup, db_fixture_teardown),
      cmocka_unit_test_setup_teardown(test_unclean_open_ends_exactness, setup, db_fixture_teardown),
      cmocka_unit_test_setup_teardown(test_restored_database_is_indexed_again, setup,
                                      db_fixture_teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

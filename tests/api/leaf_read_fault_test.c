/* Leaves on disk are read through the database's env_t (util/env.h), so that fault injection
 * reaches them: with a faulty env (bfh_internal_open_io) armed to fail the reads of the
 * files the leaves live in, a search's leaf reads fail (env_faults_injected counts them),
 * every failed leaf counts as maybe (its table is scanned: never a false negative), and the
 * search still returns every key holding the value, by the leaves and by the hierarchy.
 *
 * Rows: the own engine (a leaf lives in its table file, *.sst: only the next read of one
 * fails, so that the table scans that follow read) and the LevelDB engine (a leaf lives in its
 * sidecar cache file, *.vf, which nothing else reads during a search: every read fails),
 * each with k words read per probe and with the whole filter read per probe.
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
#include "api/testbed.h" /* bfh_internal_open_io */
#include "tests/test_util.h"
#include "tests/api/db_fixture.h"
#include "tests/env_fault.h"
#include "util/env.h"

static int setup(void **state) {
  return db_fixture_setup(state, "leaf_read_fault_test");
}

#define NTABLES 3 /* below both engines' L0 compaction trigger (4): the tables stay put */
#define PER_TABLE 100
#define NTARGET 7 /* keys of the target value, all in the last table */
static const char TARGET[] = "the-target-value";

typedef struct row {
  const char *name;
  bfh_engine engine;
  int leaves;          /* a bfh_leaves on disk */
  const char *pattern; /* the files the leaves are read from */
  int sticky;          /* every later read of them fails too */
} row_t;

static const row_t ROWS[] = {
    {"lsm, k words per probe", BFH_ENGINE_LSM, BFH_LEAVES_ON_DISK, "*.sst", 0},
    {"lsm, whole leaf per probe", BFH_ENGINE_LSM, BFH_LEAVES_ON_DISK_WHOLE, "*.sst", 0},
    {"leveldb, k words per probe", BFH_ENGINE_LEVELDB, BFH_LEAVES_ON_DISK, "*.vf", 1},
    {"leveldb, whole leaf per probe", BFH_ENGINE_LEVELDB, BFH_LEAVES_ON_DISK_WHOLE, "*.vf", 1},
};

typedef struct hits {
  uint8_t seen[NTARGET];
  int bad; /* a key that does not hold the target, or one reported twice */
} hits_t;

static int on_match(void *arg, const void *key, size_t len) {
  hits_t *h = arg;
  char buf[32];
  unsigned i;
  if (len >= sizeof buf) return h->bad = 1, 0;
  memcpy(buf, key, len);
  buf[len] = 0;
  if (sscanf(buf, "target%u", &i) != 1 || i >= NTARGET || h->seen[i]) return h->bad = 1, 0;
  h->seen[i] = 1;
  return 0;
}

/* NTABLES tables of PER_TABLE unique values; the last one also holds the NTARGET target keys. */
static void fill(bfh_db *db) {
  char key[32], val[32];
  for (unsigned t = 0; t < NTABLES; t++) {
    for (unsigned i = 0; i < PER_TABLE; i++) {
      snprintf(key, sizeof key, "t%u-%04u", t, i);
      snprintf(val, sizeof val, "value-%u-%04u", t, i);
      assert_int_equal(bfh_put(db, key, strlen(key), val, strlen(val)), BFH_OK);
    }
    for (unsigned i = 0; t == NTABLES - 1 && i < NTARGET; i++) {
      snprintf(key, sizeof key, "target%u", i);
      assert_int_equal(bfh_put(db, key, strlen(key), TARGET, strlen(TARGET)), BFH_OK);
    }
    assert_int_equal(bfh_flush(db), BFH_OK);
  }
}

/* Searches for TARGET by method and checks that every target key, and nothing else, came. */
static void search_all(bfh_db *db, bfh_method method, bfh_search_stats *st, const char *what) {
  hits_t h = {{0}, 0};
  int rc = bfh_search(db, TARGET, strlen(TARGET), method, on_match, &h, st);
  if (rc != BFH_OK) fail_msg("%s: search failed (%d): %s", what, rc, bfh_last_error(db));
  if (h.bad) fail_msg("%s: a wrong or repeated key", what);
  for (unsigned i = 0; i < NTARGET; i++)
    if (!h.seen[i]) fail_msg("%s: target%u missing (a false negative)", what, i);
}

static void run_row(db_fixture_t *f, const row_t *r) {
  char path[4400];
  snprintf(path, sizeof path, "%s/%s-%d", f->root, r->engine == BFH_ENGINE_LSM ? "lsm" : "ldb",
           r->leaves);
  env_t *io = env_create_faulty();
  assert_non_null(io);
  bfh_options o;
  bfh_options_init(&o);
  o.engine = r->engine;
  o.leaves_on_disk = r->leaves;
  o.value_filter_bits = 1 << 16;
  assert_int_equal(bfh_internal_open_io(path, &o, io, &f->db), BFH_OK);
  fill(f->db);

  /* No fault: the leaves say no for the tables without the target (so a maybe below is the
     failed read's doing), and the leaf reads go through io. */
  bfh_search_stats clean;
  search_all(f->db, BFH_SEARCH_LEAVES, &clean, r->name);
  assert_int_equal(clean.tables_live, NTABLES);
  assert_int_equal(clean.tables_scanned, 1);
  assert_int_equal(env_faults_injected(io), 0);

  const bfh_method methods[] = {BFH_SEARCH_LEAVES, BFH_SEARCH_HIERARCHY};
  for (size_t m = 0; m < sizeof methods / sizeof *methods; m++) {
    env_fault_t fault = {ENV_OP_READ, 1, r->sticky, ENV_ERR_EIO, r->pattern};
    assert_int_equal(env_fail_with(io, &fault), BFH_OK);
    uint64_t before = env_faults_injected(io);
    bfh_search_stats st;
    char what[128];
    snprintf(what, sizeof what, "%s, method %d, leaf reads failing", r->name, (int)methods[m]);
    search_all(f->db, methods[m], &st, what);
    env_fail_none(io);
    if (env_faults_injected(io) <= before)
      fail_msg("%s: no leaf read failed (%llu faults injected): leaves are read outside the env",
               what, (unsigned long long)env_faults_injected(io));
    char last[4096];
    env_last_fault_path(io, last, sizeof last);
    assert_non_null(strstr(last, r->pattern + 1)); /* the leaf's file, by its suffix */
    /* The leaves are tested in table order: the first, which has no target, failed and was
       scanned as a maybe. */
    if (methods[m] == BFH_SEARCH_LEAVES) assert_true(st.tables_scanned > clean.tables_scanned);
    print_message("%s: %llu faults injected, %llu of %u tables scanned\n", what,
                  (unsigned long long)(env_faults_injected(io) - before),
                  (unsigned long long)st.tables_scanned, st.tables_live);
  }
  /* The faults hurt nothing: a clean search skips again. */
  search_all(f->db, BFH_SEARCH_LEAVES, &clean, r->name);
  assert_int_equal(clean.tables_scanned, 1);
  assert_int_equal(bfh_close(f->db), BFH_OK);
  f->db = NULL;
  env_destroy(io);
}

/* One test per row, so that every row runs. */
static void test_leaf_read_fault_lsm_words(void **state) {
  run_row(*state, &ROWS[0]);
}
static void test_leaf_read_fault_lsm_whole(void **state) {
  run_row(*state, &ROWS[1]);
}
static void test_leaf_read_fault_leveldb_words(void **state) {
  run_row(*state, &ROWS[2]);
}
static void test_leaf_read_fault_leveldb_whole(void **state) {
  run_row(*state, &ROWS[3]);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_leaf_read_fault_lsm_words, setup, db_fixture_teardown),
      cmocka_unit_test_setup_teardown(test_leaf_read_fault_lsm_whole, setup, db_fixture_teardown),
      cmocka_unit_test_setup_teardown(test_leaf_read_fault_leveldb_words, setup,
                                      db_fixture_teardown),
      cmocka_unit_test_setup_teardown(test_leaf_read_fault_leveldb_whole, setup,
                                      db_fixture_teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

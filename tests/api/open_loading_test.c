/* A search issued while the index is still loading (index_sync.h "Loading at open",
 * doc/search.md "Open cost"): the own engine and the LevelDB engine read-only (its filter
 * cache absent, then present) are opened with the loaders held by the test hook
 * (index_sync_test_hold_loaders), so that no leaf is in the index yet, deterministically.
 * Every search (AUTO and each filter method) must then give exactly the keys SCAN gives,
 * hash its value once, read the tables through their block filters (never the full scan
 * AUTO used to fall back to), and hold no leaf; after the hold is released and the loader
 * waited for, the same searches run over the whole index. Closing a handle whose loader is
 * held must not wait for the hold. A handle that searches once starts no loader at all.
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
#include "filters/hash.h" /* bfh_value_hash_count */
#include "tests/test_util.h"
#include "tests/api/db_fixture.h"
/* Not public (api/testbed.h): the value index's leaf count and the loader's hook. */
#include "index/value_index.h" /* VALUE_INDEX_FOLD_READ_BYTES */
#include "api/testbed.h"

#define NKEYS 40000
#define NVALUES 20000 /* values v00000..v19999, each on about two keys */

static int setup(void **state) {
  return db_fixture_setup(state, "open_loading_test");
}

static int teardown(void **state) {
  index_sync_test_hold_loaders(0);
  return db_fixture_teardown(state);
}

static void options(bfh_options *o, bfh_engine engine) {
  bfh_options_init(o);
  o->engine = engine;
  o->memtable_bytes = 64 << 10;
  o->table_bytes = 64 << 10;
  o->value_filter_bits = 8192;
}

static void put_or_fail(bfh_db *db, const char *key, const char *val) {
  int rc = bfh_put(db, key, strlen(key), val, strlen(val));
  if (rc != BFH_OK) fail_msg("bfh_put %s: %d %s", key, rc, bfh_last_error(db));
}

/* Many small tables; overwrites and deletes, so that a table may hold a value no longer
   current (validation must drop it). */
static void fill_with(const char *dir, const bfh_options *o) {
  bfh_db *db = NULL;
  assert_int_equal(bfh_open(dir, o, &db), BFH_OK);
  char key[32], val[32];
  for (int i = 0; i < NKEYS; i++) {
    snprintf(key, sizeof key, "k%05d", (i * 7919) % NKEYS);
    snprintf(val, sizeof val, "v%05d", i % NVALUES);
    put_or_fail(db, key, val);
  }
  for (int i = 0; i < NKEYS; i += 13) {
    snprintf(key, sizeof key, "k%05d", i);
    put_or_fail(db, key, "over");
  }
  for (int i = 5; i < NKEYS; i += 17) {
    snprintf(key, sizeof key, "k%05d", i);
    assert_int_equal(bfh_delete(db, key, strlen(key)), BFH_OK);
  }
  assert_int_equal(bfh_flush(db), BFH_OK);
  if (o->engine == BFH_ENGINE_LSM) {
    /* No compaction left for the next open to start: while the loader is held, the tables
       must stay the ones the open found (a compaction's outputs bring their own leaves). */
    err_t e;
    assert_int_equal(engine_lsm_wait_idle(bfh_internal_engine(db), &e), BFH_OK);
  }
  assert_int_equal(bfh_close(db), BFH_OK);
}

static void fill(const char *dir, bfh_engine engine) {
  bfh_options o;
  options(&o, engine);
  fill_with(dir, &o);
}

typedef struct keys {
  char k[NKEYS][8]; /* "k00000" */
  size_t n;
} keys_t;

static int collect(void *arg, const void *key, size_t len) {
  keys_t *ks = arg;
  assert_true(len < sizeof ks->k[0] && ks->n < NKEYS);
  memcpy(ks->k[ks->n], key, len);
  ks->k[ks->n++][len] = '\0';
  return 0;
}

static int cmp_key(const void *a, const void *b) {
  return strcmp(a, b);
}

/* Searches val by method and by SCAN; the keys must be the same, and the search must hash
   val once. With loading set, AUTO must not have run SCAN's full read of every table. */
static void expect_as_scan(bfh_db *db, bfh_method m, const char *val, int loading) {
  static keys_t got, want;
  got.n = want.n = 0;
  bfh_search_stats st, scan;
  uint64_t before = bfh_value_hash_count();
  int rc = bfh_search(db, val, strlen(val), m, collect, &got, &st);
  if (rc != BFH_OK) fail_msg("%s %s: %d %s", bfh_method_name(m), val, rc, bfh_last_error(db));
  assert_int_equal(bfh_value_hash_count() - before, 1);
  assert_int_equal(bfh_search(db, val, strlen(val), BFH_SEARCH_SCAN, collect, &want, &scan),
                   BFH_OK);
  qsort(got.k, got.n, sizeof got.k[0], cmp_key);
  qsort(want.k, want.n, sizeof want.k[0], cmp_key);
  if (got.n != want.n)
    fail_msg("%s %s (ran %s, loading %d): %zu keys, SCAN %zu", bfh_method_name(m), val,
             bfh_method_name((bfh_method)st.method_used), loading, got.n, want.n);
  for (size_t i = 0; i < got.n; i++) assert_string_equal(got.k[i], want.k[i]);
  if (loading) {
    /* Through the block filters: far fewer bytes than the scan read. */
    if (!(st.block_filters_probed > 0 && st.bytes_read * 4 < scan.bytes_read))
      fail_msg("%s %s (ran %s): %llu block filters probed, %llu bytes read, SCAN %llu",
               bfh_method_name(m), val, bfh_method_name((bfh_method)st.method_used),
               (unsigned long long)st.block_filters_probed, (unsigned long long)st.bytes_read,
               (unsigned long long)scan.bytes_read);
    if (m == BFH_SEARCH_AUTO) assert_int_not_equal(st.method_used, BFH_SEARCH_SCAN);
  }
}

/* While loading only AUTO: a named filter method waits for the loader (which is held). */
static void expect_all(bfh_db *db, int loading) {
  const bfh_method methods[] = {BFH_SEARCH_AUTO, BFH_SEARCH_LEAVES, BFH_SEARCH_HIERARCHY,
                                BFH_SEARCH_SLICED};
  const char *vals[] = {"v00000", "v01234", "v19999", "absent"};
  for (size_t i = 0; i < (loading ? 1 : sizeof methods / sizeof methods[0]); i++)
    for (size_t j = 0; j < sizeof vals / sizeof vals[0]; j++)
      expect_as_scan(db, methods[i], vals[j], loading);
}

static bfh_db *open_held(const char *dir, const bfh_options *o) {
  index_sync_test_hold_loaders(1);
  bfh_db *db = NULL;
  int rc = bfh_open(dir, o, &db);
  if (rc != BFH_OK) fail_msg("bfh_open %s: %d %s", dir, rc, bfh_last_error(NULL));
  return db;
}

/* Opens f->dir with the loaders held, reads count(index), lets the loader run to its end and
   sets *delta to how much count grew meanwhile. Returns the leaves in the index. */
static size_t open_loaded(db_fixture_t *f, const bfh_options *o, uint64_t (*count)(value_index_t *),
                          uint64_t *delta) {
  f->db = open_held(f->dir, o);
  value_index_t *vi = bfh_internal_index(f->db);
  uint64_t before = count(vi);
  index_sync_test_hold_loaders(0);
  assert_int_equal(index_sync_loader_wait(bfh_internal_sync(f->db), NULL, NULL), BFH_OK);
  *delta = count(vi) - before;
  return value_index_leaf_count(vi);
}

/* Searches while held (no leaf), then after the loader finished (every table a leaf). */
static void check_loading(db_fixture_t *f, const bfh_options *o) {
  f->db = open_held(f->dir, o);
  value_index_t *vi = bfh_internal_index(f->db);
  engine_t *e = bfh_internal_engine(f->db);
  engine_view_t *v;
  assert_int_equal(e->ops->view_acquire(e, &v, NULL), BFH_OK);
  const engine_table_t *tables;
  size_t ntables = e->ops->view_tables(v, &tables);
  e->ops->view_release(e, v);
  /* LevelDB makes tables of at least 1 MiB: two here. */
  if (ntables < 2) fail_msg("%zu tables, want at least 2", ntables);
  expect_all(f->db, 1);
  assert_int_equal(value_index_leaf_count(vi), 0); /* still held: nothing loaded */
  index_sync_test_hold_loaders(0);
  assert_int_equal(index_sync_loader_wait(bfh_internal_sync(f->db), NULL, NULL), BFH_OK);
  assert_int_equal(value_index_leaf_count(vi), ntables);
  expect_all(f->db, 0);
  assert_int_equal(bfh_close(f->db), BFH_OK);
  f->db = NULL;
}

static void test_lsm_search_while_loading(void **state) {
  db_fixture_t *f = *state;
  fill(f->dir, BFH_ENGINE_LSM);
  bfh_options o;
  options(&o, BFH_ENGINE_LSM);
  check_loading(f, &o);
  check_loading(f, &o); /* again: the same tables, the same answers */
}

static void test_leveldb_ro_search_while_loading(void **state) {
  db_fixture_t *f = *state;
  fill(f->dir, BFH_ENGINE_LEVELDB);
  char idx[4300];
  snprintf(idx, sizeof idx, "%s/idx", f->root);
  bfh_options o;
  options(&o, BFH_ENGINE_LEVELDB);
  o.read_only = 1;
  o.index_dir = idx;
  check_loading(f, &o); /* no filter cache: the tables are read */
  check_loading(f, &o); /* the filter cache present */
}

/* A handle whose loader is held closes at once (the close wakes and stops it). */
static void test_close_while_held(void **state) {
  db_fixture_t *f = *state;
  fill(f->dir, BFH_ENGINE_LSM);
  bfh_options o;
  options(&o, BFH_ENGINE_LSM);
  f->db = open_held(f->dir, &o);
  assert_int_equal(value_index_leaf_count(bfh_internal_index(f->db)), 0);
  assert_int_equal(bfh_close(f->db), BFH_OK);
  f->db = NULL;
  index_sync_test_hold_loaders(0);
}

/* A process that searches once (a search from the shell) starts no loader, which its close
   would only stop after waiting for its step: the thread starts at the second search through
   the index (a SCAN is none), and then brings every table's leaf in. */
static void test_loader_starts_at_the_second_search(void **state) {
  db_fixture_t *f = *state;
  fill(f->dir, BFH_ENGINE_LSM);
  bfh_options o;
  options(&o, BFH_ENGINE_LSM);
  o.read_only = 1; /* as bfh search opens it */
  assert_int_equal(bfh_open(f->dir, &o, &f->db), BFH_OK);
  index_sync_t *sync = bfh_internal_sync(f->db);
  engine_t *e = bfh_internal_engine(f->db);
  engine_view_t *v;
  assert_int_equal(e->ops->view_acquire(e, &v, NULL), BFH_OK);
  const engine_table_t *tables;
  size_t ntables = e->ops->view_tables(v, &tables);
  e->ops->view_release(e, v);
  if (ntables < 2) fail_msg("%zu tables, want at least 2", ntables);
  expect_as_scan(f->db, BFH_SEARCH_AUTO, "v00001", 0); /* AUTO, then SCAN */
  assert_false(index_sync_loader_went(sync));
  assert_int_equal(value_index_leaf_count(bfh_internal_index(f->db)), 0);
  expect_as_scan(f->db, BFH_SEARCH_AUTO, "v00002", 0);
  assert_true(index_sync_loader_went(sync));
  assert_int_equal(index_sync_loader_wait(sync, NULL, NULL), BFH_OK);
  assert_int_equal(value_index_leaf_count(bfh_internal_index(f->db)), ntables);
  expect_as_scan(f->db, BFH_SEARCH_AUTO, "v00003", 0);
  assert_int_equal(bfh_close(f->db), BFH_OK);
  f->db = NULL;
}

/* A paper-placement tree is rebuilt whole after every change, so the loader, which adds an
   opened database's tables a few at a time, must rebuild it once at its end, not after every
   step: at 500M entries (6573 tables, 2 per step) the steps' rebuilds took the first search
   from the shell more than ten minutes. The tree the searches then see is the paper's
   (value_index_validate checks its exact-d nodes). */
static void test_lsm_paper_tree_rebuilt_once(void **state) {
  db_fixture_t *f = *state;
  fill(f->dir, BFH_ENGINE_LSM);
  bfh_options o;
  options(&o, BFH_ENGINE_LSM);
  o.placement = BFH_PLACEMENT_PAPER;
  o.order = 2;
  o.index_bits_per_value = 0; /* the paper's layout: the lean one keeps no tree */
  uint64_t rebuilds;
  size_t leaves = open_loaded(f, &o, value_index_rebuild_count, &rebuilds);
  if (leaves < 8) fail_msg("%zu tables, want at least 8 (4 loader steps)", leaves);
  assert_int_equal(value_index_validate(bfh_internal_index(f->db), NULL), BFH_OK);
  if (rebuilds != 1)
    fail_msg("%llu rebuilds of the paper tree for %zu tables, want 1", (unsigned long long)rebuilds,
             leaves);
  expect_all(f->db, 0);
  assert_int_equal(bfh_close(f->db), BFH_OK);
  f->db = NULL;
}

/* The lean layout (the default) plans its fold groups over the leaves it enters together, and
   the loader used to enter an open's leaves 64 at a time, each of its two threads counting its
   own: the folds, and the memory, changed from open to open (doc/search.md "One plan per
   open"). With more than 64 tables the loader must now enter them in one batch, and every open
   must hold the same bytes. */
static void test_lsm_lean_one_plan(void **state) {
  db_fixture_t *f = *state;
  bfh_options o;
  options(&o, BFH_ENGINE_LSM);
  o.memtable_bytes = 64 << 10; /* the smallest memtable */
  o.table_bytes = 8 << 10; /* 8 KiB tables: well over 64 of them */
  fill_with(f->dir, &o);
  uint64_t bytes[3];
  for (int i = 0; i < 3; i++) {
    uint64_t batches;
    size_t leaves = open_loaded(f, &o, value_index_add_batch_count, &batches);
    if (leaves <= 64) fail_msg("%zu tables, want more than 64", leaves);
    if (batches != 1)
      fail_msg("%zu leaves entered in %llu batches, want 1", leaves, (unsigned long long)batches);
    bfh_db_stats st;
    assert_int_equal(bfh_stats(f->db, &st), BFH_OK);
    bytes[i] = st.index_bytes;
    assert_true(bytes[i] > 0);
    /* Each leaf folded as it was read back: the loader and the caller beside it held one leaf's
       words each at most, not the 64-odd the batch entered together (issue 45, 4). */
    uint64_t leaf = st.value_filter_bits / 8;
    if (st.index_load_peak_bytes < leaf ||
        st.index_load_peak_bytes > 2 * leaf + VALUE_INDEX_FOLD_READ_BYTES)
      fail_msg("load peak %llu bytes, want one or two leaves of %llu",
               (unsigned long long)st.index_load_peak_bytes, (unsigned long long)leaf);
    assert_int_equal(st.leaf_chunks_damaged, 0);
    expect_all(f->db, 0);
    assert_int_equal(bfh_close(f->db), BFH_OK);
    f->db = NULL;
  }
  assert_int_equal(bytes[1], bytes[0]);
  assert_int_equal(bytes[2], bytes[0]);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_lsm_search_while_loading, setup, teardown),
      cmocka_unit_test_setup_teardown(test_leveldb_ro_search_while_loading, setup, teardown),
      cmocka_unit_test_setup_teardown(test_close_while_held, setup, teardown),
      cmocka_unit_test_setup_teardown(test_loader_starts_at_the_second_search, setup, teardown),
      cmocka_unit_test_setup_teardown(test_lsm_paper_tree_rebuilt_once, setup, teardown),
      cmocka_unit_test_setup_teardown(test_lsm_lean_one_plan, setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

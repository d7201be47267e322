/* index_sync_t and value_hook_t tests (index/index_sync.h, lsm_hooks/engines/lsm/value_hook.h), with
 * real value filters and a real value_index_t, and a test source whose read_leaf counts its
 * calls and fails with chosen statuses for chosen tables:
 *   pushed reports (built, added, removed; added without a built filter is read by run);
 *   pulled reports (lists mark, a later list drops, an unreadable table is never retried, a
 *   vanished one stays pending); pinned views keep a gone table's leaf until unpinned;
 *   INDEX_RUN_AGED, and the tables a view met read at once; the sidecar cache (written at close, loaded at reopen, a damaged or
 *   stale file rebuilt, leaves on disk living in it); a cache without block filters upgraded
 *   lazily; the value hook driven by hand (with its block filter).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bfh.h"
#include "filters/block_filter.h"
#include "filters/value_filter.h"
#include "lsm/table_hook.h"
#include "index/index_sync.h"
#include "index/leaf_cache.h"
#include "lsm_hooks/engines/lsm/value_hook.h"
#include "index/value_block_map.h"
#include "index/value_index.h"
#include "tests/test_util.h"

#define M 2048
#define K 3
#define SEED 0x5eedull
#define MAXT 64  /* table numbers 1..MAXT-1 */
#define NVALS 16 /* values per test table: number * 1000 + i, i < NVALS */

/* ---- Fixture ------------------------------------------------------------------------------ */

typedef struct fixture {
  char dir[TEST_PATH_MAX / 4];   /* the test's temporary directory */
  char cache[TEST_PATH_MAX / 2]; /* dir/bfh-filters */
  value_index_t *index;
  index_sync_t *sync;
  /* the test source */
  int calls;                   /* read_leaf calls */
  int calls_of[MAXT];          /* per table */
  int fail_of[MAXT];           /* status read_leaf returns for a table (BFH_OK: a filter) */
  int damaged_blocks_of[MAXT]; /* read_leaf says the table's block filter is damaged */
  uint64_t tag_of[MAXT];       /* the tag of each table's contents (table_tag, read_leaf) */
  uint32_t block_bits;         /* of the next fx_open's index (0: no block filters) */
  int lean_maps;               /* the next fx_open's index: the lean layout with block maps */
  int big_paths;               /* big_read_leaf says where the filter is stored */
} fixture_t;

static fixture_t *g_fx; /* the current test's fixture; released by the teardown */

static int fx_setup(void **state) {
  (void)state;
  g_fx = calloc(1, sizeof *g_fx);
  if (!g_fx) return -1;
  if (test_tmpdir_create(g_fx->dir, sizeof g_fx->dir, "index_sync_test") != 0) return -1;
  snprintf(g_fx->cache, sizeof g_fx->cache, "%s/%s", g_fx->dir, LEAF_CACHE_DIR);
  for (uint64_t t = 0; t < MAXT; t++) g_fx->tag_of[t] = 0x7a670000ull + t;
  return mkdir(g_fx->cache, 0755);
}

static void fx_close(fixture_t *fx) {
  index_sync_destroy(fx->sync);
  value_index_destroy(fx->index);
  fx->sync = NULL;
  fx->index = NULL;
}

static int fx_teardown(void **state) {
  (void)state;
  fixture_t *fx = g_fx;
  g_fx = NULL;
  if (!fx) return 0;
  fx_close(fx);
  int rc = fx->dir[0] ? test_rmrf(fx->dir) : 0;
  free(fx);
  return rc;
}

static value_filter_t *table_filter(uint64_t number, uint64_t m, uint32_t k, uint64_t seed) {
  value_filter_t *f = value_filter_create(m, k, seed);
  assert_non_null(f);
  for (uint64_t i = 0; i < NVALS; i++) {
    uint64_t v = number * 1000 + i;
    value_filter_add(f, &v, sizeof v);
  }
  return f;
}

/* The block filter of test table `number`: its values in two blocks, at 0 and 4096. */
static block_filter_t *table_blocks(uint64_t number, uint32_t bits) {
  block_filter_builder_t *b = block_filter_builder_create(bits);
  assert_non_null(b);
  for (uint64_t i = 0; i < NVALS; i++) {
    uint64_t v = number * 1000 + i;
    assert_int_equal(block_filter_builder_add(b, bfh_hash64(&v, sizeof v, SEED)), BFH_OK);
    if (i == NVALS / 2 - 1) assert_int_equal(block_filter_builder_end_block(b, 0, 4000), BFH_OK);
  }
  assert_int_equal(block_filter_builder_end_block(b, 4096, 4000), BFH_OK);
  block_filter_t *f;
  err_t err;
  assert_int_equal(block_filter_builder_finish(b, &f, &err), BFH_OK);
  block_filter_builder_destroy(b);
  return f;
}

static int test_read_leaf(void *ctx, uint64_t number, const value_index_params_t *p,
                          index_leaf_read_t *out, err_t *err) {
  fixture_t *fx = ctx;
  assert_true(number < MAXT);
  fx->calls++;
  fx->calls_of[number]++;
  if (fx->fail_of[number] != BFH_OK)
    return err_set(err, fx->fail_of[number], "test table %llu: cannot read",
                   (unsigned long long)number);
  out->filter = table_filter(number, p->m, p->k, p->seed);
  out->bytes_read = 100;
  out->tag = fx->tag_of[number];
  if (p->block_bits && fx->damaged_blocks_of[number])
    err_set(&out->blocks_err, BFH_E_CORRUPT, "test table %llu: block filter: checksum mismatch",
            (unsigned long long)number);
  else if (p->block_bits)
    out->blocks = table_blocks(number, p->block_bits);
  return BFH_OK;
}

static int test_table_tag(void *ctx, uint64_t number, uint64_t *tag, err_t *err) {
  fixture_t *fx = ctx;
  assert_true(number < MAXT);
  if (fx->fail_of[number] != BFH_OK)
    return err_set(err, fx->fail_of[number], "test table %llu: cannot read",
                   (unsigned long long)number);
  *tag = fx->tag_of[number];
  return BFH_OK;
}

/* The cache file at path as table (number, size) of the test source has it now. */
static int cache_load(const fixture_t *fx, const char *path, uint64_t number, uint64_t size,
                      value_filter_t **f, block_filter_t **blocks, err_t *err) {
  leaf_cache_table_t t = {.number = number, .size = size, .tag = fx->tag_of[number]};
  return leaf_cache_load(env_default(), path, &t, M, K, SEED, f, blocks, err);
}

/* A new index (leaves in memory or on disk) and index_sync reading from the test source,
   with the cache directory if cache != 0. */
static void fx_open(fixture_t *fx, int on_disk, int cache, uint64_t cache_delay_ns) {
  err_t err;
  value_index_params_t p = {M,       K,
                            SEED,    3,
                            on_disk, HIERARCHY_SIMILARITY,
                            fx->block_bits, NULL,
                            fx->lean_maps ? BFH_LEAN_MAP_BITS : 0, fx->lean_maps};
  fx->index = value_index_create(&p, &err);
  assert_non_null(fx->index);
  fx->sync = index_sync_create(fx->index, &err);
  assert_non_null(fx->sync);
  index_source_t src = {.read_leaf = test_read_leaf,
                        .ctx = fx,
                        .cache_dir = cache ? fx->cache : NULL,
                        .table_tag = test_table_tag,
                        .cache_delay_ns = cache_delay_ns};
  assert_int_equal(index_sync_set_source(fx->sync, &src, &err), BFH_OK);
  fx->calls = 0;
  memset(fx->calls_of, 0, sizeof fx->calls_of);
}

static fixture_t *fx_get(void) {
  assert_non_null(g_fx);
  return g_fx;
}

static void cache_file(const fixture_t *fx, uint64_t number, char *out, size_t cap) {
  snprintf(out, cap, "%s/%06llu.vf", fx->cache, (unsigned long long)number);
}

static int file_exists(const char *path) {
  struct stat sb;
  return stat(path, &sb) == 0;
}

static void run_ok(fixture_t *fx, int mode, uint64_t min_age_ns) {
  err_t err;
  err_clear(&err);
  int rc = index_sync_run(fx->sync, mode, min_age_ns, &err);
  if (rc != BFH_OK) fail_msg("index_sync_run: %d %s", rc, err.msg);
}

static void list_ok(fixture_t *fx, const index_table_t *live, size_t n, uint64_t *epoch) {
  err_t err;
  err_clear(&err);
  int rc = index_sync_tables_listed(fx->sync, live, n, epoch, &err);
  if (rc != BFH_OK) fail_msg("index_sync_tables_listed: %d %s", rc, err.msg);
}

static int in_vec(const u64vec_t *v, uint64_t x) {
  for (size_t i = 0; i < v->n; i++)
    if (v->v[i] == x) return 1;
  return 0;
}

/* For every value of tables 1..MAXT-1 and some absent ones, by every method: the candidates
   are exactly the tables in `live` whose filter (table_filter) says maybe. */
static void expect_probes_agree(value_index_t *vi, const uint64_t *live, size_t n) {
  static const value_index_by_fn methods[] = {value_index_by_leaves, value_index_by_hierarchy,
                                              value_index_by_sliced};
  value_filter_t *fs[MAXT] = {0};
  for (size_t i = 0; i < n; i++) fs[i] = table_filter(live[i], M, K, SEED);
  for (uint64_t t = 1; t < 12; t++)
    for (uint64_t i = 0; i < NVALS + 4; i++) { /* i >= NVALS: values no table holds */
      uint64_t v = t * 1000 + i;
      probe_t pr;
      value_index_probe(vi, &v, sizeof v, &pr);
      for (size_t mi = 0; mi < 3; mi++) {
        u64vec_t out;
        u64vec_init(&out);
        err_t err;
        assert_int_equal(value_index_candidates(vi, methods[mi], &pr, &out, NULL, &err), BFH_OK);
        size_t want = 0;
        for (size_t j = 0; j < n; j++) {
          int maybe = value_filter_may_contain(fs[j], &v, sizeof v);
          want += (size_t)maybe;
          if (maybe != in_vec(&out, live[j]))
            fail_msg("method %d value %llu table %llu: index %d, filter %d", (int)mi,
                     (unsigned long long)v, (unsigned long long)live[j], in_vec(&out, live[j]),
                     maybe);
        }
        assert_int_equal(out.n, want);
        u64vec_release(&out);
      }
    }
  for (size_t i = 0; i < n; i++) value_filter_destroy(fs[i]);
}

/* ---- 1. Pushed reports -------------------------------------------------------------------- */

static void test_pushed_reports(void **state) {
  (void)state;
  fixture_t *fx = fx_get();
  fx_open(fx, 0, 0, 0);
  index_sync_stats_t st;

  /* built, then added: the built filter is the leaf; nothing is read. */
  index_sync_table_built(fx->sync, 1, table_filter(1, M, K, SEED), NULL, NULL, 0);
  assert_false(value_index_contains(fx->index, 1));
  assert_int_equal(index_sync_leaf_source(fx->sync, 1), INDEX_LEAF_NONE);
  index_sync_table_added(fx->sync, 1, 100);
  assert_true(value_index_contains(fx->index, 1));
  assert_int_equal(index_sync_leaf_source(fx->sync, 1), INDEX_LEAF_BUILT);
  assert_false(index_sync_pending(fx->sync, 0));
  run_ok(fx, INDEX_RUN_ALL, 0);
  assert_int_equal(fx->calls, 0);
  index_sync_get_stats(fx->sync, &st);
  assert_int_equal(st.tables_built, 1);
  assert_int_equal(st.tables_read, 0);
  uint64_t live1[] = {1};
  expect_probes_agree(fx->index, live1, 1);

  /* built but never added: not in the index. */
  index_sync_table_built(fx->sync, 2, table_filter(2, M, K, SEED), NULL, NULL, 0);
  assert_false(value_index_contains(fx->index, 2));
  run_ok(fx, INDEX_RUN_ALL, 0);
  assert_false(value_index_contains(fx->index, 2));
  assert_int_equal(fx->calls, 0);

  /* removed: the leaf goes. */
  index_sync_table_removed(fx->sync, 1);
  assert_false(value_index_contains(fx->index, 1));
  assert_int_equal(index_sync_leaf_source(fx->sync, 1), INDEX_LEAF_NONE);
  index_sync_get_stats(fx->sync, &st);
  assert_int_equal(st.tables_removed, 1);
  /* A table built but never installed, then dropped: it had no leaf to remove. */
  index_sync_table_removed(fx->sync, 2);
  assert_false(value_index_contains(fx->index, 2));
  index_sync_get_stats(fx->sync, &st);
  assert_int_equal(st.tables_removed, 1);
  /* Removing an unknown table changes nothing. */
  index_sync_table_removed(fx->sync, 40);
  assert_int_equal(value_index_leaf_count(fx->index), 0);

  /* added without a built filter (a live table at open): marked, read by run. */
  index_sync_table_added(fx->sync, 3, 300);
  assert_false(value_index_contains(fx->index, 3));
  assert_true(index_sync_pending(fx->sync, 0));
  assert_int_equal(index_sync_leaf_source(fx->sync, 3), INDEX_LEAF_NONE);
  run_ok(fx, INDEX_RUN_ALL, 0);
  assert_int_equal(fx->calls, 1);
  assert_int_equal(fx->calls_of[3], 1);
  assert_true(value_index_contains(fx->index, 3));
  assert_int_equal(index_sync_leaf_source(fx->sync, 3), INDEX_LEAF_READ);
  assert_false(index_sync_pending(fx->sync, 0));
  index_sync_get_stats(fx->sync, &st);
  assert_int_equal(st.tables_read, 1);
  assert_int_equal(st.read_bytes, 100);
  uint64_t live3[] = {3};
  expect_probes_agree(fx->index, live3, 1);
  /* A second run reads nothing more. */
  run_ok(fx, INDEX_RUN_ALL, 0);
  assert_int_equal(fx->calls, 1);
  err_t err;
  assert_int_equal(value_index_validate(fx->index, &err), BFH_OK);
}

/* ---- 2. Pulled reports -------------------------------------------------------------------- */

/* A table listed again with another id (another file under its number, same size): its leaf
   goes at once and is read again; an id of 0 (not known) changes nothing. */
static void test_listed_replaced(void **state) {
  (void)state;
  fixture_t *fx = fx_get();
  fx_open(fx, 0, 0, 0);
  index_table_t first[] = {{1, 100, 11}, {2, 200, 22}};
  list_ok(fx, first, 2, NULL);
  run_ok(fx, INDEX_RUN_ALL, 0);
  assert_int_equal(fx->calls, 2);
  index_table_t unknown[] = {{1, 100, 0}, {2, 200, 22}};
  list_ok(fx, unknown, 2, NULL);
  assert_false(index_sync_pending(fx->sync, 0));
  index_table_t replaced[] = {{1, 100, 11}, {2, 200, 23}};
  list_ok(fx, replaced, 2, NULL);
  assert_true(value_index_contains(fx->index, 1));
  assert_false(value_index_contains(fx->index, 2)); /* scanned until read again */
  assert_int_equal(index_sync_leaf_source(fx->sync, 2), INDEX_LEAF_NONE);
  assert_true(index_sync_pending(fx->sync, 0));
  index_sync_stats_t st;
  index_sync_get_stats(fx->sync, &st);
  assert_int_equal(st.tables_replaced, 1);
  run_ok(fx, INDEX_RUN_ALL, 0);
  assert_int_equal(fx->calls_of[2], 2);
  assert_int_equal(fx->calls_of[1], 1);
  assert_true(value_index_contains(fx->index, 2));
  assert_int_equal(index_sync_leaf_source(fx->sync, 2), INDEX_LEAF_READ);
  list_ok(fx, replaced, 2, NULL); /* the same id again: nothing to read */
  assert_false(index_sync_pending(fx->sync, 0));
  uint64_t live[] = {1, 2};
  expect_probes_agree(fx->index, live, 2);
}

static void test_pulled_reports(void **state) {
  (void)state;
  fixture_t *fx = fx_get();
  fx_open(fx, 0, 0, 0);
  index_sync_stats_t st;

  /* unsorted */
  index_table_t all[] = {{5, 500, 0}, {1, 100, 0}, {4, 400, 0}, {2, 200, 0}, {3, 300, 0}};
  list_ok(fx, all, 5, NULL);
  assert_true(index_sync_pending(fx->sync, 0));
  for (uint64_t t = 1; t <= 5; t++) {
    assert_false(value_index_contains(fx->index, t));
    assert_int_equal(index_sync_leaf_source(fx->sync, t), INDEX_LEAF_NONE);
  }
  assert_int_equal(fx->calls, 0); /* listing reads nothing */
  run_ok(fx, INDEX_RUN_ALL, 0);
  assert_int_equal(fx->calls, 5);
  assert_false(index_sync_pending(fx->sync, 0));
  for (uint64_t t = 1; t <= 5; t++) {
    assert_int_equal(fx->calls_of[t], 1);
    assert_true(value_index_contains(fx->index, t));
    assert_int_equal(index_sync_leaf_source(fx->sync, t), INDEX_LEAF_READ);
  }
  uint64_t live5[] = {1, 2, 3, 4, 5};
  expect_probes_agree(fx->index, live5, 5);

  /* Relisting the same tables reads nothing again. */
  list_ok(fx, all, 5, NULL);
  assert_false(index_sync_pending(fx->sync, 0));
  run_ok(fx, INDEX_RUN_ALL, 0);
  assert_int_equal(fx->calls, 5);

  /* A list without 2 and 4: gone at once (no view pinned). */
  index_table_t some[] = {{1, 100, 0}, {3, 300, 0}, {5, 500, 0}};
  list_ok(fx, some, 3, NULL);
  assert_false(value_index_contains(fx->index, 2));
  assert_false(value_index_contains(fx->index, 4));
  assert_int_equal(index_sync_leaf_source(fx->sync, 2), INDEX_LEAF_NONE);
  assert_int_equal(value_index_leaf_count(fx->index), 3);
  index_sync_get_stats(fx->sync, &st);
  assert_int_equal(st.tables_removed, 2);
  uint64_t live3[] = {1, 3, 5};
  expect_probes_agree(fx->index, live3, 3);

  /* 6 cannot be read (corrupt), 7 has vanished (NOT_FOUND), 8 is fine. */
  fx->fail_of[6] = BFH_E_CORRUPT;
  fx->fail_of[7] = BFH_NOT_FOUND;
  index_table_t more[] = {{1, 100, 0}, {3, 300, 0}, {5, 500, 0},
                          {6, 600, 0}, {7, 700, 0}, {8, 800, 0}};
  list_ok(fx, more, 6, NULL);
  err_t err;
  assert_int_equal(index_sync_run(fx->sync, INDEX_RUN_ALL, 0, &err), BFH_OK); /* not returned */
  assert_int_equal(fx->calls_of[6], 1);
  assert_int_equal(fx->calls_of[7], 1);
  assert_int_equal(fx->calls_of[8], 1);
  assert_false(value_index_contains(fx->index, 6));
  assert_false(value_index_contains(fx->index, 7));
  assert_true(value_index_contains(fx->index, 8));
  assert_int_equal(index_sync_leaf_source(fx->sync, 6), INDEX_LEAF_UNREADABLE);
  assert_int_equal(index_sync_leaf_source(fx->sync, 7), INDEX_LEAF_NONE);
  assert_int_equal(index_sync_leaf_source(fx->sync, 8), INDEX_LEAF_READ);
  index_sync_get_stats(fx->sync, &st);
  assert_int_equal(st.tables_unreadable, 1);
  assert_non_null(strstr(st.last_unreadable, "test table 6"));
  assert_true(index_sync_pending(fx->sync, 0)); /* 7 stays marked */

  /* Next runs: 6 is never retried (even when relisted), 7 is, until it reads. */
  run_ok(fx, INDEX_RUN_ALL, 0);
  assert_int_equal(fx->calls_of[6], 1);
  assert_int_equal(fx->calls_of[7], 2);
  fx->fail_of[6] = BFH_OK;
  fx->fail_of[7] = BFH_OK;
  list_ok(fx, more, 6, NULL);
  run_ok(fx, INDEX_RUN_ALL, 0);
  assert_int_equal(fx->calls_of[6], 1);
  assert_int_equal(fx->calls_of[7], 3);
  assert_int_equal(fx->calls_of[8], 1);
  assert_int_equal(index_sync_leaf_source(fx->sync, 6), INDEX_LEAF_UNREADABLE);
  assert_int_equal(index_sync_leaf_source(fx->sync, 7), INDEX_LEAF_READ);
  assert_true(value_index_contains(fx->index, 7));
  assert_false(value_index_contains(fx->index, 6));
  assert_false(index_sync_pending(fx->sync, 0));
  index_sync_get_stats(fx->sync, &st);
  assert_int_equal(st.tables_unreadable, 1);
  assert_int_equal(st.tables_read, 5 + 2);

  /* The unreadable table is scanned by select (no leaf), never skipped. */
  uint64_t v = 8 * 1000;
  probe_t pr;
  value_index_probe(fx->index, &v, sizeof v, &pr);
  uint64_t nums[] = {6, 8};
  uint8_t scan[2];
  assert_int_equal(
      value_index_select(fx->index, value_index_by_hierarchy, &pr, nums, 2, scan, NULL, &err),
      BFH_OK);
  assert_int_equal(scan[0], 1);
  assert_int_equal(scan[1], 1);

  /* The empty list: everything goes, the unreadable table with no leaf to remove. */
  index_table_t none[1] = {{0, 0, 0}}; /* n = 0 with a valid pointer; NULL: see below */
  list_ok(fx, none, 0, NULL);
  assert_int_equal(value_index_leaf_count(fx->index), 0);
  index_sync_get_stats(fx->sync, &st);
  assert_int_equal(st.tables_removed, 2 + 5);
  assert_int_equal(value_index_validate(fx->index, &err), BFH_OK);
}

/* The empty list given as (NULL, 0) is an empty list (it once reached memcpy(sorted, NULL, 0),
   undefined behaviour that UBSan reports). */
static void test_listed_null_empty(void **state) {
  (void)state;
  fixture_t *fx = fx_get();
  fx_open(fx, 0, 0, 0);
  index_table_t all[] = {{1, 100, 0}};
  list_ok(fx, all, 1, NULL);
  run_ok(fx, INDEX_RUN_ALL, 0);
  assert_true(value_index_contains(fx->index, 1));
  list_ok(fx, NULL, 0, NULL);
  assert_false(value_index_contains(fx->index, 1));
}

/* ---- 3. Views ----------------------------------------------------------------------------- */

static void test_views_keep_leaves(void **state) {
  (void)state;
  fixture_t *fx = fx_get();
  fx_open(fx, 0, 0, 0);
  index_sync_stats_t st;

  index_table_t all[] = {{1, 100, 0}, {2, 200, 0}, {3, 300, 0}};
  uint64_t e1 = 0, e2 = 0;
  list_ok(fx, all, 3, &e1);
  run_ok(fx, INDEX_RUN_ALL, 0);
  for (uint64_t t = 1; t <= 3; t++) assert_true(value_index_contains(fx->index, t));

  /* A list without 2 (itself pinning a view): the view at e1 may still list 2. */
  index_table_t some[] = {{1, 100, 0}, {3, 300, 0}};
  list_ok(fx, some, 2, &e2);
  assert_true(e2 > e1);
  assert_true(value_index_contains(fx->index, 2));
  assert_int_equal(index_sync_leaf_source(fx->sync, 2), INDEX_LEAF_NONE); /* gone */
  index_sync_get_stats(fx->sync, &st);
  assert_int_equal(st.tables_removed, 0);

  /* Unpinning the newer view (which does not list 2) changes nothing. */
  index_sync_view_unpin(fx->sync, e2);
  assert_true(value_index_contains(fx->index, 2));
  /* A run meanwhile does not reread or drop it. */
  run_ok(fx, INDEX_RUN_ALL, 0);
  assert_int_equal(fx->calls, 3);
  assert_true(value_index_contains(fx->index, 2));

  /* Unpinning the view that lists 2: its leaf goes. */
  index_sync_view_unpin(fx->sync, e1);
  assert_false(value_index_contains(fx->index, 2));
  assert_true(value_index_contains(fx->index, 1));
  assert_true(value_index_contains(fx->index, 3));
  index_sync_get_stats(fx->sync, &st);
  assert_int_equal(st.tables_removed, 1);

  /* Two views at the same epoch: the leaf stays until both are unpinned. */
  uint64_t a = 0, b = 0;
  list_ok(fx, some, 2, &a);
  list_ok(fx, some, 2, &b);
  index_table_t one[] = {{1, 100, 0}};
  list_ok(fx, one, 1, NULL);
  assert_true(value_index_contains(fx->index, 3));
  index_sync_view_unpin(fx->sync, a);
  assert_true(value_index_contains(fx->index, 3));
  index_sync_view_unpin(fx->sync, b);
  assert_false(value_index_contains(fx->index, 3));
  err_t err;
  assert_int_equal(value_index_validate(fx->index, &err), BFH_OK);
}

/* ---- 4. Aged runs ------------------------------------------------------------------------- */

static void test_run_aged(void **state) {
  (void)state;
  fixture_t *fx = fx_get();
  fx_open(fx, 0, 0, 0);
  const uint64_t old = UINT64_MAX / 2;
  index_table_t all[] = {{1, 100, 0}, {2, 200, 0}};
  list_ok(fx, all, 2, NULL);
  run_ok(fx, INDEX_RUN_AGED, old);
  assert_int_equal(fx->calls, 0);
  assert_false(value_index_contains(fx->index, 1));
  assert_false(index_sync_pending(fx->sync, old));
  assert_true(index_sync_pending(fx->sync, 0));
  /* RUN_ALL ignores min_age_ns. */
  index_table_t three[] = {{1, 100, 0}, {2, 200, 0}, {3, 300, 0}};
  list_ok(fx, three, 3, NULL);
  run_ok(fx, INDEX_RUN_AGED, 0);
  assert_int_equal(fx->calls, 3);
  for (uint64_t t = 1; t <= 3; t++) {
    assert_true(value_index_contains(fx->index, t));
    assert_int_equal(index_sync_leaf_source(fx->sync, t), INDEX_LEAF_READ);
  }
  index_table_t four[] = {{1, 100, 0}, {2, 200, 0}, {3, 300, 0}, {4, 400, 0}};
  list_ok(fx, four, 4, NULL);
  run_ok(fx, INDEX_RUN_ALL, old);
  assert_int_equal(fx->calls, 4);
  assert_true(value_index_contains(fx->index, 4));
  assert_false(index_sync_pending(fx->sync, 0));
}

/* A table that a view lists without a leaf is due at once (its searches read it whole); a
   listing without a view marks nothing, and a table met after it was indexed is not read
   again. */
static void test_run_aged_met(void **state) {
  (void)state;
  fixture_t *fx = fx_get();
  fx_open(fx, 0, 0, 0);
  const uint64_t old = UINT64_MAX / 2;
  index_table_t two[] = {{1, 100, 0}, {2, 200, 0}};
  list_ok(fx, two, 2, NULL);
  assert_false(index_sync_take_met(fx->sync));
  run_ok(fx, INDEX_RUN_AGED, old);
  assert_int_equal(fx->calls, 0);
  uint64_t a;
  list_ok(fx, two, 2, &a);
  assert_true(index_sync_take_met(fx->sync));
  assert_false(index_sync_take_met(fx->sync)); /* taken */
  assert_true(index_sync_pending(fx->sync, old));
  run_ok(fx, INDEX_RUN_AGED, old);
  assert_int_equal(fx->calls, 2);
  assert_true(value_index_contains(fx->index, 1));
  assert_true(value_index_contains(fx->index, 2));
  /* Table 3 new, listed by a view: met; 1 and 2, indexed, are not marked again. */
  index_table_t three[] = {{1, 100, 0}, {2, 200, 0}, {3, 300, 0}};
  uint64_t b;
  list_ok(fx, three, 3, &b);
  assert_true(index_sync_take_met(fx->sync));
  uint64_t c;
  list_ok(fx, three, 3, &c); /* met already: no new mark */
  assert_false(index_sync_take_met(fx->sync));
  run_ok(fx, INDEX_RUN_AGED, old);
  assert_int_equal(fx->calls, 3);
  assert_true(value_index_contains(fx->index, 3));
  assert_false(index_sync_pending(fx->sync, 0));
  index_sync_view_unpin(fx->sync, a);
  index_sync_view_unpin(fx->sync, b);
  index_sync_view_unpin(fx->sync, c);
  err_t err;
  assert_int_equal(value_index_validate(fx->index, &err), BFH_OK);
}

/* ---- 5. Sidecar cache --------------------------------------------------------------------- */

static void test_cache_leaves_in_memory(void **state) {
  (void)state;
  fixture_t *fx = fx_get();
  char path[TEST_PATH_MAX];
  index_sync_stats_t st;
  index_table_t all[] = {{1, 100, 0}, {2, 200, 0}, {3, 300, 0}};
  uint64_t live[] = {1, 2, 3};

  /* First open: read, cache files only at close (the delay never passes). */
  fx_open(fx, 0, 1, UINT64_MAX / 2);
  list_ok(fx, all, 3, NULL);
  run_ok(fx, INDEX_RUN_ALL, 0);
  assert_int_equal(fx->calls, 3);
  for (uint64_t t = 1; t <= 3; t++) {
    assert_int_equal(index_sync_leaf_source(fx->sync, t), INDEX_LEAF_READ);
    cache_file(fx, t, path, sizeof path);
    assert_false(file_exists(path));
  }
  run_ok(fx, INDEX_RUN_ALL, 0); /* not due yet */
  cache_file(fx, 1, path, sizeof path);
  assert_false(file_exists(path));
  index_sync_close_caches(fx->sync);
  for (uint64_t t = 1; t <= 3; t++) {
    cache_file(fx, t, path, sizeof path);
    if (!file_exists(path)) fail_msg("no cache file %s after close", path);
    /* It loads as table t's filter. */
    value_filter_t *f = NULL, *want = table_filter(t, M, K, SEED);
    err_t err;
    block_filter_t *blocks = NULL;
    assert_int_equal(cache_load(fx, path, t, t * 100, &f, &blocks, &err), BFH_OK);
    assert_null(blocks); /* block filters are off in this index */
    assert_memory_equal(f->words, want->words, want->nwords * 8);
    value_filter_destroy(f);
    value_filter_destroy(want);
  }
  fx_close(fx);

  /* Reopen over the same directory: every leaf comes from the cache. */
  fx_open(fx, 0, 1, UINT64_MAX / 2);
  list_ok(fx, all, 3, NULL);
  run_ok(fx, INDEX_RUN_ALL, 0);
  assert_int_equal(fx->calls, 0);
  for (uint64_t t = 1; t <= 3; t++) {
    assert_true(value_index_contains(fx->index, t));
    assert_int_equal(index_sync_leaf_source(fx->sync, t), INDEX_LEAF_CACHED);
  }
  index_sync_get_stats(fx->sync, &st);
  assert_int_equal(st.tables_cached, 3);
  assert_int_equal(st.tables_read, 0);
  expect_probes_agree(fx->index, live, 3);
  fx_close(fx);

  /* A flipped byte in 2's file (inside its filter words) and a new size of 3: both rebuilt
     by read_leaf; 1 still comes from the cache. */
  cache_file(fx, 2, path, sizeof path);
  assert_int_equal(
      test_file_xor_byte(path, LEAF_CACHE_HEADER_BYTES + VALUE_FILTER_HEADER_BYTES + 5, 0x10), 0);
  index_table_t resized[] = {{1, 100, 0}, {2, 200, 0}, {3, 301, 0}};
  fx_open(fx, 0, 1, UINT64_MAX / 2);
  list_ok(fx, resized, 3, NULL);
  run_ok(fx, INDEX_RUN_ALL, 0);
  assert_int_equal(fx->calls, 2);
  assert_int_equal(fx->calls_of[2], 1);
  assert_int_equal(fx->calls_of[3], 1);
  assert_int_equal(index_sync_leaf_source(fx->sync, 1), INDEX_LEAF_CACHED);
  assert_int_equal(index_sync_leaf_source(fx->sync, 2), INDEX_LEAF_READ);
  assert_int_equal(index_sync_leaf_source(fx->sync, 3), INDEX_LEAF_READ);
  expect_probes_agree(fx->index, live, 3);
  /* The stale files were dropped; close writes good ones. */
  index_sync_close_caches(fx->sync);
  {
    value_filter_t *f = NULL;
    block_filter_t *blocks = NULL;
    err_t err;
    assert_int_equal(cache_load(fx, path, 2, 200, &f, &blocks, &err), BFH_OK);
    value_filter_destroy(f);
    cache_file(fx, 3, path, sizeof path);
    assert_int_equal(cache_load(fx, path, 3, 301, &f, &blocks, &err), BFH_OK);
    value_filter_destroy(f);
  }

  /* A table that goes takes its cache file with it. */
  index_table_t two[] = {{2, 200, 0}, {3, 301, 0}};
  list_ok(fx, two, 2, NULL);
  assert_false(value_index_contains(fx->index, 1));
  cache_file(fx, 1, path, sizeof path);
  assert_false(file_exists(path));
  fx_close(fx);
}

static void test_cache_leaves_on_disk(void **state) {
  (void)state;
  fixture_t *fx = fx_get();
  char path[TEST_PATH_MAX];
  index_table_t all[] = {{1, 100, 0}, {2, 200, 0}, {3, 300, 0}, {4, 400, 0}};
  uint64_t live[] = {1, 2, 3, 4};

  /* The cache file is the leaf: written by the run itself, no close needed. */
  fx_open(fx, 1, 1, UINT64_MAX / 2);
  list_ok(fx, all, 4, NULL);
  run_ok(fx, INDEX_RUN_ALL, 0);
  assert_int_equal(fx->calls, 4);
  for (uint64_t t = 1; t <= 4; t++) {
    assert_true(value_index_contains(fx->index, t));
    assert_int_equal(index_sync_leaf_source(fx->sync, t), INDEX_LEAF_READ);
    cache_file(fx, t, path, sizeof path);
    if (!file_exists(path)) fail_msg("leaf on disk without its cache file %s", path);
  }
  value_index_stats_t vst;
  value_index_get_stats(fx->index, &vst);
  assert_int_equal(vst.leaves, 4);
  expect_probes_agree(fx->index, live, 4);
  fx_close(fx);

  /* Reopen: the leaves come from the files. */
  fx_open(fx, 1, 1, UINT64_MAX / 2);
  list_ok(fx, all, 4, NULL);
  run_ok(fx, INDEX_RUN_ALL, 0);
  assert_int_equal(fx->calls, 0);
  for (uint64_t t = 1; t <= 4; t++)
    assert_int_equal(index_sync_leaf_source(fx->sync, t), INDEX_LEAF_CACHED);
  expect_probes_agree(fx->index, live, 4);

  /* Dropping a table removes its leaf and its file; the others still answer. */
  index_table_t three[] = {{1, 100, 0}, {3, 300, 0}, {4, 400, 0}};
  uint64_t live3[] = {1, 3, 4};
  list_ok(fx, three, 3, NULL);
  assert_false(value_index_contains(fx->index, 2));
  cache_file(fx, 2, path, sizeof path);
  assert_false(file_exists(path));
  expect_probes_agree(fx->index, live3, 3);
  err_t err;
  assert_int_equal(value_index_validate(fx->index, &err), BFH_OK);
  fx_close(fx);
}

/* A cache file is bound to its table's contents by the tag: a table made again under the same
   number and size (a database destroyed and made anew in the same directory) has another tag,
   and its old cache file is stale: the table is read again and the file rewritten, whether the
   leaves live in memory or on disk. A filter cache without the tables' tags is refused. */
static void test_cache_bound_to_tag(void **state) {
  (void)state;
  fixture_t *fx = fx_get();
  index_table_t all[] = {{1, 100, 0}, {2, 200, 0}, {3, 300, 0}};
  uint64_t live[] = {1, 2, 3};
  char path[TEST_PATH_MAX];
  for (int on_disk = 0; on_disk <= 1; on_disk++) {
    fx_open(fx, on_disk, 1, 0);
    list_ok(fx, all, 3, NULL);
    run_ok(fx, INDEX_RUN_ALL, 0);
    index_sync_close_caches(fx->sync);
    fx_close(fx);

    fx->tag_of[2] ^= 0x100; /* table 2: same number and size, other bytes */
    fx_open(fx, on_disk, 1, 0);
    list_ok(fx, all, 3, NULL);
    run_ok(fx, INDEX_RUN_ALL, 0);
    assert_int_equal(fx->calls, 1);
    assert_int_equal(fx->calls_of[2], 1);
    assert_int_equal(index_sync_leaf_source(fx->sync, 1), INDEX_LEAF_CACHED);
    assert_int_equal(index_sync_leaf_source(fx->sync, 2), INDEX_LEAF_READ);
    assert_int_equal(index_sync_leaf_source(fx->sync, 3), INDEX_LEAF_CACHED);
    index_sync_stats_t st;
    index_sync_get_stats(fx->sync, &st);
    assert_int_equal(st.cache_stale, 1);
    expect_probes_agree(fx->index, live, 3);
    index_sync_close_caches(fx->sync);
    fx_close(fx);
    /* The file was rewritten for the new contents. */
    cache_file(fx, 2, path, sizeof path);
    value_filter_t *f = NULL;
    block_filter_t *blocks = NULL;
    err_t err;
    assert_int_equal(cache_load(fx, path, 2, 200, &f, &blocks, &err), BFH_OK);
    value_filter_destroy(f);
    block_filter_destroy(blocks);
  }

  err_t err;
  value_index_params_t p = {M, K, SEED, 3, 0, HIERARCHY_SIMILARITY, 0, NULL, 0, 0};
  fx->index = value_index_create(&p, &err);
  assert_non_null(fx->index);
  fx->sync = index_sync_create(fx->index, &err);
  assert_non_null(fx->sync);
  index_source_t src = {.read_leaf = test_read_leaf, .ctx = fx, .cache_dir = fx->cache};
  assert_int_equal(index_sync_set_source(fx->sync, &src, &err), BFH_E_INVALID);
}

/* A cache made without block filters (with them off, or by a version before them) is
   upgraded lazily: a reopen with block filters on loads every leaf from the cache at once
   and reads no table; a later run (not before the tables are min_age old) reads each table
   again for its block filter, and the cache files are rewritten with it, so that the next
   reopen reads no table. A block filter read_leaf reports damaged is counted with its
   message; the table keeps its leaf and is not read again for it in this open. */
static void test_cache_upgrade(void **state) {
  (void)state;
  fixture_t *fx = fx_get();
  index_table_t all[] = {{1, 100, 0}, {2, 200, 0}, {3, 300, 0}};
  uint64_t live[] = {1, 2, 3};
  block_index_stats_t bs;
  index_sync_stats_t st;
  fx->block_bits = 0;
  fx_open(fx, 0, 1, 0);
  list_ok(fx, all, 3, NULL);
  run_ok(fx, INDEX_RUN_ALL, 0);
  index_sync_close_caches(fx->sync);
  fx_close(fx);

  fx->block_bits = BLOCK_FILTER_DEFAULT_BITS;
  fx->damaged_blocks_of[3] = 1;
  fx_open(fx, 0, 1, 0);
  list_ok(fx, all, 3, NULL);
  run_ok(fx, INDEX_RUN_ALL, 0);
  assert_int_equal(fx->calls, 0);
  block_index_get_stats(value_index_blocks(fx->index), &bs);
  assert_int_equal(bs.tables, 0);
  assert_true(index_sync_pending(fx->sync, 0));
  run_ok(fx, INDEX_RUN_AGED, UINT64_MAX / 2); /* not old enough */
  assert_int_equal(fx->calls, 0);
  run_ok(fx, INDEX_RUN_AGED, 0);
  assert_int_equal(fx->calls, 3);
  assert_false(index_sync_pending(fx->sync, 0));
  index_sync_get_stats(fx->sync, &st);
  assert_int_equal(st.blocks_upgraded, 2);
  assert_int_equal(st.blocks_damaged, 1);
  assert_non_null(strstr(st.last_blocks_damaged, "test table 3: block filter"));
  assert_int_equal(st.tables_cached, 3);
  for (uint64_t t = 1; t <= 3; t++) {
    assert_int_equal(index_sync_leaf_source(fx->sync, t), INDEX_LEAF_CACHED);
    assert_int_equal(block_index_has(value_index_blocks(fx->index), t), t != 3);
  }
  expect_probes_agree(fx->index, live, 3);
  run_ok(fx, INDEX_RUN_ALL, 0); /* nothing left to do */
  assert_int_equal(fx->calls, 3);
  index_sync_close_caches(fx->sync);
  fx_close(fx);

  /* The rewritten files hold the block filters: the reopen reads only table 3, whose
     filter was damaged (its file was not rewritten), for its block filter. */
  char path[TEST_PATH_MAX];
  cache_file(fx, 1, path, sizeof path);
  value_filter_t *f = NULL;
  block_filter_t *blocks = NULL;
  err_t err;
  assert_int_equal(cache_load(fx, path, 1, 100, &f, &blocks, &err), BFH_OK);
  assert_non_null(blocks);
  assert_int_equal(block_filter_blocks(blocks), 2);
  value_filter_destroy(f);
  block_filter_destroy(blocks);
  fx->damaged_blocks_of[3] = 0;
  fx_open(fx, 0, 1, 0);
  list_ok(fx, all, 3, NULL);
  run_ok(fx, INDEX_RUN_ALL, 0);
  assert_int_equal(fx->calls, 0);
  index_sync_get_stats(fx->sync, &st);
  assert_int_equal(st.blocks_added, 2);
  run_ok(fx, INDEX_RUN_ALL, 0);
  assert_int_equal(fx->calls, 1);
  assert_int_equal(fx->calls_of[3], 1);
  assert_true(block_index_has(value_index_blocks(fx->index), 3));
  fx_close(fx);
}

/* ---- 6. The value hook -------------------------------------------------------------------- */

static const char *const g_values[] = {"apple", "banana", "cherry"};

/* Checks the hook's block filter meta block: apple in the data block at (0, 100), banana in
   the one at (100, 200), whose other entry (cherry) is a deletion. */
static void expect_block_meta(const lsm_meta_block_t *meta) {
  assert_string_equal(meta->name, "bfh.block_filter");
  assert_string_equal(meta->name, VALUE_HOOK_BLOCKS_META_NAME);
  block_filter_t *bf = NULL;
  err_t err;
  assert_int_equal(block_filter_deserialize(meta->data, meta->size, &bf, &err), BFH_OK);
  assert_int_equal(block_filter_blocks(bf), 2);
  assert_int_equal(block_filter_values(bf), 2);
  for (uint32_t i = 0; i < 2; i++) {
    uint32_t out[2];
    uint32_t n = block_filter_probe(bf, bfh_hash64(g_values[i], strlen(g_values[i]), SEED), out);
    int named = 0;
    for (uint32_t j = 0; j < n; j++) named |= block_filter_ref(bf, out[j]).offset == 100 * i;
    assert_true(named);
  }
  block_filter_destroy(bf);
}

static int read_mem(void *arg, uint64_t off, size_t len, void *buf, err_t *err) {
  const lsm_meta_block_t *chunks = arg;
  if (off > chunks->size || len > chunks->size - off)
    return err_set(err, BFH_E_CORRUPT, "read past the chunks");
  memcpy(buf, (const uint8_t *)chunks->data + off, len);
  return BFH_OK;
}

/* The value-to-block map's two meta blocks name each value's block exactly. */
static void expect_map_meta(const lsm_meta_block_t *head, const lsm_meta_block_t *chunks) {
  assert_string_equal(head->name, VALUE_BLOCK_MAP_HEAD_NAME);
  assert_string_equal(chunks->name, VALUE_BLOCK_MAP_CHUNKS_NAME);
  value_block_map_t *m = NULL;
  err_t err;
  assert_int_equal(value_block_map_open(head->data, head->size, &m, &err), BFH_OK);
  assert_int_equal(value_block_map_blocks(m), 2);
  assert_int_equal(value_block_map_entries(m), 2);
  for (uint32_t i = 0; i < 2; i++) {
    uint32_t out[2], n = 0;
    uint64_t chunks_read = 0;
    assert_int_equal(value_block_map_probe(m, bfh_hash64(g_values[i], strlen(g_values[i]), SEED),
                                           read_mem, (void *)chunks, out, NULL, &n, &chunks_read, NULL, &err),
                     BFH_OK);
    assert_int_equal(n, 1);
    assert_int_equal(value_block_map_ref(m, out[0]).offset, 100 * i);
    assert_int_equal(chunks_read, 1);
  }
  value_block_map_destroy(m);
}

/* Drives one table through begin/add/block_written/finish and checks its meta blocks (the
   block filter's too, with_blocks >= 1; the value-to-block map's too, with_blocks == 2);
   returns the state for end(). Adds apple and banana as values and cherry as a deletion, in
   two data blocks. */
static void *hook_build(const lsm_table_hook_t *hook, uint64_t number, int with_blocks) {
  void *ts = hook->begin(hook->ctx, number);
  assert_non_null(ts);
  hook->add(ts, "k1", 2, g_values[0], strlen(g_values[0]), 1, LSM_TYPE_VALUE);
  hook->block_written(ts, 0, 100);
  hook->add(ts, "k2", 2, g_values[1], strlen(g_values[1]), 2, LSM_TYPE_VALUE);
  hook->add(ts, "k3", 2, g_values[2], strlen(g_values[2]), 3, LSM_TYPE_DELETION);
  hook->block_written(ts, 100, 200);
  const lsm_meta_block_t *blocks = NULL;
  size_t n = 0;
  assert_int_equal(hook->finish(ts, &blocks, &n), BFH_OK);
  assert_int_equal(n, with_blocks == 2 ? 4 : with_blocks ? 2 : 1);
  if (with_blocks) expect_block_meta(&blocks[1]);
  if (with_blocks == 2) expect_map_meta(&blocks[2], &blocks[3]);
  assert_non_null(blocks);
  assert_string_equal(blocks[0].name, "bfh.value_filter");
  assert_string_equal(blocks[0].name, VALUE_HOOK_META_NAME);
  assert_int_equal(blocks[0].size, value_filter_serialized_size(M));
  value_filter_t *f = NULL;
  err_t err;
  assert_int_equal(value_filter_deserialize(blocks[0].data, blocks[0].size, &f, &err), BFH_OK);
  assert_int_equal(f->m, M);
  assert_int_equal(f->k, K);
  assert_int_equal(f->seed, SEED);
  assert_true(value_filter_may_contain(f, g_values[0], strlen(g_values[0])));
  assert_true(value_filter_may_contain(f, g_values[1], strlen(g_values[1])));
  /* Exactly the two values' bits: the deletion added none. */
  value_filter_t *want = value_filter_create(M, K, SEED);
  assert_non_null(want);
  value_filter_add(want, g_values[0], strlen(g_values[0]));
  value_filter_add(want, g_values[1], strlen(g_values[1]));
  assert_memory_equal(f->words, want->words, want->nwords * 8);
  value_filter_destroy(want);
  value_filter_destroy(f);
  return ts;
}

static int index_has_value(value_index_t *vi, const char *val, uint64_t number) {
  probe_t pr;
  value_index_probe(vi, val, strlen(val), &pr);
  u64vec_t out;
  u64vec_init(&out);
  err_t err;
  assert_int_equal(value_index_candidates(vi, value_index_by_hierarchy, &pr, &out, NULL, &err),
                   BFH_OK);
  int has = in_vec(&out, number);
  u64vec_release(&out);
  return has;
}

static void test_value_hook(void **state) {
  (void)state;
  fixture_t *fx = fx_get();
  fx_open(fx, 0, 0, 0);
  err_t err;
  value_hook_t *h =
      value_hook_create(fx->sync, M, K, SEED, BLOCK_FILTER_DEFAULT_BITS, fx->dir, &err);
  assert_non_null(h);
  const lsm_table_hook_t *hook = value_hook_table_hook(h);
  assert_non_null(hook);
  value_hook_stats_t hs;

  /* A complete table: built, then installed, then dropped. */
  void *ts = hook_build(hook, 7, 1);
  uint64_t offsets[] = {4096, 8192};
  hook->end(ts, offsets);
  value_hook_get_stats(h, &hs);
  assert_int_equal(hs.tables_built, 1);
  assert_int_equal(hs.tables_failed, 0);
  assert_int_equal(hs.values_added, 2);
  assert_false(value_index_contains(fx->index, 7)); /* not live yet */
  assert_false(block_index_has(value_index_blocks(fx->index), 7));
  hook->table_added(hook->ctx, 7, 5000);
  assert_true(value_index_contains(fx->index, 7));
  assert_true(block_index_has(value_index_blocks(fx->index), 7)); /* with its leaf */
  assert_int_equal(index_sync_leaf_source(fx->sync, 7), INDEX_LEAF_BUILT);
  assert_true(index_has_value(fx->index, "apple", 7));
  assert_true(index_has_value(fx->index, "banana", 7));
  run_ok(fx, INDEX_RUN_ALL, 0);
  assert_int_equal(fx->calls, 0);
  hook->table_removed(hook->ctx, 7);
  assert_false(value_index_contains(fx->index, 7));
  assert_false(block_index_has(value_index_blocks(fx->index), 7));
  assert_int_equal(index_sync_leaf_source(fx->sync, 7), INDEX_LEAF_NONE);

  /* An abandoned table: end(state, NULL) hands nothing over; if it were installed anyway it
     would only be marked to be read. */
  ts = hook_build(hook, 8, 1);
  hook->end(ts, NULL);
  value_hook_get_stats(h, &hs);
  assert_int_equal(hs.tables_built, 1);
  assert_int_equal(hs.tables_failed, 1);
  assert_false(value_index_contains(fx->index, 8));
  hook->table_added(hook->ctx, 8, 800);
  assert_false(value_index_contains(fx->index, 8));
  assert_int_equal(index_sync_leaf_source(fx->sync, 8), INDEX_LEAF_NONE);
  assert_true(index_sync_pending(fx->sync, 0));
  /* An abandoned state that never reached finish is released too (ASan checks). */
  ts = hook->begin(hook->ctx, 9);
  assert_non_null(ts);
  hook->add(ts, "k", 1, "v", 1, 1, LSM_TYPE_VALUE);
  hook->end(ts, NULL);
  value_hook_destroy(h);

  /* Without an index_sync the hook only writes meta blocks. */
  h = value_hook_create(NULL, M, K, SEED, 0, fx->dir, &err);
  assert_non_null(h);
  hook = value_hook_table_hook(h);
  ts = hook_build(hook, 10, 0); /* and, with block bits 0, no block filter */
  hook->end(ts, offsets);
  hook->table_added(hook->ctx, 10, 1000);
  assert_false(value_index_contains(fx->index, 10));
  assert_int_equal(index_sync_leaf_source(fx->sync, 10), INDEX_LEAF_NONE);
  hook->table_removed(hook->ctx, 10);
  value_hook_get_stats(h, &hs);
  assert_int_equal(hs.tables_built, 1);
  assert_int_equal(hs.values_added, 2);
  value_hook_destroy(h);
  value_hook_destroy(NULL);
}

/* The value-to-block map is written only under a layout that reads it (the lean layout with
   block maps; the paper's layout of test_value_hook writes none), and its head enters the
   block index in place of the block filter. */
static void test_value_hook_maps(void **state) {
  (void)state;
  fixture_t *fx = fx_get();
  fx->lean_maps = 1;
  fx_open(fx, 0, 0, 0);
  err_t err;
  value_hook_t *h =
      value_hook_create(fx->sync, M, K, SEED, BLOCK_FILTER_DEFAULT_BITS, fx->dir, &err);
  assert_non_null(h);
  const lsm_table_hook_t *hook = value_hook_table_hook(h);
  void *ts = hook_build(hook, 7, 2);
  uint64_t offsets[] = {4096, 8192};
  hook->end(ts, offsets);
  hook->table_added(hook->ctx, 7, 5000);
  assert_true(value_index_contains(fx->index, 7));
  assert_true(block_index_has_map(value_index_blocks(fx->index), 7));
  assert_true(index_has_value(fx->index, "apple", 7));
  hook->table_removed(hook->ctx, 7);
  assert_false(block_index_has(value_index_blocks(fx->index), 7));
  value_hook_destroy(h);
}

/* ---- Loading at open: one leaf at a time ----------------------------------------------------- */

#define BIG_M 2000000ull /* the paper's m: a leaf of 250,000 bytes */
#define BIG_TABLES 12
#define BIG_VALUES 20000 /* values per big table: number * 10^6 + i */

static void big_path(const fixture_t *fx, uint64_t number, char *out, size_t cap) {
  snprintf(out, cap, "%s/%06llu.big", fx->dir, (unsigned long long)number);
}

/* Writes big table `number`'s filter, serialized, into its file. */
static void big_write(const fixture_t *fx, uint64_t number) {
  value_filter_t *f = value_filter_create(BIG_M, K, SEED);
  assert_non_null(f);
  for (uint64_t i = 0; i < BIG_VALUES; i++) {
    uint64_t v = number * 1000000 + i;
    value_filter_add(f, &v, sizeof v);
  }
  size_t n = value_filter_serialized_size(BIG_M);
  uint8_t *buf = malloc(n);
  assert_non_null(buf);
  value_filter_serialize(f, buf);
  char path[TEST_PATH_MAX];
  big_path(fx, number, path, sizeof path);
  FILE *fp = fopen(path, "wb");
  assert_non_null(fp);
  assert_int_equal(fwrite(buf, 1, n, fp), n);
  fclose(fp);
  free(buf);
  value_filter_destroy(f);
}

/* index_source_t.read_leaf of the big tables: the filter from its file, read whole, and (with
   fx->big_paths) that file and offset as where it is stored, as the own engine gives them. */
static int big_read_leaf(void *ctx, uint64_t number, const value_index_params_t *p,
                         index_leaf_read_t *out, err_t *err) {
  (void)p;
  fixture_t *fx = ctx;
  char path[TEST_PATH_MAX];
  big_path(fx, number, path, sizeof path);
  size_t n = value_filter_serialized_size(BIG_M);
  uint8_t *buf = malloc(n);
  assert_non_null(buf);
  FILE *fp = fopen(path, "rb");
  assert_non_null(fp);
  assert_int_equal(fread(buf, 1, n, fp), n);
  fclose(fp);
  int rc = value_filter_deserialize(buf, n, &out->filter, err);
  free(buf);
  out->bytes_read = n;
  if (rc == BFH_OK && fx->big_paths) {
    out->path = strdup(path);
    assert_non_null(out->path);
    out->offset = 0;
  }
  return rc;
}

/* The loader of an open over BIG_TABLES tables of 250,000-byte leaves, in the lean layout: with
   the source naming the file each filter is stored in, the index holds at most one leaf's
   words at make and one 64 KiB read and one folded leaf at the fold (load_peak_bytes: at most
   one of each, for the loader and the caller that waits for it); without, every leaf waits
   whole until they enter together. Every table's values are found either way. */
static void test_loader_holds_one_leaf(void **state) {
  (void)state;
  fixture_t *fx = fx_get();
  const uint64_t leaf_bytes = BIG_M / 8;
  for (uint64_t t = 1; t <= BIG_TABLES; t++) big_write(fx, t);
  uint64_t peak[2];
  for (int paths = 0; paths < 2; paths++) {
    fx->big_paths = paths;
    err_t err;
    value_index_params_t p = {BIG_M, K, SEED, 3, 0, HIERARCHY_SIMILARITY, 0, NULL, 0, 0};
    p.lean_bits = 3; /* the lean layout with block filters */
    fx->index = value_index_create(&p, &err);
    assert_non_null(fx->index);
    fx->sync = index_sync_create(fx->index, &err);
    assert_non_null(fx->sync);
    index_source_t src = {.read_leaf = big_read_leaf, .ctx = fx};
    assert_int_equal(index_sync_set_source(fx->sync, &src, &err), BFH_OK);
    for (uint64_t t = 1; t <= BIG_TABLES; t++) index_sync_table_added(fx->sync, t, 1000 + t);
    assert_int_equal(index_sync_loader_start(fx->sync, &err), BFH_OK);
    assert_int_equal(index_sync_loader_wait(fx->sync, NULL, &err), BFH_OK);
    value_index_stats_t st;
    value_index_get_stats(fx->index, &st);
    assert_int_equal(st.leaves, BIG_TABLES);
    assert_int_equal(st.fold_damaged, 0);
    peak[paths] = st.load_peak_bytes;
    for (uint64_t t = 1; t <= BIG_TABLES; t++)
      for (uint64_t i = 0; i < BIG_VALUES; i += 97) {
        uint64_t v = t * 1000000 + i;
        probe_t pr;
        value_index_probe(fx->index, &v, sizeof v, &pr);
        uint8_t scan = 0;
        assert_int_equal(
            value_index_select(fx->index, value_index_by_sliced, &pr, &t, 1, &scan, NULL, &err),
            BFH_OK);
        if (!scan)
          fail_msg("paths %d: table %llu value %llu: a false negative", paths,
                   (unsigned long long)t, (unsigned long long)v);
      }
    fx_close(fx);
  }
  print_message("load_peak_bytes: %llu whole, %llu streamed (a leaf: %llu)\n",
                (unsigned long long)peak[0], (unsigned long long)peak[1],
                (unsigned long long)leaf_bytes);
  assert_true(peak[0] >= BIG_TABLES * leaf_bytes);
  assert_true(peak[1] >= leaf_bytes);
  assert_true(peak[1] <= 2 * leaf_bytes + VALUE_INDEX_FOLD_READ_BYTES);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_pushed_reports, fx_setup, fx_teardown),
      cmocka_unit_test_setup_teardown(test_pulled_reports, fx_setup, fx_teardown),
      cmocka_unit_test_setup_teardown(test_listed_null_empty, fx_setup, fx_teardown),
      cmocka_unit_test_setup_teardown(test_listed_replaced, fx_setup, fx_teardown),
      cmocka_unit_test_setup_teardown(test_views_keep_leaves, fx_setup, fx_teardown),
      cmocka_unit_test_setup_teardown(test_run_aged, fx_setup, fx_teardown),
      cmocka_unit_test_setup_teardown(test_run_aged_met, fx_setup, fx_teardown),
      cmocka_unit_test_setup_teardown(test_cache_leaves_in_memory, fx_setup, fx_teardown),
      cmocka_unit_test_setup_teardown(test_cache_leaves_on_disk, fx_setup, fx_teardown),
      cmocka_unit_test_setup_teardown(test_cache_upgrade, fx_setup, fx_teardown),
      cmocka_unit_test_setup_teardown(test_cache_bound_to_tag, fx_setup, fx_teardown),
      cmocka_unit_test_setup_teardown(test_value_hook, fx_setup, fx_teardown),
      cmocka_unit_test_setup_teardown(test_value_hook_maps, fx_setup, fx_teardown),
      cmocka_unit_test_setup_teardown(test_loader_holds_one_leaf, fx_setup, fx_teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

/* search.c tests (search/search.h): the paper's Algorithms 1-3 driven through a small
 * in-memory engine_t defined here and a REAL value_index_t (m = 4096, k = 3, leaves built
 * from each table's values with value_filter_add).
 *
 * This is a unit test of search.c's logic, not an integration test of an engine (the real
 * engines are covered by tests/api/). The test engine is a table-driven miniature LSM: put
 * and del append (key, value, is_value) entries to a memtable array and record the latest
 * version of the key in a separate map; flush moves the memtable into table `next`; a view
 * lists the tables marked in_view (sorted by number); get answers from the latest map. So a
 * test chooses exactly which tables the view lists, which have a leaf in the index, what get
 * answers and which call fails, and counts every scan, acquire and release.
 *
 * For every method (SCAN, LEAVES, HIERARCHY, SLICED, AUTO):
 *   results equal the oracle (keys whose latest value is v), each key once, across 221
 *   values of a random model (fixed seed) and a hand-made one; the tables scanned are
 *   exactly the view's tables without a leaf plus those whose leaf says maybe (SCAN: all);
 *   search.c's counters (tables_scanned, tables_matched, candidates, entries, bytes, leaf
 *   counters) match the engine's; stale, deleted and longer values are not reported; get,
 *   scan_table, scan_memtables and view_acquire errors come back with their message and the
 *   view is always released; fn returning nonzero stops the search; index == NULL runs
 *   SCAN; search_plan's choices; search_run_tables scans only the given tables.
 * AUTO's block path (tables with block filters built here over blocks of BLOCK_ENTRIES
 * entries; the memtable through e_find_memtables): results equal the oracle for every value,
 * only the blocks a filter names are read and none holding the value is missed, the block
 * counters match; a read through a filter that fails as corrupt falls back to the whole
 * table and drops the filter, unless the table itself is damaged (then that error).
 * Nothing here is probabilistic except one stated non-vacuity bound: which leaf says maybe
 * is computed from the same filters, so a false positive is expected, never a failure.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bfh.h"
#include "filters/block_filter.h"
#include "filters/value_filter.h"
#include "lsm_hooks/engines/engine.h"
#include "index/value_block_map.h"
#include "search/search.h"
#include "index/value_index.h"
#include "util/random.h"

#define M 4096
#define K 3
#define SEED 0x5ea4c4ull
#define ORDER 3
#define MAXT 32         /* table numbers 1..MAXT-1 */
#define MAXE 512        /* entries of a table or of the memtable */
#define MAXK 256        /* distinct keys of a test (and reports of one search) */
#define STR 16          /* room for a key or a value, NUL included */
#define ENTRY_BYTES 32u /* file bytes the test engine says it reads per table entry */

static const bfh_method all_methods[] = {BFH_SEARCH_SCAN, BFH_SEARCH_LEAVES, BFH_SEARCH_HIERARCHY,
                                         BFH_SEARCH_SLICED, BFH_SEARCH_AUTO};
#define NMETHODS (sizeof all_methods / sizeof all_methods[0])

/* ---- The test engine ---------------------------------------------------------------------- */

typedef struct entry {
  char key[STR];
  char val[STR]; /* "" for a deletion */
  int is_value;  /* 0: a deletion */
} entry_t;

typedef struct test_table {
  entry_t e[MAXE];
  size_t n;
  int in_view;     /* listed by the views acquired from now on */
  int scans;       /* scan_table calls */
  int block_scans; /* scan_blocks calls */
  int blocks_read; /* blocks they read */
} test_table_t;

typedef struct latest {
  char key[STR];
  char val[STR];
  int live; /* 0: deleted */
} latest_t;

typedef struct test_engine {
  engine_t base;         /* first: an engine_t * is a test_engine_t * */
  test_table_t t[MAXT];  /* by number; 0 unused */
  uint64_t next;         /* number of the next flushed table */
  entry_t mem[MAXE];     /* the memtable, oldest first */
  size_t nmem;           /* entries in mem */
  latest_t latest[MAXK]; /* the latest version of every key: what get answers */
  size_t nlatest;
  /* counters (engine_reset_counters zeroes them; table scans live in t[]) */
  int acquires, releases, mem_scans, mem_finds, gets;
  /* injected failures: a status to return (BFH_OK: none) */
  int fail_acquire, fail_mem, fail_scan_of[MAXT], fail_blocks_of[MAXT], fail_get;
  char fail_get_key[STR];
} test_engine_t;

/* The view: a copy of the listed tables, freed at release (ASan sees a use after release). */
struct engine_view {
  test_engine_t *owner;
  engine_table_t tables[MAXT];
  size_t n;
};

static void copy_str(char *dst, const void *src, size_t len) {
  assert_true(len < STR);
  memcpy(dst, src, len);
  dst[len] = '\0';
}

static latest_t *latest_find(test_engine_t *te, const char *key) {
  for (size_t i = 0; i < te->nlatest; i++)
    if (strcmp(te->latest[i].key, key) == 0) return &te->latest[i];
  return NULL;
}

/* Appends (key, val) (val NULL: a deletion) to the memtable and makes it the latest. */
static int mem_append(test_engine_t *te, const void *key, size_t key_len, const void *val,
                      size_t val_len, err_t *err) {
  if (te->nmem == MAXE || key_len >= STR || val_len >= STR)
    return err_set(err, BFH_E_INVALID, "test engine: memtable full or entry too long");
  entry_t *en = &te->mem[te->nmem++];
  copy_str(en->key, key, key_len);
  copy_str(en->val, val ? val : "", val ? val_len : 0);
  en->is_value = val != NULL;
  latest_t *l = latest_find(te, en->key);
  if (!l) {
    assert_true(te->nlatest < MAXK);
    l = &te->latest[te->nlatest++];
    memcpy(l->key, en->key, STR);
  }
  memcpy(l->val, en->val, STR);
  l->live = en->is_value;
  return BFH_OK;
}

static int e_close(engine_t *e, err_t *err) {
  (void)err;
  free(e);
  return BFH_OK;
}

static int e_put(engine_t *e, const void *key, size_t key_len, const void *val, size_t val_len,
                 err_t *err) {
  return mem_append((test_engine_t *)e, key, key_len, val, val_len, err);
}

static int e_del(engine_t *e, const void *key, size_t key_len, err_t *err) {
  return mem_append((test_engine_t *)e, key, key_len, NULL, 0, err);
}

static int e_get(engine_t *e, engine_view_t *view, const void *key, size_t key_len, void **val,
                 size_t *val_len, err_t *err) {
  (void)view;
  test_engine_t *te = (test_engine_t *)e;
  char k[STR];
  copy_str(k, key, key_len);
  te->gets++;
  if (te->fail_get != BFH_OK && strcmp(k, te->fail_get_key) == 0)
    return err_set(err, te->fail_get, "test engine: get %s: injected failure", k);
  latest_t *l = latest_find(te, k);
  if (!l || !l->live) return BFH_NOT_FOUND;
  size_t n = strlen(l->val);
  *val = malloc(n ? n : 1);
  assert_non_null(*val);
  memcpy(*val, l->val, n);
  *val_len = n;
  return BFH_OK;
}

/* Moves the memtable into table `next`, listed by the view. */
static int e_flush(engine_t *e, err_t *err) {
  test_engine_t *te = (test_engine_t *)e;
  if (te->next >= MAXT) return err_set(err, BFH_E_INVALID, "test engine: too many tables");
  test_table_t *t = &te->t[te->next++];
  memcpy(t->e, te->mem, te->nmem * sizeof *te->mem);
  t->n = te->nmem;
  t->in_view = 1;
  te->nmem = 0;
  return BFH_OK;
}

static int e_view_acquire(engine_t *e, engine_view_t **view, err_t *err) {
  test_engine_t *te = (test_engine_t *)e;
  if (te->fail_acquire != BFH_OK)
    return err_set(err, te->fail_acquire, "test engine: view: injected failure");
  engine_view_t *v = calloc(1, sizeof *v);
  if (!v) return err_set(err, BFH_E_NOMEM, "test engine: view: out of memory");
  v->owner = te;
  for (uint64_t number = 1; number < MAXT; number++)
    if (te->t[number].in_view)
      v->tables[v->n++] =
          (engine_table_t){number, te->t[number].n * ENTRY_BYTES, 0, ENGINE_SEQ_UNKNOWN};
  te->acquires++;
  *view = v;
  return BFH_OK;
}

static void e_view_release(engine_t *e, engine_view_t *view) {
  test_engine_t *te = (test_engine_t *)e;
  assert_ptr_equal(view->owner, te);
  te->releases++;
  free(view);
}

static size_t e_view_tables(const engine_view_t *view, const engine_table_t **tables) {
  *tables = view->tables;
  return view->n;
}

/* Calls fn for the entries of es[0, n) whose value passes test; counts every entry. */
static void scan_entries(const entry_t *es, size_t n, const engine_value_test_t *test,
                         engine_match_fn fn, void *arg, engine_scan_stats_t *st) {
  for (size_t i = 0; i < n; i++) {
    st->entries++;
    if (engine_value_test_passes(test, es[i].is_value, es[i].val, strlen(es[i].val)) &&
        fn(arg, es[i].key, strlen(es[i].key), 0))
      return;
  }
}

static int e_scan_table(engine_t *e, engine_view_t *view, uint64_t number,
                        const engine_value_test_t *test, engine_match_fn fn, void *arg,
                        engine_scan_stats_t *st, err_t *err) {
  test_engine_t *te = (test_engine_t *)e;
  assert_ptr_equal(view->owner, te);
  /* search.c may only ask for a table of the view it holds */
  assert_true(number < MAXT && engine_tables_contain(view->tables, view->n, number));
  test_table_t *t = &te->t[number];
  t->scans++;
  if (te->fail_scan_of[number] != BFH_OK)
    return err_set(err, te->fail_scan_of[number], "table %06llu: injected read failure",
                   (unsigned long long)number);
  scan_entries(t->e, t->n, test, fn, arg, st);
  st->bytes_read += t->n * ENTRY_BYTES;
  return BFH_OK;
}

static int e_scan_memtables(engine_t *e, engine_view_t *view, const engine_value_test_t *test,
                            engine_match_fn fn, void *arg, engine_scan_stats_t *st, err_t *err) {
  test_engine_t *te = (test_engine_t *)e;
  assert_ptr_equal(view->owner, te);
  te->mem_scans++;
  if (te->fail_mem != BFH_OK) return err_set(err, te->fail_mem, "memtable: injected read failure");
  scan_entries(te->mem, te->nmem, test, fn, arg, st);
  return BFH_OK;
}

/* A table's data blocks: entries [BLOCK_ENTRIES * b, BLOCK_ENTRIES * (b + 1)) form block b,
   which the test engine says lies at block_ref(b). */
#define BLOCK_ENTRIES 4
static block_ref_t block_ref(size_t b) {
  return (block_ref_t){100 + 1000 * b, BLOCK_ENTRIES * ENTRY_BYTES};
}
static size_t block_count(const test_table_t *t) {
  return (t->n + BLOCK_ENTRIES - 1) / BLOCK_ENTRIES;
}

static int e_scan_blocks(engine_t *e, engine_view_t *view, uint64_t number, const block_ref_t *refs,
                         size_t n, const engine_value_test_t *test, engine_match_fn fn, void *arg,
                         engine_scan_stats_t *st, err_t *err) {
  test_engine_t *te = (test_engine_t *)e;
  assert_ptr_equal(view->owner, te);
  assert_true(number < MAXT && engine_tables_contain(view->tables, view->n, number));
  test_table_t *t = &te->t[number];
  t->block_scans++;
  if (te->fail_blocks_of[number] != BFH_OK)
    return err_set(err, te->fail_blocks_of[number], "table %06llu: injected block failure",
                   (unsigned long long)number);
  for (size_t i = 0; i < n; i++) {
    size_t b = (refs[i].offset - 100) / 1000;
    block_ref_t want = block_ref(b);
    if (b >= block_count(t) || want.offset != refs[i].offset || want.size != refs[i].size)
      return err_set(err, BFH_E_CORRUPT, "table %06llu: no block at %llu",
                     (unsigned long long)number, (unsigned long long)refs[i].offset);
    size_t first = b * BLOCK_ENTRIES,
           end = first + BLOCK_ENTRIES < t->n ? first + BLOCK_ENTRIES : t->n;
    t->blocks_read++;
    st->bytes_read += (end - first) * ENTRY_BYTES;
    scan_entries(t->e + first, end - first, test, fn, arg, st);
  }
  return BFH_OK;
}

/* The memtable's value index: only the entries holding the test's value are compared. hash
   must be the search's one hash of it under the index's seed. */
static int e_find_memtables(engine_t *e, engine_view_t *view, const engine_value_test_t *test,
                            uint64_t hash, engine_match_fn fn, void *arg, engine_scan_stats_t *st,
                            err_t *err) {
  test_engine_t *te = (test_engine_t *)e;
  assert_ptr_equal(view->owner, te);
  assert_true(hash == bfh_hash64(test->val, test->val_len, SEED));
  te->mem_finds++;
  if (te->fail_mem != BFH_OK) return err_set(err, te->fail_mem, "memtable: injected read failure");
  for (size_t i = 0; i < te->nmem; i++) {
    const entry_t *en = &te->mem[i];
    if (!engine_value_test_passes(test, en->is_value, en->val, strlen(en->val))) continue;
    st->entries++;
    if (fn(arg, en->key, strlen(en->key), 0)) break;
  }
  return BFH_OK;
}

#define e_iter_create NULL /* not ordered */
#define e_stats NULL
static const engine_ops_t test_ops = ENGINE_OPS("test");

static void engine_reset_counters(test_engine_t *te) {
  for (size_t i = 0; i < MAXT; i++)
    te->t[i].scans = te->t[i].block_scans = te->t[i].blocks_read = 0;
  te->acquires = te->releases = te->mem_scans = te->mem_finds = te->gets = 0;
}

static void put(test_engine_t *te, const char *key, const char *val) {
  assert_int_equal(e_put(&te->base, key, strlen(key), val, strlen(val), NULL), BFH_OK);
}

static void del(test_engine_t *te, const char *key) {
  assert_int_equal(e_del(&te->base, key, strlen(key), NULL), BFH_OK);
}

static void flush(test_engine_t *te) {
  assert_int_equal(e_flush(&te->base, NULL), BFH_OK);
}

/* Does table t hold an entry whose value is val (before validation)? */
static int table_holds(const test_table_t *t, const char *val) {
  for (size_t i = 0; i < t->n; i++)
    if (t->e[i].is_value && strcmp(t->e[i].val, val) == 0) return 1;
  return 0;
}

/* ---- Leaves ------------------------------------------------------------------------------- */

/* The value filter of table t: every value it holds. Client destroys it. */
static value_filter_t *table_filter(const test_table_t *t) {
  value_filter_t *f = value_filter_create(M, K, SEED);
  assert_non_null(f);
  for (size_t i = 0; i < t->n; i++)
    if (t->e[i].is_value) value_filter_add(f, t->e[i].val, strlen(t->e[i].val));
  return f;
}

/* Adds the leaf of table `number` (built from its entries now) to vi. */
static void index_table(value_index_t *vi, test_engine_t *te, uint64_t number) {
  err_t err;
  int rc = value_index_add(vi, number, table_filter(&te->t[number]), NULL, 0, &err);
  if (rc != BFH_OK) fail_msg("value_index_add %llu: %s", (unsigned long long)number, err.msg);
}

/* The block filter of table t (BLOCK_FILTER_DEFAULT_BITS bits per value). Client destroys it. */
static block_filter_t *table_blocks(const test_table_t *t) {
  block_filter_builder_t *b = block_filter_builder_create(BLOCK_FILTER_DEFAULT_BITS);
  assert_non_null(b);
  for (size_t i = 0; i < t->n; i++) {
    if (t->e[i].is_value)
      assert_int_equal(
          block_filter_builder_add(b, bfh_hash64(t->e[i].val, strlen(t->e[i].val), SEED)), BFH_OK);
    if ((i + 1) % BLOCK_ENTRIES == 0 || i + 1 == t->n) {
      block_ref_t r = block_ref(i / BLOCK_ENTRIES);
      assert_int_equal(block_filter_builder_end_block(b, r.offset, r.size), BFH_OK);
    }
  }
  block_filter_t *f;
  err_t err;
  assert_int_equal(block_filter_builder_finish(b, &f, &err), BFH_OK);
  block_filter_builder_destroy(b);
  return f;
}

/* Gives table `number` its block filter (built from its entries now) in vi. */
static void index_blocks(value_index_t *vi, test_engine_t *te, uint64_t number) {
  assert_int_equal(block_index_put(value_index_blocks(vi), number, table_blocks(&te->t[number])),
                   BFH_OK);
}

/* Does the leaf of table `number` say maybe for val? (The same filter the index holds.) */
static int leaf_says_maybe(const test_engine_t *te, uint64_t number, const char *val) {
  value_filter_t *f = table_filter(&te->t[number]);
  int maybe = value_filter_may_contain(f, val, strlen(val));
  value_filter_destroy(f);
  return maybe;
}

/* ---- Fixture ------------------------------------------------------------------------------ */

typedef struct fixture {
  test_engine_t *te;
  value_index_t *vi;
} fixture_t;

static fixture_t g_fx; /* the current test's engine and index; freed by the teardown */

static int fx_teardown(void **state) {
  (void)state;
  if (g_fx.te) e_close(&g_fx.te->base, NULL);
  value_index_destroy(g_fx.vi);
  memset(&g_fx, 0, sizeof g_fx);
  return 0;
}

/* A new empty engine and index (freed by the teardown). */
static void fx_open(void) {
  assert_null(g_fx.te);
  g_fx.te = calloc(1, sizeof *g_fx.te);
  assert_non_null(g_fx.te);
  g_fx.te->base.ops = &test_ops;
  g_fx.te->next = 1;
  value_index_params_t p = {
      M, K, SEED, ORDER, 0, HIERARCHY_SIMILARITY, BLOCK_FILTER_DEFAULT_BITS, NULL, 0, 0};
  err_t err;
  g_fx.vi = value_index_create(&p, &err);
  assert_non_null(g_fx.vi);
}

/* ---- What a search reported --------------------------------------------------------------- */

typedef struct found {
  char keys[MAXK][STR];
  int n;
  int stop_after; /* fn returns nonzero at the stop_after-th report (0: never) */
} found_t;

static int found_count(const found_t *f, const char *key) {
  int c = 0;
  for (int i = 0; i < f->n; i++) c += strcmp(f->keys[i], key) == 0;
  return c;
}

static void found_add(found_t *f, const void *key, size_t len) {
  assert_true(f->n < MAXK);
  copy_str(f->keys[f->n++], key, len);
}

static int on_match(void *arg, const void *key, size_t key_len) {
  found_t *f = arg;
  found_add(f, key, key_len);
  return f->stop_after && f->n >= f->stop_after;
}

/* The keys the oracle expects for val: latest version live and equal to val. */
static int oracle_count(const test_engine_t *te, const char *val) {
  int n = 0;
  for (size_t i = 0; i < te->nlatest; i++)
    n += te->latest[i].live && strcmp(te->latest[i].val, val) == 0;
  return n;
}

/* Asserts f holds exactly the oracle's keys for val, each once. */
static void expect_oracle(const test_engine_t *te, const found_t *f, const char *val) {
  for (size_t i = 0; i < te->nlatest; i++) {
    const latest_t *l = &te->latest[i];
    int want = l->live && strcmp(l->val, val) == 0;
    int got = found_count(f, l->key);
    if (got != want)
      fail_msg("value '%s': key %s reported %d times, want %d", val, l->key, got, want);
  }
  assert_int_equal(f->n, oracle_count(te, val));
}

/* ---- The check every search goes through -------------------------------------------------- */

/* The method search_run runs for `method` with index vi. */
static bfh_method method_run(value_index_t *vi, bfh_method method) {
  if (!vi) return BFH_SEARCH_SCAN;
  return search_plan(vi, method).method;
}

/* Runs search_run(vi, val, method) on te and checks: BFH_OK; the oracle's keys, each once;
   one acquire and one release; the memtables scanned once; each table of the view scanned
   once iff SCAN ran, or it has no leaf, or its leaf says maybe (so every table holding val is
   scanned), and no table outside the view; every counter of st against the engine's. Adds to
   *skipped the view's tables not scanned (may be NULL). */
static void check_search(test_engine_t *te, value_index_t *vi, const char *val, bfh_method method,
                         size_t *skipped) {
  size_t len = strlen(val);
  bfh_method used = method_run(vi, method);
  found_t f = {.n = 0};
  bfh_search_stats st;
  err_t err;
  engine_reset_counters(te);
  int rc = search_run(&te->base, vi, val, len, method, on_match, &f, &st, &err);
  if (rc != BFH_OK) fail_msg("method %d, value '%s': %d %s", (int)method, val, rc, err.msg);
  expect_oracle(te, &f, val);
  assert_int_equal(te->acquires, 1);
  assert_int_equal(te->releases, 1);
  assert_int_equal(te->mem_scans, 1);
  assert_int_equal(st.method_used, used);
  assert_int_equal(st.results, (uint64_t)f.n);

  found_t cand = {.n = 0}; /* distinct keys with val in the scanned tables and the memtable */
  uint64_t live = 0, scanned = 0, matched = 0, entries = te->nmem, positives = 0;
  for (uint64_t number = 1; number < MAXT; number++) {
    const test_table_t *t = &te->t[number];
    int leaf = vi && value_index_contains(vi, number);
    int maybe = leaf && leaf_says_maybe(te, number, val);
    positives += (uint64_t)maybe;
    int want = t->in_view && (used == BFH_SEARCH_SCAN || !leaf || maybe);
    if (t->scans != want)
      fail_msg("method %d, value '%s': table %llu (view %d, leaf %d, maybe %d) scanned %d times",
               (int)method, val, (unsigned long long)number, t->in_view, leaf, maybe, t->scans);
    if (t->in_view && table_holds(t, val)) assert_int_equal(t->scans, 1); /* no false negative */
    live += (uint64_t)t->in_view;
    if (t->in_view && !want && skipped) (*skipped)++;
    if (!want) continue;
    scanned++;
    matched += (uint64_t)table_holds(t, val);
    entries += t->n;
    for (size_t i = 0; i < t->n; i++)
      if (t->e[i].is_value && strcmp(t->e[i].val, val) == 0 && !found_count(&cand, t->e[i].key))
        found_add(&cand, t->e[i].key, strlen(t->e[i].key));
  }
  for (size_t i = 0; i < te->nmem; i++)
    if (te->mem[i].is_value && strcmp(te->mem[i].val, val) == 0 &&
        !found_count(&cand, te->mem[i].key))
      found_add(&cand, te->mem[i].key, strlen(te->mem[i].key));
  assert_int_equal(st.tables_live, live);
  assert_int_equal(st.tables_scanned, scanned);
  assert_int_equal(st.tables_matched, matched);
  assert_int_equal(st.candidates, (uint64_t)cand.n);
  assert_int_equal(st.entries_scanned, entries);
  /* every table scanned is read whole by the test engine */
  uint64_t bytes = 0;
  for (uint64_t number = 1; number < MAXT; number++)
    bytes += (uint64_t)te->t[number].scans * te->t[number].n * ENTRY_BYTES;
  assert_int_equal(st.bytes_read, bytes);
  /* validation asks get about every candidate (none stopped early) */
  assert_int_equal(te->gets, cand.n);
  if (used == BFH_SEARCH_SCAN) {
    assert_int_equal(st.leaf_probes, 0);
    assert_int_equal(st.leaf_positives, 0);
    assert_int_equal(st.internal_probes, 0);
  } else {
    /* every leaf of the index that says maybe, in the view or not */
    assert_int_equal(st.leaf_positives, positives);
    if (used == BFH_SEARCH_LEAVES) {
      assert_int_equal(st.leaf_probes, value_index_leaf_count(vi));
      assert_int_equal(st.internal_probes, 0);
    }
  }
}

/* ---- The models --------------------------------------------------------------------------- */

#define NTABLES 10
#define NKEYS 80
#define NVALUES 200
#define OPS 40 /* random puts and deletes per table and in the memtable */

/* NTABLES flushed tables and a memtable of random puts (values v000..v199) and deletes (1 in
   10) of keys k00..k79; "dup" = v000 in every table and the memtable; "empty" = "" in
   table 1; "memonly" = v001 in the memtable only. Table NTABLES + 1 is a copy of table 2 that
   the view does not list (compacted away, its leaf still in the index). Every table has a
   leaf but 3 and 7 (not indexed yet). */
static void build_random(test_engine_t *te, value_index_t *vi, uint64_t seed) {
  rng_t r;
  rng_init(&r, seed);
  char key[STR], val[STR];
  for (int t = 0; t <= NTABLES; t++) {
    put(te, "dup", "v000");
    if (t == 0) put(te, "empty", "");
    for (int i = 0; i < OPS; i++) {
      snprintf(key, sizeof key, "k%02u", (unsigned)rng_below(&r, NKEYS));
      snprintf(val, sizeof val, "v%03u", (unsigned)rng_below(&r, NVALUES));
      if (rng_below(&r, 10) == 0)
        del(te, key);
      else
        put(te, key, val);
    }
    if (t < NTABLES) flush(te);
  }
  put(te, "memonly", "v001");
  test_table_t *gone = &te->t[te->next++];
  *gone = te->t[2];
  gone->in_view = 0;
  for (uint64_t number = 1; number < te->next; number++)
    if (number != 3 && number != 7) index_table(vi, te, number);
}

/* The hand-made model, value "v" (each key's versions, oldest first):
     a: t1 v, t2 w         latest w: stale, not reported
     b: t1 v, mem del      deleted: not reported
     c: t1 v, t2 v, mem v  reported once
     d: t2 v, mem vv       a longer value: not reported
     e: mem v              the memtable only: reported
     f: t1 v, t2 del, mem v  reported
     h: t1 v               only in table 1: reported
     x0..x9: t3 x0..x9     table 3 does not hold v
   Tables 1, 2, 3 all have leaves. */
static void build_hand(test_engine_t *te, value_index_t *vi) {
  put(te, "a", "v");
  put(te, "b", "v");
  put(te, "c", "v");
  put(te, "f", "v");
  put(te, "h", "v");
  flush(te);
  put(te, "a", "w");
  put(te, "c", "v");
  put(te, "d", "v");
  del(te, "f");
  flush(te);
  char key[STR];
  for (int i = 0; i < 10; i++) {
    snprintf(key, sizeof key, "x%d", i);
    put(te, key, key);
  }
  flush(te);
  del(te, "b");
  put(te, "c", "v");
  put(te, "d", "vv");
  put(te, "e", "v");
  put(te, "f", "v");
  for (uint64_t number = 1; number <= 3; number++) index_table(vi, te, number);
  assert_false(leaf_says_maybe(te, 3, "v")); /* fixed filters: holds or never does */
}

/* ---- Tests -------------------------------------------------------------------------------- */

/* Every method equals the oracle for every value of the random model, and for 20 values no
   table holds, and for the empty value. Non-vacuity bound: a leaf holds at most OPS + 2
   values, so its fill is <= 1 - e^{-3*42/4096} ~ 3% and its false positive rate ~ 3e-5; a
   value is in ~18% of the tables, so the filter methods skip ~70% of the view's tables
   (8 of 10 indexed); the test requires more than half. */
static void test_search_random_model_oracle(void **state) {
  (void)state;
  fx_open();
  build_random(g_fx.te, g_fx.vi, 42);
  size_t skipped = 0, slots = 0, results = 0;
  char val[STR];
  for (int q = 0; q < NVALUES + 21; q++) {
    if (q < NVALUES)
      snprintf(val, sizeof val, "v%03d", q);
    else if (q < NVALUES + 20)
      snprintf(val, sizeof val, "x%03d", q); /* never put */
    else
      val[0] = '\0';
    results += (size_t)oracle_count(g_fx.te, val);
    for (size_t m = 0; m < NMETHODS; m++) {
      size_t before = skipped;
      check_search(g_fx.te, g_fx.vi, val, all_methods[m], &skipped);
      if (method_run(g_fx.vi, all_methods[m]) == BFH_SEARCH_SCAN)
        assert_int_equal(skipped, before);
      else
        slots += NTABLES;
    }
  }
  /* each live key has one latest value, all among those queried */
  size_t live = 0;
  for (size_t i = 0; i < g_fx.te->nlatest; i++) live += (size_t)g_fx.te->latest[i].live;
  assert_int_equal(results, live);
  assert_true(live > NKEYS / 2);
  assert_int_equal(oracle_count(g_fx.te, ""), 1); /* "empty" */
  if (skipped * 2 <= slots) fail_msg("filter methods skipped %zu of %zu tables", skipped, slots);
}

/* The hand-made model: stale, deleted and longer values are not reported, a key in two
   tables and the memtable is reported once, a memtable-only key is. */
static void test_search_validation(void **state) {
  (void)state;
  fx_open();
  build_hand(g_fx.te, g_fx.vi);
  for (size_t m = 0; m < NMETHODS; m++) {
    found_t f = {.n = 0};
    bfh_search_stats st;
    err_t err;
    check_search(g_fx.te, g_fx.vi, "v", all_methods[m], NULL);
    engine_reset_counters(g_fx.te);
    assert_int_equal(
        search_run(&g_fx.te->base, g_fx.vi, "v", 1, all_methods[m], on_match, &f, &st, &err),
        BFH_OK);
    assert_int_equal(f.n, 4);
    assert_int_equal(
        found_count(&f, "c") + found_count(&f, "e") + found_count(&f, "f") + found_count(&f, "h"),
        4);
    assert_int_equal(st.candidates, 7); /* a b c d e f h */
    assert_int_equal(st.results, 4);
    /* table 3's leaf says no, so only SCAN reads it */
    assert_int_equal(g_fx.te->t[3].scans, method_run(g_fx.vi, all_methods[m]) == BFH_SEARCH_SCAN);
    check_search(g_fx.te, g_fx.vi, "vv", all_methods[m], NULL);
    check_search(g_fx.te, g_fx.vi, "w", all_methods[m], NULL);
  }
}

/* A get error, for a key that would be reported or for a stale one, is the search's status
   with get's message; the view is released. */
static void test_search_get_error(void **state) {
  (void)state;
  fx_open();
  build_hand(g_fx.te, g_fx.vi);
  const char *keys[] = {"c", "a"};
  for (size_t m = 0; m < NMETHODS; m++) {
    for (size_t i = 0; i < 2; i++) {
      test_engine_t *te = g_fx.te;
      te->fail_get = BFH_E_IO;
      strcpy(te->fail_get_key, keys[i]);
      engine_reset_counters(te);
      found_t f = {.n = 0};
      err_t err;
      assert_int_equal(
          search_run(&te->base, g_fx.vi, "v", 1, all_methods[m], on_match, &f, NULL, &err),
          BFH_E_IO);
      assert_non_null(strstr(err.msg, "get"));
      assert_non_null(strstr(err.msg, keys[i]));
      assert_int_equal(te->acquires, 1);
      assert_int_equal(te->releases, 1);
      te->fail_get = BFH_OK;
    }
  }
}

/* A table of the view without a leaf is always scanned, even when it does not hold the
   value; a table whose leaf says no is not; a leaf of a table outside the view is counted by
   the filters but its table never read. */
static void test_search_unindexed_tables_scanned(void **state) {
  (void)state;
  fx_open();
  test_engine_t *te = g_fx.te;
  put(te, "k1", "v");
  flush(te); /* 1: holds v, leaf */
  put(te, "k2", "x");
  flush(te); /* 2: no v, leaf */
  put(te, "k3", "v");
  flush(te); /* 3: holds v, no leaf */
  put(te, "k4", "y");
  flush(te); /* 4: no v, no leaf */
  put(te, "k5", "v");
  flush(te); /* 5: holds v, leaf, not in the view (its entry is also in table 6) */
  put(te, "k5", "v");
  flush(te); /* 6: holds v, leaf */
  te->t[5].in_view = 0;
  index_table(g_fx.vi, te, 1);
  index_table(g_fx.vi, te, 2);
  index_table(g_fx.vi, te, 5);
  index_table(g_fx.vi, te, 6);
  assert_false(leaf_says_maybe(te, 2, "v")); /* fixed filters: holds or never does */
  for (size_t m = 0; m < NMETHODS; m++) {
    bfh_method used = method_run(g_fx.vi, all_methods[m]);
    bfh_search_stats st;
    found_t f = {.n = 0};
    err_t err;
    engine_reset_counters(te);
    assert_int_equal(
        search_run(&te->base, g_fx.vi, "v", 1, all_methods[m], on_match, &f, &st, &err), BFH_OK);
    assert_int_equal(f.n, 3);
    assert_int_equal(te->t[1].scans, 1);
    assert_int_equal(te->t[2].scans, used == BFH_SEARCH_SCAN);
    assert_int_equal(te->t[3].scans, 1);
    assert_int_equal(te->t[4].scans, 1);
    assert_int_equal(te->t[5].scans, 0);
    assert_int_equal(te->t[6].scans, 1);
    assert_int_equal(st.tables_live, 5);
    assert_int_equal(st.tables_scanned, used == BFH_SEARCH_SCAN ? 5 : 4);
    assert_int_equal(st.tables_matched, 3);
    if (used != BFH_SEARCH_SCAN) assert_int_equal(st.leaf_positives, 3); /* 1, 5, 6 */
    check_search(te, g_fx.vi, "v", all_methods[m], NULL);
  }
}

/* fn returning nonzero stops the search: BFH_OK, fewer callbacks. */
static void test_search_stops_early(void **state) {
  (void)state;
  fx_open();
  build_hand(g_fx.te, g_fx.vi);
  for (size_t m = 0; m < NMETHODS; m++) {
    for (int stop = 1; stop <= 3; stop++) {
      found_t f = {.n = 0, .stop_after = stop};
      bfh_search_stats st;
      err_t err;
      engine_reset_counters(g_fx.te);
      assert_int_equal(
          search_run(&g_fx.te->base, g_fx.vi, "v", 1, all_methods[m], on_match, &f, &st, &err),
          BFH_OK);
      assert_int_equal(f.n, stop);
      assert_int_equal(st.results, (uint64_t)stop);
      assert_int_equal(g_fx.te->releases, 1);
      for (int i = 0; i < f.n; i++) assert_int_equal(found_count(&f, f.keys[i]), 1);
    }
  }
}

/* index == NULL runs SCAN for every method; fn and st may be NULL; the AUTO rule. */
static void test_search_without_index(void **state) {
  (void)state;
  fx_open();
  build_random(g_fx.te, g_fx.vi, 7);
  for (size_t m = 0; m < NMETHODS; m++) {
    check_search(g_fx.te, NULL, "v000", all_methods[m], NULL);
    check_search(g_fx.te, NULL, "v123", all_methods[m], NULL);
    err_t err;
    assert_int_equal(
        search_run(&g_fx.te->base, NULL, "v000", 4, all_methods[m], NULL, NULL, NULL, &err),
        BFH_OK);
    assert_int_equal(
        search_run(&g_fx.te->base, g_fx.vi, "v000", 4, all_methods[m], NULL, NULL, NULL, &err),
        BFH_OK);
  }
  assert_int_equal(search_plan(NULL, BFH_SEARCH_AUTO).method, BFH_SEARCH_SCAN);
}

/* search_plan: no index: a plain SCAN; a named method runs as named, never by blocks; AUTO
   with no leaves: SCAN; with leaves in memory and k = 3: SLICED (k rows cost less than even
   one leaf probe by the measured constants), with one leaf and k = 16: LEAVES; with a
   saturated leaf (fill^k >= 0.5): SCAN. AUTO reads by blocks as soon as the index holds a
   block filter. */
static void test_search_plan(void **state) {
  (void)state;
  fx_open();
  for (size_t m = 0; m < NMETHODS; m++) {
    assert_int_equal(search_plan(NULL, all_methods[m]).method, BFH_SEARCH_SCAN);
    assert_false(search_plan(NULL, all_methods[m]).by_blocks);
  }
  assert_int_equal(search_plan(g_fx.vi, BFH_SEARCH_AUTO).method, BFH_SEARCH_SCAN);
  char val[STR];
  for (uint64_t number = 1; number <= 4 * ORDER; number++) {
    snprintf(val, sizeof val, "v%llu", (unsigned long long)number);
    put(g_fx.te, "k", val);
    flush(g_fx.te);
    index_table(g_fx.vi, g_fx.te, number);
    assert_int_equal(search_plan(g_fx.vi, BFH_SEARCH_AUTO).method, BFH_SEARCH_SLICED);
  }
  assert_false(search_plan(g_fx.vi, BFH_SEARCH_AUTO).by_blocks);
  check_search(g_fx.te, g_fx.vi, "v3", BFH_SEARCH_AUTO, NULL);
  index_blocks(g_fx.vi, g_fx.te, 1);
  assert_true(search_plan(g_fx.vi, BFH_SEARCH_AUTO).by_blocks);
  for (size_t m = 0; m + 1 < NMETHODS; m++) {
    search_plan_t plan = search_plan(g_fx.vi, all_methods[m]);
    assert_int_equal(plan.method, all_methods[m]);
    assert_false(plan.by_blocks);
  }
  /* An index whose one leaf is saturated: 3000 values in 4096 bits fill 1 - e^{-9000/4096}
     ~ 89% of it, fill^3 ~ 0.70 >= 0.5. */
  value_index_params_t p = {M, K, SEED, ORDER, 0, HIERARCHY_SIMILARITY, 0, NULL, 0, 0};
  err_t err;
  value_index_t *full = value_index_create(&p, &err);
  assert_non_null(full);
  value_filter_t *f = value_filter_create(M, K, SEED);
  assert_non_null(f);
  for (uint32_t i = 0; i < 3000; i++) value_filter_add(f, &i, sizeof i);
  assert_true(value_filter_fpr_estimate(f) >= 0.5);
  assert_int_equal(value_index_add(full, 1, f, NULL, 0, &err), BFH_OK);
  assert_int_equal(search_plan(full, BFH_SEARCH_AUTO).method, BFH_SEARCH_SCAN);
  value_index_destroy(full);
  /* One sparse leaf probed with 16 hashes: cheaper than 16 rows of the sliced index. */
  value_index_params_t p16 = {M, 16, SEED, ORDER, 0, HIERARCHY_SIMILARITY, 0, NULL, 0, 0};
  value_index_t *wide = value_index_create(&p16, &err);
  assert_non_null(wide);
  f = value_filter_create(M, 16, SEED);
  assert_non_null(f);
  value_filter_add(f, "v", 1);
  assert_int_equal(value_index_add(wide, 1, f, NULL, 0, &err), BFH_OK);
  assert_int_equal(search_plan(wide, BFH_SEARCH_AUTO).method, BFH_SEARCH_LEAVES);
  value_index_destroy(wide);
}

/* Runs AUTO for val over tables that have block filters and checks: the oracle's keys, each
   once; the memtables searched through their index, never scanned; every selected table
   with a block filter read through it (only the blocks it names, or whole when it names
   more than half of them), every other selected table whole; no block holding val left
   unread; the block counters against the engine's. Returns the stats. */
static bfh_search_stats check_block_search(test_engine_t *te, value_index_t *vi, const char *val) {
  size_t len = strlen(val);
  found_t f = {.n = 0};
  bfh_search_stats st;
  err_t err;
  engine_reset_counters(te);
  int rc = search_run(&te->base, vi, val, len, BFH_SEARCH_AUTO, on_match, &f, &st, &err);
  if (rc != BFH_OK) fail_msg("value '%s': %d %s", val, rc, err.msg);
  expect_oracle(te, &f, val);
  assert_int_equal(te->mem_scans, 0);
  assert_int_equal(te->mem_finds, 1);
  uint64_t hash = bfh_hash64(val, len, SEED);
  uint64_t probed = 0, blocks = 0;
  bfh_method used = search_plan(vi, BFH_SEARCH_AUTO).method;
  assert_int_equal(st.method_used, used);
  for (uint64_t number = 1; number < MAXT; number++) {
    const test_table_t *t = &te->t[number];
    assert_true(t->scans <= 1 && t->block_scans <= 1);
    if (!t->in_view) continue;
    /* it has a block filter, or had one until a read through it failed */
    int has = block_index_has(value_index_blocks(vi), number) || t->block_scans;
    int leaf = value_index_contains(vi, number);
    int selected = used == BFH_SEARCH_SCAN || !leaf || leaf_says_maybe(te, number, val);
    probed += (uint64_t)(has && selected);
    if (!selected) assert_int_equal(t->scans + t->block_scans, 0);
    blocks += (uint64_t)t->blocks_read;
    /* every block holding val is read: by scan_table, or named by the filter and read */
    for (size_t i = 0; i < t->n; i++) {
      if (!t->e[i].is_value || strcmp(t->e[i].val, val) != 0) continue;
      if (t->scans) continue;
      assert_true(t->block_scans == 1);
      block_filter_t *bf = table_blocks(t);
      uint32_t out[MAXE];
      uint32_t n = block_filter_probe(bf, hash, out);
      int named = 0;
      for (uint32_t j = 0; j < n; j++)
        named |= block_filter_ref(bf, out[j]).offset == block_ref(i / BLOCK_ENTRIES).offset;
      block_filter_destroy(bf);
      assert_true(named);
    }
  }
  assert_int_equal(st.block_filters_probed, probed);
  assert_int_equal(st.blocks_read, blocks);
  return st;
}

/* AUTO by blocks over the random model: every table with a leaf also has a block filter but
   5; table 3 (no leaf) has one, table 7 (no leaf) has none. Across every value the results
   equal the oracle, and most tables holding a value are read by a block or two. */
static void test_search_by_blocks(void **state) {
  (void)state;
  fx_open();
  test_engine_t *te = g_fx.te;
  build_random(te, g_fx.vi, 11);
  for (uint64_t number = 1; number < te->next; number++)
    if (number != 5 && number != 7) index_blocks(g_fx.vi, te, number);
  char val[STR];
  uint64_t blocks = 0, probed = 0;
  for (int v = 0; v < NVALUES + 20; v++) { /* 20 values no table holds */
    snprintf(val, sizeof val, "v%03d", v);
    bfh_search_stats st = check_block_search(te, g_fx.vi, val);
    blocks += st.blocks_read;
    probed += st.block_filters_probed;
  }
  check_block_search(te, g_fx.vi, "");
  check_block_search(te, g_fx.vi, "memonly");
  /* Non-vacuity: the block path ran, and read fewer blocks than the tables it probed hold
     (each table has ~11 blocks; a value sits in about one of them). */
  assert_true(probed > 0);
  assert_true(blocks < probed * 4);
}

/* A table whose read through its block filter fails as corrupt is read whole: the answer is
   the oracle's, the filter is dropped and counted as damaged. If the whole read fails too,
   the table itself is damaged: that error is the search's, and the filter is kept. */
static void test_search_damaged_block_filter(void **state) {
  (void)state;
  fx_open();
  test_engine_t *te = g_fx.te;
  build_hand(te, g_fx.vi);
  for (uint64_t number = 1; number <= 3; number++) index_blocks(g_fx.vi, te, number);
  block_index_t *bi = value_index_blocks(g_fx.vi);
  /* x4 is in table 3's block 1 of 3: read by that block alone. */
  te->fail_blocks_of[3] = BFH_E_CORRUPT;
  te->fail_scan_of[3] = BFH_E_CORRUPT;
  err_t err;
  assert_int_equal(search_run(&te->base, g_fx.vi, "x4", 2, BFH_SEARCH_AUTO, NULL, NULL, NULL, &err),
                   BFH_E_CORRUPT);
  assert_non_null(strstr(err.msg, "injected read failure"));
  assert_true(block_index_has(bi, 3));
  assert_int_equal(te->t[3].block_scans, 1);
  te->fail_scan_of[3] = BFH_OK;
  check_block_search(te, g_fx.vi, "x4");
  assert_int_equal(te->t[3].block_scans, 1);
  assert_int_equal(te->t[3].scans, 1); /* read whole after the failed block read */
  assert_false(block_index_has(bi, 3));
  block_index_stats_t bs;
  block_index_get_stats(bi, &bs);
  assert_int_equal(bs.damaged, 1);
  assert_non_null(strstr(bs.last_damaged, "injected block failure"));
  te->fail_blocks_of[3] = BFH_OK;
  check_block_search(te, g_fx.vi, "x4"); /* table 3 now read whole */
  assert_int_equal(te->t[3].scans, 1);
  assert_int_equal(te->t[3].block_scans, 0);
}

/* A value-to-block map with one entry in one block (what it names does not matter here: the
   planner only counts the tables that have one). */
static value_block_map_t *one_entry_map(void) {
  value_block_map_builder_t *b = value_block_map_builder_create();
  assert_non_null(b);
  assert_int_equal(value_block_map_builder_add(b, 42, 0), BFH_OK);
  assert_int_equal(value_block_map_builder_end_block(b, 0, 100), BFH_OK);
  uint8_t *head, *chunks;
  size_t head_len, chunks_len;
  assert_int_equal(value_block_map_builder_finish(b, &head, &head_len, &chunks, &chunks_len),
                   BFH_OK);
  value_block_map_builder_destroy(b);
  value_block_map_t *m = NULL;
  err_t err;
  assert_int_equal(value_block_map_open(head, head_len, &m, &err), BFH_OK);
  free(head);
  free(chunks);
  return m;
}

/* AUTO's cost model counts a table read through its value-to-block map (a chunk and the
   named blocks) below one read through its block filter: the estimate falls by
   selected x (block filter - map) as tables get maps, and the reader stays "by blocks". */
static void test_plan_map_cost(void **state) {
  (void)state;
  fx_open();
  test_engine_t *te = g_fx.te;
  build_hand(te, g_fx.vi);
  for (uint64_t number = 1; number <= 3; number++) index_blocks(g_fx.vi, te, number);
  block_index_t *bi = value_index_blocks(g_fx.vi);
  search_plan_t filters = search_plan(g_fx.vi, BFH_SEARCH_AUTO);
  assert_true(filters.by_blocks);
  assert_int_equal(block_index_put_map(bi, 1, one_entry_map()), BFH_OK);
  search_plan_t one = search_plan(g_fx.vi, BFH_SEARCH_AUTO);
  for (uint64_t number = 2; number <= 3; number++)
    assert_int_equal(block_index_put_map(bi, number, one_entry_map()), BFH_OK);
  search_plan_t maps = search_plan(g_fx.vi, BFH_SEARCH_AUTO);
  assert_true(one.by_blocks && maps.by_blocks);
  assert_int_equal(one.method, filters.method);
  assert_int_equal(maps.method, filters.method);
  /* cost = select + selected x per table: per table 5 us by filter, 2 us by map, the mean
     over the tables (1/3 maps: 4 us). */
  double selected = (filters.cost_ns - maps.cost_ns) / 3000.0;
  assert_true(selected > 0.4);
  assert_true(fabs((filters.cost_ns - one.cost_ns) - selected * 1000.0) < 1e-6 * filters.cost_ns);
}

/* search_run_tables scans only the given tables (of the view) and the memtables. */
static void test_search_run_tables(void **state) {
  (void)state;
  fx_open();
  test_engine_t *te = g_fx.te;
  build_hand(te, g_fx.vi);
  const uint64_t given[] = {2, 99}; /* 99: not in the view, never read */
  struct {
    const uint64_t *numbers;
    size_t n;
    int results;
  } cases[] = {{given, 2, 3}, {NULL, 0, 3}, {(const uint64_t[]){1, 2, 3}, 3, 4}};
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    found_t f = {.n = 0};
    bfh_search_stats st;
    err_t err;
    engine_reset_counters(te);
    assert_int_equal(
        search_run_tables(&te->base, "v", 1, cases[c].numbers, cases[c].n, on_match, &f, &st, &err),
        BFH_OK);
    for (uint64_t number = 1; number < MAXT; number++) {
      int want = te->t[number].in_view && u64_sorted_contains(cases[c].numbers, cases[c].n, number);
      assert_int_equal(te->t[number].scans, want);
    }
    assert_int_equal(te->mem_scans, 1);
    assert_int_equal(te->releases, 1);
    assert_int_equal(f.n, cases[c].results);
    assert_int_equal(found_count(&f, "h"), cases[c].results == 4); /* h is only in table 1 */
    assert_int_equal(found_count(&f, "c") + found_count(&f, "e") + found_count(&f, "f"), 3);
    assert_int_equal(st.method_used, SEARCH_ORACLE);
    assert_int_equal(st.leaf_probes, 0);
  }
}

/* A failing scan_table, scan_memtables or view_acquire is the search's status, with its
   message; a view acquired is released. */
static void test_search_scan_errors(void **state) {
  (void)state;
  fx_open();
  test_engine_t *te = g_fx.te;
  build_hand(te, g_fx.vi);
  const uint64_t given[] = {1, 2};
  for (size_t m = 0; m <= NMETHODS; m++) { /* m == NMETHODS: search_run_tables */
    for (int where = 0; where < 3; where++) {
      if (where == 0) te->fail_scan_of[2] = BFH_E_CORRUPT;
      if (where == 1) te->fail_mem = BFH_E_IO;
      if (where == 2) te->fail_acquire = BFH_E_NOMEM;
      const char *msg = where == 0 ? "table 000002" : where == 1 ? "memtable" : "view";
      int code = where == 0 ? BFH_E_CORRUPT : where == 1 ? BFH_E_IO : BFH_E_NOMEM;
      err_t err;
      bfh_search_stats st;
      engine_reset_counters(te);
      int rc = m < NMETHODS
                   ? search_run(&te->base, g_fx.vi, "v", 1, all_methods[m], NULL, NULL, &st, &err)
                   : search_run_tables(&te->base, "v", 1, given, 2, NULL, NULL, &st, &err);
      assert_int_equal(rc, code);
      if (!strstr(err.msg, msg)) fail_msg("message '%s' does not name '%s'", err.msg, msg);
      assert_int_equal(te->acquires, where == 2 ? 0 : 1);
      assert_int_equal(te->releases, te->acquires);
      te->fail_scan_of[2] = te->fail_mem = te->fail_acquire = BFH_OK;
    }
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_teardown(test_search_random_model_oracle, fx_teardown),
      cmocka_unit_test_teardown(test_search_validation, fx_teardown),
      cmocka_unit_test_teardown(test_search_get_error, fx_teardown),
      cmocka_unit_test_teardown(test_search_unindexed_tables_scanned, fx_teardown),
      cmocka_unit_test_teardown(test_search_stops_early, fx_teardown),
      cmocka_unit_test_teardown(test_search_without_index, fx_teardown),
      cmocka_unit_test_teardown(test_search_plan, fx_teardown),
      cmocka_unit_test_teardown(test_search_by_blocks, fx_teardown),
      cmocka_unit_test_teardown(test_search_damaged_block_filter, fx_teardown),
      cmocka_unit_test_teardown(test_plan_map_cost, fx_teardown),
      cmocka_unit_test_teardown(test_search_run_tables, fx_teardown),
      cmocka_unit_test_teardown(test_search_scan_errors, fx_teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

/* engine_lsm tests (lsm_hooks/engines/lsm/engine_lsm.h, and lsm_hooks/engines/lsm/value_hook.c
 * through it): the own engine opened for real, with a real index_sync_t over a real value_index_t,
 * small memtables and tables so that flushes and compactions happen: put/get/del/flush through
 * e->ops (and with value filters off); every live table has a leaf built in this session, compacted
 * tables have none, and each leaf says maybe for every value stored in its table (leaves in memory
 * and on disk); reopen reads every leaf back from its table's meta block, with open stats to match;
 *   a table whose value-filter meta block is damaged gets no leaf and is still scanned;
 *   scan_table and scan_memtables report exactly the matching value entries (a raw-scan
 *   oracle per table, an oracle of the puts in the memtable, the current-value oracle over
 *   the whole view);
 *   engine_kind(BFH_ENGINE_LSM), and engine_lsm_repair of a closed database.
 * Workloads are fixed by seeds; background work is waited for with engine_lsm_wait_idle.
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
#include "lsm/db.h"
#include "lsm/table_hook.h"
#include "lsm_hooks/engines/engine.h"
#include "lsm_hooks/engines/lsm/engine_lsm.h"
#include "index/index_sync.h"
#include "lsm_hooks/engines/lsm/value_hook.h"
#include "index/value_index.h"
#include "tests/lsm/db_test_util.h"
#include "util/random.h"
#include "util/vec.h"

#define M 8192
#define K 3
#define SEED 0x5eed10ull
#define ORDER 4
#define NKEYS 600   /* key ids 0..NKEYS-1 (test_key layout: "key%09u") */
#define NV 20       /* distinct values; value 0 is the empty value */
#define BATCH 500   /* operations per flushed batch */
#define TAIL 150    /* operations left in the memtable (well under 64 KiB) */
#define MAXSEEN 512 /* table numbers remembered */

/* ---- Fixture ------------------------------------------------------------------------------ */

typedef struct fixture {
  char dir[TEST_PATH_MAX / 2]; /* the test's temporary directory */
  char db[TEST_PATH_MAX];      /* dir/db */
  bfh_options opt;
  value_index_t *index;
  index_sync_t *sync;
  engine_t *e;
  /* oracles */
  int cur[NKEYS];          /* current value of a key, -1: none (deleted or never put) */
  uint32_t ever[NKEYS];    /* bit v: the key was put with value v at some time */
  uint16_t mem[NKEYS][NV]; /* puts of (key, value) since the last flush (the memtable) */
  uint64_t seen[MAXSEEN];  /* every table number a view listed */
  size_t nseen;
} fixture_t;

static fixture_t *g_fx; /* the current test's fixture; released by the teardown */

static int fx_setup(void **state) {
  (void)state;
  g_fx = calloc(1, sizeof *g_fx);
  if (!g_fx) return -1;
  if (test_tmpdir_create(g_fx->dir, sizeof g_fx->dir, "engine_lsm_test") != 0) return -1;
  snprintf(g_fx->db, sizeof g_fx->db, "%s/db", g_fx->dir);
  for (size_t i = 0; i < NKEYS; i++) g_fx->cur[i] = -1;
  bfh_options_init(&g_fx->opt);
  g_fx->opt.memtable_bytes = 64 << 10;
  g_fx->opt.table_bytes = 64 << 10;
  g_fx->opt.value_filter_bits = M;
  g_fx->opt.value_filter_hashes = K;
  g_fx->opt.hash_seed = SEED;
  g_fx->opt.order = ORDER;
  return 0;
}

/* Closes the engine, then destroys the index_sync and the index (in that order: the engine
   borrows the sync, the sync the index). */
static void fx_close(fixture_t *fx) {
  if (fx->e) assert_int_equal(fx->e->ops->close(fx->e, NULL), BFH_OK);
  fx->e = NULL;
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
  if (fx->e) fx->e->ops->close(fx->e, NULL);
  index_sync_destroy(fx->sync);
  value_index_destroy(fx->index);
  int rc = fx->dir[0] ? test_rmrf(fx->dir) : 0;
  free(fx);
  return rc;
}

static fixture_t *fx_get(void) {
  assert_non_null(g_fx);
  return g_fx;
}

/* A new index (leaves in memory or on disk) and index_sync, and the engine over them opened
   through open_fn (engine_lsm_open or engine_kind's). with_index 0: value filters off. */
static void fx_open_with(fixture_t *fx, int on_disk, int with_index,
                         int (*open_fn)(const char *, const bfh_options *, struct env *,
                                        index_sync_t *, engine_t **, err_t *)) {
  err_t err;
  err_clear(&err);
  if (with_index) {
    value_index_params_t p = {M, K, SEED, ORDER, on_disk, HIERARCHY_SIMILARITY, 0, NULL, 0, 0};
    fx->index = value_index_create(&p, &err);
    if (!fx->index) fail_msg("value_index_create: %s", err.msg);
    fx->sync = index_sync_create(fx->index, &err);
    if (!fx->sync) fail_msg("index_sync_create: %s", err.msg);
  }
  int rc = open_fn(fx->db, &fx->opt, NULL, fx->sync, &fx->e, &err);
  if (rc != BFH_OK) fail_msg("engine open %s: %d %s", fx->db, rc, err.msg);
  assert_non_null(fx->e);
  assert_string_equal(fx->e->ops->name, "lsm");
}

static void fx_open(fixture_t *fx, int on_disk) {
  fx_open_with(fx, on_disk, 1, engine_lsm_open);
}

/* ---- Values and operations ----------------------------------------------------------------- */

/* Value v (< NV): v == 0 the empty value, else "val-<v>-" padded to a length that depends on
   v. Returns the length. */
static size_t value_of(int v, char *buf) {
  if (v == 0) return 0;
  int n = snprintf(buf, 64, "val-%02d-", v);
  size_t len = (size_t)n + (size_t)(v % 5) * 7;
  for (size_t i = (size_t)n; i < len; i++) buf[i] = (char)('a' + (v + (int)i) % 26);
  return len;
}

static int key_id(const void *key, size_t len) {
  char buf[32];
  assert_true(len > 3 && len < sizeof buf);
  memcpy(buf, key, len);
  buf[len] = '\0';
  assert_memory_equal(buf, "key", 3);
  long id = strtol(buf + 3, NULL, 10);
  assert_true(id >= 0 && id < NKEYS);
  return (int)id;
}

static void put_ok(fixture_t *fx, int id, int v) {
  char key[32], val[64];
  size_t kl = test_key(key, (uint64_t)id), vl = value_of(v, val);
  err_t err;
  err_clear(&err);
  int rc = fx->e->ops->put(fx->e, key, kl, val, vl, &err);
  if (rc != BFH_OK) fail_msg("put %s: %d %s", key, rc, err.msg);
  fx->cur[id] = v;
  fx->ever[id] |= 1u << v;
  fx->mem[id][v]++;
}

static void del_ok(fixture_t *fx, int id) {
  char key[32];
  size_t kl = test_key(key, (uint64_t)id);
  err_t err;
  err_clear(&err);
  int rc = fx->e->ops->del(fx->e, key, kl, &err);
  if (rc != BFH_OK) fail_msg("del %s: %d %s", key, rc, err.msg);
  fx->cur[id] = -1;
}

static void idle_ok(fixture_t *fx) {
  err_t err;
  err_clear(&err);
  int rc = engine_lsm_wait_idle(fx->e, &err);
  if (rc != BFH_OK) fail_msg("engine_lsm_wait_idle: %d %s", rc, err.msg);
}

static void remember_tables(fixture_t *fx);

static void flush_ok(fixture_t *fx) {
  err_t err;
  err_clear(&err);
  int rc = fx->e->ops->flush(fx->e, &err);
  if (rc != BFH_OK) fail_msg("flush: %d %s", rc, err.msg);
  memset(fx->mem, 0, sizeof fx->mem);
  remember_tables(fx);
}

/* n operations drawn from seed: puts of random values (a fifth of them deletions of keys
   that have a value, del_pct percent when given). */
static void run_ops(fixture_t *fx, uint64_t seed, int n, int del_pct) {
  rng_t r;
  rng_init(&r, seed);
  for (int i = 0; i < n; i++) {
    int id = (int)rng_below(&r, NKEYS);
    if (fx->cur[id] >= 0 && (int)rng_below(&r, 100) < del_pct)
      del_ok(fx, id);
    else
      put_ok(fx, id, (int)rng_below(&r, NV));
  }
}

/* Every key reads back as the oracle says. */
static void expect_gets(fixture_t *fx) {
  for (int id = 0; id < NKEYS; id++) {
    char key[32], want[64];
    size_t kl = test_key(key, (uint64_t)id);
    void *val = NULL;
    size_t len = 0;
    err_t err;
    err_clear(&err);
    int rc = fx->e->ops->get(fx->e, NULL, key, kl, &val, &len, &err);
    if (fx->cur[id] < 0) {
      if (rc != BFH_NOT_FOUND) fail_msg("get %s: %d, want BFH_NOT_FOUND", key, rc);
      continue;
    }
    if (rc != BFH_OK) fail_msg("get %s: %d %s", key, rc, err.msg);
    size_t wl = value_of(fx->cur[id], want);
    assert_non_null(val);
    assert_int_equal(len, wl);
    if (wl) assert_memory_equal(val, want, wl);
    free(val);
  }
}

/* The standard workload: five flushed batches (the fourth L0 table triggers a compaction),
   a sixth with many deletions flushed on top (its tombstones stay in an L0 table), and a tail
   left in the memtable. */
static void load(fixture_t *fx, uint64_t seed) {
  for (int b = 0; b < 5; b++) {
    run_ops(fx, seed + (uint64_t)b, BATCH, 20);
    flush_ok(fx);
  }
  idle_ok(fx);
  run_ops(fx, seed + 5, BATCH, 60);
  flush_ok(fx);
  run_ops(fx, seed + 6, TAIL, 30);
}

/* ---- Views ----------------------------------------------------------------------------------- */

typedef struct view {
  engine_view_t *v;
  const engine_table_t *t;
  size_t n;
} view_t;

static void view_open(fixture_t *fx, view_t *vw) {
  err_t err;
  err_clear(&err);
  int rc = fx->e->ops->view_acquire(fx->e, &vw->v, &err);
  if (rc != BFH_OK) fail_msg("view_acquire: %d %s", rc, err.msg);
  vw->n = fx->e->ops->view_tables(vw->v, &vw->t);
  assert_true(vw->n == 0 || vw->t != NULL);
}

static void view_close(fixture_t *fx, view_t *vw) {
  fx->e->ops->view_release(fx->e, vw->v);
  vw->v = NULL;
}

static void remember_tables(fixture_t *fx) {
  view_t vw;
  view_open(fx, &vw);
  for (size_t i = 0; i < vw.n; i++) {
    size_t j = 0;
    while (j < fx->nseen && fx->seen[j] != vw.t[i].number) j++;
    if (j == fx->nseen) {
      assert_true(fx->nseen < MAXSEEN);
      fx->seen[fx->nseen++] = vw.t[i].number;
    }
  }
  view_close(fx, &vw);
}

static int view_has(const view_t *vw, uint64_t number) {
  for (size_t i = 0; i < vw->n; i++)
    if (vw->t[i].number == number) return 1;
  return 0;
}

/* ---- Oracles for scans ----------------------------------------------------------------------- */

/* Counts per key id of the entries a scan reported. */
typedef struct counts {
  int n[NKEYS];
  int total;
  uint64_t seq_sum; /* of the sequences the entries were reported with */
} counts_t;

static int count_match(void *arg, const void *key, size_t key_len, uint64_t seq) {
  counts_t *c = arg;
  c->n[key_id(key, key_len)]++;
  c->total++;
  c->seq_sum += seq;
  return 0;
}

/* The raw oracle: every entry of a table or memtable (lsm_snapshot_scan_*), filtered here. */
typedef struct raw {
  const void *want; /* the value whose entries c counts; NULL: none */
  size_t want_len;
  counts_t c;
  int deletions;
  uint32_t values_seen; /* bit v: some value entry holds value v */
  uint64_t max_seq;     /* of every entry, deletions too */
} raw_t;

static int raw_visit(void *arg, const void *key, size_t key_len, const void *val, size_t val_len,
                     uint64_t seq, int type) {
  raw_t *r = arg;
  if (seq > r->max_seq) r->max_seq = seq;
  if (type == LSM_TYPE_DELETION) {
    r->deletions++;
    return 0;
  }
  assert_int_equal(type, LSM_TYPE_VALUE);
  for (int v = 0; v < NV; v++) {
    char buf[64];
    size_t n = value_of(v, buf);
    if (n == val_len && (n == 0 || memcmp(buf, val, n) == 0)) r->values_seen |= 1u << v;
  }
  if (r->want && val_len == r->want_len && (val_len == 0 || memcmp(val, r->want, val_len) == 0))
    count_match(&r->c, key, key_len, seq);
  return 0;
}

static void raw_table(fixture_t *fx, lsm_snapshot_t *snap, uint64_t number, raw_t *r) {
  (void)fx;
  err_t err;
  err_clear(&err);
  int rc = lsm_snapshot_scan_table(snap, number, raw_visit, r, NULL, &err);
  if (rc != BFH_OK)
    fail_msg("raw scan of table %llu: %d %s", (unsigned long long)number, rc, err.msg);
}

static void scan_table_ok(fixture_t *fx, view_t *vw, uint64_t number, const void *val, size_t len,
                          counts_t *c) {
  err_t err;
  err_clear(&err);
  engine_scan_stats_t st = {0, 0};
  engine_value_test_t test = engine_value_test_equal(val, len);
  int rc = fx->e->ops->scan_table(fx->e, vw->v, number, &test, count_match, c, &st, &err);
  if (rc != BFH_OK) fail_msg("scan_table %llu: %d %s", (unsigned long long)number, rc, err.msg);
}

static void scan_memtables_ok(fixture_t *fx, view_t *vw, const void *val, size_t len, counts_t *c) {
  err_t err;
  err_clear(&err);
  engine_value_test_t test = engine_value_test_equal(val, len);
  int rc = fx->e->ops->scan_memtables(fx->e, vw->v, &test, count_match, c, NULL, &err);
  if (rc != BFH_OK) fail_msg("scan_memtables: %d %s", rc, err.msg);
}

static void expect_counts(const counts_t *got, const counts_t *want, const char *what, int v) {
  for (int id = 0; id < NKEYS; id++)
    if (got->n[id] != want->n[id])
      fail_msg("%s, value %d: key %d reported %d times, want %d", what, v, id, got->n[id],
               want->n[id]);
  assert_int_equal(got->total, want->total);
}

/* With the engine idle: for every value, scan_table of every table of a view reports exactly
   the value entries of that table with that value (raw oracle; deletions never, the empty
   value included), scan_memtables exactly the puts since the last flush (fx->mem), and over
   the whole view every key whose current value it is, and only keys that ever had it.
   Returns the tombstones seen in the tables. */
static int expect_scans(fixture_t *fx) {
  idle_ok(fx);
  view_t vw;
  view_open(fx, &vw);
  lsm_snapshot_t *snap = lsm_snapshot_acquire(engine_lsm_db(fx->e));
  assert_non_null(snap);
  const lsm_table_info_t *ti;
  size_t n = lsm_snapshot_tables(snap, &ti);
  assert_int_equal(n, vw.n); /* idle: the same version */
  for (size_t i = 0; i < n; i++) assert_true(view_has(&vw, ti[i].number));
  int deletions = 0;
  counts_t *got = calloc(1, sizeof *got), *all = calloc(1, sizeof *all);
  raw_t *r = calloc(1, sizeof *r);
  assert_non_null(got);
  assert_non_null(all);
  assert_non_null(r);
  for (int v = 0; v < NV; v++) {
    char val[64];
    size_t len = value_of(v, val);
    memset(all, 0, sizeof *all);
    for (size_t i = 0; i < vw.n; i++) {
      memset(got, 0, sizeof *got);
      memset(r, 0, sizeof *r);
      r->want = val;
      r->want_len = len;
      scan_table_ok(fx, &vw, vw.t[i].number, val, len, got);
      raw_table(fx, snap, vw.t[i].number, r);
      expect_counts(got, &r->c, "scan_table", v);
      assert_int_equal(got->seq_sum, r->c.seq_sum);  /* each match with its entry's sequence */
      assert_int_equal(vw.t[i].max_seq, r->max_seq); /* the table's bound: its largest, exactly */
      if (v == 0) deletions += r->deletions;
      for (int id = 0; id < NKEYS; id++) all->n[id] += got->n[id];
    }
    memset(got, 0, sizeof *got);
    scan_memtables_ok(fx, &vw, val, len, got);
    counts_t want;
    memset(&want, 0, sizeof want);
    for (int id = 0; id < NKEYS; id++) {
      want.n[id] = fx->mem[id][v];
      want.total += fx->mem[id][v];
      all->n[id] += got->n[id];
    }
    expect_counts(got, &want, "scan_memtables", v);
    for (int id = 0; id < NKEYS; id++) {
      if (fx->cur[id] == v && all->n[id] == 0)
        fail_msg("value %d: key %d holds it and no scan reported it", v, id);
      if (all->n[id] > 0 && !(fx->ever[id] & (1u << v)))
        fail_msg("value %d: key %d reported but never had it", v, id);
    }
  }
  free(r);
  free(all);
  free(got);
  lsm_snapshot_release(snap);
  view_close(fx, &vw);
  return deletions;
}

/* ---- Leaves ---------------------------------------------------------------------------------- */

/* Is table `number` a candidate of the leaves for value v? */
static int leaf_says_maybe(fixture_t *fx, uint64_t number, int v) {
  char val[64];
  size_t len = value_of(v, val);
  probe_t pr;
  value_index_probe(fx->index, val, len, &pr);
  u64vec_t out;
  u64vec_init(&out);
  err_t err;
  err_clear(&err);
  int rc = value_index_candidates(fx->index, value_index_by_leaves, &pr, &out, NULL, &err);
  if (rc != BFH_OK) fail_msg("value_index_candidates: %d %s", rc, err.msg);
  int found = 0;
  for (size_t i = 0; i < out.n; i++) found |= out.v[i] == number;
  u64vec_release(&out);
  return found;
}

/* With the engine idle: the leaves are exactly the live tables (each from `source`, except
   `unindexed`, which has none), the index is valid, every leaf says maybe for every value
   its table holds, and the tables seen before and gone now have no leaf. */
static void expect_leaves(fixture_t *fx, index_leaf_source_t source, uint64_t unindexed) {
  idle_ok(fx);
  view_t vw;
  view_open(fx, &vw);
  lsm_snapshot_t *snap = lsm_snapshot_acquire(engine_lsm_db(fx->e));
  assert_non_null(snap);
  size_t leaves = 0;
  for (size_t i = 0; i < vw.n; i++) {
    uint64_t t = vw.t[i].number;
    if (t == unindexed) {
      assert_false(value_index_contains(fx->index, t));
      assert_int_equal(index_sync_leaf_source(fx->sync, t), INDEX_LEAF_UNREADABLE);
      continue;
    }
    if (!value_index_contains(fx->index, t))
      fail_msg("live table %llu has no leaf", (unsigned long long)t);
    assert_int_equal(index_sync_leaf_source(fx->sync, t), source);
    leaves++;
    raw_t r;
    memset(&r, 0, sizeof r);
    raw_table(fx, snap, t, &r);
    for (int v = 0; v < NV; v++)
      if ((r.values_seen & (1u << v)) && !leaf_says_maybe(fx, t, v))
        fail_msg("table %llu holds value %d and its leaf says no", (unsigned long long)t, v);
  }
  assert_int_equal(value_index_leaf_count(fx->index), leaves);
  err_t err;
  err_clear(&err);
  int rc = value_index_validate(fx->index, &err);
  if (rc != BFH_OK) fail_msg("value_index_validate: %d %s", rc, err.msg);
  for (size_t j = 0; j < fx->nseen; j++)
    if (!view_has(&vw, fx->seen[j])) {
      assert_false(value_index_contains(fx->index, fx->seen[j]));
      assert_int_equal(index_sync_leaf_source(fx->sync, fx->seen[j]), INDEX_LEAF_NONE);
    }
  lsm_snapshot_release(snap);
  view_close(fx, &vw);
}

static size_t live_tables(fixture_t *fx, uint64_t *out, size_t cap) {
  view_t vw;
  view_open(fx, &vw);
  assert_true(vw.n <= cap);
  for (size_t i = 0; i < vw.n; i++) out[i] = vw.t[i].number;
  size_t n = vw.n;
  view_close(fx, &vw);
  return n;
}

static size_t gone_tables(fixture_t *fx) {
  view_t vw;
  view_open(fx, &vw);
  size_t gone = 0;
  for (size_t j = 0; j < fx->nseen; j++) gone += !view_has(&vw, fx->seen[j]);
  view_close(fx, &vw);
  return gone;
}

/* ---- 1. Key-value operations ----------------------------------------------------------------- */

/* Key id's get, by hand: its status, and the value v (want_rc BFH_OK). */
static void expect_get(fixture_t *fx, int id, int want_rc, int v) {
  char key[32], want[64];
  size_t kl = test_key(key, (uint64_t)id);
  void *val = NULL;
  size_t len = 99;
  err_t err;
  err_clear(&err);
  int rc = fx->e->ops->get(fx->e, NULL, key, kl, &val, &len, &err);
  if (rc != want_rc) fail_msg("get %s: %d, want %d (%s)", key, rc, want_rc, err.msg);
  if (rc != BFH_OK) return;
  size_t wl = value_of(v, want);
  assert_non_null(val); /* even for the empty value */
  assert_int_equal(len, wl);
  if (wl) assert_memory_equal(val, want, wl);
  free(val);
}

static void kv_ops_body(fixture_t *fx) {
  flush_ok(fx); /* nothing to flush */
  expect_get(fx, 0, BFH_NOT_FOUND, 0);
  put_ok(fx, 0, 7);
  put_ok(fx, 1, 0); /* the empty value */
  put_ok(fx, 2, 9);
  expect_get(fx, 0, BFH_OK, 7);
  expect_get(fx, 1, BFH_OK, 0);
  del_ok(fx, 2);
  expect_get(fx, 2, BFH_NOT_FOUND, 0);
  del_ok(fx, 3); /* deleting a key that never had a value is fine */
  expect_get(fx, 3, BFH_NOT_FOUND, 0);
  flush_ok(fx);
  expect_get(fx, 0, BFH_OK, 7);
  expect_get(fx, 1, BFH_OK, 0);
  expect_get(fx, 2, BFH_NOT_FOUND, 0);
  /* A deletion after the flush hides the flushed value; an overwrite replaces it. */
  del_ok(fx, 0);
  put_ok(fx, 1, 4);
  expect_get(fx, 0, BFH_NOT_FOUND, 0);
  expect_get(fx, 1, BFH_OK, 4);
  flush_ok(fx);
  idle_ok(fx);
  expect_get(fx, 0, BFH_NOT_FOUND, 0);
  expect_get(fx, 1, BFH_OK, 4);
  expect_gets(fx);
  /* More data than a memtable holds, through the oracle. */
  run_ops(fx, 101, 2 * BATCH, 20);
  flush_ok(fx);
  idle_ok(fx);
  expect_gets(fx);
}

static void test_engine_lsm_kv_ops(void **state) {
  (void)state;
  fixture_t *fx = fx_get();
  fx_open(fx, 0);
  assert_non_null(engine_lsm_db(fx->e));
  kv_ops_body(fx);
}

/* Value filters off (no index_sync): the engine alone, scans included. */
static void test_engine_lsm_no_filters(void **state) {
  (void)state;
  fixture_t *fx = fx_get();
  fx->opt.value_filters = 0;
  fx_open_with(fx, 0, 0, engine_lsm_open);
  kv_ops_body(fx);
  memset(fx->mem, 0, sizeof fx->mem);
  run_ops(fx, 202, TAIL, 30);
  expect_scans(fx);
}

/* ---- 2-4, 6. Leaves through flushes, compactions and a reopen; scans ------------------------- */

static void lifecycle(int on_disk) {
  fixture_t *fx = fx_get();
  fx_open(fx, on_disk);
  engine_lsm_open_stats_t os;
  engine_lsm_get_open_stats(fx->e, &os);
  assert_int_equal(os.tables_live, 0);
  assert_int_equal(os.tables_indexed, 0);
  assert_int_equal(os.tables_unindexed, 0);

  load(fx, 1000);
  idle_ok(fx);
  lsm_stats_t ls;
  lsm_get_stats(engine_lsm_db(fx->e), &ls);
  assert_true(ls.compactions >= 1);
  assert_true(gone_tables(fx) >= 1); /* compacted away: their leaves must be gone */
  expect_gets(fx);
  expect_leaves(fx, INDEX_LEAF_BUILT, 0);
  int deletions = expect_scans(fx);
  assert_true(deletions > 0); /* the tables hold tombstones the empty value must not match */

  /* Reopen: the memtable goes to a table first, so that the live list is what reopens. */
  flush_ok(fx);
  idle_ok(fx);
  expect_leaves(fx, INDEX_LEAF_BUILT, 0);
  uint64_t before[MAXSEEN], after[MAXSEEN];
  size_t nb = live_tables(fx, before, MAXSEEN);
  assert_true(nb >= 2);
  fx_close(fx);
  fx_open(fx, on_disk);
  size_t na = live_tables(fx, after, MAXSEEN);
  assert_int_equal(na, nb);
  for (size_t i = 0; i < nb; i++) assert_int_equal(after[i], before[i]);
  engine_lsm_get_open_stats(fx->e, &os);
  assert_int_equal(os.tables_live, nb);
  assert_int_equal(os.tables_indexed, nb);
  assert_int_equal(os.tables_unindexed, 0);
  expect_leaves(fx, INDEX_LEAF_READ, 0);
  expect_gets(fx);
  expect_scans(fx);

  /* New tables of this session get built leaves next to the read ones. */
  run_ops(fx, 2000, BATCH, 20);
  flush_ok(fx);
  idle_ok(fx);
  size_t leaves = value_index_leaf_count(fx->index);
  view_t vw;
  view_open(fx, &vw);
  assert_int_equal(leaves, vw.n);
  size_t built = 0;
  for (size_t i = 0; i < vw.n; i++) {
    index_leaf_source_t src = index_sync_leaf_source(fx->sync, vw.t[i].number);
    assert_true(src == INDEX_LEAF_BUILT || src == INDEX_LEAF_READ);
    built += src == INDEX_LEAF_BUILT;
  }
  view_close(fx, &vw);
  assert_true(built >= 1);
  expect_scans(fx);
}

static void test_engine_lsm_leaves_in_memory(void **state) {
  (void)state;
  lifecycle(BFH_LEAVES_IN_MEMORY);
}

static void test_engine_lsm_leaves_on_disk(void **state) {
  (void)state;
  lifecycle(BFH_LEAVES_ON_DISK);
}

/* ---- 5. A damaged value-filter meta block ------------------------------------------------- */

static void test_engine_lsm_damaged_filter(void **state) {
  (void)state;
  fixture_t *fx = fx_get();
  fx_open(fx, 0);
  load(fx, 3000);
  flush_ok(fx);
  idle_ok(fx);
  uint64_t live[MAXSEEN];
  size_t n = live_tables(fx, live, MAXSEEN);
  assert_true(n >= 2);
  uint64_t victim = live[n - 1];
  void *data = NULL;
  size_t size = 0;
  uint64_t off = 0;
  err_t err;
  err_clear(&err);
  int rc = lsm_table_read_meta(engine_lsm_db(fx->e), victim, VALUE_HOOK_META_NAME, &data, &size,
                               &off, &err);
  if (rc != BFH_OK) fail_msg("lsm_table_read_meta: %d %s", rc, err.msg);
  free(data);
  assert_true(size > 16);
  char path[TEST_PATH_MAX];
  assert_int_equal(test_path_take(path, sizeof path, lsm_table_path(engine_lsm_db(fx->e), victim)),
                   0);
  /* The values the victim holds, before the damage. */
  lsm_snapshot_t *snap = lsm_snapshot_acquire(engine_lsm_db(fx->e));
  assert_non_null(snap);
  raw_t r;
  memset(&r, 0, sizeof r);
  raw_table(fx, snap, victim, &r);
  lsm_snapshot_release(snap);
  assert_true(r.values_seen != 0);
  fx_close(fx);

  assert_int_equal(test_file_xor_byte(path, off + size / 2, 0x10), 0);
  fx_open(fx, 0);
  engine_lsm_open_stats_t os;
  engine_lsm_get_open_stats(fx->e, &os);
  assert_int_equal(os.tables_live, n);
  assert_true(os.tables_unindexed >= 1);
  assert_int_equal(os.tables_indexed, n - 1);
  index_sync_stats_t ss;
  index_sync_get_stats(fx->sync, &ss);
  assert_int_equal(ss.tables_unreadable, 1);
  expect_leaves(fx, INDEX_LEAF_READ, victim);

  /* Never skipped: a scan of the victim still finds each of its values. */
  view_t vw;
  view_open(fx, &vw);
  assert_true(view_has(&vw, victim));
  for (int v = 0; v < NV; v++) {
    if (!(r.values_seen & (1u << v))) continue;
    char val[64];
    size_t len = value_of(v, val);
    counts_t *c = calloc(1, sizeof *c);
    assert_non_null(c);
    scan_table_ok(fx, &vw, victim, val, len, c);
    if (c->total == 0)
      fail_msg("damaged table %llu: value %d not found by scan_table", (unsigned long long)victim,
               v);
    free(c);
  }
  view_close(fx, &vw);
  expect_gets(fx);
  expect_scans(fx);
}

/* ---- 7. engine_kind and repair ------------------------------------------------------------- */

static void test_engine_lsm_kind(void **state) {
  (void)state;
  const engine_kind_t *k = engine_kind(BFH_ENGINE_LSM);
  assert_non_null(k);
  assert_int_equal(k->id, BFH_ENGINE_LSM);
  assert_string_equal(k->name, "lsm");
  assert_ptr_equal(k->open, engine_lsm_open);
  assert_ptr_equal(k->repair, engine_lsm_repair);
  assert_null(engine_kind((bfh_engine)99));
  /* Its open is a working engine. */
  fixture_t *fx = fx_get();
  fx_open_with(fx, 0, 1, k->open);
  run_ops(fx, 4000, TAIL, 20);
  expect_gets(fx);
}

static void test_engine_lsm_repair(void **state) {
  (void)state;
  fixture_t *fx = fx_get();
  fx_open(fx, 0);
  load(fx, 5000); /* its tail stays in the log */
  idle_ok(fx);
  int live_keys = 0;
  for (int id = 0; id < NKEYS; id++) live_keys += fx->cur[id] >= 0;
  fx_close(fx);

  const engine_kind_t *k = engine_kind(BFH_ENGINE_LSM);
  assert_non_null(k);
  bfh_repair_report rep;
  memset(&rep, 0, sizeof rep);
  err_t err;
  err_clear(&err);
  int rc = k->repair(fx->db, &fx->opt, &rep, &err);
  if (rc != BFH_OK) fail_msg("engine_lsm_repair: %d %s", rc, err.msg);
  assert_true(rep.logs >= 1);
  assert_true(rep.tables >= 1);
  assert_int_equal(rep.tables_damaged, 0);
  assert_int_equal(rep.tables_lost, 0);
  assert_int_equal(rep.keys_out, (uint64_t)live_keys);
  assert_true(rep.tables_out >= 1);

  fx_open(fx, 0);
  memset(fx->mem, 0, sizeof fx->mem); /* repair wrote the log's records into tables */
  fx->nseen = 0;
  expect_gets(fx);
  engine_lsm_open_stats_t os;
  engine_lsm_get_open_stats(fx->e, &os);
  assert_int_equal(os.tables_live, rep.tables_out);
  assert_int_equal(os.tables_indexed, rep.tables_out); /* repair wrote every table's filter */
  assert_int_equal(os.tables_unindexed, 0);
  expect_leaves(fx, INDEX_LEAF_READ, 0);
  /* After repair each key has one entry, its current value: the view holds exactly cur. */
  for (int id = 0; id < NKEYS; id++) {
    fx->ever[id] = fx->cur[id] >= 0 ? 1u << fx->cur[id] : 0;
  }
  expect_scans(fx);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_engine_lsm_kv_ops, fx_setup, fx_teardown),
      cmocka_unit_test_setup_teardown(test_engine_lsm_no_filters, fx_setup, fx_teardown),
      cmocka_unit_test_setup_teardown(test_engine_lsm_leaves_in_memory, fx_setup, fx_teardown),
      cmocka_unit_test_setup_teardown(test_engine_lsm_leaves_on_disk, fx_setup, fx_teardown),
      cmocka_unit_test_setup_teardown(test_engine_lsm_damaged_filter, fx_setup, fx_teardown),
      cmocka_unit_test_setup_teardown(test_engine_lsm_kind, fx_setup, fx_teardown),
      cmocka_unit_test_setup_teardown(test_engine_lsm_repair, fx_setup, fx_teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

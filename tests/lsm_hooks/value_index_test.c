/* value_index_t tests: after 10,000 random table adds and removes, the index answers exactly
 * like probing every live leaf one by one and like a fresh index built from the same leaves,
 * by every method (LEAVES, HIERARCHY, SLICED), and value_index_validate() passes (each
 * operation applied at once, or left queued and applied in batches); the same
 * with leaves on disk (serialized filters in files, read on demand, only chunk CRCs kept in
 * memory); unreadable leaves say maybe, and so do leaves whose read through the index's env
 * fails (an injected fault); select() marks tables
 * the index does not know; parameter mismatches are refused.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "filters/bits.h"
#include "index/value_index.h"
#include "index/persisted_index.h"
#include "index/value_block_map.h"
#include "index/value_index_private.h"
#include "util/coding.h"
#include "util/crc32c.h"
#include "tests/test_util.h"
#include "tests/env_fault.h"
#include "util/env.h"
#include "util/random.h"

#define M 1024 /* small m: leaves overlap a lot, so the hierarchy's pruning is exercised */
#define K 3
#define SEED 0x1234ull
#define MAXT 8192 /* table numbers 1..MAXT-1: more than 10,000 ops can use */
#define MAXLIVE 300
#define CRC_BYTES 4 /* a leaf on disk keeps one CRC per 512 bytes of words: M fits in one */

typedef struct model {
  value_filter_t *f[MAXT]; /* the oracle's copy of every live leaf */
  char dir[256];
} model_t;

/* The index's three structures: leaf by leaf, the hierarchy, the bit-sliced index. */
static const value_index_by_fn methods[] = {value_index_by_leaves, value_index_by_hierarchy,
                                            value_index_by_sliced};

static value_filter_t *random_filter(rng_t *r) {
  value_filter_t *f = value_filter_create(M, K, SEED);
  assert_non_null(f);
  uint32_t nvals = 5 + (uint32_t)rng_below(r, 80);
  for (uint32_t i = 0; i < nvals; i++) {
    uint64_t v = rng_below(r, 5000);
    value_filter_add(f, &v, sizeof v);
  }
  return f;
}

/* A leaf of m bits holding the values base + [0, nv) (each a uint64_t). */
static value_filter_t *leaf_of(uint64_t m, uint64_t base, uint64_t nv) {
  value_filter_t *f = value_filter_create(m, K, SEED);
  assert_non_null(f);
  for (uint64_t v = 0; v < nv; v++) {
    uint64_t x = base + v;
    value_filter_add(f, &x, sizeof x);
  }
  return f;
}

/* Each value base + [0, nv) has table `number` among its candidates by each of the nby
   methods by. */
static void assert_finds(value_index_t *vi, uint64_t base, uint64_t nv, uint64_t number,
                         const value_index_by_fn *by, int nby) {
  for (uint64_t v = 0; v < nv; v++) {
    uint64_t x = base + v;
    probe_t pr;
    value_index_probe(vi, &x, sizeof x, &pr);
    for (int m = 0; m < nby; m++) {
      u64vec_t out;
      u64vec_init(&out);
      err_t err;
      assert_int_equal(value_index_candidates(vi, by[m], &pr, &out, NULL, &err), BFH_OK);
      int has = 0;
      for (size_t i = 0; i < out.n; i++) has |= out.v[i] == number;
      if (!has)
        fail_msg("value %llu: table %llu not a candidate", (unsigned long long)x,
                 (unsigned long long)number);
      u64vec_release(&out);
    }
  }
}

static const value_index_by_fn by_sliced[] = {value_index_by_sliced};

/* A lean index (3 bits per value) given one batch of nt tables numbered 1..nt, as the loader
   applies one at open: table t + 1 holds the values t * 1000 + [0, 3) when t < nsmall (the
   minimum ask, m / 16), else t * 1000 + [0, 50) (50 x 10 bits: about m / 2). */
static value_index_t *lean_batch(size_t nt, size_t nsmall) {
  value_index_params_t p = {M, K, SEED, 3, 0, HIERARCHY_SIMILARITY, 0, NULL, 10, 0};
  err_t err;
  value_index_t *vi = value_index_create(&p, &err);
  assert_non_null(vi);
  uint64_t nums[64];
  value_filter_t *fs[64];
  assert_true(nt <= 64);
  for (uint64_t t = 0; t < nt; t++) {
    nums[t] = t + 1;
    fs[t] = leaf_of(M, t * 1000, t < nsmall ? 3 : 50);
  }
  size_t added = 0;
  assert_int_equal(value_index_add_batch(vi, nt, nums, fs, NULL, NULL, &added, &err), BFH_OK);
  assert_int_equal(added, nt);
  return vi;
}

static value_filter_t *copy_filter(const value_filter_t *f) {
  value_filter_t *c = value_filter_create(f->m, f->k, f->seed);
  assert_non_null(c);
  memcpy(c->words, f->words, f->nwords * 8);
  return c;
}

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

/* The model a test has (at most one at a time), destroyed by the teardown if the test did
   not: a failed assertion leaves it, its leaf files and its directory behind. */
static model_t *g_model;

/* Frees the oracle's leaves and removes the directory; 0 or -1. */
static int model_free(model_t *md) {
  for (uint64_t t = 0; t < MAXT; t++) value_filter_destroy(md->f[t]);
  int rc = test_rmrf(md->dir);
  free(md);
  return rc;
}

/* An empty model with a fresh directory for its leaf files; freed by model_destroy. */
static model_t *model_create(void) {
  assert_null(g_model);
  model_t *md = calloc(1, sizeof *md);
  assert_non_null(md);
  if (test_tmpdir_create(md->dir, sizeof md->dir, "value_index_test") != 0) {
    free(md);
    fail_msg("cannot create a temporary directory");
  }
  return g_model = md;
}

static void model_destroy(model_t *md) {
  g_model = NULL;
  assert_int_equal(model_free(md), 0);
}

static int model_teardown(void **state) {
  (void)state;
  model_t *md = g_model;
  g_model = NULL;
  return md ? model_free(md) : 0;
}

/* Writes f serialized into dir/<number>.flt after `pad` junk bytes; returns the offset. */
static uint64_t write_leaf(model_t *md, uint64_t number, const value_filter_t *f, rng_t *r,
                           char *path, size_t cap) {
  snprintf(path, cap, "%s/%06llu.flt", md->dir, (unsigned long long)number);
  size_t pad = (size_t)rng_below(r, 100);
  size_t n = value_filter_serialized_size(f->m);
  uint8_t *buf = malloc(pad + n);
  assert_non_null(buf);
  memset(buf, 0xa5, pad);
  value_filter_serialize(f, buf + pad);
  FILE *fp = fopen(path, "wb");
  assert_non_null(fp);
  assert_int_equal(fwrite(buf, 1, pad + n, fp), pad + n);
  fclose(fp);
  free(buf);
  return pad;
}

/* The leaves (of the model) that say maybe for p, sorted. */
static void oracle(const model_t *md, const probe_t *p, u64vec_t *out) {
  for (uint64_t t = 1; t < MAXT; t++)
    if (md->f[t] && bits_test_probe(md->f[t]->words, p)) assert_int_equal(u64vec_push(out, t), 0);
}

/* The lean layout's bits per value in run_model (0: the paper's layout, where every method
   must give exactly the oracle's answer). Lean: every method must give the same answer, a
   superset of the oracle's (folding adds false positives, never a false negative). */
static uint32_t g_lean_bits;

/* Whether every element of the sorted want is in the sorted got. */
static int covers(const u64vec_t *got, const u64vec_t *want) {
  size_t j = 0;
  for (size_t i = 0; i < want->n; i++) {
    while (j < got->n && got->v[j] < want->v[i]) j++;
    if (j == got->n || got->v[j] != want->v[i]) return 0;
  }
  return 1;
}

static void expect_lean(value_index_t *vi, const probe_t *p, const u64vec_t *want) {
  u64vec_t got[3];
  for (int m = 0; m < 3; m++) {
    u64vec_init(&got[m]);
    probe_stats_t st = {0, 0, 0, 0};
    err_t err;
    assert_int_equal(value_index_candidates(vi, methods[m], p, &got[m], &st, &err), BFH_OK);
    if (got[m].n > 1) qsort(got[m].v, got[m].n, sizeof *got[m].v, cmp_u64);
    if (!covers(&got[m], want)) fail_msg("lean, method %d: a false negative", m);
    assert_int_equal(got[m].n, got[0].n);
    for (size_t i = 0; i < got[m].n; i++) assert_int_equal(got[m].v[i], got[0].v[i]);
  }
  for (int m = 0; m < 3; m++) u64vec_release(&got[m]);
}

static void expect_same(value_index_t *vi, int method, const probe_t *p, const u64vec_t *want) {
  if (g_lean_bits) {
    if (method == 0) expect_lean(vi, p, want);
    return;
  }
  u64vec_t got;
  u64vec_init(&got);
  probe_stats_t st = {0, 0, 0, 0};
  err_t err;
  assert_int_equal(value_index_candidates(vi, methods[method], p, &got, &st, &err), BFH_OK);
  if (got.n > 1) qsort(got.v, got.n, sizeof *got.v, cmp_u64);
  if (got.n != want->n) fail_msg("method %d: %zu candidates, oracle %zu", method, got.n, want->n);
  for (size_t i = 0; i < got.n; i++) assert_int_equal(got.v[i], want->v[i]);
  if (methods[method] == value_index_by_leaves) {
    assert_int_equal(st.leaf_probes, value_index_leaf_count(vi));
    assert_int_equal(st.leaf_positives, got.n);
  }
  u64vec_release(&got);
}

/* Compares vi, a fresh index built from the model's leaves, and the oracle on `queries`
   random probes, for every method. */
static void compare_all(model_t *md, value_index_t *vi, rng_t *r, int queries, int on_disk) {
  err_t err;
  if (value_index_validate(vi, &err) != BFH_OK) fail_msg("validate: %s", err.msg);
  value_index_params_t p = *value_index_params(vi);
  p.leaves_on_disk = 0;
  value_index_t *fresh = value_index_create(&p, &err);
  assert_non_null(fresh);
  for (uint64_t t = 1; t < MAXT; t++)
    if (md->f[t])
      assert_int_equal(value_index_add(fresh, t, copy_filter(md->f[t]), NULL, 0, &err), BFH_OK);
  assert_int_equal(value_index_leaf_count(fresh), value_index_leaf_count(vi));
  if (value_index_validate(fresh, &err) != BFH_OK) fail_msg("validate fresh: %s", err.msg);
  size_t positives = 0;
  for (int q = 0; q < queries; q++) {
    probe_t pr;
    uint64_t v = rng_below(r, 10000); /* half of them present in some leaf */
    value_index_probe(vi, &v, sizeof v, &pr);
    u64vec_t want;
    u64vec_init(&want);
    oracle(md, &pr, &want);
    positives += want.n;
    for (size_t i = 0; i < 3; i++) {
      expect_same(vi, (int)i, &pr, &want);
      expect_same(fresh, (int)i, &pr, &want);
    }
    u64vec_release(&want);
  }
  (void)on_disk;
  /* The test must look at non-empty answers, or it proves nothing. */
  if (value_index_leaf_count(vi) > 10) assert_true(positives > 0);
  value_index_destroy(fresh);
}

/* apply_each: 1 applies every add and remove at once (each one goes through the hierarchy's
   incremental insert/remove); 0 leaves them queued until the next query (batches). */
static void run_model(int on_disk, hierarchy_placement_t placement, int ops, int check_every,
                      int apply_each) {
  model_t *md = model_create();
  rng_t r;
  rng_init(&r, 42 + (uint64_t)on_disk * 7 + (uint64_t)placement);
  value_index_params_t p = {M, K, SEED, 3, on_disk, placement, 0, NULL, g_lean_bits, 0};
  err_t err;
  value_index_t *vi = value_index_create(&p, &err);
  assert_non_null(vi);
  uint64_t next = 1;
  size_t live = 0;
  for (int op = 0; op < ops; op++) {
    int add = live < 5 || (live < MAXLIVE && rng_below(&r, 100) < 55);
    if (add && next < MAXT) {
      uint64_t t = next++;
      value_filter_t *f = random_filter(&r);
      md->f[t] = copy_filter(f);
      char path[512];
      uint64_t off = 0;
      const char *pp = NULL;
      if (on_disk) {
        off = write_leaf(md, t, f, &r, path, sizeof path);
        pp = path;
      }
      assert_int_equal(value_index_add(vi, t, f, pp, off, &err), BFH_OK);
      live++;
    } else if (live > 0) {
      uint64_t t;
      do t = 1 + rng_below(&r, next - 1);
      while (!md->f[t]);
      assert_int_equal(value_index_remove(vi, t), BFH_OK);
      assert_int_equal(value_index_remove(vi, t), BFH_NOT_FOUND);
      value_filter_destroy(md->f[t]);
      md->f[t] = NULL;
      live--;
    }
    if (next >= MAXT) next = MAXT; /* no new numbers left: only removes */
    assert_int_equal(value_index_leaf_count(vi), live);
    if (apply_each) assert_int_equal(value_index_apply(vi, &err), BFH_OK);
    if ((op + 1) % check_every == 0) compare_all(md, vi, &r, 50, on_disk);
  }
  compare_all(md, vi, &r, 500, on_disk);
  value_index_stats_t st;
  value_index_get_stats(vi, &st);
  assert_int_equal(st.leaves, live);
  assert_true(live > MAXLIVE / 2); /* the final check saw a well-populated index */
  assert_true(st.mean_fill > 0 && st.mean_fill < 1);
  if (on_disk) assert_int_equal(st.leaf_bytes, live * CRC_BYTES); /* chunk CRCs only */
  if (g_lean_bits && !on_disk) {
    /* Each bit once: no leaf words, no hierarchy, slices within their stated bound. */
    assert_int_equal(st.leaf_bytes, 0);
    assert_true(st.sliced_groups >= 1);
    assert_true(st.probe_fill > st.mean_fill);
    assert_true(st.index_bytes >= st.sliced_bytes + st.internal_bytes + st.block_bytes);
  }
  value_index_destroy(vi);
  model_destroy(md);
}

/* 10,000 random adds and removes of leaves in memory; checked against the oracle and a
   fresh build every 1,000 operations and at the end. */
static void test_value_index_random_ops_match_fresh_build(void **state) {
  (void)state;
  run_model(0, HIERARCHY_SIMILARITY, 10000, 1000, 1);
}

/* The same with the operations left queued between checks (applied in batches). */
static void test_value_index_queued_ops_match_fresh_build(void **state) {
  (void)state;
  run_model(0, HIERARCHY_SIMILARITY, 10000, 700, 0);
}

static void test_value_index_random_ops_positional(void **state) {
  (void)state;
  run_model(0, HIERARCHY_POSITIONAL, 10000, 2500, 1);
}

/* The paper's static tree: rebuilt after every change, after every queued batch, and with
   its leaves on disk (the rebuild reads them all). */
static void test_value_index_paper_tree(void **state) {
  (void)state;
  run_model(0, HIERARCHY_PAPER, 3000, 500, 1);
  run_model(0, HIERARCHY_PAPER, 10000, 700, 0);
  run_model(1, HIERARCHY_PAPER, 3000, 500, 0);
}

/* The lean layout (leaves folded, kept once in the slices): the same random adds and removes,
   applied one by one and in batches; every method agrees and none misses a leaf's value. */
static void test_value_index_lean_ops_match(void **state) {
  (void)state;
  g_lean_bits = 4;
  run_model(0, HIERARCHY_SIMILARITY, 10000, 1000, 1);
  run_model(0, HIERARCHY_SIMILARITY, 10000, 700, 0);
  /* Folds to any multiple of 64 bits (448, 576, ... of 1024: not divisors of m). */
  for (uint32_t bits = 3; bits <= 13; bits += 5) {
    g_lean_bits = bits;
    run_model(0, HIERARCHY_SIMILARITY, 3000, 400, 1);
  }
  g_lean_bits = 0;
}

/* floor(p mf / m) for p < m, the definition fold_map_pos computes without a division. */
static uint64_t fold_ref(uint64_t p, uint64_t mf, uint64_t m) {
  return (uint64_t)((unsigned __int128)p * mf / m);
}

/* fold_map_pos is exactly floor(p mf / m), below mf, for every p: exhaustively over m up to
   4,100 and every mf <= m, and over seeded random (m, mf, p) up to m = 2^40 (the fast path
   to m about 2^31, the division beyond); mf = m / r gives p / r (the power-of-two folds). */
static void test_value_index_fold_map_exact(void **state) {
  (void)state;
  for (uint64_t m = 1; m <= 4100; m += (m < 300 ? 1 : 97))
    for (uint64_t mf = 1; mf <= m; mf++) {
      fold_map_t f;
      fold_map_init(&f, m, mf);
      for (uint64_t p = 0; p < m; p++) {
        uint64_t j = fold_map_pos(&f, p);
        if (j != fold_ref(p, mf, m) || j >= mf)
          fail_msg("m %llu mf %llu p %llu: %llu", (unsigned long long)m, (unsigned long long)mf,
                   (unsigned long long)p, (unsigned long long)j);
      }
    }
  rng_t r;
  rng_init(&r, 28);
  for (int i = 0; i < 20000; i++) {
    uint64_t m = 2 + rng_below(&r, i % 2 ? 2000000 : ((uint64_t)1 << (8 + i % 33)));
    uint64_t mf = 1 + rng_below(&r, m);
    fold_map_t f;
    fold_map_init(&f, m, mf);
    for (int t = 0; t < 64; t++) {
      uint64_t p = t < 4 ? m - 1 - (uint64_t)t % m : rng_below(&r, m);
      uint64_t j = fold_map_pos(&f, p);
      if (j != fold_ref(p, mf, m) || j >= mf)
        fail_msg("m %llu mf %llu p %llu: %llu", (unsigned long long)m, (unsigned long long)mf,
                 (unsigned long long)p, (unsigned long long)j);
    }
  }
  fold_map_t f;
  fold_map_init(&f, 2000000, 250000); /* r = 8 */
  for (uint64_t p = 0; p < 2000000; p += 7) assert_int_equal(fold_map_pos(&f, p), p / 8);
}

/* A folded leaf answers every probe its leaf would: seeded random leaves of m = 2,000,000
   (and a non-power-of-two m) folded to random sizes, most not divisors of m; every value
   added is a maybe in the folded filter, and the folded filter's bit j is exactly the OR of
   the leaf bits p with floor(p mf / m) = j. */
static void test_value_index_fold_no_false_negative(void **state) {
  (void)state;
  rng_t r;
  rng_init(&r, 2028);
  for (int round = 0; round < 24; round++) {
    uint64_t m = round % 3 ? 2000000 : 999983;
    uint64_t mf = 64 * (1 + rng_below(&r, m / 64));
    value_filter_t *f = value_filter_create(m, K, SEED);
    assert_non_null(f);
    uint32_t nv = 1000 + (uint32_t)rng_below(&r, 40000);
    for (uint32_t v = 0; v < nv; v++) {
      uint64_t x = (uint64_t)round << 32 | v;
      value_filter_add(f, &x, sizeof x);
    }
    fold_map_t map;
    fold_map_init(&map, m, mf);
    uint64_t *fw = calloc((mf + 63) / 64, 8);
    assert_non_null(fw);
    for (uint64_t p = 0; p < m; p++)
      if (f->words[p / 64] >> (p % 64) & 1) {
        uint64_t j = fold_map_pos(&map, p);
        fw[j / 64] |= 1ull << (j % 64);
      }
    /* Bit j by its definition: the OR over the run of leaf bits mapping to it. */
    for (uint64_t j = 0; j < mf; j += 1 + rng_below(&r, 50)) {
      uint64_t lo = (j * m + mf - 1) / mf, hi = ((j + 1) * m + mf - 1) / mf; /* p in [lo, hi) */
      int any = 0;
      for (uint64_t p = lo; p < hi && p < m; p++) any |= (int)(f->words[p / 64] >> (p % 64) & 1);
      assert_int_equal(any, (int)(fw[j / 64] >> (j % 64) & 1));
    }
    for (uint32_t v = 0; v < nv; v++) {
      uint64_t x = (uint64_t)round << 32 | v;
      probe_t pr, q;
      value_filter_probe(f, &x, sizeof x, &pr);
      value_index_fold_probe(&pr, &map, &q);
      for (uint32_t i = 0; i < q.k; i++)
        if (!(fw[q.pos[i] / 64] >> (q.pos[i] % 64) & 1))
          fail_msg("m %llu mf %llu value %u: a false negative", (unsigned long long)m,
                   (unsigned long long)mf, v);
    }
    free(fw);
    value_filter_destroy(f);
  }
}

/* Lean, a batch whose full tables fill the slots their group grows to (16 of 16): the small
   ones of the batch find no free slot there (the slots the full ones were given are not free)
   and open a group of their own (8 slots of 64 bits), where counting those slots as free would
   have put 21 leaves into 16 slots and grown the full tables' group by an eighth (24 slots of
   about 512 bits). Every value is still found. */
static void test_value_index_lean_placed_slots_not_free(void **state) {
  (void)state;
  enum { NT = 21, NSMALL = 5 };
  err_t err;
  value_index_t *vi = lean_batch(NT, NSMALL);
  value_index_stats_t st;
  value_index_get_stats(vi, &st);
  assert_int_equal(st.sliced_groups, 2);
  if (st.sliced_row_bits > 16 * 576 + 8 * 64)
    fail_msg("%llu row bits", (unsigned long long)st.sliced_row_bits);
  assert_int_equal(value_index_validate(vi, &err), BFH_OK);
  for (uint64_t t = 0; t < NT; t++)
    assert_finds(vi, t * 1000, t < NSMALL ? 3 : 50, t + 1, by_sliced, 1);
  value_index_destroy(vi);
}

/* Lean, two batches as the loader applies them at open (86 tables, then 35): the first
   leaves the group 2 free slots (88), the second's first 2 take them and the group grows for
   the other 33 with those 2 counted: 121 leaves in 128 slots, where growing for the 33 alone
   (to 120) overflowed at the last add and grew the group by an eighth (136). */
static void test_value_index_lean_growth_counts_placed(void **state) {
  (void)state;
  value_index_params_t p = {M, K, SEED, 3, 0, HIERARCHY_SIMILARITY, 0, NULL, 10, 0};
  err_t err;
  value_index_t *vi = value_index_create(&p, &err);
  assert_non_null(vi);
  uint64_t next = 1;
  const size_t batches[2] = {86, 35};
  for (int b = 0; b < 2; b++) {
    uint64_t nums[86];
    value_filter_t *fs[86];
    for (size_t t = 0; t < batches[b]; t++, next++) {
      nums[t] = next;
      fs[t] = leaf_of(M, next * 1000, 50);
    }
    size_t added = 0;
    assert_int_equal(value_index_add_batch(vi, batches[b], nums, fs, NULL, NULL, &added, &err),
                     BFH_OK);
    assert_int_equal(added, batches[b]);
  }
  value_index_stats_t st;
  value_index_get_stats(vi, &st);
  assert_int_equal(st.sliced_groups, 1);
  assert_int_equal(st.sliced_row_bits % 128, 0);
  uint64_t mf = st.sliced_row_bits / 128;
  if (mf < 384 || mf > 640) fail_msg("%llu row bits", (unsigned long long)st.sliced_row_bits);
  assert_int_equal(value_index_validate(vi, &err), BFH_OK);
  value_index_destroy(vi);
}

/* Which of the 8 tables the persisted file at data says maybe for value v. */
static uint8_t persisted_answers(const uint8_t *data, size_t len, const value_index_params_t *p,
                                 uint64_t v) {
  persisted_index_t *x = NULL;
  err_t err;
  if (persisted_index_open_mem(data, len, p, &x, &err) != BFH_OK) fail_msg("open: %s", err.msg);
  uint64_t nums[8];
  uint8_t ask[8], scan[8];
  for (uint64_t t = 0; t < 8; t++) {
    nums[t] = t + 1;
    ask[t] = 1;
    scan[t] = 0;
    assert_int_equal(persisted_index_bind(x, t + 1, 1000 + t, 77 + t), 1);
  }
  probe_t pr;
  probe_init(&pr, bfh_value_hash(&v, sizeof v, p->seed), p->m, p->k);
  block_index_t *bi = block_index_create();
  assert_non_null(bi);
  persisted_index_select(x, &pr, nums, 8, ask, scan, bi, NULL);
  block_index_destroy(bi);
  persisted_index_destroy(x);
  uint8_t mask = 0;
  for (int t = 0; t < 8; t++) mask |= (uint8_t)(scan[t] << t);
  return mask;
}

/* A BFH-INDEX file of version 1 (a group keyed by its fold r, a divisor of m) still reads,
   and answers as the same file of version 2 (keyed by mf = m / r): 8 small tables fold to
   one group of 64 bits (r = 128 of m = 8192); every value of a table is a maybe for it. */
static void test_value_index_persisted_version_1_reads(void **state) {
  (void)state;
  const uint64_t m = 8192;
  value_index_params_t p = {m, K, SEED, 3, 0, HIERARCHY_SIMILARITY, 10, NULL, 10, 1};
  err_t err;
  value_index_t *vi = value_index_create(&p, &err);
  assert_non_null(vi);
  persisted_index_table_t tabs[8];
  uint8_t *heads[8], *chunks[8];
  for (uint64_t t = 0; t < 8; t++) {
    value_filter_t *f = value_filter_create(m, K, SEED);
    value_block_map_builder_t *b = value_block_map_builder_create();
    assert_non_null(f);
    assert_non_null(b);
    for (uint64_t v = 0; v < 3; v++) {
      uint64_t x = t * 100 + v, h = bfh_value_hash(&x, sizeof x, SEED);
      value_filter_add_hash(f, h);
      assert_int_equal(value_block_map_builder_add(b, h, 0), BFH_OK);
    }
    assert_int_equal(value_block_map_builder_end_block(b, 0, 100), BFH_OK);
    size_t hl, cl;
    assert_int_equal(value_block_map_builder_finish(b, &heads[t], &hl, &chunks[t], &cl), BFH_OK);
    value_block_map_builder_destroy(b);
    tabs[t] = (persisted_index_table_t){t + 1, 1000 + t, 77 + t, heads[t], hl};
    assert_int_equal(value_index_add(vi, t + 1, f, NULL, 0, &err), BFH_OK);
  }
  char dir[TEST_PATH_MAX];
  assert_int_equal(test_tmpdir_create(dir, sizeof dir, "value_index_pidx"), 0);
  size_t written = 0;
  assert_int_equal(persisted_index_write(env_default(), dir, vi, tabs, 8, &written, &err), BFH_OK);
  assert_int_equal(written, 8);
  char path[TEST_PATH_MAX + 32];
  snprintf(path, sizeof path, "%s/%s", dir, PERSISTED_INDEX_FILE);
  FILE *fp = fopen(path, "rb");
  assert_non_null(fp);
  uint8_t *v2 = malloc(1 << 20);
  assert_non_null(v2);
  size_t len = fread(v2, 1, 1 << 20, fp);
  fclose(fp);
  assert_int_equal(decode_fixed32(v2 + 8), 2);
  assert_int_equal(decode_fixed32(v2 + 36), 1);  /* one group */
  assert_int_equal(decode_fixed64(v2 + 64), 64); /* of mf = 64 bits */
  uint8_t *v1 = malloc(len);
  assert_non_null(v1);
  memcpy(v1, v2, len);
  encode_fixed32(v1 + 8, 1);
  encode_fixed32(v1 + 56, crc32c_mask(crc32c_value(v1, 56)));
  encode_fixed64(v1 + 64, m / 64); /* r */
  uint64_t dir_len = decode_fixed64(v1 + 48);
  encode_fixed32(v1 + 64 + dir_len, crc32c_mask(crc32c_value(v1 + 64, (size_t)dir_len)));
  for (uint64_t t = 0; t < 8; t++)
    for (uint64_t v = 0; v < 3; v++) {
      uint64_t x = t * 100 + v;
      uint8_t a = persisted_answers(v2, len, &p, x), b = persisted_answers(v1, len, &p, x);
      assert_int_equal(a, b);
      assert_true(a >> t & 1);
    }
  for (uint64_t x = 5000; x < 5200; x++)
    assert_int_equal(persisted_answers(v2, len, &p, x), persisted_answers(v1, len, &p, x));
  /* A version 1 group whose r does not divide m does not add up. */
  encode_fixed64(v1 + 64, 3);
  encode_fixed32(v1 + 64 + dir_len, crc32c_mask(crc32c_value(v1 + 64, (size_t)dir_len)));
  persisted_index_t *x = NULL;
  assert_int_equal(persisted_index_open_mem(v1, len, &p, &x, &err), BFH_E_CORRUPT);
  free(v1);
  free(v2);
  for (int t = 0; t < 8; t++) {
    free(heads[t]);
    free(chunks[t]);
  }
  value_index_destroy(vi);
  assert_int_equal(test_rmrf(dir), 0);
}

/* Lean: a group opened for fewer leaves than its 8 slots holds the bits they ask for, spread
   over the 8 (no less than three quarters of what each asks), where a fold by a power of two
   could only keep them unfolded (asking 0.6 m: a fold by 2 would leave 0.5 m): 6 such
   tables take 8 slots of about 0.45 m, not 8 of m. Every value is still found. */
static void test_value_index_lean_group_holds_what_it_asks(void **state) {
  (void)state;
  const uint64_t m = 64 * 1000;
  value_index_params_t p = {m, K, SEED, 3, 0, HIERARCHY_SIMILARITY, 0, NULL, 10, 0};
  err_t err;
  value_index_t *vi = value_index_create(&p, &err);
  assert_non_null(vi);
  enum { NT = 6, NV = 3840 }; /* 10 bits x 3840 values: 0.6 m */
  uint64_t nums[NT];
  value_filter_t *fs[NT];
  for (uint64_t t = 0; t < NT; t++) {
    nums[t] = t + 1;
    fs[t] = leaf_of(m, t * 100000, NV);
  }
  size_t added = 0;
  assert_int_equal(value_index_add_batch(vi, NT, nums, fs, NULL, NULL, &added, &err), BFH_OK);
  assert_int_equal(added, NT);
  value_index_stats_t st;
  value_index_get_stats(vi, &st);
  assert_int_equal(st.sliced_groups, 1);
  /* 8 slots of mf bits, mf within [3/4, 1] of 0.6 m (the estimate of the values held is
     within a few percent) */
  assert_int_equal(st.sliced_row_bits % 8, 0);
  uint64_t mf = st.sliced_row_bits / 8;
  if (mf * 100 > m * 62 || mf * 100 < m * 42)
    fail_msg("folded to %llu bits of %llu", (unsigned long long)mf, (unsigned long long)m);
  assert_true(st.sliced_row_bits <= (uint64_t)NT * NV * 10 * 21 / 20);
  for (uint64_t t = 0; t < NT; t++) assert_finds(vi, t * 100000, NV, t + 1, by_sliced, 1);
  value_index_destroy(vi);
}

/* The same with leaves on disk: every probe preads the words it needs. */
static void test_value_index_on_disk_leaves_match(void **state) {
  (void)state;
  run_model(1, HIERARCHY_SIMILARITY, 10000, 2500, 1);
}

/* Leaves on disk keep no words in memory, only their chunk CRCs; answers stay exact. */
static void test_value_index_on_disk_leaves_keep_only_crcs(void **state) {
  (void)state;
  model_t *md = model_create();
  rng_t r;
  rng_init(&r, 7);
  value_index_params_t p = {M, K, SEED, 2, 1, HIERARCHY_SIMILARITY, 0, NULL, 0, 0};
  err_t err;
  value_index_t *vi = value_index_create(&p, &err);
  assert_non_null(vi);
  for (uint64_t t = 1; t < 40; t++) {
    value_filter_t *f = random_filter(&r);
    md->f[t] = copy_filter(f);
    char path[512];
    uint64_t off = write_leaf(md, t, f, &r, path, sizeof path);
    assert_int_equal(value_index_add(vi, t, f, path, off, &err), BFH_OK);
  }
  value_index_stats_t st;
  value_index_get_stats(vi, &st);
  assert_int_equal(st.leaf_bytes, 39 * CRC_BYTES);
  compare_all(md, vi, &r, 200, 1);
  /* Removes reload siblings from disk; answers stay exact. */
  for (uint64_t t = 1; t < 40; t += 3) {
    assert_int_equal(value_index_remove(vi, t), BFH_OK);
    value_filter_destroy(md->f[t]);
    md->f[t] = NULL;
  }
  compare_all(md, vi, &r, 200, 1);
  value_index_destroy(vi);
  model_destroy(md);
}

/* A leaf whose file is gone says maybe (never a false negative). */
static void test_value_index_unreadable_leaf_is_maybe(void **state) {
  (void)state;
  model_t *md = model_create();
  rng_t r;
  rng_init(&r, 9);
  value_index_params_t p = {M, K, SEED, 2, 1, HIERARCHY_SIMILARITY, 0, NULL, 0, 0};
  err_t err;
  value_index_t *vi = value_index_create(&p, &err);
  assert_non_null(vi);
  value_filter_t *f = value_filter_create(M, K, SEED); /* empty: says no to everything */
  char path[512];
  uint64_t off = write_leaf(md, 1, f, &r, path, sizeof path);
  assert_int_equal(value_index_add(vi, 1, f, path, off, &err), BFH_OK);
  probe_t pr;
  uint64_t v = 77;
  value_index_probe(vi, &v, sizeof v, &pr);
  u64vec_t out;
  u64vec_init(&out);
  assert_int_equal(value_index_candidates(vi, value_index_by_leaves, &pr, &out, NULL, &err),
                   BFH_OK);
  assert_int_equal(out.n, 0);
  unlink(path);
  /* The fd may be cached from the probe above: a new index reads the missing file. */
  value_index_destroy(vi);
  vi = value_index_create(&p, &err);
  f = value_filter_create(M, K, SEED);
  assert_int_equal(value_index_add(vi, 1, f, path, off, &err), BFH_OK);
  assert_int_equal(value_index_candidates(vi, value_index_by_leaves, &pr, &out, NULL, &err),
                   BFH_OK);
  assert_int_equal(out.n, 1);
  assert_int_equal(out.v[0], 1);
  u64vec_release(&out);
  value_index_destroy(vi);
  model_destroy(md);
}

/* Leaves on disk are opened and read through params.io: a failed open or read there (an
   injected fault, counted by the env) says maybe, for every method that reads leaves; once the
   fault is gone the leaf says no again. */
static void test_value_index_leaf_read_fault_is_maybe(void **state) {
  (void)state;
  model_t *md = model_create();
  rng_t r;
  rng_init(&r, 11);
  env_t *io = env_create_faulty();
  assert_non_null(io);
  value_index_params_t p = {M, K, SEED, 2, 1, HIERARCHY_SIMILARITY, 0, io, 0, 0};
  probe_t pr;
  uint64_t v = 77;
  u64vec_t out;
  u64vec_init(&out);
  const env_fault_t faults[] = {{ENV_OP_READ, 1, 1, ENV_ERR_EIO, "000001.flt"},
                                {ENV_OP_OPEN, 1, 1, ENV_ERR_EIO, "000001.flt"}};
  for (size_t i = 0; i < sizeof faults / sizeof *faults; i++) {
    for (int whole = 0; whole < 2; whole++) {
      err_t err;
      p.leaves_on_disk = whole ? BFH_LEAVES_ON_DISK_WHOLE : BFH_LEAVES_ON_DISK;
      value_index_t *vi = value_index_create(&p, &err); /* no file open yet */
      assert_non_null(vi);
      value_filter_t *f = value_filter_create(M, K, SEED); /* empty: says no to everything */
      value_filter_t *g = value_filter_create(M, K, SEED); /* a second leaf: a root above */
      value_filter_add(g, &v, sizeof v);
      char path[512];
      uint64_t off = write_leaf(md, 1, f, &r, path, sizeof path);
      assert_int_equal(value_index_add(vi, 1, f, path, off, &err), BFH_OK);
      off = write_leaf(md, 2, g, &r, path, sizeof path);
      assert_int_equal(value_index_add(vi, 2, g, path, off, &err), BFH_OK);
      value_index_probe(vi, &v, sizeof v, &pr);
      assert_int_equal(env_fail_with(io, &faults[i]), BFH_OK);
      uint64_t before = env_faults_injected(io);
      for (size_t m = 0; m < 2; m++) { /* leaves, hierarchy: the sliced index holds the bits */
        out.n = 0;
        assert_int_equal(value_index_candidates(vi, methods[m], &pr, &out, NULL, &err), BFH_OK);
        u64vec_sort(&out);
        assert_int_equal(out.n, 2); /* leaf 1 could not be read: maybe */
        assert_int_equal(out.v[0], 1);
      }
      assert_true(env_faults_injected(io) > before);
      env_fail_none(io);
      for (size_t m = 0; m < 2; m++) {
        out.n = 0;
        assert_int_equal(value_index_candidates(vi, methods[m], &pr, &out, NULL, &err), BFH_OK);
        assert_int_equal(out.n, 1); /* read again: leaf 1 says no */
        assert_int_equal(out.v[0], 2);
      }
      value_index_destroy(vi);
    }
  }
  u64vec_release(&out);
  env_destroy(io);
  model_destroy(md);
}

/* select(): a table the index has no leaf for is always scanned; a leaf that says no is not. */
static void test_value_index_select_marks_unindexed(void **state) {
  (void)state;
  value_index_params_t p = {M, K, SEED, 2, 0, HIERARCHY_SIMILARITY, 0, NULL, 0, 0};
  err_t err;
  value_index_t *vi = value_index_create(&p, &err);
  assert_non_null(vi);
  uint64_t a = 1, b = 2;
  value_filter_t *fa = value_filter_create(M, K, SEED);
  value_filter_add(fa, &a, sizeof a);
  value_filter_t *fb = value_filter_create(M, K, SEED);
  value_filter_add(fb, &b, sizeof b);
  assert_int_equal(value_index_add(vi, 10, fa, NULL, 0, &err), BFH_OK);
  assert_int_equal(value_index_add(vi, 11, fb, NULL, 0, &err), BFH_OK);
  probe_t pr;
  value_index_probe(vi, &a, sizeof a, &pr);
  uint64_t nums[3] = {10, 11, 12};
  for (size_t i = 0; i < 3; i++) {
    uint8_t scan[3] = {9, 9, 9};
    assert_int_equal(value_index_select(vi, methods[i], &pr, nums, 3, scan, NULL, &err), BFH_OK);
    assert_int_equal(scan[0], 1);
    assert_int_equal(scan[1], bits_test_probe(fb->words, &pr)); /* almost surely 0 */
    assert_int_equal(scan[2], 1);
  }
  value_index_destroy(vi);
}

/* Leaves entering two at a time (the loader's steps) grow the bit-sliced index geometrically:
   a re-lay copies every one of its m rows, and re-laying it for every batch made loading a
   500M-entry database (6573 tables) copy terabytes. 512 leaves: at most 32 re-lays (by an
   eighth from 8 slots: 27), where an exact reserve per batch (capacity rounded to 8 slots) gave 64.
 */
static void test_value_index_batches_grow_geometrically(void **state) {
  (void)state;
  value_index_params_t p = {M, K, SEED, 2, 0, HIERARCHY_SIMILARITY, 0, NULL, 0, 0};
  err_t err;
  value_index_t *vi = value_index_create(&p, &err);
  assert_non_null(vi);
  for (uint64_t t = 1; t <= 512; t += 2) {
    uint64_t a = t, b = t + 1;
    value_filter_t *fa = value_filter_create(M, K, SEED), *fb = value_filter_create(M, K, SEED);
    value_filter_add(fa, &a, sizeof a);
    value_filter_add(fb, &b, sizeof b);
    assert_int_equal(value_index_add(vi, t, fa, NULL, 0, &err), BFH_OK);
    assert_int_equal(value_index_add(vi, t + 1, fb, NULL, 0, &err), BFH_OK);
    assert_int_equal(value_index_apply(vi, &err), BFH_OK);
  }
  assert_int_equal(value_index_leaf_count(vi), 512);
  uint64_t relays = value_index_relay_count(vi);
  if (relays > 32)
    fail_msg("%llu re-lays of the sliced rows for 512 leaves, want <= 32",
             (unsigned long long)relays);
  if (value_index_validate(vi, &err) != BFH_OK) fail_msg("validate: %s", err.msg);
  value_index_destroy(vi);
}

static void test_value_index_rejects_mismatch(void **state) {
  (void)state;
  value_index_params_t p = {M, K, SEED, 2, 0, HIERARCHY_SIMILARITY, 0, NULL, 0, 0};
  err_t err;
  value_index_t *vi = value_index_create(&p, &err);
  assert_non_null(vi);
  assert_int_equal(value_index_add(vi, 1, value_filter_create(M * 2, K, SEED), NULL, 0, &err),
                   BFH_E_INVALID);
  assert_non_null(strstr(err.msg, "m=2048"));
  assert_int_equal(value_index_add(vi, 1, value_filter_create(M, K + 1, SEED), NULL, 0, &err),
                   BFH_E_INVALID);
  assert_int_equal(value_index_add(vi, 1, value_filter_create(M, K, SEED + 1), NULL, 0, &err),
                   BFH_E_INVALID);
  assert_int_equal(value_index_add(vi, 1, value_filter_create(M, K, SEED), NULL, 0, &err), BFH_OK);
  assert_int_equal(value_index_add(vi, 1, value_filter_create(M, K, SEED), NULL, 0, &err),
                   BFH_E_INVALID);
  assert_int_equal(value_index_leaf_count(vi), 1);
  value_index_params_t bad = p;
  bad.order = 1;
  assert_null(value_index_create(&bad, &err));
  assert_int_equal(err.code, BFH_E_INVALID);
  value_index_destroy(vi);
  value_index_destroy(NULL);
}

/* Bulk load gives the same answers as one add at a time. */
static void test_value_index_batch_equals_single_adds(void **state) {
  (void)state;
  model_t *md = model_create();
  rng_t r;
  rng_init(&r, 11);
  value_index_params_t p = {M, K, SEED, 3, 0, HIERARCHY_SIMILARITY, 0, NULL, 0, 0};
  err_t err;
  value_index_t *vi = value_index_create(&p, &err);
  enum { N = 200 };
  uint64_t nums[N + 1];
  value_filter_t *fs[N + 1];
  for (size_t i = 0; i < N; i++) {
    nums[i] = 1 + i * 3;
    fs[i] = random_filter(&r);
    md->f[nums[i]] = copy_filter(fs[i]);
  }
  nums[N] = nums[0]; /* a repeat: refused, the rest go in */
  fs[N] = random_filter(&r);
  size_t added = 0;
  assert_int_equal(value_index_add_batch(vi, N + 1, nums, fs, NULL, NULL, &added, &err),
                   BFH_E_INVALID);
  assert_int_equal(added, N);
  compare_all(md, vi, &r, 300, 0);
  value_index_destroy(vi);
  model_destroy(md);
}

/* A leaf on disk whose words went bad after it was indexed (zeroed in place, as a damaged
   disk or a stray writer would leave them) says maybe, never no: each chunk a probe reads is
   checked against the CRCs taken when the leaf was added. m spans several chunks. */
static void test_value_index_damaged_leaf_on_disk_is_maybe(void **state) {
  (void)state;
  const uint64_t m = 64 * 64 * 5 + 64; /* 5 full 512-byte chunks and a short one */
  for (int mode = BFH_LEAVES_ON_DISK; mode <= BFH_LEAVES_ON_DISK_WHOLE; mode++) {
    model_t *md = model_create();
    rng_t r;
    rng_init(&r, 11);
    value_index_params_t p = {m, K, SEED, 2, mode, HIERARCHY_SIMILARITY, 0, NULL, 0, 0};
    err_t err;
    value_index_t *vi = value_index_create(&p, &err);
    assert_non_null(vi);
    value_filter_t *f = value_filter_create(m, K, SEED);
    for (uint64_t v = 0; v < 200; v++) value_filter_add(f, &v, sizeof v);
    char path[512];
    uint64_t off = write_leaf(md, 1, f, &r, path, sizeof path);
    size_t nwords = f->nwords;
    assert_int_equal(value_index_add(vi, 1, f, path, off, &err), BFH_OK); /* takes f */
    /* Values 1000.. the intact filter rules out: their probes read every chunk in turn. */
    uint64_t absent[64];
    size_t nabsent = 0;
    for (uint64_t v = 1000; nabsent < 64; v++) {
      probe_t pr;
      value_index_probe(vi, &v, sizeof v, &pr);
      u64vec_t out;
      u64vec_init(&out);
      assert_int_equal(value_index_candidates(vi, value_index_by_leaves, &pr, &out, NULL, &err),
                       BFH_OK);
      if (out.n == 0) absent[nabsent++] = v;
      u64vec_release(&out);
    }
    /* Zero every word in the file, leaving the header and the trailer alone. */
    FILE *fp = fopen(path, "r+b");
    assert_non_null(fp);
    assert_int_equal(fseek(fp, (long)(off + value_filter_word_offset(0)), SEEK_SET), 0);
    for (size_t i = 0; i < nwords * 8; i++) assert_int_equal(fputc(0, fp), 0);
    fclose(fp);
    for (uint64_t v = 0; v < 264; v++) { /* 200 present, 64 ruled out before */
      uint64_t x = v < 200 ? v : absent[v - 200];
      probe_t pr;
      value_index_probe(vi, &x, sizeof x, &pr);
      /* LEAVES reads the leaf for every value. HIERARCHY reaches it for the present ones; its
         internal nodes (in memory, intact) may rightly rule the absent ones out. */
      for (int mi = 0; mi < (v < 200 ? 2 : 1); mi++) {
        u64vec_t out;
        u64vec_init(&out);
        assert_int_equal(value_index_candidates(vi, methods[mi], &pr, &out, NULL, &err), BFH_OK);
        if (out.n != 1)
          fail_msg("mode %d method %d value %llu: the damaged leaf said no", mode, (int)mi,
                   (unsigned long long)x);
        u64vec_release(&out);
      }
    }
    value_index_destroy(vi);
    model_destroy(md);
  }
}

/* Lean: a small leaf (an L0 table, the last of a compaction) joins a group folded less that
   has a free slot instead of opening a group of its own (8 slots of m / r bits for one
   leaf), and still answers every value it holds. */
static void test_value_index_lean_small_joins(void **state) {
  (void)state;
  value_index_params_t p = {M, K, SEED, 3, 0, HIERARCHY_SIMILARITY, 0, NULL, 10, 0};
  err_t err;
  value_index_t *vi = value_index_create(&p, &err);
  assert_non_null(vi);
  value_filter_t *full = value_filter_create(M, K, SEED), *small = value_filter_create(M, K, SEED);
  assert_non_null(full);
  assert_non_null(small);
  for (uint64_t v = 0; v < 50; v++) value_filter_add(full, &v, sizeof v);       /* folds by 2 */
  for (uint64_t v = 1000; v < 1003; v++) value_filter_add(small, &v, sizeof v); /* by 16 */
  assert_int_equal(value_index_add(vi, 1, full, NULL, 0, &err), BFH_OK);
  assert_int_equal(value_index_add(vi, 2, small, NULL, 0, &err), BFH_OK);
  value_index_stats_t st;
  value_index_get_stats(vi, &st);
  assert_int_equal(st.sliced_groups, 1);
  for (uint64_t v = 1000; v < 1003; v++) {
    probe_t pr;
    value_index_probe(vi, &v, sizeof v, &pr);
    for (int m = 0; m < 3; m++) {
      u64vec_t out;
      u64vec_init(&out);
      assert_int_equal(value_index_candidates(vi, methods[m], &pr, &out, NULL, &err), BFH_OK);
      int has = 0;
      for (size_t i = 0; i < out.n; i++) has |= out.v[i] == 2;
      assert_true(has);
      u64vec_release(&out);
    }
  }
  value_index_destroy(vi);
}

/* Lean, a batch as the loader applies at open: full tables (asking about m / 2) and a few
   small ones (asking the minimum, 64 bits) numbered first. The small ones take the free slots
   of the full tables' group, which grows exactly (rounded up to 8 slots), instead of opening
   a group of their own; once
   8 slots or more are free after removals the group gives their rows back. Every value added
   is still found. */
static void test_value_index_lean_batch_fits_exactly(void **state) {
  (void)state;
  enum { NT = 23, NSMALL = 3 };
  err_t err;
  value_index_t *vi = lean_batch(NT, NSMALL);
  value_index_stats_t st;
  value_index_get_stats(vi, &st);
  assert_int_equal(st.sliced_groups, 1);
  /* 24 slots of mf bits: the 20 full tables ask about 500 each, spread over 24 slots (three
     quarters of the largest ask at least) */
  assert_int_equal(st.sliced_row_bits % 24, 0);
  uint64_t mf = st.sliced_row_bits / 24;
  assert_true(mf % 64 == 0 && mf >= 384 && mf <= 512);
  for (uint64_t t = NSMALL; t < NSMALL + 10; t++)
    assert_int_equal(value_index_remove(vi, t + 1), BFH_OK);
  value_index_get_stats(vi, &st);
  assert_int_equal(st.leaves, NT - 10);
  assert_int_equal(st.sliced_row_bits, mf * 16);
  assert_int_equal(value_index_validate(vi, &err), BFH_OK);
  for (uint64_t t = 0; t < NT; t++)
    if (t < NSMALL || t >= NSMALL + 10)
      assert_finds(vi, t * 1000, t < NSMALL ? 3 : 50, t + 1, methods, 3);
  value_index_destroy(vi);
}

/* select() knows which tables have a leaf by a bitmap of table numbers below 2^24 and by a
   search above: tables on either side of the limit, in no particular order, added and
   removed, are marked exactly (a table without a leaf is scanned; one with a leaf that
   says no is not). */
static void test_value_index_select_leaf_lookup(void **state) {
  (void)state;
  value_index_params_t p = {M, K, SEED, 2, 0, HIERARCHY_SIMILARITY, 0, NULL, 10, 0};
  err_t err;
  value_index_t *vi = value_index_create(&p, &err);
  assert_non_null(vi);
  const uint64_t big = (uint64_t)1 << 30, lim = (uint64_t)1 << 24;
  uint64_t have[5] = {3, 700, lim - 1, lim + 5, big};
  for (size_t i = 0; i < 5; i++) {
    value_filter_t *f = value_filter_create(M, K, SEED);
    assert_non_null(f);
    uint64_t v = 1000 + i;
    value_filter_add(f, &v, sizeof v);
    assert_int_equal(value_index_add(vi, have[i], f, NULL, 0, &err), BFH_OK);
  }
  assert_int_equal(value_index_apply(vi, &err), BFH_OK); /* in, then out */
  assert_int_equal(value_index_remove(vi, 700), BFH_OK);
  uint64_t absent = 424242; /* no leaf holds it: a leaf passes it with probability < 1% */
  probe_t pr;
  value_index_probe(vi, &absent, sizeof absent, &pr);
  uint64_t nums[9] = {big, 3, lim + 5, 700, lim - 1, 4, big + 1, lim + 6, 64 * 1024};
  uint8_t want[9] = {0, 0, 0, 1, 0, 1, 1, 1, 1};
  uint8_t scan[9];
  memset(scan, 9, sizeof scan);
  assert_int_equal(value_index_select(vi, methods[2], &pr, nums, 9, scan, NULL, &err), BFH_OK);
  for (size_t i = 0; i < 9; i++) assert_int_equal(scan[i], want[i]);
  value_index_destroy(vi);
}

/* ---- Leaves folded as they stream in ------------------------------------------------------ */

/* 18,750 words: three 64 KiB reads (the last one short) and a short last chunk. */
#define STREAM_M 1200000ull
#define STREAM_TABLES 24
#define STREAM_BITS 11 /* lean bits per value */

/* Values of streamed test table t: t * 10^6 + [0, stream_nv(t)), from 2,000 to 40,000 of
   them, so that the tables ask for several folds. */
static uint64_t stream_nv(uint64_t t) {
  return 2000 + (t * 7919) % 38000;
}

/* A lean index given tables 1..nt in one batch, as the loader enters an open's: whole
   (value_index_add: each filter held until they enter together), or streamed (each written to
   a file of md's, made with value_index_leaf_make, its words dropped, and added). */
static value_index_t *stream_index(model_t *md, size_t nt, int streamed) {
  value_index_params_t p = {STREAM_M, K, SEED, 3, 0, HIERARCHY_SIMILARITY, 0, NULL, STREAM_BITS, 0};
  err_t err;
  value_index_t *vi = value_index_create(&p, &err);
  assert_non_null(vi);
  rng_t r;
  rng_init(&r, 45);
  for (uint64_t t = 1; t <= nt; t++) {
    value_filter_t *f = leaf_of(STREAM_M, t * 1000000, stream_nv(t));
    if (!streamed) {
      assert_int_equal(value_index_add(vi, t, f, NULL, 0, &err), BFH_OK);
      continue;
    }
    char path[512];
    uint64_t off = write_leaf(md, t, f, &r, path, sizeof path);
    value_index_leaf_t *l = value_index_leaf_make(vi, t, f, path, off, &err);
    assert_non_null(l);
    assert_int_equal(value_index_add_leaf(vi, l, &err), BFH_OK);
  }
  assert_int_equal(value_index_apply(vi, &err), BFH_OK);
  return vi;
}

/* a and b hold the same fold groups, byte for byte: each group's fold, slots, ids and rows,
   and each leaf's group and folded popcount. */
static void assert_same_groups(value_index_t *a, value_index_t *b) {
  assert_int_equal(a->ngroups, b->ngroups);
  assert_int_equal(a->n, b->n);
  for (size_t g = 0; g < a->ngroups; g++) {
    assert_int_equal(a->groups[g].mf, b->groups[g].mf);
    const uint8_t *ra, *rb;
    size_t ba, bb, sa, sb;
    const uint64_t *ia, *ib;
    sliced_rows(a->groups[g].sliced, &ra, &ba, &sa, &ia);
    sliced_rows(b->groups[g].sliced, &rb, &bb, &sb, &ib);
    assert_int_equal(ba, bb);
    assert_int_equal(sa, sb);
    for (size_t j = 0; j < sa; j++) {
      assert_int_equal(sliced_slot_live(a->groups[g].sliced, j),
                       sliced_slot_live(b->groups[g].sliced, j));
      if (sliced_slot_live(a->groups[g].sliced, j)) assert_int_equal(ia[j], ib[j]);
    }
    assert_memory_equal(ra, rb, a->groups[g].mf * ba);
  }
  for (size_t i = 0; i < a->n; i++) {
    assert_int_equal(a->leaves[i]->number, b->leaves[i]->number);
    assert_int_equal(a->leaves[i]->group, b->leaves[i]->group);
    assert_int_equal(a->leaves[i]->folded_popcount, b->leaves[i]->folded_popcount);
    assert_null(b->leaves[i]->crcs); /* the fold checked them; none kept */
  }
}

/* The lean index built from leaves that stream in (words dropped at make, read back from
   their files and folded chunk by chunk) is the one built from whole leaves: the same groups,
   byte for byte, the same index_bytes, and the same candidates for 3,000 values (every value
   of a few tables, and random ones, fixed seed). */
static void test_value_index_streamed_fold_equals_whole(void **state) {
  (void)state;
  model_t *md = model_create();
  value_index_t *whole = stream_index(md, STREAM_TABLES, 0);
  value_index_t *str = stream_index(md, STREAM_TABLES, 1);
  assert_true(whole->ngroups > 1); /* the tables ask for several folds */
  assert_same_groups(whole, str);
  value_index_stats_t sw, ss;
  value_index_get_stats(whole, &sw);
  value_index_get_stats(str, &ss);
  assert_int_equal(ss.index_bytes - sw.index_bytes,
                   STREAM_TABLES * (strlen(md->dir) + sizeof "/000001.flt")); /* the paths */
  assert_int_equal(ss.fold_damaged, 0);
  rng_t r;
  rng_init(&r, 4545);
  for (int q = 0; q < 3000; q++) {
    uint64_t v = q < 1000 ? 3 * 1000000 + (uint64_t)q : rng_below(&r, 30 * 1000000ull);
    probe_t pr;
    value_index_probe(whole, &v, sizeof v, &pr);
    for (int m = 0; m < 2; m++) { /* leaves, sliced (lean: the same columns) */
      u64vec_t a, b;
      u64vec_init(&a);
      u64vec_init(&b);
      err_t err;
      value_index_by_fn by = m ? value_index_by_sliced : value_index_by_leaves;
      assert_int_equal(value_index_candidates(whole, by, &pr, &a, NULL, &err), BFH_OK);
      assert_int_equal(value_index_candidates(str, by, &pr, &b, NULL, &err), BFH_OK);
      u64vec_sort(&a);
      u64vec_sort(&b);
      assert_int_equal(a.n, b.n);
      if (a.n) assert_memory_equal(a.v, b.v, a.n * sizeof *a.v);
      u64vec_release(&a);
      u64vec_release(&b);
    }
  }
  value_index_destroy(whole);
  value_index_destroy(str);
  model_destroy(md);
}

/* The most leaf words an index holds outside its structures (load_peak_bytes): leaves that
   stream in hold one leaf's words (at make) or one 64 KiB read and one folded leaf (at the
   fold), never more; whole leaves entered together hold every one of them. */
static void test_value_index_streamed_load_peak_is_one_leaf(void **state) {
  (void)state;
  model_t *md = model_create();
  const uint64_t leaf_bytes = STREAM_M / 8;
  value_index_t *whole = stream_index(md, STREAM_TABLES, 0);
  value_index_t *str = stream_index(md, STREAM_TABLES, 1);
  value_index_stats_t sw, ss;
  value_index_get_stats(whole, &sw);
  value_index_get_stats(str, &ss);
  assert_true(sw.load_peak_bytes >= STREAM_TABLES * leaf_bytes);
  assert_true(ss.load_peak_bytes >= leaf_bytes); /* the one a make was handed */
  assert_true(ss.load_peak_bytes <= leaf_bytes + VALUE_INDEX_FOLD_READ_BYTES);
  value_index_destroy(whole);
  value_index_destroy(str);
  model_destroy(md);
}

/* Flips one byte of the stored words of a leaf written at path/off, in chunk c (512 bytes). */
static void damage_chunk(const char *path, uint64_t off, size_t c) {
  FILE *fp = fopen(path, "r+b");
  assert_non_null(fp);
  long at = (long)(off + value_filter_word_offset((uint64_t)c * 64) + 77);
  assert_int_equal(fseek(fp, at, SEEK_SET), 0);
  int x = fgetc(fp);
  assert_int_not_equal(x, EOF);
  assert_int_equal(fseek(fp, at, SEEK_SET), 0);
  assert_int_equal(fputc(x ^ 0x5a, fp), x ^ 0x5a);
  fclose(fp);
}

/* Whether the index names table t a candidate for v, by the sliced index. */
static int candidate(value_index_t *vi, uint64_t v, uint64_t t) {
  probe_t pr;
  value_index_probe(vi, &v, sizeof v, &pr);
  u64vec_t out;
  u64vec_init(&out);
  err_t err;
  assert_int_equal(value_index_candidates(vi, value_index_by_sliced, &pr, &out, NULL, &err),
                   BFH_OK);
  int has = 0;
  for (size_t i = 0; i < out.n; i++) has |= out.v[i] == t;
  u64vec_release(&out);
  return has;
}

/* A streamed leaf whose file went bad between its make and its fold: a chunk that does not
   match its CRC is folded as ones (its values, and others, say maybe: never a false negative),
   counted, and named with its file and offset; a file gone folds the whole leaf as ones. */
static void test_value_index_streamed_damage_is_maybe(void **state) {
  (void)state;
  model_t *md = model_create();
  value_index_params_t p = {STREAM_M, K, SEED, 3, 0, HIERARCHY_SIMILARITY, 0, NULL, STREAM_BITS, 0};
  err_t err;
  value_index_t *vi = value_index_create(&p, &err);
  assert_non_null(vi);
  rng_t r;
  rng_init(&r, 46);
  char paths[4][512];
  uint64_t offs[4];
  for (uint64_t t = 1; t <= 3; t++) {
    value_filter_t *f = leaf_of(STREAM_M, t * 1000000, stream_nv(t));
    offs[t] = write_leaf(md, t, f, &r, paths[t], sizeof paths[t]);
    value_index_leaf_t *l = value_index_leaf_make(vi, t, f, paths[t], offs[t], &err);
    assert_non_null(l);
    assert_int_equal(value_index_add_leaf(vi, l, &err), BFH_OK);
  }
  damage_chunk(paths[2], offs[2], 100);
  assert_int_equal(unlink(paths[3]), 0);
  value_index_stats_t st;
  value_index_get_stats(vi, &st); /* applies: folds them */
  const uint64_t nchunks = (STREAM_M / 64 + 63) / 64;
  assert_int_equal(st.fold_damaged, 1 + nchunks);
  assert_int_equal(value_index_leaf_count(vi), 3);
  for (uint64_t t = 1; t <= 3; t++)
    for (uint64_t v = 0; v < stream_nv(t); v++)
      if (!candidate(vi, t * 1000000 + v, t))
        fail_msg("table %llu value %llu: a false negative", (unsigned long long)t,
                 (unsigned long long)v);
  /* Table 3 is all ones: a candidate for anything; table 1 rules most absent values out. */
  int ruled_out = 0;
  for (uint64_t v = 0; v < 100; v++) {
    assert_true(candidate(vi, 50 * 1000000 + v, 3));
    ruled_out += !candidate(vi, 50 * 1000000 + v, 1);
  }
  assert_true(ruled_out > 50);
  value_index_destroy(vi);
  /* The message names the file and the offset of the damaged chunk. */
  vi = value_index_create(&p, &err);
  value_filter_t *f = leaf_of(STREAM_M, 2 * 1000000, stream_nv(2));
  offs[2] = write_leaf(md, 2, f, &r, paths[2], sizeof paths[2]);
  value_index_leaf_t *l = value_index_leaf_make(vi, 2, f, paths[2], offs[2], &err);
  assert_non_null(l);
  assert_int_equal(value_index_add_leaf(vi, l, &err), BFH_OK);
  damage_chunk(paths[2], offs[2], 100);
  value_index_get_stats(vi, &st);
  assert_int_equal(st.fold_damaged, 1);
  char want[600];
  snprintf(want, sizeof want, "table 2: leaf in %s at offset %llu: chunk checksum mismatch",
           paths[2], (unsigned long long)(offs[2] + value_filter_word_offset(100 * 64)));
  assert_string_equal(st.fold_damage_msg, want);
  value_index_destroy(vi);
  model_destroy(md);
}

/* The bytes the queued adds hold (the loader enters them when they reach 64 MiB): a whole
   leaf its words, a leaf made to stream its chunk CRCs only (4 bytes per 512 of words), so that
   an open's leaves, however many, enter in one batch. */
static void test_value_index_pending_bytes(void **state) {
  (void)state;
  model_t *md = model_create();
  value_index_params_t p = {STREAM_M, K, SEED, 3, 0, HIERARCHY_SIMILARITY, 0, NULL, STREAM_BITS, 0};
  err_t err;
  value_index_t *vi = value_index_create(&p, &err);
  assert_non_null(vi);
  rng_t r;
  rng_init(&r, 47);
  const uint64_t words = STREAM_M / 64, crcs = 4 * ((words + 63) / 64);
  for (uint64_t t = 1; t <= 3; t++) {
    value_filter_t *f = leaf_of(STREAM_M, t * 1000000, 100);
    assert_int_equal(value_index_add(vi, t, f, NULL, 0, &err), BFH_OK);
  }
  assert_int_equal(value_index_pending_bytes(vi), 3 * 8 * words);
  for (uint64_t t = 4; t <= 6; t++) {
    value_filter_t *f = leaf_of(STREAM_M, t * 1000000, 100);
    char path[512];
    uint64_t off = write_leaf(md, t, f, &r, path, sizeof path);
    value_index_leaf_t *l = value_index_leaf_make(vi, t, f, path, off, &err);
    assert_non_null(l);
    assert_int_equal(value_index_add_leaf(vi, l, &err), BFH_OK);
  }
  assert_int_equal(value_index_pending_bytes(vi), 3 * 8 * words + 3 * crcs);
  assert_int_equal(value_index_remove(vi, 2), BFH_OK); /* dropped from the queue */
  assert_int_equal(value_index_pending_bytes(vi), 2 * 8 * words + 3 * crcs);
  assert_int_equal(value_index_apply(vi, &err), BFH_OK);
  assert_int_equal(value_index_pending_bytes(vi), 0);
  value_index_destroy(vi);
  model_destroy(md);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_teardown(test_value_index_random_ops_match_fresh_build, model_teardown),
      cmocka_unit_test_teardown(test_value_index_queued_ops_match_fresh_build, model_teardown),
      cmocka_unit_test_teardown(test_value_index_random_ops_positional, model_teardown),
      cmocka_unit_test_teardown(test_value_index_paper_tree, model_teardown),
      cmocka_unit_test_teardown(test_value_index_on_disk_leaves_match, model_teardown),
      cmocka_unit_test_teardown(test_value_index_lean_ops_match, model_teardown),
      cmocka_unit_test(test_value_index_lean_small_joins),
      cmocka_unit_test(test_value_index_fold_map_exact),
      cmocka_unit_test(test_value_index_fold_no_false_negative),
      cmocka_unit_test(test_value_index_lean_group_holds_what_it_asks),
      cmocka_unit_test(test_value_index_persisted_version_1_reads),
      cmocka_unit_test(test_value_index_lean_placed_slots_not_free),
      cmocka_unit_test(test_value_index_lean_growth_counts_placed),
      cmocka_unit_test(test_value_index_lean_batch_fits_exactly),
      cmocka_unit_test(test_value_index_select_leaf_lookup),
      cmocka_unit_test_teardown(test_value_index_on_disk_leaves_keep_only_crcs, model_teardown),
      cmocka_unit_test_teardown(test_value_index_unreadable_leaf_is_maybe, model_teardown),
      cmocka_unit_test_teardown(test_value_index_damaged_leaf_on_disk_is_maybe, model_teardown),
      cmocka_unit_test_teardown(test_value_index_leaf_read_fault_is_maybe, model_teardown),
      cmocka_unit_test_teardown(test_value_index_select_marks_unindexed, model_teardown),
      cmocka_unit_test_teardown(test_value_index_batches_grow_geometrically, model_teardown),
      cmocka_unit_test_teardown(test_value_index_rejects_mismatch, model_teardown),
      cmocka_unit_test_teardown(test_value_index_batch_equals_single_adds, model_teardown),
      cmocka_unit_test_teardown(test_value_index_streamed_fold_equals_whole, model_teardown),
      cmocka_unit_test_teardown(test_value_index_streamed_load_peak_is_one_leaf, model_teardown),
      cmocka_unit_test_teardown(test_value_index_streamed_damage_is_maybe, model_teardown),
      cmocka_unit_test_teardown(test_value_index_pending_bytes, model_teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

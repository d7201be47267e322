/* hierarchy_t tests: a model test against two oracles (probing every leaf one by one, and
 * the bit-sliced index kept in step), with hierarchy_validate() after every step, for
 * orders 2, 3, 5, 10 and both placements; non-resident leaves through a leaf source; the
 * positional bulk build; error cases; and proof that validate() catches a damaged node.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "filters/bits.h"
#include "hierarchy/hierarchy.h"
#include "hierarchy/sliced.h"
#include "util/random.h"

#define MAX_IDS 4096 /* leaf ids are drawn from [0, MAX_IDS) */
#define MAX_WORDS 32 /* m <= 2048 */
#define UNIVERSE 400 /* values are "v<i>" for i < UNIVERSE; absent ones above */
#define K 3
#define OPS_PER_RUN 100000 /* inserts + removes per order and placement */

/* The test's leaf store: words of every id (kept while the leaf is live), served either
   as borrowed words or through the leaf source. */
typedef struct store {
  uint64_t m;
  size_t nwords;
  uint64_t words[MAX_IDS][MAX_WORDS];
  int live[MAX_IDS];
  uint64_t live_ids[MAX_IDS]; /* the live ids, in insertion order */
  size_t nlive;
  uint64_t loads, probes;
  int64_t fail_id; /* load of this id fails (-1: none) */
} store_t;

static int store_probe(void *ctx, uint64_t id, const probe_t *p) {
  store_t *s = ctx;
  s->probes++;
  return bits_test_probe(s->words[id], p);
}

static int store_load(void *ctx, uint64_t id, uint64_t *out) {
  store_t *s = ctx;
  if ((int64_t)id == s->fail_id) return ST_E_IO;
  s->loads++;
  memcpy(out, s->words[id], s->nwords * sizeof(uint64_t));
  return ST_OK;
}

static store_t *store_new(uint64_t m) {
  store_t *s = calloc(1, sizeof *s);
  assert_non_null(s);
  s->m = m;
  s->nwords = bits_words(m);
  s->fail_id = -1;
  return s;
}

static void probe_of_value(probe_t *p, uint64_t v, uint64_t m) {
  char buf[32];
  int n = snprintf(buf, sizeof buf, "v%llu", (unsigned long long)v);
  probe_init(p, bfh_hash64(buf, (size_t)n, BFH_DEFAULT_SEED), m, K);
}

/* Fills the words of id with 1..nvals random values of the universe (so leaves overlap and
   Hamming distances vary), plus the value `common` if it is not UINT64_MAX. */
static void store_fill(store_t *s, rng_t *r, uint64_t id, uint32_t nvals, uint64_t common) {
  memset(s->words[id], 0, sizeof s->words[id]);
  uint32_t n = 1 + (uint32_t)rng_below(r, nvals);
  /* Cluster values so some leaves are alike: a leaf draws from a window of the universe. */
  uint64_t base = rng_below(r, UNIVERSE - 50);
  for (uint32_t i = 0; i < n; i++) {
    probe_t p;
    probe_of_value(&p, base + rng_below(r, 50), s->m);
    for (uint32_t j = 0; j < p.k; j++) bits_set(s->words[id], p.pos[j]);
  }
  if (common != UINT64_MAX) {
    probe_t p;
    probe_of_value(&p, common, s->m);
    for (uint32_t j = 0; j < p.k; j++) bits_set(s->words[id], p.pos[j]);
  }
}

static void store_add_live(store_t *s, uint64_t id) {
  s->live[id] = 1;
  s->live_ids[s->nlive++] = id;
}

static void store_del_live(store_t *s, size_t at) {
  s->live[s->live_ids[at]] = 0;
  memmove(&s->live_ids[at], &s->live_ids[at + 1], (s->nlive - at - 1) * sizeof(uint64_t));
  s->nlive--;
}

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

static void assert_valid(const hierarchy_t *h) {
  err_t e;
  err_clear(&e);
  int rc = hierarchy_validate(h, &e);
  if (rc != ST_OK) fail_msg("validate: %d %s", rc, e.msg);
}

/* The three answers for p must be equal as sets; returns the number of positives. */
static size_t check_query(const store_t *s, const hierarchy_t *h, const sliced_t *sl,
                          const probe_t *p) {
  u64vec_t a, b, c;
  u64vec_init(&a);
  u64vec_init(&b);
  u64vec_init(&c);
  probe_stats_t st = {0};
  assert_int_equal(hierarchy_search(h, p, &a, &st), ST_OK);
  assert_int_equal(st.leaf_positives, a.n);
  assert_true(st.leaf_probes <= s->nlive);
  for (size_t i = 0; i < s->nlive; i++)
    if (bits_test_probe(s->words[s->live_ids[i]], p))
      assert_int_equal(u64vec_push(&b, s->live_ids[i]), ST_OK);
  if (sl) {
    probe_stats_t ss = {0};
    assert_int_equal(sliced_search(sl, p, &c, &ss), ST_OK);
    assert_int_equal(ss.leaf_positives, c.n);
    assert_int_equal(ss.leaf_probes, s->nlive);
  }
  if (a.n > 1) qsort(a.v, a.n, sizeof(uint64_t), cmp_u64);
  if (b.n > 1) qsort(b.v, b.n, sizeof(uint64_t), cmp_u64);
  assert_int_equal(a.n, b.n);
  for (size_t i = 0; i < a.n; i++) assert_int_equal(a.v[i], b.v[i]);
  if (sl) {
    if (c.n > 1) qsort(c.v, c.n, sizeof(uint64_t), cmp_u64);
    assert_int_equal(c.n, b.n);
    for (size_t i = 0; i < c.n; i++) assert_int_equal(c.v[i], b.v[i]);
  }
  size_t n = b.n;
  u64vec_release(&a);
  u64vec_release(&b);
  u64vec_release(&c);
  return n;
}

/* One model run: `ops` random inserts and removes with the leaf count wandering between 0
   and ~300, validate after every step, a three-way query check every 4th step. If
   `shadow` is set, a second hierarchy with non-resident leaves gets the same operations
   and must answer identically (same ids in the same order, same probe counts). */
static void model_run(uint32_t d, hierarchy_placement_t pl, uint64_t m, uint64_t seed, size_t ops,
                      int shadow) {
  rng_t r;
  rng_init(&r, seed);
  store_t *s = store_new(m);
  hierarchy_leaf_source_t src = {store_probe, store_load, s};
  hierarchy_t *h = hierarchy_create(d, m, pl, NULL);
  hierarchy_t *hn = shadow ? hierarchy_create(d, m, pl, &src) : NULL;
  sliced_t *sl = sliced_create(m);
  assert_non_null(h);
  assert_non_null(sl);
  if (shadow) assert_non_null(hn);
  size_t target = 0, max_seen = 0, zero_seen = 0, positives = 0, queries = 0;
  for (size_t step = 0; step < ops; step++) {
    if (step % 2000 == 0) target = (step / 2000) % 5 == 4 ? 0 : (size_t)rng_below(&r, 301);
    int insert = s->nlive == 0 ||
                 (s->nlive < MAX_IDS / 2 && rng_below(&r, 100) < (s->nlive < target ? 75 : 25));
    if (insert) {
      uint64_t id;
      do id = rng_below(&r, MAX_IDS);
      while (s->live[id]);
      store_fill(s, &r, id, 12, UINT64_MAX);
      assert_int_equal(hierarchy_insert(h, id, s->words[id]), ST_OK);
      assert_int_equal(sliced_add(sl, id, s->words[id]), ST_OK);
      if (hn) assert_int_equal(hierarchy_insert(hn, id, NULL), ST_OK);
      store_add_live(s, id);
    } else {
      size_t at = (size_t)rng_below(&r, s->nlive);
      uint64_t id = s->live_ids[at];
      assert_int_equal(hierarchy_remove(h, id), ST_OK);
      /* Both removal paths of the sliced index: every row, or only the leaf's set bits. */
      if (id & 1)
        assert_int_equal(sliced_remove(sl, id), ST_OK);
      else
        assert_int_equal(sliced_remove_filter(sl, id, s->words[id]), ST_OK);
      if (hn) assert_int_equal(hierarchy_remove(hn, id), ST_OK);
      store_del_live(s, at);
    }
    assert_int_equal(hierarchy_leaf_count(h), s->nlive);
    assert_int_equal(sliced_leaf_count(sl), s->nlive);
    assert_valid(h);
    if (hn) assert_valid(hn);
    if (s->nlive > max_seen) max_seen = s->nlive;
    if (s->nlive == 0) zero_seen++;
    if (step % 4 == 0) {
      probe_t p;
      /* Mostly values of the universe (often present), some absent ones. */
      probe_of_value(&p, rng_below(&r, UNIVERSE + UNIVERSE / 4), m);
      positives += check_query(s, h, sl, &p);
      queries++;
      if (hn) {
        u64vec_t a, b;
        u64vec_init(&a);
        u64vec_init(&b);
        probe_stats_t sa = {0}, sb = {0};
        assert_int_equal(hierarchy_search(h, &p, &a, &sa), ST_OK);
        assert_int_equal(hierarchy_search(hn, &p, &b, &sb), ST_OK);
        assert_int_equal(a.n, b.n);
        for (size_t i = 0; i < a.n; i++) assert_int_equal(a.v[i], b.v[i]);
        assert_memory_equal(&sa, &sb, sizeof sa);
        u64vec_release(&a);
        u64vec_release(&b);
      }
    }
    if (step % 997 == 0) { /* error cases along the way */
      uint64_t absent;
      do absent = rng_below(&r, MAX_IDS);
      while (s->live[absent]);
      assert_int_equal(hierarchy_remove(h, absent), ST_NOT_FOUND);
      assert_int_equal(sliced_remove(sl, absent), ST_NOT_FOUND);
      assert_false(hierarchy_contains(h, absent));
      if (s->nlive > 0) {
        uint64_t dup = s->live_ids[rng_below(&r, s->nlive)];
        assert_true(hierarchy_contains(h, dup));
        assert_int_equal(hierarchy_insert(h, dup, s->words[dup]), ST_E_INVALID);
        assert_int_equal(sliced_add(sl, dup, s->words[dup]), ST_E_INVALID);
      }
    }
  }
  /* The run must have exercised what it claims: large trees, and the empty one. */
  assert_true(max_seen >= 150);
  assert_true(zero_seen >= 1);
  assert_true(positives > queries / 4); /* most queries hit some leaf */
  if (hn) assert_true(s->loads > 0);
  hierarchy_destroy(h);
  hierarchy_destroy(hn);
  sliced_destroy(sl);
  free(s);
}

static const uint32_t orders[] = {2, 3, 5, 10};
static const uint64_t sizes[] = {512, 1000, 2048, 777};

static void test_hierarchy_model_similarity(void **state) {
  (void)state;
  for (size_t i = 0; i < 4; i++)
    model_run(orders[i], HIERARCHY_SIMILARITY, sizes[i], 1000 + i, OPS_PER_RUN, 0);
}

static void test_hierarchy_model_positional(void **state) {
  (void)state;
  for (size_t i = 0; i < 4; i++)
    model_run(orders[i], HIERARCHY_POSITIONAL, sizes[3 - i], 2000 + i, OPS_PER_RUN, 0);
}

/* The paper's static tree rebuilds whole on every change: fewer operations per order. */
static void test_hierarchy_model_paper(void **state) {
  (void)state;
  for (size_t i = 0; i < 4; i++)
    model_run(orders[i], HIERARCHY_PAPER, sizes[i], 2500 + i, OPS_PER_RUN / 10, i == 1);
}

/* The number of nodes at each level of the paper's tree over n leaves: ceil(n / d^(i+1)). */
static void assert_paper_shape(const hierarchy_t *h, uint64_t n, uint32_t d) {
  hierarchy_level_stats_t ls[64];
  uint32_t levels = hierarchy_level_stats(h, ls, 64);
  uint64_t want = n, expect_levels = 0;
  do {
    want = (want + d - 1) / d;
    assert_true(expect_levels < levels);
    assert_int_equal(ls[expect_levels].nodes, want);
    expect_levels++;
  } while (want > 1);
  assert_int_equal(levels, expect_levels);
  assert_valid(h); /* exactly d children, the last node of a level fewer */
}

/* The paper's tree: its shape at the paper's 119 tables and d = 3 (40 + 14 + 5 + 2 + 1
   internal nodes), leaves in id order whatever the insertion order, the shape kept through
   removals, and a batch of changes that costs one rebuild but is searchable throughout. */
static void test_hierarchy_paper_shape(void **state) {
  (void)state;
  rng_t r;
  rng_init(&r, 6501);
  store_t *s = store_new(1024);
  hierarchy_leaf_source_t src = {store_probe, store_load, s};
  hierarchy_t *h = hierarchy_create(3, 1024, HIERARCHY_PAPER, &src);
  assert_non_null(h);
  probe_t all;
  probe_of_value(&all, 999999, 1024);
  uint64_t ids[119];
  for (uint64_t i = 0; i < 119; i++) ids[i] = 10 * i + 5;
  for (size_t i = 118; i > 0; i--) { /* shuffle the insertion order */
    size_t j = (size_t)rng_below(&r, i + 1);
    uint64_t t = ids[i];
    ids[i] = ids[j];
    ids[j] = t;
  }
  for (size_t i = 0; i < 119; i++) {
    store_fill(s, &r, ids[i], 8, 999999);
    /* Half resident, half through the source: the rebuild loads the latter. */
    assert_int_equal(hierarchy_insert(h, ids[i], i % 2 ? s->words[ids[i]] : NULL), ST_OK);
    store_add_live(s, ids[i]);
    assert_paper_shape(h, i + 1, 3);
  }
  u64vec_t out;
  u64vec_init(&out);
  assert_int_equal(hierarchy_search(h, &all, &out, NULL), ST_OK);
  assert_int_equal(out.n, 119);
  for (size_t i = 0; i < out.n; i++) assert_int_equal(out.v[i], 10 * i + 5); /* id order */
  u64vec_release(&out);
  uint64_t internal = 0;
  hierarchy_level_stats_t ls[64];
  for (uint32_t l = 0, n = hierarchy_level_stats(h, ls, 64); l < n; l++) internal += ls[l].nodes;
  assert_int_equal(internal, 40 + 14 + 5 + 2 + 1);

  /* Removals, one at a time: rebuilt to the paper's shape each time. */
  for (int i = 0; i < 20; i++) {
    size_t at = (size_t)rng_below(&r, s->nlive);
    assert_int_equal(hierarchy_remove(h, s->live_ids[at]), ST_OK);
    store_del_live(s, at);
    assert_paper_shape(h, s->nlive, 3);
  }
  /* A batch: searches in the middle are exact; the end restores the shape. */
  hierarchy_batch_begin(h);
  for (int i = 0; i < 60; i++) {
    if (i % 3 == 0) {
      size_t at = (size_t)rng_below(&r, s->nlive);
      assert_int_equal(hierarchy_remove(h, s->live_ids[at]), ST_OK);
      store_del_live(s, at);
    } else {
      uint64_t id = 2000 + (uint64_t)i;
      store_fill(s, &r, id, 8, UINT64_MAX);
      assert_int_equal(hierarchy_insert(h, id, s->words[id]), ST_OK);
      store_add_live(s, id);
    }
    probe_t p;
    probe_of_value(&p, rng_below(&r, UNIVERSE), 1024);
    check_query(s, h, NULL, &p);
  }
  assert_int_equal(hierarchy_batch_end(h), ST_OK);
  assert_paper_shape(h, s->nlive, 3);
  /* A rebuild that cannot load a leaf keeps a correct tree; the next one succeeds. */
  uint64_t victim = UINT64_MAX; /* a live leaf read through the source (even positions) */
  for (size_t i = 0; i < 119 && victim == UINT64_MAX; i += 2)
    if (s->live[ids[i]]) victim = ids[i];
  assert_true(victim != UINT64_MAX);
  s->fail_id = (int64_t)victim;
  hierarchy_batch_begin(h);
  store_fill(s, &r, 3000, 8, UINT64_MAX);
  assert_int_equal(hierarchy_insert(h, 3000, s->words[3000]), ST_OK); /* an append: no load */
  store_add_live(s, 3000);
  assert_int_equal(hierarchy_batch_end(h), ST_E_IO);
  for (int q = 0; q < 40; q++) {
    probe_t p;
    probe_of_value(&p, rng_below(&r, UNIVERSE), 1024);
    check_query(s, h, NULL, &p);
  }
  s->fail_id = -1;
  assert_int_equal(hierarchy_batch_end(h), ST_OK);
  assert_paper_shape(h, s->nlive, 3);
  hierarchy_destroy(h);
  free(s);
}

/* Non-resident leaves, through the source, give the same answers as borrowed words. */
static void test_hierarchy_nonresident_same_answers(void **state) {
  (void)state;
  model_run(3, HIERARCHY_SIMILARITY, 1024, 3001, 20000, 1);
  model_run(2, HIERARCHY_POSITIONAL, 700, 3002, 20000, 1);
}

/* A failing load leaves the hierarchy unchanged and reports the source's status. */
static void test_hierarchy_nonresident_load_error(void **state) {
  (void)state;
  rng_t r;
  rng_init(&r, 4001);
  store_t *s = store_new(1024);
  hierarchy_leaf_source_t src = {store_probe, store_load, s};
  hierarchy_t *h = hierarchy_create(2, 1024, HIERARCHY_SIMILARITY, &src);
  assert_non_null(h);
  for (uint64_t id = 0; id < 40; id++) {
    store_fill(s, &r, id, 10, UINT64_MAX);
    assert_int_equal(hierarchy_insert(h, id, NULL), ST_OK);
    store_add_live(s, id);
  }
  /* Inserting a leaf whose load fails. */
  store_fill(s, &r, 100, 10, UINT64_MAX);
  s->fail_id = 100;
  assert_int_equal(hierarchy_insert(h, 100, NULL), ST_E_IO);
  assert_false(hierarchy_contains(h, 100));
  assert_int_equal(hierarchy_leaf_count(h), 40);
  s->fail_id = -1;
  assert_valid(h);
  /* Removing leaf 5 needs its siblings' words; make every sibling load fail in turn. */
  size_t failures = 0;
  for (uint64_t victim = 0; victim < 40; victim++) {
    for (uint64_t other = 0; other < 40; other++) {
      if (other == victim) continue;
      s->fail_id = (int64_t)other;
      int rc = hierarchy_remove(h, victim);
      if (rc == ST_E_IO) {
        failures++;
        assert_true(hierarchy_contains(h, victim));
        s->fail_id = -1;
        assert_valid(h);
        break;
      }
      assert_int_equal(rc, ST_OK); /* the failing leaf was not needed */
      s->fail_id = -1;
      assert_valid(h);
      assert_int_equal(hierarchy_insert(h, victim, NULL), ST_OK);
    }
  }
  assert_true(failures >= 20); /* every removal reads at least one sibling */
  s->fail_id = -1;
  assert_valid(h);
  hierarchy_destroy(h);
  free(s);
}

/* Positional build: validates, answers like the oracles, level 0 as full as possible. */
static void test_hierarchy_build(void **state) {
  (void)state;
  rng_t r;
  rng_init(&r, 5001);
  for (size_t oi = 0; oi < 4; oi++) {
    uint32_t d = orders[oi];
    for (size_t n = 0; n <= 260; n += (n < 45 ? 1 : 37)) {
      store_t *s = store_new(1024);
      hierarchy_leaf_source_t src = {store_probe, store_load, s};
      uint64_t ids[300];
      const uint64_t *words[300], *none[300];
      for (size_t i = 0; i < n; i++) {
        ids[i] = 3 * i + 7;
        store_fill(s, &r, ids[i], 12, UINT64_MAX);
        store_add_live(s, ids[i]);
        words[i] = s->words[ids[i]];
        none[i] = NULL;
      }
      hierarchy_t *h = hierarchy_create(d, 1024, HIERARCHY_POSITIONAL, &src);
      hierarchy_t *hn = hierarchy_create(d, 1024, HIERARCHY_POSITIONAL, &src);
      /* Start from a non-empty hierarchy: the build replaces it. */
      store_fill(s, &r, 4000, 5, UINT64_MAX);
      assert_int_equal(hierarchy_insert(h, 4000, s->words[4000]), ST_OK);
      assert_int_equal(hierarchy_build(h, ids, words, n), ST_OK);
      assert_int_equal(hierarchy_build(hn, ids, none, n), ST_OK);
      assert_false(hierarchy_contains(h, 4000));
      assert_int_equal(hierarchy_leaf_count(h), n);
      assert_valid(h);
      assert_valid(hn);
      hierarchy_level_stats_t ls[64];
      uint32_t levels = hierarchy_level_stats(h, ls, 64);
      assert_int_equal(levels, hierarchy_height(h));
      if (n == 0) assert_int_equal(levels, 0);
      if (n > 0) assert_int_equal(ls[0].nodes, (n + 2 * d - 1) / (2 * d));
      for (int q = 0; q < 40; q++) {
        probe_t p;
        probe_of_value(&p, rng_below(&r, UNIVERSE), 1024);
        check_query(s, h, NULL, &p);
        check_query(s, hn, NULL, &p);
      }
      /* The built hierarchy stays maintainable. */
      for (size_t i = 0; i < n; i += 3) {
        assert_int_equal(hierarchy_remove(h, ids[i]), ST_OK);
        assert_valid(h);
      }
      hierarchy_destroy(h);
      hierarchy_destroy(hn);
      free(s);
    }
  }
  /* A repeated id is rejected and leaves the old content. */
  store_t *s = store_new(512);
  hierarchy_t *h = hierarchy_create(3, 512, HIERARCHY_POSITIONAL, NULL);
  store_fill(s, &r, 1, 5, UINT64_MAX);
  store_fill(s, &r, 2, 5, UINT64_MAX);
  assert_int_equal(hierarchy_insert(h, 9, s->words[1]), ST_OK);
  uint64_t ids[3] = {1, 2, 1};
  const uint64_t *w[3] = {s->words[1], s->words[2], s->words[1]};
  assert_int_equal(hierarchy_build(h, ids, w, 3), ST_E_INVALID);
  assert_true(hierarchy_contains(h, 9));
  assert_int_equal(hierarchy_leaf_count(h), 1);
  assert_valid(h);
  /* Non-resident without a source is rejected too. */
  const uint64_t *wn[2] = {s->words[1], NULL};
  assert_int_equal(hierarchy_build(h, ids, wn, 2), ST_E_INVALID);
  assert_int_equal(hierarchy_insert(h, 77, NULL), ST_E_INVALID);
  assert_valid(h);
  hierarchy_destroy(h);
  free(s);
}

/* Positional insertion keeps the leaves in insertion order (left to right), also across
   removals: with a value common to every leaf, a search lists all leaves in tree order. */
static void test_hierarchy_positional_keeps_order(void **state) {
  (void)state;
  rng_t r;
  rng_init(&r, 6001);
  for (size_t oi = 0; oi < 4; oi++) {
    store_t *s = store_new(2048);
    hierarchy_t *h = hierarchy_create(orders[oi], 2048, HIERARCHY_POSITIONAL, NULL);
    uint64_t next = 0;
    probe_t all;
    probe_of_value(&all, 999999, 2048);
    for (int step = 0; step < 3000; step++) {
      if (s->nlive < 10 || rng_below(&r, 100) < 55) {
        uint64_t id = next++ % MAX_IDS;
        assert_false(s->live[id]);
        store_fill(s, &r, id, 8, 999999);
        assert_int_equal(hierarchy_insert(h, id, s->words[id]), ST_OK);
        store_add_live(s, id);
      } else {
        size_t at = (size_t)rng_below(&r, s->nlive);
        assert_int_equal(hierarchy_remove(h, s->live_ids[at]), ST_OK);
        store_del_live(s, at);
      }
      if (step % 10 == 0) {
        assert_valid(h);
        u64vec_t out;
        u64vec_init(&out);
        assert_int_equal(hierarchy_search(h, &all, &out, NULL), ST_OK);
        assert_int_equal(out.n, s->nlive);
        for (size_t i = 0; i < out.n; i++) assert_int_equal(out.v[i], s->live_ids[i]);
        u64vec_release(&out);
      }
    }
    hierarchy_destroy(h);
    free(s);
  }
}

static void test_hierarchy_empty_and_single(void **state) {
  (void)state;
  rng_t r;
  rng_init(&r, 7001);
  store_t *s = store_new(512);
  hierarchy_t *h = hierarchy_create(2, 512, HIERARCHY_SIMILARITY, NULL);
  assert_non_null(h);
  assert_null(hierarchy_create(1, 512, HIERARCHY_SIMILARITY, NULL));
  assert_null(hierarchy_create(2, 0, HIERARCHY_SIMILARITY, NULL));
  probe_t p;
  probe_of_value(&p, 3, 512);
  u64vec_t out;
  u64vec_init(&out);
  probe_stats_t st = {0};
  assert_int_equal(hierarchy_search(h, &p, &out, &st), ST_OK);
  assert_int_equal(out.n, 0);
  assert_int_equal(st.internal_probes + st.leaf_probes, 0);
  assert_int_equal(hierarchy_height(h), 0);
  assert_int_equal(hierarchy_leaf_count(h), 0);
  assert_int_equal(hierarchy_remove(h, 5), ST_NOT_FOUND);
  assert_valid(h);
  /* One leaf holding value 3. */
  memset(s->words[5], 0, sizeof s->words[5]);
  for (uint32_t j = 0; j < p.k; j++) bits_set(s->words[5], p.pos[j]);
  assert_int_equal(hierarchy_insert(h, 5, s->words[5]), ST_OK);
  assert_int_equal(hierarchy_insert(h, 5, s->words[5]), ST_E_INVALID);
  assert_valid(h);
  assert_int_equal(hierarchy_height(h), 1);
  assert_int_equal(hierarchy_order(h), 2);
  assert_int_equal(hierarchy_search(h, &p, &out, &st), ST_OK);
  assert_int_equal(out.n, 1);
  assert_int_equal(out.v[0], 5);
  assert_int_equal(st.internal_probes, 1);
  assert_int_equal(st.leaf_probes, 1);
  assert_int_equal(st.leaf_positives, 1);
  assert_true(hierarchy_size_in_bytes(h) > 512 / 8);
  assert_int_equal(hierarchy_remove(h, 5), ST_OK);
  assert_int_equal(hierarchy_remove(h, 5), ST_NOT_FOUND);
  assert_int_equal(hierarchy_height(h), 0);
  assert_valid(h);
  u64vec_release(&out);
  hierarchy_destroy(h);
  hierarchy_destroy(NULL);
  free(s);
}

/* The paper's tree of order 2 over 8 leaves (ids 1..8 in order) is complete: leaves pair
   under 4 nodes, those under 2, those under the root. Each leaf holds only the values put in
   it, so with m = 2048 and 3 bits per value no filter says maybe for a value it does not
   hold (the values below were checked to collide nowhere). The counts follow from the shape:
   a node is tested when its parent said maybe; internal_maybe counts the tested internal
   nodes that said maybe, root included (the authors' code's count). */
static void test_hierarchy_search_counts_internal_maybe(void **state) {
  (void)state;
  store_t *s = store_new(2048);
  hierarchy_t *h = hierarchy_create(2, 2048, HIERARCHY_PAPER, NULL);
  assert_non_null(h);
  probe_t in1, in1and8, absent;
  probe_of_value(&in1, 1000, 2048);
  probe_of_value(&in1and8, 1001, 2048);
  probe_of_value(&absent, 1002, 2048);
  uint64_t ids[8];
  const uint64_t *words[8];
  for (uint64_t i = 0; i < 8; i++) {
    ids[i] = i + 1;
    words[i] = s->words[i + 1];
  }
  for (uint32_t j = 0; j < K; j++) {
    bits_set(s->words[1], in1.pos[j]);
    bits_set(s->words[1], in1and8.pos[j]);
    bits_set(s->words[8], in1and8.pos[j]);
  }
  assert_int_equal(hierarchy_build(h, ids, words, 8), ST_OK);
  assert_valid(h);
  assert_int_equal(hierarchy_height(h), 3);
  const struct {
    const probe_t *p;
    uint64_t internal, maybe, leaves, positives;
  } cases[] = {
      /* root, its 2 children, the 2 children of the left one; maybe: root, left, left-left */
      {&in1, 5, 3, 2, 1},
      /* every internal node on the paths to leaves 1 and 8 and their siblings: 1 + 2 + 4 */
      {&in1and8, 7, 5, 4, 2},
      /* the root says no */
      {&absent, 1, 0, 0, 0},
  };
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    u64vec_t out;
    u64vec_init(&out);
    probe_stats_t st = {0};
    assert_int_equal(hierarchy_search(h, cases[c].p, &out, &st), ST_OK);
    assert_int_equal(out.n, cases[c].positives);
    assert_int_equal(st.internal_probes, cases[c].internal);
    assert_int_equal(st.internal_maybe, cases[c].maybe);
    assert_int_equal(st.leaf_probes, cases[c].leaves);
    assert_int_equal(st.leaf_positives, cases[c].positives);
    u64vec_release(&out);
  }
  hierarchy_destroy(h);
  free(s);
}

/* validate() detects a flipped bit in an internal node at any level, in either
   direction (a missing 1 and an extra 1). */
static void test_hierarchy_validate_detects_corruption(void **state) {
  (void)state;
  rng_t r;
  rng_init(&r, 8001);
  store_t *s = store_new(1024);
  hierarchy_t *h = hierarchy_create(2, 1024, HIERARCHY_SIMILARITY, NULL);
  for (uint64_t id = 0; id < 60; id++) {
    store_fill(s, &r, id, 10, UINT64_MAX);
    assert_int_equal(hierarchy_insert(h, id, s->words[id]), ST_OK);
  }
  assert_valid(h);
  uint32_t height = hierarchy_height(h);
  assert_true(height >= 3);
  size_t detected = 0;
  for (uint32_t level = 0; level < height; level++) {
    for (uint64_t pos = 0; pos < 1024; pos += 101) {
      assert_int_equal(hierarchy_debug_flip_bit(h, level, pos), ST_OK);
      err_t e;
      err_clear(&e);
      assert_int_equal(hierarchy_validate(h, &e), ST_E_CORRUPT);
      assert_non_null(strstr(e.msg, "OR of its children"));
      detected++;
      assert_int_equal(hierarchy_debug_flip_bit(h, level, pos), ST_OK);
      assert_valid(h);
    }
  }
  assert_int_equal(detected, height * 11);
  assert_int_equal(hierarchy_debug_flip_bit(h, height, 0), ST_E_INVALID);
  hierarchy_destroy(h);
  free(s);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_hierarchy_empty_and_single),
      cmocka_unit_test(test_hierarchy_validate_detects_corruption),
      cmocka_unit_test(test_hierarchy_build),
      cmocka_unit_test(test_hierarchy_search_counts_internal_maybe),
      cmocka_unit_test(test_hierarchy_positional_keeps_order),
      cmocka_unit_test(test_hierarchy_nonresident_load_error),
      cmocka_unit_test(test_hierarchy_nonresident_same_answers),
      cmocka_unit_test(test_hierarchy_model_similarity),
      cmocka_unit_test(test_hierarchy_model_positional),
      cmocka_unit_test(test_hierarchy_model_paper),
      cmocka_unit_test(test_hierarchy_paper_shape),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

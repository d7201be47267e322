/* Tests of the cache-line blocked key filter (filters/blocked_filter.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "filters/blocked_filter.h"
#include "util/random.h"

#define SEED 0xb10c3dull
#define NKEYS 1000000
#define NNEG 1000000

/* Key i of a set: a 12-byte string unique to (set, i), hashed as the engine would. */
static uint64_t key_hash(char set, uint32_t i) {
  char key[16];
  int len = snprintf(key, sizeof key, "%c%010u", set, i);
  return blocked_filter_key_hash(key, (size_t)len);
}

static uint64_t *hashes_of(char set, size_t n) {
  uint64_t *h = malloc(n * sizeof *h);
  assert_non_null(h);
  for (size_t i = 0; i < n; i++) h[i] = key_hash(set, (uint32_t)i);
  return h;
}

static uint8_t *build(const uint64_t *h, size_t n, double bpk, size_t *size) {
  *size = blocked_filter_size(n, bpk);
  uint8_t *f = malloc(*size);
  assert_non_null(f);
  blocked_filter_build(f, *size, h, n, bpk);
  return f;
}

static void test_blocked_filter_probes_rule(void **state) {
  (void)state;
  assert_int_equal(blocked_filter_probes_for(1.0), 1);
  assert_int_equal(blocked_filter_probes_for(8.0), 5);
  assert_int_equal(blocked_filter_probes_for(10.0), 6);
  assert_int_equal(blocked_filter_probes_for(16.0), 9);
  assert_int_equal(blocked_filter_probes_for(1000.0), 16);
  /* Non-decreasing in bits per key. */
  uint32_t prev = 0;
  for (double b = 0.0; b < 50.0; b += 0.25) {
    uint32_t k = blocked_filter_probes_for(b);
    assert_true(k >= prev && k >= 1 && k <= 16);
    prev = k;
  }
}

static void test_blocked_filter_size(void **state) {
  (void)state;
  assert_int_equal(blocked_filter_size(0, 10.0), 64 + BLOCKED_FILTER_TRAILER_BYTES);
  assert_int_equal(blocked_filter_size(1, 10.0), 64 + BLOCKED_FILTER_TRAILER_BYTES);
  assert_int_equal(blocked_filter_size(52, 10.0), 128 + BLOCKED_FILTER_TRAILER_BYTES);
  size_t s = blocked_filter_size(NKEYS, 10.0);
  assert_true((s - BLOCKED_FILTER_TRAILER_BYTES) % 64 == 0);
  assert_true((double)(s - BLOCKED_FILTER_TRAILER_BYTES) * 8 >= 10.0 * NKEYS);
  assert_true((double)(s - BLOCKED_FILTER_TRAILER_BYTES) * 8 < 10.0 * NKEYS + 512);
}

/* 1M keys at 10 bits/key: no false negatives (single and batched), FPR <= 1.0% over 1M
   negatives, and the batch agrees with single probes on every positive and negative.
   Bound: this design measures 0.965% at 10 bits/key on average (blocked_filter.c); with 1M
   negatives the standard deviation of the measured rate is ~0.0098%, so 1.0% is ~3.5 sigma
   above the mean, and a design that loses ~4% of accuracy fails. The keys are fixed strings, so the
   run is deterministic. */
static void test_blocked_filter_no_false_negatives_and_fpr(void **state) {
  (void)state;
  uint64_t *pos = hashes_of('p', NKEYS);
  uint64_t *neg = hashes_of('n', NNEG);
  size_t size;
  uint8_t *f = build(pos, NKEYS, 10.0, &size);
  assert_int_equal(f[size - 2], 6);

  uint8_t *out = malloc(NKEYS > NNEG ? NKEYS : NNEG);
  assert_non_null(out);
  blocked_filter_may_contain_batch(f, size, pos, NKEYS, out);
  for (size_t i = 0; i < NKEYS; i++) {
    if (!blocked_filter_may_contain(f, size, pos[i])) fail_msg("false negative: key %zu", i);
    if (out[i] != 1) fail_msg("batched false negative: key %zu", i);
  }

  blocked_filter_may_contain_batch(f, size, neg, NNEG, out);
  size_t fp = 0;
  for (size_t i = 0; i < NNEG; i++) {
    int r = blocked_filter_may_contain(f, size, neg[i]);
    if (out[i] != r) fail_msg("batch and single differ at negative %zu", i);
    fp += (size_t)r;
  }
  double fpr = (double)fp / NNEG;
  print_message("blocked filter, 10 bits/key, k=6: measured FPR %.4f%% (design mean 0.965%%)\n",
                100 * fpr);
  assert_true(fpr <= 0.010);
  assert_true(fpr > 0.008); /* far below the model would mean the test measures nothing */
  free(out);
  free(f);
  free(neg);
  free(pos);
}

/* Measured FPR within 10% (relative) of the model of blocked_filter.c at other budgets:
   6 bits/key (model 5.75%) over 200k negatives and 8 bits/key (model 2.31%) over 400k
   negatives; both expect ~10k false positives, a relative standard deviation of ~1%, so
   the 10% bound is ~10 sigma wide yet catches a design that loses accuracy. */
static void test_blocked_filter_fpr_other_budgets(void **state) {
  (void)state;
  struct {
    double bpk, model;
    size_t n, nneg;
  } cases[] = {{6.0, 0.0575, 200000, 200000}, {8.0, 0.0231, 200000, 400000}};
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    uint64_t *pos = hashes_of('a', cases[c].n);
    uint64_t *neg = hashes_of('b', cases[c].nneg);
    size_t size;
    uint8_t *f = build(pos, cases[c].n, cases[c].bpk, &size);
    for (size_t i = 0; i < cases[c].n; i++)
      assert_true(blocked_filter_may_contain(f, size, pos[i]));
    size_t fp = 0;
    for (size_t i = 0; i < cases[c].nneg; i++)
      fp += (size_t)blocked_filter_may_contain(f, size, neg[i]);
    double fpr = (double)fp / (double)cases[c].nneg;
    print_message("blocked filter, %.0f bits/key: measured FPR %.4f%% (model %.4f%%)\n",
                  cases[c].bpk, 100 * fpr, 100 * cases[c].model);
    assert_true(fpr < cases[c].model * 1.10 && fpr > cases[c].model * 0.90);
    free(f);
    free(neg);
    free(pos);
  }
}

static void test_blocked_filter_empty_says_no(void **state) {
  (void)state;
  size_t size;
  uint8_t *f = build(NULL, 0, 10.0, &size);
  rng_t r;
  rng_init(&r, SEED);
  uint64_t h[1000];
  uint8_t out[1000];
  for (size_t i = 0; i < 1000; i++) {
    h[i] = rng_next(&r);
    assert_int_equal(blocked_filter_may_contain(f, size, h[i]), 0);
  }
  blocked_filter_may_contain_batch(f, size, h, 1000, out);
  for (size_t i = 0; i < 1000; i++) assert_int_equal(out[i], 0);
  free(f);
}

/* Every malformed form must answer "maybe" for every key, single and batched. */
static void expect_all_maybe(const uint8_t *f, size_t size, const uint64_t *h, size_t n) {
  uint8_t out[64];
  assert_true(n <= 64);
  for (size_t i = 0; i < n; i++) assert_int_equal(blocked_filter_may_contain(f, size, h[i]), 1);
  memset(out, 0, sizeof out);
  blocked_filter_may_contain_batch(f, size, h, n, out);
  for (size_t i = 0; i < n; i++) assert_int_equal(out[i], 1);
}

static void test_blocked_filter_malformed_says_maybe(void **state) {
  (void)state;
  enum { N = 64 };
  uint64_t *pos = hashes_of('m', 300);
  uint64_t neg[N];
  for (uint32_t i = 0; i < N; i++) neg[i] = key_hash('x', i);
  size_t size;
  uint8_t *f = build(pos, 300, 10.0, &size); /* 3000 bits: 6 blocks */
  assert_int_equal(size, 6 * 64 + BLOCKED_FILTER_TRAILER_BYTES);
  /* The well-formed filter rejects some of the negatives, so "all maybe" below is a real
     change of behaviour. */
  size_t rejected = 0;
  for (size_t i = 0; i < N; i++) rejected += !blocked_filter_may_contain(f, size, neg[i]);
  assert_true(rejected > N / 2);

  /* Every truncation (the trailer is lost or misplaced). */
  for (size_t len = 0; len < size; len++) expect_all_maybe(f, len, neg, N);
  /* Extra bytes after the trailer. */
  uint8_t *big = calloc(size + 64, 1);
  assert_non_null(big);
  memcpy(big, f, size);
  expect_all_maybe(big, size + 1, neg, N);
  expect_all_maybe(big, size + 64, neg, N);
  free(big);

  uint8_t *t = f + size - BLOCKED_FILTER_TRAILER_BYTES;
  struct {
    size_t off;
    uint8_t val;
  } bad[] = {{0, 5}, {0, 7}, {0, 0}, {3, 1}, {4, 0}, {4, 17}, {4, 255}, {5, 0}, {5, 2}};
  for (size_t b = 0; b < sizeof bad / sizeof bad[0]; b++) {
    uint8_t saved = t[bad[b].off];
    t[bad[b].off] = bad[b].val;
    expect_all_maybe(f, size, neg, N);
    t[bad[b].off] = saved;
  }
  /* Restored: well-formed again, and still no false negatives. */
  for (size_t i = 0; i < 300; i++) assert_true(blocked_filter_may_contain(f, size, pos[i]));
  free(f);
  free(pos);
}

/* The filter answers the same wherever it sits in memory (table buffers are not aligned). */
static void test_blocked_filter_unaligned(void **state) {
  (void)state;
  uint64_t *pos = hashes_of('u', 5000);
  uint64_t *neg = hashes_of('v', 5000);
  size_t size;
  uint8_t *f = build(pos, 5000, 10.0, &size);
  uint8_t *buf = malloc(size + 64);
  uint8_t *a = malloc(5000), *b = malloc(5000);
  assert_true(buf && a && b);
  blocked_filter_may_contain_batch(f, size, neg, 5000, a);
  for (size_t shift = 1; shift < 64; shift += 7) {
    blocked_filter_build(buf + shift, size, pos, 5000, 10.0);
    assert_memory_equal(buf + shift, f, size);
    blocked_filter_may_contain_batch(buf + shift, size, neg, 5000, b);
    assert_memory_equal(a, b, 5000);
    for (size_t i = 0; i < 5000; i++)
      assert_true(blocked_filter_may_contain(buf + shift, size, pos[i]));
  }
  free(a);
  free(b);
  free(buf);
  free(f);
  free(neg);
  free(pos);
}

/* An independent reading of the documented layout (blocked_filter.c): block from the upper
   32 bits by multiply-shift, positions (h * C^i mod 2^32) >> 23 from the lower 32 bits. */
static int oracle_may_contain(const uint8_t *f, size_t size, uint64_t hash) {
  size_t nblocks = (size - BLOCKED_FILTER_TRAILER_BYTES) / 64;
  uint32_t k = f[size - 2];
  const uint8_t *blk = f + ((hash >> 32) * nblocks >> 32) * 64;
  uint32_t h = (uint32_t)hash, mult = 1;
  for (uint32_t i = 0; i < k; i++, mult *= 0x9e3779b9u) {
    uint32_t pos = (h * mult) >> 23;
    if (!((blk[pos / 8] >> (pos % 8)) & 1)) return 0;
  }
  return 1;
}

/* For every probe count 1..16: the filter agrees with the oracle on 20k negatives and holds
   every key, single and batched (this covers the vectorized k <= 8 path and the scalar one). */
static void test_blocked_filter_matches_layout_oracle(void **state) {
  (void)state;
  enum { N = 2000, Q = 20000 };
  /* A budget inside each probe count's range of the rule. */
  static const double bpk_for_k[16] = {1.0,  2.25,  3.8,   5.35,  6.95,  8.6,  10.35, 12.25,
                                       14.3, 16.55, 18.95, 21.65, 24.65, 28.0, 31.75, 36.0};
  uint64_t *pos = hashes_of('o', N);
  uint64_t *neg = hashes_of('q', Q);
  uint8_t *out = malloc(Q);
  assert_non_null(out);
  for (uint32_t k = 1; k <= 16; k++) {
    double bpk = bpk_for_k[k - 1];
    assert_int_equal(blocked_filter_probes_for(bpk), k);
    size_t size;
    uint8_t *f = build(pos, N, bpk, &size);
    for (size_t i = 0; i < N; i++) assert_true(blocked_filter_may_contain(f, size, pos[i]));
    blocked_filter_may_contain_batch(f, size, neg, Q, out);
    size_t fp = 0;
    for (size_t i = 0; i < Q; i++) {
      int want = oracle_may_contain(f, size, neg[i]);
      if (blocked_filter_may_contain(f, size, neg[i]) != want || out[i] != want)
        fail_msg("k=%u: query %zu differs from the layout oracle", k, i);
      fp += (size_t)want;
    }
    assert_true(fp < Q); /* the oracle is not trivially "maybe" */
    free(f);
  }
  free(out);
  free(neg);
  free(pos);
}

/* init + add in pieces builds the same bytes as one build. */
static void test_blocked_filter_incremental_build(void **state) {
  (void)state;
  enum { N = 10000 };
  uint64_t *h = hashes_of('i', N);
  size_t size;
  uint8_t *f = build(h, N, 12.0, &size);
  uint8_t *g = malloc(size);
  assert_non_null(g);
  blocked_filter_init(g, size, 12.0);
  for (size_t done = 0; done < N; done += 777)
    blocked_filter_add(g, size, h + done, N - done < 777 ? N - done : 777);
  assert_memory_equal(f, g, size);
  free(g);
  free(f);
  free(h);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_blocked_filter_probes_rule),
      cmocka_unit_test(test_blocked_filter_size),
      cmocka_unit_test(test_blocked_filter_no_false_negatives_and_fpr),
      cmocka_unit_test(test_blocked_filter_fpr_other_budgets),
      cmocka_unit_test(test_blocked_filter_empty_says_no),
      cmocka_unit_test(test_blocked_filter_malformed_says_maybe),
      cmocka_unit_test(test_blocked_filter_unaligned),
      cmocka_unit_test(test_blocked_filter_matches_layout_oracle),
      cmocka_unit_test(test_blocked_filter_incremental_build),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

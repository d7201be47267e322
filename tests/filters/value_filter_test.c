/* Tests of the value Bloom filter (filters/value_filter.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "filters/value_filter.h"
#include "util/coding.h"
#include "util/crc32c.h"
#include "tests/test_util.h"

#define SEED 0x5eed5eedull
#define NNEG 1000000

/* Value i of a set: 9 bytes, a set tag and i, so two sets never share a value. */
typedef struct {
  uint8_t b[9];
} val_t;

static val_t value_of(char set, uint64_t i) {
  val_t v;
  v.b[0] = (uint8_t)set;
  encode_fixed64(v.b + 1, i);
  return v;
}

static value_filter_t *filled(uint64_t m, uint32_t k, uint64_t seed, char set, uint64_t n) {
  value_filter_t *f = value_filter_create(m, k, seed);
  assert_non_null(f);
  for (uint64_t i = 0; i < n; i++) {
    val_t v = value_of(set, i);
    value_filter_add(f, v.b, sizeof v.b);
  }
  return f;
}

static void assert_contains_all(const value_filter_t *f, char set, uint64_t n) {
  probe_t p;
  for (uint64_t i = 0; i < n; i++) {
    val_t v = value_of(set, i);
    if (!value_filter_may_contain(f, v.b, sizeof v.b))
      fail_msg("false negative: set %c value %llu", set, (unsigned long long)i);
    value_filter_probe(f, v.b, sizeof v.b, &p);
    if (!value_filter_may_contain_probe(f, &p))
      fail_msg("false negative by probe: set %c value %llu", set, (unsigned long long)i);
  }
}

static void test_value_filter_create_rejects_bad_params(void **state) {
  (void)state;
  assert_null(value_filter_create(63, 4, SEED));
  assert_null(value_filter_create(0, 4, SEED));
  assert_null(value_filter_create(1024, 0, SEED));
  assert_null(value_filter_create(1024, 33, SEED));
  value_filter_t *f = value_filter_create(64, 32, SEED);
  assert_non_null(f);
  assert_int_equal(f->nwords, 1);
  assert_int_equal(value_filter_popcount(f), 0);
  value_filter_destroy(f);
  value_filter_destroy(NULL);
}

/* FPR over 1,000,000 negatives (values of another set) within 15% (relative) of
   (1 - e^{-kn/m})^k. Every setting has a theoretical FPR of 1.6-3.1%, so ~16k-31k false
   positives are expected: the relative standard deviation is <= 0.8% and the 15% bound is
   ~20 sigma wide, yet a broken hash scheme (correlated positions) falls outside it. The
   settings include m not a multiple of 64, k = 1 and k = 32. No false negatives either. */
static void test_value_filter_fpr_matches_theory(void **state) {
  (void)state;
  struct {
    uint64_t m;
    uint32_t k;
    uint64_t n;
  } cases[] = {
      {1u << 20, 7, 131072}, /* 8 bits/value, theory 2.31% */
      {1000003, 5, 125000},  /* m % 64 != 0, theory 2.17% */
      {524288, 3, 65536},    /* theory 3.06% */
      {1u << 20, 1, 21000},  /* k = 1, theory 1.98% */
      {1u << 20, 32, 70000}, /* k = 32 on a crowded filter, theory 1.78% */
  };
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    value_filter_t *f = filled(cases[c].m, cases[c].k, SEED, 'p', cases[c].n);
    assert_contains_all(f, 'p', cases[c].n);
    uint64_t fp = 0;
    for (uint64_t i = 0; i < NNEG; i++) {
      val_t v = value_of('n', i);
      fp += value_filter_may_contain(f, v.b, sizeof v.b);
    }
    double fpr = (double)fp / NNEG;
    double theory = value_filter_fpr_theory(cases[c].m, cases[c].k, cases[c].n);
    double est = value_filter_fpr_estimate(f);
    print_message("m=%llu k=%u n=%llu: measured FPR %.4f%%, theory %.4f%%, from fill %.4f%%\n",
                  (unsigned long long)cases[c].m, cases[c].k, (unsigned long long)cases[c].n,
                  100 * fpr, 100 * theory, 100 * est);
    assert_true(theory > 0.01 && theory < 0.05);
    assert_true(fpr > 0.85 * theory && fpr < 1.15 * theory);
    assert_true(est > 0.85 * theory && est < 1.15 * theory);
    double fill = value_filter_fill_ratio(f);
    assert_true(fill > 0 && fill < 1);
    assert_true(value_filter_popcount(f) == (uint64_t)(fill * (double)f->m + 0.5));
    value_filter_destroy(f);
  }
}

static void test_value_filter_add_hash_matches_add(void **state) {
  (void)state;
  value_filter_t *a = filled(4096, 4, SEED, 'h', 200);
  value_filter_t *b = value_filter_create(4096, 4, SEED);
  for (uint64_t i = 0; i < 200; i++) {
    val_t v = value_of('h', i);
    value_filter_add_hash(b, bfh_hash64(v.b, sizeof v.b, SEED));
  }
  assert_memory_equal(a->words, b->words, a->nwords * 8);
  /* A different seed gives a different filter. */
  value_filter_t *c = filled(4096, 4, SEED + 1, 'h', 200);
  assert_true(memcmp(a->words, c->words, a->nwords * 8) != 0);
  value_filter_destroy(a);
  value_filter_destroy(b);
  value_filter_destroy(c);
}

/* The batched probe over many filters equals single probes, for batches shorter and longer
   than the prefetch distance; a value added to filter j is found in filter j. */
static void test_value_filter_probe_batch_equals_single(void **state) {
  (void)state;
  enum { NF = 40 };
  value_filter_t *fs[NF];
  for (size_t j = 0; j < NF; j++) fs[j] = filled(4096, 5, SEED, (char)('A' + j), 300);
  uint8_t out[NF];
  probe_t p;
  size_t positives = 0;
  for (uint64_t q = 0; q < 2000; q++) {
    val_t v = value_of((char)('A' + q % NF), q % 600); /* half of them were added */
    value_filter_probe(fs[0], v.b, sizeof v.b, &p);
    size_t n = q % (NF + 1);
    memset(out, 0xee, sizeof out);
    value_filter_may_contain_probe_batch((const value_filter_t *const *)fs, n, &p, out);
    for (size_t j = 0; j < n; j++) {
      assert_int_equal(out[j], value_filter_may_contain_probe(fs[j], &p));
      positives += out[j];
    }
    for (size_t j = n; j < NF; j++) assert_int_equal(out[j], 0xee); /* nothing written past n */
    if (q % 600 < 300 && q % NF < n) assert_int_equal(out[q % NF], 1);
  }
  assert_true(positives > 0);
  for (size_t j = 0; j < NF; j++) value_filter_destroy(fs[j]);
}

static void test_value_filter_merge_is_union(void **state) {
  (void)state;
  const uint64_t m = 100000, n = 3000; /* m % 64 != 0 */
  value_filter_t *a = filled(m, 6, SEED, 'a', n);
  value_filter_t *b = filled(m, 6, SEED, 'b', n);
  value_filter_t *u = value_filter_create(m, 6, SEED);
  for (uint64_t i = 0; i < n; i++) {
    val_t va = value_of('a', i), vb = value_of('b', i);
    value_filter_add(u, va.b, sizeof va.b);
    value_filter_add(u, vb.b, sizeof vb.b);
  }
  uint64_t pa = value_filter_popcount(a);
  err_t err;
  err_clear(&err);
  assert_int_equal(value_filter_merge(a, b, &err), ST_OK);
  assert_contains_all(a, 'a', n);
  assert_contains_all(a, 'b', n);
  assert_memory_equal(a->words, u->words, a->nwords * 8);
  assert_true(value_filter_popcount(a) > pa);
  value_filter_destroy(u);
  value_filter_destroy(b);

  /* Mismatched m, k or seed: rejected with a message, dst unchanged. */
  value_filter_t *bad[] = {value_filter_create(m + 64, 6, SEED), value_filter_create(m, 5, SEED),
                           value_filter_create(m, 6, SEED + 1)};
  uint64_t before = value_filter_popcount(a);
  for (size_t i = 0; i < 3; i++) {
    assert_non_null(bad[i]);
    value_filter_add(bad[i], "x", 1);
    err_clear(&err);
    assert_int_equal(value_filter_merge(a, bad[i], &err), ST_E_INVALID);
    assert_int_equal(err.code, ST_E_INVALID);
    assert_true(strstr(err.msg, "merge") != NULL);
    assert_int_equal(value_filter_merge(a, bad[i], NULL), ST_E_INVALID);
    value_filter_destroy(bad[i]);
  }
  assert_int_equal(value_filter_popcount(a), before);
  value_filter_destroy(a);
}

static uint8_t *serialized(const value_filter_t *f, size_t *len) {
  *len = value_filter_serialized_size(f->m);
  uint8_t *buf = malloc(*len);
  assert_non_null(buf);
  value_filter_serialize(f, buf);
  return buf;
}

static void test_value_filter_serialize_round_trip(void **state) {
  (void)state;
  const uint64_t ms[] = {64, 100, 1000, 65536, 1000003};
  for (size_t i = 0; i < sizeof ms / sizeof ms[0]; i++) {
    uint32_t k = 1 + (uint32_t)(i * 7) % 32;
    value_filter_t *f = filled(ms[i], k, SEED ^ ms[i], 'r', ms[i] / 16);
    size_t len;
    uint8_t *buf = serialized(f, &len);
    assert_int_equal(len, 36 + 8 * f->nwords);
    assert_memory_equal(buf, "BFHV", 4);
    assert_int_equal(decode_fixed32(buf + 4), 1);
    assert_int_equal(decode_fixed64(buf + 8), ms[i]);
    assert_int_equal(decode_fixed64(buf + value_filter_word_offset(0)), f->words[0]);
    value_filter_t *g = NULL;
    err_t err;
    assert_int_equal(value_filter_deserialize(buf, len, &g, &err), ST_OK);
    assert_non_null(g);
    assert_true(g->m == f->m && g->k == f->k && g->seed == f->seed && g->nwords == f->nwords);
    assert_memory_equal(g->words, f->words, f->nwords * 8);
    assert_contains_all(g, 'r', ms[i] / 16);
    assert_int_equal(value_filter_size_in_bytes(g), sizeof *g + 8 * g->nwords);
    value_filter_destroy(g);
    free(buf);
    value_filter_destroy(f);
  }
}

static void expect_corrupt(const uint8_t *buf, size_t len, const char *what, size_t where) {
  value_filter_t *g = (value_filter_t *)buf; /* must be overwritten with NULL */
  err_t err;
  err_clear(&err);
  int rc = value_filter_deserialize(buf, len, &g, &err);
  if (rc != ST_E_CORRUPT) fail_msg("%s at %zu (len %zu) not detected: rc %d", what, where, len, rc);
  assert_null(g);
  assert_int_equal(err.code, ST_E_CORRUPT);
  assert_true(strlen(err.msg) > 0);
}

/* Every single-byte change (xor 0x01 and xor 0xff) and every truncation of small filters is
   rejected. Each buffer is copied into an allocation of exactly its length, so ASan catches
   any read past the end. */
static void test_value_filter_deserialize_rejects_corruption(void **state) {
  (void)state;
  const uint64_t ms[] = {256, 300, 1000};
  for (size_t i = 0; i < sizeof ms / sizeof ms[0]; i++) {
    value_filter_t *f = filled(ms[i], 3, SEED, 'c', ms[i] / 12);
    size_t len;
    uint8_t *buf = serialized(f, &len);
    test_corruption_sweep(buf, len, 8, expect_corrupt); /* extra trailing bytes too */
    free(buf);
    value_filter_destroy(f);
  }
}

/* Re-seals a modified buffer with a valid checksum, to reach the checks behind the CRC. */
static void reseal(uint8_t *buf, size_t len) {
  encode_fixed32(buf + len - 4, crc32c_mask(crc32c_value(buf, len - 4)));
}

static void test_value_filter_deserialize_rejects_bad_fields(void **state) {
  (void)state;
  value_filter_t *f = filled(1000, 4, SEED, 's', 50); /* last word holds bits 960..999 */
  size_t len;
  uint8_t *buf = serialized(f, &len);
  uint8_t *copy = malloc(len);
  struct {
    size_t off;
    int width; /* bytes */
    uint64_t val;
  } bad[] = {
      {0, 4, 0x56484641}, /* magic */
      {4, 4, 2},          /* version */
      {8, 8, 63},         /* m below the minimum */
      {8, 8, 1024 + 64},  /* m needs more words than stored */
      {8, 8, 960},        /* m needs fewer words than stored */
      {8, 8, UINT64_MAX}, /* m overflows the word count */
      {16, 4, 0},         /* k */
      {16, 4, 33},        /* k */
      {20, 4, 1},         /* reserved */
  };
  for (size_t b = 0; b < sizeof bad / sizeof bad[0]; b++) {
    memcpy(copy, buf, len);
    if (bad[b].width == 4)
      encode_fixed32(copy + bad[b].off, (uint32_t)bad[b].val);
    else
      encode_fixed64(copy + bad[b].off, bad[b].val);
    reseal(copy, len);
    expect_corrupt(copy, len, "bad field", bad[b].off);
  }
  /* A bit at position >= m (bit 1000, in the last word) is rejected. */
  memcpy(copy, buf, len);
  size_t last = (size_t)value_filter_word_offset(f->nwords - 1);
  encode_fixed64(copy + last, decode_fixed64(copy + last) | (1ull << (1000 % 64)));
  reseal(copy, len);
  expect_corrupt(copy, len, "stray bit", last);
  /* m = 961..1024 all fit 16 words; a resealed m = 1024 is accepted (control). */
  memcpy(copy, buf, len);
  encode_fixed64(copy + 8, 1024);
  reseal(copy, len);
  value_filter_t *g = NULL;
  assert_int_equal(value_filter_deserialize(copy, len, &g, NULL), ST_OK);
  assert_int_equal(g->m, 1024);
  value_filter_destroy(g);
  free(copy);
  free(buf);
  value_filter_destroy(f);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_value_filter_create_rejects_bad_params),
      cmocka_unit_test(test_value_filter_fpr_matches_theory),
      cmocka_unit_test(test_value_filter_add_hash_matches_add),
      cmocka_unit_test(test_value_filter_probe_batch_equals_single),
      cmocka_unit_test(test_value_filter_merge_is_union),
      cmocka_unit_test(test_value_filter_serialize_round_trip),
      cmocka_unit_test(test_value_filter_deserialize_rejects_corruption),
      cmocka_unit_test(test_value_filter_deserialize_rejects_bad_fields),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

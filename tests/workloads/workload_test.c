/* Tests of workloads/workload.c: the permutations are bijections, values respect the domain,
 * fixed seeds reproduce, and the formats are the documented ones. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "bfh.h"
#include "workloads/workload.h"

/* Checks that perm is a bijection of [0, n): every image is < n and is hit once. */
static void check_bijection(uint64_t n, uint64_t seed) {
  workload_perm_t p;
  workload_perm_init(&p, n, seed);
  uint8_t *seen = calloc(n, 1);
  assert_non_null(seen);
  for (uint64_t x = 0; x < n; x++) {
    uint64_t y = workload_perm_apply(&p, x);
    assert_true(y < n);
    assert_int_equal(seen[y], 0);
    seen[y] = 1;
  }
  free(seen);
}

static void test_workload_perm_is_bijection(void **state) {
  (void)state;
  /* Powers of two, one past and one short of them, odd sizes and the tiny cases. */
  const uint64_t sizes[] = {1, 2, 3, 4, 5, 7, 16, 17, 100, 1000, 1023, 1024, 1025, 65537, 1000003};
  for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
    check_bijection(sizes[i], 42);
    check_bijection(sizes[i], 7);
  }
}

static void test_workload_perm_is_not_identity(void **state) {
  (void)state;
  /* A random permutation of 10000 has ~1 fixed point on average; a broken Feistel (identity)
     would have 10000. Bound: at most 20 fixed points (P[Poisson(1) > 20] < 1e-18). */
  workload_perm_t p;
  workload_perm_init(&p, 10000, 42);
  int fixed = 0;
  for (uint64_t x = 0; x < 10000; x++) fixed += workload_perm_apply(&p, x) == x;
  assert_true(fixed <= 20);
}

static void test_workload_seeds_reproduce(void **state) {
  (void)state;
  workload_config_t c;
  workload_config_init(&c);
  c.n = 12345;
  c.order = WORKLOAD_RANDOM;
  c.domain_pct = 10;
  workload_t a, b, other;
  assert_int_equal(workload_init(&a, &c), BFH_OK);
  assert_int_equal(workload_init(&b, &c), BFH_OK);
  c.seed = 43;
  assert_int_equal(workload_init(&other, &c), BFH_OK);
  int differ = 0;
  for (uint64_t i = 0; i < c.n; i++) {
    char k1[WORKLOAD_MAX_BYTES], k2[WORKLOAD_MAX_BYTES], v1[WORKLOAD_MAX_BYTES],
        v2[WORKLOAD_MAX_BYTES], k3[WORKLOAD_MAX_BYTES];
    size_t kl1 = workload_put_key(&a, i, k1), kl2 = workload_put_key(&b, i, k2);
    size_t vl1 = workload_put_value(&a, i, v1), vl2 = workload_put_value(&b, i, v2);
    assert_int_equal(kl1, kl2);
    assert_memory_equal(k1, k2, kl1);
    assert_int_equal(vl1, vl2);
    assert_memory_equal(v1, v2, vl1);
    size_t kl3 = workload_put_key(&other, i, k3);
    differ += kl3 != kl1 || memcmp(k1, k3, kl1) != 0;
  }
  /* Another seed gives another order (all but a handful of positions differ). */
  assert_true(differ > (int)c.n / 2);
  for (uint64_t q = 0; q < 100; q++) {
    assert_int_equal(workload_present_value_id(&a, 5, q), workload_present_value_id(&b, 5, q));
    assert_int_equal(workload_absent_value_id(&a, 5, q), workload_absent_value_id(&b, 5, q));
  }
}

static void test_workload_domain_respected(void **state) {
  (void)state;
  const double pcts[] = {1, 5, 10, 40, 70, 100};
  const uint64_t n = 20000;
  for (size_t t = 0; t < sizeof pcts / sizeof pcts[0]; t++) {
    workload_config_t c;
    workload_config_init(&c);
    c.n = n;
    c.domain_pct = pcts[t];
    c.order = WORKLOAD_RANDOM;
    workload_t w;
    assert_int_equal(workload_init(&w, &c), BFH_OK);
    assert_int_equal(w.domain, (uint64_t)(n * pcts[t] / 100 + 0.5));
    uint64_t *count = calloc(w.domain, sizeof *count);
    assert_non_null(count);
    for (uint64_t i = 0; i < n; i++) {
      uint64_t v = workload_value_id(&w, workload_entry_id(&w, i));
      assert_true(v < w.domain);
      count[v]++;
    }
    /* Every value of the domain occurs, as often as workload_value_count says. */
    for (uint64_t v = 0; v < w.domain; v++) {
      assert_true(count[v] >= 1);
      assert_int_equal(count[v], workload_value_count(&w, v));
    }
    free(count);
    for (uint64_t q = 0; q < 1000; q++) {
      assert_true(workload_present_value_id(&w, 9, q) < w.domain);
      assert_true(workload_absent_value_id(&w, 9, q) >= n);
    }
  }
}

/* The authors' workload: values drawn with replacement. Over n = 100000 entries and a 100%
   domain a value is on Binomial(n, 1/n) ~ Poisson(1) entries, so a share e^-1 = 0.368 of
   the domain never occurs (standard deviation of that share over n values ~0.0015; the bound
   is 0.01); at 2% (D = 2000) a value is on 50 entries on average. The counts of
   workload_value_count and workload_value_counts are what the entries hold, and sum to n. */
static void test_workload_drawn_values(void **state) {
  (void)state;
  const double pcts[] = {2, 100};
  const uint64_t n = 100000;
  for (size_t t = 0; t < 2; t++) {
    workload_config_t c;
    workload_config_init(&c);
    c.n = n;
    c.domain_pct = pcts[t];
    c.values = WORKLOAD_VALUES_DRAWN;
    workload_t w;
    assert_int_equal(workload_init(&w, &c), BFH_OK);
    assert_int_equal(w.domain, (uint64_t)(n * pcts[t] / 100));
    uint64_t *count = calloc(w.domain, sizeof *count), *ids = malloc(w.domain * sizeof *ids),
             *got = malloc(w.domain * sizeof *got);
    assert_true(count && ids && got);
    for (uint64_t j = 0; j < n; j++) {
      uint64_t v = workload_value_id(&w, j);
      assert_true(v < w.domain);
      count[v]++;
    }
    /* ids in reverse order, and one repeated, to exercise the lookup. */
    for (uint64_t v = 0; v < w.domain; v++) ids[v] = w.domain - 1 - v;
    ids[0] = ids[1];
    assert_int_equal(workload_value_counts(&w, ids, w.domain, got), BFH_OK);
    uint64_t never = 0, sum = 0;
    for (uint64_t v = 0; v < w.domain; v++) {
      assert_int_equal(got[v], count[ids[v]]);
      never += count[v] == 0;
      sum += count[v];
    }
    assert_int_equal(sum, n);
    for (uint64_t v = 0; v < 5; v++) assert_int_equal(workload_value_count(&w, v), count[v]);
    assert_int_equal(workload_value_count(&w, w.domain), 0);
    if (pcts[t] == 100) {
      double share = (double)never / (double)w.domain;
      assert_true(share > 0.368 - 0.01 && share < 0.368 + 0.01);
    } else {
      assert_int_equal(never, 0); /* P(a value of mean 50 never drawn) = e^-50 */
    }
    /* Not the exact mode's bijection: some value is off floor/ceil(n/D). */
    workload_t e;
    c.values = WORKLOAD_VALUES_EXACT;
    assert_int_equal(workload_init(&e, &c), BFH_OK);
    int differs = 0;
    for (uint64_t v = 0; v < w.domain && !differs; v++)
      differs = count[v] != workload_value_count(&e, v);
    assert_true(differs);
    assert_string_equal(workload_values_name(WORKLOAD_VALUES_DRAWN), "authors");
    assert_string_equal(workload_values_name(WORKLOAD_VALUES_EXACT), "exact");
    free(count);
    free(ids);
    free(got);
  }
}

static void test_workload_formats(void **state) {
  (void)state;
  workload_config_t c;
  workload_config_init(&c);
  c.n = 1000;
  workload_t w;
  assert_int_equal(workload_init(&w, &c), BFH_OK);
  char buf[WORKLOAD_MAX_BYTES];
  /* Sequential, 100% domain, paper format: the i-th put is Key<i> -> Value<i>. */
  size_t len = workload_put_key(&w, 17, buf);
  assert_int_equal(len, 5);
  assert_memory_equal(buf, "Key17", 5);
  len = workload_put_value(&w, 17, buf);
  assert_int_equal(len, 7);
  assert_memory_equal(buf, "Value17", 7);
  c.format = WORKLOAD_FORMAT_FIXED;
  assert_int_equal(workload_init(&w, &c), BFH_OK);
  assert_int_equal(workload_put_key(&w, 17, buf), 16);
  assert_string_equal(buf, "k000000000000017");
  assert_int_equal(workload_put_value(&w, 17, buf), 16);
  assert_string_equal(buf, "v000000000000017");
  /* Every width, as printf would write it. */
  const uint64_t ids[] = {0, 9, 10, 999999999999999ull, 1000000000000000ull, UINT64_MAX};
  for (size_t i = 0; i < sizeof ids / sizeof ids[0]; i++) {
    char want[64];
    snprintf(want, sizeof want, "Key%llu", (unsigned long long)ids[i]);
    w.cfg.format = WORKLOAD_FORMAT_PAPER;
    assert_int_equal(workload_key(&w, ids[i], buf), strlen(want));
    assert_string_equal(buf, want);
    snprintf(want, sizeof want, "Value%llu", (unsigned long long)ids[i]);
    assert_int_equal(workload_paper_value(ids[i], buf), strlen(want));
    assert_string_equal(buf, want);
    snprintf(want, sizeof want, "v%015llu", (unsigned long long)ids[i]);
    assert_int_equal(workload_fixed_value(ids[i], buf), strlen(want));
    assert_string_equal(buf, want);
    w.cfg.format = WORKLOAD_FORMAT_FIXED;
    snprintf(want, sizeof want, "k%015llu", (unsigned long long)ids[i]);
    assert_int_equal(workload_key(&w, ids[i], buf), strlen(want));
    assert_string_equal(buf, want);
  }
}

static void test_workload_init_rejects_bad_config(void **state) {
  (void)state;
  workload_config_t c;
  workload_config_init(&c);
  workload_t w;
  c.n = 0;
  assert_int_equal(workload_init(&w, &c), BFH_E_INVALID);
  c.n = 10;
  c.domain_pct = 0;
  assert_int_equal(workload_init(&w, &c), BFH_E_INVALID);
  c.domain_pct = 100.5;
  assert_int_equal(workload_init(&w, &c), BFH_E_INVALID);
  c.domain_pct = 0.001; /* rounds to zero distinct values: at least one is kept */
  assert_int_equal(workload_init(&w, &c), BFH_OK);
  assert_int_equal(w.domain, 1);
  c.values = (workload_values_t)2;
  assert_int_equal(workload_init(&w, &c), BFH_E_INVALID);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_workload_perm_is_bijection),
      cmocka_unit_test(test_workload_perm_is_not_identity),
      cmocka_unit_test(test_workload_seeds_reproduce),
      cmocka_unit_test(test_workload_domain_respected),
      cmocka_unit_test(test_workload_drawn_values),
      cmocka_unit_test(test_workload_formats),
      cmocka_unit_test(test_workload_init_rejects_bad_config),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

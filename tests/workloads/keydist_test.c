/* Tests of workloads/keydist.h: the zipfian ranks' frequencies against Zipf's law (the two
   most popular exactly, the top ten within a stated tolerance), scrambled and latest as its
   rearrangements, uniform's flatness, and growth. 1,000,000 draws, fixed seeds; tolerances
   are several standard deviations. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdlib.h>

#include "workloads/keydist.h"

#define DRAWS 1000000

static uint64_t *counts(keydist_t *d, uint64_t seed) {
  uint64_t *c = calloc(d->n, sizeof *c);
  assert_non_null(c);
  rng_t rng;
  rng_init(&rng, seed);
  for (int i = 0; i < DRAWS; i++) {
    uint64_t x = keydist_next(d, &rng);
    assert_true(x < d->n);
    c[x]++;
  }
  return c;
}

static double zeta(uint64_t n, double theta) {
  double s = 0;
  for (uint64_t i = 1; i <= n; i++) s += 1.0 / pow((double)i, theta);
  return s;
}

static void check_zipf(const uint64_t *c, uint64_t n) {
  double z = zeta(n, KEYDIST_THETA);
  double p0 = 1.0 / z, p1 = 1.0 / pow(2.0, KEYDIST_THETA) / z;
  assert_true(fabs((double)c[0] / DRAWS - p0) < 0.01 * p0 + 0.001);
  assert_true(fabs((double)c[1] / DRAWS - p1) < 0.02 * p1 + 0.001);
  double top10 = 0, want = 0;
  for (int i = 0; i < 10; i++) {
    top10 += (double)c[i] / DRAWS;
    want += 1.0 / pow(i + 1.0, KEYDIST_THETA) / z;
  }
  assert_true(fabs(top10 - want) < 0.02);
}

static void test_zipfian_follows_zipf(void **state) {
  (void)state;
  keydist_t d;
  keydist_init(&d, KEYDIST_ZIPFIAN, 10000, KEYDIST_THETA, 1);
  uint64_t *c = counts(&d, 11);
  check_zipf(c, d.n);
  free(c);
}

static void test_latest_counts_back_from_the_newest(void **state) {
  (void)state;
  keydist_t d;
  keydist_init(&d, KEYDIST_LATEST, 10000, KEYDIST_THETA, 1);
  uint64_t *c = counts(&d, 12);
  uint64_t *rev = malloc(d.n * sizeof *rev);
  assert_non_null(rev);
  for (uint64_t i = 0; i < d.n; i++) rev[i] = c[d.n - 1 - i];
  check_zipf(rev, d.n);
  free(rev);
  free(c);
}

static void test_scrambled_keeps_the_skew_elsewhere(void **state) {
  (void)state;
  keydist_t d;
  keydist_init(&d, KEYDIST_SCRAMBLED, 10000, KEYDIST_THETA, 5);
  uint64_t *c = counts(&d, 13);
  uint64_t most = 0, at = 0;
  for (uint64_t i = 0; i < d.n; i++)
    if (c[i] > most) most = c[i], at = i;
  double p0 = 1.0 / zeta(d.n, KEYDIST_THETA);
  assert_true((double)most / DRAWS >= 0.98 * p0);
  assert_true(at > 10); /* the most popular item is not among the first ones */
  free(c);
}

static void test_uniform_is_flat(void **state) {
  (void)state;
  keydist_t d;
  keydist_init(&d, KEYDIST_UNIFORM, 100, 0, 0);
  uint64_t *c = counts(&d, 14);
  for (uint64_t i = 0; i < d.n; i++) assert_true(labs((long)c[i] - DRAWS / 100) < 500);
  free(c);
}

static void test_grow_extends_the_sum(void **state) {
  (void)state;
  keydist_t a, b;
  keydist_init(&a, KEYDIST_LATEST, 5000, KEYDIST_THETA, 1);
  keydist_grow(&a, 20000);
  keydist_init(&b, KEYDIST_LATEST, 20000, KEYDIST_THETA, 1);
  assert_true(fabs(a.zeta_sum - b.zeta_sum) < 1e-9 * b.zeta_sum);
  assert_true(fabs(a.eta - b.eta) < 1e-9);
  uint64_t *c = counts(&a, 15);
  assert_true(c[19999] > c[4999]);
  free(c);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_zipfian_follows_zipf),
      cmocka_unit_test(test_latest_counts_back_from_the_newest),
      cmocka_unit_test(test_scrambled_keeps_the_skew_elsewhere),
      cmocka_unit_test(test_uniform_is_flat),
      cmocka_unit_test(test_grow_extends_the_sum),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

/* Tests of util/histogram.h: quantiles within 1% of the exact ones over several
   distributions (fixed seeds), exact values below 256, the extremes, merging. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>

#include "util/histogram.h"
#include "util/random.h"

static int by_value(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return (x > y) - (x < y);
}

/* Records v[0, n), then checks each quantile against the sorted values: never below the
   exact one and at most 1% above it. */
static void check_quantiles(uint64_t *v, size_t n) {
  histogram_t *h = malloc(sizeof *h);
  assert_non_null(h);
  histogram_init(h);
  for (size_t i = 0; i < n; i++) histogram_record(h, v[i]);
  qsort(v, n, sizeof *v, by_value);
  const double qs[] = {0.0, 0.01, 0.5, 0.9, 0.95, 0.99, 0.999, 1.0};
  for (size_t i = 0; i < sizeof qs / sizeof qs[0]; i++) {
    size_t rank = qs[i] == 0 ? 1 : (size_t)((double)n * qs[i] + 0.999999999);
    uint64_t exact = v[(rank ? rank : 1) - 1], got = histogram_quantile(h, qs[i]);
    if (got < exact || (double)got > (double)exact * 1.01 + 1)
      fail_msg("q %.3f: %llu, exact %llu", qs[i], (unsigned long long)got,
               (unsigned long long)exact);
  }
  assert_int_equal(histogram_quantile(h, 1.0), v[n - 1]);
  assert_int_equal(h->count, n);
  free(h);
}

static void test_quantiles_within_one_percent(void **state) {
  (void)state;
  enum { N = 200000 };
  uint64_t *v = malloc(N * sizeof *v);
  assert_non_null(v);
  rng_t rng;
  rng_init(&rng, 99);
  for (size_t i = 0; i < N; i++) v[i] = rng_below(&rng, 1000000); /* uniform */
  check_quantiles(v, N);
  for (size_t i = 0; i < N; i++) /* long-tailed, like latencies: 1 us .. 1 s */
    v[i] = (uint64_t)(1000.0 / (1e-6 + rng_double(&rng)));
  check_quantiles(v, N);
  for (size_t i = 0; i < N; i++) v[i] = rng_below(&rng, 256); /* each its own bucket */
  check_quantiles(v, N);
  free(v);
}

static void test_extremes_and_empty(void **state) {
  (void)state;
  histogram_t *h = malloc(sizeof *h);
  assert_non_null(h);
  histogram_init(h);
  assert_int_equal(histogram_quantile(h, 0.5), 0);
  assert_true(histogram_mean(h) == 0.0);
  histogram_record(h, UINT64_MAX);
  histogram_record(h, 0);
  assert_int_equal(histogram_quantile(h, 0.0), 0);
  assert_int_equal(histogram_quantile(h, 0.5), 0);
  assert_true(histogram_quantile(h, 1.0) == UINT64_MAX);
  free(h);
}

static void test_merge_is_recording_both(void **state) {
  (void)state;
  histogram_t *a = malloc(sizeof *a), *b = malloc(sizeof *b), *c = malloc(sizeof *c);
  assert_true(a && b && c);
  histogram_init(a);
  histogram_init(b);
  histogram_init(c);
  rng_t rng;
  rng_init(&rng, 7);
  for (int i = 0; i < 50000; i++) {
    uint64_t x = rng_below(&rng, 1u << 20);
    histogram_record(i % 3 ? a : b, x);
    histogram_record(c, x);
  }
  histogram_merge(a, b);
  assert_memory_equal(a, c, sizeof *a);
  free(a);
  free(b);
  free(c);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_quantiles_within_one_percent),
      cmocka_unit_test(test_extremes_and_empty),
      cmocka_unit_test(test_merge_is_recording_both),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

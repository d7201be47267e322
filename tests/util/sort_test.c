/* Tests of u64_radix_sort (util/sort.h) against qsort on the same arrays: random keys of
 * 48 and 64 bits (fixed seeds), many equal keys, keys that share their high bytes (the
 * skipped passes), already sorted and reversed arrays, and the sizes 0 and 1.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "util/random.h"
#include "util/sort.h"
#include "util/status.h"
#include "util/vec.h"

#define SEED 0x5047ull

/* Sorts a copy of v[0, n) both ways and compares them. */
static void expect_as_qsort(const uint64_t *v, size_t n, unsigned bits) {
  uint64_t *a = malloc((n ? n : 1) * sizeof *a), *b = malloc((n ? n : 1) * sizeof *b);
  assert_non_null(a);
  assert_non_null(b);
  if (n) memcpy(a, v, n * sizeof *a);
  if (n) memcpy(b, v, n * sizeof *b);
  assert_int_equal(u64_radix_sort(a, n, bits), ST_OK);
  if (n) qsort(b, n, sizeof *b, u64_compare);
  for (size_t i = 0; i < n; i++)
    if (a[i] != b[i])
      fail_msg("n %zu bits %u: at %zu %llx, qsort %llx", n, bits, i, (unsigned long long)a[i],
               (unsigned long long)b[i]);
  free(a);
  free(b);
}

static void test_sort_random(void **state) {
  (void)state;
  rng_t r;
  rng_init(&r, SEED);
  const size_t sizes[] = {0, 1, 2, 3, 255, 256, 257, 1000, 85000};
  const unsigned widths[] = {48, 64, 8, 13};
  uint64_t *v = malloc(85000 * sizeof *v);
  assert_non_null(v);
  for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++)
    for (size_t w = 0; w < sizeof widths / sizeof widths[0]; w++) {
      unsigned bits = widths[w];
      uint64_t mask = bits == 64 ? UINT64_MAX : (1ull << bits) - 1;
      for (size_t i = 0; i < sizes[s]; i++) v[i] = rng_next(&r) & mask;
      expect_as_qsort(v, sizes[s], bits);
    }
  free(v);
}

/* The value-to-block map's pairs: a 32-bit fingerprint over a 16-bit block, many of them
   equal (a value on many entries of one block), and keys sharing their high bytes. */
static void test_sort_duplicates_and_shared_digits(void **state) {
  (void)state;
  rng_t r;
  rng_init(&r, SEED + 1);
  enum { N = 20000 };
  uint64_t *v = malloc(N * sizeof *v);
  assert_non_null(v);
  for (size_t i = 0; i < N; i++) v[i] = rng_below(&r, 50) << 16 | rng_below(&r, 4);
  expect_as_qsort(v, N, 48);
  for (size_t i = 0; i < N; i++) v[i] = 0x123456780000ull | rng_below(&r, 300);
  expect_as_qsort(v, N, 48);
  for (size_t i = 0; i < N; i++) v[i] = 7; /* every pass skipped */
  expect_as_qsort(v, N, 48);
  for (size_t i = 0; i < N; i++) v[i] = i; /* sorted */
  expect_as_qsort(v, N, 48);
  for (size_t i = 0; i < N; i++) v[i] = (N - i) << 20; /* reversed */
  expect_as_qsort(v, N, 48);
  free(v);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_sort_random),
      cmocka_unit_test(test_sort_duplicates_and_shared_digits),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

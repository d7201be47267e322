/* bits_popcount and bits_hamming, which run the POPCNT loop or the generic one depending on
 * the CPU, against a bit-by-bit count, on random words of every length 0..WORDS (fixed
 * seed) and on the all-ones and all-zeros words.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "filters/bits.h"
#include "util/random.h"

#define WORDS 67 /* past any unrolled or vectorized body, with a remainder */

static uint64_t count_bit_by_bit(const uint64_t *a, const uint64_t *b, size_t nwords) {
  uint64_t c = 0;
  for (size_t i = 0; i < nwords; i++)
    for (int j = 0; j < 64; j++) c += ((b ? a[i] ^ b[i] : a[i]) >> j) & 1;
  return c;
}

static void test_bits_counts_match_bit_by_bit(void **state) {
  (void)state;
  rng_t r;
  rng_init(&r, 0xb175ull);
  uint64_t a[WORDS], b[WORDS];
  for (size_t i = 0; i < WORDS; i++) {
    a[i] = rng_next(&r) & rng_next(&r); /* sparse and dense words both */
    b[i] = rng_next(&r);
  }
  for (size_t n = 0; n <= WORDS; n++) {
    assert_int_equal(bits_popcount(a, n), count_bit_by_bit(a, NULL, n));
    assert_int_equal(bits_hamming(a, b, n), count_bit_by_bit(a, b, n));
  }
}

static void test_bits_counts_extremes(void **state) {
  (void)state;
  uint64_t ones[WORDS], zeros[WORDS];
  memset(ones, 0xff, sizeof ones);
  memset(zeros, 0, sizeof zeros);
  assert_int_equal(bits_popcount(ones, WORDS), 64 * WORDS);
  assert_int_equal(bits_popcount(zeros, WORDS), 0);
  assert_int_equal(bits_hamming(ones, zeros, WORDS), 64 * WORDS);
  assert_int_equal(bits_hamming(ones, ones, WORDS), 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_bits_counts_match_bit_by_bit),
      cmocka_unit_test(test_bits_counts_extremes),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

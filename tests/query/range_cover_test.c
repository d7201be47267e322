/* Tests of query/range_cover.h: order-preserving codes for ints, strings and prefixes; covers
   of chosen ranges (the exact dyadic split, the coarser floor a budget forces, the top code,
   no levels), and random ranges against the invariants and a membership oracle. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "query/attr.h"
#include "query/range_cover.h"
#include "tests/query/range_cover_check.h"
#include "util/random.h"

#define CAP 4096

static range_levels_t levels(int has_zero, int n, ...) {
  range_levels_t lv = {.has_zero = has_zero, .n = (uint32_t)n};
  va_list ap;
  va_start(ap, n);
  for (int i = 0; i < n; i++) lv.j[i] = (uint8_t)va_arg(ap, int);
  va_end(ap);
  assert_true(range_levels_valid(&lv));
  return lv;
}

/* Covers [lo, hi] and checks the invariants; the result into *r, the probes into out. */
static void cover(uint64_t lo, uint64_t hi, const range_levels_t *lv, size_t budget,
                  range_probe_t *out, range_cover_result_t *r) {
  range_cover(lo, hi, lv, budget, out, CAP, r);
  const char *bad = range_cover_check(lo, hi, lv, budget, out, r);
  if (bad) fail_msg("[%llu, %llu]: %s", (unsigned long long)lo, (unsigned long long)hi, bad);
}

static int probes_hold(const range_probe_t *p, size_t n, uint64_t code) {
  for (size_t i = 0; i < n; i++)
    if (p[i].level >= 64 || code >> p[i].level == p[i].prefix) return 1;
  return 0;
}

static void test_codes_keep_order(void **state) {
  (void)state;
  /* :int terms: the integers' order. */
  const int64_t ints[] = {INT64_MIN, INT64_MIN + 1, -1000, -1, 0, 1, 7, 1000, INT64_MAX};
  uint64_t prev = 0;
  for (size_t i = 0; i < sizeof ints / sizeof ints[0]; i++) {
    uint8_t term[ATTR_INT_TERM_BYTES];
    attr_int_term(ints[i], term);
    uint64_t c = range_code_bytes(term, sizeof term);
    if (i > 0) assert_true(c > prev);
    prev = c;
  }
  assert_int_equal(range_code_bytes("", 0), 0);
  /* Strings: bytewise order, non-decreasing (equal past 8 bytes). */
  rng_t rng;
  rng_init(&rng, 47);
  for (int i = 0; i < 20000; i++) {
    uint8_t a[12], b[12];
    size_t la = rng_below(&rng, 13), lb = rng_below(&rng, 13);
    for (size_t k = 0; k < 12; k++) {
      a[k] = (uint8_t)rng_below(&rng, 4) + 'a' - 1; /* a NUL now and then */
      b[k] = (uint8_t)rng_below(&rng, 4) + 'a' - 1;
    }
    size_t m = la < lb ? la : lb;
    int cmp = memcmp(a, b, m);
    if (cmp == 0) cmp = la < lb ? -1 : la > lb;
    uint64_t ca = range_code_bytes(a, la), cb = range_code_bytes(b, lb);
    if (cmp < 0) assert_true(ca <= cb);
    if (cmp > 0) assert_true(ca >= cb);
  }
}

static void test_prefix_spans_exactly_its_strings(void **state) {
  (void)state;
  uint64_t lo, hi;
  range_code_prefix("War", 3, &lo, &hi);
  const char *in[] = {"War", "Warsaw", "War and Peace", "Warzzzzzzzzz"};
  const char *out[] = {"Wa", "Was", "Wap", "Wa\x7f", "", "WAR", "Xar"};
  for (size_t i = 0; i < 4; i++) {
    uint64_t c = range_code_bytes(in[i], strlen(in[i]));
    assert_true(c >= lo && c <= hi);
  }
  for (size_t i = 0; i < 7; i++) {
    uint64_t c = range_code_bytes(out[i], strlen(out[i]));
    assert_false(c >= lo && c <= hi);
  }
  /* The empty prefix spans every code; one of 8 bytes or more is one code. */
  range_code_prefix("", 0, &lo, &hi);
  assert_true(lo == 0 && hi == UINT64_MAX);
  range_code_prefix("abcdefghij", 10, &lo, &hi);
  assert_true(lo == hi && lo == range_code_bytes("abcdefgh", 8));
}

static void test_cover_chosen_ranges(void **state) {
  (void)state;
  range_probe_t p[CAP];
  range_cover_result_t r;
  range_levels_t lv = levels(1, 2, 4, 8);

  /* An aligned interval of the top level is one probe. */
  cover(0, 255, &lv, 64, p, &r);
  assert_true(r.n == 1 && p[0].level == 8 && p[0].prefix == 0 && r.floor == 0);

  /* [1, 254]: 15 codes, 14 intervals of 16, 15 codes. */
  cover(1, 254, &lv, 64, p, &r);
  assert_int_equal(r.n, 15 + 14 + 15);
  assert_int_equal(r.floor, 0);
  assert_true(p[0].level == 0 && p[0].prefix == 1 && p[15].level == 4 && p[15].prefix == 1);

  /* A budget of 20 rounds the ends out to level 4, then 8: [0, 255], one probe. */
  cover(1, 254, &lv, 20, p, &r);
  assert_true(r.n == 1 && r.floor == 4 && p[0].level == 8);

  /* A budget of 1 for [16, 47] at levels 4 and 8: two probes at level 4 do not fit, and one
     at level 8 ([0, 255]) does. */
  cover(16, 47, &lv, 1, p, &r);
  assert_true(r.n == 1 && r.floor == 8 && p[0].level == 8);

  /* The top code, alone and as the end of the whole domain. */
  cover(UINT64_MAX, UINT64_MAX, &lv, 4, p, &r);
  assert_true(r.n == 1 && p[0].level == 0 && p[0].prefix == UINT64_MAX);
  range_levels_t top = levels(1, 1, 60);
  cover(0, UINT64_MAX, &top, 16, p, &r);
  assert_true(r.n == 16 && p[15].prefix == 15);
  cover(0, UINT64_MAX, &top, 15, p, &r);
  assert_true(r.unbounded && r.n == 0);

  /* Without level 0, a point is its level-4 interval; with no level at all, unbounded. */
  range_levels_t no_zero = levels(0, 1, 4);
  cover(21, 21, &no_zero, 8, p, &r);
  assert_true(r.n == 1 && r.floor == 4 && p[0].prefix == 1);
  range_levels_t none = levels(0, 0);
  cover(5, 9, &none, 8, p, &r);
  assert_true(r.unbounded);
}

/* Random ranges of every width under random level sets: the invariants, and every code of
   the range (and, for an exact cover, no code outside it) held by some probe. */
static void test_cover_random_ranges(void **state) {
  (void)state;
  static range_probe_t p[CAP];
  rng_t rng;
  rng_init(&rng, 48);
  for (int t = 0; t < 20000; t++) {
    range_levels_t lv = {.has_zero = rng_below(&rng, 4) != 0};
    for (unsigned j = 1 + (unsigned)rng_below(&rng, 4); j < 64 && lv.n < RANGE_MAX_LEVELS;
         j += 1 + (unsigned)rng_below(&rng, 8))
      lv.j[lv.n++] = (uint8_t)j;
    uint64_t lo = rng_next(&rng) >> rng_below(&rng, 64);
    uint64_t width = rng_next(&rng) >> rng_below(&rng, 64);
    uint64_t hi = width > UINT64_MAX - lo ? UINT64_MAX : lo + width;
    size_t budget = 1 + rng_below(&rng, 200);
    range_cover_result_t r;
    cover(lo, hi, &lv, budget, p, &r);
    if (r.unbounded) continue;
    for (int k = 0; k < 16; k++) {
      uint64_t c = lo + (hi == lo ? 0 : rng_below(&rng, hi - lo) + (k & 1));
      assert_true(probes_hold(p, r.n, c));
    }
    if (r.floor == 0) {
      if (lo > 0) assert_false(probes_hold(p, r.n, lo - 1));
      if (hi < UINT64_MAX) assert_false(probes_hold(p, r.n, hi + 1));
    }
  }
}

static void test_probe_items_differ_by_level(void **state) {
  (void)state;
  uint8_t a[RANGE_ITEM_BYTES], b[RANGE_ITEM_BYTES];
  range_probe_item(&(range_probe_t){.level = 4, .prefix = 0x0102030405060708ull}, a);
  range_probe_item(&(range_probe_t){.level = 8, .prefix = 0x0102030405060708ull}, b);
  assert_int_equal(a[0], 4);
  assert_int_equal(a[1], 0x01);
  assert_int_equal(a[8], 0x08);
  assert_memory_not_equal(a, b, RANGE_ITEM_BYTES);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_codes_keep_order),
      cmocka_unit_test(test_prefix_spans_exactly_its_strings),
      cmocka_unit_test(test_cover_chosen_ranges),
      cmocka_unit_test(test_cover_random_ranges),
      cmocka_unit_test(test_probe_items_differ_by_level),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

/* Tests of the little-endian fixed-width and varint helpers (util/coding.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "util/coding.h"
#include "util/random.h"

#define SEED 0xc0d1ull

static void test_coding_fixed_byte_order(void **state) {
  (void)state;
  uint8_t b[8];
  encode_fixed32(b, 0x04030201u);
  assert_memory_equal(b, "\x01\x02\x03\x04", 4);
  encode_fixed64(b, 0x0807060504030201ull);
  assert_memory_equal(b, "\x01\x02\x03\x04\x05\x06\x07\x08", 8);
  assert_int_equal(decode_fixed32((const uint8_t *)"\xff\x00\x00\x80"), 0x800000ffu);
}

static void test_coding_fixed_round_trip(void **state) {
  (void)state;
  uint8_t b[8 + 1];
  const uint32_t v32[] = {0,      1,       0x7f,        0x80,        0xff,        0x100,
                          0xffff, 0x10000, 0x7fffffffu, 0x80000000u, 0xfffffffeu, UINT32_MAX};
  for (size_t i = 0; i < sizeof v32 / sizeof v32[0]; i++) {
    for (size_t off = 0; off < 2; off++) { /* aligned and unaligned */
      encode_fixed32(b + off, v32[i]);
      assert_int_equal(decode_fixed32(b + off), v32[i]);
    }
  }
  for (unsigned s = 0; s < 64; s++) {
    const uint64_t vals[] = {1ull << s, (1ull << s) - 1, ~(1ull << s), UINT64_MAX >> s};
    for (size_t i = 0; i < 4; i++) {
      encode_fixed64(b + 1, vals[i]);
      assert_int_equal(decode_fixed64(b + 1), vals[i]);
    }
  }
  rng_t r;
  rng_init(&r, SEED);
  for (int i = 0; i < 100000; i++) {
    uint64_t v = rng_next(&r);
    encode_fixed64(b, v);
    assert_int_equal(decode_fixed64(b), v);
  }
}

static void check_varint64(uint64_t v) {
  uint8_t buf[VARINT64_MAX_BYTES + 2];
  memset(buf, 0xaa, sizeof buf);
  uint8_t *end = encode_varint64(buf, v);
  size_t n = (size_t)(end - buf);
  assert_int_equal(n, varint_length(v));
  assert_true(n >= 1 && n <= VARINT64_MAX_BYTES);
  assert_int_equal(buf[n], 0xaa); /* nothing written past the end */
  uint64_t got = ~v;
  assert_ptr_equal(decode_varint64(buf, end, &got), end);
  assert_int_equal(got, v);
  /* Every truncation returns NULL. */
  for (size_t cut = 0; cut < n; cut++) assert_null(decode_varint64(buf, buf + cut, &got));
  uint32_t v32 = 0;
  if (v <= UINT32_MAX) {
    assert_true(n <= VARINT32_MAX_BYTES);
    assert_ptr_equal(decode_varint32(buf, end, &v32), end);
    assert_int_equal(v32, (uint32_t)v);
    for (size_t cut = 0; cut < n; cut++) assert_null(decode_varint32(buf, buf + cut, &v32));
  } else {
    assert_null(decode_varint32(buf, end, &v32)); /* does not fit 32 bits */
  }
}

/* Round trips at every 7-bit boundary (2^(7i) - 1 and 2^(7i)) and every power of two. */
static void test_coding_varint_round_trip(void **state) {
  (void)state;
  check_varint64(0);
  check_varint64(UINT64_MAX);
  check_varint64(UINT32_MAX);
  check_varint64((uint64_t)UINT32_MAX + 1);
  for (unsigned s = 7; s < 64; s += 7) {
    check_varint64((1ull << s) - 1);
    check_varint64(1ull << s);
    assert_int_equal(varint_length((1ull << s) - 1), s / 7);
    assert_int_equal(varint_length(1ull << s), s / 7 + 1);
  }
  for (unsigned s = 0; s < 64; s++) check_varint64(1ull << s);
  assert_int_equal(varint_length(UINT64_MAX), 10);
  rng_t r;
  rng_init(&r, SEED + 1);
  for (int i = 0; i < 10000; i++) check_varint64(rng_next(&r) >> rng_below(&r, 64));
  /* encode_varint32 is the same encoding. */
  uint8_t a[VARINT64_MAX_BYTES], b[VARINT64_MAX_BYTES];
  uint8_t *ea = encode_varint32(a, 300), *eb = encode_varint64(b, 300);
  assert_int_equal(ea - a, 2);
  assert_int_equal(eb - b, 2);
  assert_memory_equal(a, "\xac\x02", 2);
  assert_memory_equal(a, b, 2);
}

/* Over-long encodings: more than 10 bytes, or a 10th byte with bits beyond bit 63. */
static void test_coding_varint_overlong(void **state) {
  (void)state;
  uint8_t buf[16];
  uint64_t v;
  uint32_t v32;
  memset(buf, 0x80, sizeof buf);
  buf[10] = 0x00; /* 11-byte encoding of 0 */
  assert_null(decode_varint64(buf, buf + 11, &v));
  memset(buf, 0xff, sizeof buf); /* never terminates */
  assert_null(decode_varint64(buf, buf + sizeof buf, &v));
  assert_null(decode_varint32(buf, buf + sizeof buf, &v32));
  memset(buf, 0xff, 9);
  buf[9] = 0x02; /* would be bit 64 */
  assert_null(decode_varint64(buf, buf + 10, &v));
  buf[9] = 0x01; /* UINT64_MAX: the longest valid encoding */
  assert_ptr_equal(decode_varint64(buf, buf + 10, &v), buf + 10);
  assert_true(v == UINT64_MAX);
  /* A 32-bit varint with a 6th byte, and a 5-byte one above UINT32_MAX. */
  memset(buf, 0x80, 5);
  buf[5] = 0x00;
  assert_null(decode_varint32(buf, buf + 6, &v32));
  memset(buf, 0xff, 4);
  buf[4] = 0x1f; /* 2^35 - 1 */
  assert_null(decode_varint32(buf, buf + 5, &v32));
  buf[4] = 0x0f; /* UINT32_MAX */
  assert_ptr_equal(decode_varint32(buf, buf + 5, &v32), buf + 5);
  assert_int_equal(v32, UINT32_MAX);
  /* An empty range. */
  assert_null(decode_varint64(buf, buf, &v));
}

/* A sequence of varints decodes back in order and stops exactly at the end. */
static void test_coding_varint_sequence(void **state) {
  (void)state;
  uint8_t buf[1000 * VARINT64_MAX_BYTES];
  uint64_t vals[1000];
  rng_t r;
  rng_init(&r, SEED + 2);
  uint8_t *p = buf;
  for (int i = 0; i < 1000; i++) {
    vals[i] = rng_next(&r) >> rng_below(&r, 64);
    p = encode_varint64(p, vals[i]);
  }
  const uint8_t *q = buf;
  for (int i = 0; i < 1000; i++) {
    uint64_t v;
    q = decode_varint64(q, p, &v);
    assert_non_null(q);
    assert_int_equal(v, vals[i]);
  }
  assert_ptr_equal(q, p);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_coding_fixed_byte_order),
      cmocka_unit_test(test_coding_fixed_round_trip),
      cmocka_unit_test(test_coding_varint_round_trip),
      cmocka_unit_test(test_coding_varint_overlong),
      cmocka_unit_test(test_coding_varint_sequence),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

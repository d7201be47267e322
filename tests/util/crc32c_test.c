/* Tests of CRC32C (util/crc32c.h): known vectors, extension, masking, and agreement of the
 * SSE4.2 path with the portable table path. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "util/crc32c.h"
#include "util/random.h"

#define SEED 0xc3c32cull

typedef uint32_t (*extend_fn)(uint32_t, const void *, size_t);

/* Both implementations are checked against the same vectors (RFC 3720 B.4 and the usual
   "123456789" check value). */
static void check_vectors(extend_fn fn) {
  uint8_t buf[32];
  memset(buf, 0, sizeof buf);
  assert_int_equal(fn(0, buf, sizeof buf), 0x8a9136aau);
  memset(buf, 0xff, sizeof buf);
  assert_int_equal(fn(0, buf, sizeof buf), 0x62a8ab43u);
  for (int i = 0; i < 32; i++) buf[i] = (uint8_t)i;
  assert_int_equal(fn(0, buf, sizeof buf), 0x46dd794eu);
  for (int i = 0; i < 32; i++) buf[i] = (uint8_t)(31 - i);
  assert_int_equal(fn(0, buf, sizeof buf), 0x113fdb5cu);
  assert_int_equal(fn(0, "123456789", 9), 0xe3069283u);
  assert_int_equal(fn(0, "", 0), 0);
  assert_int_equal(fn(0, "a", 1), 0xc1d04330u);
}

static void test_crc32c_known_vectors(void **state) {
  (void)state;
  check_vectors(crc32c_extend);
  check_vectors(crc32c_extend_portable);
  assert_int_equal(crc32c_value("123456789", 9), 0xe3069283u);
#if defined(__x86_64__)
  print_message("crc32c_extend uses the %s path\n",
                __builtin_cpu_supports("sse4.2") ? "SSE4.2" : "portable");
#endif
}

/* extend(value(A), B) == value(A B) for every split of a 300-byte buffer, both paths. */
static void test_crc32c_extend_equals_one_shot(void **state) {
  (void)state;
  uint8_t buf[300];
  rng_t r;
  rng_init(&r, SEED);
  for (size_t i = 0; i < sizeof buf; i++) buf[i] = (uint8_t)rng_next(&r);
  uint32_t whole = crc32c_value(buf, sizeof buf);
  for (size_t split = 0; split <= sizeof buf; split++) {
    assert_int_equal(crc32c_extend(crc32c_value(buf, split), buf + split, sizeof buf - split),
                     whole);
    assert_int_equal(crc32c_extend_portable(crc32c_extend_portable(0, buf, split), buf + split,
                                            sizeof buf - split),
                     whole);
  }
  /* Extension is not concatenation-blind: a different split point of different data differs. */
  assert_true(crc32c_extend(crc32c_value("hello ", 6), "world", 5) ==
              crc32c_value("hello world", 11));
  assert_true(crc32c_value("hello world", 11) != crc32c_value("hello worle", 11));
}

static void test_crc32c_mask_round_trip(void **state) {
  (void)state;
  uint32_t crc = crc32c_value("foo", 3);
  assert_true(crc32c_mask(crc) != crc);
  assert_true(crc32c_mask(crc32c_mask(crc)) != crc);
  assert_int_equal(crc32c_unmask(crc32c_mask(crc)), crc);
  assert_int_equal(crc32c_unmask(crc32c_unmask(crc32c_mask(crc32c_mask(crc)))), crc);
  rng_t r;
  rng_init(&r, SEED + 1);
  for (int i = 0; i < 100000; i++) {
    uint32_t x = (uint32_t)rng_next(&r);
    assert_int_equal(crc32c_unmask(crc32c_mask(x)), x);
    assert_int_equal(crc32c_mask(crc32c_unmask(x)), x);
  }
  const uint32_t edge[] = {0, 1, 0x80000000u, 0xffffffffu, CRC32C_MASK_DELTA};
  for (size_t i = 0; i < sizeof edge / sizeof edge[0]; i++)
    assert_int_equal(crc32c_unmask(crc32c_mask(edge[i])), edge[i]);
}

/* The dispatching function (SSE4.2 on this CPU when available) and the table path agree on
   random buffers of every length 0..300, at every start alignment 0..7, from random initial
   crcs. */
static void test_crc32c_paths_agree(void **state) {
  (void)state;
  uint8_t buf[300 + 8];
  rng_t r;
  rng_init(&r, SEED + 2);
  for (size_t len = 0; len <= 300; len++) {
    for (size_t align = 0; align < 8; align++) {
      for (size_t i = 0; i < sizeof buf; i++) buf[i] = (uint8_t)rng_next(&r);
      uint32_t init = (align & 1) ? (uint32_t)rng_next(&r) : 0;
      uint32_t a = crc32c_extend(init, buf + align, len);
      uint32_t b = crc32c_extend_portable(init, buf + align, len);
      if (a != b) fail_msg("paths differ: len %zu align %zu: %#x vs %#x", len, align, a, b);
    }
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_crc32c_known_vectors),
      cmocka_unit_test(test_crc32c_extend_equals_one_shot),
      cmocka_unit_test(test_crc32c_mask_round_trip),
      cmocka_unit_test(test_crc32c_paths_agree),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

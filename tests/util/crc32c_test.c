/* Tests of CRC32C (util/crc32c.h): known vectors, extension, masking, and agreement of the
 * SSE4.2 paths (one chain; three chains joined with PCLMULQDQ) with the portable table path.
 * The three-chain path is taken from 96 bytes on, in passes of up to 6 KiB: the lengths
 * below cover passes of every stretch length, several passes and every tail. */
#include <stdlib.h>
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
  /* Long vectors (computed bit by bit, outside bfh): one pass of the three chains, one pass
     and a tail, several passes. */
  enum { LONG = 65536 };
  uint8_t *big = malloc(LONG);
  assert_non_null(big);
  memset(big, 0, 4096);
  assert_int_equal(fn(0, big, 4096), 0x98f94189u);
  for (uint32_t i = 0; i < 6145; i++) big[i] = (uint8_t)((i * i + i / 256) & 0xff);
  assert_int_equal(fn(0, big, 6145), 0x8ce980f8u);
  for (uint32_t i = 0; i < LONG; i++) big[i] = (uint8_t)((i * 31 + 7) % 251);
  assert_int_equal(fn(0, big, LONG), 0x5b652db7u);
  free(big);
}

static void test_crc32c_known_vectors(void **state) {
  (void)state;
  check_vectors(crc32c_extend);
  check_vectors(crc32c_extend_portable);
  check_vectors(crc32c_extend_single_chain);
  assert_int_equal(crc32c_value("123456789", 9), 0xe3069283u);
  print_message("crc32c_extend uses the %s path\n", crc32c_path_name());
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

/* fn and the table path agree on random bytes at p[0, len), from a random initial crc. */
static void check_agree(extend_fn fn, const char *name, rng_t *r, const uint8_t *p, size_t len,
                        size_t align) {
  uint32_t init = (rng_next(r) & 1) ? (uint32_t)rng_next(r) : 0;
  uint32_t a = fn(init, p, len), b = crc32c_extend_portable(init, p, len);
  if (a != b)
    fail_msg("%s and portable differ: len %zu align %zu: %#x vs %#x", name, len, align, a, b);
}

/* The dispatching function (three chains on a CPU with SSE4.2 and PCLMULQDQ) and the single
   chain agree with the table path on random bytes of every length 0..4096, at a random start
   alignment 0..63 each time (seeded), and at every alignment 0..7 for the lengths up to 300
   and around the boundaries of the three-chain passes. */
static void test_crc32c_paths_agree(void **state) {
  (void)state;
  enum { MAX = 4096, PAD = 64 };
  static uint8_t buf[MAX + PAD];
  rng_t r;
  rng_init(&r, SEED + 2);
  for (size_t i = 0; i < sizeof buf; i++) buf[i] = (uint8_t)rng_next(&r);
  for (size_t len = 0; len <= MAX; len++) {
    size_t align = rng_next(&r) % PAD;
    /* fresh bytes where this length looks, so no two lengths read the same data */
    for (size_t i = 0; i < 16; i++) buf[rng_next(&r) % sizeof buf] = (uint8_t)rng_next(&r);
    check_agree(crc32c_extend, "dispatch", &r, buf + align, len, align);
    check_agree(crc32c_extend_single_chain, "single chain", &r, buf + align, len, align);
    int edge = len <= 300 || len % 24 < 2 || len % 24 > 22;
    for (size_t a = 0; edge && a < 8; a++) {
      check_agree(crc32c_extend, "dispatch", &r, buf + a, len, a);
      check_agree(crc32c_extend_single_chain, "single chain", &r, buf + a, len, a);
    }
  }
}

/* The same on long buffers: 200 random lengths up to 300 KiB (several full 6 KiB passes and
   a shorter last one) at random offsets, and the 256 KiB of a table read run. */
static void test_crc32c_paths_agree_long(void **state) {
  (void)state;
  enum { MAX = 300 << 10, PAD = 64 };
  uint8_t *buf = malloc(MAX + PAD);
  assert_non_null(buf);
  rng_t r;
  rng_init(&r, SEED + 3);
  for (size_t i = 0; i < MAX + PAD; i++) buf[i] = (uint8_t)rng_next(&r);
  for (int i = 0; i < 200; i++) {
    size_t len = rng_next(&r) % (MAX + 1), align = rng_next(&r) % PAD;
    check_agree(crc32c_extend, "dispatch", &r, buf + align, len, align);
    check_agree(crc32c_extend_single_chain, "single chain", &r, buf + align, len, align);
  }
  check_agree(crc32c_extend, "dispatch", &r, buf, 256 << 10, 0);
  /* extension across pass boundaries: split a 20000-byte buffer at 300 random points */
  uint32_t whole = crc32c_extend_portable(0, buf + 3, 20000);
  for (int i = 0; i < 300; i++) {
    size_t split = rng_next(&r) % 20001;
    assert_int_equal(crc32c_extend(crc32c_value(buf + 3, split), buf + 3 + split, 20000 - split),
                     whole);
  }
  free(buf);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_crc32c_known_vectors),
      cmocka_unit_test(test_crc32c_extend_equals_one_shot),
      cmocka_unit_test(test_crc32c_mask_round_trip),
      cmocka_unit_test(test_crc32c_paths_agree),
      cmocka_unit_test(test_crc32c_paths_agree_long),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

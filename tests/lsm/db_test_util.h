/* Helpers shared by the lsm db tests: deterministic keys and values, the scale of a run
 * (smaller under sanitizers). Temporary directories come from tests/test_util.h.
 */
#ifndef BFH_TESTS_LSM_DB_TEST_UTIL_H
#define BFH_TESTS_LSM_DB_TEST_UTIL_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/test_util.h"
#include "util/random.h"

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define TEST_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define TEST_SANITIZED 1
#endif
#endif
#ifndef TEST_SANITIZED
#define TEST_SANITIZED 0
#endif

/* BFH_TEST_SCALE (a positive number) scales iteration counts; default 1, or 0.2 under a
   sanitizer. */
static inline double test_scale(void) {
  const char *s = getenv("BFH_TEST_SCALE");
  if (s && atof(s) > 0) return atof(s);
  return TEST_SANITIZED ? 0.2 : 1.0;
}

/* Key of id: fixed width, so key order is id order. Returns the length. */
static inline size_t test_key(char *buf, uint64_t id) {
  return (size_t)snprintf(buf, 32, "key%09llu", (unsigned long long)id);
}

/* The value for a stamp (nonzero): length 0..max_len-1 and bytes from the stamp. */
static inline size_t test_value(uint8_t *buf, uint64_t stamp, size_t max_len) {
  rng_t r;
  rng_init(&r, stamp);
  size_t n = (size_t)rng_below(&r, max_len);
  for (size_t i = 0; i < n; i += 8) {
    uint64_t x = rng_next(&r);
    size_t m = n - i < 8 ? n - i : 8;
    memcpy(buf + i, &x, m);
  }
  return n;
}

#endif

/* What the benchmark programs share: the library's monotonic clock (util/clock.h), orders and
 * medians, the removal of a scratch directory, and the entries the stock-engine benches write.
 * Header-only: each bench/<name>.c is one program.
 */
#ifndef BFH_BENCH_BENCH_UTIL_H
#define BFH_BENCH_BENCH_UTIL_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "util/clock.h"
#include "util/random.h"

/* The greatest common divisor of a and b (0 and 0: 0): a multiplier prime to n permutes
   [0, n) by i -> i * a mod n. */
static inline uint64_t bench_gcd(uint64_t a, uint64_t b) {
  while (b) {
    uint64_t t = a % b;
    a = b;
    b = t;
  }
  return a;
}

/* qsort's order of doubles, for medians. */
static inline int bench_cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* qsort's order of uint64_t. */
static inline int bench_cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

/* Median of v[0, n) (sorts v; n > 0). */
static inline uint64_t bench_median_u64(uint64_t *v, int n) {
  qsort(v, (size_t)n, sizeof *v, bench_cmp_u64);
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* Median of v[0, n) (sorts v; n > 0). */
static inline double bench_median_double(double *v, size_t n) {
  qsort(v, n, sizeof *v, bench_cmp_double);
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* The monotonic clock in microseconds. */
static inline double bench_now_us(void) {
  return (double)clock_now_ns() * 1e-3;
}

/* Median over n runs (0 < n <= 64) of num[i] / den[i]. */
static inline double bench_median_ratio(const uint64_t *num, const uint64_t *den, int n) {
  double r[64];
  for (int i = 0; i < n; i++) r[i] = (double)num[i] / (double)den[i];
  qsort(r, (size_t)n, sizeof *r, bench_cmp_double);
  return n % 2 ? r[n / 2] : (r[n / 2 - 1] + r[n / 2]) / 2;
}

/* The entries the stock-engine benches (leveldb_search_bench, rocksdb_bench) write, i in
   [0, num): key i is 16 hex digits of splitmix64(i) (random order, unique), in out[17]. */
static inline void bench_stock_key(uint64_t i, char out[17]) {
  uint64_t x = i;
  snprintf(out, 17, "%016llx", (unsigned long long)splitmix64(&x));
}

/* Value i, unique per i: "v" + 15 digits, then letters up to value_bytes (odd places from a
   PRNG seeded with i, even places repeating). out holds max(value_bytes, 32) bytes; returns
   the length. */
static inline size_t bench_stock_value(uint64_t i, int value_bytes, char *out) {
  int n = snprintf(out, 32, "v%015llu", (unsigned long long)i);
  rng_t r;
  rng_init(&r, i);
  for (int j = n; j < value_bytes; j++)
    out[j] = j % 2 ? (char)('a' + rng_below(&r, 26)) : (char)('a' + j % 26);
  return value_bytes > n ? (size_t)value_bytes : (size_t)n;
}

/* rm -rf dir (a scratch directory the bench made); prog names the bench in a warning. */
static inline void bench_rm_rf(const char *prog, const char *dir) {
  size_t cap = strlen(dir) + 16;
  char *cmd = malloc(cap);
  if (cmd) snprintf(cmd, cap, "rm -rf '%s'", dir);
  if (!cmd || system(cmd) != 0) fprintf(stderr, "%s: could not remove %s\n", prog, dir);
  free(cmd);
}

#endif

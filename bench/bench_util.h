/* What the benchmark programs share: a monotonic clock, an order for medians, and the removal
 * of a scratch directory.
 * Header-only: each bench/<name>.c is one program.
 */
#ifndef BFH_BENCH_BENCH_UTIL_H
#define BFH_BENCH_BENCH_UTIL_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

/* Nanoseconds on the monotonic clock. */
static inline uint64_t bench_now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* qsort's order of doubles, for medians. */
static inline int bench_cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* rm -rf dir (a scratch directory the bench made); prog names the bench in a warning. */
static inline void bench_rm_rf(const char *prog, const char *dir) {
  char cmd[1200];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  if (system(cmd) != 0) fprintf(stderr, "%s: could not remove %s\n", prog, dir);
}

#endif

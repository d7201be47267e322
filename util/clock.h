/* The monotonic clock, in nanoseconds: for the elapsed times the library reports (search and
 * open stats, the indexer's and the stand-alone index's counters) and for waits bounded in
 * time. Never the wall clock: a step of the system time must not make a time negative.
 */
#ifndef BFH_UTIL_CLOCK_H
#define BFH_UTIL_CLOCK_H

#include <stdint.h>
#include <time.h>

static inline uint64_t clock_now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

#endif

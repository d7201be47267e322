/* A small, fast, seedable generator (xoshiro256**, seeded by splitmix64) for tests,
 * workloads and benchmarks. Fixed seeds make every run repeatable. Not for secrets.
 */
#ifndef BFH_UTIL_RANDOM_H
#define BFH_UTIL_RANDOM_H

#include <stdint.h>

typedef struct rng {
  uint64_t s[4];
} rng_t;

static inline uint64_t splitmix64(uint64_t *x) {
  uint64_t z = (*x += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

static inline void rng_init(rng_t *r, uint64_t seed) {
  for (int i = 0; i < 4; i++) r->s[i] = splitmix64(&seed);
}

static inline uint64_t rng_next(rng_t *r) {
  uint64_t *s = r->s;
  uint64_t x = s[1] * 5;
  uint64_t result = ((x << 7) | (x >> 57)) * 9;
  uint64_t t = s[1] << 17;
  s[2] ^= s[0];
  s[3] ^= s[1];
  s[1] ^= s[2];
  s[0] ^= s[3];
  s[2] ^= t;
  s[3] = (s[3] << 45) | (s[3] >> 19);
  return result;
}

/* Uniform in [0, n) by multiply-shift (n > 0). */
static inline uint64_t rng_below(rng_t *r, uint64_t n) {
  return (uint64_t)(((unsigned __int128)rng_next(r) * n) >> 64);
}

/* Uniform in [0, 1). */
static inline double rng_double(rng_t *r) {
  return (double)(rng_next(r) >> 11) * 0x1.0p-53;
}

#endif

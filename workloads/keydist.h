/* keydist_t: which of n items an operation asks for, under YCSB's request distributions.
 *
 *   uniform   every item alike;
 *   zipfian   item ranks drawn Zipf(theta) (YCSB's default theta 0.99), rank 0 the most
 *             popular, by the method of Gray et al., "Quickly Generating Billion-Record
 *             Synthetic Databases" (SIGMOD 1994): one uniform draw per item, after an O(n)
 *             zeta sum at init;
 *   scrambled the zipfian ranks spread over the items by a seeded hash, so that the popular
 *             items are not the first ones (YCSB's scrambled zipfian; a few items collide,
 *             which keeps the skew);
 *   latest    the zipfian ranks counted back from the newest item: item n - 1 - rank, with n
 *             growing as inserts arrive (keydist_grow).
 *
 * Caller-owned struct, no resources. Draws take the caller's rng_t, so that each thread has
 * its own stream.
 */
#ifndef BFH_WORKLOADS_KEYDIST_H
#define BFH_WORKLOADS_KEYDIST_H

#include <stdint.h>

#include "util/random.h"

typedef enum keydist_kind {
  KEYDIST_UNIFORM = 0,
  KEYDIST_ZIPFIAN = 1,
  KEYDIST_SCRAMBLED = 2,
  KEYDIST_LATEST = 3,
} keydist_kind_t;

#define KEYDIST_THETA 0.99

typedef struct keydist {
  keydist_kind_t kind;
  uint64_t n;       /* items */
  uint64_t zeta_n;  /* the n zeta_sum was summed up to */
  double theta, alpha, zeta_sum, zeta2, eta;
  uint64_t seed;    /* scrambled's hash */
} keydist_t;

/* REQUIRES: n >= 1, 0 < theta < 1 (only the zipfian kinds read it). */
void keydist_init(keydist_t *d, keydist_kind_t kind, uint64_t n, double theta, uint64_t seed);
/* n grows to n2 (>= n): the zeta sum is extended, not summed again. */
void keydist_grow(keydist_t *d, uint64_t n2);
/* An item in [0, n). */
uint64_t keydist_next(keydist_t *d, rng_t *rng);

/* "uniform", "zipfian", "scrambled", "latest"; the kind for a name (0) or -1. */
const char *keydist_name(keydist_kind_t kind);
int keydist_kind_parse(const char *name, keydist_kind_t *kind);

#endif /* BFH_WORKLOADS_KEYDIST_H */

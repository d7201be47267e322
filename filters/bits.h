/* Word loops over bit arrays of 64-bit words: the OR-merge, popcount, Hamming distance and
 * probe test that value filters, hierarchy nodes and the bit-sliced index are built on.
 * Plain loops the compiler vectorizes; the two that count bits are in bits.c, compiled for
 * the CPU found at run time (the POPCNT instruction is not in baseline x86-64).
 */
#ifndef BFH_FILTERS_BITS_H
#define BFH_FILTERS_BITS_H

#include <stddef.h>
#include <stdint.h>

#include "filters/hash.h"

static inline size_t bits_words(uint64_t m) {
  return (size_t)((m + 63) / 64);
}

static inline void bits_set(uint64_t *w, uint64_t pos) {
  w[pos >> 6] |= 1ull << (pos & 63);
}

static inline int bits_get(const uint64_t *w, uint64_t pos) {
  return (w[pos >> 6] >> (pos & 63)) & 1;
}

/* dst |= src */
static inline void bits_or(uint64_t *restrict dst, const uint64_t *restrict src, size_t nwords) {
  for (size_t i = 0; i < nwords; i++) dst[i] |= src[i];
}

/* Number of set bits. */
uint64_t bits_popcount(const uint64_t *w, size_t nwords);

/* Number of bit positions where a and b differ: the similarity placement's distance. */
uint64_t bits_hamming(const uint64_t *a, const uint64_t *b, size_t nwords);

/* 1 if every probe position is set ("maybe"), 0 if one is clear ("no"). */
static inline int bits_test_probe(const uint64_t *w, const probe_t *p) {
  for (uint32_t i = 0; i < p->k; i++)
    if (!bits_get(w, p->pos[i])) return 0;
  return 1;
}

#endif

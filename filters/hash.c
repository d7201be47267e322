#include "filters/hash.h"

#include <xxhash.h>

uint64_t bfh_hash64(const void *data, size_t n, uint64_t seed) {
  return XXH3_64bits_withSeed(data, n, seed);
}

static _Thread_local uint64_t value_hashes;

uint64_t bfh_value_hash(const void *val, size_t n, uint64_t seed) {
  value_hashes++;
  return XXH3_64bits_withSeed(val, n, seed);
}

uint64_t bfh_value_hash_count(void) {
  return value_hashes;
}

void probe_init(probe_t *p, uint64_t hash, uint64_t m, uint32_t k) {
  /* h2 is derived from a remix of the hash and forced odd, so that the k positions are
     distinct modulo 2^64 and no probe sequence degenerates to one bit. */
  uint64_t h1 = hash;
  uint64_t h2 = ((hash >> 32) | (hash << 32)) * 0x9e3779b97f4a7c15ull | 1;
  p->k = k;
  p->hash = hash;
  for (uint32_t i = 0; i < k; i++) {
    uint64_t g = h1 + (uint64_t)i * h2;
    p->pos[i] = (uint64_t)(((unsigned __int128)g * m) >> 64);
  }
}

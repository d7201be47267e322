/* Cache-line blocked Bloom filter for keys (the own engine's per-table key filters).
 *
 * The filter is an array of 512-bit (64-byte) blocks. A key's 64-bit hash picks one block
 * and all of its probes fall inside that block, so a probe touches one cache line. Keys
 * are hashed once (bfh_hash64 with BLOCKED_FILTER_KEY_SEED) and the same hash is used for
 * every table a get probes.
 *
 * Layout (doc/format.md "Key filter"): blocks[nblocks * 64] | nblocks fixed32 | probes u8
 * | version u8 (1). The filter is self-describing: readers take the probe count from it.
 */
#ifndef BFH_FILTERS_BLOCKED_FILTER_H
#define BFH_FILTERS_BLOCKED_FILTER_H

#include <stddef.h>
#include <stdint.h>

#define BLOCKED_FILTER_KEY_SEED 0x6b657973ull /* "keys" */
#define BLOCKED_FILTER_TRAILER_BYTES 6

static inline uint64_t blocked_filter_key_hash(const void *key, size_t len);

/* Probes per key for a given bits-per-key budget (the rule is documented in the .c). */
uint32_t blocked_filter_probes_for(double bits_per_key);
/* Bytes of a filter for n keys at bits_per_key (at least one block, plus the trailer). */
size_t blocked_filter_size(size_t n, double bits_per_key);
/* Builds a filter of `size` bytes (from blocked_filter_size) over n key hashes into out. */
void blocked_filter_build(uint8_t *out, size_t size, const uint64_t *hashes, size_t n,
                          double bits_per_key);
/* The same in two steps, for builders that see their keys in pieces:
   blocked_filter_init writes an empty filter of `size` bytes (from blocked_filter_size) into
   out; blocked_filter_add adds n key hashes to a filter made by blocked_filter_init (a
   malformed filter is left alone). init + add over all hashes == blocked_filter_build. */
void blocked_filter_init(uint8_t *out, size_t size, double bits_per_key);
void blocked_filter_add(uint8_t *filter, size_t size, const uint64_t *hashes, size_t n);
/* 1: the key may be present; 0: it is not. A malformed filter (bad trailer) says 1. */
int blocked_filter_may_contain(const uint8_t *filter, size_t size, uint64_t hash);
/* Asks the CPU for the one cache line blocked_filter_may_contain(filter, size, hash) will
   read (a hint: no effect on any result), so that a reader about to probe several filters
   has all their lines in flight at once. */
void blocked_filter_prefetch(const uint8_t *filter, size_t size, uint64_t hash);
/* out[i] = blocked_filter_may_contain(filter, size, hashes[i]) for i < n, with the block
   of each key prefetched ahead of its probe. */
void blocked_filter_may_contain_batch(const uint8_t *filter, size_t size, const uint64_t *hashes,
                                      size_t n, uint8_t *out);

#include "filters/hash.h"
static inline uint64_t blocked_filter_key_hash(const void *key, size_t len) {
  return bfh_hash64(key, len, BLOCKED_FILTER_KEY_SEED);
}

#endif

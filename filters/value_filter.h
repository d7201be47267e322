/* value_filter_t: the per-table value Bloom filter, a leaf of the hierarchy.
 *
 * m bits (any m >= 64) in 64-bit words, k hash functions (1..32) and the hash seed. All
 * filters of one database share m, k and the seed, so they can be OR-merged and probed with
 * one probe_t per query (filters/hash.h).
 *
 * Lifecycle: value_filter_create -> value_filter_add* -> value_filter_may_contain* ->
 * value_filter_serialize / value_filter_deserialize -> value_filter_destroy.
 *
 * Serialized form (little-endian; doc/format.md "Value filter"):
 *   magic "BFHV" fixed32 | version fixed32 (1) | m fixed64 | k fixed32 | reserved fixed32 (0)
 *   | seed fixed64 | words fixed64[ceil(m/64)] | crc32c fixed32 (masked, over all before it)
 * Bits at positions >= m in the last word are zero; deserialize rejects a filter that has
 * any set.
 */
#ifndef BFH_FILTERS_VALUE_FILTER_H
#define BFH_FILTERS_VALUE_FILTER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "filters/hash.h"
#include "util/err.h"

#define VALUE_FILTER_MIN_BITS 64
#define VALUE_FILTER_HEADER_BYTES 32 /* magic .. seed */

typedef struct value_filter {
  uint64_t m;      /* bits */
  uint32_t k;      /* hash functions */
  uint64_t seed;   /* value hash seed */
  size_t nwords;   /* ceil(m / 64) */
  uint64_t *words; /* owned */
} value_filter_t;

/* Returns a new, empty filter, or NULL if m < 64, k is out of 1..32, or memory is short.
   Client is responsible for calling value_filter_destroy(). */
value_filter_t *value_filter_create(uint64_t m, uint32_t k, uint64_t seed);
void value_filter_destroy(value_filter_t *f); /* NULL allowed */

void value_filter_add(value_filter_t *f, const void *val, size_t len);
void value_filter_add_hash(value_filter_t *f, uint64_t hash);
/* The probe of a value for filters with f's parameters. */
void value_filter_probe(const value_filter_t *f, const void *val, size_t len, probe_t *out);

bool value_filter_may_contain(const value_filter_t *f, const void *val, size_t len);
/* REQUIRES: p was made for f's m and k. */
bool value_filter_may_contain_probe(const value_filter_t *f, const probe_t *p);

/* out[i] = value_filter_may_contain_probe(fs[i], p) for i < n, with the first words the probe
   needs in filter i + D prefetched while filter i is tested (leaf-by-leaf probing of many
   filters with one shared probe). REQUIRES: p was made for the m and k of every fs[i]. */
void value_filter_may_contain_probe_batch(const value_filter_t *const *fs, size_t n,
                                          const probe_t *p, uint8_t *out);

/* dst |= src. ST_E_INVALID (with a message) if m, k or seed differ. */
int value_filter_merge(value_filter_t *dst, const value_filter_t *src, err_t *err);

uint64_t value_filter_popcount(const value_filter_t *f);
double value_filter_fill_ratio(const value_filter_t *f);
/* Expected false positive rate from the fill ratio: fill^k. */
double value_filter_fpr_estimate(const value_filter_t *f);
/* Theoretical FPR of n values in m bits with k hashes: (1 - e^{-kn/m})^k. */
double value_filter_fpr_theory(uint64_t m, uint32_t k, uint64_t n);
size_t value_filter_size_in_bytes(const value_filter_t *f);

size_t value_filter_serialized_size(uint64_t m);
/* Writes the serialized filter into out (value_filter_serialized_size(f->m) bytes). */
void value_filter_serialize(const value_filter_t *f, uint8_t *out);
/* Parses a serialized filter. On ST_OK, *out is a new filter owned by the caller.
   Anything malformed (short, bad magic or version, bad m or k, length mismatch, stray bits,
   checksum mismatch) gives ST_E_CORRUPT and a message; it never reads past data[len). */
int value_filter_deserialize(const uint8_t *data, size_t len, value_filter_t **out, err_t *err);
/* Byte offset of word i inside the serialized form (for reading single words from disk). */
static inline uint64_t value_filter_word_offset(uint64_t i) {
  return VALUE_FILTER_HEADER_BYTES + 8 * i;
}

#endif

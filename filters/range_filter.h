/* range_filter: a static filter for ranges of 64-bit codes, one per table, the last check
 * after the value filters in memory (issue 48).
 *
 * It follows Grafite (Costa, Ferragina and Vinciguerra, "Grafite: Taming Adversarial Queries
 * with Optimal Range Filters", SIGMOD 2024), written here from the paper. A code x goes to
 *     h(x) = (q(x >> range_log2) + x) mod r,      r = n * 2^(bits_per_key - 2),
 * q a seeded hash of x's block of L = 2^range_log2 codes into [0, r). Within a block h only
 * shifts (mod r), so it keeps locality: the codes of a range inside one block go to one run
 * of h values (two, when it wraps past r), and a range of at most L codes touches at most two
 * blocks. The set h(S) of the n codes is kept sorted in an Elias-Fano list, about
 * bits_per_key bits per code. A range query asks whether h(S) meets those runs.
 *
 * A range that holds a code of S is always "maybe". An empty range of at most L codes is a
 * false positive with probability at most L / 2^(bits_per_key - 2), whatever the range and
 * however it is placed, right beside a present code included: the bound does not depend on
 * the query distribution, which is what lets a per-table check meet a fixed rate under
 * correlated queries. Longer ranges are asked block by block (at most RANGE_FILTER_MAX_BLOCKS
 * blocks, then "maybe").
 *
 * The encoding (little-endian, varints as util/coding.h), kept with its table:
 *   version u8 (1) | range_log2 u8 | bits_per_key u8 | seed fixed64 | n varint64 |
 *   low words, ceil(n * low_bits / 64) fixed64 | high words, ceil((n + (r >> low_bits) + 1)
 *   / 64) fixed64 | crc32c fixed32 (masked, over every byte before it)
 * with r and low_bits computed from n and bits_per_key. A decode checks the checksum, the
 * lengths, and that the list is strictly ascending below r.
 *
 * A range_filter_t is read-only after it is built or decoded: any number of threads may
 * query it at once.
 */
#ifndef BFH_FILTERS_RANGE_FILTER_H
#define BFH_FILTERS_RANGE_FILTER_H

#include <stddef.h>
#include <stdint.h>

#include "util/err.h"

#define RANGE_FILTER_VERSION 1u
#define RANGE_FILTER_MIN_BITS 3u
#define RANGE_FILTER_MAX_BITS 40u
#define RANGE_FILTER_MAX_LOG2 40u      /* largest L = 2^range_log2 */
#define RANGE_FILTER_MAX_BLOCKS 64u    /* blocks of L asked for one range before "maybe" */

typedef struct range_filter range_filter_t;

/* Builds a filter over codes[0, n) (any order, repeats allowed) for ranges of up to
   2^range_log2 codes at bits_per_key bits per distinct code. *out is the caller's, freed with
   range_filter_destroy. ST_E_INVALID (bits_per_key outside MIN..MAX_BITS, range_log2 above
   MAX_LOG2, n * 2^(bits_per_key - 2) above 2^62), ST_E_NOMEM. */
int range_filter_build(const uint64_t *codes, size_t n, unsigned bits_per_key,
                       unsigned range_log2, uint64_t seed, range_filter_t **out, err_t *err);
void range_filter_destroy(range_filter_t *f); /* NULL is allowed */

/* 0 when no code of [lo, hi] (lo <= hi) was given to the build; 1 when one may have been. */
int range_filter_may_contain(const range_filter_t *f, uint64_t lo, uint64_t hi);

/* The distinct codes held and the bytes the filter takes in memory. */
uint64_t range_filter_count(const range_filter_t *f);
size_t range_filter_memory(const range_filter_t *f);

/* The encoding: range_filter_encoded_size bytes, written by range_filter_encode into out. */
size_t range_filter_encoded_size(const range_filter_t *f);
void range_filter_encode(const range_filter_t *f, uint8_t *out);
/* Decodes data[0, len) into *out (the caller's). ST_E_CORRUPT with what is wrong and at which
   offset of data (the caller adds the file and its offset), ST_E_NOMEM. */
int range_filter_decode(const uint8_t *data, size_t len, range_filter_t **out, err_t *err);

#endif /* BFH_FILTERS_RANGE_FILTER_H */

/* Hashing and probe positions shared by every value filter of a database.
 *
 * A value is hashed once (XXH3-64 with the database's stored seed). Its k bit positions in
 * an m-bit filter come from that one hash by Kirsch-Mitzenmacher double hashing,
 * g_i = h1 + i * h2 (mod 2^64), each reduced to [0, m) by multiply-shift
 * ((g_i * m) >> 64) rather than by '%'. Because every filter of a database shares m, k and
 * the seed, a query computes its probe once and reuses it for every filter it tests
 * (hash sharing: one hash per query, reused by every filter).
 */
#ifndef BFH_FILTERS_HASH_H
#define BFH_FILTERS_HASH_H

#include <stddef.h>
#include <stdint.h>

#define BFH_MAX_HASHES 32
#define BFH_DEFAULT_SEED 0x62666801ull /* "bfh" 1 */

/* The 64-bit hash of data[0,n) under seed (XXH3-64). */
uint64_t bfh_hash64(const void *data, size_t n, uint64_t seed);

/* The hash of a value (not a key): bfh_hash64, counted. Every structure that indexes values
   (value filters, block filters, the memtables' value index, the LevelDB log segments, the
   stand-alone index) hashes with this, when it adds a value and when it is asked for one;
   a search hashes its value once (search/search_plan.c) and passes the hash down. */
uint64_t bfh_value_hash(const void *val, size_t n, uint64_t seed);
/* The number of bfh_value_hash calls made by this thread so far: a test hook, which lets a
   test see that a search hashed its value exactly once. */
uint64_t bfh_value_hash_count(void);

/* The k bit positions of one value in an m-bit filter. */
typedef struct probe {
  uint32_t k;
  uint64_t hash; /* the value hash the positions were made from (probe_init) */
  uint64_t pos[BFH_MAX_HASHES]; /* each in [0, m) */
} probe_t;

/* REQUIRES: 1 <= k <= BFH_MAX_HASHES, m >= 1. */
void probe_init(probe_t *p, uint64_t hash, uint64_t m, uint32_t k);

/* Counters of filter tests, filled by every search structure (hierarchy, sliced index,
   leaf-by-leaf probing) so that the methods can be compared in the paper's terms. */
typedef struct probe_stats {
  uint64_t internal_probes; /* internal nodes (or bit-slice rows) tested */
  uint64_t leaf_probes;     /* leaf filters tested (or leaf slots examined) */
  uint64_t leaf_positives;  /* leaves that said maybe */
  uint64_t internal_maybe;  /* internal nodes tested that said maybe (the hierarchy only; the
                               count the paper's authors' code reports) */
} probe_stats_t;

#endif

/* workload_t: the key/value data and the queries of the experiments, generated on the fly.
 *
 * Entries are numbered by an id in [0, n). Entry id j has key "Key<j>" and value
 * "Value<v(j)>" (WORKLOAD_FORMAT_PAPER, the shape of the paper's public code), or the
 * fixed-width 16-byte "k%015llu" / "v%015llu" (WORKLOAD_FORMAT_FIXED), where
 *   v(j) = j                    when the value domain is 100% (every value distinct), and
 *   v(j) = vperm(j) mod D       otherwise, D = max(1, round(n * domain_pct / 100)),
 * vperm being a seeded bijection of [0, n) (so every one of the D values occurs, each
 * floor(n/D) or ceil(n/D) times, spread over the whole key space): WORKLOAD_VALUES_EXACT.
 * WORKLOAD_VALUES_DRAWN is the workload of the paper's authors' code (its Fig. 13 / Table III
 * driver): v(j) is drawn uniformly from [0, D) with replacement, independently for every
 * entry (a stateless seeded hash of j), so a value occurs Binomial(n, 1/D) times, possibly
 * never. (The authors draw from [1, D] with an unseeded generator; which names the D values
 * carry does not change any count.) The domain sizes are the same in both modes.
 *
 * Insertion order: the i-th put writes entry id i (WORKLOAD_SEQUENTIAL, as in the paper) or
 * entry id perm(i) (WORKLOAD_RANDOM), perm a seeded bijection of [0, n). Nothing of size n
 * is stored: the bijections are 4-round Feistel networks over [0, 2^b), b the smallest even
 * bit count with 2^b >= n, restricted to [0, n) by cycle walking (expected < 4 rounds).
 *
 * Queries: present values are drawn uniformly from the D values that occur; absent values
 * are "Value<n + r>" (ids >= n never occur). Both come from a query rng with a fixed seed.
 */
#ifndef BFH_WORKLOADS_WORKLOAD_H
#define BFH_WORKLOADS_WORKLOAD_H

#include <stddef.h>
#include <stdint.h>

#include "util/random.h"

/* Enough for any formatted key or value of either format. */
#define WORKLOAD_MAX_BYTES 32

/* A seeded bijection of [0, n). Caller-owned struct, no resources: init only. */
typedef struct workload_perm {
  uint64_t n;
  uint32_t half_bits; /* each Feistel half has half_bits bits */
  uint64_t half_mask;
  uint64_t round_keys[4];
} workload_perm_t;

/* REQUIRES: n >= 1. */
void workload_perm_init(workload_perm_t *p, uint64_t n, uint64_t seed);
/* The image of x (x < n) under the permutation; a value in [0, n). */
uint64_t workload_perm_apply(const workload_perm_t *p, uint64_t x);

typedef enum workload_order { WORKLOAD_SEQUENTIAL = 0, WORKLOAD_RANDOM = 1 } workload_order_t;
typedef enum workload_values {
  WORKLOAD_VALUES_EXACT = 0, /* each of the D values on floor(n/D) or ceil(n/D) entries */
  WORKLOAD_VALUES_DRAWN = 1  /* drawn uniformly with replacement (the authors' workload) */
} workload_values_t;
typedef enum workload_format {
  WORKLOAD_FORMAT_PAPER = 0,
  WORKLOAD_FORMAT_FIXED = 1
} workload_format_t;

typedef struct workload_config {
  uint64_t n;               /* entries; >= 1 */
  double domain_pct;        /* distinct values as a percentage of n, (0, 100]; default 100 */
  workload_order_t order;   /* default WORKLOAD_SEQUENTIAL */
  workload_format_t format; /* default WORKLOAD_FORMAT_PAPER */
  uint64_t seed;            /* default 42 */
  workload_values_t values; /* default WORKLOAD_VALUES_EXACT */
} workload_config_t;

void workload_config_init(workload_config_t *c);

/* Caller-owned struct: workload_init() only, nothing to release. */
typedef struct workload {
  workload_config_t cfg;
  uint64_t domain; /* D, the number of distinct values */
  workload_perm_t insert_perm;
  workload_perm_t value_perm;
} workload_t;

/* ST_OK, or ST_E_INVALID (util/status.h) if n == 0 or domain_pct is outside (0, 100]. */
int workload_init(workload_t *w, const workload_config_t *c);

/* The entry id written by the i-th put (i < n). */
uint64_t workload_entry_id(const workload_t *w, uint64_t i);
/* The value id v(j) of entry id j (a number in [0, D)). */
uint64_t workload_value_id(const workload_t *w, uint64_t j);

/* Formatters: write the bytes (and a NUL after them) into buf (WORKLOAD_MAX_BYTES) and
   return their length. */
size_t workload_key(const workload_t *w, uint64_t id, char *buf);
size_t workload_value(const workload_t *w, uint64_t value_id, char *buf);
/* The two formats' values, without a workload: "Value<id>" and "v<id, 15 digits>". */
size_t workload_paper_value(uint64_t value_id, char *buf);
size_t workload_fixed_value(uint64_t value_id, char *buf);
/* Key and value of the i-th put. */
size_t workload_put_key(const workload_t *w, uint64_t i, char *buf);
size_t workload_put_value(const workload_t *w, uint64_t i, char *buf);

/* The q-th present-value query under seed: a value id in [0, D), uniform. */
uint64_t workload_present_value_id(const workload_t *w, uint64_t seed, uint64_t q);
/* The q-th random entry id under seed (for key lookups), uniform in [0, n). */
uint64_t workload_random_entry_id(const workload_t *w, uint64_t seed, uint64_t q);
/* The q-th absent-value query: a value id >= n (never stored). */
uint64_t workload_absent_value_id(const workload_t *w, uint64_t seed, uint64_t q);

/* Number of entries whose value id is value_id (exact values: floor(n/D) or ceil(n/D); 0 if
   >= D). Drawn values: counted by going over all n entries, O(n); for several values use
   workload_value_counts. */
uint64_t workload_value_count(const workload_t *w, uint64_t value_id);
/* counts[i] = workload_value_count(w, ids[i]) for i < nids, in one pass over the n entries
   for drawn values (O(n log nids)). Returns ST_OK, or ST_E_NOMEM (counts untouched). */
int workload_value_counts(const workload_t *w, const uint64_t *ids, size_t nids,
                          uint64_t *counts);
/* "exact" or "authors" (the drawn values), the name of the mode in the experiments' CSVs. */
const char *workload_values_name(workload_values_t v);

#endif

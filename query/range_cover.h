/* range_cover: a range of attribute values as the dyadic-prefix items a filter holds.
 *
 * Codes. A range is asked over order-preserving 64-bit codes: an :int attribute's code is
 * its term read as a big-endian u64 (the integer with its sign bit flipped, attr_int_term),
 * a string's is its first 8 bytes, big-endian, zero-padded. a <= b implies code(a) <=
 * code(b) in both, so a range [a, b] of values lies in the range [code(a), code(b)] of codes;
 * strings that share their first 8 bytes share a code, and validation checks the value
 * itself. A prefix p of at most 8 bytes is the range of codes from p padded with 0x00 to p
 * padded with 0xff; a longer prefix is the one code of its first 8 bytes.
 *
 * Levels. An attribute with range terms holds, besides its equality item, one item per
 * stored level j (1 <= j <= 63) of each value: (j, code >> j), the aligned interval of 2^j
 * codes that holds the value's code. Level 0 is the code itself. Because these are ordinary
 * items of the same Bloom filters, leaves OR-merge into the hierarchy and the slices exactly
 * as equality items do (Rosetta's observation, Luo et al., SIGMOD 2020, with its per-level
 * filters folded into one).
 *
 * Cover. range_cover writes [lo, hi] as aligned intervals at the stored levels, each one
 * probe: a table (block, memtable) may hold a value of the range only if one of its probes
 * may be in its filter. The cover is exact (no code outside [lo, hi]) when the finest level
 * it uses is 0, and never misses a code of [lo, hi]: a filter answers "no" for a range only
 * when no value of it is there. Greedy from lo: at each point the largest stored level that is
 * aligned there and ends inside the range. A level j below the top one contributes at most
 * 2 (2^s - 1) probes, s the gap from j to the next stored level, and the top level T at most
 * L / 2^T + 1 for a range of L codes: with levels every s bits up to T >= log2 L, a range
 * costs at most 2 (2^s - 1) probes per level. When the exact cover would take more than a
 * budget, the ends are rounded out to the next stored level (a coarser floor) until it fits:
 * fewer probes, and fewer than 2^floor codes beyond each end that a false positive may come
 * from.
 */
#ifndef BFH_QUERY_RANGE_COVER_H
#define BFH_QUERY_RANGE_COVER_H

#include <stddef.h>
#include <stdint.h>

#define RANGE_MAX_LEVELS 16 /* stored levels besides 0 */
#define RANGE_CODE_BYTES 8
#define RANGE_ITEM_BYTES 9 /* a probe's item: the level, then code >> level, big-endian */

/* The levels an attribute stores, besides level 0 (the code itself). */
typedef struct range_levels {
  uint32_t n;                    /* 0..RANGE_MAX_LEVELS */
  uint8_t j[RANGE_MAX_LEVELS];   /* strictly ascending, each in 1..63 */
  int has_zero;                  /* level 0 is held (an :int attribute's equality item) */
} range_levels_t;

/* One aligned interval: the codes [prefix << level, ((prefix + 1) << level) - 1]. */
typedef struct range_probe {
  uint8_t level;
  uint64_t prefix;
} range_probe_t;

/* What range_cover made of a range. */
typedef struct range_cover_result {
  size_t n;        /* probes written */
  uint8_t floor;   /* the finest level used: codes beyond the range a probe may admit are
                      fewer than 2^floor at each end (0: exact) */
  int unbounded;   /* no cover fits the budget: every table may hold the range (n = 0) */
} range_cover_result_t;

/* 1 if lv is well formed (ascending levels in 1..63, n <= RANGE_MAX_LEVELS). */
int range_levels_valid(const range_levels_t *lv);

/* The code of an :int term (ATTR_INT_TERM_BYTES bytes) or of a string's first bytes. */
uint64_t range_code_bytes(const void *s, size_t len);
/* The codes a string prefix p[0, len) spans: [*lo, *hi]. */
void range_code_prefix(const void *p, size_t len, uint64_t *lo, uint64_t *hi);

/* Covers [lo, hi] (lo <= hi) with probes at the levels of lv (and 0 when lv->has_zero) into
   out[0, cap), at most budget of them (1 <= budget <= cap). Probes come in ascending order of
   their intervals, which are disjoint and together hold every code of [lo, hi]. Always
   succeeds: a range no cover of at most budget probes fits is r->unbounded. */
void range_cover(uint64_t lo, uint64_t hi, const range_levels_t *lv, size_t budget,
                 range_probe_t *out, size_t cap, range_cover_result_t *r);

/* The item bytes of p (RANGE_ITEM_BYTES): what the filters hold for it, hashed under the
   attribute's range seed so that it never meets an equality term. */
void range_probe_item(const range_probe_t *p, uint8_t out[RANGE_ITEM_BYTES]);

#endif /* BFH_QUERY_RANGE_COVER_H */

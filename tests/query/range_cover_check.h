/* The invariants of a range_cover result (query/range_cover.h), shared by range_cover_test
 * and the fuzz target: returns NULL when r and probes[0, r->n) are a valid cover of [lo, hi]
 * under lv and budget, else what is wrong. Header-only, for the tests. */
#ifndef BFH_TESTS_QUERY_RANGE_COVER_CHECK_H
#define BFH_TESTS_QUERY_RANGE_COVER_CHECK_H

#include "query/range_cover.h"

static inline int range_check_level_held(const range_levels_t *lv, unsigned level) {
  if (level == 0) return lv->has_zero;
  for (uint32_t i = 0; i < lv->n; i++)
    if (lv->j[i] == level) return 1;
  return 0;
}

static inline uint64_t range_check_mask(unsigned j) { return j >= 64 ? UINT64_MAX : (1ull << j) - 1; }

static inline const char *range_cover_check(uint64_t lo, uint64_t hi, const range_levels_t *lv,
                                            size_t budget, const range_probe_t *probes,
                                            const range_cover_result_t *r) {
  if (r->unbounded) {
    if (r->n != 0) return "an unbounded cover has probes";
    if (!lv->has_zero && lv->n == 0) return NULL;
    /* Even the coarsest level alone, with the ends rounded out to it, needs more probes. */
    unsigned top = lv->n ? lv->j[lv->n - 1] : 0;
    uint64_t intervals_minus_1 = ((hi | range_check_mask(top)) - (lo & ~range_check_mask(top))) >> top;
    return intervals_minus_1 >= budget ? NULL : "unbounded, but the coarsest level fits";
  }
  if (r->n == 0 || r->n > budget) return "probe count outside 1..budget";
  if (!range_check_level_held(lv, r->floor)) return "floor is not a held level";
  uint64_t next = 0;
  for (size_t i = 0; i < r->n; i++) {
    const range_probe_t *p = &probes[i];
    if (!range_check_level_held(lv, p->level) || p->level < r->floor)
      return "probe at a level not held or below the floor";
    if (p->level < 64 && p->prefix > (UINT64_MAX >> p->level)) return "prefix too wide";
    uint64_t start = p->level >= 64 ? 0 : p->prefix << p->level;
    uint64_t end = start + range_check_mask(p->level);
    if (i == 0) {
      if (start > lo) return "the first probe starts after lo";
      if (lo - start > range_check_mask(r->floor)) return "the first probe starts too far below lo";
    } else if (start != next) {
      return "probes not contiguous and ascending";
    }
    if (i + 1 == r->n) {
      if (end < hi) return "the last probe ends before hi";
      if (end - hi > range_check_mask(r->floor)) return "the last probe ends too far beyond hi";
    } else if (end == UINT64_MAX) {
      return "a probe before the last ends at the top code";
    }
    next = end + 1;
  }
  return NULL;
}

#endif /* BFH_TESTS_QUERY_RANGE_COVER_CHECK_H */

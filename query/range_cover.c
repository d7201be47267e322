/* range_cover: a range of attribute values as dyadic-prefix probes (range_cover.h). */
#include "query/range_cover.h"

#include <string.h>

/* The codes below an interval of level j's start: 2^j - 1. */
static uint64_t level_mask(unsigned j) { return j >= 64 ? UINT64_MAX : (1ull << j) - 1; }

int range_levels_valid(const range_levels_t *lv) {
  if (lv->n > RANGE_MAX_LEVELS) return 0;
  for (uint32_t i = 0; i < lv->n; i++)
    if (lv->j[i] < 1 || lv->j[i] > 63 || (i > 0 && lv->j[i] <= lv->j[i - 1])) return 0;
  return 1;
}

uint64_t range_code_bytes(const void *s, size_t len) {
  const uint8_t *p = s;
  uint64_t code = 0;
  for (size_t i = 0; i < RANGE_CODE_BYTES; i++) code = code << 8 | (i < len ? p[i] : 0);
  return code;
}

void range_code_prefix(const void *p, size_t len, uint64_t *lo, uint64_t *hi) {
  *lo = range_code_bytes(p, len);
  *hi = len >= RANGE_CODE_BYTES ? *lo : *lo | level_mask(8 * (unsigned)(RANGE_CODE_BYTES - len));
}

/* The greedy cover of [lo, hi] at levels[0, m) (ascending; lo and hi + 1 are multiples of
   2^levels[0], so the finest level always fits). Writes the probes to out (when not NULL)
   and returns how many it took, or limit + 1 as soon as it would take more than limit. */
static size_t cover_greedy(uint64_t lo, uint64_t hi, const uint8_t *levels, size_t m,
                           size_t limit, range_probe_t *out) {
  size_t n = 0;
  for (uint64_t x = lo;;) {
    size_t i = m - 1;
    while (i > 0 && ((x & level_mask(levels[i])) != 0 || level_mask(levels[i]) > hi - x)) i--;
    if (n == limit) return limit + 1;
    if (out) out[n] = (range_probe_t){.level = levels[i], .prefix = x >> levels[i]};
    n++;
    uint64_t end = x + level_mask(levels[i]);
    if (end >= hi) return n;
    x = end + 1;
  }
}

void range_cover(uint64_t lo, uint64_t hi, const range_levels_t *lv, size_t budget,
                 range_probe_t *out, size_t cap, range_cover_result_t *r) {
  uint8_t levels[RANGE_MAX_LEVELS + 1];
  size_t m = 0;
  if (lv->has_zero) levels[m++] = 0;
  for (uint32_t i = 0; i < lv->n && i < RANGE_MAX_LEVELS; i++) levels[m++] = lv->j[i];
  if (budget > cap) budget = cap;
  *r = (range_cover_result_t){.unbounded = 1};
  /* The finest floor whose cover fits the budget. */
  for (size_t f = 0; f < m && budget > 0; f++) {
    const uint64_t mask = level_mask(levels[f]);
    const uint64_t flo = lo & ~mask, fhi = hi | mask;
    if (cover_greedy(flo, fhi, levels + f, m - f, budget, NULL) > budget) continue;
    r->n = cover_greedy(flo, fhi, levels + f, m - f, budget, out);
    r->floor = levels[f];
    r->unbounded = 0;
    return;
  }
}

void range_probe_item(const range_probe_t *p, uint8_t out[RANGE_ITEM_BYTES]) {
  out[0] = p->level;
  for (int i = 0; i < 8; i++) out[1 + i] = (uint8_t)(p->prefix >> (56 - 8 * i));
}

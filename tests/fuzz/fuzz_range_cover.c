/* Fuzz target: the range planner's probe sets (query/range_cover.c).
 *
 * Input: lo (8 bytes), width (8 bytes), budget (2 bytes), then a flags byte (bit 0: level 0
 * held) and the levels, one byte each (taken mod 64, kept when they ascend; 0 skipped).
 * Invariants checked, besides range_cover_check's (the probes are aligned intervals at held
 * levels, ascending and contiguous, holding every code of [lo, hi], reaching past it by less
 * than 2^floor at each end, at most budget of them; unbounded only when even the coarsest
 * level does not fit):
 * - the same input covers the same way twice;
 * - a larger budget never makes the floor coarser;
 * - the codes of a string prefix hold every string with that prefix (its first 8 bytes), and
 *   no other but a string that is the prefix cut short before zero bytes (codes pad with 0).
 */
#include "fuzz_util.h"

#include "query/range_cover.h"
#include "tests/query/range_cover_check.h"

#define FUZZ_CAP 1024

static uint64_t read_u64(const uint8_t *p) {
  uint64_t v = 0;
  for (int i = 0; i < 8; i++) v = v << 8 | p[i];
  return v;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 19) return 0;
  uint64_t lo = read_u64(data), width = read_u64(data + 8);
  uint64_t hi = width > UINT64_MAX - lo ? UINT64_MAX : lo + width;
  size_t budget = 1 + (size_t)((data[16] << 8 | data[17]) % FUZZ_CAP);
  range_levels_t lv = {.has_zero = data[18] & 1};
  for (size_t i = 19; i < size && lv.n < RANGE_MAX_LEVELS; i++) {
    uint8_t j = data[i] % 64;
    if (j > 0 && (lv.n == 0 || j > lv.j[lv.n - 1])) lv.j[lv.n++] = j;
  }
  fuzz_check(range_levels_valid(&lv));

  static range_probe_t p[FUZZ_CAP], q[FUZZ_CAP];
  range_cover_result_t r, r2;
  range_cover(lo, hi, &lv, budget, p, FUZZ_CAP, &r);
  fuzz_check(range_cover_check(lo, hi, &lv, budget, p, &r) == NULL);
  range_cover(lo, hi, &lv, budget, q, FUZZ_CAP, &r2);
  fuzz_check(r.n == r2.n && r.floor == r2.floor && r.unbounded == r2.unbounded);
  for (size_t i = 0; i < r.n; i++) fuzz_check(p[i].level == q[i].level && p[i].prefix == q[i].prefix);
  if (budget < FUZZ_CAP) {
    range_cover(lo, hi, &lv, FUZZ_CAP, q, FUZZ_CAP, &r2);
    fuzz_check(range_cover_check(lo, hi, &lv, FUZZ_CAP, q, &r2) == NULL);
    fuzz_check(r.unbounded || (!r2.unbounded && r2.floor <= r.floor));
  }

  /* The first bytes as a prefix, the rest as a string. */
  size_t plen = data[18] >> 4;
  if (plen <= size - 19) {
    uint64_t plo, phi;
    range_code_prefix(data + 19, plen, &plo, &phi);
    const uint8_t *s = data + 19 + plen;
    size_t slen = size - 19 - plen;
    uint64_t c = range_code_bytes(s, slen);
    size_t m = plen < 8 ? plen : 8;
    const uint8_t *pre = data + 19;
    int has = slen >= m && memcmp(s, pre, m) == 0;
    int in = c >= plo && c <= phi;
    fuzz_check(!has || in); /* never a false negative */
    if (in && !has) {       /* the one false positive: s is p cut short before zero bytes */
      fuzz_check(slen < m && memcmp(s, pre, slen) == 0);
      for (size_t i = slen; i < m; i++) fuzz_check(pre[i] == 0);
    }
  }
  return 0;
}

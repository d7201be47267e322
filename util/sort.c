/* u64_radix_sort (sort.h): least significant digit first, 8 bits a digit. A digit that every
 * key shares (the high bytes of small keys) is a pass that would move nothing: it is skipped.
 */
#include "util/sort.h"

#include <stdlib.h>
#include <string.h>

#include "util/status.h"

int u64_radix_sort(uint64_t *v, size_t n, unsigned bits) {
  if (n < 2) return ST_OK;
  uint64_t *scratch = malloc(n * sizeof *scratch);
  if (!scratch) return ST_E_NOMEM;
  u64_radix_sort_into(v, n, bits, scratch);
  free(scratch);
  return ST_OK;
}

void u64_radix_sort_into(uint64_t *v, size_t n, unsigned bits, uint64_t *scratch) {
  if (n < 2) return;
  uint64_t *src = v, *dst = scratch;
  for (unsigned shift = 0; shift < bits && shift < 64; shift += 8) {
    size_t count[256] = {0};
    for (size_t i = 0; i < n; i++) count[(src[i] >> shift) & 0xff]++;
    if (count[(src[0] >> shift) & 0xff] == n) continue; /* one digit: already in order */
    size_t at = 0;
    for (size_t d = 0; d < 256; d++) {
      size_t c = count[d];
      count[d] = at;
      at += c;
    }
    for (size_t i = 0; i < n; i++) dst[count[(src[i] >> shift) & 0xff]++] = src[i];
    uint64_t *t = src;
    src = dst;
    dst = t;
  }
  if (src != v) memcpy(v, src, n * sizeof *v);
}

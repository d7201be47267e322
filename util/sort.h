/* Sorting arrays of uint64_t without a comparison callback, and searching arrays sorted by a
 * uint64_t (a list of tables by file number).
 */
#ifndef BFH_UTIL_SORT_H
#define BFH_UTIL_SORT_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* Sorts v[0, n) ascending by its low `bits` bits (1..64; every key must be below 2^bits, the
   bits above are not looked at), a byte at a time from the least significant, through a
   scratch array of n words: ceil(bits / 8) passes over the array where qsort compares n log n
   times through a function pointer (the value-to-block map's 85,000 pairs of 48 bits per
   table: 6 passes). Equal keys keep their order. ST_OK, or ST_E_NOMEM with v unchanged. */
int u64_radix_sort(uint64_t *v, size_t n, unsigned bits);
/* u64_radix_sort through the caller's scratch array of n words (its contents are lost), for
   a caller that sorts arrays of alike sizes again and again. Cannot fail. */
void u64_radix_sort_into(uint64_t *v, size_t n, unsigned bits, uint64_t *scratch);

/* The first element of base[0, n) whose number is >= number (n if none): elements of stride
   bytes, ascending by the uint64_t at byte offset of each. Inline, as a search asks it for
   every table it reads. Use U64_LOWER_BOUND, which takes the stride and offset from the array. */
static inline size_t u64_lower_bound(const void *base, size_t n, size_t stride, size_t offset,
                                     uint64_t number) {
  size_t lo = 0, hi = n;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    uint64_t at;
    memcpy(&at, (const char *)base + mid * stride + offset, sizeof at);
    if (at < number)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

/* u64_lower_bound over the array a[0, n) by its uint64_t field f. */
#define U64_LOWER_BOUND(a, n, f, number)                                                     \
  ((void)sizeof(char[sizeof((a)->f) == sizeof(uint64_t) ? 1 : -1]),                              \
   u64_lower_bound((a), (n), sizeof *(a), offsetof(__typeof__(*(a)), f), (number)))

#endif

/* Sorting arrays of uint64_t without a comparison callback.
 */
#ifndef BFH_UTIL_SORT_H
#define BFH_UTIL_SORT_H

#include <stddef.h>
#include <stdint.h>

/* Sorts v[0, n) ascending by its low `bits` bits (1..64; every key must be below 2^bits, the
   bits above are not looked at), a byte at a time from the least significant, through a
   scratch array of n words: ceil(bits / 8) passes over the array where qsort compares n log n
   times through a function pointer (the value-to-block map's 85,000 pairs of 48 bits per
   table: 6 passes). Equal keys keep their order. ST_OK, or ST_E_NOMEM with v unchanged. */
int u64_radix_sort(uint64_t *v, size_t n, unsigned bits);

#endif

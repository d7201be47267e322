/* u64vec_t: a growable array of uint64_t (table numbers, leaf ids). Caller-owned struct:
 * u64vec_init() / u64vec_release(); the array is freed by u64vec_release().
 */
#ifndef BFH_UTIL_VEC_H
#define BFH_UTIL_VEC_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "util/status.h"

typedef struct u64vec {
  uint64_t *v;
  size_t n, cap;
} u64vec_t;

static inline void u64vec_init(u64vec_t *a) {
  a->v = NULL;
  a->n = a->cap = 0;
}

static inline void u64vec_release(u64vec_t *a) {
  free(a->v);
  u64vec_init(a);
}

/* Returns ST_OK or ST_E_NOMEM (a is unchanged then). */
static inline int u64vec_reserve(u64vec_t *a, size_t cap) {
  if (cap <= a->cap) return ST_OK;
  size_t c = a->cap ? a->cap : 16;
  while (c < cap) c *= 2;
  uint64_t *v = realloc(a->v, c * sizeof *v);
  if (!v) return ST_E_NOMEM;
  a->v = v;
  a->cap = c;
  return ST_OK;
}

static inline int u64vec_push(u64vec_t *a, uint64_t x) {
  if (a->n == a->cap && u64vec_reserve(a, a->n + 1) != ST_OK) return ST_E_NOMEM;
  a->v[a->n++] = x;
  return ST_OK;
}

/* Sorts a->v ascending. */
static inline int u64_compare(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return (x > y) - (x < y);
}
static inline void u64vec_sort(u64vec_t *a) {
  if (a->n > 1) qsort(a->v, a->n, sizeof *a->v, u64_compare);
}

/* 1 if x is in the ascending array v[0, n), by binary search. */
static inline int u64_sorted_contains(const uint64_t *v, size_t n, uint64_t x) {
  size_t lo = 0, hi = n;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (v[mid] < x)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo < n && v[lo] == x;
}

#endif

/* Range tombstones of one source (a WAL chunk or a table), fragmented as RocksDB fragments them
   (db/range_tombstone_fragmenter.cc): the begin and end keys of every tombstone, sorted and
   made unique, cut the key space into fragments [point i, point i + 1), each with the largest
   sequence among the tombstones that cover it. The largest sequence covering a key
   (FragmentedRangeTombstoneIterator::MaxCoveringTombstoneSeqnum) is then one binary search.
   The fragments are made by one sweep over the points with a heap of the open tombstones
   (largest sequence on top; a tombstone that ended is dropped when it reaches the top), so
   that n tombstones cost O(n log n), however they overlap. */
#include <stdlib.h>
#include <string.h>

#include "lsm_hooks/engines/stock/stock_ro.h"

typedef struct point {
  const uint8_t *k;
  size_t len;
} point_t;

static int cmp_point(const void *x, const void *y) {
  const point_t *a = x, *b = y;
  return stock_key_cmp(a->k, a->len, b->k, b->len);
}

/* Tombstones by begin key (their keys in base: stock_tombs_builder_t.p). */
static int cmp_begin(const void *x, const void *y, void *base) {
  const stock_tomb_ref_t *a = x, *b = y;
  const uint8_t *p = base;
  return stock_key_cmp(p + a->b, a->bl, p + b->b, b->bl);
}

int stock_tombs_builder_add(stock_tombs_builder_t *b, const void *begin, size_t bl, const void *end,
                            size_t el, uint64_t seq) {
  if (stock_grow(&b->p, &b->cap, b->len + bl + el, 1, 1024) != BFH_OK ||
      stock_grow(&b->t, &b->tcap, b->n + 1, sizeof *b->t, 16) != BFH_OK)
    return BFH_E_NOMEM;
  b->t[b->n++] = (stock_tomb_ref_t){.b = b->len, .bl = bl, .e = b->len + bl, .el = el, .seq = seq};
  if (bl) memcpy(b->p + b->len, begin, bl);
  if (el) memcpy(b->p + b->len + bl, end, el);
  b->len += bl + el;
  return BFH_OK;
}

void stock_tombs_builder_release(stock_tombs_builder_t *b) {
  free(b->p);
  free(b->t);
  memset(b, 0, sizeof *b);
}

void stock_tombs_destroy(stock_tombs_t *t) {
  if (!t) return;
  free(t->keys);
  free(t->at);
  free(t->seq);
  free(t);
}

/* The heap of open tombstones, largest sequence on top. */
static void heap_push(const stock_tomb_ref_t **h, size_t *n, const stock_tomb_ref_t *t) {
  size_t i = (*n)++;
  for (; i > 0 && h[(i - 1) / 2]->seq < t->seq; i = (i - 1) / 2) h[i] = h[(i - 1) / 2];
  h[i] = t;
}

static void heap_pop(const stock_tomb_ref_t **h, size_t *n) {
  const stock_tomb_ref_t *last = h[--*n];
  size_t i = 0;
  for (;;) {
    size_t c = 2 * i + 1;
    if (c >= *n) break;
    if (c + 1 < *n && h[c + 1]->seq > h[c]->seq) c++;
    if (h[c]->seq <= last->seq) break;
    h[i] = h[c];
    i = c;
  }
  if (*n) h[i] = last;
}

int stock_tombs_finish(stock_tombs_builder_t *b, stock_tombs_t **out) {
  *out = NULL;
  if (b->n == 0) return BFH_OK;
  size_t n = b->n;
  stock_tomb_ref_t *ts = malloc(n * sizeof *ts);
  point_t *pts = malloc(2 * n * sizeof *pts);
  const stock_tomb_ref_t **heap = malloc(n * sizeof *heap);
  stock_tombs_t *t = calloc(1, sizeof *t);
  int rc = ts && pts && heap && t ? BFH_OK : BFH_E_NOMEM;
  size_t m = 0, bytes = 0;
  if (rc == BFH_OK) {
    memcpy(ts, b->t, n * sizeof *ts);
    for (size_t i = 0; i < n; i++) {
      pts[2 * i] = (point_t){b->p + ts[i].b, ts[i].bl};
      pts[2 * i + 1] = (point_t){b->p + ts[i].e, ts[i].el};
    }
    qsort_r(ts, n, sizeof *ts, cmp_begin, b->p);
    qsort(pts, 2 * n, sizeof *pts, cmp_point);
    for (size_t i = 0; i < 2 * n; i++)
      if (m == 0 || cmp_point(&pts[m - 1], &pts[i]) != 0) pts[m++] = pts[i], bytes += pts[i].len;
    t->keys = malloc(bytes ? bytes : 1);
    t->at = malloc((m + 1) * sizeof *t->at);
    t->seq = malloc(m * sizeof *t->seq);
    if (!t->keys || !t->at || !t->seq) rc = BFH_E_NOMEM;
  }
  if (rc == BFH_OK) {
    size_t j = 0, nh = 0, at = 0;
    for (size_t i = 0; i < m; i++) {
      const point_t *p = &pts[i];
      for (; j < n && stock_key_cmp(b->p + ts[j].b, ts[j].bl, p->k, p->len) <= 0; j++)
        heap_push(heap, &nh, &ts[j]);
      while (nh && stock_key_cmp(b->p + heap[0]->e, heap[0]->el, p->k, p->len) <= 0)
        heap_pop(heap, &nh);
      t->seq[i] = nh ? heap[0]->seq : 0;
      t->at[i] = at;
      if (p->len) memcpy(t->keys + at, p->k, p->len);
      at += p->len;
    }
    t->at[m] = at;
    t->n = m;
    t->count = n;
    *out = t;
  } else {
    stock_tombs_destroy(t);
  }
  free(ts);
  free(pts);
  free(heap);
  return rc;
}

uint64_t stock_tombs_max(const stock_tombs_t *t, const void *key, size_t key_len) {
  if (!t) return 0;
  size_t lo = 0, hi = t->n; /* the first point > key */
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (stock_key_cmp(t->keys + t->at[mid], t->at[mid + 1] - t->at[mid], key, key_len) <= 0)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo == 0 ? 0 : t->seq[lo - 1];
}

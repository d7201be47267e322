/* The merging iterator (a binary min-heap of children by current internal key) and the
 * empty iterator (lsm/iterator.h). */
#include <stdlib.h>
#include <string.h>

#include "lsm/internal_key.h"
#include "lsm/iterator.h"

/* ---- Empty iterator -------------------------------------------------------------------- */

typedef struct empty_iter {
  iterator_t base;
  err_t status;
} empty_iter_t;

static void ei_seek_first(iterator_t *it) {
  (void)it;
}
static void ei_seek(iterator_t *it, const void *t, size_t n) {
  (void)it;
  (void)t;
  (void)n;
}
static int ei_valid(const iterator_t *it) {
  (void)it;
  return 0;
}
static void ei_next(iterator_t *it) {
  (void)it;
}
static const void *ei_kv(const iterator_t *it, size_t *n) {
  (void)it;
  *n = 0;
  return NULL;
}
static int ei_status(const iterator_t *it, err_t *err) {
  const empty_iter_t *ei = (const empty_iter_t *)it;
  if (err) *err = ei->status;
  return ei->status.code;
}
static void ei_destroy(iterator_t *it) {
  free(it);
}

static const iterator_ops_t empty_ops = {ei_seek_first, ei_seek, ei_valid,  ei_next,
                                         ei_kv,         ei_kv,   ei_status, ei_destroy};

iterator_t *iterator_empty_create(int status, const err_t *msg) {
  empty_iter_t *ei = calloc(1, sizeof *ei);
  if (!ei) return NULL;
  ei->base.ops = &empty_ops;
  err_clear(&ei->status);
  if (status) {
    if (msg) ei->status = *msg;
    ei->status.code = status;
  }
  return &ei->base;
}

/* ---- Merging iterator ------------------------------------------------------------------ */

typedef struct merge_iter {
  iterator_t base;
  iterator_t **child;
  size_t n;
  size_t *heap; /* indexes of valid children, heap-ordered */
  size_t nheap;
} merge_iter_t;

/* 1 if child a should come before child b. */
static int before(const merge_iter_t *m, size_t a, size_t b) {
  size_t al, bl;
  const void *ak = iterator_key(m->child[a], &al);
  const void *bk = iterator_key(m->child[b], &bl);
  int c = internal_key_compare(ak, al, bk, bl);
  return c < 0 || (c == 0 && a < b);
}

static void sift_down(merge_iter_t *m, size_t i) {
  size_t *h = m->heap;
  for (;;) {
    size_t l = 2 * i + 1, r = l + 1, best = i;
    if (l < m->nheap && before(m, h[l], h[best])) best = l;
    if (r < m->nheap && before(m, h[r], h[best])) best = r;
    if (best == i) return;
    size_t t = h[i];
    h[i] = h[best];
    h[best] = t;
    i = best;
  }
}

static void rebuild(merge_iter_t *m) {
  m->nheap = 0;
  for (size_t i = 0; i < m->n; i++)
    if (iterator_valid(m->child[i])) m->heap[m->nheap++] = i;
  for (size_t i = m->nheap / 2; i-- > 0;) sift_down(m, i);
}

static void mg_seek_first(iterator_t *it) {
  merge_iter_t *m = (merge_iter_t *)it;
  for (size_t i = 0; i < m->n; i++) iterator_seek_first(m->child[i]);
  rebuild(m);
}

static void mg_seek(iterator_t *it, const void *t, size_t n) {
  merge_iter_t *m = (merge_iter_t *)it;
  for (size_t i = 0; i < m->n; i++) iterator_seek(m->child[i], t, n);
  rebuild(m);
}

static int mg_valid(const iterator_t *it) {
  return ((const merge_iter_t *)it)->nheap > 0;
}

static void mg_next(iterator_t *it) {
  merge_iter_t *m = (merge_iter_t *)it;
  iterator_t *top = m->child[m->heap[0]];
  iterator_next(top);
  if (!iterator_valid(top)) m->heap[0] = m->heap[--m->nheap];
  if (m->nheap) sift_down(m, 0);
}

static const void *mg_key(const iterator_t *it, size_t *n) {
  const merge_iter_t *m = (const merge_iter_t *)it;
  return iterator_key(m->child[m->heap[0]], n);
}

static const void *mg_value(const iterator_t *it, size_t *n) {
  const merge_iter_t *m = (const merge_iter_t *)it;
  return iterator_value(m->child[m->heap[0]], n);
}

static int mg_status(const iterator_t *it, err_t *err) {
  const merge_iter_t *m = (const merge_iter_t *)it;
  for (size_t i = 0; i < m->n; i++) {
    int rc = iterator_status(m->child[i], err);
    if (rc) return rc;
  }
  err_clear(err);
  return ST_OK;
}

static void mg_destroy(iterator_t *it) {
  merge_iter_t *m = (merge_iter_t *)it;
  for (size_t i = 0; i < m->n; i++) iterator_destroy(m->child[i]);
  free(m->child);
  free(m->heap);
  free(m);
}

static const iterator_ops_t merge_ops = {mg_seek_first, mg_seek,  mg_valid,  mg_next,
                                         mg_key,        mg_value, mg_status, mg_destroy};

iterator_t *merging_iterator_create(iterator_t **children, size_t n) {
  merge_iter_t *m = calloc(1, sizeof *m);
  if (m) {
    m->child = malloc((n ? n : 1) * sizeof *m->child);
    m->heap = malloc((n ? n : 1) * sizeof *m->heap);
  }
  if (!m || !m->child || !m->heap) {
    for (size_t i = 0; i < n; i++) iterator_destroy(children[i]);
    if (m) {
      free(m->child);
      free(m->heap);
      free(m);
    }
    return NULL;
  }
  m->base.ops = &merge_ops;
  if (n) memcpy(m->child, children, n * sizeof *children);
  m->n = n;
  m->nheap = 0;
  return &m->base;
}

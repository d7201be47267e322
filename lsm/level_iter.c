/* level_iter: see lsm/level_iter.h. */
#include "lsm/level_iter.h"

#include <stdlib.h>

#include "lsm/internal_key.h"
#include "lsm/table.h"

typedef struct level_iter {
  iterator_t base;
  lsm_file_meta_t *const *files;
  size_t n;
  level_open_fn open;
  void *arg;
  size_t fi;       /* the file cur reads; n: none */
  iterator_t *cur; /* its table iterator; NULL with fi = n, or when it would not open */
  err_t status;    /* why file fi would not open */
} level_iter_t;

/* Makes cur the iterator of file i (none past the last), unpositioned. */
static void open_file(level_iter_t *li, size_t i) {
  iterator_destroy(li->cur);
  li->cur = NULL;
  li->fi = i;
  if (i >= li->n) return;
  struct table *t;
  if (li->open(li->arg, li->files[i], &t, &li->status) != ST_OK) return;
  if (!(li->cur = table_iterator_create(t)))
    err_set(&li->status, ST_E_NOMEM, "iterator: no memory for table %llu",
            (unsigned long long)li->files[i]->number);
}

/* Moves on to the next files while the current one is exhausted (not failed). */
static void settle(level_iter_t *li) {
  while (li->cur && !iterator_valid(li->cur) && iterator_status(li->cur, NULL) == ST_OK) {
    open_file(li, li->fi + 1);
    if (li->cur) iterator_seek_first(li->cur);
  }
}

static void li_seek_first(iterator_t *it) {
  level_iter_t *li = (level_iter_t *)it;
  if (li->status.code) return;
  open_file(li, 0);
  if (li->cur) iterator_seek_first(li->cur);
  settle(li);
}

/* The first file whose largest key is at or after target: the only one that may hold it. */
static void li_seek(iterator_t *it, const void *target, size_t n) {
  level_iter_t *li = (level_iter_t *)it;
  if (li->status.code) return;
  if (n < INTERNAL_KEY_TAG_BYTES) { /* not an internal key: the smallest, as ti_seek reads it */
    li_seek_first(it);
    return;
  }
  size_t lo = 0, hi = li->n;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    const lsm_file_meta_t *f = li->files[mid];
    if (internal_key_compare(f->largest, f->largest_len, target, n) < 0)
      lo = mid + 1;
    else
      hi = mid;
  }
  open_file(li, lo);
  if (li->cur) iterator_seek(li->cur, target, n);
  settle(li);
}

static int li_valid(const iterator_t *it) {
  const level_iter_t *li = (const level_iter_t *)it;
  return li->cur && iterator_valid(li->cur);
}

static void li_next(iterator_t *it) {
  level_iter_t *li = (level_iter_t *)it;
  iterator_next(li->cur);
  settle(li);
}

static const void *li_key(const iterator_t *it, size_t *n) {
  return iterator_key(((const level_iter_t *)it)->cur, n);
}

static const void *li_value(const iterator_t *it, size_t *n) {
  return iterator_value(((const level_iter_t *)it)->cur, n);
}

static int li_status(const iterator_t *it, err_t *err) {
  const level_iter_t *li = (const level_iter_t *)it;
  if (li->status.code) {
    if (err) *err = li->status;
    return li->status.code;
  }
  if (li->cur) return iterator_status(li->cur, err);
  if (err) err_clear(err);
  return ST_OK;
}

static void li_destroy(iterator_t *it) {
  level_iter_t *li = (level_iter_t *)it;
  iterator_destroy(li->cur);
  free(li);
}

static const iterator_ops_t level_iter_ops = {li_seek_first, li_seek,  li_valid,  li_next,
                                              li_key,        li_value, li_status, li_destroy};

iterator_t *level_iterator_create(lsm_file_meta_t *const *files, size_t n, level_open_fn open,
                                  void *arg) {
  level_iter_t *li = calloc(1, sizeof *li);
  if (!li) return NULL;
  li->base.ops = &level_iter_ops;
  li->files = files;
  li->n = n;
  li->open = open;
  li->arg = arg;
  li->fi = n;
  err_clear(&li->status);
  return &li->base;
}

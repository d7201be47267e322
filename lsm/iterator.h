/* iterator_t: a forward iterator over (key, value) pairs, the common interface of the
 * memtable, block, table and merging iterators. h4's compaction and lsm_iter use it.
 *
 * Keys are internal keys (lsm/internal_key.h) except for blocks read with another
 * comparator. key()/value() are borrowed and valid until the next move or destroy;
 * REQUIRES valid() for key/value/next. An error (e.g. a block checksum mismatch) makes the
 * iterator invalid with status() != ST_OK. Not thread-safe: one thread per iterator.
 */
#ifndef BFH_LSM_ITERATOR_H
#define BFH_LSM_ITERATOR_H

#include <stddef.h>

#include "util/err.h"

typedef struct iterator iterator_t;

typedef struct iterator_ops {
  void (*seek_first)(iterator_t *it);
  /* Positions at the first entry with key >= target. */
  void (*seek)(iterator_t *it, const void *target, size_t n);
  int (*valid)(const iterator_t *it);
  void (*next)(iterator_t *it);
  const void *(*key)(const iterator_t *it, size_t *n);
  const void *(*value)(const iterator_t *it, size_t *n);
  /* ST_OK or the error that stopped the iterator (message copied into err). */
  int (*status)(const iterator_t *it, err_t *err);
  void (*destroy)(iterator_t *it);
} iterator_ops_t;

/* Implementations embed this as their first member. */
struct iterator {
  const iterator_ops_t *ops;
};

static inline void iterator_seek_first(iterator_t *it) {
  it->ops->seek_first(it);
}
static inline void iterator_seek(iterator_t *it, const void *target, size_t n) {
  it->ops->seek(it, target, n);
}
static inline int iterator_valid(const iterator_t *it) {
  return it->ops->valid(it);
}
static inline void iterator_next(iterator_t *it) {
  it->ops->next(it);
}
static inline const void *iterator_key(const iterator_t *it, size_t *n) {
  return it->ops->key(it, n);
}
static inline const void *iterator_value(const iterator_t *it, size_t *n) {
  return it->ops->value(it, n);
}
static inline int iterator_status(const iterator_t *it, err_t *err) {
  return it->ops->status(it, err);
}
/* NULL allowed. */
static inline void iterator_destroy(iterator_t *it) {
  if (it) it->ops->destroy(it);
}

/* An iterator with no entries and the given status (ST_OK, or an error with msg's text;
   msg may be NULL). NULL on no memory. Client calls iterator_destroy(). */
iterator_t *iterator_empty_create(int status, const err_t *msg);

/* Merges n children ordered by internal_key_compare into one ordered stream (binary heap;
   equal keys come from the lower child index first). Takes ownership of children[0..n)
   (destroyed with it, or at once on failure); the array itself is copied. status() is the
   first child error. NULL on no memory. Client calls iterator_destroy(). */
iterator_t *merging_iterator_create(iterator_t **children, size_t n);

#endif

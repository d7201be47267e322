/* A list of keys, each copied: what a search gathers before it reports (the retried search
 * keeps an attempt's keys until the attempt read every table; the stand-alone index's
 * predicate search keeps its candidates to sort them and validate each once).
 */
#ifndef BFH_SEARCH_KEY_LIST_H
#define BFH_SEARCH_KEY_LIST_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef struct key_copy {
  char *bytes; /* owned */
  size_t len;
  uint32_t tag; /* the list's tag when the key was added: which lookup found it */
} key_copy_t;

typedef struct key_list {
  key_copy_t *v;
  size_t n, cap;
  int nomem;    /* a key was lost for want of memory: the list is not the answer */
  uint32_t tag; /* given to the keys added */
} key_list_t;

/* A bfh_match_fn: appends a copy of key. 1 (stop) on no memory, with nomem set. */
static inline int key_list_add(void *arg, const void *key, size_t len) {
  key_list_t *l = arg;
  if (l->n == l->cap) {
    size_t cap = l->cap ? 2 * l->cap : 64;
    key_copy_t *v = realloc(l->v, cap * sizeof *v);
    if (!v) return l->nomem = 1;
    l->v = v;
    l->cap = cap;
  }
  char *copy = malloc(len ? len : 1);
  if (!copy) return l->nomem = 1;
  if (len) memcpy(copy, key, len);
  l->v[l->n++] = (key_copy_t){copy, len, l->tag};
  return 0;
}

/* Drops the keys added after the first n, keeping its room. */
static inline void key_list_truncate(key_list_t *l, size_t n) {
  for (size_t i = n; i < l->n; i++) free(l->v[i].bytes);
  if (n < l->n) l->n = n;
}

/* Empties l, keeping its room. */
static inline void key_list_clear(key_list_t *l) {
  key_list_truncate(l, 0);
  l->nomem = 0;
}

static inline void key_list_release(key_list_t *l) {
  key_list_clear(l);
  free(l->v);
  l->v = NULL;
  l->cap = 0;
}

/* Bytewise, a shorter key first on a common prefix (the tag does not count): a qsort
   comparator over key_copy_t. */
static inline int key_copy_cmp(const void *pa, const void *pb) {
  const key_copy_t *a = pa, *b = pb;
  size_t n = a->len < b->len ? a->len : b->len;
  int c = n ? memcmp(a->bytes, b->bytes, n) : 0;
  if (c) return c;
  return (a->len > b->len) - (a->len < b->len);
}

#endif

/* A list of keys, each copied: what a search gathers before it reports (the retried search
 * keeps an attempt's keys until the attempt read every table; the stand-alone index's
 * predicate search keeps each leaf's keys to merge them and validate each candidate once).
 *
 * The copies live in chunks of at least KEY_LIST_CHUNK bytes that never move, so a key's
 * bytes stay where they are while the list grows, and a hundred thousand keys cost a few
 * allocations rather than one each.
 */
#ifndef BFH_SEARCH_KEY_LIST_H
#define BFH_SEARCH_KEY_LIST_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define KEY_LIST_CHUNK (64 * 1024)

typedef struct key_copy {
  const char *bytes; /* in one of the list's chunks */
  size_t len;
  uint32_t tag; /* the list's tag when the key was added: which lookup found it */
} key_copy_t;

/* A chunk of copies: its bytes follow the header. */
typedef struct key_chunk {
  struct key_chunk *prev;
  size_t used, cap;
} key_chunk_t;

typedef struct key_list {
  key_copy_t *v;
  size_t n, cap;
  key_chunk_t *chunk; /* the newest; the older ones through prev */
  int nomem;          /* a key was lost for want of memory: the list is not the answer */
  uint32_t tag;       /* given to the keys added */
} key_list_t;

/* Room for len bytes in l's newest chunk, or a new chunk; NULL on no memory. */
static inline char *key_list_room(key_list_t *l, size_t len) {
  key_chunk_t *c = l->chunk;
  if (!c || c->cap - c->used < len) {
    size_t cap = len > KEY_LIST_CHUNK ? len : KEY_LIST_CHUNK;
    c = malloc(sizeof *c + cap);
    if (!c) return NULL;
    *c = (key_chunk_t){l->chunk, 0, cap};
    l->chunk = c;
  }
  char *room = (char *)(c + 1) + c->used;
  c->used += len;
  return room;
}

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
  char *copy = key_list_room(l, len);
  if (!copy) return l->nomem = 1;
  if (len) memcpy(copy, key, len);
  l->v[l->n++] = (key_copy_t){copy, len, l->tag};
  return 0;
}

/* Drops the keys added after the first n. Their bytes stay in the chunks until the list is
   cleared. */
static inline void key_list_truncate(key_list_t *l, size_t n) {
  if (n < l->n) l->n = n;
}

/* Empties l, keeping the room of its array. */
static inline void key_list_clear(key_list_t *l) {
  while (l->chunk) {
    key_chunk_t *prev = l->chunk->prev;
    free(l->chunk);
    l->chunk = prev;
  }
  l->n = 0;
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

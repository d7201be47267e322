/* Bump allocator for the memtable (lsm/arena.h). Large requests (> 1/4 block) get a block
 * of their own so the current block's remainder is not wasted. */
#include "lsm/arena.h"

#include <stdint.h>
#include <stdlib.h>

void arena_init(arena_t *a) {
  a->ptr = NULL;
  a->remaining = 0;
  a->blocks = NULL;
  a->nblocks = a->cap = 0;
  atomic_init(&a->usage, 0);
}

void arena_release(arena_t *a) {
  for (size_t i = 0; i < a->nblocks; i++) free(a->blocks[i]);
  free(a->blocks);
  arena_init(a);
}

static char *new_block(arena_t *a, size_t bytes) {
  if (a->nblocks == a->cap) {
    size_t cap = a->cap ? a->cap * 2 : 64;
    void **b = realloc(a->blocks, cap * sizeof *b);
    if (!b) return NULL;
    a->blocks = b;
    atomic_fetch_add_explicit(&a->usage, (cap - a->cap) * sizeof *b, memory_order_relaxed);
    a->cap = cap;
  }
  char *p = malloc(bytes);
  if (!p) return NULL;
  a->blocks[a->nblocks++] = p;
  atomic_fetch_add_explicit(&a->usage, bytes, memory_order_relaxed);
  return p;
}

static void *fallback(arena_t *a, size_t n) {
  if (n > ARENA_BLOCK_BYTES / 4) return new_block(a, n);
  char *p = new_block(a, ARENA_BLOCK_BYTES);
  if (!p) return NULL;
  a->ptr = p + n;
  a->remaining = ARENA_BLOCK_BYTES - n;
  return p;
}

void *arena_alloc_aligned(arena_t *a, size_t n) {
  size_t mis = (uintptr_t)a->ptr & 7;
  size_t slop = mis ? 8 - mis : 0;
  if (n + slop <= a->remaining) {
    char *p = a->ptr + slop;
    a->ptr += n + slop;
    a->remaining -= n + slop;
    return p;
  }
  return fallback(a, n); /* malloc'd blocks are aligned */
}

size_t arena_memory_usage(const arena_t *a) {
  return atomic_load_explicit(&((arena_t *)a)->usage, memory_order_relaxed);
}

size_t arena_bytes_used(const arena_t *a) {
  return arena_memory_usage(a) - a->remaining;
}

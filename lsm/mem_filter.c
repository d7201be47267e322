#include "lsm/mem_filter.h"

#include <stdatomic.h>
#include <stdlib.h>

struct mem_filter {
  atomic_int refs;
  size_t nblocks;
  _Atomic uint64_t *words; /* nblocks * 8, 64-byte aligned */
};

mem_filter_t *mem_filter_create(size_t bits) {
  mem_filter_t *f = malloc(sizeof *f);
  if (!f) return NULL;
  f->nblocks = (bits + 511) / 512;
  if (f->nblocks == 0) f->nblocks = 1;
  size_t bytes = f->nblocks * 64;
  f->words = aligned_alloc(64, bytes);
  if (!f->words) {
    free(f);
    return NULL;
  }
  for (size_t i = 0; i < f->nblocks * 8; i++) atomic_init(&f->words[i], 0);
  atomic_init(&f->refs, 1);
  return f;
}

void mem_filter_ref(mem_filter_t *f) {
  atomic_fetch_add_explicit(&f->refs, 1, memory_order_relaxed);
}

void mem_filter_unref(mem_filter_t *f) {
  if (!f || atomic_fetch_sub_explicit(&f->refs, 1, memory_order_acq_rel) != 1) return;
  free((void *)f->words);
  free(f);
}

static inline _Atomic uint64_t *block_of(const mem_filter_t *f, uint64_t hash) {
  size_t b = (size_t)(((hash >> 32) * (uint64_t)f->nblocks) >> 32);
  return f->words + b * 8;
}

void mem_filter_add(mem_filter_t *f, uint64_t hash) {
  _Atomic uint64_t *w = block_of(f, hash);
  uint32_t h = (uint32_t)hash, delta = (h >> 17) | (h << 15);
  for (int i = 0; i < MEM_FILTER_PROBES; i++, h += delta) {
    uint32_t bit = h & 511;
    _Atomic uint64_t *word = &w[bit >> 6];
    uint64_t old = atomic_load_explicit(word, memory_order_relaxed);
    uint64_t mask = (uint64_t)1 << (bit & 63);
    if (!(old & mask)) atomic_store_explicit(word, old | mask, memory_order_relaxed);
  }
}

int mem_filter_may_contain(const mem_filter_t *f, uint64_t hash) {
  _Atomic uint64_t *w = block_of(f, hash);
  uint32_t h = (uint32_t)hash, delta = (h >> 17) | (h << 15);
  for (int i = 0; i < MEM_FILTER_PROBES; i++, h += delta) {
    uint32_t bit = h & 511;
    if (!(atomic_load_explicit(&w[bit >> 6], memory_order_relaxed) & ((uint64_t)1 << (bit & 63))))
      return 0;
  }
  return 1;
}

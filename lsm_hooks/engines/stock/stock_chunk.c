/* Chunks (stock_ro.h): the entries one read of a log added, indexed by value for searches and
   by key for gets, with the range deletions the read met. */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "filters/hash.h"
#include "lsm_hooks/engines/stock/stock_ro.h"

#define CHUNK_KEY_SEED 0x726f6b6579733031ull /* "rokeys01" */

void stock_chunk_unref(stock_chunk_t *c) {
  if (!c || atomic_fetch_sub(&c->refs, 1) != 1) return;
  stock_seg_unref(c->vals);
  stock_tombs_destroy(c->tombs);
  free(c->data);
  free(c->slots);
  free(c);
}

int stock_chunk_builder_add(stock_chunk_builder_t *b, int is_value, uint64_t seq, const void *key,
                            size_t key_len, const void *val, size_t val_len) {
  uint64_t tag = seq << 1 | (is_value != 0);
  if (stock_seg_builder_add(&b->all, tag, key, key_len, val, val_len) != BFH_OK ||
      (is_value && stock_seg_builder_add(&b->vals, seq, key, key_len, val, val_len) != BFH_OK))
    return b->nomem = 1;
  return 0;
}

void stock_chunk_builder_release(stock_chunk_builder_t *b) {
  stock_seg_builder_release(&b->vals);
  stock_seg_builder_release(&b->all);
  stock_tombs_builder_release(&b->tombs);
}

/* The entry at p of c's data (borrowed); returns the next one. */
static const uint8_t *entry_decode(const stock_chunk_t *c, const uint8_t *p, int *is_value,
                                   uint64_t *seq, const uint8_t **k, uint32_t *kl,
                                   const uint8_t **v, uint32_t *vl) {
  p = stock_seg_entry_decode(p, c->data + c->len, seq, k, kl, v, vl);
  *is_value = (int)(*seq & 1);
  *seq >>= 1;
  return p;
}

static int same_key(const uint8_t *a, size_t al, const void *b, size_t bl) {
  return al == bl && (al == 0 || memcmp(a, b, al) == 0);
}

/* The slot of key in c: its entry's, or the empty one where it goes. */
static size_t find_slot(const stock_chunk_t *c, const void *key, size_t key_len) {
  size_t i = (size_t)bfh_hash64(key, key_len, CHUNK_KEY_SEED) & c->mask;
  for (; c->slots[i]; i = (i + 1) & c->mask) {
    int t;
    uint64_t s;
    const uint8_t *k, *v;
    uint32_t kl, vl;
    entry_decode(c, c->data + c->slots[i] - 1, &t, &s, &k, &kl, &v, &vl);
    if (same_key(k, kl, key, key_len)) break;
  }
  return i;
}

stock_chunk_t *stock_chunk_make(stock_chunk_builder_t *b) {
  stock_chunk_t *c = calloc(1, sizeof *c);
  size_t nslots = 2;
  while (nslots < 2 * b->all.n) nslots *= 2;
  if (c) c->slots = calloc(nslots, sizeof *c->slots);
  if (c) c->vals = stock_seg_builder_finish(&b->vals);
  if (!c || !c->slots || !c->vals || stock_tombs_finish(&b->tombs, &c->tombs) != BFH_OK) {
    if (c) stock_seg_unref(c->vals), free(c->slots), free(c);
    return NULL;
  }
  atomic_init(&c->refs, 1);
  c->data = b->all.p; /* taken over */
  c->len = b->all.len;
  b->all.p = NULL;
  c->mask = nslots - 1;
  for (const uint8_t *p = c->data, *end = c->data + c->len; p < end;) {
    uint64_t off = (uint64_t)(p - c->data), seq;
    int t;
    const uint8_t *k, *v;
    uint32_t kl, vl;
    p = entry_decode(c, p, &t, &seq, &k, &kl, &v, &vl);
    c->slots[find_slot(c, k, kl)] = off + 1; /* a later entry of the key replaces it */
  }
  return c;
}

int stock_chunk_find(const stock_chunk_t *c, const void *key, size_t key_len, int *is_value,
                     uint64_t *seq, const uint8_t **v, uint32_t *vl) {
  size_t i = find_slot(c, key, key_len);
  if (!c->slots[i]) return 0;
  const uint8_t *k;
  uint32_t kl;
  entry_decode(c, c->data + c->slots[i] - 1, is_value, seq, &k, &kl, v, vl);
  return 1;
}

int stock_chunks_each(stock_chunk_t *const *chunks, size_t n, stock_chunk_fn fn, void *arg) {
  for (size_t i = 0; i < n; i++) {
    const stock_chunk_t *c = chunks[i];
    for (const uint8_t *p = c->data, *end = c->data + c->len; p < end;) {
      int is_value;
      uint64_t seq;
      const uint8_t *k, *v;
      uint32_t kl, vl;
      p = entry_decode(c, p, &is_value, &seq, &k, &kl, &v, &vl);
      int stop = fn(arg, k, kl, v, vl, is_value, seq);
      if (stop) return stop;
    }
  }
  return 0;
}

/* Chunks (ro_internal.h): the entries one read of a log added, indexed by value for searches
   and by key for gets. */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "filters/hash.h"
#include "lsm_hooks/engines/leveldb_ro/ro_internal.h"
#include "util/coding.h"

void ro_chunk_unref(chunk_t *c) {
  if (!c || atomic_fetch_sub(&c->refs, 1) != 1) return;
  stock_seg_unref(c->vals);
  free(c->data);
  free(c->slots);
  free(c);
}

int ro_chunk_builder_add(void *arg, const ldb_entry_t *e) {
  chunk_builder_t *b = arg;
  size_t need = b->len + 1 + 2 * 4 + e->key_len + e->val_len;
  if (need > b->cap) {
    size_t c = b->cap ? b->cap : 65536;
    while (c < need) c *= 2;
    uint8_t *p = realloc(b->p, c);
    if (!p) return b->nomem = 1;
    b->p = p;
    b->cap = c;
  }
  uint8_t *q = b->p + b->len;
  *q++ = (uint8_t)e->type;
  encode_fixed32(q, (uint32_t)e->key_len);
  q += 4;
  if (e->key_len) memcpy(q, e->key, e->key_len);
  q += e->key_len;
  encode_fixed32(q, (uint32_t)e->val_len);
  q += 4;
  if (e->val_len) memcpy(q, e->val, e->val_len);
  b->len = (size_t)(q + e->val_len - b->p);
  b->n++;
  if (e->type == LDB_TYPE_VALUE &&
      stock_seg_builder_add(&b->vals, e->key, e->key_len, e->val, e->val_len) != BFH_OK)
    return b->nomem = 1;
  return 0;
}

void ro_chunk_builder_release(chunk_builder_t *b) {
  stock_seg_builder_release(&b->vals);
  free(b->p);
}

/* The entry at p (written by ro_chunk_builder_add, so well formed): type, key, value; returns the
   next one. */
const uint8_t *ro_chunk_entry_decode(const uint8_t *p, int *type, const uint8_t **k, uint32_t *kl,
                                     const uint8_t **v, uint32_t *vl) {
  *type = *p++;
  *kl = decode_fixed32(p);
  *k = p + 4;
  p = *k + *kl;
  *vl = decode_fixed32(p);
  *v = p + 4;
  return *v + *vl;
}

static int same_key(const uint8_t *a, size_t al, const void *b, size_t bl) {
  return al == bl && (al == 0 || memcmp(a, b, al) == 0);
}

/* A chunk of b's entries (one reference), or NULL without memory. */
chunk_t *ro_chunk_make(chunk_builder_t *b) {
  chunk_t *c = calloc(1, sizeof *c);
  size_t nslots = 2;
  while (nslots < 2 * b->n) nslots *= 2;
  if (c) c->slots = calloc(nslots, sizeof *c->slots);
  if (c) c->vals = stock_seg_builder_finish(&b->vals);
  if (!c || !c->slots || !c->vals) {
    if (c) stock_seg_unref(c->vals), free(c->slots), free(c);
    return NULL;
  }
  atomic_init(&c->refs, 1);
  c->data = b->p; /* taken over */
  c->len = b->len;
  b->p = NULL;
  c->mask = nslots - 1;
  const uint8_t *p = c->data, *end = c->data + c->len;
  while (p < end) {
    uint64_t off = (uint64_t)(p - c->data);
    int type;
    const uint8_t *k, *v;
    uint32_t kl, vl;
    p = ro_chunk_entry_decode(p, &type, &k, &kl, &v, &vl);
    size_t i = (size_t)bfh_hash64(k, kl, KEY_HASH_SEED) & c->mask;
    for (; c->slots[i]; i = (i + 1) & c->mask) {
      int t2;
      const uint8_t *k2, *v2;
      uint32_t kl2, vl2;
      ro_chunk_entry_decode(c->data + c->slots[i] - 1, &t2, &k2, &kl2, &v2, &vl2);
      if (same_key(k2, kl2, k, kl)) break; /* a later entry of the key replaces it */
    }
    c->slots[i] = off + 1;
  }
  return c;
}

/* The last entry of key in c: 1 (and *type, *v, *vl) or 0. */
int ro_chunk_find(const chunk_t *c, const void *key, size_t key_len, int *type, const uint8_t **v,
                  uint32_t *vl) {
  for (size_t i = (size_t)bfh_hash64(key, key_len, KEY_HASH_SEED) & c->mask; c->slots[i];
       i = (i + 1) & c->mask) {
    const uint8_t *k;
    uint32_t kl;
    ro_chunk_entry_decode(c->data + c->slots[i] - 1, type, &k, &kl, v, vl);
    if (same_key(k, kl, key, key_len)) return 1;
  }
  return 0;
}

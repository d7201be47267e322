/* Data blocks kept by one reader; see block_memo.h. Open addressing, linear probing. */
#include "lsm/block_memo.h"

#include <stdlib.h>
#include <string.h>

#include "filters/blocked_filter.h"

void block_memo_init(block_memo_t *m) {
  memset(m, 0, sizeof *m);
}

void block_memo_release(block_memo_t *m) {
  if (!m) return;
  for (size_t i = 0; i < m->cap; i++) {
    free(m->slots[i].data);
    for (size_t j = 0; j < m->slots[i].nmatches; j++) free(m->slots[i].matches[j].user_key);
    free(m->slots[i].matches);
  }
  free(m->slots);
  free(m->keys);
  memset(m, 0, sizeof *m);
}

static size_t slot_of(uint64_t number, uint32_t index, size_t cap) {
  uint64_t h = (number * 0x9e3779b97f4a7c15ull) ^ ((uint64_t)index * 0xc2b2ae3d27d4eb4full);
  h ^= h >> 29;
  return (size_t)h & (cap - 1);
}

static int grow(block_memo_t *m) {
  size_t cap = m->cap ? 2 * m->cap : 16;
  block_memo_slot_t *s = calloc(cap, sizeof *s);
  if (!s) return -1;
  for (size_t i = 0; i < m->cap; i++) {
    if (!m->slots[i].number) continue;
    size_t j = slot_of(m->slots[i].number, m->slots[i].index, cap);
    while (s[j].number) j = (j + 1) & (cap - 1);
    s[j] = m->slots[i];
  }
  free(m->slots);
  m->slots = s;
  m->cap = cap;
  return 0;
}

static size_t key_slot_of(uint64_t number, uint64_t hash, size_t cap) {
  uint64_t h = hash ^ (number * 0x9e3779b97f4a7c15ull);
  h ^= h >> 31;
  return (size_t)h & (cap - 1);
}

static int grow_keys(block_memo_t *m) {
  size_t cap = m->kcap ? 2 * m->kcap : 64;
  block_memo_key_t *k = calloc(cap, sizeof *k);
  if (!k) return -1;
  for (size_t i = 0; i < m->kcap; i++) {
    if (!m->keys[i].number) continue;
    size_t j = key_slot_of(m->keys[i].number, m->keys[i].hash, cap);
    while (k[j].number) j = (j + 1) & (cap - 1);
    k[j] = m->keys[i];
  }
  free(m->keys);
  m->keys = k;
  m->kcap = cap;
  return 0;
}

/* Makes the kept matches of slot s findable by key; one that cannot be (no memory) is only
   found by a get's seek, as if it were not kept. */
static void index_keys(block_memo_t *m, const block_memo_slot_t *s) {
  for (size_t i = 0; i < s->nmatches; i++) {
    if ((m->kn + 1) * 2 > m->kcap && grow_keys(m)) return;
    const block_memo_match_t *x = &s->matches[i];
    uint64_t h = blocked_filter_key_hash(x->user_key, x->user_len);
    size_t j = key_slot_of(s->number, h, m->kcap);
    while (m->keys[j].number) j = (j + 1) & (m->kcap - 1);
    m->keys[j] = (block_memo_key_t){s->number, h, x, s->data};
    m->kn++;
  }
}

/* Whether match x's value lies in a block of size bytes (one that does not is never kept). */
static int value_in_block(const block_memo_match_t *x, size_t size) {
  return x->val_off <= size && x->val_len <= size - x->val_off;
}

/* Keeps block index of table number: with whole, a copy of its contents (size bytes); else
   only the values of the matches, one after another (their val_off moved there). */
static void put(block_memo_t *m, uint64_t number, uint32_t index, const uint8_t *data,
                size_t size, const block_memo_match_t *matches, size_t n, int whole) {
  if (number == 0 || size > UINT32_MAX) return;
  size_t keep = size;
  if (!whole) { /* the values of the matches that lie in the block */
    keep = 0;
    for (size_t i = 0; i < n; i++)
      if (value_in_block(&matches[i], size)) keep += matches[i].val_len;
  }
  if (m->bytes + keep > BLOCK_MEMO_MAX_BYTES) return;
  if ((m->n + 1) * 2 > m->cap && grow(m)) return;
  size_t j = slot_of(number, index, m->cap);
  for (; m->slots[j].number; j = (j + 1) & (m->cap - 1))
    if (m->slots[j].number == number && m->slots[j].index == index) return;
  uint8_t *copy = malloc(keep ? keep : 1);
  block_memo_match_t *mc = n ? calloc(n, sizeof *mc) : NULL;
  if (!copy || (n && !mc)) {
    free(copy);
    free(mc);
    return;
  }
  if (whole) memcpy(copy, data, size);
  size_t kept = 0, at = 0; /* a match whose key cannot be copied is left out: its get seeks */
  for (size_t i = 0; i < n; i++) {
    if (!value_in_block(&matches[i], size)) continue;
    uint8_t *k = malloc(matches[i].user_len ? matches[i].user_len : 1);
    if (!k) continue;
    if (matches[i].user_len) memcpy(k, matches[i].user_key, matches[i].user_len);
    mc[kept] = matches[i];
    mc[kept].user_key = k;
    if (!whole) {
      memcpy(copy + at, data + matches[i].val_off, matches[i].val_len);
      mc[kept].val_off = (uint32_t)at;
      at += matches[i].val_len;
    }
    kept++;
  }
  m->slots[j] = (block_memo_slot_t){number, index, whole ? (uint32_t)size : 0, whole, copy, mc,
                                    kept};
  index_keys(m, &m->slots[j]);
  m->n++;
  m->bytes += keep;
}

void block_memo_put(block_memo_t *m, uint64_t number, uint32_t index, const uint8_t *data,
                    size_t size, const block_memo_match_t *matches, size_t n) {
  put(m, number, index, data, size, matches, n, 1);
}

void block_memo_put_values(block_memo_t *m, uint64_t number, uint32_t index, const uint8_t *data,
                           size_t size, const block_memo_match_t *matches, size_t n) {
  put(m, number, index, data, size, matches, n, 0);
}

const block_memo_slot_t *block_memo_get(block_memo_t *m, uint64_t number, uint32_t index) {
  if (!m || m->n == 0) return NULL;
  for (size_t j = slot_of(number, index, m->cap); m->slots[j].number;
       j = (j + 1) & (m->cap - 1))
    if (m->slots[j].number == number && m->slots[j].index == index) {
      m->hits++;
      return &m->slots[j];
    }
  return NULL;
}

const block_memo_match_t *block_memo_first(block_memo_t *m, uint64_t number, const void *key,
                                           size_t len, uint64_t key_hash, const uint8_t **val) {
  if (!m || m->kn == 0) return NULL;
  for (size_t j = key_slot_of(number, key_hash, m->kcap); m->keys[j].number;
       j = (j + 1) & (m->kcap - 1)) {
    const block_memo_key_t *k = &m->keys[j];
    if (k->number != number || k->hash != key_hash || k->match->user_len != len ||
        (len && memcmp(k->match->user_key, key, len) != 0))
      continue;
    m->hits++;
    *val = k->data + k->match->val_off;
    return k->match;
  }
  return NULL;
}

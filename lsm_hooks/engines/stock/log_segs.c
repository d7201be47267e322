/* Log segments (stock.h): value entries read from one stretch of a stock engine's log, in one
 * allocation with a hash index of them by value, built once when the segment is made, so that
 * a search looks up the entries of its value instead of comparing every unflushed entry.
 */
#include <stdlib.h>
#include <string.h>

#include "bfh.h"
#include "filters/hash.h"
#include "filters/value_terms.h"
#include "lsm_hooks/engines/stock/stock.h"
#include "util/coding.h"
#include "util/sort.h"

/* The tag of a value in a slot: the top bits of its hash, never 0 (an empty slot). Its low
   bits choose the home slot, so the tag spares the comparison of most other values met. */
static uint64_t slot_tag(uint64_t h) {
  uint64_t t = h >> STOCK_SEG_OFF_BITS;
  return t ? t : 1;
}

const uint8_t *stock_seg_entry_decode(const uint8_t *p, const uint8_t *end, uint64_t *seq,
                                      const uint8_t **k, uint32_t *kl, const uint8_t **v,
                                      uint32_t *vl) {
  p = decode_varint64(p, end, seq);
  p = decode_varint32(p, end, kl);
  *k = p;
  p = decode_varint32(p + *kl, end, vl);
  *v = p;
  return p + *vl;
}

int stock_seg_builder_add(stock_seg_builder_t *b, uint64_t seq, const void *key, size_t key_len,
                          const void *val, size_t val_len) {
  size_t need = b->len + VARINT64_MAX_BYTES + 2 * VARINT32_MAX_BYTES + key_len + val_len;
  if (stock_grow(&b->p, &b->cap, need, 1, 65536) != BFH_OK) {
    b->nomem = 1;
    return BFH_E_NOMEM;
  }
  uint8_t *q = encode_varint64(b->p + b->len, seq);
  q = encode_varint32(q, (uint32_t)key_len);
  if (key_len) memcpy(q, key, key_len);
  q = encode_varint32(q + key_len, (uint32_t)val_len);
  if (val_len) memcpy(q, val, val_len);
  b->len = (size_t)(q + val_len - b->p);
  b->n++;
  return BFH_OK;
}

/* The home slot of hash h, whose tag is tag, in s (stock.h): the tag's top bits, and below
   them h's low bits where the slots outnumber what the tag can name. */
static size_t slot_home(const log_seg_t *s, uint64_t tag, uint64_t h) {
  if (s->slot_bits <= STOCK_SEG_TAG_BITS) return (size_t)(tag >> (STOCK_SEG_TAG_BITS - s->slot_bits));
  const unsigned low = s->slot_bits - STOCK_SEG_TAG_BITS;
  return (size_t)(tag << low | (h & ((1ull << low) - 1)));
}

/* Fills the empty slots of s with the n items v (pairs: a hash, whose top bits are the tag,
   then the entry's offset; entries in order). Items of one hash share a home and their run
   holds them in v's order, which is what seg_lookup relies on. An item's range terms at a
   coarse level are shared by many entries (every value of an aligned interval of codes holds
   the same one), so putting items one by one, each probing its run to its end, would take
   time quadratic in such a run: a view reading a stretch of 100,000 entries of an attribute
   declared :range spent seconds there. The items are placed in the order of their homes
   instead (a stable radix sort; v's order among equal homes), each at its home or right
   after the one before, one pass; those that run past the last slot go on from the first
   empty one of the table, as probing would put them. */
static int slots_build(log_seg_t *s, const uint64_t *v, size_t n) {
  uint64_t *key = malloc((n ? n : 1) * sizeof *key);
  if (!key || n > UINT32_MAX) {
    free(key);
    return BFH_E_NOMEM;
  }
  for (size_t i = 0; i < n; i++) {
    const uint64_t h = v[2 * i];
    key[i] = (uint64_t)slot_home(s, slot_tag(h), h) << 32 | i;
  }
  if (u64_radix_sort(key, n, s->slot_bits + 32) != ST_OK) {
    free(key);
    return BFH_E_NOMEM;
  }
  size_t next = 0, wrap = 0; /* the slot after the last placed; the next to try past the end */
  for (size_t k = 0; k < n; k++) {
    const size_t i = (size_t)(key[k] & UINT32_MAX), home = (size_t)(key[k] >> 32);
    const uint64_t slot = slot_tag(v[2 * i]) << STOCK_SEG_OFF_BITS | v[2 * i + 1];
    size_t at = home > next ? home : next;
    if (at > s->slot_mask) { /* wrapped: the first empty slot from the table's start */
      while (s->slots[wrap]) wrap++;
      at = wrap;
    } else {
      next = at + 1;
    }
    s->slots[at] = slot;
  }
  free(key);
  return BFH_OK;
}

/* The items of a segment's entries, in entry order (the order seg_lookup relies on), as
   (hash, entry offset) pairs. */
typedef struct items {
  uint64_t *v; /* pairs: hash, offset */
  size_t n, cap;
  uint64_t off; /* of the entry being hashed */
  int nomem;
} items_t;

static void add_item(void *arg, uint64_t h) {
  items_t *it = arg;
  if (!it->nomem && stock_grow(&it->v, &it->cap, it->n + 2, sizeof *it->v, 1024) == BFH_OK) {
    it->v[it->n++] = h;
    it->v[it->n++] = it->off;
  } else {
    it->nomem = 1;
  }
}

/* The items of every entry of data[0, len) (value_terms_hash of terms under seed: NULL, the
   whole value's hash) to it: BFH_OK or BFH_E_NOMEM. */
static int hash_items(const uint8_t *data, size_t len, const value_terms_t *terms, uint64_t seed,
                      items_t *it) {
  for (const uint8_t *p = data, *end = data + len; p < end && !it->nomem;) {
    const uint8_t *k, *v;
    uint32_t kl = 0, vl = 0;
    uint64_t seq = 0;
    it->off = (uint64_t)(p - data);
    p = stock_seg_entry_decode(p, end, &seq, &k, &kl, &v, &vl);
    if (value_terms_hash(terms, v, vl, seed, 0, add_item, it) < 0) it->nomem = 1;
  }
  return it->nomem ? BFH_E_NOMEM : BFH_OK;
}

/* A new segment (one reference) for n entries of len bytes (data left to the caller) and
   nitems items, its slots empty. NULL if no memory. */
static log_seg_t *seg_alloc(uint64_t n, size_t len, uint64_t nitems, uint64_t seed) {
  unsigned bits = 1;
  while ((1ull << bits) < 2 * nitems) bits++; /* load <= 1/2: short probes */
  const size_t nslots = (size_t)1 << bits, at = (len + 7) & ~(size_t)7;
  log_seg_t *s = malloc(sizeof *s + at + nslots * sizeof(uint64_t));
  if (!s) return NULL;
  atomic_init(&s->refs, 1);
  s->n = n;
  s->len = len;
  s->slots = (uint64_t *)(s->data + at);
  s->slot_mask = nslots - 1;
  s->slot_bits = bits;
  s->items = nitems;
  s->seed = seed;
  memset(s->slots, 0, nslots * sizeof(uint64_t));
  return s;
}

log_seg_t *stock_seg_builder_finish(const stock_seg_builder_t *b) {
  if ((uint64_t)b->len >> STOCK_SEG_OFF_BITS) return NULL; /* offsets would not fit the slots */
  /* One slot per entry, or with declared attributes one per item of each entry. */
  items_t items = {0};
  log_seg_t *s = NULL;
  if (hash_items(b->p, b->len, b->terms, b->seed, &items) == BFH_OK &&
      (s = seg_alloc(b->n, b->len, items.n / 2, b->seed))) {
    if (b->len) memcpy(s->data, b->p, b->len);
    if (slots_build(s, items.v, items.n / 2) != BFH_OK) {
      free(s);
      s = NULL;
    }
  }
  free(items.v);
  return s;
}

void stock_seg_builder_release(stock_seg_builder_t *b) {
  free(b->p);
  memset(b, 0, sizeof *b);
}

void stock_seg_unref(log_seg_t *s) {
  if (s && atomic_fetch_sub(&s->refs, 1) == 1) free(s);
}

/* Appends the items of x to v[2 * *n ...] as (hash, offset) pairs, a hash standing for its
   tag (tag << STOCK_SEG_OFF_BITS: what homes it in a table of at most 2^STOCK_SEG_TAG_BITS
   slots), their entries' offsets moved by shift. x's slots are walked once round from an
   empty one, so that each run of them is met from its start: the entries of one item, which
   lie in their run in entry order, come in that order. */
static void items_of(const log_seg_t *x, uint64_t shift, uint64_t *v, size_t *n) {
  const uint64_t off_mask = (1ull << STOCK_SEG_OFF_BITS) - 1;
  size_t e = 0;
  while (x->slots[e]) e++; /* load <= 1/2: there is one */
  for (size_t k = 1; k <= x->slot_mask + 1; k++) {
    const uint64_t slot = x->slots[(e + k) & x->slot_mask];
    if (!slot) continue;
    v[2 * *n] = slot >> STOCK_SEG_OFF_BITS << STOCK_SEG_OFF_BITS;
    v[2 * *n + 1] = (slot & off_mask) + shift;
    (*n)++;
  }
}

/* The segment of a's entries then b's, their items' slots homed by their tags (no value
   hashed again, no extraction), or NULL: no memory, or more slots than the tags can home. */
static log_seg_t *seg_merge(const log_seg_t *a, const log_seg_t *b) {
  const uint64_t nitems = a->items + b->items;
  const size_t len = a->len + b->len;
  if (2 * nitems > (1ull << STOCK_SEG_TAG_BITS) || (uint64_t)len >> STOCK_SEG_OFF_BITS) return NULL;
  uint64_t *v = malloc((nitems ? nitems : 1) * 2 * sizeof *v);
  log_seg_t *s = v ? seg_alloc(a->n + b->n, len, nitems, a->seed) : NULL;
  size_t n = 0;
  if (s) {
    memcpy(s->data, a->data, a->len);
    memcpy(s->data + a->len, b->data, b->len);
    items_of(a, 0, v, &n);
    items_of(b, a->len, v, &n);
    if (slots_build(s, v, n) != BFH_OK) {
      free(s);
      s = NULL;
    }
  }
  free(v);
  return s;
}

void stock_segs_merge_tail(stock_segs_t *l) {
  while (l->n >= 2) {
    log_seg_t *a = l->v[l->n - 2], *b = l->v[l->n - 1];
    if (a->items > b->items || a->items + b->items > STOCK_SEG_MERGE_ITEMS || a->seed != b->seed)
      return;
    log_seg_t *m = seg_merge(a, b);
    if (!m) return; /* left as they are: slower to search, as right */
    stock_seg_unref(a);
    stock_seg_unref(b);
    l->v[l->n - 2] = m;
    l->n--;
  }
}

/* Calls fn for the entries of s whose value passes test; returns nonzero if fn stopped. */
static int seg_scan(const log_seg_t *s, const engine_value_test_t *test, engine_match_fn fn,
                    void *arg, engine_scan_stats_t *st) {
  const uint8_t *p = s->data, *end = s->data + s->len;
  if (st) st->entries += s->n;
  while (p < end) {
    const uint8_t *k, *v;
    uint32_t kl = 0, vl = 0;
    uint64_t seq = 0;
    p = stock_seg_entry_decode(p, end, &seq, &k, &kl, &v, &vl);
    if (engine_value_test_passes(test, 1, v, vl) && fn(arg, k, kl, seq)) return 1;
  }
  return 0;
}

void stock_segs_scan(log_seg_t *const *segs, size_t n, const engine_value_test_t *test,
                     engine_match_fn fn, void *arg, engine_scan_stats_t *st) {
  for (size_t i = 0; i < n; i++)
    if (seg_scan(segs[i], test, fn, arg, st)) return;
}

/* seg_scan through s's index, h being an item hash every passing value is indexed under.
   Entries of one item share their home slot and were inserted in entry order with no
   deletion since, so linear probing meets them in entry order: the order of seg_scan. */
static int seg_lookup(const log_seg_t *s, uint64_t h, const engine_value_test_t *test,
                      engine_match_fn fn, void *arg, engine_scan_stats_t *st) {
  const uint8_t *end = s->data + s->len;
  const uint64_t tag = slot_tag(h), off_mask = (1ull << STOCK_SEG_OFF_BITS) - 1;
  for (size_t i = slot_home(s, tag, h); s->slots[i]; i = (i + 1) & s->slot_mask) {
    if (s->slots[i] >> STOCK_SEG_OFF_BITS != tag) continue;
    const uint8_t *k, *v;
    uint32_t kl = 0, vl = 0;
    uint64_t seq = 0;
    stock_seg_entry_decode(s->data + (s->slots[i] & off_mask), end, &seq, &k, &kl, &v, &vl);
    if (st) st->entries++;
    if (engine_value_test_passes(test, 1, v, vl) && fn(arg, k, kl, seq)) return 1;
  }
  return 0;
}

uint64_t stock_segs_index_bytes(log_seg_t *const *segs, size_t n) {
  uint64_t bytes = 0;
  for (size_t i = 0; i < n; i++)
    if (segs[i]) bytes += (uint64_t)(segs[i]->slot_mask + 1) * sizeof *segs[i]->slots;
  return bytes;
}

void stock_segs_find(log_seg_t *const *segs, size_t n, const engine_value_test_t *test,
                     uint64_t seed, uint64_t hash, engine_match_fn fn, void *arg,
                     engine_scan_stats_t *st) {
  for (size_t i = 0; i < n; i++) {
    int stopped;
    if (segs[i]->seed == seed)
      stopped = seg_lookup(segs[i], hash, test, fn, arg, st);
    else if (!test->match)
      stopped = seg_lookup(segs[i], bfh_value_hash(test->val, test->val_len, segs[i]->seed), test,
                           fn, arg, st);
    else
      stopped = seg_scan(segs[i], test, fn, arg, st);
    if (stopped) return;
  }
}

const value_terms_t *stock_value_terms(const index_sync_t *sync) {
  return index_sync_terms(sync);
}

uint64_t stock_value_seed(const index_sync_t *sync) {
  return sync ? index_sync_params(sync)->seed : STOCK_SEG_HASH_SEED;
}

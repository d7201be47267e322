/* The memtable: a lock-free-read skiplist over internal keys (lsm/memtable.h).
 *
 * A node holds the user key length, value length, tag (seq << 8 | type) and a pointer to
 * its payload (user key | fixed64 tag | value, so an iterator can hand out the encoded
 * internal key without copying), then `height` atomic next pointers, then the payload
 * itself (one arena allocation). Nothing is freed before the memtable.
 *
 * The value index, when the memtable has one: a fixed array of buckets, each the newest link
 * of a chain of links of value entries whose item hash falls in that bucket. A value is
 * indexed under its item hashes (filters/value_terms.h): its whole value's hash without
 * declared attributes, one per distinct (attribute, term) with them. A value entry of an
 * indexed memtable is allocated with one value_link_t per item right before its node (the
 * chain link, 32 bits of the item hash and the distance to the node), so the index costs
 * nothing on memtables without it and nothing on deletions. An insert fills the node and its
 * links, then publishes each link as its bucket's head with a release store (readers load
 * heads and links with acquire), the same way a skiplist insert publishes: a reader sees the
 * old chain or the new one.
 */
#include "lsm/memtable.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "filters/hash.h"
#include "filters/value_terms.h"
#include "lsm/arena.h"
#include "util/random.h"

#define MAX_HEIGHT 12

typedef struct node {
  uint32_t klen, vlen;
  uint64_t tag;
  const uint8_t *data; /* user key | tag | value */
  _Atomic(struct node *) next[];
} node_t;

/* An indexed value entry's node is preceded by one of these per item hash (link i of a
   node at (value_link_t *)node - 1 - i, see node_of). */
typedef struct value_link {
  _Atomic(struct value_link *) next; /* the previous head of the bucket: an older item */
  uint32_t hash_hi;                  /* the item hash's upper bits (the bucket took the lower) */
  uint32_t back;                     /* links from this one to the node: i + 1 */
} value_link_t;

struct memtable {
  arena_t arena;
  node_t *head;
  _Atomic(value_link_t *) *value_buckets; /* NULL: no value index */
  size_t value_mask;                      /* buckets - 1 (a power of two) */
  uint64_t value_seed;                    /* of the value index's hash */
  const value_terms_t *value_terms;       /* its items (borrowed); NULL: the whole value */
  atomic_int max_height;
  atomic_int refs;
  atomic_uint_fast64_t entries;
  atomic_size_t link_bytes; /* the value links' share of the arena */
  rng_t rng;
};

static node_t *new_node(memtable_t *m, int height) {
  node_t *n = arena_alloc_aligned(&m->arena, sizeof(node_t) + (size_t)height * sizeof n->next[0]);
  if (!n) return NULL;
  for (int i = 0; i < height; i++) atomic_init(&n->next[i], NULL);
  return n;
}

static size_t round_up_pow2(size_t n) {
  size_t p = 1;
  while (p < n) p <<= 1;
  return p;
}

memtable_t *memtable_create_indexed(size_t value_buckets) {
  return memtable_create_indexed_seeded(value_buckets, BFH_DEFAULT_SEED);
}

memtable_t *memtable_create_indexed_seeded(size_t value_buckets, uint64_t seed) {
  return memtable_create_indexed_terms(value_buckets, seed, NULL);
}

memtable_t *memtable_create_indexed_terms(size_t value_buckets, uint64_t seed,
                                          const value_terms_t *terms) {
  if (value_buckets > SIZE_MAX / 2 / sizeof(_Atomic(value_link_t *))) return NULL;
  memtable_t *m = calloc(1, sizeof *m);
  if (!m) return NULL;
  arena_init(&m->arena);
  m->head = new_node(m, MAX_HEIGHT);
  if (value_buckets) {
    value_buckets = round_up_pow2(value_buckets);
    /* calloc: all-zero bits are a NULL atomic pointer on every platform bfh builds on, and
       the pages of a large array are only touched as buckets fill. */
    m->value_buckets = calloc(value_buckets, sizeof *m->value_buckets);
    m->value_mask = value_buckets - 1;
    m->value_seed = seed;
    m->value_terms = terms;
  }
  if (!m->head || (value_buckets && !m->value_buckets)) {
    arena_release(&m->arena);
    free(m->value_buckets);
    free(m);
    return NULL;
  }
  m->head->klen = m->head->vlen = 0;
  m->head->tag = 0;
  m->head->data = NULL;
  atomic_init(&m->max_height, 1);
  atomic_init(&m->refs, 1);
  atomic_init(&m->entries, 0);
  atomic_init(&m->link_bytes, 0);
  rng_init(&m->rng, 0x6d656d7461626c65ull);
  return m;
}

memtable_t *memtable_create(void) {
  return memtable_create_indexed(0);
}

void memtable_ref(memtable_t *m) {
  atomic_fetch_add_explicit(&m->refs, 1, memory_order_relaxed);
}

void memtable_unref(memtable_t *m) {
  if (!m) return;
  if (atomic_fetch_sub_explicit(&m->refs, 1, memory_order_acq_rel) == 1) {
    arena_release(&m->arena);
    free(m->value_buckets);
    free(m);
  }
}

static inline node_t *next_of(const node_t *n, int level) {
  return atomic_load_explicit(&((node_t *)n)->next[level], memory_order_acquire);
}

/* <0 if node n orders before (key, tag); compares user key, then tag descending. */
static inline int node_cmp(const node_t *n, const uint8_t *key, size_t klen, uint64_t tag) {
  int c = bytewise_compare(n->data, n->klen, key, klen);
  if (c) return c;
  return n->tag > tag ? -1 : n->tag < tag ? 1 : 0;
}

/* The first node >= (key, tag); fills prev[level] with the last node before it per level. */
static node_t *find_ge(const memtable_t *m, const uint8_t *key, size_t klen, uint64_t tag,
                       node_t **prev) {
  node_t *x = m->head;
  int level = atomic_load_explicit(&((memtable_t *)m)->max_height, memory_order_relaxed) - 1;
  for (;;) {
    node_t *nx = next_of(x, level);
    if (nx && node_cmp(nx, key, klen, tag) < 0) {
      x = nx;
    } else {
      if (prev) prev[level] = x;
      if (level == 0) return nx;
      level--;
    }
  }
}

/* The index never leaves memory; its seed is the database's value seed, so that a search
   passes down the hash it made once (memtable_scan_value_hashed). */
static uint64_t value_hash(const memtable_t *m, const void *val, size_t vlen) {
  return bfh_value_hash(val, vlen, m->value_seed);
}

static inline node_t *node_of(const value_link_t *l) {
  return (node_t *)(l + l->back);
}

/* Makes link l (of a value entry, fully initialized but for next) the head of the bucket of
   hash. REQUIRES: the single writer. */
static void index_value(memtable_t *m, value_link_t *l, uint64_t hash) {
  _Atomic(value_link_t *) *bucket = &m->value_buckets[hash & m->value_mask];
  l->hash_hi = (uint32_t)(hash >> 32);
  atomic_init(&l->next, atomic_load_explicit(bucket, memory_order_relaxed));
  atomic_store_explicit(bucket, l, memory_order_release);
}

/* A value's item hashes, gathered before its node is allocated (one link per item). */
#define STACK_ITEMS 16
typedef struct items {
  uint64_t *h; /* stack, or heap once it overflowed */
  size_t n, cap;
  int nomem;
  uint64_t stack[STACK_ITEMS];
} items_t;

static void add_item(void *arg, uint64_t hash) {
  items_t *it = arg;
  if (it->nomem) return;
  if (it->n == it->cap) {
    size_t cap = it->cap * 2;
    uint64_t *h = it->h == it->stack ? malloc(cap * sizeof *h) : realloc(it->h, cap * sizeof *h);
    if (!h) {
      it->nomem = 1;
      return;
    }
    if (it->h == it->stack) memcpy(h, it->stack, sizeof it->stack);
    it->h = h;
    it->cap = cap;
  }
  it->h[it->n++] = hash;
}

static int random_height(memtable_t *m) {
  int h = 1;
  while (h < MAX_HEIGHT && (rng_next(&m->rng) & 3) == 0) h++;
  return h;
}

int memtable_add(memtable_t *m, uint64_t seq, int type, const void *key, size_t klen,
                 const void *val, size_t vlen) {
  if (klen > UINT32_MAX || vlen > UINT32_MAX) return ST_E_INVALID;
  if (type == LSM_TYPE_DELETION) vlen = 0;
  /* The items first: their number sizes the allocation, and a value is never inserted
     without them (an extraction out of memory fails the add before anything is linked). */
  items_t items;
  items.h = items.stack;
  items.n = 0;
  items.cap = STACK_ITEMS;
  items.nomem = 0;
  int indexed = m->value_buckets && type == LSM_TYPE_VALUE;
  if (indexed) {
    int rc = value_terms_hash(m->value_terms, val, vlen, m->value_seed, VALUE_TERMS_COUNT, add_item,
                              &items);
    if (rc < 0 || items.nomem) {
      if (items.h != items.stack) free(items.h);
      return ST_E_NOMEM;
    }
  }
  uint64_t tag = internal_key_tag(seq, type);
  node_t *prev[MAX_HEIGHT];
  find_ge(m, key, klen, tag, prev);
  int height = random_height(m);
  int maxh = atomic_load_explicit(&m->max_height, memory_order_relaxed);
  /* One allocation: the value links (one per item of an indexed value entry), the node, its
     next pointers, then the payload right after them, so a search touches one cache line per
     node where the key is short. */
  size_t vlink = items.n * sizeof(value_link_t);
  size_t links = sizeof(node_t) + (size_t)height * sizeof(_Atomic(node_t *));
  uint8_t *block =
      arena_alloc_aligned(&m->arena, vlink + links + klen + INTERNAL_KEY_TAG_BYTES + vlen);
  if (!block) {
    if (items.h != items.stack) free(items.h);
    return ST_E_NOMEM;
  }
  if (height > maxh) {
    for (int i = maxh; i < height; i++) prev[i] = m->head;
    /* Readers seeing the new height before the node find NULL in head's upper levels,
       which is fine. */
    atomic_store_explicit(&m->max_height, height, memory_order_relaxed);
  }
  node_t *n = (node_t *)(block + vlink);
  for (int i = 0; i < height; i++) atomic_init(&n->next[i], NULL);
  uint8_t *data = (uint8_t *)n + links;
  internal_key_encode(data, key, klen, seq, type);
  if (vlen) memcpy(data + klen + INTERNAL_KEY_TAG_BYTES, val, vlen);
  n->klen = (uint32_t)klen;
  n->vlen = (uint32_t)vlen;
  n->tag = tag;
  n->data = data;
  for (int i = 0; i < height; i++) {
    atomic_store_explicit(&n->next[i], next_of(prev[i], i), memory_order_relaxed);
    atomic_store_explicit(&prev[i]->next[i], n, memory_order_release);
  }
  for (size_t i = 0; i < items.n; i++) {
    value_link_t *l = (value_link_t *)n - 1 - i;
    l->back = (uint32_t)(i + 1);
    index_value(m, l, items.h[i]);
  }
  if (items.h != items.stack) free(items.h);
  atomic_fetch_add_explicit(&m->link_bytes, vlink, memory_order_relaxed);
  atomic_fetch_add_explicit(&m->entries, 1, memory_order_relaxed);
  return ST_OK;
}

int memtable_get(const memtable_t *m, const void *key, size_t klen, uint64_t max_seq,
                 lsm_lookup_t *out) {
  node_t *n = find_ge(m, key, klen, internal_key_tag(max_seq, LSM_TYPE_VALUE), NULL);
  if (!n || bytewise_compare(n->data, n->klen, key, klen) != 0) {
    out->state = LSM_LOOKUP_ABSENT;
    out->val = NULL;
    out->val_len = 0;
    out->seq = 0;
    return out->state;
  }
  out->seq = n->tag >> 8;
  if ((n->tag & 0xff) == LSM_TYPE_VALUE) {
    out->state = LSM_LOOKUP_VALUE;
    out->val = n->data + n->klen + INTERNAL_KEY_TAG_BYTES;
    out->val_len = n->vlen;
  } else {
    out->state = LSM_LOOKUP_DELETED;
    out->val = NULL;
    out->val_len = 0;
  }
  return out->state;
}

size_t memtable_value_index_bytes(const memtable_t *m) {
  if (!m->value_buckets) return 0;
  return (m->value_mask + 1) * sizeof *m->value_buckets +
         atomic_load_explicit(&((memtable_t *)m)->link_bytes, memory_order_relaxed);
}

size_t memtable_entry_bytes(const memtable_t *m) {
  return arena_bytes_used(&m->arena) -
         atomic_load_explicit(&((memtable_t *)m)->link_bytes, memory_order_relaxed);
}

size_t memtable_memory_usage(const memtable_t *m) {
  return arena_memory_usage(&m->arena) +
         (m->value_buckets ? (m->value_mask + 1) * sizeof *m->value_buckets : 0);
}

uint64_t memtable_entries(const memtable_t *m) {
  return atomic_load_explicit(&((memtable_t *)m)->entries, memory_order_relaxed);
}

int memtable_scan(const memtable_t *m, lsm_visit_fn fn, void *arg, lsm_scan_stats_t *st) {
  uint64_t entries = 0, bytes = 0;
  for (node_t *n = next_of(m->head, 0); n; n = next_of(n, 0)) {
    entries++;
    bytes += n->klen + n->vlen;
    if (fn(arg, n->data, n->klen, n->data + n->klen + INTERNAL_KEY_TAG_BYTES, n->vlen, n->tag >> 8,
           (int)(n->tag & 0xff)))
      break;
  }
  if (st) {
    st->entries += entries;
    st->bytes_read += bytes;
  }
  return ST_OK;
}

/* (memcmp must not see NULL, even for 0 bytes: an empty value may be NULL.) */
static int same_value(const void *a, size_t an, const void *b, size_t bn) {
  return an == bn && (an == 0 || memcmp(a, b, an) == 0);
}

typedef struct value_filter {
  const void *val;
  size_t vlen;
  lsm_visit_fn fn;
  void *arg;
} value_filter_t;

static int visit_if_value(void *arg, const void *key, size_t klen, const void *val, size_t vlen,
                          uint64_t seq, int type) {
  value_filter_t *f = arg;
  if (type != LSM_TYPE_VALUE || !same_value(val, vlen, f->val, f->vlen)) return 0;
  return f->fn(f->arg, key, klen, val, vlen, seq, type);
}

int memtable_scan_value(const memtable_t *m, const void *val, size_t vlen, lsm_visit_fn fn,
                        void *arg, lsm_scan_stats_t *st) {
  return memtable_scan_value_hashed(m, val, vlen, m->value_buckets ? value_hash(m, val, vlen) : 0,
                                    fn, arg, st);
}

/* The value entries of hash's bucket whose hash agrees in 32 more bits and, when by_value, whose
   value is val: what memtable_scan_value_hashed and memtable_scan_hash visit. */
static int scan_bucket(const memtable_t *m, uint64_t hash, int by_value, const void *val,
                       size_t vlen, lsm_visit_fn fn, void *arg, lsm_scan_stats_t *st) {
  uint64_t entries = 0, bytes = 0;
  uint32_t hash_hi = (uint32_t)(hash >> 32);
  value_link_t *l =
      atomic_load_explicit(&m->value_buckets[hash & m->value_mask], memory_order_acquire);
  for (; l; l = atomic_load_explicit(&l->next, memory_order_acquire)) {
    entries++;
    if (l->hash_hi != hash_hi) continue;
    const node_t *n = node_of(l);
    const uint8_t *nval = n->data + n->klen + INTERNAL_KEY_TAG_BYTES;
    if (by_value && !same_value(nval, n->vlen, val, vlen)) continue;
    bytes += n->klen + n->vlen;
    if (fn(arg, n->data, n->klen, nval, n->vlen, n->tag >> 8, LSM_TYPE_VALUE)) break;
  }
  if (st) {
    st->entries += entries;
    st->bytes_read += bytes;
  }
  return ST_OK;
}

int memtable_scan_value_hashed(const memtable_t *m, const void *val, size_t vlen, uint64_t hash,
                               lsm_visit_fn fn, void *arg, lsm_scan_stats_t *st) {
  if (!m->value_buckets) {
    value_filter_t f = {val, vlen, fn, arg};
    return memtable_scan(m, visit_if_value, &f, st);
  }
  return scan_bucket(m, hash, 1, val, vlen, fn, arg, st);
}

int memtable_scan_hash(const memtable_t *m, uint64_t hash, lsm_visit_fn fn, void *arg,
                       lsm_scan_stats_t *st) {
  if (!m->value_buckets) return ST_E_INVALID;
  return scan_bucket(m, hash, 0, NULL, 0, fn, arg, st);
}

/* ---- Iterator -------------------------------------------------------------------------- */

typedef struct mem_iter {
  iterator_t base;
  memtable_t *m;
  node_t *cur;
} mem_iter_t;

static void mi_seek_first(iterator_t *it) {
  mem_iter_t *mi = (mem_iter_t *)it;
  mi->cur = next_of(mi->m->head, 0);
}

static void mi_seek(iterator_t *it, const void *target, size_t n) {
  mem_iter_t *mi = (mem_iter_t *)it;
  internal_key_parts_t k;
  if (n < INTERNAL_KEY_TAG_BYTES) {
    mi->cur = find_ge(mi->m, target, n, UINT64_MAX, NULL);
    return;
  }
  k.user_key = target;
  k.user_len = n - INTERNAL_KEY_TAG_BYTES;
  uint64_t tag = decode_fixed64((const uint8_t *)target + k.user_len);
  mi->cur = find_ge(mi->m, k.user_key, k.user_len, tag, NULL);
}

static int mi_valid(const iterator_t *it) {
  return ((const mem_iter_t *)it)->cur != NULL;
}

static void mi_next(iterator_t *it) {
  mem_iter_t *mi = (mem_iter_t *)it;
  mi->cur = next_of(mi->cur, 0);
}

static const void *mi_key(const iterator_t *it, size_t *n) {
  const node_t *c = ((const mem_iter_t *)it)->cur;
  *n = c->klen + INTERNAL_KEY_TAG_BYTES;
  return c->data;
}

static const void *mi_value(const iterator_t *it, size_t *n) {
  const node_t *c = ((const mem_iter_t *)it)->cur;
  *n = c->vlen;
  return c->data + c->klen + INTERNAL_KEY_TAG_BYTES;
}

static int mi_status(const iterator_t *it, err_t *err) {
  (void)it;
  err_clear(err);
  return ST_OK;
}

static void mi_destroy(iterator_t *it) {
  mem_iter_t *mi = (mem_iter_t *)it;
  memtable_unref(mi->m);
  free(mi);
}

static const iterator_ops_t mem_iter_ops = {mi_seek_first, mi_seek,  mi_valid,  mi_next,
                                            mi_key,        mi_value, mi_status, mi_destroy};

iterator_t *memtable_iterator_create(memtable_t *m) {
  mem_iter_t *mi = calloc(1, sizeof *mi);
  if (!mi) return NULL;
  mi->base.ops = &mem_iter_ops;
  memtable_ref(m);
  mi->m = m;
  mi->cur = NULL;
  return &mi->base;
}

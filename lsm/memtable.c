/* The memtable: a lock-free-read skiplist over internal keys (lsm/memtable.h).
 *
 * A node holds the user key length, value length, tag (seq << 8 | type) and a pointer to
 * its payload (user key | fixed64 tag | value, so an iterator can hand out the encoded
 * internal key without copying), then `height` atomic next pointers, then the payload
 * itself (one arena allocation). Nothing is freed before the memtable.
 */
#include "lsm/memtable.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "lsm/arena.h"
#include "util/random.h"

#define MAX_HEIGHT 12

typedef struct node {
  uint32_t klen, vlen;
  uint64_t tag;
  const uint8_t *data; /* user key | tag | value */
  _Atomic(struct node *) next[];
} node_t;

struct memtable {
  arena_t arena;
  node_t *head;
  atomic_int max_height;
  atomic_int refs;
  atomic_uint_fast64_t entries;
  rng_t rng;
};

static node_t *new_node(memtable_t *m, int height) {
  node_t *n = arena_alloc_aligned(&m->arena, sizeof(node_t) + (size_t)height * sizeof n->next[0]);
  if (!n) return NULL;
  for (int i = 0; i < height; i++) atomic_init(&n->next[i], NULL);
  return n;
}

memtable_t *memtable_create(void) {
  memtable_t *m = calloc(1, sizeof *m);
  if (!m) return NULL;
  arena_init(&m->arena);
  m->head = new_node(m, MAX_HEIGHT);
  if (!m->head) {
    arena_release(&m->arena);
    free(m);
    return NULL;
  }
  m->head->klen = m->head->vlen = 0;
  m->head->tag = 0;
  m->head->data = NULL;
  atomic_init(&m->max_height, 1);
  atomic_init(&m->refs, 1);
  atomic_init(&m->entries, 0);
  rng_init(&m->rng, 0x6d656d7461626c65ull);
  return m;
}

void memtable_ref(memtable_t *m) {
  atomic_fetch_add_explicit(&m->refs, 1, memory_order_relaxed);
}

void memtable_unref(memtable_t *m) {
  if (!m) return;
  if (atomic_fetch_sub_explicit(&m->refs, 1, memory_order_acq_rel) == 1) {
    arena_release(&m->arena);
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

static int random_height(memtable_t *m) {
  int h = 1;
  while (h < MAX_HEIGHT && (rng_next(&m->rng) & 3) == 0) h++;
  return h;
}

int memtable_add(memtable_t *m, uint64_t seq, int type, const void *key, size_t klen,
                 const void *val, size_t vlen) {
  if (klen > UINT32_MAX || vlen > UINT32_MAX) return ST_E_INVALID;
  if (type == LSM_TYPE_DELETION) vlen = 0;
  uint64_t tag = internal_key_tag(seq, type);
  node_t *prev[MAX_HEIGHT];
  find_ge(m, key, klen, tag, prev);
  int height = random_height(m);
  int maxh = atomic_load_explicit(&m->max_height, memory_order_relaxed);
  if (height > maxh) {
    for (int i = maxh; i < height; i++) prev[i] = m->head;
    /* Readers seeing the new height before the node find NULL in head's upper levels,
       which is fine. */
    atomic_store_explicit(&m->max_height, height, memory_order_relaxed);
  }
  /* One allocation: the node, its next pointers, then the payload right after them, so a
     search touches one cache line per node where the key is short. */
  size_t links = sizeof(node_t) + (size_t)height * sizeof(_Atomic(node_t *));
  node_t *n = arena_alloc_aligned(&m->arena, links + klen + INTERNAL_KEY_TAG_BYTES + vlen);
  if (!n) return ST_E_NOMEM;
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

size_t memtable_memory_usage(const memtable_t *m) {
  return arena_memory_usage(&m->arena);
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

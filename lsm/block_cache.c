/* The block cache: sharded CLOCK over verified block copies, indexed by open addressing
 * (block_cache.h). */
#include "lsm/block_cache.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

typedef struct block_cache_entry entry_t;

/* A place in a shard's queue: an entry's first member, so a link is its entry; the shard's
   sentinel is a link alone. */
typedef struct lru_link {
  struct lru_link *prev, *next;
} lru_link_t;

/* An entry holds one reference while it is in the cache (index and queue) and one per pin;
   the last to drop frees it. An entry from block_cache_alloc holds its reader's reference
   only, and is in neither until published. */
struct block_cache_entry {
  lru_link_t lru; /* first: the shard's queue, head the newest */
  uint64_t id, offset;
  uint64_t hash;  /* mix(id, offset) */
  size_t n;       /* the block's bytes */
  size_t cap;     /* bytes allocated at data */
  _Atomic uint32_t refs;
  uint8_t referenced; /* hit since the clock last passed it (under the shard's mutex) */
  uint8_t data[];
};

/* A slot of the index: e NULL when free; hash is e->hash, kept here so that a probe reads
   no entry whose hash differs. */
typedef struct slot {
  uint64_t hash;
  entry_t *e;
} slot_t;

typedef struct shard {
  pthread_mutex_t mu;
  slot_t *slots;
  size_t nslots; /* a power of two, at least twice entries */
  size_t entries;
  size_t charge, capacity;
  lru_link_t lru; /* sentinel: lru.next the newest, lru.prev the oldest (the clock hand) */
  entry_t *spare[BLOCK_CACHE_SPARES]; /* evicted, unpinned: reused by block_cache_alloc */
  size_t nspare;
  uint64_t hits, misses, inserts, evictions, reused;
} shard_t;

struct block_cache {
  shard_t shards[BLOCK_CACHE_SHARDS];
  _Atomic uint64_t next_id;
  size_t capacity;
};

static uint64_t mix(uint64_t id, uint64_t offset) {
  uint64_t h = id * 0x9e3779b97f4a7c15ull ^ offset;
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdull;
  h ^= h >> 33;
  return h;
}

static unsigned shard_index(uint64_t h) {
  return (unsigned)(h >> 60) & (BLOCK_CACHE_SHARDS - 1);
}

static shard_t *shard_of(block_cache_t *c, uint64_t h) {
  return &c->shards[shard_index(h)];
}

unsigned block_cache_shard(uint64_t id, uint64_t offset) {
  return shard_index(mix(id, offset));
}

/* The slot holding (id, offset), or the free slot where it would go. */
static size_t find(const shard_t *s, uint64_t h, uint64_t id, uint64_t offset) {
  size_t mask = s->nslots - 1, i = h & mask;
  for (;; i = (i + 1) & mask) {
    const slot_t *sl = &s->slots[i];
    if (!sl->e || (sl->hash == h && sl->e->id == id && sl->e->offset == offset)) return i;
  }
}

/* Empties slot i, moving back the entries after it that probed past it (no tombstones). */
static void slot_clear(shard_t *s, size_t i) {
  size_t mask = s->nslots - 1;
  for (size_t j = i;;) {
    s->slots[i].e = NULL;
    for (;;) {
      j = (j + 1) & mask;
      if (!s->slots[j].e) return;
      size_t home = s->slots[j].hash & mask;
      /* j's entry may move to i unless its home lies cyclically in (i, j] */
      int stays = i <= j ? (i < home && home <= j) : (i < home || home <= j);
      if (!stays) break;
    }
    s->slots[i] = s->slots[j];
    i = j;
  }
}

static void lru_unlink(entry_t *e) {
  e->lru.prev->next = e->lru.next;
  e->lru.next->prev = e->lru.prev;
}

static void lru_push_front(shard_t *s, entry_t *e) {
  e->lru.next = s->lru.next;
  e->lru.prev = &s->lru;
  s->lru.next->prev = &e->lru;
  s->lru.next = &e->lru;
}

static void unref(entry_t *e) {
  if (atomic_fetch_sub_explicit(&e->refs, 1, memory_order_acq_rel) == 1) free(e);
}

block_cache_t *block_cache_create(size_t capacity) {
  block_cache_t *c = calloc(1, sizeof *c);
  if (!c) return NULL;
  c->capacity = capacity;
  for (int i = 0; i < BLOCK_CACHE_SHARDS; i++) {
    shard_t *s = &c->shards[i];
    pthread_mutex_init(&s->mu, NULL);
    s->capacity = capacity / BLOCK_CACHE_SHARDS;
    s->lru.next = s->lru.prev = &s->lru;
    s->nslots = 64;
    if (!(s->slots = calloc(s->nslots, sizeof *s->slots))) {
      block_cache_destroy(c);
      return NULL;
    }
  }
  return c;
}

void block_cache_destroy(block_cache_t *c) {
  if (!c) return;
  for (int i = 0; i < BLOCK_CACHE_SHARDS; i++) {
    shard_t *s = &c->shards[i];
    if (s->lru.next)
      for (lru_link_t *l = s->lru.next, *next; l != &s->lru; l = next) {
        next = l->next;
        unref((entry_t *)l); /* a block still pinned lives until its release */
      }
    for (size_t j = 0; j < s->nspare; j++) free(s->spare[j]);
    free(s->slots);
    pthread_mutex_destroy(&s->mu);
  }
  free(c);
}

uint64_t block_cache_new_id(block_cache_t *c) {
  return atomic_fetch_add_explicit(&c->next_id, 1, memory_order_relaxed) + 1;
}

/* The entry for (id, offset), pinned, when held and (n not SIZE_MAX) n bytes long; counted. */
static entry_t *pin_entry(block_cache_t *c, uint64_t id, uint64_t offset, size_t n) {
  uint64_t hash = mix(id, offset);
  shard_t *s = shard_of(c, hash);
  pthread_mutex_lock(&s->mu);
  /* find()'s probe, with the block's line asked for before its entry is read: a reader's
     first touch of a block is its restart count, in its last 4 bytes, and the address
     follows from the slot alone, so the two memory reads overlap. */
  entry_t *e;
  for (size_t mask = s->nslots - 1, i = hash & mask;; i = (i + 1) & mask) {
    e = s->slots[i].e;
    if (!e) break;
    if (s->slots[i].hash != hash) continue;
    if (n >= 4 && n != SIZE_MAX) __builtin_prefetch(e->data + n - 4);
    if (e->id == id && e->offset == offset) break;
  }
  if (e && (e->n == n || n == SIZE_MAX)) {
    atomic_fetch_add_explicit(&e->refs, 1, memory_order_relaxed);
    e->referenced = 1;
    s->hits++;
  } else {
    e = NULL;
    s->misses++;
  }
  pthread_mutex_unlock(&s->mu);
  return e;
}

const uint8_t *block_cache_pin(block_cache_t *c, uint64_t id, uint64_t offset, size_t n,
                               block_cache_handle_t **h) {
  entry_t *e = pin_entry(c, id, offset, n);
  *h = e;
  return e ? e->data : NULL;
}

const uint8_t *block_cache_use_pin(const block_cache_use_t *use, uint64_t offset, size_t *n,
                                   block_cache_handle_t **h) {
  if (!use || !use->cache) return NULL;
  entry_t *e = pin_entry(use->cache, use->id, offset, SIZE_MAX);
  *h = e;
  *n = e ? e->n : 0;
  return e ? e->data : NULL;
}

void block_cache_use_keep(const block_cache_use_t *use, uint64_t offset, const void *data,
                          size_t n) {
  if (!use || !use->cache || !use->fill || *use->fill < n) return;
  block_cache_insert(use->cache, use->id, offset, data, n);
  *use->fill -= n;
}

void block_cache_release(block_cache_handle_t *h) {
  unref(h);
}

/* Doubles the shard's index (keeping the old one on no memory: publish then keeps a free
   slot, which every probe needs to end, by not publishing). */
static void grow(shard_t *s) {
  size_t n = s->nslots * 2, mask = n - 1;
  slot_t *b = calloc(n, sizeof *b);
  if (!b) return;
  for (size_t i = 0; i < s->nslots; i++) {
    if (!s->slots[i].e) continue;
    size_t j = s->slots[i].hash & mask;
    while (b[j].e) j = (j + 1) & mask;
    b[j] = s->slots[i];
  }
  free(s->slots);
  s->slots = b;
  s->nslots = n;
}

/* Drops the entry the clock hand stops at: the oldest not referenced since the hand last
   passed it (a referenced one is unmarked and requeued as the newest). Kept as a spare when
   nobody pins it and the shard has room for one, else unreferenced. */
static void evict_one(shard_t *s) {
  entry_t *e;
  while ((e = (entry_t *)s->lru.prev)->referenced) {
    e->referenced = 0;
    lru_unlink(e);
    lru_push_front(s, e);
  }
  lru_unlink(e);
  slot_clear(s, find(s, e->hash, e->id, e->offset));
  s->entries--;
  s->charge -= e->cap + BLOCK_CACHE_ENTRY_BYTES;
  s->evictions++;
  /* refs 1: only the cache holds it, and no one can pin it any more (that takes this mutex
     and the index), so it is the shard's to reuse. */
  if (s->nspare < BLOCK_CACHE_SPARES && atomic_load_explicit(&e->refs, memory_order_acquire) == 1)
    s->spare[s->nspare++] = e;
  else
    unref(e);
}

static size_t round_cap(size_t n) {
  return (n + BLOCK_CACHE_ROUND - 1) / BLOCK_CACHE_ROUND * BLOCK_CACHE_ROUND;
}

block_cache_handle_t *block_cache_alloc(block_cache_t *c, uint64_t id, uint64_t offset,
                                        size_t cap) {
  uint64_t h = mix(id, offset);
  shard_t *s = shard_of(c, h);
  entry_t *e = NULL;
  pthread_mutex_lock(&s->mu);
  for (size_t j = s->nspare; j-- > 0;)
    if (s->spare[j]->cap >= cap) {
      e = s->spare[j];
      s->spare[j] = s->spare[--s->nspare];
      s->reused++;
      break;
    }
  pthread_mutex_unlock(&s->mu);
  if (!e) {
    size_t r = round_cap(cap ? cap : 1);
    if (!(e = malloc(sizeof *e + r))) return NULL;
    e->cap = r;
  }
  e->id = id;
  e->offset = offset;
  e->hash = h;
  e->n = 0;
  e->referenced = 0;
  e->lru.prev = e->lru.next = NULL;
  atomic_init(&e->refs, 1); /* the reader's */
  return e;
}

uint8_t *block_cache_data(block_cache_handle_t *h) {
  return h->data;
}

void block_cache_publish(block_cache_t *c, block_cache_handle_t *e, size_t n) {
  shard_t *s = shard_of(c, e->hash);
  size_t charge = e->cap + BLOCK_CACHE_ENTRY_BYTES;
  e->n = n;
  if (charge > s->capacity || n > e->cap) return; /* stays the caller's alone */
  pthread_mutex_lock(&s->mu);
  if (s->slots[find(s, e->hash, e->id, e->offset)].e) { /* another reader put it there first */
    pthread_mutex_unlock(&s->mu);
    return;
  }
  while (s->charge + charge > s->capacity) evict_one(s);
  if (2 * (s->entries + 1) > s->nslots) grow(s);
  if (s->entries + 2 > s->nslots) { /* could not grow, and no free slot would remain */
    pthread_mutex_unlock(&s->mu);
    return;
  }
  size_t i = find(s, e->hash, e->id, e->offset); /* after evictions and growth moved slots */
  s->slots[i] = (slot_t){e->hash, e};
  atomic_fetch_add_explicit(&e->refs, 1, memory_order_relaxed); /* the cache's */
  lru_push_front(s, e);
  s->entries++;
  s->charge += charge;
  s->inserts++;
  pthread_mutex_unlock(&s->mu);
}

void block_cache_insert(block_cache_t *c, uint64_t id, uint64_t offset, const void *data,
                        size_t n) {
  uint64_t h = mix(id, offset);
  if (round_cap(n ? n : 1) + BLOCK_CACHE_ENTRY_BYTES > shard_of(c, h)->capacity) return;
  entry_t *e = block_cache_alloc(c, id, offset, n);
  if (!e) return;
  memcpy(e->data, data, n);
  block_cache_publish(c, e, n);
  block_cache_release(e);
}

size_t block_cache_capacity(const block_cache_t *c) {
  return c ? c->capacity : 0;
}

void block_cache_get_stats(block_cache_t *c, block_cache_stats_t *st) {
  memset(st, 0, sizeof *st);
  if (!c) return;
  st->capacity = c->capacity;
  for (int i = 0; i < BLOCK_CACHE_SHARDS; i++) {
    shard_t *s = &c->shards[i];
    pthread_mutex_lock(&s->mu);
    st->hits += s->hits;
    st->misses += s->misses;
    st->inserts += s->inserts;
    st->evictions += s->evictions;
    st->entries += s->entries;
    st->bytes += s->charge;
    st->reused += s->reused;
    for (size_t j = 0; j < s->nspare; j++) st->spare_bytes += s->spare[j]->cap;
    pthread_mutex_unlock(&s->mu);
  }
}

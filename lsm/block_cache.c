/* The block cache: sharded LRU of verified block copies (block_cache.h). */
#include "lsm/block_cache.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

typedef struct block_cache_entry entry_t;

/* An entry holds one reference while it is in the cache (index and LRU list) and one per pin;
   the last to drop frees it. */
struct block_cache_entry {
  uint64_t id, offset;
  size_t n;
  _Atomic uint32_t refs;
  entry_t *next_hash;           /* chain of its bucket */
  entry_t *prev_lru, *next_lru; /* the shard's LRU list: head most recently used */
  uint8_t data[];
};

typedef struct shard {
  pthread_mutex_t mu;
  entry_t **buckets;
  size_t nbuckets; /* a power of two */
  size_t entries;
  size_t charge, capacity;
  entry_t lru; /* sentinel: lru.next_lru the most recent, lru.prev_lru the least */
  uint64_t hits, misses, inserts, evictions;
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

static shard_t *shard_of(block_cache_t *c, uint64_t h) {
  return &c->shards[h >> 60 & (BLOCK_CACHE_SHARDS - 1)];
}

static entry_t **slot(shard_t *s, uint64_t h, uint64_t id, uint64_t offset) {
  entry_t **p = &s->buckets[h & (s->nbuckets - 1)];
  while (*p && ((*p)->id != id || (*p)->offset != offset)) p = &(*p)->next_hash;
  return p;
}

static void lru_unlink(entry_t *e) {
  e->prev_lru->next_lru = e->next_lru;
  e->next_lru->prev_lru = e->prev_lru;
}

static void unref(entry_t *e) {
  if (atomic_fetch_sub_explicit(&e->refs, 1, memory_order_acq_rel) == 1) free(e);
}

static void lru_push_front(shard_t *s, entry_t *e) {
  e->next_lru = s->lru.next_lru;
  e->prev_lru = &s->lru;
  s->lru.next_lru->prev_lru = e;
  s->lru.next_lru = e;
}

block_cache_t *block_cache_create(size_t capacity) {
  block_cache_t *c = calloc(1, sizeof *c);
  if (!c) return NULL;
  c->capacity = capacity;
  for (int i = 0; i < BLOCK_CACHE_SHARDS; i++) {
    shard_t *s = &c->shards[i];
    pthread_mutex_init(&s->mu, NULL);
    s->capacity = capacity / BLOCK_CACHE_SHARDS;
    s->lru.next_lru = s->lru.prev_lru = &s->lru;
    s->nbuckets = 64;
    if (!(s->buckets = calloc(s->nbuckets, sizeof *s->buckets))) {
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
    if (s->lru.next_lru)
      for (entry_t *e = s->lru.next_lru, *next; e != &s->lru; e = next) {
        next = e->next_lru;
        unref(e); /* a block still pinned lives until its release */
      }
    free(s->buckets);
    pthread_mutex_destroy(&s->mu);
  }
  free(c);
}

uint64_t block_cache_new_id(block_cache_t *c) {
  return atomic_fetch_add_explicit(&c->next_id, 1, memory_order_relaxed) + 1;
}

const uint8_t *block_cache_pin(block_cache_t *c, uint64_t id, uint64_t offset, size_t n,
                               block_cache_handle_t **h) {
  uint64_t hash = mix(id, offset);
  shard_t *s = shard_of(c, hash);
  pthread_mutex_lock(&s->mu);
  entry_t *e = *slot(s, hash, id, offset);
  if (e && e->n == n) {
    atomic_fetch_add_explicit(&e->refs, 1, memory_order_relaxed);
    lru_unlink(e);
    lru_push_front(s, e);
    s->hits++;
  } else {
    e = NULL;
    s->misses++;
  }
  pthread_mutex_unlock(&s->mu);
  *h = e;
  return e ? e->data : NULL;
}

void block_cache_release(block_cache_handle_t *h) {
  unref(h);
}

/* Doubles the shard's buckets (keeping the old ones on no memory: chains grow longer). */
static void grow(shard_t *s) {
  size_t n = s->nbuckets * 2;
  entry_t **b = calloc(n, sizeof *b);
  if (!b) return;
  for (size_t i = 0; i < s->nbuckets; i++)
    for (entry_t *e = s->buckets[i], *next; e; e = next) {
      next = e->next_hash;
      entry_t **p = &b[mix(e->id, e->offset) & (n - 1)];
      e->next_hash = *p;
      *p = e;
    }
  free(s->buckets);
  s->buckets = b;
  s->nbuckets = n;
}

/* Drops the least recently used entry of s. */
static void evict_one(shard_t *s) {
  entry_t *e = s->lru.prev_lru;
  lru_unlink(e);
  *slot(s, mix(e->id, e->offset), e->id, e->offset) = e->next_hash;
  s->entries--;
  s->charge -= e->n + BLOCK_CACHE_ENTRY_BYTES;
  s->evictions++;
  unref(e);
}

void block_cache_insert(block_cache_t *c, uint64_t id, uint64_t offset, const void *data,
                        size_t n) {
  uint64_t h = mix(id, offset);
  shard_t *s = shard_of(c, h);
  size_t charge = n + BLOCK_CACHE_ENTRY_BYTES;
  if (charge > s->capacity) return;
  entry_t *e = malloc(sizeof *e + n); /* outside the lock */
  if (!e) return;
  e->id = id;
  e->offset = offset;
  e->n = n;
  atomic_init(&e->refs, 1);
  memcpy(e->data, data, n);
  pthread_mutex_lock(&s->mu);
  entry_t **p = slot(s, h, id, offset);
  if (*p) { /* another reader put it there first */
    pthread_mutex_unlock(&s->mu);
    free(e);
    return;
  }
  while (s->charge + charge > s->capacity) evict_one(s);
  p = slot(s, h, id, offset); /* evictions may have unlinked entries of its chain */
  e->next_hash = *p;
  *p = e;
  lru_push_front(s, e);
  s->entries++;
  s->charge += charge;
  s->inserts++;
  if (s->entries > s->nbuckets) grow(s);
  pthread_mutex_unlock(&s->mu);
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
    pthread_mutex_unlock(&s->mu);
  }
}

/* Table cache: open table readers by file number with LRU eviction (lsm/table_cache.h).
 * One mutex guards a chained hash table and a doubly linked LRU list (head = most
 * recently used). Tables are opened outside the lock; if two threads race to open the
 * same table, the first insert wins and the other copy is dropped. */
#include "lsm/table_cache.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

typedef struct entry {
  uint64_t number;
  table_t *table; /* the cache's reference */
  struct entry *hnext;
  struct entry *prev, *next; /* LRU */
} entry_t;

struct table_cache {
  env_t *io;
  char *dir;
  struct block_cache *blocks; /* given to every table opened (NULL: none) */
  size_t capacity;
  pthread_mutex_t mu;
  entry_t **buckets;
  size_t nbuckets; /* power of two */
  size_t count;
  entry_t lru; /* sentinel */
};

static size_t bucket_of(const table_cache_t *tc, uint64_t number) {
  return (size_t)((number * 0x9e3779b97f4a7c15ull) >> 32) & (tc->nbuckets - 1);
}

table_cache_t *table_cache_create(env_t *io, const char *dir, size_t capacity) {
  table_cache_t *tc = calloc(1, sizeof *tc);
  if (!tc) return NULL;
  tc->io = io;
  tc->capacity = capacity ? capacity : TABLE_CACHE_DEFAULT_CAPACITY;
  tc->nbuckets = 64;
  while (tc->nbuckets < tc->capacity) tc->nbuckets *= 2;
  tc->buckets = calloc(tc->nbuckets, sizeof *tc->buckets);
  tc->dir = strdup(dir);
  if (!tc->buckets || !tc->dir) {
    free(tc->buckets);
    free(tc->dir);
    free(tc);
    return NULL;
  }
  pthread_mutex_init(&tc->mu, NULL);
  tc->lru.prev = tc->lru.next = &tc->lru;
  return tc;
}

static void lru_unlink(entry_t *e) {
  e->prev->next = e->next;
  e->next->prev = e->prev;
}

static void lru_push_front(table_cache_t *tc, entry_t *e) {
  e->next = tc->lru.next;
  e->prev = &tc->lru;
  tc->lru.next->prev = e;
  tc->lru.next = e;
}

static entry_t *lookup(table_cache_t *tc, uint64_t number, entry_t ***slot) {
  entry_t **p = &tc->buckets[bucket_of(tc, number)];
  while (*p && (*p)->number != number) p = &(*p)->hnext;
  if (slot) *slot = p;
  return *p;
}

/* Removes e from hash and LRU; returns its table (the cache's reference). */
static table_t *remove_entry(table_cache_t *tc, entry_t *e) {
  entry_t **slot;
  lookup(tc, e->number, &slot);
  *slot = e->hnext;
  lru_unlink(e);
  tc->count--;
  table_t *t = e->table;
  free(e);
  return t;
}

void table_cache_destroy(table_cache_t *tc) {
  if (!tc) return;
  while (tc->lru.next != &tc->lru) table_unref(remove_entry(tc, tc->lru.next));
  pthread_mutex_destroy(&tc->mu);
  free(tc->buckets);
  free(tc->dir);
  free(tc);
}

int table_cache_get(table_cache_t *tc, uint64_t number, table_t **out, err_t *err) {
  pthread_mutex_lock(&tc->mu);
  entry_t *e = lookup(tc, number, NULL);
  if (e) {
    lru_unlink(e);
    lru_push_front(tc, e);
    table_ref(e->table);
    *out = e->table;
    pthread_mutex_unlock(&tc->mu);
    return ST_OK;
  }
  pthread_mutex_unlock(&tc->mu);

  char *path = table_file_path(tc->dir, number);
  if (!path)
    return err_set(err, ST_E_NOMEM, "table %06llu: no memory for its path",
                   (unsigned long long)number);
  table_t *t;
  int rc = table_open(tc->io, path, number, &t, err);
  free(path);
  if (rc) return rc;
  table_set_block_cache(t, tc->blocks);
  entry_t *ne = malloc(sizeof *ne);
  if (!ne) {
    /* Serve it uncached. */
    *out = t;
    return ST_OK;
  }
  table_t *victim = NULL, *dup = NULL;
  pthread_mutex_lock(&tc->mu);
  entry_t **slot;
  e = lookup(tc, number, &slot);
  if (e) { /* another thread opened it meanwhile */
    dup = t;
    free(ne);
    lru_unlink(e);
    lru_push_front(tc, e);
    t = e->table;
  } else {
    ne->number = number;
    ne->table = t;
    ne->hnext = NULL;
    *slot = ne;
    lru_push_front(tc, ne);
    tc->count++;
    if (tc->count > tc->capacity) victim = remove_entry(tc, tc->lru.prev);
  }
  table_ref(t);
  pthread_mutex_unlock(&tc->mu);
  table_unref(dup);
  table_unref(victim);
  *out = t;
  return ST_OK;
}

void table_cache_evict(table_cache_t *tc, uint64_t number) {
  pthread_mutex_lock(&tc->mu);
  entry_t *e = lookup(tc, number, NULL);
  table_t *t = e ? remove_entry(tc, e) : NULL;
  pthread_mutex_unlock(&tc->mu);
  table_unref(t);
}

size_t table_cache_size(table_cache_t *tc) {
  pthread_mutex_lock(&tc->mu);
  size_t n = tc->count;
  pthread_mutex_unlock(&tc->mu);
  return n;
}

void table_cache_set_block_cache(table_cache_t *tc, struct block_cache *blocks) {
  tc->blocks = blocks;
}

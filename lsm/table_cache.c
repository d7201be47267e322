/* Table cache: open table readers by file number with LRU eviction (lsm/table_cache.h).
 * One mutex guards an index by number (util/u64_map.h, reserved for capacity + 1 entries at
 * create, so that inserting never fails) and a doubly linked LRU list (head = most recently
 * used). Tables are opened outside the lock; if two threads race to open the
 * same table, the first insert wins and the other copy is dropped. */
#include "lsm/table_cache.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "util/u64_map.h"

typedef struct entry {
  uint64_t number;
  table_t *table;            /* the cache's reference */
  struct entry *prev, *next; /* LRU */
} entry_t;

struct table_cache {
  env_t *io;
  char *dir;
  struct block_cache *blocks; /* given to every table opened (NULL: none) */
  int mapped;                 /* table_read_mapped on every table opened */
  size_t capacity;
  pthread_mutex_t mu;
  u64_map_t index; /* number -> (uintptr_t)entry_t * */
  entry_t lru;     /* sentinel */
};

table_cache_t *table_cache_create(env_t *io, const char *dir, size_t capacity) {
  table_cache_t *tc = calloc(1, sizeof *tc);
  if (!tc) return NULL;
  tc->io = io;
  tc->capacity = capacity ? capacity : TABLE_CACHE_DEFAULT_CAPACITY;
  u64_map_init(&tc->index);
  tc->dir = strdup(dir);
  if (!tc->dir || u64_map_reserve(&tc->index, tc->capacity + 1) != ST_OK) {
    u64_map_release(&tc->index);
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

static entry_t *lookup(const table_cache_t *tc, uint64_t number) {
  uint64_t v;
  return u64_map_get(&tc->index, number, &v) ? (entry_t *)(uintptr_t)v : NULL;
}

/* Removes e from index and LRU; returns its table (the cache's reference). */
static table_t *remove_entry(table_cache_t *tc, entry_t *e) {
  u64_map_del(&tc->index, e->number, NULL);
  lru_unlink(e);
  table_t *t = e->table;
  free(e);
  return t;
}

void table_cache_destroy(table_cache_t *tc) {
  if (!tc) return;
  while (tc->lru.next != &tc->lru) table_unref(remove_entry(tc, tc->lru.next));
  pthread_mutex_destroy(&tc->mu);
  u64_map_release(&tc->index);
  free(tc->dir);
  free(tc);
}

int table_cache_get(table_cache_t *tc, uint64_t number, table_t **out, err_t *err) {
  pthread_mutex_lock(&tc->mu);
  entry_t *e = lookup(tc, number);
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
  if (tc->mapped) (void)table_read_mapped(t); /* else, or if it cannot map: pread */
  entry_t *ne = malloc(sizeof *ne);
  if (!ne) {
    /* Serve it uncached. */
    *out = t;
    return ST_OK;
  }
  table_t *victim = NULL, *dup = NULL;
  pthread_mutex_lock(&tc->mu);
  e = lookup(tc, number);
  if (e) { /* another thread opened it meanwhile */
    dup = t;
    free(ne);
    lru_unlink(e);
    lru_push_front(tc, e);
    t = e->table;
  } else {
    ne->number = number;
    ne->table = t;
    (void)u64_map_put(&tc->index, number, (uint64_t)(uintptr_t)ne); /* reserved: no failure */
    lru_push_front(tc, ne);
    if (u64_map_count(&tc->index) > tc->capacity) victim = remove_entry(tc, tc->lru.prev);
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
  entry_t *e = lookup(tc, number);
  table_t *t = e ? remove_entry(tc, e) : NULL;
  pthread_mutex_unlock(&tc->mu);
  table_unref(t);
}

size_t table_cache_size(table_cache_t *tc) {
  pthread_mutex_lock(&tc->mu);
  size_t n = u64_map_count(&tc->index);
  pthread_mutex_unlock(&tc->mu);
  return n;
}

void table_cache_set_block_cache(table_cache_t *tc, struct block_cache *blocks) {
  tc->blocks = blocks;
}

void table_cache_set_mapped(table_cache_t *tc, int mapped) {
  tc->mapped = mapped;
}

/* table_cache_t: open table readers keyed by file number, opened on demand, reference
 * counted, at most `capacity` kept open (least recently used evicted first; an evicted
 * table stays open until its last user drops its reference). Thread-safe.
 */
#ifndef BFH_LSM_TABLE_CACHE_H
#define BFH_LSM_TABLE_CACHE_H

#include <stddef.h>
#include <stdint.h>

#include "util/env.h"
#include "lsm/table.h"
#include "util/err.h"

#define TABLE_CACHE_DEFAULT_CAPACITY 1000

typedef struct table_cache table_cache_t;

/* Tables are opened at table_file_path(dir, number). io and dir are borrowed/copied: io
   must outlive the cache; dir is copied. capacity 0 means the default. NULL on no memory.
   Client calls table_cache_destroy(). */
table_cache_t *table_cache_create(env_t *io, const char *dir, size_t capacity);
/* Drops the cache's references (tables still referenced by users stay open until
   table_unref). NULL allowed. */
void table_cache_destroy(table_cache_t *tc);

/* The table `number`, opening it if needed. On ST_OK *t carries a reference for the
   caller: release it with table_unref(). Errors from table_open (not cached: a later call
   retries). */
int table_cache_get(table_cache_t *tc, uint64_t number, table_t **t, err_t *err);
/* Forgets table `number` (e.g. its file is being deleted). No-op if not cached. */
void table_cache_evict(table_cache_t *tc, uint64_t number);
/* Every table opened from now on keeps its gets' data blocks in blocks (table_set_block_cache;
   borrowed, it must outlive the cache and its tables). Call it before the first get. */
struct block_cache;
void table_cache_set_block_cache(table_cache_t *tc, struct block_cache *blocks);
/* mapped 1: every table opened from now on reads through a mapping of its file
   (table_read_mapped), where the env can map. Call it before the first get. */
void table_cache_set_mapped(table_cache_t *tc, int mapped);
/* Tables currently cached. */
size_t table_cache_size(table_cache_t *tc);

#endif

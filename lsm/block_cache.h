/* block_cache_t: verified copies of data blocks, in the database's own memory, shared by every
 * table of a database (LevelDB's block cache: table/table.cc BlockReader over util/cache.cc's
 * sharded LRU).
 *
 * A block enters after its CRC was checked in the reader's buffer; a get that finds it pins
 * it and reads it where it is: no system call, no CRC, no copy of the block. The bytes are the
 * cache's own, so a table file changed or truncated under an open handle cannot change what a
 * hit serves (it serves the bytes that were checked), and a hit never faults. Each open table
 * takes an id of its own (block_cache_new_id, never reused), so that a file replaced under the
 * same number never hits a block of the old one.
 *
 * A pinned block stays valid until block_cache_release, even when it is evicted meanwhile (it
 * then leaves the index and its charge at once, and its memory at the release): LevelDB's
 * Cache::Handle.
 *
 * BLOCK_CACHE_SHARDS shards, each a mutex, a chained hash table and an LRU list; the capacity
 * is split evenly, and an entry is charged its size plus BLOCK_CACHE_ENTRY_BYTES. Thread-safe.
 * Only the gets of the own engine fill it; scans, compactions and searches read past it, as
 * LevelDB's with fill_cache = false.
 */
#ifndef BFH_LSM_BLOCK_CACHE_H
#define BFH_LSM_BLOCK_CACHE_H

#include <stddef.h>
#include <stdint.h>

#define BLOCK_CACHE_SHARDS 16
#define BLOCK_CACHE_ENTRY_BYTES 64 /* what an entry costs beside its block */

typedef struct block_cache block_cache_t;
typedef struct block_cache_entry block_cache_handle_t; /* a pinned block */

typedef struct block_cache_stats {
  uint64_t hits, misses; /* lookups that found their block, and that did not */
  uint64_t inserts;      /* blocks that entered */
  uint64_t evictions;    /* blocks dropped to make room */
  uint64_t entries;      /* blocks held now */
  uint64_t bytes;        /* their charge now (blocks and entries) */
  uint64_t capacity;     /* bytes it may hold */
} block_cache_stats_t;

/* A cache of capacity bytes. NULL on no memory. Client calls block_cache_destroy(). */
block_cache_t *block_cache_create(size_t capacity);
void block_cache_destroy(block_cache_t *c); /* NULL allowed */

/* A new id for an opened table (1, 2, ...). */
uint64_t block_cache_new_id(block_cache_t *c);

/* If block (id, offset) is held and is n bytes long, pins it, sets *h and returns its n bytes
   (it becomes the most recently used); else returns NULL. Either is counted. The bytes stay
   valid and unchanged until block_cache_release(*h). */
const uint8_t *block_cache_pin(block_cache_t *c, uint64_t id, uint64_t offset, size_t n,
                               block_cache_handle_t **h);

/* Unpins a block pinned by block_cache_pin. Thread-safe, takes no lock. */
void block_cache_release(block_cache_handle_t *h);

/* Adds a copy of the block (id, offset) of n bytes, whose CRC the caller checked, evicting the
   least recently used blocks of its shard to make room. A block larger than a shard's share
   of the capacity, or one already held, is not added. Out of memory: nothing added. */
void block_cache_insert(block_cache_t *c, uint64_t id, uint64_t offset, const void *data, size_t n);

void block_cache_get_stats(block_cache_t *c, block_cache_stats_t *st);

#endif

/* block_cache_t: verified copies of data blocks, in the database's own memory, shared by every
 * table of a database (the part LevelDB's block cache plays: table/table.cc BlockReader over
 * util/cache.cc's sharded LRU; here sharded CLOCK, below).
 *
 * A block enters after its CRC was checked in the memory it was read into; a get that finds it pins
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
 * A reader that misses does not copy: it takes an unpublished entry (block_cache_alloc),
 * reads the block from its file straight into it, checks its CRC there and publishes it
 * (block_cache_publish), keeping it pinned. Until published, an entry is the reader's alone,
 * so what enters is exactly what was checked.
 *
 * BLOCK_CACHE_SHARDS shards, each a mutex, an index and a replacement queue; the capacity is
 * split evenly, and an entry is charged its allocation (the block rounded up to
 * BLOCK_CACHE_ROUND bytes, so that evicted entries fit the next block and are reused) plus
 * BLOCK_CACHE_ENTRY_BYTES.
 *   - The index is open addressing with linear probing over (hash, entry) slots (at most half
 *     full; deletion shifts back, no tombstones): a probe compares the 64-bit hash kept in the
 *     slot and reads an entry only when the hashes match, so a lookup reads one or two slots
 *     of one cache line and, on a hit, the entry it returns; a miss reads no entry at all.
 *   - Replacement is CLOCK (second chance) over the queue of entries in insertion order: a hit
 *     only marks its entry referenced, in the entry it reads anyway (an LRU list would unlink
 *     and relink it: two more entries' cache lines on every hit). Eviction takes the oldest
 *     entry; a referenced one is unmarked and requeued as the newest instead. A block used
 *     since it last came round stays; one not used goes first.
 *   - Up to BLOCK_CACHE_SPARES evicted entries per shard that nobody pins are kept for the
 *     next miss of the shard (block_cache_alloc) instead of being freed: a miss under a full
 *     cache costs no malloc and no free.
 * Thread-safe. The gets of the own engine fill it, and so do the few blocks a search reads
 * by its value-to-block maps or block filters, up to a share of the capacity per search
 * (lsm/table.h, table_scan_value_blocks_kept); whole-table scans and compactions read past
 * it, as LevelDB's with fill_cache = false.
 */
#ifndef BFH_LSM_BLOCK_CACHE_H
#define BFH_LSM_BLOCK_CACHE_H

#include <stddef.h>
#include <stdint.h>

#define BLOCK_CACHE_SHARDS 16
#define BLOCK_CACHE_ENTRY_BYTES 64 /* what an entry costs beside its block */
#define BLOCK_CACHE_ROUND 256      /* a block's allocation is a multiple of this */
#define BLOCK_CACHE_SPARES 2       /* evicted entries a shard keeps for reuse */

typedef struct block_cache block_cache_t;
typedef struct block_cache_entry block_cache_handle_t; /* a pinned block */

typedef struct block_cache_stats {
  uint64_t hits, misses; /* lookups that found their block, and that did not */
  uint64_t inserts;      /* blocks that entered */
  uint64_t evictions;    /* blocks dropped to make room */
  uint64_t entries;      /* blocks held now */
  uint64_t bytes;        /* their charge now (blocks and entries) */
  uint64_t capacity;     /* bytes it may hold */
  uint64_t spare_bytes;  /* evicted entries kept for reuse (beside bytes) */
  uint64_t reused;       /* misses served by a kept entry instead of malloc */
} block_cache_stats_t;

/* A cache of capacity bytes. NULL on no memory. Client calls block_cache_destroy(). */
block_cache_t *block_cache_create(size_t capacity);
void block_cache_destroy(block_cache_t *c); /* NULL allowed */

/* A new id for an opened table (1, 2, ...). */
uint64_t block_cache_new_id(block_cache_t *c);

/* If block (id, offset) is held and is n bytes long, pins it, sets *h and returns its n bytes
   (it is marked referenced: CLOCK's recent use); else returns NULL. Either is counted. The bytes stay
   valid and unchanged until block_cache_release(*h). */
const uint8_t *block_cache_pin(block_cache_t *c, uint64_t id, uint64_t offset, size_t n,
                               block_cache_handle_t **h);

/* Unpins a block pinned by block_cache_pin. Thread-safe, takes no lock. */
void block_cache_release(block_cache_handle_t *h);

/* An unpublished entry for the block (id, offset) with room for cap bytes (a reused one when
   the shard has one that fits, else malloc'd): the caller reads the block into
   block_cache_data(h), checks it, then publishes it (block_cache_publish) or drops it
   (block_cache_release). NULL on no memory. */
block_cache_handle_t *block_cache_alloc(block_cache_t *c, uint64_t id, uint64_t offset,
                                        size_t cap);
/* The cap bytes of an entry from block_cache_alloc (or the n bytes of a pinned one). */
uint8_t *block_cache_data(block_cache_handle_t *h);
/* Publishes h (from block_cache_alloc), whose first n <= cap bytes are the block, checked by
   the caller, evicting to make room; h stays pinned by the caller (block_cache_release).
   When the block is already held (another reader published it first), or is larger than a
   shard's share, h is not published: it stays the caller's alone, freed at its release.
   Either way its bytes are not changed again. */
void block_cache_publish(block_cache_t *c, block_cache_handle_t *h, size_t n);

/* Adds a copy of the block (id, offset) of n bytes, whose CRC the caller checked, evicting the
   least recently used blocks of its shard to make room. A block larger than a shard's share
   of the capacity, or one already held, is not added. Out of memory: nothing added. */
void block_cache_insert(block_cache_t *c, uint64_t id, uint64_t offset, const void *data, size_t n);

void block_cache_get_stats(block_cache_t *c, block_cache_stats_t *st);

/* One reader's use of a cache for the blocks of one file: the cache (NULL: none), the file's
   id there, and the bytes of missed blocks the reader may still put in, decreased by those
   it does (fill NULL: none enters; what the cache holds is read from it either way). */
typedef struct block_cache_use {
  block_cache_t *cache;
  uint64_t id;
  uint64_t *fill;
} block_cache_use_t;

/* block_cache_pin of the block at offset of use's file whatever its length, which goes to
   *n (a reader that keeps blocks in another form than the file's, decoded, knows their
   length only once it has them): NULL when use (may be NULL) has no cache or the cache
   lacks the block. */
const uint8_t *block_cache_use_pin(const block_cache_use_t *use, uint64_t offset, size_t *n,
                                   block_cache_handle_t **h);
/* Puts a copy of the block (id, offset), n bytes, into use's cache when its fill covers n,
   decreasing the fill (block_cache_insert). */
void block_cache_use_keep(const block_cache_use_t *use, uint64_t offset, const void *data,
                          size_t n);
/* The bytes it may hold (its capacity at block_cache_create); 0 for NULL. */
size_t block_cache_capacity(const block_cache_t *c);

/* The share of a cache one reader of chosen blocks (a search) may fill: a search that reads
   a few blocks leaves them for the next search of its value and for gets; one that reads
   thousands does not evict everything the gets keep. */
#define BLOCK_CACHE_READER_SHARE 8
/* The fill a reader starts with: block_cache_capacity(c) / BLOCK_CACHE_READER_SHARE. */
static inline uint64_t block_cache_reader_fill(const block_cache_t *c) {
  return block_cache_capacity(c) / BLOCK_CACHE_READER_SHARE;
}

/* The shard (0 .. BLOCK_CACHE_SHARDS - 1) that holds block (id, offset): tests pick blocks
   that compete for one shard's room with it. */
unsigned block_cache_shard(uint64_t id, uint64_t offset);

#endif

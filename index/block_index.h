/* block_index_t: the block filters (filters/block_filter.h) of the live tables, by table
 * number: the level under the leaves. A search that reaches a candidate table asks it which
 * data blocks to read; a table it has no filter for is read whole.
 *
 * In the lean layout (doc/search.md "The lean index") a table of the own engine has a
 * value-to-block map instead (index/value_block_map.h): its head in memory, its
 * entries read from the table per probe. A map replaces the table's block filter: putting a
 * map frees the filter, and a filter put for a table that has a map is freed at once.
 *
 * Owned by the value index (value_index_blocks) and written, like the leaves, only by
 * index_sync: a table's block filter is put when its leaf is added (or later, when a
 * sidecar cache made before block filters is upgraded) and dropped with its leaf. Table
 * numbers are never reused, so a filter can never be taken for another table's.
 *
 * Thread-safe: puts and removes take a write lock, probes a read lock.
 */
#ifndef BFH_LSM_HOOKS_BLOCK_INDEX_H
#define BFH_LSM_HOOKS_BLOCK_INDEX_H

#include <stddef.h>
#include <stdint.h>

#include "filters/block_filter.h"
#include "index/value_block_map.h"
#include "util/err.h"

typedef struct block_index block_index_t;

/* The blocks of one probe (reused across tables and searches; block_refs_release frees). */
typedef struct block_refs {
  block_ref_t *v;
  uint64_t *bound;   /* per block, a bound on the sequence numbers of its entries of the
                        probe's hash (a map's, value_block_map_probe), or
                        VALUE_BLOCK_MAP_NO_BOUND (a block filter's, or an older map's) */
  size_t n, cap;     /* v and bound have room for cap */
  uint32_t *scratch; /* block indexes of the probe */
  size_t scratch_cap;
} block_refs_t;

/* Room for n blocks in v and bound: BFH_OK or BFH_E_NOMEM (r unchanged but for room). */
int block_refs_reserve(block_refs_t *r, size_t n);
void block_refs_release(block_refs_t *r);

/* NULL on no memory. */
block_index_t *block_index_create(void);
void block_index_destroy(block_index_t *bi); /* NULL allowed; frees every filter */

/* Gives table `number` the filter f (taking ownership; a filter it had is freed).
   BFH_OK or BFH_E_NOMEM (f is then freed). */
int block_index_put(block_index_t *bi, uint64_t number, block_filter_t *f);
/* Gives table `number` the map m (taking ownership; a map or filter it had is freed).
   BFH_OK or BFH_E_NOMEM (m is then freed). */
int block_index_put_map(block_index_t *bi, uint64_t number, value_block_map_t *m);
/* Removes the table's filter and map. */
void block_index_remove(block_index_t *bi, uint64_t number);
int block_index_has(block_index_t *bi, uint64_t number);
/* Removes the filter (and map) of table `number` because a read through it failed (why: the error)
   while the table itself reads fine: the filter does not describe the table. Counted in
   the stats (damaged) with the message. */
void block_index_drop_damaged(block_index_t *bi, uint64_t number, const err_t *why);
/* Counts a map or filter found damaged before it entered (why: the error); removes nothing. */
void block_index_count_damaged(block_index_t *bi, const err_t *why);
/* value_block_map_prefetch for the maps of tables numbers[0, n) (those without one: nothing). */
void block_index_prefetch(block_index_t *bi, const uint64_t *numbers, size_t n,
                          uint64_t value_hash);
/* For each numbers[i]: out[i] = 1 if the table's map rules the value out from memory
   (value_block_map_rules_out: a search need not read the table), else 0 (no map, or it may
   hold the value). */
void block_index_rule_out(block_index_t *bi, const uint64_t *numbers, size_t n, uint64_t value_hash,
                          uint8_t *out);
/* The zones of the attribute zone_id (value_block_map_zone) in the maps of tables
   numbers[0, n): for each, every code of its terms of that attribute lies in [lo[i], hi[i]]
   (an empty zone, lo[i] > hi[i]: it holds none); [0, UINT64_MAX] when the table has no map or
   its map records no zone of zone_id. */
void block_index_zones(block_index_t *bi, const uint64_t *numbers, size_t n, uint64_t zone_id,
                       uint64_t *lo, uint64_t *hi);
/* The bytes block_index_probes of table `number` for each of the n hashes surely read
   (value_block_map_sure_read of its map, summed; 0 without a map, or when the map would not be
   read: can_read 0, the caller's io has no reader, and the map has none of its own). */
uint64_t block_index_sure_read(block_index_t *bi, uint64_t number, const uint64_t *hashes, size_t n,
                               int can_read);
/* Has table `number` a map? */
int block_index_has_map(block_index_t *bi, uint64_t number);

/* A span of a table's "bfh.value_chunks" meta block (value_block_map.h). */
typedef struct block_span {
  uint64_t offset;
  size_t len;
} block_span_t;
/* The chunks of table `number`'s map that a probe of each of hashes[0, n) surely reads
   first (value_block_map_sure_span), into out (room for n): how many. None for a table
   without a map, or whose map reads its own file (the LevelDB engines' cache files). For
   a search that reads them ahead, all its tables' together (engine_read_ahead). */
size_t block_index_sure_spans(block_index_t *bi, uint64_t number, const uint64_t *hashes, size_t n,
                              block_span_t *out);

/* Chunks of maps that read their own files (the stock engines' cache files), read ahead by a
   search (block_index_read_ahead_own) for its probes to take instead of a read each. Zeroed:
   empty. One search's: not thread-safe. */
typedef struct block_chunk_ahead {
  uint64_t number, off; /* table `number`'s chunks at [off, off + len) */
  size_t len;
  uint8_t *bytes; /* malloc'd; NULL: the read failed (the probe reads again, and reports) */
} block_chunk_ahead_t;
typedef struct block_chunks_ahead {
  block_chunk_ahead_t *v;
  size_t n, cap;
  size_t hint; /* where the last chunk taken was: the probes ask in the order read */
} block_chunks_ahead_t;
void block_chunks_ahead_release(block_chunks_ahead_t *a);

/* Reads ahead into a, all together (env_read_batch, BLOCK_INDEX_AHEAD_BATCH a call), the
   chunks that probes of hashes[0, nh) surely read first (value_block_map_sure_span) in the
   maps of tables numbers[0, n) that read their own files from a place they can name
   (value_block_map_own_place). Only an optimisation: a chunk not read ahead, or whose read
   failed, is read by its probe, which checks every chunk it is given as it checks one it
   reads. BFH_OK, or BFH_E_NOMEM (what was read is kept). */
#define BLOCK_INDEX_AHEAD_BATCH 64
int block_index_read_ahead_own(block_index_t *bi, const uint64_t *numbers, size_t n,
                               const uint64_t *hashes, size_t nh, block_chunks_ahead_t *a);

/* How a probe reads a table's map: read (with arg) reads bytes of the table's
   "bfh.value_chunks" meta block (value_block_map.h); chunks_read and bytes_read count the
   chunks read and their bytes, through read or a map's own reader (or taken from ahead).
   read may be NULL: only maps with their own reader (value_block_map_set_reader: the
   LevelDB engines', from their cache files) are read then. ahead (NULL: none): chunks of such
   maps read ahead, taken there first. */
typedef struct block_map_io {
  value_block_map_read_fn read;
  void *arg;
  uint64_t chunks_read;
  uint64_t bytes_read;
  uint64_t range_pieces_read; /* pieces of range filters read (block_index_range; their bytes
                                 are in bytes_read) */
  block_chunks_ahead_t *ahead;
} block_map_io_t;

/* The blocks of table `number` that may hold a value of this hash, in file order, with their
   sequence bounds, into out,
   by its map (read through io, held under the index's read lock) or else its block filter.
   *blocks (may be NULL) gets how many blocks the map or filter covers. BFH_NOT_FOUND if the
   table has neither (or only a map it cannot read: io NULL, or no reader in io or the map);
   BFH_E_NOMEM; a map read's error (BFH_E_CORRUPT: a chunk did not check out), with its message in
   err. */
int block_index_probe(block_index_t *bi, uint64_t number, uint64_t value_hash, block_refs_t *out,
                      uint32_t *blocks, block_map_io_t *io, err_t *err);

/* Whether table `number` may hold a term of the attribute zone_id whose code lies in [lo, hi]
   (lo <= hi), by its map's range filter (value_block_map_range, read through io as a probe
   reads): 0 when the filter rules every such code out; 1 when it may hold one, or the table
   has no map, no filter of zone_id, or a map it cannot read; or the read's error
   (BFH_E_CORRUPT: a piece of the filter did not check out), with its message in err. */
int block_index_range(block_index_t *bi, uint64_t number, uint64_t zone_id, uint64_t lo,
                      uint64_t hi, block_map_io_t *io, err_t *err);

typedef struct block_index_stats {
  uint64_t tables;        /* tables with a block filter or a map */
  uint64_t maps;          /* of those, tables with a map */
  uint64_t bytes;         /* memory the filters and maps hold */
  uint64_t held_bytes;    /* bytes plus the index's own (its map from number to filter) */
  uint64_t values;        /* values they cover */
  uint64_t damaged;       /* filters dropped by block_index_drop_damaged */
  char last_damaged[256]; /* its last message */
} block_index_stats_t;
void block_index_get_stats(block_index_t *bi, block_index_stats_t *st);
/* The tables and maps counts alone, read without the lock (the planner reads them on every
   search): each is exact at some moment during the call, the two not necessarily at one. */
void block_index_counts(block_index_t *bi, uint64_t *tables, uint64_t *maps);

#endif

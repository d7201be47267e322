/* ldb_filter: the value filters of a LevelDB table file, built by reading the table (the
 * emulated table-build hook of the LevelDB engine): its leaf and, optionally, its block
 * filter (filters/block_filter.h), in one pass over the table.
 *
 * The filters it builds are kept in the sidecar cache (index/leaf_cache.h) by index_sync.
 * Every file access goes through the env_t given (borrowed; util/env.h).
 */
#ifndef BFH_LSM_HOOKS_LEVELDB_FILTER_H
#define BFH_LSM_HOOKS_LEVELDB_FILTER_H

#include <stdint.h>

#include "filters/block_filter.h"
#include "filters/value_filter.h"
#include "filters/value_terms.h"
#include "index/index_sync.h"
#include "util/env.h"
#include "lsm_hooks/leveldb_format/ldb_entry.h"
#include "util/err.h"

/* Builds the value filter (m, k, seed) of the LevelDB table at path: the value of every
   value entry is added (deletions have none). With block_bits > 0 it also builds the table's
   block filter of block_bits bits per value, each value added to its data block by the same
   hash, bfh_hash64(value, seed); with block_bits == 0 *blocks is set to NULL (blocks itself may
   then be NULL). On BFH_OK *leaf and *blocks are new, owned by the caller. Errors as
   ldb_table_scan() (BFH_NOT_FOUND when the file does not exist; BFH_E_CORRUPT also for data blocks
   the index lists out of file order); BFH_E_INVALID if block_bits exceeds BLOCK_FILTER_MAX_BITS.
   With tag != NULL, *tag is the table's tag (table.h) from the bytes the filters were built
   from: what binds them to this table in the filter cache. */
int ldb_filter_build(env_t *io, const char *path, uint64_t m, uint32_t k, uint64_t seed,
                     uint32_t block_bits, value_filter_t **leaf, block_filter_t **blocks,
                     uint64_t *tag, ldb_read_stats_t *st, err_t *err);

/* A table's value-to-block map, serialized (index/value_block_map.h): head and
   chunks malloc'd, owned by the caller; head NULL: none. */
typedef struct ldb_filter_map {
  uint8_t *head, *chunks;
  size_t head_len, chunks_len;
} ldb_filter_map_t;

/* ldb_filter_build, with map != NULL and block_bits > 0 also building the table's
   value-to-block map from the same pass (the values' hashes and their data blocks, as the own
   engine's table-build hook does): on BFH_OK *map holds it, or nothing (head NULL) when the
   table's blocks cannot be named (value_block_map_builder_end_block). */
int ldb_filter_build_map(env_t *io, const char *path, uint64_t m, uint32_t k, uint64_t seed,
                         uint32_t block_bits, value_filter_t **leaf, block_filter_t **blocks,
                         ldb_filter_map_t *map, uint64_t *tag, ldb_read_stats_t *st, err_t *err);
/* The filters of index_sync's read_leaf (index_source_t) from the LevelDB table at path:
   ldb_filter_build_map for p's m, k, seed and block_bits, each value added under the items
   out->terms gives (filters/value_terms.h; NULL: the whole value's hash), the map made when
   out->want_map; out->filter, blocks, map_* and tag set on BFH_OK. */
int ldb_filter_read(env_t *io, const char *path, const value_index_params_t *p,
                    index_leaf_read_t *out, ldb_read_stats_t *st, err_t *err);

#endif

/* ldb_filter_read: the value filters of a LevelDB table file, built by reading the table (the
 * emulated table-build hook of the LevelDB engine; reads.c): its leaf and, optionally, its
 * block filter (filters/block_filter.h) and value-to-block map, in one pass over the table.
 *
 * The filters it builds are kept in the sidecar cache (index/leaf_cache.h) by index_sync.
 * Every file access goes through the env_t given (borrowed; util/env.h).
 */
#ifndef BFH_LSM_HOOKS_LEVELDB_FILTER_H
#define BFH_LSM_HOOKS_LEVELDB_FILTER_H

#include "index/index_sync.h"
#include "lsm_hooks/leveldb_format/ldb_entry.h"
#include "util/env.h"
#include "util/err.h"

/* index_sync's read_leaf (index_source_t) of the LevelDB table at path: the value filter (p's
   m, k, seed) of every value entry (deletions have none), each value added under the items
   out->terms gives (filters/value_terms.h; NULL: the whole value's hash). With p->block_bits
   > 0 also the table's block filter of block_bits bits per value, each value added to its data
   block by the same hash (else out->blocks is NULL), and with out->want_map its value-to-block
   map from the same pass (none, map_head NULL, when the table's blocks cannot be named:
   value_block_map_builder_end_block). On BFH_OK out->filter, blocks, map_* and tag (the
   table's tag, table.h, from the bytes the filters were built from: what binds them to this
   table in the filter cache) are set, owned by the caller. Errors as ldb_table_scan()
   (BFH_NOT_FOUND when the file does not exist; BFH_E_CORRUPT also for data blocks the index
   lists out of file order); BFH_E_INVALID if block_bits exceeds BLOCK_FILTER_MAX_BITS. */
int ldb_filter_read(env_t *io, const char *path, const value_index_params_t *p,
                    index_leaf_read_t *out, ldb_read_stats_t *st, err_t *err);

#endif

/* ldb_filter: the value filter of a LevelDB table file, built by reading the table (the
 * emulated table-build hook of the LevelDB engine).
 *
 * The filters it builds are kept in the sidecar cache (lsm_hooks/leaf_cache.h) by index_sync.
 * Every file access goes through the lsm_io_t given (borrowed; lsm/io.h).
 */
#ifndef BFH_LSM_HOOKS_LEVELDB_FILTER_H
#define BFH_LSM_HOOKS_LEVELDB_FILTER_H

#include <stdint.h>

#include "filters/value_filter.h"
#include "lsm/io.h"
#include "lsm_hooks/leveldb/entry.h"
#include "util/err.h"

/* Builds the value filter (m, k, seed) of the LevelDB table at path: the value of every
   value entry is added (deletions have none). On BFH_OK *out is a new filter owned by the
   caller. Errors as ldb_table_scan() (BFH_NOT_FOUND when the file does not exist). */
int ldb_filter_build(lsm_io_t *io, const char *path, uint64_t m, uint32_t k, uint64_t seed,
                     value_filter_t **out, ldb_read_stats_t *st, err_t *err);

#endif

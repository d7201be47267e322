/* What a handle holds, for tests and benchmarks that need more than include/bfh.h (the
 * oracle search of bench/search_bench.c, the rebuild timing). Not part of the public API.
 */
#ifndef BFH_LSM_HOOKS_API_INTERNAL_H
#define BFH_LSM_HOOKS_API_INTERNAL_H

#include "bfh.h"
#include "lsm_hooks/engine.h"
#include "lsm_hooks/value_index.h"

engine_t *bfh_internal_engine(bfh_db *db);     /* borrowed */
value_index_t *bfh_internal_index(bfh_db *db); /* borrowed; NULL with value filters off */

struct lsm_io;
/* bfh_open with bfh's file accesses going through io (lsm/io.h; borrowed, it must outlive
   the handle; NULL: the real I/O layer): fault-injection tests. Both engines: BFH-PARAMS,
   and with the own engine every file of the engine; with the LevelDB engine the filter
   cache (bfh-filters/ and its .vf files) and the table reads of the indexer and of scans
   (LevelDB's own files go through LevelDB's Env, which bfh cannot hook). */
int bfh_internal_open_io(const char *path, const bfh_options *opt, struct lsm_io *io, bfh_db **db);

#endif

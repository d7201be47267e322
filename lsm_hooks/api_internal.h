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
/* bfh_open with the own engine's file accesses going through io (lsm/io.h; borrowed, it
   must outlive the handle): fault-injection tests. BFH_E_INVALID with another engine. */
int bfh_internal_open_io(const char *path, const bfh_options *opt, struct lsm_io *io, bfh_db **db);

#endif

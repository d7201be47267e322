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

#endif

/* Extras of the own engine's engine_t (engine_lsm.c) beyond engine.h: what the value-index
 * rebuild at open cost, and access to the lsm_db_t for tests and benchmarks.
 * REQUIRES for every function: e was opened by engine_lsm_open.
 */
#ifndef BFH_LSM_HOOKS_ENGINE_LSM_H
#define BFH_LSM_HOOKS_ENGINE_LSM_H

#include <stdint.h>

#include "lsm/db.h"
#include "lsm_hooks/engine.h"

typedef struct engine_lsm_open_stats {
  uint64_t tables_live;      /* live tables at open */
  uint64_t tables_indexed;   /* leaves rebuilt from the tables' filter blocks */
  uint64_t tables_unindexed; /* tables without a readable filter (always scanned) */
  uint64_t read_ns;          /* reading and parsing the filter blocks */
  uint64_t rebuild_ns;       /* the whole rebuild (reading + hierarchy + sliced index) */
} engine_lsm_open_stats_t;

void engine_lsm_get_open_stats(const engine_t *e, engine_lsm_open_stats_t *st);
int engine_lsm_wait_idle(engine_t *e, err_t *err);
lsm_db_t *engine_lsm_db(engine_t *e); /* borrowed */

/* engine_lsm_open with every file access of the engine going through io (borrowed; it
   must outlive the engine; NULL: the real I/O layer): fault-injection tests. */
int engine_lsm_open_io(const char *path, const bfh_options *opt, struct lsm_io *io,
                       value_index_t *index, engine_t **e, err_t *err);

#endif

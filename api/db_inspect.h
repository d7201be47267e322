/* db_inspect: what bfh_tables and bfh_check do (include/bfh.h, "Inspection"), behind the
 * argument checks and the last-error handling of the API. Every engine through its kind's
 * describe and check (engine.h); the own engine's are in engines/lsm/engine_lsm_inspect.c.
 */
#ifndef BFH_LSM_HOOKS_DB_INSPECT_H
#define BFH_LSM_HOOKS_DB_INSPECT_H

#include "bfh.h"
#include "lsm_hooks/engines/engine.h"
#include "index/value_index.h"
#include "util/err.h"

/* bfh_tables over engine e (of kind `kind`, whose describe reads each table) and its value
   index vi (NULL with value filters off: m and k come from it). */
int db_inspect_tables(engine_t *e, const engine_kind_t *kind, value_index_t *vi, bfh_table_fn fn,
                      void *arg, err_t *err);

/* bfh_check of the closed database in path: BFH-PARAMS, then kind->check; rep is zeroed by
   the caller. */
int db_inspect_check(const char *path, const engine_kind_t *kind, bfh_damage_fn fn, void *arg,
                     bfh_check_report *rep, err_t *err);

#endif

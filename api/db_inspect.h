/* db_inspect: what bfh_tables and bfh_check do (include/bfh.h, "Inspection"), behind the
 * argument checks and the last-error handling of the API. Every engine through its kind's
 * describe and check (engine.h); the own engine's are in engines/lsm/engine_lsm_inspect.c.
 */
#ifndef BFH_LSM_HOOKS_DB_INSPECT_H
#define BFH_LSM_HOOKS_DB_INSPECT_H

#include "bfh.h"
#include "lsm_hooks/engines/engine.h"
#include "index/index_sync.h"
#include "index/value_index.h"
#include "util/err.h"

/* bfh_tables over engine e (of kind `kind`, whose describe reads each table's engine facts)
   and its value index vi, written by sync (both NULL with value filters off). The filter facts
   of a table the engine does not describe them for (a stock engine's) are added here, when vi
   has a leaf for it: its value filter built again through sync's source, as the leaf was. */
int db_inspect_tables(engine_t *e, const engine_kind_t *kind, value_index_t *vi, index_sync_t *sync,
                      bfh_table_fn fn, void *arg, err_t *err);

/* bfh_check of the closed database in path: BFH-PARAMS, then kind->check, then (a kind with
   ENGINE_CAP_STANDALONE) kind->check of the stand-alone index's directory inside it, its files
   named behind that directory; rep is zeroed by the caller. */
int db_inspect_check(const char *path, const engine_kind_t *kind, bfh_damage_fn fn, void *arg,
                     bfh_check_report *rep, err_t *err);

#endif

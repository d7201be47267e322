/* db_inspect: what bfh_tables and bfh_check do (include/bfh.h, "Inspection"), behind the
 * argument checks and the last-error handling of api.c. Every engine through its kind's
 * describe and check (engine.h); the own engine's are here, read with lsm/ (table.h, verify.h).
 */
#ifndef BFH_LSM_HOOKS_DB_INSPECT_H
#define BFH_LSM_HOOKS_DB_INSPECT_H

#include "bfh.h"
#include "lsm_hooks/engines/engine.h"
#include "lsm_hooks/index/value_index.h"
#include "util/err.h"

/* bfh_tables over engine e (of kind `kind`, whose describe reads each table) and its value
   index vi (NULL with value filters off: m and k come from it). */
int db_inspect_tables(engine_t *e, const engine_kind_t *kind, value_index_t *vi, bfh_table_fn fn,
                      void *arg, err_t *err);

/* bfh_check of the closed database in path: BFH-PARAMS, then kind->check; rep is zeroed by
   the caller. */
int db_inspect_check(const char *path, const engine_kind_t *kind, bfh_damage_fn fn, void *arg,
                     bfh_check_report *rep, err_t *err);

/* The own engine's row (engines.c): engine_kind_t.describe (its table's footer, index, first
   data block and filter meta blocks) and engine_kind_t.check (lsm_verify of the database and
   of its stand-alone index, and the layout of every filter meta block). */
int db_inspect_lsm_describe(engine_t *e, value_index_t *vi, uint64_t number, bfh_table_info *info,
                            err_t *err);
int db_inspect_lsm_check(const char *path, const struct db_params *p, lsm_damage_fn damage,
                         void *arg, lsm_verify_stats_t *st, uint64_t *cache_damaged, err_t *err);

#endif

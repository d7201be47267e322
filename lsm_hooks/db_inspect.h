/* db_inspect: what bfh_tables and bfh_check do (include/bfh.h, "Inspection"), behind the
 * argument checks and the last-error handling of api.c. Both engines: the own engine's files
 * are read with lsm/ (table.h, verify.h), LevelDB's with leveldb/verify.h.
 */
#ifndef BFH_LSM_HOOKS_DB_INSPECT_H
#define BFH_LSM_HOOKS_DB_INSPECT_H

#include "bfh.h"
#include "lsm_hooks/engine.h"
#include "lsm_hooks/value_index.h"
#include "util/err.h"

/* bfh_tables over engine e (kind `engine`) and its value index vi (NULL with value filters
   off: m and k come from it). */
int db_inspect_tables(engine_t *e, bfh_engine engine, value_index_t *vi, bfh_table_fn fn, void *arg,
                      err_t *err);

/* bfh_check; opt is not NULL, rep is zeroed by the caller. */
int db_inspect_check(const char *path, const bfh_options *opt, bfh_damage_fn fn, void *arg,
                     bfh_check_report *rep, err_t *err);

#endif

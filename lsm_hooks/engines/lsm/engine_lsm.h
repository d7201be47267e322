/* The own engine (engine_lsm.c): its engine_kind_t entry points, and extras beyond engine.h:
 * what indexing the live tables at open cost, and access to the lsm_db_t for tests and
 * benchmarks. REQUIRES for every function taking e: e was opened by engine_lsm_open.
 */
#ifndef BFH_LSM_HOOKS_ENGINE_LSM_H
#define BFH_LSM_HOOKS_ENGINE_LSM_H

#include <stdint.h>

#include "lsm/db.h"
#include "lsm_hooks/engines/engine.h"

typedef struct engine_lsm_open_stats {
  uint64_t tables_live;      /* live tables at open */
  uint64_t tables_indexed;   /* leaves read from the tables' filter blocks */
  uint64_t tables_unindexed; /* tables without a readable filter (always scanned) */
  uint64_t read_ns;          /* reading and parsing the filter blocks */
  uint64_t rebuild_ns;       /* the whole rebuild (reading + hierarchy + sliced index) */
} engine_lsm_open_stats_t;

void engine_lsm_get_open_stats(const engine_t *e, engine_lsm_open_stats_t *st);
int engine_lsm_wait_idle(engine_t *e, err_t *err);
lsm_db_t *engine_lsm_db(engine_t *e); /* borrowed */

/* The engine_kind_t entry points (engine.h). open: every file access of the engine goes
   through io. repair_lock: lsm_repair_precheck, then the LOCK. repair: lsm_repair (of the
   stage) with a value hook, so that every table it writes has its filter; BFH-PARAMS that is
   missing or damaged is written from opt. */
int engine_lsm_open(const char *path, const bfh_options *opt, struct env *io, index_sync_t *sync,
                    engine_t **e, err_t *err);
/* engine_lsm_open with lsm_options.replay (lsm/db.h): replay(replay_arg, ...) sees every
   record the open replays from the write-ahead logs. */
int engine_lsm_open_replaying(const char *path, const bfh_options *opt, struct env *io,
                              index_sync_t *sync, lsm_visit_fn replay, void *replay_arg,
                              engine_t **e, err_t *err);
/* engine_kind_t.open_replaying (engine.h): engine_lsm_open_replaying with the engine's
   replay callback. */
int engine_lsm_open_replay(const char *path, const bfh_options *opt, struct env *io,
                           index_sync_t *sync, engine_replay_fn replay, void *replay_arg,
                           engine_t **e, err_t *err);
/* engine_kind_t.at_rest (at_rest.h): the own engine's data files, so that the stand-alone
   index can tell a database changed or put back from a copy while it was closed. */
int engine_lsm_at_rest(const char *path, struct env *io, char **id, err_t *err);
int engine_lsm_repair_lock(const char *path, void **lock, err_t *err);
void engine_lsm_repair_unlock(void *lock);
int engine_lsm_repair(const char *dir, const bfh_options *opt, bfh_repair_report *rep, err_t *err);
/* engine_lsm_repair whose rebuilt tables' filters hold each value under the items terms gives
   (filters/value_terms.h; borrowed; NULL: the whole value's): a database's declared
   attributes (api/repair.c reads its BFH-ATTRS). */
int engine_lsm_repair_items(const char *dir, const bfh_options *opt,
                            const value_terms_t *terms, bfh_repair_report *rep, err_t *err);
/* engine_kind_t.describe (a table's key range, entries and filter meta blocks) and
   engine_kind_t.check (lsm_verify of the database, and the
   layout of every filter meta block): engine_lsm_inspect.c. */
int engine_lsm_describe(engine_t *e, uint64_t number, bfh_table_info *info, err_t *err);
/* engine_lsm_describe of the open table t (borrowed): the read-only row's (lsm_ro/), over the
   tables it holds open. */
struct table;
int engine_lsm_describe_table(struct table *t, bfh_table_info *info, err_t *err);
int engine_lsm_check(const char *path, const engine_filter_params_t *p, engine_damage_fn damage,
                     void *arg, engine_check_stats_t *st, uint64_t *cache_damaged, err_t *err);

#endif

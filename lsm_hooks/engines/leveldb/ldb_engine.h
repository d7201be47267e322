/* The LevelDB engine (lsm_hooks/engines/leveldb/): its engine_kind_t entry points, and extras
 * beyond engine.h for tests and benchmarks. REQUIRES for every function taking e: e was opened by
 * engine_leveldb_open.
 */
#ifndef BFH_LSM_HOOKS_LEVELDB_ENGINE_H
#define BFH_LSM_HOOKS_LEVELDB_ENGINE_H

#include <stdint.h>

#include "lsm_hooks/engines/engine.h"

struct env;

/* With leaves in memory, a table's sidecar cache file is written once the table has been
   listed for this long (or at close): no cache file is written for a younger table. */
#define ENGINE_LEVELDB_CACHE_DELAY_NS 2000000000ull

typedef struct engine_leveldb_stats {
  uint64_t syncs;           /* runs of the emulated hook (views, flushes, background) */
  uint64_t log_bytes;       /* log bytes read */
  uint64_t log_rereads;     /* log reads repeated with the writers held off (a damaged-looking
                               record: an append in flight, or damage) */
  index_sync_stats_t index; /* the indexing of the engine's tables (all 0 with value
                               filters off) */
} engine_leveldb_stats_t;

/* The engine_kind_t entry points (engine.h). open: bfh's own file accesses of the engine go
   through io: the bfh-filters/ mkdir, the filter cache files and the table reads of the
   indexer and of scans. LevelDB's own files (log, tables, MANIFEST, CURRENT) go through
   LevelDB's Env, which this cannot reach. repair_lock (ldb_repair.c): refuses a directory
   that does not hold LevelDB's files or holds the own engine's (BFH_E_INVALID, nothing
   written) and one a process has open (BFH_E_BUSY naming it), then holds bfh's and LevelDB's
   locks. repair: LevelDB's own RepairDB on the stage; the filter cache needs nothing (its
   files are checked against each live table at open and rebuilt when stale). */
int engine_leveldb_open(const char *path, const bfh_options *opt, struct env *io,
                        index_sync_t *sync, engine_t **e, err_t *err);
int engine_leveldb_repair_lock(const char *path, void **lock, err_t *err);
int engine_leveldb_repair(const char *dir, const bfh_options *opt, bfh_repair_report *rep,
                          err_t *err);

/* Tests: fn(arg, path) runs in every engine_leveldb_repair_lock once its locks are held, so
   that a test can try to open the database there. Process-wide; NULL removes it. Not
   thread-safe against a running repair. */
void engine_leveldb_repair_set_hook(void (*fn)(void *arg, const char *path), void *arg);

void engine_leveldb_get_stats(engine_t *e, engine_leveldb_stats_t *st);
/* The source of the leaf of table `number` (INDEX_LEAF_NONE if it is not live, or has no
   leaf yet, or value filters are off). */
index_leaf_source_t engine_leveldb_leaf_source(engine_t *e, uint64_t number);
/* Runs the emulated table-build hook now and indexes every live table (what the background
   thread does every 100 ms for the tables listed for a second). */
int engine_leveldb_sync(engine_t *e, err_t *err);
/* engine_kind_t.describe and .check of both LevelDB rows (ldb_verify.c: the stock check,
   stock/stock_check.h, over LevelDB's readers; it writes nothing). describe: live table
   `number` of the open engine e read whole (entries, smallest and largest user key, malloc'd
   copies the caller frees whatever the result; the filter facts are added above the engine,
   api/db_inspect.c). check: through the real I/O layer with the stored parameters p (m 0: the
   filter cache is not checked); a table is read whole but for the meta index and key filter
   block, which bfh never reads, and each file's readers stop at its first damage (repair is
   LevelDB's), so a damaged file is reported once. BFH_E_BUSY if a bfh handle or a LevelDB
   program has the database open; BFH_E_INVALID if dir has no CURRENT, or is the own engine's
   (an IDENTITY file). */
int ldb_verify_describe(engine_t *e, uint64_t number, bfh_table_info *info, err_t *err);
int ldb_verify_check(const char *dir, const engine_filter_params_t *p, engine_damage_fn damage,
                     void *arg, engine_check_stats_t *st, uint64_t *cache_damaged, err_t *err);

/* The check before leveldb_open (doc/leveldb.md "Damage"): what LevelDB 1.23's recovery
   would accept silently or report without naming the file (a damaged length taken for a torn
   write, a MANIFEST that lost its last edits). CURRENT, the MANIFEST it names and every log
   LevelDB would replay are read with bfh's readers (LDB_LOG_CHECK_TAIL) through io; nothing is
   written. BFH_OK when dir has no CURRENT (nothing to recover) or every check passed;
   BFH_E_CORRUPT naming the file and offset ("manifest /db/MANIFEST-000005: record at 120:
   checksum mismatch"); BFH_E_IO, BFH_E_NOMEM. */
int ldb_precheck_dir(struct env *io, const char *dir, err_t *err);

/* Tests: while hold is nonzero the engine does not read its directory watch, whose events
   stay queued: as when the kernel has not queued a removal's event yet, though the file's
   name is gone (logs.c, ldb_dir_events). Thread-safe. */
void engine_leveldb_hold_watch(engine_t *e, int hold);

#endif

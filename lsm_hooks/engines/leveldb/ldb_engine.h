/* The LevelDB engine (lsm_hooks/engines/leveldb/): its engine_kind_t entry points, and extras
 * beyond engine.h for tests and benchmarks. REQUIRES for every function taking e: e was opened by
 * engine_leveldb_open.
 */
#ifndef BFH_LSM_HOOKS_LEVELDB_ENGINE_H
#define BFH_LSM_HOOKS_LEVELDB_ENGINE_H

#include <stdint.h>

#include "lsm_hooks/engines/engine.h"
#include "lsm_hooks/leveldb_format/ldb_entry.h"

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
/* engine_kind_t.describe and .check of both LevelDB rows (ldb_verify.c): stock_check_describe_open
   and stock_check_dir (stock/stock_check.h, which says what they read and return) over
   LevelDB's readers, the check through the real I/O layer with the stored parameters p (m 0:
   the filter cache is not checked). A table is read whole but for the meta index and key
   filter block, which bfh never reads. BFH_E_INVALID also for the own engine's directory (an
   IDENTITY file). */
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

/* index_sync's read_leaf (index_source_t) of the LevelDB table at path (reads.c; also the
   tests' and benches' build of a table's filters), through io: in one pass over the table, the
   value filter (p's m, k, seed) of every value entry, each value added under the items
   out->terms gives (NULL: the whole value's hash); with p->block_bits > 0 the block filter
   (else out->blocks NULL), and with out->want_map the value-to-block map (none when the
   table's blocks cannot be named). On BFH_OK out->filter, blocks, map_* and tag (the tag of
   the bytes read: what binds the filters to the table in the filter cache) are the caller's.
   Errors as ldb_table_scan(); BFH_E_INVALID if block_bits exceeds BLOCK_FILTER_MAX_BITS. */
int ldb_filter_read(struct env *io, const char *path, const value_index_params_t *p,
                    index_leaf_read_t *out, ldb_read_stats_t *st, err_t *err);

/* Tests: while hold is nonzero the engine does not read its directory watch, whose events
   stay queued: as when the kernel has not queued a removal's event yet, though the file's
   name is gone (logs.c, ldb_dir_events). Thread-safe. */
void engine_leveldb_hold_watch(engine_t *e, int hold);

#endif

/* testbed.h: the one door into the library's internals for the programs of this repository
 * that measure or check more than include/bfh.h shows. NOT PART OF THE PUBLIC API: it is
 * not installed, promises no compatibility, and changes whenever the library does.
 *
 * Who may include it: bench/, experiments/ and tests/api/ (and the helpers they share).
 * Nothing in the library itself: api/, search/, index/, lsm_hooks/ and the modules below them
 * include the headers they need directly. Outside them, only their unit tests and fuzz
 * targets (tests/lsm_hooks/, tests/fuzz/) include one of their headers other than this one.
 * Use include/bfh.h wherever it does the job (bfh_search with BFH_SEARCH_SCAN as a search
 * oracle, bfh_stats for the index's sizes and the database's m, k and seed) and say, at the
 * #include, what only this header gives.
 *
 * What it offers:
 *   - the engine and the value index behind a handle (bfh_internal_engine,
 *     bfh_internal_index), and with them the interfaces to use them: engine.h (views, the
 *     live tables, one table's scan), engine_lsm.h (the own engine: wait for compactions, the
 *     cost of the index rebuild at open), engines/leveldb/ldb_engine.h (the LevelDB engine:
 *     indexing and filter-cache counters), engines/stock/stock_rw.h (a sync of either stock
 *     engine's emulated hook, engine_stock_sync),
 *     index_sync.h (where a leaf came from) and leaf_cache.h (the filter cache's layout),
 *     value_index.h and search.h (a search over a chosen list of tables);
 *   - the read-only LevelDB and RocksDB engines' test hooks (engines/stock/stock_ro.h: run code
 *     before each table read, to make the file vanish there, or between a refresh's log reads
 *     and its second MANIFEST read), their retry counter and the table files they hold open (a
 *     limit to set);
 *   - a hook run while the LevelDB engine's repair holds its locks (engines/leveldb/ldb_engine.h),
 *     and a repair whose copy-and-swap steps go through an injected I/O layer, with a hook
 *     before each step (bfh_internal_repair_with_io, engines/repair_stage.h);
 *   - bfh_open with bfh's file accesses going through an injected I/O layer
 *     (bfh_internal_open_io), for fault injection;
 *   - the readers of LevelDB's files (engines/leveldb/ldb_engine.h: a table's value filter;
 *     leveldb_format/: ldb_log.h the write-ahead log, ldb_sstables.h the live table list,
 *     ldb_table.h a table file, ldb_version_edit.h the MANIFEST) for benches and tests that
 *     build, read or damage those files themselves.
 *
 * The modules below them (util/, filters/, hierarchy/, lsm/, workloads/) are units
 * with their own headers, not behind this door: the unit benchmarks and the synthetic-leaf
 * experiments (Fig. 7 and Table II build hierarchies over leaves they make, with no database)
 * include hierarchy/hierarchy.h and the like directly.
 *
 * Every pointer these functions return is borrowed from the handle: valid until bfh_close.
 */
#ifndef BFH_LSM_HOOKS_TESTBED_H
#define BFH_LSM_HOOKS_TESTBED_H

#include <stdint.h>

#include "bfh.h"
#include "api/db_params.h"
#include "util/env.h"
#include "lsm_hooks/engines/engine.h"
#include "lsm_hooks/engines/leveldb/ldb_engine.h"
#include "lsm_hooks/engines/lsm/engine_lsm.h"
#include "lsm_hooks/engines/rocksdb/rdb_engine.h"
#include "lsm_hooks/engines/stock/stock_ro.h"
#include "lsm_hooks/engines/stock/stock_rw.h"
#include "index/index_sync.h"
#include "index/leaf_cache.h"
#include "index/value_index.h"
#include "lsm_hooks/leveldb_format/ldb_log.h"
#include "lsm_hooks/leveldb_format/ldb_sstables.h"
#include "lsm_hooks/leveldb_format/ldb_table.h"
#include "lsm_hooks/leveldb_format/ldb_version_edit.h"
#include "search/search.h"
#include "index/cuckoo_index.h"
#include "index/standalone.h"
#include "query/terms.h"

/* The lean layout with block filters and no maps (index_bits_per_value 3, block_maps 0), a
   setting the memory experiments compare (doc/search.md "The lean index"). */
#define TESTBED_LEAN_BITS 3

engine_t *bfh_internal_engine(bfh_db *db);         /* borrowed */
value_index_t *bfh_internal_index(bfh_db *db);     /* borrowed; NULL with value filters off */
standalone_t *bfh_internal_standalone(bfh_db *db); /* borrowed; NULL without one */
cuckoo_index_t *bfh_internal_cuckoo(bfh_db *db);   /* borrowed; NULL without one */
/* The handle's declared attributes (borrowed; NULL without): terms_hash_term gives the item
   hash of one (attribute, term), as the filters and the Cuckoo Index hold it. */
terms_t *bfh_internal_terms(bfh_db *db);
/* The index's one writer (borrowed; NULL with value filters off): its loader at open
   (index_sync_loader_wait, index_sync_test_hold_loaders) and where each leaf came from. */
index_sync_t *bfh_internal_sync(bfh_db *db);
/* The k of value filters a new database opened with opt gets: opt's value_filter_hashes, or
   for 0 the layout's (bfh.h): for programs that build or name filters before any open. */
uint32_t bfh_internal_filter_hashes(const bfh_options *opt);

/* bfh_open with bfh's file accesses going through io (util/env.h; borrowed, it must outlive
   the handle; NULL: the real I/O layer): fault-injection tests. Both engines: BFH-PARAMS,
   and with the own engine every file of the engine; with the LevelDB engine the filter
   cache (bfh-filters/ and its .vf files) and the table reads of the indexer and of scans
   (LevelDB's own files go through LevelDB's Env, which bfh cannot hook). */
int bfh_internal_open_io(const char *path, const bfh_options *opt, struct env *io, bfh_db **db);

/* bfh_repair with the staged repair's file accesses (its copy of the database, the swap and
   the tidying: engines/repair_stage.h) going through io (borrowed; NULL: the real one): the
   fault sweep of every repair step. The engines' repairs themselves use the real one. */
int bfh_internal_repair_with_io(const char *path, const bfh_options *opt, struct env *io,
                                bfh_repair_report *report);
/* bfh_index_add with the stage's file accesses (api_repair_staged) going through io, as
   bfh_internal_repair_with_io: the fault sweep of every step of an add. */
int bfh_internal_index_add_with_io(const char *path, const bfh_options *opt,
                                   const bfh_attribute *attr, struct env *io);
/* Tests: fn(arg, step) runs before each step of a staged repair that changes the file system
   (repair_stage_set_step_hook), so that a test can stop the process there. */
#include "lsm_hooks/engines/repair_stage.h"

#endif

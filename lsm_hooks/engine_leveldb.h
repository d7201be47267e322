/* Extras of the LevelDB engine (engine_leveldb.c) beyond engine.h, for tests and benchmarks.
 * REQUIRES for every function taking e: e was opened by engine_leveldb_open(_io).
 */
#ifndef BFH_LSM_HOOKS_ENGINE_LEVELDB_H
#define BFH_LSM_HOOKS_ENGINE_LEVELDB_H

#include <stdint.h>

#include "lsm_hooks/engine.h"

/* With leaves in memory, a table's sidecar cache file is written once the table has been
   listed for this long (or at close): no cache file is written for a younger table. */
#define ENGINE_LEVELDB_CACHE_DELAY_NS 2000000000ull

typedef struct engine_leveldb_stats {
  uint64_t syncs;                /* runs of the emulated hook (views + background) */
  uint64_t tables_indexed;       /* leaves built by reading a table file */
  uint64_t tables_cached;        /* leaves loaded from the sidecar cache */
  uint64_t tables_unreadable;    /* tables that could not be read: no leaf, always scanned */
  uint64_t tables_removed;       /* leaves dropped after their table left the live list */
  uint64_t cache_write_failures; /* leaves on disk: a cache file (the leaf) not written; the
                                    table stays without a leaf (scanned) until a sync writes it */
  uint64_t index_ns;             /* time spent reading tables and building their filters */
  uint64_t index_bytes;          /* table bytes read to build filters */
  uint64_t log_bytes;            /* log bytes read */
  uint64_t log_rereads;          /* log reads repeated with the writers held off (a damaged-looking
                                    record: an append in flight, or damage) */
  char last_unreadable[256];     /* message of the last table that could not be read */
} engine_leveldb_stats_t;

/* Where the leaf of a table came from, as recorded by the sync that indexed it. */
typedef enum engine_leveldb_leaf_source {
  ENGINE_LEVELDB_LEAF_NONE,       /* not tracked (never listed, or gone), or not indexed yet */
  ENGINE_LEVELDB_LEAF_CACHED,     /* loaded from its sidecar cache file */
  ENGINE_LEVELDB_LEAF_READ,       /* built by reading the table file */
  ENGINE_LEVELDB_LEAF_UNREADABLE, /* the table could not be read: no leaf, always scanned */
} engine_leveldb_leaf_source_t;

struct lsm_io;
/* engine_leveldb_open with bfh's own file accesses of the engine going through io (borrowed;
   it must outlive the engine; NULL: lsm_io_default()): the bfh-filters/ mkdir, the filter
   cache files (load, write, removal) and the table reads of the indexer and of scans.
   LevelDB's own files (log, tables, MANIFEST, CURRENT) go through LevelDB's Env, which this
   cannot reach. Fault-injection tests (lsm/io.h). */
int engine_leveldb_open_io(const char *path, const bfh_options *opt, struct lsm_io *io,
                           value_index_t *index, engine_t **e, err_t *err);

void engine_leveldb_get_stats(engine_t *e, engine_leveldb_stats_t *st);
/* The source of the leaf of table `number` (ENGINE_LEVELDB_LEAF_NONE if the engine does not
   track that table). */
engine_leveldb_leaf_source_t engine_leveldb_leaf_source(engine_t *e, uint64_t number);
/* Runs the emulated table-build hook now (what the background thread does every 100 ms). */
int engine_leveldb_sync(engine_t *e, err_t *err);

/* LevelDB's own RepairDB on the (closed) database in path; the filter cache needs nothing:
   its files are checked against each live table at open and rebuilt when stale. */
int engine_leveldb_repair(const char *path, err_t *err);

#endif

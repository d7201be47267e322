/* Extras of the LevelDB engine (engine_leveldb.c) beyond engine.h, for tests and benchmarks.
 * REQUIRES for every function: e was opened by engine_leveldb_open.
 */
#ifndef BFH_LSM_HOOKS_ENGINE_LEVELDB_H
#define BFH_LSM_HOOKS_ENGINE_LEVELDB_H

#include <stdint.h>

#include "lsm_hooks/engine.h"

typedef struct engine_leveldb_stats {
  uint64_t syncs;             /* runs of the emulated hook (views + background) */
  uint64_t tables_indexed;    /* leaves built by reading a table file */
  uint64_t tables_cached;     /* leaves loaded from the sidecar cache */
  uint64_t tables_unreadable; /* tables that could not be read: no leaf, always scanned */
  uint64_t tables_removed;    /* leaves dropped after their table left the live list */
  uint64_t index_ns;          /* time spent reading tables and building their filters */
  uint64_t index_bytes;       /* table bytes read to build filters */
  uint64_t log_bytes;         /* log bytes read */
  char last_unreadable[256];  /* message of the last table that could not be read */
} engine_leveldb_stats_t;

void engine_leveldb_get_stats(engine_t *e, engine_leveldb_stats_t *st);
/* Runs the emulated table-build hook now (what the background thread does every 100 ms). */
int engine_leveldb_sync(engine_t *e, err_t *err);

#endif

/* The RocksDB engine: stock RocksDB (Debian's 7.8.3) through its C API, its default column
 * family (doc/rocksdb.md, "The read-write engine"). The entry points of its row in engines.c
 * and its testbed extras.
 */
#ifndef BFH_LSM_HOOKS_ROCKSDB_ENGINE_H
#define BFH_LSM_HOOKS_ROCKSDB_ENGINE_H

#include "bfh.h"
#include "lsm_hooks/engines/engine.h"
#include "util/err.h"

/* A table's leaf enters the sidecar cache once the table has been live this long (and every
   live table's at close). Each cache file is fdatasynced with its directory: written for
   every short-lived table of an ingest (RocksDB compacts a level-0 table within seconds), the
   syncs made puts up to 1.5x slower (rocksdb_bench); a table that lives 30 s is worth one. */
#define ENGINE_ROCKSDB_CACHE_DELAY_NS 30000000000ull

/* engine_kind_t.open of the row "rocksdb": rocksdb_open with create_if_missing as opt says,
   after engine_detect (a LevelDB or bfh directory is refused, untouched). Then every live
   table of the default column family is indexed (from the sidecar cache when it matches). */
int engine_rocksdb_open(const char *path, const bfh_options *opt, struct env *io,
                        index_sync_t *sync, engine_t **e, err_t *err);

/* engine_kind_t.repair: RocksDB's own rocksdb_repair_db, on a directory engine_detect does not
   name another engine's. */
int engine_rocksdb_repair(const char *path, const bfh_options *opt, bfh_repair_report *rep,
                          err_t *err);

/* engine_kind_t.describe (bfh_tables): the table's entries and key range read from its bytes,
   and its value filter built again as the index built it (rdb_describe.c). */
struct value_index;
int rdb_describe(engine_t *e, struct value_index *vi, uint64_t number, bfh_table_info *info,
                 err_t *err);

/* Testbed: has index_sync read every live table not indexed yet (as a flush does). */
int engine_rocksdb_sync(engine_t *e, err_t *err);

#endif

/* The read-only stock rows ("leveldb-readonly", "rocksdb-readonly"; bfh_options.read_only):
 * each searches a database that a stock LevelDB or RocksDB program holds open and writes to,
 * without its library and without writing into its directory: never leveldb_open (which would
 * take the LOCK, rotate the LOG, write a MANIFEST and turn the logs into a table), rocksdb_open
 * (which takes the LOCK, writes a new MANIFEST, an info LOG and OPTIONS files) nor
 * rocksdb_open_as_secondary. Each is the read-only stock core (stock_ro.h) over bfh's readers of
 * its format, whose file gives the design (leveldb_ro/readonly.c; rocksdb_ro/rdb_readonly.c,
 * doc/rocksdb.md "The read-only engine"). The value filters live in memory, and with an index
 * directory also in <index_dir>/bfh-filters/ next to <index_dir>/BFH-PARAMS.
 */
#ifndef BFH_LSM_HOOKS_STOCK_RO_ROWS_H
#define BFH_LSM_HOOKS_STOCK_RO_ROWS_H

#include <stdint.h>

#include "bfh.h"
#include "index/index_sync.h"
#include "lsm_hooks/engines/engine.h"
#include "lsm_hooks/engines/stock/stock_ro.h"
#include "util/env.h"
#include "util/err.h"

/* Opens the LevelDB (RocksDB: its column family opt->column_family, "default" when NULL)
   database in path read-only. opt->index_dir (may be NULL: memory only; REQUIRES: outside path,
   as bfh_open checks) is created if missing (with its parents) and gets the filter cache. io:
   bfh's file accesses (NULL: the real I/O layer); sync: borrowed, NULL with value filters off.
   On BFH_OK *e is new (close with e->ops->close). BFH_E_INVALID if path holds no database of
   the format (no CURRENT) or another engine's; BFH_E_UNSUPPORTED for what the engine does not
   read (RocksDB: a comparator other than the bytewise one, tables outside the directory).
   Nothing is created in path. */
int engine_leveldb_ro_open(const char *path, const bfh_options *opt, env_t *io, index_sync_t *sync,
                           engine_t **e, err_t *err);
int engine_rocksdb_ro_open(const char *path, const bfh_options *opt, env_t *io, index_sync_t *sync,
                           engine_t **e, err_t *err);

/* engine_kind_t.describe (bfh_tables) of the RocksDB row: rdb_describe's reading of the table;
   BFH_E_BUSY when the owner compacted it away since it was listed. */
int engine_rocksdb_ro_describe(engine_t *e, uint64_t number, bfh_table_info *info, err_t *err);

#endif

/* The read-only RocksDB engine (row "rocksdb-readonly", bfh_options.read_only): searches the
 * default column family of a RocksDB database that a stock RocksDB program holds open and
 * writes to, without RocksDB and without writing into its directory (doc/rocksdb.md "The
 * read-only engine").
 *
 * It never calls rocksdb_open (which takes the LOCK, writes a new MANIFEST, an info LOG and
 * OPTIONS files) nor rocksdb_open_as_secondary. It reads, with bfh's own readers
 * (rocksdb_format/): CURRENT and the MANIFEST it names (rdb_manifest.h: replayed, then read on
 * from where it stopped), the live tables (rdb_table.h, each held open) and the live WALs
 * (rdb_log.h). The value filters live in memory, and with an index directory also in
 * <index_dir>/bfh-filters/ next to <index_dir>/BFH-PARAMS. The consistency argument is at the
 * top of rdb_readonly.c.
 */
#ifndef BFH_LSM_HOOKS_ROCKSDB_READONLY_H
#define BFH_LSM_HOOKS_ROCKSDB_READONLY_H

#include <stdint.h>

#include "bfh.h"
#include "lsm_hooks/engines/engine.h"
#include "index/index_sync.h"
#include "lsm_hooks/engines/stock/stock_ro.h"
#include "util/err.h"

struct env;

/* Opens the RocksDB database in path read-only. opt->index_dir (may be NULL: memory only;
   REQUIRES: outside path, as bfh_open checks) is created if missing and gets the filter
   cache. io: bfh's file accesses (NULL: the real I/O
   layer); sync: borrowed, NULL with value filters off. On BFH_OK *e is new (close with
   e->ops->close). BFH_E_INVALID if path holds no RocksDB database (no CURRENT) or another
   engine's; BFH_E_UNSUPPORTED for what the engine does not read (a comparator other than
   the bytewise one, tables outside the directory). Nothing is created in path. */
int engine_rocksdb_ro_open(const char *path, const bfh_options *opt, struct env *io,
                           index_sync_t *sync, engine_t **e, err_t *err);

/* engine_kind_t.describe (bfh_tables) of the row: rdb_describe's reading of the table;
   BFH_E_BUSY when the owner compacted it away since it was listed. */
int engine_rocksdb_ro_describe(engine_t *e, uint64_t number, bfh_table_info *info, err_t *err);

#endif

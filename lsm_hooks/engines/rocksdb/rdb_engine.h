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

/* engine_kind_t.repair_lock: a directory engine_detect takes for RocksDB's, with bfh's and
   RocksDB's locks taken (foreign_repair_lock). repair: RocksDB's own rocksdb_repair_db on the
   stage, after counting with bfh's readers the damaged tables it will drop. families: the
   column families the MANIFEST names, read with bfh's reader. */
int engine_rocksdb_repair_lock(const char *path, void **lock, err_t *err);
int engine_rocksdb_repair(const char *dir, const bfh_options *opt, bfh_repair_report *rep,
                          err_t *err);
int engine_rocksdb_families(const char *path, char ***names, size_t *n, err_t *err);

/* engine_kind_t.describe (bfh_tables): the table's entries and key range read from its bytes
   (rdb_verify.c). */
int rdb_describe(engine_t *e, uint64_t number, bfh_table_info *info, err_t *err);

/* engine_kind_t.check of the row "rocksdb" (rdb_verify.c): stock_check_dir (stock/stock_check.h)
   over RocksDB's readers, through the real I/O layer with the stored parameters p (m 0: the
   filter cache is not checked). */
int rdb_verify_check(const char *dir, const engine_filter_params_t *p, engine_damage_fn damage,
                     void *arg, engine_check_stats_t *st, uint64_t *cache_damaged, err_t *err);

/* What RocksDB's open would pass over without a word, checked before it (the engine's open):
   stock_check_precheck (stock/stock_check.h) over RocksDB's readers, a database that lost its
   CURRENT included (nothing may open or create a database over it), every live WAL read to its
   end (RocksDB's default recovery, point in time, stops at a damaged record and drops every
   write after it, acknowledged or not). Reads through io. Its results, and BFH_E_UNSUPPORTED
   for a compressed WAL. */
int rdb_verify_precheck(struct env *io, const char *dir, err_t *err);

/* After RocksDB's open failed with err (BFH_E_CORRUPT): RocksDB names the wrong file for some
   damage (a table footer's checksum type is reported "in file MANIFEST-..."). Reads the
   footer, metaindex and properties of every live table with bfh's reader; at the first damaged
   one err becomes its message (file and offset) followed by RocksDB's, and 1 is returned; else
   0 and err is left alone. */
int rdb_verify_name_damage(struct env *io, const char *dir, err_t *err);

/* Testbed: fn(arg) runs before each WAL iterator a view's WAL read makes (rdb_wal.c); a message
   it returns (borrowed) stands for RocksDB's error in making that iterator, e.g. "Operation
   failed. Try again.: ...", so that a test can drive the retries. NULL removes the hook. */
void engine_rocksdb_set_wal_hook(engine_t *e, const char *(*fn)(void *arg), void *arg);

/* Testbed: how many WAL iterators ended in a transient error (RocksDB's "Try again", a WAL a
   purge removed): each was followed by a new iterator, or came after the writes the read
   wanted. */
uint64_t engine_rocksdb_wal_transients(engine_t *e);

#endif

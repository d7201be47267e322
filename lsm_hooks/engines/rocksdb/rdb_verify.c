/* The RocksDB format's hooks of the stock check (stock/stock_check.h, which says what is
 * checked), and over them the RocksDB engine's bfh_check (engine_kind_t.check), bfh_tables
 * (describe) and the check before RocksDB's open (doc/rocksdb.md, "Checking and repair"). What
 * is RocksDB's: the live tables are every column family's, each read whole (footer, metaindex,
 * properties, index and partitions, every data and range-deletion block with its checksum:
 * rdb_table.h) as NNNNNN.sst or NNNNNN.ldb (rdb_table_path), or reported not checked in another
 * of the database's db_paths; the live WALs are those rdb_version_live_logs lists. It writes
 * nothing.
 */
#include <stdio.h>
#include <stdlib.h>

#include "bfh.h"
#include "lsm_hooks/engines/rocksdb/rdb_adapter.h"
#include "lsm_hooks/engines/stock/stock_check.h"
#include "lsm_hooks/rocksdb_format/rdb_log.h"
#include "lsm_hooks/rocksdb_format/rdb_manifest.h"
#include "lsm_hooks/rocksdb_format/rdb_table.h"

static int admit(env_t *io, const char *dir, err_t *err) {
  int has;
  int rc = stock_file_exists(io, dir, "CURRENT", &has, err);
  if (rc != BFH_OK || has || stock_check_has_files(io, dir)) return rc;
  return err_set(err, BFH_E_INVALID, "%s: not a RocksDB database (no CURRENT, no tables)", dir);
}

/* The live WALs are those RocksDB's recovery reads (rdb_version_live_logs); it may delete
   every WAL once all are flushed, so none must exist. */
static int manifest(env_t *io, const char *path, stock_check_live_t *live, uint64_t *records,
                    err_t *err) {
  rdb_version_t v = {0};
  int rc = rdb_version_read(io, path, 0, RDB_LOG_CHECK_TAIL, &v, NULL, err);
  if (rc == BFH_OK && !rdb_version_cf(&v, 0))
    rc = err_set(err, BFH_E_CORRUPT, "manifest %s: at offset 0: no default column family", path);
  *records += v.edits;
  live->known = 1;
  live->min_log = rdb_version_min_log(&v);
  for (size_t i = 0; rc == BFH_OK && i < v.nfiles; i++)
    rc = stock_check_live_add(live, v.files[i].number, v.files[i].path_id != 0, err);
  rdb_version_release(&v);
  return rc;
}

/* Data-block entries come in ascending internal key order (range tombstones after them). */
static int visit(void *arg, const rdb_entry_t *e) {
  if (!arg || e->type == RDB_TYPE_RANGE_DELETION) return 0;
  return stock_key_range_add(arg, e->key, e->key_len);
}

static int table_scan(env_t *io, const char *path, stock_key_range_t *range, uint64_t *blocks,
                      err_t *err) {
  rdb_read_stats_t rs = {0};
  int rc = rdb_table_scan(io, path, visit, range, &rs, err);
  *blocks += rs.blocks;
  return rc;
}

static int ignore_log_entry(void *arg, const rdb_log_entry_t *e) {
  (void)arg, (void)e;
  return 0;
}

static int log_read(env_t *io, const char *path, uint64_t number, uint64_t *end, uint64_t *records,
                    uint64_t *old_bytes, err_t *err) {
  rdb_log_stats_t ls = {0};
  int rc =
      rdb_log_read(io, path, number, 0, RDB_LOG_CHECK_TAIL, ignore_log_entry, NULL, end, &ls, err);
  *records += ls.records;
  *old_bytes = ls.old_bytes;
  return rc;
}

/* The OPTIONS-NNNNNN files are RocksDB's text record of its options: counted, not parsed (an
   open of the engine reads none of them; it writes a new one). */
static const stock_check_format_t format = {
    .engine = "RocksDB",
    .dir_kind = ENGINE_DIR_ROCKSDB,
    .lock_hint = "",
    .unsupported_checked = 1,
    .lost_current = 1,
    .counted_prefix = "OPTIONS-",
    .tables = {rdb_table_path_write, rdb_table_tag},
    .table_path = rdb_table_path,
    .admit = admit,
    .current = rdb_manifest_current,
    .manifest = manifest,
    .table_scan = table_scan,
    .log_read = log_read,
};

int rdb_verify_check(const char *dir, const engine_filter_params_t *p, engine_damage_fn damage,
                     void *arg, engine_check_stats_t *st, uint64_t *cache_damaged, err_t *err) {
  return stock_check_dir(&format, env_default(), dir, p->m, p->k, p->seed, damage, arg, st,
                         cache_damaged, err);
}

int rdb_verify_precheck(env_t *io, const char *dir, err_t *err) {
  return stock_check_precheck(&format, io, dir, err);
}

int rdb_verify_name_damage(env_t *io, const char *dir, err_t *err) {
  rdb_version_t v = {0};
  err_t e;
  if (rdb_version_load(io, dir, 0, &v, NULL, NULL, &e) != BFH_OK) return 0;
  int found = 0;
  for (size_t i = 0; i < v.nfiles && !found; i++) {
    char *path;
    if (rdb_table_path(dir, v.files[i].number, &path, &e) != BFH_OK) break; /* RocksDB's word */
    rdb_table_props_t props = {0};
    int rc = rdb_table_props_read(io, path, &props, &e);
    rdb_table_props_release(&props);
    free(path);
    if (rc == BFH_E_CORRUPT || rc == BFH_E_UNSUPPORTED) { /* RocksDB said Corruption */
      char was[ERR_MSG_BYTES];
      snprintf(was, sizeof was, "%s", err->msg);
      err_set(err, BFH_E_CORRUPT, "%s (RocksDB's open: %s)", e.msg, was);
      found = 1;
    }
  }
  rdb_version_release(&v);
  return found;
}

int rdb_describe(engine_t *e, uint64_t number, bfh_table_info *info, err_t *err) {
  return stock_check_describe_open(&format, e, number, info, err);
}

int rdb_describe_table(env_t *io, const char *dir, uint64_t number, bfh_table_info *info,
                       err_t *err) {
  return stock_check_describe(&format, io, dir, number, info, err);
}

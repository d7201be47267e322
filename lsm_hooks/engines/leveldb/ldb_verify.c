/* ldb_verify: the LevelDB format's hooks of the stock check (stock/stock_check.h), and the
   LevelDB engines' check, describe and precheck over them (ldb_engine.h). */
#include "lsm_hooks/engines/leveldb/adapter.h"
#include "lsm_hooks/engines/stock/stock_check.h"
#include "lsm_hooks/leveldb_format/ldb_log.h"
#include "lsm_hooks/leveldb_format/ldb_table.h"
#include "lsm_hooks/leveldb_format/ldb_version_edit.h"

static int admit(env_t *io, const char *dir, err_t *err) {
  int has;
  int rc = stock_file_exists(io, dir, "CURRENT", &has, err);
  if (rc != BFH_OK) return rc;
  if (!has) return err_set(err, BFH_E_INVALID, "%s: not a LevelDB database (no CURRENT)", dir);
  /* IDENTITY: the own engine's marker (lsm/filename.h) */
  if ((rc = stock_file_exists(io, dir, "IDENTITY", &has, err)) != BFH_OK) return rc;
  if (has && engine_detect_dir(dir) != ENGINE_DIR_ROCKSDB)
    return err_set(err, BFH_E_INVALID, "%s: a database of bfh's own engine, not LevelDB", dir);
  return BFH_OK;
}

/* A MANIFEST names the live files once it has an edit with a log number: LevelDB writes one
   first in every MANIFEST. LevelDB's recovery replays the logs from that number on and the
   previous log; it deletes a log only after an edit naming a newer one is written, so the
   oldest live one missing means lost edits. */
static int manifest(env_t *io, const char *path, stock_check_live_t *live, uint64_t *records,
                    err_t *err) {
  ldb_version_t v = {0};
  ldb_read_stats_t rs = {0};
  int rc = ldb_version_check(io, path, &v, &rs, err);
  *records += rs.blocks;
  live->known = v.has_log_number;
  live->min_log = live->needed_log = v.log_number;
  live->prev_log = v.prev_log_number;
  for (size_t i = 0; rc == BFH_OK && i < v.nfiles; i++)
    rc = stock_check_live_add(live, v.files[i].number, 0, err);
  ldb_version_release(&v);
  return rc;
}

/* Entries come in ascending internal key order: the first is the smallest, the last the
   largest. */
static int visit(void *arg, const ldb_entry_t *e) {
  return arg ? stock_key_range_add(arg, e->key, e->key_len) : 0;
}

static int table_scan(env_t *io, const char *path, stock_key_range_t *range, uint64_t *blocks,
                      err_t *err) {
  ldb_read_stats_t rs = {0};
  int rc = ldb_table_scan(io, path, visit, range, &rs, err);
  *blocks += rs.blocks;
  return rc;
}

static int log_read(env_t *io, const char *path, uint64_t number, uint64_t *end, uint64_t *records,
                    uint64_t *old_bytes, err_t *err) {
  (void)number;
  ldb_read_stats_t rs = {0};
  int rc = ldb_log_read_flags(io, path, 0, LDB_LOG_CHECK_TAIL, visit, NULL, end, &rs, err);
  *records += rs.blocks;
  *old_bytes = 0;
  return rc;
}

static const stock_check_format_t format = {
    .engine = "LevelDB",
    .dir_kind = ENGINE_DIR_LEVELDB,
    .lock_hint = ", or search it read-only",
    .tables = {ldb_table_path_write, ldb_table_tag},
    .table_path = ldb_table_path,
    .admit = admit,
    .current = stock_current_read,
    .manifest = manifest,
    .table_scan = table_scan,
    .log_read = log_read,
};

int ldb_verify_describe(engine_t *e, uint64_t number, bfh_table_info *info, err_t *err) {
  return stock_check_describe_open(&format, e, number, info, err);
}

int ldb_verify_check(const char *dir, const engine_filter_params_t *p, engine_damage_fn damage,
                     void *arg, engine_check_stats_t *st, uint64_t *cache_damaged, err_t *err) {
  return stock_check_dir(&format, env_default(), dir, p->m, p->k, p->seed, damage, arg, st,
                         cache_damaged, err);
}

int ldb_precheck_dir(env_t *io, const char *dir, err_t *err) {
  return stock_check_precheck(&format, io, dir, err);
}

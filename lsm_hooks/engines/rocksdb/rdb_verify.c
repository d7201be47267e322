/* bfh_check of the RocksDB engine (engine_kind_t.check): every file of a closed RocksDB
 * database read with bfh's own readers (rocksdb_format/), damage reported with file and offset
 * (doc/rocksdb.md, "Checking and repair"). It writes nothing.
 *
 *   CURRENT        names a MANIFEST-NNNNNN that exists; a database without CURRENT whose
 *                  directory holds tables, logs or a MANIFEST is damage ("missing"), and every
 *                  table and log of the directory is then checked
 *   MANIFEST       every record's checksum, every version edit parsed and replayed
 *                  (rdb_manifest.h): that gives the live tables and logs
 *   tables         every live table of every column family read whole: footer, metaindex,
 *                  properties, index (and partitions), every data block and range-deletion
 *                  block with its checksum (rdb_table.h); a live table missing (neither
 *                  NNNNNN.sst nor NNNNNN.ldb, rdb_table_path) is damage
 *   WALs           every live log (rdb_version_live_logs) read to its end with
 *                  RDB_LOG_CHECK_TAIL, every write batch decoded; a record cut short at the end
 *                  is a torn tail (a write in flight at a crash), not damage
 *   bfh-filters/   each cache file loaded against its live table (tag, m, k, seed): a damaged
 *                  one is harmless (the next open builds it again from its table) and counted
 *                  in *cache_damaged, not in st->damaged
 * The OPTIONS-NNNNNN files are RocksDB's text record of its options: counted, not parsed (an
 * open of the engine reads none of them; it writes a new one).
 * Like the LevelDB check, each reader stops at a file's first damage: a damaged file is
 * reported once, at the offset of its first damaged block or record.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bfh.h"
#include "filters/block_filter.h"
#include "filters/value_filter.h"
#include "lsm/verify.h"
#include "lsm_hooks/engines/engine_detect.h"
#include "lsm_hooks/engines/foreign_check.h"
#include "lsm_hooks/engines/rocksdb/rdb_adapter.h"
#include "index/index_sync.h"
#include "lsm_hooks/rocksdb_format/rdb_log.h"
#include "lsm_hooks/rocksdb_format/rdb_manifest.h"
#include "lsm_hooks/rocksdb_format/rdb_table.h"
#include "util/path.h"

typedef struct check {
  foreign_check_t fc;    /* first: the tally, the damage callback */
  rdb_version_t version; /* the MANIFEST's, when live_known */
  int live_known;        /* the MANIFEST was replayed whole, without damage */
} check_t;

static int ignore_entry(void *arg, const rdb_entry_t *e) {
  (void)arg, (void)e;
  return 0;
}

static int ignore_log_entry(void *arg, const rdb_log_entry_t *e) {
  (void)arg, (void)e;
  return 0;
}

/* Whether the directory holds what only a database has: a table, a log or a MANIFEST. */
static int has_database_files(env_t *io, const char *dir) {
  char **names = NULL;
  size_t n = 0;
  err_t e;
  if (env_list_dir(io, dir, &names, &n, &e) != BFH_OK) return 0;
  int found = 0;
  for (size_t i = 0; i < n && !found; i++) {
    uint64_t num;
    found = stock_table_file_number(names[i], &num) || stock_file_number(names[i], "log", &num) ||
            strncmp(names[i], "MANIFEST-", 9) == 0;
  }
  env_names_free(names, n);
  return found;
}

int rdb_verify_lost_current(env_t *io, const char *dir, err_t *err) {
  int has;
  int rc = stock_file_exists(io, dir, "CURRENT", &has, err);
  if (rc != BFH_OK) return rc;
  if (has || !has_database_files(io, dir)) return BFH_OK;
  return err_set(err, BFH_E_CORRUPT,
                 "%s: CURRENT is missing, but the directory holds RocksDB's tables, logs or "
                 "MANIFEST: a database lost its CURRENT (nothing was opened or created over it; "
                 "see doc/rocksdb.md \"Checking and repair\")",
                 dir);
}

static int ignore_log_entry(void *arg, const rdb_log_entry_t *e);

int rdb_verify_precheck(env_t *io, const char *dir, err_t *err) {
  int rc = rdb_verify_lost_current(io, dir, err);
  if (rc != BFH_OK) return rc;
  rdb_version_t v = {0};
  char *manifest = NULL;
  rc = rdb_version_load(io, dir, RDB_LOG_CHECK_TAIL, &v, &manifest, NULL, err);
  if (rc == BFH_NOT_FOUND) { /* no CURRENT (a new database), or the MANIFEST it names */
    char why[ERR_MSG_BYTES];
    snprintf(why, sizeof why, "%s", err ? err->msg : "");
    int has;
    rc = stock_file_exists(io, dir, "CURRENT", &has, err);
    if (rc == BFH_OK && has)
      rc = err_set(err, BFH_E_CORRUPT, "%s/CURRENT: names a MANIFEST that does not exist (%s)", dir,
                   why);
    free(manifest);
    rdb_version_release(&v);
    return rc;
  }
  free(manifest);
  uint64_t *logs = NULL;
  size_t n = 0;
  if (rc == BFH_OK) rc = rdb_version_live_logs(io, dir, &v, &logs, &n, err);
  for (size_t i = 0; i < n && rc == BFH_OK; i++) {
    char *path = path_fmt("%s/%06llu.log", dir, (unsigned long long)logs[i]);
    if (!path) {
      rc = err_set(err, BFH_E_NOMEM, "%s/%06llu.log: no memory for its path", dir,
                   (unsigned long long)logs[i]);
      break;
    }
    rc = rdb_log_read(io, path, logs[i], 0, RDB_LOG_CHECK_TAIL, ignore_log_entry, NULL, NULL, NULL,
                      err);
    free(path);
    if (rc == BFH_NOT_FOUND) rc = BFH_OK; /* listed a moment ago: gone means nothing to read */
  }
  free(logs);
  rdb_version_release(&v);
  return rc;
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

/* CURRENT and the MANIFEST it names, replayed. */
static int check_manifest(check_t *c, err_t *err) {
  uint64_t size;
  char *manifest = NULL;
  err_t e;
  int rc = rdb_manifest_current(c->fc.io, c->fc.dir, &manifest, &e);
  if (rc == BFH_NOT_FOUND) {
    foreign_check_report(&c->fc, "CURRENT", 0, "missing (the directory holds tables, logs or a MANIFEST)");
    return BFH_OK;
  }
  if (rc != BFH_OK) return foreign_check_result(&c->fc, "CURRENT", rc, &e, err);
  char *path = path_join(c->fc.dir, "CURRENT");
  if (!path) {
    free(manifest);
    return err_set(err, BFH_E_NOMEM, "%s/CURRENT: no memory for its path", c->fc.dir);
  }
  foreign_check_count(&c->fc, path, &size);
  free(path);
  const char *name = strrchr(manifest, '/') ? strrchr(manifest, '/') + 1 : manifest;
  if (!env_exists(c->fc.io, manifest)) {
    foreign_check_report(&c->fc, name, 0, "missing (named by CURRENT)");
    free(manifest);
    return BFH_OK;
  }
  foreign_check_count(&c->fc, manifest, &size);
  rc = rdb_version_read(c->fc.io, manifest, 0, RDB_LOG_CHECK_TAIL, &c->version, NULL, &e);
  if (rc == BFH_OK && !rdb_version_cf(&c->version, 0))
    rc = err_set(&e, BFH_E_CORRUPT, "manifest %s: at offset 0: no default column family", manifest);
  c->fc.st->records += c->version.edits;
  c->live_known = rc == BFH_OK;
  if (!c->live_known) { /* the directory's files are then all checked */
    rdb_version_release(&c->version);
  }
  rc = foreign_check_result(&c->fc, name, rc, &e, err);
  free(manifest);
  return rc;
}

static int check_table(check_t *c, const char *name, err_t *err) {
  char *path = path_join(c->fc.dir, name);
  if (!path) return err_set(err, BFH_E_NOMEM, "%s/%s: no memory for its path", c->fc.dir, name);
  uint64_t size;
  foreign_check_count(&c->fc, path, &size);
  rdb_read_stats_t rs = {0};
  err_t e;
  int rc = rdb_table_scan(c->fc.io, path, ignore_entry, NULL, &rs, &e);
  free(path);
  c->fc.st->blocks += rs.blocks;
  return foreign_check_result(&c->fc, name, rc, &e, err);
}

static int check_log(check_t *c, const char *name, uint64_t number, err_t *err) {
  char *path = path_join(c->fc.dir, name);
  if (!path) return err_set(err, BFH_E_NOMEM, "%s/%s: no memory for its path", c->fc.dir, name);
  uint64_t size, end = 0;
  foreign_check_count(&c->fc, path, &size);
  rdb_log_stats_t ls = {0};
  err_t e;
  int rc = rdb_log_read(c->fc.io, path, number, 0, RDB_LOG_CHECK_TAIL, ignore_log_entry, NULL, &end,
                        &ls, &e);
  free(path);
  c->fc.st->records += ls.records;
  if (rc == BFH_OK && end + ls.old_bytes < size) {
    c->fc.st->torn_tails++;
    c->fc.st->torn_tail_bytes += size - end - ls.old_bytes;
  }
  return foreign_check_result(&c->fc, name, rc, &e, err);
}

/* The live tables and logs (one table missing is damage), or every table and log of the
   directory when the MANIFEST could not say which are live. */
static int check_files(check_t *c, err_t *err) {
  char **names = NULL;
  size_t n = 0;
  const rdb_version_t *v = &c->version;
  int rc = env_list_dir(c->fc.io, c->fc.dir, &names, &n, err);
  uint64_t min_log = c->live_known ? rdb_version_min_log(v) : 0;
  for (size_t i = 0; i < n && rc == BFH_OK; i++) {
    uint64_t number;
    if (stock_table_file_number(names[i], &number)) {
      if (!c->live_known) rc = check_table(c, names[i], err);
    } else if (rdb_log_number_from_name(names[i], &number)) {
      if (number >= min_log) rc = check_log(c, names[i], number, err);
    } else if (strncmp(names[i], "OPTIONS-", 8) == 0) {
      char *path = path_join(c->fc.dir, names[i]);
      uint64_t size;
      if (path)
        foreign_check_count(&c->fc, path, &size);
      else
        rc = err_set(err, BFH_E_NOMEM, "%s/%s: no memory for its path", c->fc.dir, names[i]);
      free(path);
    }
  }
  env_names_free(names, n);
  for (size_t i = 0; c->live_known && i < v->nfiles && rc == BFH_OK; i++) {
    char *path;
    rc = rdb_table_path(c->fc.dir, v->files[i].number, &path, err);
    if (rc != BFH_OK) break;
    const char *name = strrchr(path, '/') + 1;
    if (v->files[i].path_id != 0)
      foreign_check_report(&c->fc, name, 0, "not checked: in another of the database's db_paths");
    else if (env_exists(c->fc.io, path))
      rc = check_table(c, name, err);
    else
      foreign_check_report(&c->fc, name, 0, "missing (named by the MANIFEST)");
    free(path);
  }
  return rc;
}

int rdb_verify_dir(env_t *io, const char *dir, uint64_t m, uint32_t k, uint64_t seed,
                   engine_damage_fn damage, void *arg, engine_check_stats_t *st,
                   uint64_t *cache_damaged, err_t *err) {
  int has;
  int rc = stock_file_exists(io, dir, "CURRENT", &has, err);
  if (rc != BFH_OK) return rc;
  if (!has && !has_database_files(io, dir))
    return err_set(err, BFH_E_INVALID, "%s: not a RocksDB database (no CURRENT, no tables)", dir);
  rc = engine_detect_check(dir, ENGINE_DIR_ROCKSDB, err);
  if (rc != BFH_OK) return rc;
  env_lock_t *lock = NULL;
  rc = foreign_check_lock(io, dir, "RocksDB", "", &lock, err);
  check_t c = {.fc = {.io = io, .dir = dir, .damage = damage, .arg = arg, .st = st,
                      .unsupported_checked = 1}};
  static const foreign_tables_t tables = {rdb_table_path_write, rdb_table_tag};
  if (rc == BFH_OK) rc = check_manifest(&c, err);
  if (rc == BFH_OK) rc = check_files(&c, err);
  if (rc == BFH_OK && m) rc = foreign_check_cache(&c.fc, &tables, m, k, seed, cache_damaged, err);
  rdb_version_release(&c.version);
  env_unlock(lock);
  return rc;
}

int rdb_verify_check(const char *dir, const engine_filter_params_t *p, engine_damage_fn damage,
                     void *arg, engine_check_stats_t *st, uint64_t *cache_damaged, err_t *err) {
  return rdb_verify_dir(env_default(), dir, p->m, p->k, p->seed, damage, arg, st, cache_damaged,
                        err);
}

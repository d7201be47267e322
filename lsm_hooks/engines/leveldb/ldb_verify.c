/* ldb_verify: the LevelDB database as bfh_tables and bfh_check see it (engines/leveldb/ldb_verify.h). */
#include "lsm_hooks/engines/leveldb/ldb_verify.h"
#include "lsm_hooks/engines/engine_detect.h"
#include "lsm_hooks/engines/foreign_check.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "filters/block_filter.h"
#include "filters/value_filter.h"
#include "index/index_sync.h"
#include "lsm_hooks/engines/leveldb/filter.h"
#include "lsm_hooks/engines/leveldb/adapter.h"
#include "lsm_hooks/leveldb_format/ldb_log.h"
#include "lsm_hooks/engines/leveldb/precheck.h"
#include "lsm_hooks/leveldb_format/ldb_table.h"
#include "lsm_hooks/leveldb_format/ldb_version_edit.h"
#include "util/path.h"

/* ---- bfh_tables ------------------------------------------------------------------------ */

/* Entries come in ascending internal key order: the first is the smallest, the last the
   largest. */
static int visit_range(void *arg, const ldb_entry_t *e) {
  return stock_key_range_add(arg, e->key, e->key_len);
}

int ldb_verify_describe(engine_t *e, uint64_t number, bfh_table_info *info, err_t *err) {
  engine_leveldb_t *el = (engine_leveldb_t *)e;
  char *path;
  int rc = ldb_table_path(el->rw.path, number, &path, err);
  if (rc != BFH_OK) return rc;
  stock_key_range_t r = {0};
  rc = stock_key_range_give(&r, path, ldb_table_scan(el->rw.io, path, visit_range, &r, NULL, err),
                            info, err);
  if (rc == BFH_NOT_FOUND) /* the view pins the version: a table cannot go away under it */
    rc = err_set(err, BFH_E_CORRUPT, "table %s: missing", path);
  free(path);
  return rc;
}

/* ---- bfh_check ------------------------------------------------------------------------- */

typedef struct check {
  foreign_check_t fc;    /* first: the tally, the damage callback */
  ldb_version_t version; /* the MANIFEST's, when live_known */
  int live_known;        /* the MANIFEST was read whole, without damage */
} check_t;

static int ignore_entry(void *arg, const ldb_entry_t *e) {
  (void)arg, (void)e;
  return 0;
}

/* CURRENT and the MANIFEST it names: every record's checksum, and every version edit parsed
   and applied, which gives the live files. */
static int check_manifest(check_t *c, err_t *err) {
  char *path;
  err_t e;
  int rc = stock_current_read(c->fc.io, c->fc.dir, &path, &e);
  if (rc == BFH_OK || rc == BFH_E_CORRUPT) {
    char *current = path_join(c->fc.dir, "CURRENT");
    if (!current) rc = err_set(&e, BFH_E_NOMEM, "%s/CURRENT: no memory for its path", c->fc.dir);
    uint64_t size;
    if (current) foreign_check_count(&c->fc, current, &size);
    free(current);
  }
  if (rc == BFH_E_CORRUPT) {
    foreign_check_report(&c->fc, "CURRENT", 0, "not \"MANIFEST-<number>\\n\"");
    return BFH_OK;
  }
  if (rc != BFH_OK) {
    if (err) *err = e;
    return rc;
  }
  const char *name = strrchr(path, '/') + 1;
  if (!env_exists(c->fc.io, path)) {
    foreign_check_report(&c->fc, name, 0, "missing (named by CURRENT)");
    free(path);
    return BFH_OK;
  }
  uint64_t size;
  foreign_check_count(&c->fc, path, &size);
  ldb_read_stats_t rs = {0};
  rc = ldb_version_check(c->fc.io, path, &c->version, &rs, &e);
  c->fc.st->records += rs.blocks;
  c->live_known = rc == BFH_OK && c->version.has_log_number;
  rc = foreign_check_result(&c->fc, name, rc, &e, err);
  free(path);
  return rc;
}

static int check_table(check_t *c, const char *name, err_t *err) {
  char *path = path_join(c->fc.dir, name);
  if (!path) return err_set(err, BFH_E_NOMEM, "%s/%s: no memory for its path", c->fc.dir, name);
  uint64_t size;
  foreign_check_count(&c->fc, path, &size);
  ldb_read_stats_t rs = {0};
  err_t e;
  int rc = ldb_table_scan(c->fc.io, path, ignore_entry, NULL, &rs, &e);
  free(path);
  c->fc.st->blocks += rs.blocks;
  return foreign_check_result(&c->fc, name, rc, &e, err);
}

static int check_log(check_t *c, const char *name, err_t *err) {
  char *path = path_join(c->fc.dir, name);
  if (!path) return err_set(err, BFH_E_NOMEM, "%s/%s: no memory for its path", c->fc.dir, name);
  uint64_t size, end = 0;
  foreign_check_count(&c->fc, path, &size);
  ldb_read_stats_t rs = {0};
  err_t e;
  int rc =
      ldb_log_read_flags(c->fc.io, path, 0, LDB_LOG_CHECK_TAIL, ignore_entry, NULL, &end, &rs, &e);
  free(path);
  c->fc.st->records += rs.blocks;
  if (rc == BFH_OK && end < size) {
    c->fc.st->torn_tails++;
    c->fc.st->torn_tail_bytes += size - end;
  }
  return foreign_check_result(&c->fc, name, rc, &e, err);
}

/* The live tables (one missing is damage: LevelDB refuses to open without it) and the logs
   LevelDB would replay; every table and log of the directory when the MANIFEST could not say
   which are live. The other tables and logs are obsolete, such as the output of a compaction
   a crash cut short: LevelDB deletes them at its next open without reading them. */
static int check_files(check_t *c, err_t *err) {
  char **names = NULL;
  size_t n = 0;
  const ldb_version_t *v = &c->version;
  int rc = env_list_dir(c->fc.io, c->fc.dir, &names, &n, err);
  for (size_t i = 0; i < n && rc == BFH_OK; i++) {
    uint64_t number;
    if (stock_table_file_number(names[i], &number)) {
      if (!c->live_known) rc = check_table(c, names[i], err);
    } else if (stock_file_number(names[i], "log", &number)) {
      if (!c->live_known || number >= v->log_number || number == v->prev_log_number)
        rc = check_log(c, names[i], err);
    }
  }
  env_names_free(names, n);
  for (size_t i = 0; c->live_known && i < v->nfiles && rc == BFH_OK; i++) {
    char *path;
    rc = ldb_table_path(c->fc.dir, v->files[i].number, &path, err);
    if (rc != BFH_OK) break;
    const char *name = strrchr(path, '/') + 1;
    if (env_exists(c->fc.io, path))
      rc = check_table(c, name, err);
    else
      foreign_check_report(&c->fc, name, 0, "missing (named by the MANIFEST)");
    free(path);
  }
  return rc;
}

int ldb_verify_dir(env_t *io, const char *dir, uint64_t m, uint32_t k, uint64_t seed,
                   engine_damage_fn damage, void *arg, engine_check_stats_t *st,
                   uint64_t *cache_damaged, err_t *err) {
  int has;
  int rc0 = stock_file_exists(io, dir, "CURRENT", &has, err);
  if (rc0 != BFH_OK) return rc0;
  if (!has) return err_set(err, BFH_E_INVALID, "%s: not a LevelDB database (no CURRENT)", dir);
  /* IDENTITY: the own engine's marker (lsm/filename.h) */
  if ((rc0 = stock_file_exists(io, dir, "IDENTITY", &has, err)) != BFH_OK) return rc0;
  if (has && engine_detect_dir(dir) != ENGINE_DIR_ROCKSDB)
    return err_set(err, BFH_E_INVALID, "%s: a database of bfh's own engine, not LevelDB", dir);
  rc0 = engine_detect_check(dir, ENGINE_DIR_LEVELDB, err);
  if (rc0 != BFH_OK) return rc0;
  env_lock_t *lock = NULL;
  int rc = foreign_check_lock(io, dir, "LevelDB", ", or search it read-only", &lock, err);
  check_t c = {.fc = {.io = io, .dir = dir, .damage = damage, .arg = arg, .st = st}};
  static const foreign_tables_t tables = {ldb_table_path_write, ldb_table_tag};
  if (rc == BFH_OK) rc = check_manifest(&c, err);
  if (rc == BFH_OK) rc = check_files(&c, err);
  if (rc == BFH_OK && m) rc = foreign_check_cache(&c.fc, &tables, m, k, seed, cache_damaged, err);
  ldb_version_release(&c.version);
  env_unlock(lock);
  return rc;
}

int ldb_verify_check(const char *dir, const engine_filter_params_t *p, engine_damage_fn damage,
                     void *arg, engine_check_stats_t *st, uint64_t *cache_damaged, err_t *err) {
  return ldb_verify_dir(env_default(), dir, p->m, p->k, p->seed, damage, arg, st, cache_damaged,
                        err);
}

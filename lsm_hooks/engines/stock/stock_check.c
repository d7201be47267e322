/* stock_check: one check of a stock database over its format's hooks (stock_check.h). */
#include "lsm_hooks/engines/stock/stock_check.h"

#include <stdlib.h>
#include <string.h>

#include "lsm_hooks/engines/stock/stock_rw.h"
#include "util/path.h"

typedef struct check {
  foreign_check_t fc; /* the tally, the damage callback */
  const stock_check_format_t *f;
  stock_check_live_t live; /* the MANIFEST's; known when it was read whole, without damage */
} check_t;

int stock_check_live_add(stock_check_live_t *live, uint64_t number, int away, err_t *err) {
  size_t n = live->ntables + 1;
  if (stock_grow(&live->tables, &live->cap, n, sizeof *live->tables, 16) != BFH_OK)
    return err_set(err, BFH_E_NOMEM, "no memory for %zu live tables", n);
  live->tables[live->ntables++] = (stock_check_table_t){number, away};
  return BFH_OK;
}

static int log_live(const stock_check_live_t *live, uint64_t number) {
  return !live->known || number >= live->min_log || (live->prev_log && number == live->prev_log);
}

/* dir/name, counted (*size: 0 if it cannot be had): malloc'd, client frees; NULL with err set. */
static char *count_file(check_t *c, const char *name, uint64_t *size, err_t *err) {
  char *path = path_join(c->fc.dir, name);
  if (path)
    foreign_check_count(&c->fc, path, size);
  else
    err_set(err, BFH_E_NOMEM, "%s/%s: no memory for its path", c->fc.dir, name);
  return path;
}

/* CURRENT and the MANIFEST it names: every record's checksum, and every version edit parsed
   and applied, which gives the live files. */
static int check_manifest(check_t *c, err_t *err) {
  char *manifest, *path = NULL;
  uint64_t size;
  err_t e;
  int rc = c->f->current(c->fc.io, c->fc.dir, &manifest, &e);
  if (rc == BFH_NOT_FOUND) {
    foreign_check_report(&c->fc, "CURRENT", 0,
                         "missing (the directory holds tables, logs or a MANIFEST)");
    return BFH_OK;
  }
  if ((rc == BFH_OK || rc == BFH_E_CORRUPT) && !(path = count_file(c, "CURRENT", &size, err))) {
    free(manifest);
    return BFH_E_NOMEM;
  }
  free(path);
  if (rc != BFH_OK) return foreign_check_result(&c->fc, "CURRENT", rc, &e, err);
  const char *name = strrchr(manifest, '/') + 1;
  if (!env_exists(c->fc.io, manifest)) {
    foreign_check_report(&c->fc, name, 0, "missing (named by CURRENT)");
    rc = BFH_OK;
  } else {
    foreign_check_count(&c->fc, manifest, &size);
    rc = c->f->manifest(c->fc.io, manifest, &c->live, &c->fc.st->records, &e);
    c->live.known &= rc == BFH_OK;
    rc = foreign_check_result(&c->fc, name, rc, &e, err);
  }
  free(manifest);
  return rc;
}

static int check_table(check_t *c, const char *name, err_t *err) {
  uint64_t size, blocks = 0;
  err_t e;
  char *path = count_file(c, name, &size, err);
  if (!path) return BFH_E_NOMEM;
  int rc = c->f->table_scan(c->fc.io, path, NULL, &blocks, &e);
  free(path);
  c->fc.st->blocks += blocks;
  return foreign_check_result(&c->fc, name, rc, &e, err);
}

static int check_log(check_t *c, const char *name, uint64_t number, err_t *err) {
  uint64_t size, end = 0, old = 0;
  err_t e;
  char *path = count_file(c, name, &size, err);
  if (!path) return BFH_E_NOMEM;
  int rc = c->f->log_read(c->fc.io, path, number, &end, &c->fc.st->records, &old, &e);
  free(path);
  if (rc == BFH_OK && end + old < size) {
    c->fc.st->torn_tails++;
    c->fc.st->torn_tail_bytes += size - end - old;
  }
  return foreign_check_result(&c->fc, name, rc, &e, err);
}

/* Live table i: one missing is damage (the library refuses to open without it). */
static int check_live_table(check_t *c, const stock_check_table_t *t, err_t *err) {
  char *path;
  int rc = c->f->table_path(c->fc.dir, t->number, &path, err);
  if (rc != BFH_OK) return rc;
  const char *name = strrchr(path, '/') + 1;
  if (t->away)
    foreign_check_report(&c->fc, name, 0, "not checked: in another of the database's db_paths");
  else if (env_exists(c->fc.io, path))
    rc = check_table(c, name, err);
  else
    foreign_check_report(&c->fc, name, 0, "missing (named by the MANIFEST)");
  free(path);
  return rc;
}

/* The live tables and the logs the library would replay; every table and log of the
   directory when the MANIFEST could not say which are live. The other tables and logs are
   obsolete, such as the output of a compaction a crash cut short: the library deletes them at
   its next open without reading them. */
static int check_files(check_t *c, err_t *err) {
  const char *counted = c->f->counted_prefix;
  char **names = NULL, *path;
  size_t n = 0;
  int rc = env_list_dir(c->fc.io, c->fc.dir, &names, &n, err);
  for (size_t i = 0; i < n && rc == BFH_OK; i++) {
    uint64_t number, size;
    if (stock_table_file_number(names[i], &number)) {
      if (!c->live.known) rc = check_table(c, names[i], err);
    } else if (stock_file_number(names[i], "log", &number)) {
      if (log_live(&c->live, number)) rc = check_log(c, names[i], number, err);
    } else if (counted && !strncmp(names[i], counted, strlen(counted))) {
      rc = (path = count_file(c, names[i], &size, err)) ? BFH_OK : BFH_E_NOMEM;
      free(path);
    }
  }
  env_names_free(names, n);
  for (size_t i = 0; c->live.known && i < c->live.ntables && rc == BFH_OK; i++)
    rc = check_live_table(c, &c->live.tables[i], err);
  return rc;
}

int stock_check_dir(const stock_check_format_t *f, env_t *io, const char *dir, uint64_t m,
                    uint32_t k, uint64_t seed, engine_damage_fn damage, void *arg,
                    engine_check_stats_t *st, uint64_t *cache_damaged, err_t *err) {
  int rc = f->admit(io, dir, err);
  if (rc == BFH_OK) rc = engine_detect_check(dir, f->dir_kind, err);
  env_lock_t *lock = NULL;
  if (rc == BFH_OK) rc = foreign_check_lock(io, dir, f->engine, f->lock_hint, &lock, err);
  check_t c = {.fc = {.io = io,
                      .dir = dir,
                      .damage = damage,
                      .arg = arg,
                      .st = st,
                      .unsupported_checked = f->unsupported_checked},
               .f = f};
  if (rc == BFH_OK) rc = check_manifest(&c, err);
  if (rc == BFH_OK) rc = check_files(&c, err);
  if (rc == BFH_OK && m)
    rc = foreign_check_cache(&c.fc, &f->tables, m, k, seed, cache_damaged, err);
  free(c.live.tables);
  env_unlock(lock);
  return rc;
}

/* ---- Before the library's open ------------------------------------------------------------ */

int stock_check_has_files(env_t *io, const char *dir) {
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

/* A database that lost its CURRENT (stock_check_format_t.lost_current). */
static int lost_current(const stock_check_format_t *f, env_t *io, const char *dir, err_t *err) {
  if (!f->lost_current || !stock_check_has_files(io, dir)) return BFH_OK;
  return err_set(err, BFH_E_CORRUPT,
                 "%s: CURRENT is missing, but the directory holds %s's tables, logs or "
                 "MANIFEST: a database lost its CURRENT (nothing was opened or created over it; "
                 "see doc/rocksdb.md \"Checking and repair\")",
                 dir, f->engine);
}

/* stock_check_precheck's logs: every live one read to its end, and the one that must exist. */
static int precheck_logs(const stock_check_format_t *f, env_t *io, const char *dir,
                         const char *mpath, const stock_check_live_t *live, err_t *err) {
  char **names;
  size_t count;
  int rc = env_list_dir(io, dir, &names, &count, err);
  if (rc != BFH_OK) return err_prefix(err, "%s: list directory: ", dir);
  uint64_t end, records, old, needed = live->needed_log;
  int have_needed = 0;
  for (size_t i = 0; rc == BFH_OK && i < count; i++) {
    uint64_t num;
    if (!stock_file_number(names[i], "log", &num)) continue;
    have_needed |= num == needed;
    if (!log_live(live, num)) continue;
    char *lpath = path_join(dir, names[i]);
    rc = lpath ? f->log_read(io, lpath, num, &end, &records, &old, err)
               : err_set(err, BFH_E_NOMEM, "%s/%s: no memory for its path", dir, names[i]);
    free(lpath);
    if (rc == BFH_NOT_FOUND) rc = BFH_OK; /* cannot happen: the database is locked */
  }
  env_names_free(names, count);
  if (rc == BFH_OK && needed != 0 && !have_needed)
    rc = err_set(err, BFH_E_CORRUPT,
                 "manifest %s: its last edit names log %06llu as live, but %s/%06llu.log does "
                 "not exist (edits after it were lost: the MANIFEST is truncated or damaged)",
                 mpath, (unsigned long long)needed, dir, (unsigned long long)needed);
  return rc;
}

int stock_check_precheck(const stock_check_format_t *f, env_t *io, const char *dir, err_t *err) {
  char *mpath;
  int rc = f->current(io, dir, &mpath, err);
  if (rc == BFH_NOT_FOUND) return lost_current(f, io, dir, err);
  if (rc != BFH_OK) return rc;
  stock_check_live_t live = {0};
  uint64_t records = 0;
  rc = f->manifest(io, mpath, &live, &records, err);
  if (rc == BFH_NOT_FOUND)
    rc = err_set(err, BFH_E_CORRUPT, "%s/CURRENT: names %s, which does not exist", dir,
                 strrchr(mpath, '/') + 1);
  else if (rc == BFH_OK && !live.known) /* every MANIFEST starts with an edit that has one */
    rc = err_set(err, BFH_E_CORRUPT,
                 "manifest %s: no complete version edit with a log number (truncated or damaged "
                 "at its start)",
                 mpath);
  if (rc == BFH_OK) rc = precheck_logs(f, io, dir, mpath, &live, err);
  free(live.tables);
  free(mpath);
  return rc;
}

/* ---- bfh_tables ----------------------------------------------------------------------------- */

/* Hands the range over to info (entries, smallest and largest: malloc'd, the caller of the
   describe frees them whatever the result) after a read of the table at path that returned
   rc. rc, or BFH_E_NOMEM naming the table when an add ran out of memory. */
static int key_range_give(stock_key_range_t *r, const char *path, int rc, bfh_table_info *info,
                          err_t *err) {
  if (rc == BFH_OK && r->nomem) rc = err_set(err, BFH_E_NOMEM, "table %s: out of memory", path);
  info->entries = r->entries;
  info->smallest = r->smallest;
  info->smallest_len = r->smallest_len;
  info->largest = r->largest;
  info->largest_len = r->largest_len;
  return rc;
}

int stock_check_describe(const stock_check_format_t *f, env_t *io, const char *dir, uint64_t number,
                         bfh_table_info *info, err_t *err) {
  char *path;
  int rc = f->table_path(dir, number, &path, err);
  if (rc != BFH_OK) return rc;
  stock_key_range_t r = {0};
  uint64_t blocks = 0;
  rc = key_range_give(&r, path, f->table_scan(io, path, &r, &blocks, err), info, err);
  free(path);
  return rc;
}

int stock_check_describe_open(const stock_check_format_t *f, engine_t *e, uint64_t number,
                              bfh_table_info *info, err_t *err) {
  const stock_rw_t *rw = (const stock_rw_t *)e;
  int rc = stock_check_describe(f, rw->io, rw->path, number, info, err);
  if (rc != BFH_NOT_FOUND) return rc; /* the view pins the version: a table cannot go away */
  char *path;
  if ((rc = f->table_path(rw->path, number, &path, err)) != BFH_OK) return rc;
  rc = err_set(err, BFH_E_CORRUPT, "table %s: missing", path);
  free(path);
  return rc;
}

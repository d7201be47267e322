/* lsm_verify: the read-only check of an own-engine database (lsm/verify.h). */
#include "lsm/verify.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lsm/filename.h"
#include "lsm/log.h"
#include "lsm/version_edit.h"
#include "lsm/write_batch.h"
#include "util/vec.h"

typedef struct verify {
  const char *dir;
  env_t *io;
  const lsm_verify_hooks_t *hooks;
  lsm_verify_stats_t *st;
  int live_known;      /* the manifest was read whole: live and log_number hold */
  u64vec_t live;       /* live table numbers (unsorted while the edits are applied) */
  uint64_t log_number; /* logs below it are obsolete */
} verify_t;

uint64_t lsm_verify_message_offset(const char *msg) {
  const char *at = NULL;
  for (const char *p = strstr(msg, " at "); p; p = strstr(p + 1, " at "))
    if (isdigit((unsigned char)p[4])) at = p + 4;
  return at ? strtoull(at, NULL, 10) : 0;
}

const char *lsm_verify_message_what(const char *msg) {
  const char *p = strrchr(msg, ':');
  return p && p[1] == ' ' ? p + 2 : msg;
}

static void damage(verify_t *v, const char *file, uint64_t offset, const char *what) {
  v->st->damaged++;
  if (v->hooks->damage) v->hooks->damage(v->hooks->arg, file, offset, what);
}

/* A reader's error as damage of file; errors that are not about the file's contents
   (ST_E_IO, ST_E_NOMEM) are returned instead. */
static int damage_from(verify_t *v, const char *file, int rc, const err_t *e, err_t *err) {
  if (rc != ST_E_CORRUPT && rc != ST_E_UNSUPPORTED) {
    if (err) *err = *e;
    return rc;
  }
  damage(v, file, lsm_verify_message_offset(e->msg), lsm_verify_message_what(e->msg));
  return ST_OK;
}

static void count_file(verify_t *v, const char *path) {
  uint64_t size = 0;
  if (env_path_size(v->io, path, &size, NULL) != ST_OK) return;
  v->st->files++;
  v->st->bytes += size;
}

static const char *base_name(const char *path) {
  return strrchr(path, '/') + 1;
}

/* ---- Manifest ------------------------------------------------------------------------ */

static int apply_edit(verify_t *v, const lsm_version_edit_t *e) {
  for (size_t i = 0; i < e->ndeleted; i++)
    for (size_t j = 0; j < v->live.n; j++)
      if (v->live.v[j] == e->deleted[i].number) {
        v->live.v[j] = v->live.v[--v->live.n];
        break;
      }
  for (size_t i = 0; i < e->nadded; i++)
    if (u64vec_push(&v->live, e->added[i].meta->number) != ST_OK) return ST_E_NOMEM;
  if (e->has_log_number && e->log_number > v->log_number) v->log_number = e->log_number;
  return ST_OK;
}

/* Reads every record of a log-format file; each one goes to record(v, data, n, offset,
   name), which reports what it finds wrong. A damaged record is reported and skipped. */
typedef int (*record_fn)(verify_t *v, const void *data, size_t n, uint64_t at, const char *name,
                         err_t *err);

static int read_records(verify_t *v, const char *path, record_fn record, err_t *err) {
  const char *name = base_name(path);
  log_reader_t *r = NULL;
  err_t e;
  int rc = log_reader_open(v->io, path, &r, &e);
  if (rc != ST_OK) return damage_from(v, name, rc, &e, err);
  count_file(v, path);
  for (;;) {
    const void *data;
    size_t n;
    rc = log_reader_next(r, &data, &n, &e);
    if (rc == ST_NOT_FOUND) {
      rc = ST_OK;
      break;
    }
    if (rc == ST_E_CORRUPT) {
      /* The skip takes the fragments of a record cut by the damage with it: what fails
         after it is damage of its own. */
      damage(v, name, lsm_verify_message_offset(e.msg), lsm_verify_message_what(e.msg));
      log_reader_skip_damage(r);
      continue;
    }
    if (rc != ST_OK) {
      if (err) *err = e;
      break;
    }
    v->st->records++;
    if ((rc = record(v, data, n, log_reader_record_offset(r), name, err)) != ST_OK) break;
  }
  if (rc == ST_OK && log_reader_dropped_bytes(r)) {
    v->st->torn_tails++;
    v->st->torn_tail_bytes += log_reader_dropped_bytes(r);
  }
  log_reader_close(r);
  return rc;
}

static int manifest_record(verify_t *v, const void *data, size_t n, uint64_t at, const char *name,
                           err_t *err) {
  char where[128];
  snprintf(where, sizeof where, "%s: record at %llu", name, (unsigned long long)at);
  lsm_version_edit_t edit;
  lsm_version_edit_init(&edit);
  err_t e;
  int rc = lsm_version_edit_decode(&edit, data, n, where, &e);
  if (rc == ST_OK) {
    if (apply_edit(v, &edit) != ST_OK) rc = err_set(err, ST_E_NOMEM, "check: out of memory");
  } else {
    v->live_known = 0; /* an edit lost: the live set is not the manifest's */
    damage(v, name, at, lsm_verify_message_what(e.msg));
    rc = ST_OK;
  }
  lsm_version_edit_release(&edit);
  return rc;
}

/* The manifest `number`, named by CURRENT. */
static int verify_manifest_file(verify_t *v, uint64_t number, err_t *err) {
  char *path = lsm_filename_manifest(v->dir, number);
  if (!path) return err_set(err, ST_E_NOMEM, "check: out of memory");
  int rc = ST_OK;
  if (!env_exists(v->io, path)) {
    damage(v, base_name(path), 0, "missing (named by CURRENT)");
  } else {
    v->live_known = 1;
    uint64_t damaged = v->st->damaged;
    rc = read_records(v, path, manifest_record, err);
    if (v->st->damaged != damaged) v->live_known = 0;
  }
  free(path);
  return rc;
}

/* CURRENT (at path), then the manifest it names; live_known says whether both read whole. */
static int verify_current(verify_t *v, const char *path, err_t *err) {
  if (!env_exists(v->io, path)) {
    damage(v, "CURRENT", 0, "missing");
    return ST_OK;
  }
  void *cur = NULL;
  size_t n = 0;
  err_t e;
  int rc = env_read_file(v->io, path, &cur, &n, &e);
  if (rc != ST_OK) return damage_from(v, "CURRENT", rc, &e, err);
  count_file(v, path);
  char *text = cur;
  uint64_t number = 0;
  lsm_file_type_t type;
  int ok = n >= 2 && text[n - 1] == '\n' && !memchr(text, '\0', n);
  if (ok) text[n - 1] = '\0';
  ok = ok && lsm_filename_parse(text, &number, &type) && type == LSM_FILE_MANIFEST;
  free(cur);
  if (!ok) {
    damage(v, "CURRENT", 0, "not a manifest name");
    return ST_OK;
  }
  return verify_manifest_file(v, number, err);
}

static int verify_manifest(verify_t *v, err_t *err) {
  char *path = lsm_filename_current(v->dir);
  if (!path) return err_set(err, ST_E_NOMEM, "check: out of memory");
  int rc = verify_current(v, path, err);
  free(path);
  return rc;
}

/* ---- Tables and logs ------------------------------------------------------------------ */

typedef struct table_damage {
  verify_t *v;
  const char *name;
} table_damage_t;

static void on_table_damage(void *arg, uint64_t offset, const char *msg) {
  table_damage_t *td = arg;
  damage(td->v, td->name, offset, lsm_verify_message_what(msg));
}

static int verify_table_at(verify_t *v, uint64_t number, const char *path, err_t *err) {
  const char *name = base_name(path);
  if (!env_exists(v->io, path)) {
    damage(v, name, 0, "missing (listed in the manifest)");
    return ST_OK;
  }
  count_file(v, path);
  table_t *t = NULL;
  err_t e;
  int rc = table_open(v->io, path, number, &t, &e);
  if (rc != ST_OK) return damage_from(v, name, rc, &e, err);
  table_damage_t td = {v, name};
  uint64_t bad = 0;
  table_walk(t, NULL, on_table_damage, &td, &bad);
  table_check_meta(t, on_table_damage, &td);
  table_stats_t ts;
  table_get_stats(t, &ts);
  v->st->blocks += ts.data_blocks + table_meta_count(t) + 2; /* + index and meta index */
  if (v->hooks->table) v->st->damaged += v->hooks->table(v->hooks->arg, t, name);
  table_unref(t);
  return ST_OK;
}

static int verify_table(verify_t *v, uint64_t number, err_t *err) {
  char *path = table_file_path(v->dir, number);
  if (!path) return err_set(err, ST_E_NOMEM, "check: out of memory");
  int rc = verify_table_at(v, number, path, err);
  free(path);
  return rc;
}

static int batch_entry(void *arg, uint64_t seq, int type, const void *key, size_t klen,
                       const void *val, size_t vlen) {
  (void)arg, (void)seq, (void)type, (void)key, (void)klen, (void)val, (void)vlen;
  return 0;
}

static int log_record(verify_t *v, const void *data, size_t n, uint64_t at, const char *name,
                      err_t *err) {
  (void)err;
  err_t e;
  if (write_batch_iterate(data, n, batch_entry, NULL, &e) != ST_OK)
    damage(v, name, at, lsm_verify_message_what(e.msg));
  return ST_OK;
}

/* The tables and logs to check: the live ones, or every one in the directory when the
   manifest could not say which are live. */
static int verify_files(verify_t *v, err_t *err) {
  char **names = NULL;
  size_t n = 0;
  int rc = env_list_dir(v->io, v->dir, &names, &n, err);
  u64vec_t logs, tables;
  u64vec_init(&logs);
  u64vec_init(&tables);
  for (size_t i = 0; i < n && rc == ST_OK; i++) {
    uint64_t number;
    lsm_file_type_t type;
    if (!lsm_filename_parse(names[i], &number, &type)) continue;
    if (type == LSM_FILE_LOG && (!v->live_known || number >= v->log_number))
      rc = u64vec_push(&logs, number);
    if (type == LSM_FILE_TABLE && !v->live_known) rc = u64vec_push(&tables, number);
    if (rc != ST_OK) rc = err_set(err, rc, "check: out of memory");
  }
  env_names_free(names, n);
  const u64vec_t *check = v->live_known ? &v->live : &tables;
  u64vec_sort(&logs);
  u64vec_sort(&v->live);
  u64vec_sort(&tables);
  for (size_t i = 0; i < check->n && rc == ST_OK; i++) rc = verify_table(v, check->v[i], err);
  for (size_t i = 0; i < logs.n && rc == ST_OK; i++) {
    char *path = lsm_filename_log(v->dir, logs.v[i]);
    rc = path ? read_records(v, path, log_record, err)
              : err_set(err, ST_E_NOMEM, "check: out of memory");
    free(path);
  }
  u64vec_release(&logs);
  u64vec_release(&tables);
  return rc;
}

/* IDENTITY says whether dir is a database of this engine at all. */
static int verify_identity(verify_t *v, err_t *err) {
  err_t e;
  int rc = lsm_identity_read(v->io, v->dir, &e);
  if (rc == ST_NOT_FOUND)
    return err_set(err, ST_E_INVALID, "%s: not a bfh lsm database (no IDENTITY)", v->dir);
  if (rc == ST_E_INVALID) {
    if (err) *err = e;
    return rc;
  }
  char *path = lsm_filename_identity(v->dir);
  if (!path) return err_set(err, ST_E_NOMEM, "check: out of memory");
  count_file(v, path);
  free(path);
  return rc == ST_OK ? ST_OK : damage_from(v, "IDENTITY", rc, &e, err);
}

int lsm_verify(const char *dir, env_t *io, const lsm_verify_hooks_t *hooks,
               lsm_verify_stats_t *st, err_t *err) {
  verify_t v = {.dir = dir, .io = io, .hooks = hooks, .st = st};
  u64vec_init(&v.live);
  char *path = lsm_filename_lock(dir);
  env_lock_t *lock = NULL;
  int rc = path ? env_lock_shared(io, path, &lock, err)
                : err_set(err, ST_E_NOMEM, "check: out of memory");
  free(path);
  if (rc == ST_E_BUSY) err_set(err, rc, "%s: database is open (LOCK held): close it to check", dir);
  if (rc == ST_NOT_FOUND) rc = ST_OK; /* never opened: nothing can hold it */
  if (rc == ST_OK) rc = verify_identity(&v, err);
  if (rc == ST_OK) rc = verify_manifest(&v, err);
  if (rc == ST_OK) rc = verify_files(&v, err);
  env_unlock(lock);
  u64vec_release(&v.live);
  return rc;
}

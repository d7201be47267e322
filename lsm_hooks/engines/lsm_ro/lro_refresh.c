/* The refresh (steps 1-3 at the top of lsm_readonly.c): CURRENT and the MANIFEST read on from
   where the last read stopped, the live logs read on into their memtables, the MANIFEST read
   again; a MANIFEST or log that is another file under its name is read anew. Ends with a new
   state (lro_state.c) when anything changed. */
#include <inttypes.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lsm/filename.h"
#include "lsm/log.h"
#include "lsm/write_batch.h"
#include "lsm_hooks/engines/lsm_ro/lro_internal.h"
#include "util/coding.h"
#include "util/path.h"
#include "util/vec.h"

void lro_log_release(lro_log_t *l) {
  memtable_unref(l->mem);
  env_rfile_close(l->file);
}

/* Another MANIFEST (by name or by file): what was read of the old one and of the logs is
   dropped. REQUIRES mu. */
static void forget_manifest(lro_t *r) {
  lro_version_release(&r->version);
  r->manifest_resume = 0;
  r->version_changed = 1;
  env_rfile_close(r->manifest_file);
  r->manifest_file = NULL;
  for (size_t i = 0; i < r->nlogs; i++) lro_log_release(&r->logs[i]);
  free(r->logs);
  r->logs = NULL;
  r->nlogs = 0;
  r->logs_changed = 1;
  r->recheck = 1;
}

/* The MANIFEST CURRENT names, into name ("MANIFEST-NNNNNN"). AGAIN when CURRENT is missing
   (replaced under the read: a writer switches it by rename). */
static int read_current_at(lro_t *r, const char *path, char *name, size_t cap, err_t *err) {
  void *data = NULL;
  size_t len = 0;
  int rc = env_read_file(r->io, path, &data, &len, err);
  if (rc != BFH_OK) return env_exists(r->io, path) || rc == BFH_E_NOMEM ? rc : AGAIN;
  const char *s = data;
  uint64_t number;
  lsm_file_type_t type;
  int ok = len >= 2 && len < cap && s[len - 1] == '\n' && !memchr(s, '\0', len);
  if (ok) {
    memcpy(name, s, len - 1);
    name[len - 1] = '\0';
    ok = lsm_filename_parse(name, &number, &type) && type == LSM_FILE_MANIFEST;
  }
  free(data);
  if (!ok) return err_set(err, BFH_E_CORRUPT, "%s: at offset 0: not a manifest name", path);
  return BFH_OK;
}

static int read_current(lro_t *r, char *name, size_t cap, err_t *err) {
  char *path = lsm_filename_current(r->path);
  if (!path) return err_set(err, BFH_E_NOMEM, "%s/CURRENT: no memory for its path", r->path);
  int rc = read_current_at(r, path, name, cap, err);
  free(path);
  return rc;
}

/* The edits of the MANIFEST from r->manifest_resume on, applied to r->version; a record cut
   short at the end is an edit in flight, read next time. */
static int read_edits(lro_t *r, const char *path, err_t *err) {
  log_reader_t *lr = NULL;
  int rc =
      log_reader_open_at(r->io, path, "manifest", r->manifest_resume, LOG_READER_LIVE, &lr, err);
  if (rc != BFH_OK && rc != BFH_E_NOMEM && !env_exists(r->io, path))
    return AGAIN; /* replaced by a newer MANIFEST since it was found */
  for (int first = r->manifest_resume == 0; rc == BFH_OK; first = 0) {
    const void *data;
    size_t n;
    rc = log_reader_next(lr, &data, &n, err);
    if (rc != BFH_OK) break;
    char *where = path_fmt("%s: record at offset %" PRIu64, path, log_reader_record_offset(lr));
    if (!where) {
      rc = err_set(err, BFH_E_NOMEM, "%s: no memory", path);
      break;
    }
    lsm_version_edit_t e;
    lsm_version_edit_init(&e);
    rc = lsm_version_edit_decode(&e, data, n, where, err);
    if (rc == BFH_OK && first && !e.has_format_version)
      rc = err_set(err, BFH_E_CORRUPT, "%s: first edit has no format version", where);
    if (rc == BFH_OK && e.has_format_version && e.format_version != LSM_FORMAT_VERSION)
      rc = err_set(err, BFH_E_UNSUPPORTED,
                   "%s: manifest format version %u is not supported (this build reads %u)", where,
                   e.format_version, LSM_FORMAT_VERSION);
    if (rc == BFH_OK) rc = lro_version_apply(&r->version, &e, where, err);
    lsm_version_edit_release(&e);
    free(where);
    if (rc == BFH_OK) r->version_changed = 1;
  }
  if (rc == BFH_NOT_FOUND) {
    rc = BFH_OK;
    r->manifest_resume = log_reader_end_offset(lr);
  }
  log_reader_close(lr);
  if (rc != BFH_OK) forget_manifest(r); /* the version may be half-applied: read it whole */
  return rc;
}

/* read_manifest's MANIFEST, at path. */
static int read_manifest_at(lro_t *r, const char *path, err_t *err) {
  uint64_t size;
  env_file_id_t id;
  int rc = env_path_stat(r->io, path, &size, &id, err);
  if (rc == BFH_NOT_FOUND) return AGAIN; /* replaced since CURRENT was read */
  if (rc != BFH_OK) return rc;
  if (r->manifest_file &&
      (!env_file_id_equal(id, env_rfile_id(r->manifest_file)) || size < r->manifest_resume)) {
    forget_manifest(r); /* another file under the name: the database was replaced */
    return AGAIN;
  }
  if (!r->manifest_file) { /* held from its first read on, to know it again */
    rc = env_open_read(r->io, path, &r->manifest_file, err);
    if (rc == BFH_NOT_FOUND || (rc != BFH_OK && !env_exists(r->io, path))) return AGAIN;
    if (rc != BFH_OK) return rc;
    if (!env_file_id_equal(id, env_rfile_id(r->manifest_file))) {
      forget_manifest(r);
      return AGAIN;
    }
  }
  if (size == r->manifest_resume) return BFH_OK; /* nothing appended */
  rc = read_edits(r, path, err);
  return rc == BFH_NOT_FOUND ? AGAIN : rc;
}

/* Step 1 (and 3): CURRENT and the MANIFEST's new edits into r->version. REQUIRES mu. */
static int read_manifest(lro_t *r, err_t *err) {
  char name[64];
  int rc = read_current(r, name, sizeof name, err);
  if (rc != BFH_OK) return rc;
  if (strcmp(name, r->manifest) != 0) { /* a new MANIFEST: its first edit is a snapshot */
    forget_manifest(r);
    snprintf(r->manifest, sizeof r->manifest, "%s", name);
  }
  char *path = path_join(r->path, r->manifest);
  if (!path) return err_set(err, BFH_E_NOMEM, "%s/%s: no memory for its path", r->path, name);
  rc = read_manifest_at(r, path, err);
  free(path);
  return rc;
}

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

/* The numbers of the logs the version needs (>= its log number), from the directory,
   ascending. */
static int list_logs(lro_t *r, u64vec_t *nums, err_t *err) {
  char **names;
  size_t n;
  int rc = env_list_dir(r->io, r->path, &names, &n, err);
  if (rc != BFH_OK) return rc;
  for (size_t i = 0; i < n && rc == BFH_OK; i++) {
    uint64_t num;
    lsm_file_type_t type;
    if (lsm_filename_parse(names[i], &num, &type) && type == LSM_FILE_LOG &&
        num >= r->version.log_number && u64vec_push(nums, num) != BFH_OK)
      rc = err_set(err, BFH_E_NOMEM, "%s: no memory to list logs", r->path);
  }
  env_names_free(names, n);
  if (nums->n) qsort(nums->v, nums->n, sizeof *nums->v, cmp_u64);
  return rc;
}

/* write_batch_iterate's visitor: one entry into the log's memtable. */
static int add_entry(void *arg, uint64_t seq, int type, const void *key, size_t klen,
                     const void *val, size_t vlen) {
  lro_log_t *l = arg;
  if (memtable_add(l->mem, seq, type, key, klen, val, vlen) != BFH_OK) return BFH_E_NOMEM;
  l->last_seq = seq;
  return 0;
}

/* The records of log l from l->resume on, into its memtable. A record cut short at the end is
   a write in flight, read next time. */
static int read_records(lro_t *r, lro_log_t *l, const char *path, err_t *err) {
  if (!l->mem) {
    l->mem = r->mem_buckets ? memtable_create_indexed_terms(r->mem_buckets, r->value_seed,
                                                            index_sync_terms(r->sync))
                            : memtable_create();
    if (!l->mem) return err_set(err, BFH_E_NOMEM, "log %s: no memory for a memtable", path);
  }
  log_reader_t *lr = NULL;
  int rc = log_reader_open_at(r->io, path, "log", l->resume, LOG_READER_LIVE, &lr, err);
  if (rc != BFH_OK && rc != BFH_E_NOMEM && !env_exists(r->io, path))
    return AGAIN; /* flushed and deleted since it was listed: a newer version has it */
  while (rc == BFH_OK) {
    const void *data;
    size_t n;
    rc = log_reader_next(lr, &data, &n, err);
    if (rc != BFH_OK) break;
    rc = write_batch_iterate(data, n, add_entry, l, err);
    if (rc == BFH_E_NOMEM) err_set(err, rc, "log %s: no memory", path);
    if (rc == BFH_E_CORRUPT)
      err_prefix(err, "log %s: record at offset %" PRIu64 ": ", path, log_reader_record_offset(lr));
  }
  if (rc == BFH_NOT_FOUND) {
    rc = BFH_OK;
    r->logs_changed |= log_reader_end_offset(lr) != l->resume;
    l->resume = log_reader_end_offset(lr);
  }
  log_reader_close(lr);
  return rc;
}

/* Reads what was appended to log l since the last read. A log that is another file than the
   one read (or shorter) is read again from its start; one that failed half-way too. */
static int read_log_at(lro_t *r, lro_log_t *l, const char *path, err_t *err) {
  uint64_t size;
  env_file_id_t id;
  int rc = env_path_stat(r->io, path, &size, &id, err);
  if (rc == BFH_NOT_FOUND) return AGAIN; /* its table is in a newer version */
  if (rc != BFH_OK) return rc;
  if (l->file && (!env_file_id_equal(id, env_rfile_id(l->file)) || size < l->resume)) {
    uint64_t number = l->number;
    lro_log_release(l);
    *l = (lro_log_t){.number = number};
    r->logs_changed = 1;
  }
  if (!l->file) {
    rc = env_open_read(r->io, path, &l->file, err);
    if (rc == BFH_NOT_FOUND || (rc != BFH_OK && !env_exists(r->io, path))) return AGAIN;
    if (rc != BFH_OK) return rc;
    if (!env_file_id_equal(id, env_rfile_id(l->file))) return AGAIN; /* replaced meanwhile */
  }
  if (size <= l->resume) return BFH_OK;
  rc = read_records(r, l, path, err);
  if (rc != BFH_OK) { /* entries of a record may be in: read the log anew next time */
    uint64_t number = l->number;
    lro_log_release(l);
    *l = (lro_log_t){.number = number};
    r->logs_changed = 1;
  }
  return rc == BFH_NOT_FOUND ? AGAIN : rc;
}

static int read_log(lro_t *r, lro_log_t *l, err_t *err) {
  char *path = lsm_filename_log(r->path, l->number);
  if (!path)
    return err_set(err, BFH_E_NOMEM, "%s: no memory for the path of log %06" PRIu64, r->path,
                   l->number);
  int rc = read_log_at(r, l, path, err);
  free(path);
  return rc;
}

/* Step 2: r->logs become the logs the version needs, each read to its end. */
static int read_logs(lro_t *r, err_t *err) {
  u64vec_t nums;
  u64vec_init(&nums);
  int rc = list_logs(r, &nums, err);
  lro_log_t *logs = rc == BFH_OK ? calloc(nums.n + 1, sizeof *logs) : NULL;
  if (rc == BFH_OK && !logs) rc = err_set(err, BFH_E_NOMEM, "%s: no memory for logs", r->path);
  if (rc != BFH_OK) {
    u64vec_release(&nums);
    return rc;
  }
  /* Keep what was read of the listed logs; forget the others (their data is in tables). */
  for (size_t i = 0; i < nums.n; i++) logs[i].number = nums.v[i];
  for (size_t j = 0; j < r->nlogs; j++) {
    lro_log_t *dst = NULL;
    for (size_t i = 0; i < nums.n && !dst; i++)
      if (logs[i].number == r->logs[j].number) dst = &logs[i];
    if (dst)
      *dst = r->logs[j];
    else
      lro_log_release(&r->logs[j]), r->logs_changed = 1;
  }
  free(r->logs);
  r->logs = logs;
  r->nlogs = nums.n;
  u64vec_release(&nums);
  for (size_t i = 0; i < r->nlogs && rc == BFH_OK; i++) rc = read_log(r, &r->logs[i], err);
  return rc;
}

/* Steps 1-3 once: BFH_OK (r->state is then current), AGAIN, or an error. REQUIRES mu. */
static int refresh_once(lro_t *r, err_t *err) {
  int rc = read_manifest(r, err);
  if (rc != BFH_OK) return rc;
  if (!r->version.has_log_number) return AGAIN; /* a new MANIFEST still being written */
  uint64_t log_number = r->version.log_number;
  rc = read_logs(r, err);
  if (rc == BFH_OK && r->logs_hook) r->logs_hook(r->logs_hook_arg);
  if (rc == BFH_OK) rc = read_manifest(r, err);
  if (rc != BFH_OK) return rc;
  if (r->version.log_number != log_number) return AGAIN;
  if (r->state && !r->version_changed && !r->logs_changed) return BFH_OK;
  lro_state_t *s = NULL;
  rc = lro_state_make(r, &s, err);
  if (rc != BFH_OK) return rc;
  lro_state_unref(r->state);
  r->state = s;
  r->version_changed = r->logs_changed = 0;
  return BFH_OK;
}

int lro_refresh(lro_t *r, err_t *err) {
  /* The watch first, then the files (dir_watch.h): nothing queued since the last refresh that
     succeeded leaves its state the newest. */
  if (dir_watch_poll(&r->watch)) atomic_store(&r->stale, 1);
  if (!atomic_exchange(&r->stale, 0) && r->state) return BFH_OK; /* cleared: this one reads */
  atomic_fetch_add(&r->refreshes, 1);
  int rc = AGAIN;
  for (int attempt = 0; attempt < LSM_RO_ATTEMPTS; attempt++) {
    rc = refresh_once(r, err);
    if (rc == BFH_OK) return rc;
    /* A damaged-looking record may be an append in flight: read again. */
    if (rc != AGAIN && !(rc == BFH_E_CORRUPT && attempt + 1 < LSM_RO_ATTEMPTS)) break;
    atomic_fetch_add(&r->retries, 1);
  }
  atomic_store(&r->stale, 1); /* failed: the next refresh reads the files again */
  if (rc != AGAIN) return rc;
  return err_set(err, BFH_E_BUSY,
                 "%s: the database changed under each of %d reads of its MANIFEST and logs",
                 r->path, LSM_RO_ATTEMPTS);
}

int lro_current_state(lro_t *r, lro_state_t **s, err_t *err) {
  pthread_mutex_lock(&r->mu);
  int rc = lro_refresh(r, err);
  if (rc == BFH_OK) atomic_fetch_add(&r->state->refs, 1), *s = r->state;
  pthread_mutex_unlock(&r->mu);
  return rc;
}

/* The refresh (steps 1-3 at the top of readonly.c): CURRENT and the MANIFEST read on from
   where the last read stopped, the live logs read to their ends into chunks, the MANIFEST
   read again; a MANIFEST or log that is another file under its name (a replaced database)
   is read anew. Ends with a new state (ro_state.c) when anything changed. */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lsm_hooks/engines/leveldb/precheck.h"
#include "lsm_hooks/engines/leveldb_ro/ro_internal.h"
#include "lsm_hooks/leveldb_format/ldb_log.h"
#include "util/path.h"
#include "util/vec.h"

void ro_log_release(ro_log_t *l) {
  for (size_t i = 0; i < l->n; i++) ro_chunk_unref(l->chunks[i]);
  free(l->chunks);
  env_rfile_close(l->file);
}

/* Another MANIFEST (by name or by file): what was read of the old one and of the logs is
   dropped, the next state checks every table's name against its pin. REQUIRES mu. */
static void forget_manifest(engine_ro_t *r) {
  ldb_version_release(&r->version);
  r->manifest_resume = 0;
  r->version_changed = 1;
  env_rfile_close(r->manifest_file);
  r->manifest_file = NULL;
  for (size_t i = 0; i < r->nlogs; i++) ro_log_release(&r->logs[i]);
  free(r->logs);
  r->logs = NULL;
  r->nlogs = 0;
  r->logs_changed = 1;
  r->recheck = 1;
}

/* The MANIFEST that CURRENT (at path) names into r->manifest; a new one forgets the old.
   REQUIRES mu. */
static int read_current(engine_ro_t *r, const char *path, err_t *err) {
  void *data = NULL;
  size_t len = 0;
  int rc = env_read_file(r->io, path, &data, &len, err);
  if (rc != BFH_OK) return env_exists(r->io, path) || rc == BFH_E_NOMEM ? rc : AGAIN;
  char name[64];
  const char *s = data;
  size_t n = len;
  if (n > 0 && s[n - 1] == '\n') n--;
  int ok = n > 9 && n < sizeof name && strncmp(s, "MANIFEST-", 9) == 0;
  for (size_t i = 9; ok && i < n; i++) ok = s[i] >= '0' && s[i] <= '9';
  if (ok) memcpy(name, s, n), name[n] = '\0';
  free(data);
  if (!ok) return err_set(err, BFH_E_CORRUPT, "%s: not \"MANIFEST-<number>\\n\"", path);
  if (strcmp(name, r->manifest) != 0) { /* a new MANIFEST: its first edit is a snapshot */
    forget_manifest(r);
    snprintf(r->manifest, sizeof r->manifest, "%s", name);
  }
  return BFH_OK;
}

/* The new edits of r->manifest (at path) into r->version. REQUIRES mu. */
static int read_manifest_file(engine_ro_t *r, const char *path, err_t *err) {
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
  if (!r->manifest_file) { /* held from its first read on, to know it again (top of readonly.c) */
    rc = env_open_read(r->io, path, &r->manifest_file, err);
    if (rc == BFH_NOT_FOUND || (rc != BFH_OK && !env_exists(r->io, path))) return AGAIN;
    if (rc != BFH_OK) return rc;
    if (!env_file_id_equal(id, env_rfile_id(r->manifest_file))) {
      forget_manifest(r);
      return AGAIN;
    }
  }
  if (size == r->manifest_resume) return BFH_OK; /* nothing appended */
  uint64_t next = r->manifest_resume;
  rc = ldb_version_read(r->io, path, r->manifest_resume, &r->version, &next, err);
  if (rc == BFH_OK && next != r->manifest_resume) r->version_changed = 1;
  if (rc == BFH_OK) r->manifest_resume = next;
  if (rc != BFH_OK) r->manifest[0] = '\0'; /* the version may be half-applied: read it whole */
  return rc == BFH_NOT_FOUND ? AGAIN : rc;
}

/* Step 1 (and 3): CURRENT and the MANIFEST's new edits into r->version. REQUIRES mu. */
static int read_manifest(engine_ro_t *r, err_t *err) {
  char *path = path_join(r->path, "CURRENT");
  if (!path) return err_set(err, BFH_E_NOMEM, "%s/CURRENT: no memory for its path", r->path);
  int rc = read_current(r, path, err);
  free(path);
  if (rc != BFH_OK) return rc;
  path = path_join(r->path, r->manifest);
  if (!path)
    return err_set(err, BFH_E_NOMEM, "%s/%s: no memory for its path", r->path, r->manifest);
  rc = read_manifest_file(r, path, err);
  free(path);
  return rc;
}

/* Is log `number` one version `v` needs? */
static int log_needed(const ldb_version_t *v, uint64_t number) {
  return number >= v->log_number || (v->prev_log_number && number == v->prev_log_number);
}

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

/* The numbers of the logs the version needs, from the directory, ascending. */
static int list_logs(engine_ro_t *r, u64vec_t *nums, err_t *err) {
  char **names;
  size_t n;
  int rc = env_list_dir(r->io, r->path, &names, &n, err);
  if (rc != BFH_OK) return rc;
  for (size_t i = 0; i < n && rc == BFH_OK; i++) {
    uint64_t num;
    if (stock_file_number(names[i], "log", &num) && log_needed(&r->version, num) &&
        u64vec_push(nums, num) != BFH_OK)
      rc = err_set(err, BFH_E_NOMEM, "%s: no memory to list logs", r->path);
  }
  env_names_free(names, n);
  if (nums->n) qsort(nums->v, nums->n, sizeof *nums->v, cmp_u64);
  return rc;
}

/* read_log for l at path. */
static int read_log_at(engine_ro_t *r, ro_log_t *l, const char *path, err_t *err) {
  uint64_t size;
  env_file_id_t id;
  int rc = env_path_stat(r->io, path, &size, &id, err);
  if (rc == BFH_NOT_FOUND) return AGAIN; /* its table is in a newer version */
  if (rc != BFH_OK) return rc;
  if (l->file && (!env_file_id_equal(id, env_rfile_id(l->file)) || size < l->resume)) {
    uint64_t number = l->number; /* another file under the number: read it from its start */
    ro_log_release(l);
    *l = (ro_log_t){.number = number};
    r->logs_changed = 1;
  }
  if (!l->file && size > 0) {
    rc = env_open_read(r->io, path, &l->file, err);
    if (rc == BFH_NOT_FOUND || (rc != BFH_OK && !env_exists(r->io, path))) return AGAIN;
    if (rc != BFH_OK) return rc;
    if (!env_file_id_equal(id, env_rfile_id(l->file))) return AGAIN; /* replaced meanwhile */
  }
  if (size <= l->resume) return BFH_OK;
  chunk_builder_t b = {0};
  b.vals.seed = stock_value_seed(r->sync);
  b.vals.terms = stock_value_terms(r->sync);
  uint64_t next = l->resume;
  rc = ldb_log_read(r->io, path, l->resume, ro_chunk_builder_add, &b, &next, NULL, err);
  if (rc == BFH_OK && b.nomem) rc = err_set(err, BFH_E_NOMEM, "log %s: no memory", path);
  if (rc == BFH_OK && b.n > 0) {
    chunk_t *c = NULL;
    if (l->n == l->cap) {
      size_t cap = l->cap ? 2 * l->cap : 8;
      chunk_t **nc = realloc(l->chunks, cap * sizeof *nc);
      if (nc) l->chunks = nc, l->cap = cap;
    }
    if (l->n < l->cap) c = ro_chunk_make(&b);
    if (!c) rc = err_set(err, BFH_E_NOMEM, "log %s: no memory", path);
    if (c) l->chunks[l->n++] = c;
  }
  ro_chunk_builder_release(&b);
  if (rc == BFH_OK) {
    r->logs_changed |= next != l->resume;
    l->resume = next;
  }
  return rc == BFH_NOT_FOUND ? AGAIN : rc;
}

/* Reads what was appended to log l since the last read into a new chunk. */
static int read_log(engine_ro_t *r, ro_log_t *l, err_t *err) {
  char *path = path_fmt("%s/%06llu.log", r->path, (unsigned long long)l->number);
  if (!path)
    return err_set(err, BFH_E_NOMEM, "%s/%06llu.log: no memory for its path", r->path,
                   (unsigned long long)l->number);
  int rc = read_log_at(r, l, path, err);
  free(path);
  return rc;
}

/* Step 2: r->logs become the logs the version needs, each read to its end. */
static int read_logs(engine_ro_t *r, err_t *err) {
  u64vec_t nums;
  u64vec_init(&nums);
  int rc = list_logs(r, &nums, err);
  ro_log_t *logs = rc == BFH_OK ? calloc(nums.n + 1, sizeof *logs) : NULL;
  if (rc == BFH_OK && !logs) rc = err_set(err, BFH_E_NOMEM, "%s: no memory for logs", r->path);
  if (rc != BFH_OK) {
    u64vec_release(&nums);
    return rc;
  }
  /* Keep what was read of the listed logs; forget the others (their data is in tables). */
  for (size_t i = 0; i < nums.n; i++) logs[i].number = nums.v[i];
  for (size_t j = 0; j < r->nlogs; j++) {
    ro_log_t *dst = NULL;
    for (size_t i = 0; i < nums.n && !dst; i++)
      if (logs[i].number == r->logs[j].number) dst = &logs[i];
    if (dst)
      *dst = r->logs[j];
    else
      ro_log_release(&r->logs[j]), r->logs_changed = 1;
  }
  free(r->logs);
  r->logs = logs;
  r->nlogs = nums.n;
  u64vec_release(&nums);
  for (size_t i = 0; i < r->nlogs && rc == BFH_OK; i++) rc = read_log(r, &r->logs[i], err);
  return rc;
}

/* Steps 1-3 once: BFH_OK (r->state is then current), AGAIN, or an error. REQUIRES mu. */
static int refresh_once(void *arg, err_t *err) {
  engine_ro_t *r = arg;
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
  ro_state_t *s = NULL;
  rc = ro_state_make(r, &s, err);
  if (rc != BFH_OK) return rc;
  ro_state_unref(r->state);
  r->state = s;
  r->version_changed = r->logs_changed = 0;
  return BFH_OK;
}

/* Brings r->state up to the newest version. REQUIRES mu. */
int ro_refresh(engine_ro_t *r, err_t *err) {
  /* A damaged-looking record may be an append in flight (top of readonly.c): read again. */
  return stock_ro_refresh(&r->watch, &r->stale, r->state != NULL, &r->refreshes, &r->retries,
                          ENGINE_LEVELDB_RO_ATTEMPTS, refresh_once, r, r->path, "MANIFEST and logs",
                          err);
}

/* The newest state (a reference), refreshed first. */
int ro_current_state(engine_ro_t *r, ro_state_t **s, err_t *err) {
  pthread_mutex_lock(&r->mu);
  int rc = ro_refresh(r, err);
  if (rc == BFH_OK) atomic_fetch_add(&r->state->refs, 1), *s = r->state;
  pthread_mutex_unlock(&r->mu);
  return rc;
}

/* The refresh (steps 1-3 at the top of rdb_readonly.c): CURRENT and the MANIFEST read on from
   where the last read stopped, the live WALs of the column family read (r->cf_name: the
   default one, or bfh_options.column_family) read to their ends into chunks, the MANIFEST read
   again; then a new state, whose tables are held open (pins). */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "filters/hash.h"
#include "lsm_hooks/engines/rocksdb/rdb_adapter.h"
#include "lsm_hooks/engines/rocksdb_ro/rro_internal.h"
#include "util/path.h"

void rro_log_release(rro_log_t *l) {
  for (size_t i = 0; i < l->n; i++) rro_chunk_unref(l->chunks[i]);
  free(l->chunks);
  env_rfile_close(l->file);
}

/* Drops what was read of the WALs (another MANIFEST, or another column
   family under the name). REQUIRES mu. */
static void forget_logs(rro_t *r) {
  for (size_t i = 0; i < r->nlogs; i++) rro_log_release(&r->logs[i]);
  free(r->logs);
  r->logs = NULL;
  r->nlogs = 0;
  r->logs_changed = 1;
}

/* Another MANIFEST (by name or by file): what was read of the old one and of the WALs is
   dropped. REQUIRES mu. */
static void forget_manifest(rro_t *r) {
  rdb_version_release(&r->version);
  r->manifest_resume = 0;
  r->version_changed = 1;
  env_rfile_close(r->manifest_file);
  r->manifest_file = NULL;
  forget_logs(r);
  r->recheck = 1;
}

/* Step 1 (and 3): CURRENT and the MANIFEST's new edits into r->version. REQUIRES mu. */
static int read_manifest(rro_t *r, err_t *err) {
  char *path = NULL;
  int rc = rdb_manifest_current(r->io, r->path, &path, err);
  if (rc == BFH_NOT_FOUND) return RRO_AGAIN; /* being replaced (rename) */
  if (rc != BFH_OK) return rc;
  const char *name = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
  if (strlen(name) >= sizeof r->manifest) {
    rc = err_set(err, BFH_E_CORRUPT, "%s: CURRENT names '%s'", r->path, name);
    free(path);
    return rc;
  }
  if (strcmp(name, r->manifest) != 0) { /* a new MANIFEST: its first edits are a snapshot */
    forget_manifest(r);
    snprintf(r->manifest, sizeof r->manifest, "%s", name);
  }
  uint64_t size;
  env_file_id_t id;
  rc = env_path_stat(r->io, path, &size, &id, err);
  if (rc == BFH_NOT_FOUND) rc = RRO_AGAIN; /* replaced since CURRENT was read */
  if (rc == BFH_OK && r->manifest_file &&
      (!env_file_id_equal(id, env_rfile_id(r->manifest_file)) || size < r->manifest_resume)) {
    forget_manifest(r); /* another file under the name: the database was replaced */
    rc = RRO_AGAIN;
  }
  if (rc == BFH_OK && !r->manifest_file) {
    rc = env_open_read(r->io, path, &r->manifest_file, err);
    if (rc == BFH_NOT_FOUND || (rc != BFH_OK && !env_exists(r->io, path))) rc = RRO_AGAIN;
    if (rc == BFH_OK && !env_file_id_equal(id, env_rfile_id(r->manifest_file))) {
      forget_manifest(r);
      rc = RRO_AGAIN;
    }
  }
  if (rc == BFH_OK && size != r->manifest_resume) {
    uint64_t next = r->manifest_resume;
    rc = rdb_version_read(r->io, path, r->manifest_resume, 0, &r->version, &next, err);
    if (rc == BFH_OK && next != r->manifest_resume) r->version_changed = 1;
    if (rc == BFH_OK) r->manifest_resume = next;
    if (rc != BFH_OK) r->manifest[0] = '\0'; /* maybe half-applied: read it whole next time */
    if (rc == BFH_NOT_FOUND) rc = RRO_AGAIN;
  }
  free(path);
  return rc;
}

/* r->cf becomes the id of the column family named r->cf_name in the version; what the engine
   cannot read in it: BFH_E_UNSUPPORTED naming it. */
static int version_supported(rro_t *r, err_t *err) {
  if (!rdb_version_cf(&r->version, 0)) return RRO_AGAIN; /* a MANIFEST still being written */
  const rdb_cf_t *cf = rdb_version_cf_by_name(&r->version, r->cf_name);
  if (!cf) {
    char names[512];
    size_t at = 0;
    names[0] = '\0';
    for (size_t i = 0; i < r->version.ncfs && at + 2 < sizeof names; i++)
      at += (size_t)snprintf(names + at, sizeof names - at, "%s'%s'", i ? ", " : "",
                             r->version.cfs[i].name);
    return err_set(err, BFH_E_INVALID, "%s: no column family '%s' (the database has %s)", r->path,
                   r->cf_name, names);
  }
  if (cf->id != r->cf) { /* dropped and made again under the name: another family */
    forget_logs(r);
    r->version_changed = 1;
    r->cf = cf->id;
  }
  if (cf->comparator && strcmp(cf->comparator, "leveldb.BytewiseComparator") != 0)
    return err_set(err, BFH_E_UNSUPPORTED,
                   "%s: the column family '%s' orders keys with '%s'; bfh reads databases "
                   "with the bytewise comparator only",
                   r->path, cf->name, cf->comparator);
  for (size_t i = 0; i < r->version.nfiles; i++) {
    const rdb_file_t *f = &r->version.files[i];
    if (f->cf == r->cf && f->path_id != 0)
      return err_set(err, BFH_E_UNSUPPORTED,
                     "%s: table %06llu lives in db_paths[%u], outside the directory; bfh reads "
                     "tables in the database's directory only",
                     r->path, (unsigned long long)f->number, f->path_id);
  }
  return BFH_OK;
}

/* read_log for l at path. */
static int read_log_at(rro_t *r, rro_log_t *l, const char *path, err_t *err) {
  uint64_t size;
  env_file_id_t id;
  int rc = env_path_stat(r->io, path, &size, &id, err);
  if (rc == BFH_NOT_FOUND) return RRO_AGAIN; /* its memtable is in a newer version's tables */
  if (rc != BFH_OK) return rc;
  if (l->file && (!env_file_id_equal(id, env_rfile_id(l->file)) || size < l->resume)) {
    uint64_t number = l->number; /* another file under the number: read it from its start */
    rro_log_release(l);
    *l = (rro_log_t){.number = number};
    r->logs_changed = 1;
  }
  if (!l->file && size > 0) {
    rc = env_open_read(r->io, path, &l->file, err);
    if (rc == BFH_NOT_FOUND || (rc != BFH_OK && !env_exists(r->io, path))) return RRO_AGAIN;
    if (rc != BFH_OK) return rc;
    if (!env_file_id_equal(id, env_rfile_id(l->file))) return RRO_AGAIN;
  }
  if (size <= l->resume) return BFH_OK;
  rro_chunk_builder_t b = {.err = err, .dir = r->path, .cf = r->cf};
  b.vals.seed = stock_value_seed(r->sync);
  b.vals.terms = stock_value_terms(r->sync);
  uint64_t next = l->resume;
  rdb_log_stats_t st = {0};
  rc = rdb_log_read(r->io, path, l->number, l->resume, 0, rro_chunk_builder_add, &b, &next, &st,
                    err);
  atomic_fetch_add(&r->wal_bytes, st.bytes_read);
  if (rc == BFH_OK && b.rc != BFH_OK) rc = b.rc;
  if (rc == BFH_OK && b.nomem) rc = err_set(err, BFH_E_NOMEM, "log %s: no memory", path);
  if (rc == BFH_OK && (b.n > 0 || b.tombs.n > 0)) {
    rro_chunk_t *c = NULL;
    if (l->n == l->cap) {
      size_t cap = l->cap ? 2 * l->cap : 8;
      rro_chunk_t **nc = realloc(l->chunks, cap * sizeof *nc);
      if (nc) l->chunks = nc, l->cap = cap;
    }
    if (l->n < l->cap) c = rro_chunk_make(&b);
    if (!c) rc = err_set(err, BFH_E_NOMEM, "log %s: no memory", path);
    if (c) l->chunks[l->n++] = c;
  }
  rro_chunk_builder_release(&b);
  if (rc == BFH_OK) {
    r->logs_changed |= next != l->resume;
    l->resume = next;
  }
  return rc == BFH_NOT_FOUND ? RRO_AGAIN : rc;
}

/* Reads what was appended to WAL l since the last read into a new chunk. */
static int read_log(rro_t *r, rro_log_t *l, err_t *err) {
  char *path = path_fmt("%s/%06llu.log", r->path, (unsigned long long)l->number);
  if (!path)
    return err_set(err, BFH_E_NOMEM, "%s/%06llu.log: no memory for its path", r->path,
                   (unsigned long long)l->number);
  int rc = read_log_at(r, l, path, err);
  free(path);
  return rc;
}

/* Step 2: r->logs become the WALs that hold writes of the column family not yet in its
   tables (rdb_version_log_wanted), each read to its end. */
static int read_logs(rro_t *r, err_t *err) {
  uint64_t *nums = NULL;
  size_t n = 0;
  int rc = rdb_version_live_logs(r->io, r->path, &r->version, &nums, &n, err);
  if (rc != BFH_OK) return rc;
  size_t k = 0;
  for (size_t i = 0; i < n; i++)
    if (rdb_version_log_wanted(&r->version, r->cf, nums[i])) nums[k++] = nums[i];
  rro_log_t *logs = calloc(k + 1, sizeof *logs);
  if (!logs) {
    free(nums);
    return err_set(err, BFH_E_NOMEM, "%s: no memory for the WALs", r->path);
  }
  for (size_t i = 0; i < k; i++) logs[i].number = nums[i];
  for (size_t j = 0; j < r->nlogs; j++) { /* keep what was read of the WALs still wanted */
    rro_log_t *dst = NULL;
    for (size_t i = 0; i < k && !dst; i++)
      if (logs[i].number == r->logs[j].number) dst = &logs[i];
    if (dst)
      *dst = r->logs[j];
    else
      rro_log_release(&r->logs[j]), r->logs_changed = 1;
  }
  free(nums);
  free(r->logs);
  r->logs = logs;
  r->nlogs = k;
  for (size_t i = 0; i < r->nlogs && rc == BFH_OK; i++) rc = read_log(r, &r->logs[i], err);
  return rc;
}

/* ---- States and pins ------------------------------------------------------------------- */

void rro_pin_unref(rro_pin_t *p) {
  if (!p || atomic_fetch_sub(&p->refs, 1) != 1) return;
  env_rfile_close(p->f);
  atomic_fetch_sub(p->count, 1);
  rro_pin_keys_release(p);
  pthread_mutex_destroy(&p->mu);
  free(p);
}

rro_pin_t *rro_state_pin(const rro_state_t *s, uint64_t number) {
  size_t lo = 0, hi = s->ntables;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (s->tables[mid].number < number)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo < s->ntables && s->tables[lo].number == number && s->pins ? s->pins[lo] : NULL;
}

void rro_state_unref(rro_state_t *s) {
  if (!s || atomic_fetch_sub(&s->refs, 1) != 1) return;
  for (size_t i = 0; s->pins && i < s->ntables; i++) rro_pin_unref(s->pins[i]);
  free(s->pins);
  free(s->ids);
  free(s->order);
  rdb_version_release(&s->version);
  for (size_t i = 0; i < s->nchunks; i++) rro_chunk_unref(s->chunks[i]);
  free(s->chunks);
  free(s->segs);
  free(s->tables);
  free(s);
}

static int cmp_table(const void *a, const void *b) {
  uint64_t x = ((const engine_table_t *)a)->number, y = ((const engine_table_t *)b)->number;
  return x < y ? -1 : x > y;
}

/* Level 0 first, newest first (largest sequence, then number); then each deeper level. */
static int cmp_order(const void *a, const void *b) {
  const rdb_file_t *x = *(const rdb_file_t *const *)a, *y = *(const rdb_file_t *const *)b;
  if (x->level != y->level) return x->level - y->level;
  if (x->largest_seqno != y->largest_seqno) return x->largest_seqno < y->largest_seqno ? 1 : -1;
  return x->number < y->number ? 1 : x->number > y->number ? -1 : 0;
}

static int cmp_file_number(const void *a, const void *b) {
  const rdb_file_t *x = *(const rdb_file_t *const *)a, *y = *(const rdb_file_t *const *)b;
  return x->number < y->number ? -1 : x->number > y->number ? 1 : 0;
}

/* Holds table slot i of s open: the previous state's pin, or a new one while fewer than
   pin_max are held. BFH_OK; BFH_NOT_FOUND when the file is gone; BFH_E_NOMEM. */
static int pin_table_at(rro_t *r, rro_state_t *s, size_t i, uint64_t largest_seqno,
                        const char *path, err_t *err) {
  uint64_t number = s->tables[i].number;
  rro_pin_t *p = r->state && r->pin_max ? rro_state_pin(r->state, number) : NULL;
  if (p && r->recheck) { /* the database may be another one: is the name still this file? */
    uint64_t size;
    env_file_id_t id;
    err_t e;
    int rc = env_path_stat(r->io, path, &size, &id, &e);
    if (rc == BFH_NOT_FOUND) return rc;
    if (rc != BFH_OK || !env_file_id_equal(id, env_rfile_id(p->f))) p = NULL;
  }
  if (p) {
    atomic_fetch_add(&p->refs, 1);
    s->pins[i] = p;
    return BFH_OK;
  }
  if (atomic_load(&r->pinned) >= r->pin_max) return BFH_OK;
  size_t n = strlen(path) + 1;
  if (!(p = calloc(1, sizeof *p + n))) return err_set(err, BFH_E_NOMEM, "%s: no memory", r->path);
  memcpy(p->path, path, n);
  err_t e;
  int rc = env_open_read(r->io, path, &p->f, &e);
  if (rc != BFH_OK) {
    free(p);
    if (rc == BFH_E_NOMEM) return err_set(err, rc, "%s", e.msg);
    return env_exists(r->io, path) ? BFH_OK : BFH_NOT_FOUND;
  }
  atomic_init(&p->refs, 1);
  atomic_init(&p->footer_known, 0);
  pthread_mutex_init(&p->mu, NULL);
  p->count = &r->pinned;
  p->largest_seqno = largest_seqno;
  atomic_fetch_add(&r->pinned, 1);
  s->pins[i] = p;
  return BFH_OK;
}

static int pin_table(rro_t *r, rro_state_t *s, size_t i, uint64_t largest_seqno, err_t *err) {
  char *path;
  int rc = rdb_table_path(r->path, s->tables[i].number, &path, err);
  if (rc != BFH_OK) return rc;
  rc = pin_table_at(r, s, i, largest_seqno, path, err);
  free(path);
  return rc;
}

/* A table of the version was gone when pinned: deleted by a compaction whose edit the next
   MANIFEST read sees (RRO_AGAIN), unless nothing new was read since the last time the same
   table was missing: then the MANIFEST names a table that does not exist. REQUIRES mu. */
static int table_gone(rro_t *r, uint64_t number, err_t *err) {
  if (r->missing == number && r->missing_resume == r->manifest_resume &&
      strcmp(r->missing_manifest, r->manifest) == 0)
    return err_set(err, BFH_E_CORRUPT,
                   "%s: table %06llu, named by the live version of %s, is missing", r->path,
                   (unsigned long long)number, r->manifest);
  r->missing = number;
  r->missing_resume = r->manifest_resume;
  snprintf(r->missing_manifest, sizeof r->missing_manifest, "%s", r->manifest);
  return RRO_AGAIN;
}

static uint64_t fold_id(env_file_id_t id) {
  uint64_t h = bfh_hash64(&id, sizeof id, RRO_KEY_HASH_SEED);
  return h ? h : 1;
}

/* s->ids[i]: the identity of table i's file (its pin's, else its name's now). BFH_OK,
   BFH_NOT_FOUND (the file is gone) or BFH_E_NOMEM. */
static int table_id(rro_t *r, rro_state_t *s, size_t i, err_t *err) {
  if (s->pins[i]) {
    s->ids[i] = fold_id(env_rfile_id(s->pins[i]->f));
    return BFH_OK;
  }
  char *path;
  int rc = rdb_table_path(r->path, s->tables[i].number, &path, err);
  if (rc != BFH_OK) return rc;
  uint64_t size;
  env_file_id_t id;
  err_t e;
  rc = env_path_stat(r->io, path, &size, &id, &e);
  free(path);
  if (rc == BFH_NOT_FOUND) return rc;
  s->ids[i] = rc == BFH_OK ? fold_id(id) : 0;
  return BFH_OK;
}

/* A new state from r's version and WALs (one reference). REQUIRES mu. */
static int state_make(rro_t *r, rro_state_t **out, err_t *err) {
  rro_state_t *s = calloc(1, sizeof *s);
  if (!s) return err_set(err, BFH_E_NOMEM, "%s: no memory for the version", r->path);
  atomic_init(&s->refs, 1);
  size_t nc = 0;
  for (size_t i = 0; i < r->nlogs; i++) nc += r->logs[i].n;
  size_t nf = r->version.nfiles;
  s->tables = malloc((nf + 1) * sizeof *s->tables);
  s->order = malloc((nf + 1) * sizeof *s->order);
  s->chunks = malloc((nc + 1) * sizeof *s->chunks);
  s->segs = malloc((nc + 1) * sizeof *s->segs);
  s->pins = calloc(nf + 1, sizeof *s->pins);
  s->ids = calloc(nf + 1, sizeof *s->ids);
  if (!s->tables || !s->order || !s->chunks || !s->segs || !s->pins || !s->ids ||
      rdb_version_copy(&s->version, &r->version) != BFH_OK) {
    rro_state_unref(s);
    return err_set(err, BFH_E_NOMEM, "%s: no memory for the version", r->path);
  }
  for (size_t i = 0; i < s->version.nfiles; i++) {
    const rdb_file_t *f = &s->version.files[i];
    if (f->cf != r->cf) continue;
    s->order[s->norder++] = f;
    s->tables[s->ntables++] =
        (engine_table_t){.number = f->number, .size = f->size, .level = f->level};
  }
  qsort(s->order, s->norder, sizeof *s->order, cmp_order);
  qsort(s->tables, s->ntables, sizeof *s->tables, cmp_table);
  /* The files by number, as the tables: each pin keeps its file's largest sequence (an
     ingested table's global sequence number, rdb_table_global_seqno). */
  const rdb_file_t **by_number = malloc((s->norder + 1) * sizeof *by_number);
  if (!by_number) {
    rro_state_unref(s);
    return err_set(err, BFH_E_NOMEM, "%s: no memory for the version", r->path);
  }
  memcpy(by_number, s->order, s->norder * sizeof *by_number);
  qsort(by_number, s->norder, sizeof *by_number, cmp_file_number);
  int rc = BFH_OK;
  for (size_t i = 0; i < s->ntables && rc == BFH_OK; i++) {
    if ((rc = pin_table(r, s, i, by_number[i]->largest_seqno, err)) == BFH_OK)
      rc = table_id(r, s, i, err);
    if (rc == BFH_NOT_FOUND) rc = table_gone(r, s->tables[i].number, err);
  }
  free(by_number);
  if (rc != BFH_OK) {
    rro_state_unref(s);
    return rc;
  }
  r->missing = 0;
  r->recheck = 0;
  for (size_t i = 0; i < r->nlogs; i++)
    for (size_t j = 0; j < r->logs[i].n; j++) {
      rro_chunk_t *c = r->logs[i].chunks[j];
      atomic_fetch_add(&c->refs, 1);
      s->segs[s->nchunks] = c->vals;
      s->chunks[s->nchunks++] = c;
    }
  *out = s;
  return BFH_OK;
}

/* Steps 1-3 once: BFH_OK (r->state is then current), RRO_AGAIN, or an error. REQUIRES mu. */
static int refresh_once(void *arg, err_t *err) {
  rro_t *r = arg;
  int rc = read_manifest(r, err);
  if (rc == BFH_OK) rc = version_supported(r, err);
  if (rc != BFH_OK) return rc;
  uint32_t cf = r->cf;
  uint64_t log_number = rdb_version_cf(&r->version, cf)->log_number;
  rc = read_logs(r, err);
  if (rc == BFH_OK && r->logs_hook) r->logs_hook(r->logs_hook_arg);
  if (rc == BFH_OK) rc = read_manifest(r, err);
  if (rc == BFH_OK) rc = version_supported(r, err);
  if (rc != BFH_OK) return rc;
  if (r->cf != cf || rdb_version_cf(&r->version, cf)->log_number != log_number) return RRO_AGAIN;
  if (r->state && !r->version_changed && !r->logs_changed) return BFH_OK;
  rro_state_t *s = NULL;
  rc = state_make(r, &s, err);
  if (rc != BFH_OK) return rc;
  pthread_mutex_lock(&r->state_mu);
  rro_state_t *old = r->state;
  r->state = s;
  pthread_mutex_unlock(&r->state_mu);
  rro_state_unref(old);
  r->version_changed = r->logs_changed = 0;
  return BFH_OK;
}

int rro_refresh(rro_t *r, err_t *err) {
  return stock_ro_refresh(&r->watch, &r->stale, r->state != NULL, &r->refreshes, &r->retries,
                          ENGINE_ROCKSDB_RO_ATTEMPTS, refresh_once, r, r->path, "MANIFEST and WALs",
                          err);
}

int rro_current_state(rro_t *r, rro_state_t **s, err_t *err) {
  pthread_mutex_lock(&r->mu);
  int rc = rro_refresh(r, err);
  if (rc == BFH_OK) atomic_fetch_add(&r->state->refs, 1), *s = r->state;
  pthread_mutex_unlock(&r->mu);
  return rc;
}

int rro_table_status(rro_t *r, int rc, uint64_t number, err_t *err) {
  return stock_ro_table_status(&r->stale, r->path, rc, number, err);
}

void engine_rocksdb_ro_set_pin_max(engine_t *e, uint64_t n) {
  rro_t *r = (rro_t *)e;
  pthread_mutex_lock(&r->mu);
  r->pin_max = n;
  r->version_changed = 1;
  atomic_store(&r->stale, 1);
  pthread_mutex_unlock(&r->mu);
}

uint64_t engine_rocksdb_ro_pinned(engine_t *e) {
  return atomic_load(&((rro_t *)e)->pinned);
}

uint64_t engine_rocksdb_ro_retries(engine_t *e) {
  return atomic_load(&((rro_t *)e)->retries);
}

uint64_t engine_rocksdb_ro_refreshes(engine_t *e) {
  return atomic_load(&((rro_t *)e)->refreshes);
}

uint64_t engine_rocksdb_ro_wal_bytes_read(engine_t *e) {
  return atomic_load(&((rro_t *)e)->wal_bytes);
}

void engine_rocksdb_ro_set_logs_hook(engine_t *e, void (*fn)(void *arg), void *arg) {
  rro_t *r = (rro_t *)e;
  pthread_mutex_lock(&r->mu);
  r->logs_hook = fn;
  r->logs_hook_arg = arg;
  pthread_mutex_unlock(&r->mu);
}

rro_pin_t *rro_newest_pin(rro_t *r, uint64_t number) {
  pthread_mutex_lock(&r->state_mu);
  rro_state_t *s = r->state;
  if (s) atomic_fetch_add(&s->refs, 1);
  pthread_mutex_unlock(&r->state_mu);
  if (!s) return NULL;
  rro_pin_t *p = rro_state_pin(s, number);
  if (p) atomic_fetch_add(&p->refs, 1);
  rro_state_unref(s);
  return p;
}

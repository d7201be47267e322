/* The refresh of the read-only stock engines (stock_ro.h; the consistency argument is at the
   top of leveldb_ro/readonly.c): CURRENT and the MANIFEST read on from where the last read
   stopped, the live logs read to their ends into chunks, the MANIFEST read again; a MANIFEST or
   log that is another file under its name (a replaced database) is read anew. Ends with a new
   state, whose tables are held open (pins), when anything changed. */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "filters/hash.h"
#include "lsm_hooks/engines/stock/stock_ro.h"
#include "util/path.h"
#include "util/sort.h"

#define AGAIN STOCK_RO_AGAIN

/* Frees what l holds, not l. */
static void log_release(stock_ro_log_t *l) {
  for (size_t i = 0; i < l->n; i++) stock_chunk_unref(l->chunks[i]);
  free(l->chunks);
  env_rfile_close(l->file);
}

void stock_ro_forget_logs(stock_ro_t *r) {
  for (size_t i = 0; i < r->nlogs; i++) log_release(&r->logs[i]);
  free(r->logs);
  r->logs = NULL;
  r->nlogs = 0;
  r->logs_changed = 1;
}

/* Another MANIFEST (by name or by file): what was read of the old one and of the logs is
   dropped, the next state checks every table's name against its pin. REQUIRES mu. */
static void forget_manifest(stock_ro_t *r) {
  r->fmt->version_forget(r);
  r->manifest_resume = 0;
  r->version_changed = 1;
  env_rfile_close(r->manifest_file);
  r->manifest_file = NULL;
  stock_ro_forget_logs(r);
  r->recheck = 1;
}

/* Whether the file at path (its id and size now) is still the one held in *held, read up to
   resume: another file, or a shorter one, is not. */
static int same_file(env_rfile_t *held, env_file_id_t id, uint64_t size, uint64_t resume) {
  return env_file_id_equal(id, env_rfile_id(held)) && size >= resume;
}

/* Opens *held at path (once, at its first read) and checks that it is the file stat gave (id):
   BFH_OK, AGAIN (gone or replaced meanwhile) or an error. */
static int hold_file(stock_ro_t *r, const char *path, env_file_id_t id, env_rfile_t **held,
                     err_t *err) {
  int rc = env_open_read(r->io, path, held, err);
  if (rc == BFH_NOT_FOUND || (rc != BFH_OK && !env_exists(r->io, path))) return AGAIN;
  if (rc != BFH_OK) return rc;
  return env_file_id_equal(id, env_rfile_id(*held)) ? BFH_OK : AGAIN;
}

/* The new edits of r->manifest (at path) into the format's version. REQUIRES mu. */
static int read_manifest_file(stock_ro_t *r, const char *path, err_t *err) {
  uint64_t size;
  env_file_id_t id;
  int rc = env_path_stat(r->io, path, &size, &id, err);
  if (rc == BFH_NOT_FOUND) return AGAIN; /* replaced since CURRENT was read */
  if (rc != BFH_OK) return rc;
  if (r->manifest_file && !same_file(r->manifest_file, id, size, r->manifest_resume)) {
    forget_manifest(r); /* another file under the name: the database was replaced */
    return AGAIN;
  }
  if (!r->manifest_file && (rc = hold_file(r, path, id, &r->manifest_file, err)) != BFH_OK) {
    if (rc == AGAIN && r->manifest_file) forget_manifest(r);
    return rc;
  }
  if (size == r->manifest_resume) return BFH_OK; /* nothing appended */
  uint64_t next = r->manifest_resume;
  rc = r->fmt->version_read(r, path, r->manifest_resume, &next, err);
  if (rc == BFH_OK && next != r->manifest_resume) r->version_changed = 1;
  if (rc == BFH_OK) r->manifest_resume = next;
  if (rc != BFH_OK) r->manifest[0] = '\0'; /* the version may be half-applied: read it whole */
  return rc == BFH_NOT_FOUND ? AGAIN : rc;
}

/* Step 1 (and 3): CURRENT and the MANIFEST's new edits, then what the version needs of the
   logs into *m. REQUIRES mu. */
static int read_manifest(stock_ro_t *r, stock_ro_mark_t *m, err_t *err) {
  char *path = NULL;
  int rc = r->fmt->current(r, &path, err);
  if (rc == BFH_NOT_FOUND) return AGAIN; /* being replaced (rename) */
  if (rc != BFH_OK) return rc;
  const char *name = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
  if (strlen(name) >= sizeof r->manifest)
    rc = err_set(err, BFH_E_CORRUPT, "%s: CURRENT names '%s'", r->path, name);
  if (rc == BFH_OK && strcmp(name, r->manifest) != 0) { /* a new MANIFEST: a snapshot first */
    forget_manifest(r);
    snprintf(r->manifest, sizeof r->manifest, "%s", name);
  }
  if (rc == BFH_OK) rc = read_manifest_file(r, path, err);
  free(path);
  return rc == BFH_OK ? r->fmt->version_mark(r, m, err) : rc;
}

/* Reads what was appended to log l (at path) since the last read into a new chunk. */
static int read_log_at(stock_ro_t *r, stock_ro_log_t *l, const char *path, err_t *err) {
  uint64_t size;
  env_file_id_t id;
  int rc = env_path_stat(r->io, path, &size, &id, err);
  if (rc == BFH_NOT_FOUND) return AGAIN; /* its memtable is in a newer version's tables */
  if (rc != BFH_OK) return rc;
  if (l->file && !same_file(l->file, id, size, l->resume)) {
    uint64_t number = l->number; /* another file under the number: read it from its start */
    log_release(l);
    *l = (stock_ro_log_t){.number = number};
    r->logs_changed = 1;
  }
  if (!l->file && size > 0 && (rc = hold_file(r, path, id, &l->file, err)) != BFH_OK) return rc;
  if (size <= l->resume) return BFH_OK;
  stock_chunk_builder_t b = {
      .vals = {.seed = stock_value_seed(r->sync), .terms = stock_value_terms(r->sync)}};
  uint64_t next = l->resume;
  rc = r->fmt->log_read(r, path, l->number, l->resume, &b, &next, err);
  if (rc == BFH_OK && b.nomem) rc = err_set(err, BFH_E_NOMEM, "log %s: no memory", path);
  if (rc == BFH_OK && (b.all.n > 0 || b.tombs.n > 0)) {
    stock_chunk_t *c = NULL;
    if (stock_grow(&l->chunks, &l->cap, l->n + 1, sizeof *l->chunks, 8) == BFH_OK)
      c = stock_chunk_make(&b);
    if (!c) rc = err_set(err, BFH_E_NOMEM, "log %s: no memory", path);
    if (c) l->chunks[l->n++] = c;
  }
  stock_chunk_builder_release(&b);
  if (rc == BFH_OK) {
    r->logs_changed |= next != l->resume;
    l->resume = next;
  }
  return rc == BFH_NOT_FOUND ? AGAIN : rc;
}

static int read_log(stock_ro_t *r, stock_ro_log_t *l, err_t *err) {
  char *path = path_fmt("%s/%06llu.log", r->path, (unsigned long long)l->number);
  if (!path)
    return err_set(err, BFH_E_NOMEM, "%s/%06llu.log: no memory for its path", r->path,
                   (unsigned long long)l->number);
  int rc = read_log_at(r, l, path, err);
  free(path);
  return rc;
}

/* Step 2: r->logs become the logs the version needs, each read to its end; what was read of
   the others is dropped (their data is in tables). */
static int read_logs(stock_ro_t *r, err_t *err) {
  uint64_t *nums = NULL;
  size_t k = 0;
  int rc = r->fmt->live_logs(r, &nums, &k, err);
  if (rc != BFH_OK) return rc;
  stock_ro_log_t *logs = calloc(k + 1, sizeof *logs);
  if (!logs) {
    free(nums);
    return err_set(err, BFH_E_NOMEM, "%s: no memory for the logs", r->path);
  }
  for (size_t i = 0; i < k; i++) logs[i].number = nums[i];
  for (size_t j = 0; j < r->nlogs; j++) {
    stock_ro_log_t *dst = NULL;
    for (size_t i = 0; i < k && !dst; i++)
      if (logs[i].number == r->logs[j].number) dst = &logs[i];
    if (dst)
      *dst = r->logs[j];
    else
      log_release(&r->logs[j]), r->logs_changed = 1;
  }
  free(nums);
  free(r->logs);
  r->logs = logs;
  r->nlogs = k;
  for (size_t i = 0; i < r->nlogs && rc == BFH_OK; i++) rc = read_log(r, &r->logs[i], err);
  return rc;
}

/* ---- States and pins ----------------------------------------------------------------------- */

void stock_pin_unref(stock_pin_t *p) {
  if (!p || atomic_fetch_sub(&p->refs, 1) != 1) return;
  env_rfile_close(p->f);
  atomic_fetch_sub(p->count, 1);
  if (p->fmt->pin_release) p->fmt->pin_release(p);
  free(p);
}

stock_pin_t *stock_ro_state_pin(const stock_ro_state_t *s, uint64_t number) {
  size_t i = U64_LOWER_BOUND(s->tables, s->ntables, number, number);
  return i < s->ntables && s->tables[i].number == number && s->pins ? s->pins[i] : NULL;
}

void stock_ro_state_unref(stock_ro_state_t *s) {
  if (!s || atomic_fetch_sub(&s->refs, 1) != 1) return;
  for (size_t i = 0; s->pins && i < s->ntables; i++) stock_pin_unref(s->pins[i]);
  free(s->pins);
  free(s->ids);
  s->fmt->state_release(s);
  for (size_t i = 0; i < s->nchunks; i++) stock_chunk_unref(s->chunks[i]);
  free(s->chunks);
  free(s->segs);
  free(s->tables);
  free(s->order);
  free(s);
}

stock_pin_t *stock_ro_newest_pin(stock_ro_t *r, uint64_t number) {
  pthread_mutex_lock(&r->state_mu);
  stock_ro_state_t *s = r->state;
  if (s) atomic_fetch_add(&s->refs, 1);
  pthread_mutex_unlock(&r->state_mu);
  if (!s) return NULL;
  stock_pin_t *p = stock_ro_state_pin(s, number);
  if (p) atomic_fetch_add(&p->refs, 1);
  stock_ro_state_unref(s);
  return p;
}

/* Holds table i of s (at path) open: the pin of the previous state, or a new one while fewer
   than pin_max are held (beyond, or when the open fails for another reason than the file being
   gone, the table stays unpinned: read by name, as it vanishes it makes the search start over).
   BFH_OK; BFH_NOT_FOUND when the file is gone; BFH_E_NOMEM. */
static int pin_table_at(stock_ro_t *r, stock_ro_state_t *s, size_t i, const char *path,
                        err_t *err) {
  stock_pin_t *p =
      r->state && r->pin_max ? stock_ro_state_pin(r->state, s->tables[i].number) : NULL;
  if (p && r->recheck) { /* the database may be another one: is the name still this file? */
    uint64_t size;
    env_file_id_t id;
    err_t e;
    int rc = env_path_stat(r->io, path, &size, &id, &e);
    if (rc == BFH_NOT_FOUND) return rc;
    if (rc != BFH_OK || !env_file_id_equal(id, env_rfile_id(p->f))) p = NULL; /* pin anew */
  }
  if (p) {
    atomic_fetch_add(&p->refs, 1);
    s->pins[i] = p;
    return BFH_OK;
  }
  if (atomic_load(&r->pinned) >= r->pin_max) return BFH_OK;
  size_t n = strlen(path) + 1;
  if (!(p = calloc(1, r->fmt->pin_bytes + n)))
    return err_set(err, BFH_E_NOMEM, "%s: no memory", r->path);
  p->path = (char *)p + r->fmt->pin_bytes;
  memcpy(p->path, path, n);
  err_t e;
  int rc = env_open_read(r->io, path, &p->f, &e);
  if (rc != BFH_OK) {
    free(p);
    if (rc == BFH_E_NOMEM) return err_set(err, rc, "%s", e.msg);
    return env_exists(r->io, path) ? BFH_OK : BFH_NOT_FOUND;
  }
  atomic_init(&p->refs, 1);
  p->fmt = r->fmt;
  p->count = &r->pinned;
  if (r->fmt->pin_init) r->fmt->pin_init(s, i, p);
  atomic_fetch_add(&r->pinned, 1);
  s->pins[i] = p;
  return BFH_OK;
}

static uint64_t fold_id(const stock_ro_t *r, env_file_id_t id) {
  uint64_t h = bfh_hash64(&id, sizeof id, r->fmt->id_seed);
  return h ? h : 1;
}

/* s->ids[i]: the identity of table i's file (at path): its pin's, else (not held) the previous
   state's unless the MANIFEST was read whole since, else its name's now. BFH_OK, BFH_NOT_FOUND
   (the file is gone). REQUIRES mu. */
static int table_id(stock_ro_t *r, stock_ro_state_t *s, size_t i, const char *path) {
  if (s->pins[i]) {
    s->ids[i] = fold_id(r, env_rfile_id(s->pins[i]->f));
    return BFH_OK;
  }
  const stock_ro_state_t *prev = r->state;
  if (prev && !r->recheck) {
    size_t j = U64_LOWER_BOUND(prev->tables, prev->ntables, number, s->tables[i].number);
    if (j < prev->ntables && prev->tables[j].number == s->tables[i].number && prev->ids[j]) {
      s->ids[i] = prev->ids[j];
      return BFH_OK;
    }
  }
  uint64_t size;
  env_file_id_t id;
  err_t e;
  int rc = env_path_stat(r->io, path, &size, &id, &e);
  if (rc == BFH_NOT_FOUND) return rc;
  s->ids[i] = rc == BFH_OK ? fold_id(r, id) : 0; /* 0: not known (the leaf is kept as it is) */
  return BFH_OK;
}

/* Pins table i of s and takes its identity. */
static int hold_table(stock_ro_t *r, stock_ro_state_t *s, size_t i, err_t *err) {
  char *path;
  int rc = stock_ro_table_path(r, s->tables[i].number, &path, err);
  if (rc != BFH_OK) return rc;
  rc = pin_table_at(r, s, i, path, err);
  if (rc == BFH_OK) rc = table_id(r, s, i, path);
  free(path);
  return rc;
}

/* A table of the version was gone when pinned: deleted by a compaction whose edit the next
   MANIFEST read sees (AGAIN), unless that read finds nothing new and the same table gone
   again: then the MANIFEST names a table that does not exist (damage). REQUIRES mu. */
static int table_gone(stock_ro_t *r, uint64_t number, err_t *err) {
  if (r->missing == number && r->missing_resume == r->manifest_resume &&
      strcmp(r->missing_manifest, r->manifest) == 0)
    return err_set(err, BFH_E_CORRUPT,
                   "%s: table %06llu, named by the live version of %s, is missing", r->path,
                   (unsigned long long)number, r->manifest);
  r->missing = number;
  r->missing_resume = r->manifest_resume;
  snprintf(r->missing_manifest, sizeof r->missing_manifest, "%s", r->manifest);
  return AGAIN;
}

/* Level 0 first, newest first (by the format's rule); then each deeper level. */
static int cmp_lookup(const void *a, const void *b, void *by_seq) {
  const engine_table_t *x = &((const stock_ro_table_t *)a)->t;
  const engine_table_t *y = &((const stock_ro_table_t *)b)->t;
  if (x->level != y->level) return x->level - y->level;
  if (*(const int *)by_seq && x->max_seq != y->max_seq) return x->max_seq < y->max_seq ? 1 : -1;
  return x->number < y->number ? 1 : x->number > y->number ? -1 : 0;
}

/* s->order sorted into lookup order, and s->tables made from it (sorted by number). */
static int tables_order(stock_ro_state_t *s) {
  qsort_r(s->order, s->ntables, sizeof *s->order, cmp_lookup, (void *)&s->fmt->newest_by_seq);
  if (!(s->tables = malloc((s->ntables + 1) * sizeof *s->tables))) return BFH_E_NOMEM;
  for (size_t i = 0; i < s->ntables; i++) s->tables[i] = s->order[i].t;
  stock_tables_sort(s->tables, s->ntables);
  return BFH_OK;
}

/* A new state from r's version and logs (one reference) into *out: BFH_OK, AGAIN (a table of
   the version was deleted since the MANIFEST was read), or an error. REQUIRES mu. */
static int state_make(stock_ro_t *r, stock_ro_state_t **out, err_t *err) {
  stock_ro_state_t *s = calloc(1, r->fmt->state_bytes);
  if (!s) return err_set(err, BFH_E_NOMEM, "%s: no memory for the version", r->path);
  atomic_init(&s->refs, 1);
  s->fmt = r->fmt;
  size_t nc = 0;
  for (size_t i = 0; i < r->nlogs; i++) nc += r->logs[i].n;
  s->chunks = malloc((nc + 1) * sizeof *s->chunks);
  s->segs = malloc((nc + 1) * sizeof *s->segs);
  int rc = s->chunks && s->segs ? r->fmt->state_make(r, s, err) : BFH_E_NOMEM;
  if (rc == BFH_OK) rc = tables_order(s);
  if (rc == BFH_OK) {
    s->pins = calloc(s->ntables + 1, sizeof *s->pins);
    s->ids = calloc(s->ntables + 1, sizeof *s->ids);
    if (!s->pins || !s->ids) rc = BFH_E_NOMEM;
  }
  if (rc == BFH_E_NOMEM) rc = err_set(err, rc, "%s: no memory for the version", r->path);
  for (size_t i = 0; i < s->ntables && rc == BFH_OK; i++)
    if ((rc = hold_table(r, s, i, err)) == BFH_NOT_FOUND)
      rc = table_gone(r, s->tables[i].number, err);
  if (rc != BFH_OK) {
    stock_ro_state_unref(s);
    return rc;
  }
  r->missing = 0;
  r->recheck = 0;
  for (size_t i = 0; i < r->nlogs; i++)
    for (size_t j = 0; j < r->logs[i].n; j++) {
      stock_chunk_t *c = r->logs[i].chunks[j];
      atomic_fetch_add(&c->refs, 1);
      s->segs[s->nchunks] = c->vals;
      s->chunks[s->nchunks++] = c;
    }
  *out = s;
  return BFH_OK;
}

/* Steps 1-3 once: BFH_OK (r->state is then current), AGAIN, or an error. REQUIRES mu. */
static int refresh_once(stock_ro_t *r, err_t *err) {
  stock_ro_mark_t before, after;
  int rc = read_manifest(r, &before, err);
  if (rc == BFH_OK) rc = read_logs(r, err);
  if (rc == BFH_OK && r->logs_hook) r->logs_hook(r->logs_hook_arg);
  if (rc == BFH_OK) rc = read_manifest(r, &after, err);
  if (rc != BFH_OK) return rc;
  if (before.log_number != after.log_number || before.family != after.family) return AGAIN;
  if (r->state && !r->version_changed && !r->logs_changed) return BFH_OK;
  stock_ro_state_t *s = NULL;
  if ((rc = state_make(r, &s, err)) != BFH_OK) return rc;
  pthread_mutex_lock(&r->state_mu);
  stock_ro_state_t *old = r->state;
  r->state = s;
  pthread_mutex_unlock(&r->state_mu);
  stock_ro_state_unref(old);
  r->version_changed = r->logs_changed = 0;
  return BFH_OK;
}

/* The watch first, then the files (dir_watch.h): when the watch has queued nothing since the
   last refresh that succeeded, stale is clear and there is a state, it is the newest and
   nothing is read. Else (counted in refreshes) the files are read; AGAIN, and BFH_E_CORRUPT (a
   damaged-looking record may be an append in flight: top of leveldb_ro/readonly.c), read again
   (counted in retries), at most STOCK_RO_ATTEMPTS times in all, then BFH_E_BUSY. A failed
   refresh leaves stale set: the next one reads the files again. */
int stock_ro_refresh_state(stock_ro_t *r, err_t *err) {
  if (dir_watch_poll(&r->watch)) atomic_store(&r->stale, 1);
  if (!atomic_exchange(&r->stale, 0) && r->state) return BFH_OK; /* cleared: this one reads */
  atomic_fetch_add(&r->refreshes, 1);
  int rc = AGAIN;
  for (int attempt = 0; attempt < STOCK_RO_ATTEMPTS; attempt++) {
    rc = refresh_once(r, err);
    if (rc == BFH_OK) return rc;
    if (rc != AGAIN && !(rc == BFH_E_CORRUPT && attempt + 1 < STOCK_RO_ATTEMPTS)) break;
    atomic_fetch_add(&r->retries, 1);
  }
  atomic_store(&r->stale, 1);
  if (rc != AGAIN) return rc;
  return err_set(err, BFH_E_BUSY, "%s: the database changed under each of %d reads of its %s",
                 r->path, STOCK_RO_ATTEMPTS, r->fmt->logs_what);
}

int stock_ro_current_state(stock_ro_t *r, stock_ro_state_t **s, err_t *err) {
  pthread_mutex_lock(&r->mu);
  int rc = stock_ro_refresh_state(r, err);
  if (rc == BFH_OK) atomic_fetch_add(&r->state->refs, 1), *s = r->state;
  pthread_mutex_unlock(&r->mu);
  return rc;
}

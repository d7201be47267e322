/* States and pins (ro_internal.h): a refreshed state holds every table of its version open
   (a pin_t, shared by the states that list it; at most pin_max at once) and knows which file
   each table is, so that a compaction or a replaced database cannot take a table from a
   search of the state (top of readonly.c). */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "filters/hash.h"
#include "lsm_hooks/engines/leveldb_ro/ro_internal.h"

static void pin_unref(pin_t *p) {
  if (!p || atomic_fetch_sub(&p->refs, 1) != 1) return;
  env_rfile_close(p->f);
  atomic_fetch_sub(p->count, 1);
  free(p);
}

/* The pin of table `number` in s, or NULL. */
pin_t *ro_state_pin(const ro_state_t *s, uint64_t number) {
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

void ro_state_unref(ro_state_t *s) {
  if (!s || atomic_fetch_sub(&s->refs, 1) != 1) return;
  for (size_t i = 0; s->pins && i < s->ntables; i++) pin_unref(s->pins[i]);
  free(s->pins);
  free(s->ids);
  ldb_version_release(&s->version);
  for (size_t i = 0; i < s->nchunks; i++) ro_chunk_unref(s->chunks[i]);
  free(s->chunks);
  free(s->segs);
  free(s->tables);
  free(s);
}

static int cmp_table(const void *a, const void *b) {
  uint64_t x = ((const engine_table_t *)a)->number, y = ((const engine_table_t *)b)->number;
  return x < y ? -1 : x > y;
}

/* Holds table `number` open for state s (slot i): the pin of the previous state, or a new
   one while fewer than pin_max are held (beyond, or when the open fails for another reason
   than the file being gone, the table stays unpinned: read by name, as it vanishes it makes
   the search start over). BFH_OK; BFH_NOT_FOUND when the file is gone; BFH_E_NOMEM. */
static int pin_table_at(engine_ro_t *r, ro_state_t *s, size_t i, const char *path, err_t *err) {
  uint64_t number = s->tables[i].number;
  pin_t *p = r->state && r->pin_max ? ro_state_pin(r->state, number) : NULL;
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
  if (!(p = malloc(sizeof *p + n))) return err_set(err, BFH_E_NOMEM, "%s: no memory", r->path);
  memcpy(p->path, path, n);
  err_t e;
  int rc = env_open_read(r->io, path, &p->f, &e);
  if (rc != BFH_OK) {
    free(p);
    if (rc == BFH_E_NOMEM) return err_set(err, rc, "%s", e.msg);
    return env_exists(r->io, path) ? BFH_OK : BFH_NOT_FOUND;
  }
  atomic_init(&p->refs, 1);
  p->count = &r->pinned;
  atomic_fetch_add(&r->pinned, 1);
  s->pins[i] = p;
  return BFH_OK;
}

static int pin_table(engine_ro_t *r, ro_state_t *s, size_t i, err_t *err) {
  char *path;
  int rc = ldb_table_path(r->path, s->tables[i].number, &path, err);
  if (rc != BFH_OK) return rc;
  rc = pin_table_at(r, s, i, path, err);
  free(path);
  return rc;
}

/* A table of the version was gone when pinned: deleted by a compaction whose edit the next
   MANIFEST read sees (AGAIN), unless that read finds nothing new and the same table gone
   again: then the MANIFEST names a table that does not exist (damage). REQUIRES mu. */
static int table_gone(engine_ro_t *r, uint64_t number, err_t *err) {
  if (r->missing == number && r->missing_resume == r->manifest_resume &&
      strcmp(r->missing_manifest, r->manifest) == 0)
    return err_set(err, BFH_E_CORRUPT, "%s: table %06llu, named by the live version of %s, is "
                   "missing", r->path, (unsigned long long)number, r->manifest);
  r->missing = number;
  r->missing_resume = r->manifest_resume;
  snprintf(r->missing_manifest, sizeof r->missing_manifest, "%s", r->manifest);
  return AGAIN;
}

static uint64_t fold_id(env_file_id_t id) {
  uint64_t h = bfh_hash64(&id, sizeof id, KEY_HASH_SEED);
  return h ? h : 1;
}

/* s->ids[i]: the identity of table i's file: its pin's, else (not held) the previous state's
   unless the MANIFEST was read whole since, else its name's now. BFH_OK, BFH_NOT_FOUND (the
   file is gone) or BFH_E_NOMEM. REQUIRES mu. */
static int table_id(engine_ro_t *r, ro_state_t *s, size_t i, err_t *err) {
  if (s->pins[i]) {
    s->ids[i] = fold_id(env_rfile_id(s->pins[i]->f));
    return BFH_OK;
  }
  const ro_state_t *prev = r->state;
  if (prev && !r->recheck) {
    const engine_table_t *t =
        bsearch(&s->tables[i], prev->tables, prev->ntables, sizeof *prev->tables, cmp_table);
    if (t && prev->ids[t - prev->tables]) {
      s->ids[i] = prev->ids[t - prev->tables];
      return BFH_OK;
    }
  }
  char *path;
  int rc = ldb_table_path(r->path, s->tables[i].number, &path, err);
  if (rc != BFH_OK) return rc;
  uint64_t size;
  env_file_id_t id;
  err_t e;
  rc = env_path_stat(r->io, path, &size, &id, &e);
  free(path);
  if (rc == BFH_NOT_FOUND) return rc;
  s->ids[i] = rc == BFH_OK ? fold_id(id) : 0; /* 0: not known (the leaf is kept as it is) */
  return BFH_OK;
}

/* A new state from r's version and logs (one reference) into *out: BFH_OK, AGAIN (a table
   of the version was deleted since the MANIFEST was read), or an error. REQUIRES mu. */
int ro_state_make(engine_ro_t *r, ro_state_t **out, err_t *err) {
  ro_state_t *s = calloc(1, sizeof *s);
  if (!s) return err_set(err, BFH_E_NOMEM, "%s: no memory for the version", r->path);
  atomic_init(&s->refs, 1);
  size_t nc = 0;
  for (size_t i = 0; i < r->nlogs; i++) nc += r->logs[i].n;
  s->tables = malloc((r->version.nfiles + 1) * sizeof *s->tables);
  s->chunks = malloc((nc + 1) * sizeof *s->chunks);
  s->segs = malloc((nc + 1) * sizeof *s->segs);
  if (!s->tables || !s->chunks || !s->segs || ldb_version_copy(&s->version, &r->version)) {
    ro_state_unref(s);
    return err_set(err, BFH_E_NOMEM, "%s: no memory for the version", r->path);
  }
  for (size_t i = 0; i < r->version.nfiles; i++) {
    const ldb_file_t *f = &r->version.files[i];
    s->tables[i] = (engine_table_t){.number = f->number, .size = f->size, .level = f->level};
  }
  s->ntables = r->version.nfiles;
  qsort(s->tables, s->ntables, sizeof *s->tables, cmp_table);
  s->pins = calloc(s->ntables + 1, sizeof *s->pins);
  int rc = s->pins ? BFH_OK : err_set(err, BFH_E_NOMEM, "%s: no memory for the version", r->path);
  s->ids = calloc(s->ntables + 1, sizeof *s->ids);
  if (rc == BFH_OK && !s->ids)
    rc = err_set(err, BFH_E_NOMEM, "%s: no memory for the version", r->path);
  for (size_t i = 0; i < s->ntables && rc == BFH_OK; i++) {
    if ((rc = pin_table(r, s, i, err)) == BFH_OK) rc = table_id(r, s, i, err);
    if (rc == BFH_NOT_FOUND) rc = table_gone(r, s->tables[i].number, err);
  }
  if (rc != BFH_OK) {
    ro_state_unref(s);
    return rc;
  }
  r->missing = 0;
  r->recheck = 0;
  for (size_t i = 0; i < r->nlogs; i++)
    for (size_t j = 0; j < r->logs[i].n; j++) {
      chunk_t *c = r->logs[i].chunks[j];
      atomic_fetch_add(&c->refs, 1);
      s->segs[s->nchunks] = c->vals;
      s->chunks[s->nchunks++] = c;
    }
  *out = s;
  return BFH_OK;
}

/* A table read's status: a file gone is the version changing under the search. */
int ro_table_status(engine_ro_t *r, int rc, uint64_t number, err_t *err) {
  return stock_ro_table_status(&r->stale, r->path, rc, number, err);
}

void engine_leveldb_ro_set_pin_max(engine_t *e, uint64_t n) {
  engine_ro_t *r = (engine_ro_t *)e;
  pthread_mutex_lock(&r->mu);
  r->pin_max = n;
  r->version_changed = 1; /* the next refresh makes a new state, pinned anew */
  atomic_store(&r->stale, 1);
  pthread_mutex_unlock(&r->mu);
}

uint64_t engine_leveldb_ro_pinned(engine_t *e) {
  return atomic_load(&((engine_ro_t *)e)->pinned);
}

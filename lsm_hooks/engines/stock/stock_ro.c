/* The read-only stock engines' open and close, views and scans, gets and iterators over the
   format interface (stock_ro.h). */
#include "lsm_hooks/engines/stock/stock_ro.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "util/path.h"

int stock_ro_table_path(const stock_ro_t *r, uint64_t number, char **path, err_t *err) {
  return stock_table_path(r->path, number, r->fmt->table_ext[0], r->fmt->table_ext[1], path, err);
}

int stock_ro_status(stock_ro_t *r, int rc, uint64_t number, err_t *err) {
  return stock_ro_table_status(&r->stale, r->path, rc, number, err);
}

void stock_ro_reading(stock_ro_t *r, uint64_t number) {
  if (r->read_hook) r->read_hook(r->read_hook_arg, number);
}

/* ---- Open and close ------------------------------------------------------------------------ */

int stock_ro_close(engine_t *e, err_t *err) {
  (void)err;
  stock_ro_t *r = (stock_ro_t *)e;
  if (!r) return BFH_OK;
  if (r->fmt->closing) r->fmt->closing(r); /* before the loader stops: it may wait for leaves */
  if (r->sync) index_sync_loader_stop(r->sync); /* it reads through r */
  if (r->sync && r->cache_dir) index_sync_close_caches(r->sync);
  stock_ro_state_unref(r->state);
  dir_watch_release(&r->watch);
  for (size_t i = 0; i < r->nlogs; i++) stock_ro_log_release(&r->logs[i]);
  free(r->logs);
  env_rfile_close(r->manifest_file);
  r->fmt->version_forget(r);
  r->fmt->release(r);
  pthread_mutex_destroy(&r->mu);
  pthread_mutex_destroy(&r->state_mu);
  free(r->path);
  free(r->cache_dir);
  free(r->index_dir);
  free(r);
  return BFH_OK;
}

/* The filter cache in the index directory (or none), as index_sync's source. */
static int source_init(stock_ro_t *r, const char *index_dir, err_t *err) {
  if (index_dir && !(r->index_dir = strdup(index_dir)))
    return err_set(err, BFH_E_NOMEM, "%s: no memory", r->path);
  index_source_t src = r->fmt->source;
  src.ctx = r;
  src.io = r->io;
  return stock_ro_cache_init(r->sync, r->path, index_dir, src, &r->cache_dir, err);
}

int stock_ro_open(const stock_ro_format_t *fmt, const engine_ops_t *ops, const char *path,
                  const bfh_options *opt, env_t *io, index_sync_t *sync, engine_t **out,
                  err_t *err) {
  /* (That the index directory lies outside path bfh_open checked before any engine's open.) */
  int rc = stock_ro_check_directory(path, fmt->dir_kind, fmt->name, err);
  if (rc != BFH_OK) return rc;
  stock_ro_t *r = calloc(1, fmt->engine_bytes);
  if (!r) return err_set(err, BFH_E_NOMEM, "%s: no memory", path);
  r->base.ops = ops;
  r->fmt = fmt;
  r->io = io ? io : env_default();
  r->sync = sync;
  r->pin_max = stock_ro_pin_max();
  pthread_mutex_init(&r->mu, NULL);
  pthread_mutex_init(&r->state_mu, NULL);
  r->watch.fd = -1;
  atomic_init(&r->stale, 1);
  if (!(r->path = strdup(path))) rc = err_set(err, BFH_E_NOMEM, "%s: no memory", path);
  /* Before the first refresh (dir_watch.h's rule). Only over the real file system: a test's
     I/O layer may change what a read sees without the kernel knowing. */
  if (rc == BFH_OK && r->io == env_default())
    (void)dir_watch_init(&r->watch, r->path, DIR_WATCH_CONTENTS);
  if (rc == BFH_OK && opt->index_dir) rc = stock_make_dirs(opt->index_dir, err);
  if (rc == BFH_OK && sync) rc = source_init(r, opt->index_dir, err);
  if (rc == BFH_OK && fmt->init) rc = fmt->init(r, opt, err);
  if (rc == BFH_OK) {
    pthread_mutex_lock(&r->mu);
    rc = stock_ro_refresh_state(r, err);
    /* The live tables are indexed in the open (stock_ro_view_load), so that the first search is
       planned over their filters: planned before, it would find none and read every table
       (doc/search.md "Open cost"). */
    if (rc == BFH_OK && r->sync) rc = stock_ro_index_state(r, r->state, NULL, err);
    pthread_mutex_unlock(&r->mu);
  }
  if (rc == BFH_OK && r->cache_dir)
    stock_ro_cache_clean(r->io, r->cache_dir, r->state->tables, r->state->ntables);
  if (rc == BFH_OK && r->sync && r->fmt->opened) r->fmt->opened(r);
  if (rc == BFH_OK && r->sync) {
    err_t e2; /* a failure here is the first view's to report: it tries again */
    (void)stock_ro_view_load(r->sync, 1, &e2);
  }
  if (rc != BFH_OK) {
    stock_ro_close(&r->base, NULL);
    return rc;
  }
  *out = &r->base;
  return BFH_OK;
}

/* Nothing written: only the logs' value indexes. */
void stock_ro_stats(engine_t *e, bfh_db_stats *st) {
  stock_ro_t *r = (stock_ro_t *)e;
  pthread_mutex_lock(&r->mu);
  for (size_t i = 0; i < r->nlogs; i++)
    for (size_t j = 0; j < r->logs[i].n; j++)
      st->memtable_index_bytes += stock_segs_index_bytes(&r->logs[i].chunks[j]->vals, 1);
  pthread_mutex_unlock(&r->mu);
}

void stock_ro_retried(engine_t *e) {
  atomic_fetch_add(&((stock_ro_t *)e)->retries, 1);
}

/* ---- Views and the scans of a search ------------------------------------------------------- */

int stock_ro_view_acquire(engine_t *e, engine_view_t **view, err_t *err) {
  stock_ro_t *r = (stock_ro_t *)e;
  engine_view_t *v = calloc(1, sizeof *v);
  if (!v) return err_set(err, BFH_E_NOMEM, "%s: no memory for a view", r->path);
  v->seed = stock_value_seed(r->sync);
  pthread_mutex_lock(&r->mu);
  int rc = stock_ro_refresh_state(r, err);
  if (rc == BFH_OK) {
    v->held = r->state;
    atomic_fetch_add(&r->state->refs, 1);
    /* Listed under mu, so that index_sync sees the versions in order. */
    if (r->sync) rc = stock_ro_index_state(r, r->state, &v->epoch, err);
  }
  pthread_mutex_unlock(&r->mu);
  /* New tables (the open's, or made since) get their filters now. */
  if (rc == BFH_OK && r->sync) rc = stock_ro_view_load(r->sync, 0, err);
  if (rc != BFH_OK) {
    if (v->epoch) index_sync_view_unpin(r->sync, v->epoch);
    stock_ro_state_unref(v->held);
    free(v);
    return rc;
  }
  stock_ro_state_t *s = v->held;
  v->tables = s->tables;
  v->ntables = s->ntables;
  v->segs = s->segs;
  v->nsegs = s->nchunks;
  *view = v;
  return BFH_OK;
}

void stock_ro_view_release(engine_t *e, engine_view_t *v) {
  stock_ro_t *r = (stock_ro_t *)e;
  if (!v) return;
  if (r->sync && v->epoch) index_sync_view_unpin(r->sync, v->epoch);
  stock_ro_state_unref(v->held);
  free(v);
}

/* A table of the view read for m: through its pin, else by name (a file gone: BFH_E_BUSY, the
   search starts over from a new view). */
static int read_table(stock_ro_t *r, engine_view_t *v, uint64_t number, const block_ref_t *refs,
                      size_t n, const stock_match_t *m, engine_scan_stats_t *st, err_t *err) {
  if (!engine_tables_contain(v->tables, v->ntables, number)) return BFH_OK;
  stock_ro_reading(r, number);
  stock_pin_t *p = stock_ro_state_pin(v->held, number);
  int rc = r->fmt->table_match(r, p, number, refs, n, m, st, err);
  return p ? rc : stock_ro_status(r, rc, number, err);
}

int stock_ro_scan_table(engine_t *e, engine_view_t *v, uint64_t number, const void *val,
                        size_t val_len, engine_match_fn fn, void *arg, engine_scan_stats_t *st,
                        err_t *err) {
  stock_match_t m = {val, val_len, fn, arg};
  return read_table((stock_ro_t *)e, v, number, NULL, 0, &m, st, err);
}

int stock_ro_scan_blocks(engine_t *e, engine_view_t *v, uint64_t number, const block_ref_t *refs,
                         size_t n, const void *val, size_t val_len, engine_match_fn fn, void *arg,
                         engine_scan_stats_t *st, err_t *err) {
  stock_match_t m = {val, val_len, fn, arg};
  return read_table((stock_ro_t *)e, v, number, refs, n, &m, st, err);
}

/* ---- Gets and iterators -------------------------------------------------------------------- */

int stock_ro_get(engine_t *e, engine_view_t *view, const void *key, size_t key_len, void **val,
                 size_t *val_len,
                 int (*get_state)(stock_ro_t *r, const stock_ro_state_t *s, const void *key,
                                  size_t key_len, void **val, size_t *val_len, err_t *err),
                 err_t *err) {
  stock_ro_t *r = (stock_ro_t *)e;
  if (view) /* a search validating its candidates: its own state */
    return get_state(r, view->held, key, key_len, val, val_len, err);
  int rc = BFH_E_BUSY;
  for (int attempt = 0; attempt < STOCK_RO_ATTEMPTS && rc == BFH_E_BUSY; attempt++) {
    stock_ro_state_t *s;
    rc = stock_ro_current_state(r, &s, err);
    if (rc != BFH_OK) return rc;
    rc = get_state(r, s, key, key_len, val, val_len, err);
    stock_ro_state_unref(s);
  }
  return rc;
}

int stock_ro_iter_create(engine_t *e, engine_iter_t **it,
                         int (*gather)(stock_ro_t *r, const stock_ro_state_t *s,
                                       stock_sorted_t *sorted, err_t *err),
                         err_t *err) {
  stock_ro_t *r = (stock_ro_t *)e;
  int rc = BFH_E_BUSY;
  for (int attempt = 0; attempt < STOCK_RO_ATTEMPTS && rc == BFH_E_BUSY; attempt++) {
    if (attempt) atomic_fetch_add(&r->retries, 1);
    stock_ro_state_t *s;
    rc = stock_ro_current_state(r, &s, err);
    if (rc != BFH_OK) return rc;
    stock_sorted_t *sorted = stock_sorted_create();
    if (!sorted) rc = err_set(err, BFH_E_NOMEM, "%s: iterator: no memory", r->path);
    if (rc == BFH_OK) rc = gather(r, s, sorted, err);
    stock_ro_state_unref(s);
    if (rc == BFH_OK) return stock_sorted_finish(sorted, it, err);
    stock_sorted_destroy(sorted);
  }
  if (rc == BFH_E_BUSY)
    err_prefix(err, "iterator gave up after %d attempts (the database changed under each): ",
               STOCK_RO_ATTEMPTS);
  return rc;
}

/* ---- Counters and hooks (tests) ------------------------------------------------------------ */

uint64_t stock_ro_retries(engine_t *e) {
  return atomic_load(&((stock_ro_t *)e)->retries);
}

uint64_t stock_ro_refreshes(engine_t *e) {
  return atomic_load(&((stock_ro_t *)e)->refreshes);
}

uint64_t stock_ro_log_bytes(engine_t *e) {
  return atomic_load(&((stock_ro_t *)e)->log_bytes);
}

uint64_t stock_ro_pinned(engine_t *e) {
  return atomic_load(&((stock_ro_t *)e)->pinned);
}

void stock_ro_set_pin_max(engine_t *e, uint64_t n) {
  stock_ro_t *r = (stock_ro_t *)e;
  pthread_mutex_lock(&r->mu);
  r->pin_max = n;
  r->version_changed = 1; /* the next refresh makes a new state, pinned anew */
  atomic_store(&r->stale, 1);
  pthread_mutex_unlock(&r->mu);
}

void stock_ro_set_read_hook(engine_t *e, void (*fn)(void *arg, uint64_t number), void *arg) {
  stock_ro_t *r = (stock_ro_t *)e;
  r->read_hook = fn;
  r->read_hook_arg = arg;
}

void stock_ro_set_logs_hook(engine_t *e, void (*fn)(void *arg), void *arg) {
  stock_ro_t *r = (stock_ro_t *)e;
  pthread_mutex_lock(&r->mu);
  r->logs_hook = fn;
  r->logs_hook_arg = arg;
  pthread_mutex_unlock(&r->mu);
}

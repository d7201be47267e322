/* The read-only stock engines' open and close, views and scans, gets and iterators over the
   format interface (stock_ro.h). */
#include "lsm_hooks/engines/stock/stock_ro.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "lsm_hooks/engines/engine_detect.h"

int stock_ro_table_path(const stock_ro_t *r, uint64_t number, char **path, err_t *err) {
  return stock_table_path(r->path, number, r->fmt->table_ext[0], r->fmt->table_ext[1], path, err);
}

int stock_ro_status(stock_ro_t *r, int rc, uint64_t number, err_t *err) {
  if (rc != BFH_NOT_FOUND) return rc;
  atomic_store(&r->stale, 1); /* unlink(2) takes the name before it queues the event */
  return err_set(err, BFH_E_BUSY, "%s: table %06llu vanished while read (the owner compacted it)",
                 r->path, (unsigned long long)number);
}

/* The read hook (tests), before a read of table `number`. */
static void reading(stock_ro_t *r, uint64_t number) {
  if (r->read_hook) r->read_hook(r->read_hook_arg, number);
}

/* ---- Open and close ------------------------------------------------------------------------ */

int stock_ro_close(engine_t *e, err_t *err) {
  (void)err;
  stock_ro_t *r = (stock_ro_t *)e;
  if (!r) return BFH_OK;
  stock_ro_persisted_close(r); /* before the loader stops: it may wait for leaves */
  if (r->sync) index_sync_loader_stop(r->sync); /* it reads through r */
  if (r->sync && r->cache_dir) index_sync_close_caches(r->sync);
  stock_ro_state_unref(r->state);
  dir_watch_release(&r->watch);
  stock_ro_forget_logs(r);
  env_rfile_close(r->manifest_file);
  r->fmt->version_forget(r);
  if (r->fmt->release) r->fmt->release(r);
  free(r->bound);
  pthread_mutex_destroy(&r->mu);
  pthread_mutex_destroy(&r->state_mu);
  free(r->path);
  free(r->cache_dir);
  free(r->index_dir);
  free(r);
  return BFH_OK;
}

/* mkdir -p dir. */
static int make_dirs(const char *dir, err_t *err) {
  char *p = strdup(dir);
  if (!p) return err_set(err, BFH_E_NOMEM, "%s: no memory for its path", dir);
  int rc = BFH_OK;
  for (char *q = p + 1; rc == BFH_OK; q++) {
    if (*q != '/' && *q != '\0') continue;
    char c = *q;
    *q = '\0';
    rc = env_mkdir(env_default(), p, err); /* an existing directory is BFH_OK */
    if (!(*q = c)) break;
  }
  free(p);
  return rc;
}

/* path must hold a database of the format's kind with a CURRENT file: BFH_E_INVALID otherwise
   (a read-only open creates none). */
static int check_directory(const char *path, const stock_ro_format_t *fmt, err_t *err) {
  int rc = engine_detect_check(path, fmt->dir_kind, err);
  if (rc != BFH_OK) return rc;
  int exists = 0;
  if ((rc = stock_file_exists(env_default(), path, "CURRENT", &exists, err)) != BFH_OK) return rc;
  if (!exists)
    return err_set(err, BFH_E_INVALID,
                   "%s: not a %s database (no CURRENT file); a read-only open creates none", path,
                   fmt->name);
  return BFH_OK;
}

/* How many table files to hold open at most: half of the descriptors the process may open
   (the rest stay for everything else). */
static unsigned long long pin_max(void) {
  struct rlimit rl;
  return getrlimit(RLIMIT_NOFILE, &rl) != 0 ? 256
         : rl.rlim_cur == RLIM_INFINITY     ? 1u << 20
                                            : (unsigned long long)rl.rlim_cur / 2;
}

/* The filter cache, <index_dir>/bfh-filters/ (index_dir made before), or none (index_dir NULL:
   memory only), as the index's source (no delay: a reader is not told when a table dies young,
   and the cache is its own). */
static int source_init(stock_ro_t *r, const char *index_dir, err_t *err) {
  index_source_t src = r->fmt->source;
  src.ctx = r;
  src.io = r->io;
  src.cache_delay_ns = 0;
  if (!index_dir) return index_sync_set_source(r->sync, &src, err);
  if (!(r->index_dir = strdup(index_dir)))
    return err_set(err, BFH_E_NOMEM, "%s: no memory", r->path);
  return stock_cache_init(r->sync, r->io, index_dir, src, &r->cache_dir, err);
}

/* The filter cache keeps the files of the tables of the first state (stock_cache_clean). */
static int cache_keeps(void *arg, uint64_t number) {
  const stock_ro_state_t *s = arg;
  return engine_tables_contain(s->tables, s->ntables, number);
}

/* Gives the tables listed to the index and not indexed yet their filters. At open (at_open),
   and while the open's loader runs (index_sync.h "Loading at open"): their block filters now
   (read with their leaves from the filter cache, or from the tables), their leaves by the
   background loader. Otherwise, or without block filters: their leaves now, as a view always
   did. */
static int view_load(index_sync_t *sync, int at_open, err_t *err) {
  /* After the open's loading, as before it: a view indexes the tables made since itself. */
  if (!index_sync_params(sync)->block_bits || (!at_open && !index_sync_loader_active(sync)))
    return index_sync_run(sync, INDEX_RUN_ALL, 0, err);
  if (!index_sync_pending(sync, 0)) return BFH_OK;
  int rc = index_sync_load_blocks(sync, err);
  if (rc == BFH_OK) rc = index_sync_loader_start(sync, err);
  return rc;
}

static int read_only(engine_t *e, const char *op, err_t *err) {
  return err_set(err, BFH_E_UNSUPPORTED, "%s: %s: read-only handle", ((stock_ro_t *)e)->path, op);
}

int stock_ro_put(engine_t *e, const void *key, size_t key_len, const void *val, size_t val_len,
                 err_t *err) {
  (void)key, (void)key_len, (void)val, (void)val_len;
  return read_only(e, "put", err);
}

int stock_ro_del(engine_t *e, const void *key, size_t key_len, err_t *err) {
  (void)key, (void)key_len;
  return read_only(e, "delete", err);
}

int stock_ro_flush(engine_t *e, err_t *err) {
  return read_only(e, "flush", err);
}

int stock_ro_open(const stock_ro_format_t *fmt, const engine_ops_t *ops, const char *path,
                  const bfh_options *opt, env_t *io, index_sync_t *sync, engine_t **out,
                  err_t *err) {
  /* (That the index directory lies outside path bfh_open checked before any engine's open.) */
  int rc = check_directory(path, fmt, err);
  if (rc != BFH_OK) return rc;
  stock_ro_t *r = calloc(1, fmt->engine_bytes);
  if (!r) return err_set(err, BFH_E_NOMEM, "%s: no memory", path);
  r->base.ops = ops;
  r->fmt = fmt;
  r->io = io ? io : env_default();
  r->sync = sync;
  r->pin_max = pin_max();
  pthread_mutex_init(&r->mu, NULL);
  pthread_mutex_init(&r->state_mu, NULL);
  r->watch.fd = -1;
  atomic_init(&r->stale, 1);
  if (!(r->path = strdup(path))) rc = err_set(err, BFH_E_NOMEM, "%s: no memory", path);
  /* Before the first refresh (dir_watch.h's rule). Only over the real file system: a test's
     I/O layer may change what a read sees without the kernel knowing. */
  if (rc == BFH_OK && r->io == env_default())
    (void)dir_watch_init(&r->watch, r->path, DIR_WATCH_CONTENTS);
  if (rc == BFH_OK && opt->index_dir) rc = make_dirs(opt->index_dir, err);
  if (rc == BFH_OK && sync) rc = source_init(r, opt->index_dir, err);
  if (rc == BFH_OK && fmt->init) rc = fmt->init(r, opt, err);
  if (rc == BFH_OK) {
    pthread_mutex_lock(&r->mu);
    rc = stock_ro_refresh_state(r, err);
    /* The live tables are indexed in the open (view_load), so that the first search is
       planned over their filters: planned before, it would find none and read every table
       (doc/search.md "Open cost"). */
    const stock_ro_state_t *s = r->state;
    if (rc == BFH_OK)
      rc = stock_report_tables(r->sync, r->path, s->tables, s->ids, s->ntables, NULL, err);
    pthread_mutex_unlock(&r->mu);
  }
  if (rc == BFH_OK && r->cache_dir)
    stock_cache_clean(r->io, r->cache_dir, 0, cache_keeps, r->state);
  if (rc == BFH_OK && r->sync) {
    stock_ro_persisted_open(r);
    err_t e2; /* a failure here is the first view's to report: it tries again */
    (void)view_load(r->sync, 1, &e2);
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

void stock_ro_view_release(engine_t *e, engine_view_t *v) {
  stock_ro_t *r = (stock_ro_t *)e;
  if (!v) return;
  if (r->sync && v->epoch) index_sync_view_unpin(r->sync, v->epoch);
  stock_ro_state_unref(v->held);
  free(v);
}

int stock_ro_view_acquire(engine_t *e, engine_view_t **view, err_t *err) {
  stock_ro_t *r = (stock_ro_t *)e;
  engine_view_t *v = calloc(1, sizeof *v);
  if (!v) return err_set(err, BFH_E_NOMEM, "%s: no memory for a view", r->path);
  pthread_mutex_lock(&r->mu);
  int rc = stock_ro_refresh_state(r, err);
  if (rc == BFH_OK) {
    stock_ro_state_t *s = r->state;
    atomic_fetch_add(&s->refs, 1);
    *v = (engine_view_t){.tables = s->tables,
                         .ntables = s->ntables,
                         .segs = s->segs,
                         .nsegs = s->nchunks,
                         .seed = stock_value_seed(r->sync),
                         .held = s};
    /* Listed under mu, so that index_sync sees the versions in order. */
    rc = stock_report_tables(r->sync, r->path, s->tables, s->ids, s->ntables, &v->epoch, err);
  }
  pthread_mutex_unlock(&r->mu);
  /* New tables (the open's, or made since) get their filters now. */
  if (rc == BFH_OK && r->sync) rc = view_load(r->sync, 0, err);
  if (rc != BFH_OK) {
    stock_ro_view_release(e, v);
    return rc;
  }
  *view = v;
  return BFH_OK;
}

/* A table of the view read: through its pin, else by name (a file gone: BFH_E_BUSY, the search
   starts over from a new view). */
int stock_ro_scan_blocks(engine_t *e, engine_view_t *v, uint64_t number, const block_ref_t *refs,
                         size_t n, const engine_value_test_t *test, engine_match_fn fn, void *arg,
                         engine_scan_stats_t *st, err_t *err) {
  stock_ro_t *r = (stock_ro_t *)e;
  if (!engine_tables_contain(v->tables, v->ntables, number)) return BFH_OK;
  reading(r, number);
  stock_pin_t *p = stock_ro_state_pin(v->held, number);
  stock_match_t m = {test, fn, arg};
  int rc = r->fmt->table_match(r, p, number, refs, n, &m, st, err);
  return p ? rc : stock_ro_status(r, rc, number, err);
}

/* ---- Gets and iterators -------------------------------------------------------------------- */

int stock_lookup_set(stock_lookup_t *l, int is_value, uint64_t seq, const void *val, size_t len) {
  l->found = 1;
  l->is_value = is_value;
  l->seq = seq;
  l->val = malloc(len ? len : 1);
  if (!l->val) return l->nomem = 1;
  if (len) memcpy(l->val, val, len);
  l->val_len = len;
  return 0;
}

int stock_ro_table_holds(const stock_ro_table_t *t, const void *key, size_t key_len) {
  return stock_key_cmp(t->lo, t->lo_len, key, key_len) <= 0 &&
         stock_key_cmp(key, key_len, t->hi, t->hi_len) <= 0;
}

int stock_ro_table_read(stock_ro_t *r, const stock_ro_state_t *s, const stock_ro_table_t *t,
                        stock_ro_table_fn fn, void *arg, err_t *err) {
  reading(r, t->t.number);
  stock_pin_t *p = stock_ro_state_pin(s, t->t.number);
  if (p) return fn(r, t, p, p->path, arg, err);
  char *path;
  int rc = stock_ro_table_path(r, t->t.number, &path, err);
  if (rc != BFH_OK) return rc;
  rc = stock_ro_status(r, fn(r, t, NULL, path, arg, err), t->t.number, err);
  free(path);
  return rc;
}

/* A get in the tables of s that may hold l->key, in lookup order, until it is found. */
static int get_tables(stock_ro_t *r, const stock_ro_state_t *s, stock_lookup_t *l, err_t *err) {
  int rc = BFH_OK;
  for (size_t i = 0; i < s->ntables && rc == BFH_OK && !l->found; i++)
    if (stock_ro_table_holds(&s->order[i], l->key, l->key_len))
      rc = stock_ro_table_read(r, s, &s->order[i], r->fmt->table_get, l, err);
  return rc;
}

/* A get in state s. */
static int state_get(stock_ro_t *r, const stock_ro_state_t *s, const void *key, size_t key_len,
                     void **val, size_t *val_len, err_t *err) {
  stock_lookup_t l = {.key = key, .key_len = key_len};
  for (size_t i = 0; i < s->nchunks; i++) { /* the memtables' tombstones come first */
    uint64_t cover = stock_tombs_max(s->chunks[i]->tombs, key, key_len);
    if (cover > l.cover) l.cover = cover;
  }
  for (size_t i = s->nchunks; i-- > 0 && !l.found;) {
    const uint8_t *v;
    uint32_t vl;
    int is_value;
    uint64_t seq;
    if (stock_chunk_find(s->chunks[i], key, key_len, &is_value, &seq, &v, &vl))
      (void)stock_lookup_set(&l, is_value, seq, v, vl);
  }
  int rc = l.found ? BFH_OK : get_tables(r, s, &l, err);
  if (rc == BFH_OK && l.nomem) rc = err_set(err, BFH_E_NOMEM, "%s: get: no memory", r->path);
  if (rc == BFH_OK && l.found && l.cover > l.seq) l.is_value = 0; /* range-deleted */
  if (rc != BFH_OK || !l.found || !l.is_value) {
    free(l.val);
    return rc != BFH_OK ? rc : BFH_NOT_FOUND;
  }
  *val = l.val;
  *val_len = l.val_len;
  return BFH_OK;
}

int stock_ro_get(engine_t *e, engine_view_t *view, const void *key, size_t key_len, void **val,
                 size_t *val_len, err_t *err) {
  stock_ro_t *r = (stock_ro_t *)e;
  if (view) /* a search validating its candidates: its own state */
    return state_get(r, view->held, key, key_len, val, val_len, err);
  int rc = BFH_E_BUSY;
  for (int attempt = 0; attempt < STOCK_RO_ATTEMPTS && rc == BFH_E_BUSY; attempt++) {
    stock_ro_state_t *s;
    rc = stock_ro_current_state(r, &s, err);
    if (rc != BFH_OK) return rc;
    rc = state_get(r, s, key, key_len, val, val_len, err);
    stock_ro_state_unref(s);
  }
  return rc;
}

int stock_ro_iter_create(engine_t *e, engine_iter_t **it, err_t *err) {
  stock_ro_t *r = (stock_ro_t *)e;
  int rc = BFH_E_BUSY;
  for (int attempt = 0; attempt < STOCK_RO_ATTEMPTS && rc == BFH_E_BUSY; attempt++) {
    if (attempt) atomic_fetch_add(&r->retries, 1);
    stock_ro_state_t *s;
    rc = stock_ro_current_state(r, &s, err);
    if (rc != BFH_OK) return rc;
    stock_sorted_t *sorted = stock_sorted_create();
    if (!sorted) rc = err_set(err, BFH_E_NOMEM, "%s: iterator: no memory", r->path);
    if (rc == BFH_OK) rc = r->fmt->gather(r, s, sorted, err);
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

stock_ro_counts_t stock_ro_counts(engine_t *e) {
  stock_ro_t *r = (stock_ro_t *)e;
  return (stock_ro_counts_t){atomic_load(&r->retries), atomic_load(&r->refreshes),
                             atomic_load(&r->log_bytes), atomic_load(&r->pinned)};
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

/* The read-write stock engines' core (stock_rw.h). */
#include "lsm_hooks/engines/stock/stock_rw.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lsm/block.h" /* BLOCK_TRAILER_BYTES: LevelDB's and RocksDB's trailer too */
#include "lsm_hooks/engines/engine_detect.h"

/* ---- The background indexer ----------------------------------------------------------------- */

static void *indexer_main(void *arg) {
  stock_indexer_t *x = arg;
  pthread_mutex_lock(&x->mu);
  while (!x->stop) {
    if (!x->kicked) {
      struct timespec ts;
      clock_gettime(CLOCK_MONOTONIC, &ts);
      uint64_t t = (uint64_t)ts.tv_nsec + x->period_ns;
      ts.tv_sec += (time_t)(t / 1000000000ull);
      ts.tv_nsec = (long)(t % 1000000000ull);
      pthread_cond_timedwait(&x->cv, &x->mu, &ts);
    }
    if (x->stop) break;
    x->kicked = 0;
    pthread_mutex_unlock(&x->mu);
    x->tick(x->arg);
    pthread_mutex_lock(&x->mu);
  }
  pthread_mutex_unlock(&x->mu);
  return NULL;
}

/* Starts x's thread. BFH_E_IO naming path when it cannot. */
static int indexer_start(stock_indexer_t *x, uint64_t period_ns, void (*tick)(void *arg), void *arg,
                         const char *path, err_t *err) {
  *x = (stock_indexer_t){.period_ns = period_ns, .tick = tick, .arg = arg};
  pthread_mutex_init(&x->mu, NULL);
  pthread_condattr_t ca;
  pthread_condattr_init(&ca);
  pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
  pthread_cond_init(&x->cv, &ca);
  pthread_condattr_destroy(&ca);
  x->started = pthread_create(&x->thread, NULL, indexer_main, x) == 0;
  if (x->started) return BFH_OK;
  pthread_mutex_destroy(&x->mu);
  pthread_cond_destroy(&x->cv);
  return err_set(err, BFH_E_IO, "%s: cannot start the indexing thread", path);
}

/* Has x's thread tick now (after the tick it runs, if any); nothing if it is not running. */
static void indexer_kick(stock_indexer_t *x) {
  if (!x->started) return;
  pthread_mutex_lock(&x->mu);
  x->kicked = 1;
  pthread_cond_signal(&x->cv);
  pthread_mutex_unlock(&x->mu);
}

/* Stops x's thread and waits for it (nothing if it is not running). */
static void indexer_stop(stock_indexer_t *x) {
  if (!x->started) return;
  pthread_mutex_lock(&x->mu);
  x->stop = 1;
  pthread_cond_signal(&x->cv);
  pthread_mutex_unlock(&x->mu);
  pthread_join(x->thread, NULL);
  pthread_mutex_destroy(&x->mu);
  pthread_cond_destroy(&x->cv);
  x->started = 0;
}

/* ---- Opening and closing ---------------------------------------------------------------- */

int stock_rw_check_dir(env_t *io, const char *path, int create, int *exists, err_t *err) {
  env_path_type_t type;
  *exists = 0;
  int rc = env_path_kind(io, path, &type, err);
  if (rc == BFH_NOT_FOUND) {
    if (!create)
      return err_set(err, BFH_E_INVALID, "%s: does not exist (create_if_missing is off)", path);
    return BFH_OK;
  }
  if (rc != BFH_OK) return rc;
  if (type != ENV_PATH_DIR) return err_set(err, BFH_E_INVALID, "%s: not a directory", path);
  *exists = 1;
  return BFH_OK;
}

/* ---- Table files held open ------------------------------------------------------------------ */

int stock_file_open(size_t size, env_t *io, char *path, stock_file_t **out, err_t *err) {
  *out = NULL;
  stock_file_t *f = calloc(1, size);
  if (!f) {
    err_set(err, BFH_E_NOMEM, "table %s: no memory to open it", path);
    free(path);
    return BFH_E_NOMEM;
  }
  f->path = path;
  int rc = env_open_read(io, path, &f->f, err);
  if (rc != BFH_OK && rc != BFH_E_NOMEM && !env_exists(io, path))
    rc = err_set(err, BFH_NOT_FOUND, "table %s: no such file", path);
  if (rc != BFH_OK) {
    free(path);
    free(f);
    return rc;
  }
  atomic_init(&f->refs, 1);
  *out = f;
  return BFH_OK;
}

void stock_file_free(stock_file_t *f) {
  env_rfile_close(f->f);
  free(f->path);
  free(f);
}

static void file_unref(const stock_rw_t *s, stock_file_t *f) {
  if (f && atomic_fetch_sub(&f->refs, 1) == 1) s->fmt->file_free(f);
}

/* Table `number`'s file, open, with a reference for the caller (file_unref after): the one
   held, else opened now and held if there is room. BFH_NOT_FOUND when the file is gone. */
static int file_get(stock_rw_t *s, uint64_t number, stock_file_t **out, err_t *err) {
  uint64_t v;
  pthread_mutex_lock(&s->files_mu);
  if (u64_map_get(&s->files, number, &v)) {
    *out = (stock_file_t *)(uintptr_t)v;
    atomic_fetch_add(&(*out)->refs, 1);
    pthread_mutex_unlock(&s->files_mu);
    return BFH_OK;
  }
  pthread_mutex_unlock(&s->files_mu);
  stock_file_t *f = NULL;
  int rc = s->fmt->file_open(s->io, s->path, number, &f, err); /* outside the lock: I/O */
  if (rc != BFH_OK) return rc;
  pthread_mutex_lock(&s->files_mu);
  if (u64_map_get(&s->files, number, &v)) { /* another search opened it meanwhile */
    file_unref(s, f);
    f = (stock_file_t *)(uintptr_t)v;
    atomic_fetch_add(&f->refs, 1);
  } else if (s->files.n < s->files_max &&
             u64_map_put(&s->files, number, (uint64_t)(uintptr_t)f) == ST_OK) {
    atomic_fetch_add(&f->refs, 1); /* the map's */
  }
  pthread_mutex_unlock(&s->files_mu);
  *out = f;
  return BFH_OK;
}

/* Closes the held files of tables not among t[0, n) (sorted by number; all when n is 0 and t
   NULL): a file a search still reads closes when it is done. */
static void files_sweep(stock_rw_t *s, const engine_table_t *t, size_t n) {
  pthread_mutex_lock(&s->files_mu);
  size_t pos = 0, ndead = 0;
  uint64_t key, val, dead[64];
  while (ndead < 64 && u64_map_next(&s->files, &pos, &key, &val))
    if (!t || !engine_tables_contain(t, n, key)) dead[ndead++] = key;
  for (size_t i = 0; i < ndead; i++)
    if (u64_map_del(&s->files, dead[i], &val)) file_unref(s, (stock_file_t *)(uintptr_t)val);
  const int more = ndead == 64;
  pthread_mutex_unlock(&s->files_mu);
  if (more) files_sweep(s, t, n); /* the map changed: its walk starts over */
}

/* The open's first steps, before the library is called: s's fields set, its mutex and
   indexer made, path copied, the directory made when create, bfh's lock taken. On failure
   the caller still closes. */
static int begin(stock_rw_t *s, const stock_rw_format_t *fmt, const char *path, int create,
                 env_t *io, index_sync_t *sync, err_t *err) {
  s->base.ops = fmt->ops;
  s->fmt = fmt;
  s->io = io ? io : env_default();
  s->sync = sync;
  pthread_mutex_init(&s->sync_mu, NULL);
  pthread_mutex_init(&s->files_mu, NULL);
  u64_map_init(&s->files);
  s->files_max = env_fd_share(); /* the library holds its own */
  fmt->init(s);
  s->path = strdup(path);
  if (!s->path) return err_set(err, BFH_E_NOMEM, "%s: no memory", path);
  int rc = create ? env_mkdir(s->io, path, err) : BFH_OK;
  if (rc == BFH_OK && (rc = env_lock_dir(s->io, path, &s->dir_lock, err)) == BFH_E_BUSY)
    err_set(err, BFH_E_BUSY, "%s: database is open in another process or handle", path);
  /* A FIFO in place of a file the library opens would make it wait forever. */
  if (rc == BFH_OK) rc = engine_detect_special_files(path, err);
  return rc;
}

static int read_leaf(void *ctx, uint64_t number, const value_index_params_t *p,
                     index_leaf_read_t *out, err_t *err) {
  stock_rw_t *s = ctx;
  if (!s->fmt->block_maps) out->want_map = 0;
  return s->fmt->leaf_read(s->io, s->path, number, p, out, err);
}

static int table_tag(void *ctx, uint64_t number, uint64_t *tag, err_t *err) {
  stock_rw_t *s = ctx;
  return s->fmt->table_tag(s->io, s->path, number, tag, err);
}

/* Sets sync's source to the format's readers and creates the filter cache directory
   <db>/bfh-filters/ (stock_cache_init). BFH_OK at once without sync. */
static int source_init(stock_rw_t *s, err_t *err) {
  if (!s->sync) return BFH_OK;
  index_source_t src = {.read_leaf = read_leaf,
                        .ctx = s,
                        .table_tag = table_tag,
                        .cache_delay_ns = s->fmt->cache_delay_ns,
                        .io = s->io};
  return stock_cache_init(s->sync, s->io, s->path, src, &s->cache_dir, err);
}

/* The filter cache keeps the files of the tables with a leaf (stock_cache_clean). */
static int cache_keeps(void *arg, uint64_t number) {
  index_leaf_source_t s = index_sync_leaf_source(arg, number);
  return s == INDEX_LEAF_CACHED || s == INDEX_LEAF_READ;
}

static void bg_tick(void *arg) {
  stock_rw_t *s = arg;
  if (s->fmt->tick) s->fmt->tick(s);
  err_t err;
  stock_rw_sync(s, STOCK_SYNC_BG, NULL, &err); /* a failure is seen (and reported) by a search */
}

int stock_rw_open(const stock_rw_format_t *fmt, const char *path, const bfh_options *opt, env_t *io,
                  index_sync_t *sync, engine_t **out, err_t *err) {
  int rc = fmt->bind(err);
  if (rc != BFH_OK) return err_prefix(err, "%s: the %s engine needs ", path, fmt->lib);
  rc = fmt->check_dir(io ? io : env_default(), path, opt, err);
  if (rc != BFH_OK) return rc;
  stock_rw_t *s = calloc(1, fmt->handle_size);
  if (!s) return err_set(err, BFH_E_NOMEM, "%s: no memory", path);
  rc = begin(s, fmt, path, opt->create_if_missing, io, sync, err);
  if (rc == BFH_OK && opt->block_cache_bytes &&
      !(s->blocks = block_cache_create(opt->block_cache_bytes)))
    rc = err_set(err, BFH_E_NOMEM, "%s: no memory for the block cache", path);
  if (rc == BFH_OK) rc = fmt->open(s, opt, err);
  if (rc == BFH_OK) rc = source_init(s, err);
  if (rc == BFH_OK) rc = stock_rw_sync(s, STOCK_SYNC_FULL, NULL, err); /* every live table */
  if (rc == BFH_OK && s->sync) stock_cache_clean(s->io, s->cache_dir, 1, cache_keeps, s->sync);
  if (rc == BFH_OK && s->sync)
    rc = indexer_start(&s->bg, STOCK_RW_BG_PERIOD_NS, bg_tick, s, s->path, err);
  /* The background thread applies what its runs queue, and the removes the views queue at its
     next tick: searches leave the queue to it (index_sync_use_applier). */
  if (rc == BFH_OK && s->sync) index_sync_use_applier(s->sync);
  if (rc != BFH_OK) {
    stock_rw_close(&s->base, NULL);
    return rc;
  }
  s->opened = 1;
  *out = &s->base;
  return BFH_OK;
}

/* The close's last sync: the tables the shut library left, reported and read. No other
   thread is left to race it (the indexer stopped, the client closing). */
static int sync_at_rest(stock_rw_t *s, err_t *err) {
  engine_table_t *t = NULL;
  size_t n = 0;
  int rc = s->fmt->list_at_rest(s, &t, &n, err);
  if (rc == BFH_OK) rc = stock_report_tables(s->sync, s->path, t, NULL, n, NULL, err);
  free(t);
  return rc == BFH_OK ? index_sync_run(s->sync, INDEX_RUN_ALL, 0, err) : rc;
}

int stock_rw_close(engine_t *e, err_t *err) {
  (void)err;
  stock_rw_t *s = (stock_rw_t *)e;
  if (!s) return BFH_OK;
  indexer_stop(&s->bg);
  s->fmt->shut(s);
  if (s->sync && s->opened) {
    /* Every live table leaves its cache file behind, for a fast reopen: the ones not read
       yet are read now (the next open would read them anyway). The library is closed first:
       a compaction that ended after a sync of the open database would leave its tables
       without one. A failure costs the next open a read of the tables, nothing more. */
    err_t e2;
    (void)sync_at_rest(s, &e2);
    index_sync_close_caches(s->sync);
  }
  files_sweep(s, NULL, 0);
  u64_map_release(&s->files);
  pthread_mutex_destroy(&s->files_mu);
  s->fmt->destroy(s);
  block_cache_destroy(s->blocks);
  env_unlock(s->dir_lock);
  pthread_mutex_destroy(&s->sync_mu);
  free(s->path);
  free(s->cache_dir);
  free(s);
  return BFH_OK;
}

/* ---- Syncs and views ---------------------------------------------------------------------- */

/* A view of tables t[0, n) (taken: freed with the view) and of the segments read so far:
   NULL if no memory. REQUIRES sync_mu. */
static engine_view_t *view_make(stock_rw_t *s, engine_table_t *t, size_t n) {
  size_t ns = 0;
  const stock_segs_t *l;
  for (size_t i = 0; (l = s->fmt->segs(s, i)); i++) ns += l->n;
  engine_view_t *v = calloc(1, sizeof *v);
  log_seg_t **segs = malloc((ns ? ns : 1) * sizeof *segs);
  if (!v || !segs) {
    free(v);
    free(segs);
    return NULL;
  }
  *v = (engine_view_t){.tables = t,
                       .ntables = n,
                       .segs = segs,
                       .seed = stock_value_seed(s->sync),
                       .fill = block_cache_reader_fill(s->blocks)};
  for (size_t i = 0; (l = s->fmt->segs(s, i)); i++)
    for (size_t j = 0; j < l->n; j++) {
      atomic_fetch_add(&l->v[j]->refs, 1);
      v->segs[v->nsegs++] = l->v[j];
    }
  return v;
}

/* Frees v, its tables and its references to segments; not what it holds. */
static void view_free(engine_view_t *v) {
  for (size_t i = 0; i < v->nsegs; i++) stock_seg_unref(v->segs[i]);
  free(v->segs);
  free(v->tables);
  free(v);
}

static int sync_locked(stock_rw_t *s, engine_view_t **view, err_t *err) {
  s->syncs++;
  engine_table_t *t = NULL;
  size_t n = 0;
  void *held = NULL;
  int rc = s->fmt->list(s, view != NULL, &t, &n, &held, err);
  if (rc != BFH_OK) return rc;
  if (!view || s->syncs % STOCK_RW_FILES_SWEEP == 0) files_sweep(s, t, n);
  engine_view_t *v = NULL;
  if (view && !(v = view_make(s, t, n)))
    rc = err_set(err, BFH_E_NOMEM, "%s: no memory for a view", s->path);
  /* ids 0: the tables of a database this handle holds open (with its LOCK) are never
     replaced under it. */
  if (rc == BFH_OK)
    rc = stock_report_tables(s->sync, s->path, t, NULL, n, v ? &v->epoch : NULL, err);
  if (rc == BFH_OK && v) {
    v->held = held;
    *view = v;
    return BFH_OK;
  }
  if (v)
    view_free(v); /* with t */
  else
    free(t);
  if (view) s->fmt->unhold(s, held);
  return rc;
}

int stock_rw_sync(stock_rw_t *s, int mode, engine_view_t **view, err_t *err) {
  pthread_mutex_lock(&s->sync_mu);
  int rc = sync_locked(s, mode == STOCK_SYNC_VIEW ? view : NULL, err);
  pthread_mutex_unlock(&s->sync_mu);
  if (rc == BFH_OK && s->sync && mode == STOCK_SYNC_VIEW && index_sync_take_met(s->sync))
    indexer_kick(&s->bg);
  if (rc != BFH_OK || !s->sync || mode == STOCK_SYNC_VIEW) return rc;
  /* A table deleted before index_sync reads it is reported gone by the next list: the read
     says BFH_NOT_FOUND and no leaf is made. */
  rc = index_sync_run(s->sync, mode == STOCK_SYNC_FULL ? INDEX_RUN_ALL : INDEX_RUN_AGED,
                      STOCK_RW_BG_MIN_AGE_NS, err);
  index_sync_apply(s->sync); /* what the run and the views queued, in pieces */
  return rc;
}

int engine_stock_sync(engine_t *e, err_t *err) {
  return stock_rw_sync((stock_rw_t *)e, STOCK_SYNC_FULL, NULL, err);
}

int stock_rw_view_acquire(engine_t *e, engine_view_t **view, err_t *err) {
  return stock_rw_sync((stock_rw_t *)e, STOCK_SYNC_VIEW, view, err);
}

void stock_rw_view_release(engine_t *e, engine_view_t *v) {
  stock_rw_t *s = (stock_rw_t *)e;
  if (!v) return;
  if (s->sync && v->epoch) index_sync_view_unpin(s->sync, v->epoch);
  void *held = v->held;
  view_free(v);
  s->fmt->unhold(s, held);
}

/* The C APIs count no bytes written that they show: only the logs' value indexes. */
void stock_rw_stats(engine_t *e, bfh_db_stats *st) {
  stock_rw_t *s = (stock_rw_t *)e;
  pthread_mutex_lock(&s->sync_mu);
  const stock_segs_t *l;
  for (size_t i = 0; (l = s->fmt->segs(s, i)); i++)
    st->memtable_index_bytes += stock_segs_index_bytes(l->v, l->n);
  pthread_mutex_unlock(&s->sync_mu);
  if (s->blocks) { /* the searches' blocks: the library's own cache shows nothing through C */
    block_cache_stats_t bc;
    block_cache_get_stats(s->blocks, &bc);
    st->block_cache_hits = bc.hits;
    st->block_cache_misses = bc.misses;
    st->block_cache_bytes = bc.bytes;
  }
}

/* ---- Table reads -------------------------------------------------------------------------- */

/* The result rc of a read of table `number` of a view. */
static int live_table_read(const stock_rw_t *s, uint64_t number, int rc, err_t *err) {
  if (rc == BFH_NOT_FOUND)
    rc = err_set(err, BFH_E_IO,
                 "%s: table %06llu listed in the live version but deleted under the search",
                 s->path, (unsigned long long)number);
  return rc;
}

int stock_rw_scan_blocks(engine_t *e, engine_view_t *v, uint64_t number, const block_ref_t *refs,
                         size_t n, const engine_value_test_t *test, engine_match_fn fn, void *arg,
                         engine_scan_stats_t *st, err_t *err) {
  stock_rw_t *s = (stock_rw_t *)e;
  if (!engine_tables_contain(v->tables, v->ntables, number)) return BFH_OK;
  stock_match_t m = {test, fn, arg};
  block_cache_use_t use = {s->blocks, number, &v->fill};
  if (!refs || n == 0 || !s->fmt->file_open) {
    int rc = s->fmt->table_match(s->io, s->path, number, refs, n, &use, &m, st, err);
    return live_table_read(s, number, rc, err);
  }
  stock_file_t *f = NULL;
  int rc = file_get(s, number, &f, err);
  if (rc == BFH_OK) rc = s->fmt->file_match(f, refs, n, &use, &m, st, err);
  file_unref(s, f);
  return live_table_read(s, number, rc, err);
}

/* ---- Reading ahead -------------------------------------------------------------------------
   A search by blocks names the blocks of all its tables before it reads them (search.c,
   "Reading ahead"). One pread each, those reads were a system call per block; read ahead,
   STOCK_RW_AHEAD_BATCH of them go to the kernel together and enter the block cache, where
   the reads that follow find them. */

/* A block of a batch: its table (number and file, with a reference of its own) and place. */
typedef struct ahead_read {
  stock_file_t *f;
  uint64_t number;
  block_ref_t ref;
} ahead_read_t;

/* Makes the reads rd[0, k) and hands each block read whole to the format, which keeps it in
   the cache; then lets go of the buffers and the files. */
static void ahead_batch(stock_rw_t *s, engine_view_t *v, const ahead_read_t *a, env_read_t *rd,
                        size_t k) {
  (void)env_read_batch(s->io, rd, k, NULL); /* each read has its own result */
  for (size_t j = 0; j < k; j++) {
    if (rd[j].rc == BFH_OK && rd[j].got == rd[j].n) {
      block_cache_use_t use = {s->blocks, a[j].number, &v->fill};
      s->fmt->file_keep(a[j].f, a[j].ref, rd[j].buf, &use);
    }
    free(rd[j].buf);
    file_unref(s, a[j].f);
  }
}

void stock_rw_read_ahead(engine_t *e, engine_view_t *v, const block_ahead_t *r, size_t n) {
  stock_rw_t *s = (stock_rw_t *)e;
  if (!s->blocks || !s->fmt->file_keep) return;
  ahead_read_t a[STOCK_RW_AHEAD_BATCH];
  env_read_t rd[STOCK_RW_AHEAD_BATCH];
  uint64_t budget = v->fill; /* no block is read that the cache would not take */
  stock_file_t *f = NULL;    /* the file of r[i]'s table, or NULL (not in v, or gone) */
  size_t k = 0;
  for (size_t i = 0; i < n; i++) {
    if (i == 0 || r[i].number != r[i - 1].number) {
      file_unref(s, f);
      f = NULL;
      if (engine_tables_contain(v->tables, v->ntables, r[i].number))
        (void)file_get(s, r[i].number, &f, NULL); /* a table gone: its scan reports it */
    }
    block_ref_t ref = r[i].block;
    uint64_t len = ref.size + BLOCK_TRAILER_BYTES, size = f ? env_rfile_size(f->f) : 0;
    block_cache_use_t use = {s->blocks, r[i].number, &v->fill};
    block_cache_handle_t *h;
    size_t kept;
    if (f && !r[i].meta && len <= budget && ref.offset <= size && len <= size - ref.offset) {
      if (block_cache_use_pin(&use, ref.offset, &kept, &h)) {
        block_cache_release(h);
      } else {
        void *buf = malloc((size_t)len);
        if (buf) {
          budget -= len;
          atomic_fetch_add(&f->refs, 1);
          a[k] = (ahead_read_t){f, r[i].number, ref};
          rd[k++] = (env_read_t){f->f, ref.offset, buf, (size_t)len, 0, BFH_OK};
        }
      }
    }
    if (k == STOCK_RW_AHEAD_BATCH || (i + 1 == n && k)) {
      ahead_batch(s, v, a, rd, k);
      k = 0;
    }
  }
  file_unref(s, f);
}

int stock_rw_table_hashes(engine_t *e, engine_view_t *v, uint64_t number, uint64_t seed,
                          void (*fn)(void *arg, uint64_t hash), void *arg, engine_scan_stats_t *st,
                          err_t *err) {
  stock_rw_t *s = (stock_rw_t *)e;
  if (!engine_tables_contain(v->tables, v->ntables, number)) return BFH_OK;
  int rc = s->fmt->table_hashes(s->io, s->path, number, seed, index_sync_terms(s->sync), fn, arg,
                                st, err);
  return live_table_read(s, number, rc, err);
}

/* ---- Gets ------------------------------------------------------------------------------------ */

int stock_rw_get_result(const char *path, char *v, size_t n, void (*lib_free)(void *), void **val,
                        size_t *val_len, err_t *err) {
  if (!v) return BFH_NOT_FOUND;
  if (n == 0) {
    lib_free(v);
    v = malloc(1);
    if (!v) return err_set(err, BFH_E_NOMEM, "%s: get: no memory", path);
  }
  *val = v;
  *val_len = n;
  return BFH_OK;
}

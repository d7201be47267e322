/* The stock engines' core (stock.h): file names, the views' memtable scans, the reports to
 * index_sync, the filter cache directory and the background indexer.
 */
#include "lsm_hooks/engines/stock/stock.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "bfh.h"
#include "lsm_hooks/engines/engine_detect.h"
#include "util/path.h"

/* ---- File names ------------------------------------------------------------------------- */

int stock_file_number(const char *name, const char *suffix, uint64_t *num) {
  const char *p = name;
  uint64_t x = 0;
  if (*p < '0' || *p > '9') return 0;
  while (*p >= '0' && *p <= '9') {
    if (x > UINT64_MAX / 10 - 1) return 0;
    x = x * 10 + (uint64_t)(*p++ - '0');
  }
  if (*p++ != '.' || strcmp(p, suffix) != 0) return 0;
  *num = x;
  return 1;
}

int stock_table_file_number(const char *name, uint64_t *num) {
  return stock_file_number(name, "ldb", num) || stock_file_number(name, "sst", num);
}

int stock_file_exists(env_t *io, const char *dir, const char *name, int *exists, err_t *err) {
  *exists = 0;
  char *p = path_join(dir, name);
  if (!p) return err_set(err, BFH_E_NOMEM, "%s/%s: no memory for its path", dir, name);
  *exists = env_exists(io, p);
  free(p);
  return BFH_OK;
}

/* ---- The view --------------------------------------------------------------------------- */

size_t stock_view_tables(const engine_view_t *v, const engine_table_t **tables) {
  *tables = v->tables;
  return v->ntables;
}

int stock_scan_memtables(engine_t *e, engine_view_t *v, const engine_value_test_t *test,
                         engine_match_fn fn, void *arg, engine_scan_stats_t *st, err_t *err) {
  (void)e, (void)err;
  stock_segs_scan(v->segs, v->nsegs, test, fn, arg, st);
  return BFH_OK;
}

int stock_find_memtables(engine_t *e, engine_view_t *v, const engine_value_test_t *test,
                         uint64_t hash, engine_match_fn fn, void *arg, engine_scan_stats_t *st,
                         err_t *err) {
  (void)e, (void)err;
  stock_segs_find(v->segs, v->nsegs, test, v->seed, hash, fn, arg, st);
  return BFH_OK;
}

/* ---- Reports and the filter cache --------------------------------------------------------- */

int stock_report_tables(index_sync_t *sync, const char *path, const engine_table_t *t,
                        const uint64_t *ids, size_t n, uint64_t *view_epoch, err_t *err) {
  if (!sync) return BFH_OK;
  index_table_t *live = malloc((n ? n : 1) * sizeof *live);
  if (!live) return err_set(err, BFH_E_NOMEM, "%s: no memory", path);
  for (size_t i = 0; i < n; i++)
    live[i] = (index_table_t){t[i].number, t[i].size, ids ? ids[i] : 0};
  int rc = index_sync_tables_listed(sync, live, n, view_epoch, err);
  free(live);
  return rc;
}

int stock_cache_init(index_sync_t *sync, env_t *io, const char *dir, index_source_t src,
                     char **cache_dir, err_t *err) {
  *cache_dir = path_join(dir, LEAF_CACHE_DIR);
  if (!*cache_dir)
    return err_set(err, BFH_E_NOMEM, "%s/%s: no memory for its path", dir, LEAF_CACHE_DIR);
  int rc = env_mkdir(io, *cache_dir, err);
  if (rc != BFH_OK) return rc;
  src.cache_dir = *cache_dir;
  return index_sync_set_source(sync, &src, err);
}

void stock_cache_clean(index_sync_t *sync, env_t *io, const char *cache_dir) {
  if (!sync || !cache_dir) return;
  char **names = NULL;
  size_t n = 0;
  if (env_list_dir(io, cache_dir, &names, &n, NULL) != BFH_OK) return;
  for (size_t i = 0; i < n; i++) {
    uint64_t num;
    int keep = 0;
    if (stock_file_number(names[i], "vf", &num)) {
      index_leaf_source_t s = index_sync_leaf_source(sync, num);
      keep = s == INDEX_LEAF_CACHED || s == INDEX_LEAF_READ;
    }
    if (keep || names[i][0] == '.') continue;
    char *p = path_join(cache_dir, names[i]);
    if (p) (void)env_unlink(io, p, NULL); /* a failure leaves it for the next open */
    free(p);
  }
  env_names_free(names, n);
}

/* ---- What the read-only engines share ------------------------------------------------------ */

int stock_make_dirs(const char *dir, err_t *err) {
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

int stock_ro_check_directory(const char *path, int kind, const char *what, err_t *err) {
  int rc = engine_detect_check(path, kind, err);
  if (rc != BFH_OK) return rc;
  int exists = 0;
  if ((rc = stock_file_exists(env_default(), path, "CURRENT", &exists, err)) != BFH_OK) return rc;
  if (!exists)
    return err_set(err, BFH_E_INVALID,
                   "%s: not a %s database (no CURRENT file); a read-only open creates none", path,
                   what);
  return BFH_OK;
}

unsigned long long stock_ro_pin_max(void) {
  struct rlimit rl;
  return getrlimit(RLIMIT_NOFILE, &rl) != 0 ? 256
         : rl.rlim_cur == RLIM_INFINITY     ? 1u << 20
                                            : (unsigned long long)rl.rlim_cur / 2;
}

int stock_ro_cache_init(index_sync_t *sync, const char *path, const char *index_dir,
                        index_source_t src, char **cache_dir, err_t *err) {
  *cache_dir = NULL;
  if (index_dir) {
    if (!(*cache_dir = path_join(index_dir, LEAF_CACHE_DIR)))
      return err_set(err, BFH_E_NOMEM, "%s: %s/%s: no memory for its path", path, index_dir,
                     LEAF_CACHE_DIR);
    int rc = stock_make_dirs(*cache_dir, err);
    if (rc != BFH_OK) return rc;
  }
  src.cache_dir = *cache_dir;
  src.cache_delay_ns = 0;
  return index_sync_set_source(sync, &src, err);
}

void stock_ro_cache_clean(env_t *io, const char *cache_dir, const engine_table_t *tables,
                          size_t n) {
  char **names;
  size_t nn;
  err_t e;
  if (env_list_dir(io, cache_dir, &names, &nn, &e) != BFH_OK) return;
  for (size_t i = 0; i < nn; i++) {
    uint64_t num;
    if (stock_file_number(names[i], "vf", &num) && engine_tables_contain(tables, n, num)) continue;
    char *p = path_join(cache_dir, names[i]);
    if (p) (void)env_unlink(io, p, NULL); /* no memory: left for the next clean */
    free(p);
  }
  env_names_free(names, nn);
}

int stock_ro_refresh(dir_watch_t *watch, atomic_int *stale, int have_state,
                     atomic_ullong *refreshes, atomic_ullong *retries, int attempts,
                     int (*once)(void *arg, err_t *err), void *arg, const char *path,
                     const char *what, err_t *err) {
  if (dir_watch_poll(watch)) atomic_store(stale, 1);
  if (!atomic_exchange(stale, 0) && have_state) return BFH_OK; /* cleared: this one reads */
  atomic_fetch_add(refreshes, 1);
  int rc = STOCK_RO_AGAIN;
  for (int attempt = 0; attempt < attempts; attempt++) {
    rc = once(arg, err);
    if (rc == BFH_OK) return rc;
    if (rc != STOCK_RO_AGAIN && !(rc == BFH_E_CORRUPT && attempt + 1 < attempts)) break;
    atomic_fetch_add(retries, 1);
  }
  atomic_store(stale, 1); /* failed: the next refresh reads the files again */
  if (rc != STOCK_RO_AGAIN) return rc;
  return err_set(err, BFH_E_BUSY, "%s: the database changed under each of %d reads of its %s", path,
                 attempts, what);
}

int stock_ro_table_status(atomic_int *stale, const char *path, int rc, uint64_t number,
                          err_t *err) {
  if (rc != BFH_NOT_FOUND) return rc;
  atomic_store(stale, 1);
  return err_set(err, BFH_E_BUSY, "%s: table %06llu vanished while read (the owner compacted it)",
                 path, (unsigned long long)number);
}

/* The path of a read-only engine e: every stock engine's struct begins with its engine_t and
   then its path (engine_leveldb_t, engine_ro_t, engine_rocksdb_t, rro_t). */
static const char *ro_path(const engine_t *e) {
  const struct {
    engine_t base;
    char *path;
  } *head = (const void *)e;
  return head->path;
}

static int read_only(engine_t *e, const char *op, err_t *err) {
  return err_set(err, BFH_E_UNSUPPORTED, "%s: %s: read-only handle", ro_path(e), op);
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

int stock_ro_view_load(index_sync_t *sync, int at_open, err_t *err) {
  /* After the open's loading, as before it: a view indexes the tables made since itself. */
  if (!index_sync_params(sync)->block_bits || (!at_open && !index_sync_loader_active(sync)))
    return index_sync_run(sync, INDEX_RUN_ALL, 0, err);
  if (!index_sync_pending(sync, 0)) return BFH_OK;
  int rc = index_sync_load_blocks(sync, err);
  if (rc == BFH_OK) rc = index_sync_loader_start(sync, err);
  return rc;
}

/* ---- The background indexer ----------------------------------------------------------------- */

void stock_indexer_init(stock_indexer_t *x) {
  pthread_mutex_init(&x->mu, NULL);
  pthread_condattr_t ca;
  pthread_condattr_init(&ca);
  pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
  pthread_cond_init(&x->cv, &ca);
  pthread_condattr_destroy(&ca);
}

void stock_indexer_release(stock_indexer_t *x) {
  pthread_mutex_destroy(&x->mu);
  pthread_cond_destroy(&x->cv);
}

static void *indexer_main(void *arg) {
  stock_indexer_t *x = arg;
  pthread_mutex_lock(&x->mu);
  while (!x->stop) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    uint64_t t = (uint64_t)ts.tv_nsec + x->period_ns;
    ts.tv_sec += (time_t)(t / 1000000000ull);
    ts.tv_nsec = (long)(t % 1000000000ull);
    pthread_cond_timedwait(&x->cv, &x->mu, &ts);
    if (x->stop) break;
    pthread_mutex_unlock(&x->mu);
    x->tick(x->arg);
    pthread_mutex_lock(&x->mu);
  }
  pthread_mutex_unlock(&x->mu);
  return NULL;
}

int stock_indexer_start(stock_indexer_t *x, uint64_t period_ns, void (*tick)(void *arg), void *arg,
                        const char *path, err_t *err) {
  x->period_ns = period_ns;
  x->tick = tick;
  x->arg = arg;
  x->stop = 0;
  if (pthread_create(&x->thread, NULL, indexer_main, x) != 0)
    return err_set(err, BFH_E_IO, "%s: cannot start the indexing thread", path);
  x->started = 1;
  return BFH_OK;
}

void stock_indexer_stop(stock_indexer_t *x) {
  if (!x->started) return;
  pthread_mutex_lock(&x->mu);
  x->stop = 1;
  pthread_cond_signal(&x->cv);
  pthread_mutex_unlock(&x->mu);
  pthread_join(x->thread, NULL);
  x->started = 0;
}

/* The stock engines' core (stock.h): file names, the views' memtable scans, the reports to
 * index_sync, the filter cache directory and the background indexer.
 */
#include "lsm_hooks/engines/stock/stock.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bfh.h"
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

void stock_table_path_write(const char *dir, uint64_t number, const char *first,
                            const char *second, char *out, size_t n) {
  snprintf(out, n, "%s/%06llu.%s", dir, (unsigned long long)number, first);
  if (env_exists(env_default(), out)) return;
  snprintf(out, n, "%s/%06llu.%s", dir, (unsigned long long)number, second);
  if (!env_exists(env_default(), out))
    snprintf(out, n, "%s/%06llu.%s", dir, (unsigned long long)number, first);
}

int stock_table_path(const char *dir, uint64_t number, const char *first, const char *second,
                     char **path, err_t *err) {
  size_t n = strlen(dir) + STOCK_TABLE_NAME_BYTES;
  *path = malloc(n);
  if (!*path)
    return err_set(err, BFH_E_NOMEM, "%s/%06llu.%s: no memory for its path", dir,
                   (unsigned long long)number, first);
  stock_table_path_write(dir, number, first, second, *path, n);
  return BFH_OK;
}

int stock_file_exists(env_t *io, const char *dir, const char *name, int *exists, err_t *err) {
  *exists = 0;
  char *p = path_join(dir, name);
  if (!p) return err_set(err, BFH_E_NOMEM, "%s/%s: no memory for its path", dir, name);
  *exists = env_exists(io, p);
  free(p);
  return BFH_OK;
}

int stock_current_read(env_t *io, const char *dir, char **manifest, err_t *err) {
  *manifest = NULL;
  char *path = path_join(dir, "CURRENT");
  if (!path) return err_set(err, BFH_E_NOMEM, "%s/CURRENT: no memory for its path", dir);
  void *data = NULL;
  size_t n = 0;
  int rc = env_exists(io, path) ? env_read_file(io, path, &data, &n, err) : BFH_NOT_FOUND;
  if (rc != BFH_OK && rc != BFH_E_NOMEM && !env_exists(io, path)) /* gone while read */
    rc = err_set(err, BFH_NOT_FOUND, "%s: no such file", path);
  const char *s = data;
  int ok = rc == BFH_OK && n > 10 && n < 64 && s[n - 1] == '\n' && !memcmp(s, "MANIFEST-", 9);
  for (size_t i = 9; ok && i < n - 1; i++) ok = s[i] >= '0' && s[i] <= '9';
  if (rc == BFH_OK && !ok)
    rc = err_set(err, BFH_E_CORRUPT, "%s: not \"MANIFEST-<number>\\n\"", path);
  if (ok && !(*manifest = path_fmt("%s/%.*s", dir, (int)(n - 1), s)))
    rc = err_set(err, BFH_E_NOMEM, "%s: no memory for the MANIFEST's path", path);
  free(data);
  free(path);
  return rc;
}

/* ---- Tables ------------------------------------------------------------------------------------
 */

static int cmp_table(const void *a, const void *b) {
  uint64_t x = ((const engine_table_t *)a)->number, y = ((const engine_table_t *)b)->number;
  return x < y ? -1 : x > y;
}

void stock_tables_sort(engine_table_t *t, size_t n) {
  qsort(t, n, sizeof *t, cmp_table);
}

/* ---- A table's key range -------------------------------------------------------------------- */

int stock_key_range_add(stock_key_range_t *r, const void *key, size_t key_len) {
  r->entries++;
  if (!r->smallest) {
    if (!(r->smallest = malloc(key_len ? key_len : 1))) return r->nomem = 1;
    memcpy(r->smallest, key, key_len);
    r->smallest_len = key_len;
  }
  if (key_len > r->largest_cap) {
    uint8_t *p = realloc(r->largest, key_len);
    if (!p) return r->nomem = 1;
    r->largest = p;
    r->largest_cap = key_len;
  }
  memcpy(r->largest, key, key_len);
  r->largest_len = key_len;
  return 0;
}

int stock_key_range_give(stock_key_range_t *r, const char *path, int rc, bfh_table_info *info,
                         err_t *err) {
  if (rc == BFH_OK && r->nomem) rc = err_set(err, BFH_E_NOMEM, "table %s: out of memory", path);
  info->entries = r->entries;
  info->smallest = r->smallest;
  info->smallest_len = r->smallest_len;
  info->largest = r->largest;
  info->largest_len = r->largest_len;
  return rc;
}

/* ---- Segment lists and views ---------------------------------------------------------------- */

int stock_segs_push(stock_segs_t *l, const stock_seg_builder_t *b) {
  if (l->n == l->cap) {
    size_t c = l->cap ? 2 * l->cap : 8;
    log_seg_t **ns = realloc(l->v, c * sizeof *ns);
    if (!ns) return BFH_E_NOMEM;
    l->v = ns;
    l->cap = c;
  }
  log_seg_t *s = stock_seg_builder_finish(b);
  if (!s) return BFH_E_NOMEM;
  l->v[l->n++] = s;
  return BFH_OK;
}

void stock_segs_clear(stock_segs_t *l) {
  for (size_t i = 0; i < l->n; i++) stock_seg_unref(l->v[i]);
  l->n = 0;
}

void stock_segs_release(stock_segs_t *l) {
  stock_segs_clear(l);
  free(l->v);
  *l = (stock_segs_t){0};
}

engine_view_t *stock_view_create(const index_sync_t *sync, size_t nsegs) {
  engine_view_t *v = calloc(1, sizeof *v);
  if (v) v->segs = malloc((nsegs ? nsegs : 1) * sizeof *v->segs);
  if (!v || !v->segs) {
    free(v);
    return NULL;
  }
  v->seed = stock_value_seed(sync);
  return v;
}

void stock_view_add_segs(engine_view_t *v, const stock_segs_t *l) {
  for (size_t i = 0; i < l->n; i++) {
    atomic_fetch_add(&l->v[i]->refs, 1);
    v->segs[v->nsegs++] = l->v[i];
  }
}

void stock_view_free(engine_view_t *v) {
  if (!v) return;
  for (size_t i = 0; i < v->nsegs; i++) stock_seg_unref(v->segs[i]);
  free(v->segs);
  free(v->tables);
  free(v);
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
  *cache_dir = path_join(dir, INDEX_SYNC_CACHE_DIR);
  if (!*cache_dir)
    return err_set(err, BFH_E_NOMEM, "%s/%s: no memory for its path", dir, INDEX_SYNC_CACHE_DIR);
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

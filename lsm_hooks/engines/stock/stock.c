/* The stock engines' core (stock.h): file names, the views' memtable scans, the reports to
 * index_sync and the filter cache directory.
 */
#include "lsm_hooks/engines/stock/stock.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

void stock_table_path_write(const char *dir, uint64_t number, const char *first, const char *second,
                            char *out, size_t n) {
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

int stock_grow(void *array, size_t *cap, size_t need, size_t size, size_t first) {
  if (need <= *cap) return BFH_OK;
  size_t c = *cap ? 2 * *cap : first;
  while (c < need) c *= 2;
  void *p;
  memcpy(&p, array, sizeof p); /* the caller's T *, whatever T */
  if (!(p = realloc(p, c * size))) return BFH_E_NOMEM;
  memcpy(array, &p, sizeof p);
  *cap = c;
  return BFH_OK;
}

/* ---- Tables ------------------------------------------------------------------------------- */

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
  if (stock_grow(&r->largest, &r->largest_cap, key_len, 1, 64) != BFH_OK) return r->nomem = 1;
  memcpy(r->largest, key, key_len);
  r->largest_len = key_len;
  return 0;
}

/* ---- Segment lists -------------------------------------------------------------------------- */

int stock_segs_push(stock_segs_t *l, const stock_seg_builder_t *b) {
  log_seg_t *s = NULL;
  if (stock_grow(&l->v, &l->cap, l->n + 1, sizeof *l->v, 8) != BFH_OK ||
      !(s = stock_seg_builder_finish(b)))
    return BFH_E_NOMEM;
  l->v[l->n++] = s;
  stock_segs_merge_tail(l);
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

/* ---- The view --------------------------------------------------------------------------- */

size_t stock_view_tables(const engine_view_t *v, const engine_table_t **tables) {
  *tables = v->tables;
  return v->ntables;
}

int stock_scan_table(engine_t *e, engine_view_t *v, uint64_t number,
                     const engine_value_test_t *test, engine_match_fn fn, void *arg,
                     engine_scan_stats_t *st, err_t *err) {
  return e->ops->scan_blocks(e, v, number, NULL, 0, test, fn, arg, st, err);
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

void stock_cache_clean(env_t *io, const char *cache_dir, int keep_dot,
                       int (*keep)(void *arg, uint64_t number), void *arg) {
  char **names = NULL;
  size_t n = 0;
  if (env_list_dir(io, cache_dir, &names, &n, NULL) != BFH_OK) return;
  for (size_t i = 0; i < n; i++) {
    uint64_t num;
    if ((keep_dot && names[i][0] == '.') ||
        (stock_file_number(names[i], "vf", &num) && keep(arg, num)))
      continue;
    char *p = path_join(cache_dir, names[i]);
    if (p) (void)env_unlink(io, p, NULL); /* no memory: left for the next clean */
    free(p);
  }
  env_names_free(names, n);
}

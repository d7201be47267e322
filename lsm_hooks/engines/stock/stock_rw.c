/* The read-write stock engines' core (stock_rw.h). */
#include "lsm_hooks/engines/stock/stock_rw.h"

#include <stdlib.h>
#include <string.h>

#include "lsm_hooks/engines/engine_detect.h"

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

int stock_rw_begin(stock_rw_t *s, const engine_ops_t *ops, const stock_rw_format_t *fmt,
                   const char *path, int create, env_t *io, index_sync_t *sync, err_t *err) {
  s->base.ops = ops;
  s->fmt = fmt;
  s->io = io ? io : env_default();
  s->sync = sync;
  pthread_mutex_init(&s->sync_mu, NULL);
  stock_indexer_init(&s->bg);
  s->path = strdup(path);
  if (!s->path) return err_set(err, BFH_E_NOMEM, "%s: no memory", path);
  int rc = create ? env_mkdir(s->io, path, err) : BFH_OK;
  if (rc == BFH_OK && (rc = env_lock_dir(s->io, path, &s->dir_lock, err)) == BFH_E_BUSY)
    err_set(err, BFH_E_BUSY, "%s: database is open in another process or handle", path);
  /* A FIFO in place of a file the library opens would make it wait forever. */
  if (rc == BFH_OK) rc = engine_detect_special_files(path, err);
  return rc;
}

void stock_rw_release(stock_rw_t *s) {
  env_unlock(s->dir_lock);
  pthread_mutex_destroy(&s->sync_mu);
  stock_indexer_release(&s->bg);
  free(s->path);
  free(s->cache_dir);
}

/* ---- index_sync's source ------------------------------------------------------------------ */

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

int stock_rw_source_init(stock_rw_t *s, err_t *err) {
  if (!s->sync) return BFH_OK;
  index_source_t src = {.read_leaf = read_leaf,
                        .ctx = s,
                        .table_tag = table_tag,
                        .cache_delay_ns = s->fmt->cache_delay_ns,
                        .io = s->io};
  return stock_cache_init(s->sync, s->io, s->path, src, &s->cache_dir, err);
}

int stock_rw_bg_start(stock_rw_t *s, uint64_t period_ns, void (*tick)(void *arg), void *arg,
                      err_t *err) {
  if (!s->sync) return BFH_OK;
  return stock_indexer_start(&s->bg, period_ns, tick, arg, s->path, err);
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

static int read_table(stock_rw_t *s, engine_view_t *v, uint64_t number, const block_ref_t *refs,
                      size_t n, const stock_match_t *m, engine_scan_stats_t *st, err_t *err) {
  if (!engine_tables_contain(v->tables, v->ntables, number)) return BFH_OK;
  return live_table_read(s, number,
                         s->fmt->table_match(s->io, s->path, number, refs, n, m, st, err), err);
}

int stock_rw_scan_table(engine_t *e, engine_view_t *v, uint64_t number,
                        const engine_value_test_t *test, engine_match_fn fn, void *arg,
                        engine_scan_stats_t *st, err_t *err) {
  stock_match_t m = {test, fn, arg};
  return read_table((stock_rw_t *)e, v, number, NULL, 0, &m, st, err);
}

int stock_rw_scan_blocks(engine_t *e, engine_view_t *v, uint64_t number, const block_ref_t *refs,
                         size_t n, const engine_value_test_t *test, engine_match_fn fn, void *arg,
                         engine_scan_stats_t *st, err_t *err) {
  stock_match_t m = {test, fn, arg};
  return read_table((stock_rw_t *)e, v, number, refs, n, &m, st, err);
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

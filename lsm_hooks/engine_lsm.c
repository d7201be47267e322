/* engine_t over bfh's own LSM engine (lsm/db.h), with the value-filter table-build hook.
 *
 * The hook keeps the value index in step with every table the engine writes or drops. At
 * open, the leaves of the live tables are rebuilt from their "bfh.value_filter" meta blocks
 * (bulk load: value_index_add_batch); a table whose filter is missing or unreadable gets no
 * leaf, and search then scans it always (it is never skipped). A view is an lsm snapshot.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lsm/db.h"
#include "lsm_hooks/engine.h"
#include "lsm_hooks/engine_lsm.h"
#include "lsm_hooks/value_hook.h"

typedef struct engine_lsm {
  engine_t base;
  lsm_db_t *db;
  value_hook_t *hook; /* NULL when value filters are off */
  engine_lsm_open_stats_t open_stats;
} engine_lsm_t;

struct engine_view {
  lsm_snapshot_t *snap;
  engine_table_t *tables;
  size_t n;
};

static int e_close(engine_t *e) {
  engine_lsm_t *el = (engine_lsm_t *)e;
  if (!el) return BFH_OK;
  int rc = lsm_close(el->db);
  value_hook_destroy(el->hook);
  free(el);
  return rc;
}

static int e_put(engine_t *e, const void *key, size_t key_len, const void *val, size_t val_len,
                 err_t *err) {
  return lsm_put(((engine_lsm_t *)e)->db, key, key_len, val, val_len, err);
}

static int e_del(engine_t *e, const void *key, size_t key_len, err_t *err) {
  return lsm_delete(((engine_lsm_t *)e)->db, key, key_len, err);
}

static int e_get(engine_t *e, const void *key, size_t key_len, void **val, size_t *val_len,
                 err_t *err) {
  return lsm_get(((engine_lsm_t *)e)->db, key, key_len, val, val_len, err);
}

static int e_flush(engine_t *e, err_t *err) {
  return lsm_flush(((engine_lsm_t *)e)->db, err);
}

static int e_view_acquire(engine_t *e, engine_view_t **out, err_t *err) {
  engine_lsm_t *el = (engine_lsm_t *)e;
  /* Leaves on disk whose filter offset the hook could not find: locate them now, outside
     every lock, so that their words can leave memory. */
  if (e->index) value_index_resolve(e->index);
  engine_view_t *v = calloc(1, sizeof *v);
  if (!v) return err_set(err, BFH_E_NOMEM, "search: out of memory for a view");
  v->snap = lsm_snapshot_acquire(el->db);
  if (!v->snap) {
    free(v);
    return err_set(err, BFH_E_NOMEM, "search: out of memory for a snapshot");
  }
  const lsm_table_info_t *ti;
  v->n = lsm_snapshot_tables(v->snap, &ti);
  v->tables = malloc((v->n ? v->n : 1) * sizeof *v->tables);
  if (!v->tables) {
    lsm_snapshot_release(v->snap);
    free(v);
    return err_set(err, BFH_E_NOMEM, "search: out of memory for a view");
  }
  for (size_t i = 0; i < v->n; i++) {
    v->tables[i].number = ti[i].number;
    v->tables[i].size = ti[i].size;
    v->tables[i].level = ti[i].level;
  }
  *out = v;
  return BFH_OK;
}

static void e_view_release(engine_t *e, engine_view_t *v) {
  (void)e;
  if (!v) return;
  lsm_snapshot_release(v->snap);
  free(v->tables);
  free(v);
}

static size_t e_view_tables(const engine_view_t *v, const engine_table_t **tables) {
  *tables = v->tables;
  return v->n;
}

typedef struct match_ctx {
  const void *val;
  size_t len;
  engine_match_fn fn;
  void *arg;
} match_ctx_t;

static int visit_match(void *arg, const void *key, size_t key_len, const void *val, size_t val_len,
                       uint64_t seq, int type) {
  (void)seq;
  match_ctx_t *m = arg;
  if (type != LSM_TYPE_VALUE || val_len != m->len) return 0;
  if (val_len && memcmp(val, m->val, val_len) != 0) return 0;
  return m->fn(m->arg, key, key_len);
}

static int e_scan_table(engine_t *e, engine_view_t *v, uint64_t number, const void *val,
                        size_t val_len, engine_match_fn fn, void *arg, engine_scan_stats_t *st,
                        err_t *err) {
  (void)e;
  match_ctx_t m = {val, val_len, fn, arg};
  lsm_scan_stats_t ls = {0, 0};
  int rc = lsm_snapshot_scan_value(v->snap, number, val, val_len, visit_match, &m, &ls, err);
  if (st) {
    st->entries += ls.entries;
    st->bytes_read += ls.bytes_read;
  }
  return rc;
}

static int e_scan_memtables(engine_t *e, engine_view_t *v, const void *val, size_t val_len,
                            engine_match_fn fn, void *arg, engine_scan_stats_t *st, err_t *err) {
  (void)e;
  match_ctx_t m = {val, val_len, fn, arg};
  lsm_scan_stats_t ls = {0, 0};
  int rc = lsm_snapshot_scan_memtables(v->snap, visit_match, &m, &ls, err);
  if (st) st->entries += ls.entries;
  return rc;
}

static const engine_ops_t lsm_ops = {
    .name = "lsm",
    .close = e_close,
    .put = e_put,
    .del = e_del,
    .get = e_get,
    .flush = e_flush,
    .view_acquire = e_view_acquire,
    .view_release = e_view_release,
    .view_tables = e_view_tables,
    .scan_table = e_scan_table,
    .scan_memtables = e_scan_memtables,
};

/* The locator of leaves on disk: the offset of the stored filter, from the table's meta
   index. */
static int locate_filter(void *ctx, uint64_t number, uint64_t *offset) {
  engine_lsm_t *el = ctx;
  void *data = NULL;
  size_t size = 0;
  int rc = lsm_table_read_meta(el->db, number, VALUE_HOOK_META_NAME, &data, &size, offset, NULL);
  free(data);
  return rc;
}

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Gives every live table that has no leaf yet the filter stored in it. */
static int rebuild_index(engine_lsm_t *el, err_t *err) {
  value_index_t *vi = el->base.index;
  uint64_t t0 = now_ns();
  lsm_snapshot_t *snap = lsm_snapshot_acquire(el->db);
  if (!snap) return err_set(err, BFH_E_NOMEM, "value index rebuild: out of memory");
  const lsm_table_info_t *ti;
  size_t n = lsm_snapshot_tables(snap, &ti);
  uint64_t *numbers = calloc(n ? n : 1, sizeof *numbers);
  value_filter_t **filters = calloc(n ? n : 1, sizeof *filters);
  char **paths = calloc(n ? n : 1, sizeof *paths);
  uint64_t *offsets = calloc(n ? n : 1, sizeof *offsets);
  int rc = BFH_OK;
  if (!numbers || !filters || !paths || !offsets) {
    rc = err_set(err, BFH_E_NOMEM, "value index rebuild: out of memory");
    goto out;
  }
  size_t m = 0;
  for (size_t i = 0; i < n; i++) {
    if (value_index_contains(vi, ti[i].number)) continue; /* the hook added it at open */
    void *data = NULL;
    size_t size = 0;
    uint64_t off = 0;
    err_t e;
    int r = lsm_table_read_meta(el->db, ti[i].number, VALUE_HOOK_META_NAME, &data, &size, &off, &e);
    value_filter_t *f = NULL;
    if (r == BFH_OK) r = value_filter_deserialize(data, size, &f, &e);
    free(data);
    if (r != BFH_OK) {
      /* No usable filter: the table stays unindexed and every search scans it. */
      el->open_stats.tables_unindexed++;
      continue;
    }
    char path[4096];
    lsm_table_path(el->db, ti[i].number, path, sizeof path);
    numbers[m] = ti[i].number;
    filters[m] = f;
    paths[m] = strdup(path);
    offsets[m] = off;
    if (!paths[m]) {
      value_filter_destroy(f);
      rc = err_set(err, BFH_E_NOMEM, "value index rebuild: out of memory");
      goto out;
    }
    m++;
  }
  el->open_stats.read_ns = now_ns() - t0;
  size_t added = 0;
  err_t e;
  value_index_add_batch(vi, m, numbers, filters, (const char *const *)paths, offsets, &added, &e);
  el->open_stats.tables_indexed = added;
  el->open_stats.tables_unindexed += m - added;
  for (size_t i = 0; i < m; i++) free(paths[i]);
out:
  free(numbers);
  free(filters);
  if (paths) free(paths);
  free(offsets);
  lsm_snapshot_release(snap);
  el->open_stats.rebuild_ns = now_ns() - t0;
  el->open_stats.tables_live = n;
  return rc;
}

int engine_lsm_open(const char *path, const bfh_options *opt, value_index_t *index, engine_t **e,
                    err_t *err) {
  return engine_lsm_open_io(path, opt, NULL, index, e, err);
}

int engine_lsm_open_io(const char *path, const bfh_options *opt, struct lsm_io *io,
                       value_index_t *index, engine_t **e, err_t *err) {
  engine_lsm_t *el = calloc(1, sizeof *el);
  if (!el) return err_set(err, BFH_E_NOMEM, "%s: out of memory", path);
  el->base.ops = &lsm_ops;
  el->base.index = index;
  lsm_options_t lo;
  lsm_options_init(&lo);
  lo.create_if_missing = opt->create_if_missing;
  lo.memtable_bytes = opt->memtable_bytes;
  lo.table_bytes = opt->table_bytes;
  lo.key_bits_per_key = opt->key_bits_per_key;
  lo.sync = opt->sync;
  lo.io = io;
  if (index) {
    el->hook = value_hook_create(index, path, err);
    if (!el->hook) {
      free(el);
      return err_prefix(err, "%s: ", path);
    }
    lo.hook = value_hook_table_hook(el->hook);
  }
  int rc = lsm_open(path, &lo, &el->db, err);
  if (rc != BFH_OK) {
    value_hook_destroy(el->hook);
    free(el);
    return rc;
  }
  if (index) {
    value_index_set_locator(index, locate_filter, el);
    rc = rebuild_index(el, err);
    if (rc != BFH_OK) {
      e_close(&el->base);
      return err_prefix(err, "%s: ", path);
    }
  }
  *e = &el->base;
  return BFH_OK;
}

void engine_lsm_get_open_stats(const engine_t *e, engine_lsm_open_stats_t *st) {
  *st = ((const engine_lsm_t *)e)->open_stats;
}

int engine_lsm_wait_idle(engine_t *e, err_t *err) {
  return lsm_wait_idle(((engine_lsm_t *)e)->db, err);
}

lsm_db_t *engine_lsm_db(engine_t *e) {
  return ((engine_lsm_t *)e)->db;
}

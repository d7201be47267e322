/* engine_t over bfh's own LSM engine (lsm/db.h), with the value-filter table-build hook.
 *
 * The hook (value_hook.c) reports every table the engine builds, installs and drops to
 * index_sync. At open the engine reports its live tables; index_sync reads each one's
 * "bfh.block_filter" meta block at once (read_blocks_only below) and its "bfh.value_filter"
 * meta block in the background (read_leaf; index_sync.h "Loading at open"). A table whose
 * filter is missing or unreadable gets no leaf, and search then reads it always (it is never
 * skipped). A view is an lsm snapshot.
 */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "filters/value_terms.h"
#include "lsm/db.h"
#include "lsm/filename.h"
#include "lsm/internal_key.h"
#include "lsm/repair.h"
#include "lsm_hooks/engines/at_rest.h"
#include "lsm_hooks/engines/engine.h"
#include "lsm_hooks/engines/lsm/engine_lsm.h"
#include "lsm_hooks/engines/engine_detect.h"
#include "lsm_hooks/engines/lsm/table_filters.h"
#include "lsm_hooks/engines/lsm/value_hook.h"
#include "index/index_sync.h"
#include "util/clock.h"

typedef struct engine_lsm {
  engine_t base;
  lsm_db_t *db;
  index_sync_t *sync; /* borrowed; NULL when value filters are off */
  value_hook_t *hook; /* NULL when value filters are off */
  engine_lsm_open_stats_t open_stats;
  int open_stats_done; /* open_stats filled in (the loading at open ended) */
  atomic_int wrote;    /* a put or delete went through this handle: close writes BFH-INDEX
                          (set by writers on any thread, read at close) */
  char *path;          /* the database directory (owned) */
  env_t *io;           /* borrowed */
  uint64_t open_t0;    /* when the indexing at open began */
} engine_lsm_t;

struct engine_view {
  lsm_snapshot_t *snap;
  size_t n;
  engine_table_t tables[]; /* n, in the view's one allocation */
};

/* Does this handle keep the persisted index (the lean layout with maps)? */
static int persists(const engine_lsm_t *el) {
  return el->sync && index_sync_persists(el->sync);
}

/* Writes BFH-INDEX (persisted_index.h) for the live tables that have a leaf, from a handle
   that wrote. Best effort: a file not written leaves the old one (or none), which the next
   open binds table by table. */
static void write_persisted(engine_lsm_t *el) {
  lsm_snapshot_t *snap = lsm_snapshot_acquire(el->db);
  if (!snap) return;
  const lsm_table_info_t *ti;
  size_t n = lsm_snapshot_tables(snap, &ti);
  index_persisted_table_t *t = calloc(n ? n : 1, sizeof *t);
  size_t nt = 0;
  for (size_t i = 0; t && i < n; i++) {
    char *tpath = lsm_table_path(el->db, ti[i].number);
    err_t e;
    void *head = NULL;
    size_t size = 0;
    uint64_t stamp = 0;
    int stamped = tpath && index_sync_table_stamp(el->io, tpath, &stamp, &e) == BFH_OK;
    free(tpath);
    if (!stamped) continue; /* no memory: the table is left out, as one not written */
    if (lsm_table_read_meta(el->db, ti[i].number, VALUE_BLOCK_MAP_HEAD_NAME, &head, &size, NULL,
                            &e) != BFH_OK)
      continue;
    t[nt++] = (index_persisted_table_t){ti[i].number, ti[i].size, stamp, head, size};
  }
  err_t e;
  if (t) (void)index_sync_persisted_write(el->sync, el->io, el->path, 0, t, nt, &e);
  for (size_t i = 0; t && i < nt; i++) free((void *)t[i].head);
  free(t);
  lsm_snapshot_release(snap);
}

/* At open: binds BFH-INDEX, if there is one, to the live tables and attaches it to the
   value index. A damaged file is counted (block_filters_damaged) and left unused. */
static void open_persisted(engine_lsm_t *el) {
  if (!persists(el)) return;
  index_persisted_t *x = NULL;
  err_t e;
  if (index_sync_persisted_open(el->sync, el->io, el->path, 0, &x) != BFH_OK) return;
  lsm_snapshot_t *snap = lsm_snapshot_acquire(el->db);
  if (snap) {
    const lsm_table_info_t *ti;
    size_t n = lsm_snapshot_tables(snap, &ti);
    for (size_t i = 0; i < n; i++) {
      char *tpath = lsm_table_path(el->db, ti[i].number);
      uint64_t stamp;
      if (tpath && index_sync_table_stamp(el->io, tpath, &stamp, &e) == BFH_OK)
        (void)index_sync_persisted_bind(x, ti[i].number, ti[i].size, stamp);
      free(tpath);
    }
    lsm_snapshot_release(snap);
  }
  index_sync_persisted_attach(el->sync, x);
}

static int e_close(engine_t *e, err_t *err) {
  engine_lsm_t *el = (engine_lsm_t *)e;
  if (!el) return BFH_OK;
  if (atomic_load_explicit(&el->wrote, memory_order_relaxed) && persists(el)) {
    /* The live tables settle first (a compaction installing while the file is written would
       leave its tables out of it), then every live table's leaf goes in, then the file. */
    lsm_stop_background(el->db);
    (void)index_sync_loader_wait(el->sync, NULL, NULL);
    write_persisted(el);
  }
  if (el->sync) index_sync_loader_stop(el->sync); /* it reads the tables through el->db */
  int rc = lsm_close_err(el->db, err);
  value_hook_destroy(el->hook);
  free(el->path);
  free(el);
  return rc;
}

static int e_put(engine_t *e, const void *key, size_t key_len, const void *val, size_t val_len,
                 err_t *err) {
  atomic_store_explicit(&((engine_lsm_t *)e)->wrote, 1, memory_order_relaxed);
  return lsm_put(((engine_lsm_t *)e)->db, key, key_len, val, val_len, err);
}

static int e_del(engine_t *e, const void *key, size_t key_len, err_t *err) {
  atomic_store_explicit(&((engine_lsm_t *)e)->wrote, 1, memory_order_relaxed);
  return lsm_delete(((engine_lsm_t *)e)->db, key, key_len, err);
}

/* Reads the newest version, also under a search's view (engine.h); under a view, the blocks
   that view's value scans matched in are parsed from the copies it kept instead of read again
   (lsm_snapshot_get_latest): the answer is lsm_get's. */
static int e_get(engine_t *e, engine_view_t *view, const void *key, size_t key_len, void **val,
                 size_t *val_len, err_t *err) {
  if (view) return lsm_snapshot_get_latest(view->snap, key, key_len, val, val_len, err);
  return lsm_get(((engine_lsm_t *)e)->db, key, key_len, val, val_len, err);
}

static int e_flush(engine_t *e, err_t *err) {
  engine_lsm_t *el = (engine_lsm_t *)e;
  int rc = lsm_flush(el->db, err);
  /* The background thread applies the flush's change to the index after the memtable is
     gone: a flush returns with it applied. */
  if (rc == BFH_OK && el->sync) index_sync_apply(el->sync);
  return rc;
}

static int e_view_acquire(engine_t *e, engine_view_t **out, err_t *err) {
  engine_lsm_t *el = (engine_lsm_t *)e;
  lsm_snapshot_t *snap = lsm_snapshot_acquire(el->db);
  if (!snap) return err_set(err, BFH_E_NOMEM, "search: out of memory for a snapshot");
  const lsm_table_info_t *ti;
  size_t n = lsm_snapshot_tables(snap, &ti);
  engine_view_t *v = malloc(sizeof *v + n * sizeof v->tables[0]);
  if (!v) {
    lsm_snapshot_release(snap);
    return err_set(err, BFH_E_NOMEM, "search: out of memory for a view");
  }
  v->snap = snap;
  v->n = n;
  for (size_t i = 0; i < v->n; i++) {
    v->tables[i].number = ti[i].number;
    v->tables[i].size = ti[i].size;
    v->tables[i].level = ti[i].level;
    v->tables[i].max_seq = ti[i].max_seq == LSM_SEQ_UNKNOWN ? ENGINE_SEQ_UNKNOWN : ti[i].max_seq;
  }
  *out = v;
  return BFH_OK;
}

static void e_view_release(engine_t *e, engine_view_t *v) {
  (void)e;
  if (!v) return;
  lsm_snapshot_release(v->snap);
  free(v);
}

static size_t e_view_tables(const engine_view_t *v, const engine_table_t **tables) {
  *tables = v->tables;
  return v->n;
}

typedef struct match_ctx {
  const engine_value_test_t *test;
  engine_match_fn fn;
  void *arg;
} match_ctx_t;

static int visit_match(void *arg, const void *key, size_t key_len, const void *val, size_t val_len,
                       uint64_t seq, int type) {
  match_ctx_t *m = arg;
  if (!engine_value_test_passes(m->test, type == LSM_TYPE_VALUE, val, val_len)) return 0;
  return m->fn(m->arg, key, key_len, seq);
}

static void add_stats(engine_scan_stats_t *st, const lsm_scan_stats_t *ls) {
  if (!st) return;
  st->entries += ls->entries;
  st->bytes_read += ls->bytes_read;
}

/* A whole-value test scans for the value's bytes (lsm_snapshot_scan_value); a predicate
   decodes and tests every entry. */
static int e_scan_table(engine_t *e, engine_view_t *v, uint64_t number,
                        const engine_value_test_t *test, engine_match_fn fn, void *arg,
                        engine_scan_stats_t *st, err_t *err) {
  (void)e;
  match_ctx_t m = {test, fn, arg};
  lsm_scan_stats_t ls = {0, 0};
  int rc = test->match ? lsm_snapshot_scan_table(v->snap, number, visit_match, &m, &ls, err)
                       : lsm_snapshot_scan_value(v->snap, number, test->val, test->val_len,
                                                 visit_match, &m, &ls, err);
  add_stats(st, &ls);
  return rc;
}

static int e_scan_memtables(engine_t *e, engine_view_t *v, const engine_value_test_t *test,
                            engine_match_fn fn, void *arg, engine_scan_stats_t *st, err_t *err) {
  (void)e;
  match_ctx_t m = {test, fn, arg};
  lsm_scan_stats_t ls = {0, 0};
  int rc = lsm_snapshot_scan_memtables(v->snap, visit_match, &m, &ls, err);
  if (st) st->entries += ls.entries;
  return rc;
}

/* A whole-value test looks for the value's bytes in the blocks; a predicate for its needles,
   if it has any, else it decodes and tests every entry of them. */
static int e_scan_blocks(engine_t *e, engine_view_t *v, uint64_t number, const block_ref_t *refs,
                         size_t n, const engine_value_test_t *test, engine_match_fn fn, void *arg,
                         engine_scan_stats_t *st, err_t *err) {
  (void)e;
  match_ctx_t m = {test, fn, arg};
  lsm_scan_stats_t ls = {0, 0};
  int rc = test->match ? lsm_snapshot_scan_blocks(v->snap, number, refs, n, test->needles,
                                                  test->nneedles, visit_match, &m, &ls, err)
                       : lsm_snapshot_scan_value_blocks(v->snap, number, refs, n, test->val,
                                                        test->val_len, visit_match, &m, &ls, err);
  add_stats(st, &ls);
  return rc;
}

static int e_find_memtables(engine_t *e, engine_view_t *v, const engine_value_test_t *test,
                            uint64_t hash, engine_match_fn fn, void *arg, engine_scan_stats_t *st,
                            err_t *err) {
  (void)e;
  match_ctx_t m = {test, fn, arg};
  lsm_scan_stats_t ls = {0, 0};
  int rc = test->match ? lsm_snapshot_find_memtables_hash(v->snap, hash, visit_match, &m, &ls, err)
                       : lsm_snapshot_find_memtables_value(v->snap, test->val, test->val_len, hash,
                                                           visit_match, &m, &ls, err);
  st->entries += ls.entries;
  return rc;
}

/* ---- Ordered iteration: lsm_iter_t (a consistent view taken at its creation) ---------- */

typedef struct lsm_engine_iter {
  engine_iter_t base;
  lsm_iter_t *it;
} lsm_engine_iter_t;

#define LIT(it) (((const lsm_engine_iter_t *)(it))->it)

static void it_destroy(engine_iter_t *it) {
  if (!it) return;
  lsm_iter_destroy(LIT(it));
  free(it);
}
static void it_seek_first(engine_iter_t *it) {
  lsm_iter_seek_first(LIT(it));
}
static void it_seek(engine_iter_t *it, const void *key, size_t key_len) {
  lsm_iter_seek(LIT(it), key, key_len);
}
static int it_valid(const engine_iter_t *it) {
  return lsm_iter_valid(LIT(it));
}
static void it_next(engine_iter_t *it) {
  lsm_iter_next(LIT(it));
}
static const void *it_key(const engine_iter_t *it, size_t *len) {
  return lsm_iter_key(LIT(it), len);
}
static const void *it_value(const engine_iter_t *it, size_t *len) {
  return lsm_iter_value(LIT(it), len);
}
static int it_status(const engine_iter_t *it, err_t *err) {
  return lsm_iter_status(LIT(it), err);
}

static const engine_iter_ops_t lsm_iter_ops = {it_destroy, it_seek_first, it_seek,  it_valid,
                                               it_next,    it_key,        it_value, it_status};

static int e_iter_create(engine_t *e, engine_iter_t **out, err_t *err) {
  lsm_engine_iter_t *it = calloc(1, sizeof *it);
  if (it) it->it = lsm_iter_create(((engine_lsm_t *)e)->db);
  if (!it || !it->it) {
    free(it);
    return err_set(err, BFH_E_NOMEM, "iterator: out of memory");
  }
  it->base.ops = &lsm_iter_ops;
  *out = &it->base;
  return BFH_OK;
}

static void e_stats(engine_t *e, bfh_db_stats *st) {
  lsm_stats_t ls;
  lsm_get_stats(((engine_lsm_t *)e)->db, &ls);
  st->bytes_written = ls.bytes_written;
  st->memtable_index_bytes = ls.memtable_index_bytes;
  st->block_cache_hits = ls.block_cache_hits;
  st->block_cache_misses = ls.block_cache_misses;
  st->block_cache_bytes = ls.block_cache_bytes;
}

typedef struct hash_ctx {
  uint64_t seed;
  const value_terms_t *terms; /* the items each value is hashed as */
  void (*fn)(void *arg, uint64_t hash);
  void *arg;
  int rc; /* BFH_E_NOMEM once an extraction failed */
} hash_ctx_t;

static int visit_hash(void *arg, const void *key, size_t key_len, const void *val, size_t val_len,
                      uint64_t seq, int type) {
  (void)key, (void)key_len, (void)seq;
  hash_ctx_t *h = arg;
  if (type == LSM_TYPE_VALUE &&
      value_terms_hash(h->terms, val, val_len, h->seed, 0, h->fn, h->arg) < 0)
    h->rc = BFH_E_NOMEM;
  return h->rc != BFH_OK;
}

static int e_table_hashes(engine_t *e, engine_view_t *v, uint64_t number, uint64_t seed,
                          void (*fn)(void *arg, uint64_t hash), void *arg, engine_scan_stats_t *st,
                          err_t *err) {
  engine_lsm_t *el = (engine_lsm_t *)e;
  hash_ctx_t h = {seed, index_sync_terms(el->sync), fn, arg, BFH_OK};
  lsm_scan_stats_t ls = {0, 0};
  int rc = lsm_snapshot_scan_table(v->snap, number, visit_hash, &h, &ls, err);
  if (rc == BFH_OK && h.rc != BFH_OK)
    rc = err_set(err, h.rc, "table %llu: out of memory for its values' terms",
                 (unsigned long long)number);
  if (st) {
    st->entries += ls.entries;
    st->bytes_read += ls.bytes_read;
  }
  return rc;
}

static int e_read_meta(engine_t *e, engine_view_t *v, uint64_t number, const char *name,
                       uint64_t off, size_t len, void *buf, err_t *err) {
  (void)e;
  return lsm_snapshot_read_meta_range(v->snap, number, name, off, len, buf, err);
}

static void e_read_ahead(engine_t *e, engine_view_t *v, const block_ahead_t *r, size_t n) {
  (void)e;
  lsm_snapshot_read_ahead(v->snap, r, n);
}

static void e_get_ahead(engine_t *e, const key_ref_t *keys, size_t n) {
  lsm_get_ahead(((engine_lsm_t *)e)->db, keys, n);
}

static const engine_ops_t lsm_ops = {ENGINE_OPS_FIELDS("lsm"), .table_hashes = e_table_hashes,
                                     .read_meta = e_read_meta, .read_ahead = e_read_ahead,
                                     .get_ahead = e_get_ahead};

/* table_filters_read_fn: through the database's table cache. */
static int read_meta(void *arg, uint64_t number, const char *name, void **data, size_t *size,
                     uint64_t *offset, err_t *err) {
  engine_lsm_t *el = arg;
  return lsm_table_read_meta(el->db, number, name, data, size, offset, err);
}

static table_filters_t filters_of(engine_lsm_t *el) {
  return (table_filters_t){read_meta, el, el->sync, el->path};
}

/* index_source_t.read_blocks: the block filter alone, ahead of the leaf. */
static int read_blocks_only(void *ctx, uint64_t number, const value_index_params_t *p,
                            block_filter_t **out, err_t *err) {
  (void)p;
  table_filters_t tf = filters_of(ctx);
  return table_filters_read_blocks(&tf, number, out, err);
}

/* index_source_t.read_leaf: the filters stored in the table's meta blocks. */
static int read_leaf(void *ctx, uint64_t number, const value_index_params_t *p,
                     index_leaf_read_t *out, err_t *err) {
  table_filters_t tf = filters_of(ctx);
  return table_filters_read_leaf(&tf, number, p, out, err);
}

static void fill_open_stats(engine_lsm_t *el, uint64_t elapsed_ns);

/* The live tables were reported at open (lsm/table_hook.h). With block filters, their block
   filters are read now and their leaves in the background (index_sync.h "Loading at open"):
   the first search reads each table through its block filter until its leaf is in. Without,
   the leaves are read now. The open statistics are filled in when the loading ends
   (engine_lsm_get_open_stats waits for it). */
static int index_live_tables(engine_lsm_t *el, err_t *err) {
  el->open_t0 = clock_now_ns();
  index_source_t src = {.read_leaf = read_leaf, .read_blocks = read_blocks_only, .ctx = el};
  int rc = index_sync_set_source(el->sync, &src, err);
  if (rc == BFH_OK && index_sync_params(el->sync)->block_bits) {
    rc = index_sync_load_blocks(el->sync, err);
    if (rc == BFH_OK) rc = index_sync_loader_start(el->sync, err);
    return rc;
  }
  if (rc == BFH_OK) rc = index_sync_run(el->sync, INDEX_RUN_ALL, 0, err);
  fill_open_stats(el, clock_now_ns() - el->open_t0);
  return rc;
}

/* What indexing the live tables at open cost, once it is done. */
static void fill_open_stats(engine_lsm_t *el, uint64_t elapsed_ns) {
  index_sync_stats_t st;
  index_sync_get_stats(el->sync, &st);
  el->open_stats.read_ns = st.read_ns;
  el->open_stats.tables_indexed = st.tables_read;
  el->open_stats.tables_unindexed = st.tables_unreadable + st.add_errors;
  lsm_snapshot_t *snap = lsm_snapshot_acquire(el->db);
  if (snap) {
    const lsm_table_info_t *ti;
    el->open_stats.tables_live = lsm_snapshot_tables(snap, &ti);
    lsm_snapshot_release(snap);
  }
  el->open_stats.rebuild_ns = elapsed_ns;
  el->open_stats_done = 1;
}

int engine_lsm_open(const char *path, const bfh_options *opt, struct env *io, index_sync_t *sync,
                    engine_t **e, err_t *err) {
  return engine_lsm_open_replaying(path, opt, io, sync, NULL, NULL, e, err);
}

typedef struct replay_ctx {
  engine_replay_fn fn;
  void *arg;
} replay_ctx_t;

static int replay_one(void *arg, const void *key, size_t key_len, const void *val, size_t val_len,
                      uint64_t seq, int type) {
  (void)seq;
  replay_ctx_t *r = arg;
  return r->fn(r->arg, key, key_len, val, val_len, type == LSM_TYPE_VALUE);
}

int engine_lsm_open_replay(const char *path, const bfh_options *opt, struct env *io,
                           index_sync_t *sync, engine_replay_fn replay, void *replay_arg,
                           engine_t **e, err_t *err) {
  replay_ctx_t r = {replay, replay_arg}; /* replays run inside the open only */
  return engine_lsm_open_replaying(path, opt, io, sync, replay ? replay_one : NULL, &r, e, err);
}

/* The own engine's data files: CURRENT, the manifests, the logs and the tables (not LOCK,
   IDENTITY, CURRENT.tmp or bfh's files beside them). */
static int lsm_data_file(const char *name) {
  uint64_t number;
  lsm_file_type_t type;
  if (!lsm_filename_parse(name, &number, &type)) return 0;
  return type == LSM_FILE_CURRENT || type == LSM_FILE_MANIFEST || type == LSM_FILE_LOG ||
         type == LSM_FILE_TABLE;
}

int engine_lsm_at_rest(const char *path, struct env *io, char **id, err_t *err) {
  return at_rest_id(path, io, lsm_data_file, id, err);
}

int engine_lsm_open_replaying(const char *path, const bfh_options *opt, struct env *io,
                              index_sync_t *sync, lsm_visit_fn replay, void *replay_arg,
                              engine_t **e, err_t *err) {
  int rc = engine_detect_check(path, ENGINE_DIR_LSM, err); /* another engine's: touch nothing */
  if (rc != BFH_OK) return rc;
  engine_lsm_t *el = calloc(1, sizeof *el);
  if (!el) return err_set(err, BFH_E_NOMEM, "%s: out of memory", path);
  el->base.ops = &lsm_ops;
  el->sync = sync;
  el->io = io;
  if (!(el->path = strdup(path))) {
    free(el);
    return err_set(err, BFH_E_NOMEM, "%s: out of memory", path);
  }
  lsm_options_t lo;
  lsm_options_init(&lo);
  lo.create_if_missing = opt->create_if_missing;
  lo.memtable_bytes = opt->memtable_bytes;
  lo.table_bytes = opt->table_bytes;
  lo.key_bits_per_key = opt->key_bits_per_key;
  lo.sync = opt->sync;
  lo.block_cache_bytes = opt->block_cache_bytes;
  lo.mmap_reads = opt->mmap_reads;
  lo.io = io;
  lo.memtable_value_index = opt->value_filters && opt->memtable_index;
  lo.replay = replay;
  lo.replay_arg = replay_arg;
  lo.marker_file = ENGINE_PARAMS_FILE; /* written after the first open: CURRENT existed */
  if (sync) {
    const value_index_params_t *p = index_sync_params(sync);
    lo.memtable_value_seed = p->seed; /* a search's one hash finds the memtables' entries */
    lo.memtable_value_terms = index_sync_terms(sync); /* and a put's items are the filters' */
    el->hook = value_hook_create(sync, p->m, p->k, p->seed, p->block_bits, path, err);
    if (!el->hook) {
      free(el->path);
      free(el);
      return err_prefix(err, "%s: ", path);
    }
    lo.hook = value_hook_table_hook(el->hook);
  }
  rc = lsm_open(path, &lo, &el->db, err);
  if (rc != BFH_OK) {
    value_hook_destroy(el->hook);
    free(el->path);
    free(el);
    return rc;
  }
  if (sync) {
    index_sync_use_applier(sync); /* the background thread, through the hook's changed() */
    open_persisted(el);
    rc = index_live_tables(el, err);
    if (rc != BFH_OK) {
      e_close(&el->base, NULL);
      return err_prefix(err, "%s: ", path);
    }
  }
  *e = &el->base;
  return BFH_OK;
}

int engine_lsm_repair_lock(const char *path, void **lock, err_t *err) {
  *lock = NULL;
  int rc = lsm_repair_precheck(path, env_default(), err);
  if (rc != BFH_OK) return rc;
  char *p = lsm_filename_lock(path);
  rc = p ? env_lock(env_default(), p, (env_lock_t **)lock, err)
         : err_set(err, BFH_E_NOMEM, "%s/LOCK: no memory for its path", path);
  free(p);
  if (rc == BFH_E_BUSY) err_set(err, rc, "%s: database is open elsewhere (LOCK held)", path);
  return rc;
}

void engine_lsm_repair_unlock(void *lock) {
  env_unlock(lock);
}

int engine_lsm_repair(const char *path, const bfh_options *opt, bfh_repair_report *rep,
                      err_t *err) {
  return engine_lsm_repair_items(path, opt, NULL, rep, err);
}

int engine_lsm_repair_items(const char *path, const bfh_options *opt, const value_terms_t *terms,
                            bfh_repair_report *rep, err_t *err) {
  value_hook_t *hook = NULL;
  lsm_options_t lo;
  lsm_options_init(&lo);
  lo.table_bytes = opt->table_bytes;
  lo.key_bits_per_key = opt->key_bits_per_key;
  if (opt->value_filters) {
    /* Every table repair writes gets its filter, with the database's m, k and seed (which
       api/repair.c read into opt); there is no index to report to. */
    if (!(hook = value_hook_create(NULL, opt->value_filter_bits, opt->value_filter_hashes,
                                   opt->hash_seed, opt->block_filter_bits_per_value, path, err)))
      return err->code ? err->code : BFH_E_NOMEM;
    value_hook_set_terms(hook, terms); /* the database's items, as its other tables' */
    lo.hook = value_hook_table_hook(hook);
  }
  lsm_repair_stats_t st;
  memset(&st, 0, sizeof st);
  int rc = lsm_repair(path, &lo, &st, err);
  value_hook_destroy(hook);
  *rep = (bfh_repair_report){.logs = st.logs,
                             .log_records = st.log_records,
                             .log_bytes_dropped = st.log_bytes_dropped,
                             .tables = st.tables,
                             .tables_damaged = st.tables_damaged,
                             .tables_lost = st.tables_lost,
                             .blocks_dropped = st.blocks_dropped,
                             .keys_out = st.keys_out,
                             .tables_out = st.tables_out,
                             .files_moved = st.files_moved};
  return rc;
}

void engine_lsm_get_open_stats(const engine_t *e, engine_lsm_open_stats_t *st) {
  engine_lsm_t *el = (engine_lsm_t *)e;
  if (el->sync && !el->open_stats_done) {
    uint64_t ns = 0;
    (void)index_sync_loader_wait(el->sync, &ns, NULL);
    fill_open_stats(el, ns);
  }
  *st = el->open_stats;
}

int engine_lsm_wait_idle(engine_t *e, err_t *err) {
  return lsm_wait_idle(((engine_lsm_t *)e)->db, err);
}

lsm_db_t *engine_lsm_db(engine_t *e) {
  return ((engine_lsm_t *)e)->db;
}

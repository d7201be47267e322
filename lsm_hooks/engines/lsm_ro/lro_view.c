/* Views, the scans of a search and point lookups (engine_ops_t) over a refreshed state: a view
   is a state pinned for one search (and its epoch in index_sync); every table it lists is held
   open by the state, so a search never finds one gone and never starts over. */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "filters/blocked_filter.h"
#include "lsm/internal_key.h"
#include "lsm_hooks/engines/lsm_ro/lro_internal.h"

/* ---- Views -------------------------------------------------------------------------------- */

int lro_view_index_state(lro_t *r, const lro_state_t *s, uint64_t *epoch, err_t *err) {
  index_table_t *live = malloc((s->ntables + 1) * sizeof *live);
  if (!live) return err_set(err, BFH_E_NOMEM, "%s: no memory", r->path);
  for (size_t i = 0; i < s->ntables; i++)
    live[i] = (index_table_t){s->tables[i].number, s->tables[i].size, s->tables[i].id};
  int rc = index_sync_tables_listed(r->sync, live, s->ntables, epoch, err);
  free(live);
  return rc;
}

int lro_view_load(lro_t *r, int at_open, err_t *err) {
  /* After the open's loading, as before it: a view indexes the tables made since itself. */
  if (!index_sync_params(r->sync)->block_bits || (!at_open && !index_sync_loader_active(r->sync)))
    return index_sync_run(r->sync, INDEX_RUN_ALL, 0, err);
  if (!index_sync_pending(r->sync, 0)) return BFH_OK;
  int rc = index_sync_load_blocks(r->sync, err);
  if (rc == BFH_OK) rc = index_sync_loader_start(r->sync, err);
  return rc;
}

int lro_view_acquire(engine_t *e, engine_view_t **view, err_t *err) {
  lro_t *r = (lro_t *)e;
  engine_view_t *v = calloc(1, sizeof *v);
  if (!v) return err_set(err, BFH_E_NOMEM, "%s: no memory for a view", r->path);
  block_memo_init(&v->memo);
  pthread_mutex_lock(&r->mu);
  int rc = lro_refresh(r, err);
  if (rc == BFH_OK) {
    v->s = r->state;
    atomic_fetch_add(&r->state->refs, 1);
    /* Listed under mu, so that index_sync sees the versions in order. */
    if (r->sync) rc = lro_view_index_state(r, r->state, &v->epoch, err);
  }
  pthread_mutex_unlock(&r->mu);
  /* New tables (made since the last view) get their filters now. */
  if (rc == BFH_OK && r->sync) rc = lro_view_load(r, 0, err);
  if (rc != BFH_OK) {
    lro_view_release(e, v);
    return rc;
  }
  *view = v;
  return BFH_OK;
}

void lro_view_release(engine_t *e, engine_view_t *v) {
  lro_t *r = (lro_t *)e;
  if (!v) return;
  if (r->sync && v->epoch) index_sync_view_unpin(r->sync, v->epoch);
  block_memo_release(&v->memo);
  lro_state_unref(v->s);
  free(v);
}

size_t lro_view_tables(const engine_view_t *v, const engine_table_t **tables) {
  *tables = v->s->list;
  return v->s->ntables;
}

/* ---- Scans -------------------------------------------------------------------------------- */

typedef struct match {
  const engine_value_test_t *test;
  engine_match_fn fn;
  void *arg;
  uint64_t max_seq; /* entries newer than this are not the state's (memtables) */
} match_t;

static int visit_match(void *arg, const void *key, size_t key_len, const void *val, size_t val_len,
                       uint64_t seq, int type) {
  match_t *m = arg;
  if (seq > m->max_seq) return 0;
  if (!engine_value_test_passes(m->test, type == LSM_TYPE_VALUE, val, val_len)) return 0;
  return m->fn(m->arg, key, key_len, seq);
}

/* Table `number` of v's state, or an error naming it (a search asks only for its view's). */
static int view_table(lro_t *r, const engine_view_t *v, uint64_t number, table_t **t, err_t *err) {
  const lro_table_t *lt = lro_state_table(v->s, number);
  if (!lt)
    return err_set(err, BFH_E_INVALID, "%s: table %06llu is not in the search's view", r->path,
                   (unsigned long long)number);
  return lro_table_reader(lt, t, err);
}

static void add_stats(engine_scan_stats_t *st, const lsm_scan_stats_t *ls) {
  if (!st) return;
  st->entries += ls->entries;
  st->bytes_read += ls->bytes_read;
}

/* A whole-value test scans for the value's bytes; a predicate decodes and tests every entry. */
int lro_scan_table(engine_t *e, engine_view_t *v, uint64_t number, const engine_value_test_t *test,
                   engine_match_fn fn, void *arg, engine_scan_stats_t *st, err_t *err) {
  table_t *t = NULL;
  int rc = view_table((lro_t *)e, v, number, &t, err);
  if (rc != BFH_OK) return rc;
  match_t m = {test, fn, arg, LSM_MAX_SEQ};
  lsm_scan_stats_t ls = {0, 0};
  rc = test->match ? table_scan(t, visit_match, &m, &ls, err)
                   : table_scan_value_kept(t, test->val, test->val_len, visit_match, &m, &ls,
                                           &v->memo, err);
  add_stats(st, &ls);
  return rc;
}

/* A whole-value test looks for the value's bytes in the blocks; a predicate for its needles,
   if it has any, else it decodes and tests every entry of them. */
int lro_scan_blocks(engine_t *e, engine_view_t *v, uint64_t number, const block_ref_t *refs,
                    size_t n, const engine_value_test_t *test, engine_match_fn fn, void *arg,
                    engine_scan_stats_t *st, err_t *err) {
  table_t *t = NULL;
  int rc = view_table((lro_t *)e, v, number, &t, err);
  if (rc != BFH_OK) return rc;
  match_t m = {test, fn, arg, LSM_MAX_SEQ};
  lsm_scan_stats_t ls = {0, 0};
  if (!test->match)
    rc = table_scan_value_blocks_kept(t, refs, n, test->val, test->val_len, visit_match, &m, &ls,
                                      &v->memo, NULL, err);
  else if (test->nneedles)
    rc = table_scan_blocks_containing(t, refs, n, test->needles, test->nneedles, visit_match, &m,
                                      &ls, &v->memo, NULL, err);
  else
    rc = table_scan_blocks(t, refs, n, visit_match, &m, &ls, NULL, err);
  add_stats(st, &ls);
  return rc;
}

int lro_scan_memtables(engine_t *e, engine_view_t *v, const engine_value_test_t *test,
                       engine_match_fn fn, void *arg, engine_scan_stats_t *st, err_t *err) {
  (void)e, (void)err;
  lsm_scan_stats_t ls = {0, 0};
  for (size_t i = 0; i < v->s->nmems; i++) {
    match_t m = {test, fn, arg, v->s->mems[i].max_seq};
    (void)memtable_scan(v->s->mems[i].mem, visit_match, &m, &ls);
  }
  if (st) st->entries += ls.entries;
  return BFH_OK;
}

/* A whole-value test looks its value up; a predicate its item hash (a memtable without
   value index is scanned whole). */
int lro_find_memtables(engine_t *e, engine_view_t *v, const engine_value_test_t *test,
                       uint64_t hash, engine_match_fn fn, void *arg, engine_scan_stats_t *st,
                       err_t *err) {
  (void)e, (void)err;
  lsm_scan_stats_t ls = {0, 0};
  for (size_t i = 0; i < v->s->nmems; i++) {
    const memtable_t *mem = v->s->mems[i].mem;
    match_t m = {test, fn, arg, v->s->mems[i].max_seq};
    if (!test->match)
      (void)memtable_scan_value_hashed(mem, test->val, test->val_len, hash, visit_match, &m, &ls);
    else if (memtable_scan_hash(mem, hash, visit_match, &m, &ls) == ST_E_INVALID)
      (void)memtable_scan(mem, visit_match, &m, &ls);
  }
  if (st) st->entries += ls.entries;
  return BFH_OK;
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

int lro_table_hashes(engine_t *e, engine_view_t *v, uint64_t number, uint64_t seed,
                     void (*fn)(void *arg, uint64_t hash), void *arg, engine_scan_stats_t *st,
                     err_t *err) {
  table_t *t = NULL;
  int rc = view_table((lro_t *)e, v, number, &t, err);
  if (rc != BFH_OK) return rc;
  hash_ctx_t h = {seed, index_sync_terms(((lro_t *)e)->sync), fn, arg, BFH_OK};
  lsm_scan_stats_t ls = {0, 0};
  rc = table_scan(t, visit_hash, &h, &ls, err);
  add_stats(st, &ls);
  if (rc == BFH_OK && h.rc != BFH_OK)
    rc = err_set(err, h.rc, "table %llu: out of memory for its values' terms",
                 (unsigned long long)number);
  return rc;
}

int lro_read_meta(engine_t *e, engine_view_t *v, uint64_t number, const char *name, uint64_t off,
                  size_t len, void *buf, err_t *err) {
  table_t *t = NULL;
  int rc = view_table((lro_t *)e, v, number, &t, err);
  return rc == BFH_OK ? table_read_meta_range(t, name, off, len, buf, NULL, err) : rc;
}

/* ---- Point lookups ------------------------------------------------------------------------ */

/* A copy of a found value into *val (malloc'd, non-NULL even when empty). */
static int copy_value(const lro_t *r, const lsm_lookup_t *lk, void **val, size_t *val_len,
                      err_t *err) {
  void *p = malloc(lk->val_len ? lk->val_len : 1);
  if (!p) return err_set(err, BFH_E_NOMEM, "%s: get: no memory", r->path);
  if (lk->val_len) memcpy(p, lk->val, lk->val_len);
  *val = p;
  *val_len = lk->val_len;
  return BFH_OK;
}

static int in_range(const lro_table_t *t, const void *key, size_t klen) {
  return bytewise_compare(key, klen, t->smallest, t->smallest_len) >= 0 &&
         bytewise_compare(key, klen, t->largest, t->largest_len) <= 0;
}

/* The newest entry of key in s's tables (get order) into *lk (its value in buf, or in memo:
   a view's, whose blocks are s's tables', or NULL). */
static int tables_get(const lro_state_t *s, block_memo_t *memo, const void *key, size_t klen,
                      table_buf_t *buf, lsm_lookup_t *lk, err_t *err) {
  uint64_t hash = blocked_filter_key_hash(key, klen); /* once, for every key filter */
  lk->state = LSM_LOOKUP_ABSENT;
  for (size_t i = 0; i < s->ntables && lk->state == LSM_LOOKUP_ABSENT; i++) {
    const lro_table_t *t = s->get_order[i];
    if (!in_range(t, key, klen)) continue;
    table_t *tt = NULL;
    int rc = lro_table_reader(t, &tt, err);
    if (rc == BFH_OK) rc = table_get_kept(tt, key, klen, hash, LSM_MAX_SEQ, memo, buf, lk, err);
    if (rc != BFH_OK) return rc;
  }
  return BFH_OK;
}

/* get in state s: the memtables (newest log first), then the tables (memo as tables_get's). */
static int state_get(const lro_t *r, const lro_state_t *s, block_memo_t *memo, const void *key,
                     size_t klen, void **val, size_t *val_len, err_t *err) {
  lsm_lookup_t lk = {.state = LSM_LOOKUP_ABSENT};
  for (size_t i = 0; i < s->nmems && lk.state == LSM_LOOKUP_ABSENT; i++)
    (void)memtable_get(s->mems[i].mem, key, klen, s->mems[i].max_seq, &lk);
  if (lk.state == LSM_LOOKUP_VALUE) return copy_value(r, &lk, val, val_len, err);
  if (lk.state == LSM_LOOKUP_DELETED) return BFH_NOT_FOUND;
  uint8_t stack[8192]; /* a data block of the default 4 KiB, and more */
  table_buf_t buf;
  table_buf_init(&buf, stack, sizeof stack);
  int rc = tables_get(s, memo, key, klen, &buf, &lk, err);
  if (rc == BFH_OK)
    rc = lk.state == LSM_LOOKUP_VALUE ? copy_value(r, &lk, val, val_len, err) : BFH_NOT_FOUND;
  table_buf_release(&buf);
  return rc;
}

/* Under a search's view, that view's state (engine.h: a read-only engine reads its view's);
   without one (bfh_get), the newest, refreshed first. */
int lro_get(engine_t *e, engine_view_t *view, const void *key, size_t key_len, void **val,
            size_t *val_len, err_t *err) {
  lro_t *r = (lro_t *)e;
  if (view) return state_get(r, view->s, &view->memo, key, key_len, val, val_len, err);
  lro_state_t *s = NULL;
  int rc = lro_current_state(r, &s, err);
  if (rc == BFH_OK) rc = state_get(r, s, NULL, key, key_len, val, val_len, err);
  lro_state_unref(s);
  return rc;
}

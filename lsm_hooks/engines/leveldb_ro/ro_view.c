/* Views and searches: a view is a refreshed state pinned for one search (and its epoch in
   index_sync); the search's table and log scans read that state, and a search that finds a
   table of an unpinned state gone says BFH_E_BUSY, and starts over from a new view
   (engine_ops_t.search_attempts). */
#include <stdatomic.h>
#include <stdlib.h>

#include "lsm_hooks/engines/leveldb_ro/ro_internal.h"
#include "lsm_hooks/leveldb_format/ldb_table.h"

static int read_table(engine_ro_t *r, engine_view_t *v, uint64_t number, const block_ref_t *refs,
                      size_t n, const stock_match_t *m, engine_scan_stats_t *st, err_t *err) {
  if (!engine_tables_contain(v->tables, v->ntables, number)) return BFH_OK;
  if (r->read_hook) r->read_hook(r->read_hook_arg, number);
  pin_t *p = ro_state_pin(v->held, number);
  if (p) return ldb_table_match_rfile(p->f, p->path, refs, n, m, st, err);
  return ro_table_status(r, ldb_table_match(r->io, r->path, number, refs, n, m, st, err), number,
                         err);
}

/* Reports s's tables to index_sync (pinning *epoch; NULL: no pin). */
int ro_view_index_state(engine_ro_t *r, const ro_state_t *s, uint64_t *epoch, err_t *err) {
  return stock_report_tables(r->sync, r->path, s->tables, s->ids, s->ntables, epoch, err);
}

int ro_view_acquire(engine_t *e, engine_view_t **view, err_t *err) {
  engine_ro_t *r = (engine_ro_t *)e;
  engine_view_t *v = calloc(1, sizeof *v);
  if (!v) return err_set(err, BFH_E_NOMEM, "%s: no memory for a view", r->path);
  v->seed = stock_value_seed(r->sync);
  pthread_mutex_lock(&r->mu);
  int rc = ro_refresh(r, err);
  if (rc == BFH_OK) {
    v->held = r->state;
    atomic_fetch_add(&r->state->refs, 1);
    /* Listed under mu, so that index_sync sees the versions in order. */
    if (r->sync) rc = ro_view_index_state(r, r->state, &v->epoch, err);
  }
  pthread_mutex_unlock(&r->mu);
  /* New tables (the open's, or made since) get their filters now. */
  if (rc == BFH_OK && r->sync) rc = stock_ro_view_load(r->sync, 0, err);
  if (rc != BFH_OK) {
    if (v->epoch) index_sync_view_unpin(r->sync, v->epoch);
    ro_state_unref(v->held);
    free(v);
    return rc;
  }
  ro_state_t *s = v->held;
  v->tables = s->tables;
  v->ntables = s->ntables;
  v->segs = s->segs;
  v->nsegs = s->nchunks;
  *view = v;
  return BFH_OK;
}

void ro_view_release(engine_t *e, engine_view_t *v) {
  engine_ro_t *r = (engine_ro_t *)e;
  if (!v) return;
  if (r->sync && v->epoch) index_sync_view_unpin(r->sync, v->epoch);
  ro_state_unref(v->held);
  free(v);
}

int ro_scan_table(engine_t *e, engine_view_t *v, uint64_t number, const engine_value_test_t *test,
                  engine_match_fn fn, void *arg, engine_scan_stats_t *st, err_t *err) {
  stock_match_t m = {test, fn, arg};
  return read_table((engine_ro_t *)e, v, number, NULL, 0, &m, st, err);
}

int ro_scan_blocks(engine_t *e, engine_view_t *v, uint64_t number, const block_ref_t *refs,
                   size_t n, const engine_value_test_t *test, engine_match_fn fn, void *arg,
                   engine_scan_stats_t *st, err_t *err) {
  stock_match_t m = {test, fn, arg};
  return read_table((engine_ro_t *)e, v, number, refs, n, &m, st, err);
}

/* Views and searches: a view is a refreshed state held for one search (and its epoch in
   index_sync); the search's table and WAL scans read that state, and a search that finds a
   table of an unpinned state gone starts over from a new view (engine_ops_t.search_attempts).
   Ordered iteration reads every entry of a refreshed state into memory; an entry that a range
   tombstone of its own source or of a source before it in lookup order covers with a larger
   sequence goes in as a deletion (the rule of rro_get.c). */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "lsm_hooks/engines/stock/sorted_iter.h"
#include "lsm_hooks/engines/rocksdb/rdb_adapter.h"
#include "lsm_hooks/engines/rocksdb_ro/rro_internal.h"
#include "lsm_hooks/rocksdb_format/rdb_table.h"

static int read_table(rro_t *r, engine_view_t *v, uint64_t number, const block_ref_t *refs,
                      size_t n, const stock_match_t *m, engine_scan_stats_t *st, err_t *err) {
  if (!engine_tables_contain(v->tables, v->ntables, number)) return BFH_OK;
  rro_pin_t *p = rro_state_pin(((rro_view_t *)v)->s, number);
  if (p) return rdb_table_match_rfile(p->f, p->path, n ? rro_pin_footer(p) : NULL, refs, n, m, st, err);
  return rro_table_status(r, rdb_table_match(r->io, r->path, number, refs, n, m, st, err), number,
                          err);
}

int rro_view_index_state(rro_t *r, const rro_state_t *s, uint64_t *epoch, err_t *err) {
  return stock_report_tables(r->sync, r->path, s->tables, s->ids, s->ntables, epoch, err);
}

int rro_view_acquire(engine_t *e, engine_view_t **view, err_t *err) {
  rro_t *r = (rro_t *)e;
  rro_view_t *v = calloc(1, sizeof *v);
  if (!v) return err_set(err, BFH_E_NOMEM, "%s: no memory for a view", r->path);
  v->v.seed = stock_value_seed(r->sync);
  pthread_mutex_lock(&r->mu);
  int rc = rro_refresh(r, err);
  if (rc == BFH_OK) {
    v->s = r->state;
    atomic_fetch_add(&r->state->refs, 1);
    /* Listed under mu, so that index_sync sees the versions in order. */
    if (r->sync) rc = rro_view_index_state(r, r->state, &v->v.epoch, err);
  }
  pthread_mutex_unlock(&r->mu);
  if (rc == BFH_OK && r->sync) rc = stock_ro_view_load(r->sync, 0, err);
  if (rc != BFH_OK) {
    if (v->v.epoch) index_sync_view_unpin(r->sync, v->v.epoch);
    rro_state_unref(v->s);
    free(v);
    return rc;
  }
  v->v.tables = v->s->tables;
  v->v.ntables = v->s->ntables;
  v->v.segs = v->s->segs;
  v->v.nsegs = v->s->nchunks;
  *view = &v->v;
  return BFH_OK;
}

void rro_view_release(engine_t *e, engine_view_t *view) {
  rro_t *r = (rro_t *)e;
  if (!view) return;
  rro_view_t *v = (rro_view_t *)view;
  if (r->sync && v->v.epoch) index_sync_view_unpin(r->sync, v->v.epoch);
  rro_state_unref(v->s);
  free(v);
}

int rro_scan_table(engine_t *e, engine_view_t *v, uint64_t number, const engine_value_test_t *test,
                   engine_match_fn fn, void *arg, engine_scan_stats_t *st, err_t *err) {
  stock_match_t m = {test, fn, arg};
  return read_table((rro_t *)e, v, number, NULL, 0, &m, st, err);
}

int rro_scan_blocks(engine_t *e, engine_view_t *v, uint64_t number, const block_ref_t *refs,
                    size_t n, const engine_value_test_t *test, engine_match_fn fn, void *arg,
                    engine_scan_stats_t *st, err_t *err) {
  stock_match_t m = {test, fn, arg};
  return read_table((rro_t *)e, v, number, refs, n, &m, st, err);
}

/* ---- Ordered iteration ------------------------------------------------------------------ */

typedef struct gather {
  stock_sorted_t *sorted;
  const rro_state_t *s;
  const rro_tombs_t **tombs; /* parallel to s->order: each table's range tombstones, or NULL */
  size_t *with;              /* the places in s->order of the tables with tombstones ... */
  size_t nwith;              /* ... ascending */
  size_t rank;               /* the source read: 0 the chunks, i + 1 s->order[i] */
  rro_tombs_builder_t tb;    /* a table read by name: its tombstones */
  const char *path;
  uint64_t gseq; /* the table read: its global sequence number (rro_seq) */
  err_t *err;
  int nomem, rc;
} gather_t;

static int cmp_bytes(const uint8_t *a, size_t al, const uint8_t *b, size_t bl) {
  int c = memcmp(a, b, al < bl ? al : bl);
  return c ? c : (al > bl) - (al < bl);
}

static int key_in_file(const rdb_file_t *f, const uint8_t *k, size_t kl) {
  return cmp_bytes(f->smallest, f->smallest_len, k, kl) <= 0 &&
         cmp_bytes(k, kl, f->largest, f->largest_len) <= 0;
}

/* Whether the tombstones a lookup of k would have gathered by the time it reads the source of
   rank g->rank cover k@seq. */
static int range_deleted(const gather_t *g, const uint8_t *k, size_t kl, uint64_t seq) {
  const rro_state_t *s = g->s;
  for (size_t i = 0; i < s->nchunks; i++)
    if (rro_tombs_max(s->chunks[i]->tombs, k, kl) > seq) return 1;
  for (size_t j = 0; j < g->nwith && g->with[j] < g->rank; j++) {
    size_t i = g->with[j];
    if (key_in_file(s->order[i], k, kl) && rro_tombs_max(g->tombs[i], k, kl) > seq) return 1;
  }
  return 0;
}

static int gather_add(gather_t *g, const uint8_t *k, size_t kl, const uint8_t *v, size_t vl,
                      int is_value, uint64_t seq) {
  if (is_value && g->nwith + g->s->nchunks > 0 && range_deleted(g, k, kl, seq)) is_value = 0;
  if (stock_sorted_add(g->sorted, k, kl, v, vl, is_value, seq) != BFH_OK) return g->nomem = 1;
  return 0;
}

static int gather_table_entry(void *arg, const rdb_entry_t *e) {
  gather_t *g = arg;
  if ((g->rc = rdb_entry_refuse(e, g->path, g->err)) != BFH_OK) return 1;
  if (e->type == RDB_TYPE_RANGE_DELETION) return 0; /* read before, into g->tombs */
  if (e->type == RDB_TYPE_DELETION_WITH_TIMESTAMP) {
    g->rc = err_set(g->err, BFH_E_UNSUPPORTED,
                    "table %s: holds a deletion with a timestamp (sequence %llu), which the "
                    "read-only engine does not answer",
                    g->path, (unsigned long long)e->seq);
    return 1;
  }
  return gather_add(g, e->key, e->key_len, e->val, e->val_len, e->type == RDB_TYPE_VALUE,
                    rro_seq(g->gseq, e->seq));
}

static int gather_tomb(void *arg, const rdb_entry_t *e) {
  gather_t *g = arg;
  if (e->type != RDB_TYPE_RANGE_DELETION) return 0;
  if (rro_tombs_builder_add(&g->tb, e->key, e->key_len, e->val, e->val_len,
                            rro_seq(g->gseq, e->seq)) != BFH_OK)
    return g->nomem = 1;
  return 0;
}

/* g->tombs[i] for the table s->order[i]: its pin's, or read by name into *owned. */
static int table_tombs(rro_t *r, gather_t *g, size_t i, rro_tombs_t **owned, err_t *err) {
  const rdb_file_t *f = g->s->order[i];
  rro_pin_t *p = rro_state_pin(g->s, f->number);
  if (p) return rro_pin_tombs(p, &g->tombs[i], err); /* at the global sequence number */
  char *path;
  int rc = rdb_table_path(r->path, f->number, &path, err);
  if (rc != BFH_OK) return rc;
  rc = rro_table_gseq(r, g->s, f, &g->gseq, err);
  if (rc == BFH_OK)
    rc = rro_table_status(r, rdb_table_scan(r->io, path, gather_tomb, g, NULL, err), f->number,
                          err);
  free(path);
  if (rc == BFH_OK && !g->nomem && rro_tombs_finish(&g->tb, owned) != BFH_OK) g->nomem = 1;
  rro_tombs_builder_release(&g->tb);
  g->tombs[i] = *owned;
  return rc;
}

/* Every entry of s into g: its WAL chunks, then every table of the column family in lookup
   order, each table's range tombstones read first. RocksDB's sequences are global: the newest
   version of a key is the one with the largest. */
static int gather_state(rro_t *r, const rro_state_t *s, gather_t *g, err_t *err) {
  size_t n = s->norder;
  rro_tombs_t **owned = calloc(n + 1, sizeof *owned);
  g->s = s;
  g->tombs = calloc(n + 1, sizeof *g->tombs);
  g->with = calloc(n + 1, sizeof *g->with);
  int rc = owned && g->tombs && g->with ? BFH_OK : BFH_E_NOMEM;
  for (size_t i = 0; i < n && rc == BFH_OK && !g->nomem; i++) {
    rc = table_tombs(r, g, i, &owned[i], err);
    if (rc == BFH_OK && g->tombs[i]) g->with[g->nwith++] = i;
  }
  for (size_t i = 0; i < s->nchunks && rc == BFH_OK && !g->nomem; i++) {
    const rro_chunk_t *c = s->chunks[i];
    for (const uint8_t *p = c->data, *end = c->data + c->len; p < end && !g->nomem;) {
      int type;
      uint64_t seq;
      const uint8_t *k, *v;
      uint32_t kl, vl;
      p = rro_chunk_entry_decode(p, &type, &seq, &k, &kl, &v, &vl);
      gather_add(g, k, kl, v, vl, type == RDB_TYPE_VALUE, seq);
    }
  }
  for (size_t i = 0; i < n && rc == BFH_OK && !g->nomem; i++) {
    uint64_t number = s->order[i]->number;
    char *path;
    if ((rc = rdb_table_path(r->path, number, &path, err)) != BFH_OK) break;
    g->path = path;
    g->rank = i + 1;
    rro_pin_t *p = rro_state_pin(s, number);
    if ((rc = rro_table_gseq(r, s, s->order[i], &g->gseq, err)) == BFH_OK)
      rc = p ? rdb_table_scan_rfile(p->f, p->path, gather_table_entry, NULL, g, NULL, NULL, NULL,
                                    err)
             : rro_table_status(r, rdb_table_scan(r->io, path, gather_table_entry, g, NULL, err),
                                number, err);
    if (rc == BFH_OK && g->rc != BFH_OK) rc = g->rc;
    g->path = NULL;
    free(path);
  }
  if (rc == BFH_E_NOMEM || (rc == BFH_OK && g->nomem))
    rc = err_set(err, BFH_E_NOMEM, "%s: iterator: no memory", r->path);
  for (size_t i = 0; owned && i < n; i++) rro_tombs_destroy(owned[i]);
  free(owned);
  free(g->tombs);
  free(g->with);
  return rc;
}

int rro_iter_create(engine_t *e, engine_iter_t **it, err_t *err) {
  rro_t *r = (rro_t *)e;
  int rc = BFH_E_BUSY;
  for (int attempt = 0; attempt < ENGINE_ROCKSDB_RO_ATTEMPTS && rc == BFH_E_BUSY; attempt++) {
    if (attempt) atomic_fetch_add(&r->retries, 1);
    rro_state_t *s;
    rc = rro_current_state(r, &s, err);
    if (rc != BFH_OK) return rc;
    gather_t g = {.sorted = stock_sorted_create(), .err = err};
    if (!g.sorted) rc = err_set(err, BFH_E_NOMEM, "%s: iterator: no memory", r->path);
    if (rc == BFH_OK) rc = gather_state(r, s, &g, err);
    rro_state_unref(s);
    if (rc == BFH_OK) return stock_sorted_finish(g.sorted, it, err);
    stock_sorted_destroy(g.sorted);
  }
  if (rc == BFH_E_BUSY)
    err_prefix(err, "iterator gave up after %d attempts (the database changed under each): ",
               ENGINE_ROCKSDB_RO_ATTEMPTS);
  return rc;
}

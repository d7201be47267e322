/* Ordered iteration (bfh_iter_*) reads every entry of a refreshed state into memory
   (sorted_iter.h); an entry that a range tombstone of its own source or of a source before it in
   lookup order covers with a larger sequence goes in as a deletion (the rule of rro_get.c). */
#include <stdlib.h>
#include <string.h>

#include "lsm_hooks/engines/stock/sorted_iter.h"
#include "lsm_hooks/engines/rocksdb/rdb_adapter.h"
#include "lsm_hooks/engines/rocksdb_ro/rro_internal.h"
#include "lsm_hooks/rocksdb_format/rdb_table.h"

/* ---- Ordered iteration ------------------------------------------------------------------ */

typedef struct gather {
  stock_sorted_t *sorted;
  const rro_state_t *s;
  const stock_tombs_t **tombs; /* parallel to s->order: each table's range tombstones, or NULL */
  size_t *with;                /* the places in s->order of the tables with tombstones ... */
  size_t nwith;                /* ... ascending */
  size_t rank;                 /* the source read: 0 the chunks, i + 1 s->order[i] */
  stock_tombs_builder_t tb;    /* a table read by name: its tombstones */
  const char *path;
  uint64_t gseq; /* the table read: its global sequence number (rro_seq) */
  err_t *err;
  int nomem, rc;
} gather_t;

static int key_in_file(const rdb_file_t *f, const uint8_t *k, size_t kl) {
  return stock_key_in(k, kl, f->smallest, f->smallest_len, f->largest, f->largest_len);
}

/* Whether the tombstones a lookup of k would have gathered by the time it reads the source of
   rank g->rank cover k@seq. */
static int range_deleted(const gather_t *g, const uint8_t *k, size_t kl, uint64_t seq) {
  const rro_state_t *s = g->s;
  for (size_t i = 0; i < s->base.nchunks; i++)
    if (stock_tombs_max(s->base.chunks[i]->tombs, k, kl) > seq) return 1;
  for (size_t j = 0; j < g->nwith && g->with[j] < g->rank; j++) {
    size_t i = g->with[j];
    if (key_in_file(s->order[i], k, kl) && stock_tombs_max(g->tombs[i], k, kl) > seq) return 1;
  }
  return 0;
}

static int gather_add(gather_t *g, const uint8_t *k, size_t kl, const uint8_t *v, size_t vl,
                      int is_value, uint64_t seq) {
  if (is_value && g->nwith + g->s->base.nchunks > 0 && range_deleted(g, k, kl, seq)) is_value = 0;
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
  if (stock_tombs_builder_add(&g->tb, e->key, e->key_len, e->val, e->val_len,
                              rro_seq(g->gseq, e->seq)) != BFH_OK)
    return g->nomem = 1;
  return 0;
}

/* g->tombs[i] for the table s->order[i]: its pin's, or read by name into *owned. */
static int table_tombs(stock_ro_t *r, gather_t *g, size_t i, stock_tombs_t **owned, err_t *err) {
  const rdb_file_t *f = g->s->order[i];
  rro_pin_t *p = rro_state_pin(g->s, f->number);
  if (p) return rro_pin_tombs(p, &g->tombs[i], err); /* at the global sequence number */
  char *path;
  int rc = stock_ro_table_path(r, f->number, &path, err);
  if (rc != BFH_OK) return rc;
  rc = rro_table_gseq(r, g->s, f, &g->gseq, err);
  if (rc == BFH_OK)
    rc = stock_ro_status(r, rdb_table_scan(r->io, path, gather_tomb, g, NULL, err), f->number, err);
  free(path);
  if (rc == BFH_OK && !g->nomem && stock_tombs_finish(&g->tb, owned) != BFH_OK) g->nomem = 1;
  stock_tombs_builder_release(&g->tb);
  g->tombs[i] = *owned;
  return rc;
}

/* Every entry of s into g: its WAL chunks, then every table of the column family in lookup
   order, each table's range tombstones read first. RocksDB's sequences are global: the newest
   version of a key is the one with the largest. */
static int gather_into(stock_ro_t *r, const rro_state_t *s, gather_t *g, err_t *err) {
  size_t n = s->norder;
  stock_tombs_t **owned = calloc(n + 1, sizeof *owned);
  g->s = s;
  g->tombs = calloc(n + 1, sizeof *g->tombs);
  g->with = calloc(n + 1, sizeof *g->with);
  int rc = owned && g->tombs && g->with ? BFH_OK : BFH_E_NOMEM;
  for (size_t i = 0; i < n && rc == BFH_OK && !g->nomem; i++) {
    rc = table_tombs(r, g, i, &owned[i], err);
    if (rc == BFH_OK && g->tombs[i]) g->with[g->nwith++] = i;
  }
  for (size_t i = 0; i < s->base.nchunks && rc == BFH_OK && !g->nomem; i++) {
    const stock_chunk_t *c = s->base.chunks[i];
    for (const uint8_t *p = c->data, *end = c->data + c->len; p < end && !g->nomem;) {
      int is_value;
      uint64_t seq;
      const uint8_t *k, *v;
      uint32_t kl, vl;
      p = stock_chunk_entry_decode(p, &is_value, &seq, &k, &kl, &v, &vl);
      gather_add(g, k, kl, v, vl, is_value, seq);
    }
  }
  for (size_t i = 0; i < n && rc == BFH_OK && !g->nomem; i++) {
    uint64_t number = s->order[i]->number;
    char *path;
    if ((rc = stock_ro_table_path(r, number, &path, err)) != BFH_OK) break;
    g->path = path;
    g->rank = i + 1;
    rro_pin_t *p = rro_state_pin(s, number);
    if ((rc = rro_table_gseq(r, s, s->order[i], &g->gseq, err)) == BFH_OK)
      rc = p ? rdb_table_scan_rfile(p->base.f, p->base.path, gather_table_entry, NULL, g, NULL,
                                    NULL, NULL, err)
             : stock_ro_status(r, rdb_table_scan(r->io, path, gather_table_entry, g, NULL, err),
                               number, err);
    if (rc == BFH_OK && g->rc != BFH_OK) rc = g->rc;
    g->path = NULL;
    free(path);
  }
  if (rc == BFH_E_NOMEM || (rc == BFH_OK && g->nomem))
    rc = err_set(err, BFH_E_NOMEM, "%s: iterator: no memory", r->path);
  for (size_t i = 0; owned && i < n; i++) stock_tombs_destroy(owned[i]);
  free(owned);
  free(g->tombs);
  free(g->with);
  return rc;
}

static int gather_state(stock_ro_t *r, const stock_ro_state_t *s, stock_sorted_t *sorted,
                        err_t *err) {
  gather_t g = {.sorted = sorted, .err = err};
  return gather_into(r, (const rro_state_t *)s, &g, err);
}

int rro_iter_create(engine_t *e, engine_iter_t **it, err_t *err) {
  return stock_ro_iter_create(e, it, gather_state, err);
}

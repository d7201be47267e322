/* Ordered iteration (bfh_iter_*) reads every entry of a refreshed state into memory
   (sorted_iter.h); an entry that a range tombstone of its own source or of a source before it in
   lookup order covers with a larger sequence goes in as a deletion (the rule of rro_get.c). */
#include <stdlib.h>

#include "lsm_hooks/engines/stock/sorted_iter.h"
#include "lsm_hooks/engines/rocksdb/rdb_adapter.h"
#include "lsm_hooks/engines/rocksdb_ro/rro_internal.h"
#include "lsm_hooks/rocksdb_format/rdb_table.h"

typedef struct gather {
  stock_sorted_t *sorted;
  const stock_ro_state_t *s;
  const stock_tombs_t **tombs; /* parallel to s->order: each table's range tombstones, or NULL */
  stock_tombs_t **owned;       /* ... those read by name */
  size_t *with;                /* the places in s->order of the tables with tombstones ... */
  size_t nwith;                /* ... ascending */
  size_t rank;                 /* the source read: 0 the chunks, i + 1 s->order[i] */
  stock_tombs_builder_t tb;    /* a table read by name: its tombstones */
  const char *path;
  uint64_t gseq; /* the table read: its global sequence number (rro_seq) */
  err_t *err;
  int nomem, rc;
} gather_t;

/* Whether the tombstones a lookup of k would have gathered by the time it reads the source of
   rank g->rank cover k@seq. */
static int range_deleted(const gather_t *g, const uint8_t *k, size_t kl, uint64_t seq) {
  const stock_ro_state_t *s = g->s;
  for (size_t i = 0; i < s->nchunks; i++)
    if (stock_tombs_max(s->chunks[i]->tombs, k, kl) > seq) return 1;
  for (size_t j = 0; j < g->nwith && g->with[j] < g->rank; j++) {
    size_t i = g->with[j];
    if (stock_ro_table_holds(&s->order[i], k, kl) && stock_tombs_max(g->tombs[i], k, kl) > seq)
      return 1;
  }
  return 0;
}

static int gather_add(void *arg, const uint8_t *k, size_t kl, const uint8_t *v, size_t vl,
                      int is_value, uint64_t seq) {
  gather_t *g = arg;
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
  if (stock_tombs_builder_add(&g->tb, e->key, e->key_len, e->val, e->val_len,
                              rro_seq(g->gseq, e->seq)) != BFH_OK)
    return g->nomem = 1;
  return 0;
}

/* g->tombs[i] for the table t, s->order[i]: its pin's, or read by name into g->owned[i]. */
static int table_tombs(stock_ro_t *r, const stock_ro_table_t *t, stock_pin_t *p, const char *path,
                       void *arg, err_t *err) {
  gather_t *g = arg;
  size_t i = (size_t)(t - g->s->order);
  if (p) return rro_pin_tombs((rro_pin_t *)p, &g->tombs[i], err); /* at the global sequence */
  int rc = rro_table_gseq(r, t, NULL, path, &g->gseq, err);
  if (rc == BFH_OK) rc = rdb_table_scan(r->io, path, gather_tomb, g, NULL, err);
  if (rc == BFH_OK && !g->nomem && stock_tombs_finish(&g->tb, &g->owned[i]) != BFH_OK) g->nomem = 1;
  stock_tombs_builder_release(&g->tb);
  g->tombs[i] = g->owned[i];
  return rc;
}

/* The entries of table t, s->order[i], into g. */
static int table_entries(stock_ro_t *r, const stock_ro_table_t *t, stock_pin_t *p, const char *path,
                         void *arg, err_t *err) {
  gather_t *g = arg;
  g->path = path;
  g->rank = (size_t)(t - g->s->order) + 1;
  int rc = rro_table_gseq(r, t, (rro_pin_t *)p, path, &g->gseq, err);
  if (rc == BFH_OK)
    rc = p ? rdb_table_scan_rfile(p->f, path, gather_table_entry, NULL, g, NULL, NULL, NULL, err)
           : rdb_table_scan(r->io, path, gather_table_entry, g, NULL, err);
  return rc == BFH_OK ? g->rc : rc;
}

/* Every entry of s into sorted: its WAL chunks, then every table of the column family in
   lookup order, each table's range tombstones read first. RocksDB's sequences are global: the
   newest version of a key is the one with the largest. */
int rro_gather(stock_ro_t *r, const stock_ro_state_t *s, stock_sorted_t *sorted, err_t *err) {
  size_t n = s->ntables;
  gather_t g = {.sorted = sorted, .s = s, .err = err};
  g.owned = calloc(n + 1, sizeof *g.owned);
  g.tombs = calloc(n + 1, sizeof *g.tombs);
  g.with = calloc(n + 1, sizeof *g.with);
  int rc = g.owned && g.tombs && g.with ? BFH_OK : BFH_E_NOMEM;
  for (size_t i = 0; i < n && rc == BFH_OK && !g.nomem; i++) {
    rc = stock_ro_table_read(r, s, &s->order[i], table_tombs, &g, err);
    if (rc == BFH_OK && g.tombs[i]) g.with[g.nwith++] = i;
  }
  if (rc == BFH_OK && !g.nomem) (void)stock_chunks_each(s->chunks, s->nchunks, gather_add, &g);
  for (size_t i = 0; i < n && rc == BFH_OK && !g.nomem; i++)
    rc = stock_ro_table_read(r, s, &s->order[i], table_entries, &g, err);
  if (rc == BFH_E_NOMEM || (rc == BFH_OK && g.nomem))
    rc = err_set(err, BFH_E_NOMEM, "%s: iterator: no memory", r->path);
  for (size_t i = 0; g.owned && i < n; i++) stock_tombs_destroy(g.owned[i]);
  free(g.owned);
  free(g.tombs);
  free(g.with);
  return rc;
}

/* Ordered iteration (bfh_iter_*): every entry of a refreshed state read into memory
   (sorted_iter.h); a table gone before it was read starts the read over from a new refresh. */
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>

#include "lsm_hooks/engines/stock/sorted_iter.h"
#include "lsm_hooks/engines/leveldb_ro/ro_internal.h"
#include "lsm_hooks/leveldb_format/ldb_table.h"

/* Log entries rank above every table entry (sequence numbers are below 2^56), in the order
   they were written. */
#define LOG_RANK (1ull << 56)

typedef struct gather {
  stock_sorted_t *sorted;
  int nomem;
} gather_t;

static int gather_table_entry(void *arg, const ldb_entry_t *e) {
  gather_t *g = arg;
  if (stock_sorted_add(g->sorted, e->key, e->key_len, e->val, e->val_len, e->type == LDB_TYPE_VALUE,
                       e->seq) != BFH_OK)
    return g->nomem = 1;
  return 0;
}

/* Every entry of s into g: its log chunks, then every table of its version. */
static int gather_state(engine_ro_t *r, const ro_state_t *s, gather_t *g, err_t *err) {
  uint64_t rank = LOG_RANK;
  for (size_t i = 0; i < s->nchunks && !g->nomem; i++) {
    const chunk_t *c = s->chunks[i];
    for (const uint8_t *p = c->data, *end = c->data + c->len; p < end && !g->nomem;) {
      int type;
      const uint8_t *k, *v;
      uint32_t kl, vl;
      p = ro_chunk_entry_decode(p, &type, &k, &kl, &v, &vl);
      if (stock_sorted_add(g->sorted, k, kl, v, vl, type == LDB_TYPE_VALUE, rank++) != BFH_OK)
        g->nomem = 1;
    }
  }
  int rc = BFH_OK;
  for (size_t i = 0; i < s->version.nfiles && rc == BFH_OK && !g->nomem; i++) {
    uint64_t number = s->version.files[i].number;
    if (r->read_hook) r->read_hook(r->read_hook_arg, number);
    char *path;
    rc = ldb_table_path(r->path, number, &path, err);
    if (rc != BFH_OK) break;
    rc = ro_table_status(r, ldb_table_scan(r->io, path, gather_table_entry, g, NULL, err), number,
                         err);
    free(path);
  }
  if (rc == BFH_OK && g->nomem) rc = err_set(err, BFH_E_NOMEM, "%s: iterator: no memory", r->path);
  return rc;
}

int ro_iter_create(engine_t *e, engine_iter_t **it, err_t *err) {
  engine_ro_t *r = (engine_ro_t *)e;
  int rc = BFH_E_BUSY;
  for (int attempt = 0; attempt < ENGINE_LEVELDB_RO_ATTEMPTS && rc == BFH_E_BUSY; attempt++) {
    if (attempt) atomic_fetch_add(&r->retries, 1);
    ro_state_t *s;
    rc = ro_current_state(r, &s, err);
    if (rc != BFH_OK) return rc;
    gather_t g = {stock_sorted_create(), 0};
    if (!g.sorted) rc = err_set(err, BFH_E_NOMEM, "%s: iterator: no memory", r->path);
    if (rc == BFH_OK) rc = gather_state(r, s, &g, err);
    ro_state_unref(s);
    if (rc == BFH_OK) return stock_sorted_finish(g.sorted, it, err);
    stock_sorted_destroy(g.sorted);
  }
  if (rc == BFH_E_BUSY)
    err_prefix(err, "iterator gave up after %d attempts (the database changed under each): ",
               ENGINE_LEVELDB_RO_ATTEMPTS);
  return rc;
}

/* Ordered iteration (bfh_iter_*): every entry of a refreshed state read into memory
   (sorted_iter.h); a table gone before it was read starts the read over from a new refresh. */
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
  return g->nomem = stock_sorted_add(g->sorted, e->key, e->key_len, e->val, e->val_len,
                                     e->type == LDB_TYPE_VALUE, e->seq) != BFH_OK;
}

/* Every entry of s into sorted: its log chunks, then every table of its version. */
static int gather_state(stock_ro_t *r, const stock_ro_state_t *s, stock_sorted_t *sorted,
                        err_t *err) {
  uint64_t rank = LOG_RANK;
  gather_t g = {sorted, 0};
  for (size_t i = 0; i < s->nchunks && !g.nomem; i++) {
    const stock_chunk_t *c = s->chunks[i];
    for (const uint8_t *p = c->data, *end = c->data + c->len; p < end && !g.nomem;) {
      int is_value;
      uint64_t seq;
      const uint8_t *k, *v;
      uint32_t kl, vl;
      p = stock_chunk_entry_decode(p, &is_value, &seq, &k, &kl, &v, &vl);
      g.nomem = stock_sorted_add(sorted, k, kl, v, vl, is_value, rank++) != BFH_OK;
    }
  }
  const ldb_version_t *v = &((const ro_state_t *)s)->version;
  int rc = BFH_OK;
  for (size_t i = 0; i < v->nfiles && rc == BFH_OK && !g.nomem; i++) {
    uint64_t number = v->files[i].number;
    stock_ro_reading(r, number);
    char *path;
    if ((rc = stock_ro_table_path(r, number, &path, err)) != BFH_OK) break;
    rc = stock_ro_status(r, ldb_table_scan(r->io, path, gather_table_entry, &g, NULL, err), number,
                         err);
    free(path);
  }
  if (rc == BFH_OK && g.nomem) rc = err_set(err, BFH_E_NOMEM, "%s: iterator: no memory", r->path);
  return rc;
}

int ro_iter_create(engine_t *e, engine_iter_t **it, err_t *err) {
  return stock_ro_iter_create(e, it, gather_state, err);
}

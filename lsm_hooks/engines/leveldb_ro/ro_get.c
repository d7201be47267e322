/* Point lookups (engine_ops_t.get) in the tables of a state (stock_ro_get reads its logs
   first): the tables that may hold the key by level (level 0 newest first). */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "lsm_hooks/engines/leveldb_ro/ro_internal.h"
#include "lsm_hooks/leveldb_format/ldb_table.h"

/* Entries come in internal-key order (user key ascending, newest first): the first entry of
   the key is its newest in the table; a greater key ends the search. */
static int visit_lookup(void *arg, const ldb_entry_t *e) {
  stock_lookup_t *l = arg;
  int c = stock_key_cmp(e->key, e->key_len, l->key, l->key_len);
  if (c == 0) (void)stock_lookup_set(l, e->type == LDB_TYPE_VALUE, e->seq, e->val, e->val_len);
  return c >= 0;
}

static int file_holds(const ldb_file_t *f, const void *key, size_t key_len) {
  return stock_key_in(key, key_len, f->smallest, f->smallest_len, f->largest, f->largest_len);
}

/* Level 0 first, newest file first; then each deeper level (whose files do not overlap). */
static int cmp_get_order(const void *a, const void *b) {
  const ldb_file_t *x = *(const ldb_file_t *const *)a, *y = *(const ldb_file_t *const *)b;
  if (x->level != y->level) return x->level - y->level;
  return x->number < y->number ? 1 : x->number > y->number ? -1 : 0;
}

static int get_tables(stock_ro_t *r, const stock_ro_state_t *base, stock_lookup_t *l, err_t *err) {
  const ro_state_t *s = (const ro_state_t *)base;
  const ldb_file_t **order = malloc((s->version.nfiles + 1) * sizeof *order);
  if (!order) return err_set(err, BFH_E_NOMEM, "%s: get: no memory", r->path);
  size_t n = 0;
  for (size_t i = 0; i < s->version.nfiles; i++)
    if (file_holds(&s->version.files[i], l->key, l->key_len)) order[n++] = &s->version.files[i];
  qsort(order, n, sizeof *order, cmp_get_order);
  int rc = BFH_OK;
  for (size_t i = 0; i < n && rc == BFH_OK && !l->found; i++) {
    stock_ro_reading(r, order[i]->number);
    stock_pin_t *p = stock_ro_state_pin(&s->base, order[i]->number);
    if (p) {
      rc = ldb_table_scan_rfile(p->f, p->path, visit_lookup, l, NULL, err);
      continue;
    }
    char *path;
    rc = ldb_table_path(r->path, order[i]->number, &path, err);
    if (rc != BFH_OK) break;
    rc = stock_ro_status(r, ldb_table_scan(r->io, path, visit_lookup, l, NULL, err),
                         order[i]->number, err);
    free(path);
  }
  free(order);
  return rc;
}

int ro_get(engine_t *e, engine_view_t *view, const void *key, size_t key_len, void **val,
           size_t *val_len, err_t *err) {
  return stock_ro_get(e, view, key, key_len, val, val_len, get_tables, err);
}

/* Point lookups (engine_ops_t.get) in a state: its logs newest first, then the tables that
   may hold the key by level (level 0 newest first). A search passes its view; a bfh_get
   refreshes first. */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "lsm_hooks/engines/leveldb_ro/ro_internal.h"
#include "lsm_hooks/leveldb_format/ldb_table.h"

/* A point lookup: the newest entry of key in one table. */
typedef struct lookup {
  const void *key;
  size_t key_len;
  int found, type;
  void *val;
  size_t val_len;
  int nomem;
} lookup_t;

static int cmp_key(const void *a, size_t al, const void *b, size_t bl) {
  int c = memcmp(a, b, al < bl ? al : bl);
  return c ? c : (al > bl) - (al < bl);
}

/* Entries come in internal-key order (user key ascending, newest first): the first entry of
   the key is its newest in the table; a greater key ends the search. */
static int visit_lookup(void *arg, const ldb_entry_t *e) {
  lookup_t *l = arg;
  int c = cmp_key(e->key, e->key_len, l->key, l->key_len);
  if (c < 0) return 0;
  if (c == 0) {
    l->found = 1;
    l->type = e->type;
    l->val = malloc(e->val_len ? e->val_len : 1);
    if (!l->val) l->nomem = 1;
    if (l->val && e->val_len) memcpy(l->val, e->val, e->val_len);
    l->val_len = e->val_len;
  }
  return 1;
}

static int file_holds(const ldb_file_t *f, const void *key, size_t key_len) {
  return cmp_key(f->smallest, f->smallest_len, key, key_len) <= 0 &&
         cmp_key(key, key_len, f->largest, f->largest_len) <= 0;
}

/* Level 0 first, newest file first; then each deeper level (whose files do not overlap). */
static int cmp_get_order(const void *a, const void *b) {
  const ldb_file_t *x = *(const ldb_file_t *const *)a, *y = *(const ldb_file_t *const *)b;
  if (x->level != y->level) return x->level - y->level;
  return x->number < y->number ? 1 : x->number > y->number ? -1 : 0;
}

static int get_from_tables(stock_ro_t *r, const ro_state_t *s, lookup_t *l, err_t *err) {
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
  if (rc == BFH_OK && l->nomem) rc = err_set(err, BFH_E_NOMEM, "%s: get: no memory", r->path);
  return rc;
}

/* get in state s: the logs (newest first), then the tables. */
static int state_get(stock_ro_t *r, const stock_ro_state_t *base, const void *key, size_t key_len,
                     void **val, size_t *val_len, err_t *err) {
  const ro_state_t *s = (const ro_state_t *)base;
  lookup_t l = {.key = key, .key_len = key_len};
  for (size_t i = base->nchunks; i-- > 0 && !l.found;) {
    const uint8_t *v;
    uint32_t vl;
    int is_value;
    uint64_t seq;
    if (!stock_chunk_find(base->chunks[i], key, key_len, &is_value, &seq, &v, &vl)) continue;
    l.type = is_value ? LDB_TYPE_VALUE : LDB_TYPE_DELETION;
    l.found = 1;
    l.val = malloc(vl ? vl : 1);
    if (!l.val) return err_set(err, BFH_E_NOMEM, "%s: get: no memory", r->path);
    if (vl) memcpy(l.val, v, vl);
    l.val_len = vl;
  }
  int rc = l.found ? BFH_OK : get_from_tables(r, s, &l, err);
  if (rc != BFH_OK || !l.found || l.type != LDB_TYPE_VALUE) {
    free(l.val);
    return rc != BFH_OK ? rc : BFH_NOT_FOUND;
  }
  *val = l.val;
  *val_len = l.val_len;
  return BFH_OK;
}

int ro_get(engine_t *e, engine_view_t *view, const void *key, size_t key_len, void **val,
           size_t *val_len, err_t *err) {
  return stock_ro_get(e, view, key, key_len, val, val_len, state_get, err);
}

/* Ordered iteration (engine_ops_t.iter_create) over the newest state, as lsm_iter (lsm/db.c)
   iterates a read-write handle: a merge of the state's memtables (each cut at the sequence
   number the state read it to) and tables, the newest entry of each key, deletions hidden. The
   state it holds keeps its tables open: a compaction cannot take one from under it. */
#include <stdlib.h>
#include <string.h>

#include "lsm/internal_key.h"
#include "lsm/user_iter.h"
#include "lsm_hooks/engines/lsm_ro/lro_internal.h"

/* ---- A memtable iterator cut at max_seq ---------------------------------------------------- */

typedef struct cut_iter {
  iterator_t base;
  iterator_t *in;
  uint64_t max_seq;
} cut_iter_t;

/* Skips the entries newer than the cut. */
static void cut_settle(cut_iter_t *c) {
  for (; iterator_valid(c->in); iterator_next(c->in)) {
    size_t n;
    const uint8_t *k = iterator_key(c->in, &n);
    internal_key_parts_t p;
    if (internal_key_parse(k, n, &p) != 0 || p.seq <= c->max_seq) return;
  }
}

static void cut_seek_first(iterator_t *it) {
  cut_iter_t *c = (cut_iter_t *)it;
  iterator_seek_first(c->in);
  cut_settle(c);
}
static void cut_seek(iterator_t *it, const void *target, size_t n) {
  cut_iter_t *c = (cut_iter_t *)it;
  iterator_seek(c->in, target, n);
  cut_settle(c);
}
static int cut_valid(const iterator_t *it) {
  return iterator_valid(((const cut_iter_t *)it)->in);
}
static void cut_next(iterator_t *it) {
  cut_iter_t *c = (cut_iter_t *)it;
  iterator_next(c->in);
  cut_settle(c);
}
static const void *cut_key(const iterator_t *it, size_t *n) {
  return iterator_key(((const cut_iter_t *)it)->in, n);
}
static const void *cut_value(const iterator_t *it, size_t *n) {
  return iterator_value(((const cut_iter_t *)it)->in, n);
}
static int cut_status(const iterator_t *it, err_t *err) {
  return iterator_status(((const cut_iter_t *)it)->in, err);
}
static void cut_destroy(iterator_t *it) {
  iterator_destroy(((cut_iter_t *)it)->in);
  free(it);
}

static const iterator_ops_t cut_ops = {cut_seek_first, cut_seek,  cut_valid,  cut_next,
                                       cut_key,        cut_value, cut_status, cut_destroy};

/* An iterator over m's entries up to max_seq (NULL on no memory). */
static iterator_t *cut_create(const lro_mem_t *m) {
  cut_iter_t *c = calloc(1, sizeof *c);
  if (c) c->in = memtable_iterator_create(m->mem);
  if (!c || !c->in) {
    free(c);
    return NULL;
  }
  c->base.ops = &cut_ops;
  c->max_seq = m->max_seq;
  return &c->base;
}

/* ---- The engine's iterator ----------------------------------------------------------------- */

typedef struct lro_iter {
  engine_iter_t base;
  lro_state_t *s; /* a reference */
  iterator_t *merged;
  user_iter_t user; /* over merged: the memtables are cut already */
} lro_iter_t;

#define IT(x) ((lro_iter_t *)(x))
#define CIT(x) ((const lro_iter_t *)(x))

static void it_destroy(engine_iter_t *x) {
  if (!x) return;
  user_iter_release(&IT(x)->user);
  iterator_destroy(IT(x)->merged);
  lro_state_unref(IT(x)->s);
  free(x);
}

static void it_seek_first(engine_iter_t *x) {
  user_iter_seek_first(&IT(x)->user);
}
static void it_seek(engine_iter_t *x, const void *key, size_t key_len) {
  user_iter_seek(&IT(x)->user, key, key_len);
}
static int it_valid(const engine_iter_t *x) {
  return user_iter_valid(&CIT(x)->user);
}
static void it_next(engine_iter_t *x) {
  user_iter_next(&IT(x)->user);
}
static const void *it_key(const engine_iter_t *x, size_t *len) {
  return user_iter_key(&CIT(x)->user, len);
}
static const void *it_value(const engine_iter_t *x, size_t *len) {
  return user_iter_value(&CIT(x)->user, len);
}
static int it_status(const engine_iter_t *x, err_t *err) {
  return user_iter_status(&CIT(x)->user, err);
}

static const engine_iter_ops_t iter_ops = {it_destroy, it_seek_first, it_seek,  it_valid,
                                           it_next,    it_key,        it_value, it_status};

/* An iterator over table t's entries, or one that reports why its reader could not be made
   (NULL on no memory). */
static iterator_t *table_child(const lro_table_t *t) {
  table_t *tt = NULL;
  err_t e;
  int rc = lro_table_reader(t, &tt, &e);
  return rc == BFH_OK ? table_iterator_create(tt) : iterator_empty_create(rc, &e);
}

/* The merge of s's sources, newest first (the merge gives equal keys from the lower child
   first, and internal keys order a key's entries newest first anyway). */
static iterator_t *merge_state(const lro_state_t *s) {
  size_t n = s->nmems + s->ntables, k = 0;
  iterator_t **children = calloc(n + 1, sizeof *children);
  int ok = children != NULL;
  for (size_t i = 0; ok && i < s->nmems; i++)
    ok = (children[k++] = cut_create(&s->mems[i])) != NULL;
  for (size_t i = 0; ok && i < s->ntables; i++)
    ok = (children[k++] = table_child(s->get_order[i])) != NULL;
  iterator_t *merged = ok ? merging_iterator_create(children, k) : NULL;
  if (!ok)
    for (size_t i = 0; i < k; i++) iterator_destroy(children[i]);
  free(children);
  return merged;
}

int lro_iter_create(engine_t *e, engine_iter_t **out, err_t *err) {
  lro_t *r = (lro_t *)e;
  lro_iter_t *it = calloc(1, sizeof *it);
  if (!it) return err_set(err, BFH_E_NOMEM, "%s: iterator: out of memory", r->path);
  it->base.ops = &iter_ops;
  int rc = lro_current_state(r, &it->s, err);
  if (rc == BFH_OK && !(it->merged = merge_state(it->s)))
    rc = err_set(err, BFH_E_NOMEM, "%s: iterator: out of memory", r->path);
  if (rc != BFH_OK) {
    it_destroy(&it->base);
    return rc;
  }
  user_iter_init(&it->user, it->merged, LSM_MAX_SEQ);
  *out = &it->base;
  return BFH_OK;
}

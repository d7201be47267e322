/* Ordered iteration (engine_ops_t.iter_create) over the newest state, as lsm_iter (lsm/db.c)
   iterates a read-write handle: a merge of the state's memtables (each cut at the sequence
   number the state read it to) and tables, the newest entry of each key, deletions hidden. The
   state it holds keeps its tables open: a compaction cannot take one from under it. */
#include <stdlib.h>
#include <string.h>

#include "lsm/internal_key.h"
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
  int valid, status;
  err_t err;
  const uint8_t *key; /* user key of the current entry (borrowed from merged) */
  size_t key_len;
  const void *val;
  size_t val_len;
  uint8_t *skip; /* user key whose older entries are hidden */
  size_t skip_len, skip_cap;
  uint8_t *target; /* seek target buffer */
  size_t target_cap;
} lro_iter_t;

static int fail(lro_iter_t *it, int rc, const char *what) {
  it->valid = 0;
  it->status = err_set(&it->err, rc, "iterator: %s", what);
  return rc;
}

static int set_skip(lro_iter_t *it, const uint8_t *key, size_t len) {
  if (len > it->skip_cap) {
    uint8_t *p = realloc(it->skip, len * 2 + 16);
    if (!p) return fail(it, BFH_E_NOMEM, "out of memory");
    it->skip = p;
    it->skip_cap = len * 2 + 16;
  }
  memcpy(it->skip, key, len);
  it->skip_len = len;
  return BFH_OK;
}

/* Moves the merged iterator to the next live entry; has_skip: hide it->skip's older ones. */
static void find_next(lro_iter_t *it, int has_skip) {
  iterator_t *m = it->merged;
  it->valid = 0;
  for (; iterator_valid(m); iterator_next(m)) {
    size_t klen;
    const uint8_t *k = iterator_key(m, &klen);
    internal_key_parts_t p;
    if (internal_key_parse(k, klen, &p) != 0) {
      fail(it, BFH_E_CORRUPT, "malformed internal key");
      return;
    }
    if (has_skip && bytewise_compare(p.user_key, p.user_len, it->skip, it->skip_len) == 0) continue;
    if (p.type == LSM_TYPE_DELETION) {
      if (set_skip(it, p.user_key, p.user_len) != BFH_OK) return;
      has_skip = 1;
      continue;
    }
    it->key = p.user_key;
    it->key_len = p.user_len;
    it->val = iterator_value(m, &it->val_len);
    it->valid = 1;
    return;
  }
  err_t e;
  int rc = iterator_status(m, &e);
  if (rc != BFH_OK) it->status = rc, it->err = e;
}

#define IT(x) ((lro_iter_t *)(x))

static void it_destroy(engine_iter_t *x) {
  if (!x) return;
  iterator_destroy(IT(x)->merged);
  lro_state_unref(IT(x)->s);
  free(IT(x)->skip);
  free(IT(x)->target);
  free(x);
}

static void it_seek_first(engine_iter_t *x) {
  if (IT(x)->status != BFH_OK) return;
  iterator_seek_first(IT(x)->merged);
  find_next(IT(x), 0);
}

static void it_seek(engine_iter_t *x, const void *key, size_t key_len) {
  lro_iter_t *it = IT(x);
  if (it->status != BFH_OK) return;
  if (key_len + INTERNAL_KEY_TAG_BYTES > it->target_cap) {
    uint8_t *p = realloc(it->target, key_len + INTERNAL_KEY_TAG_BYTES);
    if (!p) {
      fail(it, BFH_E_NOMEM, "out of memory");
      return;
    }
    it->target = p;
    it->target_cap = key_len + INTERNAL_KEY_TAG_BYTES;
  }
  size_t n = internal_key_encode(it->target, key, key_len, LSM_MAX_SEQ, LSM_TYPE_VALUE);
  iterator_seek(it->merged, it->target, n);
  find_next(it, 0);
}

static int it_valid(const engine_iter_t *x) {
  const lro_iter_t *it = (const lro_iter_t *)x;
  return it->valid && it->status == BFH_OK;
}

static void it_next(engine_iter_t *x) {
  lro_iter_t *it = IT(x);
  if (!it_valid(x) || set_skip(it, it->key, it->key_len) != BFH_OK) return;
  iterator_next(it->merged);
  find_next(it, 1);
}

static const void *it_key(const engine_iter_t *x, size_t *len) {
  *len = ((const lro_iter_t *)x)->key_len;
  return ((const lro_iter_t *)x)->key;
}

static const void *it_value(const engine_iter_t *x, size_t *len) {
  *len = ((const lro_iter_t *)x)->val_len;
  return ((const lro_iter_t *)x)->val;
}

static int it_status(const engine_iter_t *x, err_t *err) {
  const lro_iter_t *it = (const lro_iter_t *)x;
  if (it->status != BFH_OK) err_set(err, it->status, "%s", it->err.msg);
  return it->status;
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
  *out = &it->base;
  return BFH_OK;
}

/* An ordered iterator over entries gathered in memory; see sorted_iter.h. */
#include "lsm_hooks/engines/stock/sorted_iter.h"

#include <stdlib.h>
#include <string.h>

#include "lsm_hooks/engines/stock/stock.h"

typedef struct rec {
  size_t off; /* of the key in the arena; the value follows it */
  const uint8_t *key;
  uint32_t key_len, val_len;
  uint64_t rank;
  int is_value;
} rec_t;

struct stock_sorted {
  uint8_t *arena;
  size_t len, cap;
  rec_t *recs;
  size_t n, ncap;
};

typedef struct sorted_iter {
  engine_iter_t base;
  stock_sorted_t *s; /* recs[0, n): live entries sorted by key */
  size_t pos;        /* n: not valid */
} sorted_iter_t;

stock_sorted_t *stock_sorted_create(void) {
  return calloc(1, sizeof(stock_sorted_t));
}

void stock_sorted_destroy(stock_sorted_t *s) {
  if (!s) return;
  free(s->arena);
  free(s->recs);
  free(s);
}

int stock_sorted_add(stock_sorted_t *s, const void *key, size_t key_len, const void *val,
                     size_t val_len, int is_value, uint64_t rank) {
  size_t need = key_len + (is_value ? val_len : 0);
  if (stock_grow(&s->arena, &s->cap, s->len + need, 1, 1u << 16) != BFH_OK ||
      stock_grow(&s->recs, &s->ncap, s->n + 1, sizeof *s->recs, 1024) != BFH_OK)
    return BFH_E_NOMEM;
  rec_t *r = &s->recs[s->n++];
  *r = (rec_t){.off = s->len,
               .key_len = (uint32_t)key_len,
               .val_len = is_value ? (uint32_t)val_len : 0,
               .rank = rank,
               .is_value = is_value};
  if (key_len) memcpy(s->arena + s->len, key, key_len);
  if (r->val_len) memcpy(s->arena + s->len + key_len, val, val_len);
  s->len += need;
  return BFH_OK;
}

/* By key ascending, then rank descending: the newest entry of a key first. */
static int cmp_rec(const void *x, const void *y) {
  const rec_t *a = x, *b = y;
  int c = stock_key_cmp(a->key, a->key_len, b->key, b->key_len);
  if (c) return c;
  return a->rank < b->rank ? 1 : a->rank > b->rank ? -1 : 0;
}

#define SIT(it) ((sorted_iter_t *)(it))
#define CSIT(it) ((const sorted_iter_t *)(it))

static void it_destroy(engine_iter_t *it) {
  if (!it) return;
  stock_sorted_destroy(SIT(it)->s);
  free(it);
}
static void it_seek_first(engine_iter_t *it) {
  SIT(it)->pos = 0;
}
static void it_seek(engine_iter_t *it, const void *key, size_t key_len) {
  const stock_sorted_t *s = SIT(it)->s;
  size_t lo = 0, hi = s->n;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (stock_key_cmp(s->recs[mid].key, s->recs[mid].key_len, key, key_len) < 0)
      lo = mid + 1;
    else
      hi = mid;
  }
  SIT(it)->pos = lo;
}
static int it_valid(const engine_iter_t *it) {
  return CSIT(it)->pos < CSIT(it)->s->n;
}
static void it_next(engine_iter_t *it) {
  SIT(it)->pos++;
}
static const void *it_key(const engine_iter_t *it, size_t *len) {
  const rec_t *r = &CSIT(it)->s->recs[CSIT(it)->pos];
  *len = r->key_len;
  return r->key;
}
static const void *it_value(const engine_iter_t *it, size_t *len) {
  const rec_t *r = &CSIT(it)->s->recs[CSIT(it)->pos];
  *len = r->val_len;
  return r->key + r->key_len;
}
static int it_status(const engine_iter_t *it, err_t *err) {
  (void)it, (void)err;
  return BFH_OK; /* every read happened before the iterator was made */
}

static const engine_iter_ops_t sorted_ops = {it_destroy, it_seek_first, it_seek,  it_valid,
                                             it_next,    it_key,        it_value, it_status};

int stock_sorted_finish(stock_sorted_t *s, engine_iter_t **out, err_t *err) {
  sorted_iter_t *it = calloc(1, sizeof *it);
  if (!it) {
    stock_sorted_destroy(s);
    return err_set(err, BFH_E_NOMEM, "iterator: out of memory");
  }
  static const uint8_t empty = 0;
  for (size_t i = 0; i < s->n; i++) s->recs[i].key = s->arena ? s->arena + s->recs[i].off : &empty;
  qsort(s->recs, s->n, sizeof *s->recs, cmp_rec);
  size_t live = 0;
  for (size_t i = 0; i < s->n; i++) {
    int newest = i == 0 || stock_key_cmp(s->recs[i].key, s->recs[i].key_len, s->recs[i - 1].key,
                                         s->recs[i - 1].key_len) != 0;
    if (newest && s->recs[i].is_value) s->recs[live++] = s->recs[i];
  }
  s->n = live;
  it->base.ops = &sorted_ops;
  it->s = s;
  it->pos = live; /* not valid before a seek */
  *out = &it->base;
  return BFH_OK;
}

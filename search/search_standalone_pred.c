/* BFH_SEARCH_STANDALONE for a predicate (search_plan.h): the stand-alone index keeps one
 * composite index per declared attribute (index/standalone.h), in the order of its terms, so
 * a predicate is answered from it the way its cover is read from the filters (search_pred.h),
 * but over the predicate as written: every value that satisfies the predicate holds a term
 * that satisfies one leaf of the cover. An equality's leaf reads the keys under its term
 * (standalone_lookup_term); a range's or a prefix's, those under the terms in it, one seek and
 * a bounded scan (standalone_scan_range). The keys, each once, are the candidates, and each is
 * validated against the whole predicate on its latest version, as every search validates. An
 * AND thus reads one child's postings, not their intersection: the postings of one term are
 * what LevelDB++'s composite index reads too, and validation is exact whatever the
 * candidates.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "search/search_plan.h"

/* The candidate keys, copied out of the index's lookups. */
typedef struct key {
  char *bytes;
  size_t len;
} cand_t;

typedef struct keys {
  cand_t *v;
  size_t n, cap;
  int nomem;
} keys_t;

static int keep_key(void *arg, const void *key, size_t len) {
  keys_t *k = arg;
  if (k->n == k->cap) {
    size_t cap = k->cap ? 2 * k->cap : 64;
    cand_t *v = realloc(k->v, cap * sizeof *v);
    if (!v) {
      k->nomem = 1;
      return 1;
    }
    k->v = v;
    k->cap = cap;
  }
  char *copy = malloc(len ? len : 1);
  if (!copy) {
    k->nomem = 1;
    return 1;
  }
  memcpy(copy, key, len);
  k->v[k->n++] = (cand_t){copy, len};
  return 0;
}

static void keys_release(keys_t *k) {
  for (size_t i = 0; i < k->n; i++) free(k->v[i].bytes);
  free(k->v);
}

static int cmp_key(const void *pa, const void *pb) {
  const cand_t *a = pa, *b = pb;
  size_t n = a->len < b->len ? a->len : b->len;
  int c = n ? memcmp(a->bytes, b->bytes, n) : 0;
  if (c) return c;
  return (a->len > b->len) - (a->len < b->len);
}

static uint64_t now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

/* Leaves of the predicate as written (p->where) such that every value satisfying it holds a
   term satisfying one of them, into cover (its count returned): search_pred.c's find_cover,
   over the written leaves rather than the filters' items. marks: nleaves bytes. */
static size_t where_cover(const expr_t *e, uint8_t *marks, uint32_t *cover) {
  size_t n = expr_leaf_count(e), nc = 0;
  memset(marks, 0, n);
  for (size_t i = 0; i < n; i++) {
    marks[i] = 1;
    if (expr_eval(e, marks)) marks[i] = 0; /* needed */
  }
  for (size_t i = 0; i < n; i++)
    if (!marks[i]) cover[nc++] = (uint32_t)i;
  return nc;
}

/* The keys the index holds under the terms that satisfy leaf l. */
static int leaf_keys(standalone_t *s, const expr_leaf_t *l, keys_t *k, uint64_t *entries,
                     err_t *err) {
  if (l->cmp == EXPR_EQ)
    return standalone_lookup_term(s, (size_t)l->attr, l->term, l->term_len, keep_key, k, entries,
                                  err);
  standalone_range_t r = {0};
  int lo =
      l->cmp == EXPR_GT || l->cmp == EXPR_GE || l->cmp == EXPR_BETWEEN || l->cmp == EXPR_PREFIX;
  if (lo) r.lo = l->term, r.lo_len = l->term_len, r.lo_open = l->cmp == EXPR_GT;
  if (l->cmp == EXPR_LT || l->cmp == EXPR_LE)
    r.hi = l->term, r.hi_len = l->term_len, r.hi_open = l->cmp == EXPR_LT;
  if (l->cmp == EXPR_BETWEEN) r.hi = l->term_hi, r.hi_len = l->term_hi_len;
  r.prefix = l->cmp == EXPR_PREFIX;
  return standalone_scan_range(s, (size_t)l->attr, &r, keep_key, k, entries, err);
}

int search_standalone_pred(const search_ctx_t *c, const search_pred_t *pred, bfh_match_fn fn,
                           void *arg, bfh_search_stats *out, err_t *err) {
  const uint64_t start = now_ns();
  bfh_search_stats st;
  memset(&st, 0, sizeof st);
  keys_t k = {0};
  /* nscratch covers the written leaves too (search_pred.h). */
  uint8_t *marks = malloc(pred->nscratch + 1);
  uint32_t *cover = malloc((expr_leaf_count(pred->where) + 1) * sizeof *cover);
  int rc = marks && cover ? BFH_OK : err_set(err, BFH_E_NOMEM, "search: out of memory");
  size_t ncover = rc == BFH_OK ? where_cover(pred->where, marks, cover) : 0;
  for (size_t i = 0; i < ncover && rc == BFH_OK; i++) {
    uint64_t entries = 0;
    rc = leaf_keys(c->standalone, expr_leaf(pred->where, cover[i]), &k, &entries, err);
    st.entries_scanned += entries;
    if (rc == BFH_OK && k.nomem) rc = err_set(err, BFH_E_NOMEM, "search: out of memory for keys");
  }
  /* Sorted, so that a key found under two terms is validated and reported once. */
  if (rc == BFH_OK && k.n > 1) qsort(k.v, k.n, sizeof *k.v, cmp_key);
  search_pred_match_t m;
  engine_value_test_t test;
  if (rc == BFH_OK) search_pred_test(pred, marks, &m, &test);
  for (size_t i = 0; i < k.n && rc == BFH_OK; i++) {
    if (i > 0 && cmp_key(&k.v[i - 1], &k.v[i]) == 0) continue;
    st.candidates++;
    int holds = engine_key_passes(c->engine, NULL, k.v[i].bytes, k.v[i].len, &test, err);
    if (holds < 0) rc = holds;
    if (holds <= 0) continue;
    st.results++;
    if (fn && fn(arg, k.v[i].bytes, k.v[i].len) != 0) break;
  }
  free(marks);
  free(cover);
  keys_release(&k);
  st.method_used = BFH_SEARCH_STANDALONE;
  st.elapsed_ns = now_ns() - start;
  if (out) *out = st;
  return rc;
}

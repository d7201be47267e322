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

#include "search/key_list.h"
#include "search/search_plan.h"
#include "util/clock.h"

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
static int leaf_keys(standalone_t *s, const expr_leaf_t *l, key_list_t *k, uint64_t *entries,
                     err_t *err) {
  if (l->cmp == EXPR_EQ)
    return standalone_lookup_term(s, (size_t)l->attr, l->term, l->term_len, key_list_add, k,
                                  entries, err);
  standalone_range_t r = {0};
  int lo =
      l->cmp == EXPR_GT || l->cmp == EXPR_GE || l->cmp == EXPR_BETWEEN || l->cmp == EXPR_PREFIX;
  if (lo) r.lo = l->term, r.lo_len = l->term_len, r.lo_open = l->cmp == EXPR_GT;
  if (l->cmp == EXPR_LT || l->cmp == EXPR_LE)
    r.hi = l->term, r.hi_len = l->term_len, r.hi_open = l->cmp == EXPR_LT;
  if (l->cmp == EXPR_BETWEEN) r.hi = l->term_hi, r.hi_len = l->term_hi_len;
  r.prefix = l->cmp == EXPR_PREFIX;
  return standalone_scan_range(s, (size_t)l->attr, &r, key_list_add, k, entries, err);
}

int search_standalone_pred(const search_ctx_t *c, const search_pred_t *pred, bfh_match_fn fn,
                           void *arg, bfh_search_stats *out, err_t *err) {
  const uint64_t start = clock_now_ns();
  bfh_search_stats st;
  memset(&st, 0, sizeof st);
  key_list_t k = {0};
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
  if (rc == BFH_OK && k.n > 1) qsort(k.v, k.n, sizeof *k.v, key_copy_cmp);
  search_pred_match_t m;
  engine_value_test_t test;
  if (rc == BFH_OK) search_pred_test(pred, marks, &m, &test);
  for (size_t i = 0; i < k.n && rc == BFH_OK; i++) {
    if (i > 0 && key_copy_cmp(&k.v[i - 1], &k.v[i]) == 0) continue;
    st.candidates++;
    int holds = engine_key_passes(c->engine, NULL, k.v[i].bytes, k.v[i].len, &test, err);
    if (holds < 0) rc = holds;
    if (holds <= 0) continue;
    st.results++;
    if (fn && fn(arg, k.v[i].bytes, k.v[i].len) != 0) break;
  }
  free(marks);
  free(cover);
  key_list_release(&k);
  st.method_used = BFH_SEARCH_STANDALONE;
  st.elapsed_ns = clock_now_ns() - start;
  if (out) *out = st;
  return rc;
}

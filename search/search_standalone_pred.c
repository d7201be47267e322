/* BFH_SEARCH_STANDALONE for a predicate (search_plan.h): the stand-alone index keeps one
 * composite index per declared attribute (index/standalone.h), so a predicate is answered
 * from it the way its cover is read from the filters (search_pred.h). Every value that
 * satisfies the predicate holds the term of one of the cover's leaves; the keys the index
 * holds under those terms, each once, are the candidates, and each is validated against the
 * whole predicate on its latest version, as every search validates. An AND thus reads one
 * child's postings, not their intersection: the postings of one term are what LevelDB++'s
 * composite index reads too, and validation is exact whatever the candidates.
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

int search_standalone_pred(const search_ctx_t *c, const search_pred_t *pred, bfh_match_fn fn,
                           void *arg, bfh_search_stats *out, err_t *err) {
  const uint64_t start = now_ns();
  bfh_search_stats st;
  memset(&st, 0, sizeof st);
  keys_t k = {0};
  int rc = BFH_OK;
  for (size_t i = 0; i < pred->ncover && rc == BFH_OK; i++) {
    const expr_leaf_t *l = expr_leaf(pred->expr, pred->cover[i]);
    uint64_t entries = 0;
    rc = standalone_lookup_term(c->standalone, (size_t)l->attr, l->term, l->term_len, keep_key,
                                &k, &entries, err);
    st.entries_scanned += entries;
    if (rc == BFH_OK && k.nomem) rc = err_set(err, BFH_E_NOMEM, "search: out of memory for keys");
  }
  /* Sorted, so that a key found under two terms is validated and reported once. */
  if (rc == BFH_OK && k.n > 1) qsort(k.v, k.n, sizeof *k.v, cmp_key);
  uint8_t *marks = rc == BFH_OK ? malloc(pred->nscratch ? pred->nscratch : 1) : NULL;
  if (rc == BFH_OK && !marks) rc = err_set(err, BFH_E_NOMEM, "search: out of memory");
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
  keys_release(&k);
  st.method_used = BFH_SEARCH_STANDALONE;
  st.elapsed_ns = now_ns() - start;
  if (out) *out = st;
  return rc;
}

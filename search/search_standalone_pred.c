/* BFH_SEARCH_STANDALONE for a predicate (search_plan.h): the stand-alone index keeps one
 * composite index per declared attribute (index/standalone.h), in the order of its terms, so
 * a predicate is answered from it the way its cover is read from the filters (search_pred.h),
 * but over the predicate as written: every value that satisfies the predicate holds a term
 * that satisfies one leaf of the cover. An equality's leaf reads the keys under its term
 * (standalone_lookup_term); a range's or a prefix's, those under the terms in it, one seek and
 * a bounded scan (standalone_scan_range). The keys, each once, are the candidates.
 *
 * The other leaves narrow them before any value is read: a key is validated only if the
 * tree, evaluated over the leaves whose postings name it, may hold. The index holds the
 * postings of every live value, so a key whose value satisfies the predicate is named under
 * each leaf its value satisfies, and the tree (AND and OR only) holds over them: an AND of two
 * 1% terms meeting on 0.1% of the keys reads two postings lists and validates the 0.1%, not
 * one child's 1%. A leaf whose postings outnumber the candidates many times over costs more to
 * read than the gets it would save: it is read no further and counted as holding for every
 * key. Each candidate is then validated against the whole predicate on its latest version, as
 * every search validates, unless the index can answer for it (doc/standalone.md "Exact
 * answers"): when every leaf was read in full under terms held whole, the tree holding over a
 * key's postings means its value satisfies the predicate, as far as those postings are live,
 * and they are when the index is exact and no write of the key was in flight
 * (standalone_trusts).
 *
 * A whole value's search, and AUTO's trial of the index for it (search_standalone_value), is
 * the same frame over the value's one lookup: the keys, then the trial, then their answer.
 */
#include <stdlib.h>
#include <string.h>

#include "lsm_hooks/engines/validate.h"
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

/* A leaf past the cover is read while its postings are at most this many times the
   candidates plus LEAF_SLACK: a posting costs about an eightieth of a validation (a get and
   the predicate's test; the tag and AND rows of measurements/query/attributes-1000000.csv:
   10,000 validations in 111 ms, 21,111 postings and 1,111 validations in 15 ms), so a list
   eight times the candidates costs a tenth of their gets. */
#define LEAF_POSTINGS_PER_CANDIDATE 8
#define LEAF_SLACK 64

/* The keys of one lookup into list, stopping (over set) once list holds limit keys (0: no
   limit). */
typedef struct gather {
  key_list_t *list;
  size_t limit;
  int over;
} gather_t;

static int gather_key(void *arg, const void *key, size_t len) {
  gather_t *g = arg;
  if (g->limit && g->list->n >= g->limit) return g->over = 1;
  return key_list_add(g->list, key, len);
}

/* The keys the index holds under the terms that satisfy leaf l, into g; the index entries
   read are added to *entries. *whole is cleared when a key may be there under a term the index
   holds cut or hashed (its value may not satisfy l). */
static int leaf_keys(standalone_t *s, const expr_leaf_t *l, gather_t *g, uint64_t *entries,
                     int *whole, err_t *err) {
  uint64_t read = 0, inexact = 0;
  int rc;
  if (l->cmp == EXPR_EQ) {
    rc =
        standalone_lookup_term(s, (size_t)l->attr, l->term, l->term_len, gather_key, g, &read, err);
    *entries += read;
    if (!standalone_term_whole(s, (size_t)l->attr, l->term_len)) *whole = 0;
    return rc;
  }
  standalone_range_t r = {0};
  int lo =
      l->cmp == EXPR_GT || l->cmp == EXPR_GE || l->cmp == EXPR_BETWEEN || l->cmp == EXPR_PREFIX;
  if (lo) r.lo = l->term, r.lo_len = l->term_len, r.lo_open = l->cmp == EXPR_GT;
  if (l->cmp == EXPR_LT || l->cmp == EXPR_LE)
    r.hi = l->term, r.hi_len = l->term_len, r.hi_open = l->cmp == EXPR_LT;
  if (l->cmp == EXPR_BETWEEN) r.hi = l->term_hi, r.hi_len = l->term_hi_len;
  r.prefix = l->cmp == EXPR_PREFIX;
  rc = standalone_scan_range(s, (size_t)l->attr, &r, gather_key, g, &read, &inexact, err);
  *entries += read;
  if (inexact) *whole = 0;
  return rc;
}

/* The postings: the cover's leaves into k (at most cover_limit keys, 0 none: over set past
   it), then the other leaves while each stays within its share; a leaf read no further is
   marked in unknown (nleaves bytes). Each leaf's keys are a run of k: runs[r] is where run r
   starts (nleaves + 1 entries), their count in *nruns. The index entries read are added to
   *entries. *exact is 1 when every leaf was read in full, each under terms held whole: a key
   the tree holds for over its postings then has a value that satisfies it, as far as the
   index's entries for it are live (standalone_trusts). */
static int read_postings(standalone_t *s, const expr_t *e, const uint8_t *in_cover,
                         size_t cover_limit, key_list_t *k, uint8_t *unknown, int *over,
                         size_t *runs, size_t *nruns, uint64_t *entries, int *exact, err_t *err) {
  size_t n = expr_leaf_count(e);
  int rc = BFH_OK;
  *nruns = 0;
  *exact = 1;
  for (size_t i = 0; i < n && rc == BFH_OK && !*over; i++) {
    if (!in_cover[i]) continue;
    runs[(*nruns)++] = k->n;
    k->tag = (uint32_t)i;
    gather_t g = {k, cover_limit, 0};
    rc = leaf_keys(s, expr_leaf(e, i), &g, entries, exact, err);
    *over = g.over;
  }
  size_t candidates = k->n;
  for (size_t i = 0; i < n && rc == BFH_OK && !*over; i++) {
    if (in_cover[i]) continue;
    size_t before = k->n;
    k->tag = (uint32_t)i;
    gather_t g = {k, before + LEAF_POSTINGS_PER_CANDIDATE * candidates + LEAF_SLACK, 0};
    rc = leaf_keys(s, expr_leaf(e, i), &g, entries, exact, err);
    if (g.over) {
      key_list_truncate(k, before);
      unknown[i] = 1;
      *exact = 0;
    } else {
      runs[(*nruns)++] = before;
    }
  }
  if (rc == BFH_OK && k->nomem) rc = err_set(err, BFH_E_NOMEM, "search: out of memory for keys");
  return rc;
}

/* A run of k's keys being read in key order: the next is k->v[pos], the run ends at end. */
typedef struct cursor {
  size_t pos, end;
} cursor_t;

static int cursor_before(const key_list_t *k, const cursor_t *a, const cursor_t *b) {
  return key_copy_cmp(&k->v[a->pos], &k->v[b->pos]) < 0;
}

/* Restores the heap h (n cursors, the least key first) below h[i], whose key grew. */
static void sift_down(const key_list_t *k, cursor_t *h, size_t n, size_t i) {
  for (;;) {
    size_t l = 2 * i + 1, least = i;
    if (l < n && cursor_before(k, &h[l], &h[least])) least = l;
    if (l + 1 < n && cursor_before(k, &h[l + 1], &h[least])) least = l + 1;
    if (least == i) return;
    cursor_t t = h[i];
    h[i] = h[least];
    h[least] = t;
    i = least;
  }
}

/* The candidates, into *cand (grown as needed, *cap its room), their count into *ncand:
   each key of k once, in key order, where the tree e holds over the leaves whose postings
   name it and those read no further (unknown), stopping past limit of them (0: no limit).
   k's runs (read_postings) are merged through a heap of cursors, a key's postings meeting as
   they come off it: an equality's keys come from the index in key order (a range's in the
   order of its terms: such a run is sorted first), so the merge reads each key once and
   compares it about log2(runs) times, where sorting the whole list would compare it about
   log2(keys) times (an IN of two terms AND another of two: two against seventeen at 100,000
   keys). marks: nleaves bytes; heap: nruns cursors. */
static int find_candidates(const expr_t *e, key_list_t *k, const size_t *runs, size_t nruns,
                           const uint8_t *unknown, size_t limit, uint8_t *marks, cursor_t *heap,
                           key_ref_t **cand, size_t *cap, size_t *ncand, err_t *err) {
  size_t nleaves = expr_leaf_count(e), n = 0;
  *ncand = 0;
  for (size_t r = 0; r < nruns; r++) {
    size_t lo = runs[r], hi = r + 1 < nruns ? runs[r + 1] : k->n, i = lo + 1;
    if (lo == hi) continue;
    while (i < hi && key_copy_cmp(&k->v[i - 1], &k->v[i]) <= 0) i++;
    if (i < hi) qsort(k->v + lo, hi - lo, sizeof *k->v, key_copy_cmp);
    heap[n++] = (cursor_t){lo, hi};
  }
  for (size_t i = n / 2; i-- > 0;) sift_down(k, heap, n, i);
  while (n && !(limit && *ncand > limit)) {
    const key_copy_t *key = &k->v[heap[0].pos];
    memcpy(marks, unknown, nleaves);
    do {
      marks[k->v[heap[0].pos].tag] = 1;
      if (++heap[0].pos == heap[0].end) heap[0] = heap[--n];
      sift_down(k, heap, n, 0);
    } while (n && key_copy_cmp(&k->v[heap[0].pos], key) == 0);
    if (!expr_eval(e, marks)) continue;
    if (*ncand == *cap) {
      size_t room = *cap ? 2 * *cap : 64;
      key_ref_t *grown = realloc(*cand, room * sizeof *grown);
      if (!grown) return err_set(err, BFH_E_NOMEM, "search: out of memory for %zu keys", room);
      *cand = grown;
      *cap = room;
    }
    (*cand)[(*ncand)++] = (key_ref_t){key->bytes, key->len};
  }
  return BFH_OK;
}

/* The n candidates: those the index answers for (exact, and standalone_trusts over trust)
   are reported to fn as they are; the others are validated by test against their latest
   versions, reporting those that pass (engine_validate_keys: their gets read ahead together).
   Until fn returns nonzero; counted in st. keys is reordered. The validation's time, without
   the caller's (fn), spread over all n (a key answered for costs a hash and two loads, taken
   as nothing), is what the planner weighs the next candidates by (standalone_candidate_ns). */
static int validate(const search_ctx_t *c, const standalone_trust_t *trust, int exact,
                    key_ref_t *keys, size_t n, const engine_value_test_t *test, bfh_match_fn fn,
                    void *arg, bfh_search_stats *st, err_t *err) {
  size_t left = 0;
  int stop = 0;
  for (size_t i = 0; i < n && !stop; i++) {
    if (!exact || !standalone_trusts(c->standalone, trust, keys[i].bytes, keys[i].len)) {
      keys[left++] = keys[i];
      continue;
    }
    st->candidates++;
    st->results++;
    st->trusted++;
    stop = fn && fn(arg, keys[i].bytes, keys[i].len) != 0;
  }
  if (stop) return BFH_OK;
  engine_validated_t v = {0, 0, 0};
  int rc = engine_validate_keys(c->engine, keys, left, test, fn, arg, &v, err);
  st->candidates += v.candidates;
  st->results += v.results;
  if (rc == BFH_OK) standalone_note_validation(c->standalone, n, v.ns);
  return rc;
}

int search_standalone_pred(const search_ctx_t *c, const search_pred_t *pred,
                           const search_standalone_trial_t *trial, bfh_match_fn fn, void *arg,
                           bfh_search_stats *out, err_t *err) {
  const uint64_t start = clock_now_ns();
  const expr_t *e = pred->where;
  size_t nleaves = expr_leaf_count(e);
  bfh_search_stats st;
  memset(&st, 0, sizeof st);
  key_list_t k = {0};
  /* nscratch covers the written leaves too (search_pred.h). */
  uint8_t *marks = malloc(pred->nscratch + 1);
  uint8_t *unknown = calloc(nleaves + 1, 1), *in_cover = calloc(nleaves + 1, 1);
  uint32_t *cover = malloc((nleaves + 1) * sizeof *cover);
  size_t *runs = malloc((nleaves + 1) * sizeof *runs), nruns = 0;
  int rc = marks && unknown && in_cover && cover && runs
               ? BFH_OK
               : err_set(err, BFH_E_NOMEM, "search: out of memory");
  size_t ncover = rc == BFH_OK ? where_cover(e, marks, cover) : 0;
  for (size_t i = 0; i < ncover; i++) in_cover[cover[i]] = 1;
  int over = 0, exact = 0;
  size_t cover_limit = trial ? LEAF_POSTINGS_PER_CANDIDATE * trial->max_candidates : 0;
  standalone_trust_t trust;
  standalone_trust_begin(c->standalone, &trust);
  if (rc == BFH_OK)
    rc = read_postings(c->standalone, e, in_cover, cover_limit, &k, unknown, &over, runs, &nruns,
                       &st.entries_scanned, &exact, err);
  cursor_t *heap = rc == BFH_OK ? malloc((nruns + 1) * sizeof *heap) : NULL;
  if (rc == BFH_OK && !heap) rc = err_set(err, BFH_E_NOMEM, "search: out of memory");
  key_ref_t *cand = NULL;
  size_t ncand = 0, cap = 0;
  if (rc == BFH_OK && !over)
    rc = find_candidates(e, &k, runs, nruns, unknown, trial ? trial->max_candidates : 0, marks,
                         heap, &cand, &cap, &ncand, err);
  if (rc == BFH_OK && trial &&
      (over || ncand > trial->max_candidates || !trial->worth(trial->arg, ncand)))
    rc = BFH_NOT_FOUND;
  search_pred_match_t m;
  engine_value_test_t test;
  if (rc == BFH_OK) search_pred_test(pred, marks, &m, &test);
  if (rc == BFH_OK) rc = validate(c, &trust, exact, cand, ncand, &test, fn, arg, &st, err);
  free(cand);
  free(heap);
  free(marks);
  free(unknown);
  free(in_cover);
  free(cover);
  free(runs);
  key_list_release(&k);
  st.method_used = BFH_SEARCH_STANDALONE;
  st.elapsed_ns = clock_now_ns() - start;
  if (out) *out = st;
  return rc;
}

int search_standalone_value(const search_ctx_t *c, const void *val, size_t val_len,
                            const uint64_t *hash, const search_standalone_trial_t *trial,
                            bfh_match_fn fn, void *arg, bfh_search_stats *out, err_t *err) {
  const uint64_t start = clock_now_ns();
  bfh_search_stats st;
  memset(&st, 0, sizeof st);
  key_list_t k = {0};
  gather_t g = {&k, trial ? trial->max_candidates : 0, 0};
  int rc = trial && trial->max_candidates == 0 ? BFH_NOT_FOUND : BFH_OK;
  standalone_trust_t trust;
  standalone_trust_begin(c->standalone, &trust);
  if (rc == BFH_OK)
    rc = standalone_value_keys(c->standalone, val, val_len, hash, gather_key, &g,
                               &st.entries_scanned, err);
  if (rc == BFH_OK && k.nomem) rc = err_set(err, BFH_E_NOMEM, "search: out of memory for keys");
  if (rc == BFH_OK && trial && (g.over || !trial->worth(trial->arg, k.n))) rc = BFH_NOT_FOUND;
  /* The index holds each key once under a value, in key order. */
  key_ref_t *keys = rc == BFH_OK ? malloc((k.n + 1) * sizeof *keys) : NULL;
  if (rc == BFH_OK && !keys)
    rc = err_set(err, BFH_E_NOMEM, "search: out of memory for %zu keys", k.n);
  for (size_t i = 0; rc == BFH_OK && i < k.n; i++) keys[i] = (key_ref_t){k.v[i].bytes, k.v[i].len};
  engine_value_test_t test = engine_value_test_equal(val, val_len);
  /* A value longer than STANDALONE_INLINE_MAX is held by its hash: its keys are validated. */
  int exact = val_len <= STANDALONE_INLINE_MAX;
  if (rc == BFH_OK) rc = validate(c, &trust, exact, keys, k.n, &test, fn, arg, &st, err);
  free(keys);
  key_list_release(&k);
  st.method_used = BFH_SEARCH_STANDALONE;
  st.elapsed_ns = clock_now_ns() - start;
  if (out) *out = st;
  return rc;
}

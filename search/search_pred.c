/* The predicate side of a search; see search_pred.h. */
#include "search/search_pred.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "filters/range_filter.h"
#include "index/value_block_map.h"

int search_pred_lookup(void *terms, const char *name, size_t len, int *is_int) {
  if (terms) return terms_lookup(terms, name, len, is_int);
  if (len != strlen(SEARCH_PRED_VALUE_NAME) || memcmp(name, SEARCH_PRED_VALUE_NAME, len) != 0)
    return -1;
  *is_int = 0;
  return 0;
}

/* expr_terms_fn over the declared attributes, or the whole value without them. */
static int extract(void *terms, int attr, const void *val, size_t len, expr_term_fn fn,
                   void *fn_arg) {
  if (terms) return terms_extract(terms, attr, val, len, fn, fn_arg);
  (void)attr;
  fn(fn_arg, val, len);
  return 0;
}

/* Leaves whose items every satisfying value holds one of. The tree is monotone (AND and OR
   only), so a set S of leaves is such a cover exactly when the predicate is false with S's
   leaves false and every other leaf true. From S = every leaf (false everywhere: a cover),
   each leaf in turn is left out when S stays a cover without it: an AND keeps one of its
   children's covers, an OR all of them. */
static void find_cover(search_pred_t *p, uint8_t *marks) {
  memset(marks, 0, p->nleaves);
  for (size_t i = 0; i < p->nleaves; i++) {
    marks[i] = 1;
    if (expr_eval(p->expr, marks)) marks[i] = 0; /* needed */
  }
  p->ncover = 0;
  for (size_t i = 0; i < p->nleaves; i++)
    if (!marks[i]) p->cover[p->ncover++] = (uint32_t)i;
}

/* The item hash of leaf l of the plan: a term's, or a range item's (its 9 bytes). */
static uint64_t leaf_hash(const terms_t *terms, const expr_leaf_t *l, uint64_t seed) {
  if (!terms) return bfh_value_hash(l->term, l->term_len, seed);
  if (l->cmp != EXPR_ITEM)
    return terms_hash_term(terms, (size_t)l->attr, l->term, l->term_len, seed);
  range_probe_t r = {l->term[0], range_code_bytes(l->term + 1, RANGE_CODE_BYTES)};
  return terms_hash_probe(terms, (size_t)l->attr, &r, seed);
}

/* The codes [*lo, *hi] every term satisfying the range or prefix leaf l has (a superset for
   text, whose code is its first 8 bytes); 0 when none can (an empty range, exactly). */
static int leaf_codes(const expr_leaf_t *l, int is_int, uint64_t *lo, uint64_t *hi) {
  uint64_t a = range_code_bytes(l->term, l->term_len);
  *lo = 0;
  *hi = UINT64_MAX;
  switch (l->cmp) {
    case EXPR_LT: /* an :int below the least integer holds nothing */
      if (is_int && a == 0) return 0;
      *hi = is_int ? a - 1 : a;
      return 1;
    case EXPR_LE:
      *hi = a;
      return 1;
    case EXPR_GT:
      if (is_int && a == UINT64_MAX) return 0;
      *lo = is_int ? a + 1 : a;
      return 1;
    case EXPR_GE:
      *lo = a;
      return 1;
    case EXPR_BETWEEN:
      *lo = a;
      *hi = range_code_bytes(l->term_hi, l->term_hi_len);
      return *lo <= *hi;
    case EXPR_PREFIX:
      range_code_prefix(l->term, l->term_len, lo, hi);
      return 1;
    default:
      return 1;
  }
}

/* Leaf l of the plan's zone (search_pred_t.zone_id): its attribute's zone id and the codes
   [*lo, *hi] of the terms that hold it and the leaf of `where` it came from (the written
   leaf of its attribute and column): a term's code for an equality; for a range item, its
   interval cut to the written range's codes (a value that satisfies the range has its code in
   both), and *src that written leaf's index (else SEARCH_PRED_NO_SRC). 0 when its attribute
   has none. */
static uint64_t leaf_zone(const terms_t *terms, const expr_t *where, const expr_leaf_t *l,
                          uint64_t *lo, uint64_t *hi, uint64_t *src) {
  *lo = 0;
  *hi = UINT64_MAX;
  *src = SEARCH_PRED_NO_SRC;
  if (!terms || l->attr < 0) return 0;
  uint64_t id = terms_zone_id(terms, (size_t)l->attr);
  if (id == 0) return 0;
  if (l->cmp == EXPR_EQ) {
    *lo = *hi = range_code_bytes(l->term, l->term_len);
    return id;
  }
  if (l->cmp != EXPR_ITEM || l->term_len != 1 + RANGE_CODE_BYTES || l->term[0] >= 64) return 0;
  unsigned j = l->term[0];
  uint64_t v = range_code_bytes(l->term + 1, RANGE_CODE_BYTES);
  *lo = v << j;
  *hi = *lo | ((UINT64_C(1) << j) - 1);
  int is_int = terms_spec(terms, (size_t)l->attr)->is_int;
  for (size_t i = 0; i < expr_leaf_count(where); i++) {
    const expr_leaf_t *w = expr_leaf(where, i);
    uint64_t a, b;
    if (w->attr != l->attr || w->column != l->column || w->cmp == EXPR_EQ) continue;
    if (!leaf_codes(w, is_int, &a, &b)) break;
    if (a > *lo) *lo = a;
    if (b < *hi) *hi = b;
    *src = i;
    break;
  }
  return id;
}

/* 1 if range item i of p's plan was not cut by its written range: its whole interval
   [v << j, (v << j) + 2^j - 1] is its zone. */
static int item_whole(const search_pred_t *p, size_t i) {
  const expr_leaf_t *l = expr_leaf(p->expr, i);
  if (l->cmp != EXPR_ITEM || l->term_len != RANGE_ITEM_BYTES || l->term[0] >= 64) return 0;
  unsigned j = l->term[0];
  uint64_t lo = range_code_bytes(l->term + 1, RANGE_CODE_BYTES) << j;
  return p->zone_lo[i] == lo && p->zone_hi[i] == (lo | ((UINT64_C(1) << j) - 1));
}

/* p's ranges (search_pred_t.ranges, room for nleaves) from the zones of its range items,
   whether each is exact, and the pieces of a table's range filters they may read. */
static void group_ranges(search_pred_t *p) {
  p->nranges = p->range_pieces = 0;
  for (size_t i = 0; i < p->nleaves; i++) {
    if (p->zone_src[i] == SEARCH_PRED_NO_SRC) continue;
    size_t k = 0;
    while (k < p->nranges && p->ranges[k].src != p->zone_src[i]) k++;
    search_pred_range_t *r = &p->ranges[k];
    if (k == p->nranges) { /* the first item of its range */
      *r = (search_pred_range_t){p->zone_src[i], p->zone_id[i], UINT64_MAX, 0, 0};
      p->nranges++;
    }
    if (p->zone_lo[i] < r->lo) r->lo = p->zone_lo[i];
    if (p->zone_hi[i] > r->hi) r->hi = p->zone_hi[i];
  }
  for (size_t k = 0; k < p->nranges; k++) {
    search_pred_range_t *r = &p->ranges[k];
    size_t items = 0, whole = 0;
    for (size_t i = 0; i < p->nleaves; i++)
      if (p->zone_src[i] == r->src) {
        items++;
        whole += (size_t)item_whole(p, i);
      }
    r->exact = whole == items && items <= SEARCH_PRED_EXACT_ITEMS;
    if (r->lo > r->hi || r->exact) continue;
    uint64_t blocks =
        (r->hi >> VALUE_BLOCK_MAP_RANGE_LOG2) - (r->lo >> VALUE_BLOCK_MAP_RANGE_LOG2) + 1;
    if (blocks <= RANGE_FILTER_MAX_BLOCKS) p->range_pieces += (size_t)blocks;
  }
}

/* expr_expand's fn: an equality is its term; a range or prefix the items of its cover. */
static int expand_leaf(void *arg, const expr_leaf_t *l, expr_item_t *out, size_t cap) {
  const terms_t *terms = arg;
  if (l->cmp == EXPR_EQ) return EXPR_EXPAND_SELF;
  int is_int = terms && terms_spec(terms, (size_t)l->attr)->is_int;
  uint64_t lo, hi;
  if (!leaf_codes(l, is_int, &lo, &hi)) return 0;
  const range_levels_t *lv = terms ? terms_range_levels(terms, (size_t)l->attr) : NULL;
  if (!lv) return EXPR_EXPAND_TRUE;
  range_probe_t probe[SEARCH_PRED_RANGE_BUDGET];
  range_cover_result_t r;
  range_cover(lo, hi, lv, SEARCH_PRED_RANGE_BUDGET < cap ? SEARCH_PRED_RANGE_BUDGET : cap, probe,
              SEARCH_PRED_RANGE_BUDGET, &r);
  if (r.unbounded) return EXPR_EXPAND_TRUE;
  for (size_t i = 0; i < r.n; i++) {
    out[i] = (expr_item_t){.cmp = EXPR_ITEM, .len = RANGE_ITEM_BYTES};
    range_probe_item(&probe[i], out[i].bytes);
  }
  return (int)r.n;
}

/* The smallest group of gs[0, n) on attribute attr, or NULL. */
static const expr_eq_group_t *group_of(const expr_eq_group_t *gs, size_t n, size_t attr) {
  const expr_eq_group_t *best = NULL;
  for (size_t i = 0; i < n; i++)
    if (gs[i].attr == (int)attr && (!best || gs[i].n < best->n)) best = &gs[i];
  return best;
}

/* The composite c's conjunct for groups a and b: an OR of its pairs' terms and its overflow
   term. */
static int add_pairs(const terms_t *terms, size_t c, const expr_eq_group_t *a,
                     const expr_eq_group_t *b, expr_implied_t *out) {
  const char *name = terms_spec(terms, c)->name;
  int rc = expr_implied_add(out, (int)c, name, ATTR_PAIR_OVERFLOW_TERM, 0);
  uint8_t small[256];
  for (size_t i = 0; i < a->n && rc == ST_OK; i++)
    for (size_t j = 0; j < b->n && rc == ST_OK; j++) {
      const expr_leaf_t *x = a->leaf[i], *y = b->leaf[j];
      size_t len = attr_pair_term_bytes(x->term_len, y->term_len);
      uint8_t *buf = len <= sizeof small ? small : malloc(len);
      if (!buf) return ST_E_NOMEM;
      attr_pair_term(x->term, x->term_len, y->term, y->term_len, buf);
      rc = expr_implied_add(out, (int)c, name, buf, len);
      if (buf != small) free(buf);
    }
  return rc == ST_OK ? expr_implied_end(out) : rc;
}

/* expr_expand_implied's imply: for each declared composite whose two members an AND holds
   equalities on, the composite's terms of their pairs (at most ATTR_PAIR_MAX_TERMS) or its
   overflow term, which every value that satisfies the AND holds one of (query/terms.h). */
static int imply_pairs(void *arg, const expr_eq_group_t *gs, size_t n, expr_implied_t *out) {
  const terms_t *terms = arg;
  if (n < 2) return ST_OK;
  int rc = ST_OK;
  for (size_t c = 0; c < terms_count(terms) && rc == ST_OK; c++) {
    size_t ia, ib;
    if (!terms_pair(terms, c, &ia, &ib)) continue;
    const expr_eq_group_t *a = group_of(gs, n, ia), *b = group_of(gs, n, ib);
    if (a && b && a->n * b->n <= ATTR_PAIR_MAX_TERMS) rc = add_pairs(terms, c, a, b, out);
  }
  return rc;
}

int search_pred_bind(expr_t *e, const terms_t *terms, err_t *err) {
  int rc = expr_bind(e, search_pred_lookup, (void *)terms, err);
  for (size_t i = 0; rc == ST_OK && terms && i < expr_leaf_count(e); i++) {
    const expr_leaf_t *l = expr_leaf(e, i);
    const attr_spec_t *s = terms_spec(terms, (size_t)l->attr);
    if (s->kind == ATTR_PAIR)
      rc = err_set(err, ST_E_INVALID,
                   "expression: column %u: %s is a composite of %s and %s: query its members",
                   l->column, s->name, s->member[0], s->member[1]);
  }
  return rc;
}

/* The length of leaf l's needle (search_pred.h): the bytes of its term every satisfying
   value's term starts with; 0 for none. */
static size_t needle_len(const expr_leaf_t *l) {
  switch (l->cmp) {
    case EXPR_EQ:
    case EXPR_PREFIX:
      return l->term_len;
    case EXPR_BETWEEN: {
      size_t n = 0;
      while (n < l->term_len && n < l->term_hi_len && l->term[n] == l->term_hi[n]) n++;
      return n;
    }
    default:
      return 0;
  }
}

/* The decimal digits of v's magnitude (at most 19) into d, NUL-terminated; their count. */
static size_t magnitude_digits(int64_t v, char d[21]) {
  return (size_t)snprintf(d, 21, "%" PRIu64, v < 0 ? 0 - (uint64_t)v : (uint64_t)v);
}

/* The integer of an :int attribute's term (attr_int_term's inverse: its code, sign bit
   flipped back). */
static int64_t int_of_term(const uint8_t *t) {
  return (int64_t)(range_code_bytes(t, ATTR_INT_TERM_BYTES) ^ (1ull << 63));
}

/* Leaf l's DIGITS needle (search_pred.h) into d, its length returned; 0 for none. Between
   two ends of one sign the magnitudes lie between theirs, and with as many digits as theirs
   they start with the digits the two share. */
static size_t digits_needle(const expr_leaf_t *l, uint8_t *d) {
  if (l->term_len != ATTR_INT_TERM_BYTES) return 0;
  int64_t lo = int_of_term(l->term), hi = lo;
  if (l->cmp == EXPR_BETWEEN) {
    if (l->term_hi_len != ATTR_INT_TERM_BYTES) return 0;
    hi = int_of_term(l->term_hi);
  } else if (l->cmp != EXPR_EQ) {
    return 0;
  }
  if (lo > hi || (lo < 0) != (hi < 0)) return 0;
  char a[21], b[21];
  size_t na = magnitude_digits(lo, a), nb = magnitude_digits(hi, b), n = 0;
  if (na != nb) return 0;
  while (n < na && a[n] == b[n]) n++;
  memcpy(d, a, n);
  return n;
}

/* SEARCH_PRED_VERBATIM_* of leaf l of the bound predicate and its needle *nd
   (search_pred.h says why each). */
static uint8_t verbatim_kind(const terms_t *terms, const expr_leaf_t *l, search_pred_needle_t *nd) {
  const attr_spec_t *s = terms ? terms_spec(terms, (size_t)l->attr) : NULL;
  if (s && s->is_int) {
    nd->len = s->kind == ATTR_JSON || s->kind == ATTR_PAIR ? 0 : digits_needle(l, nd->digits);
    return nd->len ? SEARCH_PRED_VERBATIM_DIGITS : SEARCH_PRED_VERBATIM_NONE;
  }
  const size_t n = nd->len = needle_len(l);
  if (n == 0) return SEARCH_PRED_VERBATIM_NONE;
  if (!s) return SEARCH_PRED_VERBATIM_ALWAYS; /* the whole value */
  switch (s->kind) {
    case ATTR_VALUE:
    case ATTR_BYTES:
      return SEARCH_PRED_VERBATIM_ALWAYS;
    case ATTR_CSV:
    case ATTR_TSV:
      return memchr(l->term, '"', n) ? SEARCH_PRED_VERBATIM_NONE : SEARCH_PRED_VERBATIM_ALWAYS;
    case ATTR_JSON:
      for (size_t i = 0; i < n; i++)
        if (!strchr("-+.0123456789eE", l->term[i]) || l->term[i] == 0)
          return SEARCH_PRED_VERBATIM_JSON;
      return SEARCH_PRED_VERBATIM_NONE;
    case ATTR_PAIR: /* never a leaf of a predicate (search_pred_bind) */
      return SEARCH_PRED_VERBATIM_NONE;
  }
  return SEARCH_PRED_VERBATIM_NONE;
}

/* A BETWEEN on an :int attribute of at most this many integers gives a needle per integer to
   a block's scan (their digits) instead of the digits their ends share. */
#define SCAN_NEEDLE_INTS 8

/* Adds needle bytes[0, len) to p's scan needles; 0 when they are full. */
static int add_scan_needle(search_pred_t *p, const void *bytes, size_t len) {
  if (p->nscan_needles == BLOCK_NEEDLES_MAX) return 0;
  p->scan_needle[p->nscan_needles++] = (block_needle_t){bytes, len};
  return 1;
}

/* Leaf i's needles for a block's scan (search_pred.h scan_needle); 0 when it has none. A
   short BETWEEN of an :int attribute gives one per integer (every value in it writes that
   integer's digits), any other leaf its needle of the quick test. */
static int leaf_scan_needles(search_pred_t *p, size_t i, int *escape) {
  const expr_leaf_t *l = expr_leaf(p->where, i);
  const search_pred_needle_t *nd = &p->needle[i];
  const uint8_t kind = p->verbatim[i];
  if (kind == SEARCH_PRED_VERBATIM_NONE) return 0;
  if (kind == SEARCH_PRED_VERBATIM_JSON) *escape = 1;
  if (kind == SEARCH_PRED_VERBATIM_DIGITS && l->cmp == EXPR_BETWEEN) {
    int64_t lo = int_of_term(l->term), hi = int_of_term(l->term_hi); /* lo <= hi, one sign */
    for (int64_t v = lo; (uint64_t)hi - (uint64_t)lo < SCAN_NEEDLE_INTS; v++) {
      if (p->nscan_needles == BLOCK_NEEDLES_MAX) return 0; /* before its digits' slot */
      char *d = p->scan_digits[p->nscan_needles];
      size_t n = magnitude_digits(v, d);
      if (n < 2 || !add_scan_needle(p, d, n)) return 0;
      if (v == hi) return 1;
    }
  }
  const void *bytes = kind == SEARCH_PRED_VERBATIM_DIGITS ? (const void *)nd->digits : l->term;
  return nd->len >= 2 && add_scan_needle(p, bytes, nd->len);
}

/* The needles of the leaves of a cover of `where` (every value that satisfies it satisfies
   one of them, as the stand-alone index's search takes one: search_standalone_pred.c), and a
   backslash for a JSON one, whose value may spell its term with an escape; 0 when a leaf of
   the cover has none. The cover is found greedily, trying the leaves from the last (reverse)
   or the first: of an AND, it keeps the first or the last child. marks: a byte per leaf. */
static int cover_scan_needles(search_pred_t *p, uint8_t *marks, int reverse) {
  const size_t n = expr_leaf_count(p->where);
  int escape = 0;
  memset(marks, 0, n);
  for (size_t j = 0; j < n; j++) {
    size_t i = reverse ? n - 1 - j : j;
    marks[i] = 1;
    if (expr_eval(p->where, marks)) marks[i] = 0; /* needed */
  }
  p->nscan_needles = 0;
  for (size_t i = 0; i < n; i++)
    if (!marks[i] && !leaf_scan_needles(p, i, &escape)) return p->nscan_needles = 0;
  if (escape && !add_scan_needle(p, "\\", 1)) return p->nscan_needles = 0;
  return 1;
}

/* p's scan needles (search_pred.h): of the cover that keeps an AND's first child, else of the
   one that keeps its last. */
static void find_scan_needles(search_pred_t *p, uint8_t *marks) {
  if (!cover_scan_needles(p, marks, 1)) cover_scan_needles(p, marks, 0);
}

int search_pred_init(search_pred_t *p, const expr_t *e, const terms_t *terms, uint64_t seed,
                     uint64_t m, uint32_t k, err_t *err) {
  memset(p, 0, sizeof *p);
  p->where = e;
  p->terms = terms;
  expr_t *plan = NULL;
  int rc = expr_expand_implied(e, expand_leaf, terms_pair_count(terms) ? imply_pairs : NULL,
                               (void *)terms, &plan, err);
  if (rc != ST_OK) return rc;
  p->expr = plan;
  p->read_all = expr_constant(plan, &rc) && rc;
  p->nleaves = expr_leaf_count(plan);
  p->nscratch = p->nleaves > expr_leaf_count(e) ? p->nleaves : expr_leaf_count(e);
  size_t n = p->nleaves ? p->nleaves : 1;
  p->hash = malloc(n * sizeof *p->hash);
  p->probe = malloc(n * sizeof *p->probe);
  p->cover = malloc(n * sizeof *p->cover);
  p->zone_id = malloc(n * 4 * sizeof *p->zone_id);
  p->ranges = malloc(n * sizeof *p->ranges);
  size_t nwhere = expr_leaf_count(e);
  p->verbatim = malloc(nwhere ? nwhere : 1);
  p->needle = malloc((nwhere ? nwhere : 1) * sizeof *p->needle);
  p->scan_needle = malloc(BLOCK_NEEDLES_MAX * sizeof *p->scan_needle);
  p->scan_digits = malloc(BLOCK_NEEDLES_MAX * sizeof *p->scan_digits);
  uint8_t *marks = malloc(n > nwhere ? n : nwhere ? nwhere : 1);
  if (!p->hash || !p->probe || !p->cover || !p->zone_id || !p->ranges || !p->verbatim ||
      !p->needle || !p->scan_needle || !p->scan_digits || !marks) {
    free(marks);
    search_pred_release(p);
    return err_set(err, ST_E_NOMEM, "search: out of memory for a predicate of %zu terms",
                   p->nleaves);
  }
  for (size_t i = 0; i < p->nleaves; i++) {
    p->hash[i] = leaf_hash(terms, expr_leaf(p->expr, i), seed);
    p->probe[i].k = 0;
    if (k) probe_init(&p->probe[i], p->hash[i], m, k);
  }
  p->zone_lo = p->zone_id + n;
  p->zone_hi = p->zone_id + 2 * n;
  p->zone_src = p->zone_id + 3 * n;
  for (size_t i = 0; i < p->nleaves; i++)
    p->zone_id[i] =
        leaf_zone(terms, e, expr_leaf(p->expr, i), &p->zone_lo[i], &p->zone_hi[i], &p->zone_src[i]);
  group_ranges(p);
  find_cover(p, marks);
  for (size_t i = 0; i < nwhere; i++) {
    p->verbatim[i] = verbatim_kind(terms, expr_leaf(e, i), &p->needle[i]);
    if (p->verbatim[i] == SEARCH_PRED_VERBATIM_NONE) p->needle[i].len = 0;
    p->any_verbatim |= p->verbatim[i] != SEARCH_PRED_VERBATIM_NONE;
  }
  if (p->any_verbatim) find_scan_needles(p, marks);
  free(marks);
  return ST_OK;
}

void search_pred_release(search_pred_t *p) {
  if (!p) return;
  expr_destroy((expr_t *)p->expr);
  p->expr = NULL;
  free(p->hash);
  free(p->probe);
  free(p->cover);
  free(p->zone_id);
  free(p->ranges);
  p->ranges = NULL;
  free(p->verbatim);
  free(p->needle);
  free(p->scan_needle);
  free(p->scan_digits);
  p->hash = NULL;
  p->probe = NULL;
  p->cover = NULL;
  p->zone_id = p->zone_lo = p->zone_hi = p->zone_src = NULL;
  p->verbatim = NULL;
  p->needle = NULL;
  p->any_verbatim = 0;
  p->scan_needle = NULL;
  p->scan_digits = NULL;
  p->nscan_needles = 0;
  p->nleaves = p->ncover = p->nranges = p->range_pieces = 0;
}

int search_pred_whole_value(const search_pred_t *p, const void **val, size_t *len) {
  if (expr_leaf_count(p->where) != 1) return 0;
  const expr_leaf_t *l = expr_leaf(p->where, 0);
  if (l->cmp != EXPR_EQ) return 0;
  if (p->terms) {
    const attr_spec_t *s = terms_spec(p->terms, (size_t)l->attr);
    if (s->kind != ATTR_VALUE || s->is_int) return 0;
  }
  *val = l->term;
  *len = l->term_len;
  return 1;
}

int search_pred_eval(const search_pred_t *p, const uint8_t *yes, size_t stride, uint8_t *scratch) {
  for (size_t i = 0; i < p->nleaves; i++) scratch[i] = yes[i * stride];
  return expr_eval(p->expr, scratch);
}

/* Whether the value may satisfy p, from its bytes alone: each leaf whose term must be among
   them (verbatim) is false where it is not, every other leaf true. The tree is monotone, so
   false here is false for the value's terms too. */
static int may_match(const search_pred_t *p, const void *val, size_t len, uint8_t *marks) {
  const int escaped = memchr(val, '\\', len) != NULL;
  const size_t n = expr_leaf_count(p->where);
  for (size_t i = 0; i < n; i++) {
    const expr_leaf_t *l = expr_leaf(p->where, i);
    const uint8_t v = p->verbatim[i];
    const search_pred_needle_t *nd = &p->needle[i];
    marks[i] =
        v == SEARCH_PRED_VERBATIM_NONE || (v == SEARCH_PRED_VERBATIM_JSON && escaped) ||
        memmem(val, len, v == SEARCH_PRED_VERBATIM_DIGITS ? nd->digits : l->term, nd->len) != NULL;
  }
  return expr_eval(p->where, marks);
}

static int match_value(void *arg, const void *val, size_t len) {
  search_pred_match_t *m = arg;
  if (!val) val = ""; /* an empty value may come as NULL */
  if (m->p->any_verbatim && !may_match(m->p, val, len, m->marks)) return 0;
  return expr_match_value(m->p->where, val, len, extract, (void *)m->p->terms, m->marks);
}

void search_pred_test(const search_pred_t *p, uint8_t *marks, search_pred_match_t *m,
                      engine_value_test_t *test) {
  m->p = p;
  m->marks = marks;
  *test = (engine_value_test_t){NULL, 0, match_value, m, p->scan_needle, p->nscan_needles};
}

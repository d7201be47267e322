/* The soundness of a predicate's plan over the filters (search/search_pred.h), shared by
 * range_plan_test and the fuzz target fuzz_range_plan: a value that satisfies the predicate
 * is never ruled out by the items it was indexed under. Header-only, for the tests.
 *
 * For the predicate where (bound to terms) and a value: the value's item hashes are what a
 * put adds to every filter (terms_hash_value, range items included); a plan leaf is true for
 * the value when its hash is among them, as a filter without false positives would answer.
 * If the value satisfies the predicate (expr_match_value, what validation evaluates), then
 * the plan must be true over those answers (a table, block or slice holding only this value
 * is read), unless it reads everything (read_all), and one of the memtable cover's items must
 * be the value's (the memtables' value index finds it). Nor is it ruled out by the zones of a
 * table holding only it (each leaf's zone, search_pred_t.zone_id, meets the value's codes), nor
 * by that table's range filters (search_pred_t.ranges, each asked once for its written range).
 */
#ifndef BFH_TESTS_QUERY_RANGE_PLAN_CHECK_H
#define BFH_TESTS_QUERY_RANGE_PLAN_CHECK_H

#include <stdlib.h>
#include <string.h>

#include "query/expr.h"
#include "query/terms.h"
#include "search/search_pred.h"

#define RANGE_PLAN_SEED 0x5eedull
#define RANGE_PLAN_MAX_HASHES 512

typedef struct range_plan_hashes {
  uint64_t h[RANGE_PLAN_MAX_HASHES];
  size_t n;
} range_plan_hashes_t;

static inline void range_plan_collect(void *arg, uint64_t hash) {
  range_plan_hashes_t *hs = arg;
  if (hs->n < RANGE_PLAN_MAX_HASHES) hs->h[hs->n++] = hash;
}

/* The zones of a table holding only the value: per attribute with a zone, the least and
   largest code of its terms (lo > hi: none). */
typedef struct range_plan_zones {
  uint64_t id[VALUE_TERMS_MAX_ZONES], lo[VALUE_TERMS_MAX_ZONES], hi[VALUE_TERMS_MAX_ZONES];
  size_t n;
} range_plan_zones_t;

static inline void range_plan_zone(void *arg, uint64_t id, uint64_t code) {
  range_plan_zones_t *z = arg;
  for (size_t i = 0; i < z->n; i++) {
    if (z->id[i] != id) continue;
    if (code < z->lo[i]) z->lo[i] = code;
    if (code > z->hi[i]) z->hi[i] = code;
  }
}

static inline void range_plan_ignore(void *arg, uint64_t hash) {
  (void)arg, (void)hash;
}

/* Whether leaf i of p may hold in a table whose zones are z (search.c apply_zones' test). */
static inline int range_plan_zone_meets(const search_pred_t *p, size_t i,
                                        const range_plan_zones_t *z) {
  if (p->zone_id[i] == 0) return 1;
  for (size_t a = 0; a < z->n; a++)
    if (z->id[a] == p->zone_id[i]) return p->zone_lo[i] <= z->hi[a] && z->lo[a] <= p->zone_hi[i];
  return 1; /* no zone recorded: nothing known */
}

static inline int range_plan_has(const range_plan_hashes_t *hs, uint64_t h) {
  for (size_t i = 0; i < hs->n; i++)
    if (hs->h[i] == h) return 1;
  return 0;
}

/* NULL when the plan of where[0, len) is sound for val[0, vlen) (or where does not parse or
   bind: nothing to check), else what is wrong. *matched: 1 when the value satisfies where,
   0 when not, -1 when where was refused; *read_all: the plan's. */
static inline const char *range_plan_check(const terms_t *t, const char *where, size_t len,
                                           const void *val, size_t vlen, int *matched,
                                           int *read_all) {
  *matched = -1;
  *read_all = 0;
  expr_t *e = NULL;
  err_t err;
  err_clear(&err);
  if (expr_parse(where, len, &e, &err) != ST_OK) return NULL;
  if (expr_bind(e, terms_lookup, (void *)t, &err) != ST_OK) {
    expr_destroy(e);
    return NULL;
  }
  search_pred_t p;
  if (search_pred_init(&p, e, t, RANGE_PLAN_SEED, 0, 0, &err) != ST_OK) {
    expr_destroy(e);
    return "search_pred_init failed";
  }
  static range_plan_hashes_t hs; /* large: not on the stack of a fuzzer's thread */
  hs.n = 0;
  const char *wrong = NULL;
  if (terms_hash_value(t, val, vlen, RANGE_PLAN_SEED, 0, range_plan_collect, &hs) < 0)
    wrong = "terms_hash_value failed";
  size_t n = p.nscratch ? p.nscratch : 1;
  uint8_t *yes = malloc(n), *scratch = malloc(n);
  if (!yes || !scratch) wrong = "out of memory";
  if (!wrong) {
    *matched = expr_match_value(e, val, vlen, terms_extract, (void *)t, scratch);
    *read_all = p.read_all;
    for (size_t i = 0; i < p.nleaves; i++) yes[i] = (uint8_t)range_plan_has(&hs, p.hash[i]);
    int in_cover = 0;
    for (size_t i = 0; i < p.ncover; i++) in_cover |= yes[p.cover[i]];
    if (*matched == 1 && !p.read_all && !search_pred_eval(&p, yes, 1, scratch))
      wrong = "a value that satisfies the predicate is ruled out by its plan";
    /* And by the zones of a table that holds only it (query/terms.h, doc/query.md "Zones"). */
    static range_plan_zones_t z;
    z.n = value_terms_zone_ids(terms_value_terms(t), z.id);
    for (size_t a = 0; a < z.n; a++) z.lo[a] = UINT64_MAX, z.hi[a] = 0;
    if (!wrong && value_terms_hash_zoned(terms_value_terms(t), val, vlen, RANGE_PLAN_SEED, 0,
                                         range_plan_ignore, range_plan_zone, &z) < 0)
      wrong = "value_terms_hash_zoned failed";
    for (size_t i = 0; !wrong && i < p.nleaves; i++)
      yes[i] &= (uint8_t)range_plan_zone_meets(&p, i, &z);
    if (!wrong && *matched == 1 && !p.read_all && !search_pred_eval(&p, yes, 1, scratch))
      wrong = "a value that satisfies the predicate is ruled out by its plan and its zones";
    /* And by the range filters of that table (search.c apply_ranges), which hold its codes:
       a range meeting none of them turns its items false. Each range is one written leaf's,
       once; an exact filter of the codes is asked as their least and largest (a maybe, as
       a filter's false positive is, where a multi-valued attribute has codes on both sides). */
    for (size_t k = 0; !wrong && k < p.nranges; k++) {
      const search_pred_range_t *g = &p.ranges[k];
      size_t items = 0, before = 0;
      for (size_t i = 0; i < p.nleaves; i++) items += p.zone_src[i] == g->src;
      for (size_t j = 0; j < k; j++) before += p.ranges[j].src == g->src;
      if (items == 0 || before > 0) {
        wrong = "search_pred_t.ranges: a range that is no written leaf's, or one twice";
        break;
      }
      int held = 1;
      for (size_t a = 0; a < z.n; a++)
        if (z.id[a] == g->zone_id) held = g->lo <= g->hi && g->lo <= z.hi[a] && z.lo[a] <= g->hi;
      for (size_t i = 0; !held && i < p.nleaves; i++)
        if (p.zone_src[i] == g->src) yes[i] = 0;
    }
    if (!wrong && *matched == 1 && !p.read_all && !search_pred_eval(&p, yes, 1, scratch))
      wrong = "a value that satisfies the predicate is ruled out by its plan, zones and range filters";
    else if (*matched == 1 && !p.read_all && !in_cover)
      wrong = "a value that satisfies the predicate holds no item of the memtable cover";
  }
  free(yes);
  free(scratch);
  search_pred_release(&p);
  expr_destroy(e);
  return wrong;
}

/* The attributes both tests declare, over a value that is a text or an integer:
   t = value:range (the default text levels), n = value:int:range (the default :int levels),
   c = value:int:range=3,9,20 and s = value:range=1,2,60 (levels of a declaration's own). */
static inline terms_t *range_plan_terms(void) {
  static const char *const decls[] = {"t=value:range", "n=value:int:range",
                                      "c=value:int:range=3,9,20", "s=value:range=1,2,60"};
  attr_spec_t *specs = calloc(4, sizeof *specs);
  err_t err;
  for (size_t i = 0; specs && i < 4; i++)
    if (attr_spec_parse(decls[i], &specs[i], &err) != ST_OK) return NULL;
  terms_t *t = NULL;
  if (!specs || terms_create(specs, 4, RANGE_PLAN_SEED, &t, &err) != ST_OK) return NULL;
  return t;
}

#endif

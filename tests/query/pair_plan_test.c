/* The composite's implied conjunct in the plan the filters are asked (search/search_pred.c,
 * doc/query.md "Composites"): an AND with equalities on both members of a declared pair gets
 * one more child, the OR of the pairs' terms and the overflow term, whose hashes are the ones
 * a put gives (query/terms.h); an AND without both members, an IN product over the cap, or an
 * OR of the members gets none; a composite asked by name is refused, naming its members. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "query/expr.h"
#include "query/terms.h"
#include "search/search_pred.h"
#include "util/status.h"

#define SEED 0x70616972ull

static terms_t *make_terms(void) {
  static const char *const decls[] = {"c=json:c", "n=json:n:int", "b=json:b", "cn=pair:c,n"};
  attr_spec_t *specs = calloc(4, sizeof *specs);
  assert_non_null(specs);
  err_t err;
  for (int i = 0; i < 4; i++) assert_int_equal(attr_spec_parse(decls[i], &specs[i], &err), ST_OK);
  terms_t *t;
  if (terms_create(specs, 4, SEED, &t, &err) != ST_OK) fail_msg("%s", err.msg);
  return t;
}

/* The plan of where over t: *e (bound) and *p, the caller's to release. */
static void plan(const terms_t *t, const char *where, expr_t **e, search_pred_t *p) {
  err_t err;
  assert_int_equal(expr_parse(where, strlen(where), e, &err), ST_OK);
  if (search_pred_bind(*e, t, &err) != ST_OK) fail_msg("%s: %s", where, err.msg);
  assert_int_equal(search_pred_init(p, *e, t, SEED, 0, 0, &err), ST_OK);
}

/* The plan's leaves of the composite (attribute 3). */
static size_t pair_leaves(const search_pred_t *p) {
  size_t n = 0;
  for (size_t i = 0; i < p->nleaves; i++) n += expr_leaf(p->expr, i)->attr == 3;
  return n;
}

/* Whether the plan asks for hash h. */
static int asks(const search_pred_t *p, uint64_t h) {
  for (size_t i = 0; i < p->nleaves; i++)
    if (p->hash[i] == h) return 1;
  return 0;
}

typedef struct held {
  size_t n;
  uint64_t h[16];
} held_t;

static void hold(void *arg, uint64_t h) {
  held_t *g = arg;
  assert_true(g->n < 16);
  g->h[g->n++] = h;
}

static int held(const held_t *g, uint64_t h) {
  for (size_t i = 0; i < g->n; i++)
    if (g->h[i] == h) return 1;
  return 0;
}

/* Every item a put of value gives the composite is asked by the plan of where, and the plan
   holds where the value satisfies it (the implied conjunct included). */
static void test_pair_plan_asks_what_puts_give(void **state) {
  (void)state;
  terms_t *t = make_terms();
  expr_t *e;
  search_pred_t p;
  plan(t, "c = 'Oslo' AND n IN (30, 31)", &e, &p);
  assert_int_equal(p.nleaves, 3 + 1 + 2); /* members' three, the overflow and two pairs */
  assert_int_equal(pair_leaves(&p), 3);
  assert_true(asks(&p, terms_hash_term(t, 3, ATTR_PAIR_OVERFLOW_TERM, 0, SEED)));
  uint8_t age[ATTR_INT_TERM_BYTES], pair[32];
  attr_int_term(31, age);
  size_t len = attr_pair_term("Oslo", 4, age, sizeof age, pair);
  assert_true(asks(&p, terms_hash_term(t, 3, pair, len, SEED)));
  /* The value's items, by a put: each leaf true exactly where its hash is among them. */
  static const char *const val = "{\"c\":\"Oslo\",\"n\":31}";
  held_t got = {0};
  assert_int_equal(terms_hash_value(t, val, strlen(val), SEED, 0, hold, &got), 3);
  uint8_t yes[16] = {0}, scratch[16];
  for (size_t i = 0; i < p.nleaves; i++) yes[i] = held(&got, p.hash[i]);
  assert_int_equal(search_pred_eval(&p, yes, 1, scratch), 1);
  assert_true(held(&got, terms_hash_term(t, 3, pair, len, SEED)));
  /* ... and is false where the pair is not held, though both members are (other values). */
  for (size_t i = 0; i < p.nleaves; i++)
    if (expr_leaf(p.expr, i)->attr == 3) yes[i] = 0;
  assert_int_equal(search_pred_eval(&p, yes, 1, scratch), 0);
  search_pred_release(&p);
  expr_destroy(e);
  terms_destroy(t);
}

/* Where the composite does not apply, the plan is the members' alone. */
static void test_pair_plan_only_where_implied(void **state) {
  (void)state;
  terms_t *t = make_terms();
  static const struct {
    const char *where;
    size_t pairs;
  } cases[] = {
      {"c = 'x' AND b = 'y'", 0},            /* one member only */
      {"c = 'x' OR n = 1", 0},               /* an OR of the members */
      {"c = 'x' AND n > 1", 0},              /* a range is no equality */
      {"c = 'x' AND (n = 1 OR b = 'z')", 0}, /* an OR of two attributes is no group */
      {"c = 'x' AND (n = 1 OR n = 2)", 3},   /* an OR of one attribute's equalities is */
      {"(c = 'x' AND n = 1) OR (c = 'y' AND n = 2 AND b = 'z')", 4},
      {"n = 7 AND b = 'z' AND c IN ('p', 'q', 'r')", 4},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    expr_t *e;
    search_pred_t p;
    plan(t, cases[i].where, &e, &p);
    if (pair_leaves(&p) != cases[i].pairs)
      fail_msg("'%s': %zu leaves of the composite, expected %zu", cases[i].where, pair_leaves(&p),
               cases[i].pairs);
    search_pred_release(&p);
    expr_destroy(e);
  }
  /* 17 x 16 = 272 pairs > ATTR_PAIR_MAX_TERMS: left as it is; 16 x 16 = 256 taken. */
  char where[1024];
  for (int over = 1; over >= 0; over--) {
    size_t n = (size_t)snprintf(where, sizeof where, "c IN (");
    for (int k = 0; k < 16 + over; k++)
      n += (size_t)snprintf(where + n, sizeof where - n, "%s'%c'", k ? ", " : "", 'a' + k);
    n += (size_t)snprintf(where + n, sizeof where - n, ") AND n IN (");
    for (int k = 0; k < 16; k++)
      n += (size_t)snprintf(where + n, sizeof where - n, "%s%d", k ? ", " : "", k);
    snprintf(where + n, sizeof where - n, ")");
    expr_t *e;
    search_pred_t p;
    plan(t, where, &e, &p);
    assert_int_equal(pair_leaves(&p), over ? 0 : 256 + 1);
    search_pred_release(&p);
    expr_destroy(e);
  }
  terms_destroy(t);
}

/* The composite is not queried by its name. */
static void test_pair_by_name_refused(void **state) {
  (void)state;
  terms_t *t = make_terms();
  expr_t *e;
  err_t err;
  const char *where = "c = 'x' AND cn = 'y'";
  assert_int_equal(expr_parse(where, strlen(where), &e, &err), ST_OK);
  assert_int_equal(search_pred_bind(e, t, &err), ST_E_INVALID);
  assert_string_equal(err.msg,
                      "expression: column 13: cn is a composite of c and n: query its members");
  expr_destroy(e);
  terms_destroy(t);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_pair_plan_asks_what_puts_give),
      cmocka_unit_test(test_pair_plan_only_where_implied),
      cmocka_unit_test(test_pair_by_name_refused),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

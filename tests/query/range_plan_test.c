/* Tests of the plan a range or prefix predicate runs through the filters
   (search/search_pred.c, query/range_cover.c, the range items of query/terms.c): random
   predicates over random values, checked by range_plan_check (no value that satisfies a
   predicate is ruled out by its plan or missed by its memtable cover), with the edges the
   issue names drawn often: the int64 extremes, negative numbers, a > b, empty ranges, the
   empty string, texts and prefixes longer than 8 bytes that share their first 8. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <inttypes.h>
#include <stdio.h>

#include "tests/query/range_plan_check.h"
#include "util/random.h"

#define CASES 60000
#define RNG_SEED 48

static const int64_t EDGES[] = {
    INT64_MIN, INT64_MIN + 1, -4097, -4096,         -1,       0, 1, 15, 16, 1023, 1024,
    1025,      4095,          4096,  INT64_MAX - 1, INT64_MAX};
static const char *const TEXTS[] = {"",         "a",         "ab",         "abcdefg",
                                    "abcdefgh", "abcdefghi", "abcdefghij", "abcdefgi",
                                    "b",        "it's",      "\xff",       "\xff\xff"};

/* A random integer: an edge, near one, or anything. */
static int64_t random_int(rng_t *r) {
  int64_t e = EDGES[rng_below(r, sizeof EDGES / sizeof EDGES[0])];
  switch (rng_below(r, 3)) {
    case 0:
      return e;
    case 1:
      /* near e, wrapping past the int64 ends (in unsigned arithmetic: no overflow) */
      return (int64_t)((uint64_t)e + rng_below(r, 64) - 32 - (e > 0 && rng_below(r, 2) ? 64 : 0));
    default:
      return (int64_t)rng_next(r) >> rng_below(r, 64);
  }
}

/* A random text (no NUL: it may be a literal): a known one, one of them with bytes added. */
static size_t random_text(rng_t *r, char *out, size_t cap) {
  size_t n = (size_t)snprintf(out, cap, "%s", TEXTS[rng_below(r, sizeof TEXTS / sizeof TEXTS[0])]);
  for (uint64_t k = rng_below(r, 3); k > 0 && n + 1 < cap; k--)
    out[n++] = "aq'~\x80"[rng_below(r, 5)];
  out[n] = '\0';
  return n;
}

/* Writes a literal of attribute attr (0, 3 text; 1, 2 integers) into text at *len. */
static void literal(rng_t *r, int attr, char *text, size_t *len, int prefix) {
  if (attr == 1 || attr == 2) {
    *len += (size_t)sprintf(text + *len, "%" PRId64, random_int(r));
    return;
  }
  char s[32];
  random_text(r, s, sizeof s);
  text[(*len)++] = '\'';
  for (const char *c = s; *c; c++) {
    if (*c == '\'') text[(*len)++] = '\'';
    text[(*len)++] = *c;
  }
  if (prefix) text[(*len)++] = '%';
  text[(*len)++] = '\'';
}

static void random_leaf(rng_t *r, char *text, size_t *len) {
  static const char *const signs[] = {"=", "<", "<=", ">", ">=", "BETWEEN", "LIKE"};
  int attr = (int)rng_below(r, 4);
  int text_attr = attr == 0 || attr == 3;
  unsigned cmp = (unsigned)rng_below(r, text_attr ? 7 : 6);
  *len += (size_t)sprintf(text + *len, "%c %s ", "tncs"[attr], signs[cmp]);
  literal(r, attr, text, len, cmp == 6);
  if (cmp != 5) return;
  *len += (size_t)sprintf(text + *len, " AND ");
  literal(r, attr, text, len, 0);
}

static void test_range_plan_never_rules_out_a_match(void **state) {
  (void)state;
  terms_t *t = range_plan_terms();
  assert_non_null(t);
  rng_t r;
  rng_init(&r, RNG_SEED);
  unsigned matched = 0, read_all = 0, filtered = 0;
  for (int i = 0; i < CASES; i++) {
    char where[256], val[64];
    size_t len = 0, vlen;
    random_leaf(&r, where, &len);
    if (rng_below(&r, 4) == 0) {
      len += (size_t)sprintf(where + len, rng_below(&r, 2) ? " AND " : " OR ");
      random_leaf(&r, where, &len);
    }
    where[len] = '\0';
    vlen = rng_below(&r, 2) ? (size_t)snprintf(val, sizeof val, "%" PRId64, random_int(&r))
                            : random_text(&r, val, sizeof val);
    int m, all;
    const char *wrong = range_plan_check(t, where, len, val, vlen, &m, &all);
    if (wrong) fail_msg("'%s' on '%s': %s", where, val, wrong);
    assert_true(m == 0 || m == 1);
    matched += (unsigned)m;
    read_all += (unsigned)all;
    filtered += (unsigned)(m && !all);
  }
  print_message(
      "%u of %d (predicate, value) pairs matched, %u of them through the filters; "
      "%u plans read everything (one-sided ranges of ~2^63 codes, mostly)\n",
      matched, CASES, filtered, read_all);
  /* Not vacuous: matches are common, and many are found through the filters' plan. */
  assert_true(matched > CASES / 10 && matched < CASES * 9 / 10);
  assert_true(filtered > CASES / 20);
  terms_destroy(t);
}

/* Exact plans where the ranges are exact: an empty range folds to false (no item, nothing
   read), an unbounded one to read_all, and an :int range that fits the budget at level 0 is
   an OR of items only. */
static void test_range_plan_constants(void **state) {
  (void)state;
  terms_t *t = range_plan_terms();
  assert_non_null(t);
  static const struct {
    const char *where;
    int constant, value; /* constant: the plan folds to value */
  } cases[] = {
      {"n < -9223372036854775808", 1, 0},
      {"n > 9223372036854775807", 1, 0},
      {"n BETWEEN 5 AND 4", 1, 0},
      {"n >= -9223372036854775808", 1, 1},
      {"t LIKE '%'", 1, 1},
      {"t >= ''", 1, 1},
      {"n BETWEEN 2000 AND 3023", 0, 0},
      {"t LIKE 'abc%'", 0, 0},
      {"n BETWEEN 5 AND 4 OR t = 'x'", 0, 0},
      {"n BETWEEN 5 AND 4 AND t = 'x'", 1, 0},
      {"t LIKE '%' AND n = 3", 0, 0},
      {"t BETWEEN 'b' AND 'a'", 1, 0},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    expr_t *e = NULL;
    err_t err;
    assert_int_equal(expr_parse(cases[i].where, strlen(cases[i].where), &e, &err), ST_OK);
    assert_int_equal(expr_bind(e, terms_lookup, t, &err), ST_OK);
    search_pred_t p;
    assert_int_equal(search_pred_init(&p, e, t, RANGE_PLAN_SEED, 0, 0, &err), ST_OK);
    int v = -1, c = expr_constant(p.expr, &v);
    if (c != cases[i].constant || (c && v != cases[i].value))
      fail_msg("'%s': constant %d value %d", cases[i].where, c, v);
    assert_int_equal(p.read_all, c && v);
    if (!c) assert_true(p.nleaves > 0);
    search_pred_release(&p);
    expr_destroy(e);
  }
  terms_destroy(t);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_range_plan_never_rules_out_a_match),
      cmocka_unit_test(test_range_plan_constants),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

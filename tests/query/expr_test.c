/* Tests of query/expr.h: the grammar (precedence, IN, comparisons, BETWEEN, LIKE, quotes,
   keywords in any case), the expansion into a plan of items with its constants folded, the
   plan's flattening, errors that name their column, binding to declared attributes (:int
   literals as one term), and evaluation against an oracle over random predicates. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "query/attr.h"
#include "query/expr.h"
#include "util/random.h"

static expr_t *parse_ok(const char *text) {
  expr_t *e = NULL;
  err_t err;
  err_clear(&err);
  int rc = expr_parse(text, strlen(text), &e, &err);
  if (rc != ST_OK) fail_msg("parse of \"%s\": %d %s", text, rc, err.msg);
  return e;
}

static void assert_canonical(const char *text, const char *want) {
  expr_t *e = parse_ok(text);
  char got[512];
  size_t n = expr_format(e, got, sizeof got);
  assert_int_equal(n, strlen(got));
  if (strcmp(got, want) != 0) fail_msg("\"%s\" reads as \"%s\", not \"%s\"", text, got, want);
  expr_destroy(e);
}

/* The message of a failed parse; fails the test if the parse succeeds. */
static const char *parse_error(const char *text, err_t *err) {
  expr_t *e = NULL;
  err_clear(err);
  int rc = expr_parse(text, strlen(text), &e, err);
  if (rc == ST_OK) fail_msg("\"%s\" parsed", text);
  assert_int_equal(rc, ST_E_INVALID);
  assert_null(e);
  return err->msg;
}

static void assert_error(const char *text, const char *want) {
  err_t err;
  const char *msg = parse_error(text, &err);
  if (!strstr(msg, want)) fail_msg("\"%s\": \"%s\" does not say \"%s\"", text, msg, want);
}

static void test_expr_grammar_and_precedence(void **state) {
  (void)state;
  assert_canonical("a = 'x'", "a = 'x'");
  assert_canonical("  a='x'  ", "a = 'x'");
  assert_canonical("a = 1 OR b = 2 AND c = 3", "a = 1 OR (b = 2 AND c = 3)");
  assert_canonical("(a = 1 OR b = 2) AND c = 3", "(a = 1 OR b = 2) AND c = 3");
  assert_canonical("a = 1 and b = 2 Or c = -3", "(a = 1 AND b = 2) OR c = -3");
  /* Flattened: nested ANDs are one AND, nested ORs one OR, IN an OR of its literals. */
  assert_canonical("a = 1 AND (b = 2 AND (c = 3 AND d = 4))",
                   "a = 1 AND b = 2 AND c = 3 AND d = 4");
  assert_canonical("((a = 1))", "a = 1");
  assert_canonical("a IN ('x', 'y') OR a = 'z'", "a = 'x' OR a = 'y' OR a = 'z'");
  assert_canonical("a in (7)", "a = 7");
  assert_canonical("a IN ('x', 2) AND b = 'y'", "(a = 'x' OR a = 2) AND b = 'y'");
  /* Quotes: '' is one quote; anything else, blanks and keywords included, is text. */
  assert_canonical("name = 'it''s'", "name = 'it''s'");
  assert_canonical("name = ''", "name = ''");
  assert_canonical("name = 'a AND b = ''c'''", "name = 'a AND b = ''c'''");
  assert_canonical("_x9 = 007", "_x9 = 007");
  assert_canonical("andy = 1 AND order_ = 2 AND india = 3",
                   "andy = 1 AND order_ = 2 AND india = 3");
  /* Comparisons, BETWEEN (its AND is its own, not a conjunction) and LIKE. */
  assert_canonical("a<1 OR a<=2 OR a>3 OR a>=-4", "a < 1 OR a <= 2 OR a > 3 OR a >= -4");
  assert_canonical("a between 1 and 'z' AND b = 2", "a BETWEEN 1 AND 'z' AND b = 2");
  assert_canonical("a BETWEEN 1 AND 2 OR b BETWEEN 3 AND 4 AND c = 5",
                   "a BETWEEN 1 AND 2 OR (b BETWEEN 3 AND 4 AND c = 5)");
  assert_canonical("a like 'It''s%'", "a LIKE 'It''s%'");
  assert_canonical("a LIKE '%'", "a LIKE '%'");
  assert_canonical("betweenx = 1 AND likes = 2", "betweenx = 1 AND likes = 2");
}

static void test_expr_leaves(void **state) {
  (void)state;
  expr_t *e = parse_ok("city = 'O''Hare' AND age IN (7, '8')");
  assert_int_equal(expr_leaf_count(e), 3);
  const expr_leaf_t *l = expr_leaf(e, 0);
  assert_string_equal(l->name, "city");
  assert_int_equal(l->column, 1);
  assert_int_equal(l->attr, -1);
  assert_int_equal(l->literal_len, 6);
  assert_memory_equal(l->literal, "O'Hare", 6);
  assert_false(l->is_number);
  l = expr_leaf(e, 1);
  assert_string_equal(l->name, "age");
  assert_int_equal(l->column, 22);
  assert_true(l->is_number);
  assert_memory_equal(l->literal, "7", 1);
  l = expr_leaf(e, 2);
  assert_false(l->is_number);
  assert_memory_equal(l->literal, "8", 1);
  expr_destroy(e);
}

static void test_expr_errors_name_their_column(void **state) {
  (void)state;
  assert_error("", "column 1: the expression is empty");
  assert_error("   ", "column 4: the expression is empty");
  assert_error("a = ", "column 5: expected a quoted text or an integer, found the end");
  assert_error("a = 'x", "column 5: a quoted text without its closing quote");
  assert_error("a = 'x' b = 'y'", "column 9: expected AND, OR or the end");
  assert_error("a == 'x'", "column 4: expected a quoted text or an integer");
  assert_error("a ! 3",
               "column 3: expected '=', '<', '<=', '>', '>=', IN, BETWEEN or LIKE after 'a'");
  assert_error("a =< 3", "column 4: expected a quoted text or an integer");
  assert_error("a BETWEEN 1", "column 12: expected AND after BETWEEN's first literal");
  assert_error("a BETWEEN 1 OR 2", "column 13: expected AND after BETWEEN's first literal");
  assert_error("a BETWEEN 1 AND", "column 16: expected a quoted text or an integer");
  assert_error("a LIKE 'ab'", "column 8: LIKE takes a quoted literal prefix followed by one '%'");
  assert_error("a LIKE 12", "column 8: LIKE takes a quoted literal prefix");
  assert_error("a LIKE ''", "column 8: LIKE takes a quoted literal prefix");
  assert_error("a LIKE '%ab%'",
               "column 8: LIKE takes a quoted literal prefix followed by one "
               "'%' ('abc%'); '%' before the end is a wildcard");
  assert_error("a LIKE 'a_b%'", "'_' before the end is a wildcard, which is not supported");
  assert_error("like = 1", "column 1: 'like' is a keyword");
  assert_error("BETWEEN = 1", "column 1: 'BETWEEN' is a keyword");
  assert_error("(a = 1", "column 7: expected ')' to close the '(' of column 1, found the end");
  assert_error("a = 1 AND", "column 10: expected an attribute name or '('");
  assert_error("AND = 1", "column 1: 'AND' is a keyword, not an attribute name");
  assert_error("a IN 'x'", "column 6: expected '(' after IN");
  assert_error("a IN ('x' 'y')", "column 11: expected ',' or ')' in the IN list");
  assert_error("a IN ()", "column 7: expected a quoted text or an integer");
  assert_error("a = 12x", "column 5: expected a quoted text or an integer");
  assert_error("a = -", "column 5: expected a quoted text or an integer");
  assert_error("9a = 1", "column 1: expected an attribute name or '('");
  char name[80];
  memset(name, 'n', 65);
  strcpy(name + 65, " = 1");
  assert_error(name, "column 1: an attribute name longer than 64 bytes");
  /* A NUL inside the text is an error at its column, not the end of the expression. */
  err_t err;
  expr_t *e = NULL;
  assert_int_equal(expr_parse("a = 1\0 OR b", 11, &e, &err), ST_E_INVALID);
  assert_non_null(strstr(err.msg, "column 6: a NUL byte"));
}

static void test_expr_limits(void **state) {
  (void)state;
  /* Parentheses: EXPR_MAX_DEPTH deep parse, one more is refused (no stack overflow). */
  char deep[2 * EXPR_MAX_DEPTH + 16];
  size_t n = 0;
  for (int i = 0; i < EXPR_MAX_DEPTH; i++) deep[n++] = '(';
  n += (size_t)sprintf(deep + n, "a = 1");
  for (int i = 0; i < EXPR_MAX_DEPTH; i++) deep[n++] = ')';
  deep[n] = '\0';
  expr_destroy(parse_ok(deep));
  char deeper[2 * EXPR_MAX_DEPTH + 32];
  snprintf(deeper, sizeof deeper, "(%s)", deep);
  assert_error(deeper, "nested deeper than 64");
  /* An IN list of EXPR_MAX_LEAVES literals parses; one more is refused. */
  size_t cap = 16 + (EXPR_MAX_LEAVES + 1) * 8;
  char *in = malloc(cap);
  assert_non_null(in);
  for (int extra = 0; extra < 2; extra++) {
    n = (size_t)sprintf(in, "a IN (");
    for (unsigned i = 0; i < EXPR_MAX_LEAVES + (unsigned)extra; i++)
      n += (size_t)sprintf(in + n, "%s%u", i ? "," : "", i);
    sprintf(in + n, ")");
    if (!extra) {
      expr_t *e = parse_ok(in);
      assert_int_equal(expr_leaf_count(e), EXPR_MAX_LEAVES);
      expr_destroy(e);
    } else {
      assert_error(in, "more than 4096 terms");
    }
  }
  free(in);
  err_t err;
  expr_t *e = NULL;
  char *big = calloc(EXPR_MAX_TEXT + 2, 1);
  assert_non_null(big);
  memset(big, ' ', EXPR_MAX_TEXT + 1);
  assert_int_equal(expr_parse(big, EXPR_MAX_TEXT + 1, &e, &err), ST_E_INVALID);
  assert_non_null(strstr(err.msg, "longer than"));
  free(big);
}

/* ---- Binding and evaluation ------------------------------------------------------- */

/* Three declared attributes: a (text), b (text), n (:int). */
static int lookup(void *arg, const char *name, size_t len, int *is_int) {
  (void)arg;
  static const char *const names[] = {"a", "b", "n"};
  for (int i = 0; i < 3; i++)
    if (strlen(names[i]) == len && memcmp(names[i], name, len) == 0) {
      *is_int = i == 2;
      return i;
    }
  return -1;
}

static void test_expr_bind_terms(void **state) {
  (void)state;
  expr_t *e = parse_ok("a = 7 OR n IN (7, '007', '+7') OR n = -0 OR n = 0");
  err_t err;
  assert_int_equal(expr_bind(e, lookup, NULL, &err), ST_OK);
  const expr_leaf_t *l = expr_leaf(e, 0);
  assert_int_equal(l->attr, 0);
  assert_int_equal(l->term_len, 1); /* a text attribute: the number as written */
  assert_memory_equal(l->term, "7", 1);
  uint8_t seven[8], zero[8];
  attr_int_term(7, seven);
  attr_int_term(0, zero);
  for (size_t i = 1; i <= 3; i++) {
    l = expr_leaf(e, i);
    assert_int_equal(l->attr, 2);
    assert_int_equal(l->term_len, 8);
    assert_memory_equal(l->term, seven, 8); /* 7, 007 and '+7' are one term */
  }
  for (size_t i = 4; i <= 5; i++) assert_memory_equal(expr_leaf(e, i)->term, zero, 8);
  char form[256];
  expr_format(e, form, sizeof form); /* the literals as written, after binding too */
  assert_string_equal(form, "a = 7 OR n = 7 OR n = '007' OR n = '+7' OR n = -0 OR n = 0");
  expr_destroy(e);

  e = parse_ok("a = 'x' AND zz = 'y'");
  assert_int_equal(expr_bind(e, lookup, NULL, &err), ST_E_INVALID);
  assert_string_equal(err.msg, "expression: column 13: no attribute called zz");
  expr_destroy(e);
  e = parse_ok("b = 'x' OR n IN (1, 'one')");
  assert_int_equal(expr_bind(e, lookup, NULL, &err), ST_E_INVALID);
  assert_non_null(strstr(err.msg, "column 12: n is an integer attribute, and 'one' is not"));
  expr_destroy(e);
  e = parse_ok("b = 'x' OR n BETWEEN 1 AND 'two'");
  assert_int_equal(expr_bind(e, lookup, NULL, &err), ST_E_INVALID);
  assert_non_null(strstr(err.msg, "column 12: n is an integer attribute, and 'two' is not"));
  expr_destroy(e);
  e = parse_ok("b = 'x' OR n LIKE '1%'");
  assert_int_equal(expr_bind(e, lookup, NULL, &err), ST_E_INVALID);
  assert_non_null(strstr(err.msg, "column 12: n is an integer attribute; LIKE applies to text"));
  expr_destroy(e);
  /* A range's terms: both ends of BETWEEN as :int terms; text as written. */
  e = parse_ok("n BETWEEN -1 AND '+07' AND a > 7");
  assert_int_equal(expr_bind(e, lookup, NULL, &err), ST_OK);
  uint8_t minus1[8];
  attr_int_term(-1, minus1);
  assert_memory_equal(expr_leaf(e, 0)->term, minus1, 8);
  assert_memory_equal(expr_leaf(e, 0)->term_hi, seven, 8);
  assert_int_equal(expr_leaf(e, 1)->term_len, 1);
  expr_destroy(e);
}

/* expr_expand's fn for the test: leaves of attribute a are themselves, of b true, of n an OR
   of as many items as the literal's first byte minus '0' (0: false). */
static int expand_test(void *arg, const expr_leaf_t *l, expr_item_t *out, size_t cap) {
  (void)arg;
  if (l->attr == 0) return EXPR_EXPAND_SELF;
  if (l->attr == 1) return EXPR_EXPAND_TRUE;
  int n = l->literal[0] - '0';
  for (int i = 0; i < n && (size_t)i < cap; i++)
    out[i] = (expr_item_t){.cmp = EXPR_ITEM, .len = 1, .bytes = {(uint8_t)('0' + i)}};
  return n;
}

static void assert_expands(const char *text, const char *want, size_t leaves) {
  expr_t *e = parse_ok(text), *x = NULL;
  err_t err;
  assert_int_equal(expr_bind(e, lookup, NULL, &err), ST_OK);
  assert_int_equal(expr_expand(e, expand_test, NULL, &x, &err), ST_OK);
  char form[512];
  expr_format(x, form, sizeof form);
  if (strcmp(form, want) != 0) fail_msg("\"%s\" expands to \"%s\", not \"%s\"", text, form, want);
  assert_int_equal(expr_leaf_count(x), leaves);
  int v;
  if (leaves == 0) {
    assert_true(expr_constant(x, &v));
    assert_int_equal(v, strcmp(want, "TRUE") == 0);
    assert_int_equal(expr_eval(x, NULL), v);
  } else {
    assert_false(expr_constant(x, &v));
  }
  expr_destroy(x);
  expr_destroy(e);
}

/* Expansion: leaves replaced by what fn says, constants folded (AND drops true and is false
   with a false child; OR the reverse), a plan that is a constant has no leaves. */
static void test_expr_expand_folds_constants(void **state) {
  (void)state;
  assert_expands("a = 'x'", "a = 'x'", 1);
  assert_expands("b > 'x'", "TRUE", 0);
  assert_expands("n < 0", "FALSE", 0);
  assert_expands("n < 2", "n ITEM '0' OR n ITEM '1'", 2);
  assert_expands("a = 'x' AND b < 'y'", "a = 'x'", 1);
  assert_expands("a = 'x' OR b < 'y'", "TRUE", 0);
  assert_expands("a = 'x' AND n <= 0", "FALSE", 0);
  assert_expands("a = 'x' OR n <= 0", "a = 'x'", 1);
  assert_expands("(a = 'x' OR n > 0) AND (b = 'y' OR n >= 0)", "a = 'x'", 1);
  assert_expands("(a = 'x' AND n > 0) OR (b = 'y' AND n >= 0)", "FALSE", 0);
  assert_expands("a = 'x' AND (n < 1 OR a = 'y') AND b = 'z'",
                 "a = 'x' AND (n ITEM '0' OR a = 'y')", 3);
}

/* A value for these tests: "a|b|n" with a and b text terms and n an integer's text; a
   missing part (fewer bars) gives no term, as a missing field does. */
static int split_terms(void *arg, int attr, const void *value, size_t len, expr_term_fn fn,
                       void *fn_arg) {
  (void)arg;
  const char *s = value, *end = s + len;
  for (int i = 0; i < attr; i++) {
    const char *bar = memchr(s, '|', (size_t)(end - s));
    if (!bar) return 0;
    s = bar + 1;
  }
  const char *bar = memchr(s, '|', (size_t)(end - s));
  size_t n = bar ? (size_t)(bar - s) : (size_t)(end - s);
  if (attr != 2) {
    fn(fn_arg, s, n);
    return 1;
  }
  int64_t v;
  if (attr_int_parse(s, n, &v) != ST_OK) return 0;
  uint8_t t[8];
  attr_int_term(v, t);
  fn(fn_arg, t, 8);
  return 1;
}

/* The oracle: the same predicate, as a tree of its own, evaluated directly on the parts. */
typedef struct onode {
  int op; /* 0 leaf, 1 and, 2 or */
  int attr;
  expr_cmp_t cmp;
  char lit[8], lit2[8]; /* lit2: BETWEEN's upper end */
  struct onode *kid[3];
  int n;
} onode_t;

/* The sign of part - lit: integers as integers, text bytewise (strcmp is unsigned). */
static int part_cmp(const char *part, size_t n, int attr, const char *lit) {
  if (attr == 2) {
    int64_t v, w;
    assert_int_equal(attr_int_parse(part, n, &v), ST_OK);
    assert_int_equal(attr_int_parse(lit, strlen(lit), &w), ST_OK);
    return (v > w) - (v < w);
  }
  char buf[32];
  snprintf(buf, sizeof buf, "%.*s", (int)n, part);
  int c = strcmp(buf, lit);
  return (c > 0) - (c < 0);
}

static int part_holds(const char *value, const onode_t *o) {
  const char *s = value;
  for (int i = 0; i < o->attr; i++) {
    s = strchr(s, '|');
    if (!s) return 0;
    s++;
  }
  size_t n = strcspn(s, "|");
  int64_t v;
  if (o->attr == 2 && attr_int_parse(s, n, &v) != ST_OK) return 0;
  int c = part_cmp(s, n, o->attr, o->lit);
  switch (o->cmp) {
    case EXPR_EQ:
      return c == 0;
    case EXPR_LT:
      return c < 0;
    case EXPR_LE:
      return c <= 0;
    case EXPR_GT:
      return c > 0;
    case EXPR_GE:
      return c >= 0;
    case EXPR_BETWEEN:
      return c >= 0 && part_cmp(s, n, o->attr, o->lit2) <= 0;
    case EXPR_PREFIX:
      return n >= strlen(o->lit) && memcmp(s, o->lit, strlen(o->lit)) == 0;
    default:
      return 0;
  }
}

static int oracle(const onode_t *o, const char *value) {
  if (o->op == 0) return part_holds(value, o);
  for (int i = 0; i < o->n; i++)
    if (oracle(o->kid[i], value) != (o->op == 1)) return o->op != 1;
  return o->op == 1;
}

static const char *const TEXTS[] = {"x", "y", "it's", ""};
static const char *const INTS[] = {"1", "01", "-2", "3"};
static const char *const PREFIXES[] = {"", "i", "it", "x", "it's", "it's!"};

static void write_literal(rng_t *r, int attr, const char *lit, char *text, size_t *len) {
  if (attr == 2 && rng_below(r, 2)) {
    *len += (size_t)sprintf(text + *len, "%s", lit);
    return;
  }
  text[(*len)++] = '\'';
  for (const char *c = lit; *c; c++) {
    if (*c == '\'') text[(*len)++] = '\'';
    text[(*len)++] = *c;
  }
  text[(*len)++] = '\'';
}

static onode_t *random_tree(rng_t *r, int depth, char *text, size_t *len) {
  onode_t *o = calloc(1, sizeof *o);
  assert_non_null(o);
  if (depth == 0 || rng_below(r, 3) == 0) {
    static const char *const sign[] = {"=", "<", "<=", ">", ">=", "BETWEEN", "LIKE"};
    o->attr = (int)rng_below(r, 3);
    o->cmp = rng_below(r, 2) ? EXPR_EQ : (expr_cmp_t)rng_below(r, o->attr == 2 ? 6 : 7);
    const char *const *lits = o->attr == 2 ? INTS : TEXTS;
    strcpy(o->lit, o->cmp == EXPR_PREFIX ? PREFIXES[rng_below(r, 6)] : lits[rng_below(r, 4)]);
    *len += (size_t)sprintf(text + *len, "%c %s ", "abn"[o->attr], sign[o->cmp]);
    if (o->cmp == EXPR_PREFIX) {
      char pat[16];
      snprintf(pat, sizeof pat, "%s%%", o->lit);
      write_literal(r, o->attr, pat, text, len);
      return o;
    }
    write_literal(r, o->attr, o->lit, text, len);
    if (o->cmp == EXPR_BETWEEN) {
      strcpy(o->lit2, lits[rng_below(r, 4)]);
      *len += (size_t)sprintf(text + *len, " AND ");
      write_literal(r, o->attr, o->lit2, text, len);
    }
    return o;
  }
  o->op = 1 + (int)rng_below(r, 2);
  o->n = 2 + (int)rng_below(r, 2);
  text[(*len)++] = '(';
  for (int i = 0; i < o->n; i++) {
    if (i) *len += (size_t)sprintf(text + *len, o->op == 1 ? " AND " : " or ");
    o->kid[i] = random_tree(r, depth - 1, text, len);
  }
  text[(*len)++] = ')';
  return o;
}

static void free_tree(onode_t *o) {
  for (int i = 0; i < o->n; i++) free_tree(o->kid[i]);
  free(o);
}

/* 2,000 random predicates of up to 4 levels, each against every value of a small domain
   (with values that lack parts or hold a non-integer n): expr_match_value agrees with the
   oracle everywhere. Fixed seed; the count of values that matched shows the test is not
   vacuous (both answers occur often). */
static void test_expr_match_against_oracle(void **state) {
  (void)state;
  static const char *const parts_a[] = {"x", "y", "it's", ""};
  static const char *const parts_n[] = {"1", "2", "-2", "3", "0001", "z"};
  char values[200][32];
  int nvalues = 0;
  for (int i = 0; i < 4; i++)
    for (int j = 0; j < 4; j++)
      for (int k = 0; k < 6; k++)
        snprintf(values[nvalues++], 32, "%s|%s|%s", parts_a[i], parts_a[j], parts_n[k]);
  strcpy(values[nvalues++], "x");   /* no b, no n */
  strcpy(values[nvalues++], "x|y"); /* no n */
  rng_t r;
  rng_init(&r, 47);
  uint64_t matched = 0, checked = 0;
  for (int round = 0; round < 2000; round++) {
    char text[4096];
    size_t len = 0;
    onode_t *o = random_tree(&r, 4, text, &len);
    text[len] = '\0';
    expr_t *e = parse_ok(text);
    err_t err;
    assert_int_equal(expr_bind(e, lookup, NULL, &err), ST_OK);
    uint8_t *marks = malloc(expr_leaf_count(e));
    assert_non_null(marks);
    for (int v = 0; v < nvalues; v++) {
      int want = oracle(o, values[v]);
      int got = expr_match_value(e, values[v], strlen(values[v]), split_terms, NULL, marks);
      if (got != want) fail_msg("\"%s\" on \"%s\": %d, the oracle %d", text, values[v], got, want);
      matched += (uint64_t)want;
      checked++;
    }
    free(marks);
    expr_destroy(e);
    free_tree(o);
  }
  print_message("%llu of %llu (predicate, value) pairs matched\n", (unsigned long long)matched,
                (unsigned long long)checked);
  assert_true(matched > checked / 10 && matched < checked * 9 / 10);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_expr_grammar_and_precedence),
      cmocka_unit_test(test_expr_leaves),
      cmocka_unit_test(test_expr_errors_name_their_column),
      cmocka_unit_test(test_expr_limits),
      cmocka_unit_test(test_expr_bind_terms),
      cmocka_unit_test(test_expr_expand_folds_constants),
      cmocka_unit_test(test_expr_match_against_oracle),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

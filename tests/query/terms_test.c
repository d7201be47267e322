/* Tests of a value's item hashes under declared attributes (query/terms.h): the tags that
 * keep attributes apart, the whole value's hash kept, missing fields counted, multi-valued
 * arrays. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "query/terms.h"
#include "util/status.h"

#define SEED 0x62666801ull
#define MAX_HASHES 32

typedef struct got {
  int n;
  uint64_t h[MAX_HASHES];
} got_t;

static void collect(void *arg, uint64_t hash) {
  got_t *g = arg;
  assert_true(g->n < MAX_HASHES);
  g->h[g->n++] = hash;
}

typedef struct counted {
  int n;
  uint64_t h[128];
} counted_t;

static void count_distinct(void *arg, uint64_t hash) {
  counted_t *c = arg;
  assert_true(c->n < 128);
  c->h[c->n++] = hash;
}

static int holds(const got_t *g, uint64_t h) {
  for (int i = 0; i < g->n; i++)
    if (g->h[i] == h) return 1;
  return 0;
}

/* A terms_t over the n declarations given. */
static terms_t *make(int n, ...) {
  attr_spec_t *specs = calloc((size_t)n, sizeof *specs);
  assert_non_null(specs);
  va_list ap;
  va_start(ap, n);
  err_t err;
  for (int i = 0; i < n; i++) {
    const char *decl = va_arg(ap, const char *);
    if (attr_spec_parse(decl, &specs[i], &err) != ST_OK) fail_msg("%s: %s", decl, err.msg);
  }
  va_end(ap);
  terms_t *t;
  if (terms_create(specs, (size_t)n, SEED, &t, &err) != ST_OK) fail_msg("%s", err.msg);
  return t;
}

static got_t hash_of(const terms_t *t, const char *val, unsigned flags) {
  got_t g = {0};
  int rc = terms_hash_value(t, val, strlen(val), SEED, flags, collect, &g);
  assert_int_equal(rc, g.n);
  return g;
}

/* Without declarations the one hash is today's; a declared `value` gives that same hash. */
static void test_terms_value_equals_whole_value_hash(void **state) {
  (void)state;
  const char *v = "{\"city\":\"Lyon\"}";
  uint64_t today = bfh_value_hash(v, strlen(v), SEED);
  got_t g = {0};
  assert_int_equal(value_terms_hash(NULL, v, strlen(v), SEED, VALUE_TERMS_COUNT, collect, &g), 1);
  assert_int_equal(g.n, 1);
  assert_true(g.h[0] == today);

  terms_t *t = make(2, "city=json:city", "whole=value");
  g = hash_of(t, v, 0);
  assert_int_equal(g.n, 2);
  assert_true(holds(&g, today));
  assert_true(holds(&g, terms_hash_term(t, 1, v, strlen(v), SEED)));
  assert_true(terms_hash_term(t, 1, v, strlen(v), SEED) == today);
  /* Through the interface the engines see, the same hashes. */
  got_t g2 = {0};
  assert_int_equal(value_terms_hash(terms_value_terms(t), v, strlen(v), SEED, 0, collect, &g2), 2);
  assert_memory_equal(g.h, g2.h, 2 * sizeof g.h[0]);
  /* An empty value, which may come as NULL. */
  got_t e = {0};
  assert_int_equal(terms_hash_value(t, NULL, 0, SEED, 0, collect, &e), 1);
  assert_true(e.h[0] == bfh_value_hash("", 0, SEED));
  terms_destroy(t);
  assert_null(terms_value_terms(NULL));
}

/* The same bytes under two attributes hash apart; an attribute's hash is its name's, not its
   position's; a :value:int attribute is tagged too. */
static void test_terms_tags_separate_attributes(void **state) {
  (void)state;
  terms_t *t = make(3, "a=csv:1", "b=csv:2", "n=value:int");
  got_t g = hash_of(t, "x,x", 0);
  assert_int_equal(g.n, 2); /* n: "x,x" is no integer */
  uint64_t ax = terms_hash_term(t, 0, "x", 1, SEED), bx = terms_hash_term(t, 1, "x", 1, SEED);
  assert_true(ax != bx);
  assert_true(holds(&g, ax) && holds(&g, bx));
  assert_true(ax != bfh_value_hash("x", 1, SEED));
  terms_t *u = make(2, "b=csv:2", "zz=csv:1"); /* b second there, first here */
  assert_true(terms_hash_term(u, 0, "x", 1, SEED) == bx);
  assert_true(terms_hash_term(u, 1, "x", 1, SEED) != ax);
  terms_destroy(u);
  uint8_t seven[ATTR_INT_TERM_BYTES];
  attr_int_term(7, seven);
  g = hash_of(t, "007", 0);
  assert_int_equal(g.n, 2); /* a: 007, b: none (one field only), n: 7 */
  assert_true(holds(&g, terms_hash_term(t, 2, seven, sizeof seven, SEED)));
  assert_true(holds(&g, terms_hash_term(t, 0, "007", 3, SEED)));
  assert_false(holds(&g, bfh_value_hash("007", 3, SEED)));
  /* Another seed than the one the terms were made for: the same rule under it. */
  got_t o = {0};
  assert_int_equal(terms_hash_value(t, "p,q", 3, SEED + 1, 0, collect, &o), 2);
  assert_true(holds(&o, terms_hash_term(t, 0, "p", 1, SEED + 1)));
  assert_true(holds(&o, terms_hash_term(t, 1, "q", 1, SEED + 1)));
  assert_false(holds(&o, terms_hash_term(t, 0, "p", 1, SEED)));
  terms_destroy(t);
}

/* A value without the field, or not JSON, gives no term of that attribute and is counted
   when the put asks (VALUE_TERMS_COUNT), never when a table build hashes it again. */
static void test_terms_missing_field_counted(void **state) {
  (void)state;
  terms_t *t = make(3, "city=json:address.city", "age=json:age:int", "id=csv:1");
  got_t g = hash_of(t, "{\"address\":{\"city\":\"Lyon\"},\"age\":\"x\"}", VALUE_TERMS_COUNT);
  assert_int_equal(g.n, 1); /* city; age is no integer, and a '"' in an unquoted field makes
                               the CSV record malformed */
  assert_true(holds(&g, terms_hash_term(t, 0, "Lyon", 4, SEED)));
  g = hash_of(t, "not json", VALUE_TERMS_COUNT);
  assert_int_equal(g.n, 1);
  assert_true(holds(&g, terms_hash_term(t, 2, "not json", 8, SEED)));
  g = hash_of(t, "{\"age\":41", VALUE_TERMS_COUNT); /* broken JSON, malformed CSV */
  assert_int_equal(g.n, 0);
  g = hash_of(t, "\"a\",b", VALUE_TERMS_COUNT);
  assert_int_equal(g.n, 1);
  assert_true(holds(&g, terms_hash_term(t, 2, "a", 1, SEED)));
  g = hash_of(t, "{\"age\":41}", 0); /* not counted */
  terms_stats_t st;
  terms_stats(t, 0, &st);
  assert_int_equal(st.values, 4);
  assert_int_equal(st.without_term, 3);
  terms_stats(t, 1, &st);
  assert_int_equal(st.without_term, 4);
  terms_stats(t, 2, &st);
  assert_int_equal(st.without_term, 2);
  assert_int_equal(terms_without_term_total(t), 9);
  terms_destroy(t);
}

/* Each element of a JSON array is its own term; a repeated element is one item. */
static void test_terms_json_array_one_per_element(void **state) {
  (void)state;
  terms_t *t = make(2, "tags=json:tags", "ids=json:ids:int");
  got_t g = hash_of(t, "{\"tags\":[\"red\",\"blue\",\"red\",\"green\"],\"ids\":[1,\"01\",2]}", 0);
  assert_int_equal(g.n, 5);
  const char *tags[] = {"red", "blue", "green"};
  for (int i = 0; i < 3; i++)
    assert_true(holds(&g, terms_hash_term(t, 0, tags[i], strlen(tags[i]), SEED)));
  for (int64_t v = 1; v <= 2; v++) {
    uint8_t term[ATTR_INT_TERM_BYTES];
    attr_int_term(v, term);
    assert_true(holds(&g, terms_hash_term(t, 1, term, sizeof term, SEED)));
  }
  for (int i = 1; i < g.n; i++) assert_true(g.h[i - 1] != g.h[i]);
  /* More terms than fit on the stack: every one, once. */
  char big[4096];
  size_t n = (size_t)snprintf(big, sizeof big, "{\"tags\":[");
  for (int i = 0; i < 150; i++)
    n += (size_t)snprintf(big + n, sizeof big - n, "%s\"t%d\"", i ? "," : "", i % 100);
  snprintf(big + n, sizeof big - n, "]}");
  counted_t c = {0, {0}};
  assert_int_equal(terms_hash_value(t, big, strlen(big), SEED, 0, count_distinct, &c), 100);
  assert_int_equal(c.n, 100);
  for (int i = 0; i < 100; i++) {
    char term[8];
    int len = snprintf(term, sizeof term, "t%d", i);
    int found = 0;
    for (int j = 0; j < c.n; j++) found += c.h[j] == terms_hash_term(t, 0, term, (size_t)len, SEED);
    assert_int_equal(found, 1);
  }
  terms_destroy(t);
}

static void test_terms_create_checks(void **state) {
  (void)state;
  attr_spec_t *specs = calloc(2, sizeof *specs);
  err_t err;
  assert_int_equal(attr_spec_parse("a=csv:1", &specs[0], &err), ST_OK);
  assert_int_equal(attr_spec_parse("a=csv:2", &specs[1], &err), ST_OK);
  terms_t *t;
  assert_int_equal(terms_create(specs, 2, SEED, &t, &err), ST_E_INVALID);
  assert_non_null(strstr(err.msg, "'a' is declared twice"));
  assert_int_equal(terms_create(specs, 0, SEED, &t, &err), ST_E_INVALID);
  attr_specs_free(specs, 2); /* still the caller's */
  t = make(2, "x=json:a.b", "y=bytes:0:2");
  assert_int_equal(terms_count(t), 2);
  assert_int_equal(terms_find(t, "y", 1), 1);
  assert_int_equal(terms_find(t, "z", 1), -1);
  int is_int = -1;
  assert_int_equal(terms_lookup(t, "x", 1, &is_int), 0);
  assert_int_equal(is_int, 0);
  assert_string_equal(terms_spec(t, 0)->name, "x");
  terms_destroy(t);
  terms_destroy(NULL);
}

/* A composite's items: its pair term (attr_pair_term of the members' terms) under its own
   seed, beside the members' items, from the same reading of the value. */
static uint64_t pair_item(const terms_t *t, size_t c, const void *a, size_t alen, const void *b,
                          size_t blen) {
  uint8_t buf[64];
  assert_true(attr_pair_term_bytes(alen, blen) <= sizeof buf);
  size_t n = attr_pair_term(a, alen, b, blen, buf);
  return terms_hash_term(t, c, buf, n, SEED);
}

static void test_terms_pair_items(void **state) {
  (void)state;
  terms_t *t = make(3, "city=json:city", "age=json:age:int", "ca=pair:city,age");
  size_t a = 9, b = 9;
  assert_int_equal(terms_pair(t, 2, &a, &b), 1);
  assert_int_equal(a, 0);
  assert_int_equal(b, 1);
  assert_int_equal(terms_pair(t, 0, &a, &b), 0);
  assert_int_equal(terms_pair_count(t), 1);
  got_t g = hash_of(t, "{\"city\":\"Oslo\",\"age\":\"030\"}", 0);
  assert_int_equal(g.n, 3);
  uint8_t age[ATTR_INT_TERM_BYTES];
  attr_int_term(30, age);
  assert_true(holds(&g, terms_hash_term(t, 0, "Oslo", 4, SEED)));
  assert_true(holds(&g, terms_hash_term(t, 1, age, sizeof age, SEED)));
  assert_true(holds(&g, pair_item(t, 2, "Oslo", 4, age, sizeof age)));
  /* The pair's term is not its members' bytes run together under some other cut. */
  assert_true(pair_item(t, 2, "ab", 2, "c", 1) != pair_item(t, 2, "a", 1, "bc", 2));
  /* Nor the overflow term, nor the same pair under a member's seed. */
  assert_true(pair_item(t, 2, "", 0, "", 0) != terms_hash_term(t, 2, "", 0, SEED));
  assert_true(pair_item(t, 2, "a", 1, "b", 1) != pair_item(t, 0, "a", 1, "b", 1));
  terms_destroy(t);
}

/* A member without a term: no pair, counted as the composite's value without a term. Every
   pair of multi-valued members; beyond ATTR_PAIR_MAX_TERMS the overflow term alone. */
static void test_terms_pair_product_and_overflow(void **state) {
  (void)state;
  terms_t *t = make(3, "x=json:x", "y=json:y", "xy=pair:x,y");
  got_t g = hash_of(t, "{\"x\":\"a\"}", VALUE_TERMS_COUNT);
  assert_int_equal(g.n, 1);
  terms_stats_t st;
  terms_stats(t, 2, &st);
  assert_int_equal(st.values, 1);
  assert_int_equal(st.without_term, 1);
  terms_stats(t, 0, &st);
  assert_int_equal(st.without_term, 0);

  g = hash_of(t, "{\"x\":[\"a\",\"b\"],\"y\":[\"1\",\"2\",\"3\"]}", VALUE_TERMS_COUNT);
  assert_int_equal(g.n, 2 + 3 + 6);
  for (const char *p = "ab"; *p; p++)
    for (const char *q = "123"; *q; q++) assert_true(holds(&g, pair_item(t, 2, p, 1, q, 1)));
  assert_false(holds(&g, terms_hash_term(t, 2, ATTR_PAIR_OVERFLOW_TERM, 0, SEED)));

  /* 17 x 16 = 272 pairs > 256: the overflow term instead of any pair. */
  char val[1024];
  size_t n = (size_t)snprintf(val, sizeof val, "{\"x\":[");
  for (int i = 0; i < 17; i++)
    n += (size_t)snprintf(val + n, sizeof val - n, "%s\"%c\"", i ? "," : "", 'a' + i);
  n += (size_t)snprintf(val + n, sizeof val - n, "],\"y\":[");
  for (int i = 0; i < 16; i++)
    n += (size_t)snprintf(val + n, sizeof val - n, "%s\"%c\"", i ? "," : "", 'A' + i);
  snprintf(val + n, sizeof val - n, "]}");
  counted_t c = {0};
  assert_int_equal(
      terms_hash_value(t, val, strlen(val), SEED, VALUE_TERMS_COUNT, count_distinct, &c),
      17 + 16 + 1);
  got_t all = {0};
  for (int i = 0; i < c.n; i++)
    if (c.h[i] == terms_hash_term(t, 2, ATTR_PAIR_OVERFLOW_TERM, 0, SEED)) all.n++;
  assert_int_equal(all.n, 1);
  for (int i = 0; i < c.n; i++) assert_true(c.h[i] != pair_item(t, 2, "a", 1, "A", 1));
  terms_stats(t, 2, &st);
  assert_int_equal(st.without_term,
                   1); /* the overflow is a term: only the first value lacked one */
  terms_destroy(t);
}

/* A composite's members are declared, and neither is a composite. */
static void test_terms_pair_members_checked(void **state) {
  (void)state;
  static const char *const bad[][3] = {
      {"x=json:x", "xy=pair:x,y", "is not declared"},
      {"x=json:x", "xx=pair:x,xz", "xz is not declared"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    attr_spec_t *specs = calloc(2, sizeof *specs);
    err_t err;
    assert_int_equal(attr_spec_parse(bad[i][0], &specs[0], &err), ST_OK);
    assert_int_equal(attr_spec_parse(bad[i][1], &specs[1], &err), ST_OK);
    terms_t *t;
    assert_int_equal(terms_create(specs, 2, SEED, &t, &err), ST_E_INVALID);
    assert_non_null(strstr(err.msg, bad[i][2]));
    attr_specs_free(specs, 2);
  }
  attr_spec_t *specs = calloc(4, sizeof *specs);
  err_t err;
  const char *decl[] = {"x=json:x", "y=json:y", "xy=pair:x,y", "z=pair:xy,x"};
  for (int i = 0; i < 4; i++) assert_int_equal(attr_spec_parse(decl[i], &specs[i], &err), ST_OK);
  terms_t *t;
  assert_int_equal(terms_create(specs, 4, SEED, &t, &err), ST_E_INVALID);
  assert_non_null(strstr(err.msg, "'z=pair:xy,x': xy is a composite itself"));
  attr_specs_free(specs, 4);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_terms_value_equals_whole_value_hash),
      cmocka_unit_test(test_terms_tags_separate_attributes),
      cmocka_unit_test(test_terms_missing_field_counted),
      cmocka_unit_test(test_terms_json_array_one_per_element),
      cmocka_unit_test(test_terms_create_checks),
      cmocka_unit_test(test_terms_pair_items),
      cmocka_unit_test(test_terms_pair_product_and_overflow),
      cmocka_unit_test(test_terms_pair_members_checked),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

/* Tests of attributes (query/attr.h): declarations, every extractor's terms, :int, the stored
 * list. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <pthread.h>

#include "query/attr.h"
#include "util/coding.h"
#include "util/crc32c.h"
#include "util/random.h"

#define SEED 0xa77full
#define MAX_TERMS 16

typedef struct got {
  int n;
  size_t len[MAX_TERMS];
  char term[MAX_TERMS][256];
  int stop_after; /* fn returns nonzero at this call (0: never) */
} got_t;

static int collect(void *arg, const void *term, size_t len) {
  got_t *g = arg;
  assert_true(g->n < MAX_TERMS && len < sizeof g->term[0]);
  memcpy(g->term[g->n], term, len);
  g->len[g->n++] = len;
  return g->stop_after && g->n == g->stop_after;
}

/* The terms of value[0, len) under the declaration decl, into *g; returns attr_extract's. */
static int extract(const char *decl, const char *value, size_t len, got_t *g) {
  attr_spec_t spec;
  err_t err;
  int rc = attr_spec_parse(decl, &spec, &err);
  if (rc != ST_OK) fail_msg("%s: %s", decl, err.msg);
  int stop = g->stop_after;
  memset(g, 0, sizeof *g);
  g->stop_after = stop;
  rc = attr_extract(&spec, value, len, collect, g);
  attr_spec_release(&spec);
  assert_true(rc >= 0);
  assert_int_equal(rc, g->n);
  return rc;
}

/* Checks that value (a C string) has exactly the terms given (n C strings) under decl. */
static void expect_terms(const char *decl, const char *value, int n, ...) {
  got_t g = {0};
  int rc = extract(decl, value, strlen(value), &g);
  if (rc != n) fail_msg("%s on '%s': %d terms, expected %d", decl, value, rc, n);
  va_list ap;
  va_start(ap, n);
  for (int i = 0; i < n; i++) {
    const char *want = va_arg(ap, const char *);
    if (g.len[i] != strlen(want) || memcmp(g.term[i], want, g.len[i]) != 0)
      fail_msg("%s on '%s': term %d is '%.*s', expected '%s'", decl, value, i, (int)g.len[i],
               g.term[i], want);
  }
  va_end(ap);
}

/* Checks that value has exactly the integer terms given under decl (an :int declaration). */
static void expect_ints(const char *decl, const char *value, int n, ...) {
  got_t g = {0};
  int rc = extract(decl, value, strlen(value), &g);
  if (rc != n) fail_msg("%s on '%s': %d terms, expected %d", decl, value, rc, n);
  va_list ap;
  va_start(ap, n);
  for (int i = 0; i < n; i++) {
    uint8_t want[ATTR_INT_TERM_BYTES];
    attr_int_term(va_arg(ap, int64_t), want);
    assert_int_equal(g.len[i], ATTR_INT_TERM_BYTES);
    assert_memory_equal(g.term[i], want, ATTR_INT_TERM_BYTES);
  }
  va_end(ap);
}

static void test_attr_value_and_bytes(void **state) {
  (void)state;
  expect_terms("v=value", "hello", 1, "hello");
  expect_terms("v=value", "", 1, "");
  expect_terms("b=bytes:0:3", "hello", 1, "hel");
  expect_terms("b=bytes:2:3", "hello", 1, "llo");
  expect_terms("b=bytes:3:3", "hello", 0); /* past the end: no term */
  expect_terms("b=bytes:5:1", "hello", 0);
  expect_terms("b=bytes:4294967295:4294967295", "hello", 0);
  got_t g = {0};
  assert_int_equal(extract("v=value", "a\0b", 3, &g), 1); /* binary values are fine */
  assert_int_equal(g.len[0], 3);
  assert_memory_equal(g.term[0], "a\0b", 3);
  expect_ints("n=bytes:1:3:int", "x042y", 1, (int64_t)42);
  expect_ints("n=bytes:0:3:int", "x042y", 0);
  expect_ints("n=value:int", "-17", 1, (int64_t)-17);
  expect_ints("n=value:int", "17 ", 0);
}

static void test_attr_json_nested_path(void **state) {
  (void)state;
  const char *v =
      "{\"id\":7,\"address\":{\"city\":\"Lyon\",\"geo\":{\"lat\":45.76}},"
      "\"city\":\"top\"}";
  expect_terms("c=json:address.city", v, 1, "Lyon");
  expect_terms("c=json:city", v, 1, "top");
  expect_terms("c=json:address.geo.lat", v, 1, "45.76");
  expect_terms("c=json:address.zip", v, 0);    /* missing */
  expect_terms("c=json:address.city.x", v, 0); /* through a string */
  expect_terms("c=json:address", v, 0);        /* an object */
  expect_terms("c=json:nope.city", v, 0);
  expect_terms("c=json:a.b", "{\"a\":[{\"b\":1}]}", 0);    /* through an array */
  expect_terms("c=json:a", "{\"a\":1,\"a\":2}", 1, "2");   /* a repeated key: its last value */
  expect_terms("c=json:a", "[{\"a\":1}]", 0);              /* not an object */
  expect_terms("c=json:a b", "{\"a b\":\"sp\"}", 1, "sp"); /* keys byte for byte */
}

static void test_attr_json_scalars(void **state) {
  (void)state;
  expect_terms("x=json:a", "{\"a\":\"text\"}", 1, "text");
  expect_terms("x=json:a", "{\"a\":\"\"}", 1, "");
  expect_terms("x=json:a", "{\"a\":42}", 1, "42");
  expect_terms("x=json:a", "{\"a\":-42}", 1, "-42");
  expect_terms("x=json:a", "{\"a\":1.50}", 1, "1.50"); /* as written */
  expect_terms("x=json:a", "{\"a\":1e3}", 1, "1e3");
  expect_terms("x=json:a", "{\"a\":-2.5E-3}", 1, "-2.5E-3");
  expect_terms("x=json:a", "{\"a\":-0}", 1, "0"); /* an integer's decimal form */
  expect_terms("x=json:a", "{\"a\":true}", 1, "true");
  expect_terms("x=json:a", "{\"a\":false}", 1, "false");
  expect_terms("x=json:a", "{\"a\":null}", 1, "null");
  expect_terms("x=json:a", "{\"a\":{}}", 0);
  expect_terms("x=json:a", " { \"a\" : \"ws\" } \n", 1, "ws");
  /* what json-c's strict mode lets through (attr.h) */
  expect_terms("x=json:a", "{\"a\":NaN}", 1, "NaN");
  expect_terms("x=json:a", "{\"a\":-Infinity}", 1, "-Infinity");
  expect_terms("x=json:a", "{\"a\":1.}", 1, "1.");
  expect_terms("x=json:a", "{\"a\":-01}", 1, "-1");
  expect_ints("x=json:a:int", "{\"a\":NaN}", 0);
  expect_ints("x=json:a:int", "{\"a\":1.}", 1, (int64_t)1);
}

static void test_attr_json_escaped_strings(void **state) {
  (void)state;
  expect_terms("x=json:a", "{\"a\":\"say \\\"hi\\\"\"}", 1, "say \"hi\"");
  expect_terms("x=json:a", "{\"a\":\"back\\\\slash\\/\"}", 1, "back\\slash/");
  expect_terms("x=json:a", "{\"a\":\"tab\\tnl\\n\"}", 1, "tab\tnl\n");
  expect_terms("x=json:a", "{\"a\":\"Z\\u00fcrich\"}", 1, "Z\xc3\xbcrich");
  expect_terms("x=json:a", "{\"a\":\"Z\xc3\xbcrich\"}", 1, "Z\xc3\xbcrich");
  expect_terms("x=json:a", "{\"a\":\"\\ud83d\\ude00\"}", 1, "\xf0\x9f\x98\x80");
  expect_terms("x=json:k\xc3\xa9", "{\"k\\u00e9\":1}", 1, "1"); /* an escaped key */
  got_t g = {0};
  const char *v = "{\"a\":\"x\\u0000y\"}";
  assert_int_equal(extract("x=json:a", v, strlen(v), &g), 1);
  assert_int_equal(g.len[0], 3);
  assert_memory_equal(g.term[0], "x\0y", 3);
}

static void test_attr_json_arrays_are_multi_valued(void **state) {
  (void)state;
  expect_terms("t=json:tags", "{\"tags\":[\"red\",\"blue\",\"red\"]}", 3, "red", "blue", "red");
  expect_terms("t=json:tags", "{\"tags\":[\"a\",1,2.50,true,null,{\"x\":1},[\"n\"]]}", 5, "a", "1",
               "2.50", "true", "null");
  expect_terms("t=json:tags", "{\"tags\":[]}", 0);
  expect_terms("t=json:o.tags", "{\"o\":{\"tags\":[\"x\",\"y\"]}}", 2, "x", "y");
  expect_ints("t=json:ids:int", "{\"ids\":[1,\"007\",7.5,\"x\",-3]}", 3, (int64_t)1, (int64_t)7,
              (int64_t)-3);
  /* fn stops the extraction: the terms reported up to and including that call */
  got_t g = {0};
  g.stop_after = 2;
  const char *v = "{\"t\":[\"a\",\"b\",\"c\",\"d\"]}";
  assert_int_equal(extract("t=json:t", v, strlen(v), &g), 2);
  g.stop_after = 1;
  assert_int_equal(extract("v=value", "abc", 3, &g), 1);
}

static void test_attr_json_malformed_gives_no_term(void **state) {
  (void)state;
  static const char *const bad[] = {
      "",
      "{",
      "{\"a\":",
      "{\"a\":\"x\"",          /* cut short */
      "{\"a\":\"x\"}}",        /* trailing garbage */
      "{\"a\":\"x\"} {}",      /* two values */
      "{'a':'x'}",             /* single quotes */
      "{\"a\":\"x\",}",        /* trailing comma */
      "{a:\"x\"}",             /* unquoted key */
      "{\"a\":01}",            /* leading zero */
      "{\"a\":\"x\" /* c */}", /* a comment */
      "{\"a\":\"\\q\"}",       /* a bad escape */
      "{\"a\":tru}",
      "{\"a\":\"x\"}\0",
      "not json at all",
      "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]"
      "]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]",
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    got_t g = {0};
    size_t len = strlen(bad[i]) + (i == 13); /* one with a NUL byte after the object */
    if (extract("x=json:a", bad[i], len, &g) != 0) fail_msg("'%s' gave a term", bad[i]);
    if (extract("x=json:a:int", bad[i], len, &g) != 0) fail_msg("'%s' gave a term", bad[i]);
  }
  /* 40 levels: deeper than json-c's 32 */
  char deep[256] = "";
  for (int i = 0; i < 40; i++) strcat(deep, "{\"a\":");
  strcat(deep, "1");
  for (int i = 0; i < 40; i++) strcat(deep, "}");
  expect_terms("x=json:a", deep, 0);
}

static void test_attr_int_parse_canonical(void **state) {
  (void)state;
  static const struct {
    const char *text;
    int ok;
    int64_t v;
  } cases[] = {
      {"7", 1, 7},
      {"007", 1, 7},
      {"+7", 1, 7},
      {"+007", 1, 7},
      {"-7", 1, -7},
      {"-0", 1, 0},
      {"0", 1, 0},
      {"000", 1, 0},
      {"9223372036854775807", 1, INT64_MAX},
      {"-9223372036854775808", 1, INT64_MIN},
      {"0009223372036854775807", 1, INT64_MAX},
      {"9223372036854775808", 0, 0}, /* overflow */
      {"-9223372036854775809", 0, 0},
      {"99999999999999999999", 0, 0},
      {"1e3", 0, 0},
      {"1.0", 0, 0},
      {"", 0, 0},
      {"+", 0, 0},
      {"-", 0, 0},
      {" 7", 0, 0},
      {"7 ", 0, 0},
      {"--7", 0, 0},
      {"0x10", 0, 0},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    int64_t v = 12345;
    int rc = attr_int_parse(cases[i].text, strlen(cases[i].text), &v);
    if ((rc == ST_OK) != cases[i].ok) fail_msg("'%s': rc %d", cases[i].text, rc);
    if (cases[i].ok && v != cases[i].v) fail_msg("'%s': %lld", cases[i].text, (long long)v);
  }
  /* the length bounds the text: "12" of "123" */
  int64_t v;
  assert_int_equal(attr_int_parse("123", 2, &v), ST_OK);
  assert_int_equal(v, 12);
  /* "007" = "7" = "+7", and "-0" = "0", as terms of an :int attribute */
  expect_ints("n=csv:1:int", "007", 1, (int64_t)7);
  expect_ints("n=csv:1:int", "+7", 1, (int64_t)7);
  expect_ints("n=csv:1:int", "-0", 1, (int64_t)0);
  expect_ints("n=csv:1:int", "1e3", 0);
  expect_ints("n=csv:1:int", "9223372036854775808", 0);
  expect_ints("n=csv:1:int", "", 0);
}

static void test_attr_int_json_numbers(void **state) {
  (void)state;
  static const struct {
    const char *num;
    int ok;
    int64_t v;
  } cases[] = {
      {"7", 1, 7},
      {"-7", 1, -7},
      {"-0", 1, 0},
      {"7.0", 1, 7},
      {"7.000", 1, 7},
      {"1e3", 1, 1000},
      {"1E+3", 1, 1000},
      {"2.5e1", 1, 25},
      {"-2.5e1", 1, -25},
      {"0.0", 1, 0},
      {"0e99", 1, 0},
      {"-0.0", 1, 0},
      {"1200e-2", 1, 12},
      {"7.5", 0, 0},
      {"1e-3", 0, 0},
      {"0.1", 0, 0},
      {"1e19", 0, 0},
      {"1e400", 0, 0},
      {"9223372036854775807", 1, INT64_MAX},
      {"-9223372036854775808", 1, INT64_MIN},
      {"9223372036854775808", 0, 0},
      {"18446744073709551615", 0, 0},
      {"9.223372036854775807e18", 1, INT64_MAX},
      {"9.223372036854775808e18", 0, 0},
      {"\"007\"", 1, 7},
      {"\"+7\"", 1, 7},
      {"\"7.0\"", 0, 0},
      {"\" 7\"", 0, 0},
      {"true", 0, 0},
      {"null", 0, 0},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    char v[128];
    snprintf(v, sizeof v, "{\"n\":%s}", cases[i].num);
    if (cases[i].ok)
      expect_ints("n=json:n:int", v, 1, cases[i].v);
    else
      expect_ints("n=json:n:int", v, 0);
  }
}

static void test_attr_int_term_orders_as_integers(void **state) {
  (void)state;
  uint8_t t[8];
  attr_int_term(0, t);
  assert_memory_equal(t, "\x80\0\0\0\0\0\0\0", 8);
  attr_int_term(-1, t);
  assert_memory_equal(t, "\x7f\xff\xff\xff\xff\xff\xff\xff", 8);
  attr_int_term(INT64_MIN, t);
  assert_memory_equal(t, "\0\0\0\0\0\0\0\0", 8);
  attr_int_term(INT64_MAX, t);
  assert_memory_equal(t, "\xff\xff\xff\xff\xff\xff\xff\xff", 8);
  attr_int_term(0x0102030405060708ll, t);
  assert_memory_equal(t, "\x81\x02\x03\x04\x05\x06\x07\x08", 8);
  rng_t r;
  rng_init(&r, SEED);
  for (int i = 0; i < 100000; i++) {
    /* half the pairs near each other, so that low bytes decide too */
    int64_t a = (int64_t)rng_next(&r),
            b = i % 2 ? (int64_t)rng_next(&r) : a + (int64_t)rng_below(&r, 512) - 256;
    uint8_t ta[8], tb[8];
    attr_int_term(a, ta);
    attr_int_term(b, tb);
    int c = memcmp(ta, tb, 8);
    assert_int_equal((c > 0) - (c < 0), (a > b) - (a < b));
  }
}

/* A term fn that checks the term is arg (a C string). */
static int equals_fn(void *arg, const void *term, size_t len) {
  assert_int_equal(len, strlen(arg));
  assert_memory_equal(term, arg, len);
  return 0;
}

static void test_attr_csv_fields_and_quoting(void **state) {
  (void)state;
  expect_terms("f=csv:1", "a,b,c", 1, "a");
  expect_terms("f=csv:2", "a,b,c", 1, "b");
  expect_terms("f=csv:3", "a,b,c", 1, "c");
  expect_terms("f=csv:4", "a,b,c", 0); /* missing */
  expect_terms("f=csv:2", "a,,c", 1, "");
  expect_terms("f=csv:3", "a,b,", 1, "");
  expect_terms("f=csv:1", "", 1, "");
  expect_terms("f=csv:2", "a,\"b,1\",c", 1, "b,1");
  expect_terms("f=csv:2", "a,\"say \"\"hi\"\"\",c", 1, "say \"hi\"");
  expect_terms("f=csv:2", "a,\"\"\"\",c", 1, "\"");
  expect_terms("f=csv:2", "a,\"\",c", 1, "");
  expect_terms("f=csv:2", "a,\"two\nlines\",c", 1, "two\nlines");
  expect_terms("f=csv:3", "a,\"two\r\nlines\",c\r\nx,y,z", 1, "c");
  expect_terms("f=csv:2", "a,b\nx,y", 1, "b"); /* only the first record counts */
  expect_terms("f=csv:3", "a,b\nx,y,z", 0);
  expect_terms("f=csv:2", "a,b\r\nx,y", 1, "b");
  expect_terms("f=csv:2", "a,b\rc,d", 1, "b\rc"); /* a lone CR is data */
  expect_terms("f=csv:2", "a, b ,c", 1, " b ");   /* spaces are data */
  expect_terms("f=csv:1", "a\tb", 1, "a\tb");
  expect_ints("n=csv:3:int", "x,y,0042", 1, (int64_t)42);
  expect_ints("n=csv:3:int", "x,y,\"-0042\"", 1, (int64_t)-42);
  expect_ints("n=csv:3:int", "x,y,4 2", 0);
  /* a long quoted field with "" (unescaped into a heap buffer) */
  char v[2100] = "k,\"", want[1600] = "";
  for (int i = 0; i < 500; i++) {
    strcat(v, "ab\"\"");
    strcat(want, "ab\"");
  }
  strcat(v, "\",z");
  attr_spec_t spec;
  assert_int_equal(attr_spec_parse("f=csv:2", &spec, NULL), ST_OK);
  assert_int_equal(attr_extract(&spec, v, strlen(v), equals_fn, want), 1);
  attr_spec_release(&spec);
}

static void test_attr_csv_malformed_gives_no_term(void **state) {
  (void)state;
  static const char *const bad[] = {
      "a,\"b,c",                /* the quote never closes */
      "\"a",        "a,b\"c,d", /* a quote inside an unquoted field */
      "a,\"b\"c,d",             /* text after the closing quote */
      "a,\"b\" ,d", "a,b,c\"",
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
    for (int f = 1; f <= 4; f++) { /* whichever field is asked */
      char decl[32];
      snprintf(decl, sizeof decl, "f=csv:%d", f);
      expect_terms(decl, bad[i], 0);
    }
  /* only the first record is checked */
  expect_terms("f=csv:1", "a,b\n\"c", 1, "a");
}

static void test_attr_tsv(void **state) {
  (void)state;
  expect_terms("f=tsv:2", "a\tb\tc", 1, "b");
  expect_terms("f=tsv:1", "a,b\tc", 1, "a,b");
  expect_terms("f=tsv:2", "a\t\"b\tc\"\td", 1, "b\tc");
  expect_terms("f=tsv:2", "a\t\"b\"\"c\"", 1, "b\"c");
  expect_terms("f=tsv:2", "a\tb\"c", 0);
  expect_terms("f=tsv:3", "a\tb\nc\td\te", 0);
  expect_ints("n=tsv:2:int", "a\t+12\tc", 1, (int64_t)12);
}

/* ---- declarations ---- */

static void test_attr_spec_parse_accepts(void **state) {
  (void)state;
  static const struct {
    const char *decl, *canonical;
  } cases[] = {
      {"city=json:address.city", "city=json:address.city"},
      {"age=csv:3:int", "age=csv:3:int"},
      {"age=csv:003", "age=csv:3"},
      {"t=tsv:65536", "t=tsv:65536"},
      {"_b9=bytes:0:8", "_b9=bytes:0:8"},
      {"b=bytes:007:010:int", "b=bytes:7:10:int"},
      {"b=bytes:4294967295:4294967295", "b=bytes:4294967295:4294967295"},
      {"v=value", "v=value"},
      {"v=value:int", "v=value:int"},
      {"k=json:a b.c-d.\xc3\xa9", "k=json:a b.c-d.\xc3\xa9"},
      {"x=json:a.b.c.d.e:int", "x=json:a.b.c.d.e:int"},
      /* :range without a list is written with the default levels, so that a stored
         declaration keeps them */
      {"age=csv:3:int:range", "age=csv:3:int:range=4,8,12,16,20,24"},
      {"name=json:name:range", "name=json:name:range=8,16,24,32,40,48,56"},
      {"t=value:int:range=1,02,63", "t=value:int:range=1,2,63"},
      {"t=value:range=8", "t=value:range=8"},
      {"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_a=value",
       "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_a=value"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    attr_spec_t s;
    err_t err;
    if (attr_spec_parse(cases[i].decl, &s, &err) != ST_OK)
      fail_msg("%s: %s", cases[i].decl, err.msg);
    char buf[256];
    size_t n = attr_spec_format(&s, buf, sizeof buf);
    assert_string_equal(buf, cases[i].canonical);
    assert_int_equal(n, strlen(buf));
    attr_spec_release(&s);
    attr_spec_release(&s); /* twice is fine */
  }
  attr_spec_t s;
  assert_int_equal(attr_spec_parse("city=json:address.city:int", &s, NULL), ST_OK);
  assert_string_equal(s.name, "city");
  assert_int_equal(s.kind, ATTR_JSON);
  assert_true(s.is_int);
  assert_int_equal(s.nkeys, 2);
  assert_string_equal(s.path, "address.city");
  assert_string_equal(s.keys, "address");
  assert_string_equal(s.keys + 8, "city");
  char small[8];
  assert_int_equal(attr_spec_format(&s, small, sizeof small), strlen("city=json:address.city:int"));
  assert_string_equal(small, "city=js");
  attr_spec_release(&s);
  attr_spec_release(NULL);
}

static void test_attr_spec_parse_errors_name_the_column(void **state) {
  (void)state;
  static const struct {
    const char *decl, *msg;
  } cases[] = {
      {"x=csv:0", "attribute 'x=csv:0': column 7: a field number counts from 1"},
      {"", "attribute '': column 1: a name starts with a letter or '_'"},
      {"9x=value", "column 1: a name starts with a letter or '_'"},
      {"=value", "column 1: a name starts with a letter or '_'"},
      {"a-b=value", "column 2: a name is letters, digits and '_', then '=' and the extractor"},
      {"ab", "column 3: a name is letters, digits and '_', then '='"},
      {"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_ab=value",
       "column 65: a name is at most 64 bytes"},
      {"a=", "column 3: unknown extractor"},
      {"a=xml:a", "column 3: unknown extractor"},
      {"a=jsonx", "column 3: unknown extractor"},
      {"a=values", "column 3: unknown extractor"},
      {"a=json:", "column 8: an empty path segment"},
      {"a=json:.b", "column 8: an empty path segment"},
      {"a=json:a..b", "column 10: an empty path segment"},
      {"a=json:a.", "column 10: an empty path segment"},
      {"a=json:a.:int", "column 10: an empty path segment"},
      {"a=json:a:b", "column 9: only ':int' may follow the extractor, then ':range'"},
      {"a=csv:", "column 7: expected a field number"},
      {"a=csv:x", "column 7: expected a field number"},
      {"a=csv:-1", "column 7: expected a field number"},
      {"a=tsv:00", "column 8: a field number counts from 1"},
      {"a=csv:65537", "column 11: a field number is at most 65536"},
      {"a=csv:3:float", "column 8: only ':int' may follow the extractor, then ':range'"},
      {"a=csv:3:int:int", "column 12: only ':int' may follow the extractor, then ':range'"},
      {"a=csv:3 ", "column 8: only ':int' may follow"},
      {"a=bytes:", "column 9: expected an offset"},
      {"a=bytes:4", "column 10: expected ':' and a length after the offset"},
      {"a=bytes:4:", "column 11: expected a length"},
      {"a=bytes:4:0", "column 11: a length counts from 1"},
      {"a=bytes:4294967296:1", "column 18: an offset is at most 4294967295"},
      {"a=bytes:1:99999999999999999999", "column 20: a length is at most 4294967295"},
      {"a=value:", "column 8: only ':int' may follow"},
      {"a=value:intx", "column 8: only ':int' may follow"},
      {"a=value:range:int", "column 8: only ':int' may follow"},
      {"a=value:range=", "column 15: expected a level (1 to 63)"},
      {"a=value:range=0", "column 15: the :range levels ascend, each 1 to 63"},
      {"a=value:range=64", "column 15: the :range levels ascend"},
      {"a=value:range=8,4", "column 17: the :range levels ascend"},
      {"a=value:range=1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17", "column 54: the :range levels"},
      {"a=value:ranges", "column 8: only ':int' may follow"},
      {"a\x01=value", "attribute 'a?=value': column 2:"},
      {"p=pair:", "column 8: a member's name starts with a letter or '_'"},
      {"p=pair:a", "column 9: pair: names two attributes, 'pair:A,B'"},
      {"p=pair:a;b", "column 9: pair: names two attributes"},
      {"p=pair:a,", "column 10: a member's name starts with a letter or '_'"},
      {"p=pair:a,a", "column 10: a composite's two members are distinct attributes"},
      {"p=pair:p,a", "column 1: a composite cannot be its own member"},
      {"p=pair:a,b:int", "column 11: nothing follows 'pair:A,B' (no :int, no :range)"},
      {"p=pair:a,b,c", "column 11: nothing follows 'pair:A,B'"},
      {"p=pairs:a,b", "column 3: unknown extractor"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    attr_spec_t s;
    err_t err;
    err_clear(&err);
    assert_int_equal(attr_spec_parse(cases[i].decl, &s, &err), ST_E_INVALID);
    assert_int_equal(err.code, ST_E_INVALID);
    if (!strstr(err.msg, cases[i].msg))
      fail_msg("%s: '%s', expected '%s'", cases[i].decl, err.msg, cases[i].msg);
    attr_spec_release(&s); /* nothing to release, and releasing is harmless */
  }
  /* a declaration too long, and one cut in a message */
  char longd[ATTR_MAX_DECL_BYTES + 16];
  memset(longd, 'a', sizeof longd - 1);
  longd[sizeof longd - 1] = '\0';
  memcpy(longd, "x=json:", 7);
  attr_spec_t s;
  err_t err;
  assert_int_equal(attr_spec_parse(longd, &s, &err), ST_E_INVALID);
  assert_non_null(strstr(err.msg, "column 4097: a declaration is at most 4096 bytes"));
  assert_non_null(strstr(err.msg, "aaa...'"));
}

/* ---- the stored list ---- */

static const char *const list_decls[] = {
    "city=json:address.city", "age=csv:3:int", "t=tsv:2",
    "b=bytes:4:8:int",        "v=value",       "tags=json:tags"};
#define LIST_N (sizeof list_decls / sizeof list_decls[0])

static void encode_list(uint8_t **buf, size_t *len) {
  attr_spec_t specs[LIST_N];
  for (size_t i = 0; i < LIST_N; i++)
    assert_int_equal(attr_spec_parse(list_decls[i], &specs[i], NULL), ST_OK);
  assert_int_equal(attr_specs_encode(specs, LIST_N, buf, len, NULL), ST_OK);
  for (size_t i = 0; i < LIST_N; i++) attr_spec_release(&specs[i]);
}

static void test_attr_specs_round_trip(void **state) {
  (void)state;
  uint8_t *buf;
  size_t len;
  encode_list(&buf, &len);
  assert_int_equal(buf[0], ATTR_SPECS_VERSION);
  attr_spec_t *out;
  size_t n;
  err_t err;
  assert_int_equal(attr_specs_decode(buf, len, "test", &out, &n, &err), ST_OK);
  assert_int_equal(n, LIST_N);
  for (size_t i = 0; i < n; i++) {
    char d[128];
    attr_spec_format(&out[i], d, sizeof d);
    assert_string_equal(d, list_decls[i]);
  }
  /* a decoded spec extracts */
  got_t g = {0};
  assert_int_equal(attr_extract(&out[0], "{\"address\":{\"city\":\"Oslo\"}}", 27, collect, &g), 1);
  assert_memory_equal(g.term[0], "Oslo", 4);
  attr_specs_free(out, n);
  free(buf);
  /* the empty list */
  assert_int_equal(attr_specs_encode(NULL, 0, &buf, &len, NULL), ST_OK);
  assert_int_equal(len, 6);
  assert_int_equal(attr_specs_decode(buf, len, "test", &out, &n, NULL), ST_OK);
  assert_int_equal(n, 0);
  assert_null(out);
  free(buf);
  attr_specs_free(NULL, 0);
}

/* Rewrites the checksum of buf[0, len) after a change. */
static void fix_crc(uint8_t *buf, size_t len) {
  encode_fixed32(buf + len - 4, crc32c_mask(crc32c_value(buf, len - 4)));
}

static void expect_corrupt(const uint8_t *buf, size_t len, int code, const char *msg) {
  attr_spec_t *out = (attr_spec_t *)1;
  size_t n = 99;
  err_t err;
  err_clear(&err);
  int rc = attr_specs_decode(buf, len, "db/ATTRS", &out, &n, &err);
  if (rc != code) fail_msg("rc %d (%s), expected %d", rc, err.msg, code);
  assert_null(out);
  assert_int_equal(n, 0);
  if (!strstr(err.msg, msg)) fail_msg("'%s', expected '%s'", err.msg, msg);
  assert_true(strncmp(err.msg, "db/ATTRS: ", 10) == 0);
}

static void test_attr_specs_corruption_found(void **state) {
  (void)state;
  uint8_t *buf;
  size_t len;
  encode_list(&buf, &len);
  uint8_t *c = malloc(len + 8);
  /* every bit flipped, every truncation: found (the checksum) */
  for (size_t i = 0; i < len; i++)
    for (int b = 0; b < 8; b++) {
      memcpy(c, buf, len);
      c[i] ^= (uint8_t)(1u << b);
      attr_spec_t *out;
      size_t n;
      int rc = attr_specs_decode(c, len, "x", &out, &n, NULL);
      assert_int_equal(rc, ST_E_CORRUPT);
    }
  for (size_t l = 0; l < len; l++) {
    attr_spec_t *out;
    size_t n;
    assert_int_equal(attr_specs_decode(buf, l, "x", &out, &n, NULL), ST_E_CORRUPT);
  }
  expect_corrupt(buf, 3, ST_E_CORRUPT, "3 bytes, too short");
  memcpy(c, buf, len);
  c[len - 1] ^= 1;
  expect_corrupt(c, len, ST_E_CORRUPT, "checksum mismatch at offset");
  /* behind a right checksum: a newer version */
  memcpy(c, buf, len);
  c[0] = 3;
  fix_crc(c, len);
  expect_corrupt(c, len, ST_E_UNSUPPORTED, "version 3 at offset 0, this build reads 1 and 2");
  /* version 2 is the version of a list with a composite, and only of one */
  memcpy(c, buf, len);
  c[0] = 2;
  fix_crc(c, len);
  expect_corrupt(c, len, ST_E_CORRUPT, "version 2 at offset 0 without a composite");
  /* a declaration that does not parse: its offset (the first is at offset 2) */
  memcpy(c, buf, len);
  c[3 + 5] = '!'; /* "city=json..." -> "city=!son..." */
  fix_crc(c, len);
  expect_corrupt(c, len, ST_E_CORRUPT, "attribute 0 at offset 2: attribute 'city=!son");
  /* a NUL inside a declaration */
  memcpy(c, buf, len);
  c[3 + 2] = '\0';
  fix_crc(c, len);
  expect_corrupt(c, len, ST_E_CORRUPT, "attribute 0 at offset 2: a NUL byte");
  /* a length past the end */
  memcpy(c, buf, len);
  c[2] = 0x7f;
  fix_crc(c, len);
  expect_corrupt(c, len, ST_E_CORRUPT, "attribute 0 at offset 2: bad length");
  /* a count larger than the bytes, and one smaller: trailing bytes */
  memcpy(c, buf, len);
  c[1] = 0x7f;
  fix_crc(c, len);
  expect_corrupt(c, len, ST_E_CORRUPT, "127 attributes at offset 1");
  memcpy(c, buf, len);
  c[1] = (uint8_t)(LIST_N - 1);
  fix_crc(c, len);
  expect_corrupt(c, len, ST_E_CORRUPT, "bytes after the last attribute, at offset");
  memcpy(c, buf, len);
  c[1] = (uint8_t)(LIST_N + 1);
  fix_crc(c, len);
  expect_corrupt(c, len, ST_E_CORRUPT, "attribute 6 at offset");
  memcpy(c, buf, len);
  c[1] = 0x80; /* a varint cut short */
  c[2] = 0x80;
  c[3] = 0x80;
  c[4] = 0x80;
  c[5] = 0x80;
  fix_crc(c, len);
  expect_corrupt(c, len, ST_E_CORRUPT, "bad count at offset 1");
  free(c);
  free(buf);
}

/* ---- threads ---- */

typedef struct worker {
  const attr_spec_t *spec;
  int bad;
} worker_t;

static int count_fn(void *arg, const void *term, size_t len) {
  (void)term;
  *(size_t *)arg += len;
  return 0;
}

static void *work(void *arg) {
  worker_t *w = arg;
  char v[128];
  for (int i = 0; i < 20000; i++) {
    int n = snprintf(v, sizeof v, "{\"x\":%d,\"a\":{\"b\":[\"%d\",%d]}}", i, i, -i);
    size_t total = 0;
    if (attr_extract(w->spec, v, (size_t)n, count_fn, &total) != 2) w->bad++;
    char d[32];
    if ((size_t)snprintf(d, sizeof d, "%d%d", i, -i) != total) w->bad++;
  }
  return NULL;
}

/* pair:A,B: parsed, formatted back, extracting nothing itself; a list that declares one is
   version 2 and checked for its members. */
static void test_attr_pair_declaration(void **state) {
  (void)state;
  attr_spec_t s[3];
  err_t err;
  const char *decl[] = {"city=json:address.city", "age=csv:3:int", "city_age=pair:city,age"};
  for (int i = 0; i < 3; i++) assert_int_equal(attr_spec_parse(decl[i], &s[i], &err), ST_OK);
  assert_int_equal(s[2].kind, ATTR_PAIR);
  assert_string_equal(s[2].member[0], "city");
  assert_string_equal(s[2].member[1], "age");
  char d[128];
  attr_spec_format(&s[2], d, sizeof d);
  assert_string_equal(d, "city_age=pair:city,age");
  got_t g = {0};
  assert_int_equal(attr_extract(&s[2], "x,y,3", 5, collect, &g), 0);
  assert_int_equal(attr_specs_check(s, 3, &err), ST_OK);
  assert_int_equal(attr_specs_check(s + 1, 2, &err), ST_E_INVALID);
  assert_string_equal(err.msg, "attribute 'city_age=pair:city,age': city is not declared");
  uint8_t *buf;
  size_t len;
  assert_int_equal(attr_specs_encode(s, 3, &buf, &len, &err), ST_OK);
  assert_int_equal(buf[0], ATTR_SPECS_VERSION_PAIR);
  attr_spec_t *out;
  size_t n;
  assert_int_equal(attr_specs_decode(buf, len, "test", &out, &n, &err), ST_OK);
  assert_int_equal(n, 3);
  attr_spec_format(&out[2], d, sizeof d);
  assert_string_equal(d, decl[2]);
  attr_specs_free(out, n);
  /* version 1 never holds a composite */
  buf[0] = ATTR_SPECS_VERSION;
  fix_crc(buf, len);
  expect_corrupt(buf, len, ST_E_CORRUPT, "version 1 at offset 0 with a composite");
  free(buf);
  /* a stored composite whose member is missing is damage */
  assert_int_equal(attr_specs_encode(s + 1, 2, &buf, &len, &err), ST_OK);
  expect_corrupt(buf, len, ST_E_CORRUPT,
                 "db/ATTRS: attribute 'city_age=pair:city,age': city is not");
  free(buf);
  /* the pair's term: its first member's length, then both */
  uint8_t t[16];
  assert_int_equal(attr_pair_term_bytes(2, 1), 4);
  assert_int_equal(attr_pair_term("ab", 2, "c", 1, t), 4);
  assert_memory_equal(t,
                      "\x02"
                      "abc",
                      4);
  assert_int_equal(attr_pair_term("", 0, "", 0, t), 1);
  assert_int_equal(t[0], 0);
  for (int i = 0; i < 3; i++) attr_spec_release(&s[i]);
}

static void test_attr_json_threads_each_parse(void **state) {
  (void)state;
  attr_spec_t spec;
  assert_int_equal(attr_spec_parse("ab=json:a.b", &spec, NULL), ST_OK);
  pthread_t t[4];
  worker_t w[4];
  for (int i = 0; i < 4; i++) {
    w[i] = (worker_t){&spec, 0};
    assert_int_equal(pthread_create(&t[i], NULL, work, &w[i]), 0);
  }
  for (int i = 0; i < 4; i++) {
    assert_int_equal(pthread_join(t[i], NULL), 0);
    assert_int_equal(w[i].bad, 0);
  }
  attr_spec_release(&spec);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_attr_value_and_bytes),
      cmocka_unit_test(test_attr_json_nested_path),
      cmocka_unit_test(test_attr_json_scalars),
      cmocka_unit_test(test_attr_json_escaped_strings),
      cmocka_unit_test(test_attr_json_arrays_are_multi_valued),
      cmocka_unit_test(test_attr_json_malformed_gives_no_term),
      cmocka_unit_test(test_attr_int_parse_canonical),
      cmocka_unit_test(test_attr_int_json_numbers),
      cmocka_unit_test(test_attr_int_term_orders_as_integers),
      cmocka_unit_test(test_attr_csv_fields_and_quoting),
      cmocka_unit_test(test_attr_csv_malformed_gives_no_term),
      cmocka_unit_test(test_attr_tsv),
      cmocka_unit_test(test_attr_spec_parse_accepts),
      cmocka_unit_test(test_attr_spec_parse_errors_name_the_column),
      cmocka_unit_test(test_attr_pair_declaration),
      cmocka_unit_test(test_attr_specs_round_trip),
      cmocka_unit_test(test_attr_specs_corruption_found),
      cmocka_unit_test(test_attr_json_threads_each_parse),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

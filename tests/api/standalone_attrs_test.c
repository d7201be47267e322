/* The stand-alone index over declared attributes (index/standalone.h), with the real own
 * engine and real files: JSON values with three attributes (a string, a multi-valued array and
 * an :int), random puts, overwrites that change some terms, and deletes (fixed seed); every
 * (attribute, term) lookup equals an in-memory oracle after the writes, after a reopen and
 * after more writes. Also: the whole value's entries keep their format (no ATTRIBUTES record)
 * for a database without attributes, and a whole-value search is refused where the index
 * holds none; after bfh_index_add the next open builds the index again for the new set.
 * Predicates of many leaves (IN lists, ranges, AND and OR) by STANDALONE against the oracle.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "bfh.h"
#include "api/testbed.h"
#include "index/standalone.h"
#include "query/attr.h"
#include "tests/test_util.h"
#include "tests/api/db_fixture.h"
#include "util/random.h"

#include <unistd.h>

static int file_exists(const char *p) {
  return access(p, F_OK) == 0;
}

#define NKEYS 300
#define NCITIES 7
#define NTAGS 6
#define NAGES 12

static const char *const cities[NCITIES] = {"Oslo", "Lima", "Pune", "Kyiv", "Rome", "Cusco", ""};
static const char *const tags[NTAGS] = {"red", "green", "blue", "x", "y,z", "\"q\""};

static int setup(void **state) {
  return db_fixture_setup(state, "standalone_attrs_test");
}

static const bfh_attribute attrs[3] = {
    {"city", "json:city"}, {"tags", "json:tags"}, {"age", "json:age:int"}};

static void attr_options(bfh_options *o) {
  bfh_options_init(o);
  o->memtable_bytes = 64 << 10; /* a few flushes and compactions of the index and the db */
  o->table_bytes = 8 << 10;
  o->value_filter_bits = 4096;
  o->standalone_index = 1;
  o->attributes = attrs;
  o->attribute_count = 3;
}

static bfh_db *open_or_fail(const char *dir, const bfh_options *o) {
  bfh_db *db = NULL;
  int rc = bfh_open(dir, o, &db);
  if (rc != BFH_OK) fail_msg("bfh_open %s: %d %s", dir, rc, bfh_last_error(NULL));
  return db;
}

/* The oracle: each key's live value's terms (city -1: no city field; age -1: none). */
typedef struct live {
  int present;
  int city;
  unsigned tag_mask;
  int age;
} live_t;

static void make_value(rng_t *r, live_t *l, char *buf, size_t cap) {
  l->present = 1;
  l->city = (int)rng_below(r, NCITIES + 1) - 1;
  l->tag_mask = (unsigned)rng_below(r, 1u << NTAGS) & (unsigned)rng_below(r, 1u << NTAGS);
  l->age = (int)rng_below(r, NAGES + 1) - 1;
  size_t n = (size_t)snprintf(buf, cap, "{");
  if (l->city >= 0) n += (size_t)snprintf(buf + n, cap - n, "\"city\":\"%s\",", cities[l->city]);
  n += (size_t)snprintf(buf + n, cap - n, "\"tags\":[");
  for (int t = 0, first = 1; t < NTAGS; t++) {
    if (!(l->tag_mask & (1u << t))) continue;
    const char *q = t == 5 ? "\"\\\"q\\\"\"" : NULL; /* a tag with quotes, escaped */
    if (q)
      n += (size_t)snprintf(buf + n, cap - n, "%s%s", first ? "" : ",", q);
    else
      n += (size_t)snprintf(buf + n, cap - n, "%s\"%s\"", first ? "" : ",", tags[t]);
    /* a repeated element is one term */
    if (t == 0) n += (size_t)snprintf(buf + n, cap - n, ",\"%s\"", tags[0]);
    first = 0;
  }
  n += (size_t)snprintf(buf + n, cap - n, "]");
  /* Ages written as 7 or 7.0 are one term. */
  if (l->age >= 0)
    n += (size_t)snprintf(buf + n, cap - n, ",\"age\":%d%s", l->age, l->age % 3 == 1 ? ".0" : "");
  snprintf(buf + n, cap - n, "}");
}

typedef struct keyset {
  size_t n;
  int k[NKEYS];
} keyset_t;

static int collect(void *arg, const void *key, size_t len) {
  keyset_t *ks = arg;
  char buf[16];
  assert_true(len > 1 && len < sizeof buf);
  memcpy(buf, key, len);
  buf[len] = 0;
  assert_true(ks->n < NKEYS);
  ks->k[ks->n++] = atoi(buf + 1);
  return 0;
}

static void key_name(int i, char *buf, size_t cap) {
  snprintf(buf, cap, "k%03d", i);
}

/* Does the oracle's l hold term number `term` of attribute attr? */
static int holds(const live_t *l, int attr, int term) {
  if (!l->present) return 0;
  if (attr == 0) return l->city == term;
  if (attr == 1) return (l->tag_mask >> term) & 1;
  return l->age == term;
}

/* Every (attribute, term) lookup equals the oracle; returns the keys found in all. */
static size_t check_all(bfh_db *db, const live_t *live) {
  standalone_t *sa = bfh_internal_standalone(db);
  assert_non_null(sa);
  const int nterms[3] = {NCITIES, NTAGS, NAGES};
  size_t total = 0;
  for (int a = 0; a < 3; a++) {
    for (int t = 0; t < nterms[a]; t++) {
      uint8_t ib[ATTR_INT_TERM_BYTES];
      const void *term = ib;
      size_t len = sizeof ib;
      if (a == 2)
        attr_int_term(t, ib);
      else
        term = a == 0 ? cities[t] : tags[t], len = strlen(term);
      keyset_t got = {0};
      err_t err;
      err_clear(&err);
      int rc = standalone_lookup_term(sa, (size_t)a, term, len, collect, &got, NULL, &err);
      if (rc != BFH_OK) fail_msg("lookup %d/%d: %d %s", a, t, rc, err.msg);
      size_t want = 0, j = 0;
      for (int k = 0; k < NKEYS; k++) {
        if (!holds(&live[k], a, t)) continue;
        want++;
        if (j >= got.n || got.k[j] != k)
          fail_msg("attribute %d term %d: key %d missing (or out of order) at %zu", a, t, k, j);
        j++;
      }
      if (got.n != want)
        fail_msg("attribute %d term %d: %zu keys found, the oracle holds %zu", a, t, got.n, want);
      total += got.n;
    }
  }
  return total;
}

static void run_ops(bfh_db *db, rng_t *r, live_t *live, int ops) {
  char key[16], val[256];
  for (int i = 0; i < ops; i++) {
    int k = (int)rng_below(r, NKEYS);
    key_name(k, key, sizeof key);
    int rc;
    if (rng_below(r, 10) == 0) {
      rc = bfh_delete(db, key, strlen(key));
      live[k].present = 0;
    } else {
      make_value(r, &live[k], val, sizeof val);
      rc = bfh_put(db, key, strlen(key), val, strlen(val));
    }
    if (rc != BFH_OK) fail_msg("write %d: %d %s", i, rc, bfh_last_error(db));
  }
}

static void test_standalone_attrs_oracle(void **state) {
  const char *dir = ((db_fixture_t *)*state)->dir;
  bfh_options o;
  attr_options(&o);
  bfh_db *db = open_or_fail(dir, &o);
  const char *name, *extractor;
  for (size_t i = 0; i < 3; i++) { /* the lookup's attr is the declaration's position */
    assert_int_equal(bfh_attribute_stats(db, i, &name, &extractor, NULL), BFH_OK);
    assert_string_equal(name, attrs[i].name);
  }
  live_t *live = calloc(NKEYS, sizeof *live);
  assert_non_null(live);
  rng_t r;
  rng_init(&r, 47);
  run_ops(db, &r, live, 6000);
  size_t found = check_all(db, live);
  assert_true(found > NKEYS); /* bound: ~270 live keys, each with a city, tags or an age */
  assert_int_equal(bfh_close(db), BFH_OK);

  o.attribute_count = 0; /* the stored declarations rule */
  o.attributes = NULL;
  db = open_or_fail(dir, &o);
  assert_int_equal(check_all(db, live), found);
  run_ops(db, &r, live, 2000);
  check_all(db, live);
  /* No whole-value entries: a whole-value search by the index is refused, not empty. */
  bfh_search_stats st;
  assert_int_equal(bfh_search(db, "x", 1, BFH_SEARCH_STANDALONE, NULL, NULL, &st), BFH_E_INVALID);
  assert_int_equal(bfh_close(db), BFH_OK);
  char rec[4400];
  snprintf(rec, sizeof rec, "%s/bfh-standalone/ATTRIBUTES", dir);
  assert_true(file_exists(rec));
  free(live);
}

/* Predicates whose leaves are many runs of postings (IN lists of up to twelve terms, ranges,
   AND and OR) by STANDALONE find each key the oracle holds, once. */
static int many_ages_and_tags(const live_t *l) {
  return l->present && l->age >= 0 && (l->tag_mask & 0xd) != 0; /* red, blue or x */
}

static int any_city_or_middle_age(const live_t *l) {
  return l->present && (l->city >= 0 || (l->age >= 3 && l->age <= 7));
}

static int tag_or_old_in_two_cities(const live_t *l) {
  return l->present && ((l->tag_mask & 0x3) != 0 || l->age > 8) && (l->city == 0 || l->city == 4);
}

static void test_standalone_attrs_predicates_of_many_runs(void **state) {
  const char *dir = ((db_fixture_t *)*state)->dir;
  bfh_options o;
  attr_options(&o);
  bfh_db *db = open_or_fail(dir, &o);
  live_t *live = calloc(NKEYS, sizeof *live);
  assert_non_null(live);
  rng_t r;
  rng_init(&r, 4711);
  run_ops(db, &r, live, 4000);
  static const struct {
    const char *where;
    int (*holds)(const live_t *);
  } preds[] = {
      {"age IN (0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11) AND tags IN ('red', 'blue', 'x')",
       many_ages_and_tags},
      {"city IN ('Oslo', 'Lima', 'Pune', 'Kyiv', 'Rome', 'Cusco', '') OR age BETWEEN 3 AND 7",
       any_city_or_middle_age},
      {"(tags = 'red' OR tags = 'green' OR age > 8) AND city IN ('Oslo', 'Rome')",
       tag_or_old_in_two_cities},
  };
  for (size_t p = 0; p < sizeof preds / sizeof preds[0]; p++) {
    keyset_t got = {0};
    bfh_search_stats st;
    int rc = bfh_query(db, preds[p].where, BFH_SEARCH_STANDALONE, 0, collect, &got, &st);
    if (rc != BFH_OK) fail_msg("%s: %d %s", preds[p].where, rc, bfh_last_error(db));
    uint8_t seen[NKEYS] = {0};
    size_t want = 0;
    for (size_t i = 0; i < got.n; i++) {
      if (seen[got.k[i]]) fail_msg("%s: key %d reported twice", preds[p].where, got.k[i]);
      seen[got.k[i]] = 1;
      if (!preds[p].holds(&live[got.k[i]]))
        fail_msg("%s: key %d does not hold", preds[p].where, got.k[i]);
    }
    for (int k = 0; k < NKEYS; k++)
      if (preds[p].holds(&live[k])) {
        want++;
        if (!seen[k]) fail_msg("%s: key %d missing", preds[p].where, k);
      }
    assert_int_equal(got.n, want);
    assert_true(want > 10); /* bound: each predicate holds for about a quarter or more of ~270 */
  }
  assert_int_equal(bfh_close(db), BFH_OK);
  free(live);
}

/* A database whose only attribute is the whole value keeps the untagged entries alone, and no
   ATTRIBUTES record: the directory of an index before attributes existed. */
static void test_standalone_attrs_whole_value_format(void **state) {
  const char *dir = ((db_fixture_t *)*state)->dir;
  static const bfh_attribute whole[1] = {{"v", "value"}};
  bfh_options o;
  attr_options(&o);
  o.attributes = whole;
  o.attribute_count = 1;
  bfh_db *db = open_or_fail(dir, &o);
  assert_int_equal(bfh_put(db, "a", 1, "{\"city\":\"Oslo\"}", 15), BFH_OK);
  standalone_t *sa = bfh_internal_standalone(db);
  keyset_t got = {0};
  err_t err;
  err_clear(&err);
  assert_int_equal(
      standalone_lookup_term(sa, 0, "{\"city\":\"Oslo\"}", 15, NULL, NULL, &got.n, &err), BFH_OK);
  assert_int_equal(got.n, 1); /* one entry read: the whole value's */
  assert_int_equal(standalone_lookup_term(sa, 1, "x", 1, NULL, NULL, NULL, &err), BFH_E_INVALID);
  bfh_search_stats st;
  assert_int_equal(
      bfh_search(db, "{\"city\":\"Oslo\"}", 15, BFH_SEARCH_STANDALONE, NULL, NULL, &st), BFH_OK);
  assert_int_equal(st.results, 1);
  assert_int_equal(bfh_close(db), BFH_OK);
  char rec[4400];
  snprintf(rec, sizeof rec, "%s/bfh-standalone/ATTRIBUTES", dir);
  assert_false(file_exists(rec));
}

/* bfh_index_add on a database with a stand-alone index: the next open finds the index built
   for two attributes (its ATTRIBUTES record), builds it again, and every lookup of all three
   equals the oracle. */
static void test_standalone_attrs_rebuilt_after_index_add(void **state) {
  const char *dir = ((db_fixture_t *)*state)->dir;
  bfh_options o;
  attr_options(&o);
  o.attribute_count = 2;
  bfh_db *db = open_or_fail(dir, &o);
  live_t *live = calloc(NKEYS, sizeof *live);
  assert_non_null(live);
  rng_t r;
  rng_init(&r, 4701);
  run_ops(db, &r, live, 3000);
  assert_int_equal(bfh_close(db), BFH_OK);
  o.attributes = NULL;
  o.attribute_count = 0;
  bfh_index_report rep;
  if (bfh_index_add(dir, &o, &attrs[2], NULL, NULL, &rep) != BFH_OK)
    fail_msg("bfh_index_add: %s", bfh_last_error(NULL));
  db = open_or_fail(dir, &o);
  bfh_db_stats st;
  assert_int_equal(bfh_stats(db, &st), BFH_OK);
  assert_int_equal(st.attributes, 3);
  check_all(db, live);
  run_ops(db, &r, live, 1000);
  check_all(db, live);
  assert_int_equal(bfh_close(db), BFH_OK);
  free(live);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_standalone_attrs_oracle, setup, db_fixture_teardown),
      cmocka_unit_test_setup_teardown(test_standalone_attrs_predicates_of_many_runs, setup,
                                      db_fixture_teardown),
      cmocka_unit_test_setup_teardown(test_standalone_attrs_whole_value_format, setup,
                                      db_fixture_teardown),
      cmocka_unit_test_setup_teardown(test_standalone_attrs_rebuilt_after_index_add, setup,
                                      db_fixture_teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

/* The Cuckoo Index over declared attributes (index/cuckoo_index.h), on the own engine with
 * real files: the index holds each table's item hashes (one per (attribute, term) of each
 * value, query/terms.h), so a lookup of one (attribute, term)'s item hash names every table
 * that holds a value with that term: a superset, never a false negative.
 *
 * The values come from a universe of NVALUES JSON objects (fixed seed), each with a city, a
 * list of tags and an :int age; random puts, overwrites and deletes over NKEYS keys, flushed
 * into many tables. The oracle of "table T holds (attribute, term)": T holds, in any entry, a
 * value of the universe with that term (the engine's scan_table of the whole value, which
 * reads the table itself, not its filters). Checked after the writes and after a reopen (the
 * index is built again then), and the false-positive tables are bounded.
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
#include "lsm_hooks/engines/lsm/engine_lsm.h"
#include "query/attr.h"
#include "tests/test_util.h"
#include "tests/api/db_fixture.h"
#include "util/random.h"

#define NKEYS 1500
#define NVALUES 60
#define NCITIES 5
#define NTAGS 5
#define NAGES 8

static const char *const cities[NCITIES] = {"Oslo", "Lima", "Pune", "Kyiv", "Rome"};
static const char *const tags[NTAGS] = {"red", "green", "blue", "x", "y z"};

static const bfh_attribute attrs[4] = {
    {"whole", "value"}, {"city", "json:city"}, {"tags", "json:tags"}, {"age", "json:age:int"}};

typedef struct uvalue {
  char text[160];
  int city; /* -1: no city */
  unsigned tag_mask;
  int age; /* -1: no age */
} uvalue_t;

static int setup(void **state) {
  return db_fixture_setup(state, "cuckoo_attrs_test");
}

static void make_universe(rng_t *r, uvalue_t *u) {
  for (int i = 0; i < NVALUES; i++) {
    uvalue_t *v = &u[i];
    v->city = (int)rng_below(r, NCITIES + 1) - 1;
    v->tag_mask = (unsigned)rng_below(r, 1u << NTAGS);
    v->age = (int)rng_below(r, NAGES + 1) - 1;
    size_t n = (size_t)snprintf(v->text, sizeof v->text, "{\"id\":%d", i);
    if (v->city >= 0)
      n += (size_t)snprintf(v->text + n, sizeof v->text - n, ",\"city\":\"%s\"", cities[v->city]);
    n += (size_t)snprintf(v->text + n, sizeof v->text - n, ",\"tags\":[");
    for (int t = 0, first = 1; t < NTAGS; t++)
      if (v->tag_mask & (1u << t)) {
        n += (size_t)snprintf(v->text + n, sizeof v->text - n, "%s\"%s\"", first ? "" : ",",
                              tags[t]);
        first = 0;
      }
    n += (size_t)snprintf(v->text + n, sizeof v->text - n, "]");
    if (v->age >= 0) n += (size_t)snprintf(v->text + n, sizeof v->text - n, ",\"age\":%d", v->age);
    snprintf(v->text + n, sizeof v->text - n, "}");
  }
}

static int has_term(const uvalue_t *v, int attr, int term) {
  if (attr == 1) return v->city == term;
  if (attr == 2) return (v->tag_mask >> term) & 1;
  return v->age == term;
}

static int found_one(void *arg, const void *key, size_t len, uint64_t seq) {
  (void)key, (void)len, (void)seq;
  *(int *)arg = 1;
  return 1;
}

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return (x > y) - (x < y);
}

/* Every (attribute, term) of the universe: the Cuckoo Index names every table holding it.
   Returns the tables named that hold none of its values (false positives). */
static size_t check_superset(bfh_db *db, const uvalue_t *u, size_t *pairs) {
  /* The engine's compactions end first (bounded wait), so that no table appears after the
     CUCKOO search below has brought the index to the live tables. */
  err_t idle_err;
  err_clear(&idle_err);
  assert_int_equal(engine_lsm_wait_idle(bfh_internal_engine(db), &idle_err), BFH_OK);
  bfh_search_stats st;
  assert_int_equal(bfh_search(db, u[0].text, strlen(u[0].text), BFH_SEARCH_CUCKOO, NULL, NULL, &st),
                   BFH_OK);
  engine_t *e = bfh_internal_engine(db);
  cuckoo_index_t *ci = bfh_internal_cuckoo(db);
  terms_t *t = bfh_internal_terms(db);
  assert_non_null(ci);
  assert_non_null(t);
  uint64_t seed = cuckoo_index_seed(ci);
  engine_view_t *view;
  err_t err;
  err_clear(&err);
  assert_int_equal(engine_view_acquire(e, &view, &err), BFH_OK);
  const engine_table_t *tables;
  size_t nt = engine_view_tables(e, view, &tables);
  if (nt < 3) fail_msg("%zu tables; the test needs several", nt);
  /* holds[i][v]: table i holds universe value v in some entry. */
  uint8_t(*holds)[NVALUES] = calloc(nt, sizeof *holds);
  assert_non_null(holds);
  for (size_t i = 0; i < nt; i++) {
    assert_true(cuckoo_index_contains(ci, tables[i].number));
    for (int v = 0; v < NVALUES; v++) {
      int any = 0;
      engine_value_test_t test = engine_value_test_equal(u[v].text, strlen(u[v].text));
      assert_int_equal(
          e->ops->scan_table(e, view, tables[i].number, &test, found_one, &any, NULL, &err),
          BFH_OK);
      holds[i][v] = (uint8_t)any;
    }
  }
  const int nterms[4] = {0, NCITIES, NTAGS, NAGES};
  size_t false_pos = 0;
  *pairs = 0;
  for (int a = 1; a < 4; a++) {
    assert_string_equal(terms_spec(t, (size_t)a)->name, attrs[a].name);
    for (int term = 0; term < nterms[a]; term++) {
      uint8_t ib[ATTR_INT_TERM_BYTES];
      const void *tb = ib;
      size_t len = sizeof ib;
      if (a == 3)
        attr_int_term(term, ib);
      else
        tb = a == 1 ? cities[term] : tags[term], len = strlen(tb);
      u64vec_t hit;
      u64vec_init(&hit);
      uint64_t h = terms_hash_term(t, (size_t)a, tb, len, seed);
      assert_int_equal(cuckoo_index_lookup(ci, cuckoo_index_key(h), &hit, NULL), BFH_OK);
      qsort(hit.v, hit.n, sizeof *hit.v, cmp_u64);
      for (size_t i = 0; i < nt; i++) {
        int want = 0;
        for (int v = 0; v < NVALUES && !want; v++) want = holds[i][v] && has_term(&u[v], a, term);
        uint64_t num = tables[i].number;
        int named = bsearch(&num, hit.v, hit.n, sizeof *hit.v, cmp_u64) != NULL;
        if (want && !named)
          fail_msg("attribute %s term %d: table %llu holds it, the cuckoo index does not name it",
                   attrs[a].name, term, (unsigned long long)num);
        false_pos += named && !want;
        *pairs += 1;
      }
      u64vec_release(&hit);
    }
  }
  engine_view_release(e, view);
  free(holds);
  return false_pos;
}

static void test_cuckoo_attrs_superset(void **state) {
  const char *dir = ((db_fixture_t *)*state)->dir;
  bfh_options o;
  bfh_options_init(&o);
  o.memtable_bytes = 64 << 10;
  o.table_bytes = 4 << 10;
  o.value_filter_bits = 4096;
  o.cuckoo_index = 1;
  o.attributes = attrs;
  o.attribute_count = 4;
  bfh_db *db = NULL;
  assert_int_equal(bfh_open(dir, &o, &db), BFH_OK);
  uvalue_t *u = calloc(NVALUES, sizeof *u);
  assert_non_null(u);
  rng_t r;
  rng_init(&r, 4747);
  make_universe(&r, u);
  char key[16];
  for (int round = 0; round < 3; round++) {
    for (int i = 0; i < NKEYS; i++) {
      snprintf(key, sizeof key, "k%04d", (int)rng_below(&r, NKEYS));
      const char *v = u[rng_below(&r, NVALUES)].text;
      int rc = rng_below(&r, 8) == 0 ? bfh_delete(db, key, strlen(key))
                                     : bfh_put(db, key, strlen(key), v, strlen(v));
      if (rc != BFH_OK) fail_msg("write: %d %s", rc, bfh_last_error(db));
    }
    assert_int_equal(bfh_flush(db), BFH_OK);
  }
  size_t pairs, fp = check_superset(db, u, &pairs);
  /* Bound: a table is named falsely only by a 16-bit fingerprint and a bucket pair that an
     item of another term shares; with ~60 items a table, 5% of the pairs is far above that. */
  assert_true(fp * 20 <= pairs);
  assert_int_equal(bfh_close(db), BFH_OK);
  o.attributes = NULL;
  o.attribute_count = 0;
  assert_int_equal(bfh_open(dir, &o, &db), BFH_OK); /* the index is built again */
  fp = check_superset(db, u, &pairs);
  assert_true(fp * 20 <= pairs);
  assert_int_equal(bfh_close(db), BFH_OK);
  free(u);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_cuckoo_attrs_superset, setup, db_fixture_teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

/* Declared attributes on the own engine (issue 47; doc/query.md "Terms"): each (attribute,
 * term) of every value is an item of the filters of the table that holds it. A database is
 * created with three attributes (two JSON, one CSV), loaded with overwrites and deletes into
 * several tables, and then, for every entry of every live table and every term of its value,
 * the table's leaf filter (in its file) and the value index say maybe for the term's hash: no
 * false negative at the filters. The declarations are stored (BFH-ATTRS) and taken by an open
 * without any, read-only too; other declarations, or a bad one, are refused naming the
 * difference. The LevelDB and RocksDB engines build the same items from their tables' files.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "bfh.h"
#include "api/testbed.h"
#include "filters/value_filter.h"
#include "index/index_sync.h"
#include "index/value_index.h"
#include "lsm/db.h"
#include "lsm_hooks/engines/engine.h"
#include "lsm_hooks/engines/lsm/engine_lsm.h"
#include "lsm_hooks/engines/lsm/value_hook.h"
#include "query/terms.h"
#include "util/random.h"
#include "util/vec.h"
#include "tests/test_util.h"
#include "tests/api/db_fixture.h"
#include "tests/env_fault.h"

#define NKEYS 1500
#define NOPS 6000
#define FLUSH_EVERY 1000
#define NATTRS 3
#define RNG_SEED 0x617474727301ull

static const bfh_attribute ATTRS[NATTRS] = {
    {"city", "json:address.city"}, {"tags", "json:tags"}, {"region", "csv:2"}};

static int setup(void **state) {
  return db_fixture_setup(state, "attributes_test");
}

static void options(bfh_options *o, const bfh_attribute *attrs, size_t n) {
  bfh_options_init(o);
  o->memtable_bytes = 64 << 10;
  o->table_bytes = 16 << 10;
  o->value_filter_bits = 8192;
  o->attributes = attrs;
  o->attribute_count = n;
}

/* The i-th value of the workload: JSON with or without a city and tags, a CSV row, or
   neither (r picks the shape). */
static size_t make_value(rng_t *r, char *v, size_t cap) {
  uint64_t x = rng_next(r);
  unsigned shape = (unsigned)(x % 10), a = (unsigned)(x >> 8) % 40, b = (unsigned)(x >> 20) % 25;
  switch (shape) {
    case 0:
    case 1:
    case 2:
      return (size_t)snprintf(
          v, cap, "{\"id\":%u,\"address\":{\"city\":\"C%u\"},\"tags\":[\"t%u\",\"t%u\"]}", a * b, a,
          b, (b + 1) % 25);
    case 3:
      return (size_t)snprintf(v, cap, "{\"address\":{\"city\":\"C%u\"}}", a); /* no tags */
    case 4:
      return (size_t)snprintf(v, cap, "{\"tags\":\"t%u\",\"address\":{}}", b); /* no city */
    case 5:
    case 6:
    case 7:
      return (size_t)snprintf(v, cap, "k%u,R%u,%u", a, b, a + b);
    case 8:
      return (size_t)snprintf(v, cap, "{\"address\":{\"city\":\"C%u\"", a); /* broken JSON */
    default:
      return (size_t)snprintf(v, cap, "plain %u", a); /* one CSV field only */
  }
}

/* The expected item hashes of a value, made here from the extractors and terms_attr_seed
   (not through terms_hash_value), and how many attributes give it no term. */
typedef struct expected {
  uint64_t h[64];
  size_t n;
  uint64_t seed; /* of the attribute being extracted */
} expected_t;

static int on_term(void *arg, const void *term, size_t len) {
  expected_t *e = arg;
  assert_true(e->n < 64);
  e->h[e->n++] = bfh_value_hash(term, len, e->seed);
  return 0;
}

static unsigned expected_items(const attr_spec_t *specs, size_t n, uint64_t seed, const void *val,
                               size_t len, expected_t *e) {
  unsigned missing = 0;
  e->n = 0;
  for (size_t i = 0; i < n; i++) {
    e->seed = terms_attr_seed(&specs[i], seed);
    int got = attr_extract(&specs[i], val, len, on_term, e);
    assert_true(got >= 0);
    missing += got == 0;
  }
  return missing;
}

static attr_spec_t *parse_all(const bfh_attribute *attrs, size_t n) {
  attr_spec_t *specs = calloc(n, sizeof *specs);
  assert_non_null(specs);
  for (size_t i = 0; i < n; i++) {
    char decl[256];
    snprintf(decl, sizeof decl, "%s=%s", attrs[i].name, attrs[i].extractor);
    err_t err;
    if (attr_spec_parse(decl, &specs[i], &err) != 0) fail_msg("%s", err.msg);
  }
  return specs;
}

/* The workload's model: each key's newest value (NULL: absent or deleted). */
typedef struct model {
  char *val[NKEYS];
  size_t len[NKEYS];
  uint64_t missing; /* (value, attribute) pairs put without a term */
} model_t;

static void key_of(uint32_t i, char *k) {
  sprintf(k, "key%05u", i);
}

static void load(bfh_db *db, model_t *m, rng_t *r, const attr_spec_t *specs, int ops) {
  for (int op = 0; op < ops; op++) {
    uint32_t i = (uint32_t)(rng_next(r) % NKEYS);
    char k[16];
    key_of(i, k);
    free(m->val[i]);
    m->val[i] = NULL;
    if (rng_next(r) % 100 < 15) {
      assert_int_equal(bfh_delete(db, k, strlen(k)), BFH_OK);
    } else {
      char v[256];
      size_t len = make_value(r, v, sizeof v);
      assert_int_equal(bfh_put(db, k, strlen(k), v, len), BFH_OK);
      m->val[i] = malloc(len + 1);
      memcpy(m->val[i], v, len + 1);
      m->len[i] = len;
      expected_t e;
      m->missing += expected_items(specs, NATTRS, BFH_DEFAULT_HASH_SEED, v, len, &e);
    }
    if ((op + 1) % FLUSH_EVERY == 0) assert_int_equal(bfh_flush(db), BFH_OK);
  }
  assert_int_equal(bfh_flush(db), BFH_OK);
}

/* What the check below saw: each key's newest entry over the live tables. */
typedef struct seen {
  uint64_t seq[NKEYS];
  int live[NKEYS]; /* the newest entry is a value */
  char *val[NKEYS];
  size_t len[NKEYS];
} seen_t;

typedef struct check {
  value_filter_t *leaf; /* the table's, read from its file */
  value_index_t *vi;
  uint64_t number;
  const attr_spec_t *specs;
  seen_t *seen;
  uint64_t items; /* items checked */
} check_t;

static int candidate(value_index_t *vi, uint64_t hash, uint64_t number) {
  const value_index_params_t *p = value_index_params(vi);
  probe_t pr;
  probe_init(&pr, hash, p->m, p->k);
  u64vec_t out;
  u64vec_init(&out);
  probe_stats_t st = {0};
  err_t err;
  assert_int_equal(value_index_candidates(vi, value_index_by_leaves, &pr, &out, &st, &err), 0);
  int found = 0;
  for (size_t i = 0; i < out.n; i++) found |= out.v[i] == number;
  u64vec_release(&out);
  return found;
}

static int visit_entry(void *arg, const void *key, size_t klen, const void *val, size_t vlen,
                       uint64_t seq, int type) {
  check_t *c = arg;
  unsigned i;
  assert_true(klen == 8 && sscanf((const char *)key, "key%5u", &i) == 1 && i < NKEYS);
  seen_t *s = c->seen;
  if (seq > s->seq[i]) {
    s->seq[i] = seq;
    s->live[i] = type == LSM_TYPE_VALUE;
    free(s->val[i]);
    s->val[i] = NULL;
    if (s->live[i]) {
      s->val[i] = malloc(vlen + 1);
      memcpy(s->val[i], val, vlen);
      s->len[i] = vlen;
    }
  }
  if (type != LSM_TYPE_VALUE) return 0;
  expected_t e;
  (void)expected_items(c->specs, NATTRS, BFH_DEFAULT_HASH_SEED, val, vlen, &e);
  for (size_t j = 0; j < e.n; j++) {
    probe_t pr;
    probe_init(&pr, e.h[j], c->leaf->m, c->leaf->k);
    if (!value_filter_may_contain_probe(c->leaf, &pr))
      fail_msg("table %llu: the leaf says no for item %zu of '%.*s'", (unsigned long long)c->number,
               j, (int)vlen, (const char *)val);
    if (!candidate(c->vi, e.h[j], c->number))
      fail_msg("table %llu: the value index does not select it for item %zu of '%.*s'",
               (unsigned long long)c->number, j, (int)vlen, (const char *)val);
    c->items++;
  }
  return 0;
}

/* Every item of every value entry of every live table is in the table's leaf and selects the
   table in the value index; every key's newest entry there is the model's. Returns the items
   checked. */
static uint64_t check_tables(bfh_db *db, const model_t *m, const attr_spec_t *specs) {
  engine_t *e = bfh_internal_engine(db);
  err_t err;
  assert_int_equal(engine_lsm_wait_idle(e, &err), BFH_OK);
  (void)index_sync_loader_wait(bfh_internal_sync(db), NULL, NULL);
  value_index_t *vi = bfh_internal_index(db);
  lsm_snapshot_t *snap = lsm_snapshot_acquire(engine_lsm_db(e));
  assert_non_null(snap);
  engine_view_t *view;
  assert_int_equal(engine_view_acquire(e, &view, &err), BFH_OK);
  const lsm_table_info_t *tables;
  size_t n = lsm_snapshot_tables(snap, &tables);
  assert_true(n >= 3); /* several tables */
  seen_t *seen = calloc(1, sizeof *seen);
  uint64_t items = 0;
  size_t leaf_bytes = value_filter_serialized_size(value_index_params(vi)->m);
  uint8_t *buf = malloc(leaf_bytes);
  for (size_t t = 0; t < n; t++) {
    uint64_t number = tables[t].number;
    assert_int_equal(
        engine_read_meta(e, view, number, VALUE_HOOK_META_NAME, 0, leaf_bytes, buf, &err), BFH_OK);
    check_t c = {NULL, vi, number, specs, seen, 0};
    assert_int_equal(value_filter_deserialize(buf, leaf_bytes, &c.leaf, &err), BFH_OK);
    assert_int_equal(lsm_snapshot_scan_table(snap, number, visit_entry, &c, NULL, &err), BFH_OK);
    value_filter_destroy(c.leaf);
    items += c.items;
  }
  free(buf);
  engine_view_release(e, view);
  lsm_snapshot_release(snap);
  for (uint32_t i = 0; i < NKEYS; i++) {
    int want = m->val[i] != NULL;
    if (want != seen->live[i])
      fail_msg("key %u: live %d in the model, %d in the tables", i, want, seen->live[i]);
    if (want) {
      assert_int_equal(seen->len[i], m->len[i]);
      assert_memory_equal(seen->val[i], m->val[i], m->len[i]);
    }
    free(seen->val[i]);
  }
  free(seen);
  return items;
}

static void model_free(model_t *m) {
  for (int i = 0; i < NKEYS; i++) free(m->val[i]);
}

static int count(void *arg, const void *key, size_t len) {
  (void)key, (void)len;
  (*(uint64_t *)arg)++;
  return 0;
}

/* ---- Every engine: through the engine's own scans and the value index --------------- */

typedef struct holds_key {
  const char *key;
  int found;
} holds_key_t;

static int match_key(void *arg, const void *key, size_t len, uint64_t seq) {
  (void)seq;
  holds_key_t *h = arg;
  if (len == strlen(h->key) && memcmp(key, h->key, len) == 0) h->found = 1;
  return 0;
}

/* For every live key of the model and every item of its value, each live table that holds the
   key with that value is selected by the value index (its leaf says maybe). Returns the items
   checked. Every write must be in a table (flushed). */
static uint64_t check_by_engine(bfh_db *db, const model_t *m, const attr_spec_t *specs) {
  engine_t *e = bfh_internal_engine(db);
  (void)index_sync_loader_wait(bfh_internal_sync(db), NULL, NULL);
  value_index_t *vi = bfh_internal_index(db);
  err_t err;
  engine_view_t *view;
  assert_int_equal(engine_view_acquire(e, &view, &err), BFH_OK);
  const engine_table_t *tables;
  size_t n = engine_view_tables(e, view, &tables);
  assert_true(n >= 2);
  uint64_t items = 0;
  for (uint32_t i = 0; i < NKEYS; i++) {
    if (!m->val[i]) continue;
    char k[16];
    key_of(i, k);
    expected_t ex;
    (void)expected_items(specs, NATTRS, BFH_DEFAULT_HASH_SEED, m->val[i], m->len[i], &ex);
    int held = 0;
    for (size_t t = 0; t < n; t++) {
      holds_key_t h = {k, 0};
      engine_scan_stats_t ss = {0, 0};
      engine_value_test_t test = engine_value_test_equal(m->val[i], m->len[i]);
      assert_int_equal(
          engine_scan_table(e, view, tables[t].number, &test, match_key, &h, &ss, &err), BFH_OK);
      if (!h.found) continue;
      held = 1;
      for (size_t j = 0; j < ex.n; j++, items++)
        if (!candidate(vi, ex.h[j], tables[t].number))
          fail_msg("table %llu holds %s = '%s' but its leaf says no for item %zu",
                   (unsigned long long)tables[t].number, k, m->val[i], j);
    }
    if (!held) fail_msg("key %s: in no live table", k);
  }
  engine_view_release(e, view);
  return items;
}

/* Created with three attributes, loaded with overwrites and deletes: every item is in its
   table's filters; the puts without a term are counted; an open without declarations takes
   the stored ones and keeps hashing them. */
static void test_attributes_every_item_in_its_tables_filters(void **state) {
  db_fixture_t *f = *state;
  attr_spec_t *specs = parse_all(ATTRS, NATTRS);
  bfh_options o;
  options(&o, ATTRS, NATTRS);
  assert_int_equal(bfh_open(f->dir, &o, &f->db), BFH_OK);
  model_t *m = calloc(1, sizeof *m);
  rng_t r;
  rng_init(&r, RNG_SEED);
  load(f->db, m, &r, specs, NOPS);
  uint64_t items = check_tables(f->db, m, specs);
  assert_true(items > NKEYS); /* most values have two or three items */
  bfh_db_stats st;
  assert_int_equal(bfh_stats(f->db, &st), BFH_OK);
  assert_int_equal(st.attributes, NATTRS);
  assert_true(m->missing > 0);
  assert_int_equal(st.attribute_values_without_term, m->missing);
  uint64_t sum = 0;
  for (size_t i = 0; i < NATTRS; i++) {
    const char *name, *extractor;
    uint64_t without;
    assert_int_equal(bfh_attribute_stats(f->db, i, &name, &extractor, &without), BFH_OK);
    assert_string_equal(name, ATTRS[i].name);
    assert_string_equal(extractor, ATTRS[i].extractor);
    assert_true(without > 0);
    sum += without;
  }
  assert_int_equal(sum, m->missing);
  assert_int_equal(bfh_attribute_stats(f->db, NATTRS, NULL, NULL, NULL), BFH_NOT_FOUND);
  assert_int_equal(bfh_close(f->db), BFH_OK);
  f->db = NULL;

  /* Read-only (the own engine's read-only row reads the database's own filters and
     BFH-ATTRS): the same items. */
  options(&o, NULL, 0);
  o.read_only = 1;
  assert_int_equal(bfh_open(f->dir, &o, &f->db), BFH_OK);
  assert_int_equal(bfh_stats(f->db, &st), BFH_OK);
  assert_int_equal(st.attributes, NATTRS);
  assert_true(check_by_engine(f->db, m, specs) > NKEYS);
  assert_int_equal(bfh_close(f->db), BFH_OK);
  f->db = NULL;
  const bfh_attribute one[1] = {{"city", "json:city"}};
  options(&o, one, 1);
  o.read_only = 1;
  assert_int_equal(bfh_open(f->dir, &o, &f->db), BFH_E_INVALID);

  /* Reopened without declarations: the stored ones, in effect for the new tables too. */
  options(&o, NULL, 0);
  assert_int_equal(bfh_open(f->dir, &o, &f->db), BFH_OK);
  assert_int_equal(bfh_stats(f->db, &st), BFH_OK);
  assert_int_equal(st.attributes, NATTRS);
  const char *name;
  assert_int_equal(bfh_attribute_stats(f->db, 1, &name, NULL, NULL), BFH_OK);
  assert_string_equal(name, "tags");
  m->missing = 0;
  load(f->db, m, &r, specs, NOPS / 2);
  assert_true(check_tables(f->db, m, specs) > NKEYS);
  assert_int_equal(bfh_stats(f->db, &st), BFH_OK);
  assert_int_equal(st.attribute_values_without_term, m->missing);

  /* A whole value: this database indexes attributes only, so AUTO reads every table (the
     answer is SCAN's) and the filter methods are refused rather than miss keys. */
  uint32_t k = 0;
  while (!m->val[k]) k++;
  uint64_t scan = 0, autos = 0;
  assert_int_equal(bfh_search(f->db, m->val[k], m->len[k], BFH_SEARCH_SCAN, count, &scan, NULL),
                   BFH_OK);
  bfh_search_stats ss;
  assert_int_equal(bfh_search(f->db, m->val[k], m->len[k], BFH_SEARCH_AUTO, count, &autos, &ss),
                   BFH_OK);
  assert_true(scan >= 1);
  assert_int_equal(autos, scan);
  assert_int_equal(ss.method_used, BFH_SEARCH_SCAN);
  assert_int_equal(bfh_search(f->db, m->val[k], m->len[k], BFH_SEARCH_LEAVES, count, &autos, NULL),
                   BFH_E_INVALID);
  assert_non_null(strstr(bfh_last_error(f->db), "not whole values"));
  assert_int_equal(bfh_close(f->db), BFH_OK);
  f->db = NULL;

  /* A repair rewrites every table: with the same items (the stored attributes). */
  bfh_repair_report rep;
  assert_int_equal(bfh_repair(f->dir, &o, &rep), BFH_OK);
  assert_true(rep.tables_out >= 1);
  assert_int_equal(bfh_open(f->dir, &o, &f->db), BFH_OK);
  assert_true(check_tables(f->db, m, specs) > NKEYS);
  assert_int_equal(bfh_close(f->db), BFH_OK);
  f->db = NULL;
  model_free(m);
  free(m);
  attr_specs_free(specs, NATTRS);
}

/* The stored declarations rule: the same in another order opens; others, fewer or more are
   refused naming the difference, and so is a bad extractor; nothing is changed by a refusal. */
static void test_attributes_other_declarations_refused(void **state) {
  db_fixture_t *f = *state;
  bfh_options o;
  options(&o, ATTRS, NATTRS);
  assert_int_equal(bfh_open(f->dir, &o, &f->db), BFH_OK);
  assert_int_equal(bfh_put(f->db, "k", 1, "{\"tags\":[\"a\"]}", 14), BFH_OK);
  assert_int_equal(bfh_close(f->db), BFH_OK);
  f->db = NULL;

  const bfh_attribute reordered[NATTRS] = {ATTRS[2], ATTRS[0], ATTRS[1]};
  options(&o, reordered, NATTRS);
  assert_int_equal(bfh_open(f->dir, &o, &f->db), BFH_OK);
  assert_int_equal(bfh_close(f->db), BFH_OK);
  f->db = NULL;

  const bfh_attribute changed[NATTRS] = {ATTRS[0], {"tags", "json:labels"}, ATTRS[2]};
  options(&o, changed, NATTRS);
  assert_int_equal(bfh_open(f->dir, &o, &f->db), BFH_E_INVALID);
  assert_non_null(strstr(bfh_last_error(NULL), "tags=json:labels"));
  assert_non_null(strstr(bfh_last_error(NULL), "the database has tags=json:tags"));

  options(&o, ATTRS, 2); /* region left out */
  assert_int_equal(bfh_open(f->dir, &o, &f->db), BFH_E_INVALID);
  assert_non_null(strstr(bfh_last_error(NULL), "region=csv:2"));

  const bfh_attribute more[NATTRS + 1] = {ATTRS[0], ATTRS[1], ATTRS[2], {"v", "value"}};
  options(&o, more, NATTRS + 1);
  assert_int_equal(bfh_open(f->dir, &o, &f->db), BFH_E_INVALID);
  assert_non_null(strstr(bfh_last_error(NULL), "v=value"));

  const bfh_attribute bad[1] = {{"age", "csv:0"}};
  options(&o, bad, 1);
  assert_int_equal(bfh_open(f->dir, &o, &f->db), BFH_E_INVALID);
  assert_non_null(strstr(bfh_last_error(NULL), "'age=csv:0'"));
  const bfh_attribute twice[2] = {ATTRS[0], {"city", "csv:1"}};
  options(&o, twice, 2);
  assert_int_equal(bfh_open(f->dir, &o, &f->db), BFH_E_INVALID);
  assert_non_null(strstr(bfh_last_error(NULL), "'city' is declared twice"));
  o.attributes = NULL;
  assert_int_equal(bfh_open(f->dir, &o, &f->db), BFH_E_INVALID);

  options(&o, NULL, 0);
  assert_int_equal(bfh_open(f->dir, &o, &f->db), BFH_OK);
  void *v;
  size_t vlen;
  assert_int_equal(bfh_get(f->db, "k", 1, &v, &vlen), BFH_OK);
  bfh_free(v);
  bfh_db_stats st;
  assert_int_equal(bfh_stats(f->db, &st), BFH_OK);
  assert_int_equal(st.attributes, NATTRS);
  assert_int_equal(bfh_close(f->db), BFH_OK);
  f->db = NULL;

  /* A database made without declarations takes none later, and stores no BFH-ATTRS. */
  char other[4300], attrs_file[4400];
  snprintf(other, sizeof other, "%s/plain", f->root);
  assert_int_equal(bfh_open(other, &o, &f->db), BFH_OK);
  assert_int_equal(bfh_stats(f->db, &st), BFH_OK);
  assert_int_equal(st.attributes, 0);
  assert_int_equal(st.attribute_values_without_term, 0);
  assert_int_equal(bfh_attribute_stats(f->db, 0, NULL, NULL, NULL), BFH_NOT_FOUND);
  assert_int_equal(bfh_attribute_stats(NULL, 0, NULL, NULL, NULL), BFH_E_INVALID);
  assert_int_equal(bfh_close(f->db), BFH_OK);
  f->db = NULL;
  struct stat sb;
  snprintf(attrs_file, sizeof attrs_file, "%s/BFH-ATTRS", other);
  assert_int_not_equal(stat(attrs_file, &sb), 0);
  options(&o, ATTRS, 1);
  assert_int_equal(bfh_open(other, &o, &f->db), BFH_E_INVALID);
  assert_non_null(strstr(bfh_last_error(NULL), "its attributes: none"));
}

/* A database that declares `value` beside another attribute answers whole-value searches by
   every method, as one without attributes does. */
static void test_attributes_value_keeps_whole_value_search(void **state) {
  db_fixture_t *f = *state;
  const bfh_attribute attrs[2] = {{"city", "json:address.city"}, {"whole", "value"}};
  bfh_options o;
  options(&o, attrs, 2);
  o.index_bits_per_value = 0; /* the paper's layout: LEAVES, HIERARCHY and SLICED proper */
  o.cuckoo_index = 1;
  assert_int_equal(bfh_open(f->dir, &o, &f->db), BFH_OK);
  rng_t r;
  rng_init(&r, RNG_SEED + 1);
  char v[256];
  size_t len = 0;
  for (int i = 0; i < 3000; i++) {
    char k[16];
    key_of((uint32_t)(i % NKEYS), k);
    len = make_value(&r, v, sizeof v);
    assert_int_equal(bfh_put(f->db, k, strlen(k), v, len), BFH_OK);
    if (i % 700 == 699) assert_int_equal(bfh_flush(f->db), BFH_OK);
  }
  /* Every 37th value again, the last ones in the memtable, the others in tables. */
  rng_init(&r, RNG_SEED + 1);
  for (int i = 0; i < 3000; i++) {
    len = make_value(&r, v, sizeof v);
    if (i % 37) continue;
    uint64_t want = 0;
    assert_int_equal(bfh_search(f->db, v, len, BFH_SEARCH_SCAN, count, &want, NULL), BFH_OK);
    for (int m = BFH_SEARCH_LEAVES; m <= BFH_SEARCH_CUCKOO; m++) {
      if (m == BFH_SEARCH_STANDALONE) continue;
      uint64_t got = 0;
      assert_int_equal(bfh_search(f->db, v, len, (bfh_method)m, count, &got, NULL), BFH_OK);
      if (got != want)
        fail_msg("'%s' by %s: %llu keys, scan %llu", v, bfh_method_name((bfh_method)m),
                 (unsigned long long)got, (unsigned long long)want);
    }
  }
}

/* The stock engines build their leaves from the tables' files (and keep them in their filter
   cache files): the same items, read back at a reopen without declarations. */
static void test_attributes_stock_engines(void **state) {
  db_fixture_t *f = *state;
  attr_spec_t *specs = parse_all(ATTRS, NATTRS);
  const bfh_engine engines[2] = {BFH_ENGINE_LEVELDB, BFH_ENGINE_ROCKSDB};
  for (int en = 0; en < 2; en++) {
    char dir[4400];
    snprintf(dir, sizeof dir, "%s/%s", f->root, en ? "rocksdb" : "leveldb");
    bfh_options o;
    options(&o, ATTRS, NATTRS);
    o.engine = engines[en];
    assert_int_equal(bfh_open(dir, &o, &f->db), BFH_OK);
    model_t *m = calloc(1, sizeof *m);
    rng_t r;
    rng_init(&r, RNG_SEED + 2 + (uint64_t)en);
    load(f->db, m, &r, specs, NOPS / 2);
    assert_true(check_by_engine(f->db, m, specs) > NKEYS / 2);
    assert_int_equal(bfh_close(f->db), BFH_OK);
    f->db = NULL;
    options(&o, NULL, 0);
    o.engine = engines[en];
    assert_int_equal(bfh_open(dir, &o, &f->db), BFH_OK); /* from the cache files */
    bfh_db_stats st;
    assert_int_equal(bfh_stats(f->db, &st), BFH_OK);
    assert_int_equal(st.attributes, NATTRS);
    assert_true(check_by_engine(f->db, m, specs) > NKEYS / 2);
    assert_int_equal(bfh_close(f->db), BFH_OK);
    f->db = NULL;
    model_free(m);
    free(m);
  }
  attr_specs_free(specs, NATTRS);
}

/* ---- bfh_index_add and bfh_index_drop ---------------------------------------------------- */

static void count_progress(void *arg, uint64_t done, uint64_t total) {
  uint64_t *last = arg;
  assert_true(done <= total && total > 0);
  last[0]++;
  last[1] = done == total;
}

static size_t stored_attributes(const char *dir) {
  bfh_options o;
  options(&o, NULL, 0);
  bfh_db *db;
  assert_int_equal(bfh_open(dir, &o, &db), BFH_OK);
  bfh_db_stats st;
  assert_int_equal(bfh_stats(db, &st), BFH_OK);
  assert_int_equal(bfh_close(db), BFH_OK);
  return st.attributes;
}

/* Every key of the model reads its value (and no other key is live). */
static void check_keys(const char *dir, const model_t *m) {
  bfh_options o;
  options(&o, NULL, 0);
  bfh_db *db;
  assert_int_equal(bfh_open(dir, &o, &db), BFH_OK);
  for (uint32_t i = 0; i < NKEYS; i++) {
    char k[16];
    key_of(i, k);
    void *v = NULL;
    size_t len = 0;
    int rc = bfh_get(db, k, strlen(k), &v, &len);
    assert_int_equal(rc, m->val[i] ? BFH_OK : BFH_NOT_FOUND);
    if (m->val[i]) {
      assert_int_equal(len, m->len[i]);
      assert_memory_equal(v, m->val[i], len);
    }
    bfh_free(v);
  }
  assert_int_equal(bfh_close(db), BFH_OK);
}

/* A database made with two attributes gets the third: every table of it then holds the
   third's items in its leaf and the value index (check_tables over all three), and so do the
   tables written after; the add is refused for a name declared already and while the database
   is open; drop removes a declaration, never the last one. */
static void test_attributes_index_add_builds_every_table(void **state) {
  db_fixture_t *f = *state;
  attr_spec_t *specs = parse_all(ATTRS, NATTRS);
  bfh_options o;
  options(&o, ATTRS, 2);
  assert_int_equal(bfh_open(f->dir, &o, &f->db), BFH_OK);
  model_t *m = calloc(1, sizeof *m);
  rng_t r;
  rng_init(&r, RNG_SEED + 1);
  load(f->db, m, &r, specs, NOPS);
  assert_int_equal(bfh_index_add(f->dir, NULL, &ATTRS[2], NULL, NULL, NULL), BFH_E_BUSY);
  assert_int_equal(bfh_close(f->db), BFH_OK);
  f->db = NULL;

  options(&o, NULL, 0);
  uint64_t calls[2] = {0, 0};
  bfh_index_report rep;
  assert_int_equal(bfh_index_add(f->dir, &o, &ATTRS[2], count_progress, calls, &rep), BFH_OK);
  assert_true(calls[0] >= 2 && calls[1] == 1); /* the last call says done */
  assert_true(rep.tables_out >= 1 && rep.keys_out > NKEYS / 2);
  assert_int_equal(stored_attributes(f->dir), NATTRS);
  assert_int_equal(bfh_open(f->dir, &o, &f->db), BFH_OK);
  assert_true(check_tables(f->db, m, specs) > NKEYS);
  load(f->db, m, &r, specs, NOPS / 2); /* new tables, with every item too */
  assert_true(check_tables(f->db, m, specs) > NKEYS);
  assert_int_equal(bfh_close(f->db), BFH_OK);
  f->db = NULL;
  check_keys(f->dir, m);

  assert_int_equal(bfh_index_add(f->dir, &o, &ATTRS[2], NULL, NULL, NULL), BFH_E_INVALID);
  assert_non_null(strstr(bfh_last_error(NULL), "region"));
  const bfh_attribute bad = {"n", "csv:0"};
  assert_int_equal(bfh_index_add(f->dir, &o, &bad, NULL, NULL, NULL), BFH_E_INVALID);
  assert_int_equal(bfh_index_drop(f->dir, &o, "nope"), BFH_E_INVALID);
  assert_non_null(strstr(bfh_last_error(NULL), "declares no attribute nope"));
  assert_int_equal(bfh_index_drop(f->dir, &o, "region"), BFH_OK);
  assert_int_equal(stored_attributes(f->dir), 2);
  assert_int_equal(bfh_index_drop(f->dir, &o, "city"), BFH_OK);
  assert_int_equal(bfh_index_drop(f->dir, &o, "tags"), BFH_E_INVALID); /* the last one */
  assert_int_equal(stored_attributes(f->dir), 1);
  check_keys(f->dir, m);
  model_free(m);
  free(m);
  attr_specs_free(specs, NATTRS);
}

/* Every file operation of an add's stage, of each kind, fails in turn: the add fails and the
   database is as it was (two attributes declared, every key's value), or, for a fault the add
   got past (after the swap), it succeeded whole (three, every table holding the new items). */
static void test_attributes_index_add_faults_leave_old_state(void **state) {
  db_fixture_t *f = *state;
  attr_spec_t *specs = parse_all(ATTRS, NATTRS);
  bfh_options o;
  options(&o, ATTRS, 2);
  assert_int_equal(bfh_open(f->dir, &o, &f->db), BFH_OK);
  model_t *m = calloc(1, sizeof *m);
  rng_t r;
  rng_init(&r, RNG_SEED + 2);
  load(f->db, m, &r, specs, NOPS / 3);
  assert_int_equal(bfh_close(f->db), BFH_OK);
  f->db = NULL;
  char tmpl[TEST_PATH_MAX + 16];
  snprintf(tmpl, sizeof tmpl, "%s/template", f->root);
  assert_int_equal(test_copy_dir(f->dir, tmpl), 0);
  options(&o, NULL, 0);
  const env_op_t kinds[] = {ENV_OP_OPEN,   ENV_OP_WRITE,  ENV_OP_SYNC,
                            ENV_OP_RENAME, ENV_OP_UNLINK, ENV_OP_MKDIR};
  size_t failed = 0, survived = 0;
  for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++) {
    for (uint64_t n = 1;; n++) {
      assert_int_equal(test_rmrf(f->dir), 0);
      assert_int_equal(test_copy_dir(tmpl, f->dir), 0);
      env_t *io = env_create_faulty();
      assert_non_null(io);
      env_fail(io, kinds[k], n, 0);
      int rc = bfh_internal_index_add_with_io(f->dir, &o, &ATTRS[2], io);
      int hit = env_faults_injected(io) > 0;
      env_destroy(io);
      if (rc == BFH_OK) {
        assert_int_equal(stored_attributes(f->dir), NATTRS);
        assert_int_equal(bfh_open(f->dir, &o, &f->db), BFH_OK);
        assert_true(check_tables(f->db, m, specs) > NKEYS / 2);
        assert_int_equal(bfh_close(f->db), BFH_OK);
        f->db = NULL;
        survived += hit;
      } else {
        assert_true(hit);
        assert_int_equal(stored_attributes(f->dir), 2);
        failed++;
      }
      check_keys(f->dir, m);
      if (!hit) break; /* the add ran past the n-th operation of this kind: every one tried */
    }
  }
  assert_true(failed >= 6); /* at least one fault of each kind stopped the add */
  (void)survived;
  model_free(m);
  free(m);
  attr_specs_free(specs, NATTRS);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_attributes_every_item_in_its_tables_filters, setup,
                                      db_fixture_teardown),
      cmocka_unit_test_setup_teardown(test_attributes_other_declarations_refused, setup,
                                      db_fixture_teardown),
      cmocka_unit_test_setup_teardown(test_attributes_value_keeps_whole_value_search, setup,
                                      db_fixture_teardown),
      cmocka_unit_test_setup_teardown(test_attributes_stock_engines, setup, db_fixture_teardown),
      cmocka_unit_test_setup_teardown(test_attributes_index_add_builds_every_table, setup,
                                      db_fixture_teardown),
      cmocka_unit_test_setup_teardown(test_attributes_index_add_faults_leave_old_state, setup,
                                      db_fixture_teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

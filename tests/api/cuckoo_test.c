/* The Cuckoo Index (index/cuckoo_index.h) and BFH_SEARCH_CUCKOO.
 *
 * Unit: tables of random keys added and removed, with keys shared by many tables; after every
 * change the index validates, every key of every table still in it names that table (no false
 * negative), and absent keys name few tables (the bound below).
 *
 * Model, on the own engine and on the LevelDB engine: a database with small memtables and
 * tables takes random puts (overwrites, empty values), deletes, flushes and reopens over NKEYS
 * keys, in two value mixes: unique values (one key each) and a 1% domain (NKEYS / 100 values,
 * about 100 keys each, in many tables each). Every search by CUCKOO must report exactly the
 * oracle's keys, each once, whether the entries are in tables (flushed, compacted) or still in
 * the memtables, and right after a reopen (the index is rebuilt from the tables then).
 * Fixed seeds.
 *
 * Lifetimes: after a CUCKOO search indexed the live tables and a compaction replaced some of
 * them, bfh_stats counts (and holds) only the pieces of tables still live (issue 44: it used to
 * report the dead ones until the next CUCKOO search).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "bfh.h"
#include "index/cuckoo_index.h"
#include "tests/test_util.h"
#include "util/random.h"

/* ---- Unit ------------------------------------------------------------------------------------ */

#define UT_TABLES 40
#define UT_KEYS 3000

static int names(cuckoo_index_t *ci, uint32_t key, uint64_t number) {
  u64vec_t out;
  u64vec_init(&out);
  assert_int_equal(cuckoo_index_lookup(ci, key, &out, NULL), BFH_OK);
  int found = 0;
  for (size_t i = 0; i < out.n; i++) found |= out.v[i] == number;
  u64vec_release(&out);
  return found;
}

static void test_cuckoo_index_add_remove_no_false_negative(void **state) {
  (void)state;
  rng_t r;
  rng_init(&r, 11);
  cuckoo_index_t *ci = cuckoo_index_create(1);
  assert_non_null(ci);
  static uint32_t keys[UT_TABLES][UT_KEYS];
  int in[UT_TABLES] = {0};
  /* A shared pool of 2000 keys (each in many tables) and keys of the table's own. */
  uint32_t pool[2000];
  for (int i = 0; i < 2000; i++) pool[i] = (uint32_t)rng_next(&r);
  err_t err;
  for (int round = 0; round < 120; round++) {
    int t = (int)rng_below(&r, UT_TABLES);
    if (in[t]) {
      assert_int_equal(cuckoo_index_remove_table(ci, 1000 + (uint64_t)t), BFH_OK);
      in[t] = 0;
    } else {
      uint32_t tmp[UT_KEYS];
      for (int k = 0; k < UT_KEYS; k++) {
        keys[t][k] = k % 3 == 0 ? pool[rng_below(&r, 2000)] : (uint32_t)rng_next(&r);
        tmp[k] = keys[t][k];
      }
      assert_int_equal(cuckoo_index_add_table(ci, 1000 + (uint64_t)t, tmp, UT_KEYS, &err), BFH_OK);
      assert_int_equal(cuckoo_index_add_table(ci, 1000 + (uint64_t)t, tmp, 1, &err), BFH_E_INVALID);
      in[t] = 1;
    }
    if (round % 10 != 9) continue;
    if (cuckoo_index_validate(ci, &err) != BFH_OK) fail_msg("%s", err.msg);
    for (int u = 0; u < UT_TABLES; u++) {
      assert_int_equal(cuckoo_index_contains(ci, 1000 + (uint64_t)u), in[u]);
      if (!in[u]) continue;
      for (int k = 0; k < UT_KEYS; k++)
        if (!names(ci, keys[u][k], 1000 + (uint64_t)u))
          fail_msg("round %d: table %d key %08x not named", round, u, keys[u][k]);
    }
  }
  /* Absent keys: each of the 8 slots compared matches a 16-bit fingerprint with probability
     2^-16 (load <= 0.9), so a lookup names a table with probability <= 8 * 2^-16 = 1.2e-4
     per entry set; 100,000 lookups expect <= ~12 (x the set size); bound: 200 tables. */
  u64vec_t out;
  u64vec_init(&out);
  uint64_t named = 0;
  for (int i = 0; i < 100000; i++) {
    out.n = 0;
    assert_int_equal(cuckoo_index_lookup(ci, (uint32_t)rng_next(&r), &out, NULL), BFH_OK);
    named += out.n;
  }
  u64vec_release(&out);
  cuckoo_index_stats_t cs;
  cuckoo_index_get_stats(ci, &cs);
  print_message(
      "absent: %llu tables named in 100000 lookups; %llu entries, %llu buckets, "
      "%llu rebuilds, %llu bytes\n",
      (unsigned long long)named, (unsigned long long)cs.entries, (unsigned long long)cs.buckets,
      (unsigned long long)cs.rebuilds, (unsigned long long)cs.bytes);
  assert_true(named <= 200);
  assert_true(cs.rebuilds > 0); /* growth was exercised */
  /* Everything out: no entry left. */
  for (int u = 0; u < UT_TABLES; u++)
    if (in[u]) assert_int_equal(cuckoo_index_remove_table(ci, 1000 + (uint64_t)u), BFH_OK);
  cuckoo_index_get_stats(ci, &cs);
  assert_int_equal(cs.entries, 0);
  assert_int_equal(cs.tables, 0);
  assert_int_equal(cuckoo_index_remove_table(ci, 1000), BFH_NOT_FOUND);
  cuckoo_index_destroy(ci);
}

/* ---- Model ----------------------------------------------------------------------------------- */

#define NKEYS 3000
#define MAXV 40

typedef struct entry {
  int live;
  char val[MAXV];
  size_t len;
} entry_t;

typedef struct found {
  uint8_t seen[NKEYS];
  size_t n, dups, unknown;
} found_t;

static int on_match(void *arg, const void *key, size_t len) {
  found_t *f = arg;
  char buf[32];
  unsigned i;
  if (len >= sizeof buf) return (int)(f->unknown++ * 0);
  memcpy(buf, key, len);
  buf[len] = 0;
  if (sscanf(buf, "key%06u", &i) != 1 || i >= NKEYS) return (int)(f->unknown++ * 0);
  if (f->seen[i]) f->dups++;
  f->seen[i] = 1;
  f->n++;
  return 0;
}

static uint64_t check(bfh_db *db, const entry_t *e, const char *val, size_t len, uint64_t *scanned,
                      uint64_t *live) {
  found_t *f = calloc(1, sizeof *f);
  bfh_search_stats st;
  int rc = bfh_search(db, len ? val : NULL, len, BFH_SEARCH_CUCKOO, on_match, f, &st);
  if (rc != BFH_OK) fail_msg("bfh_search: %d %s", rc, bfh_last_error(db));
  uint64_t bad = f->dups + f->unknown;
  size_t want = 0;
  for (uint32_t i = 0; i < NKEYS; i++) {
    int expect = e[i].live && e[i].len == len && memcmp(e[i].val, val, len) == 0;
    want += (size_t)expect;
    if (expect != f->seen[i]) {
      if (bad++ < 5)
        print_error("value '%.*s' key %u: oracle %d got %d\n", (int)len, val, i, expect,
                    f->seen[i]);
    }
  }
  if (st.results != want || st.method_used != BFH_SEARCH_CUCKOO) bad++;
  *scanned += st.tables_scanned;
  *live += st.tables_live;
  free(f);
  return bad;
}

static void make_value(rng_t *r, int domain, uint32_t key, entry_t *e) {
  uint64_t c = rng_below(r, 100);
  if (c < 5)
    e->len = 0; /* an empty value is a value */
  else if (domain)
    e->len = (size_t)sprintf(e->val, "d-%03u", (unsigned)rng_below(r, NKEYS / 100));
  else
    e->len = (size_t)sprintf(e->val, "u-%06u-%08x", key, (unsigned)rng_next(r));
}

static bfh_db *open_db(const char *dir, bfh_engine engine) {
  bfh_options o;
  bfh_options_init(&o);
  o.engine = engine;
  o.memtable_bytes = 128 << 10;
  o.table_bytes = 16 << 10;
  o.value_filter_bits = 4096;
  o.cuckoo_index = 1;
  bfh_db *db;
  int rc = bfh_open(dir, &o, &db);
  if (rc != BFH_OK) fail_msg("bfh_open: %d %s", rc, bfh_last_error(NULL));
  return db;
}

static void run_model(bfh_engine engine, int domain, uint64_t seed) {
  char dir[512];
  assert_int_equal(test_tmpdir_create(dir, sizeof dir, "cuckoo_test"), 0);
  entry_t *e = calloc(NKEYS, sizeof *e);
  bfh_db *db = open_db(dir, engine);
  rng_t r;
  rng_init(&r, seed);
  uint64_t bad = 0, searches = 0, reopens = 0, scanned = 0, live = 0, most_held = 0;
  char key[32];
  for (int op = 0; op < 40000; op++) {
    uint32_t i = (uint32_t)rng_below(&r, NKEYS);
    size_t klen = (size_t)sprintf(key, "key%06u", i);
    uint64_t c = rng_below(&r, 1000);
    if (c < 700) {
      make_value(&r, domain, i, &e[i]);
      e[i].live = 1;
      assert_int_equal(bfh_put(db, key, klen, e[i].len ? e[i].val : NULL, e[i].len), BFH_OK);
    } else if (c < 850) {
      e[i].live = 0;
      assert_int_equal(bfh_delete(db, key, klen), BFH_OK);
    } else if (c < 985) {
      /* A present value mostly, sometimes an absent one. */
      entry_t probe = e[i];
      if (!probe.live || rng_below(&r, 4) == 0) make_value(&r, domain, NKEYS + i, &probe);
      bad += check(db, e, probe.val, probe.len, &scanned, &live);
      /* How many tables the index held right after a search caught it up: LevelDB compacts
         in the background, so the count at the end alone may be one table. */
      if (searches++ % 64 == 0) {
        bfh_db_stats held;
        assert_int_equal(bfh_stats(db, &held), BFH_OK);
        if (held.cuckoo_tables > most_held) most_held = held.cuckoo_tables;
      }
    } else if (c < 998) {
      assert_int_equal(bfh_flush(db), BFH_OK);
    } else if (rng_below(&r, 8) == 0) {
      assert_int_equal(bfh_close(db), BFH_OK);
      db = open_db(dir, engine);
      reopens++;
      /* The first search after a reopen builds the index from the tables. */
      entry_t probe = e[i];
      bad += check(db, e, probe.val, probe.len, &scanned, &live);
    }
  }
  /* Every value of the domain, or every key's value, once more. */
  for (uint32_t i = 0; i < NKEYS; i += domain ? 97 : 7)
    bad += check(db, e, e[i].val, e[i].len, &scanned, &live);
  bfh_db_stats ds;
  assert_int_equal(bfh_stats(db, &ds), BFH_OK);
  print_message(
      "%s, %s: %llu searches, %llu reopens, %llu tables read of %llu live, "
      "cuckoo %llu tables %llu bytes (at most %llu tables), %llu mismatches\n",
      engine == BFH_ENGINE_LSM ? "lsm" : "leveldb", domain ? "1% domain" : "unique",
      (unsigned long long)searches, (unsigned long long)reopens, (unsigned long long)scanned,
      (unsigned long long)live, (unsigned long long)ds.cuckoo_tables,
      (unsigned long long)ds.cuckoo_bytes, (unsigned long long)most_held,
      (unsigned long long)bad);
  assert_int_equal(bad, 0);
  assert_true(reopens >= 2 && searches > 1000);
  assert_true(most_held > 1 && ds.cuckoo_tables <= ds.tables);
  /* Not vacuous: the index pruned (unique values: most searches read at most one table). */
  assert_true(scanned < live);
  if (!domain) assert_true(scanned * 4 < live);
  assert_int_equal(bfh_close(db), BFH_OK);
  free(e);
  assert_int_equal(test_rmrf(dir), 0);
}

/* ---- Lifetimes ------------------------------------------------------------------------------ */

#define MAX_TABLES 256

typedef struct table_list {
  uint64_t v[MAX_TABLES];
  int level[MAX_TABLES];
  size_t n;
} table_list_t;

static int collect_table(void *arg, const bfh_table_info *t) {
  table_list_t *l = arg;
  if (l->n < MAX_TABLES) l->level[l->n] = t->level, l->v[l->n++] = t->number;
  return 0;
}

static table_list_t live_tables(bfh_db *db) {
  table_list_t l = {.n = 0};
  assert_int_equal(bfh_tables(db, collect_table, &l), BFH_OK);
  assert_true(l.n < MAX_TABLES);
  return l;
}

static size_t common(const table_list_t *a, const table_list_t *b) {
  size_t c = 0;
  for (size_t i = 0; i < a->n; i++)
    for (size_t j = 0; j < b->n; j++) c += a->v[i] == b->v[j];
  return c;
}

static int same(const table_list_t *a, const table_list_t *b) {
  return a->n == b->n && common(a, b) == a->n;
}

/* The live tables, held still across a bfh_stats into *st: a compaction may end between two
   listings, so they are taken again until they agree (bounded: 60 s). */
static table_list_t stats_with_tables(bfh_db *db, bfh_db_stats *st) {
  struct timespec tick = {0, 20 * 1000 * 1000};
  for (int polls = 0; polls <= 3000; polls++) {
    table_list_t now = live_tables(db);
    assert_int_equal(bfh_stats(db, st), BFH_OK);
    table_list_t again = live_tables(db);
    if (same(&now, &again)) return now;
    nanosleep(&tick, NULL);
  }
  fail_msg("the live tables never held still across a bfh_stats in 60 s");
  return live_tables(db);
}

/* One flush of LIFE_KEYS puts over the same keys: a table of level 0 each. */
#define LIFE_KEYS 400
static void life_round(bfh_db *db, int round) {
  char k[32], v[48];
  for (int i = 0; i < LIFE_KEYS; i++) {
    int kl = snprintf(k, sizeof k, "key%06d", i);
    int vl = snprintf(v, sizeof v, "r%02d-value-%06d", round, i);
    assert_int_equal(bfh_put(db, k, (size_t)kl, v, (size_t)vl), BFH_OK);
  }
  assert_int_equal(bfh_flush(db), BFH_OK);
}

static int count_one(void *arg, const void *key, size_t len) {
  (void)key, (void)len;
  ++*(int *)arg;
  return 0;
}

static void life_check(bfh_engine engine) {
  char dir[512];
  assert_int_equal(test_tmpdir_create(dir, sizeof dir, "cuckoo_test"), 0);
  bfh_db *db = open_db(dir, engine);
  /* Three level-0 tables (a fourth would start a compaction), then one CUCKOO search: it
     indexes every live table. */
  for (int r = 0; r < 3; r++) life_round(db, r);
  table_list_t searched = live_tables(db);
  int found = 0;
  bfh_search_stats ss;
  assert_int_equal(
      bfh_search(db, "r02-value-000007", 16, BFH_SEARCH_CUCKOO, count_one, &found, &ss), BFH_OK);
  assert_int_equal(found, 1);
  bfh_db_stats st;
  assert_int_equal(bfh_stats(db, &st), BFH_OK);
  assert_int_equal(st.cuckoo_tables, searched.n);
  uint64_t bytes_searched = st.cuckoo_bytes;
  /* More level-0 tables: a compaction merges them with some of the searched ones, which leave
     the version. Wait until one has (its output may be several tables, more still while a
     view keeps old versions: how many is not waited for). */
  int rounds = 6;
  for (int r = 3; r < rounds; r++) life_round(db, r);
  table_list_t now;
  struct timespec tick = {0, 20 * 1000 * 1000};
  for (int polls = 1;; polls++) {
    now = stats_with_tables(db, &st);
    if (common(&searched, &now) < searched.n) break;
    /* No compaction yet after a second: one more level-0 table (LevelDB compacts level 0 at
       4 tables, and stops writes at 12 until it has). */
    if (polls % 50 == 0 && rounds < 30) life_round(db, rounds++);
    if (polls > 3000) {
      for (size_t i = 0; i < searched.n; i++)
        print_message("searched %llu at L%d\n", (unsigned long long)searched.v[i],
                      searched.level[i]);
      for (size_t i = 0; i < now.n; i++)
        print_message("now %llu at L%d\n", (unsigned long long)now.v[i], now.level[i]);
      fail_msg("no compaction replaced the searched tables in 60 s");
    }
    nanosleep(&tick, NULL);
  }
  size_t still = common(&searched, &now);
  print_message(
      "%s: %zu tables searched, %zu live now after %d rounds, %zu of them searched; cuckoo "
      "holds %llu tables, %llu bytes (%llu at the search)\n",
      engine == BFH_ENGINE_LSM ? "lsm" : "leveldb", searched.n, now.n, rounds, still,
      (unsigned long long)st.cuckoo_tables, (unsigned long long)st.cuckoo_bytes,
      (unsigned long long)bytes_searched);
  assert_int_equal(st.cuckoo_tables, still); /* only the live ones it indexed */
  assert_true(st.cuckoo_bytes < bytes_searched);
  /* The next CUCKOO search indexes the new tables, and answers right. */
  found = 0;
  char newest[32];
  snprintf(newest, sizeof newest, "r%02d-value-000007", rounds - 1);
  assert_int_equal(
      bfh_search(db, newest, 16, BFH_SEARCH_CUCKOO, count_one, &found, &ss), BFH_OK);
  assert_int_equal(found, 1);
  found = 0;
  assert_int_equal(
      bfh_search(db, "r02-value-000007", 16, BFH_SEARCH_CUCKOO, count_one, &found, &ss), BFH_OK);
  assert_int_equal(found, 0);
  now = stats_with_tables(db, &st);
  assert_int_equal(st.cuckoo_tables, now.n);
  assert_int_equal(bfh_close(db), BFH_OK);
  assert_int_equal(test_rmrf(dir), 0);
}

static void test_cuckoo_stats_count_live_tables_lsm(void **state) {
  (void)state;
  life_check(BFH_ENGINE_LSM);
}

static void test_cuckoo_stats_count_live_tables_leveldb(void **state) {
  (void)state;
  life_check(BFH_ENGINE_LEVELDB);
}

static void test_cuckoo_model_lsm_unique(void **state) {
  (void)state;
  run_model(BFH_ENGINE_LSM, 0, 21);
}

static void test_cuckoo_model_lsm_domain(void **state) {
  (void)state;
  run_model(BFH_ENGINE_LSM, 1, 22);
}

static void test_cuckoo_model_leveldb_unique(void **state) {
  (void)state;
  run_model(BFH_ENGINE_LEVELDB, 0, 23);
}

static void test_cuckoo_model_leveldb_domain(void **state) {
  (void)state;
  run_model(BFH_ENGINE_LEVELDB, 1, 24);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_cuckoo_index_add_remove_no_false_negative),
      cmocka_unit_test(test_cuckoo_model_lsm_unique),
      cmocka_unit_test(test_cuckoo_model_lsm_domain),
      cmocka_unit_test(test_cuckoo_model_leveldb_unique),
      cmocka_unit_test(test_cuckoo_model_leveldb_domain),
      cmocka_unit_test(test_cuckoo_stats_count_live_tables_lsm),
      cmocka_unit_test(test_cuckoo_stats_count_live_tables_leveldb),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

/* The read-only RocksDB engine answering range deletions (DeleteRange), through the public API:
 *   - a model test: a stock RocksDB handle in this process writes rounds of puts, overwrites,
 *     deletes, empty values and range deletions (tiny memtables and tables, automatic
 *     compactions waited for after each flush, a snapshot held from the middle on so that
 *     tombstones and the keys under them survive at every level), and leaves the last rounds
 *     in its WAL; a read-only bfh handle, open throughout, is checked against an oracle of what
 *     RocksDB acknowledged: every search method (CUCKOO included), bfh_get of every key, and an
 *     iterator at the end. The test checks that its database does hold range tombstones in
 *     tables of at least two levels and in the WAL, so that it tests what it says;
 *   - a tombstone in the WAL over keys in a table, then flushed, at its boundaries (begin
 *     covered, end not).
 * Without the engine's tombstones (stock_tombs_max answering 0) both fail: keys range-deleted are
 * reported by the searches and found by bfh_get.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <rocksdb/c.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bfh.h"
#include "lsm_hooks/rocksdb_format/rdb_table.h"
#include "util/env.h"
#include "tests/test_util.h"
#include "util/random.h"

#define NKEYS 8000u
#define DOMAIN 150u                                 /* shared values "val-%03u" PAD */
#define PAD "-abcdefghijklmnopqrstuvwxyz0123456789" /* so that the tables fill several levels */
#define ROUNDS 30
#define WAL_ROUNDS 2 /* the last rounds stay in the WAL */
#define OPS 800
#define MAXV 64

static char g_dir[512], g_db[600], g_idx[600];

static int setup(void **state) {
  (void)state;
  if (test_tmpdir_create(g_dir, sizeof g_dir, "rocksdb_readonly_rangedel_test")) return -1;
  snprintf(g_db, sizeof g_db, "%s/db", g_dir);
  snprintf(g_idx, sizeof g_idx, "%s/index", g_dir);
  return 0;
}

static int teardown(void **state) {
  (void)state;
  return test_rmrf(g_dir);
}

/* ---- The stock RocksDB program ------------------------------------------------------------- */

typedef struct stock {
  rocksdb_t *db;
  rocksdb_options_t *o;
  rocksdb_writeoptions_t *wo;
} stock_t;

static void stock_open(stock_t *s, int auto_compactions) {
  s->o = rocksdb_options_create();
  rocksdb_options_set_create_if_missing(s->o, 1);
  rocksdb_options_set_disable_auto_compactions(s->o, !auto_compactions);
  rocksdb_options_set_write_buffer_size(s->o, 64 << 10);
  rocksdb_options_set_level0_file_num_compaction_trigger(s->o, 2);
  rocksdb_options_set_target_file_size_base(s->o, 32 << 10);
  rocksdb_options_set_max_bytes_for_level_base(s->o, 48 << 10);
  rocksdb_options_set_max_bytes_for_level_multiplier(s->o, 2);
  char *msg = NULL;
  s->db = rocksdb_open(s->o, g_db, &msg);
  if (msg) fail_msg("rocksdb_open: %s", msg);
  s->wo = rocksdb_writeoptions_create();
}

static void stock_close(stock_t *s) {
  rocksdb_close(s->db);
  rocksdb_options_destroy(s->o);
  rocksdb_writeoptions_destroy(s->wo);
}

static void stock_flush(stock_t *s) {
  rocksdb_flushoptions_t *fo = rocksdb_flushoptions_create();
  char *msg = NULL;
  rocksdb_flush(s->db, fo, &msg);
  rocksdb_flushoptions_destroy(fo);
  if (msg) fail_msg("rocksdb_flush: %s", msg);
}

static uint64_t prop(stock_t *s, const char *name) {
  char *v = rocksdb_property_value(s->db, name);
  if (!v) fail_msg("property %s missing", name);
  uint64_t x = strtoull(v, NULL, 10);
  rocksdb_free(v);
  return x;
}

/* Waits (bounded) until RocksDB has no flush or compaction pending or running: the database's
   shape is then what its compaction picker made of the writes, the same at every run. */
static void stock_quiesce(stock_t *s) {
  for (int i = 0; i < 600000; i++) {
    if (prop(s, "rocksdb.compaction-pending") == 0 &&
        prop(s, "rocksdb.num-running-compactions") == 0 &&
        prop(s, "rocksdb.num-running-flushes") == 0 &&
        prop(s, "rocksdb.mem-table-flush-pending") == 0)
      return;
    struct timespec ts = {0, 100000};
    nanosleep(&ts, NULL);
  }
  fail_msg("RocksDB's compactions did not settle");
}

/* ---- The oracle ---------------------------------------------------------------------------- */

typedef struct oracle {
  char *val[NKEYS];
  size_t len[NKEYS];
} oracle_t;

static size_t key_name(uint32_t i, char *buf) {
  return (size_t)sprintf(buf, "k%06u", i);
}

static int cmp_bytes(const void *a, size_t al, const void *b, size_t bl) {
  int c = memcmp(a, b, al < bl ? al : bl);
  return c ? c : (al > bl) - (al < bl);
}

static void oracle_set(oracle_t *o, uint32_t i, const char *v, size_t vl) {
  free(o->val[i]);
  o->val[i] = NULL;
  if (!v) return;
  o->val[i] = malloc(vl + 1);
  memcpy(o->val[i], v, vl);
  o->len[i] = vl;
}

static void oracle_free(oracle_t *o) {
  for (uint32_t i = 0; i < NKEYS; i++) oracle_set(o, i, NULL, 0);
}

static size_t value_pick(rng_t *r, char *out) {
  uint64_t x = rng_next(r);
  if (x % 25 == 0) return 0;
  if (x % 6 == 0) return (size_t)sprintf(out, "u-%llu", (unsigned long long)(x >> 8) % 1000000);
  return (size_t)sprintf(out, "val-%03u" PAD, (unsigned)((x >> 16) % DOMAIN));
}

static void range_delete(stock_t *s, oracle_t *o, const char *b, size_t bl, const char *e,
                         size_t el) {
  char *msg = NULL;
  rocksdb_writebatch_t *wb = rocksdb_writebatch_create();
  rocksdb_writebatch_delete_range(wb, b, bl, e, el);
  rocksdb_write(s->db, s->wo, wb, &msg);
  rocksdb_writebatch_destroy(wb);
  if (msg) fail_msg("delete_range: %s", msg);
  for (uint32_t i = 0; i < NKEYS; i++) {
    char k[16];
    size_t kl = key_name(i, k);
    if (cmp_bytes(b, bl, k, kl) <= 0 && cmp_bytes(k, kl, e, el) < 0) oracle_set(o, i, NULL, 0);
  }
}

static void round_of_writes(stock_t *s, oracle_t *o, rng_t *r) {
  char k[16], v[MAXV];
  char *msg = NULL;
  for (int op = 0; op < OPS; op++) {
    uint64_t x = rng_next(r);
    uint32_t i = (uint32_t)((x >> 8) % NKEYS);
    size_t kl = key_name(i, k);
    if (x % 40 == 0) { /* a range deletion of up to 80 keys, its end a key or between keys */
      char e[24];
      size_t el = key_name(i + 1 + (uint32_t)((x >> 32) % 80), e);
      if ((x >> 40) % 3 == 0 && cmp_bytes(k, kl, e, el - 1) < 0)
        e[--el] = '\0'; /* "k00012" < "k000120": ends before */
      range_delete(s, o, k, kl, e, el);
    } else if (x % 9 == 0) {
      rocksdb_delete(s->db, s->wo, k, kl, &msg);
      oracle_set(o, i, NULL, 0);
    } else {
      size_t vl = value_pick(r, v);
      rocksdb_put(s->db, s->wo, k, kl, v, vl, &msg);
      oracle_set(o, i, v, vl);
    }
    if (msg) fail_msg("rocksdb write: %s", msg);
  }
}

/* ---- Checking bfh against the oracle ------------------------------------------------------- */

typedef struct hits {
  char keys[NKEYS][16];
  size_t n;
} hits_t;

static int on_hit(void *arg, const void *key, size_t kl) {
  hits_t *h = arg;
  if (h->n < NKEYS && kl < 16) {
    memcpy(h->keys[h->n], key, kl);
    h->keys[h->n][kl] = '\0';
  }
  h->n++;
  return 0;
}

static int cmp_str(const void *a, const void *b) {
  return strcmp((const char *)a, (const char *)b);
}

static uint64_t g_checked;

static const bfh_method k_methods[] = {BFH_SEARCH_SCAN,   BFH_SEARCH_LEAVES, BFH_SEARCH_HIERARCHY,
                                       BFH_SEARCH_SLICED, BFH_SEARCH_AUTO,   BFH_SEARCH_CUCKOO};

static void check_value(bfh_db *db, const oracle_t *o, const char *v, size_t vl, const char *when) {
  static hits_t want, got;
  want.n = 0;
  for (uint32_t i = 0; i < NKEYS; i++)
    if (o->val[i] && o->len[i] == vl && memcmp(o->val[i], v, vl) == 0)
      key_name(i, want.keys[want.n++]);
  for (size_t m = 0; m < sizeof k_methods / sizeof k_methods[0]; m++) {
    got.n = 0;
    int rc = bfh_search(db, v, vl, k_methods[m], on_hit, &got, NULL);
    if (rc != BFH_OK)
      fail_msg("%s: search '%.*s' method %d: %d %s", when, (int)vl, v, (int)k_methods[m], rc,
               bfh_last_error(db));
    qsort(got.keys, got.n, sizeof got.keys[0], cmp_str);
    int same = got.n == want.n;
    for (size_t i = 0; same && i < got.n; i++) same = strcmp(got.keys[i], want.keys[i]) == 0;
    if (!same)
      fail_msg("%s: search '%.*s' method %d: %zu keys, the oracle has %zu", when, (int)vl, v,
               (int)k_methods[m], got.n, want.n);
    g_checked++;
  }
}

static void check_gets(bfh_db *db, const oracle_t *o, const char *when) {
  for (uint32_t i = 0; i < NKEYS; i++) {
    char k[16];
    size_t kl = key_name(i, k);
    void *val = NULL;
    size_t len = 0;
    int rc = bfh_get(db, k, kl, &val, &len);
    if (!o->val[i]) {
      if (rc != BFH_NOT_FOUND) fail_msg("%s: get %s: %d, wanted not found", when, k, rc);
    } else if (rc != BFH_OK || len != o->len[i] || (len && memcmp(val, o->val[i], len) != 0)) {
      fail_msg("%s: get %s: %d, wanted '%.*s'", when, k, rc, (int)o->len[i], o->val[i]);
    }
    bfh_free(val);
  }
}

static void check_all(bfh_db *db, const oracle_t *o, rng_t *r, const char *when) {
  char v[MAXV];
  check_value(db, o, "", 0, when);
  for (int j = 0; j < 8; j++) {
    size_t vl = (size_t)sprintf(v, "val-%03u" PAD, (unsigned)(rng_next(r) % DOMAIN));
    check_value(db, o, v, vl, when);
  }
  for (int j = 0; j < 3; j++) {
    uint32_t i = (uint32_t)(rng_next(r) % NKEYS);
    if (o->val[i]) check_value(db, o, o->val[i], o->len[i], when);
  }
  check_gets(db, o, when);
}

static void check_iter(bfh_db *db, const oracle_t *o) {
  bfh_iter *it;
  assert_int_equal(bfh_iter_create(db, &it), BFH_OK);
  bfh_iter_seek_first(it);
  for (uint32_t i = 0; i < NKEYS; i++) {
    if (!o->val[i]) continue;
    char k[16];
    size_t kl = key_name(i, k), gl, vl;
    if (!bfh_iter_valid(it)) fail_msg("iterator: ended before %s", k);
    const char *gk = bfh_iter_key(it, &gl), *gv = bfh_iter_value(it, &vl);
    if (cmp_bytes(gk, gl, k, kl) != 0 || vl != o->len[i] || (vl && memcmp(gv, o->val[i], vl)))
      fail_msg("iterator: '%.*s' where the oracle has %s", (int)gl, gk, k);
    bfh_iter_next(it);
  }
  assert_false(bfh_iter_valid(it));
  assert_int_equal(bfh_iter_status(it), BFH_OK);
  bfh_iter_destroy(it);
}

static bfh_db *open_ro(void) {
  bfh_options opt;
  bfh_options_init(&opt);
  opt.engine = BFH_ENGINE_ROCKSDB;
  opt.read_only = 1;
  opt.index_dir = g_idx;
  opt.cuckoo_index = 1;
  bfh_db *db = NULL;
  int rc = bfh_open(g_db, &opt, &db);
  if (rc != BFH_OK) fail_msg("read-only open: %d %s", rc, bfh_last_error(NULL));
  return db;
}

/* Levels (a bit each) whose tables hold range tombstones, read with bfh's table reader. */
static unsigned tombstone_levels(stock_t *s, unsigned *tables) {
  const rocksdb_livefiles_t *lf = rocksdb_livefiles(s->db);
  unsigned levels = 0;
  *tables = 0;
  for (int i = 0; i < rocksdb_livefiles_count(lf); i++) {
    char p[1200];
    snprintf(p, sizeof p, "%s%s", g_db, rocksdb_livefiles_name(lf, i));
    rdb_table_props_t pr;
    err_t e;
    if (rdb_table_props_read(env_default(), p, &pr, &e) != BFH_OK) fail_msg("%s", e.msg);
    if (pr.num_range_deletions) levels |= 1u << rocksdb_livefiles_level(lf, i), ++*tables;
    rdb_table_props_release(&pr);
  }
  rocksdb_livefiles_destroy(lf);
  return levels;
}

static void test_rocksdb_readonly_rangedel_model(void **state) {
  (void)state;
  static oracle_t o;
  memset(&o, 0, sizeof o);
  rng_t r;
  rng_init(&r, 20261126);
  stock_t s;
  stock_open(&s, 1);
  round_of_writes(&s, &o, &r);
  stock_flush(&s);
  stock_quiesce(&s);
  bfh_db *db = open_ro();
  const rocksdb_snapshot_t *snap = NULL;
  char when[64];
  for (int round = 0; round < ROUNDS; round++) {
    round_of_writes(&s, &o, &r);
    if (round == ROUNDS / 3) snap = rocksdb_create_snapshot(s.db);
    if (round < ROUNDS - WAL_ROUNDS) {
      stock_flush(&s);
      stock_quiesce(&s);
    }
    if (round % 4 == 3 || round >= ROUNDS - WAL_ROUNDS) {
      snprintf(when, sizeof when, "round %d", round);
      check_all(db, &o, &r, when);
    }
  }
  unsigned ntables, levels = tombstone_levels(&s, &ntables);
  print_message(
      "range tombstones in %u tables, levels mask 0x%x; the WAL holds the last %d "
      "rounds\n",
      ntables, levels, WAL_ROUNDS);
  assert_true(__builtin_popcount(levels) >= 2 && (levels & ~1u) != 0);
  check_iter(db, &o);
  assert_int_equal(bfh_close(db), BFH_OK); /* bfh's reopen: filters from the index directory */
  db = open_ro();
  check_all(db, &o, &r, "after bfh's reopen");
  assert_int_equal(bfh_close(db), BFH_OK);
  rocksdb_release_snapshot(s.db, snap);
  stock_close(&s);
  print_message("model: %llu searches checked against the oracle\n", (unsigned long long)g_checked);
  oracle_free(&o);
}

/* A tombstone [k03, k06) in the WAL over keys in a table, then flushed to a table of its own:
   k03..k05 gone, k02 and k06 (its end) still there, by every method and by bfh_get. */
static void test_rocksdb_readonly_rangedel_boundaries(void **state) {
  (void)state;
  static oracle_t o;
  memset(&o, 0, sizeof o);
  stock_t s;
  stock_open(&s, 0);
  char *msg = NULL;
  for (uint32_t i = 0; i < 10; i++) {
    char k[16];
    size_t kl = key_name(i, k);
    rocksdb_put(s.db, s.wo, k, kl, "rv", 2, &msg);
    assert_null(msg);
    oracle_set(&o, i, "rv", 2);
  }
  stock_flush(&s);
  char b[16], e[16];
  size_t bl = key_name(3, b), el = key_name(6, e);
  range_delete(&s, &o, b, bl, e, el);
  rng_t r;
  rng_init(&r, 3);
  for (int flushed = 0; flushed < 2; flushed++) {
    bfh_db *db = open_ro();
    check_value(db, &o, "rv", 2, flushed ? "tombstone in a table" : "tombstone in the WAL");
    check_gets(db, &o, flushed ? "tombstone in a table" : "tombstone in the WAL");
    check_iter(db, &o);
    assert_int_equal(bfh_close(db), BFH_OK);
    stock_flush(&s);
  }
  stock_close(&s);
  oracle_free(&o);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_rocksdb_readonly_rangedel_model, setup, teardown),
      cmocka_unit_test_setup_teardown(test_rocksdb_readonly_rangedel_boundaries, setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

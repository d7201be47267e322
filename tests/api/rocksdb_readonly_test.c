/* The read-only RocksDB engine (lsm_hooks/engines/rocksdb_ro/), through the public API:
 *   - a model test: a stock RocksDB handle in this process keeps writing (overwrites, deletes,
 *     single deletes, empty values) with tiny memtables and tables, flushing and compacting
 *     (automatic and compact_range) and reopening between rounds, while one read-only bfh
 *     handle, open throughout, is searched by every method and read with bfh_get after each
 *     round, against an oracle of what RocksDB acknowledged; then bfh reopens (its filter cache
 *     in the index directory) and answers the same;
 *   - nothing is written into the database's directory: names, sizes and mtimes of every file
 *     are the same before the read-only open and after searches, gets, an iterator, stats,
 *     tables and the close; the filters went to the index directory;
 *   - a memtable flushed between a refresh's WAL reads and its second MANIFEST read (a test
 *     hook): the refresh starts over, else it would put the old WAL's entries over the new
 *     table that holds newer ones;
 *   - the refresh's watch (dir_watch.h): searches with nothing written read no file again
 *     (the refresh count stays); a put made between two searches, with nothing else
 *     happening, is found by the second (also after a flush, and after the owner reopens:
 *     a new MANIFEST and CURRENT renamed), and its WAL is read from where the last read
 *     ended (the WAL bytes read grow by what the put appended);
 *   - with an index directory each table's value-to-block map is kept in its cache file and
 *     searched through (map chunks read), before and after a reopen; without one the block
 *     filters serve; every value found once, an absent one never;
 *   - a table too large for a map keeps a sharper block filter where maps are asked for;
 *   - refusals: a merge operand gives BFH_E_UNSUPPORTED naming it, never an answer; writes
 *     through the handle are refused. (Range deletions are answered:
 *     rocksdb_readonly_rangedel_test.c.)
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <dirent.h>
#include <math.h>
#include <rocksdb/c.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "bfh.h"
/* Not public: the engine behind a handle, and the read-only engine's test hooks. */
#include "lsm_hooks/engines/rocksdb/rdb_adapter.h"
#include "index/index_sync.h"
#include "index/value_block_map.h"
#include "api/testbed.h"
#include "tests/test_util.h"
#include "util/random.h"

#define NKEYS 3000u
#define NSD 300u    /* single-delete keys "s%05u": put once, then single-deleted */
#define DOMAIN 200u /* shared values "val-%03u" */
#define ROUNDS 24
#define OPS 500
#define MAXV 32

static char g_dir[512], g_db[600], g_idx[600];
static int g_no_auto_compactions; /* so that a test's tables stay as it made them */

static int setup(void **state) {
  (void)state;
  if (test_tmpdir_create(g_dir, sizeof g_dir, "rocksdb_readonly_test")) return -1;
  snprintf(g_db, sizeof g_db, "%s/db", g_dir);
  snprintf(g_idx, sizeof g_idx, "%s/index", g_dir);
  return 0;
}

static int teardown(void **state) {
  (void)state;
  g_no_auto_compactions = 0;
  return test_rmrf(g_dir);
}

/* ---- The stock RocksDB program and the oracle ---------------------------------------------- */

typedef struct stock {
  rocksdb_t *db;
  rocksdb_options_t *o;
  rocksdb_writeoptions_t *wo;
} stock_t;

static void stock_open(stock_t *s) {
  s->o = rocksdb_options_create();
  rocksdb_options_set_disable_auto_compactions(s->o, g_no_auto_compactions);
  rocksdb_options_set_create_if_missing(s->o, 1);
  rocksdb_options_set_write_buffer_size(s->o, 32 << 10);
  rocksdb_options_set_level0_file_num_compaction_trigger(s->o, 2);
  rocksdb_options_set_target_file_size_base(s->o, 64 << 10);
  rocksdb_options_set_max_bytes_for_level_base(s->o, 256 << 10);
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

/* The oracle: the value of each key (NULL: absent). */
typedef struct oracle {
  char *val[NKEYS + NSD];
  size_t len[NKEYS + NSD];
} oracle_t;

static void key_name(uint32_t i, char *buf, size_t *len) {
  *len = i < NKEYS ? (size_t)sprintf(buf, "k%06u", i) : (size_t)sprintf(buf, "s%05u", i - NKEYS);
}

static size_t value_pick(rng_t *r, char *out) {
  uint64_t x = rng_next(r);
  if (x % 30 == 0) return 0;
  if (x % 5 == 0) return (size_t)sprintf(out, "u-%llu", (unsigned long long)(x >> 8) % 1000000);
  return (size_t)sprintf(out, "val-%03u", (unsigned)((x >> 16) % DOMAIN));
}

static void oracle_set(oracle_t *o, uint32_t i, const char *v, size_t vl) {
  free(o->val[i]);
  o->val[i] = NULL;
  if (!v) return;
  o->val[i] = malloc(vl + 1);
  memcpy(o->val[i], v, vl);
  o->len[i] = vl;
}

static void round_of_writes(stock_t *s, oracle_t *o, rng_t *r) {
  char k[32], v[MAXV];
  size_t kl;
  char *msg = NULL;
  for (int op = 0; op < OPS; op++) {
    uint64_t x = rng_next(r);
    if (x % 10 == 0) { /* a single-delete key: put when absent, single-delete when present */
      uint32_t i = NKEYS + (uint32_t)((x >> 8) % NSD);
      key_name(i, k, &kl);
      if (o->val[i]) {
        rocksdb_singledelete(s->db, s->wo, k, kl, &msg);
        oracle_set(o, i, NULL, 0);
      } else {
        size_t vl = value_pick(r, v);
        rocksdb_put(s->db, s->wo, k, kl, v, vl, &msg);
        oracle_set(o, i, v, vl);
      }
    } else {
      uint32_t i = (uint32_t)((x >> 8) % NKEYS);
      key_name(i, k, &kl);
      if (x % 7 == 0) {
        rocksdb_delete(s->db, s->wo, k, kl, &msg);
        oracle_set(o, i, NULL, 0);
      } else {
        size_t vl = value_pick(r, v);
        rocksdb_put(s->db, s->wo, k, kl, v, vl, &msg);
        oracle_set(o, i, v, vl);
      }
    }
    if (msg) fail_msg("rocksdb write: %s", msg);
  }
}

/* ---- Checking bfh against the oracle ------------------------------------------------------- */

typedef struct hits {
  char keys[NKEYS + NSD][16];
  size_t n;
} hits_t;

static int on_hit(void *arg, const void *key, size_t kl) {
  hits_t *h = arg;
  if (h->n < NKEYS + NSD && kl < 16) {
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

/* Every method's answer for v equals the oracle's keys. */
static void check_value(bfh_db *db, const oracle_t *o, const char *v, size_t vl, const char *when) {
  static hits_t want, got;
  want.n = 0;
  for (uint32_t i = 0; i < NKEYS + NSD; i++)
    if (o->val[i] && o->len[i] == vl && memcmp(o->val[i], v, vl) == 0) {
      size_t kl;
      key_name(i, want.keys[want.n++], &kl);
    }
  qsort(want.keys, want.n, sizeof want.keys[0], cmp_str);
  for (int m = BFH_SEARCH_SCAN; m <= BFH_SEARCH_AUTO; m++) {
    got.n = 0;
    int rc = bfh_search(db, v, vl, (bfh_method)m, on_hit, &got, NULL);
    if (rc != BFH_OK) fail_msg("%s: search '%.*s' method %d: %d %s", when, (int)vl, v, m, rc,
                               bfh_last_error(db));
    qsort(got.keys, got.n, sizeof got.keys[0], cmp_str);
    int same = got.n == want.n;
    for (size_t i = 0; same && i < got.n; i++) same = strcmp(got.keys[i], want.keys[i]) == 0;
    if (!same)
      fail_msg("%s: search '%.*s' method %d: %zu keys (first %s), the oracle has %zu (first %s)",
               when, (int)vl, v, m, got.n, got.n ? got.keys[0] : "-", want.n,
               want.n ? want.keys[0] : "-");
    g_checked++;
  }
}

static void check_all(bfh_db *db, const oracle_t *o, rng_t *r, const char *when) {
  char v[MAXV];
  check_value(db, o, "", 0, when);
  for (int j = 0; j < 6; j++) {
    size_t vl = (size_t)sprintf(v, "val-%03u", (unsigned)(rng_next(r) % DOMAIN));
    check_value(db, o, v, vl, when);
  }
  for (int j = 0; j < 3; j++) { /* a value some key holds now (often a unique one) */
    uint32_t i = (uint32_t)(rng_next(r) % (NKEYS + NSD));
    if (o->val[i]) check_value(db, o, o->val[i], o->len[i], when);
  }
  check_value(db, o, "absent-value", 12, when);
  for (int j = 0; j < 60; j++) {
    uint32_t i = (uint32_t)(rng_next(r) % (NKEYS + NSD));
    char k[32];
    size_t kl;
    key_name(i, k, &kl);
    void *val = NULL;
    size_t len = 0;
    int rc = bfh_get(db, k, kl, &val, &len);
    if (!o->val[i]) {
      if (rc != BFH_NOT_FOUND) fail_msg("%s: get %s: %d, wanted not found", when, k, rc);
    } else if (rc != BFH_OK || len != o->len[i] || (len && memcmp(val, o->val[i], len) != 0)) {
      fail_msg("%s: get %s: %d '%.*s', wanted '%.*s'", when, k, rc, rc == BFH_OK ? (int)len : 0,
               rc == BFH_OK ? (const char *)val : "", (int)o->len[i], o->val[i]);
    }
    bfh_free(val);
  }
}

static int open_ro_rc(bfh_db **db) {
  bfh_options opt;
  bfh_options_init(&opt);
  opt.engine = BFH_ENGINE_ROCKSDB;
  opt.read_only = 1;
  opt.index_dir = g_idx;
  *db = NULL;
  return bfh_open(g_db, &opt, db);
}

static bfh_db *open_ro(void) {
  bfh_db *db;
  int rc = open_ro_rc(&db);
  if (rc != BFH_OK) fail_msg("read-only open: %d %s", rc, bfh_last_error(NULL));
  return db;
}

static void test_rocksdb_readonly_model(void **state) {
  (void)state;
  static oracle_t o;
  memset(&o, 0, sizeof o);
  rng_t r;
  rng_init(&r, 20261125);
  stock_t s;
  stock_open(&s);
  round_of_writes(&s, &o, &r);
  stock_flush(&s);
  bfh_db *db = open_ro();
  char when[64];
  for (int round = 0; round < ROUNDS; round++) {
    round_of_writes(&s, &o, &r);
    if (round % 3 == 0) stock_flush(&s);
    if (round % 5 == 4) rocksdb_compact_range(s.db, NULL, 0, NULL, 0);
    if (round % 8 == 7) { /* the owner restarts: a new MANIFEST, its WAL recovered */
      stock_close(&s);
      stock_open(&s);
    }
    snprintf(when, sizeof when, "round %d", round);
    check_all(db, &o, &r, when);
  }
  /* bfh's own restart: the filters come from the index directory. */
  assert_int_equal(bfh_close(db), BFH_OK);
  db = open_ro();
  check_all(db, &o, &r, "after bfh's reopen");
  /* Writes through a read-only handle are refused. */
  assert_int_equal(bfh_put(db, "k", 1, "v", 1), BFH_E_UNSUPPORTED);
  assert_int_equal(bfh_delete(db, "k", 1), BFH_E_UNSUPPORTED);
  assert_int_equal(bfh_close(db), BFH_OK);
  stock_close(&s);
  print_message("model: %llu searches checked against the oracle\n",
                (unsigned long long)g_checked);
  for (uint32_t i = 0; i < NKEYS + NSD; i++) free(o.val[i]);
}

/* ---- Nothing written into the directory ---------------------------------------------------- */

typedef struct listing {
  char text[16384];
} listing_t;

static void list_dir(const char *dir, listing_t *l) {
  struct dirent **names;
  int n = scandir(dir, &names, NULL, alphasort);
  assert_true(n >= 0);
  size_t at = 0;
  for (int i = 0; i < n; i++) {
    char p[1024];
    struct stat st;
    snprintf(p, sizeof p, "%s/%s", dir, names[i]->d_name);
    if (strcmp(names[i]->d_name, ".") != 0 && strcmp(names[i]->d_name, "..") != 0 &&
        lstat(p, &st) == 0 && at < sizeof l->text - 200)
      at += (size_t)snprintf(l->text + at, sizeof l->text - at, "%s %lld %lld.%09ld\n",
                             names[i]->d_name, (long long)st.st_size, (long long)st.st_mtim.tv_sec,
                             st.st_mtim.tv_nsec);
    free(names[i]);
  }
  free(names);
  l->text[at] = '\0';
}

static int count_cb(void *arg, const void *key, size_t kl) {
  (void)key, (void)kl;
  ++*(size_t *)arg;
  return 0;
}

static void test_rocksdb_readonly_writes_nothing(void **state) {
  (void)state;
  static oracle_t o;
  memset(&o, 0, sizeof o);
  rng_t r;
  rng_init(&r, 7);
  stock_t s;
  stock_open(&s);
  for (int i = 0; i < 4; i++) {
    round_of_writes(&s, &o, &r);
    stock_flush(&s);
  }
  round_of_writes(&s, &o, &r); /* a WAL tail too */
  stock_close(&s);
  static listing_t before, after;
  list_dir(g_db, &before);
  bfh_db *db = open_ro();
  check_all(db, &o, &r, "idle database");
  size_t n = 0;
  bfh_iter *it;
  assert_int_equal(bfh_iter_create(db, &it), BFH_OK);
  for (bfh_iter_seek_first(it); bfh_iter_valid(it); bfh_iter_next(it)) n++;
  assert_int_equal(bfh_iter_status(it), BFH_OK);
  bfh_iter_destroy(it);
  size_t live = 0;
  for (uint32_t i = 0; i < NKEYS + NSD; i++) live += o.val[i] != NULL;
  assert_int_equal(n, live);
  bfh_db_stats st;
  assert_int_equal(bfh_stats(db, &st), BFH_OK);
  assert_true(st.tables > 0);
  size_t c = 0;
  assert_int_equal(bfh_search(db, "val-001", 7, BFH_SEARCH_AUTO, count_cb, &c, NULL), BFH_OK);
  assert_int_equal(bfh_close(db), BFH_OK);
  list_dir(g_db, &after);
  assert_string_equal(before.text, after.text);
  /* The filters went to the index directory instead. */
  char cache[700];
  snprintf(cache, sizeof cache, "%s/bfh-filters", g_idx);
  static listing_t filters;
  list_dir(cache, &filters);
  assert_true(strstr(filters.text, ".vf") != NULL);
  for (uint32_t i = 0; i < NKEYS + NSD; i++) free(o.val[i]);
}

/* ---- Refusals ------------------------------------------------------------------------------ */

static void expect_refused(bfh_db *db, const char *v, const char *what) {
  for (int m = BFH_SEARCH_SCAN; m <= BFH_SEARCH_AUTO; m++) {
    size_t c = 0;
    bfh_search_stats st;
    int rc = bfh_search(db, v, strlen(v), (bfh_method)m, count_cb, &c, &st);
    if (rc != BFH_E_UNSUPPORTED || !strstr(bfh_last_error(db), what))
      fail_msg("method %d: %d '%s', wanted BFH_E_UNSUPPORTED naming %s", m, rc,
               bfh_last_error(db), what);
  }
  print_message("refused: %s\n", bfh_last_error(db));
}

static char *full_merge(void *st, const char *key, size_t kl, const char *existing, size_t el,
                        const char *const *ops, const size_t *opl, int n, unsigned char *ok,
                        size_t *len) {
  (void)st, (void)key, (void)kl, (void)existing, (void)el;
  char *out = malloc(opl[n - 1] + 1);
  memcpy(out, ops[n - 1], opl[n - 1]);
  *len = opl[n - 1];
  *ok = 1;
  return out;
}
static char *partial_merge(void *st, const char *key, size_t kl, const char *const *ops,
                           const size_t *opl, int n, unsigned char *ok, size_t *len) {
  return full_merge(st, key, kl, NULL, 0, ops, opl, n, ok, len);
}
static void merge_free(void *st, const char *v, size_t n) {
  (void)st, (void)n;
  free((void *)v);
}
static void merge_destroy(void *st) {
  (void)st;
}
static const char *merge_name(void *st) {
  (void)st;
  return "last-wins";
}

static void test_rocksdb_readonly_merge_refused(void **state) {
  (void)state;
  rocksdb_options_t *o = rocksdb_options_create();
  rocksdb_options_set_create_if_missing(o, 1);
  rocksdb_options_set_merge_operator(
      o, rocksdb_mergeoperator_create(NULL, merge_destroy, full_merge, partial_merge, merge_free,
                                      merge_name));
  char *msg = NULL;
  rocksdb_t *rdb = rocksdb_open(o, g_db, &msg);
  assert_null(msg);
  rocksdb_writeoptions_t *wo = rocksdb_writeoptions_create();
  rocksdb_put(rdb, wo, "k1", 2, "mv", 2, &msg);
  rocksdb_merge(rdb, wo, "k2", 2, "mv", 2, &msg);
  assert_null(msg);
  rocksdb_flushoptions_t *fo = rocksdb_flushoptions_create();
  rocksdb_flush(rdb, fo, &msg);
  assert_null(msg);
  bfh_db *db = open_ro();
  expect_refused(db, "mv", "merge operand");
  assert_int_equal(bfh_close(db), BFH_OK);
  rocksdb_flushoptions_destroy(fo);
  rocksdb_writeoptions_destroy(wo);
  rocksdb_close(rdb);
  rocksdb_options_destroy(o);
}

/* ---- A flush under a refresh ------------------------------------------------------------- */

typedef struct flush_hook {
  stock_t *s;
  int armed, round;
} flush_hook_t;

static void put_batch(stock_t *s, const char *prefix, int round) {
  char *msg = NULL;
  for (int i = 0; i < 10; i++) {
    char k[16], v[32];
    int kl = sprintf(k, "f%02d", i), vl = sprintf(v, "%s-%d", prefix, round);
    rocksdb_put(s->db, s->wo, k, (size_t)kl, v, (size_t)vl, &msg);
    assert_null(msg);
  }
}

/* After the refresh read the WAL (which holds "wal-R"): overwrite with "new-R" and flush, so
   that the table holds the newer values and the WAL is gone. Once per arming. */
static void flush_hook(void *arg) {
  flush_hook_t *h = arg;
  if (!h->armed) return;
  h->armed = 0;
  put_batch(h->s, "new", h->round);
  stock_flush(h->s);
}

static void test_rocksdb_readonly_flush_under_refresh(void **state) {
  (void)state;
  g_no_auto_compactions = 1;
  stock_t s;
  stock_open(&s);
  put_batch(&s, "old", 0);
  stock_flush(&s);
  bfh_db *db = open_ro();
  engine_t *e = bfh_internal_engine(db);
  flush_hook_t h = {&s, 0, 0};
  stock_ro_set_logs_hook(e, flush_hook, &h);
  for (int m = BFH_SEARCH_SCAN; m <= BFH_SEARCH_AUTO; m++) {
    h.round = m;
    put_batch(&s, "wal", m);
    uint64_t before = stock_ro_counts(e).retries;
    h.armed = 1;
    char v[32];
    size_t c = 0;
    int vl = sprintf(v, "new-%d", m);
    assert_int_equal(bfh_search(db, v, (size_t)vl, (bfh_method)m, count_cb, &c, NULL), BFH_OK);
    assert_int_equal(h.armed, 0);
    if (c != 10) fail_msg("method %d: %zu keys hold '%s', wanted 10", m, c, v);
    assert_true(stock_ro_counts(e).retries > before);
    vl = sprintf(v, "wal-%d", m);
    c = 0;
    assert_int_equal(bfh_search(db, v, (size_t)vl, (bfh_method)m, count_cb, &c, NULL), BFH_OK);
    assert_int_equal(c, 0);
  }
  stock_ro_set_logs_hook(e, NULL, NULL);
  assert_int_equal(bfh_close(db), BFH_OK);
  stock_close(&s);
}

/* The size of the newest WAL of the database (0: none). */
static uint64_t newest_wal_size(void) {
  DIR *d = opendir(g_db);
  assert_non_null(d);
  struct dirent *de;
  unsigned long long best = 0;
  int found = 0;
  while ((de = readdir(d))) {
    unsigned long long n;
    char tail[8];
    if (sscanf(de->d_name, "%llu.%7s", &n, tail) == 2 && strcmp(tail, "log") == 0 &&
        (!found || n > best))
      best = n, found = 1;
  }
  closedir(d);
  if (!found) return 0;
  char p[700];
  snprintf(p, sizeof p, "%s/%06llu.log", g_db, best);
  struct stat st;
  assert_int_equal(stat(p, &st), 0);
  return (uint64_t)st.st_size;
}

static size_t search_count(bfh_db *db, const char *v) {
  size_t c = 0;
  assert_int_equal(bfh_search(db, v, strlen(v), BFH_SEARCH_AUTO, count_cb, &c, NULL), BFH_OK);
  return c;
}

static void test_rocksdb_readonly_refresh_watch(void **state) {
  (void)state;
  g_no_auto_compactions = 1;
  stock_t s;
  stock_open(&s);
  put_batch(&s, "old", 0);
  stock_flush(&s);
  put_batch(&s, "wal", 0);
  bfh_db *db = open_ro();
  engine_t *e = bfh_internal_engine(db);
  /* The writer's last background work (RocksDB deletes obsolete files after a flush, on a
     thread of its own) may still reach the directory after the open: wait, bounded, until a
     search finds nothing new to refresh, so that what follows starts from a quiet directory. */
  for (int quiet = 0, tries = 0; quiet < 3 && tries < 500; tries++) {
    uint64_t before = stock_ro_counts(e).refreshes;
    assert_int_equal(search_count(db, "absent"), 0);
    quiet = stock_ro_counts(e).refreshes == before ? quiet + 1 : 0;
    if (quiet < 3) test_sleep_ms(10);
  }
  /* Nothing written: the watch spares every read of CURRENT, the MANIFEST and the WALs. */
  uint64_t refreshes = stock_ro_counts(e).refreshes, wal = stock_ro_counts(e).log_bytes;
  assert_int_equal(search_count(db, "wal-0"), 10);
  for (int i = 0; i < 20; i++) assert_int_equal(search_count(db, "absent"), 0);
  assert_int_equal(stock_ro_counts(e).refreshes, refreshes);
  assert_int_equal(stock_ro_counts(e).log_bytes, wal);
  char *msg = NULL;
  for (int i = 0; i < 30; i++) {
    char k[16], v[32];
    int kl = sprintf(k, "n%03d", i);
    sprintf(v, "new-%03d", i);
    if (i % 10 == 9) { /* the owner reopens: a new MANIFEST, CURRENT renamed, a new WAL */
      stock_close(&s);
      stock_open(&s);
    }
    uint64_t size = newest_wal_size(), read = stock_ro_counts(e).log_bytes;
    rocksdb_put(s.db, s.wo, k, (size_t)kl, v, strlen(v), &msg);
    assert_null(msg);
    if (i % 10 == 4) stock_flush(&s); /* into a table; the WAL goes */
    if (search_count(db, v) != 1) fail_msg("put %d: '%s' not found by the next search", i, v);
    if (i % 5 != 4 && i % 10 != 9) { /* the same WAL grew: only its new tail was read */
      uint64_t grew = newest_wal_size() - size, got = stock_ro_counts(e).log_bytes - read;
      if (got != grew)
        fail_msg("put %d: the WAL grew by %llu bytes and the refresh read %llu", i,
                 (unsigned long long)grew, (unsigned long long)got);
    }
  }
  assert_int_equal(search_count(db, "wal-0"), 10);
  assert_int_equal(bfh_close(db), BFH_OK);
  stock_close(&s);
}

/* ---- Value-to-block maps in the filter cache ------------------------------------------------ */

/* With an index directory each table's value-to-block map is kept in its cache file (leaf_cache.h)
   and read there in place of its block filter: a search of a value a table holds reads a chunk
   of the map (and the block it names); every value is found once, an absent one never. The
   same after bfh's reopen (the maps loaded from the cache files). Without an index directory
   there is no map: the block filters serve, no chunk is read, the answers are the same. */
static void test_rocksdb_readonly_block_maps(void **state) {
  (void)state;
  g_no_auto_compactions = 1;
  enum { N = 3000 };
  stock_t s;
  stock_open(&s);
  char *msg = NULL;
  for (uint32_t i = 0; i < N; i++) {
    char k[16], v[32];
    int kl = sprintf(k, "m%05u", i), vl = sprintf(v, "map-value-%05u", i);
    rocksdb_put(s.db, s.wo, k, (size_t)kl, v, (size_t)vl, &msg);
    assert_null(msg);
  }
  stock_flush(&s);
  for (int pass = 0; pass < 3; pass++) {
    bfh_options opt;
    bfh_options_init(&opt);
    opt.engine = BFH_ENGINE_ROCKSDB;
    opt.read_only = 1;
    opt.index_dir = pass < 2 ? g_idx : NULL; /* pass 1: the cache files of pass 0 */
    bfh_db *db = NULL;
    if (bfh_open(g_db, &opt, &db) != BFH_OK) fail_msg("open: %s", bfh_last_error(NULL));
    uint64_t chunks = 0, present = 0;
    for (uint32_t i = 0; i < N; i += 23, present++) {
      char v[32];
      int vl = sprintf(v, "map-value-%05u", i);
      size_t hits = 0;
      bfh_search_stats st;
      assert_int_equal(bfh_search(db, v, (size_t)vl, BFH_SEARCH_AUTO, count_cb, &hits, &st),
                       BFH_OK);
      if (hits != 1) fail_msg("pass %d: '%s' found %zu times", pass, v, hits);
      chunks += st.map_chunks_read;
    }
    for (int i = 0; i < 50; i++) {
      char v[32];
      int vl = sprintf(v, "map-value-absent-%d", i);
      size_t hits = 0;
      assert_int_equal(bfh_search(db, v, (size_t)vl, BFH_SEARCH_AUTO, count_cb, &hits, NULL),
                       BFH_OK);
      assert_int_equal(hits, 0);
    }
    if (pass < 2 && chunks < present)
      fail_msg("pass %d: %llu chunks of maps read by %llu searches of present values", pass,
               (unsigned long long)chunks, (unsigned long long)present);
    if (pass == 2) assert_int_equal(chunks, 0);
    assert_int_equal(bfh_close(db), BFH_OK);
  }
  stock_close(&s);
}

/* A table too large for a map (more than VALUE_BLOCK_MAP_MAX_BLOCKS blocks: here 70,000 one-entry
   blocks, block_size 1) gets no map where maps are asked for, and its block filter, which every
   search then probes, is stated for RDB_BLOCK_REF_BLOCKS_UNMAPPED (16) blocks: 10 + ceil(log2(B /
   16) / -log2(0.6185)) bits per value at B blocks, ~0.1 block passed in vain per probe. Asked for
   no map, the same table keeps the filter stated for 128 blocks; a small table gets its map and
   that filter. Read through rdb_leaf_read_tapped, as the read-only row's read_leaf reads. */
static uint32_t scaled(uint32_t bits, uint32_t blocks, uint32_t ref) {
  return bits + (blocks > ref ? (uint32_t)ceil(log2((double)blocks / ref) / -log2(0.6185)) : 0);
}

static void test_rocksdb_readonly_unmapped_table_sharper(void **state) {
  (void)state;
  const uint32_t sizes[2] = {70000, 2000};
  for (int t = 0; t < 2; t++) {
    char db[700];
    snprintf(db, sizeof db, "%s/big%d", g_dir, t);
    rocksdb_options_t *o = rocksdb_options_create();
    rocksdb_options_set_create_if_missing(o, 1);
    rocksdb_options_set_disable_auto_compactions(o, 1);
    rocksdb_options_set_compression(o, rocksdb_no_compression);
    rocksdb_options_set_write_buffer_size(o, 64 << 20);
    rocksdb_block_based_table_options_t *bo = rocksdb_block_based_options_create();
    rocksdb_block_based_options_set_block_size(bo, 1); /* one entry per block */
    rocksdb_options_set_block_based_table_factory(o, bo);
    char *msg = NULL;
    rocksdb_t *rdb = rocksdb_open(o, db, &msg);
    if (msg) fail_msg("rocksdb_open: %s", msg);
    rocksdb_writeoptions_t *wo = rocksdb_writeoptions_create();
    rocksdb_writeoptions_disable_WAL(wo, 1);
    for (uint32_t i = 0; i < sizes[t]; i++) {
      char k[16], v[16];
      int kl = sprintf(k, "k%06u", i), vl = sprintf(v, "v%06u", i);
      rocksdb_put(rdb, wo, k, (size_t)kl, v, (size_t)vl, &msg);
      assert_null(msg);
    }
    rocksdb_flushoptions_t *fo = rocksdb_flushoptions_create();
    rocksdb_flush(rdb, fo, &msg);
    assert_null(msg);
    const rocksdb_livefiles_t *lf = rocksdb_livefiles(rdb);
    assert_int_equal(rocksdb_livefiles_count(lf), 1);
    char path[800];
    snprintf(path, sizeof path, "%s%s", db, rocksdb_livefiles_name(lf, 0));
    rocksdb_livefiles_destroy(lf);
    value_index_params_t p = {.m = 1 << 16, .k = 3, .seed = 7, .block_bits = 10};
    for (int want_map = 0; want_map < 2; want_map++) {
      env_rfile_t *f = NULL;
      err_t err;
      assert_int_equal(env_open_read(env_default(), path, &f, &err), BFH_OK);
      index_leaf_read_t out;
      memset(&out, 0, sizeof out);
      out.want_map = want_map;
      if (rdb_leaf_read_tapped(f, path, &p, NULL, &out, &err) != BFH_OK) fail_msg("%s", err.msg);
      env_rfile_close(f);
      uint32_t blocks = block_filter_blocks(out.blocks);
      assert_int_equal(blocks, sizes[t]);
      int mapped = want_map && blocks <= VALUE_BLOCK_MAP_MAX_BLOCKS;
      if (mapped != (out.map_head != NULL))
        fail_msg("%u blocks, map asked %d: map %s", blocks, want_map, out.map_head ? "made" : "none");
      uint32_t want = scaled(10, blocks, want_map && !mapped ? 16 : 128);
      if (block_filter_bits_per_value(out.blocks) != want)
        fail_msg("%u blocks, map asked %d: %u bits per value, wanted %u", blocks, want_map,
                 block_filter_bits_per_value(out.blocks), want);
      value_filter_destroy(out.filter);
      block_filter_destroy(out.blocks);
      free(out.map_head);
      free(out.map_chunks);
    }
    rocksdb_flushoptions_destroy(fo);
    rocksdb_writeoptions_destroy(wo);
    rocksdb_close(rdb);
    rocksdb_options_destroy(o);
    rocksdb_block_based_options_destroy(bo);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_rocksdb_readonly_model, setup, teardown),
      cmocka_unit_test_setup_teardown(test_rocksdb_readonly_writes_nothing, setup, teardown),
      cmocka_unit_test_setup_teardown(test_rocksdb_readonly_flush_under_refresh, setup, teardown),
      cmocka_unit_test_setup_teardown(test_rocksdb_readonly_refresh_watch, setup, teardown),
      cmocka_unit_test_setup_teardown(test_rocksdb_readonly_merge_refused, setup, teardown),
      cmocka_unit_test_setup_teardown(test_rocksdb_readonly_block_maps, setup, teardown),
      cmocka_unit_test_setup_teardown(test_rocksdb_readonly_unmapped_table_sharper, setup,
                                      teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

/* The read-only RocksDB engine on tables added with IngestExternalFile, through the public API.
 * A stock RocksDB handle in this process (auto compactions off: the shape is the same at every
 * run) writes keys k000..k199 and pushes them to the last level; a DeleteRange [k050, k100)
 * goes to its memtable; then files written with SstFileWriter are ingested (RocksDB flushes
 * the memtable first and gives each file the next sequence number, its global sequence
 * number, recorded in the MANIFEST only): one holding k060 and k070 (under the DeleteRange)
 * and overwrites of k150..k159 and a new key k250, one holding a DeleteRange [k010, k020) and
 * an overwrite of k030, then a few writes stay in the WAL. Every entry of an ingested file is
 * stored at sequence 0: read so, k060 would look older than the DeleteRange over it, the
 * ingested DeleteRange (at sequence 0, "none") would delete nothing, and the older values of
 * k150..k159 would win the iterator. The oracle is RocksDB's own answers (rocksdb_get of every
 * key): every search method (CUCKOO included), bfh_get of every key and an iterator are
 * checked against it, with the database open by bfh before the ingestions and after a reopen.
 * Without the global sequence numbers (rdb_readonly.c's seq_of returning the stored sequence)
 * this test fails at its first check. The corruption cases of rdb_table_global_seqno (RocksDB's
 * reader's) are checked on properties made up here.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <rocksdb/c.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bfh.h"
#include "lsm_hooks/rocksdb_format/rdb_table.h"
#include "tests/test_util.h"
#include "util/env.h"

#define NKEYS 300u
#define MAXV 32

static char g_dir[512], g_db[600], g_idx[600];

static int setup(void **state) {
  (void)state;
  if (test_tmpdir_create(g_dir, sizeof g_dir, "rocksdb_readonly_ingest_test")) return -1;
  snprintf(g_db, sizeof g_db, "%s/db", g_dir);
  snprintf(g_idx, sizeof g_idx, "%s/index", g_dir);
  return 0;
}

static int teardown(void **state) {
  (void)state;
  return test_rmrf(g_dir);
}

static size_t key_name(uint32_t i, char *buf) {
  return (size_t)sprintf(buf, "k%03u", i);
}

/* ---- The stock RocksDB program ------------------------------------------------------------- */

typedef struct stock {
  rocksdb_t *db;
  rocksdb_options_t *o;
  rocksdb_writeoptions_t *wo;
  rocksdb_readoptions_t *ro;
  int files;
} stock_t;

static void check_msg(char *msg, const char *what) {
  if (msg) fail_msg("%s: %s", what, msg);
}

static void stock_put(stock_t *s, uint32_t i, const char *v) {
  char k[16], *msg = NULL;
  size_t kl = key_name(i, k);
  rocksdb_put(s->db, s->wo, k, kl, v, strlen(v), &msg);
  check_msg(msg, "rocksdb_put");
}

static void stock_delete_range(stock_t *s, uint32_t b, uint32_t e) {
  char kb[16], ke[16], *msg = NULL;
  size_t bl = key_name(b, kb), el = key_name(e, ke);
  rocksdb_writebatch_t *wb = rocksdb_writebatch_create();
  rocksdb_writebatch_delete_range(wb, kb, bl, ke, el);
  rocksdb_write(s->db, s->wo, wb, &msg);
  rocksdb_writebatch_destroy(wb);
  check_msg(msg, "delete_range");
}

/* An SstFileWriter file: puts[] (key, value; ascending keys) and, when rb < re, a DeleteRange
   [k rb, k re); then ingested with the default options (write_global_seqno false in 7.8.3). */
typedef struct kv {
  uint32_t k;
  const char *v;
} kv_t;

static void stock_ingest(stock_t *s, const kv_t *puts, size_t n, uint32_t rb, uint32_t re) {
  char path[700], k[16], k2[16], *msg = NULL;
  snprintf(path, sizeof path, "%s/ingest-%d.sst", g_dir, s->files++);
  rocksdb_envoptions_t *eo = rocksdb_envoptions_create();
  rocksdb_sstfilewriter_t *w = rocksdb_sstfilewriter_create(eo, s->o);
  rocksdb_sstfilewriter_open(w, path, &msg);
  check_msg(msg, "sstfilewriter_open");
  for (size_t i = 0; i < n; i++) {
    size_t kl = key_name(puts[i].k, k);
    rocksdb_sstfilewriter_put(w, k, kl, puts[i].v, strlen(puts[i].v), &msg);
    check_msg(msg, "sstfilewriter_put");
  }
  if (rb < re) {
    size_t bl = key_name(rb, k), el = key_name(re, k2);
    rocksdb_sstfilewriter_delete_range(w, k, bl, k2, el, &msg);
    check_msg(msg, "sstfilewriter_delete_range");
  }
  rocksdb_sstfilewriter_finish(w, &msg);
  check_msg(msg, "sstfilewriter_finish");
  rocksdb_sstfilewriter_destroy(w);
  rocksdb_envoptions_destroy(eo);
  rocksdb_ingestexternalfileoptions_t *io = rocksdb_ingestexternalfileoptions_create();
  const char *files[1] = {path};
  rocksdb_ingest_external_file(s->db, files, 1, io, &msg);
  check_msg(msg, "ingest_external_file");
  rocksdb_ingestexternalfileoptions_destroy(io);
}

/* ---- The oracle: RocksDB's own answers ------------------------------------------------------ */

typedef struct oracle {
  char *val[NKEYS];
  size_t len[NKEYS];
} oracle_t;

static void oracle_free(oracle_t *o) {
  for (uint32_t i = 0; i < NKEYS; i++) free(o->val[i]), o->val[i] = NULL;
}

static void oracle_read(stock_t *s, oracle_t *o) {
  oracle_free(o);
  for (uint32_t i = 0; i < NKEYS; i++) {
    char k[16], *msg = NULL;
    size_t kl = key_name(i, k), vl = 0;
    char *v = rocksdb_get(s->db, s->ro, k, kl, &vl, &msg);
    check_msg(msg, "rocksdb_get");
    if (!v) continue;
    o->val[i] = malloc(vl + 1);
    memcpy(o->val[i], v, vl);
    o->val[i][vl] = '\0';
    o->len[i] = vl;
    rocksdb_free(v);
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

static const bfh_method k_methods[] = {BFH_SEARCH_SCAN,   BFH_SEARCH_LEAVES, BFH_SEARCH_HIERARCHY,
                                       BFH_SEARCH_SLICED, BFH_SEARCH_AUTO,   BFH_SEARCH_CUCKOO};
static uint64_t g_checked;

static void check_value(bfh_db *db, const oracle_t *o, const char *v, const char *when) {
  static hits_t want, got;
  size_t vl = strlen(v);
  want.n = 0;
  for (uint32_t i = 0; i < NKEYS; i++)
    if (o->val[i] && o->len[i] == vl && memcmp(o->val[i], v, vl) == 0)
      key_name(i, want.keys[want.n++]);
  for (size_t m = 0; m < sizeof k_methods / sizeof k_methods[0]; m++) {
    got.n = 0;
    int rc = bfh_search(db, v, vl, k_methods[m], on_hit, &got, NULL);
    if (rc != BFH_OK)
      fail_msg("%s: search '%s' method %d: %d %s", when, v, (int)k_methods[m], rc,
               bfh_last_error(db));
    qsort(got.keys, got.n, sizeof got.keys[0], cmp_str);
    int same = got.n == want.n;
    for (size_t i = 0; same && i < got.n; i++) same = strcmp(got.keys[i], want.keys[i]) == 0;
    if (!same)
      fail_msg("%s: search '%s' method %d: %zu keys (first %s), RocksDB has %zu (first %s)", when,
               v, (int)k_methods[m], got.n, got.n ? got.keys[0] : "-", want.n,
               want.n ? want.keys[0] : "-");
    g_checked++;
  }
}

static void check_all(bfh_db *db, const oracle_t *o, const char *when) {
  static const char *values[] = {"old", "new", "wal", "x", "gone"};
  for (size_t j = 0; j < sizeof values / sizeof values[0]; j++) check_value(db, o, values[j], when);
  for (uint32_t i = 0; i < NKEYS; i++) {
    char k[16];
    size_t kl = key_name(i, k);
    void *val = NULL;
    size_t len = 0;
    int rc = bfh_get(db, k, kl, &val, &len);
    if (!o->val[i]) {
      if (rc != BFH_NOT_FOUND) fail_msg("%s: get %s: %d, RocksDB has none", when, k, rc);
    } else if (rc != BFH_OK || len != o->len[i] || (len && memcmp(val, o->val[i], len) != 0)) {
      fail_msg("%s: get %s: %d '%.*s', RocksDB has '%s'", when, k, rc, rc == BFH_OK ? (int)len : 0,
               rc == BFH_OK ? (const char *)val : "", o->val[i]);
    }
    bfh_free(val);
  }
  bfh_iter *it;
  assert_int_equal(bfh_iter_create(db, &it), BFH_OK);
  bfh_iter_seek_first(it);
  for (uint32_t i = 0; i < NKEYS; i++) {
    if (!o->val[i]) continue;
    char k[16];
    size_t kl = key_name(i, k), gl, vl;
    if (!bfh_iter_valid(it)) fail_msg("%s: iterator: ended before %s", when, k);
    const char *gk = bfh_iter_key(it, &gl), *gv = bfh_iter_value(it, &vl);
    if (gl != kl || memcmp(gk, k, kl) != 0 || vl != o->len[i] || memcmp(gv, o->val[i], vl) != 0)
      fail_msg("%s: iterator: '%.*s' = '%.*s' where RocksDB has %s = '%s'", when, (int)gl, gk,
               (int)vl, gv, k, o->val[i]);
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

static void test_rocksdb_readonly_ingest(void **state) {
  (void)state;
  stock_t s = {0};
  s.o = rocksdb_options_create();
  rocksdb_options_set_create_if_missing(s.o, 1);
  rocksdb_options_set_disable_auto_compactions(s.o, 1);
  char *msg = NULL;
  s.db = rocksdb_open(s.o, g_db, &msg);
  check_msg(msg, "rocksdb_open");
  s.wo = rocksdb_writeoptions_create();
  s.ro = rocksdb_readoptions_create();

  for (uint32_t i = 0; i < 200; i++) stock_put(&s, i, "old");
  rocksdb_compact_range(s.db, NULL, 0, NULL, 0); /* flushed and moved to the last level */
  bfh_db *db = open_ro();                       /* open before the ingestions: refreshed */
  stock_delete_range(&s, 50, 100);              /* in the memtable (WAL) */
  static const kv_t a[] = {{60, "new"}, {70, "new"}, {150, "new"}, {151, "new"}, {152, "new"},
                           {153, "new"}, {154, "new"}, {155, "new"}, {156, "new"}, {157, "new"},
                           {158, "new"}, {159, "new"}, {250, "new"}};
  stock_ingest(&s, a, sizeof a / sizeof a[0], 0, 0); /* over the DeleteRange: flushed first */
  static const kv_t b[] = {{30, "x"}};
  stock_ingest(&s, b, 1, 10, 20); /* a DeleteRange [k010, k020) of its own */
  stock_put(&s, 155, "wal");      /* newer than the ingested file, in the WAL */
  stock_put(&s, 15, "gone");      /* over the ingested DeleteRange: newer, so there */

  static oracle_t o;
  oracle_read(&s, &o);
  /* The scenario holds what it says, as RocksDB answers it. */
  assert_string_equal(o.val[60], "new");
  assert_null(o.val[61]);
  assert_string_equal(o.val[150], "new");
  assert_string_equal(o.val[155], "wal");
  assert_null(o.val[12]);
  assert_string_equal(o.val[15], "gone");
  assert_string_equal(o.val[30], "x");
  assert_string_equal(o.val[250], "new");

  check_all(db, &o, "open before the ingestions");
  assert_int_equal(bfh_close(db), BFH_OK);
  db = open_ro();
  check_all(db, &o, "reopened");
  assert_int_equal(bfh_close(db), BFH_OK);

  /* Compacted, the ingested entries get real sequences: still the same answers. */
  rocksdb_compact_range(s.db, NULL, 0, NULL, 0);
  oracle_read(&s, &o);
  db = open_ro();
  check_all(db, &o, "after a full compaction");
  assert_int_equal(bfh_close(db), BFH_OK);
  print_message("%llu searches checked against RocksDB's answers\n",
                (unsigned long long)g_checked);

  oracle_free(&o);
  rocksdb_readoptions_destroy(s.ro);
  rocksdb_writeoptions_destroy(s.wo);
  rocksdb_close(s.db);
  rocksdb_options_destroy(s.o);
}

/* RocksDB's reader's rules (GetGlobalSequenceNumber), on properties made up here. */
static void test_rdb_table_global_seqno(void **state) {
  (void)state;
  err_t e;
  uint64_t g;
  rdb_table_props_t p = {0};
  assert_int_equal(rdb_table_global_seqno(&p, "t", 9, &g, &e), BFH_OK); /* not ingested */
  assert_true(g == RDB_NO_GLOBAL_SEQNO);
  p.has_ext_global_seqno = 1;
  assert_int_equal(rdb_table_global_seqno(&p, "t", 9, &g, &e), BFH_E_CORRUPT);
  p.has_ext_version = 1;
  p.ext_version = 1; /* version 1: no global sequence number allowed */
  assert_int_equal(rdb_table_global_seqno(&p, "t", 9, &g, &e), BFH_E_CORRUPT);
  p.has_ext_global_seqno = 0;
  assert_int_equal(rdb_table_global_seqno(&p, "t", 9, &g, &e), BFH_OK);
  assert_true(g == RDB_NO_GLOBAL_SEQNO);
  p.ext_version = 2; /* from the MANIFEST */
  assert_int_equal(rdb_table_global_seqno(&p, "t", 9, &g, &e), BFH_OK);
  assert_true(g == 9);
  p.has_ext_global_seqno = 1; /* written into the file: must agree */
  p.ext_global_seqno = 9;
  assert_int_equal(rdb_table_global_seqno(&p, "t", 9, &g, &e), BFH_OK);
  assert_true(g == 9);
  assert_int_equal(rdb_table_global_seqno(&p, "t", 8, &g, &e), BFH_E_CORRUPT);
  assert_non_null(strstr(e.msg, "table t"));
  p.ext_global_seqno = RDB_MAX_SEQNO + 1; /* largest unknown, too large */
  assert_int_equal(rdb_table_global_seqno(&p, "t", UINT64_MAX, &g, &e), BFH_E_CORRUPT);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_rdb_table_global_seqno),
      cmocka_unit_test_setup_teardown(test_rocksdb_readonly_ingest, setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

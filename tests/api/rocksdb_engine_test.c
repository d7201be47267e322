/* The public API (include/bfh.h) on BFH_ENGINE_ROCKSDB (lsm_hooks/engines/rocksdb/):
 *   - a database written by a stock RocksDB program through the C API with default options
 *     (snappy, format_version 5; several levels after a compaction; overwrites, deletions,
 *     the empty value, an unflushed WAL tail recovered at bfh's open), searched by every
 *     method against an oracle made with a RocksDB iterator before bfh opens it;
 *   - writes through bfh found before any flush (the WAL read), after a flush and a reopen;
 *   - refusals: merge operands (written with a merge operator bfh does not have) and blob
 *     references (enable_blob_files) give BFH_E_UNSUPPORTED naming them, never an answer;
 *   - engine detection: a RocksDB directory opened as LevelDB (read-write and read-only) or as
 *     the own engine, and a LevelDB or own-engine directory opened as RocksDB, give
 *     BFH_E_INVALID naming the right engine, and leave the directory as it was;
 *   - the WAL read's transient errors (RocksDB's "Try again", a WAL a purge removed), made by a
 *     test hook: retried from a new iterator, bounded, and past the bound an error that says
 *     so; any other error is not retried.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <dirent.h>
#include <leveldb/c.h>
#include <rocksdb/c.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "bfh.h"
/* Not public (api/testbed.h): the RocksDB engine's WAL hook and its count of transient
   errors. */
#include "api/testbed.h"
#include "tests/test_util.h"
#include "util/random.h"

#define NKEYS 20000u
#define DOMAIN 500u /* shared values "val-%04u" */
#define MAXV 64

static char g_dir[512];

static int setup(void **state) {
  (void)state;
  return test_tmpdir_create(g_dir, sizeof g_dir, "rocksdb_engine_test");
}

static int teardown(void **state) {
  (void)state;
  return test_rmrf(g_dir);
}

static void key_of(uint32_t i, char *buf, size_t *len) {
  *len = (size_t)sprintf(buf, "k%08u", i);
}

/* The value of key i in round r: empty, unique, or one of the domain's. */
static size_t value_of(uint32_t i, uint32_t r, char *out) {
  uint32_t h = (i * 2654435761u) ^ (r * 40503u);
  if (h % 50 == 0) return 0;
  if (h % 7 == 0) return (size_t)sprintf(out, "unique-%u-%u", i, r);
  return (size_t)sprintf(out, "val-%04u", h % DOMAIN);
}

/* ---- A stock RocksDB program --------------------------------------------------------------- */

static rocksdb_t *stock_open(rocksdb_options_t *o) {
  char *msg = NULL;
  rocksdb_options_set_create_if_missing(o, 1);
  rocksdb_t *db = rocksdb_open(o, g_dir, &msg);
  if (msg) fail_msg("rocksdb_open: %s", msg);
  return db;
}

static void stock_put(rocksdb_t *db, const char *k, size_t kl, const char *v, size_t vl) {
  rocksdb_writeoptions_t *wo = rocksdb_writeoptions_create();
  char *msg = NULL;
  rocksdb_put(db, wo, k, kl, v, vl, &msg);
  rocksdb_writeoptions_destroy(wo);
  if (msg) fail_msg("rocksdb_put: %s", msg);
}

static void stock_flush(rocksdb_t *db) {
  rocksdb_flushoptions_t *fo = rocksdb_flushoptions_create();
  char *msg = NULL;
  rocksdb_flush(db, fo, &msg);
  rocksdb_flushoptions_destroy(fo);
  if (msg) fail_msg("rocksdb_flush: %s", msg);
}

/* ---- Searching against an oracle ---------------------------------------------------------- */

typedef struct found {
  uint8_t seen[NKEYS];
  size_t n, dups, unknown;
} found_t;

static int on_match(void *arg, const void *key, size_t len) {
  found_t *f = arg;
  char buf[16];
  unsigned i;
  if (len != 9 || (memcpy(buf, key, 9), buf[9] = 0, sscanf(buf, "k%08u", &i) != 1) || i >= NKEYS)
    f->unknown++;
  else if (f->seen[i]++)
    f->dups++;
  else
    f->n++;
  return 0;
}

/* The oracle: the live value of every key (len -1: none), read back with a RocksDB iterator. */
typedef struct oracle {
  int len[NKEYS];
  char val[NKEYS][MAXV];
} oracle_t;

static void oracle_read(rocksdb_t *db, oracle_t *o) {
  for (uint32_t i = 0; i < NKEYS; i++) o->len[i] = -1;
  rocksdb_readoptions_t *ro = rocksdb_readoptions_create();
  rocksdb_iterator_t *it = rocksdb_create_iterator(db, ro);
  for (rocksdb_iter_seek_to_first(it); rocksdb_iter_valid(it); rocksdb_iter_next(it)) {
    size_t kl, vl;
    const char *k = rocksdb_iter_key(it, &kl), *v = rocksdb_iter_value(it, &vl);
    char buf[16];
    unsigned i;
    assert_true(kl == 9 && vl < MAXV);
    memcpy(buf, k, 9);
    buf[9] = 0;
    assert_int_equal(sscanf(buf, "k%08u", &i), 1);
    o->len[i] = (int)vl;
    memcpy(o->val[i], v, vl);
  }
  rocksdb_iter_destroy(it);
  rocksdb_readoptions_destroy(ro);
}

/* Searches val by every method; each must report exactly the oracle's keys. Returns how many
   keys hold it. */
static size_t check_value(bfh_db *db, const oracle_t *o, const char *val, size_t len) {
  size_t want = 0;
  for (uint32_t i = 0; i < NKEYS; i++)
    want += o->len[i] == (int)len && memcmp(o->val[i], val, len) == 0;
  for (int m = BFH_SEARCH_SCAN; m <= BFH_SEARCH_AUTO; m++) {
    found_t *f = calloc(1, sizeof *f);
    assert_non_null(f);
    bfh_search_stats st;
    int rc = bfh_search(db, len ? val : NULL, len, (bfh_method)m, on_match, f, &st);
    if (rc != BFH_OK) fail_msg("search method %d: %d %s", m, rc, bfh_last_error(db));
    for (uint32_t i = 0; i < NKEYS; i++) {
      int in = o->len[i] == (int)len && memcmp(o->val[i], val, len) == 0;
      if (in != f->seen[i])
        fail_msg("method %d value '%.*s': key %u oracle %d bfh %d", m, (int)len, val, i, in,
                 f->seen[i]);
    }
    assert_int_equal(f->dups + f->unknown, 0);
    assert_int_equal(st.results, want);
    free(f);
  }
  return want;
}

static void open_rocksdb(bfh_db **db) {
  bfh_options o;
  bfh_options_init(&o);
  o.engine = BFH_ENGINE_ROCKSDB;
  o.value_filter_bits = 1 << 16;
  int rc = bfh_open(g_dir, &o, db);
  if (rc != BFH_OK) fail_msg("bfh_open: %d %s", rc, bfh_last_error(NULL));
}

static int on_table(void *arg, const bfh_table_info *t) {
  int *max_level = arg;
  if (t->level > *max_level) *max_level = t->level;
  return 0;
}

/* Deletes the keys [from, to) with one range tombstone. */
static void range_delete(rocksdb_t *db, rocksdb_writeoptions_t *wo, uint32_t from, uint32_t to) {
  char b[16], e[16];
  size_t bl, el;
  key_of(from, b, &bl);
  key_of(to, e, &el);
  rocksdb_writebatch_t *wb = rocksdb_writebatch_create();
  rocksdb_writebatch_delete_range(wb, b, bl, e, el);
  char *msg = NULL;
  rocksdb_write(db, wo, wb, &msg);
  rocksdb_writebatch_destroy(wb);
  if (msg) fail_msg("delete_range: %s", msg);
}

/* A database written by a stock program with RocksDB's defaults (range deletions included),
   then searched by bfh. */
static void test_rocksdb_stock_database(void **state) {
  (void)state;
  rocksdb_options_t *opt = rocksdb_options_create();
  rocksdb_t *db = stock_open(opt);
  char k[16], v[MAXV];
  size_t kl;
  for (uint32_t r = 0; r < 3; r++) {
    for (uint32_t i = 0; i < NKEYS; i++) {
      if ((i + r) % 5 == 0 && r > 0) continue; /* some keys keep an older round's value */
      key_of(i, k, &kl);
      stock_put(db, k, kl, v, value_of(i, r, v));
    }
    stock_flush(db);
  }
  rocksdb_compact_range(db, NULL, 0, NULL, 0); /* down to level 1 and beyond */
  rocksdb_writeoptions_t *wo = rocksdb_writeoptions_create();
  /* Range deletions, one flushed into a level-0 table above the compacted keys and one left
     in the WAL: the entries they cover are still in the older tables, and every method must
     drop them (the validation's get sees the tombstones). */
  range_delete(db, wo, NKEYS / 10, NKEYS / 10 + 97);
  stock_flush(db);
  range_delete(db, wo, NKEYS / 2, NKEYS / 2 + 89);
  for (uint32_t i = 0; i < NKEYS; i += 13) { /* deletions and a last round left in the WAL */
    char *msg = NULL;
    key_of(i, k, &kl);
    if (i % 2)
      rocksdb_delete(db, wo, k, kl, &msg);
    else
      rocksdb_put(db, wo, k, kl, v, value_of(i, 9, v), &msg);
    if (msg) fail_msg("write: %s", msg);
  }
  rocksdb_writeoptions_destroy(wo);
  oracle_t *o = calloc(1, sizeof *o);
  assert_non_null(o);
  oracle_read(db, o);
  rocksdb_close(db);
  rocksdb_options_destroy(opt);

  bfh_db *h;
  open_rocksdb(&h);
  int max_level = 0;
  assert_int_equal(bfh_tables(h, on_table, &max_level), BFH_OK);
  assert_true(max_level >= 1);
  size_t present = 0;
  for (uint32_t d = 0; d < DOMAIN; d += 9) {
    char val[32];
    present += check_value(h, o, val, (size_t)sprintf(val, "val-%04u", d)) > 0;
  }
  assert_true(present > 0);
  assert_true(check_value(h, o, "", 0) > 0);                  /* the empty value */
  check_value(h, o, "unique-7-0", 10);                        /* maybe overwritten */
  assert_int_equal(check_value(h, o, "absent-value", 12), 0); /* absent */
  /* (keys 13j are written again after the tombstones, the even ones with a value) */
  uint32_t probes[] = {NKEYS / 10, NKEYS / 10 + 50, NKEYS / 2 + 1, NKEYS / 2 + 87};
  for (size_t p = 0; p < sizeof probes / sizeof probes[0]; p++) {
    assert_true(o->len[probes[p]] < 0); /* the oracle saw the tombstones */
  }
  for (uint32_t i = 0; i < NKEYS; i += 997) {
    void *got = NULL;
    size_t gl = 0;
    key_of(i, k, &kl);
    int rc = bfh_get(h, k, kl, &got, &gl);
    if (o->len[i] < 0) {
      assert_int_equal(rc, BFH_NOT_FOUND);
    } else {
      assert_int_equal(rc, BFH_OK);
      assert_int_equal(gl, (size_t)o->len[i]);
      assert_memory_equal(got, o->val[i], gl);
    }
    bfh_free(got);
  }
  assert_int_equal(bfh_close(h), BFH_OK);
  free(o);
}

/* Writes through bfh are found before a flush (read from the WAL), after one and after a
   reopen; an overwritten or deleted key is not. */
static void test_rocksdb_unflushed_writes(void **state) {
  (void)state;
  bfh_db *h;
  open_rocksdb(&h);
  oracle_t *o = calloc(1, sizeof *o);
  assert_non_null(o);
  for (uint32_t i = 0; i < NKEYS; i++) o->len[i] = -1;
  char k[16];
  size_t kl;
  for (uint32_t i = 0; i < 300; i++) {
    key_of(i, k, &kl);
    o->len[i] = (int)value_of(i, 0, o->val[i]);
    assert_int_equal(bfh_put(h, k, kl, o->val[i], (size_t)o->len[i]), BFH_OK);
  }
  for (int step = 0; step < 3; step++) {
    check_value(h, o, "", 0);
    for (uint32_t i = 0; i < 300; i += 37)
      if (o->len[i] >= 0) check_value(h, o, o->val[i], (size_t)o->len[i]);
    /* Overwrite some, delete some: the old values must vanish from every method. */
    for (uint32_t i = step; i < 300; i += 11) {
      key_of(i, k, &kl);
      if (o->len[i] < 0) continue;
      char old[MAXV];
      size_t ol = (size_t)o->len[i];
      memcpy(old, o->val[i], ol);
      if (i % 2) {
        assert_int_equal(bfh_delete(h, k, kl), BFH_OK);
        o->len[i] = -1;
      } else {
        o->len[i] = (int)sprintf(o->val[i], "new-%u-%d", i, step);
        assert_int_equal(bfh_put(h, k, kl, o->val[i], (size_t)o->len[i]), BFH_OK);
        assert_int_equal(check_value(h, o, o->val[i], (size_t)o->len[i]), 1);
      }
      check_value(h, o, old, ol);
    }
    if (step == 0) assert_int_equal(bfh_flush(h), BFH_OK);
    if (step == 1) {
      assert_int_equal(bfh_close(h), BFH_OK);
      open_rocksdb(&h);
    }
  }
  assert_int_equal(bfh_close(h), BFH_OK);
  free(o);
}

/* ---- Refusals ------------------------------------------------------------------------------ */

static char *full_merge(void *s, const char *key, size_t kl, const char *existing, size_t el,
                        const char *const *ops, const size_t *opl, int n, unsigned char *ok,
                        size_t *len) {
  (void)s, (void)key, (void)kl, (void)existing, (void)el;
  char *out = malloc(opl[n - 1] + 1); /* the last operand wins */
  memcpy(out, ops[n - 1], opl[n - 1]);
  *len = opl[n - 1];
  *ok = 1;
  return out;
}
static char *partial_merge(void *s, const char *key, size_t kl, const char *const *ops,
                           const size_t *opl, int n, unsigned char *ok, size_t *len) {
  return full_merge(s, key, kl, NULL, 0, ops, opl, n, ok, len);
}
static void merge_free(void *s, const char *v, size_t n) {
  (void)s, (void)n;
  free((void *)v);
}
static void merge_destroy(void *s) {
  (void)s;
}
static const char *merge_name(void *s) {
  (void)s;
  return "last-wins";
}

/* A search whose answer needs what bfh cannot read: BFH_E_UNSUPPORTED naming it. */
static void expect_refused(const char *what) {
  bfh_db *h;
  open_rocksdb(&h);
  for (int m = BFH_SEARCH_SCAN; m <= BFH_SEARCH_AUTO; m++) {
    found_t *f = calloc(1, sizeof *f);
    int rc = bfh_search(h, "val-0001", 8, (bfh_method)m, on_match, f, NULL);
    free(f);
    if (rc != BFH_E_UNSUPPORTED || !strstr(bfh_last_error(h), what))
      fail_msg("method %d: %d '%s', wanted BFH_E_UNSUPPORTED naming %s", m, rc, bfh_last_error(h),
               what);
  }
  print_message("refused: %s\n", bfh_last_error(h));
  assert_int_equal(bfh_close(h), BFH_OK);
}

static void test_rocksdb_merge_refused(void **state) {
  (void)state;
  rocksdb_options_t *opt = rocksdb_options_create();
  rocksdb_options_set_merge_operator(
      opt, rocksdb_mergeoperator_create(NULL, merge_destroy, full_merge, partial_merge, merge_free,
                                        merge_name));
  rocksdb_t *db = stock_open(opt);
  stock_put(db, "k00000001", 9, "val-0001", 8);
  rocksdb_writeoptions_t *wo = rocksdb_writeoptions_create();
  char *msg = NULL;
  rocksdb_merge(db, wo, "k00000002", 9, "val-0001", 8, &msg);
  assert_null(msg);
  rocksdb_writeoptions_destroy(wo);
  stock_flush(db);
  rocksdb_close(db);
  rocksdb_options_destroy(opt);
  expect_refused("merge operand");
}

static void test_rocksdb_blob_refused(void **state) {
  (void)state;
  rocksdb_options_t *opt = rocksdb_options_create();
  rocksdb_options_set_enable_blob_files(opt, 1);
  rocksdb_options_set_min_blob_size(opt, 0);
  rocksdb_t *db = stock_open(opt);
  stock_put(db, "k00000001", 9, "val-0001", 8);
  stock_flush(db);
  rocksdb_close(db);
  rocksdb_options_destroy(opt);
  expect_refused("blob");
}

/* ---- Engine detection ---------------------------------------------------------------------- */

/* The directory's file names and sizes, one line each, sorted (what an open must not change). */
static char *listing(const char *dir) {
  struct dirent **names;
  int n = scandir(dir, &names, NULL, alphasort);
  assert_true(n >= 0);
  size_t cap = 64 + (size_t)n * 300, len = 0;
  char *out = malloc(cap);
  out[0] = 0;
  for (int i = 0; i < n; i++) {
    char p[1024];
    struct stat sb;
    snprintf(p, sizeof p, "%s/%s", dir, names[i]->d_name);
    if (stat(p, &sb) == 0)
      len += (size_t)snprintf(out + len, cap - len, "%s %lld\n", names[i]->d_name,
                              S_ISDIR(sb.st_mode) ? 0LL : (long long)sb.st_size);
    free(names[i]);
  }
  free(names);
  return out;
}

static void expect_wrong_engine(bfh_engine engine, int read_only, const char *right) {
  char *before = listing(g_dir);
  bfh_options o;
  bfh_options_init(&o);
  o.engine = engine;
  o.read_only = read_only;
  bfh_db *h = NULL;
  int rc = bfh_open(g_dir, &o, &h);
  char want[64];
  snprintf(want, sizeof want, "--engine %s", right);
  if (rc != BFH_E_INVALID || !strstr(bfh_last_error(NULL), want))
    fail_msg("engine %d (read_only %d): %d '%s', wanted BFH_E_INVALID naming %s", engine, read_only,
             rc, bfh_last_error(NULL), right);
  char *after = listing(g_dir);
  assert_string_equal(before, after);
  free(before);
  free(after);
}

static void test_rocksdb_detection(void **state) {
  (void)state;
  /* A RocksDB directory, as a stock program leaves it. */
  rocksdb_options_t *opt = rocksdb_options_create();
  rocksdb_t *db = stock_open(opt);
  stock_put(db, "k00000001", 9, "val-0001", 8);
  stock_flush(db);
  rocksdb_close(db);
  rocksdb_options_destroy(opt);
  expect_wrong_engine(BFH_ENGINE_LEVELDB, 0, "rocksdb");
  expect_wrong_engine(BFH_ENGINE_LEVELDB, 1, "rocksdb");
  expect_wrong_engine(BFH_ENGINE_LSM, 0, "rocksdb");
  assert_int_equal(test_rmrf(g_dir), 0);

  /* A LevelDB directory. */
  leveldb_options_t *lo = leveldb_options_create();
  leveldb_options_set_create_if_missing(lo, 1);
  char *msg = NULL;
  leveldb_t *ldb = leveldb_open(lo, g_dir, &msg);
  assert_null(msg);
  leveldb_close(ldb);
  leveldb_options_destroy(lo);
  expect_wrong_engine(BFH_ENGINE_ROCKSDB, 0, "leveldb");
  assert_int_equal(test_rmrf(g_dir), 0);

  /* A bfh (own engine) directory. */
  bfh_options o;
  bfh_options_init(&o);
  bfh_db *h;
  assert_int_equal(bfh_open(g_dir, &o, &h), BFH_OK);
  assert_int_equal(bfh_put(h, "k", 1, "v", 1), BFH_OK);
  assert_int_equal(bfh_close(h), BFH_OK);
  expect_wrong_engine(BFH_ENGINE_ROCKSDB, 0, "lsm");
}

/* ---- The WAL read's transient errors ------------------------------------------------------- */

#define TRY_AGAIN "Operation failed. Try again.: Create a new iterator to fetch the new tail."

typedef struct wal_fault {
  const char *msg; /* what each faulted iterator says */
  int faults;      /* how many iterators still fail (-1: all) */
  int calls;       /* iterators made */
} wal_fault_t;

static const char *wal_fault(void *arg) {
  wal_fault_t *w = arg;
  w->calls++;
  if (w->faults == 0) return NULL;
  if (w->faults > 0) w->faults--;
  return w->msg;
}

/* Puts key i with a value of its own (into the WAL: nothing is flushed), makes the WAL's next
   `faults` iterators say msg, and searches the value. Returns the search's status; *found
   says whether key i was reported, *calls how many iterators the WAL read made, *transients
   how many of them the engine counted as transient errors. */
static int search_faulted(bfh_db *h, uint32_t i, const char *msg, int faults, int *found,
                          uint64_t *transients, int *calls) {
  char k[16], v[32];
  size_t kl, vl = (size_t)sprintf(v, "wal-fault-%u", i);
  key_of(i, k, &kl);
  assert_int_equal(bfh_put(h, k, kl, v, vl), BFH_OK);
  engine_t *e = bfh_internal_engine(h);
  wal_fault_t w = {msg, faults, 0};
  uint64_t t0 = engine_rocksdb_wal_transients(e);
  engine_rocksdb_set_wal_hook(e, wal_fault, &w);
  found_t *f = calloc(1, sizeof *f);
  assert_non_null(f);
  int rc = bfh_search(h, v, vl, BFH_SEARCH_AUTO, on_match, f, NULL);
  engine_rocksdb_set_wal_hook(e, NULL, NULL);
  *found = f->seen[i] && f->n == 1 && f->dups + f->unknown == 0;
  free(f);
  *transients = engine_rocksdb_wal_transients(e) - t0;
  *calls = w.calls;
  return rc;
}

static void test_rocksdb_wal_transient_errors(void **state) {
  (void)state;
  bfh_db *h;
  open_rocksdb(&h);
  int found, calls;
  uint64_t transients;
  /* "Try again" twice: the third iterator reads the WAL. */
  assert_int_equal(search_faulted(h, 1, TRY_AGAIN, 2, &found, &transients, &calls), BFH_OK);
  assert_true(found);
  assert_int_equal(transients, 2);
  assert_int_equal(calls, 3);
  /* A WAL a purge removed between the listing and the read: once. */
  assert_int_equal(search_faulted(h, 2,
                                  "IO error: No such file or directory: while stat a file for "
                                  "size: /nowhere/000009.log",
                                  1, &found, &transients, &calls),
                   BFH_OK);
  assert_true(found);
  assert_int_equal(transients, 1);
  /* "Try again" from every iterator: the read ends after a bounded number of them, with
     RocksDB's message and the count. */
  int rc = search_faulted(h, 3, TRY_AGAIN, -1, &found, &transients, &calls);
  char want[64];
  snprintf(want, sizeof want, "%d iterators in a row said so", calls);
  if (rc != BFH_E_IO || !strstr(bfh_last_error(h), "Try again") || !strstr(bfh_last_error(h), want))
    fail_msg("every iterator says Try again: %d '%s', wanted BFH_E_IO saying '%s'", rc,
             bfh_last_error(h), want);
  assert_true(calls > 1 && calls <= 16);
  assert_int_equal(transients, (uint64_t)calls);
  print_message("bound reached: %s\n", bfh_last_error(h));
  /* Damage is no transient error: reported at once, as RocksDB's iterator said it. */
  rc = search_faulted(h, 4, "Corruption: checksum mismatch", 1, &found, &transients, &calls);
  if (rc != BFH_E_CORRUPT || !strstr(bfh_last_error(h), "checksum mismatch"))
    fail_msg("a damaged WAL: %d '%s', wanted BFH_E_CORRUPT", rc, bfh_last_error(h));
  assert_int_equal(calls, 1);
  assert_int_equal(transients, 0);
  /* The failed reads kept nothing back: the next search finds every key. */
  assert_int_equal(search_faulted(h, 5, NULL, 0, &found, &transients, &calls), BFH_OK);
  for (uint32_t i = 1; i <= 5; i++) {
    char v[32];
    size_t vl = (size_t)sprintf(v, "wal-fault-%u", i);
    found_t *f = calloc(1, sizeof *f);
    assert_non_null(f);
    assert_int_equal(bfh_search(h, v, vl, BFH_SEARCH_AUTO, on_match, f, NULL), BFH_OK);
    if (!f->seen[i] || f->n != 1) fail_msg("key %u: reported %zu keys", i, f->n);
    free(f);
  }
  assert_int_equal(bfh_close(h), BFH_OK);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_rocksdb_stock_database, setup, teardown),
      cmocka_unit_test_setup_teardown(test_rocksdb_unflushed_writes, setup, teardown),
      cmocka_unit_test_setup_teardown(test_rocksdb_merge_refused, setup, teardown),
      cmocka_unit_test_setup_teardown(test_rocksdb_blob_refused, setup, teardown),
      cmocka_unit_test_setup_teardown(test_rocksdb_detection, setup, teardown),
      cmocka_unit_test_setup_teardown(test_rocksdb_wal_transient_errors, setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

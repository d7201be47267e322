/* Every error of the API contract, through include/bfh.h on BFH_ENGINE_LSM: empty key, NULL
 * pointer with a non-zero length, limits, bad method, bad options, a second open (BUSY), a
 * directory that is not a database, other m/k than stored, a damaged BFH-PARAMS, a damaged
 * table (search and get report BFH_E_CORRUPT or the exact answer, never a wrong one), a
 * damaged value-filter block (the table is then always scanned, answers stay exact);
 * bfh_last_error says what failed; bfh_strerror names every code. The bounds of
 * memtable_bytes, and an empty index_dir, are checked on every engine.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <sys/stat.h>
#include <fcntl.h>
#include <unistd.h>

#include <cmocka.h>

#include "bfh.h"
#include "tests/test_util.h"

#define PAPER_K 3 /* the paper's k: a new database's under every layout but the default */

/* Each test: a fresh directory and the handles it opened, closed by the teardown if the test
   did not (a failed assertion leaves them open). */
typedef struct fixture {
  char dir[512];
  bfh_db *open[4];
} fixture_t;

static fixture_t *g_fx; /* the running test's */

static int setup(void **state) {
  fixture_t *f = calloc(1, sizeof *f);
  if (!f) return -1;
  if (test_tmpdir_create(f->dir, sizeof f->dir, "api_errors_test") != 0) {
    free(f);
    return -1;
  }
  *state = g_fx = f;
  return 0;
}

static int teardown(void **state) {
  fixture_t *f = *state;
  int rc = 0;
  for (size_t i = 0; i < sizeof f->open / sizeof f->open[0]; i++)
    if (f->open[i] && bfh_close(f->open[i]) != BFH_OK) rc = -1;
  if (test_rmrf(f->dir) != 0) rc = -1;
  free(f);
  g_fx = NULL;
  return rc;
}

/* Hands db (if not NULL) to the teardown; returns it. */
static bfh_db *track(bfh_db *db) {
  if (!db) return NULL;
  for (size_t i = 0; i < sizeof g_fx->open / sizeof g_fx->open[0]; i++)
    if (!g_fx->open[i]) return g_fx->open[i] = db;
  bfh_close(db);
  fail_msg("a test holds more than %zu handles", sizeof g_fx->open / sizeof g_fx->open[0]);
  return NULL;
}

/* Closes a tracked handle (asserting BFH_OK) and forgets it. */
static void close_db(bfh_db *db) {
  for (size_t i = 0; i < sizeof g_fx->open / sizeof g_fx->open[0]; i++)
    if (g_fx->open[i] == db) g_fx->open[i] = NULL;
  assert_int_equal(bfh_close(db), BFH_OK);
}

/* bfh_open, whose result must be want; a handle it gives goes to the teardown. */
static bfh_db *open_expect(const char *path, const bfh_options *o, int want) {
  bfh_db *db = NULL;
  int rc = bfh_open(path, o, &db);
  track(db);
  assert_int_equal(rc, want);
  return db;
}

/* A fresh database directory path under the test's directory. */
static void db_path(char *buf, size_t cap, const char *name) {
  snprintf(buf, cap, "%s/%s", g_fx->dir, name);
}

static bfh_db *open_mem(const char *path, size_t memtable_bytes) {
  bfh_options o;
  bfh_options_init(&o);
  o.value_filter_bits = 8192;
  o.memtable_bytes = memtable_bytes;
  o.table_bytes = 32 << 10;
  bfh_db *db = NULL;
  int rc = bfh_open(path, &o, &db);
  if (rc != BFH_OK) fail_msg("bfh_open %s: %d %s", path, rc, bfh_last_error(NULL));
  return track(db);
}

static bfh_db *open_small(const char *path) {
  return open_mem(path, 256 << 10);
}

static void expect_msg(const char *msg, const char *needle) {
  assert_non_null(msg);
  if (!strstr(msg, needle)) fail_msg("message '%s' does not mention '%s'", msg, needle);
}

static int count_cb(void *arg, const void *key, size_t len) {
  (void)key, (void)len;
  (*(size_t *)arg)++;
  return 0;
}

static void test_api_errors_options_defaults(void **state) {
  (void)state;
  bfh_options o;
  bfh_options_init(&o);
  assert_int_equal(o.engine, BFH_ENGINE_LSM);
  assert_int_equal(o.create_if_missing, 1);
  /* m, k and the seed: the database's own, or a new database's */
  assert_int_equal(o.value_filter_bits, 0);
  assert_int_equal(o.value_filter_hashes, 0);
  assert_int_equal(o.order, 5);
  assert_true(o.key_bits_per_key == 10);
  assert_int_equal(o.memtable_bytes, 4 << 20);
  assert_int_equal(o.table_bytes, 2 << 20);
  assert_int_equal(o.sync, 0);
  assert_int_equal(o.value_filters, 1);
  assert_int_equal(o.placement, BFH_PLACEMENT_SIMILARITY);
  assert_int_equal(o.leaves_on_disk, BFH_LEAVES_IN_MEMORY);
  assert_int_equal(o.hash_seed, 0);
}

/* A database made with another m and seed than a new one's (and on every engine) opens with
   bfh_options_init's defaults, which take the database's own, and finds every key; a new
   database gets BFH_DEFAULT_VALUE_FILTER_BITS and BFH_DEFAULT_HASH_SEED. */
static void test_api_errors_defaults_open_any_params(void **state) {
  (void)state;
  static const bfh_engine engines[] = {BFH_ENGINE_LSM, BFH_ENGINE_LEVELDB, BFH_ENGINE_ROCKSDB};
  for (size_t e = 0; e < sizeof engines / sizeof engines[0]; e++) {
    char path[600], name[32];
    snprintf(name, sizeof name, "own-params-%d", (int)engines[e]);
    db_path(path, sizeof path, name);
    bfh_options o;
    bfh_options_init(&o);
    o.engine = engines[e];
    o.value_filter_bits = 1000000;
    o.hash_seed = 0x5eed;
    bfh_db *db = open_expect(path, &o, BFH_OK);
    for (int i = 0; i < 2000; i++) {
      char k[16], v[16];
      int kl = sprintf(k, "key%05d", i), vl = sprintf(v, "val%02d", i % 10);
      assert_int_equal(bfh_put(db, k, (size_t)kl, v, (size_t)vl), BFH_OK);
    }
    assert_int_equal(bfh_flush(db), BFH_OK);
    close_db(db);

    bfh_options_init(&o);
    o.engine = engines[e];
    db = open_expect(path, &o, BFH_OK);
    bfh_db_stats st;
    assert_int_equal(bfh_stats(db, &st), BFH_OK);
    assert_int_equal(st.value_filter_bits, 1000000);
    assert_int_equal(st.hash_seed, 0x5eed);
    for (int m = BFH_SEARCH_SCAN; m <= BFH_SEARCH_AUTO; m++) {
      size_t found = 0;
      assert_int_equal(bfh_search(db, "val03", 5, (bfh_method)m, count_cb, &found, NULL), BFH_OK);
      assert_int_equal(found, 200);
    }
    close_db(db);
  }
  char fresh[600];
  db_path(fresh, sizeof fresh, "new-params");
  bfh_db *db = open_expect(fresh, NULL, BFH_OK);
  bfh_db_stats st;
  assert_int_equal(bfh_stats(db, &st), BFH_OK);
  assert_int_equal(st.value_filter_bits, BFH_DEFAULT_VALUE_FILTER_BITS);
  assert_int_equal(st.hash_seed, BFH_DEFAULT_HASH_SEED);
  close_db(db);
}

static void test_api_errors_bad_options(void **state) {
  (void)state;
  char path[600];
  db_path(path, sizeof path, "badopts");
  struct {
    const char *field;
    void (*set)(bfh_options *);
  } cases[] = {
      {"order", NULL},
      {"value_filter_bits", NULL},
      {"value_filter_bits", NULL},
      {"value_filter_hashes", NULL},
      {"value_filter_hashes", NULL},
      {"memtable_bytes", NULL},
      {"table_bytes", NULL},
      {"engine", NULL},
      {"placement", NULL},
      {"leaves_on_disk", NULL},
      {"mmap_reads", NULL},
      {"mmap_reads", NULL},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    bfh_options o;
    bfh_options_init(&o);
    switch (i) {
      case 0:
        o.order = 1;
        break;
      case 1:
        o.value_filter_bits = 1; /* 0 is the database's own */
        break;
      case 2:
        o.value_filter_bits = 63;
        break;
      case 3:
        o.value_filter_hashes = 64;
        break;
      case 4:
        o.value_filter_hashes = 33;
        break;
      case 5:
        o.memtable_bytes = 0;
        break;
      case 6:
        o.table_bytes = 0;
        break;
      case 7:
        o.engine = (bfh_engine)7;
        break;
      case 8:
        o.placement = 3;
        break;
      case 9:
        o.leaves_on_disk = 3;
        break;
      case 10:
        o.mmap_reads = 2;
        break;
      case 11:
        o.mmap_reads = 1;
        o.engine = BFH_ENGINE_LEVELDB;
        break;
    }
    bfh_db *db = (bfh_db *)0x1;
    int rc = bfh_open(path, &o, &db);
    if (db != (bfh_db *)0x1) track(db);
    assert_int_equal(rc, BFH_E_INVALID);
    assert_null(db);
    expect_msg(bfh_last_error(NULL), cases[i].field);
  }
  /* Nothing was created for a refused open. */
  assert_int_not_equal(access(path, F_OK), 0);
  assert_int_equal(bfh_open(NULL, NULL, (bfh_db **)&(bfh_db *){NULL}), BFH_E_INVALID);
  assert_int_equal(bfh_open("", NULL, (bfh_db **)&(bfh_db *){NULL}), BFH_E_INVALID);
  assert_int_equal(bfh_open(path, NULL, NULL), BFH_E_INVALID);
}

static void test_api_errors_bad_arguments(void **state) {
  (void)state;
  char path[600];
  db_path(path, sizeof path, "args");
  bfh_db *db = open_mem(path, 1 << 20); /* room for the largest key */
  assert_string_equal(bfh_last_error(db), "");
  void *v = NULL;
  size_t vlen = 0;
  assert_int_equal(bfh_put(db, "", 0, "v", 1), BFH_E_INVALID);
  expect_msg(bfh_last_error(db), "empty key");
  assert_int_equal(bfh_get(db, "k", 0, &v, &vlen), BFH_E_INVALID);
  expect_msg(bfh_last_error(db), "empty key");
  assert_int_equal(bfh_delete(db, "k", 0), BFH_E_INVALID);
  expect_msg(bfh_last_error(db), "bfh_delete");
  assert_int_equal(bfh_put(db, NULL, 3, "v", 1), BFH_E_INVALID);
  expect_msg(bfh_last_error(db), "key is NULL");
  assert_int_equal(bfh_put(db, "k", 1, NULL, 5), BFH_E_INVALID);
  expect_msg(bfh_last_error(db), "value is NULL");
  assert_int_equal(bfh_get(db, NULL, 2, &v, &vlen), BFH_E_INVALID);
  assert_int_equal(bfh_get(db, "k", 1, NULL, &vlen), BFH_E_INVALID);
  assert_int_equal(bfh_search(db, NULL, 4, BFH_SEARCH_SCAN, NULL, NULL, NULL), BFH_E_INVALID);
  expect_msg(bfh_last_error(db), "value is NULL");
  assert_int_equal(bfh_search(db, "v", 1, (bfh_method)7, NULL, NULL, NULL), BFH_E_INVALID);
  expect_msg(bfh_last_error(db), "method");
  assert_int_equal(bfh_search(db, "v", 1, BFH_SEARCH_CUCKOO, NULL, NULL, NULL), BFH_E_UNSUPPORTED);
  expect_msg(bfh_last_error(db), "cuckoo_index = 1");
  expect_msg(bfh_last_error(db), "method");
  assert_int_equal(bfh_search(db, "v", 1, BFH_SEARCH_STANDALONE, NULL, NULL, NULL),
                   BFH_E_UNSUPPORTED);
  expect_msg(bfh_last_error(db), "standalone_index = 1");
  assert_int_equal(bfh_search(db, "v", 1, (bfh_method)-1, NULL, NULL, NULL), BFH_E_INVALID);
  /* Limits. */
  size_t big = (size_t)BFH_MAX_KEY_BYTES + 1;
  char *k = calloc(1, big);
  assert_non_null(k);
  assert_int_equal(bfh_put(db, k, big, "v", 1), BFH_E_INVALID);
  expect_msg(bfh_last_error(db), "limit");
  assert_int_equal(bfh_put(db, k, big - 1, "v", 1), BFH_OK); /* the largest key is fine */
  free(k);
  assert_int_equal(bfh_put(db, "k", 1, "v", (size_t)BFH_MAX_VALUE_BYTES + 1), BFH_E_INVALID);
  expect_msg(bfh_last_error(db), "limit");
  /* NULL with length 0 is an empty value; it can be found. */
  assert_int_equal(bfh_put(db, "e", 1, NULL, 0), BFH_OK);
  assert_int_equal(bfh_get(db, "e", 1, &v, &vlen), BFH_OK);
  assert_non_null(v);
  assert_int_equal(vlen, 0);
  bfh_free(v);
  size_t n = 0;
  bfh_search_stats st;
  assert_int_equal(bfh_search(db, NULL, 0, BFH_SEARCH_AUTO, count_cb, &n, &st), BFH_OK);
  assert_int_equal(n, 1);
  assert_int_equal(st.results, 1);
  assert_int_equal(bfh_get(db, "nope", 4, &v, &vlen), BFH_NOT_FOUND);
  /* NULL handles. */
  assert_int_equal(bfh_put(NULL, "k", 1, "v", 1), BFH_E_INVALID);
  expect_msg(bfh_last_error(NULL), "NULL");
  assert_int_equal(bfh_close(NULL), BFH_OK);
  /* Last errors are per handle: another handle's message is separate. */
  char path2[600];
  db_path(path2, sizeof path2, "args2");
  bfh_db *db2 = open_small(path2);
  assert_string_equal(bfh_last_error(db2), "");
  expect_msg(bfh_last_error(db), "bfh_put");
  close_db(db2);
  close_db(db);
}

static void test_api_errors_strerror(void **state) {
  (void)state;
  int codes[] = {BFH_OK,        BFH_NOT_FOUND, BFH_E_INVALID, BFH_E_IO,
                 BFH_E_CORRUPT, BFH_E_NOMEM,   BFH_E_BUSY,    BFH_E_UNSUPPORTED};
  for (size_t i = 0; i < 8; i++) {
    assert_true(strlen(bfh_strerror(codes[i])) > 0);
    for (size_t j = 0; j < i; j++)
      assert_string_not_equal(bfh_strerror(codes[i]), bfh_strerror(codes[j]));
  }
  assert_true(strlen(bfh_strerror(12345)) > 0);
}

static void test_api_errors_second_open_busy(void **state) {
  (void)state;
  char path[600];
  db_path(path, sizeof path, "busy");
  bfh_db *db = open_small(path);
  bfh_options o;
  bfh_options_init(&o);
  o.value_filter_bits = 8192;
  bfh_db *db2 = open_expect(path, &o, BFH_E_BUSY);
  assert_null(db2);
  assert_true(strlen(bfh_last_error(NULL)) > 0);
  close_db(db);
  db2 = open_expect(path, &o, BFH_OK); /* after close it opens */
  close_db(db2);
}

static void test_api_errors_not_a_database(void **state) {
  (void)state;
  char path[600], file[700];
  db_path(path, sizeof path, "notadb");
  assert_int_equal(mkdir(path, 0755), 0);
  snprintf(file, sizeof file, "%s/hello.txt", path);
  FILE *fp = fopen(file, "w");
  assert_non_null(fp);
  fputs("not a database\n", fp);
  assert_int_equal(fclose(fp), 0);
  bfh_options o;
  bfh_options_init(&o);
  o.create_if_missing = 0;
  open_expect(path, &o, BFH_E_INVALID);
  assert_true(strlen(bfh_last_error(NULL)) > 0);
  /* A missing directory without create_if_missing. */
  char missing[700];
  snprintf(missing, sizeof missing, "%s/missing", g_fx->dir);
  open_expect(missing, &o, BFH_E_INVALID);
  assert_true(strlen(bfh_last_error(NULL)) > 0);
  /* A regular file is not a database either. */
  bfh_db *db = NULL;
  int rc = bfh_open(file, &o, &db);
  track(db);
  assert_int_not_equal(rc, BFH_OK);
  assert_null(db);
}

static void test_api_errors_params_mismatch_and_corrupt(void **state) {
  (void)state;
  char path[600];
  db_path(path, sizeof path, "params");
  close_db(open_small(path));
  bfh_options o;
  bfh_options_init(&o);
  o.value_filter_bits = 2000000; /* not what is stored */
  open_expect(path, &o, BFH_E_INVALID);
  expect_msg(bfh_last_error(NULL), "m=8192");
  o.value_filter_bits = 8192;
  o.value_filter_hashes = 4; /* the default layout's k is 8 */
  open_expect(path, &o, BFH_E_INVALID);
  expect_msg(bfh_last_error(NULL), "k=8");
  /* Damage BFH-PARAMS. */
  char pf[700];
  snprintf(pf, sizeof pf, "%s/BFH-PARAMS", path);
  assert_int_equal(test_file_xor_byte(pf, 9, 0x10), 0);
  o.value_filter_hashes = 0;
  open_expect(path, &o, BFH_E_CORRUPT);
  expect_msg(bfh_last_error(NULL), "BFH-PARAMS");
}

/* k of the database in path opened with o (which must open it). */
static uint32_t opened_k(const char *path, const bfh_options *o) {
  bfh_db *db = NULL;
  int rc = bfh_open(path, o, &db);
  if (rc != BFH_OK) fail_msg("bfh_open %s: %d %s", path, rc, bfh_last_error(NULL));
  bfh_db_stats st;
  assert_int_equal(bfh_stats(db, &st), BFH_OK);
  assert_int_equal(bfh_close(db), BFH_OK);
  return st.value_filter_hashes;
}

/* value_filter_hashes 0 (the default): a new database gets its layout's k, 8 under the lean
   layout with value-to-block maps (ln 2 x 11 bits per value, rounded) and the paper's 3 under
   every other; an existing one opens with the k it was made with, whatever the layout. */
static void test_api_errors_hashes_by_layout(void **state) {
  (void)state;
  char lean[600], paper[600], blocks[600], disk[600];
  db_path(lean, sizeof lean, "k-lean");
  db_path(paper, sizeof paper, "k-paper");
  db_path(blocks, sizeof blocks, "k-blocks");
  db_path(disk, sizeof disk, "k-disk");
  bfh_options o;
  bfh_options_init(&o);
  o.value_filter_bits = 8192;
  assert_int_equal(opened_k(lean, &o), 8);
  o.index_bits_per_value = 0;
  assert_int_equal(opened_k(paper, &o), PAPER_K);
  o.index_bits_per_value = BFH_LEAN_MAP_BITS;
  o.block_maps = 0; /* the lean layout with block filters: no maps, the paper's k */
  assert_int_equal(opened_k(blocks, &o), PAPER_K);
  o.block_maps = 1;
  o.leaves_on_disk = BFH_LEAVES_ON_DISK; /* leaves probed unfolded: the paper's k */
  assert_int_equal(opened_k(disk, &o), PAPER_K);
  o.leaves_on_disk = BFH_LEAVES_IN_MEMORY;
  /* The stored k wins over the layout's, in either direction. */
  assert_int_equal(opened_k(paper, &o), PAPER_K);
  o.index_bits_per_value = 0;
  assert_int_equal(opened_k(lean, &o), 8);
  bfh_options s;
  bfh_options_init(&s);
  assert_int_equal(bfh_stored_params(paper, &s), BFH_OK);
  assert_int_equal(s.value_filter_hashes, PAPER_K);
  /* An explicit k other than the stored one is still refused. */
  o.value_filter_hashes = PAPER_K;
  open_expect(lean, &o, BFH_E_INVALID);
  expect_msg(bfh_last_error(NULL), "k=8");
}

/* Puts n keys key%05d -> val%02d (i % 10), flushes, closes. */
static void fill_db(const char *path, int n) {
  bfh_db *db = open_small(path);
  for (int i = 0; i < n; i++) {
    char k[16], v[16];
    int kl = sprintf(k, "key%05d", i), vl = sprintf(v, "val%02d", i % 10);
    assert_int_equal(bfh_put(db, k, (size_t)kl, v, (size_t)vl), BFH_OK);
  }
  assert_int_equal(bfh_flush(db), BFH_OK);
  close_db(db);
}

/* The largest table file in path (name into out). */
static int largest_table(const char *path, char *out, size_t cap) {
  DIR *d = opendir(path);
  assert_non_null(d);
  struct dirent *de;
  off_t best = -1;
  while ((de = readdir(d))) {
    size_t l = strlen(de->d_name);
    if (l < 4 || strcmp(de->d_name + l - 4, ".sst") != 0) continue;
    char f[1200];
    snprintf(f, sizeof f, "%s/%s", path, de->d_name);
    FILE *fp = fopen(f, "rb");
    fseek(fp, 0, SEEK_END);
    off_t sz = ftell(fp);
    fclose(fp);
    if (sz > best) {
      best = sz;
      snprintf(out, cap, "%s", f);
    }
  }
  closedir(d);
  return best > 0;
}

/* After damage, each answer is either BFH_E_CORRUPT or exact. */
static void check_exact_or_corrupt(const char *path, int n, int *saw_corrupt) {
  bfh_options o;
  bfh_options_init(&o);
  o.value_filter_bits = 8192;
  bfh_db *db = NULL;
  int rc = bfh_open(path, &o, &db);
  track(db);
  if (rc == BFH_E_CORRUPT) {
    expect_msg(bfh_last_error(NULL), "");
    *saw_corrupt = 1;
    return;
  }
  assert_int_equal(rc, BFH_OK);
  for (int m = BFH_SEARCH_SCAN; m <= BFH_SEARCH_AUTO; m++) {
    for (int d = 0; d < 10; d++) {
      char v[16];
      int vl = sprintf(v, "val%02d", d);
      size_t cnt = 0;
      rc = bfh_search(db, v, (size_t)vl, (bfh_method)m, count_cb, &cnt, NULL);
      if (rc == BFH_E_CORRUPT) {
        assert_true(strlen(bfh_last_error(db)) > 0);
        *saw_corrupt = 1;
        continue;
      }
      assert_int_equal(rc, BFH_OK);
      assert_int_equal(cnt, (size_t)(n / 10)); /* exact, never a wrong answer */
    }
  }
  for (int i = 0; i < n; i++) {
    char k[16], v[16];
    int kl = sprintf(k, "key%05d", i), vl = sprintf(v, "val%02d", i % 10);
    void *got = NULL;
    size_t gl = 0;
    rc = bfh_get(db, k, (size_t)kl, &got, &gl);
    if (rc == BFH_E_CORRUPT) {
      *saw_corrupt = 1;
      continue;
    }
    assert_int_equal(rc, BFH_OK);
    assert_int_equal(gl, (size_t)vl);
    assert_memory_equal(got, v, gl);
    bfh_free(got);
  }
  close_db(db);
}

/* Offset of a byte inside a data block: early in the file. */
static uint64_t data_block_offset(const char *table) {
  (void)table;
  return 100;
}

/* Offset of a byte in the words of the serialized value filter (after its "BFHV"). */
static uint64_t value_filter_offset(const char *table) {
  FILE *fp = fopen(table, "rb");
  assert_non_null(fp);
  fseek(fp, 0, SEEK_END);
  long sz = ftell(fp);
  fseek(fp, 0, SEEK_SET);
  uint8_t *buf = malloc((size_t)sz);
  assert_non_null(buf);
  assert_int_equal(fread(buf, 1, (size_t)sz, fp), (size_t)sz);
  fclose(fp);
  long at = -1;
  for (long i = 0; i + 4 <= sz; i++)
    if (memcmp(buf + i, "BFHV", 4) == 0) at = i;
  free(buf);
  assert_true(at >= 0);
  return (uint64_t)at + 40;
}

/* Fills a database, XORs mask into the byte at offset_of(largest table), then checks every
   answer is exact or BFH_E_CORRUPT; expect_corrupt says whether some must be BFH_E_CORRUPT. */
static void corrupt_case(const char *name, uint64_t (*offset_of)(const char *table), uint8_t mask,
                         int expect_corrupt) {
  char path[600], table[1200];
  db_path(path, sizeof path, name);
  enum { N = 3000 };
  fill_db(path, N);
  assert_true(largest_table(path, table, sizeof table));
  assert_int_equal(test_file_xor_byte(table, offset_of(table), mask), 0);
  int saw = 0;
  check_exact_or_corrupt(path, N, &saw);
  assert_int_equal(saw, expect_corrupt);
}

/* A damaged data block must be noticed by the full scan. */
static void test_api_errors_corrupt_table(void **state) {
  (void)state;
  corrupt_case("corrupt", data_block_offset, 0x40, 1);
}

/* The table's filter is unreadable: it must be scanned always, and the answers stay exact
   (a damaged filter block never hides the table). */
static void test_api_errors_corrupt_value_filter(void **state) {
  (void)state;
  corrupt_case("corruptvf", value_filter_offset, 0x01, 0);
}

/* memtable_bytes must be 64 KiB .. 4 GiB on every engine (issue 44: LevelDB and RocksDB took
   2^62 silently, and a 4 KiB memtable made the own engine 45 times slower); the message says
   the range. A refused open creates nothing. */
static void test_api_errors_memtable_bytes_bounds_every_engine(void **state) {
  (void)state;
  static const bfh_engine engines[] = {BFH_ENGINE_LSM, BFH_ENGINE_LEVELDB, BFH_ENGINE_ROCKSDB};
  static const size_t refused[] = {0, 4096, (64 << 10) - 1, ((size_t)4 << 30) + 1, (size_t)1 << 62};
  for (size_t e = 0; e < sizeof engines / sizeof *engines; e++) {
    if (!bfh_engine_get(engines[e])) continue;
    char path[600];
    snprintf(path, sizeof path, "%s/mem-%s", g_fx->dir, bfh_engine_name(engines[e]));
    bfh_options o;
    bfh_options_init(&o);
    o.engine = engines[e];
    o.value_filter_bits = 8192;
    for (size_t i = 0; i < sizeof refused / sizeof *refused; i++) {
      o.memtable_bytes = refused[i];
      open_expect(path, &o, BFH_E_INVALID);
      expect_msg(bfh_last_error(NULL), "memtable_bytes");
      expect_msg(bfh_last_error(NULL), "64 KiB");
      expect_msg(bfh_last_error(NULL), "4 GiB");
      assert_int_not_equal(access(path, F_OK), 0);
    }
    o.memtable_bytes = 64 << 10; /* the smallest */
    close_db(open_expect(path, &o, BFH_OK));
  }
}

/* index_dir = "" is refused at the open with a message that names it (it used to fail later
   with a bare mkdir error). */
static void test_api_errors_empty_index_dir(void **state) {
  (void)state;
  char path[600];
  db_path(path, sizeof path, "ldb");
  bfh_options o;
  bfh_options_init(&o);
  o.engine = BFH_ENGINE_LEVELDB;
  o.value_filter_bits = 8192;
  close_db(open_expect(path, &o, BFH_OK));
  o.read_only = 1;
  o.index_dir = "";
  open_expect(path, &o, BFH_E_INVALID);
  expect_msg(bfh_last_error(NULL), "index_dir is empty");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_api_errors_memtable_bytes_bounds_every_engine, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_api_errors_empty_index_dir, setup, teardown),
      cmocka_unit_test_setup_teardown(test_api_errors_options_defaults, setup, teardown),
      cmocka_unit_test_setup_teardown(test_api_errors_defaults_open_any_params, setup, teardown),
      cmocka_unit_test_setup_teardown(test_api_errors_bad_options, setup, teardown),
      cmocka_unit_test_setup_teardown(test_api_errors_bad_arguments, setup, teardown),
      cmocka_unit_test_setup_teardown(test_api_errors_strerror, setup, teardown),
      cmocka_unit_test_setup_teardown(test_api_errors_second_open_busy, setup, teardown),
      cmocka_unit_test_setup_teardown(test_api_errors_not_a_database, setup, teardown),
      cmocka_unit_test_setup_teardown(test_api_errors_params_mismatch_and_corrupt, setup, teardown),
      cmocka_unit_test_setup_teardown(test_api_errors_hashes_by_layout, setup, teardown),
      cmocka_unit_test_setup_teardown(test_api_errors_corrupt_table, setup, teardown),
      cmocka_unit_test_setup_teardown(test_api_errors_corrupt_value_filter, setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

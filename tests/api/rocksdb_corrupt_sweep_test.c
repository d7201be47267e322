/* A corruption sweep over the files of a RocksDB database searched through BFH_ENGINE_ROCKSDB
 * (doc/rocksdb.md "Checking and repair"): a clean database (two tables written by a stock
 * program and the rest of its writes recovered from its WAL at bfh's open, filter cache files, puts
 * through bfh left in the WAL) is copied, one byte of one file flipped (XOR 0xff), and the copy
 * opened and searched by every method. Each open and each search either answers exactly as the
 * oracle says or fails with BFH_E_CORRUPT whose message names the damaged file (its number, or
 * CURRENT); never a wrong answer, another status or a crash. A damaged filter cache file or OPTIONS
 * file is harmless: the answers must be exact. The bytes flipped: every byte of CURRENT; of each
 * table, 24 offsets spread over the file (data, properties, metaindex and index blocks) and every
 * 4th byte of the 53-byte footer; 40 offsets of the MANIFEST; 24 of the WAL (its puts are the only
 * copy of their values); 8 of OPTIONS; 12 of a cache file. The counts of each outcome are printed.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <dirent.h>
#include <rocksdb/c.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "bfh.h"
#include "tests/test_util.h"

#define NKEYS 2000u
#define NVALS 40u   /* values "v%u" of the stock keys */
#define WAL_KEYS 60 /* keys "w%03u" put through bfh, left in the WAL, value "wal%u" (i % 3) */

static char g_dir[512], g_copy[600];

static int setup(void **state) {
  (void)state;
  if (test_tmpdir_create(g_dir, sizeof g_dir, "rocksdb_corrupt_sweep") != 0) return -1;
  snprintf(g_copy, sizeof g_copy, "%s-copy", g_dir);
  return 0;
}

static int teardown(void **state) {
  (void)state;
  test_rmrf(g_copy);
  return test_rmrf(g_dir);
}

static bfh_options rdb_options(void) {
  bfh_options o;
  bfh_options_init(&o);
  o.engine = BFH_ENGINE_ROCKSDB;
  o.value_filter_bits = 1 << 14;
  o.create_if_missing = 0;
  return o;
}

static void make_clean(void) {
  rocksdb_options_t *o = rocksdb_options_create();
  rocksdb_options_set_create_if_missing(o, 1);
  char *msg = NULL;
  rocksdb_t *db = rocksdb_open(o, g_dir, &msg);
  if (msg) fail_msg("rocksdb_open: %s", msg);
  rocksdb_writeoptions_t *wo = rocksdb_writeoptions_create();
  rocksdb_flushoptions_t *fo = rocksdb_flushoptions_create();
  char k[16], v[16];
  for (uint32_t i = 0; i < NKEYS; i++) {
    int kl = sprintf(k, "k%05u", i), vl = sprintf(v, "v%u", i % NVALS);
    rocksdb_put(db, wo, k, (size_t)kl, v, (size_t)vl, &msg);
    if (!msg && i == NKEYS / 2) rocksdb_flush(db, fo, &msg);
    if (msg) fail_msg("write: %s", msg);
  }
  rocksdb_flushoptions_destroy(fo);
  rocksdb_writeoptions_destroy(wo);
  rocksdb_close(db);
  rocksdb_options_destroy(o);
  bfh_options bo = rdb_options();
  bfh_db *b = NULL;
  assert_int_equal(bfh_open(g_dir, &bo, &b), BFH_OK);
  for (uint32_t i = 0; i < WAL_KEYS; i++) {
    int kl = sprintf(k, "w%03u", i), vl = sprintf(v, "wal%u", i % 3);
    assert_int_equal(bfh_put(b, k, (size_t)kl, v, (size_t)vl), BFH_OK);
  }
  assert_int_equal(bfh_close(b), BFH_OK);
}

typedef struct outcome {
  size_t cases, exact, refused_open, refused_search;
} outcome_t;

static int count_key(void *arg, const void *key, size_t len) {
  (void)key, (void)len;
  (*(size_t *)arg)++;
  return 0;
}

/* A failure must be BFH_E_CORRUPT naming the file (tag: its number or "CURRENT"). */
static void expect_refusal(int rc, const char *msg, const char *tag, const char *where) {
  if (rc != BFH_E_CORRUPT || !strstr(msg, tag))
    fail_msg("%s: status %d, message '%s' (want BFH_E_CORRUPT naming %s)", where, rc, msg, tag);
}

/* Opens the damaged copy and searches it; harmless: every answer must be exact. */
static void probe(const char *tag, const char *where, int harmless, outcome_t *out) {
  out->cases++;
  bfh_options o = rdb_options();
  bfh_db *db = NULL;
  int rc = bfh_open(g_copy, &o, &db);
  if (rc != BFH_OK) {
    if (harmless) fail_msg("%s: open failed: %d %s", where, rc, bfh_last_error(NULL));
    expect_refusal(rc, bfh_last_error(NULL), tag, where);
    out->refused_open++;
    return;
  }
  static const struct {
    const char *val;
    size_t want;
  } q[] = {{"v7", NKEYS / NVALS}, {"v39", NKEYS / NVALS}, {"wal1", WAL_KEYS / 3}, {"absent", 0}};
  int refused = 0;
  for (size_t i = 0; i < sizeof q / sizeof q[0]; i++)
    for (int m = BFH_SEARCH_SCAN; m <= BFH_SEARCH_AUTO; m++) {
      size_t n = 0;
      rc = bfh_search(db, q[i].val, strlen(q[i].val), (bfh_method)m, count_key, &n, NULL);
      if (rc == BFH_OK) {
        if (n != q[i].want)
          fail_msg("%s: search '%s' method %d: %zu keys, want %zu (a wrong answer)", where,
                   q[i].val, m, n, q[i].want);
        continue;
      }
      if (harmless) fail_msg("%s: search failed: %d %s", where, rc, bfh_last_error(db));
      expect_refusal(rc, bfh_last_error(db), tag, where);
      refused = 1;
    }
  bfh_close(db);
  if (refused)
    out->refused_search++;
  else
    out->exact++;
}

static uint64_t file_size(const char *path) {
  struct stat sb;
  assert_int_equal(stat(path, &sb), 0);
  return (uint64_t)sb.st_size;
}

/* Flips the byte at each offset of file name (relative to the database), one copy each. */
static void sweep_file(const char *name, const char *tag, const uint64_t *offs, size_t n,
                       int harmless, outcome_t *out) {
  for (size_t i = 0; i < n; i++) {
    test_rmrf(g_copy);
    assert_int_equal(test_copy_dir(g_dir, g_copy), 0);
    char path[2048], where[2400];
    snprintf(path, sizeof path, "%s/%s", g_copy, name);
    assert_int_equal(test_file_xor_byte(path, offs[i], 0xff), 0);
    snprintf(where, sizeof where, "%s byte %llu", name, (unsigned long long)offs[i]);
    probe(tag, where, harmless, out);
  }
}

/* n offsets spread over [0, size), plus with footer every 4th byte of the last 53. */
static size_t spread(uint64_t size, size_t n, int footer, uint64_t *offs) {
  size_t k = 0;
  for (size_t i = 0; i < n && i < size; i++) offs[k++] = size * i / n;
  for (uint64_t b = 0; footer && b < 53 && b < size; b += 4) offs[k++] = size - 53 + b;
  return k;
}

static void test_rocksdb_corrupt_sweep(void **state) {
  (void)state;
  make_clean();
  DIR *d = opendir(g_dir);
  assert_non_null(d);
  static char names[64][256];
  size_t nn = 0;
  struct dirent *de;
  while ((de = readdir(d)) && nn < 64)
    if (de->d_name[0] != '.') snprintf(names[nn++], sizeof names[0], "%s", de->d_name);
  closedir(d);
  char cache_dir[700];
  snprintf(cache_dir, sizeof cache_dir, "%s/bfh-filters", g_dir);
  d = opendir(cache_dir);
  assert_non_null(d);
  char cache[300] = "";
  while ((de = readdir(d)))
    if (strstr(de->d_name, ".vf")) snprintf(cache, sizeof cache, "bfh-filters/%s", de->d_name);
  closedir(d);
  assert_true(cache[0] != 0);

  outcome_t kinds[6] = {{0}};
  static const char *const kind_names[6] = {"table", "MANIFEST", "CURRENT",
                                            "WAL",   "OPTIONS",  "filter cache"};
  uint64_t offs[128];
  int have[6] = {0};
  for (size_t i = 0; i < nn; i++) {
    char path[2048], tag[32];
    if (snprintf(path, sizeof path, "%s/%.255s", g_dir, names[i]) < 0) fail();
    uint64_t size = file_size(path);
    unsigned long long num = 0;
    sscanf(names[i], "%llu", &num);
    snprintf(tag, sizeof tag, "%06llu", num);
    if (strstr(names[i], ".sst")) {
      sweep_file(names[i], tag, offs, spread(size, 24, 1, offs), 0, &kinds[0]);
      have[0]++;
    } else if (strncmp(names[i], "MANIFEST-", 9) == 0) {
      sweep_file(names[i], names[i], offs, spread(size, 40, 0, offs), 0, &kinds[1]);
      have[1]++;
    } else if (strcmp(names[i], "CURRENT") == 0) {
      sweep_file(names[i], "CURRENT", offs, spread(size, (size_t)size, 0, offs), 0, &kinds[2]);
      have[2]++;
    } else if (strstr(names[i], ".log") && size > 0) {
      sweep_file(names[i], tag, offs, spread(size, 24, 0, offs), 0, &kinds[3]);
      have[3]++;
    } else if (strncmp(names[i], "OPTIONS-", 8) == 0) {
      sweep_file(names[i], names[i], offs, spread(size, 8, 0, offs), 1, &kinds[4]);
      have[4]++;
    }
  }
  char path[2048];
  snprintf(path, sizeof path, "%s/%s", g_dir, cache);
  sweep_file(cache, cache, offs, spread(file_size(path), 12, 0, offs), 1, &kinds[5]);
  have[5]++;
  for (int k = 0; k < 6; k++) {
    print_message(
        "%-12s files %d cases %3zu: exact %3zu, refused at open %3zu, refused by a "
        "search %3zu\n",
        kind_names[k], have[k], kinds[k].cases, kinds[k].exact, kinds[k].refused_open,
        kinds[k].refused_search);
    assert_true(have[k] >= 1);
  }
  assert_true(have[0] >= 2);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_rocksdb_corrupt_sweep, setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

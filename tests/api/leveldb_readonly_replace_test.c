/* A read-only LevelDB handle (bfh_options.read_only) that stays open while the database at
 * its path is replaced (rm -rf, then a new database made at the same path) searches the new
 * database right by every method: it notices that the MANIFEST, the logs and the tables it
 * indexed are other files now, and indexes again (doc/leveldb.md "A database replaced under
 * a read-only handle"). Without that the handle kept the old tables' leaves, matched by
 * number and size, and the old log's entries, matched by number and read offset: the new
 * values were missed by every method but scan.
 *
 * The two databases are written with stock LevelDB through its C API in this process, each
 * closed before the read-only handle looks at it (no live LevelDB program is needed). Both
 * are written by the same operations in the same order, with values of the same length (no
 * compression), so that their tables have the same numbers and sizes, their MANIFESTs the
 * same name and their logs the same number and size; the test checks the tables first
 * (without that the scenario would not be the one under test). The last LOG_KEYS puts stay in
 * the log (leveldb_close does not flush the memtable), so the log reading is under test too.
 * Values are random bytes, one generation per database: a value of the second database is in
 * no table of the first, so a leaf of the first says "no" to it (but for its false positive
 * rate, about 0.5% here: 16 bits per value, k = 3) and every one of the SAMPLES values
 * searched would be missed by a stale leaf.
 *
 * A second test shares one index directory between two handles (as two processes would):
 * one that indexed the old database and closes without looking again (writing its cache
 * files of the old tables over the new handle's files), and one on the new database. A handle
 * opened after both, and the new handle itself (with leaves on disk, read from those files),
 * must still answer right: a cache file is trusted only for the table bytes it was made
 * from (its tag), a leaf on disk only with the checksums it was added with. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <leveldb/c.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bfh.h"
#include "tests/leveldb_test_util.h"
#include "tests/test_util.h"
#include "util/random.h"

#define ROUNDS 3 /* tables: one per round, each of KEYS_PER_ROUND disjoint keys */
#define KEYS_PER_ROUND 1000
#define LOG_KEYS 200 /* then in the log only */
#define NKEYS (ROUNDS * KEYS_PER_ROUND + LOG_KEYS)
#define VAL_BYTES 100
#define SAMPLES 14 /* values searched per method: spread over every table and the log */

static char tmpdir[4096];

#include "tests/api/ldb_generations.h" /* after NKEYS, VAL_BYTES, SAMPLES */

/* Writes generation gen into dir with LevelDB (a new database: ldb_gen_create's tables, then
   LOG_KEYS more keys left in its log) and returns its tables as "number:size " pairs sorted by
   number (malloc'd). */
static char *write_db(const char *dir, int gen) {
  char *tables;
  leveldb_t *db = ldb_gen_create(dir, gen, &tables);
  leveldb_writeoptions_t *wo = leveldb_writeoptions_create();
  char *err = NULL;
  for (int k = ROUNDS * KEYS_PER_ROUND; k < NKEYS && !err; k++) {
    char kb[32], vb[VAL_BYTES];
    leveldb_put(db, wo, kb, key_bytes(k, kb), vb, value_bytes(gen, k, vb), &err);
  }
  assert_null(err);
  leveldb_writeoptions_destroy(wo);
  leveldb_close(db);
  return tables;
}

/* rm -rf dir, then generation gen at dir; fails unless its tables are those of `tables`. */
static void replace_db(const char *dir, int gen, const char *tables) {
  assert_int_equal(test_rmrf(dir), 0);
  char *l2 = write_db(dir, gen);
  if (strcmp(tables, l2) != 0)
    fail_msg(
        "the new database's tables differ (the scenario needs equal numbers and sizes):"
        "\n  %s\n  %s",
        tables, l2);
  free(l2);
}

/* generation_missed, and bfh_get gives each sampled key its value of generation gen (the
   log's keys included). */
static void expect_found(bfh_db *db, int gen, const char *what) {
  int failed = generation_missed(db, gen, what);
  int wrong = 0;
  for (int s = 0; s < SAMPLES; s++) {
    int k = (int)((uint64_t)s * (NKEYS - 1) / (SAMPLES - 1));
    char kb[32], vb[VAL_BYTES];
    size_t kl = key_bytes(k, kb), vl = value_bytes(gen, k, vb);
    void *v = NULL;
    size_t n = 0;
    int rc = bfh_get(db, kb, kl, &v, &n);
    if (rc != BFH_OK) fail_msg("%s: get key%06d: %s", what, k, bfh_last_error(db));
    wrong += n != vl || memcmp(v, vb, vl) != 0;
    bfh_free(v);
  }
  if (wrong) print_message("%s: get: %d of %d values of another database\n", what, wrong, SAMPLES);
  if (failed || wrong) fail_msg("%s: values missed", what);
}

static bfh_options options(const char *index_dir, int leaves) {
  bfh_options o;
  bfh_options_init(&o);
  o.engine = BFH_ENGINE_LEVELDB;
  o.create_if_missing = 0;
  o.value_filter_bits = 1 << 14; /* ~16 bits per value of a table */
  o.leaves_on_disk = leaves;
  o.read_only = 1;
  o.index_dir = index_dir;
  return o;
}

static bfh_db *open_db(const char *dir, const bfh_options *o) {
  bfh_db *db = NULL;
  int rc = bfh_open(dir, o, &db);
  if (rc != BFH_OK) fail_msg("bfh_open %s: %s", dir, bfh_last_error(NULL));
  return db;
}

/* One handle open across the replacement: generation 1 searched, the database replaced by
   generation 2 (same table numbers and sizes), generation 2 searched with the same handle;
   then a third generation, to see that the handle keeps noticing. */
static void run_scenario(const char *name, const char *index_name, int leaves) {
  char dir[4300], index_dir[4300];
  snprintf(dir, sizeof dir, "%s/%s", tmpdir, name);
  snprintf(index_dir, sizeof index_dir, "%s/index/%s", tmpdir, index_name ? index_name : "");
  char *tables = write_db(dir, 1);
  bfh_options o = options(index_name ? index_dir : NULL, leaves);
  bfh_db *db = open_db(dir, &o);
  expect_found(db, 1, "generation 1");
  replace_db(dir, 2, tables);
  char what[4400];
  snprintf(what, sizeof what, "%s, generation 2, same handle", name);
  expect_found(db, 2, what);
  replace_db(dir, 3, tables);
  snprintf(what, sizeof what, "%s, generation 3, same handle", name);
  expect_found(db, 3, what);
  assert_int_equal(bfh_close(db), BFH_OK);
  db = open_db(dir, &o);
  snprintf(what, sizeof what, "%s, generation 3, reopened", name);
  expect_found(db, 3, what);
  assert_int_equal(bfh_close(db), BFH_OK);
  free(tables);
}

static void test_replaced_in_memory(void **state) {
  (void)state;
  run_scenario("memory", NULL, BFH_LEAVES_IN_MEMORY);
}

static void test_replaced_index_dir(void **state) {
  (void)state;
  run_scenario("cached", "cached", BFH_LEAVES_IN_MEMORY); /* not "index": the index root */
}

static void test_replaced_index_dir_leaves_on_disk(void **state) {
  (void)state;
  run_scenario("index_disk", "index_disk", BFH_LEAVES_ON_DISK);
}

/* Two handles on one index directory: `old` indexed generation 1 and closes only after
   `young` indexed generation 2 (leaves on disk: its leaves are the cache files), without a
   search in between, so it writes its cache files of generation 1's tables last. young,
   then a handle opened after both, must find generation 2. */
static void test_shared_index_dir(void **state) {
  (void)state;
  char dir[4300], index_dir[4300];
  snprintf(dir, sizeof dir, "%s/shared", tmpdir);
  snprintf(index_dir, sizeof index_dir, "%s/index/shared", tmpdir);
  char *tables = write_db(dir, 1);
  bfh_options om = options(index_dir, BFH_LEAVES_IN_MEMORY);
  bfh_options od = options(index_dir, BFH_LEAVES_ON_DISK);
  bfh_db *old = open_db(dir, &om);
  /* One search: it reads the leaves; their cache files are written at the next search or at
     close (index/index_sync.h). */
  static hits_t h;
  char vb[VAL_BYTES];
  assert_int_equal(bfh_search(old, vb, value_bytes(1, 0, vb), BFH_SEARCH_LEAVES, on_hit, &h, NULL),
                   BFH_OK);
  assert_int_equal(h.count[0], 1);
  replace_db(dir, 2, tables);
  bfh_db *young = open_db(dir, &od);
  expect_found(young, 2, "shared, young handle, generation 2");
  assert_int_equal(bfh_close(old), BFH_OK); /* writes generation 1's cache files, if any */
  expect_found(young, 2, "shared, young handle after the old one closed");
  bfh_db *later = open_db(dir, &om);
  expect_found(later, 2, "shared, a handle opened after both");
  assert_int_equal(bfh_close(later), BFH_OK);
  assert_int_equal(bfh_close(young), BFH_OK);
  free(tables);
}

static int group_setup(void **state) {
  (void)state;
  return test_tmpdir_create(tmpdir, sizeof tmpdir, "leveldb_readonly_replace");
}

static int group_teardown(void **state) {
  (void)state;
  return test_rmrf(tmpdir);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_replaced_in_memory),
      cmocka_unit_test(test_replaced_index_dir),
      cmocka_unit_test(test_replaced_index_dir_leaves_on_disk),
      cmocka_unit_test(test_shared_index_dir),
  };
  return cmocka_run_group_tests(tests, group_setup, group_teardown);
}

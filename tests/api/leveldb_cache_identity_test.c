/* The LevelDB engine's filter cache is bound to its tables' bytes (doc/format.md "LevelDB
 * filter cache"): a database destroyed and made again at the same path, whose tables come out
 * with the same numbers and sizes (stock LevelDB reuses both), is searched right by every
 * method, read-write (the cache in the database's bfh-filters/, which leveldb_destroy_db
 * leaves behind) and read-only (the cache in an index directory kept across the two
 * databases, as bfh's CLI keeps one per database path; and in memory). bfh_check reports the
 * stale cache files as harmless.
 *
 * The databases are written with stock LevelDB through its C API in this process and closed
 * before bfh opens them: no live LevelDB program is needed. Both are written by the same
 * operations in the same order, with values of the same length (no compression), so that
 * their tables have the same numbers and sizes; the test checks that first (without it the
 * scenario would not be the one under test). Values are random bytes, one generation per
 * database: a value of the second database is in no table of the first, so a leaf of the
 * first database says "no" to it (but for its false positive rate, about 0.5% here: 16 bits
 * per value, k = 3), and every one of the SAMPLES values searched would be missed by a stale
 * filter.
 *
 * The read-only handle binds a cache file by the table's stamp (its inode, size, times and
 * footer) before it takes the table's tag: test_read_only_stamped sets the stamp's margin to
 * 0, so that fresh tables get a stamp, checks that the second open of generation 1 loads its
 * cache by the stamps, and that generation 2, with the same numbers, sizes and (often) the
 * same inodes, is never answered from them. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <leveldb/c.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <sys/stat.h>

#include "bfh.h"
#include "index/leaf_cache.h"
#include "tests/leveldb_test_util.h"
#include "tests/test_util.h"
#include "util/random.h"

#define ROUNDS 3 /* tables: one per round, each of KEYS_PER_ROUND disjoint keys */
#define KEYS_PER_ROUND 1000
#define NKEYS (ROUNDS * KEYS_PER_ROUND)
#define VAL_BYTES 100
#define SAMPLES 12 /* values searched per method */

static char tmpdir[4096];

#include "tests/api/ldb_generations.h" /* after NKEYS, VAL_BYTES, SAMPLES */

static void destroy_db(const char *dir) {
  leveldb_options_t *o = leveldb_options_create();
  char *err = NULL;
  leveldb_destroy_db(o, dir, &err);
  if (err) fail_msg("leveldb_destroy_db %s: %s", dir, err);
  leveldb_options_destroy(o);
}

static void expect_found(bfh_db *db, int gen, const char *what) {
  if (generation_missed(db, gen, what)) fail_msg("%s: values missed", what);
}

static bfh_options options(int read_only, const char *index_dir, int leaves) {
  bfh_options o;
  bfh_options_init(&o);
  o.engine = BFH_ENGINE_LEVELDB;
  o.create_if_missing = 0;
  o.value_filter_bits = 1 << 14; /* ~16 bits per value of a table */
  o.leaves_on_disk = leaves;
  o.read_only = read_only;
  o.index_dir = index_dir;
  return o;
}

static bfh_db *open_db(const char *dir, const bfh_options *o) {
  bfh_db *db = NULL;
  int rc = bfh_open(dir, o, &db);
  if (rc != BFH_OK) fail_msg("bfh_open %s: %s", dir, bfh_last_error(NULL));
  return db;
}

typedef struct stale {
  int files;
  int harmless; /* each said so */
} stale_t;

static void on_damage(void *arg, const char *file, uint64_t offset, const char *what) {
  stale_t *s = arg;
  (void)offset;
  if (strncmp(file, "bfh-filters/", 12) != 0)
    fail_msg("bfh_check: %s: %s (damage outside the filter cache)", file, what);
  s->files++;
  s->harmless += strstr(what, "stale") && strstr(what, "harmless");
}

/* One scenario: generation 1 written, opened by bfh with o (its filters cached), closed;
   the database destroyed (bfh's files stay) and generation 2 written at the same path with
   the same table numbers and sizes; bfh with o again must find generation 2's values. With
   check, bfh_check runs on the rebuilt database first (read-write cache only). */
static void run_scenario(const char *name, const bfh_options *o, int check) {
  char dir[4300], *l1, *l2;
  snprintf(dir, sizeof dir, "%s/%s", tmpdir, name);
  leveldb_close(ldb_gen_create(dir, 1, &l1));
  bfh_db *db = open_db(dir, o);
  expect_found(db, 1, "generation 1");
  assert_int_equal(bfh_close(db), BFH_OK);

  destroy_db(dir);
  leveldb_close(ldb_gen_create(dir, 2, &l2));
  if (strcmp(l1, l2) != 0)
    fail_msg(
        "the rebuilt database's tables differ (the scenario needs equal numbers and "
        "sizes):\n  %s\n  %s",
        l1, l2);
  free(l1);
  free(l2);

  if (check) {
    struct stat sb;
    char p[4400];
    snprintf(p, sizeof p, "%s/bfh-filters", dir);
    assert_int_equal(stat(p, &sb), 0); /* leveldb_destroy_db left the cache behind */
    stale_t s = {0};
    bfh_check_report rep;
    bfh_options co = options(0, NULL, 0);
    assert_int_equal(bfh_check(dir, &co, on_damage, &s, &rep), BFH_OK);
    assert_int_equal(rep.damaged, 0);
    assert_true(s.files > 0);
    assert_int_equal(s.harmless, s.files);
    assert_int_equal(rep.cache_damaged, (uint64_t)s.files);
  }

  db = open_db(dir, o);
  expect_found(db, 2, name);
  assert_int_equal(bfh_close(db), BFH_OK);
  if (check) { /* the rebuilt cache checks clean */
    stale_t s = {0};
    bfh_check_report rep;
    bfh_options co = options(0, NULL, 0);
    assert_int_equal(bfh_check(dir, &co, on_damage, &s, &rep), BFH_OK);
    assert_int_equal(s.files, 0);
  }
  /* And once more, from the rewritten cache. */
  db = open_db(dir, o);
  expect_found(db, 2, name);
  assert_int_equal(bfh_close(db), BFH_OK);
}

static void test_read_write_leaves_in_memory(void **state) {
  (void)state;
  bfh_options o = options(0, NULL, BFH_LEAVES_IN_MEMORY);
  run_scenario("rw_memory", &o, 1);
}

static void test_read_write_leaves_on_disk(void **state) {
  (void)state;
  bfh_options o = options(0, NULL, BFH_LEAVES_ON_DISK);
  run_scenario("rw_disk", &o, 1);
}

static void test_read_only_index_dir(void **state) {
  (void)state;
  char index_dir[4300];
  snprintf(index_dir, sizeof index_dir, "%s/index/leveldb-ro", tmpdir);
  bfh_options o = options(1, index_dir, BFH_LEAVES_IN_MEMORY);
  run_scenario("ro_index", &o, 0);
}

static void test_read_only_index_dir_leaves_on_disk(void **state) {
  (void)state;
  char index_dir[4300];
  snprintf(index_dir, sizeof index_dir, "%s/index/leveldb-ro-disk", tmpdir);
  bfh_options o = options(1, index_dir, BFH_LEAVES_ON_DISK);
  run_scenario("ro_index_disk", &o, 0);
}

static void test_read_only_in_memory(void **state) {
  (void)state;
  bfh_options o = options(1, NULL, BFH_LEAVES_IN_MEMORY);
  run_scenario("ro_memory", &o, 0);
}

/* The stat of each table file (*.ldb) of dir, by name: at most 64. */
static void test_read_only_stamped(void **state) {
  (void)state;
  char dir[4300], index_dir[4300], *l1, *l2;
  snprintf(dir, sizeof dir, "%s/ro_stamped", tmpdir);
  snprintf(index_dir, sizeof index_dir, "%s/index/leveldb-ro-stamped", tmpdir);
  bfh_options o = options(1, index_dir, BFH_LEAVES_IN_MEMORY);
  leaf_cache_test_set_stamp_margin(0);
  leveldb_close(ldb_gen_create(dir, 1, &l1));
  ldb_test_files_t old;
  ldb_test_stat_tables(dir, &old);
  bfh_db *db = open_db(dir, &o); /* builds the cache, each file with its table's stamp */
  expect_found(db, 1, "generation 1");
  assert_int_equal(bfh_close(db), BFH_OK);
  uint64_t before = leaf_cache_test_stamped_loads();
  db = open_db(dir, &o);
  expect_found(db, 1, "generation 1, cache bound by stamps");
  assert_int_equal(bfh_close(db), BFH_OK);
  assert_int_equal(leaf_cache_test_stamped_loads() - before, old.n);

  destroy_db(dir);
  leveldb_close(ldb_gen_create(dir, 2, &l2));
  if (strcmp(l1, l2) != 0) fail_msg("the rebuilt database's tables differ:\n  %s\n  %s", l1, l2);
  free(l1);
  free(l2);
  /* The file system may give a new table the inode of the old one; its times then tell them
     apart, unless both fell in one tick of the file system's clock (what the margin rules out
     in use). Wait for a later tick, bounded, by touching the new table's inode. */
  ldb_test_files_t now;
  ldb_test_stat_tables(dir, &now);
  for (size_t i = 0; i < now.n; i++)
    for (size_t j = 0; j < old.n; j++) {
      if (strcmp(now.name[i], old.name[j]) != 0) continue;
      char p[4400];
      snprintf(p, sizeof p, "%s/%s", dir, now.name[i]);
      for (int tries = 0; ldb_test_same_file(&now.st[i], &old.st[j]); tries++) {
        if (tries == 1000000) fail_msg("%s: its times do not move", p);
        assert_int_equal(chmod(p, tries % 2 ? 0644 : 0600), 0);
        assert_int_equal(stat(p, &now.st[i]), 0);
      }
    }
  before = leaf_cache_test_stamped_loads();
  db = open_db(dir, &o);
  expect_found(db, 2, "generation 2 under generation 1's stamped cache");
  assert_int_equal(bfh_close(db), BFH_OK);
  assert_int_equal(leaf_cache_test_stamped_loads() - before, 0);
  /* The rewritten cache is bound by the new tables' stamps. */
  before = leaf_cache_test_stamped_loads();
  db = open_db(dir, &o);
  expect_found(db, 2, "generation 2, cache bound by stamps");
  assert_int_equal(bfh_close(db), BFH_OK);
  assert_int_equal(leaf_cache_test_stamped_loads() - before, now.n);
  leaf_cache_test_set_stamp_margin(-1);
}

static int group_setup(void **state) {
  (void)state;
  return test_tmpdir_create(tmpdir, sizeof tmpdir, "leveldb_cache_identity");
}

static int group_teardown(void **state) {
  (void)state;
  return test_rmrf(tmpdir);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_read_write_leaves_in_memory),
      cmocka_unit_test(test_read_write_leaves_on_disk),
      cmocka_unit_test(test_read_only_index_dir),
      cmocka_unit_test(test_read_only_index_dir_leaves_on_disk),
      cmocka_unit_test(test_read_only_in_memory),
      cmocka_unit_test(test_read_only_stamped),
  };
  return cmocka_run_group_tests(tests, group_setup, group_teardown);
}

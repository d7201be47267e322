/* The read-only LevelDB engine's persisted index (<index_dir>/BFH-INDEX; index/
 * persisted_index.h, lsm_hooks/engines/stock/stock_ro_persisted.c; doc/search.md "The persisted
 * index"). A database written by stock LevelDB (its C API), opened read-only with an index
 * directory: the handle that built the filter cache writes the file at its close; a new
 * handle, its loaders held (index_sync_test_hold_loaders, so that no leaf is in), answers from
 * it. AUTO equals SCAN for every value of the database and 50 absent ones with the file
 * present, missing, stale (tables compacted away and new ones made since), damaged (rows and
 * heads: counted, answered around), truncated (counted, unused), and for a database made again
 * at its path with the same table numbers and sizes (bound to none). Nothing is ever written
 * into the database's directory. The stamp margin is 0 (leaf_cache_test_set_stamp_margin), so
 * that the fresh tables of a test get stamps.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <dirent.h>
#include <leveldb/c.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bfh.h"
#include "index/block_index.h"
#include "index/index_sync.h"
#include "index/leaf_cache.h"
#include "index/persisted_index.h"
#include "index/value_index.h"
#include "tests/leveldb_test_util.h"
#include "tests/test_util.h"
#include "tests/api/persisted_index_util.h"
#include "util/coding.h"

#define ROUNDS 3 /* tables: one per round */
#define KEYS_PER_ROUND 1000
#define NKEYS (ROUNDS * KEYS_PER_ROUND)
#define VAL_BYTES 100
#define SAMPLES 12
#define ABSENT_GEN 99

static char tmpdir[4096];

#include "tests/api/ldb_generations.h" /* after NKEYS, VAL_BYTES, SAMPLES */

typedef struct paths {
  char db[4300], index[4300], file[4400];
} paths_t;

static void make_paths(const char *name, paths_t *p) {
  snprintf(p->db, sizeof p->db, "%s/%s", tmpdir, name);
  snprintf(p->index, sizeof p->index, "%s/index-%s", tmpdir, name);
  snprintf(p->file, sizeof p->file, "%s/%s", p->index, PERSISTED_INDEX_FILE);
}

static bfh_options options(const paths_t *p) {
  bfh_options o;
  bfh_options_init(&o); /* the default layout: lean, with value-to-block maps */
  o.engine = BFH_ENGINE_LEVELDB;
  o.read_only = 1;
  o.index_dir = p->index;
  return o;
}

static bfh_db *open_ro(const paths_t *p, int held) {
  bfh_options o = options(p);
  index_sync_test_hold_loaders(held);
  bfh_db *db = NULL;
  if (bfh_open(p->db, &o, &db) != BFH_OK) fail_msg("bfh_open %s: %s", p->db, bfh_last_error(NULL));
  return db;
}

static void close_ro(bfh_db *db) {
  index_sync_test_hold_loaders(0);
  assert_int_equal(bfh_close(db), BFH_OK);
}

/* The names in dir, sorted and joined (malloc'd). */
static char *listing(const char *dir) {
  static char names[256][300];
  size_t n = 0;
  DIR *d = opendir(dir);
  assert_non_null(d);
  struct dirent *e;
  while ((e = readdir(d)) && n < 256) snprintf(names[n++], 300, "%s", e->d_name);
  closedir(d);
  qsort(names, n, 300, (int (*)(const void *, const void *))strcmp);
  char *out = calloc(1, n * 301 + 1);
  assert_non_null(out);
  for (size_t i = 0; i < n; i++) strcat(strcat(out, names[i]), " ");
  return out;
}

/* Generation gen written with stock LevelDB; then one read-only handle builds the filter cache
   (and, at its close, BFH-INDEX); the database's directory is left as LevelDB left it. */
static void make_db(const paths_t *p, int gen) {
  char *tables;
  leveldb_close(ldb_gen_create(p->db, gen, &tables));
  free(tables);
  char *before = listing(p->db);
  bfh_db *db = open_ro(p, 0);
  if (generation_missed(db, gen, "the handle that builds the cache")) fail_msg("values missed");
  close_ro(db);
  char *after = listing(p->db);
  assert_string_equal(before, after); /* nothing written into the database's directory */
  free(before);
  free(after);
}

/* The database `name` of generation 1, with its filter cache and BFH-INDEX (make_db). */
static void made_db(const char *name, paths_t *p) {
  make_paths(name, p);
  make_db(p, 1);
}

static int count(void *arg, const void *key, size_t len) {
  (void)key, (void)len;
  (*(uint64_t *)arg)++;
  return 0;
}

/* AUTO equals SCAN for every value of generation gen (and of ABSENT_GEN for 50 keys: values
   no database holds); returns the tables AUTO probed the map of, over all searches. */
static uint64_t check(bfh_db *db, int gen, uint64_t *searches) {
  uint64_t selected = 0;
  for (int k = 0; k < NKEYS + 50; k++) {
    char v[VAL_BYTES];
    size_t len = value_bytes(k < NKEYS ? gen : ABSENT_GEN, k, v);
    uint64_t want = 0, got = 0;
    bfh_search_stats st;
    assert_int_equal(bfh_search(db, v, len, BFH_SEARCH_SCAN, count, &want, NULL), BFH_OK);
    assert_int_equal(bfh_search(db, v, len, BFH_SEARCH_AUTO, count, &got, &st), BFH_OK);
    if (got != want)
      fail_msg("generation %d, key %d: AUTO %llu keys, SCAN %llu", k < NKEYS ? gen : ABSENT_GEN,
               k, (unsigned long long)got, (unsigned long long)want);
    selected += st.block_filters_probed;
  }
  if (searches) *searches = NKEYS + 50;
  return selected;
}

static void test_present(void **state) {
  (void)state;
  paths_t p;
  made_db("present", &p);
  assert_int_equal(access(p.file, F_OK), 0); /* the handle that built the cache wrote it */
  size_t l1, l2;
  uint8_t *a = pidx_test_slurp(p.file, &l1);
  bfh_db *db = open_ro(&p, 1);
  size_t n = pidx_test_live_tables(db);
  assert_true(n >= 2);
  assert_int_equal(pidx_test_persisted(db), n); /* every table answered for, no leaf in */
  assert_int_equal(value_index_leaf_count(bfh_internal_index(db)), 0);
  index_sync_stats_t ss;
  index_sync_get_stats(bfh_internal_sync(db), &ss);
  assert_int_equal(ss.blocks_early, 0); /* no cache file read at open */
  uint64_t searches, sel = check(db, 1, &searches);
  /* Without the file every table is selected by every search (no leaf): n per search. */
  if (sel * 2 >= searches * n)
    fail_msg("AUTO selected %llu tables over %llu searches of %zu tables", (unsigned long long)sel,
             (unsigned long long)searches, n);
  assert_int_equal(pidx_test_damaged(db), 0);
  close_ro(db);
  /* A handle that only searched, with the cache complete, writes nothing. */
  uint8_t *b = pidx_test_slurp(p.file, &l2);
  assert_int_equal(l1, l2);
  assert_memory_equal(a, b, l1);
  free(a);
  free(b);
  /* With its loader done, every table has its leaf and the file is let go. */
  db = open_ro(&p, 0);
  (void)check(db, 1, NULL);
  assert_int_equal(index_sync_loader_wait(bfh_internal_sync(db), NULL, NULL), BFH_OK);
  assert_int_equal(value_index_leaf_count(bfh_internal_index(db)), n);
  assert_int_equal(pidx_test_persisted(db), 0);
  if (generation_missed(db, 1, "every leaf in")) fail_msg("values missed");
  close_ro(db);
}

static int count(void *arg, const void *key, size_t len);

static void test_missing(void **state) {
  (void)state;
  paths_t p;
  made_db("missing", &p);
  assert_int_equal(unlink(p.file), 0);
  bfh_db *db = open_ro(&p, 1);
  assert_int_equal(pidx_test_persisted(db), 0);
  (void)check(db, 1, NULL);
  close_ro(db);
  /* It searched through the index with no file: its close made the file again. */
  assert_int_equal(access(p.file, F_OK), 0);
  db = open_ro(&p, 1);
  assert_int_equal(pidx_test_persisted(db), pidx_test_live_tables(db));
  (void)check(db, 1, NULL);
  close_ro(db);
  /* A handle that only scans and gets pays nothing at its close: no file. */
  assert_int_equal(unlink(p.file), 0);
  db = open_ro(&p, 0);
  char v[VAL_BYTES], k[32];
  uint64_t got = 0;
  assert_int_equal(bfh_search(db, v, value_bytes(1, 7, v), BFH_SEARCH_SCAN, count, &got, NULL),
                   BFH_OK);
  assert_int_equal(got, 1);
  void *val = NULL;
  size_t vl = 0;
  assert_int_equal(bfh_get(db, k, key_bytes(7, k), &val, &vl), BFH_OK);
  bfh_free(val);
  close_ro(db);
  assert_int_not_equal(access(p.file, F_OK), 0);
}

/* The file of an older state: the database written on by LevelDB since (an overwrite of a third
   of the keys with generation 3's values, a fourth table on level 0: a compaction merges
   them), so that tables are gone and new ones live. */
static void test_stale(void **state) {
  (void)state;
  paths_t p;
  made_db("stale", &p);
  size_t len;
  uint8_t *old = pidx_test_slurp(p.file, &len);
  leveldb_options_t *o = leveldb_options_create();
  leveldb_options_set_compression(o, leveldb_no_compression);
  char *err = NULL;
  leveldb_t *ldb = leveldb_open(o, p.db, &err);
  leveldb_options_destroy(o);
  if (err) fail_msg("leveldb_open: %s", err);
  leveldb_writeoptions_t *wo = leveldb_writeoptions_create();
  for (int k = 0; k < NKEYS; k += 3) {
    char kb[32], vb[VAL_BYTES];
    leveldb_put(ldb, wo, kb, key_bytes(k, kb), vb, value_bytes(3, k, vb), &err);
    assert_null(err);
  }
  leveldb_writeoptions_destroy(wo);
  ldb_test_settle(ldb);
  leveldb_close(ldb);
  bfh_db *db = open_ro(&p, 1);
  size_t n = pidx_test_live_tables(db);
  uint64_t cov = pidx_test_persisted(db);
  if (cov >= n) fail_msg("%llu of %zu tables covered by a stale file", (unsigned long long)cov, n);
  (void)check(db, 1, NULL);
  (void)check(db, 3, NULL);
  close_ro(db); /* it read new tables: it writes the file of now */
  size_t len2;
  uint8_t *now = pidx_test_slurp(p.file, &len2);
  assert_true(len2 != len || memcmp(old, now, len) != 0);
  free(now);
  db = open_ro(&p, 1);
  assert_int_equal(pidx_test_persisted(db), pidx_test_live_tables(db));
  (void)check(db, 1, NULL);
  (void)check(db, 3, NULL);
  close_ro(db);
  /* The old file back: bound to the tables it still names, answered around the rest. */
  pidx_test_spill(p.file, old, len);
  free(old);
  db = open_ro(&p, 1);
  cov = pidx_test_persisted(db);
  if (cov >= pidx_test_live_tables(db)) fail_msg("the old file covers every table");
  (void)check(db, 1, NULL);
  (void)check(db, 3, NULL);
  close_ro(db);
}

/* The handle that met the damage searched through the index: its close wrote the file again,
   which binds every table and checks out. */
static void expect_repaired(const paths_t *p) {
  bfh_db *db = open_ro(p, 1);
  assert_int_equal(pidx_test_persisted(db), pidx_test_live_tables(db));
  (void)check(db, 1, NULL);
  assert_int_equal(pidx_test_damaged(db), 0);
  close_ro(db);
}

/* A byte flipped every 512 past the directory: every row chunk and every map head damaged. */
static void test_damaged(void **state) {
  (void)state;
  paths_t p;
  made_db("damaged", &p);
  size_t len;
  uint8_t *b = pidx_test_slurp(p.file, &len);
  for (size_t off = pidx_test_rows_start(b) + 1; off < len; off += 512) b[off] ^= 0x5a;
  pidx_test_spill(p.file, b, len);
  free(b);
  bfh_db *db = open_ro(&p, 1);
  assert_int_equal(pidx_test_persisted(db), pidx_test_live_tables(db)); /* the directory checks out */
  (void)check(db, 1, NULL);
  if (pidx_test_damaged(db) == 0) fail_msg("no damage counted");
  close_ro(db);
  expect_repaired(&p);
}

/* Only the map heads damaged (the rows intact): each selected table's head is refused, as the
   cache file's head differs from it, and the table is read whole. */
static void test_damaged_heads(void **state) {
  (void)state;
  paths_t p;
  made_db("heads", &p);
  size_t len;
  uint8_t *b = pidx_test_slurp(p.file, &len);
  uint32_t ng = decode_fixed32(b + 36), nt = decode_fixed32(b + 40);
  const uint8_t *dir = b + 64;
  size_t at = (size_t)ng * 40;
  for (uint32_t g = 0; g < ng; g++) at += 4u * decode_fixed32(dir + (size_t)g * 40 + 28);
  for (uint32_t i = 0; i < nt; i++) {
    const uint8_t *e = dir + at + (size_t)i * 48;
    uint64_t off = decode_fixed64(e + 24);
    uint32_t hl = decode_fixed32(e + 32);
    assert_true(hl > 40 && off + hl <= len);
    b[off + 40] ^= 0x01; /* inside its refs: its own CRC fails, and it is not the cache's */
  }
  pidx_test_spill(p.file, b, len);
  free(b);
  bfh_db *db = open_ro(&p, 1);
  assert_int_equal(pidx_test_persisted(db), pidx_test_live_tables(db));
  (void)check(db, 1, NULL);
  if (pidx_test_damaged(db) == 0) fail_msg("no damage counted");
  close_ro(db);
  expect_repaired(&p);
}

static void test_truncated(void **state) {
  (void)state;
  paths_t p;
  made_db("truncated", &p);
  size_t len;
  uint8_t *b = pidx_test_slurp(p.file, &len);
  pidx_test_spill(p.file, b, len - len / 3);
  free(b);
  bfh_db *db = open_ro(&p, 1);
  assert_int_equal(pidx_test_persisted(db), 0);
  (void)check(db, 1, NULL);
  assert_int_equal(pidx_test_damaged(db), 1);
  close_ro(db);
  expect_repaired(&p);
}

/* The times and inode of each table file of dir, by name. */
/* The database destroyed and made again at its path (generation 2: the same keys, other values
   of the same length: the same table numbers and sizes, often the same inodes); the index
   directory of generation 1 (its BFH-INDEX and cache files) stays. The file binds no table. */
static void test_rebuilt(void **state) {
  (void)state;
  paths_t p;
  make_paths("rebuilt", &p);
  char *l1, *l2;
  leveldb_close(ldb_gen_create(p.db, 1, &l1));
  ldb_test_files_t old;
  ldb_test_stat_tables(p.db, &old);
  bfh_db *db = open_ro(&p, 0);
  if (generation_missed(db, 1, "generation 1")) fail_msg("values missed");
  close_ro(db);
  assert_int_equal(access(p.file, F_OK), 0);
  size_t len;
  uint8_t *first = pidx_test_slurp(p.file, &len);
  leveldb_options_t *o = leveldb_options_create();
  char *err = NULL;
  leveldb_destroy_db(o, p.db, &err);
  leveldb_options_destroy(o);
  if (err) fail_msg("leveldb_destroy_db: %s", err);
  leveldb_close(ldb_gen_create(p.db, 2, &l2));
  if (strcmp(l1, l2) != 0) fail_msg("the rebuilt database's tables differ:\n  %s\n  %s", l1, l2);
  free(l1);
  free(l2);
  /* A new table may get the old one's inode; its times then tell them apart, unless both fell
     in one tick of the file system's clock (what the stamp margin rules out in use). Wait for
     a later tick, bounded, by touching the new table's inode. */
  ldb_test_files_t now;
  ldb_test_stat_tables(p.db, &now);
  for (size_t i = 0; i < now.n; i++)
    for (size_t j = 0; j < old.n; j++) {
      if (strcmp(now.name[i], old.name[j]) != 0) continue;
      char q[4400];
      snprintf(q, sizeof q, "%s/%s", p.db, now.name[i]);
      for (int tries = 0; ldb_test_same_file(&now.st[i], &old.st[j]); tries++) {
        if (tries == 1000000) fail_msg("%s: its times do not move", q);
        assert_int_equal(chmod(q, tries % 2 ? 0644 : 0600), 0);
        assert_int_equal(stat(q, &now.st[i]), 0);
      }
    }
  db = open_ro(&p, 1);
  assert_int_equal(pidx_test_persisted(db), 0);
  (void)check(db, 2, NULL);
  (void)check(db, 1, NULL);
  close_ro(db);
  /* The handle read the new tables: the file of generation 2 replaced the first. */
  size_t len2;
  uint8_t *second = pidx_test_slurp(p.file, &len2);
  assert_true(len2 != len || memcmp(first, second, len) != 0);
  free(first);
  free(second);
  db = open_ro(&p, 1);
  assert_int_equal(pidx_test_persisted(db), pidx_test_live_tables(db));
  (void)check(db, 2, NULL);
  close_ro(db);
}

/* The database made again at its path while a handle bound to its file is open: the handle's
   next refresh finds other files under the same numbers (it holds the old ones open, so their
   inodes are not reused) and the file answers for none of them any more. */
static void test_replaced_under_handle(void **state) {
  (void)state;
  paths_t p;
  made_db("replaced", &p);
  bfh_db *db = open_ro(&p, 1);
  size_t n = pidx_test_live_tables(db);
  assert_int_equal(pidx_test_persisted(db), n);
  (void)check(db, 1, NULL);
  char *l2;
  leveldb_options_t *o = leveldb_options_create();
  char *err = NULL;
  leveldb_destroy_db(o, p.db, &err);
  leveldb_options_destroy(o);
  if (err) fail_msg("leveldb_destroy_db: %s", err);
  leveldb_close(ldb_gen_create(p.db, 2, &l2));
  free(l2);
  (void)check(db, 2, NULL);
  assert_int_equal(pidx_test_persisted(db), 0);
  (void)check(db, 1, NULL);
  close_ro(db);
}

/* An index directory inside the database's (here the database's directory itself) is refused
   at the open (readonly_index_dir_test has every spelling): no file of it lands there. */
static void test_index_dir_in_db(void **state) {
  (void)state;
  paths_t p;
  make_paths("inside", &p);
  snprintf(p.index, sizeof p.index, "%s", p.db);
  snprintf(p.file, sizeof p.file, "%s/%s", p.db, PERSISTED_INDEX_FILE);
  char *tables;
  leveldb_close(ldb_gen_create(p.db, 1, &tables));
  free(tables);
  bfh_options o = options(&p);
  bfh_db *db = NULL;
  assert_int_equal(bfh_open(p.db, &o, &db), BFH_E_INVALID);
  assert_null(db);
  assert_int_not_equal(access(p.file, F_OK), 0);
}

static int group_setup(void **state) {
  (void)state;
  leaf_cache_test_set_stamp_margin(0);
  return test_tmpdir_create(tmpdir, sizeof tmpdir, "leveldb_persisted_index");
}

static int group_teardown(void **state) {
  (void)state;
  index_sync_test_hold_loaders(0);
  leaf_cache_test_set_stamp_margin(-1);
  return test_rmrf(tmpdir);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_present),        cmocka_unit_test(test_missing),
      cmocka_unit_test(test_stale),          cmocka_unit_test(test_damaged),
      cmocka_unit_test(test_damaged_heads),  cmocka_unit_test(test_truncated),
      cmocka_unit_test(test_rebuilt),        cmocka_unit_test(test_replaced_under_handle),
      cmocka_unit_test(test_index_dir_in_db),
  };
  return cmocka_run_group_tests(tests, group_setup, group_teardown);
}

/* Reliability of BFH_ENGINE_ROCKSDB (doc/rocksdb.md "Checking and repair", "Column families"):
 *   - bfh_check on a clean database (nothing damaged, every file counted) and on copies with
 *     one byte flipped in a table's data block, the MANIFEST, CURRENT, a WAL record and a
 *     filter cache file: the damage is reported naming the file (the cache's as harmless);
 *   - a database that lost its CURRENT: bfh_open with create_if_missing refuses it with
 *     BFH_E_CORRUPT naming CURRENT and leaves the directory as it was (RocksDB would create an
 *     empty database over it and then delete its tables as obsolete); bfh_check reports it;
 *     bfh_repair (RocksDB's RepairDB) gives back every key; a damaged table is moved to lost/
 *     by it, and the repair report counts it (tables_lost, files_moved);
 *   - column families: three families written by a stock program (a key in each holding a
 *     different value, values only one family has, flushed tables and WAL entries), searched
 *     through bfh_options.column_family by every method: exactly the family's keys, a value of
 *     another family never found, only the family's tables listed; a missing family and the
 *     option on another engine are BFH_E_INVALID naming them;
 *   - a table named NNNNNN.ldb where NNNNNN.sst is missing (RocksDB's TableCache opens that
 *     name too): bfh_check reads it clean (the same files, blocks and records as before the
 *     rename; without CURRENT, the same blocks), and the read-only and the read-write engine
 *     find every key by bfh_get and every value by every method.
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

#define NKEYS 3000u

static char g_dir[512], g_copy[600];

static int setup(void **state) {
  (void)state;
  if (test_tmpdir_create(g_dir, sizeof g_dir, "rocksdb_check_test") != 0) return -1;
  snprintf(g_copy, sizeof g_copy, "%s-copy", g_dir);
  return 0;
}

static int teardown(void **state) {
  (void)state;
  test_rmrf(g_copy);
  return test_rmrf(g_dir);
}

static void fail_if(char *msg, const char *what) {
  if (msg) fail_msg("%s: %s", what, msg);
}

static size_t value_of(uint32_t i, char *out) {
  return (size_t)sprintf(out, "v%u", i % 97);
}

/* A stock program's database: two flushed tables, then puts left in the WAL. */
static void stock_write(void) {
  rocksdb_options_t *o = rocksdb_options_create();
  rocksdb_options_set_create_if_missing(o, 1);
  char *msg = NULL;
  rocksdb_t *db = rocksdb_open(o, g_dir, &msg);
  fail_if(msg, "rocksdb_open");
  rocksdb_writeoptions_t *wo = rocksdb_writeoptions_create();
  rocksdb_flushoptions_t *fo = rocksdb_flushoptions_create();
  char k[16], v[16];
  for (uint32_t i = 0; i < NKEYS; i++) {
    int kl = sprintf(k, "k%05u", i);
    rocksdb_put(db, wo, k, (size_t)kl, v, value_of(i, v), &msg);
    fail_if(msg, "put");
    if (i == NKEYS / 3 || i == 2 * NKEYS / 3) {
      rocksdb_flush(db, fo, &msg);
      fail_if(msg, "flush");
    }
  }
  rocksdb_flushoptions_destroy(fo);
  rocksdb_writeoptions_destroy(wo);
  rocksdb_close(db);
  rocksdb_options_destroy(o);
}

static bfh_options rdb_options(void) {
  bfh_options o;
  bfh_options_init(&o);
  o.engine = BFH_ENGINE_ROCKSDB;
  o.value_filter_bits = 1 << 14;
  return o;
}

/* Every key holds its value (read through bfh). */
static void expect_all_keys(const char *dir) {
  bfh_options o = rdb_options();
  o.create_if_missing = 0;
  bfh_db *db = NULL;
  int rc = bfh_open(dir, &o, &db);
  if (rc != BFH_OK) fail_msg("bfh_open %s: %d %s", dir, rc, bfh_last_error(NULL));
  char k[16], v[16];
  for (uint32_t i = 0; i < NKEYS; i++) {
    int kl = sprintf(k, "k%05u", i);
    size_t vl = value_of(i, v);
    void *got = NULL;
    size_t gl = 0;
    assert_int_equal(bfh_get(db, k, (size_t)kl, &got, &gl), BFH_OK);
    assert_true(gl == vl && memcmp(got, v, vl) == 0);
    bfh_free(got);
  }
  bfh_search_stats st;
  assert_int_equal(bfh_search(db, "v5", 2, BFH_SEARCH_AUTO, NULL, NULL, &st), BFH_OK);
  assert_int_equal(st.results, (NKEYS + 96 - 5) / 97);
  bfh_close(db);
}

/* The clean database: written by a stock program, opened by bfh (filter cache files), then
   puts through bfh left in the WAL. */
static void make_clean(void) {
  stock_write();
  bfh_options o = rdb_options();
  bfh_db *db = NULL;
  assert_int_equal(bfh_open(g_dir, &o, &db), BFH_OK);
  char k[16], v[16];
  for (uint32_t i = 0; i < 50; i++) { /* the same values again: into the new WAL */
    int kl = sprintf(k, "k%05u", i);
    assert_int_equal(bfh_put(db, k, (size_t)kl, v, value_of(i, v)), BFH_OK);
  }
  assert_int_equal(bfh_close(db), BFH_OK);
}

typedef struct damage {
  char files[16][128];
  uint64_t offsets[16];
  size_t n;
} damage_t;

static void on_damage(void *arg, const char *file, uint64_t offset, const char *what) {
  damage_t *d = arg;
  (void)what;
  if (d->n < 16) {
    snprintf(d->files[d->n], sizeof d->files[0], "%s", file);
    d->offsets[d->n] = offset;
  }
  d->n++;
}

static int check(const char *dir, damage_t *d, bfh_check_report *rep) {
  bfh_options o = rdb_options();
  memset(d, 0, sizeof *d);
  return bfh_check(dir, &o, on_damage, d, rep);
}

/* The name of the first file of dir whose name ends with suffix (or starts with prefix when
   suffix begins with '^'), into out. */
static int find_file(const char *dir, const char *pattern, char *out, size_t cap) {
  DIR *d = opendir(dir);
  if (!d) return -1;
  struct dirent *de;
  int found = -1;
  while (found && (de = readdir(d))) {
    size_t n = strlen(de->d_name), m = strlen(pattern);
    int hit = pattern[0] == '^' ? strncmp(de->d_name, pattern + 1, m - 1) == 0
                                : n >= m && strcmp(de->d_name + n - m, pattern) == 0;
    if (hit) {
      snprintf(out, cap, "%s", de->d_name);
      found = 0;
    }
  }
  closedir(d);
  return found;
}

static void copy_clean(void) {
  test_rmrf(g_copy);
  assert_int_equal(test_copy_dir(g_dir, g_copy), 0);
}

/* A byte of file name (in the copy) flipped; bfh_check must name the file. */
static void expect_damage_named(const char *name, uint64_t off, const char *reported,
                                int harmless) {
  copy_clean();
  char path[1200];
  snprintf(path, sizeof path, "%s/%s", g_copy, name);
  assert_int_equal(test_file_xor_byte(path, off, 0x5a), 0);
  damage_t d;
  bfh_check_report rep;
  int rc = check(g_copy, &d, &rep);
  if (harmless) {
    assert_int_equal(rc, BFH_OK);
    assert_int_equal(rep.damaged, 0);
    assert_int_equal(rep.cache_damaged, 1);
  } else {
    if (rc != BFH_E_CORRUPT)
      fail_msg("%s at %llu: check gave %d (%s), damage %zu", name, (unsigned long long)off, rc,
               bfh_last_error(NULL), d.n);
    assert_true(rep.damaged >= 1);
  }
  int named = 0;
  for (size_t i = 0; i < d.n && i < 16; i++) named |= strstr(d.files[i], reported) != NULL;
  if (!named)
    fail_msg("%s damaged at %llu: not reported (%zu reports, first '%s')", name,
             (unsigned long long)off, d.n, d.n ? d.files[0] : "");
}

static void test_rocksdb_check_clean_and_damaged(void **state) {
  (void)state;
  make_clean();
  damage_t d;
  bfh_check_report rep;
  int rc = check(g_dir, &d, &rep);
  if (rc != BFH_OK) fail_msg("check: %d %s (%zu: %s)", rc, bfh_last_error(NULL), d.n, d.files[0]);
  assert_int_equal(rep.damaged, 0);
  assert_int_equal(rep.cache_damaged, 0);
  assert_int_equal(d.n, 0);
  assert_true(rep.files >= 6); /* CURRENT, MANIFEST, 3 tables, a WAL, cache files, OPTIONS */
  assert_true(rep.blocks >= 3);
  assert_true(rep.records >= 50);

  char name[256], cache[512], cdir[700];
  assert_int_equal(find_file(g_dir, ".sst", name, sizeof name), 0);
  expect_damage_named(name, 20, name, 0); /* the first data block */
  assert_int_equal(find_file(g_dir, "^MANIFEST-", name, sizeof name), 0);
  expect_damage_named(name, 12, name, 0);
  expect_damage_named("CURRENT", 0, "CURRENT", 0);
  assert_int_equal(find_file(g_dir, ".log", name, sizeof name), 0);
  expect_damage_named(name, 20, name, 0);
  snprintf(cdir, sizeof cdir, "%s/bfh-filters", g_dir);
  assert_int_equal(find_file(cdir, ".vf", name, sizeof name), 0);
  snprintf(cache, sizeof cache, "bfh-filters/%s", name);
  expect_damage_named(cache, 30, cache, 1);

  /* A live table deleted: missing, named by the MANIFEST. */
  copy_clean();
  assert_int_equal(find_file(g_copy, ".sst", name, sizeof name), 0);
  char path[1200];
  snprintf(path, sizeof path, "%s/%s", g_copy, name);
  assert_int_equal(unlink(path), 0);
  assert_int_equal(check(g_copy, &d, &rep), BFH_E_CORRUPT);
  assert_true(d.n >= 1 && strcmp(d.files[0], name) == 0);
}

static int count_tables(const char *dir) {
  DIR *d = opendir(dir);
  int n = 0;
  struct dirent *de;
  while (d && (de = readdir(d))) n += strstr(de->d_name, ".sst") != NULL;
  if (d) closedir(d);
  return n;
}

/* A lost CURRENT: refused, reported by check, and repaired without a key lost. */
static void test_rocksdb_lost_current(void **state) {
  (void)state;
  stock_write();
  expect_all_keys(g_dir); /* bfh's open flushes the WAL: three tables now */
  int tables = count_tables(g_dir);
  assert_true(tables >= 3);
  char path[1200];
  snprintf(path, sizeof path, "%s/CURRENT", g_dir);
  assert_int_equal(unlink(path), 0);

  bfh_options o = rdb_options();
  o.create_if_missing = 1;
  bfh_db *db = NULL;
  int rc = bfh_open(g_dir, &o, &db);
  if (rc != BFH_E_CORRUPT) fail_msg("open without CURRENT: %d %s", rc, bfh_last_error(NULL));
  assert_non_null(strstr(bfh_last_error(NULL), "CURRENT"));
  assert_true(access(path, F_OK) != 0); /* nothing created over it */
  assert_int_equal(count_tables(g_dir), tables);
  o.create_if_missing = 0;
  assert_int_equal(bfh_open(g_dir, &o, &db), BFH_E_CORRUPT);

  damage_t d;
  bfh_check_report rep;
  assert_int_equal(check(g_dir, &d, &rep), BFH_E_CORRUPT);
  assert_true(d.n >= 1 && strcmp(d.files[0], "CURRENT") == 0);
  assert_true(rep.blocks >= 3); /* every table read although the MANIFEST is not known */

  bfh_repair_report rr;
  rc = bfh_repair(g_dir, &o, &rr);
  if (rc != BFH_OK) fail_msg("repair: %d %s", rc, bfh_last_error(NULL));
  assert_int_equal(rr.tables_lost, 0);
  expect_all_keys(g_dir);
  assert_int_equal(check(g_dir, &d, &rep), BFH_OK);

  /* A damaged table: RocksDB's repair moves it to lost/ whole; the report says so. */
  char name[256];
  assert_int_equal(find_file(g_dir, ".sst", name, sizeof name), 0);
  snprintf(path, sizeof path, "%s/%s", g_dir, name);
  assert_int_equal(test_file_xor_byte(path, 20, 0x5a), 0);
  memset(&rr, 0, sizeof rr);
  assert_int_equal(bfh_repair(g_dir, &o, &rr), BFH_OK);
  assert_int_equal(rr.tables_lost, 1);
  assert_true(rr.files_moved >= 1);
  snprintf(path, sizeof path, "%s/lost/%s", g_dir, name);
  assert_int_equal(access(path, F_OK), 0);
}

/* ---- Column families ------------------------------------------------------------------- */

#define NCF 3
static const char *const CF_NAMES[NCF] = {"default", "alpha", "beta"};
#define CF_KEYS 600u

/* Family f holds "s%04u" (i < CF_KEYS) with value "x<f>-<i % 7>" and "only<f>-%04u" with value
   "mine<f>". */
static void cf_write(void) {
  rocksdb_options_t *o = rocksdb_options_create();
  rocksdb_options_set_create_if_missing(o, 1);
  rocksdb_options_set_create_missing_column_families(o, 1);
  const rocksdb_options_t *opts[NCF] = {o, o, o};
  rocksdb_column_family_handle_t *h[NCF];
  char *msg = NULL;
  rocksdb_t *db =
      rocksdb_open_column_families(o, g_dir, NCF, (const char *const *)CF_NAMES, opts, h, &msg);
  fail_if(msg, "rocksdb_open_column_families");
  rocksdb_writeoptions_t *wo = rocksdb_writeoptions_create();
  rocksdb_flushoptions_t *fo = rocksdb_flushoptions_create();
  char k[32], v[32];
  for (int f = 0; f < NCF; f++) {
    for (uint32_t i = 0; i < CF_KEYS; i++) {
      int kl = sprintf(k, "s%04u", i), vl = sprintf(v, "x%d-%u", f, i % 7);
      rocksdb_put_cf(db, wo, h[f], k, (size_t)kl, v, (size_t)vl, &msg);
      fail_if(msg, "put_cf");
      kl = sprintf(k, "only%d-%04u", f, i);
      vl = sprintf(v, "mine%d", f);
      rocksdb_put_cf(db, wo, h[f], k, (size_t)kl, v, (size_t)vl, &msg);
      fail_if(msg, "put_cf");
      if (i == CF_KEYS / 2 && f > 0) { /* alpha and beta: a table, the rest in the WAL */
        rocksdb_flush_cf(db, fo, h[f], &msg);
        fail_if(msg, "flush_cf");
      }
    }
  }
  rocksdb_flushoptions_destroy(fo);
  rocksdb_writeoptions_destroy(wo);
  for (int f = 0; f < NCF; f++) rocksdb_column_family_handle_destroy(h[f]);
  rocksdb_close(db);
  rocksdb_options_destroy(o);
}

typedef struct keyset {
  char keys[4096][16];
  size_t n;
} keyset_t;

static int on_key(void *arg, const void *key, size_t len) {
  keyset_t *s = arg;
  if (s->n < 4096 && len < 16) {
    memcpy(s->keys[s->n], key, len);
    s->keys[s->n][len] = 0;
  }
  s->n++;
  return 0;
}

/* Searches val by every method: exactly want keys, each with prefix (NULL: none expected). */
static void cf_expect(bfh_db *db, const char *val, size_t want, const char *prefix) {
  for (int m = BFH_SEARCH_SCAN; m <= BFH_SEARCH_AUTO; m++) {
    keyset_t *s = calloc(1, sizeof *s);
    assert_non_null(s);
    bfh_search_stats st;
    int rc = bfh_search(db, val, strlen(val), (bfh_method)m, on_key, s, &st);
    if (rc != BFH_OK) fail_msg("search '%s' method %d: %d %s", val, m, rc, bfh_last_error(db));
    if (s->n != want) fail_msg("search '%s' method %d: %zu keys, want %zu", val, m, s->n, want);
    for (size_t i = 0; i < s->n; i++) assert_memory_equal(s->keys[i], prefix, strlen(prefix));
    free(s);
  }
}

static void test_rocksdb_column_families(void **state) {
  (void)state;
  cf_write();
  int tables[NCF] = {0};
  for (int f = 0; f < NCF; f++) {
    bfh_options o = rdb_options();
    o.column_family = f == 0 ? NULL : CF_NAMES[f];
    bfh_db *db = NULL;
    int rc = bfh_open(g_dir, &o, &db);
    if (rc != BFH_OK) fail_msg("open family %s: %d %s", CF_NAMES[f], rc, bfh_last_error(NULL));
    char val[32], prefix[16];
    for (int g = 0; g < NCF; g++) {
      sprintf(val, "x%d-3", g);
      cf_expect(db, val, g == f ? (CF_KEYS + 3) / 7 : 0, "s");
      sprintf(val, "mine%d", g);
      sprintf(prefix, "only%d-", g);
      cf_expect(db, val, g == f ? CF_KEYS : 0, prefix);
    }
    /* A put through bfh, unflushed (the WAL read for this family), then flushed. */
    sprintf(val, "fresh%d", f);
    assert_int_equal(bfh_put(db, "s0001", 5, val, strlen(val)), BFH_OK);
    cf_expect(db, val, 1, "s0001");
    sprintf(val, "x%d-1", f);
    cf_expect(db, val, (CF_KEYS + 5) / 7 - 1, "s");
    assert_int_equal(bfh_flush(db), BFH_OK);
    sprintf(val, "fresh%d", f);
    cf_expect(db, val, 1, "s0001");
    bfh_search_stats st;
    assert_int_equal(bfh_search(db, "none", 4, BFH_SEARCH_SCAN, NULL, NULL, &st), BFH_OK);
    tables[f] = (int)st.tables_live;
    assert_int_equal(bfh_close(db), BFH_OK);
  }
  /* Each family listed its own tables only: the default one 2 (recovered at the first open,
     then the flush), alpha and beta 3 (the stock flush, recovery, the flush). */
  assert_int_equal(tables[0], 2);
  assert_int_equal(tables[1], 3);
  assert_int_equal(tables[2], 3);

  bfh_options o = rdb_options();
  o.column_family = "gamma";
  bfh_db *db = NULL;
  assert_int_equal(bfh_open(g_dir, &o, &db), BFH_E_INVALID);
  assert_non_null(strstr(bfh_last_error(NULL), "gamma"));
  o.column_family = "";
  assert_int_equal(bfh_open(g_dir, &o, &db), BFH_E_INVALID);
  char other[700];
  snprintf(other, sizeof other, "%s-other", g_dir);
  o.column_family = "alpha"; /* a new database has only "default": nothing created */
  assert_int_equal(bfh_open(other, &o, &db), BFH_E_INVALID);
  assert_non_null(strstr(bfh_last_error(NULL), "alpha"));
  bfh_options_init(&o);
  o.column_family = "alpha";
  for (int e = 0; e < 2; e++) {
    o.engine = e ? BFH_ENGINE_LEVELDB : BFH_ENGINE_LSM;
    assert_int_equal(bfh_open(other, &o, &db), BFH_E_INVALID);
    assert_non_null(strstr(bfh_last_error(NULL), "column_family"));
  }
  struct stat sb;
  assert_true(stat(other, &sb) != 0); /* nothing created */
  /* The check reads every family's tables. */
  damage_t d;
  bfh_check_report rep;
  assert_int_equal(check(g_dir, &d, &rep), BFH_OK);
  assert_true(rep.blocks >= 8);
}

/* ---- A table named .ldb ------------------------------------------------------------------ */

/* Every key by bfh_get, and every value by every method: exactly its keys. */
static void expect_every_key_and_value(bfh_db *db, const char *what) {
  char k[16], v[16];
  for (uint32_t i = 0; i < NKEYS; i++) {
    int kl = sprintf(k, "k%05u", i);
    size_t vl = value_of(i, v);
    void *got = NULL;
    size_t gl = 0;
    int rc = bfh_get(db, k, (size_t)kl, &got, &gl);
    if (rc != BFH_OK || gl != vl || memcmp(got, v, vl) != 0)
      fail_msg("%s: get %s: %d %s", what, k, rc, bfh_last_error(db));
    bfh_free(got);
  }
  for (uint32_t j = 0; j < 97; j++) {
    size_t vl = value_of(j, v);
    for (int m = BFH_SEARCH_SCAN; m <= BFH_SEARCH_AUTO; m++) {
      bfh_search_stats st;
      int rc = bfh_search(db, v, vl, (bfh_method)m, NULL, NULL, &st);
      if (rc != BFH_OK || st.results != (NKEYS + 96 - j) / 97)
        fail_msg("%s: search %s by %s: %d, %llu keys, wanted %u (%s)", what, v,
                 bfh_method_name((bfh_method)m), rc, (unsigned long long)st.results,
                 (NKEYS + 96 - j) / 97, rc ? bfh_last_error(db) : "");
    }
  }
}

static void test_rocksdb_table_named_ldb(void **state) {
  (void)state;
  stock_write();
  damage_t d;
  bfh_check_report before, after;
  assert_int_equal(check(g_dir, &d, &before), BFH_OK);
  /* A live table renamed to the LevelDB name. */
  char name[256], from[1200], to[1200];
  assert_int_equal(find_file(g_dir, ".sst", name, sizeof name), 0);
  snprintf(from, sizeof from, "%s/%s", g_dir, name);
  snprintf(to, sizeof to, "%s/%.*s.ldb", g_dir, (int)(strlen(name) - 4), name);
  assert_int_equal(rename(from, to), 0);

  int rc = check(g_dir, &d, &after);
  if (rc != BFH_OK || after.damaged || d.n)
    fail_msg("check with %s named .ldb: %d %s (%zu reports, first '%s')", name, rc,
             bfh_last_error(NULL), d.n, d.n ? d.files[0] : "");
  assert_int_equal(after.files, before.files);
  assert_int_equal(after.blocks, before.blocks);
  assert_int_equal(after.records, before.records);
  /* Without CURRENT the check reads every table of the directory: the .ldb too. */
  copy_clean();
  char current[1200];
  snprintf(current, sizeof current, "%s/CURRENT", g_copy);
  assert_int_equal(unlink(current), 0);
  assert_int_equal(check(g_copy, &d, &after), BFH_E_CORRUPT);
  assert_true(d.n == 1 && strcmp(d.files[0], "CURRENT") == 0);
  assert_int_equal(after.blocks, before.blocks);
  assert_int_equal(test_rmrf(g_copy), 0);

  /* The read-only engine (its filters in another directory). */
  bfh_options o = rdb_options();
  o.read_only = 1;
  o.index_dir = g_copy;
  bfh_db *db = NULL;
  rc = bfh_open(g_dir, &o, &db);
  if (rc != BFH_OK) fail_msg("read-only open: %d %s", rc, bfh_last_error(NULL));
  expect_every_key_and_value(db, "read-only");
  assert_int_equal(bfh_close(db), BFH_OK);

  /* The read-write engine: RocksDB opens the .ldb itself, bfh's indexer reads it. */
  o = rdb_options();
  o.create_if_missing = 0;
  rc = bfh_open(g_dir, &o, &db);
  if (rc != BFH_OK) fail_msg("open: %d %s", rc, bfh_last_error(NULL));
  expect_every_key_and_value(db, "read-write");
  assert_int_equal(bfh_close(db), BFH_OK);
  assert_int_equal(access(to, F_OK), 0); /* still there, under that name */
  rc = check(g_dir, &d, &after);
  if (rc != BFH_OK || after.damaged)
    fail_msg("check after the read-write engine: %d %s", rc, bfh_last_error(NULL));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_rocksdb_check_clean_and_damaged, setup, teardown),
      cmocka_unit_test_setup_teardown(test_rocksdb_lost_current, setup, teardown),
      cmocka_unit_test_setup_teardown(test_rocksdb_column_families, setup, teardown),
      cmocka_unit_test_setup_teardown(test_rocksdb_table_named_ldb, setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

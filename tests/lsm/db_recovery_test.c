/* Recovery that meets damage: a manifest or a cleanly closed log that lost records refuses
 * to open with ST_E_CORRUPT naming the file, and deletes nothing; a tail torn by a crash
 * (a change that never committed) still opens, with every key, and deletes nothing either.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lsm/db.h"
#include "tests/lsm/db_test_util.h"
#include "tests/test_util.h"

#define NKEYS 20000
#define MAX_VALUE 100
#define MAX_FILES 512

typedef struct fixture {
  char dir[512];  /* the database, built once per test */
  char copy[600]; /* a damaged copy */
} fixture_t;

/* Small memtables and tables: many flushes and compactions, so the manifest has many records
   and the tables of its early records are long gone. */
static void opts(lsm_options_t *o) {
  lsm_options_init(o);
  o->memtable_bytes = 64 << 10;
  o->table_bytes = 64 << 10;
  o->level1_bytes = 256 << 10;
}

static void put_all(lsm_db_t *db, uint64_t n) {
  char key[32];
  uint8_t val[MAX_VALUE];
  err_t e;
  for (uint64_t id = 0; id < n; id++) {
    size_t klen = test_key(key, id);
    size_t vlen = test_value(val, id + 1, MAX_VALUE);
    if (lsm_put(db, key, klen, val, vlen, &e) != ST_OK) fail_msg("put: %s", e.msg);
  }
}

static int setup(void **state) {
  fixture_t *fx = calloc(1, sizeof *fx);
  if (!fx || test_tmpdir_create(fx->dir, sizeof fx->dir, "db_recovery") != 0) return -1;
  snprintf(fx->copy, sizeof fx->copy, "%s-copy", fx->dir);
  *state = fx;
  return 0;
}

/* rm -r path, if it exists. */
static int remove_tree(const char *path) {
  return access(path, F_OK) == 0 ? test_rmrf(path) : 0;
}

static int teardown(void **state) {
  fixture_t *fx = *state;
  int rc = remove_tree(fx->dir) | remove_tree(fx->copy);
  free(fx);
  return rc;
}

/* Builds the database: NKEYS keys, flushed and compacted many times, the last few thousand
   only in the log; then closed cleanly. */
static void build(fixture_t *fx, int flush_at_end) {
  lsm_options_t o;
  opts(&o);
  lsm_db_t *db = NULL;
  err_t e;
  if (lsm_open(fx->dir, &o, &db, &e) != ST_OK) fail_msg("open: %s", e.msg);
  put_all(db, NKEYS);
  if (flush_at_end) assert_int_equal(lsm_flush(db, &e), ST_OK);
  assert_int_equal(lsm_close(db), ST_OK);
}

/* The names in dir, sorted; returns how many. */
static size_t list_dir(const char *dir, char names[][64]) {
  DIR *d = opendir(dir);
  assert_non_null(d);
  size_t n = 0;
  struct dirent *de;
  while ((de = readdir(d))) {
    if (de->d_name[0] == '.') continue;
    assert_true(n < MAX_FILES);
    snprintf(names[n++], 64, "%.63s", de->d_name);
  }
  closedir(d);
  qsort(names, n, 64, (int (*)(const void *, const void *))strcmp);
  return n;
}

/* Every name of before is still in dir. */
static void expect_nothing_deleted(const char *dir, char before[][64], size_t nbefore) {
  static char after[MAX_FILES][64];
  size_t nafter = list_dir(dir, after);
  for (size_t i = 0; i < nbefore; i++)
    if (!bsearch(before[i], after, nafter, 64, (int (*)(const void *, const void *))strcmp))
      fail_msg("%s/%s was deleted by an open that saw damage", dir, before[i]);
}

/* The one file of dir whose name starts with prefix (largest name if several). */
static void find_file(const char *dir, const char *prefix, const char *suffix, char *path,
                      size_t cap) {
  static char names[MAX_FILES][64];
  size_t n = list_dir(dir, names);
  const char *best = NULL;
  for (size_t i = 0; i < n; i++) {
    size_t len = strlen(names[i]);
    if (strncmp(names[i], prefix, strlen(prefix)) != 0) continue;
    if (suffix && (len < strlen(suffix) || strcmp(names[i] + len - strlen(suffix), suffix)))
      continue;
    best = names[i];
  }
  if (!best) fail_msg("no %s*%s in %s", prefix, suffix ? suffix : "", dir);
  snprintf(path, cap, "%s/%s", dir, best);
}

static uint64_t file_size(const char *path) {
  struct stat st;
  assert_int_equal(stat(path, &st), 0);
  return (uint64_t)st.st_size;
}

/* Opens dir: ST_E_CORRUPT whose message names `file` (returns 0), or ST_OK with every key
   and its value (returns 1). Anything else fails the test. */
static int open_corrupt_or_whole(const char *dir, const char *file) {
  lsm_options_t o;
  opts(&o);
  o.create_if_missing = 0;
  lsm_db_t *db = NULL;
  err_t e;
  err_clear(&e);
  int rc = lsm_open(dir, &o, &db, &e);
  if (rc == ST_E_CORRUPT) {
    if (!strstr(e.msg, file)) fail_msg("corruption message does not name %s: %s", file, e.msg);
    assert_null(db);
    return 0;
  }
  if (rc != ST_OK) fail_msg("open: want OK or ST_E_CORRUPT, got %d (%s)", rc, e.msg);
  char key[32];
  uint8_t want[MAX_VALUE];
  for (uint64_t id = 0; id < NKEYS; id++) {
    size_t klen = test_key(key, id);
    void *val = NULL;
    size_t vlen = 0;
    rc = lsm_get(db, key, klen, &val, &vlen, &e);
    if (rc != ST_OK) fail_msg("opened with OK, but get %s: %d %s", key, rc, e.msg);
    size_t n = test_value(want, id + 1, MAX_VALUE);
    if (n != vlen || memcmp(want, val, n) != 0) fail_msg("get %s: wrong value", key);
    free(val);
  }
  assert_int_equal(lsm_close(db), ST_OK);
  return 1;
}

/* Damages a fresh copy of the database with `damage` at `arg`, opens it, and checks that it
   either refuses or has every key, and that no file was deleted. Returns open's verdict. */
typedef void (*damage_fn)(const char *path, uint64_t arg);

static int try_damage(fixture_t *fx, const char *prefix, const char *suffix, damage_fn damage,
                      uint64_t arg) {
  static char before[MAX_FILES][64];
  assert_int_equal(remove_tree(fx->copy), 0);
  assert_int_equal(test_copy_dir(fx->dir, fx->copy), 0);
  char path[1024];
  find_file(fx->copy, prefix, suffix, path, sizeof path);
  damage(path, arg);
  size_t n = list_dir(fx->copy, before);
  int whole = open_corrupt_or_whole(fx->copy, strrchr(path, '/') + 1);
  expect_nothing_deleted(fx->copy, before, n);
  return whole;
}

static void truncate_to(const char *path, uint64_t len) {
  assert_int_equal(truncate(path, (off_t)len), 0);
}

static void flip_at_end(const char *path, uint64_t back) {
  assert_int_equal(test_file_xor_byte(path, file_size(path) - back, 0x5a), 0);
}

/* A manifest cut anywhere after its first record: the records lost named tables and logs
   that are gone since, so the open must refuse; never an OK with keys missing. */
static void test_db_recovery_truncated_manifest_refuses(void **state) {
  fixture_t *fx = *state;
  build(fx, 1);
  char path[1024];
  find_file(fx->dir, "MANIFEST-", NULL, path, sizeof path);
  uint64_t size = file_size(path);
  assert_true(size > 2000); /* many records */
  int refused = 0, tried = 0;
  for (uint64_t len = size / 8; len < size; len += size / 8) {
    refused += !try_damage(fx, "MANIFEST-", NULL, truncate_to, len);
    tried++;
  }
  print_message("manifest of %llu bytes cut at %d lengths: %d refused, %d whole\n",
                (unsigned long long)size, tried, refused, tried - refused);
  /* Cut at half, the lost records flushed and compacted away files the first half names. */
  assert_int_equal(try_damage(fx, "MANIFEST-", NULL, truncate_to, size / 2), 0);
}

/* A byte flipped in one of the last records (the last is the clean-close record): refused,
   or whole when the record's loss costs nothing. */
static void test_db_recovery_flipped_manifest_tail(void **state) {
  fixture_t *fx = *state;
  build(fx, 1);
  int refused = 0, tried = 0;
  for (uint64_t back = 1; back < 200; back += 7) {
    refused += !try_damage(fx, "MANIFEST-", NULL, flip_at_end, back);
    tried++;
  }
  print_message("manifest tail: %d flips, %d refused, %d whole\n", tried, refused, tried - refused);
  assert_true(refused > 0); /* the flush records before the close record lose data */
}

/* A crash in the middle of a manifest write leaves a record cut short at the end: that
   change never committed, and the open goes on with every key and deletes nothing. */
static void append_torn_record(const char *path, uint64_t len) {
  FILE *fp = fopen(path, "ab");
  assert_non_null(fp);
  uint8_t header[7] = {0x12, 0x34, 0x56, 0x78, 200, 0, 1}; /* FULL, 200 bytes */
  assert_int_equal(fwrite(header, 1, sizeof header, fp), sizeof header);
  for (uint64_t i = 0; i < len; i++) assert_int_equal(fputc(0x42, fp), 0x42);
  fclose(fp);
}

static void test_db_recovery_torn_manifest_tail_opens(void **state) {
  fixture_t *fx = *state;
  build(fx, 1);
  static char before[MAX_FILES][64];
  for (uint64_t len = 0; len < 100; len += 33) {
    assert_int_equal(remove_tree(fx->copy), 0);
    assert_int_equal(test_copy_dir(fx->dir, fx->copy), 0);
    char path[1024];
    find_file(fx->copy, "MANIFEST-", NULL, path, sizeof path);
    append_torn_record(path, len);
    size_t n = list_dir(fx->copy, before);
    assert_int_equal(open_corrupt_or_whole(fx->copy, "MANIFEST-"), 1);
    expect_nothing_deleted(fx->copy, before, n);
  }
}

/* A log closed cleanly holds acknowledged writes to its last byte: damage anywhere in it,
   the last record included, or a cut, refuses the open. */
static void test_db_recovery_clean_log_damage_refuses(void **state) {
  fixture_t *fx = *state;
  build(fx, 0); /* the last keys are only in the log */
  char path[1024];
  find_file(fx->dir, "", ".log", path, sizeof path);
  assert_true(file_size(path) > 100);
  for (uint64_t back = 1; back < 40; back += 3)
    assert_int_equal(try_damage(fx, "", ".log", flip_at_end, back), 0);
  uint64_t size = file_size(path);
  for (uint64_t cut = 1; cut < 40; cut += 5)
    assert_int_equal(try_damage(fx, "", ".log", truncate_to, size - cut), 0);
}

/* CURRENT naming a manifest that does not exist. */
static void name_missing_manifest(const char *path, uint64_t arg) {
  (void)arg;
  FILE *fp = fopen(path, "wb");
  assert_non_null(fp);
  fputs("MANIFEST-999999\n", fp);
  fclose(fp);
}

static void test_db_recovery_current_names_missing_manifest(void **state) {
  fixture_t *fx = *state;
  build(fx, 1);
  assert_int_equal(try_damage(fx, "CURRENT", NULL, name_missing_manifest, 0), 0);
}

/* A table the manifest lists, deleted behind the database's back. */
static void remove_file(const char *path, uint64_t arg) {
  (void)arg;
  assert_int_equal(unlink(path), 0);
}

static void test_db_recovery_missing_table_refuses(void **state) {
  fixture_t *fx = *state;
  build(fx, 1);
  assert_int_equal(try_damage(fx, "", ".sst", remove_file, 0), 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_db_recovery_truncated_manifest_refuses, setup, teardown),
      cmocka_unit_test_setup_teardown(test_db_recovery_flipped_manifest_tail, setup, teardown),
      cmocka_unit_test_setup_teardown(test_db_recovery_torn_manifest_tail_opens, setup, teardown),
      cmocka_unit_test_setup_teardown(test_db_recovery_clean_log_damage_refuses, setup, teardown),
      cmocka_unit_test_setup_teardown(test_db_recovery_current_names_missing_manifest, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_db_recovery_missing_table_refuses, setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

/* Corruption test: a byte flipped in a table, the log or the manifest gives ST_E_CORRUPT
 * with the damaged file and an offset in the message, and never a wrong answer.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lsm/db.h"
#include "tests/lsm/db_test_util.h"
#include "tests/test_util.h"

#define NKEYS 3000
#define MAX_VALUE 100

static void opts(lsm_options_t *o) {
  lsm_options_init(o);
  o->memtable_bytes = 1 << 20; /* everything stays in one memtable until lsm_flush */
}

/* Each test: a fresh directory, the database and iterator it has open (the teardown closes
   them if the test did not: a failed assertion leaves them open). */
typedef struct fixture {
  char dir[TEST_PATH_MAX];
  lsm_db_t *db;
  lsm_iter_t *it;
} fixture_t;

static int setup(void **state) {
  fixture_t *f = calloc(1, sizeof *f);
  if (!f) return -1;
  if (test_tmpdir_create(f->dir, sizeof f->dir, "db_corrupt") != 0) {
    free(f);
    return -1;
  }
  *state = f;
  return 0;
}

static int teardown(void **state) {
  fixture_t *f = *state;
  lsm_iter_destroy(f->it);
  int rc = 0;
  if (f->db && lsm_close(f->db) != ST_OK) rc = -1;
  if (test_rmrf(f->dir) != 0) rc = -1;
  free(f);
  return rc;
}

/* Closes the fixture's database and forgets it. */
static void close_db(fixture_t *f) {
  lsm_db_t *db = f->db;
  f->db = NULL;
  assert_int_equal(lsm_close(db), ST_OK);
}

static lsm_db_t *open_ok(const char *dir) {
  lsm_options_t o;
  opts(&o);
  lsm_db_t *db = NULL;
  err_t e;
  int rc = lsm_open(dir, &o, &db, &e);
  if (rc != ST_OK) fail_msg("open: %d %s", rc, e.msg);
  return db;
}

static void fill(lsm_db_t *db, uint64_t first, uint64_t n) {
  char key[32];
  uint8_t val[MAX_VALUE];
  err_t e;
  for (uint64_t id = first; id < first + n; id++) {
    size_t klen = test_key(key, id);
    size_t vlen = test_value(val, id + 1, MAX_VALUE);
    assert_int_equal(lsm_put(db, key, klen, val, vlen, &e), ST_OK);
  }
}

/* Finds the one file whose name ends with suffix (or starts with prefix when suffix is
   NULL) and writes its name into name. With several, the one with the largest name. */
static void find_file(const char *dir, const char *prefix, const char *suffix, char *name,
                      size_t cap) {
  DIR *d = opendir(dir);
  assert_non_null(d);
  name[0] = '\0';
  struct dirent *de;
  while ((de = readdir(d))) {
    size_t n = strlen(de->d_name);
    int match = suffix ? n > strlen(suffix) && strcmp(de->d_name + n - strlen(suffix), suffix) == 0
                       : strncmp(de->d_name, prefix, strlen(prefix)) == 0;
    if (match && strcmp(de->d_name, name) > 0) snprintf(name, cap, "%s", de->d_name);
  }
  closedir(d);
  if (!name[0]) fail_msg("no file %s*%s in %s", prefix ? prefix : "", suffix ? suffix : "", dir);
}

static uint64_t file_size(const char *path) {
  struct stat st;
  assert_int_equal(stat(path, &st), 0);
  return (uint64_t)st.st_size;
}

/* Every present key gives its value or ST_E_CORRUPT naming `file`; returns how many
   gave ST_E_CORRUPT. */
static uint64_t check_answers(lsm_db_t *db, const char *file) {
  char key[32];
  uint8_t want[MAX_VALUE];
  uint64_t corrupt = 0;
  for (uint64_t id = 0; id < NKEYS; id++) {
    size_t klen = test_key(key, id);
    void *val = NULL;
    size_t vlen = 0;
    err_t e;
    err_clear(&e);
    int rc = lsm_get(db, key, klen, &val, &vlen, &e);
    if (rc == ST_E_CORRUPT) {
      if (!strstr(e.msg, file) || !strstr(e.msg, " at "))
        fail_msg("corruption message lacks file %s or offset: %s", file, e.msg);
      corrupt++;
      continue;
    }
    if (rc != ST_OK) fail_msg("get %s: %d %s (a wrong answer)", key, rc, e.msg);
    size_t n = test_value(want, id + 1, MAX_VALUE);
    if (n != vlen || memcmp(want, val, n) != 0) fail_msg("get %s: wrong value", key);
    free(val);
  }
  return corrupt;
}

/* A table damaged in its first data block and (second run) in its footer. */
static void table_case(fixture_t *f, int footer) {
  char name[256], path[TEST_PATH_MAX + 256];
  f->db = open_ok(f->dir);
  fill(f->db, 0, NKEYS);
  err_t e;
  assert_int_equal(lsm_flush(f->db, &e), ST_OK);
  close_db(f);
  find_file(f->dir, NULL, ".sst", name, sizeof name);
  snprintf(path, sizeof path, "%s/%s", f->dir, name);
  uint64_t size = file_size(path);
  assert_int_equal(test_file_xor_byte(path, footer ? size - 12 : 40, 0x5a), 0);
  f->db = open_ok(f->dir);
  uint64_t corrupt = check_answers(f->db, name);
  print_message("table %s: byte at %llu flipped: %llu of %d gets reported corruption\n", name,
                (unsigned long long)(footer ? size - 12 : 40), (unsigned long long)corrupt, NKEYS);
  assert_true(corrupt > 0);
  /* An iterator stops with the same error rather than skipping the damage. */
  lsm_iter_t *it = f->it = lsm_iter_create(f->db);
  assert_non_null(it);
  uint64_t n = 0;
  for (lsm_iter_seek_first(it); lsm_iter_valid(it); lsm_iter_next(it)) n++;
  err_clear(&e);
  assert_int_equal(lsm_iter_status(it, &e), ST_E_CORRUPT);
  assert_non_null(strstr(e.msg, name));
  assert_true(n < NKEYS);
  f->it = NULL;
  lsm_iter_destroy(it);
  lsm_close(f->db); /* its status is not the point here */
  f->db = NULL;
}

static void test_db_corrupt_table_data_block(void **state) {
  table_case(*state, 0);
}

static void test_db_corrupt_table_footer(void **state) {
  table_case(*state, 1);
}

/* Opens dir expecting ST_E_CORRUPT naming file; a database that opens anyway is left in
 *db for the teardown. */
static void expect_open_corrupt(const char *dir, const char *file, lsm_db_t **db) {
  lsm_options_t o;
  opts(&o);
  err_t e;
  err_clear(&e);
  int rc = lsm_open(dir, &o, db, &e);
  if (rc != ST_E_CORRUPT) fail_msg("open: want ST_E_CORRUPT, got %d (%s)", rc, e.msg);
  print_message("open: %s\n", e.msg);
  if (!strstr(e.msg, file) || !strstr(e.msg, " at "))
    fail_msg("corruption message lacks file %s or offset: %s", file, e.msg);
  assert_null(*db);
}

static void test_db_corrupt_log_record(void **state) {
  fixture_t *f = *state;
  char name[256], path[TEST_PATH_MAX + 256];
  f->db = open_ok(f->dir);
  fill(f->db, 0, NKEYS);
  close_db(f); /* the data is only in the log */
  find_file(f->dir, NULL, ".log", name, sizeof name);
  snprintf(path, sizeof path, "%s/%s", f->dir, name);
  assert_true(file_size(path) > 10000);
  /* Damage a byte inside the first record, with many records after it. */
  assert_int_equal(test_file_xor_byte(path, 30, 0x5a), 0);
  expect_open_corrupt(f->dir, name, &f->db);
}

static void test_db_corrupt_manifest_record(void **state) {
  fixture_t *f = *state;
  char name[256], path[TEST_PATH_MAX + 256];
  f->db = open_ok(f->dir);
  err_t e;
  for (int i = 0; i < 4; i++) { /* several manifest records after the first */
    fill(f->db, (uint64_t)i * (NKEYS / 4), NKEYS / 4);
    assert_int_equal(lsm_flush(f->db, &e), ST_OK);
  }
  close_db(f);
  find_file(f->dir, "MANIFEST-", NULL, name, sizeof name);
  snprintf(path, sizeof path, "%s/%s", f->dir, name);
  /* Damage a byte inside the first record (the snapshot). */
  assert_int_equal(test_file_xor_byte(path, 12, 0x5a), 0);
  expect_open_corrupt(f->dir, name, &f->db);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_db_corrupt_table_data_block, setup, teardown),
      cmocka_unit_test_setup_teardown(test_db_corrupt_table_footer, setup, teardown),
      cmocka_unit_test_setup_teardown(test_db_corrupt_log_record, setup, teardown),
      cmocka_unit_test_setup_teardown(test_db_corrupt_manifest_record, setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

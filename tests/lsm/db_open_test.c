/* Opening and locking: a second open (same process or another) is BFH_E_BUSY; a
 * directory that is not a bfh LSM database (e.g. a LevelDB one) is BFH_E_INVALID and is
 * left untouched; a database of a future format version is BFH_E_UNSUPPORTED; data
 * survives close and reopen.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "lsm/db.h"
#include "lsm/filename.h"
#include "tests/lsm/db_test_util.h"
#include "util/coding.h"
#include "util/crc32c.h"

static int try_open(const char *dir, int create, lsm_db_t **db, err_t *e) {
  lsm_options_t o;
  lsm_options_init(&o);
  o.create_if_missing = create;
  *db = NULL;
  err_clear(e);
  return lsm_open(dir, &o, db, e);
}

static void write_text(const char *dir, const char *name, const void *data, size_t n) {
  char path[1024];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  FILE *f = fopen(path, "wb");
  assert_non_null(f);
  assert_int_equal(fwrite(data, 1, n, f), n);
  fclose(f);
}

static void test_db_open_second_open_is_busy(void **state) {
  (void)state;
  char dir[512];
  assert_int_equal(test_tmpdir_create(dir, sizeof dir, "db_open_busy"), 0);
  lsm_db_t *db, *db2;
  err_t e;
  assert_int_equal(try_open(dir, 1, &db, &e), BFH_OK);
  assert_int_equal(try_open(dir, 1, &db2, &e), BFH_E_BUSY);
  assert_null(db2);
  assert_non_null(strstr(e.msg, "LOCK"));
  /* From another process too. */
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    lsm_db_t *c;
    err_t ce;
    _exit(try_open(dir, 1, &c, &ce) == BFH_E_BUSY ? 0 : 1);
  }
  int status;
  assert_int_equal(waitpid(pid, &status, 0), pid);
  assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  assert_int_equal(lsm_close(db), BFH_OK);
  /* Released by close. */
  assert_int_equal(try_open(dir, 1, &db, &e), BFH_OK);
  assert_int_equal(lsm_close(db), BFH_OK);
  assert_int_equal(test_rmrf(dir), 0);
}

static void test_db_open_leveldb_directory_is_invalid(void **state) {
  (void)state;
  char dir[512], path[1024];
  assert_int_equal(test_tmpdir_create(dir, sizeof dir, "db_open_leveldb"), 0);
  /* The files a stock LevelDB database has. */
  write_text(dir, "CURRENT", "MANIFEST-000002\n", 16);
  write_text(dir, "MANIFEST-000002", "\x56\x54\x22\x01\x1c\x00\x01junk", 11);
  write_text(dir, "000003.log", "", 0);
  write_text(dir, "LOCK", "", 0);
  lsm_db_t *db;
  err_t e;
  int rc = try_open(dir, 1, &db, &e);
  assert_int_equal(rc, BFH_E_INVALID);
  assert_null(db);
  assert_non_null(strstr(e.msg, "not a bfh lsm database"));
  snprintf(path, sizeof path, "%s/IDENTITY", dir);
  assert_int_not_equal(access(path, F_OK), 0); /* untouched */
  assert_int_equal(test_rmrf(dir), 0);
}

static void test_db_open_missing_without_create_is_invalid(void **state) {
  (void)state;
  char dir[512], sub[600];
  assert_int_equal(test_tmpdir_create(dir, sizeof dir, "db_open_missing"), 0);
  snprintf(sub, sizeof sub, "%s/nothing", dir);
  lsm_db_t *db;
  err_t e;
  assert_int_equal(try_open(sub, 0, &db, &e), BFH_E_INVALID);
  assert_int_equal(try_open(dir, 0, &db, &e), BFH_E_INVALID); /* empty directory */
  assert_int_equal(test_rmrf(dir), 0);
}

static void test_db_open_future_version_is_unsupported(void **state) {
  (void)state;
  char dir[512];
  assert_int_equal(test_tmpdir_create(dir, sizeof dir, "db_open_future"), 0);
  lsm_db_t *db;
  err_t e;
  assert_int_equal(try_open(dir, 1, &db, &e), BFH_OK);
  assert_int_equal(lsm_close(db), BFH_OK);
  uint8_t id[LSM_IDENTITY_BYTES];
  memcpy(id, LSM_IDENTITY_MAGIC, 8);
  encode_fixed32(id + 8, LSM_FORMAT_VERSION + 1);
  encode_fixed32(id + 12, crc32c_mask(crc32c_value(id, 12)));
  write_text(dir, "IDENTITY", id, sizeof id);
  assert_int_equal(try_open(dir, 1, &db, &e), BFH_E_UNSUPPORTED);
  assert_non_null(strstr(e.msg, "version"));
  /* A damaged IDENTITY is corruption, not a foreign directory. */
  lsm_identity_encode(id);
  id[9] ^= 1;
  write_text(dir, "IDENTITY", id, sizeof id);
  assert_int_equal(try_open(dir, 1, &db, &e), BFH_E_CORRUPT);
  assert_int_equal(test_rmrf(dir), 0);
}

static void test_db_open_reopen_keeps_data(void **state) {
  (void)state;
  char dir[512], key[32];
  uint8_t val[64];
  assert_int_equal(test_tmpdir_create(dir, sizeof dir, "db_open_reopen"), 0);
  lsm_db_t *db;
  err_t e;
  assert_int_equal(try_open(dir, 1, &db, &e), BFH_OK);
  for (uint64_t i = 0; i < 5000; i++) {
    size_t vl = test_value(val, i + 1, sizeof val);
    assert_int_equal(lsm_put(db, key, test_key(key, i), val, vl, &e), BFH_OK);
    if (i == 2500) assert_int_equal(lsm_flush(db, &e), BFH_OK);
  }
  assert_int_equal(lsm_delete(db, key, test_key(key, 7), &e), BFH_OK);
  assert_int_equal(lsm_close(db), BFH_OK);
  for (int round = 0; round < 2; round++) {
    assert_int_equal(try_open(dir, 0, &db, &e), BFH_OK);
    for (uint64_t i = 0; i < 5000; i++) {
      void *v = NULL;
      size_t vl;
      int rc = lsm_get(db, key, test_key(key, i), &v, &vl, &e);
      if (i == 7) {
        assert_int_equal(rc, BFH_NOT_FOUND);
        continue;
      }
      assert_int_equal(rc, BFH_OK);
      size_t n = test_value(val, i + 1, sizeof val);
      assert_int_equal(vl, n);
      assert_memory_equal(v, val, n);
      free(v);
    }
    /* Empty values are values; empty keys are refused. */
    assert_int_equal(lsm_put(db, "e", 1, NULL, 0, &e), BFH_OK);
    void *v = NULL;
    size_t vl = 99;
    assert_int_equal(lsm_get(db, "e", 1, &v, &vl, &e), BFH_OK);
    assert_non_null(v);
    assert_int_equal(vl, 0);
    free(v);
    assert_int_equal(lsm_put(db, "", 0, "x", 1, &e), BFH_E_INVALID);
    assert_int_equal(lsm_close(db), BFH_OK);
  }
  assert_int_equal(test_rmrf(dir), 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_db_open_second_open_is_busy),
      cmocka_unit_test(test_db_open_leveldb_directory_is_invalid),
      cmocka_unit_test(test_db_open_missing_without_create_is_invalid),
      cmocka_unit_test(test_db_open_future_version_is_unsupported),
      cmocka_unit_test(test_db_open_reopen_keeps_data),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

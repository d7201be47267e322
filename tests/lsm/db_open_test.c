/* Opening and locking: a second open (same process or another) is ST_E_BUSY; a
 * directory that is not a bfh LSM database (e.g. a LevelDB one) is ST_E_INVALID and is
 * left untouched; a database of a future format version is ST_E_UNSUPPORTED; data
 * survives close and reopen; an open that only reads writes nothing.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "lsm/db.h"
#include "lsm/filename.h"
#include "util/env.h"
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

/* Each test: a fresh directory and the databases it opens, closed by the teardown if the
   test did not (a failed assertion leaves them open). */
typedef struct fixture {
  char dir[TEST_PATH_MAX];
  lsm_db_t *db, *db2;
} fixture_t;

static int setup(void **state) {
  fixture_t *f = calloc(1, sizeof *f);
  if (!f) return -1;
  if (test_tmpdir_create(f->dir, sizeof f->dir, "db_open") != 0) {
    free(f);
    return -1;
  }
  *state = f;
  return 0;
}

static int teardown(void **state) {
  fixture_t *f = *state;
  int rc = 0;
  if (f->db && lsm_close(f->db) != ST_OK) rc = -1;
  if (f->db2 && lsm_close(f->db2) != ST_OK) rc = -1;
  if (test_rmrf(f->dir) != 0) rc = -1;
  free(f);
  return rc;
}

/* Closes *db (the fixture's) and forgets it. */
static void close_db(lsm_db_t **db) {
  lsm_db_t *d = *db;
  *db = NULL;
  assert_int_equal(lsm_close(d), ST_OK);
}

static void write_text(const char *dir, const char *name, const void *data, size_t n) {
  char path[TEST_PATH_MAX + 256];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  FILE *f = fopen(path, "wb");
  assert_non_null(f);
  size_t written = fwrite(data, 1, n, f);
  int closed = fclose(f); /* before asserting: a failure leaks no stream */
  assert_int_equal(written, n);
  assert_int_equal(closed, 0);
}

static void test_db_open_second_open_is_busy(void **state) {
  fixture_t *f = *state;
  err_t e;
  assert_int_equal(try_open(f->dir, 1, &f->db, &e), ST_OK);
  assert_int_equal(try_open(f->dir, 1, &f->db2, &e), ST_E_BUSY);
  assert_null(f->db2);
  assert_non_null(strstr(e.msg, "LOCK"));
  /* From another process too. */
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    lsm_db_t *c;
    err_t ce;
    _exit(try_open(f->dir, 1, &c, &ce) == ST_E_BUSY ? 0 : 1);
  }
  int status;
  assert_int_equal(waitpid(pid, &status, 0), pid);
  assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  close_db(&f->db);
  /* Released by close. */
  assert_int_equal(try_open(f->dir, 1, &f->db, &e), ST_OK);
  close_db(&f->db);
}

static void test_db_open_leveldb_directory_is_invalid(void **state) {
  fixture_t *f = *state;
  char path[TEST_PATH_MAX + 64];
  /* The files a stock LevelDB database has. */
  write_text(f->dir, "CURRENT", "MANIFEST-000002\n", 16);
  write_text(f->dir, "MANIFEST-000002", "\x56\x54\x22\x01\x1c\x00\x01junk", 11);
  write_text(f->dir, "000003.log", "", 0);
  write_text(f->dir, "LOCK", "", 0);
  err_t e;
  int rc = try_open(f->dir, 1, &f->db, &e);
  assert_int_equal(rc, ST_E_INVALID);
  assert_null(f->db);
  assert_non_null(strstr(e.msg, "not a bfh lsm database"));
  snprintf(path, sizeof path, "%s/IDENTITY", f->dir);
  assert_int_not_equal(access(path, F_OK), 0); /* untouched */
}

static void test_db_open_missing_without_create_is_invalid(void **state) {
  fixture_t *f = *state;
  char sub[TEST_PATH_MAX + 64];
  snprintf(sub, sizeof sub, "%s/nothing", f->dir);
  err_t e;
  assert_int_equal(try_open(sub, 0, &f->db, &e), ST_E_INVALID);
  assert_int_equal(try_open(f->dir, 0, &f->db, &e), ST_E_INVALID); /* empty directory */
}

static void test_db_open_future_version_is_unsupported(void **state) {
  fixture_t *f = *state;
  err_t e;
  assert_int_equal(try_open(f->dir, 1, &f->db, &e), ST_OK);
  close_db(&f->db);
  uint8_t id[LSM_IDENTITY_BYTES];
  memcpy(id, LSM_IDENTITY_MAGIC, 8);
  encode_fixed32(id + 8, LSM_FORMAT_VERSION + 1);
  encode_fixed32(id + 12, crc32c_mask(crc32c_value(id, 12)));
  write_text(f->dir, "IDENTITY", id, sizeof id);
  assert_int_equal(try_open(f->dir, 1, &f->db, &e), ST_E_UNSUPPORTED);
  assert_non_null(strstr(e.msg, "version"));
  /* A damaged IDENTITY is corruption, not a foreign directory. */
  lsm_identity_encode(id);
  id[9] ^= 1;
  write_text(f->dir, "IDENTITY", id, sizeof id);
  assert_int_equal(try_open(f->dir, 1, &f->db, &e), ST_E_CORRUPT);
}

static void test_db_open_reopen_keeps_data(void **state) {
  fixture_t *f = *state;
  char key[32];
  uint8_t val[64];
  err_t e;
  assert_int_equal(try_open(f->dir, 1, &f->db, &e), ST_OK);
  lsm_db_t *db = f->db;
  for (uint64_t i = 0; i < 5000; i++) {
    size_t vl = test_value(val, i + 1, sizeof val);
    assert_int_equal(lsm_put(db, key, test_key(key, i), val, vl, &e), ST_OK);
    if (i == 2500) assert_int_equal(lsm_flush(db, &e), ST_OK);
  }
  assert_int_equal(lsm_delete(db, key, test_key(key, 7), &e), ST_OK);
  close_db(&f->db);
  for (int round = 0; round < 2; round++) {
    assert_int_equal(try_open(f->dir, 0, &f->db, &e), ST_OK);
    db = f->db;
    for (uint64_t i = 0; i < 5000; i++) {
      void *v = NULL;
      size_t vl;
      int rc = lsm_get(db, key, test_key(key, i), &v, &vl, &e);
      if (i == 7) {
        assert_int_equal(rc, ST_NOT_FOUND);
        continue;
      }
      assert_int_equal(rc, ST_OK);
      size_t n = test_value(val, i + 1, sizeof val);
      assert_int_equal(vl, n);
      assert_memory_equal(v, val, n);
      free(v);
    }
    /* Empty values are values; empty keys are refused. */
    assert_int_equal(lsm_put(db, "e", 1, NULL, 0, &e), ST_OK);
    void *v = NULL;
    size_t vl = 99;
    assert_int_equal(lsm_get(db, "e", 1, &v, &vl, &e), ST_OK);
    assert_non_null(v);
    assert_int_equal(vl, 0);
    free(v);
    assert_int_equal(lsm_put(db, "", 0, "x", 1, &e), ST_E_INVALID);
    close_db(&f->db);
  }
}

/* The directory's state: each file's name, size and CRC, sorted by name (malloc'd). */
static char *dir_state(const char *dir) {
  char **names = NULL;
  size_t n = 0;
  err_t e;
  assert_int_equal(env_list_dir(env_default(), dir, &names, &n, &e), ST_OK);
  for (size_t i = 1; i < n; i++) /* insertion sort: a few files */
    for (size_t j = i; j > 0 && strcmp(names[j - 1], names[j]) > 0; j--) {
      char *t = names[j];
      names[j] = names[j - 1];
      names[j - 1] = t;
    }
  size_t cap = 64 + n * 128, len = 0;
  char *out = calloc(1, cap);
  assert_non_null(out);
  for (size_t i = 0; i < n; i++) {
    char path[TEST_PATH_MAX + 64];
    snprintf(path, sizeof path, "%s/%s", dir, names[i]);
    void *data = NULL;
    size_t size = 0;
    assert_int_equal(env_read_file(env_default(), path, &data, &size, &e), ST_OK);
    len += (size_t)snprintf(out + len, cap - len, "%s:%zu:%08x\n", names[i], size,
                            crc32c_value(data, size));
    free(data);
  }
  env_names_free(names, n);
  return out;
}

/* An open that only reads writes nothing: no manifest, no CURRENT, no log, no deletion; its
   files stay byte for byte as they were. The first write after it starts the writer, and what
   it writes survives a reopen. (Before, every open wrote a new manifest and CURRENT.) */
static void test_db_open_reading_writes_nothing(void **state) {
  fixture_t *f = *state;
  char key[32];
  uint8_t val[64];
  err_t e;
  assert_int_equal(try_open(f->dir, 1, &f->db, &e), ST_OK);
  for (uint64_t i = 0; i < 3000; i++) {
    size_t vl = test_value(val, i + 1, sizeof val);
    assert_int_equal(lsm_put(f->db, key, test_key(key, i), val, vl, &e), ST_OK);
    if (i == 1500) assert_int_equal(lsm_flush(f->db, &e), ST_OK);
  }
  close_db(&f->db);
  char *before = dir_state(f->dir);
  for (int round = 0; round < 2; round++) {
    assert_int_equal(try_open(f->dir, 0, &f->db, &e), ST_OK);
    for (uint64_t i = 0; i < 3000; i += 7) {
      void *v = NULL;
      size_t vl;
      assert_int_equal(lsm_get(f->db, key, test_key(key, i), &v, &vl, &e), ST_OK);
      free(v);
    }
    assert_int_equal(lsm_wait_idle(f->db, &e), ST_OK);
    close_db(&f->db);
    char *after = dir_state(f->dir);
    assert_string_equal(after, before);
    free(after);
  }
  free(before);
  /* The first write after a reading open. */
  assert_int_equal(try_open(f->dir, 0, &f->db, &e), ST_OK);
  assert_int_equal(lsm_put(f->db, "new", 3, "v", 1, &e), ST_OK);
  assert_int_equal(lsm_delete(f->db, key, test_key(key, 3), &e), ST_OK);
  close_db(&f->db);
  assert_int_equal(try_open(f->dir, 0, &f->db, &e), ST_OK);
  void *v = NULL;
  size_t vl;
  assert_int_equal(lsm_get(f->db, "new", 3, &v, &vl, &e), ST_OK);
  assert_memory_equal(v, "v", 1);
  free(v);
  assert_int_equal(lsm_get(f->db, key, test_key(key, 3), &v, &vl, &e), ST_NOT_FOUND);
  for (uint64_t i = 0; i < 3000; i++) {
    if (i == 3) continue;
    assert_int_equal(lsm_get(f->db, key, test_key(key, i), &v, &vl, &e), ST_OK);
    size_t n = test_value(val, i + 1, sizeof val);
    assert_int_equal(vl, n);
    assert_memory_equal(v, val, n);
    free(v);
  }
  close_db(&f->db);
}

/* A memtable smaller than the arena's 64 KiB block still holds memtable_bytes of entries:
   measured against the whole block, every memtable of 32 KiB or less was full at its first
   entry, and the database wrote one table per put. Bound: an entry here takes at most 200
   bytes of arena (16-byte key, 64-byte value, the tag, the node and its tower), so a memtable
   flushed only when full holds at least memtable_bytes / 200 entries. */
static void test_db_open_small_memtable_holds_many_entries(void **state) {
  fixture_t *f = *state;
  static const size_t sizes[] = {4096, 32 << 10};
  enum { N = 3000 };
  for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++) {
    char dir[TEST_PATH_MAX + 16], key[32];
    snprintf(dir, sizeof dir, "%s/m%zu", f->dir, s);
    lsm_options_t o;
    lsm_options_init(&o);
    o.create_if_missing = 1;
    o.memtable_bytes = sizes[s];
    err_t e;
    assert_int_equal(lsm_open(dir, &o, &f->db, &e), ST_OK);
    uint8_t val[64];
    for (uint64_t i = 0; i < N; i++) {
      size_t vl = test_value(val, i + 1, sizeof val);
      assert_int_equal(lsm_put(f->db, key, test_key(key, i), val, vl, &e), ST_OK);
    }
    lsm_stats_t st;
    lsm_get_stats(f->db, &st);
    print_message("memtable_bytes %zu: %llu puts, %llu flushes\n", sizes[s], (unsigned long long)N,
                  (unsigned long long)st.flushes);
    assert_true(st.flushes >= 1);
    assert_true(st.flushes <= (uint64_t)N * 200 / sizes[s]);
    for (uint64_t i = 0; i < N; i += 97) {
      void *v = NULL;
      size_t vl;
      assert_int_equal(lsm_get(f->db, key, test_key(key, i), &v, &vl, &e), ST_OK);
      assert_int_equal(vl, test_value(val, i + 1, sizeof val));
      assert_memory_equal(v, val, vl);
      free(v);
    }
    close_db(&f->db);
  }
}

/* The names in dir, sorted and joined, for comparing a directory before and after. */
static void list_names(const char *dir, char *out, size_t cap) {
  char **names = NULL;
  size_t n = 0;
  err_t e;
  assert_int_equal(env_list_dir(env_default(), dir, &names, &n, &e), ST_OK);
  for (size_t i = 0; i + 1 < n; i++)
    for (size_t j = i + 1; j < n; j++)
      if (strcmp(names[i], names[j]) > 0) {
        char *t = names[i];
        names[i] = names[j];
        names[j] = t;
      }
  out[0] = '\0';
  for (size_t i = 0; i < n; i++) {
    strncat(out, names[i], cap - strlen(out) - 1);
    strncat(out, " ", cap - strlen(out) - 1);
  }
  env_names_free(names, n);
}

/* Writes n keys; with flush, into a table, else only into the log. */
static void fill_db(fixture_t *f, int n, int flush) {
  err_t e;
  assert_int_equal(try_open(f->dir, 1, &f->db, &e), ST_OK);
  char key[32];
  uint8_t val[64];
  for (int i = 0; i < n; i++) {
    size_t vl = test_value(val, (uint64_t)i + 1, sizeof val);
    assert_int_equal(lsm_put(f->db, key, test_key(key, (uint64_t)i), val, vl, &e), ST_OK);
  }
  if (flush) assert_int_equal(lsm_flush(f->db, &e), ST_OK);
  close_db(&f->db);
}

/* A database whose CURRENT is gone is damaged, not missing: an open that may create refuses
   it (ST_E_CORRUPT naming the directory and saying to repair it) and changes nothing, where
   it used to start a new database over it and delete its tables and logs. A directory with
   only what a create that failed before CURRENT leaves (IDENTITY, an empty log, a manifest
   without tables or writes) still becomes a database. */
static void test_db_open_missing_current_is_corrupt(void **state) {
  fixture_t *f = *state;
  char cur[TEST_PATH_MAX + 64], before[4096], after[4096];
  snprintf(cur, sizeof cur, "%s/CURRENT", f->dir);
  err_t e;
  for (int flush = 1; flush >= 0; flush--) {
    fill_db(f, 3000, flush); /* tables and a log, or a log alone */
    assert_int_equal(unlink(cur), 0);
    list_names(f->dir, before, sizeof before);
    for (int create = 1; create >= 0; create--) {
      assert_int_equal(try_open(f->dir, create, &f->db, &e), ST_E_CORRUPT);
      assert_null(f->db);
      print_message("%s\n", e.msg);
      assert_non_null(strstr(e.msg, f->dir));
      assert_non_null(strstr(e.msg, "CURRENT is missing"));
      assert_non_null(strstr(e.msg, "repair"));
      list_names(f->dir, after, sizeof after);
      assert_string_equal(before, after); /* nothing created, nothing deleted */
    }
    assert_int_equal(test_rmrf(f->dir), 0);
    assert_int_equal(mkdir(f->dir, 0755), 0);
  }
  /* Opened and closed without a write: nothing to lose, so it may be created again. */
  fill_db(f, 0, 0);
  assert_int_equal(unlink(cur), 0);
  assert_int_equal(try_open(f->dir, 1, &f->db, &e), ST_OK);
  close_db(&f->db);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_db_open_second_open_is_busy, setup, teardown),
      cmocka_unit_test_setup_teardown(test_db_open_leveldb_directory_is_invalid, setup, teardown),
      cmocka_unit_test_setup_teardown(test_db_open_missing_without_create_is_invalid, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_db_open_future_version_is_unsupported, setup, teardown),
      cmocka_unit_test_setup_teardown(test_db_open_reopen_keeps_data, setup, teardown),
      cmocka_unit_test_setup_teardown(test_db_open_reading_writes_nothing, setup, teardown),
      cmocka_unit_test_setup_teardown(test_db_open_small_memtable_holds_many_entries, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_db_open_missing_current_is_corrupt, setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

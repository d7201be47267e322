/* The LevelDB engine's answers to damage and failure that LevelDB itself reports wrongly or not
 * at all (doc/leveldb.md, "Damage"):
 *   - an own-engine directory is BFH_E_INVALID, and nothing is written to it;
 *   - a flush whose memtable cannot be written (a file size limit, as on a full disk) fails;
 *   - a log record whose length field was damaged to run past the end of the file fails the
 *     open (LevelDB takes it for a torn write and drops it), while a genuinely torn tail opens
 *     and loses only the write that was cut;
 *   - a MANIFEST that lost its last edit fails the open (LevelDB would open the older version
 *     and delete the newer tables as obsolete).
 * The corruption sweep (corrupt_sweep_test.c) covers flips and truncations of every file.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bfh.h"
#include "lsm/log.h"
/* Not public (api/testbed.h): the log reader, to find the records to damage. */
#include "api/testbed.h"
#include "tests/test_util.h"
#include "tests/api/db_fixture.h"

#define NKEYS 2000

static int setup(void **state) {
  return db_fixture_setup(state, "leveldb_corrupt");
}

static void options(bfh_options *o, bfh_engine engine) {
  bfh_options_init(o);
  o->engine = engine;
  o->value_filter_bits = 8192;
  o->memtable_bytes = 1 << 20;
}

static size_t key_of(unsigned i, char *buf) {
  return (size_t)snprintf(buf, 16, "key%06u", i);
}

static size_t value_of(unsigned i, char *buf) {
  return (size_t)snprintf(buf, 128, "value-%06u-%.*s", i, (int)(i % 50),
                          "abcdefghijklmnopqrstuvwxyzabcdefghijklmnopqrstuvwxyz");
}

/* Opens dir with engine, puts keys [first, first + n), flushes if asked, closes. */
static void fill(db_fixture_t *f, bfh_engine engine, unsigned first, unsigned n, int flush) {
  bfh_options o;
  options(&o, engine);
  if (bfh_open(f->dir, &o, &f->db) != BFH_OK) fail_msg("open: %s", bfh_last_error(NULL));
  for (unsigned i = first; i < first + n; i++) {
    char k[16], v[128];
    assert_int_equal(bfh_put(f->db, k, key_of(i, k), v, value_of(i, v)), BFH_OK);
  }
  if (flush) assert_int_equal(bfh_flush(f->db), BFH_OK);
  assert_int_equal(bfh_close(f->db), BFH_OK);
  f->db = NULL;
}

/* The name of the only file of dir ending in suffix (or starting with it when prefix). */
static void only_file(const char *dir, const char *pattern, int prefix, char *out, size_t cap) {
  DIR *d = opendir(dir);
  assert_non_null(d);
  struct dirent *de;
  int found = 0;
  while ((de = readdir(d))) {
    size_t n = strlen(de->d_name), p = strlen(pattern);
    int match =
        prefix ? !strncmp(de->d_name, pattern, p) : n > p && !strcmp(de->d_name + n - p, pattern);
    if (!match) continue;
    found++;
    snprintf(out, cap, "%s/%s", dir, de->d_name);
  }
  closedir(d);
  if (found != 1) fail_msg("%s: %d files match %s", dir, found, pattern);
}

static int note_record(void *arg, const uint8_t *p, size_t n, uint64_t at, int *stopped,
                       err_t *err) {
  (void)p, (void)n, (void)stopped, (void)err;
  *(uint64_t *)arg = at;
  return BFH_OK;
}

/* Offset of the last record of a log-format file. */
static uint64_t last_record(const char *path, const char *kind) {
  uint64_t at = UINT64_MAX;
  err_t err;
  int rc = ldb_log_records(env_default(), path, kind, 0, 0, note_record, &at, NULL, NULL, &err);
  if (rc != BFH_OK) fail_msg("%s", err.msg);
  assert_true(at != UINT64_MAX);
  return at;
}

static uint64_t file_size(const char *path) {
  struct stat sb;
  assert_int_equal(stat(path, &sb), 0);
  return (uint64_t)sb.st_size;
}

static void expect_open_corrupt(db_fixture_t *f, const char *names) {
  bfh_options o;
  options(&o, BFH_ENGINE_LEVELDB);
  int rc = bfh_open(f->dir, &o, &f->db);
  const char *msg = bfh_last_error(NULL);
  if (rc != BFH_E_CORRUPT || !strstr(msg, names))
    fail_msg("open: %d (%s), expected BFH_E_CORRUPT naming %s", rc, msg, names);
}

static void test_leveldb_corrupt_own_engine_directory_is_invalid(void **state) {
  db_fixture_t *f = *state;
  fill(f, BFH_ENGINE_LSM, 0, 100, 0);
  struct dirent **before, **after;
  int nb = scandir(f->dir, &before, NULL, alphasort);
  assert_true(nb > 2);
  bfh_options o;
  options(&o, BFH_ENGINE_LEVELDB);
  int rc = bfh_open(f->dir, &o, &f->db);
  if (rc != BFH_E_INVALID)
    fail_msg("open: %d (%s), expected BFH_E_INVALID", rc, bfh_last_error(NULL));
  assert_non_null(strstr(bfh_last_error(NULL), "IDENTITY"));
  int na = scandir(f->dir, &after, NULL, alphasort);
  int same = na == nb;
  for (int i = 0; i < na && same; i++) same = !strcmp(before[i]->d_name, after[i]->d_name);
  for (int i = 0; i < nb; i++) free(before[i]);
  for (int i = 0; i < na; i++) free(after[i]);
  free(before);
  free(after);
  assert_true(same); /* no LOG, no LOCK, nothing */
}

/* In a child process (the file size limit is the process's): puts, then a limit below the
   size of the table the flush must write. Exit status 0 when bfh_flush fails with an error
   naming LevelDB's write failure, 1 when it returns OK, 2 on a setup failure. */
static int flush_over_limit(const char *dir) {
  bfh_options o;
  options(&o, BFH_ENGINE_LEVELDB);
  bfh_db *db;
  if (bfh_open(dir, &o, &db) != BFH_OK) return 2;
  for (unsigned i = 0; i < NKEYS; i++) {
    char k[16], v[128];
    if (bfh_put(db, k, key_of(i, k), v, value_of(i, v)) != BFH_OK) return 2;
  }
  signal(SIGXFSZ, SIG_IGN); /* a write past the limit fails with EFBIG instead */
  struct rlimit rl = {4096, 4096};
  if (setrlimit(RLIMIT_FSIZE, &rl) != 0) return 2;
  int rc = bfh_flush(db);
  fprintf(stderr, "flush over the file size limit: %d %s\n", rc, bfh_last_error(db));
  return rc < 0 ? 0 : 1; /* no close: LevelDB stays in its error state; _exit ends it */
}

static void test_leveldb_corrupt_flush_failure_is_reported(void **state) {
  db_fixture_t *f = *state;
  fflush(NULL);
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) _exit(flush_over_limit(f->dir));
  int status;
  assert_int_equal(waitpid(pid, &status, 0), pid);
  assert_true(WIFEXITED(status));
  assert_int_equal(WEXITSTATUS(status), 0);
}

static void test_leveldb_corrupt_log_length_past_end_fails_open(void **state) {
  db_fixture_t *f = *state;
  fill(f, BFH_ENGINE_LEVELDB, 0, NKEYS, 0); /* all in the log */
  char log[4400];
  only_file(f->dir, ".log", 0, log, sizeof log);
  uint64_t at = last_record(log, "log"), size = file_size(log);
  uint64_t room = LOG_BLOCK_BYTES - at % LOG_BLOCK_BYTES - LOG_HEADER_BYTES;
  uint64_t len = room > 0xffff ? 0xffff : room;
  assert_true(at + LOG_HEADER_BYTES + len > size); /* the record now runs past the end */
  FILE *fp = fopen(log, "r+b");
  assert_non_null(fp);
  uint8_t b[2] = {(uint8_t)len, (uint8_t)(len >> 8)};
  assert_int_equal(fseek(fp, (long)at + 4, SEEK_SET), 0);
  assert_int_equal(fwrite(b, 1, 2, fp), 2);
  assert_int_equal(fclose(fp), 0);
  char name[32];
  snprintf(name, sizeof name, "%s", strrchr(log, '/') + 1);
  expect_open_corrupt(f, name);
}

static void test_leveldb_corrupt_torn_log_tail_opens(void **state) {
  db_fixture_t *f = *state;
  fill(f, BFH_ENGINE_LEVELDB, 0, NKEYS, 0);
  char log[4400], cut[4500];
  only_file(f->dir, ".log", 0, log, sizeof log);
  uint64_t at = last_record(log, "log"), size = file_size(log);
  assert_true(size - at > LOG_HEADER_BYTES + 1);
  snprintf(cut, sizeof cut, "%s.cut", log);
  assert_int_equal(test_copy_file(log, cut, size - 1), 0); /* the last write torn */
  assert_int_equal(rename(cut, log), 0);
  bfh_options o;
  options(&o, BFH_ENGINE_LEVELDB);
  if (bfh_open(f->dir, &o, &f->db) != BFH_OK) fail_msg("open: %s", bfh_last_error(NULL));
  for (unsigned i = 0; i < NKEYS; i++) {
    char k[16], v[128];
    void *got;
    size_t gl;
    int rc = bfh_get(f->db, k, key_of(i, k), &got, &gl);
    if (i == NKEYS - 1) { /* the torn write: never acknowledged as durable (sync is off) */
      assert_int_equal(rc, BFH_NOT_FOUND);
      continue;
    }
    assert_int_equal(rc, BFH_OK);
    size_t vl = value_of(i, v);
    assert_int_equal(gl, vl);
    assert_memory_equal(got, v, vl);
    bfh_free(got);
  }
}

static void test_leveldb_corrupt_manifest_lost_edit_fails_open(void **state) {
  db_fixture_t *f = *state;
  fill(f, BFH_ENGINE_LEVELDB, 0, NKEYS, 1); /* the flush's edit names a new log */
  char manifest[4400], cut[4500];
  only_file(f->dir, "MANIFEST-", 1, manifest, sizeof manifest);
  uint64_t at = last_record(manifest, "manifest");
  snprintf(cut, sizeof cut, "%s.cut", manifest);
  assert_int_equal(test_copy_file(manifest, cut, at), 0); /* the last edit lost */
  assert_int_equal(rename(cut, manifest), 0);
  expect_open_corrupt(f, strrchr(manifest, '/') + 1);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_leveldb_corrupt_own_engine_directory_is_invalid, setup,
                                      db_fixture_teardown),
      cmocka_unit_test_setup_teardown(test_leveldb_corrupt_flush_failure_is_reported, setup,
                                      db_fixture_teardown),
      cmocka_unit_test_setup_teardown(test_leveldb_corrupt_log_length_past_end_fails_open, setup,
                                      db_fixture_teardown),
      cmocka_unit_test_setup_teardown(test_leveldb_corrupt_torn_log_tail_opens, setup,
                                      db_fixture_teardown),
      cmocka_unit_test_setup_teardown(test_leveldb_corrupt_manifest_lost_edit_fails_open, setup,
                                      db_fixture_teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

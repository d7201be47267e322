/* Tests of util/path.h: path_resolve gives one spelling for one place, existing or not, and
   path_within compares by whole components. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tests/test_util.h"
#include "util/path.h"

static char dir[TEST_PATH_MAX]; /* a fresh directory, resolved (no symlink in it) */

static int dir_setup(void **state) {
  (void)state;
  char made[TEST_PATH_MAX];
  if (test_tmpdir_create(made, sizeof made, "path_test") != 0) return -1;
  return realpath(made, dir) ? 0 : -1;
}

static int dir_teardown(void **state) {
  (void)state;
  return test_rmrf(dir);
}

/* path_resolve(in) must be dir followed by want. */
static void expect(const char *in, const char *want) {
  char got[PATH_MAX], full[PATH_MAX];
  err_t err;
  err_clear(&err);
  if (path_resolve(in, got, sizeof got, &err) != ST_OK) fail_msg("%s: %s", in, err.msg);
  snprintf(full, sizeof full, "%s%s", dir, want);
  if (strcmp(got, full) != 0) fail_msg("%s: got %s, want %s", in, got, full);
}

static void test_path_resolve_spellings_of_one_place(void **state) {
  (void)state;
  char db[PATH_MAX + 16], p[PATH_MAX + 64];
  snprintf(db, sizeof db, "%s/db", dir);
  assert_int_equal(mkdir(db, 0755), 0);
  snprintf(p, sizeof p, "%s/link", dir);
  assert_int_equal(symlink(db, p), 0); /* link -> db */

  snprintf(p, sizeof p, "%s/db/idx", dir); /* idx does not exist */
  expect(p, "/db/idx");
  snprintf(p, sizeof p, "%s/db/../db/idx", dir);
  expect(p, "/db/idx");
  snprintf(p, sizeof p, "%s/link/idx", dir);
  expect(p, "/db/idx");
  snprintf(p, sizeof p, "%s//db/./idx/", dir);
  expect(p, "/db/idx");
  snprintf(p, sizeof p, "%s/new/../link/idx", dir); /* ".." back into existing ground */
  expect(p, "/db/idx");
  snprintf(p, sizeof p, "%s/link/../x", dir); /* ".." after a symlink: the target's parent */
  expect(p, "/x");
  snprintf(p, sizeof p, "%s/a/b/../../db", dir);
  expect(p, "/db");
  snprintf(p, sizeof p, "%s/link", dir);
  expect(p, "/db");

  /* Relative to the working directory. */
  char cwd[PATH_MAX];
  assert_non_null(getcwd(cwd, sizeof cwd));
  assert_int_equal(chdir(db), 0);
  expect("idx", "/db/idx");
  expect("../link/./idx", "/db/idx");
  expect(".", "/db");
  assert_int_equal(chdir(cwd), 0);

  char got[PATH_MAX];
  err_t err;
  assert_int_equal(path_resolve("/..", got, sizeof got, &err), ST_OK);
  assert_string_equal(got, "/");
}

static void test_path_resolve_refuses_what_leads_nowhere(void **state) {
  (void)state;
  char p[PATH_MAX + 64], got[PATH_MAX];
  err_t err;
  assert_int_equal(path_resolve("", got, sizeof got, &err), ST_E_INVALID);
  snprintf(p, sizeof p, "%s/dangling", dir);
  assert_int_equal(symlink("/nonexistent/bfh/target", p), 0);
  snprintf(p, sizeof p, "%s/dangling/idx", dir);
  assert_int_equal(path_resolve(p, got, sizeof got, &err), ST_E_INVALID);
  assert_non_null(strstr(err.msg, "dangling"));
  snprintf(p, sizeof p, "%s/file", dir);
  assert_int_equal(test_write_file(p, (const uint8_t *)"x", 1), 0);
  snprintf(p, sizeof p, "%s/file/idx", dir);
  assert_int_equal(path_resolve(p, got, sizeof got, &err), ST_E_INVALID);
  assert_int_equal(path_resolve(dir, got, 4, &err), ST_E_INVALID); /* no room */
}

static void test_path_within_whole_components(void **state) {
  (void)state;
  assert_true(path_within("/a/db", "/a/db"));
  assert_true(path_within("/a/db", "/a/db/idx"));
  assert_false(path_within("/a/db", "/a/db-idx")); /* a prefix of the name only */
  assert_false(path_within("/a/db", "/a"));
  assert_false(path_within("/a/db/idx", "/a/db"));
  assert_true(path_within("/", "/anything"));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_path_resolve_spellings_of_one_place, dir_setup,
                                      dir_teardown),
      cmocka_unit_test_setup_teardown(test_path_resolve_refuses_what_leads_nowhere, dir_setup,
                                      dir_teardown),
      cmocka_unit_test(test_path_within_whole_components),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

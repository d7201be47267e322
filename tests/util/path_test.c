/* Tests of util/path.h: path_join and path_fmt build a path of any length exactly,
   path_resolve gives one spelling for one place, existing or not, and path_within compares by
   whole components. */
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
  char *got = NULL, full[PATH_MAX];
  err_t err;
  err_clear(&err);
  if (path_resolve(in, &got, &err) != ST_OK) fail_msg("%s: %s", in, err.msg);
  snprintf(full, sizeof full, "%s%s", dir, want);
  if (strcmp(got, full) != 0) fail_msg("%s: got %s, want %s", in, got, full);
  free(got);
}

/* A string of n bytes: "abc...a/bcd...a/..." (a '/' every 200th byte, so that no component
   is longer than a file name may be), NUL-terminated. Client frees. */
static char *long_string(size_t n) {
  char *s = malloc(n + 1);
  assert_non_null(s);
  for (size_t i = 0; i < n; i++) s[i] = i % 200 == 100 ? '/' : (char)('a' + i % 26);
  s[n] = '\0';
  return s;
}

static void test_path_join_one_slash_between(void **state) {
  (void)state;
  const char *cases[][3] = {
      {"db", "CURRENT", "db/CURRENT"},
      {"db/", "CURRENT", "db/CURRENT"},
      {"/", "x", "/x"},
      {"/a/b", "c.sst", "/a/b/c.sst"},
      {"a", "", "a/"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    char *p = path_join(cases[i][0], cases[i][1]);
    assert_non_null(p);
    assert_string_equal(p, cases[i][2]);
    free(p);
  }
}

static void test_path_fmt_exact(void **state) {
  (void)state;
  char *p = path_fmt("%s/%06llu.%s", "dir", 42ull, "sst");
  assert_non_null(p);
  assert_string_equal(p, "dir/000042.sst");
  free(p);
  p = path_fmt("%s/MANIFEST-%06llu", "d", 18446744073709551615ull); /* 20 digits: no padding */
  assert_string_equal(p, "d/MANIFEST-18446744073709551615");
  free(p);
  p = path_fmt("%s", "");
  assert_string_equal(p, "");
  free(p);
  p = path_fmt("100%% %c%d", 'x', -7);
  assert_string_equal(p, "100% x-7");
  free(p);
}

/* 10,000 bytes: more than any fixed path buffer held (4096-4400), and the result is exact. */
static void test_path_long_paths_whole(void **state) {
  (void)state;
  char *dirname = long_string(10000);
  char *p = path_join(dirname, "000001.sst");
  assert_non_null(p);
  assert_int_equal(strlen(p), 10000 + 11);
  assert_memory_equal(p, dirname, 10000);
  assert_string_equal(p + 10000, "/000001.sst");
  free(p);
  p = path_fmt("%s/%06llu.log", dirname, 7ull);
  assert_non_null(p);
  assert_int_equal(strlen(p), 10000 + 11);
  assert_memory_equal(p, dirname, 10000);
  assert_string_equal(p + 10000, "/000007.log");
  free(p);

  /* path_resolve: a 10,000-byte path below dir that does not exist resolves as written. */
  char *in = path_join(dir, dirname), *want = path_join(dir, dirname), *got = NULL;
  err_t err;
  err_clear(&err);
  if (path_resolve(in, &got, &err) != ST_OK) fail_msg("%s", err.msg);
  assert_int_equal(strlen(got), strlen(want));
  assert_string_equal(got, want);
  free(got);
  free(in);
  free(want);
  free(dirname);
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

  char *got = NULL;
  err_t err;
  assert_int_equal(path_resolve("/..", &got, &err), ST_OK);
  assert_string_equal(got, "/");
  free(got);
}

static void test_path_resolve_refuses_what_leads_nowhere(void **state) {
  (void)state;
  char p[PATH_MAX + 64], *got = NULL;
  err_t err;
  assert_int_equal(path_resolve("", &got, &err), ST_E_INVALID);
  assert_null(got);
  snprintf(p, sizeof p, "%s/dangling", dir);
  assert_int_equal(symlink("/nonexistent/bfh/target", p), 0);
  snprintf(p, sizeof p, "%s/dangling/idx", dir);
  assert_int_equal(path_resolve(p, &got, &err), ST_E_INVALID);
  assert_null(got);
  assert_non_null(strstr(err.msg, "dangling"));
  snprintf(p, sizeof p, "%s/file", dir);
  assert_int_equal(test_write_file(p, (const uint8_t *)"x", 1), 0);
  snprintf(p, sizeof p, "%s/file/idx", dir);
  assert_int_equal(path_resolve(p, &got, &err), ST_E_INVALID);
  assert_null(got);
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
      cmocka_unit_test(test_path_join_one_slash_between),
      cmocka_unit_test(test_path_fmt_exact),
      cmocka_unit_test_setup_teardown(test_path_long_paths_whole, dir_setup, dir_teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

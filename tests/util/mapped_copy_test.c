/* Tests of util/mapped_copy.h and env_rfile_map: a copy out of a mapping whose file was
   truncated fails cleanly instead of raising SIGBUS, any number of times; a SIGBUS outside a
   copy still reaches the handler the program had, or ends the process when it had none; an
   env that cannot map says so. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/env_fault.h"
#include "tests/test_util.h"
#include "util/env.h"
#include "util/mapped_copy.h"

#define FILE_BYTES (64u << 10)
#define KEPT_BYTES (8u << 10) /* what the truncation leaves */

static char dir[TEST_PATH_MAX], path[TEST_PATH_MAX + 16];

static int setup(void **state) {
  (void)state;
  if (test_tmpdir_create(dir, sizeof dir, "mapped_copy_test") != 0) return -1;
  snprintf(path, sizeof path, "%s/f", dir);
  return 0;
}

static int teardown(void **state) {
  (void)state;
  return test_rmrf(dir);
}

/* Writes FILE_BYTES of a pattern (byte i is i * 7 mod 251) to path. */
static void write_pattern(void) {
  uint8_t *b = malloc(FILE_BYTES);
  assert_non_null(b);
  for (size_t i = 0; i < FILE_BYTES; i++) b[i] = (uint8_t)(i * 7 % 251);
  err_t err;
  if (env_write_file(env_default(), path, b, FILE_BYTES, &err) != ST_OK) fail_msg("%s", err.msg);
  free(b);
}

/* path, opened and mapped with the default env. */
static const uint8_t *open_mapped(env_rfile_t **f) {
  err_t err;
  if (env_open_read(env_default(), path, f, &err) != ST_OK) fail_msg("%s", err.msg);
  const uint8_t *m;
  if (env_rfile_map(*f, &m, &err) != ST_OK) fail_msg("%s", err.msg);
  const uint8_t *again;
  assert_int_equal(env_rfile_map(*f, &again, &err), ST_OK);
  assert_ptr_equal(again, m); /* one mapping per open file */
  return m;
}

static void test_copy_then_truncation_fails_cleanly(void **state) {
  (void)state;
  write_pattern();
  env_rfile_t *f;
  const uint8_t *m = open_mapped(&f);
  assert_int_equal(mapped_copy_ready(), 1);
  uint8_t buf[4096];
  assert_int_equal(mapped_copy(buf, m + 40960, sizeof buf), 0);
  for (size_t i = 0; i < sizeof buf; i++) assert_int_equal(buf[i], (40960 + i) * 7 % 251);

  assert_int_equal(truncate(path, KEPT_BYTES), 0);
  /* The pages past the new end are gone: each copy that touches one fails, again and again
     (the handler is armed for every copy), and one that stays below the end still works. */
  for (int round = 0; round < 3; round++) {
    assert_int_equal(mapped_copy(buf, m + 40960, sizeof buf), -1);
    assert_int_equal(mapped_copy(buf, m + KEPT_BYTES - 100, 200), -1); /* straddles the end */
    assert_int_equal(mapped_copy(buf, m, sizeof buf), 0);
    for (size_t i = 0; i < sizeof buf; i++) assert_int_equal(buf[i], i * 7 % 251);
  }
  env_rfile_close(f);
}

/* In a child, a fresh process (this program run again, so that no handler of cmocka's or of
   an earlier test is in place): touches a page of a mapping past the end of its truncated
   file, outside mapped_copy, after the guard was installed (and, with own, after the child
   set a handler of its own first). Exits 0 only if the touch did not fault. */
static void own_handler(int sig) {
  (void)sig;
  _exit(42);
}

static void touch_past_end(int own) {
  if (own) signal(SIGBUS, own_handler);
  write_pattern();
  env_rfile_t *f;
  const uint8_t *m = open_mapped(&f);
  if (!mapped_copy_ready()) _exit(3);
  if (truncate(path, KEPT_BYTES) != 0) _exit(4);
  volatile uint8_t x = m[40960];
  (void)x;
  _exit(0);
}

static int run_child(int own) {
  fflush(NULL);
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    execl("/proc/self/exe", "mapped_copy_test", own ? "--child-own" : "--child-none", path,
          (char *)NULL);
    _exit(5);
  }
  int status;
  assert_int_equal(waitpid(pid, &status, 0), pid);
  return status;
}

static void test_foreign_sigbus_reaches_the_programs_handler(void **state) {
  (void)state;
  int status = run_child(1);
  assert_true(WIFEXITED(status));
  assert_int_equal(WEXITSTATUS(status), 42);
}

static void test_foreign_sigbus_without_a_handler_ends_the_process(void **state) {
  (void)state;
  int status = run_child(0);
  /* Killed by SIGBUS; under a sanitizer, whose handler was there first, its report's exit. */
  assert_false(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  if (WIFSIGNALED(status)) assert_int_equal(WTERMSIG(status), SIGBUS);
}

static void test_an_env_that_cannot_map_says_so(void **state) {
  (void)state;
  write_pattern();
  env_t *faulty = env_create_faulty();
  assert_non_null(faulty);
  env_rfile_t *f;
  err_t err;
  if (env_open_read(faulty, path, &f, &err) != ST_OK) fail_msg("%s", err.msg);
  const uint8_t *m = (const uint8_t *)1;
  assert_int_equal(env_rfile_map(f, &m, &err), ST_E_UNSUPPORTED);
  assert_null(m);
  env_rfile_close(f);
  env_destroy(faulty);
}

int main(int argc, char **argv) {
  if (argc == 3) { /* run_child's */
    snprintf(path, sizeof path, "%s", argv[2]);
    touch_past_end(strcmp(argv[1], "--child-own") == 0);
  }
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_copy_then_truncation_fails_cleanly, setup, teardown),
      cmocka_unit_test_setup_teardown(test_foreign_sigbus_reaches_the_programs_handler, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_foreign_sigbus_without_a_handler_ends_the_process,
                                      setup, teardown),
      cmocka_unit_test_setup_teardown(test_an_env_that_cannot_map_says_so, setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

/* Tests of util/dynlib.h: a library bound at first use, its symbols callable; a missing
   library or symbol a clear, repeatable error; concurrent first uses bind once. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <pthread.h>
#include <string.h>

#include <zlib.h>

#include "util/dynlib.h"

/* libz is on every machine that builds bfh (RocksDB's compressors need it). */
typedef const char *(*version_fn)(void);
typedef unsigned long (*crc_fn)(unsigned long crc, const unsigned char *buf, unsigned len);

static void test_dynlib_bind_calls_the_library(void **state) {
  (void)state;
  static const char *const names[] = {"zlibVersion", "crc32"};
  static void *fns[2];
  static dynlib_t lib = DYNLIB_INIT("libz.so.1", "zlib1g", names, fns);
  err_t e;
  assert_int_equal(dynlib_bind(&lib, &e), ST_OK);
  assert_int_equal(((version_fn)fns[0])()[0], '1'); /* "1.2.13" */
  /* CRC-32 of "123456789", the check value of the standard */
  assert_int_equal(((crc_fn)fns[1])(0, (const unsigned char *)"123456789", 9), 0xCBF43926ul);
  void *first = fns[0];
  assert_int_equal(dynlib_bind(&lib, &e), ST_OK); /* bound once: the same pointers */
  assert_ptr_equal(fns[0], first);
}

static void test_dynlib_missing_library_names_it_and_its_package(void **state) {
  (void)state;
  static const char *const names[] = {"f"};
  static void *fns[1];
  static dynlib_t lib = DYNLIB_INIT("libbfh-not-installed.so.9", "libbfh-not-installed9", names, fns);
  for (int i = 0; i < 2; i++) { /* the second call gives the same answer */
    err_t e;
    assert_int_equal(dynlib_bind(&lib, &e), ST_E_UNSUPPORTED);
    assert_int_equal(e.code, ST_E_UNSUPPORTED);
    assert_non_null(strstr(e.msg, "libbfh-not-installed.so.9 (Debian package libbfh-not-installed9)"));
    assert_null(fns[0]);
  }
}

static void test_dynlib_missing_symbol_is_named(void **state) {
  (void)state;
  static const char *const names[] = {"zlibVersion", "bfh_no_such_symbol"};
  static void *fns[2];
  static dynlib_t lib = DYNLIB_INIT("libz.so.1", "zlib1g", names, fns);
  err_t e;
  assert_int_equal(dynlib_bind(&lib, &e), ST_E_UNSUPPORTED);
  assert_non_null(strstr(e.msg, "no symbol bfh_no_such_symbol"));
}

static const char *const race_names[] = {"zlibVersion"};
static void *race_fns[1];
static dynlib_t race_lib = DYNLIB_INIT("libz.so.1", "zlib1g", race_names, race_fns);

static void *bind_and_call(void *arg) {
  (void)arg;
  if (dynlib_bind(&race_lib, NULL) != ST_OK) return (void *)1;
  /* bound means usable: a thread that returns from dynlib_bind never sees a NULL pointer */
  return race_fns[0] && ((version_fn)race_fns[0])()[0] == '1' ? NULL : (void *)1;
}

static void test_dynlib_concurrent_first_uses(void **state) {
  (void)state;
  pthread_t t[8];
  for (int i = 0; i < 8; i++) assert_int_equal(pthread_create(&t[i], NULL, bind_and_call, NULL), 0);
  for (int i = 0; i < 8; i++) {
    void *r;
    assert_int_equal(pthread_join(t[i], &r), 0);
    assert_null(r);
  }
}

/* A table of functions that share no prefix (DYNLIB_BARE_TABLE): each bound by its whole name,
   each pointer typed as the function. */
#define TEST_ZLIB_FUNCTIONS(X, P) X(P, zlibVersion) X(P, crc32)
static DYNLIB_BARE_TABLE(TEST_ZLIB_FUNCTIONS) test_zlib;
DYNLIB_BARE_DEFINE(test_zlib, TEST_ZLIB_FUNCTIONS, "libz.so.1", "zlib1g")

static void test_dynlib_bare_table_binds_whole_names(void **state) {
  (void)state;
  assert_int_equal(sizeof test_zlib.p / sizeof test_zlib.p[0], 2);
  err_t e;
  assert_int_equal(test_zlib_bind(&e), ST_OK);
  assert_ptr_equal((void *)test_zlib.f.zlibVersion, test_zlib.p[0]);
  assert_int_equal(test_zlib.f.zlibVersion()[0], '1');
  assert_int_equal(test_zlib.f.crc32(0, (const Bytef *)"123456789", 9), 0xCBF43926ul);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_dynlib_bind_calls_the_library),
      cmocka_unit_test(test_dynlib_missing_library_names_it_and_its_package),
      cmocka_unit_test(test_dynlib_missing_symbol_is_named),
      cmocka_unit_test(test_dynlib_concurrent_first_uses),
      cmocka_unit_test(test_dynlib_bare_table_binds_whole_names),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

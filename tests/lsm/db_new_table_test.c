/* A table the engine writes is opened through the table cache before it is installed: the
 * first get that meets it opens no file, and a table that does not read back fails the flush
 * that wrote it and loses no write (the log still holds them for the next open).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lsm/db.h"
#include "tests/env_fault.h"
#include "tests/lsm/db_fault_fixture.h"
#include "tests/lsm/db_test_util.h"
#include "tests/test_util.h"

#define NKEYS 500
#define VALUE_BYTES 64

typedef db_fault_fixture_t fixture_t;

static int setup(void **state) {
  return db_fault_fixture_setup(state, "db_new_table");
}

static void put_all(fixture_t *f) {
  char k[32], v[VALUE_BYTES];
  for (uint64_t id = 0; id < NKEYS; id++) {
    size_t kl = test_key(k, id);
    memset(v, 'a' + (int)(id % 26), sizeof v);
    err_t e;
    err_clear(&e);
    if (lsm_put(f->db, k, kl, v, sizeof v, &e) != ST_OK) fail_msg("put: %s", e.msg);
  }
}

/* Every key holds its value. */
static void expect_all(fixture_t *f) {
  char k[32];
  for (uint64_t id = 0; id < NKEYS; id++) {
    size_t kl = test_key(k, id);
    void *v = NULL;
    size_t vl = 0;
    err_t e;
    err_clear(&e);
    int rc = lsm_get(f->db, k, kl, &v, &vl, &e);
    if (rc != ST_OK) fail_msg("get %s: %d %s", k, rc, e.msg);
    assert_int_equal(vl, VALUE_BYTES);
    assert_int_equal(((char *)v)[0], 'a' + (int)(id % 26));
    free(v);
  }
}

static void test_the_first_get_of_a_flushed_table_opens_no_file(void **state) {
  fixture_t *f = *state;
  db_fault_open(f);
  put_all(f);
  err_t e;
  err_clear(&e);
  assert_int_equal(lsm_flush(f->db, &e), ST_OK);
  uint64_t opens = env_op_count(f->io, ENV_OP_OPEN);
  expect_all(f); /* the memtable is empty: every get reads the table */
  assert_int_equal(env_op_count(f->io, ENV_OP_OPEN), opens);
}

static void test_a_table_that_does_not_read_back_fails_its_flush(void **state) {
  fixture_t *f = *state;
  db_fault_open(f);
  put_all(f);
  /* The flush opens its table twice: to write it, then to read it back. */
  env_fault_t fault = {ENV_OP_OPEN, 2, 0, ENV_ERR_EIO, "*.sst"};
  assert_int_equal(env_fail_with(f->io, &fault), ST_OK);
  err_t e;
  err_clear(&e);
  assert_int_equal(lsm_flush(f->db, &e), ST_E_IO);
  assert_non_null(strstr(e.msg, ".sst"));
  assert_int_equal(env_faults_injected(f->io), 1);
  env_fail_none(f->io);
  (void)lsm_close(f->db); /* it may report the failed flush */
  f->db = NULL;
  db_fault_open(f);
  expect_all(f);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_the_first_get_of_a_flushed_table_opens_no_file, setup,
                                      db_fault_fixture_teardown),
      cmocka_unit_test_setup_teardown(test_a_table_that_does_not_read_back_fails_its_flush, setup,
                                      db_fault_fixture_teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

/* A test's database in a temporary directory, opened through a fault-injecting env
 * (tests/env_fault.h) with the default options, for the lsm tests that count or fail the
 * engine's file operations.
 */
#ifndef BFH_TESTS_LSM_DB_FAULT_FIXTURE_H
#define BFH_TESTS_LSM_DB_FAULT_FIXTURE_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>

#include "lsm/db.h"
#include "tests/env_fault.h"
#include "tests/test_util.h"

typedef struct db_fault_fixture {
  char dir[TEST_PATH_MAX];
  env_t *io;
  lsm_db_t *db; /* open, or NULL */
} db_fault_fixture_t;

/* A cmocka setup: the directory (named after name) and the env; the test opens the db. */
static inline int db_fault_fixture_setup(void **state, const char *name) {
  db_fault_fixture_t *f = calloc(1, sizeof *f);
  if (!f || test_tmpdir_create(f->dir, sizeof f->dir, name) != 0) {
    free(f);
    return -1;
  }
  f->io = env_create_faulty();
  if (!f->io) return -1;
  *state = f;
  return 0;
}

/* A cmocka teardown: closes the db if the test left it open (a close that fails fails the
   test), then removes the directory. */
static inline int db_fault_fixture_teardown(void **state) {
  db_fault_fixture_t *f = *state;
  int rc = f->db && lsm_close(f->db) != ST_OK ? -1 : 0;
  env_destroy(f->io);
  if (test_rmrf(f->dir) != 0) rc = -1;
  free(f);
  return rc;
}

static inline void db_fault_open(db_fault_fixture_t *f) {
  lsm_options_t o;
  lsm_options_init(&o);
  o.io = f->io;
  err_t e;
  err_clear(&e);
  if (lsm_open(f->dir, &o, &f->db, &e) != ST_OK) fail_msg("open: %s", e.msg);
}

static inline void db_fault_close(db_fault_fixture_t *f) {
  err_t e;
  err_clear(&e);
  if (lsm_close_err(f->db, &e) != ST_OK) fail_msg("close: %s", e.msg);
  f->db = NULL;
}

#endif

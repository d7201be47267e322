/* The fixture of the tests of the public API that work on one database: a fresh temporary
 * directory <root>, the database directory <root>/db, and the handle open on it. The
 * teardown closes a handle a failing test left open and removes the directory. Header-only;
 * include it after bfh.h and tests/test_util.h.
 *
 *   static int setup(void **state) { return db_fixture_setup(state, "my_test"); }
 *   cmocka_unit_test_setup_teardown(test_x, setup, db_fixture_teardown)
 */
#ifndef BFH_TESTS_API_DB_FIXTURE_H
#define BFH_TESTS_API_DB_FIXTURE_H

typedef struct db_fixture {
  char root[4096];
  char dir[4200];
  bfh_db *db; /* closed by the teardown if a test fails with it open */
} db_fixture_t;

static inline int db_fixture_setup(void **state, const char *prefix) {
  db_fixture_t *f = calloc(1, sizeof *f);
  if (!f || test_tmpdir_create(f->root, sizeof f->root, prefix) != 0) {
    free(f);
    return -1;
  }
  snprintf(f->dir, sizeof f->dir, "%s/db", f->root);
  *state = f;
  return 0;
}

/* For a test that wants many small tables: the own engine flushes one table per memtable,
   which holds at least 64 KiB of entries, so a flush after every `every`-th put (i counts
   them from 0) gives it a table each; the other engines keep their own cadence. */
static inline void db_fixture_table_by_table(bfh_db *db, bfh_engine engine, unsigned i,
                                             unsigned every) {
  if (engine == BFH_ENGINE_LSM && i % every == every - 1 && bfh_flush(db) != BFH_OK)
    fail_msg("flush: %s", bfh_last_error(db));
}

static inline int db_fixture_teardown(void **state) {
  db_fixture_t *f = *state;
  bfh_close(f->db);
  int rc = test_rmrf(f->root);
  free(f);
  return rc == 0 ? 0 : -1;
}

#endif

/* The table files the read-write LevelDB and RocksDB engines hold open for their searches'
 * block reads (stock_rw.h, stock_rw_t.files): a search reads a table's blocks through the
 * file held since an earlier search, answers stay exact while compactions replace the tables
 * under the searches, a file is closed once its table has left the live version, and the
 * close leaves no descriptor behind.
 *
 * What is looked at is the process's own descriptors (/proc/self/fd): each one naming a table
 * file of the database, and those naming a table file deleted since it was opened.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bfh.h"
/* Not public (api/testbed.h): a full sync of a stock engine (every live table indexed, the
   files of dead tables closed). */
#include "api/testbed.h"
#include "tests/test_util.h"
#include "tests/api/db_fixture.h"
#include "tests/api/same_as_scan.h"

#define NKEYS 12000
#define NVALUES 4000    /* each value held by 3 keys, in 3 blocks of the tables' dozens */
#define WAIT_POLLS 1000 /* each a sync, the searches, a sync and 10 ms: well over the seconds
                           the compactions take to settle */

static int setup(void **state) {
  return db_fixture_setup(state, "stock_files_test");
}

/* The descriptors of this process naming a table file (.ldb or .sst) of dir: all of them
   into *open, those whose file is deleted into *deleted (the kernel names those
   "PATH (deleted)"). */
static void table_fds(const char *dir, int *open, int *deleted) {
  *open = *deleted = 0;
  DIR *d = opendir("/proc/self/fd");
  assert_non_null(d);
  struct dirent *de;
  const size_t dl = strlen(dir);
  while ((de = readdir(d))) {
    char link[64], target[4400];
    if (strlen(de->d_name) > 20) continue;
    snprintf(link, sizeof link, "/proc/self/fd/%s", de->d_name);
    ssize_t n = readlink(link, target, sizeof target - 1);
    if (n <= 0) continue;
    target[n] = '\0';
    if (strncmp(target, dir, dl) != 0 || target[dl] != '/' || strchr(target + dl + 1, '/'))
      continue;
    if (!strstr(target, ".ldb") && !strstr(target, ".sst")) continue;
    (*open)++;
    *deleted += strstr(target, "(deleted)") != NULL;
  }
  closedir(d);
}

static void put_all(bfh_db *db, unsigned round) {
  for (unsigned i = 0; i < NKEYS; i++) {
    char k[16], v[32];
    snprintf(k, sizeof k, "k%05u", i);
    int n = snprintf(v, sizeof v, "v%03u", (i * 7919u + round * 31u) % NVALUES);
    assert_int_equal(bfh_put(db, k, strlen(k), v, (size_t)n), BFH_OK);
  }
}

/* Every value by AUTO (the blocks reader) and SCAN, each answer against SCAN's. */
static void search_all(bfh_db *db) {
  for (unsigned v = 0; v < NVALUES; v += 97) {
    char where[64];
    snprintf(where, sizeof where, "value = 'v%03u'", v);
    uint64_t want;
    same_as_scan(db, where, BFH_SEARCH_AUTO, NKEYS, &want);
    assert_true(want > 0);
  }
}

static void files_held(db_fixture_t *f, bfh_engine engine) {
  bfh_options o;
  bfh_options_init(&o);
  o.engine = engine;
  o.memtable_bytes = 128 << 10;
  o.table_bytes = 128 << 10;
  o.block_cache_bytes = 0; /* every block a search reads comes from its file */
  if (bfh_open(f->dir, &o, &f->db) != BFH_OK) fail_msg("open: %s", bfh_last_error(NULL));
  put_all(f->db, 0);
  assert_int_equal(bfh_flush(f->db), BFH_OK);
  assert_int_equal(engine_stock_sync(bfh_internal_engine(f->db), NULL), BFH_OK);
  search_all(f->db);
  int open, deleted;
  table_fds(f->dir, &open, &deleted);
  print_message("after the first searches: %d table files open\n", open);
  /* The searches' files are held. LevelDB maps its tables and closes their descriptors, so
     there these are bfh's alone; RocksDB holds its own open too. */
  assert_true(open > 0);

  /* Overwrites: compactions replace the tables the searches hold, while they search. */
  for (unsigned round = 1; round <= 8; round++) {
    put_all(f->db, round);
    search_all(f->db);
  }
  assert_int_equal(bfh_flush(f->db), BFH_OK);
  /* Once the compactions settle, a sync closes the files of the tables they deleted: wait
     for that state, bounded. */
  int polls = 0;
  do {
    assert_int_equal(engine_stock_sync(bfh_internal_engine(f->db), NULL), BFH_OK);
    search_all(f->db);
    assert_int_equal(engine_stock_sync(bfh_internal_engine(f->db), NULL), BFH_OK);
    table_fds(f->dir, &open, &deleted);
    if (deleted == 0) break;
    struct timespec ts = {0, 10 * 1000 * 1000};
    nanosleep(&ts, NULL);
  } while (++polls < WAIT_POLLS);
  print_message("after the compactions: %d table files open, %d of them deleted (%d polls)\n",
                open, deleted, polls);
  assert_int_equal(deleted, 0);
  assert_int_equal(bfh_close(f->db), BFH_OK);
  f->db = NULL;
  table_fds(f->dir, &open, &deleted);
  assert_int_equal(open, 0); /* the close leaves none */
}

static void test_stock_files_leveldb(void **state) {
  files_held(*state, BFH_ENGINE_LEVELDB);
}

static void test_stock_files_rocksdb(void **state) {
  files_held(*state, BFH_ENGINE_ROCKSDB);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_stock_files_leveldb, setup, db_fixture_teardown),
      cmocka_unit_test_setup_teardown(test_stock_files_rocksdb, setup, db_fixture_teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

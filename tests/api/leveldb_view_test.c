/* The LevelDB engine's views against orderings of LevelDB's file changes and the directory
 * watch's events that a live run meets only rarely, forced here with the engine's test hold
 * on its watch (engine_leveldb_hold_watch: the events stay queued, unread).
 *
 * A log's removal reaches the watch after its name is gone: unlink(2) queues the event
 * last, so a view can find the log gone while no event says so (a thread descheduled inside
 * unlink on a loaded machine). Once seen in a concurrent run as an acknowledged put that a
 * SCAN search did not report (tests/api/leveldb_concurrency_test.c).
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
/* Not public (api/testbed.h): the LevelDB engine's hold on its directory watch. */
#include "api/testbed.h"
#include "tests/test_util.h"

#define WAIT_POLLS 6000 /* 10 ms each: a minute for LevelDB to delete a log */

typedef struct fixture {
  char dir[4096];
  bfh_db *db;
} fixture_t;

static int setup(void **state) {
  fixture_t *f = calloc(1, sizeof *f);
  if (!f || test_tmpdir_create(f->dir, sizeof f->dir, "leveldb_view") != 0) {
    free(f);
    return -1;
  }
  *state = f;
  return 0;
}

static int teardown(void **state) {
  fixture_t *f = *state;
  int rc = 0;
  if (f->db && bfh_close(f->db) != BFH_OK) rc = -1;
  if (test_rmrf(f->dir) != 0) rc = -1;
  free(f);
  return rc;
}

static int count_key(void *arg, const void *key, size_t len) {
  (void)key, (void)len;
  (*(int *)arg)++;
  return 0;
}

/* How many keys a search of val by method m reports. */
static int found(bfh_db *db, const char *val, bfh_method m) {
  int n = 0;
  if (bfh_search(db, val, strlen(val), m, count_key, &n, NULL) != BFH_OK)
    fail_msg("search method %d: %s", m, bfh_last_error(db));
  return n;
}

/* The path of the one log file in dir, into out. */
static void only_log(const char *dir, char *out, size_t cap) {
  DIR *d = opendir(dir);
  assert_non_null(d);
  int n = 0;
  struct dirent *de;
  while ((de = readdir(d))) {
    size_t len = strlen(de->d_name);
    if (len > 4 && strcmp(de->d_name + len - 4, ".log") == 0) {
      snprintf(out, cap, "%s/%s", dir, de->d_name);
      n++;
    }
  }
  closedir(d);
  assert_int_equal(n, 1);
}

/* A put's log is deleted (its table installed) while the watch has not reported the
   removal: a view that finds the log gone must fetch the table list, not keep the pin made
   before the table existed. read_first: a view reads the log before (the next finds a log
   it knows gone); else none does (the next lists the directory without it: a log it never
   knew of, which only the listing can stand for). */
static void log_gone_before_its_event(fixture_t *f, int value_filters, int read_first) {
  bfh_options o;
  bfh_options_init(&o);
  o.engine = BFH_ENGINE_LEVELDB;
  o.value_filters = value_filters;
  if (value_filters) o.value_filter_bits = 4096;
  if (bfh_open(f->dir, &o, &f->db) != BFH_OK) fail_msg("open: %s", bfh_last_error(NULL));
  assert_int_equal(bfh_put(f->db, "k1", 2, "the-value", 9), BFH_OK);
  int nmethods = value_filters ? BFH_SEARCH_AUTO + 1 : BFH_SEARCH_SCAN + 1;
  /* A view reads the log (a listing: nothing was read yet) and pins the empty list; the
     open pinned it too, without reading a log. */
  if (read_first)
    for (int m = 0; m < nmethods; m++) assert_int_equal(found(f->db, "the-value", m), 1);
  char log[4400];
  only_log(f->dir, log, sizeof log);

  engine_t *e = bfh_internal_engine(f->db);
  engine_leveldb_hold_watch(e, 1);
  /* The memtable into a table, the log deleted: none of it seen through the watch. */
  assert_int_equal(bfh_flush(f->db), BFH_OK);
  int polls = 0;
  while (access(log, F_OK) == 0 && polls++ < WAIT_POLLS) {
    struct timespec ts = {0, 10 * 1000 * 1000};
    nanosleep(&ts, NULL);
  }
  if (access(log, F_OK) == 0) fail_msg("LevelDB did not delete %s after a flush", log);
  for (int m = 0; m < nmethods; m++)
    if (found(f->db, "the-value", m) != 1)
      fail_msg("search method %d: k1 missing: its log is gone, its table not in the view", m);
  engine_leveldb_hold_watch(e, 0);
  for (int m = 0; m < nmethods; m++) assert_int_equal(found(f->db, "the-value", m), 1);
}

static void test_leveldb_view_log_gone_before_its_event(void **state) {
  log_gone_before_its_event(*state, 0, 1);
}

static void test_leveldb_view_log_gone_before_its_event_indexed(void **state) {
  log_gone_before_its_event(*state, 1, 1);
}

static void test_leveldb_view_unread_log_gone_before_its_event(void **state) {
  log_gone_before_its_event(*state, 0, 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_leveldb_view_log_gone_before_its_event, setup, teardown),
      cmocka_unit_test_setup_teardown(test_leveldb_view_log_gone_before_its_event_indexed, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_leveldb_view_unread_log_gone_before_its_event, setup,
                                      teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

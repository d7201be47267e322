/* Crash test: a forked child writes with sync = 1 and is killed with SIGKILL at a random
 * moment (once it has acknowledged a write), again and again on the same database (with a
 * tiny memtable and tables, so that kills land during log writes, flushes, compactions and
 * manifest switches). Before each operation the child sends an "intent" record through a
 * pipe and after the call returned an "ack". After each kill the parent reopens the
 * database and checks that every acknowledged write is there with its newest value; the one
 * operation in flight (intent without ack) may or may not have happened.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "lsm/db.h"
#include "lsm/filename.h"
#include "tests/env_fault.h"
#include "util/env.h"
#include "tests/lsm/db_test_util.h"

#define NKEYS 2000
#define MAX_VALUE 700
#define KILLS 24
#define NO_PROGRESS_SECONDS 60 /* a child that acknowledges nothing for this long failed */

enum { REC_INTENT = 1, REC_ACK = 2 };
enum { OP_PUT = 1, OP_DEL = 2 };

typedef struct rec {
  uint8_t kind, op;
  uint32_t key;
  uint64_t stamp; /* value stamp (puts) */
} rec_t;

static void crash_options(lsm_options_t *o) {
  lsm_options_init(o);
  o->sync = 1;
  o->memtable_bytes = 16 << 10;
  o->table_bytes = 8 << 10;
  o->level1_bytes = 64 << 10;
}

static void write_all(int fd, const void *p, size_t n) {
  const char *c = p;
  while (n) {
    ssize_t w = write(fd, c, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) _exit(3);
    c += w;
    n -= (size_t)w;
  }
}

/* The child: writes forever (until killed). Stamps start at `stamp0` so that every value
   ever written is distinct. */
static void child_main(const char *dir, int fd, uint64_t seed, uint64_t stamp0) {
  lsm_options_t o;
  crash_options(&o);
  lsm_db_t *db = NULL;
  err_t e;
  if (lsm_open(dir, &o, &db, &e) != ST_OK) _exit(2);
  rng_t r;
  rng_init(&r, seed);
  char key[32];
  uint8_t val[MAX_VALUE];
  for (uint64_t stamp = stamp0;; stamp++) {
    rec_t rec = {.kind = REC_INTENT, .key = (uint32_t)rng_below(&r, NKEYS), .stamp = stamp};
    rec.op = rng_below(&r, 100) < 80 ? OP_PUT : OP_DEL;
    write_all(fd, &rec, sizeof rec);
    size_t klen = test_key(key, rec.key);
    int rc;
    if (rec.op == OP_PUT) {
      size_t vlen = test_value(val, stamp, MAX_VALUE);
      rc = lsm_put(db, key, klen, val, vlen, &e);
    } else {
      rc = lsm_delete(db, key, klen, &e);
    }
    if (rc != ST_OK) _exit(4);
    rec.kind = REC_ACK;
    write_all(fd, &rec, sizeof rec);
  }
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Applies one record to the model; tracks the operation in flight. */
static void apply(uint64_t *model, rec_t *inflight, int *has_inflight, const rec_t *rec) {
  if (rec->kind == REC_INTENT) {
    *inflight = *rec;
    *has_inflight = 1;
  } else {
    model[rec->key] = rec->op == OP_PUT ? rec->stamp : 0;
    *has_inflight = 0;
  }
}

/* What a test has open, released by the teardown even when the test failed: the child
   (killed and reaped), the pipe's read end, the database, the faulty I/O layer, the
   directory. */
typedef struct fixture {
  char dir[TEST_PATH_MAX];
  pid_t child; /* 0: none running */
  int fd;      /* -1: closed */
  lsm_db_t *db;
  env_t *io;
  uint64_t *model;
} fixture_t;

static int setup(void **state) {
  fixture_t *f = calloc(1, sizeof *f);
  if (!f) return -1;
  f->fd = -1;
  if (test_tmpdir_create(f->dir, sizeof f->dir, "db_crash") != 0) {
    free(f);
    return -1;
  }
  *state = f;
  return 0;
}

static int teardown(void **state) {
  fixture_t *f = *state;
  if (f->child > 0) {
    kill(f->child, SIGKILL);
    waitpid(f->child, NULL, 0);
  }
  if (f->fd >= 0) close(f->fd);
  int rc = f->db && lsm_close(f->db) != ST_OK ? -1 : 0;
  env_destroy(f->io);
  if (test_rmrf(f->dir) != 0) rc = -1;
  free(f->model);
  free(f);
  return rc;
}

/* Closes the fixture's database and forgets it. */
static void close_db(fixture_t *f) {
  lsm_db_t *db = f->db;
  f->db = NULL;
  assert_int_equal(lsm_close(db), ST_OK);
}

static void test_db_crash_sigkill_keeps_acknowledged_writes(void **state) {
  fixture_t *f = *state;
  const char *dir = f->dir;
  uint64_t *model = f->model = calloc(NKEYS, sizeof *model);
  assert_non_null(model);
  rng_t r;
  rng_init(&r, 777);
  uint64_t stamp0 = 1, total_acks = 0, inflight_applied = 0;
  const double base_ms = TEST_SANITIZED ? 400 : 150;
  for (int kill_no = 0; kill_no < KILLS; kill_no++) {
    int fds[2];
    assert_int_equal(pipe(fds), 0);
    f->fd = fds[0];
    pid_t pid = fork();
    if (pid < 0) close(fds[1]);
    assert_true(pid >= 0);
    if (pid == 0) {
      close(fds[0]);
      child_main(dir, fds[1], 1000 + (uint64_t)kill_no, stamp0);
      _exit(0);
    }
    f->child = pid;
    close(fds[1]);
    /* Let it run for a random time, reading acknowledgements as they come; kill it once
       that time is up and it has acknowledged a write (on a loaded machine the open alone
       may take the whole time), or after NO_PROGRESS_SECONDS without one. */
    double start = now_s();
    double deadline = start + (base_ms + (double)rng_below(&r, 400)) / 1000.0;
    rec_t inflight = {0};
    int has_inflight = 0;
    uint64_t acks = 0, max_stamp = stamp0;
    rec_t rec;
    size_t have = 0;
    uint8_t buf[sizeof rec];
    int killed = 0;
    for (;;) {
      double now = now_s();
      if (!killed && now >= deadline && (acks > 0 || now >= start + NO_PROGRESS_SECONDS)) {
        kill(pid, SIGKILL);
        killed = 1;
      }
      struct pollfd pfd = {fds[0], POLLIN, 0};
      int pr = poll(&pfd, 1, killed ? 1000 : 5);
      if (pr <= 0) {
        if (killed) break;
        continue;
      }
      ssize_t n = read(fds[0], buf + have, sizeof buf - have);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break; /* EOF: the child is dead and the pipe drained */
      have += (size_t)n;
      if (have < sizeof rec) continue;
      memcpy(&rec, buf, sizeof rec);
      have = 0;
      apply(model, &inflight, &has_inflight, &rec);
      if (rec.kind == REC_ACK) acks++;
      if (rec.stamp >= max_stamp) max_stamp = rec.stamp + 1;
    }
    close(fds[0]);
    f->fd = -1;
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    f->child = 0;
    if (!WIFSIGNALED(status) || WTERMSIG(status) != SIGKILL)
      fail_msg("child did not die by SIGKILL (status %d): it failed on its own", status);
    if (acks == 0)
      fail_msg("kill %d: the child acknowledged no write in %d s", kill_no, NO_PROGRESS_SECONDS);
    total_acks += acks;
    stamp0 = max_stamp + 1;

    /* Reopen and check every key. */
    lsm_options_t o;
    crash_options(&o);
    err_t e;
    err_clear(&e);
    int rc = lsm_open(dir, &o, &f->db, &e);
    if (rc != ST_OK) fail_msg("reopen after kill %d: %d %s", kill_no, rc, e.msg);
    lsm_db_t *db = f->db;
    char key[32];
    uint8_t want[MAX_VALUE];
    for (uint32_t id = 0; id < NKEYS; id++) {
      size_t klen = test_key(key, id);
      void *val = NULL;
      size_t vlen = 0;
      rc = lsm_get(db, key, klen, &val, &vlen, &e);
      if (rc != ST_OK && rc != ST_NOT_FOUND) fail_msg("get: %d %s", rc, e.msg);
      uint64_t got = 0; /* 0 = absent; else the stamp it matches */
      if (rc == ST_OK) {
        uint64_t cands[2] = {model[id], has_inflight && inflight.key == id ? inflight.stamp : 0};
        for (int c = 0; c < 2 && !got; c++) {
          if (!cands[c]) continue;
          size_t n = test_value(want, cands[c], MAX_VALUE);
          if (n == vlen && memcmp(want, val, n) == 0) got = cands[c];
        }
        if (!got) fail_msg("kill %d: key %s has a value that was never acknowledged", kill_no, key);
      }
      free(val);
      if (got == model[id]) continue;
      /* Only the write in flight may differ from the model. */
      if (!(has_inflight && inflight.key == id))
        fail_msg("kill %d: key %s lost its acknowledged %s", kill_no, key,
                 model[id] ? "value" : "deletion");
      int matches_inflight = inflight.op == OP_PUT ? got == inflight.stamp : got == 0;
      if (!matches_inflight) fail_msg("kill %d: key %s in an impossible state", kill_no, key);
      model[id] = got; /* the in-flight write did happen */
      inflight_applied++;
    }
    close_db(f);
  }
  print_message("%d kills, %llu acknowledged writes checked, %llu in-flight writes survived\n",
                KILLS, (unsigned long long)total_acks, (unsigned long long)inflight_applied);
}

/* Power loss: the disk dies (every sync from the nth on fails) at a different moment in
   each run; then every byte not synced is dropped (env_drop_unsynced) and the
   database reopened: every write acknowledged with sync = 1 must be there. */
static void test_db_crash_power_loss_keeps_synced_writes(void **state) {
  fixture_t *f = *state;
  enum { RUNS = 12, KEYS = 300 };
  rng_t r;
  rng_init(&r, 4242);
  for (int run = 0; run < RUNS; run++) {
    char dir[TEST_PATH_MAX + 32];
    snprintf(dir, sizeof dir, "%s/run%d", f->dir, run);
    env_t *io = f->io = env_create_faulty();
    assert_non_null(io);
    lsm_options_t o;
    crash_options(&o);
    o.io = io;
    err_t e;
    err_clear(&e);
    assert_int_equal(lsm_open(dir, &o, &f->db, &e), ST_OK);
    lsm_db_t *db = f->db;
    uint64_t model[KEYS] = {0};
    uint64_t fail_at = 5 + rng_below(&r, 400);
    env_fail(io, ENV_OP_SYNC, fail_at, 1);
    char key[32];
    uint8_t val[MAX_VALUE];
    uint64_t acked = 0, failed = 0;
    for (uint64_t stamp = 1; stamp <= 600; stamp++) {
      uint32_t id = (uint32_t)rng_below(&r, KEYS);
      size_t klen = test_key(key, id);
      size_t vlen = test_value(val, stamp, MAX_VALUE);
      int rc = lsm_put(db, key, klen, val, vlen, &e);
      if (rc == ST_OK) {
        model[id] = stamp;
        acked++;
      } else {
        failed++;
        break; /* the process "dies" at the first failure */
      }
    }
    f->db = NULL;
    lsm_close(db); /* may report the background error */
    assert_int_equal(env_drop_unsynced(io, &e), ST_OK);
    env_fail_none(io);
    int rc = lsm_open(dir, &o, &f->db, &e);
    if (rc != ST_OK) fail_msg("run %d: reopen after power loss: %d %s", run, rc, e.msg);
    db = f->db;
    uint8_t want[MAX_VALUE];
    for (uint32_t id = 0; id < KEYS; id++) {
      void *v = NULL;
      size_t vl = 0;
      rc = lsm_get(db, key, test_key(key, id), &v, &vl, &e);
      if (!model[id]) {
        /* Never acknowledged: at most the failed write may have landed. */
        if (rc != ST_NOT_FOUND && rc != ST_OK) fail_msg("get: %d %s", rc, e.msg);
      } else {
        if (rc != ST_OK) fail_msg("run %d: key %s lost (rc %d %s)", run, key, rc, e.msg);
        size_t n = test_value(want, model[id], MAX_VALUE);
        /* The failed put (one past the last acknowledged) may have reached the disk. */
        if (!(vl == n && memcmp(v, want, n) == 0)) {
          size_t m = test_value(want, acked + failed, MAX_VALUE);
          if (!(failed && vl == m && memcmp(v, want, m) == 0))
            fail_msg("run %d: key %s has a stale value", run, key);
        }
      }
      free(v);
    }
    close_db(f);
    f->io = NULL;
    env_destroy(io);
    assert_int_equal(test_rmrf(dir), 0);
    assert_true(acked > 0);
  }
}

/* The live tables of f->db. */
static size_t live_tables(fixture_t *f) {
  lsm_snapshot_t *s = lsm_snapshot_acquire(f->db);
  assert_non_null(s);
  const lsm_table_info_t *t;
  size_t n = lsm_snapshot_tables(s, &t);
  lsm_snapshot_release(s);
  return n;
}

/* A reused log (lsm_open keeps appending to the one log it replays): sessions that each
   open, write a little and close leave every write in that one log, and no table. Then the
   disk dies in the middle of a session and the unsynced bytes are dropped: every write
   acknowledged with sync = 1, in any session, must be there after the reopen. Appending
   at the wrong place in the log's last block would make its records unreadable. */
static void test_db_crash_reused_log_keeps_synced_writes(void **state) {
  fixture_t *f = *state;
  enum { SESSIONS = 8, PUTS = 60, KEYS = 300 };
  rng_t r;
  rng_init(&r, 777);
  char dir[TEST_PATH_MAX + 32];
  snprintf(dir, sizeof dir, "%s/reuse", f->dir);
  env_t *io = f->io = env_create_faulty();
  assert_non_null(io);
  lsm_options_t o;
  crash_options(&o);
  o.memtable_bytes = 4 << 20; /* every session's writes fit: the log is always reused */
  o.io = io;
  uint64_t model[KEYS] = {0}, stamp = 0, failed = 0;
  char key[32];
  uint8_t val[MAX_VALUE], want[MAX_VALUE];
  err_t e;
  for (int session = 0; session < SESSIONS && !failed; session++) {
    assert_int_equal(lsm_open(dir, &o, &f->db, &e), ST_OK);
    assert_int_equal(live_tables(f), 0);
    if (session == SESSIONS - 1) env_fail(io, ENV_OP_SYNC, 1 + rng_below(&r, PUTS), 1);
    for (int i = 0; i < PUTS; i++) {
      uint32_t id = (uint32_t)rng_below(&r, KEYS);
      size_t klen = test_key(key, id), vlen = test_value(val, ++stamp, MAX_VALUE);
      if (lsm_put(f->db, key, klen, val, vlen, &e) != ST_OK) {
        failed = stamp;
        break;
      }
      model[id] = stamp;
    }
    lsm_db_t *db = f->db;
    f->db = NULL;
    lsm_close(db); /* after the failure: reports it */
  }
  assert_true(failed > 0);
  assert_int_equal(env_drop_unsynced(io, &e), ST_OK);
  env_fail_none(io);
  int rc = lsm_open(dir, &o, &f->db, &e);
  if (rc != ST_OK) fail_msg("reopen after power loss: %d %s", rc, e.msg);
  for (uint32_t id = 0; id < KEYS; id++) {
    void *v = NULL;
    size_t vl = 0;
    rc = lsm_get(f->db, key, test_key(key, id), &v, &vl, &e);
    if (model[id]) {
      if (rc != ST_OK) fail_msg("key %s lost (rc %d %s)", key, rc, e.msg);
      size_t n = test_value(want, model[id], MAX_VALUE), m = test_value(val, failed, MAX_VALUE);
      /* The failed put may have reached the disk. */
      if (!(vl == n && memcmp(v, want, n) == 0) && !(vl == m && memcmp(v, val, m) == 0))
        fail_msg("key %s has a stale value", key);
    }
    free(v);
  }
  close_db(f);
}

static void put_ok(lsm_db_t *db, const char *key, const char *val) {
  err_t e;
  if (lsm_put(db, key, strlen(key), val, strlen(val), &e) != ST_OK) fail_msg("put: %s", e.msg);
}

static void expect_stored(lsm_db_t *db, const char *key, const char *want) {
  void *v = NULL;
  size_t n = 0;
  err_t e;
  if (lsm_get(db, key, strlen(key), &v, &n, &e) != ST_OK) fail_msg("get %s: %s", key, e.msg);
  assert_int_equal(n, strlen(want));
  assert_memory_equal(v, want, n);
  free(v);
}

/* A log whose tail a crash tore is not reused: records appended after the torn bytes would
   follow garbage the reader cannot skip. Its entries go to a table and a new log starts;
   the writes of every session are there afterwards. */
static void test_db_crash_torn_log_is_not_reused(void **state) {
  fixture_t *f = *state;
  char dir[TEST_PATH_MAX + 32], log[TEST_PATH_MAX + 64];
  snprintf(dir, sizeof dir, "%s/torn", f->dir);
  env_t *io = f->io = env_create_faulty();
  assert_non_null(io);
  lsm_options_t o;
  crash_options(&o);
  o.memtable_bytes = 4 << 20; /* one log, 000001.log, holds every write */
  o.io = io;
  err_t e;
  assert_int_equal(lsm_open(dir, &o, &f->db, &e), ST_OK);
  put_ok(f->db, "a", "1");
  put_ok(f->db, "b", "2");
  /* The crash: the clean-close record's log sync fails, so the manifest does not say the log
     was closed whole; then a torn header at its end. */
  env_fail(io, ENV_OP_SYNC, 1, 1);
  lsm_db_t *db = f->db;
  f->db = NULL;
  lsm_close(db);
  env_fail_none(io);
  assert_int_equal(test_path_take(log, sizeof log, lsm_filename_log(dir, 1)), 0);
  FILE *fp = fopen(log, "ab");
  assert_non_null(fp);
  assert_int_equal(fwrite("\xff\xff\xff\xff\xff", 1, 5, fp), 5);
  assert_int_equal(fclose(fp), 0);

  if (lsm_open(dir, &o, &f->db, &e) != ST_OK) fail_msg("open after the crash: %s", e.msg);
  assert_int_equal(live_tables(f), 1); /* the torn log's entries */
  put_ok(f->db, "c", "3");
  close_db(f);
  if (lsm_open(dir, &o, &f->db, &e) != ST_OK) fail_msg("reopen: %s", e.msg);
  expect_stored(f->db, "a", "1");
  expect_stored(f->db, "b", "2");
  expect_stored(f->db, "c", "3");
  close_db(f);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_db_crash_sigkill_keeps_acknowledged_writes, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_db_crash_reused_log_keeps_synced_writes, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_db_crash_torn_log_is_not_reused, setup, teardown),
      cmocka_unit_test_setup_teardown(test_db_crash_power_loss_keeps_synced_writes, setup,
                                      teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

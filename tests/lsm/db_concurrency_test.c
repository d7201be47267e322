/* Concurrent readers during heavy writes, flushes and compactions (meant for TSan too).
 *
 * Two writer threads own disjoint halves of the key space and write each key with an
 * increasing version; after a put returns, the writer publishes the version in acked[key].
 * Readers check linearizability of what they see:
 *   - get: the version read is >= acked[key] loaded before the call, and well formed;
 *   - iterator: keys strictly ascending, values well formed, and each version >= the
 *     acked version loaded before the iterator was created (a consistent view);
 *   - snapshot: every table of the snapshot and the memtables scan without error, with
 *     well-formed entries.
 * Runs for about 8 s (scaled by BFH_TEST_SCALE; 0.2 under sanitizers, at least 3 s), and on
 * until, after every reader kind has finished a pass, a flush and a compaction have been
 * installed under the running readers (a loaded machine gets more time, not a weaker test;
 * at most MAX_RUN_SECONDS, then it fails saying what never happened).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lsm/db.h"
#include "tests/lsm/db_test_util.h"
#include "util/coding.h"

#define NKEYS 4000
#define VALUE_BYTES 48 /* key id fixed64 | version fixed64 | filler */
#define MAX_RUN_SECONDS 300

typedef struct shared {
  lsm_db_t *db;
  atomic_uint_fast64_t acked[NKEYS];
  atomic_int stop;
  atomic_int failed;
  char failure[256];
  pthread_mutex_t fail_mu;
  atomic_uint_fast64_t gets, scans, snapshots, writes;
  /* The fixture's: what the teardown releases even when the test failed. */
  char dir[TEST_PATH_MAX];
  pthread_t th[8];
  int nthreads; /* started and not joined yet */
} shared_t;

static void fail_once(shared_t *s, const char *msg, uint64_t a, uint64_t b) {
  pthread_mutex_lock(&s->fail_mu);
  if (!atomic_load(&s->failed))
    snprintf(s->failure, sizeof s->failure, "%s (%llu, %llu)", msg, (unsigned long long)a,
             (unsigned long long)b);
  atomic_store(&s->failed, 1);
  atomic_store(&s->stop, 1);
  pthread_mutex_unlock(&s->fail_mu);
}

static void make_value(uint8_t *v, uint64_t id, uint64_t version) {
  encode_fixed64(v, id);
  encode_fixed64(v + 8, version);
  for (int i = 16; i < VALUE_BYTES; i++) v[i] = (uint8_t)(id * 31 + version * 7 + (uint64_t)i);
}

/* 1 if v is the well-formed value of key id; sets *version. */
static int check_value(const uint8_t *v, size_t n, uint64_t id, uint64_t *version) {
  if (n != VALUE_BYTES || decode_fixed64(v) != id) return 0;
  *version = decode_fixed64(v + 8);
  uint8_t want[VALUE_BYTES];
  make_value(want, id, *version);
  return memcmp(want, v, VALUE_BYTES) == 0;
}

typedef struct targ {
  shared_t *s;
  int index;
} targ_t;

static void *writer_main(void *arg) {
  targ_t *t = arg;
  shared_t *s = t->s;
  rng_t r;
  rng_init(&r, 100 + (uint64_t)t->index);
  char key[32];
  uint8_t val[VALUE_BYTES];
  while (!atomic_load(&s->stop)) {
    uint64_t id = rng_below(&r, NKEYS / 2) * 2 + (uint64_t)t->index; /* own half */
    uint64_t version = atomic_load(&s->acked[id]) + 1;
    make_value(val, id, version);
    err_t e;
    int rc = lsm_put(s->db, key, test_key(key, id), val, VALUE_BYTES, &e);
    if (rc != ST_OK) {
      fail_once(s, "put failed", id, (uint64_t)-rc);
      break;
    }
    atomic_store(&s->acked[id], version);
    atomic_fetch_add(&s->writes, 1);
  }
  return NULL;
}

static void *getter_main(void *arg) {
  targ_t *t = arg;
  shared_t *s = t->s;
  rng_t r;
  rng_init(&r, 200 + (uint64_t)t->index);
  char key[32];
  while (!atomic_load(&s->stop)) {
    uint64_t id = rng_below(&r, NKEYS);
    uint64_t before = atomic_load(&s->acked[id]);
    void *v = NULL;
    size_t n = 0;
    err_t e;
    int rc = lsm_get(s->db, key, test_key(key, id), &v, &n, &e);
    uint64_t version = 0;
    if (rc == ST_NOT_FOUND) {
      if (before) fail_once(s, "get: acknowledged key not found", id, before);
    } else if (rc != ST_OK) {
      fail_once(s, "get failed", id, (uint64_t)-rc);
    } else if (!check_value(v, n, id, &version)) {
      fail_once(s, "get: malformed value", id, n);
    } else if (version < before) {
      fail_once(s, "get: stale version", version, before);
    }
    free(v);
    atomic_fetch_add(&s->gets, 1);
  }
  return NULL;
}

static uint64_t *acked_copy(shared_t *s) {
  uint64_t *c = malloc(NKEYS * sizeof *c);
  for (int i = 0; i < NKEYS; i++) c[i] = atomic_load(&s->acked[i]);
  return c;
}

static void *iter_main(void *arg) {
  targ_t *t = arg;
  shared_t *s = t->s;
  while (!atomic_load(&s->stop)) {
    uint64_t *before = acked_copy(s);
    lsm_iter_t *it = lsm_iter_create(s->db);
    if (!it) {
      fail_once(s, "iterator create failed", 0, 0);
      free(before);
      break;
    }
    char prev[32] = "";
    size_t prev_len = 0, count = 0;
    for (lsm_iter_seek_first(it); lsm_iter_valid(it) && !atomic_load(&s->failed);
         lsm_iter_next(it)) {
      size_t kl, vl;
      const char *k = lsm_iter_key(it, &kl);
      const uint8_t *v = lsm_iter_value(it, &vl);
      if (kl >= sizeof prev || (prev_len && (memcmp(prev, k, kl) >= 0 || kl != prev_len))) {
        fail_once(s, "iterator: keys out of order", count, kl);
        break;
      }
      uint64_t id = strtoull(k + 3, NULL, 10), version;
      if (id >= NKEYS || !check_value(v, vl, id, &version)) {
        fail_once(s, "iterator: malformed entry", count, id);
        break;
      }
      if (version < before[id]) {
        fail_once(s, "iterator: view older than its creation", version, before[id]);
        break;
      }
      memcpy(prev, k, kl);
      prev_len = kl;
      count++;
    }
    err_t e;
    if (lsm_iter_status(it, &e) != ST_OK) fail_once(s, "iterator error", 0, 0);
    size_t acked_keys = 0;
    for (int i = 0; i < NKEYS; i++) acked_keys += before[i] != 0;
    if (!atomic_load(&s->failed) && count < acked_keys)
      fail_once(s, "iterator: missing keys", count, acked_keys);
    lsm_iter_destroy(it);
    free(before);
    atomic_fetch_add(&s->scans, 1);
  }
  return NULL;
}

typedef struct visit_ctx {
  shared_t *s;
  uint64_t entries;
} visit_ctx_t;

static int visit(void *arg, const void *key, size_t key_len, const void *val, size_t val_len,
                 uint64_t seq, int type) {
  visit_ctx_t *c = arg;
  (void)seq;
  uint64_t id = key_len > 3 ? strtoull((const char *)key + 3, NULL, 10) : NKEYS, version;
  if (type != LSM_TYPE_VALUE || id >= NKEYS || !check_value(val, val_len, id, &version)) {
    fail_once(c->s, "snapshot scan: malformed entry", id, val_len);
    return 1;
  }
  c->entries++;
  return 0;
}

static void *snapshot_main(void *arg) {
  targ_t *t = arg;
  shared_t *s = t->s;
  while (!atomic_load(&s->stop)) {
    lsm_snapshot_t *snap = lsm_snapshot_acquire(s->db);
    if (!snap) {
      fail_once(s, "snapshot acquire failed", 0, 0);
      break;
    }
    const lsm_table_info_t *tables;
    size_t n = lsm_snapshot_tables(snap, &tables);
    visit_ctx_t c = {s, 0};
    for (size_t i = 0; i < n && !atomic_load(&s->failed); i++) {
      err_t e;
      lsm_scan_stats_t st = {0};
      int rc = lsm_snapshot_scan_table(snap, tables[i].number, visit, &c, &st, &e);
      if (rc != ST_OK) fail_once(s, "snapshot table scan failed", tables[i].number, (uint64_t)-rc);
    }
    err_t e;
    if (lsm_snapshot_scan_memtables(snap, visit, &c, NULL, &e) != ST_OK)
      fail_once(s, "snapshot memtable scan failed", 0, 0);
    lsm_snapshot_release(snap);
    atomic_fetch_add(&s->snapshots, 1);
  }
  return NULL;
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Stops the threads and joins them (none is left running after this). */
static void stop_threads(shared_t *s) {
  atomic_store(&s->stop, 1);
  for (; s->nthreads > 0; s->nthreads--) pthread_join(s->th[s->nthreads - 1], NULL);
}

static int setup(void **state) {
  shared_t *s = calloc(1, sizeof *s);
  if (!s) return -1;
  if (test_tmpdir_create(s->dir, sizeof s->dir, "db_concurrency") != 0) {
    free(s);
    return -1;
  }
  pthread_mutex_init(&s->fail_mu, NULL);
  *state = s;
  return 0;
}

/* Stops the threads before closing the database they use. */
static int teardown(void **state) {
  shared_t *s = *state;
  stop_threads(s);
  int rc = s->db && lsm_close(s->db) != ST_OK ? -1 : 0;
  if (test_rmrf(s->dir) != 0) rc = -1;
  pthread_mutex_destroy(&s->fail_mu);
  free(s);
  return rc;
}

static void test_db_concurrency_readers_during_compaction(void **state) {
  shared_t *s = *state;
  lsm_options_t o;
  lsm_options_init(&o);
  o.memtable_bytes = 64 << 10;
  o.table_bytes = 32 << 10;
  o.level1_bytes = 256 << 10;
  err_t e;
  err_clear(&e);
  int rc = lsm_open(s->dir, &o, &s->db, &e);
  if (rc != ST_OK) fail_msg("open: %s", e.msg);

  enum { NW = 2, NG = 2, NI = 1, NS = 1, NT = NW + NG + NI + NS };
  _Static_assert(NT <= sizeof s->th / sizeof s->th[0], "room for the threads");
  static targ_t args[NT]; /* outlives the test body: a failed test's threads still run */
  for (int i = 0; i < NT; i++) {
    args[i] = (targ_t){s, i < NW ? i : i};
    void *(*fn)(void *) = i < NW             ? writer_main
                          : i < NW + NG      ? getter_main
                          : i < NW + NG + NI ? iter_main
                                             : snapshot_main;
    assert_int_equal(pthread_create(&s->th[i], NULL, fn, &args[i]), 0);
    s->nthreads++;
  }
  double seconds = 8 * test_scale();
  if (seconds < 3) seconds = 3;
  /* Polls (every 10 ms) for the end of the run: once every reader kind has finished a pass
     (base), more flushes and compactions must be installed before the readers stop. */
  double t0 = now_s(), elapsed = 0;
  lsm_stats_t base, st;
  memset(&base, 0, sizeof base);
  int readers_up = 0, overlapped = 0;
  for (;;) {
    if (!readers_up && atomic_load(&s->gets) > 0 && atomic_load(&s->scans) > 0 &&
        atomic_load(&s->snapshots) > 0) {
      readers_up = 1;
      lsm_get_stats(s->db, &base);
    }
    lsm_get_stats(s->db, &st);
    overlapped = readers_up && st.flushes > base.flushes && st.compactions > base.compactions;
    elapsed = now_s() - t0;
    if (atomic_load(&s->failed) || (overlapped && elapsed >= seconds) || elapsed >= MAX_RUN_SECONDS)
      break;
    struct timespec tick = {0, 10 * 1000 * 1000};
    nanosleep(&tick, NULL);
  }
  stop_threads(s);
  print_message(
      "%.1f s: writes %llu gets %llu iterator scans %llu snapshots %llu; flushes %llu "
      "compactions %llu (%llu and %llu of them after every reader's first pass)\n",
      elapsed, (unsigned long long)atomic_load(&s->writes),
      (unsigned long long)atomic_load(&s->gets), (unsigned long long)atomic_load(&s->scans),
      (unsigned long long)atomic_load(&s->snapshots), (unsigned long long)st.flushes,
      (unsigned long long)st.compactions, (unsigned long long)(st.flushes - base.flushes),
      (unsigned long long)(st.compactions - base.compactions));
  if (atomic_load(&s->failed)) fail_msg("%s", s->failure);
  if (!overlapped)
    fail_msg("in %d s, no flush and compaction overlapped the readers (counts above)",
             MAX_RUN_SECONDS);

  assert_int_equal(lsm_wait_idle(s->db, &e), ST_OK);
  /* Final state: every key holds its last acknowledged version. */
  char key[32];
  for (uint64_t id = 0; id < NKEYS; id++) {
    uint64_t want = atomic_load(&s->acked[id]), version = 0;
    void *v = NULL;
    size_t n;
    rc = lsm_get(s->db, key, test_key(key, id), &v, &n, &e);
    if (!want) {
      assert_int_equal(rc, ST_NOT_FOUND);
      continue;
    }
    assert_int_equal(rc, ST_OK);
    assert_true(check_value(v, n, id, &version));
    assert_int_equal(version, want);
    free(v);
  }
  lsm_db_t *db = s->db;
  s->db = NULL;
  assert_int_equal(lsm_close(db), ST_OK);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_db_concurrency_readers_during_compaction, setup,
                                      teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

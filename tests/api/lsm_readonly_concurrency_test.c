/* The own engine's read-only row against a live writer in ANOTHER PROCESS (meant for
 * ThreadSanitizer too: CI runs every *concurrency* test under it): a read-write bfh handle
 * (forked before any thread starts) writes with tiny memtables and tables, so that logs
 * switch, memtables flush and compactions delete tables (its own, in the background, and at
 * the flushes it asks for), while searcher threads of this process search one shared
 * read-only bfh handle with every method and read it with bfh_get.
 *
 * The writer owns NKEYS keys and writes each with an increasing version; the value of (key,
 * version) is unique. Shared memory (MAP_SHARED) carries, per key, the version whose put began
 * (started) and the one bfh_put acknowledged (acked). A searcher picks a key, loads a =
 * acked[key], searches for the value of (key, a) and then loads s = started[key]: if s == a no
 * overwrite began before the search ended, so the key must be reported (no false negative for
 * an acknowledged write), and no other key may be (the value is unique). A get of the key
 * must give a version v with a <= v <= s, read before and after. Stable keys with shared
 * values, written and flushed before the reader opens and never changed, must all be found by
 * every search of their value. Any error fails the test: a log or MANIFEST read racing an
 * append is not damage.
 *
 * Runs for BFH_CONCURRENCY_SECONDS seconds (default 5), and on until every method has run,
 * the writer has flushed 3 times and compacted twice and the reader has refreshed 20 times
 * (at most MAX_SECONDS, then it fails saying what never happened). Waits are for states
 * (bounded), never for a guessed time.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bfh.h"
#include "lsm/db.h"
#include "lsm_hooks/engines/lsm/engine_lsm.h"
#include "lsm_hooks/engines/lsm_ro/lsm_readonly.h"
#include "api/testbed.h" /* bfh_internal_engine: the writer's compactions */
#include "tests/test_util.h"
#include "util/random.h"

#define NKEYS 2000
#define NSTABLE 400
#define SHARED 8
#define SEARCHERS 2
#define FLUSH_EVERY 3000
#define FILTER_BITS 65536 /* small value filters: tables of 64 KiB */
#define DEFAULT_SECONDS 5
#define MAX_SECONDS 600
#define NMETHODS 5

/* Shared between the writer process and this one. */
typedef struct shm {
  atomic_uint_fast64_t started[NKEYS], acked[NKEYS];
  atomic_int ready, stop, writer_failed;
  atomic_uint_fast64_t writes, flushes, compactions;
  char writer_error[512];
} shm_t;

static char g_dir[512], g_db[600];
static shm_t *g_shm;

static int setup(void **state) {
  (void)state;
  if (test_tmpdir_create(g_dir, sizeof g_dir, "lsm_readonly_concurrency_test")) return -1;
  snprintf(g_db, sizeof g_db, "%s/db", g_dir);
  g_shm = mmap(NULL, sizeof *g_shm, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  return g_shm == MAP_FAILED ? -1 : 0;
}

static int teardown(void **state) {
  (void)state;
  munmap(g_shm, sizeof *g_shm);
  return test_rmrf(g_dir);
}

static size_t key_of(int i, char *buf) {
  return (size_t)sprintf(buf, "key%05d", i);
}
static size_t val_of(int i, uint64_t version, char *buf) {
  return (size_t)sprintf(buf, "val%05d-%llu", i, (unsigned long long)version);
}
static size_t stable_key(int i, char *buf) {
  return (size_t)sprintf(buf, "stable%05d", i);
}
static size_t shared_val(int j, char *buf) {
  return (size_t)sprintf(buf, "shared-%d", j);
}

/* ---- The writer: a read-write bfh handle in its own process --------------------------------- */

static void writer_fail(const char *what, int rc, bfh_db *db) {
  snprintf(g_shm->writer_error, sizeof g_shm->writer_error, "%s: %d %s", what, rc,
           bfh_last_error(db));
  atomic_store(&g_shm->writer_failed, 1);
  _exit(1);
}

static void options(bfh_options *o) {
  bfh_options_init(o);
  o->memtable_bytes = 64 << 10;
  o->table_bytes = 64 << 10;
  o->value_filter_bits = FILTER_BITS;
}

/* The compactions the writer's engine ran so far. */
static uint64_t compactions(bfh_db *db) {
  lsm_stats_t st;
  lsm_get_stats(engine_lsm_db(bfh_internal_engine(db)), &st);
  return st.compactions;
}

static void writer_main(void) {
  bfh_options o;
  options(&o);
  bfh_db *db = NULL;
  int rc = bfh_open(g_db, &o, &db);
  if (rc != BFH_OK) writer_fail("open", rc, NULL);
  char k[32], v[48];
  for (int i = 0; i < NSTABLE; i++) {
    size_t kl = stable_key(i, k), vl = shared_val(i % SHARED, v);
    if ((rc = bfh_put(db, k, kl, v, vl)) != BFH_OK) writer_fail("put", rc, db);
  }
  if ((rc = bfh_flush(db)) != BFH_OK) writer_fail("flush", rc, db);
  atomic_store(&g_shm->ready, 1);
  rng_t r;
  rng_init(&r, 0x5eed);
  uint64_t n = 0;
  while (!atomic_load(&g_shm->stop)) {
    int i = (int)rng_below(&r, NKEYS);
    uint64_t ver = atomic_load(&g_shm->acked[i]) + 1;
    atomic_store(&g_shm->started[i], ver);
    size_t kl = key_of(i, k), vl = val_of(i, ver, v);
    if ((rc = bfh_put(db, k, kl, v, vl)) != BFH_OK) writer_fail("put", rc, db);
    atomic_store(&g_shm->acked[i], ver);
    atomic_fetch_add(&g_shm->writes, 1);
    if (++n % FLUSH_EVERY == 0) {
      if ((rc = bfh_flush(db)) != BFH_OK) writer_fail("flush", rc, db);
      atomic_fetch_add(&g_shm->flushes, 1);
      atomic_store(&g_shm->compactions, compactions(db));
    }
  }
  if ((rc = bfh_close(db)) != BFH_OK) writer_fail("close", rc, NULL);
  _exit(0);
}

/* ---- The searchers ------------------------------------------------------------------------- */

typedef struct ctx {
  bfh_db *db;
  atomic_int stop, failed;
  atomic_uint_fast64_t searches[NMETHODS], gets;
  pthread_mutex_t mu;
  char failure[768];
} ctx_t;

static void fail_with(ctx_t *c, const char *fmt, ...) {
  pthread_mutex_lock(&c->mu);
  if (!atomic_load(&c->failed)) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->failure, sizeof c->failure, fmt, ap);
    va_end(ap);
    atomic_store(&c->failed, 1);
  }
  pthread_mutex_unlock(&c->mu);
  atomic_store(&c->stop, 1);
}

typedef struct hits {
  int n, self, other, stable;
} hits_t;

static int on_key(void *arg, const void *key, size_t kl) {
  hits_t *h = arg;
  h->n++;
  if (kl >= 6 && memcmp(key, "stable", 6) == 0) h->stable++;
  (void)kl;
  return 0;
}

typedef struct want {
  hits_t h;
  char key[32];
  size_t kl;
} want_t;

static int on_key_want(void *arg, const void *key, size_t kl) {
  want_t *w = arg;
  if (kl == w->kl && memcmp(key, w->key, kl) == 0)
    w->h.self++;
  else
    w->h.other++;
  return 0;
}

static void *searcher(void *arg) {
  ctx_t *c = arg;
  static atomic_int seeds;
  rng_t r;
  rng_init(&r, 1000 + (uint64_t)atomic_fetch_add(&seeds, 1));
  uint64_t round = 0;
  while (!atomic_load(&c->stop)) {
    int m = (int)(round++ % NMETHODS);
    char v[48];
    if (round % 7 == 0) { /* a shared value of the stable keys: all of them, nothing else */
      int j = (int)rng_below(&r, SHARED);
      size_t vl = shared_val(j, v);
      hits_t h = {0};
      int rc = bfh_search(c->db, v, vl, (bfh_method)m, on_key, &h, NULL);
      if (rc != BFH_OK) fail_with(c, "search %s method %d: %d %s", v, m, rc, bfh_last_error(c->db));
      if (h.n != NSTABLE / SHARED || h.stable != h.n)
        fail_with(c, "search %s method %d: %d keys (%d stable), wanted %d stable", v, m, h.n,
                  h.stable, NSTABLE / SHARED);
      atomic_fetch_add(&c->searches[m], 1);
      continue;
    }
    int i = (int)rng_below(&r, NKEYS);
    uint64_t a = atomic_load(&g_shm->acked[i]);
    if (a == 0) continue;
    want_t w;
    memset(&w, 0, sizeof w);
    w.kl = key_of(i, w.key);
    size_t vl = val_of(i, a, v);
    int rc = bfh_search(c->db, v, vl, (bfh_method)m, on_key_want, &w, NULL);
    uint64_t s = atomic_load(&g_shm->started[i]);
    if (rc != BFH_OK) fail_with(c, "search %s method %d: %d %s", v, m, rc, bfh_last_error(c->db));
    if (w.h.other) fail_with(c, "search %s method %d: another key reported", v, m);
    if (s == a && w.h.self != 1)
      fail_with(c, "search %s method %d: acknowledged and not overwritten, reported %d times", v, m,
                w.h.self);
    if (w.h.self > 1) fail_with(c, "search %s method %d: reported %d times", v, m, w.h.self);
    atomic_fetch_add(&c->searches[m], 1);
    /* A get: a version between the acknowledged one before and the begun one after. */
    a = atomic_load(&g_shm->acked[i]);
    void *got = NULL;
    size_t gl = 0;
    rc = bfh_get(c->db, w.key, w.kl, &got, &gl);
    s = atomic_load(&g_shm->started[i]);
    if (rc != BFH_OK) {
      fail_with(c, "get %s: %d %s", w.key, rc, bfh_last_error(c->db));
    } else {
      char buf[64];
      snprintf(buf, sizeof buf, "%.*s", (int)(gl < 63 ? gl : 63), (const char *)got);
      const char *dash = strchr(buf, '-');
      unsigned long long ver = dash ? strtoull(dash + 1, NULL, 10) : 0;
      if (ver < a || ver > s)
        fail_with(c, "get %s: '%s', wanted a version in [%llu, %llu]", w.key, buf,
                  (unsigned long long)a, (unsigned long long)s);
    }
    bfh_free(got);
    atomic_fetch_add(&c->gets, 1);
  }
  return NULL;
}

static uint64_t now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec;
}

static void test_lsm_readonly_live_writer_process(void **state) {
  (void)state;
  pid_t pid = fork(); /* before any thread of this process */
  assert_true(pid >= 0);
  if (pid == 0) writer_main();
  const char *env = getenv("BFH_CONCURRENCY_SECONDS");
  uint64_t seconds = env ? strtoull(env, NULL, 10) : DEFAULT_SECONDS;
  uint64_t t0 = now_s();
  /* Bounded wait for the state "the stable keys are in a table". */
  while (!atomic_load(&g_shm->ready) && !atomic_load(&g_shm->writer_failed) &&
         now_s() - t0 < MAX_SECONDS)
    sched_yield();
  if (!atomic_load(&g_shm->ready)) fail_msg("writer never ready: %s", g_shm->writer_error);
  static ctx_t c;
  memset(&c, 0, sizeof c);
  pthread_mutex_init(&c.mu, NULL);
  bfh_options opt;
  options(&opt);
  opt.read_only = 1;
  int rc = bfh_open(g_db, &opt, &c.db);
  if (rc != BFH_OK) fail_msg("read-only open: %d %s", rc, bfh_last_error(NULL));
  pthread_t th[SEARCHERS];
  for (int i = 0; i < SEARCHERS; i++)
    assert_int_equal(pthread_create(&th[i], NULL, searcher, &c), 0);
  /* Until the time is up and everything happened (bounded), polling the shared state. */
  const char *missing = NULL;
  uint64_t t1 = now_s();
  for (;;) {
    if (atomic_load(&c.failed) || atomic_load(&g_shm->writer_failed)) break;
    missing = NULL;
    for (int m = 0; m < NMETHODS && !missing; m++)
      if (!atomic_load(&c.searches[m])) missing = "a search of every method";
    if (!missing && atomic_load(&g_shm->flushes) < 3) missing = "3 flushes by the writer";
    if (!missing && atomic_load(&g_shm->compactions) < 2) missing = "2 compactions by the writer";
    if (!missing && engine_lsm_ro_refreshes(bfh_internal_engine(c.db)) < 20)
      missing = "20 refreshes by the reader";
    if (!missing && now_s() - t1 >= seconds) break;
    if (now_s() - t1 >= MAX_SECONDS) break;
    struct timespec ts = {0, 20 * 1000 * 1000}; /* a poll period, not a guess at a state */
    nanosleep(&ts, NULL);
  }
  atomic_store(&c.stop, 1);
  for (int i = 0; i < SEARCHERS; i++) pthread_join(th[i], NULL);
  atomic_store(&g_shm->stop, 1);
  int status;
  assert_int_equal(waitpid(pid, &status, 0), pid);
  if (atomic_load(&g_shm->writer_failed)) fail_msg("writer: %s", g_shm->writer_error);
  assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  if (atomic_load(&c.failed)) fail_msg("%s", c.failure);
  if (missing) fail_msg("after %d s, never happened: %s", MAX_SECONDS, missing);
  uint64_t total = 0;
  for (int m = 0; m < NMETHODS; m++) total += atomic_load(&c.searches[m]);
  print_message(
      "%llu writes, %llu flushes, %llu compactions by the writer; %llu searches, %llu "
      "gets checked; %llu refreshes, %llu retries\n",
      (unsigned long long)atomic_load(&g_shm->writes),
      (unsigned long long)atomic_load(&g_shm->flushes),
      (unsigned long long)atomic_load(&g_shm->compactions), (unsigned long long)total,
      (unsigned long long)atomic_load(&c.gets),
      (unsigned long long)engine_lsm_ro_refreshes(bfh_internal_engine(c.db)),
      (unsigned long long)engine_lsm_ro_retries(bfh_internal_engine(c.db)));
  assert_int_equal(bfh_close(c.db), BFH_OK);
  pthread_mutex_destroy(&c.mu);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_lsm_readonly_live_writer_process, setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

/* The read-write RocksDB engine under concurrency (meant for ThreadSanitizer too: CI runs every
 * *concurrency* test under it): a writer thread puts and flushes through a bfh handle with a
 * small memtable, so that WALs switch and memtables flush all the time, while searcher threads
 * search the same handle with every method. Each search reads the WAL's new tail while the
 * writer appends to it (rdb_wal.c): RocksDB's WAL iterator then often ends with a transient
 * "Try again" that must never reach the searcher.
 *
 * The writer interleaves two kinds of keys:
 *   - immutable keys f<i>, written once each in order, each with its own value; after a put
 *     returns the writer publishes i + 1 in `fixed`. A searcher that loads n = fixed before
 *     its search may pick any i < n: the key was acknowledged before the search began and is
 *     never overwritten, so the search must report exactly f<i>. Half of these picks are among
 *     the newest keys, which are still in the WAL;
 *   - churned keys c<j>, overwritten with increasing versions; the value of (key, version) is
 *     unique. Before a put the writer publishes the version in started[j], after it returns
 *     in acked[j]. A searcher loads a = acked[j], searches for the value of (j, a) and then
 *     loads s = started[j]: if s == a no overwrite began before the search ended, so the key
 *     must be reported; if s != a it may be missing. No other key may be reported, and no key
 *     twice.
 * The writer makes at most PACE puts per search done (it waits on a condition variable the
 * searchers signal), so that the WAL tail a search meets, and the database, stay the same size
 * per search in a ThreadSanitizer build as in a release one.
 * Any search error is a failed search. The run counts searches, failed searches, misses and
 * wrong reports, prints them, and fails unless the last three are 0.
 *
 * Runs for BFH_CONCURRENCY_SECONDS seconds (default 5, as the other concurrency tests), and
 * on until every method has run, the writer has flushed and a WAL read has met a transient
 * error (at most MAX_SECONDS, then it fails saying what never happened).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bfh.h"
/* Not public (api/testbed.h): the RocksDB engine's count of the WAL iterators that ended
   in a transient error, to know that the run met what it tests. */
#include "api/testbed.h"
#include "tests/test_util.h"
#include "util/random.h"

#define SEARCHERS 2
#define NCHURN 2000
#define RECENT 64        /* "the newest keys": the last RECENT immutable keys acknowledged */
#define FLUSH_EVERY 5000 /* the writer's puts between its flushes */
#define PACE 32          /* the writer's puts per search done, at most (see pace) */
#define DEFAULT_SECONDS 5
#define MAX_SECONDS 600
#define NMETHODS 5

typedef struct shared {
  bfh_db *db;
  atomic_uint_fast64_t fixed; /* immutable keys f<0> .. f<fixed - 1> are acknowledged */
  atomic_uint_fast64_t started[NCHURN], acked[NCHURN];
  atomic_int stop;
  atomic_uint_fast64_t writes, flushes, searches[NMETHODS];
  atomic_uint_fast64_t failed, missed, wrong; /* searches that erred, missed a key, misreported */
  atomic_int writer_failed;
  pthread_mutex_t pace_mu; /* guards done; pace_cv is signalled when it grows or stop is set */
  pthread_cond_t pace_cv;
  uint64_t done;      /* searches done */
  pthread_mutex_t mu; /* guards the first message of each kind */
  char first_failed[768], first_missed[256], first_wrong[256], writer_error[512];
} shared_t;

static shared_t *g;

static void note(char *first, size_t cap, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void note(char *first, size_t cap, const char *fmt, ...) {
  pthread_mutex_lock(&g->mu);
  if (!first[0]) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(first, cap, fmt, ap);
    va_end(ap);
  }
  pthread_mutex_unlock(&g->mu);
}

static size_t fixed_key(uint64_t i, char *buf) {
  return (size_t)snprintf(buf, 24, "f%09llu", (unsigned long long)i);
}
static size_t fixed_value(uint64_t i, char *buf) {
  return (size_t)snprintf(buf, 64, "fixed-%09llu-%.*s", (unsigned long long)i, (int)(i % 23),
                          "abcdefghijklmnopqrstuvw");
}
static size_t churn_key(unsigned j, char *buf) {
  return (size_t)snprintf(buf, 24, "c%05u", j);
}
static size_t churn_value(unsigned j, uint64_t version, char *buf) {
  return (size_t)snprintf(buf, 64, "churn-%05u-%llu", j, (unsigned long long)version);
}

/* ---- The writer ---------------------------------------------------------------------------- */

/* Waits until the writer may make its put number n: at most PACE puts per search done, so that
   each search meets a WAL tail of about the same length however fast the build runs searches
   (ThreadSanitizer's is many times slower) and the database grows with the searches, not with
   the seconds. 0 once the run stops. */
static int pace(uint64_t n) {
  pthread_mutex_lock(&g->pace_mu);
  while (!atomic_load(&g->stop) && n > (g->done + 1) * PACE)
    pthread_cond_wait(&g->pace_cv, &g->pace_mu);
  pthread_mutex_unlock(&g->pace_mu);
  return !atomic_load(&g->stop);
}

static void search_done(void) {
  pthread_mutex_lock(&g->pace_mu);
  g->done++;
  pthread_cond_signal(&g->pace_cv);
  pthread_mutex_unlock(&g->pace_mu);
}

static void stop_all(void) {
  pthread_mutex_lock(&g->pace_mu);
  atomic_store(&g->stop, 1);
  pthread_cond_broadcast(&g->pace_cv);
  pthread_mutex_unlock(&g->pace_mu);
}

static void writer_fail(const char *what) {
  note(g->writer_error, sizeof g->writer_error, "%s: %s", what, bfh_last_error(g->db));
  atomic_store(&g->writer_failed, 1);
  stop_all();
}

static void *writer(void *arg) {
  (void)arg;
  rng_t r;
  rng_init(&r, 0x3c0ffee);
  for (uint64_t n = 1; pace(n); n++) {
    char k[24], v[64];
    if (n % 2) { /* the next immutable key */
      uint64_t i = atomic_load(&g->fixed);
      if (bfh_put(g->db, k, fixed_key(i, k), v, fixed_value(i, v)) != BFH_OK) {
        writer_fail("put");
        break;
      }
      atomic_store(&g->fixed, i + 1);
    } else { /* a churned key's next version */
      unsigned j = (unsigned)rng_below(&r, NCHURN);
      uint64_t ver = atomic_load(&g->acked[j]) + 1;
      atomic_store(&g->started[j], ver);
      if (bfh_put(g->db, k, churn_key(j, k), v, churn_value(j, ver, v)) != BFH_OK) {
        writer_fail("put");
        break;
      }
      atomic_store(&g->acked[j], ver);
    }
    atomic_fetch_add(&g->writes, 1);
    if (n % FLUSH_EVERY == 0) {
      if (bfh_flush(g->db) != BFH_OK) {
        writer_fail("flush");
        break;
      }
      atomic_fetch_add(&g->flushes, 1);
    }
  }
  return NULL;
}

/* ---- The searchers ------------------------------------------------------------------------- */

typedef struct hits {
  char key[24]; /* the one key the search must or may report */
  size_t kl;
  int self, other;
} hits_t;

static int on_match(void *arg, const void *key, size_t kl) {
  hits_t *h = arg;
  if (kl == h->kl && memcmp(key, h->key, kl) == 0)
    h->self++;
  else
    h->other++;
  return 0;
}

static void *searcher(void *arg) {
  rng_t r;
  rng_init(&r, 0x5ea4c4 + (uintptr_t)arg);
  for (uint64_t q = (uintptr_t)arg; !atomic_load(&g->stop); q++) {
    bfh_method m = (bfh_method)(q % NMETHODS);
    hits_t h = {.self = 0};
    char v[64];
    size_t vl;
    int must; /* the key must be reported (else it may be missing) */
    uint64_t a = 0;
    unsigned j = 0;
    if (q % 2) {
      uint64_t n = atomic_load(&g->fixed);
      if (n == 0) continue;
      uint64_t i =
          rng_below(&r, 2) ? rng_below(&r, n) : n - 1 - rng_below(&r, n < RECENT ? n : RECENT);
      h.kl = fixed_key(i, h.key);
      vl = fixed_value(i, v);
      must = 1;
    } else {
      j = (unsigned)rng_below(&r, NCHURN);
      a = atomic_load(&g->acked[j]);
      if (a == 0) continue; /* never written yet */
      h.kl = churn_key(j, h.key);
      vl = churn_value(j, a, v);
      must = 0;
    }
    int rc = bfh_search(g->db, v, vl, m, on_match, &h, NULL);
    if (!must) must = atomic_load(&g->started[j]) == a;
    atomic_fetch_add(&g->searches[m], 1);
    search_done();
    if (rc != BFH_OK) {
      atomic_fetch_add(&g->failed, 1);
      note(g->first_failed, sizeof g->first_failed, "search %s by %s: %d %s", v, bfh_method_name(m),
           rc, bfh_last_error(g->db));
      continue;
    }
    if (must && h.self == 0) {
      atomic_fetch_add(&g->missed, 1);
      note(g->first_missed, sizeof g->first_missed,
           "search %s by %s: %s missing (acknowledged before the search, not overwritten)", v,
           bfh_method_name(m), h.key);
    }
    if (h.other || h.self > 1) {
      atomic_fetch_add(&g->wrong, 1);
      note(g->first_wrong, sizeof g->first_wrong,
           "search %s by %s: %d other keys, %s reported %d times", v, bfh_method_name(m), h.other,
           h.key, h.self);
    }
  }
  return NULL;
}

/* ---- The run ------------------------------------------------------------------------------- */

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static uint64_t wal_transients(void) {
  return engine_rocksdb_wal_transients(bfh_internal_engine(g->db));
}

/* What the run still lacks ("" when nothing). */
static const char *missing_work(void) {
  for (int m = 0; m < NMETHODS; m++)
    if (atomic_load(&g->searches[m]) == 0) return "a search of every method";
  if (atomic_load(&g->flushes) == 0) return "a flush by the writer";
  if (wal_transients() == 0) return "a WAL read that met a transient error";
  return "";
}

typedef struct fixture {
  char dir[TEST_PATH_MAX];
} fixture_t;

static int setup(void **state) {
  fixture_t *f = calloc(1, sizeof *f);
  g = calloc(1, sizeof *g);
  if (!f || !g || test_tmpdir_create(f->dir, sizeof f->dir, "rocksdb_concurrency") != 0) {
    free(f);
    free(g);
    g = NULL;
    return -1;
  }
  pthread_mutex_init(&g->mu, NULL);
  pthread_mutex_init(&g->pace_mu, NULL);
  pthread_cond_init(&g->pace_cv, NULL);
  *state = f;
  return 0;
}

static int teardown(void **state) {
  fixture_t *f = *state;
  int rc = 0;
  if (g) {
    if (g->db && bfh_close(g->db) != BFH_OK) rc = -1;
    pthread_mutex_destroy(&g->mu);
    pthread_mutex_destroy(&g->pace_mu);
    pthread_cond_destroy(&g->pace_cv);
    free(g);
    g = NULL;
  }
  if (f) {
    if (test_rmrf(f->dir) != 0) rc = -1;
    free(f);
  }
  return rc;
}

static void test_rocksdb_concurrency_writer_and_searchers(void **state) {
  fixture_t *f = *state;
  bfh_options o;
  bfh_options_init(&o);
  o.engine = BFH_ENGINE_ROCKSDB;
  o.memtable_bytes = 64 << 10; /* a WAL switch and a flush every few hundred puts */
  o.value_filter_bits = 16384;
  o.order = 3;
  if (bfh_open(f->dir, &o, &g->db) != BFH_OK) fail_msg("open: %s", bfh_last_error(NULL));
  const char *env = getenv("BFH_CONCURRENCY_SECONDS");
  double seconds = env && atof(env) > 0 ? atof(env) : DEFAULT_SECONDS;
  pthread_t w, s[SEARCHERS];
  int started_w = pthread_create(&w, NULL, writer, NULL) == 0, ns = 0;
  for (; started_w && ns < SEARCHERS; ns++)
    if (pthread_create(&s[ns], NULL, searcher, (void *)(uintptr_t)(ns + 1)) != 0) break;
  /* The main thread only watches: it waits for the run's length and the work it needs. */
  double t0 = now_s();
  const char *lack = "";
  while (started_w && ns == SEARCHERS && !atomic_load(&g->stop)) {
    double t = now_s() - t0;
    lack = missing_work();
    if ((t >= seconds && !lack[0]) || t >= MAX_SECONDS) break;
    struct timespec ts = {0, 50 * 1000 * 1000}; /* a polling period, not a wait for a state */
    nanosleep(&ts, NULL);
  }
  stop_all();
  if (started_w) pthread_join(w, NULL);
  for (int i = 0; i < ns; i++) pthread_join(s[i], NULL);
  if (!started_w || ns < SEARCHERS) fail_msg("cannot start the threads");
  uint64_t total = 0;
  for (int m = 0; m < NMETHODS; m++) total += atomic_load(&g->searches[m]);
  uint64_t failed = atomic_load(&g->failed), missed = atomic_load(&g->missed),
           wrong = atomic_load(&g->wrong);
  print_message(
      "%.1f s: %llu writes (%llu immutable keys), %llu flushes; %llu searches, %llu "
      "failed, %llu missed a key, %llu reported a wrong key; %llu WAL iterators ended in a "
      "transient error\n",
      now_s() - t0, (unsigned long long)atomic_load(&g->writes),
      (unsigned long long)atomic_load(&g->fixed), (unsigned long long)atomic_load(&g->flushes),
      (unsigned long long)total, (unsigned long long)failed, (unsigned long long)missed,
      (unsigned long long)wrong, (unsigned long long)wal_transients());
  if (atomic_load(&g->writer_failed)) fail_msg("writer: %s", g->writer_error);
  if (failed)
    fail_msg("%llu of %llu searches failed; the first: %s", (unsigned long long)failed,
             (unsigned long long)total, g->first_failed);
  if (missed)
    fail_msg("%llu searches missed a key; the first: %s", (unsigned long long)missed,
             g->first_missed);
  if (wrong)
    fail_msg("%llu searches reported a wrong key; the first: %s", (unsigned long long)wrong,
             g->first_wrong);
  if (lack[0]) fail_msg("after %d s the run still lacks %s", MAX_SECONDS, lack);
  bfh_db *db = g->db;
  g->db = NULL;
  assert_int_equal(bfh_close(db), BFH_OK);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_rocksdb_concurrency_writer_and_searchers, setup,
                                      teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

/* The LevelDB engine under concurrency (meant for ThreadSanitizer too): writers, searchers
 * with every method, flushes and the engine's background indexer at once, over a LevelDB
 * database with small memtables, so that logs switch, tables come and go and the indexer and
 * the log readers race LevelDB's appends all the time.
 *
 * Each writer owns a range of keys and writes each with an increasing version; the value of
 * (key, version) is unique. Before a put the writer publishes the version in started[key],
 * after it returns in acked[key]. A searcher picks a key, loads a = acked[key], searches for
 * the value of (key, a) and then loads s = started[key]: if s == a no overwrite began before
 * the search ended, so the key must be reported (no false negative for an acknowledged
 * write), and no other key may be (the value is unique). Stable keys with shared values,
 * written before the threads start and never changed, must all be found by every search of
 * their value. Any search error fails the test: a log read racing an append is not damage.
 *
 * Runs for BFH_CONCURRENCY_SECONDS seconds (default 5; CI's ThreadSanitizer step runs 30), and
 * on until every method has run, a flush has happened, the background indexer has indexed
 * a table during the run and an AUTO search has probed a table's block filter (at most
 * MAX_SECONDS, then it fails saying what never happened).
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
/* Not public (api/testbed.h): the background indexer's counters (tables indexed during
   the run, log rereads). */
#include "api/testbed.h"
#include "tests/test_util.h"
#include "util/random.h"

#define WRITERS 2
#define SEARCHERS 2
#define KEYS_PER_WRITER 3000
#define NKEYS (WRITERS * KEYS_PER_WRITER)
#define NSTABLE 1000
#define SHARED 8
#define FLUSH_EVERY 4000 /* writes of one writer between its flushes */
#define DEFAULT_SECONDS 5
#define MAX_SECONDS 600
#define NMETHODS 5

typedef struct shared {
  bfh_db *db;
  atomic_uint_fast64_t started[NKEYS], acked[NKEYS];
  atomic_int stop, failed;
  atomic_uint_fast64_t writes, flushes, searches[NMETHODS];
  atomic_uint_fast64_t block_reads; /* AUTO searches that probed a table's block filter */
  pthread_mutex_t fail_mu;
  char failure[768];
} shared_t;

static shared_t *g;

/* ThreadSanitizer: LevelDB is not built with it. Its memtable is a lock-free skip list whose
   nodes are published with std::atomic release stores TSan cannot see, so the libc calls
   LevelDB makes through TSan's interceptors (the memcpy of a put into the memtable, the memcmp
   of a get reading it) look like races with each other. A report with a LevelDB frame in it is
   therefore suppressed; every race between bfh's own accesses is still reported.
   (called_from_lib would not do: it also hides LevelDB's mutexes from TSan, which then sees
   races everywhere in LevelDB's block cache.) */
const char *__tsan_default_suppressions(void);
const char *__tsan_default_suppressions(void) {
  return "race:libleveldb.so\n";
}

static void fail_once(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void fail_once(const char *fmt, ...) {
  pthread_mutex_lock(&g->fail_mu);
  if (!atomic_load(&g->failed)) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(g->failure, sizeof g->failure, fmt, ap);
    va_end(ap);
  }
  atomic_store(&g->failed, 1);
  atomic_store(&g->stop, 1);
  pthread_mutex_unlock(&g->fail_mu);
}

static size_t key_of(unsigned id, char *buf) {
  return (size_t)snprintf(buf, 24, "k%05u", id);
}

static size_t value_of(unsigned id, uint64_t version, char *buf) {
  return (size_t)snprintf(buf, 64, "w%05u-%llu-%.*s", id, (unsigned long long)version,
                          (int)(id % 17), "abcdefghijklmnopq");
}

static size_t stable_value(unsigned d, char *buf) {
  return (size_t)snprintf(buf, 32, "shared-%u", d);
}

static void *writer(void *arg) {
  unsigned w = (unsigned)(uintptr_t)arg;
  rng_t r;
  rng_init(&r, 0xc0ffee + w);
  uint64_t n = 0;
  while (!atomic_load(&g->stop)) {
    unsigned id = w * KEYS_PER_WRITER + (unsigned)rng_below(&r, KEYS_PER_WRITER);
    uint64_t v = atomic_load(&g->acked[id]) + 1;
    char k[24], val[64];
    atomic_store(&g->started[id], v);
    int rc = bfh_put(g->db, k, key_of(id, k), val, value_of(id, v, val));
    if (rc != BFH_OK) {
      fail_once("put: %s", bfh_last_error(g->db));
      break;
    }
    atomic_store(&g->acked[id], v);
    atomic_fetch_add(&g->writes, 1);
    if (++n % FLUSH_EVERY == 0) {
      rc = bfh_flush(g->db);
      if (rc != BFH_OK) {
        fail_once("flush: %s", bfh_last_error(g->db));
        break;
      }
      atomic_fetch_add(&g->flushes, 1);
    }
  }
  return NULL;
}

typedef struct hits {
  unsigned want; /* the key searched for (NKEYS: a stable value) */
  unsigned shared;
  int found, other, dup;
  uint8_t stable[NSTABLE];
} hits_t;

static int on_match(void *arg, const void *key, size_t len) {
  hits_t *h = arg;
  char buf[24];
  unsigned id;
  if (len >= sizeof buf) {
    h->other = 1;
    return 0;
  }
  memcpy(buf, key, len);
  buf[len] = '\0';
  if (sscanf(buf, "s%05u", &id) == 1 && len == 6 && id < NSTABLE) {
    if (h->want != NKEYS || id % SHARED != h->shared) h->other = 1;
    h->dup |= h->stable[id];
    h->stable[id] = 1;
  } else if (sscanf(buf, "k%05u", &id) == 1 && len == 6 && id == h->want) {
    h->dup |= h->found;
    h->found = 1;
  } else {
    h->other = 1;
  }
  return 0;
}

static void *searcher(void *arg) {
  rng_t r;
  rng_init(&r, 0x5ea4c4 + (uintptr_t)arg);
  hits_t *h = malloc(sizeof *h);
  if (!h) {
    fail_once("no memory");
    return NULL;
  }
  for (unsigned q = (unsigned)(uintptr_t)arg; !atomic_load(&g->stop); q++) {
    memset(h, 0, sizeof *h);
    bfh_method m = (bfh_method)(q % NMETHODS);
    char val[64];
    size_t vl;
    uint64_t a = 0;
    if (rng_below(&r, 4) == 0) {
      h->want = NKEYS;
      h->shared = (unsigned)rng_below(&r, SHARED);
      vl = stable_value(h->shared, val);
    } else {
      h->want = (unsigned)rng_below(&r, NKEYS);
      a = atomic_load(&g->acked[h->want]);
      if (a == 0) continue; /* never written yet */
      vl = value_of(h->want, a, val);
    }
    bfh_search_stats st;
    int rc = bfh_search(g->db, val, vl, m, on_match, h, &st);
    if (rc != BFH_OK) {
      fail_once("search method %d for %.*s: %s", m, (int)vl, val, bfh_last_error(g->db));
      break;
    }
    if (h->dup || h->other) {
      fail_once("search method %d for %.*s: a key twice or a key with another value", m, (int)vl,
                val);
      break;
    }
    if (h->want == NKEYS) {
      for (unsigned i = h->shared; i < NSTABLE; i += SHARED)
        if (!h->stable[i]) {
          fail_once("search method %d for %.*s: stable key s%05u missing", m, (int)vl, val, i);
          break;
        }
    } else if (!h->found && atomic_load(&g->started[h->want]) == a) {
      fail_once("search method %d for %.*s: key k%05u missing (acknowledged, not overwritten)", m,
                (int)vl, val, h->want);
    }
    if (atomic_load(&g->failed)) break;
    atomic_fetch_add(&g->searches[m], 1);
    if (st.block_filters_probed) atomic_fetch_add(&g->block_reads, 1);
  }
  free(h);
  return NULL;
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static engine_leveldb_stats_t leveldb_stats_now(void) {
  engine_leveldb_stats_t st;
  engine_leveldb_get_stats(bfh_internal_engine(g->db), &st);
  return st;
}

static uint64_t tables_indexed(void) {
  return leveldb_stats_now().index.tables_read;
}

/* What the run still lacks ("" when nothing). */
static const char *missing_work(uint64_t indexed0) {
  for (int m = 0; m < NMETHODS; m++)
    if (atomic_load(&g->searches[m]) == 0) return "a search of every method";
  if (atomic_load(&g->flushes) == 0) return "a flush";
  if (tables_indexed() == indexed0) return "a table indexed during the run";
  if (atomic_load(&g->block_reads) == 0) return "an AUTO search through block filters";
  return "";
}

typedef struct fixture {
  char dir[4096];
} fixture_t;

static int setup(void **state) {
  fixture_t *f = calloc(1, sizeof *f);
  g = calloc(1, sizeof *g);
  if (!f || !g || test_tmpdir_create(f->dir, sizeof f->dir, "leveldb_concurrency") != 0) {
    free(f);
    free(g);
    g = NULL;
    return -1;
  }
  pthread_mutex_init(&g->fail_mu, NULL);
  *state = f;
  return 0;
}

static int teardown(void **state) {
  fixture_t *f = *state;
  int rc = 0;
  if (g) {
    if (g->db && bfh_close(g->db) != BFH_OK) rc = -1;
    pthread_mutex_destroy(&g->fail_mu);
    free(g);
    g = NULL;
  }
  if (f) {
    if (test_rmrf(f->dir) != 0) rc = -1;
    free(f);
  }
  return rc;
}

static void run(fixture_t *f, int leaves) {
  bfh_options o;
  bfh_options_init(&o);
  o.engine = BFH_ENGINE_LEVELDB;
  o.memtable_bytes = 64 << 10; /* LevelDB's minimum: a log switch every few hundred puts */
  o.value_filter_bits = 16384;
  o.order = 3;
  o.leaves_on_disk = leaves;
  if (bfh_open(f->dir, &o, &g->db) != BFH_OK) fail_msg("open: %s", bfh_last_error(NULL));
  for (unsigned i = 0; i < NSTABLE; i++) {
    char k[24], v[32];
    size_t kl = (size_t)snprintf(k, sizeof k, "s%05u", i);
    assert_int_equal(bfh_put(g->db, k, kl, v, stable_value(i % SHARED, v)), BFH_OK);
  }
  const char *env = getenv("BFH_CONCURRENCY_SECONDS");
  double seconds = env && atof(env) > 0 ? atof(env) : DEFAULT_SECONDS;
  uint64_t indexed0 = tables_indexed();
  pthread_t w[WRITERS], s[SEARCHERS];
  int nw = 0, ns = 0;
  for (; nw < WRITERS; nw++)
    if (pthread_create(&w[nw], NULL, writer, (void *)(uintptr_t)nw) != 0) break;
  for (; ns < SEARCHERS; ns++)
    if (pthread_create(&s[ns], NULL, searcher, (void *)(uintptr_t)(ns + 1)) != 0) break;
  if (nw < WRITERS || ns < SEARCHERS) fail_once("cannot start the threads");
  /* The main thread only watches: it waits for the run's length and the work it needs. */
  double t0 = now_s();
  const char *lack = "";
  while (!atomic_load(&g->stop)) {
    double t = now_s() - t0;
    lack = missing_work(indexed0);
    if (t >= seconds && !lack[0]) break;
    if (t >= MAX_SECONDS) {
      fail_once("after %d s the run still lacks %s", MAX_SECONDS, lack);
      break;
    }
    struct timespec ts = {0, 50 * 1000 * 1000}; /* a polling period, not a wait for a state */
    nanosleep(&ts, NULL);
  }
  atomic_store(&g->stop, 1);
  for (int i = 0; i < nw; i++) pthread_join(w[i], NULL);
  for (int i = 0; i < ns; i++) pthread_join(s[i], NULL);
  uint64_t total = 0;
  for (int m = 0; m < NMETHODS; m++) total += atomic_load(&g->searches[m]);
  print_message(
      "leaves %s: %.1f s, %llu writes, %llu flushes, %llu searches, %llu tables indexed, %llu "
      "log reads repeated with the writers held off\n",
      leaves ? "on disk" : "in memory", now_s() - t0, (unsigned long long)atomic_load(&g->writes),
      (unsigned long long)atomic_load(&g->flushes), (unsigned long long)total,
      (unsigned long long)(tables_indexed() - indexed0),
      (unsigned long long)leveldb_stats_now().log_rereads);
  if (atomic_load(&g->failed)) fail_msg("%s", g->failure);
  bfh_db *db = g->db;
  g->db = NULL;
  assert_int_equal(bfh_close(db), BFH_OK);
}

static void test_leveldb_concurrency_leaves_in_memory(void **state) {
  run(*state, BFH_LEAVES_IN_MEMORY);
}

static void test_leveldb_concurrency_leaves_on_disk(void **state) {
  run(*state, BFH_LEAVES_ON_DISK);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_leveldb_concurrency_leaves_in_memory, setup, teardown),
      cmocka_unit_test_setup_teardown(test_leveldb_concurrency_leaves_on_disk, setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

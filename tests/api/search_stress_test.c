/* Searches with every method while other threads put, delete and flush and compactions run
 * (tiny memtables and tables, so the live table set changes all the time).
 *
 * A set of stable keys ("stable%05d" -> one of VALUES shared values) is written before the
 * threads start and never changed during the run. The writers churn other keys with the same
 * values. Every search must report every stable key that has the searched value (no false
 * negative while tables come and go), no stable key with another value (no false positive),
 * and no key twice.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <stdatomic.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "bfh.h"
#include "tests/test_util.h"
#include "util/random.h"

#define NSTABLE 2000
#define VALUES 16
#define CHURN_KEYS 20000
#define WRITERS 2
#define SEARCHES 400 /* per searcher thread (each runs all five methods in turn) */
#define SEARCHERS 2
#define MIN_SEARCHES 25  /* per searcher thread, however slow the machine */
#define MIN_WRITES 10000 /* while the searches run: the writers did churn the tables */
#define SOFT_SECONDS 40  /* past this a searcher stops at MIN_SEARCHES (slow sanitizer builds) */
#define MAX_SECONDS 300  /* past this it stops whatever it has done, and the test fails */

static bfh_db *g_db;
static atomic_int g_stop;
static atomic_ullong g_errors, g_searches, g_writes;
static atomic_ullong g_block_reads; /* AUTO searches that probed a table's block filter */

static void value_of(unsigned d, char *buf, size_t *len) {
  *len = (size_t)sprintf(buf, "value-%02u", d);
}

static void *writer(void *arg) {
  rng_t r;
  rng_init(&r, (uint64_t)(uintptr_t)arg);
  uint64_t n = 0;
  while (!atomic_load(&g_stop)) {
    char k[32], v[32];
    size_t kl = (size_t)sprintf(k, "churn%06u", (unsigned)rng_below(&r, CHURN_KEYS)), vl;
    value_of((unsigned)rng_below(&r, VALUES), v, &vl);
    int rc = rng_below(&r, 5) == 0 ? bfh_delete(g_db, k, kl) : bfh_put(g_db, k, kl, v, vl);
    if (rc != BFH_OK) atomic_fetch_add(&g_errors, 1);
    if (++n % 20000 == 0 && bfh_flush(g_db) != BFH_OK) atomic_fetch_add(&g_errors, 1);
    atomic_fetch_add(&g_writes, 1);
  }
  return NULL;
}

typedef struct seen {
  uint8_t stable[NSTABLE];
  unsigned d;
  int bad;
} seen_t;

static int on_match(void *arg, const void *key, size_t len) {
  seen_t *s = arg;
  char buf[32];
  unsigned i;
  if (len >= sizeof buf) return 0;
  memcpy(buf, key, len);
  buf[len] = 0;
  if (sscanf(buf, "stable%05u", &i) == 1 && len == 11) {
    if (i >= NSTABLE || i % VALUES != s->d || s->stable[i]) s->bad = 1; /* wrong value or dup */
    if (i < NSTABLE) s->stable[i] = 1;
  }
  return 0;
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* A searcher goes on until it has done SEARCHES searches (MIN_SEARCHES past SOFT_SECONDS)
   and the writers MIN_WRITES writes, or until MAX_SECONDS. */
static int searcher_done(int q, double elapsed) {
  if (elapsed >= MAX_SECONDS) return 1;
  if (atomic_load(&g_writes) < MIN_WRITES) return 0;
  return q >= SEARCHES || (q >= MIN_SEARCHES && elapsed >= SOFT_SECONDS);
}

static void *searcher(void *arg) {
  rng_t r;
  rng_init(&r, (uint64_t)(uintptr_t)arg);
  seen_t *s = malloc(sizeof *s);
  double t0 = now_s();
  for (int q = 0; !searcher_done(q, now_s() - t0); q++) {
    memset(s, 0, sizeof *s);
    s->d = (unsigned)rng_below(&r, VALUES);
    char v[32];
    size_t vl;
    value_of(s->d, v, &vl);
    bfh_method m = (bfh_method)(q % 5);
    bfh_search_stats st;
    int rc = bfh_search(g_db, v, vl, m, on_match, s, &st);
    int missing = 0;
    for (unsigned i = s->d; i < NSTABLE; i += VALUES) missing += !s->stable[i];
    if (rc != BFH_OK || s->bad || missing) {
      atomic_fetch_add(&g_errors, 1);
      if (atomic_load(&g_errors) < 5)
        fprintf(stderr, "search method %d value %u: rc %d bad %d missing %d (%s)\n", m, s->d, rc,
                s->bad, missing, bfh_last_error(g_db));
    }
    atomic_fetch_add(&g_searches, 1);
    if (st.block_filters_probed) atomic_fetch_add(&g_block_reads, 1);
  }
  free(s);
  return NULL;
}

/* What a test has open: the directory, the database (g_db) and the threads on it. The
   teardown stops and joins the threads a failed test left running, then closes the
   database. */
typedef struct fixture {
  char dir[TEST_PATH_MAX];
  pthread_t w[WRITERS], s[SEARCHERS];
  int nw, ns; /* threads started and not joined yet */
} fixture_t;

static int setup(void **state) {
  fixture_t *f = calloc(1, sizeof *f);
  if (!f) return -1;
  if (test_tmpdir_create(f->dir, sizeof f->dir, "search_stress_test") != 0) {
    free(f);
    return -1;
  }
  *state = f;
  return 0;
}

/* Joins the searchers (they end on their own, by MAX_SECONDS at the latest), then stops
   and joins the writers. */
static void join_threads(fixture_t *f) {
  for (; f->ns > 0; f->ns--) pthread_join(f->s[f->ns - 1], NULL);
  atomic_store(&g_stop, 1);
  for (; f->nw > 0; f->nw--) pthread_join(f->w[f->nw - 1], NULL);
}

static int teardown(void **state) {
  fixture_t *f = *state;
  join_threads(f);
  int rc = g_db && bfh_close(g_db) != BFH_OK ? -1 : 0;
  g_db = NULL;
  if (test_rmrf(f->dir) != 0) rc = -1;
  free(f);
  return rc;
}

static void run(fixture_t *f, int leaves_on_disk) {
  bfh_options o;
  bfh_options_init(&o);
  o.memtable_bytes = 256 << 10;
  o.table_bytes = 32 << 10;
  o.value_filter_bits = 16384;
  o.order = 3;
  o.leaves_on_disk = leaves_on_disk;
  int rc = bfh_open(f->dir, &o, &g_db);
  if (rc != BFH_OK) fail_msg("open: %s", bfh_last_error(NULL));
  for (unsigned i = 0; i < NSTABLE; i++) {
    char k[32], v[32];
    size_t kl = (size_t)sprintf(k, "stable%05u", i), vl;
    value_of(i % VALUES, v, &vl);
    assert_int_equal(bfh_put(g_db, k, kl, v, vl), BFH_OK);
  }
  assert_int_equal(bfh_flush(g_db), BFH_OK); /* the stable keys are in tables: AUTO probes
                                                their block filters */
  atomic_store(&g_stop, 0);
  atomic_store(&g_block_reads, 0);
  atomic_store(&g_errors, 0);
  atomic_store(&g_searches, 0);
  atomic_store(&g_writes, 0);
  for (uintptr_t i = 0; i < WRITERS; i++) {
    assert_int_equal(pthread_create(&f->w[i], NULL, writer, (void *)(i + 1)), 0);
    f->nw++;
  }
  for (uintptr_t i = 0; i < SEARCHERS; i++) {
    assert_int_equal(pthread_create(&f->s[i], NULL, searcher, (void *)(i + 100)), 0);
    f->ns++;
  }
  join_threads(f);
  unsigned long long searches = atomic_load(&g_searches), writes = atomic_load(&g_writes);
  print_message("searches %llu writes %llu errors %llu\n", searches, writes,
                (unsigned long long)atomic_load(&g_errors));
  assert_int_equal(atomic_load(&g_errors), 0);
  assert_true(atomic_load(&g_block_reads) > 0);
  if (searches < SEARCHERS * MIN_SEARCHES || writes < MIN_WRITES)
    fail_msg("in %d s: %llu searches (want %d), %llu writes (want %d)", MAX_SECONDS, searches,
             SEARCHERS * MIN_SEARCHES, writes, MIN_WRITES);
  bfh_db *db = g_db;
  g_db = NULL;
  assert_int_equal(bfh_close(db), BFH_OK);
}

static void test_search_stress_leaves_in_memory(void **state) {
  run(*state, 0);
}

static void test_search_stress_leaves_on_disk(void **state) {
  run(*state, 1);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_search_stress_leaves_in_memory, setup, teardown),
      cmocka_unit_test_setup_teardown(test_search_stress_leaves_on_disk, setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

/* The stand-alone index (bfh_options.standalone_index, BFH_SEARCH_STANDALONE) through
 * include/bfh.h, with the real own engine and real files:
 *   - the contract: empty and long (hashed) values, overwrites, deletes, reopen; the LevelDB
 *     engine refuses it; a database with one refuses an open without it; a database without
 *     one gets it built at the open; an interrupted build is removed and done again; AUTO and
 *     the stats;
 *   - concurrency: writers overwrite and delete a few shared keys from several threads (the
 *     per-key order of the write protocol) while searchers check keys that never change;
 *   - crashes: a child process is killed (SIGKILL) at each step of the write protocol, or at a
 *     moment the parent picks; after the reopen, every acknowledged write is found, and every
 *     search by STANDALONE equals the scan. A write that reached the database but not the index
 *     (as a machine crash with sync = 0 can leave) is indexed again by the open's replay.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "bfh.h"
/* testbed.h: the step hook of the write protocol, and the database's own lsm_db_t (to write
   past the index as a machine crash can leave it). */
#include "api/testbed.h"
#include "tests/test_util.h"
#include "tests/api/db_fixture.h"
#include "util/random.h"

static int setup(void **state) {
  return db_fixture_setup(state, "standalone_test");
}

static void small_options(bfh_options *o, int standalone) {
  bfh_options_init(o);
  o->memtable_bytes = 128 << 10;
  o->table_bytes = 16 << 10;
  o->value_filter_bits = 4096;
  o->standalone_index = standalone;
}

static bfh_db *open_or_fail(const char *dir, const bfh_options *o) {
  bfh_db *db = NULL;
  int rc = bfh_open(dir, o, &db);
  if (rc != BFH_OK) fail_msg("bfh_open %s: %d %s", dir, rc, bfh_last_error(NULL));
  return db;
}

/* ---- Key sets of a search -------------------------------------------------------------- */

#define MAX_FOUND 4096

typedef struct keys {
  size_t n;
  char k[MAX_FOUND][24];
} keys_t;

static int add_key(void *arg, const void *key, size_t len) {
  keys_t *ks = arg;
  if (ks->n < MAX_FOUND && len < sizeof ks->k[0]) {
    memcpy(ks->k[ks->n], key, len);
    ks->k[ks->n][len] = 0;
  }
  ks->n++;
  return 0;
}

static int cmp_key(const void *a, const void *b) {
  return strcmp(a, b);
}

/* The keys holding val by method, sorted. */
static keys_t *search_keys(bfh_db *db, const void *val, size_t len, bfh_method m,
                           bfh_search_stats *st) {
  keys_t *ks = calloc(1, sizeof *ks);
  assert_non_null(ks);
  bfh_search_stats local;
  int rc = bfh_search(db, val, len, m, add_key, ks, st ? st : &local);
  if (rc != BFH_OK) fail_msg("bfh_search method %d: %d %s", m, rc, bfh_last_error(db));
  assert_true(ks->n <= MAX_FOUND);
  qsort(ks->k, ks->n, sizeof ks->k[0], cmp_key);
  return ks;
}

/* STANDALONE and SCAN report the same keys for val; returns how many. */
static size_t expect_same_as_scan(bfh_db *db, const void *val, size_t len) {
  keys_t *a = search_keys(db, val, len, BFH_SEARCH_STANDALONE, NULL);
  keys_t *b = search_keys(db, val, len, BFH_SEARCH_SCAN, NULL);
  if (a->n != b->n || memcmp(a->k, b->k, a->n * sizeof a->k[0]) != 0)
    fail_msg("value '%.*s': STANDALONE found %zu keys, SCAN %zu", (int)len, (const char *)val, a->n,
             b->n);
  size_t n = a->n;
  free(a);
  free(b);
  return n;
}

static void put_str(bfh_db *db, const char *k, const char *v) {
  int rc = bfh_put(db, k, strlen(k), v, strlen(v));
  if (rc != BFH_OK) fail_msg("bfh_put %s: %d %s", k, rc, bfh_last_error(db));
}

/* ---- The contract ------------------------------------------------------------------------ */

static void test_standalone_basics(void **state) {
  db_fixture_t *f = *state;
  bfh_options o;
  small_options(&o, 1);
  bfh_db *db = open_or_fail(f->dir, &o);
  char path[4400];
  snprintf(path, sizeof path, "%s/bfh-standalone", f->dir);
  struct stat sb;
  assert_int_equal(stat(path, &sb), 0);

  put_str(db, "a", "red");
  put_str(db, "b", "red");
  put_str(db, "c", "blue");
  assert_int_equal(bfh_put(db, "e", 1, NULL, 0), BFH_OK); /* an empty value is a value */
  /* A value longer than the inline limit is indexed by its hash. */
  size_t big_len = (1u << 19) + 100;
  char *big = malloc(big_len);
  assert_non_null(big);
  memset(big, 'x', big_len);
  assert_int_equal(bfh_put(db, "big", 3, big, big_len), BFH_OK);
  big[big_len - 1] = 'y'; /* same length and hash prefix length, another value */

  keys_t *ks = search_keys(db, "red", 3, BFH_SEARCH_STANDALONE, NULL);
  assert_int_equal(ks->n, 2);
  assert_string_equal(ks->k[0], "a");
  assert_string_equal(ks->k[1], "b");
  free(ks);
  assert_int_equal(expect_same_as_scan(db, "", 0), 1);
  assert_int_equal(expect_same_as_scan(db, big, big_len), 0);
  big[big_len - 1] = 'x';
  assert_int_equal(expect_same_as_scan(db, big, big_len), 1);

  /* Overwrite and delete remove the old entries: no stale candidate is left. */
  put_str(db, "a", "blue");
  assert_int_equal(bfh_delete(db, "b", 1), BFH_OK);
  assert_int_equal(bfh_delete(db, "nokey", 5), BFH_OK);
  bfh_search_stats st;
  ks = search_keys(db, "red", 3, BFH_SEARCH_STANDALONE, &st);
  assert_int_equal(ks->n, 0);
  assert_int_equal(st.candidates, 0);
  assert_int_equal(st.method_used, BFH_SEARCH_STANDALONE);
  free(ks);
  ks = search_keys(db, "blue", 4, BFH_SEARCH_STANDALONE, &st);
  assert_int_equal(ks->n, 2);
  assert_int_equal(st.candidates, 2);
  assert_int_equal(st.entries_scanned, 2);
  free(ks);
  put_str(db, "c", "blue"); /* the same value again: its entry stays */
  assert_int_equal(expect_same_as_scan(db, "blue", 4), 2);

  bfh_db_stats ds;
  assert_int_equal(bfh_stats(db, &ds), BFH_OK);
  assert_int_equal(ds.standalone_index, 1);
  assert_int_equal(ds.old_value_reads, 9); /* 7 puts, 2 deletes */
  assert_int_equal(ds.standalone_entries, 7);
  assert_true(ds.standalone_bytes_written > 0);
  assert_true(ds.bytes_written > 0);

  /* Reopen: the same answers, and no replay was needed after a clean close. */
  assert_int_equal(bfh_close(db), BFH_OK);
  db = open_or_fail(f->dir, &o);
  assert_int_equal(expect_same_as_scan(db, "blue", 4), 2);
  assert_int_equal(expect_same_as_scan(db, big, big_len), 1);
  standalone_stats_t ss;
  standalone_get_stats(bfh_internal_standalone(db), &ss);
  assert_int_equal(ss.replayed_indexed, 0);
  assert_int_equal(ss.built_entries, 0);
  assert_int_equal(bfh_close(db), BFH_OK);

  /* A database with a stand-alone index refuses an open without it. */
  o.standalone_index = 0;
  assert_int_equal(bfh_open(f->dir, &o, &db), BFH_E_INVALID);
  assert_non_null(strstr(bfh_last_error(NULL), "stand-alone index"));
  /* A read-only handle keeps none. */
  bfh_options lo;
  bfh_options_init(&lo);
  lo.engine = BFH_ENGINE_LEVELDB;
  lo.standalone_index = 1;
  lo.read_only = 1;
  char ldir[4400];
  snprintf(ldir, sizeof ldir, "%s/ldb", f->dir);
  assert_int_equal(bfh_open(ldir, &lo, &db), BFH_E_UNSUPPORTED);
  assert_non_null(strstr(bfh_last_error(NULL), "a read-only handle writes no index"));
  lo.read_only = 0;
  lo.engine = BFH_ENGINE_LSM;
  lo.standalone_index = 2;
  assert_int_equal(bfh_open(ldir, &lo, &db), BFH_E_INVALID);
  free(big);
}

/* A database written without the index gets it built at the first open that asks for it;
   a build cut short (its tmp directory left behind) is removed and done again. */
static void test_standalone_build(void **state) {
  db_fixture_t *f = *state;
  bfh_options o;
  small_options(&o, 0);
  bfh_db *db = open_or_fail(f->dir, &o);
  char k[32], v[32];
  for (int i = 0; i < 5000; i++) {
    snprintf(k, sizeof k, "k%05d", i);
    snprintf(v, sizeof v, "v%02d", i % 50);
    put_str(db, k, v);
  }
  size_t live = 5000, live07 = 100; /* live keys, and those with the value "v07" */
  for (int i = 0; i < 5000; i += 7) {
    snprintf(k, sizeof k, "k%05d", i);
    assert_int_equal(bfh_delete(db, k, strlen(k)), BFH_OK);
    live--;
    live07 -= i % 50 == 7;
  }
  assert_int_equal(bfh_close(db), BFH_OK);
  char tmp[4400], junk[4500];
  snprintf(tmp, sizeof tmp, "%s/bfh-standalone.tmp", f->dir);
  assert_int_equal(mkdir(tmp, 0755), 0);
  snprintf(junk, sizeof junk, "%s/000007.log", tmp);
  FILE *fp = fopen(junk, "w");
  assert_non_null(fp);
  fputs("half a build", fp);
  fclose(fp);

  o.standalone_index = 1;
  db = open_or_fail(f->dir, &o);
  standalone_stats_t ss;
  standalone_get_stats(bfh_internal_standalone(db), &ss);
  assert_int_equal(ss.built_entries, live);
  struct stat sb;
  assert_int_not_equal(stat(tmp, &sb), 0);
  size_t total = 0;
  for (int d = 0; d < 50; d++) {
    snprintf(v, sizeof v, "v%02d", d);
    total += expect_same_as_scan(db, v, strlen(v));
  }
  assert_int_equal(total, live);
  /* AUTO picks the stand-alone index when the embedded plan costs more than its seek (when
     it costs less, the index may still win on its candidates, whose cost its searches above
     measured: standalone_candidate_ns). Both costs follow the stores' state (the stand-alone
     index's sorted runs, which its compactions after the build merge; the leaves loaded; the
     tables): wait until no background work is left to change it, then read them, so that the search
     decides on the same figures. */
  err_t e;
  assert_int_equal(standalone_wait_idle(bfh_internal_standalone(db), &e), BFH_OK);
  assert_int_equal(engine_lsm_wait_idle(bfh_internal_engine(db), &e), BFH_OK);
  assert_int_equal(index_sync_loader_wait(bfh_internal_sync(db), NULL, NULL), BFH_OK);
  double embedded = search_plan(bfh_internal_index(db), BFH_SEARCH_AUTO).cost_ns;
  double seek = standalone_cost_ns(bfh_internal_standalone(db));
  bfh_search_stats st;
  keys_t *ks = search_keys(db, "v07", 3, BFH_SEARCH_AUTO, &st);
  assert_int_equal(ks->n, live07);
  free(ks);
  print_message("AUTO: embedded plan %.0f ns, stand-alone seek %.0f ns: ran method %u\n", embedded,
                seek, st.method_used);
  if (seek < embedded) assert_int_equal(st.method_used, BFH_SEARCH_STANDALONE);
  /* Built at this open, with no write since, the index answers on its word: no gets. */
  ks = search_keys(db, "v07", 3, BFH_SEARCH_STANDALONE, &st);
  assert_int_equal(ks->n, live07);
  assert_int_equal(st.trusted, live07);
  free(ks);
  assert_int_equal(bfh_close(db), BFH_OK);
  /* Without value filters AUTO's only other way is a scan: it takes the index. */
  o.value_filters = 0;
  db = open_or_fail(f->dir, &o);
  ks = search_keys(db, "v07", 3, BFH_SEARCH_AUTO, &st);
  assert_int_equal(ks->n, live07);
  assert_int_equal(st.method_used, BFH_SEARCH_STANDALONE);
  free(ks);
  assert_int_equal(bfh_close(db), BFH_OK);
}

/* ---- Concurrency ------------------------------------------------------------------------ */

#define SHARED_KEYS 8   /* few keys, so that writes of one key often meet */
#define SHARED_VALUES 3 /* and often write a value the key held just before */
#define ROUNDS 40       /* the index is checked whole after each round */
#define STABLE_KEYS 300
#define DOMAIN 8
#define WRITERS 4
#define WRITES_PER_WRITER 500 /* per round */

static bfh_db *g_db;
static atomic_int g_writers_left;
static atomic_ullong g_errors, g_searches;

static void value_of(unsigned d, char *buf, size_t *len) {
  *len = (size_t)sprintf(buf, "val-%u", d);
}

static void *writer(void *arg) {
  rng_t r;
  rng_init(&r, (uint64_t)(uintptr_t)arg);
  for (int i = 0; i < WRITES_PER_WRITER; i++) {
    char k[24], v[24];
    size_t kl = (size_t)sprintf(k, "shared%02u", (unsigned)rng_below(&r, SHARED_KEYS)), vl;
    value_of((unsigned)rng_below(&r, SHARED_VALUES), v, &vl);
    int rc = rng_below(&r, 6) == 0 ? bfh_delete(g_db, k, kl) : bfh_put(g_db, k, kl, v, vl);
    if (rc != BFH_OK) atomic_fetch_add(&g_errors, 1);
  }
  atomic_fetch_sub(&g_writers_left, 1);
  return NULL;
}

/* While the writers run: every stable key with the value searched is found. */
static void *searcher(void *arg) {
  (void)arg;
  unsigned d = 0;
  while (atomic_load(&g_writers_left) > 0) {
    char v[24];
    size_t vl;
    value_of(d, v, &vl);
    keys_t *ks = calloc(1, sizeof *ks);
    if (!ks || bfh_search(g_db, v, vl, BFH_SEARCH_STANDALONE, add_key, ks, NULL) != BFH_OK) {
      atomic_fetch_add(&g_errors, 1);
      free(ks);
      break;
    }
    size_t stable = 0;
    for (size_t i = 0; i < ks->n && i < MAX_FOUND; i++)
      stable += strncmp(ks->k[i], "stable", 6) == 0;
    size_t want =
        STABLE_KEYS / DOMAIN + (d < STABLE_KEYS % DOMAIN); /* keys i with i % DOMAIN == d */
    if (stable != want) atomic_fetch_add(&g_errors, 1);
    free(ks);
    atomic_fetch_add(&g_searches, 1);
    d = (d + 1) % DOMAIN;
  }
  return NULL;
}

/* Widens the window between the database write and the old entry's removal, where another
   write of the same key would do harm if the two were not serialized. */
static void pause_after_store(void *arg, int step) {
  atomic_uint *calls = arg;
  if (step == STANDALONE_STEP_STORED && atomic_fetch_add(calls, 1) % 4 == 0) usleep(20);
}

static void test_standalone_concurrent_writes(void **state) {
  db_fixture_t *f = *state;
  bfh_options o;
  small_options(&o, 1);
  g_db = open_or_fail(f->dir, &o);
  static atomic_uint calls;
  standalone_set_step_hook(bfh_internal_standalone(g_db), pause_after_store, &calls);
  for (unsigned i = 0; i < STABLE_KEYS; i++) {
    char k[24], v[24];
    size_t vl;
    sprintf(k, "stable%03u", i);
    value_of(i % DOMAIN, v, &vl);
    put_str(g_db, k, v);
  }
  size_t shared_live = 0;
  for (int round = 0; round < ROUNDS; round++) {
    atomic_store(&g_writers_left, WRITERS);
    pthread_t w[WRITERS], s;
    for (uintptr_t i = 0; i < WRITERS; i++)
      assert_int_equal(pthread_create(&w[i], NULL, writer, (void *)(round * WRITERS + i + 1)), 0);
    assert_int_equal(pthread_create(&s, NULL, searcher, NULL), 0);
    for (int i = 0; i < WRITERS; i++) pthread_join(w[i], NULL);
    pthread_join(s, NULL);
    assert_int_equal(atomic_load(&g_errors), 0);
    /* Two writes of one key never interleave: the index holds every shared key's last
       value, whatever order the threads ran in. */
    size_t total = 0;
    for (unsigned d = 0; d < DOMAIN; d++) {
      char v[24];
      size_t vl;
      value_of(d, v, &vl);
      total += expect_same_as_scan(g_db, v, vl);
    }
    shared_live += total - STABLE_KEYS;
  }
  print_message("%llu searches during %d writes\n", (unsigned long long)atomic_load(&g_searches),
                ROUNDS * WRITERS * WRITES_PER_WRITER);
  assert_true(atomic_load(&g_searches) > 0);
  assert_true(shared_live > 0); /* shared keys were live at the checks */
  assert_int_equal(bfh_close(g_db), BFH_OK);
}

/* ---- Crashes ------------------------------------------------------------------------------- */

#define CRASH_KEYS 200
#define CRASH_DOMAIN 10

/* One acknowledged operation, as the child reports it: key index, value (-1: deleted). */
typedef struct ack {
  int32_t key, val;
} ack_t;

static int g_kill_step, g_kill_after;
static atomic_int g_step_calls;

static void kill_at_step(void *arg, int step) {
  (void)arg;
  if (step == g_kill_step && atomic_fetch_add(&g_step_calls, 1) + 1 == g_kill_after) raise(SIGKILL);
}

/* The child: opens the database and writes until killed (or ops done), reporting each
   acknowledged write on fd before starting the next. */
static void child_writes(const char *dir, int fd, uint64_t seed, int step, int after, int ops) {
  bfh_options o;
  small_options(&o, 1);
  bfh_db *db = NULL;
  if (bfh_open(dir, &o, &db) != BFH_OK) _exit(3);
  g_kill_step = step;
  g_kill_after = after;
  if (step) standalone_set_step_hook(bfh_internal_standalone(db), kill_at_step, NULL);
  rng_t r;
  rng_init(&r, seed);
  for (int i = 0; i < ops; i++) {
    ack_t a = {(int32_t)rng_below(&r, CRASH_KEYS), (int32_t)rng_below(&r, CRASH_DOMAIN + 2)};
    char k[24], v[24];
    size_t kl = (size_t)sprintf(k, "key%03d", a.key);
    int rc;
    if (a.val >= CRASH_DOMAIN) {
      a.val = -1;
      rc = bfh_delete(db, k, kl);
    } else {
      rc = bfh_put(db, k, kl, v, (size_t)sprintf(v, "val-%d", a.val));
    }
    if (rc != BFH_OK) _exit(4);
    if (write(fd, &a, sizeof a) != (ssize_t)sizeof a) _exit(5);
    /* Flushes put most old values into tables, where the open's replay does not see them:
       the write order alone must then keep the index whole. */
    if (i % 64 == 63 && bfh_flush(db) != BFH_OK) _exit(6);
  }
  _exit(0); /* no close: the kill of the caller's choice, or none */
}

typedef struct crash_result {
  size_t acked;
  size_t stale_candidates; /* index entries that validation dropped */
} crash_result_t;

/* Runs a child to its kill, then checks the reopened database: each key holds its last
   acknowledged value, or the value of the one write in flight when the child died; every
   search by STANDALONE equals the scan. */
static crash_result_t crash_and_check(const char *dir, uint64_t seed, int step, int after,
                                      int kill_after_acks) {
  int fds[2];
  assert_int_equal(pipe(fds), 0);
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    close(fds[0]);
    child_writes(dir, fds[1], seed, step, after, 100000);
  }
  close(fds[1]);
  int32_t last[CRASH_KEYS];
  for (int i = 0; i < CRASH_KEYS; i++) last[i] = -2; /* never written in this run */
  ack_t a;
  size_t acked = 0;
  int killed_by_parent = 0;
  while (read(fds[0], &a, sizeof a) == (ssize_t)sizeof a) {
    last[a.key] = a.val;
    if (++acked == (size_t)kill_after_acks) {
      kill(pid, SIGKILL);
      killed_by_parent = 1;
    }
  }
  close(fds[0]);
  int status;
  assert_int_equal(waitpid(pid, &status, 0), pid);
  assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
  (void)killed_by_parent;

  bfh_options o;
  small_options(&o, 1);
  bfh_db *db = open_or_fail(dir, &o);
  size_t off = 0;
  for (int i = 0; i < CRASH_KEYS; i++) {
    char k[24];
    void *v = NULL;
    size_t vl = 0;
    size_t kl = (size_t)sprintf(k, "key%03d", i);
    int rc = bfh_get(db, k, kl, &v, &vl);
    char want[24];
    int ok;
    if (last[i] == -2)
      ok = 1; /* from an earlier run, or the write in flight */
    else if (last[i] == -1)
      ok = rc == BFH_NOT_FOUND;
    else
      ok = rc == BFH_OK && vl == (size_t)sprintf(want, "val-%d", last[i]) &&
           memcmp(v, want, vl) == 0;
    off += !ok;
    bfh_free(v);
  }
  /* At most the one write in flight differs from the acknowledged ones. */
  assert_true(off <= 1);
  crash_result_t res = {acked, 0};
  for (int d = 0; d < CRASH_DOMAIN; d++) {
    char v[24];
    size_t vl = (size_t)sprintf(v, "val-%d", d);
    expect_same_as_scan(db, v, vl);
    bfh_search_stats st;
    free(search_keys(db, v, vl, BFH_SEARCH_STANDALONE, &st));
    res.stale_candidates += st.candidates - st.results;
  }
  assert_int_equal(bfh_close(db), BFH_OK);
  return res;
}

/* Four rounds, each killed at the `after`-th call of step (after + stride x round), each
   writing past the last: every crash leaves the database whole and STANDALONE equal to
   SCAN, and together they leave stale entries that validation drops. */
static void crash_at_step(const char *dir, int step, int after, int stride, uint64_t seed) {
  size_t stale = 0;
  for (int round = 0; round < 4; round++) {
    int at = after + stride * round;
    crash_result_t r = crash_and_check(dir, seed + (uint64_t)round, step, at, 0);
    assert_true(r.acked >= (size_t)at - 1); /* every write before the killed one returned */
    stale += r.stale_candidates;
  }
  assert_true(stale > 0); /* the crashes did leave entries the database does not have */
}

/* Killed right after the new index entry, before the database write: that entry is stale. */
static void test_standalone_crash_after_index_write(void **state) {
  crash_at_step(((db_fixture_t *)*state)->dir, STANDALONE_STEP_INDEXED, 300, 500, 100);
}

/* Killed after the database write, before the old entry's removal: the old one is stale. */
static void test_standalone_crash_after_database_write(void **state) {
  crash_at_step(((db_fixture_t *)*state)->dir, STANDALONE_STEP_STORED, 400, 700, 200);
}

/* Killed by the parent at whatever point the child has reached after some acknowledgements. */
static void test_standalone_crash_anywhere(void **state) {
  db_fixture_t *f = *state;
  for (int round = 0; round < 6; round++) {
    crash_result_t r = crash_and_check(f->dir, 300 + round, 0, 0, 200 + 1500 * round);
    assert_true(r.acked >= (size_t)(200 + 1500 * round));
  }
}

/* A write the database kept and the index lost (a machine crash with sync = 0 can leave
   this): the open re-indexes the records it replays from the database's log. */
static void test_standalone_replay_reindexes(void **state) {
  db_fixture_t *f = *state;
  bfh_options o;
  small_options(&o, 1);
  bfh_db *db = open_or_fail(f->dir, &o);
  put_str(db, "old", "seen");
  assert_int_equal(bfh_close(db), BFH_OK);
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    if (bfh_open(f->dir, &o, &db) != BFH_OK) _exit(3);
    lsm_db_t *raw = engine_lsm_db(bfh_internal_engine(db));
    for (int i = 0; i < 50; i++) {
      char k[24];
      size_t kl = (size_t)sprintf(k, "past%02d", i);
      if (lsm_put(raw, k, kl, "hidden", 6, NULL) != BFH_OK) _exit(4);
    }
    _exit(0); /* no close */
  }
  int status;
  assert_int_equal(waitpid(pid, &status, 0), pid);
  assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  db = open_or_fail(f->dir, &o);
  keys_t *ks = search_keys(db, "hidden", 6, BFH_SEARCH_STANDALONE, NULL);
  assert_int_equal(ks->n, 50);
  free(ks);
  standalone_stats_t ss;
  standalone_get_stats(bfh_internal_standalone(db), &ss);
  assert_true(ss.replayed_indexed >= 50);
  assert_int_equal(expect_same_as_scan(db, "seen", 4), 1);
  assert_int_equal(bfh_close(db), BFH_OK);
}

/* A damaged index refuses the open with the file named; bfh_repair builds it again. */
static void test_standalone_damaged_index_repaired(void **state) {
  db_fixture_t *f = *state;
  bfh_options o;
  small_options(&o, 1);
  bfh_db *db = open_or_fail(f->dir, &o);
  char k[24], v[24];
  for (int i = 0; i < 3000; i++) {
    sprintf(k, "k%04d", i);
    sprintf(v, "v%d", i % 30);
    put_str(db, k, v);
  }
  assert_int_equal(bfh_close(db), BFH_OK);
  char current[4400];
  snprintf(current, sizeof current, "%s/bfh-standalone/CURRENT", f->dir);
  FILE *fp = fopen(current, "w");
  assert_non_null(fp);
  fputs("MANIFEST-999999\n", fp); /* names a manifest that does not exist */
  fclose(fp);
  int rc = bfh_open(f->dir, &o, &db);
  assert_true(rc < 0);
  print_message("open of a damaged index: %s\n", bfh_last_error(NULL));
  assert_non_null(strstr(bfh_last_error(NULL), "bfh-standalone"));
  bfh_repair_report rep;
  assert_int_equal(bfh_repair(f->dir, &o, &rep), BFH_OK);
  assert_int_equal(rep.standalone_rebuilt, 1);
  db = open_or_fail(f->dir, &o);
  size_t total = 0;
  for (int d = 0; d < 30; d++) total += expect_same_as_scan(db, v, (size_t)sprintf(v, "v%d", d));
  assert_int_equal(total, 3000);
  assert_int_equal(bfh_close(db), BFH_OK);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_standalone_basics, setup, db_fixture_teardown),
      cmocka_unit_test_setup_teardown(test_standalone_build, setup, db_fixture_teardown),
      cmocka_unit_test_setup_teardown(test_standalone_concurrent_writes, setup,
                                      db_fixture_teardown),
      cmocka_unit_test_setup_teardown(test_standalone_crash_after_index_write, setup,
                                      db_fixture_teardown),
      cmocka_unit_test_setup_teardown(test_standalone_crash_after_database_write, setup,
                                      db_fixture_teardown),
      cmocka_unit_test_setup_teardown(test_standalone_crash_anywhere, setup, db_fixture_teardown),
      cmocka_unit_test_setup_teardown(test_standalone_replay_reindexes, setup, db_fixture_teardown),
      cmocka_unit_test_setup_teardown(test_standalone_damaged_index_repaired, setup,
                                      db_fixture_teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

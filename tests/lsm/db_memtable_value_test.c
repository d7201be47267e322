/* lsm_snapshot_scan_memtables_value against its oracle, lsm_snapshot_scan_memtables filtered
 * by value, on a database with memtable_value_index: on the live memtable, on a snapshot
 * holding both a memtable and an immutable one (a flush held in the table hook), on an
 * older snapshot while newer writes land (the seq bound), and after a reopen.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lsm/db.h"
#include "tests/lsm/db_test_util.h"

enum { POOL = 64, KEYS = 500, OPS = 3000 };
#define GATE_SECONDS 60

/* ---- A table hook that holds every table build until the test opens the gate ------------ */

typedef struct gate {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  int open;
  int builds; /* table builds begun */
} gate_t;

static void *gate_begin(void *ctx, uint64_t file_number) {
  (void)file_number;
  gate_t *g = ctx;
  pthread_mutex_lock(&g->mu);
  g->builds++;
  pthread_cond_broadcast(&g->cv);
  while (!g->open) pthread_cond_wait(&g->cv, &g->mu);
  pthread_mutex_unlock(&g->mu);
  return g;
}

static void gate_add(void *state, const void *key, size_t key_len, const void *val, size_t val_len,
                     uint64_t seq, int type) {
  (void)state, (void)key, (void)key_len, (void)val, (void)val_len, (void)seq, (void)type;
}

static int gate_finish(void *state, const lsm_meta_block_t **blocks, size_t *n) {
  (void)state;
  *blocks = NULL;
  *n = 0;
  return 0;
}

static void gate_end(void *state, const uint64_t *block_offsets) {
  (void)state, (void)block_offsets;
}

static void gate_set(gate_t *g, int open) {
  pthread_mutex_lock(&g->mu);
  g->open = open;
  pthread_cond_broadcast(&g->cv);
  pthread_mutex_unlock(&g->mu);
}

/* Waits until a table build has begun (a flush is held); 0 if none did in GATE_SECONDS. */
static int gate_wait_build(gate_t *g) {
  struct timespec deadline;
  clock_gettime(CLOCK_REALTIME, &deadline);
  deadline.tv_sec += GATE_SECONDS;
  pthread_mutex_lock(&g->mu);
  while (g->builds == 0 && pthread_cond_timedwait(&g->cv, &g->mu, &deadline) == 0) {
  }
  int begun = g->builds > 0;
  pthread_mutex_unlock(&g->mu);
  return begun;
}

/* ---- Fixture ----------------------------------------------------------------------------- */

typedef struct fixture {
  char dir[TEST_PATH_MAX];
  gate_t gate;
  lsm_table_hook_t hook;
  lsm_options_t opt;
  lsm_db_t *db;
  pthread_t flusher;
  int flusher_running;
  int flush_rc;
  rng_t rng;
  uint64_t ops; /* entries written since the last open: each put or delete is one */
} fixture_t;

static int setup(void **state) {
  fixture_t *f = calloc(1, sizeof *f);
  if (!f || test_tmpdir_create(f->dir, sizeof f->dir, "db_memvalue") != 0) {
    free(f);
    return -1;
  }
  pthread_mutex_init(&f->gate.mu, NULL);
  pthread_cond_init(&f->gate.cv, NULL);
  f->gate.open = 1;
  f->hook = (lsm_table_hook_t){.ctx = &f->gate,
                               .begin = gate_begin,
                               .add = gate_add,
                               .finish = gate_finish,
                               .end = gate_end};
  lsm_options_init(&f->opt);
  f->opt.memtable_bytes = 1 << 20; /* OPS entries fit: no switch but the test's own */
  f->opt.memtable_value_index = 1;
  f->opt.hook = &f->hook;
  rng_init(&f->rng, 4242); /* fixed seed */
  *state = f;
  return 0;
}

static int teardown(void **state) {
  fixture_t *f = *state;
  gate_set(&f->gate, 1); /* a failed test may have left a flush held */
  if (f->flusher_running) pthread_join(f->flusher, NULL);
  int rc = f->db && lsm_close(f->db) != ST_OK ? -1 : 0;
  if (test_rmrf(f->dir) != 0) rc = -1;
  pthread_cond_destroy(&f->gate.cv);
  pthread_mutex_destroy(&f->gate.mu);
  free(f);
  return rc;
}

static void open_db(fixture_t *f) {
  err_t e;
  err_clear(&e);
  int rc = lsm_open(f->dir, &f->opt, &f->db, &e);
  if (rc != ST_OK) fail_msg("lsm_open: %d %s", rc, e.msg);
  f->ops = 0;
}

static void close_db(fixture_t *f) {
  lsm_db_t *db = f->db;
  f->db = NULL;
  assert_int_equal(lsm_close(db), ST_OK);
}

/* Value `id` of the pool: id 0 is empty, the others 1..40 bytes, distinct (first byte). */
static size_t pool_value(uint8_t *buf, uint64_t id) {
  if (id == 0) return 0;
  buf[0] = (uint8_t)id;
  return 1 + test_value(buf + 1, id, 40);
}

/* n random puts (overwrites: KEYS keys; values from the pool, so each repeats) and deletions
   (15%). */
static void write_ops(fixture_t *f, uint64_t n) {
  for (uint64_t i = 0; i < n; i++) {
    char key[32];
    uint8_t val[64];
    size_t klen = test_key(key, rng_below(&f->rng, KEYS));
    err_t e;
    err_clear(&e);
    int del = rng_below(&f->rng, 100) < 15;
    size_t vlen = pool_value(val, rng_below(&f->rng, POOL));
    int rc = del ? lsm_delete(f->db, key, klen, &e) : lsm_put(f->db, key, klen, val, vlen, &e);
    if (rc != ST_OK) fail_msg("write: %d %s", rc, e.msg);
    f->ops++;
  }
}

/* ---- Oracle ------------------------------------------------------------------------------ */

typedef struct hit {
  uint64_t seq;
  char key[32];
  size_t klen;
} hit_t;

typedef struct hits {
  hit_t *v;
  size_t n, cap;
  const uint8_t *want; /* the value searched: want[0, want_len) */
  size_t want_len;
  int oracle;       /* 1: keep the value entries holding want; 0: every entry must hold it */
  uint64_t entries; /* every entry shown */
} hits_t;

static int collect(void *arg, const void *key, size_t klen, const void *val, size_t vlen,
                   uint64_t seq, int type) {
  hits_t *h = arg;
  h->entries++;
  if (type != LSM_TYPE_VALUE || vlen != h->want_len || memcmp(val, h->want, vlen) != 0) {
    if (h->oracle) return 0;
    fail_msg("value search: entry seq %llu does not hold the value", (unsigned long long)seq);
  }
  if (h->n == h->cap) {
    h->cap = h->cap ? h->cap * 2 : 64;
    h->v = realloc(h->v, h->cap * sizeof *h->v);
    assert_non_null(h->v);
  }
  assert_true(klen <= sizeof h->v->key);
  hit_t *x = &h->v[h->n++];
  x->seq = seq;
  memcpy(x->key, key, klen);
  x->klen = klen;
  return 0;
}

static int cmp_hit_seq(const void *a, const void *b) {
  const hit_t *x = a, *y = b;
  return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* For every value of the pool: the value search shows exactly the entries of the filtered
   full scan. And every memtable has its index: each entry sits in one chain, which only the
   searches of values hashed to the same bucket walk (64 values in >= 16384 buckets: rarely
   two), so the searches of the whole pool examine each entry about once, at most twice;
   a memtable without index would be read whole by each of the 64. Returns the entries the
   full scan showed. */
static uint64_t check_snapshot(lsm_snapshot_t *s) {
  uint64_t full_entries = 0, examined = 0, scanned = 0;
  for (uint64_t id = 0; id < POOL; id++) {
    uint8_t val[64];
    size_t vlen = pool_value(val, id);
    hits_t got = {.want = val, .want_len = vlen};
    hits_t want = {.want = val, .want_len = vlen, .oracle = 1};
    lsm_scan_stats_t gst = {0, 0}, wst = {0, 0};
    err_t e;
    err_clear(&e);
    assert_int_equal(
        lsm_snapshot_scan_memtables_value(s, vlen ? val : NULL, vlen, collect, &got, &gst, &e),
        ST_OK);
    assert_int_equal(lsm_snapshot_scan_memtables(s, collect, &want, &wst, &e), ST_OK);
    assert_int_equal(got.n, want.n);
    if (got.n) {
      qsort(got.v, got.n, sizeof *got.v, cmp_hit_seq);
      qsort(want.v, want.n, sizeof *want.v, cmp_hit_seq);
    }
    for (size_t i = 0; i < got.n; i++) {
      assert_int_equal(got.v[i].seq, want.v[i].seq);
      assert_int_equal(got.v[i].klen, want.v[i].klen);
      assert_memory_equal(got.v[i].key, want.v[i].key, got.v[i].klen);
    }
    examined += gst.entries;
    scanned = wst.entries; /* the same every time */
    full_entries = want.entries;
    free(got.v);
    free(want.v);
  }
  if (examined > 2 * scanned)
    fail_msg("the value searches examined %llu entries of %llu", (unsigned long long)examined,
             (unsigned long long)scanned);
  return full_entries;
}

static lsm_snapshot_t *snapshot(fixture_t *f) {
  lsm_snapshot_t *s = lsm_snapshot_acquire(f->db);
  assert_non_null(s);
  return s;
}

static void *flush_main(void *arg) {
  fixture_t *f = arg;
  err_t e;
  f->flush_rc = lsm_flush(f->db, &e);
  return NULL;
}

static void test_db_memtables_value_search_matches_filtered_scan(void **state) {
  fixture_t *f = *state;
  open_db(f);
  lsm_snapshot_t *s0 = snapshot(f);
  assert_int_equal(check_snapshot(s0), 0);
  lsm_snapshot_release(s0);

  /* The live memtable. */
  write_ops(f, OPS);
  lsm_snapshot_t *s1 = snapshot(f);
  assert_int_equal(check_snapshot(s1), OPS);

  /* mem -> imm: a flush switches the memtable and is held in the hook, so the next
     snapshot has both. */
  gate_set(&f->gate, 0);
  assert_int_equal(pthread_create(&f->flusher, NULL, flush_main, f), 0);
  f->flusher_running = 1;
  if (!gate_wait_build(&f->gate)) fail_msg("no flush began in %d s", GATE_SECONDS);
  write_ops(f, OPS);
  lsm_snapshot_t *s2 = snapshot(f);
  assert_int_equal(check_snapshot(s2), 2 * OPS); /* both memtables */
  /* Newer writes, beyond the snapshots' seq: neither search shows them. */
  write_ops(f, OPS / 2);
  assert_int_equal(check_snapshot(s2), 2 * OPS);
  assert_int_equal(check_snapshot(s1), OPS);
  gate_set(&f->gate, 1);
  pthread_join(f->flusher, NULL);
  f->flusher_running = 0;
  assert_int_equal(f->flush_rc, ST_OK);
  assert_int_equal(check_snapshot(s1), OPS); /* its memtable is pinned, though flushed */
  lsm_snapshot_release(s1);
  lsm_snapshot_release(s2);

  /* Reopen: the log (OPS + OPS / 2 entries since the switch) is reused, its entries
     replayed into the memtable made at open, which is indexed like any other. */
  close_db(f);
  open_db(f);
  write_ops(f, OPS);
  lsm_snapshot_t *s3 = snapshot(f);
  assert_int_equal(check_snapshot(s3), OPS + OPS / 2 + OPS);
  lsm_snapshot_release(s3);
  close_db(f);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_db_memtables_value_search_matches_filtered_scan, setup,
                                      teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

/* Tests of the memtable (lsm/memtable.h): order, get semantics, references, the value index
   (against a filtered full scan), and concurrent lock-free readers while one writer adds. */
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
#include <sched.h>
#include <time.h>

#include "filters/hash.h"
#include "filters/value_terms.h"
#include "lsm/memtable.h"
#include "util/random.h"

typedef struct entry {
  char key[24];
  size_t klen;
  uint64_t seq;
  int type;
  char val[24];
  size_t vlen;
} entry_t;

static int cmp_entry(const void *a, const void *b) {
  const entry_t *x = a, *y = b;
  int c = bytewise_compare(x->key, x->klen, y->key, y->klen);
  if (c) return c;
  return x->seq > y->seq ? -1 : x->seq < y->seq ? 1 : 0;
}

/* Random keys from a small space (so keys repeat with several seqs), unique seqs. */
static void test_memtable_iterates_in_internal_key_order(void **state) {
  (void)state;
  enum { N = 20000 };
  entry_t *e = calloc(N, sizeof *e);
  rng_t rng;
  rng_init(&rng, 1);
  memtable_t *m = memtable_create();
  for (size_t i = 0; i < N; i++) {
    e[i].klen = (size_t)snprintf(e[i].key, sizeof e[i].key, "k%llu",
                                 (unsigned long long)rng_below(&rng, 5000));
    e[i].seq = 1 + rng_below(&rng, 1ull << 40) * N + i; /* unique, random order */
    e[i].type = rng_below(&rng, 4) == 0 ? LSM_TYPE_DELETION : LSM_TYPE_VALUE;
    e[i].vlen = e[i].type ? (size_t)snprintf(e[i].val, sizeof e[i].val, "v%zu", i) : 0;
    assert_int_equal(memtable_add(m, e[i].seq, e[i].type, e[i].key, e[i].klen, e[i].val, e[i].vlen),
                     ST_OK);
  }
  assert_int_equal(memtable_entries(m), N);
  assert_true(memtable_memory_usage(m) > N * 40);
  qsort(e, N, sizeof *e, cmp_entry);
  iterator_t *it = memtable_iterator_create(m);
  memtable_unref(m); /* the iterator keeps it alive */
  size_t i = 0;
  for (iterator_seek_first(it); iterator_valid(it); iterator_next(it), i++) {
    size_t kn, vn;
    const uint8_t *k = iterator_key(it, &kn);
    const void *v = iterator_value(it, &vn);
    internal_key_parts_t p;
    assert_int_equal(internal_key_parse(k, kn, &p), 0);
    assert_true(i < N);
    assert_int_equal(p.user_len, e[i].klen);
    assert_memory_equal(p.user_key, e[i].key, p.user_len);
    assert_int_equal(p.seq, e[i].seq);
    assert_int_equal(p.type, e[i].type);
    assert_int_equal(vn, e[i].vlen);
    if (vn) assert_memory_equal(v, e[i].val, vn);
  }
  assert_int_equal(i, N);
  /* seek to an internal key lands on the first entry >= it */
  for (size_t j = 0; j < N; j += 37) {
    uint8_t target[40];
    size_t tn = internal_key_encode(target, e[j].key, e[j].klen, e[j].seq, e[j].type);
    iterator_seek(it, target, tn);
    assert_true(iterator_valid(it));
    size_t kn;
    const void *k = iterator_key(it, &kn);
    assert_int_equal(internal_key_compare(k, kn, target, tn), 0);
  }
  uint8_t past[8 + 4];
  size_t pn = internal_key_encode(past, "z", 1, 0, 0);
  iterator_seek(it, past, pn);
  assert_false(iterator_valid(it));
  assert_int_equal(iterator_status(it, NULL), ST_OK);
  iterator_destroy(it);
  free(e);
}

static void test_memtable_get_semantics(void **state) {
  (void)state;
  memtable_t *m = memtable_create();
  lsm_lookup_t r;
  assert_int_equal(memtable_get(m, "a", 1, LSM_MAX_SEQ, &r), LSM_LOOKUP_ABSENT);
  assert_int_equal(memtable_add(m, 10, LSM_TYPE_VALUE, "a", 1, "v10", 3), ST_OK);
  assert_int_equal(memtable_add(m, 20, LSM_TYPE_DELETION, "a", 1, NULL, 0), ST_OK);
  assert_int_equal(memtable_add(m, 30, LSM_TYPE_VALUE, "a", 1, "v30", 3), ST_OK);
  assert_int_equal(memtable_add(m, 5, LSM_TYPE_VALUE, "ab", 2, "", 0), ST_OK);
  assert_int_equal(memtable_add(m, LSM_MAX_SEQ, LSM_TYPE_VALUE, "", 0, "empty-key", 9), ST_OK);
  assert_int_equal(memtable_get(m, "a", 1, LSM_MAX_SEQ, &r), LSM_LOOKUP_VALUE);
  assert_int_equal(r.seq, 30);
  assert_int_equal(r.val_len, 3);
  assert_memory_equal(r.val, "v30", 3);
  assert_int_equal(memtable_get(m, "a", 1, 29, &r), LSM_LOOKUP_DELETED);
  assert_int_equal(r.seq, 20);
  assert_int_equal(memtable_get(m, "a", 1, 19, &r), LSM_LOOKUP_VALUE);
  assert_memory_equal(r.val, "v10", 3);
  assert_int_equal(memtable_get(m, "a", 1, 9, &r), LSM_LOOKUP_ABSENT);
  assert_int_equal(memtable_get(m, "ab", 2, LSM_MAX_SEQ, &r), LSM_LOOKUP_VALUE);
  assert_int_equal(r.val_len, 0);
  assert_int_equal(memtable_get(m, "", 0, LSM_MAX_SEQ, &r), LSM_LOOKUP_VALUE);
  assert_int_equal(r.val_len, 9);
  assert_int_equal(memtable_get(m, "b", 1, LSM_MAX_SEQ, &r), LSM_LOOKUP_ABSENT);
  assert_int_equal(memtable_get(m, "aa", 2, LSM_MAX_SEQ, &r), LSM_LOOKUP_ABSENT);
  /* long keys and values */
  char big[5000];
  memset(big, 'x', sizeof big);
  assert_int_equal(memtable_add(m, 40, LSM_TYPE_VALUE, big, sizeof big, big, sizeof big), ST_OK);
  assert_int_equal(memtable_get(m, big, sizeof big, LSM_MAX_SEQ, &r), LSM_LOOKUP_VALUE);
  assert_int_equal(r.val_len, sizeof big);
  memtable_ref(m);
  memtable_unref(m);
  memtable_unref(m);
  memtable_unref(NULL);
}

typedef struct scan_ctx {
  int n;
  int ordered;
  char last[64];
  size_t last_len;
} scan_ctx_t;

static int scan_visit(void *arg, const void *key, size_t klen, const void *val, size_t vlen,
                      uint64_t seq, int type) {
  (void)val;
  (void)vlen;
  (void)seq;
  (void)type;
  scan_ctx_t *c = arg;
  if (c->n && bytewise_compare(c->last, c->last_len, key, klen) > 0) c->ordered = 0;
  memcpy(c->last, key, klen);
  c->last_len = klen;
  return ++c->n == 3; /* stop after 3 */
}

static void test_memtable_scan_counts_and_stops(void **state) {
  (void)state;
  memtable_t *m = memtable_create();
  for (int i = 0; i < 10; i++) {
    char k[8];
    int n = snprintf(k, sizeof k, "k%d", 9 - i);
    assert_int_equal(memtable_add(m, (uint64_t)i + 1, LSM_TYPE_VALUE, k, (size_t)n, "vv", 2),
                     ST_OK);
  }
  scan_ctx_t c = {0, 1, {0}, 0};
  lsm_scan_stats_t st = {0, 0};
  assert_int_equal(memtable_scan(m, scan_visit, &c, &st), ST_OK);
  assert_int_equal(c.n, 3);
  assert_true(c.ordered);
  assert_int_equal(st.entries, 3);
  assert_int_equal(st.bytes_read, 3 * 4);
  memtable_unref(m);
}

/* ---- The value index ------------------------------------------------------------------ */

/* What a visitor was shown: (user key, seq, type, value) per entry, in visiting order. */
typedef struct hit {
  char key[24];
  size_t klen;
  uint64_t seq;
  int type;
  char val[40];
  size_t vlen;
} hit_t;

typedef struct hits {
  hit_t *v;
  size_t n, cap;
  const char *want; /* collect_if_value: only value entries holding want[0, want_len) */
  size_t want_len;
} hits_t;

static int collect(void *arg, const void *key, size_t klen, const void *val, size_t vlen,
                   uint64_t seq, int type) {
  hits_t *h = arg;
  if (h->n == h->cap) {
    h->cap = h->cap ? h->cap * 2 : 64;
    h->v = realloc(h->v, h->cap * sizeof *h->v);
    assert_non_null(h->v);
  }
  hit_t *x = &h->v[h->n++];
  assert_true(klen <= sizeof x->key && vlen <= sizeof x->val);
  memcpy(x->key, key, klen);
  x->klen = klen;
  x->seq = seq;
  x->type = type;
  if (vlen) memcpy(x->val, val, vlen);
  x->vlen = vlen;
  return 0;
}

/* The oracle: a full scan keeping the value entries that hold h->want. */
static int collect_if_value(void *arg, const void *key, size_t klen, const void *val, size_t vlen,
                            uint64_t seq, int type) {
  hits_t *h = arg;
  if (type != LSM_TYPE_VALUE || vlen != h->want_len || memcmp(val, h->want, vlen) != 0) return 0;
  return collect(arg, key, klen, val, vlen, seq, type);
}

static int cmp_hit_seq(const void *a, const void *b) {
  const hit_t *x = a, *y = b;
  return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* The same entries, whatever the order (seqs are unique). */
static void assert_same_hits(hits_t *got, hits_t *want) {
  assert_int_equal(got->n, want->n);
  if (got->n == 0) return; /* (qsort must not see the NULL array of no hits) */
  qsort(got->v, got->n, sizeof *got->v, cmp_hit_seq);
  qsort(want->v, want->n, sizeof *want->v, cmp_hit_seq);
  for (size_t i = 0; i < got->n; i++) {
    const hit_t *g = &got->v[i], *w = &want->v[i];
    assert_int_equal(g->seq, w->seq);
    assert_int_equal(g->type, w->type);
    assert_int_equal(g->klen, w->klen);
    assert_memory_equal(g->key, w->key, g->klen);
    assert_int_equal(g->vlen, w->vlen);
    assert_memory_equal(g->val, w->val, g->vlen);
  }
}

/* Value `id` of the pool: id 0 is empty; others have lengths 1..33, and values that differ
   in their last byte only, so comparing a prefix is not enough. */
static size_t pool_value(char *buf, uint64_t id) {
  if (id == 0) return 0;
  size_t n = (size_t)snprintf(buf, 40, "%0*llu", (int)(1 + id % 33), (unsigned long long)id);
  return n;
}

enum { VALUE_POOL = 300, VALUE_OPS = 20000, VALUE_KEYS = 2000 };

/* Random puts (overwrites: 2000 keys), deletions (15%) and empty values from the pool into
   a memtable of `buckets` value buckets (0: none); for every value of the pool and one
   absent value, memtable_scan_value gives exactly the entries of a filtered full scan.
   Returns the chain nodes the searches examined. */
static uint64_t check_scan_value(size_t buckets, uint64_t *value_entries) {
  memtable_t *m = memtable_create_indexed(buckets);
  assert_non_null(m);
  rng_t rng;
  rng_init(&rng, 77); /* fixed seed */
  *value_entries = 0;
  for (uint64_t seq = 1; seq <= VALUE_OPS; seq++) {
    char k[24], v[40];
    size_t kn =
        (size_t)snprintf(k, sizeof k, "k%llu", (unsigned long long)rng_below(&rng, VALUE_KEYS));
    int del = rng_below(&rng, 100) < 15;
    size_t vn = pool_value(v, rng_below(&rng, VALUE_POOL));
    assert_int_equal(memtable_add(m, seq, del ? LSM_TYPE_DELETION : LSM_TYPE_VALUE, k, kn,
                                  del ? NULL : v, del ? 0 : vn),
                     ST_OK);
    *value_entries += !del;
  }
  uint64_t examined = 0;
  for (uint64_t id = 0; id <= VALUE_POOL; id++) {
    char v[40];
    size_t vn = id == VALUE_POOL ? 3 : pool_value(v, id); /* VALUE_POOL: absent */
    if (id == VALUE_POOL) memcpy(v, "abs", 3);
    hits_t got = {0}, want = {.want = v, .want_len = vn};
    lsm_scan_stats_t st = {0, 0}, full = {0, 0};
    assert_int_equal(memtable_scan_value(m, vn ? v : NULL, vn, collect, &got, &st), ST_OK);
    assert_int_equal(memtable_scan(m, collect_if_value, &want, &full), ST_OK);
    assert_same_hits(&got, &want);
    examined += st.entries;
    if (!buckets) assert_int_equal(st.entries, VALUE_OPS); /* the fallback scans everything */
    free(got.v);
    free(want.v);
  }
  memtable_unref(m);
  return examined;
}

static void test_memtable_scan_value_matches_filtered_scan(void **state) {
  (void)state;
  uint64_t value_entries;
  check_scan_value(0, &value_entries);
  /* One bucket: a single chain holds every value entry and nothing else (deletions are not
     indexed), and each search walks all of it. */
  uint64_t examined = check_scan_value(1, &value_entries);
  assert_int_equal(examined, (VALUE_POOL + 1) * value_entries);
  check_scan_value(16, &value_entries);
  /* Buckets aplenty: a search examines few entries besides its matches (each value entry
     matches one search of the pool), far from the 301 x 17000 of a full scan each. */
  examined = check_scan_value(1 << 16, &value_entries);
  assert_true(examined < 2 * value_entries);
}

typedef struct hashed {
  uint32_t hash_hi;
  uint32_t id;
} hashed_t;

static int cmp_hashed(const void *a, const void *b) {
  const hashed_t *x = a, *y = b;
  if (x->hash_hi != y->hash_hi) return x->hash_hi < y->hash_hi ? -1 : 1;
  return x->id < y->id ? -1 : x->id > y->id;
}

/* Two values whose hashes agree in the 32 bits a chain node keeps (the memtable hashes
   with bfh_hash64 under BFH_DEFAULT_SEED): by the birthday bound, 2^18 values hold about
   8 such pairs; the sort finds the first. */
static void colliding_values(uint64_t *a, uint64_t *b) {
  enum { CANDIDATES = 1 << 18 };
  hashed_t *h = malloc(CANDIDATES * sizeof *h);
  assert_non_null(h);
  for (uint32_t i = 0; i < CANDIDATES; i++) {
    uint64_t v = i;
    h[i] = (hashed_t){(uint32_t)(bfh_hash64(&v, sizeof v, BFH_DEFAULT_SEED) >> 32), i};
  }
  qsort(h, CANDIDATES, sizeof *h, cmp_hashed);
  size_t i = 1;
  while (i < CANDIDATES && h[i].hash_hi != h[i - 1].hash_hi) i++;
  assert_true(i < CANDIDATES);
  *a = h[i - 1].id;
  *b = h[i].id;
  free(h);
}

/* Values of the same length whose kept hash bits agree, in one chain: a search compares
   the bytes too, and finds only its own. */
static void test_memtable_scan_value_tells_apart_hash_collisions(void **state) {
  (void)state;
  uint64_t v[2];
  colliding_values(&v[0], &v[1]);
  memtable_t *m = memtable_create_indexed(1);
  assert_int_equal(memtable_add(m, 1, LSM_TYPE_VALUE, "a", 1, &v[0], sizeof v[0]), ST_OK);
  assert_int_equal(memtable_add(m, 2, LSM_TYPE_VALUE, "b", 1, &v[1], sizeof v[1]), ST_OK);
  for (int i = 0; i < 2; i++) {
    hits_t got = {0};
    assert_int_equal(memtable_scan_value(m, &v[i], sizeof v[i], collect, &got, NULL), ST_OK);
    assert_int_equal(got.n, 1);
    assert_int_equal(got.v[0].seq, (uint64_t)i + 1);
    free(got.v);
  }
  memtable_unref(m);
}

static int stop_after_one(void *arg, const void *key, size_t klen, const void *val, size_t vlen,
                          uint64_t seq, int type) {
  (void)key, (void)klen, (void)val, (void)vlen, (void)seq, (void)type;
  ++*(int *)arg;
  return 1;
}

static void test_memtable_value_index_stops_and_reports_memory(void **state) {
  (void)state;
  memtable_t *plain = memtable_create(), *m = memtable_create_indexed(1000);
  assert_int_equal(memtable_value_index_bytes(plain), 0);
  assert_int_equal(memtable_value_index_bytes(m), 1024 * sizeof(void *)); /* rounded up */
  assert_true(memtable_memory_usage(m) >= memtable_memory_usage(plain) + 1024 * sizeof(void *));
  for (uint64_t seq = 1; seq <= 5; seq++) {
    char k[8];
    size_t kn = (size_t)snprintf(k, sizeof k, "k%llu", (unsigned long long)seq);
    assert_int_equal(memtable_add(m, seq, LSM_TYPE_VALUE, k, kn, "same", 4), ST_OK);
    assert_int_equal(memtable_add(plain, seq, LSM_TYPE_VALUE, k, kn, "same", 4), ST_OK);
  }
  int visits = 0;
  assert_int_equal(memtable_scan_value(m, "same", 4, stop_after_one, &visits, NULL), ST_OK);
  assert_int_equal(visits, 1);
  assert_int_equal(memtable_scan_value(plain, "same", 4, stop_after_one, &visits, NULL), ST_OK);
  assert_int_equal(visits, 2);
  memtable_unref(plain);
  memtable_unref(m);
}

/* ---- One writer, concurrent readers ---------------------------------------------------- */

/* The writer pauses CHECKPOINTS - 1 times until the readers have done another
   CHECKPOINT_READS reads, so that reads overlap the writes however the threads are
   scheduled (it gives up after CHECKPOINT_SECONDS and the test fails). */
enum { CONC_N = 200000, READERS = 2, CHECKPOINTS = 8, CHECKPOINT_READS = 256 };
#define CHECKPOINT_SECONDS 60

typedef struct conc {
  memtable_t *m;
  int indexed;               /* readers also search values */
  atomic_uint_fast64_t done; /* keys [0, done) are in the memtable */
  atomic_int stop;
  atomic_int starved; /* the writer gave up waiting for the readers */
  atomic_uint_fast64_t reads, misses, bad;
} conc_t;

/* Waits until the readers have done `reads` reads in all (or CHECKPOINT_SECONDS passed). */
static void wait_for_reads(conc_t *c, uint64_t reads) {
  struct timespec t0, t;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  while (atomic_load(&c->reads) < reads) {
    clock_gettime(CLOCK_MONOTONIC, &t);
    if (t.tv_sec - t0.tv_sec > CHECKPOINT_SECONDS) {
      atomic_store(&c->starved, 1);
      return;
    }
    sched_yield();
  }
}

static size_t conc_key(char *buf, uint64_t i) {
  /* a scrambled order so inserts land all over the list */
  uint64_t x = (i * 0x9e3779b97f4a7c15ull) >> 20;
  return (size_t)snprintf(buf, 32, "%016llx-%llu", (unsigned long long)x, (unsigned long long)i);
}

/* Entries 2j and 2j + 1 share a value, so a value's chain grows while readers walk it. */
static size_t conc_value(char *buf, uint64_t i) {
  return (size_t)snprintf(buf, 32, "value-%llu", (unsigned long long)(i / 2));
}

static void *writer(void *arg) {
  conc_t *c = arg;
  char k[32], v[32];
  for (uint64_t i = 0; i < CONC_N; i++) {
    if (i > 0 && i % (CONC_N / CHECKPOINTS) == 0)
      wait_for_reads(c, i / (CONC_N / CHECKPOINTS) * CHECKPOINT_READS);
    size_t kn = conc_key(k, i);
    size_t vn = conc_value(v, i);
    if (memtable_add(c->m, i + 1, LSM_TYPE_VALUE, k, kn, v, vn) != ST_OK) abort();
    atomic_store_explicit(&c->done, i + 1, memory_order_release);
  }
  return NULL;
}

typedef struct value_probe {
  char key[32], val[32];
  size_t klen, vlen;
  uint64_t seq;
  int found, bad;
} value_probe_t;

static int probe_visit(void *arg, const void *key, size_t klen, const void *val, size_t vlen,
                       uint64_t seq, int type) {
  value_probe_t *p = arg;
  if (type != LSM_TYPE_VALUE || vlen != p->vlen || memcmp(val, p->val, vlen) != 0) p->bad = 1;
  if (seq == p->seq) p->found = klen == p->klen && memcmp(key, p->key, klen) == 0;
  return 0;
}

/* Whether a search for entry i's value shows entry i; every entry it shows must hold that
   value (else ++*bad). */
static int value_search_finds(const memtable_t *m, uint64_t i, uint64_t *bad) {
  value_probe_t p = {.seq = i + 1};
  p.klen = conc_key(p.key, i);
  p.vlen = conc_value(p.val, i);
  memtable_scan_value(m, p.val, p.vlen, probe_visit, &p, NULL);
  *bad += (uint64_t)p.bad;
  return p.found;
}

static void *reader(void *arg) {
  conc_t *c = arg;
  rng_t rng;
  rng_init(&rng, 12345); /* fixed seed */
  char k[32], v[32];
  uint64_t reads = 0, bad = 0, misses = 0;
  while (!atomic_load(&c->stop)) {
    uint64_t done = atomic_load_explicit(&c->done, memory_order_acquire);
    if (done == 0) continue;
    /* a key that must be present, and one that may or may not be */
    uint64_t i = rng_below(&rng, done);
    size_t kn = conc_key(k, i);
    lsm_lookup_t r;
    if (memtable_get(c->m, k, kn, LSM_MAX_SEQ, &r) != LSM_LOOKUP_VALUE) {
      misses++;
    } else {
      size_t vn = conc_value(v, i);
      if (r.val_len != vn || memcmp(r.val, v, vn) != 0 || r.seq != i + 1) bad++;
    }
    if (c->indexed && !value_search_finds(c->m, i, &bad)) misses++;
    reads++;
    atomic_fetch_add(&c->reads, 1);
    if (reads % 4096 == 0) {
      /* a full ordered walk sees at least `done` entries, in order */
      iterator_t *it = memtable_iterator_create(c->m);
      uint64_t n = 0;
      char last[64];
      size_t last_len = 0;
      for (iterator_seek_first(it); iterator_valid(it); iterator_next(it), n++) {
        size_t kl;
        const void *key = iterator_key(it, &kl);
        if (n && internal_key_compare(last, last_len, key, kl) >= 0) bad++;
        memcpy(last, key, kl);
        last_len = kl;
      }
      if (n < done) bad++;
      iterator_destroy(it);
    }
  }
  atomic_fetch_add(&c->misses, misses);
  atomic_fetch_add(&c->bad, bad);
  return NULL;
}

/* The shared state and the threads on it, on the heap: the teardown joins the threads a
   failed test left running (the writer ends on its own: it never waits longer than
   CHECKPOINT_SECONDS) before it frees what they use. */
typedef struct conc_fixture {
  conc_t c;
  pthread_t w, r[READERS];
  int writer_running, readers_running;
} conc_fixture_t;

/* value_buckets: 0 for a memtable without value index; else the readers search values too. */
static int conc_setup(void **state, size_t value_buckets) {
  conc_fixture_t *f = calloc(1, sizeof *f);
  if (!f) return -1;
  f->c.m = memtable_create_indexed(value_buckets);
  f->c.indexed = value_buckets != 0;
  if (!f->c.m) {
    free(f);
    return -1;
  }
  atomic_init(&f->c.done, 0);
  atomic_init(&f->c.stop, 0);
  atomic_init(&f->c.starved, 0);
  atomic_init(&f->c.reads, 0);
  atomic_init(&f->c.misses, 0);
  atomic_init(&f->c.bad, 0);
  *state = f;
  return 0;
}

static int conc_setup_plain(void **state) {
  return conc_setup(state, 0);
}

/* 1024 buckets for 200,000 entries: chains of ~200 that readers walk while the writer
   prepends to them. */
static int conc_setup_indexed(void **state) {
  return conc_setup(state, 1024);
}

/* Joins the writer, then stops and joins the readers. */
static void conc_join(conc_fixture_t *f) {
  if (f->writer_running) pthread_join(f->w, NULL);
  f->writer_running = 0;
  atomic_store(&f->c.stop, 1);
  for (; f->readers_running > 0; f->readers_running--)
    pthread_join(f->r[f->readers_running - 1], NULL);
}

static int conc_teardown(void **state) {
  conc_fixture_t *f = *state;
  conc_join(f);
  memtable_unref(f->c.m);
  free(f);
  return 0;
}

static void test_memtable_concurrent_readers_see_every_published_key(void **state) {
  conc_fixture_t *f = *state;
  conc_t *c = &f->c;
  for (int i = 0; i < READERS; i++) {
    assert_int_equal(pthread_create(&f->r[i], NULL, reader, c), 0);
    f->readers_running++;
  }
  assert_int_equal(pthread_create(&f->w, NULL, writer, c), 0);
  f->writer_running = 1;
  conc_join(f);
  assert_int_equal(atomic_load(&c->misses), 0);
  assert_int_equal(atomic_load(&c->bad), 0);
  /* (Then at least (CHECKPOINTS - 1) * CHECKPOINT_READS reads ran during the writes.) */
  if (atomic_load(&c->starved))
    fail_msg("the readers did no %d reads in %d s while the writer waited", CHECKPOINT_READS,
             CHECKPOINT_SECONDS);
  assert_int_equal(memtable_entries(c->m), CONC_N);
}

/* The same, on an indexed memtable: readers also search the value of a published entry
   (memtable_scan_value) and must be shown it, and only entries holding that value. */
static void test_memtable_concurrent_value_search_sees_every_published_value(void **state) {
  test_memtable_concurrent_readers_see_every_published_key(state);
}

/* A stand-in for declared attributes: a value's items are its comma-separated words, each
   hashed under the seed (an empty value has none); counts the calls flagged as a put's. */
typedef struct words {
  value_terms_t base;
  int counted;
} words_t;

static int words_hash(const value_terms_t *t, const void *val, size_t len, uint64_t seed,
                      unsigned flags, value_hash_fn fn, void *arg) {
  if (flags & VALUE_TERMS_COUNT) ((words_t *)t)->counted++;
  const char *v = val;
  int n = 0;
  for (size_t i = 0, start = 0; i <= len && len; i++)
    if (i == len || v[i] == ',') {
      fn(arg, bfh_value_hash(v + start, i - start, seed));
      n++;
      start = i + 1;
    }
  return n;
}

typedef struct seen_keys {
  int n;
  char key[64][16];
} seen_keys_t;

static int see_key(void *arg, const void *key, size_t klen, const void *val, size_t vlen,
                   uint64_t seq, int type) {
  (void)val, (void)vlen, (void)seq;
  seen_keys_t *s = arg;
  assert_int_equal(type, LSM_TYPE_VALUE);
  assert_true(s->n < 64 && klen < 16);
  memcpy(s->key[s->n], key, klen);
  s->key[s->n++][klen] = 0;
  return 0;
}

static seen_keys_t by_word(const memtable_t *m, const char *word, uint64_t seed) {
  seen_keys_t s = {0};
  assert_int_equal(memtable_scan_hash(m, bfh_value_hash(word, strlen(word), seed), see_key, &s,
                                      NULL),
                   ST_OK);
  return s;
}

/* With items (filters/value_terms.h), each value entry is found under every item it has, once
   per item, newest first; deletions under none; the whole value only if it is an item. */
static void test_memtable_value_index_holds_each_item(void **state) {
  (void)state;
  const uint64_t seed = 77;
  words_t w = {.base = {.hash = words_hash}};
  memtable_t *m = memtable_create_indexed_terms(16, seed, &w.base); /* chains shared */
  assert_non_null(m);
  assert_int_equal(memtable_add(m, 1, LSM_TYPE_VALUE, "a", 1, "red,blue", 8), ST_OK);
  assert_int_equal(memtable_add(m, 2, LSM_TYPE_VALUE, "b", 1, "blue", 4), ST_OK);
  assert_int_equal(memtable_add(m, 3, LSM_TYPE_VALUE, "c", 1, "green,red,x,y,z", 15), ST_OK);
  assert_int_equal(memtable_add(m, 4, LSM_TYPE_DELETION, "a", 1, NULL, 0), ST_OK);
  assert_int_equal(memtable_add(m, 5, LSM_TYPE_VALUE, "d", 1, "", 0), ST_OK); /* no item */
  assert_int_equal(w.counted, 4); /* the values, not the deletion */
  seen_keys_t s = by_word(m, "red", seed);
  assert_int_equal(s.n, 2);
  assert_string_equal(s.key[0], "c"); /* newest insert first */
  assert_string_equal(s.key[1], "a");
  s = by_word(m, "blue", seed);
  assert_int_equal(s.n, 2);
  assert_string_equal(s.key[0], "b");
  assert_string_equal(s.key[1], "a");
  s = by_word(m, "z", seed);
  assert_int_equal(s.n, 1);
  assert_string_equal(s.key[0], "c");
  assert_int_equal(by_word(m, "purple", seed).n, 0);
  /* "blue" is an item of b's value, which is the whole value: found by value too; "red,blue"
     is no item of its own. */
  s.n = 0;
  assert_int_equal(memtable_scan_value_hashed(m, "blue", 4, bfh_value_hash("blue", 4, seed),
                                              see_key, &s, NULL),
                   ST_OK);
  assert_int_equal(s.n, 1);
  s.n = 0;
  assert_int_equal(memtable_scan_value_hashed(m, "red,blue", 8,
                                              bfh_value_hash("red,blue", 8, seed), see_key, &s,
                                              NULL),
                   ST_OK);
  assert_int_equal(s.n, 0);
  /* The entries themselves are whole. */
  lsm_lookup_t lk;
  assert_int_equal(memtable_get(m, "c", 1, LSM_MAX_SEQ, &lk), LSM_LOOKUP_VALUE);
  assert_int_equal(lk.val_len, 15);
  assert_memory_equal(lk.val, "green,red,x,y,z", 15);
  memtable_unref(m);
  /* Without an index, memtable_scan_hash is refused. */
  m = memtable_create();
  assert_int_equal(memtable_scan_hash(m, 1, see_key, &s, NULL), ST_E_INVALID);
  memtable_unref(m);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_memtable_iterates_in_internal_key_order),
      cmocka_unit_test(test_memtable_get_semantics),
      cmocka_unit_test(test_memtable_scan_counts_and_stops),
      cmocka_unit_test(test_memtable_scan_value_matches_filtered_scan),
      cmocka_unit_test(test_memtable_scan_value_tells_apart_hash_collisions),
      cmocka_unit_test(test_memtable_value_index_stops_and_reports_memory),
      cmocka_unit_test(test_memtable_value_index_holds_each_item),
      cmocka_unit_test_setup_teardown(test_memtable_concurrent_readers_see_every_published_key,
                                      conc_setup_plain, conc_teardown),
      cmocka_unit_test_setup_teardown(
          test_memtable_concurrent_value_search_sees_every_published_value, conc_setup_indexed,
          conc_teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

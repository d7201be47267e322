/* Tests of the stock engines' log segments (lsm_hooks/engines/stock/log_segs.c): a search through
 * a segment's value index (stock_segs_find) reports what a scan of every entry (stock_segs_scan)
 * reports, in the same order, and both report what a model of the entries says.
 *
 * The model is the list of (key, value) pairs of each segment; the segments are made from it
 * by ldb_seg_builder, as logs.c makes them from a log. Fixed seeds: every run is the same.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bfh.h"
#include "filters/hash.h"
#include "lsm_hooks/engines/stock/stock.h"
#include "util/random.h"

#define KEY_BYTES 16
#define VAL_BYTES 64
#define MAX_SEGS 256
#define MAX_ENTRIES 4096

typedef struct pair {
  char key[KEY_BYTES];
  uint8_t val[VAL_BYTES];
  size_t val_len;
} pair_t;

/* The model: segment i holds pairs [first[i], first[i + 1]). */
typedef struct model {
  pair_t pairs[MAX_ENTRIES];
  size_t first[MAX_SEGS + 1];
  size_t nsegs, npairs;
  log_seg_t *segs[MAX_SEGS];
} model_t;

static void model_add(model_t *m, const char *key, const void *val, size_t val_len) {
  assert_true(m->npairs < MAX_ENTRIES && val_len <= VAL_BYTES);
  pair_t *p = &m->pairs[m->npairs++];
  snprintf(p->key, sizeof p->key, "%s", key);
  if (val_len) memcpy(p->val, val, val_len);
  p->val_len = val_len;
}

/* Closes the segment of the pairs added since the last one: builds it as logs.c does. */
static void model_end_seg(model_t *m) {
  assert_true(m->nsegs < MAX_SEGS);
  stock_seg_builder_t b = {0};
  b.seed = STOCK_SEG_HASH_SEED; /* the twins below are found under it */
  for (size_t i = m->first[m->nsegs]; i < m->npairs; i++) {
    const pair_t *p = &m->pairs[i];
    assert_int_equal(stock_seg_builder_add(&b, i, p->key, strlen(p->key), p->val, p->val_len),
                     BFH_OK);
  }
  m->segs[m->nsegs] = stock_seg_builder_finish(&b);
  assert_non_null(m->segs[m->nsegs]);
  stock_seg_builder_release(&b);
  m->first[++m->nsegs] = m->npairs;
}

static void model_release(model_t *m) {
  for (size_t i = 0; i < m->nsegs; i++) stock_seg_unref(m->segs[i]);
}

/* The keys fn was called with, in order; fn stops the search at the stop_after-th (0: never). */
typedef struct hits {
  char keys[MAX_ENTRIES][KEY_BYTES];
  uint64_t
      seqs[MAX_ENTRIES]; /* each entry's sequence: its pair's index, as model_end_seg adds it */
  size_t n, stop_after;
} hits_t;

static int record_hit(void *arg, const void *key, size_t key_len, uint64_t seq) {
  hits_t *h = arg;
  assert_true(h->n < MAX_ENTRIES && key_len < KEY_BYTES);
  memcpy(h->keys[h->n], key, key_len);
  h->keys[h->n][key_len] = 0;
  h->seqs[h->n] = seq;
  h->n++;
  return h->stop_after && h->n == h->stop_after;
}

typedef void (*segs_search_fn)(log_seg_t *const *segs, size_t n, const void *val, size_t val_len,
                               engine_match_fn fn, void *arg, engine_scan_stats_t *st);

/* The model's answer: the keys of the pairs whose value is val, in segment and entry order. */
static void model_search(const model_t *m, const void *val, size_t val_len, hits_t *want) {
  want->n = 0;
  for (size_t i = 0; i < m->npairs; i++)
    if (m->pairs[i].val_len == val_len && memcmp(m->pairs[i].val, val, val_len) == 0) {
      want->seqs[want->n] = i;
      snprintf(want->keys[want->n++], KEY_BYTES, "%s", m->pairs[i].key);
    }
}

static void assert_hits_equal(const hits_t *got, const hits_t *want, size_t n) {
  assert_int_equal(got->n, n);
  for (size_t i = 0; i < n; i++) {
    assert_string_equal(got->keys[i], want->keys[i]);
    assert_int_equal(got->seqs[i], want->seqs[i]);
  }
}

/* stock_segs_scan of the whole-value test of val. */
static void segs_scan_value(log_seg_t *const *segs, size_t n, const void *val, size_t val_len,
                            engine_match_fn fn, void *arg, engine_scan_stats_t *st) {
  engine_value_test_t test = engine_value_test_equal(val, val_len);
  stock_segs_scan(segs, n, &test, fn, arg, st);
}

/* stock_segs_find of the whole-value test of val, through its hash under the segments' seed
   (a search's). */
static void segs_find_value(log_seg_t *const *segs, size_t n, const void *val, size_t val_len,
                            engine_match_fn fn, void *arg, engine_scan_stats_t *st) {
  if (n == 0) return;
  uint64_t seed = segs[0]->seed;
  engine_value_test_t test = engine_value_test_equal(val, val_len);
  stock_segs_find(segs, n, &test, seed, bfh_value_hash(val, val_len, seed), fn, arg, st);
}

/* Scan and lookup of segs[0, nsegs), which hold the model's pairs in order, both report the
   model's keys for val, whole and stopped after every j-th call of fn; the lookup compares at
   least the matches and at most every entry. Returns the entries the lookup compared. */
static uint64_t check_query_segs(const model_t *m, log_seg_t *const *segs, size_t nsegs,
                                 const void *val, size_t val_len) {
  static hits_t want, got;
  model_search(m, val, val_len, &want);
  segs_search_fn search[2] = {segs_scan_value, segs_find_value};
  engine_scan_stats_t st[2] = {{0, 0}, {0, 0}};
  for (int f = 0; f < 2; f++) {
    for (size_t stop = 0; stop <= want.n; stop++) {
      got.n = 0;
      got.stop_after = stop;
      engine_scan_stats_t *s = stop == 0 ? &st[f] : NULL;
      search[f](segs, nsegs, val, val_len, record_hit, &got, s);
      assert_hits_equal(&got, &want, stop ? stop : want.n);
    }
  }
  assert_int_equal(st[0].entries, m->npairs);
  assert_true(st[1].entries >= want.n && st[1].entries <= st[0].entries);
  return st[1].entries;
}

/* check_query_segs of the model's own segments. */
static uint64_t check_query(const model_t *m, const void *val, size_t val_len) {
  return check_query_segs(m, m->segs, m->nsegs, val, val_len);
}

/* The home slot of hash h in s (stock.h: the tag's top bits, for tables of up to 2^24 slots). */
static size_t home_of(const log_seg_t *s, uint64_t h) {
  uint64_t tag = h >> STOCK_SEG_OFF_BITS;
  if (!tag) tag = 1;
  assert_true(s->slot_bits <= STOCK_SEG_TAG_BITS);
  return (size_t)(tag >> (STOCK_SEG_TAG_BITS - s->slot_bits));
}

/* Value id: 0 is the empty value, others "v<id>-" and 0..31 letters (distinct ids, distinct
   values). */
static size_t pool_value(uint32_t id, uint8_t *out) {
  if (id == 0) return 0;
  char buf[VAL_BYTES];
  int n = snprintf(buf, sizeof buf, "v%u-", (unsigned)id);
  size_t len = (size_t)n + (id * 7) % 32;
  for (size_t i = (size_t)n; i < len; i++) buf[i] = (char)('a' + (id + i) % 26);
  memcpy(out, buf, len);
  return len;
}

/* Values drawn from a small pool, so that they repeat within and across segments, with keys
   from a small key space, so that keys repeat too; one segment is empty, one has one entry. */
static void test_segs_lookup_reports_what_scan_reports(void **state) {
  (void)state;
  static model_t m;
  memset(&m, 0, sizeof m);
  rng_t r;
  rng_init(&r, 0x5e65);
  const size_t sizes[] = {300, 0, 1, 17, 900, 64, 400};
  const uint32_t pool = 64;
  for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++) {
    for (size_t i = 0; i < sizes[s]; i++) {
      char key[KEY_BYTES];
      uint8_t val[VAL_BYTES];
      snprintf(key, sizeof key, "k%04u", (unsigned)rng_below(&r, 500));
      /* skewed: the first ids are frequent, the last ones rare or absent */
      uint32_t id = (uint32_t)rng_below(&r, 1 + rng_below(&r, pool));
      model_add(&m, key, val, pool_value(id, val));
    }
    model_end_seg(&m);
  }
  for (uint32_t id = 0; id < 2 * pool; id++) { /* ids >= pool are absent */
    uint8_t val[VAL_BYTES + 1];
    size_t len = pool_value(id, val);
    check_query(&m, val, len);
    if (len > 0) check_query(&m, val, len - 1); /* a prefix of a value is another value */
    val[len] = 'z';
    check_query(&m, val, len + 1); /* and so is a value with one byte more */
  }
  model_release(&m);
}

/* Many segments of 1..8 entries with distinct values: tables of 2..16 slots, where many values
   share a home slot and probe past each other (the test checks that they do). */
static void test_segs_lookup_small_segments_many_values(void **state) {
  (void)state;
  static model_t m;
  memset(&m, 0, sizeof m);
  rng_t r;
  rng_init(&r, 0x5e66);
  uint32_t id = 1;
  size_t shared_home = 0;
  while (m.nsegs < 200) {
    size_t n = 1 + (size_t)rng_below(&r, 8), first = m.npairs;
    for (size_t i = 0; i < n; i++) {
      char key[KEY_BYTES];
      uint8_t val[VAL_BYTES];
      snprintf(key, sizeof key, "k%05u", id);
      model_add(&m, key, val, pool_value(id++, val));
    }
    model_end_seg(&m);
    const log_seg_t *s = m.segs[m.nsegs - 1];
    for (size_t i = first; i < m.npairs; i++)
      for (size_t j = first; j < i; j++) {
        uint64_t hi = bfh_hash64(m.pairs[i].val, m.pairs[i].val_len, STOCK_SEG_HASH_SEED);
        uint64_t hj = bfh_hash64(m.pairs[j].val, m.pairs[j].val_len, STOCK_SEG_HASH_SEED);
        shared_home += home_of(s, hi) == home_of(s, hj);
      }
  }
  assert_true(shared_home >= 50);
  for (uint32_t q = 0; q < id + 50; q++) { /* every value, the empty one and 50 absent ones */
    uint8_t val[VAL_BYTES];
    check_query(&m, val, pool_value(q, val));
  }
  model_release(&m);
}

typedef struct tagged {
  uint64_t key; /* the tag */
  uint32_t id;
} tagged_t;

static int cmp_tagged(const void *a, const void *b) {
  const tagged_t *x = a, *y = b;
  return x->key < y->key ? -1 : x->key > y->key;
}

/* Two distinct values with the same tag: in any table they share a home slot (the tag's top
   bits) and their slots look alike. A birthday search over 120,000 values on the tag's 24 bits
   expects about 430 such pairs (fixed names: the same pair every run). */
static void find_tag_twins(char a[KEY_BYTES], char b[KEY_BYTES]) {
  enum { N = 120000 };
  tagged_t *t = malloc(N * sizeof *t);
  assert_non_null(t);
  for (uint32_t i = 0; i < N; i++) {
    char v[KEY_BYTES];
    int n = snprintf(v, sizeof v, "twin%07u", (unsigned)i);
    uint64_t h = bfh_hash64(v, (size_t)n, STOCK_SEG_HASH_SEED);
    t[i] = (tagged_t){h >> STOCK_SEG_OFF_BITS, i};
  }
  qsort(t, N, sizeof *t, cmp_tagged);
  size_t i = 1;
  while (i < N && t[i].key != t[i - 1].key) i++;
  assert_true(i < N);
  snprintf(a, KEY_BYTES, "twin%07u", (unsigned)t[i - 1].id);
  snprintf(b, KEY_BYTES, "twin%07u", (unsigned)t[i].id);
  free(t);
}

/* A value met in the table with the same tag as the one searched for is compared, not taken:
   the lookup of a value reports only its own entries, and finds nothing when only its twin is
   there. */
static void test_segs_lookup_tag_twins_are_compared(void **state) {
  (void)state;
  static model_t m;
  memset(&m, 0, sizeof m);
  char a[KEY_BYTES], b[KEY_BYTES];
  find_tag_twins(a, b);
  model_add(&m, "ka1", a, strlen(a));
  model_add(&m, "kfill1", "fill1", 5);
  model_add(&m, "kb", b, strlen(b));
  model_add(&m, "ka2", a, strlen(a));
  model_add(&m, "kfill2", "fill2", 5);
  model_end_seg(&m); /* 5 entries: 16 slots */
  model_add(&m, "ka3", a, strlen(a));
  model_add(&m, "kfill3", "fill3", 5);
  model_end_seg(&m); /* b absent: its lookup meets only a's entry */
  assert_int_equal(check_query(&m, a, strlen(a)), 4); /* a's three and b's one */
  assert_int_equal(check_query(&m, b, strlen(b)), 4);
  assert_int_equal(check_query(&m, "fill1", 5), 1);
  model_release(&m);
}

/* A value whose hash homes it in the last slot of a 16-slot table (bits 4: the top 4 bits of
   its tag all set), found among fixed names. */
static size_t last_home_value(char *out, size_t cap) {
  for (unsigned i = 0;; i++) {
    int n = snprintf(out, cap, "wrap%u", i);
    uint64_t h = bfh_hash64(out, (size_t)n, STOCK_SEG_HASH_SEED);
    if ((h >> STOCK_SEG_OFF_BITS) >> (STOCK_SEG_TAG_BITS - 4) == 15) return (size_t)n;
  }
}

/* Runs of one value that wrap past the table's last slot, and a run of 3,000 entries of one
   value among others: each value's lookup reports its entries in entry order. Slots are put
   in the order of their homes (slots_build); a run past the last slot goes on at the table's
   start. */
static void test_segs_runs_that_wrap_and_long_runs(void **state) {
  (void)state;
  static model_t m;
  memset(&m, 0, sizeof m);
  char w[KEY_BYTES];
  size_t wl = last_home_value(w, sizeof w);
  for (int i = 0; i < 7; i++) { /* 7 entries: 16 slots; 5 of w, homed in the last one */
    char key[KEY_BYTES], other[8];
    snprintf(key, sizeof key, "k%d", i);
    snprintf(other, sizeof other, "o%d", i);
    if (i % 3 == 1)
      model_add(&m, key, other, strlen(other));
    else
      model_add(&m, key, w, wl);
  }
  model_end_seg(&m);
  assert_int_equal(m.segs[0]->slot_bits, 4);
  check_query(&m, w, wl);
  check_query(&m, "o1", 2);
  for (int i = 0; i < 3000; i++) { /* one value held 3,000 times, others between */
    char key[KEY_BYTES];
    snprintf(key, sizeof key, "s%04d", i);
    if (i % 10 == 9)
      model_add(&m, key, key, strlen(key));
    else
      model_add(&m, key, "same", 4);
  }
  model_end_seg(&m);
  check_query(&m, "same", 4);
  check_query(&m, "s0019", 5);
  check_query(&m, w, wl);
  model_release(&m);
}

/* Pushes segments of 1 to 3 entries, as the views after single writes make them, of values
   that repeat: stock_segs_push merges the newest as a binary counter does, so that 1,200
   pushes leave a handful of segments, and every lookup and scan through them reports the
   model's keys in the model's order (older entries first). */
static void test_segs_push_merges_in_order(void **state) {
  (void)state;
  static model_t m;
  memset(&m, 0, sizeof m);
  stock_segs_t l = {0};
  rng_t r;
  rng_init(&r, 0x5e67);
  const uint32_t pool = 40;
  size_t pushes = 0, most = 0;
  while (m.npairs + 3 <= MAX_ENTRIES - 300) {
    stock_seg_builder_t b = {0};
    b.seed = STOCK_SEG_HASH_SEED;
    for (size_t i = 0, n = 1 + (size_t)rng_below(&r, 3); i < n; i++) {
      char key[KEY_BYTES];
      uint8_t val[VAL_BYTES];
      snprintf(key, sizeof key, "k%04u", (unsigned)rng_below(&r, 700));
      size_t len = pool_value((uint32_t)rng_below(&r, pool), val);
      assert_int_equal(stock_seg_builder_add(&b, m.npairs, key, strlen(key), val, len), BFH_OK);
      model_add(&m, key, val, len);
    }
    assert_int_equal(stock_segs_push(&l, &b), BFH_OK);
    stock_seg_builder_release(&b);
    pushes++;
    if (l.n > most) most = l.n;
  }
  /* Pushes of one item each would leave at most one segment per bit of the item count
     (about 3,700 here: 12 bits); pushes of 1 to 3 leave a few more (16 with this seed). One
     per push would be 1,800. */
  print_message("%zu pushes: %zu segments now, %zu at most\n", pushes, l.n, most);
  assert_true(pushes > 1000 && most <= 24);
  for (uint32_t id = 0; id < pool + 5; id++) { /* the last 5 absent */
    uint8_t val[VAL_BYTES];
    check_query_segs(&m, l.v, l.n, val, pool_value(id, val));
  }
  stock_segs_release(&l);
}

/* No merge makes a segment of more than STOCK_SEG_MERGE_ITEMS items: segments of 20,000
   distinct values, pushed one after another, merge in pairs up to that bound and no further,
   and each value is found once, in its own entry. */
static void test_segs_push_merges_up_to_the_bound(void **state) {
  (void)state;
  enum { PER = 20000, PUSHES = 6 };
  stock_segs_t l = {0};
  for (uint32_t p = 0; p < PUSHES; p++) {
    stock_seg_builder_t b = {0};
    b.seed = STOCK_SEG_HASH_SEED;
    for (uint32_t i = 0; i < PER; i++) {
      char kv[32];
      int n = snprintf(kv, sizeof kv, "x%06u", (unsigned)(p * PER + i));
      assert_int_equal(stock_seg_builder_add(&b, p * PER + i, kv, (size_t)n, kv, (size_t)n), BFH_OK);
    }
    assert_int_equal(stock_segs_push(&l, &b), BFH_OK);
    stock_seg_builder_release(&b);
  }
  uint64_t items = 0;
  for (size_t i = 0; i < l.n; i++) {
    assert_true(l.v[i]->items <= STOCK_SEG_MERGE_ITEMS);
    items += l.v[i]->items;
  }
  assert_int_equal(items, PUSHES * PER);
  assert_int_equal(l.n, 3); /* 40,000 + 40,000 + 40,000: no two fit under 65,536 */
  for (uint32_t q = 0; q < PUSHES * PER; q += 997) {
    char kv[32];
    int n = snprintf(kv, sizeof kv, "x%06u", (unsigned)q);
    static hits_t got;
    got.n = 0;
    got.stop_after = 0;
    segs_find_value(l.v, l.n, kv, (size_t)n, record_hit, &got, NULL);
    assert_int_equal(got.n, 1);
    assert_string_equal(got.keys[0], kv);
    assert_int_equal(got.seqs[0], q);
  }
  stock_segs_release(&l);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_segs_runs_that_wrap_and_long_runs),
      cmocka_unit_test(test_segs_push_merges_in_order),
      cmocka_unit_test(test_segs_push_merges_up_to_the_bound),
      cmocka_unit_test(test_segs_lookup_reports_what_scan_reports),
      cmocka_unit_test(test_segs_lookup_small_segments_many_values),
      cmocka_unit_test(test_segs_lookup_tag_twins_are_compared),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

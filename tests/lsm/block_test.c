/* Tests of blocks (lsm/block_builder.h, lsm/block.h): round trip, seek, prefix
   compression with restarts, trailers, malformed blocks. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lsm/block.h"
#include "lsm/block_builder.h"
#include "util/coding.h"
#include "util/random.h"

/* Key i of a block: sorted, sharing prefixes, some longer than the cursor's inline buffer. */
static size_t make_key(char *buf, int i) {
  if (i % 50 == 49) { /* long key */
    int n = snprintf(buf, 400, "key%06d-", i);
    memset(buf + n, 'L', 300);
    return (size_t)n + 300;
  }
  return (size_t)snprintf(buf, 400, "key%06d", i);
}

static size_t make_val(char *buf, int i) {
  return (size_t)snprintf(buf, 64, "value of %d", i * 3);
}

static void roundtrip(int interval, int n) {
  block_builder_t bb;
  block_builder_init(&bb, interval);
  char k[400], v[64];
  for (int i = 0; i < n; i++) {
    size_t kn = make_key(k, 2 * i), vn = make_val(v, 2 * i); /* even keys only */
    assert_int_equal(block_builder_add(&bb, k, kn, v, vn), ST_OK);
    size_t ln;
    const uint8_t *last = block_builder_last_key(&bb, &ln);
    assert_int_equal(ln, kn);
    assert_memory_equal(last, k, kn);
  }
  size_t est = block_builder_size_estimate(&bb), size;
  const uint8_t *data = block_builder_finish(&bb, &size);
  assert_non_null(data);
  assert_int_equal(size, est);
  int nrestarts = n ? (n + interval - 1) / interval : 1;
  assert_int_equal(decode_fixed32(data + size - 4), (uint32_t)nrestarts);

  block_t b;
  assert_int_equal(block_parse(&b, data, size), 0);
  block_cursor_t c;
  block_cursor_init(&c, &b, bytewise_compare);
  int i = 0;
  for (block_cursor_seek_first(&c); block_cursor_valid(&c); block_cursor_next(&c), i++) {
    size_t kn = make_key(k, 2 * i), vn = make_val(v, 2 * i);
    assert_int_equal(c.key_len, kn);
    assert_memory_equal(c.key, k, kn);
    assert_int_equal(c.val_len, vn);
    assert_memory_equal(c.val, v, vn);
  }
  assert_int_equal(i, n);
  assert_false(block_cursor_corrupt(&c));
  /* seek to every present key, and to every absent key between them */
  for (int j = 0; j < 2 * n + 1; j++) {
    size_t kn = make_key(k, j);
    block_cursor_seek(&c, k, kn);
    int want = (j + 1) / 2; /* index of the first even key >= j */
    if (want >= n) {
      assert_false(block_cursor_valid(&c));
      continue;
    }
    assert_true(block_cursor_valid(&c));
    size_t wn = make_key(k, 2 * want);
    assert_int_equal(c.key_len, wn);
    assert_memory_equal(c.key, k, wn);
  }
  block_cursor_seek(&c, "", 0);
  assert_int_equal(block_cursor_valid(&c), n > 0);
  block_cursor_seek(&c, "zzz", 3);
  assert_false(block_cursor_valid(&c));
  block_cursor_release(&c);

  /* the iterator wrapper */
  iterator_t *it = block_iterator_create(data, size, bytewise_compare);
  i = 0;
  for (iterator_seek_first(it); iterator_valid(it); iterator_next(it)) i++;
  assert_int_equal(i, n);
  assert_int_equal(iterator_status(it, NULL), ST_OK);
  iterator_destroy(it);

  /* reuse after reset */
  block_builder_reset(&bb);
  assert_true(block_builder_empty(&bb));
  block_builder_release(&bb);
}

static void test_block_roundtrip_and_seek(void **state) {
  (void)state;
  roundtrip(16, 1000);
  roundtrip(1, 300);
  roundtrip(3, 7);
  roundtrip(16, 1);
  roundtrip(16, 0);
}

static void test_block_prefix_compression_saves_space(void **state) {
  (void)state;
  block_builder_t bb;
  block_builder_init(&bb, 16);
  size_t raw = 0;
  for (int i = 0; i < 1000; i++) {
    char k[64];
    size_t kn = (size_t)snprintf(k, sizeof k, "user:0000000000:item:%08d", i);
    raw += kn + 1;
    assert_int_equal(block_builder_add(&bb, k, kn, "v", 1), ST_OK);
  }
  size_t size;
  assert_non_null(block_builder_finish(&bb, &size));
  /* keys share 29 of 30 bytes within a run: well under half the raw bytes */
  assert_true(size < raw / 2);
  block_builder_release(&bb);
}

static void test_block_trailer_detects_every_flip(void **state) {
  (void)state;
  block_builder_t bb;
  block_builder_init(&bb, 16);
  for (int i = 0; i < 50; i++) {
    char k[32];
    size_t kn = (size_t)snprintf(k, sizeof k, "k%04d", i);
    assert_int_equal(block_builder_add(&bb, k, kn, k, kn), ST_OK);
  }
  size_t size;
  const uint8_t *data = block_builder_finish(&bb, &size);
  uint8_t *copy = malloc(size + BLOCK_TRAILER_BYTES);
  memcpy(copy, data, size);
  block_trailer_encode(copy + size, copy, size);
  assert_int_equal(block_trailer_check(copy, size), 0);
  for (size_t pos = 0; pos < size + BLOCK_TRAILER_BYTES; pos++) {
    for (int bit = 0; bit < 8; bit++) {
      copy[pos] ^= (uint8_t)(1u << bit);
      assert_int_equal(block_trailer_check(copy, size), -1);
      copy[pos] ^= (uint8_t)(1u << bit);
    }
  }
  free(copy);
  block_builder_release(&bb);
}

/* What block_scan_value must visit: the cursor's entries whose value is val, in order. */
typedef struct scan_expect {
  block_cursor_t *c; /* positioned on the next entry to check */
  const char *val;
  size_t n;
  int visited, stop_after;
  uint8_t prev[512]; /* the key of the entry before the cursor's, if has_prev */
  size_t prev_len;
  int has_prev;
} scan_expect_t;

static void step(scan_expect_t *x) {
  assert_true(x->c->key_len <= sizeof x->prev);
  memcpy(x->prev, x->c->key, x->c->key_len);
  x->prev_len = x->c->key_len;
  x->has_prev = 1;
  block_cursor_next(x->c);
}

static void skip_to_match(scan_expect_t *x) {
  while (block_cursor_valid(x->c) &&
         (x->c->val_len != x->n || memcmp(x->c->val, x->val, x->n) != 0))
    step(x);
}

static int expect_entry(void *arg, const uint8_t *key, size_t key_len, const uint8_t *val,
                        uint32_t val_len, const uint8_t *prev, size_t prev_len) {
  scan_expect_t *x = arg;
  skip_to_match(x);
  assert_true(block_cursor_valid(x->c));
  assert_int_equal(key_len, x->c->key_len);
  assert_memory_equal(key, x->c->key, key_len);
  assert_int_equal(val_len, x->n);
  assert_memory_equal(val, x->val, x->n);
  /* prev is the entry before it in the block, NULL for the first */
  if (!x->has_prev) {
    assert_null(prev);
    assert_int_equal(prev_len, 0);
  } else {
    assert_non_null(prev);
    assert_int_equal(prev_len, x->prev_len);
    assert_memory_equal(prev, x->prev, prev_len);
  }
  step(x);
  return ++x->visited == x->stop_after;
}

/* Values repeat every 7 entries; keys share prefixes and some are longer than the cursor's
   inline buffer, so a match must rebuild its key across a run of shared prefixes. */
static void scan_value(int interval) {
  block_builder_t bb;
  block_builder_init(&bb, interval);
  char k[400], v[64];
  const int n = 1000;
  for (int i = 0; i < n; i++) {
    size_t kn = make_key(k, i), vn = (size_t)snprintf(v, sizeof v, "v%d", i % 7);
    assert_int_equal(block_builder_add(&bb, k, kn, v, vn), ST_OK);
  }
  size_t size;
  const uint8_t *data = block_builder_finish(&bb, &size);
  block_t b;
  assert_int_equal(block_parse(&b, data, size), 0);
  const char *vals[] = {"v0", "v3", "v6", "v7", "v", ""};
  const int want[] = {143, 143, 142, 0, 0, 0};
  for (size_t j = 0; j < sizeof vals / sizeof vals[0]; j++) {
    block_cursor_t c;
    block_cursor_init(&c, &b, bytewise_compare);
    block_cursor_seek_first(&c);
    scan_expect_t x = {.c = &c, .val = vals[j], .n = strlen(vals[j]), .stop_after = -1};
    uint64_t entries = 0;
    assert_int_equal(block_scan_value(&b, x.val, x.n, expect_entry, &x, &entries), 0);
    assert_int_equal(x.visited, want[j]);
    /* a value of 2 bytes or more is looked for first: fewer entries decoded */
    if (x.n >= BLOCK_SCAN_SKIP_MIN)
      assert_true(entries < (uint64_t)n);
    else
      assert_int_equal(entries, (uint64_t)n);
    skip_to_match(&x);
    assert_false(block_cursor_valid(&c)); /* no match left unvisited */
    /* stopped by the visitor after 5 matches */
    block_cursor_seek_first(&c);
    x.visited = 0;
    x.has_prev = 0;
    x.stop_after = 5;
    entries = 0;
    int r = block_scan_value(&b, x.val, x.n, expect_entry, &x, &entries);
    assert_int_equal(r, want[j] >= 5 ? 1 : 0);
    assert_int_equal(x.visited, want[j] >= 5 ? 5 : want[j]);
    block_cursor_release(&c);
  }
  block_builder_release(&bb);
}

static void test_block_scan_value_visits_exactly_the_matches(void **state) {
  (void)state;
  scan_value(16);
  scan_value(1);
  scan_value(5);
}

/* One visit of a scan by value, copied. */
typedef struct visit {
  uint8_t key[64], prev[64];
  size_t key_len, prev_len;
  int has_prev;
  uint32_t val_off; /* the value's place in the block */
} visit_t;

typedef struct visits {
  const uint8_t *block;
  visit_t v[4096];
  size_t n;
  size_t stop_after; /* 0: never */
} visits_t;

static int record_visit(void *arg, const uint8_t *key, size_t key_len, const uint8_t *val,
                        uint32_t val_len, const uint8_t *prev, size_t prev_len) {
  (void)val_len;
  visits_t *vs = arg;
  assert_true(vs->n < sizeof vs->v / sizeof vs->v[0]);
  assert_true(key_len <= sizeof vs->v[0].key && prev_len <= sizeof vs->v[0].prev);
  visit_t *v = &vs->v[vs->n++];
  memcpy(v->key, key, key_len);
  v->key_len = key_len;
  v->has_prev = prev != NULL;
  if (prev) memcpy(v->prev, prev, prev_len);
  v->prev_len = prev_len;
  v->val_off = (uint32_t)(val - vs->block);
  return vs->stop_after && vs->n == vs->stop_after;
}

/* Bytes from a 3-letter alphabet: values occur inside keys, inside other values and across
   entries, so that the skipping scan finds its bytes at places that are not a value and must
   decode its way to the right entry (and to its predecessor, when it is a restart point's). */
static size_t small_alphabet(rng_t *r, char *buf, size_t min, size_t max) {
  size_t n = min + (size_t)rng_below(r, max - min + 1);
  for (size_t i = 0; i < n; i++) buf[i] = "abc"[rng_below(r, 3)];
  return n;
}

/* A random block of 1 to 300 entries (into bb, parsed into *b; *n entries) at the restart
   interval given: sorted keys of a shared random prefix, 4 digits and a random tail, and
   values of at most vmax bytes, all of the small alphabet. */
static const uint8_t *random_block(rng_t *rng, int interval, size_t vmax, block_builder_t *bb,
                                   block_t *b, int *n) {
  block_builder_init(bb, interval);
  char prefix[16], k[64], v[32];
  size_t pn = small_alphabet(rng, prefix, 0, 8);
  *n = 1 + (int)rng_below(rng, 300);
  for (int i = 0; i < *n; i++) {
    memcpy(k, prefix, pn);
    size_t kn = pn + (size_t)snprintf(k + pn, 8, "%04d", i);
    kn += small_alphabet(rng, k + kn, 0, 6);
    size_t vn = small_alphabet(rng, v, 0, vmax);
    assert_int_equal(block_builder_add(bb, k, kn, v, vn), ST_OK);
  }
  size_t size;
  const uint8_t *data = block_builder_finish(bb, &size);
  assert_int_equal(block_parse(b, data, size), 0);
  return data;
}

/* Two scans visited the same entries, in order, with the same keys, predecessors and value
   places. */
static void expect_same_visits(const visits_t *got, const visits_t *want) {
  assert_int_equal(got->n, want->n);
  for (size_t i = 0; i < got->n; i++) {
    const visit_t *g = &got->v[i], *w = &want->v[i];
    assert_int_equal(g->val_off, w->val_off);
    assert_int_equal(g->key_len, w->key_len);
    assert_memory_equal(g->key, w->key, g->key_len);
    assert_int_equal(g->has_prev, w->has_prev);
    assert_int_equal(g->prev_len, w->prev_len);
    assert_memory_equal(g->prev, w->prev, g->prev_len);
  }
}

/* The skipping scan (block_scan_value) against the decoding one (block_scan_value_all) on
   random blocks: the same entries visited, in order, with the same keys, predecessors and
   value places, stopped or not; and never more entries decoded. Fixed seed. */
static void test_block_scan_value_skips_to_the_same_visits(void **state) {
  (void)state;
  rng_t rng;
  rng_init(&rng, 0x5ca7);
  static visits_t got, want;
  uint64_t fewer = 0, runs = 0;
  for (int t = 0; t < 600; t++) {
    block_builder_t bb;
    block_t b;
    int n;
    const uint8_t *data = random_block(&rng, (int[]){1, 2, 3, 16}[t % 4], 6, &bb, &b, &n);
    for (int q = 0; q < 8; q++) {
      char val[32];
      size_t vn = small_alphabet(&rng, val, 0, 5);
      size_t stop = rng_below(&rng, 3) == 0 ? 1 + (size_t)rng_below(&rng, 3) : 0;
      got.block = want.block = data;
      got.n = want.n = 0;
      got.stop_after = want.stop_after = stop;
      uint64_t e_got = 0, e_want = 0;
      int r_want = block_scan_value_all(&b, val, vn, record_visit, &want, &e_want);
      int r_got = block_scan_value(&b, val, vn, record_visit, &got, &e_got);
      assert_int_equal(r_got, r_want);
      expect_same_visits(&got, &want);
      if (r_want == 0) assert_true(e_got <= e_want);
      fewer += e_got < e_want;
      runs++;
    }
    block_builder_release(&bb);
  }
  assert_true(fewer > runs / 4); /* it does skip */
}

/* The visits of every entry whose value holds one of a few needles, for the scan that decodes
   every entry: the reference block_scan_containing's skipping must agree with. */
typedef struct needle_filter {
  const block_needle_t *nd;
  size_t nn;
  visits_t *vs;
} needle_filter_t;

static int visit_if_needled(void *arg, const uint8_t *key, size_t key_len, const uint8_t *val,
                            uint32_t val_len, const uint8_t *prev, size_t prev_len) {
  needle_filter_t *f = arg;
  for (size_t i = 0; i < f->nn; i++)
    if (memmem(val, val_len, f->nd[i].bytes, f->nd[i].len))
      return record_visit(f->vs, key, key_len, val, val_len, prev, prev_len);
  return 0;
}

/* block_scan_containing against every entry decoded and tested, on random blocks of a small
   alphabet (needles inside keys, across entries, in several values of a run): the same
   entries visited, in order, with the same keys, predecessors and value places, stopped or
   not, and fewer entries decoded. Fixed seed. */
static void test_block_scan_containing_visits_the_needled(void **state) {
  (void)state;
  rng_t rng;
  rng_init(&rng, 0x6e656564);
  static visits_t got, want;
  uint64_t fewer = 0, runs = 0, visited = 0;
  for (int t = 0; t < 600; t++) {
    block_builder_t bb;
    block_t b;
    int n;
    const uint8_t *data = random_block(&rng, (int[]){1, 2, 3, 16}[t % 4], 8, &bb, &b, &n);
    for (int q = 0; q < 8; q++) {
      char bytes[3][8];
      block_needle_t nd[3];
      size_t nn = 1 + (size_t)rng_below(&rng, 3);
      for (size_t i = 0; i < nn; i++) /* one byte now and then, as a JSON escape's needle */
        nd[i] = (block_needle_t){bytes[i], small_alphabet(&rng, bytes[i], i ? 2 : 1, 5)};
      size_t stop = rng_below(&rng, 3) == 0 ? 1 + (size_t)rng_below(&rng, 3) : 0;
      got.block = want.block = data;
      got.n = want.n = 0;
      got.stop_after = want.stop_after = stop;
      uint64_t e_got = 0, e_want = 0;
      needle_filter_t f = {nd, nn, &want};
      int r_want = block_scan_containing(&b, nd, 0, visit_if_needled, &f, &e_want);
      int r_got = block_scan_containing(&b, nd, nn, record_visit, &got, &e_got);
      if (r_want == 0) assert_int_equal(e_want, (uint64_t)n); /* no needle: every entry */
      assert_int_equal(r_got, r_want);
      expect_same_visits(&got, &want);
      if (r_want == 0) assert_true(e_got <= e_want);
      fewer += e_got < e_want;
      visited += got.n;
      runs++;
    }
    block_builder_release(&bb);
  }
  assert_true(fewer > runs / 4); /* it does skip */
  assert_true(visited > runs);   /* and finds */
}

static int count_visit(void *arg, const uint8_t *key, size_t key_len, const uint8_t *val,
                       uint32_t val_len, const uint8_t *prev, size_t prev_len) {
  (void)key, (void)key_len, (void)val, (void)val_len, (void)prev, (void)prev_len;
  ++*(int *)arg;
  return 0;
}

static void test_block_malformed_is_rejected(void **state) {
  (void)state;
  block_t b;
  uint8_t tiny[3] = {0};
  assert_int_equal(block_parse(&b, tiny, sizeof tiny), -1);
  uint8_t many[8];
  encode_fixed32(many + 4, 1000); /* more restarts than fit */
  assert_int_equal(block_parse(&b, many, sizeof many), -1);
  /* garbage entries: the cursor reports corruption (never reads out of bounds) */
  rng_t rng;
  rng_init(&rng, 3);
  int corrupt = 0;
  for (int t = 0; t < 2000; t++) {
    uint8_t buf[64];
    for (size_t i = 0; i < sizeof buf; i++) buf[i] = (uint8_t)rng_next(&rng);
    uint32_t nr = 1 + (uint32_t)rng_below(&rng, 3);
    encode_fixed32(buf + sizeof buf - 4, nr);
    if (block_parse(&b, buf, sizeof buf)) continue;
    block_cursor_t c;
    block_cursor_init(&c, &b, bytewise_compare);
    int steps = 0;
    for (block_cursor_seek_first(&c); block_cursor_valid(&c) && steps < 100; block_cursor_next(&c))
      steps++;
    corrupt += block_cursor_corrupt(&c);
    /* the scan by value makes the cursor's checks (a 64-byte block has < 100 entries) */
    int visits = 0;
    uint64_t entries = 0;
    int r = block_scan_value(&b, "", 0, count_visit, &visits, &entries);
    assert_int_equal(r == -1, block_cursor_corrupt(&c));
    block_cursor_seek(&c, "m", 1);
    block_cursor_release(&c);
  }
  assert_true(corrupt > 1000);
  /* handles */
  uint8_t enc[BLOCK_HANDLE_MAX_BYTES];
  block_handle_t h = {UINT64_MAX, 12345}, g;
  uint8_t *end = block_handle_encode(enc, &h);
  assert_ptr_equal(block_handle_decode(enc, end, &g), end);
  assert_true(g.offset == h.offset && g.size == h.size);
  assert_null(block_handle_decode(enc, end - 1, &g));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_block_roundtrip_and_seek),
      cmocka_unit_test(test_block_prefix_compression_saves_space),
      cmocka_unit_test(test_block_trailer_detects_every_flip),
      cmocka_unit_test(test_block_scan_value_visits_exactly_the_matches),
      cmocka_unit_test(test_block_scan_value_skips_to_the_same_visits),
      cmocka_unit_test(test_block_scan_containing_visits_the_needled),
      cmocka_unit_test(test_block_malformed_is_rejected),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

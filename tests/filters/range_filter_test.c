/* Tests of filters/range_filter.h: no false negative for ranges holding a code (inside one
   block of L codes, across two, longer than L, the domain's ends); the false-positive rate
   of empty ranges of L codes against Grafite's bound L / 2^(bits - 2), for uniform ranges and
   for ranges right beside a present code; the memory per code; the encoding round trip and
   its damage checks; the split form (a head in memory, a body read per range) answering as
   the whole filter, and its damage checks; bad parameters. Fixed seeds: the rate bounds below are
   twice the paper's bound, several standard deviations above its expected count. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "filters/range_filter.h"
#include "util/random.h"

#define N 20000
#define BITS 20
#define LOG2 10 /* L = 1,024 codes */

static int by_value(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return (x > y) - (x < y);
}

static uint64_t *sorted_codes(rng_t *rng, size_t n, unsigned spread_bits) {
  uint64_t *c = malloc(n * sizeof *c);
  assert_non_null(c);
  for (size_t i = 0; i < n; i++) c[i] = rng_next(rng) >> (64 - spread_bits);
  qsort(c, n, sizeof *c, by_value);
  return c;
}

/* 1 if a code of c[0, n) (sorted) lies in [lo, hi]. */
static int holds(const uint64_t *c, size_t n, uint64_t lo, uint64_t hi) {
  size_t a = 0, b = n;
  while (a < b) {
    size_t m = a + (b - a) / 2;
    if (c[m] < lo)
      a = m + 1;
    else
      b = m;
  }
  return a < n && c[a] <= hi;
}

static range_filter_t *build(const uint64_t *c, size_t n, unsigned bits, unsigned log2) {
  range_filter_t *f = NULL;
  err_t err;
  err_clear(&err);
  if (range_filter_build(c, n, bits, log2, 0x5eed, &f, &err) != ST_OK) fail_msg("%s", err.msg);
  return f;
}

static void test_no_false_negative(void **state) {
  (void)state;
  rng_t rng;
  rng_init(&rng, 1);
  uint64_t *c = sorted_codes(&rng, N, 40);
  range_filter_t *f = build(c, N, BITS, LOG2);
  for (size_t i = 0; i < N; i++) {
    uint64_t len = rng_below(&rng, (1u << LOG2) * (i % 4 == 0 ? 8 : 1)); /* some over L */
    uint64_t below = rng_below(&rng, len + 1);
    uint64_t lo = c[i] >= below ? c[i] - below : 0;
    assert_true(range_filter_may_contain(f, lo, lo + len));
    assert_true(range_filter_may_contain(f, c[i], c[i]));
  }
  assert_true(range_filter_may_contain(f, 0, UINT64_MAX));
  range_filter_destroy(f);
  free(c);
}

/* The false-positive rate of empty ranges of L codes, uniform (beside = 0) or starting right
   after a present code (beside = 1). */
static double empty_range_fpr(int beside) {
  rng_t rng;
  rng_init(&rng, 2 + (uint64_t)beside);
  uint64_t *c = sorted_codes(&rng, N, 40);
  range_filter_t *f = build(c, N, BITS, LOG2);
  const uint64_t L = 1u << LOG2;
  size_t asked = 0, fp = 0;
  while (asked < 200000) {
    uint64_t lo = beside ? c[rng_below(&rng, N)] + 1 : rng_next(&rng) >> 24;
    if (holds(c, N, lo, lo + L - 1)) continue;
    asked++;
    fp += (size_t)range_filter_may_contain(f, lo, lo + L - 1);
  }
  range_filter_destroy(f);
  free(c);
  return (double)fp / (double)asked;
}

static void test_false_positive_rate_meets_the_bound(void **state) {
  (void)state;
  const double bound = (double)(1u << LOG2) / (double)(1u << (BITS - 2)); /* 0.39% */
  double uniform = empty_range_fpr(0), beside = empty_range_fpr(1);
  print_message(
      "empty ranges of 1,024 codes at %d bits per code: FPR uniform %.4f%%, beside "
      "a code %.4f%%, bound %.4f%%\n",
      BITS, 100 * uniform, 100 * beside, 100 * bound);
  assert_true(uniform <= 2 * bound);
  assert_true(beside <= 2 * bound);
}

static void test_memory_near_bits_per_key(void **state) {
  (void)state;
  rng_t rng;
  rng_init(&rng, 3);
  uint64_t *c = sorted_codes(&rng, N, 48);
  range_filter_t *f = build(c, N, BITS, LOG2);
  double bits = 8.0 * (double)range_filter_memory(f) / (double)range_filter_count(f);
  assert_true(range_filter_count(f) <= N && range_filter_count(f) > N - 10);
  assert_true(bits <= BITS + 2);
  assert_true(8.0 * (double)range_filter_encoded_size(f) / N <= BITS + 0.5);
  range_filter_destroy(f);
  free(c);
}

/* A body in memory, read as a table's file would be: reads counted, one offset can fail. */
typedef struct body {
  const uint8_t *bytes;
  size_t len;
  size_t reads;
  uint64_t fail_at; /* UINT64_MAX: none */
} body_t;

static int read_body(void *arg, uint64_t off, size_t len, void *buf, err_t *err) {
  body_t *b = arg;
  if (off == b->fail_at)
    return err_set(err, ST_E_IO, "read at %llu failed", (unsigned long long)off);
  if (off > b->len || len > b->len - off)
    return err_set(err, ST_E_CORRUPT, "read of %zu bytes at %llu past the body's %zu", len,
                   (unsigned long long)off, b->len);
  memcpy(buf, b->bytes + off, len);
  b->reads++;
  return ST_OK;
}

/* f's head decoded, and its body encoded into *body (the caller frees body->bytes). */
static range_filter_t *split(const range_filter_t *f, body_t *body) {
  size_t hlen = range_filter_head_size(f);
  uint8_t *head = malloc(hlen);
  uint8_t *bytes = malloc(range_filter_body_size(f) + 1);
  assert_non_null(head);
  assert_non_null(bytes);
  range_filter_encode_head(f, head);
  range_filter_encode_body(f, bytes);
  *body = (body_t){bytes, range_filter_body_size(f), 0, UINT64_MAX};
  range_filter_t *h = NULL;
  err_t err;
  err_clear(&err);
  if (range_filter_decode_head(head, hlen, &h, &err) != ST_OK) fail_msg("%s", err.msg);
  free(head);
  assert_false(range_filter_whole(h));
  assert_true(range_filter_whole(f));
  return h;
}

static void test_edges(void **state) {
  (void)state;
  range_filter_t *empty = build(NULL, 0, BITS, LOG2);
  assert_false(range_filter_may_contain(empty, 0, UINT64_MAX));
  range_filter_destroy(empty);

  const uint64_t ends[] = {0, UINT64_MAX, UINT64_MAX, 0};
  range_filter_t *f = build(ends, 4, 8, 4);
  assert_int_equal(range_filter_count(f), 2);
  assert_true(range_filter_may_contain(f, 0, 0));
  assert_true(range_filter_may_contain(f, UINT64_MAX, UINT64_MAX));
  assert_true(range_filter_may_contain(f, UINT64_MAX - 100, UINT64_MAX));
  range_filter_destroy(f);

  /* Repeated codes count once, and the filter they make encodes, decodes and splits to one
     that holds each of them (r is made again from the count of distinct codes). */
  uint64_t rep[300];
  for (int i = 0; i < 300; i++) rep[i] = 1000003ull * (uint64_t)(i % 37);
  f = build(rep, 300, 4, 0);
  assert_int_equal(range_filter_count(f), 37);
  size_t len = range_filter_encoded_size(f);
  uint8_t *buf = malloc(len);
  assert_non_null(buf);
  range_filter_encode(f, buf);
  range_filter_t *g = NULL;
  err_t err;
  err_clear(&err);
  if (range_filter_decode(buf, len, &g, &err) != ST_OK) fail_msg("%s", err.msg);
  body_t body;
  range_filter_t *h = split(f, &body);
  for (int i = 0; i < 37; i++) {
    assert_true(range_filter_may_contain(g, rep[i], rep[i]));
    assert_int_equal(range_filter_ask(h, rep[i], rep[i], read_body, &body, NULL, &err), 1);
  }
  range_filter_destroy(g);
  range_filter_destroy(h);
  range_filter_destroy(f);
  free((void *)body.bytes);
  free(buf);

  /* L = 1: every range is asked code by code (up to the block limit). */
  const uint64_t one[] = {1000};
  f = build(one, 1, 10, 0);
  assert_true(range_filter_may_contain(f, 990, 1010));
  range_filter_destroy(f);
}

static void test_encoding_round_trip_and_damage(void **state) {
  (void)state;
  rng_t rng;
  rng_init(&rng, 4);
  uint64_t *c = sorted_codes(&rng, 5000, 36);
  range_filter_t *f = build(c, 5000, 16, 8);
  size_t len = range_filter_encoded_size(f);
  uint8_t *buf = malloc(len);
  assert_non_null(buf);
  range_filter_encode(f, buf);
  range_filter_t *g = NULL;
  err_t err;
  err_clear(&err);
  assert_int_equal(range_filter_decode(buf, len, &g, &err), ST_OK);
  for (int i = 0; i < 20000; i++) {
    uint64_t lo = rng_next(&rng) >> 28, hi = lo + rng_below(&rng, 600);
    assert_int_equal(range_filter_may_contain(f, lo, hi), range_filter_may_contain(g, lo, hi));
  }
  range_filter_destroy(g);

  /* A flipped bit anywhere is a checksum mismatch; a short buffer is truncated or a mismatch. */
  for (size_t at = 0; at < len; at += 1 + len / 50) {
    buf[at] ^= 0x10;
    assert_int_equal(range_filter_decode(buf, len, &g, &err), ST_E_CORRUPT);
    assert_null(g);
    assert_non_null(strstr(err.msg, "range filter"));
    buf[at] ^= 0x10;
  }
  assert_int_equal(range_filter_decode(buf, len - 9, &g, &err), ST_E_CORRUPT);
  assert_int_equal(range_filter_decode(buf, 5, &g, &err), ST_E_CORRUPT);
  assert_non_null(strstr(err.msg, "truncated"));
  range_filter_destroy(f);
  free(buf);
  free(c);
}

/* The head and its body answer every range exactly as the whole filter does. The head alone
   rules out an empty range of L codes only where the buckets of its high bits that the range's
   h values fall in hold no code: about e^-2 of the uniform ones (a range of L codes mostly
   meets two blocks, each one bucket, each empty with probability e^-1: asserted between 8%
   and 25%), and almost none of those right beside a code (its h value lies right beside the
   code's: asserted at most 5%). Its memory is about 3 bits per code of the 20 (the high bits
   and the select samples). */
static void test_split_answers_as_the_whole(void **state) {
  (void)state;
  rng_t rng;
  rng_init(&rng, 6);
  uint64_t *c = sorted_codes(&rng, N, 40);
  range_filter_t *f = build(c, N, BITS, LOG2);
  body_t body;
  range_filter_t *h = split(f, &body);
  const uint64_t L = 1u << LOG2;
  size_t empty[2] = {0, 0}, unread[2] = {0, 0}; /* uniform, beside a code */
  uint64_t pieces = 0;
  err_t err;
  err_clear(&err);
  for (int i = 0; i < 100000; i++) {
    uint64_t lo = i % 3 == 0   ? c[rng_below(&rng, N)] + 1                  /* beside a code */
                  : i % 3 == 1 ? c[rng_below(&rng, N)] - rng_below(&rng, L) /* holding one */
                               : rng_next(&rng) >> 24;
    uint64_t hi = lo + (i % 7 == 0 ? rng_below(&rng, 8 * L) : L - 1);
    size_t reads = body.reads;
    int want = range_filter_may_contain(f, lo, hi);
    int got = range_filter_ask(h, lo, hi, read_body, &body, &pieces, &err);
    assert_int_equal(got, want);
    if (holds(c, N, lo, hi)) assert_int_equal(got, 1);
    assert_true(body.reads - reads <= 2 * RANGE_FILTER_MAX_BLOCKS);
    if (hi - lo == L - 1 && i % 3 != 1) {
      int kind = i % 3 == 0;
      if (!holds(c, N, lo, hi)) {
        empty[kind]++;
        unread[kind] += body.reads == reads;
      }
    }
    /* Without a reader the head never says no where the whole filter says maybe. */
    if (want) assert_int_equal(range_filter_ask(h, lo, hi, NULL, NULL, NULL, &err), 1);
  }
  assert_int_equal(pieces, body.reads);
  double uniform = (double)unread[0] / (double)empty[0];
  double beside = (double)unread[1] / (double)empty[1];
  double bits = 8.0 * (double)range_filter_memory(h) / (double)N;
  print_message(
      "split: empty ranges of L codes answered from the head alone: %.1f%% of %zu "
      "uniform, %.1f%% of %zu beside a code; head %.2f bits per code in memory\n",
      100 * uniform, empty[0], 100 * beside, empty[1], bits);
  assert_true(uniform >= 0.08 && uniform <= 0.25);
  assert_true(beside <= 0.05);
  assert_true(bits <= 3.2);
  assert_int_equal(range_filter_verify_body(h, read_body, &body, &err), ST_OK);
  range_filter_destroy(h);
  range_filter_destroy(f);
  free((void *)body.bytes);
  free(c);
}

/* A damaged piece is found by its checksum when a range reads it and by verify, naming the
   piece and its offset; a failed read is the range's error; a damaged head does not decode. */
static void test_split_damage(void **state) {
  (void)state;
  rng_t rng;
  rng_init(&rng, 7);
  uint64_t *c = sorted_codes(&rng, 3000, 40);
  range_filter_t *f = build(c, 3000, BITS, LOG2);
  body_t body;
  range_filter_t *h = split(f, &body);
  err_t err;
  err_clear(&err);
  /* Piece 3 damaged: the ranges of the codes whose low bits it holds read it and fail. */
  uint64_t piece = 3, at = piece * range_filter_piece_bytes(f);
  uint8_t *bytes = (uint8_t *)body.bytes;
  bytes[at + 3] ^= 0x04;
  char where[64];
  snprintf(where, sizeof where, "piece %llu at offset %llu", (unsigned long long)piece,
           (unsigned long long)at);
  size_t corrupt = 0, first = 3000;
  for (size_t i = 0; i < 3000; i++) {
    int rc = range_filter_ask(h, c[i], c[i], read_body, &body, NULL, &err);
    if (rc == 1) continue;
    assert_int_equal(rc, ST_E_CORRUPT);
    assert_non_null(strstr(err.msg, "checksum mismatch"));
    assert_non_null(strstr(err.msg, where));
    if (corrupt++ == 0) first = i;
  }
  assert_true(corrupt >= RANGE_FILTER_PIECE / 2 && corrupt <= RANGE_FILTER_PIECE);
  assert_int_equal(range_filter_verify_body(h, read_body, &body, &err), ST_E_CORRUPT);
  assert_non_null(strstr(err.msg, where));
  bytes[at + 3] ^= 0x04;
  assert_int_equal(range_filter_ask(h, c[first], c[first], read_body, &body, NULL, &err), 1);
  body.fail_at = at;
  assert_int_equal(range_filter_ask(h, c[first], c[first], read_body, &body, NULL, &err), ST_E_IO);
  assert_int_equal(range_filter_verify_body(h, read_body, &body, &err), ST_E_IO);
  body.fail_at = UINT64_MAX;
  assert_int_equal(range_filter_verify_body(h, read_body, &body, &err), ST_OK);

  size_t hlen = range_filter_head_size(f);
  uint8_t *head = malloc(hlen);
  assert_non_null(head);
  range_filter_encode_head(f, head);
  range_filter_t *g = NULL;
  for (size_t i = 0; i < hlen; i += 1 + hlen / 40) {
    head[i] ^= 0x20;
    assert_int_equal(range_filter_decode_head(head, hlen, &g, &err), ST_E_CORRUPT);
    assert_null(g);
    head[i] ^= 0x20;
  }
  /* A head is not a whole filter, nor the reverse. */
  assert_int_equal(range_filter_decode(head, hlen, &g, &err), ST_E_CORRUPT);
  assert_non_null(strstr(err.msg, "version 2"));
  free(head);
  range_filter_destroy(h);
  range_filter_destroy(f);
  free(bytes);
  free(c);
}

static void test_bad_parameters(void **state) {
  (void)state;
  range_filter_t *f = NULL;
  err_t err;
  err_clear(&err);
  const uint64_t c[] = {1, 2, 3};
  assert_int_equal(range_filter_build(c, 3, 2, 10, 0, &f, &err), ST_E_INVALID);
  assert_non_null(strstr(err.msg, "bits per key"));
  assert_int_equal(range_filter_build(c, 3, 41, 10, 0, &f, &err), ST_E_INVALID);
  assert_int_equal(range_filter_build(c, 3, 20, 41, 0, &f, &err), ST_E_INVALID);
  assert_null(f);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_no_false_negative),
      cmocka_unit_test(test_false_positive_rate_meets_the_bound),
      cmocka_unit_test(test_memory_near_bits_per_key),
      cmocka_unit_test(test_edges),
      cmocka_unit_test(test_encoding_round_trip_and_damage),
      cmocka_unit_test(test_split_answers_as_the_whole),
      cmocka_unit_test(test_split_damage),
      cmocka_unit_test(test_bad_parameters),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

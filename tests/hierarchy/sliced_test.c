/* sliced_t tests: answers equal probing every filter one by one across capacity growth,
 * slot reuse, batch adds (the 64x64 transpose path), shrinks, retires scrubbed in pieces,
 * adds in pieces, and the copies grown or packed beside the readers; error cases.
 * (The model test in hierarchy_test.c also checks the index against the hierarchy.)
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "filters/bits.h"
#include "hierarchy/sliced.h"
#include "util/random.h"

#define M 1500 /* not a multiple of 64: the last word is partial */
#define NW ((M + 63) / 64)
#define MAXL 700

typedef struct leaves {
  uint64_t words[MAXL][NW];
  int live[MAXL];
} leaves_t;

static void fill(rng_t *r, uint64_t *w, uint32_t nbits) {
  memset(w, 0, NW * sizeof(uint64_t));
  for (uint32_t i = 0; i < nbits; i++) bits_set(w, rng_below(r, M));
}

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

/* A test's start: the generator seeded, no leaf live, an empty index. */
static sliced_t *start(rng_t *r, uint64_t seed, leaves_t **L) {
  rng_init(r, seed);
  *L = calloc(1, sizeof **L);
  assert_non_null(*L);
  sliced_t *s = sliced_create(M);
  assert_non_null(s);
  return s;
}

/* Checks `queries` random probes against the one-by-one oracle; returns positives. */
static size_t check(rng_t *r, const sliced_t *s, const leaves_t *L, int queries) {
  size_t total = 0;
  for (int q = 0; q < queries; q++) {
    probe_t p;
    probe_init(&p, rng_next(r), M, 1 + (uint32_t)rng_below(r, 3));
    u64vec_t out;
    u64vec_init(&out);
    probe_stats_t st = {0};
    assert_int_equal(sliced_search(s, &p, &out, &st), ST_OK);
    assert_int_equal(st.internal_probes, p.k);
    assert_int_equal(st.leaf_positives, out.n);
    if (out.n > 1) qsort(out.v, out.n, sizeof(uint64_t), cmp_u64);
    size_t j = 0;
    for (uint64_t id = 0; id < MAXL; id++) {
      if (!L->live[id] || !bits_test_probe(L->words[id], &p)) continue;
      assert_true(j < out.n);
      assert_int_equal(out.v[j], id);
      j++;
    }
    assert_int_equal(j, out.n);
    total += out.n;
    u64vec_release(&out);
  }
  return total;
}

/* Single adds with growth from 0 to 700 slots (64 -> 1024 capacity), removals that free
   slots in every column word, reuse of the freed slots. */
static void test_sliced_matches_oracle_with_growth_and_reuse(void **state) {
  (void)state;
  rng_t r;
  leaves_t *L;
  sliced_t *s = start(&r, 11, &L);
  size_t positives = 0;
  for (uint64_t id = 0; id < MAXL; id++) {
    fill(&r, L->words[id], 300); /* ~18% of the bits set: queries hit many leaves */
    assert_int_equal(sliced_add(s, id, L->words[id]), ST_OK);
    L->live[id] = 1;
    if (id % 50 == 0) positives += check(&r, s, L, 20);
  }
  assert_true(sliced_size_in_bytes(s) >= (size_t)M * (MAXL / 64) * 8);
  for (uint64_t id = 0; id < MAXL; id += 3) {
    assert_int_equal(sliced_remove(s, id), ST_OK);
    L->live[id] = 0;
  }
  assert_int_equal(sliced_leaf_count(s), MAXL - (MAXL + 2) / 3);
  positives += check(&r, s, L, 200);
  size_t full = sliced_size_in_bytes(s);
  for (uint64_t id = 0; id < MAXL; id += 3) { /* reuse: no growth */
    fill(&r, L->words[id], 300);
    assert_int_equal(sliced_add(s, id, L->words[id]), ST_OK);
    L->live[id] = 1;
  }
  assert_int_equal(sliced_size_in_bytes(s), full);
  positives += check(&r, s, L, 200);
  assert_true(positives > 1000);
  assert_int_equal(sliced_add(s, 5, L->words[5]), ST_E_INVALID);
  assert_int_equal(sliced_remove(s, MAXL + 1), ST_NOT_FOUND);
  assert_false(sliced_contains(s, MAXL + 1));
  assert_true(sliced_contains(s, 5));
  sliced_destroy(s);
  sliced_destroy(NULL);
  free(L);
}

/* sliced_shrink gives back the rows of freed slots: after removing every third leaf the
   capacity becomes the live count rounded up to 8, the live leaves keep answering exactly
   (their slots renumbered, with holes and without), new adds grow it exactly with
   sliced_make_room_exact, and a shrink that frees nothing is a no-op. */
static void test_sliced_shrink_packs_live_slots(void **state) {
  (void)state;
  rng_t r;
  leaves_t *L;
  sliced_t *s = start(&r, 13, &L);
  for (uint64_t id = 0; id < 300; id++) {
    fill(&r, L->words[id], 300);
    assert_int_equal(sliced_add(s, id, L->words[id]), ST_OK);
    L->live[id] = 1;
  }
  assert_true(sliced_capacity(s) > 304); /* grown by eighths */
  for (uint64_t id = 0; id < 300; id += 3) {
    assert_int_equal(sliced_remove(s, id), ST_OK);
    L->live[id] = 0;
  }
  assert_int_equal(sliced_shrink(s), ST_OK);
  assert_int_equal(sliced_leaf_count(s), 200);
  assert_int_equal(sliced_capacity(s), 200);
  assert_int_equal(sliced_free_slots(s), 0);
  size_t positives = check(&r, s, L, 300);
  uint64_t relays = sliced_relay_count(s);
  assert_int_equal(sliced_shrink(s), ST_OK); /* nothing to give back */
  assert_int_equal(sliced_relay_count(s), relays);
  assert_int_equal(sliced_make_room_exact(s, 3), ST_OK);
  assert_int_equal(sliced_capacity(s), 208);
  for (uint64_t id = 0; id < 9; id += 3) {
    fill(&r, L->words[id], 300);
    assert_int_equal(sliced_add(s, id, L->words[id]), ST_OK);
    L->live[id] = 1;
  }
  assert_int_equal(sliced_capacity(s), 208);
  assert_int_equal(sliced_reserve(s, 400), ST_OK); /* no holes: rows copied by bytes */
  assert_int_equal(sliced_capacity(s), 400);
  assert_int_equal(sliced_shrink(s), ST_OK);
  assert_int_equal(sliced_capacity(s), 208);
  positives += check(&r, s, L, 100);
  assert_int_equal(sliced_remove(s, 1), ST_OK); /* holes again */
  L->live[1] = 0;
  for (uint64_t id = 2; id < 20; id += 3) {
    assert_int_equal(sliced_remove(s, id), ST_OK);
    L->live[id] = 0;
  }
  assert_int_equal(sliced_shrink(s), ST_OK);
  assert_int_equal(sliced_capacity(s), 200);
  positives += check(&r, s, L, 300);
  assert_true(positives > 100);
  for (uint64_t id = 0; id < 300; id++)
    if (L->live[id]) assert_int_equal(sliced_remove(s, id), ST_OK);
  assert_int_equal(sliced_shrink(s), ST_OK);
  assert_int_equal(sliced_capacity(s), 0);
  u64vec_t out;
  u64vec_init(&out);
  probe_t p;
  probe_init(&p, 42, M, 3);
  assert_int_equal(sliced_search(s, &p, &out, NULL), ST_OK);
  assert_int_equal(out.n, 0);
  u64vec_release(&out);
  fill(&r, L->words[7], 300);
  assert_int_equal(sliced_add(s, 7, L->words[7]), ST_OK);
  assert_int_equal(sliced_capacity(s), 8);
  sliced_destroy(s);
  free(L);
}

/* sliced_shrink packs 64 slots at a time: hole patterns of every density (one hole in a
   word, a word of holes, a run across words, every other slot, a random tenth) keep each
   live leaf's column exactly, over several rounds of removes, shrinks and re-adds. */
static void test_sliced_shrink_hole_patterns(void **state) {
  (void)state;
  rng_t r;
  leaves_t *L;
  sliced_t *s = start(&r, 17, &L);
  size_t positives = 0;
  for (int round = 0; round < 6; round++) {
    for (uint64_t id = 0; id < MAXL; id++) {
      if (L->live[id]) continue;
      fill(&r, L->words[id], 300);
      assert_int_equal(sliced_add(s, id, L->words[id]), ST_OK);
      L->live[id] = 1;
    }
    for (uint64_t id = 0; id < MAXL; id++) {
      int drop;
      switch (round) {
      case 0: drop = id == 70; break;                    /* one hole */
      case 1: drop = id >= 128 && id < 192; break;       /* one whole word, slot order */
      case 2: drop = id >= 100 && id < 260; break;       /* a run across words */
      case 3: drop = id % 2 == 1; break;                 /* every other */
      case 4: drop = rng_below(&r, 10) == 0; break;      /* a random tenth */
      default: drop = id < MAXL - 1; break;              /* all but the last */
      }
      if (!drop) continue;
      assert_int_equal(sliced_remove(s, id), ST_OK);
      L->live[id] = 0;
    }
    size_t live = sliced_leaf_count(s);
    assert_int_equal(sliced_shrink(s), ST_OK);
    assert_int_equal(sliced_capacity(s), (live + 7) / 8 * 8);
    positives += check(&r, s, L, 150);
  }
  assert_true(positives > 1000);
  sliced_destroy(s);
  free(L);
}

/* Batch adds (transpose path for >= 8 filters per slot word, sparse path below) answer
   exactly like single adds, including into freed slots scattered over the columns. */
static void test_sliced_batch_equals_single(void **state) {
  (void)state;
  rng_t r;
  leaves_t *L;
  sliced_t *s = start(&r, 12, &L);
  assert_int_equal(sliced_reserve(s, 100), ST_OK);
  uint64_t ids[MAXL];
  const uint64_t *w[MAXL];
  for (uint64_t id = 0; id < 500; id++) {
    fill(&r, L->words[id], 200);
    ids[id] = id;
    w[id] = L->words[id];
    L->live[id] = 1;
  }
  assert_int_equal(sliced_add_batch(s, ids, w, 500), ST_OK);
  check(&r, s, L, 300);
  /* Free a scattered set, then refill it (and some new ids) by one batch. */
  size_t n = 0;
  for (uint64_t id = 0; id < 500; id++) {
    if (rng_below(&r, 100) < 30) {
      assert_int_equal(sliced_remove(s, id), ST_OK);
      L->live[id] = 0;
    }
  }
  check(&r, s, L, 100);
  for (uint64_t id = 0; id < MAXL; id++) {
    if (L->live[id]) continue;
    fill(&r, L->words[id], 200);
    ids[n] = id;
    w[n++] = L->words[id];
    L->live[id] = 1;
  }
  assert_int_equal(sliced_add_batch(s, ids, w, n), ST_OK);
  assert_int_equal(sliced_leaf_count(s), MAXL);
  check(&r, s, L, 300);
  /* A batch with a present or repeated id adds nothing. */
  sliced_remove(s, 3);
  sliced_remove(s, 4);
  L->live[3] = L->live[4] = 0;
  uint64_t bad1[3] = {3, 4, 5}, bad2[3] = {3, 4, 3};
  const uint64_t *bw[3] = {L->words[3], L->words[4], L->words[5]};
  assert_int_equal(sliced_add_batch(s, bad1, bw, 3), ST_E_INVALID);
  assert_int_equal(sliced_add_batch(s, bad2, bw, 3), ST_E_INVALID);
  assert_false(sliced_contains(s, 3));
  assert_false(sliced_contains(s, 4));
  assert_int_equal(sliced_leaf_count(s), MAXL - 2);
  check(&r, s, L, 100);
  sliced_destroy(s);
  free(L);
}

/* Retired leaves (sliced_retire): no query reports them while their columns wait; a scrub
   in pieces of one row clears every retired column and nothing else, and its slots are then
   free, reused by adds without growth. Retired slots that a shrink finds are dropped. */
static void test_sliced_retire_then_scrub_in_pieces(void **state) {
  (void)state;
  rng_t r;
  leaves_t *L;
  sliced_t *s = start(&r, 41, &L);
  for (uint64_t id = 0; id < 300; id++) {
    fill(&r, L->words[id], 20 + (uint32_t)rng_below(&r, 300));
    assert_int_equal(sliced_add(s, id, L->words[id]), ST_OK);
    L->live[id] = 1;
  }
  size_t cap = sliced_capacity(s);
  uint64_t relays = sliced_relay_count(s);
  for (int round = 0; round < 3; round++) {
    size_t retired = 0;
    for (uint64_t id = 0; id < 300; id++) {
      if (!L->live[id] || rng_below(&r, 4) != 0) continue;
      assert_int_equal(sliced_retire(s, id), ST_OK);
      L->live[id] = 0;
      retired++;
    }
    assert_int_equal(sliced_retire(s, 100000), ST_NOT_FOUND);
    assert_int_equal(sliced_retired(s), retired);
    assert_int_equal(sliced_free_slots(s), cap - sliced_leaf_count(s) - retired);
    assert_true(check(&r, s, L, 150) > 0); /* the retired are masked out, the rest found */
    uint64_t row = 0, pieces = 0;
    do {
      row = sliced_scrub(s, row, 1); /* a row a piece */
      pieces++;
      if (row < M && pieces % 100 == 0) (void)check(&r, s, L, 5); /* exact between pieces */
    } while (row < M);
    assert_int_equal(pieces, M);
    sliced_scrub_done(s);
    assert_int_equal(sliced_retired(s), 0);
    assert_int_equal(sliced_free_slots(s), cap - sliced_leaf_count(s));
    /* The free slots' columns are all zero: every row holds only live slots' bits. */
    const uint8_t *rows;
    size_t rb, slots;
    const uint64_t *ids;
    sliced_rows(s, &rows, &rb, &slots, &ids);
    for (size_t slot = 0; slot < slots; slot++) {
      if (sliced_slot_live(s, slot)) continue;
      for (size_t j = 0; j < M; j++) assert_int_equal(rows[j * rb + slot / 8] >> (slot % 8) & 1, 0);
    }
    /* The slots come back to new leaves: no growth. */
    for (uint64_t id = 300 + 100 * (uint64_t)round, n = 0; n < retired; id++, n++) {
      fill(&r, L->words[id], 20 + (uint32_t)rng_below(&r, 300));
      assert_int_equal(sliced_add(s, id, L->words[id]), ST_OK);
      L->live[id] = 1;
    }
    assert_int_equal(sliced_capacity(s), cap);
    assert_int_equal(sliced_relay_count(s), relays);
    assert_true(check(&r, s, L, 150) > 0);
  }
  /* A shrink drops retired slots with the free ones. */
  for (uint64_t id = 0; id < MAXL; id++)
    if (L->live[id] && id % 3 == 0) {
      assert_int_equal(sliced_retire(s, id), ST_OK);
      L->live[id] = 0;
    }
  assert_int_equal(sliced_shrink(s), ST_OK);
  assert_int_equal(sliced_retired(s), 0);
  assert_int_equal(sliced_capacity(s), (sliced_leaf_count(s) + 7) / 8 * 8);
  assert_true(check(&r, s, L, 150) > 0);
  sliced_destroy(s);
  free(L);
}

/* The copies made beside the readers: sliced_regrown answers as its source with room for
   more (adds up to it re-lay nothing; freed slots are reused, and retired slots stay
   masked), and sliced_packed as sliced_shrink's result, with the same capacity; neither
   changes its source. */
static void test_sliced_copies_match_in_place(void **state) {
  (void)state;
  rng_t r;
  leaves_t *L;
  sliced_t *s = start(&r, 53, &L);
  for (uint64_t id = 0; id < 200; id++) {
    fill(&r, L->words[id], 20 + (uint32_t)rng_below(&r, 300));
    assert_int_equal(sliced_add(s, id, L->words[id]), ST_OK);
    L->live[id] = 1;
  }
  for (uint64_t id = 0; id < 200; id += 7) { /* free slots */
    assert_int_equal(sliced_remove(s, id), ST_OK);
    L->live[id] = 0;
  }
  for (uint64_t id = 3; id < 200; id += 11) { /* retired slots */
    if (!L->live[id]) continue;
    assert_int_equal(sliced_retire(s, id), ST_OK);
    L->live[id] = 0;
  }
  size_t cap = sliced_capacity(s), live = sliced_leaf_count(s), freed = sliced_free_slots(s);
  size_t want = sliced_room_capacity(s, freed + 100);
  assert_true(want > cap);
  assert_int_equal(want % 8, 0);
  sliced_t *g = sliced_regrown(s, want);
  assert_non_null(g);
  assert_int_equal(sliced_capacity(s), cap); /* the source as it was */
  assert_int_equal(sliced_capacity(g), want);
  assert_int_equal(sliced_leaf_count(g), live);
  assert_int_equal(sliced_retired(g), sliced_retired(s));
  assert_int_equal(sliced_relay_count(g), sliced_relay_count(s) + 1);
  (void)check(&r, s, L, 100);
  assert_true(check(&r, g, L, 150) > 0);
  uint64_t relays = sliced_relay_count(g);
  for (uint64_t id = 200; id < 200 + freed + 100 - sliced_retired(g); id++) {
    fill(&r, L->words[id], 20 + (uint32_t)rng_below(&r, 300));
    assert_int_equal(sliced_add(g, id, L->words[id]), ST_OK);
    L->live[id] = 1;
  }
  assert_int_equal(sliced_relay_count(g), relays);
  assert_true(check(&r, g, L, 150) > 0);
  sliced_destroy(s);
  /* Packed against shrunk in place, from the same leaves. */
  for (uint64_t id = 0; id < MAXL; id += 3)
    if (L->live[id]) {
      assert_int_equal(sliced_remove(g, id), ST_OK);
      L->live[id] = 0;
    }
  sliced_t *p = sliced_packed(g);
  assert_non_null(p);
  assert_true(check(&r, g, L, 100) > 0);
  assert_int_equal(sliced_shrink(g), ST_OK);
  assert_int_equal(sliced_capacity(p), sliced_capacity(g));
  assert_int_equal(sliced_leaf_count(p), sliced_leaf_count(g));
  assert_true(check(&r, p, L, 150) > 0);
  assert_null(sliced_packed(p)); /* nothing left to give back */
  sliced_destroy(p);
  sliced_destroy(g);
  free(L);
}

/* An add in pieces (sliced_add_begin, _words, _end): the slot is neither reported nor free
   until the end, whatever words are in; then the leaf answers as one added whole. */
static void test_sliced_add_in_pieces(void **state) {
  (void)state;
  rng_t r;
  leaves_t *L;
  sliced_t *s = start(&r, 67, &L);
  for (uint64_t id = 0; id < 120; id++) {
    fill(&r, L->words[id], 20 + (uint32_t)rng_below(&r, 300));
    if (id % 2 == 0) { /* every other one whole, to compare */
      assert_int_equal(sliced_add(s, id, L->words[id]), ST_OK);
      L->live[id] = 1;
      continue;
    }
    size_t slot, other;
    assert_int_equal(sliced_add_begin(s, id, &slot), ST_OK);
    assert_int_equal(sliced_add_begin(s, 5000, &other), ST_E_INVALID); /* one at a time */
    assert_false(sliced_contains(s, id));
    assert_int_equal(sliced_free_slots(s), sliced_capacity(s) - sliced_leaf_count(s) - 1);
    for (size_t w = 0; w < NW; w += 3) {
      sliced_add_words(s, L->words[id], w, w + 3);
      (void)check(&r, s, L, 2); /* the half-filled column is never reported */
    }
    sliced_add_end(s);
    L->live[id] = 1;
    assert_true(sliced_contains(s, id));
  }
  assert_int_equal(sliced_leaf_count(s), 120);
  assert_true(check(&r, s, L, 200) > 0);
  sliced_destroy(s);
  free(L);
}

static void test_sliced_empty(void **state) {
  (void)state;
  sliced_t *s = sliced_create(M);
  assert_null(sliced_create(0));
  probe_t p;
  probe_init(&p, 42, M, 3);
  u64vec_t out;
  u64vec_init(&out);
  assert_int_equal(sliced_search(s, &p, &out, NULL), ST_OK);
  assert_int_equal(out.n, 0);
  assert_int_equal(sliced_leaf_count(s), 0);
  /* An all-ones filter says maybe to everything. */
  uint64_t ones[NW];
  memset(ones, 0xff, sizeof ones);
  ones[NW - 1] = (1ull << (M % 64)) - 1;
  assert_int_equal(sliced_add(s, 9, ones), ST_OK);
  assert_int_equal(sliced_search(s, &p, &out, NULL), ST_OK);
  assert_int_equal(out.n, 1);
  assert_int_equal(out.v[0], 9);
  assert_int_equal(sliced_remove(s, 9), ST_OK);
  out.n = 0;
  assert_int_equal(sliced_search(s, &p, &out, NULL), ST_OK);
  assert_int_equal(out.n, 0);
  u64vec_release(&out);
  sliced_destroy(s);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_sliced_empty),
      cmocka_unit_test(test_sliced_matches_oracle_with_growth_and_reuse),
      cmocka_unit_test(test_sliced_batch_equals_single),
      cmocka_unit_test(test_sliced_shrink_hole_patterns),
      cmocka_unit_test(test_sliced_shrink_packs_live_slots),
      cmocka_unit_test(test_sliced_retire_then_scrub_in_pieces),
      cmocka_unit_test(test_sliced_copies_match_in_place),
      cmocka_unit_test(test_sliced_add_in_pieces),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

/* value_index_t under an applier and searches at once (the own engine's background thread
 * applies the queue while searches select tables, value_index_set_applier).
 *
 * The lean layout applies a batch piece by piece, each piece under the write lock alone: a
 * remove, the plan of the adds (which may grow a fold group or open one), an add, a group's
 * shrink. Between two pieces searches run. Stable tables, each holding values of its own, are
 * added first and never removed; the applier churns other tables of many sizes (so that
 * groups grow, open and give slots back, moving the stable tables' slots) for ROUNDS rounds.
 * Searching threads probe a stable table's value over the stable tables all the while: that
 * table must be selected every time (no false negative between two pieces), and a search
 * with an applier never applies the queue itself. Bounded by rounds, not by time.
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

#include <cmocka.h>

#include "index/value_index.h"
#include "tests/test_util.h"
#include "util/random.h"

#define M 8192
#define K 3
#define SEED 0x5eedull
#define LEAN_BITS 10
#define STABLE 40      /* tables 1..STABLE, never removed */
#define PER_STABLE 6   /* values of a stable table (its own: STABLE * PER_STABLE distinct) */
#define ROUNDS 150     /* the applier's batches */
#define CHURN_ADDS 6   /* tables added per batch */
#define SEARCHERS 2
#define CHURN_BASE 1000 /* churn tables are numbered from here */

static value_index_t *g_vi;
static atomic_int g_done;
static atomic_ullong g_misses, g_searches;

static uint64_t stable_value(uint64_t t, uint64_t j) {
  return 1000000 + t * PER_STABLE + j;
}

/* A filter of n random values, of a range no stable value is in. */
static value_filter_t *filter_of(rng_t *r, uint32_t n) {
  value_filter_t *f = value_filter_create(M, K, SEED);
  assert_non_null(f);
  for (uint32_t i = 0; i < n; i++) {
    uint64_t v = rng_below(r, 500000);
    value_filter_add(f, &v, sizeof v);
  }
  return f;
}

/* value_index_select over the one table `number` for value v: its scan flag. */
static uint8_t select_one(value_index_t *vi, uint64_t v, uint64_t number) {
  probe_t pr;
  value_index_probe(vi, &v, sizeof v, &pr);
  uint8_t scan = 9;
  err_t err;
  assert_int_equal(value_index_select(vi, value_index_by_sliced, &pr, &number, 1, &scan, NULL, &err),
                   BFH_OK);
  return scan;
}

static void *searcher(void *arg) {
  rng_t r;
  rng_init(&r, (uint64_t)(uintptr_t)arg);
  uint64_t numbers[STABLE];
  for (uint64_t t = 0; t < STABLE; t++) numbers[t] = t + 1;
  uint8_t scan[STABLE];
  while (!atomic_load(&g_done)) {
    uint64_t t = 1 + rng_below(&r, STABLE), v = stable_value(t, rng_below(&r, PER_STABLE));
    probe_t pr;
    value_index_probe(g_vi, &v, sizeof v, &pr);
    err_t err;
    int rc = value_index_select(g_vi, value_index_by_sliced, &pr, numbers, STABLE, scan, NULL,
                                &err);
    if (rc != BFH_OK || !scan[t - 1]) atomic_fetch_add(&g_misses, 1);
    atomic_fetch_add(&g_searches, 1);
  }
  return NULL;
}

static void test_value_index_applier_pieces_never_lose_a_table(void **state) {
  (void)state;
  value_index_params_t p = {M, K, SEED, 3, 0, HIERARCHY_SIMILARITY, 0, NULL, LEAN_BITS, 0};
  err_t err;
  g_vi = value_index_create(&p, &err);
  assert_non_null(g_vi);
  value_index_set_applier(g_vi, 1);
  rng_t r;
  rng_init(&r, 7);
  for (uint64_t t = 1; t <= STABLE; t++) {
    value_filter_t *f = filter_of(&r, (uint32_t)(20 + rng_below(&r, 200)));
    for (uint64_t j = 0; j < PER_STABLE; j++) {
      uint64_t v = stable_value(t, j);
      value_filter_add(f, &v, sizeof v);
    }
    assert_int_equal(value_index_add(g_vi, t, f, NULL, 0, &err), BFH_OK);
  }
  assert_int_equal(value_index_apply(g_vi, &err), BFH_OK);
  atomic_store(&g_done, 0);
  atomic_store(&g_misses, 0);
  atomic_store(&g_searches, 0);
  pthread_t th[SEARCHERS];
  for (uintptr_t i = 0; i < SEARCHERS; i++)
    assert_int_equal(pthread_create(&th[i], NULL, searcher, (void *)(i + 11)), 0);

  uint64_t live[ROUNDS * CHURN_ADDS], nlive = 0, next = CHURN_BASE;
  uint64_t groups_seen = 0, shrinks = 0, row_bits = 0;
  for (int round = 0; round < ROUNDS; round++) {
    /* Sizes from a few values to thousands: several fold groups, grown and opened. */
    for (int i = 0; i < CHURN_ADDS; i++) {
      uint32_t n = (uint32_t)(round % 3 == 0 ? 2000 + rng_below(&r, 2000) : 5 + rng_below(&r, 400));
      assert_int_equal(value_index_add(g_vi, next, filter_of(&r, n), NULL, 0, &err), BFH_OK);
      live[nlive++] = next++;
    }
    /* Removes: most of the live churn tables every few rounds, so groups give slots back. */
    size_t drop = round % 4 == 3 ? nlive - nlive / 5 : rng_below(&r, CHURN_ADDS);
    for (size_t i = 0; i < drop && nlive; i++) {
      size_t at = rng_below(&r, nlive);
      assert_int_equal(value_index_remove(g_vi, live[at]), BFH_OK);
      live[at] = live[--nlive];
    }
    assert_int_equal(value_index_apply(g_vi, &err), BFH_OK);
    value_index_stats_t st;
    value_index_get_stats(g_vi, &st);
    if (st.sliced_groups > groups_seen) groups_seen = st.sliced_groups;
    shrinks += st.sliced_row_bits < row_bits; /* a group gave rows back */
    row_bits = st.sliced_row_bits;
  }
  /* The searches ran between the pieces of the applies, and never applied the queue: a
     table queued and not applied is still pending after a search. */
  atomic_store(&g_done, 1);
  for (int i = 0; i < SEARCHERS; i++) pthread_join(th[i], NULL);
  assert_int_equal(value_index_add(g_vi, next, filter_of(&r, 10), NULL, 0, &err), BFH_OK);
  assert_int_equal(select_one(g_vi, stable_value(1, 0), 1), 1);
  assert_int_equal(value_index_pending(g_vi), 1);
  assert_int_equal(value_index_apply(g_vi, &err), BFH_OK);
  assert_int_equal(value_index_pending(g_vi), 0);

  unsigned long long searches = atomic_load(&g_searches), misses = atomic_load(&g_misses);
  print_message("searches %llu misses %llu, fold groups up to %llu, applies that gave rows back %llu\n",
                searches, misses, (unsigned long long)groups_seen, (unsigned long long)shrinks);
  assert_int_equal(misses, 0);
  assert_true(searches > 0);
  assert_true(groups_seen >= 2); /* the churn did reorganize the slices */
  assert_true(shrinks > 0);
  if (value_index_validate(g_vi, &err) != BFH_OK) fail_msg("validate: %s", err.msg);
  value_index_destroy(g_vi);
}

/* The paper's layout settles its tree in a query: an applier changes nothing there. */
static void test_value_index_applier_paper_layout_applies_in_queries(void **state) {
  (void)state;
  value_index_params_t p = {M, K, SEED, 3, 0, HIERARCHY_SIMILARITY, 0, NULL, 0, 0};
  err_t err;
  value_index_t *vi = value_index_create(&p, &err);
  assert_non_null(vi);
  value_index_set_applier(vi, 1);
  rng_t r;
  rng_init(&r, 3);
  assert_int_equal(value_index_add(vi, 5, filter_of(&r, 50), NULL, 0, &err), BFH_OK);
  (void)select_one(vi, 1, 5);
  assert_int_equal(value_index_pending(vi), 0);
  value_index_destroy(vi);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_value_index_applier_pieces_never_lose_a_table),
      cmocka_unit_test(test_value_index_applier_paper_layout_applies_in_queries),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

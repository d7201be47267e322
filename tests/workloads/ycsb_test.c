/* Tests of workloads/ycsb.h: each workload's operation shares over 200,000 operations
   (within 1 percentage point, fixed seed), records always below the count so far, inserts
   numbered in order, latest's reads near the newest records, ranges of 1..YCSB_MAX_RANGE;
   under E's inserts the zipfian's hottest record stays the hottest, and latest's moves to
   each record inserted. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <string.h>

#include "workloads/ycsb.h"

#define OPS 200000

static void test_mixes(void **state) {
  (void)state;
  for (const char *w = "ABCDEF"; *w; w++) {
    const ycsb_mix_t *mix = ycsb_mix(*w);
    assert_non_null(mix);
    ycsb_gen_t g;
    const uint64_t loaded = 10000;
    ycsb_gen_init(&g, mix, loaded, OPS, 42);
    uint64_t count[YCSB_OPS] = {0}, next_insert = loaded, near_newest = 0, reads = 0;
    for (int i = 0; i < OPS; i++) {
      uint64_t rec;
      uint32_t span;
      ycsb_op_t op = ycsb_gen_next(&g, &rec, &span);
      count[op]++;
      if (op == YCSB_INSERT) {
        assert_int_equal(rec, next_insert++);
      } else {
        assert_true(rec < g.records);
        reads++;
        near_newest += rec + 100 >= g.records;
      }
      if (op == YCSB_RANGE) assert_true(span >= 1 && span <= YCSB_MAX_RANGE);
      else assert_int_equal(span, 1);
    }
    for (int op = 0; op < YCSB_OPS; op++)
      if (fabs((double)count[op] / OPS - mix->share[op]) > 0.01)
        fail_msg("workload %c: %s %.3f, not %.3f", *w, ycsb_op_name((ycsb_op_t)op),
                 (double)count[op] / OPS, mix->share[op]);
    assert_int_equal(g.records, next_insert);
    if (*w == 'D') assert_true(near_newest > reads / 2); /* latest: most reads hit the newest */
    else assert_true(near_newest < reads / 10);
  }
  assert_null(ycsb_mix('G'));
  assert_ptr_equal(ycsb_mix('a'), ycsb_mix('A'));
}

static uint32_t seen[20000]; /* per record, the draws of the last call of hottest() */

/* The record drawn most often among `draws` reads of g (inserts skipped); seen[] counts them. */
static uint64_t hottest(ycsb_gen_t *g, int draws) {
  memset(seen, 0, sizeof seen);
  uint64_t best = 0;
  for (int i = 0; i < draws;) {
    uint64_t rec;
    uint32_t span;
    if (ycsb_gen_next(g, &rec, &span) == YCSB_INSERT) continue;
    assert_true(rec < 20000);
    if (++seen[rec] > seen[best]) best = rec;
    i++;
  }
  return best;
}

/* E's zipfian over 10,000 records with 0.05 x 100,000 inserts expected (a space of 20,000):
   Zipf(0.99)'s first ranks draw 1 / zeta(20,000) = 9.6% and half that of the reads, and
   the hottest record of the first 50,000 reads still draws at least 2% of the next 50,000,
   about 2,600 inserts later. Were the space to grow with each insert, the scrambled ranks
   would land on other records at every insert and no record would keep 0.1%. (A record
   inserted later may become the hottest: its rank can lie past the records loaded.) */
static void test_zipfian_keeps_hot_records(void **state) {
  (void)state;
  ycsb_gen_t g;
  ycsb_gen_init(&g, ycsb_mix('E'), 10000, 100000, 7);
  const uint64_t first = hottest(&g, 50000);
  assert_true(seen[first] >= 2500);
  const uint64_t records = g.records;
  hottest(&g, 50000);
  assert_true(g.records > records + 2000);
  assert_true(seen[first] >= 1000);
}

/* D's latest: after each insert the newest record is the likeliest (Zipf's top rank, about
   10% of 10,000 draws at 10,000 records), so the hottest of the reads between inserts is
   the record just inserted. */
static void test_latest_follows_inserts(void **state) {
  (void)state;
  ycsb_gen_t g;
  ycsb_gen_init(&g, ycsb_mix('D'), 10000, 0, 11);
  for (int round = 0; round < 3; round++) {
    uint64_t rec;
    uint32_t span;
    while (ycsb_gen_next(&g, &rec, &span) != YCSB_INSERT) {
    }
    assert_int_equal(rec, g.records - 1);
    ycsb_gen_t reads = g; /* the reads that follow, with no insert between */
    reads.mix.share[YCSB_INSERT] = 0;
    reads.mix.share[YCSB_NEWEST] = 1;
    assert_int_equal(hottest(&reads, 10000), rec);
    assert_true(seen[rec] >= 500);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_mixes),
                                     cmocka_unit_test(test_zipfian_keeps_hot_records),
                                     cmocka_unit_test(test_latest_follows_inserts)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}

/* Tests of workloads/ycsb.h: each workload's operation shares over 200,000 operations
   (within 1 percentage point, fixed seed), records always below the count so far, inserts
   numbered in order, latest's reads near the newest records, ranges of 1..YCSB_MAX_RANGE. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>

#include "workloads/ycsb.h"

#define OPS 200000

static void test_mixes(void **state) {
  (void)state;
  for (const char *w = "ABCDEF"; *w; w++) {
    const ycsb_mix_t *mix = ycsb_mix(*w);
    assert_non_null(mix);
    ycsb_gen_t g;
    const uint64_t loaded = 10000;
    ycsb_gen_init(&g, mix, loaded, 42);
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

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_mixes)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}

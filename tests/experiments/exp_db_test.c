/* Tests of experiments/exp_db.c's kept databases: a build an earlier run left with --keep is
 * found again by exp_db_kept, with the times recorded when it was built and the counts of a
 * fresh open, so that Fig. 6 can resume a size whose two builds do not fit in one sitting; a
 * build of other parameters, a run without --keep, or a marker naming another identity finds
 * nothing. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "experiments/exp.h"
#include "tests/test_util.h"

#define N 20000

static void kept_after_get(void **state) {
  (void)state;
  char work[4096];
  assert_int_equal(test_tmpdir_create(work, sizeof work, "exp_db"), 0);
  exp_ctx_t x = {
      .scale = EXP_SMALL, .engine = BFH_ENGINE_LSM, .work_dir = work, .queries = 5, .keep_db = 1};
  exp_db_params_t p;
  exp_db_params_init(&p, &x, N);
  p.value_filters = 1;

  char dir[1200], again[1200];
  exp_build_result_t b = {0}, k = {0};
  assert_int_equal(exp_db_kept(&x, &p, again, sizeof again, &k), 0); /* nothing built yet */
  assert_int_equal(exp_db_get(&x, &p, dir, sizeof dir, &b), BFH_OK);
  assert_true(b.total_s > 0);

  assert_int_equal(exp_db_kept(&x, &p, again, sizeof again, &k), 1);
  assert_string_equal(again, dir);
  assert_true(k.total_s == b.total_s ||
              (k.total_s > 0.999999 * b.total_s && k.total_s < 1.000001 * b.total_s)); /* %.9g */
  assert_true(k.have_stats);
  assert_true(k.stats.tables > 0);
  assert_int_equal(k.stats.leaf_filters, k.stats.tables); /* opened with its value filters */

  exp_db_params_t other = p;
  other.value_filters = 0; /* another identity: another directory, not built */
  assert_int_equal(exp_db_kept(&x, &other, again, sizeof again, &k), 0);

  x.keep_db = 0; /* a run without --keep rebuilds */
  assert_int_equal(exp_db_kept(&x, &p, again, sizeof again, &k), 0);
  x.keep_db = 1;

  char mark[1400];
  snprintf(mark, sizeof mark, "%s/BFH-EXP-BUILT", dir);
  FILE *f = fopen(mark, "w");
  assert_non_null(f);
  fprintf(f, "lsm-n1-other\n1.0 0.5\n"); /* a marker of another identity */
  fclose(f);
  assert_int_equal(exp_db_kept(&x, &p, again, sizeof again, &k), 0);

  x.keep_db = 0;
  exp_db_cleanup(&x);
  test_rmrf(work);
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(kept_after_get)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}

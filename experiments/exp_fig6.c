/* Fig. 6: database creation time with and without value filters, per N.
 *
 * Paper: "very similar" (LevelDB, filters filled while the table builder runs). Ours: the
 * same workload loaded with opt.value_filters = 0 and 1, alternating, `reps` times each (3
 * up to 3M entries, 1 above); the row gives the median (its quartiles, min and max) of the
 * insert time (puts + final flush) and, on the value_filters = 1 row, the overhead relative to the
 * 0 row of the same N, from the medians and from the minima (the minimum is the less noisy on a
 * shared machine). The last database of each kind is kept as the one the other artifacts use
 * at that N (exp_db_adopt), so `bfh run all` runs Fig. 6 first.
 *
 * With one build per kind and --keep, a database an earlier run kept gives its recorded time
 * instead of a new build (exp_db_kept): at 500M each build takes over two hours, and a run
 * cut short after the first resumes at the second.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "experiments/drivers.h"
#include "experiments/exp.h"

int exp_fig6(const exp_ctx_t *x) {
  static const uint64_t small[] = {100000, 300000, 1000000, 0};
  static const uint64_t medium[] = {1000000, 3000000, 10000000, 0};
  static const uint64_t paper[] = {10000000, 50000000, 100000000, 500000000, 0};
  const uint64_t *ns = exp_sizes(x, paper, medium, small);

  const char *extra[] = {"value_filters", "reps",         "insert_s",         "insert_min_s",
                         "insert_max_s",  "insert_q1_s",  "insert_q3_s",      "put_s",
                         "flush_s",       "overhead_pct", "overhead_min_pct", NULL};
  const char *cols[64];
  exp_cols_cat(cols, 64, EXP_DB_COLS, extra, (const char *const *)NULL);
  exp_csv_t *csv = exp_csv_open_subset(x, "fig6", cols, EXP_CSV_KEY_N);
  if (!csv) return -1;
  int rc = 0;
  for (size_t i = 0; ns[i] && rc == 0; i++) {
    if (!exp_size_wanted(x, ns[i])) continue;
    /* Three alternating builds of each kind up to 3M entries, one above: at 10M a build
       takes half a minute, and the paper's sizes take many minutes each. */
    const int reps = ns[i] <= 3000000 ? 3 : 1;
    double tot[2][8], put[2][8], fl[2][8];
    uint64_t tables[2] = {0, 0}; /* of the last build of each kind */
    exp_db_params_t p[2];
    for (int r = 0; r < reps && rc == 0; r++) {
      for (int vf = 0; vf < 2 && rc == 0; vf++) {
        exp_db_params_init(&p[vf], x, ns[i]);
        p[vf].value_filters = vf;
        char dir[1200];
        snprintf(dir, sizeof dir, "%s/fig6-%llu-%d", x->work_dir, (unsigned long long)ns[i], vf);
        exp_build_result_t b = {0};
        char kept[1200];
        if (reps == 1 && exp_db_kept(x, &p[vf], kept, sizeof kept, &b)) {
          fprintf(stderr, "bfh: fig6 at N=%llu: the time recorded with %s, not a new build\n",
                  (unsigned long long)ns[i], kept);
          tot[vf][r] = b.total_s;
          put[vf][r] = b.put_s;
          fl[vf][r] = b.flush_s;
          if (b.have_stats) tables[vf] = b.stats.tables;
          continue;
        }
        if (exp_db_build(x, &p[vf], dir, &b) != BFH_OK) rc = -1;
        tot[vf][r] = b.total_s;
        put[vf][r] = b.put_s;
        fl[vf][r] = b.flush_s;
        /* The last build of each kind is the database the other artifacts use at this N
           (without filters: Table I's; with: Table II's and Fig. 8's). */
        if (rc == 0 && r == reps - 1) {
          if (b.have_stats) tables[vf] = b.stats.tables;
          if (exp_db_adopt(x, &p[vf], dir, &b) != BFH_OK) rc = -1;
        } else {
          exp_db_drop(x, dir);
        }
      }
    }
    if (rc) break;
    double med[2], mins[2];
    for (int vf = 0; vf < 2; vf++) {
      double ptmp[8], ftmp[8];
      memcpy(ptmp, put[vf], sizeof ptmp);
      memcpy(ftmp, fl[vf], sizeof ftmp);
      exp_times_sort(tot[vf], (size_t)reps);
      exp_times_sort(ptmp, (size_t)reps);
      exp_times_sort(ftmp, (size_t)reps);
      med[vf] = tot[vf][(reps - 1) / 2];
      exp_csv_db_params(csv, x, &p[vf]);
      exp_csv_u64(csv, "value_filters", (uint64_t)vf);
      if (tables[vf]) /* without value filters no bits per value */
        exp_csv_shape(csv, (double)ns[i] / (double)tables[vf], vf ? p[vf].m : 0);
      exp_csv_u64(csv, "reps", (uint64_t)reps);
      exp_csv_dbl(csv, "insert_s", med[vf]);
      exp_csv_dbl(csv, "insert_min_s", tot[vf][0]);
      exp_csv_dbl(csv, "insert_max_s", tot[vf][reps - 1]);
      exp_csv_dbl(csv, "insert_q1_s", exp_times_quantile(tot[vf], (size_t)reps, 0.25));
      exp_csv_dbl(csv, "insert_q3_s", exp_times_quantile(tot[vf], (size_t)reps, 0.75));
      exp_csv_dbl(csv, "put_s", ptmp[(reps - 1) / 2]);
      exp_csv_dbl(csv, "flush_s", ftmp[(reps - 1) / 2]);
      mins[vf] = tot[vf][0];
      if (vf == 1 && med[0] > 0) exp_csv_dbl(csv, "overhead_pct", 100.0 * (med[1] / med[0] - 1));
      if (vf == 1 && mins[0] > 0)
        exp_csv_dbl(csv, "overhead_min_pct", 100.0 * (mins[1] / mins[0] - 1));
      exp_csv_row(csv);
    }
  }
  if (exp_csv_close(csv) != 0) rc = -1;
  if (rc == 0) rc = exp_plot(x, "fig6");
  return rc;
}

/* Fig. 8: non-key search time vs N for the SSTable scan, the classical Bloom scan (every
 * leaf filter probed; leaves on disk as in the paper, and in memory), the hierarchy scan and
 * the bit-sliced index.
 *
 * Paper: N = 10M, 50M, 100M, 500M, m = 2M, d = 5, leaves on disk, internal nodes in RAM:
 * scan and classical Bloom scan indistinguishable, hierarchy far faster, FPR < 0.1%.
 * Ours: medium and paper scales use the paper's geometry; small scale shrinks it by 10
 * (tables of 200 KiB, m = 200k bits: the paper's table count and filter bits per entry at
 * N/10). Each database is searched with leaves in memory and, after reopens, on disk: k
 * words read per probe (ours) and the whole filter read per probe (the paper's classical Bloom
 * scan); with --cold every point is measured again from storage. --series, --cache and
 * --cold-queries measure a subset of the rows (exp_measure_methods), which replaces only those
 * rows of fig8.csv: the 500M point runs in pieces. Besides the medians over drawn present and
 * absent values, every series searches the paper's own query, Value187719, x->queries times
 * (rows with query "fixed"; not at the small scale's 100k, which does not hold it).
 */
#include <stdio.h>
#include <string.h>

#include "experiments/drivers.h"
#include "experiments/exp.h"

int exp_fig8(const exp_ctx_t *x) {
  static const uint64_t small[] = {100000, 250000, 500000, 1000000, 0};
  static const uint64_t medium[] = {1000000, 3000000, 10000000, 0};
  static const uint64_t paper[] = {10000000, 50000000, 100000000, 500000000, 0};
  const uint64_t *ns = exp_sizes(x, paper, medium, small);
  const double shrink = x->scale == EXP_SMALL ? 10 : 1;
  /* The paper's one query (the authors' code searches Value187719), its own rows at every N
     that holds it: query "fixed", fixed_value 187719 (Fig. 8's other rows are the medians over
     drawn values). */
  static const uint64_t fixed = 187719;
  const char *extra[] = {"series", "fixed_value", NULL};
  const char *cols[64];
  exp_cols_cat(cols, 64, EXP_DB_COLS, EXP_SEARCH_COLS, extra, (const char *const *)NULL);
  exp_csv_t *csv =
      exp_csv_open_subset(x, "fig8", cols, EXP_CSV_KEY_SERIES | EXP_CSV_KEY_CACHE | EXP_CSV_KEY_N);
  if (!csv) return -1;
  int rc = 0;
  for (size_t i = 0; ns[i] && rc == 0; i++) {
    if (!exp_size_wanted(x, ns[i])) continue;
    exp_db_params_t p;
    exp_db_params_init(&p, x, ns[i]);
    exp_db_params_shrink(&p, shrink);
    rc = exp_measure_methods(csv, x, &p, 1, &fixed, x->cold, NULL, NULL);
  }
  if (exp_csv_close(csv) != 0) rc = -1;
  if (rc == 0) rc = exp_plot(x, "fig8");
  return rc;
}

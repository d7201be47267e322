/* Fig. 11: search time vs the filter size m for the SSTable scan, the classical Bloom scan,
 * the hierarchy scan (and the bit-sliced index).
 *
 * Paper: 10M entries (119 tables), m in {20k, 200k, 2M}: at 20k the hierarchy does not beat
 * the others, at 200k the Bloom scan beats the table scan, best at 2M. Ours: the same
 * databases as Fig. 10 (small scale: 1M entries, geometry and m shrunk by 10), d = 5,
 * similarity placement, leaves in memory, on disk (k words per probe) and on disk read whole
 * (the paper's classical Bloom scan).
 */
#include <stdio.h>
#include <string.h>

#include "experiments/drivers.h"
#include "experiments/exp.h"

static void put_m_paper(exp_csv_t *c, const void *m) {
  exp_csv_u64(c, "m_paper", *(const uint64_t *)m);
}

int exp_fig11(const exp_ctx_t *x) {
  const uint64_t ms[] = {20000, 200000, 2000000};
  const char *extra[] = {"m_paper", "series", NULL};
  const char *cols[64];
  exp_cols_cat(cols, 64, EXP_DB_COLS, EXP_SEARCH_COLS, extra, (const char *const *)NULL);
  exp_csv_t *csv = exp_csv_open_subset(x, "fig11", cols, EXP_CSV_KEY_SERIES | EXP_CSV_KEY_CACHE);
  if (!csv) return -1;
  int rc = 0;
  for (size_t mi = 0; mi < 3 && rc == 0; mi++) {
    exp_db_params_t p;
    exp_fig10_db(x, ms[mi], &p);
    rc = exp_measure_methods(csv, x, &p, 0, NULL, 0, put_m_paper, &ms[mi]);
  }
  if (exp_csv_close(csv) != 0) rc = -1;
  if (rc == 0) rc = exp_plot(x, "fig11");
  return rc;
}

/* Fig. 11: search time vs the filter size m for the SSTable scan, the classical Bloom scan,
 * the hierarchy scan (and the bit-sliced index).
 *
 * Paper: 10M entries (119 tables), m in {20k, 200k, 2M}: at 20k the hierarchy does not beat
 * the others, at 200k the Bloom scan beats the table scan, best at 2M. Ours: the same
 * databases as Fig. 10 (small scale: 1M entries, geometry and m shrunk by 10), d = 5,
 * similarity placement, leaves in memory and on disk.
 */
#include <stdio.h>
#include <string.h>

#include "experiments/exp.h"

int exp_fig11(const exp_ctx_t *x) {
  const uint64_t ms[] = {20000, 200000, 2000000};
  uint64_t n = x->scale == EXP_SMALL ? 1000000 : 10000000;
  double shrink = 10000000.0 / (double)n;
  const char *extra[] = {"m_paper", "series", NULL};
  const char *cols[64];
  exp_cols_cat(cols, 64, EXP_DB_COLS, EXP_SEARCH_COLS, extra, (const char *const *)NULL);
  exp_csv_t *csv = exp_csv_open(x, "fig11", cols);
  if (!csv) return -1;
  const bfh_method methods[] = {BFH_SEARCH_SCAN, BFH_SEARCH_LEAVES, BFH_SEARCH_HIERARCHY,
                                BFH_SEARCH_SLICED};
  int rc = 0;
  for (size_t mi = 0; mi < 3 && rc == 0; mi++) {
    exp_db_params_t p;
    exp_db_params_init(&p, x, n);
    p.m = ms[mi];
    exp_db_params_shrink(&p, shrink);
    char dir[1200];
    snprintf(dir, sizeof dir, "%s/fig11-%llu", x->work_dir, (unsigned long long)ms[mi]);
    if (exp_db_build(x, &p, dir, NULL) != BFH_OK) {
      rc = -1;
      break;
    }
    workload_t w;
    workload_init(&w, &p.wl);
    for (int lod = 0; lod < 2 && rc == 0; lod++) {
      p.leaves_on_disk = lod;
      bfh_db *db;
      if (exp_db_open(&p, dir, &db) != BFH_OK) {
        rc = -1;
        break;
      }
      for (size_t k = 0; k < sizeof methods / sizeof methods[0] && rc == 0; k++) {
        if (lod && methods[k] == BFH_SEARCH_SCAN) continue;
        exp_search_result_t r;
        if (exp_measure_into(csv, x, &p, db, &w, methods[k], 1, &r) != BFH_OK) {
          rc = -1;
          break;
        }
        char series[64];
        snprintf(series, sizeof series, "%s%s", exp_method_name(methods[k]),
                 methods[k] == BFH_SEARCH_SCAN ? ""
                 : lod                         ? "-disk"
                                               : "-mem");
        exp_csv_u64(csv, "m_paper", ms[mi]);
        exp_csv_str(csv, "series", series);
        exp_csv_row(csv);
      }
      bfh_close(db);
    }
    exp_db_drop(x, dir);
  }
  if (exp_csv_close(csv) != 0) rc = -1;
  if (rc == 0) rc = exp_plot(x, "fig11");
  return rc;
}

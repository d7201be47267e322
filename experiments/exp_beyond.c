/* Beyond the paper: search time vs N for every method, AUTO's block path included.
 *
 * Not an artifact of the paper. Each database holds N entries of unique values with the
 * paper's geometry (2 MiB tables, m = 2M, k = 3, d = 5, random insert order) and, besides the
 * leaves, a block filter per table and a value index in the memtable (exp_db_params_t.beyond).
 * The four named methods are the paper's (every selected table read whole); AUTO reads the
 * tables its selection keeps through their block filters. Present and absent values, leaves
 * in memory, warm cache. The full scan grows with N; the block path should not.
 * Small scale: N = 100k, 300k, 1M; medium: 1M, 3M, 10M; paper: 10M, 30M, 100M.
 */
#include <stdio.h>

#include "experiments/drivers.h"
#include "experiments/exp.h"

int exp_beyond(const exp_ctx_t *x) {
  static const uint64_t small[] = {100000, 300000, 1000000, 0};
  static const uint64_t medium[] = {1000000, 3000000, 10000000, 0};
  static const uint64_t paper[] = {10000000, 30000000, 100000000, 0};
  static const bfh_method methods[] = {BFH_SEARCH_SCAN, BFH_SEARCH_LEAVES, BFH_SEARCH_HIERARCHY,
                                       BFH_SEARCH_SLICED, BFH_SEARCH_AUTO};
  const uint64_t *ns = exp_sizes(x, paper, medium, small);
  const char *extra[] = {"series", "block_filter_bytes", NULL};
  const char *cols[64];
  exp_cols_cat(cols, 64, EXP_DB_COLS, EXP_SEARCH_COLS, extra, (const char *const *)NULL);
  exp_csv_t *csv = exp_csv_open_subset(x, "beyond", cols, EXP_CSV_KEY_N);
  if (!csv) return -1;
  int rc = 0;
  for (size_t i = 0; ns[i] && rc == 0; i++) {
    if (!exp_size_wanted(x, ns[i])) continue;
    exp_db_params_t p;
    exp_db_params_init(&p, x, ns[i]);
    p.wl.order = WORKLOAD_RANDOM;
    p.beyond = 1;
    char dir[1200];
    if (exp_db_get(x, &p, dir, sizeof dir, NULL) != BFH_OK) {
      rc = -1;
      break;
    }
    workload_t w;
    workload_init(&w, &p.wl);
    exp_target_t t = {NULL, &p, dir};
    if (exp_db_open(&p, dir, &t.db) != BFH_OK) {
      rc = -1;
      break;
    }
    bfh_db_stats ds;
    int have_stats = exp_db_stats(t.db, &ds);
    for (size_t mi = 0; mi < sizeof methods / sizeof methods[0] && rc == 0; mi++)
      for (int present = 1; present >= 0 && rc == 0; present--) {
        exp_search_result_t r;
        if (exp_measure_into(csv, x, &t, &w, methods[mi], present, 0, &r) != BFH_OK) {
          rc = -1;
          break;
        }
        exp_csv_str(csv, "series", exp_method_name(methods[mi]));
        if (have_stats) exp_csv_u64(csv, "block_filter_bytes", ds.block_filter_bytes);
        exp_csv_row(csv);
      }
    if (t.db) bfh_close(t.db);
  }
  if (exp_csv_close(csv) != 0) rc = -1;
  if (rc == 0) rc = exp_plot(x, "beyond");
  return rc;
}

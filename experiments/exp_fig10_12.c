/* Fig. 10 and Fig. 12 (one sweep): the hierarchy over a ~119-table database for
 * m in {20k, 200k, 2M} and several orders d: filters accessed (internal + leaf probes, and
 * as a percentage of the leaf filters a classical Bloom scan would test), tables scanned,
 * search time. Fig. 10 plots them against d per m; Fig. 12 against m per d.
 *
 * Paper: 10M entries, 119 tables; best at m = 2M, d = 3: 6% of the filters accessed, one
 * table scanned. Ours: paper scale and medium = 10M entries with the paper's geometry;
 * small = 1M entries with tables, memtable and m shrunk by 10 (so ~119 tables and the
 * paper's bits per entry; the m column holds the shrunk value, m_paper the paper's).
 * Both leaf placements (similarity, ours; positional, the paper's) are measured; the
 * value searched is present and unique (held by one table), plus absent values.
 */
#include <stdio.h>
#include <string.h>

#include "experiments/exp.h"

int exp_fig10_12(const exp_ctx_t *x) {
  const uint64_t ms[] = {20000, 200000, 2000000};
  const uint32_t orders[] = {2, 3, 4, 5, 8, 10};
  const char *extra[] = {"m_paper", "filters_accessed", "filters_accessed_pct", NULL};
  const char *cols[64];
  exp_cols_cat(cols, 64, EXP_DB_COLS, EXP_SEARCH_COLS, extra, (const char *const *)NULL);
  exp_csv_t *csv = exp_csv_open(x, "fig10", cols);
  if (!csv) return -1;
  int rc = 0;
  for (size_t mi = 0; mi < 3 && rc == 0; mi++) {
    exp_db_params_t p;
    char dir[1200];
    exp_fig10_db(x, ms[mi], "fig10", &p, dir, sizeof dir);
    if (exp_db_build(x, &p, dir, NULL) != BFH_OK) {
      rc = -1;
      break;
    }
    workload_t w;
    workload_init(&w, &p.wl);
    for (size_t di = 0; di < sizeof orders / sizeof orders[0] && rc == 0; di++) {
      for (int positional = 0; positional < 2 && rc == 0; positional++) {
        p.d = orders[di];
        p.placement = positional;
        bfh_db *db;
        if (exp_db_open(&p, dir, &db) != BFH_OK) {
          rc = -1;
          break;
        }
        for (int present = 1; present >= 0 && rc == 0; present--) {
          exp_search_result_t r;
          if (exp_measure_into(csv, x, &p, db, &w, BFH_SEARCH_HIERARCHY, present, &r) != BFH_OK) {
            rc = -1;
            break;
          }
          uint64_t acc = r.med.internal_probes + r.med.leaf_probes;
          exp_csv_u64(csv, "m_paper", ms[mi]);
          exp_csv_u64(csv, "filters_accessed", acc);
          if (r.med.tables_live)
            exp_csv_dbl(csv, "filters_accessed_pct", 100.0 * (double)acc / r.med.tables_live);
          exp_csv_row(csv);
        }
        bfh_close(db);
      }
    }
    exp_db_drop(x, dir);
  }
  if (exp_csv_close(csv) != 0) rc = -1;
  if (rc != 0) return rc;
  /* Fig. 12 plots the same rows. */
  char src[1200], dst[1200];
  snprintf(src, sizeof src, "%s/fig10.csv", x->out_dir);
  snprintf(dst, sizeof dst, "%s/fig12.csv", x->out_dir);
  FILE *in = fopen(src, "r"), *out = fopen(dst, "w");
  if (!in || !out) {
    fprintf(stderr, "bfh: cannot copy %s to %s\n", src, dst);
    if (in) fclose(in);
    if (out) fclose(out);
    return -1;
  }
  char buf[8192];
  size_t got;
  while ((got = fread(buf, 1, sizeof buf, in)) > 0) fwrite(buf, 1, got, out);
  fclose(in);
  if (fclose(out) != 0) return -1;
  rc = exp_plot(x, "fig10");
  if (rc == 0) rc = exp_plot(x, "fig12");
  return rc;
}

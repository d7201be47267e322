/* Fig. 9: search time and filters checked vs the hierarchy order d.
 *
 * Paper: 100M entries (~1,200 tables), m = 500k bits: the larger d, the fuller the internal
 * filters and the more filters checked. Ours: one database per scale, reopened once per d
 * (the order is not stored: the index is rebuilt at open) and per leaf placement (the
 * paper's static tree; positional and similarity, ours). filters_checked = internal filters
 * tested + leaf filters reached, per-query means; the paper's trend shows in the leaf filters
 * reached. d runs from 2 to 20, the authors' 3, 5, 10, 15 and 20 included. Every point with
 * leaves in memory and on disk read whole per probe (series "-mem", "-whole"); with --costs
 * authors, leaves loaded from their files ("-file", no bit-sliced index: the authors' code
 * has none). The scan reads no filter: it is measured once per d, with the first leaf location.
 * Small scale: 1M entries with the geometry shrunk by 100 (20 KiB tables, m = 5k, aiming at
 * the paper's table count and bits per entry; the CSV's entries_per_table and bits_per_value
 * say what a run got); medium: 10M shrunk by 10; paper: 100M as in the paper.
 */
#include <stdio.h>
#include <string.h>

#include "experiments/drivers.h"
#include "experiments/exp.h"
#include "experiments/exp_authors.h"

int exp_fig9(const exp_ctx_t *x) {
  /* The authors' own orders (3, 5, 10, 15, 20) among them. */
  const uint32_t orders[] = {2, 3, 4, 5, 6, 8, 10, 15, 16, 20};
  double shrink;
  uint64_t n = exp_one_size(x, 100000000, 10000000, 1000000, &shrink);
  const char *extra[] = {"series", "filters_checked", "internal_filters_tested",
                         "leaf_filters_reached", NULL};
  const char *cols[64];
  exp_cols_cat(cols, 64, EXP_DB_COLS, EXP_SEARCH_COLS, extra, (const char *const *)NULL);
  exp_csv_t *csv = exp_csv_open(x, "fig9", cols);
  if (!csv) return -1;
  exp_db_params_t p;
  exp_db_params_init(&p, x, n);
  p.m = 500000;
  exp_db_params_shrink(&p, shrink);
  char dir[1200];
  int rc = exp_db_get(x, &p, dir, sizeof dir, NULL) == BFH_OK ? 0 : -1;
  workload_t w;
  workload_init(&w, &p.wl);
  const bfh_method methods[] = {BFH_SEARCH_SCAN, BFH_SEARCH_LEAVES, BFH_SEARCH_SLICED,
                                BFH_SEARCH_HIERARCHY};
  /* Leaves in memory, then on disk read whole per probe (the paper's cost); with the
     authors' costs, leaves loaded from their files. */
  const int authors = x->costs == EXP_COSTS_AUTHORS;
  const int leaves[] = {BFH_LEAVES_IN_MEMORY, BFH_LEAVES_ON_DISK_WHOLE};
  for (int li = authors ? 1 : 0; li < 2 && rc == 0; li++) {
    const char *suffix = authors ? "-file" : li ? "-whole" : "-mem";
    for (size_t di = 0; di < sizeof orders / sizeof orders[0] && rc == 0; di++) {
      for (size_t pi = 0; pi < 3 && rc == 0; pi++) {
        p.d = orders[di];
        p.placement = EXP_PLACEMENTS[pi];
        p.leaves_on_disk = leaves[li];
        exp_target_t t = {NULL, &p, dir};
        if (exp_target_open(&t, &p, authors) != BFH_OK) {
          rc = -1;
          break;
        }
        for (size_t mi = 0; mi < sizeof methods / sizeof methods[0] && rc == 0; mi++) {
          /* Only the hierarchy depends on the placement (and the order: with the authors'
             costs, whose scan takes seconds, the others are measured at the first d only). */
          if ((pi > 0 || (authors && di > 0)) && methods[mi] != BFH_SEARCH_HIERARCHY) continue;
          if (authors && methods[mi] == BFH_SEARCH_SLICED) continue; /* not in their code */
          if (methods[mi] == BFH_SEARCH_SCAN && li > (authors ? 1 : 0)) continue; /* once */
          for (int present = 1; present >= 0 && rc == 0; present--) {
            if (!present && methods[mi] == BFH_SEARCH_SCAN) continue;
            exp_search_result_t r;
            if (exp_measure_into(csv, x, &t, &w, methods[mi], present, 0, &r) != BFH_OK) {
              rc = -1;
              break;
            }
            char series[48];
            snprintf(series, sizeof series, "%s%s", exp_series_name(methods[mi], p.placement),
                     methods[mi] == BFH_SEARCH_SCAN ? "" : suffix);
            exp_csv_str(csv, "series", series);
            exp_csv_dbl(csv, "filters_checked", r.mean.internal_probes + r.mean.leaf_probes);
            exp_csv_dbl(csv, "internal_filters_tested", r.mean.internal_probes);
            exp_csv_dbl(csv, "leaf_filters_reached", r.mean.leaf_probes);
            exp_csv_row(csv);
          }
        }
        exp_target_close(&t, &p);
      }
    }
  }
  if (exp_csv_close(csv) != 0) rc = -1;
  if (rc == 0) rc = exp_plot(x, "fig9");
  return rc;
}

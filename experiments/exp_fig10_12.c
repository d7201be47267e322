/* Fig. 10 and Fig. 12 (one sweep, two artifacts): the hierarchy over a ~119-table database
 * for m in {20k, 200k, 2M}, orders d in {2, 3, 4, 5, 8, 10} and the three placements.
 *
 * The paper's metric ("filters accessed", Fig. 10): the leaf filters a search reaches (those
 * whose parent said maybe) as a share of all leaves; the internal filters tested are a
 * column of their own, not part of it. Both are per-query means. Fig. 10 plots them, tables
 * scanned and time against d per m; Fig. 12 plots the leaf and internal filters against m per
 * d (fig12.csv holds only its own columns). Internal nodes are counted both ways: tested
 * (internal_filters_tested, ours) and said maybe (internal_maybe, the authors' code's count,
 * which the paper's Fig. 12 plots).
 *
 * Paper: 10M entries, 119 tables; best at m = 2M, d = 3: 6% of the filters accessed, one
 * table scanned. Ours: paper scale and medium = 10M entries with the paper's geometry;
 * small = 1M entries with tables, memtable and m shrunk by 10 (so ~119 tables and the
 * paper's bits per entry; the m column holds the shrunk value, m_paper the paper's). The
 * value searched is present and unique (held by one table), plus absent values. With --costs
 * authors (own engine) every point is searched with the authors' costs instead (rows with
 * costs "authors").
 */
#include <stdio.h>
#include <string.h>

#include "experiments/drivers.h"
#include "experiments/exp.h"

static const uint64_t MS[] = {20000, 200000, 2000000};
static const uint32_t ORDERS[] = {2, 3, 4, 5, 8, 10};

/* The paper's metric and its parts, from one measured point. internal_maybe (the internal
   nodes that said maybe) is the non-leaf count of the authors' code; internal_filters_tested
   every internal node tested. */
static void filter_cells(exp_csv_t *c, uint64_t m_paper, const exp_search_result_t *r) {
  const exp_counters_t *a = &r->mean;
  exp_csv_u64(c, "m_paper", m_paper);
  exp_csv_dbl(c, "internal_filters_tested", a->internal_probes);
  exp_csv_dbl(c, "internal_maybe", a->internal_maybe);
  exp_csv_dbl(c, "leaf_filters_reached", a->leaf_probes);
  exp_csv_dbl(c, "filters_accessed", a->internal_probes + a->leaf_probes);
  if (a->tables_live > 0) {
    exp_csv_dbl(c, "leaf_filters_reached_pct", 100.0 * a->leaf_probes / a->tables_live);
    exp_csv_dbl(c, "filters_accessed_pct",
                100.0 * (a->internal_probes + a->leaf_probes) / a->tables_live);
  }
}

int exp_fig10_12(const exp_ctx_t *x) {
  const char *extra[] = {"m_paper",
                         "internal_filters_tested",
                         "leaf_filters_reached",
                         "leaf_filters_reached_pct",
                         "filters_accessed",
                         "filters_accessed_pct",
                         NULL};
  const char *cols[64];
  exp_cols_cat(cols, 64, EXP_DB_COLS, EXP_SEARCH_COLS, extra, (const char *const *)NULL);
  const char *cols12[] = {"engine",
                          "scale",
                          "n",
                          "m",
                          "m_paper",
                          "k",
                          "d",
                          "placement",
                          "query",
                          "queries",
                          "tables_live",
                          "internal_filters_tested",
                          "internal_maybe",
                          "leaf_filters_reached",
                          "leaf_filters_reached_pct",
                          "filters_accessed",
                          "filters_accessed_pct",
                          "tables_scanned",
                          NULL};
  exp_csv_t *csv = exp_csv_open(x, "fig10", cols);
  exp_csv_t *f12 = exp_csv_open(x, "fig12", cols12);
  if (!csv || !f12) {
    exp_csv_close(csv);
    exp_csv_close(f12);
    return -1;
  }
  int rc = 0;
  /* --costs authors: the authors' search (leaves loaded whole from their files, reached tables
     dumped as text; their leaf count is of the leaves loaded), at most EXP_AUTHORS_QUERIES. */
  const int authors = x->costs == EXP_COSTS_AUTHORS;
  for (size_t mi = 0; mi < 3 && rc == 0; mi++) {
    exp_db_params_t p;
    char dir[1200];
    exp_fig10_db(x, MS[mi], &p);
    if (exp_db_get(x, &p, dir, sizeof dir, NULL) != BFH_OK) {
      rc = -1;
      break;
    }
    workload_t w;
    workload_init(&w, &p.wl);
    for (size_t di = 0; di < sizeof ORDERS / sizeof ORDERS[0] && rc == 0; di++) {
      for (size_t pi = 0; pi < 3 && rc == 0; pi++) {
        p.d = ORDERS[di];
        p.placement = EXP_PLACEMENTS[pi];
        exp_target_t t = {NULL, &p, dir};
        if (exp_target_open(&t, &p, authors) != BFH_OK) {
          rc = -1;
          break;
        }
        for (int present = 1; present >= 0 && rc == 0; present--) {
          exp_search_result_t r;
          if (exp_measure_into(csv, x, &t, &w, BFH_SEARCH_HIERARCHY, present, 0, &r) != BFH_OK) {
            rc = -1;
            break;
          }
          filter_cells(csv, MS[mi], &r);
          exp_csv_row(csv);
          exp_csv_str(f12, "engine", exp_engine_name(p.engine));
          exp_csv_str(f12, "scale", exp_scale_name(x->scale));
          exp_csv_u64(f12, "n", p.wl.n);
          exp_csv_u64(f12, "m", p.m);
          exp_csv_u64(f12, "k", p.k);
          exp_csv_u64(f12, "d", p.d);
          exp_csv_str(f12, "placement", exp_placement_name(p.placement));
          exp_csv_str(f12, "query", present ? "present" : "absent");
          exp_csv_u64(f12, "queries", (uint64_t)r.queries);
          exp_csv_dbl(f12, "tables_live", r.mean.tables_live);
          exp_csv_dbl(f12, "tables_scanned", r.mean.tables_scanned);
          filter_cells(f12, MS[mi], &r);
          if (r.mean.tables_live > 0) exp_csv_shape(f12, (double)p.wl.n / r.mean.tables_live, p.m);
          exp_csv_row(f12);
        }
        exp_target_close(&t, &p);
      }
    }
  }
  if (exp_csv_close(csv) != 0) rc = -1;
  if (exp_csv_close(f12) != 0) rc = -1;
  if (rc == 0) rc = exp_plot(x, "fig10");
  if (rc == 0) rc = exp_plot(x, "fig12");
  return rc;
}

/* Fig. 13 and Table III: the value domain (distinct values as a % of N) vs search time per
 * method, and, for the hierarchy, leaf filters positive / tables holding the value / leaf
 * filters tested.
 *
 * Paper: 50M entries in 599 tables, domain 1, 5, 10, 40, 70, 100%: the smaller the domain
 * (the more repeats of a value), the slower the hierarchy; scan and Bloom scan flat.
 * Table III: 1%: 56/55/250, 5%: 28/26/190, 10%: 13/11/105, 40%: 5/5/125, 70%: 2/1/70,
 * 100%: 0/0/65. Ours: paper scale = 50M entries, paper geometry; medium = 5M shrunk by 10
 * (200 KiB tables, m = 200k bits); small = 1M shrunk by 50 (40 KiB tables, m = 40k bits):
 * always ~599 tables and the paper's bits per entry.
 *
 * Two workloads (the domain_mode column):
 *  - exact: Value<perm(i) mod D>, each of the D values on floor/ceil(N/D) keys, domains 1, 5,
 *    10, 40, 70, 100% (the paper's rows); 30 present values per point; the hierarchy with
 *    each placement (the paper's static tree first).
 *  - authors: the workload of the authors' code (its ExpTen): every value drawn uniformly with
 *    replacement from a domain of 2, 5, 10, 40, 70, 100% of N (2%, not 1%: their code runs 2%
 *    for the paper's "1%" row), the paper's tree only; queried with 30 values drawn uniformly
 *    from the domain (query "domain": some occur on no key, as their query may) and with their
 *    one fixed query, Value1879 (query "fixed"), which at 100% occurs Poisson(1) times.
 *
 * table3.csv holds the hierarchy's rows in the paper's columns (per-query means) next to the
 * paper's numbers, on both definitions of each count: the authors' "SSTables found" sums the
 * occurrences in the tables read (entries_found), ours counts distinct tables holding the
 * value (sstables_found); the authors count the internal nodes that said maybe
 * (internal_maybe), ours every internal node tested (internal_probes).
 *
 * Every filter method runs with leaves in memory ("-mem" series) and on disk read whole per
 * probe ("-whole"); with --costs authors, leaves loaded from their files ("-file"; no
 * bit-sliced index, which their code lacks). The drawn workload runs with leaves in memory
 * only (bfh's costs) or from their files (the authors'). Table III holds the first pass.
 */
#include <stdio.h>
#include <string.h>

#include "experiments/drivers.h"
#include "experiments/exp.h"
#include "experiments/exp_authors.h"

static const struct {
  double pct;
  int found, tables, scanned;
} PAPER[] = {{1, 56, 55, 250}, {5, 28, 26, 190}, {10, 13, 11, 105},
             {40, 5, 5, 125},  {70, 2, 1, 70},   {100, 0, 0, 65}};

#define PAPER_TABLES 599 /* the paper's 50M entries */

#define AUTHORS_QUERY 1879 /* their ExpTen's valuetofind, "Value1879" */

static void table3_row(exp_csv_t *t3, const exp_ctx_t *x, const exp_db_params_t *p, double pct,
                       const char *query, const exp_search_result_t *r, size_t di) {
  exp_csv_str(t3, "domain_mode", workload_values_name(p->wl.values));
  exp_csv_str(t3, "query", query);
  if (strcmp(query, "fixed") == 0) {
    char v[WORKLOAD_MAX_BYTES];
    workload_paper_value(AUTHORS_QUERY, v);
    exp_csv_str(t3, "fixed_value", v);
  }
  exp_csv_dbl(t3, "paper_domain_pct", PAPER[di].pct);
  exp_csv_dbl(t3, "entries_found", r->mean.candidates);
  exp_csv_dbl(t3, "internal_maybe", r->mean.internal_maybe);
  if (r->mean.tables_live > 0) exp_csv_shape(t3, (double)p->wl.n / r->mean.tables_live, p->m);
  exp_csv_str(t3, "engine", exp_engine_name(p->engine));
  exp_csv_str(t3, "scale", exp_scale_name(x->scale));
  exp_csv_u64(t3, "n", p->wl.n);
  exp_csv_u64(t3, "m", p->m);
  exp_csv_u64(t3, "k", p->k);
  exp_csv_u64(t3, "d", p->d);
  exp_csv_str(t3, "placement", exp_placement_name(p->placement));
  exp_csv_dbl(t3, "domain_pct", pct);
  /* The fixed query was searched r->queries times: one value. */
  exp_csv_u64(t3, "queries", strcmp(query, "fixed") == 0 ? 1 : (uint64_t)r->queries);
  exp_csv_dbl(t3, "tables_live", r->mean.tables_live);
  exp_csv_dbl(t3, "leaf_filters_found", r->mean.leaf_positives);
  exp_csv_dbl(t3, "sstables_found", r->mean.tables_matched);
  exp_csv_dbl(t3, "leaf_filters_scanned", r->mean.leaf_probes);
  if (r->mean.tables_live > 0)
    exp_csv_dbl(t3, "leaf_filters_scanned_pct", 100.0 * r->mean.leaf_probes / r->mean.tables_live);
  exp_csv_dbl(t3, "internal_probes", r->mean.internal_probes);
  exp_csv_dbl(t3, "time_s", r->time_s);
  exp_csv_u64(t3, "paper_leaf_filters_found", (uint64_t)PAPER[di].found);
  exp_csv_u64(t3, "paper_sstables_found", (uint64_t)PAPER[di].tables);
  exp_csv_u64(t3, "paper_leaf_filters_scanned", (uint64_t)PAPER[di].scanned);
  exp_csv_dbl(t3, "paper_leaf_filters_scanned_pct", 100.0 * PAPER[di].scanned / PAPER_TABLES);
  exp_csv_row(t3);
}

int exp_fig13(const exp_ctx_t *x) {
  double shrink;
  uint64_t n = exp_one_size(x, 50000000, 5000000, 1000000, &shrink);
  const char *extra[] = {"series", "value_keys", NULL};
  static const double AUTHORS_PCT[] = {2, 5, 10, 40, 70, 100}; /* ExpTen's domains */
  const char *cols[64];
  exp_cols_cat(cols, 64, EXP_DB_COLS, EXP_SEARCH_COLS, extra, (const char *const *)NULL);
  exp_csv_t *csv = exp_csv_open(x, "fig13", cols);
  const char *t3cols[] = {"engine",
                          "scale",
                          "n",
                          "m",
                          "k",
                          "d",
                          "placement",
                          "domain_pct",
                          "domain_mode",
                          "paper_domain_pct",
                          "query",
                          "fixed_value",
                          "queries",
                          "tables_live",
                          "leaf_filters_found",
                          "sstables_found",
                          "leaf_filters_scanned",
                          "leaf_filters_scanned_pct",
                          "internal_probes",
                          "internal_maybe",
                          "entries_found",
                          "time_s",
                          "paper_leaf_filters_found",
                          "paper_sstables_found",
                          "paper_leaf_filters_scanned",
                          "paper_leaf_filters_scanned_pct",
                          NULL};
  exp_csv_t *t3 = exp_csv_open(x, "table3", t3cols);
  if (!csv || !t3) {
    exp_csv_close(csv);
    exp_csv_close(t3);
    return -1;
  }
  const bfh_method methods[] = {BFH_SEARCH_SCAN, BFH_SEARCH_LEAVES, BFH_SEARCH_HIERARCHY,
                                BFH_SEARCH_SLICED};
  int rc = 0;
  const int authors = x->costs == EXP_COSTS_AUTHORS;
  const int leaves[] = {BFH_LEAVES_IN_MEMORY, BFH_LEAVES_ON_DISK_WHOLE};
  for (int mode = 0; mode < 2 && rc == 0; mode++) {
    int drawn = mode == 1; /* the authors' workload */
    for (size_t di = 0; di < sizeof PAPER / sizeof PAPER[0] && rc == 0; di++) {
      double pct = drawn ? AUTHORS_PCT[di] : PAPER[di].pct;
      exp_db_params_t p;
      exp_db_params_init(&p, x, n);
      exp_db_params_shrink(&p, shrink);
      p.wl.domain_pct = pct;
      p.wl.values = drawn ? WORKLOAD_VALUES_DRAWN : WORKLOAD_VALUES_EXACT;
      char dir[1200];
      if (exp_db_get(x, &p, dir, sizeof dir, NULL) != BFH_OK) {
        rc = -1;
        break;
      }
      workload_t w;
      workload_init(&w, &p.wl);
      /* Leaves in memory, then on disk read whole per probe (the paper's cost); with the
         authors' costs, leaves loaded from their files. */
      int li_end = drawn && !authors ? 1 : 2;
      for (int li = authors ? 1 : 0; li < li_end && rc == 0; li++) {
        const char *suffix = authors ? "-file" : li ? "-whole" : "-mem";
        /* The authors ran their own tree only. */
        for (size_t pi = 0; pi < (drawn ? 1u : 3u) && rc == 0; pi++) {
          p.placement = EXP_PLACEMENTS[pi];
          p.leaves_on_disk = leaves[li];
          exp_target_t t = {NULL, &p, dir};
          if (exp_target_open(&t, &p, authors) != BFH_OK) {
            rc = -1;
            break;
          }
          for (size_t k = 0; k < sizeof methods / sizeof methods[0] && rc == 0; k++) {
            /* Only the hierarchy depends on the placement; the scan reads no filter. */
            if (pi > 0 && methods[k] != BFH_SEARCH_HIERARCHY) continue;
            if (li > 0 && !authors && methods[k] == BFH_SEARCH_SCAN) continue;
            if (authors && methods[k] == BFH_SEARCH_SLICED) continue; /* not in their code */
            /* The drawn workload: the 30 values of the domain, then (hierarchy) their query. */
            for (int fixed = 0; fixed <= (drawn && methods[k] == BFH_SEARCH_HIERARCHY); fixed++) {
              exp_search_result_t r;
              int rc2 = fixed ? exp_search_measure(&t, &w, methods[k], EXP_QUERY_FIXED, x->queries,
                                                   AUTHORS_QUERY, 0, &r)
                              : exp_measure_into(csv, x, &t, &w, methods[k], 1, 0, &r);
              if (rc2 != BFH_OK) {
                rc = -1;
                break;
              }
              if (fixed && r.wrong)
                fprintf(stderr, "bfh: WARNING: fig13: Value%d: wrong keys (domain %g%%)\n",
                        AUTHORS_QUERY, pct);
              const char *query = fixed ? "fixed" : drawn ? "domain" : "present";
              if (!fixed) {
                char series[48];
                snprintf(series, sizeof series, "%s%s", exp_series_name(methods[k], p.placement),
                         methods[k] == BFH_SEARCH_SCAN ? "" : suffix);
                exp_csv_str(csv, "query", query);
                exp_csv_str(csv, "series", series);
                if (drawn)
                  exp_csv_dbl(csv, "value_keys", (double)n / (double)w.domain);
                else
                  exp_csv_u64(csv, "value_keys", workload_value_count(&w, 0));
                exp_csv_row(csv);
              }
              if (methods[k] == BFH_SEARCH_HIERARCHY && li == (authors ? 1 : 0))
                table3_row(t3, x, &p, pct, query, &r, di);
            }
          }
          exp_target_close(&t, &p);
        }
      }
    }
  }
  if (exp_csv_close(csv) != 0) rc = -1;
  if (exp_csv_close(t3) != 0) rc = -1;
  if (rc == 0) rc = exp_plot(x, "fig13");
  if (rc == 0) rc = exp_plot(x, "table3");
  return rc;
}

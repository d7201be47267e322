/* Table II: sizes of the SSTables, the leaf filters and the non-leaf filters (m = 2M, d = 5).
 *
 * Paper: N = 10M .. 1B; 500M entries = 6434 SSTables. Ours, two row groups:
 *  - source=db: real databases at this scale's N (default geometry), sizes from bfh_stats;
 *    the hierarchy measured after a reopen with each placement (the paper's static tree,
 *    positional, similarity).
 *  - source=synthetic: the 500M and 1B points (1/10 of them at small scale) as a pure
 *    structure: 6434 (12868) synthetic leaves of 77,712 distinct values each, the hierarchy
 *    built over them with each placement; no SSTable size.
 * paper_model_nonleaf_mb is the paper's hierarchy (exactly d children per node) over the same
 * number of leaves. MB = 10^6 bytes.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "experiments/drivers.h"
#include "experiments/exp.h"
#include "hierarchy/hierarchy.h"

static const struct {
  uint64_t n;
  double sst, leaf, nonleaf;
} PAPER[] = {{10000000, 293, 29, 7},
             {50000000, 1200, 148, 37},
             {100000000, 2420, 296, 75},
             {500000000, 12500, 1540, 405},
             {1000000000, 25200, 3078, 769}};

static void paper_cols(exp_csv_t *csv, uint64_t n) {
  for (size_t j = 0; j < sizeof PAPER / sizeof PAPER[0]; j++)
    if ((double)n > 0.999 * (double)PAPER[j].n && (double)n < 1.001 * (double)PAPER[j].n) {
      exp_csv_dbl(csv, "paper_sst_mb", PAPER[j].sst);
      exp_csv_dbl(csv, "paper_leaf_mb", PAPER[j].leaf);
      exp_csv_dbl(csv, "paper_nonleaf_mb", PAPER[j].nonleaf);
    }
}

#define ENTRIES_PER_TABLE 77712 /* 500M / 6434 */

/* The 500M and 1B points over synthetic leaves (1/10 of them at small scale): the 1B point's
   leaves, generated once; the 500M point's are their first half. 0 or -1. */
static int synthetic_rows(exp_csv_t *csv, const exp_ctx_t *x) {
  const uint64_t tables[] = {6434, 12868};
  const uint64_t div = x->scale == EXP_SMALL ? 10 : 1;
  exp_synth_t s;
  if (exp_synth_init(&s, 2000000, 3, tables[1] / div, ENTRIES_PER_TABLE) != 0) {
    fprintf(stderr, "bfh: table2: out of memory for %llu synthetic leaves\n",
            (unsigned long long)(tables[1] / div));
    return -1;
  }
  int rc = 0;
  for (int t = 0; t < 2 && rc == 0; t++) {
    uint64_t leaves = tables[t] / div;
    for (size_t pi = 0; pi < 3 && rc == 0; pi++) {
      exp_db_params_t p;
      exp_db_params_init(&p, x, leaves * ENTRIES_PER_TABLE);
      p.placement = EXP_PLACEMENTS[pi];
      exp_progress("table2: synthetic hierarchy over %llu leaves (%s)", (unsigned long long)leaves,
                   exp_placement_name(p.placement));
      hierarchy_t *h = exp_synth_hierarchy(&s, leaves, p.d, p.placement, NULL);
      exp_progress_done();
      if (!h) {
        rc = -1;
        break;
      }
      exp_csv_db_params(csv, x, &p);
      exp_csv_shape(csv, ENTRIES_PER_TABLE, p.m);
      exp_csv_str(csv, "source", "synthetic");
      exp_csv_u64(csv, "tables", leaves);
      exp_csv_dbl(csv, "leaf_mb", (double)leaves * (double)(p.m / 8) / 1e6);
      exp_csv_dbl(csv, "nonleaf_mb", (double)hierarchy_size_in_bytes(h) / 1e6);
      exp_csv_u64(csv, "height", hierarchy_height(h));
      exp_csv_dbl(csv, "paper_model_nonleaf_mb",
                  (double)exp_paper_internal_nodes(leaves, p.d) * (double)(p.m / 8) / 1e6);
      paper_cols(csv, leaves * ENTRIES_PER_TABLE);
      exp_csv_row(csv);
      hierarchy_destroy(h);
    }
  }
  exp_synth_release(&s);
  return rc;
}

int exp_table2(const exp_ctx_t *x) {
  static const uint64_t small[] = {100000, 300000, 1000000, 0};
  static const uint64_t medium[] = {1000000, 10000000, 0};
  static const uint64_t paper[] = {10000000, 50000000, 100000000, 500000000, 0};
  const uint64_t *ns = exp_sizes(x, paper, medium, small);
  const char *extra[] = {"source",
                         "tables",
                         "sst_mb",
                         "leaf_mb",
                         "nonleaf_mb",
                         "sliced_mb",
                         "height",
                         "mean_leaf_fill",
                         "paper_model_nonleaf_mb",
                         "paper_sst_mb",
                         "paper_leaf_mb",
                         "paper_nonleaf_mb",
                         NULL};
  const char *cols[64];
  exp_cols_cat(cols, 64, EXP_DB_COLS, extra, (const char *const *)NULL);
  exp_csv_t *csv = exp_csv_open_subset(x, "table2", cols, EXP_CSV_KEY_DB_N);
  if (!csv) return -1;
  int rc = 0, warned = 0;
  for (size_t i = 0; ns[i] && rc == 0; i++) {
    if (!exp_size_wanted(x, ns[i])) continue;
    exp_db_params_t p;
    exp_db_params_init(&p, x, ns[i]);
    char dir[1200];
    if (exp_db_get(x, &p, dir, sizeof dir, NULL) != BFH_OK) {
      rc = -1;
      break;
    }
    for (size_t pi = 0; pi < 3 && rc == 0; pi++) {
      p.placement = EXP_PLACEMENTS[pi];
      bfh_db *db;
      if (exp_db_open(&p, dir, &db) != BFH_OK) {
        rc = -1;
        break;
      }
      bfh_db_stats st;
      exp_csv_db_params(csv, x, &p);
      exp_csv_str(csv, "source", "db");
      if (exp_db_stats(db, &st)) {
        exp_csv_u64(csv, "tables", st.tables);
        if (st.tables) exp_csv_shape(csv, (double)p.wl.n / (double)st.tables, p.m);
        exp_csv_dbl(csv, "sst_mb", (double)st.table_bytes / 1e6);
        exp_csv_dbl(csv, "leaf_mb", (double)st.leaf_filter_bytes / 1e6);
        exp_csv_dbl(csv, "nonleaf_mb", (double)st.internal_bytes / 1e6);
        exp_csv_dbl(csv, "sliced_mb", (double)st.sliced_bytes / 1e6);
        exp_csv_u64(csv, "height", st.hierarchy_height);
        exp_csv_dbl(csv, "mean_leaf_fill", st.mean_leaf_fill);
        exp_csv_dbl(
            csv, "paper_model_nonleaf_mb",
            (double)exp_paper_internal_nodes(st.leaf_filters, p.d) * (double)(p.m / 8) / 1e6);
      } else if (!warned) {
        fprintf(stderr,
                "bfh: table2: bfh_stats failed: %s "
                "(database sizes left empty)\n",
                bfh_last_error(db));
        warned = 1;
      }
      paper_cols(csv, ns[i]);
      exp_csv_row(csv);
      bfh_close(db);
    }
  }
  if (rc == 0) rc = synthetic_rows(csv, x);
  if (exp_csv_close(csv) != 0) rc = -1;
  if (rc == 0) rc = exp_plot(x, "table2");
  return rc;
}

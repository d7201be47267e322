/* Fig. 7: memory of the non-leaf (internal) filters of the hierarchy vs the order d.
 *
 * Paper: 500M entries (6434 SSTables), m = 2M bits: the smaller d, the more memory. A pure
 * structure experiment: the hierarchy is built over synthetic leaves (one per table, ~77.7k
 * distinct values each, the paper's 500M / 6434) with each placement: the paper's static tree
 * (exactly d children per node, built bottom-up), and our B+-tree rules (nodes of d..2d
 * children; positional bulk build and similarity inserts); paper_model_* is the paper's
 * node count computed (the paper placement must equal it). Scales: small 643 leaves (1/10),
 * medium and paper 6434.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "experiments/drivers.h"
#include "experiments/exp.h"
#include "hierarchy/hierarchy.h"

#define PAPER_LEAVES 6434
#define PAPER_ENTRIES_PER_TABLE 77712 /* 500M / 6434 */
#define QUERIES 30

int exp_fig7(const exp_ctx_t *x) {
  const uint32_t orders[] = {2, 3, 4, 5, 6, 8, 10, 16};
  const uint64_t m = 2000000;
  const uint32_t k = 3;
  uint64_t leaves = x->scale == EXP_SMALL ? PAPER_LEAVES / 10 : PAPER_LEAVES;
  const char *cols[] = {"scale",
                        "leaves",
                        "entries_per_leaf",
                        "n_equiv",
                        "m",
                        "k",
                        "d",
                        "placement",
                        "height",
                        "internal_nodes",
                        "nonleaf_bytes",
                        "nonleaf_mb",
                        "leaf_mb",
                        "paper_model_nodes",
                        "paper_model_mb",
                        "build_s",
                        "queries",
                        "query_internal_probes",
                        "query_leaf_probes",
                        NULL};
  exp_csv_t *csv = exp_csv_open(x, "fig7", cols);
  if (!csv) return -1;
  exp_synth_t s;
  if (exp_synth_init(&s, m, k, leaves, PAPER_ENTRIES_PER_TABLE) != 0) {
    fprintf(stderr, "bfh: fig7: out of memory for %llu synthetic leaves\n",
            (unsigned long long)leaves);
    exp_csv_close(csv);
    return -1;
  }
  int rc = 0;
  for (size_t i = 0; i < sizeof orders / sizeof orders[0] && rc == 0; i++) {
    for (size_t pi = 0; pi < 3 && rc == 0; pi++) {
      int placement = EXP_PLACEMENTS[pi];
      double build_s = 0;
      exp_progress("fig7: d=%u %s", orders[i], exp_placement_name(placement));
      hierarchy_t *h = exp_synth_hierarchy(&s, leaves, orders[i], placement, &build_s);
      if (!h) {
        fprintf(stderr, "bfh: fig7: building the hierarchy (d=%u) failed\n", orders[i]);
        rc = -1;
        break;
      }
      hierarchy_level_stats_t lv[64];
      uint32_t nl = hierarchy_level_stats(h, lv, 64);
      uint64_t nodes = 0;
      for (uint32_t l = 0; l < nl && l < 64; l++) nodes += lv[l].nodes;
      /* Present values spread over the leaves: how many filters a hierarchy search tests
         (per-query means). */
      double ip = 0, lp = 0;
      for (int q = 0; q < QUERIES; q++) {
        uint64_t leaf = (uint64_t)q * (leaves / QUERIES) + 3;
        char val[WORKLOAD_MAX_BYTES];
        size_t n = workload_paper_value(leaf * PAPER_ENTRIES_PER_TABLE + 11, val);
        probe_t p;
        probe_init(&p, bfh_hash64(val, n, BFH_DEFAULT_SEED), m, k);
        u64vec_t out;
        u64vec_init(&out);
        probe_stats_t st = {0, 0, 0, 0};
        hierarchy_search(h, &p, &out, &st);
        u64vec_release(&out);
        ip += (double)st.internal_probes / QUERIES;
        lp += (double)st.leaf_probes / QUERIES;
      }
      uint64_t pnodes = exp_paper_internal_nodes(leaves, orders[i]);
      exp_csv_str(csv, "scale", exp_scale_name(x->scale));
      exp_csv_u64(csv, "leaves", leaves);
      exp_csv_u64(csv, "entries_per_leaf", PAPER_ENTRIES_PER_TABLE);
      exp_csv_shape(csv, PAPER_ENTRIES_PER_TABLE, m);
      exp_csv_u64(csv, "n_equiv", leaves * PAPER_ENTRIES_PER_TABLE);
      exp_csv_u64(csv, "m", m);
      exp_csv_u64(csv, "k", k);
      exp_csv_u64(csv, "d", orders[i]);
      exp_csv_str(csv, "placement", exp_placement_name(placement));
      exp_csv_u64(csv, "height", hierarchy_height(h));
      exp_csv_u64(csv, "internal_nodes", nodes);
      exp_csv_u64(csv, "nonleaf_bytes", hierarchy_size_in_bytes(h));
      exp_csv_dbl(csv, "nonleaf_mb", (double)hierarchy_size_in_bytes(h) / 1e6);
      exp_csv_dbl(csv, "leaf_mb", (double)leaves * (double)(m / 8) / 1e6);
      exp_csv_u64(csv, "paper_model_nodes", pnodes);
      exp_csv_dbl(csv, "paper_model_mb", (double)pnodes * (double)(m / 8) / 1e6);
      exp_csv_dbl(csv, "build_s", build_s);
      exp_csv_u64(csv, "queries", QUERIES);
      exp_csv_dbl(csv, "query_internal_probes", ip);
      exp_csv_dbl(csv, "query_leaf_probes", lp);
      exp_csv_row(csv);
      hierarchy_destroy(h);
    }
  }
  exp_progress_done();
  exp_synth_release(&s);
  if (exp_csv_close(csv) != 0) rc = -1;
  if (rc == 0) rc = exp_plot(x, "fig7");
  return rc;
}

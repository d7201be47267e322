/* Fig. 7: memory of the non-leaf (internal) filters of the hierarchy vs the order d.
 *
 * Paper: 500M entries (6434 SSTables), m = 2M bits: the smaller d, the more memory. A pure
 * structure experiment: the hierarchy is built over synthetic leaves (one per table, ~77.7k
 * distinct values each, the paper's 500M / 6434), with our B+-tree placement rules (nodes of
 * d..2d children; positional bulk build and similarity inserts) and, for comparison, the
 * paper's node count (exactly d children per node). Scales: small 650 leaves (1/10),
 * medium and paper 6434.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "experiments/exp.h"
#include "hierarchy/hierarchy.h"

#define PAPER_LEAVES 6434
#define PAPER_ENTRIES_PER_TABLE 77712 /* 500M / 6434 */

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
                        "query_internal_probes",
                        "query_leaf_probes",
                        NULL};
  exp_csv_t *csv = exp_csv_open(x, "fig7", cols);
  if (!csv) return -1;
  exp_synth_t s;
  if (exp_synth_init(&s, m, k, leaves, PAPER_ENTRIES_PER_TABLE, (size_t)2 << 30) != 0) {
    fprintf(stderr, "bfh: fig7: out of memory for %llu synthetic leaves\n",
            (unsigned long long)leaves);
    exp_csv_close(csv);
    return -1;
  }
  int rc = 0;
  for (size_t i = 0; i < sizeof orders / sizeof orders[0] && rc == 0; i++) {
    for (int positional = 1; positional >= 0 && rc == 0; positional--) {
      double build_s = 0;
      exp_progress("fig7: d=%u %s", orders[i], positional ? "positional" : "similarity");
      hierarchy_t *h = exp_synth_hierarchy(&s, orders[i], positional, &build_s);
      if (!h) {
        fprintf(stderr, "bfh: fig7: building the hierarchy (d=%u) failed\n", orders[i]);
        rc = -1;
        break;
      }
      hierarchy_level_stats_t lv[64];
      uint32_t nl = hierarchy_level_stats(h, lv, 64);
      uint64_t nodes = 0;
      for (uint32_t l = 0; l < nl && l < 64; l++) nodes += lv[l].nodes;
      /* A few present values: how many filters a hierarchy search tests (median of 7). */
      uint64_t ip[7], lp[7];
      for (int q = 0; q < 7; q++) {
        uint64_t leaf = (uint64_t)q * (leaves / 7) + 3;
        char val[WORKLOAD_MAX_BYTES];
        int n = snprintf(val, sizeof val, "Value%llu",
                         (unsigned long long)(leaf * PAPER_ENTRIES_PER_TABLE + 11));
        probe_t p;
        probe_init(&p, bfh_hash64(val, (size_t)n, BFH_DEFAULT_SEED), m, k);
        u64vec_t out;
        u64vec_init(&out);
        probe_stats_t st = {0, 0, 0};
        hierarchy_search(h, &p, &out, &st);
        u64vec_release(&out);
        ip[q] = st.internal_probes;
        lp[q] = st.leaf_probes;
      }
      for (int a = 1; a < 7; a++) /* insertion sort, for the medians */
        for (int b = a; b > 0 && ip[b] < ip[b - 1]; b--) {
          uint64_t t = ip[b];
          ip[b] = ip[b - 1];
          ip[b - 1] = t;
        }
      for (int a = 1; a < 7; a++)
        for (int b = a; b > 0 && lp[b] < lp[b - 1]; b--) {
          uint64_t t = lp[b];
          lp[b] = lp[b - 1];
          lp[b - 1] = t;
        }
      uint64_t pnodes = exp_paper_internal_nodes(leaves, orders[i]);
      exp_csv_str(csv, "scale", exp_scale_name(x->scale));
      exp_csv_u64(csv, "leaves", leaves);
      exp_csv_u64(csv, "entries_per_leaf", PAPER_ENTRIES_PER_TABLE);
      exp_csv_u64(csv, "n_equiv", leaves * PAPER_ENTRIES_PER_TABLE);
      exp_csv_u64(csv, "m", m);
      exp_csv_u64(csv, "k", k);
      exp_csv_u64(csv, "d", orders[i]);
      exp_csv_str(csv, "placement", positional ? "positional" : "similarity");
      exp_csv_u64(csv, "height", hierarchy_height(h));
      exp_csv_u64(csv, "internal_nodes", nodes);
      exp_csv_u64(csv, "nonleaf_bytes", hierarchy_size_in_bytes(h));
      exp_csv_dbl(csv, "nonleaf_mb", (double)hierarchy_size_in_bytes(h) / 1e6);
      exp_csv_dbl(csv, "leaf_mb", (double)leaves * (double)(m / 8) / 1e6);
      exp_csv_u64(csv, "paper_model_nodes", pnodes);
      exp_csv_dbl(csv, "paper_model_mb", (double)pnodes * (double)(m / 8) / 1e6);
      exp_csv_dbl(csv, "build_s", build_s);
      exp_csv_u64(csv, "query_internal_probes", ip[3]);
      exp_csv_u64(csv, "query_leaf_probes", lp[3]);
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

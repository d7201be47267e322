/* The run context of the drivers: scales, cost profiles, the database sizes a run wants, and
 * the names the CSV files use (exp.h). Engine and method names are the library's. */
#include "experiments/exp.h"

/* exp_engine_is_own: the engine kinds' capabilities (engine.h) */
#include "api/testbed.h"

const char *exp_scale_name(exp_scale_t s) {
  return s == EXP_PAPER ? "paper" : s == EXP_MEDIUM ? "medium" : "small";
}

const uint64_t *exp_sizes(const exp_ctx_t *x, const uint64_t *paper, const uint64_t *medium,
                          const uint64_t *small) {
  static uint64_t one[2];
  if (x->n) {
    one[0] = x->n;
    one[1] = 0;
    return one;
  }
  return x->scale == EXP_PAPER ? paper : x->scale == EXP_MEDIUM ? medium : small;
}

uint64_t exp_one_size(const exp_ctx_t *x, uint64_t paper_n, uint64_t medium_n, uint64_t small_n,
                      double *shrink) {
  if (x->n) {
    *shrink = 1;
    return x->n;
  }
  uint64_t n = x->scale == EXP_PAPER ? paper_n : x->scale == EXP_MEDIUM ? medium_n : small_n;
  *shrink = (double)paper_n / (double)n;
  return n;
}

int exp_size_wanted(const exp_ctx_t *x, uint64_t n) {
  return (!x->max_n || n <= x->max_n) && n >= x->min_n;
}

const char *exp_costs_name(int costs) {
  return costs == EXP_COSTS_AUTHORS ? "authors" : "bfh";
}

const char *exp_engine_name(bfh_engine e) {
  const char *name = bfh_engine_name(e);
  return name ? name : "unknown";
}

int exp_engine_can(bfh_engine e, unsigned caps) {
  const bfh_engine_info *info;
  for (size_t i = 0; (info = bfh_engine_at(i)); i++)
    if (info->engine == e) return (info->caps & caps) == caps;
  return 0;
}

int exp_engine_is_own(bfh_engine e) {
  const engine_kind_t *k = engine_kind(e);
  return k && (k->caps & ENGINE_CAP_OWN);
}

const int EXP_PLACEMENTS[3] = {BFH_PLACEMENT_PAPER, BFH_PLACEMENT_POSITIONAL,
                               BFH_PLACEMENT_SIMILARITY};

/* Indexed by bfh_placement. */
static const char *const PLACEMENT_NAMES[3] = {"similarity", "positional", "paper"};
static const char *const HIERARCHY_SERIES[3] = {"hierarchy-similarity", "hierarchy-positional",
                                                "hierarchy-paper"};

static int placement_index(int placement) {
  return placement == BFH_PLACEMENT_POSITIONAL || placement == BFH_PLACEMENT_PAPER ? placement : 0;
}

const char *exp_placement_name(int placement) {
  return PLACEMENT_NAMES[placement_index(placement)];
}

const char *exp_series_name(bfh_method m, int placement) {
  return m == BFH_SEARCH_HIERARCHY ? HIERARCHY_SERIES[placement_index(placement)]
                                   : exp_method_name(m);
}

const char *exp_method_name(bfh_method m) {
  const char *name = bfh_method_name(m); /* the library's one table of names */
  return name ? name : "?";
}

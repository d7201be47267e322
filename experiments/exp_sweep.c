/* The sweep of search methods, placements and leaf storage shared by Fig. 8 and Fig. 11
 * (exp_measure_methods, exp.h). */
#include "experiments/exp.h"

#include <stdio.h>

#include "experiments/exp_authors.h"

static const int SWEEP_PLACEMENTS[] = {BFH_PLACEMENT_PAPER, BFH_PLACEMENT_SIMILARITY};

/* Measures method on t (present values, and absent ones with absent_too) and writes a row
   each, named series. */
static int measure_rows(exp_csv_t *c, const exp_ctx_t *x, exp_target_t *t, const workload_t *w,
                        bfh_method method, int absent_too, int cold, const char *series,
                        void (*cells)(exp_csv_t *c, const void *arg), const void *arg) {
  for (int present = 1; present >= (absent_too ? 0 : 1); present--) {
    exp_search_result_t r;
    if (exp_measure_into(c, x, t, w, method, present, cold, &r) != BFH_OK) return -1;
    exp_csv_str(c, "series", series);
    if (cells) cells(c, arg);
    exp_csv_row(c);
  }
  return 0;
}

/* exp_measure_methods with the authors' costs. */
static int measure_methods_authors(exp_csv_t *c, const exp_ctx_t *x, exp_db_params_t *p,
                                   const char *dir, const workload_t *w, int absent_too,
                                   void (*cells)(exp_csv_t *c, const void *arg), const void *arg) {
  int rc = 0;
  p->leaves_on_disk = BFH_LEAVES_ON_DISK_WHOLE; /* a file per leaf, read whole */
  for (size_t pi = 0; pi < 2 && rc == 0; pi++) {
    p->placement = SWEEP_PLACEMENTS[pi];
    exp_target_t t = {NULL, p, dir};
    if (exp_authors_target(p, dir, &p->authors) != BFH_OK) return -1;
    char series[40];
    if (pi == 0) {
      rc = measure_rows(c, x, &t, w, BFH_SEARCH_SCAN, 0, 0, bfh_method_name(BFH_SEARCH_SCAN), cells,
                        arg);
      if (rc == 0)
        rc = measure_rows(c, x, &t, w, BFH_SEARCH_LEAVES, absent_too, 0, "leaves-file", cells, arg);
    }
    snprintf(series, sizeof series, "%s-file", exp_series_name(BFH_SEARCH_HIERARCHY, p->placement));
    if (rc == 0)
      rc = measure_rows(c, x, &t, w, BFH_SEARCH_HIERARCHY, absent_too, 0, series, cells, arg);
    exp_authors_close(p->authors);
    p->authors = NULL;
  }
  return rc;
}

int exp_measure_methods(exp_csv_t *c, const exp_ctx_t *x, exp_db_params_t *p, int absent_too,
                        int cold_too, void (*cells)(exp_csv_t *c, const void *arg),
                        const void *arg) {
  static const bfh_method methods[] = {BFH_SEARCH_SCAN, BFH_SEARCH_LEAVES, BFH_SEARCH_HIERARCHY,
                                       BFH_SEARCH_SLICED};
  char dir[1200];
  if (exp_db_get(x, p, dir, sizeof dir, NULL) != BFH_OK) return -1;
  workload_t w;
  workload_init(&w, &p->wl);
  if (x->costs == EXP_COSTS_AUTHORS)
    return measure_methods_authors(c, x, p, dir, &w, absent_too, cells, arg);
  int rc = 0;
  /* Leaves in memory; on disk, k words read per probe (ours); on disk, read whole per probe
     (the paper's classical Bloom scan). Every warm point first: a cold point evicts the
     database, and a warm point measured after it would read its tables from storage. */
  static const int leaves[] = {BFH_LEAVES_IN_MEMORY, BFH_LEAVES_ON_DISK, BFH_LEAVES_ON_DISK_WHOLE};
  static const char *const suffix[] = {"-mem", "-disk", "-whole"};
  for (int cold = 0; cold <= cold_too && rc == 0; cold++) {
    for (int li = 0; li < 3 && rc == 0; li++) {
      for (size_t pi = 0; pi < 2 && rc == 0; pi++) {
        p->leaves_on_disk = leaves[li];
        p->placement = SWEEP_PLACEMENTS[pi];
        exp_target_t t = {NULL, p, dir};
        if (exp_db_open(p, dir, &t.db) != BFH_OK) {
          rc = -1;
          break;
        }
        for (size_t mi = 0; mi < sizeof methods / sizeof methods[0] && rc == 0; mi++) {
          int scan = methods[mi] == BFH_SEARCH_SCAN;
          /* The scan reads no filter: measured once; only the hierarchy has a placement. */
          if (scan && (li > 0 || pi > 0)) continue;
          if (pi > 0 && methods[mi] != BFH_SEARCH_HIERARCHY) continue;
          char series[48]; /* "hierarchy-similarity-whole" at most */
          snprintf(series, sizeof series, "%s%s", exp_series_name(methods[mi], p->placement),
                   scan ? "" : suffix[li]);
          rc = measure_rows(c, x, &t, &w, methods[mi], absent_too && !scan, cold, series, cells,
                            arg);
        }
        if (t.db) bfh_close(t.db);
      }
    }
  }
  return rc;
}

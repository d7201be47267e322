/* The sweep of search methods, placements and leaf storage shared by Fig. 8 and Fig. 11
 * (exp_measure_methods, exp.h). */
#include "experiments/exp.h"

#include <stdio.h>
#include <string.h>

#include "experiments/exp_authors.h"

static const int SWEEP_PLACEMENTS[] = {BFH_PLACEMENT_PAPER, BFH_PLACEMENT_SIMILARITY};
/* Leaves in memory; on disk, k words read per probe (ours); on disk, read whole per probe
   (the paper's classical Bloom scan); under the authors' costs, a file per leaf. */
static const int SWEEP_LEAVES[] = {BFH_LEAVES_IN_MEMORY, BFH_LEAVES_ON_DISK,
                                   BFH_LEAVES_ON_DISK_WHOLE};
static const char *const SWEEP_SUFFIX[] = {"-mem", "-disk", "-whole"};
static const bfh_method SWEEP_METHODS[] = {BFH_SEARCH_SCAN, BFH_SEARCH_LEAVES, BFH_SEARCH_HIERARCHY,
                                           BFH_SEARCH_SLICED};
#define SWEEP_NLEAVES 3
#define SWEEP_NMETHODS 4
#define SERIES_CAP 48 /* "hierarchy-similarity-whole" at most */

/* The series of method mi with leaves li (SWEEP_NLEAVES: the authors' leaf files) in placement
   pi into buf, or NULL if the sweep does not measure it: the scan reads no filter (measured
   once, leaves in memory, paper placement), only the hierarchy has a placement, the authors'
   profile has no bit-sliced index. */
static const char *series_name(size_t mi, size_t li, size_t pi, char buf[SERIES_CAP]) {
  const bfh_method m = SWEEP_METHODS[mi];
  if (m == BFH_SEARCH_SCAN)
    return li == 0 || li == SWEEP_NLEAVES ? (pi == 0 ? "scan" : NULL) : NULL;
  if (pi > 0 && m != BFH_SEARCH_HIERARCHY) return NULL;
  if (li == SWEEP_NLEAVES && m == BFH_SEARCH_SLICED) return NULL;
  snprintf(buf, SERIES_CAP, "%s%s", exp_series_name(m, SWEEP_PLACEMENTS[pi]),
           li == SWEEP_NLEAVES ? "-file" : SWEEP_SUFFIX[li]);
  return buf;
}

const char *exp_sweep_series_at(int costs, size_t i) {
  static char names[EXP_NCOSTS][SWEEP_NLEAVES * SWEEP_NMETHODS * 2][SERIES_CAP];
  static size_t count[EXP_NCOSTS];
  if (costs < 0 || costs >= EXP_NCOSTS) return NULL;
  if (!count[costs]) { /* scan first, then per leaf location: leaves, hierarchy, sliced */
    const size_t l0 = costs == EXP_COSTS_AUTHORS ? SWEEP_NLEAVES : 0;
    const size_t l1 = costs == EXP_COSTS_AUTHORS ? SWEEP_NLEAVES + 1 : SWEEP_NLEAVES;
    for (size_t li = l0; li < l1; li++)
      for (size_t mi = 0; mi < SWEEP_NMETHODS; mi++)
        for (size_t pi = 0; pi < 2; pi++) {
          char buf[SERIES_CAP];
          const char *name = series_name(mi, li, pi, buf);
          if (name) snprintf(names[costs][count[costs]++], SERIES_CAP, "%s", name);
        }
  }
  return i < count[costs] ? names[costs][i] : NULL;
}

int exp_sweep_series_wanted(const exp_ctx_t *x, const char *name) {
  if (!x->series) return 1;
  const size_t len = strlen(name);
  for (const char *p = x->series; *p;) {
    const size_t n = strcspn(p, ",");
    if (n == len && strncmp(p, name, n) == 0) return 1;
    p += n + (p[n] == ',');
  }
  return 0;
}

int exp_series_check(const char *list, exp_series_at_fn at, const void *arg, char *bad,
                     size_t cap) {
  for (const char *p = list;; p++) {
    const size_t n = strcspn(p, ",");
    int found = 0;
    const char *name;
    for (size_t i = 0; (name = at(arg, i)) && !found; i++)
      found = strlen(name) == n && strncmp(p, name, n) == 0;
    if (!found) {
      snprintf(bad, cap, "%.*s", (int)n, p);
      return -1;
    }
    p += n;
    if (!*p) return 0;
  }
}

void exp_series_names(exp_series_at_fn at, const void *arg, char *out, size_t cap) {
  const char *name;
  out[0] = '\0';
  for (size_t i = 0; (name = at(arg, i)); i++) {
    const size_t len = strlen(out);
    snprintf(out + len, cap - len, "%s%s", i ? "," : "", name);
  }
}

int exp_cache_wanted(const exp_ctx_t *x) {
  return x->cache ? x->cache : EXP_CACHE_WARM | (x->cold ? EXP_CACHE_COLD : 0);
}

/* Measures method on t (present values, absent ones with absent_too, the value id *fixed
   unless NULL or not stored) and writes a row each, named series. */
static int measure_rows(exp_csv_t *c, const exp_ctx_t *x, exp_target_t *t, const workload_t *w,
                        bfh_method method, int absent_too, const uint64_t *fixed, int cold,
                        const char *series, void (*cells)(exp_csv_t *c, const void *arg),
                        const void *arg) {
  const int fixed_too = fixed && *fixed < w->cfg.n;
  for (int q = 0; q < 3; q++) { /* present, absent, fixed */
    if ((q == 1 && !absent_too) || (q == 2 && !fixed_too)) continue;
    exp_search_result_t r;
    int rc = q == 2 ? exp_measure_fixed_into(c, x, t, w, method, *fixed, cold, &r)
                    : exp_measure_into(c, x, t, w, method, q == 0, cold, &r);
    if (rc != BFH_OK) return -1;
    exp_csv_str(c, "series", series);
    if (q == 2) exp_csv_u64(c, "fixed_value", *fixed);
    if (cells) cells(c, arg);
    exp_csv_row(c);
  }
  return 0;
}

/* 1 if x wants a series of the sweep with leaves li in placement pi (any li with li < 0). */
static int group_wanted(const exp_ctx_t *x, int li, size_t pi) {
  const size_t l0 = li < 0 ? 0 : (size_t)li, l1 = li < 0 ? SWEEP_NLEAVES + 1 : (size_t)li + 1;
  for (size_t l = l0; l < l1; l++)
    for (size_t mi = 0; mi < SWEEP_NMETHODS; mi++) {
      char buf[SERIES_CAP];
      const char *name = series_name(mi, l, pi, buf);
      if (name && exp_sweep_series_wanted(x, name)) return 1;
    }
  return 0;
}

/* exp_measure_methods with the authors' costs: warm points (warm), then cold ones (cold_too,
   xc's queries). */
static int measure_methods_authors(exp_csv_t *c, const exp_ctx_t *x, const exp_ctx_t *xc,
                                   exp_db_params_t *p, const char *dir, const workload_t *w,
                                   int absent_too, const uint64_t *fixed, int warm, int cold_too,
                                   void (*cells)(exp_csv_t *c, const void *arg), const void *arg) {
  int rc = 0;
  p->leaves_on_disk = BFH_LEAVES_ON_DISK_WHOLE; /* a file per leaf, read whole */
  for (int cold = warm ? 0 : 1; cold <= cold_too && rc == 0; cold++) {
    for (size_t pi = 0; pi < 2 && rc == 0; pi++) {
      if (!group_wanted(x, SWEEP_NLEAVES, pi)) continue;
      p->placement = SWEEP_PLACEMENTS[pi];
      exp_target_t t = {NULL, p, dir};
      if (exp_authors_target(p, dir, &p->authors) != BFH_OK) return -1;
      for (size_t mi = 0; mi < SWEEP_NMETHODS && rc == 0; mi++) {
        char buf[SERIES_CAP];
        const char *series = series_name(mi, SWEEP_NLEAVES, pi, buf);
        if (!series || !exp_sweep_series_wanted(x, series)) continue;
        const int scan = SWEEP_METHODS[mi] == BFH_SEARCH_SCAN;
        rc = measure_rows(c, cold ? xc : x, &t, w, SWEEP_METHODS[mi], absent_too && !scan, fixed,
                          cold, series, cells, arg);
      }
      exp_authors_close(p->authors);
      p->authors = NULL;
    }
  }
  return rc;
}

int exp_measure_methods(exp_csv_t *c, const exp_ctx_t *x, exp_db_params_t *p, int absent_too,
                        const uint64_t *fixed, int cold_too,
                        void (*cells)(exp_csv_t *c, const void *arg), const void *arg) {
  const int authors = x->costs == EXP_COSTS_AUTHORS;
  const int cache = exp_cache_wanted(x);
  const int warm = (cache & EXP_CACHE_WARM) != 0;
  cold_too = cold_too && (cache & EXP_CACHE_COLD);
  if ((!warm && !cold_too) || (!group_wanted(x, -1, 0) && !group_wanted(x, -1, 1)))
    return 0; /* nothing of this sweep asked for: not even its database built */
  char dir[1200];
  if (exp_db_get(x, p, dir, sizeof dir, NULL) != BFH_OK) return -1;
  workload_t w;
  workload_init(&w, &p->wl);
  /* Every warm point first: a cold point evicts the database, and a warm point measured after
     it would read its tables from storage. A cold point takes x->cold_queries queries. */
  exp_ctx_t xc = *x;
  if (x->cold_queries > 0 && x->cold_queries < xc.queries) xc.queries = x->cold_queries;
  if (authors)
    return measure_methods_authors(c, x, &xc, p, dir, &w, absent_too, fixed, warm, cold_too, cells,
                                   arg);
  int rc = 0;
  for (int cold = warm ? 0 : 1; cold <= cold_too && rc == 0; cold++) {
    for (size_t li = 0; li < SWEEP_NLEAVES && rc == 0; li++) {
      for (size_t pi = 0; pi < 2 && rc == 0; pi++) {
        if (!group_wanted(x, (int)li, pi)) continue; /* a reopen takes a minute at 500M */
        p->leaves_on_disk = SWEEP_LEAVES[li];
        p->placement = SWEEP_PLACEMENTS[pi];
        exp_target_t t = {NULL, p, dir};
        if (exp_db_open(p, dir, &t.db) != BFH_OK) {
          rc = -1;
          break;
        }
        for (size_t mi = 0; mi < SWEEP_NMETHODS && rc == 0; mi++) {
          char buf[SERIES_CAP];
          const char *series = series_name(mi, li, pi, buf);
          if (!series || !exp_sweep_series_wanted(x, series)) continue;
          const int scan = SWEEP_METHODS[mi] == BFH_SEARCH_SCAN;
          rc = measure_rows(c, cold ? &xc : x, &t, &w, SWEEP_METHODS[mi], absent_too && !scan,
                            fixed, cold, series, cells, arg);
        }
        if (t.db) bfh_close(t.db);
      }
    }
  }
  return rc;
}

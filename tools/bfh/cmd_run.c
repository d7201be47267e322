/* bfh run: the paper's tables and figures (experiments/drivers.h), REPORT.md, and the
 * databases they share (cmd.h). The one command that uses the experiments' harness. */
#include <stdio.h>
#include <string.h>

#include "bfh.h"
#include "experiments/drivers.h"
#include "experiments/exp.h"
#include "experiments/report.h"
#include "tools/bfh/cmd.h"

/* Prints where d's CSV files went ("fig10 done in 1.0 s -> out/fig10.csv, out/fig12.csv"),
   or that it failed, under the name it was asked for. */
static int run_one(const exp_ctx_t *x, const char *name, const exp_driver_t *d) {
  double t0 = exp_now();
  int rc = d->fn(x);
  double dt = exp_now() - t0;
  if (rc == 0) {
    printf("%-8s done in %7.1f s ->", name, dt);
    for (const char *p = d->outputs; *p;) {
      size_t len = strcspn(p, ",");
      printf("%s %s/%.*s.csv", p == d->outputs ? "" : ",", x->out_dir, (int)len, p);
      p += len + (p[len] == ',');
    }
    putchar('\n');
  } else {
    printf("%-8s FAILED after %.1f s\n", name, dt);
  }
  fflush(stdout);
  return rc;
}

/* Runs the experiments `what` names; returns how many failed, or -1 for an unknown name.
   both_costs: `all` also runs Fig. 8, and at the medium scale Fig. 13 (with Table III), with the
   authors' costs (their Fig. 13 at the small scale would triple the main job's time; at the
   small scale their Fig. 8 takes 5 queries per point, the fewest --queries allows, as its
   scans of every table as text are most of the main job's time). */
static int run_experiments(exp_ctx_t *x, const char *what, const char *cmdline, int both_costs) {
  if (strcmp(what, "report") == 0) { /* every plot and REPORT.md from the CSVs in --out */
    int failures = exp_plot_all(x);
    exp_report_run_t run = {cmdline, -1, failures};
    if (exp_report_write(x, &run) != 0) return failures + 1;
    printf("report   -> %s/REPORT.md\n", x->out_dir);
    return failures;
  }
  if (strcmp(what, "all") != 0) {
    const exp_driver_t *d = exp_driver_find(what);
    return d ? run_one(x, what, d) != 0 : -1;
  }
  int failures = 0;
  const exp_driver_t *d;
  for (size_t i = 0; (d = exp_driver_at(i)); i++)
    if (!d->on_request) failures += run_one(x, d->name, d) != 0;
  if (both_costs) {
    exp_ctx_t xa = *x;
    xa.costs = EXP_COSTS_AUTHORS;
    int fig13 = x->scale == EXP_MEDIUM;
    if (x->scale == EXP_SMALL) xa.queries = 5;
    printf("%s again with the authors' costs (--costs bfh: bfh's only)\n",
           fig13 ? "fig8 and fig13" : "fig8");
    failures += run_one(&xa, "fig8", exp_driver_find("fig8")) != 0;
    if (fig13) failures += run_one(&xa, "fig13", exp_driver_find("fig13")) != 0;
  }
  return failures;
}

/* The value whose name name(i) (i < n) is arg, for option opt; -1 after a usage error. */
static int choice(const cli_t *c, const char *opt, const char *arg, const char *(*name)(int),
                  int n) {
  char names[64] = "";
  for (int i = 0; i < n; i++) {
    if (strcmp(name(i), arg) == 0) return i;
    snprintf(names + strlen(names), sizeof names - strlen(names), "%s%s", i ? "|" : "", name(i));
  }
  cli_args_usage_error(c->cmd, "--%s: unknown value '%s' (one of %s)", opt, arg, names);
  return -1;
}

static const char *scale_name(int s) {
  return exp_scale_name((exp_scale_t)s);
}

/* The names --series takes: the sweep's under the cost profile *arg, or ycsb's. */
static const char *sweep_series_at(const void *arg, size_t i) {
  return exp_sweep_series_at(*(const int *)arg, i);
}

static const char *ycsb_series_at(const void *arg, size_t i) {
  (void)arg;
  return exp_ycsb_series_at(i);
}

/* --series, --cache and --cold-queries into x (the rows of Fig. 8 and Fig. 11 to measure, so
   that a long point runs in pieces): 0, or -1 after a usage error. */
static int run_subset(const cli_t *c, exp_ctx_t *x) {
  const cli_run_t *r = &c->run;
  const char *what = c->pos[0];
  const int sweep = strcmp(what, "fig8") == 0 || strcmp(what, "fig11") == 0;
  const int ycsb = strcmp(what, "ycsb") == 0;
  if ((r->series && !sweep && !ycsb) || (r->cache && !sweep)) {
    cli_args_usage_error(c->cmd,
                         "--series chooses rows of fig8, fig11 and ycsb, --cache of fig8 and "
                         "fig11, not of %s",
                         what);
    return -1;
  }
  if (cli_args_given(c, "cold-queries") &&
      (r->cold_queries < 1 || r->cold_queries > EXP_COLD_QUERIES)) {
    cli_args_usage_error(c->cmd, "--cold-queries: %d is not in 1..%d", r->cold_queries,
                         EXP_COLD_QUERIES);
    return -1;
  }
  x->cold_queries = r->cold_queries;
  if (r->cache) {
    static const char *const CACHES[] = {"warm", "cold", "both"};
    int i = 0;
    while (i < 3 && strcmp(r->cache, CACHES[i]) != 0) i++;
    if (i == 3) {
      cli_args_usage_error(c->cmd, "--cache: unknown value '%s' (one of warm|cold|both)", r->cache);
      return -1;
    }
    x->cache = i + 1; /* EXP_CACHE_WARM, EXP_CACHE_COLD, both bits */
    if (x->cache & EXP_CACHE_COLD) x->cold = 1;
  }
  x->series = r->series;
  if (!x->series) return 0;
  const exp_series_at_fn at = ycsb ? ycsb_series_at : sweep_series_at;
  char bad[128], names[512];
  if (exp_series_check(x->series, at, &x->costs, bad, sizeof bad) == 0) return 0;
  exp_series_names(at, &x->costs, names, sizeof names);
  if (ycsb)
    cli_args_usage_error(c->cmd, "--series: unknown source or method '%s' of ycsb (%s)", bad,
                         names);
  else
    cli_args_usage_error(c->cmd, "--series: unknown series '%s' (with --costs %s: %s)", bad,
                         exp_costs_name(x->costs), names);
  return -1;
}

/* The experiments' context of c's options: x, or NULL after a usage error. */
static exp_ctx_t *run_context(const cli_t *c, exp_ctx_t *x) {
  const cli_run_t *r = &c->run;
  *x = (exp_ctx_t){.scale = EXP_SMALL,
                   .engine = c->opt.engine,
                   .engine_given = cli_args_given(c, "engine"),
                   .out_dir = r->out_dir,
                   .work_dir = r->work_dir,
                   .plots_dir = r->plots_dir,
                   .queries = r->queries < 5      ? 5
                              : r->queries > 1000 ? 1000
                                                  : r->queries,
                   .queries_given = cli_args_given(c, "queries"),
                   .keep_db = r->keep_db,
                   .cold = r->cold,
                   .max_n = r->max_n,
                   .min_n = r->min_n,
                   .no_plot = r->no_plot,
                   .costs = EXP_COSTS_BFH,
                   .compression = cli_args_given(c, "compression") ? (int)c->opt.compression : -1};
  int v = 0;
  uint64_t n = 0;
  if (r->scale && r->scale[0] >= '0' && r->scale[0] <= '9') { /* --scale N */
    if (cli_args_parse_num(r->scale, &n) != 0 || n == 0) {
      cli_args_usage_error(c->cmd, "--scale: '%s' is not a database size", r->scale);
      return NULL;
    }
    x->scale = EXP_PAPER;
    x->n = x->min_n = x->max_n = n;
  } else if (r->scale && (v = choice(c, "scale", r->scale, scale_name, EXP_NSCALES)) < 0) {
    return NULL;
  } else if (r->scale) {
    x->scale = (exp_scale_t)v;
  }
  if (r->costs && (v = choice(c, "costs", r->costs, exp_costs_name, EXP_NCOSTS)) < 0) return NULL;
  if (r->costs) x->costs = v;
  return run_subset(c, x) == 0 ? x : NULL;
}

int cmd_run(cli_t *c) {
  exp_ctx_t ctx, *x = run_context(c, &ctx);
  if (!x) return EXIT_ERROR;
  const char *what = c->pos[0];
  char work[1100];
  int own_work = !x->work_dir;
  if (own_work) {
    snprintf(work, sizeof work, "%s/db", x->out_dir);
    x->work_dir = work;
  }
  /* The 500M point of Table I and Fig. 8 alone would take longer than the rest of the paper
     scale together (~25 GB of inserts, then cold scans of it): asked for, not by default
     (--max-n 500M, or --min-n 500M for that point alone). */
  if (x->scale == EXP_PAPER && !x->n && !cli_args_given(c, "max-n") &&
      !cli_args_given(c, "min-n") && strcmp(what, "report") != 0) {
    x->max_n = EXP_PAPER_DEFAULT_MAX_N;
    printf("paper scale: database sizes up to %llu (--max-n 500M adds the 500M point)\n",
           (unsigned long long)x->max_n);
  }
  double t0 = exp_now();
  /* `all` at small and medium scale with the own engine shows Fig. 8 (and at medium Fig. 13)
     under both cost profiles, unless --costs names one. */
  int both_costs = strcmp(what, "all") == 0 && !cli_args_given(c, "costs") &&
                   x->scale != EXP_PAPER && exp_engine_is_own(x->engine);
  int failures = run_experiments(x, what, c->cmdline, both_costs);
  if (failures < 0) return cli_args_usage_error(c->cmd, "unknown experiment '%s'", what);
  if (strcmp(what, "all") == 0) {
    printf("all      done in %7.1f s (%s scale, engine %s), %d failed\n", exp_now() - t0,
           exp_scale_name(x->scale), exp_engine_name(x->engine), failures);
    /* The paper and ours side by side, from the CSVs just written. */
    exp_report_run_t run = {c->cmdline, exp_now() - t0, failures};
    if (exp_report_write(x, &run) == 0)
      printf("report   -> %s/REPORT.md\n", x->out_dir);
    else
      failures++;
  }
  fprintf(stderr, "bfh run: %s in %.1f s, %d failed\n", what, exp_now() - t0, failures);
  exp_db_cleanup(x);                                    /* the shared databases, unless --keep */
  if (!x->keep_db && own_work) exp_rmtree(x->work_dir); /* only the directory we chose */
  return failures ? 1 : 0;
}

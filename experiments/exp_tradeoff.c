/* Beyond the paper: the stand-alone index trade-off, write cost against search time.
 *
 * Not an artifact of the paper. LevelDB++ (Qader, Cheng, Hristidis, SIGMOD 2018) found that
 * embedded indexes (per-table filters) write faster and take less space, while a stand-alone
 * index (a second store keyed by value||key) answers queries faster. This driver redraws that
 * picture with bfh in it, on one engine, in one run. Three databases per workload, each built
 * fresh by random-order puts of N entries:
 *   bare        value filters off: the engine alone, searched by SCAN
 *   bfh         value filters, block filters and the memtable index (exp_db_params_t.beyond),
 *               searched by HIERARCHY, SLICED and AUTO (three series from one database)
 *   standalone  value filters off, the stand-alone index on, searched by STANDALONE
 * The engine is --engine's. On an engine without BFH_ENGINE_CAN_STANDALONE (none of the
 * read-write ones today) bare and bfh run alone: standalone is left out and so are the goals,
 * which compare against it; the run says so and succeeds.
 * and two workloads: unique values (domain 100%) and low cardinality (domain 1%, ~100 keys per
 * value; a present query asks for one of those values).
 *
 * Ingest: puts + final flush, the median of 3 builds at small scale, of 1 at medium and paper
 * scale (a 10M build takes minutes; the `reps` column says which), the configurations
 * alternating within each round. Write amplification: (bytes_written +
 * standalone_bytes_written) / bytes put (key + value lengths), from bfh_stats after the flush
 * of the last build. Size: every file under the database directory, bfh-standalone/ included
 * (apparent sizes). Memory, two figures: index_memory_stats_bytes is what bfh_stats reports
 * for the value index (leaves, internal nodes, bit-sliced index, block filters; bfh only);
 * rss_anon_bytes is measured: RssAnon of a forked child that opened the database and ran all
 * its queries (after malloc_trim, so that the parent's freed heap does not count), and
 * rss_anon_over_bare_bytes is that minus bare's of the same workload. Search: medians of the
 * queries (exp_search_measure, warm cache), present and absent values, in that child: the
 * second pass of the same queries (the first pass's medians are in *_first_pass_s).
 *
 * Geometry: the paper's (2 MiB tables, 4 MiB memtable, m = 2M, k = 3, d = 5) at N >= 1M; below,
 * shrunk by 1M/N so that the small scale keeps 1M's table count (and compactions).
 * N: small 100k; medium 1M; paper 1M and 10M.
 *
 * The goals computed from the figures (tradeoff_goals.csv, and printed): (a) bfh's ingest
 * overhead over bare at most 1/5 of standalone's; (b) AUTO's median present-value latency at
 * most 2x STANDALONE's; (c) AUTO's median absent-value latency at most STANDALONE's.
 */
#include <ftw.h>
#include <malloc.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "experiments/drivers.h"
#include "experiments/exp.h"

#define MAX_SERIES 3

typedef struct config {
  const char *name;
  int value_filters, beyond, standalone;
  bfh_method series[MAX_SERIES];
  int nseries;
} config_t;

static const config_t CONFIGS[] = {
    {"bare", 0, 0, 0, {BFH_SEARCH_SCAN}, 1},
    {"bfh", 1, 1, 0, {BFH_SEARCH_HIERARCHY, BFH_SEARCH_SLICED, BFH_SEARCH_AUTO}, 3},
    {"standalone", 0, 0, 1, {BFH_SEARCH_STANDALONE}, 1},
};
#define NCONFIGS (sizeof CONFIGS / sizeof CONFIGS[0])
enum { BARE = 0, BFH = 1, STANDALONE = 2 };

static const double DOMAINS[] = {100.0, 1.0};
#define NDOMAINS (sizeof DOMAINS / sizeof DOMAINS[0])
#define MAX_REPS 3

/* What a child measured on one database (passed back through a pipe). */
typedef struct probe {
  int rc;
  uint64_t rss_anon; /* bytes, after the open and every query */
  int have_stats;
  bfh_db_stats stats;                   /* after the queries */
  exp_search_result_t r[MAX_SERIES][2]; /* [series][0: present, 1: absent] */
  double first[MAX_SERIES][2];          /* the first pass's median, seconds (see probe_run) */
} probe_t;

/* Everything measured for one configuration at one (N, domain). */
typedef struct point {
  exp_db_params_t p;
  char dir[1200];
  double ingest[MAX_REPS];
  double ingest_s; /* median */
  exp_build_result_t last;
  uint64_t disk_bytes;
  probe_t probe;
} point_t;

static int cmp_dbl(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static uint64_t tree_bytes; /* summed by add_file */

static int add_file(const char *path, const struct stat *sb, int flag, struct FTW *ftw) {
  (void)path;
  (void)ftw;
  if (flag == FTW_F && S_ISREG(sb->st_mode)) tree_bytes += (uint64_t)sb->st_size;
  return 0;
}

/* Apparent size of every regular file under dir, recursively. */
static uint64_t dir_bytes(const char *dir) {
  tree_bytes = 0;
  nftw(dir, add_file, 16, FTW_PHYS);
  return tree_bytes;
}

/* RssAnon of this process in bytes (0 if /proc does not say). */

/* The child's work: open, run every series' queries, report memory. */
static void probe_run(const exp_ctx_t *x, const config_t *cfg, point_t *pt, probe_t *out) {
  memset(out, 0, sizeof *out);
  malloc_trim(0); /* the parent's freed heap, resident in the copy, is not ours */
  workload_t w;
  workload_init(&w, &pt->p.wl);
  exp_target_t t = {NULL, &pt->p, pt->dir};
  out->rc = exp_db_open(&pt->p, pt->dir, &t.db);
  for (int s = 0; s < cfg->nseries && out->rc == BFH_OK; s++)
    for (int absent = 0; absent < 2 && out->rc == BFH_OK; absent++) {
      exp_progress("tradeoff n=%llu domain %g%%: %s, %s search (%s values)",
                   (unsigned long long)pt->p.wl.n, pt->p.wl.domain_pct, cfg->name,
                   exp_method_name(cfg->series[s]), absent ? "absent" : "present");
      /* The same queries twice, the second pass measured: a fresh process opens each table
         of a store at its first read (bfh's value index opens the database's at the open,
         the stand-alone index and a bare database open theirs lazily) and checks each block's
         CRC at its first read. The first pass pays that once, as a long-running process
         would; the second compares the methods, not the state of the table cache. */
      exp_search_result_t first;
      out->rc = exp_search_measure(&t, &w, cfg->series[s], !absent, x->queries, EXP_QUERY_SEED, 0,
                                   &first);
      if (out->rc == BFH_OK)
        out->rc = exp_search_measure(&t, &w, cfg->series[s], !absent, x->queries, EXP_QUERY_SEED, 0,
                                     &out->r[s][absent]);
      out->first[s][absent] = first.time_s;
      exp_progress_done();
    }
  if (out->rc == BFH_OK) {
    out->have_stats = exp_db_stats(t.db, &out->stats);
    out->rss_anon = exp_rss_anon();
  }
  if (t.db) bfh_close(t.db);
}

typedef struct probe_job {
  const exp_ctx_t *x;
  const config_t *cfg;
  point_t *pt;
} probe_job_t;

static void probe_child(void *arg, void *out) {
  probe_job_t *j = arg;
  probe_run(j->x, j->cfg, j->pt, out);
}

/* Runs probe_run in a forked child, so that its RssAnon holds this database's structures and
   nothing another configuration left behind. 0 or -1. */
static int probe(const exp_ctx_t *x, const config_t *cfg, point_t *pt) {
  probe_job_t j = {x, cfg, pt};
  if (exp_in_child(probe_child, &j, &pt->probe, sizeof pt->probe) != 0 || pt->probe.rc != BFH_OK) {
    fprintf(stderr, "bfh: tradeoff: measuring %s (%s) failed\n", cfg->name, pt->dir);
    return -1;
  }
  return 0;
}

static void point_params(const exp_ctx_t *x, uint64_t n, double domain, const config_t *cfg,
                         point_t *pt) {
  exp_db_params_init(&pt->p, x, n);
  /* x->engine; standalone is only run on an engine that keeps the index (exp_tradeoff). */
  if (n < 1000000) exp_db_params_shrink(&pt->p, 1000000.0 / (double)n);
  pt->p.wl.order = WORKLOAD_RANDOM;
  pt->p.wl.domain_pct = domain;
  pt->p.value_filters = cfg->value_filters;
  pt->p.beyond = cfg->beyond;
  pt->p.standalone = cfg->standalone;
  snprintf(pt->dir, sizeof pt->dir, "%s/tradeoff-%s-n%llu-dom%g", x->work_dir, cfg->name,
           (unsigned long long)n, domain);
}

/* Builds every configuration reps times (alternating, the last build kept), then measures
   each in a child. 0 or -1. */
static int measure_points(const exp_ctx_t *x, uint64_t n, double domain, int reps, size_t nconf,
                          point_t pts[NCONFIGS]) {
  for (size_t c = 0; c < nconf; c++) point_params(x, n, domain, &CONFIGS[c], &pts[c]);
  for (int r = 0; r < reps; r++)
    for (size_t c = 0; c < nconf; c++) {
      if (exp_db_build_in_child(x, &pts[c].p, pts[c].dir, &pts[c].last) != BFH_OK) return -1;
      pts[c].ingest[r] = pts[c].last.total_s;
    }
  for (size_t c = 0; c < nconf; c++) {
    point_t *pt = &pts[c];
    double sorted[MAX_REPS];
    memcpy(sorted, pt->ingest, sizeof sorted);
    qsort(sorted, (size_t)reps, sizeof sorted[0], cmp_dbl);
    pt->ingest_s = sorted[(reps - 1) / 2];
    pt->disk_bytes = dir_bytes(pt->dir);
    if (probe(x, &CONFIGS[c], pt) != 0) return -1;
  }
  return 0;
}

/* Memory bfh_stats reports for the value index. */
static uint64_t index_memory(const bfh_db_stats *st) {
  return st->leaf_memory_bytes + st->internal_bytes + st->sliced_bytes + st->block_filter_bytes;
}

static void write_rows(exp_csv_t *csv, const exp_ctx_t *x, int reps, size_t nconf,
                       const point_t pts[NCONFIGS]) {
  for (size_t c = 0; c < nconf; c++) {
    const config_t *cfg = &CONFIGS[c];
    const point_t *pt = &pts[c];
    const bfh_db_stats *bs = &pt->last.stats, *qs = &pt->probe.stats;
    double n = (double)pt->p.wl.n;
    for (int s = 0; s < cfg->nseries; s++) {
      const exp_search_result_t *pr = &pt->probe.r[s][0], *ab = &pt->probe.r[s][1];
      exp_csv_db_params(csv, x, &pt->p);
      exp_csv_str(csv, "config", cfg->name);
      exp_csv_str(csv, "series", exp_method_name(cfg->series[s]));
      exp_csv_u64(csv, "reps", (uint64_t)reps);
      exp_csv_dbl(csv, "ingest_s", pt->ingest_s);
      exp_csv_dbl(csv, "ingest_ops_per_s", n / pt->ingest_s);
      exp_csv_dbl(csv, "ingest_us_per_put", 1e6 * pt->ingest_s / n);
      exp_csv_dbl(csv, "ingest_overhead", pt->ingest_s / pts[BARE].ingest_s - 1);
      exp_csv_u64(csv, "bytes_put", pt->last.bytes_put);
      if (pt->last.have_stats) {
        exp_csv_u64(csv, "bytes_written", bs->bytes_written);
        exp_csv_u64(csv, "standalone_bytes_written", bs->standalone_bytes_written);
        /* An engine that counts no bytes written (the stock ones) has no write_amp, though
           the stand-alone index beside it counts its own. */
        if (bs->bytes_written)
          exp_csv_dbl(csv, "write_amp",
                      (double)(bs->bytes_written + bs->standalone_bytes_written) /
                          (double)pt->last.bytes_put);
        exp_csv_u64(csv, "old_value_reads", bs->old_value_reads);
        exp_csv_dbl(csv, "old_value_read_s", (double)bs->old_value_read_ns * 1e-9);
      }
      exp_csv_u64(csv, "disk_bytes", pt->disk_bytes);
      if (pt->probe.have_stats) {
        exp_csv_u64(csv, "tables", qs->tables);
        if (qs->tables) exp_csv_shape(csv, n / (double)qs->tables, qs->value_filter_bits);
        exp_csv_u64(csv, "table_bytes_live", qs->table_bytes);
        exp_csv_u64(csv, "standalone_tables", qs->standalone_tables);
        exp_csv_u64(csv, "standalone_bytes", qs->standalone_bytes);
        if (qs->value_filters) exp_csv_u64(csv, "index_memory_stats_bytes", index_memory(qs));
      }
      exp_csv_u64(csv, "rss_anon_bytes", pt->probe.rss_anon);
      char over[32]; /* signed: a configuration may hold less than bare */
      snprintf(over, sizeof over, "%lld",
               (long long)pt->probe.rss_anon - (long long)pts[BARE].probe.rss_anon);
      exp_csv_str(csv, "rss_anon_over_bare_bytes", over);
      exp_csv_u64(csv, "queries", (uint64_t)pr->queries);
      exp_csv_u64(csv, "wrong", (uint64_t)(pr->wrong + ab->wrong));
      exp_csv_dbl(csv, "present_results", pr->mean.results);
      exp_csv_dbl(csv, "present_time_s", pr->time_s);
      exp_csv_dbl(csv, "present_time_min_s", pr->time_min_s);
      exp_csv_dbl(csv, "present_time_max_s", pr->time_max_s);
      exp_csv_dbl(csv, "absent_time_s", ab->time_s);
      exp_csv_dbl(csv, "absent_time_min_s", ab->time_min_s);
      exp_csv_dbl(csv, "absent_time_max_s", ab->time_max_s);
      exp_csv_dbl(csv, "present_first_pass_s", pt->probe.first[s][0]);
      exp_csv_dbl(csv, "absent_first_pass_s", pt->probe.first[s][1]);
      exp_csv_row(csv);
      if (pr->wrong || ab->wrong)
        fprintf(stderr, "bfh: WARNING: tradeoff %s/%s: %d queries with wrong keys\n", cfg->name,
                exp_method_name(cfg->series[s]), pr->wrong + ab->wrong);
    }
  }
}

/* The series index of AUTO in the bfh configuration. */
static int auto_series(void) {
  for (int s = 0; s < CONFIGS[BFH].nseries; s++)
    if (CONFIGS[BFH].series[s] == BFH_SEARCH_AUTO) return s;
  return 0;
}

static void goal(exp_csv_t *csv, const exp_ctx_t *x, const point_t *pt, const char *name,
                 const char *what, double ratio, double bound) {
  int met = ratio <= bound;
  exp_csv_str(csv, "scale", exp_scale_name(x->scale));
  exp_csv_u64(csv, "n", pt->p.wl.n);
  exp_csv_dbl(csv, "domain_pct", pt->p.wl.domain_pct);
  exp_csv_str(csv, "goal", name);
  exp_csv_str(csv, "what", what);
  exp_csv_dbl(csv, "ratio", ratio);
  exp_csv_dbl(csv, "bound", bound);
  exp_csv_u64(csv, "met", (uint64_t)met);
  if (pt->probe.have_stats && pt->probe.stats.tables)
    exp_csv_shape(csv, (double)pt->p.wl.n / (double)pt->probe.stats.tables,
                  pt->probe.stats.value_filter_bits);
  exp_csv_row(csv);
  /* The goals are stated for unique values; at low cardinality the ratios are for reference
     (bfh reads a block in most tables for a value's many keys, the index one range). */
  int unique = pt->p.wl.domain_pct >= 100;
  printf("tradeoff n=%-9llu domain %3g%%: (%s) %-52s %8.3f (%s <= %g: %s)\n",
         (unsigned long long)pt->p.wl.n, pt->p.wl.domain_pct, name, what, ratio,
         unique ? "goal" : "reference, the goal is for unique values:", bound,
         met      ? "met"
         : unique ? "NOT met"
                  : "above");
}

/* The three goals at one (N, domain), from the measured figures. An overhead of standalone
   at or below zero leaves goal (a) undefined: its ratio is then written as inf. */
static void write_goals(exp_csv_t *csv, const exp_ctx_t *x, const point_t pts[NCONFIGS]) {
  double bare = pts[BARE].ingest_s;
  double ov_bfh = pts[BFH].ingest_s / bare - 1, ov_sa = pts[STANDALONE].ingest_s / bare - 1;
  int a = auto_series();
  const exp_search_result_t *au = pts[BFH].probe.r[a], *sa = pts[STANDALONE].probe.r[0];
  goal(csv, x, &pts[BFH], "a", "bfh ingest overhead / standalone's",
       ov_sa > 0 ? ov_bfh / ov_sa : INFINITY, 0.2);
  goal(csv, x, &pts[BFH], "b", "AUTO present latency / STANDALONE's", au[0].time_s / sa[0].time_s,
       2.0);
  goal(csv, x, &pts[BFH], "c", "AUTO absent latency / STANDALONE's", au[1].time_s / sa[1].time_s,
       1.0);
}

static const char *const TRADEOFF_COLS[] = {"config",
                                            "series",
                                            "reps",
                                            "ingest_s",
                                            "ingest_ops_per_s",
                                            "ingest_us_per_put",
                                            "ingest_overhead",
                                            "bytes_put",
                                            "bytes_written",
                                            "standalone_bytes_written",
                                            "write_amp",
                                            "old_value_reads",
                                            "old_value_read_s",
                                            "disk_bytes",
                                            "tables",
                                            "table_bytes_live",
                                            "standalone_tables",
                                            "standalone_bytes",
                                            "index_memory_stats_bytes",
                                            "rss_anon_bytes",
                                            "rss_anon_over_bare_bytes",
                                            "queries",
                                            "wrong",
                                            "present_results",
                                            "present_time_s",
                                            "present_time_min_s",
                                            "present_time_max_s",
                                            "absent_time_s",
                                            "absent_time_min_s",
                                            "absent_time_max_s",
                                            "present_first_pass_s",
                                            "absent_first_pass_s",
                                            NULL};
static const char *const GOAL_COLS[] = {"scale", "n",     "domain_pct", "goal", "what",
                                        "ratio", "bound", "met",        NULL};

int exp_tradeoff(const exp_ctx_t *x) {
  static const uint64_t small[] = {100000, 0};
  static const uint64_t medium[] = {1000000, 0};
  static const uint64_t paper[] = {1000000, 10000000, 0};
  const uint64_t *ns = exp_sizes(x, paper, medium, small);
  /* Three builds per configuration at small scale; one above (a 10M build takes minutes). */
  const int reps = x->scale == EXP_SMALL ? MAX_REPS : 1;
  const char *cols[64];
  exp_cols_cat(cols, 64, EXP_DB_COLS, TRADEOFF_COLS, (const char *const *)NULL);
  exp_csv_t *csv = exp_csv_open_subset(x, "tradeoff", cols, EXP_CSV_KEY_N);
  exp_csv_t *goals =
      csv ? exp_csv_open_subset(x, "tradeoff_goals", GOAL_COLS, EXP_CSV_KEY_N) : NULL;
  int rc = csv && goals ? 0 : -1;
  /* The configurations run: standalone (the last) only where the engine keeps the index. */
  size_t nconf = exp_engine_can(x->engine, BFH_ENGINE_CAN_STANDALONE) ? NCONFIGS : STANDALONE;
  if (nconf < NCONFIGS)
    printf("tradeoff: the %s engine keeps no stand-alone index: bare and bfh run, standalone "
           "and the goals (which compare against it) are left out\n",
           exp_engine_name(x->engine));
  for (size_t i = 0; rc == 0 && ns[i]; i++) {
    if (!exp_size_wanted(x, ns[i])) continue;
    for (size_t d = 0; rc == 0 && d < NDOMAINS; d++) {
      static point_t pts[NCONFIGS];
      memset(pts, 0, sizeof pts);
      rc = measure_points(x, ns[i], DOMAINS[d], reps, nconf, pts);
      if (rc == 0) {
        write_rows(csv, x, reps, nconf, pts);
        if (nconf == NCONFIGS) write_goals(goals, x, pts);
      }
      for (size_t c = 0; c < nconf; c++)
        if (pts[c].dir[0]) exp_db_drop(x, pts[c].dir);
    }
  }
  if (exp_csv_close(goals) != 0) rc = -1;
  if (exp_csv_close(csv) != 0) rc = -1;
  if (rc == 0) rc = exp_plot(x, "tradeoff");
  return rc;
}

/* Beyond the paper: what the value index costs in memory against what it buys in search time.
 *
 * Not an artifact of the paper. Five configurations of the same workload, each a database
 * built fresh by random-order puts of N entries and searched in a process of its own:
 *   paper       the paper's layout (m = 2M bits per table, every leaf in memory, the hierarchy
 *               and the bit-sliced index over them) with block filters and the memtable index:
 *               searched by HIERARCHY (the paper's method) and AUTO over it
 *   lean        the lean layout (index_bits_per_value = LEAN_BITS, doc/search.md "The lean
 *               index"), block filters and memtable index: searched by AUTO
 *   lean-map    the lean layout with value-to-block maps (index_bits_per_value =
 *               BFH_LEAN_MAP_BITS, block_maps = 1: the tables carry maps, whose heads replace
 *               the block filters in memory), with the k that layout gives a new database
 *               (8; the others keep the paper's 3): searched by AUTO
 *   cuckoo      the Cuckoo Index (cuckoo_index = 1) over the same tables, searched by CUCKOO,
 *               which reads the tables it names through their block filters; the Bloom index
 *               beside it (which CUCKOO does not use) in the lean layout, the smallest
 *   standalone  value filters off, the stand-alone index on: searched by STANDALONE (engines
 *               with BFH_ENGINE_CAN_STANDALONE only)
 * and a sixth, bare (value filters off), built and opened for the baselines only: ingest with
 * no index, and the memory of the engine alone.
 *
 * Memory, per entry (bytes_per_entry, and the source it was taken from in bytes_source):
 *   paper, lean  bfh_stats.index_bytes (every byte the value index holds)
 *   cuckoo       cuckoo_bytes + block_filter_bytes (what CUCKOO uses; index_bytes, which also
 *                holds the unused lean Bloom index, is in its own column)
 *   standalone   measured: rss_over_bare_bytes less the engine's block cache after the
 *                queries (block_cache_after_bytes; bfh_stats knows nothing of the index's
 *                memory). The cache is the key path's, not the index's: it keeps the data
 *                blocks the validation gets read (8 MiB at most by default), which every
 *                configuration's searches fill and bare's probe, which makes no get, does not;
 *                left in, it grew with the matches per query (at 100k entries, domain 1%: 23
 *                bytes per entry instead of 4)
 * and, to cross-check the figures bfh_stats gives, the process's RssAnon (/proc/self/status,
 * after malloc_trim) in a forked child: before the open (rss_before_bytes), once the index is
 * ready (rss_ready_bytes: the open, its leaf loader waited for, for cuckoo the first CUCKOO
 * search, which builds the index, and in every configuration one SCAN, which opens every
 * table into the engine's table cache) and after the queries (rss_after_bytes).
 * rss_growth_bytes = ready - before; rss_index_bytes = that minus bare's (the index's share,
 * to set beside index_bytes); rss_over_bare_bytes = (after - before) minus the same of bare,
 * whose child does only the open and the SCAN. RssAnon counts pages, not allocations: an
 * allocation that reuses a page resident before the open, or whose pages are never written,
 * does not show in it. The peak matters too (what a machine running the open must hold): the
 * child restarts its VmHWM before the open and reads it once the index is ready;
 * rss_peak_growth_bytes is that peak over the RSS before, peak_over_bare_bytes its excess
 * over bare's, and peak_over_index that over index_bytes + memtable_index_bytes (the leaf
 * loading's transient memory shows here: doc/search.md "Folding while reading"). So the child
 * also notes the bytes malloc has handed out
 * (exp_heap_in_use) at the same two points, and heap_index_bytes is their growth minus
 * bare's: the value index's allocations, which should be index_bytes (with cuckoo the lean
 * Bloom index's too) plus memtable_index_bytes, the memtables' value index, which
 * index_bytes leaves out and bare has not (bfh.h), plus the allocator's per-block overhead.
 *
 * Search: per series, the same present and absent values twice, the second pass measured
 * (the first opens the tables, as a long-running process would have): medians and quartiles
 * of the queries, and per-query means of the tables read (tables_scanned) and data blocks
 * read (blocks_read). Ingest: puts + final flush, median of `reps` builds (1 at every scale:
 * a build at 1M takes seconds, at 100M an hour), against bare's (ingest_off_s). The cuckoo
 * configuration's ingest includes its (lean) Bloom index; the Cuckoo Index itself is built at
 * its first search, whose time is in index_ready_s (open + loading + that build).
 *
 * Geometry: the paper's (2 MiB tables, 4 MiB memtable, m = 2M, k = 3 but lean-map's 8, d = 5)
 * at N >= 1M; below, shrunk by 1M/N so that the table count stays 1M's. N: small 100k and 1M;
 * medium 10M; paper 100M (--max-n and --min-n apply). Domains 100%, 10% and 1%.
 */
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "experiments/drivers.h"
#include "experiments/exp.h"

#define LEAN_BITS 3 /* the lean layout with block filters (index_bits_per_value) */

#define MAX_SERIES 2
#define REPS 1

typedef struct config {
  const char *name;
  int value_filters, beyond, standalone, cuckoo;
  uint32_t index_bits;
  bfh_method series[MAX_SERIES];
  int nseries;
  int block_maps; /* bfh_options.block_maps (the lean layout with value-to-block maps) */
} config_t;

static const config_t CONFIGS[] = {
    {"bare", 0, 0, 0, 0, 0, {BFH_SEARCH_SCAN}, 0, 0},
    {"paper", 1, 1, 0, 0, 0, {BFH_SEARCH_HIERARCHY, BFH_SEARCH_AUTO}, 2, 0},
    {"lean", 1, 1, 0, 0, LEAN_BITS, {BFH_SEARCH_AUTO}, 1, 0},
    {"lean-map", 1, 1, 0, 0, BFH_LEAN_MAP_BITS, {BFH_SEARCH_AUTO}, 1, 1},
    {"cuckoo", 1, 1, 0, 1, LEAN_BITS, {BFH_SEARCH_CUCKOO}, 1, 0},
    {"standalone", 0, 0, 1, 0, 0, {BFH_SEARCH_STANDALONE}, 1, 0},
};
#define NCONFIGS (sizeof CONFIGS / sizeof CONFIGS[0])
enum { BARE = 0 };

static const double DOMAINS[] = {100.0, 10.0, 1.0};
#define NDOMAINS (sizeof DOMAINS / sizeof DOMAINS[0])

/* What a child measured on one database (passed back through a pipe). */
typedef struct probe {
  int rc;
  uint64_t rss_before, rss_ready, rss_after; /* RssAnon, bytes */
  uint64_t heap_before, heap_ready;          /* exp_heap_in_use, bytes */
  double ready_s;                            /* open + loading (+ cuckoo's first search) */
  /* VmRSS when the peak was restarted before the open, and VmHWM once the index is ready (0:
     not known) */
  uint64_t peak_from, peak_ready;
  int have_stats;
  bfh_db_stats stats;                   /* once the index is ready */
  uint64_t cache_after;                 /* bfh_stats.block_cache_bytes after the queries */
  exp_search_result_t r[MAX_SERIES][2]; /* [series][0: present, 1: absent] */
} probe_t;

/* Everything measured for one configuration at one (N, domain). */
typedef struct point {
  exp_db_params_t p;
  char dir[1200];
  int skipped; /* the engine does not have this configuration */
  double ingest_s;
  probe_t probe;
} point_t;

static int cmp_dbl(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* RssAnon of this process in bytes, after returning freed heap (0 if /proc does not say). */
static uint64_t rss_anon(void) {
  malloc_trim(0); /* freed memory still mapped would count */
  return exp_rss_anon();
}

/* One search of an absent value with method (CUCKOO: builds the Cuckoo Index; SCAN: opens
   every table). */
static int search_once(bfh_db *db, const workload_t *w, bfh_method method) {
  char val[WORKLOAD_MAX_BYTES];
  size_t vl = workload_value(w, workload_absent_value_id(w, EXP_QUERY_SEED, 999983), val);
  bfh_search_stats st;
  int rc = bfh_search(db, val, vl, method, NULL, NULL, &st);
  if (rc != BFH_OK)
    fprintf(stderr, "bfh: memory: search (%s): %s: %s\n", exp_method_name(method), bfh_strerror(rc),
            bfh_last_error(db));
  return rc;
}

/* The child's work: open, get the index ready, run every series' queries, note RssAnon. */
static void probe_run(const exp_ctx_t *x, const config_t *cfg, point_t *pt, probe_t *out) {
  memset(out, 0, sizeof *out);
  workload_t w;
  workload_init(&w, &pt->p.wl);
  exp_target_t t = {NULL, &pt->p, pt->dir};
  out->rss_before = rss_anon();
  out->heap_before = exp_heap_in_use();
  out->peak_from = exp_rss_peak_reset();
  double t0 = exp_now();
  out->rc = exp_db_open(&pt->p, pt->dir, &t.db); /* waits for the leaf loader */
  if (out->rc == BFH_OK && cfg->cuckoo) out->rc = search_once(t.db, &w, BFH_SEARCH_CUCKOO);
  out->ready_s = exp_now() - t0;
  /* One SCAN opens every table (its key filter and index, the engine's table cache), in every
     configuration alike, so that the difference to bare is the value index. */
  if (out->rc == BFH_OK) out->rc = search_once(t.db, &w, BFH_SEARCH_SCAN);
  if (out->rc == BFH_OK) {
    out->peak_ready = out->peak_from ? exp_rss_peak() : 0; /* before rss_anon's malloc_trim */
    out->rss_ready = rss_anon();
    out->heap_ready = exp_heap_in_use();
    out->have_stats = exp_db_stats(t.db, &out->stats);
  }
  for (int s = 0; s < cfg->nseries && out->rc == BFH_OK; s++)
    for (int absent = 0; absent < 2 && out->rc == BFH_OK; absent++) {
      exp_progress("memory n=%llu domain %g%%: %s, %s search (%s values)",
                   (unsigned long long)pt->p.wl.n, pt->p.wl.domain_pct, cfg->name,
                   exp_method_name(cfg->series[s]), absent ? "absent" : "present");
      exp_search_result_t first;
      out->rc = exp_search_measure(&t, &w, cfg->series[s], !absent, x->queries, EXP_QUERY_SEED, 0,
                                   &first);
      if (out->rc == BFH_OK)
        out->rc = exp_search_measure(&t, &w, cfg->series[s], !absent, x->queries, EXP_QUERY_SEED, 0,
                                     &out->r[s][absent]);
      exp_progress_done();
    }
  if (out->rc == BFH_OK) out->rss_after = rss_anon();
  bfh_db_stats after;
  if (out->rc == BFH_OK && exp_db_stats(t.db, &after)) out->cache_after = after.block_cache_bytes;
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
    fprintf(stderr, "bfh: memory: measuring %s (%s) failed\n", cfg->name, pt->dir);
    return -1;
  }
  return 0;
}

static void point_params(const exp_ctx_t *x, uint64_t n, double domain, const config_t *cfg,
                         point_t *pt) {
  exp_db_params_init(&pt->p, x, n);
  if (n < 1000000) exp_db_params_shrink(&pt->p, 1000000.0 / (double)n);
  pt->p.wl.order = WORKLOAD_RANDOM;
  pt->p.wl.domain_pct = domain;
  pt->p.value_filters = cfg->value_filters;
  pt->p.beyond = cfg->beyond;
  pt->p.standalone = cfg->standalone;
  pt->p.cuckoo = cfg->cuckoo;
  pt->p.index_bits_per_value = cfg->index_bits;
  pt->p.block_maps = cfg->block_maps;
  if (cfg->block_maps) pt->p.k = exp_db_layout_hashes(&pt->p); /* 8, not the paper's 3 */
  snprintf(pt->dir, sizeof pt->dir, "%s/memory-%s-n%llu-dom%g", x->work_dir, cfg->name,
           (unsigned long long)n, domain);
}

/* Builds configuration c REPS times and measures the last build in a child; the database is
   dropped afterwards (five of them at 100M would not fit beside each other). A configuration
   the engine does not have is skipped (pt->skipped). 0 or -1. */
static int measure_point(const exp_ctx_t *x, size_t c, point_t *pt) {
  const config_t *cfg = &CONFIGS[c];
  if (cfg->standalone && !exp_engine_can(x->engine, BFH_ENGINE_CAN_STANDALONE)) {
    fprintf(stderr, "bfh: memory: no %s configuration on the %s engine\n", cfg->name,
            exp_engine_name(x->engine));
    pt->skipped = 1;
    return 0;
  }
  double t[REPS];
  int rc = BFH_OK;
  for (int r = 0; r < REPS && rc == BFH_OK; r++) {
    exp_build_result_t b;
    rc = exp_db_build_in_child(x, &pt->p, pt->dir, &b);
    t[r] = b.total_s;
  }
  if (rc == BFH_E_UNSUPPORTED) { /* e.g. the Cuckoo Index on an engine without it (printed) */
    fprintf(stderr, "bfh: memory: no %s configuration on the %s engine\n", cfg->name,
            exp_engine_name(x->engine));
    pt->skipped = 1;
    exp_db_drop(x, pt->dir);
    return 0;
  }
  if (rc != BFH_OK) return -1;
  qsort(t, REPS, sizeof t[0], cmp_dbl);
  pt->ingest_s = t[(REPS - 1) / 2];
  int prc = probe(x, cfg, pt);
  exp_db_drop(x, pt->dir);
  return prc;
}

/* The bytes per entry a configuration's search holds, and where the figure comes from. */
static double method_bytes(const config_t *cfg, const point_t *pt, const point_t *bare,
                           const char **source) {
  const bfh_db_stats *st = &pt->probe.stats;
  if (cfg->standalone) {
    *source = "rss_over_bare"; /* less the block cache: above */
    int64_t own = (int64_t)pt->probe.rss_after - (int64_t)pt->probe.rss_before -
                  (int64_t)pt->probe.cache_after;
    int64_t base = (int64_t)bare->probe.rss_after - (int64_t)bare->probe.rss_before -
                   (int64_t)bare->probe.cache_after;
    return (double)(own - base);
  }
  if (cfg->cuckoo) {
    *source = "cuckoo_bytes+block_filter_bytes";
    return (double)(st->cuckoo_bytes + st->block_filter_bytes);
  }
  *source = "index_bytes";
  return (double)st->index_bytes;
}

/* The peak columns: how far the resident memory rose at most from before the open until the
   index was ready (VmHWM; the open, the leaf loading, and a SCAN, in bare too), that rise over
   bare's, and that over what the index says it holds (index_bytes + memtable_index_bytes; the
   goal of issue 45, 4: at most 1.3). Blank where /proc does not tell. */
static void write_peak(exp_csv_t *csv, const point_t *pt, const point_t *bare) {
  const probe_t *pb = &pt->probe, *bb = &bare->probe;
  if (!pb->peak_ready || !bb->peak_ready) return;
  int64_t rise = (int64_t)pb->peak_ready - (int64_t)pb->peak_from;
  int64_t over = rise - ((int64_t)bb->peak_ready - (int64_t)bb->peak_from);
  char sbuf[32];
  snprintf(sbuf, sizeof sbuf, "%lld", (long long)rise);
  exp_csv_str(csv, "rss_peak_growth_bytes", sbuf);
  snprintf(sbuf, sizeof sbuf, "%lld", (long long)over);
  exp_csv_str(csv, "peak_over_bare_bytes", sbuf);
  uint64_t held = pb->stats.index_bytes + pb->stats.memtable_index_bytes;
  if (pb->have_stats && held) exp_csv_dbl(csv, "peak_over_index", (double)over / (double)held);
}

static void write_rows(exp_csv_t *csv, const exp_ctx_t *x, const point_t pts[NCONFIGS]) {
  const point_t *bare = &pts[BARE];
  printf(
      "memory n=%-9llu domain %3g%%: bare (no index): ingest %.2f s, RSS growth of the open "
      "and a SCAN %.2f B/entry\n",
      (unsigned long long)bare->p.wl.n, bare->p.wl.domain_pct, bare->ingest_s,
      ((double)bare->probe.rss_ready - (double)bare->probe.rss_before) / (double)bare->p.wl.n);
  for (size_t c = 0; c < NCONFIGS; c++) {
    const config_t *cfg = &CONFIGS[c];
    const point_t *pt = &pts[c];
    if (pt->skipped) continue;
    const probe_t *pb = &pt->probe;
    const bfh_db_stats *st = &pb->stats;
    double n = (double)pt->p.wl.n;
    const char *source = "";
    double bytes = method_bytes(cfg, pt, bare, &source);
    char sbuf[32];
    for (int s = 0; s < cfg->nseries; s++) {
      const exp_search_result_t *pr = &pb->r[s][0], *ab = &pb->r[s][1];
      exp_csv_db_params(csv, x, &pt->p);
      exp_csv_str(csv, "config", cfg->name);
      exp_csv_str(csv, "series", exp_method_name(cfg->series[s]));
      exp_csv_u64(csv, "index_bits_per_value", cfg->index_bits);
      exp_csv_u64(csv, "block_maps", (uint64_t)cfg->block_maps);
      exp_csv_u64(csv, "reps", REPS);
      exp_csv_dbl(csv, "ingest_s", pt->ingest_s);
      exp_csv_dbl(csv, "ingest_off_s", bare->ingest_s);
      exp_csv_dbl(csv, "ingest_overhead", pt->ingest_s / bare->ingest_s - 1);
      exp_csv_dbl(csv, "index_ready_s", pb->ready_s);
      exp_csv_dbl(csv, "bytes_per_entry", bytes / n);
      exp_csv_str(csv, "bytes_source", source);
      if (pb->have_stats) {
        exp_csv_u64(csv, "tables", st->tables);
        if (st->tables && st->value_filters)
          exp_csv_shape(csv, n / (double)st->tables, st->value_filter_bits);
        if (st->value_filters) {
          exp_csv_u64(csv, "index_bytes", st->index_bytes);
          exp_csv_dbl(csv, "index_bytes_per_entry", (double)st->index_bytes / n);
          exp_csv_u64(csv, "leaf_memory_bytes", st->leaf_memory_bytes);
          exp_csv_u64(csv, "internal_bytes", st->internal_bytes);
          exp_csv_u64(csv, "sliced_bytes", st->sliced_bytes);
          exp_csv_u64(csv, "block_filter_bytes", st->block_filter_bytes);
        }
        if (cfg->cuckoo) exp_csv_u64(csv, "cuckoo_bytes", st->cuckoo_bytes);
        exp_csv_u64(csv, "memtable_index_bytes", st->memtable_index_bytes);
      }
      exp_csv_u64(csv, "rss_before_bytes", pb->rss_before);
      exp_csv_u64(csv, "rss_ready_bytes", pb->rss_ready);
      exp_csv_u64(csv, "rss_after_bytes", pb->rss_after);
      /* signed: a configuration may hold less than another */
      int64_t growth = (int64_t)pb->rss_ready - (int64_t)pb->rss_before;
      int64_t over = (int64_t)pb->rss_after - (int64_t)pb->rss_before -
                     ((int64_t)bare->probe.rss_after - (int64_t)bare->probe.rss_before);
      int64_t index_rss =
          growth - ((int64_t)bare->probe.rss_ready - (int64_t)bare->probe.rss_before);
      snprintf(sbuf, sizeof sbuf, "%lld", (long long)growth);
      exp_csv_str(csv, "rss_growth_bytes", sbuf);
      exp_csv_dbl(csv, "rss_growth_per_entry", (double)growth / n);
      snprintf(sbuf, sizeof sbuf, "%lld", (long long)index_rss);
      exp_csv_str(csv, "rss_index_bytes", sbuf);
      exp_csv_dbl(csv, "rss_index_per_entry", (double)index_rss / n);
      int64_t index_heap = ((int64_t)pb->heap_ready - (int64_t)pb->heap_before) -
                           ((int64_t)bare->probe.heap_ready - (int64_t)bare->probe.heap_before);
      snprintf(sbuf, sizeof sbuf, "%lld", (long long)index_heap);
      exp_csv_str(csv, "heap_index_bytes", sbuf);
      exp_csv_dbl(csv, "heap_index_per_entry", (double)index_heap / n);
      write_peak(csv, pt, bare);
      snprintf(sbuf, sizeof sbuf, "%lld", (long long)over);
      exp_csv_str(csv, "rss_over_bare_bytes", sbuf);
      exp_csv_dbl(csv, "rss_over_bare_per_entry", (double)over / n);
      exp_csv_u64(csv, "block_cache_after_bytes", pb->cache_after);
      exp_csv_u64(csv, "queries", (uint64_t)pr->queries);
      exp_csv_u64(csv, "wrong", (uint64_t)(pr->wrong + ab->wrong));
      exp_csv_dbl(csv, "present_results", pr->mean.results);
      exp_csv_dbl(csv, "present_time_s", pr->time_s);
      exp_csv_dbl(csv, "present_time_q1_s", pr->time_q1_s);
      exp_csv_dbl(csv, "present_time_q3_s", pr->time_q3_s);
      exp_csv_dbl(csv, "absent_time_s", ab->time_s);
      exp_csv_dbl(csv, "absent_time_q1_s", ab->time_q1_s);
      exp_csv_dbl(csv, "absent_time_q3_s", ab->time_q3_s);
      exp_csv_dbl(csv, "present_tables_read", pr->mean.tables_scanned);
      exp_csv_dbl(csv, "present_blocks_read", pr->mean.blocks_read);
      exp_csv_dbl(csv, "absent_tables_read", ab->mean.tables_scanned);
      exp_csv_dbl(csv, "absent_blocks_read", ab->mean.blocks_read);
      exp_csv_row(csv);
      printf(
          "memory n=%-9llu domain %3g%%: %-10s %-9s %6.2f B/entry (%s; index_bytes %.2f, "
          "RSS %.2f) present %9.1f us [%.1f-%.1f] absent %8.1f us, tables %.2f/%.2f, "
          "blocks %.2f/%.2f\n",
          (unsigned long long)pt->p.wl.n, pt->p.wl.domain_pct, cfg->name,
          exp_method_name(cfg->series[s]), bytes / n, source, (double)st->index_bytes / n,
          (double)index_rss / n, pr->time_s * 1e6, pr->time_q1_s * 1e6, pr->time_q3_s * 1e6,
          ab->time_s * 1e6, pr->mean.tables_scanned, ab->mean.tables_scanned, pr->mean.blocks_read,
          ab->mean.blocks_read);
      if (pr->wrong || ab->wrong)
        fprintf(stderr, "bfh: WARNING: memory %s/%s: %d queries with wrong keys\n", cfg->name,
                exp_method_name(cfg->series[s]), pr->wrong + ab->wrong);
    }
  }
}

static const char *const MEMORY_COLS[] = {"config",
                                          "series",
                                          "index_bits_per_value",
                                          "block_maps",
                                          "reps",
                                          "ingest_s",
                                          "ingest_off_s",
                                          "ingest_overhead",
                                          "index_ready_s",
                                          "bytes_per_entry",
                                          "bytes_source",
                                          "tables",
                                          "index_bytes",
                                          "index_bytes_per_entry",
                                          "leaf_memory_bytes",
                                          "internal_bytes",
                                          "sliced_bytes",
                                          "block_filter_bytes",
                                          "cuckoo_bytes",
                                          "memtable_index_bytes",
                                          "rss_before_bytes",
                                          "rss_ready_bytes",
                                          "rss_after_bytes",
                                          "rss_growth_bytes",
                                          "rss_growth_per_entry",
                                          "rss_index_bytes",
                                          "rss_index_per_entry",
                                          "heap_index_bytes",
                                          "heap_index_per_entry",
                                          "rss_peak_growth_bytes",
                                          "peak_over_bare_bytes",
                                          "peak_over_index",
                                          "rss_over_bare_bytes",
                                          "rss_over_bare_per_entry",
                                          "block_cache_after_bytes",
                                          "queries",
                                          "wrong",
                                          "present_results",
                                          "present_time_s",
                                          "present_time_q1_s",
                                          "present_time_q3_s",
                                          "absent_time_s",
                                          "absent_time_q1_s",
                                          "absent_time_q3_s",
                                          "present_tables_read",
                                          "present_blocks_read",
                                          "absent_tables_read",
                                          "absent_blocks_read",
                                          NULL};

int exp_memory(const exp_ctx_t *x) {
  static const uint64_t small[] = {100000, 1000000, 0};
  static const uint64_t medium[] = {10000000, 0};
  static const uint64_t paper[] = {100000000, 0};
  const uint64_t *ns = exp_sizes(x, paper, medium, small);
  const char *cols[80];
  exp_cols_cat(cols, 80, EXP_DB_COLS, MEMORY_COLS, (const char *const *)NULL);
  exp_csv_t *csv = exp_csv_open_subset(x, "memory", cols, EXP_CSV_KEY_N);
  int rc = csv ? 0 : -1;
  for (size_t i = 0; rc == 0 && ns[i]; i++) {
    if (!exp_size_wanted(x, ns[i])) continue;
    for (size_t d = 0; rc == 0 && d < NDOMAINS; d++) {
      static point_t pts[NCONFIGS];
      memset(pts, 0, sizeof pts);
      for (size_t c = 0; c < NCONFIGS; c++)
        point_params(x, ns[i], DOMAINS[d], &CONFIGS[c], &pts[c]);
      for (size_t c = 0; rc == 0 && c < NCONFIGS; c++) rc = measure_point(x, c, &pts[c]);
      if (rc == 0) write_rows(csv, x, pts);
    }
  }
  if (exp_csv_close(csv) != 0) rc = -1;
  if (rc == 0) rc = exp_plot(x, "memory");
  return rc;
}

/* search_bench: non-key search side by side on one own-engine database.
 *
 * For each value domain (percent of N distinct values; 100 = every value unique) it loads N
 * entries (workloads/workload.h), waits until compactions are done, and times one search per
 * query value with every method: SCAN, LEAVES, HIERARCHY, SLICED, AUTO, and ORACLE, which
 * scans only the tables that truly hold the value (found beforehand by scanning every table)
 * plus the memtables, and validates like the others. Each method is timed on the same query
 * values; it reports the median time and the mean counters, with leaves in memory and then
 * (after a reopen) leaves on disk. It also times the ingest with value filters on and off on
 * the same engine (the filters' cost at ingest) and the value-index rebuild at open.
 *
 * What goes beyond the paper (the block path, the memtable index) is `bfh run beyond`'s
 * question, AUTO against the stand-alone index `bfh run tradeoff`'s (experiments/).
 *
 * Usage: search_bench [--num N] [--queries Q] [--domains 100,10,1] [--m BITS] [--k K]
 *                     [--order D] [--table-bytes B] [--dir PATH] [--seq] [--no-ingest-compare]
 *                     [--no-disk]
 * Prints a header naming every parameter, then CSV.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bench/bench_util.h"
#include "bfh.h"
/* Not public (api/testbed.h): waiting for the compactions, the cost of the index
   rebuild at open, and ORACLE (the true tables found table by table, then a search of only
   those). The index sizes come from bfh_stats. */
#include "api/testbed.h"
#include "workloads/workload.h"

typedef struct cfg {
  uint64_t num, queries;
  double domains[8];
  int ndomains;
  uint64_t m;
  uint32_t k, order;
  size_t table_bytes;
  const char *dir;
  int sequential, ingest_compare, disk;
} cfg_t;

static void die(const char *what, int rc, bfh_db *db) {
  fprintf(stderr, "search_bench: %s: %s (%s)\n", what, bfh_strerror(rc), bfh_last_error(db));
  exit(1);
}

static void options(const cfg_t *c, bfh_options *o, int filters, int on_disk) {
  bfh_options_init(o);
  o->index_bits_per_value = 0; /* the paper's layout, in which its methods are compared (the
                                  default lean layout: bfh run memory) */
  o->value_filter_bits = c->m;
  o->value_filter_hashes = c->k;
  o->order = c->order;
  o->table_bytes = c->table_bytes;
  o->value_filters = filters;
  o->leaves_on_disk = on_disk;
}

static double cpu_s(void) {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
         (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
}

static double g_load_cpu; /* CPU seconds (all threads) of the last load */

/* Loads the workload into dir; returns the ingest time in ns (puts + flush + compactions
   finished). */
static uint64_t load(const cfg_t *c, const workload_t *w, const char *dir, int filters) {
  bench_rm_rf("search_bench", dir);
  bfh_options o;
  options(c, &o, filters, 0);
  bfh_db *db;
  int rc = bfh_open(dir, &o, &db);
  if (rc != BFH_OK) die("open", rc, NULL);
  int tty = isatty(2);
  double c0 = cpu_s();
  uint64_t t0 = clock_now_ns();
  char k[WORKLOAD_MAX_BYTES], v[WORKLOAD_MAX_BYTES];
  for (uint64_t i = 0; i < c->num; i++) {
    size_t kl = workload_put_key(w, i, k), vl = workload_put_value(w, i, v);
    if ((rc = bfh_put(db, k, kl, v, vl)) != BFH_OK) die("put", rc, db);
    if (tty && i % 100000 == 0)
      fprintf(stderr, "\rload %s: %llu/%llu", filters ? "filters on" : "filters off",
              (unsigned long long)i, (unsigned long long)c->num);
  }
  if ((rc = bfh_flush(db)) != BFH_OK) die("flush", rc, db);
  err_t err;
  if (engine_lsm_wait_idle(bfh_internal_engine(db), &err) != BFH_OK) die("wait", err.code, db);
  uint64_t t = clock_now_ns() - t0;
  g_load_cpu = cpu_s() - c0;
  if (tty) fprintf(stderr, "\r%60s\r", "");
  bfh_close(db);
  return t;
}

typedef struct acc {
  uint64_t *ns;
  double internal, leaf, pos, scanned, matched, entries, bytes, cand, results;
  uint32_t used[6];
} acc_t;

static void acc_add(acc_t *a, uint64_t q, const bfh_search_stats *st) {
  a->ns[q] = st->elapsed_ns;
  a->internal += (double)st->internal_probes;
  a->leaf += (double)st->leaf_probes;
  a->pos += (double)st->leaf_positives;
  a->scanned += (double)st->tables_scanned;
  a->matched += (double)st->tables_matched;
  a->entries += (double)st->entries_scanned;
  a->bytes += (double)st->bytes_read;
  a->cand += (double)st->candidates;
  a->results += (double)st->results;
  if (st->method_used < 6) a->used[st->method_used]++;
}

static double median_ms(uint64_t *ns, uint64_t n) {
  if (n > 1) qsort(ns, n, sizeof *ns, bench_cmp_u64);
  return n ? (n % 2 ? (double)ns[n / 2] : ((double)ns[n / 2 - 1] + (double)ns[n / 2]) / 2) / 1e6
           : 0;
}

typedef struct holders {
  uint64_t *v;
  size_t n, cap;
} holders_t;

static int count_match(void *arg, const void *key, size_t len) {
  (void)key, (void)len;
  (*(uint64_t *)arg)++;
  return 0;
}

/* count_match as an engine_match_fn. */
static int count_entry(void *arg, const void *key, size_t len, uint64_t seq) {
  (void)seq;
  return count_match(arg, key, len);
}

/* The tables of the current view that hold val (a full scan, untimed). */
static void true_tables(engine_t *e, const void *val, size_t len, holders_t *h) {
  engine_view_t *view;
  err_t err;
  h->n = 0;
  if (e->ops->view_acquire(e, &view, &err) != BFH_OK) return;
  const engine_table_t *t;
  size_t n = e->ops->view_tables(view, &t);
  for (size_t i = 0; i < n; i++) {
    uint64_t hits = 0;
    engine_scan_stats_t ss = {0, 0};
    engine_value_test_t test = engine_value_test_equal(val, len);
    e->ops->scan_table(e, view, t[i].number, &test, count_entry, &hits, &ss, &err);
    if (!hits) continue;
    if (h->n == h->cap) {
      h->cap = h->cap ? 2 * h->cap : 64;
      h->v = realloc(h->v, h->cap * sizeof *h->v);
    }
    h->v[h->n++] = t[i].number;
  }
  e->ops->view_release(e, view);
  if (h->n > 1) qsort(h->v, h->n, sizeof *h->v, bench_cmp_u64);
}

static const char *method_name[] = {"SCAN", "LEAVES", "HIERARCHY", "SLICED", "AUTO", "ORACLE"};

static void run_searches(const cfg_t *c, const workload_t *w, const char *dir, double domain,
                         int on_disk, uint64_t ingest_ns) {
  bfh_options o;
  options(c, &o, 1, on_disk);
  bfh_db *db;
  int rc = bfh_open(dir, &o, &db);
  if (rc != BFH_OK) die("reopen", rc, NULL);
  engine_t *e = bfh_internal_engine(db);
  engine_lsm_open_stats_t os;
  engine_lsm_get_open_stats(e, &os);
  bfh_db_stats ds;
  if ((rc = bfh_stats(db, &ds)) != BFH_OK) die("stats", rc, db);
  acc_t acc[6];
  memset(acc, 0, sizeof acc);
  for (int m = 0; m < 6; m++) acc[m].ns = calloc(c->queries, sizeof(uint64_t));
  holders_t h = {NULL, 0, 0};
  double true_tables_sum = 0;
  for (uint64_t q = 0; q < c->queries; q++) {
    char v[WORKLOAD_MAX_BYTES];
    size_t vl = workload_value(w, workload_present_value_id(w, 777, q), v);
    true_tables(e, v, vl, &h);
    true_tables_sum += (double)h.n;
    /* Rotate the order of the methods from query to query, so that none always runs
       right after another has warmed the same tables. */
    for (int j = 0; j < 6; j++) {
      int m = (int)((q + (uint64_t)j) % 6);
      bfh_search_stats st;
      uint64_t hits = 0;
      err_t err;
      if (m == 5)
        rc = search_run_tables(e, v, vl, h.v, h.n, count_match, &hits, &st, &err);
      else
        rc = bfh_search(db, v, vl, (bfh_method)m, count_match, &hits, &st);
      if (rc != BFH_OK) die("search", rc, db);
      acc_add(&acc[m], q, &st);
    }
  }
  double scan_ms = median_ms(acc[0].ns, c->queries);
  double oracle_ms = median_ms(acc[5].ns, c->queries);
  double nq = (double)c->queries;
  for (int m = 0; m < 6; m++) {
    double ms = median_ms(acc[m].ns, c->queries);
    int used = 0;
    for (int u = 0; u < 6; u++)
      if (acc[m].used[u] > acc[m].used[used]) used = u;
    printf(
        "%llu,%g,%s,%s,%s,%u,%llu,%.4f,%.1f,%.2f,%.1f,%.1f,%.2f,%.2f,%.2f,%.0f,%.0f,%.2f,%.2f,"
        "%.2f,%.3f,%.3f,%.3f,%.3f,%.1f,%.3f\n",
        (unsigned long long)c->num, domain, on_disk ? "disk" : "memory", method_name[m],
        method_name[used], (unsigned)ds.leaf_filters, (unsigned long long)c->queries, ms,
        ms > 0 ? scan_ms / ms : 0, oracle_ms > 0 ? ms / oracle_ms : 0, acc[m].internal / nq,
        acc[m].leaf / nq, acc[m].pos / nq, acc[m].scanned / nq, acc[m].matched / nq,
        acc[m].entries / nq, acc[m].bytes / nq, acc[m].cand / nq, acc[m].results / nq,
        true_tables_sum / nq, ds.mean_leaf_fill, (double)os.rebuild_ns / 1e6,
        (double)ingest_ns / 1e9,
        (double)(ds.internal_bytes + ds.sliced_bytes + ds.leaf_memory_bytes) / 1048576.0,
        (double)ds.leaf_filter_bytes / 1048576.0, (double)os.read_ns / 1e6);
    fflush(stdout);
  }
  for (int m = 0; m < 6; m++) free(acc[m].ns);
  free(h.v);
  bfh_close(db);
}

static void usage(void) {
  fprintf(stderr,
          "usage: search_bench [--num N] [--queries Q] [--domains 100,10,1] [--m BITS] [--k K]\n"
          "                    [--order D] [--table-bytes B] [--dir PATH] [--seq]\n"
          "                    [--no-ingest-compare] [--no-disk]\n");
  exit(2);
}

int main(int argc, char **argv) {
  cfg_t c = {.num = 1000000,
             .queries = 25,
             .domains = {100, 10, 1},
             .ndomains = 3,
             .m = 2000000,
             .k = 3,
             .order = 5,
             .table_bytes = 2u << 20,
             .dir = "/tmp/bfh_search_bench",
             .ingest_compare = 1,
             .disk = 1};
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    const char *next = i + 1 < argc ? argv[i + 1] : NULL;
    if (!strcmp(a, "--num") && next)
      c.num = strtoull(argv[++i], NULL, 10);
    else if (!strcmp(a, "--queries") && next)
      c.queries = strtoull(argv[++i], NULL, 10);
    else if (!strcmp(a, "--m") && next)
      c.m = strtoull(argv[++i], NULL, 10);
    else if (!strcmp(a, "--k") && next)
      c.k = (uint32_t)strtoul(argv[++i], NULL, 10);
    else if (!strcmp(a, "--order") && next)
      c.order = (uint32_t)strtoul(argv[++i], NULL, 10);
    else if (!strcmp(a, "--table-bytes") && next)
      c.table_bytes = strtoull(argv[++i], NULL, 10);
    else if (!strcmp(a, "--dir") && next)
      c.dir = argv[++i];
    else if (!strcmp(a, "--seq"))
      c.sequential = 1;
    else if (!strcmp(a, "--no-ingest-compare"))
      c.ingest_compare = 0;
    else if (!strcmp(a, "--no-disk"))
      c.disk = 0;
    else if (!strcmp(a, "--domains") && next) {
      c.ndomains = 0;
      char *s = argv[++i];
      for (char *tok = strtok(s, ","); tok && c.ndomains < 8; tok = strtok(NULL, ","))
        c.domains[c.ndomains++] = strtod(tok, NULL);
    } else
      usage();
  }
  if (c.num == 0 || c.queries == 0) usage();
  printf("# search_bench: own engine (BFH_ENGINE_LSM), non-key search per method\n");
  printf(
      "# num=%llu queries=%llu m=%llu k=%u order=%u table_bytes=%zu order_of_puts=%s "
      "format=paper dir=%s\n",
      (unsigned long long)c.num, (unsigned long long)c.queries, (unsigned long long)c.m, c.k,
      c.order, c.table_bytes, c.sequential ? "sequential" : "random", c.dir);
  printf(
      "# domain_pct: distinct values as %% of num (100 = every value unique); queries are "
      "present values; times are medians over the queries, counters means\n");
  printf("# ORACLE scans only the tables that truly hold the value (+ memtables + validation)\n");
  printf(
      "num,domain_pct,leaves_in,method,method_used,leaf_count,queries,median_ms,speedup_vs_scan,"
      "ratio_vs_oracle,internal_probes,leaf_probes,leaf_positives,tables_scanned,"
      "tables_matched,entries_scanned,bytes_read,candidates,results,true_tables,mean_fill,"
      "open_rebuild_ms,ingest_s,index_mib,leaf_filters_mib,open_read_ms\n");
  fflush(stdout);
  char dir[1024], dir_off[1100];
  char mk[1100];
  snprintf(mk, sizeof mk, "mkdir -p '%s'", c.dir);
  if (system(mk) != 0) die("mkdir", BFH_E_IO, NULL);
  for (int d = 0; d < c.ndomains; d++) {
    workload_config_t wc;
    workload_config_init(&wc);
    wc.n = c.num;
    wc.domain_pct = c.domains[d];
    wc.order = c.sequential ? WORKLOAD_SEQUENTIAL : WORKLOAD_RANDOM;
    workload_t w;
    if (workload_init(&w, &wc) != BFH_OK) usage();
    snprintf(dir, sizeof dir, "%s/d%g", c.dir, c.domains[d]);
    uint64_t ingest = load(&c, &w, dir, 1);
    if (c.ingest_compare && d == 0) {
      snprintf(dir_off, sizeof dir_off, "%s/nofilters", c.dir);
      double cpu_on = g_load_cpu;
      uint64_t off = load(&c, &w, dir_off, 0);
      double cpu_off = g_load_cpu;
      uint64_t on2 = load(&c, &w, dir, 1); /* twice each, alternating: noise shows */
      double cpu_on2 = g_load_cpu;
      uint64_t off2 = load(&c, &w, dir_off, 0);
      double cpu_off2 = g_load_cpu;
      bench_rm_rf("search_bench", dir_off);
      double on_s = (double)(ingest < on2 ? ingest : on2) / 1e9;
      double off_s = (double)(off < off2 ? off : off2) / 1e9;
      printf(
          "# ingest num=%llu: filters on %.2f s / %.2f s, off %.2f s / %.2f s; best-of-2 "
          "ratio on/off = %.3f\n",
          (unsigned long long)c.num, (double)ingest / 1e9, (double)on2 / 1e9, (double)off / 1e9,
          (double)off2 / 1e9, on_s / off_s);
      printf(
          "# ingest cpu (user+sys, all threads): filters on %.2f s / %.2f s, off %.2f s / "
          "%.2f s; best-of-2 ratio on/off = %.3f\n",
          cpu_on, cpu_on2, cpu_off, cpu_off2,
          (cpu_on < cpu_on2 ? cpu_on : cpu_on2) / (cpu_off < cpu_off2 ? cpu_off : cpu_off2));
      fflush(stdout);
      ingest = on2;
    }
    run_searches(&c, &w, dir, c.domains[d], 0, ingest);
    if (c.disk) run_searches(&c, &w, dir, c.domains[d], 1, ingest);
    bench_rm_rf("search_bench", dir);
  }
  return 0;
}

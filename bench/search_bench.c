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
 * With --beyond it measures, instead, what goes beyond the paper (run_beyond): N entries
 * loaded, then --unflushed U more left in the memtable; for values present in a table,
 * present only in the memtable, and absent, every method's median time, its speedup over
 * SCAN, and the bytes and blocks it read; AUTO reads tables through their block filters and
 * the memtable through its value index. It also times the ingest with every value index on
 * and off (--ingest-runs loads each, median ratio).
 *
 * With --vs-standalone it measures AUTO against the stand-alone index in one process, on one
 * database that has both (value filters and standalone_index = 1): N entries loaded under the
 * lean-map layout (so that its value-to-block maps exist), compactions finished, then, per
 * layout (the default options, and index_bits_per_value = BFH_LEAN_MAP_BITS set explicitly),
 * the database is opened, --unflushed U entries with their own unique values are put and left
 * in the memtable (0: none), and Q present values of the loaded tables are searched with AUTO
 * and STANDALONE alternately, --passes P times (the last pass counts). It prints each method's
 * median and mean counters, and the ratio AUTO / STANDALONE of the medians.
 *
 * Usage: search_bench [--num N] [--queries Q] [--domains 100,10,1] [--m BITS] [--k K]
 *                     [--order D] [--table-bytes B] [--dir PATH] [--seq] [--no-ingest-compare]
 *                     [--no-disk]
 *        search_bench --beyond [--unflushed U] [--ingest-runs R] (and the options above)
 *        search_bench --vs-standalone [--unflushed U] [--passes P] [--layouts default,leanmap]
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
  int beyond;         /* --beyond: the block path and the memtable index (run_beyond) */
  uint64_t unflushed; /* --unflushed: entries left in the memtable (beyond) */
  int ingest_runs;    /* --ingest-runs: loads with indexing on and off each (beyond) */
  double domains[8];
  int ndomains;
  uint64_t m;
  uint32_t k, order;
  size_t table_bytes;
  const char *dir;
  int sequential, ingest_compare, disk;
  int vs_standalone; /* --vs-standalone: AUTO against STANDALONE on one database */
  int passes;        /* --passes: query passes (vs-standalone); the last one is measured */
  int layouts;       /* --layouts: bit 0 the default options, bit 1 the lean-map layout */
  int keep;          /* --keep: leave the database (vs-standalone) and reuse one left before */
} cfg_t;

static void die(const char *what, int rc, bfh_db *db) {
  fprintf(stderr, "search_bench: %s: %s (%s)\n", what, bfh_strerror(rc), bfh_last_error(db));
  exit(1);
}

static void options(const cfg_t *c, bfh_options *o, int filters, int on_disk) {
  bfh_options_init(o);
  o->index_bits_per_value = 0; /* the paper's layout, in which its methods are compared (the
                                  default lean layout: bench/memory_bench.c) */
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
  uint64_t t0 = bench_now_ns();
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
  uint64_t t = bench_now_ns() - t0;
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

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

static double median_ms(uint64_t *ns, uint64_t n) {
  if (n > 1) qsort(ns, n, sizeof *ns, cmp_u64);
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
    e->ops->scan_table(e, view, t[i].number, val, len, count_match, &hits, &ss, &err);
    if (!hits) continue;
    if (h->n == h->cap) {
      h->cap = h->cap ? 2 * h->cap : 64;
      h->v = realloc(h->v, h->cap * sizeof *h->v);
    }
    h->v[h->n++] = t[i].number;
  }
  e->ops->view_release(e, view);
  if (h->n > 1) qsort(h->v, h->n, sizeof *h->v, cmp_u64);
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
          "                    [--no-ingest-compare] [--no-disk]\n"
          "       search_bench --beyond [--num N] [--unflushed U] [--queries Q] [--domains ...]\n"
          "                    [--ingest-runs R] (and the options above)\n"
          "       search_bench --vs-standalone [--num N] [--unflushed U] [--queries Q]\n"
          "                    [--domains ...] [--passes P] [--layouts default,leanmap] [--keep]\n");
  exit(2);
}

/* The workload of c's d-th domain: c->num entries, in c's order. */
static void domain_workload(const cfg_t *c, int d, workload_t *w) {
  workload_config_t wc;
  workload_config_init(&wc);
  wc.n = c->num;
  wc.domain_pct = c->domains[d];
  wc.order = c->sequential ? WORKLOAD_SEQUENTIAL : WORKLOAD_RANDOM;
  if (workload_init(w, &wc) != BFH_OK) usage();
}

/* ---- Beyond the paper (--beyond) ------------------------------------------------------- */

enum { Q_TABLE, Q_MEMTABLE, Q_ABSENT, NCLASSES };
static const char *class_name[] = {"table", "memtable", "absent"};
#define NMETHODS 5 /* SCAN .. AUTO */

/* The value of query q of class cl: a value of the loaded tables, one of the unflushed
   entries (their own unique values), or one no entry holds. */
static size_t class_value(const cfg_t *c, const workload_t *w, int cl, uint64_t q, char *v) {
  if (cl == Q_TABLE) return workload_value(w, workload_present_value_id(w, 1234, q), v);
  if (cl == Q_MEMTABLE)
    return (size_t)sprintf(v, "unflushed-%llu", (unsigned long long)((q * 7919) % c->unflushed));
  return workload_value(w, workload_absent_value_id(w, 4321, q), v);
}

/* Puts c->unflushed entries with unique values that stay in the memtable. */
static void put_unflushed(const cfg_t *c, bfh_db *db) {
  char k[64], v[64];
  for (uint64_t i = 0; i < c->unflushed; i++) {
    int kl = sprintf(k, "unflushed-key-%llu", (unsigned long long)i);
    int vl = sprintf(v, "unflushed-%llu", (unsigned long long)i);
    int rc = bfh_put(db, k, (size_t)kl, v, (size_t)vl);
    if (rc != BFH_OK) die("put", rc, db);
  }
}

typedef struct beyond_acc {
  uint64_t ns[4096];
  double bytes, blocks, probed, entries, scanned, results;
  uint64_t max_bytes;
} beyond_acc_t;

/* Times every method on the same query values of each class and prints one CSV line per
   class and method. The memtable is big enough that the unflushed entries stay there. */
static void run_beyond(const cfg_t *c, const workload_t *w, const char *dir, double domain,
                       double ingest_ratio) {
  bfh_options o;
  options(c, &o, 1, 0);
  o.memtable_bytes = 256u << 20;
  bfh_db *db;
  int rc = bfh_open(dir, &o, &db);
  if (rc != BFH_OK) die("reopen", rc, NULL);
  bfh_db_stats before, ds;
  if ((rc = bfh_stats(db, &before)) != BFH_OK) die("stats", rc, db);
  put_unflushed(c, db);
  if ((rc = bfh_stats(db, &ds)) != BFH_OK) die("stats", rc, db);
  if (ds.tables != before.tables) die("the unflushed entries were flushed", BFH_E_INVALID, db);
  static beyond_acc_t acc[NCLASSES][NMETHODS];
  memset(acc, 0, sizeof acc);
  uint64_t nq = c->queries < 4096 ? c->queries : 4096;
  for (int cl = 0; cl < NCLASSES; cl++)
    for (uint64_t q = 0; q < nq; q++) {
      char v[WORKLOAD_MAX_BYTES];
      size_t vl = class_value(c, w, cl, q, v);
      uint64_t want = UINT64_MAX;
      for (int j = 0; j < NMETHODS; j++) {
        int m = (int)((q + (uint64_t)j) % NMETHODS); /* rotate: none always runs warm */
        bfh_search_stats st;
        uint64_t hits = 0;
        if ((rc = bfh_search(db, v, vl, (bfh_method)m, count_match, &hits, &st)) != BFH_OK)
          die("search", rc, db);
        if (want == UINT64_MAX) want = hits;
        if (hits != want) die("methods disagree on a result count", BFH_E_CORRUPT, db);
        beyond_acc_t *a = &acc[cl][m];
        a->ns[q] = st.elapsed_ns;
        a->bytes += (double)st.bytes_read;
        if (st.bytes_read > a->max_bytes) a->max_bytes = st.bytes_read;
        a->blocks += (double)st.blocks_read;
        a->probed += (double)st.block_filters_probed;
        a->entries += (double)st.entries_scanned;
        a->scanned += (double)st.tables_scanned;
        a->results += (double)st.results;
      }
    }
  for (int cl = 0; cl < NCLASSES; cl++) {
    double scan_ms = median_ms(acc[cl][BFH_SEARCH_SCAN].ns, nq);
    for (int m = 0; m < NMETHODS; m++) {
      beyond_acc_t *a = &acc[cl][m];
      double ms = median_ms(a->ns, nq);
      printf(
          "%llu,%g,%llu,%s,%s,%llu,%.4f,%.1f,%.0f,%llu,%.2f,%.2f,%.0f,%.2f,%.2f,%llu,%.3f,"
          "%.2f,%.3f\n",
          (unsigned long long)c->num, domain, (unsigned long long)c->unflushed, class_name[cl],
          method_name[m], (unsigned long long)nq, ms, ms > 0 ? scan_ms / ms : 0,
          a->bytes / (double)nq, (unsigned long long)a->max_bytes, a->blocks / (double)nq,
          a->probed / (double)nq, a->entries / (double)nq, a->scanned / (double)nq,
          a->results / (double)nq, (unsigned long long)ds.tables,
          (double)ds.block_filter_bytes / 1048576.0,
          ds.block_filter_tables ? (double)ds.block_filter_bytes / (double)c->num : 0,
          ingest_ratio);
      fflush(stdout);
    }
  }
  bfh_close(db);
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* Loads the workload c->ingest_runs times with every value index on and as often with value
   filters off, alternating; prints each time and returns the median on/off ratio (0 if no
   runs). dir is left loaded with indexing on. */
static double ingest_on_off(const cfg_t *c, const workload_t *w, const char *dir) {
  if (c->ingest_runs <= 0) {
    load(c, w, dir, 1);
    return 0;
  }
  char dir_off[1100];
  snprintf(dir_off, sizeof dir_off, "%s-off", dir);
  double on[16], off[16], ratio[16];
  int runs = c->ingest_runs < 16 ? c->ingest_runs : 16;
  for (int r = 0; r < runs; r++) {
    off[r] = (double)load(c, w, dir_off, 0) / 1e9;
    on[r] = (double)load(c, w, dir, 1) / 1e9;
    ratio[r] = on[r] / off[r];
    printf("# ingest run %d: indexing on %.2f s, off %.2f s, on/off %.3f\n", r + 1, on[r], off[r],
           ratio[r]);
  }
  bench_rm_rf("search_bench", dir_off);
  qsort(ratio, (size_t)runs, sizeof *ratio, cmp_double);
  qsort(on, (size_t)runs, sizeof *on, cmp_double);
  qsort(off, (size_t)runs, sizeof *off, cmp_double);
  printf("# ingest num=%llu: median on %.2f s, off %.2f s; median on/off ratio %.3f\n",
         (unsigned long long)c->num, on[runs / 2], off[runs / 2], ratio[runs / 2]);
  fflush(stdout);
  return ratio[runs / 2];
}

static void main_beyond(const cfg_t *c) {
  printf("# search_bench --beyond: own engine, AUTO's block path and memtable index against\n");
  printf(
      "# the paper's methods; num=%llu unflushed=%llu queries=%llu per class m=%llu k=%u "
      "order=%u table_bytes=%zu block_filter_bits_per_value=%u ingest_runs=%d dir=%s\n",
      (unsigned long long)c->num, (unsigned long long)c->unflushed, (unsigned long long)c->queries,
      (unsigned long long)c->m, c->k, c->order, c->table_bytes, BLOCK_FILTER_DEFAULT_BITS,
      c->ingest_runs, c->dir);
  printf(
      "# classes: table = a loaded value, memtable = a value only in the unflushed entries, "
      "absent = no entry; times are medians, counters means; speedup = SCAN / method\n");
  printf(
      "num,domain_pct,unflushed,class,method,queries,median_ms,speedup_vs_scan,bytes_read,"
      "max_bytes_read,blocks_read,block_filters_probed,entries_scanned,tables_scanned,"
      "results,tables,block_filter_mib,block_filter_bytes_per_entry,ingest_on_off\n");
  fflush(stdout);
  for (int d = 0; d < c->ndomains; d++) {
    workload_t w;
    domain_workload(c, d, &w);
    char dir[1024];
    snprintf(dir, sizeof dir, "%s/beyond-d%g", c->dir, c->domains[d]);
    double ratio = 0; /* the ingest is compared at the first domain only */
    if (d == 0)
      ratio = ingest_on_off(c, &w, dir);
    else
      load(c, &w, dir, 1);
    run_beyond(c, &w, dir, c->domains[d], ratio);
    bench_rm_rf("search_bench", dir);
  }
}

/* ---- AUTO against the stand-alone index (--vs-standalone) ------------------------------ */

/* Loads the workload with value filters and the stand-alone index, under the lean-map layout
   (so that the value-to-block maps are written; the default layout ignores them). */
static void load_both(const cfg_t *c, const workload_t *w, const char *dir) {
  bench_rm_rf("search_bench", dir);
  bfh_options o;
  bfh_options_init(&o);
  o.standalone_index = 1;
  o.index_bits_per_value = BFH_LEAN_MAP_BITS;
  o.block_maps = 1;
  bfh_db *db;
  int rc = bfh_open(dir, &o, &db);
  if (rc != BFH_OK) die("open", rc, NULL);
  char k[WORKLOAD_MAX_BYTES], v[WORKLOAD_MAX_BYTES];
  int tty = isatty(2);
  for (uint64_t i = 0; i < c->num; i++) {
    size_t kl = workload_put_key(w, i, k), vl = workload_put_value(w, i, v);
    if ((rc = bfh_put(db, k, kl, v, vl)) != BFH_OK) die("put", rc, db);
    if (tty && i % 100000 == 0)
      fprintf(stderr, "\rload: %llu/%llu", (unsigned long long)i, (unsigned long long)c->num);
  }
  if ((rc = bfh_flush(db)) != BFH_OK) die("flush", rc, db);
  err_t err;
  if (engine_lsm_wait_idle(bfh_internal_engine(db), &err) != BFH_OK) die("wait", err.code, db);
  if (standalone_wait_idle(bfh_internal_standalone(db), &err) != BFH_OK)
    die("wait for the stand-alone index", err.code, db);
  if (tty) fprintf(stderr, "\r%60s\r", "");
  bfh_close(db);
}

typedef struct vs_acc {
  uint64_t ns[4096];
  double blocks, bytes, cand, results, scanned;
  uint32_t used[8]; /* method_used counts */
} vs_acc_t;

static void run_vs(const cfg_t *c, const workload_t *w, const char *base, double domain,
                   int layout) {
  /* Each layout searches a copy of the loaded database, so that the unflushed entries of
     one do not reach the tables of the next (a reopen replays the log). */
  char dir[1100], cmd[2300];
  snprintf(dir, sizeof dir, "%s-run", base);
  bench_rm_rf("search_bench", dir);
  snprintf(cmd, sizeof cmd, "cp -a '%s' '%s'", base, dir);
  if (system(cmd) != 0) die("copy the database", BFH_E_IO, NULL);
  bfh_options o;
  bfh_options_init(&o);
  o.standalone_index = 1;
  if (layout == 1) {
    o.index_bits_per_value = BFH_LEAN_MAP_BITS;
    o.block_maps = 1;
  }
  bfh_db *db;
  int rc = bfh_open(dir, &o, &db);
  if (rc != BFH_OK) die("reopen", rc, NULL);
  bfh_db_stats before, ds;
  if ((rc = bfh_stats(db, &before)) != BFH_OK) die("stats", rc, db);
  if (c->unflushed) put_unflushed(c, db);
  if ((rc = bfh_stats(db, &ds)) != BFH_OK) die("stats", rc, db);
  if (ds.tables != before.tables) die("the unflushed entries were flushed", BFH_E_INVALID, db);
  static vs_acc_t acc[2];
  uint64_t nq = c->queries < 4096 ? c->queries : 4096;
  const bfh_method meth[2] = {BFH_SEARCH_AUTO, BFH_SEARCH_STANDALONE};
  for (int pass = 0; pass < c->passes; pass++) {
    memset(acc, 0, sizeof acc);
    for (uint64_t q = 0; q < nq; q++) {
      char v[WORKLOAD_MAX_BYTES];
      size_t vl = workload_value(w, workload_present_value_id(w, 1234, q), v);
      uint64_t want = UINT64_MAX;
      for (int j = 0; j < 2; j++) {
        int m = (int)((q + (uint64_t)j) % 2); /* alternate which runs first */
        bfh_search_stats st;
        uint64_t hits = 0;
        if ((rc = bfh_search(db, v, vl, meth[m], count_match, &hits, &st)) != BFH_OK)
          die("search", rc, db);
        if (want == UINT64_MAX) want = hits;
        if (hits != want || hits == 0) die("AUTO and STANDALONE disagree", BFH_E_CORRUPT, db);
        vs_acc_t *a = &acc[m];
        a->ns[q] = st.elapsed_ns;
        a->blocks += (double)st.blocks_read;
        a->bytes += (double)st.bytes_read;
        a->cand += (double)st.candidates;
        a->results += (double)st.results;
        a->scanned += (double)st.tables_scanned;
        if (st.method_used < 8) a->used[st.method_used]++;
      }
    }
  }
  double med[2];
  for (int m = 0; m < 2; m++) med[m] = median_ms(acc[m].ns, nq) * 1000.0;
  static const char *used_name[8] = {"SCAN",   "LEAVES",     "HIERARCHY", "SLICED",
                                     "AUTO",   "STANDALONE", "CUCKOO",    "?"};
  for (int m = 0; m < 2; m++) {
    vs_acc_t *a = &acc[m];
    double n = (double)nq;
    int used = 0;
    for (int u = 0; u < 8; u++)
      if (a->used[u] > a->used[used]) used = u;
    printf("%llu,%g,%llu,%s,%s,%s,%llu,%.2f,%.3f,%.2f,%.0f,%.1f,%.1f,%.2f,%llu,%llu\n",
           (unsigned long long)c->num, domain, (unsigned long long)c->unflushed,
           layout ? "leanmap" : "default", m ? "STANDALONE" : "AUTO", used_name[used],
           (unsigned long long)nq,
           med[m], med[m] / med[1], a->blocks / n, a->bytes / n, a->cand / n, a->results / n,
           a->scanned / n, (unsigned long long)ds.tables,
           (unsigned long long)ds.standalone_tables);
  }
  fflush(stdout);
  bfh_close(db);
  bench_rm_rf("search_bench", dir);
}

static void main_vs_standalone(const cfg_t *c) {
  printf("# search_bench --vs-standalone: AUTO against STANDALONE on one own-engine database\n");
  printf("# num=%llu unflushed=%llu queries=%llu passes=%d (the last measured) order_of_puts=%s "
         "dir=%s\n",
         (unsigned long long)c->num, (unsigned long long)c->unflushed,
         (unsigned long long)c->queries, c->passes, c->sequential ? "sequential" : "random",
         c->dir);
  printf("# present values of the loaded tables; median_us per method, ratio = method / "
         "STANDALONE (same pass, same values); counters are means\n");
  printf("num,domain_pct,unflushed,layout,method,method_used,queries,median_us,ratio_vs_standalone,"
         "blocks_read,bytes_read,candidates,results,tables_scanned,tables,standalone_tables\n");
  fflush(stdout);
  for (int d = 0; d < c->ndomains; d++) {
    workload_t w;
    domain_workload(c, d, &w);
    char dir[1024];
    snprintf(dir, sizeof dir, "%s/vs-d%g-n%llu", c->dir, c->domains[d],
             (unsigned long long)c->num);
    struct stat sb;
    if (!c->keep || stat(dir, &sb) != 0) load_both(c, &w, dir);
    for (int l = 0; l < 2; l++)
      if (c->layouts & (1 << l)) run_vs(c, &w, dir, c->domains[d], l);
    if (!c->keep) bench_rm_rf("search_bench", dir);
  }
}

int main(int argc, char **argv) {
  cfg_t c = {.num = 1000000,
             .queries = 25,
             .unflushed = 30000,
             .ingest_runs = 3,
             .domains = {100, 10, 1},
             .ndomains = 3,
             .m = 2000000,
             .k = 3,
             .order = 5,
             .table_bytes = 2u << 20,
             .dir = "/tmp/bfh_search_bench",
             .ingest_compare = 1,
             .disk = 1,
             .passes = 2,
             .layouts = 3};
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
    else if (!strcmp(a, "--beyond"))
      c.beyond = 1;
    else if (!strcmp(a, "--unflushed") && next)
      c.unflushed = strtoull(argv[++i], NULL, 10);
    else if (!strcmp(a, "--vs-standalone"))
      c.vs_standalone = 1;
    else if (!strcmp(a, "--passes") && next)
      c.passes = atoi(argv[++i]);
    else if (!strcmp(a, "--keep"))
      c.keep = 1;
    else if (!strcmp(a, "--layouts") && next) {
      const char *l = argv[++i];
      c.layouts = (strstr(l, "default") ? 1 : 0) | (strstr(l, "leanmap") ? 2 : 0);
    } else if (!strcmp(a, "--ingest-runs") && next)
      c.ingest_runs = atoi(argv[++i]);
    else if (!strcmp(a, "--domains") && next) {
      c.ndomains = 0;
      char *s = argv[++i];
      for (char *tok = strtok(s, ","); tok && c.ndomains < 8; tok = strtok(NULL, ","))
        c.domains[c.ndomains++] = strtod(tok, NULL);
    } else
      usage();
  }
  if (c.num == 0 || c.queries == 0 || (c.beyond && c.unflushed == 0) || c.passes < 1) usage();
  if (c.vs_standalone) {
    char mk1[1100];
    snprintf(mk1, sizeof mk1, "mkdir -p '%s'", c.dir);
    if (system(mk1) != 0) die("mkdir", BFH_E_IO, NULL);
    main_vs_standalone(&c);
    return 0;
  }
  char mk0[1100];
  snprintf(mk0, sizeof mk0, "mkdir -p '%s'", c.dir);
  if (c.beyond) {
    if (system(mk0) != 0) die("mkdir", BFH_E_IO, NULL);
    main_beyond(&c);
    return 0;
  }
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

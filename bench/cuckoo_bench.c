/* cuckoo_bench: the Cuckoo Index (BFH_SEARCH_CUCKOO) next to the Bloom designs (LEAVES,
 * HIERARCHY, SLICED, AUTO) on the same database, in one process.
 *
 * For each value domain (100%: unique values; 10%; 1%: about 100 keys per value) it loads N
 * random-order entries (workloads/workload.h, seed 42) with the defaults, then opens the
 * database with cuckoo_index = 1, times the first CUCKOO search (which builds the index from
 * the tables' values: its maintenance at open), and measures every method's median latency
 * over Q present and Q absent values (the same values for all methods), the tables each reads
 * (mean), and the bytes of the structure it probes per entry:
 *   LEAVES     the leaves in memory
 *   HIERARCHY  leaves + internal nodes
 *   SLICED     the bit-sliced index (its rows; LEAVES and HIERARCHY keep the leaves)
 *   AUTO       index_bytes without the Cuckoo Index (leaves, internal, slices, block filters)
 *   CUCKOO     cuckoo_bytes (+ the block filters it reads through: column block_bytes)
 * and the ratios of each to CUCKOO's. With --ingest-runs R (> 0) it first loads the unique
 * domain R times with cuckoo_index off and R times on and prints the median ingest times:
 * the index is built lazily, at searches, so ingest does not pay for it; the build column
 * says what a first search after an open pays.
 *
 * Usage: cuckoo_bench [--num N] [--queries Q] [--domains 100,10,1] [--engines lsm,leveldb]
 *                     [--ingest-runs R] [--dir PATH]
 * Prints a header naming every parameter, then CSV.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/bench_util.h"
#include "bfh.h"
#include "api/testbed.h"
#include "workloads/workload.h"

static void die(const char *what, int rc, bfh_db *db) {
  fprintf(stderr, "cuckoo_bench: %s: %s (%s)\n", what, bfh_strerror(rc), bfh_last_error(db));
  exit(1);
}

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

static int count_match(void *arg, const void *key, size_t len) {
  (void)key, (void)len;
  (*(uint64_t *)arg)++;
  return 0;
}

static const char *engine_name(bfh_engine e) {
  return e == BFH_ENGINE_LSM ? "lsm" : "leveldb";
}

/* Loads w into dir (removed first); returns the ingest time in ns (puts, flush, idle). */
static uint64_t load(bfh_engine engine, const workload_t *w, uint64_t n, const char *dir,
                     int cuckoo) {
  bench_rm_rf("cuckoo_bench", dir);
  bfh_options o;
  bfh_options_init(&o);
  o.engine = engine;
  o.index_bits_per_value = 0; /* the paper's layout: the Bloom designs' structures */
  o.cuckoo_index = cuckoo;
  bfh_db *db;
  int rc = bfh_open(dir, &o, &db);
  if (rc != BFH_OK) die("open", rc, NULL);
  char k[WORKLOAD_MAX_BYTES], v[WORKLOAD_MAX_BYTES];
  uint64_t t0 = bench_now_ns();
  for (uint64_t i = 0; i < n; i++) {
    size_t kl = workload_put_key(w, i, k), vl = workload_put_value(w, i, v);
    if ((rc = bfh_put(db, k, kl, v, vl)) != BFH_OK) die("put", rc, db);
  }
  if ((rc = bfh_flush(db)) != BFH_OK) die("flush", rc, db);
  if (engine == BFH_ENGINE_LSM) {
    err_t err;
    if (engine_lsm_wait_idle(bfh_internal_engine(db), &err) != BFH_OK) die("wait", err.code, db);
  }
  uint64_t t = bench_now_ns() - t0;
  bfh_close(db);
  return t;
}

/* Median time (ns) of method over q present (absent = 0) or absent values; *tables gets the
   mean tables read. */
static double median(bfh_db *db, const workload_t *w, bfh_method m, uint64_t q, int absent,
                     double *tables) {
  uint64_t *ns = malloc(q * sizeof *ns);
  if (!ns) die("malloc", BFH_E_NOMEM, db);
  char v[WORKLOAD_MAX_BYTES];
  double t = 0;
  for (uint64_t i = 0; i < q; i++) {
    uint64_t id =
        absent ? workload_absent_value_id(w, 4321, i) : workload_present_value_id(w, 1234, i);
    size_t vl = workload_value(w, id, v);
    uint64_t hits = 0;
    bfh_search_stats st;
    uint64_t t0 = bench_now_ns();
    int rc = bfh_search(db, v, vl, m, count_match, &hits, &st);
    ns[i] = bench_now_ns() - t0;
    if (rc != BFH_OK) die("search", rc, db);
    if (!absent && hits == 0) die("search: a present value not found", BFH_E_CORRUPT, db);
    if (absent && hits != 0) die("search: an absent value found", BFH_E_CORRUPT, db);
    t += (double)st.tables_scanned;
  }
  qsort(ns, q, sizeof *ns, cmp_u64);
  double med = (double)ns[q / 2];
  free(ns);
  *tables = t / (double)q;
  return med;
}

static void measure(bfh_engine engine, const workload_t *w, uint64_t n, uint64_t q, double domain,
                    const char *dir) {
  bfh_options o;
  bfh_options_init(&o);
  o.engine = engine;
  o.index_bits_per_value = 0; /* the paper's layout: the Bloom designs' structures */
  o.cuckoo_index = 1;
  bfh_db *db;
  int rc = bfh_open(dir, &o, &db);
  if (rc != BFH_OK) die("open", rc, NULL);
  /* The first CUCKOO search builds the index from every table's values. */
  char v[WORKLOAD_MAX_BYTES];
  size_t vl = workload_value(w, workload_present_value_id(w, 99, 0), v);
  bfh_search_stats st;
  uint64_t t0 = bench_now_ns();
  if ((rc = bfh_search(db, v, vl, BFH_SEARCH_CUCKOO, NULL, NULL, &st)) != BFH_OK)
    die("search", rc, db);
  double build_ms = (double)(bench_now_ns() - t0) / 1e6;
  static const bfh_method methods[] = {BFH_SEARCH_CUCKOO, BFH_SEARCH_LEAVES, BFH_SEARCH_HIERARCHY,
                                       BFH_SEARCH_SLICED, BFH_SEARCH_AUTO};
  double pres[5], abs_[5], pt[5], at[5], tw;
  /* Warm up: every query once by AUTO, which reads the blocks CUCKOO reads (the first method
     measured would pay the caches' misses otherwise). */
  (void)median(db, w, BFH_SEARCH_AUTO, q, 0, &tw);
  (void)median(db, w, BFH_SEARCH_AUTO, q, 1, &tw);
  for (int i = 0; i < 5; i++) {
    (void)median(db, w, methods[i], q / 4 + 1, 0, &tw); /* warm up */
    pres[i] = median(db, w, methods[i], q, 0, &pt[i]);
    abs_[i] = median(db, w, methods[i], q, 1, &at[i]);
  }
  bfh_db_stats ds;
  if ((rc = bfh_stats(db, &ds)) != BFH_OK) die("stats", rc, db);
  double e = (double)n;
  double bloom = (double)(ds.index_bytes - ds.cuckoo_bytes);
  double bytes[5] = {(double)ds.cuckoo_bytes, (double)ds.leaf_memory_bytes,
                     (double)(ds.leaf_memory_bytes + ds.internal_bytes), (double)ds.sliced_bytes,
                     bloom};
  for (int i = 0; i < 5; i++)
    printf("%s,%llu,%.0f,%llu,%s,%.3f,%.3f,%.3f,%.2f,%.2f,%.2f,%.2f,%.3f,%.3f,%.3f,%.1f\n",
           engine_name(engine), (unsigned long long)n, domain, (unsigned long long)ds.tables,
           bfh_method_name(methods[i]), bytes[i] / e, ds.block_filter_bytes / e,
           bytes[i] / bytes[0], pres[i] / 1000.0, abs_[i] / 1000.0, pt[i], at[i], pres[i] / pres[0],
           abs_[i] / abs_[0], (double)ds.cuckoo_bytes / e, build_ms);
  fflush(stdout);
  bfh_close(db);
}

static void usage(void) {
  fprintf(stderr,
          "usage: cuckoo_bench [--num N] [--queries Q] [--domains 100,10,1] "
          "[--engines lsm,leveldb] [--ingest-runs R] [--dir PATH]\n");
  exit(2);
}

static uint64_t median3(uint64_t *v, int n) {
  qsort(v, (size_t)n, sizeof *v, cmp_u64);
  return v[n / 2];
}

int main(int argc, char **argv) {
  uint64_t n = 1000000, q = 1000;
  double domains[8] = {100, 10, 1};
  int ndomains = 3, ingest_runs = 0;
  const char *engines = "lsm";
  const char *dir = "/tmp/bfh-cuckoo-bench";
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!v) usage();
    i++;
    if (!strcmp(a, "--num")) {
      n = strtoull(v, NULL, 10);
    } else if (!strcmp(a, "--queries")) {
      q = strtoull(v, NULL, 10);
    } else if (!strcmp(a, "--domains")) {
      ndomains = 0;
      for (char *p = (char *)v; *p && ndomains < 8; p++) {
        domains[ndomains++] = strtod(p, &p);
        if (*p != ',') break;
      }
    } else if (!strcmp(a, "--engines")) {
      engines = v;
    } else if (!strcmp(a, "--ingest-runs")) {
      ingest_runs = atoi(v);
    } else if (!strcmp(a, "--dir")) {
      dir = v;
    } else {
      usage();
    }
  }
  if (q == 0 || n == 0 || ingest_runs < 0 || ingest_runs > 9) usage();
  printf(
      "# cuckoo_bench: num %llu, random order, workload seed 42, queries %llu present and "
      "%llu absent, defaults (m 2000000, k 3, block filter bits 10), Cuckoo Index 4 slots "
      "per bucket, 16-bit fingerprints, load <= 0.9\n",
      (unsigned long long)n, (unsigned long long)q, (unsigned long long)q);
  for (int e = 0; e < 2; e++) {
    bfh_engine eng = e == 0 ? BFH_ENGINE_LSM : BFH_ENGINE_LEVELDB;
    if (!strstr(engines, engine_name(eng))) continue;
    char d[1024];
    snprintf(d, sizeof d, "%s-%s", dir, engine_name(eng));
    if (ingest_runs) {
      workload_config_t wc;
      workload_config_init(&wc);
      wc.n = n;
      wc.order = WORKLOAD_RANDOM;
      workload_t w;
      if (workload_init(&w, &wc) != BFH_OK) usage();
      uint64_t off[9], on[9];
      for (int r = 0; r < ingest_runs; r++) {
        off[r] = load(eng, &w, n, d, 0);
        on[r] = load(eng, &w, n, d, 1);
      }
      double a = (double)median3(off, ingest_runs) / 1e9,
             b = (double)median3(on, ingest_runs) / 1e9;
      printf("# ingest %s num %llu, median of %d: cuckoo_index off %.3f s, on %.3f s (x%.3f)\n",
             engine_name(eng), (unsigned long long)n, ingest_runs, a, b, b / a);
    }
    printf(
        "engine,num,domain_pct,tables,method,bytes_per_entry,block_bytes_per_entry,"
        "bytes_vs_cuckoo,present_median_us,absent_median_us,present_tables_read,"
        "absent_tables_read,present_vs_cuckoo,absent_vs_cuckoo,cuckoo_bytes_per_entry,"
        "cuckoo_build_ms\n");
    for (int i = 0; i < ndomains; i++) {
      workload_config_t wc;
      workload_config_init(&wc);
      wc.n = n;
      wc.order = WORKLOAD_RANDOM;
      wc.domain_pct = domains[i];
      workload_t w;
      if (workload_init(&w, &wc) != BFH_OK) usage();
      load(eng, &w, n, d, 0);
      measure(eng, &w, n, q, domains[i], d);
    }
    bench_rm_rf("cuckoo_bench", d);
  }
  return 0;
}

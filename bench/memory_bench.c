/* memory_bench: what the value index holds in memory, and what AUTO costs, for three layouts
 * side by side: the paper's (index_bits_per_value = 0), the lean one with block filters in
 * memory (index_bits_per_value = TESTBED_LEAN_BITS, block_maps = 0) and the lean one with
 * value-to-block maps (index_bits_per_value = BFH_LEAN_MAP_BITS, block_maps = 1: the default
 * of bfh_options_init; the LevelDB engine keeps its maps in its filter cache files). Ratios
 * are against the paper's layout of the same run.
 *
 * For each engine and size it loads N random-order entries with unique values (workloads/
 * workload.h) twice under the lean-map layout (the maps are written only under it): once with
 * the default k, the lean-map layout's (bfh.h value_filter_hashes: 8), and once with the
 * paper's k = 3, today's configuration of the paper's layout. A table's leaf has its
 * database's k, so the paper and lean rows open the second database and the lean-map rows
 * the first (the layout lives in memory only). Per layout it prints index_bytes per entry and
 * its parts (leaves in memory, internal nodes, bit-sliced indexes, block filters), and the
 * median AUTO latency for present and absent values over Q queries (the same values for
 * every layout), and, last, index_bytes with the memtables' value index added
 * (bfh_db_stats.memtable_index_bytes, which index_bytes leaves out) per entry.
 *
 * Usage: memory_bench [--num N[,N...]] [--queries Q] [--engines lsm,leveldb] [--lean-bits B]
 *                     [--map-bits B] [--ingest R] [--keep 1] [--dir PATH]
 * Prints a header naming every parameter, then CSV. --ingest R measures the load instead: R
 * loads with the value-to-block maps written (the lean-map layout) and R without (the
 * same layout with block_maps = 0, which writes none), alternating; prints each and the
 * medians (ingest,num,runs,with_s,without_s,ratio). --keep 1 keeps each database and measures one left by an earlier run
 * instead of loading it again.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "bench/bench_util.h"
#include "bfh.h"
#include "api/testbed.h"
#include "workloads/workload.h"

static void die(const char *what, int rc, bfh_db *db) {
  fprintf(stderr, "memory_bench: %s: %s (%s)\n", what, bfh_strerror(rc), bfh_last_error(db));
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

/* Loads the database under the lean layout of mapbits bits, with block maps (maps = 1: the
   maps are written) or without (0: none written), its value filters of k hash functions (0:
   the default, the lean layout's), and returns the seconds it took, flush and compactions
   included. */
static double load(bfh_engine engine, const workload_t *w, uint64_t n, const char *dir,
                   uint32_t mapbits, int maps, uint32_t k) {
  bench_rm_rf("memory_bench", dir);
  uint64_t t0 = bench_now_ns();
  bfh_options o;
  bfh_options_init(&o);
  o.engine = engine;
  o.index_bits_per_value = mapbits; /* the maps are written only under the layout using them */
  o.block_maps = maps;
  o.value_filter_hashes = k;
  bfh_db *db;
  int rc = bfh_open(dir, &o, &db);
  if (rc != BFH_OK) die("open", rc, NULL);
  char key[WORKLOAD_MAX_BYTES], v[WORKLOAD_MAX_BYTES];
  for (uint64_t i = 0; i < n; i++) {
    size_t kl = workload_put_key(w, i, key), vl = workload_put_value(w, i, v);
    if ((rc = bfh_put(db, key, kl, v, vl)) != BFH_OK) die("put", rc, db);
  }
  if ((rc = bfh_flush(db)) != BFH_OK) die("flush", rc, db);
  if (engine == BFH_ENGINE_LSM) {
    err_t err;
    if (engine_lsm_wait_idle(bfh_internal_engine(db), &err) != BFH_OK) die("wait", err.code, db);
  }
  bfh_close(db);
  return (double)(bench_now_ns() - t0) / 1e9;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* --ingest R: the load's seconds R times with the maps written and R times without,
   alternating; prints both medians. */
static void ingest(bfh_engine engine, const workload_t *w, uint64_t n, const char *dir,
                   uint32_t mapbits, int reps) {
  double with[16], without[16];
  for (int r = 0; r < reps; r++) {
    with[r] = load(engine, w, n, dir, mapbits, 1, 0);
    without[r] = load(engine, w, n, dir, mapbits, 0, 0);
    printf("# ingest %llu: run %d: with maps %.2f s, without %.2f s\n", (unsigned long long)n,
           r + 1, with[r], without[r]);
    fflush(stdout);
  }
  qsort(with, (size_t)reps, sizeof *with, cmp_double);
  qsort(without, (size_t)reps, sizeof *without, cmp_double);
  printf("ingest,%llu,%d,%.2f,%.2f,%.3f\n", (unsigned long long)n, reps, with[reps / 2],
         without[reps / 2], with[reps / 2] / without[reps / 2]);
  fflush(stdout);
  bench_rm_rf("memory_bench", dir);
}

/* Median AUTO time (ns) over q queries of present (absent = 0) or absent values; the mean
   blocks and map chunks read, and the share of searches that read nothing (no block, chunk
   or table: answered from memory). */
static double median_auto(bfh_db *db, const workload_t *w, uint64_t q, int absent,
                          double *blocks, double *chunks, double *no_read) {
  uint64_t *ns = malloc(q * sizeof *ns);
  if (!ns) die("malloc", BFH_E_NOMEM, db);
  char v[WORKLOAD_MAX_BYTES];
  double b = 0, c = 0, none = 0;
  for (uint64_t i = 0; i < q; i++) {
    uint64_t id = absent ? workload_absent_value_id(w, 4321, i) : workload_present_value_id(w, 1234, i);
    size_t vl = workload_value(w, id, v);
    uint64_t hits = 0;
    bfh_search_stats st;
    uint64_t t0 = bench_now_ns();
    int rc = bfh_search(db, v, vl, BFH_SEARCH_AUTO, count_match, &hits, &st);
    ns[i] = bench_now_ns() - t0;
    if (rc != BFH_OK) die("search", rc, db);
    if (!absent && hits == 0) die("search: a present value not found", BFH_E_CORRUPT, db);
    b += (double)st.blocks_read;
    c += (double)st.map_chunks_read;
    none += st.blocks_read == 0 && st.map_chunks_read == 0 && st.tables_scanned == 0;
  }
  qsort(ns, q, sizeof *ns, cmp_u64);
  double m = (double)ns[q / 2];
  free(ns);
  *blocks = b / (double)q;
  *chunks = c / (double)q;
  *no_read = none / (double)q;
  return m;
}

typedef struct result {
  double present_us, absent_us;
} result_t;

static const char *layout_name(uint32_t bits, int maps) {
  return bits == 0 ? "paper" : maps ? "lean-map" : "lean";
}

static result_t measure(bfh_engine engine, const workload_t *w, uint64_t n, uint64_t q,
                        const char *dir, uint32_t bits, int maps, const result_t *paper) {
  bfh_options o;
  bfh_options_init(&o);
  o.engine = engine;
  o.index_bits_per_value = bits;
  o.block_maps = maps;
  bfh_db *db;
  int rc = bfh_open(dir, &o, &db);
  if (rc != BFH_OK) die("open", rc, NULL);
  /* Measure the index ready: while leaves load, a search reads the loading tables through
     their block filters or maps (every table, at first). */
  err_t err;
  index_sync_t *sync = bfh_internal_sync(db);
  if (sync && index_sync_loader_wait(sync, NULL, &err) != BFH_OK) die("load", err.code, db);
  double pb, ab, pc, ac, pn, an;
  (void)median_auto(db, w, q / 4 + 1, 0, &pb, &pc, &pn); /* warm up */
  double present = median_auto(db, w, q, 0, &pb, &pc, &pn);
  double absent = median_auto(db, w, q, 1, &ab, &ac, &an);
  bfh_db_stats st;
  if ((rc = bfh_stats(db, &st)) != BFH_OK) die("stats", rc, db);
  double e = (double)n;
  result_t r = {present / 1000.0, absent / 1000.0};
  printf("%s,%llu,%s,%u,%u,%llu,%.3f,%.3f,%.3f,%.3f,%.3f,%.3f,%.2f,%.2f,%.2f,%.2f,%.2f,%.2f,%.2f,"
         "%.2f,%.3f,%.3f\n",
         engine == BFH_ENGINE_LSM ? "lsm" : "leveldb", (unsigned long long)n,
         layout_name(bits, maps), bits, st.value_filter_hashes, (unsigned long long)st.tables,
         st.index_bytes / e, st.leaf_memory_bytes / e, st.internal_bytes / e, st.sliced_bytes / e,
         st.block_filter_bytes / e, st.mean_leaf_fill, r.present_us, r.absent_us, pb, ab, pc, ac,
         paper ? r.present_us / paper->present_us : 1.0,
         paper ? r.absent_us / paper->absent_us : 1.0, an,
         (double)(st.index_bytes + st.memtable_index_bytes) / e);
  fflush(stdout);
  bfh_close(db);
  return r;
}

static void usage(void) {
  fprintf(stderr, "usage: memory_bench [--num N[,N...]] [--queries Q] [--engines lsm,leveldb] "
                  "[--lean-bits B] [--map-bits B] [--dir PATH]\n");
  exit(2);
}

int main(int argc, char **argv) {
  uint64_t nums[8] = {1000000, 10000000};
  int nnums = 2;
  uint64_t q = 2000;
  const char *engines = "lsm,leveldb";
  const char *dir = "/tmp/bfh-memory-bench";
  uint32_t lean = TESTBED_LEAN_BITS, mapbits = BFH_LEAN_MAP_BITS;
  int reps = 0, keep = 0;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!v) usage();
    i++;
    if (!strcmp(a, "--num")) {
      nnums = 0;
      for (char *p = (char *)v; *p && nnums < 8; p++) {
        nums[nnums++] = strtoull(p, &p, 10);
        if (*p != ',') break;
      }
    } else if (!strcmp(a, "--queries")) {
      q = strtoull(v, NULL, 10);
    } else if (!strcmp(a, "--engines")) {
      engines = v;
    } else if (!strcmp(a, "--lean-bits")) {
      lean = (uint32_t)strtoul(v, NULL, 10);
    } else if (!strcmp(a, "--map-bits")) {
      mapbits = (uint32_t)strtoul(v, NULL, 10);
    } else if (!strcmp(a, "--keep")) {
      keep = atoi(v);
    } else if (!strcmp(a, "--ingest")) {
      reps = atoi(v);
      if (reps < 1 || reps > 16) usage();
    } else if (!strcmp(a, "--dir")) {
      dir = v;
    } else {
      usage();
    }
  }
  if (q == 0 || lean == 0 || mapbits == 0) usage();
  printf("# memory_bench: random-order unique values (workload seed 42), queries %llu, layouts: "
         "paper (index_bits_per_value 0), lean (%u bits per value, block filters in memory), "
         "lean-map (%u bits per value, value-to-block maps); m 2000000, block filter bits %d, "
         "defaults otherwise; paper and lean on a database made with k 3 (the paper's), "
         "lean-map on one of the same entries made with the default k; ratios against the "
         "paper layout of the same run\n",
         (unsigned long long)q, lean, mapbits, 10);
  printf("engine,num,layout,lean_bits,k,tables,index_bytes_per_entry,leaf_bytes_per_entry,"
         "internal_bytes_per_entry,sliced_bytes_per_entry,block_filter_bytes_per_entry,"
         "mean_leaf_fill,auto_present_median_us,auto_absent_median_us,present_blocks_read,"
         "absent_blocks_read,present_map_chunks,absent_map_chunks,present_vs_paper,"
         "absent_vs_paper,absent_no_read,with_memtable_index_per_entry\n");
  fflush(stdout);
  for (int e = 0; e < 2; e++) {
    bfh_engine eng = e == 0 ? BFH_ENGINE_LSM : BFH_ENGINE_LEVELDB;
    if (!strstr(engines, e == 0 ? "lsm" : "leveldb")) continue;
    for (int i = 0; i < nnums; i++) {
      workload_config_t wc;
      workload_config_init(&wc);
      wc.n = nums[i];
      wc.order = WORKLOAD_RANDOM;
      workload_t w;
      if (workload_init(&w, &wc) != BFH_OK) usage();
      char d[1024];
      snprintf(d, sizeof d, "%s/%s-%llu", dir, e == 0 ? "lsm" : "leveldb",
               (unsigned long long)nums[i]);
      if (reps) {
        ingest(eng, &w, nums[i], d, mapbits, reps);
        continue;
      }
      /* Two databases of the same entries: d made with the default k (the lean-map layout's),
         dp with the paper's k = 3, the configuration the paper's layout keeps (its leaves
         are the tables' own, so the k is the database's). */
      char dp[1100];
      snprintf(dp, sizeof dp, "%s-paper", d);
      struct stat sb;
      if (!keep || stat(d, &sb) != 0) load(eng, &w, nums[i], d, mapbits, 1, 0);
      if (!keep || stat(dp, &sb) != 0) load(eng, &w, nums[i], dp, mapbits, 1, DB_PARAMS_PAPER_HASHES);
      /* A first open warms the page cache; then each layout, the paper's twice (first and
         last, so that drift on a shared machine shows). */
      (void)measure(eng, &w, nums[i], q / 4 + 1, d, mapbits, 1, NULL);
      result_t paper = measure(eng, &w, nums[i], q, dp, 0, 0, NULL);
      (void)measure(eng, &w, nums[i], q, dp, lean, 0, &paper);
      (void)measure(eng, &w, nums[i], q, d, mapbits, 1, &paper);
      (void)measure(eng, &w, nums[i], q, dp, 0, 0, &paper);
      if (!keep) {
        bench_rm_rf("memory_bench", d);
        bench_rm_rf("memory_bench", dp);
      }
    }
  }
  return 0;
}

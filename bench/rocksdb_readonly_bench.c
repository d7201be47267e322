/* rocksdb_readonly_bench: the read-only RocksDB engine on a database a stock RocksDB program
 * holds open, against the read-write engine on the same database, in one run (one process).
 *
 * 1. This process, as a stock RocksDB program (C API, default options: snappy,
 *    format_version 5), writes --num unique values (keys in random order), flushes, compacts
 *    and waits until no compaction runs or is pending; it keeps the database open (its LOCK
 *    held) through step 2.
 * 2. Read-only, in-process: bfh_open with read_only and a fresh index directory (a cold filter
 *    cache: the open reads every live table to build its filters), then the first search;
 *    the bytes this process read (/proc/self/io rchar) for open + first search are set
 *    against the live tables' total size. Then a second open over the now warm filter cache
 *    and its first search, measured the same way. Then --queries searches (AUTO) of present
 *    values: median latency.
 *    Then, the database live: the stock program puts --memtable more unique values (in its
 *    memtable and WAL, never flushed), and --rounds rounds each time, on the read-only handle
 *    open throughout, --queries AUTO searches of a value in a table, of a value in the memtable
 *    and of an absent value (medians), and one RocksDB iterator scan over the whole database
 *    comparing every value (the rival: what a RocksDB program does to find a value). Printed:
 *    the median over the rounds of each, and the scan's median over each search's.
 * 3. The stock handle is closed; bfh opens the database read-write (BFH_ENGINE_ROCKSDB) and
 *    runs the same searches: median latency. The ratio read-only / read-write is printed.
 * Prints a header naming every parameter, then CSV.
 *
 * Usage: rocksdb_readonly_bench [--num N] [--queries Q] [--rounds R] [--memtable M] [--dir D]
 *                               [--keep]
 *   --num 10000000 is the medium run (1M by default).
 */
#include <rocksdb/c.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bench/bench_util.h"
#include "bfh.h"
#include "util/random.h"

static const char *PROG = "rocksdb_readonly_bench";

static void die(const char *what, const char *msg) {
  fprintf(stderr, "%s: %s: %s\n", PROG, what, msg ? msg : "?");
  exit(1);
}

/* Bytes this process has read through read(2)/pread(2) so far (page cache included). */
static uint64_t rchar(void) {
  FILE *f = fopen("/proc/self/io", "r");
  if (!f) return 0;
  char line[128];
  uint64_t v = 0;
  while (fgets(line, sizeof line, f))
    if (sscanf(line, "rchar: %llu", (unsigned long long *)&v) == 1) break;
  fclose(f);
  return v;
}

static uint64_t prop_u64(rocksdb_t *db, const char *name) {
  char *s = rocksdb_property_value(db, name);
  uint64_t v = s ? strtoull(s, NULL, 10) : 0;
  rocksdb_free(s);
  return v;
}

static size_t value_of(uint64_t i, char *buf) {
  return (size_t)sprintf(buf, "value-%010llu-unique", (unsigned long long)i);
}

static int count_hit(void *arg, const void *k, size_t kl) {
  (void)k, (void)kl;
  ++*(uint64_t *)arg;
  return 0;
}

static size_t mem_value_of(uint64_t i, char *buf) {
  return (size_t)sprintf(buf, "value-%010llu-memtable", (unsigned long long)i);
}

static size_t absent_value_of(uint64_t i, char *buf) {
  return (size_t)sprintf(buf, "value-%010llu-absent", (unsigned long long)i);
}

enum { KIND_TABLE, KIND_MEMTABLE, KIND_ABSENT, KINDS };
static const char *KIND_NAMES[KINDS] = {"table", "memtable", "absent"};

/* What the searches of one kind cost, summed over the live rounds (the means are printed). */
typedef struct kind_cost {
  uint64_t searches, leaf_positives, blocks_read, entries_scanned, bytes_read;
} kind_cost_t;

static void cost_add(kind_cost_t *c, const bfh_search_stats *st) {
  if (!c) return;
  c->searches++;
  c->leaf_positives += st->leaf_positives;
  c->blocks_read += st->blocks_read;
  c->entries_scanned += st->entries_scanned;
  c->bytes_read += st->bytes_read;
}

/* --queries AUTO searches of values of one kind (from n of them); the median in ns. Their
   stats are added to *cost (NULL: not kept). */
static uint64_t median_kind(bfh_db *db, int kind, uint64_t n, int queries, uint64_t seed,
                            kind_cost_t *cost) {
  uint64_t *t = malloc((size_t)queries * sizeof *t);
  rng_t r;
  rng_init(&r, seed);
  for (int q = 0; q < queries; q++) {
    char v[64];
    uint64_t i = rng_below(&r, n);
    size_t vl = kind == KIND_TABLE      ? value_of(i, v)
                : kind == KIND_MEMTABLE ? mem_value_of(i, v)
                                        : absent_value_of(i, v);
    bfh_search_stats st;
    uint64_t hits = 0, t0 = clock_now_ns();
    int rc = bfh_search(db, v, vl, BFH_SEARCH_AUTO, count_hit, &hits, &st);
    t[q] = clock_now_ns() - t0;
    if (rc != BFH_OK) die(KIND_NAMES[kind], bfh_last_error(db));
    cost_add(cost, &st);
    if (hits != (kind == KIND_ABSENT ? 0u : 1u)) {
      fprintf(stderr, "%s: %s: '%s' found %llu times\n", PROG, KIND_NAMES[kind], v,
              (unsigned long long)hits);
      exit(1);
    }
  }
  qsort(t, (size_t)queries, sizeof *t, bench_cmp_u64);
  uint64_t m = t[queries / 2];
  free(t);
  return m;
}

/* The rival: a RocksDB iterator over the whole database comparing every value with v (as a
   program without bfh finds a value); the time in ns, the matches in *hits. */
static uint64_t iterator_scan(rocksdb_t *rdb, const char *v, size_t vl, uint64_t *hits) {
  rocksdb_readoptions_t *ro = rocksdb_readoptions_create();
  uint64_t t0 = clock_now_ns();
  rocksdb_iterator_t *it = rocksdb_create_iterator(rdb, ro);
  *hits = 0;
  for (rocksdb_iter_seek_to_first(it); rocksdb_iter_valid(it); rocksdb_iter_next(it)) {
    size_t l;
    const char *x = rocksdb_iter_value(it, &l);
    if (l == vl && memcmp(x, v, vl) == 0) ++*hits;
  }
  rocksdb_iter_destroy(it);
  uint64_t ns = clock_now_ns() - t0;
  rocksdb_readoptions_destroy(ro);
  return ns;
}

typedef struct first {
  uint64_t open_ns, search_ns, open_rchar, search_rchar, search_bytes;
} first_t;

static bfh_db *open_ro_measured(const char *dir, const char *idx, first_t *f, uint64_t num) {
  bfh_options opt;
  bfh_options_init(&opt);
  opt.engine = BFH_ENGINE_ROCKSDB;
  opt.read_only = 1;
  opt.index_dir = idx;
  bfh_db *db;
  uint64_t r0 = rchar(), t0 = clock_now_ns();
  if (bfh_open(dir, &opt, &db) != BFH_OK) die("read-only open", bfh_last_error(NULL));
  f->open_ns = clock_now_ns() - t0;
  uint64_t r1 = rchar();
  f->open_rchar = r1 - r0;
  char v[64];
  size_t vl = value_of(num / 3, v);
  bfh_search_stats st;
  uint64_t hits = 0;
  t0 = clock_now_ns();
  if (bfh_search(db, v, vl, BFH_SEARCH_AUTO, count_hit, &hits, &st) != BFH_OK || hits != 1)
    die("first search", bfh_last_error(db));
  f->search_ns = clock_now_ns() - t0;
  f->search_rchar = rchar() - r1;
  f->search_bytes = st.bytes_read;
  return db;
}

int main(int argc, char **argv) {
  uint64_t num = 1000000;
  int queries = 200, keep = 0, rounds = 5;
  uint64_t memtable = 10000;
  const char *base = NULL;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--num") == 0 && i + 1 < argc)
      num = strtoull(argv[++i], NULL, 10);
    else if (strcmp(argv[i], "--queries") == 0 && i + 1 < argc)
      queries = atoi(argv[++i]);
    else if (strcmp(argv[i], "--rounds") == 0 && i + 1 < argc)
      rounds = atoi(argv[++i]);
    else if (strcmp(argv[i], "--memtable") == 0 && i + 1 < argc)
      memtable = strtoull(argv[++i], NULL, 10);
    else if (strcmp(argv[i], "--dir") == 0 && i + 1 < argc)
      base = argv[++i];
    else if (strcmp(argv[i], "--keep") == 0)
      keep = 1;
    else {
      fprintf(stderr,
              "usage: %s [--num N] [--queries Q] [--rounds R] [--memtable M] [--dir D] "
              "[--keep]\n",
              PROG);
      return 2;
    }
  }
  if (queries < 1) queries = 1;
  if (rounds < 1) rounds = 1;
  if (memtable < 1) memtable = 1;
  char root[512], dir[600], idx[600];
  if (base)
    snprintf(root, sizeof root, "%s", base);
  else
    snprintf(root, sizeof root, "/tmp/%s.%d", PROG, (int)getpid());
  snprintf(dir, sizeof dir, "%s/db", root);
  snprintf(idx, sizeof idx, "%s/index", root);
  bench_rm_rf(PROG, root);
  mkdir(root, 0755);

  /* 1. A stock RocksDB program writes the database and keeps it open. */
  rocksdb_options_t *o = rocksdb_options_create();
  rocksdb_options_set_create_if_missing(o, 1);
  char *msg = NULL;
  rocksdb_t *rdb = rocksdb_open(o, dir, &msg);
  if (msg) die("rocksdb_open", msg);
  rocksdb_writeoptions_t *wo = rocksdb_writeoptions_create();
  rocksdb_writeoptions_disable_WAL(wo, 0);
  uint64_t *perm = malloc(num * sizeof *perm);
  for (uint64_t i = 0; i < num; i++) perm[i] = i;
  rng_t r;
  rng_init(&r, 7);
  for (uint64_t i = num; i > 1; i--) {
    uint64_t j = rng_below(&r, i), t = perm[i - 1];
    perm[i - 1] = perm[j];
    perm[j] = t;
  }
  uint64_t t0 = clock_now_ns();
  for (uint64_t n = 0; n < num; n++) {
    char k[32], v[64];
    int kl = sprintf(k, "key%010llu", (unsigned long long)perm[n]);
    size_t vl = value_of(perm[n], v);
    rocksdb_put(rdb, wo, k, (size_t)kl, v, vl, &msg);
    if (msg) die("rocksdb_put", msg);
  }
  free(perm);
  rocksdb_flushoptions_t *fo = rocksdb_flushoptions_create();
  rocksdb_flush(rdb, fo, &msg);
  if (msg) die("rocksdb_flush", msg);
  rocksdb_compact_range(rdb, NULL, 0, NULL, 0);
  /* Bounded wait for the state "no compaction running or pending". */
  for (int i = 0; i < 600000 && (prop_u64(rdb, "rocksdb.num-running-compactions") ||
                                 prop_u64(rdb, "rocksdb.compaction-pending"));
       i++)
    usleep(1000);
  uint64_t load_ns = clock_now_ns() - t0;
  uint64_t tables = 0, table_bytes = 0;
  const rocksdb_livefiles_t *lf = rocksdb_livefiles(rdb);
  for (int i = 0; i < rocksdb_livefiles_count(lf); i++, tables++)
    table_bytes += rocksdb_livefiles_size(lf, i);
  rocksdb_livefiles_destroy(lf);

  /* 2. Read-only beside the stock handle. */
  first_t cold, warm;
  bfh_db *db = open_ro_measured(dir, idx, &cold, num);
  bfh_close(db);
  db = open_ro_measured(dir, idx, &warm, num);
  uint64_t ro_med = median_kind(db, KIND_TABLE, num, queries, 42, NULL);

  /* 2b. The database live: values in the memtable too; AUTO by kind against the scan. */
  for (uint64_t i = 0; i < memtable; i++) {
    char k[32], v[64];
    int kl = sprintf(k, "mkey%010llu", (unsigned long long)i);
    size_t vl = mem_value_of(i, v);
    rocksdb_put(rdb, wo, k, (size_t)kl, v, vl, &msg);
    if (msg) die("rocksdb_put", msg);
  }
  uint64_t *kind_ns[KINDS], *scan_ns = malloc((size_t)rounds * sizeof *scan_ns);
  kind_cost_t cost[KINDS] = {{0}};
  for (int k = 0; k < KINDS; k++) kind_ns[k] = malloc((size_t)rounds * sizeof *kind_ns[k]);
  const uint64_t kind_n[KINDS] = {num, memtable, num};
  /* One search of each kind first: the WAL read. */
  for (int k = 0; k < KINDS; k++) (void)median_kind(db, k, kind_n[k], 1, 1, NULL);
  for (int round = 0; round < rounds; round++) {
    for (int k = 0; k < KINDS; k++)
      kind_ns[k][round] = median_kind(db, k, kind_n[k], queries, 100 + (uint64_t)round, &cost[k]);
    char v[64];
    size_t vl = absent_value_of((uint64_t)round, v);
    uint64_t hits;
    scan_ns[round] = iterator_scan(rdb, v, vl, &hits);
    if (hits) die("iterator scan", "found an absent value");
  }
  for (int k = 0; k < KINDS; k++)
    qsort(kind_ns[k], (size_t)rounds, sizeof(uint64_t), bench_cmp_u64);
  qsort(scan_ns, (size_t)rounds, sizeof *scan_ns, bench_cmp_u64);
  bfh_close(db);

  /* 3. Read-write: the stock program closes first (RocksDB admits one writer). */
  rocksdb_close(rdb);
  bfh_options opt;
  bfh_options_init(&opt);
  opt.engine = BFH_ENGINE_ROCKSDB;
  if (bfh_open(dir, &opt, &db) != BFH_OK) die("read-write open", bfh_last_error(NULL));
  uint64_t rw_med = median_kind(db, KIND_TABLE, num, queries, 42, NULL);
  bfh_close(db);

  printf("# %s: num=%llu queries=%d rocksdb=default options (snappy, format_version 5) "
         "method=AUTO measured=in-process (this process wrote the database and holds it open "
         "during the read-only steps; page cache warm)\n",
         PROG, (unsigned long long)num, queries);
  printf("# load_s=%.2f live_tables=%llu live_table_bytes=%llu\n", load_ns / 1e9,
         (unsigned long long)tables, (unsigned long long)table_bytes);
  printf("step,open_ms,first_search_ms,open_read_bytes,first_search_read_bytes,"
         "first_search_bytes_read_stat,read_over_tables\n");
  const first_t *fs[2] = {&cold, &warm};
  const char *names[2] = {"ro_open_cold_filter_cache", "ro_open_warm_filter_cache"};
  for (int i = 0; i < 2; i++)
    printf("%s,%.2f,%.3f,%llu,%llu,%llu,%.3f\n", names[i], fs[i]->open_ns / 1e6,
           fs[i]->search_ns / 1e6, (unsigned long long)fs[i]->open_rchar,
           (unsigned long long)fs[i]->search_rchar, (unsigned long long)fs[i]->search_bytes,
           table_bytes ? (double)(fs[i]->open_rchar + fs[i]->search_rchar) / (double)table_bytes
                       : 0.0);
  printf("mode,median_search_us\n");
  printf("read_only,%.1f\nread_write,%.1f\n", ro_med / 1e3, rw_med / 1e3);
  printf("# read_only / read_write median = %.2f\n", rw_med ? (double)ro_med / (double)rw_med : 0.0);
  printf(
      "# live: memtable=%llu unflushed values, rounds=%d, each round %d AUTO searches per "
      "kind (median) and one iterator scan; medians over the rounds\n",
      (unsigned long long)memtable, rounds, queries);
  printf("kind,auto_median_us,iterator_scan_median_ms,scan_over_auto,mean_leaf_positives,"
         "mean_blocks_read,mean_entries_scanned,mean_bytes_read\n");
  uint64_t scan_med = scan_ns[rounds / 2];
  for (int k = 0; k < KINDS; k++) {
    uint64_t m = kind_ns[k][rounds / 2];
    double n = cost[k].searches ? (double)cost[k].searches : 1.0;
    printf("%s,%.1f,%.1f,%.0f,%.3f,%.3f,%.1f,%.0f\n", KIND_NAMES[k], m / 1e3, scan_med / 1e6,
           m ? (double)scan_med / (double)m : 0.0, cost[k].leaf_positives / n,
           cost[k].blocks_read / n, cost[k].entries_scanned / n, cost[k].bytes_read / n);
    free(kind_ns[k]);
  }
  free(scan_ns);
  rocksdb_flushoptions_destroy(fo);
  rocksdb_writeoptions_destroy(wo);
  rocksdb_options_destroy(o);
  if (!keep) bench_rm_rf(PROG, root);
  return 0;
}

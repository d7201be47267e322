/* rocksdb_bench: value search and ingest on stock RocksDB (Debian's 7.8.3), the goals of the
 * RocksDB engine (doc/rocksdb.md, "Experiments and benchmarks"). One process, side by side.
 *
 * (a) Search.
 *   1. A stock RocksDB program (this one, through the C API directly, default options: snappy,
 *      format_version 5, a 64 MiB write buffer) writes --num unique values, keys in random
 *      order, waits until RocksDB has no flush or compaction pending or running, and closes.
 *   2. bfh opens the database read-write (BFH_ENGINE_ROCKSDB, its defaults but for the write
 *      buffer: RocksDB's 64 MiB, so that what follows stays unflushed; its open recovers the
 *      log into a table, as any RocksDB open does), waits until every live table is indexed
 *      and the list is stable, then bfh_puts --unflushed (default 25,000) more unique values,
 *      which stay in RocksDB's memtable and WAL (the live-file count before and after proves
 *      it).
 *   3. A second, read-only RocksDB handle on the same directory (rocksdb_open_for_read_only,
 *      which replays the WAL: it sees the unflushed puts) is the baseline: an iterator over
 *      the whole database comparing every value. For each query, in turn: the iterator scan,
 *      then bfh_search with AUTO; three classes of --queries values: in a table, only in the
 *      memtable/WAL, absent. Medians, their ratio, and AUTO's bytes read per search (from
 *      bfh_search_stats). A result count other than the iterator's stops the bench.
 * (b) Ingest: --ingest-num bfh_puts into a fresh database (BFH_ENGINE_ROCKSDB, bfh's defaults:
 *     what `bfh put --engine rocksdb` opens) with value filters on (every value index: leaves,
 *     block filters) and off, the order alternating, --ingest-runs runs each. Time = the put
 *     loop, then bfh_flush, one search (which has index_sync read every table left) and
 *     bfh_close (which writes the filter cache of every live table): "total" is all of it, the
 *     figure the goal is checked on; the put loop alone is shown too.
 *
 * Goals (the issue's): AUTO >= 1000x the iterator for a value in a table, >= 1000x for one in
 * the memtable/WAL, >= 5000x absent; <= 64 KiB read per present search (checked on the
 * largest); ingest with value filters on at most 15% slower than off (median of the runs).
 * Prints a header naming every parameter, then CSV. Never run by CI.
 *
 * Usage: rocksdb_bench [--num N] [--unflushed U] [--queries Q] [--ingest-num N]
 *                      [--ingest-runs R] [--value-bytes B] [--dir D] [--keep] [--skip-ingest]
 *                      [--skip-search]
 */
#include <rocksdb/c.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bench/bench_util.h"
#include "bfh.h"
/* Not public: the k a new database gets (bfh_internal_filter_hashes), for the header. */
#include "api/testbed.h"
#include "util/random.h"

#define ROCKSDB_WRITE_BUFFER (64u << 20) /* RocksDB 7.8's default write_buffer_size */
#define MAX_QUERIES 100
#define MAX_RUNS 16

static int value_bytes = 100;

static void die(const char *what, const char *msg) {
  fflush(stdout); /* what was measured before, then why it stopped */
  fprintf(stderr, "rocksdb_bench: %s: %s\n", what, msg ? msg : "");
  exit(1);
}

/* ---- the stock RocksDB program ------------------------------------------------------- */

static uint64_t property(rocksdb_t *db, const char *name) {
  uint64_t v = 0;
  if (rocksdb_property_int(db, name, &v) != 0) die("rocksdb_property_int", name);
  return v;
}

/* Waits (bounded) until RocksDB has no flush or compaction pending or running. */
static void wait_quiet(rocksdb_t *db) {
  static const char *const props[] = {"rocksdb.mem-table-flush-pending",
                                      "rocksdb.num-running-flushes", "rocksdb.compaction-pending",
                                      "rocksdb.num-running-compactions"};
  for (int polls = 0, quiet = 0; quiet < 5; polls++) {
    if (polls == 6000) die("wait_quiet", "RocksDB still flushing or compacting after 600 s");
    uint64_t busy = 0;
    for (size_t i = 0; i < sizeof props / sizeof props[0]; i++) busy += property(db, props[i]);
    quiet = busy ? 0 : quiet + 1;
    usleep(100000);
  }
}

/* Live table files and their bytes (rocksdb_livefiles). */
static void live_files(rocksdb_t *db, uint64_t *files, uint64_t *bytes, int *max_level) {
  const rocksdb_livefiles_t *lf = rocksdb_livefiles(db);
  int n = rocksdb_livefiles_count(lf);
  *files = (uint64_t)n;
  *bytes = 0;
  *max_level = 0;
  for (int i = 0; i < n; i++) {
    *bytes += rocksdb_livefiles_size(lf, i);
    if (rocksdb_livefiles_level(lf, i) > *max_level) *max_level = rocksdb_livefiles_level(lf, i);
  }
  rocksdb_livefiles_destroy(lf);
}

/* Step (a)1: num puts by a stock RocksDB program with default options; returns the put ns. */
static uint64_t stock_write(const char *path, uint64_t num) {
  rocksdb_options_t *o = rocksdb_options_create();
  rocksdb_options_set_create_if_missing(o, 1);
  char *err = NULL;
  rocksdb_t *db = rocksdb_open(o, path, &err);
  if (err) die(path, err);
  rocksdb_writeoptions_t *wo = rocksdb_writeoptions_create();
  char key[17], val[4096];
  uint64_t t0 = clock_now_ns();
  for (uint64_t i = 0; i < num; i++) {
    bench_stock_key(i, key);
    rocksdb_put(db, wo, key, 16, val, bench_stock_value(i, value_bytes, val), &err);
    if (err) die("rocksdb_put", err);
  }
  uint64_t t = clock_now_ns() - t0;
  wait_quiet(db);
  uint64_t files, bytes;
  int level;
  live_files(db, &files, &bytes, &level);
  printf("# stock RocksDB wrote %llu entries: %llu live tables, %llu bytes, deepest level %d\n",
         (unsigned long long)num, (unsigned long long)files, (unsigned long long)bytes, level);
  rocksdb_writeoptions_destroy(wo);
  rocksdb_close(db);
  rocksdb_options_destroy(o);
  return t;
}

/* The baseline: an iterator over the whole database, comparing every value. */
static uint64_t iterator_scan(rocksdb_t *db, const char *val, size_t vl, uint64_t *hits) {
  rocksdb_readoptions_t *ro = rocksdb_readoptions_create();
  rocksdb_readoptions_set_fill_cache(ro, 0);
  uint64_t t0 = clock_now_ns();
  rocksdb_iterator_t *it = rocksdb_create_iterator(db, ro);
  *hits = 0;
  for (rocksdb_iter_seek_to_first(it); rocksdb_iter_valid(it); rocksdb_iter_next(it)) {
    size_t n;
    const char *v = rocksdb_iter_value(it, &n);
    if (n == vl && memcmp(v, val, vl) == 0) (*hits)++;
  }
  char *err = NULL;
  rocksdb_iter_get_error(it, &err);
  if (err) die("rocksdb iterator", err);
  rocksdb_iter_destroy(it);
  uint64_t t = clock_now_ns() - t0;
  rocksdb_readoptions_destroy(ro);
  return t;
}

/* ---- bfh ------------------------------------------------------------------------------- */

static bfh_db *open_bfh(const char *path, int filters, size_t write_buffer) {
  bfh_options opt;
  bfh_options_init(&opt);
  opt.engine = BFH_ENGINE_ROCKSDB;
  opt.value_filters = filters;
  if (write_buffer) opt.memtable_bytes = write_buffer;
  bfh_db *db;
  if (bfh_open(path, &opt, &db) != BFH_OK) die(path, bfh_last_error(NULL));
  return db;
}

static void put_range(bfh_db *db, uint64_t first, uint64_t n) {
  char key[17], val[4096];
  for (uint64_t i = first; i < first + n; i++) {
    bench_stock_key(i, key);
    if (bfh_put(db, key, 16, val, bench_stock_value(i, value_bytes, val)) != BFH_OK)
      die("bfh_put", bfh_last_error(db));
  }
}

/* Waits (bounded) until every live table has its leaf and block filter and the table list has
   been the same over 10 full index syncs 200 ms apart. Called with an empty memtable (the open
   recovered the log into a table), so each bfh_flush writes no table: it only has the index
   read every live table not indexed yet. */
static void wait_indexed(bfh_db *db, bfh_db_stats *st) {
  bfh_db_stats prev;
  memset(&prev, 0, sizeof prev);
  for (int stable = 0, polls = 0; stable < 10; polls++) {
    if (polls == 3000) die("wait_indexed", "tables still changing or not indexed after 600 s");
    usleep(200000);
    if (bfh_flush(db) != BFH_OK) die("bfh_flush", bfh_last_error(db));
    if (bfh_stats(db, st) != BFH_OK) die("bfh_stats", bfh_last_error(db));
    int indexed = st->leaf_filters == st->tables && st->block_filter_tables == st->tables;
    int same = st->tables == prev.tables && st->table_bytes == prev.table_bytes;
    stable = indexed && same ? stable + 1 : 0;
    prev = *st;
  }
}

/* ---- (a) search ------------------------------------------------------------------------ */

enum { PRESENT_TABLE, PRESENT_MEMTABLE, ABSENT, CLASSES };
static const char *const class_names[CLASSES] = {"present_table", "present_memtable", "absent"};
static const double class_goals[CLASSES] = {1000, 1000, 5000};
#define BYTES_GOAL (64u << 10)

typedef struct tally {
  uint64_t ns[MAX_QUERIES], base_ns[MAX_QUERIES];
  uint64_t bytes, bytes_max, blocks, tables, results, base_results;
} tally_t;

static void search_mode(const char *base, uint64_t num, uint64_t unflushed, int queries,
                        int keep) {
  char path[4200];
  snprintf(path, sizeof path, "%s/search", base);
  bench_rm_rf("rocksdb_bench", path);
  uint64_t t_load = stock_write(path, num);
  printf("load,,rocksdb_put,%llu,%.1f,,,,,,,,\n", (unsigned long long)num, t_load / 1e6);
  fflush(stdout);

  uint64_t t0 = clock_now_ns();
  bfh_db *db = open_bfh(path, 1, ROCKSDB_WRITE_BUFFER);
  uint64_t t_open = clock_now_ns() - t0;
  bfh_db_stats before, after;
  t0 = clock_now_ns();
  wait_indexed(db, &before);
  uint64_t t_settle = clock_now_ns() - t0;
  printf("open,,bfh_open,%llu,%.1f,,,,,,,,\n", (unsigned long long)num, t_open / 1e6);
  printf("open,,until_indexed_and_stable,%llu,%.1f,,,,,,,,\n", (unsigned long long)num,
         t_settle / 1e6);
  put_range(db, num, unflushed);
  if (bfh_stats(db, &after) != BFH_OK) die("bfh_stats", bfh_last_error(db));
  printf("# tables: %llu before the unflushed puts (%llu indexed, %llu with a block filter, "
         "%llu bytes), %llu after\n",
         (unsigned long long)before.tables, (unsigned long long)before.leaf_filters,
         (unsigned long long)before.block_filter_tables, (unsigned long long)before.table_bytes,
         (unsigned long long)after.tables);
  if (after.tables != before.tables) die("unflushed puts", "RocksDB wrote a table: lower --unflushed");

  rocksdb_options_t *o = rocksdb_options_create();
  char *err = NULL;
  rocksdb_t *rdb = rocksdb_open_for_read_only(o, path, 0, &err);
  if (err) die("rocksdb_open_for_read_only", err);

  static uint64_t ids[CLASSES][MAX_QUERIES];
  static tally_t t[CLASSES];
  rng_t r;
  rng_init(&r, 2024);
  for (int q = 0; q < queries; q++) {
    ids[PRESENT_TABLE][q] = rng_below(&r, num);
    ids[PRESENT_MEMTABLE][q] = num + rng_below(&r, unflushed);
    ids[ABSENT][q] = num + unflushed + 1000 + (uint64_t)q;
  }
  char val[4096], msg[256];
  for (int q = 0; q < queries; q++)
    for (int c = 0; c < CLASSES; c++) {
      size_t vl = bench_stock_value(ids[c][q], value_bytes, val);
      uint64_t hits;
      t[c].base_ns[q] = iterator_scan(rdb, val, vl, &hits);
      bfh_search_stats st;
      if (bfh_search(db, val, vl, BFH_SEARCH_AUTO, NULL, NULL, &st) != BFH_OK)
        die("bfh_search", bfh_last_error(db));
      uint64_t want = c == ABSENT ? 0 : 1;
      if (hits != want || st.results != want) {
        snprintf(msg, sizeof msg, "%s value %llu: iterator %llu, AUTO %llu, expected %llu",
                 class_names[c], (unsigned long long)ids[c][q], (unsigned long long)hits,
                 (unsigned long long)st.results, (unsigned long long)want);
        die("check", msg);
      }
      t[c].ns[q] = st.elapsed_ns;
      t[c].bytes += st.bytes_read;
      if (st.bytes_read > t[c].bytes_max) t[c].bytes_max = st.bytes_read;
      t[c].blocks += st.blocks_read;
      t[c].tables += st.tables_scanned;
      t[c].results += st.results;
      t[c].base_results += hits;
    }
  rocksdb_close(rdb);
  rocksdb_options_destroy(o);
  if (bfh_stats(db, &after) != BFH_OK) die("bfh_stats", bfh_last_error(db));
  if (after.tables != before.tables)
    printf("# WARNING: the table list changed during the searches (%llu -> %llu tables)\n",
           (unsigned long long)before.tables, (unsigned long long)after.tables);
  bfh_close(db);

  printf("# ratio: iterator median / AUTO median; bytes: AUTO's table bytes read per search\n");
  printf("kind,class,method,queries,median_ms,ratio,goal,met,bytes_read_mean,bytes_read_max,"
         "blocks_read_mean,tables_scanned_mean,results_mean\n");
  uint64_t present_bytes_max = 0;
  double present_bytes_mean = 0;
  for (int c = 0; c < CLASSES; c++) {
    uint64_t base_ns = bench_median_u64(t[c].base_ns, queries),
             auto_ns = bench_median_u64(t[c].ns, queries);
    double ratio = (double)base_ns / (double)auto_ns, n = queries;
    printf("search,%s,rocksdb_iterator,%d,%.3f,1.0,,,,,,,%.2f\n", class_names[c], queries,
           base_ns / 1e6, t[c].base_results / n);
    printf("search,%s,AUTO,%d,%.4f,%.0f,%.0f,%s,%.0f,%llu,%.2f,%.2f,%.2f\n", class_names[c],
           queries, auto_ns / 1e6, ratio, class_goals[c], ratio >= class_goals[c] ? "yes" : "NO",
           t[c].bytes / n, (unsigned long long)t[c].bytes_max, t[c].blocks / n, t[c].tables / n,
           t[c].results / n);
    if (c != ABSENT) {
      if (t[c].bytes_max > present_bytes_max) present_bytes_max = t[c].bytes_max;
      present_bytes_mean += t[c].bytes / n / 2;
    }
  }
  printf("goal,present,bytes_read_per_search_max,%d,,,%u,%s,%.0f,%llu,,,\n", queries, BYTES_GOAL,
         present_bytes_max <= BYTES_GOAL ? "yes" : "NO", present_bytes_mean,
         (unsigned long long)present_bytes_max);
  fflush(stdout);
  if (!keep) bench_rm_rf("rocksdb_bench", path);
}

/* ---- (b) ingest ------------------------------------------------------------------------ */

/* n bfh_puts into a fresh database; *loop = the put loop's ns, returns the ns until every
   table is indexed too and the handle closed (bfh_flush, one search, bfh_close). */
static uint64_t ingest(const char *path, uint64_t n, int filters, uint64_t *loop) {
  bench_rm_rf("rocksdb_bench", path);
  bfh_db *db = open_bfh(path, filters, 0);
  uint64_t t0 = clock_now_ns();
  put_range(db, 0, n);
  *loop = clock_now_ns() - t0;
  if (bfh_flush(db) != BFH_OK) die("bfh_flush", bfh_last_error(db));
  bfh_search_stats st;
  if (bfh_search(db, "absent", 6, BFH_SEARCH_AUTO, NULL, NULL, &st) != BFH_OK)
    die("bfh_search", bfh_last_error(db));
  bfh_close(db); /* with value filters: writes the live tables' filter caches */
  return clock_now_ns() - t0;
}

static void ingest_mode(const char *base, uint64_t n, int runs, int keep) {
  char pon[4200], poff[4200];
  snprintf(pon, sizeof pon, "%s/ingest_on", base);
  snprintf(poff, sizeof poff, "%s/ingest_off", base);
  printf("kind,run,value_filters,n,loop_ms,total_ms,loop_on_over_off,total_on_over_off\n");
  uint64_t on[MAX_RUNS], off[MAX_RUNS], lon[MAX_RUNS], loff[MAX_RUNS];
  for (int r = 0; r < runs; r++) {
    if (r % 2) off[r] = ingest(poff, n, 0, &loff[r]);
    on[r] = ingest(pon, n, 1, &lon[r]);
    if (r % 2 == 0) off[r] = ingest(poff, n, 0, &loff[r]);
    printf("ingest,%d,off,%llu,%.1f,%.1f,,\n", r + 1, (unsigned long long)n, loff[r] / 1e6,
           off[r] / 1e6);
    printf("ingest,%d,on,%llu,%.1f,%.1f,%.3f,%.3f\n", r + 1, (unsigned long long)n, lon[r] / 1e6,
           on[r] / 1e6, (double)lon[r] / loff[r], (double)on[r] / off[r]);
    fflush(stdout);
  }
  double loop = bench_median_ratio(lon, loff, runs), total = bench_median_ratio(on, off, runs);
  uint64_t mon = bench_median_u64(on, runs), moff = bench_median_u64(off, runs);
  printf("ingest,median,on_over_off,%llu,,,%.3f,%.3f\n", (unsigned long long)n, loop, total);
  printf("goal,ingest,total_on_over_off_median<=1.15,%llu,%.1f,%.1f,,%.3f %s\n",
         (unsigned long long)n, mon / 1e6, moff / 1e6, total, total <= 1.15 ? "yes" : "NO");
  fflush(stdout);
  if (!keep) {
    bench_rm_rf("rocksdb_bench", pon);
    bench_rm_rf("rocksdb_bench", poff);
  }
}

int main(int argc, char **argv) {
  uint64_t num = 1000000, unflushed = 25000, ingest_num = 0;
  int queries = 25, runs = 3, keep = 0, skip_ingest = 0, skip_search = 0;
  const char *dir = NULL;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--num") && i + 1 < argc)
      num = strtoull(argv[++i], NULL, 10);
    else if (!strcmp(argv[i], "--unflushed") && i + 1 < argc)
      unflushed = strtoull(argv[++i], NULL, 10);
    else if (!strcmp(argv[i], "--queries") && i + 1 < argc)
      queries = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--ingest-num") && i + 1 < argc)
      ingest_num = strtoull(argv[++i], NULL, 10);
    else if (!strcmp(argv[i], "--ingest-runs") && i + 1 < argc)
      runs = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--value-bytes") && i + 1 < argc)
      value_bytes = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--dir") && i + 1 < argc)
      dir = argv[++i];
    else if (!strcmp(argv[i], "--keep"))
      keep = 1;
    else if (!strcmp(argv[i], "--skip-ingest"))
      skip_ingest = 1;
    else if (!strcmp(argv[i], "--skip-search"))
      skip_search = 1;
    else {
      fprintf(stderr,
              "usage: %s [--num N] [--unflushed U] [--queries Q] [--ingest-num N] "
              "[--ingest-runs R] [--value-bytes B] [--dir D] [--keep] [--skip-ingest] "
              "[--skip-search]\n",
              argv[0]);
      return 2;
    }
  }
  if (!ingest_num) ingest_num = num;
  if (value_bytes < 16 || value_bytes > 4000 || queries < 1 || queries > MAX_QUERIES ||
      num < 1000 || runs < 1 || runs > MAX_RUNS || unflushed < 1)
    die("arguments", "value-bytes 16..4000, queries 1..100, num >= 1000, ingest-runs 1..16, "
                     "unflushed >= 1");
  char base[4096];
  if (dir) {
    snprintf(base, sizeof base, "%s", dir);
    mkdir(base, 0755);
  } else {
    snprintf(base, sizeof base, "/tmp/bfh_rdb_bench_XXXXXX");
    if (!mkdtemp(base)) die("mkdtemp", base);
  }
  bfh_options dflt;
  bfh_options_init(&dflt);
  dflt.engine = BFH_ENGINE_ROCKSDB;
  printf("# rocksdb_bench: stock RocksDB %s (C API; default options: snappy, format_version 5)\n",
         "7.8 (Debian)");
  printf("# num=%llu unflushed=%llu queries=%d (per class) ingest_num=%llu ingest_runs=%d "
         "key_bytes=16 value_bytes=%d m=%llu k=%u block_filter_bits_per_value=%u "
         "search_write_buffer=%u ingest_write_buffer=%zu dir=%s\n",
         (unsigned long long)num, (unsigned long long)unflushed, queries,
         (unsigned long long)ingest_num, runs, value_bytes,
         (unsigned long long)BFH_DEFAULT_VALUE_FILTER_BITS, bfh_internal_filter_hashes(&dflt),
         dflt.block_filter_bits_per_value, ROCKSDB_WRITE_BUFFER, dflt.memtable_bytes, base);
  fflush(stdout);
  if (!skip_search) search_mode(base, num, unflushed, queries, keep);
  if (!skip_ingest) ingest_mode(base, ingest_num, runs, keep);
  if (!keep) bench_rm_rf("rocksdb_bench", base);
  return 0;
}

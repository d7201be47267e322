/* leveldb_search_bench: value search on a database written by stock LevelDB 1.23.
 *
 * 1. Writes --num unique values with stock LevelDB (C API, default options: snappy, 4 MiB
 *    write buffer, 2 MiB tables), keys in random order.
 * 2. Ingest cost of the emulated hook: --ingest-num puts into fresh databases by (a) plain
 *    leveldb_put, (b) bfh_put with value filters (background indexing running alongside),
 *    (c) bfh_put with value filters off; plus the time for (b)'s index to catch up.
 * 3. A plain LevelDB iterator scan that compares every value (the baseline), then every
 *    bfh method on the same database, in the same run: median of --queries present and
 *    --queries absent values each.
 * 4. The cost of indexing one table of about 2 MiB: reading it and building its filter.
 * Prints a header naming every parameter, then CSV.
 *
 * --beyond measures what bfh adds beyond the paper (per-table block filters, the value index
 * over the entries of LevelDB's live logs) instead, with its own header and CSV:
 * 1. Writes --num unique values with stock LevelDB and lets its compactions end, opens the
 *    database with bfh (defaults), waits until every table is indexed, then bfh_puts
 *    --unflushed (default 25,000) more unique values that stay in LevelDB's memtable and log
 *    (the table count before and after proves it; 30,000 entries of 100-byte values would
 *    fill the 4 MiB write buffer).
 * 2. Three query classes of --queries values each: in a table, only in the memtable, absent.
 *    Every method (SCAN, LEAVES, HIERARCHY, SLICED: the paper's; AUTO: through the block
 *    filters and the log index) against the LevelDB iterator scan (run once bfh's handle is
 *    closed: LevelDB admits one handle), with their counters. A method finding a value other
 *    than the iterator does stops the bench.
 * 3. Ingest: --ingest-num bfh_puts with all value indexing on (defaults) and off, alternating,
 *    --ingest-rounds runs.
 *
 * Usage: leveldb_search_bench [--num N] [--ingest-num N] [--value-bytes B] [--queries Q]
 *                             [--ingest-rounds R] [--dir D] [--keep]
 *                             [--beyond [--unflushed U]]
 * (--ingest-runs is another name for --ingest-rounds.)
 */
#include <dirent.h>
#include <leveldb/c.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "bench/bench_util.h"
#include "bfh.h"
#include "filters/hash.h"
/* Not public (api/testbed.h): how many leaves an open built by reading tables and how
   many it loaded from the filter cache (bfh_stats counts only their sum), the build of one
   table's filter (ldb_filter_read); for --beyond a full index sync (engine_stock_sync),
   the view every search takes, and LevelDB's table list parsed (ldb_sstables_parse). */
#include "api/testbed.h"
#include "util/random.h"

static int value_bytes = 100;

static void die(const char *what, const char *msg) {
  fflush(stdout); /* what was measured before, then why it stopped */
  fprintf(stderr, "leveldb_search_bench: %s: %s\n", what, msg ? msg : "");
  exit(1);
}

/* Plain LevelDB ingest of n entries; returns ns. */
static uint64_t ingest_leveldb(const char *path, uint64_t n) {
  leveldb_options_t *o = leveldb_options_create();
  leveldb_options_set_create_if_missing(o, 1);
  char *err = NULL;
  leveldb_t *db = leveldb_open(o, path, &err);
  if (err) die(path, err);
  leveldb_writeoptions_t *wo = leveldb_writeoptions_create();
  char key[17], val[4096];
  uint64_t t0 = clock_now_ns();
  for (uint64_t i = 0; i < n; i++) {
    bench_stock_key(i, key);
    leveldb_put(db, wo, key, 16, val, bench_stock_value(i, value_bytes, val), &err);
    if (err) die("put", err);
  }
  uint64_t t = clock_now_ns() - t0;
  leveldb_writeoptions_destroy(wo);
  leveldb_close(db);
  leveldb_options_destroy(o);
  return t;
}

/* bfh_puts the entries first..first+n-1 (keys and values as ingest_leveldb writes them). */
static void put_range(bfh_db *db, uint64_t first, uint64_t n) {
  char key[17], val[4096];
  for (uint64_t i = first; i < first + n; i++) {
    bench_stock_key(i, key);
    if (bfh_put(db, key, 16, val, bench_stock_value(i, value_bytes, val)) != BFH_OK)
      die("bfh_put", bfh_last_error(db));
  }
}

static bfh_db *open_bfh(const char *path, int filters) {
  bfh_options opt;
  bfh_options_init(&opt);
  opt.engine = BFH_ENGINE_LEVELDB;
  opt.value_filters = filters;
  opt.index_bits_per_value = 0; /* the paper's layout, in which its methods are compared (the
                                   default lean layout: bfh run memory) */
  bfh_db *db;
  if (bfh_open(path, &opt, &db) != BFH_OK) die(path, bfh_last_error(NULL));
  return db;
}

/* bfh ingest of n entries; returns the put-loop ns, and in *catchup the ns until a search
   has every table indexed. */
static uint64_t ingest_bfh(const char *path, uint64_t n, int filters, uint64_t *catchup) {
  bfh_db *db = open_bfh(path, filters);
  uint64_t t0 = clock_now_ns();
  put_range(db, 0, n);
  uint64_t t = clock_now_ns() - t0;
  t0 = clock_now_ns();
  bfh_search_stats st;
  if (bfh_search(db, "absent", 6, BFH_SEARCH_HIERARCHY, NULL, NULL, &st) != BFH_OK)
    die("search", bfh_last_error(db));
  *catchup = clock_now_ns() - t0;
  bfh_close(db);
  return t;
}

/* The baseline: a LevelDB iterator over everything, comparing every value. */
static uint64_t iterator_scan(leveldb_t *db, const char *val, size_t vl, uint64_t *hits) {
  leveldb_readoptions_t *ro = leveldb_readoptions_create();
  leveldb_readoptions_set_fill_cache(ro, 0);
  uint64_t t0 = clock_now_ns();
  leveldb_iterator_t *it = leveldb_create_iterator(db, ro);
  *hits = 0;
  for (leveldb_iter_seek_to_first(it); leveldb_iter_valid(it); leveldb_iter_next(it)) {
    size_t n;
    const char *v = leveldb_iter_value(it, &n);
    if (n == vl && memcmp(v, val, vl) == 0) (*hits)++;
  }
  leveldb_iter_destroy(it);
  uint64_t t = clock_now_ns() - t0;
  leveldb_readoptions_destroy(ro);
  return t;
}

static const char *method_names[] = {"SCAN", "LEAVES", "HIERARCHY", "SLICED", "AUTO"};
#define METHODS 5 /* bfh_method SCAN..AUTO */

/* The paper's measurement (steps 1-4 at the top of this file). */
static void paper_mode(const char *base, uint64_t num, uint64_t ingest_num, int queries, int rounds,
                       int keep) {
  char path[4200], pa[4200], pb[4200], pc[4200];
  snprintf(path, sizeof path, "%s/search", base);
  snprintf(pa, sizeof pa, "%s/ingest_plain", base);
  snprintf(pb, sizeof pb, "%s/ingest_filters", base);
  snprintf(pc, sizeof pc, "%s/ingest_nofilters", base);
  bfh_options dflt;
  bfh_options_init(&dflt);
  dflt.engine = BFH_ENGINE_LEVELDB;
  dflt.index_bits_per_value = 0; /* as open_bfh: the paper's layout, k = 3 */
  printf(
      "# leveldb_search_bench: stock LevelDB 1.23 (C API, default options: snappy, 4 MiB "
      "write buffer, 2 MiB tables)\n");
  printf(
      "# num=%llu ingest_num=%llu ingest_rounds=%d key_bytes=16 value_bytes=%d queries=%d (present "
      "and absent "
      "each) m=%llu k=%u order=%u dir=%s\n",
      (unsigned long long)num, (unsigned long long)ingest_num, rounds, value_bytes, queries,
      (unsigned long long)BFH_DEFAULT_VALUE_FILTER_BITS, bfh_internal_filter_hashes(&dflt),
      dflt.order, base);
  printf(
      "# last column: search rows = iterator median / this median; ingest rows = "
      "leveldb_put time / this time (filters_on_over_filters_off: time ratio)\n");
  printf("kind,method,values,median_ms,min_ms,max_ms,tables_scanned,results,speedup_vs_iterator\n");
  fflush(stdout);

  /* 2. Ingest with and without the indexing alongside (fresh databases), interleaved rounds
     (the machine is shared: medians). */
  uint64_t tp[16], ton[16], toff[16], cb[16], cc;
  for (int round = 0; round < rounds; round++) {
    bench_rm_rf("leveldb_search_bench", pa);
    bench_rm_rf("leveldb_search_bench", pb);
    bench_rm_rf("leveldb_search_bench", pc);
    tp[round] = ingest_leveldb(pa, ingest_num);
    toff[round] = ingest_bfh(pc, ingest_num, 0, &cc);
    ton[round] = ingest_bfh(pb, ingest_num, 1, &cb[round]);
  }
  uint64_t t_plain = bench_median_u64(tp, rounds), t_on = bench_median_u64(ton, rounds),
           t_off = bench_median_u64(toff, rounds);
  uint64_t catch_b = bench_median_u64(cb, rounds);
  printf("ingest,leveldb_put,%llu,%.1f,,,,,\n", (unsigned long long)ingest_num, t_plain / 1e6);
  printf("ingest,filters_on_over_filters_off,%llu,,,,,,%.3f\n", (unsigned long long)ingest_num,
         (double)t_on / t_off);
  printf("ingest,bfh_put_filters_off,%llu,%.1f,,,,,%.3f\n", (unsigned long long)ingest_num,
         t_off / 1e6, (double)t_plain / t_off);
  printf("ingest,bfh_put_filters_on,%llu,%.1f,,,,,%.3f\n", (unsigned long long)ingest_num,
         t_on / 1e6, (double)t_plain / t_on);
  printf("ingest,index_catchup_after_last_put,%llu,%.1f,,,,,\n", (unsigned long long)ingest_num,
         catch_b / 1e6);
  fflush(stdout);
  if (!keep) {
    bench_rm_rf("leveldb_search_bench", pa);
    bench_rm_rf("leveldb_search_bench", pb);
    bench_rm_rf("leveldb_search_bench", pc);
  }

  /* 1. The search database. */
  bench_rm_rf("leveldb_search_bench", path);
  uint64_t t_load = ingest_leveldb(path, num);
  printf("load,leveldb_put,%llu,%.1f,,,,,\n", (unsigned long long)num, t_load / 1e6);
  fflush(stdout);

  /* 3a. Baseline: iterator scans. */
  rng_t r;
  rng_init(&r, 2024);
  uint64_t *present = malloc(queries * sizeof *present), *absent = malloc(queries * sizeof *absent);
  for (int q = 0; q < queries; q++) {
    present[q] = rng_below(&r, num);
    absent[q] = num + 1000 + (uint64_t)q;
  }
  leveldb_options_t *o = leveldb_options_create();
  char *err = NULL;
  leveldb_t *ldb = leveldb_open(o, path, &err);
  if (err) die(path, err);
  uint64_t it_med[2];
  char val[4096];
  for (int kind = 0; kind < 2; kind++) {
    uint64_t *ids = kind ? absent : present, t[100], hits = 0, total = 0;
    for (int q = 0; q < queries; q++) {
      t[q] = iterator_scan(ldb, val, bench_stock_value(ids[q], value_bytes, val), &hits);
      total += hits;
    }
    it_med[kind] = bench_median_u64(t, queries);
    printf("search,leveldb_iterator,%s,%.2f,%.2f,%.2f,,%llu,1.0\n", kind ? "absent" : "present",
           it_med[kind] / 1e6, t[0] / 1e6, t[queries - 1] / 1e6, (unsigned long long)total);
    fflush(stdout);
  }
  leveldb_close(ldb);
  leveldb_options_destroy(o);

  /* 3b. bfh: open (indexes every table, then from the cache), then every method. */
  uint64_t t0 = clock_now_ns();
  bfh_db *db = open_bfh(path, 1);
  uint64_t t_open = clock_now_ns() - t0;
  engine_leveldb_stats_t es;
  engine_leveldb_get_stats(bfh_internal_engine(db), &es);
  printf("open,index_all_tables,%llu,%.1f,,,%llu,,\n", (unsigned long long)num, t_open / 1e6,
         (unsigned long long)es.index.tables_read);
  bfh_close(db);
  t0 = clock_now_ns();
  db = open_bfh(path, 1);
  t_open = clock_now_ns() - t0;
  engine_leveldb_get_stats(bfh_internal_engine(db), &es);
  printf("open,from_filter_cache,%llu,%.1f,,,%llu,,\n", (unsigned long long)num, t_open / 1e6,
         (unsigned long long)es.index.tables_cached);
  fflush(stdout);
  for (int m = 0; m < METHODS; m++) {
    for (int kind = 0; kind < 2; kind++) {
      uint64_t *ids = kind ? absent : present, t[100], scanned[100], total = 0;
      for (int q = 0; q < queries; q++) {
        bfh_search_stats st;
        if (bfh_search(db, val, bench_stock_value(ids[q], value_bytes, val), (bfh_method)m, NULL,
                       NULL, &st) != BFH_OK)
          die("bfh_search", bfh_last_error(db));
        t[q] = st.elapsed_ns;
        scanned[q] = st.tables_scanned;
        total += st.results;
      }
      uint64_t med = bench_median_u64(t, queries);
      printf("search,%s,%s,%.3f,%.3f,%.3f,%llu,%llu,%.1f\n", method_names[m],
             kind ? "absent" : "present", med / 1e6, t[0] / 1e6, t[queries - 1] / 1e6,
             (unsigned long long)bench_median_u64(scanned, queries), (unsigned long long)total,
             (double)it_med[kind] / med);
      fflush(stdout);
    }
  }
  bfh_close(db);

  /* 4. Indexing one table of about 2 MiB (page cache warm): read + build its filter. */
  DIR *d = opendir(path);
  struct dirent *de;
  char best[4600] = "";
  long long best_size = 0;
  while ((de = readdir(d))) {
    if (!strstr(de->d_name, ".ldb")) continue;
    char p[4600];
    snprintf(p, sizeof p, "%s/%s", path, de->d_name);
    struct stat sb;
    if (stat(p, &sb) == 0 && sb.st_size > best_size && sb.st_size <= (3 << 20)) {
      best_size = sb.st_size;
      snprintf(best, sizeof best, "%s", p);
    }
  }
  closedir(d);
  if (best[0]) {
    uint64_t t[7], entries = 0;
    for (int q = 0; q < 7; q++) {
      value_index_params_t p = {.m = BFH_DEFAULT_VALUE_FILTER_BITS,
                                .k = bfh_internal_filter_hashes(&dflt),
                                .seed = BFH_DEFAULT_HASH_SEED};
      index_leaf_read_t out = {0};
      ldb_read_stats_t st = {0};
      err_t e;
      t0 = clock_now_ns();
      if (ldb_filter_read(env_default(), best, &p, &out, &st, &e) != BFH_OK)
        die("ldb_filter_read", e.msg);
      t[q] = clock_now_ns() - t0;
      entries = st.entries;
      value_filter_destroy(out.filter);
    }
    uint64_t med = bench_median_u64(t, 7);
    printf("index_table,read_and_build_filter,%llu,%.3f,%.3f,%.3f,1,,\n",
           (unsigned long long)entries, med / 1e6, t[0] / 1e6, t[6] / 1e6);
    printf("# indexed table: %s (%lld bytes, %llu entries)\n", best, best_size,
           (unsigned long long)entries);
  }
  free(present);
  free(absent);
}

/* ---- --beyond: block filters and the log index (AUTO) against the paper's methods ------ */

enum { PRESENT_TABLE, PRESENT_MEMTABLE, ABSENT, CLASSES };
static const char *class_names[CLASSES] = {"present_table", "present_memtable", "absent"};
#define MAX_QUERIES 100

/* One method's searches of one query class (the baseline's: ns and results only). */
typedef struct tally {
  uint64_t ns[MAX_QUERIES];
  uint64_t results[MAX_QUERIES];
  uint64_t bytes, bytes_max, blocks, block_filters, entries, tables;
  uint32_t method_used;
} tally_t;

static void tally_add(tally_t *t, int q, const bfh_search_stats *st) {
  t->ns[q] = st->elapsed_ns;
  t->results[q] = st->results;
  t->bytes += st->bytes_read;
  if (st->bytes_read > t->bytes_max) t->bytes_max = st->bytes_read;
  t->blocks += st->blocks_read;
  t->block_filters += st->block_filters_probed;
  t->entries += st->entries_scanned;
  t->tables += st->tables_scanned;
  t->method_used = st->method_used;
}

/* The value ids searched: from the --num written by LevelDB, from the --unflushed after
   them, and past both. */
static void pick_queries(uint64_t num, uint64_t unflushed, int queries,
                         uint64_t ids[CLASSES][MAX_QUERIES]) {
  rng_t r;
  rng_init(&r, 2024);
  for (int q = 0; q < queries; q++) {
    ids[PRESENT_TABLE][q] = rng_below(&r, num);
    ids[PRESENT_MEMTABLE][q] = num + rng_below(&r, unflushed);
    ids[ABSENT][q] = num + unflushed + 1000 + (uint64_t)q;
  }
}

/* Is a size compaction of LevelDB 1.23 pending or running? One starts when level 0 holds 4
   files or level L in 1..5 holds 10^L MiB (db/version_set.cc, Finalize), and its inputs stay
   listed until it ends. */
static int compaction_due(leveldb_t *db) {
  char *text = leveldb_property_value(db, "leveldb.sstables");
  ldb_sstable_t *t;
  size_t n;
  err_t e;
  if (ldb_sstables_parse(text, &t, &n, &e) != BFH_OK) die("leveldb.sstables", e.msg);
  leveldb_free(text);
  uint64_t files0 = 0, bytes[LDB_SSTABLES_LEVELS] = {0};
  for (size_t i = 0; i < n; i++) {
    files0 += t[i].level == 0;
    bytes[t[i].level] += t[i].size;
  }
  free(t);
  int due = files0 >= 4;
  double limit = 10.0 * 1048576;
  for (int level = 1; level < LDB_SSTABLES_LEVELS - 1; level++, limit *= 10)
    due |= bytes[level] >= limit;
  return due;
}

/* The database opened by stock LevelDB once its compactions are done (a search or a scan
   timed alongside one would share the machine with it). Close it with leveldb_close. */
static leveldb_t *open_settled(const char *path, leveldb_options_t *o) {
  char *err = NULL;
  leveldb_t *db = leveldb_open(o, path, &err);
  if (err) die(path, err);
  for (int polls = 0; compaction_due(db); polls++) {
    if (polls == 1200) die(path, "LevelDB still compacting after 120 s");
    usleep(100000);
  }
  return db;
}

/* Settles the database written by ingest_leveldb: the open recovers its log into a level-0
   table, and the compactions that may start run to their end. bfh's open then finds nothing
   to compact, so the tables it indexes are the ones the searches see. */
static void settle(const char *path) {
  leveldb_options_t *o = leveldb_options_create();
  leveldb_close(open_settled(path, o));
  leveldb_options_destroy(o);
}

/* Waits until every live table has its leaf and its block filter: the table list indexed and
   unchanged over 2 s of full index syncs (the engine's background thread would index a new
   table only after a second). */
static void wait_indexed(bfh_db *db, bfh_db_stats *st) {
  bfh_db_stats prev;
  memset(&prev, 0, sizeof prev);
  for (int stable = 0, polls = 0; stable < 10; polls++) {
    if (polls == 600) die("wait_indexed", "tables still changing or not indexed after 120 s");
    usleep(200000);
    err_t e;
    if (engine_stock_sync(bfh_internal_engine(db), &e) != BFH_OK) die("engine_stock_sync", e.msg);
    if (bfh_stats(db, st) != BFH_OK) die("bfh_stats", bfh_last_error(db));
    int indexed = st->leaf_filters == st->tables && st->block_filter_tables == st->tables;
    int same = st->tables == prev.tables && st->table_bytes == prev.table_bytes;
    stable = indexed && same ? stable + 1 : 0;
    prev = *st;
  }
}

/* Every method on every query; the classes and methods of query q run back to back, so that
   the machine's load drifts over all of them alike. */
static void search_all(bfh_db *db, uint64_t ids[CLASSES][MAX_QUERIES], int queries,
                       tally_t tallies[CLASSES][METHODS]) {
  char val[4096];
  for (int q = 0; q < queries; q++)
    for (int c = 0; c < CLASSES; c++) {
      size_t vl = bench_stock_value(ids[c][q], value_bytes, val);
      for (int m = 0; m < METHODS; m++) {
        bfh_search_stats st;
        if (bfh_search(db, val, vl, (bfh_method)m, NULL, NULL, &st) != BFH_OK)
          die("bfh_search", bfh_last_error(db));
        tally_add(&tallies[c][m], q, &st);
      }
    }
}

/* The baseline on the database reopened by stock LevelDB: while bfh has it open, LevelDB's
   lock keeps a second handle out, and a handle opened after bfh's has recovered the log (the
   unflushed entries) into a level-0 table. The iterator reads the same entries either way.
   Its read sampling may start compactions (LevelDB's seek compactions) under the first scans:
   the classes take turns, so that they share those alike. */
static void baseline_all(const char *path, uint64_t ids[CLASSES][MAX_QUERIES], int queries,
                         tally_t base[CLASSES]) {
  leveldb_options_t *o = leveldb_options_create();
  leveldb_t *ldb = open_settled(path, o);
  char val[4096];
  for (int q = 0; q < queries; q++)
    for (int c = 0; c < CLASSES; c++)
      base[c].ns[q] = iterator_scan(ldb, val, bench_stock_value(ids[c][q], value_bytes, val),
                                    &base[c].results[q]);
  leveldb_close(ldb);
  leveldb_options_destroy(o);
}

/* Fails loudly when the iterator finds a present value other than once or an absent one,
   or a method's result count differs from the iterator's (a false negative). */
static void check_results(uint64_t ids[CLASSES][MAX_QUERIES], int queries,
                          const tally_t base[CLASSES], const tally_t tallies[CLASSES][METHODS]) {
  char msg[256];
  for (int c = 0; c < CLASSES; c++)
    for (int q = 0; q < queries; q++) {
      uint64_t want = c == ABSENT ? 0 : 1;
      if (base[c].results[q] != want) {
        snprintf(msg, sizeof msg, "%s value %llu: the iterator found it %llu times, not %llu",
                 class_names[c], (unsigned long long)ids[c][q],
                 (unsigned long long)base[c].results[q], (unsigned long long)want);
        die("check", msg);
      }
      for (int m = 0; m < METHODS; m++)
        if (tallies[c][m].results[q] != want) {
          snprintf(msg, sizeof msg, "%s value %llu: %s found %llu keys, the iterator %llu",
                   class_names[c], (unsigned long long)ids[c][q], method_names[m],
                   (unsigned long long)tallies[c][m].results[q], (unsigned long long)want);
          die("check", msg);
        }
    }
}

static uint64_t sum(const uint64_t *v, int n) {
  uint64_t s = 0;
  for (int i = 0; i < n; i++) s += v[i];
  return s;
}

/* Median ns of taking and releasing a view (live tables pinned, new log entries read): what
   every search pays before it reads anything. */
static uint64_t view_cost(bfh_db *db, int times) {
  engine_t *e = bfh_internal_engine(db);
  uint64_t t[MAX_QUERIES];
  for (int i = 0; i < times; i++) {
    engine_view_t *v;
    err_t err;
    uint64_t t0 = clock_now_ns();
    if (e->ops->view_acquire(e, &v, &err) != BFH_OK) die("view_acquire", err.msg);
    e->ops->view_release(e, v);
    t[i] = clock_now_ns() - t0;
  }
  return bench_median_u64(t, times);
}

/* One CSV row of a query class; sorts t->ns. */
static void print_search_row(int c, const char *method, int queries, tally_t *t,
                             uint64_t baseline_ns) {
  uint64_t med = bench_median_u64(t->ns, queries);
  double n = queries;
  printf("search,%s,%s,%d,%.3f,%.1f,%.0f,%llu,%.2f,%.2f,%.0f,%.2f,%.2f,%s\n", class_names[c],
         method, queries, med / 1e6, (double)baseline_ns / med, t->bytes / n,
         (unsigned long long)t->bytes_max, t->blocks / n, t->block_filters / n, t->entries / n,
         t->tables / n, sum(t->results, queries) / n,
         t->method_used < METHODS ? method_names[t->method_used] : "");
}

/* Ingest cost of all value indexing (leaves, block filters, log index): n bfh_puts into fresh
   databases with value filters on (defaults) and off, the run's order alternating. */
static void ingest_on_off(const char *base, uint64_t n, int runs, int keep) {
  char pon[4200], poff[4200];
  snprintf(pon, sizeof pon, "%s/ingest_indexing_on", base);
  snprintf(poff, sizeof poff, "%s/ingest_indexing_off", base);
  uint64_t on[16], off[16], catchup, unused;
  for (int r = 0; r < runs; r++) {
    bench_rm_rf("leveldb_search_bench", pon);
    bench_rm_rf("leveldb_search_bench", poff);
    if (r % 2) off[r] = ingest_bfh(poff, n, 0, &unused);
    on[r] = ingest_bfh(pon, n, 1, &catchup);
    if (r % 2 == 0) off[r] = ingest_bfh(poff, n, 0, &unused);
    printf("ingest,run%d,indexing_off,%llu,%.1f,,,,,,,,,\n", r + 1, (unsigned long long)n,
           off[r] / 1e6);
    printf("ingest,run%d,indexing_on,%llu,%.1f,%.3f,,,,,,,,\n", r + 1, (unsigned long long)n,
           on[r] / 1e6, (double)on[r] / off[r]);
    printf("ingest,run%d,index_catchup_after_last_put,%llu,%.1f,,,,,,,,,\n", r + 1,
           (unsigned long long)n, catchup / 1e6);
    fflush(stdout);
  }
  printf("ingest,median,on_over_off,%llu,,%.3f,,,,,,,,\n", (unsigned long long)n,
         bench_median_ratio(on, off, runs));
  if (!keep) {
    bench_rm_rf("leveldb_search_bench", pon);
    bench_rm_rf("leveldb_search_bench", poff);
  }
}

/* What bfh adds beyond the paper (steps 1-3 of --beyond at the top of this file). */
static void beyond_mode(const char *base, uint64_t num, uint64_t unflushed, uint64_t ingest_num,
                        int queries, int runs, int keep) {
  bfh_options dflt;
  bfh_options_init(&dflt);
  dflt.engine = BFH_ENGINE_LEVELDB;
  dflt.index_bits_per_value = 0; /* as open_bfh: the paper's layout, k = 3 */
  printf(
      "# leveldb_search_bench --beyond: stock LevelDB 1.23 (C API, default options: snappy, 4 "
      "MiB write buffer, 2 MiB tables) opened by bfh with its defaults but the paper's layout "
      "(index_bits_per_value 0)\n");
  printf(
      "# num=%llu unflushed=%llu queries=%d (per class) ingest_num=%llu ingest_runs=%d "
      "key_bytes=16 value_bytes=%d m=%llu k=%u order=%u block_filter_bits_per_value=%u "
      "memtable_index=%d "
      "dir=%s\n",
      (unsigned long long)num, (unsigned long long)unflushed, queries,
      (unsigned long long)ingest_num, runs, value_bytes,
      (unsigned long long)BFH_DEFAULT_VALUE_FILTER_BITS, bfh_internal_filter_hashes(&dflt),
      dflt.order, dflt.block_filter_bits_per_value, dflt.memtable_index, base);
  fflush(stdout);
  char path[4200];
  snprintf(path, sizeof path, "%s/beyond", base);
  bench_rm_rf("leveldb_search_bench", path);
  uint64_t t_load = ingest_leveldb(path, num);
  settle(path);

  bfh_db *db = open_bfh(path, 1);
  bfh_db_stats before, after;
  wait_indexed(db, &before);
  put_range(db, num, unflushed);
  if (bfh_stats(db, &after) != BFH_OK) die("bfh_stats", bfh_last_error(db));
  printf(
      "# tables: %llu before the unflushed puts (%llu indexed, %llu with a block filter), "
      "%llu after\n",
      (unsigned long long)before.tables, (unsigned long long)before.leaf_filters,
      (unsigned long long)before.block_filter_tables, (unsigned long long)after.tables);
  if (after.tables != before.tables)
    die("unflushed puts",
        "LevelDB wrote a table: lower --unflushed to fit its 4 MiB write buffer (about 145 bytes "
        "an entry of 100-byte values)");

  static uint64_t ids[CLASSES][MAX_QUERIES];
  static tally_t tallies[CLASSES][METHODS], base_tally[CLASSES];
  pick_queries(num, unflushed, queries, ids);
  search_all(db, ids, queries, tallies);
  uint64_t view_ns = view_cost(db, queries);
  engine_leveldb_stats_t es;
  engine_leveldb_get_stats(bfh_internal_engine(db), &es);
  if (bfh_stats(db, &after) != BFH_OK) die("bfh_stats", bfh_last_error(db));
  printf("# after the searches: %llu tables, %llu indexed; %llu log bytes read by the engine\n",
         (unsigned long long)after.tables, (unsigned long long)after.leaf_filters,
         (unsigned long long)es.log_bytes);
  if (after.tables != before.tables)
    printf(
        "# WARNING: LevelDB compacted during the searches: tables not indexed yet were read "
        "whole\n");
  bfh_close(db);
  baseline_all(path, ids, queries, base_tally);
  check_results(ids, queries, base_tally, tallies);

  printf(
      "# ratio: search rows = iterator median / this median; ingest rows = put time with value "
      "indexing on / off. Means are per search; method_used: what ran (AUTO's choice)\n");
  printf(
      "kind,class,method,n,median_ms,ratio,bytes_read_mean,bytes_read_max,blocks_read_mean,"
      "block_filters_probed_mean,entries_scanned_mean,tables_scanned_mean,results_mean,"
      "method_used\n");
  printf("load,,leveldb_put,%llu,%.1f,,,,,,,,,\n", (unsigned long long)num, t_load / 1e6);
  printf("overhead,,view_acquire_release,%d,%.3f,,,,,,,,,\n", queries, view_ns / 1e6);
  for (int c = 0; c < CLASSES; c++) {
    uint64_t base_ns = bench_median_u64(base_tally[c].ns, queries);
    printf("search,%s,leveldb_iterator,%d,%.3f,1.0,,,,,,,%.2f,\n", class_names[c], queries,
           base_ns / 1e6, (double)sum(base_tally[c].results, queries) / queries);
    for (int m = 0; m < METHODS; m++)
      print_search_row(c, method_names[m], queries, &tallies[c][m], base_ns);
  }
  fflush(stdout);
  if (!keep) bench_rm_rf("leveldb_search_bench", path);
  ingest_on_off(base, ingest_num, runs, keep);
}

int main(int argc, char **argv) {
  uint64_t num = 1000000, ingest_num = 0, unflushed = 25000;
  int queries = 0, keep = 0, rounds = 3, beyond = 0;
  const char *dir = NULL;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--num") && i + 1 < argc)
      num = strtoull(argv[++i], NULL, 10);
    else if (!strcmp(argv[i], "--ingest-num") && i + 1 < argc)
      ingest_num = strtoull(argv[++i], NULL, 10);
    else if (!strcmp(argv[i], "--value-bytes") && i + 1 < argc)
      value_bytes = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--queries") && i + 1 < argc)
      queries = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--dir") && i + 1 < argc)
      dir = argv[++i];
    else if ((!strcmp(argv[i], "--ingest-rounds") || !strcmp(argv[i], "--ingest-runs")) &&
             i + 1 < argc)
      rounds = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--keep"))
      keep = 1;
    else if (!strcmp(argv[i], "--beyond"))
      beyond = 1;
    else if (!strcmp(argv[i], "--unflushed") && i + 1 < argc)
      unflushed = strtoull(argv[++i], NULL, 10);
    else {
      fprintf(stderr,
              "usage: %s [--num N] [--ingest-num N] [--value-bytes B] [--queries Q] "
              "[--ingest-rounds R] [--dir D] [--keep] [--beyond [--unflushed U]]\n",
              argv[0]);
      return 2;
    }
  }
  if (!queries) queries = beyond ? 25 : 3;
  if (value_bytes < 16 || value_bytes > 4000 || queries < 1 || queries > MAX_QUERIES ||
      num < 1000 || rounds < 1 || rounds > 16 || unflushed < 1)
    die("arguments",
        "value-bytes 16..4000, queries 1..100, num >= 1000, ingest-rounds 1..16, unflushed >= 1");
  if (!ingest_num) ingest_num = num < 1000000 ? num : 1000000;
  char base[4096];
  if (dir) {
    snprintf(base, sizeof base, "%s", dir);
    mkdir(base, 0755);
  } else {
    snprintf(base, sizeof base, "/tmp/bfh_ldb_bench_XXXXXX");
    if (!mkdtemp(base)) die("mkdtemp", base);
  }
  if (beyond)
    beyond_mode(base, num, unflushed, ingest_num, queries, rounds, keep);
  else
    paper_mode(base, num, ingest_num, queries, rounds, keep);
  if (!keep) bench_rm_rf("leveldb_search_bench", base);
  return 0;
}

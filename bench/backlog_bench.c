/* backlog_bench: what a search costs on a read-write engine while it works off a burst of
 * writes (doc/experiments.md, "The stock engines at 10M").
 *
 * bfh indexes a stock LevelDB or RocksDB table by reading it after the library installs it,
 * and a search reads whole every live table not indexed yet. This bench shows when that
 * happens. It loads --num entries (key i, value i mod --values), flushes, and lets the engine
 * settle for --settle seconds. Then it runs --searches AUTO searches of random values; this
 * is phase "settled". Next come --updates random overwrites with new values, then the same
 * number of searches at once ("after_updates"), and again after --settle seconds ("later").
 * Per phase it prints one CSV row: the searches' bytes read (mean and max), how many read
 * more than 1 MiB, their p50 and p99 time, and the live tables, beside the commit given.
 * Every search's result count is checked against the values written. With --trace, every
 * search is also printed to stderr: phase, its index, when it started (ms into the phase),
 * its bytes read, tables read and time.
 *
 * Usage: backlog_bench [--engine lsm|leveldb|rocksdb] [--num N] [--values V] [--updates U]
 *                      [--searches S] [--settle SECONDS] [--dir PATH] [--commit C] [--trace]
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bench/bench_util.h"
#include "bfh.h"

#define MAX_SEARCHES 10000

typedef struct cfg {
  bfh_engine engine;
  uint64_t num, values, updates;
  int searches, settle;
  const char *dir, *commit;
  int trace;
} cfg_t;

static void die(const char *what, bfh_db *db) {
  fprintf(stderr, "backlog_bench: %s: %s\n", what, bfh_last_error(db));
  exit(1);
}

static size_t key_of(uint64_t i, char *buf) {
  return (size_t)snprintf(buf, 32, "key%012" PRIu64, i);
}

static size_t value_of(uint64_t v, char *buf) {
  return (size_t)snprintf(buf, 32, "value-%010" PRIu64, v);
}

/* count[v]: the live keys holding value v. */
static void phase(const cfg_t *c, bfh_db *db, const char *name, const uint32_t *count,
                  rng_t *r) {
  static uint64_t ns[MAX_SEARCHES];
  uint64_t bytes_sum = 0, bytes_max = 0;
  int big = 0;
  const uint64_t t0 = clock_now_ns();
  for (int q = 0; q < c->searches; q++) {
    const uint64_t at = clock_now_ns() - t0;
    uint64_t v = rng_below(r, c->values);
    char val[32];
    size_t vl = value_of(v, val);
    bfh_search_stats st;
    if (bfh_search(db, val, vl, BFH_SEARCH_AUTO, NULL, NULL, &st) != BFH_OK)
      die("bfh_search", db);
    if (st.results != count[v]) {
      fprintf(stderr, "backlog_bench: %s: %" PRIu64 " results, %u keys hold it\n", val,
              (uint64_t)st.results, count[v]);
      exit(1);
    }
    ns[q] = st.elapsed_ns;
    if (c->trace)
      fprintf(stderr, "%s,%d,%.1f,%" PRIu64 ",%" PRIu64 ",%.1f\n", name, q, at / 1e6,
              (uint64_t)st.bytes_read, (uint64_t)st.tables_scanned, st.elapsed_ns / 1e3);
    bytes_sum += st.bytes_read;
    if (st.bytes_read > bytes_max) bytes_max = st.bytes_read;
    big += st.bytes_read > (1u << 20);
  }
  qsort(ns, (size_t)c->searches, sizeof ns[0], bench_cmp_u64);
  bfh_db_stats ds;
  if (bfh_stats(db, &ds) != BFH_OK) die("bfh_stats", db);
  printf("%s,%s,%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%s,%d,%.0f,%" PRIu64 ",%d,%.1f,%.1f,%" PRIu64
         "\n",
         c->commit, bfh_engine_name(c->engine), c->num, c->values, c->updates, name,
         c->searches, (double)bytes_sum / c->searches, bytes_max, big,
         ns[c->searches / 2] / 1e3, ns[(c->searches * 99) / 100] / 1e3, (uint64_t)ds.tables);
  fflush(stdout);
}

int main(int argc, char **argv) {
  cfg_t c = {BFH_ENGINE_LEVELDB, 1000000, 10000, 300000, 200, 20, NULL, "-", 0};
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!strcmp(a, "--engine") && v && bfh_engine_find(v)) c.engine = bfh_engine_find(v)->engine;
    else if (!strcmp(a, "--num") && v) c.num = strtoull(v, NULL, 10);
    else if (!strcmp(a, "--values") && v) c.values = strtoull(v, NULL, 10);
    else if (!strcmp(a, "--updates") && v) c.updates = strtoull(v, NULL, 10);
    else if (!strcmp(a, "--searches") && v) c.searches = atoi(v);
    else if (!strcmp(a, "--settle") && v) c.settle = atoi(v);
    else if (!strcmp(a, "--dir") && v) c.dir = v;
    else if (!strcmp(a, "--commit") && v) c.commit = v;
    else if (!strcmp(a, "--trace")) {
      c.trace = 1;
      continue;
    } else {
      fprintf(stderr,
              "usage: %s [--engine lsm|leveldb|rocksdb] [--num N] [--values V] [--updates U] "
              "[--searches S] [--settle SECONDS] [--dir PATH] [--commit C] [--trace]\n",
              argv[0]);
      return 2;
    }
    i++;
  }
  if (c.num < 1000 || c.values < 1 || c.values > c.num || c.values > UINT32_MAX ||
      c.searches < 1 || c.searches > MAX_SEARCHES || c.settle < 0) {
    fprintf(stderr, "backlog_bench: num >= 1000, values 1..num, searches 1..%d, settle >= 0\n",
            MAX_SEARCHES);
    return 2;
  }
  char dir[4096];
  if (c.dir) {
    snprintf(dir, sizeof dir, "%s", c.dir);
    bench_rm_rf("backlog_bench", dir);
  } else {
    snprintf(dir, sizeof dir, "/tmp/bfh_backlog_bench_XXXXXX");
    if (!mkdtemp(dir)) {
      perror("mkdtemp");
      return 1;
    }
    rmdir(dir);
  }
  bfh_options o;
  bfh_options_init(&o);
  o.engine = c.engine;
  bfh_db *db;
  if (bfh_open(dir, &o, &db) != BFH_OK) die("bfh_open", NULL);
  uint32_t *count = calloc(c.values, sizeof *count);
  uint64_t *holds = malloc(c.num * sizeof *holds);
  if (!count || !holds) die("out of memory", NULL);
  char key[32], val[32];
  for (uint64_t i = 0; i < c.num; i++) {
    holds[i] = i % c.values;
    count[holds[i]]++;
    if (bfh_put(db, key, key_of(i, key), val, value_of(holds[i], val)) != BFH_OK)
      die("bfh_put", db);
  }
  if (bfh_flush(db) != BFH_OK) die("bfh_flush", db);
  sleep((unsigned)c.settle);
  printf("commit,engine,num,values,updates,phase,searches,bytes_read_mean,bytes_read_max,"
         "searches_over_1MiB,p50_us,p99_us,tables\n");
  rng_t r;
  rng_init(&r, 2026);
  phase(&c, db, "settled", count, &r);
  for (uint64_t u = 0; u < c.updates; u++) {
    uint64_t i = rng_below(&r, c.num), v = rng_below(&r, c.values);
    if (bfh_put(db, key, key_of(i, key), val, value_of(v, val)) != BFH_OK) die("bfh_put", db);
    count[holds[i]]--;
    count[v]++;
    holds[i] = v;
  }
  phase(&c, db, "after_updates", count, &r);
  sleep((unsigned)c.settle);
  phase(&c, db, "later", count, &r);
  if (bfh_close(db) != BFH_OK) die("bfh_close", NULL);
  bench_rm_rf("backlog_bench", dir);
  free(count);
  free(holds);
  return 0;
}

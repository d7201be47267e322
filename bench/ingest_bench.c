/* ingest_bench: what value filters cost the own engine's writes, against the same engine
 * without them, in one process, rounds alternating so that the machine's drift falls on
 * every configuration alike.
 *
 * Configurations (--configs, comma-separated):
 *   bare    value filters off: nothing hashed, no memtable value index, tables without
 *           filters (the rival);
 *   value   value filters on, the whole value only (bfh's defaults: lean layout, block
 *           filters and value-to-block maps, the memtable value index);
 *   attrs   value filters on with `bfh run ycsb`'s synthetic attributes: the whole value and
 *           `n=bytes:1:15:int:range` (the value's number, and its range items).
 * Each round loads a fresh database with --num puts, in random key order (--order random, a
 * fixed permutation: every flush overlaps the tables below it, so compactions run all along)
 * or in key order (--order seq: tables move down untouched, as `bfh run ycsb` loads), then
 * flushes and waits for the background work to end (load time: puts to the end of that
 * wait); then --updates overwrites of uniformly random keys with new values, each timed (its
 * mean, p50 and p99 from a histogram of all of them), and the wait for the background work
 * to end (update time: first update to the end of that wait). Values are `bfh run ycsb`'s
 * synthetic ones, "v" and 15 digits, 100 records per value.
 *
 * Output: a header (# lines) naming every parameter, then CSV
 *   commit,config,round,phase,ops,us_per_op,mean_us,p50_us,p99_us
 * (us_per_op: the phase's time, waits included, per operation; mean/p50/p99: of the update
 * calls themselves), then a summary: per configuration and phase the median us_per_op and
 * the median over rounds of its ratio to bare's in the same round.
 *
 * Usage: ingest_bench [--num N] [--updates U] [--rounds R] [--configs LIST]
 *                     [--order random|seq] [--dir PATH] [--commit C]
 * Example: ingest_bench --num 3000000 --updates 1000000 --rounds 5
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "api/testbed.h" /* the engine behind the handle, to wait for its background work */
#include "bench/bench_util.h"
#include "bfh.h"
#include "lsm_hooks/engines/lsm/engine_lsm.h"
#include "util/histogram.h"

#define MAX_ROUNDS 64
#define RECORDS_PER_VALUE 100

enum { C_BARE, C_VALUE, C_ATTRS, C_COUNT };
static const char *const CONFIG_NAMES[C_COUNT] = {"bare", "value", "attrs"};
enum { P_LOAD, P_UPDATE, P_COUNT };
static const char *const PHASE_NAMES[P_COUNT] = {"load", "update"};

typedef struct params {
  uint64_t num, updates;
  int rounds, random_order;
  int configs[C_COUNT];
  const char *dir, *commit;
} params_t;

static void die(const char *what, bfh_db *db) {
  fprintf(stderr, "ingest_bench: %s: %s\n", what, bfh_last_error(db));
  exit(1);
}

static size_t key_of(uint64_t i, char *buf) {
  return (size_t)snprintf(buf, 32, "user%012" PRIu64, i);
}

static size_t value_of(uint64_t v, char *buf) {
  return (size_t)snprintf(buf, 32, "v%015" PRIu64, v);
}

/* Waits until the engine has no flush or compaction left. */
static void quiesce(bfh_db *db) {
  err_t err;
  err_clear(&err);
  if (engine_lsm_wait_idle(bfh_internal_engine(db), &err) != BFH_OK) {
    fprintf(stderr, "ingest_bench: waiting for background work: %s\n", err.msg);
    exit(1);
  }
}

static bfh_db *open_config(int c, const char *dir) {
  static const bfh_attribute ATTRS[2] = {{"value", "value"}, {"n", "bytes:1:15:int:range"}};
  bfh_options o;
  bfh_options_init(&o);
  o.create_if_missing = 1;
  o.value_filters = c != C_BARE;
  if (c == C_ATTRS) {
    o.attributes = ATTRS;
    o.attribute_count = 2;
  }
  bench_rm_rf("ingest_bench", dir);
  bfh_db *db = NULL;
  if (bfh_open(dir, &o, &db) != BFH_OK) die("open", NULL);
  return db;
}

typedef struct result {
  double us_per_op, mean_us, p50_us, p99_us;
} result_t;

/* One round of configuration c: the load, then the updates. */
static void run(const params_t *p, int c, int round, result_t out[P_COUNT]) {
  char dir[4096];
  snprintf(dir, sizeof dir, "%s/%s", p->dir, CONFIG_NAMES[c]);
  bfh_db *db = open_config(c, dir);
  char key[32], val[32];
  /* A multiplier prime to num permutes the keys: every round and configuration alike. */
  uint64_t a = p->random_order ? 0x9e3779b97f4a7c15ull % p->num : 1;
  while (a == 0 || bench_gcd(a, p->num) != 1) a++;
  double t0 = bench_now_us();
  for (uint64_t i = 0; i < p->num; i++) {
    uint64_t k = (uint64_t)(((unsigned __int128)i * a) % p->num);
    if (bfh_put(db, key, key_of(k, key), val, value_of(k / RECORDS_PER_VALUE, val)) != BFH_OK)
      die("put", db);
  }
  if (bfh_flush(db) != BFH_OK) die("flush", db);
  quiesce(db);
  out[P_LOAD] = (result_t){(bench_now_us() - t0) / (double)p->num, 0, 0, 0};
  static histogram_t h;
  histogram_init(&h);
  rng_t r;
  rng_init(&r, 0x75706461ull + (uint64_t)round);
  uint64_t values = (p->num + RECORDS_PER_VALUE - 1) / RECORDS_PER_VALUE;
  t0 = bench_now_us();
  for (uint64_t i = 0; i < p->updates; i++) {
    size_t kl = key_of(rng_below(&r, p->num), key), vl = value_of(rng_below(&r, values), val);
    uint64_t s = clock_now_ns();
    if (bfh_put(db, key, kl, val, vl) != BFH_OK) die("update", db);
    histogram_record(&h, clock_now_ns() - s);
  }
  quiesce(db);
  out[P_UPDATE] = (result_t){(bench_now_us() - t0) / (double)p->updates, histogram_mean(&h) / 1e3,
                             (double)histogram_quantile(&h, 0.5) / 1e3,
                             (double)histogram_quantile(&h, 0.99) / 1e3};
  if (bfh_close(db) != BFH_OK) die("close", NULL);
  bench_rm_rf("ingest_bench", dir);
}

static int parse_configs(const char *s, int *on) {
  memset(on, 0, C_COUNT * sizeof *on);
  char buf[256];
  snprintf(buf, sizeof buf, "%s", s);
  for (char *t = strtok(buf, ","); t; t = strtok(NULL, ",")) {
    int c = 0;
    while (c < C_COUNT && strcmp(t, CONFIG_NAMES[c]) != 0) c++;
    if (c == C_COUNT) return -1;
    on[c] = 1;
  }
  return 0;
}

static void usage(void) {
  fprintf(stderr,
          "usage: ingest_bench [--num N] [--updates U] [--rounds R] [--configs bare,value,attrs]\n"
          "                    [--order random|seq] [--dir PATH] [--commit C]\n");
  exit(2);
}

int main(int argc, char **argv) {
  params_t p = {3000000, 1000000, 5, 1, {1, 1, 1}, "/tmp/ingest_bench", "unknown"};
  for (int i = 1; i < argc; i++) {
    const char *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!v) usage();
    if (strcmp(argv[i], "--num") == 0)
      p.num = strtoull(v, NULL, 10);
    else if (strcmp(argv[i], "--updates") == 0)
      p.updates = strtoull(v, NULL, 10);
    else if (strcmp(argv[i], "--rounds") == 0)
      p.rounds = atoi(v);
    else if (strcmp(argv[i], "--configs") == 0) {
      if (parse_configs(v, p.configs) != 0) usage();
    } else if (strcmp(argv[i], "--order") == 0) {
      if (strcmp(v, "random") != 0 && strcmp(v, "seq") != 0) usage();
      p.random_order = strcmp(v, "random") == 0;
    } else if (strcmp(argv[i], "--dir") == 0)
      p.dir = v;
    else if (strcmp(argv[i], "--commit") == 0)
      p.commit = v;
    else
      usage();
    i++;
  }
  if (p.num < 1 || p.updates < 1 || p.rounds < 1 || p.rounds > MAX_ROUNDS || !p.configs[C_BARE])
    usage(); /* bare is every ratio's rival */
  if (mkdir(p.dir, 0755) != 0 && access(p.dir, F_OK) != 0) {
    fprintf(stderr, "ingest_bench: cannot create %s\n", p.dir);
    return 1;
  }
  printf("# ingest_bench: num=%" PRIu64 " updates=%" PRIu64 " rounds=%d order=%s dir=%s\n",
         p.num, p.updates, p.rounds, p.random_order ? "random" : "seq", p.dir);
  printf("commit,config,round,phase,ops,us_per_op,mean_us,p50_us,p99_us\n");
  static result_t res[C_COUNT][MAX_ROUNDS][P_COUNT];
  for (int round = 0; round < p.rounds; round++) {
    /* Each round starts with the next configuration, so none always runs first. */
    for (int j = 0; j < C_COUNT; j++) {
      int c = (round + j) % C_COUNT;
      if (!p.configs[c]) continue;
      run(&p, c, round, res[c][round]);
      for (int ph = 0; ph < P_COUNT; ph++) {
        const result_t *x = &res[c][round][ph];
        printf("%s,%s,%d,%s,%" PRIu64 ",%.4f,%.4f,%.4f,%.4f\n", p.commit, CONFIG_NAMES[c], round,
               PHASE_NAMES[ph], ph == P_LOAD ? p.num : p.updates, x->us_per_op, x->mean_us,
               x->p50_us, x->p99_us);
      }
      fflush(stdout);
    }
  }
  printf("# summary: median us_per_op over %d rounds; ratio: median of (config / bare) per round\n",
         p.rounds);
  for (int c = 0; c < C_COUNT; c++) {
    if (!p.configs[c]) continue;
    for (int ph = 0; ph < P_COUNT; ph++) {
      double t[MAX_ROUNDS], ratio[MAX_ROUNDS];
      for (int r = 0; r < p.rounds; r++) {
        t[r] = res[c][r][ph].us_per_op;
        ratio[r] = t[r] / res[C_BARE][r][ph].us_per_op;
      }
      printf("# %-6s %-6s %8.3f us/op  %6.3fx bare\n", CONFIG_NAMES[c], PHASE_NAMES[ph],
             bench_median_double(t, (size_t)p.rounds),
             bench_median_double(ratio, (size_t)p.rounds));
    }
  }
  return 0;
}

/* read_ahead_bench: what AUTO's read ahead (doc/search.md "Reading ahead") saves a search by
 * value, on one database and in one process: the same kind of searches made with the engine's
 * read ahead and without it, in turn, so that both sides meet the same machine and the same
 * files in the page cache.
 *
 * Usage: read_ahead_bench --dir D [--engine lsm|leveldb|rocksdb] [--num N] [--queries Q]
 *                         [--rounds R] [--commit C]
 * 1. With D missing, writes N records (default 1M) to a new database there on the engine
 *    (default lsm; bfh's defaults otherwise): key i ("k" and 12 digits, i in a seeded random
 *    order), value i % (N / 100) ("v" and 15 digits), so that each value is held by about 100
 *    keys spread over the tables, as in `bfh run ycsb`'s synthetic source; then waits until
 *    every table is indexed. With D present, opens the database there (--engine must name its
 *    engine, --num its record count) and searches it as it is: its values must be of that form.
 * 2. Reads every table's file once (a warm database: what the searches read comes from the
 *    page cache).
 * 3. Q values searched once, untimed (what a first search loads, loaded). Then R rounds
 *    (default 7): in each, Q (default 200) values drawn at random are searched by
 *    AUTO with the read ahead, Q others without it (the engine's engine_ops_t.read_ahead taken
 *    away: each piece then read by the call that needs it), the side that goes first swapped
 *    every round; the side's time is the median of its Q searches. A value searched is not
 *    searched again in the run, so that neither side finds the other's blocks in the cache.
 * Prints '#' lines naming every parameter, then CSV:
 *   commit,engine,records,queries,rounds,ahead_us,plain_us,plain_over_ahead
 * with ahead_us and plain_us the medians of the rounds' times.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "bench/bench_util.h"
#include "bfh.h"
/* Not public (api/testbed.h): the engine behind the handle, whose ops the plain side swaps
   for a copy without read_ahead, and the waits for its indexing. */
#include "api/testbed.h"
#include "lsm_hooks/engines/lsm/engine_lsm.h"
#include "lsm_hooks/engines/stock/stock_rw.h"
#include "workloads/workload.h"

#define SEED 0x7261686561646265ull /* "raheadbe" */

static void die(const char *what, bfh_db *db) {
  fprintf(stderr, "read_ahead_bench: %s: %s\n", what, bfh_last_error(db));
  exit(1);
}

static int count_key(void *arg, const void *key, size_t len) {
  (void)key, (void)len;
  (*(uint64_t *)arg)++;
  return 0;
}

/* Writes n records to a new database at dir (see above) and waits for its indexing. */
static void load(const char *dir, bfh_engine engine, uint64_t n) {
  bfh_options o;
  bfh_options_init(&o);
  o.engine = engine;
  o.create_if_missing = 1;
  bfh_db *db;
  if (bfh_open(dir, &o, &db) != BFH_OK) die(dir, NULL);
  uint64_t domain = n / 100 ? n / 100 : 1;
  workload_perm_t perm;
  workload_perm_init(&perm, n, SEED);
  for (uint64_t i = 0; i < n; i++) {
    char k[32], v[32];
    uint64_t r = workload_perm_apply(&perm, i);
    int kl = snprintf(k, sizeof k, "k%012llu", (unsigned long long)r);
    int vl = snprintf(v, sizeof v, "v%015llu", (unsigned long long)(r % domain));
    if (bfh_put(db, k, (size_t)kl, v, (size_t)vl) != BFH_OK) die("put", db);
  }
  if (bfh_flush(db) != BFH_OK) die("flush", db);
  err_t err;
  engine_t *e = bfh_internal_engine(db);
  int rc = engine == BFH_ENGINE_LSM ? engine_lsm_wait_idle(e, &err) : engine_stock_sync(e, &err);
  if (rc != BFH_OK) {
    fprintf(stderr, "read_ahead_bench: settle: %s\n", err.msg);
    exit(1);
  }
  if (bfh_close(db) != BFH_OK) die("close", NULL);
}

/* The median time of searching values vals[0, q) by AUTO. */
static double side(bfh_db *db, const uint64_t *vals, size_t q, double *t) {
  for (size_t i = 0; i < q; i++) {
    char v[32];
    int vl = snprintf(v, sizeof v, "v%015llu", (unsigned long long)vals[i]);
    uint64_t keys = 0;
    double t0 = bench_now_us();
    if (bfh_search(db, v, (size_t)vl, BFH_SEARCH_AUTO, count_key, &keys, NULL) != BFH_OK)
      die("search", db);
    t[i] = bench_now_us() - t0;
    if (keys == 0) die("a value searched has no key: not a database of this bench's form", NULL);
  }
  return bench_median_double(t, q);
}

int main(int argc, char **argv) {
  const char *dir = NULL, *commit = "unknown", *engine_name = "lsm";
  uint64_t n = 1000000;
  size_t q = 200, rounds = 7;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!strcmp(a, "--dir") && v)
      dir = v;
    else if (!strcmp(a, "--engine") && v)
      engine_name = v;
    else if (!strcmp(a, "--num") && v)
      n = strtoull(v, NULL, 10);
    else if (!strcmp(a, "--queries") && v)
      q = strtoull(v, NULL, 10);
    else if (!strcmp(a, "--rounds") && v)
      rounds = strtoull(v, NULL, 10);
    else if (!strcmp(a, "--commit") && v)
      commit = v;
    else {
      fprintf(stderr, "usage: read_ahead_bench --dir D [--engine lsm|leveldb|rocksdb] [--num N] "
                      "[--queries Q] [--rounds R] [--commit C]\n");
      return 2;
    }
    i++;
  }
  bfh_engine engine = !strcmp(engine_name, "leveldb")   ? BFH_ENGINE_LEVELDB
                      : !strcmp(engine_name, "rocksdb") ? BFH_ENGINE_ROCKSDB
                                                        : BFH_ENGINE_LSM;
  if (!dir || n < 100 || q == 0 || rounds == 0 || strcmp(engine_name, bfh_engine_name(engine))) {
    fprintf(stderr, "read_ahead_bench: --dir is needed; N at least 100, Q and R positive, "
                    "the engine lsm, leveldb or rocksdb\n");
    return 2;
  }
  struct stat sb;
  if (stat(dir, &sb) != 0) load(dir, engine, n);

  bfh_options o;
  bfh_options_init(&o);
  o.engine = engine;
  bfh_db *db;
  if (bfh_open(dir, &o, &db) != BFH_OK) die(dir, NULL);
  bfh_db_stats st;
  if (bfh_stats(db, &st) != BFH_OK) die("stats", db);
  uint64_t domain = n / 100 ? n / 100 : 1;
  if (domain < (2 * rounds + 1) * q) {
    fprintf(stderr, "read_ahead_bench: %llu values, fewer than the %zu searched\n",
            (unsigned long long)domain, (2 * rounds + 1) * q);
    return 2;
  }
  /* A warm database: every file read once (the searches' reads then come from the page
     cache, for both sides alike). */
  char cmd[4400];
  snprintf(cmd, sizeof cmd, "find '%s' -type f -exec cat {} + > /dev/null", dir);
  if (system(cmd) != 0) fprintf(stderr, "read_ahead_bench: could not read %s ahead\n", dir);

  engine_t *e = bfh_internal_engine(db);
  const engine_ops_t *with = e->ops;
  engine_ops_t without = *with;
  without.read_ahead = NULL;
  workload_perm_t perm;
  workload_perm_init(&perm, domain, SEED ^ 1);
  uint64_t nvals = (2 * rounds + 1) * q; /* the last q: a warm-up, not timed */
  uint64_t *vals = malloc(nvals * sizeof *vals);
  double *t = malloc(q * sizeof *t), *ahead = malloc(rounds * sizeof *ahead),
         *plain = malloc(rounds * sizeof *plain);
  if (!vals || !t || !ahead || !plain) return 1;
  for (size_t i = 0; i < nvals; i++) vals[i] = workload_perm_apply(&perm, i);
  printf("# read_ahead_bench: engine %s, %llu records, %llu values, dir %s, %zu queries a side, "
         "%zu rounds, seed 0x%llx\n",
         engine_name, (unsigned long long)n, (unsigned long long)domain, dir, q, rounds,
         (unsigned long long)SEED);
  printf("# %llu tables\n", (unsigned long long)st.tables);
  (void)side(db, vals + 2 * q * rounds, q, t); /* what a first search loads, loaded */
  for (size_t r = 0; r < rounds; r++) {
    const uint64_t *va = vals + 2 * q * r, *vp = va + q;
    for (int k = 0; k < 2; k++) {
      int ahead_side = (k == 0) == (r % 2 == 0);
      e->ops = ahead_side ? with : &without;
      double m = side(db, ahead_side ? va : vp, q, t);
      if (ahead_side)
        ahead[r] = m;
      else
        plain[r] = m;
    }
    e->ops = with;
    fprintf(stderr, "round %zu: ahead %.1f us, plain %.1f us\n", r, ahead[r], plain[r]);
  }
  double a = bench_median_double(ahead, rounds), p = bench_median_double(plain, rounds);
  printf("commit,engine,records,queries,rounds,ahead_us,plain_us,plain_over_ahead\n");
  printf("%s,%s,%llu,%zu,%zu,%.1f,%.1f,%.3f\n", commit, engine_name, (unsigned long long)n, q,
         rounds, a, p, p / a);
  if (bfh_close(db) != BFH_OK) die("close", NULL);
  free(vals);
  free(t);
  free(ahead);
  free(plain);
  return 0;
}

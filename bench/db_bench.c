/* db_bench: bfh's own LSM engine (lsm/db.h) against stock LevelDB (C API) on the key path,
 * same workloads, same process, fresh temp directories.
 *
 * Workloads (LevelDB db_bench's names):
 *   fillseq      num puts in key order into a fresh database
 *   fillrandom   num puts in random order (every key once) into a fresh database
 *   readrandom   num gets of random present keys (on the fillrandom database)
 *   readmissing  num gets of absent keys that fall between present ones
 *   readseq      one pass of an iterator over the whole database
 * Keys are key_size bytes: key_size - 1 decimal digits of the index and 'a' (present) or
 * 'b' (missing); values are value_size pseudo-random (incompressible) bytes.
 * LevelDB runs with leveldb_filterpolicy_create_bloom(10) and default options otherwise
 * (4 MiB write buffer, 2 MiB files, snappy); bfh with lsm_options_init defaults (4 MiB
 * memtable, 2 MiB tables, 10 bits/key blocked key filters). Both get a block cache of
 * --cache_mb MiB (default 8, LevelDB's default; bfh's default too). Neither syncs. The
 * engine bfh_mmap is bfh with mmap_reads: a block its cache misses is copied out of a
 * mapping of the table, as LevelDB reads every block, instead of read with pread.
 *
 * Output: a header (# lines) naming every parameter, CSV
 *   engine,workload,round,ops,seconds,us_per_op
 * and a summary of medians and the ratios LevelDB time / bfh time (> 1: bfh faster).
 *
 * Example: db_bench --num 1000000 --value_size 16 --rounds 3 --engines bfh,leveldb
 */
#include <errno.h>
#include <inttypes.h>
#include <leveldb/c.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "bench/bench_util.h"
#include "lsm/db.h"
#include "util/random.h"

enum { W_FILLSEQ, W_FILLRANDOM, W_READRANDOM, W_READMISSING, W_READSEQ, W_COUNT };
static const char *const wname[W_COUNT] = {"fillseq", "fillrandom", "readrandom", "readmissing",
                                           "readseq"};
enum { E_BFH, E_BFH_MMAP, E_LEVELDB, E_COUNT };
static const char *const ename[E_COUNT] = {"bfh", "bfh_mmap", "leveldb"};
#define IS_BFH(e) ((e) == E_BFH || (e) == E_BFH_MMAP)

typedef struct params {
  uint64_t num;
  size_t value_size, key_size;
  int rounds;
  int engines[E_COUNT];
  int workloads[W_COUNT];
  const char *tmp;
  uint64_t seed;
  size_t cache_mb; /* block cache of each engine (LevelDB's default: 8) */
} params_t;

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void die(const char *what, const char *msg) {
  fprintf(stderr, "db_bench: %s: %s\n", what, msg);
  exit(1);
}

static void make_key(char *buf, const params_t *p, uint64_t i, char tail) {
  snprintf(buf, p->key_size + 1, "%0*" PRIu64, (int)p->key_size - 1, i);
  buf[p->key_size - 1] = tail;
}

/* A permutation of [0, num): i -> (i * a + c) mod num with gcd(a, num) = 1. */
typedef struct perm {
  uint64_t a, c, n;
} perm_t;

static void perm_init(perm_t *pm, uint64_t n, uint64_t seed) {
  rng_t r;
  rng_init(&r, seed);
  pm->n = n;
  pm->a = (rng_next(&r) % n) | 1;
  while (bench_gcd(pm->a, n) != 1) pm->a += 2;
  pm->c = rng_next(&r) % n;
}

static uint64_t perm_at(const perm_t *pm, uint64_t i) {
  return (uint64_t)(((unsigned __int128)i * pm->a + pm->c) % pm->n);
}

/* ---- the engines behind one interface ----------------------------------------------- */

typedef struct engine {
  int kind;
  lsm_db_t *bfh;
  leveldb_t *ldb;
  leveldb_options_t *lopt;
  leveldb_filterpolicy_t *lfilter;
  leveldb_cache_t *lcache;
  leveldb_writeoptions_t *lw;
  leveldb_readoptions_t *lr;
} engine_t;

static void engine_open(engine_t *e, int kind, const char *dir, size_t cache_mb) {
  memset(e, 0, sizeof *e);
  e->kind = kind;
  if (IS_BFH(kind)) {
    lsm_options_t o;
    lsm_options_init(&o);
    o.block_cache_bytes = cache_mb << 20;
    o.mmap_reads = kind == E_BFH_MMAP;
    err_t err;
    if (lsm_open(dir, &o, &e->bfh, &err) != ST_OK) die("lsm_open", err.msg);
  } else {
    e->lopt = leveldb_options_create();
    leveldb_options_set_create_if_missing(e->lopt, 1);
    e->lfilter = leveldb_filterpolicy_create_bloom(10);
    leveldb_options_set_filter_policy(e->lopt, e->lfilter);
    e->lcache = leveldb_cache_create_lru(cache_mb << 20);
    leveldb_options_set_cache(e->lopt, e->lcache);
    char *errp = NULL;
    e->ldb = leveldb_open(e->lopt, dir, &errp);
    if (errp) die("leveldb_open", errp);
    e->lw = leveldb_writeoptions_create();
    e->lr = leveldb_readoptions_create();
  }
}

static void engine_close(engine_t *e) {
  if (IS_BFH(e->kind)) {
    lsm_close(e->bfh);
  } else {
    leveldb_close(e->ldb);
    leveldb_writeoptions_destroy(e->lw);
    leveldb_readoptions_destroy(e->lr);
    leveldb_options_destroy(e->lopt);
    leveldb_cache_destroy(e->lcache);
    leveldb_filterpolicy_destroy(e->lfilter);
  }
}

static void engine_put(engine_t *e, const char *k, size_t kl, const void *v, size_t vl) {
  if (IS_BFH(e->kind)) {
    err_t err;
    if (lsm_put(e->bfh, k, kl, v, vl, &err) != ST_OK) die("lsm_put", err.msg);
  } else {
    char *errp = NULL;
    leveldb_put(e->ldb, e->lw, k, kl, v, vl, &errp);
    if (errp) die("leveldb_put", errp);
  }
}

/* 1 found, 0 not found. */
static int engine_get(engine_t *e, const char *k, size_t kl) {
  if (IS_BFH(e->kind)) {
    void *v = NULL;
    size_t vl;
    err_t err;
    int rc = lsm_get(e->bfh, k, kl, &v, &vl, &err);
    if (rc != ST_OK && rc != ST_NOT_FOUND) die("lsm_get", err.msg);
    free(v);
    return rc == ST_OK;
  }
  char *errp = NULL;
  size_t vl;
  char *v = leveldb_get(e->ldb, e->lr, k, kl, &vl, &errp);
  if (errp) die("leveldb_get", errp);
  int found = v != NULL;
  leveldb_free(v);
  return found;
}

static uint64_t engine_scan(engine_t *e) {
  uint64_t n = 0, sum = 0;
  if (IS_BFH(e->kind)) {
    lsm_iter_t *it = lsm_iter_create(e->bfh);
    for (lsm_iter_seek_first(it); lsm_iter_valid(it); lsm_iter_next(it)) {
      size_t kl, vl;
      sum += ((const uint8_t *)lsm_iter_key(it, &kl))[0];
      (void)lsm_iter_value(it, &vl);
      n++;
    }
    lsm_iter_destroy(it);
  } else {
    leveldb_iterator_t *it = leveldb_create_iterator(e->ldb, e->lr);
    for (leveldb_iter_seek_to_first(it); leveldb_iter_valid(it); leveldb_iter_next(it)) {
      size_t kl, vl;
      sum += (uint8_t)leveldb_iter_key(it, &kl)[0];
      (void)leveldb_iter_value(it, &vl);
      n++;
    }
    leveldb_iter_destroy(it);
  }
  (void)sum;
  return n;
}

/* ---- workloads --------------------------------------------------------------------- */

static double results[E_COUNT][W_COUNT][64];

static void report(const params_t *p, int eng, int w, int round, uint64_t ops, double s) {
  printf("%s,%s,%d,%" PRIu64 ",%.6f,%.4f\n", ename[eng], wname[w], round, ops, s,
         ops ? s * 1e6 / (double)ops : 0.0);
  fflush(stdout);
  (void)p;
  results[eng][w][round] = s;
}

static void fill(engine_t *e, const params_t *p, int random, uint64_t seed) {
  char key[256];
  uint8_t *val = malloc(p->value_size + 8);
  rng_t r;
  rng_init(&r, seed);
  perm_t pm;
  perm_init(&pm, p->num, seed);
  for (uint64_t i = 0; i < p->num; i++) {
    make_key(key, p, random ? perm_at(&pm, i) : i, 'a');
    for (size_t j = 0; j < p->value_size; j += 8) {
      uint64_t x = rng_next(&r);
      memcpy(val + j, &x, 8);
    }
    engine_put(e, key, p->key_size, val, p->value_size);
  }
  free(val);
}

static void run_round(const params_t *p, int eng, int round) {
  char dir[1024];
  engine_t e;
  uint64_t seed = p->seed + (uint64_t)round;
  if (p->workloads[W_FILLSEQ]) {
    snprintf(dir, sizeof dir, "%s/db_bench-%s-seq-%d-%d", p->tmp, ename[eng], round, getpid());
    bench_rm_rf("db_bench", dir);
    engine_open(&e, eng, dir, p->cache_mb);
    double t = now_s();
    fill(&e, p, 0, seed);
    report(p, eng, W_FILLSEQ, round, p->num, now_s() - t);
    engine_close(&e);
    bench_rm_rf("db_bench", dir);
  }
  int reads = p->workloads[W_READRANDOM] || p->workloads[W_READMISSING] || p->workloads[W_READSEQ];
  if (!p->workloads[W_FILLRANDOM] && !reads) return;
  snprintf(dir, sizeof dir, "%s/db_bench-%s-rnd-%d-%d", p->tmp, ename[eng], round, getpid());
  bench_rm_rf("db_bench", dir);
  engine_open(&e, eng, dir, p->cache_mb);
  double t = now_s();
  fill(&e, p, 1, seed);
  if (p->workloads[W_FILLRANDOM]) report(p, eng, W_FILLRANDOM, round, p->num, now_s() - t);
  char key[256];
  rng_t r;
  if (p->workloads[W_READRANDOM]) {
    rng_init(&r, seed * 3 + 1);
    uint64_t found = 0;
    t = now_s();
    for (uint64_t i = 0; i < p->num; i++) {
      make_key(key, p, rng_below(&r, p->num), 'a');
      found += (uint64_t)engine_get(&e, key, p->key_size);
    }
    report(p, eng, W_READRANDOM, round, p->num, now_s() - t);
    if (IS_BFH(eng)) {
      lsm_stats_t st;
      lsm_get_stats(e.bfh, &st);
      printf("# %s block cache after readrandom, round %d: %" PRIu64 " hits, %" PRIu64
             " misses, %" PRIu64 " bytes\n",
             ename[eng], round, st.block_cache_hits, st.block_cache_misses, st.block_cache_bytes);
    }
    if (found != p->num)
      fprintf(stderr, "db_bench: %s readrandom found %" PRIu64 " of %" PRIu64 "\n", ename[eng],
              found, p->num);
  }
  if (p->workloads[W_READMISSING]) {
    rng_init(&r, seed * 5 + 2);
    uint64_t found = 0;
    t = now_s();
    for (uint64_t i = 0; i < p->num; i++) {
      make_key(key, p, rng_below(&r, p->num), 'b');
      found += (uint64_t)engine_get(&e, key, p->key_size);
    }
    report(p, eng, W_READMISSING, round, p->num, now_s() - t);
    if (found) fprintf(stderr, "db_bench: %s readmissing found %" PRIu64 "\n", ename[eng], found);
  }
  if (p->workloads[W_READSEQ]) {
    t = now_s();
    uint64_t n = engine_scan(&e);
    report(p, eng, W_READSEQ, round, n, now_s() - t);
  }
  engine_close(&e);
  bench_rm_rf("db_bench", dir);
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static double median(const double *v, int n) {
  double s[64];
  memcpy(s, v, (size_t)n * sizeof *s);
  qsort(s, (size_t)n, sizeof *s, cmp_double);
  return n % 2 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
}

static void parse_list(const char *arg, const char *const *names, int count, int *flags,
                       const char *what) {
  memset(flags, 0, (size_t)count * sizeof *flags);
  char buf[512];
  snprintf(buf, sizeof buf, "%s", arg);
  for (char *tok = strtok(buf, ","); tok; tok = strtok(NULL, ",")) {
    int found = 0;
    for (int i = 0; i < count; i++)
      if (strcmp(tok, names[i]) == 0) flags[i] = found = 1;
    if (!found) die(what, tok);
  }
}

static void usage(void) {
  fprintf(stderr,
          "usage: db_bench [--num N] [--value_size B] [--key_size B] [--rounds R]\n"
          "                [--engines bfh,bfh_mmap,leveldb] [--benchmarks "
          "fillseq,fillrandom,readrandom,readmissing,readseq]\n"
          "                [--tmp DIR] [--seed S] [--cache_mb M]\n");
  exit(2);
}

/* mkdir -p: --tmp may name a directory that does not exist yet. */
static void make_dirs(const char *path) {
  char buf[1024];
  if (snprintf(buf, sizeof buf, "%s", path) >= (int)sizeof buf) die("--tmp", "path too long");
  for (char *p = buf + 1;; p++) {
    int end = *p == 0;
    if (*p != '/' && !end) continue;
    *p = 0;
    if (mkdir(buf, 0755) != 0 && errno != EEXIST) die(buf, strerror(errno));
    if (end) return;
    *p = '/';
  }
}

int main(int argc, char **argv) {
  params_t p = {
      .num = 1000000, .value_size = 16, .key_size = 16, .rounds = 3, .seed = 42, .cache_mb = 8};
  p.tmp = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
  for (int i = 0; i < E_COUNT; i++) p.engines[i] = 1;
  for (int i = 0; i < W_COUNT; i++) p.workloads[i] = 1;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    char *eq = strchr(a, '=');
    char name[64];
    if (eq) {
      snprintf(name, sizeof name, "%.*s", (int)(eq - a), a);
      v = eq + 1;
    } else {
      snprintf(name, sizeof name, "%s", a);
      i++;
    }
    if (!v) usage();
    if (!strcmp(name, "--num"))
      p.num = strtoull(v, NULL, 10);
    else if (!strcmp(name, "--value_size"))
      p.value_size = strtoull(v, NULL, 10);
    else if (!strcmp(name, "--key_size"))
      p.key_size = strtoull(v, NULL, 10);
    else if (!strcmp(name, "--rounds"))
      p.rounds = atoi(v);
    else if (!strcmp(name, "--engines"))
      parse_list(v, ename, E_COUNT, p.engines, "engine");
    else if (!strcmp(name, "--benchmarks"))
      parse_list(v, wname, W_COUNT, p.workloads, "benchmark");
    else if (!strcmp(name, "--tmp"))
      p.tmp = v;
    else if (!strcmp(name, "--seed"))
      p.seed = strtoull(v, NULL, 10);
    else if (!strcmp(name, "--cache_mb"))
      p.cache_mb = strtoull(v, NULL, 10);
    else
      usage();
  }
  if (p.num < 1 || p.key_size < 2 || p.key_size > 200 || p.rounds < 1 || p.rounds > 64) usage();
  if (p.key_size - 1 < 20) {
    uint64_t lim = 1;
    for (size_t d = 0; d < p.key_size - 1; d++) lim *= 10;
    if (p.num > lim) die("--num", "too many keys for --key_size");
  }
  make_dirs(p.tmp);

  printf("# db_bench: bfh lsm engine vs stock LevelDB %d.%d (C API), one process\n",
         leveldb_major_version(), leveldb_minor_version());
  printf("# num=%" PRIu64 " key_size=%zu value_size=%zu rounds=%d seed=%" PRIu64 " tmp=%s\n", p.num,
         p.key_size, p.value_size, p.rounds, p.seed, p.tmp);
  printf("# engines=");
  for (int i = 0; i < E_COUNT; i++)
    if (p.engines[i]) printf("%s ", ename[i]);
  printf("\n# benchmarks=");
  for (int i = 0; i < W_COUNT; i++)
    if (p.workloads[i]) printf("%s ", wname[i]);
  printf(
      "\n# bfh: memtable 4 MiB, tables 2 MiB, blocks 4 KiB, 10 bits/key blocked key filter, "
      "%zu MiB block cache, sync 0; bfh_mmap: the same with mmap_reads\n",
      p.cache_mb);
  printf(
      "# leveldb: bloom(10), write_buffer 4 MiB, max_file_size 2 MiB, snappy, %zu MiB block "
      "cache, sync 0\n",
      p.cache_mb);
  printf("# keys: %zu-1 digits + 'a' (present) / 'b' (missing); values pseudo-random bytes\n",
         p.key_size);
  printf("engine,workload,round,ops,seconds,us_per_op\n");
  for (int round = 0; round < p.rounds; round++)
    for (int eng = 0; eng < E_COUNT; eng++)
      if (p.engines[eng]) run_round(&p, eng, round);

  printf("# summary: median seconds over %d rounds; ratio = leveldb / bfh (> 1: bfh faster)\n",
         p.rounds);
  printf("# workload,bfh_s,leveldb_s,ratio (bfh_mmap's rows: \"# bfh_mmap workload,...\")\n");
  for (int eng = E_BFH; eng <= E_BFH_MMAP; eng++) {
    if (!p.engines[eng]) continue;
    for (int w = 0; w < W_COUNT; w++) {
      if (!p.workloads[w]) continue;
      double mb = median(results[eng][w], p.rounds);
      double ml = p.engines[E_LEVELDB] ? median(results[E_LEVELDB][w], p.rounds) : 0;
      printf("# %s%s%s,%.4f,%.4f,", eng == E_BFH ? "" : ename[eng], eng == E_BFH ? "" : " ",
             wname[w], mb, ml);
      if (mb > 0 && ml > 0)
        printf("%.3f\n", ml / mb);
      else
        printf("-\n");
    }
  }
  return 0;
}

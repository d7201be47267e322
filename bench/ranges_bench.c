/* ranges_bench: ranges and prefixes measured warm, in one process (issue 48's goals; doc/query.md
 * "Ranges").
 *
 * Loads N records into one own-engine database with the stand-alone index, opened once: key
 * k<i> (random order), value "NAME,N" declared name=csv:1:range and n=csv:2:int:range, where
 * for q = a permutation of i, N = (q - num/2) * 4096 (distinct, negative and positive, 4096
 * apart) and NAME = "p<q mod 667>.<q>" (a prefix "pXXX." matches 1/667 = 0.15% of the
 * records). Waits until both stores are idle, warms every query once, then runs RUNS rounds;
 * each round draws two held values (fixed seed), c for AUTO, SLICED and SCAN and another for
 * STANDALONE (a validation leaves its keys' blocks in the block cache, and the method that
 * followed on the same range would find them there), and times, by AUTO and STANDALONE
 * (which goes first alternates by round), and by SCAN after every other query of the round (a
 * full scan replaces the block cache's contents, and whichever method followed it would pay
 * for that):
 *   empty-range-1024  n BETWEEN c+1000 AND c+2023 (1,024 codes, between two held values)
 *   range-r10         n BETWEEN c AND c+9*4096    (10 matches)
 *   range-r100        n BETWEEN c AND c+99*4096   (100 matches)
 *   range-0.01pct     n BETWEEN c AND c+(S-1)*4096, S = num / 10,000 matches (at least 1)
 *   prefix-0.15pct    name LIKE 'pXXX.%'           (num / 667 matches)
 * and by SLICED the empty range too (the filters in memory, the zones and the range filters
 * alone: doc/query.md "Range filters"), and by AUTO alone the point queries point-absent
 * (n = c+2048) and point-present (n = c), and
 * the gets of 10 and 100 records held next to each other far from c (get-r10, get-r100: what
 * validating r matches costs). Those records are ones no query of the round touched: a range's
 * validation reads its keys' data blocks from the page cache, and gets of the range's own keys
 * after it would find them in the block cache and time less than the validation costs. Every
 * query is prepared once (bfh_query_prepare) and run with bfh_query_run.
 *
 * Prints a header naming every parameter, then CSV:
 *   commit,num,runs,kind,name,method,method_used,results,median_ns,q1_ns,q3_ns,cpu_median_ns,
 *   cpu_q1_ns,cpu_q3_ns,ratio_cpu,ratio_wall,goal
 * kind "time": a query's median and quartiles, wall and the calling thread's CPU time (the
 * search runs in it; on a shared machine CPU time leaves out the waits for a core), and its
 * last run's method_used and results; kind "ratio": the goals' ratios of the CPU medians and
 * of the wall medians, each with the goal it is held to (doc/query.md "Ranges").
 *
 * Rows of kind "share" give, for the SLICED searches, the share of the live tables skipped
 * (goal: at least 95% with --rising), ruled out by the zones and by the range filters after
 * the filters, and a row of kind "count" the range filter pieces read per search, in both
 * ratio columns. With --rising, record i holds q = i under key k<i> (the values rise with the
 * key, so each table holds a stretch of them), and each round also runs range-r100 and
 * range-0.01pct by SLICED. With --int-levels J,..., n is declared csv:2:int:range=J,... (its
 * range items at those levels alone; doc/query.md "Ranges").
 *
 * Usage: ranges_bench [--num N] [--runs R] [--dir PATH] [--commit C] [--seed S] [--rising]
 *                     [--int-levels J,...]
 */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench/bench_util.h"
#include "bfh.h"
/* Not public (api/testbed.h): waiting until the engine and the stand-alone index are idle. */
#include "api/testbed.h"

#define MAX_RUNS 64
#define SPACING 4096
#define PREFIX_MOD 667

typedef struct cfg {
  uint64_t num;
  int runs;
  const char *dir;
  const char *commit;
  uint64_t seed;
  int rising; /* --rising: record i holds q = i under key k<i> (values rise with the key) */
  const char *int_levels; /* --int-levels J,...: n's stored range levels (NULL: the default) */
} cfg_t;

static void die(const char *what, int rc, bfh_db *db) {
  fprintf(stderr, "ranges_bench: %s: %s (%s)\n", what, bfh_strerror(rc), bfh_last_error(db));
  exit(1);
}

/* A multiplier prime to num near m: i -> i * it mod num is a permutation. */
static uint64_t coprime(uint64_t num, uint64_t m) {
  while (bench_gcd(m % num ? m % num : 1, num) != 1) m++;
  return m % num ? m % num : 1;
}

/* The value of record q's n. */
static int64_t n_of(const cfg_t *c, uint64_t q) {
  return ((int64_t)q - (int64_t)(c->num / 2)) * SPACING;
}

/* Record i holds q = i * MV mod num (its n: n_of) under key k<i * MK mod num>. */
#define MV 1000003
#define MK 104729

/* a * b mod m, without overflow. */
static uint64_t mulmod(uint64_t a, uint64_t b, uint64_t m) {
  return (uint64_t)((unsigned __int128)a * b % m);
}

/* The inverse of a modulo m (a prime to m), by the extended Euclid algorithm. */
static uint64_t invmod(uint64_t a, uint64_t m) {
  int64_t t = 0, nt = 1;
  uint64_t r = m, nr = a % m;
  while (nr) {
    uint64_t qt = r / nr, tmp = r - qt * nr;
    int64_t tt = t - (int64_t)qt * nt;
    t = nt, nt = tt, r = nr, nr = tmp;
  }
  return t < 0 ? (uint64_t)(t + (int64_t)m) : (uint64_t)t;
}

/* The multipliers of the values and keys: 1 and 1 with --rising. */
static uint64_t mult_v(const cfg_t *c) {
  return c->rising ? 1 : coprime(c->num, MV);
}
static uint64_t mult_k(const cfg_t *c) {
  return c->rising ? 1 : coprime(c->num, MK);
}

static void load(const cfg_t *c, bfh_db *db) {
  uint64_t mv = mult_v(c), mk = mult_k(c);
  uint64_t t0 = clock_now_ns();
  for (uint64_t i = 0; i < c->num; i++) {
    uint64_t q = (i * mv) % c->num, k = (i * mk) % c->num;
    char key[24], val[64];
    int kn = snprintf(key, sizeof key, "k%09" PRIu64, k);
    int vn = snprintf(val, sizeof val, "p%03u.%07" PRIu64 ",%" PRId64, (unsigned)(q % PREFIX_MOD),
                      q, n_of(c, q));
    int rc = bfh_put(db, key, (size_t)kn, val, (size_t)vn);
    if (rc != BFH_OK) die("put", rc, db);
  }
  err_t err;
  err_clear(&err);
  int rc = bfh_flush(db);
  if (rc != BFH_OK) die("flush", rc, db);
  if (engine_lsm_wait_idle(bfh_internal_engine(db), &err) != BFH_OK) die("wait", err.code, db);
  if (standalone_wait_idle(bfh_internal_standalone(db), &err) != BFH_OK)
    die("wait (stand-alone index)", err.code, db);
  fprintf(stderr, "ranges_bench: loaded %" PRIu64 " records in %.1f s\n", c->num,
          (double)(clock_now_ns() - t0) / 1e9);
}

/* The keys of one run (for the gets) and their count. */
typedef struct keys {
  char (*k)[24];
  size_t n, cap;
} keys_t;

static int on_key(void *arg, const void *key, size_t len) {
  keys_t *ks = arg;
  if (ks->n < ks->cap && len < 24) {
    memcpy(ks->k[ks->n], key, len);
    ks->k[ks->n][len] = 0;
  }
  ks->n++;
  return 0;
}

/* The timed series: one sample per run. */
enum { Q_EMPTY, Q_R10, Q_R100, Q_SEL, Q_PREFIX, Q_ABSENT, Q_PRESENT, Q_GET10, Q_GET100, NQ };
static const char *const QNAME[NQ] = {"empty-range-1024", "range-r10",      "range-r100",
                                      "range-0.01pct",    "prefix-0.15pct", "point-absent",
                                      "point-present",    "get-r10",        "get-r100"};
enum { M_AUTO, M_SCAN, M_STANDALONE, M_SLICED, NM };
static const bfh_method METHOD[NM] = {BFH_SEARCH_AUTO, BFH_SEARCH_SCAN, BFH_SEARCH_STANDALONE,
                                      BFH_SEARCH_SLICED};

/* A time: wall and this thread's CPU (the search runs in the caller's thread; on a shared
   machine its CPU time leaves out the waits for a core). */
typedef struct tm2 {
  uint64_t wall, cpu;
} tm2_t;

static uint64_t cpu_now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static tm2_t tm_now(void) {
  return (tm2_t){clock_now_ns(), cpu_now_ns()};
}

static tm2_t tm_since(tm2_t t0) {
  tm2_t t = tm_now();
  return (tm2_t){t.wall - t0.wall, t.cpu - t0.cpu};
}

typedef struct series {
  tm2_t ns[MAX_RUNS];
  int n;
  bfh_method used;
  uint64_t results;
} series_t;

static series_t S[NQ][NM];

/* With --rising, the tables of range-r100 and range-0.01pct by SLICED, which reads the tables
   its filters select (no stand-alone index), summed over the recorded rounds: live, read, and
   ruled out by the zones after the filters. */
typedef struct tables_share {
  uint64_t live, scanned, zoned, ranged, pieces;
  int n;
} tables_share_t;
static tables_share_t Z[NQ];

/* The where of query q around held record h; "" for the gets. */
static void where_of(const cfg_t *c, int q, uint64_t h, char *buf, size_t cap) {
  int64_t v = n_of(c, h);
  uint64_t sel = c->num / 10000 ? c->num / 10000 : 1;
  switch (q) {
    case Q_EMPTY:
      snprintf(buf, cap, "n BETWEEN %" PRId64 " AND %" PRId64, v + 1000, v + 2023);
      break;
    case Q_R10:
      snprintf(buf, cap, "n BETWEEN %" PRId64 " AND %" PRId64, v, v + 9 * SPACING);
      break;
    case Q_R100:
      snprintf(buf, cap, "n BETWEEN %" PRId64 " AND %" PRId64, v, v + 99 * SPACING);
      break;
    case Q_SEL:
      snprintf(buf, cap, "n BETWEEN %" PRId64 " AND %" PRId64, v, v + (int64_t)(sel - 1) * SPACING);
      break;
    case Q_PREFIX:
      snprintf(buf, cap, "name LIKE 'p%03u.%%'", (unsigned)(h % PREFIX_MOD));
      break;
    case Q_ABSENT:
      snprintf(buf, cap, "n = %" PRId64, v + SPACING / 2);
      break;
    case Q_PRESENT:
      snprintf(buf, cap, "n = %" PRId64, v);
      break;
    default:
      buf[0] = 0;
  }
}

/* Runs where by method once: its time; keys (may be NULL) gets the keys; zs (may be NULL)
   its tables. */
static tm2_t run_query_by(bfh_db *db, const char *where, bfh_method method, keys_t *keys,
                          series_t *s, tables_share_t *zs) {
  bfh_prepared *p = NULL;
  int rc = bfh_query_prepare(db, where, &p);
  if (rc != BFH_OK) die(where, rc, db);
  keys_t none = {NULL, 0, 0};
  keys_t *ks = keys ? keys : &none;
  ks->n = 0;
  bfh_search_stats st;
  tm2_t t0 = tm_now();
  rc = bfh_query_run(p, method, 0, on_key, ks, &st);
  tm2_t ns = tm_since(t0);
  if (rc != BFH_OK) die(where, rc, db);
  bfh_query_free(p);
  if (s) {
    s->used = st.method_used;
    s->results = st.results;
  }
  if (zs) {
    zs->live += st.tables_live;
    zs->scanned += st.tables_scanned;
    zs->zoned += st.tables_zoned;
    zs->ranged += st.tables_ranged;
    zs->pieces += st.range_pieces_read;
    zs->n++;
  }
  return ns;
}

static tm2_t run_query(bfh_db *db, const char *where, int m, keys_t *keys, series_t *s,
                       tables_share_t *zs) {
  return run_query_by(db, where, METHOD[m], keys, s, zs);
}

/* Into ks, the keys of the r records holding q = from .. from + r - 1. */
static void keys_of(const cfg_t *c, uint64_t from, size_t r, keys_t *ks) {
  uint64_t mv = mult_v(c), mk = mult_k(c), inv = invmod(mv, c->num);
  ks->n = 0;
  for (size_t j = 0; j < r && ks->n < ks->cap; j++) {
    uint64_t i = mulmod((from + j) % c->num, inv, c->num);
    snprintf(ks->k[ks->n++], sizeof ks->k[0], "k%09" PRIu64, mulmod(i, mk, c->num));
  }
}

/* The gets of keys[0, n): their time. */
static tm2_t run_gets(bfh_db *db, const keys_t *ks) {
  tm2_t t0 = tm_now();
  for (size_t i = 0; i < ks->n && i < ks->cap; i++) {
    void *v = NULL;
    size_t vn = 0;
    int rc = bfh_get(db, ks->k[i], strlen(ks->k[i]), &v, &vn);
    if (rc != BFH_OK) die("get", rc, db);
    bfh_free(v);
  }
  return tm_since(t0);
}

/* One round around held record h (record = true when the samples count). */
static void round_at(const cfg_t *c, bfh_db *db, uint64_t h, uint64_t h_index, int round,
                     int record) {
  keys_t ks = {malloc(128 * sizeof *ks.k), 0, 128};
  if (!ks.k) die("keys", BFH_E_NOMEM, db);
  char where[160];
  /* AUTO and STANDALONE of every query, their order alternating by round; then SCAN's. */
  static const int order[2][NM] = {{M_AUTO, M_STANDALONE, M_SLICED, M_SCAN},
                                   {M_STANDALONE, M_AUTO, M_SLICED, M_SCAN}};
  for (int pass = 0; pass < 2; pass++)
    for (int q = Q_EMPTY; q <= Q_PRESENT; q++) {
      for (int j = 0; j < NM; j++) {
        int m = order[round % 2][j];
        if ((m == M_SCAN) != (pass == 1)) continue;
        if (q >= Q_ABSENT && m != M_AUTO) continue;  /* the points by AUTO alone */
        if (m == M_SLICED && q != Q_EMPTY) continue; /* the filters' path: the empty range */
        where_of(c, q, m == M_STANDALONE ? h_index : h, where, sizeof where);
        series_t *s = &S[q][m];
        tables_share_t *zs = m == M_SLICED && record ? &Z[q] : NULL;
        tm2_t ns = run_query(db, where, m, m == M_AUTO ? &ks : NULL, s, zs);
        if (record) s->ns[s->n++] = ns;
        if (m != M_AUTO || (q != Q_R10 && q != Q_R100)) continue;
        /* r validating gets, of records half the key space away (untouched this round) */
        keys_of(c, (h + c->num / 2) % (c->num - 200), q == Q_R10 ? 10 : 100, &ks);
        tm2_t g = run_gets(db, &ks);
        series_t *gs = &S[q == Q_R10 ? Q_GET10 : Q_GET100][M_AUTO];
        gs->used = BFH_SEARCH_AUTO;
        gs->results = ks.n;
        if (record) gs->ns[gs->n++] = g;
      }
    }
  /* With values rising with the key: what the zones leave of the tables. */
  for (int q = Q_R100; c->rising && q <= Q_SEL; q++) {
    where_of(c, q, h, where, sizeof where);
    run_query_by(db, where, BFH_SEARCH_SLICED, NULL, NULL, record ? &Z[q] : NULL);
  }
  free(ks.k);
}

/* The median and quartiles (nearest rank) of s's wall (cpu 0) or CPU (cpu 1) times. */
static double median(const series_t *s, int cpu, double *q1, double *q3) {
  double v[MAX_RUNS];
  for (int i = 0; i < s->n; i++) v[i] = (double)(cpu ? s->ns[i].cpu : s->ns[i].wall);
  qsort(v, (size_t)s->n, sizeof *v, bench_cmp_double);
  *q1 = v[(s->n - 1) / 4];
  *q3 = v[3 * (s->n - 1) / 4];
  return s->n % 2 ? v[s->n / 2] : (v[s->n / 2 - 1] + v[s->n / 2]) / 2;
}

static double med(int q, int m, int cpu) {
  double a, b;
  return median(&S[q][m], cpu, &a, &b);
}

/* A series of the ratios: query q by method m. */
typedef struct qm {
  int q, m;
} qm_t;

/* The median of num[0] over the sum of the medians of den[0, nd), of CPU (cpu 1) or wall. */
static double ratio_of(qm_t num, const qm_t *den, int nd, int cpu) {
  double d = 0;
  for (int i = 0; i < nd; i++) d += med(den[i].q, den[i].m, cpu);
  return med(num.q, num.m, cpu) / d;
}

/* Prints a goal's ratio row, of CPU medians and of wall medians. */
static void ratio(const cfg_t *c, const char *name, qm_t num, const qm_t *den, int nd,
                  const char *goal) {
  printf("%s,%" PRIu64 ",%d,ratio,%s,,,,,,,,,,%.3f,%.3f,%s\n", c->commit, c->num, c->runs, name,
         ratio_of(num, den, nd, 1), ratio_of(num, den, nd, 0), goal);
}

static void report(const cfg_t *c) {
  printf(
      "commit,num,runs,kind,name,method,method_used,results,median_ns,q1_ns,q3_ns,cpu_median_ns,"
      "cpu_q1_ns,cpu_q3_ns,ratio_cpu,ratio_wall,goal\n");
  for (int q = 0; q < NQ; q++)
    for (int m = 0; m < NM; m++) {
      const series_t *s = &S[q][m];
      if (!s->n) continue;
      double q1, q3, md = median(s, 0, &q1, &q3), c1, c3, cm = median(s, 1, &c1, &c3);
      printf("%s,%" PRIu64 ",%d,time,%s,%s,%s,%" PRIu64 ",%.0f,%.0f,%.0f,%.0f,%.0f,%.0f,,,\n",
             c->commit, c->num, c->runs, QNAME[q],
             q >= Q_GET10 ? "get" : bfh_method_name(METHOD[m]),
             q >= Q_GET10 ? "get" : bfh_method_name(s->used), s->results, md, q1, q3, cm, c1, c3);
    }
  ratio(c, "empty-range-1024/point-absent (auto)", (qm_t){Q_EMPTY, M_AUTO},
        (qm_t[]){{Q_ABSENT, M_AUTO}}, 1, "<= 2");
  ratio(c, "empty-range-1024 (sliced)/point-absent (auto)", (qm_t){Q_EMPTY, M_SLICED},
        (qm_t[]){{Q_ABSENT, M_AUTO}}, 1, "");
  ratio(c, "range-r10/(point-present+get-r10) (auto)", (qm_t){Q_R10, M_AUTO},
        (qm_t[]){{Q_PRESENT, M_AUTO}, {Q_GET10, M_AUTO}}, 2, "<= 1");
  ratio(c, "range-r100/(point-present+get-r100) (auto)", (qm_t){Q_R100, M_AUTO},
        (qm_t[]){{Q_PRESENT, M_AUTO}, {Q_GET100, M_AUTO}}, 2, "<= 1");
  ratio(c, "scan/auto range-0.01pct", (qm_t){Q_SEL, M_SCAN}, (qm_t[]){{Q_SEL, M_AUTO}}, 1,
        ">= 1000");
  ratio(c, "scan/auto prefix-0.15pct", (qm_t){Q_PREFIX, M_SCAN}, (qm_t[]){{Q_PREFIX, M_AUTO}}, 1,
        ">= 100");
  static const int ranged[] = {Q_EMPTY, Q_R10, Q_R100, Q_SEL, Q_PREFIX};
  for (size_t i = 0; i < sizeof ranged / sizeof ranged[0]; i++) {
    char name[80];
    int q = ranged[i];
    snprintf(name, sizeof name, "auto/standalone %s", QNAME[q]);
    ratio(c, name, (qm_t){q, M_AUTO}, (qm_t[]){{q, M_STANDALONE}}, 1,
          q == Q_PREFIX ? "<= 1.5 (0.15% is past the goal's 0.1%)" : "<= 1.5");
  }
  for (int q = Q_EMPTY; q <= Q_SEL; q++) {
    const tables_share_t *z = &Z[q];
    if (!z->live) continue;
    double skipped = 1.0 - (double)z->scanned / (double)z->live;
    double zoned = (double)z->zoned / (double)z->live;
    printf("%s,%" PRIu64 ",%d,share,tables skipped %s (sliced),sliced,,,,,,,,,%.4f,%.4f,%s\n",
           c->commit, c->num, c->runs, QNAME[q], skipped, skipped, c->rising ? ">= 0.95" : "");
    printf("%s,%" PRIu64
           ",%d,share,tables ruled out by zones %s (sliced),sliced,,,,,,,,,%.4f,%.4f,\n",
           c->commit, c->num, c->runs, QNAME[q], zoned, zoned);
    double ranged = (double)z->ranged / (double)z->live;
    printf("%s,%" PRIu64
           ",%d,share,tables ruled out by range filters %s (sliced),sliced,,,,,,,,,%.4f,%.4f,\n",
           c->commit, c->num, c->runs, QNAME[q], ranged, ranged);
    printf("%s,%" PRIu64
           ",%d,count,range filter pieces read per search %s (sliced),sliced,,,,,"
           ",,,,%.1f,%.1f,\n",
           c->commit, c->num, c->runs, QNAME[q], (double)z->pieces / z->n,
           (double)z->pieces / z->n);
  }
}

static void usage(void) {
  fprintf(stderr,
          "usage: ranges_bench [--num N] [--runs R (1..%d)] [--dir PATH] [--commit C] "
          "[--seed S] [--rising] [--int-levels J,...]\n",
          MAX_RUNS);
  exit(2);
}

int main(int argc, char **argv) {
  cfg_t c = {1000000, 15, NULL, "unknown", 48, 0, NULL};
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!strcmp(a, "--rising")) {
      c.rising = 1;
      continue;
    }
    if (!v) usage();
    if (!strcmp(a, "--num"))
      c.num = strtoull(v, NULL, 10);
    else if (!strcmp(a, "--runs"))
      c.runs = atoi(v);
    else if (!strcmp(a, "--dir"))
      c.dir = v;
    else if (!strcmp(a, "--commit"))
      c.commit = v;
    else if (!strcmp(a, "--seed"))
      c.seed = strtoull(v, NULL, 10);
    else if (!strcmp(a, "--int-levels"))
      c.int_levels = v;
    else
      usage();
    i++;
  }
  if (c.num < 1000 || c.runs < 1 || c.runs > MAX_RUNS) usage();
  char tmp[] = "/tmp/ranges_bench.XXXXXX";
  int own_dir = !c.dir;
  if (own_dir && !(c.dir = mkdtemp(tmp))) die("mkdtemp", BFH_E_IO, NULL);
  char path[4200];
  snprintf(path, sizeof path, "%s/db", c.dir);

  char n_extractor[64];
  snprintf(n_extractor, sizeof n_extractor, "csv:2:int:range%s%s", c.int_levels ? "=" : "",
           c.int_levels ? c.int_levels : "");
  const bfh_attribute attrs[2] = {{"name", "csv:1:range"}, {"n", n_extractor}};
  bfh_options o;
  bfh_options_init(&o);
  o.standalone_index = 1;
  o.attributes = attrs;
  o.attribute_count = 2;
  printf("# ranges_bench: num=%" PRIu64 " runs=%d seed=%" PRIu64 " dir=%s commit=%s%s\n", c.num,
         c.runs, c.seed, c.dir, c.commit, c.rising ? " rising" : "");
  printf(
      "# options: defaults (memtable %zu B, tables %zu B), standalone_index=1, attributes "
      "name=csv:1:range n=%s; values 'p<q%%%d>.<q>,<(q-num/2)*%d>'\n",
      o.memtable_bytes, o.table_bytes, n_extractor, PREFIX_MOD, SPACING);
  bfh_db *db = NULL;
  int rc = bfh_open(path, &o, &db);
  if (rc != BFH_OK) die("open", rc, NULL);
  load(&c, db);
  bfh_db_stats st;
  if (bfh_stats(db, &st) == BFH_OK)
    printf("# tables %" PRIu64 ", index_bytes %" PRIu64 ", standalone_tables %" PRIu64
           ", standalone_bytes %" PRIu64 "\n",
           st.tables, st.index_bytes, st.standalone_tables, st.standalone_bytes);
  rng_t r;
  rng_init(&r, c.seed);
  /* Held records h with h + 100 held too (the ranges' matches), one for STANDALONE and one
     for the others; round 0 warms. */
  for (int round = 0; round <= c.runs; round++) {
    uint64_t h = 1 + rng_below(&r, c.num - 200), h_index = 1 + rng_below(&r, c.num - 200);
    round_at(&c, db, h, h_index, round, round > 0);
  }
  report(&c);
  rc = bfh_close(db);
  if (rc != BFH_OK) die("close", rc, NULL);
  if (own_dir) bench_rm_rf("ranges_bench", c.dir);
  return 0;
}

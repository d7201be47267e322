/* Beyond the paper: the cost of declared attributes (issue 47, doc/query.md), at ingest and in
 * memory.
 *
 * Two databases per size, built fresh by random-order puts of the same N JSON values
 *     {"id":I,"city":"cC","tag":"tT","age":A}   C = I mod 1000, T = I mod 100, A = I mod 90
 * (each value unique; a city is held by 0.1% of the keys, a tag by 1%, an age by about 1.1%):
 *   whole   no declarations: the whole value is the one item of each entry (as without
 *           attributes)
 *   attrs3  city=json:city, tag=json:tag, age=json:age:int: three items per entry, one JSON
 *           parse per put
 *   pair    attrs3 and the composite tag_age=pair:tag,age (doc/query.md "Composites"): a
 *           fourth item per entry, the pair of its tag and age, made from the same parse
 * The geometry is the paper's (2 MiB tables, 4 MiB memtable) shrunk as exp_one_size says, with
 * the product's layout beyond the paper: the lean index (BFH_LEAN_MAP_BITS bits per item),
 * value-to-block maps, block filters and the memtable index (exp_db_params_t.beyond).
 *
 * Rows (kind "ingest"), one per database: the ingest time, wall and CPU (puts, a final flush
 * and the close that waits for background work; CPU time is the process's, every thread
 * included, the better figure on a shared machine; the build of median CPU time of 3 at the
 * small scale, of 1 beyond, the two configurations alternating in each round), attrs3's
 * ratios to whole's (ingest_ratio by wall time, ingest_cpu_ratio by CPU time, which the goal
 * reads; pair's cost beside attrs3's is vs_per_attribute, its CPU time over attrs3's, and
 * index_bytes over attrs3's in the rows' index_bytes), and from bfh_stats after the open of the
 * built database (its leaves loaded) index_bytes per entry and per entry and attribute. The goals
 * of the issue: ingest with 3 attributes at most 1.5x the whole value's; index_bytes at most 2
 * bytes per entry per attribute; goal_met says whether the row meets its goal.
 *
 * Query rows (kind "query"), over attrs3's database opened again with the stand-alone index
 * (built at that open from the tables), warm, each predicate once unmeasured then --queries
 * times (at least 5, at most 1,000; SCAN, the floor, 5 times), every query by every method in
 * turn within each round (so that the shared machine's slow spells fall on them alike; AUTO
 * and STANDALONE take turns at going first), each
 * timed run of AUTO and STANDALONE right after an untimed one of the same query by the same
 * method (so that the one run first in a round does not alone pay for the blocks the query
 * before evicted), the median and quartiles:
 *   tag     tag = 't7'                       1% of the keys
 *   age     age = 17                         about 1.1%
 *   and     tag = 't7' AND age = 17          the two meet on 1 key in 900 (0.11%)
 *   or      tag = 't7' OR age = 17
 *   in      city IN ('c7', 'c8')             0.2%
 *   absent  tag = 't100'                     no key
 *   and_in  tag IN ('t7', 't8') AND age IN (17, 18)   4 pairs, 0.44%
 *   newest  tag = 't7', the newest 10 (doc/query.md "The newest K")
 * by AUTO, STANDALONE and SCAN (newest: by AUTO and SCAN; STANDALONE runs it as AUTO). Before those
 * (the stand-alone index, once built, stays with the database), tag, age, and and and_in by AUTO
 * without the stand-alone index (the filters, through the blocks reader): over attrs3's database
 * (config attrs3-filters: the per-attribute filters, an AND intersecting them), and over pair's
 * (config pair: the filters asked the composite's implied conjunct too). pair's rows state the same
 * ratio, and vs_per_attribute, their time over attrs3-filters'. wrong is 1 when the keys found are
 * not exactly those whose id satisfies the predicate (each key once). The goals of the issue, as
 * ratio and goal_met: AND at most 0.5x the faster of its two parts alone, OR at most the sum of its
 * parts (each by the same method), AUTO at most 1.0x STANDALONE on one attribute's equality,
 * present (tag) and absent, and AUTO's newest 10 at most 0.01x its full answer (tag's row), in at
 * most 1 ms and 16 blocks read. The newest's keys are wrong unless they are the last 10 put with
 * tag t7, newest first.
 *
 * N: small 100k, medium 1M, paper 10M.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "experiments/drivers.h"
#include "experiments/exp.h"

#define REPS_SMALL 3
#define INGEST_GOAL 1.5          /* attrs3 ingest / whole ingest, at most */
#define BYTES_GOAL 2.0           /* index_bytes per entry per attribute, at most */
#define ORDER_SEED 0x61747472ull /* the put order's permutation */
#define AND_GOAL 0.5             /* AND / the faster of its parts, at most */
#define OR_GOAL 1.0              /* OR / the sum of its parts, at most */
#define AUTO_GOAL 1.0            /* AUTO / STANDALONE on one attribute's equality, at most */
#define NEWEST_K 10
#define NEWEST_GOAL 0.01      /* AUTO's newest 10 / its full answer, at most */
#define NEWEST_MAX_S 1e-3     /* AUTO's newest 10, at most */
#define NEWEST_MAX_BLOCKS 16  /* blocks AUTO's newest 10 reads, at most */
#define SCAN_RUNS 5

static const bfh_attribute ATTRS3[] = {{"city", "json:city"},
                                       {"tag", "json:tag"},
                                       {"age", "json:age:int"},
                                       {"tag_age", "pair:tag,age"}};
#define NATTRS 3 /* attrs3's; pair's has the composite too */

enum { WHOLE = 0, ATTRS = 1, PAIR = 2, NCONFIGS = 3 };
static const char *const CONFIG_NAMES[NCONFIGS] = {"whole", "attrs3", "pair"};
static const size_t CONFIG_ATTRS[NCONFIGS] = {1, NATTRS, NATTRS + 1};

/* The query runs, in this order: attrs3's database without the stand-alone index (the
   per-attribute filters alone) and pair's (the filters with the composite), PAIR_QUERY by
   AUTO; then attrs3's with the stand-alone index, every query by every method (last: the
   index built at that open stays, and an open without it is refused). */
enum { R_ATTRS_FILTERS, R_PAIR, R_ATTRS, NRUNS };
static const struct run {
  const char *name;
  int config, standalone;
} RUNS[NRUNS] = {{"attrs3-filters", ATTRS, 0}, {"pair", PAIR, 0}, {"attrs3", ATTRS, 1}};

/* The i-th put under the put order order: its key (the entry order(i), so that the order is
   random) and value. */
static size_t entry(uint64_t i, const workload_perm_t *order, char *key, size_t kcap, char *val,
                    size_t vcap) {
  uint64_t id = workload_perm_apply(order, i);
  snprintf(key, kcap, "k%012llu", (unsigned long long)id);
  return (size_t)snprintf(val, vcap,
                          "{\"id\":%llu,\"city\":\"c%llu\",\"tag\":\"t%llu\",\"age\":%llu}",
                          (unsigned long long)id, (unsigned long long)(id % 1000),
                          (unsigned long long)(id % 100), (unsigned long long)(id % 90));
}

/* CPU seconds of this process, every thread (the engine's flushes and compactions) included. */
static double cpu_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* The time of one build: wall and CPU seconds. */
typedef struct ingest_time {
  double wall, cpu;
} ingest_time_t;

static void options(const exp_db_params_t *p, int config, bfh_options *o) {
  exp_db_options(p, o);
  if (config != WHOLE) {
    o->attributes = ATTRS3;
    o->attribute_count = CONFIG_ATTRS[config];
  }
}

/* Builds config's database in dir (removed first): N puts and a flush, then the close that
   waits for the engine's background work. *t: their time. */
static int build(const exp_db_params_t *p, int config, const char *dir, ingest_time_t *t) {
  exp_rmtree(dir);
  bfh_options o;
  options(p, config, &o);
  bfh_db *db;
  int rc = bfh_open(dir, &o, &db);
  if (rc != BFH_OK) {
    fprintf(stderr, "attributes: open %s: %s\n", dir, bfh_last_error(NULL));
    return rc;
  }
  uint64_t n = p->wl.n;
  workload_perm_t order;
  workload_perm_init(&order, n, ORDER_SEED);
  char key[32], val[160];
  double t0 = exp_now(), c0 = cpu_now();
  for (uint64_t i = 0; i < n && rc == BFH_OK; i++) {
    size_t len = entry(i, &order, key, sizeof key, val, sizeof val);
    rc = bfh_put(db, key, strlen(key), val, len);
    if ((i & 0xffff) == 0)
      exp_progress("attributes n=%llu: %s ingest %llu", (unsigned long long)n, CONFIG_NAMES[config],
                   (unsigned long long)i);
  }
  if (rc == BFH_OK) rc = bfh_flush(db);
  exp_progress_done();
  if (rc != BFH_OK) fprintf(stderr, "attributes: ingest %s: %s\n", dir, bfh_last_error(db));
  int rc2 = bfh_close(db);
  t->wall = exp_now() - t0;
  t->cpu = cpu_now() - c0;
  return rc == BFH_OK ? rc2 : rc;
}

/* bfh_stats of the built database, opened again (its leaves loaded, as a search sees them). */
static int stats_of(const exp_db_params_t *p, int config, const char *dir, bfh_db_stats *st) {
  bfh_options o;
  options(p, config, &o);
  o.attributes = NULL; /* the stored ones */
  o.attribute_count = 0;
  bfh_db *db = NULL;
  int rc = bfh_open(dir, &o, &db);
  if (rc == BFH_OK) rc = exp_db_settle(db);
  if (rc == BFH_OK) rc = exp_db_stats(db, st) ? BFH_OK : BFH_E_IO;
  if (db) bfh_close(db);
  return rc;
}

/* By CPU time: the median build is the one of median CPU time. */
static int cmp_time(const void *a, const void *b) {
  double x = ((const ingest_time_t *)a)->cpu, y = ((const ingest_time_t *)b)->cpu;
  return (x > y) - (x < y);
}

static void ingest_row(exp_csv_t *csv, const exp_ctx_t *x, const exp_db_params_t *p, int config,
                       int reps, ingest_time_t t, ingest_time_t whole, ingest_time_t attrs3,
                       const bfh_db_stats *st) {
  double secs = t.wall, whole_secs = whole.wall, ratio = t.cpu / whole.cpu;
  uint64_t n = p->wl.n;
  size_t attrs = CONFIG_ATTRS[config];
  double per_attr = (double)st->index_bytes / (double)n / (double)attrs;
  exp_csv_db_params(csv, x, p);
  exp_csv_str(csv, "kind", "ingest");
  exp_csv_str(csv, "config", CONFIG_NAMES[config]);
  exp_csv_u64(csv, "attributes", attrs);
  exp_csv_u64(csv, "reps", (uint64_t)reps);
  exp_csv_dbl(csv, "ingest_s", secs);
  exp_csv_dbl(csv, "ingest_us_per_put", secs * 1e6 / (double)n);
  exp_csv_dbl(csv, "ingest_ratio", secs / whole_secs);
  exp_csv_dbl(csv, "ingest_cpu_s", t.cpu);
  exp_csv_dbl(csv, "ingest_cpu_ratio", ratio);
  exp_csv_u64(csv, "index_bytes", st->index_bytes);
  exp_csv_dbl(csv, "index_bytes_per_entry", (double)st->index_bytes / (double)n);
  exp_csv_dbl(csv, "index_bytes_per_entry_attribute", per_attr);
  exp_csv_u64(csv, "memtable_index_bytes", st->memtable_index_bytes);
  int met = per_attr <= BYTES_GOAL && (config == WHOLE || ratio <= INGEST_GOAL);
  exp_csv_str(csv, "goal_met", met ? "yes" : "no");
  if (config == PAIR) exp_csv_dbl(csv, "vs_per_attribute", t.cpu / attrs3.cpu);
  exp_csv_row(csv);
  printf(
      "attributes n=%llu %-6s ingest %.3f s, %.3f s CPU (%.2fx whole's CPU, goal <= %.1fx), "
      "index %.3f bytes per entry per attribute (goal <= %.1f)",
      (unsigned long long)n, CONFIG_NAMES[config], secs, t.cpu, ratio, INGEST_GOAL, per_attr,
      BYTES_GOAL);
  if (config == PAIR) printf(", %.2fx attrs3's CPU", t.cpu / attrs3.cpu);
  printf("\n");
}

/* ---- Query rows ------------------------------------------------------------------------ */

/* Whether the value of entry id (entry's) satisfies the query. */
typedef int (*holds_fn)(uint64_t id);
static int holds_tag(uint64_t id) {
  return id % 100 == 7;
}
static int holds_age(uint64_t id) {
  return id % 90 == 17;
}
static int holds_and(uint64_t id) {
  return holds_tag(id) && holds_age(id);
}
static int holds_or(uint64_t id) {
  return holds_tag(id) || holds_age(id);
}
static int holds_in(uint64_t id) {
  return id % 1000 == 7 || id % 1000 == 8;
}
static int holds_none(uint64_t id) {
  return (void)id, 0;
}
static int holds_and_in(uint64_t id) {
  return (id % 100 == 7 || id % 100 == 8) && (id % 90 == 17 || id % 90 == 18);
}

enum { Q_TAG, Q_AGE, Q_AND, Q_OR, Q_IN, Q_ABSENT, Q_AND_IN, Q_NEWEST, NQUERIES };
static const struct query {
  const char *name, *where;
  holds_fn holds;
  uint64_t newest; /* K, or 0: every key */
} QUERIES[NQUERIES] = {
    {"tag", "tag = 't7'", holds_tag, 0},
    {"age", "age = 17", holds_age, 0},
    {"and", "tag = 't7' AND age = 17", holds_and, 0},
    {"or", "tag = 't7' OR age = 17", holds_or, 0},
    {"in", "city IN ('c7', 'c8')", holds_in, 0},
    {"absent", "tag = 't100'", holds_none, 0},
    {"and_in", "tag IN ('t7', 't8') AND age IN (17, 18)", holds_and_in, 0},
    {"newest", "tag = 't7'", holds_tag, NEWEST_K},
};
/* The queries pair's database runs (by AUTO). */
static const int PAIR_QUERY[NQUERIES] = {[Q_TAG] = 1, [Q_AGE] = 1, [Q_AND] = 1, [Q_AND_IN] = 1};

enum { M_AUTO, M_STANDALONE, M_SCAN, NMETHODS };
static const bfh_method METHODS[NMETHODS] = {BFH_SEARCH_AUTO, BFH_SEARCH_STANDALONE,
                                             BFH_SEARCH_SCAN};

/* Whether query qi is run by method mi: the newest K not by STANDALONE, whose index holds no
   sequence numbers (it would run as AUTO). */
static int runs_by(int qi, int mi) {
  return !(QUERIES[qi].newest && mi == M_STANDALONE);
}

/* The keys a query found, checked against its predicate: each key's id once, each holding. */
typedef struct found {
  uint64_t n;    /* entries */
  uint8_t *seen; /* n bits */
  holds_fn holds;
  uint64_t keys;
  int bad; /* a key that does not hold, is not an entry's, or came twice */
  const uint64_t *order; /* the newest K: the ids in the order they must come; else NULL */
} found_t;

static int on_key(void *arg, const void *key, size_t len) {
  found_t *f = arg;
  char buf[32];
  if (len < 2 || len >= sizeof buf) {
    f->bad = 1;
    return 0;
  }
  memcpy(buf, key, len);
  buf[len] = 0;
  char *end;
  uint64_t id = strtoull(buf + 1, &end, 10);
  if (buf[0] != 'k' || *end || id >= f->n || (f->seen[id / 8] >> (id % 8) & 1) || !f->holds(id) ||
      (f->order && (f->keys >= NEWEST_K || f->order[f->keys] != id)))
    f->bad = 1;
  else
    f->seen[id / 8] |= (uint8_t)(1u << (id % 8));
  f->keys++;
  return 0;
}

/* One query by one method: runs times, the median and quartiles in t (seconds). */
typedef struct measured {
  double time_s, q1_s, q3_s;
  bfh_search_stats st; /* the last run's */
  uint64_t want;
  int wrong;
} measured_t;

/* Every query by every method, the rounds interleaved (each round runs each query by each
   method once, in turn), so that a slow spell of the shared machine falls on all of them
   alike and the ratios between them, across methods and across queries, hold: runs[mi]
   rounds of method mi (SCAN's fewer), after one unmeasured round; the median and quartiles
   into out[qi][mi]. want[qi]: the keys query qi holds. */
static int run_queries(bfh_db *db, uint64_t n, const int runs[NMETHODS], const int *only,
                       const uint64_t want[NQUERIES], const uint64_t *newest,
                       measured_t out[NQUERIES][NMETHODS]) {
  static double t[NQUERIES][NMETHODS][1000];
  found_t f = {.n = n, .seen = malloc(n / 8 + 1)};
  if (!f.seen) return BFH_E_NOMEM;
  int rc = BFH_OK, rounds = 0;
  for (int mi = 0; mi < NMETHODS; mi++)
    if (runs[mi] > rounds) rounds = runs[mi];
  for (int qi = 0; qi < NQUERIES; qi++)
    for (int mi = 0; mi < NMETHODS; mi++) out[qi][mi].wrong = 0;
  for (int r = -1; r < rounds && rc == BFH_OK; r++) /* r = -1: the unmeasured first round */
    for (int qi = 0; qi < NQUERIES && rc == BFH_OK; qi++)
      for (int i = 0; i < NMETHODS && rc == BFH_OK; i++) {
        /* AUTO and STANDALONE take turns at going first, so that neither always follows
           the query before (its SCAN) and the other always follows it. */
        int mi = (r & 1) && i <= M_STANDALONE ? M_STANDALONE - i : i;
        if (r >= runs[mi] || runs[mi] == 0 || (only && !only[qi]) || !runs_by(qi, mi)) continue;
        measured_t *m = &out[qi][mi];
        memset(f.seen, 0, n / 8 + 1);
        f.keys = 0;
        f.bad = 0;
        f.holds = QUERIES[qi].holds;
        f.order = QUERIES[qi].newest ? newest : NULL;
        /* Warm: AUTO's and STANDALONE's timed run follows an untimed one of the same query by
           the same method, so that neither pays for the blocks the query before it evicted
           (SCAN, the floor, reads every table either way). */
        if (r >= 0 && mi != M_SCAN)
          rc = bfh_query(db, QUERIES[qi].where, METHODS[mi], QUERIES[qi].newest, NULL, NULL,
                         &m->st);
        double t0 = exp_now();
        if (rc == BFH_OK)
          rc = bfh_query(db, QUERIES[qi].where, METHODS[mi], QUERIES[qi].newest, on_key, &f,
                         &m->st);
        if (r >= 0) t[qi][mi][r] = exp_now() - t0;
        if (rc != BFH_OK)
          fprintf(stderr, "attributes: %s by %s: %s\n", QUERIES[qi].where,
                  bfh_method_name(METHODS[mi]), bfh_last_error(db));
        if (f.bad || f.keys != want[qi]) m->wrong = 1;
      }
  free(f.seen);
  if (rc != BFH_OK) return rc;
  for (int qi = 0; qi < NQUERIES; qi++)
    for (int mi = 0; mi < NMETHODS; mi++) {
      measured_t *m = &out[qi][mi];
      size_t k = (size_t)runs[mi];
      if (k == 0 || (only && !only[qi]) || !runs_by(qi, mi)) continue;
      exp_times_sort(t[qi][mi], k);
      m->time_s = exp_times_quantile(t[qi][mi], k, 0.5);
      m->q1_s = exp_times_quantile(t[qi][mi], k, 0.25);
      m->q3_s = exp_times_quantile(t[qi][mi], k, 0.75);
      m->want = want[qi];
    }
  return BFH_OK;
}

/* The ratio a row states and its goal: AND and OR against their parts by the same method,
   AUTO against STANDALONE on tag and absent, AUTO's newest K against its full answer (tag);
   *goal 0: the row has none. */
static double row_ratio(measured_t m[NQUERIES][NMETHODS], int qi, int mi, double *goal) {
  double tag = m[Q_TAG][mi].time_s, age = m[Q_AGE][mi].time_s;
  *goal = 0;
  if (mi == M_SCAN) return 0;
  if (qi == Q_NEWEST) {
    *goal = NEWEST_GOAL;
    return m[qi][mi].time_s / tag;
  }
  if (qi == Q_AND || qi == Q_AND_IN) {
    *goal = AND_GOAL;
    return m[qi][mi].time_s / (tag < age ? tag : age);
  }
  if (qi == Q_OR) {
    *goal = OR_GOAL;
    return m[qi][mi].time_s / (tag + age);
  }
  if (mi == M_AUTO && (qi == Q_TAG || qi == Q_ABSENT)) {
    *goal = AUTO_GOAL;
    return m[qi][M_AUTO].time_s / m[qi][M_STANDALONE].time_s;
  }
  return 0;
}

/* A query row of run ri; vs (> 0, pair's rows): the time over attrs3-filters'. */
static void query_row(exp_csv_t *csv, const exp_ctx_t *x, const exp_db_params_t *p, int ri, int qi,
                      int mi, int runs, const measured_t *m, double ratio, double goal, double vs) {
  exp_csv_db_params(csv, x, p);
  exp_csv_str(csv, "kind", "query");
  exp_csv_str(csv, "config", RUNS[ri].name);
  exp_csv_u64(csv, "attributes", CONFIG_ATTRS[RUNS[ri].config]);
  exp_csv_str(csv, "query", QUERIES[qi].name);
  exp_csv_str(csv, "method", bfh_method_name(METHODS[mi]));
  exp_csv_str(csv, "method_used", bfh_method_name(m->st.method_used));
  exp_csv_u64(csv, "queries", (uint64_t)runs);
  exp_csv_u64(csv, "results", m->want);
  exp_csv_u64(csv, "wrong", (uint64_t)m->wrong);
  exp_csv_dbl(csv, "time_s", m->time_s);
  exp_csv_dbl(csv, "time_q1_s", m->q1_s);
  exp_csv_dbl(csv, "time_q3_s", m->q3_s);
  exp_csv_u64(csv, "tables_scanned", m->st.tables_scanned);
  exp_csv_u64(csv, "blocks_read", m->st.blocks_read);
  /* The newest K's goal holds its time and blocks read too. */
  int met = ratio <= goal && (qi != Q_NEWEST || (m->time_s <= NEWEST_MAX_S &&
                                                 m->st.blocks_read <= NEWEST_MAX_BLOCKS));
  if (goal > 0) {
    exp_csv_dbl(csv, "ratio", ratio);
    exp_csv_dbl(csv, "ratio_goal", goal);
    exp_csv_str(csv, "goal_met", met ? "yes" : "no");
  }
  if (vs > 0) exp_csv_dbl(csv, "vs_per_attribute", vs);
  exp_csv_row(csv);
  printf(
      "attributes n=%llu %-14s %-7s %-10s %9.3f ms (IQR %.3f-%.3f), %llu keys, %llu tables, "
      "%llu blocks%s",
      (unsigned long long)p->wl.n, RUNS[ri].name, QUERIES[qi].name, bfh_method_name(METHODS[mi]),
      m->time_s * 1e3, m->q1_s * 1e3, m->q3_s * 1e3, (unsigned long long)m->want,
      (unsigned long long)m->st.tables_scanned, (unsigned long long)m->st.blocks_read,
      m->wrong ? ", WRONG" : "");
  if (goal > 0) printf(", ratio %.3f (goal <= %g)%s", ratio, goal, met ? "" : ", goal not met");
  if (vs > 0) printf(", %.3fx attrs3-filters'", vs);
  printf("\n");
}

/* The query rows of run ri over its database in dir (RUNS); out: its measurements, base:
   attrs3-filters', which pair's rows are stated against (vs_per_attribute). */
static int measure_queries(exp_csv_t *csv, const exp_ctx_t *x, const exp_db_params_t *p, int ri,
                           const char *dir, measured_t out[NQUERIES][NMETHODS],
                           measured_t base[NQUERIES][NMETHODS]) {
  const struct run *run = &RUNS[ri];
  bfh_options o;
  options(p, run->config, &o);
  o.attributes = NULL; /* the stored ones */
  o.attribute_count = 0;
  o.standalone_index = run->standalone;
  bfh_db *db = NULL;
  int rc = bfh_open(dir, &o, &db);
  if (rc == BFH_OK) rc = exp_db_settle(db);
  if (rc != BFH_OK) {
    fprintf(stderr, "attributes: open %s: %s\n", dir, bfh_last_error(db));
    bfh_close(db);
    return rc;
  }
  uint64_t n = p->wl.n;
  measured_t(*m)[NMETHODS] = out;
  int runs = x->queries < 5 ? 5 : x->queries > 1000 ? 1000 : x->queries;
  uint64_t want[NQUERIES] = {0};
  for (int qi = 0; qi < NQUERIES; qi++)
    for (uint64_t id = 0; id < n; id++) want[qi] += (uint64_t)QUERIES[qi].holds(id);
  /* The newest K: the last K puts with tag t7 (build's order), newest first. */
  uint64_t newest[NEWEST_K];
  workload_perm_t order;
  workload_perm_init(&order, n, ORDER_SEED);
  want[Q_NEWEST] = 0;
  for (uint64_t i = n; i-- > 0 && want[Q_NEWEST] < NEWEST_K;) {
    uint64_t id = workload_perm_apply(&order, i);
    if (QUERIES[Q_NEWEST].holds(id)) newest[want[Q_NEWEST]++] = id;
  }
  const int rounds[NMETHODS] = {[M_AUTO] = runs, [M_STANDALONE] = runs, [M_SCAN] = SCAN_RUNS};
  const int auto_rounds[NMETHODS] = {[M_AUTO] = runs};
  const int *only = run->standalone ? NULL : PAIR_QUERY;
  if (rc == BFH_OK) rc = run_queries(db, n, only ? auto_rounds : rounds, only, want, newest, m);
  int rc2 = bfh_close(db);
  if (rc != BFH_OK) return rc;
  for (int qi = 0; qi < NQUERIES; qi++)
    for (int mi = 0; mi < NMETHODS; mi++) {
      if ((only && (!only[qi] || mi != M_AUTO)) || !runs_by(qi, mi)) continue;
      double goal, ratio = row_ratio(m, qi, mi, &goal);
      if (only && qi != Q_AND && qi != Q_AND_IN) goal = 0; /* no STANDALONE here */
      double vs = ri == R_PAIR ? m[qi][mi].time_s / base[qi][mi].time_s : 0;
      query_row(csv, x, p, ri, qi, mi, mi == M_SCAN ? SCAN_RUNS : runs, &m[qi][mi], ratio, goal,
                vs);
    }
  return rc2;
}

/* One size: reps rounds of both builds, alternating; then the rows. */
static int measure(exp_csv_t *csv, const exp_ctx_t *x, const exp_db_params_t *p, int reps) {
  char dir[NCONFIGS][1200];
  ingest_time_t t[NCONFIGS][REPS_SMALL];
  for (int c = 0; c < NCONFIGS; c++) {
    char name[64];
    snprintf(name, sizeof name, "attributes-%s-%llu", CONFIG_NAMES[c], (unsigned long long)p->wl.n);
    exp_db_path(x, name, dir[c], sizeof dir[c]);
  }
  int rc = exp_mkdir_p(x->work_dir) == 0 ? BFH_OK : BFH_E_IO;
  for (int r = 0; r < reps && rc == BFH_OK; r++)
    for (int c = 0; c < NCONFIGS && rc == BFH_OK; c++) rc = build(p, c, dir[c], &t[c][r]);
  bfh_db_stats st[NCONFIGS];
  for (int c = 0; c < NCONFIGS && rc == BFH_OK; c++) rc = stats_of(p, c, dir[c], &st[c]);
  for (int c = 0; c < NCONFIGS && rc == BFH_OK; c++)
    qsort(t[c], (size_t)reps, sizeof t[c][0], cmp_time);
  for (int c = 0; c < NCONFIGS && rc == BFH_OK; c++)
    ingest_row(csv, x, p, c, reps, t[c][reps / 2], t[WHOLE][reps / 2], t[ATTRS][reps / 2], &st[c]);
  static measured_t m[NRUNS][NQUERIES][NMETHODS];
  for (int ri = 0; ri < NRUNS && rc == BFH_OK; ri++)
    rc = measure_queries(csv, x, p, ri, dir[RUNS[ri].config], m[ri], m[R_ATTRS_FILTERS]);
  for (int c = 0; c < NCONFIGS && !x->keep_db; c++) exp_rmtree(dir[c]);
  return rc;
}

int exp_attributes(const exp_ctx_t *x) {
  double shrink = 1.0;
  uint64_t n = exp_one_size(x, 10000000, 1000000, 100000, &shrink);
  const char *extra[] = {"kind",
                         "config",
                         "attributes",
                         "reps",
                         "ingest_s",
                         "ingest_us_per_put",
                         "ingest_ratio",
                         "ingest_cpu_s",
                         "ingest_cpu_ratio",
                         "index_bytes",
                         "index_bytes_per_entry",
                         "index_bytes_per_entry_attribute",
                         "memtable_index_bytes",
                         "goal_met",
                         "query",
                         "method",
                         "method_used",
                         "queries",
                         "results",
                         "wrong",
                         "time_s",
                         "time_q1_s",
                         "time_q3_s",
                         "tables_scanned",
                         "blocks_read",
                         "ratio",
                         "ratio_goal",
                         "vs_per_attribute",
                         NULL};
  const char *cols[64];
  exp_cols_cat(cols, 64, EXP_DB_COLS, extra, (const char *const *)NULL);
  exp_csv_t *csv = exp_csv_open_subset(x, "attributes", cols, EXP_CSV_KEY_N);
  if (!csv) return -1;
  exp_db_params_t p;
  exp_db_params_init(&p, x, n);
  exp_db_params_shrink(&p, shrink);
  p.k = 0;                      /* the lean layout's */
  p.wl.order = WORKLOAD_RANDOM; /* the puts' order is a permutation of the keys (entry) */
  p.beyond = 1;
  p.index_bits_per_value = BFH_LEAN_MAP_BITS;
  p.block_maps = 1;
  int rc =
      exp_size_wanted(x, n) ? measure(csv, x, &p, x->scale == EXP_SMALL ? REPS_SMALL : 1) : BFH_OK;
  if (exp_csv_close(csv) != 0) rc = -1;
  if (rc == BFH_OK) rc = exp_plot(x, "attributes");
  return rc == BFH_OK ? 0 : -1;
}

/* Beyond the paper: YCSB's core workloads recast for value search (`bfh run ycsb`).
 *
 * Each workload of workloads/ycsb.h runs on each engine that writes, over each record
 * source, for each method, and every operation is timed into a histogram of its type:
 *   sources   synth and the four Debian data sets (experiments/ycsb_source.h);
 *   queries   by whole value (bfh_search), and on a data set also by one attribute
 *             (bfh_query "NAME = term": words' word, oui's vendor, unicode's name, wordnet's
 *             words); the first term of the chosen record's value is asked.
 *             D asks the newest K (YCSB_NEWEST_K, 10; the CSV's newest_k) of that term
 *             (synth: of the whole value, "value = 'v...'"), bfh_query with newest = K: the
 *             K live records holding it written last, newest first; the record is chosen
 *             under YCSB's latest distribution, so that the records just inserted, and so
 *             their terms, are the likeliest.
 *             E asks ranges of one :range attribute per source, from the chosen record's
 *             first term, as a user of each would:
 *               synth    n BETWEEN a AND b, n the value's number (bytes:1:15:int);
 *               words    word LIKE 'prefix%', a prefix of the word;
 *               oui      oui BETWEEN 'a' AND 'b', a run of assignments (MAC address blocks);
 *               unicode  cp BETWEEN a AND b, a run of code points;
 *               wordnet  words BETWEEN 'a' AND 'b', the synsets of neighbouring words.
 *             A range holds YCSB's scan length, span records drawn uniformly in 1..100: it
 *             ends at the term where the records from its first reach span (so a term of
 *             one record, as a word, a block or a code point is, makes it span terms; a
 *             synth value, of 100 records, one or two). A prefix is the prefix analogue: the
 *             shortest prefix of the word (whole characters) whose words hold at most span
 *             records, or the whole word when even it holds more. CUCKOO answers whole values
 *             only: it has no attribute, newest or range rows; STANDALONE runs a range
 *             itself, and the newest K as AUTO (its method_used says so);
 *   configs   bare (value filters off: the ingest every other config is compared with),
 *             bfh (bfh's defaults: SCAN, LEAVES, HIERARCHY, SLICED and AUTO, one after
 *             another on the same database), standalone (the stand-alone index, engines that
 *             have it), cuckoo (the Cuckoo Index). Each is loaded, then runs A's updates
 *             alone (the same stream, its searches skipped, over records / 5 of its operations,
 *             at least a method's and at most 2M: a tenth of the records updated, through
 *             flushes and compactions; rows of method - and op update,
 *             the ingest under A measured alike with and without the index, as the
 *             searches between A's updates would move the updates' latency by what they do
 *             to the caches), then its methods;
 *   workloads A, B, C, F, E, then D. YCSB runs A, B, C, F and D, then E on a new load: here
 *             the inserting mixes run last on the same database, E first, so that E's
 *             rows are those of a run without D.
 * A configuration's database is loaded once (`records` puts in record order, a flush; the
 * whole value, the query attribute and the range attribute declared), then the workloads
 * run on it one after another, as YCSB runs them, each method with `ops` operations of the
 * same seeded stream (SCAN, the floor, at most scan_ops of them) over the records so far. An
 * update gives its record, and an insert its new record, the value of a record drawn
 * uniformly from the source, so values keep the source's distribution; F's
 * read-modify-write is a search of the record's value, then that update.
 *
 * wrong counts the searches, newest K and ranges whose keys differ from the oracle's
 * (experiments/ycsb_oracle.h), which the driver keeps beside the database: each record's
 * current value and the number of its latest write, per distinct value its records, the
 * source's terms, and for the range attribute the records each term holds. A newest K must
 * be the oracle's K in write order, key by key; on RocksDB, which zeroes the sequence
 * numbers of what it compacts into its bottom level, those keys rank oldest in key order
 * (doc/query.md "The newest K"), and the check allows it (ycsb_oracle_newest_ok). Latency:
 * p50, p95 and p99 of every operation of the run (util/histogram.h, within 1%). A query's
 * callback copies each key (ycsb_collect_key), and the oracle checks them after the query's
 * time is taken: the check's lookups, about a microsecond a key, are the benchmark's own, not
 * the query's. ycsb_cdf.csv holds each row's quantiles from 1% to 99.9% for the CDF plots.
 *
 * Sizes: small 10k records, medium 1M, paper 10M (--scale N: N). Each method runs records /
 * 100 operations, at least 400 and at most 2,000 (2,000 put 20 operations above a p99), the
 * methods that read whole tables half as many (LEAVES, HIERARCHY and SLICED: 7-30 ms an
 * operation at 1M on a value every table holds, and on LevelDB, whose tables are at least
 * 1 MiB, a few ms at 10k; they took 130 of the 176 s of the small scale at 400), and SCAN 40
 * below 1M records, 20 below 10M, else 10; with --queries Q, Q operations (SCAN at most Q).
 * Up to 100k records the memtable and tables are 64 KiB (LevelDB's at least 1 MiB), so that
 * the records fill tables; above, bfh's defaults.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "experiments/drivers.h"
#include "experiments/exp.h"
#include "experiments/ycsb_oracle.h"
#include "experiments/ycsb_source.h"
#include "util/histogram.h"
#include "workloads/ycsb.h"

#define YCSB_SEED 0x796373620ull

/* YCSB's order, the inserting mixes last: E, then D (above). */
static const char YCSB_WORKLOADS[] = "ABCFED";

typedef struct config {
  const char *name;
  int value_filters, standalone, cuckoo;
  bfh_method methods[5];
  int nmethods;
} config_t;

static const config_t CONFIGS[] = {
    {"bare", 0, 0, 0, {0}, 0},
    {"bfh", 1, 0, 0, {BFH_SEARCH_SCAN, BFH_SEARCH_LEAVES, BFH_SEARCH_HIERARCHY, BFH_SEARCH_SLICED,
                      BFH_SEARCH_AUTO}, 5},
    {"standalone", 1, 1, 0, {BFH_SEARCH_STANDALONE}, 1},
    {"cuckoo", 1, 0, 1, {BFH_SEARCH_CUCKOO}, 1},
};
#define NCONFIGS (sizeof CONFIGS / sizeof CONFIGS[0])

/* ---- --series: a part of the run ------------------------------------------------------------
   The names a run may be narrowed to: the sources, then bare and the methods. A list that
   names a source runs only the sources it names, and one that names a method (or bare) only
   those; a kind it names none of runs whole. */

static const char *const METHOD_SERIES[] = {"bare",   "scan", "leaves",     "hierarchy",
                                            "sliced", "auto", "standalone", "cuckoo"};
#define NMETHOD_SERIES (sizeof METHOD_SERIES / sizeof METHOD_SERIES[0])

const char *exp_ycsb_series_at(size_t i) {
  if (i == 0) return "synth";
  if (i < YCSB_SOURCES) return dataset_name((dataset_kind_t)(i - 1));
  return i - YCSB_SOURCES < NMETHOD_SERIES ? METHOD_SERIES[i - YCSB_SOURCES] : NULL;
}

/* Whether x's --series names any of the names [from, to) of exp_ycsb_series_at. */
static int names_any(const exp_ctx_t *x, size_t from, size_t to) {
  for (size_t i = from; i < to; i++)
    if (exp_sweep_series_wanted(x, exp_ycsb_series_at(i))) return 1;
  return 0;
}

/* Whether the run takes series name i of its kind (a source, or a method or bare). */
static int series_taken(const exp_ctx_t *x, size_t i) {
  const int source = i < YCSB_SOURCES;
  const size_t from = source ? 0 : YCSB_SOURCES,
               to = source ? YCSB_SOURCES : YCSB_SOURCES + NMETHOD_SERIES;
  return !x->series || !names_any(x, from, to) || exp_sweep_series_wanted(x, exp_ycsb_series_at(i));
}

static int method_taken(const exp_ctx_t *x, bfh_method m) {
  return series_taken(x, YCSB_SOURCES + 1 + (size_t)m); /* METHOD_SERIES in bfh_method order */
}

/* cfg's methods that the run takes into *out; 1 if the configuration runs (bare: when taken). */
static int config_taken(const exp_ctx_t *x, const config_t *cfg, config_t *out) {
  *out = *cfg;
  if (cfg->nmethods == 0) return series_taken(x, YCSB_SOURCES); /* bare */
  out->nmethods = 0;
  for (int m = 0; m < cfg->nmethods; m++)
    if (method_taken(x, cfg->methods[m])) out->methods[out->nmethods++] = cfg->methods[m];
  return out->nmethods > 0;
}

typedef struct scale {
  uint64_t records, ops, scan_ops;
  uint64_t table_ops; /* LEAVES, HIERARCHY and SLICED, which read whole tables */
  uint64_t alone_ops; /* A's stream for its updates alone (half of them updates) */
  size_t memtable_bytes; /* and table bytes; 0: the engine's defaults */
} scale_t;

/* What a search asks: the whole value, the query attribute's term, E's range, or D's newest
   K of the query attribute's term (synth: of the whole value). */
typedef enum query { QUERY_VALUE, QUERY_TERM, QUERY_RANGE, QUERY_NEWEST } query_t;

/* What one method's run measured. */
typedef struct run {
  histogram_t h[YCSB_OPS];
  uint64_t wrong, ops;
  double seconds;
  ycsb_keys_t keys; /* the keys of the query under way, checked after it (ycsb_collect_key) */
  double unclocked; /* of the operation under way: the seconds its checks took */
} run_t;

/* The check c of the keys collected in out, not timed: its seconds go to out->unclocked. */
static int check_keys(run_t *out, ycsb_check_t *c) {
  const double t0 = exp_now();
  int rc = ycsb_check_collected(c, &out->keys);
  out->unclocked += exp_now() - t0;
  return rc;
}

/* Where one method's operations go: the database, the method, how its searches are asked,
   and whether the engine zeroes compacted sequence numbers (ycsb_oracle_newest_ok);
   updates_only: the stream's updates alone, its other operations skipped (bare's A). */
typedef struct target {
  bfh_db *db;
  ycsb_oracle_t *o;
  bfh_method method;
  query_t q;
  int zeroed;
  int updates_only;
} target_t;

/* Searches value number v, checks the keys; BFH_OK or the failure. */
static int run_search(const target_t *t, uint64_t v, run_t *out) {
  ycsb_oracle_t *o = t->o;
  char buf[WORKLOAD_MAX_BYTES];
  size_t len;
  const char *val = ycsb_source_value(o->src, v, buf, &len);
  ycsb_check_t c = {.o = o, .kind = YCSB_CHECK_VALUE, .vid = o->src->vid[v]};
  o->check++;
  int rc = bfh_search(t->db, val, len, t->method, ycsb_collect_key, &out->keys, NULL);
  if (rc == BFH_OK) rc = check_keys(out, &c);
  if (rc != BFH_OK) return rc;
  out->wrong += c.bad || c.found != o->holders[c.vid].n;
  return BFH_OK;
}

/* The predicate asking for term tid of the query attribute: NAME = literal. */
static size_t term_expr(const ycsb_terms_t *t, uint64_t tid, char *buf, size_t cap) {
  size_t n = (size_t)snprintf(buf, cap, "%s = ", t->spec.name);
  return n < cap && ycsb_terms_literal(t, tid, SIZE_MAX, "", buf, cap, &n) ? n : 0;
}

/* The predicate asking for value number v's first term of the query attribute into expr, and
   the check of its keys; 0 (said on stderr) when it has none that fits. */
static int attr_expr(const ycsb_oracle_t *o, uint64_t v, char *expr, size_t cap, ycsb_check_t *c) {
  const ycsb_terms_t *t = &o->src->query;
  const u64vec_t *tids = &t->vid_tids[o->src->vid[v]];
  if (tids->n == 0 || term_expr(t, tids->v[0], expr, cap) == 0) {
    fprintf(stderr, "bfh: ycsb: %s: value %llu has no %s term that fits a query\n", o->src->name,
            (unsigned long long)v, t->spec.name);
    return 0;
  }
  c->kind = YCSB_CHECK_TERM;
  c->tid = tids->v[0];
  return 1;
}

/* Queries the query attribute for the first term of value number v, checks the keys. */
static int run_attr_search(const target_t *t, uint64_t v, run_t *out) {
  ycsb_oracle_t *o = t->o;
  char expr[4096];
  ycsb_check_t c = {.o = o};
  if (!attr_expr(o, v, expr, sizeof expr, &c)) return BFH_E_INVALID;
  o->check++;
  int rc = bfh_query(t->db, expr, t->method, 0, ycsb_collect_key, &out->keys, NULL);
  if (rc == BFH_OK) rc = check_keys(out, &c);
  if (rc != BFH_OK) return rc;
  out->wrong += c.bad || c.found != ycsb_oracle_term_count(o, c.tid);
  return BFH_OK;
}

/* The predicate asking for value number v as the declared whole value: value = 'bytes'. */
static int value_expr(const ycsb_oracle_t *o, uint64_t v, char *expr, size_t cap, ycsb_check_t *c) {
  char buf[WORKLOAD_MAX_BYTES];
  size_t len, n = (size_t)snprintf(expr, cap, "value = ");
  const char *val = ycsb_source_value(o->src, v, buf, &len);
  if (!ycsb_literal(val, len, "", expr, cap, &n)) {
    fprintf(stderr, "bfh: ycsb: %s: value %llu does not fit a query\n", o->src->name,
            (unsigned long long)v);
    return 0;
  }
  c->kind = YCSB_CHECK_VALUE;
  c->vid = o->src->vid[v];
  return 1;
}

/* D's newest K of record r's query attribute term (synth: its whole value): the keys must be
   the oracle's K in write order; *seconds the query's time. */
static int run_newest(const target_t *t, uint64_t r, run_t *out, double *seconds) {
  ycsb_oracle_t *o = t->o;
  char expr[4096];
  uint64_t order[YCSB_NEWEST_K];
  ycsb_check_t c = {.o = o, .order = order, .k = YCSB_NEWEST_K};
  const int made = o->src->query.decl ? attr_expr(o, o->value[r], expr, sizeof expr, &c)
                                      : value_expr(o, o->value[r], expr, sizeof expr, &c);
  if (!made) return BFH_E_INVALID;
  o->check++;
  const double t0 = exp_now();
  int rc = bfh_query(t->db, expr, t->method, YCSB_NEWEST_K, ycsb_collect_key, &out->keys, NULL);
  *seconds = exp_now() - t0;
  if (rc == BFH_OK) rc = check_keys(out, &c);
  if (rc != BFH_OK) return rc;
  out->wrong += !ycsb_oracle_newest_ok(o, &c, t->zeroed);
  return BFH_OK;
}

/* E's range from record r's value: the predicate into expr and the ranks it covers. */
static int range_expr(const ycsb_oracle_t *o, uint64_t r, uint32_t span, char *expr, size_t cap,
                      uint64_t *lo, uint64_t *hi) {
  const ycsb_terms_t *t = &o->src->range;
  const u64vec_t *tids = &t->vid_tids[o->src->vid[o->value[r]]];
  if (tids->n == 0) return 0;
  const uint64_t tid = tids->v[0];
  size_t n = (size_t)snprintf(expr, cap, "%s ", t->spec.name);
  size_t plen = o->src->prefix ? ycsb_oracle_prefix(o, tid, span, lo, hi) : 0;
  if (plen) {
    n += (size_t)snprintf(expr + n, cap - n, "LIKE ");
    return ycsb_terms_literal(t, tid, plen, "%", expr, cap, &n);
  }
  *lo = t->rank[tid];
  *hi = ycsb_oracle_range_end(o, *lo, span);
  n += (size_t)snprintf(expr + n, cap - n, "BETWEEN ");
  if (!ycsb_terms_literal(t, tid, SIZE_MAX, "", expr, cap, &n) || n + 5 >= cap) return 0;
  n += (size_t)snprintf(expr + n, cap - n, " AND ");
  return ycsb_terms_literal(t, t->by_rank[*hi], SIZE_MAX, "", expr, cap, &n);
}

/* E's range of span records from record r's value, checks the keys; *seconds the query's
   time (choosing the range and counting its records are not timed). */
static int run_range(const target_t *t, uint64_t r, uint32_t span, run_t *out, double *seconds) {
  ycsb_oracle_t *o = t->o;
  char expr[8192];
  ycsb_check_t c = {.o = o, .kind = YCSB_CHECK_RANGE};
  if (!range_expr(o, r, span, expr, sizeof expr, &c.lo, &c.hi)) {
    fprintf(stderr, "bfh: ycsb: %s: record %llu has no %s term that fits a range\n", o->src->name,
            (unsigned long long)r, o->src->range.spec.name);
    return BFH_E_INVALID;
  }
  const uint64_t expected = ycsb_oracle_range_count(o, c.lo, c.hi);
  o->check++;
  const double t0 = exp_now();
  int rc = bfh_query(t->db, expr, t->method, 0, ycsb_collect_key, &out->keys, NULL);
  *seconds = exp_now() - t0;
  if (rc == BFH_OK) rc = check_keys(out, &c);
  if (rc != BFH_OK) return rc;
  if (c.bad || c.found != expected) {
    if (out->wrong++ == 0)
      fprintf(stderr, "bfh: ycsb: %s by %s: %llu keys%s, the oracle's %llu\n", expr,
              exp_method_name(t->method), (unsigned long long)c.found,
              c.bad ? ", one not among them" : "", (unsigned long long)expected);
  }
  return BFH_OK;
}

/* Record r gets value number v (first: a new record, already known to the oracle). */
static int run_put(const target_t *t, uint64_t r, uint64_t v, int first) {
  char key[YCSB_MAX_KEY], buf[WORKLOAD_MAX_BYTES];
  size_t kn = ycsb_source_key(t->o->src, r, key), len;
  const char *val = ycsb_source_value(t->o->src, v, buf, &len);
  int rc = bfh_put(t->db, key, kn, val, len);
  return rc == BFH_OK ? ycsb_oracle_set(t->o, r, v, first) : rc;
}

/* One operation on record r (v: the value an update or insert gives); *seconds its time. */
static int run_op(const target_t *t, ycsb_op_t op, uint64_t r, uint32_t span, uint64_t v,
                  run_t *out, double *seconds) {
  if (op == YCSB_RANGE) return run_range(t, r, span, out, seconds);
  if (op == YCSB_NEWEST) return run_newest(t, r, out, seconds);
  const double t0 = exp_now();
  int rc = BFH_OK;
  if (op == YCSB_SEARCH || op == YCSB_RMW)
    rc = t->q == QUERY_TERM ? run_attr_search(t, t->o->value[r], out)
                            : run_search(t, t->o->value[r], out);
  if (rc == BFH_OK && (op == YCSB_UPDATE || op == YCSB_RMW)) rc = run_put(t, r, v, 0);
  if (op == YCSB_INSERT) {
    rc = ycsb_oracle_insert(t->o, r);
    if (rc == BFH_OK) rc = run_put(t, r, v, 1);
  }
  *seconds = exp_now() - t0;
  return rc;
}

/* The operations of one method: nops of workload w's stream over the records so far. */
static int run_method(const target_t *t, const ycsb_mix_t *mix, uint64_t nops, run_t *out) {
  for (int i = 0; i < YCSB_OPS; i++) histogram_init(&out->h[i]);
  out->wrong = out->ops = 0;
  ycsb_gen_t g;
  ycsb_gen_init(&g, mix, t->o->n, nops, YCSB_SEED);
  rng_t pick;
  rng_init(&pick, YCSB_SEED + 1);
  int rc = BFH_OK;
  double start = exp_now(), unclocked = 0;
  for (uint64_t i = 0; i < nops && rc == BFH_OK; i++) {
    uint64_t r;
    uint32_t span;
    ycsb_op_t op = ycsb_gen_next(&g, &r, &span);
    uint64_t v = rng_below(&pick, t->o->src->nvalues);
    if (t->updates_only && op != YCSB_UPDATE) continue;
    double seconds = 0;
    out->unclocked = 0;
    rc = run_op(t, op, r, span, v, out, &seconds);
    if (op == YCSB_SEARCH || op == YCSB_RMW) seconds -= out->unclocked; /* else not in it */
    unclocked += out->unclocked;
    histogram_record(&out->h[op], (uint64_t)(seconds * 1e9));
    out->ops++;
  }
  out->seconds = exp_now() - start - unclocked;
  return rc;
}

/* Declaration decl (NAME=EXTRACTOR) as an attribute, its name copied into name. */
static bfh_attribute attribute(const char *decl, char name[ATTR_NAME_MAX_BYTES + 1]) {
  const char *eq = strchr(decl, '=');
  const size_t n = (size_t)(eq - decl);
  memcpy(name, decl, n);
  name[n] = '\0';
  return (bfh_attribute){name, eq + 1};
}

/* What a source's database declares, as a user asking its queries would: the whole value,
   the query attribute (data sets), and the range attribute, which is the query attribute
   declared with :range when they share a name. Returns the count. */
static size_t declare(const ycsb_source_t *s, bfh_attribute attrs[3],
                      char names[2][ATTR_NAME_MAX_BYTES + 1]) {
  size_t n = 0;
  attrs[n++] = (bfh_attribute){"value", "value"};
  if (s->query.decl && strcmp(s->query.spec.name, s->range.spec.name) != 0)
    attrs[n++] = attribute(s->query.decl, names[0]);
  attrs[n++] = attribute(s->range.decl, names[1]);
  return n;
}

/* The database of one configuration, loaded with the source's records (bare: nothing
   declared, no value filters). */
static int load(bfh_engine engine, const config_t *cfg, ycsb_oracle_t *o, const scale_t *sc,
                const char *dir, bfh_db **db, double *us_per_record) {
  bfh_options opt;
  bfh_options_init(&opt);
  opt.engine = engine;
  if (sc->memtable_bytes) opt.memtable_bytes = opt.table_bytes = sc->memtable_bytes;
  opt.create_if_missing = 1;
  opt.value_filters = cfg->value_filters;
  opt.standalone_index = cfg->standalone;
  opt.cuckoo_index = cfg->cuckoo;
  bfh_attribute attrs[3];
  char names[2][ATTR_NAME_MAX_BYTES + 1];
  if (cfg->value_filters) {
    opt.attributes = attrs;
    opt.attribute_count = declare(o->src, attrs, names);
  }
  exp_rmtree(dir);
  int rc = bfh_open(dir, &opt, db);
  if (rc != BFH_OK) return rc;
  double t0 = exp_now();
  for (uint64_t r = 0; r < o->src->n && rc == BFH_OK; r++) {
    char key[YCSB_MAX_KEY], buf[WORKLOAD_MAX_BYTES];
    size_t kn = ycsb_source_key(o->src, r, key), len;
    uint64_t v = ycsb_source_initial(o->src, r);
    const char *val = ycsb_source_value(o->src, v, buf, &len);
    rc = bfh_put(*db, key, kn, val, len);
    if (rc == BFH_OK) rc = ycsb_oracle_set(o, r, v, 1);
  }
  if (rc == BFH_OK) rc = bfh_flush(*db);
  *us_per_record = (exp_now() - t0) * 1e6 / (double)o->src->n;
  if (rc == BFH_OK) rc = exp_engine_is_own(engine) ? exp_db_quiesce(*db) : exp_db_settle(*db);
  return rc;
}

static const char *const COLS[] = {"workload", "dataset", "query", "engine", "config", "method", "op",
                                   "records", "ops", "p50_us", "p95_us", "p99_us", "mean_us",
                                   "ops_per_s", "wrong", "load_us_per_record",
                                   "index_bytes_per_entry", "newest_k", "scale", NULL};
static const char *const CDF_COLS[] = {"workload", "dataset", "query", "engine", "method", "op",
                                       "quantile", "latency_us", "scale", NULL};
static const double CDF_Q[] = {0.01, 0.05, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8,
                               0.9,  0.95, 0.97, 0.99, 0.995, 0.999};

typedef struct row_ctx {
  const exp_ctx_t *x;
  exp_csv_t *csv, *cdf;
  char workload[2];
  const char *source, *engine;
  const char *query; /* query_name */
  uint64_t records;
} row_ctx_t;

static void row_common(const row_ctx_t *k, exp_csv_t *c) {
  exp_csv_str(c, "workload", k->workload);
  exp_csv_str(c, "dataset", k->source);
  exp_csv_str(c, "query", k->query);
  exp_csv_str(c, "engine", k->engine);
  exp_csv_str(c, "scale", exp_scale_name(k->x->scale));
}

/* The rows of one method's run: one per operation type it ran. */
static void write_rows(const row_ctx_t *k, const config_t *cfg, const char *method, const run_t *run,
                       double load_us, double index_bpe) {
  for (int t = 0; t < YCSB_OPS; t++) {
    const histogram_t *h = &run->h[t];
    if (h->count == 0) continue;
    row_common(k, k->csv);
    exp_csv_str(k->csv, "config", cfg->name);
    exp_csv_str(k->csv, "method", method);
    exp_csv_str(k->csv, "op", ycsb_op_name((ycsb_op_t)t));
    exp_csv_u64(k->csv, "records", k->records);
    exp_csv_u64(k->csv, "ops", h->count);
    exp_csv_dbl(k->csv, "p50_us", (double)histogram_quantile(h, 0.5) / 1e3);
    exp_csv_dbl(k->csv, "p95_us", (double)histogram_quantile(h, 0.95) / 1e3);
    exp_csv_dbl(k->csv, "p99_us", (double)histogram_quantile(h, 0.99) / 1e3);
    exp_csv_dbl(k->csv, "mean_us", histogram_mean(h) / 1e3);
    exp_csv_dbl(k->csv, "ops_per_s", (double)run->ops / run->seconds);
    exp_csv_u64(
        k->csv, "wrong",
        t == YCSB_SEARCH || t == YCSB_RMW || t == YCSB_RANGE || t == YCSB_NEWEST ? run->wrong : 0);
    if (t == YCSB_NEWEST) exp_csv_u64(k->csv, "newest_k", YCSB_NEWEST_K);
    exp_csv_dbl(k->csv, "load_us_per_record", load_us);
    exp_csv_dbl(k->csv, "index_bytes_per_entry", index_bpe);
    exp_csv_row(k->csv);
    for (size_t q = 0; q < sizeof CDF_Q / sizeof CDF_Q[0]; q++) {
      row_common(k, k->cdf);
      exp_csv_str(k->cdf, "method", method);
      exp_csv_str(k->cdf, "op", ycsb_op_name((ycsb_op_t)t));
      exp_csv_dbl(k->cdf, "quantile", CDF_Q[q]);
      exp_csv_dbl(k->cdf, "latency_us", (double)histogram_quantile(h, CDF_Q[q]) / 1e3);
      exp_csv_row(k->cdf);
    }
  }
}

/* How workload w's searches are asked on source s (into qs): E's ranges of the range
   attribute; D's newest K of the query attribute (synth: of the whole value); the others'
   searches by value, and on a data set by the query attribute too. Returns the count. */
static int workload_queries(const ycsb_source_t *s, char w, query_t qs[2]) {
  if (w == 'E' || w == 'D') {
    qs[0] = w == 'E' ? QUERY_RANGE : QUERY_NEWEST;
    return 1;
  }
  qs[0] = QUERY_VALUE;
  qs[1] = QUERY_TERM;
  return s->query.decl ? 2 : 1;
}

/* The query column: "value", or the attribute asked. */
static const char *query_name(const ycsb_source_t *s, query_t q) {
  if (q == QUERY_NEWEST) q = s->query.decl ? QUERY_TERM : QUERY_VALUE;
  return q == QUERY_VALUE ? "value" : q == QUERY_TERM ? s->query.spec.name : s->range.spec.name;
}

/* One configuration: load, then workloads A, B, C, F, E and D one after another on the
   database, each with every method of the configuration. Returns BFH_OK, the
   failure, or BFH_E_UNSUPPORTED when the engine does not have the configuration's index. */
static int run_config(row_ctx_t *k, bfh_engine engine, const config_t *cfg, ycsb_source_t *src,
                      const scale_t *sc, uint64_t *wrong) {
  char dir[1200];
  snprintf(dir, sizeof dir, "%s/ycsb-%s-%s-%s", k->x->work_dir, k->engine, src->name, cfg->name);
  ycsb_oracle_t o;
  int rc = ycsb_oracle_init(&o, src);
  bfh_db *db = NULL;
  double load_us = 0;
  if (rc == BFH_OK) rc = load(engine, cfg, &o, sc, dir, &db, &load_us);
  bfh_db_stats st;
  memset(&st, 0, sizeof st);
  if (rc == BFH_OK) bfh_stats(db, &st);
  double bpe = (double)st.index_bytes / (double)src->n;
  if (rc == BFH_OK && cfg->nmethods == 0) { /* bare: the ingest alone */
    k->workload[0] = '-';
    k->query = "-";
    row_common(k, k->csv);
    exp_csv_str(k->csv, "config", cfg->name);
    exp_csv_str(k->csv, "op", "load");
    exp_csv_u64(k->csv, "records", k->records);
    exp_csv_dbl(k->csv, "load_us_per_record", load_us);
    exp_csv_u64(k->csv, "wrong", 0);
    exp_csv_row(k->csv);
  }
  run_t *run = calloc(1, sizeof *run);
  if (!run) rc = BFH_E_NOMEM;
  /* RocksDB zeroes the sequence numbers of what it compacts into its bottom level */
  const int zeroed = engine == BFH_ENGINE_ROCKSDB;
  if (rc == BFH_OK) { /* A's updates alone: the ingest under A, bare's the baseline */
    k->workload[0] = 'A';
    k->query = "-";
    const target_t t = {.db = db, .o = &o, .zeroed = zeroed, .updates_only = 1};
    exp_progress("ycsb %s %s %s A: updates alone", k->engine, src->name, cfg->name);
    rc = run_method(&t, ycsb_mix('A'), sc->alone_ops, run);
    exp_progress_done();
    if (rc == BFH_OK) write_rows(k, cfg, "-", run, load_us, bpe);
  }
  for (const char *w = YCSB_WORKLOADS; *w && cfg->nmethods && rc == BFH_OK; w++) {
    k->workload[0] = *w;
    query_t qs[2];
    const int nq = workload_queries(src, *w, qs);
    for (int q = 0; q < nq && rc == BFH_OK; q++) {
      k->query = query_name(src, qs[q]);
      for (int m = 0; m < cfg->nmethods && rc == BFH_OK; m++) {
        bfh_method method = cfg->methods[m];
        uint64_t nops = method == BFH_SEARCH_SCAN ? sc->scan_ops
                        : method == BFH_SEARCH_LEAVES || method == BFH_SEARCH_HIERARCHY ||
                                method == BFH_SEARCH_SLICED
                            ? sc->table_ops
                            : sc->ops;
        exp_progress("ycsb %s %s %c by %s: %s", k->engine, src->name, *w, k->query,
                     exp_method_name(method));
        const target_t t = {.db = db, .o = &o, .method = method, .q = qs[q], .zeroed = zeroed};
        rc = run_method(&t, ycsb_mix(*w), nops, run);
        exp_progress_done();
        if (rc == BFH_OK) {
          write_rows(k, cfg, exp_method_name(method), run, load_us, bpe);
          *wrong += run->wrong;
          if (run->wrong)
            fprintf(stderr, "bfh: ycsb %s %s %s %c by %s: %s: %llu wrong of %llu operations\n",
                    k->engine, src->name, cfg->name, *w, k->query, exp_method_name(method),
                    (unsigned long long)run->wrong, (unsigned long long)run->ops);
        } else if (rc == BFH_E_UNSUPPORTED && qs[q] != QUERY_VALUE) {
          rc = BFH_OK; /* a rival that answers whole values only: no row */
        }
      }
    }
  }
  if (run) ycsb_keys_release(&run->keys);
  free(run);
  if (db) bfh_close(db);
  ycsb_oracle_release(&o);
  exp_db_drop(k->x, dir);
  if (rc != BFH_OK && rc != BFH_E_UNSUPPORTED)
    fprintf(stderr, "bfh: ycsb %s %s %s: %s: %s\n", k->engine, src->name, cfg->name,
            bfh_strerror(rc), bfh_last_error(NULL));
  return rc;
}

int exp_ycsb(const exp_ctx_t *x) {
  static const uint64_t RECORDS[EXP_NSCALES] = {10000, 1000000, 10000000};
  scale_t sc = {.records = x->n ? x->n : RECORDS[x->scale]};
  sc.ops = sc.records / 100 < 400 ? 400 : sc.records / 100 > 2000 ? 2000 : sc.records / 100;
  sc.scan_ops = sc.records < 1000000 ? 40 : sc.records < 10000000 ? 20 : 10;
  sc.table_ops = sc.ops / 2;
  /* A tenth of the records updated: enough flushes and compactions that the ingest is the
     index's sustained cost, not the first writes' into an empty memtable; at most 1M. */
  sc.alone_ops = sc.records / 5 > 2000000 ? 2000000 : sc.records / 5;
  if (sc.alone_ops < sc.ops) sc.alone_ops = sc.ops;
  if (x->queries_given) { /* --queries Q: Q operations a method, SCAN's at most Q */
    sc.ops = sc.table_ops = (uint64_t)x->queries;
    if (sc.scan_ops > sc.ops) sc.scan_ops = sc.ops;
  }
  sc.memtable_bytes = sc.records <= 100000 ? 64 << 10 : 0;
  if (exp_mkdir_p(x->work_dir) != 0) {
    fprintf(stderr, "bfh: ycsb: cannot create %s\n", x->work_dir);
    return 1;
  }
  exp_csv_t *csv = exp_csv_open(x, "ycsb", COLS), *cdf = exp_csv_open(x, "ycsb_cdf", CDF_COLS);
  if (!csv || !cdf) {
    exp_csv_close(csv);
    exp_csv_close(cdf);
    return 1;
  }
  row_ctx_t k = {.x = x, .csv = csv, .cdf = cdf, .records = sc.records};
  uint64_t wrong = 0;
  int failed = 0;
  for (int s = 0; s < YCSB_SOURCES && !failed; s++) {
    if (!series_taken(x, (size_t)s)) continue;
    ycsb_source_t src;
    if (ycsb_source_open(&src, s, sc.records, YCSB_SEED) != BFH_OK) {
      ycsb_source_close(&src);
      failed = 1;
      break;
    }
    k.source = src.name;
    static const bfh_engine ENGINES[] = {BFH_ENGINE_LSM, BFH_ENGINE_LEVELDB, BFH_ENGINE_ROCKSDB};
    for (size_t e = 0; e < 3 && !failed; e++) {
      bfh_engine engine = ENGINES[e];
      if (!exp_engine_can(engine, BFH_ENGINE_CAN_WRITE)) continue;
      if (x->engine_given && engine != x->engine) continue;
      k.engine = exp_engine_name(engine);
      for (size_t c = 0; c < NCONFIGS && !failed; c++) {
        if (CONFIGS[c].standalone && !exp_engine_can(engine, BFH_ENGINE_CAN_STANDALONE)) continue;
        config_t cfg;
        if (!config_taken(x, &CONFIGS[c], &cfg)) continue;
        int rc = run_config(&k, engine, &cfg, &src, &sc, &wrong);
        failed = rc != BFH_OK && !(CONFIGS[c].cuckoo && rc == BFH_E_UNSUPPORTED);
      }
    }
    ycsb_source_close(&src);
  }
  int rc = exp_csv_close(csv) | exp_csv_close(cdf);
  if (!failed) {
    printf("ycsb: %llu records per source, workloads %s: %llu wrong search%s\n",
           (unsigned long long)sc.records, YCSB_WORKLOADS, (unsigned long long)wrong,
           wrong == 1 ? "" : "es");
    exp_plot(x, "ycsb");
    exp_plot(x, "ycsb_cdf");
  }
  return failed || rc || wrong ? 1 : 0;
}

/* Beyond the paper: YCSB's core workloads recast for value search (`bfh run ycsb`).
 *
 * Each workload of workloads/ycsb.h runs on each engine that writes, over each record
 * source, for each method, and every operation is timed into a histogram of its type:
 *   sources   synth (the paper's Key<i>/Value<v> with a 1% domain, about 100 keys per value)
 *             and the four Debian data sets of workloads/dataset.h;
 *   queries   by whole value (bfh_search), and on a data set also by one attribute
 *             (bfh_query "NAME = term", QUERY_ATTR: words' word, oui's vendor, unicode's
 *             name, wordnet's words), the database declaring `value` and that attribute;
 *             the first term of the chosen record's value is asked. CUCKOO answers whole
 *             values only: it has no attribute rows;
 *   configs   bare (value filters off: the ingest every other config is compared with),
 *             bfh (bfh's defaults: SCAN, LEAVES, HIERARCHY, SLICED and AUTO, one after
 *             another on the same database), standalone (the stand-alone index, engines that
 *             have it), cuckoo (the Cuckoo Index);
 *   workloads A, B, C and F. D (newest K) and E (ranges) wait for those queries.
 * A configuration's database is loaded once (`records` puts in record order, a flush), then
 * the workloads run on it one after another, as YCSB runs them, each method with `ops`
 * operations of the same seeded stream (SCAN, the floor, at most scan_ops of them). An update gives its record the value of a record
 * drawn uniformly from the source, so values keep the source's distribution; F's
 * read-modify-write is a search of the record's value, then that update.
 *
 * wrong counts the searches whose keys differ from the oracle's, which the driver keeps
 * beside the database: each record's current value and, per distinct value, its records;
 * for attribute queries each distinct value's terms, extracted once by the extractor the
 * database runs at each put (query/attr.h), and per term the values holding it.
 * Latency: p50, p95 and p99 of every operation of the run (util/histogram.h, within 1%);
 * ycsb_cdf.csv holds each row's quantiles from 1% to 99.9% for the CDF plots.
 *
 * Sizes: small 10k records, medium 1M, paper 10M (--scale N: N). Each method runs records /
 * 100 operations, at least 400 (SCAN 40 below 1M records, 20 below 10M, else 10); with
 * --queries Q, Q operations (SCAN at most Q). Up to 100k records the memtable and tables are
 * 64 KiB, so that the records fill tables; above, bfh's defaults.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "experiments/drivers.h"
#include "experiments/exp.h"
#include "filters/hash.h"
#include "query/attr.h"
#include "util/histogram.h"
#include "util/u64_map.h"
#include "util/vec.h"
#include "workloads/dataset.h"
#include "workloads/ycsb.h"

#define SOURCES (1 + DATASET_KINDS) /* synth, then the data sets */
#define SYNTH_DOMAIN_PCT 1.0
#define YCSB_SEED 0x796373620ull

static const char YCSB_WORKLOADS[] = "ABCF";

/* ---- record sources ------------------------------------------------------------------------ */

/* Records 0..n-1 of one source, and the values an update draws from: value numbers
   0..nvalues-1, each with its distinct-value id (vid), equal values one vid. */
typedef struct source {
  const char *name;
  dataset_t *ds;         /* NULL: synth */
  workload_t wl;         /* synth */
  uint64_t n, nvalues;
  workload_perm_t spread; /* data sets: record r < count reads the set's record spread(r) */
  uint32_t *vid;         /* [nvalues] */
  uint64_t nvids;
  /* Data sets: the attribute queried by name (QUERY_ATTR), and its terms: each distinct
     term a term id (tid), its bytes text[off[tid], off[tid + 1]); per vid the tids of its
     value, per tid the vids holding it. */
  const char *qdecl; /* NULL: synth, searched by value only */
  attr_spec_t qspec;
  int has_qspec;
  char *text;
  u64vec_t off;
  u64vec_t *vid_tids; /* [nvids] */
  u64vec_t tid_vids_all; /* every tid's vids, back to back: tid's at tid_at[tid], tid_n[tid] */
  uint64_t *tid_at, *tid_n;
} source_t;

/* The attribute each data set is queried by, a declaration of dataset_attrs: a selective
   one, so that an answer is a few records, as YCSB's reads are (a vendor's blocks, the
   synsets holding a word). */
static const char *const QUERY_ATTR[DATASET_KINDS] = {
    [DATASET_WORDS] = "word=json:word",
    [DATASET_OUI] = "vendor=csv:3",
    [DATASET_UNICODE] = "name=json:name",
    [DATASET_WORDNET] = "words=json:words",
};

/* The data set's record behind record r (its key has the cycle appended past the count). */
static uint64_t set_index(const source_t *s, uint64_t r) {
  return r < dataset_count(s->ds) ? workload_perm_apply(&s->spread, r) : r;
}

static size_t source_key(const source_t *s, uint64_t r, char *buf) {
  if (!s->ds) return workload_key(&s->wl, r, buf);
  size_t kn, vn;
  const char *v;
  dataset_record(s->ds, set_index(s, r), buf, &kn, &v, &vn);
  return kn;
}

/* Value number v's bytes: borrowed from the data set, or formatted into buf. */
static const char *source_value(const source_t *s, uint64_t v, char *buf, size_t *len) {
  if (!s->ds) {
    *len = workload_value(&s->wl, v, buf);
    return buf;
  }
  char key[DATASET_MAX_KEY];
  size_t kn;
  const char *val;
  dataset_record(s->ds, v, key, &kn, &val, len);
  return val;
}

/* Record r's value number at the load. */
static uint64_t source_initial(const source_t *s, uint64_t r) {
  return s->ds ? set_index(s, r) % dataset_count(s->ds) : workload_value_id(&s->wl, r);
}

/* Gives each value number its distinct-value id. */
static int source_vids(source_t *s) {
  s->vid = malloc(s->nvalues * sizeof *s->vid);
  if (!s->vid) return BFH_E_NOMEM;
  if (!s->ds) { /* synth: value number v is Value<v>, all distinct */
    for (uint64_t v = 0; v < s->nvalues; v++) s->vid[v] = (uint32_t)v;
    s->nvids = s->nvalues;
    return BFH_OK;
  }
  u64_map_t seen; /* value hash -> vid + 1 */
  u64_map_init(&seen);
  int rc = BFH_OK;
  for (uint64_t v = 0; v < s->nvalues && rc == BFH_OK; v++) {
    size_t len;
    char buf[WORKLOAD_MAX_BYTES];
    const char *val = source_value(s, v, buf, &len);
    uint64_t h = bfh_hash64(val, len, 0) | 1, id;
    if (u64_map_get(&seen, h, &id)) {
      s->vid[v] = (uint32_t)(id - 1);
    } else {
      s->vid[v] = (uint32_t)s->nvids++;
      rc = u64_map_put(&seen, h, s->nvids) == ST_OK ? BFH_OK : BFH_E_NOMEM;
    }
  }
  u64_map_release(&seen);
  return rc;
}

/* Collects one value's terms: their tids, each once. */
typedef struct term_sink {
  source_t *s;
  u64_map_t *by_hash; /* term hash -> tid + 1 */
  size_t text_cap;
  u64vec_t *tids;
  int rc;
} term_sink_t;

static int collect_term(void *arg, const void *term, size_t len) {
  term_sink_t *k = arg;
  source_t *s = k->s;
  uint64_t h = bfh_hash64(term, len, 1) | 1, id;
  if (u64_map_get(k->by_hash, h, &id)) {
    uint64_t tid = id - 1, at = s->off.v[tid];
    if (s->off.v[tid + 1] - at != len || memcmp(s->text + at, term, len) != 0) {
      fprintf(stderr, "bfh: ycsb: %s: two terms share a hash\n", s->name);
      k->rc = BFH_E_INVALID;
      return 1;
    }
    for (size_t i = 0; i < k->tids->n; i++)
      if (k->tids->v[i] == tid) return 0;
    k->rc = u64vec_push(k->tids, tid) == ST_OK ? BFH_OK : BFH_E_NOMEM;
    return k->rc != BFH_OK;
  }
  uint64_t tid = s->off.n - 1, end = s->off.v[tid];
  if (end + len > k->text_cap) {
    size_t cap = k->text_cap ? k->text_cap * 2 : 1u << 16;
    while (cap < end + len) cap *= 2;
    char *t = realloc(s->text, cap);
    if (!t) {
      k->rc = BFH_E_NOMEM;
      return 1;
    }
    s->text = t;
    k->text_cap = cap;
  }
  memcpy(s->text + end, term, len);
  if (u64vec_push(&s->off, end + len) != ST_OK || u64_map_put(k->by_hash, h, tid + 1) != ST_OK ||
      u64vec_push(k->tids, tid) != ST_OK) {
    k->rc = BFH_E_NOMEM;
    return 1;
  }
  return 0;
}

/* Extracts the query attribute's terms of every distinct value once, with the extractor the
   database runs at each put: the oracle knows each term's vids. */
static int source_terms(source_t *s) {
  err_t err;
  err_clear(&err);
  if (attr_spec_parse(s->qdecl, &s->qspec, &err) != ST_OK) {
    fprintf(stderr, "bfh: ycsb: %s\n", err.msg);
    return BFH_E_INVALID;
  }
  s->has_qspec = 1;
  s->vid_tids = calloc(s->nvids, sizeof *s->vid_tids);
  uint8_t *done = calloc(s->nvids, 1);
  u64_map_t by_hash;
  u64_map_init(&by_hash);
  term_sink_t k = {.s = s, .by_hash = &by_hash, .rc = BFH_OK};
  if (!s->vid_tids || !done || u64vec_push(&s->off, 0) != ST_OK) k.rc = BFH_E_NOMEM;
  for (uint64_t v = 0; v < s->nvalues && k.rc == BFH_OK; v++) {
    uint32_t vid = s->vid[v];
    if (done[vid]) continue;
    done[vid] = 1;
    size_t len;
    char buf[WORKLOAD_MAX_BYTES];
    const char *val = source_value(s, v, buf, &len);
    k.tids = &s->vid_tids[vid];
    int got = attr_extract(&s->qspec, val, len, collect_term, &k);
    if (got < 0 && k.rc == BFH_OK) {
      fprintf(stderr, "bfh: ycsb: %s: extracting %s: %s\n", s->name, s->qdecl, bfh_strerror(got));
      k.rc = got;
    }
  }
  free(done);
  u64_map_release(&by_hash);
  const uint64_t nterms = s->off.n ? s->off.n - 1 : 0;
  s->tid_at = calloc(nterms + 1, sizeof *s->tid_at);
  s->tid_n = calloc(nterms + 1, sizeof *s->tid_n);
  if (k.rc == BFH_OK && (!s->tid_at || !s->tid_n)) k.rc = BFH_E_NOMEM;
  if (k.rc != BFH_OK) return k.rc;
  for (uint64_t vid = 0; vid < s->nvids; vid++) /* counting sort: tid -> vids */
    for (size_t i = 0; i < s->vid_tids[vid].n; i++) s->tid_n[s->vid_tids[vid].v[i]]++;
  for (uint64_t t = 0, at = 0; t < nterms; t++) {
    s->tid_at[t] = at;
    at += s->tid_n[t];
    s->tid_n[t] = 0;
  }
  uint64_t total = 0;
  for (uint64_t vid = 0; vid < s->nvids; vid++) total += s->vid_tids[vid].n;
  if (u64vec_reserve(&s->tid_vids_all, total + 1) != ST_OK) return BFH_E_NOMEM;
  s->tid_vids_all.n = total;
  for (uint64_t vid = 0; vid < s->nvids; vid++)
    for (size_t i = 0; i < s->vid_tids[vid].n; i++) {
      uint64_t t = s->vid_tids[vid].v[i];
      s->tid_vids_all.v[s->tid_at[t] + s->tid_n[t]++] = vid;
    }
  return BFH_OK;
}

static int source_open(source_t *s, int kind, uint64_t n) {
  memset(s, 0, sizeof *s);
  s->n = n;
  if (kind == 0) {
    s->name = "synth";
    workload_config_t c;
    workload_config_init(&c);
    c.n = n;
    c.domain_pct = SYNTH_DOMAIN_PCT;
    if (workload_init(&s->wl, &c) != ST_OK) return BFH_E_INVALID;
    s->nvalues = s->wl.domain;
    return source_vids(s);
  }
  err_t err;
  err_clear(&err);
  dataset_kind_t k = (dataset_kind_t)(kind - 1);
  s->name = dataset_name(k);
  if (dataset_open(k, NULL, &s->ds, &err) != ST_OK) {
    fprintf(stderr, "bfh: ycsb: %s\n", err.msg);
    return BFH_E_IO;
  }
  s->nvalues = dataset_count(s->ds);
  workload_perm_init(&s->spread, s->nvalues, YCSB_SEED);
  s->qdecl = QUERY_ATTR[k];
  int rc = source_vids(s);
  return rc == BFH_OK ? source_terms(s) : rc;
}

static void source_close(source_t *s) {
  dataset_destroy(s->ds);
  if (s->vid_tids)
    for (uint64_t v = 0; v < s->nvids; v++) u64vec_release(&s->vid_tids[v]);
  free(s->vid_tids);
  if (s->has_qspec) attr_spec_release(&s->qspec);
  free(s->text);
  u64vec_release(&s->off);
  u64vec_release(&s->tid_vids_all);
  free(s->tid_at);
  free(s->tid_n);
  free(s->vid);
}

/* ---- the oracle ------------------------------------------------------------------------------ */

/* Each record's current value and each distinct value's records, kept beside the database. */
typedef struct oracle {
  const source_t *src;
  uint64_t *value;   /* [n] record -> value number */
  uint64_t *pos;     /* [n] record -> its index in its vid's list */
  u64vec_t *holders; /* [nvids] vid -> records */
  u64_map_t by_key;  /* key hash -> record */
  uint32_t *seen;    /* [n] the check that last saw the record (duplicates) */
  uint32_t check;
} oracle_t;

static uint64_t key_hash(const void *k, size_t n) { return bfh_hash64(k, n, 7) | 1; }

static int oracle_init(oracle_t *o, const source_t *s) {
  memset(o, 0, sizeof *o);
  o->src = s;
  o->value = malloc(s->n * sizeof *o->value);
  o->pos = malloc(s->n * sizeof *o->pos);
  o->seen = calloc(s->n, sizeof *o->seen);
  o->holders = calloc(s->nvids, sizeof *o->holders);
  u64_map_init(&o->by_key);
  if (!o->value || !o->pos || !o->seen || !o->holders || u64_map_reserve(&o->by_key, s->n) != ST_OK)
    return BFH_E_NOMEM;
  for (uint64_t r = 0; r < s->n; r++) {
    char key[DATASET_MAX_KEY + WORKLOAD_MAX_BYTES];
    size_t kn = source_key(s, r, key);
    if (u64_map_put(&o->by_key, key_hash(key, kn), r) != ST_OK) return BFH_E_NOMEM;
  }
  if (u64_map_count(&o->by_key) != s->n) {
    fprintf(stderr, "bfh: ycsb: %s: two keys share a hash\n", s->name);
    return BFH_E_INVALID;
  }
  return BFH_OK;
}

static void oracle_release(oracle_t *o) {
  if (o->holders)
    for (uint64_t v = 0; v < o->src->nvids; v++) u64vec_release(&o->holders[v]);
  free(o->holders);
  free(o->value);
  free(o->pos);
  free(o->seen);
  u64_map_release(&o->by_key);
}

/* Record r now holds value number v (first: it held none). */
static int oracle_set(oracle_t *o, uint64_t r, uint64_t v, int first) {
  if (!first) {
    u64vec_t *old = &o->holders[o->src->vid[o->value[r]]];
    uint64_t last = old->v[--old->n];
    old->v[o->pos[r]] = last;
    o->pos[last] = o->pos[r];
  }
  u64vec_t *h = &o->holders[o->src->vid[v]];
  o->pos[r] = h->n;
  o->value[r] = v;
  return u64vec_push(h, r) == ST_OK ? BFH_OK : BFH_E_NOMEM;
}

/* One search's keys against the oracle. */
typedef struct check {
  oracle_t *o;
  uint32_t vid;  /* a value search: the value's vid */
  int64_t tid;   /* an attribute query: the term's tid; -1 for a value search */
  uint64_t found;
  int bad; /* a key not holding the value (the term), unknown, or reported twice */
} check_t;

/* Does vid's value hold term tid? */
static int vid_has_term(const source_t *s, uint32_t vid, uint64_t tid) {
  for (size_t i = 0; i < s->vid_tids[vid].n; i++)
    if (s->vid_tids[vid].v[i] == tid) return 1;
  return 0;
}

static int check_key(void *arg, const void *key, size_t len) {
  check_t *c = arg;
  const source_t *s = c->o->src;
  uint64_t r;
  if (!u64_map_get(&c->o->by_key, key_hash(key, len), &r) || c->o->seen[r] == c->o->check ||
      (c->tid < 0 ? s->vid[c->o->value[r]] != c->vid
                  : !vid_has_term(s, s->vid[c->o->value[r]], (uint64_t)c->tid))) {
    c->bad = 1;
    return 0;
  }
  c->o->seen[r] = c->o->check;
  c->found++;
  return 0;
}

/* ---- running a workload ---------------------------------------------------------------------- */

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

typedef struct scale {
  uint64_t records, ops, scan_ops;
  size_t memtable_bytes; /* and table bytes; 0: the engine's defaults */
} scale_t;

/* What one method's run measured. */
typedef struct run {
  histogram_t h[YCSB_OPS];
  uint64_t wrong, ops;
  double seconds;
} run_t;

/* Searches value number v with method, checks the keys; BFH_OK or the failure. */
static int run_search(bfh_db *db, oracle_t *o, uint64_t v, bfh_method method, run_t *out) {
  char buf[WORKLOAD_MAX_BYTES];
  size_t len;
  const char *val = source_value(o->src, v, buf, &len);
  check_t c = {.o = o, .vid = o->src->vid[v], .tid = -1};
  o->check++;
  int rc = bfh_search(db, val, len, method, check_key, &c, NULL);
  if (rc != BFH_OK) return rc;
  out->wrong += c.bad || c.found != o->holders[c.vid].n;
  return BFH_OK;
}

/* The predicate asking for term tid of the query attribute: NAME = 'text' (a quote
   doubled) or NAME = 123; 0 when it does not fit in cap bytes. */
static size_t term_expr(const source_t *s, uint64_t tid, char *buf, size_t cap) {
  const char *t = s->text + s->off.v[tid];
  const size_t len = s->off.v[tid + 1] - s->off.v[tid];
  size_t n = (size_t)snprintf(buf, cap, "%s = ", s->qspec.name);
  if (s->qspec.is_int) {
    uint64_t u = 0;
    for (size_t i = 0; i < ATTR_INT_TERM_BYTES; i++) u = u << 8 | (uint8_t)t[i];
    n += (size_t)snprintf(buf + n, cap > n ? cap - n : 0, "%lld",
                          (long long)(int64_t)(u ^ (1ull << 63)));
    return n < cap ? n : 0;
  }
  if (n + 2 * len + 3 > cap) return 0;
  buf[n++] = '\'';
  for (size_t i = 0; i < len; i++) {
    if (t[i] == '\'') buf[n++] = '\'';
    buf[n++] = t[i];
  }
  buf[n++] = '\'';
  buf[n] = '\0';
  return n;
}

/* Queries the query attribute for the first term of value number v, checks the keys. */
static int run_attr_search(bfh_db *db, oracle_t *o, uint64_t v, bfh_method method, run_t *out) {
  const source_t *s = o->src;
  const u64vec_t *tids = &s->vid_tids[s->vid[v]];
  char expr[4096];
  if (tids->n == 0 || term_expr(s, tids->v[0], expr, sizeof expr) == 0) {
    fprintf(stderr, "bfh: ycsb: %s: value %llu has no %s term that fits a query\n", s->name,
            (unsigned long long)v, s->qspec.name);
    return BFH_E_INVALID;
  }
  const uint64_t tid = tids->v[0];
  check_t c = {.o = o, .tid = (int64_t)tid};
  o->check++;
  int rc = bfh_query(db, expr, method, 0, check_key, &c, NULL);
  if (rc != BFH_OK) return rc;
  uint64_t expected = 0;
  for (uint64_t i = 0; i < s->tid_n[tid]; i++)
    expected += o->holders[s->tid_vids_all.v[s->tid_at[tid] + i]].n;
  out->wrong += c.bad || c.found != expected;
  return BFH_OK;
}

static int run_update(bfh_db *db, oracle_t *o, uint64_t r, uint64_t v) {
  char key[DATASET_MAX_KEY + WORKLOAD_MAX_BYTES], buf[WORKLOAD_MAX_BYTES];
  size_t kn = source_key(o->src, r, key), len;
  const char *val = source_value(o->src, v, buf, &len);
  int rc = bfh_put(db, key, kn, val, len);
  return rc == BFH_OK ? oracle_set(o, r, v, 0) : rc;
}

/* The operations of one method: nops of workload w's stream, its searches by value, or by
   the query attribute (by_attr). */
static int run_method(bfh_db *db, oracle_t *o, const ycsb_mix_t *mix, bfh_method method,
                      int by_attr, uint64_t nops, run_t *out) {
  for (int t = 0; t < YCSB_OPS; t++) histogram_init(&out->h[t]);
  out->wrong = out->ops = 0;
  ycsb_gen_t g;
  ycsb_gen_init(&g, mix, o->src->n, YCSB_SEED);
  rng_t pick;
  rng_init(&pick, YCSB_SEED + 1);
  int rc = BFH_OK;
  double start = exp_now();
  for (uint64_t i = 0; i < nops && rc == BFH_OK; i++) {
    uint64_t r;
    uint32_t span;
    ycsb_op_t op = ycsb_gen_next(&g, &r, &span);
    uint64_t v = rng_below(&pick, o->src->nvalues);
    double t0 = exp_now();
    if (op == YCSB_SEARCH || op == YCSB_RMW)
      rc = by_attr ? run_attr_search(db, o, o->value[r], method, out)
                   : run_search(db, o, o->value[r], method, out);
    if (rc == BFH_OK && (op == YCSB_UPDATE || op == YCSB_RMW)) rc = run_update(db, o, r, v);
    histogram_record(&out->h[op], (uint64_t)((exp_now() - t0) * 1e9));
    out->ops++;
  }
  out->seconds = exp_now() - start;
  return rc;
}

/* The database of one configuration, loaded with the source's records. */
static int load(bfh_engine engine, const config_t *cfg, oracle_t *o, const scale_t *sc,
                const char *dir, bfh_db **db, double *us_per_record) {
  bfh_options opt;
  bfh_options_init(&opt);
  opt.engine = engine;
  if (sc->memtable_bytes) opt.memtable_bytes = opt.table_bytes = sc->memtable_bytes;
  opt.create_if_missing = 1;
  opt.value_filters = cfg->value_filters;
  opt.standalone_index = cfg->standalone;
  opt.cuckoo_index = cfg->cuckoo;
  /* A data set declares its whole value and its query attribute, as a user asking both
     would; without value filters (bare) nothing is declared. */
  char qname[ATTR_NAME_MAX_BYTES + 1];
  bfh_attribute attrs[2] = {{"value", "value"}, {qname, NULL}};
  const char *eq = o->src->qdecl ? strchr(o->src->qdecl, '=') : NULL;
  if (eq && cfg->value_filters && (size_t)(eq - o->src->qdecl) < sizeof qname) {
    memcpy(qname, o->src->qdecl, (size_t)(eq - o->src->qdecl));
    qname[eq - o->src->qdecl] = '\0';
    attrs[1].extractor = eq + 1;
    opt.attributes = attrs;
    opt.attribute_count = 2;
  }
  exp_rmtree(dir);
  int rc = bfh_open(dir, &opt, db);
  if (rc != BFH_OK) return rc;
  double t0 = exp_now();
  for (uint64_t r = 0; r < o->src->n && rc == BFH_OK; r++) {
    char key[DATASET_MAX_KEY + WORKLOAD_MAX_BYTES], buf[WORKLOAD_MAX_BYTES];
    size_t kn = source_key(o->src, r, key), len;
    uint64_t v = source_initial(o->src, r);
    const char *val = source_value(o->src, v, buf, &len);
    rc = bfh_put(*db, key, kn, val, len);
    if (rc == BFH_OK) rc = oracle_set(o, r, v, 1);
  }
  if (rc == BFH_OK) rc = bfh_flush(*db);
  *us_per_record = (exp_now() - t0) * 1e6 / (double)o->src->n;
  if (rc == BFH_OK) rc = exp_engine_is_own(engine) ? exp_db_quiesce(*db) : exp_db_settle(*db);
  return rc;
}

static const char *const COLS[] = {"workload", "dataset", "query", "engine", "config", "method", "op",
                                   "records", "ops", "p50_us", "p95_us", "p99_us", "mean_us",
                                   "ops_per_s", "wrong", "load_us_per_record",
                                   "index_bytes_per_entry", "scale", NULL};
static const char *const CDF_COLS[] = {"workload", "dataset", "query", "engine", "method", "op",
                                       "quantile", "latency_us", "scale", NULL};
static const double CDF_Q[] = {0.01, 0.05, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8,
                               0.9,  0.95, 0.97, 0.99, 0.995, 0.999};

typedef struct row_ctx {
  const exp_ctx_t *x;
  exp_csv_t *csv, *cdf;
  char workload[2];
  const char *source, *engine;
  const char *query; /* "value", or the query attribute's name */
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
static void write_rows(const row_ctx_t *k, const config_t *cfg, bfh_method method, const run_t *run,
                       double load_us, double index_bpe) {
  for (int t = 0; t < YCSB_OPS; t++) {
    const histogram_t *h = &run->h[t];
    if (h->count == 0) continue;
    row_common(k, k->csv);
    exp_csv_str(k->csv, "config", cfg->name);
    exp_csv_str(k->csv, "method", exp_method_name(method));
    exp_csv_str(k->csv, "op", ycsb_op_name((ycsb_op_t)t));
    exp_csv_u64(k->csv, "records", k->records);
    exp_csv_u64(k->csv, "ops", h->count);
    exp_csv_dbl(k->csv, "p50_us", (double)histogram_quantile(h, 0.5) / 1e3);
    exp_csv_dbl(k->csv, "p95_us", (double)histogram_quantile(h, 0.95) / 1e3);
    exp_csv_dbl(k->csv, "p99_us", (double)histogram_quantile(h, 0.99) / 1e3);
    exp_csv_dbl(k->csv, "mean_us", histogram_mean(h) / 1e3);
    exp_csv_dbl(k->csv, "ops_per_s", (double)run->ops / run->seconds);
    exp_csv_u64(k->csv, "wrong", t == YCSB_SEARCH || t == YCSB_RMW ? run->wrong : 0);
    exp_csv_dbl(k->csv, "load_us_per_record", load_us);
    exp_csv_dbl(k->csv, "index_bytes_per_entry", index_bpe);
    exp_csv_row(k->csv);
    for (size_t q = 0; q < sizeof CDF_Q / sizeof CDF_Q[0]; q++) {
      row_common(k, k->cdf);
      exp_csv_str(k->cdf, "method", exp_method_name(method));
      exp_csv_str(k->cdf, "op", ycsb_op_name((ycsb_op_t)t));
      exp_csv_dbl(k->cdf, "quantile", CDF_Q[q]);
      exp_csv_dbl(k->cdf, "latency_us", (double)histogram_quantile(h, CDF_Q[q]) / 1e3);
      exp_csv_row(k->cdf);
    }
  }
}

/* One configuration: load, then workloads A, B, C and F one after another on the database,
   as YCSB runs them, each with every method of the configuration. Returns BFH_OK, the
   failure, or BFH_E_UNSUPPORTED when the engine does not have the configuration's index. */
static int run_config(row_ctx_t *k, bfh_engine engine, const config_t *cfg, source_t *src,
                      const scale_t *sc, uint64_t *wrong) {
  char dir[1200];
  snprintf(dir, sizeof dir, "%s/ycsb-%s-%s-%s", k->x->work_dir, k->engine, src->name, cfg->name);
  oracle_t o;
  int rc = oracle_init(&o, src);
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
  run_t *run = malloc(sizeof *run);
  if (!run) rc = BFH_E_NOMEM;
  for (const char *w = YCSB_WORKLOADS; *w && cfg->nmethods && rc == BFH_OK; w++) {
    k->workload[0] = *w;
    for (int by_attr = 0; by_attr <= (src->qdecl != NULL) && rc == BFH_OK; by_attr++) {
      k->query = by_attr ? src->qspec.name : "value";
      for (int m = 0; m < cfg->nmethods && rc == BFH_OK; m++) {
        bfh_method method = cfg->methods[m];
        uint64_t nops = method == BFH_SEARCH_SCAN ? sc->scan_ops : sc->ops;
        exp_progress("ycsb %s %s %c by %s: %s", k->engine, src->name, *w, k->query,
                     exp_method_name(method));
        rc = run_method(db, &o, ycsb_mix(*w), method, by_attr, nops, run);
        exp_progress_done();
        if (rc == BFH_OK) {
          write_rows(k, cfg, method, run, load_us, bpe);
          *wrong += run->wrong;
        } else if (rc == BFH_E_UNSUPPORTED && by_attr) {
          rc = BFH_OK; /* a rival that answers whole values only: no row */
        }
      }
    }
  }
  free(run);
  if (db) bfh_close(db);
  oracle_release(&o);
  exp_db_drop(k->x, dir);
  if (rc != BFH_OK && rc != BFH_E_UNSUPPORTED)
    fprintf(stderr, "bfh: ycsb %s %s %s: %s: %s\n", k->engine, src->name, cfg->name,
            bfh_strerror(rc), bfh_last_error(NULL));
  return rc;
}

int exp_ycsb(const exp_ctx_t *x) {
  static const uint64_t RECORDS[EXP_NSCALES] = {10000, 1000000, 10000000};
  scale_t sc = {.records = x->n ? x->n : RECORDS[x->scale]};
  sc.ops = sc.records / 100 > 400 ? sc.records / 100 : 400;
  sc.scan_ops = sc.records < 1000000 ? 40 : sc.records < 10000000 ? 20 : 10;
  if (x->queries_given) { /* --queries Q: Q operations a method, SCAN's at most Q */
    sc.ops = (uint64_t)x->queries;
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
  for (int s = 0; s < SOURCES && !failed; s++) {
    source_t src;
    if (source_open(&src, s, sc.records) != BFH_OK) {
      source_close(&src);
      failed = 1;
      break;
    }
    k.source = src.name;
    static const bfh_engine ENGINES[] = {BFH_ENGINE_LSM, BFH_ENGINE_LEVELDB, BFH_ENGINE_ROCKSDB};
    for (size_t e = 0; e < 3 && !failed; e++) {
      bfh_engine engine = ENGINES[e];
      if (!exp_engine_can(engine, BFH_ENGINE_CAN_WRITE)) continue;
      k.engine = exp_engine_name(engine);
      for (size_t c = 0; c < NCONFIGS && !failed; c++) {
        if (CONFIGS[c].standalone && !exp_engine_can(engine, BFH_ENGINE_CAN_STANDALONE)) continue;
        int rc = run_config(&k, engine, &CONFIGS[c], &src, &sc, &wrong);
        failed = rc != BFH_OK && !(CONFIGS[c].cuckoo && rc == BFH_E_UNSUPPORTED);
      }
    }
    source_close(&src);
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

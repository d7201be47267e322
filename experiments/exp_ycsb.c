/* Beyond the paper: YCSB's core workloads recast for value search (`bfh run ycsb`).
 *
 * Each workload of workloads/ycsb.h runs on each engine that writes, over each record
 * source, for each method, and every operation is timed into a histogram of its type:
 *   sources   synth (keys k<15 digits>, values v<15 digits> with a 1% domain, about 100 keys
 *             per value) and the four Debian data sets of workloads/dataset.h;
 *   queries   by whole value (bfh_search), and on a data set also by one attribute
 *             (bfh_query "NAME = term", QUERY_ATTR: words' word, oui's vendor, unicode's
 *             name, wordnet's words); the first term of the chosen record's value is asked.
 *             E asks ranges of one :range attribute per source (RANGE_ATTR), from the
 *             chosen record's first term, as a user of each would:
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
 *             only: it has no attribute or range rows; STANDALONE runs a range as AUTO;
 *   configs   bare (value filters off: the ingest every other config is compared with),
 *             bfh (bfh's defaults: SCAN, LEAVES, HIERARCHY, SLICED and AUTO, one after
 *             another on the same database), standalone (the stand-alone index, engines that
 *             have it), cuckoo (the Cuckoo Index);
 *   workloads A, B, C, F, then E (YCSB's order: the mix that inserts last). D (newest K)
 *             waits for that query; workloads/ycsb.h has its latest distribution.
 * A configuration's database is loaded once (`records` puts in record order, a flush; the
 * whole value, the query attribute and the range attribute declared), then the workloads
 * run on it one after another, as YCSB runs them, each method with `ops` operations of the
 * same seeded stream (SCAN, the floor, at most scan_ops of them) over the records so far. An
 * update gives its record, and an insert its new record, the value of a record drawn
 * uniformly from the source, so values keep the source's distribution; F's
 * read-modify-write is a search of the record's value, then that update.
 *
 * wrong counts the searches and ranges whose keys differ from the oracle's, which the driver
 * keeps beside the database: each record's current value and, per distinct value, its
 * records; per attribute each distinct value's terms, extracted once by the extractor the
 * database runs at each put (query/attr.h), and per term the values holding it; for the
 * range attribute the terms in the predicates' order, and a Fenwick tree of the records
 * each holds, where a range of span records ends. Latency: p50, p95 and p99 of every
 * operation of the run (util/histogram.h, within 1%; a range's time is its query's, not the
 * oracle's); ycsb_cdf.csv holds each row's quantiles from 1% to 99.9% for the CDF plots.
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

static const char YCSB_WORKLOADS[] = "ABCFE"; /* YCSB's order: the inserting mix last */

/* ---- record sources ------------------------------------------------------------------------ */

/* One attribute's terms over a source's distinct values, extracted once by the extractor the
   database runs at each put (query/attr.h): each distinct term a term id (tid), its bytes
   text[off[tid], off[tid + 1]); per vid the tids of its value, per tid the vids holding it;
   and for the range attribute the terms in the predicates' order (bytewise, a proper prefix
   first; an :int term's 8 bytes are its integer's order), by rank. */
typedef struct terms {
  const char *decl; /* NAME=EXTRACTOR; NULL: none */
  attr_spec_t spec;
  int has_spec;
  char *text;
  size_t text_cap;
  u64vec_t off;
  uint64_t nterms;
  u64vec_t *vid_tids; /* [nvids] */
  u64vec_t tid_vids;  /* every tid's vids, back to back: tid's at tid_at[tid], tid_n[tid] */
  uint64_t *tid_at, *tid_n;
  uint64_t *by_rank, *rank; /* sorted terms: rank -> tid, tid -> rank */
} terms_t;

/* Records 0..n-1 of one source (and the records E inserts, n onwards), and the values an
   update or insert draws from: value numbers 0..nvalues-1, each with its distinct-value id
   (vid), equal values one vid. */
typedef struct source {
  const char *name;
  dataset_t *ds;         /* NULL: synth */
  workload_t wl;         /* synth */
  uint64_t n, nvalues;
  workload_perm_t spread; /* data sets: record r < count reads the set's record spread(r) */
  uint32_t *vid;         /* [nvalues] */
  uint64_t nvids;
  terms_t query; /* data sets: the attribute asked by name (QUERY_ATTR); synth: none */
  terms_t range; /* the :range attribute E asks ranges of (RANGE_ATTR) */
  int prefix;    /* E asks prefixes of its terms (LIKE), not BETWEEN */
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

/* The attribute E asks ranges of, per source (synth first), and whether as prefixes: what a
   user of each would ask. An attribute of the same name as the query attribute is that one
   declared with :range. */
static const struct {
  const char *decl;
  int prefix;
} RANGE_ATTR[SOURCES] = {
    {"n=bytes:1:15:int:range", 0},                         /* synth: the value's number */
    [1 + DATASET_WORDS] = {"word=json:word:range", 1},     /* words starting with a prefix */
    [1 + DATASET_OUI] = {"oui=csv:2:range", 0},            /* a run of MAC address blocks */
    [1 + DATASET_UNICODE] = {"cp=json:cp:int:range", 0},   /* a run of code points */
    [1 + DATASET_WORDNET] = {"words=json:words:range", 0}, /* synsets of neighbouring words */
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
  if (!s->ds) { /* synth: value number v is its own value, all distinct */
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

/* Term tid's bytes. */
static const char *term_text(const terms_t *t, uint64_t tid, size_t *len) {
  *len = t->off.v[tid + 1] - t->off.v[tid];
  return t->text + t->off.v[tid];
}

/* Collects one value's terms: their tids, each once. */
typedef struct term_sink {
  const source_t *s;
  terms_t *t;
  u64_map_t *by_hash; /* term hash -> tid + 1 */
  u64vec_t *tids;
  int rc;
} term_sink_t;

/* Appends a new term's bytes: its tid is the one before the last offset. */
static int term_add(terms_t *t, const void *term, size_t len) {
  const uint64_t end = t->off.v[t->off.n - 1];
  if (end + len > t->text_cap) {
    size_t cap = t->text_cap ? t->text_cap * 2 : 1u << 16;
    while (cap < end + len) cap *= 2;
    char *text = realloc(t->text, cap);
    if (!text) return BFH_E_NOMEM;
    t->text = text;
    t->text_cap = cap;
  }
  memcpy(t->text + end, term, len);
  return u64vec_push(&t->off, end + len) == ST_OK ? BFH_OK : BFH_E_NOMEM;
}

static int collect_term(void *arg, const void *term, size_t len) {
  term_sink_t *k = arg;
  terms_t *t = k->t;
  uint64_t h = bfh_hash64(term, len, 1) | 1, id;
  if (u64_map_get(k->by_hash, h, &id)) {
    size_t have;
    const char *at = term_text(t, id - 1, &have);
    if (have != len || memcmp(at, term, len) != 0) {
      fprintf(stderr, "bfh: ycsb: %s: two terms share a hash\n", k->s->name);
      k->rc = BFH_E_INVALID;
      return 1;
    }
    for (size_t i = 0; i < k->tids->n; i++)
      if (k->tids->v[i] == id - 1) return 0;
    k->rc = u64vec_push(k->tids, id - 1) == ST_OK ? BFH_OK : BFH_E_NOMEM;
    return k->rc != BFH_OK;
  }
  const uint64_t tid = t->off.n - 1;
  k->rc = term_add(t, term, len);
  if (k->rc == BFH_OK &&
      (u64_map_put(k->by_hash, h, tid + 1) != ST_OK || u64vec_push(k->tids, tid) != ST_OK))
    k->rc = BFH_E_NOMEM;
  return k->rc != BFH_OK;
}

/* Per tid, the vids holding it (a counting sort of the vids' tids). */
static int terms_invert(terms_t *t, uint64_t nvids) {
  t->tid_at = calloc(t->nterms + 1, sizeof *t->tid_at);
  t->tid_n = calloc(t->nterms + 1, sizeof *t->tid_n);
  if (!t->tid_at || !t->tid_n) return BFH_E_NOMEM;
  uint64_t total = 0;
  for (uint64_t vid = 0; vid < nvids; vid++) {
    total += t->vid_tids[vid].n;
    for (size_t i = 0; i < t->vid_tids[vid].n; i++) t->tid_n[t->vid_tids[vid].v[i]]++;
  }
  for (uint64_t tid = 0, at = 0; tid < t->nterms; tid++) {
    t->tid_at[tid] = at;
    at += t->tid_n[tid];
    t->tid_n[tid] = 0;
  }
  if (u64vec_reserve(&t->tid_vids, total + 1) != ST_OK) return BFH_E_NOMEM;
  t->tid_vids.n = total;
  for (uint64_t vid = 0; vid < nvids; vid++)
    for (size_t i = 0; i < t->vid_tids[vid].n; i++) {
      const uint64_t tid = t->vid_tids[vid].v[i];
      t->tid_vids.v[t->tid_at[tid] + t->tid_n[tid]++] = vid;
    }
  return BFH_OK;
}

/* A term by its bytes, for sorting. */
typedef struct sorted_term {
  const char *p;
  size_t len;
  uint64_t tid;
} sorted_term_t;

/* The predicates' order of terms: bytewise, a proper prefix first. */
static int term_cmp(const char *a, size_t alen, const char *b, size_t blen) {
  int c = memcmp(a, b, alen < blen ? alen : blen);
  return c ? c : (alen > blen) - (alen < blen);
}

static int sorted_term_cmp(const void *a, const void *b) {
  const sorted_term_t *x = a, *y = b;
  return term_cmp(x->p, x->len, y->p, y->len);
}

/* Ranks the terms in the predicates' order. */
static int terms_sort(terms_t *t) {
  sorted_term_t *st = malloc((t->nterms + 1) * sizeof *st);
  t->by_rank = malloc((t->nterms + 1) * sizeof *t->by_rank);
  t->rank = malloc((t->nterms + 1) * sizeof *t->rank);
  if (!st || !t->by_rank || !t->rank) {
    free(st);
    return BFH_E_NOMEM;
  }
  for (uint64_t tid = 0; tid < t->nterms; tid++) {
    st[tid].p = term_text(t, tid, &st[tid].len);
    st[tid].tid = tid;
  }
  qsort(st, t->nterms, sizeof *st, sorted_term_cmp);
  for (uint64_t r = 0; r < t->nterms; r++) {
    t->by_rank[r] = st[r].tid;
    t->rank[st[r].tid] = r;
  }
  free(st);
  return BFH_OK;
}

/* Extracts attribute decl's terms of every distinct value of s once. */
static int terms_build(const source_t *s, terms_t *t, const char *decl) {
  err_t err;
  err_clear(&err);
  t->decl = decl;
  if (attr_spec_parse(decl, &t->spec, &err) != ST_OK) {
    fprintf(stderr, "bfh: ycsb: %s\n", err.msg);
    return BFH_E_INVALID;
  }
  t->has_spec = 1;
  t->vid_tids = calloc(s->nvids, sizeof *t->vid_tids);
  uint8_t *done = calloc(s->nvids, 1);
  u64_map_t by_hash;
  u64_map_init(&by_hash);
  term_sink_t k = {.s = s, .t = t, .by_hash = &by_hash, .rc = BFH_OK};
  if (!t->vid_tids || !done || u64vec_push(&t->off, 0) != ST_OK) k.rc = BFH_E_NOMEM;
  for (uint64_t v = 0; v < s->nvalues && k.rc == BFH_OK; v++) {
    uint32_t vid = s->vid[v];
    if (done[vid]) continue;
    done[vid] = 1;
    size_t len;
    char buf[WORKLOAD_MAX_BYTES];
    const char *val = source_value(s, v, buf, &len);
    k.tids = &t->vid_tids[vid];
    int got = attr_extract(&t->spec, val, len, collect_term, &k);
    if (got < 0 && k.rc == BFH_OK) {
      fprintf(stderr, "bfh: ycsb: %s: extracting %s: %s\n", s->name, decl, bfh_strerror(got));
      k.rc = got;
    }
  }
  free(done);
  u64_map_release(&by_hash);
  if (k.rc != BFH_OK) return k.rc;
  t->nterms = t->off.n - 1;
  return terms_invert(t, s->nvids);
}

static void terms_release(terms_t *t, uint64_t nvids) {
  if (t->vid_tids)
    for (uint64_t v = 0; v < nvids; v++) u64vec_release(&t->vid_tids[v]);
  free(t->vid_tids);
  if (t->has_spec) attr_spec_release(&t->spec);
  free(t->text);
  u64vec_release(&t->off);
  u64vec_release(&t->tid_vids);
  free(t->tid_at);
  free(t->tid_n);
  free(t->by_rank);
  free(t->rank);
}

/* Opens source `kind` (0 synth, then the data sets) for n records: its values, and the terms
   of its query and range attributes. */
static int source_open(source_t *s, int kind, uint64_t n) {
  memset(s, 0, sizeof *s);
  s->n = n;
  s->prefix = RANGE_ATTR[kind].prefix;
  int rc;
  if (kind == 0) {
    s->name = "synth";
    workload_config_t c;
    workload_config_init(&c);
    c.n = n;
    c.domain_pct = SYNTH_DOMAIN_PCT;
    c.format = WORKLOAD_FORMAT_FIXED; /* v<15 digits>: its number an :int attribute */
    if (workload_init(&s->wl, &c) != ST_OK) return BFH_E_INVALID;
    s->nvalues = s->wl.domain;
    rc = source_vids(s);
  } else {
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
    rc = source_vids(s);
    if (rc == BFH_OK) rc = terms_build(s, &s->query, QUERY_ATTR[k]);
  }
  if (rc == BFH_OK) rc = terms_build(s, &s->range, RANGE_ATTR[kind].decl);
  return rc == BFH_OK ? terms_sort(&s->range) : rc;
}

static void source_close(source_t *s) {
  dataset_destroy(s->ds);
  terms_release(&s->query, s->nvids);
  terms_release(&s->range, s->nvids);
  free(s->vid);
}

/* ---- the oracle ------------------------------------------------------------------------------ */

/* Each record's current value and each distinct value's records, kept beside the database;
   with the source's terms (terms_t) they answer an equality, a range or a prefix exactly. */
typedef struct oracle {
  const source_t *src;
  uint64_t n, cap;   /* records so far (loaded, then inserted), and the arrays' room */
  uint64_t *value;   /* [n] record -> value number */
  uint64_t *pos;     /* [n] record -> its index in its vid's list */
  uint32_t *seen;    /* [n] the check that last saw the record (duplicates) */
  u64vec_t *holders; /* [nvids] vid -> records */
  u64_map_t by_key;  /* key hash -> record */
  uint32_t check;
  /* A Fenwick tree over the range attribute's ranks, [1, nterms]: the records holding each
     term, so that E finds where a range of `span` records from a term ends. */
  int64_t *fen;
} oracle_t;

static uint64_t key_hash(const void *k, size_t n) { return bfh_hash64(k, n, 7) | 1; }

/* Room for cap records. */
static int oracle_reserve(oracle_t *o, uint64_t cap) {
  if (cap <= o->cap) return BFH_OK;
  uint64_t *value = realloc(o->value, cap * sizeof *value);
  if (value) o->value = value;
  uint64_t *pos = realloc(o->pos, cap * sizeof *pos);
  if (pos) o->pos = pos;
  uint32_t *seen = realloc(o->seen, cap * sizeof *seen);
  if (seen) o->seen = seen;
  if (!value || !pos || !seen) return BFH_E_NOMEM;
  memset(o->seen + o->cap, 0, (cap - o->cap) * sizeof *seen);
  o->cap = cap;
  return BFH_OK;
}

/* Record r's key joins the keys the oracle knows. */
static int oracle_key(oracle_t *o, uint64_t r) {
  char key[DATASET_MAX_KEY + WORKLOAD_MAX_BYTES];
  size_t kn = source_key(o->src, r, key);
  uint64_t h = key_hash(key, kn), other;
  if (u64_map_get(&o->by_key, h, &other)) {
    fprintf(stderr, "bfh: ycsb: %s: two keys share a hash\n", o->src->name);
    return BFH_E_INVALID;
  }
  return u64_map_put(&o->by_key, h, r) == ST_OK ? BFH_OK : BFH_E_NOMEM;
}

static int oracle_init(oracle_t *o, const source_t *s) {
  memset(o, 0, sizeof *o);
  o->src = s;
  o->n = s->n; /* their values set by the load */
  o->holders = calloc(s->nvids, sizeof *o->holders);
  o->fen = calloc(s->range.nterms + 1, sizeof *o->fen);
  u64_map_init(&o->by_key);
  if (!o->holders || !o->fen || oracle_reserve(o, s->n) != BFH_OK ||
      u64_map_reserve(&o->by_key, s->n) != ST_OK)
    return BFH_E_NOMEM;
  int rc = BFH_OK;
  for (uint64_t r = 0; r < s->n && rc == BFH_OK; r++) rc = oracle_key(o, r);
  return rc;
}

static void oracle_release(oracle_t *o) {
  if (o->holders)
    for (uint64_t v = 0; v < o->src->nvids; v++) u64vec_release(&o->holders[v]);
  free(o->holders);
  free(o->value);
  free(o->pos);
  free(o->seen);
  free(o->fen);
  u64_map_release(&o->by_key);
}

/* The records holding the range terms of ranks [0, rank). */
static int64_t fen_below(const oracle_t *o, uint64_t rank) {
  int64_t sum = 0;
  for (uint64_t i = rank; i > 0; i &= i - 1) sum += o->fen[i];
  return sum;
}

/* The vid's range terms gain (delta 1) or lose (-1) a record. */
static void fen_update(oracle_t *o, uint32_t vid, int64_t delta) {
  const terms_t *t = &o->src->range;
  for (size_t k = 0; k < t->vid_tids[vid].n; k++)
    for (uint64_t i = t->rank[t->vid_tids[vid].v[k]] + 1; i <= t->nterms; i += i & (0 - i))
      o->fen[i] += delta;
}

/* The first rank where the records of ranks [0, rank] reach `target`; nterms if they never do. */
static uint64_t fen_reach(const oracle_t *o, int64_t target) {
  const uint64_t n = o->src->range.nterms;
  uint64_t at = 0, step = 1;
  while (step * 2 <= n) step *= 2;
  for (; step; step /= 2)
    if (at + step <= n && o->fen[at + step] < target) {
      at += step;
      target -= o->fen[at];
    }
  return at;
}

/* Record r now holds value number v (first: it held none). */
static int oracle_set(oracle_t *o, uint64_t r, uint64_t v, int first) {
  if (!first) {
    const uint32_t old_vid = o->src->vid[o->value[r]];
    u64vec_t *old = &o->holders[old_vid];
    uint64_t last = old->v[--old->n];
    old->v[o->pos[r]] = last;
    o->pos[last] = o->pos[r];
    fen_update(o, old_vid, -1);
  }
  const uint32_t vid = o->src->vid[v];
  u64vec_t *h = &o->holders[vid];
  o->pos[r] = h->n;
  o->value[r] = v;
  fen_update(o, vid, 1);
  return u64vec_push(h, r) == ST_OK ? BFH_OK : BFH_E_NOMEM;
}

/* One search's keys against the oracle. */
typedef enum check_kind { CHECK_VALUE, CHECK_TERM, CHECK_RANGE } check_kind_t;

typedef struct check {
  oracle_t *o;
  check_kind_t kind;
  uint32_t vid;    /* CHECK_VALUE: the value's vid */
  uint64_t tid;    /* CHECK_TERM: the query attribute's term */
  uint64_t lo, hi; /* CHECK_RANGE: the range attribute's ranks [lo, hi] */
  uint64_t found;
  int bad; /* a key not holding the value (the term, a term in range), unknown, or reported twice */
} check_t;

/* Does vid's value hold term tid of t? */
static int vid_has_term(const terms_t *t, uint32_t vid, uint64_t tid) {
  for (size_t i = 0; i < t->vid_tids[vid].n; i++)
    if (t->vid_tids[vid].v[i] == tid) return 1;
  return 0;
}

/* Does vid's value hold a range term of rank in [lo, hi]? */
static int vid_in_range(const terms_t *t, uint32_t vid, uint64_t lo, uint64_t hi) {
  for (size_t i = 0; i < t->vid_tids[vid].n; i++) {
    const uint64_t rank = t->rank[t->vid_tids[vid].v[i]];
    if (rank >= lo && rank <= hi) return 1;
  }
  return 0;
}

static int check_key(void *arg, const void *key, size_t len) {
  check_t *c = arg;
  const source_t *s = c->o->src;
  uint64_t r;
  if (!u64_map_get(&c->o->by_key, key_hash(key, len), &r) || c->o->seen[r] == c->o->check) {
    c->bad = 1;
    return 0;
  }
  const uint32_t vid = s->vid[c->o->value[r]];
  if (c->kind == CHECK_VALUE  ? vid != c->vid
      : c->kind == CHECK_TERM ? !vid_has_term(&s->query, vid, c->tid)
                              : !vid_in_range(&s->range, vid, c->lo, c->hi)) {
    c->bad = 1;
    return 0;
  }
  c->o->seen[r] = c->o->check;
  c->found++;
  return 0;
}

/* The records holding a range term of rank in [lo, hi], each once. */
static uint64_t oracle_range_count(oracle_t *o, uint64_t lo, uint64_t hi) {
  const terms_t *t = &o->src->range;
  uint64_t count = 0;
  o->check++;
  for (uint64_t rank = lo; rank <= hi; rank++) {
    const uint64_t tid = t->by_rank[rank];
    for (uint64_t i = 0; i < t->tid_n[tid]; i++) {
      const u64vec_t *h = &o->holders[t->tid_vids.v[t->tid_at[tid] + i]];
      for (size_t j = 0; j < h->n; j++)
        if (o->seen[h->v[j]] != o->check) {
          o->seen[h->v[j]] = o->check;
          count++;
        }
    }
  }
  return count;
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

/* What a search or range asks: the whole value, the query attribute's term, or E's range. */
typedef enum query { QUERY_VALUE, QUERY_TERM, QUERY_RANGE } query_t;

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
  check_t c = {.o = o, .kind = CHECK_VALUE, .vid = o->src->vid[v]};
  o->check++;
  int rc = bfh_search(db, val, len, method, check_key, &c, NULL);
  if (rc != BFH_OK) return rc;
  out->wrong += c.bad || c.found != o->holders[c.vid].n;
  return BFH_OK;
}

/* Appends term tid of t to buf[*n, cap) as a literal: 'text' (a quote doubled, `suffix`
   before the closing quote) or an integer. 0 when it does not fit or holds a NUL. */
static int put_literal(const terms_t *t, uint64_t tid, size_t len_cut, const char *suffix,
                       char *buf, size_t cap, size_t *n) {
  size_t len;
  const char *text = term_text(t, tid, &len);
  if (t->spec.is_int) {
    uint64_t u = 0;
    for (size_t i = 0; i < ATTR_INT_TERM_BYTES; i++) u = u << 8 | (uint8_t)text[i];
    *n += (size_t)snprintf(buf + *n, cap > *n ? cap - *n : 0, "%lld",
                           (long long)(int64_t)(u ^ (1ull << 63)));
    return *n < cap;
  }
  if (len_cut < len) len = len_cut;
  if (*n + 2 * len + strlen(suffix) + 2 > cap || memchr(text, '\0', len)) return 0;
  buf[(*n)++] = '\'';
  for (size_t i = 0; i < len; i++) {
    if (text[i] == '\'') buf[(*n)++] = '\'';
    buf[(*n)++] = text[i];
  }
  *n += (size_t)snprintf(buf + *n, cap - *n, "%s'", suffix);
  return 1;
}

/* The predicate asking for term tid of the query attribute: NAME = literal. */
static size_t term_expr(const terms_t *t, uint64_t tid, char *buf, size_t cap) {
  size_t n = (size_t)snprintf(buf, cap, "%s = ", t->spec.name);
  return n < cap && put_literal(t, tid, SIZE_MAX, "", buf, cap, &n) ? n : 0;
}

/* Queries the query attribute for the first term of value number v, checks the keys. */
static int run_attr_search(bfh_db *db, oracle_t *o, uint64_t v, bfh_method method, run_t *out) {
  const terms_t *t = &o->src->query;
  const u64vec_t *tids = &t->vid_tids[o->src->vid[v]];
  char expr[4096];
  if (tids->n == 0 || term_expr(t, tids->v[0], expr, sizeof expr) == 0) {
    fprintf(stderr, "bfh: ycsb: %s: value %llu has no %s term that fits a query\n", o->src->name,
            (unsigned long long)v, t->spec.name);
    return BFH_E_INVALID;
  }
  const uint64_t tid = tids->v[0];
  check_t c = {.o = o, .kind = CHECK_TERM, .tid = tid};
  o->check++;
  int rc = bfh_query(db, expr, method, 0, check_key, &c, NULL);
  if (rc != BFH_OK) return rc;
  uint64_t expected = 0;
  for (uint64_t i = 0; i < t->tid_n[tid]; i++)
    expected += o->holders[t->tid_vids.v[t->tid_at[tid] + i]].n;
  out->wrong += c.bad || c.found != expected;
  return BFH_OK;
}

/* E's range from the term of rank lo: up to the rank where the records from lo reach span
   (YCSB's scan of span records, in the attribute's order), or the last. */
static uint64_t range_end(const oracle_t *o, uint64_t lo, uint32_t span) {
  const uint64_t hi = fen_reach(o, fen_below(o, lo) + span);
  return hi < o->src->range.nterms ? hi : o->src->range.nterms - 1;
}

/* The ranks of the terms starting with the first plen bytes of term tid: [*lo, *hi]. */
static void prefix_ranks(const terms_t *t, uint64_t tid, size_t plen, uint64_t *lo, uint64_t *hi) {
  size_t len;
  const char *p = term_text(t, tid, &len);
  uint64_t bound[2]; /* the first rank at or past the prefix, the first past its terms */
  for (int past = 0; past < 2; past++) {
    uint64_t a = 0, b = t->nterms;
    while (a < b) {
      const uint64_t mid = a + (b - a) / 2;
      size_t mlen;
      const char *m = term_text(t, t->by_rank[mid], &mlen);
      const int c = term_cmp(m, mlen < plen ? mlen : plen, p, plen); /* 0: m has the prefix */
      if (c < 0 || (past && c == 0))
        a = mid + 1;
      else
        b = mid;
    }
    bound[past] = a;
  }
  *lo = bound[0];
  *hi = bound[1] - 1;
}

/* The prefix analogue of a range of span records: the shortest prefix of term tid (whole
   UTF-8 characters, before any '%' or '_', which LIKE does not take) whose terms hold at most
   span records, or the longest such prefix when every one holds more. 0: the term has no
   such prefix. */
static size_t range_prefix(const oracle_t *o, uint64_t tid, uint32_t span, uint64_t *lo,
                           uint64_t *hi) {
  const terms_t *t = &o->src->range;
  size_t len, best = 0;
  const char *w = term_text(t, tid, &len);
  for (size_t plen = 1; plen <= len && w[plen - 1] != '%' && w[plen - 1] != '_'; plen++) {
    if (plen < len && ((unsigned char)w[plen] & 0xc0) == 0x80) continue; /* mid-character */
    best = plen;
    prefix_ranks(t, tid, plen, lo, hi);
    if (fen_below(o, *hi + 1) - fen_below(o, *lo) <= (int64_t)span) return plen;
  }
  if (best) prefix_ranks(t, tid, best, lo, hi);
  return best;
}

/* E's range from record r's value: the predicate into expr and the ranks it covers. */
static int range_expr(const oracle_t *o, uint64_t r, uint32_t span, char *expr, size_t cap,
                      uint64_t *lo, uint64_t *hi) {
  const terms_t *t = &o->src->range;
  const u64vec_t *tids = &t->vid_tids[o->src->vid[o->value[r]]];
  if (tids->n == 0) return 0;
  const uint64_t tid = tids->v[0];
  size_t n = (size_t)snprintf(expr, cap, "%s ", t->spec.name);
  size_t plen = o->src->prefix ? range_prefix(o, tid, span, lo, hi) : 0;
  if (plen) {
    n += (size_t)snprintf(expr + n, cap - n, "LIKE ");
    return put_literal(t, tid, plen, "%", expr, cap, &n);
  }
  *lo = t->rank[tid];
  *hi = range_end(o, *lo, span);
  n += (size_t)snprintf(expr + n, cap - n, "BETWEEN ");
  if (!put_literal(t, tid, SIZE_MAX, "", expr, cap, &n) || n + 5 >= cap) return 0;
  n += (size_t)snprintf(expr + n, cap - n, " AND ");
  return put_literal(t, t->by_rank[*hi], SIZE_MAX, "", expr, cap, &n);
}

/* E's range of span records from record r's value with method, checks the keys; *seconds
   the query's time (choosing the range and counting its records are not timed). */
static int run_range(bfh_db *db, oracle_t *o, uint64_t r, uint32_t span, bfh_method method,
                     run_t *out, double *seconds) {
  char expr[8192];
  check_t c = {.o = o, .kind = CHECK_RANGE};
  if (!range_expr(o, r, span, expr, sizeof expr, &c.lo, &c.hi)) {
    fprintf(stderr, "bfh: ycsb: %s: record %llu has no %s term that fits a range\n", o->src->name,
            (unsigned long long)r, o->src->range.spec.name);
    return BFH_E_INVALID;
  }
  const uint64_t expected = oracle_range_count(o, c.lo, c.hi);
  o->check++;
  const double t0 = exp_now();
  int rc = bfh_query(db, expr, method, 0, check_key, &c, NULL);
  *seconds = exp_now() - t0;
  if (rc != BFH_OK) return rc;
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

/* A new record r (the next: o->n) with value number v. */
static int run_insert(bfh_db *db, oracle_t *o, uint64_t r, uint64_t v) {
  char key[DATASET_MAX_KEY + WORKLOAD_MAX_BYTES], buf[WORKLOAD_MAX_BYTES];
  if (r != o->n) return BFH_E_INVALID;
  int rc = oracle_reserve(o, r < o->cap ? o->cap : 2 * o->cap + 1);
  if (rc == BFH_OK) rc = oracle_key(o, r);
  if (rc != BFH_OK) return rc;
  size_t kn = source_key(o->src, r, key), len;
  const char *val = source_value(o->src, v, buf, &len);
  rc = bfh_put(db, key, kn, val, len);
  if (rc == BFH_OK) rc = oracle_set(o, r, v, 1);
  o->n += rc == BFH_OK;
  return rc;
}

/* One operation on record r (v: the value an update or insert gives), asked as q; *seconds
   its time. */
static int run_op(bfh_db *db, oracle_t *o, ycsb_op_t op, uint64_t r, uint32_t span, uint64_t v,
                  query_t q, bfh_method method, run_t *out, double *seconds) {
  if (op == YCSB_RANGE) return run_range(db, o, r, span, method, out, seconds);
  const double t0 = exp_now();
  int rc = BFH_OK;
  if (op == YCSB_SEARCH || op == YCSB_RMW)
    rc = q == QUERY_TERM ? run_attr_search(db, o, o->value[r], method, out)
                         : run_search(db, o, o->value[r], method, out);
  if (rc == BFH_OK && (op == YCSB_UPDATE || op == YCSB_RMW)) rc = run_update(db, o, r, v);
  if (op == YCSB_INSERT) rc = run_insert(db, o, r, v);
  *seconds = exp_now() - t0;
  return rc;
}

/* The operations of one method: nops of workload w's stream over the records so far, its
   searches asked as q. */
static int run_method(bfh_db *db, oracle_t *o, const ycsb_mix_t *mix, bfh_method method, query_t q,
                      uint64_t nops, run_t *out) {
  for (int t = 0; t < YCSB_OPS; t++) histogram_init(&out->h[t]);
  out->wrong = out->ops = 0;
  ycsb_gen_t g;
  ycsb_gen_init(&g, mix, o->n, nops, YCSB_SEED);
  rng_t pick;
  rng_init(&pick, YCSB_SEED + 1);
  int rc = BFH_OK;
  double start = exp_now();
  for (uint64_t i = 0; i < nops && rc == BFH_OK; i++) {
    uint64_t r;
    uint32_t span;
    ycsb_op_t op = ycsb_gen_next(&g, &r, &span);
    uint64_t v = rng_below(&pick, o->src->nvalues);
    double seconds = 0;
    rc = run_op(db, o, op, r, span, v, q, method, out, &seconds);
    histogram_record(&out->h[op], (uint64_t)(seconds * 1e9));
    out->ops++;
  }
  out->seconds = exp_now() - start;
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
static size_t declare(const source_t *s, bfh_attribute attrs[3],
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
    exp_csv_u64(k->csv, "wrong",
                t == YCSB_SEARCH || t == YCSB_RMW || t == YCSB_RANGE ? run->wrong : 0);
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

/* How workload w's searches are asked on source s (into qs): E's ranges of the range
   attribute; the others' searches by value, and on a data set by the query attribute too.
   Returns the count. */
static int workload_queries(const source_t *s, char w, query_t qs[2]) {
  if (w == 'E') {
    qs[0] = QUERY_RANGE;
    return 1;
  }
  qs[0] = QUERY_VALUE;
  qs[1] = QUERY_TERM;
  return s->query.decl ? 2 : 1;
}

/* The query column: "value", or the attribute asked. */
static const char *query_name(const source_t *s, query_t q) {
  return q == QUERY_VALUE ? "value" : q == QUERY_TERM ? s->query.spec.name : s->range.spec.name;
}

/* One configuration: load, then workloads A, B, C, F and E one after another on the
   database, as YCSB runs them, each with every method of the configuration. Returns BFH_OK, the
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
    query_t qs[2];
    const int nq = workload_queries(src, *w, qs);
    for (int q = 0; q < nq && rc == BFH_OK; q++) {
      k->query = query_name(src, qs[q]);
      for (int m = 0; m < cfg->nmethods && rc == BFH_OK; m++) {
        bfh_method method = cfg->methods[m];
        uint64_t nops = method == BFH_SEARCH_SCAN ? sc->scan_ops : sc->ops;
        exp_progress("ycsb %s %s %c by %s: %s", k->engine, src->name, *w, k->query,
                     exp_method_name(method));
        rc = run_method(db, &o, ycsb_mix(*w), method, qs[q], nops, run);
        exp_progress_done();
        if (rc == BFH_OK) {
          write_rows(k, cfg, method, run, load_us, bpe);
          *wrong += run->wrong;
        } else if (rc == BFH_E_UNSUPPORTED && qs[q] != QUERY_VALUE) {
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

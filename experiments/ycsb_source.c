/* ycsb_source_t: the record sources of bfh run ycsb and their attributes' terms
   (ycsb_source.h). */
#include "experiments/ycsb_source.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bfh.h"
#include "filters/hash.h"
#include "util/u64_map.h"

#define SYNTH_DOMAIN_PCT 1.0

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
} RANGE_ATTR[YCSB_SOURCES] = {
    {"n=bytes:1:15:int:range", 0},                         /* synth: the value's number */
    [1 + DATASET_WORDS] = {"word=json:word:range", 1},     /* words starting with a prefix */
    [1 + DATASET_OUI] = {"oui=csv:2:range", 0},            /* a run of MAC address blocks */
    [1 + DATASET_UNICODE] = {"cp=json:cp:int:range", 0},   /* a run of code points */
    [1 + DATASET_WORDNET] = {"words=json:words:range", 0}, /* synsets of neighbouring words */
};

/* ---- records and values ---------------------------------------------------------------------- */

/* The data set's record behind record r (its key has the cycle appended past the count). */
static uint64_t set_index(const ycsb_source_t *s, uint64_t r) {
  return r < dataset_count(s->ds) ? workload_perm_apply(&s->spread, r) : r;
}

size_t ycsb_source_key(const ycsb_source_t *s, uint64_t r, char *buf) {
  if (!s->ds) return workload_key(&s->wl, r, buf);
  size_t kn, vn;
  const char *v;
  dataset_record(s->ds, set_index(s, r), buf, &kn, &v, &vn);
  return kn;
}

const char *ycsb_source_value(const ycsb_source_t *s, uint64_t v, char *buf, size_t *len) {
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

uint64_t ycsb_source_initial(const ycsb_source_t *s, uint64_t r) {
  return s->ds ? set_index(s, r) % dataset_count(s->ds) : workload_value_id(&s->wl, r);
}

/* Gives each value number its distinct-value id. */
static int source_vids(ycsb_source_t *s) {
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
    const char *val = ycsb_source_value(s, v, buf, &len);
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

/* ---- an attribute's terms -------------------------------------------------------------------- */

const char *ycsb_terms_text(const ycsb_terms_t *t, uint64_t tid, size_t *len) {
  *len = t->off.v[tid + 1] - t->off.v[tid];
  return t->text + t->off.v[tid];
}

/* Collects one value's terms: their tids, each once. */
typedef struct term_sink {
  const ycsb_source_t *s;
  ycsb_terms_t *t;
  u64_map_t *by_hash; /* term hash -> tid + 1 */
  u64vec_t *tids;
  int rc;
} term_sink_t;

/* Appends a new term's bytes: its tid is the one before the last offset. */
static int term_add(ycsb_terms_t *t, const void *term, size_t len) {
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
  ycsb_terms_t *t = k->t;
  uint64_t h = bfh_hash64(term, len, 1) | 1, id;
  if (u64_map_get(k->by_hash, h, &id)) {
    size_t have;
    const char *at = ycsb_terms_text(t, id - 1, &have);
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
static int terms_invert(ycsb_terms_t *t, uint64_t nvids) {
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

int ycsb_term_cmp(const char *a, size_t alen, const char *b, size_t blen) {
  int c = memcmp(a, b, alen < blen ? alen : blen);
  return c ? c : (alen > blen) - (alen < blen);
}

static int sorted_term_cmp(const void *a, const void *b) {
  const sorted_term_t *x = a, *y = b;
  return ycsb_term_cmp(x->p, x->len, y->p, y->len);
}

/* Ranks the terms in the predicates' order. */
static int terms_sort(ycsb_terms_t *t) {
  sorted_term_t *st = malloc((t->nterms + 1) * sizeof *st);
  t->by_rank = malloc((t->nterms + 1) * sizeof *t->by_rank);
  t->rank = malloc((t->nterms + 1) * sizeof *t->rank);
  if (!st || !t->by_rank || !t->rank) {
    free(st);
    return BFH_E_NOMEM;
  }
  for (uint64_t tid = 0; tid < t->nterms; tid++) {
    st[tid].p = ycsb_terms_text(t, tid, &st[tid].len);
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
static int terms_build(const ycsb_source_t *s, ycsb_terms_t *t, const char *decl) {
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
    const char *val = ycsb_source_value(s, v, buf, &len);
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

static void terms_release(ycsb_terms_t *t, uint64_t nvids) {
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

int ycsb_literal(const char *text, size_t len, const char *suffix, char *buf, size_t cap,
                 size_t *n) {
  if (*n + 2 * len + strlen(suffix) + 2 > cap || memchr(text, '\0', len)) return 0;
  buf[(*n)++] = '\'';
  for (size_t i = 0; i < len; i++) {
    if (text[i] == '\'') buf[(*n)++] = '\'';
    buf[(*n)++] = text[i];
  }
  *n += (size_t)snprintf(buf + *n, cap - *n, "%s'", suffix);
  return 1;
}

int ycsb_terms_literal(const ycsb_terms_t *t, uint64_t tid, size_t len_cut, const char *suffix,
                       char *buf, size_t cap, size_t *n) {
  size_t len;
  const char *text = ycsb_terms_text(t, tid, &len);
  if (t->spec.is_int) {
    uint64_t u = 0;
    for (size_t i = 0; i < ATTR_INT_TERM_BYTES; i++) u = u << 8 | (uint8_t)text[i];
    *n += (size_t)snprintf(buf + *n, cap > *n ? cap - *n : 0, "%lld",
                           (long long)(int64_t)(u ^ (1ull << 63)));
    return *n < cap;
  }
  return ycsb_literal(text, len < len_cut ? len : len_cut, suffix, buf, cap, n);
}

/* ---- opening a source ------------------------------------------------------------------------ */

int ycsb_source_open(ycsb_source_t *s, int kind, uint64_t n, uint64_t seed) {
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
    workload_perm_init(&s->spread, s->nvalues, seed);
    rc = source_vids(s);
    if (rc == BFH_OK) rc = terms_build(s, &s->query, QUERY_ATTR[k]);
  }
  if (rc == BFH_OK) rc = terms_build(s, &s->range, RANGE_ATTR[kind].decl);
  return rc == BFH_OK ? terms_sort(&s->range) : rc;
}

void ycsb_source_close(ycsb_source_t *s) {
  dataset_destroy(s->ds);
  terms_release(&s->query, s->nvids);
  terms_release(&s->range, s->nvids);
  free(s->vid);
}

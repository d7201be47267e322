/* Searches by predicate (bfh_query, bfh_query_prepare; doc/query.md) against an in-memory
 * oracle, on every engine and method.
 *
 * A database with three declared attributes, a = json:a, b = json:b (an array in some values:
 * each element a term) and n = json:n:int, takes random puts, overwrites and deletes (JSON
 * values, some without a field, some not JSON at all), flushed into many small tables. After
 * each quarter of the operations, random predicates (=, IN, <, <=, >, >=, BETWEEN, LIKE,
 * AND, OR, nested up to three deep) are run by SCAN, LEAVES, HIERARCHY, SLICED and AUTO,
 * prepared and one-shot, and each must
 * report exactly the oracle's keys, each once: the live keys whose latest value satisfies
 * the predicate. a and n are declared with range items (:range), b without: a range on b
 * reads every table. n's values include negative numbers and the int64 extremes, a's the
 * empty string and texts longer than 8 bytes that share their first 8 (so that their codes
 * meet and only validation tells them apart); ranges come empty (a > b, beyond every
 * value), wide and narrow, prefixes shorter and longer than 8 bytes.
 * Some runs (the own engine's with large tables, LevelDB's and RocksDB's) also declare two
 * composites, an = pair:a,n and ba = pair:b,a (b multi-valued: a value is indexed under the
 * product of its terms), so that the filters are asked the pairs' terms wherever an AND holds
 * equalities on both members (doc/query.md "Composites"); besides the random predicates, each
 * phase then runs PAIR_QUERIES ANDs of IN lists on both members of each, some with a third
 * conjunct, some in an OR, by every method, and a composite asked by name is refused.
 * STANDALONE answers from its per-attribute indexes where the database keeps them (the own
 * engine, read-write; ranges and prefixes by scans of them); CUCKOO answers whole values only
 * and must refuse.
 * The newest K (K = 1, 3, 10 and more than every key) of some of the predicates, by every
 * method, must be exactly the oracle's: the K live keys that satisfy it whose latest write
 * came last, newest first. RocksDB zeroes the sequence numbers of the entries it compacts
 * into its bottom level, which then rank oldest, by key: on RocksDB the answer must follow
 * the oracle's order up to a point and be in key order after it (newest_matches).
 * The same runs on the own engine (with tables of one block, and of many, which AUTO reads
 * block by block), stock LevelDB and stock RocksDB, each read-write and then read-only on the
 * same database. A bad expression or an unknown attribute is refused naming
 * its column.
 *
 * Fixed seed. BFH_MODEL_OPS=N sets the operations per engine (default MODEL_OPS, which keeps
 * each engine well under a minute on the 2-core CI machine).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bfh.h"
#include "util/random.h"
#include "tests/test_util.h"
#include "tests/api/db_fixture.h"

#define NKEYS 1500
#define MODEL_OPS 6000
#define FLUSH_EVERY 700
#define PHASES 4
#define QUERIES 12       /* per phase and method */
#define NEWEST_QUERIES 4 /* of them, whose newest K is checked too */
#define NA 12            /* distinct terms of a, b and n */
#define NB 10
#define NN 16
#define MAX_B 3 /* elements of b's array */
#define RNG_SEED 0x71756572796d6f64ull
#define BLOCK_BYTES (4 << 10)         /* the own engine's data blocks (lsm/db.h) */
#define SMALL_TABLE_BYTES (4 << 10)   /* one block: many tables, for the leaves to prune */
#define LARGE_TABLE_BYTES (256 << 10) /* many blocks: for AUTO's block path */

static int setup_fixture(void **state) {
  return db_fixture_setup(state, "query_model_test");
}

static const bfh_attribute ATTRS[5] = {{"a", "json:a:range"},
                                       {"b", "json:b"},
                                       {"n", "json:n:int:range"},
                                       {"an", "pair:a,n"},
                                       {"ba", "pair:b,a"}};
#define NATTRS 3        /* without the composites */
#define NATTRS_PAIRS 5  /* with them */
#define PAIR_QUERIES 12 /* per phase, where the composites are declared */

/* n's values by index; NVALS[NN] is one no value holds. */
static const int64_t NVALS[NN + 1] = {
    INT64_MIN, INT64_MIN + 1,    -1000000,      -5,        -1, 0, 1, 2, 7, 100, 1023, 1024,
    4096,      (int64_t)1 << 40, INT64_MAX - 1, INT64_MAX, 999};

/* a's text by index (index NA is one no value holds): the empty string, short texts, and
   texts longer than 8 bytes whose first 8 are one code. */
static void a_text(int t, char *out, size_t cap) {
  if (t == 0)
    snprintf(out, cap, "%s", "");
  else if (t == NA)
    snprintf(out, cap, "%s", "Awarehouse99");
  else if (t % 2)
    snprintf(out, cap, "A%d", t);
  else
    snprintf(out, cap, "Awarehouse%02d", t);
}

/* ---- The oracle ------------------------------------------------------------------------ */

/* A key's latest value, as its attributes: -1 for a field the value lacks. */
typedef struct rec {
  int live;
  int a, nb, b[MAX_B], n;
  uint64_t written; /* the order of the key's latest write (the model's write count then) */
} rec_t;

typedef struct model {
  rec_t r[NKEYS];
  uint64_t writes; /* puts and deletes so far */
} model_t;

static void key_of(unsigned i, char *k, size_t cap) {
  snprintf(k, cap, "key%05u", i);
}

/* A random value for r (and its text into v): a JSON object with some fields, b a string or
   an array, n written as a number; or a value that is not JSON (no term of any attribute). */
static size_t make_value(rng_t *g, rec_t *r, char *v, size_t cap) {
  uint64_t x = rng_next(g);
  r->a = x % 5 ? (int)(rng_next(g) % NA) : -1;
  r->n = x % 7 ? (int)(rng_next(g) % NN) : -1;
  r->nb = x % 4 ? 1 + (int)(rng_next(g) % MAX_B) : 0;
  for (int i = 0; i < r->nb; i++) r->b[i] = (int)(rng_next(g) % NB);
  if (x % 23 == 0) { /* not JSON */
    r->a = r->n = -1;
    r->nb = 0;
    return (size_t)snprintf(v, cap, "plain,%u", (unsigned)(x >> 8) % 100);
  }
  size_t len = (size_t)snprintf(v, cap, "{\"id\":%u", (unsigned)(x >> 16) % 1000);
  char a[32];
  a_text(r->a, a, sizeof a);
  if (r->a >= 0) len += (size_t)snprintf(v + len, cap - len, ",\"a\":\"%s\"", a);
  if (r->n >= 0) len += (size_t)snprintf(v + len, cap - len, ",\"n\":%lld", (long long)NVALS[r->n]);
  if (r->nb == 1 && x % 3 == 0) {
    len += (size_t)snprintf(v + len, cap - len, ",\"b\":\"B%d\"", r->b[0]);
  } else if (r->nb) {
    len += (size_t)snprintf(v + len, cap - len, ",\"b\":[");
    for (int i = 0; i < r->nb; i++)
      len += (size_t)snprintf(v + len, cap - len, "%s\"B%d\"", i ? "," : "", r->b[i]);
    len += (size_t)snprintf(v + len, cap - len, "]");
  }
  return len + (size_t)snprintf(v + len, cap - len, "}");
}

/* ---- Predicates: a tree, its text and its value over a record --------------------------- */

enum { P_LEAF, P_AND, P_OR };
/* A leaf's comparison: P_IN (= one term or IN a list), the ranges, LIKE with a prefix. */
enum { P_IN, P_LT, P_LE, P_GT, P_GE, P_BETWEEN, P_LIKE, P_NCMP };

static const char *const PREFIXES[] = {
    "", "A", "A1", "Aw", "Awarehouse", "Awarehouse0", "Awarehouse1", "B", "B1", "Z"};
#define NPREFIXES (sizeof PREFIXES / sizeof PREFIXES[0])

typedef struct pnode {
  int op;
  int attr;     /* P_LEAF: 0 a, 1 b, 2 n */
  int cmp;      /* P_LEAF: P_IN, ... */
  int terms[4]; /* P_LEAF: one term, or an IN list; BETWEEN's two ends; LIKE's prefix */
  int nterms;
  struct pnode *kid[3];
  int nkids;
} pnode_t;

static pnode_t *pnode_random(rng_t *g, int depth) {
  pnode_t *p = calloc(1, sizeof *p);
  assert_non_null(p);
  if (depth == 0 || rng_next(g) % 3 == 0) {
    p->op = P_LEAF;
    p->attr = (int)(rng_next(g) % 3);
    int domain = p->attr == 0 ? NA : p->attr == 1 ? NB : NN;
    p->cmp = rng_next(g) % 2 ? P_IN : (int)(rng_next(g) % P_NCMP);
    if (p->cmp == P_LIKE && p->attr == 2) p->cmp = P_BETWEEN; /* LIKE is for text */
    p->nterms = p->cmp == P_BETWEEN                 ? 2
                : p->cmp != P_IN || rng_next(g) % 3 ? 1
                                                    : 2 + (int)(rng_next(g) % 3);
    /* now and then a term no value holds */
    for (int i = 0; i < p->nterms; i++) p->terms[i] = (int)(rng_next(g) % (uint64_t)(domain + 1));
    if (p->cmp == P_LIKE) p->terms[0] = (int)(rng_next(g) % NPREFIXES);
    return p;
  }
  p->op = rng_next(g) % 2 ? P_AND : P_OR;
  p->nkids = 2 + (int)(rng_next(g) % 2);
  for (int i = 0; i < p->nkids; i++) p->kid[i] = pnode_random(g, depth - 1);
  return p;
}

static void pnode_free(pnode_t *p) {
  if (!p) return;
  for (int i = 0; i < p->nkids; i++) pnode_free(p->kid[i]);
  free(p);
}

static size_t term_text(int attr, int t, int quoted_int, char *out, size_t cap) {
  char a[32];
  a_text(t, a, sizeof a);
  if (attr == 0) return (size_t)snprintf(out, cap, "'%s'", a);
  if (attr == 1) return (size_t)snprintf(out, cap, "'B%d'", t);
  long long v = (long long)NVALS[t];
  if (quoted_int && v >= 0) return (size_t)snprintf(out, cap, "'00%lld'", v); /* '007' is 7 */
  return (size_t)snprintf(out, cap, quoted_int ? "'%lld'" : "%lld", v);
}

static size_t leaf_text(const pnode_t *p, char *out, size_t cap) {
  static const char *names[3] = {"a", "b", "n"};
  static const char *signs[P_NCMP] = {"=", "<", "<=", ">", ">=", "BETWEEN", "like"};
  if (p->cmp == P_LIKE)
    return (size_t)snprintf(out, cap, "%s %s '%s%%'", names[p->attr], signs[p->cmp],
                            PREFIXES[p->terms[0]]);
  size_t len = (size_t)snprintf(out, cap, "%s %s ", names[p->attr],
                                p->cmp == P_IN && p->nterms > 1 ? "in (" : signs[p->cmp]);
  for (int i = 0; i < p->nterms; i++) {
    if (i) len += (size_t)snprintf(out + len, cap - len, p->cmp == P_BETWEEN ? " and " : ", ");
    len += term_text(p->attr, p->terms[i], p->terms[i] % 2, out + len, cap - len);
  }
  if (p->cmp == P_IN && p->nterms > 1) len += (size_t)snprintf(out + len, cap - len, ")");
  return len;
}

static size_t pnode_text(const pnode_t *p, char *out, size_t cap) {
  size_t len = 0;
  if (p->op == P_LEAF) return leaf_text(p, out, cap);
  for (int i = 0; i < p->nkids; i++) {
    if (i) len += (size_t)snprintf(out + len, cap - len, p->op == P_AND ? " AND " : " or ");
    len += (size_t)snprintf(out + len, cap - len, "(");
    len += pnode_text(p->kid[i], out + len, cap - len);
    len += (size_t)snprintf(out + len, cap - len, ")");
  }
  return len;
}

/* The sign of term x of attr against term y: integers as integers, text bytewise. */
static int term_cmp(int attr, int x, int y) {
  if (attr == 2) return (NVALS[x] > NVALS[y]) - (NVALS[x] < NVALS[y]);
  char a[32], b[32];
  if (attr == 0) {
    a_text(x, a, sizeof a);
    a_text(y, b, sizeof b);
  } else {
    snprintf(a, sizeof a, "B%d", x);
    snprintf(b, sizeof b, "B%d", y);
  }
  int c = strcmp(a, b);
  return (c > 0) - (c < 0);
}

/* Does term t of p's attribute satisfy leaf p? */
static int term_holds(const pnode_t *p, int t) {
  switch (p->cmp) {
    case P_LT:
      return term_cmp(p->attr, t, p->terms[0]) < 0;
    case P_LE:
      return term_cmp(p->attr, t, p->terms[0]) <= 0;
    case P_GT:
      return term_cmp(p->attr, t, p->terms[0]) > 0;
    case P_GE:
      return term_cmp(p->attr, t, p->terms[0]) >= 0;
    case P_BETWEEN:
      return term_cmp(p->attr, t, p->terms[0]) >= 0 && term_cmp(p->attr, t, p->terms[1]) <= 0;
    case P_LIKE: {
      char s[32];
      if (p->attr == 0)
        a_text(t, s, sizeof s);
      else
        snprintf(s, sizeof s, "B%d", t);
      return strncmp(s, PREFIXES[p->terms[0]], strlen(PREFIXES[p->terms[0]])) == 0;
    }
    default:
      for (int i = 0; i < p->nterms; i++)
        if (term_cmp(p->attr, t, p->terms[i]) == 0) return 1;
      return 0;
  }
}

static int pnode_eval(const pnode_t *p, const rec_t *r) {
  if (p->op == P_LEAF) {
    if (p->attr == 0) return r->a >= 0 && term_holds(p, r->a);
    if (p->attr == 2) return r->n >= 0 && term_holds(p, r->n);
    for (int i = 0; i < r->nb; i++)
      if (term_holds(p, r->b[i])) return 1;
    return 0;
  }
  int and = p->op == P_AND;
  for (int i = 0; i < p->nkids; i++)
    if (pnode_eval(p->kid[i], r) != and) return !and;
  return and;
}

/* ---- Running a query ----------------------------------------------------------------- */

typedef struct got {
  uint8_t seen[NKEYS];
  unsigned dup, bad, n;
  unsigned order[NKEYS]; /* the first NKEYS keys, in the order reported */
} got_t;

static int on_key(void *arg, const void *key, size_t len) {
  got_t *g = arg;
  char k[32];
  unsigned i;
  if (len >= sizeof k) return g->bad++, 0;
  memcpy(k, key, len);
  k[len] = '\0';
  if (sscanf(k, "key%05u", &i) != 1 || i >= NKEYS) return g->bad++, 0;
  g->dup += g->seen[i];
  g->seen[i] = 1;
  if (g->n < NKEYS) g->order[g->n] = i;
  g->n++;
  return 0;
}

/* The methods; STANDALONE last, run where the database keeps the stand-alone index. */
static const bfh_method METHODS[] = {BFH_SEARCH_SCAN,   BFH_SEARCH_LEAVES, BFH_SEARCH_HIERARCHY,
                                     BFH_SEARCH_SLICED, BFH_SEARCH_AUTO,   BFH_SEARCH_STANDALONE};
#define NMETHODS (sizeof METHODS / sizeof METHODS[0])

/* Keys STANDALONE reported on the index's word (doc/standalone.md "Exact answers"), summed
   over check_query's runs: the answers checked above include such keys. */
static uint64_t g_trusted;

/* Every method answers p exactly (STANDALONE when standalone is set, from its indexes, ranges
   and prefixes too); returns how many keys the oracle has for it. */
static unsigned check_query(bfh_db *db, const model_t *m, const pnode_t *p, int standalone,
                            const char *label) {
  char text[4096];
  pnode_text(p, text, sizeof text);
  unsigned want = 0;
  for (unsigned i = 0; i < NKEYS; i++) want += m->r[i].live && pnode_eval(p, &m->r[i]);
  bfh_prepared *q = NULL;
  if (bfh_query_prepare(db, text, &q) != BFH_OK)
    fail_msg("%s: prepare '%s': %s", label, text, bfh_last_error(db));
  for (size_t mi = 0; mi < NMETHODS - !standalone; mi++) {
    for (int prepared = 0; prepared < 2; prepared++) {
      got_t g;
      memset(&g, 0, sizeof g);
      bfh_search_stats st;
      int rc = prepared ? bfh_query_run(q, METHODS[mi], 0, on_key, &g, &st)
                        : bfh_query(db, text, METHODS[mi], 0, on_key, &g, &st);
      if (rc != BFH_OK)
        fail_msg("%s: %s by %s: %d %s", label, text, bfh_method_name(METHODS[mi]), rc,
                 bfh_last_error(db));
      if (METHODS[mi] == BFH_SEARCH_STANDALONE && st.method_used != BFH_SEARCH_STANDALONE)
        fail_msg("%s: '%s' by standalone ran %s", label, text, bfh_method_name(st.method_used));
      if (METHODS[mi] == BFH_SEARCH_STANDALONE) g_trusted += st.trusted;
      unsigned missing = 0, extra = 0;
      for (unsigned i = 0; i < NKEYS; i++) {
        int w = m->r[i].live && pnode_eval(p, &m->r[i]);
        missing += w && !g.seen[i];
        extra += !w && g.seen[i];
      }
      if (missing || extra || g.dup || g.bad || st.results != want)
        fail_msg(
            "%s: '%s' by %s%s: %u keys, want %u: %u missing, %u extra, %u twice, %u bad, "
            "results %llu",
            label, text, bfh_method_name(METHODS[mi]), prepared ? " (prepared)" : "", g.n, want,
            missing, extra, g.dup, g.bad, (unsigned long long)st.results);
    }
  }
  bfh_query_free(q);
  return want;
}

/* ---- The newest K --------------------------------------------------------------------- */

static const model_t *by_written_model; /* qsort's context */

/* The oracle's order: the latest write last first. */
static int by_written_desc(const void *a, const void *b) {
  uint64_t x = by_written_model->r[*(const unsigned *)a].written;
  uint64_t y = by_written_model->r[*(const unsigned *)b].written;
  return (x < y) - (x > y);
}

/* Does the answer g match the oracle's newest k of want[0, nwant) (newest first)? Exactly,
   or (zeroed: RocksDB) the oracle's order up to a point and, after it, keys that satisfy
   the predicate in ascending key order (key%05u: by index), each older than every key before
   the point. */
static int newest_matches(const got_t *g, const unsigned *want, unsigned nwant, uint64_t k,
                          const model_t *m, int zeroed) {
  unsigned n = k < nwant ? (unsigned)k : nwant;
  if (g->n != n || g->dup || g->bad) return 0;
  unsigned p = 0;
  while (p < n && g->order[p] == want[p]) p++;
  if (p == n) return 1;
  if (!zeroed) return 0;
  for (unsigned i = p; i < n; i++) {
    const rec_t *r = &m->r[g->order[i]];
    int held = 0;
    for (unsigned j = p; j < nwant && !held; j++) held = want[j] == g->order[i];
    if (!held || (i > p && g->order[i] <= g->order[i - 1])) return 0;
    if (p > 0 && r->written > m->r[want[p - 1]].written) return 0;
  }
  return 1;
}

/* The newest K of p by every method (STANDALONE when standalone is set: it reads tables for
   the newest K) is the oracle's, for K = 1, 3, 10 and more than every key; some by the
   prepared query. */
static void check_newest(bfh_db *db, const model_t *m, const pnode_t *p, int standalone, int zeroed,
                         const char *label) {
  static const uint64_t ks[] = {1, 3, 10, NKEYS + 1};
  char text[4096];
  pnode_text(p, text, sizeof text);
  unsigned *want = malloc(NKEYS * sizeof *want), nwant = 0;
  assert_non_null(want);
  for (unsigned i = 0; i < NKEYS; i++)
    if (m->r[i].live && pnode_eval(p, &m->r[i])) want[nwant++] = i;
  by_written_model = m;
  qsort(want, nwant, sizeof *want, by_written_desc);
  bfh_prepared *q = NULL;
  assert_int_equal(bfh_query_prepare(db, text, &q), BFH_OK);
  got_t *g = malloc(sizeof *g);
  assert_non_null(g);
  for (size_t mi = 0; mi < NMETHODS - !standalone; mi++)
    for (size_t ki = 0; ki < sizeof ks / sizeof ks[0]; ki++) {
      memset(g, 0, sizeof *g);
      bfh_search_stats st;
      int rc = ki % 2 ? bfh_query_run(q, METHODS[mi], ks[ki], on_key, g, &st)
                      : bfh_query(db, text, METHODS[mi], ks[ki], on_key, g, &st);
      if (rc != BFH_OK)
        fail_msg("%s: newest %llu of '%s' by %s: %d %s", label, (unsigned long long)ks[ki], text,
                 bfh_method_name(METHODS[mi]), rc, bfh_last_error(db));
      if (!newest_matches(g, want, nwant, ks[ki], m, zeroed) || st.results != g->n)
        fail_msg(
            "%s: newest %llu of '%s' by %s: %u keys (first key%05u), want %u (first "
            "key%05u), results %llu",
            label, (unsigned long long)ks[ki], text, bfh_method_name(METHODS[mi]), g->n,
            g->n ? g->order[0] : 0, ks[ki] < nwant ? (unsigned)ks[ki] : nwant, nwant ? want[0] : 0,
            (unsigned long long)st.results);
    }
  free(g);
  bfh_query_free(q);
  free(want);
}

/* The edges of ranges, each by every method: the int64 extremes (n < INT64_MIN, n >
   INT64_MAX: empty), a > b, negative ranges, the empty string, prefixes longer than 8 bytes
   and the empty prefix, a range on b (no range items: read whole). */
static void check_edges(bfh_db *db, const model_t *m, int standalone, const char *label) {
  static const int edges[][4] = {
      {2, P_LT, 0, 0},      {2, P_GT, 15, 0},       {2, P_GE, 0, 0},        {2, P_LE, 15, 0},
      {2, P_LE, 0, 0},      {2, P_GE, 15, 0},       {2, P_BETWEEN, 11, 8},  {2, P_BETWEEN, 3, 4},
      {2, P_BETWEEN, 0, 1}, {2, P_BETWEEN, 16, 16}, {2, P_BETWEEN, 10, 11}, {2, P_LT, 5, 0},
      {0, P_LIKE, 5, 0},    {0, P_LIKE, 6, 0},      {0, P_LIKE, 0, 0},      {0, P_LT, 0, 0},
      {0, P_LE, 0, 0},      {0, P_GT, NA, 0},       {0, P_BETWEEN, 2, 4},   {0, P_BETWEEN, 4, 2},
      {1, P_GT, 5, 0},      {1, P_LIKE, 8, 0}};
  for (size_t i = 0; i < sizeof edges / sizeof edges[0]; i++) {
    pnode_t p = {.op = P_LEAF,
                 .attr = edges[i][0],
                 .cmp = edges[i][1],
                 .terms = {edges[i][2], edges[i][3]},
                 .nterms = edges[i][1] == P_BETWEEN ? 2 : 1};
    check_query(db, m, &p, standalone, label);
  }
}

/* A leaf attr IN (1 to 3 random terms, now and then one no value holds). */
static pnode_t *in_random(rng_t *g, int attr) {
  pnode_t *p = calloc(1, sizeof *p);
  assert_non_null(p);
  int domain = attr == 0 ? NA : attr == 1 ? NB : NN;
  p->op = P_LEAF;
  p->attr = attr;
  p->cmp = P_IN;
  p->nterms = 1 + (int)(rng_next(g) % 3);
  for (int i = 0; i < p->nterms; i++) p->terms[i] = (int)(rng_next(g) % (uint64_t)(domain + 1));
  return p;
}

/* An AND of equalities on both members of a composite (a and n, or b and a), now and then
   with a third conjunct (any random leaf), and now and then in an OR with a random leaf. */
static pnode_t *pair_random(rng_t *g) {
  pnode_t *p = calloc(1, sizeof *p);
  assert_non_null(p);
  int ba = rng_next(g) % 2;
  p->op = P_AND;
  p->kid[p->nkids++] = in_random(g, ba ? 1 : 0);
  p->kid[p->nkids++] = in_random(g, ba ? 0 : 2);
  if (rng_next(g) % 3 == 0) p->kid[p->nkids++] = pnode_random(g, 0);
  if (rng_next(g) % 4) return p;
  pnode_t *o = calloc(1, sizeof *o);
  assert_non_null(o);
  o->op = P_OR;
  o->kid[o->nkids++] = p;
  o->kid[o->nkids++] = pnode_random(g, 1);
  return o;
}

/* Where the composites are declared: ANDs over their members by every method, exactly; the
   composites themselves cannot be asked. */
static void check_pairs(bfh_db *db, const model_t *m, rng_t *g, int standalone, const char *label) {
  unsigned nonempty = 0;
  for (int i = 0; i < PAIR_QUERIES; i++) {
    pnode_t *p = pair_random(g);
    nonempty += check_query(db, m, p, standalone, label) > 0;
    pnode_free(p);
  }
  assert_true(nonempty >= PAIR_QUERIES / 4);
  assert_int_equal(bfh_query(db, "an = 'A1'", BFH_SEARCH_AUTO, 0, NULL, NULL, NULL), BFH_E_INVALID);
  assert_non_null(strstr(bfh_last_error(db), "column 1: an is a composite of a and n"));
}

/* Random predicates by every method (STANDALONE where the database keeps its index); CUCKOO
   refuses them. pairs: the composites are declared (check_pairs). */
static void check_phase(bfh_db *db, const model_t *m, uint64_t seed, int standalone, int zeroed,
                        int pairs, const char *label) {
  rng_t g;
  rng_init(&g, seed);
  unsigned nonempty = 0;
  for (int i = 0; i < QUERIES; i++) {
    pnode_t *p = pnode_random(&g, 3);
    nonempty += check_query(db, m, p, standalone, label) > 0;
    if (i < NEWEST_QUERIES) check_newest(db, m, p, standalone, zeroed, label);
    pnode_free(p);
  }
  /* The predicates are not all empty: a search that finds nothing would pass above. */
  assert_true(nonempty >= QUERIES / 3);
  if (pairs) check_pairs(db, m, &g, standalone, label);
  assert_int_equal(bfh_query(db, "a = 'A1'", BFH_SEARCH_CUCKOO, 0, NULL, NULL, NULL),
                   BFH_E_UNSUPPORTED);
  assert_non_null(strstr(bfh_last_error(db), "whole values only"));
  if (!standalone) {
    assert_int_equal(bfh_query(db, "a = 'A1'", BFH_SEARCH_STANDALONE, 0, NULL, NULL, NULL),
                     BFH_E_UNSUPPORTED);
    assert_non_null(strstr(bfh_last_error(db), "standalone"));
  }
}

/* Ranges and prefixes prune through the range items: an empty range of 1,024 codes between
   two held values (n BETWEEN 2000 AND 3023: 1,024 and 4,096 are held), and a prefix longer
   than 8 bytes no value has, are answered by the filters (not SCAN's fallback) and read few
   tables. Each takes up to 2 x 15 probes per level (query/range_cover.h), each probe a false
   positive rate under 3% as above; the bound checked, half the live tables, is far from what
   the probes would give if they were all false positives. */
static void check_range_pruning(bfh_db *db, const char *label) {
  static const char *none[2] = {"n BETWEEN 2000 AND 3023", "a LIKE 'Awarxhouse7%'"};
  static const bfh_method by_filters[4] = {BFH_SEARCH_LEAVES, BFH_SEARCH_HIERARCHY,
                                           BFH_SEARCH_SLICED, BFH_SEARCH_AUTO};
  for (int m = 0; m < 4; m++)
    for (int i = 0; i < 2; i++) {
      bfh_search_stats st;
      assert_int_equal(bfh_query(db, none[i], by_filters[m], 0, NULL, NULL, &st), BFH_OK);
      assert_int_equal(st.results, 0);
      print_message("%s: '%s' by %s read %llu of %u tables\n", label, none[i],
                    bfh_method_name(by_filters[m]), (unsigned long long)st.tables_scanned,
                    st.tables_live);
      assert_int_not_equal(st.method_used, BFH_SEARCH_SCAN);
      if (st.tables_scanned * 2 > st.tables_live)
        fail_msg("%s: '%s' by %s read %llu of %u tables", label, none[i],
                 bfh_method_name(by_filters[m]), (unsigned long long)st.tables_scanned,
                 st.tables_live);
    }
}

/* The filters prune by the tree: a leaf no value holds (A99, 999) rules a table out alone,
   and so does an AND with it, or an OR of two of them; an OR with a term most tables hold
   reads most tables. The leaves here have m = 8192 bits, k = 3 and under 1,000 items
   each (under 31% of their bits set), so a leaf's false positive rate is under 3%:
   the bound checked, 10% of the live tables, leaves room for the tables still unindexed. */
static void check_pruning(bfh_db *db, const char *label) {
  static const char *none[3] = {"a = 'A99'", "a = 'A1' AND n = 999", "a = 'A99' OR n = 999"};
  static const bfh_method by_filters[3] = {BFH_SEARCH_LEAVES, BFH_SEARCH_HIERARCHY,
                                           BFH_SEARCH_SLICED};
  for (int m = 0; m < 3; m++) {
    bfh_search_stats st;
    for (int i = 0; i < 3; i++) {
      assert_int_equal(bfh_query(db, none[i], by_filters[m], 0, NULL, NULL, &st), BFH_OK);
      assert_int_equal(st.results, 0);
      if (st.tables_live < 10) fail_msg("%s: %u tables only", label, st.tables_live);
      if (st.tables_scanned * 10 > st.tables_live)
        fail_msg("%s: '%s' by %s read %llu of %u tables", label, none[i],
                 bfh_method_name(by_filters[m]), (unsigned long long)st.tables_scanned,
                 st.tables_live);
    }
    assert_int_equal(bfh_query(db, "a = 'A1' OR n = 999", by_filters[m], 0, NULL, NULL, &st),
                     BFH_OK);
    assert_true(st.tables_scanned * 2 > st.tables_live);
  }
  check_range_pruning(db, label);
}

/* ---- The workload --------------------------------------------------------------------- */

static void options(bfh_options *o, bfh_engine engine, size_t table_bytes, int pairs) {
  bfh_options_init(o);
  o->engine = engine;
  /* Large tables are made from a memtable larger than one (check_blocks' flush). */
  o->memtable_bytes = table_bytes > BLOCK_BYTES ? 1 << 20 : 64 << 10;
  o->table_bytes = table_bytes;
  o->value_filter_bits = 8192;
  o->attributes = ATTRS;
  o->attribute_count = pairs ? NATTRS_PAIRS : NATTRS;
}

static uint64_t model_ops(void) {
  const char *s = getenv("BFH_MODEL_OPS");
  return s && *s ? strtoull(s, NULL, 10) : MODEL_OPS;
}

/* ops random writes (a put of a new value, an overwrite, or a delete) into db and m. */
static void write_ops(bfh_db *db, model_t *m, rng_t *g, uint64_t ops, uint64_t *done) {
  for (uint64_t i = 0; i < ops; i++) {
    unsigned k = (unsigned)(rng_next(g) % NKEYS);
    char key[32], val[256];
    key_of(k, key, sizeof key);
    m->writes++;
    if (rng_next(g) % 8 == 0) {
      assert_int_equal(bfh_delete(db, key, strlen(key)), BFH_OK);
      m->r[k].live = 0;
    } else {
      rec_t r;
      size_t len = make_value(g, &r, val, sizeof val);
      assert_int_equal(bfh_put(db, key, strlen(key), val, len), BFH_OK);
      r.live = 1;
      r.written = m->writes;
      m->r[k] = r;
    }
    if (++*done % FLUSH_EVERY == 0) assert_int_equal(bfh_flush(db), BFH_OK);
  }
}

/* AUTO reads a table of many blocks through its block filters or map: only the blocks where
   the predicate may hold. 400 keys with a = 'A77' (a term no other value has) are written
   after 12,000 values without terms (430 KB), so that they share the last blocks of a table of
   many; a search for them reads those blocks only, and finds the 400, as SCAN does (400 gets
   from the stand-alone index would cost more than those blocks: AUTO reads them); an AND with
   a term no value has reads no table at all (the filters' answers intersect to nothing). The
   keys are deleted after. */
static void check_blocks(bfh_db *db, const char *label) {
  char key[32];
  for (unsigned i = 0; i < 12400; i++) {
    snprintf(key, sizeof key, i < 12000 ? "zy%05u" : "zz%05u", i);
    const char *val = i < 12000 ? "filler without terms" : "{\"a\":\"A77\",\"n\":5}";
    assert_int_equal(bfh_put(db, key, strlen(key), val, strlen(val)), BFH_OK);
  }
  assert_int_equal(bfh_flush(db), BFH_OK);
  bfh_search_stats st;
  for (int m = 0; m < 2; m++) {
    bfh_method method = m ? BFH_SEARCH_AUTO : BFH_SEARCH_SCAN;
    assert_int_equal(bfh_query(db, "a = 'A77' AND n IN (5, 6)", method, 0, NULL, NULL, &st),
                     BFH_OK);
    if (st.results != 400)
      fail_msg("%s: %llu keys by %s", label, (unsigned long long)st.results,
               bfh_method_name(method));
  }
  if (st.blocks_read == 0 || st.blocks_read > 4)
    fail_msg("%s: AUTO read %llu blocks of %llu tables", label, (unsigned long long)st.blocks_read,
             (unsigned long long)st.tables_scanned);
  assert_int_equal(bfh_query(db, "a = 'A77' AND n = 999", BFH_SEARCH_AUTO, 0, NULL, NULL, &st),
                   BFH_OK);
  assert_int_equal(st.tables_scanned, 0);
  for (unsigned i = 0; i < 12400; i++) {
    snprintf(key, sizeof key, i < 12000 ? "zy%05u" : "zz%05u", i);
    assert_int_equal(bfh_delete(db, key, strlen(key)), BFH_OK);
  }
}

/* The model on one engine, with tables of table_bytes (and the composites declared when
   pairs is set): read-write, then read-only. */
static void run_engine(db_fixture_t *f, bfh_engine engine, const char *name, size_t table_bytes,
                       int pairs) {
  char dir[4400], idx[4400], label[64];
  snprintf(dir, sizeof dir, "%s/%s", f->root, name);
  snprintf(idx, sizeof idx, "%s/%s-index", f->root, name);
  model_t *m = calloc(1, sizeof *m);
  assert_non_null(m);
  bfh_options o;
  options(&o, engine, table_bytes, pairs);
  /* The own engine keeps the stand-alone index too: STANDALONE answers from it. */
  const int standalone = engine == BFH_ENGINE_LSM;
  const int zeroed = engine == BFH_ENGINE_ROCKSDB; /* its bottom level's sequences are 0 */
  o.standalone_index = standalone;
  assert_int_equal(bfh_open(dir, &o, &f->db), BFH_OK);
  rng_t g;
  rng_init(&g, RNG_SEED + (uint64_t)engine);
  uint64_t ops = model_ops(), done = 0;
  g_trusted = 0;
  for (int ph = 0; ph < PHASES; ph++) {
    write_ops(f->db, m, &g, ops / PHASES, &done);
    snprintf(label, sizeof label, "%s phase %d", name, ph);
    check_phase(f->db, m, RNG_SEED ^ ((uint64_t)ph << 8) ^ (uint64_t)engine, standalone, zeroed,
                pairs, label);
    if (ph == PHASES - 1) check_edges(f->db, m, standalone, label); /* once the tables are many */
  }
  if (standalone) assert_true(g_trusted > 0); /* the index answered for keys the oracle checked */
  /* Stock LevelDB and RocksDB compact this small database into a few tables: the pruning is
     checked where there are many. */
  if (engine == BFH_ENGINE_LSM && table_bytes <= BLOCK_BYTES) check_pruning(f->db, name);
  if (engine == BFH_ENGINE_LSM && table_bytes > BLOCK_BYTES) check_blocks(f->db, name);
  assert_int_equal(bfh_close(f->db), BFH_OK);
  /* Read-only on the same database, declaring the attributes again: the own engine's must
     be the stored ones, the stock engines' are kept in the index directory. */
  options(&o, engine, table_bytes, pairs);
  o.read_only = 1;
  o.index_dir = idx;
  assert_int_equal(bfh_open(dir, &o, &f->db), BFH_OK);
  snprintf(label, sizeof label, "%s read-only", name);
  check_phase(f->db, m, RNG_SEED ^ 0xabcdull ^ (uint64_t)engine, 0, zeroed, pairs, label);
  check_edges(f->db, m, 0, label);
  assert_int_equal(bfh_close(f->db), BFH_OK);
  f->db = NULL;
  free(m);
}

static void test_query_model_own_engine(void **state) {
  run_engine(*state, BFH_ENGINE_LSM, "lsm", SMALL_TABLE_BYTES, 0);
}

static void test_query_model_own_engine_large_tables(void **state) {
  run_engine(*state, BFH_ENGINE_LSM, "lsm-large", LARGE_TABLE_BYTES, 1);
}

static void test_query_model_leveldb(void **state) {
  run_engine(*state, BFH_ENGINE_LEVELDB, "leveldb", SMALL_TABLE_BYTES, 1);
}

static void test_query_model_rocksdb(void **state) {
  run_engine(*state, BFH_ENGINE_ROCKSDB, "rocksdb", SMALL_TABLE_BYTES, 1);
}

/* A bad expression or an unknown attribute is refused, naming the column; nothing is
   searched. */
static void test_query_bad_expressions_refused(void **state) {
  db_fixture_t *f = *state;
  bfh_options o;
  options(&o, BFH_ENGINE_LSM, SMALL_TABLE_BYTES, 0);
  assert_int_equal(bfh_open(f->dir, &o, &f->db), BFH_OK);
  static const struct {
    const char *where, *says;
  } bad[] = {{"a = 'x' AND", "column 12"},       {"color = 'red'", "column 1"},
             {"a = 'x' or zz = 1", "column 12"}, {"n = 'seven'", "column 1"},
             {"a = 'unterminated", "column 5"},  {"", "empty"}};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    assert_int_equal(bfh_query(f->db, bad[i].where, BFH_SEARCH_AUTO, 0, NULL, NULL, NULL),
                     BFH_E_INVALID);
    if (!strstr(bfh_last_error(f->db), bad[i].says))
      fail_msg("'%s': message '%s' does not say '%s'", bad[i].where, bfh_last_error(f->db),
               bad[i].says);
  }
  bfh_prepared *q = (bfh_prepared *)&o; /* overwritten with NULL on failure */
  assert_int_equal(bfh_query_prepare(f->db, "a IN ()", &q), BFH_E_INVALID);
  assert_null(q);
  assert_int_equal(bfh_query(f->db, NULL, BFH_SEARCH_AUTO, 0, NULL, NULL, NULL), BFH_E_INVALID);
}

/* A composite whose member is not declared is refused at creation, naming the member;
   a member is not dropped before its composite. */
static void test_query_pair_declarations_checked(void **state) {
  db_fixture_t *f = *state;
  bfh_options o;
  options(&o, BFH_ENGINE_LSM, SMALL_TABLE_BYTES, 0);
  const bfh_attribute bad[2] = {{"a", "json:a"}, {"az", "pair:a,z"}};
  o.attributes = bad;
  o.attribute_count = 2;
  bfh_db *db = NULL;
  assert_int_equal(bfh_open(f->dir, &o, &db), BFH_E_INVALID);
  assert_null(db);
  assert_non_null(strstr(bfh_last_error(NULL), "'az=pair:a,z': z is not declared"));
  options(&o, BFH_ENGINE_LSM, SMALL_TABLE_BYTES, 1);
  assert_int_equal(bfh_open(f->dir, &o, &f->db), BFH_OK);
  assert_int_equal(bfh_put(f->db, "k", 1, "{\"a\":\"A1\",\"n\":7}", 16), BFH_OK);
  assert_int_equal(bfh_close(f->db), BFH_OK);
  f->db = NULL;
  bfh_options_init(&o);
  assert_int_equal(bfh_index_drop(f->dir, &o, "n"), BFH_E_INVALID);
  assert_non_null(strstr(bfh_last_error(NULL), "n is a member of the composite an; drop an first"));
  assert_int_equal(bfh_index_drop(f->dir, &o, "an"), BFH_OK);
  assert_int_equal(bfh_index_drop(f->dir, &o, "n"), BFH_OK);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_query_bad_expressions_refused, setup_fixture,
                                      db_fixture_teardown),
      cmocka_unit_test_setup_teardown(test_query_pair_declarations_checked, setup_fixture,
                                      db_fixture_teardown),
      cmocka_unit_test_setup_teardown(test_query_model_own_engine, setup_fixture,
                                      db_fixture_teardown),
      cmocka_unit_test_setup_teardown(test_query_model_own_engine_large_tables, setup_fixture,
                                      db_fixture_teardown),
      cmocka_unit_test_setup_teardown(test_query_model_leveldb, setup_fixture, db_fixture_teardown),
      cmocka_unit_test_setup_teardown(test_query_model_rocksdb, setup_fixture, db_fixture_teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

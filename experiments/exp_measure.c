/* Measuring searches: a database opened for measuring (bfh's or the authors' costs), cooled
 * for a cold query, and the median of a query set with the per-query means of the search
 * counters (exp.h). */
#include "experiments/exp.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "experiments/exp_authors.h"

static int cmp_dbl(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

#define MAX_QUERIES 1024

void exp_times_sort(double *t, size_t n) {
  qsort(t, n, sizeof t[0], cmp_dbl);
}

double exp_times_quantile(const double *t, size_t n, double q) {
  double pos = q * (double)(n - 1);
  size_t lo = (size_t)pos;
  return lo + 1 < n ? t[lo] + (pos - (double)lo) * (t[lo + 1] - t[lo]) : t[n - 1];
}

/* Closes t->db, evicts its files (exp_cache_evict, *dropped as there), reopens it and evicts
   what the open read; adds the share of pages still cached (0..1) to *resident. BFH_OK or the
   failing status (t->db is then NULL or still open). */
static int target_cool(exp_target_t *t, double *resident, int *dropped) {
  /* What the engine keeps of a table (its reader, key filter) goes with the handle. */
  int rc = bfh_close(t->db);
  t->db = NULL;
  if (rc != BFH_OK) {
    fprintf(stderr, "bfh: close %s: %s\n", t->dir, bfh_strerror(rc));
    return rc;
  }
  exp_cache_evict(t->dir, dropped);
  rc = exp_db_open(t->p, t->dir, &t->db);
  if (rc != BFH_OK) return rc;
  double res = exp_cache_evict(t->dir, NULL); /* what the open read */
  *resident += res > 0 ? res : 0;
  return BFH_OK;
}

/* One timed query. A failing search is printed here: in a forked child (exp_cold_call) the
   handle's last error is the child's. */
typedef struct {
  exp_target_t *tg;
  const char *val;
  size_t vl;
  bfh_method method;
  /* The truth the keys found are compared with (exp_keys_wrong); w NULL: not compared (the
     warm-up query). */
  const workload_t *w;
  uint64_t value_id, expect;
  exp_keys_t *keys;
} query_arg_t;

typedef struct {
  int rc;
  int wrong;     /* the keys found are not the entries holding the value */
  char why[160]; /* ... the first difference */
  double time_s;
  bfh_search_stats st;
} query_out_t;
_Static_assert(sizeof(query_out_t) <= EXP_COLD_OUT_MAX, "a cold query's result fits");

static void query_run(void *arg, void *out) {
  const query_arg_t *a = arg;
  query_out_t *o = out;
  exp_target_t *tg = a->tg;
  memset(o, 0, sizeof *o);
  exp_keys_reset(a->keys);
  double t0 = exp_now();
  o->rc = tg->p->authors ? exp_authors_search(tg->p->authors, a->val, a->vl, a->method,
                                              exp_keys_add, a->keys, &o->st)
                         : bfh_search(tg->db, a->val, a->vl, a->method, exp_keys_add, a->keys,
                                      &o->st);
  o->time_s = exp_now() - t0;
  if (o->rc != BFH_OK && !tg->p->authors) /* the authors' search prints its own */
    fprintf(stderr, "bfh: search %.*s (%s): %s: %s\n", (int)a->vl, a->val,
            exp_method_name(a->method), bfh_strerror(o->rc), bfh_last_error(tg->db));
  if (o->rc != BFH_OK || !a->w) return;
  o->wrong = exp_keys_wrong(a->keys, a->w, a->value_id, a->expect, o->why, sizeof o->why);
  if (o->wrong < 0) {
    fprintf(stderr, "bfh: search %.*s (%s): %s\n", (int)a->vl, a->val, exp_method_name(a->method),
            o->why);
    o->rc = BFH_E_NOMEM;
  }
}

/* exp_cold_call's child: evicts the database's files, then runs the measurement. */
typedef struct {
  exp_target_t *tg;
  exp_child_fn fn;
  void *arg;
} cold_arg_t;

typedef struct {
  double resident;
  int dropped;
  _Alignas(max_align_t) unsigned char out[EXP_COLD_OUT_MAX]; /* fn's out, any type */
} cold_out_t;

static void cold_child(void *arg, void *out) {
  const cold_arg_t *a = arg;
  cold_out_t *o = out;
  double res = exp_cache_evict(a->tg->dir, &o->dropped);
  o->resident = res > 0 ? res : 0;
  exp_child_own_memory(a->tg->dir); /* after the eviction's allocations; reads no db file */
  a->fn(a->arg, o->out);
}

int exp_cold_call(exp_target_t *tg, int first, exp_child_fn fn, void *arg, void *out,
                  size_t out_len, double *resident, int *dropped) {
  /* On the own engine the database is reopened once, and each measurement runs in a child
     forked from that state, which evicts the files first: the state of a reopen before every
     measurement, without an open per measurement (seconds at 100M and more, every leaf read
     again). The child only reads: the engine's background thread is the parent's alone, so
     nothing in the child writes to the database, and it is idle when the child is forked
     (exp_db_quiesce), so no compaction in the parent deletes a file the child reads. Other
     engines are reopened every time (LevelDB's library may start a compaction from a read). */
  const int forked = exp_engine_is_own(tg->p->engine);
  if (out_len > EXP_COLD_OUT_MAX) {
    fprintf(stderr, "bfh: a cold measurement's result of %zu bytes (at most %d)\n", out_len,
            EXP_COLD_OUT_MAX);
    return BFH_E_INVALID;
  }
  if (tg->p->authors) {
    /* The authors' costs open every table and leaf file they read, per query, and keep only
       the internal nodes in memory: the eviction of the database directory (their leaf files
       in it) is the state of a reopen. */
    double res = exp_cache_evict(tg->dir, dropped);
    *resident += res > 0 ? res : 0;
    fn(arg, out);
    return BFH_OK;
  }
  if (!forked || first) {
    double res = 0;
    int d = 0, rc = target_cool(tg, &res, &d);
    if (rc != BFH_OK) return rc;
    if (!forked) {
      *resident += res;
      *dropped = d;
      fn(arg, out);
      return BFH_OK;
    }
  }
  int rc = exp_db_quiesce(tg->db); /* nothing left for the child to build or compact */
  if (rc != BFH_OK) return rc;
  cold_arg_t a = {tg, fn, arg};
  cold_out_t o;
  memset(&o, 0, sizeof o);
  if (exp_in_child(cold_child, &a, &o, sizeof o) != 0) return BFH_E_IO; /* printed */
  *resident += o.resident;
  *dropped = o.dropped;
  memcpy(out, o.out, out_len);
  return BFH_OK;
}

int exp_search_measure(exp_target_t *tg, const workload_t *w, bfh_method method, int present,
                       int nq, uint64_t seed, int cold, exp_search_result_t *r) {
  if (nq > MAX_QUERIES) nq = MAX_QUERIES;
  if (cold && nq > EXP_COLD_QUERIES) nq = EXP_COLD_QUERIES;
  if (tg->p->authors && nq > EXP_AUTHORS_QUERIES) nq = EXP_AUTHORS_QUERIES;
  memset(r, 0, sizeof *r);
  r->cold = cold;
  static double t[MAX_QUERIES];
  static uint64_t vids[MAX_QUERIES], expect[MAX_QUERIES];
  static exp_keys_t keys; /* reused: its buffer grows to the largest result, once */
  for (int q = 0; q < nq; q++)
    vids[q] = present == EXP_QUERY_FIXED ? seed
              : present                  ? workload_present_value_id(w, seed, (uint64_t)q)
                                         : workload_absent_value_id(w, seed, (uint64_t)q);
  /* The truth: the entries holding each value (one pass over the workload for drawn values). */
  if (present) {
    int rc = workload_value_counts(w, vids, (size_t)nq, expect);
    if (rc != BFH_OK) return rc;
  } else {
    memset(expect, 0, (size_t)nq * sizeof expect[0]);
  }
  exp_counters_t sum = {0};
  uint64_t fp = 0, negatives = 0;
  double resident = 0;
  int drops = 0;
  char val[WORKLOAD_MAX_BYTES];
  for (int q = -1; q < nq; q++) {
    /* q = -1: a warm-up query with a value not among the measured ones. */
    uint64_t qi = q < 0 ? (uint64_t)MAX_QUERIES + 7 : (uint64_t)q;
    uint64_t vid = q >= 0    ? vids[q]
                   : present ? workload_present_value_id(w, seed, qi)
                             : workload_absent_value_id(w, seed, qi);
    size_t vl = workload_value(w, vid, val);
    query_arg_t a = {tg, val, vl, method, q >= 0 ? w : NULL, vid, q >= 0 ? expect[q] : 0, &keys};
    query_out_t o;
    if (cold && q >= 0) {
      int dropped = 0, rc = exp_cold_call(tg, q == 0, query_run, &a, &o, sizeof o, &resident,
                                          &dropped);
      if (rc != BFH_OK) return rc;
      drops += dropped;
    } else {
      if (!tg->p->authors) {
        int rc = exp_db_settle(tg->db); /* e.g. tables a background compaction added */
        if (rc != BFH_OK) return rc;
      }
      query_run(&a, &o);
    }
    if (o.rc != BFH_OK) return o.rc; /* printed */
    if (q < 0) continue;
    const bfh_search_stats st = o.st;
    if (o.wrong && !r->wrong++)
      fprintf(stderr, "bfh: WARNING: search %.*s (%s): %s\n", (int)vl, val, exp_method_name(method),
              o.why);
    t[q] = o.time_s;
    sum.internal_probes += (double)st.internal_probes;
    sum.leaf_probes += (double)st.leaf_probes;
    sum.leaf_positives += (double)st.leaf_positives;
    sum.tables_scanned += (double)st.tables_scanned;
    sum.tables_matched += (double)st.tables_matched;
    sum.entries_scanned += (double)st.entries_scanned;
    sum.bytes_read += (double)st.bytes_read;
    sum.candidates += (double)st.candidates;
    sum.results += (double)st.results;
    sum.tables_live += (double)st.tables_live;
    sum.block_filters_probed += (double)st.block_filters_probed;
    sum.blocks_read += (double)st.blocks_read;
    sum.internal_maybe += (double)st.internal_maybe;
    if (st.leaf_probes > st.tables_matched && st.leaf_positives >= st.tables_matched) {
      fp += st.leaf_positives - st.tables_matched;
      negatives += st.leaf_probes - st.tables_matched;
    }
  }
  r->queries = nq;
  exp_times_sort(t, (size_t)nq);
  r->time_s = t[(nq - 1) / 2];
  r->time_min_s = t[0];
  r->time_max_s = t[nq - 1];
  r->time_q1_s = exp_times_quantile(t, (size_t)nq, 0.25);
  r->time_q3_s = exp_times_quantile(t, (size_t)nq, 0.75);
  r->mean = (exp_counters_t){
      .internal_probes = sum.internal_probes / nq,
      .leaf_probes = sum.leaf_probes / nq,
      .leaf_positives = sum.leaf_positives / nq,
      .tables_scanned = sum.tables_scanned / nq,
      .tables_matched = sum.tables_matched / nq,
      .entries_scanned = sum.entries_scanned / nq,
      .bytes_read = sum.bytes_read / nq,
      .candidates = sum.candidates / nq,
      .results = sum.results / nq,
      .tables_live = sum.tables_live / nq,
      .block_filters_probed = sum.block_filters_probed / nq,
      .blocks_read = sum.blocks_read / nq,
      .internal_maybe = sum.internal_maybe / nq,
  };
  r->resident_pct = cold ? 100.0 * resident / nq : 0;
  r->drop_caches = cold && drops == nq;
  /* Only meaningful where the leaf filters were consulted. */
  r->fpr_leaves = (method != BFH_SEARCH_SCAN && negatives) ? (double)fp / (double)negatives : -1;
  return BFH_OK;
}

/* exp_measure_into and exp_measure_fixed_into: present is an EXP_QUERY_*, seed the query
   set's (EXP_QUERY_FIXED: the value id). */
static int measure_into(exp_csv_t *c, const exp_ctx_t *x, exp_target_t *t, const workload_t *w,
                        bfh_method method, int present, uint64_t seed, int cold,
                        exp_search_result_t *r) {
  const exp_db_params_t *p = t->p;
  const char *query = present == EXP_QUERY_FIXED ? "fixed" : present ? "present" : "absent";
  exp_progress("n=%llu m=%llu d=%u: %s search (%s values%s)", (unsigned long long)p->wl.n,
               (unsigned long long)p->m, p->d, exp_method_name(method), query,
               cold ? ", cold" : "");
  int rc = exp_search_measure(t, w, method, present, x->queries, seed, cold, r);
  exp_progress_done();
  if (rc != BFH_OK) return rc;
  exp_csv_db_params(c, x, p);
  exp_csv_search(c, exp_method_name(method), query, r);
  if (r->mean.tables_live > 0)
    exp_csv_shape(c, (double)p->wl.n / r->mean.tables_live, p->value_filters ? p->m : 0);
  if (r->wrong)
    fprintf(stderr,
            "bfh: WARNING: %s search gave wrong keys for %d of %d queries "
            "(n=%llu m=%llu d=%u)\n",
            exp_method_name(method), r->wrong, r->queries, (unsigned long long)p->wl.n,
            (unsigned long long)p->m, p->d);
  return BFH_OK;
}

int exp_measure_into(exp_csv_t *c, const exp_ctx_t *x, exp_target_t *t, const workload_t *w,
                     bfh_method method, int present, int cold, exp_search_result_t *r) {
  return measure_into(c, x, t, w, method, present ? EXP_QUERY_PRESENT : EXP_QUERY_ABSENT,
                      EXP_QUERY_SEED, cold, r);
}

int exp_measure_fixed_into(exp_csv_t *c, const exp_ctx_t *x, exp_target_t *t, const workload_t *w,
                           bfh_method method, uint64_t value_id, int cold,
                           exp_search_result_t *r) {
  return measure_into(c, x, t, w, method, EXP_QUERY_FIXED, value_id, cold, r);
}

int exp_target_open(exp_target_t *t, exp_db_params_t *p, int authors) {
  return authors ? exp_authors_target(p, t->dir, &p->authors) : exp_db_open(p, t->dir, &t->db);
}

void exp_target_close(exp_target_t *t, exp_db_params_t *p) {
  if (t->db) bfh_close(t->db);
  t->db = NULL;
  exp_authors_close(p->authors);
  p->authors = NULL;
}

int exp_authors_target(const exp_db_params_t *p, const char *dir, struct exp_authors **out) {
  *out = NULL;
  if (!exp_engine_is_own(p->engine)) {
    fprintf(stderr,
            "bfh: the authors' costs are measured with the own engine only (--engine lsm)\n");
    return BFH_E_UNSUPPORTED;
  }
  bfh_options opt;
  exp_db_options(p, &opt);
  return exp_authors_open(dir, p->m, p->k, opt.hash_seed ? opt.hash_seed : BFH_DEFAULT_HASH_SEED,
                          p->d, p->placement, out);
}

/* The placements of the hierarchy series: the paper's tree and ours. */

/* Table I: the engine without value filters: time to insert N entries, one non-key lookup
 * by a full scan (BFH_SEARCH_SCAN), one key lookup.
 *
 * Paper (LevelDB, default settings): N = 10M, 50M, 100M, 500M. Ours: the engine chosen with
 * --engine, default geometry (2 MiB tables, 4 MiB memtable), sequential Key<i>/Value<i>,
 * value filters off. Insert time = all puts + the final flush. Lookups on a warm cache:
 * the median of --queries scans of present values, the median of 101 gets of random keys;
 * with --cold also from storage (the paper's setting): the database closed, its files
 * evicted from the page cache and reopened before each scan and each of 21 gets.
 * With --costs authors: the scan is the authors' text dump of every table file
 * (experiments/exp_authors.h, at most EXP_AUTHORS_QUERIES scans) and each of 21 key lookups is
 * the first get after the database is reopened (the open untimed), as their code times it;
 * cold, the files are evicted before each scan, and each cold get is already the first after
 * an open. Every time has its quartiles (`*_q1_s`, `*_q3_s`); wrong counts the scans whose
 * keys are not the entries that hold the value.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "experiments/drivers.h"
#include "experiments/exp.h"
#include "experiments/exp_authors.h"

/* The paper's Table I, for the rows at its sizes. */
static const struct {
  uint64_t n;
  double insert_s, scan_s, key_s;
} PAPER[] = {{10000000, 21, 5, 0.000243},
             {50000000, 103, 27, 0.000088},
             {100000000, 210, 54, 0.000257},
             {500000000, 1141, 281, 0.000868}};

/* Wall time of a get of the q-th random key of w (missing counts gets that found nothing). */
static double timed_get(bfh_db *db, const workload_t *w, int q, int *missing) {
  char key[WORKLOAD_MAX_BYTES];
  size_t kl = workload_key(w, workload_random_entry_id(w, EXP_QUERY_SEED, (uint64_t)q), key);
  void *val = NULL;
  size_t vl;
  double t0 = exp_now();
  int grc = bfh_get(db, key, kl, &val, &vl);
  double dt = exp_now() - t0;
  if (grc == BFH_OK)
    bfh_free(val);
  else
    (*missing)++;
  return dt;
}

/* A timed get as a cold measurement runs it (exp_cold_call). */
typedef struct {
  bfh_db *const *db;
  const workload_t *w;
  int q;
} get_arg_t;

typedef struct {
  double time_s;
  int missing;
} get_out_t;

static void get_run(void *arg, void *out) {
  const get_arg_t *a = arg;
  get_out_t *o = out;
  o->missing = 0;
  o->time_s = timed_get(*a->db, a->w, a->q, &o->missing);
}

int exp_table1(const exp_ctx_t *x) {
  static const uint64_t small[] = {100000, 300000, 1000000, 0};
  static const uint64_t medium[] = {1000000, 3000000, 10000000, 0};
  static const uint64_t paper[] = {10000000, 50000000, 100000000, 500000000, 0};
  const uint64_t *ns = exp_sizes(x, paper, medium, small);
  const char *extra[] = {"tables",
                         "insert_s",
                         "put_s",
                         "flush_s",
                         "queries",
                         "scan_lookup_s",
                         "scan_lookup_q1_s",
                         "scan_lookup_q3_s",
                         "scan_results",
                         "key_lookup_s",
                         "key_lookup_q1_s",
                         "key_lookup_q3_s",
                         "key_lookup_min_s",
                         "key_lookups",
                         "cold_cache",
                         "scan_lookup_cold_s",
                         "scan_lookup_cold_q1_s",
                         "scan_lookup_cold_q3_s",
                         "scan_cold_resident_pct",
                         "key_lookup_cold_s",
                         "key_lookup_cold_q1_s",
                         "key_lookup_cold_q3_s",
                         "key_lookups_cold",
                         "key_cold_resident_pct",
                         "wrong",
                         "paper_insert_s",
                         "paper_scan_lookup_s",
                         "paper_key_lookup_s",
                         NULL};
  const char *cols[64];
  exp_cols_cat(cols, 64, EXP_DB_COLS, extra, (const char *const *)NULL);
  exp_csv_t *csv = exp_csv_open_subset(x, "table1", cols, EXP_CSV_KEY_N);
  if (!csv) return -1;
  int rc = 0;
  for (size_t i = 0; ns[i] && rc == 0; i++) {
    if (!exp_size_wanted(x, ns[i])) continue;
    exp_db_params_t p;
    exp_db_params_init(&p, x, ns[i]);
    p.value_filters = 0;
    char dir[1200];
    exp_build_result_t b; /* measured when the database was built (this run or a kept one) */
    if (exp_db_get(x, &p, dir, sizeof dir, &b) != BFH_OK) {
      rc = -1;
      break;
    }
    exp_target_t tg = {NULL, &p, dir};
    if (exp_db_open(&p, dir, &tg.db) != BFH_OK) {
      rc = -1;
      break;
    }
    workload_t w;
    workload_init(&w, &p.wl);
    if (x->costs == EXP_COSTS_AUTHORS && exp_authors_target(&p, dir, &p.authors) != BFH_OK) {
      bfh_close(tg.db);
      rc = -1;
      break;
    }
    /* Warm measurements first: a cold one evicts the database. */
    enum { GETS = 101, COLD_GETS = 21 };
    double t[GETS], tc[COLD_GETS];
    int missing = 0, cold_drops = 0;
    double cold_resident = 0;
    exp_search_result_t r, rc_cold;
    if (exp_search_measure(&tg, &w, BFH_SEARCH_SCAN, 1, x->queries, EXP_QUERY_SEED, 0, &r) !=
        BFH_OK) {
      bfh_close(tg.db);
      exp_authors_close(p.authors);
      rc = -1;
      break;
    }
    const int authors = x->costs == EXP_COSTS_AUTHORS;
    int gets = authors ? COLD_GETS : GETS;
    for (int q = 0; q < gets && rc == 0; q++) {
      if (authors) { /* the first get after an open */
        bfh_close(tg.db);
        if ((rc = exp_db_open(&p, dir, &tg.db) != BFH_OK ? -1 : 0) != 0) break;
      }
      t[q] = timed_get(tg.db, &w, q, &missing);
    }
    /* Cold scans with the run's costs; a cold get (below) is the first after an open. */
    if (rc == 0 && x->cold &&
        exp_search_measure(&tg, &w, BFH_SEARCH_SCAN, 1, x->queries, EXP_QUERY_SEED, 1, &rc_cold) !=
            BFH_OK)
      rc = -1;
    exp_authors_close(p.authors);
    p.authors = NULL;
    if (rc != 0) {
      if (tg.db) bfh_close(tg.db);
      break;
    }
    for (int q = 0; x->cold && q < COLD_GETS && rc == 0; q++) {
      get_arg_t ga = {&tg.db, &w, q}; /* tg.db: the handle of the reopen */
      get_out_t go;
      int dropped;
      if (exp_cold_call(&tg, q == 0, get_run, &ga, &go, sizeof go, &cold_resident, &dropped) !=
          BFH_OK) {
        rc = -1;
        break;
      }
      cold_drops += dropped;
      missing += go.missing;
      tc[q] = go.time_s;
    }
    if (rc != 0) {
      if (tg.db) bfh_close(tg.db);
      break;
    }
    if (missing) fprintf(stderr, "bfh: table1: WARNING: %d gets found nothing\n", missing);
    exp_times_sort(t, (size_t)gets);
    if (x->cold) {
      exp_times_sort(tc, COLD_GETS);
      exp_csv_str(csv, "cold_cache",
                  cold_drops == COLD_GETS && rc_cold.drop_caches ? "cold+drop_caches" : "cold");
      exp_csv_dbl(csv, "scan_lookup_cold_s", rc_cold.time_s);
      exp_csv_dbl(csv, "scan_lookup_cold_q1_s", rc_cold.time_q1_s);
      exp_csv_dbl(csv, "scan_lookup_cold_q3_s", rc_cold.time_q3_s);
      exp_csv_dbl(csv, "scan_cold_resident_pct", rc_cold.resident_pct);
      exp_csv_dbl(csv, "key_lookup_cold_s", tc[COLD_GETS / 2]);
      exp_csv_dbl(csv, "key_lookup_cold_q1_s", exp_times_quantile(tc, COLD_GETS, 0.25));
      exp_csv_dbl(csv, "key_lookup_cold_q3_s", exp_times_quantile(tc, COLD_GETS, 0.75));
      exp_csv_u64(csv, "key_lookups_cold", COLD_GETS);
      exp_csv_dbl(csv, "key_cold_resident_pct", 100.0 * cold_resident / COLD_GETS);
    }
    exp_csv_db_params(csv, x, &p);
    exp_csv_dbl(csv, "tables", r.mean.tables_live);
    if (r.mean.tables_live > 0)
      exp_csv_shape(csv, (double)p.wl.n / r.mean.tables_live, 0); /* no filters */
    exp_csv_dbl(csv, "insert_s", b.total_s);
    exp_csv_dbl(csv, "put_s", b.put_s);
    exp_csv_dbl(csv, "flush_s", b.flush_s);
    exp_csv_u64(csv, "queries", (uint64_t)r.queries);
    exp_csv_dbl(csv, "scan_lookup_s", r.time_s);
    exp_csv_dbl(csv, "scan_lookup_q1_s", r.time_q1_s);
    exp_csv_dbl(csv, "scan_lookup_q3_s", r.time_q3_s);
    exp_csv_dbl(csv, "scan_results", r.mean.results);
    exp_csv_u64(csv, "wrong", (uint64_t)(r.wrong + (x->cold ? rc_cold.wrong : 0)));
    exp_csv_dbl(csv, "key_lookup_s", t[gets / 2]);
    exp_csv_dbl(csv, "key_lookup_q1_s", exp_times_quantile(t, (size_t)gets, 0.25));
    exp_csv_dbl(csv, "key_lookup_q3_s", exp_times_quantile(t, (size_t)gets, 0.75));
    exp_csv_dbl(csv, "key_lookup_min_s", t[0]);
    exp_csv_u64(csv, "key_lookups", (uint64_t)gets);
    for (size_t j = 0; j < sizeof PAPER / sizeof PAPER[0]; j++)
      if (PAPER[j].n == ns[i]) {
        exp_csv_dbl(csv, "paper_insert_s", PAPER[j].insert_s);
        exp_csv_dbl(csv, "paper_scan_lookup_s", PAPER[j].scan_s);
        exp_csv_dbl(csv, "paper_key_lookup_s", PAPER[j].key_s);
      }
    exp_csv_row(csv);
    bfh_close(tg.db);
  }
  if (exp_csv_close(csv) != 0) rc = -1;
  if (rc == 0) rc = exp_plot(x, "table1");
  return rc;
}

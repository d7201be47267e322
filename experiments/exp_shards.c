/* Beyond the paper: scale-out simulated on one machine (`bfh run shards`).
 *
 * N shards (1, 2, 4, 8, 16), each an own-engine bfh database, hold the records by key hash.
 * A coordinator keeps one summary per shard: a Bloom filter of the shard's live values at
 * SUMMARY_BITS bits per entry (2 bytes), the shard's hierarchy one level up. A value query
 * asks only the shards whose summary says maybe, and each of them runs bfh's own search
 * (AUTO), which validates every key; the shape of SAI, whose query goes to every shard, is
 * measured beside it on the same shards.
 *
 * Per N and query kind (present: a stored value, held by one record; absent: a value never
 * stored): the shards contacted on average, and the latency of a query as a coordinator that
 * asks its shards in parallel sees it, the slowest shard asked (p50 and p99 over the queries;
 * every_p99_us: the same when every shard is asked). The write mix: after the load, updates
 * of UPDATE_SHARE of the records to new values; each shard then rebuilds its summary from its
 * live values and ships the bits that changed, as a list of positions coded at
 * 2 + log2(m / changes) bits each (Elias-Fano's size): shipped_bytes_per_update. wrong counts
 * the queries whose keys differ from the records that hold the value.
 *
 * Records: the paper's Key<i> and unique Value<i>; small 20k (tables of 64 KiB), medium 1M,
 * paper 10M (--scale N: N). Queries: --queries of each kind per N.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "experiments/drivers.h"
#include "experiments/exp.h"
#include "filters/hash.h"
#include "filters/value_filter.h"
#include "util/histogram.h"

#define MAX_SHARDS 16
#define SUMMARY_BITS 16 /* per entry: 2 bytes */
#define SUMMARY_K 11    /* ln 2 x 16 */
#define SUMMARY_SEED 0x73756d6d61727931ull
#define UPDATE_SHARE 0.1

typedef struct shard {
  bfh_db *db;
  char dir[1200];
  uint64_t entries;
  value_filter_t *summary;
} shard_t;

static unsigned shard_of(const char *key, size_t len, unsigned n) {
  return (unsigned)(bfh_hash64(key, len, 0x5eed) % n);
}

/* Builds s's summary from its live values (an iteration of the shard); the previous one
   into *old (the caller's, NULL if it had none). */
static int summary_rebuild(shard_t *s, value_filter_t **old) {
  uint64_t m = s->entries * SUMMARY_BITS;
  value_filter_t *f = value_filter_create(m < 64 ? 64 : m, SUMMARY_K, SUMMARY_SEED);
  bfh_iter *it = NULL;
  int rc = f ? bfh_iter_create(s->db, &it) : BFH_E_NOMEM;
  if (rc == BFH_OK) {
    for (bfh_iter_seek_first(it); bfh_iter_valid(it); bfh_iter_next(it)) {
      size_t len;
      const void *v = bfh_iter_value(it, &len);
      value_filter_add(f, v, len);
    }
    rc = bfh_iter_status(it);
    bfh_iter_destroy(it);
  }
  if (rc != BFH_OK) {
    value_filter_destroy(f);
    return rc;
  }
  *old = s->summary;
  s->summary = f;
  return BFH_OK;
}

/* The bytes a shard ships to turn the coordinator's copy a into b: the changed bits'
   positions, Elias-Fano coded. a and b have one size. */
static uint64_t delta_bytes(const value_filter_t *a, const value_filter_t *b) {
  uint64_t changed = 0;
  for (size_t w = 0; w < a->nwords; w++) changed += (uint64_t)__builtin_popcountll(a->words[w] ^ b->words[w]);
  if (changed == 0) return 0;
  double bits = (double)changed * (2.0 + ceil(log2((double)a->m / (double)changed)));
  return (uint64_t)ceil(bits / 8.0);
}

/* One value query over the shards: contacted shards into *asked, the slowest asked shard's
   time and the slowest of all (every = 1: all shards searched) into the histograms. Returns
   the status; *bad set when the keys found are not want (the record holding it, or none). */
static int query(shard_t *sh, unsigned n, const char *val, size_t len, uint64_t want_holders,
                 histogram_t *asked_h, histogram_t *every_h, unsigned *asked, int *bad) {
  double slowest_asked = 0, slowest = 0;
  uint64_t found = 0;
  *asked = 0;
  for (unsigned i = 0; i < n; i++) {
    int maybe = value_filter_may_contain(sh[i].summary, val, len);
    bfh_search_stats st;
    double t0 = exp_now();
    int rc = bfh_search(sh[i].db, val, len, BFH_SEARCH_AUTO, NULL, NULL, &st);
    double t = exp_now() - t0;
    if (rc != BFH_OK) return rc;
    if (t > slowest) slowest = t;
    if (maybe) {
      (*asked)++;
      found += st.results;
      if (t > slowest_asked) slowest_asked = t;
    } else if (st.results != 0) {
      *bad = 1; /* a summary said no where the shard holds the value: a false negative */
    }
  }
  if (found != want_holders) *bad = 1;
  histogram_record(asked_h, (uint64_t)(slowest_asked * 1e9));
  histogram_record(every_h, (uint64_t)(slowest * 1e9));
  return BFH_OK;
}

static const char *const COLS[] = {
    "shards", "query", "records", "queries", "contacted_mean", "contacted_every", "p50_us",
    "p99_us", "every_p99_us", "summary_bytes_per_entry", "shipped_bytes_per_update", "wrong",
    "scale", NULL};

/* Loads n shards with the records, builds their summaries, applies the updates and
   measures. */
static int run_n(const exp_ctx_t *x, exp_csv_t *csv, unsigned n, uint64_t records,
                 uint64_t *wrong) {
  shard_t sh[MAX_SHARDS];
  memset(sh, 0, sizeof sh);
  bfh_options opt;
  bfh_options_init(&opt);
  opt.create_if_missing = 1;
  if (records <= 100000) opt.memtable_bytes = opt.table_bytes = 64 << 10;
  workload_config_t wc;
  workload_config_init(&wc);
  wc.n = records;
  workload_t w;
  int rc = workload_init(&w, &wc) == ST_OK ? BFH_OK : BFH_E_INVALID;
  for (unsigned i = 0; i < n && rc == BFH_OK; i++) {
    snprintf(sh[i].dir, sizeof sh[i].dir, "%s/shards-%u-%u", x->work_dir, n, i);
    exp_rmtree(sh[i].dir);
    rc = bfh_open(sh[i].dir, &opt, &sh[i].db);
  }
  char key[WORKLOAD_MAX_BYTES], val[WORKLOAD_MAX_BYTES];
  for (uint64_t r = 0; r < records && rc == BFH_OK; r++) {
    size_t kn = workload_key(&w, r, key), vn = workload_paper_value(r, val);
    shard_t *s = &sh[shard_of(key, kn, n)];
    rc = bfh_put(s->db, key, kn, val, vn);
    s->entries++;
  }
  for (unsigned i = 0; i < n && rc == BFH_OK; i++) {
    value_filter_t *none = NULL;
    rc = bfh_flush(sh[i].db);
    if (rc == BFH_OK) rc = exp_db_quiesce(sh[i].db);
    if (rc == BFH_OK) rc = summary_rebuild(&sh[i], &none);
  }
  /* The write mix: UPDATE_SHARE of the records get new values (Value<records + u>). */
  uint64_t updates = (uint64_t)((double)records * UPDATE_SHARE), shipped = 0;
  rng_t rng;
  rng_init(&rng, 0x5a4d);
  for (uint64_t u = 0; u < updates && rc == BFH_OK; u++) {
    uint64_t r = rng_below(&rng, records);
    size_t kn = workload_key(&w, r, key), vn = workload_paper_value(records + u, val);
    rc = bfh_put(sh[shard_of(key, kn, n)].db, key, kn, val, vn);
  }
  for (unsigned i = 0; i < n && rc == BFH_OK; i++) {
    value_filter_t *old = NULL;
    rc = bfh_flush(sh[i].db);
    if (rc == BFH_OK) rc = exp_db_quiesce(sh[i].db);
    if (rc == BFH_OK) rc = summary_rebuild(&sh[i], &old);
    if (rc == BFH_OK) shipped += delta_bytes(old, sh[i].summary);
    value_filter_destroy(old);
  }
  /* Queries: present values are the ones the records hold after the updates, found by
     drawing a record and asking its key's value; absent ones were never written. */
  for (int absent = 0; absent < 2 && rc == BFH_OK; absent++) {
    histogram_t *asked_h = malloc(sizeof *asked_h), *every_h = malloc(sizeof *every_h);
    if (!asked_h || !every_h) rc = BFH_E_NOMEM;
    if (rc == BFH_OK) {
      histogram_init(asked_h);
      histogram_init(every_h);
    }
    uint64_t contacted = 0, bad_queries = 0;
    rng_t q;
    rng_init(&q, 0x9e3 + (uint64_t)absent);
    for (int i = 0; i < x->queries && rc == BFH_OK; i++) {
      uint64_t r = rng_below(&q, records);
      size_t kn = workload_key(&w, r, key), vn;
      void *cur = NULL;
      if (absent) {
        vn = workload_paper_value(2 * records + (uint64_t)i, val);
      } else {
        rc = bfh_get(sh[shard_of(key, kn, n)].db, key, kn, &cur, &vn);
        if (rc == BFH_OK) memcpy(val, cur, vn < sizeof val ? vn : sizeof val - 1);
        bfh_free(cur);
      }
      unsigned asked = 0;
      int bad = 0;
      if (rc == BFH_OK)
        rc = query(sh, n, val, vn, absent ? 0 : 1, asked_h, every_h, &asked, &bad);
      contacted += asked;
      bad_queries += (uint64_t)bad;
    }
    if (rc == BFH_OK) {
      double entries = (double)records;
      uint64_t summary_bytes = 0;
      for (unsigned i = 0; i < n; i++) summary_bytes += (sh[i].summary->m + 7) / 8; /* its bits */
      exp_csv_u64(csv, "shards", n);
      exp_csv_str(csv, "query", absent ? "absent" : "present");
      exp_csv_u64(csv, "records", records);
      exp_csv_u64(csv, "queries", (uint64_t)x->queries);
      exp_csv_dbl(csv, "contacted_mean", (double)contacted / x->queries);
      exp_csv_u64(csv, "contacted_every", n);
      exp_csv_dbl(csv, "p50_us", (double)histogram_quantile(asked_h, 0.5) / 1e3);
      exp_csv_dbl(csv, "p99_us", (double)histogram_quantile(asked_h, 0.99) / 1e3);
      exp_csv_dbl(csv, "every_p99_us", (double)histogram_quantile(every_h, 0.99) / 1e3);
      exp_csv_dbl(csv, "summary_bytes_per_entry", (double)summary_bytes / entries);
      exp_csv_dbl(csv, "shipped_bytes_per_update", updates ? (double)shipped / (double)updates : 0);
      exp_csv_u64(csv, "wrong", bad_queries);
      exp_csv_str(csv, "scale", exp_scale_name(x->scale));
      exp_csv_row(csv);
      *wrong += bad_queries;
    }
    free(asked_h);
    free(every_h);
  }
  for (unsigned i = 0; i < n; i++) {
    value_filter_destroy(sh[i].summary);
    if (sh[i].db) bfh_close(sh[i].db);
    exp_db_drop(x, sh[i].dir);
  }
  if (rc != BFH_OK)
    fprintf(stderr, "bfh: shards %u: %s: %s\n", n, bfh_strerror(rc), bfh_last_error(NULL));
  return rc;
}

int exp_shards(const exp_ctx_t *x) {
  static const uint64_t RECORDS[EXP_NSCALES] = {20000, 1000000, 10000000};
  uint64_t records = x->n ? x->n : RECORDS[x->scale];
  if (exp_mkdir_p(x->work_dir) != 0) {
    fprintf(stderr, "bfh: shards: cannot create %s\n", x->work_dir);
    return 1;
  }
  exp_csv_t *csv = exp_csv_open(x, "shards", COLS);
  if (!csv) return 1;
  uint64_t wrong = 0;
  int rc = BFH_OK;
  for (unsigned n = 1; n <= MAX_SHARDS && rc == BFH_OK; n *= 2) {
    exp_progress("shards: %u", n);
    rc = run_n(x, csv, n, records, &wrong);
    exp_progress_done();
  }
  int crc = exp_csv_close(csv);
  if (rc == BFH_OK) {
    printf("shards: %llu records, 1 to %u shards: %llu wrong quer%s\n",
           (unsigned long long)records, MAX_SHARDS, (unsigned long long)wrong,
           wrong == 1 ? "y" : "ies");
    exp_plot(x, "shards");
  }
  return rc != BFH_OK || crc || wrong ? 1 : 0;
}

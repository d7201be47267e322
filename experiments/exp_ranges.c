/* Beyond the paper: range filters for one table, measured against Grafite's bound
 * (`bfh run ranges`, issue 48's filter-level sweep).
 *
 * A table's values as codes (query/range_cover.h), n of them, and empty ranges of L codes
 * asked of two structures at the same bits per value:
 *   grafite  the per-table range filter (filters/range_filter.h), built for ranges of L;
 *   dyadic   a Bloom filter holding each code's dyadic prefixes at levels 0, 4, 8, ... up to
 *            the first level >= log2 L (the items bfh's value filters would hold, so that
 *            they OR-merge into the hierarchy), a range asked as range_cover's probes.
 * Codes are drawn uniform over 2^48, or clustered (runs of 64 consecutive codes). Queries are
 * uniform (a range anywhere) or correlated (starting right after a present code: the hard
 * case for a filter whose guarantee depends on the query distribution). Every query is checked
 * empty against the sorted codes; fpr is the share of them a structure answered maybe.
 * bound is Grafite's, L / 2^(bits - 2). Sizes: n = 100k (small), 1M (medium, paper).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "experiments/drivers.h"
#include "experiments/exp.h"
#include "filters/hash.h"
#include "filters/range_filter.h"
#include "filters/value_filter.h"
#include "query/range_cover.h"
#include "util/random.h"

#define RANGES_SEED 0x72616e6765ull
#define DYADIC_STEP 4     /* the stored levels' spacing */
#define DYADIC_BUDGET 64  /* probes per range before the cover rounds out */
#define CODE_BITS 48

static int by_code(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return (x > y) - (x < y);
}

/* 1 if a code of c[0, n) (sorted) is in [lo, hi]. */
static int holds(const uint64_t *c, size_t n, uint64_t lo, uint64_t hi) {
  size_t a = 0, b = n;
  while (a < b) {
    size_t m = a + (b - a) / 2;
    if (c[m] < lo) a = m + 1;
    else b = m;
  }
  return a < n && c[a] <= hi;
}

/* The dyadic structure: its levels for ranges of 2^log2 codes, and the Bloom filter. */
typedef struct dyadic {
  range_levels_t lv;
  value_filter_t *f;
} dyadic_t;

static uint64_t item_hash(const range_probe_t *p) {
  uint8_t item[RANGE_ITEM_BYTES];
  range_probe_item(p, item);
  return bfh_value_hash(item, sizeof item, RANGES_SEED);
}

static int dyadic_build(dyadic_t *d, const uint64_t *c, size_t n, unsigned bits, unsigned log2) {
  memset(&d->lv, 0, sizeof d->lv);
  d->lv.has_zero = 1;
  for (unsigned j = DYADIC_STEP; d->lv.n < RANGE_MAX_LEVELS; j += DYADIC_STEP) {
    d->lv.j[d->lv.n++] = (uint8_t)j;
    if (j >= log2) break;
  }
  /* k for the items per value (levels + 1), at the FPR-optimal load. */
  double items = (double)(d->lv.n + 1);
  uint32_t k = (uint32_t)lround(0.693 * bits / items);
  d->f = value_filter_create((uint64_t)n * bits, k < 1 ? 1 : k > 16 ? 16 : k, RANGES_SEED);
  if (!d->f) return BFH_E_NOMEM;
  for (size_t i = 0; i < n; i++) {
    range_probe_t p = {0, c[i]};
    value_filter_add_hash(d->f, item_hash(&p));
    for (uint32_t l = 0; l < d->lv.n; l++) {
      p = (range_probe_t){d->lv.j[l], c[i] >> d->lv.j[l]};
      value_filter_add_hash(d->f, item_hash(&p));
    }
  }
  return BFH_OK;
}

static int dyadic_may_contain(const dyadic_t *d, uint64_t lo, uint64_t hi) {
  range_probe_t probes[DYADIC_BUDGET];
  range_cover_result_t r;
  range_cover(lo, hi, &d->lv, DYADIC_BUDGET, probes, DYADIC_BUDGET, &r);
  if (r.unbounded) return 1;
  for (size_t i = 0; i < r.n; i++) {
    probe_t p;
    probe_init(&p, item_hash(&probes[i]), d->f->m, d->f->k);
    if (value_filter_may_contain_probe(d->f, &p)) return 1;
  }
  return 0;
}

static const char *const COLS[] = {"structure", "codes", "queries_kind", "n", "bits_per_value",
                                   "range_codes", "queries", "fpr", "bound", "bytes_per_value",
                                   "ns_per_query", "missed", "scale", NULL};

/* The sorted codes of one distribution. */
static uint64_t *draw_codes(size_t n, int clustered) {
  uint64_t *c = malloc(n * sizeof *c);
  if (!c) return NULL;
  rng_t rng;
  rng_init(&rng, RANGES_SEED + (uint64_t)clustered);
  for (size_t i = 0; i < n; i++)
    c[i] = clustered && i % 64 ? c[i - 1] + 1 : rng_next(&rng) >> (64 - CODE_BITS);
  qsort(c, n, sizeof *c, by_code);
  return c;
}

/* Asks `queries` empty ranges of L codes of both structures; one row each. */
static int measure(exp_csv_t *csv, const exp_ctx_t *x, const uint64_t *c, size_t n, int clustered,
                   int correlated, unsigned bits, unsigned log2, uint64_t queries) {
  const uint64_t L = 1ull << log2;
  range_filter_t *g = NULL;
  err_t err;
  err_clear(&err);
  dyadic_t d = {0};
  int rc = range_filter_build(c, n, bits, log2, RANGES_SEED, &g, &err);
  if (rc == BFH_OK) rc = dyadic_build(&d, c, n, bits, log2);
  rng_t rng;
  rng_init(&rng, RANGES_SEED ^ (bits * 131 + log2 * 7 + (unsigned)correlated));
  uint64_t asked = 0, fp[2] = {0, 0}, missed[2] = {0, 0};
  double ns[2] = {0, 0};
  while (rc == BFH_OK && asked < queries) {
    uint64_t lo = correlated ? c[rng_below(&rng, n)] + 1 : rng_next(&rng) >> (64 - CODE_BITS);
    if (holds(c, n, lo, lo + L - 1)) continue;
    asked++;
    double t0 = exp_now();
    fp[0] += (uint64_t)range_filter_may_contain(g, lo, lo + L - 1);
    double t1 = exp_now();
    fp[1] += (uint64_t)dyadic_may_contain(&d, lo, lo + L - 1);
    ns[0] += (t1 - t0) * 1e9;
    ns[1] += (exp_now() - t1) * 1e9;
    /* A range holding a code must be a maybe for both (checked on one present code). */
    uint64_t p = c[rng_below(&rng, n)], plo = p >= L / 2 ? p - L / 2 : 0;
    missed[0] += (uint64_t)!range_filter_may_contain(g, plo, plo + L - 1);
    missed[1] += (uint64_t)!dyadic_may_contain(&d, plo, plo + L - 1);
  }
  for (int s = 0; s < 2 && rc == BFH_OK; s++) {
    exp_csv_str(csv, "structure", s == 0 ? "grafite" : "dyadic");
    exp_csv_str(csv, "codes", clustered ? "clustered" : "uniform");
    exp_csv_str(csv, "queries_kind", correlated ? "correlated" : "uniform");
    exp_csv_u64(csv, "n", n);
    exp_csv_u64(csv, "bits_per_value", bits);
    exp_csv_u64(csv, "range_codes", L);
    exp_csv_u64(csv, "queries", asked);
    exp_csv_dbl(csv, "fpr", (double)fp[s] / (double)asked);
    exp_csv_dbl(csv, "bound", fmin(1.0, (double)L / ldexp(1.0, (int)bits - 2)));
    exp_csv_dbl(csv, "bytes_per_value", s == 0 ? (double)range_filter_encoded_size(g) / (double)n
                                                : (double)value_filter_size_in_bytes(d.f) / (double)n);
    exp_csv_dbl(csv, "ns_per_query", ns[s] / (double)asked);
    exp_csv_u64(csv, "missed", missed[s]);
    exp_csv_str(csv, "scale", exp_scale_name(x->scale));
    exp_csv_row(csv);
  }
  range_filter_destroy(g);
  value_filter_destroy(d.f);
  return rc == BFH_OK && missed[0] + missed[1] == 0 ? BFH_OK : rc == BFH_OK ? BFH_E_CORRUPT : rc;
}

int exp_ranges(const exp_ctx_t *x) {
  static const uint64_t N[EXP_NSCALES] = {100000, 1000000, 1000000};
  static const unsigned BITS[] = {8, 12, 16, 20, 24};
  static const unsigned LOG2[] = {0, 4, 10, 16, 20};
  size_t n = x->n ? x->n : N[x->scale];
  uint64_t queries = n <= 100000 ? 20000 : 200000;
  exp_csv_t *csv = exp_csv_open(x, "ranges", COLS);
  if (!csv) return 1;
  int rc = BFH_OK;
  for (int clustered = 0; clustered < 2 && rc == BFH_OK; clustered++) {
    uint64_t *c = draw_codes(n, clustered);
    if (!c) rc = BFH_E_NOMEM;
    for (int correlated = 0; correlated < 2 && rc == BFH_OK; correlated++)
      for (size_t b = 0; b < sizeof BITS / sizeof BITS[0] && rc == BFH_OK; b++)
        for (size_t l = 0; l < sizeof LOG2 / sizeof LOG2[0] && rc == BFH_OK; l++) {
          exp_progress("ranges: %s codes, %s queries, %u bits, L = 2^%u",
                       clustered ? "clustered" : "uniform", correlated ? "correlated" : "uniform",
                       BITS[b], LOG2[l]);
          rc = measure(csv, x, c, n, clustered, correlated, BITS[b], LOG2[l], queries);
          exp_progress_done();
        }
    free(c);
  }
  int crc = exp_csv_close(csv);
  if (rc != BFH_OK) {
    fprintf(stderr, "bfh: ranges: %s\n",
            rc == BFH_E_CORRUPT ? "a range holding a code was answered no" : bfh_strerror(rc));
    return 1;
  }
  exp_plot(x, "ranges");
  return crc ? 1 : 0;
}

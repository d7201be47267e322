/* filter_bench: nanoseconds per probe of the value Bloom filter and of the blocked key
 * filter, hot (the filter fits in L2) and cold (the filter is much larger than the last-level
 * cache), single and batched, with the measured FPR next to the theory.
 *
 * Usage: filter_bench [--quick] [--rounds N] [--cold-mib M] [--hot-kib K] [--only blocked|value]
 * Prints '#' lines naming every parameter, then CSV:
 *   filter,mode,cache,filter_bytes,filters,keys_per_filter,k,queries,
 *   ns_median,ns_min,ns_max,fpr_measured,fpr_theory
 * ns_* are per query and per filter tested, over `rounds` rounds (median, min, max).
 *
 * Modes:
 *   blocked  single   blocked_filter_may_contain for each of `queries` random key hashes
 *   blocked  batched  blocked_filter_may_contain_batch over the same hashes (prefetching)
 *   value    single   value_filter_may_contain on an 8-byte value (hash + positions + test)
 *   value    probe    value_filter_may_contain_probe with precomputed probes (1024, cycled)
 *   value    shared   one probe per query, tested against every one of `filters` filters
 *                     (the hierarchy's inner loop); ns per filter tested
 *   value    shared-batched  the same through value_filter_may_contain_probe_batch
 *                     (prefetches struct and first words ahead)
 * Value filters hold n = m ln2 / k values (fill 1/2, the FPR-optimal load). The hot ones are
 * built by inserting values; the cold ones are filled with uniformly random words (fill 1/2,
 * the same load: inserting 10^8 values would take minutes), and their theory column is
 * 0.5^k. All queries are negatives, so the measured FPR is the false positive rate.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench/bench_util.h"
#include "filters/blocked_filter.h"
#include "filters/value_filter.h"
#include "util/coding.h"
#include "util/random.h"

#define BITS_PER_KEY 10.0
#define VALUE_K 7
#define SEED 0xbe7c4ull

typedef struct params {
  int rounds;
  size_t hot_bytes, cold_bytes;
  size_t hot_queries, cold_queries, shared_hot_filters, shared_queries_hot, shared_queries_cold;
} params_t;

static double now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static void *xmalloc(size_t n) {
  void *p = aligned_alloc(64, (n + 63) / 64 * 64);
  if (!p) {
    fprintf(stderr, "filter_bench: out of memory (%zu bytes)\n", n);
    exit(1);
  }
  return p;
}

static void row(const char *filter, const char *mode, const char *cache, size_t bytes,
                size_t filters, uint64_t keys, uint32_t k, size_t queries, double *ns, int rounds,
                double fpr, double theory) {
  qsort(ns, (size_t)rounds, sizeof *ns, bench_cmp_double);
  printf("%s,%s,%s,%zu,%zu,%" PRIu64 ",%u,%zu,%.2f,%.2f,%.2f,%.5f,%.5f\n", filter, mode, cache,
         bytes, filters, keys, k, queries, ns[rounds / 2], ns[0], ns[rounds - 1], fpr, theory);
  fflush(stdout);
}

/* Blocked key filter of about `bytes` bytes at BITS_PER_KEY, built from random hashes. */
static void bench_blocked(const params_t *P, const char *cache, size_t bytes, size_t queries) {
  size_t n = (size_t)((double)bytes * 8 / BITS_PER_KEY);
  size_t size = blocked_filter_size(n, BITS_PER_KEY);
  uint8_t *f = xmalloc(size);
  blocked_filter_init(f, size, BITS_PER_KEY);
  rng_t r;
  rng_init(&r, SEED);
  enum { CHUNK = 1 << 16 };
  uint64_t *chunk = xmalloc(CHUNK * sizeof *chunk);
  for (size_t done = 0; done < n; done += CHUNK) {
    size_t c = n - done < CHUNK ? n - done : CHUNK;
    for (size_t i = 0; i < c; i++) chunk[i] = rng_next(&r);
    blocked_filter_add(f, size, chunk, c);
  }
  free(chunk);
  uint64_t *q = xmalloc(queries * sizeof *q);
  for (size_t i = 0; i < queries; i++) q[i] = rng_next(&r); /* negatives */
  uint8_t *out = xmalloc(queries);
  uint32_t k = f[size - 2];
  double ns[64];
  size_t fp = 0;
  for (int rd = 0; rd < P->rounds; rd++) {
    double t0 = now_ns();
    size_t hits = 0;
    for (size_t i = 0; i < queries; i++) hits += (size_t)blocked_filter_may_contain(f, size, q[i]);
    ns[rd] = (now_ns() - t0) / (double)queries;
    fp = hits;
  }
  double fpr = (double)fp / (double)queries;
  row("blocked", "single", cache, size, 1, n, k, queries, ns, P->rounds, fpr, -1);
  for (int rd = 0; rd < P->rounds; rd++) {
    double t0 = now_ns();
    blocked_filter_may_contain_batch(f, size, q, queries, out);
    ns[rd] = (now_ns() - t0) / (double)queries;
  }
  size_t hits = 0;
  for (size_t i = 0; i < queries; i++) hits += out[i];
  if (hits != fp) fprintf(stderr, "filter_bench: batched and single results differ\n");
  row("blocked", "batched", cache, size, 1, n, k, queries, ns, P->rounds, fpr, -1);
  free(out);
  free(q);
  free(f);
}

/* A value filter of m bits at the optimal load: by insertion (hot) or random words (cold). */
static value_filter_t *value_filter_at_half_fill(uint64_t m, int random_fill, rng_t *r,
                                                 uint64_t *n_out) {
  value_filter_t *f = value_filter_create(m, VALUE_K, SEED);
  if (!f) {
    fprintf(stderr, "filter_bench: cannot create a value filter of %" PRIu64 " bits\n", m);
    exit(1);
  }
  uint64_t n = (uint64_t)((double)m * 0.6931471805599453 / VALUE_K);
  if (random_fill) {
    for (size_t i = 0; i < f->nwords; i++) f->words[i] = rng_next(r);
  } else {
    for (uint64_t i = 0; i < n; i++) value_filter_add_hash(f, rng_next(r));
  }
  *n_out = n;
  return f;
}

/* Negative query values: 8-byte strings 2^63 + i, never inserted (inserted ones are hashes). */
static inline void query_value(uint8_t b[8], uint64_t i) {
  encode_fixed64(b, (1ull << 63) | i);
}

static void bench_value(const params_t *P, const char *cache, size_t bytes, size_t queries,
                        int random_fill) {
  rng_t r;
  rng_init(&r, SEED + 1);
  uint64_t n;
  value_filter_t *f = value_filter_at_half_fill(bytes * 8, random_fill, &r, &n);
  double theory =
      random_fill ? value_filter_fpr_estimate(f) : value_filter_fpr_theory(f->m, f->k, n);
  double ns[64];
  size_t fp = 0;
  for (int rd = 0; rd < P->rounds; rd++) {
    double t0 = now_ns();
    size_t hits = 0;
    uint8_t b[8];
    for (size_t i = 0; i < queries; i++) {
      query_value(b, i);
      hits += value_filter_may_contain(f, b, 8);
    }
    ns[rd] = (now_ns() - t0) / (double)queries;
    fp = hits;
  }
  row("value", "single", cache, value_filter_serialized_size(f->m), 1, n, f->k, queries, ns,
      P->rounds, (double)fp / (double)queries, theory);
  if (!random_fill) {
    enum { NPROBES = 1024 };
    probe_t *pr = xmalloc(NPROBES * sizeof *pr);
    for (size_t i = 0; i < NPROBES; i++) {
      uint8_t b[8];
      query_value(b, i);
      value_filter_probe(f, b, 8, &pr[i]);
    }
    for (int rd = 0; rd < P->rounds; rd++) {
      double t0 = now_ns();
      size_t hits = 0;
      for (size_t i = 0; i < queries; i++)
        hits += value_filter_may_contain_probe(f, &pr[i & (NPROBES - 1)]);
      ns[rd] = (now_ns() - t0) / (double)queries;
      fp = hits;
    }
    row("value", "probe", cache, value_filter_serialized_size(f->m), 1, n, f->k, queries, ns,
        P->rounds, (double)fp / (double)queries, theory);
    free(pr);
  }
  value_filter_destroy(f);
}

/* One probe per query against `nf` filters of `bytes` bytes each. */
static void bench_value_shared(const params_t *P, const char *cache, size_t bytes, size_t nf,
                               size_t queries, int random_fill) {
  rng_t r;
  rng_init(&r, SEED + 2);
  value_filter_t **fs = xmalloc(nf * sizeof *fs);
  uint64_t n = 0;
  for (size_t j = 0; j < nf; j++) fs[j] = value_filter_at_half_fill(bytes * 8, random_fill, &r, &n);
  double theory = random_fill ? value_filter_fpr_estimate(fs[0])
                              : value_filter_fpr_theory(fs[0]->m, fs[0]->k, n);
  double ns[64];
  size_t fp = 0;
  for (int rd = 0; rd < P->rounds; rd++) {
    double t0 = now_ns();
    size_t hits = 0;
    for (size_t i = 0; i < queries; i++) {
      uint8_t b[8];
      probe_t p;
      query_value(b, (uint64_t)rd * queries + i);
      value_filter_probe(fs[0], b, 8, &p);
      for (size_t j = 0; j < nf; j++) hits += value_filter_may_contain_probe(fs[j], &p);
    }
    ns[rd] = (now_ns() - t0) / ((double)queries * (double)nf);
    fp = hits;
  }
  row("value", "shared", cache, value_filter_serialized_size(fs[0]->m), nf, n, fs[0]->k, queries,
      ns, P->rounds, (double)fp / ((double)queries * (double)nf), theory);
  uint8_t *out = xmalloc(nf);
  for (int rd = 0; rd < P->rounds; rd++) {
    double t0 = now_ns();
    size_t hits = 0;
    for (size_t i = 0; i < queries; i++) {
      uint8_t b[8];
      probe_t p;
      query_value(b, (uint64_t)rd * queries + i);
      value_filter_probe(fs[0], b, 8, &p);
      value_filter_may_contain_probe_batch((const value_filter_t *const *)fs, nf, &p, out);
      for (size_t j = 0; j < nf; j++) hits += out[j];
    }
    ns[rd] = (now_ns() - t0) / ((double)queries * (double)nf);
    fp = hits;
  }
  row("value", "shared-batched", cache, value_filter_serialized_size(fs[0]->m), nf, n, fs[0]->k,
      queries, ns, P->rounds, (double)fp / ((double)queries * (double)nf), theory);
  free(out);
  for (size_t j = 0; j < nf; j++) value_filter_destroy(fs[j]);
  free(fs);
}

static void usage(void) {
  fprintf(stderr,
          "usage: filter_bench [--quick] [--rounds N] [--cold-mib M] [--hot-kib K] "
          "[--only blocked|value]\n");
  exit(2);
}

int main(int argc, char **argv) {
  params_t P = {.rounds = 5,
                .hot_bytes = 64 << 10,
                .cold_bytes = (size_t)256 << 20,
                .hot_queries = 2000000,
                .cold_queries = 2000000,
                .shared_hot_filters = 8,
                .shared_queries_hot = 100000,
                .shared_queries_cold = 2000};
  const char *only = "";
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--quick")) {
      P.rounds = 3;
      P.cold_bytes = (size_t)128 << 20;
      P.hot_queries = 500000;
      P.cold_queries = 500000;
      P.shared_queries_hot = 20000;
      P.shared_queries_cold = 500;
    } else if (!strcmp(argv[i], "--only") && i + 1 < argc) {
      only = argv[++i];
      if (strcmp(only, "blocked") && strcmp(only, "value")) usage();
    } else if (!strcmp(argv[i], "--rounds") && i + 1 < argc) {
      P.rounds = atoi(argv[++i]);
      if (P.rounds < 1 || P.rounds > 64) usage();
    } else if (!strcmp(argv[i], "--cold-mib") && i + 1 < argc) {
      P.cold_bytes = (size_t)strtoull(argv[++i], NULL, 10) << 20;
      if (P.cold_bytes == 0) usage();
    } else if (!strcmp(argv[i], "--hot-kib") && i + 1 < argc) {
      P.hot_bytes = (size_t)strtoull(argv[++i], NULL, 10) << 10;
      if (P.hot_bytes < 64) usage();
    } else {
      usage();
    }
  }
  size_t shared_cold_filters = P.cold_bytes / P.hot_bytes;
  char thp[128] = "unknown";
  FILE *fp = fopen("/sys/kernel/mm/transparent_hugepage/enabled", "r");
  if (fp) {
    if (!fgets(thp, sizeof thp, fp)) strcpy(thp, "unknown");
    thp[strcspn(thp, "\n")] = '\0';
    fclose(fp);
  }
  printf("# filter_bench: ns per probe, medians of %d rounds (min and max also shown)\n", P.rounds);
  printf("# hot filter bytes %zu, cold filter bytes %zu, transparent hugepages: %s\n", P.hot_bytes,
         P.cold_bytes, thp);
  printf(
      "# blocked: %.0f bits/key, %u probes, 512-bit blocks, random 64-bit key hashes, "
      "queries hot %zu cold %zu (all negatives), theory column -1 (no closed form; the "
      "design measures ~0.965%% at 10 bits/key)\n",
      BITS_PER_KEY, blocked_filter_probes_for(BITS_PER_KEY), P.hot_queries, P.cold_queries);
  printf(
      "# value: k %d, n = m ln2 / k values per filter (fill 1/2), 8-byte query values, hot "
      "built by insertion, cold filled with random words; mode probe cycles 1024 precomputed "
      "probes (its FPR is over those 1024)\n",
      VALUE_K);
  printf(
      "# value shared: hot %zu filters x %zu bytes, %zu queries; cold %zu filters x %zu bytes, "
      "%zu queries; ns per filter tested\n",
      P.shared_hot_filters, P.hot_bytes, P.shared_queries_hot, shared_cold_filters, P.hot_bytes,
      P.shared_queries_cold);
  printf(
      "filter,mode,cache,filter_bytes,filters,keys_per_filter,k,queries,ns_median,ns_min,"
      "ns_max,fpr_measured,fpr_theory\n");
  if (strcmp(only, "value")) {
    bench_blocked(&P, "hot", P.hot_bytes, P.hot_queries);
    bench_blocked(&P, "cold", P.cold_bytes, P.cold_queries);
  }
  if (strcmp(only, "blocked")) {
    bench_value(&P, "hot", P.hot_bytes, P.hot_queries, 0);
    bench_value(&P, "cold", P.cold_bytes, P.cold_queries, 1);
    bench_value_shared(&P, "hot", P.hot_bytes, P.shared_hot_filters, P.shared_queries_hot, 0);
    bench_value_shared(&P, "cold", P.hot_bytes, shared_cold_filters, P.shared_queries_cold, 1);
  }
  return 0;
}

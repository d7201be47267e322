/* hierarchy_bench: the paper's hierarchy shape, measured three ways.
 *
 * B leaf filters of m bits (default 2,000,000), k = 3, V distinct values per leaf (default
 * 80,000; leaf i holds "Value<j>" for j in [iV, (i+1)V), so every value is in exactly one
 * leaf). For each B and each order d, a hierarchy built by similarity insertion (one leaf
 * at a time) and one built positionally (bulk, bottom-up, the paper's) answer the same
 * queries as (a) probing every leaf one by one and (b) the bit-sliced index. Queries are
 * present values (in exactly one leaf) and absent values. Probes are computed once per
 * query before timing (hash sharing); ns per query covers the search only.
 *
 * Output: '#' lines naming every parameter, then CSV (one row per method, B, d, placement
 * and query kind: probes per query, positives per query, median/min/max ns per query over
 * the rounds, build seconds, bytes), then a second CSV of internal node memory per level.
 *
 * Usage: hierarchy_bench [--max-leaves N] [--quick] [--sliced-only] [--queries Q]
 *                        [--rounds R] [--m BITS] [--values V]
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "filters/bits.h"
#include "hierarchy/hierarchy.h"
#include "hierarchy/sliced.h"
#include "util/random.h"
#include "workloads/workload.h"

#define K 3
#define MAX_ROUNDS 99

static const size_t paper_sizes[] = {119, 599, 1500, 6434};
static const uint32_t orders[] = {2, 3, 5, 10};

typedef struct cfg {
  uint64_t m;
  uint64_t values;
  size_t max_leaves;
  size_t queries;
  int rounds;
  int sliced_only;
} cfg_t;

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static void value_probe(probe_t *p, uint64_t v, uint64_t m) {
  char buf[WORKLOAD_MAX_BYTES];
  size_t n = workload_paper_value(v, buf);
  probe_init(p, bfh_hash64(buf, n, BFH_DEFAULT_SEED), m, K);
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

typedef struct result {
  double ip, lp, pos;      /* per query */
  double med, min, max;    /* ns per query over rounds */
  uint64_t total_positive; /* for the cross-check */
} result_t;

typedef int (*search_fn)(const void *ix, const probe_t *p, u64vec_t *out, probe_stats_t *st);

typedef struct leafset {
  const uint64_t *words; /* B * nwords */
  size_t nwords, n;
} leafset_t;

static int search_all(const void *ix, const probe_t *p, u64vec_t *out, probe_stats_t *st) {
  const leafset_t *L = ix;
  uint64_t pos = 0;
  for (size_t i = 0; i < L->n; i++) {
    if (bits_test_probe(L->words + i * L->nwords, p)) {
      pos++;
      if (u64vec_push(out, i) != ST_OK) return ST_E_NOMEM;
    }
  }
  st->leaf_probes += L->n;
  st->leaf_positives += pos;
  return ST_OK;
}

static int search_hier(const void *ix, const probe_t *p, u64vec_t *out, probe_stats_t *st) {
  return hierarchy_search(ix, p, out, st);
}

static int search_sliced(const void *ix, const probe_t *p, u64vec_t *out, probe_stats_t *st) {
  return sliced_search(ix, p, out, st);
}

static result_t run_queries(const cfg_t *c, search_fn fn, const void *ix, const probe_t *q,
                            size_t nq) {
  result_t r = {0};
  double ns[MAX_ROUNDS];
  u64vec_t out;
  u64vec_init(&out);
  for (int round = 0; round < c->rounds; round++) {
    probe_stats_t st = {0};
    double t0 = now_s();
    for (size_t i = 0; i < nq; i++) {
      out.n = 0;
      if (fn(ix, &q[i], &out, &st) != ST_OK) {
        fprintf(stderr, "hierarchy_bench: search failed (out of memory)\n");
        exit(1);
      }
    }
    ns[round] = (now_s() - t0) * 1e9 / (double)nq;
    if (round == 0) {
      r.ip = (double)st.internal_probes / (double)nq;
      r.lp = (double)st.leaf_probes / (double)nq;
      r.pos = (double)st.leaf_positives / (double)nq;
      r.total_positive = st.leaf_positives;
    }
  }
  qsort(ns, (size_t)c->rounds, sizeof ns[0], cmp_double);
  r.med = ns[c->rounds / 2];
  r.min = ns[0];
  r.max = ns[c->rounds - 1];
  u64vec_release(&out);
  return r;
}

static void print_row(const cfg_t *c, const char *method, const char *placement, size_t B,
                      uint32_t d, const char *kind, size_t nq, const result_t *r, double build_s,
                      size_t bytes) {
  printf("%s,%s,%zu,%" PRIu32 ",%" PRIu64 ",%d,%" PRIu64
         ",%s,%zu,%d,%.2f,%.2f,%.3f,%.0f,%.0f,%.0f,%.3f,%zu\n",
         method, placement, B, d, c->m, K, c->values, kind, nq, c->rounds, r->ip, r->lp, r->pos,
         r->med, r->min, r->max, build_s, bytes);
  fflush(stdout);
}

static void check_same(const char *what, size_t B, const result_t *a, const result_t *ref) {
  if (a->total_positive != ref->total_positive) {
    fprintf(stderr,
            "hierarchy_bench: %s at B=%zu: %" PRIu64 " positives, probing all gives %" PRIu64 "\n",
            what, B, a->total_positive, ref->total_positive);
    exit(1);
  }
}

typedef struct levelrow {
  size_t B;
  uint32_t d;
  const char *placement;
  hierarchy_level_stats_t st;
} levelrow_t;

static void usage(void) {
  fprintf(stderr,
          "usage: hierarchy_bench [--max-leaves N] [--quick] [--sliced-only] [--queries Q]\n"
          "                       [--rounds R] [--m BITS] [--values V]\n");
  exit(2);
}

int main(int argc, char **argv) {
  cfg_t c = {.m = 2000000, .values = 80000, .max_leaves = 1500, .queries = 1000, .rounds = 5};
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (!strcmp(a, "--quick")) {
      c.max_leaves = 599;
      c.queries = 200;
      c.rounds = 3;
    } else if (!strcmp(a, "--sliced-only")) {
      c.sliced_only = 1;
    } else if (i + 1 < argc && !strcmp(a, "--max-leaves")) {
      c.max_leaves = strtoull(argv[++i], NULL, 10);
    } else if (i + 1 < argc && !strcmp(a, "--queries")) {
      c.queries = strtoull(argv[++i], NULL, 10);
    } else if (i + 1 < argc && !strcmp(a, "--rounds")) {
      c.rounds = atoi(argv[++i]);
    } else if (i + 1 < argc && !strcmp(a, "--m")) {
      c.m = strtoull(argv[++i], NULL, 10);
    } else if (i + 1 < argc && !strcmp(a, "--values")) {
      c.values = strtoull(argv[++i], NULL, 10);
    } else {
      usage();
    }
  }
  if (c.rounds < 3 || c.rounds > MAX_ROUNDS || c.queries == 0 || c.m < 64) usage();
  size_t maxB = 0;
  for (size_t i = 0; i < 4; i++)
    if (paper_sizes[i] <= c.max_leaves) maxB = paper_sizes[i];
  if (maxB == 0) usage();
  size_t nwords = bits_words(c.m);

  printf("# hierarchy_bench: Bloom filter hierarchy vs probing every leaf vs bit-sliced index\n");
  printf("# m=%" PRIu64 " bits, k=%d, values_per_leaf=%" PRIu64
         " (leaf i holds Value<j>, j in [i*V,(i+1)*V)), hash=XXH3-64 seed=%#llx\n",
         c.m, K, c.values, (unsigned long long)BFH_DEFAULT_SEED);
  printf(
      "# B in {119,599,1500,6434} up to %zu; d in {2,3,5,10}; placements: similarity "
      "(insert one by one), positional (bulk build)\n",
      c.max_leaves);
  printf(
      "# queries=%zu present (value of one random leaf) + %zu absent per point; rounds=%d, "
      "ns = median/min/max over rounds of the mean per query; probes computed before timing\n",
      c.queries, c.queries, c.rounds);
  printf("# bytes: hierarchy_size_in_bytes / sliced_size_in_bytes / leaf words (all)\n");

  /* Leaves: generated once for the largest B; smaller B use a prefix. */
  double t0 = now_s();
  uint64_t *leaves = aligned_alloc(64, (maxB * nwords * sizeof(uint64_t) + 63) / 64 * 64);
  if (!leaves) {
    fprintf(stderr, "hierarchy_bench: no memory for %zu leaves\n", maxB);
    return 1;
  }
  memset(leaves, 0, maxB * nwords * sizeof(uint64_t));
  for (size_t i = 0; i < maxB; i++) {
    uint64_t *w = leaves + i * nwords;
    for (uint64_t j = 0; j < c.values; j++) {
      probe_t p;
      value_probe(&p, (uint64_t)i * c.values + j, c.m);
      for (uint32_t t = 0; t < p.k; t++) bits_set(w, p.pos[t]);
    }
  }
  double gen_s = now_s() - t0;
  printf("# generated %zu leaves in %.1f s; fill of leaf 0 = %.4f\n", maxB, gen_s,
         (double)bits_popcount(leaves, nwords) / (double)c.m);
  printf(
      "method,placement,B,d,m,k,values_per_leaf,query,queries,rounds,internal_probes_per_q,"
      "leaf_probes_per_q,positives_per_q,ns_per_q_median,ns_per_q_min,ns_per_q_max,build_s,"
      "bytes\n");

  levelrow_t *levels = NULL;
  size_t nlevels = 0, caplevels = 0;
  probe_t *present = malloc(c.queries * sizeof *present);
  probe_t *absent = malloc(c.queries * sizeof *absent);
  uint64_t *ids = malloc(maxB * sizeof *ids);
  const uint64_t **wp = malloc(maxB * sizeof *wp);
  if (!present || !absent || !ids || !wp) return 1;
  for (size_t i = 0; i < maxB; i++) {
    ids[i] = i;
    wp[i] = leaves + i * nwords;
  }

  for (size_t bi = 0; bi < 4 && paper_sizes[bi] <= maxB; bi++) {
    size_t B = paper_sizes[bi];
    rng_t r;
    rng_init(&r, 42 + B);
    for (size_t i = 0; i < c.queries; i++) {
      value_probe(&present[i], rng_below(&r, B) * c.values + rng_below(&r, c.values), c.m);
      value_probe(&absent[i], 1000000000000ull + rng_next(&r) % 1000000000000ull, c.m);
    }
    const probe_t *qs[2] = {present, absent};
    const char *kinds[2] = {"present", "absent"};
    leafset_t L = {leaves, nwords, B};
    result_t ref[2];
    for (int k = 0; k < 2; k++) {
      ref[k] = run_queries(&c, search_all, &L, qs[k], c.queries);
      print_row(&c, "all_leaves", "-", B, 0, kinds[k], c.queries, &ref[k], 0.0,
                B * nwords * sizeof(uint64_t));
    }

    t0 = now_s();
    sliced_t *s = sliced_create(c.m);
    if (!s || sliced_reserve(s, B) != ST_OK || sliced_add_batch(s, ids, wp, B) != ST_OK) {
      fprintf(stderr, "hierarchy_bench: sliced index for B=%zu: out of memory\n", B);
      return 1;
    }
    double sb = now_s() - t0;
    for (int k = 0; k < 2; k++) {
      result_t res = run_queries(&c, search_sliced, s, qs[k], c.queries);
      check_same("sliced", B, &res, &ref[k]);
      print_row(&c, "sliced", "-", B, 0, kinds[k], c.queries, &res, sb, sliced_size_in_bytes(s));
    }
    sliced_destroy(s);
    if (c.sliced_only) continue;

    for (size_t di = 0; di < 4; di++) {
      for (int pl = 0; pl < 2; pl++) {
        hierarchy_placement_t placement = pl ? HIERARCHY_POSITIONAL : HIERARCHY_SIMILARITY;
        const char *pname = pl ? "positional" : "similarity";
        hierarchy_t *h = hierarchy_create(orders[di], c.m, placement, NULL);
        int rc = h ? ST_OK : ST_E_NOMEM;
        t0 = now_s();
        if (pl)
          rc = rc == ST_OK ? hierarchy_build(h, ids, wp, B) : rc;
        else
          for (size_t i = 0; i < B && rc == ST_OK; i++) rc = hierarchy_insert(h, ids[i], wp[i]);
        double bs = now_s() - t0;
        if (rc != ST_OK) {
          fprintf(stderr, "hierarchy_bench: build B=%zu d=%u %s: status %d\n", B, orders[di], pname,
                  rc);
          return 1;
        }
        for (int k = 0; k < 2; k++) {
          result_t res = run_queries(&c, search_hier, h, qs[k], c.queries);
          check_same(pname, B, &res, &ref[k]);
          print_row(&c, "hierarchy", pname, B, orders[di], kinds[k], c.queries, &res, bs,
                    hierarchy_size_in_bytes(h));
        }
        hierarchy_level_stats_t st[64];
        uint32_t nl = hierarchy_level_stats(h, st, 64);
        for (uint32_t l = 0; l < nl && l < 64; l++) {
          if (nlevels == caplevels) {
            caplevels = caplevels ? 2 * caplevels : 64;
            levels = realloc(levels, caplevels * sizeof *levels);
            if (!levels) return 1;
          }
          levels[nlevels++] = (levelrow_t){B, orders[di], pname, st[l]};
        }
        hierarchy_destroy(h);
      }
    }
  }
  if (nlevels) {
    printf("\n# internal node memory per level (level 0 = parents of leaves)\n");
    printf("B,d,placement,level,nodes,bytes\n");
    for (size_t i = 0; i < nlevels; i++)
      printf("%zu,%u,%s,%u,%" PRIu64 ",%" PRIu64 "\n", levels[i].B, levels[i].d,
             levels[i].placement, levels[i].st.level, levels[i].st.nodes, levels[i].st.bytes);
  }
  free(levels);
  free(present);
  free(absent);
  free(ids);
  free(wp);
  free(leaves);
  return 0;
}

/* Synthetic leaves and hierarchies over them, for the pure-structure experiments (exp.h). */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "experiments/exp.h"
#include "filters/bits.h"
#include "filters/hash.h"
#include "hierarchy/hierarchy.h"

void exp_synth_leaf(uint64_t m, uint32_t k, uint64_t leaf, uint64_t entries, uint64_t *words) {
  memset(words, 0, bits_words(m) * sizeof *words);
  char val[WORKLOAD_MAX_BYTES];
  probe_t p;
  for (uint64_t j = 0; j < entries; j++) {
    size_t n = workload_paper_value(leaf * entries + j, val);
    probe_init(&p, bfh_hash64(val, n, BFH_DEFAULT_SEED), m, k);
    for (uint32_t i = 0; i < k; i++) bits_set(words, p.pos[i]);
  }
}

/* A quarter of the physical memory, at least 1 GiB. */
static double resident_limit(void) {
  long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  double quarter = pages > 0 && page > 0 ? (double)pages * (double)page / 4 : 0;
  return quarter > (double)(1u << 30) ? quarter : (double)(1u << 30);
}

int exp_synth_init(exp_synth_t *s, uint64_t m, uint32_t k, uint64_t leaves, uint64_t entries) {
  memset(s, 0, sizeof *s);
  s->m = m;
  s->k = k;
  s->leaves = leaves;
  s->entries = entries;
  size_t bytes = bits_words(m) * sizeof(uint64_t);
  s->words = calloc(leaves, sizeof *s->words);
  s->scratch = malloc(bytes);
  if (!s->words || !s->scratch) {
    exp_synth_release(s);
    return -1;
  }
  if ((double)leaves * (double)bytes <= resident_limit()) {
    for (uint64_t i = 0; i < leaves; i++) {
      if (!(s->words[i] = malloc(bytes))) {
        exp_synth_release(s);
        return -1;
      }
      exp_synth_leaf(m, k, i, entries, s->words[i]);
      s->generated++;
      if ((i & 63) == 0)
        exp_progress("synthetic leaves: %llu/%llu", (unsigned long long)i,
                     (unsigned long long)leaves);
    }
    exp_progress_done();
  }
  return 0;
}

void exp_synth_release(exp_synth_t *s) {
  if (s->words)
    for (uint64_t i = 0; i < s->leaves; i++) free(s->words[i]);
  free(s->words);
  free(s->scratch);
  memset(s, 0, sizeof *s);
}

static int synth_load(void *ctx, uint64_t id, uint64_t *out) {
  exp_synth_t *s = ctx;
  if (id == 0 || id > s->leaves) return BFH_E_INVALID;
  if (s->words[id - 1]) {
    memcpy(out, s->words[id - 1], bits_words(s->m) * sizeof *out);
  } else {
    exp_synth_leaf(s->m, s->k, id - 1, s->entries, out);
    s->generated++;
  }
  return BFH_OK;
}

static int synth_probe(void *ctx, uint64_t id, const probe_t *p) {
  exp_synth_t *s = ctx;
  if (id == 0 || id > s->leaves) return 1;
  if (s->words[id - 1]) return bits_test_probe(s->words[id - 1], p);
  synth_load(s, id, s->scratch);
  return bits_test_probe(s->scratch, p);
}

hierarchy_t *exp_synth_hierarchy(exp_synth_t *s, uint64_t leaves, uint32_t d, int placement,
                                 double *build_s) {
  if (leaves > s->leaves) return NULL;
  hierarchy_leaf_source_t src = {.probe = synth_probe, .load = synth_load, .ctx = s};
  hierarchy_t *h =
      hierarchy_create(d, s->m, (hierarchy_placement_t)placement, &src); /* same numbers */
  if (!h) return NULL;
  double t0 = exp_now();
  int rc = BFH_OK;
  if (placement != BFH_PLACEMENT_SIMILARITY) { /* built bottom-up in leaf order */
    uint64_t *ids = malloc(leaves * sizeof *ids);
    if (!ids) rc = BFH_E_NOMEM;
    for (uint64_t i = 0; rc == BFH_OK && i < leaves; i++) ids[i] = i + 1;
    if (rc == BFH_OK) rc = hierarchy_build(h, ids, (const uint64_t *const *)s->words, leaves);
    free(ids);
  } else {
    for (uint64_t i = 0; rc == BFH_OK && i < leaves; i++) {
      rc = hierarchy_insert(h, i + 1, s->words[i]);
      if ((i & 63) == 0)
        exp_progress("hierarchy d=%u: leaf %llu/%llu", d, (unsigned long long)i,
                     (unsigned long long)leaves);
    }
    exp_progress_done();
  }
  if (build_s) *build_s = exp_now() - t0;
  if (rc != BFH_OK) {
    hierarchy_destroy(h);
    return NULL;
  }
  return h;
}

uint64_t exp_paper_internal_nodes(uint64_t leaves, uint32_t d) {
  uint64_t total = 0, level = leaves;
  if (leaves <= 1) return leaves;
  do {
    level = (level + d - 1) / d;
    total += level;
  } while (level > 1);
  return total;
}

/* workload_t: generators of keys, values and queries (see workload.h). */
#include "workloads/workload.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/status.h"

static uint64_t mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

void workload_perm_init(workload_perm_t *p, uint64_t n, uint64_t seed) {
  uint32_t bits = 2; /* at least one bit per half */
  while (bits < 64 && (1ull << bits) < n) bits += 2;
  p->n = n;
  p->half_bits = bits / 2;
  p->half_mask = (p->half_bits >= 64) ? ~0ull : ((1ull << p->half_bits) - 1);
  uint64_t s = seed;
  for (int r = 0; r < 4; r++) p->round_keys[r] = splitmix64(&s);
}

/* One pass of the 4-round Feistel network over [0, 2^(2*half_bits)): a bijection. */
static uint64_t feistel(const workload_perm_t *p, uint64_t x) {
  uint64_t l = (x >> p->half_bits) & p->half_mask, r = x & p->half_mask;
  for (int i = 0; i < 4; i++) {
    uint64_t f = mix64(r ^ p->round_keys[i]) & p->half_mask;
    uint64_t t = l ^ f;
    l = r;
    r = t;
  }
  return (l << p->half_bits) | r;
}

uint64_t workload_perm_apply(const workload_perm_t *p, uint64_t x) {
  /* Cycle walking: the domain is at most 4n, so the expected number of passes is < 4. */
  do {
    x = feistel(p, x);
  } while (x >= p->n);
  return x;
}

void workload_config_init(workload_config_t *c) {
  c->n = 1;
  c->domain_pct = 100.0;
  c->order = WORKLOAD_SEQUENTIAL;
  c->format = WORKLOAD_FORMAT_PAPER;
  c->seed = 42;
  c->values = WORKLOAD_VALUES_EXACT;
}

int workload_init(workload_t *w, const workload_config_t *c) {
  if (c->n == 0 || !(c->domain_pct > 0.0) || c->domain_pct > 100.0) return ST_E_INVALID;
  if (c->values != WORKLOAD_VALUES_EXACT && c->values != WORKLOAD_VALUES_DRAWN)
    return ST_E_INVALID;
  w->cfg = *c;
  double d = round((double)c->n * c->domain_pct / 100.0);
  w->domain = d < 1.0 ? 1 : (uint64_t)d;
  if (w->domain > c->n) w->domain = c->n;
  workload_perm_init(&w->insert_perm, c->n, c->seed ^ 0x696e73657274ull /* "insert" */);
  workload_perm_init(&w->value_perm, c->n, c->seed ^ 0x76616c7565ull /* "value" */);
  return ST_OK;
}

uint64_t workload_entry_id(const workload_t *w, uint64_t i) {
  return w->cfg.order == WORKLOAD_RANDOM ? workload_perm_apply(&w->insert_perm, i) : i;
}

static uint64_t draw(uint64_t seed, uint64_t q, uint64_t bound);

/* The seed of the drawn values' generator, apart from the query generators' seeds. */
#define DRAWN_SEED_MIX 0x647261776eull /* "drawn" */

uint64_t workload_value_id(const workload_t *w, uint64_t j) {
  if (w->cfg.values == WORKLOAD_VALUES_DRAWN)
    return draw(w->cfg.seed ^ DRAWN_SEED_MIX, j, w->domain);
  if (w->domain == w->cfg.n) return j;
  return workload_perm_apply(&w->value_perm, j) % w->domain;
}

/* prefix (plen bytes), then id in decimal, zero-padded to width digits (0: no padding).
   Called for every entry loaded; snprintf was most of a load's CPU time outside the engine. */
static size_t format_id(char *buf, const char *prefix, size_t plen, uint64_t id, int width) {
  char digits[20];
  int n = 0;
  do {
    digits[n++] = (char)('0' + id % 10);
    id /= 10;
  } while (id);
  while (n < width) digits[n++] = '0';
  memcpy(buf, prefix, plen);
  for (int i = 0; i < n; i++) buf[plen + (size_t)i] = digits[n - 1 - i];
  buf[plen + (size_t)n] = '\0';
  return plen + (size_t)n;
}

size_t workload_key(const workload_t *w, uint64_t id, char *buf) {
  return w->cfg.format == WORKLOAD_FORMAT_FIXED ? format_id(buf, "k", 1, id, 15)
                                                 : format_id(buf, "Key", 3, id, 0);
}

size_t workload_value(const workload_t *w, uint64_t value_id, char *buf) {
  return w->cfg.format == WORKLOAD_FORMAT_FIXED ? workload_fixed_value(value_id, buf)
                                                 : workload_paper_value(value_id, buf);
}

size_t workload_paper_value(uint64_t value_id, char *buf) {
  return format_id(buf, "Value", 5, value_id, 0);
}

size_t workload_fixed_value(uint64_t value_id, char *buf) {
  return format_id(buf, "v", 1, value_id, 15);
}

size_t workload_put_key(const workload_t *w, uint64_t i, char *buf) {
  return workload_key(w, workload_entry_id(w, i), buf);
}

size_t workload_put_value(const workload_t *w, uint64_t i, char *buf) {
  return workload_value(w, workload_value_id(w, workload_entry_id(w, i)), buf);
}

/* The q-th draw of a stateless generator under seed, uniform in [0, bound). */
static uint64_t draw(uint64_t seed, uint64_t q, uint64_t bound) {
  uint64_t h = mix64(seed * 0x9e3779b97f4a7c15ull + mix64(q + 0x51ed270b27ull));
  return (uint64_t)(((unsigned __int128)h * bound) >> 64);
}

uint64_t workload_present_value_id(const workload_t *w, uint64_t seed, uint64_t q) {
  return draw(seed, q, w->domain);
}

uint64_t workload_random_entry_id(const workload_t *w, uint64_t seed, uint64_t q) {
  return draw(seed ^ 0x6b6579ull, q, w->cfg.n);
}

uint64_t workload_absent_value_id(const workload_t *w, uint64_t seed, uint64_t q) {
  return w->cfg.n + draw(seed ^ 0xab5e47ull, q, w->cfg.n);
}

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return (x > y) - (x < y);
}

uint64_t workload_value_count(const workload_t *w, uint64_t value_id) {
  if (value_id >= w->domain) return 0;
  if (w->cfg.values == WORKLOAD_VALUES_DRAWN) {
    uint64_t count = 0;
    for (uint64_t j = 0; j < w->cfg.n; j++) count += workload_value_id(w, j) == value_id;
    return count;
  }
  return (w->cfg.n - 1 - value_id) / w->domain + 1;
}

int workload_value_counts(const workload_t *w, const uint64_t *ids, size_t nids, uint64_t *counts) {
  if (w->cfg.values != WORKLOAD_VALUES_DRAWN || nids == 0) {
    for (size_t i = 0; i < nids; i++) counts[i] = workload_value_count(w, ids[i]);
    return ST_OK;
  }
  /* Sorted distinct ids and their tallies; one pass over the entries. */
  uint64_t *sorted = malloc(nids * sizeof *sorted), *tally = calloc(nids, sizeof *tally);
  if (!sorted || !tally) {
    free(sorted);
    free(tally);
    return ST_E_NOMEM;
  }
  memcpy(sorted, ids, nids * sizeof *sorted);
  qsort(sorted, nids, sizeof *sorted, cmp_u64);
  for (uint64_t j = 0; j < w->cfg.n; j++) {
    uint64_t v = workload_value_id(w, j);
    const uint64_t *hit = bsearch(&v, sorted, nids, sizeof *sorted, cmp_u64);
    if (hit) tally[hit - sorted]++;
  }
  for (size_t i = 0; i < nids; i++) {
    const uint64_t *hit = bsearch(&ids[i], sorted, nids, sizeof *sorted, cmp_u64);
    counts[i] = tally[hit - sorted];
  }
  free(sorted);
  free(tally);
  return ST_OK;
}

const char *workload_values_name(workload_values_t v) {
  return v == WORKLOAD_VALUES_DRAWN ? "authors" : "exact";
}

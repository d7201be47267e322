/* keydist_t: YCSB's request distributions (keydist.h). */
#include "workloads/keydist.h"

#include <math.h>
#include <string.h>

static const char *const NAMES[] = {"uniform", "zipfian", "scrambled", "latest"};

const char *keydist_name(keydist_kind_t kind) { return NAMES[kind]; }

int keydist_kind_parse(const char *name, keydist_kind_t *kind) {
  for (int k = 0; k < 4; k++)
    if (strcmp(name, NAMES[k]) == 0) {
      *kind = (keydist_kind_t)k;
      return 0;
    }
  return -1;
}

/* Adds 1/i^theta for i in (from, to]. */
static double zeta_add(double sum, uint64_t from, uint64_t to, double theta) {
  for (uint64_t i = from + 1; i <= to; i++) sum += 1.0 / pow((double)i, theta);
  return sum;
}

/* eta for the current n (Gray et al.'s constant, from zeta(2) and zeta(n)). */
static void set_eta(keydist_t *d) {
  d->eta = (1.0 - pow(2.0 / (double)d->n, 1.0 - d->theta)) / (1.0 - d->zeta2 / d->zeta_sum);
}

void keydist_init(keydist_t *d, keydist_kind_t kind, uint64_t n, double theta, uint64_t seed) {
  memset(d, 0, sizeof *d);
  d->kind = kind;
  d->n = n;
  d->seed = seed;
  d->theta = theta;
  if (kind == KEYDIST_UNIFORM) return;
  d->alpha = 1.0 / (1.0 - theta);
  d->zeta2 = zeta_add(0.0, 0, 2, theta);
  d->zeta_sum = zeta_add(0.0, 0, n, theta);
  d->zeta_n = n;
  set_eta(d);
}

void keydist_grow(keydist_t *d, uint64_t n2) {
  if (n2 <= d->n) return;
  d->n = n2;
  if (d->kind == KEYDIST_UNIFORM) return;
  d->zeta_sum = zeta_add(d->zeta_sum, d->zeta_n, n2, d->theta);
  d->zeta_n = n2;
  set_eta(d);
}

/* A Zipf rank in [0, n): rank 0 the most likely. */
static uint64_t zipf_rank(const keydist_t *d, rng_t *rng) {
  double u = rng_double(rng), uz = u * d->zeta_sum;
  if (uz < 1.0 || d->n == 1) return 0;
  if (uz < 1.0 + pow(0.5, d->theta)) return 1;
  uint64_t r = (uint64_t)((double)d->n * pow(d->eta * u - d->eta + 1.0, d->alpha));
  return r < d->n ? r : d->n - 1;
}

/* splitmix64's finaliser over x and the seed. */
static uint64_t scramble(uint64_t x, uint64_t seed) {
  uint64_t z = x + seed + 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

uint64_t keydist_next(keydist_t *d, rng_t *rng) {
  switch (d->kind) {
    case KEYDIST_UNIFORM:
      return rng_below(rng, d->n);
    case KEYDIST_ZIPFIAN:
      return zipf_rank(d, rng);
    case KEYDIST_SCRAMBLED:
      return scramble(zipf_rank(d, rng), d->seed) % d->n;
    case KEYDIST_LATEST:
      return d->n - 1 - zipf_rank(d, rng);
  }
  return 0;
}

/* ycsb_gen_t: YCSB's core workloads recast for value search (ycsb.h). */
#include "workloads/ycsb.h"

#include <stddef.h>

static const ycsb_mix_t MIXES[] = {
    {'A', {[YCSB_SEARCH] = 0.5, [YCSB_UPDATE] = 0.5}, KEYDIST_SCRAMBLED},
    {'B', {[YCSB_SEARCH] = 0.95, [YCSB_UPDATE] = 0.05}, KEYDIST_SCRAMBLED},
    {'C', {[YCSB_SEARCH] = 1.0}, KEYDIST_SCRAMBLED},
    {'D', {[YCSB_NEWEST] = 0.95, [YCSB_INSERT] = 0.05}, KEYDIST_LATEST},
    {'E', {[YCSB_RANGE] = 0.95, [YCSB_INSERT] = 0.05}, KEYDIST_SCRAMBLED},
    {'F', {[YCSB_SEARCH] = 0.5, [YCSB_RMW] = 0.5}, KEYDIST_SCRAMBLED},
};

static const char *const OP_NAMES[YCSB_OPS] = {"search", "update", "insert",
                                               "newest", "range",  "rmw"};

const ycsb_mix_t *ycsb_mix(char w) {
  if (w >= 'a' && w <= 'f') w = (char)(w - 'a' + 'A');
  for (size_t i = 0; i < sizeof MIXES / sizeof MIXES[0]; i++)
    if (MIXES[i].name == w) return &MIXES[i];
  return NULL;
}

const char *ycsb_op_name(ycsb_op_t op) { return OP_NAMES[op]; }

void ycsb_gen_init(ycsb_gen_t *g, const ycsb_mix_t *mix, uint64_t loaded, uint64_t ops,
                   uint64_t seed) {
  g->mix = *mix;
  g->records = loaded;
  /* YCSB's expectednewkeys: twice the inserts the operations should bring */
  const uint64_t expected = (uint64_t)(2.0 * mix->share[YCSB_INSERT] * (double)ops);
  g->space = mix->dist == KEYDIST_LATEST ? loaded : loaded + expected;
  rng_init(&g->rng, seed);
  keydist_init(&g->dist, mix->dist, g->space, KEYDIST_THETA, seed ^ 0x7963736275ull);
}

/* A record below g->records under the mix's distribution. A zipfian draw past the records
   inserted so far is drawn again (YCSB's CoreWorkload.nextKeynum); the loop ends, as the
   records loaded, at least one, are the space's first. */
static uint64_t draw_record(ycsb_gen_t *g) {
  uint64_t r;
  do r = keydist_next(&g->dist, &g->rng);
  while (r >= g->records);
  return r;
}

ycsb_op_t ycsb_gen_next(ycsb_gen_t *g, uint64_t *record, uint32_t *span) {
  double u = rng_double(&g->rng), acc = 0;
  ycsb_op_t op = YCSB_SEARCH;
  for (int i = 0; i < YCSB_OPS; i++) {
    if (g->mix.share[i] == 0) continue;
    op = (ycsb_op_t)i; /* the last one with a share takes what rounding leaves */
    acc += g->mix.share[i];
    if (u < acc) break;
  }
  *span = 1;
  if (op == YCSB_INSERT) {
    *record = g->records++;
    if (g->mix.dist == KEYDIST_LATEST) keydist_grow(&g->dist, g->space = g->records);
    return op;
  }
  *record = draw_record(g);
  if (op == YCSB_RANGE) *span = 1 + (uint32_t)rng_below(&g->rng, YCSB_MAX_RANGE);
  return op;
}

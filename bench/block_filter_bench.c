/* block_filter_bench: which blocks of one table may hold a value, by three layouts of the
 * same budget, probed for every block of the table at once:
 *   sliced   the bit-sliced block filter (filters/block_filter.h): k rows of W = ceil(blocks /
 *            64) words ANDed, then the set bits
 *   blocked  one cache-line-blocked Bloom filter per block (filters/blocked_filter.h),
 *            tested block by block
 *   bloom    one standard Bloom filter per block (filters/value_filter.h, m = bits * n_j
 *            rounded up to 64, k = round(bits ln 2)), tested block by block; the value is
 *            hashed once, its positions are computed for each block's m
 *
 * Usage: block_filter_bench [--values N] [--blocks B] [--probes P]
 *   defaults: 50000 values, 400 and then 5000 blocks (one table each), 100000 probes.
 * The values (random 64-bit hashes) are spread evenly over the blocks, in file order. Each
 * layout is built at 8, 10 and 12 bits per value and probed with P absent hashes and with P
 * hashes of values the table holds, in batches of 1000.
 * Prints '#' lines naming every parameter, then CSV:
 *   layout,blocks,values,bits_per_value,k,bytes_per_value,absent_ns,present_ns,
 *   fp_blocks_per_probe,fp_per_block
 * absent_ns, present_ns: median over the batches of the time of one table probe (all blocks);
 * fp_blocks_per_probe: blocks listed for an absent value, on average; fp_per_block the same
 * per block. bytes_per_value: everything a reader keeps, over the values: for sliced the
 * serialized filter (header, 16-byte refs, rows, crc); for the per-block layouts the filters
 * plus a 16-byte ref per block.
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench/bench_util.h"
#include "filters/block_filter.h"
#include "filters/blocked_filter.h"
#include "filters/value_filter.h"
#include "util/coding.h"
#include "util/random.h"

#define SEED 0xb10cbe7cull
#define BATCH 1000
#define REF_BYTES 16

typedef struct table {
  uint32_t blocks;
  size_t values;
  uint64_t *hashes; /* block j holds hashes [start[j], start[j + 1]) */
  size_t *start;
} table_t;

/* One layout built over a table: its probe lists the blocks that may hold a value. */
typedef struct layout {
  const char *name;
  uint32_t k;
  size_t bytes;
  void *state;
  uint32_t (*probe)(const void *state, uint32_t blocks, uint64_t hash, uint32_t *out);
  void (*destroy)(void *state, uint32_t blocks);
} layout_t;

static void die(const char *what) {
  fprintf(stderr, "block_filter_bench: %s\n", what);
  exit(1);
}

static void *xmalloc(size_t n) {
  void *p = malloc(n ? n : 1);
  if (!p) die("out of memory");
  return p;
}

static double now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static table_t table_make(size_t values, uint32_t blocks, rng_t *r) {
  table_t t = {blocks, values, xmalloc(values * sizeof(uint64_t)),
               xmalloc((blocks + 1) * sizeof(size_t))};
  for (size_t i = 0; i < values; i++) t.hashes[i] = rng_next(r);
  for (uint32_t j = 0; j <= blocks; j++) t.start[j] = (size_t)((uint64_t)values * j / blocks);
  return t;
}

/* sliced */
static uint32_t sliced_probe(const void *s, uint32_t blocks, uint64_t hash, uint32_t *out) {
  (void)blocks;
  return block_filter_probe(s, hash, out);
}
static void sliced_destroy(void *s, uint32_t blocks) {
  (void)blocks;
  block_filter_destroy(s);
}
static layout_t sliced_build(const table_t *t, uint32_t bits) {
  block_filter_builder_t *b = block_filter_builder_create(bits);
  if (!b) die("block filter builder");
  for (uint32_t j = 0; j < t->blocks; j++) {
    for (size_t i = t->start[j]; i < t->start[j + 1]; i++)
      if (block_filter_builder_add(b, t->hashes[i]) != 0) die("block filter add");
    if (block_filter_builder_end_block(b, (uint64_t)j * 4096, 4000) != 0) die("end_block");
  }
  block_filter_t *f;
  if (block_filter_builder_finish(b, &f, NULL) != 0) die("block filter finish");
  block_filter_builder_destroy(b);
  uint8_t *buf = xmalloc(block_filter_serialized_size(f));
  block_filter_serialize(f, buf);
  uint32_t k = decode_fixed32(buf + 12); /* the stored k (doc/format.md "Block filter") */
  free(buf);
  return (layout_t){"sliced", k, block_filter_serialized_size(f), f, sliced_probe, sliced_destroy};
}

/* blocked: filter j at data + off[j], off[j + 1] - off[j] bytes */
typedef struct per_block_blocked {
  uint8_t *data;
  size_t *off;
} per_block_blocked_t;

static uint32_t blocked_probe(const void *s, uint32_t blocks, uint64_t hash, uint32_t *out) {
  const per_block_blocked_t *p = s;
  uint32_t n = 0;
  for (uint32_t j = 0; j < blocks; j++)
    if (blocked_filter_may_contain(p->data + p->off[j], p->off[j + 1] - p->off[j], hash))
      out[n++] = j;
  return n;
}
static void blocked_destroy(void *s, uint32_t blocks) {
  (void)blocks;
  per_block_blocked_t *p = s;
  free(p->data);
  free(p->off);
  free(p);
}
static layout_t blocked_build(const table_t *t, uint32_t bits) {
  per_block_blocked_t *p = xmalloc(sizeof *p);
  p->off = xmalloc((t->blocks + 1) * sizeof(size_t));
  p->off[0] = 0;
  for (uint32_t j = 0; j < t->blocks; j++)
    p->off[j + 1] = p->off[j] + blocked_filter_size(t->start[j + 1] - t->start[j], bits);
  p->data = xmalloc(p->off[t->blocks]);
  for (uint32_t j = 0; j < t->blocks; j++)
    blocked_filter_build(p->data + p->off[j], p->off[j + 1] - p->off[j], t->hashes + t->start[j],
                         t->start[j + 1] - t->start[j], bits);
  size_t bytes = p->off[t->blocks] + (size_t)t->blocks * REF_BYTES;
  return (layout_t){"blocked",      blocked_filter_probes_for(bits), bytes, p, blocked_probe,
                    blocked_destroy};
}

/* bloom: one value filter per block */
static uint32_t bloom_probe(const void *s, uint32_t blocks, uint64_t hash, uint32_t *out) {
  value_filter_t *const *fs = s;
  uint32_t n = 0;
  for (uint32_t j = 0; j < blocks; j++) {
    probe_t p;
    probe_init(&p, hash, fs[j]->m, fs[j]->k);
    if (value_filter_may_contain_probe(fs[j], &p)) out[n++] = j;
  }
  return n;
}
static void bloom_destroy(void *s, uint32_t blocks) {
  value_filter_t **fs = s;
  for (uint32_t j = 0; j < blocks; j++) value_filter_destroy(fs[j]);
  free(fs);
}
static layout_t bloom_build(const table_t *t, uint32_t bits) {
  value_filter_t **fs = xmalloc(t->blocks * sizeof *fs);
  uint32_t k = (uint32_t)lround(bits * M_LN2);
  size_t bytes = (size_t)t->blocks * REF_BYTES;
  for (uint32_t j = 0; j < t->blocks; j++) {
    uint64_t m = (uint64_t)bits * (t->start[j + 1] - t->start[j]);
    fs[j] = value_filter_create(m < 64 ? 64 : m, k, SEED);
    if (!fs[j]) die("value filter");
    for (size_t i = t->start[j]; i < t->start[j + 1]; i++)
      value_filter_add_hash(fs[j], t->hashes[i]);
    bytes += fs[j]->nwords * 8;
  }
  return (layout_t){"bloom", k, bytes, fs, bloom_probe, bloom_destroy};
}

/* Median ns per table probe over batches of BATCH hashes; adds the blocks listed to *listed. */
static double time_probes(const layout_t *l, uint32_t blocks, const uint64_t *hashes, size_t probes,
                          uint32_t *out, uint64_t *listed) {
  size_t batches = probes / BATCH;
  double *ns = xmalloc(batches * sizeof(double));
  uint64_t n = 0;
  for (size_t b = 0; b < batches; b++) {
    double t0 = now_ns();
    for (size_t i = b * BATCH; i < (b + 1) * BATCH; i++)
      n += l->probe(l->state, blocks, hashes[i], out);
    ns[b] = (now_ns() - t0) / BATCH;
  }
  qsort(ns, batches, sizeof *ns, bench_cmp_double);
  double median = ns[batches / 2];
  free(ns);
  *listed = n;
  return median;
}

static void bench_table(size_t values, uint32_t blocks, size_t probes) {
  rng_t r;
  rng_init(&r, SEED ^ blocks);
  table_t t = table_make(values, blocks, &r);
  uint64_t *absent = xmalloc(probes * sizeof(uint64_t));
  uint64_t *present = xmalloc(probes * sizeof(uint64_t));
  for (size_t i = 0; i < probes; i++) {
    absent[i] = rng_next(&r);
    present[i] = t.hashes[rng_below(&r, values)];
  }
  uint32_t *out = xmalloc(blocks * sizeof(uint32_t));
  layout_t (*builders[])(const table_t *, uint32_t) = {sliced_build, blocked_build, bloom_build};
  const uint32_t bits[] = {8, 10, 12};
  for (size_t b = 0; b < sizeof bits / sizeof *bits; b++) {
    for (size_t l = 0; l < sizeof builders / sizeof *builders; l++) {
      layout_t lay = builders[l](&t, bits[b]);
      uint64_t fp, hits;
      double absent_ns = time_probes(&lay, blocks, absent, probes, out, &fp);
      double present_ns = time_probes(&lay, blocks, present, probes, out, &hits);
      if (hits < probes) die("a present value was not found"); /* every probe lists its block */
      double fp_per_probe = (double)fp / (double)probes;
      printf("%s,%u,%zu,%u,%u,%.3f,%.1f,%.1f,%.4f,%.5f\n", lay.name, blocks, values, bits[b], lay.k,
             (double)lay.bytes / (double)values, absent_ns, present_ns, fp_per_probe,
             fp_per_probe / blocks);
      fflush(stdout);
      lay.destroy(lay.state, blocks);
    }
  }
  free(out);
  free(absent);
  free(present);
  free(t.hashes);
  free(t.start);
}

static uint64_t parse_count(const char *flag, const char *arg) {
  char *end;
  unsigned long long v = arg ? strtoull(arg, &end, 10) : 0;
  if (!arg || *end || v == 0) {
    fprintf(stderr, "block_filter_bench: %s needs a positive number\n", flag);
    exit(2);
  }
  return v;
}

int main(int argc, char **argv) {
  size_t values = 50000, probes = 100000;
  uint32_t blocks = 0; /* 0: 400, then 5000 */
  for (int i = 1; i < argc; i++) {
    const char *arg = i + 1 < argc ? argv[i + 1] : NULL;
    if (strcmp(argv[i], "--values") == 0)
      values = parse_count(argv[i], arg), i++;
    else if (strcmp(argv[i], "--blocks") == 0)
      blocks = (uint32_t)parse_count(argv[i], arg), i++;
    else if (strcmp(argv[i], "--probes") == 0)
      probes = parse_count(argv[i], arg), i++;
    else {
      fprintf(stderr, "usage: block_filter_bench [--values N] [--blocks B] [--probes P]\n");
      return 2;
    }
  }
  if (probes < BATCH) probes = BATCH;
  const uint32_t table_blocks[] = {blocks ? blocks : 400, 5000};
  size_t ntables = blocks ? 1 : 2;
  if (values < (blocks ? blocks : 5000)) die("--values must be at least the number of blocks");
  printf("# block_filter_bench: values=%zu blocks=%u", values, table_blocks[0]);
  if (ntables > 1) printf(",%u", table_blocks[1]);
  printf(" probes=%zu batch=%d bits_per_value=8,10,12 seed=%#llx\n", probes, BATCH,
         (unsigned long long)SEED);
  printf(
      "# values spread evenly over the blocks; absent = random hashes, present = hashes of "
      "the table's values\n");
  printf(
      "layout,blocks,values,bits_per_value,k,bytes_per_value,absent_ns,present_ns,"
      "fp_blocks_per_probe,fp_per_block\n");
  for (size_t i = 0; i < ntables; i++) bench_table(values, table_blocks[i], probes);
  return 0;
}

/* block_scan_bench: the scan of a data block by value (lsm/block.h), decoding every entry
 * (block_scan_value_all) against looking for the value's bytes first (block_scan_value).
 *
 * Usage: block_scan_bench [--blocks B] [--rounds R] [--domain D] [--interval I]
 * Builds B data blocks of about 4 KiB the way the own engine writes them: internal keys
 * "Key<j>" in order (each with its 8-byte sequence and type), values "Value<v>" with v drawn
 * from [0, D) (the experiments' value format; D = 10000 is the 1% domain of 1M entries),
 * restart interval I. Each round scans every block for one value it holds (present) and for
 * one no block holds (absent), by both scans; the two must visit the same entries. Prints '#'
 * lines naming every parameter, then CSV:
 *   query,scan,ns_per_block_median,entries_decoded_per_block
 * (median over rounds of the mean time per block).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/bench_util.h"
#include "lsm/block.h"
#include "lsm/block_builder.h"
#include "lsm/internal_key.h"
#include "util/random.h"

#define SEED 0xb10c5ca7ull
#define BLOCK_BYTES 4096

static int count_visit(void *arg, const uint8_t *key, size_t key_len, const uint8_t *val,
                       uint32_t val_len, const uint8_t *prev, size_t prev_len) {
  (void)key, (void)key_len, (void)val, (void)val_len, (void)prev, (void)prev_len;
  ++*(uint64_t *)arg;
  return 0;
}

typedef struct blocks {
  uint8_t **data;
  size_t *size;
  char (*present)[32]; /* a value of each block */
  size_t n;
} blocks_t;

static blocks_t build(size_t nblocks, uint64_t domain, int interval) {
  blocks_t bs = {calloc(nblocks, sizeof(uint8_t *)), calloc(nblocks, sizeof(size_t)),
                 calloc(nblocks, 32), nblocks};
  if (!bs.data || !bs.size || !bs.present) {
    fprintf(stderr, "block_scan_bench: out of memory\n");
    exit(1);
  }
  rng_t rng;
  rng_init(&rng, SEED);
  uint64_t j = 1000000, seq = 1;
  for (size_t i = 0; i < nblocks; i++) {
    block_builder_t bb;
    block_builder_init(&bb, interval);
    size_t est = 0;
    while (est < BLOCK_BYTES - 64) {
      char key[32], val[32];
      uint8_t ik[48];
      int kn = snprintf(key, sizeof key, "Key%llu", (unsigned long long)j++);
      int vn = snprintf(val, sizeof val, "Value%llu", (unsigned long long)rng_below(&rng, domain));
      size_t ikn = internal_key_encode(ik, key, (size_t)kn, seq++, LSM_TYPE_VALUE);
      if (block_builder_add(&bb, ik, ikn, val, (size_t)vn) != ST_OK) exit(1);
      if (est == 0) memcpy(bs.present[i], val, (size_t)vn + 1);
      est += 3 + 6 + (size_t)vn; /* header, key suffix and trailer, value */
    }
    size_t size;
    const uint8_t *d = block_builder_finish(&bb, &size);
    bs.data[i] = malloc(size);
    memcpy(bs.data[i], d, size);
    bs.size[i] = size;
    block_builder_release(&bb);
  }
  return bs;
}

/* Mean ns per block of one pass of scan over every block for val (the block's own value when
   val is NULL); *visits and *entries are the pass's totals. */
static double pass(const blocks_t *bs, block_scan_fn scan, const char *val, uint64_t *visits,
                   uint64_t *entries) {
  uint64_t t0 = clock_now_ns();
  for (size_t i = 0; i < bs->n; i++) {
    block_t b;
    if (block_parse(&b, bs->data[i], bs->size[i])) exit(1);
    const char *v = val ? val : bs->present[i];
    if (scan(&b, v, strlen(v), count_visit, visits, entries) != 0) {
      fprintf(stderr, "block_scan_bench: block %zu malformed\n", i);
      exit(1);
    }
  }
  return (double)(clock_now_ns() - t0) / (double)bs->n;
}

int main(int argc, char **argv) {
  size_t nblocks = 2000;
  int rounds = 21, interval = 16;
  uint64_t domain = 10000;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--blocks") && i + 1 < argc)
      nblocks = (size_t)atol(argv[++i]);
    else if (!strcmp(argv[i], "--rounds") && i + 1 < argc)
      rounds = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--domain") && i + 1 < argc)
      domain = (uint64_t)atoll(argv[++i]);
    else if (!strcmp(argv[i], "--interval") && i + 1 < argc)
      interval = atoi(argv[++i]);
    else {
      fprintf(stderr, "usage: block_scan_bench [--blocks B] [--rounds R] [--domain D] "
                      "[--interval I]\n");
      return 2;
    }
  }
  if (nblocks < 1 || rounds < 1 || rounds > 1000 || domain < 1 || interval < 1) {
    fprintf(stderr, "block_scan_bench: --blocks, --rounds (<= 1000), --domain, --interval >= 1\n");
    return 2;
  }
  blocks_t bs = build(nblocks, domain, interval);
  printf("# block_scan_bench: blocks=%zu rounds=%d domain=%llu interval=%d block_bytes=%d\n",
         nblocks, rounds, (unsigned long long)domain, interval, BLOCK_BYTES);
  printf("query,scan,ns_per_block_median,entries_decoded_per_block\n");
  const char *queries[] = {"present", "absent"};
  const char *absent = "Value99999999999";
  double *ns = malloc((size_t)rounds * sizeof *ns);
  for (int q = 0; q < 2; q++) {
    uint64_t want_visits = 0;
    for (int s = 0; s < 2; s++) {
      block_scan_fn scan = s == 0 ? block_scan_value_all : block_scan_value;
      uint64_t visits = 0, entries = 0;
      for (int r = 0; r < rounds; r++) {
        visits = entries = 0;
        ns[r] = pass(&bs, scan, q ? absent : NULL, &visits, &entries);
      }
      if (s == 0) want_visits = visits;
      if (visits != want_visits) {
        fprintf(stderr, "block_scan_bench: the scans disagree (%llu against %llu visits)\n",
                (unsigned long long)visits, (unsigned long long)want_visits);
        return 1;
      }
      qsort(ns, (size_t)rounds, sizeof *ns, bench_cmp_double);
      printf("%s,%s,%.1f,%.1f\n", queries[q], s ? "skip" : "all", ns[rounds / 2],
             (double)entries / (double)nblocks);
    }
  }
  for (size_t i = 0; i < nblocks; i++) free(bs.data[i]);
  free(bs.data), free(bs.size), free(bs.present), free(ns);
  return 0;
}

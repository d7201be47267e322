/* crc32c_bench: throughput of CRC32C (util/crc32c.h) by path and buffer size.
 *
 * Usage: crc32c_bench [--rounds N] [--mib M]
 * Prints '#' lines naming every parameter, then CSV:
 *   path,buffer_bytes,calls_per_round,gbps_median,gbps_min,gbps_max
 * For each buffer size, each round checksums buffers of that size laid end to end over M MiB
 * (default 1: the data stays in L2, as a table read run does), one call per buffer, each
 * starting from the CRC the call before returned (so calls do not overlap); GB/s =
 * 10^9 bytes per second, over `rounds` rounds (median, min, max).
 * Paths: dispatch (crc32c_extend, the best this CPU has: see the '# path' line), single_chain
 * (one chain of the SSE4.2 instruction) and portable (slicing-by-8 tables).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "util/crc32c.h"
#include "util/random.h"

#define SEED 0xc3cbe7cull

typedef uint32_t (*extend_fn)(uint32_t, const void *, size_t);

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static volatile uint32_t sink;

int main(int argc, char **argv) {
  int rounds = 15;
  size_t mib = 1;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--rounds") && i + 1 < argc)
      rounds = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--mib") && i + 1 < argc)
      mib = (size_t)atoi(argv[++i]);
    else {
      fprintf(stderr, "usage: crc32c_bench [--rounds N] [--mib M]\n");
      return 2;
    }
  }
  if (rounds < 1 || rounds > 1000 || mib < 1 || mib > 4096) {
    fprintf(stderr, "crc32c_bench: --rounds 1..1000, --mib 1..4096\n");
    return 2;
  }
  size_t total = mib << 20;
  uint8_t *buf = malloc(total);
  double *gbps = malloc((size_t)rounds * sizeof *gbps);
  if (!buf || !gbps) {
    fprintf(stderr, "crc32c_bench: out of memory\n");
    return 1;
  }
  rng_t r;
  rng_init(&r, SEED);
  for (size_t i = 0; i < total; i++) buf[i] = (uint8_t)rng_next(&r);

  static const size_t sizes[] = {64, 1024, 4096, 4097, 65536, 256 << 10};
  static const struct {
    const char *name;
    extend_fn fn;
  } paths[] = {{"dispatch", crc32c_extend},
               {"single_chain", crc32c_extend_single_chain},
               {"portable", crc32c_extend_portable}};
  printf("# crc32c_bench: rounds %d, data %zu MiB per round, seed %#llx\n", rounds, mib,
         (unsigned long long)SEED);
  printf("# path of crc32c_extend on this CPU: %s\n", crc32c_path_name());
  printf("path,buffer_bytes,calls_per_round,gbps_median,gbps_min,gbps_max\n");
  for (size_t p = 0; p < sizeof paths / sizeof paths[0]; p++)
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
      size_t sz = sizes[s], calls = total / sz;
      uint32_t acc = 0;
      for (size_t c = 0; c < calls; c++) acc ^= paths[p].fn(0, buf + c * sz, sz); /* warm up */
      for (int k = 0; k < rounds; k++) {
        double t0 = now_s();
        for (size_t c = 0; c < calls; c++) acc ^= paths[p].fn(acc, buf + c * sz, sz);
        gbps[k] = (double)(calls * sz) / (now_s() - t0) / 1e9;
      }
      sink = acc;
      qsort(gbps, (size_t)rounds, sizeof *gbps, cmp_double);
      printf("%s,%zu,%zu,%.2f,%.2f,%.2f\n", paths[p].name, sz, calls, gbps[rounds / 2], gbps[0],
             gbps[rounds - 1]);
    }
  free(buf);
  free(gbps);
  return 0;
}

/* read_batch_bench: what a batch of reads (env_read_batch, util/env.h) costs against the same
 * reads made one by one with pread, on a file in the page cache: the reads of a warm search.
 *
 * Usage: read_batch_bench [--file-mib M] [--read-bytes B] [--rounds R] [--dir PATH]
 *                         [--commit C]
 * Writes a file of M MiB (default 64) in PATH (default /tmp), reads it once so that it is
 * in the page cache, then, for each batch size (1, 2, 4, 8, 16, 32, 64, 128 reads), makes R
 * rounds (default 2,000) of that many reads of B bytes (default 4,096) at seeded random
 * offsets aligned to B, in turn with env_rfile_pread per read and as one env_read_batch
 * (each round its own offsets). Prints a '#' line naming every parameter, then CSV:
 *   commit,batch,read_bytes,rounds,pread_us_per_read,batch_us_per_read,batch_over_pread
 * with each time the median of its rounds, divided by the batch size.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "util/env.h"
#include "util/random.h"

#define SEED 0x7265616462ull

static double now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec * 1e-3;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static double median(double *v, size_t n) {
  qsort(v, n, sizeof *v, cmp_double);
  return v[n / 2];
}

int main(int argc, char **argv) {
  size_t mib = 64, bytes = 4096, rounds = 2000;
  const char *dir = "/tmp", *commit = "unknown";
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!strcmp(a, "--file-mib") && v)
      mib = strtoull(v, NULL, 10);
    else if (!strcmp(a, "--read-bytes") && v)
      bytes = strtoull(v, NULL, 10);
    else if (!strcmp(a, "--rounds") && v)
      rounds = strtoull(v, NULL, 10);
    else if (!strcmp(a, "--dir") && v)
      dir = v;
    else if (!strcmp(a, "--commit") && v)
      commit = v;
    else {
      fprintf(stderr,
              "usage: read_batch_bench [--file-mib M] [--read-bytes B] [--rounds R] "
              "[--dir PATH] [--commit C]\n");
      return 2;
    }
    i++;
  }
  if (mib == 0 || bytes == 0 || rounds == 0 || bytes > mib << 20) {
    fprintf(stderr, "read_batch_bench: M, B and R must be positive, B at most M MiB\n");
    return 2;
  }
  env_t *io = env_default();
  err_t err;
  char path[4096];
  snprintf(path, sizeof path, "%s/read_batch_bench.%ld", dir, (long)getpid());
  size_t size = mib << 20;
  uint8_t *data = malloc(size);
  if (!data) return 1;
  rng_t rng;
  rng_init(&rng, SEED);
  for (size_t i = 0; i < size; i += 8) {
    uint64_t x = rng_next(&rng);
    memcpy(data + i, &x, size - i < 8 ? size - i : 8);
  }
  env_rfile_t *f = NULL;
  if (env_write_file(io, path, data, size, &err) != ST_OK ||
      env_open_read(io, path, &f, &err) != ST_OK) {
    fprintf(stderr, "read_batch_bench: %s\n", err.msg);
    return 1;
  }
  free(data);
  enum { MAX_BATCH = 128 };
  uint8_t *buf = malloc(MAX_BATCH * bytes);
  env_read_t r[MAX_BATCH];
  double *tp = malloc(rounds * sizeof *tp), *tb = malloc(rounds * sizeof *tb);
  if (!buf || !tp || !tb) return 1;
  size_t got, slots = size / bytes;
  for (size_t off = 0; off + bytes <= size; off += bytes) /* into the page cache */
    if (env_rfile_pread(f, off, buf, bytes, &got, &err) != ST_OK) return 1;
  printf("# read_batch_bench: %zu MiB file in %s, reads of %zu bytes, %zu rounds, seed 0x%llx\n",
         mib, dir, bytes, rounds, (unsigned long long)SEED);
  printf("commit,batch,read_bytes,rounds,pread_us_per_read,batch_us_per_read,batch_over_pread\n");
  for (size_t n = 1; n <= MAX_BATCH; n *= 2) {
    for (size_t k = 0; k < 2 * rounds; k++) { /* pread and batch in turn, offsets fresh */
      for (size_t i = 0; i < n; i++)
        r[i] = (env_read_t){f, (rng_next(&rng) % slots) * bytes, buf + i * bytes, bytes, 0, 0};
      double t0 = now_us();
      if (k % 2 == 0) {
        for (size_t i = 0; i < n; i++)
          if (env_rfile_pread(f, r[i].offset, r[i].buf, bytes, &got, &err) != ST_OK) return 1;
      } else if (env_read_batch(io, r, n, &err) != ST_OK) {
        fprintf(stderr, "read_batch_bench: %s\n", err.msg);
        return 1;
      }
      double t = (now_us() - t0) / (double)n;
      for (size_t i = 0; k % 2 && i < n; i++)
        if (r[i].got != bytes) return 1;
      if (k % 2)
        tb[k / 2] = t;
      else
        tp[k / 2] = t;
    }
    double p = median(tp, rounds), b = median(tb, rounds);
    printf("%s,%zu,%zu,%zu,%.3f,%.3f,%.3f\n", commit, n, bytes, rounds, p, b, b / p);
  }
  env_rfile_close(f);
  env_unlink(io, path, NULL);
  free(buf);
  free(tp);
  free(tb);
  return 0;
}

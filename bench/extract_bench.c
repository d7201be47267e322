/* extract_bench: the speed of extracting one dotted path from JSON values with each JSON
 * library Debian ships for C (json-c, jansson, cJSON), and simdjson's (C++) when installed,
 * to choose the one query/attr.c uses (doc/query.md "Why json-c").
 *
 * Usage: extract_bench [--num N] [--runs R] [--commit C]
 * Prints '#' lines naming every parameter, then CSV:
 *   commit,library,version,path,values,value_bytes_mean,terms,ns_per_value_median,
 *   ns_per_value_min,ns_per_value_max
 * The values: N JSON objects (default 1000000) of 9 fields, about 210 to 260 bytes, from a fixed
 * seed: an integer id, strings (name, some with an escaped quote; email; a date), an integer
 * age, a boolean, a number with a fraction, a nested object `address` of three strings and an
 * array `tags` of 1 to 4 strings. For each library and path, each run parses every value (one
 * call, the value's length given), walks the path, visits each term (an array's elements
 * each) and frees the document, as attr_extract does once per put. R runs (default 5), each
 * timing every library in turn (so that load from elsewhere falls on all of them), in the
 * thread's CPU time (time the machine gives other processes is not counted); the median,
 * min and max ns per value. `terms` counts the terms the last run found (the same for
 * every library, or the libraries disagree). The commit is what scripts/extract-bench.sh
 * passes (the tree the run measured).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench/bench_util.h"
#include "bench/extract/extract.h"
#include "util/random.h"

#define SEED 0x6a736f6eull /* "json" */

static const char *const cities[] = {"Lyon",    "Paris",    "Berlin",          "Z\\u00fcrich",
                                     "Oslo",    "New York", "S\\u00e3o Paulo", "Kyoto",
                                     "Nairobi", "Lima"};
static const char *const words[] = {"red", "green", "blue", "admin", "beta",   "vip",
                                    "eu",  "us",    "new",  "old",   "mobile", "web"};

/* Appends one value to buf at *n (room for 512 bytes assumed). */
static void make_value(rng_t *r, char *buf, size_t *n, uint64_t i) {
  char *p = buf + *n;
  int len = sprintf(p,
                    "{\"id\":%llu,\"name\":\"user %s%llu\",\"email\":\"u%llu@example.com\","
                    "\"age\":%u,\"active\":%s,\"score\":%u.%02u,",
                    (unsigned long long)i, rng_below(r, 8) ? "" : "\\\"x\\\" ",
                    (unsigned long long)rng_below(r, 100000), (unsigned long long)i,
                    (unsigned)(18 + rng_below(r, 70)), rng_below(r, 2) ? "true" : "false",
                    (unsigned)rng_below(r, 100), (unsigned)rng_below(r, 100));
  len += sprintf(p + len,
                 "\"address\":{\"street\":\"%u rue des Lilas\",\"city\":\"%s\","
                 "\"zip\":\"%05u\"},\"tags\":[",
                 (unsigned)(1 + rng_below(r, 200)), cities[rng_below(r, 10)],
                 (unsigned)rng_below(r, 100000));
  unsigned ntags = 1 + (unsigned)rng_below(r, 4);
  for (unsigned t = 0; t < ntags; t++)
    len += sprintf(p + len, "%s\"%s\"", t ? "," : "", words[rng_below(r, 12)]);
  len += sprintf(p + len, "],\"created\":\"2026-%02u-%02uT%02u:%02u:00Z\"}",
                 (unsigned)(1 + rng_below(r, 12)), (unsigned)(1 + rng_below(r, 28)),
                 (unsigned)rng_below(r, 24), (unsigned)rng_below(r, 60));
  *n += (size_t)len;
}

/* The thread's CPU time in ns: on a shared machine, time another process takes is not
   counted (its cache pressure still is). */
static uint64_t cpu_now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

int main(int argc, char **argv) {
  size_t num = 1000000;
  int runs = 5;
  const char *commit = "unknown";
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--num") && i + 1 < argc)
      num = strtoull(argv[++i], NULL, 10);
    else if (!strcmp(argv[i], "--runs") && i + 1 < argc)
      runs = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--commit") && i + 1 < argc)
      commit = argv[++i];
    else {
      fprintf(stderr, "usage: extract_bench [--num N] [--runs R] [--commit C]\n");
      return 2;
    }
  }
  if (num < 1 || num > 100000000 || runs < 1 || runs > 101) {
    fprintf(stderr, "extract_bench: --num 1..100000000, --runs 1..101\n");
    return 2;
  }
  char *buf = malloc(num * 512);
  size_t *off = malloc((num + 1) * sizeof *off);
  double *ns = malloc(4 * (size_t)runs * sizeof *ns);
  if (!buf || !off || !ns) {
    fprintf(stderr, "extract_bench: out of memory\n");
    return 1;
  }
  rng_t r;
  rng_init(&r, SEED);
  size_t n = 0;
  for (size_t i = 0; i < num; i++) {
    off[i] = n;
    make_value(&r, buf, &n, i);
  }
  off[num] = n;

  const extract_lib_t *libs[] = {&extract_jsonc, &extract_jansson, &extract_cjson,
#ifdef BFH_BENCH_SIMDJSON
                                 &extract_simdjson
#endif
  };
  static const extract_path_t paths[] = {
      {"address.city", {"address", "city"}, 2}, {"age", {"age"}, 1}, {"tags", {"tags"}, 1}};
  size_t vmin = SIZE_MAX, vmax = 0;
  for (size_t i = 0; i < num; i++) {
    size_t l = off[i + 1] - off[i];
    vmin = l < vmin ? l : vmin;
    vmax = l > vmax ? l : vmax;
  }
  printf(
      "# extract_bench: %zu values, %d runs, seed %#llx, value bytes mean %.1f, min %zu, "
      "max %zu; time: the thread's CPU time\n",
      num, runs, (unsigned long long)SEED, (double)n / (double)num, vmin, vmax);
  printf("# first value: %.*s\n", (int)(off[1] - off[0]), buf);
  printf(
      "commit,library,version,path,values,value_bytes_mean,terms,ns_per_value_median,"
      "ns_per_value_min,ns_per_value_max\n");
  uint64_t sink = 0;
  enum { NLIBS = sizeof libs / sizeof libs[0] };
  for (size_t p = 0; p < sizeof paths / sizeof paths[0]; p++) {
    size_t terms[NLIBS];
    /* run after run, each library in turn: a burst of load from elsewhere lands on all */
    for (int run = 0; run < runs; run++)
      for (size_t l = 0; l < NLIBS; l++) {
        terms[l] = 0;
        uint64_t t0 = cpu_now_ns();
        for (size_t i = 0; i < num; i++)
          terms[l] += libs[l]->extract(buf + off[i], off[i + 1] - off[i], &paths[p], &sink);
        ns[l * (size_t)runs + (size_t)run] = (double)(cpu_now_ns() - t0) / (double)num;
      }
    for (size_t l = 0; l < NLIBS; l++) {
      double *x = ns + l * (size_t)runs;
      qsort(x, (size_t)runs, sizeof *x, bench_cmp_double);
      printf("%s,%s,%s,%s,%zu,%.1f,%zu,%.1f,%.1f,%.1f\n", commit, libs[l]->name, libs[l]->version(),
             paths[p].text, num, (double)n / (double)num, terms[l], x[runs / 2], x[0], x[runs - 1]);
    }
    fflush(stdout);
  }
  fprintf(stderr, "extract_bench: checksum %llu\n", (unsigned long long)sink);
  free(buf);
  free(off);
  free(ns);
  return 0;
}

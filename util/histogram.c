/* histogram_t: log-linear latency buckets (histogram.h). */
#include "util/histogram.h"

#include <math.h>
#include <string.h>

#define SUB (1u << HISTOGRAM_SUB_BITS)

/* Values below 2 SUB are their own bucket; above, a value with its top bit at p falls in one
   of SUB buckets of width 2^(p - HISTOGRAM_SUB_BITS). */
static unsigned bucket_of(uint64_t v) {
  if (v < 2 * SUB) return (unsigned)v;
  unsigned p = 63 - (unsigned)__builtin_clzll(v);
  unsigned shift = p - HISTOGRAM_SUB_BITS;
  return (shift + 1) * SUB + (unsigned)((v >> shift) & (SUB - 1));
}

/* The highest value of bucket b. */
static uint64_t bucket_top(unsigned b) {
  if (b < 2 * SUB) return b;
  unsigned shift = b / SUB - 1;
  uint64_t low = ((uint64_t)(SUB + b % SUB)) << shift;
  return low + ((UINT64_C(1) << shift) - 1);
}

void histogram_init(histogram_t *h) {
  memset(h, 0, sizeof *h);
  h->min = UINT64_MAX;
}

void histogram_record(histogram_t *h, uint64_t v) {
  h->buckets[bucket_of(v)]++;
  h->count++;
  h->sum += v;
  if (v < h->min) h->min = v;
  if (v > h->max) h->max = v;
}

void histogram_merge(histogram_t *dst, const histogram_t *src) {
  for (unsigned b = 0; b < HISTOGRAM_BUCKETS; b++) dst->buckets[b] += src->buckets[b];
  dst->count += src->count;
  dst->sum += src->sum;
  if (src->min < dst->min) dst->min = src->min;
  if (src->max > dst->max) dst->max = src->max;
}

uint64_t histogram_quantile(const histogram_t *h, double q) {
  if (h->count == 0) return 0;
  if (q <= 0) return h->min;
  uint64_t rank = (uint64_t)ceil(q * (double)h->count);
  if (rank < 1) rank = 1;
  if (rank > h->count) rank = h->count;
  uint64_t seen = 0;
  for (unsigned b = 0; b < HISTOGRAM_BUCKETS; b++) {
    seen += h->buckets[b];
    if (seen >= rank) {
      uint64_t top = bucket_top(b);
      return top < h->max ? top : h->max;
    }
  }
  return h->max;
}

double histogram_mean(const histogram_t *h) {
  return h->count ? (double)h->sum / (double)h->count : 0.0;
}

/* histogram_t: a latency histogram whose percentiles are within 1% of the values recorded
 * (log-linear buckets, as HdrHistogram's: every value below 256 has a bucket of its own,
 * and each power of two above is cut into 128 equal buckets). Every operation of a run is
 * recorded, so p50/p95/p99 come from all of them, not from a sample or a mean.
 *
 * Caller-owned struct (about 59 KiB): histogram_init, then histogram_record. One thread per
 * histogram; merge per-thread histograms with histogram_merge.
 */
#ifndef BFH_UTIL_HISTOGRAM_H
#define BFH_UTIL_HISTOGRAM_H

#include <stdint.h>

#define HISTOGRAM_SUB_BITS 7
#define HISTOGRAM_BUCKETS ((65 - HISTOGRAM_SUB_BITS) << HISTOGRAM_SUB_BITS) /* 7,424 */

typedef struct histogram {
  uint64_t count, sum, min, max;
  uint64_t buckets[HISTOGRAM_BUCKETS];
} histogram_t;

void histogram_init(histogram_t *h);
void histogram_record(histogram_t *h, uint64_t v);
/* dst += src. */
void histogram_merge(histogram_t *dst, const histogram_t *src);
/* The value at quantile q (0 <= q <= 1): the highest value of the bucket that holds the
   ceil(q * count)-th smallest value recorded (the smallest for q = 0), never above max;
   0 when nothing was recorded. */
uint64_t histogram_quantile(const histogram_t *h, double q);
double histogram_mean(const histogram_t *h);

#endif /* BFH_UTIL_HISTOGRAM_H */

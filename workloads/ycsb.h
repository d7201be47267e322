/* ycsb_gen_t: the operation streams of YCSB's six core workloads, recast for value search
 * (bfh run ycsb). Each operation names a record by its id; what a "read" asks is the value
 * of that record, so the request distribution makes some values hot, as YCSB makes keys hot.
 *
 *   workload  mix                                          records drawn
 *   A         50% value search, 50% update                 zipfian
 *   B         95% value search,  5% update                 zipfian
 *   C         100% value search                            zipfian
 *   D         95% newest K of a value, 5% insert           latest (K = YCSB_NEWEST_K)
 *   E         95% short value range, 5% insert            zipfian (range length uniform
 *                                                           in 1..YCSB_MAX_RANGE records)
 *   F         50% value search, 50% read-modify-write      zipfian
 * (Cooper et al., "Benchmarking Cloud Serving Systems with YCSB", SoCC 2010, Table 2; the
 * zipfian records are scrambled, as YCSB's are.) A record inserted gets the next id, as
 * YCSB's insert sequence gives it, and the two distributions treat inserts as YCSB's
 * CoreWorkload does:
 *   latest    follows the inserts: the newest record is the most likely, the one before it
 *             next (keydist.h's latest over every record so far, YCSB's SkewedLatest);
 *   zipfian   is drawn over a space fixed at ycsb_gen_init, the records loaded and the
 *             inserts expected (twice the insert share of the operations to come), and a
 *             draw past the records inserted so far is drawn again, so that the hot records
 *             stay hot while records arrive.
 *
 * Caller-owned struct (ycsb_gen_init only), no resources; one generator per thread.
 */
#ifndef BFH_WORKLOADS_YCSB_H
#define BFH_WORKLOADS_YCSB_H

#include <stdint.h>

#include "util/random.h"
#include "workloads/keydist.h"

typedef enum ycsb_op {
  YCSB_SEARCH = 0, /* the records holding the chosen record's value */
  YCSB_UPDATE = 1, /* the chosen record gets another value */
  YCSB_INSERT = 2, /* a new record */
  YCSB_NEWEST = 3, /* the newest K records holding the chosen record's value */
  YCSB_RANGE = 4,  /* the records whose value lies in a short range from the chosen one's */
  YCSB_RMW = 5,    /* search the chosen record's value, then update the record */
} ycsb_op_t;

#define YCSB_OPS 6
#define YCSB_MAX_RANGE 100
#define YCSB_NEWEST_K 10 /* D asks the newest 10: a page of the latest records, as a feed shows */

/* One workload's mix: the share of each operation (summing to 1) and its distribution. */
typedef struct ycsb_mix {
  char name; /* 'A'..'F' */
  double share[YCSB_OPS];
  keydist_kind_t dist;
} ycsb_mix_t;

typedef struct ycsb_gen {
  ycsb_mix_t mix;
  keydist_t dist;
  uint64_t records; /* loaded and inserted so far */
  uint64_t space;   /* zipfian: the records its draws range over (latest: records) */
  rng_t rng;
} ycsb_gen_t;

/* The mix of workload w ('A'..'F', either case), or NULL. */
const ycsb_mix_t *ycsb_mix(char w);
/* "search", "update", "insert", "newest", "range", "rmw". */
const char *ycsb_op_name(ycsb_op_t op);

/* A generator of mix over `loaded` records (>= 1) for about `ops` operations (which sizes the
   zipfian's space, above; more may be drawn), seeded. */
void ycsb_gen_init(ycsb_gen_t *g, const ycsb_mix_t *mix, uint64_t loaded, uint64_t ops,
                   uint64_t seed);
/* The next operation and its record (for YCSB_INSERT the new record's id, which the
   generator now counts; for YCSB_RANGE also *span, the range's length in records, else 1). */
ycsb_op_t ycsb_gen_next(ycsb_gen_t *g, uint64_t *record, uint32_t *span);

#endif /* BFH_WORKLOADS_YCSB_H */

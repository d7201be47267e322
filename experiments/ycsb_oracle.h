/* The oracle of `bfh run ycsb` (experiments/exp_ycsb.c), kept beside each database: each
 * record's current value and its write number (the order of every put the driver made, as
 * the engine's sequence numbers order them), per distinct value its records, and per range
 * term, in a Fenwick tree over the terms' ranks, the records holding it. With the source's
 * terms (experiments/ycsb_source.h) it answers exactly what every query of the workloads
 * should report: a value's or a term's records, a range's or a prefix's, and the newest K
 * holders of a value or a term, in write order.
 */
#ifndef BFH_EXPERIMENTS_YCSB_ORACLE_H
#define BFH_EXPERIMENTS_YCSB_ORACLE_H

#include <stddef.h>
#include <stdint.h>

#include "experiments/ycsb_source.h"
#include "util/u64_map.h"
#include "util/vec.h"

typedef struct ycsb_oracle {
  const ycsb_source_t *src;
  uint64_t n, cap;   /* records so far (loaded, then inserted), and the arrays' room */
  uint64_t *value;   /* [n] record -> value number */
  uint64_t *written; /* [n] record -> the number of its latest write (1, 2, ...) */
  uint64_t writes;   /* writes so far */
  uint64_t *pos;     /* [n] record -> its index in its vid's list */
  uint32_t *seen;    /* [n] the check that last saw the record (duplicates) */
  u64vec_t *holders; /* [nvids] vid -> records */
  u64_map_t by_key;  /* key hash -> record */
  uint32_t check;
  /* A Fenwick tree over the range attribute's ranks, [1, nterms]: the records holding each
     term, so that E finds where a range of `span` records from a term ends. */
  int64_t *fen;
} ycsb_oracle_t;

/* An oracle of s's records 0..s->n-1, their values still to be set (ycsb_oracle_set, first).
   On failure it is still released with ycsb_oracle_release. Borrows s. */
int ycsb_oracle_init(ycsb_oracle_t *o, const ycsb_source_t *s);
void ycsb_oracle_release(ycsb_oracle_t *o);
/* Record r (the next: o->n) joins the records, its value still to be set. */
int ycsb_oracle_insert(ycsb_oracle_t *o, uint64_t r);
/* Record r was written with value number v (first: it held none): its latest write. */
int ycsb_oracle_set(ycsb_oracle_t *o, uint64_t r, uint64_t v, int first);

/* The records holding term tid of the source's query attribute. */
uint64_t ycsb_oracle_term_count(const ycsb_oracle_t *o, uint64_t tid);
/* The records holding a range term of rank in [lo, hi], each once. */
uint64_t ycsb_oracle_range_count(ycsb_oracle_t *o, uint64_t lo, uint64_t hi);
/* E's range from the range term of rank lo: up to the rank where the records from lo reach
   span (YCSB's scan of span records, in the attribute's order), or the last. */
uint64_t ycsb_oracle_range_end(const ycsb_oracle_t *o, uint64_t lo, uint32_t span);
/* The prefix analogue of a range of span records: the shortest prefix of range term tid (whole
   UTF-8 characters, before any '%' or '_', which LIKE does not take) whose terms hold at most
   span records, or the longest such prefix when every one holds more; its terms' ranks in
   [*lo, *hi]. 0: the term has no such prefix. */
size_t ycsb_oracle_prefix(const ycsb_oracle_t *o, uint64_t tid, uint32_t span, uint64_t *lo,
                          uint64_t *hi);

/* ---- checking a query's keys ----------------------------------------------------------------- */

typedef enum ycsb_check_kind {
  YCSB_CHECK_VALUE, /* the records holding a value */
  YCSB_CHECK_TERM,  /* the records holding a term of the query attribute */
  YCSB_CHECK_RANGE, /* the records holding a range term of rank in [lo, hi] */
} ycsb_check_kind_t;

/* One query's keys against the oracle: set o, kind and its operand (and for the newest K,
   order and k), bump o->check, pass ycsb_check_key and the check to the query. */
typedef struct ycsb_check {
  ycsb_oracle_t *o;
  ycsb_check_kind_t kind;
  uint32_t vid;    /* YCSB_CHECK_VALUE: the value's vid */
  uint64_t tid;    /* YCSB_CHECK_TERM: the query attribute's term */
  uint64_t lo, hi; /* YCSB_CHECK_RANGE: the range attribute's ranks [lo, hi] */
  uint64_t *order; /* the newest K: the records in the order reported, [k] */
  size_t k;
  uint64_t found;
  int bad; /* a key not holding the value (the term, a term in range), unknown, reported twice,
              or past the newest K */
} ycsb_check_t;

/* A query's result callback (bfh_result_fn): checks one key. */
int ycsb_check_key(void *arg, const void *key, size_t len);

/* The keys a query reported, copied as it reports them and checked once its time is taken
   (ycsb_check_collected): the oracle's lookups (a hash map and three arrays of the records,
   cache misses at 10M) cost a microsecond a key, which is the benchmark's, not the query's.
   Caller-owned: zero it; reused from query to query; ycsb_keys_release after. */
typedef struct ycsb_keys {
  uint8_t *p; /* each key: its length (size_t), then its bytes */
  size_t len, cap;
  int nomem;
} ycsb_keys_t;

/* A query's result callback (bfh_result_fn, arg a ycsb_keys_t): copies the key. */
int ycsb_collect_key(void *arg, const void *key, size_t len);
/* ycsb_check_key(c, ...) of every key collected, in the order reported; then keys is empty.
   BFH_E_NOMEM (nothing checked) if a copy ran out of memory. */
int ycsb_check_collected(ycsb_check_t *c, ycsb_keys_t *keys);
void ycsb_keys_release(ycsb_keys_t *keys);

/* The newest K of check c (YCSB_CHECK_VALUE or _TERM, c->k and c->order set): did the query
   report the oracle's, in order? Exactly: the live holders with the largest write numbers,
   newest first. zeroed (an engine that zeroes the sequence numbers of what it compacts into
   its bottom level: RocksDB; doc/query.md "The newest K"): such keys rank oldest, in
   bytewise key order, so the answer must be some holders newest first and then, if it
   reaches them, the key-smallest of every holder left, ascending. */
int ycsb_oracle_newest_ok(ycsb_oracle_t *o, const ycsb_check_t *c, int zeroed);

#endif /* BFH_EXPERIMENTS_YCSB_ORACLE_H */

/* The record sources of `bfh run ycsb` (experiments/exp_ycsb.c): records 0..n-1 of synthetic
 * values or of a Debian data set (and the records the workloads insert, n onwards), the values
 * an update or insert draws from, and the terms of the attributes the workloads ask.
 *
 *   synth    keys k<15 digits>, values v<15 digits> with a 1% domain (about 100 keys a value);
 *            asked by whole value, and E's ranges of n, the value's number (bytes:1:15:int);
 *   a data set of workloads/dataset.h, its records spread by a seeded permutation; asked by
 *            whole value, by one selective attribute (YCSB_QUERY_ATTR: words' word, oui's
 *            vendor, unicode's name, wordnet's words) and by E's :range attribute.
 *
 * An attribute's terms are extracted once per distinct value by the extractor the database
 * runs at each put (query/attr.h), so that the oracle (experiments/ycsb_oracle.h) knows them
 * without asking the database.
 */
#ifndef BFH_EXPERIMENTS_YCSB_SOURCE_H
#define BFH_EXPERIMENTS_YCSB_SOURCE_H

#include <stddef.h>
#include <stdint.h>

#include "query/attr.h"
#include "util/vec.h"
#include "workloads/dataset.h"
#include "workloads/workload.h"

#define YCSB_SOURCES (1 + DATASET_KINDS) /* synth, then the data sets */
#define YCSB_MAX_KEY (DATASET_MAX_KEY + WORKLOAD_MAX_BYTES)

/* One attribute's terms over a source's distinct values: each distinct term a term id (tid),
   its bytes text[off[tid], off[tid + 1]); per vid the tids of its value, per tid the vids
   holding it; and for the range attribute the terms in the predicates' order (bytewise, a
   proper prefix first; an :int term's 8 bytes are its integer's order), by rank. */
typedef struct ycsb_terms {
  const char *decl; /* NAME=EXTRACTOR; NULL: none */
  attr_spec_t spec;
  int has_spec;
  char *text;
  size_t text_cap;
  u64vec_t off;
  uint64_t nterms;
  u64vec_t *vid_tids; /* [nvids] */
  u64vec_t tid_vids;  /* every tid's vids, back to back: tid's at tid_at[tid], tid_n[tid] */
  uint64_t *tid_at, *tid_n;
  uint64_t *by_rank, *rank; /* sorted terms: rank -> tid, tid -> rank */
} ycsb_terms_t;

/* Records 0..n-1 of one source (and the records the workloads insert, n onwards), and the
   values an update or insert draws from: value numbers 0..nvalues-1, each with its
   distinct-value id (vid), equal values one vid. */
typedef struct ycsb_source {
  const char *name;
  dataset_t *ds; /* NULL: synth */
  workload_t wl; /* synth */
  uint64_t n, nvalues;
  workload_perm_t spread; /* data sets: record r < count reads the set's record spread(r) */
  uint32_t *vid;          /* [nvalues] */
  uint64_t nvids;
  ycsb_terms_t query; /* data sets: the attribute asked by name (YCSB_QUERY_ATTR); synth: none */
  ycsb_terms_t range; /* the :range attribute E asks ranges of */
  int prefix;         /* E asks prefixes of its terms (LIKE), not BETWEEN */
} ycsb_source_t;

/* Opens source `kind` (0 synth, then the data sets in dataset_kind_t order) for n records, a
   data set's records spread by seed: its values, and the terms of its query and range
   attributes; BFH_OK or the failure. Client calls ycsb_source_close(), after a failure too. */
int ycsb_source_open(ycsb_source_t *s, int kind, uint64_t n, uint64_t seed);
void ycsb_source_close(ycsb_source_t *s);

/* Record r's key into buf (YCSB_MAX_KEY bytes); its length. */
size_t ycsb_source_key(const ycsb_source_t *s, uint64_t r, char *buf);
/* Value number v's bytes: borrowed from the data set, or formatted into buf
   (WORKLOAD_MAX_BYTES). */
const char *ycsb_source_value(const ycsb_source_t *s, uint64_t v, char *buf, size_t *len);
/* Record r's value number at the load. */
uint64_t ycsb_source_initial(const ycsb_source_t *s, uint64_t r);

/* Term tid's bytes, borrowed from t. */
const char *ycsb_terms_text(const ycsb_terms_t *t, uint64_t tid, size_t *len);
/* The predicates' order of terms: bytewise, a proper prefix first (<0, 0, >0). */
int ycsb_term_cmp(const char *a, size_t alen, const char *b, size_t blen);

/* Appends bytes as a predicate's text literal to buf[*n, cap): 'text' (a quote doubled,
   `suffix` before the closing quote). 0 when it does not fit or holds a NUL. */
int ycsb_literal(const char *text, size_t len, const char *suffix, char *buf, size_t cap,
                 size_t *n);
/* Appends term tid of t as a literal: ycsb_literal of its first len_cut bytes at most, or an
   :int term's integer. 0 when it does not fit or holds a NUL. */
int ycsb_terms_literal(const ycsb_terms_t *t, uint64_t tid, size_t len_cut, const char *suffix,
                       char *buf, size_t cap, size_t *n);

#endif /* BFH_EXPERIMENTS_YCSB_SOURCE_H */

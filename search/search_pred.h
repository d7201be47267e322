/* search_pred: the predicate side of a search (doc/query.md "Searching by a predicate").
 *
 * A bound predicate (query/expr.h) is a tree of AND and OR over leaves, each one
 * (attribute, term), which the filters hold as one tagged item (query/terms.h). A search by a
 * predicate runs the frame of search.h with three changes:
 *   - the tables to read: each leaf selects tables by its item hash, as a whole-value search
 *     selects them by the value's hash, and the tree combines the answers per table (a table
 *     is read when the predicate may hold there: AND intersects, OR unions) before any table
 *     is read; a table the index has no leaf for says maybe for every leaf, and is read;
 *   - the blocks of a table read through its block filter or map: the same, per block;
 *   - the memtables read through their value index: the entries under the item hashes of a
 *     cover of the tree (search_pred_t.cover: leaves such that every value that satisfies the
 *     predicate holds one of them);
 * and every entry found, then every candidate key's latest version, is tested by evaluating
 * the whole predicate over the value's terms (search_pred_test). A value that gives no term
 * for an attribute makes that attribute's leaves false.
 *
 * Ranges and prefixes (doc/query.md "Ranges"). A leaf that is not an equality is not one
 * item: the filters are asked the plan search_pred_init expands (query/expr.h's expr_expand),
 * in which each such leaf is an OR of the range items of its cover (query/range_cover.h) at
 * the levels its attribute stores. It is a constant instead when no item can help: true when
 * the attribute stores no range items or the cover would take more than
 * SEARCH_PRED_RANGE_BUDGET probes (every table may hold it: read), false when the range is
 * empty (nothing can hold it). A plan that folds to true is search_pred_t.read_all: the
 * search reads every table and memtable, as SCAN does. Validation evaluates the predicate as
 * written, never the plan.
 *
 * Composites (doc/query.md "Composites"). Where an AND of the predicate holds equalities (= or
 * IN) on both members of a declared composite (query/attr.h's pair:A,B), the plan gives the
 * AND one more conjunct: an OR of the composite's terms for the pairs of those equalities (at
 * most ATTR_PAIR_MAX_TERMS of them; beyond, none is added) and of its overflow term, one of
 * which every value satisfying the AND holds (query/terms.h). It only narrows the tables,
 * blocks and memtable entries read. A composite is not queried by its own name
 * (search_pred_bind refuses it).
 *
 * A database without declared attributes has one attribute, `value`: the whole value, its
 * item the whole value's hash (search_pred_lookup binds a predicate to it).
 */
#ifndef BFH_SEARCH_SEARCH_PRED_H
#define BFH_SEARCH_SEARCH_PRED_H

#include <stddef.h>
#include <stdint.h>

#include "filters/hash.h"
#include "lsm_hooks/engines/engine.h"
#include "query/expr.h"
#include "query/terms.h"
#include "util/err.h"

/* The name of the one attribute of a database without declarations. */
#define SEARCH_PRED_VALUE_NAME "value"
/* The most probes of one range or prefix (each a filter test per table): a cover that would
   take more is rounded out to coarser levels (range_cover), and failing that, read. */
#define SEARCH_PRED_RANGE_BUDGET 64

/* The most items of a range whose cover is exact for the range filters to be left unasked
   (search_pred_range_t.exact). */
#define SEARCH_PRED_EXACT_ITEMS 4

typedef struct search_pred_range {
  uint64_t src, zone_id, lo, hi;
  /* Its cover is exact (every item's interval lies inside the range) in at most
     SEARCH_PRED_EXACT_ITEMS items: a table's value-to-block map, probed for each item, then
     names only blocks holding a code of the range, so its range filter, which would cost a
     read where the table holds the range, can rule out no more than the map's probes do,
     and is not asked. */
  int exact;
} search_pred_range_t;

/* A leaf's needle (SEARCH_PRED_VERBATIM_* below): len bytes, the start of its term, or with
   DIGITS those of digits. */
typedef struct search_pred_needle {
  size_t len;
  uint8_t digits[20];
} search_pred_needle_t;

typedef struct search_pred {
  const expr_t *where;  /* the predicate as bound (search_pred_lookup's binding when terms is
                           NULL): what validation evaluates; borrowed */
  const expr_t *expr;   /* the plan over items the filters are asked (owned); leaf i below is
                           its leaf i */
  const terms_t *terms; /* the declared attributes (borrowed); NULL: the whole value only */
  int read_all;         /* the plan is always true: no filter narrows the search */
  size_t nleaves;
  size_t nscratch; /* bytes of the scratch a value test or a combination of leaves needs */
  uint64_t *hash;  /* leaf i's item hash under the search's seed (owned) */
  probe_t *probe;  /* leaf i's k bit positions from hash[i] (owned; k 0 without an index) */
  uint32_t *cover; /* leaves whose items every satisfying value holds one of (owned) */
  /* Leaf i's zone (owned): zone_id[i] is its attribute's zone id (query/terms.h
     terms_zone_id; 0: none, the leaf is not of an attribute with a zone), and every term
     that holds the leaf has its code in [zone_lo[i], zone_hi[i]]: [c, c] for a term of code
     c, [v << j, (v << j) + 2^j - 1] for the range item (j, v), cut to the written range's
     codes. zone_src[i]: for a range item, the written leaf of `where` it covers (its index);
     SEARCH_PRED_NO_SRC for any other leaf. */
  uint64_t *zone_id, *zone_lo, *zone_hi, *zone_src;
  /* The written ranges its items cover (owned; doc/query.md "Range filters"): for each, the
     leaf of `where` (zone_src), its attribute's zone id and the least zone_lo to the largest
     zone_hi of its items, what a table's range filter is asked, unless exact. */
  search_pred_range_t *ranges;
  size_t nranges;
  /* The pieces of a table's range filters the ranges may read: per range, one per block of
     2^VALUE_BLOCK_MAP_RANGE_LOG2 codes it meets, none for a range past
     RANGE_FILTER_MAX_BLOCKS blocks (asked without a read: maybe). What AUTO weighs the
     selection by, beside its items. */
  size_t range_pieces;
  size_t ncover;
  /* The quick test (search_pred_test): per leaf of `where`, SEARCH_PRED_VERBATIM_* (owned)
     and its needle (owned); any_verbatim: some leaf has one. */
  uint8_t *verbatim;
  search_pred_needle_t *needle;
  int any_verbatim;
  /* The needles of the whole predicate (owned; engine_value_test_t.needles): every value that
     satisfies it holds one of scan_needle[0, nscan_needles) as bytes, each at least 2 bytes
     but the backslash a JSON needle comes with (0: none, as when a leaf of the cover has no
     needle, or they would be more than BLOCK_NEEDLES_MAX). Their bytes point into the leaves'
     terms, needle and scan_digits. */
  block_needle_t *scan_needle;
  size_t nscan_needles;
  char (*scan_digits)[21];
} search_pred_t;

#define SEARCH_PRED_NO_SRC UINT64_MAX

/* Whether a value that satisfies leaf i holds its needle as bytes, so that a value without
   them cannot satisfy the leaf and the value test may skip the extraction (a value whose
   extraction a memmem rules out is most values of a table a term is rare in). The needle
   is the term of an equality, the prefix of a LIKE, and the bytes a BETWEEN's two ends
   share at their start (every string between them starts with those): each is the start of
   the term a satisfying value holds. Of that needle:
     NONE    no such promise: another comparison (<, <=, >, >=), an empty needle, a JSON
             needle that could be part of a number's term (its bytes all in [-+.0-9eE]: "-0"
             reads "0", an integer beyond 64 bits saturates), a CSV or TSV needle holding '"'
             (written doubled in a quoted field), an :int attribute of JSON (1e3 is 1000)
     ALWAYS  value, bytes:OFF:LEN, and CSV or TSV needles otherwise: the term is a slice of
             the value, and the needle of the term
     JSON    of a JSON string's content, true, false or null: the value's bytes, unless the
             value holds an escape ('\' anywhere), which may spell the term otherwise
     DIGITS  an :int attribute of the value, bytes:OFF:LEN, CSV or TSV, for an equality or a
             BETWEEN whose ends have one sign and as many digits: its integer is written
             [+-]0*D, D the decimal digits of its magnitude (attr_int_parse), and the needle
             is the digits that start the magnitude of every integer in the range (the
             ends' common first digits; all of an equality's) */
#define SEARCH_PRED_VERBATIM_NONE 0
#define SEARCH_PRED_VERBATIM_ALWAYS 1
#define SEARCH_PRED_VERBATIM_JSON 2
#define SEARCH_PRED_VERBATIM_DIGITS 3

/* expr_bind's lookup for a database with the declared attributes terms (a terms_t *, or NULL
   for none: then the only name is SEARCH_PRED_VALUE_NAME, a text attribute). */
int search_pred_lookup(void *terms, const char *name, size_t len, int *is_int);

/* Binds e (query/expr.h's expr_bind) to terms' attributes (NULL: the whole value only):
   ST_OK; ST_E_INVALID naming the column of an unknown attribute, of a bad literal, or of a
   composite ("column 1: city_age is a composite of city and age: query its members");
   ST_E_NOMEM. */
int search_pred_bind(expr_t *e, const terms_t *terms, err_t *err);

/* Fills *p for the bound predicate e over terms (NULL: none declared): the plan over items,
   each item's hash under seed, its probe of an m-bit filter with k hashes (k 0: no probes),
   and the cover. e and terms are borrowed and must outlive p. ST_OK; ST_E_NOMEM. Release
   with search_pred_release. */
int search_pred_init(search_pred_t *p, const expr_t *e, const terms_t *terms, uint64_t seed,
                     uint64_t m, uint32_t k, err_t *err);
void search_pred_release(search_pred_t *p); /* NULL, or one never filled, is allowed */

/* The whole value's item, when the predicate is exactly one equality on a text attribute
   whose term is the whole value (`value = '...'`): 1 with *val, *len borrowed from p's expr, the
   search then being a whole-value search of those bytes; else 0. */
int search_pred_whole_value(const search_pred_t *p, const void **val, size_t *len);

/* Does the predicate hold where leaf i is true exactly when yes[i * stride] is nonzero?
   scratch: nleaves bytes of the caller's. */
int search_pred_eval(const search_pred_t *p, const uint8_t *yes, size_t stride, uint8_t *scratch);

/* The argument of search_pred_test's callback (the caller's, living as long as the test). */
typedef struct search_pred_match {
  const search_pred_t *p;
  uint8_t *marks; /* nscratch bytes of scratch: one test per thread */
} search_pred_match_t;

/* The value test of a search by p (engine.h's engine_value_test_t): the predicate evaluated
   over each value's terms. *m is filled with p and marks (the caller's scratch of nscratch
   bytes); test borrows m. */
void search_pred_test(const search_pred_t *p, uint8_t *marks, search_pred_match_t *m,
                      engine_value_test_t *test);

#endif

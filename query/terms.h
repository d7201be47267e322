/* terms: the hashes a value is indexed under, given a database's declared attributes
 * (issue 47, doc/query.md "Terms"); the implementation of filters/value_terms.h.
 *
 * Each (attribute, term) is one item in the filters, maps and memtable index the whole value
 * has always been one item in. An item's hash is the term's, under a seed tagged with its
 * attribute:
 *   hash(attribute, term) = bfh_value_hash(term, term_len, terms_attr_seed(attribute, seed))
 *   terms_attr_seed(attribute, seed) = seed, for a `value` attribute (not :int), so that its
 *                                      term, the whole value, hashes as it always has;
 *                                    = bfh_hash64(name, strlen(name), seed ^ TERMS_TAG_SALT)
 *                                      for any other attribute, by its name.
 * An attribute declared with :range (query/attr.h) also gives, for each term, one range item
 * per stored level j, (j, code >> j) (query/range_cover.h), hashed as
 *   hash(attribute, item) = bfh_value_hash(item, RANGE_ITEM_BYTES, terms_range_seed(attribute,
 *                                                                                  seed))
 *   terms_range_seed(attribute, seed) = bfh_hash64(name, strlen(name), seed ^ TERMS_RANGE_SALT)
 * so that an item never meets a term. Level 0 of an :int attribute is its term itself.
 * Such an attribute also has a zone: a table's map keeps the least and largest code of its
 * terms, under the attribute's zone id (terms_zone_id), given with the items by the same
 * extraction (value_terms_t.hash_zoned).
 * A composite (pair:A,B, query/attr.h) has items made, not extracted: for each term a of A and
 * b of B of the value, its pair's term attr_pair_term(a, b) hashed as any term of the
 * composite is (terms_attr_seed, by the composite's name); when the pairs would number more
 * than ATTR_PAIR_MAX_TERMS, the one overflow term (empty) instead; none when A or B gives no
 * term (counted as a value without a term of the composite). They come of the members' terms
 * of the same one reading of the value, kept while it lasts.
 * So the same bytes under two attributes hash apart, a database that declares `value` keeps
 * answering whole-value searches, and an attribute's items do not depend on its position in
 * the list (dropping or adding another leaves them alone). A value's items are hashed once per
 * put (one reading of the value for all its attributes, attr_extract_each; one hash per term);
 * each distinct hash is given once.
 *
 * A value that gives no term for an attribute (a missing field, not JSON or CSV, too short)
 * is indexed under none of that attribute's: never an error. With VALUE_TERMS_COUNT (the
 * put's own extraction) it is counted, per attribute (terms_stats).
 *
 * Lifetime: terms_create makes a terms_t that owns the specs it is given; terms_destroy frees
 * both. A terms_t is read-only after creation but for its atomic counters: any number of
 * threads may hash with it at once.
 */
#ifndef BFH_QUERY_TERMS_H
#define BFH_QUERY_TERMS_H

#include <stddef.h>
#include <stdint.h>

#include "filters/value_terms.h"
#include "query/attr.h"
#include "util/err.h"

#define TERMS_TAG_SALT 0x6266682d61747472ull   /* "bfh-attr" */
#define TERMS_RANGE_SALT 0x6266682d72616e67ull /* "bfh-rang" */
#define TERMS_ZONE_SALT 0x6266682d7a6f6e65ull  /* "bfh-zone" */
/* Attributes a database may declare. */
#define TERMS_MAX_ATTRS 64

typedef struct terms terms_t;

/* A new terms_t over specs[0, n) (1 <= n <= TERMS_MAX_ATTRS, names distinct), which it takes
   over: on ST_OK *out owns the array (freed by terms_destroy, as attr_specs_free); on failure
   the caller still owns it. seed: the database's value seed, whose attribute seeds are made
   once here (another seed is served too, at one more small hash per attribute and value).
   ST_E_INVALID naming a repeated name, too many attributes or a composite attr_specs_check
   refuses; ST_E_UNSUPPORTED when a json:
   attribute is declared and libjson-c5 cannot be loaded; ST_E_NOMEM. */
int terms_create(attr_spec_t *specs, size_t n, uint64_t seed, terms_t **out, err_t *err);
/* NULL is allowed. */
void terms_destroy(terms_t *t);

size_t terms_count(const terms_t *t);
/* The i-th declared attribute (i < terms_count), owned by t. */
const attr_spec_t *terms_spec(const terms_t *t, size_t i);
/* The i-th attribute's extractor in its canonical form ("json:address.city", "csv:3:int"),
   owned by t. */
const char *terms_extractor_text(const terms_t *t, size_t i);
/* The index of the attribute called name[0, len), or -1. */
int terms_find(const terms_t *t, const char *name, size_t len);

/* The interface the engines and lsm/ hash through (borrowed from t, valid while t is). NULL
   for t NULL, which value_terms_hash reads as "the whole value". */
const value_terms_t *terms_value_terms(const terms_t *t);

/* The seed spec's terms are hashed under, for the database's value seed (above). */
uint64_t terms_attr_seed(const attr_spec_t *spec, uint64_t seed);
/* The item hash of term[0, len) of attribute attr (< terms_count): what a search probes the
   filters with for a leaf (attr, term) of its plan. */
uint64_t terms_hash_term(const terms_t *t, size_t attr, const void *term, size_t len,
                         uint64_t seed);

/* The zone id of attribute attr (< terms_count): the hash of its canonical declaration
   under TERMS_ZONE_SALT, which a table's map keeps its least and largest term code under
   (filters/value_terms.h); 0 when attr has no zone (declared without :range). */
uint64_t terms_zone_id(const terms_t *t, size_t attr);

/* The seed spec's range items are hashed under (above). */
uint64_t terms_range_seed(const attr_spec_t *spec, uint64_t seed);
/* The levels attribute attr (< terms_count) holds range items at, or NULL when it was not
   declared with :range (borrowed from t). */
const range_levels_t *terms_range_levels(const terms_t *t, size_t attr);
/* The item hash of range probe r of attribute attr (declared with :range): what a search
   probes the filters with for one interval of a range's cover. A level-0 probe of an :int
   attribute is its term's hash (terms_hash_term). */
uint64_t terms_hash_probe(const terms_t *t, size_t attr, const range_probe_t *r, uint64_t seed);

/* Calls fn(arg, hash) once per distinct item hash of val[0, len) under seed: one per
   distinct (attribute, term) of the value (a term repeated in a JSON array, or a hash that
   two items share, is given once). flags: VALUE_TERMS_COUNT counts the attributes the value
   gives no term for. Returns the number of hashes given, or ST_E_NOMEM before any call of fn
   (an extraction that ran out of memory: the value must not be indexed without its items). */
int terms_hash_value(const terms_t *t, const void *val, size_t len, uint64_t seed, unsigned flags,
                     value_hash_fn fn, void *arg);

/* Whether attribute attr (< terms_count) is a composite: 1 with *a and *b its members'
   indexes, else 0. */
int terms_pair(const terms_t *t, size_t attr, size_t *a, size_t *b);
/* The composites declared (0 for t NULL). */
size_t terms_pair_count(const terms_t *t);

/* The terms of val for attribute attr, as attr_extract gives them (in the shape of
   query/expr.h's expr_terms_fn, arg being the terms_t), and the lookup of an attribute by
   name (expr_lookup_fn's shape), for a predicate bound to t's attributes. */
int terms_extract(void *t, int attr, const void *val, size_t len, attr_term_fn fn, void *fn_arg);
int terms_lookup(void *t, const char *name, size_t len, int *is_int);

typedef struct terms_stats {
  uint64_t values;       /* values hashed with VALUE_TERMS_COUNT */
  uint64_t without_term; /* of those, the ones with no term for the attribute asked */
} terms_stats_t;
/* The counters of attribute attr (< terms_count) since t was made. */
void terms_stats(const terms_t *t, size_t attr, terms_stats_t *st);
/* Their sum over every attribute: (value, attribute) pairs without a term. */
uint64_t terms_without_term_total(const terms_t *t);

#endif

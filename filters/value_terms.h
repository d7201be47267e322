/* value_terms_t: the items a value is indexed under, the seam between the structures that
 * index values and the declared attributes (issue 47, doc/query.md "Terms").
 *
 * Every structure that indexes values at put or build time (the tables' leaf and block
 * filters, their value-to-block maps, the memtables' value index, the stock engines' log
 * segments and the Cuckoo Index's table hashes) adds, for each value, the hashes
 * value_terms_hash gives:
 *   - terms NULL (a database without declared attributes): one, bfh_value_hash(value, seed),
 *     exactly the hash it has always added;
 *   - otherwise one per distinct (attribute, term) the value holds, each tagged with its
 *     attribute (query/terms.h implements the interface; a declared `value` attribute's
 *     hash is the whole value's).
 * lsm/ and the engines see only this interface; they never include query/.
 */
#ifndef BFH_FILTERS_VALUE_TERMS_H
#define BFH_FILTERS_VALUE_TERMS_H

#include <stddef.h>
#include <stdint.h>

#include "filters/hash.h"

/* Called once per item hash of a value. */
typedef void (*value_hash_fn)(void *arg, uint64_t hash);

/* Called once per term of an attribute with a zone (one that stores range items: an
   attribute declared :range) with the attribute's zone id and the term's order-preserving
   code, the code its range items are made of (query/range_cover.h). A table's map keeps the
   least and largest code of each such attribute (index/value_block_map.h "zones"). */
typedef void (*value_zone_fn)(void *arg, uint64_t zone_id, uint64_t code);

/* The most attributes with a zone. */
#define VALUE_TERMS_MAX_ZONES 64

/* value_terms_hash's flags. */
enum {
  /* This extraction is the put's own (the memtables' value index): the attributes for which
     the value gives no term are counted in the implementation's statistics. Table builds,
     which see a value again, leave the flag off. */
  VALUE_TERMS_COUNT = 1u << 0
};

typedef struct value_terms value_terms_t;
struct value_terms {
  /* Calls fn(arg, hash) once per distinct item hash of val[0, len) under seed (the hash of
     the database's value filters); val may be NULL when len is 0. Returns the number of
     hashes given (0: the value gives no term of any attribute), or a negative status
     (ST_E_NOMEM) before any call of fn. Thread-safe. */
  int (*hash)(const value_terms_t *t, const void *val, size_t len, uint64_t seed, unsigned flags,
              value_hash_fn fn, void *arg);
  /* As hash, and zone(arg, id, code) for each term of an attribute with a zone, from the
     same one extraction. */
  int (*hash_zoned)(const value_terms_t *t, const void *val, size_t len, uint64_t seed,
                    unsigned flags, value_hash_fn fn, value_zone_fn zone, void *arg);
  /* The zone ids of the attributes with a zone, into ids (room for VALUE_TERMS_MAX_ZONES);
     returns how many. An id names the attribute's declaration (name and extractor), so that
     an attribute dropped and declared again otherwise never meets its old zones. */
  size_t (*zone_ids)(const value_terms_t *t, uint64_t *ids);
};

/* The item hashes of val under t (NULL: the whole value's one hash, as without attributes).
   Returns as value_terms_t.hash. */
static inline int value_terms_hash(const value_terms_t *t, const void *val, size_t len,
                                   uint64_t seed, unsigned flags, value_hash_fn fn, void *arg) {
  if (!t) {
    fn(arg, bfh_value_hash(val, len, seed));
    return 1;
  }
  return t->hash(t, val, len, seed, flags, fn, arg);
}

/* value_terms_hash, and zone for each term of an attribute with a zone (none for t NULL). */
static inline int value_terms_hash_zoned(const value_terms_t *t, const void *val, size_t len,
                                         uint64_t seed, unsigned flags, value_hash_fn fn,
                                         value_zone_fn zone, void *arg) {
  if (!t) return value_terms_hash(t, val, len, seed, flags, fn, arg);
  return t->hash_zoned(t, val, len, seed, flags, fn, zone, arg);
}

/* The zone ids of t's attributes with a zone (0 for t NULL). */
static inline size_t value_terms_zone_ids(const value_terms_t *t, uint64_t *ids) {
  return t ? t->zone_ids(t, ids) : 0;
}

#endif

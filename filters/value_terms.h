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

#endif

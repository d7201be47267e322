/* cuckoo_index_t: the Cuckoo Index (Kipf et al., VLDB 2020) over an LSM's live tables, the
 * rival of the Bloom designs (BFH_SEARCH_CUCKOO; doc/search.md "The Cuckoo Index").
 *
 * One bucketized cuckoo table for the whole database: 4 slots per bucket, each slot a 16-bit
 * fingerprint and a 32-bit reference to the set of tables holding the values with that
 * fingerprint in that bucket pair. A reference with its top bit set names one table inline
 * (the common case for unique values); else it indexes a sorted array of table ids. An item's
 * key is the top 32 bits of its hash: a table's items are those filters/value_terms.h gives
 * for its values (without declared attributes one per value, bfh_value_hash; with them one
 * per (attribute, term), query/terms.h), so one index answers every attribute, and a planner
 * looks up one (attribute, term) by cuckoo_index_lookup(ci, cuckoo_index_key(
 * terms_hash_term(...)), ...) under cuckoo_index_seed (tests/api/cuckoo_attrs_test.c checks
 * that it names every table holding the term). Fingerprint = the key's
 * low 16 bits (0 taken as 1), first bucket = a mix of the key reduced to the bucket count,
 * second bucket = (H(fingerprint) - first) mod buckets (an involution for any bucket count,
 * so an entry moves between its two buckets knowing only its fingerprint).
 *
 * Entries are unique by (fingerprint, bucket pair): values that share both share an entry,
 * and its table set is the union (a false positive table, never a false negative).
 *
 * Tables come and go whole: cuckoo_index_add_table takes the keys of a table's values,
 * cuckoo_index_remove_table takes the table out of the set of every one of its keys (and
 * frees entries left with no table). To do so the index keeps each table's distinct keys
 * (4 bytes per distinct value per table), counted in its bytes. A failed insertion (a kick
 * chain longer than CUCKOO_MAX_KICKS) or a load above 90% grows the bucket count by 1.25x and
 * rebuilds the table from those keys. Its owner brings it to the live tables at each CUCKOO
 * search and at each bfh_stats (cuckoo_index_retain): the pieces of a table that left the
 * live version go there, and are never counted as held.
 *
 * Nothing is persisted: the index is built again from the tables' values after an open.
 *
 * Not thread-safe: its owner (search/search_plan.c) holds cuckoo_index_lock.
 */
#ifndef BFH_LSM_HOOKS_CUCKOO_INDEX_H
#define BFH_LSM_HOOKS_CUCKOO_INDEX_H

#include <stddef.h>
#include <stdint.h>

#include "util/err.h"
#include "util/vec.h"

#define CUCKOO_SLOTS 4
#define CUCKOO_MAX_KICKS 500

typedef struct cuckoo_index cuckoo_index_t;

/* seed: the seed of the values' hashes (bfh_value_hash) the keys come from. Returns a new
   empty index, or NULL on no memory. Client calls cuckoo_index_destroy(). */
cuckoo_index_t *cuckoo_index_create(uint64_t seed);
void cuckoo_index_destroy(cuckoo_index_t *ci); /* NULL allowed */
uint64_t cuckoo_index_seed(const cuckoo_index_t *ci);

/* A digest of the table list the owner last brought the index to (0 at first): lets a search
   over the same list skip the comparison. Only a hint: a table the index does not hold is
   read by CUCKOO anyway. */
uint64_t cuckoo_index_synced(const cuckoo_index_t *ci);
void cuckoo_index_set_synced(cuckoo_index_t *ci, uint64_t digest);

void cuckoo_index_lock(cuckoo_index_t *ci);
void cuckoo_index_unlock(cuckoo_index_t *ci);

/* The key of a value from its hash. */
static inline uint32_t cuckoo_index_key(uint64_t hash) {
  return (uint32_t)(hash >> 32);
}

/* Adds table `number` holding the values whose keys are keys[0, n) (any order, duplicates
   allowed; the array is sorted in place). BFH_OK; BFH_E_INVALID if the table is already
   in; BFH_E_NOMEM (the index is then as before). */
int cuckoo_index_add_table(cuckoo_index_t *ci, uint64_t number, uint32_t *keys, size_t n,
                           err_t *err);
/* Grows the table (one rebuild) to hold `entries` entries, if it holds fewer: for adding many
   tables at once without a growth every 25%. BFH_OK or BFH_E_NOMEM. */
int cuckoo_index_reserve(cuckoo_index_t *ci, uint64_t entries);
/* Shrinks the table (one rebuild) to a load of 0.8 if it is below 0.5 (after a reserve that
   counted shared values once per table). BFH_OK or BFH_E_NOMEM. */
int cuckoo_index_fit(cuckoo_index_t *ci);
/* Removes table `number`; BFH_NOT_FOUND if it is not in. */
int cuckoo_index_remove_table(cuckoo_index_t *ci, uint64_t number);
/* Removes every table not among live[0, n) (sorted ascending): the pieces of tables that left
   the live version. Returns how many went. */
size_t cuckoo_index_retain(cuckoo_index_t *ci, const uint64_t *live, size_t n);
int cuckoo_index_contains(const cuckoo_index_t *ci, uint64_t number);
/* Appends to out the numbers of the tables that may hold an item with key `key` (every table
   that does, and false positives from fingerprint collisions); *slots_checked (may be NULL)
   gets the slots compared. BFH_OK or BFH_E_NOMEM. */
int cuckoo_index_lookup(const cuckoo_index_t *ci, uint32_t key, u64vec_t *out,
                        uint64_t *slots_checked);
/* The numbers of the tables in the index, appended to out (any order). */
int cuckoo_index_tables(const cuckoo_index_t *ci, u64vec_t *out);

typedef struct cuckoo_index_stats {
  uint64_t tables;      /* tables in the index */
  uint64_t entries;     /* occupied slots (distinct fingerprint, bucket pair) */
  uint64_t buckets;     /* buckets of CUCKOO_SLOTS slots */
  uint64_t sets;        /* table sets out of line (values in more than one table) */
  uint64_t table_bytes; /* the slots: fingerprints and references */
  uint64_t set_bytes;   /* the out-of-line table sets */
  uint64_t key_bytes;   /* each table's keys, kept to remove it */
  uint64_t bytes;       /* all of it, with the table records */
  uint64_t rebuilds;    /* growths and failed insertions rebuilt */
  uint64_t keys_added;  /* keys given to add_table (before duplicates were dropped) */
} cuckoo_index_stats_t;
void cuckoo_index_get_stats(const cuckoo_index_t *ci, cuckoo_index_stats_t *st);

/* Checks every entry: in one of its two buckets, its set non-empty and naming live tables;
   every table's keys found with it. BFH_OK or BFH_E_CORRUPT with the first violation. */
int cuckoo_index_validate(const cuckoo_index_t *ci, err_t *err);

#endif

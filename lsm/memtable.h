/* memtable_t: the in-memory write buffer, a skiplist over internal keys (LevelDB's shape:
 * max height 12, branching 4) whose nodes and payloads live in an arena.
 *
 * Optionally (chosen at creation) a value index: every value entry (not deletions, which
 * never match a value search) is also chained in a fixed hash table under each of its item
 * hashes (filters/value_terms.h: the value's hash, or one per (attribute, term) of declared
 * attributes), so memtable_scan_value finds the entries holding a value, and
 * memtable_scan_hash those holding an item, without walking the skiplist.
 *
 * Threads: ONE writer at a time (memtable_add, externally serialized by the db) and any
 * number of concurrent readers (get, iterators, scan) without locks: next pointers are
 * published with release stores and read with acquire loads, so a reader sees either the
 * old list or the list with the new node fully initialized.
 * Lifetime: reference counted; memtable_create() returns one reference; memtable_ref() /
 * memtable_unref() (frees at zero). Iterators hold their own reference.
 * Pointers returned by get (lookup.val) and by iterators point into the arena and stay
 * valid while the caller holds a reference.
 */
#ifndef BFH_LSM_MEMTABLE_H
#define BFH_LSM_MEMTABLE_H

#include <stddef.h>
#include <stdint.h>

#include "filters/value_terms.h"
#include "lsm/db.h"
#include "lsm/internal_key.h"
#include "lsm/iterator.h"

typedef struct memtable memtable_t;

/* An empty memtable without value index, with one reference; NULL on no memory. */
memtable_t *memtable_create(void);
/* An empty memtable with a value index of value_buckets chains (rounded up to a power of
   two; fixed for the memtable's life: readers hold no lock, so it is never rehashed; a
   memtable filled past what it was sized for gets longer chains, still correct). 0: no
   index, as memtable_create(). One reference; NULL on no memory. Its values are hashed
   with BFH_DEFAULT_SEED. */
memtable_t *memtable_create_indexed(size_t value_buckets);
/* memtable_create_indexed whose value index hashes values with bfh_value_hash(v, seed):
   the seed of the database's value filters, so that a search hashes its value once. */
memtable_t *memtable_create_indexed_seeded(size_t value_buckets, uint64_t seed);
/* memtable_create_indexed_seeded whose value index holds each value under the item hashes
   terms gives (borrowed, must outlive the memtable; NULL: the whole value's hash, as
   memtable_create_indexed_seeded). A put is the items' one extraction: it passes
   VALUE_TERMS_COUNT. */
memtable_t *memtable_create_indexed_terms(size_t value_buckets, uint64_t seed,
                                          const value_terms_t *terms);
void memtable_ref(memtable_t *m);
/* Drops a reference; frees at zero. NULL allowed. */
void memtable_unref(memtable_t *m);

/* Inserts (key, seq, type) -> val (val ignored for deletions; may be NULL when vlen is 0).
   REQUIRES: single writer; no entry with the same user key and seq exists; seq <=
   LSM_MAX_SEQ. Returns ST_OK or ST_E_NOMEM (also when the value's items could not be
   extracted: nothing is inserted then). key and val are copied. */
int memtable_add(memtable_t *m, uint64_t seq, int type, const void *key, size_t klen,
                 const void *val, size_t vlen);

/* Newest entry for user key with seq <= max_seq (LSM_MAX_SEQ: the newest of all).
   Fills *out and returns out->state: LSM_LOOKUP_VALUE (out->val borrowed),
   LSM_LOOKUP_DELETED, or LSM_LOOKUP_ABSENT. Lock-free, allocation-free. */
int memtable_get(const memtable_t *m, const void *key, size_t klen, uint64_t max_seq,
                 lsm_lookup_t *out);

/* Bytes in use: the arena plus the value index's bucket array; thread-safe. */
size_t memtable_memory_usage(const memtable_t *m);
/* The value index's part of memtable_memory_usage (0 without index): its bucket array,
   allocated whole at creation, and the links of the values added, one per item, in the
   arena beside their nodes; thread-safe. */
size_t memtable_value_index_bytes(const memtable_t *m);
/* Bytes the entries take in the arena (arena_bytes_used), the value index's links left out:
   what a memtable size limit is measured against, so that a memtable with the index holds
   as many entries as one without and the tables flushed from both are alike. REQUIRES: the
   writer's thread. */
size_t memtable_entry_bytes(const memtable_t *m);
/* Entries added so far; thread-safe. */
uint64_t memtable_entries(const memtable_t *m);

/* An iterator over all entries in internal-key order (key = internal key, value = value;
   deletions have an empty value). Holds a reference on m. NULL on no memory. Client calls
   iterator_destroy(). */
iterator_t *memtable_iterator_create(memtable_t *m);

/* Visits every entry in internal-key order (key = user key); fn returning nonzero stops.
   st (may be NULL) gets entries += visited, bytes_read += key + value bytes. ST_OK. */
int memtable_scan(const memtable_t *m, lsm_visit_fn fn, void *arg, lsm_scan_stats_t *st);

/* Visits the value entries (type LSM_TYPE_VALUE) whose value is exactly val (vlen bytes; val
   may be NULL when vlen is 0), newest insert first on an indexed memtable, in internal-key
   order otherwise; fn returning nonzero stops. These are the entries memtable_scan visits
   that hold val. Lock-free, allocation-free. st (may be NULL) gets entries += chain nodes
   examined, bytes_read += key + value bytes of the entries visited; on a memtable without
   index it falls back to a full scan and counts as memtable_scan does. ST_OK. */
int memtable_scan_value(const memtable_t *m, const void *val, size_t vlen, lsm_visit_fn fn,
                        void *arg, lsm_scan_stats_t *st);
/* memtable_scan_value with the value's hash given: hash == bfh_value_hash(val, vlen, seed)
   under the memtable's seed (REQUIRES), so that the memtable hashes nothing. With declared
   attributes the whole value is an item only under a `value` attribute: without one a
   memtable indexed by terms finds no value by it. */
int memtable_scan_value_hashed(const memtable_t *m, const void *val, size_t vlen, uint64_t hash,
                               lsm_visit_fn fn, void *arg, lsm_scan_stats_t *st);

/* Visits the value entries indexed under item hash `hash` (query/terms.h's
   terms_hash_term for an (attribute, term); the whole value's hash without attributes),
   newest insert first: a superset of those holding the item (32 more bits of the hash are
   compared; the caller validates). Each entry once per item it holds under that hash. fn
   returning nonzero stops. st as memtable_scan_value. ST_OK; ST_E_INVALID on a memtable
   without value index. Lock-free, allocation-free. */
int memtable_scan_hash(const memtable_t *m, uint64_t hash, lsm_visit_fn fn, void *arg,
                       lsm_scan_stats_t *st);

#endif

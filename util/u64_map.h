/* u64_map_t: an open-addressing hash map from a 64-bit key to a 64-bit value (a number, a slot,
 * or a pointer through uintptr_t): the one map of the library, behind the hierarchy's leaf ids
 * (hierarchy/, the bit-sliced index), the index's tables (index/block_index.c, the value
 * index's members) and the own engine's table cache (lsm/table_cache.c).
 *
 * Layout: one array of (key, value) slots, cap a power of two, at most half full. Key 0 marks
 * a free slot; the key 0 itself, when present, is kept beside the array (has_zero). A lookup
 * hashes the key (the 64-bit murmur3 finalizer), then probes linearly; it reads one slot, or
 * a few adjacent ones, of one array: one cache line in the common case. Deletion shifts the
 * rest of the run back (no tombstones), so a long-lived map with many removals probes as
 * short as a fresh one. The table doubles when an insert would make it more than half full.
 *
 * Caller-owned struct: u64_map_init() / u64_map_release(). Not thread-safe: the owner locks.
 * Insertions and removals invalidate iteration positions; lookups do not.
 */
#ifndef BFH_UTIL_U64_MAP_H
#define BFH_UTIL_U64_MAP_H

#include <stddef.h>
#include <stdint.h>

typedef struct u64_map_slot {
  uint64_t key; /* 0: free */
  uint64_t value;
} u64_map_slot_t;

typedef struct u64_map {
  u64_map_slot_t *slots; /* cap slots, owned; NULL while cap is 0 */
  size_t cap;            /* 0 or a power of two */
  size_t n;              /* keys held, the key 0 included */
  int has_zero;          /* the key 0 is held, with value zero_value */
  uint64_t zero_value;
} u64_map_t;

void u64_map_init(u64_map_t *m);
/* Frees the slots (not what the values point to); m may be NULL. m may be initialized again. */
void u64_map_release(u64_map_t *m);

/* The slot of a key, for a table of cap slots (mask = cap - 1). */
static inline size_t u64_map_home(uint64_t key, size_t mask) {
  uint64_t x = key;
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdull;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ull;
  x ^= x >> 33;
  return (size_t)x & mask;
}

/* 1 and *value set (value may be NULL) if key is present, else 0. Never allocates. */
static inline int u64_map_get(const u64_map_t *m, uint64_t key, uint64_t *value) {
  if (key == 0) {
    if (m->has_zero && value) *value = m->zero_value;
    return m->has_zero;
  }
  if (m->cap == 0) return 0;
  size_t mask = m->cap - 1;
  for (size_t i = u64_map_home(key, mask);; i = (i + 1) & mask) {
    const u64_map_slot_t *s = &m->slots[i];
    if (s->key == key) {
      if (value) *value = s->value;
      return 1;
    }
    if (s->key == 0) return 0;
  }
}

/* Makes room for n keys in total, so that the next inserts up to n cannot fail.
   ST_OK or ST_E_NOMEM (m unchanged). */
int u64_map_reserve(u64_map_t *m, size_t n);
/* Inserts key or replaces its value. ST_OK or ST_E_NOMEM (m unchanged). Replacing, or
   inserting within a reserve, never fails. */
int u64_map_put(u64_map_t *m, uint64_t key, uint64_t value);
/* Removes key; 1 if it was present (its value into *value; value may be NULL), 0 if not.
   Never allocates. */
int u64_map_del(u64_map_t *m, uint64_t key, uint64_t *value);

/* Iteration in no particular order: start with *pos = 0; each call sets *key and *value
   (either may be NULL) of the next entry and returns 1, or returns 0 at the end.
     size_t pos = 0; uint64_t k, v;
     while (u64_map_next(m, &pos, &k, &v)) ...
   The map must not change during the walk. */
int u64_map_next(const u64_map_t *m, size_t *pos, uint64_t *key, uint64_t *value);

static inline size_t u64_map_count(const u64_map_t *m) {
  return m->n;
}
/* Bytes the map holds beside its struct. */
static inline size_t u64_map_size_in_bytes(const u64_map_t *m) {
  return m->cap * sizeof(u64_map_slot_t);
}

#endif

/* id_map_t: an open-addressing hash map from a 64-bit leaf id to a 64-bit value (a slot
 * number or a pointer), used by the hierarchy and the bit-sliced index to find a leaf by id.
 *
 * Linear probing with backward-shift deletion (no tombstones); the table doubles when it
 * is half full. Caller-owned struct: id_map_init() / id_map_release().
 */
#ifndef BFH_HIERARCHY_ID_MAP_H
#define BFH_HIERARCHY_ID_MAP_H

#include <stddef.h>
#include <stdint.h>

typedef struct id_map_entry {
  uint64_t id;
  uint64_t value;
} id_map_entry_t;

typedef struct id_map {
  id_map_entry_t *slots; /* cap entries, owned */
  uint8_t *used;         /* cap flags, owned */
  size_t cap;            /* 0 or a power of two */
  size_t n;
} id_map_t;

void id_map_init(id_map_t *m);
void id_map_release(id_map_t *m); /* frees the arrays; m may be NULL */

/* 1 and *value set if id is present, else 0 (value may be NULL). */
int id_map_get(const id_map_t *m, uint64_t id, uint64_t *value);
/* Makes room for n entries in total, so that the next puts up to n cannot fail.
   ST_OK or ST_E_NOMEM (m unchanged). */
int id_map_reserve(id_map_t *m, size_t n);
/* Inserts or overwrites. ST_OK or ST_E_NOMEM (m unchanged). */
int id_map_put(id_map_t *m, uint64_t id, uint64_t value);
/* Removes id; 1 if it was present, 0 if not. Never allocates. */
int id_map_del(id_map_t *m, uint64_t id);

static inline size_t id_map_count(const id_map_t *m) {
  return m->n;
}
static inline size_t id_map_size_in_bytes(const id_map_t *m) {
  return m->cap * (sizeof(id_map_entry_t) + 1);
}

#endif

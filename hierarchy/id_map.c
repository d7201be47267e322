#include "hierarchy/id_map.h"

#include <stdlib.h>

#include "util/status.h"

static size_t slot_of(uint64_t id, size_t cap) {
  uint64_t x = id;
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdull;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ull;
  x ^= x >> 33;
  return (size_t)(x & (cap - 1));
}

void id_map_init(id_map_t *m) {
  m->slots = NULL;
  m->used = NULL;
  m->cap = 0;
  m->n = 0;
}

void id_map_release(id_map_t *m) {
  if (!m) return;
  free(m->slots);
  free(m->used);
  id_map_init(m);
}

int id_map_get(const id_map_t *m, uint64_t id, uint64_t *value) {
  if (m->cap == 0) return 0;
  for (size_t i = slot_of(id, m->cap);; i = (i + 1) & (m->cap - 1)) {
    if (!m->used[i]) return 0;
    if (m->slots[i].id == id) {
      if (value) *value = m->slots[i].value;
      return 1;
    }
  }
}

/* Inserts without growing. REQUIRES: a free slot exists. */
static void put_raw(id_map_entry_t *slots, uint8_t *used, size_t cap, uint64_t id, uint64_t v,
                    size_t *n) {
  size_t i = slot_of(id, cap);
  while (used[i] && slots[i].id != id) i = (i + 1) & (cap - 1);
  if (!used[i]) (*n)++;
  used[i] = 1;
  slots[i].id = id;
  slots[i].value = v;
}

int id_map_reserve(id_map_t *m, size_t n) {
  if (n * 2 <= m->cap) return ST_OK;
  size_t cap = m->cap ? m->cap : 16;
  while (cap < n * 2) cap *= 2;
  id_map_entry_t *slots = malloc(cap * sizeof *slots);
  uint8_t *used = calloc(cap, 1);
  if (!slots || !used) {
    free(slots);
    free(used);
    return ST_E_NOMEM;
  }
  size_t cnt = 0;
  for (size_t i = 0; i < m->cap; i++)
    if (m->used[i]) put_raw(slots, used, cap, m->slots[i].id, m->slots[i].value, &cnt);
  free(m->slots);
  free(m->used);
  m->slots = slots;
  m->used = used;
  m->cap = cap;
  return ST_OK;
}

int id_map_put(id_map_t *m, uint64_t id, uint64_t value) {
  int rc = id_map_reserve(m, m->n + 1);
  if (rc != ST_OK) return rc;
  put_raw(m->slots, m->used, m->cap, id, value, &m->n);
  return ST_OK;
}

int id_map_del(id_map_t *m, uint64_t id) {
  if (m->cap == 0) return 0;
  size_t mask = m->cap - 1;
  size_t i = slot_of(id, m->cap);
  while (m->used[i] && m->slots[i].id != id) i = (i + 1) & mask;
  if (!m->used[i]) return 0;
  /* Backward-shift: move later entries of the run into the hole when their home slot
     does not lie cyclically in (hole, j]. */
  size_t hole = i;
  for (size_t j = (i + 1) & mask; m->used[j]; j = (j + 1) & mask) {
    size_t home = slot_of(m->slots[j].id, m->cap);
    int in_range = hole <= j ? (home > hole && home <= j) : (home > hole || home <= j);
    if (!in_range) {
      m->slots[hole] = m->slots[j];
      hole = j;
    }
  }
  m->used[hole] = 0;
  m->n--;
  return 1;
}

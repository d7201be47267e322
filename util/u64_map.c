/* u64_map: see util/u64_map.h. */
#include "util/u64_map.h"

#include <stdlib.h>

#include "util/status.h"

void u64_map_init(u64_map_t *m) {
  m->slots = NULL;
  m->cap = 0;
  m->n = 0;
  m->has_zero = 0;
  m->zero_value = 0;
}

void u64_map_release(u64_map_t *m) {
  if (!m) return;
  free(m->slots);
  u64_map_init(m);
}

/* Puts a key that is not 0 into slots (cap of them). REQUIRES: a free slot. 1 if the key was
   new, 0 if its value was replaced. */
static int put_raw(u64_map_slot_t *slots, size_t cap, uint64_t key, uint64_t value) {
  size_t mask = cap - 1, i = u64_map_home(key, mask);
  while (slots[i].key != 0 && slots[i].key != key) i = (i + 1) & mask;
  int fresh = slots[i].key == 0;
  slots[i].key = key;
  slots[i].value = value;
  return fresh;
}

int u64_map_reserve(u64_map_t *m, size_t n) {
  /* Only the keys other than 0 take a slot; at most half the slots are used. */
  if (n <= m->cap / 2) return ST_OK;
  if (n > SIZE_MAX / 2 / sizeof(u64_map_slot_t)) return ST_E_NOMEM;
  size_t cap = m->cap ? m->cap : 16;
  while (cap / 2 < n) cap *= 2;
  u64_map_slot_t *slots = calloc(cap, sizeof *slots);
  if (!slots) return ST_E_NOMEM;
  for (size_t i = 0; i < m->cap; i++)
    if (m->slots[i].key != 0) put_raw(slots, cap, m->slots[i].key, m->slots[i].value);
  free(m->slots);
  m->slots = slots;
  m->cap = cap;
  return ST_OK;
}

int u64_map_put(u64_map_t *m, uint64_t key, uint64_t value) {
  if (key == 0) {
    m->n += !m->has_zero;
    m->has_zero = 1;
    m->zero_value = value;
    return ST_OK;
  }
  if (m->n + 1 > m->cap / 2) { /* may be a replacement: grow only if the key is new */
    if (u64_map_get(m, key, NULL)) {
      put_raw(m->slots, m->cap, key, value);
      return ST_OK;
    }
    int rc = u64_map_reserve(m, m->n + 1);
    if (rc != ST_OK) return rc;
  }
  m->n += (size_t)put_raw(m->slots, m->cap, key, value);
  return ST_OK;
}

int u64_map_del(u64_map_t *m, uint64_t key, uint64_t *value) {
  if (key == 0) {
    if (!m->has_zero) return 0;
    if (value) *value = m->zero_value;
    m->has_zero = 0;
    m->n--;
    return 1;
  }
  if (m->cap == 0) return 0;
  size_t mask = m->cap - 1, i = u64_map_home(key, mask);
  while (m->slots[i].key != key) {
    if (m->slots[i].key == 0) return 0;
    i = (i + 1) & mask;
  }
  if (value) *value = m->slots[i].value;
  /* Backward shift: an entry later in the run moves into the hole unless its home lies
     cyclically in (hole, j], where a probe for it would stop before reaching the hole. */
  size_t hole = i;
  for (size_t j = (i + 1) & mask; m->slots[j].key != 0; j = (j + 1) & mask) {
    size_t home = u64_map_home(m->slots[j].key, mask);
    int stays = hole <= j ? (hole < home && home <= j) : (hole < home || home <= j);
    if (!stays) {
      m->slots[hole] = m->slots[j];
      hole = j;
    }
  }
  m->slots[hole].key = 0;
  m->n--;
  return 1;
}

int u64_map_next(const u64_map_t *m, size_t *pos, uint64_t *key, uint64_t *value) {
  /* *pos 0: the key 0; *pos i > 0: slot i - 1 on. */
  if (*pos == 0) {
    *pos = 1;
    if (m->has_zero) {
      if (key) *key = 0;
      if (value) *value = m->zero_value;
      return 1;
    }
  }
  for (size_t i = *pos - 1; i < m->cap; i++) {
    if (m->slots[i].key == 0) continue;
    if (key) *key = m->slots[i].key;
    if (value) *value = m->slots[i].value;
    *pos = i + 2;
    return 1;
  }
  *pos = m->cap + 1;
  return 0;
}

/* Bit-sliced index (Flat-Bloofi), see sliced.h.
 *
 * Memory layout: the row of bit position j is row_bytes contiguous bytes at rows + j *
 * row_bytes; bit s of it (byte s / 8, bit s % 8) is slot s. A query reads its k rows 64 slots
 * at a time (little-endian loads of 8 bytes, fewer in a row's last chunk).
 * row_bytes = capacity / 8, and the capacity is a multiple of 8 slots that grows by an
 * eighth (at least 8 slots) when full, so that the rows hold at most 12.5% + 7 slots more
 * than the high-water slot needs (a 64-slot step would cost 64 leaves' worth of rows for one
 * leaf: 16 MB at m = 2,000,000); growing re-lays every row.
 * A freed slot has an all-zero column (sliced_remove clears it), so a query needs no
 * liveness mask: it ANDs k rows up to the high-water slot and maps set bits to ids. A
 * retired slot (sliced_retire) keeps its column until sliced_scrub clears it: while any is,
 * a query masks them out.
 */
#include "hierarchy/sliced.h"

#include <stdlib.h>
#include <string.h>

#include "filters/bits.h"
#include "util/coding.h"
#include "util/u64_map.h"

struct sliced {
  uint64_t m;
  size_t nwords;       /* words of one filter */
  size_t cap;          /* slots, a multiple of 8 */
  size_t row_bytes;    /* cap / 8 */
  size_t hi;           /* slots [0, hi) have been used; the rest are all zero */
  uint8_t *rows;       /* m * row_bytes bytes, owned */
  uint64_t *slot_id;   /* cap entries, owned: the id in each live slot */
  u64vec_t free_slots; /* freed slots below hi, reused last-in first-out */
  u64_map_t map;       /* id -> slot */
  uint64_t relays;     /* times the rows were re-laid for a larger capacity */
  /* Slots retired and not scrubbed yet: a bit per slot, (cap + 63) / 64 words (NULL until
     the first retire), and their count. Neither live nor free. */
  uint64_t *retired;
  size_t nretired;
  size_t filling; /* the slot of an add in pieces (sliced_add_begin), or NO_SLOT */
};

#define NO_SLOT SIZE_MAX

sliced_t *sliced_create(uint64_t m) {
  if (m == 0 || m > ((uint64_t)1 << 40)) return NULL;
  sliced_t *s = calloc(1, sizeof *s);
  if (!s) return NULL;
  s->m = m;
  s->nwords = bits_words(m);
  s->filling = NO_SLOT;
  u64vec_init(&s->free_slots);
  u64_map_init(&s->map);
  return s;
}

void sliced_destroy(sliced_t *s) {
  if (!s) return;
  free(s->rows);
  free(s->slot_id);
  free(s->retired);
  u64vec_release(&s->free_slots);
  u64_map_release(&s->map);
  free(s);
}

/* Slots 64c .. 64c+63 of a row (slots past the capacity read as zero). */
static inline uint64_t chunk_load(const sliced_t *s, const uint8_t *row, size_t c) {
  size_t at = c * 8, n = s->row_bytes - at < 8 ? s->row_bytes - at : 8;
  if (n == 8) return decode_fixed64(row + at);
  uint64_t x = 0;
  for (size_t i = 0; i < n; i++) x |= (uint64_t)row[at + i] << (8 * i);
  return x;
}

/* ORs x into slots 64c .. 64c+63 of a row (x has no bits past the capacity). */
static inline void chunk_or(const sliced_t *s, uint8_t *row, size_t c, uint64_t x) {
  size_t at = c * 8, n = s->row_bytes - at < 8 ? s->row_bytes - at : 8;
  for (size_t i = 0; i < n; i++) row[at + i] |= (uint8_t)(x >> (8 * i));
}

/* Re-lays the rows for at least `slots` slots (rounded up to a multiple of 8), in place:
   realloc keeps the pages the rows have (a fresh page costs a fault at its first touch, in
   a virtual machine often more than copying it), and the rows move from the last one on,
   each to a place at or past its own, so that none is overwritten before it moved. */
static int grow_to(sliced_t *s, size_t slots) {
  if (slots <= s->cap) return ST_OK;
  size_t cap = (slots + 7) / 8 * 8;
  size_t rb = cap / 8, used = (s->hi + 7) / 8;
  uint64_t *ids = realloc(s->slot_id, cap * sizeof *ids);
  if (!ids) return ST_E_NOMEM;
  s->slot_id = ids;
  if (s->retired) {
    size_t was = (s->cap + 63) / 64, now = (cap + 63) / 64;
    uint64_t *r = realloc(s->retired, now * sizeof *r);
    if (!r) return ST_E_NOMEM;
    memset(r + was, 0, (now - was) * sizeof *r);
    s->retired = r;
  }
  uint8_t *rows = realloc(s->rows, (size_t)s->m * rb);
  if (!rows) return ST_E_NOMEM;
  for (uint64_t j = s->m; j-- > 0;) {
    memmove(rows + j * rb, rows + j * s->row_bytes, used);
    memset(rows + j * rb + used, 0, rb - used);
  }
  s->rows = rows;
  s->cap = cap;
  s->row_bytes = rb;
  s->relays++;
  return ST_OK;
}

int sliced_reserve(sliced_t *s, size_t slots) {
  return grow_to(s, slots);
}

/* The capacity that makes room for `extra` more leaves: the present one if it does, else
   grown by an eighth (at least 8 slots), or exactly (rounded up to 8) if exact. */
static size_t capacity_for(const sliced_t *s, size_t extra, int exact) {
  size_t reuse = s->free_slots.n < extra ? s->free_slots.n : extra;
  size_t need = s->hi + (extra - reuse);
  if (need <= s->cap) return s->cap;
  /* exact: a 32nd at least, so that a group that grows a table at a time (a live database's
     flushes and compactions) re-lays its rows O(32 log n) times, not n / 8 times, for at
     most a 32nd more memory; below 256 slots that is the 8-slot rounding alone. */
  size_t step = exact ? s->cap / 32 : s->cap / 8 < 8 ? 8 : s->cap / 8;
  size_t cap = need > s->cap + step ? need : s->cap + step;
  return (cap + 7) / 8 * 8;
}

static int make_room(sliced_t *s, size_t extra, int exact) {
  size_t cap = capacity_for(s, extra, exact);
  return cap == s->cap ? ST_OK : grow_to(s, cap);
}

size_t sliced_room_capacity(const sliced_t *s, size_t extra) {
  return capacity_for(s, extra, 1);
}

int sliced_make_room(sliced_t *s, size_t extra) {
  return make_room(s, extra, 0);
}

int sliced_make_room_exact(sliced_t *s, size_t extra) {
  return make_room(s, extra, 1);
}

/* The bits of x at the set bits of mask (live of them), packed to the low end in order
   (what BMI2's pext does). A word costs its holes or its live bits, whichever are fewer. */
static inline uint64_t compress64(uint64_t x, uint64_t mask, unsigned live) {
  if (live == 64) return x;
  x &= mask;
  if (live <= 32) {
    uint64_t out = 0;
    for (unsigned i = 0; mask; mask &= mask - 1, i++)
      out |= ((x >> __builtin_ctzll(mask)) & 1) << i;
    return out;
  }
  /* Highest hole first, so that the lower ones stay where they are. */
  for (uint64_t holes = ~mask; holes;) {
    unsigned p = 63 - (unsigned)__builtin_clzll(holes);
    uint64_t low = ((uint64_t)1 << p) - 1;
    x = (x & low) | ((x >> 1) & ~low);
    holes &= low;
  }
  return x;
}

/* Writes x to slots 64c .. 64c+63 of a row of rb bytes (bytes past rb are dropped). */
static inline void chunk_store(uint8_t *row, size_t rb, size_t c, uint64_t x) {
  size_t at = c * 8, n = rb - at < 8 ? rb - at : 8;
  for (size_t i = 0; i < n; i++) row[at + i] = (uint8_t)(x >> (8 * i));
}

/* Packs the bits of a row at the live slots to the front of dst, a row of rb bytes, 64 slots
   at a time: live[c] is the mask of chunk c's live slots (nw chunks), count[c] its bits.
   Every byte of dst is written, the bits past the live ones zero. dst may be src or lie
   before it: chunk c is read before anything past it is written. */
static void pack_row(const sliced_t *s, const uint8_t *src, const uint64_t *live,
                     const uint8_t *count, size_t nw, uint8_t *dst, size_t rb) {
  uint64_t acc = 0;
  unsigned fill = 0; /* bits in acc */
  size_t out = 0;
  for (size_t c = 0; c < nw; c++) {
    unsigned k = count[c];
    if (k == 0) continue;
    uint64_t x = compress64(chunk_load(s, src, c), live[c], k);
    acc |= x << fill;
    if (fill + k < 64) {
      fill += k;
      continue;
    }
    chunk_store(dst, rb, out++, acc);
    acc = fill ? x >> (64 - fill) : 0;
    fill = fill + k - 64;
  }
  if (fill) chunk_store(dst, rb, out, acc);
}

/* The live slots below hi: *mask a bit per slot, *count how many in each mask word (both
   malloc'd, NULL on no memory: ST_E_NOMEM, the caller frees what it got). */
static int live_mask(const sliced_t *s, uint64_t **mask, uint8_t **count) {
  size_t nw = (s->hi + 63) / 64;
  *mask = calloc(nw ? nw : 1, sizeof **mask);
  *count = calloc(nw ? nw : 1, 1);
  if (!*mask || !*count) return ST_E_NOMEM;
  for (size_t j = 0; j < s->hi; j++) {
    uint64_t v;
    if (u64_map_get(&s->map, s->slot_id[j], &v) && v == j) {
      (*mask)[j / 64] |= (uint64_t)1 << (j % 64);
      (*count)[j / 64]++;
    }
  }
  return ST_OK;
}

/* Re-lays the rows for exactly the live slots (rounded up to 8), packed to the front in slot
   order: a slot's new number is its rank among the live ones. In place, from the first row
   on: a row's packed bytes land at or before its own, and within a row pack_row writes a
   chunk only after reading it. */
int sliced_shrink(sliced_t *s) {
  size_t live = u64_map_count(&s->map), cap = (live + 7) / 8 * 8;
  if (cap >= s->cap) return ST_OK;
  size_t rb = cap / 8, nw = (s->hi + 63) / 64, n = live;
  uint64_t *mask;
  uint8_t *count;
  if (live_mask(s, &mask, &count) != ST_OK || u64_map_reserve(&s->map, live + 1) != ST_OK) {
    free(mask);
    free(count);
    return ST_E_NOMEM;
  }
  /* Every byte of a new row is written: the packed bits fill ceil(n / 8) = rb bytes. */
  for (uint64_t j = 0; j < s->m && rb > 0; j++) {
    if (n == s->hi) /* no holes: the row's first bytes as they are */
      memmove(s->rows + j * rb, s->rows + j * s->row_bytes, rb);
    else
      pack_row(s, s->rows + j * s->row_bytes, mask, count, nw, s->rows + j * rb, rb);
  }
  for (size_t j = 0, i = 0; j < s->hi; j++) {
    if (!(mask[j / 64] >> (j % 64) & 1)) continue;
    uint64_t id = s->slot_id[j];
    s->slot_id[i] = id;
    u64_map_put(&s->map, id, i++); /* present: replaces the value, cannot fail */
  }
  free(mask);
  free(count);
  if (cap == 0) {
    free(s->rows);
    free(s->slot_id);
    s->rows = NULL;
    s->slot_id = NULL;
  } else { /* a smaller block: if realloc cannot, the larger one serves */
    uint8_t *rows = realloc(s->rows, (size_t)s->m * rb);
    uint64_t *ids = realloc(s->slot_id, cap * sizeof *ids);
    if (rows) s->rows = rows;
    if (ids) s->slot_id = ids;
  }
  s->cap = cap;
  s->row_bytes = rb;
  s->hi = n;
  s->free_slots.n = 0;
  u64vec_release(&s->free_slots);
  u64vec_init(&s->free_slots);
  free(s->retired); /* the retired columns were not packed */
  s->retired = NULL;
  s->nretired = 0;
  s->relays++;
  return ST_OK;
}

/* A new index of s's m with room for cap slots (a multiple of 8) and the ids of s's first
   `slots` slots; the rows are allocated, not cleared, and the rest is left to the caller.
   NULL on no memory. */
static sliced_t *copy_frame(const sliced_t *s, size_t cap, size_t slots) {
  sliced_t *n = sliced_create(s->m);
  if (!n) return NULL;
  n->cap = cap;
  n->row_bytes = cap / 8;
  n->relays = s->relays + 1;
  if (cap > 0 && (!(n->rows = malloc((size_t)s->m * n->row_bytes)) ||
                  !(n->slot_id = malloc(cap * sizeof *n->slot_id)))) {
    sliced_destroy(n);
    return NULL;
  }
  if (slots) memcpy(n->slot_id, s->slot_id, slots * sizeof *n->slot_id);
  return n;
}

sliced_t *sliced_regrown(const sliced_t *s, size_t slots) {
  size_t cap = ((slots > s->cap ? slots : s->cap) + 7) / 8 * 8;
  sliced_t *n = copy_frame(s, cap, s->hi);
  if (!n) return NULL;
  int ok = u64_map_reserve(&n->map, u64_map_count(&s->map) + 1) == ST_OK &&
           u64vec_reserve(&n->free_slots, s->free_slots.n + s->nretired + 1) == ST_OK &&
           (!s->retired || (n->retired = calloc((cap + 63) / 64, sizeof *n->retired)));
  if (!ok) {
    sliced_destroy(n);
    return NULL;
  }
  size_t pos = 0;
  uint64_t id, slot;
  while (u64_map_next(&s->map, &pos, &id, &slot)) u64_map_put(&n->map, id, slot);
  if (s->free_slots.n)
    memcpy(n->free_slots.v, s->free_slots.v, s->free_slots.n * sizeof *s->free_slots.v);
  n->free_slots.n = s->free_slots.n;
  if (s->retired) memcpy(n->retired, s->retired, (s->cap + 63) / 64 * sizeof *s->retired);
  n->nretired = s->nretired;
  n->filling = s->filling;
  n->hi = s->hi;
  size_t used = (s->hi + 7) / 8;
  for (uint64_t j = 0; j < s->m && n->row_bytes > 0; j++) {
    uint8_t *row = n->rows + j * n->row_bytes;
    if (used) memcpy(row, s->rows + j * s->row_bytes, used);
    memset(row + used, 0, n->row_bytes - used);
  }
  return n;
}

sliced_t *sliced_packed(const sliced_t *s) {
  size_t live = u64_map_count(&s->map), cap = (live + 7) / 8 * 8;
  if (cap >= s->cap) return NULL;
  size_t nw = (s->hi + 63) / 64;
  uint64_t *mask;
  uint8_t *count;
  sliced_t *n = live_mask(s, &mask, &count) == ST_OK ? copy_frame(s, cap, 0) : NULL;
  if (!n || u64_map_reserve(&n->map, live + 1) != ST_OK) {
    free(mask);
    free(count);
    sliced_destroy(n);
    return NULL;
  }
  for (size_t j = 0; j < s->hi; j++) {
    if (!(mask[j / 64] >> (j % 64) & 1)) continue;
    n->slot_id[n->hi] = s->slot_id[j];
    u64_map_put(&n->map, s->slot_id[j], n->hi++);
  }
  for (uint64_t j = 0; j < s->m && n->row_bytes > 0; j++)
    pack_row(s, s->rows + j * s->row_bytes, mask, count, nw, n->rows + j * n->row_bytes,
             n->row_bytes);
  free(mask);
  free(count);
  return n;
}

uint64_t sliced_relay_count(const sliced_t *s) {
  return s->relays;
}

static size_t take_slot(sliced_t *s) {
  if (s->free_slots.n > 0) return (size_t)s->free_slots.v[--s->free_slots.n];
  return s->hi++;
}

/* Sets the column of `slot` from words [from, to) of one filter: one row byte per set bit. */
static void fill_words(sliced_t *s, size_t slot, const uint64_t *words, size_t from, size_t to) {
  size_t c = slot / 8;
  uint8_t bit = (uint8_t)(1u << (slot & 7));
  for (size_t w = from; w < to && w < s->nwords; w++) {
    for (uint64_t x = words[w]; x; x &= x - 1) {
      uint64_t j = (uint64_t)w * 64 + (uint64_t)__builtin_ctzll(x);
      if (j < s->m) s->rows[j * s->row_bytes + c] |= bit;
    }
  }
}

static void fill_sparse(sliced_t *s, size_t slot, const uint64_t *words) {
  fill_words(s, slot, words, 0, s->nwords);
}

int sliced_add_begin(sliced_t *s, uint64_t id, size_t *slot) {
  if (s->filling != NO_SLOT || u64_map_get(&s->map, id, NULL)) return ST_E_INVALID;
  if (make_room(s, 1, 0) != ST_OK || u64_map_reserve(&s->map, u64_map_count(&s->map) + 1) != ST_OK)
    return ST_E_NOMEM;
  *slot = s->filling = take_slot(s);
  s->slot_id[*slot] = id;
  return ST_OK;
}

void sliced_add_words(sliced_t *s, const uint64_t *words, size_t from, size_t to) {
  fill_words(s, s->filling, words, from, to);
}

void sliced_add_end(sliced_t *s) {
  u64_map_put(&s->map, s->slot_id[s->filling], s->filling); /* reserved at the begin */
  s->filling = NO_SLOT;
}

int sliced_add(sliced_t *s, uint64_t id, const uint64_t *words) {
  size_t slot;
  int rc = sliced_add_begin(s, id, &slot);
  if (rc != ST_OK) return rc;
  fill_sparse(s, slot, words);
  sliced_add_end(s);
  return ST_OK;
}

/* In-place transpose of a 64x64 bit matrix: afterwards bit i of a[j] is what bit j of
   a[i] was. Six rounds of block swaps (32x32 blocks, then 16x16, ... 1x1). */
static void transpose64(uint64_t a[64]) {
  uint64_t mask = 0x00000000ffffffffull;
  for (unsigned j = 32; j != 0; j >>= 1, mask ^= mask << j) {
    for (unsigned r = 0; r < 64; r = ((r | j) + 1) & ~j) {
      uint64_t t = ((a[r] >> j) ^ a[r | j]) & mask;
      a[r] ^= t << j;
      a[r | j] ^= t;
    }
  }
}

typedef struct slot_src {
  size_t slot;
  const uint64_t *words;
} slot_src_t;

static int by_slot(const void *a, const void *b) {
  size_t x = ((const slot_src_t *)a)->slot, y = ((const slot_src_t *)b)->slot;
  return x < y ? -1 : x > y;
}

/* Fills the columns of one slot word c from the filters in g[0, n) (all in word c). */
static void fill_column_word(sliced_t *s, size_t c, const slot_src_t *g, size_t n) {
  if (n < 8) { /* a transpose per filter word only pays with enough filters */
    for (size_t i = 0; i < n; i++) fill_sparse(s, g[i].slot, g[i].words);
    return;
  }
  uint64_t a[64];
  for (size_t w = 0; w < s->nwords; w++) {
    memset(a, 0, sizeof a);
    uint64_t any = 0;
    for (size_t i = 0; i < n; i++) any |= a[g[i].slot & 63] = g[i].words[w];
    if (!any) continue;
    transpose64(a);
    uint64_t base = (uint64_t)w * 64;
    for (unsigned j = 0; j < 64 && base + j < s->m; j++)
      if (a[j]) chunk_or(s, s->rows + (base + j) * s->row_bytes, c, a[j]);
  }
}

int sliced_add_batch(sliced_t *s, const uint64_t *ids, const uint64_t *const *words, size_t n) {
  if (n == 0) return ST_OK;
  if (u64_map_reserve(&s->map, u64_map_count(&s->map) + n) != ST_OK) return ST_E_NOMEM;
  slot_src_t *g = malloc(n * sizeof *g);
  if (!g) return ST_E_NOMEM;
  /* Claim the ids first (the map cannot fail after the reserve); undo on a duplicate. */
  for (size_t i = 0; i < n; i++) {
    if (u64_map_get(&s->map, ids[i], NULL)) {
      for (size_t u = 0; u < i; u++) u64_map_del(&s->map, ids[u], NULL);
      free(g);
      return ST_E_INVALID;
    }
    u64_map_put(&s->map, ids[i], 0);
  }
  if (make_room(s, n, 0) != ST_OK) {
    for (size_t u = 0; u < n; u++) u64_map_del(&s->map, ids[u], NULL);
    free(g);
    return ST_E_NOMEM;
  }
  for (size_t i = 0; i < n; i++) {
    size_t slot = take_slot(s);
    u64_map_put(&s->map, ids[i], slot);
    s->slot_id[slot] = ids[i];
    g[i].slot = slot;
    g[i].words = words[i];
  }
  qsort(g, n, sizeof *g, by_slot);
  for (size_t i = 0; i < n;) {
    size_t e = i + 1;
    while (e < n && g[e].slot / 64 == g[i].slot / 64) e++;
    fill_column_word(s, g[i].slot / 64, g + i, e - i);
    i = e;
  }
  free(g);
  return ST_OK;
}

int sliced_remove(sliced_t *s, uint64_t id) {
  return sliced_remove_filter(s, id, NULL);
}

int sliced_remove_filter(sliced_t *s, uint64_t id, const uint64_t *words) {
  uint64_t slot;
  if (!u64_map_get(&s->map, id, &slot)) return ST_NOT_FOUND;
  if (u64vec_reserve(&s->free_slots, s->free_slots.n + 1) != ST_OK) return ST_E_NOMEM;
  size_t c = (size_t)slot / 8;
  uint8_t keep = (uint8_t) ~(1u << (slot & 7));
  if (words) {
    for (size_t w = 0; w < bits_words(s->m); w++)
      for (uint64_t x = words[w]; x; x &= x - 1)
        s->rows[((uint64_t)w * 64 + (uint64_t)__builtin_ctzll(x)) * s->row_bytes + c] &= keep;
  } else {
    for (uint64_t j = 0; j < s->m; j++) s->rows[j * s->row_bytes + c] &= keep;
  }
  u64_map_del(&s->map, id, NULL);
  s->free_slots.v[s->free_slots.n++] = slot;
  return ST_OK;
}

int sliced_retire(sliced_t *s, uint64_t id) {
  uint64_t slot;
  if (!u64_map_get(&s->map, id, &slot)) return ST_NOT_FOUND;
  /* Room now for the slot to join the free ones at sliced_scrub_done. */
  if (u64vec_reserve(&s->free_slots, s->free_slots.n + s->nretired + 1) != ST_OK ||
      (!s->retired && !(s->retired = calloc((s->cap + 63) / 64, sizeof *s->retired))))
    return sliced_remove(s, id);
  u64_map_del(&s->map, id, NULL);
  s->retired[slot / 64] |= (uint64_t)1 << (slot % 64);
  s->nretired++;
  return ST_OK;
}

uint64_t sliced_scrub(sliced_t *s, uint64_t from, size_t bytes) {
  if (!s->nretired || from >= s->m) return s->m;
  uint64_t rows = bytes / s->row_bytes ? bytes / s->row_bytes : 1;
  uint64_t to = s->m - from < rows ? s->m : from + rows;
  size_t nw = (s->hi + 63) / 64;
  for (size_t c = 0; c < nw; c++) {
    uint64_t keep = ~s->retired[c];
    if (keep == ~(uint64_t)0) continue;
    size_t at = c * 8, n = s->row_bytes - at < 8 ? s->row_bytes - at : 8;
    for (uint64_t j = from; j < to; j++) {
      uint8_t *b = s->rows + j * s->row_bytes + at;
      if (n == 8)
        encode_fixed64(b, decode_fixed64(b) & keep);
      else
        for (size_t i = 0; i < n; i++) b[i] &= (uint8_t)(keep >> (8 * i));
    }
  }
  return to;
}

void sliced_scrub_done(sliced_t *s) {
  if (!s->nretired) return;
  for (size_t c = 0; c < (s->cap + 63) / 64; c++)
    for (uint64_t x = s->retired[c]; x; x &= x - 1)
      s->free_slots.v[s->free_slots.n++] = c * 64 + (uint64_t)__builtin_ctzll(x); /* reserved */
  memset(s->retired, 0, (s->cap + 63) / 64 * sizeof *s->retired);
  s->nretired = 0;
}

int sliced_search(const sliced_t *s, const probe_t *p, u64vec_t *out, probe_stats_t *st) {
  size_t found = 0;
  size_t lim = (s->hi + 63) / 64;
  if (lim > 0 && p->k > 0) {
    const uint8_t *r[BFH_MAX_HASHES];
    for (uint32_t i = 0; i < p->k; i++) r[i] = s->rows + p->pos[i] * s->row_bytes;
    for (size_t c = 0; c < lim; c++) {
      uint64_t x = chunk_load(s, r[0], c);
      for (uint32_t i = 1; i < p->k && x; i++) x &= chunk_load(s, r[i], c);
      if (s->nretired) x &= ~s->retired[c];
      if (s->filling / 64 == c) x &= ~((uint64_t)1 << (s->filling % 64));
      for (; x; x &= x - 1) {
        if (u64vec_push(out, s->slot_id[c * 64 + (size_t)__builtin_ctzll(x)]) != ST_OK)
          return ST_E_NOMEM;
        found++;
      }
    }
  }
  if (st) {
    st->internal_probes += p->k;
    st->leaf_probes += u64_map_count(&s->map);
    st->leaf_positives += found;
  }
  return ST_OK;
}

void sliced_prefetch(const sliced_t *s, const probe_t *p) {
  if (s->hi == 0) return;
  for (uint32_t i = 0; i < p->k; i++) {
    const uint8_t *r = s->rows + p->pos[i] * s->row_bytes;
    __builtin_prefetch(r);
    __builtin_prefetch(r + s->row_bytes - 1); /* a row may end in the next line */
  }
}

int sliced_probe_one(const sliced_t *s, uint64_t id, const probe_t *p) {
  uint64_t slot;
  if (!u64_map_get(&s->map, id, &slot)) return -1;
  for (uint32_t i = 0; i < p->k; i++)
    if (!(s->rows[p->pos[i] * s->row_bytes + slot / 8] & (1u << (slot & 7)))) return 0;
  return 1;
}

size_t sliced_leaf_count(const sliced_t *s) {
  return u64_map_count(&s->map);
}

size_t sliced_free_slots(const sliced_t *s) {
  return s->cap - u64_map_count(&s->map) - s->nretired - (s->filling != NO_SLOT);
}

size_t sliced_retired(const sliced_t *s) {
  return s->nretired;
}

size_t sliced_capacity(const sliced_t *s) {
  return s->cap;
}

int sliced_contains(const sliced_t *s, uint64_t id) {
  return u64_map_get(&s->map, id, NULL);
}

size_t sliced_size_in_bytes(const sliced_t *s) {
  return sizeof *s + (size_t)s->m * s->row_bytes + s->cap * sizeof(uint64_t) +
         s->free_slots.cap * sizeof(uint64_t) + u64_map_size_in_bytes(&s->map);
}

void sliced_rows(const sliced_t *s, const uint8_t **rows, size_t *row_bytes, size_t *slots,
                 const uint64_t **slot_ids) {
  *rows = s->rows;
  *row_bytes = s->row_bytes;
  *slots = s->hi;
  *slot_ids = s->slot_id;
}

int sliced_slot_live(const sliced_t *s, size_t slot) {
  uint64_t v;
  if (slot >= s->hi) return 0;
  return u64_map_get(&s->map, s->slot_id[slot], &v) && v == slot;
}

/* sliced_t: bit-sliced index over the leaf filters (Flat-Bloofi).
 *
 * For each of the m bit positions, a row of slot bits: bit s of row j is bit j of the
 * filter in leaf slot s. A query ANDs the k rows of its probe positions; the set bits of
 * the result are the leaves that say maybe. Slots freed by removals are reused. The
 * capacity grows by an eighth, 8 slots at least, so the rows stay within 12.5% (plus 7
 * slots) of what the leaves in them hold; a caller that adds in batches can grow it exactly
 * (sliced_make_room_exact) and give freed slots back (sliced_shrink): the lean index does.
 *
 * Not thread-safe: the caller serializes writers against readers.
 */
#ifndef BFH_HIERARCHY_SLICED_H
#define BFH_HIERARCHY_SLICED_H

#include <stddef.h>
#include <stdint.h>

#include "filters/hash.h"
#include "util/err.h"
#include "util/vec.h"

typedef struct sliced sliced_t;

/* Returns a new empty index for m-bit filters, or NULL. Client calls sliced_destroy(). */
sliced_t *sliced_create(uint64_t m);
void sliced_destroy(sliced_t *s); /* NULL allowed */

/* Adds leaf `id` whose filter is `words` (read during the call only, not kept).
   ST_E_INVALID if id is present or an add in pieces is under way, ST_E_NOMEM. */
int sliced_add(sliced_t *s, uint64_t id, const uint64_t *words);
/* Removes leaf `id` and frees its slot. ST_NOT_FOUND if absent. */
int sliced_remove(sliced_t *s, uint64_t id);
/* sliced_remove for a caller that still has the leaf's filter: words must be exactly what
   the leaf was added with. Clears only the rows of its set bits (O(popcount) instead of
   O(m)). words == NULL falls back to sliced_remove. */
int sliced_remove_filter(sliced_t *s, uint64_t id, const uint64_t *words);

/* sliced_add in pieces, for a caller that lets readers in between: sliced_add_begin takes a
   slot for leaf `id` (growing as sliced_add does), sliced_add_words fills the words [from,
   to) of its filter into the slot's column, and sliced_add_end makes it a leaf. Until then
   queries do not report the slot and it is not free. One add in pieces at a time, and no
   other change to s meanwhile. sliced_add_begin: ST_E_INVALID if id is present or an add is
   under way, ST_E_NOMEM. */
int sliced_add_begin(sliced_t *s, uint64_t id, size_t *slot);
void sliced_add_words(sliced_t *s, const uint64_t *words, size_t from, size_t to);
void sliced_add_end(sliced_t *s);
/* Takes leaf `id` out at once, in O(1): its slot is retired, neither live nor free, and keeps
   its column until sliced_scrub clears it; queries no longer report it. For a caller that
   clears the columns of many removes in one pass over the rows, in pieces. Without memory
   for that, the same as sliced_remove. ST_NOT_FOUND if absent. */
int sliced_retire(sliced_t *s, uint64_t id);
/* Clears the columns of the retired slots in the rows from `from` on, about `bytes` of rows
   (one row at least); returns the row to go on from, m once done. Then sliced_scrub_done
   makes the retired slots free. Between the calls the index is whole: the caller may let
   readers in. The pass must end (sliced_scrub_done) before the next retire, add or re-lay. */
uint64_t sliced_scrub(sliced_t *s, uint64_t from, size_t bytes);
void sliced_scrub_done(sliced_t *s);
/* Retired slots not scrubbed yet. */
size_t sliced_retired(const sliced_t *s);
/* Adds n leaves at once (words[i] read during the call only). Same result as n calls of
   sliced_add, but fills the rows 64 slots at a time by 64x64 bit transposes, which is
   sequential where sliced_add writes one random row word per set bit: use it for bulk
   loads. ST_E_INVALID (nothing added) if an id is present or repeated, ST_E_NOMEM. */
int sliced_add_batch(sliced_t *s, const uint64_t *ids, const uint64_t *const *words, size_t n);
/* Makes room for `slots` leaves, exactly, so that adds up to that count do not re-lay the rows
   (use it when the final count is known). ST_OK or ST_E_NOMEM. */
int sliced_reserve(sliced_t *s, size_t slots);
/* Makes room for `extra` more leaves, growing the capacity by an eighth at least (8 slots at
   least), as sliced_add does: n leaves added in batches of any size re-lay the rows
   O(log n) times, where a sliced_reserve per batch would re-lay them once per batch (each
   re-lay copies every row: O(m * n / 8) bytes). ST_OK or ST_E_NOMEM. */
int sliced_make_room(sliced_t *s, size_t extra);
/* Gives back the rows of free slots: re-lays the rows for the live leaves only (the
   capacity becomes their count rounded up to 8) with the live slots packed to the front in
   their order (slot numbers change; ids stay; retired slots are dropped, as free ones). A no-op if that frees nothing. ST_OK or
   ST_E_NOMEM (nothing changed). */
int sliced_shrink(sliced_t *s);
/* sliced_make_room with a finer step: the capacity grows to the slots needed, rounded up to
   8, and by a 32nd of it at least (for a caller that adds in batches and gives free slots
   back with sliced_shrink; below 256 slots that is exactly the slots needed). ST_OK or
   ST_E_NOMEM. */
int sliced_make_room_exact(sliced_t *s, size_t extra);
/* The capacity sliced_make_room_exact(s, extra) grows s to (s's own when it has the room). */
size_t sliced_room_capacity(const sliced_t *s, size_t extra);
/* Copies of s for a caller that re-lays the rows beside the index while readers use it, and
   swaps the copy in: sliced_regrown holds the same leaves in the same slots with room for
   `slots` (rounded up to 8; never less than s's capacity); sliced_packed is what
   sliced_shrink would make of s, or NULL when that frees nothing. NULL on no memory. s is
   only read; the copy counts a re-lay more. */
sliced_t *sliced_regrown(const sliced_t *s, size_t slots);
sliced_t *sliced_packed(const sliced_t *s);
/* Slots free for an add without growing: the capacity less the live leaves and the retired
   slots. */
size_t sliced_free_slots(const sliced_t *s);
/* How many times the rows were re-laid for a larger capacity (each copies every row). */
uint64_t sliced_relay_count(const sliced_t *s);

/* Appends to out the ids of the leaves that say maybe for p. Counters in st (may be NULL):
   internal_probes += rows read (k), leaf_probes += live leaves covered, leaf_positives +=
   leaves reported. */
int sliced_search(const sliced_t *s, const probe_t *p, u64vec_t *out, probe_stats_t *st);
/* Asks the cache for the rows sliced_search(s, p, ...) will read, so that the misses of
   several indexes' probes overlap. */
void sliced_prefetch(const sliced_t *s, const probe_t *p);

/* Whether leaf `id`'s column has all the bits of p: 1 maybe, 0 no, -1 if id is absent. */
int sliced_probe_one(const sliced_t *s, uint64_t id, const probe_t *p);

size_t sliced_leaf_count(const sliced_t *s);
/* Slots the rows have room for (a leaf added below it needs no re-lay). */
size_t sliced_capacity(const sliced_t *s);
int sliced_contains(const sliced_t *s, uint64_t id);
/* Bytes it holds: its rows (m x capacity bits; the capacity is at most 12.5% + 8 slots above
   the slots in use), the slot ids, the free list and the id map. */
size_t sliced_size_in_bytes(const sliced_t *s);
/* The rows as they lie in memory, for a caller that stores them (the persisted value index,
   index/persisted_index.h): m rows of *row_bytes bytes each, bit j of a row (byte
   j / 8, bit j % 8) being slot j; *rows points into s (valid until s changes). The id in
   slot j for j < *slots is (*slot_ids)[j] when sliced_slot_live(s, j), else the slot is free. */
void sliced_rows(const sliced_t *s, const uint8_t **rows, size_t *row_bytes, size_t *slots,
                 const uint64_t **slot_ids);
int sliced_slot_live(const sliced_t *s, size_t slot);

#endif

/* block_index_t: the block filters (filters/block_filter.h) of the live tables, by table
 * number: the level under the leaves. A search that reaches a candidate table asks it which
 * data blocks to read; a table it has no filter for is read whole.
 *
 * Owned by the value index (value_index_blocks) and written, like the leaves, only by
 * index_sync: a table's block filter is put when its leaf is added (or later, when a
 * sidecar cache made before block filters is upgraded) and dropped with its leaf. Table
 * numbers are never reused, so a filter can never be taken for another table's.
 *
 * Thread-safe: puts and removes take a write lock, probes a read lock.
 */
#ifndef BFH_LSM_HOOKS_BLOCK_INDEX_H
#define BFH_LSM_HOOKS_BLOCK_INDEX_H

#include <stddef.h>
#include <stdint.h>

#include "filters/block_filter.h"
#include "util/err.h"

typedef struct block_index block_index_t;

/* The blocks of one probe (reused across tables and searches; block_refs_release frees). */
typedef struct block_refs {
  block_ref_t *v;
  size_t n, cap;
  uint32_t *scratch; /* block indexes of the probe */
  size_t scratch_cap;
} block_refs_t;

void block_refs_release(block_refs_t *r);

/* NULL on no memory. */
block_index_t *block_index_create(void);
void block_index_destroy(block_index_t *bi); /* NULL allowed; frees every filter */

/* Gives table `number` the filter f (taking ownership; a filter it had is freed).
   BFH_OK or BFH_E_NOMEM (f is then freed). */
int block_index_put(block_index_t *bi, uint64_t number, block_filter_t *f);
void block_index_remove(block_index_t *bi, uint64_t number);
int block_index_has(block_index_t *bi, uint64_t number);
/* Removes the filter of table `number` because a read through it failed (why: the error)
   while the table itself reads fine: the filter does not describe the table. Counted in
   the stats (damaged) with the message. */
void block_index_drop_damaged(block_index_t *bi, uint64_t number, const err_t *why);

/* The blocks of table `number` that may hold a value of this hash, in file order, into out.
   *blocks (may be NULL) gets how many blocks the filter covers. BFH_NOT_FOUND if the table
   has no block filter; BFH_E_NOMEM. */
int block_index_probe(block_index_t *bi, uint64_t number, uint64_t value_hash, block_refs_t *out,
                      uint32_t *blocks);

typedef struct block_index_stats {
  uint64_t tables;        /* tables with a block filter */
  uint64_t bytes;         /* memory the filters hold */
  uint64_t held_bytes;    /* bytes plus the index's own (its map from number to filter) */
  uint64_t values;        /* values they cover */
  uint64_t damaged;       /* filters dropped by block_index_drop_damaged */
  char last_damaged[256]; /* its last message */
} block_index_stats_t;
void block_index_get_stats(block_index_t *bi, block_index_stats_t *st);

#endif

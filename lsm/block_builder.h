/* block_builder_t: builds one block (data, index or meta index) with prefix-compressed
 * keys and restart points; layout at the top of block_builder.c and in doc/format.md
 * "Block". Caller-owned struct: block_builder_init() / block_builder_release().
 */
#ifndef BFH_LSM_BLOCK_BUILDER_H
#define BFH_LSM_BLOCK_BUILDER_H

#include <stddef.h>
#include <stdint.h>

#define BLOCK_RESTART_INTERVAL 16

typedef struct block_builder {
  uint8_t *buf; /* entries, then (after finish) the restart array (owned) */
  size_t size, cap;
  uint32_t *restarts; /* offsets of restart entries (owned) */
  size_t nrestarts, restarts_cap;
  int interval;  /* keys between restarts */
  int counter;   /* keys since the last restart */
  uint8_t *last; /* the last key added (owned) */
  size_t last_len, last_cap;
  int finished;
  int nomem; /* an allocation failed: finish reports it */
} block_builder_t;

/* interval <= 0 means BLOCK_RESTART_INTERVAL. */
void block_builder_init(block_builder_t *b, int interval);
void block_builder_release(block_builder_t *b);
/* Empties the builder for a new block (keeps its buffers). */
void block_builder_reset(block_builder_t *b);
/* REQUIRES: not finished; key > every key added since reset (in the block's order).
   Returns ST_OK or ST_E_NOMEM. */
int block_builder_add(block_builder_t *b, const void *key, size_t klen, const void *val,
                      size_t vlen);
/* Appends the restart array; returns the contents (borrowed, valid until reset/release)
   and their size, or NULL on no memory. */
const uint8_t *block_builder_finish(block_builder_t *b, size_t *n);
/* The size the block would have if finished now. */
size_t block_builder_size_estimate(const block_builder_t *b);
int block_builder_empty(const block_builder_t *b);
/* The last key added (borrowed). */
const uint8_t *block_builder_last_key(const block_builder_t *b, size_t *n);

#endif

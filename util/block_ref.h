/* block_ref_t: where a data block lies in its table file. The key path reads blocks by it
 * (lsm/table.h: table_scan_value_blocks) and a block filter names its blocks by it
 * (filters/block_filter.h), so that neither has to know the other; block_ahead_t likewise
 * names what a search reads ahead, for the search and the own engine alike, key_ref_t the keys
 * whose gets it reads ahead, and block_needle_t the bytes a search looks for in the blocks it
 * reads.
 */
#ifndef BFH_UTIL_BLOCK_REF_H
#define BFH_UTIL_BLOCK_REF_H

#include <stddef.h>
#include <stdint.h>

/* A data block's contents (without any trailer): offset and size in bytes. */
typedef struct block_ref {
  uint64_t offset, size;
} block_ref_t;

/* A piece of table `number` that a search will read next, which the engine may read ahead
   (lsm_snapshot_read_ahead, engine_ops_t.read_ahead): the data block `block` (meta NULL), or
   the bytes [block.offset, block.offset + block.size) of the contents of meta block `meta`. */
typedef struct block_ahead {
  uint64_t number;
  const char *meta;
  block_ref_t block;
} block_ahead_t;

/* A key whose get a search will make next, which the engine may read ahead (lsm_get_ahead,
   engine_ops_t.get_ahead): bytes[0, len). */
typedef struct key_ref {
  const void *bytes;
  size_t len;
} key_ref_t;

/* Bytes a value that passes a search's test may be known to hold (bytes[0, len), len >= 1):
   a scan of a block looks for them before it decodes an entry (lsm/block.h
   block_scan_containing). */
typedef struct block_needle {
  const void *bytes;
  size_t len;
} block_needle_t;
#define BLOCK_NEEDLES_MAX 16 /* the most a scan looks for at once */

#endif

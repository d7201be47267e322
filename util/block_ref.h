/* block_ref_t: where a data block lies in its table file. The key path reads blocks by it
 * (lsm/table.h: table_scan_value_blocks) and a block filter names its blocks by it
 * (filters/block_filter.h), so that neither has to know the other.
 */
#ifndef BFH_UTIL_BLOCK_REF_H
#define BFH_UTIL_BLOCK_REF_H

#include <stdint.h>

/* A data block's contents (without any trailer): offset and size in bytes. */
typedef struct block_ref {
  uint64_t offset, size;
} block_ref_t;

#endif

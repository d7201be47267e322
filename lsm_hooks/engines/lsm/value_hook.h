/* value_hook_t: the own engine's table-build hook that gives every table its value filter
 * (the paper's per-SSTable filter) and reports the tables to index_sync.
 *
 *   begin    creates an empty value filter with the database's m, k and seed
 *            and, with block filters on, a block filter builder (filters/block_filter.h)
 *   add      hashes the value of every LSM_TYPE_VALUE entry into both (deletions carry none)
 *   block_written  closes the block filter's current block at the data block's handle
 *   finish   serializes the leaf as the meta block "bfh.value_filter" (filters/value_filter.h)
 *            and the block filter as "bfh.block_filter"; with block filters on and an index
 *            that uses maps (value_index_params_t.block_maps, the lean layout), also the
 *            table's value-to-block map as "bfh.value_blocks" and "bfh.value_chunks"
 *            (index/value_block_map.h; about 8 bytes per value entry on disk)
 *   end      the table is complete: hands both filters, the table's path and the offset the
 *            leaf's meta block landed at to index_sync (index_sync_table_built); when the
 *            index uses maps (value_index_params_t.block_maps, the lean layout), the map's
 *            head goes into the block index instead of the block filter
 *   table_added / table_removed  index_sync_table_added / index_sync_table_removed: the
 *            leaf enters the index when the version holding the table is installed
 * Without an index_sync (bfh_repair) it only writes the meta blocks. With value filters off
 * the hook is simply not installed.
 */
#ifndef BFH_LSM_HOOKS_VALUE_HOOK_H
#define BFH_LSM_HOOKS_VALUE_HOOK_H

#include "lsm/table_hook.h"
#include "index/index_sync.h"
#include "util/err.h"

#define VALUE_HOOK_META_NAME "bfh.value_filter"
#define VALUE_HOOK_BLOCKS_META_NAME "bfh.block_filter"

typedef struct value_hook value_hook_t;

typedef struct value_hook_stats {
  uint64_t tables_built;  /* end() of a complete table */
  uint64_t tables_failed; /* end() of an abandoned one */
  uint64_t values_added;
} value_hook_stats_t;

/* Returns a new hook making filters with m, k and seed, and block filters of block_bits bits
   per value (0: none), for the database in directory dir
   (copied) and reporting to sync (borrowed; must outlive the hook; NULL: report nothing),
   or NULL (message in err). Client calls value_hook_destroy() after the database is
   closed. */
value_hook_t *value_hook_create(index_sync_t *sync, uint64_t m, uint32_t k, uint64_t seed,
                                uint32_t block_bits, const char *dir, err_t *err);
/* Each value entry is added to the filters and the map under its item hashes
   (filters/value_terms.h): by default those of sync's index (index_sync_params' terms), or
   the whole value's without sync. This sets them (borrowed, must outlive h; NULL: the whole
   value's), before the database that calls the hook opens: a repair's tables get the
   database's attributes so. */
void value_hook_set_terms(value_hook_t *h, const value_terms_t *terms);
void value_hook_destroy(value_hook_t *h); /* NULL allowed */
/* The lsm_table_hook_t to put in lsm_options_t.hook (owned by h). */
const lsm_table_hook_t *value_hook_table_hook(value_hook_t *h);
void value_hook_get_stats(value_hook_t *h, value_hook_stats_t *st);

#endif

/* The filters the value hook (value_hook.h) stored in an own-engine table's meta blocks, read
 * back for index_sync (index_source_t): the leaf ("bfh.value_filter") with the table's block
 * filter ("bfh.block_filter") or, under the lean layout, the head of its value-to-block map
 * ("bfh.value_blocks"). Both own-engine rows read them so: the read-write engine through its
 * lsm_db_t (engine_lsm.c), the read-only one through the tables it holds open (lsm_ro/).
 */
#ifndef BFH_LSM_HOOKS_TABLE_FILTERS_H
#define BFH_LSM_HOOKS_TABLE_FILTERS_H

#include <stddef.h>
#include <stdint.h>

#include "index/index_sync.h"
#include "util/err.h"

/* Reads meta block `name` of table `number`: on BFH_OK *data is malloc'd (the caller frees
   it) and *offset (may be NULL) its offset in the file; BFH_NOT_FOUND (no message) when the
   table has no such block. */
typedef int (*table_filters_read_fn)(void *arg, uint64_t number, const char *name, void **data,
                                     size_t *size, uint64_t *offset, err_t *err);

typedef struct table_filters {
  table_filters_read_fn read_meta;
  void *arg;          /* read_meta's */
  index_sync_t *sync; /* borrowed: its parameters and block index */
  const char *dir;    /* the database's directory (borrowed): a leaf's path */
} table_filters_t;

/* index_source_t.read_leaf: the value filter of table `number` (BFH_E_CORRUPT when it has
   none: always scanned) with its block filter or map head when p->block_bits says so. */
int table_filters_read_leaf(const table_filters_t *tf, uint64_t number,
                            const value_index_params_t *p, index_leaf_read_t *out, err_t *err);

/* index_source_t.read_blocks: the block filter alone, ahead of the leaf (*out NULL when the
   table's map head went into the block index instead, or the table has none). */
int table_filters_read_blocks(const table_filters_t *tf, uint64_t number, block_filter_t **out,
                              err_t *err);

#endif

/* The value hook's filters read back from a table's meta blocks (table_filters.h). */
#include "lsm_hooks/engines/lsm/table_filters.h"

#include <stdlib.h>
#include <string.h>

#include "lsm/table.h"
#include "lsm_hooks/engines/lsm/value_hook.h"
#include "index/index_sync.h"

/* With block maps in use (the lean layout, value_index_params_t.block_maps): puts the head of
   table `number`'s value-to-block map into the block index, in place of its block filter.
   1 if it did; 0 if the table has none or it does not check out (counted as damaged): its
   block filter serves then. */
static int read_map(const table_filters_t *tf, uint64_t number, index_leaf_read_t *out) {
  void *data = NULL;
  size_t size = 0;
  err_t err;
  err_clear(&err);
  value_block_map_t *m = NULL;
  block_index_t *bi = index_sync_block_index(tf->sync);
  if (block_index_has_map(bi, number)) return 1; /* read ahead of the leaf */
  int rc = tf->read_meta(tf->arg, number, VALUE_BLOCK_MAP_HEAD_NAME, &data, &size, NULL, &err);
  if (rc == BFH_OK) rc = value_block_map_open(data, size, &m, &err);
  free(data);
  out->bytes_read += size;
  if (rc == BFH_OK && block_index_put_map(bi, number, m) == BFH_OK) return 1;
  if (rc == BFH_E_CORRUPT) {
    err_prefix(&err, "table %llu: ", (unsigned long long)number);
    block_index_count_damaged(bi, &err);
  }
  return 0;
}

/* The block filter of table `number` from its "bfh.block_filter" meta block into out; a
   table built without one (block filters off, or made before them) has none. */
static void read_blocks(const table_filters_t *tf, uint64_t number, index_leaf_read_t *out) {
  if (index_sync_params(tf->sync)->block_maps && read_map(tf, number, out)) return;
  void *data = NULL;
  size_t size = 0;
  uint64_t offset;
  int rc = tf->read_meta(tf->arg, number, VALUE_HOOK_BLOCKS_META_NAME, &data, &size, &offset,
                         &out->blocks_err);
  if (rc == BFH_OK) rc = block_filter_deserialize(data, size, &out->blocks, &out->blocks_err);
  free(data);
  out->bytes_read += size;
  if (rc == BFH_NOT_FOUND) err_clear(&out->blocks_err);
  if (rc != BFH_OK && rc != BFH_NOT_FOUND)
    err_prefix(&out->blocks_err, "table %llu: block filter: ", (unsigned long long)number);
}

int table_filters_read_blocks(const table_filters_t *tf, uint64_t number, block_filter_t **out,
                              err_t *err) {
  index_leaf_read_t r;
  memset(&r, 0, sizeof r);
  read_blocks(tf, number, &r);
  *out = r.blocks;
  if (r.blocks_err.code != BFH_OK) *err = r.blocks_err;
  return r.blocks_err.code;
}

int table_filters_read_leaf(const table_filters_t *tf, uint64_t number,
                            const value_index_params_t *p, index_leaf_read_t *out, err_t *err) {
  void *data = NULL;
  size_t size = 0;
  int rc = tf->read_meta(tf->arg, number, VALUE_HOOK_META_NAME, &data, &size, &out->offset, err);
  out->bytes_read = size;
  if (rc == BFH_OK) rc = value_filter_deserialize(data, size, &out->filter, err);
  free(data);
  if (rc == BFH_NOT_FOUND) /* the table has no filter block: never read again, always scanned */
    rc = err_set(err, BFH_E_CORRUPT, "table %llu: no value filter", (unsigned long long)number);
  if (rc != BFH_OK) return rc;
  if (!(out->path = table_file_path(tf->dir, number))) {
    value_filter_destroy(out->filter);
    out->filter = NULL;
    return err_set(err, BFH_E_NOMEM, "table %llu: out of memory", (unsigned long long)number);
  }
  if (p->block_bits) read_blocks(tf, number, out);
  return BFH_OK;
}

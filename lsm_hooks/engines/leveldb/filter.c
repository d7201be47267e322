/* ldb_filter: the value filters of a LevelDB table; see engines/leveldb/filter.h. */
#include "lsm_hooks/engines/leveldb/filter.h"

#include "bfh.h"
#include "lsm_hooks/engines/stock/stock.h"
#include "lsm_hooks/leveldb_format/ldb_table.h"

static int add_value(void *arg, const ldb_entry_t *e) {
  return e->type == LDB_TYPE_VALUE && stock_leaf_add(arg, e->val, e->val_len);
}

int ldb_filter_read(env_t *io, const char *path, const value_index_params_t *p,
                    index_leaf_read_t *out, ldb_read_stats_t *st, err_t *err) {
  stock_leaf_build_t b;
  int rc = stock_leaf_begin(&b, path, p, out->terms, out->want_map, 0, err);
  if (rc == BFH_OK)
    rc = ldb_table_scan_tagged(io, path, add_value, b.blocks ? stock_leaf_end_block : NULL, &b,
                               st, &out->tag, err);
  return stock_leaf_finish(&b, rc, 0, out);
}

int ldb_filter_build(env_t *io, const char *path, uint64_t m, uint32_t k, uint64_t seed,
                     uint32_t block_bits, value_filter_t **leaf, block_filter_t **blocks,
                     uint64_t *tag, ldb_read_stats_t *st, err_t *err) {
  return ldb_filter_build_map(io, path, m, k, seed, block_bits, leaf, blocks, NULL, tag, st, err);
}

int ldb_filter_build_map(env_t *io, const char *path, uint64_t m, uint32_t k, uint64_t seed,
                         uint32_t block_bits, value_filter_t **leaf, block_filter_t **blocks,
                         ldb_filter_map_t *map, uint64_t *tag, ldb_read_stats_t *st, err_t *err) {
  if (map) *map = (ldb_filter_map_t){NULL, NULL, 0, 0};
  value_index_params_t p = {.m = m, .k = k, .seed = seed, .block_bits = block_bits};
  index_leaf_read_t out = {.want_map = map != NULL};
  int rc = ldb_filter_read(io, path, &p, &out, st, err);
  if (rc != BFH_OK) return rc;
  *leaf = out.filter;
  if (blocks) *blocks = out.blocks;
  if (tag) *tag = out.tag;
  if (map) *map = (ldb_filter_map_t){out.map_head, out.map_chunks, out.map_head_len,
                                     out.map_chunks_len};
  return BFH_OK;
}

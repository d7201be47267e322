/* ldb_filter: the value filters of a LevelDB table; see engines/leveldb/filter.h. */
#include "lsm_hooks/engines/leveldb/filter.h"

#include <stdlib.h>

#include "bfh.h"
#include "index/index_sync.h"
#include "lsm_hooks/leveldb_format/ldb_table.h"

typedef struct build {
  value_filter_t *leaf;
  block_filter_builder_t *blocks; /* NULL: no block filter */
  value_block_map_builder_t *map; /* NULL: no value-to-block map */
  uint64_t seed;
  const value_terms_t *terms; /* the items each value is added under; NULL: the whole value */
  int rc; /* the first failure of a builder (it stops the read) */
  uint64_t rc_offset;
} build_t;

static void add_item(void *arg, uint64_t h) {
  build_t *b = arg;
  value_filter_add_hash(b->leaf, h);
  if (b->rc == BFH_OK && b->blocks) b->rc = block_filter_builder_add(b->blocks, h);
  if (b->rc == BFH_OK && b->map) b->rc = value_block_map_builder_add(b->map, h);
}

static int add_value(void *arg, const ldb_entry_t *e) {
  build_t *b = arg;
  if (e->type != LDB_TYPE_VALUE) return 0;
  if (value_terms_hash(b->terms, e->val, e->val_len, b->seed, 0, add_item, b) < 0)
    b->rc = BFH_E_NOMEM;
  return b->rc != BFH_OK;
}

static int end_block(void *arg, uint64_t offset, uint64_t size) {
  build_t *b = arg;
  b->rc = block_filter_builder_end_block(b->blocks, offset, size);
  if (b->rc == BFH_OK && b->map) b->rc = value_block_map_builder_end_block(b->map, offset, size);
  b->rc_offset = offset;
  return b->rc != BFH_OK;
}

/* The message of a builder's failure: a block out of order is the table's damage. */
static int build_error(const build_t *b, const char *path, err_t *err) {
  if (b->rc == BFH_E_NOMEM)
    return err_set(err, BFH_E_NOMEM, "table %s: no memory for its block filter", path);
  return err_set(err, BFH_E_CORRUPT,
                 "table %s: block at %llu: the index lists it before a block it overlaps or "
                 "follows",
                 path, (unsigned long long)b->rc_offset);
}

int ldb_filter_build(env_t *io, const char *path, uint64_t m, uint32_t k, uint64_t seed,
                     uint32_t block_bits, value_filter_t **leaf, block_filter_t **blocks,
                     uint64_t *tag, ldb_read_stats_t *st, err_t *err) {
  return ldb_filter_build_map(io, path, m, k, seed, block_bits, leaf, blocks, NULL, tag, st, err);
}

int ldb_filter_build_map(env_t *io, const char *path, uint64_t m, uint32_t k, uint64_t seed,
                         uint32_t block_bits, value_filter_t **leaf, block_filter_t **blocks,
                         ldb_filter_map_t *map, uint64_t *tag, ldb_read_stats_t *st, err_t *err) {
  return ldb_filter_build_items(io, path, m, k, seed, NULL, block_bits, leaf, blocks, map, tag,
                                st, err);
}

int ldb_filter_build_items(env_t *io, const char *path, uint64_t m, uint32_t k, uint64_t seed,
                           const value_terms_t *terms, uint32_t block_bits, value_filter_t **leaf,
                           block_filter_t **blocks, ldb_filter_map_t *map, uint64_t *tag,
                           ldb_read_stats_t *st, err_t *err) {
  if (map) *map = (ldb_filter_map_t){NULL, NULL, 0, 0};
  if (block_bits > BLOCK_FILTER_MAX_BITS)
    return err_set(err, BFH_E_INVALID,
                   "table %s: %u bits per value for a block filter (at most %u)", path, block_bits,
                   BLOCK_FILTER_MAX_BITS);
  build_t b = {.leaf = value_filter_create(m, k, seed), .seed = seed, .terms = terms, .rc = BFH_OK};
  if (block_bits) b.blocks = block_filter_builder_create(block_bits);
  if (block_bits && map) b.map = value_block_map_builder_create();
  int rc = BFH_OK;
  if (!b.leaf || (block_bits && !b.blocks) || (block_bits && map && !b.map))
    rc = err_set(err, BFH_E_NOMEM, "table %s: cannot make a value filter", path);
  if (rc == BFH_OK)
    rc = ldb_table_scan_tagged(io, path, add_value, b.blocks ? end_block : NULL, &b, st, tag, err);
  if (rc == BFH_OK && b.rc != BFH_OK) rc = build_error(&b, path, err);
  block_filter_t *bf = NULL;
  if (rc == BFH_OK && b.blocks) {
    rc = block_filter_builder_finish(b.blocks, &bf, err);
    if (rc != BFH_OK) err_prefix(err, "table %s: ", path);
  }
  block_filter_builder_destroy(b.blocks);
  if (rc == BFH_OK && b.map) {
    int r = value_block_map_builder_finish(b.map, &map->head, &map->head_len, &map->chunks,
                                           &map->chunks_len);
    /* BFH_NOT_FOUND: blocks it cannot name, the block filter serves */
    if (r == BFH_E_NOMEM)
      rc = err_set(err, r, "table %s: no memory for its value-to-block map", path);
  }
  value_block_map_builder_destroy(b.map);
  if (rc != BFH_OK) {
    value_filter_destroy(b.leaf);
    block_filter_destroy(bf);
    return rc;
  }
  *leaf = b.leaf;
  if (blocks) *blocks = bf;
  return BFH_OK;
}

/* A table's value filters and item hashes, made by a stock format's table reader (stock.h):
 * the same builders whatever the table format, so that a LevelDB and a RocksDB table of the
 * same values get the same leaf and block filter.
 */
#include <stdlib.h>

#include "lsm_hooks/engines/stock/stock.h"

int stock_leaf_begin(stock_leaf_build_t *b, const char *path, const value_index_params_t *p,
                     const value_terms_t *terms, int want_map, uint32_t ref_blocks, err_t *err) {
  *b = (stock_leaf_build_t){.seed = p->seed, .terms = terms, .path = path, .err = err};
  if (p->block_bits > BLOCK_FILTER_MAX_BITS)
    return err_set(err, BFH_E_INVALID,
                   "table %s: %u bits per value for a block filter (at most %u)", path,
                   p->block_bits, BLOCK_FILTER_MAX_BITS);
  b->leaf = value_filter_create(p->m, p->k, p->seed);
  if (p->block_bits && (b->blocks = block_filter_builder_create(p->block_bits)) && ref_blocks)
    block_filter_builder_scale(b->blocks, ref_blocks);
  /* The map too when index_sync asks (a cache directory, maps in use): it is kept in the
     table's cache file and read there, in place of the block filter. */
  want_map = want_map && p->block_bits;
  if (want_map) b->map = value_block_map_builder_create();
  if (!b->leaf || (p->block_bits && !b->blocks) || (want_map && !b->map))
    return err_set(err, BFH_E_NOMEM, "table %s: cannot make a value filter", path);
  /* Every attribute with a zone gets one in the map, empty when the table holds no term of
     it. */
  uint64_t ids[VALUE_TERMS_MAX_ZONES];
  size_t nz = b->map ? value_terms_zone_ids(terms, ids) : 0;
  for (size_t i = 0; i < nz; i++)
    if (value_block_map_builder_declare_zone(b->map, ids[i]) != BFH_OK)
      return err_set(err, BFH_E_NOMEM, "table %s: cannot make a value-to-block map", path);
  return BFH_OK;
}

static void add_code(void *arg, uint64_t zone_id, uint64_t code) {
  stock_leaf_build_t *b = arg;
  if (b->rc == BFH_OK && (b->rc = value_block_map_builder_zone(b->map, zone_id, code)) != BFH_OK)
    b->rc = err_set(b->err, b->rc, "table %s: no memory for its value-to-block map", b->path);
}

static void add_item(void *arg, uint64_t h) {
  stock_leaf_build_t *b = arg;
  value_filter_add_hash(b->leaf, h);
  if (b->rc == BFH_OK && b->blocks && (b->rc = block_filter_builder_add(b->blocks, h)) != BFH_OK)
    b->rc = err_set(b->err, b->rc, "table %s: no memory for its block filter", b->path);
  if (b->rc == BFH_OK && b->map &&
      (b->rc = value_block_map_builder_add(b->map, h, b->seq)) != BFH_OK)
    b->rc = err_set(b->err, b->rc, "table %s: no memory for its value-to-block map", b->path);
}

int stock_leaf_add(stock_leaf_build_t *b, const void *val, size_t val_len, uint64_t seq) {
  b->seq = seq;
  int rc = b->map
               ? value_terms_hash_zoned(b->terms, val, val_len, b->seed, 0, add_item, add_code, b)
               : value_terms_hash(b->terms, val, val_len, b->seed, 0, add_item, b);
  if (rc < 0 && b->rc == BFH_OK)
    b->rc = err_set(b->err, BFH_E_NOMEM, "table %s: no memory for its values' terms", b->path);
  return b->rc != BFH_OK;
}

int stock_leaf_end_block(void *arg, uint64_t offset, uint64_t size) {
  stock_leaf_build_t *b = arg;
  if (!b->blocks) return 0;
  b->rc = block_filter_builder_end_block(b->blocks, offset, size);
  if (b->rc == BFH_E_NOMEM)
    err_set(b->err, b->rc, "table %s: no memory for its block filter", b->path);
  else if (b->rc != BFH_OK)
    b->rc = err_set(b->err, BFH_E_CORRUPT,
                    "table %s: block at %llu: the index lists it before a block it overlaps or "
                    "follows",
                    b->path, (unsigned long long)offset);
  if (b->rc == BFH_OK && b->map &&
      (b->rc = value_block_map_builder_end_block(b->map, offset, size)) != BFH_OK)
    b->rc = err_set(b->err, b->rc, "table %s: no memory for its value-to-block map", b->path);
  return b->rc != BFH_OK;
}

int stock_leaf_finish(stock_leaf_build_t *b, int rc, uint32_t unmapped_ref_blocks,
                      index_leaf_read_t *out) {
  if (rc == BFH_OK) rc = b->rc;
  if (rc == BFH_OK && b->map) {
    int r = value_block_map_builder_finish(b->map, &out->map_head, &out->map_head_len,
                                           &out->map_chunks, &out->map_chunks_len);
    /* BFH_NOT_FOUND: blocks a map cannot name (value_block_map.h); the block filter serves */
    if (r == BFH_E_NOMEM)
      rc = err_set(b->err, r, "table %s: no memory for its value-to-block map", b->path);
    if (r == BFH_NOT_FOUND && b->blocks && unmapped_ref_blocks)
      block_filter_builder_scale(b->blocks, unmapped_ref_blocks);
    if (r != BFH_OK) {
      free(out->map_head);
      free(out->map_chunks);
      out->map_head = out->map_chunks = NULL;
      out->map_head_len = out->map_chunks_len = 0;
    }
  }
  value_block_map_builder_destroy(b->map);
  block_filter_t *bf = NULL;
  if (rc == BFH_OK && b->blocks && (rc = block_filter_builder_finish(b->blocks, &bf, b->err)))
    err_prefix(b->err, "table %s: ", b->path);
  block_filter_builder_destroy(b->blocks);
  if (rc != BFH_OK) {
    value_filter_destroy(b->leaf);
    block_filter_destroy(bf);
    return rc;
  }
  out->filter = b->leaf;
  out->blocks = bf;
  return BFH_OK;
}

int stock_hashes_add(stock_hashes_t *h, const void *val, size_t val_len) {
  if (value_terms_hash(h->terms, val, val_len, h->seed, 0, h->fn, h->arg) < 0)
    h->rc = err_set(h->err, BFH_E_NOMEM, "table %s: no memory for its values' terms", h->path);
  return h->rc != BFH_OK;
}

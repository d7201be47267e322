/* The table reads of the RocksDB engine (rdb_adapter.h): for a search, and for a table's value
 * filter and block filter, through bfh's reader of the block-based format
 * (rocksdb_format/rdb_table.h). What bfh cannot answer from a table's bytes is refused here:
 * a merge operand (bfh sets no merge operator, and cannot apply one) and a blob reference (the
 * value lives in a blob file bfh does not read).
 */
#include <stdlib.h>

#include "bfh.h"
#include "lsm_hooks/engines/rocksdb/rdb_adapter.h"
#include "lsm_hooks/rocksdb_format/rdb_table.h"

void rdb_table_path_write(const char *dir, uint64_t number, char *out, size_t n) {
  stock_table_path_write(dir, number, "sst", "ldb", out, n);
}

int rdb_table_path(const char *dir, uint64_t number, char **path, err_t *err) {
  return stock_table_path(dir, number, "sst", "ldb", path, err);
}

int rdb_entry_refuse(const rdb_entry_t *e, const char *path, err_t *err) {
  if (e->type == RDB_TYPE_MERGE)
    return err_set(err, BFH_E_UNSUPPORTED,
                   "table %s: holds a merge operand (sequence %llu); bfh cannot search a RocksDB "
                   "database with merge operands (it has no merge operator to apply them)",
                   path, (unsigned long long)e->seq);
  if (e->type == RDB_TYPE_BLOB_INDEX)
    return err_set(err, BFH_E_UNSUPPORTED,
                   "table %s: holds a blob reference (sequence %llu); bfh does not read RocksDB's "
                   "blob files (enable_blob_files)",
                   path, (unsigned long long)e->seq);
  if (e->type == RDB_TYPE_WIDE_COLUMN_ENTITY)
    return err_set(err, BFH_E_UNSUPPORTED,
                   "table %s: holds a wide-column entity (sequence %llu), which bfh does not read",
                   path, (unsigned long long)e->seq);
  return BFH_OK;
}

typedef struct match {
  const stock_match_t *m;
  const char *path;
  err_t *err;
  int rc; /* BFH_E_UNSUPPORTED once an entry was refused */
} match_t;

static int visit_match(void *arg, const rdb_entry_t *e) {
  match_t *x = arg;
  if ((x->rc = rdb_entry_refuse(e, x->path, x->err)) != BFH_OK) return 1;
  if (!engine_value_test_passes(x->m->test, e->type == RDB_TYPE_VALUE, e->val, e->val_len))
    return 0;
  return x->m->fn(x->m->arg, e->key, e->key_len, e->seq);
}

int rdb_table_match(env_t *io, const char *dir, uint64_t number, const block_ref_t *refs, size_t n,
                    const block_cache_use_t *use, const stock_match_t *m, engine_scan_stats_t *st,
                    err_t *err) {
  char *path;
  int rc = rdb_table_path(dir, number, &path, err);
  if (rc != BFH_OK) return rc;
  rdb_read_stats_t rs = {0};
  match_t x = {m, path, err, BFH_OK};
  block_needle_t whole;
  const block_needle_t *nd;
  size_t nn = stock_match_needles(m, &whole, &nd);
  rc = refs
           ? rdb_table_read_blocks_cached(io, path, refs, n, use, nd, nn, visit_match, &x, &rs, err)
           : rdb_table_scan(io, path, visit_match, &x, &rs, err);
  free(path);
  st->entries += rs.entries;
  st->bytes_read += rs.bytes_read;
  return rc != BFH_OK ? rc : x.rc;
}

int rdb_table_match_rfile(env_rfile_t *f, const char *path, const rdb_table_footer_t *ft,
                          const block_ref_t *refs, size_t n, const block_cache_use_t *use,
                          const stock_match_t *m, engine_scan_stats_t *st, err_t *err) {
  rdb_read_stats_t rs = {0};
  match_t x = {m, path, err, BFH_OK};
  block_needle_t whole;
  const block_needle_t *nd;
  size_t nn = stock_match_needles(m, &whole, &nd);
  int rc = refs ? rdb_table_read_blocks_footer_cached(f, path, ft, refs, n, use, nd, nn,
                                                      visit_match, &x, &rs, err)
                : rdb_table_scan_rfile(f, path, visit_match, NULL, &x, &rs, NULL, NULL, err);
  st->entries += rs.entries;
  st->bytes_read += rs.bytes_read;
  return rc != BFH_OK ? rc : x.rc;
}

/* A table file held open, with its footer read at the open (footer_ok) so that a read of its
   blocks reads those alone. */
typedef struct rdb_file {
  stock_file_t base;
  rdb_table_footer_t footer;
  int footer_ok; /* 0: unreadable then; each read reads it, and reports what is wrong */
} rdb_file_t;

int rdb_file_open(env_t *io, const char *dir, uint64_t number, stock_file_t **out, err_t *err) {
  char *path;
  int rc = rdb_table_path(dir, number, &path, err);
  if (rc == BFH_OK) rc = stock_file_open(sizeof(rdb_file_t), io, path, out, err);
  if (rc != BFH_OK) return rc;
  rdb_file_t *f = (rdb_file_t *)*out;
  err_t e;
  f->footer_ok = rdb_table_footer_read_rfile(f->base.f, f->base.path, &f->footer, &e) == BFH_OK;
  return BFH_OK;
}

int rdb_file_match(stock_file_t *f, const block_ref_t *refs, size_t n, const block_cache_use_t *use,
                   const stock_match_t *m, engine_scan_stats_t *st, err_t *err) {
  const rdb_file_t *rf = (const rdb_file_t *)f;
  return rdb_table_match_rfile(f->f, f->path, rf->footer_ok ? &rf->footer : NULL, refs, n, use, m,
                               st, err);
}

void rdb_file_keep(stock_file_t *f, block_ref_t ref, const uint8_t *raw,
                   const block_cache_use_t *use) {
  const rdb_file_t *rf = (const rdb_file_t *)f;
  if (rf->footer_ok) rdb_table_keep_block(f->path, &rf->footer, ref, raw, use);
}

static int visit_hash(void *arg, const rdb_entry_t *e) {
  stock_hashes_t *h = arg;
  if ((h->rc = rdb_entry_refuse(e, h->path, h->err)) != BFH_OK) return 1;
  return e->type == RDB_TYPE_VALUE && stock_hashes_add(h, e->val, e->val_len);
}

int rdb_table_hashes(env_t *io, const char *dir, uint64_t number, uint64_t seed,
                     const value_terms_t *terms, void (*fn)(void *arg, uint64_t hash), void *arg,
                     engine_scan_stats_t *st, err_t *err) {
  char *path;
  int rc = rdb_table_path(dir, number, &path, err);
  if (rc != BFH_OK) return rc;
  rdb_read_stats_t rs = {0};
  stock_hashes_t h = {seed, terms, fn, arg, path, err, BFH_OK};
  rc = rdb_table_scan(io, path, visit_hash, &h, &rs, err);
  free(path);
  if (st) {
    st->entries += rs.entries;
    st->bytes_read += rs.bytes_read;
  }
  return rc != BFH_OK ? rc : h.rc;
}

/* ---- A table's filters ------------------------------------------------------------------ */

/* A leaf read, with what taps it (NULL: nothing). */
typedef struct build {
  stock_leaf_build_t leaf;
  const rdb_leaf_tap_t *tap;
} build_t;

static int add_value(void *arg, const rdb_entry_t *e) {
  build_t *b = arg;
  if ((b->leaf.rc = rdb_entry_refuse(e, b->leaf.path, b->leaf.err)) != BFH_OK) return 1;
  if (b->tap) b->tap->entry(b->tap->arg, e);
  return e->type == RDB_TYPE_VALUE && stock_leaf_add(&b->leaf, e->val, e->val_len, e->seq);
}

static int end_block(void *arg, uint64_t offset, uint64_t size) {
  build_t *b = arg;
  if (b->tap) b->tap->block(b->tap->arg, offset, size);
  return stock_leaf_end_block(&b->leaf, offset, size);
}

/* A table's block filter gets bfh_options.block_filter_bits stated for a table of
   RDB_BLOCK_REF_BLOCKS blocks, and more bits for a table of more (block_filter_builder_scale),
   counted as the table's data blocks, not estimated from its size: snappy makes RocksDB's 4 KiB
   blocks a fraction of that on disk, and the 1M-value table of rocksdb_readonly_bench, 12 MB
   in 8,900 blocks, was taken for 3,000 and passed 11 blocks per absent value instead of ~1.
   RocksDB's tables are 64 MiB and more by default: at 10 bits a 57 MiB table of 14,000 blocks
   passed ~115 blocks (460 KB) per search. The memory is the cost: up to 8 more bits per value
   in such a table. */
#define RDB_BLOCK_REF_BLOCKS 128 /* a table about which block_filter_bits passes ~1 block */
/* Where maps are in use (the read-only row with a cache directory), a table whose map cannot be
   built (more than VALUE_BLOCK_MAP_MAX_BLOCKS blocks: the 64 MiB table of
   rocksdb_readonly_bench at 10M, 84,187 blocks) is probed through its block filter by every
   search, and that filter alone stays in memory: it is stated for a table of this many blocks,
   ~4 bits per value more, so that a probe passes ~0.1 block in vain instead of ~1 (measured
   at 10M: 0.85 -> 0.14 blocks, absent AUTO 19.7 -> 13.8 us, index_bytes 31.4 -> 36.1 MB). */
#define RDB_BLOCK_REF_BLOCKS_UNMAPPED 16

int rdb_leaf_read(env_t *io, const char *dir, uint64_t number, const value_index_params_t *p,
                  index_leaf_read_t *out, err_t *err) {
  char *path;
  int rc = rdb_table_path(dir, number, &path, err);
  if (rc != BFH_OK) return rc;
  env_rfile_t *f = NULL;
  rc = env_open_read(io, path, &f, err);
  if (rc == BFH_OK) rc = rdb_leaf_read_tapped(f, path, p, NULL, out, err);
  env_rfile_close(f);
  free(path);
  return rc;
}

int rdb_leaf_read_tapped(env_rfile_t *f, const char *path, const value_index_params_t *p,
                         const rdb_leaf_tap_t *tap, index_leaf_read_t *out, err_t *err) {
  build_t b = {.tap = tap};
  int rc = stock_leaf_begin(&b.leaf, path, p, out->terms, out->want_map, RDB_BLOCK_REF_BLOCKS, err);
  rdb_read_stats_t st = {0};
  if (rc == BFH_OK)
    rc = rdb_table_scan_rfile(f, path, add_value, b.leaf.blocks || tap ? end_block : NULL, &b, &st,
                              &out->tag, NULL, err);
  rc = stock_leaf_finish(&b.leaf, rc, RDB_BLOCK_REF_BLOCKS_UNMAPPED, out);
  out->bytes_read = st.bytes_read;
  return rc;
}

int rdb_table_tag_of(env_t *io, const char *dir, uint64_t number, uint64_t *tag, err_t *err) {
  char *path;
  int rc = rdb_table_path(dir, number, &path, err);
  if (rc != BFH_OK) return rc;
  rc = rdb_table_tag(io, path, tag, err);
  free(path);
  return rc;
}

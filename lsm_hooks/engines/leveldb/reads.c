/* The table reads both LevelDB engines make (adapter.h): the read-write one and the read-only
 * one (readonly.c) differ in where their list of live tables comes from, not in how a table
 * is read for a search or for its filters. */
#include <stdlib.h>

#include "bfh.h"
#include "lsm_hooks/engines/leveldb/adapter.h"
#include "lsm_hooks/leveldb_format/ldb_table.h"

static int visit_match(void *arg, const ldb_entry_t *e) {
  const stock_match_t *m = arg;
  if (!engine_value_test_passes(m->test, e->type == LDB_TYPE_VALUE, e->val, e->val_len)) return 0;
  return m->fn(m->arg, e->key, e->key_len, e->seq);
}

int ldb_table_match(env_t *io, const char *dir, uint64_t number, const block_ref_t *refs, size_t n,
                    const block_cache_use_t *use, const stock_match_t *m, engine_scan_stats_t *st,
                    err_t *err) {
  char *path;
  int rc = ldb_table_path(dir, number, &path, err);
  if (rc != BFH_OK) return rc;
  ldb_read_stats_t rs = {0};
  block_needle_t whole;
  const block_needle_t *nd;
  size_t nn = stock_match_needles(m, &whole, &nd);
  rc = refs ? ldb_table_read_blocks_cached(io, path, refs, n, use, nd, nn, visit_match, (void *)m,
                                           &rs, err)
            : ldb_table_scan(io, path, visit_match, (void *)m, &rs, err);
  free(path);
  st->entries += rs.entries;
  st->bytes_read += rs.bytes_read;
  return rc;
}

static int visit_hash(void *arg, const ldb_entry_t *e) {
  return e->type == LDB_TYPE_VALUE && stock_hashes_add(arg, e->val, e->val_len);
}

int ldb_table_hashes(env_t *io, const char *dir, uint64_t number, uint64_t seed,
                     const value_terms_t *terms, void (*fn)(void *arg, uint64_t hash), void *arg,
                     engine_scan_stats_t *st, err_t *err) {
  char *path;
  int rc = ldb_table_path(dir, number, &path, err);
  if (rc != BFH_OK) return rc;
  stock_hashes_t h = {seed, terms, fn, arg, path, err, BFH_OK};
  ldb_read_stats_t rs = {0};
  rc = ldb_table_scan(io, path, visit_hash, &h, &rs, err);
  free(path);
  if (st) {
    st->entries += rs.entries;
    st->bytes_read += rs.bytes_read;
  }
  return rc != BFH_OK ? rc : h.rc;
}

int ldb_table_match_rfile(env_rfile_t *f, const char *path, const block_ref_t *refs, size_t n,
                          const block_cache_use_t *use, const stock_match_t *m,
                          engine_scan_stats_t *st, err_t *err) {
  ldb_read_stats_t rs = {0};
  block_needle_t whole;
  const block_needle_t *nd;
  size_t nn = stock_match_needles(m, &whole, &nd);
  int rc = refs ? ldb_table_read_blocks_rfile_cached(f, path, refs, n, use, nd, nn, visit_match,
                                                     (void *)m, &rs, err)
                : ldb_table_scan_rfile(f, path, visit_match, (void *)m, &rs, err);
  st->entries += rs.entries;
  st->bytes_read += rs.bytes_read;
  return rc;
}

static int add_value(void *arg, const ldb_entry_t *e) {
  return e->type == LDB_TYPE_VALUE && stock_leaf_add(arg, e->val, e->val_len, e->seq);
}

int ldb_filter_read(env_t *io, const char *path, const value_index_params_t *p,
                    index_leaf_read_t *out, ldb_read_stats_t *st, err_t *err) {
  stock_leaf_build_t b;
  int rc = stock_leaf_begin(&b, path, p, out->terms, out->want_map, 0, err);
  if (rc == BFH_OK)
    rc = ldb_table_scan_tagged(io, path, add_value, b.blocks ? stock_leaf_end_block : NULL, &b, st,
                               &out->tag, err);
  return stock_leaf_finish(&b, rc, 0, out);
}

int ldb_leaf_read(env_t *io, const char *dir, uint64_t number, const value_index_params_t *p,
                  index_leaf_read_t *out, err_t *err) {
  char *path;
  int rc = ldb_table_path(dir, number, &path, err);
  if (rc != BFH_OK) return rc;
  ldb_read_stats_t st = {0};
  rc = ldb_filter_read(io, path, p, out, &st, err);
  free(path);
  out->bytes_read = st.bytes_read;
  return rc;
}

int ldb_table_tag_of(env_t *io, const char *dir, uint64_t number, uint64_t *tag, err_t *err) {
  char *path;
  int rc = ldb_table_path(dir, number, &path, err);
  if (rc != BFH_OK) return rc;
  rc = ldb_table_tag(io, path, tag, err);
  free(path);
  return rc;
}

int ldb_file_open(env_t *io, const char *dir, uint64_t number, stock_file_t **out, err_t *err) {
  char *path;
  int rc = ldb_table_path(dir, number, &path, err);
  return rc != BFH_OK ? rc : stock_file_open(sizeof(stock_file_t), io, path, out, err);
}

int ldb_file_match(stock_file_t *f, const block_ref_t *refs, size_t n, const block_cache_use_t *use,
                   const stock_match_t *m, engine_scan_stats_t *st, err_t *err) {
  return ldb_table_match_rfile(f->f, f->path, refs, n, use, m, st, err);
}

void ldb_file_keep(stock_file_t *f, block_ref_t ref, const uint8_t *raw,
                   const block_cache_use_t *use) {
  ldb_table_keep_block(f->path, env_rfile_size(f->f), ref, raw, use);
}

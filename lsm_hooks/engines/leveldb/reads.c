/* The table reads both LevelDB engines make (adapter.h): the read-write one and the read-only
 * one (readonly.c) differ in where their list of live tables comes from, not in how a table
 * is read for a search or for its filters. */
#include <stdlib.h>

#include "bfh.h"
#include "lsm_hooks/engines/leveldb/adapter.h"
#include "lsm_hooks/engines/leveldb/filter.h"
#include "lsm_hooks/leveldb_format/ldb_table.h"

static int visit_match(void *arg, const ldb_entry_t *e) {
  const stock_match_t *m = arg;
  if (!engine_value_test_passes(m->test, e->type == LDB_TYPE_VALUE, e->val, e->val_len)) return 0;
  return m->fn(m->arg, e->key, e->key_len, e->seq);
}

int ldb_table_match(env_t *io, const char *dir, uint64_t number, const block_ref_t *refs, size_t n,
                    const stock_match_t *m, engine_scan_stats_t *st, err_t *err) {
  char *path;
  int rc = ldb_table_path(dir, number, &path, err);
  if (rc != BFH_OK) return rc;
  ldb_read_stats_t rs = {0};
  rc = refs ? ldb_table_read_blocks(io, path, refs, n, visit_match, (void *)m, &rs, err)
            : ldb_table_scan(io, path, visit_match, (void *)m, &rs, err);
  free(path);
  st->entries += rs.entries;
  st->bytes_read += rs.bytes_read;
  return rc;
}

typedef struct hash_ctx {
  uint64_t seed;
  const value_terms_t *terms; /* the items each value is hashed as; NULL: the whole value */
  void (*fn)(void *arg, uint64_t hash);
  void *arg;
  int rc; /* BFH_E_NOMEM once an extraction failed */
} hash_ctx_t;

static int visit_hash(void *arg, const ldb_entry_t *e) {
  hash_ctx_t *h = arg;
  if (e->type == LDB_TYPE_VALUE &&
      value_terms_hash(h->terms, e->val, e->val_len, h->seed, 0, h->fn, h->arg) < 0)
    h->rc = BFH_E_NOMEM;
  return h->rc != BFH_OK;
}

int ldb_table_hashes(env_t *io, const char *dir, uint64_t number, uint64_t seed,
                     const value_terms_t *terms, void (*fn)(void *arg, uint64_t hash), void *arg,
                     engine_scan_stats_t *st, err_t *err) {
  char *path;
  int rc = ldb_table_path(dir, number, &path, err);
  if (rc != BFH_OK) return rc;
  hash_ctx_t h = {seed, terms, fn, arg, BFH_OK};
  ldb_read_stats_t rs = {0};
  rc = ldb_table_scan(io, path, visit_hash, &h, &rs, err);
  if (rc == BFH_OK && h.rc != BFH_OK)
    rc = err_set(err, h.rc, "table %s: no memory for its values' terms", path);
  free(path);
  if (st) {
    st->entries += rs.entries;
    st->bytes_read += rs.bytes_read;
  }
  return rc;
}

int ldb_table_match_rfile(env_rfile_t *f, const char *path, const block_ref_t *refs, size_t n,
                          const stock_match_t *m, engine_scan_stats_t *st, err_t *err) {
  ldb_read_stats_t rs = {0};
  int rc = refs ? ldb_table_read_blocks_rfile(f, path, refs, n, visit_match, (void *)m, &rs, err)
                : ldb_table_scan_rfile(f, path, visit_match, (void *)m, &rs, err);
  st->entries += rs.entries;
  st->bytes_read += rs.bytes_read;
  return rc;
}

int ldb_leaf_read(env_t *io, const char *dir, uint64_t number, const value_index_params_t *p,
                  index_leaf_read_t *out, err_t *err) {
  char *path;
  int rc = ldb_table_path(dir, number, &path, err);
  if (rc != BFH_OK) return rc;
  ldb_read_stats_t st = {0};
  ldb_filter_map_t map;
  rc =
      ldb_filter_build_items(io, path, p->m, p->k, p->seed, out->terms, p->block_bits, &out->filter,
                             &out->blocks, out->want_map ? &map : NULL, &out->tag, &st, err);
  free(path);
  if (rc == BFH_OK && out->want_map) {
    out->map_head = map.head;
    out->map_head_len = map.head_len;
    out->map_chunks = map.chunks;
    out->map_chunks_len = map.chunks_len;
  }
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

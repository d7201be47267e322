/* The persisted index (persisted_index.h) and the stamps of tables and cache files, as the
 * engines reach them: through index_sync (index_sync.h "The persisted index and stamps"), so
 * that no engine includes leaf_cache.h or persisted_index.h.
 */
#include <stdlib.h>
#include <string.h>

#include "index/index_sync.h"
#include "index/index_sync_private.h"
#include "index/leaf_cache.h"
#include "index/persisted_index.h"

_Static_assert(sizeof INDEX_SYNC_CACHE_DIR == sizeof LEAF_CACHE_DIR,
               "INDEX_SYNC_CACHE_DIR is leaf_cache.h's LEAF_CACHE_DIR");

int index_sync_persists(const index_sync_t *s) {
  const value_index_params_t *p = index_sync_params(s);
  return p->lean_bits > 0 && p->block_maps && p->block_bits && !p->leaves_on_disk;
}

/* persisted_index_map_fn over the filter cache: the map of a bound table from its cache file
   (arg: the index_sync_t, whose source names the cache directory). */
static int open_cached_map(void *arg, uint64_t number, uint64_t size, uint64_t stamp,
                           const uint8_t *head, size_t head_len, value_block_map_t **out,
                           err_t *err) {
  index_sync_t *s = arg;
  char *cpath = index_sync_cache_path(s, number);
  if (!cpath)
    return err_set(err, BFH_E_NOMEM, "%s/%06llu.vf: no memory for its path", s->src.cache_dir,
                   (unsigned long long)number);
  leaf_cache_table_t t = {.number = number, .size = size, .stamp = stamp};
  int rc = leaf_cache_load_map_by_head(s->src.io, cpath, &t, index_sync_params(s)->m, head,
                                       head_len, out, err);
  free(cpath);
  return rc;
}

int index_sync_persisted_open(index_sync_t *s, env_t *io, const char *dir, int cached,
                              index_persisted_t **x) {
  value_index_t *vi = index_sync_value_index(s);
  persisted_index_binding_t b = {PERSISTED_INDEX_LEVELDB_TABLES, open_cached_map, s};
  err_t e;
  err_clear(&e);
  int rc = cached ? persisted_index_open_bound(io, dir, value_index_params(vi), &b, x, &e)
                  : persisted_index_open(io, dir, value_index_params(vi), x, &e);
  if (rc == BFH_E_CORRUPT) block_index_count_damaged(value_index_blocks(vi), &e);
  return rc;
}

int index_sync_persisted_bind(index_persisted_t *x, uint64_t number, uint64_t size,
                              uint64_t stamp) {
  return persisted_index_bind(x, number, size, stamp);
}

size_t index_sync_persisted_bound(const index_persisted_t *x) {
  return persisted_index_bound(x);
}

void index_sync_persisted_destroy(index_persisted_t *x) {
  persisted_index_destroy(x);
}

void index_sync_persisted_attach(index_sync_t *s, index_persisted_t *x) {
  value_index_attach_persisted(index_sync_value_index(s), x);
}

uint64_t index_sync_persisted_damaged(index_sync_t *s) {
  return value_index_persisted_damaged(index_sync_value_index(s));
}

int index_sync_persisted_write(index_sync_t *s, env_t *io, const char *dir, int cached,
                               const index_persisted_table_t *t, size_t n, err_t *err) {
  persisted_index_table_t *pt = calloc(n ? n : 1, sizeof *pt);
  if (!pt) return err_set(err, BFH_E_NOMEM, "%s/%s: no memory", dir, PERSISTED_INDEX_FILE);
  for (size_t i = 0; i < n; i++)
    pt[i] = (persisted_index_table_t){t[i].number, t[i].size, t[i].stamp, t[i].head, t[i].head_len};
  value_index_t *vi = index_sync_value_index(s);
  int rc = cached ? persisted_index_write_kind(io, dir, PERSISTED_INDEX_LEVELDB_TABLES, vi, pt, n,
                                               NULL, err)
                  : persisted_index_write(io, dir, vi, pt, n, NULL, err);
  free(pt);
  return rc;
}

int index_sync_cached_map_head(index_sync_t *s, uint64_t number, uint64_t size, uint64_t stamp,
                               uint8_t **head, size_t *len, err_t *err) {
  char *cpath = index_sync_cache_path(s, number);
  if (!cpath)
    return err_set(err, BFH_E_NOMEM, "%s/%06llu.vf: no memory for its path", s->src.cache_dir,
                   (unsigned long long)number);
  leaf_cache_table_t t = {.number = number, .size = size, .stamp = stamp};
  int rc = leaf_cache_map_head(s->src.io, cpath, &t, index_sync_params(s)->m, head, len, err);
  free(cpath);
  return rc;
}

int index_sync_table_stamp(env_t *io, const char *path, uint64_t *stamp, err_t *err) {
  return persisted_index_table_stamp(io, path, stamp, err);
}

int index_sync_rfile_stamp(env_rfile_t *f, const char *path, uint64_t *stamp, err_t *err) {
  return persisted_index_rfile_stamp(f, path, stamp, err);
}

uint64_t index_sync_stamp(const env_file_stamp_t *st, const uint8_t *footer, size_t footer_len,
                          int64_t now_ns) {
  return leaf_cache_stamp(st, footer, footer_len, now_ns);
}

int index_sync_cache_check(env_t *io, const char *path, uint64_t number, uint64_t size,
                           uint64_t tag, uint64_t m, uint32_t k, uint64_t seed, err_t *err) {
  leaf_cache_table_t t = {.number = number, .size = size, .tag = tag};
  return leaf_cache_check(io, path, &t, m, k, seed, err);
}

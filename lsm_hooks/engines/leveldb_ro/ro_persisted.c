/* The persisted index of a read-only handle (index/persisted_index.h; doc/search.md
 * "The persisted index"): <index_dir>/BFH-INDEX, never in the database's directory (bfh_open
 * refuses an index directory inside it).
 *
 * Open: after the first refresh listed the live tables, the file (if any) is opened, each
 * live table is stamped (ro_table_stamp: an fstat and its 48-byte footer, doc/format.md
 * "Table stamp") and bound when its number, size and stamp are the file's; the file is then
 * attached to the value index. A bound table is not read at open (index_sync's parking run
 * leaves it): a search asks the file about it, and when it is selected its map comes from its
 * cache file, bound by the same stamp and checked against the head the file holds (open_map
 * below, leaf_cache_load_map_by_head). A table not bound (newer than the file, a stamp of 0,
 * another file under its number) is indexed from its cache file as before.
 *
 * Close: the file is written (persisted_index_write_kind, tmp + sync + rename + directory
 * sync) when more than an eighth of the live tables of now are not bound to it (all of them
 * when there is none, or its header or directory is damaged, or it was made for other tables),
 * or a search met a damaged chunk or map head in it, and this handle searched
 * through the index (its loader was started: a handle that only scans or gets pays nothing).
 * The close then waits for its loader to enter every leaf (those it read at open are parked,
 * cheap to enter). So the handle that builds the filter cache writes the file, a missing or
 * damaged file is made again by the next search, and under a writer that keeps making tables
 * the file is made again about once per eighth of the tables turned over; meanwhile the
 * tables it does not bind cost what they cost before it (their cache files read at open).
 * Each table is written with its stamp of now and its map head from its cache file, both
 * bound by that stamp; a table whose cache file is not bound to that stamp, or too fresh to
 * be stamped, is left out (indexed as before).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lsm_hooks/engines/leveldb_ro/ro_internal.h"
#include "index/index_sync.h"
#include "util/path.h"

/* Does this handle keep the persisted index (an index directory, the lean layout with maps,
   leaves in memory)? */
static int persists(const engine_ro_t *r) {
  if (!r->sync || !r->index_dir || !r->cache_dir) return 0;
  const value_index_params_t *p = index_sync_params(r->sync);
  return p->lean_bits > 0 && p->block_maps && p->block_bits && !p->leaves_on_disk;
}

/* The path of table number's cache file, in memory of its own (client frees it with free());
   NULL only on no memory. */
static char *cache_path(const engine_ro_t *r, uint64_t number) {
  return path_fmt("%s/%06llu.vf", r->cache_dir, (unsigned long long)number);
}

/* persisted_index_map_fn: the map of a bound table from its cache file. */
static int open_map(void *arg, uint64_t number, uint64_t size, uint64_t stamp, const uint8_t *head,
                    size_t head_len, value_block_map_t **out, err_t *err) {
  engine_ro_t *r = arg;
  char *cpath = cache_path(r, number);
  if (!cpath)
    return err_set(err, BFH_E_NOMEM, "%s/%06llu.vf: no memory for its path", r->cache_dir,
                   (unsigned long long)number);
  leaf_cache_table_t t = {.number = number, .size = size, .stamp = stamp};
  int rc = leaf_cache_load_map_by_head(r->io, cpath, &t, index_sync_params(r->sync)->m, head,
                                       head_len, out, err);
  free(cpath);
  return rc;
}

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

void ro_persisted_open(engine_ro_t *r) {
  if (!persists(r) || !r->state) return;
  value_index_t *vi = index_sync_value_index(r->sync);
  persisted_index_binding_t b = {PERSISTED_INDEX_LEVELDB_TABLES, open_map, r};
  persisted_index_t *x = NULL;
  err_t e;
  err_clear(&e);
  int rc = persisted_index_open_bound(r->io, r->index_dir, value_index_params(vi), &b, &x, &e);
  if (rc == BFH_E_CORRUPT) block_index_count_damaged(value_index_blocks(vi), &e);
  if (rc != BFH_OK) return;
  const ro_state_t *s = r->state;
  r->bound = malloc((s->ntables ? s->ntables : 1) * sizeof *r->bound);
  r->nbound = 0;
  for (size_t i = 0; i < s->ntables; i++) {
    uint64_t stamp = 0;
    if (ro_table_stamp(r, s->tables[i].number, &stamp, &e) == BFH_OK && stamp &&
        persisted_index_bind(x, s->tables[i].number, s->tables[i].size, stamp) && r->bound)
      r->bound[r->nbound++] = s->tables[i].number;
  }
  if (persisted_index_bound(x) == 0) {
    persisted_index_destroy(x);
    return;
  }
  value_index_attach_persisted(vi, x);
  r->attached = 1;
}

/* The tables of s that the file this handle opened does not bind. */
static size_t unbound(const engine_ro_t *r, const ro_state_t *s) {
  size_t u = 0;
  for (size_t i = 0; i < s->ntables; i++) {
    uint64_t n = s->tables[i].number;
    u += !r->bound || !bsearch(&n, r->bound, r->nbound, sizeof n, cmp_u64);
  }
  return u;
}

/* Writes the file for the tables of s that have a leaf. */
static void write_file(engine_ro_t *r, const ro_state_t *s) {
  value_index_t *vi = index_sync_value_index(r->sync);
  uint64_t m = index_sync_params(r->sync)->m;
  persisted_index_table_t *t = calloc(s->ntables ? s->ntables : 1, sizeof *t);
  size_t nt = 0;
  for (size_t i = 0; t && i < s->ntables; i++) {
    err_t e;
    leaf_cache_table_t lt = {.number = s->tables[i].number, .size = s->tables[i].size};
    if (ro_table_stamp(r, lt.number, &lt.stamp, &e) != BFH_OK || !lt.stamp) continue;
    char *cpath = cache_path(r, lt.number); /* no memory: the table is left out, as unread */
    uint8_t *head = NULL;
    size_t len = 0;
    int rc = cpath ? leaf_cache_map_head(r->io, cpath, &lt, m, &head, &len, &e) : BFH_E_NOMEM;
    free(cpath);
    if (rc != BFH_OK) continue;
    t[nt++] = (persisted_index_table_t){lt.number, lt.size, lt.stamp, head, len};
  }
  err_t e;
  if (t && nt)
    (void)persisted_index_write_kind(r->io, r->index_dir, PERSISTED_INDEX_LEVELDB_TABLES, vi, t, nt,
                                     NULL, &e); /* a speed-up: a file not written leaves the old */
  for (size_t i = 0; t && i < nt; i++) free((void *)t[i].head);
  free(t);
}

void ro_persisted_close(engine_ro_t *r) {
  if (!persists(r)) return;
  value_index_t *vi = index_sync_value_index(r->sync);
  ro_state_t *s = r->state;
  int due = s && s->ntables &&
            (unbound(r, s) * 8 > s->ntables || value_index_persisted_damaged(vi) > 0);
  if (due && index_sync_loader_went(r->sync)) {
    /* Every live table's leaf in first, then the cache files not written yet, then the file. */
    err_t e;
    (void)index_sync_loader_wait(r->sync, NULL, &e);
    index_sync_loader_stop(r->sync);
    index_sync_close_caches(r->sync);
    write_file(r, s);
  }
  if (r->attached) value_index_attach_persisted(vi, NULL); /* its open_map borrows r */
  r->attached = 0;
  free(r->bound);
  r->bound = NULL;
}

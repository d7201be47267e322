/* The persisted index of a read-only stock handle whose format stamps its tables
 * (stock_ro_format_t.source.table_stamp: LevelDB's; index/persisted_index.h; doc/search.md
 * "The persisted index"): <index_dir>/BFH-INDEX, never in the database's directory (bfh_open
 * refuses an index directory inside it).
 *
 * Open: after the first refresh listed the live tables, the file (if any) is opened, each
 * live table is stamped (LevelDB's stamp: an fstat and its 48-byte footer, doc/format.md
 * "Table stamp") and bound when its number, size and stamp are the file's; the file is then
 * attached to the value index. A bound table is not read at open (index_sync's parking run
 * leaves it): a search asks the file about it, and when it is selected its map comes from its
 * cache file, bound by the same stamp and checked against the head the file holds (open_map
 * by index_sync, index_sync_persisted_open). A table not bound (newer than the file, a stamp of 0,
 * another file under its number) is indexed from its cache file as before.
 *
 * Close: the file is written (index_sync_persisted_write, tmp + sync + rename + directory
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
#include <stdlib.h>

#include "index/index_sync.h"
#include "lsm_hooks/engines/stock/stock_ro.h"
#include "util/vec.h"

/* Does this handle keep the persisted index (a format that stamps its tables, an index
   directory, the lean layout with maps, leaves in memory)? */
static int persists(const stock_ro_t *r) {
  return r->fmt->source.table_stamp && r->sync && r->index_dir && r->cache_dir &&
         index_sync_persists(r->sync);
}

static int table_stamp(stock_ro_t *r, uint64_t number, uint64_t *stamp, err_t *err) {
  return r->fmt->source.table_stamp(r, number, stamp, err);
}

void stock_ro_persisted_open(stock_ro_t *r) {
  if (!persists(r) || !r->state) return;
  index_persisted_t *x = NULL;
  if (index_sync_persisted_open(r->sync, r->io, r->index_dir, 1, &x) != BFH_OK) return;
  const stock_ro_state_t *s = r->state;
  r->bound = malloc((s->ntables ? s->ntables : 1) * sizeof *r->bound);
  r->nbound = 0;
  for (size_t i = 0; i < s->ntables; i++) {
    uint64_t stamp = 0;
    err_t e;
    if (table_stamp(r, s->tables[i].number, &stamp, &e) == BFH_OK && stamp &&
        index_sync_persisted_bind(x, s->tables[i].number, s->tables[i].size, stamp) && r->bound)
      r->bound[r->nbound++] = s->tables[i].number;
  }
  if (index_sync_persisted_bound(x) == 0) {
    index_sync_persisted_destroy(x);
    return;
  }
  index_sync_persisted_attach(r->sync, x);
  r->attached = 1;
}

/* The tables of s that the file this handle opened does not bind. */
static size_t unbound(const stock_ro_t *r, const stock_ro_state_t *s) {
  size_t u = 0;
  for (size_t i = 0; i < s->ntables; i++)
    u += !r->bound || !u64_sorted_contains(r->bound, r->nbound, s->tables[i].number);
  return u;
}

/* Writes the file for the tables of s that have a leaf. */
static void write_file(stock_ro_t *r, const stock_ro_state_t *s) {
  index_persisted_table_t *t = calloc(s->ntables ? s->ntables : 1, sizeof *t);
  size_t nt = 0;
  for (size_t i = 0; t && i < s->ntables; i++) {
    err_t e;
    index_persisted_table_t *row = &t[nt];
    *row = (index_persisted_table_t){.number = s->tables[i].number, .size = s->tables[i].size};
    if (table_stamp(r, row->number, &row->stamp, &e) != BFH_OK || !row->stamp) continue;
    uint8_t *head = NULL; /* no memory, no map: the table is left out, as unread */
    if (index_sync_cached_map_head(r->sync, row->number, row->size, row->stamp, &head,
                                   &row->head_len, &e) != BFH_OK)
      continue;
    row->head = head;
    nt++;
  }
  err_t e;
  if (t && nt) /* a speed-up: a file not written leaves the old */
    (void)index_sync_persisted_write(r->sync, r->io, r->index_dir, 1, t, nt, &e);
  for (size_t i = 0; t && i < nt; i++) free((void *)t[i].head);
  free(t);
}

void stock_ro_persisted_close(stock_ro_t *r) {
  if (!persists(r)) return;
  stock_ro_state_t *s = r->state;
  index_sync_t *sync = r->sync;
  int due =
      s && s->ntables && (unbound(r, s) * 8 > s->ntables || index_sync_persisted_damaged(sync) > 0);
  if (due && index_sync_loader_went(sync)) {
    /* Every live table's leaf in first, then the cache files not written yet, then the file. */
    err_t e;
    (void)index_sync_loader_wait(sync, NULL, &e);
    index_sync_loader_stop(sync);
    index_sync_close_caches(sync);
    write_file(r, s);
  }
  if (r->attached) index_sync_persisted_attach(sync, NULL); /* before the handle goes */
  r->attached = 0;
  free(r->bound);
  r->bound = NULL;
}

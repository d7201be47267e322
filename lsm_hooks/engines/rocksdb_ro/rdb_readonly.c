/* The read-only RocksDB engine (rdb_readonly.h): its design, then open and close
 * (rro_internal.h maps the other files of the folder). The LevelDB read-only engine
 * (leveldb_ro/readonly.c) is its model; what differs is RocksDB's.
 *
 * A refresh (at every view, so at every search, and at every bfh_get) brings the state up to
 * the database's newest version. It starts with a poll of an inotify watch on the directory
 * (dir_watch.h: files made, renamed, removed or written; the directory moved): when the poll
 * finds nothing, the last refresh succeeded and no read found a file gone since, nothing was
 * written since that refresh began and its state is still the newest: the refresh ends there,
 * one read(2). Otherwise (and without a watch) it reads:
 *   1. read CURRENT and the MANIFEST it names (rdb_manifest.h): from where the last read
 *      stopped while the name and the file are the same (RocksDB only appends to a MANIFEST
 *      until it starts a new one, at an open or past max_manifest_file_size), whole when it
 *      changed; a record cut short at the end is an edit in flight, read next time. This gives
 *      version V: the default column family's tables and its log number L.
 *   2. list the directory's WALs (rdb_version_live_logs) and read every one numbered >= L
 *      (rdb_version_log_wanted for the default column family) from where the last read
 *      stopped (a record cut short at the end is a write in flight), keeping only the default
 *      column family's entries; drop what was read of the others.
 *   3. read the MANIFEST again. If the default column family's log number is no longer L,
 *      start over at 1; else the state is the tables of this newest version V' plus the
 *      entries read in 2.
 * Why that state holds every write acknowledged before the refresh began, and no write
 * undone: RocksDB writes a memtable's table, then the edit that adds it and raises the
 * column family's log number past the memtable's WAL, and only then deletes the WAL (once no
 * column family needs it); a compaction writes its tables, then the edit, then deletes its
 * inputs. So a write acknowledged before step 1 is in a WAL >= L (read to its end in 2) or
 * in V's tables, still in V' (V' differs from V only by compactions and other column
 * families' flushes: L did not move). A WAL >= L can be gone in 2 only after an edit raising
 * L, which 3 sees. WAL entries are newer than every table entry of the default column family
 * (their memtable is not flushed), so a lookup reads the WAL chunks first.
 * Files of V' may still vanish after 3, so the refresh ends by opening every table of V' (a
 * pin, shared by the states that list it): an unlinked file stays readable through its
 * descriptor. A table gone before its open was deleted after an edit the next MANIFEST read
 * sees: start over (gone again with nothing new read: the MANIFEST names a missing table,
 * BFH_E_CORRUPT). Beyond pin_max descriptors a table is read by name, and a search that finds
 * it gone starts over from a new refresh (engine_ops_t.search_attempts), its keys reported only by
 * the attempt that read every table it listed. Retries are bounded
 * (ENGINE_ROCKSDB_RO_ATTEMPTS), then BFH_E_BUSY. A MANIFEST, WAL or table that is another file
 * under its name (a database replaced at the path) is read anew, as the LevelDB engine does.
 *
 * A search validates its candidates against its own view: its gets read the view's state,
 * the WAL chunks newest first, then the tables whose key range holds the key, level 0 newest
 * first (by largest sequence), then each deeper level. A pinned table is looked up through
 * its key index (each data block's last key, made by one read of the table the first time a
 * lookup needs it), so a lookup reads one data block per table.
 *
 * Range deletions are answered as RocksDB's Get answers them (rro_get.c): the WAL's
 * DeleteRange records go into their chunk, each table's range-deletion block is read with its
 * key index (a range tombstone widens its table's key range, so every lookup of a key it may
 * cover reaches that table), both fragmented (stock_tombs.c); a key's newest entry is deleted
 * when a tombstone met before it in lookup order, or in its own table, has a larger sequence.
 *
 * What the engine does not answer is refused (BFH_E_UNSUPPORTED naming it), never guessed:
 * merge operands, blob references and wide-column entities (as the read-write engine,
 * rocksdb/rdb_reads.c).
 */
#include "lsm_hooks/engines/rocksdb_ro/rdb_readonly.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lsm_hooks/engines/engine_detect.h"
#include "lsm_hooks/engines/rocksdb/rdb_adapter.h"
#include "lsm_hooks/engines/rocksdb_ro/rro_internal.h"
#include "index/index_sync.h"

static int e_close(engine_t *e, err_t *err) {
  (void)err;
  rro_t *r = (rro_t *)e;
  if (!r) return BFH_OK;
  if (r->sync) index_sync_loader_stop(r->sync); /* it reads through r */
  if (r->sync && r->cache_dir) index_sync_close_caches(r->sync);
  rro_state_unref(r->state);
  dir_watch_release(&r->watch);
  for (size_t i = 0; i < r->nlogs; i++) rro_log_release(&r->logs[i]);
  free(r->logs);
  env_rfile_close(r->manifest_file);
  rdb_version_release(&r->version);
  pthread_mutex_destroy(&r->mu);
  pthread_mutex_destroy(&r->state_mu);
  free(r->path);
  free(r->cf_name);
  free(r->cache_dir);
  free(r);
  return BFH_OK;
}

/* Nothing written: only the WAL chunks' value indexes. */
static void e_stats(engine_t *e, bfh_db_stats *st) {
  rro_t *r = (rro_t *)e;
  pthread_mutex_lock(&r->mu);
  for (size_t i = 0; i < r->nlogs; i++)
    for (size_t j = 0; j < r->logs[i].n; j++)
      st->memtable_index_bytes += stock_segs_index_bytes(&r->logs[i].chunks[j]->vals, 1);
  pthread_mutex_unlock(&r->mu);
}

static void rro_retried(engine_t *e) {
  atomic_fetch_add(&((rro_t *)e)->retries, 1);
}

static const engine_ops_t rro_ops = {.name = "rocksdb-readonly",
                                     .close = e_close,
                                     .put = stock_ro_put,
                                     .del = stock_ro_del,
                                     .get = rro_get,
                                     .flush = stock_ro_flush,
                                     .view_acquire = rro_view_acquire,
                                     .view_release = rro_view_release,
                                     .view_tables = stock_view_tables,
                                     .scan_table = rro_scan_table,
                                     .scan_memtables = stock_scan_memtables,
                                     .scan_blocks = rro_scan_blocks,
                                     .find_memtables = stock_find_memtables,
                                     .iter_create = rro_iter_create,
                                     .stats = e_stats,
                                     .search_attempts = ENGINE_ROCKSDB_RO_ATTEMPTS,
                                     .retried = rro_retried};

/* ---- Opening ---------------------------------------------------------------------------- */

/* Through the newest state's pin when it holds the table: a table compacted away since it
   was listed is still read (by name it would be gone, and its leaf never made while a view
   waits for it). The read passes over the whole table: the pin's key index and range
   tombstones are taken from it on the way (a lookup then reads no index block), so that
   building the filters and the first search's lookups read each table once. */
static int read_leaf(void *ctx, uint64_t number, const value_index_params_t *p,
                     index_leaf_read_t *out, err_t *err) {
  rro_t *r = ctx;
  rro_pin_t *pin = rro_newest_pin(r, number);
  if (!pin) return rdb_leaf_read(r->io, r->path, number, p, out, err);
  rro_keys_t k = {0};
  rdb_leaf_tap_t tap = {rro_keys_tap_entry, rro_keys_tap_block, &k};
  int tapped = rro_pin_keys_wanted(pin);
  int rc = rdb_leaf_read_tapped(pin->f, pin->path, p, tapped ? &tap : NULL, out, err);
  if (rc == BFH_OK && tapped)
    rro_pin_keys_install(pin, &k);
  else
    rro_keys_release(&k);
  rro_pin_unref(pin);
  return rc;
}

static int table_tag(void *ctx, uint64_t number, uint64_t *tag, err_t *err) {
  rro_t *r = ctx;
  return rdb_table_tag_of(r->io, r->path, number, tag, err);
}

static int source_init(rro_t *r, const char *index_dir, err_t *err) {
  index_source_t src = {.read_leaf = read_leaf, .ctx = r, .table_tag = table_tag, .io = r->io};
  return stock_ro_cache_init(r->sync, r->path, index_dir, src, &r->cache_dir, err);
}

int engine_rocksdb_ro_open(const char *path, const bfh_options *opt, struct env *io,
                           index_sync_t *sync, engine_t **out, err_t *err) {
  /* (That the index directory lies outside path bfh_open checked before any engine's open.) */
  int rc = stock_ro_check_directory(path, ENGINE_DIR_ROCKSDB, "RocksDB", err);
  if (rc != BFH_OK) return rc;
  rro_t *r = calloc(1, sizeof *r);
  if (!r) return err_set(err, BFH_E_NOMEM, "%s: no memory", path);
  r->base.ops = &rro_ops;
  r->io = io ? io : env_default();
  r->sync = sync;
  r->pin_max = stock_ro_pin_max();
  pthread_mutex_init(&r->mu, NULL);
  pthread_mutex_init(&r->state_mu, NULL);
  r->watch.fd = -1;
  atomic_init(&r->stale, 1);
  if (!(r->path = strdup(path)) ||
      !(r->cf_name = strdup(opt->column_family ? opt->column_family : "default")))
    rc = err_set(err, BFH_E_NOMEM, "%s: no memory", path);
  /* Before the first refresh (dir_watch.h's rule). Only over the real file system: a test's
     I/O layer may change what a read sees without the kernel knowing. */
  if (rc == BFH_OK && r->io == env_default())
    (void)dir_watch_init(&r->watch, r->path, DIR_WATCH_CONTENTS);
  if (rc == BFH_OK && opt->index_dir) rc = stock_make_dirs(opt->index_dir, err);
  if (rc == BFH_OK && sync) rc = source_init(r, opt->index_dir, err);
  if (rc == BFH_OK) {
    pthread_mutex_lock(&r->mu);
    rc = rro_refresh(r, err);
    /* The live tables are indexed in the open, so that the first search is planned over
       their filters. */
    if (rc == BFH_OK && sync) rc = rro_view_index_state(r, r->state, NULL, err);
    pthread_mutex_unlock(&r->mu);
  }
  if (rc == BFH_OK && r->cache_dir)
    stock_ro_cache_clean(r->io, r->cache_dir, r->state->tables, r->state->ntables);
  if (rc == BFH_OK && sync) {
    err_t e; /* a failure here is the first view's to report: it tries again */
    (void)stock_ro_view_load(r->sync, 1, &e);
  }
  if (rc != BFH_OK) {
    e_close(&r->base, NULL);
    return rc;
  }
  *out = &r->base;
  return BFH_OK;
}

int engine_rocksdb_ro_describe(engine_t *e, uint64_t number, bfh_table_info *info, err_t *err) {
  rro_t *r = (rro_t *)e;
  int rc = rdb_describe_table(r->io, r->path, number, info, err);
  return rro_table_status(r, rc, number, err); /* compacted away since it was listed */
}

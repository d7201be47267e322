/* The read-only LevelDB engine (readonly.h): its design, then open and close (ro_internal.h maps
 * the other files of the folder).
 *
 * A refresh (at every view, so at every search, and at every bfh_get) brings the engine's
 * state up to the database's newest version. It starts with a poll of an inotify watch on the
 * directory (dir_watch.h: files made, renamed, removed or written; the directory moved): when
 * the poll finds nothing, the last refresh succeeded and no read found a file gone since,
 * nothing was written since that refresh began and its state is still the newest: the refresh
 * ends there, one read(2). Otherwise (and without a watch) it reads:
 *   1. read CURRENT and the MANIFEST it names: from where the last read stopped while the
 *      name is the same (LevelDB only appends to a MANIFEST), whole when it changed; a
 *      record cut short at the end is an edit in flight, read next time. This gives version
 *      V: its tables and its log number L.
 *   2. list the directory and read every log numbered >= L (and V's prev log number) from
 *      where the last read stopped (a record cut short at the end is a write in flight);
 *      drop what was read of older logs.
 *   3. read the MANIFEST again (usually nothing new). If its log number is no longer L,
 *      start over at 1; else the state is the tables of this newest version V' plus the
 *      entries read in 2.
 * Why that state holds every write acknowledged before the refresh began, and no write
 * undone: LevelDB writes a memtable's table, then the edit that adds it and raises the log
 * number past the memtable's log, and only then deletes that log; a compaction writes its
 * tables, then the edit, then deletes its inputs. So a write acknowledged before step 1 is
 * in a log >= L (read to its end in 2, after the write) or in a log < L, whose data is in
 * V's tables, and still in V' (V' differs from V only by compactions: the log number did not
 * move). A log >= L can be gone in 2 only after an edit raising the log number was written,
 * which 3 sees (it reads after the deletion). The entries read in 2 are a prefix of the
 * writes in sequence order on top of V''s tables: a state the database passed through.
 * Files of V' may still vanish after 3 (a compaction's inputs are deleted once its edit is
 * written). So the refresh ends by opening every table of V' (a pin_t per table, shared by
 * the states that list it): an unlinked file stays readable through its descriptor, and
 * every later read of the state goes through it. A table gone before its open was deleted
 * after an edit the next MANIFEST read sees: start over at 1 (gone again with nothing new in
 * the MANIFEST: the MANIFEST names a missing table, damage). Beyond pin_max descriptors a
 * table is read by name: a table read that finds its file gone (ENOENT) then makes the
 * search start over with a new refresh (engine_ops_t.search_attempts: search.c starts it over), and
 * its keys are reported only by the attempt that read every table it listed, so each once. A
 * MANIFEST replaced between reading CURRENT and reading it is the same: start over. Retries are
 * bounded (ENGINE_LEVELDB_RO_ATTEMPTS), then BFH_E_BUSY.
 *
 * A search validates its candidates against its own view (the state of its refresh): the
 * gets it makes pass that view (engine_ops_t.get), and read its state: logs newest first,
 * then the tables by level (level 0 newest first), each table only if its key range holds
 * the key. A bfh_get (no view) refreshes first.
 *
 * An iterator (bfh_iter_*) refreshes, then reads every entry of that state (its logs and
 * every table of its version) into memory (sorted_iter.h) and iterates there: the files it
 * read may vanish afterwards without harm. A table gone before it was read starts the read
 * over from a new refresh, as a search does.
 *
 * A log read can race the owner's append and see part of a write(2): a record that looks
 * damaged. Such a refresh is started over too; damage that stays for every attempt is
 * reported (BFH_E_CORRUPT).
 *
 * A database replaced at the path (removed, and another made there: stock LevelDB gives the
 * new one the same MANIFEST name, log and table numbers, often the same sizes) must not be
 * read as the old one went on. Names are not identities, so the engine holds open the MANIFEST
 * it reads, each log it reads and (pins) each table of its state, and compares the file a name
 * gives now (one stat, which the refresh made for the size anyway) with the file it holds
 * (device and inode: a file held open keeps its inode, so another file cannot have it):
 *   - the MANIFEST (every read): another file under the name, or a shorter one, is a new
 *     database: what was read of the MANIFEST and the logs is dropped, and the refresh starts
 *     over (step 3 sees a change made after step 1);
 *   - a log (every read): another file is read from its start, its old entries dropped;
 *   - the tables: after the MANIFEST was read whole (another name or another file), the pin a
 *     table number had is kept only if its name still gives that file, else the new file is
 *     pinned. Every table's identity goes to index_sync with the live list
 *     (index_table_t.id), which drops a leaf made from another file and reads the table again.
 * A table beyond pin_max is not held: its identity is its name's device and inode, taken after
 * each whole MANIFEST read (an inode freed and given again to the new table would go
 * unnoticed there). A search running across the replacement answers from its own state.
 */
#include "lsm_hooks/engines/leveldb_ro/readonly.h"
#include "lsm_hooks/engines/engine_detect.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "lsm_hooks/engines/leveldb/precheck.h"
#include "lsm_hooks/engines/leveldb_ro/ro_internal.h"
#include "index/index_sync.h"

/* ---- engine_ops ------------------------------------------------------------------------- */

static int e_close(engine_t *e, err_t *err) {
  (void)err;
  engine_ro_t *r = (engine_ro_t *)e;
  if (!r) return BFH_OK;
  ro_persisted_close(r); /* before the loader stops: it may wait for every leaf */
  if (r->sync) index_sync_loader_stop(r->sync); /* it reads through r */
  if (r->sync && r->cache_dir) index_sync_close_caches(r->sync);
  ro_state_unref(r->state);
  dir_watch_release(&r->watch);
  for (size_t i = 0; i < r->nlogs; i++) ro_log_release(&r->logs[i]);
  free(r->logs);
  env_rfile_close(r->manifest_file);
  ldb_version_release(&r->version);
  pthread_mutex_destroy(&r->mu);
  free(r->path);
  free(r->cache_dir);
  free(r->index_dir);
  free(r->bound);
  free(r);
  return BFH_OK;
}

/* Nothing written: only the logs' value indexes. */
static void e_stats(engine_t *e, bfh_db_stats *st) {
  engine_ro_t *r = (engine_ro_t *)e;
  pthread_mutex_lock(&r->mu);
  for (size_t i = 0; i < r->nlogs; i++)
    for (size_t j = 0; j < r->logs[i].n; j++)
      st->memtable_index_bytes += stock_segs_index_bytes(&r->logs[i].chunks[j]->vals, 1);
  pthread_mutex_unlock(&r->mu);
}

static void ro_retried(engine_t *e) {
  atomic_fetch_add(&((engine_ro_t *)e)->retries, 1);
}

/* The engine_ops of the files of this folder (ENGINE_OPS with their ro_ names). */
static const engine_ops_t ro_ops = {.name = "leveldb-readonly",
                                    .close = e_close,
                                    .put = stock_ro_put,
                                    .del = stock_ro_del,
                                    .get = ro_get,
                                    .flush = stock_ro_flush,
                                    .view_acquire = ro_view_acquire,
                                    .view_release = ro_view_release,
                                    .view_tables = stock_view_tables,
                                    .scan_table = ro_scan_table,
                                    .scan_memtables = stock_scan_memtables,
                                    .scan_blocks = ro_scan_blocks,
                                    .find_memtables = stock_find_memtables,
                                    .iter_create = ro_iter_create,
                                    .stats = e_stats,
                                    .search_attempts = ENGINE_LEVELDB_RO_ATTEMPTS,
                                    .retried = ro_retried};

/* ---- Opening ---------------------------------------------------------------------------- */

static int read_leaf(void *ctx, uint64_t number, const value_index_params_t *p,
                     index_leaf_read_t *out, err_t *err) {
  engine_ro_t *r = ctx;
  return ldb_leaf_read(r->io, r->path, number, p, out, err);
}

static int table_tag(void *ctx, uint64_t number, uint64_t *tag, err_t *err) {
  engine_ro_t *r = ctx;
  return ldb_table_tag_of(r->io, r->path, number, tag, err);
}

static int table_stamp(void *ctx, uint64_t number, uint64_t *stamp, err_t *err) {
  return ro_table_stamp(ctx, number, stamp, err);
}

int ro_table_stamp(engine_ro_t *r, uint64_t number, uint64_t *stamp, err_t *err) {
  char *path;
  int rc = ldb_table_path(r->path, number, &path, err);
  if (rc != BFH_OK) return rc;
  env_rfile_t *f = NULL;
  rc = env_open_read(r->io, path, &f, err);
  if (rc != BFH_OK) {
    free(path);
    return rc;
  }
  env_file_stamp_t st;
  uint8_t footer[48];
  size_t got = 0;
  uint64_t size = env_rfile_size(f);
  rc = env_rfile_stamp(f, &st, err);
  if (rc == BFH_OK && size < sizeof footer)
    rc = err_set(err, BFH_E_CORRUPT, "%s: %llu bytes, shorter than a footer", path,
                 (unsigned long long)size);
  if (rc == BFH_OK) rc = env_rfile_pread(f, size - sizeof footer, footer, sizeof footer, &got, err);
  if (rc == BFH_OK && got != sizeof footer)
    rc = err_set(err, BFH_E_CORRUPT, "%s: footer cut short", path);
  env_rfile_close(f);
  free(path);
  struct timespec now;
  clock_gettime(CLOCK_REALTIME, &now);
  if (rc == BFH_OK)
    *stamp = index_sync_stamp(&st, footer, sizeof footer,
                              (int64_t)now.tv_sec * 1000000000 + now.tv_nsec);
  return rc;
}

/* The filter cache in the index directory (or none), as index_sync's source. */
static int source_init(engine_ro_t *r, const char *index_dir, err_t *err) {
  if (index_dir && !(r->index_dir = strdup(index_dir)))
    return err_set(err, BFH_E_NOMEM, "%s: no memory", r->path);
  index_source_t src = {.read_leaf = read_leaf,
                        .ctx = r,
                        .table_tag = table_tag,
                        .table_stamp = table_stamp,
                        .io = r->io};
  return stock_ro_cache_init(r->sync, r->path, index_dir, src, &r->cache_dir, err);
}

int engine_leveldb_ro_open(const char *path, const bfh_options *opt, struct env *io,
                           index_sync_t *sync, engine_t **out, err_t *err) {
  int rc = stock_ro_check_directory(path, ENGINE_DIR_LEVELDB, "LevelDB", err);
  if (rc != BFH_OK) return rc;
  engine_ro_t *r = calloc(1, sizeof *r);
  if (!r) return err_set(err, BFH_E_NOMEM, "%s: no memory", path);
  r->base.ops = &ro_ops;
  r->io = io ? io : env_default();
  r->sync = sync;
  r->pin_max = stock_ro_pin_max();
  pthread_mutex_init(&r->mu, NULL);
  r->watch.fd = -1;
  atomic_init(&r->stale, 1);
  if (!(r->path = strdup(path))) rc = err_set(err, BFH_E_NOMEM, "%s: no memory", path);
  /* Before the first refresh (dir_watch.h's rule). Only over the real file system: a test's
     I/O layer may change what a read sees without the kernel knowing. */
  if (rc == BFH_OK && r->io == env_default())
    (void)dir_watch_init(&r->watch, r->path, DIR_WATCH_CONTENTS);
  if (rc == BFH_OK && opt->index_dir) rc = stock_make_dirs(opt->index_dir, err);
  if (rc == BFH_OK && sync) rc = source_init(r, opt->index_dir, err);
  if (rc == BFH_OK) {
    pthread_mutex_lock(&r->mu);
    rc = ro_refresh(r, err);
    /* The live tables are indexed in the open (stock_ro_view_load), so that the first search is
       planned over their filters: planned before, it would find none and read every table
       (doc/search.md "Open cost"). */
    if (rc == BFH_OK && sync) rc = ro_view_index_state(r, r->state, NULL, err);
    pthread_mutex_unlock(&r->mu);
  }
  if (rc == BFH_OK && r->cache_dir)
    stock_ro_cache_clean(r->io, r->cache_dir, r->state->tables, r->state->ntables);
  /* The persisted index first: the tables it binds need no cache file read now. */
  if (rc == BFH_OK && sync) ro_persisted_open(r);
  if (rc == BFH_OK && sync) {
    /* A failure here (no memory, a leaf on disk not written) is the first view's to report:
       it tries again. */
    err_t e;
    (void)stock_ro_view_load(r->sync, 1, &e);
  }
  if (rc != BFH_OK) {
    e_close(&r->base, NULL);
    return rc;
  }
  *out = &r->base;
  return BFH_OK;
}

void engine_leveldb_ro_set_read_hook(engine_t *e, void (*fn)(void *arg, uint64_t number),
                                     void *arg) {
  engine_ro_t *r = (engine_ro_t *)e;
  r->read_hook = fn;
  r->read_hook_arg = arg;
}

void engine_leveldb_ro_set_logs_hook(engine_t *e, void (*fn)(void *arg), void *arg) {
  engine_ro_t *r = (engine_ro_t *)e;
  r->logs_hook = fn;
  r->logs_hook_arg = arg;
}

uint64_t engine_leveldb_ro_retries(engine_t *e) {
  return atomic_load(&((engine_ro_t *)e)->retries);
}

uint64_t engine_leveldb_ro_refreshes(engine_t *e) {
  return atomic_load(&((engine_ro_t *)e)->refreshes);
}

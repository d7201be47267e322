/* The own engine's read-only row (lsm_readonly.h): its design, then open and close
 * (lro_internal.h maps the other files of the folder).
 *
 * A refresh (at every view, so at every search, and at every bfh_get) brings the handle's
 * state up to the database's newest version. It starts with a poll of an inotify watch on the
 * directory (dir_watch.h: files made, renamed, removed or written): when nothing was queued
 * since the last refresh that succeeded, that refresh's state is still the newest and the
 * refresh ends there, one read(2). Otherwise:
 *   1. read CURRENT and the MANIFEST it names, from where the last read stopped (a new
 *      MANIFEST from its start: its first edit is a snapshot). A record cut short at the end
 *      is an edit the writer is still appending: it is read next time. This gives version V:
 *      its tables and its log number L.
 *   2. list the directory and read every log numbered >= L from where the last read of it
 *      stopped, into a memtable per log (a record cut short at the end is a write in flight);
 *      drop what was read of older logs.
 *   3. read the MANIFEST again (usually nothing new). If its log number is no longer L, start
 *      over at 1; else the state is the tables of this newest version V' plus the entries read
 *      in 2.
 * Why that state holds every write acknowledged before the refresh began, and no write
 * undone: the writer (lsm/db.c) writes a memtable's table, then the edit that adds it and
 * raises the log number past the memtable's log, and only then deletes that log; a compaction
 * writes its tables, then the edit, then deletes its inputs. So a write acknowledged before
 * step 1 is in a log >= L (read to its end in 2, after the write) or in a log < L, whose data
 * is in V's tables, and still in V' (V' differs from V only by compactions: the log number did
 * not move). A log >= L can be gone in 2 only after an edit raising the log number was
 * written, which 3 sees. The entries read in 2 are a prefix of the writes in sequence order on
 * top of V''s tables: a state the database passed through.
 *
 * Tables of V' may still vanish after 3 (a compaction's inputs are deleted once its edit is
 * written). So the state ends by opening every table of V' that the previous state did not
 * hold (table_open: its footer, index and meta index; the reader keeps the file open): an
 * unlinked file stays readable through its descriptor, and every read of the state goes
 * through its readers, so a search never finds a table gone and never starts over. A table
 * gone before its open was deleted after an edit the next MANIFEST read sees: start over at 1
 * (gone again with nothing new in the MANIFEST: the MANIFEST names a missing table, damage).
 * Retries are bounded (LSM_RO_ATTEMPTS), then BFH_E_BUSY. The writer keeps appending to a
 * log's memtable's file; the state records, per log, the last sequence number it read, and
 * reads no entry above it (the memtable itself grows under later refreshes: one writer, the
 * refresh, and lock-free readers, memtable.h).
 *
 * A search validates its candidates against its own view (the state of its refresh): the
 * gets it makes pass that view (engine_ops_t.get) and read that state: memtables newest log
 * first, then the tables (level 0 newest first, then by level), each only if its key range
 * holds the key. A bfh_get (no view) refreshes first.
 *
 * A log or MANIFEST read can race the writer's append and see part of a write(2): a record
 * that looks damaged. Such a refresh is started over; damage that stays for every attempt is
 * reported (BFH_E_CORRUPT naming the file and the record's offset). A MANIFEST (or log) that
 * is another file under its name than the one held open (a database replaced at the path) is
 * read anew from its start.
 *
 * Value filters: the tables carry them (the value hook's meta blocks, value_hook.h) and the
 * writer's BFH-INDEX (persisted_index.h) holds their folded leaves and map heads. At open the
 * live tables are stamped and bound to BFH-INDEX; a table it does not bind gets its block
 * filter (or map head) read at open and its leaf by the background loader, as in the
 * read-write engine (index_sync.h "Loading at open"). A table made after the open is indexed
 * by the view that first lists it. Nothing is written: no filter cache, no BFH-INDEX, no
 * BFH-PARAMS (bfh_open reads the database's own, ENGINE_CAP_PARAMS_IN_DB).
 */
#include "lsm_hooks/engines/lsm_ro/lsm_readonly.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lsm/filename.h"
#include "lsm_hooks/engines/engine_detect.h"
#include "lsm_hooks/engines/lsm/engine_lsm.h"
#include "lsm_hooks/engines/lsm/table_filters.h"
#include "lsm_hooks/engines/lsm_ro/lro_internal.h"
#include "index/index_sync.h"

/* ---- engine_ops ------------------------------------------------------------------------- */

static int e_close(engine_t *e, err_t *err) {
  (void)err;
  lro_t *r = (lro_t *)e;
  if (!r) return BFH_OK;
  if (r->sync) index_sync_loader_stop(r->sync); /* it reads through r */
  lro_state_unref(r->state);
  dir_watch_release(&r->watch);
  for (size_t i = 0; i < r->nlogs; i++) lro_log_release(&r->logs[i]);
  free(r->logs);
  env_rfile_close(r->manifest_file);
  lro_version_release(&r->version);
  pthread_mutex_destroy(&r->mu);
  free(r->path);
  free(r);
  return BFH_OK;
}

static int read_only(engine_t *e, const char *op, err_t *err) {
  return err_set(err, BFH_E_UNSUPPORTED, "%s: %s: read-only handle", ((lro_t *)e)->path, op);
}

static int e_put(engine_t *e, const void *key, size_t key_len, const void *val, size_t val_len,
                 err_t *err) {
  (void)key, (void)key_len, (void)val, (void)val_len;
  return read_only(e, "put", err);
}

static int e_del(engine_t *e, const void *key, size_t key_len, err_t *err) {
  (void)key, (void)key_len;
  return read_only(e, "delete", err);
}

static int e_flush(engine_t *e, err_t *err) {
  return read_only(e, "flush", err);
}

/* Nothing written: only the memtables' value indexes. */
static void e_stats(engine_t *e, bfh_db_stats *st) {
  lro_t *r = (lro_t *)e;
  pthread_mutex_lock(&r->mu);
  for (size_t i = 0; i < r->nlogs; i++)
    if (r->logs[i].mem) st->memtable_index_bytes += memtable_value_index_bytes(r->logs[i].mem);
  pthread_mutex_unlock(&r->mu);
}

static const engine_ops_t lro_ops = {.name = "lsm-readonly",
                                     .close = e_close,
                                     .put = e_put,
                                     .del = e_del,
                                     .get = lro_get,
                                     .flush = e_flush,
                                     .view_acquire = lro_view_acquire,
                                     .view_release = lro_view_release,
                                     .view_tables = lro_view_tables,
                                     .scan_table = lro_scan_table,
                                     .scan_memtables = lro_scan_memtables,
                                     .scan_blocks = lro_scan_blocks,
                                     .find_memtables = lro_find_memtables,
                                     .iter_create = lro_iter_create,
                                     .stats = e_stats,
                                     .table_hashes = lro_table_hashes,
                                     .read_meta = lro_read_meta};

/* ---- The filters' source: the tables of the newest state -------------------------------- */

/* table_filters_read_fn: meta block `name` of table `number` of the newest state. A table no
   longer in it left the live set: BFH_E_BUSY (index_sync drops it at the next listing). */
static int read_meta(void *arg, uint64_t number, const char *name, void **data, size_t *size,
                     uint64_t *offset, err_t *err) {
  lro_t *r = arg;
  lro_state_t *s = NULL;
  pthread_mutex_lock(&r->mu);
  if ((s = r->state)) atomic_fetch_add(&s->refs, 1);
  pthread_mutex_unlock(&r->mu);
  const lro_table_t *t = s ? lro_state_table(s, number) : NULL;
  table_t *tt = NULL;
  int rc = t ? lro_table_reader(t, &tt, err)
             : err_set(err, BFH_E_BUSY, "%s: table %06llu is no longer live", r->path,
                       (unsigned long long)number);
  if (rc == BFH_OK) rc = table_read_meta(tt, name, data, size, offset, err);
  lro_state_unref(s);
  return rc;
}

static table_filters_t filters_of(lro_t *r) {
  return (table_filters_t){read_meta, r, r->sync, r->path};
}

static int read_leaf(void *ctx, uint64_t number, const value_index_params_t *p,
                     index_leaf_read_t *out, err_t *err) {
  table_filters_t tf = filters_of(ctx);
  return table_filters_read_leaf(&tf, number, p, out, err);
}

static int read_blocks(void *ctx, uint64_t number, const value_index_params_t *p,
                       block_filter_t **out, err_t *err) {
  (void)p;
  table_filters_t tf = filters_of(ctx);
  return table_filters_read_blocks(&tf, number, out, err);
}

/* ---- Opening ---------------------------------------------------------------------------- */

/* Does the index keep a persisted index (the lean layout with maps, leaves in memory), as the
   writer does (engine_lsm.c)? */
static int persists(const lro_t *r) {
  return r->sync && index_sync_persists(r->sync);
}

/* At open: binds the database's BFH-INDEX, if there is one, to the live tables of the first
   state and attaches it to the value index (read only: a stale or damaged file is used for
   what binds, never rewritten). */
static void open_persisted(lro_t *r) {
  if (!persists(r) || !r->state) return;
  index_persisted_t *x = NULL;
  err_t e;
  if (index_sync_persisted_open(r->sync, r->io, r->path, 0, &x) != BFH_OK) return;
  const lro_state_t *s = r->state;
  for (size_t i = 0; i < s->ntables; i++) {
    uint64_t stamp;
    if (lro_table_stamp(&s->tables[i], &stamp, &e) == BFH_OK)
      (void)index_sync_persisted_bind(x, s->tables[i].number, s->tables[i].size, stamp);
  }
  if (index_sync_persisted_bound(x) == 0) {
    index_sync_persisted_destroy(x);
    return;
  }
  index_sync_persisted_attach(r->sync, x); /* the value index owns it from here */
}

/* The first refresh, its tables listed to index_sync, BFH-INDEX bound, and the tables it does
   not bind given their block filters (their leaves come from the loader). */
static int first_refresh(lro_t *r, err_t *err) {
  pthread_mutex_lock(&r->mu);
  int rc = lro_refresh(r, err);
  if (rc == BFH_OK && r->sync) rc = lro_view_index_state(r, r->state, NULL, err);
  pthread_mutex_unlock(&r->mu);
  if (rc != BFH_OK || !r->sync) return rc;
  open_persisted(r);
  err_t e; /* a failure here (no memory) is the first view's to report: it tries again */
  (void)lro_view_load(r, 1, &e);
  return BFH_OK;
}

/* path must hold an own-engine database with its CURRENT: a read-only open creates nothing. */
static int check_directory(const char *path, err_t *err) {
  int rc = engine_detect_check(path, ENGINE_DIR_LSM, err);
  if (rc != BFH_OK) return rc;
  char *p = lsm_filename_current(path);
  if (!p) return err_set(err, BFH_E_NOMEM, "%s/CURRENT: no memory for its path", path);
  int has_current = env_exists(env_default(), p);
  free(p);
  if (!has_current)
    return err_set(err, BFH_E_INVALID,
                   "%s: not a bfh database (no CURRENT file); a read-only open creates none", path);
  return BFH_OK;
}

static int source_init(lro_t *r, err_t *err) {
  index_source_t src = {.read_leaf = read_leaf, .read_blocks = read_blocks, .ctx = r};
  return index_sync_set_source(r->sync, &src, err);
}

int engine_lsm_ro_open(const char *path, const bfh_options *opt, struct env *io, index_sync_t *sync,
                       engine_t **out, err_t *err) {
  int rc = check_directory(path, err);
  if (rc != BFH_OK) return rc;
  lro_t *r = calloc(1, sizeof *r);
  if (!r) return err_set(err, BFH_E_NOMEM, "%s: no memory", path);
  r->base.ops = &lro_ops;
  r->io = io ? io : env_default();
  r->sync = sync;
  r->value_seed = sync ? index_sync_params(sync)->seed : BFH_DEFAULT_SEED;
  /* A value index per log's memtable, sized as the writer sizes its own (lsm/db.c). */
  size_t buckets = opt->memtable_bytes / 64;
  if (sync && opt->memtable_index) r->mem_buckets = buckets < 1024 ? 1024 : buckets;
  r->mmap_reads = opt->mmap_reads;
  pthread_mutex_init(&r->mu, NULL);
  r->watch.fd = -1;
  atomic_init(&r->stale, 1);
  if (!(r->path = strdup(path))) rc = err_set(err, BFH_E_NOMEM, "%s: no memory", path);
  /* Before the first refresh (dir_watch.h's rule). Only over the real file system: a test's
     I/O layer may change what a read sees without the kernel knowing. */
  if (rc == BFH_OK && r->io == env_default())
    (void)dir_watch_init(&r->watch, r->path, DIR_WATCH_CONTENTS);
  if (rc == BFH_OK && sync) rc = source_init(r, err);
  if (rc == BFH_OK) rc = first_refresh(r, err);
  if (rc != BFH_OK) {
    e_close(&r->base, NULL);
    return rc;
  }
  *out = &r->base;
  return BFH_OK;
}

int engine_lsm_ro_describe(engine_t *e, uint64_t number, bfh_table_info *info, err_t *err) {
  /* the tables carry their filters */
  lro_t *r = (lro_t *)e;
  lro_state_t *s = NULL;
  int rc = lro_current_state(r, &s, err);
  const lro_table_t *t = rc == BFH_OK ? lro_state_table(s, number) : NULL;
  if (rc == BFH_OK && !t)
    rc = err_set(err, BFH_NOT_FOUND, "%s: table %06llu is not live", r->path,
                 (unsigned long long)number);
  table_t *tt = NULL;
  if (rc == BFH_OK) rc = lro_table_reader(t, &tt, err);
  if (rc == BFH_OK) rc = engine_lsm_describe_table(tt, info, err);
  lro_state_unref(s);
  return rc;
}

uint64_t engine_lsm_ro_refreshes(engine_t *e) {
  return atomic_load(&((lro_t *)e)->refreshes);
}

uint64_t engine_lsm_ro_retries(engine_t *e) {
  return atomic_load(&((lro_t *)e)->retries);
}

void engine_lsm_ro_set_logs_hook(engine_t *e, void (*fn)(void *arg), void *arg) {
  lro_t *r = (lro_t *)e;
  pthread_mutex_lock(&r->mu);
  r->logs_hook = fn;
  r->logs_hook_arg = arg;
  pthread_mutex_unlock(&r->mu);
}

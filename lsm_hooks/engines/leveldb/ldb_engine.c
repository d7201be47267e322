/* engine_t over stock LevelDB 1.23 through its C API only (doc/leveldb.md); the emulated
 * table-build hook and the file layout of this folder are described in adapter.h.
 *
 * put, delete and get go to leveldb_put / leveldb_delete / leveldb_get. LevelDB opens with its
 * default options (snappy, 4 MiB write buffer and 2 MiB tables unless bfh_options says
 * otherwise) plus a bloom key filter policy of key_bits_per_key (default 10) bits.
 *
 * flush: the C API has no flush. leveldb_compact_range(db, "", "") with an empty key range
 * does it: DBImpl::CompactRange (1.23) first forces the memtable out (TEST_CompactMemTable:
 * a memtable switch and a wait until the immutable memtable is a table), then compacts only
 * the levels overlapping the range: with the empty user key as both ends, none (unless the
 * database holds the empty key, which bfh never writes). compact_range returns no status: an
 * empty batch written after it returns LevelDB's background error (a memtable that could not
 * be written). Then the sync has index_sync read the new table.
 *
 * Damage (doc/leveldb.md, "Damage"): LevelDB runs with paranoid_checks and verify_checksums;
 * ldb_precheck checks CURRENT, the MANIFEST and the logs before leveldb_open; a Corruption
 * status is BFH_E_CORRUPT naming the damaged file (errors.c).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bfh.h"
#include "lsm_hooks/engines/leveldb/adapter.h"
#include "lsm_hooks/engines/leveldb/ldb_api.h"
#include "lsm_hooks/engines/engine_detect.h"
#include "lsm_hooks/engines/stock/stock_check.h"

/* ---- engine_ops ------------------------------------------------------------------------ */

/* stock_rw_format_t.shut and destroy. */
static void shut(stock_rw_t *s) {
  engine_leveldb_t *el = (engine_leveldb_t *)s;
  ldb_pin_unref(el->pinned); /* LevelDB wants its iterators gone before the close */
  el->pinned = NULL;
  if (el->db) leveldb_close(el->db);
  el->db = NULL;
}

static void destroy(stock_rw_t *s) {
  engine_leveldb_t *el = (engine_leveldb_t *)s;
  if (el->options) leveldb_options_destroy(el->options);
  if (el->policy) leveldb_filterpolicy_destroy(el->policy);
  if (el->ropt) leveldb_readoptions_destroy(el->ropt);
  if (el->pin_ropt) leveldb_readoptions_destroy(el->pin_ropt);
  if (el->wopt) leveldb_writeoptions_destroy(el->wopt);
  ldb_logs_release(el);
  ldb_bounds_release(el);
  dir_watch_release(&el->watch);
  pthread_mutex_destroy(&el->diag_mu);
  pthread_mutex_destroy(&el->write_err_mu);
  pthread_rwlock_destroy(&el->write_lock);
}

/* A log append that failed (a full disk) may have left part of a record in the log, and
   LevelDB appends its next write right after it: the log would then hold damage in its
   middle, which bfh's open refuses (it cannot tell it from a damaged disk). So after one
   failed write the handle refuses writes, with that error, until it is reopened, as the own
   engine does; the torn record is then the log's tail, a write that was never acknowledged.
   A write begins with write_begin: the stored error (into err), or BFH_OK with write_lock
   held shared (logs.c), which write_end gives back. */
static int write_begin(engine_leveldb_t *el, err_t *err) {
  pthread_mutex_lock(&el->write_err_mu);
  int rc = el->write_err.code;
  if (rc != BFH_OK) *err = el->write_err;
  pthread_mutex_unlock(&el->write_err_mu);
  if (rc == BFH_OK) pthread_rwlock_rdlock(&el->write_lock);
  return rc;
}

/* The status of the LevelDB write begun (msg from LevelDB, or NULL); a failure is kept. */
static int write_end(engine_leveldb_t *el, char *msg, const char *op, err_t *err) {
  atomic_fetch_add(&el->writes_done, 1); /* before the caller hears of it: logs.c */
  pthread_rwlock_unlock(&el->write_lock);
  if (!msg) return BFH_OK;
  int rc = ldb_error(el, msg, op, err);
  pthread_mutex_lock(&el->write_err_mu);
  if (el->write_err.code == BFH_OK) el->write_err = *err;
  pthread_mutex_unlock(&el->write_err_mu);
  return rc;
}

static int e_put(engine_t *e, const void *key, size_t key_len, const void *val, size_t val_len,
                 err_t *err) {
  engine_leveldb_t *el = (engine_leveldb_t *)e;
  int rc = write_begin(el, err);
  if (rc != BFH_OK) return rc;
  char *msg = NULL;
  leveldb_put(el->db, el->wopt, key, key_len, val, val_len, &msg);
  return write_end(el, msg, "put", err);
}

static int e_del(engine_t *e, const void *key, size_t key_len, err_t *err) {
  engine_leveldb_t *el = (engine_leveldb_t *)e;
  int rc = write_begin(el, err);
  if (rc != BFH_OK) return rc;
  char *msg = NULL;
  leveldb_delete(el->db, el->wopt, key, key_len, &msg);
  return write_end(el, msg, "delete", err);
}

/* Reads the newest version, also under a search's view (engine.h). */
static int e_get(engine_t *e, engine_view_t *view, const void *key, size_t key_len, void **val,
                 size_t *val_len, err_t *err) {
  (void)view;
  engine_leveldb_t *el = (engine_leveldb_t *)e;
  char *msg = NULL;
  size_t n = 0;
  /* leveldb_get returns malloc'd memory (LevelDB's CopyString); bfh_free is free(). */
  char *v = leveldb_get(el->db, el->ropt, key, key_len, &n, &msg);
  if (msg) {
    leveldb_free(v);
    return ldb_error(el, msg, "get", err);
  }
  return stock_rw_get_result(el->rw.path, v, n, leveldb_free, val, val_len, err);
}

static int e_flush(engine_t *e, err_t *err) {
  engine_leveldb_t *el = (engine_leveldb_t *)e;
  int rc = write_begin(el, err);
  if (rc != BFH_OK) return rc;
  char *msg = NULL;
  leveldb_compact_range(el->db, "", 0, "", 0); /* see the top of this file */
  /* compact_range returns no status: a memtable that could not be written (a full disk, a
     damaged input) is LevelDB's background error, which its next write returns. An empty
     batch is such a write (it appends a 12-byte record with no entries to the log). */
  leveldb_writebatch_t *b = leveldb_writebatch_create();
  leveldb_write(el->db, el->wopt, b, &msg);
  leveldb_writebatch_destroy(b);
  if ((rc = write_end(el, msg, "flush (memtable to table)", err)) != BFH_OK) return rc;
  return stock_rw_sync(&el->rw, STOCK_SYNC_FULL, NULL, err);
}

/* ---- Ordered iteration: LevelDB's own iterator (an implicit snapshot at its creation) ---- */

/* A LevelDB error string of the iterator as a status (err), msg freed. */
static int iter_error(const char *path, char *msg, const char *op, err_t *err) {
  int rc = err_set(err, strstr(msg, "Corruption") ? BFH_E_CORRUPT : BFH_E_IO, "%s: %s: %s", path,
                   op, msg);
  leveldb_free(msg);
  return rc;
}

STOCK_LIB_ITER(leveldb, iter_error)

static int e_iter_create(engine_t *e, engine_iter_t **out, err_t *err) {
  engine_leveldb_t *el = (engine_leveldb_t *)e;
  *out = lib_iter_wrap(leveldb_create_iterator(el->db, el->ropt), el->rw.path);
  return *out ? BFH_OK : err_set(err, BFH_E_NOMEM, "%s: iterator: out of memory", el->rw.path);
}

static const engine_ops_t leveldb_ops = {STOCK_RW_OPS_FIELDS("leveldb")};

/* ---- Opening --------------------------------------------------------------------------- */

/* What a directory must hold before LevelDB may open or create a database in it. */
static int check_directory(env_t *io, const char *path, const bfh_options *opt, err_t *err) {
  int create = opt->create_if_missing, exists;
  int rc = stock_rw_check_dir(io, path, create, &exists, err);
  if (rc != BFH_OK || !exists) return rc;
  /* The own engine's and RocksDB's directories also have a CURRENT and a MANIFEST, which
     LevelDB would take for damaged files of its own (and write a LOG). */
  rc = engine_detect_check(path, ENGINE_DIR_LEVELDB, err);
  if (rc != BFH_OK) return rc;
  int has_current;
  if ((rc = stock_file_exists(io, path, "CURRENT", &has_current, err)) != BFH_OK) return rc;
  if (has_current) return BFH_OK;
  /* CURRENT lost: LevelDB's create_if_missing would start a new database over the old one's
     files, and delete them as obsolete. */
  if (stock_check_has_files(io, path))
    return err_set(err, BFH_E_CORRUPT,
                   "%s: damaged LevelDB database: CURRENT is missing, but the directory holds "
                   "a table, log or MANIFEST; nothing was changed: run `bfh repair --engine "
                   "leveldb %s` to rebuild it",
                   path, path);
  char **names;
  size_t count;
  if ((rc = env_list_dir(io, path, &names, &count, err)) != BFH_OK)
    return err_prefix(err, "%s: list directory: ", path);
  const char *other = NULL;
  for (size_t i = 0; i < count && !other; i++) {
    const char *n = names[i];
    /* bfh's own files, and what a LevelDB create that failed early leaves. */
    if (strncmp(n, "BFH-", 4) && strncmp(n, "bfh-", 4) && strcmp(n, "LOCK") && strcmp(n, "LOG") &&
        strcmp(n, "LOG.old"))
      other = n;
  }
  if (other)
    rc = err_set(err, BFH_E_INVALID,
                 "%s: not a LevelDB database (no CURRENT file, and it holds other files such "
                 "as '%s')",
                 path, other);
  else if (!create)
    rc = err_set(err, BFH_E_INVALID,
                 "%s: not a LevelDB database (no CURRENT file; create_if_missing is off)", path);
  env_names_free(names, count);
  return rc;
}

/* stock_rw_format_t.init. */
static void init(stock_rw_t *s) {
  engine_leveldb_t *el = (engine_leveldb_t *)s;
  el->watch.fd = -1;
  pthread_mutex_init(&el->diag_mu, NULL);
  pthread_mutex_init(&el->write_err_mu, NULL);
  pthread_rwlockattr_t ra;
  pthread_rwlockattr_init(&ra);
  /* A log read that waits for the writers must not wait behind a stream of new ones. */
  pthread_rwlockattr_setkind_np(&ra, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
  pthread_rwlock_init(&el->write_lock, &ra);
  pthread_rwlockattr_destroy(&ra);
}

/* stock_rw_format_t.open. It comes after our own lock: a failed leveldb_open of a database
   this process already holds closes its LOCK file descriptor, which drops the process's fcntl
   lock on it (POSIX record locks belong to the process), so a second open in this process
   must never reach leveldb_open. */
static int open_db(stock_rw_t *s, const bfh_options *opt, err_t *err) {
  engine_leveldb_t *el = (engine_leveldb_t *)s;
  el->options = leveldb_options_create();
  leveldb_options_set_create_if_missing(el->options, opt->create_if_missing != 0);
  if (opt->memtable_bytes) leveldb_options_set_write_buffer_size(el->options, opt->memtable_bytes);
  if (opt->table_bytes) leveldb_options_set_max_file_size(el->options, opt->table_bytes);
  leveldb_options_set_compression(el->options, opt->compression == BFH_COMPRESSION_NONE
                                                   ? leveldb_no_compression
                                                   : leveldb_snappy_compression);
  /* Damage is an error, never a silent loss: paranoid_checks makes a damaged log record fail
     the open (instead of being skipped) and checks the blocks a table open and a compaction
     read; verify_checksums checks every block a get or an iterator reads (without it a
     damaged data block can answer a get wrongly, or trip an assertion inside LevelDB). */
  leveldb_options_set_paranoid_checks(el->options, 1);
  int bits = opt->key_bits_per_key > 0 ? (int)(opt->key_bits_per_key + 0.5) : 10;
  el->policy = leveldb_filterpolicy_create_bloom(bits);
  leveldb_options_set_filter_policy(el->options, el->policy);
  el->ropt = leveldb_readoptions_create();
  leveldb_readoptions_set_verify_checksums(el->ropt, 1);
  el->pin_ropt = leveldb_readoptions_create();
  leveldb_readoptions_set_verify_checksums(el->pin_ropt, 1);
  leveldb_readoptions_set_fill_cache(el->pin_ropt, 0);
  el->wopt = leveldb_writeoptions_create();
  leveldb_writeoptions_set_sync(el->wopt, opt->sync != 0);
  /* What LevelDB's recovery would accept silently or report without a file name. */
  int rc = ldb_precheck_dir(el->rw.io, s->path, err);
  if (rc != BFH_OK) return rc;
  char *msg = NULL;
  el->dir_changed = 1; /* the directory watch, best effort: without it every refresh lists */
  (void)dir_watch_init(&el->watch, s->path, DIR_WATCH_NAMES);
  el->db = leveldb_open(el->options, s->path, &msg);
  if (!msg) return BFH_OK;
  rc = ldb_error(el, msg, "open", err);
  el->db = NULL;
  return rc;
}

static const stock_rw_format_t leveldb_format = {.ops = &leveldb_ops,
                                                 .table_match = ldb_table_match,
                                                 .file_open = ldb_file_open,
                                                 .file_free = stock_file_free,
                                                 .file_match = ldb_file_match,
                                                 .file_keep = ldb_file_keep,
                                                 .table_hashes = ldb_table_hashes,
                                                 .leaf_read = ldb_leaf_read,
                                                 .table_tag = ldb_table_tag_of,
                                                 .cache_delay_ns = ENGINE_LEVELDB_CACHE_DELAY_NS,
                                                 .block_maps = 1,
                                                 .lib = "LevelDB",
                                                 .bind = ldb_api_bind,
                                                 .handle_size = sizeof(engine_leveldb_t),
                                                 .check_dir = check_directory,
                                                 .init = init,
                                                 .open = open_db,
                                                 .shut = shut,
                                                 .destroy = destroy,
                                                 .list_at_rest = ldb_list_at_rest,
                                                 .list = ldb_list,
                                                 .unhold = ldb_unhold,
                                                 .segs = ldb_segs};

int engine_leveldb_open(const char *path, const bfh_options *opt, struct env *io,
                        index_sync_t *sync, engine_t **out, err_t *err) {
  return stock_rw_open(&leveldb_format, path, opt, io, sync, out, err);
}

void engine_leveldb_get_stats(engine_t *e, engine_leveldb_stats_t *st) {
  engine_leveldb_t *el = (engine_leveldb_t *)e;
  pthread_mutex_lock(&el->rw.sync_mu);
  *st = el->stats;
  st->syncs = el->rw.syncs;
  pthread_mutex_unlock(&el->rw.sync_mu);
  if (el->rw.sync) index_sync_get_stats(el->rw.sync, &st->index);
}

void engine_leveldb_hold_watch(engine_t *e, int hold) {
  atomic_store(&((engine_leveldb_t *)e)->watch_held, hold != 0);
}

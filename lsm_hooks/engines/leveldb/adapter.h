/* What the files of the LevelDB adapter share (internal to lsm_hooks/engines/leveldb/).
 *
 *   ldb_engine.c  the engine_ops (put, delete, get, flush, scans), open and close
 *   errors.c      LevelDB's error strings as bfh statuses; which file a Corruption is about
 *   logs.c        the live logs read into immutable segments: the memtables of a view
 *   sync.c        the emulated table-build hook: the live list pinned, reported to index_sync,
 *                 views, and the background thread that has index_sync read new tables
 *   reads.c       a table read for a search or for its filters (both engines)
 *   ldb_repair.c  bfh_repair of a LevelDB database
 *   ldb_verify.c  bfh_tables, bfh_check and the check before its open (ldb_engine.h): the
 *                 stock check's hooks (stock/stock_check.h)
 * Beside this folder: ../leveldb_ro/ the read-only engine (bfh_options.read_only: no LevelDB,
 * the MANIFEST replayed by bfh; its consistency argument is at the top of readonly.c), and
 * ../../leveldb_format/ the readers of LevelDB's files (ldb_table, ldb_log, ldb_version_edit,
 * ldb_sstables), in C.
 *
 * The emulated hook ("sync"), serialized by sync_mu:
 *   1. (views only) list the *.log files of the directory and read each from where the last
 *      read stopped (log.h; a truncated tail is a write in flight, read again next time).
 *      Their value entries are kept in immutable, reference-counted segments, each indexed
 *      by value when made: they are the memtables. A log deleted meanwhile is dropped: its table is
 * installed before the deletion. Other syncs only drop the segments of deleted logs: nothing but a
 * view needs the entries, so ingest pays no log reading.
 *   2. fetch leveldb.sstables, create an iterator (it pins the current version: its files
 *      are not deleted while it lives), fetch the list again; equal lists mean the pinned
 *      version holds every listed file (file numbers are never reused), else retry. The
 *      pin is shared by the views made while the list stays the same, and taken without
 *      asking LevelDB while the directory watch has seen no file created or removed and
 *      step 1 neither listed the directory nor found a log gone (see pin_list in sync.c,
 *      and logs.c for how the watch spares the listing of logs).
 *   3. the stock core's (stock_rw.h): the list reported to index_sync, which reads the
 *      filters of new tables from the cache <db>/bfh-filters/ or the table (ldb_filter_read).
 * Reading logs before fetching the list is what makes a search miss no acknowledged write:
 * a put's record is in a log file (write(2) before leveldb_put returns) that is either read
 * or deleted, and a deleted log's data is in a table listed afterwards.
 */
#ifndef BFH_LSM_HOOKS_LEVELDB_ADAPTER_H
#define BFH_LSM_HOOKS_LEVELDB_ADAPTER_H

#include <leveldb/c.h> /* the types; the engine's calls go through ldb_api.h */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "util/env.h"
#include "lsm_hooks/engines/dir_watch.h"
#include "lsm_hooks/engines/engine.h"
#include "lsm_hooks/engines/leveldb/ldb_engine.h"
#include "lsm_hooks/engines/stock/stock_rw.h"
#include "lsm_hooks/leveldb_format/ldb_entry.h"
#include "lsm_hooks/leveldb_format/ldb_version_edit.h"

typedef struct log_state {
  uint64_t number;
  uint64_t resume; /* where the next read starts */
  stock_segs_t segs;
  int seen;
} log_state_t;

/* An iterator pinning a version, with the table list it was taken for: shared by the views
   made while the list stays the same (a new iterator per search would cost more than the
   rest of a search). Freed with its last reference. */
typedef struct ldb_pin {
  atomic_int refs;
  leveldb_iterator_t *it;
  char *list;          /* leveldb.sstables when it was pinned (leveldb_free) */
  uint64_t dir_events; /* the engine's dir_events before the list was fetched */
  uint64_t serial;     /* the engine's count of pins made, this one included */
} ldb_pin_t;

typedef struct engine_leveldb {
  stock_rw_t rw; /* first: the core's; its sync_mu also guards the logs, the pin and stats */
  leveldb_t *db;
  leveldb_options_t *options;
  leveldb_filterpolicy_t *policy;
  leveldb_readoptions_t *ropt, *pin_ropt;
  leveldb_writeoptions_t *wopt;

  log_state_t *logs;
  size_t nlogs, logs_cap;
  ldb_pin_t *pinned; /* the last pin made, for the next view with the same list (a ref) */
  /* An inotify watch on the directory's names (watch.fd -1: none): while it reports no file
     created, removed or renamed, the log files are those of the last listing, which is then
     not repeated. */
  dir_watch_t watch;
  int dir_changed; /* an event (or none yet listed) since the last complete listing */
  /* Reads of the watch that found events (every read, without one), listings of the
     directory and logs found gone: a pin made before the last of them may lack a table. */
  uint64_t dir_events;
  atomic_int watch_held; /* tests: the watch is not read (engine_leveldb_hold_watch) */
  engine_leveldb_stats_t stats;

  /* Held shared by every call that makes LevelDB write its log (put, delete, flush), taken
     exclusively by a log read that met a damaged-looking record: with it held no append is in
     flight, so what the read sees then is what the file holds (see logs.c). */
  pthread_rwlock_t write_lock;
  /* Writes ended (counted after LevelDB returned, before the caller hears of it), and their
     count when a view's log refresh last read every log without error (logs.c): while the two
     are equal and the watch reports nothing, no log holds a byte that refresh did not read. */
  atomic_uint_fast64_t writes_done;
  uint64_t logs_read_at;
  int logs_read_ok;

  /* The first LevelDB write (put, delete, a flush's batch) that failed: later writes are
     refused with it (ldb_engine.c, write_begin). */
  pthread_mutex_t write_err_mu;
  err_t write_err;

  /* The MANIFEST LevelDB writes, read on from where the last view's read stopped, for each
     table's sequence bound (bounds.c; under rw.sync_mu). */
  char *bounds_manifest; /* its path (malloc'd; NULL: none read yet) */
  uint64_t bounds_next;  /* where the next read resumes */
  ldb_version_t bounds_version;
  uint64_t pins_made;     /* ldb_pin_t.serial of the last pin made */
  uint64_t bounds_serial; /* the pin whose list the MANIFEST was last read for (0: none) */

  pthread_mutex_t diag_mu; /* guards the last corruption diagnosis */
  char diag_ldb[256];      /* LevelDB's message it was made for ("" if none) */
  char diag_msg[ERR_MSG_BYTES];
} engine_leveldb_t;

/* bounds.c: gives t[0, n) (sorted by number; the list of the pin numbered serial) the
   sequence bound of each table the MANIFEST names (ldb_file_t.max_seq; leveldb.sstables gives
   none), reading the MANIFEST on from where the last read stopped, unless it was read for
   that pin's list already (LevelDB writes an edit before it installs the version, so the read
   that followed the list's fetch saw every table of it). A table it does not name, or any
   failure to read it, leaves the bound unknown: the newest K then reads that table. REQUIRES
   rw.sync_mu. */
void ldb_bounds_fill(engine_leveldb_t *el, engine_table_t *t, size_t n, uint64_t serial);
/* Frees what ldb_bounds_fill keeps. */
void ldb_bounds_release(engine_leveldb_t *el);

/* reads.c: the table reads both LevelDB engines make, for a search and for the filters:
   stock_rw_format_t.table_match, .table_hashes, .leaf_read (ldb_filter_read, ldb_engine.h) and
   .table_tag (ldb_table_tag) of table `number` of the database in dir, each BFH_NOT_FOUND
   when the file is gone (the caller says what that means for its search); and table_match
   over table file f, already open (borrowed), named path in messages. */
int ldb_table_match(env_t *io, const char *dir, uint64_t number, const block_ref_t *refs, size_t n,
                    const block_cache_use_t *use, const stock_match_t *m, engine_scan_stats_t *st,
                    err_t *err);
int ldb_table_hashes(env_t *io, const char *dir, uint64_t number, uint64_t seed,
                     const value_terms_t *terms, void (*fn)(void *arg, uint64_t hash), void *arg,
                     engine_scan_stats_t *st, err_t *err);
int ldb_leaf_read(env_t *io, const char *dir, uint64_t number, const value_index_params_t *p,
                  index_leaf_read_t *out, err_t *err);
int ldb_table_tag_of(env_t *io, const char *dir, uint64_t number, uint64_t *tag, err_t *err);
int ldb_table_match_rfile(env_rfile_t *f, const char *path, const block_ref_t *refs, size_t n,
                          const block_cache_use_t *use, const stock_match_t *m,
                          engine_scan_stats_t *st, err_t *err);
/* stock_rw_format_t.file_open, .file_match and .file_keep: the read-write engine's table files
   held open (a plain stock_file_t: its file_free is stock_file_free). */
int ldb_file_open(env_t *io, const char *dir, uint64_t number, stock_file_t **out, err_t *err);
int ldb_file_match(stock_file_t *f, const block_ref_t *refs, size_t n, const block_cache_use_t *use,
                   const stock_match_t *m, engine_scan_stats_t *st, err_t *err);
void ldb_file_keep(stock_file_t *f, block_ref_t ref, const uint8_t *raw,
                   const block_cache_use_t *use);

/* errors.c */
/* stock_table_path and stock_table_path_write (stock.h) of table `number` of the database in
   dir: NNNNNN.ldb, or NNNNNN.sst when only that exists. */
int ldb_table_path(const char *dir, uint64_t number, char **path, err_t *err);
void ldb_table_path_write(const char *dir, uint64_t number, char *out, size_t n);
/* Maps a LevelDB error string to a status, sets err, frees msg. A Corruption is
   BFH_E_CORRUPT, its message naming the damaged file. */
int ldb_error(engine_leveldb_t *el, char *msg, const char *op, err_t *err);

/* logs.c */
/* Step 1 of the sync: reads what was appended to every live log since the last sync. With
   read == 0 only forgets the logs that were deleted (their segments are freed). REQUIRES
   sync_mu. */
int ldb_logs_refresh(engine_leveldb_t *el, int read, err_t *err);
void ldb_logs_release(engine_leveldb_t *el);
/* Reads the watch's pending events: any (or a queue overflow, or no watch) sets dir_changed
   and counts in dir_events. Nothing while a test holds the watch. REQUIRES sync_mu. */
void ldb_dir_events(engine_leveldb_t *el);
/* sync.c: the engine's part of a sync (stock_rw_format_t.list, unhold, segs and
   list_at_rest). */
void ldb_pin_unref(ldb_pin_t *p); /* NULL allowed */
int ldb_list(stock_rw_t *s, int view, engine_table_t **t, size_t *n, void **held, err_t *err);
void ldb_unhold(stock_rw_t *s, void *held);
const stock_segs_t *ldb_segs(stock_rw_t *s, size_t i);
/* stock_rw_format_t.list_at_rest: the tables of the MANIFEST that CURRENT names. */
int ldb_list_at_rest(stock_rw_t *s, engine_table_t **t, size_t *n, err_t *err);

#endif

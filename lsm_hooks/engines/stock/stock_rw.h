/* The read-write stock engines' core: what the engines over stock LevelDB and RocksDB do the
 * same way whatever the library under them. Each engine's handle begins with a stock_rw_t and
 * names its format (stock_rw_format_t: its table readers and its hooks into the library); the
 * core then gives the open and close around the library's, the syncs and views, the
 * background indexer, the table reads of a search, the index_sync source, and the get and
 * iterator glue over the library's C API.
 */
#ifndef BFH_LSM_HOOKS_STOCK_RW_H
#define BFH_LSM_HOOKS_STOCK_RW_H

#include <pthread.h>
#include <stdatomic.h>

#include "bfh.h"
#include "lsm/block_cache.h"
#include "lsm_hooks/engines/stock/stock.h"
#include "util/u64_map.h"

struct stock_rw;

/* A table file a read-write engine holds open for the block reads of its searches
   (stock_rw_t.files), so that a search reads a table's blocks with a pread each, not after an
   open, a stat and (RocksDB) a read of its footer. The format makes it (file_open: its own
   struct, beginning with this one, refs 1) and frees it at its last reference (file_free). */
typedef struct stock_file {
  atomic_int refs;
  env_rfile_t *f;
  char *path; /* malloc'd: what messages name */
} stock_file_t;

/* What a format's file_open does with the path of its table (malloc'd; taken, whatever the
   outcome): *out, a zeroed allocation of size bytes (at least a stock_file_t, which begins
   it) holding path open, with one reference. BFH_NOT_FOUND when the file is gone. */
int stock_file_open(size_t size, env_t *io, char *path, stock_file_t **out, err_t *err);
/* What a format's file_free does for a plain stock_file_t: closes and frees f. */
void stock_file_free(stock_file_t *f);

/* A read-write stock engine's format: its table readers, for table `number` of the database
   in dir, through io (each returns BFH_NOT_FOUND when the file is gone), and its hooks into
   the library, each given the engine's handle. */
typedef struct stock_rw_format {
  const engine_ops_t *ops;
  /* Entries whose value passes m->test: the whole table (refs NULL) or data blocks refs[0, n),
     those through use (the handle's cache of decoded blocks; NULL: none). */
  int (*table_match)(env_t *io, const char *dir, uint64_t number, const block_ref_t *refs, size_t n,
                     const block_cache_use_t *use, const stock_match_t *m,
                     engine_scan_stats_t *st, err_t *err);
  /* Table `number` opened for reads of its blocks (BFH_NOT_FOUND when the file is gone),
     its last reference's free, and table_match of blocks refs[0, n) (n > 0) through it. */
  int (*file_open)(env_t *io, const char *dir, uint64_t number, stock_file_t **out, err_t *err);
  void (*file_free)(stock_file_t *f);
  int (*file_match)(stock_file_t *f, const block_ref_t *refs, size_t n,
                    const block_cache_use_t *use, const stock_match_t *m, engine_scan_stats_t *st,
                    err_t *err);
  /* A data block of f read ahead (stock_rw_read_ahead): raw holds its ref.size bytes of
     contents and its trailer, as read from the file. Checked and decoded as file_match reads
     it, it enters use's cache as the fill allows; one that does not check out is left out,
     for file_match to read again and report. */
  void (*file_keep)(stock_file_t *f, block_ref_t ref, const uint8_t *raw,
                    const block_cache_use_t *use);
  /* engine_ops_t.table_hashes: every value entry's item hashes under seed (terms: the
     database's items; NULL: the whole value's bfh_value_hash), to fn. */
  int (*table_hashes)(env_t *io, const char *dir, uint64_t number, uint64_t seed,
                      const value_terms_t *terms, void (*fn)(void *arg, uint64_t hash), void *arg,
                      engine_scan_stats_t *st, err_t *err);
  /* index_source_t.read_leaf and .table_tag. */
  int (*leaf_read)(env_t *io, const char *dir, uint64_t number, const value_index_params_t *p,
                   index_leaf_read_t *out, err_t *err);
  int (*table_tag)(env_t *io, const char *dir, uint64_t number, uint64_t *tag, err_t *err);
  uint64_t cache_delay_ns; /* index_source_t.cache_delay_ns */
  int block_maps;          /* the row has ENGINE_CAP_BLOCK_MAPS: a leaf read makes the maps */

  /* The open (stock_rw_open): the library, by name in messages ("LevelDB"), bound by bind
     before its first call; the handle's size (it begins with a stock_rw_t). */
  const char *lib;
  int (*bind)(err_t *err);
  size_t handle_size;
  /* What path (through io) must be before the library may open or create a database there
     as opt says: BFH_OK, or the refusal, nothing written. */
  int (*check_dir)(env_t *io, const char *path, const bfh_options *opt, err_t *err);
  /* The engine's own fields made (its locks), before anything can fail. */
  void (*init)(struct stock_rw *s);
  /* The library's open of s->path with opt, bfh's lock on the directory held. */
  int (*open)(struct stock_rw *s, const bfh_options *opt, err_t *err);
  /* Closes the library (its handle NULL after; nothing when it is not open): no table is
     made or deleted after it. */
  void (*shut)(struct stock_rw *s);
  /* Frees what init and open made, after shut (stock_rw_close calls both, also after a failed
     open); not s. */
  void (*destroy)(struct stock_rw *s);
  /* The live tables of the database shut left, as its MANIFEST at rest names them, sorted by
     number, into *t (malloc'd) and *n: the close's last sync lists them so, as a compaction
     could install a table after any list asked of the open library. */
  int (*list_at_rest)(struct stock_rw *s, engine_table_t **t, size_t *n, err_t *err);

  /* The engine's part of a sync (stock_rw_sync), under sync_mu: the live tables, sorted by
     number, into *t (malloc'd) and *n. With view set, first what a view needs: the logs read
     into segments, and what keeps every listed file on disk while the view lives, into *held
     (given back with unhold). On failure nothing is held. */
  int (*list)(struct stock_rw *s, int view, engine_table_t **t, size_t *n, void **held, err_t *err);
  /* Gives back what list held for a view, once the view is freed. */
  void (*unhold)(struct stock_rw *s, void *held);
  /* The i-th list of log segments a view searches; NULL past the last. REQUIRES sync_mu. */
  const stock_segs_t *(*segs)(struct stock_rw *s, size_t i);
  /* Each tick of the background thread, before its sync (NULL: nothing more). */
  void (*tick)(struct stock_rw *s);
} stock_rw_format_t;

/* The background indexer: a thread that calls tick(arg) every period_ns (has index_sync read
   the filters of tables listed for a while, or met by a search), and at once when kicked,
   until stopped. Zeroed: not running. */
typedef struct stock_indexer {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  pthread_t thread;
  int started, stop;
  int kicked; /* a tick is due now (mu) */
  uint64_t period_ns;
  void (*tick)(void *arg);
  void *arg;
} stock_indexer_t;

/* The head of a read-write stock engine's handle. base, path, cache_dir, io and sync come
   first, in the order of struct stock_ro (stock_ro.h): the describe of a format's two rows
   reads them through this type. */
typedef struct stock_rw {
  engine_t base;
  char *path, *cache_dir;
  env_t *io;          /* bfh's own file accesses (borrowed; env_default() unless a test's) */
  index_sync_t *sync; /* borrowed; NULL when value filters are off */
  const stock_rw_format_t *fmt;
  env_lock_t *dir_lock;    /* flock(LOCK_EX) on the directory while open (env_lock_dir) */
  int opened;              /* the open succeeded (a close then leaves the cache files behind) */
  pthread_mutex_t sync_mu; /* one sync or view at a time; the engine says what else it guards */
  uint64_t syncs;          /* runs of stock_rw_sync (views, flushes, background); sync_mu */
  /* Decoded copies of the data blocks searches read by maps or block filters, by (table
     number, offset): a table number names one file while the handle holds the database's
     LOCK. NULL with bfh_options.block_cache_bytes 0. Each view may put a share of it in
     (block_cache_reader_fill). */
  block_cache_t *blocks;
  /* The table files held open for the searches' block reads: table number -> stock_file_t *
     (one reference each), at most files_max (env_fd_share) of them; the files of tables no
     longer live are closed at a sweep (STOCK_RW_FILES_SWEEP). files_mu guards the map. */
  pthread_mutex_t files_mu;
  u64_map_t files;
  size_t files_max;
  stock_indexer_t bg;      /* the background indexer */
} stock_rw_t;

/* The syncs between two sweeps of the files held open: a table's file stays open at most
   that many views after its table left the live version (the view that lists it keeps it
   on disk meanwhile anyway). */
#define STOCK_RW_FILES_SWEEP 16

/* What path must be before the library may open or create a database in it: a directory,
   or missing with create set. BFH_OK for a missing one (*exists 0) or a directory (*exists
   1); else BFH_E_INVALID (or env_path_kind's error). */
int stock_rw_check_dir(env_t *io, const char *path, int create, int *exists, err_t *err);

/* engine_kind_t.open of a read-write stock engine over fmt: the library bound, the directory
   checked (fmt->check_dir), the handle made, the directory made when create_if_missing, and
   bfh's own lock on it taken before the library's (two opens of one directory, in this
   process or another, conflict there with BFH_E_BUSY); then the library's open
   (fmt->open), the filter cache <db>/bfh-filters/ made, every live table indexed (from the
   cache when it matches, stale cache files removed), and the background indexer started. */
int stock_rw_open(const stock_rw_format_t *fmt, const char *path, const bfh_options *opt, env_t *io,
                  index_sync_t *sync, engine_t **out, err_t *err);
/* engine_ops_t.close: the indexer stopped, the library shut, a last full sync of the tables
   it left (fmt->list_at_rest: every live table leaves its cache file behind, for a fast
   reopen), then fmt->destroy and the handle freed. */
int stock_rw_close(engine_t *e, err_t *err);

/* ---- Syncs and views ----------------------------------------------------------------------
   A sync, serialized by sync_mu: the format's list (for a view, the logs read first), a view
   made of those tables and of the logs' segments, the tables reported to index_sync (a view
   pins its epoch there, so no leaf of a table it lists is dropped while it lives). Then,
   outside sync_mu, STOCK_SYNC_FULL has index_sync read every new table (a flush, the open,
   the close) and STOCK_SYNC_BG those listed for STOCK_RW_BG_MIN_AGE_NS (the background
   thread, every STOCK_RW_BG_PERIOD_NS, so that tables that die young cost nothing) and those
   a search's view listed without a leaf (the view wakes the thread: each search reads such a
   table whole, so it is read once for its filter at once, whatever its age); a search never
   waits for that: a table without a leaf yet is scanned. Both then apply the value index's
   queue (index_sync_apply): the leaves the run read and the removes the views queued.
   Searches under the lean layout leave the queue to them (index_sync_use_applier, once the
   background thread runs): a table whose leaf waits there is read by its map. */
#define STOCK_RW_BG_PERIOD_NS 100000000ull   /* every 100 ms */
#define STOCK_RW_BG_MIN_AGE_NS 1000000000ull /* the tables listed for 1 s */
enum { STOCK_SYNC_VIEW, STOCK_SYNC_FULL, STOCK_SYNC_BG };
/* A sync in mode; STOCK_SYNC_VIEW also makes *view (released with stock_rw_view_release). */
int stock_rw_sync(stock_rw_t *s, int mode, engine_view_t **view, err_t *err);
/* Testbed: a full sync of a LevelDB or RocksDB engine now, every live table indexed (what the
   background thread does for the tables listed for a second). */
int engine_stock_sync(engine_t *e, err_t *err);
/* engine_ops_t.view_acquire, view_release and stats (the bytes of the logs' value indexes) of
   the read-write engines. */
int stock_rw_view_acquire(engine_t *e, engine_view_t **view, err_t *err);
void stock_rw_view_release(engine_t *e, engine_view_t *v);
void stock_rw_stats(engine_t *e, bfh_db_stats *st);

/* engine_ops_t.scan_blocks and table_hashes of the read-write engines: a table
   not in the view is not part of its state (a table made after it was taken), and nothing is
   reported for it; a table of the view gone is BFH_E_IO, as the view keeps its files. */
int stock_rw_scan_blocks(engine_t *e, engine_view_t *v, uint64_t number, const block_ref_t *refs,
                         size_t n, const engine_value_test_t *test, engine_match_fn fn, void *arg,
                         engine_scan_stats_t *st, err_t *err);
/* engine_ops_t.read_ahead of the read-write engines: the data blocks among r[0, n) of the
   view's tables that the handle's block cache lacks, read STOCK_RW_AHEAD_BATCH at a time
   (env_read_batch: one system call each where the env batches), each checked and decoded by
   fmt->file_keep into the cache as the view's fill allows, where scan_blocks finds them.
   Pieces of meta blocks are not read: a stock table's maps are read from the filter cache. */
void stock_rw_read_ahead(engine_t *e, engine_view_t *v, const block_ahead_t *r, size_t n);
#define STOCK_RW_AHEAD_BATCH 64
int stock_rw_table_hashes(engine_t *e, engine_view_t *v, uint64_t number, uint64_t seed,
                          void (*fn)(void *arg, uint64_t hash), void *arg, engine_scan_stats_t *st,
                          err_t *err);

/* The engine_ops_t fields of a read-write stock engine: open, close, views, the memtable scans
   and the table reads are the core's; the file names its static e_put, e_del, e_get, e_flush
   and e_iter_create. */
#define STOCK_RW_OPS_FIELDS(engine_name)                                                          \
  .name = engine_name, .close = stock_rw_close, .put = e_put, .del = e_del, .get = e_get,         \
  .flush = e_flush, .view_acquire = stock_rw_view_acquire, .view_release = stock_rw_view_release, \
  .view_tables = stock_view_tables, .scan_table = stock_scan_table,                               \
  .scan_memtables = stock_scan_memtables, .scan_blocks = stock_rw_scan_blocks,                    \
  .find_memtables = stock_find_memtables, .iter_create = e_iter_create, .stats = stock_rw_stats,  \
  .table_hashes = stock_rw_table_hashes, .read_ahead = stock_rw_read_ahead

/* The end of engine_ops_t.get over a library's get, which returned v (malloc'd, n bytes; NULL:
   no such key): *val and *val_len set, a real pointer given for an empty value (malloc(0) may
   be any pointer), lib_free freeing what the library returned then. BFH_OK, BFH_NOT_FOUND, or
   BFH_E_NOMEM. */
int stock_rw_get_result(const char *path, char *v, size_t n, void (*lib_free)(void *), void **val,
                        size_t *val_len, err_t *err);

/* An engine_iter_t over a library's own iterator, whose C API functions are P_iter_seek and
   the like (LevelDB's and RocksDB's have the same shape). STOCK_LIB_ITER(P, error) defines,
   static in the engine's file, the iterator type and its ops, with error(path, msg, op, err)
   mapping the library's error (it frees msg), and `static engine_iter_t *lib_iter_wrap(
   P##_iterator_t *it, const char *path)`, which takes it over (NULL if no memory: it is
   destroyed then). */
#define STOCK_LIB_ITER(P, error)                                                                  \
  typedef struct lib_iter {                                                                       \
    engine_iter_t base;                                                                           \
    P##_iterator_t *it;                                                                           \
    const char *path; /* the engine's, for messages */                                            \
  } lib_iter_t;                                                                                   \
  static P##_iterator_t *lib_it(const engine_iter_t *it) {                                        \
    return ((const lib_iter_t *)it)->it;                                                          \
  }                                                                                               \
  static void it_destroy(engine_iter_t *it) {                                                     \
    if (!it) return;                                                                              \
    P##_iter_destroy(lib_it(it));                                                                 \
    free(it);                                                                                     \
  }                                                                                               \
  static void it_seek_first(engine_iter_t *it) {                                                  \
    P##_iter_seek_to_first(lib_it(it));                                                           \
  }                                                                                               \
  static void it_seek(engine_iter_t *it, const void *key, size_t key_len) {                       \
    P##_iter_seek(lib_it(it), key, key_len);                                                      \
  }                                                                                               \
  static int it_valid(const engine_iter_t *it) {                                                  \
    return P##_iter_valid(lib_it(it));                                                            \
  }                                                                                               \
  static void it_next(engine_iter_t *it) {                                                        \
    P##_iter_next(lib_it(it));                                                                    \
  }                                                                                               \
  static const void *it_key(const engine_iter_t *it, size_t *len) {                               \
    return P##_iter_key(lib_it(it), len);                                                         \
  }                                                                                               \
  static const void *it_value(const engine_iter_t *it, size_t *len) {                             \
    return P##_iter_value(lib_it(it), len);                                                       \
  }                                                                                               \
  static int it_status(const engine_iter_t *it, err_t *err) {                                     \
    char *msg = NULL;                                                                             \
    P##_iter_get_error(lib_it(it), &msg);                                                         \
    return msg ? error(((const lib_iter_t *)it)->path, msg, "iterator", err) : BFH_OK;            \
  }                                                                                               \
  static const engine_iter_ops_t lib_iter_ops = {it_destroy, it_seek_first, it_seek,  it_valid,   \
                                                 it_next,    it_key,        it_value, it_status}; \
  static engine_iter_t *lib_iter_wrap(P##_iterator_t *p, const char *path) {                      \
    lib_iter_t *it = p ? calloc(1, sizeof *it) : NULL;                                            \
    if (!it) {                                                                                    \
      if (p) P##_iter_destroy(p);                                                                 \
      return NULL;                                                                                \
    }                                                                                             \
    *it = (lib_iter_t){.base = {.ops = &lib_iter_ops}, .it = p, .path = path};                    \
    return &it->base;                                                                             \
  }

#endif

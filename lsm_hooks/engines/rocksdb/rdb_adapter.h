/* What the files of the RocksDB engine share (internal to lsm_hooks/engines/rocksdb/).
 *
 *   rdb_engine.c  the engine_ops (put, delete, get, flush, iterate), open, close, repair
 *   rdb_view.c    views: file deletions held off, the live tables of the engine's column family
 *                 (rocksdb_livefiles), the WAL's entries; the report to index_sync and the
 *                 background thread that has it read new tables
 *   rdb_wal.c     the live write-ahead logs read into segments of value entries (memtables)
 *   rdb_reads.c   a table read for a search (whole, or some data blocks) and for its filters;
 *                 what cannot be answered (merge operands, blob references) is refused here
 *
 * The view (engine_ops_t.view_acquire), serialized by sync_mu:
 *   1. file deletions held (rdb_hold_take): from now until the view is released RocksDB
 *      deletes no file. The engine holds one rocksdb_disable_file_deletions for all its views
 *      and gives it back (rocksdb_enable_file_deletions, force off) when none is open: at the
 *      background thread's next tick (within STOCK_RW_BG_PERIOD_NS), or at once without the
 *      thread. Each enable lists the database directory for obsolete files and writes to
 *      RocksDB's LOG; once per search it was about half of an absent value's AUTO search;
 *   2. the WAL read from where the last read stopped (rocksdb_get_updates_since), into
 *      immutable reference-counted segments indexed by value (the stock core's log_seg_t,
 *      ../stock/stock.h); after a flush or a compaction (RocksDB's super version number
 *      changed) the segments are dropped and the live WAL read again from its start;
 *   3. rocksdb_livefiles: the tables of the engine's column family, with levels and sizes,
 *      reported to index_sync (index_sync_tables_listed; the view pins its epoch).
 * Every write acknowledged before step 1 is in a WAL that still exists at step 2 (WALs are
 * deleted only after their memtable is a table) or in a table listed at step 3, and no file
 * the view names is deleted before it is released. A WAL entry also in a table is harmless: a
 * search validates every candidate with rocksdb_get.
 */
#ifndef BFH_LSM_HOOKS_ROCKSDB_ADAPTER_H
#define BFH_LSM_HOOKS_ROCKSDB_ADAPTER_H

#include <pthread.h>
#include <rocksdb/c.h> /* the types; the engine's calls go through rdb_api.h */
#include <stdint.h>

#include "lsm_hooks/engines/engine.h"
#include "lsm_hooks/engines/stock/stock_rw.h"
#include "lsm_hooks/engines/rocksdb/rdb_engine.h"
#include "lsm_hooks/rocksdb_format/rdb_table.h"
#include "util/env.h"

typedef struct engine_rocksdb {
  stock_rw_t rw; /* first: the core's; its sync_mu also guards the segments to wal_hook */
  rocksdb_t *db;
  rocksdb_options_t *options;
  rocksdb_readoptions_t *ropt;
  rocksdb_writeoptions_t *wopt;
  rocksdb_flushoptions_t *fopt;
  /* Every column family of the database is open (RocksDB opens all or none); the engine works
     on one of them, bfh_options.column_family ("default" when NULL). */
  rocksdb_column_family_handle_t **cfs; /* owned, ncfs of them */
  size_t ncfs;
  rocksdb_column_family_handle_t *cf; /* the one searched (borrowed from cfs) */
  char *cf_name;                      /* its name (owned) */
  uint32_t cf_id;                     /* its id, as the WAL and the MANIFEST name it */

  stock_segs_t segs;  /* the WAL's value entries read so far */
  uint64_t next_seq;  /* the first sequence number the next WAL read wants (0: from the start) */
  uint64_t wal_keep;  /* rocksdb.min-log-number-to-keep when the segments were begun */
  uint64_t sv_number; /* rocksdb.current-super-version-number then, where RocksDB gives no
                         wal_keep */
  /* The WAL iterator the last read ended with at the WAL's tail, every batch read (NULL:
     none): the next read goes on from there (rdb_wal.c) instead of a new iterator, which
     reads its first WAL file from the start up to the sequence it is asked for. */
  rocksdb_wal_iterator_t *wal_it;
  uint64_t wal_transients; /* WAL iterators that ended in a transient error (rdb_wal.c) */
  /* The tables of the last list (sorted by number, with the sequence bounds it found), made
     under super version listed_sv (0: none kept): while the column family's super version
     number stays the same, its version and so its tables do, and a list copies them instead
     of asking RocksDB for every live file's metadata; a table's bound never changes, so a
     list asks the rocksdb.sstables property, which prints every key of the version, only for
     a table this one lacks (rdb_view.c). */
  engine_table_t *listed;
  size_t nlisted;
  uint64_t listed_sv;
  const char *(*wal_hook)(void *arg); /* tests: engine_rocksdb_set_wal_hook */
  void *wal_hook_arg;

  pthread_mutex_t hold_mu; /* guards what follows */
  int holding;             /* this engine's rocksdb_disable_file_deletions is in force */
  size_t views_open;       /* views not yet released */
} engine_rocksdb_t;

/* rdb_view.c: the engine's part of a sync (stock_rw_format_t.list, unhold, segs and tick). The
   tick gives file deletions back to RocksDB if no view is open (also at close, after the
   background thread stopped). */
int rdb_list(stock_rw_t *s, int view, engine_table_t **t, size_t *n, void **held, err_t *err);
void rdb_unhold(stock_rw_t *s, void *held);
const stock_segs_t *rdb_segs(stock_rw_t *s, size_t i);
void rdb_tick(stock_rw_t *s);
/* stock_rw_format_t.list_at_rest: the tables of the engine's column family in the MANIFEST
   that CURRENT names. */
int rdb_list_at_rest(stock_rw_t *s, engine_table_t **t, size_t *n, err_t *err);

/* rdb_wal.c */
/* The column family's rocksdb.current-super-version-number (0 if RocksDB gives none): it
   changes with every flush, compaction and memtable switch. */
uint64_t rdb_super_version(engine_rocksdb_t *er);
/* Step 2: reads the WAL entries written since the last read (or all of the live WAL after a
   flush: rocksdb.min-log-number-to-keep moved) into a new segment. REQUIRES sync_mu.
   BFH_E_UNSUPPORTED for a merge operand or a blob reference of the engine's column family. */
int rdb_wal_refresh(engine_rocksdb_t *er, err_t *err);
/* The WAL iterator kept between reads, destroyed (before the database closes). */
void rdb_wal_drop(engine_rocksdb_t *er);

/* rdb_reads.c */
/* stock_table_path and stock_table_path_write (stock.h) of table `number` of the database in
   dir: NNNNNN.sst, or NNNNNN.ldb when only that exists (RocksDB's TableCache opens the LevelDB
   name when the RocksDB one is missing). Every read of a table by its number takes its name
   from here. */
int rdb_table_path(const char *dir, uint64_t number, char **path, err_t *err);
void rdb_table_path_write(const char *dir, uint64_t number, char *out, size_t n);
/* stock_rw_format_t.table_match, .table_hashes, .leaf_read and .table_tag of table `number` of
   the database in dir (the read-only row's too), each BFH_NOT_FOUND when the file is gone.
   BFH_E_UNSUPPORTED at an entry bfh cannot answer from (rdb_entry_refuse): table_hashes then
   leaves the table out of the Cuckoo Index and leaf_read gives it no leaf, so every search
   scans it, and the scan refuses the search. */
int rdb_table_match(env_t *io, const char *dir, uint64_t number, const block_ref_t *refs, size_t n,
                    const block_cache_use_t *use, const stock_match_t *m, engine_scan_stats_t *st,
                    err_t *err);
int rdb_table_hashes(env_t *io, const char *dir, uint64_t number, uint64_t seed,
                     const value_terms_t *terms, void (*fn)(void *arg, uint64_t hash), void *arg,
                     engine_scan_stats_t *st, err_t *err);
int rdb_leaf_read(env_t *io, const char *dir, uint64_t number, const value_index_params_t *p,
                  index_leaf_read_t *out, err_t *err);
int rdb_table_tag_of(env_t *io, const char *dir, uint64_t number, uint64_t *tag, err_t *err);
/* rdb_table_match over table file f, already open (borrowed; the read-only engine's pins),
   named path in messages; ft (borrowed, may be NULL) is f's footer read before
   (rdb_table_read_blocks_footer), so that a read of refs reads those blocks alone; use the
   cache of decoded blocks they go through (NULL: none). */
int rdb_table_match_rfile(env_rfile_t *f, const char *path, const rdb_table_footer_t *ft,
                          const block_ref_t *refs, size_t n, const block_cache_use_t *use,
                          const stock_match_t *m, engine_scan_stats_t *st, err_t *err);
/* stock_rw_format_t.file_open, .file_match and .file_keep: the read-write engine's table files
   held open, each with its footer read once at its open (its file_free is stock_file_free:
   the footer lives in the same allocation). A file whose footer did not read keeps nothing. */
int rdb_file_open(env_t *io, const char *dir, uint64_t number, stock_file_t **out, err_t *err);
int rdb_file_match(stock_file_t *f, const block_ref_t *refs, size_t n, const block_cache_use_t *use,
                   const stock_match_t *m, engine_scan_stats_t *st, err_t *err);
void rdb_file_keep(stock_file_t *f, block_ref_t ref, const uint8_t *raw,
                   const block_cache_use_t *use);
/* BFH_E_UNSUPPORTED naming the table at path for an entry bfh cannot answer from (a merge
   operand, a blob reference, a wide-column entity); else BFH_OK. */
int rdb_entry_refuse(const rdb_entry_t *e, const char *path, err_t *err);
/* rdb_describe (rdb_engine.h) of table `number` of the database in dir, read through io: what
   the read-only engine's row uses too. BFH_NOT_FOUND when the table is gone. */
int rdb_describe_table(env_t *io, const char *dir, uint64_t number, bfh_table_info *info,
                       err_t *err);
/* What else a leaf read hands over, with arg, as it passes over the table: entry gets every
   entry the leaf took (range tombstones last; the return value is ignored), block the end of
   each data block (as rdb_block_fn; ignored too). The read-only engine builds a table's key
   index this way without reading the table again. */
typedef struct rdb_leaf_tap {
  int (*entry)(void *arg, const rdb_entry_t *e);
  int (*block)(void *arg, uint64_t offset, uint64_t size);
  void *arg;
} rdb_leaf_tap_t;
/* rdb_leaf_read over table file f, already open (borrowed), named path in messages, with tap
   (may be NULL). */
int rdb_leaf_read_tapped(env_rfile_t *f, const char *path, const value_index_params_t *p,
                         const rdb_leaf_tap_t *tap, index_leaf_read_t *out, err_t *err);

#endif

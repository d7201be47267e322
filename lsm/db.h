/* lsm_db_t: bfh's own leveled LSM engine (the key path), in LevelDB's shape.
 *
 * A directory holds a write-ahead log, table files of about table_bytes, a manifest of
 * version edits and CURRENT. Writes go to the log and a skiplist memtable; a full memtable
 * is flushed by a background thread into an L0 table; leveled compaction (L0 trigger 4
 * files, L1 10 MiB, x10 per level, 7 levels) runs in the background.
 * doc/format.md describes every byte; doc/lsm.md how the pieces fit.
 *
 * Threads: one writer at a time inside (callers may write from many threads), any number
 * of concurrent readers. Errors are bfh status codes with a message in err (may be NULL).
 */
#ifndef BFH_LSM_DB_H
#define BFH_LSM_DB_H

#include <stddef.h>
#include <stdint.h>

#include "lsm/table_hook.h"
#include "util/block_ref.h"
#include "util/err.h"

typedef struct lsm_db lsm_db_t;

/* Visitor for raw entries: return nonzero to stop. type is LSM_TYPE_VALUE or _DELETION. */
typedef int (*lsm_visit_fn)(void *arg, const void *key, size_t key_len, const void *val,
                            size_t val_len, uint64_t seq, int type);

typedef struct lsm_options {
  int create_if_missing;        /* default 1 */
  size_t memtable_bytes;        /* default 4 MiB */
  size_t table_bytes;           /* default 2 MiB */
  size_t block_bytes;           /* default 4 KiB */
  double key_bits_per_key;      /* blocked key filter budget; default 10; 0 = no key filters */
  int sync;                     /* 1: fsync the log before a write returns; default 0 */
  const lsm_table_hook_t *hook; /* may be NULL; borrowed, must outlive the db */
  struct env *io;               /* NULL: the default (real) I/O layer; tests inject faults */
  uint64_t level1_bytes;        /* L1 size budget (x10 per deeper level); default 10 MiB */
  /* Nonzero: the memtables keep a value index (lsm/memtable.h), so that
     lsm_snapshot_scan_memtables_value reads only the entries holding the value. It costs a
     bucket array of memtable_bytes / 8 to / 4 (at least 8 KiB) per memtable, outside
     memtable_bytes, and 16 bytes per value entry, inside it. Default 0. */
  int memtable_value_index;
  uint64_t memtable_value_seed; /* the seed of that index's value hash (bfh_value_hash); default
                                   BFH_DEFAULT_SEED */
  /* The items that index holds each value under (filters/value_terms.h; borrowed, must
     outlive the db): NULL (default) the whole value's hash; else one per (attribute, term)
     of the declared attributes. */
  const struct value_terms *memtable_value_terms;
  /* May be NULL. Called at open for every record replayed from a write-ahead log (the
     writes that were in no table yet), in log order, before the open returns; seq is the
     record's sequence number, type LSM_TYPE_VALUE or LSM_TYPE_DELETION. A nonzero return
     fails the open with ST_E_NOMEM. A second store derived from this one (the stand-alone
     index, index/standalone.c) uses it to learn of every write a crash may have left
     in this store's log alone. */
  lsm_visit_fn replay;
  void *replay_arg;
  /* May be NULL. The name of a file the caller keeps in dir once an open completed (bfh's
     BFH-PARAMS): without CURRENT, a directory holding it is a damaged database, refused as
     one holding a table is (lsm_open). */
  const char *marker_file;
  /* The gets' block cache (lsm/block_cache.h): verified copies of the data blocks gets read,
     so that a get of a cached block makes no system call and checks no CRC. Default
     LSM_DEFAULT_BLOCK_CACHE_BYTES (LevelDB's default); 0: none. */
  size_t block_cache_bytes;
  /* 1: tables are read by copying out of a mapping of their files, not with pread
     (table_read_mapped): a block the cache misses costs no system call. A file truncated
     under the mapping is a checksum-class error, as with pread, caught by a SIGBUS handler
     the first such open installs for the process (util/mapped_copy.h). Default 0. */
  int mmap_reads;
} lsm_options_t;
#define LSM_DEFAULT_BLOCK_CACHE_BYTES (8u << 20)

void lsm_options_init(lsm_options_t *opt);
/* ST_OK, or ST_E_INVALID naming what is wrong: an empty or too long dir, a size out of
   range. lsm_open and lsm_repair check with it. */
int lsm_options_check(const char *dir, const lsm_options_t *opt, err_t *err);

/* Opens or creates the database in dir. On ST_OK, *db must be closed with lsm_close().
   ST_E_BUSY: locked by another open (any process); ST_E_INVALID: not a bfh LSM database
   (or missing without create_if_missing, or a bad option); ST_E_CORRUPT: a damaged file
   (message names file and offset); ST_E_UNSUPPORTED: written by an incompatible version.
   A directory without CURRENT that holds a table, a log with records, a manifest of a used
   database or opt->marker_file lost its CURRENT: ST_E_CORRUPT (repair it, lsm/repair.h),
   with create_if_missing too, and nothing in it is changed. What a create that failed
   before writing CURRENT leaves (IDENTITY, empty logs, a manifest naming no table and no
   write) holds no data: such a directory is created again. */
int lsm_open(const char *dir, const lsm_options_t *opt, lsm_db_t **db, err_t *err);
/* Waits for background work to stop, syncs the log and records in the manifest that it was
   closed cleanly (so the next open takes no damage in it for a torn write), releases the
   lock and frees db. Returns the first background error, or the error of that last record
   (the database is whole either way). NULL allowed. */
int lsm_close(lsm_db_t *db);
/* lsm_close, with the error's message (naming the file and what failed) in err (may be
   NULL). */
int lsm_close_err(lsm_db_t *db, err_t *err);
/* Stops the background work, so that the live tables no longer change: a caller that
   writes something derived from them at close (the persisted index) takes them after this.
   A memtable waiting to be flushed is flushed first (else the next open would make its
   table from the log); a running compaction is then interrupted and its outputs dropped,
   as lsm_close does. The database stays readable; no write may follow. lsm_close then skips
   that step. */
void lsm_stop_background(lsm_db_t *db);

int lsm_put(lsm_db_t *db, const void *key, size_t key_len, const void *val, size_t val_len,
            err_t *err);
int lsm_delete(lsm_db_t *db, const void *key, size_t key_len, err_t *err);
/* On ST_OK, *val is malloc'd (non-NULL even for an empty value); free() it.
   ST_NOT_FOUND when the key has no live value. */
int lsm_get(lsm_db_t *db, const void *key, size_t key_len, void **val, size_t *val_len, err_t *err);
/* Reads the data blocks that lsm_get of keys[0, n) would read first, from the newest state,
   into the block cache together (env_read_batch, 64 reads a batch), so that the gets that
   follow find them there: a validation of many keys makes one batch of reads instead of a
   system call each. Reads nothing for a key a memtable holds or every key filter rules out.
   Only an optimisation, as lsm_snapshot_read_ahead: what it does not read (no block cache, a
   table read through a mapping, a read that fails or comes up short, a block that does not
   check out, a block a key filter passed falsely) the get reads and reports on. */
void lsm_get_ahead(lsm_db_t *db, const key_ref_t *keys, size_t n);

/* Writes the memtable out as L0 table(s) and waits until they are installed. */
int lsm_flush(lsm_db_t *db, err_t *err);
/* Waits until no flush or compaction is pending (for tests and benchmarks). */
int lsm_wait_idle(lsm_db_t *db, err_t *err);

/* ---- Consistent views, for scans and non-key search ---------------------------------- */

typedef struct lsm_snapshot lsm_snapshot_t;

typedef struct lsm_table_info {
  uint64_t number; /* file number */
  uint64_t size;   /* bytes */
  int level;
  uint64_t max_seq; /* the largest sequence number of its entries (LSM_SEQ_UNKNOWN: not
                       recorded, a table of a manifest written before bfh recorded it) */
} lsm_table_info_t;

typedef struct lsm_scan_stats {
  uint64_t entries;    /* entries decoded */
  uint64_t bytes_read; /* table bytes read */
} lsm_scan_stats_t;

/* Pins the current version and memtables: every table it lists stays readable until
   release. Returns NULL on no memory. */
lsm_snapshot_t *lsm_snapshot_acquire(lsm_db_t *db);
void lsm_snapshot_release(lsm_snapshot_t *s); /* NULL allowed */
/* The live tables of the snapshot (array owned by s): L0 newest first, then by level. */
size_t lsm_snapshot_tables(const lsm_snapshot_t *s, const lsm_table_info_t **tables);
/* Visits every entry of table `number` (which must be in s) in table order, reading only
   that file. ST_E_CORRUPT with file and offset on a checksum mismatch. st may be NULL. */
int lsm_snapshot_scan_table(lsm_snapshot_t *s, uint64_t number, lsm_visit_fn fn, void *arg,
                            lsm_scan_stats_t *st, err_t *err);
/* Visits the entries of table `number` whose value is exactly val (n bytes): the same
   entries as lsm_snapshot_scan_table with a filter on the value, at a fraction of the cost
   (table_scan_value). */
int lsm_snapshot_scan_value(lsm_snapshot_t *s, uint64_t number, const void *val, size_t n,
                            lsm_visit_fn fn, void *arg, lsm_scan_stats_t *st, err_t *err);
/* lsm_snapshot_scan_value over the data blocks refs[0, nrefs) of the table only: those a
   block filter says may hold val (util/block_ref.h). ST_E_CORRUPT if a ref is not a
   data block of the table (table_scan_value_blocks). */
int lsm_snapshot_scan_value_blocks(lsm_snapshot_t *s, uint64_t number, const block_ref_t *refs,
                                   size_t nrefs, const void *val, size_t n, lsm_visit_fn fn,
                                   void *arg, lsm_scan_stats_t *st, err_t *err);
/* lsm_snapshot_scan_table over the data blocks refs[0, nrefs) of the table only
   (table_scan_blocks): every entry of those blocks; or, with nn needles, only the entries
   whose value holds one of nd[0, nn), the blocks with one kept for lsm_snapshot_get_latest
   as the value scans' are (table_scan_blocks_containing). */
int lsm_snapshot_scan_blocks(lsm_snapshot_t *s, uint64_t number, const block_ref_t *refs,
                             size_t nrefs, const block_needle_t *nd, size_t nn, lsm_visit_fn fn,
                             void *arg, lsm_scan_stats_t *st, err_t *err);
/* The latest version of key, as lsm_get gives it (the newest state, not the snapshot's),
   except that a data block the snapshot's value scans (lsm_snapshot_scan_value and
   lsm_snapshot_scan_value_blocks, or lsm_snapshot_scan_blocks with needles) found a match in
   is parsed from the copy they kept instead of being read from its file again
   (lsm/block_memo.h says why those are the same bytes).
   One thread at a time per snapshot. */
int lsm_snapshot_get_latest(lsm_snapshot_t *s, const void *key, size_t key_len, void **val,
                            size_t *val_len, err_t *err);
/* The blocks the snapshot keeps, and how many lookups of lsm_snapshot_get_latest they
   answered. */
void lsm_snapshot_memo_stats(const lsm_snapshot_t *s, size_t *blocks, uint64_t *hits);
/* table_read_meta_range of table `number` of the snapshot. It and the snapshot's scans of
   chosen blocks (lsm_snapshot_scan_value_blocks, lsm_snapshot_scan_blocks) read through the
   block cache and together put at most an eighth of its capacity into it. */
int lsm_snapshot_read_meta_range(lsm_snapshot_t *s, uint64_t number, const char *name, uint64_t off,
                                 size_t len, void *buf, err_t *err);
/* Reads the pieces r[0, n) (block_ahead_t: a data block, or bytes of a meta block as
   lsm_snapshot_read_meta_range reads them) that the block cache lacks into it, together
   (env_read_batch, 64 reads a batch), within the fill the snapshot's reads of chosen blocks
   share: the reads that follow find them there. A search that knows all of its next reads (its tables' map
   chunks, then the blocks they name) makes one batch of them instead of a system call each.
   Only an optimisation: a piece it does not read (no block cache, a table read through a
   mapping, the fill spent, a read that fails or comes up short, a data block that does not
   check out) is read again by the call that needs it, which reports any error. */
void lsm_snapshot_read_ahead(lsm_snapshot_t *s, const block_ahead_t *r, size_t n);
/* Visits every entry of the snapshot's memtable and immutable memtable. */
int lsm_snapshot_scan_memtables(lsm_snapshot_t *s, lsm_visit_fn fn, void *arg, lsm_scan_stats_t *st,
                                err_t *err);
/* Visits the value entries (not deletions) of the snapshot's memtable, then of its immutable
   memtable, whose value is exactly val (n bytes; val may be NULL when n is 0): the entries
   lsm_snapshot_scan_memtables visits that hold val, in no particular order within a
   memtable. With memtable_value_index it reads only the entries of the value's hash chain
   (st->entries counts them), without it every entry. st may be NULL. */
int lsm_snapshot_scan_memtables_value(lsm_snapshot_t *s, const void *val, size_t n, lsm_visit_fn fn,
                                      void *arg, lsm_scan_stats_t *st, err_t *err);
/* lsm_snapshot_scan_memtables_value with the value's hash given (REQUIRES: hash ==
   bfh_value_hash(val, n, memtable_value_seed)): nothing is hashed again. */
int lsm_snapshot_find_memtables_value(lsm_snapshot_t *s, const void *val, size_t n, uint64_t hash,
                                      lsm_visit_fn fn, void *arg, lsm_scan_stats_t *st, err_t *err);

/* Visits the value entries of the snapshot's memtable, then of its immutable memtable, that
   its value index holds under item hash `hash` (memtable_scan_hash: a superset of those
   holding the item; the caller tests each value). A memtable without value index is scanned
   whole (every entry, deletions included, as lsm_snapshot_scan_memtables). st may be NULL. */
int lsm_snapshot_find_memtables_hash(lsm_snapshot_t *s, uint64_t hash, lsm_visit_fn fn, void *arg,
                                     lsm_scan_stats_t *st, err_t *err);

/* Reads the meta block `name` of live table `number` (as stored from the table hook).
   On ST_OK, *data is malloc'd (caller frees) and *offset is the block contents' offset
   in the table file. ST_NOT_FOUND if the table has no such block. */
int lsm_table_read_meta(lsm_db_t *db, uint64_t number, const char *name, void **data, size_t *size,
                        uint64_t *offset, err_t *err);
/* The path of table `number` in a string of its own. NULL only on no memory. Client frees
   it with free(). */
char *lsm_table_path(const lsm_db_t *db, uint64_t number);

/* ---- Ordered iteration ---------------------------------------------------------------- */

typedef struct lsm_iter lsm_iter_t;
/* An iterator over the live keys of a consistent view taken at creation (newest version of
   each key, deletions hidden). Client calls lsm_iter_destroy(). */
lsm_iter_t *lsm_iter_create(lsm_db_t *db);
void lsm_iter_destroy(lsm_iter_t *it);
void lsm_iter_seek_first(lsm_iter_t *it);
void lsm_iter_seek(lsm_iter_t *it, const void *key, size_t key_len);
int lsm_iter_valid(const lsm_iter_t *it);
void lsm_iter_next(lsm_iter_t *it);
const void *lsm_iter_key(const lsm_iter_t *it, size_t *len);
const void *lsm_iter_value(const lsm_iter_t *it, size_t *len);
/* ST_OK, or the error (e.g. corruption) that stopped the iteration. */
int lsm_iter_status(const lsm_iter_t *it, err_t *err);

/* ---- Introspection ---------------------------------------------------------------------- */

typedef struct lsm_stats {
  uint32_t files_per_level[7];
  uint64_t bytes_per_level[7];
  uint64_t flushes, compactions;
  uint64_t bytes_written;        /* tables and logs */
  uint64_t stall_us;             /* time writers waited on L0 slowdown/stop */
  uint64_t memtable_index_bytes; /* the value indexes of the memtable and the one being flushed */
  uint64_t block_cache_hits;     /* gets that found their data block in the block cache */
  uint64_t block_cache_misses;   /* and that read it from its file */
  uint64_t block_cache_bytes;    /* what the block cache holds now */
} lsm_stats_t;
void lsm_get_stats(lsm_db_t *db, lsm_stats_t *st);

#endif

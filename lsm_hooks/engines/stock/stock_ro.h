/* The read-only stock core: one engine that follows a live LevelDB or RocksDB database without
 * its library and without writing into its directory, over a small format interface
 * (stock_ro_format_t) that leveldb_ro/ and rocksdb_ro/ implement over ../../leveldb_format/ and
 * ../../rocksdb_format/, as RocksDB's TableFactory keeps its engine ignorant of the format.
 *
 *   stock_ro.c          open and close, the views and the scans of a search, stats, the tests'
 *                       counters and hooks
 *   stock_ro_refresh.c  the refresh (its steps at the top of the file), the states it makes and
 *                       the table files they pin
 *   stock_chunk.c       chunks: what one read of a log added, indexed by value and by key
 *   stock_tombs.c       range tombstones fragmented (a format with range deletions fills them)
 *   stock_ro_persisted.c  the persisted index in the index directory (a format that stamps
 *                       its tables)
 *
 * The consistency argument of the refresh is at the top of leveldb_ro/readonly.c; what RocksDB
 * adds (column families, range tombstones, its WAL) at the top of rocksdb_ro/rdb_readonly.c.
 *
 * A format's engine struct begins with stock_ro_t, its state with stock_ro_state_t and its pin
 * with stock_pin_t (the core allocates the format's sizes, zeroed). Locking: stock_ro_t.mu
 * guards the refresh's fields (REQUIRES mu below); states, pins and chunks are immutable and
 * reference-counted, read without it.
 */
#ifndef BFH_LSM_HOOKS_STOCK_RO_H
#define BFH_LSM_HOOKS_STOCK_RO_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "bfh.h"
#include "lsm_hooks/engines/dir_watch.h"
#include "lsm_hooks/engines/stock/sorted_iter.h"
#include "lsm_hooks/engines/stock/stock.h"
#include "util/env.h"
#include "util/err.h"

#define STOCK_RO_ATTEMPTS 16 /* refreshes and searches tried before BFH_E_BUSY */
#define STOCK_RO_AGAIN 2     /* internal: the database changed under a read; start over */

typedef struct stock_ro stock_ro_t;

/* ---- Range tombstones (stock_tombs.c) -----------------------------------------------------
   The range tombstones [begin, end) at seq of one source (a log chunk, a table), immutable:
   points (the begin and end keys, sorted, unique) keys[at[i], at[i + 1]), and for the fragment
   [point i, point i + 1) the largest sequence of the tombstones covering it (0: none). */
typedef struct stock_tombs {
  size_t n;       /* points */
  uint8_t *keys;  /* the points' bytes, back to back */
  size_t *at;     /* n + 1 offsets into keys */
  uint64_t *seq;  /* n: fragment i's largest covering sequence (the last is 0) */
  uint64_t count; /* tombstones */
} stock_tombs_t;

typedef struct stock_tomb_ref {
  size_t b, bl, e, el; /* begin and end keys in stock_tombs_builder_t.p */
  uint64_t seq;
} stock_tomb_ref_t;

/* Caller-owned, zeroed to start; stock_tombs_builder_release frees what it holds. */
typedef struct stock_tombs_builder {
  uint8_t *p;
  size_t len, cap;
  stock_tomb_ref_t *t;
  size_t n, tcap;
} stock_tombs_builder_t;

/* Copies the tombstone [begin, end) at seq in (an empty range covers nothing). BFH_OK or
   BFH_E_NOMEM. */
int stock_tombs_builder_add(stock_tombs_builder_t *b, const void *begin, size_t bl, const void *end,
                            size_t el, uint64_t seq);
void stock_tombs_builder_release(stock_tombs_builder_t *b);
/* *out: the fragments of b's tombstones (new: stock_tombs_destroy), NULL when b has none. b is
   left as it was (release it). BFH_OK or BFH_E_NOMEM. */
int stock_tombs_finish(stock_tombs_builder_t *b, stock_tombs_t **out);
void stock_tombs_destroy(stock_tombs_t *t); /* NULL allowed */
/* The largest sequence of t's tombstones that cover key (begin <= key < end), 0 when none (or
   t NULL). */
uint64_t stock_tombs_max(const stock_tombs_t *t, const void *key, size_t key_len);

/* ---- Chunks: what one read of a log added (stock_chunk.c) ---------------------------------
   The entries of one stretch of a log, immutable once made: the puts indexed by value (vals,
   for searches) and every entry, deletions included, by key (for gets); tombs: its range
   deletions (NULL: none). data: every entry in a log segment's encoding (stock.h), its
   sequence field seq << 1 | is_value (sequences are below 2^56: LevelDB's and RocksDB's
   internal keys pack them with the type in 64 bits); slots: open addressing by
   bfh_hash64(key), offset + 1 of the key's last entry in the chunk. */
typedef struct stock_chunk {
  atomic_int refs;
  log_seg_t *vals;
  stock_tombs_t *tombs;
  uint8_t *data;
  size_t len;
  uint64_t *slots;
  size_t mask;
} stock_chunk_t;

/* Caller-owned, zeroed to start (then vals.seed and vals.terms set); released after. */
typedef struct stock_chunk_builder {
  stock_seg_builder_t vals, all; /* the puts; every entry (the chunk's data) */
  stock_tombs_builder_t tombs;
  int nomem;
} stock_chunk_builder_t;

/* Appends an entry (a put when is_value, else a deletion), copied; 1 (and b->nomem) without
   memory, else 0 (a log reader's visitor's answer). */
int stock_chunk_builder_add(stock_chunk_builder_t *b, int is_value, uint64_t seq, const void *key,
                            size_t key_len, const void *val, size_t val_len);
void stock_chunk_builder_release(stock_chunk_builder_t *b);
/* A chunk of b's entries (one reference; takes b's data over), or NULL without memory. */
stock_chunk_t *stock_chunk_make(stock_chunk_builder_t *b);
/* Drops a reference to c (NULL: nothing); the last one frees it. */
void stock_chunk_unref(stock_chunk_t *c);
/* The last entry of key in c: 1 (and *is_value, *seq, *v, *vl, borrowed from c) or 0. */
int stock_chunk_find(const stock_chunk_t *c, const void *key, size_t key_len, int *is_value,
                     uint64_t *seq, const uint8_t **v, uint32_t *vl);
/* fn(arg, entry) for each entry of chunks[0..n) in the order added (borrowed), until fn returns
   nonzero; returns what it returned last. */
typedef int (*stock_chunk_fn)(void *arg, const uint8_t *key, size_t key_len, const uint8_t *val,
                              size_t val_len, int is_value, uint64_t seq);
int stock_chunks_each(stock_chunk_t *const *chunks, size_t n, stock_chunk_fn fn, void *arg);

/* ---- States and pins ---------------------------------------------------------------------- */

/* A table file held open from the refresh that listed it until the last state listing it goes:
   an unlinked file stays readable through its descriptor, so the compaction that deletes it
   cannot take it from a search of a state that lists it. The format's pin begins with it
   (stock_ro_format_t.pin_bytes). */
typedef struct stock_pin {
  atomic_int refs;
  env_rfile_t *f;
  atomic_ullong *count; /* the engine's count of pins */
  const struct stock_ro_format *fmt;
  char *path; /* the table's name in messages (after the format's pin, same allocation) */
} stock_pin_t;

/* A table of a state with its key range (borrowed from the format's state). */
typedef struct stock_ro_table {
  engine_table_t t;
  const uint8_t *lo, *hi; /* its smallest and largest user keys */
  size_t lo_len, hi_len;
} stock_ro_table_t;

/* One refreshed state, immutable, shared by the views made from it; freed with its last
   reference. The format's state begins with it (stock_ro_format_t.state_bytes). */
typedef struct stock_ro_state {
  atomic_int refs;
  const struct stock_ro_format *fmt;
  /* The version's tables (the format's state_make), in lookup order (the core's sort): level 0
     newest first, then each deeper level (whose tables do not overlap). */
  stock_ro_table_t *order;
  engine_table_t *tables; /* order's tables sorted by number (the core's) */
  stock_pin_t **pins;     /* parallel to tables: each file held open, or NULL (not pinned) */
  uint64_t *ids;          /* parallel to tables: which file each is (index_table_t.id) */
  size_t ntables;
  stock_chunk_t **chunks; /* oldest first */
  log_seg_t **segs;       /* chunks[i]->vals */
  size_t nchunks;
} stock_ro_state_t;

typedef struct stock_ro_log {
  uint64_t number, resume;
  env_rfile_t *file; /* held open from its first read: which file was read (NULL before) */
  stock_chunk_t **chunks;
  size_t n, cap;
} stock_ro_log_t;

/* The log numbers a version needs (stock_ro_format_t.version_mark): a new log number, or
   another column family, between the two MANIFEST reads of a refresh starts it over. */
typedef struct stock_ro_mark {
  uint64_t log_number, family;
} stock_ro_mark_t;

/* ---- The format interface ------------------------------------------------------------------ */

/* A format's read of table t (through pin p when held, else by name at path; NULL p: a file
   gone is BFH_NOT_FOUND) for arg. */
typedef int (*stock_ro_table_fn)(stock_ro_t *r, const stock_ro_table_t *t, stock_pin_t *p,
                                 const char *path, void *arg, err_t *err);

typedef struct stock_ro_format {
  const char *name;         /* the format's, in messages ("LevelDB") */
  int newest_by_seq;        /* level 0's newest table: the largest max_seq (else number) */
  int dir_kind;             /* engine_detect.h's ENGINE_DIR_* */
  const char *logs_what;    /* what a refresh reads, in messages ("MANIFEST and logs") */
  const char *table_ext[2]; /* a table's file extensions, in the order tried */
  uint64_t id_seed;         /* of the tables' file ids */
  size_t engine_bytes, state_bytes, pin_bytes; /* the format's structs (>= the core's) */
  /* *path: the MANIFEST that CURRENT names (malloc'd): BFH_OK, STOCK_RO_AGAIN (CURRENT is
     being replaced), or an error naming the file. */
  int (*current)(stock_ro_t *r, char **path, err_t *err);
  /* Forgets the version read (another MANIFEST). REQUIRES mu. */
  void (*version_forget)(stock_ro_t *r);
  /* Applies the edits of the MANIFEST at path from offset `from` to the version; *next: where
     the last whole record ends. BFH_NOT_FOUND when the file is gone. REQUIRES mu. */
  int (*version_read)(stock_ro_t *r, const char *path, uint64_t from, uint64_t *next, err_t *err);
  /* After each MANIFEST read: what the version needs of the logs into *m, STOCK_RO_AGAIN (a
     MANIFEST still being written), or what the engine cannot read in it. REQUIRES mu. */
  int (*version_mark)(stock_ro_t *r, stock_ro_mark_t *m, err_t *err);
  /* *nums (malloc'd), *n: the numbers of the logs the version needs, ascending. */
  int (*live_logs)(stock_ro_t *r, uint64_t **nums, size_t *n, err_t *err);
  /* Reads log `number` at path from `from` into b; *next: where the last whole record ends.
     BFH_NOT_FOUND when the file is gone. */
  int (*log_read)(stock_ro_t *r, const char *path, uint64_t number, uint64_t from,
                  stock_chunk_builder_t *b, uint64_t *next, err_t *err);
  /* Fills s (zeroed, state_bytes) from r's version: its own fields and s->order, ntables
     (malloc'd, any order; the core frees it). BFH_OK or BFH_E_NOMEM. REQUIRES mu. */
  int (*state_make)(stock_ro_t *r, stock_ro_state_t *s, err_t *err);
  void (*state_release)(stock_ro_state_t *s); /* frees what state_make made */
  /* A get's read of table t: the key's newest entry in it into arg (a stock_lookup_t), and the
     range tombstones of t that cover the key into its cover. */
  stock_ro_table_fn table_get;
  /* An iterator's read of every entry of s into sorted (stock_ro_table_read reads a table). */
  int (*gather)(stock_ro_t *r, const stock_ro_state_t *s, stock_sorted_t *sorted, err_t *err);
  /* The format's part of a new pin of table i of s (may be NULL), and its release (NULL). */
  void (*pin_init)(stock_ro_state_t *s, size_t i, stock_pin_t *p);
  void (*pin_release)(stock_pin_t *p);
  /* A search's read of table `number` for m: through pin p (held), else by name (BFH_NOT_FOUND
     when the file is gone). */
  int (*table_match)(stock_ro_t *r, stock_pin_t *p, uint64_t number, const block_ref_t *refs,
                     size_t n, const stock_match_t *m, engine_scan_stats_t *st, err_t *err);
  /* The index_source_t of the engine's filters (ctx: r); the core adds io and cache_dir. */
  index_source_t source;
  /* The format's fields of r from the options, before the first refresh (may be NULL), and
     their release (NULL: none). */
  int (*init)(stock_ro_t *r, const bfh_options *opt, err_t *err);
  void (*release)(stock_ro_t *r);
} stock_ro_format_t;

/* The functions of a format that every format has, by their names in its file (static). */
#define STOCK_RO_FORMAT_FIELDS                                                        \
  .current = current, .version_forget = version_forget, .version_read = version_read, \
  .version_mark = version_mark, .live_logs = live_logs, .log_read = log_read,         \
  .state_make = state_make, .state_release = state_release, .table_match = table_match

/* ---- The engine ---------------------------------------------------------------------------- */

struct stock_ro {
  engine_t base;
  /* path, cache_dir, io and sync first, as in stock_rw_t (stock_rw.h): the describe of both
     LevelDB rows reads them through the read-write engine's type. */
  char *path, *cache_dir;
  env_t *io;
  index_sync_t *sync;
  const stock_ro_format_t *fmt;
  char *index_dir; /* bfh_options.index_dir (owned), NULL: memory only */
  /* The persisted index (stock_ro_persisted.c): the tables it bound at open (sorted, owned),
     and whether it is attached to the value index. */
  uint64_t *bound;
  size_t nbound;
  int attached;
  void (*read_hook)(void *arg, uint64_t number); /* tests: before every table read */
  void *read_hook_arg;
  void (*logs_hook)(void *arg); /* tests: between the log reads and the second MANIFEST read */
  void *logs_hook_arg;
  atomic_ullong retries;
  atomic_ullong refreshes; /* refreshes that read the files (not spared by the watch) */
  atomic_ullong log_bytes; /* log bytes read (the formats that count them) */
  /* Something may have changed since the last refresh that succeeded: a watch event, a
     refresh that failed, a file found gone (dir_watch.h's rule). */
  atomic_int stale;
  atomic_ullong pinned;       /* table files held open now (stock_pin_t) */
  unsigned long long pin_max; /* at most this many held open at once */
  uint64_t missing;           /* a table the last refresh found missing (0: none) ... */
  char missing_manifest[64];  /* ... with this MANIFEST name ... */
  uint64_t missing_resume;    /* ... read up to here */

  pthread_mutex_t mu;         /* guards everything below */
  dir_watch_t watch;          /* the directory's contents (DIR_WATCH_CONTENTS) */
  char manifest[64];          /* the MANIFEST name last read ("" before the first) */
  env_rfile_t *manifest_file; /* held open: which file under that name was read */
  uint64_t manifest_resume;
  int recheck; /* the MANIFEST was read whole: check the tables' names against their files */
  int version_changed;  /* since the last state was made */
  stock_ro_log_t *logs; /* ascending numbers */
  size_t nlogs;
  int logs_changed;
  stock_ro_state_t *state; /* the newest state made (a reference); swapped under mu and state_mu */
  /* Guards only the swap of state and the taking of a reference to it, never held while
     calling out: index_sync's reader takes it (read_leaf, through the pins) while a view may
     hold mu and call index_sync. */
  pthread_mutex_t state_mu;
};

/* Opens the database in path read-only as format fmt (a row's open: see stock_ro_rows.h).
   On BFH_OK *out is new (close with e->ops->close). */
int stock_ro_open(const stock_ro_format_t *fmt, const engine_ops_t *ops, const char *path,
                  const bfh_options *opt, env_t *io, index_sync_t *sync, engine_t **out,
                  err_t *err);
/* The engine_ops of every read-only stock engine (the format's row names get and iter); put,
   del and flush refuse (BFH_E_UNSUPPORTED naming the path). */
int stock_ro_put(engine_t *e, const void *key, size_t key_len, const void *val, size_t val_len,
                 err_t *err);
int stock_ro_del(engine_t *e, const void *key, size_t key_len, err_t *err);
int stock_ro_flush(engine_t *e, err_t *err);
int stock_ro_close(engine_t *e, err_t *err);
void stock_ro_stats(engine_t *e, bfh_db_stats *st);
void stock_ro_retried(engine_t *e);
int stock_ro_view_acquire(engine_t *e, engine_view_t **view, err_t *err);
void stock_ro_view_release(engine_t *e, engine_view_t *v);
int stock_ro_scan_blocks(engine_t *e, engine_view_t *v, uint64_t number, const block_ref_t *refs,
                         size_t n, const engine_value_test_t *test, engine_match_fn fn, void *arg,
                         engine_scan_stats_t *st, err_t *err);
/* The engine_ops_t of a read-only stock engine named `row`. */
#define STOCK_RO_OPS(row)                                                                \
  {                                                                                      \
    .name = row, .close = stock_ro_close, .put = stock_ro_put, .del = stock_ro_del,      \
    .get = stock_ro_get, .flush = stock_ro_flush, .view_acquire = stock_ro_view_acquire, \
    .view_release = stock_ro_view_release, .view_tables = stock_view_tables,             \
    .scan_table = stock_scan_table, .scan_memtables = stock_scan_memtables,              \
    .scan_blocks = stock_ro_scan_blocks, .find_memtables = stock_find_memtables,         \
    .iter_create = stock_ro_iter_create, .stats = stock_ro_stats,                        \
    .search_attempts = STOCK_RO_ATTEMPTS, .retried = stock_ro_retried                    \
  }

/* A get's lookup: the key, and its newest entry found so far (val malloc'd, freed by the core). */
typedef struct stock_lookup {
  const void *key;
  size_t key_len;
  int found, is_value, nomem;
  uint64_t seq;   /* the found entry's */
  uint64_t cover; /* the largest sequence of the range tombstones met that cover the key */
  void *val;
  size_t val_len;
} stock_lookup_t;

/* Sets l's entry to (is_value, seq, val) (copied): 0, or 1 (and l->nomem) without memory. */
int stock_lookup_set(stock_lookup_t *l, int is_value, uint64_t seq, const void *val, size_t len);

/* A get (engine_ops_t.get): in the view's state when a search validates, else in the newest
   state, refreshed first (started over while a table is found gone): the state's log chunks
   newest first, then its tables that may hold the key in lookup order (the format's table_get),
   until it is found. An entry is deleted when a range tombstone met before it (l->cover) is
   newer. */
int stock_ro_get(engine_t *e, engine_view_t *view, const void *key, size_t key_len, void **val,
                 size_t *val_len, err_t *err);
/* An iterator (engine_ops_t.iter_create): the format's gather reads every entry of the newest
   state into sorted; started over while a table is found gone. */
int stock_ro_iter_create(engine_t *e, engine_iter_t **it, err_t *err);
/* fn's read of table t of s (the read hook first): through its pin when held, else by name (a
   file gone: BFH_E_BUSY). */
int stock_ro_table_read(stock_ro_t *r, const stock_ro_state_t *s, const stock_ro_table_t *t,
                        stock_ro_table_fn fn, void *arg, err_t *err);
/* Whether key lies in t's key range. */
int stock_ro_table_holds(const stock_ro_table_t *t, const void *key, size_t key_len);

/* The path of table `number` (the format's extensions; malloc'd, the caller frees it). */
int stock_ro_table_path(const stock_ro_t *r, uint64_t number, char **path, err_t *err);
/* A table read's status rc: BFH_NOT_FOUND (the file gone) becomes BFH_E_BUSY. */
int stock_ro_status(stock_ro_t *r, int rc, uint64_t number, err_t *err);

/* ---- The refresh (stock_ro_refresh.c) ------------------------------------------------------ */

/* Brings r->state up to the newest version: BFH_OK, BFH_E_BUSY after STOCK_RO_ATTEMPTS changes
   under it, or an error. REQUIRES mu. */
int stock_ro_refresh_state(stock_ro_t *r, err_t *err);
/* The newest state, refreshed first: on BFH_OK *s is a new reference (stock_ro_state_unref). */
int stock_ro_current_state(stock_ro_t *r, stock_ro_state_t **s, err_t *err);
void stock_ro_state_unref(stock_ro_state_t *s); /* NULL: nothing; the last frees s and its pins */
void stock_pin_unref(stock_pin_t *p);
/* The pin of table `number` in s (borrowed), or NULL (not held: read it by name). */
stock_pin_t *stock_ro_state_pin(const stock_ro_state_t *s, uint64_t number);
/* The pin of table `number` in the newest state (a new reference: stock_pin_unref), or NULL. */
stock_pin_t *stock_ro_newest_pin(stock_ro_t *r, uint64_t number);
/* Drops what was read of the logs (another MANIFEST, another column family). REQUIRES mu. */
void stock_ro_forget_logs(stock_ro_t *r);

/* ---- The persisted index (stock_ro_persisted.c) ------------------------------------------- */

/* At open, after the first refresh: opens <index_dir>/BFH-INDEX, binds it to the live tables
   and attaches it to the value index (a damaged file is counted and left unused). Nothing when
   the format stamps no table. */
void stock_ro_persisted_open(stock_ro_t *r);
/* At close, before the loader stops: writes <index_dir>/BFH-INDEX when it is due (see
   stock_ro_persisted.c) and detaches the file from the value index. */
void stock_ro_persisted_close(stock_ro_t *r);

/* ---- Counters and hooks (tests) ------------------------------------------------------------ */
/* How many refreshes and searches started over because the database changed under them
   (retries); how many refreshes read CURRENT, the MANIFEST and the logs (the others found
   nothing new in the directory watch: dir_watch.h), and how many log bytes they read (the
   formats that count them: RocksDB's WALs); how many table files the handle holds open now
   (pinned: see "Retries" in doc/leveldb.md). */
typedef struct stock_ro_counts {
  uint64_t retries, refreshes, log_bytes, pinned;
} stock_ro_counts_t;
stock_ro_counts_t stock_ro_counts(engine_t *e);
/* Hold at most n table files open from the next refresh on, which makes a new state (the
   default is half of the process's RLIMIT_NOFILE); 0 turns pinning off, so that a table
   compacted away under a search makes the search start over. */
void stock_ro_set_pin_max(engine_t *e, uint64_t n);
/* fn(arg, number) runs before every read of a table file (scans, gets), so that a test can
   make the file vanish there. NULL removes the hook. */
void stock_ro_set_read_hook(engine_t *e, void (*fn)(void *arg, uint64_t number), void *arg);
/* fn(arg) runs in every refresh between its log reads and its second MANIFEST read (steps 2
   and 3 at the top of readonly.c and rdb_readonly.c), so that a test can make the owner flush
   its memtable there. NULL removes the hook. */
void stock_ro_set_logs_hook(engine_t *e, void (*fn)(void *arg), void *arg);

#endif

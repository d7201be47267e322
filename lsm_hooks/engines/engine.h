/* engine_t: what the public API and non-key search need from a key-value engine.
 *
 * Two implementations: engine_lsm.c (bfh's own LSM, lsm/db.h, with the value-filter
 * table-build hook) and engines/leveldb/ldb_engine.c (stock LevelDB through its C API, with the
 * emulated hook of doc/leveldb.md). An engine reports the tables it makes live and drops to
 * the index_sync_t given at open (index_sync.h), which alone writes the value index; the
 * engine never touches the index. search.c runs the paper's Algorithms 1-3 over any engine.
 *
 * An engine kind (engine_kind_t, below) is one row of the table in engines.c: a name,
 * capability flags and the functions that work on a closed database (open, repair, check)
 * or on an open one beyond engine_ops_t (describe a table). Every front end asks
 * that table (engine_kind_find, or bfh_engine_info through bfh.h) what an engine is called
 * and what it can do; only the table and the engines' own files name a bfh_engine value.
 * Adding an engine is one folder (its files), one row, one enum value and one build line
 * (doc/architecture.md, "Adding an engine").
 *
 * The seam is one-way, in the shape of SQLite's sqlite3_vfs and os.c: the layers above (api/,
 * search/) call an engine only through the engine_* wrappers at the end of this file and
 * read its kind's row; an engine includes nothing of search/ and nothing of index/ but
 * index_sync.h. What an engine says of itself (describe, check) it says in the types of
 * this file; the value filters' facts are added above it (api/db_inspect.c).
 */
#ifndef BFH_LSM_HOOKS_ENGINE_H
#define BFH_LSM_HOOKS_ENGINE_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "bfh.h"
#include "filters/block_filter.h"
#include "index/index_sync.h"
#include "util/block_ref.h"
#include "util/err.h"
#include "util/sort.h"

/* The file the API writes into a database directory at its first open with value filters
   (m, k and the seed: api/db_params.h). The own engine takes it as the mark of a directory
   opened before, which must then hold a database (lsm_options.marker_file). */
#define ENGINE_PARAMS_FILE "BFH-PARAMS"

typedef struct engine engine_t;
typedef struct engine_view engine_view_t; /* engine-specific */
typedef struct engine_iter engine_iter_t;

/* An ordered iterator (bfh_iter_* in bfh.h is one over the handle's engine), in the shape of
   LevelDB's Iterator: seek_first or seek, then valid/key/value/next. key and value are
   borrowed until the next call that moves the iterator. status: BFH_OK, or the error that
   made valid() false early (with its message in err). Not thread-safe: one thread at a
   time. */
typedef struct engine_iter_ops {
  void (*destroy)(engine_iter_t *it); /* NULL is allowed */
  void (*seek_first)(engine_iter_t *it);
  void (*seek)(engine_iter_t *it, const void *key, size_t key_len); /* first key >= key */
  int (*valid)(const engine_iter_t *it);
  void (*next)(engine_iter_t *it);                            /* REQUIRES: valid */
  const void *(*key)(const engine_iter_t *it, size_t *len);   /* REQUIRES: valid */
  const void *(*value)(const engine_iter_t *it, size_t *len); /* REQUIRES: valid */
  int (*status)(const engine_iter_t *it, err_t *err);
} engine_iter_ops_t;

struct engine_iter {
  const engine_iter_ops_t *ops;
};

/* A table's max_seq when the engine cannot bound its sequence numbers: every search that
   orders by sequence (the newest K) must read it. */
#define ENGINE_SEQ_UNKNOWN UINT64_MAX

typedef struct engine_table {
  uint64_t number; /* file number: the value index's leaf id */
  uint64_t size;   /* bytes */
  int level;
  /* At least the largest sequence number of the table's entries (exactly it where the engine
     records it; ENGINE_SEQ_UNKNOWN when it does not know): the newest K reads tables by
     decreasing max_seq and stops once its K keys are all newer than every unread table's. */
  uint64_t max_seq;
} engine_table_t;

/* Called for each entry whose value passes the search's value test, with the entry's sequence
   number (the write's: every table, memtable and log entry carries one); return nonzero to
   stop. */
typedef int (*engine_match_fn)(void *arg, const void *key, size_t key_len, uint64_t seq);

/* What a search looks for in a value: the engine seam's value test. Borrowed by every call
   that takes it, for the call.
   - match NULL (a whole-value search): the values that are exactly the bytes val[0, val_len),
     compared with memcmp; a scan may look for those bytes before it decodes an entry.
   - match set (a predicate, query/expr.h): the values for which match(match_arg, value, len)
     is nonzero, each decoded and tested; val is unused. A negative return (the test could
     not be evaluated, e.g. out of memory) counts as a match, so that the key is kept as a
     candidate and its validation, which evaluates the test again, reports the error: a
     failing test never drops a key. Every value that passes holds one of the needles
     needles[0, nneedles) as bytes (0: no such promise), so a scan of named blocks
     (scan_blocks) may decode only the entries whose value holds one
     (lsm/block.h block_scan_containing). */
typedef struct engine_value_test {
  const void *val;
  size_t val_len;
  int (*match)(void *match_arg, const void *val, size_t len);
  void *match_arg;
  const block_needle_t *needles;
  size_t nneedles;
} engine_value_test_t;

/* The test of a whole-value search of val[0, val_len). */
static inline engine_value_test_t engine_value_test_equal(const void *val, size_t val_len) {
  engine_value_test_t t = {val, val_len, NULL, NULL, NULL, 0};
  return t;
}

typedef struct engine_scan_stats {
  uint64_t entries;    /* entries decoded */
  uint64_t bytes_read; /* file bytes read */
} engine_scan_stats_t;

typedef struct engine_ops {
  const char *name;
  /* Frees e (not its index_sync). A failure's message (naming the file) goes to err (may be
     NULL). */
  int (*close)(engine_t *e, err_t *err);
  int (*put)(engine_t *e, const void *key, size_t key_len, const void *val, size_t val_len,
             err_t *err);
  int (*del)(engine_t *e, const void *key, size_t key_len, err_t *err);
  /* On BFH_OK *val is malloc'd (non-NULL even if empty). BFH_NOT_FOUND if no live value.
     view: NULL (bfh_get: the newest version), or a view the caller holds on e (a search
     validating its candidates): the get then reads a version at least as new as the view's.
     An engine whose writes it sees itself reads its newest (the own engine, LevelDB); the
     read-only engine, which learns of newer versions only by a refresh, reads the view's. */
  int (*get)(engine_t *e, engine_view_t *view, const void *key, size_t key_len, void **val,
             size_t *val_len, err_t *err);
  int (*flush)(engine_t *e, err_t *err);
  /* Pins a consistent view of the live tables and memtables: every table it lists stays
     readable until release, and every entry acknowledged before the call is in a listed
     table or in the memtables the view scans. It reads no table: a table the value index
     has no leaf for yet is scanned by the search. On BFH_OK, release *view with
     view_release. */
  int (*view_acquire)(engine_t *e, engine_view_t **view, err_t *err);
  void (*view_release)(engine_t *e, engine_view_t *view);
  /* The view's live tables (array owned by the view). */
  size_t (*view_tables)(const engine_view_t *view, const engine_table_t **tables);
  /* Calls fn for every value entry of table `number` (in the view) whose value passes test;
     reads only that table. */
  int (*scan_table)(engine_t *e, engine_view_t *view, uint64_t number,
                    const engine_value_test_t *test, engine_match_fn fn, void *arg,
                    engine_scan_stats_t *st, err_t *err);
  /* The same over the view's memtables (for LevelDB: its live log files). */
  int (*scan_memtables)(engine_t *e, engine_view_t *view, const engine_value_test_t *test,
                        engine_match_fn fn, void *arg, engine_scan_stats_t *st, err_t *err);
  /* scan_table over the data blocks refs[0, n) of table `number` only (from its block
     filter, filters/block_filter.h). BFH_E_CORRUPT when a ref is not a data block of the
     table, or a block is damaged (the message says which). */
  int (*scan_blocks)(engine_t *e, engine_view_t *view, uint64_t number, const block_ref_t *refs,
                     size_t n, const engine_value_test_t *test, engine_match_fn fn, void *arg,
                     engine_scan_stats_t *st, err_t *err);
  /* scan_memtables through the memtables' value index: the same entries, found by a hash
     lookup instead of a scan (st->entries counts the entries compared). hash is an item hash
     the index holds every passing value under: for a whole-value test the search's one hash
     of val, bfh_value_hash(val, val_len, seed) under the seed of the handle's value filters;
     for a predicate the item hash of one (attribute, term) every passing value holds
     (query/terms.h). The index hashes nothing again. */
  int (*find_memtables)(engine_t *e, engine_view_t *view, const engine_value_test_t *test,
                        uint64_t hash, engine_match_fn fn, void *arg, engine_scan_stats_t *st,
                        err_t *err);
  /* An ordered iterator over the live entries of one consistent version, the newest when
     it is made (engine_iter_t below). On BFH_OK *it is new; destroy it with
     (*it)->ops->destroy before the engine closes. NULL in a kind without
     ENGINE_CAP_ITERATE. */
  int (*iter_create)(engine_t *e, engine_iter_t **it, err_t *err);
  /* Adds what the engine counts to st (bfh_stats: bytes_written). May be NULL: none. */
  void (*stats)(engine_t *e, bfh_db_stats *st);
  /* Optional (NULL: none; the Cuckoo Index then reads such a table whole at every search):
     calls fn with bfh_value_hash(value, seed) of every value entry (not deletions) of table
     `number` of the view, reading only that table. The Cuckoo Index is built from it
     (index/cuckoo_index.h). */
  int (*table_hashes)(engine_t *e, engine_view_t *view, uint64_t number, uint64_t seed,
                      void (*fn)(void *arg, uint64_t hash), void *arg, engine_scan_stats_t *st,
                      err_t *err);
  /* Optional (NULL: none; a table's value-to-block map is then never read): reads len bytes
     at offset off of the contents of meta block `name` of table `number` of the view into
     buf. BFH_OK; BFH_E_CORRUPT if the table has no such block or it is shorter (the message
     says which); the I/O layer's error. Used by the lean index's maps
     (index/value_block_map.h). */
  int (*read_meta)(engine_t *e, engine_view_t *view, uint64_t number, const char *name,
                   uint64_t off, size_t len, void *buf, err_t *err);
  /* Optional (NULL: none): reads ahead the pieces of the view's tables a search will read
     next, all together, where the reads that follow find them (block_ahead_t). Only an
     optimisation: what it does not read is read by the call that needs it, which reports
     any error. */
  void (*read_ahead)(engine_t *e, engine_view_t *view, const block_ahead_t *r, size_t n);
  /* Optional (NULL: none): reads ahead what the gets of keys[0, n) on the newest state will
     read first, all together, where those gets find it. An optimisation only, as read_ahead;
     validation calls it before the gets of its candidates (engine_get_ahead). */
  void (*get_ahead)(engine_t *e, const key_ref_t *keys, size_t n);
  /* The retry capability (0: none). An engine whose files another process deletes under its
     views (the read-only engines) says so with BFH_E_BUSY from a scan; a search over it then
     starts over from a new view, with the same plan and hash, at most search_attempts times
     in all (search.c honours it in its own loop, reporting keys only from an attempt that
     read every table it listed). retried (may be NULL) counts each start over in e's
     stats. */
  int search_attempts;
  void (*retried)(engine_t *e);
} engine_ops_t;

/* The operations table of an engine whose file names its static functions e_close, e_put,
   e_del, e_get, e_flush, e_view_acquire, e_view_release, e_view_tables, e_scan_table,
   e_scan_memtables, e_scan_blocks, e_find_memtables, e_iter_create and e_stats:
   static const engine_ops_t ops = ENGINE_OPS("name");
   ENGINE_OPS_FIELDS is the same list without the braces, for a table with optional ops more:
   {ENGINE_OPS_FIELDS("name"), .table_hashes = e_table_hashes} */
#define ENGINE_OPS(engine_name) \
  { ENGINE_OPS_FIELDS(engine_name) }
#define ENGINE_OPS_FIELDS(engine_name)                                                            \
  .name = engine_name, .close = e_close, .put = e_put, .del = e_del, .get = e_get,                \
  .flush = e_flush, .view_acquire = e_view_acquire, .view_release = e_view_release,               \
  .view_tables = e_view_tables, .scan_table = e_scan_table, .scan_memtables = e_scan_memtables,   \
  .scan_blocks = e_scan_blocks, .find_memtables = e_find_memtables, .iter_create = e_iter_create, \
  .stats = e_stats

struct engine {
  const engine_ops_t *ops;
};

/* Is table `number` in tables[0, n) (sorted by number)? */
static inline int engine_tables_contain(const engine_table_t *tables, size_t n, uint64_t number) {
  size_t i = U64_LOWER_BOUND(tables, n, number, number);
  return i < n && tables[i].number == number;
}

struct env;

/* Damage a check found: file (relative to the database's directory), the byte offset of the
   damaged record or block in it, and what is wrong (bfh_damage_fn's shape). */
typedef void (*engine_damage_fn)(void *arg, const char *file, uint64_t offset, const char *what);

/* What a check read and found (bfh_check_stats' counters). */
typedef struct engine_check_stats {
  uint64_t files;           /* files read */
  uint64_t bytes;           /* their bytes */
  uint64_t blocks;          /* table blocks checked */
  uint64_t records;         /* log and manifest records checked */
  uint64_t damaged;         /* damaged records, blocks and files reported */
  uint64_t torn_tails;      /* logs and manifests that end in a torn tail */
  uint64_t torn_tail_bytes; /* their bytes */
} engine_check_stats_t;

/* The value-filter parameters a check verifies the database's filter cache files with (all 0
   when they are not known: the cache files' own are then taken). */
typedef struct engine_filter_params {
  uint64_t m;
  uint32_t k;
  uint64_t seed;
} engine_filter_params_t;

/* What an engine kind can do (engine_kind_t.caps). bfh_open and bfh's front ends decide by
   these, never by the engine's name or number. */
enum {
  ENGINE_CAP_WRITES = 1u << 0,         /* put, delete and flush (else BFH_E_UNSUPPORTED) */
  ENGINE_CAP_READ_ONLY = 1u << 1,      /* the row bfh_options.read_only opens: no lock taken,
                                          nothing written into the database's directory */
  ENGINE_CAP_STANDALONE = 1u << 2,     /* the stand-alone index can be kept: at_rest (the
                                          index is built again if the database changed since
                                          bfh closed it cleanly), and either open_replaying
                                          (the index sees every write the open replays) or
                                          not (it is built again after any other close) */
  ENGINE_CAP_REPAIR = 1u << 3,         /* repair */
  ENGINE_CAP_CHECK = 1u << 4,          /* check */
  ENGINE_CAP_ITERATE = 1u << 5,        /* engine_ops_t.iter_create (bfh_iter_*) */
  ENGINE_CAP_MEMTABLE_INDEX = 1u << 6, /* bfh_options.memtable_index has an effect */
  ENGINE_CAP_OWN = 1u << 7,           /* bfh's own LSM (lsm/db.h): engine_lsm.h reaches its lsm_db_t
                                         (testbed code that measures the engine's internals) */
  ENGINE_CAP_REPAIR_REPORT = 1u << 8, /* repair fills bfh_repair_report */
  ENGINE_CAP_COLUMN_FAMILY = 1u << 9, /* bfh_options.column_family names the one searched */
  ENGINE_CAP_BLOCK_MAPS = 1u << 10,   /* its tables get value-to-block maps under the lean
                                         layout (bfh_options.block_maps has an effect) */
  ENGINE_CAP_PARAMS_IN_DB = 1u << 11  /* a read-only row whose value filters are the
                                         database's own (built into its tables): bfh_open
                                         reads BFH-PARAMS from the database's directory and
                                         writes none anywhere */
};

/* A write an open replays from a log (is_value 0: a deletion); nonzero stops the open with
   BFH_E_NOMEM. */
typedef int (*engine_replay_fn)(void *arg, const void *key, size_t key_len, const void *val,
                                size_t val_len, int is_value);

#define ENGINE_KIND_VERSION 1

/* An engine kind: one row of the table in engines.c, in the shape of a VFS registry entry
   (a versioned struct of capability flags and functions, found by name or number). A
   function the caps do not promise may be NULL. */
typedef struct engine_kind {
  int version;      /* ENGINE_KIND_VERSION */
  bfh_engine id;    /* bfh_options.engine */
  const char *name; /* bfh_engine_name: "lsm", "leveldb" (rows of one id share it) */
  const char *row;  /* this row's own name: "leveldb-readonly" */
  const char *what; /* one line for --help and doc/ */
  unsigned caps;    /* ENGINE_CAP_* */
  /* On BFH_OK *e is new (close with e->ops->close). io: bfh's own file accesses (NULL: the
     real I/O layer; tests inject faults). sync is borrowed and must outlive the engine;
     NULL when value filters are off. Messages name the directory. */
  int (*open)(const char *path, const bfh_options *opt, struct env *io, index_sync_t *sync,
              engine_t **e, err_t *err);
  /* open, calling replay(arg, key, key_len, val, val_len, is_value) for every write its
     recovery replays from logs, before it returns (ENGINE_CAP_STANDALONE). */
  int (*open_replaying)(const char *path, const bfh_options *opt, struct env *io,
                        index_sync_t *sync, engine_replay_fn replay, void *replay_arg, engine_t **e,
                        err_t *err);
  /* An identity of the closed database in path, *id (a malloc'd string the client frees):
     two are equal only if no write reached the database between them, this process's or
     another's, and its files were not put back from a copy (ENGINE_CAP_STANDALONE: at_rest.h). */
  int (*at_rest)(const char *path, struct env *io, char **id, err_t *err);
  /* bfh_repair (api/repair.c), in three steps. repair_lock checks that path holds
     this engine's database, without writing (BFH_E_INVALID naming what it holds instead), and
     takes the locks its owners take (BFH_E_BUSY when it is open, in a bfh handle or in any
     process of the stock engine), creating at most LOCK; *lock holds them until
     repair_unlock(*lock) (NULL allowed). repair then repairs dir, a copy of path that nobody
     else knows (repair_stage.h; rep is zeroed by the caller), and the caller checks the result
     before the copy takes path's place. */
  int (*repair_lock)(const char *path, void **lock, err_t *err);
  void (*repair_unlock)(void *lock);
  int (*repair)(const char *dir, const bfh_options *opt, bfh_repair_report *rep, err_t *err);
  /* The column families of the closed database in path (ENGINE_CAP_COLUMN_FAMILY): *names
     (malloc'd, freed with env_names_free(*names, *n)). NULL: the engine has one, unnamed. */
  int (*families)(const char *path, char ***names, size_t *n, err_t *err);
  /* Checks every file of the closed database in path (bfh_check) with the stored value-filter
     parameters p (all 0 when unknown), reporting damage to damage(arg, ...) and adding to st
     (and to *cache_damaged the damaged files of a cache bfh rebuilds by itself: harmless).
     BFH_OK when the check ran, whatever it found. */
  int (*check)(const char *path, const engine_filter_params_t *p, engine_damage_fn damage,
               void *arg, engine_check_stats_t *st, uint64_t *cache_damaged, err_t *err);
  /* Fills the engine's facts of live table `number` of the open engine e into info (bfh_tables):
     entries and key range (malloc'd copies the caller frees whatever the result); and, for an
     engine whose tables carry their filters (the own engine), the filter facts its table holds.
     A stock engine leaves the filter facts alone: api/db_inspect.c adds them from the value
     index. */
  int (*describe)(engine_t *e, uint64_t number, bfh_table_info *info, err_t *err);
} engine_kind_t;

/* The row that opens opt (its engine and read_only), or NULL for none. */
const engine_kind_t *engine_kind_for(bfh_engine id, int read_only);
/* The read-write row of engine id (the read-only one when it has no other), or NULL. */
const engine_kind_t *engine_kind(bfh_engine id);
/* The first row named name (bfh_engine_name), or NULL. */
const engine_kind_t *engine_kind_find(const char *name);
/* Row i of the table (0, 1, ...), NULL past the last. */
const engine_kind_t *engine_kind_at(size_t i);

/* ---- The wrappers (as SQLite's os.c over sqlite3_vfs) -----------------------------------
   Everything above the engines calls an engine through these, never through e->ops
   directly: one place to trace, count or check a call. Each has the contract of its op in
   engine_ops_t; the optional ones (stats, table_hashes, read_meta) say whether e has it. */

static inline int engine_close(engine_t *e, err_t *err) {
  return e->ops->close(e, err);
}
static inline int engine_put(engine_t *e, const void *key, size_t key_len, const void *val,
                             size_t val_len, err_t *err) {
  return e->ops->put(e, key, key_len, val, val_len, err);
}
static inline int engine_del(engine_t *e, const void *key, size_t key_len, err_t *err) {
  return e->ops->del(e, key, key_len, err);
}
static inline int engine_get(engine_t *e, engine_view_t *view, const void *key, size_t key_len,
                             void **val, size_t *val_len, err_t *err) {
  return e->ops->get(e, view, key, key_len, val, val_len, err);
}
static inline int engine_flush(engine_t *e, err_t *err) {
  return e->ops->flush(e, err);
}
static inline int engine_view_acquire(engine_t *e, engine_view_t **view, err_t *err) {
  return e->ops->view_acquire(e, view, err);
}
static inline void engine_view_release(engine_t *e, engine_view_t *view) {
  e->ops->view_release(e, view);
}
static inline size_t engine_view_tables(engine_t *e, const engine_view_t *view,
                                        const engine_table_t **tables) {
  return e->ops->view_tables(view, tables);
}
static inline int engine_scan_table(engine_t *e, engine_view_t *view, uint64_t number,
                                    const engine_value_test_t *test, engine_match_fn fn, void *arg,
                                    engine_scan_stats_t *st, err_t *err) {
  return e->ops->scan_table(e, view, number, test, fn, arg, st, err);
}
static inline int engine_scan_memtables(engine_t *e, engine_view_t *view,
                                        const engine_value_test_t *test, engine_match_fn fn,
                                        void *arg, engine_scan_stats_t *st, err_t *err) {
  return e->ops->scan_memtables(e, view, test, fn, arg, st, err);
}
static inline int engine_scan_blocks(engine_t *e, engine_view_t *view, uint64_t number,
                                     const block_ref_t *refs, size_t n,
                                     const engine_value_test_t *test, engine_match_fn fn, void *arg,
                                     engine_scan_stats_t *st, err_t *err) {
  return e->ops->scan_blocks(e, view, number, refs, n, test, fn, arg, st, err);
}
static inline int engine_find_memtables(engine_t *e, engine_view_t *view,
                                        const engine_value_test_t *test, uint64_t hash,
                                        engine_match_fn fn, void *arg, engine_scan_stats_t *st,
                                        err_t *err) {
  return e->ops->find_memtables(e, view, test, hash, fn, arg, st, err);
}
static inline int engine_iter_create(engine_t *e, engine_iter_t **it, err_t *err) {
  return e->ops->iter_create(e, it, err);
}
static inline void engine_stats(engine_t *e, bfh_db_stats *st) {
  if (e->ops->stats) e->ops->stats(e, st);
}
static inline int engine_has_table_hashes(const engine_t *e) {
  return e->ops->table_hashes != NULL;
}
static inline int engine_table_hashes(engine_t *e, engine_view_t *view, uint64_t number,
                                      uint64_t seed, void (*fn)(void *arg, uint64_t hash),
                                      void *arg, engine_scan_stats_t *st, err_t *err) {
  return e->ops->table_hashes(e, view, number, seed, fn, arg, st, err);
}
static inline int engine_has_read_meta(const engine_t *e) {
  return e->ops->read_meta != NULL;
}
static inline int engine_has_read_ahead(const engine_t *e) {
  return e->ops->read_ahead != NULL;
}
static inline void engine_read_ahead(engine_t *e, engine_view_t *view, const block_ahead_t *r,
                                     size_t n) {
  if (e->ops->read_ahead && n) e->ops->read_ahead(e, view, r, n);
}
static inline int engine_read_meta(engine_t *e, engine_view_t *view, uint64_t number,
                                   const char *name, uint64_t off, size_t len, void *buf,
                                   err_t *err) {
  return e->ops->read_meta(e, view, number, name, off, len, buf, err);
}
static inline void engine_get_ahead(engine_t *e, const key_ref_t *keys, size_t n) {
  if (e->ops->get_ahead && n) e->ops->get_ahead(e, keys, n);
}
/* The keys validation reads ahead at a time (engine_get_ahead): a batch of reads, and few
   keys validated past a caller that stops early. */
#define ENGINE_GET_AHEAD_KEYS 64
/* The retry capability: how many attempts a search over e makes in all (1: no retry). */
static inline int engine_search_attempts(const engine_t *e) {
  return e->ops->search_attempts > 1 ? e->ops->search_attempts : 1;
}
static inline void engine_retried(engine_t *e) {
  if (e->ops->retried) e->ops->retried(e);
}

/* Does an entry (type, value) of a table or memtable match the value searched for? Values
   match when they are the same bytes; deletions never match. */
static inline int engine_value_matches(int is_value, const void *val, size_t val_len,
                                       const void *want, size_t want_len) {
  return is_value && val_len == want_len && (val_len == 0 || memcmp(val, want, val_len) == 0);
}

/* Does an entry (type, value) pass test? Deletions never do; a whole-value test compares
   bytes (engine_value_matches), a predicate is called (a negative return passes: see
   engine_value_test_t). */
static inline int engine_value_test_passes(const engine_value_test_t *test, int is_value,
                                           const void *val, size_t val_len) {
  if (!test->match) return engine_value_matches(is_value, val, val_len, test->val, test->val_len);
  return is_value && test->match(test->match_arg, val, val_len) != 0;
}

/* Validation: 1 if the latest version of key (at least as new as view's, engine_ops_t.get;
   view NULL: the newest) is live and passes test, 0 if not, or a negative status: the
   failing get's, or the predicate's own failure (with a message saying so). Every search
   method, the stand-alone index's too, reports a key only after this. */
static inline int engine_key_passes(engine_t *e, engine_view_t *view, const void *key,
                                    size_t key_len, const engine_value_test_t *test, err_t *err) {
  void *cur = NULL;
  size_t cur_len = 0;
  int rc = engine_get(e, view, key, key_len, &cur, &cur_len, err);
  if (rc == BFH_NOT_FOUND) return 0;
  if (rc != BFH_OK) return rc;
  int holds = test->match ? test->match(test->match_arg, cur, cur_len)
                          : engine_value_matches(1, cur, cur_len, test->val, test->val_len);
  free(cur);
  if (holds < 0)
    return err_set(err, holds,
                   "validation: the predicate could not be evaluated on the value of a key of "
                   "%zu bytes",
                   key_len);
  return holds > 0;
}

/* engine_key_passes of the whole-value test of val: 1 if key's latest version is live and
   holds exactly val. */
static inline int engine_key_holds(engine_t *e, engine_view_t *view, const void *key,
                                   size_t key_len, const void *val, size_t val_len, err_t *err) {
  engine_value_test_t test = engine_value_test_equal(val, val_len);
  return engine_key_passes(e, view, key, key_len, &test, err);
}

#endif

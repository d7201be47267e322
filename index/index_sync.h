/* index_sync_t: the one writer of the value index. Engines say which tables are live;
 * index_sync gives every live table its leaf and drops the leaves of tables that are gone.
 *
 * An engine reports tables in one of two ways:
 *   pushed (the own engine, through its table-build hook, lsm/table_hook.h):
 *     index_sync_table_built    the table's filter and where it is stored, when the table
 *                               file is complete; nothing enters the index yet
 *     index_sync_table_added    the version holding the table is installed: the built
 *                               filter becomes its leaf (O(1): value_index queues it). A
 *                               table added without a built filter (the live tables at
 *                               open) is marked to be read
 *     index_sync_table_removed  the table left the live version
 *   pulled (stock LevelDB, which has no build hook):
 *     index_sync_tables_listed  the whole live list: new tables are marked to be read,
 *                               tables missing from it are gone
 * Tables marked to be read get their leaf in index_sync_run: from the sidecar cache when the
 * engine has one (index_source_t.cache_dir, index/leaf_cache.h), else through the
 * source's read_leaf (the own engine reads the table's meta block, LevelDB's adapter the
 * whole table). run reads files without holding the lock the reports take, so a report (a
 * flush, a compaction, a search's view) never waits for table reads.
 *
 * Block filters travel with the leaves: a table's block filter enters the value index's
 * block index (value_index_blocks) with its leaf and leaves with it. A leaf loaded from a
 * cache file made before block filters (or with them off) gets its block filter later, in
 * a run (INDEX_RUN_AGED included), by reading the table again; its cache file is rewritten
 * then. Until that, the table is read whole when its leaf says maybe.
 *
 * A table without a leaf is never skipped (value_index_select scans every table it has no
 * leaf for), so a table not indexed yet, or whose filter cannot be read, costs a scan, never
 * an answer.
 *
 * Views: a view made from a listed version pins the epoch index_sync_tables_listed returns;
 * the leaf of a table found gone at epoch G is removed once every pinned epoch is >= G (no
 * live view lists it), so that a search never loses a leaf between its list and its probe.
 * The own engine never pins: its snapshots keep their tables readable, and a table without
 * a leaf is scanned anyway.
 *
 * Thread-safe. Reports may come from any thread; runs are serialized.
 */
#ifndef BFH_LSM_HOOKS_INDEX_SYNC_H
#define BFH_LSM_HOOKS_INDEX_SYNC_H

#include <stddef.h>
#include <stdint.h>

#include "filters/block_filter.h"
#include "filters/value_filter.h"
#include "filters/value_terms.h"
#include "util/env.h"
#include "index/value_block_map.h"
#include "index/value_index.h"
#include "util/err.h"
/* The engines' one door to the index (engine.h: an engine includes nothing else of index/).
   Besides the reports below, an engine uses the value-to-block map builder and the value
   index's parameters (value_block_map.h, value_index.h: what read_leaf hands over); the filter
   cache, the stamps and the persisted index it reaches through the functions of "The
   persisted index and stamps" below, never through leaf_cache.h or persisted_index.h. */

typedef struct index_sync index_sync_t;

/* What index_source_t.read_leaf gives for one table. */
typedef struct index_leaf_read {
  value_filter_t *filter; /* new, owned by the caller */
  /* The table's block filter (new, owned by the caller), or NULL: the table has none, or it
     is damaged (blocks_err.code != BFH_OK says which, with a message): the table is then
     read whole when its leaf says maybe. */
  block_filter_t *blocks;
  err_t blocks_err;
  /* The file a leaf on disk is read from (malloc'd), or NULL (the filter is not stored in a
     file of its own: with a cache_dir the cache file holds the leaf); offset: where the
     serialized filter starts in it. */
  char *path;
  uint64_t offset;
  uint64_t bytes_read; /* what the read cost */
  /* The tag of the table's bytes the filters were built from (with a cache_dir; see
     index_source_t.table_tag): it binds the cache file to them. */
  uint64_t tag;
  /* Set by index_sync before read_leaf (with a cache_dir and block maps in use): read_leaf may
     also build the table's value-to-block map, serialized into map_head / map_chunks (new,
     owned by the caller; NULL: none), which index_sync writes into the table's cache file and
     loads from there (leaf_cache.h). */
  int want_map;
  /* Set by index_sync before read_leaf: the items each value is added under
     (index_sync_terms; NULL: the whole value's hash). */
  const value_terms_t *terms;
  uint8_t *map_head, *map_chunks;
  size_t map_head_len, map_chunks_len;
  /* The table's map loaded from its cache file (index_sync's own; new, owned). */
  value_block_map_t *map;
} index_leaf_read_t;

/* Where the filters of an engine's tables come from. */
typedef struct index_source {
  /* Reads the value filter (m, k, seed of p) of table `number`, and its block filter (of
     p->block_bits bits per value; none when 0), into *out (zeroed by the caller). On BFH_OK
     out->filter is set. BFH_NOT_FOUND: the table file is gone (it will be reported gone);
     another error: the table cannot be read (no leaf, always scanned). Called from
     index_sync_run with no lock of index_sync held. */
  int (*read_leaf)(void *ctx, uint64_t number, const value_index_params_t *p,
                   index_leaf_read_t *out, err_t *err);
  void *ctx;
  /* The sidecar cache directory (leaf_cache.h), or NULL for none. With leaves on disk a
     table's cache file is its leaf (written before the leaf is added); with leaves in
     memory it only makes a reopen faster and is written once the table has been live for
     cache_delay_ns (or at index_sync_close_caches). */
  const char *cache_dir;
  /* Required with a cache_dir: the tag of table `number` as it is now, a digest of its bytes
     (for LevelDB, ldb_table_tag). A cache file is trusted only when the tag it was made with
     is this one; else it is stale and the table is read again. Any error (the table gone or
     damaged): the cache file is not used, read_leaf says what the table is. Called from
     index_sync_run with no lock of index_sync held. */
  int (*table_tag)(void *ctx, uint64_t number, uint64_t *tag, err_t *err);
  /* Optional, with a cache_dir: the stamp of table `number` as it is now (leaf_cache_stamp:
     what the file system says of its file, and its footer; a stat and one small read, not a
     pass over the table). A cache file made with this stamp is taken as the table's without
     table_tag; any other stamp falls back to table_tag. The stamp is taken before read_leaf
     reads the table, so that a file changed during the read never carries the new stamp
     with the old filters. Called with no lock of index_sync held. */
  int (*table_stamp)(void *ctx, uint64_t number, uint64_t *stamp, err_t *err);
  uint64_t cache_delay_ns;
  env_t *io; /* for the cache files (borrowed; NULL: env_default()) */
  /* Optional: reads only the block filter of table `number` (of p->block_bits bits per
     value) into *out (new, owned by the caller; NULL: the table has none). BFH_OK, or why
     not (the table is then read whole until its leaf comes). Used by index_sync_load_blocks
     before the leaves are read. Called with no lock of index_sync held. */
  int (*read_blocks)(void *ctx, uint64_t number, const value_index_params_t *p,
                     block_filter_t **out, err_t *err);
} index_source_t;

/* Where the leaf of a table came from. */
typedef enum index_leaf_source {
  INDEX_LEAF_NONE,       /* not known, not indexed yet, or gone */
  INDEX_LEAF_BUILT,      /* handed over by the table-build hook */
  INDEX_LEAF_CACHED,     /* loaded from its sidecar cache file */
  INDEX_LEAF_READ,       /* read by the source's read_leaf */
  INDEX_LEAF_UNREADABLE, /* the table could not be read: no leaf, always scanned */
} index_leaf_source_t;

typedef struct index_sync_stats {
  uint64_t tables_built;         /* leaves handed over by the hook and added */
  uint64_t tables_read;          /* leaves made by read_leaf */
  uint64_t tables_cached;        /* leaves loaded from the sidecar cache */
  uint64_t cache_stale;          /* cache files found stale or damaged, and rebuilt */
  uint64_t tables_unreadable;    /* tables whose filter could not be read */
  uint64_t tables_removed;       /* leaves dropped after their table left the live version */
  uint64_t tables_replaced;      /* leaves dropped because their number named another file */
  uint64_t add_errors;           /* leaves the value index refused (those tables are scanned) */
  uint64_t cache_write_failures; /* leaves on disk whose cache file could not be written */
  uint64_t read_ns;              /* time in read_leaf and cache loads */
  uint64_t read_bytes;           /* what read_leaf read */
  char last_unreadable[256];     /* message of the last table that could not be read */
  uint64_t blocks_added;         /* tables given a block filter (built, read or cached) */
  uint64_t blocks_upgraded;      /* of those, cached leaves without one, upgraded later */
  uint64_t blocks_damaged;       /* tables whose block filter could not be read */
  char last_blocks_damaged[256]; /* message of the last one */
  uint64_t blocks_early;         /* block filters read ahead of their leaf (load_blocks) */
} index_sync_stats_t;

/* index: borrowed, it must outlive the index_sync. NULL on no memory (message in err). */
index_sync_t *index_sync_create(value_index_t *index, err_t *err);
void index_sync_destroy(index_sync_t *s); /* NULL allowed; writes no cache file */
/* Sets where run reads filters from (copied). Call once, before the first run. BFH_E_INVALID
   for a cache_dir without table_tag. */
int index_sync_set_source(index_sync_t *s, const index_source_t *src, err_t *err);
const value_index_params_t *index_sync_params(const index_sync_t *s);
/* The items each value is indexed under (filters/value_terms.h): NULL (the default) the
   whole value's hash; else one per (attribute, term) of the database's declared attributes.
   Set once, before the engine opens (terms borrowed, must outlive s). The index never hashes
   a value itself: the engines that build its leaves, block filters, maps and memtable
   indexes read them here, so that every structure holds the same items. */
void index_sync_set_terms(index_sync_t *s, const value_terms_t *terms);
const value_terms_t *index_sync_terms(const index_sync_t *s);
/* The value index's block index (value_index_blocks): the own engine puts its tables'
   value-to-block maps there directly, when params->block_maps says so (value_hook.h). */
block_index_t *index_sync_block_index(index_sync_t *s);
/* The value index it writes (the own engine attaches its persisted index to it). */
value_index_t *index_sync_value_index(index_sync_t *s);

/* ---- Pushed reports (table-build hook) ------------------------------------------------ */
/* Takes ownership of filter and blocks (the table's block filter; may be NULL). path
   (copied; may be NULL with leaves in memory) and offset say where the filter's serialized
   form lies. */
void index_sync_table_built(index_sync_t *s, uint64_t number, value_filter_t *filter,
                            block_filter_t *blocks, const char *path, uint64_t offset);
void index_sync_table_added(index_sync_t *s, uint64_t number, uint64_t size);
void index_sync_table_removed(index_sync_t *s, uint64_t number);
/* The index takes in what the reports queued (value_index_apply). An engine that calls this
   on a thread of its own after every change it reports (the own engine's background thread)
   says so once, with index_sync_use_applier: searches then leave the queue to it
   (value_index_set_applier). */
void index_sync_apply(index_sync_t *s);
void index_sync_use_applier(index_sync_t *s);

/* ---- Pulled reports (a live list) ------------------------------------------------------- */
typedef struct index_table {
  uint64_t number, size;
  /* Which file the number names (0: not known). A live table listed again with another id
     than before is another file under the same number (a database replaced at its path): its
     leaf is dropped at once (the table is scanned until it has a new one) and read again;
     a leaf read for the old id never enters. */
  uint64_t id;
} index_table_t;
/* The live tables are exactly live[0, n). With view_epoch != NULL, also pins a view of this
   list: *view_epoch is its epoch, to unpin later, and marks the tables it lists without a
   leaf as met by a search (a search reads them whole): INDEX_RUN_AGED reads those at once,
   and index_sync_take_met says one was marked. BFH_E_NOMEM leaves the state as it was. */
int index_sync_tables_listed(index_sync_t *s, const index_table_t *live, size_t n,
                             uint64_t *view_epoch, err_t *err);
void index_sync_view_unpin(index_sync_t *s, uint64_t epoch);

/* ---- Reading filters -------------------------------------------------------------------- */
enum {
  INDEX_RUN_ALL,  /* every live table marked to be read */
  INDEX_RUN_AGED, /* only those live for at least min_age_ns (a table that dies young, as L0
                     tables and compaction outputs under ingest do, then costs nothing), and
                     those a view met (index_sync_tables_listed): searches read them whole
                     until they are read once */
};
/* Gives leaves to the tables marked to be read, and writes the cache files that are due.
   Returns the first error that lost a leaf for a reason other than an unreadable table (no
   memory, a cache file of a leaf on disk not written); those tables stay marked and the
   next run tries again. Unreadable tables are counted, not returned. */
int index_sync_run(index_sync_t *s, int mode, uint64_t min_age_ns, err_t *err);
/* Is a live table still marked to be read, or waiting for its block filter (with
   min_age_ns, one live that long or met by a view)? */
int index_sync_pending(index_sync_t *s, uint64_t min_age_ns);
/* Did a view mark a table as met (index_sync_tables_listed) since the last call? Clears it:
   the background thread that runs INDEX_RUN_AGED is woken once per such view. */
int index_sync_take_met(index_sync_t *s);
/* Writes every cache file not written yet (at close). */
void index_sync_close_caches(index_sync_t *s);

/* ---- Loading at open (doc/search.md "Open cost") ------------------------------------------
   An engine that opens with live tables and no leaves calls index_sync_load_blocks, then
   index_sync_loader_start. load_blocks reads the block filter of every table marked to be read
   (with the source's read_blocks; small, verified by its checksum; a source without read_blocks has
   the whole leaf read, from the sidecar cache bound by the table's tag, and the leaf parked in its
   record until the loader adds it) into the block index: a search can then read such a table
   through its block filter (it has no leaf, so it is selected, never skipped) while the leaves are
   read. The loader is a background thread that runs index_sync_run a few tables at a time, until no
   table is marked, and applies the value index once the leaves read and not yet applied reach 64
   MiB or nothing is left to read (index_sync_load.c: one plan for the lean layout's fold groups;
   each leaf is made as soon as it is read, value_index_leaf_make, so that in the lean layout a
   leaf whose filter lies in a file waits as its chunk CRCs and is folded as its words stream
   back);
   index_sync_loader_stop ends it within one step (the engine calls it before its tables close;
   destroy calls it too). Its thread starts at the first index_sync_loader_go: at the second
   bfh_search by any method but SCAN (index_sync_loader_searched), or one that waits for it
   (bfh_search by a named filter method, bfh_stats, the close of a handle that wrote): a process
   that only scans, only writes, or searches once does not pay for it. A
   table the value index's persisted index binds (value_index_attach_persisted) is left out of
   load_blocks, by either way: its map head comes from that file when a search selects it; the
   loader reads its leaf later. */
int index_sync_load_blocks(index_sync_t *s, err_t *err);
/* Arms the loader (its thread starts at the next index_sync_loader_go); one running is told
   to look for tables to read once more (an engine calls it when it marked new ones). */
int index_sync_loader_start(index_sync_t *s, err_t *err);
/* Starts the armed loader's thread (nothing if none is armed). */
int index_sync_loader_go(index_sync_t *s, err_t *err);
/* A search through the index ran: from the second on, index_sync_loader_go. A process that
   searches once (a search from the shell) closes right after, and a loader started then would
   only be stopped, its step waited for (at the lowest priority) and its leaves dropped; one
   that searches again is one that goes on searching. */
int index_sync_loader_searched(index_sync_t *s, err_t *err);
void index_sync_loader_stop(index_sync_t *s);
/* Is a loader armed or running? */
int index_sync_loader_active(index_sync_t *s);
/* Was a loader thread started since the last stop (a search through the index ran)? */
int index_sync_loader_went(index_sync_t *s);
/* Starts an armed loader and blocks until it has finished (at once if none was started, or
   it stopped). Returns the first error of its runs (BFH_OK) with the message in err;
   *elapsed_ns (may be NULL) gets how long it ran. */
int index_sync_loader_wait(index_sync_t *s, uint64_t *elapsed_ns, err_t *err);
/* Test hook: while held (process-wide), every loader waits before its next step; so a test
   can search while the index is still loading, deterministically. A search by a named filter
   method waits for the loader (bfh_search): while held, only AUTO and SCAN return. */
void index_sync_test_hold_loaders(int hold);

index_leaf_source_t index_sync_leaf_source(index_sync_t *s, uint64_t number);
/* The value filter of table `number` built again from the table by the source's read_leaf, as
   its leaf was (bfh_tables describes a stock engine's table with it: the filter cache gets a
   leaf's file only some time after the leaf). On BFH_OK *filter is new, owned by the caller;
   read_leaf's error otherwise. Takes no lock of s. */
int index_sync_read_filter(index_sync_t *s, uint64_t number, value_filter_t **filter, err_t *err);
void index_sync_get_stats(index_sync_t *s, index_sync_stats_t *st);

/* ---- The persisted index and stamps (index_sync_persist.c) --------------------------------
   What an engine needs of leaf_cache.h and persisted_index.h, without their types. */

/* The filter cache's directory name under a database's or an index directory
   (leaf_cache.h's LEAF_CACHE_DIR). */
#define INDEX_SYNC_CACHE_DIR "bfh-filters"

/* A BFH-INDEX being bound to the live tables at open (persisted_index.h; opaque here). */
typedef struct persisted_index index_persisted_t;

/* A table as BFH-INDEX is written with it: its number, size, stamp and serialized map head
   (borrowed). */
typedef struct index_persisted_table {
  uint64_t number, size, stamp;
  const uint8_t *head;
  size_t head_len;
} index_persisted_table_t;

/* Whether s's layout keeps a persisted index (lean with block maps, leaves in memory). */
int index_sync_persists(const index_sync_t *s);
/* Opens <dir>/BFH-INDEX for s's value index into *x (new, the caller's until attached): the
   own engine's kind (cached 0), or the kind whose maps come from s's filter cache (cached 1:
   the read-only LevelDB engine; the cache files are s's source's). A damaged file is counted
   (block filters damaged). BFH_OK, BFH_NOT_FOUND (no file), or why it is not used. */
int index_sync_persisted_open(index_sync_t *s, env_t *io, const char *dir, int cached,
                              index_persisted_t **x);
/* Binds table `number` when x has it with this size and stamp: 1 bound, 0 not. */
int index_sync_persisted_bind(index_persisted_t *x, uint64_t number, uint64_t size,
                              uint64_t stamp);
/* How many tables x binds. */
size_t index_sync_persisted_bound(const index_persisted_t *x);
void index_sync_persisted_destroy(index_persisted_t *x); /* NULL allowed */
/* Attaches x to s's value index, which owns it from there; NULL detaches (and frees) the one
   attached. */
void index_sync_persisted_attach(index_sync_t *s, index_persisted_t *x);
/* How many damaged chunks and map heads searches met in the attached file. */
uint64_t index_sync_persisted_damaged(index_sync_t *s);
/* Writes <dir>/BFH-INDEX (of the kind as index_sync_persisted_open's `cached`) for the tables
   t[0, n) that have a leaf in s's value index. BFH_OK or why not (the old file is then left). */
int index_sync_persisted_write(index_sync_t *s, env_t *io, const char *dir, int cached,
                               const index_persisted_table_t *t, size_t n, err_t *err);
/* The map head of table `number`'s cache file in s's filter cache, bound by (size, stamp):
   *head new (malloc'd, the caller frees it). BFH_NOT_FOUND, BFH_E_CORRUPT, BFH_E_IO. */
int index_sync_cached_map_head(index_sync_t *s, uint64_t number, uint64_t size, uint64_t stamp,
                               uint8_t **head, size_t *len, err_t *err);
/* The own engine's table stamp of the file at path, or of f already open (borrowed; path names
   it): persisted_index.h's. */
int index_sync_table_stamp(env_t *io, const char *path, uint64_t *stamp, err_t *err);
int index_sync_rfile_stamp(env_rfile_t *f, const char *path, uint64_t *stamp, err_t *err);
/* A stock table's stamp from its file's stat st and its footer at now_ns (leaf_cache_stamp;
   0: too fresh to stamp). */
uint64_t index_sync_stamp(const env_file_stamp_t *st, const uint8_t *footer, size_t footer_len,
                          int64_t now_ns);
/* Checks the cache file at path against table (number, size, tag) and parameters (m, k,
   seed): leaf_cache_check's BFH_OK, or BFH_E_CORRUPT naming what is wrong. */
int index_sync_cache_check(env_t *io, const char *path, uint64_t number, uint64_t size,
                           uint64_t tag, uint64_t m, uint32_t k, uint64_t seed, err_t *err);

#endif

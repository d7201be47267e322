/* The stock engines' core: what the engines over stock LevelDB and RocksDB files share, read-write
 * and read-only, whatever the format. An engine of this family is a format plug-in (its table,
 * log and MANIFEST readers, in ../../leveldb_format/ and ../../rocksdb_format/) under this
 * core, as RocksDB's TableFactory / TableReader split keeps the engine ignorant of the table
 * format it reads.
 *
 *   stock.c        file names, key order, key ranges, segment lists, the views' memtable
 *                  scans, the live list reported to index_sync, the filter cache directory
 *   log_segs.c     log segments: the value entries of a log's stretch, indexed by value (the
 *                  memtables a view searches)
 *   sorted_iter.c  an ordered iterator over entries gathered in memory (sorted_iter.h)
 *   stock_rw.c     the read-write engines' shared steps over the library each one calls
 *                  (stock_rw.h): open and close, the background indexer, syncs and views,
 *                  table reads, the index source, get, iterator
 *   stock_ro*.c    the read-only engine over a format interface (stock_ro.h), with its chunks
 *                  (stock_chunk.c) and range tombstones (stock_tombs.c)
 */
#ifndef BFH_LSM_HOOKS_STOCK_H
#define BFH_LSM_HOOKS_STOCK_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "index/index_sync.h"
#include "lsm_hooks/engines/dir_watch.h"
#include "lsm_hooks/engines/engine.h"
#include "util/env.h"
#include "util/err.h"

/* ---- File names ------------------------------------------------------------------------- */

/* Is name "<digits>.<suffix>" (a stock file name such as 000012.log)? Sets *num. */
int stock_file_number(const char *name, const char *suffix, uint64_t *num);
/* Is name a table's, "<digits>.ldb" or "<digits>.sst" (LevelDB and RocksDB read both)?
   Sets *num. */
int stock_table_file_number(const char *name, uint64_t *num);
/* The path of table `number` of the database in dir: dir/NNNNNN.<first>, or .<second> when
   only that exists (each stock engine opens the other's name when its own is missing), written
   into out (n bytes). REQUIRES: n >= strlen(dir) + STOCK_TABLE_NAME_BYTES, so that no path is
   cut short. */
#define STOCK_TABLE_NAME_BYTES 26 /* "/", 20 digits, ".ldb" or ".sst", '\0' */
void stock_table_path_write(const char *dir, uint64_t number, const char *first, const char *second,
                            char *out, size_t n);
/* The same path in *path (a string of its own: client frees it with free(); NULL on failure).
   BFH_OK, or BFH_E_NOMEM naming the table. */
int stock_table_path(const char *dir, uint64_t number, const char *first, const char *second,
                     char **path, err_t *err);
/* Whether dir/name exists (env_exists through io), in *exists. BFH_OK, or BFH_E_NOMEM for its
   path (built in memory of its own, never cut short). */
int stock_file_exists(env_t *io, const char *dir, const char *name, int *exists, err_t *err);

/* Reads dir/CURRENT through io, which LevelDB and RocksDB both write as "MANIFEST-<number>\n":
   *manifest (malloc'd, client frees; NULL on failure) is the MANIFEST's path, dir/NAME, whether
   that file exists or not. BFH_NOT_FOUND without CURRENT; BFH_E_CORRUPT "DIR/CURRENT: not
   ..." for other contents; BFH_E_IO, BFH_E_NOMEM. */
int stock_current_read(env_t *io, const char *dir, char **manifest, err_t *err);

/* engine_kind_t.at_rest of both stock engines: *id (malloc'd, client frees) names the files
   the closed database in path holds its data in, each by name, size and inode, sorted by name,
   so that two ids are equal only if no write reached the database between them
   (stock_at_rest.c says why). BFH_OK; BFH_E_BUSY when a file went while listed; BFH_E_IO,
   BFH_E_NOMEM. */
int stock_at_rest_id(const char *path, env_t *io, char **id, err_t *err);

/* ---- Keys and tables ------------------------------------------------------------------------ */

/* Orders user keys as LevelDB's and RocksDB's bytewise comparator does: memcmp, then the
   shorter first. */
static inline int stock_key_cmp(const void *a, size_t al, const void *b, size_t bl) {
  int c = memcmp(a, b, al < bl ? al : bl);
  return c ? c : (al > bl) - (al < bl);
}

/* Makes room for need elements of size bytes in *array (a pointer to a malloc'd array, or to
   NULL) of *cap elements: realloc'd to twice its capacity (first > 0 at the first growth)
   until need fits. BFH_OK, or BFH_E_NOMEM with *array and *cap as they were. */
int stock_grow(void *array, size_t *cap, size_t need, size_t size, size_t first);

/* Sorts t[0, n) by number (a view's or a state's tables). */
void stock_tables_sort(engine_table_t *t, size_t n);

/* ---- A table's key range (bfh_tables' describe) -------------------------------------------- */

/* The entries of a table and its smallest and largest user key, gathered from its entries in
   ascending internal key order. Caller-owned: zero it, add every entry, then give. */
typedef struct stock_key_range {
  uint8_t *smallest, *largest; /* owned until given */
  size_t smallest_len, largest_len, largest_cap;
  uint64_t entries;
  int nomem;
} stock_key_range_t;

/* Adds the next entry's key (copied). 0, or 1 (a table visitor's "stop") when out of memory. */
int stock_key_range_add(stock_key_range_t *r, const void *key, size_t key_len);

/* ---- A table read for a search ------------------------------------------------------------ */

/* What a table read looks for: entries whose value passes test (borrowed), each key told
   to fn (nonzero stops the read). */
typedef struct stock_match {
  const engine_value_test_t *test;
  engine_match_fn fn;
  void *arg;
} stock_match_t;

/* What a read of named blocks for m looks for before it decodes an entry (*nd, the count
   returned; 0: nothing): a predicate's needles, or the whole value itself (held in *whole),
   which every value that passes holds. */
static inline size_t stock_match_needles(const stock_match_t *m, block_needle_t *whole,
                                         const block_needle_t **nd) {
  const engine_value_test_t *t = m->test;
  if (t->match) {
    *nd = t->needles;
    return t->nneedles;
  }
  *whole = (block_needle_t){t->val, t->val_len};
  *nd = whole;
  return t->val_len >= 2;
}

/* What a format's table_hashes read does with each value (stock_leaf.c): its item hashes
   under seed (terms: the database's items; NULL: the whole value's) to fn(arg, hash). */
typedef struct stock_hashes {
  uint64_t seed;
  const value_terms_t *terms;
  void (*fn)(void *arg, uint64_t hash);
  void *arg;
  const char *path; /* the table's, in messages (borrowed) */
  err_t *err;
  int rc; /* BFH_E_NOMEM once an extraction failed, or the format's refusal */
} stock_hashes_t;
/* 0, or 1 (a table visitor's "stop") out of memory: h->rc set, its message in h->err. */
int stock_hashes_add(stock_hashes_t *h, const void *val, size_t val_len);

/* ---- Log segments (log_segs.c) -------------------------------------------------------------
   Value entries read from one stretch of a log, and an index of them by value, so that a
   search looks up the entries of its value instead of comparing every entry. Immutable once
   made (stock_seg_builder_finish); freed with its last reference (stock_seg_unref). One
   allocation: the header, then
     data: n x (varint64 seq | varint32 key_len | key | varint32 val_len | val), len bytes
       (seq: the write's sequence number, which a match reports);
     (8-aligned) slot_mask + 1 = 2^slot_bits slots: an open-addressing table, linear
     probing, load <= 1/2, one slot per item of an entry (its whole value's hash h =
     bfh_value_hash(val, seed), or with declared attributes each (attribute, term)'s item
     hash; the builder's seed is the database's value seed, so that a search passes down the
     hash it made once): tag << STOCK_SEG_OFF_BITS | the entry's offset in data, the tag
     being h >> STOCK_SEG_OFF_BITS (1 if that is 0); 0 is an empty slot. The home slot is
     the tag's top slot_bits bits, and where slot_bits exceeds STOCK_SEG_TAG_BITS, the tag
     then h's low bits: a segment of at most 2^STOCK_SEG_TAG_BITS slots is homed by its tags
     alone, so that two can be merged without hashing any value again.
   Each view takes every segment of a log so far, and most searches after a write read a
   stretch of one entry or a few: stock_segs_push merges the newest segments as a binary
   counter does (two when the older holds no more items than the newer, up to
   STOCK_SEG_MERGE_ITEMS), so that a log of n items is O(n / STOCK_SEG_MERGE_ITEMS + log n)
   segments for a search to look its value up in, not one per search. */
#define STOCK_SEG_HASH_SEED 0x6c6f677365677331ull /* "logsegs1": the seed without value filters */
#define STOCK_SEG_OFF_BITS 40                     /* segments are under 1 TiB */
#define STOCK_SEG_TAG_BITS (64 - STOCK_SEG_OFF_BITS)
/* The most items of a merged segment: a merge moves each item's slot once (about 10 ns) and
   copies the entries, so the largest costs the view that makes it about a millisecond. */
#define STOCK_SEG_MERGE_ITEMS 65536
typedef struct log_seg {
  atomic_int refs;
  uint64_t n;
  size_t len;
  uint64_t *slots; /* into this allocation, after data */
  size_t slot_mask;
  unsigned slot_bits; /* slot_mask + 1 = 2^slot_bits */
  uint64_t items;     /* slots in use */
  uint64_t seed;      /* of the slots' value hash */
  uint8_t data[];
} log_seg_t;

/* The entries of a segment being collected. Caller-owned: zero it to start, release it after
   (stock_seg_builder_release). */
typedef struct stock_seg_builder {
  uint8_t *p; /* the data so far (malloc'd) */
  size_t len, cap;
  uint64_t n;
  int nomem;     /* an add ran out of memory: the entries are incomplete */
  uint64_t seed; /* of the segment's value index (stock_value_seed); zeroed: 0 */
  /* The items each entry is indexed under (stock_value_terms; borrowed): NULL (zeroed) the
     whole value's hash; else one slot per (attribute, term) of the declared attributes. */
  const value_terms_t *terms;
} stock_seg_builder_t;

/* Appends the entry (key, val) written at sequence seq (copied). BFH_OK, or BFH_E_NOMEM
   (b->nomem is then set). */
int stock_seg_builder_add(stock_seg_builder_t *b, uint64_t seq, const void *key, size_t key_len,
                          const void *val, size_t val_len);
/* The entry at p of a builder's data (written by stock_seg_builder_add: well formed, ending
   by end): its sequence, key and value (borrowed); returns the next entry. */
const uint8_t *stock_seg_entry_decode(const uint8_t *p, const uint8_t *end, uint64_t *seq,
                                      const uint8_t **k, uint32_t *kl, const uint8_t **v,
                                      uint32_t *vl);
/* A new segment (one reference, the caller's) of the entries added, with its value index; b is
   unchanged. NULL if no memory (or 1 TiB of entries). */
log_seg_t *stock_seg_builder_finish(const stock_seg_builder_t *b);
/* Frees b's data (b may then be reused, zeroed). */
void stock_seg_builder_release(stock_seg_builder_t *b);
/* Drops a reference; the last frees s. s may be NULL. */
void stock_seg_unref(log_seg_t *s);
/* The bytes of the value indexes of segs[0, n) (their slots; bfh_db_stats.memtable_index_bytes). */
uint64_t stock_segs_index_bytes(log_seg_t *const *segs, size_t n);
/* Calls fn for every entry of the segments whose value passes test, in segment and entry
   order; stops when fn says so. st->entries (st may be NULL) counts every entry of the
   segments. */
void stock_segs_scan(log_seg_t *const *segs, size_t n, const engine_value_test_t *test,
                     engine_match_fn fn, void *arg, engine_scan_stats_t *st);
/* stock_segs_scan through the segments' value indexes (the same calls of fn in the same
   order, but st->entries counts only the entries whose value was compared), hash being an
   item hash under seed that every passing value is indexed under: for a whole-value test
   bfh_value_hash(val, val_len, seed), for a predicate the item hash of one of its (attribute,
   term)s. A segment indexed under another seed hashes a whole value again for itself, and is
   scanned whole for a predicate (the segments of one handle share their seed and items). With
   declared attributes a whole value is found only if it is an item (a `value` attribute). */
void stock_segs_find(log_seg_t *const *segs, size_t n, const engine_value_test_t *test,
                     uint64_t seed, uint64_t hash, engine_match_fn fn, void *arg,
                     engine_scan_stats_t *st);
/* The segments read so far from one log (or a WAL), one reference each. Caller-owned: zero
   it; stock_segs_release after. */
typedef struct stock_segs {
  log_seg_t **v;
  size_t n, cap;
} stock_segs_t;

/* Appends a new segment of b's entries (stock_seg_builder_finish), then merges the newest
   (stock_segs_merge_tail). BFH_OK or BFH_E_NOMEM. */
int stock_segs_push(stock_segs_t *l, const stock_seg_builder_t *b);
/* Merges l's last two segments while the older holds no more items than the newer, their
   sum is at most STOCK_SEG_MERGE_ITEMS and they share their seed: one segment of the older's
   entries then the newer's, found in the same order by stock_segs_scan and stock_segs_find.
   Out of memory, the two stay as they are. */
void stock_segs_merge_tail(stock_segs_t *l);
/* Drops every segment; l stays usable. */
void stock_segs_clear(stock_segs_t *l);
void stock_segs_release(stock_segs_t *l);

/* The seed the log segments of a handle index values under: its value filters' (sync may
   be NULL: value filters off, STOCK_SEG_HASH_SEED). */
uint64_t stock_value_seed(const index_sync_t *sync);
/* The items the log segments of a handle index values under (index_sync_terms; sync may be
   NULL: the whole value). */
const value_terms_t *stock_value_terms(const index_sync_t *sync);

/* ---- The view ------------------------------------------------------------------------------
   Every stock engine's engine_view_t: the tables it lists, the log segments it searches, and
   what the engine holds for it. */
struct engine_view {
  uint64_t epoch;         /* pinned in index_sync (0: no index) */
  engine_table_t *tables; /* sorted by number */
  size_t ntables;
  log_seg_t **segs; /* the memtables: the logs' segments read so far */
  size_t nsegs;
  uint64_t seed; /* stock_value_seed of the engine: the hash find_memtables is given */
  uint64_t fill; /* bytes its reads may still put into the handle's block cache (read-write) */
  /* What the engine holds for the view: the LevelDB engine's version pin, the read-only
     engines' state (which then owns tables and segs); NULL elsewhere. */
  void *held;
};

/* engine_ops_t.view_tables, scan_table (the engine's scan_blocks of the whole table, refs
   NULL), scan_memtables and find_memtables of every stock engine. */
size_t stock_view_tables(const engine_view_t *v, const engine_table_t **tables);
int stock_scan_table(engine_t *e, engine_view_t *v, uint64_t number,
                     const engine_value_test_t *test, engine_match_fn fn, void *arg,
                     engine_scan_stats_t *st, err_t *err);
int stock_scan_memtables(engine_t *e, engine_view_t *v, const engine_value_test_t *test,
                         engine_match_fn fn, void *arg, engine_scan_stats_t *st, err_t *err);
int stock_find_memtables(engine_t *e, engine_view_t *v, const engine_value_test_t *test,
                         uint64_t hash, engine_match_fn fn, void *arg, engine_scan_stats_t *st,
                         err_t *err);

/* ---- A table's value filters (stock_leaf.c) ------------------------------------------------
   Its leaf, block filter and value-to-block map, built in one pass over the table by a format's
   reader: stock_leaf_begin, then stock_leaf_add for every value (deletions have none) and
   stock_leaf_end_block after each data block (the readers' end-of-block callback), then
   stock_leaf_finish, also after a failed begin or read. Caller-owned. */
typedef struct stock_leaf_build {
  value_filter_t *leaf;
  block_filter_builder_t *blocks; /* NULL: no block filter */
  value_block_map_builder_t *map; /* NULL: no value-to-block map */
  uint64_t seed;
  const value_terms_t *terms; /* the items each value is added under; NULL: the whole value */
  const char *path;           /* the table's, in messages (borrowed) */
  err_t *err;
  int rc;       /* the first failure, its message in err (it stops the read) */
  uint64_t seq; /* the value being added's entry's sequence number (the map's bounds) */
} stock_leaf_build_t;

/* Makes the builders for p's m, k, seed and block_bits (the map only with want_map and
   block_bits); ref_blocks, when not 0, is the table size in blocks the block filter's
   block_bits are stated for (block_filter_builder_scale). BFH_OK; BFH_E_INVALID for
   block_bits above BLOCK_FILTER_MAX_BITS; BFH_E_NOMEM. */
int stock_leaf_begin(stock_leaf_build_t *b, const char *path, const value_index_params_t *p,
                     const value_terms_t *terms, int want_map, uint32_t ref_blocks, err_t *err);
/* Adds the value of the entry of sequence number seq under its items. 0, or 1 (a table
   visitor's "stop") after a failure. */
int stock_leaf_add(stock_leaf_build_t *b, const void *val, size_t val_len, uint64_t seq);
/* Ends the data block at offset (b: a stock_leaf_build_t). 0, or 1 after a failure: a block
   the index lists out of file order is BFH_E_CORRUPT. */
int stock_leaf_end_block(void *b, uint64_t offset, uint64_t size);
/* Ends the build that the read returned rc for: on BFH_OK out->filter and out->blocks (and
   out->map_*, when a map was made) are new, owned by the caller. A table whose blocks a map
   cannot name gets none, its block filter then stated for unmapped_ref_blocks (0: as before).
   Frees the builders whatever rc; returns rc, or the build's first failure. */
int stock_leaf_finish(stock_leaf_build_t *b, int rc, uint32_t unmapped_ref_blocks,
                      index_leaf_read_t *out);

/* ---- Reports to index_sync and the filter cache (stock.c) ---------------------------------- */

/* Reports tables t[0, n) as the live list to sync (index_sync_tables_listed), with ids[i] the
   file id of t[i] (ids NULL: all 0, the tables of a database the handle holds open, never
   replaced under it); with view_epoch, pins a view's epoch. path names the database in
   messages. BFH_OK at once without sync. */
int stock_report_tables(index_sync_t *sync, const char *path, const engine_table_t *t,
                        const uint64_t *ids, size_t n, uint64_t *view_epoch, err_t *err);
/* Creates the filter cache directory <dir>/bfh-filters/ (LEAF_CACHE_DIR; dir: the database's,
   or the read-only engines' index directory) into *cache_dir (malloc'd, the caller frees it)
   and sets sync's source to src with that cache_dir. */
int stock_cache_init(index_sync_t *sync, env_t *io, const char *dir, index_source_t src,
                     char **cache_dir, err_t *err);
/* Removes the files of cache_dir but the cache files of the tables keep(arg, number) keeps
   (and dot files, with keep_dot): a table deleted while the database was open elsewhere, a
   damaged or stray file. A failed removal is left for the next clean. */
void stock_cache_clean(env_t *io, const char *cache_dir, int keep_dot,
                       int (*keep)(void *arg, uint64_t number), void *arg);

#endif

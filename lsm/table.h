/* table_t: a read-only table file, read through the io layer with pread (doc/format.md
 * "Table"). Opening reads and verifies the footer, index, key filter and meta index and
 * keeps them parsed in memory. Every read of a data or meta block copies it into a buffer
 * and verifies its CRC in that buffer, every time: what a reader serves is what was
 * checked, so a table file changed under an open handle gives ST_E_CORRUPT naming the block,
 * never a wrong answer, and a truncated one a "truncated" error, never a crash.
 *
 * Threads: any number of threads may use one table_t at once (get, iterators, scan,
 * read_meta), each with its own buffers. Lifetime: reference counted; table_open() returns
 * one reference; table_ref() / table_unref() (closes at zero). What a read returns points
 * into the caller's table_buf_t (get), the iterator (until it moves) or the visitor's
 * arguments (for the call); table_read_meta returns a copy.
 * Errors: ST_E_CORRUPT with "table 000123.sst: block at 40960: checksum mismatch" (the
 * file's base name and the offset of the damaged block) or a format violation.
 */
#ifndef BFH_LSM_TABLE_H
#define BFH_LSM_TABLE_H

#include <stddef.h>
#include <stdint.h>

#include "lsm/block_memo.h"
#include "lsm/db.h"
#include "lsm/internal_key.h"
#include "util/env.h"
#include "lsm/iterator.h"
#include "util/err.h"

#define TABLE_MAGIC 0x3168666231687362ull /* "bsh1bfh1" */
#define TABLE_FORMAT_VERSION 1
#define TABLE_FOOTER_BYTES 64
#define TABLE_KEY_FILTER_NAME "bfh.key_filter"

typedef struct table table_t;

/* A caller's buffer for the blocks a read copies in: optional storage of the caller's
   (typically on the stack), then the heap when a block does not fit. Caller-owned:
   table_buf_init(), table_buf_release(). */
typedef struct table_buf {
  uint8_t *p;    /* the storage in use */
  size_t cap;    /* its size */
  uint8_t *heap; /* owned, or NULL */
} table_buf_t;
/* stack (may be NULL) of cap bytes is used until a block needs more. */
void table_buf_init(table_buf_t *b, uint8_t *stack, size_t cap);
/* Frees what the buffer allocated (NULL allowed); the buffer may be initialized again. */
void table_buf_release(table_buf_t *b);

/* "<dir>/<number %06llu>.sst" in a string of its own; the db names its table files with
   this. NULL only on no memory. Client frees it with free(). */
char *table_file_path(const char *dir, uint64_t number);

/* Opens path and verifies footer, index, key filter and meta index. file_number is used in
   messages. On ST_OK *t has one reference (release with table_unref). Errors:
   ST_E_CORRUPT (bad magic, bad checksum, malformed block), ST_E_UNSUPPORTED (a newer
   format version), ST_E_IO / ST_E_NOMEM. */
int table_open(env_t *io, const char *path, uint64_t file_number, table_t **t, err_t *err);
/* table_open of a file the caller opened (path names it in messages): on ST_OK file is the
   table's (closed with it); on failure it stays the caller's. A reader that holds a table's
   file open before it needs the table opens it so, even once the file's name is gone. */
int table_open_file(env_rfile_t *file, const char *path, uint64_t file_number, table_t **t,
                    err_t *err);
void table_ref(table_t *t);
/* NULL allowed. */
void table_unref(table_t *t);

uint64_t table_number(const table_t *t);
uint64_t table_file_size(const table_t *t);
/* 1 if the table has a key filter. */
int table_has_key_filter(const table_t *t);

/* Newest entry for user key with seq <= max_seq. key_hash = blocked_filter_key_hash(key,
   klen), computed once by the caller for every table it probes. The block read goes into
   buf. Fills *out (out->val points into buf: valid until buf is reused or released) and
   returns ST_OK; or ST_E_CORRUPT. Allocation-free for keys up to 128 bytes and blocks that
   fit buf's storage. */
int table_get(table_t *t, const void *key, size_t klen, uint64_t key_hash, uint64_t max_seq,
              table_buf_t *buf, lsm_lookup_t *out, err_t *err);
/* table_get, except that a data block memo keeps (block_memo.h) is parsed from there instead
   of being read from the file (memo NULL: table_get). out->val may then point into the
   memo: valid until it is released. */
int table_get_kept(table_t *t, const void *key, size_t klen, uint64_t key_hash, uint64_t max_seq,
                   block_memo_t *memo, table_buf_t *buf, lsm_lookup_t *out, err_t *err);
/* Asks the CPU for the key filter's line that a lookup of key_hash will probe, if the filter
   has been read (a hint: no read, no effect on any result). */
void table_key_prefetch(const table_t *t, uint64_t key_hash);
/* 0: the key filter says the user key is absent; 1: it may be present (or no filter). */
int table_key_may_match(const table_t *t, uint64_t key_hash);

/* Makes table_get and table_get_kept keep the data blocks they read in cache (borrowed, it
   must outlive t; NULL: none), and serve them from there: lsm/block_cache.h. Call it once,
   right after table_open, before t is shared. */
struct block_cache;
void table_set_block_cache(table_t *t, struct block_cache *cache);

/* Makes t's later reads copy out of a mapping of its file (env_rfile_map) instead of calling
   pread: a block the block cache misses then costs a copy and no system call. A file
   truncated under the mapping gives the same ST_E_CORRUPT as a short pread, through
   mapped_copy's guard (util/mapped_copy.h), never SIGBUS. 1 if t now reads through a
   mapping; 0 if it stays with pread (the env cannot map, or the guard could not be
   installed). Call it once, right after table_open, before t is shared. */
int table_read_mapped(table_t *t);

/* A two-level iterator (index, then data blocks) over internal keys. Holds a reference on
   t and a buffer for the current block: a key or value it serves is valid until it moves.
   NULL on no memory. Client calls iterator_destroy(). */
iterator_t *table_iterator_create(table_t *t);

/* Visits every entry in table order (key = user key; key and value borrowed for the call),
   reading the data blocks in runs of up to 256 KiB; fn returning nonzero stops (ST_OK).
   st (may be NULL) gets entries += decoded entries and bytes_read += data block bytes
   (with trailers) read. ST_E_CORRUPT on a damaged block (entries before it were visited). */
int table_scan(table_t *t, lsm_visit_fn fn, void *arg, lsm_scan_stats_t *st, err_t *err);

/* Visits the entries whose value is exactly val (n bytes), as table_scan would, and decodes
   the others only as far as their value (block_scan_value_all: every entry, the scan whose
   cost SCAN and the paper's methods measure). st as table_scan's (entries counts every entry
   decoded). ST_E_CORRUPT on a damaged block or a malformed entry. */
int table_scan_value(table_t *t, const void *val, size_t n, lsm_visit_fn fn, void *arg,
                     lsm_scan_stats_t *st, err_t *err);

/* table_scan_value over the data blocks refs[0, nrefs) only (each named by its handle, as a
   block filter names it: util/block_ref.h), in the order given, each looked through for the
   value's bytes before any entry is decoded (block_scan_value: entries counts only those
   decoded). A ref that is not exactly the handle of a data block gives ST_E_CORRUPT ("block
   filter names no data block"): the filter does not belong to this table.
   The chosen blocks are read as a get reads its block: through the table's block cache
   (table_set_block_cache), if it has one. A block the cache holds is parsed where it is (no
   system call; st->bytes_read counts its bytes all the same: the bytes the search read, from
   wherever); a missed one is read from the file and enters the cache while *fill covers its
   size (with trailer), *fill shrinking by it: a search lets its reads fill a share of the
   cache, not evict it all. fill NULL: none enters (table_scan_value_blocks). A whole-table
   scan reads past the cache. */
int table_scan_value_blocks(table_t *t, const block_ref_t *refs, size_t nrefs, const void *val,
                            size_t n, lsm_visit_fn fn, void *arg, lsm_scan_stats_t *st, err_t *err);

/* table_scan over the data blocks refs[0, nrefs) only, in the order given (a search by a
   predicate without needles, which tests every entry of the blocks its filters name). A ref that is
   not exactly the handle of a data block gives ST_E_CORRUPT ("block filter names no data block").
   st as table_scan's; the block cache and fill as table_scan_value_blocks's. */
int table_scan_blocks(table_t *t, const block_ref_t *refs, size_t nrefs, lsm_visit_fn fn,
                      void *arg, lsm_scan_stats_t *st, uint64_t *fill, err_t *err);

/* table_scan_blocks for a predicate every passing value of which holds one of the needles
   nd[0, nn) (block_scan_containing): only the entries whose value holds one are visited, the
   others skipped without being decoded; and, as table_scan_value_blocks_kept, every block with
   such an entry is put into memo (NULL: none) for the validating gets. */
int table_scan_blocks_containing(table_t *t, const block_ref_t *refs, size_t nrefs,
                                 const block_needle_t *nd, size_t nn, lsm_visit_fn fn, void *arg,
                                 lsm_scan_stats_t *st, block_memo_t *memo, uint64_t *fill,
                                 err_t *err);

/* table_scan_value and table_scan_value_blocks that also put every data block in which a value
   matched into memo (NULL: none), for the gets that validate those matches (block_memo.h). */
int table_scan_value_kept(table_t *t, const void *val, size_t n, lsm_visit_fn fn, void *arg,
                          lsm_scan_stats_t *st, block_memo_t *memo, err_t *err);
int table_scan_value_blocks_kept(table_t *t, const block_ref_t *refs, size_t nrefs,
                                 const void *val, size_t n, lsm_visit_fn fn, void *arg,
                                 lsm_scan_stats_t *st, block_memo_t *memo, uint64_t *fill,
                                 err_t *err);

/* Repair: visits, in table order, the entries of every data block that checks out (fn gets
   each internal key and value, borrowed for the call). A damaged block (checksum mismatch,
   malformed block) is skipped whole; a malformed entry or internal key in a block whose
   checksum matched ends that block there. *bad_blocks counts the blocks skipped or cut.
   fn may be NULL (only count); fn returning nonzero stops with that value, else 0. */
typedef int (*table_entry_fn)(void *arg, const uint8_t *ikey, size_t iklen, const uint8_t *val,
                              size_t vlen);
int table_salvage(table_t *t, table_entry_fn fn, void *arg, uint64_t *bad_blocks);

/* A damaged block: its offset in the file, and the reader's message saying what is wrong
   ("table 000007.sst: block at 4096: checksum mismatch"), borrowed for the call. */
typedef void (*table_damage_fn)(void *arg, uint64_t offset, const char *what);
/* table_salvage that also tells damage (may be NULL) about every block it skips or cuts, in
   table order: the one walk over the data blocks that repair and check (lsm/verify.h) share.
   fn and damage get the same arg. */
int table_walk(table_t *t, table_entry_fn fn, table_damage_fn damage, void *arg,
               uint64_t *bad_blocks);
/* Verifies the checksum of every meta block (the key filter and what the table hook stored:
   the value and block filters), telling damage (may be NULL) about each bad one; returns how
   many were bad. */
uint64_t table_check_meta(const table_t *t, table_damage_fn damage, void *arg);
size_t table_meta_count(const table_t *t);

/* Entries in the table, as its footer records them (no block is read). */
uint64_t table_entries(const table_t *t);
/* The largest internal key of the table (the index's last separator is the last key of the
   last data block), borrowed from the reader; NULL and *n = 0 for a table without entries. */
const uint8_t *table_largest(const table_t *t, size_t *n);

/* The meta block `name` (stored from the table hook, or TABLE_KEY_FILTER_NAME), read and
   checked against its CRC: *data a malloc'd copy of its *size bytes (the caller frees it),
   *offset (may be NULL) its offset in the file. ST_NOT_FOUND (no message) if absent. */
int table_read_meta(table_t *t, const char *name, void **data, size_t *size, uint64_t *offset,
                    err_t *err);

/* Reads len bytes at offset off of the contents of meta block `name` into buf, raw: no
   block checksum is verified (the caller's format checks its own, as the value-to-block
   map's chunks do, at every read). ST_E_CORRUPT if the block is absent or shorter; the io
   layer's error. With a block cache, the range is looked up there first (by its offset in
   the file, which no data block shares), and a missed one enters it as fill allows
   (table_scan_value_blocks_kept; NULL: never). What enters is the file's bytes as read,
   unchecked: the caller checks what it is served, from the file or the cache, the same way. */
int table_read_meta_range(table_t *t, const char *name, uint64_t off, size_t len, void *buf,
                          uint64_t *fill, err_t *err);

/* One piece of a read ahead (lsm_snapshot_read_ahead) of table t: the unpublished block
   cache entry its bytes are read into. */
typedef struct table_ahead {
  table_t *t;
  uint32_t block;  /* the data block's index; t's nblocks for bytes of a meta block */
  uint64_t offset; /* where the cache keeps it */
  size_t n;        /* its bytes there */
  struct block_cache_entry *e;
} table_ahead_t;
/* Prepares the read ahead of t's data block `ref` (meta NULL) or of meta block meta's bytes
   [ref.offset, ref.offset + ref.size): 1 with *a set and *r the read to make (into the
   cache entry a->e, taken from *fill), or 0 when there is nothing to read ahead (the cache
   holds it or there is none, t reads through a mapping, the fill does not cover it, the
   piece is out of bounds: the read that needs it says so). */
int table_ahead_prepare(table_t *t, const char *meta, const block_ref_t *ref, uint64_t *fill,
                        table_ahead_t *a, env_read_t *r);
/* What table_get of key would read first, prepared as a read ahead (lsm_get_ahead):
   TABLE_AHEAD_ABSENT when the key filter or the index rules the key out of t (the get looks
   further), TABLE_AHEAD_READ with *a and *r set as by table_ahead_prepare (the data block the
   index names, taken from *fill), TABLE_AHEAD_NONE when the get would read here but there is
   nothing to read ahead (the cache holds the block or there is none, t reads through a
   mapping, the fill does not cover it). Reads nothing but the key filter, as table_get does. */
enum { TABLE_AHEAD_ABSENT, TABLE_AHEAD_READ, TABLE_AHEAD_NONE };
int table_get_ahead(table_t *t, const void *key, size_t klen, uint64_t key_hash, uint64_t max_seq,
                    uint64_t *fill, table_ahead_t *a, env_read_t *r);
/* After r was made: publishes a's bytes in the cache when the read gave them all (and a data
   block checks out: CRC and parse), else drops them; releases the entry either way. */
void table_ahead_finish(const table_ahead_t *a, const env_read_t *r);

typedef struct table_stats {
  uint64_t data_blocks;
  uint64_t blocks_read; /* data blocks read (and checked) so far, repeats included */
  uint64_t filter_bytes;
  uint64_t index_bytes;
} table_stats_t;
void table_get_stats(const table_t *t, table_stats_t *st);

#endif

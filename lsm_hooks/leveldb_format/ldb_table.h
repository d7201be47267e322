/* ldb_table: a reader of LevelDB 1.23 table files (.ldb / .sst), in C.
 *
 * Layout (little-endian; LevelDB's doc/table_format.md; bfh's doc/leveldb.md):
 *   [data block 1] ... [data block N] [meta blocks] [metaindex block] [index block] [footer]
 *   block trailer (5 bytes, after every block): type u8 (0 none, 1 snappy) | masked crc32c
 *     fixed32 over contents + type byte
 *   footer (48 bytes): metaindex handle, index handle (each varint64 offset, varint64 size),
 *     zero padding to 40 bytes, magic fixed64 0xdb4775248b80fb57
 *   block: entries (shared varint32, non_shared varint32, value_len varint32,
 *     key_delta[non_shared], value[value_len]) | restarts fixed32[n] | n fixed32
 *   index block: key = separator >= the last key of a data block, value = its handle
 *   data-block keys are internal keys: user key | fixed64 (sequence << 8 | type)
 * The block format (entries, restarts, trailer, block handles) and the internal keys are the
 * own engine's, byte for byte: the blocks are checked and walked with lsm/block.h (trailer CRC,
 * block_parse, block_cursor, block_handle_decode) and the keys split with lsm/internal_key.h.
 * What is LevelDB's alone stays here: snappy blocks (type 1, decompressed before the walk),
 * the 48-byte footer with its magic (the own engine's is 64 bytes, another magic), and the
 * stricter check of every restart point.
 *
 * The file is read into memory with pread through an env_t (util/env.h: tests inject faults
 * there; env_default() otherwise) (one pass, no mmap, so a file that shrinks under
 * the reader cannot fault it); every length is checked against the bytes at hand, so a
 * damaged file gives BFH_E_CORRUPT, never a read out of bounds. Every checksum is verified.
 * Messages name the file and the offset: "table /db/000123.ldb: block at 40960: checksum
 * mismatch".
 *
 * A table's tag (ldb_table_tag) is a 64-bit digest that binds what bfh derives from the table
 * (its filters, kept in the sidecar cache, index/leaf_cache.h) to the table's bytes, not
 * to its number and size, which a database made again in the same directory reuses: XXH3-64
 * (seed LDB_TABLE_TAG_SEED) of the footer (48 bytes), the index block's contents and trailer,
 * then the 5-byte trailer of every data block the index lists, in index order. Each trailer
 * holds the CRC32C of its block's contents, so the tag covers every key and value the index
 * reaches without the data blocks being decoded (the trailers are read through 256 KiB
 * windows, one pread each).
 *
 * Single data blocks can also be read on their own (ldb_table_read_blocks), by the place the
 * index gives them (a block_ref_t, as the whole-table read reports it): each with one pread
 * of its contents and trailer, checked and decoded as above, without the footer or index.
 */
#ifndef BFH_LSM_HOOKS_LEVELDB_TABLE_H
#define BFH_LSM_HOOKS_LEVELDB_TABLE_H

#include <stddef.h>
#include <stdint.h>

#include "filters/block_filter.h"
#include "lsm_hooks/leveldb_format/ldb_entry.h"
#include "util/block_ref.h"
#include "util/env.h"
#include "util/err.h"

struct block_cache_use;

#define LDB_TABLE_MAGIC 0xdb4775248b80fb57ull
#define LDB_FOOTER_BYTES 48

#define LDB_TABLE_TAG_SEED 0x6266687461673031ull /* "bfhtag01" */

/* The tag of the table file at path (see above), read through io (borrowed): the footer, the
   index block (its checksum verified) and each data block's trailer. BFH_NOT_FOUND if the file
   does not exist; BFH_E_CORRUPT (a bad footer, index block or handle), BFH_E_IO, BFH_E_NOMEM,
   naming the file and offset. The data blocks themselves are not checked. Thread-safe. */
int ldb_table_tag(env_t *io, const char *path, uint64_t *tag, err_t *err);

/* Calls fn for every entry of the table file at path (read through io, borrowed), in file order
   (ascending internal key), with borrowed pointers valid during the call. Adds to st (may be NULL).
   Returns BFH_OK (also when fn stopped the read); BFH_NOT_FOUND if the file does not exist
   (a table deleted under the reader); BFH_E_IO, BFH_E_NOMEM; BFH_E_CORRUPT for any format or
   checksum violation. Messages name the file and offset. Thread-safe (no shared state). */
int ldb_table_scan(env_t *io, const char *path, ldb_visit_fn fn, void *arg, ldb_read_stats_t *st,
                   err_t *err);

/* Told the end of each data block: the place of its contents (offset and size, without the
   trailer, as the index block gives them). Return 0 to go on, nonzero to stop the read early
   (the read then returns BFH_OK). */
typedef int (*ldb_block_fn)(void *arg, uint64_t offset, uint64_t size);

/* ldb_table_scan, and block_fn (may be NULL) is called with the same arg after the last entry
   of each data block (also of a block without entries), before the next block's first. */
int ldb_table_scan_blocks(env_t *io, const char *path, ldb_visit_fn fn, ldb_block_fn block_fn,
                          void *arg, ldb_read_stats_t *st, err_t *err);

/* ldb_table_scan_blocks, and with tag != NULL (and BFH_OK) *tag is the table's tag, taken from
   the very bytes the entries were read from (as ldb_table_tag would give it for them). */
int ldb_table_scan_tagged(env_t *io, const char *path, ldb_visit_fn fn, ldb_block_fn block_fn,
                          void *arg, ldb_read_stats_t *st, uint64_t *tag, err_t *err);

/* Calls fn for every entry of the data blocks refs[0, n) of the table at path, block by block
   in the order of refs, reading only those blocks (contents and trailer each; bytes_read in st
   counts them). Each block is checked as ldb_table_scan checks it (inside the file before its
   footer, checksum, compression, block format). Errors as ldb_table_scan: BFH_NOT_FOUND if
   the file does not exist, BFH_E_CORRUPT naming the file and the block's offset for a damaged
   block or a ref outside the file. Thread-safe. */
int ldb_table_read_blocks(env_t *io, const char *path, const block_ref_t *refs, size_t n,
                          ldb_visit_fn fn, void *arg, ldb_read_stats_t *st, err_t *err);
/* ldb_table_read_blocks through a cache of decoded blocks (use, lsm/block_cache.h; NULL:
   none), its id naming this file there for the life of the cache: a block the cache holds
   is walked where it is, and the file is opened only for a block it lacks, which enters
   decoded, after its checksum and its walk passed, as the fill allows. bytes_read in st
   counts the blocks walked, from the cache or the file. With nn needles nd[0, nn), fn gets
   only the entries whose value holds one (lsm/block.h block_scan_containing: the others are
   skipped undecoded, and entries in st counts the entries decoded). */
int ldb_table_read_blocks_cached(env_t *io, const char *path, const block_ref_t *refs, size_t n,
                                 const struct block_cache_use *use, const block_needle_t *nd,
                                 size_t nn, ldb_visit_fn fn, void *arg, ldb_read_stats_t *st,
                                 err_t *err);

/* ldb_table_scan and ldb_table_read_blocks over a table already open for reading (f,
   borrowed; env_open_read), named path in messages: what a reader that holds the file open
   uses, so that a table unlinked since its open (a compaction's input) is still read whole.
   The file's size is the one taken at its open. Thread-safe: any number of reads of one f
   may run at once. */
int ldb_table_scan_rfile(env_rfile_t *f, const char *path, ldb_visit_fn fn, void *arg,
                         ldb_read_stats_t *st, err_t *err);
/* The read of blocks over f goes through a cache of decoded blocks, as
   ldb_table_read_blocks_cached reads through it (use NULL: none). */
int ldb_table_read_blocks_rfile_cached(env_rfile_t *f, const char *path, const block_ref_t *refs,
                                       size_t n, const struct block_cache_use *use,
                                       const block_needle_t *nd, size_t nn, ldb_visit_fn fn,
                                       void *arg, ldb_read_stats_t *st, err_t *err);

/* A data block read ahead of its read (engine_ops_t.read_ahead) from the table at path, of
   file_size bytes: raw holds its ref.size bytes of contents and its trailer as the file holds
   them. Checked as ldb_table_read_blocks checks a block's place, checksum and compression, its
   decoded contents enter use's cache as the fill allows, to be walked by the read that
   finds them there; a block that does not check out is left out, for that read to read
   again and report. */
void ldb_table_keep_block(const char *path, uint64_t file_size, block_ref_t ref, const uint8_t *raw,
                          const struct block_cache_use *use);

#endif

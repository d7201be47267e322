/* rdb_table: a reader of RocksDB's block-based table files (.sst), as stock RocksDB 7.8.3
 * writes them (format_version 0 to 5), in C. The sister of leveldb_format/ldb_table.h, with
 * the same calls and the same discipline.
 *
 * Layout (little-endian; bfh's doc/rocksdb.md "Table files"):
 *   [data blocks] [meta blocks: filter, properties, range deletions, ...] [metaindex block]
 *   [index block(s)] [footer]
 *   block trailer (5 bytes, after every block): compression type u8 | checksum fixed32 over the
 *     contents and the type byte, of the kind the footer names (CRC32C masked, XXH32, the low
 *     32 bits of XXH64, or XXH3-64's low 32 bits mixed with the type byte)
 *   footer, format_version 0 (48 bytes, LevelDB's): metaindex handle, index handle, zero
 *     padding to 40 bytes, magic fixed64 0xdb4775248b80fb57; checksums are CRC32C
 *   footer, format_version >= 1 (53 bytes): checksum type u8, metaindex handle, index handle,
 *     zero padding to 41 bytes, format_version fixed32, magic fixed64 0x88e241b785f4cff7
 *   block: entries (shared varint32, non_shared varint32, value_len varint32, key_delta,
 *     value) | restarts fixed32[n] | [data-block hash map: buckets u8[m] | m fixed16]
 *     | n fixed32 (its top bit set when the hash map is there)
 *   index block (format_version >= 4 and the property rocksdb.index.value.is.delta.encoded):
 *     entries without value_len; the value at a restart point is a block handle, elsewhere the
 *     signed varint difference of its size to the previous one (the offset follows the previous
 *     block and its trailer)
 *   data-block keys are internal keys: user key | fixed64 (sequence << 8 | type)
 * A two-level (partitioned) index's top level lists index partitions in the same encoding.
 * Compressed blocks (types 1 snappy, 2 zlib raw deflate, 3 bzip2, 4 lz4, 5 lz4hc, 7 zstd) are
 * decompressed before the walk; from format_version 2 on, all but snappy begin with the
 * decompressed size as a varint32.
 *
 * The file is read with pread through an env_t (util/env.h); every length is checked against
 * the bytes at hand, so a damaged file gives BFH_E_CORRUPT, never a read out of bounds. Every
 * checksum is verified. Messages name the file and the offset: "table /db/000123.sst: block at
 * 40960: checksum mismatch". A table the reader cannot decode without guessing (a compression
 * dictionary, an unknown checksum or compression type, a newer format_version) gives
 * BFH_E_UNSUPPORTED naming it.
 *
 * A table's tag (rdb_table_tag) is a 64-bit digest that binds what bfh derives from the table
 * to the table's bytes: XXH3-64 (seed RDB_TABLE_TAG_SEED) of the footer, the metaindex block,
 * the index block (and every index partition), each with its trailer, then the 5-byte trailer
 * of every data block the index lists, in index order, and of the range-deletion block. Each
 * trailer holds the checksum of its block, so the tag covers every key, value and range
 * tombstone without the data blocks being decoded.
 */
#ifndef BFH_LSM_HOOKS_ROCKSDB_TABLE_H
#define BFH_LSM_HOOKS_ROCKSDB_TABLE_H

#include <stddef.h>
#include <stdint.h>

#include "filters/block_filter.h"
#include "lsm_hooks/rocksdb_format/rdb_entry.h"
#include "util/block_ref.h"
#include "util/env.h"
#include "util/err.h"

struct block_cache_use;

#define RDB_TABLE_MAGIC 0x88e241b785f4cff7ull        /* format_version >= 1 */
#define RDB_TABLE_LEGACY_MAGIC 0xdb4775248b80fb57ull /* format_version 0 (LevelDB's) */
#define RDB_FOOTER_BYTES 53
#define RDB_LEGACY_FOOTER_BYTES 48
#define RDB_MAX_FORMAT_VERSION 5

#define RDB_TABLE_TAG_SEED 0x6266687264623031ull /* "bfhrdb01" */

/* The footer's checksum types. */
#define RDB_CHECKSUM_NONE 0
#define RDB_CHECKSUM_CRC32C 1
#define RDB_CHECKSUM_XXHASH 2
#define RDB_CHECKSUM_XXHASH64 3
#define RDB_CHECKSUM_XXH3 4

/* The index types (property rocksdb.block.based.table.index.type). */
#define RDB_INDEX_BINARY 0
#define RDB_INDEX_HASH 1
#define RDB_INDEX_TWO_LEVEL 2
#define RDB_INDEX_BINARY_WITH_FIRST_KEY 3

/* The column family id of a table that names none (RocksDB's kUnknownColumnFamily). */
#define RDB_CF_UNKNOWN 0x7fffffffu

/* What a table says about itself: its footer and its properties block (rocksdb.properties).
   A property the table does not carry is 0 or NULL (strings). The strings are owned by the
   struct: rdb_table_props_release() frees them. */
typedef struct rdb_table_props {
  uint32_t format_version;          /* from the footer */
  int checksum_type;                /* RDB_CHECKSUM_*, from the footer */
  uint64_t cf_id;                   /* rocksdb.column.family.id (RDB_CF_UNKNOWN if none) */
  char *cf_name;                    /* rocksdb.column.family.name */
  uint64_t num_entries;             /* rocksdb.num.entries (entries and range tombstones) */
  uint64_t num_deletions;           /* rocksdb.deleted.keys */
  uint64_t num_merge_operands;      /* rocksdb.merge.operands */
  uint64_t num_range_deletions;     /* rocksdb.num.range-deletions */
  uint64_t num_data_blocks;         /* rocksdb.num.data.blocks */
  char *merge_operator;             /* rocksdb.merge.operator ("nullptr" when none was set) */
  char *comparator;                 /* rocksdb.comparator */
  char *compression;                /* rocksdb.compression, e.g. "Snappy", "NoCompression" */
  char *prefix_extractor;           /* rocksdb.prefix.extractor.name */
  uint32_t index_type;              /* RDB_INDEX_* */
  int index_key_is_user_key;        /* rocksdb.index.key.is.user.key */
  int index_value_is_delta_encoded; /* rocksdb.index.value.is.delta.encoded */
  int has_range_del_block;          /* the metaindex lists rocksdb.range_del */
  int has_compression_dict;         /* the metaindex lists rocksdb.compression_dict */
  /* A table written by SstFileWriter (for IngestExternalFile) says so: */
  int has_ext_version;              /* rocksdb.external_sst_file.version is there ... */
  uint32_t ext_version;             /* ... (fixed32; 2 in RocksDB 7.8.3) */
  int has_ext_global_seqno;         /* rocksdb.external_sst_file.global_seqno is there ... */
  uint64_t ext_global_seqno;        /* ... (fixed64; 0 unless the ingestion wrote it) */
  /* Blob references cannot be told from the properties: a scan counts them
     (rdb_read_stats_t.blob_refs). */
} rdb_table_props_t;

/* Frees the strings of p (p itself is the caller's) and zeroes it. NULL allowed. */
void rdb_table_props_release(rdb_table_props_t *p);

/* Reads the footer, the metaindex block and the properties block of the table at path (through
   io, borrowed) into *props (overwritten; release with rdb_table_props_release, also after an
   error). Errors as rdb_table_scan. Thread-safe. */
int rdb_table_props_read(env_t *io, const char *path, rdb_table_props_t *props, err_t *err);
int rdb_table_props_read_rfile(env_rfile_t *f, const char *path, rdb_table_props_t *props,
                               err_t *err);

/* No global sequence number: the table's entries carry their own sequences. */
#define RDB_NO_GLOBAL_SEQNO UINT64_MAX
/* RocksDB's largest sequence number (kMaxSequenceNumber, 2^56 - 1). */
#define RDB_MAX_SEQNO ((1ull << 56) - 1)

/* The sequence RocksDB 7.8.3 gives every entry and range tombstone of the table whose
   properties are p (table/block_based/block_based_table_reader.cc GetGlobalSequenceNumber,
   applied by the block iterators to data and range-deletion blocks alike): a table ingested
   with IngestExternalFile (property rocksdb.external_sst_file.version >= 2) holds its entries
   at sequence 0 and gets its global sequence number from the MANIFEST (largest_seqno, the
   MANIFEST's largest sequence of the file), or from its global_seqno property when the
   ingestion wrote it there (then both must agree). *gseq is that number, or
   RDB_NO_GLOBAL_SEQNO for any other table. BFH_E_CORRUPT, naming path, where RocksDB's reader
   says Corruption (a global_seqno property on a table that is not ingested, or on a version 1
   one; a property that disagrees with largest_seqno; one above RDB_MAX_SEQNO). */
int rdb_table_global_seqno(const rdb_table_props_t *p, const char *path, uint64_t largest_seqno,
                           uint64_t *gseq, err_t *err);

/* The tag of the table file at path (see above), read through io (borrowed). BFH_NOT_FOUND if
   the file does not exist; BFH_E_CORRUPT, BFH_E_UNSUPPORTED, BFH_E_IO, BFH_E_NOMEM, naming the
   file and offset. The data blocks themselves are not checked. Thread-safe. */
int rdb_table_tag(env_t *io, const char *path, uint64_t *tag, err_t *err);

/* Calls fn for every entry of the table file at path (read through io, borrowed): the entries
   of the data blocks in file order (ascending internal key), then the range tombstones of the
   range-deletion block (type RDB_TYPE_RANGE_DELETION), with borrowed pointers valid during the
   call. Adds to st (may be NULL). Returns BFH_OK (also when fn stopped the read); BFH_NOT_FOUND
   if the file does not exist (a table deleted under the reader); BFH_E_IO, BFH_E_NOMEM;
   BFH_E_CORRUPT for any format or checksum violation; BFH_E_UNSUPPORTED for what the reader
   does not decode (see above). Messages name the file and offset. Thread-safe. */
int rdb_table_scan(env_t *io, const char *path, rdb_visit_fn fn, void *arg, rdb_read_stats_t *st,
                   err_t *err);

/* Told the end of each data block: the place of its contents (offset and size, without the
   trailer, as the index gives them). Return 0 to go on, nonzero to stop the read early (the
   read then returns BFH_OK). */
typedef int (*rdb_block_fn)(void *arg, uint64_t offset, uint64_t size);

/* rdb_table_scan, and block_fn (may be NULL) is called with the same arg after the last entry
   of each data block (also of a block without entries), before the next block's first. It is
   not called for the range-deletion block, whose tombstones come after the last data block. */
int rdb_table_scan_blocks(env_t *io, const char *path, rdb_visit_fn fn, rdb_block_fn block_fn,
                          void *arg, rdb_read_stats_t *st, err_t *err);

/* rdb_table_scan_blocks, and with tag != NULL (and BFH_OK) *tag is the table's tag, taken from
   the very bytes the entries were read from (as rdb_table_tag would give it for them); with
   props != NULL, *props is filled as rdb_table_props_read fills it (release it also after an
   error). */
int rdb_table_scan_tagged(env_t *io, const char *path, rdb_visit_fn fn, rdb_block_fn block_fn,
                          void *arg, rdb_read_stats_t *st, uint64_t *tag, rdb_table_props_t *props,
                          err_t *err);

/* Calls fn for every entry of the data blocks refs[0, n) of the table at path, block by block
   in the order of refs, reading only the footer (for the checksum type and format_version) and
   those blocks (contents and trailer each; bytes_read in st counts them). Each block is checked
   as rdb_table_scan checks it. Range tombstones are not visited. Errors as rdb_table_scan:
   BFH_NOT_FOUND if the file does not exist, BFH_E_CORRUPT naming the file and the block's offset
   for a damaged block or a ref outside the file. Thread-safe. */
int rdb_table_read_blocks(env_t *io, const char *path, const block_ref_t *refs, size_t n,
                          rdb_visit_fn fn, void *arg, rdb_read_stats_t *st, err_t *err);
/* rdb_table_read_blocks through a cache of decoded blocks (use, lsm/block_cache.h; NULL:
   none), its id naming this file there for the life of the cache: a block the cache holds
   is walked where it is, and the file is opened (and its footer read) only for a block it
   lacks, which enters decoded, after its checksum and its walk passed, as the fill allows.
   bytes_read in st counts the blocks walked, from the cache or the file. With nn needles
   nd[0, nn), fn gets only the entries of a data block whose value holds one (lsm/block.h
   block_scan_containing: the others are skipped undecoded and unchecked, and entries in st
   counts the entries decoded): for a table whose every entry is known to be one bfh reads
   (its filters were built from a read of it whole). */
int rdb_table_read_blocks_cached(env_t *io, const char *path, const block_ref_t *refs, size_t n,
                                 const struct block_cache_use *use, const block_needle_t *nd,
                                 size_t nn, rdb_visit_fn fn, void *arg, rdb_read_stats_t *st,
                                 err_t *err);

/* rdb_table_scan(_blocks/_tagged) and rdb_table_read_blocks over a table already open for
   reading (f, borrowed; env_open_read), named path in messages: what a reader that holds the
   file open uses, so that a table unlinked since its open (a compaction's input) is still read
   whole. The file's size is the one taken at its open. Thread-safe: any number of reads of one
   f may run at once. */
int rdb_table_scan_rfile(env_rfile_t *f, const char *path, rdb_visit_fn fn, rdb_block_fn block_fn,
                         void *arg, rdb_read_stats_t *st, uint64_t *tag, rdb_table_props_t *props,
                         err_t *err);
int rdb_table_read_blocks_rfile(env_rfile_t *f, const char *path, const block_ref_t *refs, size_t n,
                                rdb_visit_fn fn, void *arg, rdb_read_stats_t *st, err_t *err);

/* What a read of data blocks takes from a table's footer (rdb_table_read_blocks reads it each
   time): a reader that holds the file open reads it once (rdb_table_footer_read_rfile) and
   passes it to every read of blocks of that open file (rdb_table_read_blocks_footer). */
typedef struct rdb_table_footer {
  uint64_t size;            /* the file's size it was read at (env_rfile_size) */
  uint64_t footer_at;       /* blocks and their trailers lie in [0, footer_at) */
  uint32_t footer_len;      /* RDB_FOOTER_BYTES or RDB_LEGACY_FOOTER_BYTES */
  uint32_t format_version;
  int checksum_type;        /* RDB_CHECKSUM_* */
} rdb_table_footer_t;

/* *out: the footer of the table open as f (borrowed), named path in messages. BFH_OK, or the
   errors of rdb_table_read_blocks for a damaged or unsupported footer (*out untouched).
   Thread-safe. */
int rdb_table_footer_read_rfile(env_rfile_t *f, const char *path, rdb_table_footer_t *out,
                                err_t *err);
/* rdb_table_read_blocks_rfile with ft, f's footer from rdb_table_footer_read_rfile of the same
   open f (borrowed), instead of a read of it: only the blocks are read. ft NULL, or taken at
   another size than f's: the footer is read as rdb_table_read_blocks_rfile reads it. Every
   block is checked against ft's bounds and its own checksum as there. Thread-safe. */
int rdb_table_read_blocks_footer(env_rfile_t *f, const char *path, const rdb_table_footer_t *ft,
                                 const block_ref_t *refs, size_t n, rdb_visit_fn fn, void *arg,
                                 rdb_read_stats_t *st, err_t *err);
/* rdb_table_read_blocks_footer through a cache of decoded blocks, as
   rdb_table_read_blocks_cached reads through it (use NULL: none): a block the cache holds is
   walked where it is, and the footer is needed (read, unless ft gives it) only for a block it
   lacks. */
int rdb_table_read_blocks_footer_cached(env_rfile_t *f, const char *path,
                                        const rdb_table_footer_t *ft, const block_ref_t *refs,
                                        size_t n, const struct block_cache_use *use,
                                        const block_needle_t *nd, size_t nn, rdb_visit_fn fn,
                                        void *arg, rdb_read_stats_t *st, err_t *err);

/* A data block read ahead of its read (engine_ops_t.read_ahead) from a table whose footer is
   ft (rdb_table_footer_read_rfile): raw holds its ref.size bytes of contents and its trailer
   as the file holds them. Checked as rdb_table_read_blocks_footer checks a block's place,
   checksum and compression, its decoded contents enter use's cache as the fill allows, to be
   walked by the read that finds them there; a block that does not check out is left out, for
   that read to read again and report. */
void rdb_table_keep_block(const char *path, const rdb_table_footer_t *ft, block_ref_t ref,
                          const uint8_t *raw, const struct block_cache_use *use);

/* Told each data block of a table in index order: the index entry's key as a user key (a
   separator: >= every key of the block, < every key of the next; borrowed, valid during the
   call) and the block's place (offset and size without the trailer). Return 0 to go on,
   nonzero to stop. */
typedef int (*rdb_index_fn)(void *arg, const uint8_t *key, size_t key_len, uint64_t offset,
                            uint64_t size);

/* Reads only the footer, the metaindex and properties blocks and the index (every partition of
   a two-level one) of the table open as f (borrowed), named path in messages, and calls fn for
   each data block: what a point lookup needs to read one data block. With range_fn != NULL
   (and fn never stopping the read), the range-deletion block is read too and range_fn called,
   with the same arg, for each of its tombstones (type RDB_TYPE_RANGE_DELETION: key the begin,
   val the end user key), after the last data block. With props != NULL, *props is filled as
   rdb_table_props_read fills it (release it also after an error). Errors as rdb_table_scan.
   Thread-safe. */
int rdb_table_index_rfile(env_rfile_t *f, const char *path, rdb_index_fn fn, rdb_visit_fn range_fn,
                          void *arg, rdb_read_stats_t *st, rdb_table_props_t *props, err_t *err);

#endif

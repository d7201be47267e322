/* leaf_cache: the sidecar cache of leaves, one file per table, for engines whose tables
 * cannot carry bfh's value filter (stock LevelDB). index_sync.c is its only user.
 *
 * The cache keeps the filters of indexed tables in <db>/bfh-filters/NNNNNN.vf so that
 * reopening a large database does not reread every table, and with leaves on disk the file
 * is the leaf the index reads. A file holds the table's leaf and, optionally, its block
 * filter (filters/block_filter.h). A cache file is bound to the bytes of its table: its
 * header holds the table's number, size and tag, a digest of the table's contents
 * (lsm_hooks/leveldb_format/ldb_table.h, ldb_table_tag), taken from the bytes the filters were
 * built from. Number and size alone do not name a table: a database destroyed and made again in the
 * same directory reuses both. A file whose tag is not the table's tag of now, that does not
 * parse, fails a checksum, was made with other m, k or seed, or is of an older version (1 and
 * 2 held no tag, 3 no stamp) is stale: it is rebuilt from the table, never trusted. LevelDB
 * ignores the subdirectory (its file names never parse as LevelDB names).
 *
 * Taking a tag reads every block trailer of the table, i.e. every page of it. The header
 * therefore also holds the table's stamp, a digest of what the file system says of the table
 * file (env_file_stamp_t: device, inode, size, mtime and ctime in nanoseconds) and of its
 * footer's bytes, taken before the filters were built from it. An open whose stamp of the
 * table is the file's (leaf_cache_load_stamped) takes the file's tag as the table's without
 * reading the table: the same inode, unchanged in contents and inode times, ending in the
 * same footer, holds the same bytes. Any other stamp falls back to the tag: a table made
 * again under the same number (a new database at the same path) has another inode or other
 * times, and is read through its tag as before. File times tick coarsely (a kernel tick, a
 * few ms, on many Linux file systems), so a table changed within the tick in which it was
 * stamped could keep its times: a table whose mtime or ctime is less than
 * LEAF_CACHE_STAMP_MARGIN_NS before the moment of stamping gets no stamp (0; Git's "racily
 * clean" rule). Any later change then falls in a later tick than the times recorded.
 *
 * Cache file layout (little-endian; doc/format.md "LevelDB filter cache (sidecar)"):
 *   magic "BFHC" (4 bytes) | version fixed32 (4) | table number fixed64 | table size fixed64
 *   | table tag fixed64 | table stamp fixed64 (0: none) | flags fixed32
 *   | crc32c fixed32 (masked, over the 44 bytes before it)
 *   | serialized value filter (filters/value_filter.h, with its own crc) at offset 48
 *   | with flag LEAF_CACHE_HAS_BLOCKS alone: serialized block filter (filters/block_filter.h,
 *     with its own crc) to the end of the file
 *   | with flags LEAF_CACHE_HAS_BLOCKS | LEAF_CACHE_HAS_MAP (version 5): blocks_len fixed64
 *     | head_len fixed64 | chunks_len fixed64 | crc32c fixed32 (masked, over those 24 bytes)
 *     | the block filter (blocks_len bytes) | the head of the table's value-to-block map
 *     (index/value_block_map.h, "bfh.value_blocks"; head_len) | its chunks ("bfh.value_chunks";
 *     chunks_len, to the end of the file)
 * flags: bit 0 LEAF_CACHE_HAS_BLOCKS, bit 1 LEAF_CACHE_HAS_MAP (versions 5 and 6 only, and
 * only with bit 0); the others reserved, 0 (a cache file with any of them set is stale).
 * Version 6 writes map heads of version 3 (sketches of 1024 bits per chunk); version 5 (heads
 * of version 2, 512-bit sketches) still loads with its map; version 4 (no map) still loads:
 * its table keeps its block filter.
 *
 * A map is loaded with its chunks' reader bound to the very file its head came from, so that
 * a cache file replaced or removed meanwhile can never answer for it. Descriptors: the file
 * stays open in the map (value_block_map_set_reader) until the map is destroyed, as long as
 * the maps of the process hold fewer than a budget of descriptors (an eighth of the soft
 * RLIMIT_NOFILE, at most 256: LevelDB keeps up to 1000 tables open itself, and a database of
 * thousands of tables must not run the process out of descriptors); past it a map keeps the
 * file's stamp (dev, inode, size, mtime, ctime) and opens the file again at each chunk read,
 * refusing one whose stamp differs as damage (the table is then read whole). Its block filter
 * is not read at all (it stays in the file as the fallback of a reader that wants no map).
 * A table that cannot be read gets no cache file (and no leaf: it is always scanned).
 * Every file access goes through the env_t given (borrowed; util/env.h).
 */
#ifndef BFH_LSM_HOOKS_LEAF_CACHE_H
#define BFH_LSM_HOOKS_LEAF_CACHE_H

#include <stddef.h>
#include <stdint.h>

#include "filters/block_filter.h"
#include "filters/value_filter.h"
#include "index/value_block_map.h"
#include "util/env.h"
#include "util/err.h"

#define LEAF_CACHE_DIR "bfh-filters"
#define LEAF_CACHE_MAGIC "BFHC"
#define LEAF_CACHE_VERSION 6u        /* maps with heads of version 3 to 6 (value_block_map.h) */
#define LEAF_CACHE_VERSION_MAP_V2 5u /* maps with version 2 heads: still loads, map and all */
#define LEAF_CACHE_VERSION_NO_MAP 4u /* the version before maps: still loads */
#define LEAF_CACHE_HAS_BLOCKS 1u     /* flags: a block filter follows the leaf */
#define LEAF_CACHE_HAS_MAP 2u        /* flags: a value-to-block map follows the block filter */
#define LEAF_CACHE_MAP_SECTION_BYTES 28
#define LEAF_CACHE_HEADER_BYTES 48
#define LEAF_CACHE_STAMP_SEED 0x6266687374616d70ull /* "bfhstamp" */
#define LEAF_CACHE_STAMP_MARGIN_NS 2000000000ll     /* 2 s */

/* The identity of a table a cache file is made for: its number, its size, its tag and its
   stamp (0: none taken; a file with stamp 0 is never loaded by its stamp). */
typedef struct leaf_cache_table {
  uint64_t number, size, tag, stamp;
} leaf_cache_table_t;

/* Loads the cache file at path for table t with parameters (m, k, seed).
   On BFH_OK, *out is a new filter owned by the caller, and *blocks the file's block filter
   (new, owned by the caller) or NULL if it has none. blocks may be NULL: the block filter is
   then checked and dropped. Whether a block filter was built with the bits per value the
   caller wants is the caller's to check. BFH_NOT_FOUND if the file does not exist;
   BFH_E_CORRUPT (stale: made for another table, by number, size or tag, of an older version,
   or damaged, in the leaf or the block filter: rebuild it) or BFH_E_IO with a message naming
   the file. */
int leaf_cache_load(env_t *io, const char *path, const leaf_cache_table_t *t, uint64_t m,
                    uint32_t k, uint64_t seed, value_filter_t **out, block_filter_t **blocks,
                    err_t *err);

/* What bfh check reads of a cache file: leaf_cache_load, and then, for a file with a
   value-to-block map, its head and every chunk, each checked as a search would check it.
   BFH_OK; BFH_NOT_FOUND; BFH_E_CORRUPT naming the file and the offset of the damage in it
   ("... at N: ..."), or stale; BFH_E_IO. */
int leaf_cache_check(env_t *io, const char *path, const leaf_cache_table_t *t, uint64_t m,
                     uint32_t k, uint64_t seed, err_t *err);

/* leaf_cache_load bound by the stamp instead of the tag: the file is the table's when its
   number, size and stamp are t's (t->stamp not 0); then t->tag is set to the file's tag.
   BFH_E_CORRUPT for a file of another stamp (the caller then takes the table's tag and calls
   leaf_cache_load), as for any stale or damaged file. */
int leaf_cache_load_stamped(env_t *io, const char *path, leaf_cache_table_t *t, uint64_t m,
                            uint32_t k, uint64_t seed, value_filter_t **out,
                            block_filter_t **blocks, err_t *err);

/* Tests: sets the descriptor budget of the maps (see above; -1: computed again). */
void leaf_cache_test_map_fd_budget(long budget);

/* leaf_cache_load (by_stamp 0) or leaf_cache_load_stamped (1), also giving the file's map:
   with map != NULL and a file that has one, *map is it (new, owned by the caller; its chunks
   are read from this file, kept open in it) and *blocks is NULL (the block filter is not
   read); else *map is NULL and *blocks as leaf_cache_load says. map may be NULL: then as
   leaf_cache_load. */
int leaf_cache_load_map(env_t *io, const char *path, leaf_cache_table_t *t, int by_stamp,
                        uint64_t m, uint32_t k, uint64_t seed, value_filter_t **out,
                        block_filter_t **blocks, value_block_map_t **map, err_t *err);

/* The bytes of the cache file at path, made for table t by its tag (of this version), with
   t's stamp in place of its own (*out malloc'd, the caller frees it): what leaf_cache_write
   then writes, for a file whose filters are not all held in memory (its map's). BFH_OK or
   BFH_E_CORRUPT (not t's) or the I/O error. */
int leaf_cache_restamped(env_t *io, const char *path, const leaf_cache_table_t *t, uint8_t **out,
                         size_t *len, err_t *err);

/* The stamp of a table file (see above) at now_ns (CLOCK_REALTIME): a digest of st and of
   the table's footer, the last footer_len bytes of the file; 0 (none) if the file's mtime or
   ctime is less than the margin before now_ns (or after it). */
uint64_t leaf_cache_stamp(const env_file_stamp_t *st, const uint8_t *footer, size_t footer_len,
                          int64_t now_ns);

/* The serialized map head of the cache file at path, bound to table t by t's stamp (number,
   size and stamp; t->stamp not 0), without reading its leaf or block filter: *head new
   (malloc'd, the caller frees it), *head_len its size. BFH_NOT_FOUND: no file; BFH_E_CORRUPT:
   another table's or stamp's, no map, or damaged (message names the file); BFH_E_IO. */
int leaf_cache_map_head(env_t *io, const char *path, const leaf_cache_table_t *t, uint64_t m,
                        uint8_t **head, size_t *head_len, err_t *err);
/* The map of the cache file at path, bound to table t by its stamp as leaf_cache_map_head, whose
   head must be byte for byte head[0, head_len) (a copy held elsewhere: the persisted index,
   persisted_index.h): *map new, owned by the caller, its chunks read from this very file (as
   leaf_cache_load_map's). BFH_E_CORRUPT also for another head. The leaf is not read. */
int leaf_cache_load_map_by_head(env_t *io, const char *path, const leaf_cache_table_t *t,
                                uint64_t m, const uint8_t *head, size_t head_len,
                                value_block_map_t **map, err_t *err);

/* Tests only: the margin (LEAF_CACHE_STAMP_MARGIN_NS until set; < 0 restores it), and how
   many loads leaf_cache_load_stamped made in this process. */
void leaf_cache_test_set_stamp_margin(int64_t ns);
uint64_t leaf_cache_test_stamped_loads(void);

/* Writes the cache file at path for table t durably: path.tmp is written and fdatasynced,
   renamed to path, and the directory fsynced (a leaf on disk lives in this file once it is
   added, so it must survive a crash; a torn file would fail its checksum and be rebuilt
   anyway). On failure path.tmp is removed and the message names the file. The filters are
   borrowed; blocks may be NULL (a file without a block filter). t->tag must be the tag of the
   bytes the filters were built from. */
int leaf_cache_store(env_t *io, const char *path, const leaf_cache_table_t *t,
                     const value_filter_t *f, const block_filter_t *blocks, err_t *err);

/* leaf_cache_store in two steps, for a cache file written later than its filter is
   made: encode makes the file's bytes (*out malloc'd, the caller frees it; *len its size),
   write writes them at path as leaf_cache_store does. */
int leaf_cache_encode(const leaf_cache_table_t *t, const value_filter_t *f,
                      const block_filter_t *blocks, uint8_t **out, size_t *len, err_t *err);
int leaf_cache_write(env_t *io, const char *path, const uint8_t *buf, size_t n, err_t *err);

/* A table's value-to-block map, serialized (value_block_map_builder_finish): borrowed. */
typedef struct leaf_cache_map_bytes {
  const uint8_t *head, *chunks; /* head NULL: no map */
  size_t head_len, chunks_len;
} leaf_cache_map_bytes_t;

/* leaf_cache_encode and leaf_cache_store with the table's map (map or map->head NULL: none;
   a map needs the block filter: BFH_E_INVALID without one). */
int leaf_cache_encode_map(const leaf_cache_table_t *t, const value_filter_t *f,
                          const block_filter_t *blocks, const leaf_cache_map_bytes_t *map,
                          uint8_t **out, size_t *len, err_t *err);
int leaf_cache_store_map(env_t *io, const char *path, const leaf_cache_table_t *t,
                         const value_filter_t *f, const block_filter_t *blocks,
                         const leaf_cache_map_bytes_t *map, err_t *err);

#endif

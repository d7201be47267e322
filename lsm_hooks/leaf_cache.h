/* leaf_cache: the sidecar cache of leaves, one file per table, for engines whose tables
 * cannot carry bfh's value filter (stock LevelDB). index_sync.c is its only user.
 *
 * The cache keeps the filters of indexed tables in <db>/bfh-filters/NNNNNN.vf so that
 * reopening a large database does not reread every table, and with leaves on disk the file
 * is the leaf the index reads. A file holds the table's leaf and, optionally, its block
 * filter (filters/block_filter.h). A cache file is keyed by the table's file number and size (in
 * its header); a file that does not match, does not parse, fails a checksum or was made with
 * other m, k or seed is stale and is rebuilt, never trusted. LevelDB ignores the
 * subdirectory (its file names never parse as LevelDB names).
 *
 * Cache file layout (little-endian; doc/format.md "LevelDB filter cache (sidecar)"):
 *   magic "BFHC" (4 bytes) | version fixed32 (2) | table number fixed64 | table size fixed64
 *   | flags fixed32 | crc32c fixed32 (masked, over the 28 bytes before it)
 *   | serialized value filter (filters/value_filter.h, with its own crc) at offset 32
 *   | with flag LEAF_CACHE_HAS_BLOCKS: serialized block filter (filters/block_filter.h, with
 *     its own crc) to the end of the file
 * flags: bit 0 LEAF_CACHE_HAS_BLOCKS; the others reserved, 0 (a cache file with any of them
 * set is stale). A version-1 file is the same without the block filter (its flags are 0): it
 * still loads, as a leaf without a block filter.
 * A table that cannot be read gets no cache file (and no leaf: it is always scanned).
 * Every file access goes through the lsm_io_t given (borrowed; lsm/io.h).
 */
#ifndef BFH_LSM_HOOKS_LEAF_CACHE_H
#define BFH_LSM_HOOKS_LEAF_CACHE_H

#include <stddef.h>
#include <stdint.h>

#include "filters/block_filter.h"
#include "filters/value_filter.h"
#include "lsm/io.h"
#include "util/err.h"

#define LEAF_CACHE_DIR "bfh-filters"
#define LEAF_CACHE_MAGIC "BFHC"
#define LEAF_CACHE_VERSION 2u
#define LEAF_CACHE_VERSION_LEAF_ONLY 1u /* read, never written */
#define LEAF_CACHE_HAS_BLOCKS 1u        /* flags: a block filter follows the leaf */
#define LEAF_CACHE_HEADER_BYTES 32

/* Loads the cache file at path for table (number, size) with parameters (m, k, seed).
   On BFH_OK, *out is a new filter owned by the caller, and *blocks the file's block filter
   (new, owned by the caller) or NULL if it has none (a version-1 file never has one). blocks
   may be NULL: the block filter is then checked and dropped. Whether a block filter was built
   with the bits per value the caller wants is the caller's to check. BFH_NOT_FOUND if the file
   does not exist; BFH_E_CORRUPT (stale or damaged, in the leaf or the block filter: rebuild
   it) or BFH_E_IO with a message naming the file. */
int leaf_cache_load(lsm_io_t *io, const char *path, uint64_t number, uint64_t size, uint64_t m,
                    uint32_t k, uint64_t seed, value_filter_t **out, block_filter_t **blocks,
                    err_t *err);

/* Writes the cache file at path durably: path.tmp is written and fdatasynced, renamed to
   path, and the directory fsynced (a leaf on disk lives in this file once it is added, so it
   must survive a crash; a torn file would fail its checksum and be rebuilt anyway). On
   failure path.tmp is removed and the message names the file. The filters are borrowed;
   blocks may be NULL (a file without a block filter). */
int leaf_cache_store(lsm_io_t *io, const char *path, uint64_t number, uint64_t size,
                     const value_filter_t *f, const block_filter_t *blocks, err_t *err);

/* leaf_cache_store in two steps, for a cache file written later than its filter is
   made: encode makes the file's bytes (*out malloc'd, the caller frees it; *len its size),
   write writes them at path as leaf_cache_store does. */
int leaf_cache_encode(uint64_t number, uint64_t size, const value_filter_t *f,
                      const block_filter_t *blocks, uint8_t **out, size_t *len, err_t *err);
int leaf_cache_write(lsm_io_t *io, const char *path, const uint8_t *buf, size_t n, err_t *err);

#endif

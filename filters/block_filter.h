/* block_filter_t: the second level under a table's leaf. It says which data blocks of one
 * table may hold a value, so that a search reads those blocks instead of the whole table.
 *
 * Layout: bit-sliced Bloom filters, one per data block that holds at least one value entry
 * (blocks holding only deletions are left out: no search ever needs them). Block j's
 * filter is column j of a matrix of `rows` x `nblocks` bits, stored row by row (each row
 * ceil(nblocks / 64) words). A value hash sets, in each of k rows, the bit of the block it
 * was added to. A probe ANDs the k rows it names: the set bits left are the blocks that may
 * hold the value. rows = ceil(bits_per_value * values / nblocks), so each column is a
 * Bloom filter of about bits_per_value bits per value of its block; k = round(bits_per_value
 * * ln 2), at most 16. Probing all blocks of a table touches k rows, not one filter per block.
 *
 * Values are given by their 64-bit hash (filters/hash.h, bfh_hash64 under the database's
 * seed, the same hash the leaves use); the rows are derived from a remix of it, so the
 * positions are independent of the leaf's.
 *
 * Each block is named by where it lies in its table file (block_ref_t: the offset and size
 * of its contents, as the table's index block says), so a reader can read it without the
 * table's index.
 *
 * Serialized form (little-endian; doc/format.md "Block filter"):
 *   magic "BFHB" fixed32 | version fixed32 (1) | nblocks fixed32 | k fixed32 | rows fixed64
 *   | values fixed64 | refs nblocks x (offset fixed64, size fixed64)
 *   | words fixed64[rows * ceil(nblocks / 64)] | crc32c fixed32 (masked, over all before it)
 * Bits at columns >= nblocks in a row's last word are zero; deserialize rejects a filter
 * that has any set, and refs that are not in ascending, non-overlapping order.
 *
 * Thread-safety: a built filter is immutable; probes may run concurrently.
 */
#ifndef BFH_FILTERS_BLOCK_FILTER_H
#define BFH_FILTERS_BLOCK_FILTER_H

#include <stddef.h>
#include <stdint.h>

#include "util/block_ref.h"
#include "util/err.h"

#define BLOCK_FILTER_DEFAULT_BITS 10 /* bits per value */
#define BLOCK_FILTER_MAX_BITS 32

typedef struct block_filter block_filter_t;
typedef struct block_filter_builder block_filter_builder_t;

/* A builder for one table. NULL if bits_per_value is out of 1..BLOCK_FILTER_MAX_BITS or
   memory is short. Client calls block_filter_builder_destroy(). */
block_filter_builder_t *block_filter_builder_create(uint32_t bits_per_value);
void block_filter_builder_destroy(block_filter_builder_t *b); /* NULL allowed */
/* Makes b as block_filter_builder_create(bits_per_value) left it, keeping its memory for the
   next table's values (its scale too). */
void block_filter_builder_reset(block_filter_builder_t *b);
/* States the builder's bits per value for a table of ref_blocks blocks (>= 1): a table found
   at finish to hold more blocks gets ceil(log2(blocks / ref_blocks) / log2(1 / 0.6185)) more,
   at most BLOCK_FILTER_MAX_BITS, so that the blocks a probe passes in vain stay about what
   they are in a table of ref_blocks blocks (each bit multiplies a block's false positive
   rate by about 0.6185). Without it, every table gets the bits it was created with. */
void block_filter_builder_scale(block_filter_builder_t *b, uint32_t ref_blocks);
/* Adds a value (by hash) to the block being built. ST_OK or ST_E_NOMEM. */
int block_filter_builder_add(block_filter_builder_t *b, uint64_t value_hash);
/* Closes the block being built: it lies at (offset, size). A block with no value added is
   left out. Blocks must be ended in file order. ST_OK, ST_E_NOMEM, or ST_E_INVALID if the
   block begins before the previous one (kept or not) ends, if offset + size overflows, or if
   it holds values and size is 0. */
int block_filter_builder_end_block(block_filter_builder_t *b, uint64_t offset, uint64_t size);
/* The filter of the blocks ended so far (values added after the last end_block are an
   ST_E_INVALID error). On ST_OK *out is new, owned by the caller. The builder may then only
   be destroyed. */
int block_filter_builder_finish(block_filter_builder_t *b, block_filter_t **out, err_t *err);

void block_filter_destroy(block_filter_t *f); /* NULL allowed */

/* Blocks in the filter (those with at least one value), and block i's place. */
uint32_t block_filter_blocks(const block_filter_t *f);
block_ref_t block_filter_ref(const block_filter_t *f, uint32_t i);
uint64_t block_filter_values(const block_filter_t *f);
/* The builder's bits_per_value, recovered from rows, blocks and values (block_filter.c). */
uint32_t block_filter_bits_per_value(const block_filter_t *f);

/* The blocks that may hold a value of this hash: writes their indexes, ascending, to out
   (room for block_filter_blocks(f) entries) and returns how many. Never leaves out a block
   a value of this hash was added to. */
uint32_t block_filter_probe(const block_filter_t *f, uint64_t value_hash, uint32_t *out);

/* Bytes the filter holds in memory (rows and refs). */
size_t block_filter_memory(const block_filter_t *f);

size_t block_filter_serialized_size(const block_filter_t *f);
/* Writes block_filter_serialized_size(f) bytes to out. */
void block_filter_serialize(const block_filter_t *f, uint8_t *out);
/* Parses a serialized filter. On ST_OK *out is new, owned by the caller. Anything malformed
   (short, bad magic or version, bad sizes, refs out of order, stray bits, checksum mismatch)
   gives ST_E_CORRUPT and a message; it never reads past data[len). */
int block_filter_deserialize(const uint8_t *data, size_t len, block_filter_t **out, err_t *err);

#endif

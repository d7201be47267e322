/* value_block_map_t: a table's value-to-block map, the block level of the lean index
 * (doc/search.md "The lean index"). Where a block filter (filters/block_filter.h) tests every
 * data block of a table for a value, the map NAMES the blocks: for every value entry of the
 * table it holds a 32-bit fingerprint of the value's hash, the number of the data block
 * holding it and a bound on the sequence numbers of that block's entries under that
 * fingerprint, sorted by fingerprint, on disk. Memory holds only the blocks' places, the
 * first fingerprint of each chunk of the map (its fences) and each chunk's sketch; a probe
 * reads one chunk, or none when the sketch says the chunk lacks the fingerprint.
 *
 * Two meta blocks of the own engine's table (doc/format.md "Value-to-block map"):
 *   "bfh.value_blocks"  the head, read at open (a few KB per table, and about 2 bits per
 *   code of the zones' range filters):
 *     magic "BFHM" fixed32 | version fixed32 (6) | nblocks fixed32 | chunk_entries fixed32
 *     | entries fixed64 | nchunks fixed32 | last fixed32 (the largest fingerprint)
 *     | sketch_bits fixed32 (S: a multiple of 8, 8..65536)
 *     | seq_lo fixed64 | seq_hi fixed64 (the least and largest sequence number of the
 *       entries mapped; seq_lo <= seq_hi) | nzones fixed32 (at most 64)
 *     | refs nblocks x (offset fixed64, size fixed64) | fences nchunks x fixed32
 *     | sketch (nchunks x S) / 8 bytes
 *     | zones nzones x (attr_id fixed64, lo fixed64, hi fixed64)
 *     | ranges nzones x (head_len fixed32, body_off fixed64, body_len fixed64, head_len bytes)
 *     | crc32c fixed32 (masked, over all before it)
 *     (the sketch: bit i set iff an entry has its fingerprint in the i-th of nchunks x S equal
 *     parts of [fences[0], last]; a probe reads a chunk only if its fingerprint's bit is set,
 *     and touches no fence when it is clear: a table that lacks the value reads a chunk with
 *     probability 1 - e^(-chunk_entries / S), 28% at S = 1024 for 3 bits per entry in memory.
 *     A zone: the least and largest 64-bit code of the table's terms of the attribute attr_id
 *     (lo <= hi), or lo = UINT64_MAX, hi = 0 when the table holds none; ascending by attr_id,
 *     distinct. A range: zone i's range filter (filters/range_filter.h, split: bits per key
 *     VALUE_BLOCK_MAP_RANGE_BITS, ranges of 2^VALUE_BLOCK_MAP_RANGE_LOG2 codes) over the
 *     codes of its zone, for every zone that holds a code: head_len bytes of its head, its
 *     body the body_len bytes at body_off of "bfh.value_chunks", after the last chunk; a zone
 *     without a code has head_len = body_off = body_len = 0. Bodies ascend in zone order and
 *     do not overlap. Version 5, still read: no ranges. Version 4, still read: as 5 without
 *     nzones (the refs follow seq_hi) nor zones. Version 3, still read: as 4 without seq_lo,
 *     seq_hi (the refs follow sketch_bits), entries of 6 bytes. Version 2, still read: as 3
 *     without sketch_bits (the refs follow last), S = 512, and a sketch per chunk over its
 *     own range [fences[c], fences[c + 1]] (49%, 1.5 bits))
 *   "bfh.value_chunks"  the entries, read one chunk per probe:
 *     chunk c (at c x (8 chunk_entries + 4)) = its entries x (fingerprint fixed32,
 *     block fixed16, bound fixed16) | crc32c fixed32 (masked, over fixed32 c and the entries)
 *     every chunk holds chunk_entries entries but the last (the rest); entries are the
 *     distinct (fingerprint, block) pairs, ascending; fences[c] is chunk c's first
 *     fingerprint. bound q is the largest sequence number s of the block's entries with
 *     that fingerprint, quantized upward: q = ceil((s - seq_lo) / 2^t), t the least shift
 *     with ceil((seq_hi - seq_lo) / 2^t) <= 65535, read back as min(seq_lo + q x 2^t,
 *     seq_hi), which is at least s, at most seq_hi and less than 2^t above s. The newest K
 *     reads a table's blocks by it. After the last chunk (version 6): the ranges' bodies,
 *     each at its body_off (range_filter.h: pieces of the low bits of RANGE_FILTER_PIECE
 *     codes, each with its CRC); chunk offsets are as in version 5.
 * A block is a data block holding at least one value entry (those holding only deletions
 * are left out, as in the block filter); block i is refs[i].
 *
 * No false negative: every value entry's (fingerprint, block) is in the map, so a probe
 * names every block that holds a value of its hash (and, rarely, another block whose value
 * shares the 32-bit fingerprint: about entries / 2^32 per probe). A chunk that does not
 * check out (CRC, order, fence, block number) is an error, never an answer.
 *
 * A range filter has none either: a range of an attribute's codes holding a code of the table is
 * always "maybe"; an empty one of at most 2^VALUE_BLOCK_MAP_RANGE_LOG2 codes is "maybe" with
 * probability at most 2^(LOG2 + 2 - BITS), 0.39%, wherever it lies. Memory holds the
 * filter's high bits (about 3 bits per code with their select samples); a range that they
 * do not rule out reads one piece of its body (rarely two), of about 580 bytes.
 *
 * Thread-safety: a map is immutable after creation; probes and ranges may run concurrently.
 */
#ifndef BFH_LSM_HOOKS_INDEX_VALUE_BLOCK_MAP_H
#define BFH_LSM_HOOKS_INDEX_VALUE_BLOCK_MAP_H

#include <stddef.h>
#include <stdint.h>

#include "util/block_ref.h"
#include "util/env.h"
#include "util/err.h"

#define VALUE_BLOCK_MAP_HEAD_NAME "bfh.value_blocks"
#define VALUE_BLOCK_MAP_CHUNKS_NAME "bfh.value_chunks"
#define VALUE_BLOCK_MAP_CHUNK_ENTRIES 340   /* 2,720 bytes of entries + 4 of CRC */
#define VALUE_BLOCK_MAP_MAX_BLOCKS 65536    /* a block number is 16 bits */
#define VALUE_BLOCK_MAP_ENTRY_BYTES 8       /* versions 4 to 6 (2 and 3: 6) */
#define VALUE_BLOCK_MAP_HEAD_FIXED 56       /* bytes before the refs (4: 52, 3: 36, 2: 32) */
#define VALUE_BLOCK_MAP_HEAD_FIXED_V4 52    /* version 4's */
#define VALUE_BLOCK_MAP_MAX_ZONES 64        /* attributes with a zone, per map */
#define VALUE_BLOCK_MAP_ZONE_BYTES 24       /* a zone in the head: attr_id, lo, hi */
#define VALUE_BLOCK_MAP_RANGE_REF_BYTES 20  /* a range's head_len, body_off, body_len */
#define VALUE_BLOCK_MAP_RANGE_BITS 20u      /* a range filter's bits per code */
#define VALUE_BLOCK_MAP_RANGE_LOG2 10u      /* its ranges: of up to 1,024 codes */
#define VALUE_BLOCK_MAP_NO_BOUND UINT64_MAX /* a probe's bound from a map of version 2 or 3 */
#define VALUE_BLOCK_MAP_SKETCH_BITS 1024    /* per chunk, as written: 3 bits per entry */
#define VALUE_BLOCK_MAP_SKETCH_BITS_V2 512  /* version 2's: 1.5 bits per entry */
#define VALUE_BLOCK_MAP_MAX_SKETCH_BITS 65536
#define VALUE_BLOCK_MAP_MAX_SKETCH_TOTAL (1ull << 31) /* S x nchunks */

typedef struct value_block_map value_block_map_t;
typedef struct value_block_map_builder value_block_map_builder_t;

/* The fingerprint of a value hash (filters/hash.h): 32 bits of a remix of it, so that it is
   independent of the leaf's and the block filter's positions. */
uint32_t value_block_map_fingerprint(uint64_t value_hash);

/* ---- Building (the own engine's table-build hook) ------------------------------------- */
/* NULL on no memory. Client calls value_block_map_builder_destroy(). */
value_block_map_builder_t *value_block_map_builder_create(void);
void value_block_map_builder_destroy(value_block_map_builder_t *b); /* NULL allowed */
/* Makes b as it was before its first value (its format and its zones kept, each empty; a
   zone no longer declared stays, empty: reset only between tables of one set of
   attributes), keeping its memory for the next table's pairs. */
void value_block_map_builder_reset(value_block_map_builder_t *b);
/* The map's format: version 6 (the default), 5, 4 or 3 with sketches of sketch_bits (a
   multiple of 8, 8..65536) per chunk, or version 2 with 512 (as earlier builds wrote, for
   tests and comparisons; version 5 holds no range filters, versions 2 to 4 no zones either:
   those recorded are left out). BFH_OK, or BFH_E_INVALID for any other pair (nothing
   changed). Before any add. */
int value_block_map_builder_set_format(value_block_map_builder_t *b, uint32_t version,
                                       uint32_t sketch_bits);
/* Adds a value (by hash) of the entry of sequence number seq to the block being built.
   BFH_OK or BFH_E_NOMEM. */
int value_block_map_builder_add(value_block_map_builder_t *b, uint64_t value_hash, uint64_t seq);
/* Closes the block being built, which lies at (offset, size); a block with no value added is
   left out. BFH_OK or BFH_E_NOMEM. A table whose blocks cannot be named (more than
   VALUE_BLOCK_MAP_MAX_BLOCKS, or one ending past 4 GiB) gets no map: finish says so. */
int value_block_map_builder_end_block(value_block_map_builder_t *b, uint64_t offset, uint64_t size);
/* Records code as a term code of the attribute whose id is attr_id (a stable 64-bit id, the
   caller's): the map's zone for attr_id becomes the least and largest code recorded for it,
   and its range filter holds it (the builder keeps every code recorded until it is destroyed:
   8 bytes each). BFH_OK, BFH_E_NOMEM, or BFH_E_INVALID when attr_id would be the
   (VALUE_BLOCK_MAP_MAX_ZONES+1)-th distinct id (nothing changed). At any time before finish,
   in any block or none; a map of no blocks (no value added) holds its zones too. */
int value_block_map_builder_zone(value_block_map_builder_t *b, uint64_t attr_id, uint64_t code);
/* Declares attr_id's zone without a code: a map whose table holds no code of it records an
   empty zone, so a search can tell "none here" from "not recorded". Same returns. Idempotent. */
int value_block_map_builder_declare_zone(value_block_map_builder_t *b, uint64_t attr_id);
/* The serialized head and chunks (each new, malloc'd, owned by the caller, with their
   sizes; the chunks end with the range filters' bodies). BFH_OK; BFH_NOT_FOUND: this table
   cannot have a map (see end_block), nothing allocated; BFH_E_NOMEM; BFH_E_INVALID: values added
   after the last end_block. The builder may then only be destroyed. */
int value_block_map_builder_finish(value_block_map_builder_t *b, uint8_t **head, size_t *head_len,
                                   uint8_t **chunks, size_t *chunks_len);

/* ---- The map in memory ---------------------------------------------------------------- */
/* Parses a serialized head. On BFH_OK *out is new, owned by the caller. Anything malformed
   (short or long, bad magic or version, sizes that do not agree, refs out of order or past
   4 GiB, fences out of order, more than VALUE_BLOCK_MAP_MAX_ZONES zones, zone ids not
   ascending, a zone with lo above hi other than the empty one, a range filter's head that
   does not decode or whose body is not where and as long as it says, checksum mismatch)
   gives BFH_E_CORRUPT and a message; it never reads past data[len). */
int value_block_map_open(const uint8_t *data, size_t len, value_block_map_t **out, err_t *err);
void value_block_map_destroy(value_block_map_t *m); /* NULL allowed */

uint32_t value_block_map_blocks(const value_block_map_t *m);
block_ref_t value_block_map_ref(const value_block_map_t *m, uint32_t i);
uint64_t value_block_map_entries(const value_block_map_t *m);
uint32_t value_block_map_sketch_bits(const value_block_map_t *m); /* per chunk */
/* Bytes the map holds in memory (the struct, its refs, fences, sketches, zones and the
   range filters' heads). */
size_t value_block_map_memory(const value_block_map_t *m);

/* The map's zone of attr_id: 1 with every recorded code of it in [*lo, *hi] (an empty zone:
   *lo = UINT64_MAX, *hi = 0, so lo > hi); 0 when the map records nothing for attr_id (a map
   of version 2 to 4, or an id not declared when it was built): nothing is known (*lo = 0,
   *hi = UINT64_MAX). */
int value_block_map_zone(const value_block_map_t *m, uint64_t attr_id, uint64_t *lo, uint64_t *hi);
/* 1 when the zone of attr_id is recorded and meets no code of [lo, hi] (lo <= hi): the table
   holds no term of that attribute whose code lies in [lo, hi]; else 0. */
int value_block_map_zone_rules_out(const value_block_map_t *m, uint64_t attr_id, uint64_t lo,
                                   uint64_t hi);

/* Reads len bytes at offset off of the table's "bfh.value_chunks" meta block into buf:
   BFH_OK, or an error with a message (BFH_E_CORRUPT if the block is missing or shorter). */
typedef int (*value_block_map_read_fn)(void *arg, uint64_t off, size_t len, void *buf, err_t *err);

/* Gives the map its own chunk reader: its probes then read through (read, arg), whatever
   reader they are given, and release(arg) is called when the map is destroyed; bytes is what
   arg holds in memory (counted by value_block_map_memory). The LevelDB engines' maps read
   their chunks from the sidecar cache file their head was loaded from, kept open
   (index/leaf_cache.h), so that a probe can never read another map's chunks. */
void value_block_map_set_reader(value_block_map_t *m, value_block_map_read_fn read, void *arg,
                                void (*release)(void *arg), size_t bytes);
int value_block_map_has_reader(const value_block_map_t *m);
/* A read through the map's own reader. REQUIRES value_block_map_has_reader(m). */
int value_block_map_read_own(const value_block_map_t *m, uint64_t off, size_t len, void *buf,
                             err_t *err);
/* Where a map's own reader (given its arg) reads bytes [off, off + len) of the chunks from:
   1 with *io, *f (held open by the reader while the map lives: borrowed) and *at (the offset in
   f) set; 0 when it cannot say (it opens its file at each read, or the span lies outside the
   chunks). Set after value_block_map_set_reader, for a search that reads the spans of many
   maps ahead, together (env_read_batch: block_index_read_ahead_own). */
typedef int (*value_block_map_place_fn)(void *arg, uint64_t off, size_t len, env_t **io,
                                        env_rfile_t **f, uint64_t *at);
void value_block_map_set_place(value_block_map_t *m, value_block_map_place_fn place);
/* The place of bytes [off, off + len) of m's chunks, by its own reader's place function: 1 with
 *io, *f and *at set, or 0 (no own reader, no place function, or one that cannot say). */
int value_block_map_own_place(const value_block_map_t *m, uint64_t off, size_t len, env_t **io,
                              env_rfile_t **f, uint64_t *at);

/* 1 if the map keeps a range filter for attr_id (a map of version 6 whose table recorded a
   code of it); else 0. */
int value_block_map_has_range(const value_block_map_t *m, uint64_t attr_id);
/* Asks the range filter of attr_id whether a code the table recorded lies in [lo, hi]
   (lo <= hi): 0 no; 1 maybe (also when the map keeps no filter for attr_id, or lo > hi); or an
   error: the reader's, or BFH_E_CORRUPT when a piece of the filter's body does not check out
   (the message names the zone's attr_id, the piece and its offset in the chunks block).
   Reads the pieces through the map's own reader if it has one, else through read (read NULL
   and no own reader: answers from the head alone, 1 where it would need a piece).
   *pieces_read and *bytes_read (each may be NULL) are incremented per piece read and by its
   bytes. */
int value_block_map_range(const value_block_map_t *m, uint64_t attr_id, uint64_t lo, uint64_t hi,
                          value_block_map_read_fn read, void *arg, uint64_t *pieces_read,
                          uint64_t *bytes_read, err_t *err);

/* The blocks that may hold a value of this hash: writes their numbers, ascending and
   distinct, to out (room for value_block_map_blocks(m)) and sets *n; bounds (may be NULL;
   room for as many) gets, for each, a bound on the sequence numbers of its entries of this
   hash (VALUE_BLOCK_MAP_NO_BOUND from a map of version 2 or 3). Reads the one chunk
   (rarely two) its fingerprint falls in, through the map's own reader if it has one, else
   through read (none if it lies outside the map's fingerprints, or the sketch says the map
   holds none); *chunks_read and *bytes_read (each may be NULL) are incremented per chunk read
   and by its bytes. BFH_OK; the reader's error; BFH_E_CORRUPT if a chunk does not check out
   (message names the chunk). */
int value_block_map_probe(const value_block_map_t *m, uint64_t value_hash,
                          value_block_map_read_fn read, void *arg, uint32_t *out, uint64_t *bounds,
                          uint32_t *n, uint64_t *chunks_read, uint64_t *bytes_read, err_t *err);
/* value_block_map_probe reading the chunks through read (with arg) even where the map has its
   own reader: a caller that read some of them ahead from the own reader's place
   (value_block_map_own_place) reads the rest through value_block_map_read_own. */
int value_block_map_probe_through(const value_block_map_t *m, uint64_t value_hash,
                                  value_block_map_read_fn read, void *arg, uint32_t *out,
                                  uint64_t *bounds, uint32_t *n, uint64_t *chunks_read,
                                  uint64_t *bytes_read, err_t *err);

/* Starts loading the memory value_block_map_probe will test first for this hash (the
   sketch byte of a map of version 3 to 6): called for several tables before probing them, their
   cache misses overlap. Reads nothing else; a no-op for a version 2 map. */
void value_block_map_prefetch(const value_block_map_t *m, uint64_t value_hash);

/* 1 if the map says, from memory alone, that no entry has this hash's fingerprint (outside
   the map's range, or its sketch bit clear: version 3 to 6; a version 2 map's sketches are per
   chunk: only its range), so that value_block_map_probe would name no block and read no
   chunk; else 0. */
int value_block_map_rules_out(const value_block_map_t *m, uint64_t value_hash);
/* The bytes every value_block_map_probe of this hash reads, from memory alone: the first
   chunk it reads; 0 when it may read none (ruled out, or a version 2 map, whose per-chunk
   sketches may skip them all). */
size_t value_block_map_sure_read(const value_block_map_t *m, uint64_t value_hash);
/* The chunk of value_block_map_sure_read, as a span of the chunks' meta block (the off and
   len a probe passes its read function): 1 with *off and *len set, or 0 when a probe may
   read none. */
int value_block_map_sure_span(const value_block_map_t *m, uint64_t value_hash, uint64_t *off,
                              size_t *len);

/* Checks chunk c's bytes (as read: its entries and CRC) against m; BFH_OK or BFH_E_CORRUPT.
   (value_block_map_probe does this for every chunk it reads; exposed for the fuzz target.) */
int value_block_map_check_chunk(const value_block_map_t *m, uint32_t c, const uint8_t *data,
                                size_t len, err_t *err);
/* The offset and length of chunk c in the chunks block. REQUIRES c < the map's chunks. */
void value_block_map_chunk_span(const value_block_map_t *m, uint32_t c, uint64_t *off, size_t *len);
uint32_t value_block_map_chunks(const value_block_map_t *m);
/* Reads every chunk and every range filter's body (through the map's own reader if it has
   one, else through read, which is then required) and checks them as a probe and a range
   would (bfh check): BFH_OK, the reader's error, or BFH_E_CORRUPT naming the first that does
   not check out and where it lies ("chunk at N: ...", "range filter of zone ID, piece at N:
   ...", N = base + its offset in the chunks block; base: where that block begins in its
   file). */
int value_block_map_verify(const value_block_map_t *m, value_block_map_read_fn read, void *arg,
                           uint64_t base, err_t *err);

#endif

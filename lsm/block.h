/* Reading blocks: block handles, the 5-byte block trailer [type u8][masked crc32c fixed32]
 * and a seekable cursor over a block's entries (doc/format.md "Block").
 *
 * The block format (entries with shared key prefixes, restart array, trailer, handles) is
 * LevelDB's, byte for byte: the readers of LevelDB's tables (lsm_hooks/leveldb_format/
 * ldb_table.c) walk their (decompressed) blocks with this cursor too.
 *
 * block_t and block_cursor_t are caller-owned structs that borrow the block's bytes (in
 * the buffer the table reader read them into); block_cursor_t allocates only for keys longer than
 * its inline buffer. block_iterator_create() wraps a cursor as an iterator_t.
 */
#ifndef BFH_LSM_BLOCK_H
#define BFH_LSM_BLOCK_H

#include <stddef.h>
#include <stdint.h>

#include "lsm/internal_key.h"
#include "lsm/iterator.h"
#include "util/block_ref.h"
#include "util/err.h"

#define BLOCK_TRAILER_BYTES 5
#define BLOCK_TYPE_RAW 0 /* the only type: no compression */
#define BLOCK_HANDLE_MAX_BYTES 20

/* Where a block's contents lie in a file (the trailer follows them). */
typedef struct block_handle {
  uint64_t offset;
  uint64_t size; /* contents, without the trailer */
} block_handle_t;

/* varint64 offset | varint64 size; returns the byte after (dst needs 20 bytes). */
uint8_t *block_handle_encode(uint8_t *dst, const block_handle_t *h);
/* Returns the byte after, or NULL if malformed. */
const uint8_t *block_handle_decode(const uint8_t *p, const uint8_t *limit, block_handle_t *h);

/* The trailer of contents[0,n): type BLOCK_TYPE_RAW, crc32c(contents | type) masked. */
void block_trailer_encode(uint8_t trailer[BLOCK_TRAILER_BYTES], const uint8_t *contents, size_t n);
/* 0 if trailer (the 5 bytes after contents) matches contents[0,n) and has type RAW, else -1. */
int block_trailer_check(const uint8_t *contents, size_t n);
/* 0 if the masked CRC in the trailer after contents[0,n) matches contents and the trailer's
   type byte, whatever the type (LevelDB's tables also have type 1, snappy), else -1. */
int block_trailer_crc_check(const uint8_t *contents, size_t n);

/* A parsed block. */
typedef struct block {
  const uint8_t *data; /* contents (borrowed) */
  size_t size;
  uint32_t restarts_offset; /* where the restart array begins = end of the entries */
  uint32_t nrestarts;
} block_t;

/* Checks the restart array; returns 0, or -1 if the contents are malformed. */
int block_parse(block_t *b, const uint8_t *data, size_t size);

#define BLOCK_CURSOR_INLINE_KEY 128

typedef struct block_cursor {
  const block_t *block;
  key_compare_fn cmp;
  uint32_t offset;      /* of the current entry; == restarts_offset when not valid */
  uint32_t next_offset; /* of the entry after it */
  uint32_t restart;     /* restart index of the current entry's run */
  const uint8_t *val;
  uint32_t val_len;
  uint8_t *key; /* key_inline or heap */
  size_t key_len, key_cap;
  int corrupt; /* an entry was malformed: the cursor is invalid */
  uint8_t key_inline[BLOCK_CURSOR_INLINE_KEY];
} block_cursor_t;

/* Borrows b (which must outlive the cursor). Not positioned until a seek. */
void block_cursor_init(block_cursor_t *c, const block_t *b, key_compare_fn cmp);
void block_cursor_release(block_cursor_t *c);
void block_cursor_seek_first(block_cursor_t *c);
/* First entry with key >= target (binary search over restarts, then a linear scan). */
void block_cursor_seek(block_cursor_t *c, const void *target, size_t n);
void block_cursor_next(block_cursor_t *c);
static inline int block_cursor_valid(const block_cursor_t *c) {
  return !c->corrupt && c->offset < c->block->restarts_offset;
}
/* 1 if stopped by a malformed entry (caller reports ST_E_CORRUPT with file/offset). */
static inline int block_cursor_corrupt(const block_cursor_t *c) {
  return c->corrupt;
}

/* Visitor of block_scan_value: key is the entry's whole (internal) key, prev the whole key of
   the entry just before it in the block (NULL, prev_len 0, for the block's first entry), both
   borrowed until it returns. Nonzero stops the scan. */
typedef int (*block_visit_fn)(void *arg, const uint8_t *key, size_t key_len, const uint8_t *val,
                              uint32_t val_len, const uint8_t *prev, size_t prev_len);

/* Calls fn for every entry whose value is exactly val (n bytes), in block order. A value of
   at least BLOCK_SCAN_SKIP_MIN bytes is first looked for as bytes (32 places at a time with
   AVX2, else by memchr of its first byte): entries are decoded only from the last restart
   point at or below each place it occurs, through the entry that holds it, since every
   match's value bytes occur at or after the next entry to decode (a match on that restart
   point decodes the run before it too, for its predecessor). A shorter value decodes every
   entry. Decoded entries are read only as far as their value (their keys are not rebuilt), so
   a scan by value costs little more than reading the block. Returns 0 at the end of the
   block, 1 if fn stopped it, -1 on a malformed entry among those decoded (entries before it
   were visited; one that is not decoded is not seen: the block's checksum is what vouches
   for it). *entries += the entries decoded looking for matches (not those read again to
   rebuild a match's keys). The restart array is trusted, as by block_cursor_seek. */
#define BLOCK_SCAN_SKIP_MIN 2

/* block_scan_value with every entry decoded, whatever n: the scan of a table read whole
   (lsm/table.c: SCAN and the paper's methods), and what the skipping scan must agree with
   (tests/lsm/block_test.c, bench/block_scan_bench.c). */
int block_scan_value_all(const block_t *b, const void *val, size_t n, block_visit_fn fn,
                         void *arg, uint64_t *entries);
int block_scan_value(const block_t *b, const void *val, size_t n, block_visit_fn fn, void *arg,
                     uint64_t *entries);
/* Calls fn for every entry whose value holds one of the needles nd[0, nn) (each at least a
   byte long) as bytes, in block order: a superset filter for a predicate every passing value
   of which holds one (engine_value_test_t). As block_scan_value looks for a value, the places
   where a needle begins are found first, and only the entry holding each is decoded through
   and tested; the others are skipped. With nn 0 or above BLOCK_NEEDLES_MAX, every entry is
   visited. Returns and *entries as block_scan_value. */
int block_scan_containing(const block_t *b, const block_needle_t *nd, size_t nn, block_visit_fn fn,
                          void *arg, uint64_t *entries);
/* The type of block_scan_value and block_scan_value_all, for callers that choose one. */
typedef int (*block_scan_fn)(const block_t *b, const void *val, size_t n, block_visit_fn fn,
                             void *arg, uint64_t *entries);

/* An iterator over one block (contents borrowed; must outlive it). status() reports a
   malformed entry as ST_E_CORRUPT with "block: malformed entry". NULL on no
   memory. Client calls iterator_destroy(). */
iterator_t *block_iterator_create(const uint8_t *data, size_t size, key_compare_fn cmp);

#endif

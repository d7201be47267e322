/* ldb_log: a reader of LevelDB 1.23 write-ahead log files (NNNNNN.log), in C.
 *
 * Layout (LevelDB's doc/log_format.md; bfh's doc/leveldb.md): the file is a sequence of
 * 32,768-byte blocks. A block holds physical records:
 *   crc fixed32 (masked crc32c of type + payload) | length fixed16 | type u8 | payload
 * type 1 FULL, 2 FIRST, 3 MIDDLE, 4 LAST (a logical record split across blocks), 0 zero
 * (preallocation; skipped). Fewer than 7 bytes left in a block are a zero trailer.
 * A logical record is a WriteBatch:
 *   sequence fixed64 | count fixed32 | count x (0x01 varstring key, varstring value
 *                                                 | 0x00 varstring key)
 * where varstring = varint32 length + bytes; entry i carries sequence + i (the own engine's
 * write batch, lsm/write_batch.h, byte for byte: it is decoded by write_batch_iterate).
 *
 * The framing is the own engine's log format byte for byte (lsm/log.h, LOG_BLOCK_BYTES,
 * LOG_HEADER_BYTES): the records are read by lsm/log_reader.c in its LOG_READER_LIVE mode.
 * A record cut short by the end of the file is a write in flight ("not yet written"): the
 * read stops cleanly there and says where to resume. Anything else malformed (checksum,
 * length past the block, fragments out of order, a batch that does not parse) is
 * BFH_E_CORRUPT with the file and offset.
 */
#ifndef BFH_LSM_HOOKS_LEVELDB_LOG_H
#define BFH_LSM_HOOKS_LEVELDB_LOG_H

#include <stddef.h>
#include <stdint.h>

#include "lsm_hooks/leveldb_format/ldb_entry.h"
#include "util/env.h"
#include "util/err.h"

/* Reads the log file at path (through io, borrowed: util/env.h) from byte `offset` (0, or a value
   returned in *next_offset by an earlier read of the same file) to its end, and calls fn for every
   entry of every complete WriteBatch, in file order. *next_offset (may be NULL) receives the offset
   where the next read should resume: the end of the last complete record (a truncated tail is left
   for later). Adds to st (may be NULL). Returns BFH_OK (also when fn stopped the read; *next_offset
   is then the end of the batch being visited); BFH_NOT_FOUND if the file does not exist; BFH_E_IO,
   BFH_E_NOMEM; BFH_E_CORRUPT with "log PATH: record at OFF: ...". Thread-safe (no shared state). */
int ldb_log_read(env_t *io, const char *path, uint64_t offset, ldb_visit_fn fn, void *arg,
                 uint64_t *next_offset, ldb_read_stats_t *st, err_t *err);

/* ldb_log_read with flags: LDB_LOG_CHECK_TAIL checks a record cut short by the end of the
   file: when its header's checksum matches a shorter record (its length field, not the
   write, is what runs past the end) it is BFH_E_CORRUPT, not a write in flight. For files no
   writer is appending to (a database being opened). */
#define LDB_LOG_CHECK_TAIL 1
int ldb_log_read_flags(env_t *io, const char *path, uint64_t offset, int flags, ldb_visit_fn fn,
                       void *arg, uint64_t *next_offset, ldb_read_stats_t *st, err_t *err);

/* A physical record cut short by the end of the file at h (avail bytes from its header on): 1
   if its header's checksum matches the type byte and some prefix of the bytes after it (a
   damaged length, not a write in flight; RocksDB's recyclable header included), 0 if not. */
int ldb_log_tail_length_damaged(const uint8_t *h, size_t avail);

/* A complete logical record of a log-format file (payload p, n bytes, starting at file offset
   at). Returns BFH_OK to go on (set *stopped to stop the read) or an error status (with err
   set), which ends the read with it. */
typedef int (*ldb_record_fn)(void *arg, const uint8_t *p, size_t n, uint64_t at, int *stopped,
                             err_t *err);

/* The record layer of ldb_log_read, for any file in LevelDB's log format (write-ahead logs,
   MANIFEST): calls fn for every complete logical record from offset on, with the same rules,
   flags and results as ldb_log_read_flags. kind names the file in messages ("log",
   "manifest"). */
int ldb_log_records(env_t *io, const char *path, const char *kind, uint64_t offset, int flags,
                    ldb_record_fn fn, void *arg, uint64_t *next_offset, ldb_read_stats_t *st,
                    err_t *err);

/* Decodes one WriteBatch (the payload of a logical record) and calls fn for each entry.
   where names it in messages ("log /db/000005.log: record at 1234"). Returns BFH_OK or
   BFH_E_CORRUPT. *stopped is set when fn asked to stop. */
int ldb_log_decode_batch(const uint8_t *p, size_t n, const char *where, ldb_visit_fn fn, void *arg,
                         int *stopped, ldb_read_stats_t *st, err_t *err);

#endif

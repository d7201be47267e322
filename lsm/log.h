/* The write-ahead log (and the manifest's record format): a sequence of records, each
 * protected by CRC32C, in LevelDB's framing: 32 KiB blocks, records split into
 * FULL / FIRST / MIDDLE / LAST fragments with a 7-byte header
 * [masked crc32c fixed32][length fixed16][type u8] (doc/format.md "Log").
 *
 * Writer (log_writer.c): appends records; after log_writer_add returns ST_OK the record is
 * in the kernel (write(2)); with sync it is also fdatasync'd.
 * Reader (log_reader.c): returns the records in order. A damaged or truncated tail at the
 * end of the file (a record cut short, a checksum mismatch in the last record, or zero
 * bytes up to EOF) is "not yet written": reading stops cleanly with ST_NOT_FOUND and
 * log_reader_dropped_bytes() says how many bytes were skipped. A checksum mismatch or a
 * bad header followed by more non-zero data is ST_E_CORRUPT, naming file and offset.
 */
#ifndef BFH_LSM_LOG_H
#define BFH_LSM_LOG_H

#include <stddef.h>
#include <stdint.h>

#include "util/env.h"
#include "util/err.h"

#define LOG_BLOCK_BYTES 32768
#define LOG_HEADER_BYTES 7
enum { LOG_ZERO = 0, LOG_FULL = 1, LOG_FIRST = 2, LOG_MIDDLE = 3, LOG_LAST = 4 };
/* RocksDB's recyclable records (read with LOG_READER_RECYCLABLE only). */
#define LOG_RECYCLABLE_HEADER_BYTES 11
enum { LOG_RECYCLABLE_FULL = 5, LOG_RECYCLABLE_LAST = 8 };

/* ---- Writer ---------------------------------------------------------------------------- */

typedef struct log_writer log_writer_t;

/* Creates (truncates) path and returns a writer for it. The client calls
   log_writer_close(). */
int log_writer_open(env_t *io, const char *path, log_writer_t **w, err_t *err);
/* Returns a writer that appends to the existing log at path, whose records end exactly at
   its current size (a reader read it whole, with nothing dropped): the next record goes
   where a writer that never closed the file would have put it. The client calls
   log_writer_close(). */
int log_writer_open_append(env_t *io, const char *path, log_writer_t **w, err_t *err);
/* Appends one record of n bytes (n may be 0) and hands it to the kernel; sync != 0 also
   fdatasyncs. After a failure the writer is dead: every later add/sync returns the same
   error (the log may hold a partial record, which the reader treats as a torn tail). */
int log_writer_add(log_writer_t *w, const void *data, size_t n, int sync, err_t *err);
/* fdatasync of everything added so far. */
int log_writer_sync(log_writer_t *w, err_t *err);
/* Closes the file (no sync) and frees w. NULL allowed. */
int log_writer_close(log_writer_t *w, err_t *err);
/* Bytes in the file so far. */
uint64_t log_writer_size(const log_writer_t *w);

/* ---- Reader ---------------------------------------------------------------------------- */

typedef struct log_reader log_reader_t;

/* Opens path for reading (it reads the whole file into memory). The client calls
   log_reader_close(). */
int log_reader_open(env_t *io, const char *path, log_reader_t **r, err_t *err);

/* For logs another program may still be appending to (LevelDB's, read by
   lsm_hooks/leveldb_format/ldb_log.c): only a record (or block trailer) that the end of the
   file cuts short is a tail not yet written; damage followed by zeros is corruption, and a
   zero header (type 0, length 0: preallocated space) is skipped. */
#define LOG_READER_LIVE 1
/* For RocksDB's logs (lsm_hooks/rocksdb_format/rdb_log.c): also the recyclable records, types
   5-8 (FULL/FIRST/MIDDLE/LAST) with an 11-byte header [crc][length][type][log number fixed32],
   the checksum covering type, log number and payload. A recyclable record whose log number is
   not the reader's (log_reader_set_log_number; 0 by default) ends the log: it is left over from
   the log the file was recycled from (ST_NOT_FOUND, its bytes counted as dropped, and
   log_reader_old_record says so). */
#define LOG_READER_RECYCLABLE 2
void log_reader_set_log_number(log_reader_t *r, uint32_t number);
/* Once log_reader_next returned ST_NOT_FOUND: 1 if it stopped at a recyclable record of another
   log number, 0 if not. */
int log_reader_old_record(const log_reader_t *r);
/* 1 if the first record of the file (at offset 0, when read) is recyclable: the file was written
   by a RocksDB writer that recycles logs. */
int log_reader_recycled(const log_reader_t *r);
/* log_reader_open from byte `offset` on (a record boundary: 0, or an end offset an earlier
   reader returned; only the bytes from there are read). kind names the file in messages
   ("log", "manifest"; borrowed, must outlive the reader); flags: 0 or LOG_READER_* or-ed.
   log_reader_open is log_reader_open_at(io, path, "log", 0, 0, ...). */
int log_reader_open_at(env_t *io, const char *path, const char *kind, uint64_t offset, int flags,
                       log_reader_t **r, err_t *err);
/* Next record: ST_OK with *data, *n (borrowed, valid until the next call or close);
   ST_NOT_FOUND at the end (clean, or after dropping a torn tail); ST_E_CORRUPT with
   "<kind> <path>: record at <offset>: checksum mismatch" (or the header problem). After an
   error, later calls return the same error. */
int log_reader_next(log_reader_t *r, const void **data, size_t *n, err_t *err);
/* File offset of the first fragment of the record last returned. */
uint64_t log_reader_record_offset(const log_reader_t *r);
/* Bytes skipped as a torn tail at the end of the file (0 when the file ended cleanly);
   meaningful once log_reader_next returned ST_NOT_FOUND. */
uint64_t log_reader_dropped_bytes(const log_reader_t *r);
/* Offset where valid data ends (= file size - dropped bytes, once at the end); before the end,
   where the record last returned ends. */
uint64_t log_reader_end_offset(const log_reader_t *r);
/* Bytes read from the file (from the open offset to its end). */
uint64_t log_reader_bytes_read(const log_reader_t *r);
/* Once log_reader_next returned ST_NOT_FOUND: 1 if the end of the file cut a physical record
   short, with its offset in *at and its bytes from its header to the end of the file in *p, *n
   (borrowed, valid until close); 0 if not. */
int log_reader_cut_record(const log_reader_t *r, uint64_t *at, const uint8_t **p, size_t *n);
/* Repair and check: after log_reader_next returned ST_E_CORRUPT, moves past the damage to
   the next record that can be read, and returns the bytes skipped (0 if the reader was not
   stopped by corruption). Where reading goes on:
     - after a record whose checksum or type is bad: where its length says it ends, if a
       record whose checksum checks out starts there (a payload byte flipped loses only its
       own record); otherwise, and after a bad length, at the next 32 KiB block, which always
       starts a record (LevelDB's reader drops the rest of the block);
     - after a fragment without a FIRST: right after it; after a fragmented record cut short
       by a FULL or FIRST record: at that record.
   MIDDLE and LAST fragments right there belong to a record whose start was lost: they are
   skipped too (and counted). Reading then goes on with the next record; if that is damaged
   as well, log_reader_next reports it as damage of its own. */
uint64_t log_reader_skip_damage(log_reader_t *r);
void log_reader_close(log_reader_t *r); /* NULL allowed */

#endif

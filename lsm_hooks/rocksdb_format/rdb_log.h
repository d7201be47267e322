/* rdb_log: a reader of RocksDB 7.8 write-ahead log files (NNNNNN.log), in C.
 *
 * Physical layout (RocksDB's db/log_format.h; bfh's doc/rocksdb.md "The write-ahead log"): the
 * file is a sequence of 32,768-byte blocks holding physical records
 *   legacy:     crc fixed32 | length fixed16 | type u8 | payload                (7-byte header)
 *   recyclable: crc fixed32 | length fixed16 | type u8 | log number fixed32 | payload (11 bytes)
 * crc = masked crc32c of everything after the length (type, log number, payload). Types 1-4 are
 * FULL/FIRST/MIDDLE/LAST, 5-8 their recyclable variants, 0 zero padding, 9 the WAL compression
 * marker (refused: BFH_E_UNSUPPORTED). A block's last bytes, too few for a header, are zeros.
 * This is LevelDB's framing (lsm/log.h) plus the recyclable header: the records are read by
 * lsm/log_reader.c with its LOG_READER_RECYCLABLE flag.
 *
 * End of the live log: the end of the file; a record cut short by it (a write in flight); a
 * recyclable record whose log number is not the file's (left over from the log this file was
 * recycled from). In a recycled log (its first record recyclable), a damaged record that no
 * record of this log number follows is where the live log ends too (the new log overwrote an
 * old one only up to there). Any other damage is BFH_E_CORRUPT "log PATH: record at OFF: ...".
 *
 * A logical record is a WriteBatch (db/write_batch.cc):
 *   sequence fixed64 | count fixed32 | records
 * a record is a tag byte (RDB_WB_*) then, by tag:
 *   VALUE, MERGE, BLOB_INDEX, WIDE_COLUMN_ENTITY    varstring key | varstring value
 *   DELETION, SINGLE_DELETION                       varstring key
 *   RANGE_DELETION                                  varstring begin key | varstring end key
 *   CF_* variants of the above                      varint32 column family | same fields
 *   LOG_DATA                                        varstring blob (not a key; no sequence)
 *   NOOP, BEGIN_PREPARE, BEGIN_PERSISTED_PREPARE, BEGIN_UNPREPARE     nothing
 *   END_PREPARE, COMMIT, ROLLBACK                   varstring xid
 *   COMMIT_WITH_TS                                  varstring commit timestamp | varstring xid
 * where varstring = varint32 length + bytes. count is the number of key records (values,
 * deletions, range deletions, merges, blob indexes, entities); the i-th of them carries sequence
 * + i (RocksDB's default write policy, one sequence per key). Markers carry no sequence of their
 * own (the sequence the next key record would get).
 */
#ifndef BFH_LSM_HOOKS_ROCKSDB_LOG_H
#define BFH_LSM_HOOKS_ROCKSDB_LOG_H

#include <stddef.h>
#include <stdint.h>

#include "util/env.h"
#include "util/err.h"

/* WriteBatch record tags: RocksDB 7.8's ValueType (db/dbformat.h), as they occur in a batch. */
enum {
  RDB_WB_DELETION = 0x0,
  RDB_WB_VALUE = 0x1,
  RDB_WB_MERGE = 0x2,
  RDB_WB_LOG_DATA = 0x3,
  RDB_WB_CF_DELETION = 0x4,
  RDB_WB_CF_VALUE = 0x5,
  RDB_WB_CF_MERGE = 0x6,
  RDB_WB_SINGLE_DELETION = 0x7,
  RDB_WB_CF_SINGLE_DELETION = 0x8,
  RDB_WB_BEGIN_PREPARE = 0x9,
  RDB_WB_END_PREPARE = 0xA,
  RDB_WB_COMMIT = 0xB,
  RDB_WB_ROLLBACK = 0xC,
  RDB_WB_NOOP = 0xD,
  RDB_WB_CF_RANGE_DELETION = 0xE,
  RDB_WB_RANGE_DELETION = 0xF,
  RDB_WB_CF_BLOB_INDEX = 0x10,
  RDB_WB_BLOB_INDEX = 0x11,
  RDB_WB_BEGIN_PERSISTED_PREPARE = 0x12,
  RDB_WB_BEGIN_UNPREPARE = 0x13,
  /* 0x14 kTypeDeletionWithTimestamp occurs in tables only: in a batch it is corruption */
  RDB_WB_COMMIT_WITH_TS = 0x15,
  RDB_WB_WIDE_COLUMN_ENTITY = 0x16,
  RDB_WB_CF_WIDE_COLUMN_ENTITY = 0x17
};

/* One record of a write batch, as rdb_log hands it to its visitor. Pointers are borrowed: valid
   only during the visitor call. */
typedef struct rdb_log_entry {
  uint32_t cf;        /* column family id (0: the default one; the plain tags are always 0) */
  int type;           /* the tag with the column-family variants folded into the plain ones:
                         RDB_WB_CF_VALUE -> RDB_WB_VALUE, ..._CF_WIDE_COLUMN_ENTITY -> ..._ENTITY */
  int tag;            /* the tag byte as written */
  uint64_t seq;       /* see the header comment; meaningful for key records */
  const uint8_t *key; /* user key; begin key of a range deletion; commit timestamp of
                         COMMIT_WITH_TS; empty for the others */
  size_t key_len;
  const uint8_t *val; /* value, merge operand, end key of a range deletion, blob index, entity,
                         log data, xid; empty (never NULL) for deletions and bare markers */
  size_t val_len;
  uint64_t log_number;    /* the log file's number (0 when decoding a batch alone) */
  uint64_t record_offset; /* file offset of the log record holding the batch */
} rdb_log_entry_t;

/* Visitor: return 0 to go on, nonzero to stop the read early (the read then returns BFH_OK).
   The visitor decides what it cannot answer (merges without an operator, blob indexes, 2PC
   markers): every record of the batch is handed to it, none is dropped. */
typedef int (*rdb_log_visit_fn)(void *arg, const rdb_log_entry_t *e);

/* Counters of one or more reads (added to, never reset by the reader). */
typedef struct rdb_log_stats {
  uint64_t records;    /* logical records (write batches) decoded */
  uint64_t entries;    /* batch records handed to the visitor */
  uint64_t bytes_read; /* file bytes read */
  uint64_t old_bytes;  /* bytes after the live end left from a recycled log's previous life */
} rdb_log_stats_t;

/* 1 for the tags that carry a sequence of their own (count them), 0 for markers and log data,
   -1 for a byte that is no tag of a write batch. */
int rdb_log_tag_is_key(int tag);
/* The tag's name in messages ("merge", "blob index", "begin prepare", ...; "unknown"). Static. */
const char *rdb_log_tag_name(int tag);

/* The log number of a file name "NNNNNN.log" (no directory): 1 and *number, or 0 if name is not
   one. */
int rdb_log_number_from_name(const char *name, uint64_t *number);

/* Flags of rdb_log_read. RDB_LOG_CHECK_TAIL: the file is no longer appended to (a database
   being checked): a record cut short by the end of the file whose checksum matches a shorter
   record (its length field damaged) is BFH_E_CORRUPT, not a write in flight. */
#define RDB_LOG_CHECK_TAIL 1

/* Reads the log file at path (through io, borrowed), whose log number is log_number (from its
   name: recyclable records of another number end the live log), from byte `offset` (0, or a
   value an earlier read of the same file returned in *next_offset) to the end of the live log,
   and calls fn for every record of every complete write batch, in file order. *next_offset (may
   be NULL) receives where the next read resumes: the end of the last complete logical record.
   Adds to st (may be NULL). Returns BFH_OK (also when fn stopped the read; *next_offset is then
   the end of the batch being visited); BFH_NOT_FOUND if the file does not exist; BFH_E_IO,
   BFH_E_NOMEM; BFH_E_UNSUPPORTED for a compressed WAL; BFH_E_CORRUPT with
   "log PATH: record at OFF: ..." (the framing, or a batch that does not parse). Thread-safe (no
   shared state). */
int rdb_log_read(env_t *io, const char *path, uint64_t log_number, uint64_t offset, int flags,
                 rdb_log_visit_fn fn, void *arg, uint64_t *next_offset, rdb_log_stats_t *st,
                 err_t *err);

/* A complete logical record (payload p, n bytes, starting at file offset at). Returns BFH_OK to
   go on (set *stopped to stop) or an error status (err set), which ends the read with it. */
typedef int (*rdb_record_fn)(void *arg, const uint8_t *p, size_t n, uint64_t at, int *stopped,
                             err_t *err);

/* The record layer of rdb_log_read, for any file in RocksDB's log format (WAL, MANIFEST): calls
   fn for every complete logical record from offset on, with the same rules, flags and results.
   kind names the file in messages ("log", "manifest"); log_number is 0 for a MANIFEST (as
   RocksDB reads it). */
int rdb_log_records(env_t *io, const char *path, const char *kind, uint64_t log_number,
                    uint64_t offset, int flags, rdb_record_fn fn, void *arg, uint64_t *next_offset,
                    rdb_log_stats_t *st, err_t *err);

/* Decodes one write batch (p, n bytes) and calls fn for each record (e->log_number and
   e->record_offset are taken from log_number and at). where names the batch in messages
   ("log /db/000005.log: record at 1234"). BFH_OK; BFH_E_CORRUPT for a header shorter than 12
   bytes, an unknown tag, a field cut short, bytes left over, or a count that does not match the
   key records found. *stopped is set when fn asked to stop. */
int rdb_log_decode_batch(const uint8_t *p, size_t n, uint64_t log_number, uint64_t at,
                         const char *where, rdb_log_visit_fn fn, void *arg, int *stopped,
                         rdb_log_stats_t *st, err_t *err);

#endif

/* ldb_version: the live file set of a LevelDB 1.23 database, replayed from its MANIFEST, in C
 * (the read-only engine's view of the database, readonly.c).
 *
 * A MANIFEST is a file in the log format (log.h) whose records are VersionEdits
 * (LevelDB's db/version_edit.cc). An edit is a sequence of fields, each a varint32 tag then:
 *   1 comparator        varstring (the comparator's name)
 *   2 log number        varint64  (logs older than it are in tables: no longer needed)
 *   3 next file number  varint64
 *   4 last sequence     varint64
 *   5 compact pointer   varint32 level | varstring internal key
 *   6 deleted file      varint32 level | varint64 number
 *   7 new file          varint32 level | varint64 number | varint64 size
 *                       | varstring smallest internal key | varstring largest internal key
 *   9 prev log number   varint64  (0 since LevelDB 1.x; kept for old databases)
 * where varstring = varint32 length + bytes and an internal key is user key | fixed64
 * (sequence << 8 | type). The first edit of a MANIFEST is a snapshot of the whole version;
 * later ones are deltas. Replaying them in order gives the live version.
 */
#ifndef BFH_LSM_HOOKS_LEVELDB_VERSION_EDIT_H
#define BFH_LSM_HOOKS_LEVELDB_VERSION_EDIT_H

#include <stddef.h>
#include <stdint.h>

#include "util/env.h"
#include "lsm_hooks/leveldb_format/ldb_entry.h"
#include "util/err.h"

/* VersionEdit tags of a MANIFEST record (LevelDB 1.23 db/version_edit.cc). */
enum {
  LDB_TAG_COMPARATOR = 1,
  LDB_TAG_LOG_NUMBER = 2,
  LDB_TAG_NEXT_FILE = 3,
  LDB_TAG_LAST_SEQUENCE = 4,
  LDB_TAG_COMPACT_POINTER = 5,
  LDB_TAG_DELETED_FILE = 6,
  LDB_TAG_NEW_FILE = 7,
  LDB_TAG_PREV_LOG_NUMBER = 9
};

#define LDB_NUM_LEVELS 7 /* config::kNumLevels */

/* ldb_file_t.max_seq when the MANIFEST's edits bound nothing (2^64-1). */
#define LDB_SEQ_UNKNOWN UINT64_MAX

typedef struct ldb_file {
  int level;
  uint64_t number, size;
  uint8_t *smallest, *largest; /* user keys (malloc'd, owned by the version) */
  size_t smallest_len, largest_len;
  /* At least the largest sequence number of the file's entries. LevelDB records none, so it
     is inferred from the edit that added the file: a compaction's outputs (an edit that
     deletes files) hold only entries of its inputs, so the largest of the inputs' bounds; a
     flush or a snapshot of the version (an edit that deletes nothing) holds only writes
     made before it, so the edit's last sequence (LevelDB writes one in every edit);
     LDB_SEQ_UNKNOWN when the edit has neither. */
  uint64_t max_seq;
} ldb_file_t;

/* A version: caller-owned struct, zeroed to start (the empty version), released with
   ldb_version_release. */
typedef struct ldb_version {
  int has_log_number;
  uint64_t log_number, prev_log_number, next_file, last_sequence;
  ldb_file_t *files; /* the live files, in no particular order */
  size_t nfiles, cap;
} ldb_version_t;

void ldb_version_release(ldb_version_t *v);
/* Copies src into *dst (zeroed or released before): BFH_OK or BFH_E_NOMEM. */
int ldb_version_copy(ldb_version_t *dst, const ldb_version_t *src);

/* Applies one VersionEdit (p, n bytes) to v. where names the record in messages ("manifest
   /db/MANIFEST-000005: record at 120"). BFH_OK; BFH_E_CORRUPT for an unknown tag, a field cut
   short, or an internal key shorter than its 8-byte trailer (v is then partly changed: drop
   it); BFH_E_NOMEM. Deleting a file the version does not hold is no error (LevelDB's own
   replay ignores it too). */
int ldb_version_apply(ldb_version_t *v, const uint8_t *p, size_t n, const char *where, err_t *err);

/* Applies the edits of the MANIFEST at path from byte offset on (0, or an earlier read's
   *next_offset while the file only grew) to v; *next_offset is where the next read resumes
   (a record cut short by the end of the file is a write in flight, read next time). Errors as
   ldb_log_records (BFH_NOT_FOUND: the file does not exist) and ldb_version_apply. */
int ldb_version_read(env_t *io, const char *path, uint64_t offset, ldb_version_t *v,
                     uint64_t *next_offset, err_t *err);

/* ldb_version_read of a whole MANIFEST that no writer is appending to (bfh_check): with
   LDB_LOG_CHECK_TAIL (log.h), and the records read added to st (may be NULL). */
int ldb_version_check(env_t *io, const char *path, ldb_version_t *v, ldb_read_stats_t *st,
                      err_t *err);

#endif

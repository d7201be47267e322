/* rdb_manifest: CURRENT and the MANIFEST of a RocksDB 7.8 database, replayed into the live state
 * (column families, their table files, the log numbers), in C.
 *
 * CURRENT holds the name of the MANIFEST ("MANIFEST-000005\n"). A MANIFEST is a file in the log
 * format (rdb_log.h, log number 0) whose records are VersionEdits (db/version_edit.cc). An edit
 * is a sequence of fields, each a varint32 tag then (v32/v64 = varint32/64, vs = varstring, ikey
 * = varstring internal key: user key | fixed64 seq << 8 | type):
 *     1 comparator name vs           2 log number v64            3 next file number v64
 *     4 last sequence v64            5 compact cursor v32 level | ikey
 *     6 deleted file v32 level | v64 number                      9 prev log number v64
 *    10 min log number to keep v64
 *     7 new file    v32 level | v64 number | v64 size | ikey smallest | ikey largest
 *   100 new file 2  as 7 | v64 smallest seqno | v64 largest seqno
 *   102 new file 3  v32 level | v64 number | v32 path id | v64 size | ikeys | v64 seqnos
 *   103 new file 4  as 100, then custom fields (v32 tag | vs bytes) up to tag 1: 2 need
 *                   compaction, 3 min log number to keep (fixed64), 4 oldest blob file (v64),
 *                   5 oldest ancester time, 6 creation time (v64), 7 file checksum, 8 checksum
 *                   function, 9 temperature, 10/11 min/max timestamp, 12 unique id; 65 path id.
 *                   An unknown tag with bit 6 (64) set is refused, others are skipped.
 *   200 column family v32 id (the edit's column family; 0 without it)
 *   201 column family add vs name    202 column family drop      203 max column family v32
 *   300 in atomic group v32 remaining edits (a group is applied whole or not at all)
 *   400 blob file addition  v64 number | v64 count | v64 bytes | vs checksum method | vs value
 *                           | custom fields (v32 tag | vs) up to tag 0
 *   401 blob file garbage   v64 number | v64 count | v64 bytes | custom fields up to 0
 *  8193 db id vs   8194/8195 blob addition/garbage (as 400/401)   8196 WAL addition
 *  8197 WAL deletion   8198 full history ts low vs   8199/8200 WAL addition/deletion (vs)
 *  any other tag with bit 13 (8192) set: v32 length | bytes, skipped; any other tag: refused.
 */
#ifndef BFH_LSM_HOOKS_ROCKSDB_MANIFEST_H
#define BFH_LSM_HOOKS_ROCKSDB_MANIFEST_H

#include <stddef.h>
#include <stdint.h>

#include "util/env.h"
#include "util/err.h"

/* VersionEdit tags (RocksDB 7.8 db/version_edit.h). */
enum {
  RDB_TAG_COMPARATOR = 1,
  RDB_TAG_LOG_NUMBER = 2,
  RDB_TAG_NEXT_FILE = 3,
  RDB_TAG_LAST_SEQUENCE = 4,
  RDB_TAG_COMPACT_CURSOR = 5,
  RDB_TAG_DELETED_FILE = 6,
  RDB_TAG_NEW_FILE = 7,
  RDB_TAG_PREV_LOG_NUMBER = 9,
  RDB_TAG_MIN_LOG_TO_KEEP = 10,
  RDB_TAG_NEW_FILE2 = 100,
  RDB_TAG_NEW_FILE3 = 102,
  RDB_TAG_NEW_FILE4 = 103,
  RDB_TAG_COLUMN_FAMILY = 200,
  RDB_TAG_CF_ADD = 201,
  RDB_TAG_CF_DROP = 202,
  RDB_TAG_MAX_CF = 203,
  RDB_TAG_IN_ATOMIC_GROUP = 300,
  RDB_TAG_BLOB_ADDITION = 400,
  RDB_TAG_BLOB_GARBAGE = 401,
  RDB_TAG_SAFE_IGNORE = 1 << 13,
  RDB_TAG_DB_ID = RDB_TAG_SAFE_IGNORE + 1,
  RDB_TAG_BLOB_ADDITION_OLD = RDB_TAG_SAFE_IGNORE + 2,
  RDB_TAG_BLOB_GARBAGE_OLD = RDB_TAG_SAFE_IGNORE + 3,
  RDB_TAG_WAL_ADDITION = RDB_TAG_SAFE_IGNORE + 4,
  RDB_TAG_WAL_DELETION = RDB_TAG_SAFE_IGNORE + 5,
  RDB_TAG_FULL_HISTORY_TS_LOW = RDB_TAG_SAFE_IGNORE + 6,
  RDB_TAG_WAL_ADDITION2 = RDB_TAG_SAFE_IGNORE + 7,
  RDB_TAG_WAL_DELETION2 = RDB_TAG_SAFE_IGNORE + 8
};

/* NewFile4 custom field tags. */
enum {
  RDB_NF_TERMINATE = 1,
  RDB_NF_NEED_COMPACTION = 2,
  RDB_NF_MIN_LOG_TO_KEEP = 3,
  RDB_NF_OLDEST_BLOB_FILE = 4,
  RDB_NF_OLDEST_ANCESTER_TIME = 5,
  RDB_NF_CREATION_TIME = 6,
  RDB_NF_CHECKSUM = 7,
  RDB_NF_CHECKSUM_FUNC = 8,
  RDB_NF_TEMPERATURE = 9,
  RDB_NF_MIN_TIMESTAMP = 10,
  RDB_NF_MAX_TIMESTAMP = 11,
  RDB_NF_UNIQUE_ID = 12,
  RDB_NF_NON_SAFE_IGNORE = 1 << 6,
  RDB_NF_PATH_ID = RDB_NF_NON_SAFE_IGNORE + 1
};

/* A live table file. Strings and keys are malloc'd and owned by the version. */
typedef struct rdb_file {
  uint32_t cf; /* column family id */
  int level;
  uint64_t number, size;
  uint32_t path_id;            /* index into the database's db_paths (0: the directory) */
  uint8_t *smallest, *largest; /* user keys (the internal keys' 8-byte trailers removed) */
  size_t smallest_len, largest_len;
  uint64_t smallest_key_seq, largest_key_seq; /* sequences in the smallest/largest keys' trailers */
  int smallest_key_type, largest_key_type;    /* their value types */
  uint64_t smallest_seqno, largest_seqno;     /* of all entries (NewFile2..4; 0 and 2^64-1
                                                 when not recorded, as RocksDB reads them) */
  uint64_t oldest_blob_file;                  /* 0: no blob references */
  uint64_t oldest_ancester_time, file_creation_time;
  uint8_t *checksum; /* file checksum (NULL when none) */
  size_t checksum_len;
  char *checksum_func;       /* its function's name (NULL when none) */
  int marked_for_compaction; /* need-compaction flag */
  int temperature;           /* 0 unknown */
  int has_unique_id;
  uint8_t unique_id[16]; /* the table's unique id, as the MANIFEST stores it */
} rdb_file_t;

/* A column family. */
typedef struct rdb_cf {
  uint32_t id;
  char *name;          /* malloc'd */
  char *comparator;    /* malloc'd; NULL until an edit names it */
  uint64_t log_number; /* logs older than this hold none of its unflushed writes */
} rdb_cf_t;

/* A blob file the version references (the engine refuses blob databases: noted here only). */
typedef struct rdb_blob_file {
  uint32_t cf;
  uint64_t number, count, bytes, garbage_count, garbage_bytes;
} rdb_blob_file_t;

/* A version: caller-owned struct, zeroed to start (the empty version; the first edits of a
   MANIFEST create the default column family, id 0, "default"), released with
   rdb_version_release. */
typedef struct rdb_version {
  uint64_t next_file, last_sequence, prev_log_number, min_log_number_to_keep;
  uint32_t max_column_family;
  char *db_id;   /* malloc'd; NULL when no edit carried one */
  rdb_cf_t *cfs; /* live column families, in the order they were added */
  size_t ncfs, cfs_cap;
  rdb_file_t *files; /* live table files of every column family, in no particular order */
  size_t nfiles, files_cap;
  rdb_blob_file_t *blobs; /* live blob files */
  size_t nblobs, blobs_cap;
  uint64_t edits; /* edits applied */
  /* replay state of an atomic group (RocksDB applies a group whole or not at all) */
  uint32_t group_left;              /* edits still to come in the open group (0: none open) */
  struct rdb_version *before_group; /* the version before the open group (owned) */
} rdb_version_t;

void rdb_version_release(rdb_version_t *v); /* NULL allowed; leaves *v zeroed */
/* Copies src into *dst (zeroed or released before): BFH_OK or BFH_E_NOMEM. */
int rdb_version_copy(rdb_version_t *dst, const rdb_version_t *src);

/* Applies one VersionEdit (p, n bytes) to v. where names the record in messages ("manifest
   /db/MANIFEST-000005: record at 120"). BFH_OK; BFH_E_CORRUPT for a field cut short, an unknown
   tag that is not safe to ignore, an edit naming a column family that does not exist, adding
   one that exists, or an internal key shorter than its trailer (v is then partly changed: drop
   it); BFH_E_NOMEM. Deleting a file the version does not hold is no error. Edits of an atomic
   group are held back until the group is complete. */
int rdb_version_apply(rdb_version_t *v, const uint8_t *p, size_t n, const char *where, err_t *err);

/* Reads dir/CURRENT: *manifest (malloc'd, client frees) is the MANIFEST's path (dir/NAME).
   BFH_NOT_FOUND without CURRENT; BFH_E_CORRUPT "CURRENT in DIR: ..." if it does not name a
   MANIFEST-NNNNNN followed by a newline; BFH_E_IO, BFH_E_NOMEM. */
int rdb_manifest_current(env_t *io, const char *dir, char **manifest, err_t *err);

/* Applies the edits of the MANIFEST at path from byte offset on (0, or an earlier read's
   *next_offset while the file only grew) to v; *next_offset (may be NULL) is where the next
   read resumes. flags: 0 or RDB_LOG_CHECK_TAIL (rdb_log.h). An atomic group still open at the
   end is not applied (v is the version before it; a later read applies it when complete).
   Errors as rdb_log_records (BFH_NOT_FOUND: no such file) and rdb_version_apply. */
int rdb_version_read(env_t *io, const char *path, uint64_t offset, int flags, rdb_version_t *v,
                     uint64_t *next_offset, err_t *err);

/* CURRENT, then the whole MANIFEST it names, into *v (zeroed or released before). On success
   *manifest (may be NULL; malloc'd, client frees) is the MANIFEST's path and *next_offset (may
   be NULL) where it ends. Errors as rdb_manifest_current and rdb_version_read; BFH_E_CORRUPT
   also for a MANIFEST without the default column family. */
int rdb_version_load(env_t *io, const char *dir, int flags, rdb_version_t *v, char **manifest,
                     uint64_t *next_offset, err_t *err);

/* The column family with that id / name, or NULL (borrowed from v). */
const rdb_cf_t *rdb_version_cf(const rdb_version_t *v, uint32_t id);
const rdb_cf_t *rdb_version_cf_by_name(const rdb_version_t *v, const char *name);

/* The smallest log number any live column family still needs (min of their log numbers): logs
   numbered below it hold no unflushed write. */
uint64_t rdb_version_min_log(const rdb_version_t *v);

/* Whether the writes to column family cf found in log log_number are not yet in its tables
   (1), or are (0: skip them, as RocksDB's recovery does; also for a column family that no
   longer exists). */
int rdb_version_log_wanted(const rdb_version_t *v, uint32_t cf, uint64_t log_number);

/* The live WAL files of dir: the NNNNNN.log files present with a number >=
   rdb_version_min_log(v), ascending, in *numbers (malloc'd, client frees; NULL when none) and
   *n. BFH_E_IO, BFH_E_NOMEM. */
int rdb_version_live_logs(env_t *io, const char *dir, const rdb_version_t *v, uint64_t **numbers,
                          size_t *n, err_t *err);

/* Memory held by v (its arrays, keys and strings). */
size_t rdb_version_size_in_bytes(const rdb_version_t *v);

#endif

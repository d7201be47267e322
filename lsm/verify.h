/* lsm_verify: checks every checksum of a database of the own engine without changing it,
 * and reports each damaged record or block by file and offset (the library's check, as
 * LevelDB's `leveldb_repair` finds damage but without rewriting anything).
 *
 * What is read (doc/format.md names each layout):
 *   - IDENTITY and CURRENT;
 *   - the manifest CURRENT names: every record's checksum, every edit decoded; the edits
 *     give the live tables and the oldest live log;
 *   - every live table: footer, index, meta index, every data block (checksum, block format,
 *     internal keys) and every meta block (key filter, and the value and block filters the
 *     table hook stored); the caller may look further into an intact table (hooks.table);
 *   - every live log: every record's checksum, every write batch decoded.
 * With a damaged CURRENT or manifest the live set is unknown: every table and log of the
 * directory is checked then. A damaged record is skipped (log_reader_skip_damage: to the
 * next record that checks out, or to the next 32 KiB log block when its length cannot be
 * trusted) and the reading goes on to the end of the file, so that every damaged region is
 * reported, each once, by file and offset; only records inside a skipped region go unchecked.
 *
 * A record cut short at the end of a log or of the manifest (a write in flight at a crash) is
 * a torn tail, not damage: it is counted in torn_tails, never passed to damage. The reader
 * cannot tell a byte flipped in the very last record of a file from such a write (lsm/log.h),
 * so that damage is counted as a torn tail too.
 *
 * Nothing is opened for writing: the LOCK is taken shared (env_lock_shared), so a
 * database open elsewhere gives ST_E_BUSY, and no open can start while the check runs.
 */
#ifndef BFH_LSM_VERIFY_H
#define BFH_LSM_VERIFY_H

#include <stdint.h>

#include "util/env.h"
#include "lsm/table.h"
#include "util/err.h"

/* A damaged file: its name relative to the database directory, the offset of the damaged
   record or block (0 for a file that is missing or damaged whole), what is wrong. The
   strings are borrowed for the call. */
typedef void (*lsm_damage_fn)(void *arg, const char *file, uint64_t offset, const char *what);

typedef struct lsm_verify_hooks {
  lsm_damage_fn damage; /* may be NULL: only count */
  /* Called for every live table whose footer and index checked out (may be NULL); returns
     the damage it found in it (reported through damage by itself). */
  uint64_t (*table)(void *arg, table_t *t, const char *file);
  void *arg;
} lsm_verify_hooks_t;

typedef struct lsm_verify_stats {
  uint64_t files;           /* files read */
  uint64_t bytes;           /* their bytes */
  uint64_t blocks;          /* table blocks checked (data, meta, index, meta index) */
  uint64_t records;         /* log and manifest records checked */
  uint64_t damaged;         /* damaged records, blocks and files reported */
  uint64_t torn_tails;      /* logs and manifests that end in a torn tail */
  uint64_t torn_tail_bytes; /* their bytes */
} lsm_verify_stats_t;

/* Checks the database in dir (read through io, borrowed). Adds to *st. ST_OK when the check
   ran (st->damaged says whether damage was found); ST_E_BUSY if the database is open;
   ST_E_INVALID if dir is not a database of this engine; ST_E_IO, ST_E_NOMEM. */
int lsm_verify(const char *dir, env_t *io, const lsm_verify_hooks_t *hooks,
               lsm_verify_stats_t *st, err_t *err);

/* The offset a reader's message names ("table 000007.sst: block at 4096: checksum mismatch"
   gives 4096: the number after the last " at "), 0 if none: the readers report damage in
   their messages, and a check reports it by file and offset. */
uint64_t lsm_verify_message_offset(const char *msg);
/* What a reader's message says is wrong: the text after its last ": ". */
const char *lsm_verify_message_what(const char *msg);

#endif

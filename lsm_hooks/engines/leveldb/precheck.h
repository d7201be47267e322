/* ldb_precheck: what LevelDB 1.23's recovery would accept silently, checked before
 * leveldb_open (the LevelDB engine's open).
 *
 * With paranoid_checks LevelDB reports almost every damaged record of its MANIFEST and logs as
 * Corruption, but not all, and without naming the file:
 *   - a record in the last block of a file whose length field was damaged so that it runs
 *     past the end is taken for a write cut short by a crash, and dropped with everything
 *     after it (log_reader.cc, ReadPhysicalRecord at eof);
 *   - a MANIFEST that lost its last edits (truncated or damaged as above) opens an older
 *     version: the tables those edits added are deleted as obsolete, and the logs they made
 *     obsolete are gone already, so their keys are lost.
 * ldb_precheck_dir (ldb_verify.c: stock_check_precheck over LevelDB's hooks) reads CURRENT,
 * the MANIFEST it names and every log LevelDB would replay with bfh's own readers
 * (leveldb_format/ldb_log.h, every checksum verified, LDB_LOG_CHECK_TAIL), parses every
 * version edit, and checks that the oldest live log the MANIFEST names still exists (LevelDB
 * deletes a log only after an edit naming a newer one is written, so a missing one means lost
 * edits). It writes nothing.
 */
#ifndef BFH_LSM_HOOKS_LEVELDB_PRECHECK_H
#define BFH_LSM_HOOKS_LEVELDB_PRECHECK_H

#include "util/env.h"
#include "util/err.h"

/* Checks the LevelDB database in directory dir (its files read through io, borrowed). BFH_OK when
   it has no CURRENT (nothing to recover) or every check passed; BFH_E_CORRUPT with a message naming
   the file and offset
   ("manifest /db/MANIFEST-000005: record at 120: checksum mismatch", "log /db/000007.log:
   record at 40960: ...", "/db/CURRENT: ..."); BFH_E_IO, BFH_E_NOMEM. */
int ldb_precheck_dir(env_t *io, const char *dir, err_t *err);

#endif

/* repair_stage: every bfh_repair builds the repaired database beside the old one and puts it
 * in place in one step, so that a repair either succeeds or leaves the directory as it found
 * it, byte for byte. RepairDB of LevelDB and RocksDB moves files into lost/ and replaces
 * CURRENT as it goes; run on the database itself, a repair that failed half-way (RocksDB's
 * consistency checks, a full disk) left a database that read less than before.
 *
 *   1. repair_stage_create: the stage, <parent>/.<name>.bfh-repair/, mirrors path (the
 *      directory a symbolic link names, when path is one: the stage goes beside it). A table
 *      (.sst, .ldb), a filter cache file (.vf) and every file under lost/ gets a second name
 *      there (a hard link: no byte is copied, and no repair writes into such a file, it only
 *      renames it); every other file is copied, for a repair may rewrite it in place
 *      (CURRENT, MANIFEST-*, logs, LOG, LOCK, IDENTITY, OPTIONS-*, BFH-PARAMS); each
 *      subdirectory is mirrored the same way. A marker file, REPAIR_STAGE_MARKER, says that
 *      the directory is a stage.
 *   2. The engine's repair runs in the stage, and the caller checks what it built
 *      (api/repair.c).
 *   3. repair_stage_commit: one renameat2(RENAME_EXCHANGE) swaps the stage and path. The old
 *      directory, now under the stage's name, is moved into path/lost/before-repair-N (N the
 *      first free number), whence a user can put it back.
 *
 * Until the swap, nothing under path is moved, replaced or written: a failure leaves it as it
 * was and removes the stage; a crash leaves a stage (with the marker), which the next
 * repair_stage_create removes. A crash after the swap leaves the old directory under the
 * stage's name without the marker: the next repair_stage_create moves it into path/lost/
 * first. The file system must be able to swap two names in one step (ext4, xfs, btrfs and
 * tmpfs can): where it cannot, the commit fails with BFH_E_UNSUPPORTED and nothing changed.
 * The parent of path must be writable.
 *
 * Every file access goes through the env given at create (tests inject faults at each step).
 * Tables are linked, so a stage costs the size of the copied files and of what the repair
 * writes. Not thread-safe; the caller holds the database's locks throughout.
 */
#ifndef BFH_LSM_HOOKS_REPAIR_STAGE_H
#define BFH_LSM_HOOKS_REPAIR_STAGE_H

#include "util/env.h"
#include "util/err.h"

#define REPAIR_STAGE_MARKER "BFH-REPAIR-STAGE"

typedef struct repair_stage repair_stage_t;

/* Makes the stage of the database directory path (borrowed; its parent must exist and be
   writable), after tidying what a crashed earlier repair left. On BFH_OK *out is new: the
   client ends it with repair_stage_commit or repair_stage_destroy. BFH_E_INVALID for a path
   that is not a directory, or that holds something other than files and directories (a
   symbolic link, a FIFO: named in the message); BFH_E_IO, BFH_E_NOMEM. Nothing under path is
   changed, whatever the result. */
int repair_stage_create(env_t *io, const char *path, repair_stage_t **out, err_t *err);

/* The directory the repair runs in (owned by s). */
const char *repair_stage_dir(const repair_stage_t *s);

/* Puts the stage in path's place and moves the old directory into path/lost/ (3 above); frees
   s whatever the result. BFH_OK once the swap is done, with *kept = N of the old directory's
   path/lost/before-repair-N (0 if moving it failed: that is left for the next repair to
   finish, not reported); before the swap, an error (BFH_E_UNSUPPORTED: the file system
   cannot swap) after which path is as it was and the stage is removed. */
int repair_stage_commit(repair_stage_t *s, unsigned *kept, err_t *err);

/* Removes the stage (path is not touched) and frees s. NULL allowed. */
void repair_stage_destroy(repair_stage_t *s);

/* Rewrites a message about the stage to name the database: every occurrence of the stage's
   directory in err->msg becomes path. */
void repair_stage_name_path(const repair_stage_t *s, err_t *err);

/* Tests: fn(arg, step) runs before each step that changes the file system (step = 1, 2, ...
   in the order taken), so that a test can stop the process there. NULL removes it. */
void repair_stage_set_step_hook(void (*fn)(void *arg, int step), void *arg);

#endif

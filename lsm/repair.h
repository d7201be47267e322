/* lsm_repair: the explicit way back for a database that refuses to open (a damaged
 * manifest, a damaged log, a missing or damaged table).
 *
 * Recovery never repairs silently (lsm/db.h): it refuses and deletes nothing. lsm_repair
 * salvages, in the spirit of LevelDB's RepairDB, and says what it dropped:
 *   1. every log is read record by record; a damaged record is skipped to the next 32 KiB
 *      block and the bytes lost are counted;
 *   2. every table is opened and each data block checked; a table whose footer or index is
 *      unreadable is lost whole, a damaged block is skipped and the rest of its table kept;
 *   3. everything kept is merged by internal key, the newest version of each key wins (a
 *      deletion removes the key), and it is written as new tables (through the table hook,
 *      so each gets its value filter again) forming one sorted run at the last level;
 *   4. a new manifest naming exactly those tables and a new empty log replaces the old ones
 *      (CURRENT is switched atomically).
 * Files that had damage are moved into <dir>/lost/ (kept, never deleted); the old intact
 * tables, logs and manifests are left for the next open to delete as obsolete. If repair
 * fails before the new manifest is in place, the database is as it was.
 *
 * It holds the LOCK: ST_E_BUSY if the database is open. bfh_repair runs it on a copy of the
 * database that takes the database's place only once it opens and holds what the repair
 * says it wrote (lsm_hooks/engines/repair_stage.h).
 */
#ifndef BFH_LSM_REPAIR_H
#define BFH_LSM_REPAIR_H

#include <stdint.h>

#include "lsm/db.h"
#include "util/env.h"
#include "util/err.h"

typedef struct lsm_repair_stats {
  uint64_t logs;              /* log files read */
  uint64_t log_records;       /* records replayed */
  uint64_t log_bytes_dropped; /* bytes of damaged or torn log records skipped */
  uint64_t tables;            /* table files found */
  uint64_t tables_damaged;    /* tables with damaged blocks, whose other blocks were kept */
  uint64_t tables_lost;       /* tables that could not be opened at all */
  uint64_t blocks_dropped;    /* damaged data blocks skipped */
  uint64_t entries_in;        /* entries read from tables and logs (all versions) */
  uint64_t keys_out;          /* live keys written */
  uint64_t tables_out;        /* table files written */
  uint64_t files_moved;       /* damaged files moved to lost/ */
} lsm_repair_stats_t;

/* Repairs the database in dir with opt's table shape, hook and io (create_if_missing is
   ignored; dir must be a bfh LSM database: IDENTITY present, or at least one table or log).
   st (may be NULL) gets what was kept and dropped. ST_OK when the database opens again;
   an error (message in err) leaves it as it was. */
int lsm_repair(const char *dir, const lsm_options_t *opt, lsm_repair_stats_t *st, err_t *err);

/* The checks lsm_repair makes before it writes anything: ST_OK when dir is a bfh LSM database
   (IDENTITY present, or tables or logs and no CURRENT of another engine); ST_E_INVALID with a
   message naming what dir holds instead. Reads only (through io; NULL: the real one). */
int lsm_repair_precheck(const char *dir, env_t *io, err_t *err);

#endif

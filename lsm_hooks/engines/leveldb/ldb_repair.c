/* bfh_repair of a LevelDB database (engine_leveldb_repair, engine.h): LevelDB's own RepairDB
 * (db/repair.cc in 1.23), behind the checks RepairDB lacks.
 *
 * RepairDB takes no lock and takes any directory for a damaged database of its own: on the
 * own engine's directory it moves the tables and the MANIFEST to lost/ (they do not parse as
 * LevelDB's), on a plain directory it writes CURRENT, LOG and a MANIFEST, on a missing one it
 * creates it, and under a live owner it rewrites the MANIFEST and CURRENT the owner is
 * appending to. It runs on a stage, a copy of the database that is swapped in only when the
 * result checks out (repair_stage.h, api/repair.c). Before the stage is made, and
 * without writing anything into the directory (engine_leveldb_repair_lock):
 *   1. path is a directory, not the own engine's (no IDENTITY file, no table ending with the
 *      own engine's magic), and it holds at least one of LevelDB's files (CURRENT, MANIFEST-N,
 *      N.log, N.ldb, N.sst): the files RepairDB rebuilds from;
 *   2. nobody has the database open: bfh's flock on the directory (a bfh handle, also of this
 *      process), then the POSIX lock LevelDB holds on LOCK (any LevelDB program), found in
 *      /proc/locks without opening LOCK (closing a descriptor of it would drop a lock this
 *      process may hold).
 * From then until the stage is swapped in it holds both locks itself (foreign_repair_lock):
 * the directory's flock (no bfh handle opens) and LevelDB's own lock, a POSIX write lock on
 * the whole of LOCK, so that no LevelDB program (another process) opens the database in
 * between.
 */
#include <stdlib.h>
#include <string.h>

#include "bfh.h"
#include "lsm/table.h"
#include "lsm_hooks/engines/foreign_check.h"
#include "lsm_hooks/engines/engine_detect.h"
#include "lsm_hooks/engines/leveldb/ldb_api.h"
#include "lsm_hooks/engines/leveldb/ldb_engine.h"
#include "lsm_hooks/engines/stock/stock.h"
#include "util/path.h"

static void (*repair_hook)(void *arg, const char *path);
static void *repair_hook_arg;

void engine_leveldb_repair_set_hook(void (*fn)(void *arg, const char *path), void *arg) {
  repair_hook = fn;
  repair_hook_arg = arg;
}

/* Step 1 at the top: BFH_OK if path holds LevelDB's files and nothing of the own engine. */
static int check_contents(const char *path, err_t *err) {
  env_t *io = env_default();
  env_path_type_t type;
  int rc = env_path_kind(io, path, &type, err);
  if (rc == BFH_NOT_FOUND)
    return err_set(err, BFH_E_INVALID, "%s: does not exist: nothing to repair", path);
  if (rc != BFH_OK) return rc;
  if (type != ENV_PATH_DIR) return err_set(err, BFH_E_INVALID, "%s: not a directory", path);
  if (engine_detect_dir(path) == ENGINE_DIR_ROCKSDB)
    return engine_detect_check(path, ENGINE_DIR_LEVELDB, err);
  int own; /* IDENTITY: the own engine's marker (lsm/filename.h) */
  if ((rc = stock_file_exists(io, path, "IDENTITY", &own, err)) != BFH_OK) return rc;
  if (own)
    return err_set(err, BFH_E_INVALID,
                   "%s is a bfh (own engine) database (it has an IDENTITY file), not a LevelDB "
                   "one: repair it with the lsm engine; LevelDB's repair would move its tables "
                   "and MANIFEST to lost/",
                   path);
  char **names;
  size_t count;
  if ((rc = env_list_dir(io, path, &names, &count, err)) != BFH_OK)
    return err_prefix(err, "%s: list directory: ", path);
  int found = 0;
  for (size_t i = 0; rc == BFH_OK && i < count; i++) {
    const char *n = names[i];
    uint64_t num;
    int table = stock_table_file_number(n, &num);
    if (table) {
      char *tp = path_join(path, n);
      if (!tp)
        rc = err_set(err, BFH_E_NOMEM, "%s/%s: no memory for its path", path, n);
      else if (engine_detect_table_magic(tp) == TABLE_MAGIC)
        rc = err_set(err, BFH_E_INVALID,
                     "%s: table %s is a bfh own-engine table (its footer has the own engine's "
                     "magic), not a LevelDB one: repair the directory with the lsm engine",
                     path, n);
      free(tp);
    }
    found |= table || stock_file_number(n, "log", &num) || !strcmp(n, "CURRENT") ||
             (!strncmp(n, "MANIFEST-", 9) && n[9] >= '0' && n[9] <= '9');
  }
  env_names_free(names, count);
  if (rc == BFH_OK && !found)
    rc = err_set(err, BFH_E_INVALID,
                 "%s: not a LevelDB database (no CURRENT, MANIFEST, log or table file): nothing "
                 "to repair",
                 path);
  if (rc == BFH_OK) rc = engine_detect_special_files(path, err); /* RepairDB would wait on one */
  return rc;
}

int engine_leveldb_repair_lock(const char *path, void **lock, err_t *err) {
  *lock = NULL;
  int rc = check_contents(path, err);
  foreign_repair_lock_t *l = NULL;
  if (rc == BFH_OK) rc = foreign_repair_lock(path, "LevelDB", &l, err);
  if (rc != BFH_OK) return rc;
  if (repair_hook) repair_hook(repair_hook_arg, path);
  *lock = l;
  return BFH_OK;
}

int engine_leveldb_repair(const char *dir, const bfh_options *opt, bfh_repair_report *rep,
                          err_t *err) {
  (void)opt, (void)rep; /* LevelDB reports what it kept to its LOG file */
  if (ldb_api_bind(err) != BFH_OK) return err_prefix(err, "%s: LevelDB's repair needs ", dir);
  leveldb_options_t *o = leveldb_options_create();
  if (!o) return err_set(err, BFH_E_NOMEM, "%s: out of memory", dir);
  char *lerr = NULL;
  leveldb_repair_db(o, dir, &lerr);
  leveldb_options_destroy(o);
  int rc = lerr ? err_set(err, BFH_E_IO, "%s: LevelDB repair: %s", dir, lerr) : BFH_OK;
  leveldb_free(lerr);
  return rc;
}

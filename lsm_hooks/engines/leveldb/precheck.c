/* ldb_precheck: see engines/leveldb/precheck.h. */
#include "lsm_hooks/engines/leveldb/precheck.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bfh.h"
#include "lsm_hooks/engines/stock/stock.h"
#include "lsm_hooks/leveldb_format/ldb_log.h"
#include "lsm_hooks/leveldb_format/ldb_version_edit.h"
#include "util/path.h"

static int ignore_entry(void *arg, const ldb_entry_t *e) {
  (void)arg, (void)e;
  return 0;
}

/* ldb_precheck_dir past CURRENT, which names manifest, at mpath. */
static int check_manifest_and_logs(env_t *io, const char *dir, const char *manifest,
                                   const char *mpath, err_t *err) {
  /* Every edit parsed and applied as the reader of the read-only engine and bfh_check do. */
  ldb_version_t v = {0};
  int rc = ldb_version_check(io, mpath, &v, NULL, err);
  int has_log_number = v.has_log_number;
  uint64_t log_number = v.log_number;
  ldb_version_release(&v);
  if (rc == BFH_NOT_FOUND)
    return err_set(err, BFH_E_CORRUPT, "%s/CURRENT: names %s, which does not exist", dir, manifest);
  if (rc != BFH_OK) return rc;
  if (!has_log_number) /* every MANIFEST LevelDB writes starts with an edit that has one */
    return err_set(err, BFH_E_CORRUPT,
                   "manifest %s: no complete version edit with a log number (truncated or damaged "
                   "at its start)",
                   mpath);

  char **names;
  size_t count;
  if ((rc = env_list_dir(io, dir, &names, &count, err)) != BFH_OK)
    return err_prefix(err, "%s: list directory: ", dir);
  int have_live_log = 0;
  for (size_t i = 0; rc == BFH_OK && i < count; i++) {
    uint64_t num;
    if (!stock_file_number(names[i], "log", &num)) continue;
    if (num == log_number) have_live_log = 1;
    if (num < log_number) continue; /* obsolete: LevelDB ignores it */
    char *lpath = path_join(dir, names[i]);
    if (!lpath) {
      rc = err_set(err, BFH_E_NOMEM, "%s/%s: no memory for its path", dir, names[i]);
      break;
    }
    rc = ldb_log_read_flags(io, lpath, 0, LDB_LOG_CHECK_TAIL, ignore_entry, NULL, NULL, NULL, err);
    free(lpath);
    if (rc == BFH_NOT_FOUND) rc = BFH_OK; /* cannot happen: the database is locked */
  }
  env_names_free(names, count);
  if (rc != BFH_OK) return rc;
  if (log_number != 0 && !have_live_log)
    return err_set(
        err, BFH_E_CORRUPT,
        "manifest %s: its last edit names log %06llu as live, but %s/%06llu.log does not "
        "exist (edits after it were lost: the MANIFEST is truncated or damaged)",
        mpath, (unsigned long long)log_number, dir, (unsigned long long)log_number);
  return BFH_OK;
}

int ldb_precheck_dir(env_t *io, const char *dir, err_t *err) {
  char *mpath;
  int rc = stock_current_read(io, dir, &mpath, err);
  if (rc == BFH_NOT_FOUND) return BFH_OK;
  if (rc != BFH_OK) return rc;
  rc = check_manifest_and_logs(io, dir, strrchr(mpath, '/') + 1, mpath, err);
  free(mpath);
  return rc;
}

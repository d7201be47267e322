/* LevelDB's error strings as bfh statuses, and the diagnosis of which file a Corruption is
 * about (adapter.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bfh.h"
#include "lsm_hooks/engines/leveldb/adapter.h"
#include "lsm_hooks/engines/leveldb/ldb_api.h"
#include "lsm_hooks/leveldb_format/ldb_sstables.h"
#include "lsm_hooks/leveldb_format/ldb_table.h"

void ldb_table_path_write(const char *dir, uint64_t number, char *out, size_t n) {
  stock_table_path_write(dir, number, "ldb", "sst", out, n);
}

int ldb_table_path(const char *dir, uint64_t number, char **path, err_t *err) {
  return stock_table_path(dir, number, "ldb", "sst", path, err);
}

static int ignore_entry(void *arg, const ldb_entry_t *e) {
  (void)arg, (void)e;
  return 0;
}

/* Which file a LevelDB Corruption status is about: LevelDB's messages for damaged table
   blocks ("block checksum mismatch", "bad block handle", "truncated block read", ...) name no
   file. Reads every listed table with bfh's own reader (every checksum verified, the size
   compared with the one LevelDB lists) and writes the first damage found, naming the file and
   offset, to out. Returns 0 when no listed table is damaged. The last answer is kept for the
   same LevelDB message: a damaged database fails many calls the same way. */
static int diagnose_corruption(engine_leveldb_t *el, const char *ldb_msg, char *out, size_t cap) {
  pthread_mutex_lock(&el->diag_mu);
  int found = el->diag_ldb[0] && strncmp(el->diag_ldb, ldb_msg, sizeof el->diag_ldb - 1) == 0;
  if (found) snprintf(out, cap, "%s", el->diag_msg);
  pthread_mutex_unlock(&el->diag_mu);
  if (found || !el->db) return found;
  char *list = leveldb_property_value(el->db, "leveldb.sstables");
  ldb_sstable_t *t = NULL;
  size_t n = 0;
  err_t e2;
  int listed = list && ldb_sstables_parse(list, &t, &n, &e2) == BFH_OK;
  leveldb_free(list);
  if (!listed) return 0;
  for (size_t i = 0; i < n && !found; i++) {
    char *path;
    if (ldb_table_path(el->rw.path, t[i].number, &path, NULL) != BFH_OK) break; /* no diagnosis */
    uint64_t size;
    if (env_path_size(el->rw.io, path, &size, NULL) == BFH_OK && size != t[i].size) {
      snprintf(out, cap,
               "table %.400s: %llu bytes, but the MANIFEST says %llu (truncated or grown)", path,
               (unsigned long long)size, (unsigned long long)t[i].size);
      found = 1;
    } else if (ldb_table_scan(el->rw.io, path, ignore_entry, NULL, NULL, &e2) == BFH_E_CORRUPT) {
      snprintf(out, cap, "%s", e2.msg);
      found = 1;
    }
    free(path);
  }
  free(t);
  if (found) {
    pthread_mutex_lock(&el->diag_mu);
    snprintf(el->diag_ldb, sizeof el->diag_ldb, "%s", ldb_msg);
    snprintf(el->diag_msg, sizeof el->diag_msg, "%s", out);
    pthread_mutex_unlock(&el->diag_mu);
  }
  return found;
}

/* See adapter.h; the damaged file is found by diagnose_corruption. */
int ldb_error(engine_leveldb_t *el, char *msg, const char *op, err_t *err) {
  int code = BFH_E_IO;
  if (!strncmp(msg, "Corruption", 10))
    code = BFH_E_CORRUPT;
  else if (!strncmp(msg, "Invalid argument", 16))
    code = BFH_E_INVALID;
  else if (!strncmp(msg, "Not implemented", 15))
    code = BFH_E_UNSUPPORTED;
  else if (!strncmp(msg, "IO error: lock ", 15))
    code = BFH_E_BUSY;
  char where[ERR_MSG_BYTES];
  if (code == BFH_E_BUSY)
    err_set(err, code, "%s: database is open in another process or handle (LevelDB: %s)",
            el->rw.path, msg);
  else if (code == BFH_E_CORRUPT && diagnose_corruption(el, msg, where, sizeof where))
    err_set(err, code, "%s (leveldb %s: %s)", where, op, msg);
  else if (code == BFH_E_IO && (strstr(msg, ".ldb") || strstr(msg, ".sst")) &&
           diagnose_corruption(el, msg, where, sizeof where))
    /* A read past the end of a truncated table is an IO error to LevelDB ("Invalid
       argument" from its mmap reader): damage, when the table is not what LevelDB listed. */
    code = err_set(err, BFH_E_CORRUPT, "%s (leveldb %s: %s)", where, op, msg);
  else
    err_set(err, code, "%s: leveldb %s: %s", el->rw.path, op, msg);
  leveldb_free(msg);
  return code;
}

/* stock_at_rest_id (stock.h): what a closed LevelDB or RocksDB database is, as its files say.
 *
 * Every write either library makes to a database changes one of the files it reads back: a
 * write appends to a log; a flush or a compaction writes tables, appends to the MANIFEST and
 * deletes files; an open recovers its logs into a table and starts a new log, and often a new
 * MANIFEST. So the names, sizes and inode numbers of CURRENT, the MANIFESTs, the logs, the
 * tables and the blob files, sorted by name, are equal at two moments only if no write reached
 * the database between them. Neither library rewrites a file in place under the same size.
 * The other files (LOCK, LOG, LOG.old.*, OPTIONS-*, IDENTITY, bfh's own) are left out: they
 * change without a write, or never.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lsm_hooks/engines/stock/stock.h"
#include "util/path.h"

/* Whether name is a file that holds the database's data or names it. */
static int data_file(const char *name) {
  static const char *const suffixes[] = {"log", "ldb", "sst", "blob"};
  uint64_t num;
  if (strcmp(name, "CURRENT") == 0 || strncmp(name, "MANIFEST-", 9) == 0) return 1;
  for (size_t i = 0; i < sizeof suffixes / sizeof suffixes[0]; i++)
    if (stock_file_number(name, suffixes[i], &num)) return 1;
  return 0;
}

static int name_cmp(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

int stock_at_rest_id(const char *path, env_t *io, char **id, err_t *err) {
  *id = NULL;
  char **names = NULL;
  size_t n = 0;
  int rc = env_list_dir(io, path, &names, &n, err);
  if (rc != BFH_OK) return rc;
  size_t kept = 0;
  for (size_t i = 0; i < n; i++) {
    if (data_file(names[i])) {
      char *keep = names[i];
      names[i] = names[kept];
      names[kept++] = keep;
    }
  }
  if (kept > 1) qsort(names, kept, sizeof *names, name_cmp);
  /* One line a file: "NAME SIZE DEV:INO\n". */
  size_t cap = 1, len = 0;
  for (size_t i = 0; i < kept; i++) cap += strlen(names[i]) + 3 * 21 + 4;
  char *out = malloc(cap);
  if (!out) rc = err_set(err, BFH_E_NOMEM, "%s: no memory for the list of its files", path);
  if (out) out[0] = '\0';
  for (size_t i = 0; rc == BFH_OK && i < kept; i++) {
    char *p = path_join(path, names[i]);
    uint64_t size = 0;
    env_file_id_t fid = {0, 0};
    rc = p ? env_path_stat(io, p, &size, &fid, err)
           : err_set(err, BFH_E_NOMEM, "%s/%s: no memory for its path", path, names[i]);
    if (rc == BFH_NOT_FOUND) /* deleted while listed: no database at rest */
      rc = err_set(err, BFH_E_BUSY, "%s: changed while its files were listed", path);
    if (rc == BFH_OK)
      len += (size_t)snprintf(out + len, cap - len, "%s %" PRIu64 " %" PRIu64 ":%" PRIu64 "\n",
                              names[i], size, fid.dev, fid.ino);
    free(p);
  }
  env_names_free(names, n);
  if (rc != BFH_OK) {
    free(out);
    return rc;
  }
  *id = out;
  return BFH_OK;
}

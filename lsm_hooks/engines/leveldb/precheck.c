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
#include "util/coding.h"
#include "util/path.h"

typedef struct edits {
  const char *path;
  int has_log_number;
  uint64_t log_number;
} edits_t;

static const uint8_t *skip_slice(const uint8_t *p, const uint8_t *end) {
  uint32_t n;
  p = decode_varint32(p, end, &n);
  return p && n <= (size_t)(end - p) ? p + n : NULL;
}

/* One version edit: every field must parse; remembers the log number. */
static int visit_edit(void *arg, const uint8_t *p, size_t n, uint64_t at, int *stopped,
                      err_t *err) {
  edits_t *e = arg;
  (void)stopped;
  if (n == 0) return BFH_OK; /* an empty record (p may be NULL): no field */
  const uint8_t *q = p, *end = p + n;
  while (q && q < end) {
    size_t field = (size_t)(q - p);
    uint32_t tag, u32;
    uint64_t u64;
    q = decode_varint32(q, end, &tag);
    if (!q) break;
    switch (tag) {
      case LDB_TAG_COMPARATOR:
        q = skip_slice(q, end);
        break;
      case LDB_TAG_LOG_NUMBER:
        q = decode_varint64(q, end, &u64);
        if (q) {
          e->has_log_number = 1;
          e->log_number = u64;
        }
        break;
      case LDB_TAG_NEXT_FILE:
      case LDB_TAG_LAST_SEQUENCE:
      case LDB_TAG_PREV_LOG_NUMBER:
        q = decode_varint64(q, end, &u64);
        break;
      case LDB_TAG_COMPACT_POINTER:
        q = decode_varint32(q, end, &u32);
        if (q) q = skip_slice(q, end);
        break;
      case LDB_TAG_DELETED_FILE:
        q = decode_varint32(q, end, &u32);
        if (q) q = decode_varint64(q, end, &u64);
        break;
      case LDB_TAG_NEW_FILE:
        q = decode_varint32(q, end, &u32);
        if (q) q = decode_varint64(q, end, &u64);
        if (q) q = decode_varint64(q, end, &u64);
        if (q) q = skip_slice(q, end);
        if (q) q = skip_slice(q, end);
        break;
      default:
        return err_set(err, BFH_E_CORRUPT,
                       "manifest %s: record at %llu: unknown edit tag %u at +%zu", e->path,
                       (unsigned long long)at, tag, field);
    }
    if (!q)
      return err_set(err, BFH_E_CORRUPT,
                     "manifest %s: record at %llu: edit field at +%zu is cut short", e->path,
                     (unsigned long long)at, field);
  }
  if (!q)
    return err_set(err, BFH_E_CORRUPT, "manifest %s: record at %llu: bad edit tag", e->path,
                   (unsigned long long)at);
  return BFH_OK;
}

static int ignore_entry(void *arg, const ldb_entry_t *e) {
  (void)arg, (void)e;
  return 0;
}

/* read_current with path, dir's CURRENT. */
static int read_current_at(env_t *io, const char *dir, const char *path, char *manifest, size_t cap,
                           err_t *err) {
  if (!env_exists(io, path)) return BFH_NOT_FOUND;
  void *data = NULL;
  size_t len = 0;
  int rc = env_read_file(io, path, &data, &len, err);
  if (rc != BFH_OK) {
    if (rc != BFH_E_NOMEM && !env_exists(io, path)) return BFH_NOT_FOUND;
    return rc; /* the message names the file */
  }
  char buf[256];
  ssize_t n = (ssize_t)(len < sizeof buf - 1 ? len : sizeof buf - 1);
  memcpy(buf, data, (size_t)n);
  free(data);
  size_t i = 0;
  static const char prefix[] = "MANIFEST-";
  for (; i < sizeof prefix - 1; i++)
    if (i >= (size_t)n || buf[i] != prefix[i])
      return err_set(err, BFH_E_CORRUPT, "%s: at offset %zu: not \"MANIFEST-<number>\\n\"", path,
                     i);
  while (i < (size_t)n && buf[i] >= '0' && buf[i] <= '9' && i < cap - 1) i++;
  if (i == sizeof prefix - 1 || i >= (size_t)n || buf[i] != '\n' || i + 1 != (size_t)n)
    return err_set(err, BFH_E_CORRUPT, "%s: at offset %zu: not \"MANIFEST-<number>\\n\"", path, i);
  memcpy(manifest, buf, i);
  manifest[i] = '\0';
  int exists;
  if ((rc = stock_file_exists(env_default(), dir, manifest, &exists, err)) != BFH_OK) return rc;
  if (!exists)
    return err_set(err, BFH_E_CORRUPT, "%s: names %s, which does not exist", path, manifest);
  return BFH_OK;
}

/* Reads CURRENT into manifest (the file name it holds, checked). BFH_NOT_FOUND without one. */
static int read_current(env_t *io, const char *dir, char *manifest, size_t cap, err_t *err) {
  char *path = path_join(dir, "CURRENT");
  if (!path) return err_set(err, BFH_E_NOMEM, "%s/CURRENT: no memory for its path", dir);
  int rc = read_current_at(io, dir, path, manifest, cap, err);
  free(path);
  return rc;
}

/* ldb_precheck_dir past CURRENT, which names manifest, at mpath. */
static int check_manifest_and_logs(env_t *io, const char *dir, const char *manifest,
                                   const char *mpath, err_t *err) {
  edits_t e = {.path = mpath};
  int rc = ldb_log_records(io, mpath, "manifest", 0, LDB_LOG_CHECK_TAIL, visit_edit, &e, NULL, NULL,
                           err);
  if (rc == BFH_NOT_FOUND)
    return err_set(err, BFH_E_CORRUPT, "%s/CURRENT: names %s, which does not exist", dir, manifest);
  if (rc != BFH_OK) return rc;
  if (!e.has_log_number) /* every MANIFEST LevelDB writes starts with an edit that has one */
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
    if (e.has_log_number && num == e.log_number) have_live_log = 1;
    if (e.has_log_number && num < e.log_number) continue; /* obsolete: LevelDB ignores it */
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
  if (e.has_log_number && e.log_number != 0 && !have_live_log)
    return err_set(
        err, BFH_E_CORRUPT,
        "manifest %s: its last edit names log %06llu as live, but %s/%06llu.log does not "
        "exist (edits after it were lost: the MANIFEST is truncated or damaged)",
        mpath, (unsigned long long)e.log_number, dir, (unsigned long long)e.log_number);
  return BFH_OK;
}

int ldb_precheck_dir(env_t *io, const char *dir, err_t *err) {
  char manifest[256];
  int rc = read_current(io, dir, manifest, sizeof manifest, err);
  if (rc == BFH_NOT_FOUND) return BFH_OK;
  if (rc != BFH_OK) return rc;
  char *mpath = path_join(dir, manifest);
  if (!mpath) return err_set(err, BFH_E_NOMEM, "%s/%s: no memory for its path", dir, manifest);
  rc = check_manifest_and_logs(io, dir, manifest, mpath, err);
  free(mpath);
  return rc;
}

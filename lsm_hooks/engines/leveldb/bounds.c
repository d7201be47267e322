/* The read-write LevelDB engine's table sequence bounds (adapter.h, ldb_bounds_fill): LevelDB
 * lists its tables through leveldb.sstables, which says nothing of sequence numbers, so the
 * bounds come from the MANIFEST as the read-only engine reads them (ldb_version_edit.h: each
 * file bounded by the edit that added it). LevelDB writes an edit before it installs the
 * version, so every table a listing names is in the MANIFEST's bytes by then.
 */
#include <stdlib.h>
#include <string.h>

#include "lsm_hooks/engines/leveldb/adapter.h"
#include "util/path.h"

/* The MANIFEST that CURRENT names ("MANIFEST-<number>\n"), or NULL. */
static char *current_manifest(engine_leveldb_t *el) {
  char *path = path_join(el->rw.path, "CURRENT");
  void *data = NULL;
  size_t n = 0;
  err_t err;
  char *manifest = NULL;
  if (path && env_read_file(el->rw.io, path, &data, &n, &err) == BFH_OK) {
    const char *s = data;
    if (n > 0 && s[n - 1] == '\n') n--;
    int ok = n > 9 && n < 64 && strncmp(s, "MANIFEST-", 9) == 0;
    for (size_t i = 9; ok && i < n; i++) ok = s[i] >= '0' && s[i] <= '9';
    if (ok) manifest = path_fmt("%s/%.*s", el->rw.path, (int)n, s);
  }
  free(data);
  free(path);
  return manifest;
}

void ldb_bounds_release(engine_leveldb_t *el) {
  free(el->bounds_manifest);
  el->bounds_manifest = NULL;
  el->bounds_next = 0;
  ldb_version_release(&el->bounds_version);
  memset(&el->bounds_version, 0, sizeof el->bounds_version);
}

/* Brings bounds_version up to the end of the current MANIFEST (a new one is read from its
   start): 1, or 0 when it cannot be read. */
static int read_on(engine_leveldb_t *el) {
  char *manifest = current_manifest(el);
  if (!manifest) return 0;
  if (!el->bounds_manifest || strcmp(manifest, el->bounds_manifest) != 0) {
    ldb_bounds_release(el);
    el->bounds_manifest = manifest;
  } else {
    free(manifest);
  }
  err_t err;
  uint64_t next = 0;
  if (ldb_version_read(el->rw.io, el->bounds_manifest, el->bounds_next, &el->bounds_version, &next,
                       &err) != BFH_OK) {
    ldb_bounds_release(el); /* read from the start next time */
    return 0;
  }
  el->bounds_next = next;
  return 1;
}

void ldb_bounds_fill(engine_leveldb_t *el, engine_table_t *t, size_t n) {
  if (n == 0 || !read_on(el)) return;
  const ldb_version_t *v = &el->bounds_version;
  for (size_t i = 0; i < v->nfiles; i++) {
    size_t at = U64_LOWER_BOUND(t, n, number, v->files[i].number);
    if (at < n && t[at].number == v->files[i].number && v->files[i].max_seq != LDB_SEQ_UNKNOWN)
      t[at].max_seq = v->files[i].max_seq;
  }
}

/* The read-write LevelDB engine's table sequence bounds (adapter.h, ldb_bounds_fill): LevelDB
 * lists its tables through leveldb.sstables, which says nothing of sequence numbers, so the
 * bounds come from the MANIFEST as the read-only engine reads them (ldb_version_edit.h: each
 * file bounded by the edit that added it). LevelDB writes an edit before it installs the
 * version, so every table a listing names is in the MANIFEST's bytes by then.
 */
#include <stdlib.h>
#include <string.h>

#include "lsm_hooks/engines/leveldb/adapter.h"

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
  char *manifest;
  err_t err;
  if (stock_current_read(el->rw.io, el->rw.path, &manifest, &err) != BFH_OK) return 0;
  if (!el->bounds_manifest || strcmp(manifest, el->bounds_manifest) != 0) {
    ldb_bounds_release(el);
    el->bounds_manifest = manifest;
  } else {
    free(manifest);
  }
  uint64_t next = 0;
  if (ldb_version_read(el->rw.io, el->bounds_manifest, el->bounds_next, &el->bounds_version, &next,
                       &err) != BFH_OK) {
    ldb_bounds_release(el); /* read from the start next time */
    return 0;
  }
  el->bounds_next = next;
  return 1;
}

void ldb_bounds_fill(engine_leveldb_t *el, engine_table_t *t, size_t n, uint64_t serial) {
  if (n == 0) return;
  if (serial != el->bounds_serial) {
    el->bounds_serial = 0;
    if (!read_on(el)) return;
    el->bounds_serial = serial;
  }
  const ldb_version_t *v = &el->bounds_version;
  for (size_t i = 0; i < v->nfiles; i++) {
    size_t at = U64_LOWER_BOUND(t, n, number, v->files[i].number);
    if (at < n && t[at].number == v->files[i].number && v->files[i].max_seq != LDB_SEQ_UNKNOWN)
      t[at].max_seq = v->files[i].max_seq;
  }
}

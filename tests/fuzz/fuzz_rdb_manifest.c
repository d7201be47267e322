/* Fuzz target: the RocksDB MANIFEST reader (lsm_hooks/rocksdb_format/rdb_manifest.c): version
 * edits (every tag of RocksDB 7.8, NewFile4's custom fields, column families, atomic groups)
 * and their replay.
 *
 * The input is applied as one edit to an empty version and, split at each 0xff byte, as a
 * sequence of edits to one version (so that later edits see the column families and files of
 * earlier ones); it is also written as a MANIFEST file (its record CRCs recomputed) and replayed
 * with rdb_version_read.
 * Invariants checked: every live file belongs to a live column family; the default column family
 * (id 0) is never dropped; the copy of a version holds the same files.
 */
#include "fuzz_util.h"

#include "lsm_hooks/rocksdb_format/rdb_manifest.h"

static void check(const rdb_version_t *v) {
  for (size_t i = 0; i < v->nfiles; i++) fuzz_check(rdb_version_cf(v, v->files[i].cf) != NULL);
  if (v->edits) fuzz_check(rdb_version_cf(v, 0) != NULL);
  rdb_version_t c;
  if (rdb_version_copy(&c, v) == BFH_OK) {
    fuzz_check(c.nfiles == v->nfiles && c.ncfs == v->ncfs && c.nblobs == v->nblobs);
    for (size_t i = 0; i < v->nfiles; i++)
      fuzz_check(c.files[i].number == v->files[i].number &&
                 c.files[i].smallest_len == v->files[i].smallest_len &&
                 memcmp(c.files[i].smallest, v->files[i].smallest, c.files[i].smallest_len) == 0);
    fuzz_check(rdb_version_size_in_bytes(&c) > 0);
    rdb_version_release(&c);
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  uint8_t *c = fuzz_copy(data, size);
  err_t err;
  rdb_version_t v = {0};
  if (rdb_version_apply(&v, size ? c : (const uint8_t *)"", size, "fuzz: edit", &err) == BFH_OK)
    check(&v);
  rdb_version_release(&v);
  size_t start = 0;
  for (size_t i = 0; i <= size; i++) {
    if (i < size && data[i] != 0xff) continue;
    if (rdb_version_apply(&v, c + start, i - start, "fuzz: edit", &err) != BFH_OK) break;
    check(&v);
    start = i + 1;
  }
  rdb_version_release(&v);
  fuzz_fix_log_crcs(c, size);
  char path[512];
  fuzz_write_file("MANIFEST-000001", c, size, path, sizeof path);
  uint64_t next = 0;
  if (rdb_version_read(env_default(), path, 0, 0, &v, &next, &err) == BFH_OK) {
    fuzz_check(next <= size);
    check(&v);
  }
  rdb_version_release(&v);
  free(c);
  return 0;
}

/* Fuzz target: the LevelDB log reader (lsm_hooks/leveldb_format/ldb_log.c): physical records, fragment
 * assembly, the torn-tail rule, and the WriteBatch decoder.
 *
 * The input is a whole .log file, written to a scratch file (the reader takes a path). It
 * is read as given, then as a copy in which the CRC of every physical record was recomputed
 * (fuzz_fix_log_crcs) so that the batches behind the checksums are decoded; the copy is
 * also read again from the offset the first read said to resume at. The input is finally
 * given to ldb_log_decode_batch directly (a batch has no checksum of its own).
 * Invariant checked: the resume offset lies within the file.
 */
#include "fuzz_util.h"

#include "lsm_hooks/leveldb_format/ldb_log.h"

static int visit(void *arg, const ldb_entry_t *e) {
  fuzz_check(e->type == LDB_TYPE_VALUE || e->type == LDB_TYPE_DELETION);
  (*(uint64_t *)arg)++;
  return 0;
}

static void exercise(const uint8_t *data, size_t size, int resume) {
  char path[512];
  fuzz_write_file("000003.log", data, size, path, sizeof path);
  uint64_t n = 0, next = 0;
  ldb_read_stats_t st = {0};
  err_t err;
  if (ldb_log_read(env_default(), path, 0, visit, &n, &next, &st, &err) == BFH_OK) {
    fuzz_check(next <= size);
    if (resume) ldb_log_read(env_default(), path, next, visit, &n, &next, &st, &err);
  }
  if (resume && size > 7)
    ldb_log_read(env_default(), path, size / 2, visit, &n, &next, &st, &err);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  exercise(data, size, 0);
  uint8_t *c = fuzz_copy(data, size);
  fuzz_fix_log_crcs(c, size);
  exercise(c, size, 1);
  uint64_t n = 0;
  int stopped;
  err_t err;
  ldb_log_decode_batch(data, size, "fuzz: batch", visit, &n, &stopped, NULL, &err);
  free(c);
  return 0;
}

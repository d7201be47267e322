/* Fuzz target: the RocksDB WAL reader (lsm_hooks/rocksdb_format/rdb_log.c): legacy and
 * recyclable physical records, fragment assembly, the live-end rules (torn tail, an older log's
 * records, a recycled file's leftovers) and the write batch decoder.
 *
 * The input is a whole .log file (number 3), written to a scratch file (the reader takes a path).
 * It is read as given, then as a copy in which the CRC of every physical record was recomputed
 * (legacy and recyclable headers) so that the batches behind the checksums are decoded; the copy
 * is also read again from the offset the first read said to resume at. The input is finally
 * given to rdb_log_decode_batch directly (a batch has no checksum of its own).
 * Invariants checked: the resume offset lies within the file; every record handed over has a
 * known tag, and a column family only with a column-family tag.
 */
#include "fuzz_util.h"

#include "lsm_hooks/rocksdb_format/rdb_log.h"

static int visit(void *arg, const rdb_log_entry_t *e) {
  fuzz_check(rdb_log_tag_is_key(e->tag) >= 0);
  fuzz_check(e->type != e->tag || e->cf == 0); /* only the column-family tags name one */
  fuzz_check(e->key && e->val);
  (*(uint64_t *)arg)++;
  return 0;
}

/* fuzz_fix_log_crcs with RocksDB's recyclable headers (types 5-8: 4 bytes of log number). */
static void fix_crcs(uint8_t *p, size_t n) {
  size_t off = 0;
  while (off < n) {
    size_t block_end = (off / 32768 + 1) * 32768;
    if (block_end > n) block_end = n;
    size_t hl = block_end - off >= 7 && p[off + 6] >= 5 && p[off + 6] <= 8 ? 11 : 7;
    if (block_end - off < hl) {
      off = block_end;
      continue;
    }
    size_t len = (size_t)p[off + 4] | (size_t)p[off + 5] << 8;
    if (len > block_end - off - hl) {
      off = block_end;
      continue;
    }
    encode_fixed32(p + off, crc32c_mask(crc32c_value(p + off + 6, hl - 6 + len)));
    off += hl + len;
  }
}

static void exercise(const uint8_t *data, size_t size, int resume) {
  char path[512];
  fuzz_write_file("000003.log", data, size, path, sizeof path);
  uint64_t n = 0, next = 0;
  rdb_log_stats_t st = {0};
  err_t err;
  for (int flags = 0; flags <= RDB_LOG_CHECK_TAIL; flags++)
    if (rdb_log_read(env_default(), path, 3, 0, flags, visit, &n, &next, &st, &err) == BFH_OK) {
      fuzz_check(next <= size);
      if (resume) rdb_log_read(env_default(), path, 3, next, 0, visit, &n, &next, &st, &err);
    }
  if (resume && size > 11)
    rdb_log_read(env_default(), path, 3, size / 2, 0, visit, &n, &next, &st, &err);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  exercise(data, size, 0);
  uint8_t *c = fuzz_copy(data, size);
  fix_crcs(c, size);
  exercise(c, size, 1);
  uint64_t n = 0;
  int stopped;
  err_t err;
  rdb_log_decode_batch(size ? c : (const uint8_t *)"", size, 3, 0, "fuzz: batch", visit, &n,
                       &stopped, NULL, &err);
  free(c);
  return 0;
}

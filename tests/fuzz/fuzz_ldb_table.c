/* Fuzz target: the LevelDB table reader (ldb_table_scan in lsm_hooks/leveldb/table.c): footer,
 * index block, data blocks, raw and snappy-compressed.
 *
 * The input is a whole .ldb file, written to a scratch file (the reader takes a path). It
 * is scanned as given and again as a copy whose checksums were recomputed: the index
 * block's trailer, then (after decompressing the index if it is snappy) the trailer of
 * every data block the index lists, so that fuzzing reaches the block decoding behind the
 * checks. Invariant checked: entries handed to the visitor have a known type and
 * in-bounds lengths.
 */
#include "fuzz_util.h"

#include <snappy-c.h>

#include "lsm_hooks/leveldb/table.h"

/* Reads the first and last byte of the key and the value, so that ASan checks the bounds the
   reader handed out. */
static volatile uint8_t sink;

static int visit(void *arg, const ldb_entry_t *e) {
  fuzz_check(e->type == LDB_TYPE_VALUE || e->type == LDB_TYPE_DELETION);
  if (e->key_len) sink ^= e->key[0] ^ e->key[e->key_len - 1];
  if (e->val_len) sink ^= e->val[0] ^ e->val[e->val_len - 1];
  (*(uint64_t *)arg)++;
  return 0;
}

static void fix_crcs(uint8_t *p, size_t n) {
  if (n < LDB_FOOTER_BYTES) return;
  uint64_t limit = n - LDB_FOOTER_BYTES;
  const uint8_t *f = p + limit;
  block_handle_t mh, ih;
  const uint8_t *q = block_handle_decode(f, f + 40, &mh);
  if (q) q = block_handle_decode(q, f + 40, &ih);
  if (!q || !fuzz_fix_block_trailer(p, limit, ih.offset, ih.size)) return;
  const uint8_t *c = p + ih.offset;
  size_t len = (size_t)ih.size;
  char *u = NULL;
  if (c[len] == 1) {
    size_t ulen;
    if (snappy_uncompressed_length((const char *)c, len, &ulen) != SNAPPY_OK || ulen > (1u << 24))
      return;
    u = malloc(ulen ? ulen : 1);
    fuzz_check(u != NULL);
    if (snappy_uncompress((const char *)c, len, u, &ulen) != SNAPPY_OK) {
      free(u);
      return;
    }
    c = (const uint8_t *)u;
    len = ulen;
  }
  fuzz_fix_blocks_listed(p, limit, c, len);
  free(u);
  fuzz_fix_block_trailer(p, limit, ih.offset, ih.size);
}

static void exercise(const uint8_t *data, size_t size) {
  char path[512];
  fuzz_write_file("000009.ldb", data, size, path, sizeof path);
  uint64_t n = 0;
  ldb_read_stats_t st = {0};
  err_t err;
  ldb_table_scan(lsm_io_default(), path, visit, &n, &st, &err);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  exercise(data, size);
  uint8_t *c = fuzz_copy(data, size);
  fix_crcs(c, size);
  if (size && memcmp(c, data, size) != 0) exercise(c, size);
  free(c);
  return 0;
}

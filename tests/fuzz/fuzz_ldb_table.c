/* Fuzz target: the LevelDB table reader (ldb_table_scan_tagged, ldb_table_read_blocks and
 * ldb_table_tag in lsm_hooks/leveldb_format/ldb_table.c): footer, index block, data blocks, raw and
 * snappy-compressed, and the table's tag.
 *
 * The input is a whole .ldb file, written to a scratch file (the reader takes a path). It
 * is scanned as given and again as a copy whose checksums were recomputed: the index
 * block's trailer, then (after decompressing the index if it is snappy) the trailer of
 * every data block the index lists, so that fuzzing reaches the block decoding behind the
 * checks. Each time the data blocks the whole-table read reported are then read again on
 * their own, and one more block at a place taken from the input's first 16 bytes (anywhere,
 * the file's end and beyond included).
 * Invariants checked: entries handed to the visitor have a known type and in-bounds
 * lengths; the reported blocks are ascending and non-overlapping; reading them on their own
 * succeeds when the whole read did, with the same entries, and counts their bytes; the tag
 * the whole read took from its bytes is the one ldb_table_tag reads from the file.
 */
#include "fuzz_util.h"

#include <snappy-c.h>

#include "lsm/block.h"
#include "lsm_hooks/leveldb_format/ldb_table.h"

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

#define MAX_REFS 4096

typedef struct blocks {
  block_ref_t refs[MAX_REFS];
  size_t n;
  uint64_t entries; /* in those blocks */
  uint64_t bytes;   /* their contents and trailers */
} blocks_t;

static int end_block(void *arg, uint64_t offset, uint64_t size) {
  blocks_t *b = arg;
  fuzz_check(b->n == 0 || offset >= b->refs[b->n - 1].offset + b->refs[b->n - 1].size);
  if (b->n == MAX_REFS) return 1;
  b->refs[b->n++] = (block_ref_t){offset, size};
  b->bytes += size + BLOCK_TRAILER_BYTES;
  return 0;
}

static int visit_counted(void *arg, const ldb_entry_t *e) {
  return visit(&((blocks_t *)arg)->entries, e);
}

static void exercise(const uint8_t *data, size_t size) {
  char path[512];
  fuzz_write_file("000009.ldb", data, size, path, sizeof path);
  static blocks_t b;
  memset(&b, 0, sizeof b);
  ldb_read_stats_t st = {0};
  err_t err;
  uint64_t tag = 0, file_tag = 1;
  int rc =
      ldb_table_scan_tagged(env_default(), path, visit_counted, end_block, &b, &st, &tag, &err);
  int rc_tag = ldb_table_tag(env_default(), path, &file_tag, &err);
  if (rc == BFH_OK) fuzz_check(rc_tag == BFH_OK && tag == file_tag);
  uint64_t entries = b.entries;
  ldb_read_stats_t st2 = {0};
  b.entries = 0;
  int rc2 =
      ldb_table_read_blocks(env_default(), path, b.refs, b.n, visit, &b.entries, &st2, &err);
  if (rc == BFH_OK && b.n < MAX_REFS) { /* the whole read ended each block it visited */
    fuzz_check(rc2 == BFH_OK && b.entries == entries && st2.bytes_read == b.bytes);
  }
  if (size >= 16) {
    block_ref_t any = {decode_fixed64(data) % (size + 64), decode_fixed64(data + 8) % (size + 64)};
    uint64_t n = 0;
    ldb_table_read_blocks(env_default(), path, &any, 1, visit, &n, NULL, &err);
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  exercise(data, size);
  uint8_t *c = fuzz_copy(data, size);
  fix_crcs(c, size);
  if (size && memcmp(c, data, size) != 0) exercise(c, size);
  free(c);
  return 0;
}

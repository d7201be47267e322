/* Fuzz target: the RocksDB table reader (rdb_table_scan_tagged, rdb_table_read_blocks,
 * rdb_table_tag, rdb_table_props_read and rdb_table_index_rfile with its range tombstones in
 * lsm_hooks/rocksdb_format/rdb_table.c): footers
 * (legacy and new), metaindex, properties, index blocks (binary, partitioned, delta-encoded),
 * data blocks with and without their hash map, the range-deletion block, every compressor.
 *
 * The input is a whole .sst file, written to a scratch file (the reader takes a path). It is
 * read as given and, when it has the new footer, again as a copy whose footer names checksum
 * type 0 (none), so that fuzzing reaches the decoding behind the checksums without recomputing
 * them (their kind is the footer's to choose). Each time the data blocks the whole-table read
 * reported are then read again on their own, and one more block at a place taken from the
 * input's first 16 bytes (anywhere, the file's end and beyond included).
 * Invariants checked: entries handed to the visitor have a type a table may hold (range
 * tombstones only after the data blocks) and in-bounds lengths; reading the reported blocks
 * on their own succeeds when the whole read did, with the same entries; the tag the whole
 * read took from its bytes is the one rdb_table_tag reads from the file; the properties the
 * whole read returned are those rdb_table_props_read returns; the index read lists the blocks
 * the whole read reported and hands over the same range tombstones (type, begin, end, seq).
 * Seeds: tables written by stock RocksDB, in tests/fuzz/regress/rdb_table/.
 */
#include "fuzz_util.h"

#include "lsm/block.h"
#include "lsm_hooks/rocksdb_format/rdb_table.h"

static volatile uint8_t sink;

typedef struct counts {
  uint64_t entries, range_dels;
} counts_t;

static int visit(void *arg, const rdb_entry_t *e) {
  counts_t *c = arg;
  switch (e->type) {
    case RDB_TYPE_DELETION:
    case RDB_TYPE_VALUE:
    case RDB_TYPE_MERGE:
    case RDB_TYPE_SINGLE_DELETION:
    case RDB_TYPE_BLOB_INDEX:
    case RDB_TYPE_DELETION_WITH_TIMESTAMP:
    case RDB_TYPE_WIDE_COLUMN_ENTITY:
      fuzz_check(c->range_dels == 0); /* data entries come before the tombstones */
      c->entries++;
      break;
    case RDB_TYPE_RANGE_DELETION:
      c->range_dels++;
      break;
    default:
      fuzz_check(0);
  }
  fuzz_check(e->seq <= RDB_MAX_SEQUENCE);
  if (e->key_len) sink ^= e->key[0] ^ e->key[e->key_len - 1];
  if (e->val_len) sink ^= e->val[0] ^ e->val[e->val_len - 1];
  return 0;
}

#define MAX_REFS 4096

typedef struct blocks {
  block_ref_t refs[MAX_REFS];
  size_t n;
  counts_t c;
} blocks_t;

static int end_block(void *arg, uint64_t offset, uint64_t size) {
  blocks_t *b = arg;
  if (b->n == MAX_REFS) return 1;
  b->refs[b->n++] = (block_ref_t){offset, size};
  return 0;
}

static int visit_counted(void *arg, const rdb_entry_t *e) {
  return visit(&((blocks_t *)arg)->c, e);
}

typedef struct index_read {
  uint64_t blocks, tombs;
  int bad; /* a tombstone of another type */
} index_read_t;

static int index_block(void *arg, const uint8_t *key, size_t key_len, uint64_t offset,
                       uint64_t size) {
  (void)offset, (void)size;
  if (key_len) sink ^= key[0] ^ key[key_len - 1];
  ((index_read_t *)arg)->blocks++;
  return 0;
}

static int index_tomb(void *arg, const rdb_entry_t *e) {
  index_read_t *x = arg;
  x->tombs++;
  if (e->type != RDB_TYPE_RANGE_DELETION || e->seq > RDB_MAX_SEQUENCE) x->bad = 1;
  if (e->key_len) sink ^= e->key[0] ^ e->key[e->key_len - 1];
  if (e->val_len) sink ^= e->val[0] ^ e->val[e->val_len - 1];
  return 0;
}

static int same_str(const char *a, const char *b) {
  return (!a && !b) || (a && b && strcmp(a, b) == 0);
}

static void exercise(const uint8_t *data, size_t size) {
  char path[512];
  fuzz_write_file("000009.sst", data, size, path, sizeof path);
  static blocks_t b;
  memset(&b, 0, sizeof b);
  rdb_read_stats_t st = {0};
  err_t err;
  uint64_t tag = 0, file_tag = 1;
  rdb_table_props_t props, props2;
  int rc = rdb_table_scan_tagged(env_default(), path, visit_counted, end_block, &b, &st, &tag,
                                 &props, &err);
  int rc_tag = rdb_table_tag(env_default(), path, &file_tag, &err);
  int rc_props = rdb_table_props_read(env_default(), path, &props2, &err);
  if (rc == BFH_OK) {
    fuzz_check(rc_tag == BFH_OK && tag == file_tag);
    fuzz_check(rc_props == BFH_OK && props.num_entries == props2.num_entries &&
               props.index_type == props2.index_type && same_str(props.cf_name, props2.cf_name));
    fuzz_check(st.entries == b.c.entries + b.c.range_dels && st.range_dels == b.c.range_dels);
  }
  rdb_table_props_release(&props);
  rdb_table_props_release(&props2);
  env_rfile_t *f = NULL;
  if (env_open_read(env_default(), path, &f, &err) == BFH_OK) {
    index_read_t x = {0};
    int rc_index = rdb_table_index_rfile(f, path, index_block, index_tomb, &x, NULL, NULL, &err);
    fuzz_check(!x.bad);
    /* The index read also checks the index keys, which the whole read does not use: it may
       refuse a table the whole read accepts, but only as damage, and when it succeeds it
       names the same blocks and range deletions. */
    if (rc == BFH_OK && b.n < MAX_REFS)
      fuzz_check(rc_index == BFH_E_CORRUPT ||
                 (rc_index == BFH_OK && x.blocks == b.n && x.tombs == b.c.range_dels));
    env_rfile_close(f);
  }
  counts_t c2 = {0};
  rdb_read_stats_t st2 = {0};
  int rc2 = rdb_table_read_blocks(env_default(), path, b.refs, b.n, visit, &c2, &st2, &err);
  if (rc == BFH_OK && b.n < MAX_REFS) /* the whole read ended each block it visited */
    fuzz_check(rc2 == BFH_OK && c2.entries == b.c.entries && c2.range_dels == 0);
  if (size >= 16) {
    block_ref_t any = {decode_fixed64(data) % (size + 64), decode_fixed64(data + 8) % (size + 64)};
    counts_t c3 = {0};
    rdb_table_read_blocks(env_default(), path, &any, 1, visit, &c3, NULL, &err);
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  exercise(data, size);
  if (size >= RDB_FOOTER_BYTES && decode_fixed64(data + size - 8) == RDB_TABLE_MAGIC &&
      data[size - RDB_FOOTER_BYTES] != RDB_CHECKSUM_NONE) {
    uint8_t *c = fuzz_copy(data, size);
    c[size - RDB_FOOTER_BYTES] = RDB_CHECKSUM_NONE;
    exercise(c, size);
    free(c);
  }
  return 0;
}

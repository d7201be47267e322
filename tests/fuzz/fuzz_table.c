/* Fuzz target: the own engine's table reader (lsm/table.c) — footer, index, meta index and
 * key filter at open, then a full iteration, a scan by value, gets and meta block reads.
 *
 * The input is a whole table file, written to a scratch file (table_open maps a path). It
 * is opened twice: as given, and as a copy whose checksums were recomputed — every data and
 * meta block listed by the index and meta index, those two blocks, and the footer — so
 * that fuzzing reaches the parsing behind the checks.
 */
#include "fuzz_util.h"

#include "filters/blocked_filter.h"
#include "util/env.h"
#include "lsm/table.h"

static int visit(void *arg, const void *key, size_t key_len, const void *val, size_t val_len,
                 uint64_t seq, int type) {
  (void)key, (void)key_len, (void)val, (void)val_len, (void)seq, (void)type;
  (*(uint64_t *)arg)++;
  return 0;
}

static void fix_crcs(uint8_t *p, size_t n) {
  if (n < TABLE_FOOTER_BYTES) return;
  uint64_t limit = n - TABLE_FOOTER_BYTES;
  uint8_t *f = p + limit;
  block_handle_t mh, ih;
  const uint8_t *q = block_handle_decode(f, f + 40, &mh);
  if (q) q = block_handle_decode(q, f + 40, &ih);
  if (q) {
    if (fuzz_fix_block_trailer(p, limit, ih.offset, ih.size))
      fuzz_fix_blocks_listed(p, limit, p + ih.offset, (size_t)ih.size);
    if (fuzz_fix_block_trailer(p, limit, mh.offset, mh.size))
      fuzz_fix_blocks_listed(p, limit, p + mh.offset, (size_t)mh.size);
    /* Listed blocks may overlap the index blocks: make those right last. */
    fuzz_fix_block_trailer(p, limit, ih.offset, ih.size);
    fuzz_fix_block_trailer(p, limit, mh.offset, mh.size);
  }
  encode_fixed32(f + 52, crc32c_mask(crc32c_value(f, 52)));
}

static void exercise(const uint8_t *data, size_t size) {
  char path[512];
  fuzz_write_file("000007.sst", data, size, path, sizeof path);
  table_t *t = NULL;
  err_t err;
  if (table_open(env_default(), path, 7, &t, &err) != BFH_OK) return;
  uint64_t n = 0;
  iterator_t *it = table_iterator_create(t);
  fuzz_check(it != NULL);
  for (iterator_seek_first(it); iterator_valid(it); iterator_next(it)) n++;
  iterator_status(it, &err);
  iterator_seek(it, "k\0\0\0\0\0\0\0\0", 9);
  iterator_destroy(it);
  table_scan(t, visit, &n, NULL, &err);
  table_scan_value(t, data, size < 8 ? size : 8, visit, &n, NULL, &err);
  static const char *const keys[] = {"", "a", "k000000000000001", "\xff\xff"};
  for (size_t i = 0; i < sizeof keys / sizeof *keys; i++) {
    size_t kl = strlen(keys[i]);
    lsm_lookup_t out;
    uint8_t stack[64]; /* small: a block of the input spills to the heap */
    table_buf_t buf;
    table_buf_init(&buf, stack, sizeof stack);
    table_get(t, keys[i], kl, blocked_filter_key_hash(keys[i], kl), UINT64_MAX >> 8, &buf, &out,
              &err);
    table_buf_release(&buf);
  }
  static const char *const metas[] = {TABLE_KEY_FILTER_NAME, "bfh.value_filter"};
  for (size_t i = 0; i < sizeof metas / sizeof *metas; i++) {
    void *meta;
    size_t msize;
    uint64_t moff;
    if (table_read_meta(t, metas[i], &meta, &msize, &moff, &err) == BFH_OK) free(meta);
  }
  table_stats_t ts;
  table_get_stats(t, &ts);
  table_unref(t);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  exercise(data, size);
  uint8_t *c = fuzz_copy(data, size);
  fix_crcs(c, size);
  if (size && memcmp(c, data, size) != 0) exercise(c, size);
  free(c);
  return 0;
}

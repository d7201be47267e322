/* Fuzz target: the block reader (lsm/block.c) — block_parse, the cursor (seek_first, next,
 * seek), block_scan_value (skipping and decoding every entry), block_scan_containing (needles
 * of one byte and of several), the block iterator and block_handle_decode.
 *
 * The input is the contents of one block (no trailer: block contents carry no checksum of
 * their own, so every input reaches the decoder). Seek targets and the scanned value are
 * taken from the input itself so that they sometimes hit real keys and values.
 * Invariant checked: a cursor walk and the iterator visit the same number of entries.
 */
#include "fuzz_util.h"

#include "lsm/block.h"

static int count_visit(void *arg, const uint8_t *key, size_t key_len, const uint8_t *val,
                       uint32_t val_len, const uint8_t *prev, size_t prev_len) {
  (void)key, (void)key_len, (void)val, (void)val_len, (void)prev, (void)prev_len;
  (*(uint64_t *)arg)++;
  return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  block_handle_t h;
  block_handle_decode(data, data + size, &h);

  /* A private copy, so that reads past the input are reported by ASan at its end. */
  uint8_t *c = fuzz_copy(data, size);
  block_t b;
  if (block_parse(&b, c, size) == 0) {
    block_cursor_t cur;
    block_cursor_init(&cur, &b, bytewise_compare);
    uint64_t walked = 0;
    for (block_cursor_seek_first(&cur); block_cursor_valid(&cur); block_cursor_next(&cur)) walked++;
    int walk_corrupt = block_cursor_corrupt(&cur);
    size_t tlen = size < 24 ? size : 24;
    block_cursor_seek(&cur, c, tlen);
    if (block_cursor_valid(&cur)) block_cursor_next(&cur);
    block_cursor_seek(&cur, c + size - tlen, tlen);
    block_cursor_seek(&cur, "", 0);
    block_cursor_release(&cur);

    /* Both scans by value: the skipping one trusts the restart array (a crafted one can
       make it miss what the decoding one finds), but neither may read out of bounds. */
    uint64_t matched = 0, entries = 0;
    size_t vlen = size < 8 ? size : 8;
    block_scan_value(&b, c, vlen, count_visit, &matched, &entries);
    block_scan_value(&b, c + size - vlen, vlen, count_visit, &matched, &entries);
    block_scan_value_all(&b, c, vlen, count_visit, &matched, &entries);
    /* The scan for needles (taken from the input, as the value is) skips by the same
       restart array: it too may not read out of bounds. */
    block_needle_t nd[3] = {{c, vlen}, {c + size - vlen, vlen}, {c + size / 2, size ? 1 : 0}};
    if (vlen) block_scan_containing(&b, nd, size ? 3 : 2, count_visit, &matched, &entries);

    iterator_t *it = block_iterator_create(c, size, bytewise_compare);
    fuzz_check(it != NULL);
    uint64_t iterated = 0;
    for (iterator_seek_first(it); iterator_valid(it); iterator_next(it)) {
      size_t kn, vn;
      iterator_key(it, &kn);
      iterator_value(it, &vn);
      iterated++;
    }
    err_t err;
    int st = iterator_status(it, &err);
    iterator_seek(it, c, tlen);
    iterator_destroy(it);
    fuzz_check(iterated == walked);
    fuzz_check((st != BFH_OK) == (walk_corrupt != 0));
  }
  free(c);
  return 0;
}

/* Fuzz target: the range filter (filters/range_filter.c): its decoder, and its build.
 *
 * Each input is decoded as given and again with its trailing CRC recomputed over all the
 * bytes before it, so that the header, length and list checks behind the checksum are
 * reached. Invariants checked:
 * - a filter that decodes encodes back to the same bytes, and ranges asked of it read
 *   nothing outside its lists;
 * - a filter built from the input read as codes (8 bytes each, the first byte's bits choosing
 *   the bits per key and the range size) says "maybe" for every range holding one of them.
 */
#include "fuzz_util.h"

#include "filters/range_filter.h"

static void exercise(const uint8_t *data, size_t size) {
  range_filter_t *f = NULL;
  err_t err;
  err_clear(&err);
  if (range_filter_decode(data, size, &f, &err) != BFH_OK) {
    fuzz_check(f == NULL && err.msg[0] != '\0');
    return;
  }
  fuzz_check(range_filter_encoded_size(f) == size);
  uint8_t *out = malloc(size);
  fuzz_check(out != NULL);
  range_filter_encode(f, out);
  fuzz_check(memcmp(out, data, size) == 0);
  free(out);
  range_filter_may_contain(f, 0, UINT64_MAX);
  range_filter_may_contain(f, 12345, 12345 + 1000);
  range_filter_may_contain(f, UINT64_MAX - 5000, UINT64_MAX);
  range_filter_destroy(f);
}

static void build_holds_every_code(const uint8_t *data, size_t size) {
  if (size < 1) return;
  unsigned bits = RANGE_FILTER_MIN_BITS + data[0] % 20, log2 = data[0] >> 3;
  size_t n = (size - 1) / 8;
  uint64_t *codes = calloc(n ? n : 1, sizeof *codes);
  fuzz_check(codes != NULL);
  for (size_t i = 0; i < n; i++) codes[i] = decode_fixed64(data + 1 + 8 * i);
  range_filter_t *f = NULL;
  err_t err;
  fuzz_check(range_filter_build(codes, n, bits, log2, 7, &f, &err) == BFH_OK);
  for (size_t i = 0; i < n; i++) {
    uint64_t c = codes[i], back = c & 0x3ff, ahead = (c >> 10) & 0xfff;
    fuzz_check(range_filter_may_contain(f, c, c));
    fuzz_check(range_filter_may_contain(f, c >= back ? c - back : 0,
                                        c <= UINT64_MAX - ahead ? c + ahead : UINT64_MAX));
  }
  range_filter_destroy(f);
  free(codes);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  fuzz_as_given_and_checksummed(data, size, exercise);
  build_holds_every_code(data, size);
  return 0;
}

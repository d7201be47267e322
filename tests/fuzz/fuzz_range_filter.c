/* Fuzz target: the range filter (filters/range_filter.c): its decoder, and its build.
 *
 * Each input is decoded as given and again with its trailing CRC recomputed over all the
 * bytes before it, so that the header, length and list checks behind the checksum are
 * reached. Invariants checked:
 * - a filter that decodes encodes back to the same bytes, and ranges asked of it read
 *   nothing outside its lists;
 * - a head (range_filter_decode_head) that decodes encodes back to the same bytes, and ranges
 *   asked of it with a body made of the input's bytes read nothing outside that body and
 *   answer 0, 1 or an error with a message;
 * - a filter built from the input read as codes (8 bytes each, the first byte's bits choosing
 *   the bits per key and the range size) says "maybe" for every range holding one of them,
 *   whole and split into its head and body, and the split one answers as the whole.
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

typedef struct body {
  const uint8_t *bytes;
  size_t len;
} body_t;

static int read_body(void *arg, uint64_t off, size_t len, void *buf, err_t *err) {
  const body_t *b = arg;
  if (off > b->len || len > b->len - off) return err_set(err, BFH_E_CORRUPT, "past the body");
  memcpy(buf, b->bytes + off, len);
  return BFH_OK;
}

static void exercise_head(const uint8_t *data, size_t size) {
  range_filter_t *f = NULL;
  err_t err;
  err_clear(&err);
  if (range_filter_decode_head(data, size, &f, &err) != BFH_OK) {
    fuzz_check(f == NULL && err.msg[0] != '\0');
    return;
  }
  fuzz_check(range_filter_head_size(f) == size);
  uint8_t *out = malloc(size);
  fuzz_check(out != NULL);
  range_filter_encode_head(f, out);
  fuzz_check(memcmp(out, data, size) == 0);
  free(out);
  body_t body = {data, size};
  const uint64_t lo[] = {0, 12345, UINT64_MAX - 5000, 1u << 20};
  for (size_t i = 0; i < sizeof lo / sizeof lo[0]; i++) {
    err_clear(&err);
    int rc = range_filter_ask(f, lo[i], lo[i] + 1000, read_body, &body, NULL, &err);
    fuzz_check(rc == 0 || rc == 1 || (rc < 0 && err.msg[0] != '\0'));
    fuzz_check(range_filter_ask(f, lo[i], lo[i] + 1000, NULL, NULL, NULL, &err) >= 0);
  }
  range_filter_verify_body(f, read_body, &body, &err);
  range_filter_destroy(f);
}

static void build_holds_every_code(const uint8_t *data, size_t size) {
  if (size < 1) return;
  unsigned bits = RANGE_FILTER_MIN_BITS + data[0] % 20, log2 = data[0] >> 3;
  size_t n = (size - 1) / 8;
  uint64_t *codes = calloc(n ? n : 1, sizeof *codes);
  fuzz_check(codes != NULL);
  for (size_t i = 0; i < n; i++) codes[i] = decode_fixed64(data + 1 + 8 * i);
  range_filter_t *f = NULL, *h = NULL;
  err_t err;
  fuzz_check(range_filter_build(codes, n, bits, log2, 7, &f, &err) == BFH_OK);
  size_t hlen = range_filter_head_size(f), blen = range_filter_body_size(f);
  uint8_t *head = malloc(hlen), *bytes = malloc(blen + 1);
  fuzz_check(head != NULL && bytes != NULL);
  range_filter_encode_head(f, head);
  range_filter_encode_body(f, bytes);
  fuzz_check(range_filter_decode_head(head, hlen, &h, &err) == BFH_OK);
  body_t body = {bytes, blen};
  fuzz_check(range_filter_verify_body(h, read_body, &body, &err) == BFH_OK);
  for (size_t i = 0; i < n; i++) {
    uint64_t c = codes[i], back = c & 0x3ff, ahead = (c >> 10) & 0xfff;
    uint64_t lo = c >= back ? c - back : 0, hi = c <= UINT64_MAX - ahead ? c + ahead : UINT64_MAX;
    fuzz_check(range_filter_may_contain(f, c, c));
    fuzz_check(range_filter_may_contain(f, lo, hi));
    fuzz_check(range_filter_ask(h, c, c, read_body, &body, NULL, &err) == 1);
    fuzz_check(range_filter_ask(h, lo, hi, read_body, &body, NULL, &err) == 1);
    /* Any range: the split filter answers as the whole one. */
    uint64_t a = c ^ (ahead << 20), b = a > UINT64_MAX - back ? UINT64_MAX : a + back;
    fuzz_check(range_filter_ask(h, a, b, read_body, &body, NULL, &err) ==
               range_filter_may_contain(f, a, b));
  }
  range_filter_destroy(h);
  range_filter_destroy(f);
  free(head);
  free(bytes);
  free(codes);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  fuzz_as_given_and_checksummed(data, size, exercise);
  fuzz_as_given_and_checksummed(data, size, exercise_head);
  build_holds_every_code(data, size);
  return 0;
}

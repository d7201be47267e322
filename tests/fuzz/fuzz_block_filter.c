/* Fuzz target: the block filter decoder (block_filter_deserialize in
 * filters/block_filter.c), and probes of what it accepts.
 *
 * Each input is decoded as given and again with its trailing CRC recomputed over all the
 * bytes before it, so that the size, row and ref checks behind the checksum are reached.
 * Invariants checked: a filter that decodes serializes back to the same bytes; its refs are
 * ascending and do not overlap; probes list ascending block indexes below the block count
 * and do not read outside the rows (ASan).
 */
#include "fuzz_util.h"

#include "filters/block_filter.h"

static void check_refs(const block_filter_t *f) {
  uint64_t until = 0;
  for (uint32_t j = 0; j < block_filter_blocks(f); j++) {
    block_ref_t r = block_filter_ref(f, j);
    fuzz_check(r.offset >= until && r.size > 0 && r.size <= UINT64_MAX - r.offset);
    until = r.offset + r.size;
  }
}

static void check_probe(const block_filter_t *f, uint64_t hash, uint32_t *out) {
  uint32_t n = block_filter_probe(f, hash, out);
  fuzz_check(n <= block_filter_blocks(f));
  for (uint32_t i = 0; i < n; i++) {
    fuzz_check(out[i] < block_filter_blocks(f));
    fuzz_check(i == 0 || out[i] > out[i - 1]);
  }
}

static void exercise(const uint8_t *data, size_t size) {
  block_filter_t *f = NULL;
  err_t err;
  if (block_filter_deserialize(data, size, &f, &err) != BFH_OK) {
    fuzz_check(f == NULL);
    return;
  }
  fuzz_check(block_filter_serialized_size(f) == size);
  uint8_t *out = malloc(size);
  fuzz_check(out != NULL);
  block_filter_serialize(f, out);
  fuzz_check(memcmp(out, data, size) == 0);
  free(out);
  uint32_t bits = block_filter_bits_per_value(f);
  fuzz_check(bits >= 1 && bits <= BLOCK_FILTER_MAX_BITS);
  fuzz_check(block_filter_memory(f) > 0);
  check_refs(f);
  uint32_t *blocks = malloc(((size_t)block_filter_blocks(f) + 1) * sizeof *blocks);
  fuzz_check(blocks != NULL);
  check_probe(f, 0, blocks);
  check_probe(f, UINT64_MAX, blocks);
  for (size_t i = 0; i + 8 <= size && i < 64; i += 8)
    check_probe(f, decode_fixed64(data + i), blocks);
  free(blocks);
  block_filter_destroy(f);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  fuzz_as_given_and_checksummed(data, size, exercise);
  return 0;
}

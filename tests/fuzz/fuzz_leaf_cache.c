/* Fuzz target: the sidecar filter cache file of the LevelDB engine (leaf_cache_load in
 * lsm_hooks/leaf_cache.c): the 32-byte header, then the serialized value filter.
 *
 * The input is a whole .vf file, written to a scratch file (the loader takes a path). It is
 * loaded twice with the expectations (table number and size; m, k, seed) taken from the
 * input itself, so that the comparisons can pass: once as given, once with the header CRC
 * and the filter's trailing CRC recomputed, so that the value filter decoder behind them is
 * reached. m is capped (it sizes the loader's buffer: in the engine it comes from the
 * options, never from the file).
 * Invariant checked: a filter that loads has the m, k and seed asked for.
 */
#include "fuzz_util.h"

#include "lsm_hooks/leaf_cache.h"

#define MAX_M (1u << 22)

static void exercise(const uint8_t *data, size_t size) {
  uint64_t number = 0, tsize = 0, m = 2000000, seed = 0;
  uint32_t k = 3;
  if (size >= LEAF_CACHE_HEADER_BYTES) {
    number = decode_fixed64(data + 8);
    tsize = decode_fixed64(data + 16);
  }
  if (size >= LEAF_CACHE_HEADER_BYTES + VALUE_FILTER_HEADER_BYTES) {
    const uint8_t *v = data + LEAF_CACHE_HEADER_BYTES;
    m = decode_fixed64(v + 8) % MAX_M;
    k = decode_fixed32(v + 16);
    seed = decode_fixed64(v + 24);
  }
  char path[512];
  fuzz_write_file("000011.vf", data, size, path, sizeof path);
  value_filter_t *f = NULL;
  err_t err;
  if (leaf_cache_load(lsm_io_default(), path, number, tsize, m, k, seed, &f, &err) == BFH_OK) {
    fuzz_check(f->m == m && f->k == k && f->seed == seed);
    value_filter_destroy(f);
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  exercise(data, size);
  uint8_t *c = fuzz_copy(data, size);
  if (size >= LEAF_CACHE_HEADER_BYTES) {
    encode_fixed32(c + 28, crc32c_mask(crc32c_value(c, 28)));
    if (size >= LEAF_CACHE_HEADER_BYTES + 4)
      encode_fixed32(c + size - 4, crc32c_mask(crc32c_value(c + LEAF_CACHE_HEADER_BYTES,
                                                            size - 4 - LEAF_CACHE_HEADER_BYTES)));
    if (memcmp(c, data, size) != 0) exercise(c, size);
  }
  free(c);
  return 0;
}

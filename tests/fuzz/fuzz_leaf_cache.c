/* Fuzz target: the sidecar filter cache file of the LevelDB engine (leaf_cache_load in
 * lsm_hooks/index/leaf_cache.c): the 40-byte header (version 3: table number, size and tag), the
 * serialized value filter, then (flag LEAF_CACHE_HAS_BLOCKS) the serialized block filter.
 *
 * The input is a whole .vf file, written to a scratch file (the loader takes a path). It is
 * loaded twice with the expectations (table number, size and tag; m, k, seed) taken from the
 * input itself, so that the comparisons can pass: once as given, once with the header CRC,
 * the value filter's trailing CRC and the block filter's trailing CRC (at the end of the
 * input) recomputed, so that the decoders behind them are reached. m is capped (it sizes
 * the loader's buffer: in the engine it comes from the options, never from the file).
 * Invariants checked: a filter that loads has the m, k and seed asked for, and a header of
 * version 3 that names the table asked for (a file of another tag never loads); a block filter
 * comes only with the flag, and its refs are ascending and non-overlapping.
 */
#include "fuzz_util.h"

#include "lsm_hooks/index/leaf_cache.h"

#define MAX_M (1u << 22)

static void check_blocks(const block_filter_t *b) {
  uint64_t end = 0;
  for (uint32_t i = 0; i < block_filter_blocks(b); i++) {
    block_ref_t r = block_filter_ref(b, i);
    fuzz_check(i == 0 || r.offset >= end);
    end = r.offset + r.size;
  }
}

static void exercise(const uint8_t *data, size_t size, uint64_t m) {
  leaf_cache_table_t t = {0};
  uint64_t seed = 0;
  uint32_t k = 3;
  if (size >= LEAF_CACHE_HEADER_BYTES) {
    t.number = decode_fixed64(data + 8);
    t.size = decode_fixed64(data + 16);
    t.tag = decode_fixed64(data + 24);
    t.stamp = decode_fixed64(data + 32);
  }
  if (size >= LEAF_CACHE_HEADER_BYTES + VALUE_FILTER_HEADER_BYTES) {
    const uint8_t *v = data + LEAF_CACHE_HEADER_BYTES;
    k = decode_fixed32(v + 16);
    seed = decode_fixed64(v + 24);
  }
  char path[512];
  fuzz_write_file("000011.vf", data, size, path, sizeof path);
  value_filter_t *f = NULL;
  block_filter_t *blocks = NULL;
  err_t err;
  if (leaf_cache_load(env_default(), path, &t, m, k, seed, &f, &blocks, &err) == BFH_OK) {
    fuzz_check(f->m == m && f->k == k && f->seed == seed);
    fuzz_check(decode_fixed32(data + 4) == LEAF_CACHE_VERSION);
    fuzz_check(!blocks || (decode_fixed32(data + 40) & LEAF_CACHE_HAS_BLOCKS));
    if (blocks) check_blocks(blocks);
    value_filter_destroy(f);
    block_filter_destroy(blocks);
    /* The same file for other contents of the same table is stale. */
    leaf_cache_table_t other = t;
    other.tag ^= 1;
    f = NULL;
    blocks = NULL;
    fuzz_check(leaf_cache_load(env_default(), path, &other, m, k, seed, &f, &blocks, &err) ==
               BFH_E_CORRUPT);
    fuzz_check(!f && !blocks);
  }
  /* Bound by the stamp: loads only a file of that stamp (never 0), and gives its tag. */
  leaf_cache_table_t s = t;
  s.tag ^= 0x55;
  f = NULL;
  blocks = NULL;
  if (leaf_cache_load_stamped(env_default(), path, &s, m, k, seed, &f, &blocks, &err) == BFH_OK) {
    fuzz_check(t.stamp != 0 && s.tag == t.tag);
    fuzz_check(f->m == m && f->k == k && f->seed == seed);
    value_filter_destroy(f);
    block_filter_destroy(blocks);
    leaf_cache_table_t other = t;
    other.stamp ^= 1;
    f = NULL;
    blocks = NULL;
    fuzz_check(leaf_cache_load_stamped(env_default(), path, &other, m, k, seed, &f, &blocks,
                                       &err) == BFH_E_CORRUPT);
    fuzz_check(!f && !blocks);
  }
}

/* The CRC of p[from, to - 4) written at to - 4, if that fits in size bytes. */
static void fix_crc(uint8_t *p, size_t size, size_t from, size_t to) {
  if (to >= from + 4 && to <= size)
    encode_fixed32(p + to - 4, crc32c_mask(crc32c_value(p + from, to - 4 - from)));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  uint64_t m = 2000000;
  if (size >= LEAF_CACHE_HEADER_BYTES + VALUE_FILTER_HEADER_BYTES)
    m = decode_fixed64(data + LEAF_CACHE_HEADER_BYTES + 8) % MAX_M;
  exercise(data, size, m);
  uint8_t *c = fuzz_copy(data, size);
  if (size >= LEAF_CACHE_HEADER_BYTES) {
    encode_fixed32(c + 44, crc32c_mask(crc32c_value(c, 44)));
    size_t leaf_end = LEAF_CACHE_HEADER_BYTES + value_filter_serialized_size(m);
    if (size > leaf_end) { /* a block filter after the leaf */
      fix_crc(c, size, LEAF_CACHE_HEADER_BYTES, leaf_end);
      fix_crc(c, size, leaf_end, size);
    } else {
      fix_crc(c, size, LEAF_CACHE_HEADER_BYTES, size);
    }
    if (memcmp(c, data, size) != 0) exercise(c, size, m);
  }
  free(c);
  return 0;
}

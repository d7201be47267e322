/* Fuzz target: the sidecar filter cache file of the LevelDB engine (leaf_cache_load in
 * index/leaf_cache.c): the 48-byte header (versions 4 and 5: table number, size, tag
 * and stamp), the serialized value filter, then (flag LEAF_CACHE_HAS_BLOCKS) the serialized
 * block filter, or (version 5, flags LEAF_CACHE_HAS_BLOCKS | LEAF_CACHE_HAS_MAP) the section
 * sizes, the block filter, the value-to-block map's head and its chunks.
 *
 * The input is a whole .vf file, written to a scratch file (the loader takes a path). It is
 * loaded twice with the expectations (table number, size and tag; m, k, seed) taken from the
 * input itself, so that the comparisons can pass: once as given, once with the header CRC,
 * the value filter's trailing CRC, the block filter's trailing CRC and (with a map) the
 * sections' and the map head's CRCs recomputed, so that the decoders behind them are reached. m is
 * capped (it sizes the loader's buffer: in the engine it comes from the options, never from the
 * file). Invariants checked: a filter that loads has the m, k and seed asked for, and a header of
 * version 4 or 5 that names the table asked for (a file of another tag never loads); a block
 * filter comes only with the flag, and its refs are ascending and non-overlapping; a map
 * comes only with the map flag, in place of the block filter, and its probes (reading chunks
 * from the file) give block numbers below its count, or an error. The map head read alone by
 * the stamp (leaf_cache_map_head) comes only from a file with a map and a stamp, and the map
 * loaded against it (leaf_cache_load_map_by_head) refuses another stamp or another head.
 */
#include "fuzz_util.h"

#include "index/leaf_cache.h"

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
    fuzz_check(decode_fixed32(data + 4) == LEAF_CACHE_VERSION ||
               decode_fixed32(data + 4) == LEAF_CACHE_VERSION_MAP_V2 ||
               decode_fixed32(data + 4) == LEAF_CACHE_VERSION_NO_MAP);
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
  /* With the map wanted: a file with one gives it (no block filter), its chunks read. */
  value_block_map_t *map = NULL;
  f = NULL;
  blocks = NULL;
  leaf_cache_table_t mt = t;
  if (leaf_cache_load_map(env_default(), path, &mt, 0, m, k, seed, &f, &blocks, &map, &err) ==
      BFH_OK) {
    fuzz_check(!map || (decode_fixed32(data + 40) & LEAF_CACHE_HAS_MAP));
    fuzz_check(!(map && blocks));
    if (map) {
      uint32_t out[VALUE_BLOCK_MAP_MAX_BLOCKS], n = 0;
      for (uint64_t h = 0; h < 8; h++) {
        uint64_t hash = h * 0x9e3779b97f4a7c15ull;
        if (value_block_map_probe(map, hash, NULL, NULL, out, NULL, &n, NULL, NULL, &err) == BFH_OK)
          for (uint32_t i = 0; i < n; i++) fuzz_check(out[i] < value_block_map_blocks(map));
      }
    }
    value_filter_destroy(f);
    block_filter_destroy(blocks);
    value_block_map_destroy(map);
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
  /* The map head alone, by the stamp (what the persisted index copies), and the map loaded
     against a copy of it: another stamp or another head is never taken. */
  uint8_t *head = NULL;
  size_t hl = 0;
  if (leaf_cache_map_head(env_default(), path, &t, m, &head, &hl, &err) == BFH_OK) {
    fuzz_check(t.stamp != 0 && (decode_fixed32(data + 40) & LEAF_CACHE_HAS_MAP));
    map = NULL;
    if (leaf_cache_load_map_by_head(env_default(), path, &t, m, head, hl, &map, &err) == BFH_OK) {
      uint32_t out[VALUE_BLOCK_MAP_MAX_BLOCKS], n = 0;
      if (value_block_map_probe(map, 0x9e3779b97f4a7c15ull, NULL, NULL, out, NULL, &n, NULL, NULL, &err) ==
          BFH_OK)
        for (uint32_t i = 0; i < n; i++) fuzz_check(out[i] < value_block_map_blocks(map));
      value_block_map_destroy(map);
      map = NULL;
      leaf_cache_table_t other = t;
      other.stamp ^= 1;
      fuzz_check(leaf_cache_load_map_by_head(env_default(), path, &other, m, head, hl, &map,
                                             &err) == BFH_E_CORRUPT && !map);
      if (hl) {
        head[hl / 2] ^= 1;
        fuzz_check(leaf_cache_load_map_by_head(env_default(), path, &t, m, head, hl, &map,
                                               &err) == BFH_E_CORRUPT && !map);
      }
    }
    free(head);
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
    size_t sec = leaf_end + LEAF_CACHE_MAP_SECTION_BYTES;
    if ((decode_fixed32(c + 40) & LEAF_CACHE_HAS_MAP) && size >= sec) { /* the map's sections */
      fix_crc(c, size, LEAF_CACHE_HEADER_BYTES, leaf_end);
      fix_crc(c, size, leaf_end, sec);
      uint64_t bl = decode_fixed64(c + leaf_end), hl = decode_fixed64(c + leaf_end + 8);
      if (bl <= size - sec) {
        fix_crc(c, size, sec, sec + (size_t)bl);
        if (hl <= size - sec - bl) fix_crc(c, size, sec + (size_t)bl, sec + (size_t)(bl + hl));
      }
    } else if (size > leaf_end) { /* a block filter after the leaf */
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

/* Fuzz target: the value-to-block map (index/value_block_map.c): its head decoder
 * (value_block_map_open) and the probes and range filters of a map it accepts over fuzzed
 * chunk bytes, and the builder's zones and range filters.
 *
 * Input: fixed32 n | n bytes of head (n taken modulo what is left) | the chunks block. The
 * head is decoded as given and again with its trailing CRC made right; the chunks are probed
 * as given and again with every chunk's CRC made right, so that the checks behind both
 * checksums are reached. Invariants: a probe gives BFH_OK or BFH_E_CORRUPT (never reads
 * outside the chunks: ASan), and on BFH_OK names ascending, distinct blocks below the
 * block count; refs are ascending and end below 4 GiB; a head of version 5 or 6 that opens
 * gives back the zones its bytes hold (ascending ids, each lo <= hi or the empty lo =
 * UINT64_MAX, hi = 0), and zone_rules_out agrees with them; one of version 6 keeps a range
 * filter for exactly the zones whose range has a filter head, on a zone that holds a code,
 * and a range asked of it over the chunks (as given, past them included) gives 0, 1 or
 * BFH_E_CORRUPT (0 or 1 from the head alone), as does value_block_map_verify BFH_OK or
 * BFH_E_CORRUPT.
 *
 * The same bytes, read again as a builder's script (build_with_zones): byte 0 picks version
 * 4, 5 or 6, then records of 10 bytes: op, id (one of ZONE_IDS, more than a map holds), fixed64
 * code: record a code, declare the id, or add a value (closing a block now and then). The
 * builder's returns are checked against a model (BFH_E_INVALID exactly for a 65th id), the
 * map it writes against the brute-force least and largest code of each id: every zone, and
 * zone_rules_out over ranges about its ends and the codes; a ruled-out range holds no code
 * recorded; in version 6 each zone with a code has a range filter that answers "maybe" for
 * every range holding a code recorded, and the map verifies. The head written is then
 * exercised as above, and again with one byte changed (CRC made right), so that the fuzzer
 * reaches every check of a head of version 5 or 6.
 */
#include "fuzz_util.h"

#include "index/value_block_map.h"

typedef struct chunks {
  const uint8_t *p;
  size_t n;
} chunks_t;

static int read_chunks(void *arg, uint64_t off, size_t len, void *buf, err_t *err) {
  const chunks_t *c = arg;
  if (off > c->n || len > c->n - off) return err_set(err, BFH_E_CORRUPT, "past the chunks");
  memcpy(buf, c->p + off, len);
  return BFH_OK;
}

static void probe_all(const value_block_map_t *m, const chunks_t *c, const uint8_t *data,
                      size_t size) {
  uint32_t *out = malloc(((size_t)value_block_map_blocks(m) + 1) * sizeof *out);
  uint32_t *again = malloc(((size_t)value_block_map_blocks(m) + 1) * sizeof *again);
  uint64_t *bounds = malloc(((size_t)value_block_map_blocks(m) + 1) * sizeof *bounds);
  fuzz_check(out != NULL && again != NULL && bounds != NULL);
  uint64_t hashes[8] = {0, UINT64_MAX};
  size_t nh = 2;
  for (size_t i = 0; i + 8 <= size && nh < 8; i += 8) hashes[nh++] = decode_fixed64(data + i);
  for (size_t h = 0; h < nh; h++) {
    uint32_t n = 0;
    err_t err;
    int rc = value_block_map_probe(m, hashes[h], read_chunks, (void *)c, out, NULL, &n, NULL, NULL,
                                   &err);
    fuzz_check(rc == BFH_OK || rc == BFH_E_CORRUPT);
    if (rc != BFH_OK) fuzz_check(n == 0);
    for (uint32_t i = 0; i < n; i++) {
      fuzz_check(out[i] < value_block_map_blocks(m));
      fuzz_check(i == 0 || out[i] > out[i - 1]);
    }
    /* With their sequence bounds, the same blocks. */
    uint32_t n2 = 0;
    int rc2 = value_block_map_probe(m, hashes[h], read_chunks, (void *)c, again, bounds, &n2, NULL,
                                    NULL, &err);
    fuzz_check(rc2 == rc && n2 == n);
    for (uint32_t i = 0; i < n; i++) fuzz_check(again[i] == out[i]);
  }
  free(out);
  free(again);
  free(bounds);
}

/* A range filter's answers over the chunks c: 0, 1 or BFH_E_CORRUPT (a reader past the chunks
   is the corruption of a chunks block too short); from the head alone, 0 or 1. */
static void ask_ranges(const value_block_map_t *m, uint64_t id, uint64_t lo, uint64_t hi,
                       const chunks_t *c) {
  const uint64_t ends[][2] = {{lo, lo}, {hi, hi}, {lo, hi}, {0, UINT64_MAX}, {lo, lo + 1023}};
  for (size_t i = 0; i < sizeof ends / sizeof *ends; i++) {
    if (ends[i][0] > ends[i][1]) continue;
    err_t err;
    int rc = value_block_map_range(m, id, ends[i][0], ends[i][1], read_chunks, (void *)c, NULL,
                                   NULL, &err);
    fuzz_check(rc == 0 || rc == 1 || rc == BFH_E_CORRUPT);
    rc = value_block_map_range(m, id, ends[i][0], ends[i][1], NULL, NULL, NULL, NULL, &err);
    fuzz_check(rc == 0 || rc == 1);
  }
}

/* The zones of a head that opened, read from its bytes: a head of version 5 ends with them,
   before its CRC, and one of version 6 follows them with a range for each; one of another
   version has none. */
static void check_zones(const value_block_map_t *m, const uint8_t *head, size_t hl,
                        const chunks_t *c) {
  uint64_t lo, hi;
  const uint32_t version = decode_fixed32(head + 4);
  if (version != 5 && version != 6) {
    fuzz_check(value_block_map_zone(m, decode_fixed64(head), &lo, &hi) == 0);
    fuzz_check(lo == 0 && hi == UINT64_MAX);
    fuzz_check(value_block_map_zone_rules_out(m, 0, 0, UINT64_MAX) == 0);
    fuzz_check(value_block_map_has_range(m, decode_fixed64(head)) == 0);
    return;
  }
  fuzz_check(hl >= VALUE_BLOCK_MAP_HEAD_FIXED + 4);
  uint32_t nz = decode_fixed32(head + 52);
  size_t at = VALUE_BLOCK_MAP_HEAD_FIXED + 16 * (size_t)value_block_map_blocks(m) +
              (4 + (size_t)value_block_map_sketch_bits(m) / 8) * value_block_map_chunks(m);
  fuzz_check(nz <= VALUE_BLOCK_MAP_MAX_ZONES &&
             at + (size_t)nz * VALUE_BLOCK_MAP_ZONE_BYTES <= hl - 4);
  const uint8_t *z = head + at;
  size_t range = at + (size_t)nz * VALUE_BLOCK_MAP_ZONE_BYTES; /* where zone i's range lies */
  if (version == 5) fuzz_check(range == hl - 4);
  for (uint32_t i = 0; i < nz; i++, z += VALUE_BLOCK_MAP_ZONE_BYTES) {
    uint64_t id = decode_fixed64(z), zlo = decode_fixed64(z + 8), zhi = decode_fixed64(z + 16);
    fuzz_check(i == 0 || id > decode_fixed64(z - VALUE_BLOCK_MAP_ZONE_BYTES));
    fuzz_check(value_block_map_zone(m, id, &lo, &hi) == 1 && lo == zlo && hi == zhi);
    int has = 0;
    if (version == 6) { /* the range's ref and filter head lie inside the head */
      fuzz_check(range + VALUE_BLOCK_MAP_RANGE_REF_BYTES <= hl - 4);
      has = decode_fixed32(head + range) > 0;
      range += VALUE_BLOCK_MAP_RANGE_REF_BYTES + decode_fixed32(head + range);
      fuzz_check(range <= hl - 4);
    }
    fuzz_check(value_block_map_has_range(m, id) == has);
    ask_ranges(m, id, zlo, zhi, c);
    if (zlo > zhi) { /* empty: rules out everything, and has no range filter */
      fuzz_check(!has);
      fuzz_check(zlo == UINT64_MAX && zhi == 0);
      fuzz_check(value_block_map_zone_rules_out(m, id, 0, UINT64_MAX) == 1);
      continue;
    }
    fuzz_check(value_block_map_zone_rules_out(m, id, zlo, zlo) == 0);
    fuzz_check(value_block_map_zone_rules_out(m, id, zhi, zhi) == 0);
    fuzz_check(value_block_map_zone_rules_out(m, id, 0, UINT64_MAX) == 0);
    if (zlo > 0) fuzz_check(value_block_map_zone_rules_out(m, id, 0, zlo - 1) == 1);
    if (zhi < UINT64_MAX)
      fuzz_check(value_block_map_zone_rules_out(m, id, zhi + 1, UINT64_MAX) == 1);
  }
  if (version == 6) fuzz_check(range == hl - 4); /* the ranges end the head */
}

static void exercise_map(const uint8_t *head, size_t hl, const uint8_t *ch, size_t cl) {
  value_block_map_t *m = NULL;
  err_t err;
  if (value_block_map_open(head, hl, &m, &err) != BFH_OK) {
    fuzz_check(m == NULL);
    return;
  }
  fuzz_check(value_block_map_memory(m) > 0);
  chunks_t c = {ch, cl};
  check_zones(m, head, hl, &c);
  int rc = value_block_map_verify(m, read_chunks, &c, 0, &err);
  fuzz_check(rc == BFH_OK || rc == BFH_E_CORRUPT);
  uint64_t until = 0;
  for (uint32_t j = 0; j < value_block_map_blocks(m); j++) {
    block_ref_t r = value_block_map_ref(m, j);
    fuzz_check(r.offset >= until && r.offset + r.size <= UINT32_MAX);
    until = r.offset + r.size;
  }
  probe_all(m, &c, head, hl);
  /* Every chunk's CRC made right (where the chunk lies inside the bytes given). */
  uint8_t *fixed = fuzz_copy(ch, cl);
  for (uint32_t k = 0; k < value_block_map_chunks(m); k++) {
    uint64_t off;
    size_t len;
    value_block_map_chunk_span(m, k, &off, &len);
    if (off > cl || len > cl - off || len < 4) break;
    uint8_t cb[4];
    encode_fixed32(cb, k);
    uint32_t crc = crc32c_extend(crc32c_value(cb, 4), fixed + off, len - 4);
    encode_fixed32(fixed + off + len - 4, crc32c_mask(crc));
  }
  chunks_t f = {fixed, cl};
  probe_all(m, &f, head, hl);
  free(fixed);
  value_block_map_destroy(m);
}

/* ---- Maps built with zones ------------------------------------------------------------- */

#define ZONE_IDS 72        /* the ids a script names: 8 more than a map holds */
#define SCRIPT_BYTES 65536 /* read of an input as a script: blocks stay far below 65,536 */

/* The id a script's byte names: both ends of the 64 bits among them. */
static uint64_t zone_id(uint32_t k) {
  return k == 0 ? 0 : k == 1 ? UINT64_MAX : k * 0x9e3779b97f4a7c15ull;
}

typedef struct zone_model {
  int recorded;    /* declared or given a code */
  uint64_t lo, hi; /* the least and largest code (UINT64_MAX, 0: none) */
} zone_model_t;

typedef struct code {
  uint32_t k;
  uint64_t code;
} code_t;

/* Does zone k of the model rule out [lo, hi]? Exactly when it was recorded and holds no code
   (declared only) or its least and largest code lie both below or both above [lo, hi]: the
   answer zone_rules_out must give. Checks by brute force that no code recorded for k lies in
   a range it rules out. */
static int rules_out_model(const zone_model_t *z, const code_t *codes, size_t ncodes, uint32_t k,
                           uint64_t lo, uint64_t hi) {
  int want = z[k].recorded && (z[k].lo > z[k].hi || z[k].hi < lo || z[k].lo > hi);
  for (size_t i = 0; want && i < ncodes; i++)
    fuzz_check(codes[i].k != k || codes[i].code < lo || codes[i].code > hi);
  return want;
}

/* 1 if a code recorded for k lies in [lo, hi]: a range filter that says "no" is wrong. */
static int holds_code(const code_t *codes, size_t ncodes, uint32_t k, uint64_t lo, uint64_t hi) {
  for (size_t i = 0; i < ncodes; i++)
    if (codes[i].k == k && codes[i].code >= lo && codes[i].code <= hi) return 1;
  return 0;
}

static void build_with_zones(const uint8_t *data, size_t size) {
  value_block_map_builder_t *b = value_block_map_builder_create();
  fuzz_check(b != NULL);
  const uint32_t version = size == 0 ? 6 : data[0] % 8 == 0 ? 4 : data[0] % 8 == 1 ? 5 : 6;
  fuzz_check(value_block_map_builder_set_format(b, version, VALUE_BLOCK_MAP_SKETCH_BITS) == BFH_OK);
  zone_model_t z[ZONE_IDS];
  for (uint32_t k = 0; k < ZONE_IDS; k++) z[k] = (zone_model_t){0, UINT64_MAX, 0};
  code_t *codes = malloc((size / 10 + 1) * sizeof *codes);
  fuzz_check(codes != NULL);
  size_t ncodes = 0, nzones = 0;
  uint64_t offset = 0;
  for (size_t at = 1; at + 10 <= size && at < SCRIPT_BYTES; at += 10) {
    const uint8_t op = data[at];
    const uint32_t k = data[at + 1] % ZONE_IDS;
    const uint64_t code = decode_fixed64(data + at + 2);
    if (op % 4 == 3) { /* a value */
      fuzz_check(value_block_map_builder_add(b, code, code >> 8) == BFH_OK);
      if (op & 0x80) {
        fuzz_check(value_block_map_builder_end_block(b, offset, 100) == BFH_OK);
        offset += 100;
      }
      continue;
    }
    const int fits = z[k].recorded || nzones < VALUE_BLOCK_MAP_MAX_ZONES;
    int rc = op % 4 == 2 ? value_block_map_builder_declare_zone(b, zone_id(k))
                         : value_block_map_builder_zone(b, zone_id(k), code);
    fuzz_check(rc == (fits ? BFH_OK : BFH_E_INVALID));
    if (!fits) continue;
    nzones += !z[k].recorded;
    z[k].recorded = 1;
    if (op % 4 == 2) continue;
    if (code < z[k].lo) z[k].lo = code;
    if (code > z[k].hi) z[k].hi = code;
    codes[ncodes++] = (code_t){k, code};
  }
  fuzz_check(value_block_map_builder_end_block(b, offset, 100) == BFH_OK);
  uint8_t *head, *chunks;
  size_t hl, cl;
  fuzz_check(value_block_map_builder_finish(b, &head, &hl, &chunks, &cl) == BFH_OK);
  value_block_map_builder_destroy(b);
  value_block_map_t *m = NULL;
  err_t err;
  fuzz_check(value_block_map_open(head, hl, &m, &err) == BFH_OK);
  chunks_t c = {chunks, cl};
  for (size_t i = 0; version == 6 && i < ncodes; i++)
    fuzz_check(value_block_map_range(m, zone_id(codes[i].k), codes[i].code, codes[i].code,
                                     read_chunks, &c, NULL, NULL, &err) == 1);
  fuzz_check(value_block_map_verify(m, read_chunks, &c, 0, &err) == BFH_OK);
  for (uint32_t k = 0; k < ZONE_IDS; k++) {
    uint64_t lo, hi;
    int has = value_block_map_zone(m, zone_id(k), &lo, &hi);
    fuzz_check(value_block_map_has_range(m, zone_id(k)) == (version == 6 && z[k].lo <= z[k].hi));
    if (version == 4 || !z[k].recorded) {
      fuzz_check(has == 0 && lo == 0 && hi == UINT64_MAX);
      fuzz_check(value_block_map_zone_rules_out(m, zone_id(k), 0, 0) == 0);
      continue;
    }
    fuzz_check(has == 1 && lo == z[k].lo && hi == z[k].hi);
    /* Ranges from the zone's ends (and one past them, wrapping) and the codes recorded. */
    uint64_t ends[8] = {z[k].lo, z[k].hi, z[k].lo - 1, z[k].hi + 1, 0, UINT64_MAX};
    size_t ne = 6;
    for (size_t i = 0; i < ncodes && ne < 8; i++) ends[ne++] = codes[(i * 7 + k) % ncodes].code;
    for (size_t x = 0; x < ne; x++)
      for (size_t y = 0; y < ne; y++) {
        if (ends[x] > ends[y]) continue;
        fuzz_check(value_block_map_zone_rules_out(m, zone_id(k), ends[x], ends[y]) ==
                   rules_out_model(z, codes, ncodes, k, ends[x], ends[y]));
        int rc = value_block_map_range(m, zone_id(k), ends[x], ends[y], read_chunks, &c, NULL, NULL,
                                       &err);
        fuzz_check(rc == 1 || (rc == 0 && !holds_code(codes, ncodes, k, ends[x], ends[y])));
      }
  }
  value_block_map_destroy(m);
  exercise_map(head, hl, chunks, cl);
  /* One byte changed, where the input says, the CRC made right. */
  if (size >= 4 && hl > 4) {
    size_t at = decode_fixed32(data) % (hl - 4);
    head[at] ^= (uint8_t)(data[size - 1] | 1);
    encode_fixed32(head + hl - 4, crc32c_mask(crc32c_value(head, hl - 4)));
    exercise_map(head, hl, chunks, cl);
  }
  free(head);
  free(chunks);
  free(codes);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  build_with_zones(data, size);
  if (size < 4) return 0;
  size_t hl = decode_fixed32(data) % (size - 4 + 1);
  uint8_t *head = fuzz_copy(data + 4, hl);
  const uint8_t *ch = data + 4 + hl;
  size_t cl = size - 4 - hl;
  exercise_map(head, hl, ch, cl);
  if (hl >= 4) {
    encode_fixed32(head + hl - 4, crc32c_mask(crc32c_value(head, hl - 4)));
    exercise_map(head, hl, ch, cl);
  }
  free(head);
  return 0;
}

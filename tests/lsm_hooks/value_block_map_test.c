/* value_block_map: a map names every block holding a value, including a fingerprint run
   that spans several chunks, and nothing for a value it does not hold (bounded: a fingerprint
   collision is about entries / 2^32 per probe, so at most 2 of 20,000 absent probes). A zone's
   range filter (version 6) says "maybe" for every range holding a code, and for at most 2% of
   empty ranges of 1,024 codes (Grafite's bound: 0.39%). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "bfh.h"
#include "filters/range_filter.h"
#include "index/value_block_map.h"
#include "tests/test_util.h"
#include "util/coding.h"
#include "util/crc32c.h"

typedef struct mem {
  const uint8_t *p;
  size_t n;
  uint64_t reads;
  uint64_t bytes; /* what the reads returned */
} mem_t;

static int read_mem(void *arg, uint64_t off, size_t len, void *buf, err_t *err) {
  mem_t *m = arg;
  if (off > m->n || len > m->n - off) return err_set(err, BFH_E_CORRUPT, "past the end");
  memcpy(buf, m->p + off, len);
  m->reads++;
  m->bytes += len;
  return BFH_OK;
}

/* Finishes b (and destroys it) into its head and chunks (malloc'd, the caller frees them), and
   opens the map of that head. */
static value_block_map_t *finish_map(value_block_map_builder_t *b, uint8_t **head, size_t *hl,
                                     uint8_t **chunks, size_t *cl) {
  assert_int_equal(value_block_map_builder_finish(b, head, hl, chunks, cl), BFH_OK);
  value_block_map_builder_destroy(b);
  value_block_map_t *m = NULL;
  err_t err;
  if (value_block_map_open(*head, *hl, &m, &err) != BFH_OK) fail_msg("open: %s", err.msg);
  return m;
}

static uint64_t hash_of(uint32_t block, uint32_t i) {
  uint64_t x = ((uint64_t)block << 32 | i) * 0x9e3779b97f4a7c15ull;
  return x ^ (x >> 29);
}

#define NBLOCKS 1200
#define PER_BLOCK 20
#define SHARED 0x5eedull /* a value in every block: a run of NBLOCKS entries, 4 chunks */

/* The body, for a head of `version` with sketches of `bits` per chunk; absent values read
   between lo and hi chunks of 20,000 probes. */
static void names_every_block(uint32_t version, uint32_t bits, uint64_t lo, uint64_t hi) {
  value_block_map_builder_t *b = value_block_map_builder_create();
  assert_non_null(b);
  if (version) assert_int_equal(value_block_map_builder_set_format(b, version, bits), BFH_OK);
  for (uint32_t j = 0; j < NBLOCKS; j++) {
    for (uint32_t i = 0; i < PER_BLOCK; i++)
      assert_int_equal(value_block_map_builder_add(b, hash_of(j, i), 0), BFH_OK);
    assert_int_equal(value_block_map_builder_add(b, SHARED, 0), BFH_OK);
    assert_int_equal(value_block_map_builder_end_block(b, (uint64_t)j * 4096, 4000), BFH_OK);
    assert_int_equal(value_block_map_builder_end_block(b, (uint64_t)j * 4096 + 4000, 10),
                     BFH_OK); /* a block without values: left out */
  }
  uint8_t *head, *chunks;
  size_t hl, cl;
  value_block_map_t *m = finish_map(b, &head, &hl, &chunks, &cl);
  err_t err;
  assert_int_equal(decode_fixed32(head + 4), version ? version : 6);
  assert_int_equal(value_block_map_sketch_bits(m), bits);
  assert_int_equal(value_block_map_blocks(m), NBLOCKS);
  assert_int_equal(value_block_map_entries(m), NBLOCKS * (PER_BLOCK + 1));
  mem_t mem = {chunks, cl, 0, 0};
  uint32_t *out = malloc(NBLOCKS * sizeof *out), n = 0;
  assert_non_null(out);
  for (uint32_t j = 0; j < NBLOCKS; j += 7) {
    assert_int_equal(value_block_map_probe(m, hash_of(j, j % PER_BLOCK), read_mem, &mem, out, NULL,
                                           &n, NULL, NULL, &err),
                     BFH_OK);
    int named = 0;
    for (uint32_t i = 0; i < n; i++) named |= value_block_map_ref(m, out[i]).offset == j * 4096ull;
    assert_true(named);
  }
  uint64_t chunks_read = 0, bytes_read = 0;
  mem.reads = mem.bytes = 0;
  assert_int_equal(value_block_map_probe(m, SHARED, read_mem, &mem, out, NULL, &n, &chunks_read,
                                         &bytes_read, &err),
                   BFH_OK);
  assert_int_equal(n, NBLOCKS); /* the run over several chunks, every block once */
  for (uint32_t i = 0; i < n; i++) assert_int_equal(out[i], i);
  assert_true(chunks_read >= NBLOCKS / VALUE_BLOCK_MAP_CHUNK_ENTRIES);
  assert_int_equal(chunks_read, mem.reads); /* counted as read, chunk by chunk */
  assert_int_equal(bytes_read, mem.bytes);
  uint32_t false_blocks = 0, ruled_out = 0;
  chunks_read = 0;
  for (uint32_t i = 0; i < 20000; i++) {
    uint64_t before = chunks_read;
    int no = value_block_map_rules_out(m, hash_of(NBLOCKS + 1, i));
    assert_int_equal(value_block_map_probe(m, hash_of(NBLOCKS + 1, i), read_mem, &mem, out, NULL,
                                           &n, &chunks_read, NULL, &err),
                     BFH_OK);
    if (no) { /* ruled out from memory: the probe names nothing and reads nothing */
      assert_int_equal(n, 0);
      assert_true(chunks_read == before);
      ruled_out++;
    }
    false_blocks += n;
  }
  /* Version 3 rules out every probe its sketch stops (20,000 less those that read); version 2
     only those outside the map's range (none here, nearly). */
  if (version != 2) assert_int_equal(ruled_out + chunks_read, 20000);
  /* Never a value the map holds. */
  for (uint32_t j = 0; j < NBLOCKS; j += 3)
    assert_int_equal(value_block_map_rules_out(m, hash_of(j, j % PER_BLOCK)), 0);
  assert_int_equal(value_block_map_rules_out(m, SHARED), 0);
  assert_true(false_blocks <= 2);
  /* The chunks' sketches spare most chunk reads of absent values: a fixed set of hashes, so
     the count is the same every run. */
  if (chunks_read <= lo || chunks_read >= hi)
    fail_msg("sketches of %u bits: %llu chunks read, not in (%llu, %llu)", bits,
             (unsigned long long)chunks_read, (unsigned long long)lo, (unsigned long long)hi);
  /* A damaged chunk is an error, never an answer. */
  chunks[100] ^= 0x04;
  uint32_t errors = 0;
  for (uint32_t j = 0; j < NBLOCKS; j++)
    errors += value_block_map_probe(m, hash_of(j, 0), read_mem, &mem, out, NULL, &n, NULL, NULL,
                                    &err) == BFH_E_CORRUPT;
  assert_true(errors > 0);
  free(out);
  free(head);
  free(chunks);
  value_block_map_destroy(m);
}

/* The default map (version 6, 1024 sketch bits per chunk: 1 - e^(-340/1024) = 28% of them
   set, about 5,700 of 20,000 absent probes read a chunk); versions 5, 4, 3 and 2 as earlier
   builds wrote them (2: 512 bits a chunk: 49%, about 9,800), still read; other sketch sizes (8
   bits: every probe reads; 8192: 4%). */
static void test_value_block_map_names_every_block(void **state) {
  (void)state;
  names_every_block(0, VALUE_BLOCK_MAP_SKETCH_BITS, 4500, 7000);
  names_every_block(5, VALUE_BLOCK_MAP_SKETCH_BITS, 4500, 7000);
  names_every_block(4, VALUE_BLOCK_MAP_SKETCH_BITS, 4500, 7000);
  names_every_block(3, VALUE_BLOCK_MAP_SKETCH_BITS, 4500, 7000);
  names_every_block(2, 512, 8000, 12000);
  names_every_block(3, 512, 8000, 12000);
  names_every_block(3, 8, 19000, 20001);
  names_every_block(3, 8192, 200, 1500);
}

/* The head's format is one of the five known: other versions and sketch sizes are refused by
   the builder, and a head whose sketch_bits is changed (and its CRC made good) does not
   open. */
static void test_value_block_map_head_formats(void **state) {
  (void)state;
  value_block_map_builder_t *b = value_block_map_builder_create();
  assert_non_null(b);
  assert_int_equal(value_block_map_builder_set_format(b, 2, 1024), BFH_E_INVALID);
  assert_int_equal(value_block_map_builder_set_format(b, 3, 12), BFH_E_INVALID);
  assert_int_equal(value_block_map_builder_set_format(b, 3, 0), BFH_E_INVALID);
  assert_int_equal(value_block_map_builder_set_format(b, 7, 1024), BFH_E_INVALID);
  assert_int_equal(value_block_map_builder_set_format(b, 1, 1024), BFH_E_INVALID);
  for (uint32_t i = 0; i < 1000; i++)
    assert_int_equal(value_block_map_builder_add(b, hash_of(1, i), 0), BFH_OK);
  assert_int_equal(value_block_map_builder_end_block(b, 0, 4000), BFH_OK);
  uint8_t *head, *chunks;
  size_t hl, cl;
  assert_int_equal(value_block_map_builder_finish(b, &head, &hl, &chunks, &cl), BFH_OK);
  value_block_map_builder_destroy(b);
  err_t err;
  value_block_map_t *m = NULL;
  const uint32_t bad[] = {2048, 512, 7, 0};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    uint8_t *h = malloc(hl);
    assert_non_null(h);
    memcpy(h, head, hl);
    encode_fixed32(h + 32, bad[i]);
    encode_fixed32(h + hl - 4, crc32c_mask(crc32c_value(h, hl - 4)));
    assert_int_equal(value_block_map_open(h, hl, &m, &err), BFH_E_CORRUPT);
    assert_null(m);
    free(h);
  }
  assert_int_equal(value_block_map_open(head, hl, &m, &err), BFH_OK);
  value_block_map_destroy(m);
  free(head);
  free(chunks);
}

/* A probe finds its chunk from where the fingerprint falls in the map's range and steps from
   there: with fingerprints far from uniform (2,000 entries in the top 1/256 of the range,
   a few spread below it) every value is still named, including
   values whose fingerprint equals a chunk's fence: the spread ones lie in the first chunk,
   where their share of the range would place them in a later one. */
static void test_value_block_map_skewed_fingerprints(void **state) {
  (void)state;
  value_block_map_builder_t *b = value_block_map_builder_create();
  assert_non_null(b);
  enum { LOW = 2000, HIGH = 8 };
  uint64_t *h = malloc((LOW + HIGH) * sizeof *h);
  assert_non_null(h);
  size_t n = 0, low = 0, high = 0;
  for (uint32_t i = 0; n < LOW + HIGH; i++) {
    uint64_t x = hash_of(7, i);
    uint32_t fp = value_block_map_fingerprint(x);
    if (fp >= 0xff000000u && low < LOW) {
      h[n++] = x;
      low++;
    } else if (fp < 0xff000000u && high < HIGH && i % 1000 == 0) {
      h[n++] = x;
      high++;
    }
  }
  for (size_t i = 0; i < n; i++) {
    assert_int_equal(value_block_map_builder_add(b, h[i], 0), BFH_OK);
    if (i % 40 == 39)
      assert_int_equal(value_block_map_builder_end_block(b, i * 4096ull, 4000), BFH_OK);
  }
  assert_int_equal(value_block_map_builder_end_block(b, n * 4096ull, 4000), BFH_OK);
  uint8_t *head, *chunks;
  size_t hl, cl;
  value_block_map_t *m = finish_map(b, &head, &hl, &chunks, &cl);
  err_t err;
  mem_t mem = {chunks, cl, 0, 0};
  uint32_t out[64], got = 0;
  for (size_t i = 0; i < n; i++) {
    assert_int_equal(
        value_block_map_probe(m, h[i], read_mem, &mem, out, NULL, &got, NULL, NULL, &err), BFH_OK);
    int named = 0;
    uint64_t want = (i / 40 * 40 + 39 < n ? i / 40 * 40 + 39 : n) * 4096ull;
    for (uint32_t j = 0; j < got; j++) named |= value_block_map_ref(m, out[j]).offset == want;
    assert_true(named);
  }
  free(h);
  free(head);
  free(chunks);
  value_block_map_destroy(m);
}

/* Sequence bounds: a probe gives each block it names a bound at least the largest sequence
   number of the block's entries of that value, and above it by less than one step of the
   16-bit quantization (a power of two, under twice (seq_hi - seq_lo) / 65535), over ranges of
   sequence numbers from one (every bound exact) to 2^56 - 1; a value added twice to a block is
   bounded by its later entry. A map of version 3 has no bounds. */
static void bounds_over(uint64_t lo, uint64_t span, uint32_t version) {
  enum { BLOCKS = 300, PER = 30 };
  value_block_map_builder_t *b = value_block_map_builder_create();
  assert_non_null(b);
  if (version) assert_int_equal(value_block_map_builder_set_format(b, version, 1024), BFH_OK);
  uint64_t *seq = malloc(BLOCKS * PER * sizeof *seq);
  assert_non_null(seq);
  uint64_t state = 0x5eed5eedull;
  for (uint32_t j = 0; j < BLOCKS; j++) {
    for (uint32_t i = 0; i < PER; i++) {
      state = state * 6364136223846793005ull + 1442695040888963407ull;
      uint64_t s = lo + (span ? (state >> 8) % (span + 1) : 0);
      if (j == 0 && i == 0) s = lo; /* the range's two ends are met */
      if (j == 1 && i == 0) s = lo + span;
      seq[j * PER + i] = s;
      assert_int_equal(value_block_map_builder_add(b, hash_of(j, i), s), BFH_OK);
    }
    /* Value 0 of the block again, older: the bound stays the larger. */
    assert_int_equal(value_block_map_builder_add(b, hash_of(j, 0), lo), BFH_OK);
    assert_int_equal(value_block_map_builder_end_block(b, (uint64_t)j * 4096, 4000), BFH_OK);
  }
  uint8_t *head, *chunks;
  size_t hl, cl;
  value_block_map_t *m = finish_map(b, &head, &hl, &chunks, &cl);
  mem_t mem = {chunks, cl, 0, 0};
  err_t err;
  uint32_t out[BLOCKS], n = 0;
  uint64_t bounds[BLOCKS];
  /* The step is a power of two, under twice the range's 65,535th part: 1 (exact) for a range
     of at most 65,535. */
  const uint64_t step = span <= 65535 ? 1 : 2 * (span / 65535 + 1);
  for (uint32_t j = 0; j < BLOCKS; j++)
    for (uint32_t i = 0; i < PER; i++) {
      assert_int_equal(value_block_map_probe(m, hash_of(j, i), read_mem, &mem, out, bounds, &n,
                                             NULL, NULL, &err),
                       BFH_OK);
      uint32_t at = n;
      for (uint32_t x = 0; x < n; x++)
        if (out[x] == j) at = x;
      assert_true(at < n);
      uint64_t s = seq[j * PER + i];
      if (version == 3) {
        assert_true(bounds[at] == VALUE_BLOCK_MAP_NO_BOUND);
        continue;
      }
      if (bounds[at] < s || bounds[at] - s >= step || bounds[at] > lo + span)
        fail_msg("block %u value %u: sequence %llu, bound %llu (range %llu + %llu)", j, i,
                 (unsigned long long)s, (unsigned long long)bounds[at], (unsigned long long)lo,
                 (unsigned long long)span);
    }
  free(seq);
  free(head);
  free(chunks);
  value_block_map_destroy(m);
}

static void test_value_block_map_sequence_bounds(void **state) {
  (void)state;
  bounds_over(0, 0, 0);
  bounds_over(77, 0, 0);
  bounds_over(1000, 60000, 0); /* a step of one: exact */
  bounds_over(5, 10000000, 0); /* a compaction's range */
  bounds_over(0, (1ull << 56) - 1, 0);
  bounds_over(1000, 60000, 3);
}

/* ---- Zones ------------------------------------------------------------------------------ */

static uint64_t next_rand(uint64_t *state) {
  uint64_t x = (*state += 0x9e3779b97f4a7c15ull);
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

/* The oracle of one attribute's zone: the least and largest code recorded, empty (lo > hi)
   when declared without one. */
typedef struct zone_model {
  uint64_t id, lo, hi;
} zone_model_t;

/* Adds blocks first to first + count - 1, 50 values each, to b (none when count is 0). */
static void add_blocks(value_block_map_builder_t *b, uint32_t first, uint32_t count) {
  for (uint32_t j = first; j < first + count; j++) {
    for (uint32_t i = 0; i < 50; i++)
      assert_int_equal(value_block_map_builder_add(b, hash_of(j, i), j * 50 + i), BFH_OK);
    assert_int_equal(value_block_map_builder_end_block(b, (uint64_t)j * 4096, 4000), BFH_OK);
  }
}

/* Checks m's zones against the model: each id's zone is its model's, and an id not in it
   (one of absent[0, nabsent)) has none. */
static void expect_zones(const value_block_map_t *m, const zone_model_t *z, size_t n,
                         const uint64_t *absent, size_t nabsent) {
  for (size_t i = 0; i < n; i++) {
    uint64_t lo = 1, hi = 1;
    assert_int_equal(value_block_map_zone(m, z[i].id, &lo, &hi), 1);
    if (lo != z[i].lo || hi != z[i].hi)
      fail_msg("zone of %llx: [%llx, %llx], recorded [%llx, %llx]", (unsigned long long)z[i].id,
               (unsigned long long)lo, (unsigned long long)hi, (unsigned long long)z[i].lo,
               (unsigned long long)z[i].hi);
  }
  for (size_t i = 0; i < nabsent; i++) {
    uint64_t lo = 1, hi = 1;
    assert_int_equal(value_block_map_zone(m, absent[i], &lo, &hi), 0);
    assert_true(lo == 0 && hi == UINT64_MAX);
    assert_int_equal(value_block_map_zone_rules_out(m, absent[i], 5, 5), 0);
  }
}

/* Where the ranges begin in a head of version 6: after its zones. */
static size_t ranges_at(const uint8_t *head) {
  return VALUE_BLOCK_MAP_HEAD_FIXED + 16 * (size_t)decode_fixed32(head + 8) +
         (4 + decode_fixed32(head + 32) / 8) * (size_t)decode_fixed32(head + 24) +
         VALUE_BLOCK_MAP_ZONE_BYTES * (size_t)decode_fixed32(head + 52);
}

/* Where zone i's range (its ref, then its filter's head) lies in a head of version 6. */
static size_t range_ref(const uint8_t *head, uint32_t i) {
  size_t at = ranges_at(head);
  while (i--) at += VALUE_BLOCK_MAP_RANGE_REF_BYTES + decode_fixed32(head + at);
  return at;
}

/* Zones round trip: several ids (0 and UINT64_MAX among them) with random codes, 0 and
   UINT64_MAX among those, recorded in no particular order, before, between and after the
   blocks; an id declared without a code reads back empty; an id never recorded has no zone.
   With values (3 blocks: one chunk) and without any. The head holds 24 bytes per zone, and
   the map's memory counts them; version 6 adds each zone's range (a 20-byte ref and its
   filter's head, none for the empty zone), the filters' bodies after the chunks (which are
   as version 5 writes them) and the filters' memory. */
static void zones_round_trip(uint32_t blocks, uint32_t version) {
  enum { IDS = 12, EMPTY = 5 };
  uint64_t state = 0x20e5ull + blocks;
  zone_model_t z[IDS];
  for (size_t i = 0; i < IDS; i++) z[i] = (zone_model_t){next_rand(&state), UINT64_MAX, 0};
  z[0].id = 0;
  z[1].id = UINT64_MAX;
  const uint64_t absent[] = {1, UINT64_MAX - 1, z[3].id + 1, z[3].id - 1};
  value_block_map_builder_t *b = value_block_map_builder_create();
  value_block_map_builder_t *plain = value_block_map_builder_create(); /* the same, no zones */
  assert_non_null(b);
  assert_non_null(plain);
  assert_int_equal(value_block_map_builder_set_format(b, version, 1024), BFH_OK);
  assert_int_equal(value_block_map_builder_set_format(plain, version, 1024), BFH_OK);
  assert_int_equal(value_block_map_builder_declare_zone(b, z[EMPTY].id), BFH_OK);
  for (uint32_t round = 0; round < 3; round++) {
    for (uint32_t k = 0; k < 200; k++) {
      size_t i = next_rand(&state) % IDS;
      if (i == EMPTY) continue;
      uint64_t code = next_rand(&state);
      if (k % 17 == 0) code = 0;
      if (k % 23 == 0) code = UINT64_MAX;
      if (i == 2) code = 77; /* one code only: lo = hi */
      assert_int_equal(value_block_map_builder_zone(b, z[i].id, code), BFH_OK);
      if (code < z[i].lo) z[i].lo = code;
      if (code > z[i].hi) z[i].hi = code;
    }
    assert_int_equal(value_block_map_builder_declare_zone(b, z[EMPTY].id), BFH_OK);
    assert_int_equal(value_block_map_builder_declare_zone(b, z[4].id), BFH_OK); /* no change */
    if (round < 2) {
      add_blocks(b, round * blocks, blocks);
      add_blocks(plain, round * blocks, blocks);
    }
  }
  uint8_t *head, *chunks, *ph, *pc;
  size_t hl, cl, phl, pcl;
  value_block_map_t *m = finish_map(b, &head, &hl, &chunks, &cl);
  value_block_map_t *p = finish_map(plain, &ph, &phl, &pc, &pcl);
  assert_int_equal(decode_fixed32(head + 4), version);
  assert_int_equal(decode_fixed32(head + 52), IDS);
  assert_int_equal(value_block_map_entries(m), 2 * blocks * 50);
  size_t range_bytes = 0, body_bytes = 0, filter_memory = 0;
  for (uint32_t i = 0; version == 6 && i < IDS; i++) {
    const uint8_t *ref = head + range_ref(head, i);
    const uint32_t fhl = decode_fixed32(ref);
    const int has = value_block_map_has_range(
        m, decode_fixed64(head + ranges_at(head) - (IDS - i) * VALUE_BLOCK_MAP_ZONE_BYTES));
    range_bytes += VALUE_BLOCK_MAP_RANGE_REF_BYTES + fhl;
    assert_int_equal(has, fhl > 0);
    if (!fhl) {
      assert_true(decode_fixed64(ref + 4) == 0 && decode_fixed64(ref + 12) == 0);
      continue;
    }
    range_filter_t *f = NULL;
    assert_int_equal(range_filter_decode_head(ref + VALUE_BLOCK_MAP_RANGE_REF_BYTES, fhl, &f, NULL),
                     BFH_OK);
    assert_int_equal(decode_fixed64(ref + 4), pcl + body_bytes); /* the bodies follow */
    assert_int_equal(decode_fixed64(ref + 12), range_filter_body_size(f));
    body_bytes += range_filter_body_size(f);
    filter_memory += range_filter_memory(f);
    range_filter_destroy(f);
  }
  assert_int_equal(hl, phl + IDS * VALUE_BLOCK_MAP_ZONE_BYTES + range_bytes);
  assert_int_equal(cl, pcl + body_bytes);
  assert_memory_equal(chunks, pc, pcl);
  /* A range filter in memory is its head decoded, and a pointer and an offset. */
  const size_t zones_memory = IDS * 3 * sizeof(uint64_t) + filter_memory;
  const size_t range_refs = version == 6 ? IDS * 2 * sizeof(uint64_t) : 0;
  assert_int_equal(value_block_map_memory(m),
                   value_block_map_memory(p) + zones_memory + range_refs);
  assert_true(z[EMPTY].lo == UINT64_MAX && z[EMPTY].hi == 0);
  expect_zones(m, z, IDS, absent, sizeof absent / sizeof *absent);
  expect_zones(p, NULL, 0, absent, sizeof absent / sizeof *absent);
  for (size_t i = 0; i < IDS; i++) { /* the map without zones knows nothing */
    uint64_t lo, hi;
    assert_int_equal(value_block_map_zone(p, z[i].id, &lo, &hi), 0);
  }
  /* The empty zone rules out every range, [0, UINT64_MAX] included. */
  assert_int_equal(value_block_map_zone_rules_out(m, z[EMPTY].id, 0, UINT64_MAX), 1);
  assert_int_equal(value_block_map_zone_rules_out(m, z[EMPTY].id, 0, 0), 1);
  /* Only version 6 keeps range filters, one for each zone that holds a code. */
  for (size_t i = 0; i < IDS; i++)
    assert_int_equal(value_block_map_has_range(m, z[i].id), version == 6 && i != EMPTY);
  for (size_t i = 0; i < sizeof absent / sizeof *absent; i++)
    assert_int_equal(value_block_map_has_range(m, absent[i]), 0);
  /* Values probe as before. */
  if (blocks) {
    mem_t mem = {chunks, cl, 0, 0};
    uint32_t out[8], n = 0;
    err_t err;
    assert_int_equal(
        value_block_map_probe(m, hash_of(1, 7), read_mem, &mem, out, NULL, &n, NULL, NULL, &err),
        BFH_OK);
    assert_int_equal(n, 1);
    assert_int_equal(out[0], 1);
  }
  free(head);
  free(chunks);
  free(ph);
  free(pc);
  value_block_map_destroy(m);
  value_block_map_destroy(p);
}

static void test_value_block_map_zones_round_trip(void **state) {
  (void)state;
  zones_round_trip(3, 6);
  zones_round_trip(0, 6);
  zones_round_trip(3, 5);
  zones_round_trip(0, 5);
}

/* One table's pairs, blocks and zone codes into b, from seed: nblocks blocks of up to 40
   values, each with a sequence number, and a code of zones 7 and 9 per value. */
static void fill_table(value_block_map_builder_t *b, uint64_t seed, uint32_t nblocks) {
  assert_int_equal(value_block_map_builder_declare_zone(b, 7), BFH_OK);
  assert_int_equal(value_block_map_builder_declare_zone(b, 9), BFH_OK);
  for (uint32_t j = 0; j < nblocks; j++) {
    uint32_t values = (uint32_t)(hash_of((uint32_t)seed, j) % 40);
    for (uint32_t i = 0; i < values; i++) {
      uint64_t h = hash_of(j + (uint32_t)seed * 1000, i);
      assert_int_equal(value_block_map_builder_add(b, h, seed * 100000 + j * 40 + i), BFH_OK);
      assert_int_equal(value_block_map_builder_zone(b, 7, h % 5000), BFH_OK);
      if (i % 3 == 0) assert_int_equal(value_block_map_builder_zone(b, 9, h >> 40), BFH_OK);
    }
    assert_int_equal(value_block_map_builder_end_block(b, (uint64_t)j * 4096, 4000), BFH_OK);
  }
}

/* A builder reset after a table (the value hook keeps one for the next table) writes the next
   table's head and chunks byte for byte as a new builder does: tables larger and smaller than
   the one before, and an empty one. */
static void test_value_block_map_builder_reset_as_new(void **state) {
  (void)state;
  value_block_map_builder_t *reused = value_block_map_builder_create();
  assert_non_null(reused);
  const uint32_t sizes[] = {500, 30, 0, 900, 3};
  for (uint64_t s = 0; s < sizeof sizes / sizeof *sizes; s++) {
    value_block_map_builder_t *fresh = value_block_map_builder_create();
    assert_non_null(fresh);
    fill_table(reused, s + 1, sizes[s]);
    fill_table(fresh, s + 1, sizes[s]);
    uint8_t *h1, *c1, *h2, *c2;
    size_t hl1, cl1, hl2, cl2;
    assert_int_equal(value_block_map_builder_finish(reused, &h1, &hl1, &c1, &cl1), BFH_OK);
    assert_int_equal(value_block_map_builder_finish(fresh, &h2, &hl2, &c2, &cl2), BFH_OK);
    assert_int_equal(hl1, hl2);
    assert_memory_equal(h1, h2, hl1);
    assert_int_equal(cl1, cl2);
    assert_memory_equal(c1, c2, cl1);
    free(h1);
    free(c1);
    free(h2);
    free(c2);
    value_block_map_builder_destroy(fresh);
    value_block_map_builder_reset(reused);
  }
  value_block_map_builder_destroy(reused);
}

/* A map with one zone of each given model (by id), opened. */
static value_block_map_t *map_with_zones(const zone_model_t *z, size_t n) {
  value_block_map_builder_t *b = value_block_map_builder_create();
  assert_non_null(b);
  add_blocks(b, 0, 2);
  for (size_t i = 0; i < n; i++) {
    if (z[i].lo > z[i].hi) {
      assert_int_equal(value_block_map_builder_declare_zone(b, z[i].id), BFH_OK);
      continue;
    }
    assert_int_equal(value_block_map_builder_zone(b, z[i].id, z[i].hi), BFH_OK);
    assert_int_equal(value_block_map_builder_zone(b, z[i].id, z[i].lo), BFH_OK);
  }
  uint8_t *head, *chunks;
  size_t hl, cl;
  value_block_map_t *m = finish_map(b, &head, &hl, &chunks, &cl);
  free(head);
  free(chunks);
  return m;
}

/* Does [lo, hi] (lo <= hi) miss the zone z? The brute force: z is empty, or wholly below or
   above it. */
static int misses(const zone_model_t *z, uint64_t lo, uint64_t hi) {
  return z->lo > z->hi || z->hi < lo || z->lo > hi;
}

static void expect_rules_out(const value_block_map_t *m, const zone_model_t *z, uint64_t lo,
                             uint64_t hi, int want) {
  int got = value_block_map_zone_rules_out(m, z->id, lo, hi);
  if (got != want)
    fail_msg("zone [%llx, %llx], range [%llx, %llx]: rules_out %d, want %d",
             (unsigned long long)z->lo, (unsigned long long)z->hi, (unsigned long long)lo,
             (unsigned long long)hi, got, want);
}

/* zone_rules_out is exact on a zone's boundaries: for a zone [a, b], [a - 1, a - 1] and
   [b + 1, b + 1] are ruled out, [a, a] and [b, b] are not, nor any range reaching into [a, b];
   a - 1 and b + 1 wrap at 0 and UINT64_MAX (zone [0, 5]: [UINT64_MAX, UINT64_MAX] is ruled
   out; zone [0, UINT64_MAX]: nothing is). An empty zone rules out everything, an id without a
   zone nothing, and a range with lo > hi is never ruled out. Then 20,000 random ranges near
   random zones against the brute force. */
static void test_value_block_map_zone_rules_out(void **state) {
  (void)state;
  const zone_model_t z[] = {
      {10, 1000, 2000}, {11, 0, 5}, {12, 7, UINT64_MAX},          {13, 0, UINT64_MAX},
      {14, 42, 42},     {15, 0, 0}, {16, UINT64_MAX, UINT64_MAX}, {17, UINT64_MAX, 0}, /* empty */
  };
  const size_t nz = sizeof z / sizeof *z;
  value_block_map_t *m = map_with_zones(z, nz);
  for (size_t i = 0; i + 1 < nz; i++) {
    const uint64_t a = z[i].lo, b = z[i].hi;
    expect_rules_out(m, &z[i], a - 1, a - 1, a > 0 || b < UINT64_MAX); /* wrapped: above b */
    expect_rules_out(m, &z[i], a, a, 0);
    expect_rules_out(m, &z[i], b, b, 0);
    expect_rules_out(m, &z[i], b + 1, b + 1, b < UINT64_MAX || a > 0); /* wrapped: below a */
    if (b < UINT64_MAX) expect_rules_out(m, &z[i], b + 1, UINT64_MAX, 1);
    if (a > 0) expect_rules_out(m, &z[i], 0, a - 1, 1);
    if (a > 0) expect_rules_out(m, &z[i], a - 1, a, 0);
    if (b < UINT64_MAX) expect_rules_out(m, &z[i], b, b + 1, 0);
    expect_rules_out(m, &z[i], 0, UINT64_MAX, 0);
    expect_rules_out(m, &z[i], b, a, 0); /* lo > hi (unless a = b): not a range */
  }
  expect_rules_out(m, &z[nz - 1], 0, UINT64_MAX, 1);
  expect_rules_out(m, &z[nz - 1], 0, 0, 1);
  expect_rules_out(m, &z[nz - 1], UINT64_MAX, UINT64_MAX, 1);
  const zone_model_t none = {99, 0, UINT64_MAX};
  expect_rules_out(m, &none, 3, 4, 0);
  value_block_map_destroy(m);

  /* Random zones (spans from 0 to all of 2^64) and ranges around their ends. */
  uint64_t st = 0x7a0e5ull;
  for (uint32_t round = 0; round < 20; round++) {
    zone_model_t r[VALUE_BLOCK_MAP_MAX_ZONES];
    for (size_t i = 0; i < VALUE_BLOCK_MAP_MAX_ZONES; i++) {
      uint64_t x = next_rand(&st), y = x + (next_rand(&st) >> (next_rand(&st) % 64));
      r[i] = (zone_model_t){i * 1000003, x < y ? x : y, x < y ? y : x};
      if (i % 16 == 3) r[i].lo = UINT64_MAX, r[i].hi = 0;
    }
    m = map_with_zones(r, VALUE_BLOCK_MAP_MAX_ZONES);
    for (uint32_t k = 0; k < 1000; k++) {
      const zone_model_t *zz = &r[next_rand(&st) % VALUE_BLOCK_MAP_MAX_ZONES];
      uint64_t ends[] = {zz->lo, zz->hi, next_rand(&st)};
      uint64_t lo = ends[next_rand(&st) % 3] + (next_rand(&st) % 5) - 2;
      uint64_t hi = ends[next_rand(&st) % 3] + (next_rand(&st) % 5) - 2;
      if (lo > hi) {
        uint64_t t = lo;
        lo = hi;
        hi = t;
      }
      expect_rules_out(m, zz, lo, hi, misses(zz, lo, hi));
    }
    value_block_map_destroy(m);
  }
}

/* Maps of versions 4, 3 and 2 hold no zones: the zones recorded are left out (the head is as
   long as before them), and value_block_map_zone gives 0 for every id. Nor do they or maps of
   version 5 hold range filters: a range is "maybe", whatever it is. */
static void test_value_block_map_zones_older_versions(void **state) {
  (void)state;
  const uint32_t versions[][2] = {{4, 1024}, {3, 1024}, {2, 512}, {5, 1024}};
  for (size_t v = 0; v < sizeof versions / sizeof *versions; v++) {
    value_block_map_builder_t *b = value_block_map_builder_create();
    assert_non_null(b);
    assert_int_equal(value_block_map_builder_set_format(b, versions[v][0], versions[v][1]), BFH_OK);
    assert_int_equal(value_block_map_builder_zone(b, 8, 100), BFH_OK);
    assert_int_equal(value_block_map_builder_declare_zone(b, 9), BFH_OK);
    add_blocks(b, 0, 2); /* 100 entries: one chunk */
    uint8_t *head, *chunks;
    size_t hl, cl;
    value_block_map_t *m = finish_map(b, &head, &hl, &chunks, &cl);
    const uint32_t version = versions[v][0];
    const size_t fixed = version == 5   ? VALUE_BLOCK_MAP_HEAD_FIXED
                         : version == 4 ? VALUE_BLOCK_MAP_HEAD_FIXED_V4
                         : version == 3 ? 36
                                        : 32;
    const size_t zones = version == 5 ? 2 : 0;
    assert_int_equal(decode_fixed32(head + 4), version);
    assert_int_equal(
        hl, fixed + 16 * 2 + 4 + versions[v][1] / 8 + zones * VALUE_BLOCK_MAP_ZONE_BYTES + 4);
    uint64_t lo, hi;
    assert_int_equal(value_block_map_zone(m, 8, &lo, &hi), version == 5);
    assert_int_equal(value_block_map_zone(m, 9, &lo, &hi), version == 5);
    assert_int_equal(value_block_map_zone_rules_out(m, 8, 101, 200), version == 5);
    assert_int_equal(value_block_map_zone_rules_out(m, 9, 0, 0), version == 5);
    assert_int_equal(value_block_map_has_range(m, 8), 0);
    mem_t mem = {chunks, cl, 0, 0};
    err_t err;
    assert_int_equal(value_block_map_range(m, 8, 101, 200, read_mem, &mem, NULL, NULL, &err), 1);
    assert_int_equal(value_block_map_range(m, 8, 100, 100, read_mem, &mem, NULL, NULL, &err), 1);
    assert_int_equal(mem.reads, 0);
    free(head);
    free(chunks);
    value_block_map_destroy(m);
  }
}

/* A copy of the first keep bytes of head opened after damage(copy) (may be NULL) and its CRC
   made good, so that the structural check, not the checksum, is what rejects it:
   BFH_E_CORRUPT with a message holding `says`. The copy is exactly keep bytes, so that a read
   past it is caught (ASan). */
static void expect_head_corrupt(const uint8_t *head, size_t keep,
                                void (*damage)(uint8_t *h, size_t hl, uint32_t nz),
                                const char *says) {
  uint8_t *h = malloc(keep);
  assert_non_null(h);
  memcpy(h, head, keep);
  if (damage) damage(h, keep, decode_fixed32(head + 52));
  encode_fixed32(h + keep - 4, crc32c_mask(crc32c_value(h, keep - 4)));
  value_block_map_t *m = NULL;
  err_t err;
  assert_int_equal(value_block_map_open(h, keep, &m, &err), BFH_E_CORRUPT);
  assert_null(m);
  if (!strstr(err.msg, says)) fail_msg("message \"%s\", not about \"%s\"", err.msg, says);
  free(h);
}

/* Zone i's bytes in a head of hl bytes with nz zones. */
static uint8_t *zone_at(uint8_t *h, size_t hl, uint32_t nz, uint32_t i) {
  return h + hl - 4 - (size_t)(nz - i) * VALUE_BLOCK_MAP_ZONE_BYTES;
}

static void swap_ids(uint8_t *h, size_t hl, uint32_t nz) {
  uint64_t a = decode_fixed64(zone_at(h, hl, nz, 1)), b = decode_fixed64(zone_at(h, hl, nz, 2));
  encode_fixed64(zone_at(h, hl, nz, 1), b);
  encode_fixed64(zone_at(h, hl, nz, 2), a);
}

static void same_ids(uint8_t *h, size_t hl, uint32_t nz) {
  encode_fixed64(zone_at(h, hl, nz, 2), decode_fixed64(zone_at(h, hl, nz, 1)));
}

static void too_many(uint8_t *h, size_t hl, uint32_t nz) {
  (void)hl, (void)nz;
  encode_fixed32(h + 52, VALUE_BLOCK_MAP_MAX_ZONES + 1);
}

static void one_more(uint8_t *h, size_t hl, uint32_t nz) {
  (void)hl;
  encode_fixed32(h + 52, nz + 1);
}

static void lo_above_hi(uint8_t *h, size_t hl, uint32_t nz) {
  uint8_t *z = zone_at(h, hl, nz, 1); /* [100, 200] */
  encode_fixed64(z + 8, 201);
}

static void max_lo_not_empty(uint8_t *h, size_t hl, uint32_t nz) {
  uint8_t *z = zone_at(h, hl, nz, 0); /* the empty zone: UINT64_MAX, 0 */
  encode_fixed64(z + 16, 1);
}

static void zero_hi_not_empty(uint8_t *h, size_t hl, uint32_t nz) {
  uint8_t *z = zone_at(h, hl, nz, 0);
  encode_fixed64(z + 8, UINT64_MAX - 1);
}

/* A head of version 5 (its zones end it) that breaks a rule of its zones does not open (with its
   CRC made good): ids out of order or repeated, more than 64 zones, nzones not what the head holds,
   a zone with lo > hi other than the empty one, the head cut short (by a zone, and at every length,
   CRC as cut). The zones as built, and an empty zone written as such, open. */
static void test_value_block_map_zones_corrupt(void **state) {
  (void)state;
  value_block_map_builder_t *b = value_block_map_builder_create();
  assert_non_null(b);
  assert_int_equal(value_block_map_builder_set_format(b, 5, 1024), BFH_OK);
  add_blocks(b, 0, 2);
  assert_int_equal(value_block_map_builder_declare_zone(b, 3), BFH_OK); /* empty */
  assert_int_equal(value_block_map_builder_zone(b, 40, 100), BFH_OK);
  assert_int_equal(value_block_map_builder_zone(b, 40, 200), BFH_OK);
  assert_int_equal(value_block_map_builder_zone(b, 500, UINT64_MAX), BFH_OK);
  uint8_t *head, *chunks;
  size_t hl, cl;
  value_block_map_t *m = finish_map(b, &head, &hl, &chunks, &cl);
  value_block_map_destroy(m);
  assert_int_equal(decode_fixed32(head + 52), 3);
  expect_head_corrupt(head, hl, swap_ids, "zone 2: ids not ascending");
  expect_head_corrupt(head, hl, same_ids, "zone 2: ids not ascending");
  expect_head_corrupt(head, hl, too_many, "65 zones");
  expect_head_corrupt(head, hl, one_more, "its sizes say");
  expect_head_corrupt(head, hl, lo_above_hi, "zone 1: lo above hi");
  expect_head_corrupt(head, hl, max_lo_not_empty, "zone 0: lo above hi");
  expect_head_corrupt(head, hl, zero_hi_not_empty, "zone 0: lo above hi");
  expect_head_corrupt(head, hl - VALUE_BLOCK_MAP_ZONE_BYTES, NULL, "its sizes say");
  for (size_t keep = 0; keep < hl; keep++) {
    uint8_t *h = malloc(keep ? keep : 1);
    assert_non_null(h);
    memcpy(h, head, keep);
    err_t err;
    assert_int_equal(value_block_map_open(h, keep, &m, &err), BFH_E_CORRUPT);
    assert_null(m);
    free(h);
  }
  assert_int_equal(value_block_map_open(head, hl, &m, &(err_t){0}), BFH_OK);
  uint64_t lo, hi;
  assert_int_equal(value_block_map_zone(m, 3, &lo, &hi), 1);
  assert_true(lo == UINT64_MAX && hi == 0);
  assert_int_equal(value_block_map_zone(m, 500, &lo, &hi), 1);
  assert_true(lo == UINT64_MAX && hi == UINT64_MAX);
  value_block_map_destroy(m);
  free(head);
  free(chunks);
}

/* A builder records zones of at most 64 ids: the 65th distinct id is BFH_E_INVALID, from
   builder_zone and declare_zone alike, and changes nothing; the 64 ids recorded still take
   codes, and the map holds exactly them. */
static void test_value_block_map_zones_too_many(void **state) {
  (void)state;
  value_block_map_builder_t *b = value_block_map_builder_create();
  assert_non_null(b);
  for (uint64_t i = 0; i < VALUE_BLOCK_MAP_MAX_ZONES; i++)
    assert_int_equal(value_block_map_builder_zone(b, i * 7, i), BFH_OK);
  assert_int_equal(value_block_map_builder_zone(b, 1, 5), BFH_E_INVALID);
  assert_int_equal(value_block_map_builder_declare_zone(b, UINT64_MAX), BFH_E_INVALID);
  assert_int_equal(value_block_map_builder_zone(b, 7, 1000), BFH_OK); /* an id it has */
  assert_int_equal(value_block_map_builder_declare_zone(b, 14), BFH_OK);
  add_blocks(b, 0, 1);
  uint8_t *head, *chunks;
  size_t hl, cl;
  value_block_map_t *m = finish_map(b, &head, &hl, &chunks, &cl);
  assert_int_equal(decode_fixed32(head + 52), VALUE_BLOCK_MAP_MAX_ZONES);
  uint64_t lo, hi;
  for (uint64_t i = 0; i < VALUE_BLOCK_MAP_MAX_ZONES; i++) {
    assert_int_equal(value_block_map_zone(m, i * 7, &lo, &hi), 1);
    assert_int_equal(lo, i);
    assert_int_equal(hi, i == 1 ? 1000 : i);
  }
  assert_int_equal(value_block_map_zone(m, 1, &lo, &hi), 0);
  assert_int_equal(value_block_map_zone(m, UINT64_MAX, &lo, &hi), 0);
  value_block_map_destroy(m);
  free(head);
  free(chunks);
}

/* ---- Range filters (version 6) ---------------------------------------------------------- */

#define RANGE_ID 0x61747472ull /* "attr": the zone of many codes */
#define ONE_ID 7               /* a zone of one code */
#define NONE_ID 9              /* a zone declared without a code */
#define ONE_CODE 12345

/* 1 if the ascending codes[0, n) hold one of [lo, hi]. */
static int holds(const uint64_t *codes, size_t n, uint64_t lo, uint64_t hi) {
  size_t l = 0, h = n;
  while (l < h) {
    size_t mid = l + (h - l) / 2;
    if (codes[mid] < lo)
      l = mid + 1;
    else
      h = mid;
  }
  return l < n && codes[l] <= hi;
}

static int by_code(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

/* A map of `version` with `blocks` blocks of values and three zones: RANGE_ID holds
   codes[0, n) (sorted on return; its first code recorded twice), ONE_ID holds ONE_CODE and
   NONE_ID nothing. */
static value_block_map_t *range_map(uint32_t version, uint64_t *codes, size_t n, uint32_t blocks,
                                    uint8_t **head, size_t *hl, uint8_t **chunks, size_t *cl) {
  value_block_map_builder_t *b = value_block_map_builder_create();
  assert_non_null(b);
  assert_int_equal(value_block_map_builder_set_format(b, version, 1024), BFH_OK);
  assert_int_equal(value_block_map_builder_declare_zone(b, NONE_ID), BFH_OK);
  assert_int_equal(value_block_map_builder_zone(b, ONE_ID, ONE_CODE), BFH_OK);
  for (size_t i = 0; i < n; i++) {
    assert_int_equal(value_block_map_builder_zone(b, RANGE_ID, codes[i]), BFH_OK);
    if (i == n / 2) add_blocks(b, 0, blocks); /* zones and values interleave */
  }
  assert_int_equal(value_block_map_builder_zone(b, RANGE_ID, codes[0]), BFH_OK);
  qsort(codes, n, sizeof *codes, by_code);
  return finish_map(b, head, hl, chunks, cl);
}

/* n codes drawn from [0, span), and 0 and UINT64_MAX (the ends of the codes' range). */
static uint64_t *random_codes(size_t n, uint64_t span, uint64_t seed) {
  uint64_t *codes = malloc(n * sizeof *codes);
  assert_non_null(codes);
  for (size_t i = 0; i < n; i++) codes[i] = next_rand(&seed) % span;
  codes[0] = 0;
  codes[1] = UINT64_MAX;
  return codes;
}

/* The index in the head of the zone of id (its zones ascend by id). */
static uint32_t zone_number(const uint8_t *head, uint64_t id) {
  const uint8_t *z =
      head + ranges_at(head) - decode_fixed32(head + 52) * VALUE_BLOCK_MAP_ZONE_BYTES;
  uint32_t i = 0;
  while (decode_fixed64(z + (size_t)i * VALUE_BLOCK_MAP_ZONE_BYTES) != id) i++;
  return i;
}

/* No false negative, and few false positives: 20,000 codes drawn from [0, 2^26) (about one
   in 3,400 codes held) with the range filter of version 6 (20 bits per code, ranges of up
   to 1,024 codes). Every code, alone and in a range about it, is "maybe". Empty ranges of
   1,024 codes, 2,000 placed at random and 2,000 right after a code held, are "maybe" at most
   2% of the time: Grafite bounds that at L / 2^(B - 2) = 1,024 / 2^18 = 0.39% for any
   placement, so with a fixed seed 2% (80 of 4,000) leaves room and is still far below the
   half of such ranges that a filter blind to locality would pass. Without a reader the head
   alone answers: never "no" where the whole filter says "maybe". The pieces read are counted
   as the reader saw them. In memory the filter takes about 3 bits per code (its high bits
   and select samples): under 4 bits, where the whole filter takes 20. With blocks of values
   and without any (the bodies then begin the chunks block). */
static void range_answers(uint32_t blocks) {
  enum { N = 20000, EMPTY_RANGES = 4000 };
  const uint64_t span = 1ull << 26, L = 1ull << VALUE_BLOCK_MAP_RANGE_LOG2;
  uint64_t *codes = random_codes(N, span, 0x5a4e5ull + blocks);
  uint8_t *head, *chunks, *h5, *c5;
  size_t hl, cl, hl5, cl5;
  value_block_map_t *m = range_map(6, codes, N, blocks, &head, &hl, &chunks, &cl);
  value_block_map_t *m5 = range_map(5, codes, N, blocks, &h5, &hl5, &c5, &cl5);
  assert_int_equal(decode_fixed32(head + 4), 6);
  assert_int_equal(value_block_map_has_range(m, RANGE_ID), 1);
  assert_int_equal(value_block_map_has_range(m, ONE_ID), 1);
  assert_int_equal(value_block_map_has_range(m, NONE_ID), 0);
  assert_int_equal(value_block_map_has_range(m5, RANGE_ID), 0);
  mem_t mem = {chunks, cl, 0, 0};
  err_t err;
  uint64_t pieces = 0, bytes = 0, st = 0xfa15eull;
  for (size_t i = 0; i < N; i++) {
    const uint64_t c = codes[i], below = next_rand(&st) % 2000, above = next_rand(&st) % 2000;
    const uint64_t lo = c > below ? c - below : 0,
                   hi = UINT64_MAX - c > above ? c + above : UINT64_MAX;
    if (value_block_map_range(m, RANGE_ID, c, c, read_mem, &mem, &pieces, &bytes, &err) != 1 ||
        value_block_map_range(m, RANGE_ID, lo, hi, read_mem, &mem, &pieces, &bytes, &err) != 1)
      fail_msg("code %llx (range [%llx, %llx]): not \"maybe\"", (unsigned long long)c,
               (unsigned long long)lo, (unsigned long long)hi);
  }
  assert_true(pieces > 0);
  assert_int_equal(pieces, mem.reads);
  assert_int_equal(bytes, mem.bytes);
  uint32_t tried = 0, maybe = 0, head_no = 0;
  while (tried < EMPTY_RANGES) {
    uint64_t lo = tried % 2 ? codes[2 + next_rand(&st) % (N - 2)] + 1 : next_rand(&st) % span;
    if (lo > span || holds(codes, N, lo, lo + L - 1)) continue;
    tried++;
    int full =
        value_block_map_range(m, RANGE_ID, lo, lo + L - 1, read_mem, &mem, &pieces, NULL, &err);
    uint64_t before = mem.reads;
    int alone = value_block_map_range(m, RANGE_ID, lo, lo + L - 1, NULL, NULL, &pieces, NULL, &err);
    assert_int_equal(mem.reads, before);
    assert_true(full == 0 || full == 1);
    assert_true(alone == 0 || alone == 1);
    if (alone == 0) assert_int_equal(full, 0);
    maybe += full;
    head_no += !alone;
  }
  assert_int_equal(pieces, mem.reads); /* the head alone read nothing */
  size_t grew = value_block_map_memory(m) - value_block_map_memory(m5);
  print_message(
      "range filter over %u codes: %u of %u empty ranges of %llu codes maybe (%.2f%%, "
      "bound 0.39%%), %u ruled out by the head alone; %.2f bits per code in memory\n",
      N, maybe, tried, (unsigned long long)L, 100.0 * maybe / tried, head_no, 8.0 * grew / N);
  assert_true(maybe * 50 <= tried);
  assert_true(8 * grew < 4 * N);
  /* Ranges past RANGE_FILTER_MAX_BLOCKS blocks of L codes, or the wrong way round: "maybe". */
  assert_int_equal(
      value_block_map_range(m, RANGE_ID, 0, UINT64_MAX, read_mem, &mem, NULL, NULL, &err), 1);
  assert_int_equal(value_block_map_range(m, RANGE_ID, 5, 4, read_mem, &mem, NULL, NULL, &err), 1);
  /* One code; and no code, no filter: "maybe" without a read (the zone rules it out). */
  assert_int_equal(
      value_block_map_range(m, ONE_ID, ONE_CODE, ONE_CODE, read_mem, &mem, NULL, NULL, &err), 1);
  assert_int_equal(value_block_map_range(m, ONE_ID, ONE_CODE + 1, ONE_CODE + L, read_mem, &mem,
                                         NULL, NULL, &err),
                   0);
  const uint64_t reads = mem.reads;
  assert_int_equal(value_block_map_range(m, NONE_ID, 0, 10, read_mem, &mem, NULL, NULL, &err), 1);
  assert_int_equal(value_block_map_range(m, 12, 0, 10, read_mem, &mem, NULL, NULL, &err), 1);
  assert_int_equal(value_block_map_range(m5, RANGE_ID, codes[5] + 1, codes[5] + 1, read_mem, &mem,
                                         NULL, NULL, &err),
                   1);
  assert_int_equal(mem.reads, reads);
  assert_int_equal(value_block_map_zone_rules_out(m, NONE_ID, 0, 10), 1);
  /* bfh check reads every chunk and body, and they check out. */
  assert_int_equal(value_block_map_verify(m, read_mem, &mem, 0, &err), BFH_OK);
  free(codes);
  free(head);
  free(chunks);
  free(h5);
  free(c5);
  value_block_map_destroy(m);
  value_block_map_destroy(m5);
}

static void test_value_block_map_range_answers(void **state) {
  (void)state;
  range_answers(30);
  range_answers(0);
}

/* A byte changed in a piece of a range filter's body (piece 2 of 20): every range that reads
   the piece is BFH_E_CORRUPT, naming the zone and where the piece lies in the chunks block,
   never an answer; bfh check (value_block_map_verify) finds it and says where it lies in the
   file. A map with its own reader reads through it, whatever reader a range is given: the
   same map over the bytes as built answers every code "maybe". */
static void test_value_block_map_range_damaged_body(void **state) {
  (void)state;
  enum { N = 5000 };
  uint64_t *codes = random_codes(N, 1ull << 30, 0xda4a6eull);
  uint8_t *head, *chunks;
  size_t hl, cl;
  value_block_map_t *m = range_map(6, codes, N, 4, &head, &hl, &chunks, &cl);
  const uint8_t *ref = head + range_ref(head, zone_number(head, RANGE_ID));
  range_filter_t *f = NULL;
  assert_int_equal(range_filter_decode_head(ref + VALUE_BLOCK_MAP_RANGE_REF_BYTES,
                                            decode_fixed32(ref), &f, NULL),
                   BFH_OK);
  const uint64_t piece = decode_fixed64(ref + 4) + 2 * range_filter_piece_bytes(f);
  assert_true(decode_fixed64(ref + 12) > 3 * range_filter_piece_bytes(f));
  range_filter_destroy(f);
  uint8_t *good = malloc(cl);
  assert_non_null(good);
  memcpy(good, chunks, cl);
  chunks[piece + 9] ^= 0x10;
  mem_t mem = {chunks, cl, 0, 0};
  err_t err;
  char says[128];
  snprintf(says, sizeof says,
           "range filter of zone %llu, piece at %llu: ", (unsigned long long)RANGE_ID,
           (unsigned long long)(1000 + piece));
  assert_int_equal(value_block_map_verify(m, read_mem, &mem, 1000, &err), BFH_E_CORRUPT);
  if (!strstr(err.msg, says)) fail_msg("verify: \"%s\", not \"%s\"", err.msg, says);
  snprintf(says, sizeof says,
           "range filter of zone %llu, piece at %llu: ", (unsigned long long)RANGE_ID,
           (unsigned long long)piece);
  uint32_t errors = 0;
  for (size_t i = 0; i < N; i++) {
    int rc =
        value_block_map_range(m, RANGE_ID, codes[i], codes[i], read_mem, &mem, NULL, NULL, &err);
    assert_true(rc == 1 || rc == BFH_E_CORRUPT);
    if (rc != BFH_E_CORRUPT) continue;
    if (!strstr(err.msg, says)) fail_msg("range: \"%s\", not \"%s\"", err.msg, says);
    errors++;
  }
  assert_true(errors > 0);
  /* Its own reader, over the bytes as built. */
  value_block_map_t *own = NULL;
  assert_int_equal(value_block_map_open(head, hl, &own, &err), BFH_OK);
  mem_t kept = {good, cl, 0, 0};
  value_block_map_set_reader(own, read_mem, &kept, NULL, 0);
  const uint64_t damaged_reads = mem.reads;
  for (size_t i = 0; i < N; i++)
    assert_int_equal(
        value_block_map_range(own, RANGE_ID, codes[i], codes[i], read_mem, &mem, NULL, NULL, &err),
        1);
  for (size_t i = 0; i < N; i++)
    assert_int_equal(
        value_block_map_range(own, RANGE_ID, codes[i], codes[i], NULL, NULL, NULL, NULL, &err), 1);
  assert_int_equal(mem.reads, damaged_reads);
  assert_true(kept.reads > 0);
  assert_int_equal(value_block_map_verify(own, NULL, NULL, 0, &err), BFH_OK);
  value_block_map_destroy(own);
  value_block_map_destroy(m);
  free(good);
  free(codes);
  free(head);
  free(chunks);
}

/* Damage to a head of version 6's ranges (its CRC made good): each range as zone i holds it
   (zones ascend by id: 0 is ONE_ID, 1 NONE_ID, 2 RANGE_ID). */
static uint8_t *ref_of(uint8_t *h, uint32_t i) {
  return h + range_ref(h, i);
}

static void body_in_chunks(uint8_t *h, size_t hl, uint32_t nz) {
  (void)hl, (void)nz;
  encode_fixed64(ref_of(h, 0) + 4, decode_fixed64(ref_of(h, 0) + 4) - 1);
}

static void bodies_overlap(uint8_t *h, size_t hl, uint32_t nz) {
  (void)hl, (void)nz;
  encode_fixed64(ref_of(h, 2) + 4, decode_fixed64(ref_of(h, 2) + 4) - 1);
}

static void body_too_long(uint8_t *h, size_t hl, uint32_t nz) {
  (void)hl, (void)nz;
  encode_fixed64(ref_of(h, 2) + 12, decode_fixed64(ref_of(h, 2) + 12) + 1);
}

static void body_past_2_64(uint8_t *h, size_t hl, uint32_t nz) {
  (void)hl, (void)nz;
  encode_fixed64(ref_of(h, 2) + 4, UINT64_MAX - 5);
}

static void filter_head_flipped(uint8_t *h, size_t hl, uint32_t nz) {
  (void)hl, (void)nz;
  ref_of(h, 2)[VALUE_BLOCK_MAP_RANGE_REF_BYTES + 14] ^= 0x01;
}

static void body_without_head(uint8_t *h, size_t hl, uint32_t nz) {
  (void)hl, (void)nz;
  encode_fixed64(ref_of(h, 1) + 4, 1ull << 40);
}

static void filter_head_longer(uint8_t *h, size_t hl, uint32_t nz) {
  (void)hl, (void)nz;
  encode_fixed32(ref_of(h, 0), decode_fixed32(ref_of(h, 0)) + 1);
}

static void filter_head_huge(uint8_t *h, size_t hl, uint32_t nz) {
  (void)hl, (void)nz;
  encode_fixed32(ref_of(h, 2), UINT32_MAX);
}

static void filter_on_empty_zone(uint8_t *h, size_t hl, uint32_t nz) {
  (void)hl;
  uint8_t *z = h + ranges_at(h) - (size_t)nz * VALUE_BLOCK_MAP_ZONE_BYTES; /* zone 0: ONE_ID */
  encode_fixed64(z + 8, UINT64_MAX);
  encode_fixed64(z + 16, 0);
}

/* A head of version 6 whose ranges break a rule does not open (BFH_E_CORRUPT, its CRC made
   good, so that the rule is what stops it): a body inside the chunks, or over the body
   before it, or longer than its filter's head says, or past 2^64; a filter's head that does
   not decode; a body with no filter; a filter's head longer than it is, or than the head; a
   filter on an empty zone; the head cut short at every length (CRC as cut). As built, it
   opens. */
static void test_value_block_map_range_head_corrupt(void **state) {
  (void)state;
  enum { N = 600 };
  uint64_t *codes = random_codes(N, 1ull << 20, 0xc0ull);
  uint8_t *head, *chunks;
  size_t hl, cl;
  value_block_map_t *m = range_map(6, codes, N, 2, &head, &hl, &chunks, &cl);
  value_block_map_destroy(m);
  assert_int_equal(zone_number(head, ONE_ID), 0);
  assert_int_equal(zone_number(head, NONE_ID), 1);
  assert_int_equal(zone_number(head, RANGE_ID), 2);
  expect_head_corrupt(head, hl, body_in_chunks, "zone 0's range filter: its body at");
  expect_head_corrupt(head, hl, bodies_overlap, "zone 2's range filter: its body at");
  expect_head_corrupt(head, hl, body_too_long, "zone 2's range filter: a body of");
  expect_head_corrupt(head, hl, body_past_2_64, "zone 2's range filter: its body at");
  expect_head_corrupt(head, hl, filter_head_flipped, "zone 2's range filter: range filter: ");
  expect_head_corrupt(head, hl, body_without_head, "zone 1's range filter: a body without");
  expect_head_corrupt(head, hl, filter_head_longer, "its sizes say");
  expect_head_corrupt(head, hl, filter_head_huge, "its sizes say");
  expect_head_corrupt(head, hl, filter_on_empty_zone, "zone 0's range filter: the zone holds");
  for (size_t keep = 0; keep < hl; keep++) {
    uint8_t *h = malloc(keep ? keep : 1);
    assert_non_null(h);
    memcpy(h, head, keep);
    assert_int_equal(value_block_map_open(h, keep, &m, &(err_t){0}), BFH_E_CORRUPT);
    assert_null(m);
    free(h);
  }
  assert_int_equal(value_block_map_open(head, hl, &m, &(err_t){0}), BFH_OK);
  value_block_map_destroy(m);
  free(codes);
  free(head);
  free(chunks);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_value_block_map_sequence_bounds),
      cmocka_unit_test(test_value_block_map_names_every_block),
      cmocka_unit_test(test_value_block_map_head_formats),
      cmocka_unit_test(test_value_block_map_skewed_fingerprints),
      cmocka_unit_test(test_value_block_map_zones_round_trip),
      cmocka_unit_test(test_value_block_map_builder_reset_as_new),
      cmocka_unit_test(test_value_block_map_zone_rules_out),
      cmocka_unit_test(test_value_block_map_zones_older_versions),
      cmocka_unit_test(test_value_block_map_zones_corrupt),
      cmocka_unit_test(test_value_block_map_zones_too_many),
      cmocka_unit_test(test_value_block_map_range_answers),
      cmocka_unit_test(test_value_block_map_range_damaged_body),
      cmocka_unit_test(test_value_block_map_range_head_corrupt),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

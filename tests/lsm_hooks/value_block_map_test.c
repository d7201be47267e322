/* value_block_map: a map names every block holding a value, including a fingerprint run
   that spans several chunks, and nothing for a value it does not hold (bounded: a fingerprint
   collision is about entries / 2^32 per probe, so at most 2 of 20,000 absent probes). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "bfh.h"
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
  assert_int_equal(decode_fixed32(head + 4), version ? version : 5);
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

/* The default map (version 5, 1024 sketch bits per chunk: 1 - e^(-340/1024) = 28% of them
   set, about 5,700 of 20,000 absent probes read a chunk); versions 4, 3 and 2 as earlier
   builds wrote them (2: 512 bits a chunk: 49%, about 9,800), still read; other sketch sizes (8
   bits: every probe reads; 8192: 4%). */
static void test_value_block_map_names_every_block(void **state) {
  (void)state;
  names_every_block(0, VALUE_BLOCK_MAP_SKETCH_BITS, 4500, 7000);
  names_every_block(4, VALUE_BLOCK_MAP_SKETCH_BITS, 4500, 7000);
  names_every_block(3, VALUE_BLOCK_MAP_SKETCH_BITS, 4500, 7000);
  names_every_block(2, 512, 8000, 12000);
  names_every_block(3, 512, 8000, 12000);
  names_every_block(3, 8, 19000, 20001);
  names_every_block(3, 8192, 200, 1500);
}

/* The head's format is one of the four known: other versions and sketch sizes are refused by
   the builder, and a head whose sketch_bits is changed (and its CRC made good) does not
   open. */
static void test_value_block_map_head_formats(void **state) {
  (void)state;
  value_block_map_builder_t *b = value_block_map_builder_create();
  assert_non_null(b);
  assert_int_equal(value_block_map_builder_set_format(b, 2, 1024), BFH_E_INVALID);
  assert_int_equal(value_block_map_builder_set_format(b, 3, 12), BFH_E_INVALID);
  assert_int_equal(value_block_map_builder_set_format(b, 3, 0), BFH_E_INVALID);
  assert_int_equal(value_block_map_builder_set_format(b, 6, 1024), BFH_E_INVALID);
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

/* Zones round trip: several ids (0 and UINT64_MAX among them) with random codes, 0 and
   UINT64_MAX among those, recorded in no particular order, before, between and after the
   blocks; an id declared without a code reads back empty; an id never recorded has no zone.
   With values (3 blocks: one chunk) and without any. The head holds 24 bytes per zone, and
   the map's memory counts them. */
static void zones_round_trip(uint32_t blocks) {
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
  assert_int_equal(decode_fixed32(head + 4), 5);
  assert_int_equal(decode_fixed32(head + 52), IDS);
  assert_int_equal(value_block_map_entries(m), 2 * blocks * 50);
  assert_int_equal(hl, phl + IDS * VALUE_BLOCK_MAP_ZONE_BYTES);
  assert_int_equal(value_block_map_memory(m),
                   value_block_map_memory(p) + IDS * 3 * sizeof(uint64_t));
  assert_int_equal(cl, pcl);
  assert_memory_equal(chunks, pc, cl);
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
  zones_round_trip(3);
  zones_round_trip(0);
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
   long as before them), and value_block_map_zone gives 0 for every id. */
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

/* A head of version 5 that breaks a rule of its zones does not open (with its CRC made
   good): ids out of order or repeated, more than 64 zones, nzones not what the head holds, a
   zone with lo > hi other than the empty one, the head cut short (by a zone, and at every
   length, CRC as cut). The zones as built, and an empty zone written as such, open. */
static void test_value_block_map_zones_corrupt(void **state) {
  (void)state;
  value_block_map_builder_t *b = value_block_map_builder_create();
  assert_non_null(b);
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

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_value_block_map_sequence_bounds),
      cmocka_unit_test(test_value_block_map_names_every_block),
      cmocka_unit_test(test_value_block_map_head_formats),
      cmocka_unit_test(test_value_block_map_skewed_fingerprints),
      cmocka_unit_test(test_value_block_map_zones_round_trip),
      cmocka_unit_test(test_value_block_map_zone_rules_out),
      cmocka_unit_test(test_value_block_map_zones_older_versions),
      cmocka_unit_test(test_value_block_map_zones_corrupt),
      cmocka_unit_test(test_value_block_map_zones_too_many),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

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
  assert_int_equal(decode_fixed32(head + 4), version ? version : 4);
  assert_int_equal(value_block_map_sketch_bits(m), bits);
  assert_int_equal(value_block_map_blocks(m), NBLOCKS);
  assert_int_equal(value_block_map_entries(m), NBLOCKS * (PER_BLOCK + 1));
  mem_t mem = {chunks, cl, 0, 0};
  uint32_t *out = malloc(NBLOCKS * sizeof *out), n = 0;
  assert_non_null(out);
  for (uint32_t j = 0; j < NBLOCKS; j += 7) {
    assert_int_equal(value_block_map_probe(m, hash_of(j, j % PER_BLOCK), read_mem, &mem, out, NULL, &n,
                                           NULL, NULL, &err),
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
    assert_int_equal(value_block_map_probe(m, hash_of(NBLOCKS + 1, i), read_mem, &mem, out, NULL, &n,
                                           &chunks_read, NULL, &err),
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
    errors += value_block_map_probe(m, hash_of(j, 0), read_mem, &mem, out, NULL, &n, NULL, NULL, &err) ==
              BFH_E_CORRUPT;
  assert_true(errors > 0);
  free(out);
  free(head);
  free(chunks);
  value_block_map_destroy(m);
}

/* The default map (version 4, 1024 sketch bits per chunk: 1 - e^(-340/1024) = 28% of them
   set, about 5,700 of 20,000 absent probes read a chunk); versions 3 and 2 as earlier builds
   wrote them (2: 512 bits a chunk: 49%, about 9,800), still read; other sketch sizes (8 bits:
   every probe reads; 8192: 4%). */
static void test_value_block_map_names_every_block(void **state) {
  (void)state;
  names_every_block(0, VALUE_BLOCK_MAP_SKETCH_BITS, 4500, 7000);
  names_every_block(3, VALUE_BLOCK_MAP_SKETCH_BITS, 4500, 7000);
  names_every_block(2, 512, 8000, 12000);
  names_every_block(3, 512, 8000, 12000);
  names_every_block(3, 8, 19000, 20001);
  names_every_block(3, 8192, 200, 1500);
}

/* The head's format is one of the three known: other versions and sketch sizes are refused by
   the builder, and a head whose sketch_bits is changed (and its CRC made good) does not
   open. */
static void test_value_block_map_head_formats(void **state) {
  (void)state;
  value_block_map_builder_t *b = value_block_map_builder_create();
  assert_non_null(b);
  assert_int_equal(value_block_map_builder_set_format(b, 2, 1024), BFH_E_INVALID);
  assert_int_equal(value_block_map_builder_set_format(b, 3, 12), BFH_E_INVALID);
  assert_int_equal(value_block_map_builder_set_format(b, 3, 0), BFH_E_INVALID);
  assert_int_equal(value_block_map_builder_set_format(b, 5, 1024), BFH_E_INVALID);
  assert_int_equal(value_block_map_builder_set_format(b, 1, 1024), BFH_E_INVALID);
  for (uint32_t i = 0; i < 1000; i++) assert_int_equal(value_block_map_builder_add(b, hash_of(1, i), 0), BFH_OK);
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
    if (i % 40 == 39) assert_int_equal(value_block_map_builder_end_block(b, i * 4096ull, 4000), BFH_OK);
  }
  assert_int_equal(value_block_map_builder_end_block(b, n * 4096ull, 4000), BFH_OK);
  uint8_t *head, *chunks;
  size_t hl, cl;
  value_block_map_t *m = finish_map(b, &head, &hl, &chunks, &cl);
  err_t err;
  mem_t mem = {chunks, cl, 0, 0};
  uint32_t out[64], got = 0;
  for (size_t i = 0; i < n; i++) {
    assert_int_equal(value_block_map_probe(m, h[i], read_mem, &mem, out, NULL, &got, NULL, NULL, &err), BFH_OK);
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
   16-bit quantization (a power of two, under twice (seq_hi - seq_lo) / 65535), over ranges of sequence
   numbers from one (every bound exact) to 2^56 - 1; a value added twice to a block is
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
                 (unsigned long long)s, (unsigned long long)bounds[at],
                 (unsigned long long)lo, (unsigned long long)span);
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
  bounds_over(1000, 60000, 0);  /* a step of one: exact */
  bounds_over(5, 10000000, 0);  /* a compaction's range */
  bounds_over(0, (1ull << 56) - 1, 0);
  bounds_over(1000, 60000, 3);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_value_block_map_sequence_bounds),
      cmocka_unit_test(test_value_block_map_names_every_block),
      cmocka_unit_test(test_value_block_map_head_formats),
      cmocka_unit_test(test_value_block_map_skewed_fingerprints),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

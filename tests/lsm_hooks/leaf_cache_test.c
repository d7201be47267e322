/* Tests of the sidecar cache files of leaves (lsm_hooks/leaf_cache): version 3 round trips
 * with and without a block filter, files of versions 1 and 2 (stale: not bound to their
 * table's bytes), another table's number, size or tag, and damage that makes a file stale. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bfh.h"
#include "index/block_index.h"
#include "index/leaf_cache.h"
#include "tests/test_util.h"
#include "util/coding.h"
#include "util/crc32c.h"

#define M 4096
#define K 3
#define SEED 0x5eedull
#define NUMBER 42
#define TSIZE 123456
#define TAG 0x0123456789abcdefull

static const leaf_cache_table_t TABLE = {NUMBER, TSIZE, TAG, 0};
#define NBLOCKS 8
#define VALUES_PER_BLOCK 20

static char tmpdir[TEST_PATH_MAX];

typedef struct fixture {
  char path[TEST_PATH_MAX + 32];
  value_filter_t *leaf;
  block_filter_t *blocks;
} fixture_t;

static uint64_t value_hash(uint32_t i) {
  return bfh_hash64(&i, sizeof i, SEED);
}

/* A leaf and a block filter of NBLOCKS blocks, 4 KiB apart, with VALUES_PER_BLOCK values each
   (block 3 holds none: it is left out of the filter). */
static int setup(void **state) {
  static unsigned count;
  fixture_t *fx = calloc(1, sizeof *fx);
  if (!fx) return -1;
  snprintf(fx->path, sizeof fx->path, "%s/%06u.vf", tmpdir, count++);
  fx->leaf = value_filter_create(M, K, SEED);
  block_filter_builder_t *b = block_filter_builder_create(10);
  if (!fx->leaf || !b) return -1;
  for (uint32_t blk = 0; blk < NBLOCKS; blk++) {
    for (uint32_t v = 0; blk != 3 && v < VALUES_PER_BLOCK; v++) {
      uint64_t h = value_hash(blk * 1000 + v);
      value_filter_add_hash(fx->leaf, h);
      if (block_filter_builder_add(b, h) != BFH_OK) return -1;
    }
    if (block_filter_builder_end_block(b, 4096ull * blk, 4000) != BFH_OK) return -1;
  }
  err_t err;
  int rc = block_filter_builder_finish(b, &fx->blocks, &err);
  block_filter_builder_destroy(b);
  *state = fx;
  return rc == BFH_OK ? 0 : -1;
}

static int teardown(void **state) {
  fixture_t *fx = *state;
  value_filter_destroy(fx->leaf);
  block_filter_destroy(fx->blocks);
  unlink(fx->path);
  free(fx);
  return 0;
}

static int group_setup(void **state) {
  (void)state;
  return test_tmpdir_create(tmpdir, sizeof tmpdir, "leaf_cache");
}

static int group_teardown(void **state) {
  (void)state;
  return test_rmrf(tmpdir);
}

static uint8_t *read_all(const char *path, size_t *n) {
  FILE *fp = fopen(path, "rb");
  assert_non_null(fp);
  assert_int_equal(fseek(fp, 0, SEEK_END), 0);
  long len = ftell(fp);
  assert_true(len >= 0);
  rewind(fp);
  uint8_t *p = malloc((size_t)len + 1);
  assert_non_null(p);
  assert_int_equal(fread(p, 1, (size_t)len, fp), (size_t)len);
  fclose(fp);
  *n = (size_t)len;
  return p;
}

static void write_all(const char *path, const uint8_t *p, size_t n) {
  FILE *fp = fopen(path, "wb");
  assert_non_null(fp);
  assert_int_equal(fwrite(p, 1, n, fp), n);
  assert_int_equal(fclose(fp), 0);
}

static void expect_blocks_equal(const block_filter_t *a, const block_filter_t *b) {
  size_t n = block_filter_serialized_size(a);
  assert_int_equal(block_filter_serialized_size(b), n);
  uint8_t *x = malloc(n), *y = malloc(n);
  assert_true(x && y);
  block_filter_serialize(a, x);
  block_filter_serialize(b, y);
  assert_memory_equal(x, y, n);
  free(x);
  free(y);
}

/* Loads fx->path expecting BFH_OK; returns the leaf and the block filter (NULL if none). */
static block_filter_t *load_ok(const fixture_t *fx) {
  value_filter_t *f = NULL;
  block_filter_t *b = (block_filter_t *)&f; /* overwritten */
  err_t err;
  int rc = leaf_cache_load(env_default(), fx->path, &TABLE, M, K, SEED, &f, &b, &err);
  if (rc != BFH_OK) fail_msg("load %s: %d %s", fx->path, rc, err.msg);
  assert_memory_equal(f->words, fx->leaf->words, fx->leaf->nwords * 8);
  value_filter_destroy(f);
  return b;
}

static void expect_stale(const fixture_t *fx, const char *what) {
  value_filter_t *f = NULL;
  block_filter_t *b = NULL;
  err_t err;
  int rc = leaf_cache_load(env_default(), fx->path, &TABLE, M, K, SEED, &f, &b, &err);
  if (rc != BFH_E_CORRUPT) fail_msg("%s: load gave %d, not BFH_E_CORRUPT", what, rc);
  assert_non_null(strstr(err.msg, fx->path));
  assert_null(f);
  assert_null(b);
}

static void test_leaf_cache_round_trip_without_blocks(void **state) {
  fixture_t *fx = *state;
  err_t err;
  assert_int_equal(leaf_cache_store(env_default(), fx->path, &TABLE, fx->leaf, NULL, &err),
                   BFH_OK);
  size_t n;
  uint8_t *p = read_all(fx->path, &n);
  assert_int_equal(n, LEAF_CACHE_HEADER_BYTES + value_filter_serialized_size(M));
  assert_int_equal(decode_fixed32(p + 4), LEAF_CACHE_VERSION);
  assert_true(decode_fixed64(p + 24) == TAG);
  assert_int_equal(decode_fixed32(p + 40), 0);
  free(p);
  assert_null(load_ok(fx));
}

static void test_leaf_cache_round_trip_with_blocks(void **state) {
  fixture_t *fx = *state;
  assert_int_equal(block_filter_blocks(fx->blocks), NBLOCKS - 1);
  err_t err;
  assert_int_equal(leaf_cache_store(env_default(), fx->path, &TABLE, fx->leaf, fx->blocks, &err),
                   BFH_OK);
  size_t n, leaf_end = LEAF_CACHE_HEADER_BYTES + value_filter_serialized_size(M);
  uint8_t *p = read_all(fx->path, &n);
  assert_int_equal(n, leaf_end + block_filter_serialized_size(fx->blocks));
  assert_int_equal(decode_fixed32(p + 4), LEAF_CACHE_VERSION);
  assert_true(decode_fixed64(p + 24) == TAG);
  assert_int_equal(decode_fixed32(p + 40), LEAF_CACHE_HAS_BLOCKS);
  /* The leaf stays at offset LEAF_CACHE_HEADER_BYTES (with leaves on disk it is read there). */
  uint8_t *leaf = malloc(value_filter_serialized_size(M));
  assert_non_null(leaf);
  value_filter_serialize(fx->leaf, leaf);
  assert_memory_equal(p + LEAF_CACHE_HEADER_BYTES, leaf, value_filter_serialized_size(M));
  free(leaf);
  free(p);
  block_filter_t *b = load_ok(fx);
  assert_non_null(b);
  expect_blocks_equal(b, fx->blocks);
  /* No false negatives after the trip: a value of block blk names it. */
  for (uint32_t blk = 0; blk < NBLOCKS; blk++) {
    if (blk == 3) continue; /* no values */
    uint32_t may[NBLOCKS], n = block_filter_probe(b, value_hash(blk * 1000 + 7), may), hit = 0;
    for (uint32_t q = 0; q < n; q++) hit |= block_filter_ref(b, may[q]).offset == 4096ull * blk;
    assert_true(hit);
  }
  block_filter_destroy(b);
  /* blocks == NULL: the leaf alone, the block filter checked and dropped. */
  value_filter_t *f = NULL;
  assert_int_equal(leaf_cache_load(env_default(), fx->path, &TABLE, M, K, SEED, &f, NULL, &err),
                   BFH_OK);
  value_filter_destroy(f);
}

/* The map of the fixture's blocks, its head in `version`'s format (2: 512-bit sketches;
   3: the default). */
static void make_map(uint32_t version, uint8_t **head, size_t *hl, uint8_t **chunks, size_t *cl) {
  value_block_map_builder_t *b = value_block_map_builder_create();
  assert_non_null(b);
  if (version == 2) assert_int_equal(value_block_map_builder_set_format(b, 2, 512), BFH_OK);
  for (uint32_t blk = 0; blk < NBLOCKS; blk++) {
    for (uint32_t v = 0; blk != 3 && v < VALUES_PER_BLOCK; v++)
      assert_int_equal(value_block_map_builder_add(b, value_hash(blk * 1000 + v), 0), BFH_OK);
    assert_int_equal(value_block_map_builder_end_block(b, 4096ull * blk, 4000), BFH_OK);
  }
  assert_int_equal(value_block_map_builder_finish(b, head, hl, chunks, cl), BFH_OK);
  value_block_map_builder_destroy(b);
}

/* Writes the fixture's file with a map, as a file of version file_version (5: as earlier builds
   wrote it, a version 2 head with 512-bit sketches; 6: a version 3 head with 1024-bit ones),
   and loads it: its map reads its chunks from the file, held open. */
static value_block_map_t *load_map_ok(const fixture_t *fx, uint32_t file_version) {
  leaf_cache_map_bytes_t mb;
  memset(&mb, 0, sizeof mb);
  make_map(file_version == 5 ? 2 : 3, (uint8_t **)&mb.head, &mb.head_len, (uint8_t **)&mb.chunks,
           &mb.chunks_len);
  uint8_t *buf;
  size_t n;
  err_t err;
  assert_int_equal(leaf_cache_encode_map(&TABLE, fx->leaf, fx->blocks, &mb, &buf, &n, &err),
                   BFH_OK);
  assert_int_equal(decode_fixed32(buf + 4), LEAF_CACHE_VERSION);
  if (file_version == 5) {
    encode_fixed32(buf + 4, LEAF_CACHE_VERSION_MAP_V2);
    encode_fixed32(buf + 44, crc32c_mask(crc32c_value(buf, 44)));
  }
  assert_int_equal(leaf_cache_write(env_default(), fx->path, buf, n, &err), BFH_OK);
  free(buf);
  free((void *)mb.head);
  free((void *)mb.chunks);
  leaf_cache_table_t t = TABLE;
  value_filter_t *f = NULL;
  block_filter_t *blocks = NULL;
  value_block_map_t *map = NULL;
  assert_int_equal(
      leaf_cache_load_map(env_default(), fx->path, &t, 0, M, K, SEED, &f, &blocks, &map, &err),
      BFH_OK);
  assert_non_null(map);
  block_filter_destroy(blocks);
  value_filter_destroy(f);
  return map;
}

/* Version 6 files carry version 3 map heads (1024-bit sketches); a version 5 file, as
   earlier builds wrote it (a version 2 head, 512-bit sketches), still loads with its map,
   which names every block of its values. */
static void test_leaf_cache_map_versions(void **state) {
  fixture_t *fx = *state;
  for (uint32_t file_version = 5; file_version <= 6; file_version++) {
    err_t err;
    value_block_map_t *map = load_map_ok(fx, file_version);
    assert_int_equal(value_block_map_sketch_bits(map),
                     file_version == 5 ? 512 : VALUE_BLOCK_MAP_SKETCH_BITS);
    for (uint32_t blk = 0; blk < NBLOCKS; blk++)
      for (uint32_t v = 0; blk != 3 && v < VALUES_PER_BLOCK; v++) {
        uint32_t out[NBLOCKS], nb = 0;
        assert_int_equal(value_block_map_probe(map, value_hash(blk * 1000 + v), NULL, NULL, out,
                                               NULL, &nb, NULL, NULL, &err),
                         BFH_OK);
        int hit = 0;
        for (uint32_t q = 0; q < nb; q++)
          hit |= value_block_map_ref(map, out[q]).offset == 4096ull * blk;
        assert_true(hit);
      }
    value_block_map_destroy(map);
  }
}

/* Probes table NUMBER of bi for value id through io: the probe's return, and whether it named
   the value's block. */
static int probe_names(block_index_t *bi, uint32_t id, block_map_io_t *io, int *named, err_t *err) {
  block_refs_t refs = {0};
  int rc = block_index_probe(bi, NUMBER, value_hash(id), &refs, NULL, io, err);
  *named = 0;
  for (size_t q = 0; rc == BFH_OK && q < refs.n; q++)
    *named |= refs.v[q].offset == 4096ull * (id / 1000);
  block_refs_release(&refs);
  return rc;
}

/* A search reads the chunks of maps that read their own cache files ahead, together
   (block_index_read_ahead_own), and its probes take them there: with the file emptied after
   the read ahead, a probe given the chunks still names its value's block, where one without
   them fails, as damage. A chunk read ahead is checked as one read by its probe: damaged in
   the file before the read ahead, its probe fails. */
static void test_leaf_cache_map_chunks_read_ahead(void **state) {
  fixture_t *fx = *state;
  block_index_t *bi = block_index_create();
  assert_non_null(bi);
  value_block_map_t *m0 = load_map_ok(fx, 6);
  assert_int_equal(
      value_block_map_own_place(m0, 0, 1, &(env_t *){NULL}, &(env_rfile_t *){NULL}, &(uint64_t){0}),
      1);
  assert_int_equal(block_index_put_map(bi, NUMBER, m0), BFH_OK);
  uint64_t number = NUMBER, hashes[NBLOCKS * VALUES_PER_BLOCK], spans[NBLOCKS * VALUES_PER_BLOCK];
  uint32_t ids[NBLOCKS * VALUES_PER_BLOCK];
  size_t nh = 0, nspans = 0;
  for (uint32_t blk = 0; blk < NBLOCKS; blk++)
    for (uint32_t v = 0; blk != 3 && v < VALUES_PER_BLOCK; v++) {
      ids[nh] = blk * 1000 + v;
      hashes[nh] = value_hash(blk * 1000 + v);
      uint64_t off;
      size_t len, q = 0;
      assert_int_equal(value_block_map_sure_span(m0, hashes[nh++], &off, &len), 1);
      while (q < nspans && spans[q] != off) q++;
      if (q == nspans) spans[nspans++] = off;
    }
  block_chunks_ahead_t a = {0};
  assert_int_equal(block_index_read_ahead_own(bi, &number, 1, hashes, nh, &a), BFH_OK);
  assert_int_equal(a.n, nspans); /* each chunk once, however many hashes fall in it */
  for (size_t i = 0; i < a.n; i++) assert_non_null(a.v[i].bytes);
  assert_int_equal(truncate(fx->path, 0), 0);
  err_t err;
  int named;
  for (size_t i = 0; i < nh; i++) {
    block_map_io_t io = {NULL, NULL, 0, 0, 0, &a};
    int rc = probe_names(bi, ids[i], &io, &named, &err);
    if (rc != BFH_OK) fail_msg("value %u: %d %s", ids[i], rc, err.msg);
    assert_true(named);
    assert_int_equal(io.chunks_read, 1);
  }
  block_map_io_t own = {NULL, NULL, 0, 0, 0, NULL};
  assert_int_equal(probe_names(bi, ids[0], &own, &named, &err), BFH_E_CORRUPT);
  block_chunks_ahead_release(&a);
  block_index_destroy(bi);

  /* A byte of the first chunk flipped in the file, then read ahead: its probe fails. */
  bi = block_index_create();
  assert_non_null(bi);
  value_block_map_t *map = load_map_ok(fx, 6);
  uint64_t off;
  size_t len;
  assert_int_equal(value_block_map_sure_span(map, hashes[0], &off, &len), 1);
  env_t *io;
  env_rfile_t *f;
  uint64_t at;
  assert_int_equal(value_block_map_own_place(map, off, len, &io, &f, &at), 1);
  assert_int_equal(block_index_put_map(bi, NUMBER, map), BFH_OK);
  size_t n;
  uint8_t *p = read_all(fx->path, &n);
  assert_true(at + 1 < n);
  p[at + 1] ^= 0x40;
  FILE *fp = fopen(fx->path, "r+b"); /* in place: the map's descriptor reads the same file */
  assert_non_null(fp);
  assert_int_equal(fseek(fp, (long)(at + 1), SEEK_SET), 0);
  assert_int_equal(fputc(p[at + 1], fp), p[at + 1]);
  assert_int_equal(fclose(fp), 0);
  free(p);
  assert_int_equal(block_index_read_ahead_own(bi, &number, 1, hashes, 1, &a), BFH_OK);
  assert_int_equal(a.n, 1);
  block_map_io_t io1 = {NULL, NULL, 0, 0, 0, &a};
  assert_int_equal(probe_names(bi, ids[0], &io1, &named, &err), BFH_E_CORRUPT);
  block_chunks_ahead_release(&a);
  block_index_destroy(bi);
}

/* A file of version 1 or 2, written byte by byte as the old code wrote it: a 32-byte header
   with the table's number and size but no tag. */
static void write_old(const fixture_t *fx, uint32_t version, uint32_t flags,
                      const block_filter_t *after) {
  size_t leaf = value_filter_serialized_size(M), hdr = 32;
  size_t n = hdr + leaf + (after ? block_filter_serialized_size(after) : 0);
  uint8_t *p = calloc(1, n);
  assert_non_null(p);
  memcpy(p, "BFHC", 4);
  encode_fixed32(p + 4, version);
  encode_fixed64(p + 8, NUMBER);
  encode_fixed64(p + 16, TSIZE);
  encode_fixed32(p + 24, flags);
  encode_fixed32(p + 28, crc32c_mask(crc32c_value(p, 28)));
  value_filter_serialize(fx->leaf, p + hdr);
  if (after) block_filter_serialize(after, p + hdr + leaf);
  write_all(fx->path, p, n);
  free(p);
}

/* Versions 1 and 2 named their table by number and size only, which a database made again in
   the same directory reuses: such a file is stale, never trusted. */
static void test_leaf_cache_old_versions_are_stale(void **state) {
  fixture_t *fx = *state;
  write_old(fx, 1, 0, NULL);
  expect_stale(fx, "version 1");
  write_old(fx, 2, 0, NULL);
  expect_stale(fx, "version 2");
  write_old(fx, 2, LEAF_CACHE_HAS_BLOCKS, fx->blocks);
  expect_stale(fx, "version 2 with a block filter");
  /* Version 3: a 40-byte header with the tag, no stamp. */
  size_t leaf = value_filter_serialized_size(M), n = 40 + leaf;
  uint8_t *p = calloc(1, n);
  assert_non_null(p);
  memcpy(p, "BFHC", 4);
  encode_fixed32(p + 4, 3);
  encode_fixed64(p + 8, NUMBER);
  encode_fixed64(p + 16, TSIZE);
  encode_fixed64(p + 24, TAG);
  encode_fixed32(p + 32, 0);
  encode_fixed32(p + 36, crc32c_mask(crc32c_value(p, 36)));
  value_filter_serialize(fx->leaf, p + 40);
  write_all(fx->path, p, n);
  free(p);
  expect_stale(fx, "version 3");
}

/* Bound by the stamp: a file made with stamp S loads for S only (and gives its tag), never
   for another stamp, and a file made without one (0) never loads by its stamp. */
static void test_leaf_cache_stamp_binds(void **state) {
  fixture_t *fx = *state;
  err_t err;
  leaf_cache_table_t made = TABLE;
  made.stamp = 0xfeedfacecafebeefull;
  assert_int_equal(leaf_cache_store(env_default(), fx->path, &made, fx->leaf, fx->blocks, &err),
                   BFH_OK);
  value_filter_t *f = NULL;
  block_filter_t *b = NULL;
  leaf_cache_table_t t = {NUMBER, TSIZE, 0, made.stamp};
  assert_int_equal(leaf_cache_load_stamped(env_default(), fx->path, &t, M, K, SEED, &f, &b, &err),
                   BFH_OK);
  assert_int_equal(t.tag, TAG);
  assert_memory_equal(f->words, fx->leaf->words, fx->leaf->nwords * 8);
  assert_non_null(b);
  value_filter_destroy(f);
  block_filter_destroy(b);
  const leaf_cache_table_t other[] = {{NUMBER, TSIZE, 0, made.stamp ^ 1},
                                      {NUMBER, TSIZE, 0, 0},
                                      {NUMBER + 1, TSIZE, 0, made.stamp},
                                      {NUMBER, TSIZE + 1, 0, made.stamp}};
  for (size_t i = 0; i < sizeof other / sizeof *other; i++) {
    t = other[i];
    f = NULL;
    b = NULL;
    assert_int_equal(leaf_cache_load_stamped(env_default(), fx->path, &t, M, K, SEED, &f, &b, &err),
                     BFH_E_CORRUPT);
    assert_null(f);
    assert_null(b);
    assert_int_equal(t.tag, 0);
  }
  /* The tag still binds it as before. */
  block_filter_destroy(load_ok(fx));
  /* A file without a stamp never loads by one. */
  assert_int_equal(leaf_cache_store(env_default(), fx->path, &TABLE, fx->leaf, NULL, &err), BFH_OK);
  t = (leaf_cache_table_t){NUMBER, TSIZE, 0, 0};
  assert_int_equal(leaf_cache_load_stamped(env_default(), fx->path, &t, M, K, SEED, &f, &b, &err),
                   BFH_E_CORRUPT);
}

/* Rewrites the header's flags (and its checksum). */
static void set_flags(const char *path, uint32_t flags) {
  size_t n;
  uint8_t *p = read_all(path, &n);
  encode_fixed32(p + 40, flags);
  encode_fixed32(p + 44, crc32c_mask(crc32c_value(p, 44)));
  write_all(path, p, n);
  free(p);
}

static void test_leaf_cache_damaged_block_filter_is_stale(void **state) {
  fixture_t *fx = *state;
  err_t err;
  assert_int_equal(leaf_cache_store(env_default(), fx->path, &TABLE, fx->leaf, fx->blocks, &err),
                   BFH_OK);
  size_t n, leaf_end = LEAF_CACHE_HEADER_BYTES + value_filter_serialized_size(M);
  uint8_t *good = read_all(fx->path, &n);
  /* A flipped byte anywhere in the block filter section: its magic, sizes, refs, rows, crc. */
  for (size_t off = leaf_end; off < n; off += 13) {
    uint8_t *p = malloc(n);
    assert_non_null(p);
    memcpy(p, good, n);
    p[off] ^= 0x20;
    write_all(fx->path, p, n);
    free(p);
    char what[64];
    snprintf(what, sizeof what, "flip at +%zu", off - leaf_end);
    expect_stale(fx, what);
  }
  write_all(fx->path, good, n - 1); /* cut short */
  expect_stale(fx, "block filter cut short");
  write_all(fx->path, good, leaf_end); /* the flag, and nothing after the leaf */
  expect_stale(fx, "flag without a block filter");
  uint8_t *longer = malloc(n + 1);
  assert_non_null(longer);
  memcpy(longer, good, n);
  longer[n] = 0;
  write_all(fx->path, longer, n + 1); /* a byte too many */
  expect_stale(fx, "a byte after the block filter");
  free(longer);
  write_all(fx->path, good, n);
  set_flags(fx->path, 0); /* a block filter the flags do not announce */
  expect_stale(fx, "block filter without the flag");
  set_flags(fx->path, LEAF_CACHE_HAS_BLOCKS | 2); /* an unknown flag */
  expect_stale(fx, "unknown flag");
  set_flags(fx->path, LEAF_CACHE_HAS_BLOCKS);
  block_filter_destroy(load_ok(fx)); /* restored */
  free(good);
}

static void test_leaf_cache_mismatch_or_absent(void **state) {
  fixture_t *fx = *state;
  err_t err;
  value_filter_t *f = NULL;
  block_filter_t *b = NULL;
  assert_int_equal(leaf_cache_load(env_default(), fx->path, &TABLE, M, K, SEED, &f, &b, &err),
                   BFH_NOT_FOUND);
  assert_int_equal(leaf_cache_store(env_default(), fx->path, &TABLE, fx->leaf, fx->blocks, &err),
                   BFH_OK);
  struct {
    uint64_t number, size, tag, m;
    uint32_t k;
    uint64_t seed;
  } other[] = {{NUMBER + 1, TSIZE, TAG, M, K, SEED}, {NUMBER, TSIZE + 1, TAG, M, K, SEED},
               {NUMBER, TSIZE, TAG ^ 1, M, K, SEED}, /* same number and size, other bytes */
               {NUMBER, TSIZE, TAG, 2 * M, K, SEED}, {NUMBER, TSIZE, TAG, M, K + 1, SEED},
               {NUMBER, TSIZE, TAG, M, K, SEED + 1}};
  for (size_t i = 0; i < sizeof other / sizeof *other; i++) {
    leaf_cache_table_t t = {other[i].number, other[i].size, other[i].tag, 0};
    assert_int_equal(leaf_cache_load(env_default(), fx->path, &t, other[i].m, other[i].k,
                                     other[i].seed, &f, &b, &err),
                     BFH_E_CORRUPT);
    assert_null(b);
    if (i < 3) assert_non_null(strstr(err.msg, "stale"));
  }
}

/* A stamp changes with every field of the stat and with the footer; a file whose times are
   within the margin before now (or after it) gets none. */
static void test_leaf_cache_stamp_fields_and_margin(void **state) {
  (void)state;
  const int64_t now = 1700000000000000000ll, old = now - LEAF_CACHE_STAMP_MARGIN_NS;
  const env_file_stamp_t base = {1, 2, 3, old, old};
  uint8_t footer[48] = {0};
  uint64_t s0 = leaf_cache_stamp(&base, footer, sizeof footer, now);
  assert_true(s0 != 0);
  assert_int_equal(leaf_cache_stamp(&base, footer, sizeof footer, now), s0);
  env_file_stamp_t v[5];
  for (int i = 0; i < 5; i++) v[i] = base;
  v[0].dev++;
  v[1].ino++;
  v[2].size++;
  v[3].mtime_ns--;
  v[4].ctime_ns--;
  for (int i = 0; i < 5; i++)
    assert_true(leaf_cache_stamp(&v[i], footer, sizeof footer, now) != s0);
  footer[47] ^= 1;
  assert_true(leaf_cache_stamp(&base, footer, sizeof footer, now) != s0);
  env_file_stamp_t fresh = base;
  fresh.ctime_ns = old + 1; /* changed less than the margin ago */
  assert_int_equal(leaf_cache_stamp(&fresh, footer, sizeof footer, now), 0);
  fresh = base;
  fresh.mtime_ns = now + 1; /* in the future */
  assert_int_equal(leaf_cache_stamp(&fresh, footer, sizeof footer, now), 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_leaf_cache_round_trip_without_blocks, setup, teardown),
      cmocka_unit_test_setup_teardown(test_leaf_cache_round_trip_with_blocks, setup, teardown),
      cmocka_unit_test_setup_teardown(test_leaf_cache_old_versions_are_stale, setup, teardown),
      cmocka_unit_test_setup_teardown(test_leaf_cache_map_versions, setup, teardown),
      cmocka_unit_test_setup_teardown(test_leaf_cache_map_chunks_read_ahead, setup, teardown),
      cmocka_unit_test_setup_teardown(test_leaf_cache_stamp_binds, setup, teardown),
      cmocka_unit_test(test_leaf_cache_stamp_fields_and_margin),
      cmocka_unit_test_setup_teardown(test_leaf_cache_damaged_block_filter_is_stale, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_leaf_cache_mismatch_or_absent, setup, teardown),
  };
  return cmocka_run_group_tests(tests, group_setup, group_teardown);
}

/* The LevelDB engine's value-to-block maps (doc/search.md "Value-to-block maps"; doc/format.md
 * "LevelDB filter cache"): under the default layout (lean, block_maps = 1) a table's map is
 * kept in its sidecar cache file (version 5) and its head, not its block filter, is the
 * table's block level in memory; a search reads one chunk of it from the cache file it was
 * loaded from. Every check compares AUTO with SCAN (the oracle) on the same handle:
 *   - maps in use: overwrites and deletes across three tables, then a reopen that takes every
 *     table's leaf and map from its cache file;
 *   - a cache file replaced under an open handle (by another table's file): the chunks are
 *     still read from the file the head came from (nothing damaged, nothing missed);
 *   - damaged chunks in every cache file: counted (block_filters_damaged) and answered around
 *     (the table read whole);
 *   - cache files of the version before maps (4): they load as they are, and their tables
 *     keep block filters (no chunk read).
 * The database is written by bfh's LevelDB engine (stock LevelDB through its C API). Three
 * flushes stay below LevelDB's level-0 trigger (4 files): no compaction changes the tables. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bfh.h"
#include "api/testbed.h"
#include "tests/test_util.h"
#include "util/coding.h"
#include "util/crc32c.h"

#define ROUNDS 3
#define KEYS 2000 /* per round */
#define VAL_BYTES 100

static char tmpdir[4096];
/* The value each key holds (0: deleted), after the writes. */
static uint32_t current[KEYS];

static size_t make_value(uint32_t v, char *out) {
  int n = snprintf(out, VAL_BYTES + 1, "value-%010u-", v);
  memset(out + n, 'a' + (int)(v % 26), VAL_BYTES - (size_t)n);
  return VAL_BYTES;
}

static bfh_options options(int maps) {
  bfh_options o;
  bfh_options_init(&o);
  o.engine = BFH_ENGINE_LEVELDB;
  o.block_maps = maps;
  return o;
}

static bfh_db *open_db(const char *dir, int maps) {
  bfh_options o = options(maps);
  bfh_db *db = NULL;
  if (bfh_open(dir, &o, &db) != BFH_OK) fail_msg("bfh_open %s: %s", dir, bfh_last_error(NULL));
  err_t err;
  index_sync_t *sync = bfh_internal_sync(db);
  if (sync && index_sync_loader_wait(sync, NULL, &err) != BFH_OK) fail_msg("load: %s", err.msg);
  return db;
}

/* Round 0 writes keys 0..KEYS-1 with values 1..KEYS; round 1 overwrites the even keys with
   values KEYS+1..; round 2 deletes every third key and overwrites every fifth again. A flush
   after each round: three tables. */
static void write_db(const char *dir) {
  bfh_options o = options(1);
  o.create_if_missing = 1;
  bfh_db *db = NULL;
  assert_int_equal(bfh_open(dir, &o, &db), BFH_OK);
  char key[16], val[VAL_BYTES + 1];
  for (int round = 0; round < ROUNDS; round++) {
    for (uint32_t i = 0; i < KEYS; i++) {
      snprintf(key, sizeof key, "k%08u", i);
      uint32_t v = 0;
      if (round == 0) v = 1 + i;
      if (round == 1 && i % 2 == 0) v = KEYS + 1 + i;
      if (round == 2 && i % 5 == 0) v = 2 * KEYS + 1 + i;
      if (round == 2 && i % 3 == 0) {
        assert_int_equal(bfh_delete(db, key, strlen(key)), BFH_OK);
        current[i] = 0;
        continue;
      }
      if (!v) continue;
      assert_int_equal(bfh_put(db, key, strlen(key), val, make_value(v, val)), BFH_OK);
      current[i] = v;
    }
    assert_int_equal(bfh_flush(db), BFH_OK);
  }
  bfh_close(db);
}

typedef struct keys {
  char k[64][16];
  size_t n;
} keys_t;

static int on_match(void *arg, const void *key, size_t len) {
  keys_t *ks = arg;
  if (ks->n < 64 && len < 16) {
    memcpy(ks->k[ks->n], key, len);
    ks->k[ks->n][len] = 0;
    ks->n++;
  }
  return 0;
}

static int cmp_key(const void *a, const void *b) {
  return strcmp(a, b);
}

/* AUTO and SCAN give the same keys for values of every generation (present, overwritten,
   deleted) and for absent ones; returns the map chunks AUTO read. */
static uint64_t check_auto_equals_scan(bfh_db *db) {
  char val[VAL_BYTES + 1];
  uint64_t chunks = 0;
  for (uint32_t v = 1; v <= 3 * KEYS + 50; v += 7) {
    keys_t a = {.n = 0}, s = {.n = 0};
    bfh_search_stats st;
    size_t len = make_value(v, val);
    assert_int_equal(bfh_search(db, val, len, BFH_SEARCH_AUTO, on_match, &a, &st), BFH_OK);
    chunks += st.map_chunks_read;
    /* A chunk read from a cache file is counted in bytes_read, as the own engine's are. */
    if (st.map_chunks_read > 0 && st.bytes_read < st.map_chunks_read * 6)
      fail_msg("value %u: %llu map chunks read, %llu bytes counted", v,
               (unsigned long long)st.map_chunks_read, (unsigned long long)st.bytes_read);
    assert_int_equal(bfh_search(db, val, len, BFH_SEARCH_SCAN, on_match, &s, NULL), BFH_OK);
    qsort(a.k, a.n, sizeof a.k[0], cmp_key);
    qsort(s.k, s.n, sizeof s.k[0], cmp_key);
    if (a.n != s.n) fail_msg("value %u: AUTO %zu keys, SCAN %zu", v, a.n, s.n);
    for (size_t i = 0; i < a.n; i++) assert_string_equal(a.k[i], s.k[i]);
    /* The oracle itself: the key holding v now, if any. */
    size_t want = 0;
    for (uint32_t i = 0; i < KEYS; i++) want += current[i] == v;
    assert_int_equal(s.n, want);
  }
  return chunks;
}

static void cache_dir(const char *dir, char *out, size_t n) {
  snprintf(out, n, "%s/%s", dir, LEAF_CACHE_DIR);
}

/* The cache files' paths (up to 16). */
static size_t cache_files(const char *dir, char paths[16][4600]) {
  char cd[4300];
  cache_dir(dir, cd, sizeof cd);
  DIR *d = opendir(cd);
  assert_non_null(d);
  size_t n = 0;
  struct dirent *de;
  while ((de = readdir(d)) && n < 16)
    if (strstr(de->d_name, ".vf") && !strstr(de->d_name, ".tmp"))
      snprintf(paths[n++], 4600, "%s/%s", cd, de->d_name);
  closedir(d);
  return n;
}

static uint8_t *read_all(const char *path, size_t *n) {
  FILE *f = fopen(path, "rb");
  assert_non_null(f);
  fseek(f, 0, SEEK_END);
  long len = ftell(f);
  fseek(f, 0, SEEK_SET);
  uint8_t *b = malloc((size_t)len);
  assert_non_null(b);
  assert_int_equal(fread(b, 1, (size_t)len, f), (size_t)len);
  fclose(f);
  *n = (size_t)len;
  return b;
}

static void write_all(const char *path, const uint8_t *b, size_t n) {
  char tmp[4500];
  snprintf(tmp, sizeof tmp, "%s.x", path);
  FILE *f = fopen(tmp, "wb");
  assert_non_null(f);
  assert_int_equal(fwrite(b, 1, n, f), n);
  fclose(f);
  assert_int_equal(rename(tmp, path), 0);
}

/* Where a version-5 cache file's parts lie (m: the leaf's bits). */
typedef struct parts {
  size_t leaf_end, blocks_len, head_len, chunks_len;
} parts_t;

static parts_t parse(const uint8_t *b, size_t n, uint64_t m) {
  assert_true(n > LEAF_CACHE_HEADER_BYTES);
  assert_int_equal(decode_fixed32(b + 4), LEAF_CACHE_VERSION);
  assert_int_equal(decode_fixed32(b + 40), LEAF_CACHE_HAS_BLOCKS | LEAF_CACHE_HAS_MAP);
  parts_t p = {LEAF_CACHE_HEADER_BYTES + value_filter_serialized_size(m), 0, 0, 0};
  p.blocks_len = decode_fixed64(b + p.leaf_end);
  p.head_len = decode_fixed64(b + p.leaf_end + 8);
  p.chunks_len = decode_fixed64(b + p.leaf_end + 16);
  assert_int_equal(
      p.leaf_end + LEAF_CACHE_MAP_SECTION_BYTES + p.blocks_len + p.head_len + p.chunks_len, n);
  return p;
}

static uint64_t leaf_bits(bfh_db *db) {
  bfh_db_stats st;
  assert_int_equal(bfh_stats(db, &st), BFH_OK);
  return st.value_filter_bits;
}

/* Rewrites each of the database's ROUNDS cache files (made with m-bit leaves): edit changes
   its bytes b (len of them, parts p) in place and returns the length to write back. */
typedef size_t (*cache_edit_fn)(uint8_t *b, size_t len, const parts_t *p);

static void rewrite_cache_files(const char *dir, uint64_t m, cache_edit_fn edit) {
  char paths[16][4600];
  size_t n = cache_files(dir, paths);
  assert_int_equal(n, ROUNDS);
  for (size_t i = 0; i < n; i++) {
    size_t len;
    uint8_t *b = read_all(paths[i], &len);
    parts_t p = parse(b, len, m);
    write_all(paths[i], b, edit(b, len, &p));
    free(b);
  }
}

/* A database written in tmpdir/name, its cache files edited by edit, then opened with maps. */
static bfh_db *open_with_edited_cache(const char *name, cache_edit_fn edit) {
  char dir[4200];
  snprintf(dir, sizeof dir, "%s/%s", tmpdir, name);
  write_db(dir);
  bfh_db *db = open_db(dir, 1);
  uint64_t m = leaf_bits(db);
  bfh_close(db);
  rewrite_cache_files(dir, m, edit);
  return open_db(dir, 1);
}

static void test_maps_auto_equals_scan(void **state) {
  (void)state;
  char dir[4200];
  snprintf(dir, sizeof dir, "%s/maps", tmpdir);
  write_db(dir);
  /* Reopened with maps: every table from its cache file, with its map. */
  bfh_db *db = open_db(dir, 1);
  engine_leveldb_stats_t es;
  engine_leveldb_get_stats(bfh_internal_engine(db), &es);
  assert_int_equal(es.index.tables_cached, ROUNDS);
  assert_int_equal(es.index.tables_read, 0);
  block_index_stats_t bs;
  block_index_get_stats(value_index_blocks(bfh_internal_index(db)), &bs);
  assert_int_equal(bs.maps, ROUNDS);
  bfh_db_stats with;
  assert_int_equal(bfh_stats(db, &with), BFH_OK);
  bfh_close(db);
  /* The same tables with block filters (block_maps = 0): the maps hold less. Both before any
     search: the searches' validating gets may have LevelDB compact the tables (by their
     seeks), and the two opens must hold the same tables. */
  db = open_db(dir, 0);
  block_index_get_stats(value_index_blocks(bfh_internal_index(db)), &bs);
  assert_int_equal(bs.maps, 0);
  assert_int_equal(bs.tables, ROUNDS);
  bfh_db_stats without;
  assert_int_equal(bfh_stats(db, &without), BFH_OK);
  assert_true(with.block_filter_bytes < without.block_filter_bytes / 2);
  assert_true(with.index_bytes < without.index_bytes);
  assert_int_equal(check_auto_equals_scan(db), 0);
  bfh_close(db);
  /* (A table LevelDB made in the open without maps has one in its cache file too.) */
  db = open_db(dir, 1);
  block_index_get_stats(value_index_blocks(bfh_internal_index(db)), &bs);
  assert_true(bs.tables >= 1);
  assert_int_equal(bs.maps, bs.tables);
  assert_true(check_auto_equals_scan(db) > 0);
  bfh_db_stats st;
  assert_int_equal(bfh_stats(db, &st), BFH_OK);
  assert_int_equal(st.block_filters_damaged, 0);
  bfh_close(db);
}

/* Every cache file is replaced (renamed over) by another table's while the handle is open:
   its maps still read their chunks from the files they were loaded from. */
static void test_replaced_cache_file(void **state) {
  (void)state;
  char dir[4200];
  snprintf(dir, sizeof dir, "%s/replaced", tmpdir);
  write_db(dir);
  bfh_db *db = open_db(dir, 1);
  char paths[16][4600];
  size_t n = cache_files(dir, paths);
  assert_int_equal(n, ROUNDS);
  size_t len[ROUNDS];
  uint8_t *bytes[ROUNDS];
  for (size_t i = 0; i < n; i++) bytes[i] = read_all(paths[i], &len[i]);
  for (size_t i = 0; i < n; i++) write_all(paths[i], bytes[(i + 1) % n], len[(i + 1) % n]);
  assert_true(check_auto_equals_scan(db) > 0);
  bfh_db_stats st;
  assert_int_equal(bfh_stats(db, &st), BFH_OK);
  assert_int_equal(st.block_filters_damaged, 0); /* no chunk of another file was read */
  bfh_close(db);
  for (size_t i = 0; i < n; i++) free(bytes[i]);
}

/* Past the descriptor budget (0 here) a map holds no descriptor: it opens its cache file again
   at each chunk read, checked by its stamp. The answers are the same; once every file is
   replaced (renamed over) by another table's, the reads are refused and counted as damage and
   their tables read whole, with the same answers. (Without the stamp check this test passes
   too: another table's file puts other bytes at a chunk's offset, which fail the chunk's CRC.
   The stamp is what refuses a file whose chunks would pass it.) */
static void test_maps_past_descriptor_budget(void **state) {
  (void)state;
  char dir[4200];
  snprintf(dir, sizeof dir, "%s/budget", tmpdir);
  write_db(dir);
  leaf_cache_test_map_fd_budget(0);
  bfh_db *db = open_db(dir, 1);
  block_index_stats_t bs;
  block_index_get_stats(value_index_blocks(bfh_internal_index(db)), &bs);
  assert_int_equal(bs.maps, ROUNDS);
  char paths[16][4600];
  size_t n = cache_files(dir, paths);
  assert_int_equal(n, ROUNDS);
  size_t len[ROUNDS];
  uint8_t *bytes[ROUNDS];
  for (size_t i = 0; i < n; i++) bytes[i] = read_all(paths[i], &len[i]);
  assert_true(check_auto_equals_scan(db) > 0);
  bfh_db_stats st;
  assert_int_equal(bfh_stats(db, &st), BFH_OK);
  assert_int_equal(st.block_filters_damaged, 0);
  bfh_close(db);
  /* Reopened, then every cache file replaced by another table's (the searches' gets may have
     had LevelDB compact meanwhile: the files now may be other tables', all the more another's). */
  db = open_db(dir, 1);
  char now[16][4600];
  size_t m = cache_files(dir, now);
  for (size_t i = 0; i < m; i++) {
    size_t j = (i + 1) % n;
    if (strcmp(now[i], paths[j]) == 0) j = (j + 1) % n;
    write_all(now[i], bytes[j], len[j]);
  }
  (void)check_auto_equals_scan(db);
  assert_int_equal(bfh_stats(db, &st), BFH_OK);
  assert_true(st.block_filters_damaged >= 1);
  bfh_close(db);
  leaf_cache_test_map_fd_budget(-1);
  for (size_t i = 0; i < n; i++) free(bytes[i]);
}

static size_t flip_every_chunk(uint8_t *b, size_t len, const parts_t *p) {
  size_t chunks = len - p->chunks_len;
  const size_t chunk_bytes = VALUE_BLOCK_MAP_ENTRY_BYTES * VALUE_BLOCK_MAP_CHUNK_ENTRIES + 4;
  for (size_t off = 0; off < p->chunks_len; off += chunk_bytes) b[chunks + off + 1] ^= 0x40;
  return len;
}

/* A byte of every chunk of every cache file flipped: each map's chunk fails its checksum at
   its first read, is counted, and the table is read whole. */
static void test_damaged_chunks(void **state) {
  (void)state;
  bfh_db *db = open_with_edited_cache("damaged", flip_every_chunk);
  block_index_stats_t bs;
  block_index_get_stats(value_index_blocks(bfh_internal_index(db)), &bs);
  assert_int_equal(bs.maps, ROUNDS); /* the heads are whole */
  (void)check_auto_equals_scan(db);
  bfh_db_stats st;
  assert_int_equal(bfh_stats(db, &st), BFH_OK);
  assert_true(st.block_filters_damaged >= 1);
  assert_true(st.block_filters_damaged <= ROUNDS);
  bfh_close(db);
}

typedef struct damage_seen {
  int n;
  char file[ROUNDS + 1][64];
  uint64_t offset[ROUNDS + 1];
} damage_seen_t;

static void on_damage(void *arg, const char *file, uint64_t offset, const char *what) {
  damage_seen_t *d = arg;
  (void)what;
  if (d->n <= ROUNDS) {
    snprintf(d->file[d->n], sizeof d->file[0], "%s", file);
    d->offset[d->n] = offset;
  }
  d->n++;
}

/* bfh check reads every chunk of every map: cache files whose chunks are damaged (their
   leaf, block filter and head whole) are each reported as harmless cache damage, at the
   offset of their first chunk. Before the check read the maps it reported nothing. */
static void test_check_reads_map_chunks(void **state) {
  (void)state;
  char dir[4200];
  snprintf(dir, sizeof dir, "%s/check", tmpdir);
  write_db(dir);
  bfh_options o = options(1);
  bfh_check_report rep;
  assert_int_equal(bfh_check(dir, &o, NULL, NULL, &rep), BFH_OK);
  assert_int_equal(rep.cache_damaged, 0);
  bfh_db *db = open_db(dir, 1);
  uint64_t m = leaf_bits(db);
  bfh_close(db);
  rewrite_cache_files(dir, m, flip_every_chunk);
  damage_seen_t seen = {0};
  assert_int_equal(bfh_check(dir, &o, on_damage, &seen, &rep), BFH_OK); /* the tables are whole */
  assert_int_equal(rep.damaged, 0);
  assert_int_equal(rep.cache_damaged, ROUNDS);
  assert_int_equal(seen.n, ROUNDS);
  for (int i = 0; i < ROUNDS; i++) {
    char path[4400];
    snprintf(path, sizeof path, "%s/%s", dir, seen.file[i]);
    size_t len;
    uint8_t *b = read_all(path, &len);
    parts_t p = parse(b, len, m);
    free(b);
    assert_int_equal(seen.offset[i], len - p.chunks_len); /* its first chunk */
  }
}

/* header | leaf | block filter: the sections, the head and the chunks cut out. */
static size_t to_version4(uint8_t *b, size_t len, const parts_t *p) {
  (void)len;
  memmove(b + p->leaf_end, b + p->leaf_end + LEAF_CACHE_MAP_SECTION_BYTES, p->blocks_len);
  encode_fixed32(b + 4, LEAF_CACHE_VERSION_NO_MAP);
  encode_fixed32(b + 40, LEAF_CACHE_HAS_BLOCKS);
  encode_fixed32(b + 44, crc32c_mask(crc32c_value(b, 44)));
  return p->leaf_end + p->blocks_len;
}

/* Cache files of version 4 (a leaf and a block filter, no map): they load (no table read
   again) and their tables are read through their block filters. */
static void test_version4_cache(void **state) {
  (void)state;
  bfh_db *db = open_with_edited_cache("v4", to_version4);
  engine_leveldb_stats_t es;
  engine_leveldb_get_stats(bfh_internal_engine(db), &es);
  assert_int_equal(es.index.tables_cached, ROUNDS);
  assert_int_equal(es.index.tables_read, 0);
  assert_int_equal(es.index.cache_stale, 0);
  block_index_stats_t bs;
  block_index_get_stats(value_index_blocks(bfh_internal_index(db)), &bs);
  assert_int_equal(bs.maps, 0);
  assert_int_equal(bs.tables, ROUNDS); /* block filters */
  /* (Chunks may still be read: a table LevelDB makes by compaction meanwhile gets a map.) */
  (void)check_auto_equals_scan(db);
  bfh_db_stats st;
  assert_int_equal(bfh_stats(db, &st), BFH_OK);
  assert_int_equal(st.block_filters_damaged, 0);
  bfh_close(db);
}

/* The read-only engine with an index directory keeps the same cache files there: maps too,
   loaded again by a second handle. */
static void test_read_only_index_dir(void **state) {
  (void)state;
  char dir[4200], idx[4200];
  snprintf(dir, sizeof dir, "%s/ro", tmpdir);
  snprintf(idx, sizeof idx, "%s/ro-index", tmpdir);
  write_db(dir);
  for (int pass = 0; pass < 2; pass++) {
    bfh_options o = options(1);
    o.read_only = 1;
    o.index_dir = idx;
    bfh_db *db = NULL;
    assert_int_equal(bfh_open(dir, &o, &db), BFH_OK);
    err_t err;
    index_sync_t *sync = bfh_internal_sync(db);
    if (sync && index_sync_loader_wait(sync, NULL, &err) != BFH_OK) fail_msg("%s", err.msg);
    assert_true(check_auto_equals_scan(db) > 0);
    block_index_stats_t bs;
    block_index_get_stats(value_index_blocks(bfh_internal_index(db)), &bs);
    assert_int_equal(bs.maps, ROUNDS);
    bfh_close(db);
  }
}

static int setup(void **state) {
  (void)state;
  return test_tmpdir_create(tmpdir, sizeof tmpdir, "leveldb_map");
}

static int teardown(void **state) {
  (void)state;
  test_rmrf(tmpdir);
  return 0;
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_maps_auto_equals_scan),
      cmocka_unit_test(test_replaced_cache_file),
      cmocka_unit_test(test_maps_past_descriptor_budget),
      cmocka_unit_test(test_damaged_chunks),
      cmocka_unit_test(test_check_reads_map_chunks),
      cmocka_unit_test(test_version4_cache),
      cmocka_unit_test(test_read_only_index_dir),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}

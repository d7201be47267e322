/* bfh_stats reports the value filters a handle uses, on both engines (one body per test,
 * driven by the engine): m, k and the seed are the database's, stored at its creation, and
 * stay so at every reopen (an open asking for others fails, one with value filters off leaves
 * them alone); d and the placement are each open's own. It also checks the sizes that follow
 * from them: every leaf is m/8 bytes in memory, and leaves on disk hold less than that.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "bfh.h"
#include "tests/test_util.h"

#define NKEYS 3000
#define DEFAULT_SEED BFH_DEFAULT_HASH_SEED /* a new database's */

/* The parameters the database is created with: none of them a default. */
#define STORED_M 4096u
#define STORED_K 5u
#define STORED_SEED 0x1234567890abcdefull
#define CREATE_ORDER 3u
#define CREATE_PLACEMENT BFH_PLACEMENT_POSITIONAL
#define LEAN_BITS 3 /* the lean layout with block filters (index_bits_per_value) */

typedef struct fixture {
  bfh_engine engine;
  char dir[512];
  char path[600];
  bfh_db *db; /* open handle, closed by the teardown if a test failed with it open */
} fixture_t;

static bfh_engine g_engines[] = {BFH_ENGINE_LSM, BFH_ENGINE_LEVELDB};

static int setup(void **state) {
  bfh_engine engine = *(bfh_engine *)*state;
  fixture_t *f = calloc(1, sizeof *f);
  if (!f) return -1;
  f->engine = engine;
  if (test_tmpdir_create(f->dir, sizeof f->dir, "api_stats_test") != 0) {
    free(f);
    return -1;
  }
  snprintf(f->path, sizeof f->path, "%s/db", f->dir);
  *state = f;
  return 0;
}

static int teardown(void **state) {
  fixture_t *f = *state;
  int rc = 0;
  if (f->db && bfh_close(f->db) != BFH_OK) rc = -1;
  if (test_rmrf(f->dir) != 0) rc = -1;
  free(f);
  return rc;
}

static void small_options(const fixture_t *f, bfh_options *o) {
  bfh_options_init(o);
  o->engine = f->engine;
  o->memtable_bytes = 64 << 10;
  o->table_bytes = 16 << 10;
}

static void open_ok(fixture_t *f, const bfh_options *o) {
  assert_null(f->db);
  int rc = bfh_open(f->path, o, &f->db);
  if (rc != BFH_OK) fail_msg("bfh_open: %s: %s", bfh_strerror(rc), bfh_last_error(NULL));
}

static void close_ok(fixture_t *f) {
  bfh_db *db = f->db;
  f->db = NULL;
  assert_int_equal(bfh_close(db), BFH_OK);
}

static void fill(fixture_t *f) {
  for (int i = 0; i < NKEYS; i++) {
    char k[16], v[16];
    int kl = snprintf(k, sizeof k, "key%05d", i), vl = snprintf(v, sizeof v, "val%03d", i % 100);
    assert_int_equal(bfh_put(f->db, k, (size_t)kl, v, (size_t)vl), BFH_OK);
  }
  assert_int_equal(bfh_flush(f->db), BFH_OK);
}

static bfh_db_stats stats(fixture_t *f) {
  bfh_db_stats st;
  int rc = bfh_stats(f->db, &st);
  if (rc != BFH_OK) fail_msg("bfh_stats: %s: %s", bfh_strerror(rc), bfh_last_error(f->db));
  return st;
}

static void expect_params(const bfh_db_stats *st, uint64_t m, uint32_t k, uint32_t d, int placement,
                          uint64_t seed) {
  assert_int_equal(st->value_filters, 1);
  assert_int_equal(st->value_filter_bits, m);
  assert_int_equal(st->value_filter_hashes, k);
  assert_int_equal(st->order, d);
  assert_int_equal(st->placement, placement);
  assert_int_equal(st->hash_seed, seed);
}

/* bfh_stored_params: nothing recorded in a new directory (opt unchanged); a damaged
   BFH-PARAMS is BFH_E_CORRUPT naming the file. */
static void test_api_stats_stored_params_without_open(void **state) {
  fixture_t *f = *state;
  bfh_options o, before;
  bfh_options_init(&o);
  before = o;
  assert_int_equal(bfh_stored_params(f->dir, &o), BFH_NOT_FOUND);
  assert_memory_equal(&o, &before, sizeof o);
  assert_int_equal(bfh_stored_params(f->dir, NULL), BFH_E_INVALID);
  small_options(f, &o);
  open_ok(f, &o);
  close_ok(f);
  char params[700];
  snprintf(params, sizeof params, "%s/BFH-PARAMS", f->path);
  assert_int_equal(test_file_xor_byte(params, 10, 0x5a), 0);
  assert_int_equal(bfh_stored_params(f->path, &o), BFH_E_CORRUPT);
  assert_non_null(strstr(bfh_last_error(NULL), "BFH-PARAMS"));
}

/* A database created with the defaults reports bfh_options_init's values. */
static void test_api_stats_defaults(void **state) {
  fixture_t *f = *state;
  bfh_options o;
  small_options(f, &o);
  /* The default layout is the lean one with value-to-block maps (doc/search.md "The lean
     index"); the paper's is index_bits_per_value = 0. */
  assert_int_equal(o.index_bits_per_value, BFH_LEAN_MAP_BITS);
  assert_int_equal(o.block_maps, 1);
  open_ok(f, &o);
  fill(f);
  bfh_db_stats st = stats(f);
  /* k 0 in the options: a new database of this layout gets ln 2 x 11 bits, rounded (both
     engines here write value-to-block maps). */
  assert_int_equal(o.value_filter_hashes, 0);
  expect_params(&st, 2000000, 8, 5, BFH_PLACEMENT_SIMILARITY, DEFAULT_SEED);
  assert_true(st.leaf_filters >= 1);
  /* Leaves in memory, folded into the slices only: no leaf's m bits are kept, no hierarchy. */
  assert_int_equal(st.leaf_memory_bytes, 0);
  assert_true(st.internal_bytes < 4096);
  assert_true(st.sliced_bytes > 0);
  assert_true(st.sliced_bytes < st.leaf_filters * (2000000 / 8) / 4);
  close_ok(f);
}

/* m, k and the seed stay the database's at every reopen; d and the placement are the open's. */
static void test_api_stats_stored_params_win(void **state) {
  fixture_t *f = *state;
  bfh_options o;
  small_options(f, &o);
  o.value_filter_bits = STORED_M;
  o.value_filter_hashes = STORED_K;
  o.hash_seed = STORED_SEED;
  o.order = CREATE_ORDER;
  o.placement = CREATE_PLACEMENT;
  o.index_bits_per_value = 0; /* the paper's layout: every leaf's m bits in memory */
  open_ok(f, &o);
  fill(f);
  bfh_db_stats created = stats(f);
  expect_params(&created, STORED_M, STORED_K, CREATE_ORDER, CREATE_PLACEMENT, STORED_SEED);
  assert_true(created.tables >= 1);
  assert_int_equal(created.leaf_filters, created.tables);
  assert_int_equal(created.leaf_memory_bytes, created.leaf_filters * (STORED_M / 8));
  close_ok(f);

  /* The defaults (m, k and seed 0) take the stored ones. */
  bfh_options other;
  small_options(f, &other);
  open_ok(f, &other);
  bfh_db_stats dflt = stats(f);
  expect_params(&dflt, STORED_M, STORED_K, other.order, other.placement, STORED_SEED);
  close_ok(f);
  /* Other ones asked for: the open fails, naming the stored values. */
  bfh_db *db = NULL;
  other.value_filter_bits = 2 * STORED_M;
  assert_int_equal(bfh_open(f->path, &other, &db), BFH_E_INVALID);
  assert_null(db);
  assert_non_null(strstr(bfh_last_error(NULL), "m=4096"));
  other.value_filter_bits = STORED_M;
  other.hash_seed = STORED_SEED + 1; /* the seed differs */
  assert_int_equal(bfh_open(f->path, &other, &db), BFH_E_INVALID);
  assert_null(db);
  /* bfh_stored_params reads them without an open; with them the open succeeds. */
  bfh_options stored;
  bfh_options_init(&stored);
  assert_int_equal(bfh_stored_params(f->path, &stored), BFH_OK);
  assert_int_equal(stored.value_filter_bits, STORED_M);
  assert_int_equal(stored.value_filter_hashes, STORED_K);
  assert_int_equal(stored.hash_seed, STORED_SEED);
  small_options(f, &o); /* only m, k and seed taken from `stored` */
  o.value_filter_bits = stored.value_filter_bits;
  o.value_filter_hashes = stored.value_filter_hashes;
  o.hash_seed = stored.hash_seed;
  open_ok(f, &o);
  close_ok(f);

  /* The stored m, k and seed with another order, placement and leaves on disk. */
  o.order = 7;
  o.placement = BFH_PLACEMENT_PAPER;
  o.leaves_on_disk = BFH_LEAVES_ON_DISK;
  open_ok(f, &o);
  bfh_db_stats st = stats(f);
  expect_params(&st, STORED_M, STORED_K, 7, BFH_PLACEMENT_PAPER, STORED_SEED);
  assert_int_equal(st.tables, created.tables);
  assert_int_equal(st.leaf_filters, created.leaf_filters);
  assert_int_equal(st.leaf_filter_bytes, created.leaf_filter_bytes);
  assert_true(st.leaf_memory_bytes < st.leaf_filters * (STORED_M / 8));
  close_ok(f);

  /* Value filters off: the handle has none and reports none; the tables are still there. */
  other.value_filters = 0;
  open_ok(f, &other);
  st = stats(f);
  assert_int_equal(st.value_filters, 0);
  assert_int_equal(st.value_filter_bits, 0);
  assert_int_equal(st.value_filter_hashes, 0);
  assert_int_equal(st.order, 0);
  assert_int_equal(st.hash_seed, 0);
  assert_int_equal(st.leaf_filters, 0);
  assert_int_equal(st.leaf_memory_bytes, 0);
  assert_int_equal(st.tables, created.tables);
  close_ok(f);

  /* ... and left BFH-PARAMS alone: the stored values still hold. */
  o.order = CREATE_ORDER;
  o.placement = CREATE_PLACEMENT;
  o.leaves_on_disk = BFH_LEAVES_IN_MEMORY;
  open_ok(f, &o);
  st = stats(f);
  expect_params(&st, STORED_M, STORED_K, CREATE_ORDER, CREATE_PLACEMENT, STORED_SEED);
  assert_int_equal(st.leaf_filters, created.leaf_filters);
  close_ok(f);
}

static int count_hit(void *arg, const void *key, size_t len) {
  (void)key, (void)len;
  (*(int *)arg)++;
  return 0;
}

/* index_bytes against the structures it must count, for the paper's layout and the lean one.
   Bounds: index_bytes holds at least the leaves in memory, the hierarchy, the slices and the
   block filters, and at most 16 KiB (the index's own struct, the leaf array of 64 pointers,
   the id maps of a few tables) plus 512 bytes per leaf (its record and path) more. The
   paper's layout keeps every leaf's m / 8 bytes, and its slices hold at most 12.5% + 8 slots
   more than the leaves (64-slot steps would hold 64 leaves' worth here); the lean layout
   keeps no leaf words and no hierarchy, and its slices are a fraction of the leaves. The
   database is filled under the default (the lean layout with value-to-block maps: on the own
   engine the map heads replace the block filters, counted in block_filter_bytes), then opened
   with it, with the paper's layout and with the lean layout of block filters (block_maps 0). */
static void test_api_stats_index_bytes(void **state) {
  fixture_t *f = *state;
  const struct {
    uint32_t bits;
    int maps;
  } layouts[] = {{BFH_LEAN_MAP_BITS, 1}, {0, 1}, {LEAN_BITS, 0}};
  for (size_t i = 0; i < sizeof layouts / sizeof layouts[0]; i++) {
    uint32_t bits = layouts[i].bits;
    bfh_options o;
    small_options(f, &o);
    o.index_bits_per_value = bits;
    o.block_maps = layouts[i].maps;
    open_ok(f, &o);
    if (i == 0) fill(f);
    int hits = 0;
    assert_int_equal(bfh_search(f->db, "val007", 6, BFH_SEARCH_AUTO, count_hit, &hits, NULL),
                     BFH_OK);
    assert_int_equal(hits, NKEYS / 100);
    bfh_db_stats st = stats(f);
    uint64_t leaves = st.leaf_filters, leaf = st.value_filter_bits / 8;
    assert_true(leaves >= 2);
    uint64_t parts =
        st.leaf_memory_bytes + st.internal_bytes + st.sliced_bytes + st.block_filter_bytes;
    if (st.index_bytes < parts || st.index_bytes > parts + 16384 + 512 * leaves)
      fail_msg("bits %u: index_bytes %llu, parts %llu, %llu leaves", bits,
               (unsigned long long)st.index_bytes, (unsigned long long)parts,
               (unsigned long long)leaves);
    assert_true(st.block_filter_bytes > 0);
    if (bits == 0) {
      assert_int_equal(st.leaf_memory_bytes, leaves * leaf);
      assert_true(st.sliced_bytes >= leaves * leaf);
      assert_true(st.sliced_bytes <= (leaves + leaves / 8 + 8) * leaf + 65536);
    } else {
      assert_int_equal(st.leaf_memory_bytes, 0);
      assert_true(st.internal_bytes < 4096); /* an empty hierarchy */
      assert_true(st.sliced_bytes < leaves * leaf / 4);
    }
    close_ok(f);
  }
}

/* memtable_index_bytes: the value index of the entries no table holds yet, outside
   index_bytes. The own engine's memtable has one bucket of 8 bytes per 64 bytes of
   memtable_bytes (at least 1024), allocated at its creation, and a link per item of each
   value put, and none with memtable_index 0;
   the LevelDB engine's log segments hold 2 to 4 slots of 8 bytes per entry they read (a
   search reads the log), at least 2 per segment. */
static void test_api_stats_memtable_index_bytes(void **state) {
  fixture_t *f = *state;
  enum { PUTS = 200 };
  bfh_options o;
  small_options(f, &o);
  open_ok(f, &o);
  bfh_db_stats st = stats(f);
  if (f->engine == BFH_ENGINE_LSM) assert_int_equal(st.memtable_index_bytes, (64 << 10) / 64 * 8);
  for (int i = 0; i < PUTS; i++) {
    char k[16], v[16];
    int kl = snprintf(k, sizeof k, "key%05d", i), vl = snprintf(v, sizeof v, "val%03d", i % 100);
    assert_int_equal(bfh_put(f->db, k, (size_t)kl, v, (size_t)vl), BFH_OK);
  }
  int hits = 0;
  assert_int_equal(bfh_search(f->db, "val007", 6, BFH_SEARCH_AUTO, count_hit, &hits, NULL),
                   BFH_OK);
  assert_int_equal(hits, PUTS / 100);
  st = stats(f);
  if (f->engine == BFH_ENGINE_LSM) {
    /* the buckets, fixed at creation, and a link of 16 bytes for each value's one item */
    assert_int_equal(st.memtable_index_bytes, (64 << 10) / 64 * 8 + PUTS * 16);
  } else {
    assert_true(st.memtable_index_bytes >= 2 * 8 * PUTS);
    assert_true(st.memtable_index_bytes <= 4 * 8 * PUTS + 2 * 8 * 16);
  }
  close_ok(f);
  if (f->engine != BFH_ENGINE_LSM) return;
  o.memtable_index = 0;
  open_ok(f, &o);
  st = stats(f);
  assert_int_equal(st.memtable_index_bytes, 0);
  close_ok(f);
}

/* One body per test, run once per engine under its own name (..._lsm, ..._leveldb). */
#define ON_BOTH_ENGINES(test)                              \
  {#test "_lsm", test, setup, teardown, &g_engines[0]}, {  \
#test "_leveldb", test, setup, teardown, &g_engines[1] \
  }

int main(void) {
  const struct CMUnitTest tests[] = {
      ON_BOTH_ENGINES(test_api_stats_stored_params_without_open),
      ON_BOTH_ENGINES(test_api_stats_defaults),
      ON_BOTH_ENGINES(test_api_stats_stored_params_win),
      ON_BOTH_ENGINES(test_api_stats_index_bytes),
      ON_BOTH_ENGINES(test_api_stats_memtable_index_bytes),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

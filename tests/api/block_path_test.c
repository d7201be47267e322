/* AUTO's path beyond the paper, through include/bfh.h on both engines: the block filters
 * under the leaves and the memtables' value index (doc/search.md "AUTO").
 *
 *   - Own engine, a table whose "bfh.block_filter" meta block is damaged: the open succeeds,
 *     bfh_stats counts the damaged filter, and AUTO answers exactly as SCAN for every value
 *     (that table is read whole); the other tables are read by blocks.
 *   - Own engine, values only in the memtable (new, overwritten, deleted): AUTO answers as
 *     SCAN and compares only the entries holding the value (entries_scanned), not the whole
 *     memtable; after a reopen (the log written to a table) it reads one block.
 *   - LevelDB engine, a sidecar cache file whose block filter bytes are damaged: the file is
 *     stale, rebuilt from the table at the reopen; AUTO answers as SCAN and reads by blocks.
 *   - Every read-write engine: the blocks AUTO reads go through the handle's block cache, so a
 *     repeated search hits there, and answers as SCAN, with or without the cache and after
 *     overwrites.
 *   - Every read-write engine: AUTO reads ahead in batches (env_read_batch) what it reads next
 *     (the own engine its tables' map chunks, then their blocks; LevelDB and RocksDB their
 *     blocks), and answers as SCAN; with every batch failing (a read ahead is only an
 *     optimisation) it still answers as SCAN, each piece read by the call that needs it.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bfh.h"
#include "lsm/table.h"
/* Not public (api/testbed.h): the LevelDB engine's counters of where leaves came from,
   and the cache file's layout. */
#include "api/testbed.h"
#include "lsm_hooks/engines/stock/stock.h"
#include "lsm_hooks/leveldb_format/ldb_table.h"
#include "lsm_hooks/rocksdb_format/rdb_table.h"
#include "tests/env_fault.h"
#include "tests/test_util.h"
#include "tests/api/db_fixture.h"

#define NKEYS 20000
#define NVALUES 5000 /* value id = key id % NVALUES: 4 keys per value */

static int setup(void **state) {
  return db_fixture_setup(state, "block_path");
}

static void options(bfh_options *o, bfh_engine engine) {
  bfh_options_init(o);
  o->engine = engine;
  o->value_filter_bits = 1 << 16;
  o->memtable_bytes = 256 << 10;
  o->table_bytes = 64 << 10;
}

static void open_ok(db_fixture_t *f, const bfh_options *o) {
  int rc = bfh_open(f->dir, o, &f->db);
  if (rc != BFH_OK) fail_msg("bfh_open %s: %s", f->dir, bfh_last_error(NULL));
}

static void close_ok(db_fixture_t *f) {
  assert_int_equal(bfh_close(f->db), BFH_OK);
  f->db = NULL;
}

static size_t value_of(uint32_t id, char *buf) {
  return (size_t)sprintf(buf, "val-%05u", id);
}

static void load(db_fixture_t *f) {
  char key[32], val[32];
  for (uint32_t i = 0; i < NKEYS; i++) {
    int kl = sprintf(key, "key-%06u", (i * 7919u) % NKEYS);
    size_t vl = value_of(((i * 7919u) % NKEYS) % NVALUES, val);
    assert_int_equal(bfh_put(f->db, key, (size_t)kl, val, vl), BFH_OK);
  }
  assert_int_equal(bfh_flush(f->db), BFH_OK);
}

/* The keys a search reports, sorted into one string for comparison. */
#define KEYS_BYTES (64 << 10)
#define MAX_KEYS 4096

typedef struct keys {
  char buf[KEYS_BYTES];
  size_t len;
  int n;
} keys_t;

static int collect(void *arg, const void *key, size_t len) {
  keys_t *k = arg;
  assert_true(k->len + len + 1 < sizeof k->buf);
  memcpy(k->buf + k->len, key, len);
  k->len += len;
  k->buf[k->len++] = ' ';
  k->n++;
  return 0;
}

static int cmp_key(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Sorts the space-separated keys of k in place. */
static void sort_keys(keys_t *k) {
  static char *words[MAX_KEYS];
  static char copy[KEYS_BYTES];
  int n = 0;
  memcpy(copy, k->buf, k->len);
  copy[k->len] = '\0';
  for (char *w = strtok(copy, " "); w; w = strtok(NULL, " ")) {
    assert_true(n < MAX_KEYS);
    words[n++] = w;
  }
  qsort(words, (size_t)n, sizeof *words, cmp_key);
  k->len = 0;
  for (int i = 0; i < n; i++) k->len += (size_t)sprintf(k->buf + k->len, "%s ", words[i]);
}

/* AUTO reports the same keys as SCAN for val; returns AUTO's stats. */
static bfh_search_stats expect_auto_as_scan(bfh_db *db, const void *val, size_t len) {
  static keys_t scan, autom;
  scan.len = autom.len = 0;
  scan.n = autom.n = 0;
  bfh_search_stats st;
  assert_int_equal(bfh_search(db, val, len, BFH_SEARCH_SCAN, collect, &scan, NULL), BFH_OK);
  assert_int_equal(bfh_search(db, val, len, BFH_SEARCH_AUTO, collect, &autom, &st), BFH_OK);
  sort_keys(&scan);
  sort_keys(&autom);
  if (scan.n != autom.n || scan.len != autom.len || memcmp(scan.buf, autom.buf, scan.len) != 0)
    fail_msg("value %.*s: SCAN [%.*s], AUTO [%.*s]", (int)len, (const char *)val, (int)scan.len,
             scan.buf, (int)autom.len, autom.buf);
  return st;
}

/* The first table file (*.sst) of dir, by name. */
static void first_table(const char *dir, char *path, size_t cap, uint64_t *number) {
  DIR *d = opendir(dir);
  assert_non_null(d);
  unsigned long long best = UINT64_MAX;
  struct dirent *de;
  while ((de = readdir(d))) {
    unsigned long long n;
    char ext[8];
    if (sscanf(de->d_name, "%llu.%7s", &n, ext) == 2 && strcmp(ext, "sst") == 0 && n < best)
      best = n;
  }
  closedir(d);
  assert_true(best != UINT64_MAX);
  snprintf(path, cap, "%s/%06llu.sst", dir, best);
  *number = best;
}

static void test_lsm_damaged_block_filter(void **state) {
  db_fixture_t *f = *state;
  bfh_options o;
  options(&o, BFH_ENGINE_LSM);
  /* The tables' block filters in memory (the default's value-to-block maps would stand in
     for them: tests/api/lean_map_test.c damages those). */
  o.block_maps = 0;
  open_ok(f, &o);
  load(f);
  /* bfh_stats counts tables in a view and block filters in the index: a compaction finishing
     between the two would make them differ (it did once in CI). Wait until none runs. */
  err_t e;
  assert_int_equal(engine_lsm_wait_idle(bfh_internal_engine(f->db), &e), BFH_OK);
  bfh_db_stats ds;
  assert_int_equal(bfh_stats(f->db, &ds), BFH_OK);
  assert_true(ds.tables >= 4);
  assert_int_equal(ds.block_filter_tables, ds.tables);
  assert_int_equal(ds.block_filters_damaged, 0);
  close_ok(f);

  /* Flip a byte in the middle of one table's block filter. */
  char path[4400];
  uint64_t number;
  first_table(f->dir, path, sizeof path, &number);
  table_t *t = NULL;
  err_t err;
  assert_int_equal(table_open(env_default(), path, number, &t, &err), BFH_OK);
  void *data;
  size_t size;
  uint64_t offset;
  assert_int_equal(table_read_meta(t, "bfh.block_filter", &data, &size, &offset, &err), BFH_OK);
  free(data);
  table_unref(t);
  assert_int_equal(test_file_xor_byte(path, offset + size / 2, 0x40), 0);

  open_ok(f, &o);
  assert_int_equal(bfh_stats(f->db, &ds), BFH_OK);
  assert_int_equal(ds.block_filters_damaged, 1);
  assert_int_equal(ds.block_filter_tables, ds.tables - 1);
  assert_int_equal(ds.leaf_filters, ds.tables); /* the leaf is fine: the table is still pruned */
  char val[32];
  uint64_t blocks = 0, results = 0;
  for (uint32_t v = 0; v < NVALUES + 50; v += 7) { /* v >= NVALUES: absent */
    bfh_search_stats st = expect_auto_as_scan(f->db, val, value_of(v, val));
    blocks += st.blocks_read;
    results += st.results;
  }
  assert_true(blocks > 0); /* the other tables were read by blocks */
  assert_true(results > 0);
  close_ok(f);
}

static void test_lsm_memtable_index(void **state) {
  db_fixture_t *f = *state;
  bfh_options o;
  options(&o, BFH_ENGINE_LSM);
  o.memtable_bytes = 8 << 20; /* everything below stays in the memtable */
  open_ok(f, &o);
  load(f); /* flushed */
  char key[32], val[32];
  for (uint32_t i = 0; i < 3000; i++) {
    int kl = sprintf(key, "mem-%05u", i);
    assert_int_equal(bfh_put(f->db, key, (size_t)kl, "memval", 6), BFH_OK);
  }
  /* key-000001 overwritten in the memtable; key-000002 deleted there. */
  assert_int_equal(bfh_put(f->db, "key-000001", 10, "fresh", 5), BFH_OK);
  assert_int_equal(bfh_delete(f->db, "key-000002", 10), BFH_OK);

  bfh_search_stats st = expect_auto_as_scan(f->db, "fresh", 5);
  assert_int_equal(st.results, 1);
  assert_true(st.entries_scanned < 10); /* one entry holds it; no memtable scan */
  st = expect_auto_as_scan(f->db, "memval", 6);
  assert_int_equal(st.results, 3000);
  assert_true(st.entries_scanned < 3100);
  st = expect_auto_as_scan(f->db, val, value_of(1, val)); /* key-000001's old value */
  st = expect_auto_as_scan(f->db, val, value_of(2, val)); /* key-000002's, deleted */
  st = expect_auto_as_scan(f->db, "nowhere", 7);
  assert_int_equal(st.results, 0);
  assert_true(st.entries_scanned < 10);
  /* After a reopen the log is reused: its entries are in the memtable again, indexed. */
  close_ok(f);
  open_ok(f, &o);
  st = expect_auto_as_scan(f->db, "fresh", 5);
  assert_int_equal(st.results, 1);
  assert_true(st.entries_scanned < 10);
  assert_int_equal(st.tables_scanned, 0);
  /* Flushed, they are in a new table: found by a block of it. */
  assert_int_equal(bfh_flush(f->db), BFH_OK);
  st = expect_auto_as_scan(f->db, "fresh", 5);
  assert_int_equal(st.results, 1);
  assert_true(st.blocks_read >= 1);
  assert_true(st.tables_scanned <= 2);
  close_ok(f);
}

static void test_leveldb_damaged_cache_blocks(void **state) {
  db_fixture_t *f = *state;
  bfh_options o;
  options(&o, BFH_ENGINE_LEVELDB);
  open_ok(f, &o);
  load(f);
  bfh_db_stats ds;
  assert_int_equal(bfh_stats(f->db, &ds), BFH_OK);
  assert_true(ds.tables >= 1);
  close_ok(f); /* writes the cache files */

  /* Damage the block filter section (after the leaf) of one cache file. */
  char cache[4400], path[4800];
  snprintf(cache, sizeof cache, "%s/%s", f->dir, LEAF_CACHE_DIR);
  DIR *d = opendir(cache);
  assert_non_null(d);
  struct dirent *de;
  path[0] = '\0';
  while ((de = readdir(d)) && !path[0])
    if (strstr(de->d_name, ".vf")) snprintf(path, sizeof path, "%s/%s", cache, de->d_name);
  closedir(d);
  assert_true(path[0] != '\0');
  uint64_t at = LEAF_CACHE_HEADER_BYTES + value_filter_serialized_size(o.value_filter_bits) + 20;
  assert_int_equal(test_file_xor_byte(path, at, 0x08), 0);

  open_ok(f, &o);
  engine_leveldb_stats_t ls;
  engine_leveldb_get_stats(bfh_internal_engine(f->db), &ls);
  assert_int_equal(ls.index.tables_read, 1); /* the damaged file's table, read again */
  assert_int_equal(ls.index.tables_cached + 1, ds.tables);
  assert_int_equal(bfh_stats(f->db, &ds), BFH_OK);
  assert_int_equal(ds.block_filter_tables, ds.tables);
  char val[32];
  uint64_t blocks = 0;
  for (uint32_t v = 0; v < NVALUES + 50; v += 11) {
    bfh_search_stats st = expect_auto_as_scan(f->db, val, value_of(v, val));
    blocks += st.blocks_read;
  }
  assert_true(blocks > 0);
  close_ok(f);
}

/* The blocks AUTO reads by maps or block filters go through the handle's block cache on
   every read-write engine: a search repeated hits there and answers as SCAN, so does one
   after overwrites (new tables, new numbers), and without a cache (block_cache_bytes 0) it
   answers the same with no hit. */
static void expect_repeat_hits(db_fixture_t *f, bfh_engine engine) {
  bfh_options o;
  options(&o, engine);
  open_ok(f, &o);
  load(f);
  close_ok(f); /* the open indexes every live table: the searches below read by blocks */
  for (int cached = 1; cached >= 0; cached--) {
    options(&o, engine);
    if (!cached) o.block_cache_bytes = 0;
    open_ok(f, &o);
    char val[32];
    /* Two rounds of the same searches, the first filling the cache. A compaction of the
       library's between them (new tables, not in the cache) leaves fewer hits: then again,
       at most 20 times. */
    int attempt;
    for (attempt = 0; attempt < 20; attempt++) {
      bfh_db_stats before, after;
      uint64_t blocks = 0, again = 0;
      for (uint32_t v = 0; v < NVALUES; v += 97)
        blocks += expect_auto_as_scan(f->db, val, value_of(v, val)).blocks_read;
      assert_int_equal(bfh_stats(f->db, &before), BFH_OK);
      for (uint32_t v = 0; v < NVALUES; v += 97)
        again += expect_auto_as_scan(f->db, val, value_of(v, val)).blocks_read;
      assert_int_equal(bfh_stats(f->db, &after), BFH_OK);
      if (!cached) assert_int_equal(after.block_cache_hits, 0);
      /* every block of the second round a hit (a few more: the own engine's gets) */
      if (blocks > 0 && again == blocks &&
          (!cached || after.block_cache_hits - before.block_cache_hits >= again))
        break;
      usleep(100000);
    }
    assert_true(attempt < 20);
    /* overwrites: each value searched moves to other keys, in new tables */
    char key[32];
    for (uint32_t i = 0; i < NKEYS; i += 3) {
      int kl = sprintf(key, "key-%06u", i);
      size_t vl = value_of((i / 3) % NVALUES, val);
      assert_int_equal(bfh_put(f->db, key, (size_t)kl, val, vl), BFH_OK);
    }
    assert_int_equal(bfh_flush(f->db), BFH_OK);
    for (uint32_t v = 0; v < NVALUES; v += 97) (void)expect_auto_as_scan(f->db, val, value_of(v, val));
    close_ok(f);
  }
}

static void open_io_ok(db_fixture_t *f, const bfh_options *o, env_t *io) {
  int rc = bfh_internal_open_io(f->dir, o, io, &f->db);
  if (rc != BFH_OK) fail_msg("bfh_open %s: %s", f->dir, bfh_last_error(NULL));
}

/* AUTO reads ahead through the env (ENV_OP_BATCH counts its batches) and answers as SCAN;
   with every batch failing, it answers as SCAN all the same. The own engine reads its map
   chunks and its blocks ahead, the stock engines their blocks (their maps' chunks are read
   from the filter cache). */
static void expect_read_ahead(db_fixture_t *f, bfh_engine engine) {
  bfh_options o;
  options(&o, engine);
  env_t *io = env_create_faulty();
  assert_non_null(io);
  open_io_ok(f, &o, io);
  load(f);
  err_t e;
  if (engine == BFH_ENGINE_LSM)
    assert_int_equal(engine_lsm_wait_idle(bfh_internal_engine(f->db), &e), BFH_OK);
  close_ok(f); /* a stock engine's close indexes every table it leaves */

  char val[32];
  for (int failing = 0; failing < 2; failing++) {
    open_io_ok(f, &o, io); /* a block cache that holds nothing yet */
    if (failing) env_fail(io, ENV_OP_BATCH, 1, 1);
    uint64_t batches = env_op_count(io, ENV_OP_BATCH), blocks = 0, chunks = 0;
    bfh_db_stats before, after;
    assert_int_equal(bfh_stats(f->db, &before), BFH_OK);
    for (uint32_t v = 0; v < NVALUES; v += 61) {
      bfh_search_stats st = expect_auto_as_scan(f->db, val, value_of(v, val));
      blocks += st.blocks_read;
      chunks += st.map_chunks_read;
    }
    assert_int_equal(bfh_stats(f->db, &after), BFH_OK);
    assert_true(blocks > 0);
    assert_true(chunks > 0);
    /* the pieces the cache lacked were read ahead (failed batches count too) */
    assert_true(env_op_count(io, ENV_OP_BATCH) > batches);
    /* and every block a search then read was in the cache, read ahead (the own engine's gets
       and chunks are hits too) */
    uint64_t hits = after.block_cache_hits - before.block_cache_hits;
    if (!failing && hits < blocks)
      fail_msg("%llu blocks read, %llu of them from the cache", (unsigned long long)blocks,
               (unsigned long long)hits);
    env_fail_none(io);
    close_ok(f);
  }
  env_destroy(io);
}

/* The first blocks of a stock table, as pieces to read ahead: a table reader's block_fn. */
#define PLACES 8
typedef struct places {
  uint64_t number;
  block_ahead_t p[PLACES];
  size_t n;
} places_t;

static int take_place(void *arg, uint64_t offset, uint64_t size) {
  places_t *pl = arg;
  pl->p[pl->n++] = (block_ahead_t){pl->number, NULL, {offset, size}};
  return pl->n == PLACES;
}

static int ldb_any(void *arg, const ldb_entry_t *e) {
  (void)arg, (void)e;
  return 0;
}

static int rdb_any(void *arg, const rdb_entry_t *e) {
  (void)arg, (void)e;
  return 0;
}

static int count_match(void *arg, const void *key, size_t key_len, uint64_t seq) {
  (void)key, (void)key_len, (void)seq;
  (*(uint64_t *)arg)++;
  return 0;
}

/* A stock engine's read ahead keeps what it reads: blocks of a table read ahead enter the
   block cache, and a scan of those blocks then finds every one of them there (no miss). */
static void expect_blocks_kept(db_fixture_t *f, bfh_engine engine) {
  bfh_options o;
  options(&o, engine);
  open_ok(f, &o);
  load(f);
  close_ok(f);
  open_ok(f, &o);
  engine_t *e = bfh_internal_engine(f->db);
  engine_view_t *v;
  err_t err;
  assert_int_equal(engine_view_acquire(e, &v, &err), BFH_OK);
  const engine_table_t *t;
  assert_true(engine_view_tables(e, v, &t) > 0);
  places_t pl = {.number = t[0].number};
  int lev = engine == BFH_ENGINE_LEVELDB;
  char *path;
  assert_int_equal(
      stock_table_path(f->dir, pl.number, lev ? "ldb" : "sst", lev ? "sst" : "ldb", &path, &err),
      BFH_OK);
  int rc = lev ? ldb_table_scan_blocks(env_default(), path, ldb_any, take_place, &pl, NULL, &err)
               : rdb_table_scan_blocks(env_default(), path, rdb_any, take_place, &pl, NULL, &err);
  free(path);
  assert_int_equal(rc, BFH_OK);
  assert_true(pl.n > 1);

  bfh_db_stats s0, s1, s2;
  assert_int_equal(bfh_stats(f->db, &s0), BFH_OK);
  engine_read_ahead(e, v, pl.p, pl.n);
  assert_int_equal(bfh_stats(f->db, &s1), BFH_OK);
  assert_true(s1.block_cache_bytes > s0.block_cache_bytes);
  block_ref_t refs[PLACES];
  for (size_t i = 0; i < pl.n; i++) refs[i] = pl.p[i].block;
  char val[32];
  engine_value_test_t test = engine_value_test_equal(val, value_of(1, val));
  uint64_t matched = 0;
  engine_scan_stats_t ss = {0, 0};
  assert_int_equal(
      engine_scan_blocks(e, v, pl.number, refs, pl.n, &test, count_match, &matched, &ss, &err),
      BFH_OK);
  assert_int_equal(bfh_stats(f->db, &s2), BFH_OK);
  assert_int_equal(s2.block_cache_misses, s1.block_cache_misses);
  assert_int_equal(s2.block_cache_hits - s1.block_cache_hits, pl.n);
  engine_view_release(e, v);
  close_ok(f);
}

static void test_leveldb_blocks_kept(void **state) {
  expect_blocks_kept(*state, BFH_ENGINE_LEVELDB);
}

static void test_rocksdb_blocks_kept(void **state) {
  expect_blocks_kept(*state, BFH_ENGINE_ROCKSDB);
}

static void test_lsm_read_ahead(void **state) {
  expect_read_ahead(*state, BFH_ENGINE_LSM);
}

static void test_leveldb_read_ahead(void **state) {
  expect_read_ahead(*state, BFH_ENGINE_LEVELDB);
}

static void test_rocksdb_read_ahead(void **state) {
  expect_read_ahead(*state, BFH_ENGINE_ROCKSDB);
}

static void test_lsm_repeat_hits(void **state) {
  expect_repeat_hits(*state, BFH_ENGINE_LSM);
}

static void test_leveldb_repeat_hits(void **state) {
  expect_repeat_hits(*state, BFH_ENGINE_LEVELDB);
}

static void test_rocksdb_repeat_hits(void **state) {
  expect_repeat_hits(*state, BFH_ENGINE_ROCKSDB);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_lsm_damaged_block_filter, setup, db_fixture_teardown),
      cmocka_unit_test_setup_teardown(test_lsm_memtable_index, setup, db_fixture_teardown),
      cmocka_unit_test_setup_teardown(test_lsm_repeat_hits, setup, db_fixture_teardown),
      cmocka_unit_test_setup_teardown(test_lsm_read_ahead, setup, db_fixture_teardown),
      cmocka_unit_test_setup_teardown(test_leveldb_read_ahead, setup, db_fixture_teardown),
      cmocka_unit_test_setup_teardown(test_rocksdb_read_ahead, setup, db_fixture_teardown),
      cmocka_unit_test_setup_teardown(test_leveldb_blocks_kept, setup, db_fixture_teardown),
      cmocka_unit_test_setup_teardown(test_rocksdb_blocks_kept, setup, db_fixture_teardown),
      cmocka_unit_test_setup_teardown(test_leveldb_repeat_hits, setup, db_fixture_teardown),
      cmocka_unit_test_setup_teardown(test_rocksdb_repeat_hits, setup, db_fixture_teardown),
      cmocka_unit_test_setup_teardown(test_leveldb_damaged_cache_blocks, setup,
                                      db_fixture_teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

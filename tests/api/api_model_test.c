/* Model test of include/bfh.h on BFH_ENGINE_LSM against an in-memory oracle.
 *
 * 500,000 random operations (puts with overwrites and some empty values, deletes, gets,
 * searches with every method, flushes, reopens) on a database with tiny memtables (128 KiB)
 * and tables (16 KiB) and m = 4096-bit value filters, so that flushes, compactions, leaf
 * inserts and removals happen all the time. Every get must equal the oracle; every search,
 * by every method, must report exactly the oracle's key set, each key once, and its stats
 * must be consistent. AUTO runs through the block filters and the memtable index (and the
 * run checks it did read by blocks); the paper's methods never do. Zero mismatches. Run
 * once with leaves in memory and once (fewer operations) with leaves on disk; once with the
 * stand-alone index kept too, every search then also run by BFH_SEARCH_STANDALONE; and on
 * stock RocksDB (BFH_ENGINE_ROCKSDB), with leaves in memory and on disk. (Memtable
 * 128 KiB: the engine's arena allocates 64 KiB blocks, so a smaller budget would flush after
 * every write.)
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "bfh.h"
#include "tests/test_util.h"
#include "util/random.h"

#define NKEYS 1500
#define DOMAIN 150 /* shared values "val-%03u": several keys per value */
#define MAXV 64
#define LEAN_BITS 3 /* the lean layout with block filters (index_bits_per_value) */

typedef struct entry {
  int live;
  uint8_t val[MAXV];
  size_t len;
} entry_t;

typedef struct model {
  entry_t e[NKEYS];
  char dir[512];
  bfh_options opt;
  bfh_db *db;
} model_t;

typedef struct found {
  uint8_t seen[NKEYS];
  size_t n, dups, unknown;
  size_t stop_after; /* 0: never stop */
} found_t;

/* AUTO's block path across a run (non-vacuity: the block filters were used). */
static uint64_t g_auto_blocks_probed, g_auto_blocks_read, g_auto_map_chunks;

/* Counts a mismatch and describes the first few. */
#define MISMATCH(counter, ...)                         \
  do {                                                 \
    if ((*(counter))++ < 10) print_error(__VA_ARGS__); \
  } while (0)

static void key_of(uint32_t i, char *buf, size_t *len) {
  *len = (size_t)sprintf(buf, "key%06u", i);
}

static int on_match(void *arg, const void *key, size_t len) {
  found_t *f = arg;
  char buf[32];
  unsigned i;
  if (len >= sizeof buf) {
    f->unknown++;
    return 0;
  }
  memcpy(buf, key, len);
  buf[len] = 0;
  if (sscanf(buf, "key%06u", &i) != 1 || i >= NKEYS) {
    f->unknown++;
    return 0;
  }
  if (f->seen[i]) f->dups++;
  f->seen[i] = 1;
  f->n++;
  return f->stop_after && f->n >= f->stop_after;
}

static void make_value(rng_t *r, uint8_t *val, size_t *len) {
  uint64_t c = rng_below(r, 100);
  if (c < 8) {
    *len = 0; /* an empty value is a value */
  } else if (c < 20) {
    *len = (size_t)sprintf((char *)val, "unique-%016llx", (unsigned long long)rng_next(r));
  } else {
    *len = (size_t)sprintf((char *)val, "val-%03u", (unsigned)rng_below(r, DOMAIN));
  }
}

static void open_db(model_t *md) {
  int rc = bfh_open(md->dir, &md->opt, &md->db);
  if (rc != BFH_OK) fail_msg("bfh_open: %d %s", rc, bfh_last_error(NULL));
}

static uint64_t g_cuckoo_scanned, g_cuckoo_live; /* CUCKOO's tables read and live */

static void check_search(model_t *md, const uint8_t *val, size_t len, bfh_method method,
                         uint64_t *mismatches) {
  found_t *f = calloc(1, sizeof *f);
  assert_non_null(f);
  bfh_search_stats st;
  int rc = bfh_search(md->db, len ? val : NULL, len, method, on_match, f, &st);
  if (rc != BFH_OK) fail_msg("bfh_search(method %d): %d %s", method, rc, bfh_last_error(md->db));
  size_t want = 0;
  for (uint32_t i = 0; i < NKEYS; i++) {
    int in = md->e[i].live && md->e[i].len == len && memcmp(md->e[i].val, val, len) == 0;
    want += (size_t)in;
    if (in != f->seen[i])
      MISMATCH(mismatches, "search method %d value '%.*s': key %u oracle %d got %d\n", method,
               (int)len, (const char *)val, i, in, f->seen[i]);
  }
  if (f->dups || f->unknown)
    MISMATCH(mismatches, "method %d: %zu duplicate, %zu unknown keys\n", method, f->dups,
             f->unknown);
  if (st.results != f->n || st.results != want)
    MISMATCH(mismatches, "method %d: results %llu reported %zu oracle %zu\n", method,
             (unsigned long long)st.results, f->n, want);
  if (st.candidates < st.results || st.tables_matched > st.tables_scanned ||
      st.tables_scanned > st.tables_live || st.leaf_positives > st.leaf_probes)
    MISMATCH(mismatches,
             "method %d: stats cand %llu res %llu matched %llu scanned %llu live %u pos %llu "
             "probes %llu\n",
             method, (unsigned long long)st.candidates, (unsigned long long)st.results,
             (unsigned long long)st.tables_matched, (unsigned long long)st.tables_scanned,
             st.tables_live, (unsigned long long)st.leaf_positives,
             (unsigned long long)st.leaf_probes);
  if (method == BFH_SEARCH_CUCKOO) {
    g_cuckoo_scanned += st.tables_scanned;
    g_cuckoo_live += st.tables_live;
    /* The Cuckoo Index: one lookup, the tables it names read through their block filters. */
    if (st.internal_probes != 1 || st.leaf_probes != 0)
      MISMATCH(mismatches, "cuckoo: %llu lookups, %llu leaf probes\n",
               (unsigned long long)st.internal_probes, (unsigned long long)st.leaf_probes);
  } else if (method == BFH_SEARCH_AUTO) {
    g_auto_blocks_probed += st.block_filters_probed;
    g_auto_blocks_read += st.blocks_read;
    g_auto_map_chunks += st.map_chunks_read;
  } else if (st.block_filters_probed || st.blocks_read) {
    MISMATCH(mismatches, "method %d (the paper's) read by blocks\n", method);
  }
  if (method != BFH_SEARCH_AUTO && st.method_used != (uint32_t)method)
    MISMATCH(mismatches, "method %d: method_used %u\n", method, st.method_used);
  if (method == BFH_SEARCH_SCAN && st.tables_scanned != st.tables_live)
    MISMATCH(mismatches, "scan: scanned %llu of %u\n", (unsigned long long)st.tables_scanned,
             st.tables_live);
  /* (leaf_probes may exceed tables_live: a compaction's outputs get their leaves when built,
     before the version that lists them is installed.) */
  free(f);
}

/* Each test's model: a fresh directory and the database open on it, closed by the teardown
   if the test did not (a failed assertion leaves it open). */
static int setup(void **state) {
  model_t *md = calloc(1, sizeof *md);
  if (!md) return -1;
  if (test_tmpdir_create(md->dir, sizeof md->dir, "api_model_test") != 0) {
    free(md);
    return -1;
  }
  *state = md;
  return 0;
}

static int teardown(void **state) {
  model_t *md = *state;
  int rc = md->db && bfh_close(md->db) != BFH_OK ? -1 : 0;
  if (test_rmrf(md->dir) != 0) rc = -1;
  free(md);
  return rc;
}

/* Closes the model's database and forgets it. */
static void close_db(model_t *md) {
  bfh_db *db = md->db;
  md->db = NULL;
  assert_int_equal(bfh_close(db), BFH_OK);
}

/* bfh_options.index_bits_per_value of the next run: 0, the paper's layout, which the model
   runs set explicitly (the default is BFH_LEAN_MAP_BITS; test_api_model_lean_map runs it). */
static uint32_t g_index_bits;
/* bfh_options.block_maps of the next run (the default, 1, unless a test says otherwise). */
static int g_block_maps = 1;
/* The engine of the next run (the own engine unless a test says otherwise). */
static bfh_engine g_engine = BFH_ENGINE_LSM;
/* bfh_options.cuckoo_index of the next run: every search then also runs by CUCKOO. */
static int g_cuckoo;

/* Every method of the run: SCAN..last, and CUCKOO with the Cuckoo Index. */
static void check_all(model_t *md, const uint8_t *val, size_t len, int last_method,
                      uint64_t *mismatches) {
  for (int m = BFH_SEARCH_SCAN; m <= last_method; m++)
    check_search(md, val, len, (bfh_method)m, mismatches);
  if (g_cuckoo) check_search(md, val, len, BFH_SEARCH_CUCKOO, mismatches);
}

static void run(model_t *md, int leaves_on_disk, bfh_placement placement, int standalone,
                uint64_t ops, uint64_t seed) {
  /* With the stand-alone index every search also runs by STANDALONE. */
  int last_method = standalone ? BFH_SEARCH_STANDALONE : BFH_SEARCH_AUTO;
  g_auto_blocks_probed = g_auto_blocks_read = g_auto_map_chunks = 0;
  bfh_options_init(&md->opt);
  md->opt.memtable_bytes = 128 << 10; /* the arena takes 64 KiB blocks: ~64 KiB of entries */
  md->opt.table_bytes = 16 << 10;
  md->opt.value_filter_bits = 4096;
  md->opt.order = 3;
  md->opt.leaves_on_disk = leaves_on_disk;
  md->opt.placement = placement;
  md->opt.standalone_index = standalone;
  md->opt.index_bits_per_value = g_index_bits;
  md->opt.block_maps = g_block_maps;
  md->opt.engine = g_engine;
  md->opt.cuckoo_index = g_cuckoo;
  open_db(md);

  rng_t r;
  rng_init(&r, seed);
  uint64_t mismatches = 0, searches = 0, reopens = 0, gets = 0, found_nonempty = 0;
  char key[32];
  size_t klen;
  for (uint64_t op = 0; op < ops; op++) {
    uint32_t i = (uint32_t)rng_below(&r, NKEYS);
    key_of(i, key, &klen);
    uint64_t c = rng_below(&r, 1000);
    if (c < 600) {
      uint8_t val[MAXV];
      size_t len;
      make_value(&r, val, &len);
      int rc = bfh_put(md->db, key, klen, len ? val : NULL, len);
      if (rc != BFH_OK) fail_msg("bfh_put: %d %s", rc, bfh_last_error(md->db));
      md->e[i].live = 1;
      memcpy(md->e[i].val, val, len);
      md->e[i].len = len;
    } else if (c < 750) {
      int rc = bfh_delete(md->db, key, klen);
      if (rc != BFH_OK) fail_msg("bfh_delete: %d %s", rc, bfh_last_error(md->db));
      md->e[i].live = 0;
    } else if (c < 985) {
      void *v = NULL;
      size_t len = 0;
      int rc = bfh_get(md->db, key, klen, &v, &len);
      gets++;
      if (md->e[i].live) {
        if (rc != BFH_OK || len != md->e[i].len || (len && memcmp(v, md->e[i].val, len) != 0))
          MISMATCH(&mismatches, "get key %u: rc %d len %zu, oracle len %zu\n", i, rc, len,
                   md->e[i].len);
        if (rc == BFH_OK && v == NULL) MISMATCH(&mismatches, "get key %u: NULL value\n", i);
      } else if (rc != BFH_NOT_FOUND) {
        MISMATCH(&mismatches, "get key %u: rc %d for a deleted key\n", i, rc);
      }
      bfh_free(v);
    } else if (c < 998) {
      /* A value to search: mostly the current value of a key, sometimes an absent one. */
      uint8_t val[MAXV];
      size_t len;
      if (md->e[i].live && rng_below(&r, 4) != 0) {
        len = md->e[i].len;
        memcpy(val, md->e[i].val, len);
      } else {
        make_value(&r, val, &len);
      }
      check_all(md, val, len, last_method, &mismatches);
      searches++;
      if (md->e[i].live) found_nonempty++;
      /* Early stop: the callback's nonzero return ends the search with one report. */
      if (md->e[i].live && md->e[i].len == len && memcmp(md->e[i].val, val, len) == 0) {
        found_t *f = calloc(1, sizeof *f);
        f->stop_after = 1;
        bfh_search_stats st;
        assert_int_equal(bfh_search(md->db, val, len, BFH_SEARCH_HIERARCHY, on_match, f, &st),
                         BFH_OK);
        if (f->n != 1 || st.results != 1)
          MISMATCH(&mismatches, "early stop: %zu reported, results %llu\n", f->n,
                   (unsigned long long)st.results);
        free(f);
      }
    } else if (c < 999) {
      int rc = bfh_flush(md->db);
      if (rc != BFH_OK) fail_msg("bfh_flush: %d %s", rc, bfh_last_error(md->db));
    } else if (rng_below(&r, 10) == 0) {
      close_db(md);
      open_db(md);
      reopens++;
    }
  }
  /* A last full check of every key and of every value of the domain. */
  for (uint32_t i = 0; i < NKEYS; i++) {
    key_of(i, key, &klen);
    void *v = NULL;
    size_t len = 0;
    int rc = bfh_get(md->db, key, klen, &v, &len);
    if (md->e[i].live
            ? (rc != BFH_OK || len != md->e[i].len || (len && memcmp(v, md->e[i].val, len) != 0))
            : rc != BFH_NOT_FOUND)
      MISMATCH(&mismatches, "final get key %u: rc %d\n", i, rc);
    bfh_free(v);
  }
  for (unsigned d = 0; d < DOMAIN; d += 7) {
    char val[32];
    size_t len = (size_t)sprintf(val, "val-%03u", d);
    check_all(md, (const uint8_t *)val, len, last_method, &mismatches);
  }
  print_message("ops %llu searches %llu (x%d methods) gets %llu reopens %llu mismatches %llu\n",
                (unsigned long long)ops, (unsigned long long)searches, last_method + 1,
                (unsigned long long)gets, (unsigned long long)reopens,
                (unsigned long long)mismatches);
  assert_int_equal(mismatches, 0);
  print_message("AUTO: %llu block filters probed, %llu blocks read\n",
                (unsigned long long)g_auto_blocks_probed, (unsigned long long)g_auto_blocks_read);
  assert_true(g_auto_blocks_probed > 0 && g_auto_blocks_read > 0);
  /* The value-to-block maps are read exactly when the lean layout uses them (own engine). */
  int maps = g_index_bits > 0 && g_block_maps && g_engine == BFH_ENGINE_LSM;
  print_message("AUTO: %llu map chunks read\n", (unsigned long long)g_auto_map_chunks);
  assert_true(maps ? g_auto_map_chunks > 0 : g_auto_map_chunks == 0);
  if (standalone) {
    bfh_db_stats ds;
    assert_int_equal(bfh_stats(md->db, &ds), BFH_OK);
    assert_int_equal(ds.standalone_index, 1);
    assert_true(ds.old_value_reads > 0 && ds.standalone_entries > 0);
  }
  assert_true(searches > ops / 200);
  assert_true(reopens >= 2);
  assert_true(found_nonempty > 0);
  close_db(md);
}

static void test_api_model_leaves_in_memory(void **state) {
  run(*state, 0, BFH_PLACEMENT_SIMILARITY, 0, 500000, 1);
}

static void test_api_model_leaves_on_disk(void **state) {
  run(*state, 1, BFH_PLACEMENT_SIMILARITY, 0, 100000, 2);
}

/* Leaves read whole from disk for every probe (the paper's cost), the positional tree. */
static void test_api_model_leaves_read_whole(void **state) {
  run(*state, BFH_LEAVES_ON_DISK_WHOLE, BFH_PLACEMENT_POSITIONAL, 0, 50000, 4);
}

/* The paper's static tree, rebuilt as tables come and go. */
static void test_api_model_paper_tree(void **state) {
  run(*state, 0, BFH_PLACEMENT_PAPER, 0, 100000, 3);
}

/* The stand-alone index kept beside the value filters: STANDALONE (and AUTO, whichever it
   picks) equals the oracle under overwrites, deletes, empty values and reopens. */
static void test_api_model_standalone(void **state) {
  run(*state, 0, BFH_PLACEMENT_SIMILARITY, 1, 200000, 5);
}

/* The lean index (leaves folded to LEAN_BITS bits per value, kept once in the slices):
   every method equals the oracle too. */
static void test_api_model_lean(void **state) {
  g_index_bits = LEAN_BITS;
  g_block_maps = 0; /* the block filters in memory */
  run(*state, 0, BFH_PLACEMENT_SIMILARITY, 0, 200000, 6);
  g_block_maps = 1;
  g_index_bits = 0;
}

/* The lean index with value-to-block maps (BFH_LEAN_MAP_BITS, block_maps = 1): AUTO reads
   the tables through their maps, and every method equals the oracle. */
static void test_api_model_lean_map(void **state) {
  g_index_bits = BFH_LEAN_MAP_BITS;
  run(*state, 0, BFH_PLACEMENT_SIMILARITY, 0, 200000, 8);
  g_index_bits = 0;
}

/* Stock RocksDB through its C API (engines/rocksdb/): its tables found through its live-file
   list and indexed from their bytes, its unflushed writes read from its WAL; RocksDB flushes
   and compacts on its own (128 KiB memtables, 16 KiB target table size). Every search also by
   CUCKOO, whose index reads the tables' values through the engine (table_hashes): it must
   equal the oracle and skip tables. */
static void test_api_model_rocksdb(void **state) {
  g_engine = BFH_ENGINE_ROCKSDB;
  g_cuckoo = 1;
  g_cuckoo_scanned = g_cuckoo_live = 0;
  model_t *md = *state;
  run(md, 0, BFH_PLACEMENT_SIMILARITY, 0, 100000, 7);
  g_cuckoo = 0;
  g_engine = BFH_ENGINE_LSM;
  print_message("CUCKOO: %llu tables read of %llu live\n", (unsigned long long)g_cuckoo_scanned,
                (unsigned long long)g_cuckoo_live);
  /* Reopened: a CUCKOO search fills the index from the tables' values. */
  open_db(md);
  /* RocksDB compacts in the background: a compaction between the search and bfh_stats leaves
     the index none of the tables it just read (bfh_stats counts live ones). Searched again,
     at most 20 times, until one search and its stats see the same tables. */
  bfh_db_stats ds;
  for (int attempt = 0; attempt < 20; attempt++) {
    assert_int_equal(bfh_search(md->db, "val-001", 7, BFH_SEARCH_CUCKOO, NULL, NULL, NULL), BFH_OK);
    assert_int_equal(bfh_stats(md->db, &ds), BFH_OK);
    if (ds.cuckoo_tables > 0) break;
  }
  if (ds.cuckoo_tables == 0 || ds.cuckoo_bytes == 0)
    fail_msg("cuckoo index: %llu tables, %llu bytes after a search",
             (unsigned long long)ds.cuckoo_tables, (unsigned long long)ds.cuckoo_bytes);
  close_db(md);
}

/* The same with leaves on disk (the sidecar cache files are the leaves). */
static void test_api_model_rocksdb_leaves_on_disk(void **state) {
  g_engine = BFH_ENGINE_ROCKSDB;
  run(*state, 1, BFH_PLACEMENT_SIMILARITY, 0, 100000, 8);
  g_engine = BFH_ENGINE_LSM;
}

/* The Cuckoo Index: every search also by CUCKOO, which must equal the oracle (its index built
   from the tables at each search as flushes and compactions change them, and again after each
   reopen), with the memtables unflushed and DOMAIN values over many tables each; it must also
   skip tables (prune), and its bytes count in index_bytes. */
static void test_api_model_cuckoo(void **state) {
  model_t *md = *state;
  g_cuckoo = 1;
  g_cuckoo_scanned = g_cuckoo_live = 0;
  run(md, 0, BFH_PLACEMENT_SIMILARITY, 0, 200000, 7);
  g_cuckoo = 0;
  print_message("CUCKOO: %llu tables read of %llu live\n", (unsigned long long)g_cuckoo_scanned,
                (unsigned long long)g_cuckoo_live);
  assert_true(g_cuckoo_scanned < g_cuckoo_live);
  /* Reopened, the index is built at the first CUCKOO search, and counted. */
  md->opt.cuckoo_index = 1;
  open_db(md);
  bfh_db_stats ds;
  assert_int_equal(bfh_stats(md->db, &ds), BFH_OK);
  assert_int_equal(ds.cuckoo_tables, 0); /* nothing read yet: an empty table of buckets */
  uint64_t before = ds.index_bytes - ds.cuckoo_bytes;
  assert_int_equal(bfh_search(md->db, "val-001", 7, BFH_SEARCH_CUCKOO, NULL, NULL, NULL), BFH_OK);
  assert_int_equal(bfh_stats(md->db, &ds), BFH_OK);
  assert_true(ds.cuckoo_tables > 0 && ds.cuckoo_bytes > 0);
  assert_true(ds.index_bytes >= before + ds.cuckoo_bytes);
  close_db(md);
  /* Without the option, CUCKOO is refused, never silently another method. */
  md->opt.cuckoo_index = 0;
  open_db(md);
  assert_int_equal(bfh_search(md->db, "val-001", 7, BFH_SEARCH_CUCKOO, NULL, NULL, NULL),
                   BFH_E_UNSUPPORTED);
  assert_non_null(strstr(bfh_last_error(md->db), "cuckoo_index"));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_api_model_leaves_in_memory, setup, teardown),
      cmocka_unit_test_setup_teardown(test_api_model_leaves_on_disk, setup, teardown),
      cmocka_unit_test_setup_teardown(test_api_model_paper_tree, setup, teardown),
      cmocka_unit_test_setup_teardown(test_api_model_leaves_read_whole, setup, teardown),
      cmocka_unit_test_setup_teardown(test_api_model_standalone, setup, teardown),
      cmocka_unit_test_setup_teardown(test_api_model_lean, setup, teardown),
      cmocka_unit_test_setup_teardown(test_api_model_lean_map, setup, teardown),
      cmocka_unit_test_setup_teardown(test_api_model_rocksdb, setup, teardown),
      cmocka_unit_test_setup_teardown(test_api_model_rocksdb_leaves_on_disk, setup, teardown),
      cmocka_unit_test_setup_teardown(test_api_model_cuckoo, setup, teardown),
  };
  const char *only = getenv("BFH_TEST_FILTER"); /* e.g. "*rocksdb*" */
  if (only) cmocka_set_test_filter(only);
  return cmocka_run_group_tests(tests, NULL, NULL);
}

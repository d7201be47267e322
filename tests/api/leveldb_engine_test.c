/* The public API (include/bfh.h) on BFH_ENGINE_LEVELDB, over databases written by stock
 * LevelDB 1.23 through its C API with default options (snappy blocks, several levels,
 * overwrites, deletions). Every search method must equal a full-scan oracle computed with a
 * plain LevelDB iterator before bfh opens the database. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <dirent.h>
#include <fcntl.h>
#include <leveldb/c.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bfh.h"
/* Not public (api/testbed.h): the engine's views and table scans, its indexing and
   filter-cache counters, where each leaf came from, and a sync of the emulated hook. */
#include "api/testbed.h"
#include "tests/leveldb_test_util.h"
#include "tests/test_util.h"
#include "util/random.h"
#include "util/vec.h"

#define NKEYS 150000u
#define NOPS 320000u  /* >= 300,000 entries written by LevelDB */
#define NPOPULAR 400u /* repeated values */
#define EMPTY_ID 0u   /* id of the empty value */
#define NO_VALUE UINT32_MAX

static char tmpdir[4096];
static const char *self_exe;

/* Value of id: "" for EMPTY_ID, else "v<id>-" and 10..309 pseudo-random letters (half
   random, half repeating, so that snappy pays). */
static size_t make_value(uint32_t id, char *out) {
  if (id == EMPTY_ID) return 0;
  rng_t r;
  rng_init(&r, id);
  int n = snprintf(out, 32, "v%u-", id);
  size_t len = (size_t)n + 10 + (size_t)rng_below(&r, 300);
  for (size_t i = (size_t)n; i < len; i++)
    out[i] = i % 2 ? (char)('a' + rng_below(&r, 26)) : (char)('a' + (id + i / 8) % 26);
  return len;
}

static uint32_t value_id(const char *v, size_t n) {
  if (n == 0) return EMPTY_ID;
  char buf[512];
  assert_true(n > 2 && v[0] == 'v');
  uint32_t id = (uint32_t)strtoul(v + 1, NULL, 10);
  assert_int_equal(make_value(id, buf), n);
  assert_memory_equal(buf, v, n);
  return id;
}

static int key_index(const void *k, size_t n, char prefix) {
  const char *s = k;
  if (n != 9 || s[0] != prefix) return -1;
  char buf[9];
  memcpy(buf, s + 1, 8);
  buf[8] = 0;
  return atoi(buf);
}

/* What write_stock_db has open; stock_close releases it (the teardowns too, after a failed
   assertion in write_stock_db). */
static struct stock {
  leveldb_t *db;
  leveldb_options_t *opt;
  leveldb_writeoptions_t *wo;
  leveldb_readoptions_t *ro;
  leveldb_iterator_t *it;
} stock;

static void stock_close(void) {
  if (stock.it) leveldb_iter_destroy(stock.it); /* before the close: it pins a version */
  if (stock.db) leveldb_close(stock.db);
  if (stock.ro) leveldb_readoptions_destroy(stock.ro);
  if (stock.wo) leveldb_writeoptions_destroy(stock.wo);
  if (stock.opt) leveldb_options_destroy(stock.opt);
  memset(&stock, 0, sizeof stock);
}

/* Writes the database with stock LevelDB and returns the oracle: cur[i] = value id of key
   i, NO_VALUE when absent, read back with a plain LevelDB iterator. The database is left
   settled (tests/leveldb_test_util.h): every entry in a table, no compaction to do, so an
   open starts none and its table list stays as it is until the test writes or reads. */
static uint32_t *write_stock_db(const char *path, uint32_t nkeys, uint32_t nops, uint64_t seed,
                                int compact) {
  leveldb_options_t *opt = stock.opt = leveldb_options_create();
  leveldb_options_set_create_if_missing(opt, 1);
  char *err = NULL;
  leveldb_t *db = stock.db = leveldb_open(opt, path, &err);
  if (err) fail_msg("leveldb_open %s: %s", path, err);
  leveldb_writeoptions_t *wo = stock.wo = leveldb_writeoptions_create();
  rng_t r;
  rng_init(&r, seed);
  char val[512];
  for (uint32_t op = 0; op < nops; op++) {
    char key[16];
    snprintf(key, sizeof key, "s%08u", (unsigned)rng_below(&r, nkeys));
    uint64_t x = rng_below(&r, 100);
    if (x < 10) {
      leveldb_delete(db, wo, key, 9, &err);
    } else {
      uint32_t id = x < 13   ? EMPTY_ID
                    : x < 38 ? 1 + (uint32_t)rng_below(&r, NPOPULAR)
                             : 1000000 + op;
      leveldb_put(db, wo, key, 9, val, make_value(id, val), &err);
    }
    assert_null(err);
  }
  if (compact) leveldb_compact_range(db, NULL, 0, NULL, 0);
  ldb_test_settle(db); /* no compaction pending at any later open */
  uint32_t *cur = malloc(nkeys * sizeof *cur);
  for (uint32_t i = 0; i < nkeys; i++) cur[i] = NO_VALUE;
  leveldb_readoptions_t *ro = stock.ro = leveldb_readoptions_create();
  leveldb_iterator_t *it = stock.it = leveldb_create_iterator(db, ro);
  for (leveldb_iter_seek_to_first(it); leveldb_iter_valid(it); leveldb_iter_next(it)) {
    size_t kl, vl;
    const char *k = leveldb_iter_key(it, &kl);
    const char *v = leveldb_iter_value(it, &vl);
    int i = key_index(k, kl, 's');
    assert_true(i >= 0 && (uint32_t)i < nkeys);
    cur[i] = value_id(v, vl);
  }
  if (nops >= 300000) {
    char *levels = leveldb_property_value(db, "leveldb.num-files-at-level1");
    assert_true(atoi(levels) > 0); /* several levels: L1 is used (and L0 or L2) */
    leveldb_free(levels);
  }
  stock_close();
  return cur;
}

typedef struct hits {
  uint8_t *seen; /* per stable key */
  uint32_t nkeys;
  uint64_t stable, other, dup;
  char prefix;
} hits_t;

static int on_match(void *arg, const void *key, size_t len) {
  hits_t *h = arg;
  int i = key_index(key, len, h->prefix);
  if (i < 0 || (uint32_t)i >= h->nkeys) {
    h->other++;
    return 0;
  }
  if (h->seen[i]++) h->dup++;
  h->stable++;
  return 0;
}

/* on_match as an engine_match_fn (the sequence is not checked here). */
static int on_entry(void *arg, const void *key, size_t len, uint64_t seq) {
  (void)seq;
  return on_match(arg, key, len);
}

static const bfh_method methods[] = {BFH_SEARCH_SCAN, BFH_SEARCH_LEAVES, BFH_SEARCH_HIERARCHY,
                                     BFH_SEARCH_SLICED, BFH_SEARCH_AUTO};

/* Searches value id by method and checks the stable keys against cur exactly. */
static void check_search(bfh_db *db, const uint32_t *cur, uint32_t nkeys, uint32_t id, bfh_method m,
                         int allow_other) {
  char val[512];
  size_t vl = make_value(id, val);
  hits_t h = {calloc(nkeys, 1), nkeys, 0, 0, 0, 's'};
  bfh_search_stats st;
  int rc = bfh_search(db, val, vl, m, on_match, &h, &st);
  if (rc != BFH_OK) print_message("search: %s\n", bfh_last_error(db));
  assert_int_equal(rc, BFH_OK);
  assert_int_equal(h.dup, 0);
  if (!allow_other) assert_int_equal(h.other, 0);
  uint64_t want = 0;
  for (uint32_t i = 0; i < nkeys; i++) {
    int expect = cur[i] == id;
    want += (uint64_t)expect;
    if (expect != (h.seen[i] != 0))
      print_message("id %u method %d key %u: expected %d got %d\n", id, m, i, expect, h.seen[i]);
    assert_int_equal(expect, h.seen[i] != 0);
  }
  assert_int_equal(h.stable, want);
  free(h.seen);
}

/* The group writes one database with stock LevelDB (the template) and its oracle; every test
   gets a fresh copy of it (or an empty directory) and a teardown that closes whatever the test
   left open, so that a failed assertion in one test never reaches the next. */
static uint32_t *oracle;
static char template_db[4200];

typedef struct writer writer_t;

typedef struct fixture {
  char dir[4300]; /* this test's directory: a copy of the template, or empty */
  bfh_db *db;     /* the database the test has open, if any */
  uint32_t *cur;  /* an oracle of the test's own, if any */
  writer_t *writer;
  pthread_t writer_thread; /* running while writer != NULL */
} fixture_t;

static void writer_stop(fixture_t *fx);

static int group_setup(void **state) {
  (void)state;
  if (test_tmpdir_create(tmpdir, sizeof tmpdir, "leveldb_engine") != 0) return -1;
  snprintf(template_db, sizeof template_db, "%s/template", tmpdir);
  oracle = write_stock_db(template_db, NKEYS, NOPS, 42, 0);
  return 0;
}

static int group_teardown(void **state) {
  (void)state;
  stock_close();
  free(oracle);
  return test_rmrf(tmpdir);
}

static int fixture_setup(void **state, int copy) {
  static unsigned count;
  fixture_t *fx = calloc(1, sizeof *fx);
  if (!fx) return -1;
  snprintf(fx->dir, sizeof fx->dir, "%s/test%u", tmpdir, count++);
  int rc = copy ? test_copy_dir(template_db, fx->dir) : mkdir(fx->dir, 0755);
  if (rc != 0) {
    free(fx);
    return -1;
  }
  *state = fx;
  return 0;
}

static int setup_copy(void **state) {
  return fixture_setup(state, 1);
}
static int setup_empty(void **state) {
  return fixture_setup(state, 0);
}

static int fixture_teardown(void **state) {
  fixture_t *fx = *state;
  writer_stop(fx);
  stock_close();
  int rc = fx->db && bfh_close(fx->db) != BFH_OK ? -1 : 0;
  free(fx->cur);
  if (test_rmrf(fx->dir) != 0) rc = -1;
  free(fx);
  return rc;
}

static bfh_db *open_leveldb(const char *path) {
  bfh_options opt;
  bfh_options_init(&opt);
  opt.engine = BFH_ENGINE_LEVELDB;
  opt.create_if_missing = 0;
  bfh_db *db = NULL;
  int rc = bfh_open(path, &opt, &db);
  if (rc != BFH_OK) print_message("open: %s\n", bfh_last_error(NULL));
  assert_int_equal(rc, BFH_OK);
  return db;
}

/* Opens the fixture's database; the teardown closes it if the test does not. */
static bfh_db *fixture_open(fixture_t *fx) {
  fx->db = open_leveldb(fx->dir);
  return fx->db;
}

static void fixture_close(fixture_t *fx) {
  bfh_db *db = fx->db;
  fx->db = NULL;
  assert_int_equal(bfh_close(db), BFH_OK);
}

/* The table numbers of a fresh view, sorted (malloc'd into *out). */
static size_t view_numbers(bfh_db *db, uint64_t **out) {
  engine_t *e = bfh_internal_engine(db);
  engine_view_t *v;
  err_t err;
  assert_int_equal(e->ops->view_acquire(e, &v, &err), BFH_OK);
  const engine_table_t *t;
  size_t n = e->ops->view_tables(v, &t);
  *out = malloc((n ? n : 1) * sizeof **out);
  assert_non_null(*out);
  for (size_t i = 0; i < n; i++) (*out)[i] = t[i].number; /* the view's list is sorted */
  e->ops->view_release(e, v);
  return n;
}

static void test_leveldb_engine_methods_equal_oracle(void **state) {
  fixture_t *fx = *state;
  bfh_db *db = fixture_open(fx);
  /* Query values: present unique ones, repeated ones, the empty value, absent ones. */
  uint32_t ids[64];
  size_t n = 0;
  rng_t r;
  rng_init(&r, 7);
  while (n < 20) {
    uint32_t i = (uint32_t)rng_below(&r, NKEYS);
    if (oracle[i] != NO_VALUE && oracle[i] >= 1000000) ids[n++] = oracle[i];
  }
  for (uint32_t p = 1; p <= 12; p++) ids[n++] = p * 31; /* repeated */
  ids[n++] = EMPTY_ID;
  for (uint32_t a = 0; a < 8; a++) ids[n++] = 5000000 + a; /* absent */
  ids[n++] = 1000000 + NOPS - 1;                           /* maybe overwritten */
  for (size_t q = 0; q < n; q++)
    for (size_t m = 0; m < sizeof methods / sizeof *methods; m++)
      check_search(db, oracle, NKEYS, ids[q], methods[m], 0);
  /* The filters prune: a unique value reads few tables with the hierarchy. The template's
     entries fill 10 tables of about 2 MiB when fully compacted; any layout holds them all
     (the log is empty), so at least that many tables are listed. A search never waits for
     indexing (a table without a leaf yet is scanned), and LevelDB may still be compacting
     after the open: every table is indexed (a full sync), then searched, until the live
     list was the same before and after the search. */
  char val[512];
  bfh_search_stats st;
  for (int attempt = 0;; attempt++) {
    err_t err;
    assert_int_equal(engine_stock_sync(bfh_internal_engine(db), &err), BFH_OK);
    uint64_t *before, *after;
    size_t nb = view_numbers(db, &before);
    assert_int_equal(
        bfh_search(db, val, make_value(ids[0], val), BFH_SEARCH_HIERARCHY, NULL, NULL, &st),
        BFH_OK);
    size_t na = view_numbers(db, &after);
    int stable = na == nb && memcmp(before, after, na * sizeof *after) == 0;
    free(before);
    free(after);
    if (stable) break;
    assert_true(attempt < 1000); /* LevelDB's compactions end */
  }
  print_message("hierarchy: %u live tables, %llu scanned, %llu results\n", st.tables_live,
                (unsigned long long)st.tables_scanned, (unsigned long long)st.results);
  assert_true(st.tables_live >= 10);
  assert_true(st.tables_scanned <= 3);
  assert_int_equal(st.results, 1);
  /* AUTO on the same indexed tables reads the value's table by a block or two (block
     filters built with the leaves), and reads no more tables. */
  assert_int_equal(bfh_search(db, val, make_value(ids[0], val), BFH_SEARCH_AUTO, NULL, NULL, &st),
                   BFH_OK);
  print_message("auto: %llu block filters probed, %llu blocks read, %llu bytes\n",
                (unsigned long long)st.block_filters_probed, (unsigned long long)st.blocks_read,
                (unsigned long long)st.bytes_read);
  assert_int_equal(st.results, 1);
  assert_true(st.block_filters_probed >= 1 && st.blocks_read >= 1);
  assert_true(st.bytes_read <= 64 << 10);
  fixture_close(fx);
}

static void test_leveldb_engine_writes_found_without_flush(void **state) {
  fixture_t *fx = *state;
  bfh_db *db = fixture_open(fx);
  char val[512];
  for (uint32_t i = 0; i < 50; i++) {
    char key[16];
    snprintf(key, sizeof key, "f%08u", i);
    uint32_t id = 7000000 + i;
    assert_int_equal(bfh_put(db, key, 9, val, make_value(id, val)), BFH_OK);
    for (size_t m = 0; m < sizeof methods / sizeof *methods; m++) {
      uint8_t seen[50] = {0};
      hits_t h = {seen, 50, 0, 0, 0, 'f'};
      assert_int_equal(bfh_search(db, val, make_value(id, val), methods[m], on_match, &h, NULL),
                       BFH_OK);
      assert_int_equal(h.stable, 1);
      assert_int_equal(seen[i], 1);
    }
  }
  /* Overwrite and delete: the old value is gone at once. */
  assert_int_equal(bfh_put(db, "f00000000", 9, "x", 1), BFH_OK);
  assert_int_equal(bfh_delete(db, "f00000001", 9), BFH_OK);
  for (uint32_t i = 0; i < 2; i++) {
    uint64_t before = 0;
    uint8_t seen[50] = {0};
    hits_t h = {seen, 50, 0, 0, 0, 'f'};
    for (size_t m = 0; m < sizeof methods / sizeof *methods; m++)
      assert_int_equal(
          bfh_search(db, val, make_value(7000000 + i, val), methods[m], on_match, &h, NULL),
          BFH_OK);
    assert_int_equal(h.stable, before);
  }
  void *got;
  size_t gl;
  assert_int_equal(bfh_get(db, "f00000002", 9, &got, &gl), BFH_OK);
  assert_int_equal(gl, make_value(7000002, val));
  assert_memory_equal(got, val, gl);
  bfh_free(got);
  assert_int_equal(bfh_get(db, "f00000001", 9, &got, &gl), BFH_NOT_FOUND);

  /* bfh_flush forces the memtable out: the logs then hold none of these keys, a new table
     holds them, and it has a leaf. */
  engine_t *e = bfh_internal_engine(db);
  engine_leveldb_stats_t s0, s1;
  engine_leveldb_get_stats(e, &s0);
  assert_int_equal(bfh_flush(db), BFH_OK);
  engine_leveldb_get_stats(e, &s1);
  assert_true(s1.index.tables_read > s0.index.tables_read);
  err_t err;
  engine_view_t *v;
  assert_int_equal(e->ops->view_acquire(e, &v, &err), BFH_OK);
  uint8_t seen[50] = {0};
  hits_t h = {seen, 50, 0, 0, 0, 'f'};
  engine_value_test_t test = engine_value_test_equal(val, make_value(7000002, val));
  assert_int_equal(e->ops->scan_memtables(e, v, &test, on_entry, &h, NULL, &err), BFH_OK);
  assert_int_equal(h.stable, 0);
  e->ops->view_release(e, v);
  check_search(db, oracle, NKEYS, 31, BFH_SEARCH_HIERARCHY, 1);
  fixture_close(fx);
}

struct writer {
  bfh_db *db;
  uint32_t nputs;
  atomic_int stop;     /* set by writer_stop: end early */
  atomic_int finished; /* set by the writer when it ends */
  int rc;
};

/* Puts and deletes keys "s<8 digits>w": 10 bytes, so never one of the stable keys, but
   between them in key order, so that the writer's tables overlap every table of the template
   and LevelDB's compactions take those in. */
static void *writer_main(void *arg) {
  writer_t *w = arg;
  rng_t r;
  rng_init(&r, 99);
  char val[512];
  for (uint32_t i = 0; i < w->nputs && w->rc == BFH_OK && !atomic_load(&w->stop); i++) {
    char key[16];
    snprintf(key, sizeof key, "s%08uw", (unsigned)rng_below(&r, NKEYS));
    if (rng_below(&r, 20) == 0) {
      w->rc = bfh_delete(w->db, key, 10);
    } else {
      /* Often a value the searcher looks for, so that these keys join its results. */
      uint32_t id = rng_below(&r, 4) == 0 ? 1 + (uint32_t)rng_below(&r, NPOPULAR) : 3000000 + i;
      w->rc = bfh_put(w->db, key, 10, val, make_value(id, val));
    }
  }
  atomic_store(&w->finished, 1);
  return NULL;
}

/* Stops and joins the fixture's writer, if one is running (a test that failed left it). */
static void writer_stop(fixture_t *fx) {
  if (!fx->writer) return;
  atomic_store(&fx->writer->stop, 1);
  pthread_join(fx->writer_thread, NULL);
  free(fx->writer);
  fx->writer = NULL;
}

static size_t count_gone(const uint64_t *before, size_t nbefore, const uint64_t *after,
                         size_t nafter) {
  size_t gone = 0;
  for (size_t i = 0; i < nbefore; i++) gone += !u64_sorted_contains(after, nafter, before[i]);
  return gone;
}

static void test_leveldb_engine_search_during_heavy_writes(void **state) {
  fixture_t *fx = *state;
  bfh_db *db = fixture_open(fx);
  engine_t *e = bfh_internal_engine(db);
  uint64_t *before, *after;
  size_t nbefore = view_numbers(db, &before);
  engine_leveldb_stats_t s0, s1;
  engine_leveldb_get_stats(e, &s0);
  writer_t *w = calloc(1, sizeof *w);
  assert_non_null(w);
  w->db = db;
  w->nputs = 300000;
  w->rc = BFH_OK;
  assert_int_equal(pthread_create(&fx->writer_thread, NULL, writer_main, w), 0);
  fx->writer = w;
  /* The stable keys (9 bytes) are not changed by the writer: their answers must stay exact.
     At least 20 searches, at most 400, none once the writer has ended. */
  rng_t r;
  rng_init(&r, 3);
  uint32_t searches = 0;
  while (searches < 400 && !(searches >= 20 && atomic_load(&w->finished))) {
    uint32_t id = 1 + (uint32_t)rng_below(&r, NPOPULAR);
    check_search(db, oracle, NKEYS, id, methods[searches % 5], 1);
    searches++;
  }
  int writer_ended = atomic_load(&w->finished);
  assert_int_equal(pthread_join(fx->writer_thread, NULL), 0); /* runs to its end */
  fx->writer = NULL;
  int wrc = w->rc;
  free(w);
  assert_int_equal(wrc, BFH_OK);

  /* Tables listed before the writer started leave the list, and their leaves go with them.
     The writer fills about 14 memtables of 4 MiB; once level 0 holds 4 files LevelDB compacts
     them with the level-1 tables they overlap, and the writer's keys span the whole key range
     of the template, whose level-1 tables are listed before. Wait (bounded) until one of
     those is gone: usually it went while the searches ran. A sync with no view alive drops
     the leaves of every table that left the list. */
  err_t err;
  size_t gone = 0;
  for (int polls = 0;; polls++) {
    assert_int_equal(engine_stock_sync(e, &err), BFH_OK);
    size_t nafter = view_numbers(db, &after);
    gone = count_gone(before, nbefore, after, nafter);
    free(after);
    if (gone > 0) break;
    if (polls >= 3000) fail_msg("no table left the list in 300 s of compactions");
    struct timespec ts = {0, 100 * 1000 * 1000};
    nanosleep(&ts, NULL);
  }
  engine_leveldb_get_stats(e, &s1);
  print_message(
      "%u searches (writer %s); of %zu tables before, %zu are gone; %llu tables "
      "indexed, %llu leaves removed\n",
      searches, writer_ended ? "had ended" : "still writing", nbefore, gone,
      (unsigned long long)(s1.index.tables_read - s0.index.tables_read),
      (unsigned long long)(s1.index.tables_removed - s0.index.tables_removed));
  free(before);
  assert_true(s1.index.tables_removed - s0.index.tables_removed >= gone);
  for (size_t m = 0; m < 5; m++) check_search(db, oracle, NKEYS, 77, methods[m], 1);
  fixture_close(fx);
}

/* The table numbers that have a cache file, sorted (malloc'd into *out). */
static size_t cache_numbers(const char *path, uint64_t **out) {
  char cdir[4500];
  snprintf(cdir, sizeof cdir, "%s/bfh-filters", path);
  DIR *d = opendir(cdir);
  assert_non_null(d);
  u64vec_t v = {0};
  struct dirent *de;
  while ((de = readdir(d))) {
    size_t l = strlen(de->d_name);
    if (l > 3 && !strcmp(de->d_name + l - 3, ".vf"))
      assert_int_equal(u64vec_push(&v, strtoull(de->d_name, NULL, 10)), BFH_OK);
  }
  closedir(d);
  u64vec_sort(&v);
  *out = v.v;
  return v.n;
}

/* Every live table with a valid cache file got its leaf from it; every other one was read.
   Returns how many came from the cache. */
static size_t check_leaf_sources(bfh_db *db, const uint64_t *cached, size_t ncached,
                                 const uint64_t *damaged, size_t ndamaged) {
  index_sync_t *sync = bfh_internal_sync(db);
  uint64_t *live;
  size_t nlive = view_numbers(db, &live), from_cache = 0;
  for (size_t i = 0; i < nlive; i++) {
    index_leaf_source_t src = index_sync_leaf_source(sync, live[i]);
    int valid = u64_sorted_contains(cached, ncached, live[i]) &&
                !u64_sorted_contains(damaged, ndamaged, live[i]);
    if (src != (valid ? INDEX_LEAF_CACHED : INDEX_LEAF_READ))
      print_message("table %llu: leaf source %d, cache file %s\n", (unsigned long long)live[i],
                    (int)src, valid ? "valid" : "missing or damaged");
    assert_int_equal(src, valid ? INDEX_LEAF_CACHED : INDEX_LEAF_READ);
    from_cache += (size_t)valid;
  }
  free(live);
  return from_cache;
}

/* The template is settled and the sessions below neither write nor get, so LevelDB compacts
   nothing: the tables listed at each open are those listed at the close before. */
static void test_leveldb_engine_reopen_uses_filter_cache(void **state) {
  fixture_t *fx = *state;
  fixture_open(fx);
  fixture_close(fx); /* writes a cache file for every table listed at close */
  uint64_t *cached;
  size_t ncached = cache_numbers(fx->dir, &cached);
  assert_true(ncached >= 8);
  /* Every table comes from the cache; none is read. */
  bfh_db *db = fixture_open(fx);
  size_t from_cache = check_leaf_sources(db, cached, ncached, NULL, 0);
  engine_leveldb_stats_t s;
  engine_leveldb_get_stats(bfh_internal_engine(db), &s);
  print_message(
      "reopen: %zu cache files, %zu live tables from them; %llu leaves loaded, %llu "
      "tables read\n",
      ncached, from_cache, (unsigned long long)s.index.tables_cached,
      (unsigned long long)s.index.tables_read);
  assert_int_equal(from_cache, ncached);
  assert_int_equal(s.index.tables_cached, ncached);
  assert_int_equal(s.index.tables_read, 0);
  fixture_close(fx);

  /* Damage one cache file and make another stale (other table size in its header): those two
     tables are read again, the others still come from the cache. */
  uint64_t damaged[2] = {cached[0], cached[ncached - 1]};
  for (int i = 0; i < 2; i++) {
    char p[4800];
    snprintf(p, sizeof p, "%s/bfh-filters/%06llu.vf", fx->dir, (unsigned long long)damaged[i]);
    assert_int_equal(test_file_xor_byte(p, i == 0 ? 1000 : 16, 1), 0); /* filter words / size */
  }
  db = fixture_open(fx);
  from_cache = check_leaf_sources(db, cached, ncached, damaged, 2);
  engine_leveldb_get_stats(bfh_internal_engine(db), &s);
  assert_int_equal(from_cache, ncached - 2);
  assert_int_equal(s.index.tables_read, 2);
  free(cached);
  for (uint32_t p = 1; p <= 20; p++) check_search(db, oracle, NKEYS, p, BFH_SEARCH_LEAVES, 1);
  fixture_close(fx);
}

static void test_leveldb_engine_second_open_is_busy(void **state) {
  fixture_t *fx = *state;
  fixture_open(fx);
  bfh_options opt;
  bfh_options_init(&opt);
  opt.engine = BFH_ENGINE_LEVELDB;
  bfh_db *db2 = NULL;
  assert_int_equal(bfh_open(fx->dir, &opt, &db2), BFH_E_BUSY);
  print_message("second open: %s\n", bfh_last_error(NULL));
  /* From another process too. */
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    execl(self_exe, self_exe, "--try-open", fx->dir, (char *)NULL);
    _exit(127);
  }
  int status;
  assert_int_equal(waitpid(pid, &status, 0), pid);
  assert_true(WIFEXITED(status));
  assert_int_equal(WEXITSTATUS(status), 0);
  fixture_close(fx);
}

static void test_leveldb_engine_rejects_other_directories(void **state) {
  fixture_t *fx = *state;
  char dir[4500], file[4600];
  snprintf(dir, sizeof dir, "%s/notdb", fx->dir);
  mkdir(dir, 0755);
  snprintf(file, sizeof file, "%s/notes.txt", dir);
  FILE *f = fopen(file, "w");
  fputs("hello\n", f);
  fclose(f);
  bfh_options opt;
  bfh_options_init(&opt);
  opt.engine = BFH_ENGINE_LEVELDB;
  assert_int_equal(bfh_open(dir, &opt, &fx->db), BFH_E_INVALID);
  print_message("not a database: %s\n", bfh_last_error(NULL));
  assert_non_null(strstr(bfh_last_error(NULL), "not a LevelDB database"));
  assert_null(fx->db);
  /* Missing without create_if_missing; created with it. */
  snprintf(dir, sizeof dir, "%s/fresh", fx->dir);
  opt.create_if_missing = 0;
  assert_int_equal(bfh_open(dir, &opt, &fx->db), BFH_E_INVALID);
  opt.create_if_missing = 1;
  assert_int_equal(bfh_open(dir, &opt, &fx->db), BFH_OK);
  assert_int_equal(bfh_put(fx->db, "a", 1, "b", 1), BFH_OK);
  bfh_search_stats st;
  assert_int_equal(bfh_search(fx->db, "b", 1, BFH_SEARCH_HIERARCHY, NULL, NULL, &st), BFH_OK);
  assert_int_equal(st.results, 1);
  fixture_close(fx);
  snprintf(file, sizeof file, "%s/CURRENT", dir);
  assert_int_equal(access(file, F_OK), 0); /* a LevelDB database */
}

/* A LevelDB database whose CURRENT is gone: stock LevelDB with create_if_missing would start
   a new database over its tables and logs (and delete them as obsolete). bfh refuses it
   before leveldb_open, as damage to repair, and changes nothing. */
static void test_leveldb_engine_missing_current_is_corrupt(void **state) {
  fixture_t *fx = *state;
  char dir[4500], file[4600];
  snprintf(dir, sizeof dir, "%s/nocurrent", fx->dir);
  bfh_options opt;
  bfh_options_init(&opt);
  opt.engine = BFH_ENGINE_LEVELDB;
  assert_int_equal(bfh_open(dir, &opt, &fx->db), BFH_OK);
  char k[32], v[32];
  for (int i = 0; i < 2000; i++) {
    int kl = snprintf(k, sizeof k, "key%05d", i), vl = snprintf(v, sizeof v, "val%05d", i);
    assert_int_equal(bfh_put(fx->db, k, (size_t)kl, v, (size_t)vl), BFH_OK);
  }
  assert_int_equal(bfh_flush(fx->db), BFH_OK);
  fixture_close(fx);
  snprintf(file, sizeof file, "%s/CURRENT", dir);
  assert_int_equal(unlink(file), 0);
  int tables = 0;
  DIR *d = opendir(dir);
  assert_non_null(d);
  struct dirent *de;
  while ((de = readdir(d))) tables += strstr(de->d_name, ".ldb") != NULL;
  closedir(d);
  assert_true(tables > 0);
  assert_int_equal(bfh_open(dir, &opt, &fx->db), BFH_E_CORRUPT);
  assert_null(fx->db);
  print_message("%s\n", bfh_last_error(NULL));
  assert_non_null(strstr(bfh_last_error(NULL), dir));
  assert_non_null(strstr(bfh_last_error(NULL), "bfh repair"));
  assert_int_not_equal(access(file, F_OK), 0); /* no new CURRENT */
  int after = 0;
  d = opendir(dir);
  assert_non_null(d);
  while ((de = readdir(d))) after += strstr(de->d_name, ".ldb") != NULL;
  closedir(d);
  assert_int_equal(after, tables);
}

static void test_leveldb_engine_corrupt_table_never_wrong(void **state) {
  fixture_t *fx = *state;
  char path[4500];
  snprintf(path, sizeof path, "%s/corrupt", fx->dir);
  uint32_t nkeys = 40000;
  /* Compacted, so that LevelDB has no compaction to run at the next open: with
     paranoid_checks off, a LevelDB compaction reads blocks without checking their CRC and
     may rewrite the damaged data into new, valid tables (and then the oracle is stale). */
  uint32_t *cur = fx->cur = write_stock_db(path, nkeys, 60000, 5, 1);
  /* Flip a byte inside a data block of every other table. */
  DIR *d = opendir(path);
  assert_non_null(d);
  struct dirent *de;
  int flipped = 0, failed = 0, k = 0;
  while (!failed && (de = readdir(d))) {
    if (!strstr(de->d_name, ".ldb") || k++ % 2) continue;
    char p[4800];
    snprintf(p, sizeof p, "%s/%s", path, de->d_name);
    failed = test_file_xor_byte(p, 2000, 0x10) != 0;
    flipped += !failed;
  }
  closedir(d);
  assert_false(failed);
  assert_true(flipped >= 1);
  bfh_db *db = fx->db = open_leveldb(path);
  engine_leveldb_stats_t s;
  engine_leveldb_get_stats(bfh_internal_engine(db), &s);
  assert_int_equal(s.index.tables_unreadable, (uint64_t)flipped);
  print_message("unreadable: %s\n", s.index.last_unreadable);
  int reported = 0;
  for (uint32_t id = 1; id <= 30; id++) {
    for (size_t m = 0; m < 5; m++) {
      char val[512];
      size_t vl = make_value(id, val);
      hits_t h = {calloc(nkeys, 1), nkeys, 0, 0, 0, 's'};
      int rc = bfh_search(db, val, vl, methods[m], on_match, &h, NULL);
      if (rc == BFH_OK) { /* then it must be exact */
        for (uint32_t i = 0; i < nkeys; i++) {
          if ((cur[i] == id) != (h.seen[i] != 0))
            print_message("id %u method %d key %u: expected %d\n", id, (int)methods[m], i,
                          cur[i] == id);
          assert_int_equal(cur[i] == id, h.seen[i] != 0);
        }
      } else {
        assert_int_equal(rc, BFH_E_CORRUPT);
        assert_non_null(strstr(bfh_last_error(db), ".ldb"));
        reported++;
      }
      free(h.seen);
    }
  }
  print_message("%d of 150 searches reported: %s\n", reported, bfh_last_error(db));
  assert_true(reported > 0);
  fixture_close(fx);
}

static int count_cache_files(const char *path) {
  uint64_t *numbers;
  size_t n = cache_numbers(path, &numbers);
  free(numbers);
  return (int)n;
}

/* In-memory leaves: a new table's cache file is written only once the table has lived a
   while, or at close; reopening loads it. On-disk leaves: the file is the leaf, written at
   once. A table younger than one background period is still found by a search. */
static uint64_t monotonic_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* In-memory leaves (and no value-to-block maps): a new table's cache file is written only
   once the table has been listed for ENGINE_LEVELDB_CACHE_DELAY_NS, or at close; reopening loads
   it. On-disk leaves: the file is the leaf, written at once. A table younger than one background
   period is still found by a search. */
static void test_leveldb_engine_lazy_filter_cache(void **state) {
  fixture_t *fx = *state;
  for (int on_disk = 0; on_disk < 2; on_disk++) {
    char path[4400];
    snprintf(path, sizeof path, "%s/lazy%d", fx->dir, on_disk);
    bfh_options opt;
    bfh_options_init(&opt);
    opt.engine = BFH_ENGINE_LEVELDB;
    opt.leaves_on_disk = on_disk;
    /* Without value-to-block maps: a table with a map has its cache file written at once
       (its chunks are read from it; leveldb_map_test). */
    opt.block_maps = 0;
    assert_int_equal(bfh_open(path, &opt, &fx->db), BFH_OK);
    bfh_db *db = fx->db;
    char val[512];
    for (uint32_t i = 0; i < 200; i++) {
      char key[16];
      snprintf(key, sizeof key, "z%08u", i);
      assert_int_equal(bfh_put(db, key, 9, val, make_value(5000000 + i, val)), BFH_OK);
    }
    uint64_t t0 = monotonic_ns();            /* the table is listed after this */
    assert_int_equal(bfh_flush(db), BFH_OK); /* one table, indexed by the flush */
    engine_leveldb_stats_t s;
    engine_leveldb_get_stats(bfh_internal_engine(db), &s);
    assert_int_equal(s.index.tables_read, 1);
    int files = count_cache_files(path);
    if (on_disk)
      assert_int_equal(files, 1);
    else if (monotonic_ns() - t0 < ENGINE_LEVELDB_CACHE_DELAY_NS)
      assert_int_equal(files, 0); /* not yet: it has not been listed long enough */
    else
      print_message("the flush took over 2 s: too late to see that no cache file is written\n");
    /* A table made just now (the background sync defers it): the search still finds it. */
    for (uint32_t i = 0; i < 200; i++) {
      char key[16];
      snprintf(key, sizeof key, "y%08u", i);
      assert_int_equal(bfh_put(db, key, 9, val, make_value(6000000 + i, val)), BFH_OK);
    }
    assert_int_equal(bfh_flush(db), BFH_OK);
    for (uint32_t i = 0; i < 200; i += 37) {
      uint8_t seen[200] = {0};
      hits_t h = {seen, 200, 0, 0, 0, 'y'};
      for (size_t m = 0; m < sizeof methods / sizeof *methods; m++) {
        h.stable = 0;
        memset(seen, 0, sizeof seen);
        assert_int_equal(
            bfh_search(db, val, make_value(6000000 + i, val), methods[m], on_match, &h, NULL),
            BFH_OK);
        assert_int_equal(h.stable, 1);
        assert_int_equal(seen[i], 1);
      }
    }
    fixture_close(fx);
    assert_int_equal(count_cache_files(path), 2); /* both live tables, at close at the latest */
    assert_int_equal(bfh_open(path, &opt, &fx->db), BFH_OK);
    engine_leveldb_get_stats(bfh_internal_engine(fx->db), &s);
    assert_int_equal(s.index.tables_cached, 2);
    assert_int_equal(s.index.tables_read, 0);
    fixture_close(fx);
  }
}

int main(int argc, char **argv) {
  if (argc == 3 && !strcmp(argv[1], "--try-open")) {
    bfh_options opt;
    bfh_options_init(&opt);
    opt.engine = BFH_ENGINE_LEVELDB;
    bfh_db *db = NULL;
    int rc = bfh_open(argv[2], &opt, &db);
    if (rc != BFH_E_BUSY) fprintf(stderr, "child open: %d %s\n", rc, bfh_last_error(NULL));
    bfh_close(db);
    return rc == BFH_E_BUSY ? 0 : 1;
  }
  self_exe = "/proc/self/exe";
  static char exe[4096];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n > 0) {
    exe[n] = 0;
    self_exe = exe;
  }
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_leveldb_engine_methods_equal_oracle, setup_copy,
                                      fixture_teardown),
      cmocka_unit_test_setup_teardown(test_leveldb_engine_writes_found_without_flush, setup_copy,
                                      fixture_teardown),
      cmocka_unit_test_setup_teardown(test_leveldb_engine_search_during_heavy_writes, setup_copy,
                                      fixture_teardown),
      cmocka_unit_test_setup_teardown(test_leveldb_engine_reopen_uses_filter_cache, setup_copy,
                                      fixture_teardown),
      cmocka_unit_test_setup_teardown(test_leveldb_engine_second_open_is_busy, setup_copy,
                                      fixture_teardown),
      cmocka_unit_test_setup_teardown(test_leveldb_engine_rejects_other_directories, setup_empty,
                                      fixture_teardown),
      cmocka_unit_test_setup_teardown(test_leveldb_engine_missing_current_is_corrupt, setup_empty,
                                      fixture_teardown),
      cmocka_unit_test_setup_teardown(test_leveldb_engine_corrupt_table_never_wrong, setup_empty,
                                      fixture_teardown),
      cmocka_unit_test_setup_teardown(test_leveldb_engine_lazy_filter_cache, setup_empty,
                                      fixture_teardown),
  };
  return cmocka_run_group_tests(tests, group_setup, group_teardown);
}

/* block_cache (lsm/block_cache.h) and the own engine's gets through it:
 *   - a block found is served whole, counted as a hit; another id, offset or size misses;
 *   - a pinned block that is evicted stays readable and unchanged until its release, and
 *     leaves the cache's charge at the eviction;
 *   - the capacity holds: inserts past it evict the least recently used blocks of a shard,
 *     and a lookup makes a block the most recent; a block larger than a shard's share is
 *     not kept;
 *   - replacement is CLOCK: in one shard, a block looked up since the hand last passed it is
 *     spared once (requeued as the newest) and the oldest block not looked up goes;
 *   - the index (open addressing, deletion by backward shift) loses no block under churn:
 *     after 20,000 inserts into a cache of 64 blocks, every block it counts is found, and
 *     each one found has its own bytes (entries reused for later blocks never show old ones);
 *   - a miss's entry (block_cache_alloc): written, then published and pinned; one published
 *     second for the same block, or one too large for a shard, stays its reader's only and
 *     is freed at the release; evicted entries are reused by later misses (reused > 0);
 *   - the same lookups and inserts from four threads at once keep the counts exact;
 *   - lsm_get of a database: a second get of the same keys hits (lsm_stats); a table whose
 *     first data blocks are overwritten with zeros under the open handle still answers a key
 *     whose block was cached with its right value (the checked copy), and gives
 *     ST_E_CORRUPT for a key whose block was not (no wrong answer either way);
 *   - block_cache_bytes 0: no cache, every get reads its block.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lsm/block_cache.h"
#include "lsm/db.h"
#include "tests/test_util.h"

static void fill(uint8_t *b, size_t n, int seed) {
  for (size_t i = 0; i < n; i++) b[i] = (uint8_t)(seed * 31 + i * 7);
}

/* block_cache_pin as a copy: 1 and the block in dst when held, else 0. */
static int lookup(block_cache_t *c, uint64_t id, uint64_t offset, void *dst, size_t n) {
  block_cache_handle_t *h;
  const uint8_t *p = block_cache_pin(c, id, offset, n, &h);
  if (!p) return 0;
  memcpy(dst, p, n);
  block_cache_release(h);
  return 1;
}

static void test_block_cache_hit_and_miss(void **state) {
  (void)state;
  block_cache_t *c = block_cache_create(1 << 20);
  assert_non_null(c);
  uint64_t a = block_cache_new_id(c), b = block_cache_new_id(c);
  assert_true(a != b && a && b);
  uint8_t blk[4096], out[4096];
  fill(blk, sizeof blk, 1);
  assert_int_equal(lookup(c, a, 0, out, sizeof out), 0);
  block_cache_insert(c, a, 0, blk, sizeof blk);
  memset(out, 0, sizeof out);
  assert_int_equal(lookup(c, a, 0, out, sizeof out), 1);
  assert_memory_equal(out, blk, sizeof blk);
  assert_int_equal(lookup(c, b, 0, out, sizeof out), 0);    /* another table */
  assert_int_equal(lookup(c, a, 4096, out, sizeof out), 0); /* another block */
  assert_int_equal(lookup(c, a, 0, out, 100), 0);           /* another size */
  block_cache_stats_t st;
  block_cache_get_stats(c, &st);
  assert_int_equal(st.hits, 1);
  assert_int_equal(st.misses, 4);
  assert_int_equal(st.inserts, 1);
  assert_int_equal(st.entries, 1);
  assert_int_equal(st.bytes, sizeof blk + BLOCK_CACHE_ENTRY_BYTES);
  block_cache_destroy(c);
}

static void test_block_cache_capacity_and_lru(void **state) {
  (void)state;
  /* A shard holds 4 blocks of 4 KiB: 16 shards x 4 x (4096 + entry). */
  size_t per = 4096 + BLOCK_CACHE_ENTRY_BYTES;
  block_cache_t *c = block_cache_create(BLOCK_CACHE_SHARDS * 4 * per);
  uint64_t id = block_cache_new_id(c);
  uint8_t blk[4096], out[4096];
  enum { N = 2000 };
  for (uint64_t i = 0; i < N; i++) {
    fill(blk, sizeof blk, (int)i);
    block_cache_insert(c, id, i * 4096, blk, sizeof blk);
    /* Block 0 is looked up after every insert: always the most recent of its shard, it
       stays. */
    assert_int_equal(lookup(c, id, 0, out, sizeof out), 1);
  }
  block_cache_stats_t st;
  block_cache_get_stats(c, &st);
  assert_true(st.bytes <= st.capacity);
  assert_true(st.entries <= BLOCK_CACHE_SHARDS * 4);
  assert_int_equal(st.inserts - st.evictions, st.entries);
  assert_true(st.evictions >= N - BLOCK_CACHE_SHARDS * 4);
  fill(blk, sizeof blk, 0);
  assert_int_equal(lookup(c, id, 0, out, sizeof out), 1);
  assert_memory_equal(out, blk, sizeof blk);
  /* Too big for a shard's share: not kept. */
  uint8_t *big = calloc(1, 5 * per);
  block_cache_insert(c, id, 1u << 30, big, 5 * per);
  assert_int_equal(lookup(c, id, 1u << 30, big, 5 * per), 0);
  free(big);
  block_cache_destroy(c);
}

static void test_block_cache_pin_outlives_eviction(void **state) {
  (void)state;
  size_t per = 4096 + BLOCK_CACHE_ENTRY_BYTES;
  block_cache_t *c = block_cache_create(BLOCK_CACHE_SHARDS * 2 * per); /* 2 blocks a shard */
  uint64_t id = block_cache_new_id(c);
  uint8_t blk[4096], want[4096];
  fill(want, sizeof want, 7);
  block_cache_insert(c, id, 0, want, sizeof want);
  block_cache_handle_t *h;
  const uint8_t *p = block_cache_pin(c, id, 0, sizeof want, &h);
  assert_non_null(p);
  /* Enough inserts that every shard evicts all it held, block 0 with the rest. */
  for (uint64_t i = 1; i <= 400; i++) {
    fill(blk, sizeof blk, (int)i);
    block_cache_insert(c, id, i * 4096, blk, sizeof blk);
  }
  assert_int_equal(lookup(c, id, 0, blk, sizeof blk), 0); /* gone from the cache */
  block_cache_stats_t st;
  block_cache_get_stats(c, &st);
  assert_true(st.bytes <= st.capacity);
  assert_int_equal(st.inserts - st.evictions, st.entries);
  assert_memory_equal(p, want, sizeof want); /* and still what was pinned */
  block_cache_release(h);
  block_cache_destroy(c); /* ASan: no leak, no use after free */
}

/* count offsets, in increasing order from 0 step 4096, whose blocks of table id fall in shard */
static void same_shard(uint64_t id, unsigned shard, uint64_t *out, int count) {
  int k = 0;
  for (uint64_t off = 0; k < count; off += 4096)
    if (block_cache_shard(id, off) == shard) out[k++] = off;
}

static void test_block_cache_clock(void **state) {
  (void)state;
  size_t per = 4096 + BLOCK_CACHE_ENTRY_BYTES;
  block_cache_t *c = block_cache_create(BLOCK_CACHE_SHARDS * 4 * per); /* 4 blocks a shard */
  uint64_t id = block_cache_new_id(c);
  uint64_t o[7];
  same_shard(id, 3, o, 7);
  uint8_t blk[4096], out[4096];
  for (int i = 0; i < 4; i++) {
    fill(blk, sizeof blk, i);
    block_cache_insert(c, id, o[i], blk, sizeof blk);
  }
  assert_int_equal(lookup(c, id, o[1], out, sizeof out), 1); /* o1 referenced */
  fill(blk, sizeof blk, 4);
  block_cache_insert(c, id, o[4], blk, sizeof blk); /* queue o0 o1 o2 o3: o0 goes */
  assert_int_equal(lookup(c, id, o[0], out, sizeof out), 0);
  /* queue o1* o2 o3 o4; looking o2 up marks it: the hand spares o1 and o2, takes o3 */
  assert_int_equal(lookup(c, id, o[2], out, sizeof out), 1);
  fill(blk, sizeof blk, 5);
  block_cache_insert(c, id, o[5], blk, sizeof blk);
  block_cache_stats_t st;
  block_cache_get_stats(c, &st);
  assert_int_equal(st.evictions, 2);
  /* queue o4 o1 o2 o5, none marked: the next insert takes o4; checked before any lookup
     below marks another */
  fill(blk, sizeof blk, 6);
  block_cache_insert(c, id, o[6], blk, sizeof blk);
  int held[7];
  for (int i = 0; i < 7; i++) held[i] = lookup(c, id, o[i], out, sizeof out);
  int want[7] = {0, 1, 1, 0, 0, 1, 1};
  for (int i = 0; i < 7; i++) {
    if (held[i] != want[i]) fail_msg("block %d: held %d, want %d", i, held[i], want[i]);
    if (held[i]) {
      fill(blk, sizeof blk, i);
      assert_int_equal(lookup(c, id, o[i], out, sizeof out), 1);
      assert_memory_equal(out, blk, sizeof blk);
    }
  }
  block_cache_destroy(c);
}

static void test_block_cache_index_under_churn(void **state) {
  (void)state;
  enum { BLK = 1024, SLOTS = 4, N = 20000, RANGE = 5000 };
  size_t per = BLK + BLOCK_CACHE_ENTRY_BYTES;
  block_cache_t *c = block_cache_create(BLOCK_CACHE_SHARDS * SLOTS * per);
  uint64_t id = block_cache_new_id(c);
  uint8_t blk[BLK], out[BLK];
  uint64_t x = 12345; /* fixed seed: offsets drawn from [0, RANGE) blocks */
  for (int i = 0; i < N; i++) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    uint64_t b = (x >> 33) % RANGE;
    if (lookup(c, id, b * BLK, out, sizeof out)) {
      fill(blk, sizeof blk, (int)b);
      assert_memory_equal(out, blk, sizeof blk); /* its own bytes, never a reused entry's */
    } else {
      fill(blk, sizeof blk, (int)b);
      block_cache_insert(c, id, b * BLK, blk, sizeof blk);
      assert_int_equal(lookup(c, id, b * BLK, out, sizeof out), 1); /* the newest stays */
    }
  }
  block_cache_stats_t st;
  block_cache_get_stats(c, &st);
  assert_int_equal(st.inserts - st.evictions, st.entries);
  assert_true(st.evictions > N / 4);
  assert_true(st.reused > 0); /* misses under a full cache took evicted entries */
  assert_true(st.spare_bytes <= (uint64_t)BLOCK_CACHE_SHARDS * BLOCK_CACHE_SPARES * BLK);
  /* Every block counted is found: a slot lost by a wrong shift would hide its block. */
  uint64_t found = 0;
  for (uint64_t b = 0; b < RANGE; b++)
    if (lookup(c, id, b * BLK, out, sizeof out)) {
      found++;
      fill(blk, sizeof blk, (int)b);
      assert_memory_equal(out, blk, sizeof blk);
    }
  assert_int_equal(found, st.entries);
  block_cache_destroy(c);
}

static void test_block_cache_alloc_and_publish(void **state) {
  (void)state;
  size_t per = 4096 + BLOCK_CACHE_ENTRY_BYTES;
  block_cache_t *c = block_cache_create(BLOCK_CACHE_SHARDS * 4 * per);
  uint64_t id = block_cache_new_id(c);
  uint8_t want[4096], other[4096], out[4096];
  fill(want, sizeof want, 11);
  fill(other, sizeof other, 12);
  /* Room for the block and its 5-byte trailer, as a get asks; the block is its first 4096. */
  block_cache_handle_t *a = block_cache_alloc(c, id, 0, sizeof want + 5);
  assert_non_null(a);
  memcpy(block_cache_data(a), want, sizeof want);
  assert_int_equal(lookup(c, id, 0, out, sizeof out), 0); /* not published: not there */
  block_cache_publish(c, a, sizeof want);
  assert_int_equal(lookup(c, id, 0, out, sizeof out), 1);
  assert_memory_equal(out, want, sizeof want);
  /* A second reader's copy of the same block: not published, still its own until release. */
  block_cache_handle_t *b = block_cache_alloc(c, id, 0, sizeof other + 5);
  memcpy(block_cache_data(b), other, sizeof other);
  block_cache_publish(c, b, sizeof other);
  assert_memory_equal(block_cache_data(b), other, sizeof other);
  assert_int_equal(lookup(c, id, 0, out, sizeof out), 1);
  assert_memory_equal(out, want, sizeof want); /* the first one published stays */
  block_cache_release(b);                      /* ASan: freed here, once */
  block_cache_stats_t st;
  block_cache_get_stats(c, &st);
  assert_int_equal(st.inserts, 1);
  assert_int_equal(st.entries, 1);
  /* Charged its allocation: 4101 bytes rounded up to BLOCK_CACHE_ROUND. */
  assert_int_equal(st.bytes, (4101 + BLOCK_CACHE_ROUND - 1) / BLOCK_CACHE_ROUND *
                                 BLOCK_CACHE_ROUND + BLOCK_CACHE_ENTRY_BYTES);
  /* Too large for a shard: served to its reader, never published. */
  block_cache_handle_t *big = block_cache_alloc(c, id, 1u << 20, 5 * per);
  assert_non_null(big);
  memset(block_cache_data(big), 0xab, 5 * per);
  block_cache_publish(c, big, 5 * per);
  assert_int_equal(block_cache_data(big)[5 * per - 1], 0xab);
  assert_int_equal(lookup(c, id, 1u << 20, out, 16), 0);
  block_cache_release(big);
  /* The pinned reader's block outlives eviction and its entry is never reused meanwhile:
     fill its shard past its room several times over. */
  uint64_t o[20];
  same_shard(id, block_cache_shard(id, 0), o, 20);
  block_cache_handle_t *h;
  const uint8_t *p = block_cache_pin(c, id, 0, sizeof want, &h);
  assert_non_null(p);
  block_cache_release(a); /* the publisher's pin */
  for (int i = 1; i < 20; i++) {
    fill(out, sizeof out, 100 + i);
    block_cache_insert(c, id, o[i], out, sizeof out);
  }
  assert_int_equal(lookup(c, id, 0, out, sizeof out), 0);
  assert_memory_equal(p, want, sizeof want);
  block_cache_release(h);
  block_cache_get_stats(c, &st);
  assert_true(st.reused > 0);
  block_cache_destroy(c);
}

typedef struct worker {
  block_cache_t *c;
  uint64_t id;
  uint64_t hits, wrong;
} worker_t;

static void *work(void *arg) {
  worker_t *w = arg;
  uint8_t blk[512], out[512];
  for (uint64_t i = 0; i < 20000; i++) {
    uint64_t off = (i * 2654435761u) % 300;
    if (lookup(w->c, w->id, off, out, sizeof out)) {
      w->hits++;
      fill(blk, sizeof blk, (int)off);
      w->wrong += memcmp(out, blk, sizeof blk) != 0;
    } else {
      fill(blk, sizeof blk, (int)off);
      block_cache_insert(w->c, w->id, off, blk, sizeof blk);
    }
  }
  return NULL;
}

static void test_block_cache_threads(void **state) {
  (void)state;
  block_cache_t *c = block_cache_create(64 << 10); /* smaller than the 300 blocks: evictions */
  uint64_t id = block_cache_new_id(c);
  pthread_t t[4];
  worker_t w[4];
  for (int i = 0; i < 4; i++) {
    w[i] = (worker_t){c, id, 0, 0};
    assert_int_equal(pthread_create(&t[i], NULL, work, &w[i]), 0);
  }
  uint64_t hits = 0;
  for (int i = 0; i < 4; i++) {
    pthread_join(t[i], NULL);
    assert_int_equal(w[i].wrong, 0);
    hits += w[i].hits;
  }
  block_cache_stats_t st;
  block_cache_get_stats(c, &st);
  assert_int_equal(st.hits, hits);
  assert_int_equal(st.hits + st.misses, 4 * 20000);
  assert_true(st.evictions > 0);
  assert_true(st.bytes <= st.capacity);
  block_cache_destroy(c);
}

/* ---- The engine's gets ----------------------------------------------------------------- */

#define NKEYS 20000

static void kv(int i, char *k, char *v) {
  snprintf(k, 32, "key%08d", i);
  snprintf(v, 64, "value-%d-%d", i, i * 7);
}

static lsm_db_t *open_db(const char *dir, size_t cache, int mapped) {
  lsm_options_t o;
  lsm_options_init(&o);
  o.block_cache_bytes = cache;
  o.mmap_reads = mapped;
  lsm_db_t *db = NULL;
  err_t e;
  if (lsm_open(dir, &o, &db, &e) != ST_OK) fail_msg("open: %s", e.msg);
  return db;
}

/* Gets keys [lo, hi) and checks each value; returns the gets that failed with ST_E_CORRUPT. */
static int get_range(lsm_db_t *db, int lo, int hi) {
  int corrupt = 0;
  for (int i = lo; i < hi; i++) {
    char k[32], v[64];
    kv(i, k, v);
    void *got = NULL;
    size_t n = 0;
    err_t e;
    int rc = lsm_get(db, k, strlen(k), &got, &n, &e);
    if (rc == ST_E_CORRUPT) {
      corrupt++;
      continue;
    }
    assert_int_equal(rc, ST_OK);
    assert_int_equal(n, strlen(v));
    assert_memory_equal(got, v, n);
    free(got);
  }
  return corrupt;
}

/* Calls fn(path, arg) for every table in dir; returns how many there were. */
static int each_table(const char *dir, void (*fn)(const char *path, void *arg), void *arg) {
  DIR *d = opendir(dir);
  assert_non_null(d);
  struct dirent *de;
  int tables = 0;
  while ((de = readdir(d))) {
    size_t l = strlen(de->d_name);
    if (l < 4 || strcmp(de->d_name + l - 4, ".sst")) continue;
    char p[TEST_PATH_MAX + 64];
    snprintf(p, sizeof p, "%s/%s", dir, de->d_name);
    fn(p, arg);
    tables++;
  }
  closedir(d);
  return tables;
}

static void zero_first_64k(const char *path, void *arg) {
  (void)arg;
  int fd = open(path, O_WRONLY);
  assert_true(fd >= 0);
  uint8_t zeros[4096] = {0};
  for (off_t off = 0; off < 64 * 1024; off += (off_t)sizeof zeros)
    assert_int_equal(pwrite(fd, zeros, sizeof zeros, off), (ssize_t)sizeof zeros);
  close(fd);
}

static void cut_to_32k(const char *path, void *arg) {
  (void)arg;
  assert_int_equal(truncate(path, 32 * 1024), 0);
}

/* mapped: the tables are read through mappings (mmap_reads), else with pread; both must
   serve the same bytes and meet damage the same way, a truncation included (a mapping would
   fault there without mapped_copy's guard). */
static void gets_through_the_cache(int mapped) {
  char dir[TEST_PATH_MAX];
  assert_int_equal(test_tmpdir_create(dir, sizeof dir, "block_cache"), 0);
  lsm_db_t *db = open_db(dir, 8u << 20, mapped);
  err_t e;
  for (int i = 0; i < NKEYS; i++) {
    char k[32], v[64];
    kv(i, k, v);
    assert_int_equal(lsm_put(db, k, strlen(k), v, strlen(v), &e), ST_OK);
  }
  assert_int_equal(lsm_flush(db, &e), ST_OK);
  assert_int_equal(lsm_wait_idle(db, &e), ST_OK);
  lsm_close(db);
  db = open_db(dir, 8u << 20, mapped);
  /* The first half read twice: the second time from the cache. */
  assert_int_equal(get_range(db, 0, NKEYS / 2), 0);
  lsm_stats_t a, b;
  lsm_get_stats(db, &a);
  assert_true(a.block_cache_misses > 0);
  assert_int_equal(get_range(db, 0, NKEYS / 2), 0);
  lsm_get_stats(db, &b);
  assert_int_equal(b.block_cache_misses, a.block_cache_misses);
  assert_true(b.block_cache_hits >= a.block_cache_hits + NKEYS / 2);
  assert_true(b.block_cache_bytes > 0);
  /* A fresh cache holding the blocks of keys [0, 200) alone. */
  lsm_close(db);
  db = open_db(dir, 8u << 20, mapped);
  assert_int_equal(get_range(db, 0, 200), 0);
  /* The first 64 KiB of every table (its first data blocks, keys up to about 1,700) zeroed
     under the open handle (the index, filter and footer, at its end, were read at open): a cached
     block still serves its checked bytes, a block read now fails its CRC. */
  assert_true(each_table(dir, zero_first_64k, NULL) > 0);
  assert_int_equal(get_range(db, 0, 200), 0);       /* cached: right values */
  assert_int_equal(get_range(db, 1000, 1200), 200); /* not cached: checksum errors */
  /* Every table cut to 32 KiB under the open handle: the blocks past the end are errors
     ("truncated"), not a fault; the cached ones still serve. */
  assert_true(each_table(dir, cut_to_32k, NULL) > 0);
  assert_int_equal(get_range(db, 5000, 5200), 200);
  char k[32], v[64];
  kv(5000, k, v);
  void *got = NULL;
  size_t n;
  err_t e2;
  assert_int_equal(lsm_get(db, k, strlen(k), &got, &n, &e2), ST_E_CORRUPT);
  assert_non_null(strstr(e2.msg, "truncated"));
  assert_int_equal(get_range(db, 0, 200), 0);
  lsm_close(db);
  test_rmrf(dir);
}

static void test_gets_through_the_cache(void **state) {
  (void)state;
  gets_through_the_cache(0);
}

static void test_gets_through_the_cache_mapped(void **state) {
  (void)state;
  gets_through_the_cache(1);
}

static void test_no_cache(void **state) {
  (void)state;
  char dir[TEST_PATH_MAX];
  assert_int_equal(test_tmpdir_create(dir, sizeof dir, "block_cache"), 0);
  lsm_db_t *db = open_db(dir, 0, 0);
  err_t e;
  for (int i = 0; i < 2000; i++) {
    char k[32], v[64];
    kv(i, k, v);
    assert_int_equal(lsm_put(db, k, strlen(k), v, strlen(v), &e), ST_OK);
  }
  assert_int_equal(lsm_flush(db, &e), ST_OK);
  assert_int_equal(get_range(db, 0, 2000), 0);
  assert_int_equal(get_range(db, 0, 2000), 0);
  lsm_stats_t st;
  lsm_get_stats(db, &st);
  assert_int_equal(st.block_cache_hits + st.block_cache_misses + st.block_cache_bytes, 0);
  lsm_close(db);
  test_rmrf(dir);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_block_cache_hit_and_miss),
      cmocka_unit_test(test_block_cache_capacity_and_lru),
      cmocka_unit_test(test_block_cache_pin_outlives_eviction),
      cmocka_unit_test(test_block_cache_clock),
      cmocka_unit_test(test_block_cache_index_under_churn),
      cmocka_unit_test(test_block_cache_alloc_and_publish),
      cmocka_unit_test(test_block_cache_threads),
      cmocka_unit_test(test_gets_through_the_cache),
      cmocka_unit_test(test_gets_through_the_cache_mapped),
      cmocka_unit_test(test_no_cache),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

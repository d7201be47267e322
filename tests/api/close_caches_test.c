/* The close of a read-write LevelDB or RocksDB database leaves a filter cache file for every
 * table the database holds at rest, whatever the library's background work was doing when
 * the close began: a compaction or a flush that ends after the last list of the open library
 * installs tables too, and the close lists the tables of the closed database's MANIFEST for
 * that reason (stock_rw_close).
 *
 * Each round writes enough through small memtables and tables that flushes and compactions
 * are under way, closes at once, and checks the MANIFEST's tables against bfh-filters/. The
 * rounds reopen the same database, so a later round also checks the cache files a reopen
 * loaded are kept. When the close's last sync listed the tables of the open library, the
 * LevelDB run failed in its first round on this machine (the flush of the last memtable
 * installed its table after that list); no test can force the race from outside the
 * library, so this one checks the invariant. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "bfh.h"
#include "index/leaf_cache.h"
#include "lsm_hooks/leveldb_format/ldb_version_edit.h"
#include "lsm_hooks/rocksdb_format/rdb_manifest.h"
#include "tests/test_util.h"
#include "tests/api/db_fixture.h" /* after test_util.h */
#include "util/env.h"

#define ROUNDS 6
#define PUTS 6000 /* per round: about 0.6 MiB through 64 KiB memtables */

static void options(bfh_options *o, bfh_engine engine) {
  bfh_options_init(o);
  o->engine = engine;
  o->value_filter_bits = 8 * 1024;
  o->memtable_bytes = 64 << 10;
  o->table_bytes = 32 << 10;
}

/* The numbers of the tables the MANIFEST of the closed database at dir names. */
static size_t tables_at_rest(bfh_engine engine, const char *dir, uint64_t *numbers, size_t cap) {
  err_t e;
  size_t n = 0;
  if (engine == BFH_ENGINE_LEVELDB) {
    char manifest[64], path[4400];
    assert_int_equal(test_current_manifest(dir, manifest, sizeof manifest), 0);
    snprintf(path, sizeof path, "%s/%s", dir, manifest);
    ldb_version_t v = {0};
    uint64_t next;
    if (ldb_version_read(env_default(), path, 0, &v, &next, &e) != BFH_OK)
      fail_msg("%s: %s", path, e.msg);
    assert_true(v.nfiles <= cap);
    for (size_t i = 0; i < v.nfiles; i++) numbers[n++] = v.files[i].number;
    ldb_version_release(&v);
  } else {
    rdb_version_t v;
    if (rdb_version_load(env_default(), dir, 0, &v, NULL, NULL, &e) != BFH_OK)
      fail_msg("%s: %s", dir, e.msg);
    assert_true(v.nfiles <= cap);
    for (size_t i = 0; i < v.nfiles; i++)
      if (v.files[i].cf == 0) numbers[n++] = v.files[i].number;
    rdb_version_release(&v);
  }
  return n;
}

static void every_table_cached(bfh_engine engine) {
  db_fixture_t *f = NULL;
  assert_int_equal(db_fixture_setup((void **)&f, "close_caches"), 0);
  bfh_options o;
  options(&o, engine);
  uint64_t numbers[4096];
  size_t checked = 0;
  for (int round = 0; round < ROUNDS; round++) {
    assert_int_equal(bfh_open(f->dir, &o, &f->db), BFH_OK);
    for (unsigned i = 0; i < PUTS; i++) {
      char key[32], val[128];
      unsigned k = (i * 7919u + (unsigned)round * 104729u) % (PUTS * 2);
      int kl = snprintf(key, sizeof key, "key%08u", k);
      int vl = snprintf(val, sizeof val, "value-%d-%u-%060u", round, i % 997, i);
      assert_int_equal(bfh_put(f->db, key, (size_t)kl, val, (size_t)vl), BFH_OK);
    }
    assert_int_equal(bfh_close(f->db), BFH_OK); /* at once: background work under way */
    f->db = NULL;
    size_t n = tables_at_rest(engine, f->dir, numbers, sizeof numbers / sizeof *numbers);
    assert_true(n > 0);
    for (size_t i = 0; i < n; i++) {
      char path[4400];
      snprintf(path, sizeof path, "%s/%s/%06llu.vf", f->dir, LEAF_CACHE_DIR,
               (unsigned long long)numbers[i]);
      struct stat sb;
      if (stat(path, &sb) != 0)
        fail_msg("round %d: table %06llu of the MANIFEST has no cache file %s", round,
                 (unsigned long long)numbers[i], path);
    }
    checked += n;
  }
  assert_true(checked >= ROUNDS);
  assert_int_equal(db_fixture_teardown((void **)&f), 0);
}

static void test_leveldb(void **state) {
  (void)state;
  every_table_cached(BFH_ENGINE_LEVELDB);
}

static void test_rocksdb(void **state) {
  (void)state;
  every_table_cached(BFH_ENGINE_ROCKSDB);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_leveldb),
      cmocka_unit_test(test_rocksdb),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

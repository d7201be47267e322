/* The persisted value index (<db>/BFH-INDEX, index/persisted_index.h; doc/search.md
 * "Open cost"): a reading open answers through it before any leaf is loaded (the loaders are
 * held, index_sync_test_hold_loaders), and AUTO equals SCAN with the file present, stale
 * (tables compacted away and new ones made after it was written), damaged (counted, answered
 * around), truncated, missing, and for a database made again whose tables have the same
 * numbers and sizes as the tables the file was written for.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bfh.h"
#include "index/block_index.h"
#include "index/index_sync.h"
#include "index/persisted_index.h"
#include "index/value_index.h"
#include "tests/test_util.h"
#include "tests/api/persisted_index_util.h"
#include "tests/api/db_fixture.h"
#include "api/testbed.h"
#include "lsm_hooks/engines/lsm/engine_lsm.h"
#include "util/coding.h"

#define NKEYS 6000
#define DOMAIN NKEYS /* unique values: each in one table */

static int setup(void **state) {
  return db_fixture_setup(state, "persisted_index_test");
}

static int teardown(void **state) {
  index_sync_test_hold_loaders(0);
  return db_fixture_teardown(state);
}

static void options(bfh_options *o) {
  bfh_options_init(o);
  o->create_if_missing = 1;
  o->memtable_bytes = 64 << 10;
  o->table_bytes = 16 << 10;
  o->value_filter_bits = 8192;
  o->index_bits_per_value = BFH_LEAN_MAP_BITS;
  o->block_maps = 1;
}

static size_t value_of(uint32_t d, char *v) {
  return (size_t)sprintf(v, "value-%05u", d);
}

static int count(void *arg, const void *key, size_t len) {
  (void)key, (void)len;
  (*(uint64_t *)arg)++;
  return 0;
}

/* Puts keys [from, to) with values base + (i % DOMAIN); closes (the close writes the file),
   after the flushes and compactions settled when settle is set, else with them running. */
static void put_and_close(db_fixture_t *f, uint32_t from, uint32_t to, uint32_t base, int settle) {
  bfh_options o;
  options(&o);
  assert_int_equal(bfh_open(f->dir, &o, &f->db), BFH_OK);
  for (uint32_t i = from; i < to; i++) {
    char k[32], v[32];
    int kl = sprintf(k, "key-%06u", i);
    size_t vl = value_of(base + i % DOMAIN, v);
    assert_int_equal(bfh_put(f->db, k, (size_t)kl, v, vl), BFH_OK);
  }
  if (settle) assert_int_equal(engine_lsm_wait_idle(bfh_internal_engine(f->db), NULL), BFH_OK);
  assert_int_equal(bfh_close(f->db), BFH_OK);
  f->db = NULL;
}

/* put_and_close with the file covering every live table, by the settled close. */
static void load(db_fixture_t *f, uint32_t from, uint32_t to, uint32_t base) {
  put_and_close(f, from, to, base, 1);
}

static void open_held(db_fixture_t *f) {
  bfh_options o;
  options(&o);
  o.create_if_missing = 0;
  index_sync_test_hold_loaders(1);
  int rc = bfh_open(f->dir, &o, &f->db);
  if (rc != BFH_OK) fail_msg("bfh_open: %d %s", rc, bfh_last_error(NULL));
}

static void close_db(db_fixture_t *f) {
  index_sync_test_hold_loaders(0);
  assert_int_equal(bfh_close(f->db), BFH_OK);
  f->db = NULL;
}

/* AUTO equals SCAN for the values base + [0, DOMAIN) and 50 absent ones; returns the tables
   AUTO probed the map (or block filter) of, over all searches. */
static uint64_t check(bfh_db *db, uint32_t base) {
  uint64_t selected = 0;
  for (uint32_t d = 0; d < DOMAIN + 50; d++) {
    char v[32];
    size_t len = value_of(base + d, v);
    uint64_t want = 0, got = 0;
    bfh_search_stats st;
    assert_int_equal(bfh_search(db, v, len, BFH_SEARCH_SCAN, count, &want, NULL), BFH_OK);
    assert_int_equal(bfh_search(db, v, len, BFH_SEARCH_AUTO, count, &got, &st), BFH_OK);
    if (got != want)
      fail_msg("value %s: AUTO %llu keys, SCAN %llu", v, (unsigned long long)got,
               (unsigned long long)want);
    selected += st.block_filters_probed;
  }
  return selected;
}

static void file_path(db_fixture_t *f, char *out, size_t cap) {
  snprintf(out, cap, "%s/%s", f->dir, PERSISTED_INDEX_FILE);
}

static void test_present(void **state) {
  db_fixture_t *f = *state;
  load(f, 0, NKEYS, 0);
  char p[4400];
  file_path(f, p, sizeof p);
  assert_int_equal(access(p, F_OK), 0); /* the writer's close wrote it */
  open_held(f);
  size_t n = pidx_test_live_tables(f->db);
  if (n < 4) fail_msg("%zu tables, want at least 4", n);
  assert_int_equal(pidx_test_persisted(f->db), n); /* every table answered for, no leaf loaded */
  assert_int_equal(value_index_leaf_count(bfh_internal_index(f->db)), 0);
  uint64_t sel = check(f->db, 0);
  /* Without the file every table is selected by every search (no leaf): n per search. */
  if (sel * 3 > (uint64_t)(DOMAIN + 50) * n)
    fail_msg("AUTO selected %llu tables over %d searches of %zu tables", (unsigned long long)sel,
             DOMAIN + 50, n);
  assert_int_equal(pidx_test_damaged(f->db), 0);
  /* Once the loader is done every table has its leaf and the file is let go. */
  index_sync_test_hold_loaders(0);
  assert_int_equal(index_sync_loader_wait(bfh_internal_sync(f->db), NULL, NULL), BFH_OK);
  assert_int_equal(value_index_leaf_count(bfh_internal_index(f->db)), n);
  assert_int_equal(pidx_test_persisted(f->db), 0);
  (void)check(f->db, 0);
  close_db(f);
  /* A reading open's close writes nothing. */
  size_t l1, l2;
  uint8_t *a = pidx_test_slurp(p, &l1);
  open_held(f);
  (void)check(f->db, 0);
  close_db(f);
  uint8_t *b = pidx_test_slurp(p, &l2);
  assert_int_equal(l1, l2);
  assert_memory_equal(a, b, l1);
  free(a);
  free(b);
}

/* A writer closed with a memtable waiting to be flushed and compactions running: the file
   it writes covers every table live at the next open. Before the close settled the
   background work first, the next open made a table from the waiting memtable's log, and a
   compaction that installed while the file was written left its tables out (41 of 1,379
   after a 100M load): without the fix this fails in every run here (round 0: 6 of 7
   tables); with it the assertion holds whatever the timing. */
static void test_close_while_compacting(void **state) {
  db_fixture_t *f = *state;
  for (uint32_t round = 0; round < 4; round++) {
    put_and_close(f, 0, NKEYS, round * DOMAIN, 0); /* every key rewritten: compactions due */
    open_held(f);
    size_t n = pidx_test_live_tables(f->db);
    if (pidx_test_persisted(f->db) != n)
      fail_msg("round %u: the file answers for %llu of %zu live tables", round,
               (unsigned long long)pidx_test_persisted(f->db), n);
    assert_int_equal(value_index_leaf_count(bfh_internal_index(f->db)), 0);
    (void)check(f->db, round * DOMAIN);
    close_db(f);
  }
}

static void test_missing(void **state) {
  db_fixture_t *f = *state;
  load(f, 0, NKEYS, 0);
  char p[4400];
  file_path(f, p, sizeof p);
  assert_int_equal(unlink(p), 0);
  open_held(f);
  assert_int_equal(pidx_test_persisted(f->db), 0);
  (void)check(f->db, 0);
  close_db(f);
}

/* The file of an older state: tables compacted away since, new ones added. */
static void test_stale(void **state) {
  db_fixture_t *f = *state;
  load(f, 0, NKEYS, 0);
  char p[4400];
  file_path(f, p, sizeof p);
  size_t len;
  uint8_t *old = pidx_test_slurp(p, &len);
  /* Overwrites of half the keys with other values, and more keys: flushes and compactions. */
  load(f, 0, NKEYS / 2, 20000);
  load(f, NKEYS, 2 * NKEYS, 0);
  bfh_options o;
  options(&o);
  assert_int_equal(bfh_open(f->dir, &o, &f->db), BFH_OK);
  assert_int_equal(engine_lsm_wait_idle(bfh_internal_engine(f->db), NULL), BFH_OK);
  assert_int_equal(bfh_close(f->db), BFH_OK);
  f->db = NULL;
  pidx_test_spill(p, old, len); /* the old file back */
  free(old);
  open_held(f);
  size_t n = pidx_test_live_tables(f->db);
  uint64_t cov = pidx_test_persisted(f->db);
  if (cov >= n) fail_msg("%llu of %zu tables covered by a stale file", (unsigned long long)cov, n);
  (void)check(f->db, 0);
  (void)check(f->db, 20000);
  close_db(f);
}

/* Flips a byte in every chunk of the rows: every probe meets a damaged chunk. */
static void test_damaged_rows(void **state) {
  db_fixture_t *f = *state;
  load(f, 0, NKEYS, 0);
  char p[4400];
  file_path(f, p, sizeof p);
  size_t len;
  uint8_t *b = pidx_test_slurp(p, &len);
  size_t s = pidx_test_rows_start(b);
  for (size_t off = s + 1; off < len; off += 512) b[off] ^= 0x5a;
  pidx_test_spill(p, b, len);
  free(b);
  open_held(f);
  (void)check(f->db, 0);
  if (pidx_test_damaged(f->db) == 0) fail_msg("no damage counted");
  close_db(f);
}

static void test_truncated(void **state) {
  db_fixture_t *f = *state;
  load(f, 0, NKEYS, 0);
  char p[4400];
  file_path(f, p, sizeof p);
  size_t len;
  uint8_t *b = pidx_test_slurp(p, &len);
  pidx_test_spill(p, b, len - len / 3);
  free(b);
  open_held(f);
  assert_int_equal(pidx_test_persisted(f->db), 0);
  (void)check(f->db, 0);
  assert_int_equal(pidx_test_damaged(f->db), 1);
  close_db(f);
}

/* The database made again at its path with the same keys and other values of the same length:
   the same table numbers and sizes; the first database's file must bind to none of them. */
static void test_rebuilt(void **state) {
  db_fixture_t *f = *state;
  load(f, 0, NKEYS, 0);
  char p[4400];
  file_path(f, p, sizeof p);
  size_t len;
  uint8_t *old = pidx_test_slurp(p, &len);
  assert_int_equal(test_rmrf(f->dir), 0);
  load(f, 0, NKEYS, 50000);
  pidx_test_spill(p, old, len);
  free(old);
  open_held(f);
  assert_int_equal(pidx_test_persisted(f->db), 0);
  (void)check(f->db, 50000);
  (void)check(f->db, 0);
  close_db(f);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_present, setup, teardown),
      cmocka_unit_test_setup_teardown(test_close_while_compacting, setup, teardown),
      cmocka_unit_test_setup_teardown(test_missing, setup, teardown),
      cmocka_unit_test_setup_teardown(test_stale, setup, teardown),
      cmocka_unit_test_setup_teardown(test_damaged_rows, setup, teardown),
      cmocka_unit_test_setup_teardown(test_truncated, setup, teardown),
      cmocka_unit_test_setup_teardown(test_rebuilt, setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

/* lsm_snapshot_get_latest: the validation get of a search, which parses the data blocks the
 * snapshot's value scans matched in from the copies they kept (lsm/block_memo.h) instead of
 * reading them again. It must answer exactly as lsm_get does: the latest version, newer
 * tables and memtables first (overwrites, deletions, empty values, writes made after the
 * snapshot was taken), and it must not read a kept block from its file again.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "lsm/db.h"
#include "tests/lsm/db_test_util.h"

typedef struct fixture {
  char dir[TEST_PATH_MAX];
  lsm_options_t opt;
  lsm_db_t *db;
} fixture_t;

static int setup(void **state) {
  fixture_t *f = calloc(1, sizeof *f);
  if (!f || test_tmpdir_create(f->dir, sizeof f->dir, "db_snapget") != 0) {
    free(f);
    return -1;
  }
  lsm_options_init(&f->opt);
  err_t e;
  err_clear(&e);
  if (lsm_open(f->dir, &f->opt, &f->db, &e) != ST_OK) return -1;
  *state = f;
  return 0;
}

static int teardown(void **state) {
  fixture_t *f = *state;
  int rc = f->db && lsm_close(f->db) != ST_OK ? -1 : 0;
  if (test_rmrf(f->dir) != 0) rc = -1;
  free(f);
  return rc;
}

static void put(fixture_t *f, uint64_t id, const char *val) {
  char k[32];
  size_t kl = test_key(k, id);
  err_t e;
  err_clear(&e);
  if (lsm_put(f->db, k, kl, val, strlen(val), &e) != ST_OK) fail_msg("put: %s", e.msg);
}

static void del(fixture_t *f, uint64_t id) {
  char k[32];
  size_t kl = test_key(k, id);
  err_t e;
  err_clear(&e);
  if (lsm_delete(f->db, k, kl, &e) != ST_OK) fail_msg("delete: %s", e.msg);
}

static void flush(fixture_t *f) {
  err_t e;
  err_clear(&e);
  if (lsm_flush(f->db, &e) != ST_OK) fail_msg("flush: %s", e.msg);
}

static int count_visit(void *arg, const void *key, size_t klen, const void *val, size_t vlen,
                       uint64_t seq, int type) {
  (void)key, (void)klen, (void)val, (void)vlen, (void)seq, (void)type;
  (*(uint64_t *)arg)++;
  return 0;
}

/* Scans every table of s for val (which keeps the blocks it matched in); returns the matches. */
static uint64_t scan_all(lsm_snapshot_t *s, const char *val) {
  const lsm_table_info_t *t;
  size_t n = lsm_snapshot_tables(s, &t);
  uint64_t hits = 0;
  for (size_t i = 0; i < n; i++) {
    err_t e;
    err_clear(&e);
    if (lsm_snapshot_scan_value(s, t[i].number, val, strlen(val), count_visit, &hits, NULL, &e) !=
        ST_OK)
      fail_msg("scan: %s", e.msg);
  }
  return hits;
}

/* Key id's latest version through s, checked against lsm_get: want NULL means none. */
static void expect_latest(fixture_t *f, lsm_snapshot_t *s, uint64_t id, const char *want) {
  char k[32];
  size_t kl = test_key(k, id);
  void *got = NULL, *ref = NULL;
  size_t got_len = 0, ref_len = 0;
  err_t e;
  err_clear(&e);
  int rc = lsm_snapshot_get_latest(s, k, kl, &got, &got_len, &e);
  int rrc = lsm_get(f->db, k, kl, &ref, &ref_len, &e);
  if (!want) {
    if (rc != ST_NOT_FOUND || rrc != ST_NOT_FOUND)
      fail_msg("key %llu: %d / %d, want none", (unsigned long long)id, rc, rrc);
  } else {
    if (rc != ST_OK || rrc != ST_OK) fail_msg("key %llu: %d / %d", (unsigned long long)id, rc, rrc);
    if (got_len != strlen(want) || memcmp(got, want, got_len) != 0)
      fail_msg("key %llu: got '%.*s', want '%s'", (unsigned long long)id, (int)got_len,
               (const char *)got, want);
    assert_int_equal(ref_len, got_len);
    assert_memory_equal(ref, got, got_len);
  }
  free(got);
  free(ref);
}

/* Keys 0..1999 in one table, every tenth (id % 10 == 3) holding "v-three", the others
   "v-other"; a snapshot whose scan for "v-three" found the 200 (and kept their blocks). */
static lsm_snapshot_t *scanned_threes(fixture_t *f) {
  for (uint64_t id = 0; id < 2000; id++) put(f, id, id % 10 == 3 ? "v-three" : "v-other");
  flush(f);
  lsm_snapshot_t *s = lsm_snapshot_acquire(f->db);
  assert_non_null(s);
  assert_int_equal(scan_all(s, "v-three"), 200);
  return s;
}

/* The blocks a scan matched in answer the gets of those keys: every get is served by the
   memo (no second read). Without the memo (table_get_kept ignoring it) hits stays 0. */
static void test_snapshot_get_latest_reuses_scanned_blocks(void **state) {
  fixture_t *f = *state;
  lsm_snapshot_t *s = scanned_threes(f);
  size_t kept;
  uint64_t hits;
  lsm_snapshot_memo_stats(s, &kept, &hits);
  assert_true(kept > 1); /* the 200 matches span several 4 KiB blocks */
  assert_int_equal(hits, 0);
  for (uint64_t id = 3; id < 2000; id += 10) expect_latest(f, s, id, "v-three");
  lsm_snapshot_memo_stats(s, &kept, &hits);
  assert_int_equal(hits, 200);
  lsm_snapshot_release(s);
}

/* A scan whose matches are all the first entry of their key keeps only their values; a get
   of another key in one of those blocks (one the scan did not match) reads the block and
   answers as lsm_get does. */
static void test_snapshot_get_latest_other_keys_of_kept_blocks(void **state) {
  fixture_t *f = *state;
  lsm_snapshot_t *s = scanned_threes(f);
  for (uint64_t id = 0; id < 2000; id++)
    expect_latest(f, s, id, id % 10 == 3 ? "v-three" : "v-other");
  for (uint64_t id = 2000; id < 2010; id++) expect_latest(f, s, id, NULL);
  lsm_snapshot_release(s);
}

/* Keys whose scanned entry is not their latest version: overwritten or deleted in a newer
   table, in the memtable, with an empty value, and after the snapshot was taken (in the
   memtable and in a table flushed then, whose first block covers the same keys as a kept
   one: the memo must tell tables apart by number). The latest version wins every time. */
static void test_snapshot_get_latest_newer_versions_win(void **state) {
  fixture_t *f = *state;
  for (uint64_t id = 0; id < 120; id++) put(f, id, "old");
  flush(f); /* table A: every key holds "old" */
  for (uint64_t id = 0; id < 20; id++) put(f, id, "new-table");
  for (uint64_t id = 20; id < 40; id++) del(f, id);
  flush(f); /* table B, newer: overwrites and deletions */
  for (uint64_t id = 40; id < 60; id++) put(f, id, "new-mem");
  for (uint64_t id = 60; id < 70; id++) del(f, id);
  for (uint64_t id = 70; id < 80; id++) put(f, id, "");
  lsm_snapshot_t *s = lsm_snapshot_acquire(f->db);
  assert_non_null(s);
  assert_int_equal(scan_all(s, "old"), 120); /* table A holds them all; A's blocks are kept */
  for (uint64_t id = 0; id < 20; id++) expect_latest(f, s, id, "new-table");
  for (uint64_t id = 20; id < 40; id++) expect_latest(f, s, id, NULL);
  for (uint64_t id = 40; id < 60; id++) expect_latest(f, s, id, "new-mem");
  for (uint64_t id = 60; id < 70; id++) expect_latest(f, s, id, NULL);
  for (uint64_t id = 70; id < 80; id++) expect_latest(f, s, id, "");
  for (uint64_t id = 80; id < 120; id++) expect_latest(f, s, id, "old");
  /* Writes after the snapshot: the get gives the latest version, not the snapshot's. */
  for (uint64_t id = 80; id < 90; id++) put(f, id, "after");
  for (uint64_t id = 90; id < 95; id++) del(f, id);
  for (uint64_t id = 80; id < 95; id++) expect_latest(f, s, id, id < 90 ? "after" : NULL);
  /* ... and once they are in a table of their own (its block 0 holds keys 0..: so does A's) */
  for (uint64_t id = 0; id < 10; id++) put(f, id, "after-flush");
  flush(f);
  for (uint64_t id = 0; id < 10; id++) expect_latest(f, s, id, "after-flush");
  for (uint64_t id = 80; id < 95; id++) expect_latest(f, s, id, id < 90 ? "after" : NULL);
  for (uint64_t id = 95; id < 120; id++) expect_latest(f, s, id, "old");
  lsm_snapshot_release(s);
}

/* A key whose only version is in the table scanned, and a value searched that is empty: the
   empty value matches entries with empty values only, never deletions. */
static void test_snapshot_get_latest_empty_value(void **state) {
  fixture_t *f = *state;
  for (uint64_t id = 0; id < 50; id++) put(f, id, id % 2 ? "" : "x");
  for (uint64_t id = 50; id < 60; id++) del(f, id);
  flush(f);
  lsm_snapshot_t *s = lsm_snapshot_acquire(f->db);
  assert_non_null(s);
  uint64_t n = scan_all(s, "");
  assert_true(n >= 25); /* the 25 empty values (a deletion has an empty value too) */
  for (uint64_t id = 0; id < 60; id++) expect_latest(f, s, id, id >= 50 ? NULL : id % 2 ? "" : "x");
  lsm_snapshot_release(s);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_snapshot_get_latest_reuses_scanned_blocks, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_snapshot_get_latest_newer_versions_win, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_snapshot_get_latest_other_keys_of_kept_blocks, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_snapshot_get_latest_empty_value, setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

/* Tests of the MANIFEST reader (lsm_hooks/engines/leveldb/version_edit): edits encoded by hand, and
 * the live file set replayed from MANIFESTs that stock LevelDB 1.23 wrote, compared with what
 * LevelDB itself lists (leveldb.sstables). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <leveldb/c.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bfh.h"
#include "lsm_hooks/leveldb_format/ldb_sstables.h"
#include "lsm_hooks/leveldb_format/ldb_table.h"
#include "lsm_hooks/leveldb_format/ldb_version_edit.h"
#include "tests/leveldb_test_util.h"
#include "tests/test_util.h"
#include "util/coding.h"
#include "util/random.h"

/* ---- Encoding edits by hand -------------------------------------------------------------- */

typedef struct edit {
  uint8_t b[1024];
  size_t n;
} edit_t;

static void put_varint(edit_t *e, uint64_t v) {
  e->n = (size_t)(encode_varint64(e->b + e->n, v) - e->b);
}

static void put_slice(edit_t *e, const void *p, size_t n) {
  put_varint(e, n);
  memcpy(e->b + e->n, p, n);
  e->n += n;
}

/* An internal key: user key | fixed64 (seq << 8 | type 1). */
static void put_ikey(edit_t *e, const char *user) {
  uint8_t k[64];
  size_t n = strlen(user);
  memcpy(k, user, n);
  encode_fixed64(k + n, 7ull << 8 | 1);
  put_slice(e, k, n + 8);
}

static void put_new_file(edit_t *e, int level, uint64_t number, uint64_t size, const char *lo,
                         const char *hi) {
  put_varint(e, 7);
  put_varint(e, (uint64_t)level);
  put_varint(e, number);
  put_varint(e, size);
  put_ikey(e, lo);
  put_ikey(e, hi);
}

static const ldb_file_t *find_file(const ldb_version_t *v, uint64_t number) {
  for (size_t i = 0; i < v->nfiles; i++)
    if (v->files[i].number == number) return &v->files[i];
  return NULL;
}

static void test_version_apply_snapshot_then_delta(void **state) {
  (void)state;
  edit_t snap = {0};
  put_varint(&snap, 1);
  put_slice(&snap, "leveldb.BytewiseComparator", 26);
  put_varint(&snap, 2);
  put_varint(&snap, 5); /* log number */
  put_varint(&snap, 3);
  put_varint(&snap, 10); /* next file */
  put_varint(&snap, 4);
  put_varint(&snap, 100); /* last sequence */
  put_new_file(&snap, 0, 7, 1000, "a", "m");
  put_new_file(&snap, 1, 8, 2000, "b", "z");
  edit_t delta = {0};
  put_varint(&delta, 5); /* compact pointer: level, internal key */
  put_varint(&delta, 1);
  put_ikey(&delta, "c");
  put_varint(&delta, 6); /* deleted file (0, 7) */
  put_varint(&delta, 0);
  put_varint(&delta, 7);
  put_new_file(&delta, 2, 9, 3000, "aa", "ab");
  put_varint(&delta, 2);
  put_varint(&delta, 11);
  put_varint(&delta, 9);
  put_varint(&delta, 4); /* prev log number */

  ldb_version_t v = {0};
  err_t err;
  assert_int_equal(ldb_version_apply(&v, snap.b, snap.n, "snap", &err), BFH_OK);
  assert_true(v.has_log_number);
  assert_int_equal(v.log_number, 5);
  assert_int_equal(v.next_file, 10);
  assert_int_equal(v.last_sequence, 100);
  assert_int_equal(v.nfiles, 2);
  assert_int_equal(ldb_version_apply(&v, delta.b, delta.n, "delta", &err), BFH_OK);
  assert_int_equal(v.log_number, 11);
  assert_int_equal(v.prev_log_number, 4);
  assert_int_equal(v.nfiles, 2);
  assert_null(find_file(&v, 7));
  const ldb_file_t *f = find_file(&v, 9);
  assert_non_null(f);
  assert_int_equal(f->level, 2);
  assert_int_equal(f->size, 3000);
  assert_int_equal(f->smallest_len, 2);
  assert_memory_equal(f->smallest, "aa", 2);
  assert_memory_equal(f->largest, "ab", 2);
  f = find_file(&v, 8);
  assert_non_null(f);
  assert_int_equal(f->level, 1);
  assert_memory_equal(f->largest, "z", 1);
  ldb_version_t copy;
  assert_int_equal(ldb_version_copy(&copy, &v), BFH_OK);
  ldb_version_release(&v);
  assert_int_equal(copy.nfiles, 2);
  assert_non_null(find_file(&copy, 9));
  ldb_version_release(&copy);
}

static void put_deleted(edit_t *e, int level, uint64_t number) {
  put_varint(e, 6);
  put_varint(e, (uint64_t)level);
  put_varint(e, number);
}

static void put_last_sequence(edit_t *e, uint64_t seq) {
  put_varint(e, 4);
  put_varint(e, seq);
}

static uint64_t bound_of(const ldb_version_t *v, uint64_t number) {
  const ldb_file_t *f = find_file(v, number);
  assert_non_null(f);
  return f->max_seq;
}

/* Each file's sequence bound comes from the edit that added it: a snapshot's or a flush's
   last sequence; a compaction's (or a move's) inputs' largest bound, never its own last
   sequence; unknown when an edit gives neither, or deletes a file the version lacks. */
static void test_version_apply_bounds_each_file(void **state) {
  (void)state;
  ldb_version_t v = {0};
  err_t err;
  edit_t e[6] = {{{0}, 0}};
  put_last_sequence(&e[0], 100); /* the snapshot: 7 and 8 */
  put_new_file(&e[0], 0, 7, 1000, "a", "m");
  put_new_file(&e[0], 1, 8, 2000, "b", "z");
  put_last_sequence(&e[1], 150); /* a flush: 9 */
  put_new_file(&e[1], 0, 9, 1000, "c", "d");
  put_deleted(&e[2], 0, 9); /* a compaction of 9 and 8 into 10 and 11, at 170 */
  put_deleted(&e[2], 1, 8);
  put_last_sequence(&e[2], 170);
  put_new_file(&e[2], 1, 10, 1000, "b", "k");
  put_new_file(&e[2], 1, 11, 1000, "l", "z");
  put_deleted(&e[3], 0, 7); /* a trivial move of 7, no last sequence */
  put_new_file(&e[3], 1, 7, 1000, "a", "m");
  put_new_file(&e[4], 2, 12, 1000, "x", "y"); /* no last sequence, nothing deleted */
  put_deleted(&e[5], 3, 99);                  /* an input the version lacks */
  put_last_sequence(&e[5], 180);
  put_new_file(&e[5], 3, 13, 1000, "x", "y");
  for (int i = 0; i < 6; i++)
    assert_int_equal(ldb_version_apply(&v, e[i].b, e[i].n, "edit", &err), BFH_OK);
  assert_int_equal(bound_of(&v, 7), 100);
  assert_int_equal(bound_of(&v, 10), 150);
  assert_int_equal(bound_of(&v, 11), 150);
  assert_true(bound_of(&v, 12) == LDB_SEQ_UNKNOWN);
  assert_true(bound_of(&v, 13) == LDB_SEQ_UNKNOWN);
  ldb_version_release(&v);
}

static void test_version_apply_rejects_malformed(void **state) {
  (void)state;
  err_t err;
  ldb_version_t v = {0};
  edit_t e = {0};
  put_varint(&e, 8); /* tag 8 (LevelDB's unused "large value ref") */
  put_varint(&e, 1);
  assert_int_equal(ldb_version_apply(&v, e.b, e.n, "rec", &err), BFH_E_CORRUPT);
  assert_non_null(strstr(err.msg, "unknown edit tag 8"));

  edit_t cut = {0};
  put_new_file(&cut, 0, 7, 1000, "a", "m");
  assert_int_equal(ldb_version_apply(&v, cut.b, cut.n - 3, "rec", &err), BFH_E_CORRUPT);
  assert_non_null(strstr(err.msg, "tag 7"));

  edit_t shortkey = {0}; /* a largest key of 4 bytes: no room for its trailer */
  put_varint(&shortkey, 7);
  put_varint(&shortkey, 0);
  put_varint(&shortkey, 7);
  put_varint(&shortkey, 1000);
  put_ikey(&shortkey, "a");
  put_slice(&shortkey, "abcd", 4);
  assert_int_equal(ldb_version_apply(&v, shortkey.b, shortkey.n, "rec", &err), BFH_E_CORRUPT);

  edit_t level = {0};
  put_new_file(&level, 7, 9, 1, "a", "b"); /* levels are 0..6 */
  assert_int_equal(ldb_version_apply(&v, level.b, level.n, "rec", &err), BFH_E_CORRUPT);
  ldb_version_release(&v);
}

/* ---- Against stock LevelDB --------------------------------------------------------------- */

static void current_manifest(const char *dir, char *out, size_t cap) {
  char name[128];
  assert_int_equal(test_current_manifest(dir, name, sizeof name), 0);
  snprintf(out, cap, "%s/%s", dir, name);
}

/* The version's files are exactly LevelDB's list: numbers, sizes and levels. */
static void assert_same_files(leveldb_t *db, const ldb_version_t *v) {
  char *list = leveldb_property_value(db, "leveldb.sstables");
  assert_non_null(list);
  ldb_sstable_t *t;
  size_t n;
  err_t err;
  assert_int_equal(ldb_sstables_parse(list, &t, &n, &err), BFH_OK);
  leveldb_free(list);
  assert_int_equal(n, v->nfiles);
  for (size_t i = 0; i < n; i++) {
    const ldb_file_t *f = find_file(v, t[i].number);
    assert_non_null(f);
    assert_int_equal(f->size, t[i].size);
    assert_int_equal(f->level, t[i].level);
  }
  free(t);
}

static void write_keys(leveldb_t *db, rng_t *r, int n) {
  leveldb_writeoptions_t *wo = leveldb_writeoptions_create();
  char *err = NULL;
  for (int i = 0; i < n; i++) {
    char k[32], val[64];
    int kl = snprintf(k, sizeof k, "key%06llu", (unsigned long long)rng_below(r, 20000));
    int vl = snprintf(val, sizeof val, "value-%llu-padding-padding", (unsigned long long)i);
    if (rng_below(r, 10) == 0)
      leveldb_delete(db, wo, k, (size_t)kl, &err);
    else
      leveldb_put(db, wo, k, (size_t)kl, val, (size_t)vl, &err);
    assert_null(err);
  }
  leveldb_writeoptions_destroy(wo);
}

/* A MANIFEST replayed whole, then read on from where the first read stopped after LevelDB
   flushed and compacted more, lists LevelDB's files each time. */
static int max_entry_seq(void *arg, const ldb_entry_t *e) {
  uint64_t *max = arg;
  if (e->seq > *max) *max = e->seq;
  return 0;
}

/* Every file's bound (ldb_file_t.max_seq) is at least the largest sequence among its entries,
   read from the table itself; returns how many files have a bound. */
static size_t assert_bounds_hold(const char *dir, const ldb_version_t *v) {
  size_t bounded = 0;
  for (size_t i = 0; i < v->nfiles; i++) {
    char path[4400];
    snprintf(path, sizeof path, "%s/%06llu.ldb", dir, (unsigned long long)v->files[i].number);
    uint64_t max = 0;
    err_t err;
    assert_int_equal(ldb_table_scan(env_default(), path, max_entry_seq, &max, NULL, &err), BFH_OK);
    if (max > v->files[i].max_seq)
      fail_msg("table %s: an entry at sequence %llu, bound %llu", path, (unsigned long long)max,
               (unsigned long long)v->files[i].max_seq);
    bounded += v->files[i].max_seq != LDB_SEQ_UNKNOWN;
  }
  return bounded;
}

static void test_version_read_matches_leveldb(void **state) {
  (void)state;
  char root[4096], dir[4200], manifest[4400];
  assert_int_equal(test_tmpdir_create(root, sizeof root, "ldb_version"), 0);
  snprintf(dir, sizeof dir, "%s/db", root);
  leveldb_options_t *o = leveldb_options_create();
  leveldb_options_set_create_if_missing(o, 1);
  leveldb_options_set_write_buffer_size(o, 64 << 10);
  leveldb_options_set_max_file_size(o, 64 << 10);
  char *lerr = NULL;
  leveldb_t *db = leveldb_open(o, dir, &lerr);
  assert_null(lerr);
  rng_t r;
  rng_init(&r, 20261123);
  write_keys(db, &r, 30000);
  ldb_test_settle(db);

  current_manifest(dir, manifest, sizeof manifest);
  ldb_version_t v = {0};
  err_t err;
  uint64_t next = 0;
  assert_int_equal(ldb_version_read(env_default(), manifest, 0, &v, &next, &err), BFH_OK);
  assert_true(next > 0);
  assert_true(v.nfiles >= 2); /* tables of at least 1 MiB (LevelDB clips max_file_size) */
  assert_same_files(db, &v);

  write_keys(db, &r, 30000);
  ldb_test_settle(db);
  char again[4400];
  current_manifest(dir, again, sizeof again);
  assert_string_equal(again, manifest); /* one open: LevelDB appends to its MANIFEST */
  uint64_t next2 = 0;
  assert_int_equal(ldb_version_read(env_default(), manifest, next, &v, &next2, &err), BFH_OK);
  assert_true(next2 > next);
  assert_same_files(db, &v);
  /* Flushes and compactions since the open: every table's bound holds, and every table has
     one (LevelDB writes a last sequence in every edit). */
  assert_int_equal(assert_bounds_hold(dir, &v), v.nfiles);
  ldb_version_release(&v);

  leveldb_close(db);
  leveldb_options_destroy(o);
  assert_int_equal(test_rmrf(root), 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_version_apply_snapshot_then_delta),
      cmocka_unit_test(test_version_apply_bounds_each_file),
      cmocka_unit_test(test_version_apply_rejects_malformed),
      cmocka_unit_test(test_version_read_matches_leveldb),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

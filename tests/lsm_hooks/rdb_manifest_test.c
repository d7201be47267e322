/* Tests of the RocksDB MANIFEST reader (lsm_hooks/rocksdb_format/rdb_manifest): edits encoded by
 * hand, and the live state replayed from MANIFESTs that stock RocksDB 7.8 wrote (column
 * families added and dropped, flushes, compactions), compared with rocksdb_livefiles.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bfh.h"
#include "lsm_hooks/rocksdb_format/rdb_log.h"
#include "lsm_hooks/rocksdb_format/rdb_manifest.h"
#include "tests/rocksdb_test_util.h"
#include "tests/test_util.h"
#include "util/coding.h"

/* ---- Edits by hand ----------------------------------------------------------------------- */

typedef struct edit {
  uint8_t b[2048];
  size_t n;
} edit_t;

static void put_varint(edit_t *e, uint64_t v) {
  e->n = (size_t)(encode_varint64(e->b + e->n, v) - e->b);
}
static void put_bytes(edit_t *e, const void *p, size_t n) {
  put_varint(e, n);
  memcpy(e->b + e->n, p, n);
  e->n += n;
}
static void put_str(edit_t *e, const char *s) {
  put_bytes(e, s, strlen(s));
}
static void put_ikey(edit_t *e, const char *user, uint64_t seq) {
  uint8_t k[64];
  size_t n = strlen(user);
  memcpy(k, user, n);
  encode_fixed64(k + n, seq << 8 | 1);
  put_bytes(e, k, n + 8);
}
/* NewFile4 up to its custom fields (the caller adds them and the terminating 1). */
static void put_new_file4(edit_t *e, int level, uint64_t number, uint64_t size) {
  put_varint(e, RDB_TAG_NEW_FILE4);
  put_varint(e, (uint64_t)level);
  put_varint(e, number);
  put_varint(e, size);
  put_ikey(e, "a", 5);
  put_ikey(e, "z", 9);
  put_varint(e, 5);
  put_varint(e, 9);
}

static int apply(rdb_version_t *v, const edit_t *e, err_t *err) {
  return rdb_version_apply(v, e->b, e->n, "edit", err);
}

static const rdb_file_t *find_file(const rdb_version_t *v, uint64_t number) {
  for (size_t i = 0; i < v->nfiles; i++)
    if (v->files[i].number == number) return &v->files[i];
  return NULL;
}

static void test_rdb_manifest_edits_by_hand(void **state) {
  (void)state;
  rdb_version_t v = {0};
  err_t err;
  err_clear(&err);
  edit_t e = {.n = 0};
  put_varint(&e, RDB_TAG_COMPARATOR), put_str(&e, "leveldb.BytewiseComparator");
  put_varint(&e, RDB_TAG_LOG_NUMBER), put_varint(&e, 4);
  put_varint(&e, RDB_TAG_NEXT_FILE), put_varint(&e, 20);
  put_varint(&e, RDB_TAG_LAST_SEQUENCE), put_varint(&e, 77);
  put_varint(&e, RDB_TAG_DB_ID), put_str(&e, "db-identity");
  put_varint(&e, RDB_TAG_SAFE_IGNORE + 100), put_str(&e, "from the future"); /* skipped */
  put_new_file4(&e, 1, 12, 3000);
  put_varint(&e, RDB_NF_CHECKSUM), put_str(&e, "\x01\x02\x03\x04");
  put_varint(&e, RDB_NF_CHECKSUM_FUNC), put_str(&e, "FileChecksumCrc32c");
  put_varint(&e, RDB_NF_OLDEST_BLOB_FILE), put_bytes(&e, "\x07", 1);
  put_varint(&e, 40), put_str(&e, "safe to ignore"); /* unknown custom field, bit 6 clear */
  put_varint(&e, RDB_NF_TERMINATE);
  assert_int_equal(apply(&v, &e, &err), BFH_OK);
  assert_int_equal(v.ncfs, 1);
  assert_string_equal(v.cfs[0].name, "default");
  assert_string_equal(v.cfs[0].comparator, "leveldb.BytewiseComparator");
  assert_int_equal(v.cfs[0].log_number, 4);
  assert_int_equal(v.next_file, 20);
  assert_int_equal(v.last_sequence, 77);
  assert_string_equal(v.db_id, "db-identity");
  const rdb_file_t *f = find_file(&v, 12);
  assert_non_null(f);
  assert_int_equal(f->level, 1);
  assert_int_equal(f->size, 3000);
  assert_int_equal(f->smallest_len, 1);
  assert_memory_equal(f->smallest, "a", 1);
  assert_int_equal(f->largest_key_seq, 9);
  assert_int_equal(f->smallest_seqno, 5);
  assert_int_equal(f->oldest_blob_file, 7);
  assert_int_equal(f->checksum_len, 4);
  assert_string_equal(f->checksum_func, "FileChecksumCrc32c");

  /* A column family added, given a file, the file moved a level, then the family dropped. */
  e.n = 0;
  put_varint(&e, RDB_TAG_COLUMN_FAMILY), put_varint(&e, 3);
  put_varint(&e, RDB_TAG_CF_ADD), put_str(&e, "three");
  put_varint(&e, RDB_TAG_LOG_NUMBER), put_varint(&e, 6);
  assert_int_equal(apply(&v, &e, &err), BFH_OK);
  e.n = 0;
  put_new_file4(&e, 0, 13, 10);
  put_varint(&e, RDB_NF_TERMINATE);
  put_varint(&e, RDB_TAG_COLUMN_FAMILY), put_varint(&e, 3); /* the family comes after the file */
  assert_int_equal(apply(&v, &e, &err), BFH_OK);
  assert_int_equal(find_file(&v, 13)->cf, 3);
  assert_int_equal(rdb_version_min_log(&v), 4);
  assert_true(rdb_version_log_wanted(&v, 0, 4));
  assert_false(rdb_version_log_wanted(&v, 3, 5));
  assert_non_null(rdb_version_cf_by_name(&v, "three"));
  e.n = 0;
  put_varint(&e, RDB_TAG_DELETED_FILE), put_varint(&e, 0), put_varint(&e, 13);
  put_new_file4(&e, 2, 13, 10);
  put_varint(&e, RDB_NF_TERMINATE);
  put_varint(&e, RDB_TAG_COLUMN_FAMILY), put_varint(&e, 3);
  assert_int_equal(apply(&v, &e, &err), BFH_OK);
  assert_int_equal(find_file(&v, 13)->level, 2);
  assert_int_equal(v.nfiles, 2);
  e.n = 0;
  put_varint(&e, RDB_TAG_COLUMN_FAMILY), put_varint(&e, 3);
  put_varint(&e, RDB_TAG_CF_DROP);
  assert_int_equal(apply(&v, &e, &err), BFH_OK);
  assert_null(rdb_version_cf(&v, 3));
  assert_null(find_file(&v, 13));
  assert_false(rdb_version_log_wanted(&v, 3, 100));

  /* An atomic group is applied whole: its first edit alone changes nothing once read back. */
  rdb_version_t c;
  assert_int_equal(rdb_version_copy(&c, &v), BFH_OK);
  e.n = 0;
  put_varint(&e, RDB_TAG_IN_ATOMIC_GROUP), put_varint(&e, 1);
  put_varint(&e, RDB_TAG_DELETED_FILE), put_varint(&e, 1), put_varint(&e, 12);
  assert_int_equal(apply(&c, &e, &err), BFH_OK);
  assert_non_null(c.before_group);
  e.n = 0;
  put_varint(&e, RDB_TAG_IN_ATOMIC_GROUP), put_varint(&e, 0);
  put_varint(&e, RDB_TAG_LAST_SEQUENCE), put_varint(&e, 90);
  assert_int_equal(apply(&c, &e, &err), BFH_OK);
  assert_null(c.before_group);
  assert_null(find_file(&c, 12));
  assert_int_equal(c.last_sequence, 90);
  rdb_version_release(&c);

  /* Refused: an unknown tag not marked safe to ignore, a custom field marked not safe, an
     internal key without its trailer, a field cut short, an edit of a missing family. */
  static const struct {
    const char *what;
    int kind;
  } bad[] = {{"unknown tag", 0},    {"new-file4 custom field not supported", 1},
             {"new-file entry", 2}, {"last sequence number", 3},
             {"does not exist", 4}, {"safely ignoreable tag length error", 5}};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    e.n = 0;
    switch (bad[i].kind) {
      case 0:
        put_varint(&e, 150), put_varint(&e, 1);
        break;
      case 1:
        put_new_file4(&e, 0, 30, 1);
        put_varint(&e, RDB_NF_NON_SAFE_IGNORE + 9), put_str(&e, "x");
        put_varint(&e, RDB_NF_TERMINATE);
        break;
      case 2:
        put_varint(&e, RDB_TAG_NEW_FILE), put_varint(&e, 0), put_varint(&e, 30), put_varint(&e, 1);
        put_str(&e, "short"), put_str(&e, "short");
        break;
      case 3:
        put_varint(&e, RDB_TAG_LAST_SEQUENCE), e.b[e.n++] = 0x80;
        break;
      case 4:
        put_varint(&e, RDB_TAG_COLUMN_FAMILY), put_varint(&e, 9);
        break;
      case 5:
        put_varint(&e, RDB_TAG_SAFE_IGNORE + 77), put_varint(&e, 50);
        break;
    }
    rdb_version_t w;
    assert_int_equal(rdb_version_copy(&w, &v), BFH_OK);
    assert_int_equal(apply(&w, &e, &err), BFH_E_CORRUPT);
    if (!strstr(err.msg, bad[i].what) || !strstr(err.msg, "edit"))
      fail_msg("case %zu: '%s' lacks '%s'", i, err.msg, bad[i].what);
    rdb_version_release(&w);
  }
  assert_true(rdb_version_size_in_bytes(&v) > sizeof v);
  rdb_version_release(&v);
}

/* ---- MANIFESTs written by stock RocksDB -------------------------------------------------- */

/* The version replayed matches rocksdb_livefiles: every file, its level, size, family and
   keys; and nothing more. */
static void expect_livefiles(rocksdb_t *db, const rdb_version_t *v) {
  const rocksdb_livefiles_t *lf = rocksdb_livefiles(db);
  int n = rocksdb_livefiles_count(lf);
  assert_int_equal((size_t)n, v->nfiles);
  for (int i = 0; i < n; i++) {
    const char *name = rocksdb_livefiles_name(lf, i); /* "/000012.sst" */
    uint64_t number = strtoull(name + 1, NULL, 10);
    const rdb_file_t *f = find_file(v, number);
    if (!f) fail_msg("%s not in the replayed version", name);
    assert_int_equal(f->level, rocksdb_livefiles_level(lf, i));
    assert_int_equal(f->size, rocksdb_livefiles_size(lf, i));
    const rdb_cf_t *c = rdb_version_cf(v, f->cf);
    assert_non_null(c);
    assert_string_equal(c->name, rocksdb_livefiles_column_family_name(lf, i));
    size_t kn;
    const char *k = rocksdb_livefiles_smallestkey(lf, i, &kn);
    assert_int_equal(kn, f->smallest_len);
    assert_memory_equal(k, f->smallest, kn);
    k = rocksdb_livefiles_largestkey(lf, i, &kn);
    assert_int_equal(kn, f->largest_len);
    assert_memory_equal(k, f->largest, kn);
    assert_true(f->smallest_seqno <= f->largest_seqno);
  }
  rocksdb_livefiles_destroy(lf);
}

static void fill(rdbt_t *t, int cf, int from, int to) {
  rocksdb_writebatch_t *b = rocksdb_writebatch_create();
  for (int i = from; i < to; i++) {
    char k[32], val[64];
    int kn = snprintf(k, sizeof k, "key%06d", i), vn = snprintf(val, sizeof val, "value-%d", i);
    rocksdb_writebatch_put_cf(b, rdbt_cf(t, cf), k, (size_t)kn, val, (size_t)vn);
    if (i % 5 == 0) rocksdb_writebatch_delete_cf(b, rdbt_cf(t, cf), k, (size_t)kn);
  }
  assert_int_equal(rdbt_write(t, b), 0);
  rocksdb_writebatch_destroy(b);
}

static void load(const char *dir, rdb_version_t *v) {
  err_t err;
  err_clear(&err);
  if (rdb_version_load(env_default(), dir, 0, v, NULL, NULL, &err) != BFH_OK)
    fail_msg("%s", err.msg);
}

static const char *const cf_names[] = {"one", "two", "three"};

static void test_rdb_manifest_stock_livefiles(void **state) {
  (void)state;
  char dir[TEST_PATH_MAX];
  assert_int_equal(test_tmpdir_create(dir, sizeof dir, "rdb_manifest"), 0);
  rdbt_t t;
  assert_int_equal(rdbt_open(&t, dir, 0, cf_names, 3), 0);
  for (int round = 0; round < 4; round++)
    for (int cf = 0; cf < 4; cf++) {
      fill(&t, cf, round * 1000 + cf, round * 1000 + 700);
      assert_int_equal(rdbt_flush(&t, cf), 0);
    }
  rdb_version_t v;
  load(dir, &v);
  assert_int_equal(v.ncfs, 4);
  expect_livefiles(t.db, &v);
  assert_int_equal(v.nfiles, 16);
  rdb_version_release(&v);

  /* Compactions move files down and delete them. */
  rocksdb_compact_range_cf(t.db, rdbt_cf(&t, 1), NULL, 0, NULL, 0);
  rocksdb_compact_range_cf(t.db, rdbt_cf(&t, 0), "key000000", 9, "key002000", 9);
  load(dir, &v);
  expect_livefiles(t.db, &v);
  int deeper = 0;
  for (size_t i = 0; i < v.nfiles; i++) deeper += v.files[i].cf == 1 && v.files[i].level > 0;
  assert_true(deeper > 0);
  assert_true(v.last_sequence <= rocksdb_get_latest_sequence_number(t.db));
  rdb_version_release(&v);

  /* A dropped column family and its files are gone from the version. */
  char *e = NULL;
  rocksdb_drop_column_family(t.db, rdbt_cf(&t, 2), &e);
  assert_null(e);
  load(dir, &v);
  assert_null(rdb_version_cf_by_name(&v, "two"));
  assert_int_equal(v.ncfs, 3);
  expect_livefiles(t.db, &v);
  /* The live logs are those present from the oldest log a family still needs. */
  uint64_t *logs;
  size_t n;
  err_t err;
  assert_int_equal(rdb_version_live_logs(env_default(), dir, &v, &logs, &n, &err), BFH_OK);
  assert_int_equal(n, 1);
  assert_true(logs[0] >= rdb_version_min_log(&v));
  free(logs);
  rdb_version_release(&v);

  /* Reopened (a new MANIFEST, its first edit a snapshot): the same files. */
  rdbt_close(&t);
  rocksdb_options_t *o = rocksdb_options_create();
  rocksdb_options_set_disable_auto_compactions(o, 1); /* nothing changes under the comparison */
  const char *all[] = {"default", "one", "three"};
  const rocksdb_options_t *opts[] = {o, o, o};
  rocksdb_column_family_handle_t *h[3];
  rocksdb_t *db = rocksdb_open_column_families(o, dir, 3, all, opts, h, &e);
  assert_non_null(db);
  load(dir, &v);
  expect_livefiles(db, &v);
  rdb_version_release(&v);
  for (int i = 0; i < 3; i++) rocksdb_column_family_handle_destroy(h[i]);
  rocksdb_close(db);
  rocksdb_options_destroy(o);

  /* A damaged MANIFEST is corruption with its path and the record's offset. */
  char name[256], path[TEST_PATH_MAX + 300];
  assert_int_equal(test_current_manifest(dir, name, sizeof name), 0);
  snprintf(path, sizeof path, "%s/%s", dir, name);
  assert_int_equal(test_file_xor_byte(path, 30, 0x04), 0);
  err_clear(&err);
  assert_int_equal(rdb_version_load(env_default(), dir, 0, &v, NULL, NULL, &err), BFH_E_CORRUPT);
  if (!strstr(err.msg, path) || !strstr(err.msg, "record at 0")) fail_msg("%s", err.msg);
  assert_int_equal(test_file_xor_byte(path, 30, 0x04), 0);
  load(dir, &v);
  rdb_version_release(&v);
  /* CURRENT naming no MANIFEST */
  char cur[TEST_PATH_MAX + 16];
  snprintf(cur, sizeof cur, "%s/CURRENT", dir);
  FILE *f = fopen(cur, "w");
  fputs("garbage", f);
  fclose(f);
  assert_int_equal(rdb_version_load(env_default(), dir, 0, &v, NULL, NULL, &err), BFH_E_CORRUPT);
  assert_non_null(strstr(err.msg, "CURRENT"));
  assert_int_equal(test_rmrf(dir), 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_rdb_manifest_edits_by_hand),
      cmocka_unit_test(test_rdb_manifest_stock_livefiles),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

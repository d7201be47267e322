/* Tests of the RocksDB WAL reader (lsm_hooks/rocksdb_format/rdb_log): write batches encoded by
 * hand, recyclable records framed by hand, and the logs stock RocksDB 7.8 writes (three column
 * families, every kind of write, recycled logs), read back and compared with what was written.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bfh.h"
#include "lsm/log.h"
#include "lsm_hooks/rocksdb_format/rdb_log.h"
#include "lsm_hooks/rocksdb_format/rdb_manifest.h"
#include "tests/rocksdb_test_util.h"
#include "tests/test_util.h"
#include "util/coding.h"
#include "util/crc32c.h"

/* ---- Entries collected by a visitor ------------------------------------------------------ */

typedef struct got {
  uint32_t cf;
  int type, tag;
  uint64_t seq, log;
  char key[64], val[64 * 1024];
  size_t key_len, val_len;
} got_t;

typedef struct sink {
  got_t *e;
  size_t n, cap;
  const rdb_version_t *v; /* when set: only the writes not yet in tables */
} sink_t;

static int collect(void *arg, const rdb_log_entry_t *e) {
  sink_t *s = arg;
  if (s->v && rdb_log_tag_is_key(e->tag) == 1 &&
      !rdb_version_log_wanted(s->v, e->cf, e->log_number))
    return 0;
  if (s->n == s->cap) {
    s->cap = s->cap ? 2 * s->cap : 64;
    s->e = realloc(s->e, s->cap * sizeof *s->e);
    assert_non_null(s->e);
  }
  got_t *g = &s->e[s->n++];
  assert_true(e->key_len <= sizeof g->key && e->val_len <= sizeof g->val);
  g->cf = e->cf;
  g->type = e->type;
  g->tag = e->tag;
  g->seq = e->seq;
  g->log = e->log_number;
  memcpy(g->key, e->key, e->key_len);
  memcpy(g->val, e->val, e->val_len);
  g->key_len = e->key_len;
  g->val_len = e->val_len;
  return 0;
}

static void expect_entry(const got_t *g, uint32_t cf, int type, const char *key, const char *val,
                         size_t val_len) {
  assert_int_equal(g->cf, cf);
  assert_int_equal(g->type, type);
  assert_int_equal(g->key_len, strlen(key));
  assert_memory_equal(g->key, key, g->key_len);
  assert_int_equal(g->val_len, val_len);
  if (val_len) assert_memory_equal(g->val, val, val_len);
}

/* ---- Batches by hand --------------------------------------------------------------------- */

typedef struct buf {
  uint8_t b[8192];
  size_t n;
} buf_t;

static void put_u8(buf_t *b, int v) {
  b->b[b->n++] = (uint8_t)v;
}
static void put_varint(buf_t *b, uint64_t v) {
  b->n = (size_t)(encode_varint64(b->b + b->n, v) - b->b);
}
static void put_str(buf_t *b, const char *s) {
  put_varint(b, strlen(s));
  memcpy(b->b + b->n, s, strlen(s));
  b->n += strlen(s);
}
static void batch_header(buf_t *b, uint64_t seq, uint32_t count) {
  b->n = 0;
  encode_fixed64(b->b, seq);
  encode_fixed32(b->b + 8, count);
  b->n = 12;
}

static int decode(const buf_t *b, sink_t *s, err_t *err) {
  int stopped;
  return rdb_log_decode_batch(b->b, b->n, 9, 0, "batch", collect, s, &stopped, NULL, err);
}

static void test_rdb_log_batch_every_tag(void **state) {
  (void)state;
  buf_t b;
  batch_header(&b, 100, 9);
  put_u8(&b, RDB_WB_VALUE), put_str(&b, "k1"), put_str(&b, "v1");
  put_u8(&b, RDB_WB_CF_VALUE), put_varint(&b, 3), put_str(&b, "k2"), put_str(&b, "");
  put_u8(&b, RDB_WB_LOG_DATA), put_str(&b, "blob");
  put_u8(&b, RDB_WB_CF_DELETION), put_varint(&b, 2), put_str(&b, "k3");
  put_u8(&b, RDB_WB_SINGLE_DELETION), put_str(&b, "k4");
  put_u8(&b, RDB_WB_CF_MERGE), put_varint(&b, 300), put_str(&b, "k5"), put_str(&b, "op");
  put_u8(&b, RDB_WB_CF_RANGE_DELETION), put_varint(&b, 1), put_str(&b, "a"), put_str(&b, "z");
  put_u8(&b, RDB_WB_NOOP);
  put_u8(&b, RDB_WB_BEGIN_PREPARE);
  put_u8(&b, RDB_WB_BLOB_INDEX), put_str(&b, "k6"), put_str(&b, "idx");
  put_u8(&b, RDB_WB_CF_WIDE_COLUMN_ENTITY), put_varint(&b, 1), put_str(&b, "k7"),
      put_str(&b, "ent");
  put_u8(&b, RDB_WB_END_PREPARE), put_str(&b, "xid");
  put_u8(&b, RDB_WB_CF_SINGLE_DELETION), put_varint(&b, 1), put_str(&b, "k8");
  put_u8(&b, RDB_WB_COMMIT_WITH_TS), put_str(&b, "ts"), put_str(&b, "xid");
  put_u8(&b, RDB_WB_ROLLBACK), put_str(&b, "xid2");
  sink_t s = {0};
  err_t err;
  err_clear(&err);
  assert_int_equal(decode(&b, &s, &err), BFH_OK);
  assert_int_equal(s.n, 15);
  expect_entry(&s.e[0], 0, RDB_WB_VALUE, "k1", "v1", 2);
  assert_int_equal(s.e[0].seq, 100);
  assert_int_equal(s.e[0].log, 9);
  expect_entry(&s.e[1], 3, RDB_WB_VALUE, "k2", "", 0);
  assert_int_equal(s.e[1].tag, RDB_WB_CF_VALUE);
  assert_int_equal(s.e[1].seq, 101);
  expect_entry(&s.e[2], 0, RDB_WB_LOG_DATA, "", "blob", 4);
  expect_entry(&s.e[3], 2, RDB_WB_DELETION, "k3", "", 0);
  assert_int_equal(s.e[3].seq, 102); /* log data took no sequence */
  expect_entry(&s.e[4], 0, RDB_WB_SINGLE_DELETION, "k4", "", 0);
  expect_entry(&s.e[5], 300, RDB_WB_MERGE, "k5", "op", 2);
  expect_entry(&s.e[6], 1, RDB_WB_RANGE_DELETION, "a", "z", 1);
  assert_int_equal(s.e[6].seq, 105);
  expect_entry(&s.e[7], 0, RDB_WB_NOOP, "", "", 0);
  expect_entry(&s.e[8], 0, RDB_WB_BEGIN_PREPARE, "", "", 0);
  expect_entry(&s.e[9], 0, RDB_WB_BLOB_INDEX, "k6", "idx", 3);
  assert_int_equal(s.e[9].seq, 106);
  expect_entry(&s.e[10], 1, RDB_WB_WIDE_COLUMN_ENTITY, "k7", "ent", 3);
  expect_entry(&s.e[11], 0, RDB_WB_END_PREPARE, "", "xid", 3);
  expect_entry(&s.e[12], 1, RDB_WB_SINGLE_DELETION, "k8", "", 0);
  assert_int_equal(s.e[12].seq, 108);
  expect_entry(&s.e[13], 0, RDB_WB_COMMIT_WITH_TS, "ts", "xid", 3);
  expect_entry(&s.e[14], 0, RDB_WB_ROLLBACK, "", "xid2", 4);
  free(s.e);
}

static void expect_corrupt(const buf_t *b, const char *what) {
  sink_t s = {0};
  err_t err;
  err_clear(&err);
  assert_int_equal(decode(b, &s, &err), BFH_E_CORRUPT);
  if (!strstr(err.msg, what)) fail_msg("message '%s' lacks '%s'", err.msg, what);
  assert_non_null(strstr(err.msg, "batch"));
  free(s.e);
}

static void test_rdb_log_batch_damage_refused(void **state) {
  (void)state;
  buf_t b;
  batch_header(&b, 1, 2); /* count says 2, one record */
  put_u8(&b, RDB_WB_VALUE), put_str(&b, "k"), put_str(&b, "v");
  expect_corrupt(&b, "header says 2");
  batch_header(&b, 1, 1);
  put_u8(&b, 0x14), put_str(&b, "k"); /* deletion with timestamp: tables only */
  expect_corrupt(&b, "unknown tag 0x14");
  batch_header(&b, 1, 1);
  put_u8(&b, RDB_WB_VALUE), put_str(&b, "k"), put_varint(&b, 5); /* value cut short */
  expect_corrupt(&b, "value record cut short");
  batch_header(&b, 1, 1);
  put_u8(&b, RDB_WB_CF_VALUE), put_u8(&b, 0x80); /* column family varint cut short */
  expect_corrupt(&b, "cut short");
  b.n = 11;
  expect_corrupt(&b, "shorter than its header");
}

/* ---- Physical records by hand ------------------------------------------------------------ */

/* Appends a FULL record (recyclable with log number num when num != 0) to b. */
static void frame(buf_t *b, const buf_t *payload, uint32_t num) {
  uint8_t *h = b->b + b->n;
  size_t hl = num ? LOG_RECYCLABLE_HEADER_BYTES : LOG_HEADER_BYTES;
  h[4] = (uint8_t)payload->n;
  h[5] = (uint8_t)(payload->n >> 8);
  h[6] = num ? 5 : 1;
  if (num) encode_fixed32(h + 7, num);
  memcpy(h + hl, payload->b, payload->n);
  encode_fixed32(h, crc32c_mask(crc32c_value(h + 6, hl - 6 + payload->n)));
  b->n += hl + payload->n;
}

static void write_file(const char *path, const buf_t *b) {
  FILE *f = fopen(path, "wb");
  assert_non_null(f);
  assert_int_equal(fwrite(b->b, 1, b->n, f), b->n);
  assert_int_equal(fclose(f), 0);
}

static void one_put(buf_t *p, uint64_t seq, const char *key) {
  batch_header(p, seq, 1);
  put_u8(p, RDB_WB_VALUE), put_str(p, key), put_str(p, "value");
}

static void test_rdb_log_recycled_tail(void **state) {
  (void)state;
  char dir[TEST_PATH_MAX], path[TEST_PATH_MAX + 32];
  assert_int_equal(test_tmpdir_create(dir, sizeof dir, "rdb_log"), 0);
  snprintf(path, sizeof path, "%s/000007.log", dir);
  buf_t f = {.n = 0}, p;
  one_put(&p, 10, "new1");
  frame(&f, &p, 7);
  one_put(&p, 11, "new2");
  frame(&f, &p, 7);
  size_t live = f.n;
  /* what remains of log 3 that this file was before: the middle of a record, then a record */
  memset(f.b + f.n, 0x5a, 13);
  f.n += 13;
  one_put(&p, 2, "old");
  frame(&f, &p, 3);
  write_file(path, &f);
  sink_t s = {0};
  rdb_log_stats_t st = {0};
  uint64_t next = 0;
  err_t err;
  err_clear(&err);
  assert_int_equal(rdb_log_read(env_default(), path, 7, 0, 0, collect, &s, &next, &st, &err),
                   BFH_OK);
  assert_int_equal(s.n, 2);
  expect_entry(&s.e[1], 0, RDB_WB_VALUE, "new2", "value", 5);
  assert_int_equal(next, live);
  assert_int_equal(st.old_bytes, f.n - live);
  /* read on from where it ended: nothing more, no error */
  s.n = 0;
  assert_int_equal(rdb_log_read(env_default(), path, 7, next, 0, collect, &s, &next, NULL, &err),
                   BFH_OK);
  assert_int_equal(s.n, 0);

  /* An old record right after the live ones ends the log too. */
  f.n = live;
  frame(&f, &p, 3);
  write_file(path, &f);
  s.n = 0;
  assert_int_equal(rdb_log_read(env_default(), path, 7, 0, 0, collect, &s, &next, NULL, &err),
                   BFH_OK);
  assert_int_equal(s.n, 2);
  assert_int_equal(next, live);

  /* A damaged record of this log with none of this log after it: the new log stopped in an
     old record there (its header happened to carry this number). The end, no error. */
  f.n = live;
  one_put(&p, 12, "torn");
  frame(&f, &p, 7);
  f.b[f.n - 3] ^= 1;
  one_put(&p, 2, "old");
  frame(&f, &p, 3);
  write_file(path, &f);
  s.n = 0;
  assert_int_equal(rdb_log_read(env_default(), path, 7, 0, 0, collect, &s, &next, NULL, &err),
                   BFH_OK);
  assert_int_equal(s.n, 2);
  assert_int_equal(next, live);

  /* Damage followed by a record of this log is corruption, named with its offset. */
  f.n = 0;
  one_put(&p, 10, "new1");
  frame(&f, &p, 7);
  size_t second = f.n;
  one_put(&p, 11, "new2");
  frame(&f, &p, 7);
  f.b[second + 15] ^= 1;
  one_put(&p, 12, "new3");
  frame(&f, &p, 7);
  write_file(path, &f);
  s.n = 0;
  assert_int_equal(rdb_log_read(env_default(), path, 7, 0, 0, collect, &s, &next, NULL, &err),
                   BFH_E_CORRUPT);
  char want[64];
  snprintf(want, sizeof want, "record at %zu: checksum mismatch", second);
  if (!strstr(err.msg, want) || !strstr(err.msg, path))
    fail_msg("message '%s' lacks '%s' or the path", err.msg, want);
  assert_int_equal(s.n, 1);

  /* A compressed WAL is refused by name. */
  f.n = 0;
  uint8_t *h = f.b;
  h[4] = 1, h[5] = 0, h[6] = 9, h[7] = 7; /* kSetCompressionType, zstd */
  encode_fixed32(h, crc32c_mask(crc32c_value(h + 6, 2)));
  f.n = 8;
  write_file(path, &f);
  assert_int_equal(rdb_log_read(env_default(), path, 7, 0, 0, collect, &s, &next, NULL, &err),
                   BFH_E_UNSUPPORTED);
  assert_non_null(strstr(err.msg, "wal_compression"));
  free(s.e);
  assert_int_equal(test_rmrf(dir), 0);
}

/* ---- Logs written by stock RocksDB ------------------------------------------------------- */

/* The unflushed writes of the database in dir: every live log read, the writes already in a
   column family's tables left out. */
static void read_live(const char *dir, sink_t *s, rdb_version_t *v, uint64_t *nlogs) {
  err_t err;
  err_clear(&err);
  if (rdb_version_load(env_default(), dir, 0, v, NULL, NULL, &err) != BFH_OK)
    fail_msg("%s", err.msg);
  uint64_t *logs;
  size_t n;
  assert_int_equal(rdb_version_live_logs(env_default(), dir, v, &logs, &n, &err), BFH_OK);
  s->v = v;
  for (size_t i = 0; i < n; i++) {
    char path[TEST_PATH_MAX + 32];
    snprintf(path, sizeof path, "%s/%06llu.log", dir, (unsigned long long)logs[i]);
    if (rdb_log_read(env_default(), path, logs[i], 0, RDB_LOG_CHECK_TAIL, collect, s, NULL, NULL,
                     &err) != BFH_OK)
      fail_msg("%s", err.msg);
  }
  *nlogs = n;
  free(logs);
}

static const char *const cf_names[] = {"one", "two"};

static void test_rdb_log_stock_writes(void **state) {
  (void)state;
  char dir[TEST_PATH_MAX];
  assert_int_equal(test_tmpdir_create(dir, sizeof dir, "rdb_log"), 0);
  rdbt_t t;
  assert_int_equal(rdbt_open(&t, dir, 0, cf_names, 2), 0);
  static char big[40000];
  for (size_t i = 0; i < sizeof big; i++) big[i] = (char)('a' + i % 26);
  rocksdb_writebatch_t *b = rocksdb_writebatch_create();
  rocksdb_writebatch_put_cf(b, rdbt_cf(&t, 0), "a", 1, "va", 2);
  rocksdb_writebatch_put_cf(b, rdbt_cf(&t, 1), "b", 1, "", 0);
  rocksdb_writebatch_merge_cf(b, rdbt_cf(&t, 2), "m", 1, "x", 1);
  rocksdb_writebatch_delete_cf(b, rdbt_cf(&t, 1), "b", 1);
  rocksdb_writebatch_singledelete_cf(b, rdbt_cf(&t, 0), "a", 1);
  rocksdb_writebatch_delete_range_cf(b, rdbt_cf(&t, 2), "k0", 2, "k9", 2);
  rocksdb_writebatch_put_log_data(b, "note", 4);
  rocksdb_writebatch_put_cf(b, rdbt_cf(&t, 2), "e", 1, "", 0);
  assert_int_equal(rdbt_write(&t, b), 0);
  rocksdb_writebatch_clear(b);
  rocksdb_writebatch_put_cf(b, rdbt_cf(&t, 1), "big", 3, big, sizeof big); /* 2 blocks */
  assert_int_equal(rdbt_write(&t, b), 0);
  for (int i = 0; i < 300; i++) { /* small batches across block boundaries */
    char k[16];
    int n = snprintf(k, sizeof k, "k%04d", i);
    rocksdb_writebatch_clear(b);
    rocksdb_writebatch_put_cf(b, rdbt_cf(&t, i % 3), k, (size_t)n, big, (size_t)(i * 7 % 300));
    assert_int_equal(rdbt_write(&t, b), 0);
  }
  rocksdb_writebatch_destroy(b);
  uint64_t last = rocksdb_get_latest_sequence_number(t.db);

  sink_t s = {0};
  rdb_version_t v;
  uint64_t nlogs;
  read_live(dir, &s, &v, &nlogs); /* the database is open and holds its WAL */
  assert_int_equal(nlogs, 1);
  assert_int_equal(s.n, 8 + 1 + 300);
  expect_entry(&s.e[0], 0, RDB_WB_VALUE, "a", "va", 2);
  expect_entry(&s.e[1], 1, RDB_WB_VALUE, "b", "", 0);
  expect_entry(&s.e[2], 2, RDB_WB_MERGE, "m", "x", 1);
  expect_entry(&s.e[3], 1, RDB_WB_DELETION, "b", "", 0);
  expect_entry(&s.e[4], 0, RDB_WB_SINGLE_DELETION, "a", "", 0);
  expect_entry(&s.e[5], 2, RDB_WB_RANGE_DELETION, "k0", "k9", 2);
  expect_entry(&s.e[6], 0, RDB_WB_LOG_DATA, "", "note", 4);
  expect_entry(&s.e[7], 2, RDB_WB_VALUE, "e", "", 0);
  expect_entry(&s.e[8], 1, RDB_WB_VALUE, "big", big, sizeof big);
  uint64_t seq = s.e[0].seq;
  for (size_t i = 0; i < s.n; i++) {
    if (s.e[i].type == RDB_WB_LOG_DATA) continue;
    assert_int_equal(s.e[i].seq, seq);
    seq++;
  }
  assert_int_equal(seq - 1, last);
  for (int i = 0; i < 300; i++) {
    char k[16];
    snprintf(k, sizeof k, "k%04d", i);
    expect_entry(&s.e[9 + i], (uint32_t)(i % 3), RDB_WB_VALUE, k, big, (size_t)(i * 7 % 300));
  }

  /* Column family "one" flushed: its writes in the log are in its tables, the others' not. */
  assert_int_equal(rdbt_flush(&t, 1), 0);
  b = rocksdb_writebatch_create();
  rocksdb_writebatch_put_cf(b, rdbt_cf(&t, 1), "after", 5, "flush", 5);
  assert_int_equal(rdbt_write(&t, b), 0);
  rocksdb_writebatch_destroy(b);
  rdb_version_release(&v);
  s.n = 0;
  read_live(dir, &s, &v, &nlogs);
  assert_int_equal(nlogs, 2);
  size_t want = 0;
  for (size_t i = 0; i < 309; i++) want += i < 9 ? (i != 1 && i != 3 && i != 8) : (i - 9) % 3 != 1;
  assert_int_equal(s.n, want + 1);
  for (size_t i = 0; i + 1 < s.n; i++) assert_int_not_equal(s.e[i].cf, 1);
  expect_entry(&s.e[s.n - 1], 1, RDB_WB_VALUE, "after", "flush", 5);
  rdb_version_release(&v);

  /* A torn tail (the last record cut short) is the end, with no error; a flipped byte in the
     first record is corruption with the file and offset. */
  char wal[TEST_PATH_MAX + 32], copy[TEST_PATH_MAX + 32], cdir[TEST_PATH_MAX + 8];
  uint64_t *logs;
  size_t n;
  err_t err;
  err_clear(&err);
  assert_int_equal(rdb_version_load(env_default(), dir, 0, &v, NULL, NULL, &err), BFH_OK);
  assert_int_equal(rdb_version_live_logs(env_default(), dir, &v, &logs, &n, &err), BFH_OK);
  snprintf(wal, sizeof wal, "%s/%06llu.log", dir, (unsigned long long)logs[0]);
  snprintf(cdir, sizeof cdir, "%s/copy", dir);
  assert_int_equal(test_mkdirs(cdir), 0);
  snprintf(copy, sizeof copy, "%s/%06llu.log", cdir, (unsigned long long)logs[0]);
  struct stat sb;
  assert_int_equal(stat(wal, &sb), 0);
  assert_int_equal(test_copy_file(wal, copy, (uint64_t)sb.st_size - 3), 0);
  s.n = 0;
  s.v = NULL;
  uint64_t next = 0;
  assert_int_equal(rdb_log_read(env_default(), copy, logs[0], 0, RDB_LOG_CHECK_TAIL, collect, &s,
                                &next, NULL, &err),
                   BFH_OK);
  assert_int_equal(s.n, 309 - 1); /* the last batch was cut */
  assert_true(next < (uint64_t)sb.st_size - 3);
  assert_int_equal(test_copy_file(wal, copy, UINT64_MAX), 0);
  assert_int_equal(test_file_xor_byte(copy, 20, 0x10), 0);
  s.n = 0;
  assert_int_equal(rdb_log_read(env_default(), copy, logs[0], 0, 0, collect, &s, &next, NULL, &err),
                   BFH_E_CORRUPT);
  if (!strstr(err.msg, "record at 0: checksum mismatch") || !strstr(err.msg, copy))
    fail_msg("%s", err.msg);
  assert_int_equal(s.n, 0);
  free(logs);
  rdb_version_release(&v);
  free(s.e);
  rdbt_close(&t);
  assert_int_equal(test_rmrf(dir), 0);
}

static void test_rdb_log_stock_recycled(void **state) {
  (void)state;
  char dir[TEST_PATH_MAX];
  assert_int_equal(test_tmpdir_create(dir, sizeof dir, "rdb_log"), 0);
  rdbt_t t;
  assert_int_equal(rdbt_open(&t, dir, 2, cf_names, 0), 0);
  static char val[1000];
  memset(val, 'v', sizeof val);
  rocksdb_writebatch_t *b = rocksdb_writebatch_create();
  /* Each round fills a log and flushes: the logs become free for recycling and are reused. */
  for (int round = 0; round < 4; round++) {
    int writes = round < 3 ? 200 : 5;
    for (int i = 0; i < writes; i++) {
      char k[32];
      int n = snprintf(k, sizeof k, "r%d-%04d", round, i);
      rocksdb_writebatch_clear(b);
      rocksdb_writebatch_put(b, k, (size_t)n, val, sizeof val);
      assert_int_equal(rdbt_write(&t, b), 0);
    }
    if (round < 3) assert_int_equal(rdbt_flush(&t, 0), 0);
  }
  rocksdb_writebatch_destroy(b);
  rdb_version_t v;
  sink_t s = {0};
  uint64_t nlogs;
  read_live(dir, &s, &v, &nlogs);
  assert_int_equal(nlogs, 1);
  assert_int_equal(s.n, 5);
  for (int i = 0; i < 5; i++) {
    char k[32];
    snprintf(k, sizeof k, "r3-%04d", i);
    expect_entry(&s.e[i], 0, RDB_WB_VALUE, k, val, sizeof val);
  }
  /* The live log is a recycled file: recyclable records, then an older log's bytes. */
  uint64_t *logs;
  size_t n;
  err_t err;
  assert_int_equal(rdb_version_live_logs(env_default(), dir, &v, &logs, &n, &err), BFH_OK);
  char wal[TEST_PATH_MAX + 32];
  snprintf(wal, sizeof wal, "%s/%06llu.log", dir, (unsigned long long)logs[0]);
  FILE *f = fopen(wal, "rb");
  uint8_t h[7];
  assert_int_equal(fread(h, 1, 7, f), 7);
  fclose(f);
  assert_true(h[6] >= 5 && h[6] <= 8);
  rdb_log_stats_t st = {0};
  s.n = 0;
  s.v = NULL;
  assert_int_equal(rdb_log_read(env_default(), wal, logs[0], 0, 0, collect, &s, NULL, &st, &err),
                   BFH_OK);
  assert_int_equal(s.n, 5);
  assert_true(st.old_bytes > 100 * sizeof val); /* the previous life's 200 writes, mostly */
  free(logs);
  free(s.e);
  rdb_version_release(&v);
  rdbt_close(&t);
  assert_int_equal(test_rmrf(dir), 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_rdb_log_batch_every_tag),
      cmocka_unit_test(test_rdb_log_batch_damage_refused),
      cmocka_unit_test(test_rdb_log_recycled_tail),
      cmocka_unit_test(test_rdb_log_stock_writes),
      cmocka_unit_test(test_rdb_log_stock_recycled),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

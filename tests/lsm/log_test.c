/* Tests of the write-ahead log (lsm/log.h) and write batches (lsm/write_batch.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lsm/log.h"
#include "lsm/memtable.h"
#include "lsm/write_batch.h"
#include "tests/test_util.h"
#include "util/random.h"
#include "tests/env_fault.h"

static char dir[4096]; /* the current test's temporary directory */

/* Each test that writes files gets a fresh `dir`; the teardown removes it with whatever the
   test left in it, even when the test failed. */
static int dir_setup(void **state) {
  (void)state;
  return test_tmpdir_create(dir, sizeof dir, "log_test");
}

static int dir_teardown(void **state) {
  (void)state;
  return test_rmrf(dir);
}

/* Record i: length lens[i], bytes derived from (i, position). */
static void fill(uint8_t *p, size_t n, size_t i) {
  for (size_t j = 0; j < n; j++) p[j] = (uint8_t)(i * 131 + j * 7 + (j >> 8));
}

static void write_log(const char *path, const size_t *lens, size_t n) {
  log_writer_t *w;
  err_t err;
  assert_int_equal(log_writer_open(env_default(), path, &w, &err), ST_OK);
  uint8_t *buf = malloc(200000);
  for (size_t i = 0; i < n; i++) {
    fill(buf, lens[i], i);
    assert_int_equal(log_writer_add(w, buf, lens[i], i % 1000 == 999, &err), ST_OK);
  }
  assert_int_equal(log_writer_close(w, &err), ST_OK);
  free(buf);
}

/* Reads path and checks that it holds records 0..n-1 exactly; returns the reader's last rc. */
static int read_log(const char *path, const size_t *lens, size_t n, uint64_t *dropped, err_t *err) {
  log_reader_t *r;
  assert_int_equal(log_reader_open(env_default(), path, &r, err), ST_OK);
  uint8_t *buf = malloc(200000);
  size_t i = 0;
  int rc;
  const void *data;
  size_t len;
  while ((rc = log_reader_next(r, &data, &len, err)) == ST_OK) {
    assert_true(i < n);
    assert_int_equal(len, lens[i]);
    fill(buf, len, i);
    assert_memory_equal(data, buf, len);
    i++;
  }
  if (rc == ST_NOT_FOUND) {
    assert_int_equal(i, n);
    assert_int_equal(log_reader_next(r, &data, &len, err), ST_NOT_FOUND);
  }
  *dropped = log_reader_dropped_bytes(r);
  log_reader_close(r);
  free(buf);
  return rc;
}

static void test_log_roundtrip_many_sizes(void **state) {
  (void)state;
  char path[8192];
  snprintf(path, sizeof path, "%s/000001.log", dir);
  enum { N = 3000 };
  size_t *lens = malloc(N * sizeof *lens);
  rng_t rng;
  rng_init(&rng, 42);
  size_t fixed[] = {0,
                    1,
                    100,
                    LOG_BLOCK_BYTES - 2 * LOG_HEADER_BYTES,
                    LOG_BLOCK_BYTES - LOG_HEADER_BYTES,
                    LOG_BLOCK_BYTES,
                    3 * LOG_BLOCK_BYTES + 5,
                    0};
  size_t nf = sizeof fixed / sizeof fixed[0];
  for (size_t i = 0; i < N; i++) {
    if (i < nf)
      lens[i] = fixed[i];
    else if (i % 100 == 0)
      lens[i] = (size_t)rng_below(&rng, 100000); /* spans blocks */
    else
      lens[i] = (size_t)rng_below(&rng, 300);
  }
  write_log(path, lens, N);
  uint64_t dropped = 99;
  err_t err;
  assert_int_equal(read_log(path, lens, N, &dropped, &err), ST_NOT_FOUND);
  assert_int_equal(dropped, 0);
  /* an empty log */
  write_log(path, lens, 0);
  assert_int_equal(read_log(path, lens, 0, &dropped, &err), ST_NOT_FOUND);
  free(lens);
}

/* Every truncation point inside the last record (which crosses a block boundary) reads
   back the earlier records and stops cleanly, dropping exactly the partial record. */
static void test_log_truncated_tail_stops_cleanly(void **state) {
  (void)state;
  char path[8192];
  snprintf(path, sizeof path, "%s/000002.log", dir);
  enum { N = 6 };
  /* 5 records leave the writer 3 bytes short of the block end (a zero trailer), then a
     record of 40,000 bytes spans into block 2. */
  size_t lens[N] = {1000,
                    2000,
                    10000,
                    10000,
                    LOG_BLOCK_BYTES - 3 - 4 * LOG_HEADER_BYTES - 23000 - LOG_HEADER_BYTES,
                    40000};
  write_log(path, lens, N);
  uint64_t size;
  err_t err;
  assert_int_equal(env_path_size(env_default(), path, &size, &err), ST_OK);
  /* The last record starts after the 3-byte trailer at the block boundary. */
  uint64_t start = LOG_BLOCK_BYTES;
  assert_int_equal(size, start + 40000 + 2 * LOG_HEADER_BYTES);
  uint64_t dropped;
  assert_int_equal(read_log(path, lens, N, &dropped, &err), ST_NOT_FOUND);
  assert_int_equal(dropped, 0);
  for (uint64_t cut = size - 1; cut > start - 3; cut--) {
    assert_int_equal(truncate(path, (off_t)cut), 0);
    int rc = read_log(path, lens, N - 1, &dropped, &err);
    if (rc != ST_NOT_FOUND) fail_msg("cut %llu: %s", (unsigned long long)cut, err.msg);
    assert_int_equal(dropped, cut > start ? cut - start : 0);
  }
  /* A torn tail that is garbage rather than short (checksum mismatch in the last record)
     is dropped too. */
  write_log(path, lens, N);
  assert_int_equal(test_file_xor_byte(path, size - 10, 0xff), 0);
  assert_int_equal(read_log(path, lens, N - 1, &dropped, &err), ST_NOT_FOUND);
  assert_true(dropped > 0);
}

static unsigned long long parse_offset(const char *msg) {
  const char *p = strstr(msg, "record at ");
  assert_non_null(p);
  return strtoull(p + 10, NULL, 10);
}

/* A flipped byte with at least a block of valid data after it is corruption, reported
   with the file and the offset of the damaged fragment. */
static void test_log_flipped_byte_is_corrupt(void **state) {
  (void)state;
  char path[8192];
  snprintf(path, sizeof path, "%s/000003.log", dir);
  enum { N = 400 };
  size_t lens[N];
  rng_t rng;
  rng_init(&rng, 7);
  for (size_t i = 0; i < N; i++) lens[i] = (size_t)(i % 40 == 0 ? 20000 : rng_below(&rng, 500));
  write_log(path, lens, N);
  void *orig;
  size_t size;
  err_t err;
  assert_int_equal(env_read_file(env_default(), path, &orig, &size, &err), ST_OK);
  assert_true(size > 3 * LOG_BLOCK_BYTES);
  size_t limit = size - LOG_BLOCK_BYTES - LOG_HEADER_BYTES;
  int corrupt = 0, tested = 0;
  for (size_t pos = 0; pos < limit; pos += 97) {
    /* Bytes of a block's zero trailer are not checked (never read as data). */
    size_t in_block = pos % LOG_BLOCK_BYTES;
    int trailer = 0;
    if (LOG_BLOCK_BYTES - in_block < LOG_HEADER_BYTES) {
      trailer = 1;
      for (size_t j = pos - (in_block - (LOG_BLOCK_BYTES - LOG_HEADER_BYTES + 1)); j <= pos; j++)
        trailer &= ((uint8_t *)orig)[j] == 0;
    }
    uint8_t *copy = malloc(size);
    memcpy(copy, orig, size);
    copy[pos] ^= 0x20;
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(copy, 1, size, f), size);
    fclose(f);
    free(copy);
    uint64_t dropped;
    int rc = read_log(path, lens, N, &dropped, &err);
    tested++;
    if (trailer && rc == ST_NOT_FOUND) continue;
    if (rc != ST_E_CORRUPT) fail_msg("flip at %zu: rc %d", pos, rc);
    assert_non_null(strstr(err.msg, path));
    unsigned long long off = parse_offset(err.msg);
    assert_true(off <= pos);
    assert_true(pos - off < LOG_BLOCK_BYTES);
    corrupt++;
  }
  assert_true(corrupt > 0.95 * tested);
  free(orig);
}

static void test_log_writer_dead_after_fault(void **state) {
  (void)state;
  char path[8192];
  snprintf(path, sizeof path, "%s/000004.log", dir);
  env_t *io = env_create_faulty();
  log_writer_t *w;
  err_t err;
  assert_int_equal(log_writer_open(io, path, &w, &err), ST_OK);
  size_t lens[3] = {10, 20, 30};
  uint8_t buf[64];
  for (int i = 0; i < 2; i++) {
    fill(buf, lens[i], (size_t)i);
    assert_int_equal(log_writer_add(w, buf, lens[i], 1, &err), ST_OK);
  }
  env_fail(io, ENV_OP_WRITE, 2, 0); /* the payload write of the next record */
  fill(buf, lens[2], 2);
  assert_int_equal(log_writer_add(w, buf, lens[2], 1, &err), ST_E_IO);
  assert_int_equal(log_writer_add(w, buf, lens[2], 1, &err), ST_E_IO);
  assert_non_null(strstr(err.msg, path));
  assert_int_equal(log_writer_sync(w, &err), ST_E_IO);
  assert_int_equal(log_writer_close(w, &err), ST_OK);
  /* The header without payload is a torn tail: the synced records read back. */
  uint64_t dropped;
  assert_int_equal(read_log(path, lens, 2, &dropped, &err), ST_NOT_FOUND);
  assert_int_equal(dropped, LOG_HEADER_BYTES);
  /* Power loss keeps the synced records only. */
  assert_int_equal(env_drop_unsynced(io, &err), ST_OK);
  assert_int_equal(read_log(path, lens, 2, &dropped, &err), ST_NOT_FOUND);
  assert_int_equal(dropped, 0);
  env_destroy(io);
}

/* ---- Write batches ------------------------------------------------------------------- */

typedef struct seen {
  int n;
  uint64_t seq[8];
  int type[8];
  char key[8][16];
  char val[8][16];
} seen_t;

static int collect(void *arg, uint64_t seq, int type, const void *key, size_t klen, const void *val,
                   size_t vlen) {
  seen_t *s = arg;
  s->seq[s->n] = seq;
  s->type[s->n] = type;
  memcpy(s->key[s->n], key, klen);
  s->key[s->n][klen] = 0;
  if (val) memcpy(s->val[s->n], val, vlen);
  s->val[s->n][vlen] = 0;
  s->n++;
  return 0;
}

static void test_write_batch_roundtrip(void **state) {
  (void)state;
  write_batch_t b, c;
  write_batch_init(&b);
  write_batch_init(&c);
  assert_int_equal(write_batch_count(&b), 0);
  assert_int_equal(write_batch_put(&b, "k1", 2, "v1", 2), ST_OK);
  assert_int_equal(write_batch_delete(&b, "k2", 2), ST_OK);
  assert_int_equal(write_batch_put(&c, "k3", 2, "", 0), ST_OK);
  assert_int_equal(write_batch_append(&b, &c), ST_OK);
  write_batch_set_seq(&b, 100);
  assert_int_equal(write_batch_count(&b), 3);
  assert_int_equal(write_batch_seq(&b), 100);
  size_t n;
  const uint8_t *d = write_batch_data(&b, &n);
  assert_int_equal(n, 12 + (1 + 1 + 2 + 1 + 2) + (1 + 1 + 2) + (1 + 1 + 2 + 1));
  seen_t s = {0};
  err_t err;
  assert_int_equal(write_batch_iterate(d, n, collect, &s, &err), ST_OK);
  assert_int_equal(s.n, 3);
  assert_int_equal(s.seq[0], 100);
  assert_int_equal(s.seq[2], 102);
  assert_int_equal(s.type[1], 0);
  assert_string_equal(s.key[1], "k2");
  assert_string_equal(s.val[0], "v1");
  assert_string_equal(s.val[2], "");
  /* malformed: truncated, wrong count */
  assert_int_equal(write_batch_iterate(d, n - 1, collect, &s, &err), ST_E_CORRUPT);
  assert_int_equal(write_batch_iterate(d, 5, collect, &s, &err), ST_E_CORRUPT);
  uint8_t bad[64];
  memcpy(bad, d, n);
  bad[8] = 4;
  assert_int_equal(write_batch_iterate(bad, n, collect, &s, &err), ST_E_CORRUPT);
  assert_non_null(strstr(err.msg, "write batch"));
  /* one record more than the count says, ending exactly at the end: not silently dropped */
  bad[8] = 2;
  memset(&s, 0, sizeof s);
  assert_int_equal(write_batch_iterate(bad, n, collect, &s, &err), ST_E_CORRUPT);
  assert_non_null(strstr(err.msg, "write batch"));
  assert_int_equal(s.n, 2);
  /* into a memtable */
  memtable_t *m = memtable_create();
  assert_int_equal(write_batch_insert(d, n, m, &err), ST_OK);
  lsm_lookup_t r;
  assert_int_equal(memtable_get(m, "k1", 2, LSM_MAX_SEQ, &r), LSM_LOOKUP_VALUE);
  assert_int_equal(r.seq, 100);
  assert_int_equal(memtable_get(m, "k2", 2, LSM_MAX_SEQ, &r), LSM_LOOKUP_DELETED);
  assert_int_equal(memtable_get(m, "k3", 2, LSM_MAX_SEQ, &r), LSM_LOOKUP_VALUE);
  assert_int_equal(r.val_len, 0);
  memtable_unref(m);
  /* copy in and clear */
  assert_int_equal(write_batch_set_data(&c, d, n), ST_OK);
  assert_int_equal(write_batch_count(&c), 3);
  write_batch_clear(&c);
  assert_int_equal(write_batch_count(&c), 0);
  write_batch_release(&b);
  write_batch_release(&c);
}

/* ---- Reading past damage (repair and check) ---------------------------------------------- */

enum { SALVAGE_N = 2000 };

/* The log of the salvage tests: small records, every 150th one 40,000 bytes (fragments over
   two or three blocks). offsets[i] = where record i starts, from a clean read. */
static void salvage_log(const char *path, size_t *lens, uint64_t *offsets) {
  rng_t rng;
  rng_init(&rng, 11);
  for (size_t i = 0; i < SALVAGE_N; i++)
    lens[i] = i % 150 == 75 ? 40000 : 20 + (size_t)rng_below(&rng, 380);
  write_log(path, lens, SALVAGE_N);
  log_reader_t *r;
  err_t err;
  assert_int_equal(log_reader_open(env_default(), path, &r, &err), ST_OK);
  const void *data;
  size_t len, i = 0;
  while (log_reader_next(r, &data, &len, &err) == ST_OK) offsets[i++] = log_reader_record_offset(r);
  assert_int_equal(i, SALVAGE_N);
  log_reader_close(r);
}

/* Reads path as repair does (past every damaged record); got[i] = record i was returned,
   intact. Returns the damage reports; *skipped = the bytes skip_damage passed over. */
static int salvage_read(const char *path, const size_t *lens, const uint64_t *offsets, uint8_t *got,
                        uint64_t *skipped) {
  log_reader_t *r;
  err_t err;
  assert_int_equal(log_reader_open(env_default(), path, &r, &err), ST_OK);
  uint8_t *buf = malloc(200000);
  memset(got, 0, SALVAGE_N);
  int damages = 0;
  size_t j = 0;
  *skipped = 0;
  for (;;) {
    const void *data;
    size_t len;
    int rc = log_reader_next(r, &data, &len, &err);
    if (rc == ST_NOT_FOUND) break;
    if (rc == ST_E_CORRUPT) {
      damages++;
      *skipped += log_reader_skip_damage(r);
      assert_true(damages < 100);
      continue;
    }
    assert_int_equal(rc, ST_OK);
    uint64_t at = log_reader_record_offset(r);
    while (j < SALVAGE_N && offsets[j] < at) j++;
    if (j == SALVAGE_N || offsets[j] != at)
      fail_msg("a record at %llu, where none starts", (unsigned long long)at);
    assert_int_equal(len, lens[j]);
    fill(buf, len, j);
    assert_memory_equal(data, buf, len);
    got[j] = 1;
  }
  log_reader_close(r);
  free(buf);
  return damages;
}

static size_t count_got(const uint8_t *got) {
  size_t n = 0;
  for (size_t i = 0; i < SALVAGE_N; i++) n += got[i];
  return n;
}

/* One damaged record loses that record, not the rest of the log: a payload byte flipped
   costs its own record (the next one, where its length says, checks out); a damaged length
   costs the rest of its 32 KiB block (LevelDB's resync); a damaged first fragment costs its
   record, whose other fragments are skipped without a report of their own. Each is one
   damage. */
static void test_log_skip_damage_resyncs_at_next_record(void **state) {
  (void)state;
  char path[8192];
  snprintf(path, sizeof path, "%s/000003.log", dir);
  static size_t lens[SALVAGE_N];
  static uint64_t offsets[SALVAGE_N];
  static uint8_t got[SALVAGE_N];
  salvage_log(path, lens, offsets);
  void *orig;
  size_t size;
  err_t err;
  assert_int_equal(env_read_file(env_default(), path, &orig, &size, &err), ST_OK);
  uint64_t skipped;

  /* A payload byte of record 10 (in the first block). */
  assert_int_equal(test_file_xor_byte(path, offsets[10] + LOG_HEADER_BYTES + lens[10] / 2, 0x40),
                   0);
  assert_int_equal(salvage_read(path, lens, offsets, got, &skipped), 1);
  print_message("payload byte of record 10 flipped: %zu of %d records read, %llu bytes skipped\n",
                count_got(got), SALVAGE_N, (unsigned long long)skipped);
  assert_int_equal(count_got(got), SALVAGE_N - 1);
  assert_false(got[10]);
  assert_int_equal(skipped, LOG_HEADER_BYTES + lens[10]);

  /* The length of record 1000 (a small one): the rest of its block goes, nothing else. */
  assert_int_equal(env_write_file(env_default(), path, orig, size, &err), ST_OK);
  size_t m = 1000;
  assert_true(lens[m] < 400);
  assert_int_equal(test_file_xor_byte(path, offsets[m] + 4, 0x03), 0);
  assert_int_equal(salvage_read(path, lens, offsets, got, &skipped), 1);
  uint64_t next_block = (offsets[m] / LOG_BLOCK_BYTES + 1) * LOG_BLOCK_BYTES;
  size_t want = 0;
  for (size_t i = 0; i < SALVAGE_N; i++) {
    int kept = offsets[i] < offsets[m] || offsets[i] >= next_block;
    want += (size_t)kept;
    if (got[i] != kept)
      fail_msg("record %zu (at %llu): read %d", i, (unsigned long long)offsets[i], got[i]);
  }
  print_message("length of record %zu damaged: %zu of %d records read\n", m, count_got(got),
                SALVAGE_N);
  assert_int_equal(count_got(got), want);

  /* A payload byte of the first fragment of a 40,000-byte record. */
  assert_int_equal(env_write_file(env_default(), path, orig, size, &err), ST_OK);
  size_t big = 75 + 150 * 5;
  assert_int_equal(lens[big], 40000);
  assert_int_equal(test_file_xor_byte(path, offsets[big] + LOG_HEADER_BYTES + 3, 0x40), 0);
  assert_int_equal(salvage_read(path, lens, offsets, got, &skipped), 1);
  assert_int_equal(count_got(got), SALVAGE_N - 1);
  assert_false(got[big]);
  assert_true(skipped > 40000);
  free(orig);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_log_roundtrip_many_sizes, dir_setup, dir_teardown),
      cmocka_unit_test_setup_teardown(test_log_truncated_tail_stops_cleanly, dir_setup,
                                      dir_teardown),
      cmocka_unit_test_setup_teardown(test_log_flipped_byte_is_corrupt, dir_setup, dir_teardown),
      cmocka_unit_test_setup_teardown(test_log_writer_dead_after_fault, dir_setup, dir_teardown),
      cmocka_unit_test_setup_teardown(test_log_skip_damage_resyncs_at_next_record, dir_setup,
                                      dir_teardown),
      cmocka_unit_test(test_write_batch_roundtrip),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

/* Tests of util/env.h: the real I/O calls and the fault injection tests rely on. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/env_fault.h"
#include "util/env.h"
#include "tests/test_util.h"

static char dir[4096]; /* the current test's temporary directory */

/* Each test that writes files gets a fresh `dir`; the teardown removes it with whatever the
   test left in it, even when the test failed. */
static int dir_setup(void **state) {
  (void)state;
  return test_tmpdir_create(dir, sizeof dir, "env_test");
}

static int dir_teardown(void **state) {
  (void)state;
  return test_rmrf(dir);
}

static void path_of(char *buf, const char *name) {
  snprintf(buf, 8192, "%s/%s", dir, name);
}

static void test_io_write_read_roundtrip(void **state) {
  (void)state;
  env_t *io = env_default();
  char p[8192];
  path_of(p, "a");
  env_file_t *f;
  err_t err;
  assert_int_equal(env_open_write(io, p, &f, &err), ST_OK);
  uint8_t buf[200000];
  for (size_t i = 0; i < sizeof buf; i++) buf[i] = (uint8_t)(i * 7);
  /* small appends (buffered), then one larger than the buffer */
  for (int i = 0; i < 100; i++) assert_int_equal(env_file_append(f, buf + i * 10, 10, &err), ST_OK);
  assert_int_equal(env_file_append(f, buf + 1000, sizeof buf - 1000, &err), ST_OK);
  assert_int_equal(env_file_size(f), sizeof buf);
  assert_int_equal(env_file_sync(f, &err), ST_OK);
  assert_int_equal(env_file_close(f, &err), ST_OK);

  void *data;
  size_t n;
  assert_int_equal(env_read_file(io, p, &data, &n, &err), ST_OK);
  assert_int_equal(n, sizeof buf);
  assert_memory_equal(data, buf, n);
  free(data);

  env_rfile_t *rf;
  assert_int_equal(env_open_read(io, p, &rf, &err), ST_OK);
  uint8_t tmp[100];
  size_t got;
  assert_int_equal(env_rfile_pread(rf, sizeof buf - 50, tmp, 100, &got, &err), ST_OK);
  assert_int_equal(got, 50);
  assert_memory_equal(tmp, buf + sizeof buf - 50, 50);
  env_rfile_close(rf);

  /* append mode continues at the end */
  assert_int_equal(env_open_append(io, p, &f, &err), ST_OK);
  assert_int_equal(env_file_size(f), sizeof buf);
  assert_int_equal(env_file_append(f, "xyz", 3, &err), ST_OK);
  assert_int_equal(env_file_close(f, &err), ST_OK);
  uint64_t sz;
  assert_int_equal(env_path_size(io, p, &sz, &err), ST_OK);
  assert_int_equal(sz, sizeof buf + 3);

  /* names */
  char q[8192];
  path_of(q, "b");
  assert_int_equal(env_rename(io, p, q, &err), ST_OK);
  assert_false(env_exists(io, p));
  assert_true(env_exists(io, q));
  assert_int_equal(env_unlink(io, p, &err), ST_NOT_FOUND);
  assert_int_equal(env_path_size(io, p, &sz, &err), ST_NOT_FOUND);
  char d[8192];
  path_of(d, "sub");
  assert_int_equal(env_mkdir(io, d, &err), ST_OK);
  assert_int_equal(env_mkdir(io, d, &err), ST_OK);
  assert_int_equal(env_sync_dir(io, dir, &err), ST_OK);
  char **names;
  assert_int_equal(env_list_dir(io, dir, &names, &n, &err), ST_OK);
  assert_int_equal(n, 2);
  int seen_b = 0, seen_sub = 0;
  for (size_t i = 0; i < n; i++) {
    seen_b += strcmp(names[i], "b") == 0;
    seen_sub += strcmp(names[i], "sub") == 0;
  }
  env_names_free(names, n);
  assert_int_equal(seen_b + seen_sub, 2);
  rmdir(d);

  /* errors name the path */
  char missing[8192];
  path_of(missing, "missing");
  assert_int_equal(env_open_read(io, missing, &rf, &err), ST_E_IO);
  assert_non_null(strstr(err.msg, missing));
}

static void test_io_lock_busy(void **state) {
  (void)state;
  char p[8192];
  path_of(p, "LOCK");
  env_lock_t *a, *b;
  err_t err;
  assert_int_equal(env_lock(env_default(), p, &a, &err), ST_OK);
  assert_int_equal(env_lock(env_default(), p, &b, &err), ST_E_BUSY);
  assert_non_null(strstr(err.msg, p));
  env_unlock(a);
  assert_int_equal(env_lock(env_default(), p, &b, &err), ST_OK);
  env_unlock(b);
  env_unlock(NULL);
}

static void test_io_fail_nth_write(void **state) {
  (void)state;
  env_t *io = env_create_faulty();
  assert_non_null(io);
  char p[8192];
  path_of(p, "f");
  env_file_t *f;
  err_t err;
  assert_int_equal(env_open_write(io, p, &f, &err), ST_OK);
  env_fail(io, ENV_OP_WRITE, 3, 0);
  assert_int_equal(env_file_append(f, "a", 1, &err), ST_OK);
  assert_int_equal(env_file_append(f, "b", 1, &err), ST_OK);
  assert_int_equal(env_file_append(f, "c", 1, &err), ST_E_IO);
  assert_non_null(strstr(err.msg, "injected fault"));
  assert_non_null(strstr(err.msg, p));
  assert_int_equal(env_file_append(f, "d", 1, &err), ST_OK); /* not sticky */
  assert_int_equal(env_op_count(io, ENV_OP_WRITE), 4);
  /* sticky: the 2nd from now and every later one */
  env_fail(io, ENV_OP_WRITE, 2, 1);
  assert_int_equal(env_file_append(f, "e", 1, &err), ST_OK);
  for (int i = 0; i < 5; i++) assert_int_equal(env_file_append(f, "x", 1, &err), ST_E_IO);
  env_fail_none(io);
  assert_int_equal(env_file_append(f, "f", 1, &err), ST_OK);
  assert_int_equal(env_file_close(f, &err), ST_OK);
  void *data;
  size_t n;
  assert_int_equal(env_read_file(io, p, &data, &n, &err), ST_OK);
  assert_int_equal(n, 5);
  assert_memory_equal(data, "abdef", 5);
  free(data);

  /* sync, rename, open, read */
  assert_int_equal(env_open_write(io, p, &f, &err), ST_OK);
  env_fail(io, ENV_OP_SYNC, 1, 0);
  assert_int_equal(env_file_sync(f, &err), ST_E_IO);
  assert_int_equal(env_file_sync(f, &err), ST_OK);
  assert_int_equal(env_file_close(f, &err), ST_OK);
  char q[8192];
  path_of(q, "g");
  env_fail(io, ENV_OP_RENAME, 1, 0);
  assert_int_equal(env_rename(io, p, q, &err), ST_E_IO);
  assert_true(env_exists(io, p)); /* a failed rename changes nothing */
  assert_int_equal(env_rename(io, p, q, &err), ST_OK);
  env_fail(io, ENV_OP_OPEN, 1, 0);
  assert_int_equal(env_open_write(io, p, &f, &err), ST_E_IO);
  env_rfile_t *rf;
  assert_int_equal(env_open_read(io, q, &rf, &err), ST_OK);
  env_fail(io, ENV_OP_READ, 1, 0);
  uint8_t b[4];
  size_t got;
  assert_int_equal(env_rfile_pread(rf, 0, b, 4, &got, &err), ST_E_IO);
  env_rfile_close(rf);
  env_fail(io, ENV_OP_UNLINK, 1, 0);
  assert_int_equal(env_unlink(io, q, &err), ST_E_IO);
  assert_true(env_exists(io, q));
  /* the default io ignores plans */
  env_fail(env_default(), ENV_OP_WRITE, 1, 1);
  assert_int_equal(env_op_count(env_default(), ENV_OP_WRITE), 0);
  env_destroy(io);
  env_destroy(NULL);
  env_destroy(env_default());
}

static void test_io_drop_unsynced(void **state) {
  (void)state;
  env_t *io = env_create_faulty();
  char p[8192], q[8192], r[8192];
  path_of(p, "synced");
  path_of(q, "renamed");
  path_of(r, "never");
  err_t err;
  env_file_t *f;
  uint8_t buf[1000];
  memset(buf, 0xab, sizeof buf);
  assert_int_equal(env_open_write(io, p, &f, &err), ST_OK);
  assert_int_equal(env_file_append(f, buf, 100, &err), ST_OK);
  assert_int_equal(env_file_sync(f, &err), ST_OK);
  assert_int_equal(env_file_append(f, buf, 50, &err), ST_OK);
  assert_int_equal(env_file_close(f, &err), ST_OK);
  assert_int_equal(env_open_write(io, r, &f, &err), ST_OK);
  assert_int_equal(env_file_append(f, buf, 300, &err), ST_OK);
  assert_int_equal(env_file_close(f, &err), ST_OK);
  assert_int_equal(env_write_file(io, q, buf, 70, &err), ST_OK); /* synced */
  assert_int_equal(env_rename(io, p, q, &err), ST_OK);           /* replaces q */
  assert_int_equal(env_drop_unsynced(io, &err), ST_OK);
  uint64_t sz;
  assert_int_equal(env_path_size(io, q, &sz, &err), ST_OK);
  assert_int_equal(sz, 100);
  assert_int_equal(env_path_size(io, r, &sz, &err), ST_OK);
  assert_int_equal(sz, 0);
  /* append mode keeps the synced record */
  assert_int_equal(env_open_append(io, q, &f, &err), ST_OK);
  assert_int_equal(env_file_append(f, buf, 10, &err), ST_OK);
  assert_int_equal(env_file_close(f, &err), ST_OK);
  assert_int_equal(env_drop_unsynced(io, &err), ST_OK);
  assert_int_equal(env_path_size(io, q, &sz, &err), ST_OK);
  assert_int_equal(sz, 100);
  env_destroy(io);
}

/* The fault plan's error kinds and path patterns (env_fail_with). */
typedef struct fault_fixture {
  env_t *io;
} fault_fixture_t;

static int fault_setup(void **state) {
  static fault_fixture_t fx;
  if (test_tmpdir_create(dir, sizeof dir, "io_fault") != 0) return -1;
  fx.io = env_create_faulty();
  *state = &fx;
  return fx.io ? 0 : -1;
}

static int fault_teardown(void **state) {
  fault_fixture_t *fx = *state;
  env_destroy(fx->io);
  return test_rmrf(dir);
}

static void test_io_fault_pattern_picks_the_file(void **state) {
  env_t *io = ((fault_fixture_t *)*state)->io;
  char a[8192], b[8192], d[8192];
  path_of(a, "000001.log");
  path_of(b, "MANIFEST-000002");
  path_of(d, "sub");
  err_t err;
  env_fault_t f = {
      .op = ENV_OP_OPEN, .n = 2, .error = ENV_ERR_ENOSPC, .pattern = "MANIFEST-*"};
  assert_int_equal(env_fail_with(io, &f), ST_OK);
  env_file_t *fa, *fb;
  assert_int_equal(env_open_write(io, a, &fa, &err), ST_OK); /* no match */
  assert_int_equal(env_open_write(io, b, &fb, &err), ST_OK); /* 1st match */
  assert_int_equal(env_file_close(fb, &err), ST_OK);
  assert_int_equal(env_open_write(io, a, &fb, &err), ST_OK); /* no match */
  assert_int_equal(env_file_close(fb, &err), ST_OK);
  assert_int_equal(env_faults_injected(io), 0);
  assert_int_equal(env_open_write(io, b, &fb, &err), ST_E_IO); /* 2nd match */
  assert_non_null(strstr(err.msg, b));
  assert_non_null(strstr(err.msg, "No space left on device"));
  assert_int_equal(env_faults_injected(io), 1);
  char last[8192];
  env_last_fault_path(io, last, sizeof last);
  assert_string_equal(last, b);
  assert_int_equal(env_file_close(fa, &err), ST_OK);
  /* mkdir is a kind of its own */
  env_fault_t m = {.op = ENV_OP_MKDIR, .n = 1, .error = ENV_ERR_EIO};
  assert_int_equal(env_fail_with(io, &m), ST_OK);
  assert_int_equal(env_mkdir(io, d, &err), ST_E_IO);
  assert_non_null(strstr(err.msg, "mkdir"));
  assert_false(env_exists(io, d));
  assert_int_equal(env_mkdir(io, d, &err), ST_OK);
  assert_int_equal(env_op_count(io, ENV_OP_MKDIR), 2);
  /* errors that do not fit the kind are refused */
  env_fault_t bad = {.op = ENV_OP_SYNC, .n = 1, .error = ENV_ERR_SHORT};
  assert_int_equal(env_fail_with(io, &bad), ST_E_INVALID);
  bad = (env_fault_t){.op = ENV_OP_WRITE, .n = 1, .error = ENV_ERR_FSYNC};
  assert_int_equal(env_fail_with(io, &bad), ST_E_INVALID);
}

static void test_io_fault_short_write_writes_part(void **state) {
  env_t *io = ((fault_fixture_t *)*state)->io;
  char p[8192];
  path_of(p, "t.sst");
  err_t err;
  env_file_t *f;
  assert_int_equal(env_open_write(io, p, &f, &err), ST_OK);
  assert_int_equal(env_file_append(f, "0123456789", 10, &err), ST_OK);
  env_fault_t s = {.op = ENV_OP_WRITE, .n = 1, .error = ENV_ERR_SHORT};
  assert_int_equal(env_fail_with(io, &s), ST_OK);
  assert_int_equal(env_file_append(f, "abcdefgh", 8, &err), ST_E_IO);
  assert_non_null(strstr(err.msg, "short write (4 of 8 bytes)"));
  assert_non_null(strstr(err.msg, p));
  assert_int_equal(env_file_close(f, &err), ST_OK);
  void *data;
  size_t n;
  assert_int_equal(env_read_file(io, p, &data, &n, &err), ST_OK);
  assert_int_equal(n, 14);
  assert_memory_equal(data, "0123456789abcd", 14);
  free(data);
}

static void test_io_fault_fsync_drops_unsynced_bytes(void **state) {
  env_t *io = ((fault_fixture_t *)*state)->io;
  char p[8192];
  path_of(p, "000003.log");
  err_t err;
  env_file_t *f;
  assert_int_equal(env_open_write(io, p, &f, &err), ST_OK);
  assert_int_equal(env_file_append(f, "synced", 6, &err), ST_OK);
  assert_int_equal(env_file_sync(f, &err), ST_OK);
  assert_int_equal(env_file_append(f, "lost", 4, &err), ST_OK);
  env_fault_t s = {.op = ENV_OP_SYNC, .n = 1, .error = ENV_ERR_FSYNC, .pattern = "*.log"};
  assert_int_equal(env_fail_with(io, &s), ST_OK);
  assert_int_equal(env_file_sync(f, &err), ST_E_IO);
  assert_non_null(strstr(err.msg, "fdatasync"));
  assert_non_null(strstr(err.msg, "Input/output error"));
  assert_int_equal(env_file_close(f, &err), ST_OK);
  uint64_t sz;
  assert_int_equal(env_path_size(io, p, &sz, &err), ST_OK);
  assert_int_equal(sz, 6);
}

/* A FIFO (or a directory) where a file is expected is refused at once with ST_E_CORRUPT and a
   message that says what it is, by every call that opens a file: none waits for a writer or a
   reader of the FIFO. The alarm bounds a regression: it kills the process (a failed test)
   instead of letting an open wait forever. */
static void test_io_fifo_is_refused_without_waiting(void **state) {
  (void)state;
  env_t *io = env_default();
  char p[8192], d[8192];
  path_of(p, "fifo");
  path_of(d, "subdir");
  assert_int_equal(mkfifo(p, 0644), 0);
  assert_int_equal(mkdir(d, 0755), 0);
  alarm(30);
  err_t err;
  env_rfile_t *rf;
  env_file_t *f;
  env_lock_t *lock;
  void *data;
  size_t n;
  assert_int_equal(env_open_read(io, p, &rf, &err), ST_E_CORRUPT);
  assert_non_null(strstr(err.msg, "not a regular file (a FIFO)"));
  assert_non_null(strstr(err.msg, p));
  assert_int_equal(env_read_file(io, p, &data, &n, &err), ST_E_CORRUPT);
  assert_int_equal(env_read_file_at(io, p, 10, &data, &n, &err), ST_E_CORRUPT);
  assert_int_equal(env_open_write(io, p, &f, &err), ST_E_CORRUPT);
  assert_non_null(strstr(err.msg, "not a regular file (a FIFO)"));
  assert_int_equal(env_open_append(io, p, &f, &err), ST_E_CORRUPT);
  assert_int_equal(env_write_file(io, p, "x", 1, &err), ST_E_CORRUPT);
  assert_int_equal(env_lock(io, p, &lock, &err), ST_E_CORRUPT);
  assert_int_equal(env_lock_shared(io, p, &lock, &err), ST_E_CORRUPT);
  assert_int_equal(env_open_read(io, d, &rf, &err), ST_E_CORRUPT);
  assert_non_null(strstr(err.msg, "not a regular file (a directory)"));
  /* A directory still takes a reader's lock (the engines flock their directory). */
  assert_int_equal(env_lock_shared(io, d, &lock, &err), ST_OK);
  env_unlock(lock);
  alarm(0);
  /* A regular file opened the same way reads and writes as before (a file written has
     O_NONBLOCK cleared; to a file read it means nothing). */
  path_of(p, "plain");
  assert_int_equal(env_write_file(io, p, "abc", 3, &err), ST_OK);
  assert_int_equal(env_read_file(io, p, &data, &n, &err), ST_OK);
  assert_int_equal(n, 3);
  free(data);
}

/* env_rfile_stamp says what the open found (its fstat, no system call of its own): a file
   appended to after the open keeps the open's size and times in the stamp; an open after the
   change stamps it anew. */
static void test_io_stamp_is_the_opens(void **state) {
  (void)state;
  env_t *io = env_default();
  char p[8192];
  path_of(p, "stamped");
  err_t err;
  assert_int_equal(env_write_file(io, p, "abc", 3, &err), ST_OK);
  env_rfile_t *rf, *again;
  assert_int_equal(env_open_read(io, p, &rf, &err), ST_OK);
  struct stat st;
  assert_int_equal(stat(p, &st), 0);
  env_file_stamp_t s0, s1, s2;
  assert_int_equal(env_rfile_stamp(rf, &s0, &err), ST_OK);
  assert_int_equal(s0.dev, (uint64_t)st.st_dev);
  assert_int_equal(s0.ino, (uint64_t)st.st_ino);
  assert_int_equal(s0.size, 3);
  assert_int_equal(s0.mtime_ns, (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec);
  assert_int_equal(s0.ctime_ns, (int64_t)st.st_ctim.tv_sec * 1000000000 + st.st_ctim.tv_nsec);
  env_file_t *f;
  assert_int_equal(env_open_append(io, p, &f, &err), ST_OK);
  assert_int_equal(env_file_append(f, "defg", 4, &err), ST_OK);
  assert_int_equal(env_file_close(f, &err), ST_OK);
  assert_int_equal(env_rfile_stamp(rf, &s1, &err), ST_OK);
  assert_memory_equal(&s1, &s0, sizeof s0);
  assert_int_equal(env_open_read(io, p, &again, &err), ST_OK);
  assert_int_equal(env_rfile_stamp(again, &s2, &err), ST_OK);
  assert_int_equal(s2.size, 7);
  assert_int_equal(s2.ino, s0.ino);
  /* the bytes appended are read through the first descriptor all the same */
  uint8_t buf[8];
  size_t got;
  assert_int_equal(env_rfile_pread(rf, 0, buf, sizeof buf, &got, &err), ST_OK);
  assert_int_equal(got, 7);
  assert_memory_equal(buf, "abcdefg", 7);
  env_rfile_close(again);
  env_rfile_close(rf);
}

/* ---- env_read_batch -------------------------------------------------------------------- */

#define BATCH_FILE_BYTES (300 * 1024)

/* Byte i of file k of the batch tests. */
static uint8_t pattern_byte(int k, size_t i) {
  return (uint8_t)(i * 131 + (i >> 9) * 7 + (size_t)k * 29);
}

static void write_pattern_file(const char *name, int k, char *p) {
  path_of(p, name);
  uint8_t *b = malloc(BATCH_FILE_BYTES);
  assert_non_null(b);
  for (size_t i = 0; i < BATCH_FILE_BYTES; i++) b[i] = pattern_byte(k, i);
  err_t err;
  assert_int_equal(env_write_file(env_default(), p, b, BATCH_FILE_BYTES, &err), ST_OK);
  free(b);
}

/* Writes the pattern files b0 and b1 and opens them for reading through io. */
static void open_pattern_files(env_t *io, env_rfile_t **f0, env_rfile_t **f1) {
  char p0[8192], p1[8192];
  write_pattern_file("b0", 0, p0);
  write_pattern_file("b1", 1, p1);
  err_t err;
  assert_int_equal(env_open_read(io, p0, f0, &err), ST_OK);
  assert_int_equal(env_open_read(io, p1, f1, &err), ST_OK);
}

/* 150 reads over two files (more than a ring takes at once), of 1 byte to 8 KiB at seeded
   random offsets, the last few reaching or starting past the end: each read's bytes and got
   must be pread's. */
static void check_batch(env_t *io, env_rfile_t *f0, env_rfile_t *f1) {
  enum { N = 150 };
  env_read_t r[N];
  uint8_t *buf[N];
  uint64_t x = 0x9e3779b97f4a7c15ull;
  for (int i = 0; i < N; i++) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    size_t n = 1 + (size_t)(x >> 33) % 8192;
    uint64_t off = (x >> 17) % (BATCH_FILE_BYTES - n);
    if (i == N - 3) off = BATCH_FILE_BYTES - n / 2; /* short: crosses the end */
    if (i == N - 2) off = BATCH_FILE_BYTES;         /* at the end: nothing */
    if (i == N - 1) off = BATCH_FILE_BYTES + 4096;  /* past it */
    buf[i] = malloc(n);
    assert_non_null(buf[i]);
    memset(buf[i], 0xee, n);
    r[i] = (env_read_t){i % 2 ? f1 : f0, off, buf[i], n, 12345, -1};
  }
  err_t err;
  assert_int_equal(env_read_batch(io, r, N, &err), ST_OK);
  for (int i = 0; i < N; i++) {
    assert_int_equal(r[i].rc, ST_OK);
    size_t want = r[i].offset >= BATCH_FILE_BYTES           ? 0
                  : r[i].n < BATCH_FILE_BYTES - r[i].offset ? r[i].n
                                                            : BATCH_FILE_BYTES - r[i].offset;
    assert_int_equal(r[i].got, want);
    for (size_t j = 0; j < want; j++)
      if (buf[i][j] != pattern_byte(i % 2, r[i].offset + j))
        fail_msg("read %d: byte %zu differs", i, j);
    free(buf[i]);
  }
}

static void test_read_batch_reads_as_pread(void **state) {
  (void)state;
  env_t *io = env_default();
  env_rfile_t *f0, *f1;
  open_pattern_files(io, &f0, &f1);
  check_batch(io, f0, f1);
  check_batch(io, f0, f1); /* the thread's ring again */
  env_rfile_close(f1);
  env_rfile_close(f0);
}

/* A child of fork must not use its parent's ring (their pages are shared): it reads through
   its own, and the parent's still works after. */
static void test_read_batch_after_fork(void **state) {
  (void)state;
  env_t *io = env_default();
  env_rfile_t *f0, *f1;
  open_pattern_files(io, &f0, &f1);
  check_batch(io, f0, f1);
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    /* cmocka's failures longjmp in the parent only: the child reports by its status */
    enum { N = 100 };
    env_read_t r[N];
    uint8_t b[N][512];
    for (int i = 0; i < N; i++) r[i] = (env_read_t){f0, (uint64_t)i * 1000, b[i], 512, 0, -1};
    int bad = env_read_batch(io, r, N, NULL) != ST_OK;
    for (int i = 0; i < N && !bad; i++)
      for (size_t j = 0; j < 512 && !bad; j++)
        bad = r[i].got != 512 || b[i][j] != pattern_byte(0, (size_t)i * 1000 + j);
    _exit(bad);
  }
  int status;
  assert_int_equal(waitpid(pid, &status, 0), pid);
  assert_true(WIFEXITED(status));
  assert_int_equal(WEXITSTATUS(status), 0);
  check_batch(io, f0, f1);
  env_rfile_close(f1);
  env_rfile_close(f0);
}

/* Through the faulty env (which wraps the real one), a batch counts once and each of its
   reads as one read: the injected failure is that read's alone, and the batch returns it. */
static void test_read_batch_through_a_faulty_env(void **state) {
  (void)state;
  env_t *io = env_create_faulty();
  assert_non_null(io);
  char p0[8192];
  write_pattern_file("b0", 0, p0);
  env_rfile_t *f;
  err_t err;
  assert_int_equal(env_open_read(io, p0, &f, &err), ST_OK);
  uint8_t b[4][100];
  env_read_t r[4];
  for (int i = 0; i < 4; i++) r[i] = (env_read_t){f, (uint64_t)i * 5000, b[i], 100, 0, -1};
  uint64_t before = env_op_count(io, ENV_OP_READ), batches = env_op_count(io, ENV_OP_BATCH);
  env_fail(io, ENV_OP_READ, 3, 0);
  assert_int_equal(env_read_batch(io, r, 4, &err), ST_E_IO);
  assert_non_null(strstr(err.msg, "injected fault"));
  assert_int_equal(env_op_count(io, ENV_OP_READ) - before, 4);
  assert_int_equal(env_op_count(io, ENV_OP_BATCH) - batches, 1);
  for (int i = 0; i < 4; i++) {
    assert_int_equal(r[i].rc, i == 2 ? ST_E_IO : ST_OK);
    if (i == 2) continue;
    assert_int_equal(r[i].got, 100);
    assert_int_equal(b[i][7], pattern_byte(0, (size_t)i * 5000 + 7));
  }
  env_rfile_close(f);
  env_destroy(io);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_io_write_read_roundtrip, dir_setup, dir_teardown),
      cmocka_unit_test_setup_teardown(test_io_lock_busy, dir_setup, dir_teardown),
      cmocka_unit_test_setup_teardown(test_io_fail_nth_write, dir_setup, dir_teardown),
      cmocka_unit_test_setup_teardown(test_io_drop_unsynced, dir_setup, dir_teardown),
      cmocka_unit_test_setup_teardown(test_io_stamp_is_the_opens, dir_setup, dir_teardown),
      cmocka_unit_test_setup_teardown(test_io_fifo_is_refused_without_waiting, dir_setup,
                                      dir_teardown),
      cmocka_unit_test_setup_teardown(test_read_batch_reads_as_pread, dir_setup, dir_teardown),
      cmocka_unit_test_setup_teardown(test_read_batch_after_fork, dir_setup, dir_teardown),
      cmocka_unit_test_setup_teardown(test_read_batch_through_a_faulty_env, dir_setup,
                                      dir_teardown),
      cmocka_unit_test_setup_teardown(test_io_fault_pattern_picks_the_file, fault_setup,
                                      fault_teardown),
      cmocka_unit_test_setup_teardown(test_io_fault_short_write_writes_part, fault_setup,
                                      fault_teardown),
      cmocka_unit_test_setup_teardown(test_io_fault_fsync_drops_unsynced_bytes, fault_setup,
                                      fault_teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

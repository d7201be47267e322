/* Tests of the BFH-PARAMS file (api/db_params.h): the documented byte layout; write
   and read round trips at the edges of every field; a missing file is BFH_NOT_FOUND;
   every flipped bit, every truncation and an extra byte are BFH_E_CORRUPT naming the file;
   a newer version is BFH_E_UNSUPPORTED; a failed write leaves the old file whole; the
   comparison of stored and wanted parameters. */
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

#include "bfh.h"
#include "tests/env_fault.h"
#include "util/env.h"
#include "api/db_params.h"
#include "tests/test_util.h"
#include "util/coding.h"
#include "util/crc32c.h"
#include "util/random.h"

static char dir[TEST_PATH_MAX / 2]; /* the current test's temporary directory */
static char path[TEST_PATH_MAX];    /* dir/BFH-PARAMS */

static int dir_setup(void **state) {
  (void)state;
  if (test_tmpdir_create(dir, sizeof dir, "db_params_test") != 0) return -1;
  snprintf(path, sizeof path, "%s/%s", dir, DB_PARAMS_FILE);
  return 0;
}

static int dir_teardown(void **state) {
  (void)state;
  return test_rmrf(dir);
}

static void write_bytes(const uint8_t *data, size_t n) {
  FILE *f = fopen(path, "wb");
  assert_non_null(f);
  assert_int_equal(fwrite(data, 1, n, f), n);
  assert_int_equal(fclose(f), 0);
}

static void read_bytes(uint8_t *data, size_t cap, size_t *n) {
  FILE *f = fopen(path, "rb");
  assert_non_null(f);
  *n = fread(data, 1, cap, f);
  assert_int_equal(fclose(f), 0);
}

/* db_params_read's status; its message must name the file when it is an error. */
static int read_status(db_params_t *out, err_t *err) {
  err_clear(err);
  int rc = db_params_read(env_default(), dir, out, err);
  if (rc < 0 && !strstr(err->msg, path))
    fail_msg("status %d: message \"%s\" does not name %s", rc, err->msg, path);
  return rc;
}

static void test_db_params_layout_is_the_documented_one(void **state) {
  (void)state;
  db_params_t p = {.m = 0x0102030405060708ull, .k = 0x11121314u, .seed = 0x2122232425262728ull};
  uint8_t b[DB_PARAMS_BYTES];
  db_params_encode(&p, b);
  assert_int_equal(DB_PARAMS_BYTES, 36);
  assert_memory_equal(b, "BFHP", 4);
  assert_int_equal(decode_fixed32(b + 4), DB_PARAMS_VERSION);
  assert_int_equal(b[8], 0x08); /* little-endian */
  assert_int_equal(decode_fixed64(b + 8), p.m);
  assert_int_equal(decode_fixed32(b + 16), p.k);
  assert_int_equal(decode_fixed32(b + 20), 0);
  assert_int_equal(decode_fixed64(b + 24), p.seed);
  assert_int_equal(crc32c_unmask(decode_fixed32(b + 32)), crc32c_value(b, 32));

  /* The file holds exactly those bytes, and no temporary file is left behind. */
  err_t err;
  p.k = 7; /* a k the reader accepts */
  db_params_encode(&p, b);
  assert_int_equal(db_params_write(env_default(), dir, &p, &err), BFH_OK);
  uint8_t f[64];
  size_t n;
  read_bytes(f, sizeof f, &n);
  assert_int_equal(n, DB_PARAMS_BYTES);
  assert_memory_equal(f, b, DB_PARAMS_BYTES);
  char tmp[TEST_PATH_MAX + 8];
  snprintf(tmp, sizeof tmp, "%s.tmp", path);
  assert_int_equal(access(tmp, F_OK), -1);
}

static void test_db_params_round_trip_each_field(void **state) {
  (void)state;
  /* Each field at its edges with the others fixed, then random values (seed 11). */
  const uint64_t ms[] = {64, 65, 1000, (uint64_t)UINT32_MAX + 1, UINT64_MAX};
  const uint32_t ks[] = {1, 2, 7, 31, 32};
  const uint64_t seeds[] = {0, 1, 0x9e3779b97f4a7c15ull, UINT64_MAX};
  db_params_t cases[64];
  size_t n = 0;
  for (size_t i = 0; i < sizeof ms / sizeof ms[0]; i++)
    cases[n++] = (db_params_t){.m = ms[i], .k = 5, .seed = 42};
  for (size_t i = 0; i < sizeof ks / sizeof ks[0]; i++)
    cases[n++] = (db_params_t){.m = 8192, .k = ks[i], .seed = 42};
  for (size_t i = 0; i < sizeof seeds / sizeof seeds[0]; i++)
    cases[n++] = (db_params_t){.m = 8192, .k = 5, .seed = seeds[i]};
  rng_t r;
  rng_init(&r, 11);
  while (n < sizeof cases / sizeof cases[0])
    cases[n++] = (db_params_t){.m = 64 + (rng_next(&r) >> rng_below(&r, 64)),
                               .k = 1 + (uint32_t)rng_below(&r, 32),
                               .seed = rng_next(&r)};
  for (size_t i = 0; i < n; i++) {
    err_t err;
    assert_int_equal(db_params_write(env_default(), dir, &cases[i], &err), BFH_OK);
    db_params_t got;
    memset(&got, 0xee, sizeof got);
    assert_int_equal(read_status(&got, &err), BFH_OK);
    assert_int_equal(got.m, cases[i].m);
    assert_int_equal(got.k, cases[i].k);
    assert_int_equal(got.seed, cases[i].seed);
  }
}

static void test_db_params_missing_is_not_found(void **state) {
  (void)state;
  db_params_t p;
  err_t err;
  assert_int_equal(read_status(&p, &err), BFH_NOT_FOUND);
  /* The directory itself missing: the same. */
  char gone[TEST_PATH_MAX];
  snprintf(gone, sizeof gone, "%s/nope", dir);
  assert_int_equal(db_params_read(env_default(), gone, &p, &err), BFH_NOT_FOUND);
}

static void test_db_params_damage_is_corrupt(void **state) {
  (void)state;
  db_params_t p = {.m = 1 << 20, .k = 6, .seed = 0xfeedfacecafebeefull}, got;
  uint8_t good[DB_PARAMS_BYTES], b[DB_PARAMS_BYTES + 1];
  db_params_encode(&p, good);
  err_t err;
  /* Every single-bit flip of the 36 bytes: the checksum covers all but itself, and a
     flip in the checksum no longer matches. */
  for (size_t off = 0; off < DB_PARAMS_BYTES; off++)
    for (int bit = 0; bit < 8; bit++) {
      memcpy(b, good, sizeof good);
      b[off] ^= (uint8_t)(1u << bit);
      write_bytes(b, DB_PARAMS_BYTES);
      int rc = read_status(&got, &err);
      if (rc != BFH_E_CORRUPT) fail_msg("byte %zu bit %d: status %d", off, bit, rc);
    }
  /* Every truncation (an empty file included) and one byte too many. */
  for (size_t n = 0; n < DB_PARAMS_BYTES; n++) {
    write_bytes(good, n);
    int rc = read_status(&got, &err);
    if (rc != BFH_E_CORRUPT) fail_msg("%zu bytes: status %d", n, rc);
  }
  memcpy(b, good, sizeof good);
  b[DB_PARAMS_BYTES] = 0;
  write_bytes(b, DB_PARAMS_BYTES + 1);
  assert_int_equal(read_status(&got, &err), BFH_E_CORRUPT);

  /* Fields that break the format behind a good checksum: a nonzero reserved field, a k
     or m no filter can have. */
  const struct {
    size_t off;
    int width;
    uint64_t v;
  } bad[] = {{20, 4, 1}, {16, 4, 0}, {16, 4, 33}, {8, 8, 63}, {8, 8, 0}};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    memcpy(b, good, sizeof good);
    if (bad[i].width == 4)
      encode_fixed32(b + bad[i].off, (uint32_t)bad[i].v);
    else
      encode_fixed64(b + bad[i].off, bad[i].v);
    encode_fixed32(b + 32, crc32c_mask(crc32c_value(b, 32)));
    write_bytes(b, DB_PARAMS_BYTES);
    int rc = read_status(&got, &err);
    if (rc != BFH_E_CORRUPT) fail_msg("case %zu: status %d", i, rc);
  }
  /* The good bytes read back. */
  write_bytes(good, DB_PARAMS_BYTES);
  assert_int_equal(read_status(&got, &err), BFH_OK);
  assert_int_equal(got.seed, p.seed);
}

static void test_db_params_newer_version_is_unsupported(void **state) {
  (void)state;
  db_params_t p = {.m = 4096, .k = 3, .seed = 9}, got;
  const uint32_t versions[] = {DB_PARAMS_VERSION + 1, 1000, UINT32_MAX};
  for (size_t i = 0; i < sizeof versions / sizeof versions[0]; i++) {
    uint8_t b[DB_PARAMS_BYTES];
    db_params_encode(&p, b);
    encode_fixed32(b + 4, versions[i]);
    encode_fixed32(b + 32, crc32c_mask(crc32c_value(b, 32)));
    write_bytes(b, DB_PARAMS_BYTES);
    err_t err;
    assert_int_equal(read_status(&got, &err), BFH_E_UNSUPPORTED);
    char want[32];
    snprintf(want, sizeof want, "version %u", versions[i]);
    assert_non_null(strstr(err.msg, want));
    /* decode says the same for the bytes alone */
    assert_int_equal(db_params_decode(b, sizeof b, "x", &got, &err), BFH_E_UNSUPPORTED);
  }
}

static void test_db_params_failed_write_keeps_the_old_file(void **state) {
  (void)state;
  /* The file is replaced by a rename: a failure before it (the write or sync of the
     temporary file, the rename itself) leaves the old parameters readable and removes the
     temporary file. */
  db_params_t old = {.m = 1000, .k = 4, .seed = 1}, neu = {.m = 2000, .k = 5, .seed = 2}, got;
  err_t err;
  assert_int_equal(db_params_write(env_default(), dir, &old, &err), BFH_OK);
  const env_op_t ops[] = {ENV_OP_OPEN, ENV_OP_WRITE, ENV_OP_SYNC, ENV_OP_RENAME};
  char tmp[TEST_PATH_MAX + 8];
  snprintf(tmp, sizeof tmp, "%s.tmp", path);
  for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++) {
    env_t *io = env_create_faulty();
    assert_non_null(io);
    env_fail(io, ops[i], 1, 1);
    err_clear(&err);
    assert_int_equal(db_params_write(io, dir, &neu, &err), BFH_E_IO);
    assert_true(env_faults_injected(io) >= 1);
    env_destroy(io);
    assert_int_equal(read_status(&got, &err), BFH_OK);
    assert_int_equal(got.m, old.m);
    assert_int_equal(got.k, old.k);
    assert_int_equal(got.seed, old.seed);
    assert_int_equal(access(tmp, F_OK), -1);
  }
  /* A read whose open fails is an I/O error naming the file, not "missing". */
  env_t *io = env_create_faulty();
  env_fail(io, ENV_OP_OPEN, 1, 0);
  err_clear(&err);
  assert_int_equal(db_params_read(io, dir, &got, &err), BFH_E_IO);
  assert_non_null(strstr(err.msg, path));
  env_destroy(io);
}

static void test_db_params_check_compares_every_field(void **state) {
  (void)state;
  db_params_t stored = {.m = 8192, .k = 6, .seed = 77};
  err_t err;
  assert_int_equal(db_params_check(dir, &stored, &stored, &err), BFH_OK);
  const db_params_t wants[] = {{.m = 8193, .k = 6, .seed = 77},
                               {.m = 8192, .k = 7, .seed = 77},
                               {.m = 8192, .k = 6, .seed = 78}};
  for (size_t i = 0; i < sizeof wants / sizeof wants[0]; i++) {
    err_clear(&err);
    assert_int_equal(db_params_check(dir, &stored, &wants[i], &err), BFH_E_INVALID);
    assert_non_null(strstr(err.msg, path));
    assert_non_null(strstr(err.msg, "m=8192 bits, k=6, seed=77"));
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_db_params_layout_is_the_documented_one, dir_setup,
                                      dir_teardown),
      cmocka_unit_test_setup_teardown(test_db_params_round_trip_each_field, dir_setup,
                                      dir_teardown),
      cmocka_unit_test_setup_teardown(test_db_params_missing_is_not_found, dir_setup, dir_teardown),
      cmocka_unit_test_setup_teardown(test_db_params_damage_is_corrupt, dir_setup, dir_teardown),
      cmocka_unit_test_setup_teardown(test_db_params_newer_version_is_unsupported, dir_setup,
                                      dir_teardown),
      cmocka_unit_test_setup_teardown(test_db_params_failed_write_keeps_the_old_file, dir_setup,
                                      dir_teardown),
      cmocka_unit_test_setup_teardown(test_db_params_check_compares_every_field, dir_setup,
                                      dir_teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

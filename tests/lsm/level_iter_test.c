/* Tests of the level iterator (lsm/level_iter.h) over four real tables of disjoint key ranges
 * with gaps between them: a whole pass gives every entry in order, opening each table once; a
 * seek lands on the right entry (inside a table, in a gap, before the first, past the last,
 * and on a table's last user key with an older sequence, which belongs to the next table)
 * and opens only the table it lands in; a table that will not open stops the pass with its
 * error when the entries reach it, and a seek past it never sees that error. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lsm/filename.h"
#include "lsm/internal_key.h"
#include "lsm/level_iter.h"
#include "lsm/table.h"
#include "lsm/table_builder.h"
#include "tests/test_util.h"

#define FILES 4
#define PER_FILE 50 /* file i holds user keys i*100 .. i*100+49, each at sequence 1000+key */
#define SEQ(u) (1000 + (uint64_t)(u))

static char dir[4096];

typedef struct level {
  lsm_file_meta_t *files[FILES];
  table_t *tables[FILES]; /* opened by open_table, kept until the teardown */
  int opens[FILES];
  uint64_t fail; /* the file number open_table refuses; 0: none */
} level_t;

static size_t ukey(char *buf, uint32_t u) {
  return (size_t)snprintf(buf, 32, "key%05u", u);
}

static size_t ikey(uint8_t *buf, uint32_t u, uint64_t seq) {
  char k[32];
  return internal_key_encode(buf, k, ukey(k, u), seq, LSM_TYPE_VALUE);
}

static int open_table(void *arg, lsm_file_meta_t *f, struct table **t, err_t *err) {
  level_t *lv = arg;
  if (f->number == lv->fail)
    return err_set(err, ST_E_IO, "table %llu: refused by the test", (unsigned long long)f->number);
  size_t i = f->number - 1;
  lv->opens[i]++;
  if (!lv->tables[i]) {
    char *path = table_file_path(dir, f->number);
    int rc = table_open(env_default(), path, f->number, &lv->tables[i], err);
    free(path);
    if (rc != ST_OK) return rc;
  }
  *t = lv->tables[i];
  return ST_OK;
}

static int setup(void **state) {
  if (test_tmpdir_create(dir, sizeof dir, "level_iter_test")) return -1;
  level_t *lv = calloc(1, sizeof *lv);
  table_builder_options_t opt;
  table_builder_options_init(&opt);
  opt.block_bytes = 256; /* several blocks a table */
  opt.sync = 0;
  for (uint32_t i = 0; i < FILES; i++) {
    char *path = table_file_path(dir, i + 1);
    table_builder_t *tb;
    err_t err;
    assert_int_equal(table_builder_create(env_default(), path, i + 1, &opt, &tb, &err), ST_OK);
    for (uint32_t u = i * 100; u < i * 100 + PER_FILE; u++) {
      uint8_t k[48];
      char v[32];
      size_t kn = ikey(k, u, SEQ(u)), vn = (size_t)snprintf(v, sizeof v, "value%u", u);
      assert_int_equal(table_builder_add(tb, k, kn, v, vn, &err), ST_OK);
    }
    assert_int_equal(table_builder_finish(tb, &err), ST_OK);
    size_t sn, ln;
    const uint8_t *s = table_builder_smallest(tb, &sn), *l = table_builder_largest(tb, &ln);
    lv->files[i] = lsm_file_meta_create(i + 1, table_builder_file_size(tb), s, sn, l, ln);
    assert_non_null(lv->files[i]);
    table_builder_destroy(tb);
    free(path);
  }
  *state = lv;
  return 0;
}

static int teardown(void **state) {
  level_t *lv = *state;
  for (int i = 0; i < FILES; i++) {
    table_unref(lv->tables[i]);
    lsm_file_meta_destroy(lv->files[i]);
  }
  free(lv);
  return test_rmrf(dir);
}

/* The user key number of the entry it is at. */
static uint32_t at(const iterator_t *it) {
  size_t n;
  const char *k = iterator_key(it, &n);
  assert_true(n == 8 + 8 && memcmp(k, "key", 3) == 0);
  return (uint32_t)strtoul(k + 3, NULL, 10);
}

static iterator_t *fresh(level_t *lv) {
  memset(lv->opens, 0, sizeof lv->opens);
  iterator_t *it = level_iterator_create(lv->files, FILES, open_table, lv);
  assert_non_null(it);
  return it;
}

static void test_whole_pass(void **state) {
  level_t *lv = *state;
  iterator_t *it = fresh(lv);
  uint32_t n = 0;
  for (iterator_seek_first(it); iterator_valid(it); iterator_next(it), n++) {
    assert_int_equal(at(it), (n / PER_FILE) * 100 + n % PER_FILE);
    size_t vn;
    const char *v = iterator_value(it, &vn);
    char want[32];
    assert_int_equal(vn, (size_t)snprintf(want, sizeof want, "value%u", at(it)));
    assert_memory_equal(v, want, vn);
  }
  assert_int_equal(n, FILES * PER_FILE);
  assert_int_equal(iterator_status(it, NULL), ST_OK);
  for (int i = 0; i < FILES; i++) assert_int_equal(lv->opens[i], 1);
  iterator_destroy(it);
}

static void seek_to(iterator_t *it, uint32_t u, uint64_t seq) {
  uint8_t k[48];
  iterator_seek(it, k, ikey(k, u, seq));
}

static void test_seeks(void **state) {
  level_t *lv = *state;
  iterator_t *it = fresh(lv);
  seek_to(it, 210, SEQ(210)); /* inside file 3 */
  assert_true(iterator_valid(it));
  assert_int_equal(at(it), 210);
  assert_int_equal(lv->opens[0] + lv->opens[1] + lv->opens[3], 0);
  assert_int_equal(lv->opens[2], 1);
  seek_to(it, 160, SEQ(160)); /* the gap after file 2: file 3's first */
  assert_int_equal(at(it), 200);
  seek_to(it, 0, LSM_MAX_SEQ); /* before everything */
  assert_int_equal(at(it), 0);
  /* File 1's last user key with an older sequence: nothing of file 1 is at or after it. */
  seek_to(it, PER_FILE - 1, SEQ(PER_FILE - 1) - 1);
  assert_true(iterator_valid(it));
  assert_int_equal(at(it), 100);
  iterator_next(it);
  assert_int_equal(at(it), 101);
  seek_to(it, 999, LSM_MAX_SEQ); /* past the last */
  assert_false(iterator_valid(it));
  assert_int_equal(iterator_status(it, NULL), ST_OK);
  iterator_destroy(it);
}

static void test_table_that_will_not_open(void **state) {
  level_t *lv = *state;
  lv->fail = 2;
  iterator_t *it = fresh(lv);
  seek_to(it, 250, SEQ(250)); /* beyond the refused file: it is never reached */
  assert_int_equal(at(it), 300);
  assert_int_equal(iterator_status(it, NULL), ST_OK);
  iterator_destroy(it);
  it = fresh(lv);
  uint32_t n = 0;
  for (iterator_seek_first(it); iterator_valid(it); iterator_next(it)) n++;
  assert_int_equal(n, PER_FILE); /* file 1's entries, then the refused file's error */
  err_t err;
  assert_int_equal(iterator_status(it, &err), ST_E_IO);
  assert_non_null(strstr(err.msg, "table 2: refused by the test"));
  iterator_destroy(it);
  lv->fail = 0;
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_whole_pass, setup, teardown),
      cmocka_unit_test_setup_teardown(test_seeks, setup, teardown),
      cmocka_unit_test_setup_teardown(test_table_that_will_not_open, setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

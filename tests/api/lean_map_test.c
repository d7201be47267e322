/* The lean index's value-to-block maps (doc/search.md "The lean index") under damage: a map
 * whose chunk or head does not check out is answered around (the table read whole, or
 * through its block filter), counted, and never gives a wrong answer. Every method is
 * compared with SCAN, before and after the damage.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bfh.h"
#include "lsm/table.h"
#include "index/value_block_map.h"
#include "tests/test_util.h"
#include "tests/api/db_fixture.h"

#define NKEYS 6000
#define DOMAIN 1500 /* about 4 keys per value, in several tables */

static int setup(void **state) {
  return db_fixture_setup(state, "lean_map_test");
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

static int count(void *arg, const void *key, size_t len) {
  (void)key, (void)len;
  (*(uint64_t *)arg)++;
  return 0;
}

static size_t value_of(uint32_t d, char *v) {
  return (size_t)sprintf(v, "value-%05u", d);
}

/* Every value of the domain (and some absent ones) by every filter method and AUTO equals
   SCAN; returns the map chunks AUTO read. */
static uint64_t check_all(bfh_db *db) {
  uint64_t chunks = 0;
  for (uint32_t d = 0; d < DOMAIN + 50; d++) {
    char v[32];
    size_t len = value_of(d, v);
    uint64_t want = 0;
    assert_int_equal(bfh_search(db, v, len, BFH_SEARCH_SCAN, count, &want, NULL), BFH_OK);
    assert_true(d >= DOMAIN || want > 0);
    for (int m = BFH_SEARCH_LEAVES; m <= BFH_SEARCH_AUTO; m++) {
      uint64_t got = 0;
      bfh_search_stats st;
      assert_int_equal(bfh_search(db, v, len, (bfh_method)m, count, &got, &st), BFH_OK);
      if (got != want) fail_msg("value %u method %d: %llu keys, SCAN %llu", d, m,
                                (unsigned long long)got, (unsigned long long)want);
      chunks += st.map_chunks_read;
    }
  }
  return chunks;
}

/* The numbers of the database's table files, ascending. */
static size_t table_numbers(const char *dir, uint64_t *out, size_t cap) {
  DIR *d = opendir(dir);
  assert_non_null(d);
  size_t n = 0;
  struct dirent *e;
  while ((e = readdir(d)) && n < cap) {
    size_t l = strlen(e->d_name);
    if (l > 4 && strcmp(e->d_name + l - 4, ".sst") == 0) out[n++] = strtoull(e->d_name, NULL, 10);
  }
  closedir(d);
  return n;
}

/* Where meta block `name` of table `number` lies in its file. */
static uint64_t meta_offset(const char *dir, uint64_t number, const char *name, size_t *size) {
  char path[4300];
  assert_int_equal(test_path_take(path, sizeof path, table_file_path(dir, number)), 0);
  table_t *t = NULL;
  err_t err;
  assert_int_equal(table_open(env_default(), path, number, &t, &err), BFH_OK);
  void *data = NULL;
  uint64_t off = 0;
  assert_int_equal(table_read_meta(t, name, &data, size, &off, &err), BFH_OK);
  free(data);
  table_unref(t);
  return off;
}

static void test_lean_map_damage_answered_around(void **state) {
  db_fixture_t *f = *state;
  bfh_options o;
  options(&o);
  assert_int_equal(bfh_open(f->dir, &o, &f->db), BFH_OK);
  for (uint32_t i = 0; i < NKEYS; i++) {
    char k[32], v[32];
    size_t kl = (size_t)sprintf(k, "key-%06u", (i * 7919u) % NKEYS);
    size_t vl = value_of(i % DOMAIN, v);
    assert_int_equal(bfh_put(f->db, k, kl, v, vl), BFH_OK);
    if (i % 5 == 0) assert_int_equal(bfh_put(f->db, k, kl, "", 0), BFH_OK); /* empty value */
    if (i % 5 == 0) assert_int_equal(bfh_put(f->db, k, kl, v, vl), BFH_OK);
    if (i % 11 == 0) assert_int_equal(bfh_delete(f->db, k, kl), BFH_OK);
  }
  assert_int_equal(bfh_flush(f->db), BFH_OK);
  assert_true(check_all(f->db) > 0); /* the maps are read */
  bfh_db_stats st;
  assert_int_equal(bfh_stats(f->db, &st), BFH_OK);
  assert_int_equal(st.block_filters_damaged, 0);
  assert_int_equal(bfh_close(f->db), BFH_OK);
  f->db = NULL;

  /* A reopen reads the maps' heads, not the block filters: the same answers. */
  assert_int_equal(bfh_open(f->dir, &o, &f->db), BFH_OK);
  assert_true(check_all(f->db) > 0);
  assert_int_equal(bfh_close(f->db), BFH_OK);
  f->db = NULL;

  /* Damage: every table's map chunks (a bit in each chunk's entries), and one table's head. */
  uint64_t nums[256];
  size_t n = table_numbers(f->dir, nums, 256);
  assert_true(n >= 3);
  for (size_t i = 0; i < n; i++) {
    char path[4300];
    assert_int_equal(test_path_take(path, sizeof path, table_file_path(f->dir, nums[i])), 0);
    size_t size = 0;
    uint64_t off = meta_offset(f->dir, nums[i], VALUE_BLOCK_MAP_CHUNKS_NAME, &size);
    for (uint64_t c = 0; c * 2048 < size; c++) /* chunk c's first entry's fingerprint */
      assert_int_equal(test_file_xor_byte(path, off + c * 2048 + 1, 0x10), 0);
    if (i == 0) {
      uint64_t h = meta_offset(f->dir, nums[i], VALUE_BLOCK_MAP_HEAD_NAME, &size);
      assert_int_equal(test_file_xor_byte(path, h + 40, 0x01), 0);
    }
  }
  /* Every answer still equals SCAN's: a damaged chunk makes AUTO read the table whole (and
     drop the map, counted); the damaged head leaves that table to its block filter. */
  assert_int_equal(bfh_open(f->dir, &o, &f->db), BFH_OK);
  (void)check_all(f->db);
  assert_int_equal(bfh_stats(f->db, &st), BFH_OK);
  print_message("%zu tables, %llu maps or filters damaged\n", n,
                (unsigned long long)st.block_filters_damaged);
  assert_true(st.block_filters_damaged >= 2);
  /* Once dropped, a map is not read again: the same answers, no chunk read. */
  assert_int_equal(check_all(f->db), 0);
  assert_int_equal(bfh_close(f->db), BFH_OK);
  f->db = NULL;
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_lean_map_damage_answered_around, setup,
                                      db_fixture_teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

/* Validation through the public API, own engine: a search reads each candidate's latest
 * version, and AUTO's gets parse the blocks its scans kept (lsm/block_memo.h) instead of
 * reading them again. Every method, under the default layout and the lean-map layout, must
 * report exactly the keys whose latest version holds the value: keys overwritten or deleted
 * in a newer table or in the memtable are not reported, keys overwritten with the same value
 * once, empty values only where the value is empty, and keys only in the memtable too.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "bfh.h"
#include "tests/test_util.h"
#include "tests/api/db_fixture.h"

enum { KEYS = 320 };

static int setup(void **state) {
  return db_fixture_setup(state, "search_validation");
}

static void put(bfh_db *db, int id, const char *val) {
  char k[16];
  int kl = snprintf(k, sizeof k, "k%04d", id);
  assert_int_equal(bfh_put(db, k, (size_t)kl, val, strlen(val)), BFH_OK);
}

static void del(bfh_db *db, int id) {
  char k[16];
  int kl = snprintf(k, sizeof k, "k%04d", id);
  assert_int_equal(bfh_delete(db, k, (size_t)kl), BFH_OK);
}

typedef struct seen {
  int count[KEYS];
} seen_t;

static int record(void *arg, const void *key, size_t len) {
  seen_t *s = arg;
  char k[16];
  assert_true(len < sizeof k);
  memcpy(k, key, len);
  k[len] = 0;
  int id = atoi(k + 1);
  assert_true(id >= 0 && id < KEYS);
  s->count[id]++;
  return 0;
}

/* The key's latest value after load(): NULL for none. */
static const char *latest(int id) {
  if (id < 50) return "new";        /* overwritten in a newer table */
  if (id < 100) return NULL;        /* deleted in a newer table */
  if (id < 150) return "new";       /* overwritten in the memtable */
  if (id < 200) return NULL;        /* deleted in the memtable */
  if (id < 220) return "";          /* overwritten with an empty value in the memtable */
  return "old";                     /* 220..239 written again with "old" in the memtable;
                                       240..299 only in the first table; 300.. only in the
                                       memtable */
}

static void load(bfh_db *db) {
  for (int id = 0; id < 300; id++) put(db, id, "old");
  assert_int_equal(bfh_flush(db), BFH_OK);
  for (int id = 0; id < 50; id++) put(db, id, "new");
  for (int id = 50; id < 100; id++) del(db, id);
  assert_int_equal(bfh_flush(db), BFH_OK);
  for (int id = 100; id < 150; id++) put(db, id, "new");
  for (int id = 150; id < 200; id++) del(db, id);
  for (int id = 200; id < 220; id++) put(db, id, "");
  for (int id = 220; id < 240; id++) put(db, id, "old");
  for (int id = 300; id < KEYS; id++) put(db, id, "old");
}

static void check_all(bfh_db *db) {
  const char *vals[] = {"old", "new", "", "absent"};
  const bfh_method methods[] = {BFH_SEARCH_SCAN, BFH_SEARCH_LEAVES, BFH_SEARCH_HIERARCHY,
                                BFH_SEARCH_SLICED, BFH_SEARCH_AUTO};
  for (size_t m = 0; m < sizeof methods / sizeof *methods; m++)
    for (size_t v = 0; v < sizeof vals / sizeof *vals; v++) {
      seen_t s;
      memset(&s, 0, sizeof s);
      bfh_search_stats st;
      assert_int_equal(bfh_search(db, vals[v], strlen(vals[v]), methods[m], record, &s, &st),
                       BFH_OK);
      uint64_t want = 0;
      for (int id = 0; id < KEYS; id++) {
        const char *l = latest(id);
        int expect = l && strcmp(l, vals[v]) == 0;
        want += (uint64_t)expect;
        if (s.count[id] != expect)
          fail_msg("method %d value '%s': key %d reported %d times, want %d", (int)methods[m],
                   vals[v], id, s.count[id], expect);
      }
      assert_int_equal(st.results, want);
    }
}

static void run_layout(void **state, uint32_t bits) {
  db_fixture_t *f = *state;
  bfh_options o;
  bfh_options_init(&o);
  o.index_bits_per_value = bits;
  if (bits) o.block_maps = 1;
  assert_int_equal(bfh_open(f->dir, &o, &f->db), BFH_OK);
  load(f->db);
  bfh_db_stats ds;
  assert_int_equal(bfh_stats(f->db, &ds), BFH_OK);
  assert_true(ds.tables >= 2);
  check_all(f->db);
  /* after a reopen: the memtable's entries come back from the log */
  bfh_close(f->db);
  f->db = NULL;
  assert_int_equal(bfh_open(f->dir, &o, &f->db), BFH_OK);
  check_all(f->db);
}

static void test_search_validation_default_layout(void **state) {
  bfh_options o;
  bfh_options_init(&o);
  run_layout(state, o.index_bits_per_value);
}

static void test_search_validation_lean_map_layout(void **state) {
  run_layout(state, BFH_LEAN_MAP_BITS);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_search_validation_default_layout, setup,
                                      db_fixture_teardown),
      cmocka_unit_test_setup_teardown(test_search_validation_lean_map_layout, setup,
                                      db_fixture_teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

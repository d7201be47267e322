/* The binary interface (doc/api.md "ABI"): bfh_version() agrees with bfh.h's version
 * macros; a program built against an older, shorter bfh_options gets the defaults for the
 * fields it lacks, and the library reads nothing past its struct_size; zeroed options and
 * options longer than the library's are refused; the output structs (bfh_db_stats,
 * bfh_search_stats, bfh_repair_report, bfh_check_report and bfh_stored_params' options) are written
 * only as far as the caller's size, checked with a guard pattern right after the caller's bytes.
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

#define GUARD 0xA5

static int setup(void **state) {
  return db_fixture_setup(state, "abi_test");
}

/* 1 if every byte of p[from, to) is GUARD. */
static int guarded(const void *p, size_t from, size_t to) {
  for (size_t i = from; i < to; i++)
    if (((const uint8_t *)p)[i] != GUARD) return 0;
  return 1;
}

static void test_version_matches_header(void **state) {
  (void)state;
  char header[32];
  snprintf(header, sizeof header, "%d.%d.%d", BFH_VERSION_MAJOR, BFH_VERSION_MINOR,
           BFH_VERSION_PATCH);
  assert_string_equal(bfh_version(), header);
}

/* The options of a program built when bfh_options ended before leaves_on_disk. */
#define OLD_OPTIONS_SIZE offsetof(bfh_options, leaves_on_disk)

static void test_older_options_get_defaults(void **state) {
  db_fixture_t *f = *state;
  bfh_options o;
  memset(&o, GUARD, sizeof o); /* what lies past an old program's struct */
  bfh_options_init_sized(&o, OLD_OPTIONS_SIZE);
  assert_int_equal(o.struct_size, OLD_OPTIONS_SIZE);
  assert_int_equal(o.order, 5);
  assert_true(guarded(&o, OLD_OPTIONS_SIZE, sizeof o)); /* init wrote nothing past it */
  o.order = 7;
  o.value_filter_bits = 1 << 14;
  /* A read past the prefix would see leaves_on_disk = 0xA5A5A5A5 and refuse the open. */
  assert_int_equal(bfh_open(f->dir, &o, &f->db), BFH_OK);
  bfh_db_stats st;
  assert_int_equal(bfh_stats(f->db, &st), BFH_OK);
  assert_int_equal(st.order, 7); /* the caller's field */
  assert_int_equal(st.value_filter_bits, 1 << 14);
  assert_int_equal(st.value_filters, 1); /* defaults past the prefix */
  assert_int_equal(st.placement, BFH_PLACEMENT_SIMILARITY);
  assert_int_equal(st.hash_seed, 0x62666801);
  assert_int_equal(st.standalone_index, 0);
}

static void test_unversioned_options_refused(void **state) {
  db_fixture_t *f = *state;
  bfh_options o;
  memset(&o, 0, sizeof o); /* zeroed by hand, never through bfh_options_init */
  assert_int_equal(bfh_open(f->dir, &o, &f->db), BFH_E_INVALID);
  assert_non_null(strstr(bfh_last_error(NULL), "bfh_options_init"));
  assert_int_equal(bfh_repair(f->dir, &o, NULL), BFH_E_INVALID);
  bfh_options_init(&o);
  o.struct_size = sizeof o + 8; /* a newer bfh.h than the library */
  assert_int_equal(bfh_open(f->dir, &o, &f->db), BFH_E_INVALID);
  assert_non_null(strstr(bfh_last_error(NULL), "newer bfh.h"));
  assert_null(f->db);
}

static bfh_db *open_loaded(db_fixture_t *f) {
  bfh_options o;
  bfh_options_init(&o);
  o.value_filter_bits = 1 << 14;
  o.index_bits_per_value = 0; /* the paper's layout: HIERARCHY walks the hierarchy */
  assert_int_equal(bfh_open(f->dir, &o, &f->db), BFH_OK);
  for (int i = 0; i < 100; i++) {
    char key[16];
    snprintf(key, sizeof key, "key%03d", i);
    assert_int_equal(bfh_put(f->db, key, strlen(key), "V", 1), BFH_OK);
  }
  assert_int_equal(bfh_flush(f->db), BFH_OK);
  return f->db;
}

static void test_older_db_stats_written_to_their_end(void **state) {
  db_fixture_t *f = *state;
  bfh_db *db = open_loaded(f);
  size_t old = offsetof(bfh_db_stats, value_filters);
  bfh_db_stats st;
  memset(&st, GUARD, sizeof st);
  assert_int_equal(bfh_stats_sized(db, &st, old), BFH_OK);
  assert_true(st.tables >= 1);
  assert_true(guarded(&st, old, sizeof st));
}

static void test_older_search_stats_written_to_their_end(void **state) {
  db_fixture_t *f = *state;
  bfh_db *db = open_loaded(f);
  size_t old = offsetof(bfh_search_stats, method_used);
  bfh_search_stats st;
  memset(&st, GUARD, sizeof st);
  assert_int_equal(bfh_search_sized(db, "V", 1, BFH_SEARCH_HIERARCHY, NULL, NULL, &st, old),
                   BFH_OK);
  assert_int_equal(st.results, 100);
  assert_true(guarded(&st, old, sizeof st));
  /* A failing search clears the caller's stats, still only as far as its size. */
  memset(&st, GUARD, sizeof st);
  assert_int_equal(bfh_search_sized(db, "V", 1, (bfh_method)99, NULL, NULL, &st, old),
                   BFH_E_INVALID);
  assert_int_equal(st.results, 0);
  assert_true(guarded(&st, old, sizeof st));
}

/* A program built before internal_maybe was added: the library stops at blocks_read; the
   full struct gets it (the root said maybe: one table holds "V"). */
static void test_search_stats_before_internal_maybe(void **state) {
  db_fixture_t *f = *state;
  bfh_db *db = open_loaded(f);
  size_t old = offsetof(bfh_search_stats, internal_maybe);
  bfh_search_stats st;
  memset(&st, GUARD, sizeof st);
  assert_int_equal(bfh_search_sized(db, "V", 1, BFH_SEARCH_HIERARCHY, NULL, NULL, &st, old),
                   BFH_OK);
  assert_int_equal(st.results, 100);
  assert_true(guarded(&st, old, sizeof st));
  assert_int_equal(bfh_search(db, "V", 1, BFH_SEARCH_HIERARCHY, NULL, NULL, &st), BFH_OK);
  assert_true(st.internal_maybe >= 1);
  assert_true(st.internal_maybe <= st.internal_probes);
  assert_int_equal(bfh_search(db, "V", 1, BFH_SEARCH_SCAN, NULL, NULL, &st), BFH_OK);
  assert_int_equal(st.internal_maybe, 0);
}

/* A newer program's struct is longer: the library zeroes what it does not know. */
static void test_newer_search_stats_tail_zeroed(void **state) {
  db_fixture_t *f = *state;
  bfh_db *db = open_loaded(f);
  struct {
    bfh_search_stats known;
    uint64_t newer[2];
  } st;
  memset(&st, GUARD, sizeof st);
  assert_int_equal(bfh_search_sized(db, "V", 1, BFH_SEARCH_AUTO, NULL, NULL, &st.known, sizeof st),
                   BFH_OK);
  assert_int_equal(st.known.results, 100);
  assert_int_equal(st.newer[0], 0);
  assert_int_equal(st.newer[1], 0);
}

static void test_older_repair_report_written_to_its_end(void **state) {
  db_fixture_t *f = *state;
  open_loaded(f);
  assert_int_equal(bfh_close(f->db), BFH_OK);
  f->db = NULL;
  size_t old = offsetof(bfh_repair_report, files_moved);
  bfh_repair_report rep;
  memset(&rep, GUARD, sizeof rep);
  assert_int_equal(bfh_repair_sized(f->dir, NULL, &rep, old), BFH_OK);
  assert_int_equal(rep.keys_out, 100);
  assert_true(guarded(&rep, old, sizeof rep));
}

static void test_older_check_report_written_to_its_end(void **state) {
  db_fixture_t *f = *state;
  open_loaded(f);
  assert_int_equal(bfh_close(f->db), BFH_OK);
  f->db = NULL;
  size_t old = offsetof(bfh_check_report, torn_tails);
  bfh_check_report rep;
  memset(&rep, GUARD, sizeof rep);
  assert_int_equal(bfh_check_sized(f->dir, NULL, NULL, NULL, &rep, old), BFH_OK);
  assert_true(rep.files >= 3); /* CURRENT, the manifest, the table at least */
  assert_int_equal(rep.damaged, 0);
  assert_true(guarded(&rep, old, sizeof rep));
}

static void test_stored_params_written_to_options_end(void **state) {
  db_fixture_t *f = *state;
  open_loaded(f);
  assert_int_equal(bfh_close(f->db), BFH_OK);
  f->db = NULL;
  size_t old = offsetof(bfh_options, hash_seed); /* has m and k, not the seed */
  bfh_options o;
  memset(&o, GUARD, sizeof o);
  bfh_options_init_sized(&o, old);
  assert_int_equal(bfh_stored_params(f->dir, &o), BFH_OK);
  assert_int_equal(o.value_filter_bits, 1 << 14);
  assert_int_equal(o.struct_size, old);
  assert_true(guarded(&o, old, sizeof o));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_version_matches_header),
      cmocka_unit_test_setup_teardown(test_older_options_get_defaults, setup, db_fixture_teardown),
      cmocka_unit_test_setup_teardown(test_unversioned_options_refused, setup, db_fixture_teardown),
      cmocka_unit_test_setup_teardown(test_older_db_stats_written_to_their_end, setup,
                                      db_fixture_teardown),
      cmocka_unit_test_setup_teardown(test_older_search_stats_written_to_their_end, setup,
                                      db_fixture_teardown),
      cmocka_unit_test_setup_teardown(test_search_stats_before_internal_maybe, setup,
                                      db_fixture_teardown),
      cmocka_unit_test_setup_teardown(test_newer_search_stats_tail_zeroed, setup,
                                      db_fixture_teardown),
      cmocka_unit_test_setup_teardown(test_older_repair_report_written_to_its_end, setup,
                                      db_fixture_teardown),
      cmocka_unit_test_setup_teardown(test_older_check_report_written_to_its_end, setup,
                                      db_fixture_teardown),
      cmocka_unit_test_setup_teardown(test_stored_params_written_to_options_end, setup,
                                      db_fixture_teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

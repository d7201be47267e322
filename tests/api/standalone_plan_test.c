/* A predicate over the stand-alone index, with the real own engine and real files: STANDALONE
 * validates only the keys every leaf of an AND names (its candidates are its results on
 * postings that are not stale), and counts a leaf whose postings are too many to read as
 * holding (no key is lost); AUTO answers from the index when its candidates cost less than the
 * tables its filters select (a 1% term spread over every table), and from the tables when
 * they cost less (a rare term in one block, an absent term, the newest K); the same for a
 * whole value over a database without attributes. Every answer is compared key by key with
 * SCAN's.
 *
 * The data: NKEYS values {"tag":"tT","age":A,"pad":"..."} put in a fixed random order, T = i
 * mod 100 and A = i mod 90 (a tag is held by 1% of the keys, an age by about 1.1%, a tag and
 * an age by 1 in 900); half way, NRARE values with tag "rare" put one after another under
 * keys of the middle of the key space, so that they share a block or two of a full table.
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
/* Not public (api/testbed.h): the stand-alone index behind a handle, and the planner's budget. */
#include "api/testbed.h"
#include "index/index_sync.h"
#include "index/standalone.h"
#include "lsm_hooks/engines/lsm/engine_lsm.h"
#include "search/search_plan.h"
#include "tests/test_util.h"
#include "tests/api/db_fixture.h"
#include "util/random.h"

#define NKEYS 40000
#define NRARE 40
#define RNG_SEED 0x706c616eull

static int setup(void **state) {
  return db_fixture_setup(state, "standalone_plan_test");
}

static const bfh_attribute attrs[3] = {
    {"tag", "json:tag"}, {"age", "json:age:int"}, {"rank", "json:age:int:range"}};

/* The keys a search reported, each once (a key reported twice fails the test). */
typedef struct got {
  char keys[NKEYS + NRARE][12];
  unsigned n;
} got_t;

static int on_key(void *arg, const void *key, size_t len) {
  got_t *g = arg;
  assert_true(len < sizeof g->keys[0] && g->n < NKEYS + NRARE);
  memcpy(g->keys[g->n], key, len);
  g->keys[g->n++][len] = 0;
  return 0;
}

static int cmp_str(const void *a, const void *b) {
  return strcmp(a, b);
}

/* Fails unless what by method (got, st) and by SCAN (scan) found the same want keys. */
static void same_as_scan(const char *what, bfh_method method, got_t *got, got_t *scan,
                         const bfh_search_stats *st, unsigned want) {
  if (scan->n != want || got->n != want || st->results != want)
    fail_msg("'%s' by %s: %u keys (results %llu), SCAN %u, want %u", what, bfh_method_name(method),
             got->n, (unsigned long long)st->results, scan->n, want);
  qsort(got->keys, got->n, sizeof got->keys[0], cmp_str);
  qsort(scan->keys, scan->n, sizeof scan->keys[0], cmp_str);
  for (unsigned i = 0; i < want; i++)
    if (strcmp(got->keys[i], scan->keys[i]))
      fail_msg("'%s' by %s: key %s, SCAN's %s", what, bfh_method_name(method), got->keys[i],
               scan->keys[i]);
}

/* where by method: its stats, and its keys equal to SCAN's (want results of them). */
static bfh_search_stats query_checked(bfh_db *db, const char *where, bfh_method method,
                                      unsigned want) {
  static got_t got, scan;
  bfh_search_stats st, sst;
  memset(&got, 0, sizeof got);
  memset(&scan, 0, sizeof scan);
  assert_int_equal(bfh_query(db, where, method, 0, on_key, &got, &st), BFH_OK);
  assert_int_equal(bfh_query(db, where, BFH_SEARCH_SCAN, 0, on_key, &scan, &sst), BFH_OK);
  same_as_scan(where, method, &got, &scan, &st, want);
  return st;
}

/* The value of key number i (rare: a rare key's) into val (cap bytes); its length. */
typedef int (*value_fn)(unsigned i, int rare, char *val, size_t cap);

/* Puts NKEYS keys in a fixed random order, each with value(i, 0); half way, the NRARE rare
   keys one after another, in the middle of the writes and of the key space (inside a full
   table), each with value(i, 1); then flushes. */
static void put_all(bfh_db *db, value_fn value) {
  unsigned *order = malloc(NKEYS * sizeof *order);
  assert_non_null(order);
  for (unsigned i = 0; i < NKEYS; i++) order[i] = i;
  rng_t g;
  rng_init(&g, RNG_SEED);
  for (unsigned i = NKEYS - 1; i > 0; i--) {
    unsigned j = (unsigned)rng_below(&g, i + 1), t = order[i];
    order[i] = order[j];
    order[j] = t;
  }
  char key[16], val[128];
  for (unsigned n = 0; n < NKEYS + NRARE; n++) {
    int rare = n >= NKEYS / 2 && n < NKEYS / 2 + NRARE;
    unsigned i = n < NKEYS / 2 ? order[n] : rare ? n - NKEYS / 2 : order[n - NRARE];
    if (rare)
      snprintf(key, sizeof key, "k%06ur%02u", NKEYS / 2, i);
    else
      snprintf(key, sizeof key, "k%06u", i);
    int len = value(i, rare, val, sizeof val);
    assert_int_equal(bfh_put(db, key, strlen(key), val, (size_t)len), BFH_OK);
  }
  free(order);
  assert_int_equal(bfh_flush(db), BFH_OK);
}

static int json_value(unsigned i, int rare, char *val, size_t cap) {
  if (rare) return snprintf(val, cap, "{\"tag\":\"rare\",\"age\":5}");
  return snprintf(val, cap, "{\"tag\":\"t%u\",\"age\":%u,\"pad\":\"%s\"}", i % 100, i % 90,
                  "a value of some eighty bytes, as a record's");
}

/* Settled and indexed: AUTO plans with every table's leaf loaded and no compaction running
   (while leaves load or tables change, its estimates may choose otherwise than the test
   asks, as a slow build, TSan's, showed). */
static void settle(bfh_db *db) {
  err_t err;
  if (engine_lsm_wait_idle(bfh_internal_engine(db), &err) != BFH_OK) fail_msg("%s", err.msg);
  if (index_sync_loader_wait(bfh_internal_sync(db), NULL, &err) != BFH_OK) fail_msg("%s", err.msg);
}

/* The planner weighs the index's candidates by what this database's searches measured
   (search_plan.c candidate_ns), and a sanitizer's build measures them several times slower
   than they are: the mean is brought back to the planner's floor, where an unsanitized
   build's searches of this test put it (0.1 ns a candidate, most answered on the index's word),
   so that the plan the test asserts does not follow the build's speed. */
static void pin_candidate_cost(bfh_db *db) {
  for (int i = 0; i < 200; i++) standalone_note_validation(bfh_internal_standalone(db), 1000, 100);
}

static bfh_db *build_sized(const char *dir, size_t table_bytes) {
  bfh_options o;
  bfh_options_init(&o);
  o.memtable_bytes = 256 << 10;
  o.table_bytes = table_bytes;
  o.standalone_index = 1;
  o.attributes = attrs;
  o.attribute_count = 3;
  bfh_db *db = NULL;
  assert_int_equal(bfh_open(dir, &o, &db), BFH_OK);
  put_all(db, json_value);
  settle(db);
  return db;
}

static bfh_db *build(const char *dir) {
  return build_sized(dir, 512 << 10);
}

/* The keys i < NKEYS with i mod 100 == tag and i mod 90 == age. */
static unsigned count_meeting(unsigned tag, unsigned age) {
  unsigned n = 0;
  for (unsigned i = 0; i < NKEYS; i++) n += i % 100 == tag && i % 90 == age;
  return n;
}

static void test_standalone_narrows_an_and(void **state) {
  db_fixture_t *f = *state;
  f->db = build(f->dir);
  unsigned want = count_meeting(7, 17);
  assert_true(want > 0);
  /* Either child is the cover; the other's postings narrow it to the keys both name. */
  const char *ands[] = {"tag = 't7' AND age = 17", "age = 17 AND tag = 't7'"};
  for (size_t i = 0; i < 2; i++) {
    bfh_search_stats st = query_checked(f->db, ands[i], BFH_SEARCH_STANDALONE, want);
    assert_int_equal(st.method_used, BFH_SEARCH_STANDALONE);
    if (st.candidates != want)
      fail_msg("'%s': %llu candidates validated, want the %u both leaves name", ands[i],
               (unsigned long long)st.candidates, want);
  }
  /* An OR validates every key either names, each once. */
  unsigned either = 0;
  for (unsigned i = 0; i < NKEYS; i++) either += i % 100 == 7 || i % 90 == 17;
  bfh_search_stats st =
      query_checked(f->db, "tag = 't7' OR age = 17", BFH_SEARCH_STANDALONE, either);
  assert_int_equal(st.candidates, either);
  /* The cover is the rare tag; age >= 0 names every key, more postings than the leaf's share:
     it is read no further and holds for every candidate, so none is lost. */
  st = query_checked(f->db, "age >= 0 AND tag = 'rare'", BFH_SEARCH_STANDALONE, NRARE);
  assert_int_equal(st.candidates, NRARE);
  assert_true(st.entries_scanned < NKEYS / 2);
}

/* AUTO's stats for the rare term or value (held in a block or two of one table) and for an
   absent one: the tables answered both, the rare one by a few blocks, the absent one by no
   table read. */
static void answered_by_tables(bfh_search_stats rare, bfh_search_stats none) {
  if (rare.method_used == BFH_SEARCH_STANDALONE || rare.blocks_read == 0 || rare.blocks_read > 4)
    fail_msg("rare: AUTO ran %s and read %llu blocks", bfh_method_name(rare.method_used),
             (unsigned long long)rare.blocks_read);
  assert_int_not_equal(none.method_used, BFH_SEARCH_STANDALONE);
  assert_int_equal(none.tables_scanned, 0);
}

static void test_auto_weighs_the_index_against_the_tables(void **state) {
  db_fixture_t *f = *state;
  f->db = build(f->dir);
  /* A 1% term in random order: every table holds it, most of their blocks too; its 400
     candidates cost less than the tables. */
  bfh_search_stats st = query_checked(f->db, "tag = 't7'", BFH_SEARCH_AUTO, NKEYS / 100);
  if (st.method_used != BFH_SEARCH_STANDALONE)
    fail_msg("1%% term: AUTO ran %s", bfh_method_name(st.method_used));
  assert_int_equal(st.tables_scanned, 0);
  assert_int_equal(st.candidates, NKEYS / 100);
  /* The AND by AUTO validates only the keys both name, as STANDALONE does. */
  pin_candidate_cost(f->db);
  unsigned want = count_meeting(7, 17);
  st = query_checked(f->db, "tag = 't7' AND age = 17", BFH_SEARCH_AUTO, want);
  assert_int_equal(st.method_used, BFH_SEARCH_STANDALONE);
  assert_int_equal(st.candidates, want);
  /* The rare tag lives in a block or two of a full table: reading them costs less than 40
     gets. An absent term: the filters select no table, and nothing else is asked. */
  answered_by_tables(query_checked(f->db, "tag = 'rare'", BFH_SEARCH_AUTO, NRARE),
                     query_checked(f->db, "tag = 'none'", BFH_SEARCH_AUTO, 0));
  /* The newest K needs sequence numbers, which only the tables have. */
  assert_int_equal(bfh_query(f->db, "tag = 't7'", BFH_SEARCH_AUTO, 5, NULL, NULL, &st), BFH_OK);
  assert_int_not_equal(st.method_used, BFH_SEARCH_STANDALONE);
  assert_int_equal(st.results, 5);
}

/* The value val by method: its stats, and its keys equal to SCAN's (want results of them). */
static bfh_search_stats search_checked(bfh_db *db, const char *val, bfh_method method,
                                       unsigned want) {
  static got_t got, scan;
  bfh_search_stats st, sst;
  memset(&got, 0, sizeof got);
  memset(&scan, 0, sizeof scan);
  size_t len = strlen(val);
  assert_int_equal(bfh_search(db, val, len, method, on_key, &got, &st), BFH_OK);
  assert_int_equal(bfh_search(db, val, len, BFH_SEARCH_SCAN, on_key, &scan, &sst), BFH_OK);
  same_as_scan(val, method, &got, &scan, &st, want);
  return st;
}

/* Whole value number t: "vT" and padding, about a record's size. */
static const char *whole_value(unsigned t) {
  static char v[64];
  snprintf(v, sizeof v, "v%u, padded to some fifty bytes as a record", t);
  return v;
}

static int whole_value_of(unsigned i, int rare, char *val, size_t cap) {
  return snprintf(val, cap, "%s", rare ? "rare" : whole_value(i % 100));
}

/* Whole values, no attribute declared: NKEYS keys in random order, key i holding whole value
   i mod 100 (each value 1% of the keys, in every table), and half way NRARE keys holding
   "rare", put one after another in the middle of the key space. */
static bfh_db *build_whole(const char *dir) {
  bfh_options o;
  bfh_options_init(&o);
  o.memtable_bytes = 512 << 10;
  o.table_bytes = 64 << 10;
  o.standalone_index = 1;
  bfh_db *db = NULL;
  assert_int_equal(bfh_open(dir, &o, &db), BFH_OK);
  put_all(db, whole_value_of);
  settle(db);
  return db;
}

/* A whole value by AUTO over a database that keeps the stand-alone index: the index answers
   a value 1% of the keys hold, which every table's filter passes, and the tables a value
   clustered in a block or two, or one no filter passes. */
static void test_auto_weighs_the_index_for_a_whole_value(void **state) {
  db_fixture_t *f = *state;
  f->db = build_whole(f->dir);
  bfh_search_stats st = search_checked(f->db, whole_value(7), BFH_SEARCH_AUTO, NKEYS / 100);
  if (st.method_used != BFH_SEARCH_STANDALONE)
    fail_msg("1%% value: AUTO ran %s over %u tables", bfh_method_name(st.method_used),
             st.tables_live);
  assert_int_equal(st.tables_scanned, 0);
  assert_int_equal(st.candidates, NKEYS / 100);
  if (st.tables_live < 16) fail_msg("%u tables: the test wants at least 16", st.tables_live);
  answered_by_tables(search_checked(f->db, "rare", BFH_SEARCH_AUTO, NRARE),
                     search_checked(f->db, "none", BFH_SEARCH_AUTO, 0));
  /* STANDALONE, named, answers alike; LEAVES reads the tables. */
  st = search_checked(f->db, whole_value(7), BFH_SEARCH_STANDALONE, NKEYS / 100);
  assert_int_equal(st.method_used, BFH_SEARCH_STANDALONE);
  st = search_checked(f->db, whole_value(7), BFH_SEARCH_LEAVES, NKEYS / 100);
  assert_int_equal(st.method_used, BFH_SEARCH_LEAVES);
  assert_true(st.tables_scanned > 0);
}

/* A range whose cover takes many filter items, over many tables: selecting them would cost
   more than the stand-alone index's one seek and scan, so AUTO asks the index first and
   probes no filter; a range with more candidates than that selection is worth goes on to the
   filters and weighs the index after them, as before; an absent equality has one item and is
   answered by the filters. */
static void test_auto_asks_the_index_before_a_costly_selection(void **state) {
  db_fixture_t *f = *state;
  f->db = build_sized(f->dir, 32 << 10);
  bfh_db_stats ds;
  assert_int_equal(bfh_stats(f->db, &ds), BFH_OK);
  if (ds.tables < 40) fail_msg("%llu tables, want at least 40", (unsigned long long)ds.tables);
  /* 60 items: 0xf01-0xf0f and 0x10f0-0x10fe at level 0, the 16-code blocks between at
     level 4; no age is that high. */
  bfh_search_stats st = query_checked(f->db, "rank BETWEEN 3841 AND 4350", BFH_SEARCH_AUTO, 0);
  if (st.method_used != BFH_SEARCH_STANDALONE || st.leaf_probes != 0 || st.internal_probes != 0)
    fail_msg("absent range: AUTO ran %s after %llu leaf probes", bfh_method_name(st.method_used),
             (unsigned long long)st.leaf_probes);
  /* Ages 1-14, 14 items, 14 of every 90 keys: thousands of candidates, more than the selection
     is worth: the filters select, then the index is weighed against the tables. */
  unsigned want = 0;
  for (unsigned i = 0; i < NKEYS; i++) want += i % 90 >= 1 && i % 90 <= 14;
  st = query_checked(f->db, "rank BETWEEN 1 AND 14", BFH_SEARCH_AUTO, want + NRARE);
  assert_true(st.leaf_probes > 0);
  st = query_checked(f->db, "tag = 'none'", BFH_SEARCH_AUTO, 0);
  assert_int_not_equal(st.method_used, BFH_SEARCH_STANDALONE);
  assert_true(st.leaf_probes > 0 || st.internal_probes > 0);
}

/* The candidates the first trial may validate follow what this database's validations
   measured: a search of fewer than STANDALONE_COST_MIN_SAMPLE candidates tells nothing, each
   other moves the mean by an eighth of the difference, and the planner keeps the mean within
   a sixteenth and four times its prior (search_plan.c candidate_ns). */
static void test_the_budget_follows_the_measured_validations(void **state) {
  db_fixture_t *f = *state;
  f->db = build_sized(f->dir, 32 << 10);
  standalone_t *s = bfh_internal_standalone(f->db);
  search_ctx_t c = {bfh_internal_engine(f->db), bfh_internal_index(f->db), s, NULL};
  assert_true(standalone_candidate_ns(s) == 0); /* no search has validated yet */
  const size_t items = 60, written = 1, tables = 1000;
  uint64_t prior = search_standalone_first_budget(&c, items, written, 0, tables);
  assert_true(prior > 100);
  standalone_note_validation(s, STANDALONE_COST_MIN_SAMPLE - 1, 1);
  assert_true(standalone_candidate_ns(s) == 0);
  /* 100 candidates in 200 us: 2 us each, the first mean. */
  standalone_note_validation(s, 100, 200000);
  assert_true(standalone_candidate_ns(s) == 2000.0);
  uint64_t at2 = search_standalone_first_budget(&c, items, written, 0, tables);
  /* The prior is 11.1 us a candidate: 5.55 times as many fit (rounding aside). */
  if (at2 < prior * 11100 / 2000 - 1 || at2 > prior * 11100 / 2000 + 6)
    fail_msg("budget %llu at 2 us, %llu at the prior", (unsigned long long)at2,
             (unsigned long long)prior);
  /* 10 us each: the mean moves an eighth of the way, to 3 us. */
  standalone_note_validation(s, 10, 100000);
  assert_true(standalone_candidate_ns(s) == 3000.0);
  /* Ever cheaper validations: the planner stops at a sixteenth of the prior. */
  for (int i = 0; i < 200; i++) standalone_note_validation(s, 1000, 1000);
  uint64_t floor = search_standalone_first_budget(&c, items, written, 0, tables);
  if (floor < prior * 16 - 16 || floor > prior * 16 + 16)
    fail_msg("budget %llu at the floor, %llu at the prior", (unsigned long long)floor,
             (unsigned long long)prior);
  /* And the index's budget against the tables' bytes follows the same mean. */
  assert_true(search_standalone_budget(&c, 1 << 20) >= 16 * (uint64_t)((1 << 20) * 5.7 / 11100));
}

/* A range whose cover is one coarse item (no more items than leaves written) is still worth
   the index first when the selection would read the tables' range filters: two pieces over
   1,000 tables cost more than a seek; without pieces to read, the selection comes first. */
static void test_range_filter_pieces_weigh_the_selection(void **state) {
  db_fixture_t *f = *state;
  f->db = build_sized(f->dir, 32 << 10);
  search_ctx_t c = {bfh_internal_engine(f->db), bfh_internal_index(f->db),
                    bfh_internal_standalone(f->db), NULL};
  assert_true(search_standalone_first_budget(&c, 1, 1, 0, 1000) == 0);
  uint64_t two = search_standalone_first_budget(&c, 1, 1, 2, 1000);
  /* 2 x 1,000 pieces at 5.5 us and 1,000 items at 150 ns, over 11.1 us a candidate. */
  if (two < 1000 || two > 1010) fail_msg("budget %llu for 2 pieces", (unsigned long long)two);
  assert_true(search_standalone_first_budget(&c, 1, 1, 2, 1) == 0); /* one table: select */
}

/* Past the selection's budget, the first trial still answers while its candidates cost less
   than the selection plus the tables they are expected to be in, each read by a map chunk
   and a block: with 60 items over 1,000 tables at the prior 11.1 us a candidate, the
   selection alone is worth 810 candidates; 2,000 fall in about 865 tables, worth 30 ms more,
   and are answered; 5,000 fall in about 993, and are not. */
static void test_the_first_trial_counts_the_tables_selected(void **state) {
  db_fixture_t *f = *state;
  f->db = build_sized(f->dir, 32 << 10);
  search_ctx_t c = {bfh_internal_engine(f->db), bfh_internal_index(f->db),
                    bfh_internal_standalone(f->db), NULL};
  const size_t items = 60, tables = 1000;
  uint64_t budget = search_standalone_first_budget(&c, items, 1, 0, tables);
  if (budget < 805 || budget > 815) fail_msg("budget %llu", (unsigned long long)budget);
  assert_true(search_standalone_first_worth(&c, items, 0, tables, budget));
  assert_true(search_standalone_first_worth(&c, items, 0, tables, 2000));
  assert_false(search_standalone_first_worth(&c, items, 0, tables, 5000));
  /* The limit: every table selected, (9 ms + 1,000 x 6 KiB x 5.7 ns) / 11.1 us. */
  uint64_t limit = search_standalone_first_limit(&c, items, 0, tables);
  if (limit < 3950 || limit > 3980) fail_msg("limit %llu", (unsigned long long)limit);
  assert_false(search_standalone_first_worth(&c, items, 0, tables, limit + 1));
  /* One table: a candidate selects it. */
  assert_true(search_standalone_first_worth(&c, items, 0, 1, 1));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_standalone_narrows_an_and, setup, db_fixture_teardown),
      cmocka_unit_test_setup_teardown(test_range_filter_pieces_weigh_the_selection, setup,
                                      db_fixture_teardown),
      cmocka_unit_test_setup_teardown(test_auto_asks_the_index_before_a_costly_selection, setup,
                                      db_fixture_teardown),
      cmocka_unit_test_setup_teardown(test_auto_weighs_the_index_against_the_tables, setup,
                                      db_fixture_teardown),
      cmocka_unit_test_setup_teardown(test_the_budget_follows_the_measured_validations, setup,
                                      db_fixture_teardown),
      cmocka_unit_test_setup_teardown(test_the_first_trial_counts_the_tables_selected, setup,
                                      db_fixture_teardown),
      cmocka_unit_test_setup_teardown(test_auto_weighs_the_index_for_a_whole_value, setup,
                                      db_fixture_teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

/* Tests of experiments/ycsb_oracle.c's check of the newest K (workload D's `wrong`): the
 * answer the oracle itself would give passes; an answer in the wrong order, one that leaves out
 * a newer holder, one that holds a key of another value and one with a key twice fail. With
 * zeroed (RocksDB, whose bottom level holds sequence number 0), some holders newest first and
 * then the smallest keys of the holders left, ascending, pass; skipping the smallest key
 * left fails. The records are the synthetic source's, their values set here by hand, so
 * every expected answer is computed from the writes the test made. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "bfh.h"
#include "experiments/ycsb_oracle.h"

#define N 2000
#define VALUES 4 /* record r holds value r % VALUES after the load */
#define V 2      /* the value asked */
#define K 10

typedef struct fixture {
  ycsb_source_t s;
  ycsb_oracle_t o;
  uint64_t holders[N]; /* of V, newest first */
  size_t nholders;
} fixture_t;

static int cmp_newest(const void *a, const void *b, void *o) {
  const uint64_t *w = ((const ycsb_oracle_t *)o)->written;
  const uint64_t x = w[*(const uint64_t *)a], y = w[*(const uint64_t *)b];
  return x < y ? 1 : x > y ? -1 : 0;
}

/* Loads N records, then rewrites every 7th record with V (newer than the load) and every 11th
   record holding V with another value, so that V's newest holders are not the load's order. */
static int setup(void **state) {
  fixture_t *f = calloc(1, sizeof *f);
  assert_non_null(f);
  assert_int_equal(ycsb_source_open(&f->s, 0, N, 1), BFH_OK);
  assert_true(f->s.nvalues >= VALUES);
  assert_int_equal(ycsb_oracle_init(&f->o, &f->s), BFH_OK);
  for (uint64_t r = 0; r < N; r++)
    assert_int_equal(ycsb_oracle_set(&f->o, r, r % VALUES, 1), BFH_OK);
  for (uint64_t r = 3; r < N; r += 7) assert_int_equal(ycsb_oracle_set(&f->o, r, V, 0), BFH_OK);
  for (uint64_t r = 2; r < N; r += 11 * VALUES)
    assert_int_equal(ycsb_oracle_set(&f->o, r, V + 1, 0), BFH_OK);
  for (uint64_t r = 0; r < N; r++)
    if (f->o.value[r] == V) f->holders[f->nholders++] = r;
  qsort_r(f->holders, f->nholders, sizeof f->holders[0], cmp_newest, &f->o);
  assert_true(f->nholders > 2 * K);
  *state = f;
  return 0;
}

static int teardown(void **state) {
  fixture_t *f = *state;
  ycsb_oracle_release(&f->o);
  ycsb_source_close(&f->s);
  free(f);
  return 0;
}

/* Reports records answer[0, n) as a search would, in that order, to the callback the driver
   gives a query (ycsb_collect_key), then asks the oracle of the keys collected. */
static int check(fixture_t *f, const uint64_t *answer, size_t n, int zeroed) {
  uint64_t order[K];
  ycsb_check_t c = {
      .o = &f->o, .kind = YCSB_CHECK_VALUE, .vid = f->s.vid[V], .order = order, .k = K};
  ycsb_keys_t keys = {0};
  f->o.check++;
  for (size_t i = 0; i < n; i++) {
    char key[YCSB_MAX_KEY];
    const size_t len = ycsb_source_key(&f->s, answer[i], key);
    assert_int_equal(ycsb_collect_key(&keys, key, len), 0);
  }
  assert_int_equal(ycsb_check_collected(&c, &keys), BFH_OK);
  assert_int_equal(keys.len, 0);
  ycsb_keys_release(&keys);
  assert_int_equal(c.found + c.bad > 0, n > 0);
  return ycsb_oracle_newest_ok(&f->o, &c, zeroed);
}

static void test_exact_answer_passes(void **state) {
  fixture_t *f = *state;
  assert_true(check(f, f->holders, K, 0));
  assert_true(check(f, f->holders, K, 1));
}

static void test_wrong_answers_fail(void **state) {
  fixture_t *f = *state;
  uint64_t a[K + 1];
  memcpy(a, f->holders, K * sizeof a[0]);
  uint64_t t = a[3];
  a[3] = a[4], a[4] = t;
  assert_false(check(f, a, K, 0));              /* order */
  assert_false(check(f, f->holders + 1, K, 0)); /* the newest left out */
  memcpy(a, f->holders, K * sizeof a[0]);
  a[K - 1] = 1; /* a key of another value: record 1 keeps value 1 */
  assert_int_equal(f->o.value[a[K - 1]], 1);
  assert_false(check(f, a, K, 0));
  assert_false(check(f, a, K, 1));
  memcpy(a, f->holders, K * sizeof a[0]);
  a[K - 1] = a[0]; /* twice */
  assert_false(check(f, a, K, 0));
  assert_false(check(f, a, K, 1));
  assert_false(check(f, f->holders, K - 1, 0)); /* one short */
  memcpy(a, f->holders, K * sizeof a[0]);
  a[K] = f->holders[K]; /* one past K */
  assert_false(check(f, a, K + 1, 0));
}

static int cmp_key(const void *a, const void *b, void *s) {
  char ka[YCSB_MAX_KEY], kb[YCSB_MAX_KEY];
  const size_t na = ycsb_source_key(s, *(const uint64_t *)a, ka);
  const size_t nb = ycsb_source_key(s, *(const uint64_t *)b, kb);
  return ycsb_term_cmp(ka, na, kb, nb);
}

/* The newest 3, then the holders left in key order: all of them, or the smallest skipped. */
static void test_zeroed_answers(void **state) {
  fixture_t *f = *state;
  uint64_t rest[N], a[K];
  const size_t newest = 3, nrest = f->nholders - newest;
  memcpy(rest, f->holders + newest, nrest * sizeof rest[0]);
  qsort_r(rest, nrest, sizeof rest[0], cmp_key, &f->s);
  memcpy(a, f->holders, newest * sizeof a[0]);
  memcpy(a + newest, rest, (K - newest) * sizeof a[0]);
  assert_true(check(f, a, K, 1));
  assert_false(check(f, a, K, 0)); /* without zeroing the order is the writes' */
  memcpy(a + newest, rest + 1, (K - newest) * sizeof a[0]);
  assert_false(check(f, a, K, 1));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_exact_answer_passes, setup, teardown),
      cmocka_unit_test_setup_teardown(test_wrong_answers_fail, setup, teardown),
      cmocka_unit_test_setup_teardown(test_zeroed_answers, setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

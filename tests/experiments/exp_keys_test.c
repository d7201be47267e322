/* Tests of experiments/exp_keys.c: the experiments' `wrong` compares the keys a search found
 * with the set of entries that hold the value, not their counts. Each workload (the paper's
 * keys and the fixed-width ones, exact and drawn values) is driven through one body: the true
 * set is right in any order; a set with one key missing, one key in place of another (of
 * another value, twice, of no entry, or written with a leading zero), same count, is wrong. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "experiments/exp.h"

#define N 2000

/* The keys of the entries holding value_id, in descending entry order (the order a search
   reports them in is any); their ids into ids (N of room), their count returned. */
static size_t truth(const workload_t *w, uint64_t value_id, uint64_t *ids) {
  size_t n = 0;
  for (uint64_t j = N; j-- > 0;)
    if (workload_value_id(w, j) == value_id) ids[n++] = j;
  return n;
}

static void add_id(exp_keys_t *k, const workload_t *w, uint64_t id) {
  char key[WORKLOAD_MAX_BYTES];
  size_t len = workload_key(w, id, key);
  assert_int_equal(exp_keys_add(k, key, len), 0);
}

/* An entry whose value is not value_id. */
static uint64_t other_entry(const workload_t *w, uint64_t value_id) {
  for (uint64_t j = 0; j < N; j++)
    if (workload_value_id(w, j) != value_id) return j;
  fail_msg("every entry holds value %llu", (unsigned long long)value_id);
  return 0;
}

/* How the found set differs from the truth in one case. */
typedef enum change {
  SAME,          /* the truth itself */
  MISS_ONE,      /* one key missing (count differs) */
  SWAP_OTHER,    /* one key replaced by the key of an entry with another value */
  SWAP_TWICE,    /* one key replaced by another key of the set, found twice */
  SWAP_NO_ENTRY, /* one key replaced by a key no entry has (id >= n) */
  SWAP_SPELLING, /* one key replaced by its own id written with a leading zero */
  EXTRA_ONE      /* one key too many (count differs) */
} change_t;

/* The verdict of exp_keys_wrong on the keys of value_id changed by c. */
static int verdict(const workload_t *w, uint64_t value_id, change_t c, char *why, size_t cap) {
  static uint64_t ids[N];
  size_t n = truth(w, value_id, ids);
  uint64_t expect = n;
  exp_keys_t k;
  memset(&k, 0, sizeof k);
  exp_keys_reset(&k);
  for (size_t i = 0; i < n; i++) {
    if (i == 0 && c == MISS_ONE) continue;
    if (i == 0 && c == SWAP_OTHER) {
      add_id(&k, w, other_entry(w, value_id));
    } else if (i == 0 && c == SWAP_TWICE) {
      add_id(&k, w, ids[1]);
    } else if (i == 0 && c == SWAP_NO_ENTRY) {
      add_id(&k, w, N + 5); /* formatted like a key, but past the last entry */
    } else if (i == 0 && c == SWAP_SPELLING) {
      char key[WORKLOAD_MAX_BYTES + 1], again[WORKLOAD_MAX_BYTES + 2];
      size_t len = workload_key(w, ids[0], key);
      size_t d = strcspn(key, "0123456789"); /* the first digit */
      snprintf(again, sizeof again, "%.*s0%.*s", (int)d, key, (int)(len - d), key + d);
      exp_keys_add(&k, again, len + 1);
    } else {
      add_id(&k, w, ids[i]);
    }
  }
  if (c == EXTRA_ONE) add_id(&k, w, other_entry(w, value_id));
  int wrong = exp_keys_wrong(&k, w, value_id, expect, why, cap);
  exp_keys_release(&k);
  return wrong;
}

typedef struct workload_case {
  const char *name;
  workload_format_t format;
  workload_values_t values;
  double domain_pct;
} workload_case_t;

static const workload_case_t CASES[] = {
    {"paper keys, exact values, 10% domain", WORKLOAD_FORMAT_PAPER, WORKLOAD_VALUES_EXACT, 10},
    {"fixed keys, exact values, 5% domain", WORKLOAD_FORMAT_FIXED, WORKLOAD_VALUES_EXACT, 5},
    {"paper keys, drawn values, 2% domain", WORKLOAD_FORMAT_PAPER, WORKLOAD_VALUES_DRAWN, 2},
};

static void init_case(workload_t *w, const workload_case_t *c) {
  workload_config_t cfg;
  workload_config_init(&cfg);
  cfg.n = N;
  cfg.format = c->format;
  cfg.values = c->values;
  cfg.domain_pct = c->domain_pct;
  assert_int_equal(workload_init(w, &cfg), 0);
}

/* A value of w held by at least two entries (so that a key can be found twice in the set). */
static uint64_t shared_value(const workload_t *w) {
  static uint64_t ids[N];
  for (uint64_t v = 0; v < w->domain; v++)
    if (truth(w, v, ids) >= 2) return v;
  fail_msg("no value held twice");
  return 0;
}

static void test_exp_keys_true_set_is_right(void **state) {
  (void)state;
  for (size_t i = 0; i < sizeof CASES / sizeof CASES[0]; i++) {
    workload_t w;
    init_case(&w, &CASES[i]);
    char why[160];
    int wrong = verdict(&w, shared_value(&w), SAME, why, sizeof why);
    if (wrong != 0) fail_msg("%s: the true set judged wrong: %s", CASES[i].name, why);
  }
}

/* The case the counts could not tell: as many keys as hold the value, one of them another. */
static void test_exp_keys_same_count_other_key_is_wrong(void **state) {
  (void)state;
  const change_t swaps[] = {SWAP_OTHER, SWAP_TWICE, SWAP_NO_ENTRY, SWAP_SPELLING};
  const char *names[] = {"a key of another value", "a key twice", "a key of no entry",
                         "a key with a leading zero"};
  for (size_t i = 0; i < sizeof CASES / sizeof CASES[0]; i++) {
    workload_t w;
    init_case(&w, &CASES[i]);
    for (size_t s = 0; s < sizeof swaps / sizeof swaps[0]; s++) {
      char why[160];
      int wrong = verdict(&w, shared_value(&w), swaps[s], why, sizeof why);
      if (wrong != 1)
        fail_msg("%s: one key missed and %s instead (same count): judged %d", CASES[i].name,
                 names[s], wrong);
      assert_true(why[0] != '\0'); /* the difference is named */
    }
  }
}

static void test_exp_keys_other_count_is_wrong(void **state) {
  (void)state;
  for (size_t i = 0; i < sizeof CASES / sizeof CASES[0]; i++) {
    workload_t w;
    init_case(&w, &CASES[i]);
    assert_int_equal(verdict(&w, shared_value(&w), MISS_ONE, NULL, 0), 1);
    assert_int_equal(verdict(&w, shared_value(&w), EXTRA_ONE, NULL, 0), 1);
  }
}

/* An absent value (id >= n, never stored): no key is right, any key is wrong. */
static void test_exp_keys_absent_value(void **state) {
  (void)state;
  workload_t w;
  init_case(&w, &CASES[0]);
  exp_keys_t k;
  memset(&k, 0, sizeof k);
  exp_keys_reset(&k);
  assert_int_equal(exp_keys_wrong(&k, &w, N + 1, 0, NULL, 0), 0);
  add_id(&k, &w, 7);
  assert_int_equal(exp_keys_wrong(&k, &w, N + 1, 0, NULL, 0), 1);
  /* Reset, the collector is empty again and reuses its buffer. */
  exp_keys_reset(&k);
  assert_int_equal(k.n, 0);
  assert_int_equal(exp_keys_wrong(&k, &w, N + 1, 0, NULL, 0), 0);
  exp_keys_release(&k);
  exp_keys_release(NULL);
}

/* A key longer than any workload key is counted, not stored, and makes the set wrong. */
static void test_exp_keys_long_key_is_wrong(void **state) {
  (void)state;
  workload_t w;
  init_case(&w, &CASES[0]);
  char big[300];
  memset(big, 'K', sizeof big);
  exp_keys_t k;
  memset(&k, 0, sizeof k);
  assert_int_equal(exp_keys_add(&k, big, sizeof big), 0);
  assert_int_equal(k.n, 1);
  assert_int_equal(k.bad, 1);
  assert_int_equal(exp_keys_wrong(&k, &w, 0, 1, NULL, 0), 1);
  exp_keys_release(&k);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_exp_keys_true_set_is_right),
      cmocka_unit_test(test_exp_keys_same_count_other_key_is_wrong),
      cmocka_unit_test(test_exp_keys_other_count_is_wrong),
      cmocka_unit_test(test_exp_keys_absent_value),
      cmocka_unit_test(test_exp_keys_long_key_is_wrong),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

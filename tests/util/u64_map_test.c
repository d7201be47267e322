/* Tests of u64_map (util/u64_map.h) against an oracle: a universe of distinct keys (0, small
 * numbers, neighbours, random 64-bit values) and, per key, whether it is present and with
 * which value. Random puts, replacements and removals (fixed seeds) grow the map from empty
 * through many doublings and shrink it back; after every operation the key's lookup, and
 * periodically every key's lookup, the count and a full iteration, must agree with the oracle.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "util/random.h"
#include "util/status.h"
#include "util/u64_map.h"

#define SEED 0x6d6170ull

typedef struct oracle {
  uint64_t *keys; /* the universe: distinct */
  uint64_t *values;
  uint8_t *present;
  size_t n, count;
} oracle_t;

/* A universe of n distinct keys (n < 2^20): 0, 1..n/4 (dense small ids, like table numbers),
   multiples of 2^32 (keys that differ only in their high half) and random ones (random high
   44 bits over the key's index in the low 20, so that the oracle finds it at once). */
static void oracle_init(oracle_t *o, size_t n, rng_t *r) {
  assert_true(n < (1u << 20));
  o->keys = calloc(n, sizeof *o->keys);
  o->values = calloc(n, sizeof *o->values);
  o->present = calloc(n, 1);
  assert_non_null(o->keys);
  assert_non_null(o->values);
  assert_non_null(o->present);
  o->n = n;
  o->count = 0;
  for (size_t i = 0; i < n; i++) {
    if (i < n / 4)
      o->keys[i] = i; /* 0 included */
    else if (i < n / 2)
      o->keys[i] = (uint64_t)i << 32;
    else
      o->keys[i] = (rng_next(r) & ~(uint64_t)0xfffff) | i; /* i >= n/2: none of the above */
  }
}

static void oracle_release(oracle_t *o) {
  free(o->keys);
  free(o->values);
  free(o->present);
}

/* Every key's lookup, the count and one full iteration agree with the oracle. */
static void check_all(const u64_map_t *m, const oracle_t *o) {
  assert_int_equal(u64_map_count(m), o->count);
  for (size_t i = 0; i < o->n; i++) {
    uint64_t v = 0xdeadull;
    int got = u64_map_get(m, o->keys[i], &v);
    assert_int_equal(got, o->present[i]);
    if (got) assert_int_equal(v, o->values[i]);
  }
  /* Iteration: every present key once with its value, nothing else. */
  uint8_t *seen = calloc(o->n ? o->n : 1, 1);
  assert_non_null(seen);
  size_t pos = 0, walked = 0;
  uint64_t k, v;
  while (u64_map_next(m, &pos, &k, &v)) {
    /* the oracle's index of k, from the universe's layout */
    size_t i = k < o->n / 4               ? (size_t)k
               : (k & 0xffffffffull) == 0 ? (size_t)(k >> 32)
                                          : (size_t)(k & 0xfffff);
    assert_true(i < o->n);
    assert_int_equal(o->keys[i], k);
    assert_true(o->present[i]);
    assert_false(seen[i]);
    assert_int_equal(v, o->values[i]);
    seen[i] = 1;
    walked++;
  }
  assert_int_equal(walked, o->count);
  free(seen);
  assert_true(u64_map_size_in_bytes(m) >=
              2 * (o->count - (o->present[0] ? 1 : 0)) * sizeof(u64_map_slot_t));
}

/* ops random operations over a universe of n keys; inserting is favoured while grow says so,
   removing otherwise. */
static void run(u64_map_t *m, oracle_t *o, rng_t *r, size_t ops, int grow) {
  for (size_t t = 0; t < ops; t++) {
    size_t i = (size_t)rng_below(r, o->n);
    uint64_t key = o->keys[i], v = 0;
    unsigned op = (unsigned)rng_below(r, 10);
    int insert = grow ? op < 7 : op < 3;
    if (insert) {
      uint64_t value = rng_next(r);
      assert_int_equal(u64_map_put(m, key, value), ST_OK);
      o->count += !o->present[i];
      o->present[i] = 1;
      o->values[i] = value;
    } else {
      int had = u64_map_del(m, key, &v);
      assert_int_equal(had, o->present[i]);
      if (had) assert_int_equal(v, o->values[i]);
      o->count -= o->present[i];
      o->present[i] = 0;
    }
    int got = u64_map_get(m, key, &v);
    assert_int_equal(got, o->present[i]);
    if (got) assert_int_equal(v, o->values[i]);
    if (t % 997 == 0) check_all(m, o);
  }
  check_all(m, o);
}

static void test_u64_map_random_against_oracle(void **state) {
  (void)state;
  static const size_t universes[] = {1, 7, 100, 4000, 40000};
  for (size_t u = 0; u < sizeof universes / sizeof universes[0]; u++) {
    rng_t r;
    rng_init(&r, SEED + u);
    oracle_t o;
    oracle_init(&o, universes[u], &r);
    u64_map_t m;
    u64_map_init(&m);
    check_all(&m, &o); /* empty */
    size_t ops = universes[u] * 6 + 100;
    run(&m, &o, &r, ops, 1); /* grows: many doublings */
    run(&m, &o, &r, ops, 0); /* shrinks: removals shift runs back */
    run(&m, &o, &r, ops, 1); /* and again, over the holes left */
    /* Remove what is left, one by one. */
    for (size_t i = 0; i < o.n; i++) {
      if (!o.present[i]) continue;
      assert_int_equal(u64_map_del(&m, o.keys[i], NULL), 1);
      o.present[i] = 0;
      o.count--;
    }
    check_all(&m, &o);
    assert_int_equal(u64_map_count(&m), 0);
    u64_map_release(&m);
    oracle_release(&o);
  }
}

/* A reserve makes room: the inserts it covers neither fail nor move the table. */
static void test_u64_map_reserve_holds(void **state) {
  (void)state;
  u64_map_t m;
  u64_map_init(&m);
  assert_int_equal(u64_map_reserve(&m, 1000), ST_OK);
  const u64_map_slot_t *slots = m.slots;
  size_t cap = m.cap;
  assert_true(cap >= 2000);
  for (uint64_t k = 0; k < 1000; k++) assert_int_equal(u64_map_put(&m, k * 7919, k), ST_OK);
  assert_ptr_equal(m.slots, slots);
  assert_int_equal(m.cap, cap);
  assert_int_equal(u64_map_count(&m), 1000);
  /* Replacing at the limit does not grow either. */
  for (uint64_t k = 0; k < 1000; k++) assert_int_equal(u64_map_put(&m, k * 7919, k + 1), ST_OK);
  assert_ptr_equal(m.slots, slots);
  for (uint64_t k = 0; k < 1000; k++) {
    uint64_t v;
    assert_true(u64_map_get(&m, k * 7919, &v));
    assert_int_equal(v, k + 1);
  }
  u64_map_release(&m);
  u64_map_release(NULL);
}

/* The key 0 and the largest key are keys like any other. */
static void test_u64_map_edge_keys(void **state) {
  (void)state;
  u64_map_t m;
  u64_map_init(&m);
  uint64_t v = 5;
  assert_false(u64_map_get(&m, 0, &v));
  assert_int_equal(v, 5); /* untouched on a miss */
  assert_false(u64_map_del(&m, 0, NULL));
  assert_false(u64_map_del(&m, 12, NULL)); /* on an empty map */
  assert_int_equal(u64_map_put(&m, 0, 11), ST_OK);
  assert_int_equal(u64_map_put(&m, UINT64_MAX, 12), ST_OK);
  assert_int_equal(u64_map_count(&m), 2);
  assert_true(u64_map_get(&m, 0, &v));
  assert_int_equal(v, 11);
  assert_true(u64_map_get(&m, UINT64_MAX, &v));
  assert_int_equal(v, 12);
  assert_int_equal(u64_map_put(&m, 0, 13), ST_OK); /* replaced */
  assert_int_equal(u64_map_count(&m), 2);
  assert_true(u64_map_del(&m, 0, &v));
  assert_int_equal(v, 13);
  assert_false(u64_map_get(&m, 0, NULL));
  assert_int_equal(u64_map_count(&m), 1);
  size_t pos = 0;
  uint64_t k;
  assert_true(u64_map_next(&m, &pos, &k, &v));
  assert_true(k == UINT64_MAX && v == 12);
  assert_false(u64_map_next(&m, &pos, &k, &v));
  u64_map_release(&m);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_u64_map_random_against_oracle),
      cmocka_unit_test(test_u64_map_reserve_holds),
      cmocka_unit_test(test_u64_map_edge_keys),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

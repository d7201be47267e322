/* block_memo_t: blocks kept by (table number, block index), never two for one pair, none past
 * BLOCK_MEMO_MAX_BYTES, and their first-of-key matches copied and found by key; or only the
 * matches' values.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "filters/blocked_filter.h"
#include "lsm/block_memo.h"

/* block_memo_first of a key given as a string, with its value's bytes in *val. */
static const block_memo_match_t *first(block_memo_t *m, uint64_t number, const char *key,
                                       const uint8_t **val) {
  return block_memo_first(m, number, key, strlen(key), blocked_filter_key_hash(key, strlen(key)),
                          val);
}

static void test_block_memo_keyed_by_table_and_block(void **state) {
  (void)state;
  block_memo_t m;
  block_memo_init(&m);
  uint8_t a[100], b[200];
  memset(a, 'a', sizeof a);
  memset(b, 'b', sizeof b);
  assert_null(block_memo_get(&m, 7, 0));
  for (uint32_t i = 0; i < 1000; i++) block_memo_put(&m, 7, i, a, sizeof a, NULL, 0); /* grows */
  block_memo_put(&m, 8, 0, b, sizeof b, NULL, 0);
  block_memo_put(&m, 7, 0, b, sizeof b, NULL, 0); /* kept already: unchanged */
  assert_int_equal(m.n, 1001);
  const block_memo_slot_t *s = block_memo_get(&m, 7, 0);
  assert_non_null(s);
  assert_int_equal(s->size, sizeof a);
  assert_memory_equal(s->data, a, sizeof a);
  s = block_memo_get(&m, 8, 0);
  assert_non_null(s);
  assert_int_equal(s->size, sizeof b);
  assert_memory_equal(s->data, b, sizeof b);
  assert_null(block_memo_get(&m, 8, 1));
  assert_null(block_memo_get(&m, 9, 0));
  assert_int_equal(m.hits, 2);
  block_memo_release(&m);
  block_memo_release(&m); /* twice is fine */
}

static void test_block_memo_matches_copied(void **state) {
  (void)state;
  block_memo_t m;
  block_memo_init(&m);
  uint8_t block[64];
  for (int i = 0; i < 64; i++) block[i] = (uint8_t)i;
  char k1[] = "key-one", k2[] = "key-two";
  block_memo_match_t in[3] = {
      {(uint8_t *)k1, strlen(k1), 5, 10, 4},
      {(uint8_t *)k2, strlen(k2), 6, 60, 8}, /* past the block: left out */
      {(uint8_t *)k2, strlen(k2), 7, 20, 0},
  };
  block_memo_put(&m, 3, 1, block, sizeof block, in, 3);
  memset(k1, 'x', strlen(k1)); /* the memo holds its own copies */
  const block_memo_slot_t *s = block_memo_get(&m, 3, 1);
  assert_non_null(s);
  assert_int_equal(s->nmatches, 2);
  const uint8_t *val = NULL;
  const block_memo_match_t *x = first(&m, 3, "key-one", &val);
  assert_non_null(x);
  assert_int_equal(x->seq, 5);
  assert_int_equal(x->val_off, 10);
  assert_int_equal(x->val_len, 4);
  assert_ptr_equal(val, s->data + 10);
  x = first(&m, 3, "key-two", &val);
  assert_non_null(x);
  assert_int_equal(x->seq, 7);
  assert_null(first(&m, 3, "key-on", &val));
  assert_null(first(&m, 3, "xxxxxxx", &val));
  assert_null(first(&m, 4, "key-one", &val)); /* another table's */
  block_memo_release(&m);
}

/* A slot of values only: the matches' value bytes, packed, their val_off moved to them; not
   whole, so a get that must seek reads the block; the bytes counted are the values'. */
static void test_block_memo_values_only(void **state) {
  (void)state;
  block_memo_t m;
  block_memo_init(&m);
  uint8_t block[64];
  for (int i = 0; i < 64; i++) block[i] = (uint8_t)i;
  char k1[] = "key-one", k2[] = "key-two", k3[] = "key-three";
  block_memo_match_t in[3] = {
      {(uint8_t *)k1, strlen(k1), 5, 40, 4},
      {(uint8_t *)k2, strlen(k2), 6, 60, 8}, /* past the block: left out */
      {(uint8_t *)k3, strlen(k3), 7, 10, 3},
  };
  block_memo_put_values(&m, 3, 1, block, sizeof block, in, 3);
  const block_memo_slot_t *s = block_memo_get(&m, 3, 1);
  assert_non_null(s);
  assert_int_equal(s->whole, 0);
  assert_int_equal(s->size, 0);
  assert_int_equal(s->nmatches, 2);
  assert_int_equal(m.bytes, 4 + 3);
  const uint8_t *val = NULL;
  const block_memo_match_t *x = first(&m, 3, "key-one", &val);
  assert_non_null(x);
  assert_int_equal(x->seq, 5);
  assert_int_equal(x->val_len, 4);
  assert_memory_equal(val, block + 40, 4);
  x = first(&m, 3, "key-three", &val);
  assert_non_null(x);
  assert_int_equal(x->val_len, 3);
  assert_memory_equal(val, block + 10, 3);
  block_memo_put(&m, 3, 1, block, sizeof block, in, 3); /* kept already: unchanged */
  assert_int_equal(block_memo_get(&m, 3, 1)->whole, 0);
  block_memo_put(&m, 3, 2, block, sizeof block, in, 3);
  assert_int_equal(block_memo_get(&m, 3, 2)->whole, 1);
  assert_int_equal(block_memo_get(&m, 3, 2)->size, sizeof block);
  block_memo_release(&m);
}

/* Matches of many blocks of two tables, one key in both: each is found in its own table with
   its own value, however often the slots and keys have grown since it was kept. */
static void test_block_memo_first_of_many(void **state) {
  (void)state;
  block_memo_t m;
  block_memo_init(&m);
  enum { BLOCKS = 300, PER = 3 };
  uint8_t block[32];
  for (int i = 0; i < 32; i++) block[i] = (uint8_t)i;
  char keys[BLOCKS * PER][24];
  for (uint64_t number = 1; number <= 2; number++) {
    for (uint32_t b = 0; b < BLOCKS; b++) {
      block_memo_match_t in[PER];
      for (int i = 0; i < PER; i++) {
        char *k = keys[b * PER + i];
        snprintf(k, sizeof keys[0], "key%u.%d", b, i);
        in[i] = (block_memo_match_t){(uint8_t *)k, strlen(k), number, (uint32_t)(number * 8 + i), 1};
      }
      if (b % 2)
        block_memo_put(&m, number, b, block, sizeof block, in, PER);
      else
        block_memo_put_values(&m, number, b, block, sizeof block, in, PER);
    }
  }
  assert_int_equal(m.kn, 2 * BLOCKS * PER);
  for (uint64_t number = 1; number <= 2; number++)
    for (int i = 0; i < BLOCKS * PER; i++) {
      const uint8_t *val = NULL;
      const block_memo_match_t *x = first(&m, number, keys[i], &val);
      assert_non_null(x);
      assert_int_equal(x->seq, number);
      assert_int_equal(*val, number * 8 + i % PER); /* block[j] == j */
    }
  assert_null(first(&m, 3, keys[0], NULL));
  block_memo_release(&m);
}

static void test_block_memo_bounded(void **state) {
  (void)state;
  block_memo_t m;
  block_memo_init(&m);
  size_t big = 1u << 20;
  uint8_t *buf = calloc(1, big);
  assert_non_null(buf);
  for (uint32_t i = 0; i < 20; i++) block_memo_put(&m, 1, i, buf, big, NULL, 0);
  assert_true(m.bytes <= BLOCK_MEMO_MAX_BYTES);
  assert_int_equal(m.n, BLOCK_MEMO_MAX_BYTES / big);
  assert_null(block_memo_get(&m, 1, 19)); /* not kept: a get reads it from the file */
  block_memo_release(&m);
  free(buf);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_block_memo_keyed_by_table_and_block),
      cmocka_unit_test(test_block_memo_matches_copied),
      cmocka_unit_test(test_block_memo_values_only),
      cmocka_unit_test(test_block_memo_first_of_many),
      cmocka_unit_test(test_block_memo_bounded),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

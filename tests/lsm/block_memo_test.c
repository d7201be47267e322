/* block_memo_t: blocks kept by (table number, block index), never two for one pair, and none
 * past BLOCK_MEMO_MAX_BYTES.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "lsm/block_memo.h"

static void test_block_memo_keyed_by_table_and_block(void **state) {
  (void)state;
  block_memo_t m;
  block_memo_init(&m);
  uint8_t a[100], b[200];
  memset(a, 'a', sizeof a);
  memset(b, 'b', sizeof b);
  size_t n;
  assert_null(block_memo_get(&m, 7, 0, &n));
  for (uint32_t i = 0; i < 1000; i++) block_memo_put(&m, 7, i, a, sizeof a); /* grows */
  block_memo_put(&m, 8, 0, b, sizeof b);
  block_memo_put(&m, 7, 0, b, sizeof b); /* kept already: unchanged */
  assert_int_equal(m.n, 1001);
  const uint8_t *p = block_memo_get(&m, 7, 0, &n);
  assert_non_null(p);
  assert_int_equal(n, sizeof a);
  assert_memory_equal(p, a, sizeof a);
  p = block_memo_get(&m, 8, 0, &n);
  assert_non_null(p);
  assert_int_equal(n, sizeof b);
  assert_memory_equal(p, b, sizeof b);
  assert_null(block_memo_get(&m, 8, 1, &n));
  assert_null(block_memo_get(&m, 9, 0, &n));
  assert_int_equal(m.hits, 2);
  block_memo_release(&m);
  block_memo_release(&m); /* twice is fine */
}

static void test_block_memo_bounded(void **state) {
  (void)state;
  block_memo_t m;
  block_memo_init(&m);
  size_t big = 1u << 20;
  uint8_t *buf = calloc(1, big);
  assert_non_null(buf);
  for (uint32_t i = 0; i < 20; i++) block_memo_put(&m, 1, i, buf, big);
  assert_true(m.bytes <= BLOCK_MEMO_MAX_BYTES);
  assert_int_equal(m.n, BLOCK_MEMO_MAX_BYTES / big);
  size_t n;
  assert_null(block_memo_get(&m, 1, 19, &n)); /* not kept: a get reads it from the file */
  block_memo_release(&m);
  free(buf);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_block_memo_keyed_by_table_and_block),
      cmocka_unit_test(test_block_memo_bounded),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

/* Helpers of the persisted index's tests (persisted_index_test, leveldb_persisted_index_test):
 * the live tables, the value index's counters they assert on, the file's bytes and where its rows begin.
 * Header-only; include after cmocka.h and the library's internal headers it names.
 */
#ifndef BFH_TESTS_API_PERSISTED_INDEX_UTIL_H
#define BFH_TESTS_API_PERSISTED_INDEX_UTIL_H

#include <stddef.h>
#include <stdint.h>

#include "bfh.h"
#include "index/block_index.h"
#include "index/value_index.h"
#include "api/testbed.h"
#include "tests/test_util.h"
#include "util/coding.h"

/* The live tables of a view of db, now. */
static inline size_t pidx_test_live_tables(bfh_db *db) {
  engine_t *e = bfh_internal_engine(db);
  engine_view_t *v;
  assert_int_equal(e->ops->view_acquire(e, &v, NULL), BFH_OK);
  const engine_table_t *t;
  size_t n = e->ops->view_tables(v, &t);
  e->ops->view_release(e, v);
  return n;
}

/* The tables without a leaf that the attached file answers for. */
static inline uint64_t pidx_test_persisted(bfh_db *db) {
  value_index_stats_t st;
  value_index_get_stats(bfh_internal_index(db), &st);
  return st.persisted;
}

/* Damage the block level counted (the file's chunks and heads included). */
static inline uint64_t pidx_test_damaged(bfh_db *db) {
  block_index_stats_t bs;
  block_index_get_stats(value_index_blocks(bfh_internal_index(db)), &bs);
  return bs.damaged;
}

static inline uint8_t *pidx_test_slurp(const char *path, size_t *len) {
  uint8_t *b = test_read_file(path, len);
  if (!b) fail_msg("%s: cannot be read", path);
  return b;
}

static inline void pidx_test_spill(const char *path, const uint8_t *b, size_t len) {
  assert_int_equal(test_write_file(path, b, len), 0);
}

/* The first byte past the file's directory (doc/format.md "BFH-INDEX"): where the rows begin. */
static inline size_t pidx_test_rows_start(const uint8_t *b) {
  return 64 + (size_t)decode_fixed64(b + 48) + 4;
}

#endif

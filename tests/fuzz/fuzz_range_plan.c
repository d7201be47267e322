/* Fuzz target: the range planner's probe sets, end to end (search/search_pred.c's plan over
 * query/range_cover.c's covers, against the range items a put adds, query/terms.c).
 *
 * Input: a predicate, a NUL byte, then a value (an input without the NUL is a predicate
 * over the empty value). Attributes: tests/query/range_plan_check.h's (t, n, c, s, all over
 * the whole value). Invariant: range_plan_check's: a value that satisfies the predicate is
 * never ruled out by its plan, nor missed by the plan's memtable cover.
 */
#include "fuzz_util.h"

#include "tests/query/range_plan_check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static terms_t *t;
  if (!t) t = range_plan_terms();
  fuzz_check(t != NULL);
  const uint8_t *nul = memchr(data, 0, size);
  size_t wlen = nul ? (size_t)(nul - data) : size;
  const uint8_t *val = nul ? nul + 1 : data + size;
  size_t vlen = nul ? size - wlen - 1 : 0;
  int matched, read_all;
  const char *wrong = range_plan_check(t, (const char *)data, wlen, val, vlen, &matched, &read_all);
  fuzz_check(wrong == NULL);
  return 0;
}

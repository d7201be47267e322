/* Fuzz target: the value filter decoder (value_filter_deserialize in
 * filters/value_filter.c).
 *
 * Each input is decoded as given and again with its trailing CRC recomputed over all the
 * bytes before it, so that the header and length checks behind the checksum are reached.
 * Invariant checked: a filter that decodes serializes back to the same bytes, and probes
 * of it do not read outside its words.
 */
#include "fuzz_util.h"

#include "filters/value_filter.h"

static void exercise(const uint8_t *data, size_t size) {
  value_filter_t *f = NULL;
  err_t err;
  if (value_filter_deserialize(data, size, &f, &err) != BFH_OK) return;
  fuzz_check(value_filter_serialized_size(f->m) == size);
  uint8_t *out = malloc(size);
  fuzz_check(out != NULL);
  value_filter_serialize(f, out);
  fuzz_check(memcmp(out, data, size) == 0);
  free(out);
  value_filter_may_contain(f, "Value1", 6);
  value_filter_may_contain(f, data, size < 16 ? size : 16);
  value_filter_popcount(f);
  value_filter_destroy(f);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  fuzz_as_given_and_checksummed(data, size, exercise);
  return 0;
}

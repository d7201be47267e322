/* Fuzz target: the blocked key filter reader (filters/blocked_filter.c): a filter read
 * from a table is self-describing (nblocks, probes and version in its trailer), so every
 * function taking a stored filter must cope with any bytes.
 *
 * The input is a stored filter (no checksum of its own: the table's block trailer covers
 * it). It is probed with hashes taken from the input and fixed ones, singly and batched,
 * and keys are added to a copy of it (blocked_filter_add leaves a malformed filter alone).
 * Invariants checked: batched and single probes agree; after adding a hash to a well-formed
 * filter, it matches.
 */
#include "fuzz_util.h"

#include "filters/blocked_filter.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  uint8_t *c = fuzz_copy(data, size);
  uint64_t hashes[8] = {0, UINT64_MAX, 0x8000000000000000ull, blocked_filter_key_hash("a", 1)};
  for (size_t i = 4; i < 8; i++) hashes[i] = blocked_filter_key_hash(c, size < i ? size : i);
  uint8_t batch[8];
  blocked_filter_may_contain_batch(c, size, hashes, 8, batch);
  for (size_t i = 0; i < 8; i++)
    fuzz_check(batch[i] == (uint8_t)blocked_filter_may_contain(c, size, hashes[i]));
  blocked_filter_add(c, size, hashes, 8);
  for (size_t i = 0; i < 8; i++) fuzz_check(blocked_filter_may_contain(c, size, hashes[i]));
  free(c);
  return 0;
}

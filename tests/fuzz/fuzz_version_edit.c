/* Fuzz target: the version edit decoder (lsm/version_edit.c), the payload of one manifest
 * record. It has no checksum of its own (the log record around it has), so every input
 * reaches it directly.
 * Invariant checked: an edit that decodes re-encodes to bytes that decode to the same
 * encoding (decode . encode is a fixed point).
 */
#include "fuzz_util.h"

#include "lsm/version_edit.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  uint8_t *c = fuzz_copy(data, size);
  lsm_version_edit_t e;
  lsm_version_edit_init(&e);
  err_t err;
  /* An empty record may come with a NULL pointer (the log reader's, for one in fragments). */
  if (lsm_version_edit_decode(&e, size ? c : NULL, size, "fuzz: record at 0", &err) == BFH_OK) {
    uint8_t *enc1 = NULL, *enc2 = NULL;
    size_t n1 = 0, n2 = 0;
    fuzz_check(lsm_version_edit_encode(&e, &enc1, &n1) == BFH_OK);
    lsm_version_edit_t e2;
    lsm_version_edit_init(&e2);
    fuzz_check(lsm_version_edit_decode(&e2, enc1, n1, "fuzz: re-encoded", &err) == BFH_OK);
    fuzz_check(lsm_version_edit_encode(&e2, &enc2, &n2) == BFH_OK);
    fuzz_check(n1 == n2 && memcmp(enc1, enc2, n1) == 0);
    lsm_version_edit_release(&e2);
    free(enc1);
    free(enc2);
  }
  lsm_version_edit_release(&e);
  free(c);
  return 0;
}

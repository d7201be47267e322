/* Fuzz target: the BFH-PARAMS decoder (db_params_decode in api/db_params.c).
 *
 * Each input is decoded as given and, when it has the file's size, again with its CRC
 * recomputed, so that the field checks behind the checksum are reached.
 * Invariant checked: parameters that decode encode back to the same 36 bytes.
 */
#include "fuzz_util.h"

#include "api/db_params.h"

static void exercise(const uint8_t *data, size_t size) {
  db_params_t p;
  err_t err;
  if (db_params_decode(data, size, "fuzz/BFH-PARAMS", &p, &err) == BFH_OK) {
    uint8_t out[DB_PARAMS_BYTES];
    db_params_encode(&p, out);
    fuzz_check(size == DB_PARAMS_BYTES && memcmp(out, data, size) == 0);
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  uint8_t *c = fuzz_copy(data, size);
  exercise(c, size);
  if (size == DB_PARAMS_BYTES) {
    encode_fixed32(c + 32, crc32c_mask(crc32c_value(c, 32)));
    exercise(c, size);
  }
  free(c);
  return 0;
}

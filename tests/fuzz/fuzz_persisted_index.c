/* Fuzz target: the persisted value index's reader (index/persisted_index.c): the
 * header and directory checks (persisted_index_open_mem), then, on a file it accepts, every
 * table bound as the directory names it and a few probes answered (rows read by chunk, chunk
 * CRCs, map heads into a block index).
 *
 * Input: a whole BFH-INDEX file. It is read as given and again with its header and directory
 * CRCs made right (where the lengths allow), so that the checks behind them are reached; the
 * parameters are taken from its own header, so that the parameter check passes. Invariants:
 * open gives BFH_OK, BFH_E_CORRUPT or BFH_E_INVALID; nothing is read outside the input (ASan);
 * a probe answers 0 or 1 for each table.
 */
#include "fuzz_util.h"

#include "index/block_index.h"
#include "index/persisted_index.h"

static void exercise(const uint8_t *data, size_t size) {
  value_index_params_t p;
  memset(&p, 0, sizeof p);
  p.m = 8192;
  p.k = 3;
  if (size >= 64) {
    p.k = decode_fixed32(data + 12);
    p.m = decode_fixed64(data + 16);
    p.seed = decode_fixed64(data + 24);
    p.lean_bits = decode_fixed32(data + 32);
  }
  if (p.k == 0 || p.k > BFH_MAX_HASHES || p.m == 0) {
    p.k = 3;
    p.m = 8192;
  }
  persisted_index_t *x = NULL;
  err_t err;
  int rc = persisted_index_open_mem(data, size, &p, &x, &err);
  fuzz_check(rc == BFH_OK || rc == BFH_E_CORRUPT || rc == BFH_E_INVALID);
  if (rc != BFH_OK) {
    fuzz_check(x == NULL);
    return;
  }
  /* Bind every table the directory names, with its own size and stamp. */
  uint32_t ng = decode_fixed32(data + 36), nt = decode_fixed32(data + 40);
  uint64_t at = 64 + (uint64_t)ng * 40;
  for (uint32_t g = 0; g < ng; g++) at += 4ull * decode_fixed32(data + 64 + g * 40ull + 28);
  uint64_t *numbers = calloc(nt ? nt : 1, sizeof *numbers);
  fuzz_check(numbers != NULL);
  for (uint32_t i = 0; i < nt; i++) {
    const uint8_t *e = data + at + 48ull * i;
    numbers[i] = decode_fixed64(e);
    fuzz_check(persisted_index_bind(x, numbers[i], decode_fixed64(e + 8), decode_fixed64(e + 16)) ==
               (decode_fixed64(e + 16) != 0));
  }
  uint8_t *ask = malloc(nt ? nt : 1), *scan = malloc(nt ? nt : 1);
  fuzz_check(ask && scan);
  memset(ask, 1, nt);
  block_index_t *bi = block_index_create();
  fuzz_check(bi != NULL);
  for (uint64_t h = 0; h < 4; h++) {
    probe_t pr;
    probe_init(&pr, h * 0x9e3779b97f4a7c15ull, p.m, p.k);
    memset(scan, 7, nt);
    persisted_index_select(x, &pr, numbers, nt, ask, scan, bi, NULL);
    for (uint32_t i = 0; i < nt; i++) fuzz_check(scan[i] <= 1 || scan[i] == 7);
  }
  block_index_destroy(bi);
  free(ask);
  free(scan);
  free(numbers);
  persisted_index_destroy(x);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  exercise(data, size);
  if (size < 64) return 0;
  uint8_t *fixed = fuzz_copy(data, size);
  encode_fixed32(fixed + 56, crc32c_mask(crc32c_value(fixed, 56)));
  uint64_t dir_len = decode_fixed64(fixed + 48);
  if (dir_len <= size - 64 && size - 64 - dir_len >= 4)
    encode_fixed32(fixed + 64 + dir_len, crc32c_mask(crc32c_value(fixed + 64, (size_t)dir_len)));
  exercise(fixed, size);
  free(fixed);
  return 0;
}

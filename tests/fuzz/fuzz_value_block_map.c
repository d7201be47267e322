/* Fuzz target: the value-to-block map (index/value_block_map.c): its head decoder
 * (value_block_map_open) and the probes of a map it accepts over fuzzed chunk bytes.
 *
 * Input: fixed32 n | n bytes of head (n taken modulo what is left) | the chunks block. The
 * head is decoded as given and again with its trailing CRC made right; the chunks are probed
 * as given and again with every chunk's CRC made right, so that the checks behind both
 * checksums are reached. Invariants: a probe gives BFH_OK or BFH_E_CORRUPT (never reads
 * outside the chunks: ASan), and on BFH_OK names ascending, distinct blocks below the
 * block count; refs are ascending and end below 4 GiB.
 */
#include "fuzz_util.h"

#include "index/value_block_map.h"

typedef struct chunks {
  const uint8_t *p;
  size_t n;
} chunks_t;

static int read_chunks(void *arg, uint64_t off, size_t len, void *buf, err_t *err) {
  const chunks_t *c = arg;
  if (off > c->n || len > c->n - off) return err_set(err, BFH_E_CORRUPT, "past the chunks");
  memcpy(buf, c->p + off, len);
  return BFH_OK;
}

static void probe_all(const value_block_map_t *m, const chunks_t *c, const uint8_t *data,
                      size_t size) {
  uint32_t *out = malloc(((size_t)value_block_map_blocks(m) + 1) * sizeof *out);
  uint32_t *again = malloc(((size_t)value_block_map_blocks(m) + 1) * sizeof *again);
  uint64_t *bounds = malloc(((size_t)value_block_map_blocks(m) + 1) * sizeof *bounds);
  fuzz_check(out != NULL && again != NULL && bounds != NULL);
  uint64_t hashes[8] = {0, UINT64_MAX};
  size_t nh = 2;
  for (size_t i = 0; i + 8 <= size && nh < 8; i += 8) hashes[nh++] = decode_fixed64(data + i);
  for (size_t h = 0; h < nh; h++) {
    uint32_t n = 0;
    err_t err;
    int rc = value_block_map_probe(m, hashes[h], read_chunks, (void *)c, out, NULL, &n, NULL, NULL, &err);
    fuzz_check(rc == BFH_OK || rc == BFH_E_CORRUPT);
    if (rc != BFH_OK) fuzz_check(n == 0);
    for (uint32_t i = 0; i < n; i++) {
      fuzz_check(out[i] < value_block_map_blocks(m));
      fuzz_check(i == 0 || out[i] > out[i - 1]);
    }
    /* With their sequence bounds, the same blocks. */
    uint32_t n2 = 0;
    int rc2 = value_block_map_probe(m, hashes[h], read_chunks, (void *)c, again, bounds, &n2, NULL,
                                    NULL, &err);
    fuzz_check(rc2 == rc && n2 == n);
    for (uint32_t i = 0; i < n; i++) fuzz_check(again[i] == out[i]);
  }
  free(out);
  free(again);
  free(bounds);
}

static void exercise_map(const uint8_t *head, size_t hl, const uint8_t *ch, size_t cl) {
  value_block_map_t *m = NULL;
  err_t err;
  if (value_block_map_open(head, hl, &m, &err) != BFH_OK) {
    fuzz_check(m == NULL);
    return;
  }
  fuzz_check(value_block_map_memory(m) > 0);
  uint64_t until = 0;
  for (uint32_t j = 0; j < value_block_map_blocks(m); j++) {
    block_ref_t r = value_block_map_ref(m, j);
    fuzz_check(r.offset >= until && r.offset + r.size <= UINT32_MAX);
    until = r.offset + r.size;
  }
  chunks_t c = {ch, cl};
  probe_all(m, &c, head, hl);
  /* Every chunk's CRC made right (where the chunk lies inside the bytes given). */
  uint8_t *fixed = fuzz_copy(ch, cl);
  for (uint32_t k = 0; k < value_block_map_chunks(m); k++) {
    uint64_t off;
    size_t len;
    value_block_map_chunk_span(m, k, &off, &len);
    if (off > cl || len > cl - off || len < 4) break;
    uint8_t cb[4];
    encode_fixed32(cb, k);
    uint32_t crc = crc32c_extend(crc32c_value(cb, 4), fixed + off, len - 4);
    encode_fixed32(fixed + off + len - 4, crc32c_mask(crc));
  }
  chunks_t f = {fixed, cl};
  probe_all(m, &f, head, hl);
  free(fixed);
  value_block_map_destroy(m);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 4) return 0;
  size_t hl = decode_fixed32(data) % (size - 4 + 1);
  uint8_t *head = fuzz_copy(data + 4, hl);
  const uint8_t *ch = data + 4 + hl;
  size_t cl = size - 4 - hl;
  exercise_map(head, hl, ch, cl);
  if (hl >= 4) {
    encode_fixed32(head + hl - 4, crc32c_mask(crc32c_value(head, hl - 4)));
    exercise_map(head, hl, ch, cl);
  }
  free(head);
  return 0;
}

/* Block builder (lsm/block_builder.h).
 *
 * Byte layout of a block's contents (doc/format.md "Block"); every integer via
 * util/coding.h, little-endian:
 *
 *   entry*:   shared     varint32  bytes of the key shared with the previous key
 *             non_shared varint32  bytes of the key that follow
 *             value_len  varint32
 *             key_delta  [non_shared]  the key's bytes after the shared prefix
 *             value      [value_len]
 *   restarts: fixed32 [num_restarts]   offset of every restart entry (shared == 0),
 *                                      one every `interval` entries, the first at 0
 *   num_restarts fixed32
 *
 * In a table file the contents are followed by a 5-byte trailer
 * [type u8 = 0 (raw)][masked crc32c fixed32 of contents | type] (lsm/block.h).
 * Entries end at size - 4 * (1 + num_restarts). A block with no entries is 8 bytes.
 */
#include "lsm/block_builder.h"

#include <stdlib.h>
#include <string.h>

#include "util/coding.h"
#include "util/status.h"

static int grow(uint8_t **p, size_t *cap, size_t need) {
  if (need <= *cap) return 0;
  size_t c = *cap ? *cap : 256;
  while (c < need) c *= 2;
  uint8_t *n = realloc(*p, c);
  if (!n) return -1;
  *p = n;
  *cap = c;
  return 0;
}

void block_builder_init(block_builder_t *b, int interval) {
  memset(b, 0, sizeof *b);
  b->interval = interval > 0 ? interval : BLOCK_RESTART_INTERVAL;
  block_builder_reset(b);
}

void block_builder_release(block_builder_t *b) {
  free(b->buf);
  free(b->restarts);
  free(b->last);
  memset(b, 0, sizeof *b);
}

void block_builder_reset(block_builder_t *b) {
  b->size = 0;
  b->nrestarts = 0;
  b->counter = 0;
  b->last_len = 0;
  b->finished = 0;
  b->nomem = 0;
  if (!b->restarts) {
    b->restarts = malloc(16 * sizeof *b->restarts);
    if (!b->restarts) {
      b->nomem = 1;
      return;
    }
    b->restarts_cap = 16;
  }
  b->restarts[b->nrestarts++] = 0;
}

int block_builder_empty(const block_builder_t *b) {
  return b->size == 0;
}

size_t block_builder_size_estimate(const block_builder_t *b) {
  return b->size + 4 * b->nrestarts + 4;
}

const uint8_t *block_builder_last_key(const block_builder_t *b, size_t *n) {
  *n = b->last_len;
  return b->last;
}

int block_builder_add(block_builder_t *b, const void *key, size_t klen, const void *val,
                      size_t vlen) {
  if (b->nomem) return ST_E_NOMEM;
  const uint8_t *k = key;
  size_t shared = 0;
  if (b->counter < b->interval) {
    size_t min = b->last_len < klen ? b->last_len : klen;
    while (shared < min && b->last[shared] == k[shared]) shared++;
  } else {
    if (b->nrestarts == b->restarts_cap) {
      uint32_t *r = realloc(b->restarts, 2 * b->restarts_cap * sizeof *r);
      if (!r) return b->nomem = 1, ST_E_NOMEM;
      b->restarts = r;
      b->restarts_cap *= 2;
    }
    b->restarts[b->nrestarts++] = (uint32_t)b->size;
    b->counter = 0;
  }
  size_t non_shared = klen - shared;
  if (grow(&b->buf, &b->cap, b->size + 3 * VARINT32_MAX_BYTES + non_shared + vlen) ||
      grow(&b->last, &b->last_cap, klen))
    return b->nomem = 1, ST_E_NOMEM;
  uint8_t *p = b->buf + b->size;
  p = encode_varint32(p, (uint32_t)shared);
  p = encode_varint32(p, (uint32_t)non_shared);
  p = encode_varint32(p, (uint32_t)vlen);
  memcpy(p, k + shared, non_shared);
  p += non_shared;
  if (vlen) memcpy(p, val, vlen);
  p += vlen;
  b->size = (size_t)(p - b->buf);
  memcpy(b->last + shared, k + shared, non_shared);
  b->last_len = klen;
  b->counter++;
  return ST_OK;
}

const uint8_t *block_builder_finish(block_builder_t *b, size_t *n) {
  if (b->nomem || grow(&b->buf, &b->cap, b->size + 4 * b->nrestarts + 4)) {
    b->nomem = 1;
    return NULL;
  }
  if (!b->finished) {
    for (size_t i = 0; i < b->nrestarts; i++)
      encode_fixed32(b->buf + b->size + 4 * i, b->restarts[i]);
    encode_fixed32(b->buf + b->size + 4 * b->nrestarts, (uint32_t)b->nrestarts);
    b->finished = 1;
  }
  *n = b->size + 4 * b->nrestarts + 4;
  return b->buf;
}

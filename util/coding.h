/* Little-endian fixed-width integers and LEB128 varints, as in LevelDB's util/coding.h.
 * Every on-disk integer of bfh goes through these helpers; no struct is written raw.
 * Decoders take the end of the buffer and return NULL instead of reading past it.
 */
#ifndef BFH_UTIL_CODING_H
#define BFH_UTIL_CODING_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define VARINT64_MAX_BYTES 10
#define VARINT32_MAX_BYTES 5

static inline void encode_fixed32(uint8_t *p, uint32_t v) {
  p[0] = (uint8_t)v;
  p[1] = (uint8_t)(v >> 8);
  p[2] = (uint8_t)(v >> 16);
  p[3] = (uint8_t)(v >> 24);
}

static inline void encode_fixed64(uint8_t *p, uint64_t v) {
  encode_fixed32(p, (uint32_t)v);
  encode_fixed32(p + 4, (uint32_t)(v >> 32));
}

static inline uint32_t decode_fixed32(const uint8_t *p) {
  return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24);
}

static inline uint64_t decode_fixed64(const uint8_t *p) {
  return (uint64_t)decode_fixed32(p) | ((uint64_t)decode_fixed32(p + 4) << 32);
}

/* Writes v at p; returns the byte after it. p needs VARINT64_MAX_BYTES of room. */
static inline uint8_t *encode_varint64(uint8_t *p, uint64_t v) {
  while (v >= 0x80) {
    *p++ = (uint8_t)(v | 0x80);
    v >>= 7;
  }
  *p++ = (uint8_t)v;
  return p;
}

static inline uint8_t *encode_varint32(uint8_t *p, uint32_t v) {
  return encode_varint64(p, v);
}

static inline size_t varint_length(uint64_t v) {
  size_t n = 1;
  while (v >= 0x80) {
    v >>= 7;
    n++;
  }
  return n;
}

/* Reads a varint from [p, limit) into *v; returns the byte after it, or NULL if the varint
   is truncated or longer than 64 bits. */
static inline const uint8_t *decode_varint64(const uint8_t *p, const uint8_t *limit, uint64_t *v) {
  uint64_t result = 0;
  for (unsigned shift = 0; shift <= 63 && p < limit; shift += 7) {
    uint64_t byte = *p++;
    if (shift == 63 && byte > 1) return NULL; /* bits beyond 64, or an 11th byte */
    result |= (byte & 0x7f) << shift;
    if (!(byte & 0x80)) {
      *v = result;
      return p;
    }
  }
  return NULL;
}

static inline const uint8_t *decode_varint32(const uint8_t *p, const uint8_t *limit, uint32_t *v) {
  uint64_t x;
  const uint8_t *start = p;
  p = decode_varint64(p, limit, &x);
  if (!p || x > UINT32_MAX || p - start > VARINT32_MAX_BYTES) return NULL;
  *v = (uint32_t)x;
  return p;
}

#endif

/* Value Bloom filter (see value_filter.h for the contract).
 *
 * Serialized form, byte by byte (all integers little-endian through util/coding.h):
 *   offset 0   magic     fixed32  "BFHV" (bytes 'B' 'F' 'H' 'V')
 *   offset 4   version   fixed32  1
 *   offset 8   m         fixed64  bits, >= 64
 *   offset 16  k         fixed32  1..32
 *   offset 20  reserved  fixed32  0
 *   offset 24  seed      fixed64
 *   offset 32  words     fixed64[ceil(m/64)]  bit i of the filter is bit (i % 64) of word i/64
 *   end - 4    crc       fixed32  crc32c_mask(crc32c of bytes [0, end - 4))
 * Total: value_filter_serialized_size(m) = 36 + 8 * ceil(m/64) bytes.
 */
#include "filters/value_filter.h"

#include <math.h>
#include <stdlib.h>

#include "filters/bits.h"
#include "util/coding.h"
#include "util/crc32c.h"

#define MAGIC 0x56484642u /* "BFHV" read as a little-endian fixed32 */
#define VERSION 1u
#define TRAILER_BYTES 4

/* Largest m whose filter size is representable without overflow in size_t arithmetic. */
#define MAX_BITS ((uint64_t)(SIZE_MAX / 16) * 8)

value_filter_t *value_filter_create(uint64_t m, uint32_t k, uint64_t seed) {
  if (m < VALUE_FILTER_MIN_BITS || m > MAX_BITS || k < 1 || k > BFH_MAX_HASHES) return NULL;
  value_filter_t *f = malloc(sizeof *f);
  if (!f) return NULL;
  f->m = m;
  f->k = k;
  f->seed = seed;
  f->nwords = bits_words(m);
  f->words = calloc(f->nwords, sizeof(uint64_t));
  if (!f->words) {
    free(f);
    return NULL;
  }
  return f;
}

void value_filter_destroy(value_filter_t *f) {
  if (!f) return;
  free(f->words);
  free(f);
}

void value_filter_add_hash(value_filter_t *f, uint64_t hash) {
  probe_t p;
  probe_init(&p, hash, f->m, f->k);
  for (uint32_t i = 0; i < p.k; i++) bits_set(f->words, p.pos[i]);
}

void value_filter_add(value_filter_t *f, const void *val, size_t len) {
  value_filter_add_hash(f, bfh_value_hash(val, len, f->seed));
}

void value_filter_probe(const value_filter_t *f, const void *val, size_t len, probe_t *out) {
  probe_init(out, bfh_value_hash(val, len, f->seed), f->m, f->k);
}

bool value_filter_may_contain(const value_filter_t *f, const void *val, size_t len) {
  probe_t p;
  value_filter_probe(f, val, len, &p);
  return bits_test_probe(f->words, &p);
}

bool value_filter_may_contain_probe(const value_filter_t *f, const probe_t *p) {
  return bits_test_probe(f->words, p);
}

/* Prefetching in two stages: the filter struct 2 * PREFETCH_DISTANCE ahead (to learn where
   its words are), then the words of the first PREFETCH_POSITIONS probe positions of the filter
   PREFETCH_DISTANCE ahead (at fill 1/2 a negative is decided by the first two positions three
   times in four). */
#ifndef PREFETCH_DISTANCE
#define PREFETCH_DISTANCE 8
#endif
#define PREFETCH_POSITIONS 2

static inline void prefetch_probe(const value_filter_t *f, const probe_t *p) {
  uint32_t np = p->k < PREFETCH_POSITIONS ? p->k : PREFETCH_POSITIONS;
  for (uint32_t j = 0; j < np; j++) __builtin_prefetch(&f->words[p->pos[j] >> 6], 0, 3);
}

void value_filter_may_contain_probe_batch(const value_filter_t *const *fs, size_t n,
                                          const probe_t *p, uint8_t *out) {
  for (size_t i = 0; i < n && i < 2 * PREFETCH_DISTANCE; i++) __builtin_prefetch(fs[i], 0, 3);
  for (size_t i = 0; i < n && i < PREFETCH_DISTANCE; i++) prefetch_probe(fs[i], p);
  for (size_t i = 0; i < n; i++) {
    if (i + 2 * PREFETCH_DISTANCE < n) __builtin_prefetch(fs[i + 2 * PREFETCH_DISTANCE], 0, 3);
    if (i + PREFETCH_DISTANCE < n) prefetch_probe(fs[i + PREFETCH_DISTANCE], p);
    out[i] = (uint8_t)bits_test_probe(fs[i]->words, p);
  }
}

int value_filter_merge(value_filter_t *dst, const value_filter_t *src, err_t *err) {
  if (dst->m != src->m || dst->k != src->k || dst->seed != src->seed)
    return err_set(err, ST_E_INVALID,
                   "value filter merge: parameters differ (m %llu vs %llu, k %u vs %u, "
                   "seed %#llx vs %#llx)",
                   (unsigned long long)dst->m, (unsigned long long)src->m, dst->k, src->k,
                   (unsigned long long)dst->seed, (unsigned long long)src->seed);
  bits_or(dst->words, src->words, dst->nwords);
  return ST_OK;
}

uint64_t value_filter_popcount(const value_filter_t *f) {
  return bits_popcount(f->words, f->nwords);
}

double value_filter_fill_ratio(const value_filter_t *f) {
  return (double)value_filter_popcount(f) / (double)f->m;
}

double value_filter_fpr_estimate(const value_filter_t *f) {
  return pow(value_filter_fill_ratio(f), (double)f->k);
}

double value_filter_fpr_theory(uint64_t m, uint32_t k, uint64_t n) {
  if (m == 0) return 1.0;
  return pow(1.0 - exp(-(double)k * (double)n / (double)m), (double)k);
}

size_t value_filter_size_in_bytes(const value_filter_t *f) {
  return sizeof *f + f->nwords * sizeof(uint64_t);
}

size_t value_filter_serialized_size(uint64_t m) {
  return VALUE_FILTER_HEADER_BYTES + 8 * bits_words(m) + TRAILER_BYTES;
}

void value_filter_serialize(const value_filter_t *f, uint8_t *out) {
  encode_fixed32(out, MAGIC);
  encode_fixed32(out + 4, VERSION);
  encode_fixed64(out + 8, f->m);
  encode_fixed32(out + 16, f->k);
  encode_fixed32(out + 20, 0);
  encode_fixed64(out + 24, f->seed);
  uint8_t *p = out + VALUE_FILTER_HEADER_BYTES;
  for (size_t i = 0; i < f->nwords; i++, p += 8) encode_fixed64(p, f->words[i]);
  encode_fixed32(p, crc32c_mask(crc32c_value(out, (size_t)(p - out))));
}

int value_filter_deserialize(const uint8_t *data, size_t len, value_filter_t **out, err_t *err) {
  *out = NULL;
  if (len < VALUE_FILTER_HEADER_BYTES + TRAILER_BYTES)
    return err_set(err, ST_E_CORRUPT, "value filter: %zu bytes, shorter than the minimum %d", len,
                   VALUE_FILTER_HEADER_BYTES + TRAILER_BYTES);
  uint32_t magic = decode_fixed32(data);
  if (magic != MAGIC)
    return err_set(err, ST_E_CORRUPT, "value filter: offset 0: bad magic %#x", magic);
  uint32_t version = decode_fixed32(data + 4);
  if (version != VERSION)
    return err_set(err, ST_E_CORRUPT, "value filter: offset 4: unsupported version %u", version);
  uint64_t m = decode_fixed64(data + 8);
  uint32_t k = decode_fixed32(data + 16);
  uint32_t reserved = decode_fixed32(data + 20);
  uint64_t seed = decode_fixed64(data + 24);
  /* The words occupy exactly the bytes between header and trailer. */
  size_t body = len - VALUE_FILTER_HEADER_BYTES - TRAILER_BYTES;
  if (m < VALUE_FILTER_MIN_BITS || body % 8 != 0 || m > (uint64_t)body * 8 ||
      bits_words(m) != body / 8)
    return err_set(err, ST_E_CORRUPT,
                   "value filter: offset 8: m = %llu does not match the %zu bytes of bit words",
                   (unsigned long long)m, body);
  if (k < 1 || k > BFH_MAX_HASHES)
    return err_set(err, ST_E_CORRUPT, "value filter: offset 16: k = %u is outside 1..%d", k,
                   BFH_MAX_HASHES);
  if (reserved != 0)
    return err_set(err, ST_E_CORRUPT, "value filter: offset 20: reserved field is %#x, not 0",
                   reserved);
  size_t crc_off = len - TRAILER_BYTES;
  uint32_t stored = crc32c_unmask(decode_fixed32(data + crc_off));
  uint32_t actual = crc32c_value(data, crc_off);
  if (stored != actual)
    return err_set(err, ST_E_CORRUPT,
                   "value filter: offset %zu: checksum mismatch (stored %#x, computed %#x)",
                   crc_off, stored, actual);
  value_filter_t *f = value_filter_create(m, k, seed);
  if (!f) return err_set(err, ST_E_NOMEM, "value filter: cannot allocate %zu bytes of words", body);
  const uint8_t *p = data + VALUE_FILTER_HEADER_BYTES;
  for (size_t i = 0; i < f->nwords; i++, p += 8) f->words[i] = decode_fixed64(p);
  unsigned tail = (unsigned)(m & 63);
  if (tail != 0 && (f->words[f->nwords - 1] >> tail) != 0) {
    value_filter_destroy(f);
    return err_set(err, ST_E_CORRUPT, "value filter: offset %zu: bits set at positions >= m = %llu",
                   (size_t)value_filter_word_offset(bits_words(m) - 1), (unsigned long long)m);
  }
  *out = f;
  return ST_OK;
}

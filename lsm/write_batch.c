/* Write batches: the encoding of a group of updates (lsm/write_batch.h, doc/format.md
 * "Write batch"):
 *   offset 0  seq   fixed64   sequence number of the first record
 *   offset 8  count fixed32   number of records
 *   offset 12 records: type u8 (1 value, 0 deletion) | varint32 klen | key
 *                      [| varint32 vlen | value]   (value only for type 1)
 */
#include "lsm/write_batch.h"

#include <stdlib.h>
#include <string.h>

#include "lsm/memtable.h"
#include "util/coding.h"

void write_batch_init(write_batch_t *b) {
  b->rep = NULL;
  b->size = b->cap = 0;
}

void write_batch_release(write_batch_t *b) {
  free(b->rep);
  write_batch_init(b);
}

static int reserve(write_batch_t *b, size_t extra) {
  size_t need = (b->size ? b->size : WRITE_BATCH_HEADER_BYTES) + extra;
  if (need > b->cap) {
    size_t cap = b->cap ? b->cap : 256;
    while (cap < need) cap *= 2;
    uint8_t *p = realloc(b->rep, cap);
    if (!p) return ST_E_NOMEM;
    b->rep = p;
    b->cap = cap;
  }
  if (b->size == 0) {
    memset(b->rep, 0, WRITE_BATCH_HEADER_BYTES);
    b->size = WRITE_BATCH_HEADER_BYTES;
  }
  return ST_OK;
}

void write_batch_clear(write_batch_t *b) {
  if (b->rep) {
    memset(b->rep, 0, WRITE_BATCH_HEADER_BYTES);
    b->size = WRITE_BATCH_HEADER_BYTES;
  }
}

uint32_t write_batch_count(const write_batch_t *b) {
  return b->size ? decode_fixed32(b->rep + 8) : 0;
}

uint64_t write_batch_seq(const write_batch_t *b) {
  return b->size ? decode_fixed64(b->rep) : 0;
}

void write_batch_set_seq(write_batch_t *b, uint64_t seq) {
  if (reserve(b, 0) == ST_OK) encode_fixed64(b->rep, seq);
}

static void set_count(write_batch_t *b, uint32_t c) {
  encode_fixed32(b->rep + 8, c);
}

static int add(write_batch_t *b, int type, const void *key, size_t klen, const void *val,
               size_t vlen) {
  if (klen > UINT32_MAX || vlen > UINT32_MAX) return ST_E_INVALID;
  size_t extra = 1 + VARINT32_MAX_BYTES + klen + (type ? VARINT32_MAX_BYTES + vlen : 0);
  if (reserve(b, extra)) return ST_E_NOMEM;
  uint8_t *p = b->rep + b->size;
  *p++ = (uint8_t)type;
  p = encode_varint32(p, (uint32_t)klen);
  if (klen) memcpy(p, key, klen);
  p += klen;
  if (type == 1) {
    p = encode_varint32(p, (uint32_t)vlen);
    if (vlen) memcpy(p, val, vlen);
    p += vlen;
  }
  b->size = (size_t)(p - b->rep);
  set_count(b, write_batch_count(b) + 1);
  return ST_OK;
}

int write_batch_put(write_batch_t *b, const void *key, size_t klen, const void *val, size_t vlen) {
  return add(b, 1, key, klen, val, vlen);
}

int write_batch_delete(write_batch_t *b, const void *key, size_t klen) {
  return add(b, 0, key, klen, NULL, 0);
}

int write_batch_append(write_batch_t *dst, const write_batch_t *src) {
  if (src->size <= WRITE_BATCH_HEADER_BYTES) return ST_OK;
  size_t n = src->size - WRITE_BATCH_HEADER_BYTES;
  if (reserve(dst, n)) return ST_E_NOMEM;
  memcpy(dst->rep + dst->size, src->rep + WRITE_BATCH_HEADER_BYTES, n);
  dst->size += n;
  set_count(dst, write_batch_count(dst) + write_batch_count(src));
  return ST_OK;
}

const uint8_t *write_batch_data(const write_batch_t *b, size_t *n) {
  static const uint8_t empty[WRITE_BATCH_HEADER_BYTES];
  if (!b->size) {
    *n = WRITE_BATCH_HEADER_BYTES;
    return empty;
  }
  *n = b->size;
  return b->rep;
}

int write_batch_set_data(write_batch_t *b, const void *data, size_t n) {
  if (n < WRITE_BATCH_HEADER_BYTES) return ST_E_CORRUPT;
  b->size = 0;
  if (reserve(b, n - WRITE_BATCH_HEADER_BYTES)) return ST_E_NOMEM;
  memcpy(b->rep, data, n);
  b->size = n;
  return ST_OK;
}

int write_batch_iterate(const void *data, size_t n, write_batch_fn fn, void *arg, err_t *err) {
  /* Checked before any pointer arithmetic: an empty record may come with data == NULL. */
  if (n < WRITE_BATCH_HEADER_BYTES)
    return err_set(err, ST_E_CORRUPT, "write batch: %zu bytes, shorter than its header", n);
  const uint8_t *p = data, *limit = p + n;
  uint64_t seq = decode_fixed64(p);
  uint32_t count = decode_fixed32(p + 8);
  p += WRITE_BATCH_HEADER_BYTES;
  uint32_t i = 0;
  while (p < limit) {
    size_t at = (size_t)(p - (const uint8_t *)data);
    int type = *p++;
    uint32_t klen, vlen = 0;
    const uint8_t *key, *val = NULL;
    if (type != 0 && type != 1)
      return err_set(err, ST_E_CORRUPT, "write batch: record %u at %zu: bad type %d", i, at, type);
    if (!(p = decode_varint32(p, limit, &klen)) || (size_t)(limit - p) < klen)
      return err_set(err, ST_E_CORRUPT, "write batch: record %u at %zu: bad key", i, at);
    key = p;
    p += klen;
    if (type == 1) {
      if (!(p = decode_varint32(p, limit, &vlen)) || (size_t)(limit - p) < vlen)
        return err_set(err, ST_E_CORRUPT, "write batch: record %u at %zu: bad value", i, at);
      val = p;
      p += vlen;
    }
    if (i >= count)
      return err_set(err, ST_E_CORRUPT, "write batch: header says %u records, found more", count);
    int stop = fn(arg, seq + i, type, key, klen, val, vlen);
    i++;
    if (stop) return stop;
  }
  if (i != count)
    return err_set(err, ST_E_CORRUPT, "write batch: header says %u records, found %u", count, i);
  return ST_OK;
}

typedef struct insert_ctx {
  memtable_t *m;
} insert_ctx_t;

static int insert_one(void *arg, uint64_t seq, int type, const void *key, size_t klen,
                      const void *val, size_t vlen) {
  insert_ctx_t *c = arg;
  return memtable_add(c->m, seq, type, key, klen, val, vlen) ? ST_E_NOMEM : 0;
}

int write_batch_insert(const void *data, size_t n, memtable_t *m, err_t *err) {
  insert_ctx_t c = {m};
  int rc = write_batch_iterate(data, n, insert_one, &c, err);
  if (rc == ST_E_NOMEM) return err_set(err, rc, "write batch: memtable: out of memory");
  return rc;
}

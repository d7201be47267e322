/* Block reading: handles, trailers and the seekable cursor (lsm/block.h; the layout is at
 * the top of block_builder.c). */
#include "lsm/block.h"

#include <stdlib.h>
#include <string.h>

#include "util/coding.h"
#include "util/crc32c.h"

uint8_t *block_handle_encode(uint8_t *dst, const block_handle_t *h) {
  dst = encode_varint64(dst, h->offset);
  return encode_varint64(dst, h->size);
}

const uint8_t *block_handle_decode(const uint8_t *p, const uint8_t *limit, block_handle_t *h) {
  p = decode_varint64(p, limit, &h->offset);
  if (!p) return NULL;
  return decode_varint64(p, limit, &h->size);
}

void block_trailer_encode(uint8_t trailer[BLOCK_TRAILER_BYTES], const uint8_t *contents, size_t n) {
  trailer[0] = BLOCK_TYPE_RAW;
  uint32_t crc = crc32c_extend(crc32c_value(contents, n), trailer, 1);
  encode_fixed32(trailer + 1, crc32c_mask(crc));
}

int block_trailer_crc_check(const uint8_t *contents, size_t n) {
  uint32_t crc = crc32c_value(contents, n + 1);
  return crc32c_unmask(decode_fixed32(contents + n + 1)) == crc ? 0 : -1;
}

int block_trailer_check(const uint8_t *contents, size_t n) {
  if (contents[n] != BLOCK_TYPE_RAW) return -1;
  return block_trailer_crc_check(contents, n);
}

int block_parse(block_t *b, const uint8_t *data, size_t size) {
  if (size < 4 || size > UINT32_MAX) return -1;
  uint32_t n = decode_fixed32(data + size - 4);
  if (n > (size - 4) / 4) return -1;
  b->data = data;
  b->size = size;
  b->nrestarts = n;
  b->restarts_offset = (uint32_t)(size - 4 - 4 * (size_t)n);
  if (n == 0 && b->restarts_offset != 0) return -1;
  return 0;
}

void block_cursor_init(block_cursor_t *c, const block_t *b, key_compare_fn cmp) {
  c->block = b;
  c->cmp = cmp;
  c->offset = c->next_offset = b->restarts_offset;
  c->restart = 0;
  c->val = NULL;
  c->val_len = 0;
  c->key = c->key_inline;
  c->key_len = 0;
  c->key_cap = sizeof c->key_inline;
  c->corrupt = 0;
}

void block_cursor_release(block_cursor_t *c) {
  if (c->key != c->key_inline) free(c->key);
  c->key = c->key_inline;
  c->key_cap = sizeof c->key_inline;
}

static inline uint32_t restart_point(const block_t *b, uint32_t i) {
  return decode_fixed32(b->data + b->restarts_offset + 4 * (size_t)i);
}

/* Decodes the three varints of the entry at p (< limit). */
static inline const uint8_t *decode_header(const uint8_t *p, const uint8_t *limit, uint32_t *shared,
                                           uint32_t *non_shared, uint32_t *vlen) {
  if (limit - p < 3) return NULL;
  if ((p[0] | p[1] | p[2]) < 128) {
    *shared = p[0];
    *non_shared = p[1];
    *vlen = p[2];
    return p + 3;
  }
  if (!(p = decode_varint32(p, limit, shared))) return NULL;
  if (!(p = decode_varint32(p, limit, non_shared))) return NULL;
  return decode_varint32(p, limit, vlen);
}

static void set_corrupt(block_cursor_t *c) {
  c->corrupt = 1;
  c->offset = c->next_offset = c->block->restarts_offset;
  c->key_len = 0;
}

/* Decodes the entry at offset `off` given the previous key in c->key. */
static int parse_entry(block_cursor_t *c, uint32_t off) {
  const block_t *b = c->block;
  const uint8_t *p = b->data + off, *limit = b->data + b->restarts_offset;
  uint32_t shared, non_shared, vlen;
  p = decode_header(p, limit, &shared, &non_shared, &vlen);
  if (!p || shared > c->key_len || (size_t)(limit - p) < (size_t)non_shared + vlen) {
    set_corrupt(c);
    return -1;
  }
  size_t klen = (size_t)shared + non_shared;
  if (klen > c->key_cap) {
    size_t cap = c->key_cap * 2;
    while (cap < klen) cap *= 2;
    uint8_t *k = malloc(cap);
    if (!k) {
      set_corrupt(c); /* reported as corruption; cannot happen for sane keys */
      return -1;
    }
    memcpy(k, c->key, shared);
    if (c->key != c->key_inline) free(c->key);
    c->key = k;
    c->key_cap = cap;
  }
  memcpy(c->key + shared, p, non_shared);
  c->key_len = klen;
  c->val = p + non_shared;
  c->val_len = vlen;
  c->offset = off;
  c->next_offset = (uint32_t)(c->val + vlen - b->data);
  return 0;
}

void block_cursor_seek_first(block_cursor_t *c) {
  c->corrupt = 0;
  c->key_len = 0;
  c->restart = 0;
  if (c->block->restarts_offset == 0) {
    c->offset = c->next_offset = 0;
    return;
  }
  parse_entry(c, 0);
}

void block_cursor_next(block_cursor_t *c) {
  uint32_t off = c->next_offset;
  if (off >= c->block->restarts_offset) {
    c->offset = c->next_offset = c->block->restarts_offset;
    return;
  }
  parse_entry(c, off);
}

void block_cursor_seek(block_cursor_t *c, const void *target, size_t n) {
  const block_t *b = c->block;
  c->corrupt = 0;
  if (b->nrestarts == 0 || b->restarts_offset == 0) {
    c->offset = c->next_offset = b->restarts_offset;
    return;
  }
  /* Last restart whose key < target. */
  uint32_t left = 0, right = b->nrestarts - 1;
  const uint8_t *limit = b->data + b->restarts_offset;
  while (left < right) {
    uint32_t mid = (left + right + 1) / 2;
    uint32_t off = restart_point(b, mid);
    uint32_t shared, non_shared, vlen;
    const uint8_t *p = off < b->restarts_offset
                           ? decode_header(b->data + off, limit, &shared, &non_shared, &vlen)
                           : NULL;
    if (!p || shared != 0 || (size_t)(limit - p) < non_shared) {
      set_corrupt(c);
      return;
    }
    if (c->cmp(p, non_shared, target, n) < 0)
      left = mid;
    else
      right = mid - 1;
  }
  uint32_t off = restart_point(b, left);
  if (off >= b->restarts_offset) {
    set_corrupt(c);
    return;
  }
  c->key_len = 0;
  c->restart = left;
  if (parse_entry(c, off)) return;
  for (;;) {
    if (c->cmp(c->key, c->key_len, target, n) >= 0) return;
    if (c->next_offset >= b->restarts_offset) {
      c->offset = c->next_offset = b->restarts_offset;
      return;
    }
    if (parse_entry(c, c->next_offset)) return;
  }
}

/* ---- Scan by value -------------------------------------------------------------------- */

/* Rebuilds the key of the entry at offset `target` by decoding from `from`, an entry that
   shares nothing with its predecessor; the entries between were checked by the caller. */
static int key_at(block_cursor_t *c, uint32_t from, uint32_t target) {
  if (parse_entry(c, from)) return -1;
  while (c->offset < target)
    if (parse_entry(c, c->next_offset)) return -1;
  return 0;
}

int block_scan_value(const block_t *b, const void *val, size_t n, block_visit_fn fn, void *arg,
                     uint64_t *entries) {
  const uint8_t *base = b->data, *p = base, *limit = base + b->restarts_offset;
  const uint8_t *want = val;
  uint64_t want_tail = 0; /* the last 8 bytes of val, when it has 8 */
  if (n >= 8) memcpy(&want_tail, want + n - 8, 8);
  const uint8_t *whole = base; /* the last entry with shared == 0: its key is all there */
  const uint8_t *prev = NULL, *prev_whole = base; /* the entry before, and its `whole` */
  size_t key_len = 0;
  uint64_t count = 0;
  int rc = 0;
  while (p < limit) {
    const uint8_t *entry = p;
    const uint8_t *entry_prev = prev, *entry_prev_whole = prev_whole;
    uint32_t shared, non_shared, vlen;
    p = decode_header(p, limit, &shared, &non_shared, &vlen);
    /* The same checks as parse_entry, without copying the key. */
    if (!p || shared > key_len || (size_t)(limit - p) < (size_t)non_shared + vlen) {
      rc = -1;
      break;
    }
    if (shared == 0) whole = entry;
    prev = entry;
    prev_whole = whole;
    key_len = (size_t)shared + non_shared;
    const uint8_t *v = p + non_shared;
    p = v + vlen;
    count++;
    /* The last 8 bytes first, as one word: values often share a prefix ("Value<i>"). */
    if (vlen != n) continue;
    if (n >= 8) {
      uint64_t tail;
      memcpy(&tail, v + n - 8, 8);
      if (tail != want_tail || memcmp(v, want, n - 8) != 0) continue;
    } else if (n && (v[n - 1] != want[n - 1] || memcmp(v, want, n) != 0)) {
      continue;
    }
    block_cursor_t c, pc;
    block_cursor_init(&c, b, NULL);
    block_cursor_init(&pc, b, NULL);
    if (key_at(&c, (uint32_t)(whole - base), (uint32_t)(entry - base)) ||
        (entry_prev &&
         key_at(&pc, (uint32_t)(entry_prev_whole - base), (uint32_t)(entry_prev - base)))) {
      block_cursor_release(&c);
      block_cursor_release(&pc);
      rc = -1;
      break;
    }
    int stop = fn(arg, c.key, c.key_len, v, vlen, entry_prev ? pc.key : NULL,
                  entry_prev ? pc.key_len : 0);
    block_cursor_release(&c);
    block_cursor_release(&pc);
    if (stop) {
      rc = 1;
      break;
    }
  }
  *entries += count;
  return rc;
}

/* ---- Iterator over one block ----------------------------------------------------------- */

typedef struct block_iter {
  iterator_t base;
  block_t block;
  block_cursor_t cur;
  int bad; /* the block itself is malformed */
} block_iter_t;

static void bi_seek_first(iterator_t *it) {
  block_iter_t *bi = (block_iter_t *)it;
  if (!bi->bad) block_cursor_seek_first(&bi->cur);
}
static void bi_seek(iterator_t *it, const void *t, size_t n) {
  block_iter_t *bi = (block_iter_t *)it;
  if (!bi->bad) block_cursor_seek(&bi->cur, t, n);
}
static int bi_valid(const iterator_t *it) {
  const block_iter_t *bi = (const block_iter_t *)it;
  return !bi->bad && block_cursor_valid(&bi->cur);
}
static void bi_next(iterator_t *it) {
  block_cursor_next(&((block_iter_t *)it)->cur);
}
static const void *bi_key(const iterator_t *it, size_t *n) {
  const block_iter_t *bi = (const block_iter_t *)it;
  *n = bi->cur.key_len;
  return bi->cur.key;
}
static const void *bi_value(const iterator_t *it, size_t *n) {
  const block_iter_t *bi = (const block_iter_t *)it;
  *n = bi->cur.val_len;
  return bi->cur.val;
}
static int bi_status(const iterator_t *it, err_t *err) {
  const block_iter_t *bi = (const block_iter_t *)it;
  if (bi->bad) return err_set(err, ST_E_CORRUPT, "block: malformed restart array");
  if (bi->cur.corrupt) return err_set(err, ST_E_CORRUPT, "block: malformed entry");
  err_clear(err);
  return ST_OK;
}
static void bi_destroy(iterator_t *it) {
  block_iter_t *bi = (block_iter_t *)it;
  block_cursor_release(&bi->cur);
  free(bi);
}

static const iterator_ops_t block_iter_ops = {bi_seek_first, bi_seek,  bi_valid,  bi_next,
                                              bi_key,        bi_value, bi_status, bi_destroy};

iterator_t *block_iterator_create(const uint8_t *data, size_t size, key_compare_fn cmp) {
  block_iter_t *bi = calloc(1, sizeof *bi);
  if (!bi) return NULL;
  bi->base.ops = &block_iter_ops;
  bi->bad = block_parse(&bi->block, data, size) != 0;
  if (bi->bad) memset(&bi->block, 0, sizeof bi->block);
  block_cursor_init(&bi->cur, &bi->block, cmp);
  return &bi->base;
}

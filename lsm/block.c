/* Block reading: handles, trailers and the seekable cursor (lsm/block.h; the layout is at
 * the top of block_builder.c). */
#include "lsm/block.h"

#include <stdlib.h>
#include <string.h>

#include "util/coding.h"
#include "util/cpu.h"
#include "util/crc32c.h"

#ifdef BFH_HAVE_AVX2_PATH
#include <immintrin.h>
#endif

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

/* Makes room for a key of klen bytes in c, keeping its first `keep`; -1 on no memory. */
static int key_reserve(block_cursor_t *c, size_t klen, size_t keep) {
  if (klen <= c->key_cap) return 0;
  size_t cap = c->key_cap * 2;
  while (cap < klen) cap *= 2;
  uint8_t *k = malloc(cap);
  if (!k) return -1;
  memcpy(k, c->key, keep);
  if (c->key != c->key_inline) free(c->key);
  c->key = k;
  c->key_cap = cap;
  return 0;
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
  if (klen > c->key_cap && key_reserve(c, klen, shared)) {
    set_corrupt(c); /* reported as corruption; cannot happen for sane keys */
    return -1;
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

/* block_cursor_seek's prefetches: the restarts' first entries when there are at most this
   many, and at most this many bytes of the run it scans. */
#define SEEK_PREFETCH_RESTARTS 8
#define SEEK_PREFETCH_BYTES 4096

void block_cursor_seek(block_cursor_t *c, const void *target, size_t n) {
  const block_t *b = c->block;
  c->corrupt = 0;
  if (b->nrestarts == 0 || b->restarts_offset == 0) {
    c->offset = c->next_offset = b->restarts_offset;
    return;
  }
  /* Last restart whose key < target. The search reads the first entry of up to log2 of the
     restarts, each where the one before says: with few restarts (a 4 KiB block of ~100-byte
     entries has 2 to 4), all their lines are asked for at once instead of one by one. */
  uint32_t left = 0, right = b->nrestarts - 1;
  const uint8_t *limit = b->data + b->restarts_offset;
  if (b->nrestarts <= SEEK_PREFETCH_RESTARTS)
    for (uint32_t i = 1; i < b->nrestarts; i++) {
      uint32_t off = restart_point(b, i);
      if (off < b->restarts_offset) __builtin_prefetch(b->data + off);
    }
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
  /* The scan reads the run from this restart to the next: ask for its lines together (the
     hardware would find the stream only after its first misses). */
  uint32_t run_end = left + 1 < b->nrestarts ? restart_point(b, left + 1) : b->restarts_offset;
  if (run_end > b->restarts_offset) run_end = b->restarts_offset;
  for (uint32_t p = off + 64; p < run_end && p - off < SEEK_PREFETCH_BYTES; p += 64)
    __builtin_prefetch(b->data + p);
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

/* A scan by value in progress: the next entry to decode, and what a match needs to rebuild
   its key and its predecessor's. */
typedef struct value_scan {
  const block_t *b;
  const uint8_t *want;
  size_t n;
  uint64_t want_tail; /* the last 8 bytes of want, when it has 8 */
  block_visit_fn fn;
  void *arg;
  const uint8_t *p;          /* the next entry */
  const uint8_t *whole;      /* the last entry with shared == 0: its key is all there */
  const uint8_t *prev;       /* the entry before p; NULL at the block's start or after a jump */
  const uint8_t *prev_whole; /* prev's `whole` */
  size_t key_len;            /* of prev */
  uint64_t count;            /* entries decoded */
  /* block_scan_containing: the needles (NULL for a scan by value); an entry is tested only
     when it holds the place decode_until is sent to (it ends past `stop - 1`). nn 0 with nd
     set: every entry is visited. */
  const block_needle_t *nd;
  size_t nn;
} value_scan_t;

static inline int value_equal(const uint8_t *want, size_t n, uint64_t want_tail,
                              const uint8_t *v, uint32_t vlen) {
  if (vlen != n) return 0;
  if (n >= 8) { /* the last 8 bytes first, as one word: values often share a prefix */
    uint64_t tail;
    memcpy(&tail, v + n - 8, 8);
    return tail == want_tail && memcmp(v, want, n - 8) == 0;
  }
  return n == 0 || (v[n - 1] == want[n - 1] && memcmp(v, want, n) == 0);
}

/* Whether v[0, vlen) holds one of the needles nd[0, nn) as bytes. */
static int holds_needle(const block_needle_t *nd, size_t nn, const uint8_t *v, uint32_t vlen) {
  for (size_t i = 0; i < nn; i++)
    if (nd[i].len <= vlen && memmem(v, vlen, nd[i].bytes, nd[i].len)) return 1;
  return 0;
}

/* The last restart point at or below pos (restart 0, at offset 0, when none is). */
static uint32_t restart_below(const block_t *b, uint32_t pos) {
  uint32_t lo = 0, hi = b->nrestarts; /* the answer is in [lo, hi) */
  while (hi - lo > 1) {
    uint32_t mid = lo + (hi - lo) / 2;
    if (restart_point(b, mid) <= pos)
      lo = mid;
    else
      hi = mid;
  }
  return lo;
}

/* Finds the entry before `entry`, which begins the restart run a scan jumped to (so it
   decoded nothing before it), and the last entry at or before that one sharing nothing (its
   `whole`), by decoding the headers of the run before. -1 if entry is not a restart point
   after the first, or the run before does not end there. */
static int run_before(const block_t *b, const uint8_t *entry, const uint8_t **prev,
                      const uint8_t **prev_whole) {
  const uint8_t *base = b->data, *limit = base + b->restarts_offset;
  uint32_t r = restart_below(b, (uint32_t)(entry - base));
  if (r == 0 || restart_point(b, r) != (uint32_t)(entry - base)) return -1;
  const uint8_t *p = base + restart_point(b, r - 1), *last = NULL, *whole = p;
  while (p < entry) {
    uint32_t shared, non_shared, vlen;
    const uint8_t *q = decode_header(p, limit, &shared, &non_shared, &vlen);
    if (!q || (size_t)(limit - q) < (size_t)non_shared + vlen) return -1;
    if (shared == 0) whole = p;
    last = p;
    p = q + non_shared + vlen;
  }
  if (p != entry || !last) return -1;
  *prev = last;
  *prev_whole = whole;
  return 0;
}

/* Rebuilds the match's predecessor's key (from prev_whole, the last entry before it that
   shares nothing) and then the match's from it, and visits the match. A match a jump landed
   on has no decoded predecessor (prev NULL): unless it is the block's first entry, its run's
   predecessor is found first (run_before). 1 if fn stops the scan, -1 on a malformed entry. */
static int visit_match(value_scan_t *s, const uint8_t *entry, const uint8_t *prev,
                       const uint8_t *prev_whole, const uint8_t *v, uint32_t vlen) {
  const uint8_t *base = s->b->data;
  if (!prev && entry != base && run_before(s->b, entry, &prev, &prev_whole)) return -1;
  block_cursor_t c, pc;
  block_cursor_init(&c, s->b, NULL);
  block_cursor_init(&pc, s->b, NULL);
  int rc = 0;
  if (prev) {
    rc = key_at(&pc, (uint32_t)(prev_whole - base), (uint32_t)(prev - base));
    if (rc == 0 && (rc = key_reserve(&c, pc.key_len, 0)) == 0) {
      memcpy(c.key, pc.key, pc.key_len);
      c.key_len = pc.key_len;
    }
  }
  if (rc == 0) rc = parse_entry(&c, (uint32_t)(entry - base));
  if (rc == 0)
    rc = s->fn(s->arg, c.key, c.key_len, v, vlen, prev ? pc.key : NULL, prev ? pc.key_len : 0) != 0;
  block_cursor_release(&c);
  block_cursor_release(&pc);
  return rc;
}

/* Decodes the entries that begin before `stop`, visiting those whose value is want. 0 when
   it gets there (or to the block's end), 1 if fn stopped it, -1 on a malformed entry. */
static int decode_until(value_scan_t *s, const uint8_t *stop) {
  /* The state in locals for the loop (the visitor's calls would otherwise make the compiler
     reload it from *s at every entry); written back at every return. */
  const uint8_t *limit = s->b->data + s->b->restarts_offset, *want = s->want;
  const size_t n = s->n;
  const uint64_t want_tail = s->want_tail;
  const uint8_t *p = s->p, *whole = s->whole, *prev = s->prev, *prev_whole = s->prev_whole;
  int rc = 0;
  size_t key_len = s->key_len;
  uint64_t count = s->count;
  while (p < limit && p < stop) {
    const uint8_t *entry = p;
    const uint8_t *entry_prev = prev, *entry_prev_whole = prev_whole;
    uint32_t shared, non_shared, vlen;
    const uint8_t *q = decode_header(entry, limit, &shared, &non_shared, &vlen);
    /* The same checks as parse_entry, without copying the key. */
    if (!q || shared > key_len || (size_t)(limit - q) < (size_t)non_shared + vlen) {
      rc = -1;
      break;
    }
    if (shared == 0) whole = entry;
    prev = entry;
    prev_whole = whole;
    key_len = (size_t)shared + non_shared;
    const uint8_t *v = q + non_shared;
    p = v + vlen;
    count++;
    if (s->nd ? s->nn && (p < stop || !holds_needle(s->nd, s->nn, v, vlen))
              : !value_equal(want, n, want_tail, v, vlen))
      continue;
    if ((rc = visit_match(s, entry, entry_prev, entry_prev_whole, v, vlen)) != 0) break;
  }
  s->p = p, s->whole = whole, s->prev = prev, s->prev_whole = prev_whole;
  s->key_len = key_len, s->count = count;
  return rc;
}

/* Whether want's n bytes lie at c, given that its first and last two bytes do. */
static inline int rest_equal(const uint8_t *c, const uint8_t *want, size_t n) {
  return memcmp(c + 1, want + 1, n - 2) == 0;
}

#ifdef BFH_HAVE_AVX2_PATH
/* find_bytes' loop, 32 starts at a time from *q while they fit: the starts whose first and
   last two bytes are want's are compared in full (the last two tell apart values that share
   a prefix, as "Value<id>" do; the first, values that share a suffix). The hit, or NULL with
   *q where the loop stopped. Compiled for AVX2 whatever the build's -march; run only where
   the CPU has it. */
__attribute__((target("avx2"))) static const uint8_t *find_bytes_avx2(const uint8_t **qp,
                                                                      const uint8_t *last,
                                                                      const uint8_t *want,
                                                                      size_t n) {
  const __m256i first = _mm256_set1_epi8((char)want[0]);
  const __m256i second_last = _mm256_set1_epi8((char)want[n - 2]);
  const __m256i final = _mm256_set1_epi8((char)want[n - 1]);
  const uint8_t *q = *qp;
  /* The loads reach q + 31 + n - 1 <= last + n - 1, the last byte of the range. */
  for (; last - q >= 31; q += 32) {
    __m256i a = _mm256_cmpeq_epi8(_mm256_loadu_si256((const __m256i *)q), first);
    __m256i m = _mm256_cmpeq_epi8(_mm256_loadu_si256((const __m256i *)(q + n - 2)), second_last);
    __m256i z = _mm256_cmpeq_epi8(_mm256_loadu_si256((const __m256i *)(q + n - 1)), final);
    uint32_t mask = (uint32_t)_mm256_movemask_epi8(_mm256_and_si256(_mm256_and_si256(a, m), z));
    for (; mask; mask &= mask - 1) {
      const uint8_t *c = q + __builtin_ctz(mask);
      if (rest_equal(c, want, n)) return c;
    }
  }
  *qp = q;
  return NULL;
}
#endif

/* The first q in [from, end - n] at which want's n bytes lie, or NULL. n >= 2. */
static const uint8_t *find_bytes(const uint8_t *from, const uint8_t *end, const uint8_t *want,
                                 size_t n) {
  if ((size_t)(end - from) < n) return NULL;
  const uint8_t *last = end - n; /* the last start */
  const uint8_t *q = from;
#ifdef BFH_HAVE_AVX2_PATH
  if (cpu_has_avx2()) {
    const uint8_t *hit = find_bytes_avx2(&q, last, want, n);
    if (hit) return hit;
  }
#endif
  while (q <= last && (q = memchr(q, want[0], (size_t)(last - q) + 1))) {
    if (q[n - 2] == want[n - 2] && q[n - 1] == want[n - 1] && rest_equal(q, want, n)) return q;
    q++;
  }
  return NULL;
}

/* Resumes decoding at offset j of the block if that lies after the next entry to decode and
   not after pos. */
static void jump(value_scan_t *s, uint32_t j, uint32_t pos) {
  const uint8_t *to = s->b->data + j;
  if (to <= s->p || j > pos) return;
  s->p = s->whole = s->prev_whole = to;
  s->prev = NULL;
  s->key_len = 0;
}

static value_scan_t scan_start(const block_t *b, const void *val, size_t n, block_visit_fn fn,
                               void *arg) {
  value_scan_t s = {.b = b, .want = val, .n = n, .fn = fn, .arg = arg, .p = b->data,
                    .whole = b->data, .prev_whole = b->data};
  if (n >= 8) memcpy(&s.want_tail, s.want + n - 8, 8);
  return s;
}

int block_scan_value_all(const block_t *b, const void *val, size_t n, block_visit_fn fn,
                         void *arg, uint64_t *entries) {
  value_scan_t s = scan_start(b, val, n, fn, arg);
  int rc = decode_until(&s, b->data + b->restarts_offset);
  *entries += s.count;
  return rc;
}

int block_scan_value(const block_t *b, const void *val, size_t n, block_visit_fn fn, void *arg,
                     uint64_t *entries) {
  if (n < BLOCK_SCAN_SKIP_MIN) return block_scan_value_all(b, val, n, fn, arg, entries);
  const uint8_t *base = b->data, *limit = base + b->restarts_offset, *hit;
  value_scan_t s = scan_start(b, val, n, fn, arg);
  int rc = 0;
  /* Every match's value bytes lie at or after the next entry to decode, so the entries
     before the first place they occur hold none: skip to the last restart point at or below
     that place (the entry holding the place begins there or after) and decode through that
     entry. A match on the restart point itself finds its predecessor in visit_match. */
  while (rc == 0 && s.p < limit && (hit = find_bytes(s.p, limit, s.want, n))) {
    uint32_t pos = (uint32_t)(hit - base);
    jump(&s, restart_point(b, restart_below(b, pos)), pos);
    rc = decode_until(&s, hit + 1);
  }
  *entries += s.count;
  return rc;
}

/* The first place in [from, end) where needle nd begins, or NULL. */
static const uint8_t *find_needle(const uint8_t *from, const uint8_t *end,
                                  const block_needle_t *nd) {
  if (nd->len >= 2) return find_bytes(from, end, nd->bytes, nd->len);
  return from < end ? memchr(from, *(const uint8_t *)nd->bytes, (size_t)(end - from)) : NULL;
}

int block_scan_containing(const block_t *b, const block_needle_t *nd, size_t nn, block_visit_fn fn,
                          void *arg, uint64_t *entries) {
  const uint8_t *base = b->data, *limit = base + b->restarts_offset;
  const uint8_t *next[BLOCK_NEEDLES_MAX]; /* each needle's first place at or after s.p */
  value_scan_t s = scan_start(b, NULL, 0, fn, arg);
  s.nd = nd;
  s.nn = nn <= BLOCK_NEEDLES_MAX ? nn : 0;
  int rc = 0;
  if (s.nn == 0) { /* no needle to look for: every entry is visited */
    rc = decode_until(&s, limit);
    *entries += s.count;
    return rc;
  }
  for (size_t i = 0; i < nn; i++) next[i] = find_needle(base, limit, &nd[i]);
  /* The first place at or after s.p where any needle begins is in the entry that holds it:
     the entries decoded before that one begin at or after s.p and end at or before the
     place, so none of their values holds a needle; decode_until tests only the one. */
  while (rc == 0 && s.p < limit) {
    const uint8_t *hit = NULL;
    for (size_t i = 0; i < nn; i++) {
      if (next[i] && next[i] < s.p) next[i] = find_needle(s.p, limit, &nd[i]);
      if (next[i] && (!hit || next[i] < hit)) hit = next[i];
    }
    if (!hit) break;
    uint32_t pos = (uint32_t)(hit - base);
    jump(&s, restart_point(b, restart_below(b, pos)), pos);
    rc = decode_until(&s, hit + 1);
  }
  *entries += s.count;
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

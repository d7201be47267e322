/* range_filter: a Grafite-style range filter over an Elias-Fano list (range_filter.h). */
#include "filters/range_filter.h"

#include <stdlib.h>
#include <string.h>

#include "filters/hash.h"
#include "util/coding.h"
#include "util/crc32c.h"
#include "util/sort.h"

/* One zero of the high bits in SELECT_STRIDE is sampled: select0 starts from the sample and
   scans words from there. */
#define SELECT_STRIDE 64

struct range_filter {
  uint64_t n;          /* distinct codes */
  uint64_t r;          /* the hash range: n << (bits - 2) */
  uint64_t seed;
  unsigned bits;       /* bits per key */
  unsigned range_log2; /* L = 2^range_log2 */
  unsigned low_bits;   /* Elias-Fano: the low bits of each element, stored as they are */
  uint64_t *low;       /* n * low_bits bits */
  uint64_t *high;      /* high_len bits: element i sets bit (v_i >> low_bits) + i */
  uint64_t high_len;
  uint64_t *zeros;     /* zeros[k]: the position of zero number k * SELECT_STRIDE in high */
  uint64_t nzeros;     /* sampled zeros */
};

static size_t words(uint64_t bits) { return (size_t)((bits + 63) / 64); }

/* r for n codes at bits per key, or 0 when it is above 2^62. */
static uint64_t hash_range(uint64_t n, unsigned bits) {
  unsigned shift = bits - 2;
  if (n == 0) return 0;
  if (n > (UINT64_C(1) << 62) >> shift) return 0;
  return n << shift;
}

/* low_bits: floor(log2(r / n)), the width that keeps the high part near 2n bits. */
static unsigned low_width(uint64_t n, uint64_t r) {
  unsigned w = 0;
  while (n && (r / n) >> (w + 1)) w++;
  return w;
}

static uint64_t mulhi(uint64_t a, uint64_t b) { return (uint64_t)(((unsigned __int128)a * b) >> 64); }

/* h(x): x shifted by its block's hash, mod r. */
static uint64_t hash_code(const range_filter_t *f, uint64_t x) {
  uint64_t block = x >> f->range_log2;
  uint64_t q = mulhi(bfh_hash64(&block, sizeof block, f->seed), f->r);
  return (uint64_t)(((unsigned __int128)q + x % f->r) % f->r);
}

static uint64_t low_get(const range_filter_t *f, uint64_t i) {
  if (f->low_bits == 0) return 0;
  uint64_t bit = i * f->low_bits, w = bit / 64, off = bit % 64;
  uint64_t v = f->low[w] >> off;
  if (off + f->low_bits > 64) v |= f->low[w + 1] << (64 - off);
  return f->low_bits == 64 ? v : v & ((UINT64_C(1) << f->low_bits) - 1);
}

static void low_set(range_filter_t *f, uint64_t i, uint64_t v) {
  if (f->low_bits == 0) return;
  uint64_t bit = i * f->low_bits, w = bit / 64, off = bit % 64;
  f->low[w] |= v << off;
  if (off + f->low_bits > 64) f->low[w + 1] |= v >> (64 - off);
}

/* The position in high of its zero number k (k < the zeros in high). */
static uint64_t select0(const range_filter_t *f, uint64_t k) {
  uint64_t pos = f->zeros[k / SELECT_STRIDE];
  uint64_t left = k % SELECT_STRIDE; /* zeros still to pass after the sampled one */
  uint64_t w = pos / 64;
  uint64_t word = ~f->high[w] & (~UINT64_C(0) << (pos % 64)); /* zeros from pos on */
  for (;;) {
    uint64_t c = (uint64_t)__builtin_popcountll(word);
    if (left < c) break;
    left -= c;
    word = ~f->high[++w];
  }
  while (left--) word &= word - 1;
  return w * 64 + (uint64_t)__builtin_ctzll(word);
}

/* 1 if the list holds an element of [a, b] (a <= b < r). */
static int list_meets(const range_filter_t *f, uint64_t a, uint64_t b) {
  uint64_t ha = a >> f->low_bits, hb = b >> f->low_bits;
  /* The first element whose high part is >= ha sits right after zero number ha - 1. */
  uint64_t pos = ha == 0 ? 0 : select0(f, ha - 1) + 1;
  uint64_t i = pos - ha; /* elements before pos */
  for (; i < f->n && pos < f->high_len; pos++) {
    if (!((f->high[pos / 64] >> (pos % 64)) & 1)) { /* a zero: the next high part */
      if (pos - i >= hb) return 0;
      continue;
    }
    uint64_t v = (pos - i) << f->low_bits | low_get(f, i);
    if (v >= a) return v <= b;
    i++;
  }
  return 0;
}

/* Sorts and dedupes the hashes of codes into f's list; f->n, r, low_bits set. */
static int fill_list(range_filter_t *f, uint64_t *h, size_t n) {
  if (n && u64_radix_sort(h, n, f->r > 1 ? 64 - (unsigned)__builtin_clzll(f->r - 1) : 1) != ST_OK)
    return ST_E_NOMEM;
  size_t m = 0;
  for (size_t i = 0; i < n; i++)
    if (m == 0 || h[i] != h[m - 1]) h[m++] = h[i];
  f->n = m;
  f->high_len = m + (f->r >> f->low_bits) + 1;
  f->low = calloc(words(m * (uint64_t)f->low_bits) + 1, sizeof(uint64_t));
  f->high = calloc(words(f->high_len) + 1, sizeof(uint64_t));
  if (!f->low || !f->high) return ST_E_NOMEM;
  for (uint64_t i = 0; i < m; i++) {
    uint64_t pos = (h[i] >> f->low_bits) + i;
    f->high[pos / 64] |= UINT64_C(1) << (pos % 64);
    low_set(f, i, h[i] & (f->low_bits ? (UINT64_C(1) << f->low_bits) - 1 : 0));
  }
  return ST_OK;
}

/* The select samples of f->high. */
static int sample_zeros(range_filter_t *f) {
  uint64_t total = f->high_len - f->n;
  f->nzeros = (total + SELECT_STRIDE - 1) / SELECT_STRIDE;
  f->zeros = malloc((size_t)(f->nzeros ? f->nzeros : 1) * sizeof(uint64_t));
  if (!f->zeros) return ST_E_NOMEM;
  uint64_t seen = 0;
  for (uint64_t pos = 0; pos < f->high_len; pos++) {
    if ((f->high[pos / 64] >> (pos % 64)) & 1) continue;
    if (seen % SELECT_STRIDE == 0) f->zeros[seen / SELECT_STRIDE] = pos;
    seen++;
  }
  return ST_OK;
}

static range_filter_t *filter_new(unsigned bits, unsigned range_log2, uint64_t seed) {
  range_filter_t *f = calloc(1, sizeof *f);
  if (f) {
    f->bits = bits;
    f->range_log2 = range_log2;
    f->seed = seed;
  }
  return f;
}

static int check_params(unsigned bits, unsigned range_log2, err_t *err) {
  if (bits < RANGE_FILTER_MIN_BITS || bits > RANGE_FILTER_MAX_BITS)
    return err_set(err, ST_E_INVALID, "range filter: %u bits per key is not in %u..%u", bits,
                   RANGE_FILTER_MIN_BITS, RANGE_FILTER_MAX_BITS);
  if (range_log2 > RANGE_FILTER_MAX_LOG2)
    return err_set(err, ST_E_INVALID, "range filter: ranges of 2^%u codes are above 2^%u",
                   range_log2, RANGE_FILTER_MAX_LOG2);
  return ST_OK;
}

int range_filter_build(const uint64_t *codes, size_t n, unsigned bits_per_key,
                       unsigned range_log2, uint64_t seed, range_filter_t **out, err_t *err) {
  *out = NULL;
  int rc = check_params(bits_per_key, range_log2, err);
  if (rc != ST_OK) return rc;
  range_filter_t *f = filter_new(bits_per_key, range_log2, seed);
  uint64_t *h = malloc((n ? n : 1) * sizeof *h);
  if (!f || !h) {
    free(h);
    free(f);
    return err_set(err, ST_E_NOMEM, "range filter: out of memory for %zu codes", n);
  }
  f->r = hash_range(n, bits_per_key);
  if (n && f->r == 0) {
    free(h);
    free(f);
    return err_set(err, ST_E_INVALID, "range filter: %zu codes at %u bits per key are too many",
                   n, bits_per_key);
  }
  f->low_bits = low_width(n, f->r);
  for (size_t i = 0; i < n; i++) h[i] = hash_code(f, codes[i]);
  rc = fill_list(f, h, n);
  free(h);
  if (rc == ST_OK) rc = sample_zeros(f);
  if (rc != ST_OK) {
    range_filter_destroy(f);
    return err_set(err, rc, "range filter: out of memory for %zu codes", n);
  }
  *out = f;
  return ST_OK;
}

void range_filter_destroy(range_filter_t *f) {
  if (!f) return;
  free(f->low);
  free(f->high);
  free(f->zeros);
  free(f);
}

/* 1 if h(S) meets the h values of [lo, hi], a piece of one block. */
static int block_meets(const range_filter_t *f, uint64_t lo, uint64_t hi) {
  if (hi - lo >= f->r - 1) return 1; /* the piece covers every h value */
  uint64_t a = hash_code(f, lo), len = hi - lo;
  if (len <= f->r - 1 - a) return list_meets(f, a, a + len);
  return list_meets(f, a, f->r - 1) || list_meets(f, 0, len - (f->r - a));
}

int range_filter_may_contain(const range_filter_t *f, uint64_t lo, uint64_t hi) {
  if (f->n == 0) return 0;
  uint64_t first = lo >> f->range_log2, last = hi >> f->range_log2;
  if (last - first >= RANGE_FILTER_MAX_BLOCKS) return 1;
  for (uint64_t b = first;; b++) {
    uint64_t start = b == first ? lo : b << f->range_log2;
    uint64_t end = b == last ? hi : ((b + 1) << f->range_log2) - 1;
    if (block_meets(f, start, end)) return 1;
    if (b == last) return 0;
  }
}

uint64_t range_filter_count(const range_filter_t *f) { return f->n; }

size_t range_filter_memory(const range_filter_t *f) {
  return sizeof *f + (words(f->n * (uint64_t)f->low_bits) + 1 + words(f->high_len) + 1 +
                      (f->nzeros ? f->nzeros : 1)) * sizeof(uint64_t);
}


static size_t low_words(const range_filter_t *f) { return words(f->n * (uint64_t)f->low_bits); }

size_t range_filter_encoded_size(const range_filter_t *f) {
  return 3 + 8 + varint_length(f->n) + (low_words(f) + words(f->high_len)) * 8 + 4;
}

void range_filter_encode(const range_filter_t *f, uint8_t *out) {
  uint8_t *p = out;
  *p++ = RANGE_FILTER_VERSION;
  *p++ = (uint8_t)f->range_log2;
  *p++ = (uint8_t)f->bits;
  encode_fixed64(p, f->seed);
  p = encode_varint64(p + 8, f->n);
  for (size_t i = 0; i < low_words(f); i++, p += 8) encode_fixed64(p, f->low[i]);
  for (size_t i = 0; i < words(f->high_len); i++, p += 8) encode_fixed64(p, f->high[i]);
  encode_fixed32(p, crc32c_mask(crc32c_value(out, (size_t)(p - out))));
}

/* 1 if f's list is what an encoder writes: n ones in high, each element above the one
   before it and below r, and no bit set past high_len or past the low words' last element. */
static int list_well_formed(const range_filter_t *f) {
  uint64_t ones = 0, prev = 0;
  for (uint64_t pos = 0; pos < words(f->high_len) * 64; pos++) {
    if (!((f->high[pos / 64] >> (pos % 64)) & 1)) continue;
    if (pos >= f->high_len || ones >= f->n) return 0;
    uint64_t v = (pos - ones) << f->low_bits | low_get(f, ones);
    if ((ones > 0 && v <= prev) || v >= f->r) return 0;
    prev = v;
    ones++;
  }
  uint64_t used = f->n * (uint64_t)f->low_bits;
  if (used % 64 && (f->low[used / 64] >> (used % 64)) != 0) return 0;
  return ones == f->n;
}

int range_filter_decode(const uint8_t *data, size_t len, range_filter_t **out, err_t *err) {
  *out = NULL;
  if (len < 3 + 8 + 1 + 4)
    return err_set(err, ST_E_CORRUPT, "range filter: %zu bytes: truncated", len);
  uint32_t want = crc32c_unmask(decode_fixed32(data + len - 4));
  if (crc32c_value(data, len - 4) != want)
    return err_set(err, ST_E_CORRUPT, "range filter: checksum mismatch at offset %zu", len - 4);
  if (data[0] != RANGE_FILTER_VERSION)
    return err_set(err, ST_E_CORRUPT, "range filter: version %u at offset 0 is unknown", data[0]);
  err_t perr;
  err_clear(&perr);
  if (check_params(data[2], data[1], &perr) != ST_OK)
    return err_set(err, ST_E_CORRUPT, "%s (offset 1)", perr.msg);
  uint64_t n;
  const uint8_t *limit = data + len - 4;
  const uint8_t *p = decode_varint64(data + 11, limit, &n);
  uint64_t r = p ? hash_range(n, data[2]) : 0;
  if (!p || (size_t)(p - (data + 11)) != varint_length(n) || (n && r == 0)) /* one encoding */
    return err_set(err, ST_E_CORRUPT, "range filter: bad count at offset 11");
  range_filter_t *f = filter_new(data[2], data[1], decode_fixed64(data + 3));
  if (!f) return err_set(err, ST_E_NOMEM, "range filter: out of memory");
  f->n = n;
  f->r = r;
  f->low_bits = low_width(n, r);
  f->high_len = n + (n ? r >> f->low_bits : 0) + 1;
  size_t nlow = low_words(f), nhigh = words(f->high_len);
  size_t body = (size_t)(limit - p);
  if (body != (nlow + nhigh) * 8) {
    range_filter_destroy(f);
    return err_set(err, ST_E_CORRUPT, "range filter: %zu bytes of lists at offset %zu, not %zu",
                   body, (size_t)(p - data), (nlow + nhigh) * 8);
  }
  f->low = calloc(nlow + 1, sizeof(uint64_t));
  f->high = calloc(nhigh + 1, sizeof(uint64_t));
  int rc = f->low && f->high ? ST_OK : ST_E_NOMEM;
  for (size_t i = 0; rc == ST_OK && i < nlow; i++, p += 8) f->low[i] = decode_fixed64(p);
  for (size_t i = 0; rc == ST_OK && i < nhigh; i++, p += 8) f->high[i] = decode_fixed64(p);
  if (rc == ST_OK && !list_well_formed(f)) rc = ST_E_CORRUPT;
  if (rc == ST_OK) rc = sample_zeros(f);
  if (rc != ST_OK) {
    range_filter_destroy(f);
    return rc == ST_E_NOMEM ? err_set(err, rc, "range filter: out of memory")
                            : err_set(err, rc, "range filter: the list at offset %zu is not "
                                               "ascending below its range", (size_t)(11 + varint_length(n)));
  }
  *out = f;
  return ST_OK;
}

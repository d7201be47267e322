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
/* The most words a piece of the body takes: RANGE_FILTER_PIECE codes of at most
   RANGE_FILTER_MAX_BITS - 2 low bits each. */
#define PIECE_WORDS_MAX ((RANGE_FILTER_PIECE * (RANGE_FILTER_MAX_BITS - 2) + 63) / 64)

struct range_filter {
  uint64_t n; /* distinct codes */
  uint64_t r; /* the hash range: n << (bits - 2) */
  uint64_t seed;
  unsigned bits;       /* bits per key */
  unsigned range_log2; /* L = 2^range_log2 */
  unsigned low_bits;   /* Elias-Fano: the low bits of each element, stored as they are */
  uint64_t *low;       /* n * low_bits bits */
  uint64_t *high;      /* high_len bits: element i sets bit (v_i >> low_bits) + i */
  uint64_t high_len;
  uint64_t *zeros; /* zeros[k]: the position of zero number k * SELECT_STRIDE in high */
  uint64_t nzeros; /* sampled zeros */
};

static size_t words(uint64_t bits) {
  return (size_t)((bits + 63) / 64);
}

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

static uint64_t mulhi(uint64_t a, uint64_t b) {
  return (uint64_t)(((unsigned __int128)a * b) >> 64);
}

/* h(x): x shifted by its block's hash, mod r. */
static uint64_t hash_code(const range_filter_t *f, uint64_t x) {
  uint64_t block = x >> f->range_log2;
  uint64_t q = mulhi(bfh_hash64(&block, sizeof block, f->seed), f->r);
  return (uint64_t)(((unsigned __int128)q + x % f->r) % f->r);
}

/* Element i of an array of width-bit values packed from bit 0 (one word past the last
   value's is readable). */
static uint64_t low_get(const uint64_t *low, uint64_t i, unsigned width) {
  if (width == 0) return 0;
  uint64_t bit = i * width, w = bit / 64, off = bit % 64;
  uint64_t v = low[w] >> off;
  if (off + width > 64) v |= low[w + 1] << (64 - off);
  return width == 64 ? v : v & ((UINT64_C(1) << width) - 1);
}

static void low_set(uint64_t *low, uint64_t i, unsigned width, uint64_t v) {
  if (width == 0) return;
  uint64_t bit = i * width, w = bit / 64, off = bit % 64;
  low[w] |= v << off;
  if (off + width > 64) low[w + 1] |= v >> (64 - off);
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

/* Where a range finds the low bits of code i: the filter's own words (a whole filter), or
   its body's pieces read through read, the last piece read kept. */
typedef struct low_src {
  const range_filter_t *f;
  range_filter_read_fn read;
  void *arg;
  uint64_t *pieces_read;
  err_t *err;
  uint64_t piece; /* the piece in words; UINT64_MAX: none yet */
  uint64_t words[PIECE_WORDS_MAX + 1];
} low_src_t;

#define LOW_UNKNOWN 1 /* low_at: no words and no reader: the range is "maybe" */

/* Codes in piece p, and its words. */
static uint64_t piece_codes(const range_filter_t *f, uint64_t p) {
  uint64_t first = p * RANGE_FILTER_PIECE;
  return f->n - first < RANGE_FILTER_PIECE ? f->n - first : RANGE_FILTER_PIECE;
}
static size_t piece_words(const range_filter_t *f, uint64_t p) {
  return words(piece_codes(f, p) * f->low_bits);
}
static uint64_t pieces(const range_filter_t *f) {
  return (f->n + RANGE_FILTER_PIECE - 1) / RANGE_FILTER_PIECE;
}

/* The masked CRC of piece p's words. */
static uint32_t piece_crc(uint64_t p, const uint8_t *words_le, size_t len) {
  uint8_t num[4];
  encode_fixed32(num, (uint32_t)p);
  return crc32c_mask(crc32c_extend(crc32c_value(num, sizeof num), words_le, len));
}

/* Reads piece p into s->words and checks its CRC. */
static int read_piece(low_src_t *s, uint64_t p) {
  const range_filter_t *f = s->f;
  size_t nw = piece_words(f, p), len = nw * 8 + 4;
  uint64_t off = p * range_filter_piece_bytes(f);
  uint8_t buf[(PIECE_WORDS_MAX + 1) * 8];
  int rc = s->read(s->arg, off, len, buf, s->err);
  if (rc != ST_OK) return rc;
  if (s->pieces_read) (*s->pieces_read)++;
  if (piece_crc(p, buf, nw * 8) != decode_fixed32(buf + nw * 8))
    return err_set(s->err, ST_E_CORRUPT,
                   "range filter: piece %llu at offset %llu of its body: "
                   "checksum mismatch",
                   (unsigned long long)p, (unsigned long long)off);
  for (size_t w = 0; w < nw; w++) s->words[w] = decode_fixed64(buf + 8 * w);
  s->words[nw] = 0;
  s->piece = p;
  return ST_OK;
}

/* Code i's low bits into *v: ST_OK, LOW_UNKNOWN, or a read's error. */
static int low_at(low_src_t *s, uint64_t i, uint64_t *v) {
  const range_filter_t *f = s->f;
  if (f->low || f->low_bits == 0) { /* (no low bits: nothing to read) */
    *v = low_get(f->low, i, f->low_bits);
    return ST_OK;
  }
  if (!s->read) return LOW_UNKNOWN;
  uint64_t p = i / RANGE_FILTER_PIECE;
  if (s->piece != p) {
    int rc = read_piece(s, p);
    if (rc != ST_OK) return rc;
  }
  *v = low_get(s->words, i % RANGE_FILTER_PIECE, f->low_bits);
  return ST_OK;
}

/* 1 if the list holds an element of [a, b] (a <= b < r), 0 if not, or low_at's error. */
static int list_meets(low_src_t *s, uint64_t a, uint64_t b) {
  const range_filter_t *f = s->f;
  uint64_t ha = a >> f->low_bits, hb = b >> f->low_bits;
  /* The first element whose high part is >= ha sits right after zero number ha - 1. */
  uint64_t pos = ha == 0 ? 0 : select0(f, ha - 1) + 1;
  uint64_t i = pos - ha; /* elements before pos */
  for (; i < f->n && pos < f->high_len; pos++) {
    if (!((f->high[pos / 64] >> (pos % 64)) & 1)) { /* a zero: the next high part */
      if (pos - i >= hb) return 0;
      continue;
    }
    uint64_t hv = pos - i;            /* element i's high part, in [ha, hb] */
    if (hv > ha && hv < hb) return 1; /* inside [a, b] whatever its low bits */
    uint64_t low;
    int rc = low_at(s, i, &low);
    if (rc == LOW_UNKNOWN) return 1;
    if (rc != ST_OK) return rc;
    uint64_t v = hv << f->low_bits | low;
    if (v >= a) return v <= b;
    i++;
  }
  return 0;
}

/* Sorts the hashes h[0, m) of the m distinct codes into f's list (two codes may share a hash:
   the list keeps both, so that its length is the count r was made from, and a decode can
   make r again from it); f->r and low_bits set. */
static int fill_list(range_filter_t *f, uint64_t *h, size_t m) {
  if (m && u64_radix_sort(h, m, f->r > 1 ? 64 - (unsigned)__builtin_clzll(f->r - 1) : 1) != ST_OK)
    return ST_E_NOMEM;
  f->n = m;
  f->high_len = m + (f->r >> f->low_bits) + 1;
  f->low = calloc(words(m * (uint64_t)f->low_bits) + 1, sizeof(uint64_t));
  f->high = calloc(words(f->high_len) + 1, sizeof(uint64_t));
  if (!f->low || !f->high) return ST_E_NOMEM;
  for (uint64_t i = 0; i < m; i++) {
    uint64_t pos = (h[i] >> f->low_bits) + i;
    f->high[pos / 64] |= UINT64_C(1) << (pos % 64);
    low_set(f->low, i, f->low_bits, h[i] & (f->low_bits ? (UINT64_C(1) << f->low_bits) - 1 : 0));
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

int range_filter_build(const uint64_t *codes, size_t n, unsigned bits_per_key, unsigned range_log2,
                       uint64_t seed, range_filter_t **out, err_t *err) {
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
  /* The distinct codes: r is made from their count. */
  if (n) memcpy(h, codes, n * sizeof *h); /* codes may be NULL when n is 0 */
  if (n && u64_radix_sort(h, n, 64) != ST_OK) {
    free(h);
    free(f);
    return err_set(err, ST_E_NOMEM, "range filter: out of memory for %zu codes", n);
  }
  size_t m = 0;
  for (size_t i = 0; i < n; i++)
    if (m == 0 || h[i] != h[m - 1]) h[m++] = h[i];
  f->r = hash_range(m, bits_per_key);
  if (m && f->r == 0) {
    free(h);
    free(f);
    return err_set(err, ST_E_INVALID, "range filter: %zu codes at %u bits per key are too many", m,
                   bits_per_key);
  }
  f->low_bits = low_width(m, f->r);
  for (size_t i = 0; i < m; i++) h[i] = hash_code(f, h[i]);
  rc = fill_list(f, h, m);
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

/* 1 if h(S) meets the h values of [lo, hi], a piece of one block; 0 if not; or an error. */
static int block_meets(low_src_t *s, uint64_t lo, uint64_t hi) {
  const range_filter_t *f = s->f;
  if (hi - lo >= f->r - 1) return 1; /* the piece covers every h value */
  uint64_t a = hash_code(f, lo), len = hi - lo;
  if (len <= f->r - 1 - a) return list_meets(s, a, a + len);
  int rc = list_meets(s, a, f->r - 1);
  return rc != 0 ? rc : list_meets(s, 0, len - (f->r - a));
}

static int ask(low_src_t *s, uint64_t lo, uint64_t hi) {
  const range_filter_t *f = s->f;
  if (f->n == 0) return 0;
  uint64_t first = lo >> f->range_log2, last = hi >> f->range_log2;
  if (last - first >= RANGE_FILTER_MAX_BLOCKS) return 1;
  for (uint64_t b = first;; b++) {
    uint64_t start = b == first ? lo : b << f->range_log2;
    uint64_t end = b == last ? hi : ((b + 1) << f->range_log2) - 1;
    int rc = block_meets(s, start, end);
    if (rc != 0) return rc;
    if (b == last) return 0;
  }
}

int range_filter_may_contain(const range_filter_t *f, uint64_t lo, uint64_t hi) {
  low_src_t s = {.f = f, .piece = UINT64_MAX};
  return ask(&s, lo, hi) != 0; /* a whole filter reads nothing; a head alone says maybe */
}

int range_filter_ask(const range_filter_t *f, uint64_t lo, uint64_t hi, range_filter_read_fn read,
                     void *arg, uint64_t *pieces_read, err_t *err) {
  low_src_t s = {.f = f,
                 .read = read,
                 .arg = arg,
                 .pieces_read = pieces_read,
                 .err = err,
                 .piece = UINT64_MAX};
  return ask(&s, lo, hi);
}

uint64_t range_filter_count(const range_filter_t *f) {
  return f->n;
}

size_t range_filter_memory(const range_filter_t *f) {
  size_t low = f->low ? words(f->n * (uint64_t)f->low_bits) + 1 : 0;
  return sizeof *f +
         (low + words(f->high_len) + 1 + (f->nzeros ? f->nzeros : 1)) * sizeof(uint64_t);
}

static size_t low_words(const range_filter_t *f) {
  return words(f->n * (uint64_t)f->low_bits);
}

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

/* 1 if f's list is what an encoder writes: n ones in high, each element at least the one
   before it and below r, and no bit set past high_len; 0 if not, or a read's error. Each
   element's low bits come from s (the filter's own words, or its body's pieces); without
   them (LOW_UNKNOWN) only the ones and the high parts' order are checked. */
static int list_well_formed(low_src_t *s) {
  const range_filter_t *f = s->f;
  uint64_t ones = 0, prev = 0;
  for (uint64_t pos = 0; pos < words(f->high_len) * 64; pos++) {
    if (!((f->high[pos / 64] >> (pos % 64)) & 1)) continue;
    if (pos >= f->high_len || ones >= f->n) return 0;
    uint64_t low = 0;
    int rc = low_at(s, ones, &low);
    if (rc < 0) return rc;
    uint64_t v = (pos - ones) << f->low_bits | low;
    if (v >= f->r) return 0;
    if (rc == ST_OK && ones > 0 && v < prev) return 0;
    prev = v;
    ones++;
  }
  return ones == f->n;
}

/* 1 if no bit is set past the first `used` bits of words w. */
static int tail_clear(const uint64_t *w, uint64_t used) {
  return used % 64 == 0 || (w[used / 64] >> (used % 64)) == 0;
}

/* Parses what a whole filter and a head share, up to the words: *f (new) with its
   parameters, *p at its words, *limit at its CRC; checks the CRC, the version (want) and
   the count. ST_OK, ST_E_CORRUPT or ST_E_NOMEM with a message. */
static int decode_start(const uint8_t *data, size_t len, unsigned want, range_filter_t **f,
                        const uint8_t **p, const uint8_t **limit, err_t *err) {
  *f = NULL;
  if (len < 3 + 8 + 1 + 4)
    return err_set(err, ST_E_CORRUPT, "range filter: %zu bytes: truncated", len);
  uint32_t crc = crc32c_unmask(decode_fixed32(data + len - 4));
  if (crc32c_value(data, len - 4) != crc)
    return err_set(err, ST_E_CORRUPT, "range filter: checksum mismatch at offset %zu", len - 4);
  if (data[0] != want)
    return err_set(err, ST_E_CORRUPT, "range filter: version %u at offset 0 is not %u", data[0],
                   want);
  err_t perr;
  err_clear(&perr);
  if (check_params(data[2], data[1], &perr) != ST_OK)
    return err_set(err, ST_E_CORRUPT, "%s (offset 1)", perr.msg);
  uint64_t n;
  *limit = data + len - 4;
  *p = decode_varint64(data + 11, *limit, &n);
  uint64_t r = *p ? hash_range(n, data[2]) : 0;
  if (!*p || (size_t)(*p - (data + 11)) != varint_length(n) || (n && r == 0)) /* one encoding */
    return err_set(err, ST_E_CORRUPT, "range filter: bad count at offset 11");
  range_filter_t *g = filter_new(data[2], data[1], decode_fixed64(data + 3));
  if (!g) return err_set(err, ST_E_NOMEM, "range filter: out of memory");
  g->n = n;
  g->r = r;
  g->low_bits = low_width(n, r);
  g->high_len = n + (n ? r >> g->low_bits : 0) + 1;
  *f = g;
  return ST_OK;
}

/* Reads nw fixed64 words at *p into a new array (one word more, zero). */
static uint64_t *decode_words(const uint8_t **p, size_t nw) {
  uint64_t *w = calloc(nw + 1, sizeof *w);
  if (!w) return NULL;
  for (size_t i = 0; i < nw; i++, *p += 8) w[i] = decode_fixed64(*p);
  return w;
}

/* The end of a decode: the list's check (without its low bits for a head), the select
   samples, and *out; f is destroyed on failure. */
static int decode_finish(range_filter_t *f, size_t list_at, range_filter_t **out, err_t *err) {
  int rc = f->low && f->high ? ST_OK : ST_E_NOMEM;
  if (rc == ST_OK) {
    low_src_t s = {.f = f, .piece = UINT64_MAX};
    int formed = list_well_formed(&s);
    if (formed != 1 || (f->low && !tail_clear(f->low, f->n * (uint64_t)f->low_bits)))
      rc = ST_E_CORRUPT;
  }
  if (rc == ST_OK) rc = sample_zeros(f);
  if (rc != ST_OK) {
    range_filter_destroy(f);
    return rc == ST_E_NOMEM ? err_set(err, rc, "range filter: out of memory")
                            : err_set(err, rc,
                                      "range filter: the list at offset %zu descends or is not "
                                      "below its range",
                                      list_at);
  }
  *out = f;
  return ST_OK;
}

int range_filter_decode(const uint8_t *data, size_t len, range_filter_t **out, err_t *err) {
  *out = NULL;
  range_filter_t *f;
  const uint8_t *p, *limit;
  int rc = decode_start(data, len, RANGE_FILTER_VERSION, &f, &p, &limit, err);
  if (rc != ST_OK) return rc;
  size_t nlow = low_words(f), nhigh = words(f->high_len), list_at = (size_t)(p - data);
  if ((size_t)(limit - p) != (nlow + nhigh) * 8) {
    range_filter_destroy(f);
    return err_set(err, ST_E_CORRUPT, "range filter: %zu bytes of lists at offset %zu, not %zu",
                   (size_t)(limit - p), list_at, (nlow + nhigh) * 8);
  }
  f->low = decode_words(&p, nlow);
  f->high = decode_words(&p, nhigh);
  return decode_finish(f, list_at, out, err);
}

size_t range_filter_head_size(const range_filter_t *f) {
  return 3 + 8 + varint_length(f->n) + words(f->high_len) * 8 + 4;
}

void range_filter_encode_head(const range_filter_t *f, uint8_t *out) {
  uint8_t *p = out;
  *p++ = RANGE_FILTER_HEAD_VERSION;
  *p++ = (uint8_t)f->range_log2;
  *p++ = (uint8_t)f->bits;
  encode_fixed64(p, f->seed);
  p = encode_varint64(p + 8, f->n);
  for (size_t i = 0; i < words(f->high_len); i++, p += 8) encode_fixed64(p, f->high[i]);
  encode_fixed32(p, crc32c_mask(crc32c_value(out, (size_t)(p - out))));
}

size_t range_filter_piece_bytes(const range_filter_t *f) {
  return words((uint64_t)RANGE_FILTER_PIECE * f->low_bits) * 8 + 4;
}

size_t range_filter_body_size(const range_filter_t *f) {
  uint64_t np = pieces(f);
  if (np == 0) return 0;
  return (size_t)((np - 1) * range_filter_piece_bytes(f) + piece_words(f, np - 1) * 8 + 4);
}

void range_filter_encode_body(const range_filter_t *f, uint8_t *out) {
  uint64_t w[PIECE_WORDS_MAX + 1];
  for (uint64_t p = 0; p < pieces(f); p++) {
    size_t nw = piece_words(f, p);
    memset(w, 0, sizeof w);
    for (uint64_t j = 0; j < piece_codes(f, p); j++)
      low_set(w, j, f->low_bits, low_get(f->low, p * RANGE_FILTER_PIECE + j, f->low_bits));
    uint8_t *q = out + p * range_filter_piece_bytes(f);
    for (size_t i = 0; i < nw; i++) encode_fixed64(q + 8 * i, w[i]);
    encode_fixed32(q + 8 * nw, piece_crc(p, q, nw * 8));
  }
}

int range_filter_decode_head(const uint8_t *data, size_t len, range_filter_t **out, err_t *err) {
  *out = NULL;
  range_filter_t *f;
  const uint8_t *p, *limit;
  int rc = decode_start(data, len, RANGE_FILTER_HEAD_VERSION, &f, &p, &limit, err);
  if (rc != ST_OK) return rc;
  size_t nhigh = words(f->high_len), list_at = (size_t)(p - data);
  if ((size_t)(limit - p) != nhigh * 8) {
    range_filter_destroy(f);
    return err_set(err, ST_E_CORRUPT,
                   "range filter: %zu bytes of high words at offset %zu, not %zu",
                   (size_t)(limit - p), list_at, nhigh * 8);
  }
  f->high = decode_words(&p, nhigh);
  if (!f->high) {
    range_filter_destroy(f);
    return err_set(err, ST_E_NOMEM, "range filter: out of memory");
  }
  /* decode_finish's check without low bits: the head holds none. */
  low_src_t s = {.f = f, .piece = UINT64_MAX};
  if (list_well_formed(&s) != 1) {
    unsigned long long n = f->n;
    range_filter_destroy(f);
    return err_set(err, ST_E_CORRUPT,
                   "range filter: the high words at offset %zu do not hold %llu codes below "
                   "the list's end",
                   list_at, n);
  }
  rc = sample_zeros(f);
  if (rc != ST_OK) {
    range_filter_destroy(f);
    return err_set(err, rc, "range filter: out of memory");
  }
  *out = f;
  return ST_OK;
}

int range_filter_whole(const range_filter_t *f) {
  return f->low != NULL || f->low_bits == 0;
}

int range_filter_verify_body(const range_filter_t *f, range_filter_read_fn read, void *arg,
                             err_t *err) {
  if (f->low) return ST_OK;
  low_src_t s = {.f = f, .read = read, .arg = arg, .err = err, .piece = UINT64_MAX};
  for (uint64_t p = 0; p < pieces(f); p++) {
    int rc = read_piece(&s, p);
    if (rc != ST_OK) return rc;
    if (!tail_clear(s.words, piece_codes(f, p) * f->low_bits))
      return err_set(err, ST_E_CORRUPT,
                     "range filter: piece %llu at offset %llu of its body: "
                     "bits set past its last code",
                     (unsigned long long)p, (unsigned long long)(p * range_filter_piece_bytes(f)));
  }
  int formed = list_well_formed(&s);
  if (formed < 0) return formed;
  if (!formed)
    return err_set(err, ST_E_CORRUPT,
                   "range filter: its body's codes descend or pass its "
                   "range (pieces at offset 0 of its body)");
  return ST_OK;
}

/* Bit-sliced block filter of one table (see block_filter.h for the contract).
 *
 * Serialized form, byte by byte (all integers little-endian through util/coding.h), with
 * N = nblocks, R = rows and W = ceil(N / 64):
 *   offset 0            magic    fixed32  "BFHB" (bytes 'B' 'F' 'H' 'B')
 *   offset 4            version  fixed32  1
 *   offset 8            nblocks  fixed32  N: blocks holding at least one value
 *   offset 12           k        fixed32  rows a value sets, 1..16
 *   offset 16           rows     fixed64  R = ceil(b * values / N) for the bits per value b
 *                                         (1..32); with N = 0, R = b and there are no words
 *   offset 24           values   fixed64  values added (0 iff N = 0, else >= N)
 *   offset 32           refs     N x (offset fixed64, size fixed64), ascending, size >= 1,
 *                                         each block ending at or before the next begins
 *   offset 32 + 16N     words    fixed64[R * W]  row r is words [r W, (r + 1) W); block j's
 *                                         bit in it is bit (j % 64) of word r W + j / 64
 *   end - 4             crc      fixed32  crc32c_mask(crc32c of bytes [0, end - 4))
 * Total: 36 + 16 N + 8 R W bytes.
 *
 * The bits per value b are not stored: with values >= N (every block holds a value),
 * R = ceil(b * values / N) gives b <= R * N / values < b + 1, so b = floor(R * N / values).
 *
 * Rows of a value: row i (0 <= i < k) is (x_i * R) >> 64, where x_0, x_1, ... are the
 * outputs of splitmix64 (util/random.h) seeded with value_hash ^ ROW_SALT. Each row is an
 * independent mix of the hash, so the rows are independent of each other and of the leaf's
 * positions (which come from value_hash itself). Not Kirsch-Mitzenmacher double hashing
 * (filters/hash.c's h1 + i h2): on a column of R = 100 bits two values whose (h1, h2) land
 * close together share all k rows, which puts a floor of about n k / R^2 under the
 * false-positive rate; at 10 values per block and 10 bits per value (R = 100) it measured
 * 1.25% per block against the 0.89% of a Bloom filter with independent positions, which
 * these rows measure (tests/filters/block_filter_test.c).
 *
 * No minimum on R (such as 64): blocks average values / N >= 1 values, so R >= b already.
 * A floor would only act on tables whose blocks average fewer than 64 / b values (values of
 * hundreds of bytes), and there it would spend up to 64 / b times the bits per value the
 * budget allows; it would also make b unrecoverable from R, N and values. Such tables get
 * what their bits buy: at one value per block (R = b = 10, k = 7) a block is a false
 * positive 1.75% of the time, the exact rate of a 10-bit Bloom filter holding one value
 * (tests/filters/block_filter_test.c), against 0.83-0.89% at 10-125 values per block.
 */
#include "filters/block_filter.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "filters/bits.h"
#include "util/coding.h"
#include "util/crc32c.h"
#include "util/random.h"
#include "util/vec.h"

#define MAGIC 0x42484642u /* "BFHB" read as a little-endian fixed32 */
#define VERSION 1u
#define HEADER_BYTES 32
#define REF_BYTES 16
#define TRAILER_BYTES 4
#define BLOCK_FILTER_MAX_K 16 /* rows a value sets at most (k_for) */
/* Xored into the value hash to seed the rows ("blkrows"); any constant would do. */
#define ROW_SALT 0x73776f726b6c62ull
/* Words ANDed at a time by a probe: 512 blocks, a small stack buffer the compiler keeps in
   vector registers. */
#define PROBE_CHUNK 8

struct block_filter {
  uint32_t nblocks, k, bits_per_value;
  uint64_t rows, values;
  size_t row_words;  /* W = ceil(nblocks / 64) */
  block_ref_t *refs; /* nblocks, owned */
  uint64_t *words;   /* rows * row_words, owned */
};

struct block_filter_builder {
  uint32_t bits_per_value;
  uint32_t ref_blocks; /* 0, or the table size bits_per_value is stated for (..._scale) */
  u64vec_t hashes;     /* every value added, block after block */
  u64vec_t block_ends; /* per block kept: index in hashes past its last value */
  block_ref_t *refs;   /* per block kept */
  size_t refs_cap;
  size_t block_start;   /* first value of the block being built */
  uint64_t ended_until; /* end of the last block ended (kept or not) */
};

/* k = round(b ln 2), the Bloom filter optimum, capped at BLOCK_FILTER_MAX_K. The cap only
   acts from b = 24 up, where a block is a false positive less than once in 10^5 probes
   anyway (at b = 32 it costs 3.3e-7 instead of 2.1e-7), while each row costs every probe a
   pass over W words. */
static uint32_t k_for(uint32_t bits_per_value) {
  long k = lround(bits_per_value * M_LN2);
  if (k < 1) return 1;
  return k > BLOCK_FILTER_MAX_K ? BLOCK_FILTER_MAX_K : (uint32_t)k;
}

/* The k rows (each < rows) a value of this hash sets. */
static void rows_of(uint64_t value_hash, uint64_t rows, uint32_t k, uint64_t *row) {
  uint64_t state = value_hash ^ ROW_SALT;
  for (uint32_t i = 0; i < k; i++)
    row[i] = (uint64_t)(((unsigned __int128)splitmix64(&state) * rows) >> 64);
}

/* ceil(b * values / nblocks); REQUIRES nblocks >= 1, b <= 32 (so b * values fits 128 bits). */
static uint64_t rows_for(uint32_t b, uint64_t values, uint32_t nblocks) {
  unsigned __int128 bits = (unsigned __int128)b * values;
  return (uint64_t)((bits + nblocks - 1) / nblocks);
}

block_filter_builder_t *block_filter_builder_create(uint32_t bits_per_value) {
  if (bits_per_value < 1 || bits_per_value > BLOCK_FILTER_MAX_BITS) return NULL;
  block_filter_builder_t *b = calloc(1, sizeof *b);
  if (!b) return NULL;
  b->bits_per_value = bits_per_value;
  u64vec_init(&b->hashes);
  u64vec_init(&b->block_ends);
  return b;
}

void block_filter_builder_destroy(block_filter_builder_t *b) {
  if (!b) return;
  u64vec_release(&b->hashes);
  u64vec_release(&b->block_ends);
  free(b->refs);
  free(b);
}

void block_filter_builder_reset(block_filter_builder_t *b) {
  b->hashes.n = 0;
  b->block_ends.n = 0;
  b->block_start = 0;
  b->ended_until = 0;
}

void block_filter_builder_scale(block_filter_builder_t *b, uint32_t ref_blocks) {
  b->ref_blocks = ref_blocks ? ref_blocks : 1;
}

/* The bits per value of a table of nblocks blocks (block_filter_builder_scale). */
static uint32_t scaled_bits(const block_filter_builder_t *b, uint32_t nblocks) {
  uint32_t bits = b->bits_per_value;
  if (b->ref_blocks && nblocks > b->ref_blocks)
    bits += (uint32_t)ceil(log2((double)nblocks / b->ref_blocks) / -log2(0.6185));
  return bits < BLOCK_FILTER_MAX_BITS ? bits : BLOCK_FILTER_MAX_BITS;
}

int block_filter_builder_add(block_filter_builder_t *b, uint64_t value_hash) {
  return u64vec_push(&b->hashes, value_hash);
}

static int push_ref(block_filter_builder_t *b, block_ref_t ref) {
  size_t n = b->block_ends.n;
  if (n == b->refs_cap) {
    size_t cap = b->refs_cap ? 2 * b->refs_cap : 64;
    block_ref_t *r = realloc(b->refs, cap * sizeof *r);
    if (!r) return ST_E_NOMEM;
    b->refs = r;
    b->refs_cap = cap;
  }
  if (u64vec_push(&b->block_ends, b->hashes.n) != ST_OK) return ST_E_NOMEM;
  b->refs[n] = ref;
  return ST_OK;
}

int block_filter_builder_end_block(block_filter_builder_t *b, uint64_t offset, uint64_t size) {
  if (offset < b->ended_until || size > UINT64_MAX - offset) return ST_E_INVALID;
  int has_values = b->hashes.n > b->block_start;
  if (has_values) {
    /* A block that holds a value has contents; the refs stay strictly ascending. */
    if (size == 0 || b->block_ends.n == UINT32_MAX) return ST_E_INVALID;
    int rc = push_ref(b, (block_ref_t){offset, size});
    if (rc != ST_OK) return rc;
  }
  b->ended_until = offset + size;
  b->block_start = b->hashes.n;
  return ST_OK;
}

static block_filter_t *filter_alloc(uint32_t nblocks, uint32_t k, uint32_t bits_per_value,
                                    uint64_t rows, uint64_t values) {
  block_filter_t *f = calloc(1, sizeof *f);
  if (!f) return NULL;
  f->nblocks = nblocks;
  f->k = k;
  f->bits_per_value = bits_per_value;
  f->rows = rows;
  f->values = values;
  f->row_words = bits_words(nblocks);
  size_t nwords = nblocks ? (size_t)rows * f->row_words : 0;
  f->refs = malloc((nblocks ? nblocks : 1) * sizeof *f->refs);
  f->words = calloc(nwords ? nwords : 1, sizeof *f->words);
  if (!f->refs || !f->words) {
    block_filter_destroy(f);
    return NULL;
  }
  return f;
}

int block_filter_builder_finish(block_filter_builder_t *b, block_filter_t **out, err_t *err) {
  *out = NULL;
  if (b->hashes.n > b->block_start)
    return err_set(err, ST_E_INVALID, "block filter: %zu values added after the last block ended",
                   b->hashes.n - b->block_start);
  uint32_t nblocks = (uint32_t)b->block_ends.n;
  uint64_t values = b->hashes.n;
  uint32_t bits = scaled_bits(b, nblocks);
  uint64_t rows = nblocks ? rows_for(bits, values, nblocks) : bits;
  block_filter_t *f = filter_alloc(nblocks, k_for(bits), bits, rows, values);
  if (!f)
    return err_set(err, ST_E_NOMEM, "block filter: cannot allocate %llu rows of %u blocks",
                   (unsigned long long)rows, nblocks);
  if (nblocks) memcpy(f->refs, b->refs, nblocks * sizeof *f->refs);
  size_t first = 0;
  for (uint32_t j = 0; j < nblocks; j++) {
    uint64_t bit = 1ull << (j & 63);
    for (size_t i = first; i < b->block_ends.v[j]; i++) {
      uint64_t row[BLOCK_FILTER_MAX_K];
      rows_of(b->hashes.v[i], rows, f->k, row);
      for (uint32_t r = 0; r < f->k; r++) f->words[row[r] * f->row_words + j / 64] |= bit;
    }
    first = b->block_ends.v[j];
  }
  *out = f;
  return ST_OK;
}

void block_filter_destroy(block_filter_t *f) {
  if (!f) return;
  free(f->refs);
  free(f->words);
  free(f);
}

uint32_t block_filter_blocks(const block_filter_t *f) {
  return f->nblocks;
}

block_ref_t block_filter_ref(const block_filter_t *f, uint32_t i) {
  return f->refs[i];
}

uint64_t block_filter_values(const block_filter_t *f) {
  return f->values;
}

uint32_t block_filter_bits_per_value(const block_filter_t *f) {
  return f->bits_per_value;
}

/* Appends the indexes of the set bits of `word` (the word at index w of a row) to out. */
static uint32_t emit_blocks(uint64_t word, size_t w, uint32_t *out, uint32_t n) {
  while (word) {
    out[n++] = (uint32_t)(w * 64 + (size_t)__builtin_ctzll(word));
    word &= word - 1;
  }
  return n;
}

uint32_t block_filter_probe(const block_filter_t *f, uint64_t value_hash, uint32_t *out) {
  if (f->nblocks == 0) return 0;
  uint64_t pos[BLOCK_FILTER_MAX_K];
  rows_of(value_hash, f->rows, f->k, pos);
  const uint64_t *row[BLOCK_FILTER_MAX_K];
  for (uint32_t i = 0; i < f->k; i++) row[i] = f->words + pos[i] * f->row_words;
  uint32_t n = 0;
  for (size_t w0 = 0; w0 < f->row_words; w0 += PROBE_CHUNK) {
    size_t len = f->row_words - w0 < PROBE_CHUNK ? f->row_words - w0 : PROBE_CHUNK;
    uint64_t acc[PROBE_CHUNK], any = 0;
    for (size_t w = 0; w < len; w++) any |= acc[w] = row[0][w0 + w];
    /* A chunk whose blocks every row so far rules out needs no further row: an absent value
       leaves ~2^-i of the bits after i rows, so a 512-block chunk is clear after ~10 of k's
       16 rows, and the rest of the rows' words are never fetched. */
    for (uint32_t i = 1; i < f->k && any; i++) {
      any = 0;
      for (size_t w = 0; w < len; w++) any |= acc[w] &= row[i][w0 + w];
    }
    if (!any) continue;
    for (size_t w = 0; w < len; w++) n = emit_blocks(acc[w], w0 + w, out, n);
  }
  return n;
}

static size_t word_count(const block_filter_t *f) {
  return f->nblocks ? (size_t)f->rows * f->row_words : 0;
}

size_t block_filter_memory(const block_filter_t *f) {
  return sizeof *f + (size_t)f->nblocks * sizeof *f->refs + word_count(f) * sizeof *f->words;
}

size_t block_filter_serialized_size(const block_filter_t *f) {
  return HEADER_BYTES + (size_t)f->nblocks * REF_BYTES + 8 * word_count(f) + TRAILER_BYTES;
}

void block_filter_serialize(const block_filter_t *f, uint8_t *out) {
  encode_fixed32(out, MAGIC);
  encode_fixed32(out + 4, VERSION);
  encode_fixed32(out + 8, f->nblocks);
  encode_fixed32(out + 12, f->k);
  encode_fixed64(out + 16, f->rows);
  encode_fixed64(out + 24, f->values);
  uint8_t *p = out + HEADER_BYTES;
  for (uint32_t j = 0; j < f->nblocks; j++, p += REF_BYTES) {
    encode_fixed64(p, f->refs[j].offset);
    encode_fixed64(p + 8, f->refs[j].size);
  }
  size_t nwords = word_count(f);
  for (size_t i = 0; i < nwords; i++, p += 8) encode_fixed64(p, f->words[i]);
  encode_fixed32(p, crc32c_mask(crc32c_value(out, (size_t)(p - out))));
}

/* The header fields, checked against each other and against the length. */
typedef struct header {
  uint32_t nblocks, k, bits_per_value;
  uint64_t rows, values;
} header_t;

/* ST_OK if the refs and words of h take exactly the `body` bytes between header and trailer.
   Every product is bounded first: nblocks and rows come from a possibly hostile file. */
static int check_sizes(const header_t *h, size_t body, err_t *err) {
  if (h->nblocks > body / REF_BYTES)
    return err_set(err, ST_E_CORRUPT, "block filter: offset 8: %u blocks need more than %zu bytes",
                   h->nblocks, body);
  size_t words_bytes = body - (size_t)h->nblocks * REF_BYTES;
  size_t row_bytes = 8 * bits_words(h->nblocks);
  int fits = h->nblocks == 0 ? words_bytes == 0
                             : words_bytes % row_bytes == 0 && h->rows == words_bytes / row_bytes;
  if (!fits)
    return err_set(err, ST_E_CORRUPT,
                   "block filter: offset 16: %llu rows of %u blocks do not match the %zu bytes "
                   "of bit words",
                   (unsigned long long)h->rows, h->nblocks, words_bytes);
  return ST_OK;
}

/* ST_OK if rows and values are what a builder makes for some bits per value (stored in h). */
static int check_rows(header_t *h, err_t *err) {
  uint64_t b = h->rows;
  if (h->nblocks == 0 && h->values != 0)
    return err_set(err, ST_E_CORRUPT, "block filter: offset 24: %llu values in no block",
                   (unsigned long long)h->values);
  if (h->nblocks != 0) {
    if (h->values < h->nblocks)
      return err_set(err, ST_E_CORRUPT, "block filter: offset 24: %llu values in %u blocks",
                     (unsigned long long)h->values, h->nblocks);
    unsigned __int128 bits = (unsigned __int128)h->rows * h->nblocks;
    unsigned __int128 per_value = bits / h->values;
    b = per_value > BLOCK_FILTER_MAX_BITS ? 0 : (uint64_t)per_value;
    if (b >= 1 && rows_for((uint32_t)b, h->values, h->nblocks) != h->rows) b = 0;
  }
  if (b < 1 || b > BLOCK_FILTER_MAX_BITS)
    return err_set(err, ST_E_CORRUPT,
                   "block filter: offset 16: %llu rows for %llu values in %u blocks is not "
                   "1..%d bits per value",
                   (unsigned long long)h->rows, (unsigned long long)h->values, h->nblocks,
                   BLOCK_FILTER_MAX_BITS);
  h->bits_per_value = (uint32_t)b;
  return ST_OK;
}

static int parse_header(const uint8_t *data, size_t len, header_t *h, err_t *err) {
  if (len < HEADER_BYTES + TRAILER_BYTES)
    return err_set(err, ST_E_CORRUPT, "block filter: %zu bytes, shorter than the minimum %d", len,
                   HEADER_BYTES + TRAILER_BYTES);
  uint32_t magic = decode_fixed32(data);
  if (magic != MAGIC)
    return err_set(err, ST_E_CORRUPT, "block filter: offset 0: bad magic %#x", magic);
  uint32_t version = decode_fixed32(data + 4);
  if (version != VERSION)
    return err_set(err, ST_E_CORRUPT, "block filter: offset 4: unsupported version %u", version);
  h->nblocks = decode_fixed32(data + 8);
  h->k = decode_fixed32(data + 12);
  h->rows = decode_fixed64(data + 16);
  h->values = decode_fixed64(data + 24);
  int rc = check_sizes(h, len - HEADER_BYTES - TRAILER_BYTES, err);
  if (rc != ST_OK) return rc;
  if (h->k < 1 || h->k > BLOCK_FILTER_MAX_K)
    return err_set(err, ST_E_CORRUPT, "block filter: offset 12: k = %u is outside 1..%d", h->k,
                   BLOCK_FILTER_MAX_K);
  return check_rows(h, err);
}

/* Decodes the refs; ST_E_CORRUPT unless they are ascending and do not overlap. */
static int read_refs(block_filter_t *f, const uint8_t *p, err_t *err) {
  uint64_t until = 0;
  for (uint32_t j = 0; j < f->nblocks; j++, p += REF_BYTES) {
    block_ref_t r = {decode_fixed64(p), decode_fixed64(p + 8)};
    if (r.offset < until || r.size == 0 || r.size > UINT64_MAX - r.offset)
      return err_set(err, ST_E_CORRUPT,
                     "block filter: offset %zu: block %u at %llu size %llu does not follow the "
                     "one before (ending at %llu)",
                     (size_t)(HEADER_BYTES + (size_t)j * REF_BYTES), j,
                     (unsigned long long)r.offset, (unsigned long long)r.size,
                     (unsigned long long)until);
    f->refs[j] = r;
    until = r.offset + r.size;
  }
  return ST_OK;
}

/* Decodes the words; ST_E_CORRUPT if a row has a bit at a column >= nblocks. */
static int read_words(block_filter_t *f, const uint8_t *p, err_t *err) {
  unsigned tail = f->nblocks & 63;
  size_t nwords = word_count(f);
  for (size_t i = 0; i < nwords; i++, p += 8) {
    f->words[i] = decode_fixed64(p);
    if (tail != 0 && i % f->row_words == f->row_words - 1 && (f->words[i] >> tail) != 0)
      return err_set(err, ST_E_CORRUPT, "block filter: offset %zu: row %zu has bits past block %u",
                     HEADER_BYTES + (size_t)f->nblocks * REF_BYTES + 8 * i, i / f->row_words,
                     f->nblocks - 1);
  }
  return ST_OK;
}

int block_filter_deserialize(const uint8_t *data, size_t len, block_filter_t **out, err_t *err) {
  *out = NULL;
  header_t h = {0}; /* zeroed only to quiet -Wmaybe-uninitialized at -O3 */
  int rc = parse_header(data, len, &h, err);
  if (rc != ST_OK) return rc;
  size_t crc_off = len - TRAILER_BYTES;
  uint32_t stored = crc32c_unmask(decode_fixed32(data + crc_off));
  uint32_t actual = crc32c_value(data, crc_off);
  if (stored != actual)
    return err_set(err, ST_E_CORRUPT,
                   "block filter: offset %zu: checksum mismatch (stored %#x, computed %#x)",
                   crc_off, stored, actual);
  block_filter_t *f = filter_alloc(h.nblocks, h.k, h.bits_per_value, h.rows, h.values);
  if (!f) return err_set(err, ST_E_NOMEM, "block filter: cannot allocate %zu bytes", len);
  rc = read_refs(f, data + HEADER_BYTES, err);
  if (rc == ST_OK) rc = read_words(f, data + HEADER_BYTES + (size_t)h.nblocks * REF_BYTES, err);
  if (rc != ST_OK) {
    block_filter_destroy(f);
    return rc;
  }
  *out = f;
  return ST_OK;
}

/* Cache-line blocked Bloom filter for keys (see blocked_filter.h for the contract).
 *
 * Layout, byte by byte:
 *   offset 0                blocks   nblocks * 64 bytes; bit j of a block is bit (j % 64) of
 *                                    the little-endian 64-bit word at block + 8 * (j / 64)
 *   offset nblocks * 64     nblocks  fixed32 (>= 1)
 *   offset nblocks * 64 + 4 probes   u8 (1..BLOCKED_MAX_PROBES)
 *   offset nblocks * 64 + 5 version  u8 (1)
 * A filter whose trailer disagrees with its size, or whose probe count or version is out of
 * range, is malformed and answers "maybe" for every key.
 *
 * Hashing. The 64-bit key hash is split in two independent halves:
 *   block = ((hash >> 32) * nblocks) >> 32            (multiply-shift on the upper half)
 *   h     = (uint32_t)hash                            (lower half, the in-block positions)
 *   pos_i = (h * C^i mod 2^32) >> 23, i = 0..k-1      (the top 9 bits: a bit of the block)
 * with C = 0x9e3779b9 (odd, the 32-bit golden ratio). Using disjoint hash bits for the block
 * and for the positions matters: if the positions reuse the bits that chose the block, the
 * keys of one block share part of their positions and the FPR rises (taking h from the upper
 * half, the bits that chose the block, measured 1.09% at 10 bits/key instead of 0.965%).
 * The powers C^i are precomputed, so the k multiplies are independent; the probe test is
 * branch-free, and with AVX2 (k <= 8) all probes are tested at once in one 256-bit register.
 *
 * Probe count rule. For a 512-bit block holding a Poisson(512 / b) number of keys (b = bits
 * per key), the expected FPR with k probes is
 *   FPR(b, k) = sum_j Pois(j; 512/b) * (1 - (1 - 1/512)^(j k))^k.
 * blocked_filter_probes_for(b) returns the smallest k whose FPR(b, k) is within 1% of the
 * minimum over k (fewer probes, same accuracy). Evaluated numerically, that gives the table
 * below (k applies from the listed bits/key upwards), e.g.:
 *   b:    2.15  3.70  5.25  6.85  8.50  10.25  12.15  14.20  16.45  18.85  21.55  24.55 27.90
 *   k:    2     3     4     5     6     7      8      9      10     11     12     13    14
 *   31.65 -> 15, 35.90 -> 16 (the maximum).
 * Model FPR: 8 bits/key 2.31% (k=5), 10 bits/key 0.958% (k=6), 12 bits/key 0.41% (k=7),
 * 16 bits/key 0.083% (k=9). A standard (unblocked) Bloom filter has 0.82% at 10 bits/key;
 * the gap is the price of the uneven load of the blocks. The model uses a block's mean fill,
 * so it is ~0.7% (relative) optimistic: at 10 bits/key this filter measures 0.965% (mean of
 * 4 x 10M negatives over 1M random hashes), the same as with ideal independent positions
 * (splitmix64 per probe), so the multiplicative positions cost nothing measurable.
 * tests/filters/blocked_filter_test.c checks <= 1.0% at 10 bits/key over 1M negatives.
 */
#include "filters/blocked_filter.h"

#include <math.h>
#include <string.h>

#include "util/coding.h"
#include "util/cpu.h"

#define BLOCK_BYTES 64
#define BLOCKED_MAX_PROBES 16
#define VERSION 1

/* C^i mod 2^32 for C = 0x9e3779b9, i = 0..15. */
static const uint32_t kPow[BLOCKED_MAX_PROBES] = {
    0x00000001u, 0x9e3779b9u, 0xe35e67b1u, 0x734297e9u, 0x35fbe861u, 0xdeb7c719u,
    0x0448b211u, 0x3459b749u, 0xab25f4c1u, 0x52941879u, 0x9c95e071u, 0xf5ab9aa9u,
    0x2d6ba521u, 0x8bededd9u, 0x9bfb72d1u, 0x3ae1c209u};

/* Bits per key from which each probe count applies (index k - 1; see the comment above). */
static const double kFrom[BLOCKED_MAX_PROBES] = {0.0,   2.15,  3.70,  5.25,  6.85,  8.50,
                                                 10.25, 12.15, 14.20, 16.45, 18.85, 21.55,
                                                 24.55, 27.90, 31.65, 35.90};

uint32_t blocked_filter_probes_for(double bits_per_key) {
  uint32_t k = 1;
  while (k < BLOCKED_MAX_PROBES && bits_per_key >= kFrom[k]) k++;
  return k;
}

static uint32_t nblocks_for(size_t n, double bits_per_key) {
  double bits = ceil((double)n * (bits_per_key > 0 ? bits_per_key : 0));
  double blocks = ceil(bits / (BLOCK_BYTES * 8));
  if (!(blocks >= 1)) return 1; /* also catches NaN */
  if (blocks > (double)UINT32_MAX) return UINT32_MAX;
  return (uint32_t)blocks;
}

size_t blocked_filter_size(size_t n, double bits_per_key) {
  return (size_t)nblocks_for(n, bits_per_key) * BLOCK_BYTES + BLOCKED_FILTER_TRAILER_BYTES;
}

static inline uint64_t block_offset(uint64_t hash, uint32_t nblocks) {
  return ((hash >> 32) * nblocks >> 32) * BLOCK_BYTES;
}

static inline void block_add(uint8_t *blk, uint32_t h, uint32_t k) {
  for (uint32_t i = 0; i < k; i++) {
    uint32_t pos = (h * kPow[i]) >> 23;
    uint8_t *wp = blk + (pos >> 6) * 8;
    encode_fixed64(wp, decode_fixed64(wp) | (1ull << (pos & 63)));
  }
}

/* 1 if all k positions are set. Branch-free over the probes; words read with memcpy (the
   filter may sit unaligned in a table buffer; the format is little-endian, as is the host). */
static inline int block_test(const uint8_t *blk, uint32_t h, uint32_t k) {
  uint64_t miss = 0;
  for (uint32_t i = 0; i < k; i++) {
    uint32_t pos = (h * kPow[i]) >> 23;
    uint64_t w;
    memcpy(&w, blk + (pos >> 6) * 8, 8);
#if __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
    w = __builtin_bswap64(w);
#endif
    miss |= ~(w >> (pos & 63));
  }
  return (int)(~miss & 1);
}

#ifdef BFH_HAVE_AVX2_PATH
#include <immintrin.h>
/* The same test for k <= 8, all probes at once: lane i computes pos_i, fetches the 32-bit
   word pos_i / 32 of the block with two in-register permutes (one per 32-byte half) and a
   blend, and checks bit pos_i % 32. Lanes >= k require no bit. Compiled for AVX2 whatever
   the build's -march; run only where the CPU has it (cpu_has_avx2). */
__attribute__((target("avx2"))) static inline int block_test_avx2(const uint8_t *blk, uint32_t h,
                                                                  uint32_t k) {
  const __m256i pow = _mm256_loadu_si256((const __m256i *)kPow);
  __m256i pos = _mm256_srli_epi32(_mm256_mullo_epi32(_mm256_set1_epi32((int)h), pow), 23);
  __m256i widx = _mm256_srli_epi32(pos, 5);
  __m256i lo = _mm256_permutevar8x32_epi32(_mm256_loadu_si256((const __m256i *)blk), widx);
  __m256i hi = _mm256_permutevar8x32_epi32(_mm256_loadu_si256((const __m256i *)(blk + 32)), widx);
  __m256i upper = _mm256_slli_epi32(widx, 28); /* bit 3 of the word index -> sign bit */
  __m256i w = _mm256_castps_si256(_mm256_blendv_ps(_mm256_castsi256_ps(lo), _mm256_castsi256_ps(hi),
                                                   _mm256_castsi256_ps(upper)));
  __m256i bit =
      _mm256_sllv_epi32(_mm256_set1_epi32(1), _mm256_and_si256(pos, _mm256_set1_epi32(31)));
  __m256i active =
      _mm256_cmpgt_epi32(_mm256_set1_epi32((int)k), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
  return _mm256_testc_si256(w, _mm256_and_si256(bit, active)); /* (~w & bit) == 0 */
}

#endif

/* Parses the trailer; returns 0 (and the block count and probes) if the filter is well formed. */
static inline int parse(const uint8_t *filter, size_t size, uint32_t *nblocks, uint32_t *k) {
  if (size < BLOCK_BYTES + BLOCKED_FILTER_TRAILER_BYTES) return -1;
  const uint8_t *t = filter + size - BLOCKED_FILTER_TRAILER_BYTES;
  uint32_t nb = decode_fixed32(t);
  uint32_t probes = t[4];
  if (t[5] != VERSION || probes < 1 || probes > BLOCKED_MAX_PROBES || nb == 0) return -1;
  if ((uint64_t)nb * BLOCK_BYTES != size - BLOCKED_FILTER_TRAILER_BYTES) return -1;
  *nblocks = nb;
  *k = probes;
  return 0;
}

void blocked_filter_init(uint8_t *out, size_t size, double bits_per_key) {
  if (size < BLOCKED_FILTER_TRAILER_BYTES) return;
  memset(out, 0, size);
  uint64_t nb64 = (size - BLOCKED_FILTER_TRAILER_BYTES) / BLOCK_BYTES;
  uint32_t nblocks = nb64 > UINT32_MAX ? 0 : (uint32_t)nb64; /* 0 = malformed: says maybe */
  uint8_t *t = out + size - BLOCKED_FILTER_TRAILER_BYTES;
  encode_fixed32(t, nblocks);
  t[4] = (uint8_t)blocked_filter_probes_for(bits_per_key);
  t[5] = VERSION;
}

void blocked_filter_add(uint8_t *filter, size_t size, const uint64_t *hashes, size_t n) {
  uint32_t nblocks, k;
  if (parse(filter, size, &nblocks, &k) != 0) return;
  for (size_t i = 0; i < n; i++)
    block_add(filter + block_offset(hashes[i], nblocks), (uint32_t)hashes[i], k);
}

void blocked_filter_build(uint8_t *out, size_t size, const uint64_t *hashes, size_t n,
                          double bits_per_key) {
  blocked_filter_init(out, size, bits_per_key);
  blocked_filter_add(out, size, hashes, n);
}

int blocked_filter_may_contain(const uint8_t *filter, size_t size, uint64_t hash) {
  uint32_t nblocks, k;
  if (parse(filter, size, &nblocks, &k) != 0) return 1;
  const uint8_t *blk = filter + block_offset(hash, nblocks);
#ifdef BFH_HAVE_AVX2_PATH
  if (k <= 8 && cpu_has_avx2()) return block_test_avx2(blk, (uint32_t)hash, k);
#endif
  return block_test(blk, (uint32_t)hash, k);
}

void blocked_filter_prefetch(const uint8_t *filter, size_t size, uint64_t hash) {
  uint32_t nblocks, k;
  if (parse(filter, size, &nblocks, &k) == 0)
    __builtin_prefetch(filter + block_offset(hash, nblocks), 0, 3);
}

/* How many keys ahead the batch prefetches: enough misses in flight to cover DRAM latency. */
#ifndef PREFETCH_DISTANCE
#define PREFETCH_DISTANCE 16
#endif

/* The batch loop, prefetching PREFETCH_DISTANCE keys ahead; TEST is the block test. Expanded
   once per block test, so that each loop inlines its own (the AVX2 one in an AVX2 function). */
#define BATCH_LOOP(TEST)                                                                         \
  do {                                                                                           \
    size_t head = n < PREFETCH_DISTANCE ? n : PREFETCH_DISTANCE;                                 \
    for (size_t i = 0; i < head; i++)                                                            \
      __builtin_prefetch(filter + block_offset(hashes[i], nblocks), 0, 3);                       \
    size_t i = 0;                                                                                \
    for (; i + PREFETCH_DISTANCE < n; i++) {                                                     \
      __builtin_prefetch(filter + block_offset(hashes[i + PREFETCH_DISTANCE], nblocks), 0, 3);   \
      out[i] = (uint8_t)TEST(filter + block_offset(hashes[i], nblocks), (uint32_t)hashes[i], k); \
    }                                                                                            \
    for (; i < n; i++)                                                                           \
      out[i] = (uint8_t)TEST(filter + block_offset(hashes[i], nblocks), (uint32_t)hashes[i], k); \
  } while (0)

static void batch_portable(const uint8_t *filter, uint32_t nblocks, uint32_t k,
                           const uint64_t *hashes, size_t n, uint8_t *out) {
  BATCH_LOOP(block_test);
}

#ifdef BFH_HAVE_AVX2_PATH
__attribute__((target("avx2"))) static void batch_avx2(const uint8_t *filter, uint32_t nblocks,
                                                       uint32_t k, const uint64_t *hashes, size_t n,
                                                       uint8_t *out) {
  BATCH_LOOP(block_test_avx2);
}
#endif

void blocked_filter_may_contain_batch(const uint8_t *filter, size_t size, const uint64_t *hashes,
                                      size_t n, uint8_t *out) {
  uint32_t nblocks, k;
  if (parse(filter, size, &nblocks, &k) != 0) {
    memset(out, 1, n);
    return;
  }
#ifdef BFH_HAVE_AVX2_PATH
  if (k <= 8 && cpu_has_avx2()) {
    batch_avx2(filter, nblocks, k, hashes, n, out);
    return;
  }
#endif
  batch_portable(filter, nblocks, k, hashes, n, out);
}

/* CRC32C, three ways, the best the CPU has taken at run time (asked once per process):
 *
 *   portable   slicing-by-8 over tables, any CPU.
 *   sse42      one dependent chain of the crc32 instruction: 8 bytes per step, but each step
 *              waits for the one before (latency 3 cycles, while the CPU could start one
 *              per cycle), so about a third of what the instruction can do.
 *   3-stream   (SSE4.2 and PCLMULQDQ) cuts the buffer into three equal stretches A B C and
 *              runs one chain over each, side by side, then joins the three CRCs:
 *
 * The join. Think of the raw CRC register (between the inversions at the start and the end)
 * as a polynomial over GF(2) modulo P, the CRC32C polynomial. Feeding a message M of k bits
 * to register R gives R x^k + M x^32 (mod P); it is linear in R and in M. So the register
 * after A B C, each of w 64-bit words, is
 *     rA x^(128w) + rB x^(64w) + rC   (mod P)
 * where rA is the register after A started from the running CRC, and rB, rC are the
 * registers after B and C started from 0. The product R x^(64s) mod P (the register moved
 * past s zero words) takes one carry-less multiply and one crc32 instruction: PCLMULQDQ of
 * two 32-bit bit-reflected polynomials A and B gives a 64-bit word which, read as the crc32
 * instruction reads its data, is A B x; and crc32(0, word V) = V x^32 (mod P). Hence
 *     crc32(0, clmul(R, K_s)) = R x^(64s)   with K_s = x^(64s - 33) mod P.
 * K_1 = x^31 is the reflected word 1, and K_(s+1) = K_s x^64 = crc32(K_s, 0): the table of
 * K_s is built at the first call with the instruction itself.
 *
 * Stretches are up to SHIFT_WORDS words (2 KiB), so a 4 KiB block is one pass of three
 * stretches and a tail of at most 23 bytes; a longer buffer is a series of such passes.
 * tests/util/crc32c_test.c compares every path with the portable one.
 */
#include "util/crc32c.h"

#include <pthread.h>
#include <stdatomic.h>
#include <string.h>

#if defined(__x86_64__) && defined(__GNUC__)
#include <nmmintrin.h>
#include <wmmintrin.h>
#define HAVE_X86_PATHS 1
#endif

enum { PATH_UNKNOWN, PATH_PORTABLE, PATH_SSE42, PATH_3STREAM };

static uint32_t table[8][256];

/* Stretch length of a 3-stream pass, in 64-bit words: at most SHIFT_WORDS, at least
   MIN_STREAM_WORDS (below that, 96 bytes, the join costs about what the three chains save). */
#define SHIFT_WORDS 256
#define MIN_STREAM_WORDS 4
/* shift_k[s] = x^(64 s - 33) mod P, bit-reflected, for s = 1 .. 2 SHIFT_WORDS. */
static uint32_t shift_k[2 * SHIFT_WORDS + 1];

static pthread_once_t init_once = PTHREAD_ONCE_INIT;
static atomic_int path = PATH_UNKNOWN; /* set last by init, with release */

static void table_init(void) {
  for (uint32_t i = 0; i < 256; i++) {
    uint32_t c = i;
    for (int j = 0; j < 8; j++) c = (c >> 1) ^ (0x82f63b78u & (0u - (c & 1)));
    table[0][i] = c;
  }
  for (uint32_t i = 0; i < 256; i++)
    for (int t = 1; t < 8; t++)
      table[t][i] = (table[t - 1][i] >> 8) ^ table[0][table[t - 1][i] & 0xff];
}

/* Slicing-by-8 over the table. */
static uint32_t extend_portable(uint32_t crc, const uint8_t *p, size_t n) {
  crc = ~crc;
  while (n >= 8) {
    uint64_t w;
    memcpy(&w, p, 8);
    w ^= crc;
    crc = table[7][w & 0xff] ^ table[6][(w >> 8) & 0xff] ^ table[5][(w >> 16) & 0xff] ^
          table[4][(w >> 24) & 0xff] ^ table[3][(w >> 32) & 0xff] ^ table[2][(w >> 40) & 0xff] ^
          table[1][(w >> 48) & 0xff] ^ table[0][w >> 56];
    p += 8;
    n -= 8;
  }
  while (n--) crc = (crc >> 8) ^ table[0][(crc ^ *p++) & 0xff];
  return ~crc;
}

#ifdef HAVE_X86_PATHS
static inline uint64_t load64(const uint8_t *p) {
  uint64_t w;
  memcpy(&w, p, 8);
  return w;
}

/* One chain over p[0, n) from the raw register c; returns the raw register. */
__attribute__((target("sse4.2"))) static inline uint32_t chain_sse42(uint32_t c, const uint8_t *p,
                                                                     size_t n) {
  uint64_t c64 = c;
  for (; n >= 8; p += 8, n -= 8) c64 = _mm_crc32_u64(c64, load64(p));
  c = (uint32_t)c64;
  while (n--) c = _mm_crc32_u8(c, *p++);
  return c;
}

__attribute__((target("sse4.2"))) static uint32_t extend_sse42(uint32_t crc, const uint8_t *p,
                                                               size_t n) {
  return ~chain_sse42(~crc, p, n);
}

__attribute__((target("sse4.2"))) static void shift_init(void) {
  uint64_t k = 1; /* x^31 */
  for (int s = 1; s <= 2 * SHIFT_WORDS; s++) {
    shift_k[s] = (uint32_t)k;
    k = _mm_crc32_u64(k, 0);
  }
}

/* The raw register r moved past s zero words: r x^(64 s) mod P. */
__attribute__((target("sse4.2,pclmul"))) static inline uint32_t shift(uint32_t r, size_t s) {
  __m128i prod =
      _mm_clmulepi64_si128(_mm_cvtsi32_si128((int)r), _mm_cvtsi32_si128((int)shift_k[s]), 0x00);
  return (uint32_t)_mm_crc32_u64(0, (uint64_t)_mm_cvtsi128_si64(prod));
}

__attribute__((target("sse4.2,pclmul"))) static uint32_t extend_3stream(uint32_t crc,
                                                                        const uint8_t *p,
                                                                        size_t n) {
  uint32_t c = ~crc;
  while (n >= 3 * 8 * MIN_STREAM_WORDS) {
    size_t w = n / 24;
    if (w > SHIFT_WORDS) w = SHIFT_WORDS;
    const uint8_t *b = p + 8 * w, *e = b + 8 * w;
    uint64_t ca = c, cb = 0, cc = 0;
    for (size_t i = 0; i < 8 * w; i += 8) {
      ca = _mm_crc32_u64(ca, load64(p + i));
      cb = _mm_crc32_u64(cb, load64(b + i));
      cc = _mm_crc32_u64(cc, load64(e + i));
    }
    c = shift((uint32_t)ca, 2 * w) ^ shift((uint32_t)cb, w) ^ (uint32_t)cc;
    p += 24 * w;
    n -= 24 * w;
  }
  return ~chain_sse42(c, p, n);
}
#endif

static void paths_init(void) {
  table_init();
  int best = PATH_PORTABLE;
#ifdef HAVE_X86_PATHS
  __builtin_cpu_init();
  if (__builtin_cpu_supports("sse4.2")) {
    best = PATH_SSE42;
    if (__builtin_cpu_supports("pclmul")) {
      shift_init();
      best = PATH_3STREAM;
    }
  }
#endif
  atomic_store_explicit(&path, best, memory_order_release);
}

/* The path to take; the tables are ready when it returns. */
static inline int path_get(void) {
  int p = atomic_load_explicit(&path, memory_order_acquire);
  if (p == PATH_UNKNOWN) {
    pthread_once(&init_once, paths_init);
    p = atomic_load_explicit(&path, memory_order_acquire);
  }
  return p;
}

uint32_t crc32c_extend(uint32_t crc, const void *data, size_t n) {
  switch (path_get()) {
#ifdef HAVE_X86_PATHS
    case PATH_3STREAM:
      return extend_3stream(crc, data, n);
    case PATH_SSE42:
      return extend_sse42(crc, data, n);
#endif
    default:
      return extend_portable(crc, data, n);
  }
}

uint32_t crc32c_extend_portable(uint32_t crc, const void *data, size_t n) {
  path_get();
  return extend_portable(crc, data, n);
}

uint32_t crc32c_extend_single_chain(uint32_t crc, const void *data, size_t n) {
#ifdef HAVE_X86_PATHS
  if (path_get() >= PATH_SSE42) return extend_sse42(crc, data, n);
#endif
  return crc32c_extend_portable(crc, data, n);
}

const char *crc32c_path_name(void) {
  static const char *const names[] = {"unknown", "portable", "sse4.2", "sse4.2+pclmul 3-stream"};
  return names[path_get()];
}

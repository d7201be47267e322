#include "util/crc32c.h"

#include <string.h>

#if defined(__x86_64__)
#include <nmmintrin.h>
#define HAVE_SSE42_PATH 1
#endif

static uint32_t table[8][256];
static int table_ready;

static void table_init(void) {
  for (uint32_t i = 0; i < 256; i++) {
    uint32_t c = i;
    for (int j = 0; j < 8; j++) c = (c >> 1) ^ (0x82f63b78u & (0u - (c & 1)));
    table[0][i] = c;
  }
  for (uint32_t i = 0; i < 256; i++)
    for (int t = 1; t < 8; t++)
      table[t][i] = (table[t - 1][i] >> 8) ^ table[0][table[t - 1][i] & 0xff];
  __atomic_store_n(&table_ready, 1, __ATOMIC_RELEASE);
}

/* Slicing-by-8 over the table. */
static uint32_t extend_portable(uint32_t crc, const uint8_t *p, size_t n) {
  if (!__atomic_load_n(&table_ready, __ATOMIC_ACQUIRE)) table_init();
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

#ifdef HAVE_SSE42_PATH
__attribute__((target("sse4.2"))) static uint32_t extend_sse42(uint32_t crc, const uint8_t *p,
                                                               size_t n) {
  uint64_t c = ~crc;
  while (n >= 8) {
    uint64_t w;
    memcpy(&w, p, 8);
    c = _mm_crc32_u64(c, w);
    p += 8;
    n -= 8;
  }
  uint32_t c32 = (uint32_t)c;
  while (n--) c32 = _mm_crc32_u8(c32, *p++);
  return ~c32;
}
#endif

uint32_t crc32c_extend(uint32_t crc, const void *data, size_t n) {
#ifdef HAVE_SSE42_PATH
  if (__builtin_cpu_supports("sse4.2")) return extend_sse42(crc, data, n);
#endif
  return extend_portable(crc, data, n);
}

uint32_t crc32c_extend_portable(uint32_t crc, const void *data, size_t n) {
  return extend_portable(crc, data, n);
}

/* The bit counts of bits.h. Without -march, the compiler counts bits with a library call
 * per word; on x86-64 each loop is also compiled for POPCNT and for AVX-512's vector
 * popcount, and the best one the CPU has is taken (asked once). Not target_clones: GCC
 * exports the ifunc symbols it makes, whatever the visibility. The similarity placement
 * computes a Hamming distance per child per level for every new leaf (m/64 words each),
 * and the value index a popcount per leaf: both are hot at ingest.
 */
#include "filters/bits.h"

#define COUNT_LOOP(word)                                                           \
  do {                                                                             \
    uint64_t c = 0;                                                                \
    for (size_t i = 0; i < nwords; i++) c += (uint64_t)__builtin_popcountll(word); \
    return c;                                                                      \
  } while (0)

static uint64_t popcount_generic(const uint64_t *w, size_t nwords) {
  COUNT_LOOP(w[i]);
}

static uint64_t hamming_generic(const uint64_t *a, const uint64_t *b, size_t nwords) {
  COUNT_LOOP(a[i] ^ b[i]);
}

#if defined(__x86_64__) && defined(__GNUC__)
__attribute__((target("popcnt"))) static uint64_t popcount_popcnt(const uint64_t *w,
                                                                  size_t nwords) {
  COUNT_LOOP(w[i]);
}

__attribute__((target("popcnt"))) static uint64_t hamming_popcnt(const uint64_t *a,
                                                                 const uint64_t *b, size_t nwords) {
  COUNT_LOOP(a[i] ^ b[i]);
}

/* AVX-512 VPOPCNTDQ: eight words per instruction, for the long Hamming distances of the
   similarity placement (m/64 words per child), which -march=native vectorizes this way
   where the CPU has it (doc/portability.md). */
#include <immintrin.h>
#define AVX512_COUNTS __attribute__((target("avx512f,avx512vpopcntdq")))
#define AVX512_COUNT_LOOP(load)                                                             \
  do {                                                                                      \
    __m512i acc = _mm512_setzero_si512();                                                   \
    size_t i = 0;                                                                           \
    for (; i + 8 <= nwords; i += 8) acc = _mm512_add_epi64(acc, _mm512_popcnt_epi64(load)); \
    uint64_t c = (uint64_t)_mm512_reduce_add_epi64(acc);                                    \
    return c + tail_count;                                                                  \
  } while (0)

AVX512_COUNTS static uint64_t popcount_avx512(const uint64_t *w, size_t nwords) {
  size_t body = nwords & ~(size_t)7;
  uint64_t tail_count = popcount_popcnt(w + body, nwords - body);
  AVX512_COUNT_LOOP(_mm512_loadu_si512(w + i));
}

AVX512_COUNTS static uint64_t hamming_avx512(const uint64_t *a, const uint64_t *b, size_t nwords) {
  size_t body = nwords & ~(size_t)7;
  uint64_t tail_count = hamming_popcnt(a + body, b + body, nwords - body);
  AVX512_COUNT_LOOP(_mm512_xor_si512(_mm512_loadu_si512(a + i), _mm512_loadu_si512(b + i)));
}

enum { CPU_UNKNOWN, CPU_GENERIC, CPU_POPCNT, CPU_AVX512 };

/* The best bit count the CPU has, asked once. A race only asks twice. */
static int cpu_level(void) {
  static int known = CPU_UNKNOWN;
  int v = __atomic_load_n(&known, __ATOMIC_RELAXED);
  if (v == CPU_UNKNOWN) {
    __builtin_cpu_init();
    v = __builtin_cpu_supports("avx512vpopcntdq") && __builtin_cpu_supports("avx512f") ? CPU_AVX512
        : __builtin_cpu_supports("popcnt")                                             ? CPU_POPCNT
                                           : CPU_GENERIC;
    __atomic_store_n(&known, v, __ATOMIC_RELAXED);
  }
  return v;
}

uint64_t bits_popcount(const uint64_t *w, size_t nwords) {
  switch (cpu_level()) {
    case CPU_AVX512:
      return popcount_avx512(w, nwords);
    case CPU_POPCNT:
      return popcount_popcnt(w, nwords);
    default:
      return popcount_generic(w, nwords);
  }
}

uint64_t bits_hamming(const uint64_t *a, const uint64_t *b, size_t nwords) {
  switch (cpu_level()) {
    case CPU_AVX512:
      return hamming_avx512(a, b, nwords);
    case CPU_POPCNT:
      return hamming_popcnt(a, b, nwords);
    default:
      return hamming_generic(a, b, nwords);
  }
}
#else
uint64_t bits_popcount(const uint64_t *w, size_t nwords) {
  return popcount_generic(w, nwords);
}

uint64_t bits_hamming(const uint64_t *a, const uint64_t *b, size_t nwords) {
  return hamming_generic(a, b, nwords);
}
#endif

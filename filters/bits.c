/* The bit counts of bits.h. Without -march, the compiler counts bits with a library call
 * per word; on x86-64 each loop is also compiled for POPCNT, taken when the CPU has it
 * (asked once). Not target_clones: GCC exports the ifunc symbols it makes, whatever the
 * visibility. The similarity placement computes a Hamming distance per child per level for
 * every new leaf (m/64 words each), and the value index a popcount per leaf: both are hot
 * at ingest.
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

/* Whether the CPU has POPCNT: 0 unknown, 1 no, 2 yes. A race only asks twice. */
static int use_popcnt(void) {
  static int known;
  int v = __atomic_load_n(&known, __ATOMIC_RELAXED);
  if (v == 0) {
    __builtin_cpu_init();
    v = __builtin_cpu_supports("popcnt") ? 2 : 1;
    __atomic_store_n(&known, v, __ATOMIC_RELAXED);
  }
  return v == 2;
}
#else
#define use_popcnt() 0
#define popcount_popcnt popcount_generic
#define hamming_popcnt hamming_generic
#endif

uint64_t bits_popcount(const uint64_t *w, size_t nwords) {
  return use_popcnt() ? popcount_popcnt(w, nwords) : popcount_generic(w, nwords);
}

uint64_t bits_hamming(const uint64_t *a, const uint64_t *b, size_t nwords) {
  return use_popcnt() ? hamming_popcnt(a, b, nwords) : hamming_generic(a, b, nwords);
}

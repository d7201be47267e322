/* What the CPU can do, asked at run time: code compiled for AVX2 with
 * __attribute__((target("avx2"))), whatever the build's -march, runs only where
 * cpu_has_avx2() says so (filters/blocked_filter.c, lsm/block.c).
 */
#ifndef BFH_UTIL_CPU_H
#define BFH_UTIL_CPU_H

#if defined(__x86_64__) && defined(__GNUC__)
#define BFH_HAVE_AVX2_PATH 1

/* Whether the CPU has AVX2, asked once per file that includes this: 0 unknown, 1 no, 2 yes.
   A race only asks twice. */
static inline int cpu_has_avx2(void) {
  static int known;
  int v = __atomic_load_n(&known, __ATOMIC_RELAXED);
  if (v == 0) {
    __builtin_cpu_init();
    v = __builtin_cpu_supports("avx2") ? 2 : 1;
    __atomic_store_n(&known, v, __ATOMIC_RELAXED);
  }
  return v == 2;
}
#endif

#endif

/* CRC32C (Castagnoli), the checksum of every block and record bfh writes, and of
 * LevelDB's. Uses the SSE4.2 instruction when the CPU has it (three chains side by side when
 * it also has PCLMULQDQ), a table otherwise; the choice is made once per process.
 */
#ifndef BFH_UTIL_CRC32C_H
#define BFH_UTIL_CRC32C_H

#include <stddef.h>
#include <stdint.h>

/* The crc32c of concat(A, data[0,n)) where crc is the crc32c of A. */
uint32_t crc32c_extend(uint32_t crc, const void *data, size_t n);

/* crc32c_extend without the SSE4.2 instruction (the table path), for tests. */
uint32_t crc32c_extend_portable(uint32_t crc, const void *data, size_t n);
/* crc32c_extend as one chain of the SSE4.2 instruction (the portable path without SSE4.2),
   for tests and benchmarks. */
uint32_t crc32c_extend_single_chain(uint32_t crc, const void *data, size_t n);
/* The path crc32c_extend takes on this CPU, e.g. "sse4.2+pclmul 3-stream" (static string). */
const char *crc32c_path_name(void);

static inline uint32_t crc32c_value(const void *data, size_t n) {
  return crc32c_extend(0, data, n);
}

/* Masked form stored in files (LevelDB's): a CRC of data that embeds CRCs stays useful. */
#define CRC32C_MASK_DELTA 0xa282ead8u
static inline uint32_t crc32c_mask(uint32_t crc) {
  return ((crc >> 15) | (crc << 17)) + CRC32C_MASK_DELTA;
}
static inline uint32_t crc32c_unmask(uint32_t masked) {
  uint32_t rot = masked - CRC32C_MASK_DELTA;
  return (rot >> 17) | (rot << 15);
}

#endif

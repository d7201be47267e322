/* Helpers shared by the fuzz targets (tests/fuzz/fuzz_*.c): a scratch directory for the
 * readers that open files, and "CRC fixers" that make a copy of an input pass its checksums,
 * so that fuzzing reaches the decoding behind a checksum instead of stopping at it.
 *
 * Every fixer takes a buffer the caller owns and rewrites checksum fields in place; one
 * whose structure does not fit (a length past the end, a handle out of bounds) leaves those
 * bytes alone. Nothing here prints or exits except fuzz_check(), which aborts: a broken
 * invariant is a finding, the same as a sanitizer report.
 */
#ifndef BFH_TESTS_FUZZ_UTIL_H
#define BFH_TESTS_FUZZ_UTIL_H

#include <dirent.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bfh.h" /* the status codes the targets check (BFH_OK, BFH_E_*) */
#include "lsm/block.h"
#include "util/coding.h"
#include "util/crc32c.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Aborts (a finding) when cond is false. */
#define fuzz_check(cond)                                                                \
  do {                                                                                  \
    if (!(cond)) {                                                                      \
      fprintf(stderr, "%s:%d: fuzz invariant failed: %s\n", __FILE__, __LINE__, #cond); \
      abort();                                                                          \
    }                                                                                   \
  } while (0)

static char fuzz_dir_path[256];

static void fuzz_dir_remove(void) {
  DIR *d = opendir(fuzz_dir_path);
  if (d) {
    struct dirent *e;
    char p[512];
    while ((e = readdir(d)) != NULL) {
      if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
      snprintf(p, sizeof p, "%s/%s", fuzz_dir_path, e->d_name);
      unlink(p);
    }
    closedir(d);
  }
  rmdir(fuzz_dir_path);
}

/* The process's scratch directory (created on first use under $TMPDIR, else /dev/shm if
   present, else /tmp; removed at exit). Aborts if it cannot be made: without it a target
   would test nothing. */
static inline const char *fuzz_dir(void) {
  if (!fuzz_dir_path[0]) {
    const char *t = getenv("TMPDIR");
    if (!t || !*t) t = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
    snprintf(fuzz_dir_path, sizeof fuzz_dir_path, "%s/bfh-fuzz-XXXXXX", t);
    fuzz_check(mkdtemp(fuzz_dir_path) != NULL);
    atexit(fuzz_dir_remove);
  }
  return fuzz_dir_path;
}

/* Writes data[0,n) to <scratch dir>/name and puts that path into path (cap bytes). The old
   file is unlinked first, not truncated (a file system may write a truncated file's blocks
   out at close, which would make every run wait for the disk). */
static inline void fuzz_write_file(const char *name, const uint8_t *data, size_t n, char *path,
                                   size_t cap) {
  snprintf(path, cap, "%s/%s", fuzz_dir(), name);
  unlink(path);
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  fuzz_check(fd >= 0);
  size_t done = 0;
  while (done < n) {
    ssize_t w = write(fd, data + done, n - done);
    fuzz_check(w > 0);
    done += (size_t)w;
  }
  fuzz_check(close(fd) == 0);
}

/* A malloc'd copy of data (at least one byte allocated, plus a NUL after the copy). */
static inline uint8_t *fuzz_copy(const uint8_t *data, size_t n) {
  uint8_t *p = malloc(n + 1);
  fuzz_check(p != NULL);
  if (n) memcpy(p, data, n);
  p[n] = 0;
  return p;
}

/* Runs exercise on a copy of the input as given, then, for a format ending in a masked
   crc32c of everything before it, once more with that checksum made right, so that the
   fuzzer reaches the decoding behind the checksum. */
static inline void fuzz_as_given_and_checksummed(const uint8_t *data, size_t size,
                                                 void (*exercise)(const uint8_t *, size_t)) {
  uint8_t *c = fuzz_copy(data, size);
  exercise(c, size);
  if (size >= 4) {
    encode_fixed32(c + size - 4, crc32c_mask(crc32c_value(c, size - 4)));
    exercise(c, size);
  }
  free(c);
}

/* Log framing (lsm/log.h and LevelDB's, which are the same): rewrites the CRC of every
   physical record whose header and payload fit in their 32 KiB block. */
static inline void fuzz_fix_log_crcs(uint8_t *p, size_t n) {
  size_t off = 0;
  while (off < n) {
    size_t block_end = (off / 32768 + 1) * 32768;
    if (block_end > n) block_end = n;
    if (block_end - off < 7) {
      off = block_end;
      continue;
    }
    size_t len = (size_t)p[off + 4] | (size_t)p[off + 5] << 8;
    if (len > block_end - off - 7) {
      off = block_end;
      continue;
    }
    encode_fixed32(p + off, crc32c_mask(crc32c_value(p + off + 6, 1 + len)));
    off += 7 + len;
  }
}

/* Block trailer (own tables and LevelDB's: type u8, masked crc32c of contents + type):
   rewrites the CRC of the block [off, off + size) if it and its trailer lie below limit,
   keeping the type byte. Returns 1 if it did. */
static inline int fuzz_fix_block_trailer(uint8_t *p, uint64_t limit, uint64_t off, uint64_t size) {
  if (off > limit || size > limit - off || BLOCK_TRAILER_BYTES > limit - off - size) return 0;
  uint8_t *c = p + off;
  uint32_t crc = crc32c_extend(crc32c_value(c, (size_t)size), c + size, 1);
  encode_fixed32(c + size + 1, crc32c_mask(crc));
  return 1;
}

/* For every entry of the block contents c[0,n) (block format, doc/format.md "Block") whose
   value is a block handle, fixes that block's trailer (fuzz_fix_block_trailer). */
static inline void fuzz_fix_blocks_listed(uint8_t *file, uint64_t limit, const uint8_t *c,
                                          size_t n) {
  block_t b;
  if (block_parse(&b, c, n)) return;
  block_cursor_t cur;
  block_cursor_init(&cur, &b, bytewise_compare);
  for (block_cursor_seek_first(&cur); block_cursor_valid(&cur); block_cursor_next(&cur)) {
    block_handle_t h;
    if (block_handle_decode(cur.val, cur.val + cur.val_len, &h))
      fuzz_fix_block_trailer(file, limit, h.offset, h.size);
  }
  block_cursor_release(&cur);
}

#endif

/* Helpers shared by the test executables: a fresh temporary directory, removing a
 * directory tree, reading and writing a whole file, damaging one byte of a file, the
 * manifest CURRENT names. Header-only (each test is its own
 * executable built from its own .c); POSIX only, so the tests of the public API can use it
 * too. Every function returns 0 on success and -1 (errno set) on failure; the caller
 * asserts, so a failure is reported at the line of the test. (The build defines
 * _GNU_SOURCE, which declares nftw, mkdtemp, pread and pwrite.)
 */
#ifndef BFH_TESTS_TEST_UTIL_H
#define BFH_TESTS_TEST_UTIL_H

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* Sleeps ms milliseconds (a pause between the polls of a bounded wait). */
static inline void test_sleep_ms(long ms) {
  struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
  nanosleep(&ts, NULL);
}

/* mkdir -p path (mode 0755). */
static inline int test_mkdirs(const char *path) {
  char buf[4096];
  size_t n = strlen(path);
  if (n == 0 || n >= sizeof buf) {
    errno = ENAMETOOLONG;
    return -1;
  }
  memcpy(buf, path, n + 1);
  for (size_t i = 1; i <= n; i++) {
    if (buf[i] != '/' && buf[i] != '\0') continue;
    char c = buf[i];
    buf[i] = '\0';
    if (mkdir(buf, 0755) != 0 && errno != EEXIST) return -1;
    buf[i] = c;
  }
  return 0;
}

/* A fresh, empty directory $BFH_TEST_TMPDIR/<prefix>.XXXXXX (base /tmp when the variable is
   unset or empty; created if missing), its path written to buf (cap bytes). The caller
   removes it with test_rmrf. */
static inline int test_tmpdir_create(char *buf, size_t cap, const char *prefix) {
  const char *base = getenv("BFH_TEST_TMPDIR");
  if (!base || !*base) base = "/tmp";
  if (test_mkdirs(base) != 0) return -1;
  int n = snprintf(buf, cap, "%s/%s.XXXXXX", base, prefix);
  if (n < 0 || (size_t)n >= cap) {
    errno = ENAMETOOLONG;
    return -1;
  }
  return mkdtemp(buf) ? 0 : -1;
}

static inline int test_rmrf_entry(const char *path, const struct stat *sb, int flag,
                                  struct FTW *ftw) {
  (void)sb, (void)flag, (void)ftw;
  return remove(path);
}

/* rm -r path: removes the directory tree (or file) at path, not following symlinks. */
static inline int test_rmrf(const char *path) {
  return nftw(path, test_rmrf_entry, 16, FTW_DEPTH | FTW_PHYS) == 0 ? 0 : -1;
}

/* Copies the first max bytes (all of it if it is shorter) of the file from to the file to,
   created or truncated. */
static inline int test_copy_file(const char *from, const char *to, uint64_t max) {
  int in = open(from, O_RDONLY);
  if (in < 0) return -1;
  int out = open(to, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (out < 0) {
    close(in);
    return -1;
  }
  char buf[65536];
  uint64_t done = 0;
  int ok = 1;
  while (ok && done < max) {
    size_t want = max - done < sizeof buf ? (size_t)(max - done) : sizeof buf;
    ssize_t n = read(in, buf, want);
    if (n <= 0) {
      ok = n == 0;
      break;
    }
    ok = write(out, buf, (size_t)n) == n;
    done += (uint64_t)n;
  }
  close(in);
  if (close(out) != 0) ok = 0;
  if (!ok && errno == 0) errno = EIO;
  return ok ? 0 : -1;
}

/* cp -r from to: copies the directory from (regular files and subdirectories) to the new
   directory to. */
static inline int test_copy_dir(const char *from, const char *to) {
  if (mkdir(to, 0755) != 0) return -1;
  DIR *d = opendir(from);
  if (!d) return -1;
  struct dirent *de;
  int rc = 0;
  while (rc == 0 && (de = readdir(d))) {
    if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..")) continue;
    char a[4096], b[4096];
    if ((size_t)snprintf(a, sizeof a, "%s/%s", from, de->d_name) >= sizeof a ||
        (size_t)snprintf(b, sizeof b, "%s/%s", to, de->d_name) >= sizeof b) {
      errno = ENAMETOOLONG;
      rc = -1;
      break;
    }
    struct stat sb;
    if (lstat(a, &sb) != 0)
      rc = -1;
    else if (S_ISDIR(sb.st_mode))
      rc = test_copy_dir(a, b);
    else if (S_ISREG(sb.st_mode))
      rc = test_copy_file(a, b, UINT64_MAX);
  }
  closedir(d);
  return rc;
}

/* Room for a path from test_tmpdir_create (a fixture's directory). */
#define TEST_PATH_MAX 4096

/* Copies p, a path in memory of its own (from a helper such as table_file_path; freed here),
   into buf (cap bytes): -1 if p is NULL (no memory) or does not fit. */
static inline int test_path_take(char *buf, size_t cap, char *p) {
  size_t n = p ? strlen(p) : 0;
  int rc = p && n < cap ? 0 : -1;
  if (rc == 0) memcpy(buf, p, n + 1);
  free(p);
  return rc;
}

/* The name of the manifest that the CURRENT file of the database in dir names (both engines
   write "MANIFEST-NNNNNN\n"), into name (cap bytes). */
static inline int test_current_manifest(const char *dir, char *name, size_t cap) {
  size_t n = strlen(dir) + sizeof "/CURRENT";
  char *path = malloc(n);
  if (!path) return -1;
  snprintf(path, n, "%s/CURRENT", dir);
  FILE *f = fopen(path, "r");
  free(path);
  if (!f) return -1;
  char *got = fgets(name, (int)cap, f);
  fclose(f);
  if (!got) return -1;
  name[strcspn(name, "\n")] = '\0';
  return 0;
}

/* The whole file at path: its bytes (malloc'd; the caller frees them) and *len, or NULL. */
static inline uint8_t *test_read_file(const char *path, size_t *len) {
  *len = 0;
  FILE *fp = fopen(path, "rb");
  if (!fp) return NULL;
  uint8_t *b = NULL;
  long n = fseek(fp, 0, SEEK_END) == 0 ? ftell(fp) : -1;
  if (n >= 0 && fseek(fp, 0, SEEK_SET) == 0 && (b = malloc(n ? (size_t)n : 1)) &&
      fread(b, 1, (size_t)n, fp) != (size_t)n) {
    free(b);
    b = NULL;
  }
  fclose(fp);
  if (b) *len = (size_t)n;
  return b;
}

/* Writes b[0, len) as the whole file at path (created or truncated). */
static inline int test_write_file(const char *path, const uint8_t *b, size_t len) {
  FILE *fp = fopen(path, "wb");
  if (!fp) return -1;
  int ok = fwrite(b, 1, len, fp) == len;
  if (fclose(fp) != 0) ok = 0;
  return ok ? 0 : -1;
}

/* XORs the byte at offset off of the file at path with mask (the file keeps its size). */
static inline int test_file_xor_byte(const char *path, uint64_t off, uint8_t mask) {
  int fd = open(path, O_RDWR);
  if (fd < 0) return -1;
  uint8_t b;
  int ok = pread(fd, &b, 1, (off_t)off) == 1;
  b ^= mask;
  ok = ok && pwrite(fd, &b, 1, (off_t)off) == 1;
  if (close(fd) != 0) ok = 0;
  if (!ok && errno == 0) errno = EIO;
  return ok ? 0 : -1;
}

/* Calls expect(copy, n, what, at) for every damaged copy of buf[0, len): each byte XORed
   with 0x01 and with 0xff, every truncation, and extra zero bytes at the end. Each copy is
   allocated at exactly its length (so a read past it is a sanitizer report). */
typedef void (*test_corrupt_fn)(const uint8_t *copy, size_t n, const char *what, size_t at);
static inline void test_corruption_sweep(const uint8_t *buf, size_t len, size_t extra,
                                         test_corrupt_fn expect) {
  static const uint8_t xors[] = {0x01, 0xff};
  for (size_t x = 0; x < sizeof xors; x++)
    for (size_t off = 0; off < len; off++) {
      uint8_t *copy = malloc(len);
      memcpy(copy, buf, len);
      copy[off] ^= xors[x];
      expect(copy, len, "byte change", off);
      free(copy);
    }
  for (size_t cut = 0; cut < len; cut++) {
    uint8_t *copy = malloc(cut ? cut : 1);
    memcpy(copy, buf, cut);
    expect(copy, cut, "truncation", cut);
    free(copy);
  }
  uint8_t *longer = calloc(len + extra, 1);
  memcpy(longer, buf, len);
  expect(longer, len + extra, "extension", len);
  free(longer);
}

#endif

/* The BFH-PARAMS file: see db_params.h for the byte layout. */
#include "lsm_hooks/db_params.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "util/coding.h"
#include "util/crc32c.h"

void db_params_encode(const db_params_t *p, uint8_t out[DB_PARAMS_BYTES]) {
  memcpy(out, DB_PARAMS_MAGIC, 4);
  encode_fixed32(out + 4, DB_PARAMS_VERSION);
  encode_fixed64(out + 8, p->m);
  encode_fixed32(out + 16, p->k);
  encode_fixed32(out + 20, 0);
  encode_fixed64(out + 24, p->seed);
  encode_fixed32(out + 32, crc32c_mask(crc32c_value(out, 32)));
}

int db_params_decode(const uint8_t *data, size_t n, const char *path, db_params_t *out,
                     err_t *err) {
  if (n != DB_PARAMS_BYTES)
    return err_set(err, BFH_E_CORRUPT, "%s: %zu bytes, expected %d", path, n, DB_PARAMS_BYTES);
  if (memcmp(data, DB_PARAMS_MAGIC, 4) != 0)
    return err_set(err, BFH_E_CORRUPT, "%s: bad magic at offset 0", path);
  uint32_t crc = crc32c_unmask(decode_fixed32(data + 32));
  if (crc != crc32c_value(data, 32))
    return err_set(err, BFH_E_CORRUPT, "%s: checksum mismatch at offset 32", path);
  uint32_t version = decode_fixed32(data + 4);
  if (version != DB_PARAMS_VERSION)
    return err_set(err, BFH_E_UNSUPPORTED, "%s: version %u at offset 4, this build reads %u", path,
                   version, DB_PARAMS_VERSION);
  if (decode_fixed32(data + 20) != 0)
    return err_set(err, BFH_E_CORRUPT, "%s: reserved field at offset 20 is not zero", path);
  out->m = decode_fixed64(data + 8);
  out->k = decode_fixed32(data + 16);
  out->seed = decode_fixed64(data + 24);
  if (out->m < 64 || out->k < 1 || out->k > 32)
    return err_set(err, BFH_E_CORRUPT, "%s: m=%llu k=%u out of range", path,
                   (unsigned long long)out->m, out->k);
  return BFH_OK;
}

int db_params_read(const char *dir, db_params_t *out, err_t *err) {
  char path[4096];
  snprintf(path, sizeof path, "%s/%s", dir, DB_PARAMS_FILE);
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT || errno == ENOTDIR) return BFH_NOT_FOUND;
    return err_errno(err, errno, "%s: open", path);
  }
  uint8_t buf[DB_PARAMS_BYTES + 1];
  size_t n = 0;
  while (n < sizeof buf) {
    ssize_t r = read(fd, buf + n, sizeof buf - n);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) {
      int e = errno;
      close(fd);
      return err_errno(err, e, "%s: read at offset %zu", path, n);
    }
    if (r == 0) break;
    n += (size_t)r;
  }
  close(fd);
  return db_params_decode(buf, n, path, out, err);
}

int db_params_write(const char *dir, const db_params_t *p, err_t *err) {
  char path[4096], tmp[4096];
  snprintf(path, sizeof path, "%s/%s", dir, DB_PARAMS_FILE);
  snprintf(tmp, sizeof tmp, "%s/%s.tmp", dir, DB_PARAMS_FILE);
  uint8_t buf[DB_PARAMS_BYTES];
  db_params_encode(p, buf);
  int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return err_errno(err, errno, "%s: create", tmp);
  size_t n = 0;
  while (n < sizeof buf) {
    ssize_t w = write(fd, buf + n, sizeof buf - n);
    if (w < 0 && errno == EINTR) continue;
    if (w < 0) {
      int e = errno;
      close(fd);
      unlink(tmp);
      return err_errno(err, e, "%s: write at offset %zu", tmp, n);
    }
    n += (size_t)w;
  }
  if (fsync(fd) != 0) {
    int e = errno;
    close(fd);
    unlink(tmp);
    return err_errno(err, e, "%s: fsync", tmp);
  }
  close(fd);
  if (rename(tmp, path) != 0) {
    int e = errno;
    unlink(tmp);
    return err_errno(err, e, "%s: rename to %s", tmp, path);
  }
  int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    int rc = fsync(dfd);
    int e = errno;
    close(dfd);
    if (rc != 0) return err_errno(err, e, "%s: fsync of the directory", dir);
  }
  return BFH_OK;
}

int db_params_check(const char *dir, const db_params_t *stored, const db_params_t *want,
                    err_t *err) {
  if (stored->m == want->m && stored->k == want->k && stored->seed == want->seed) return BFH_OK;
  return err_set(err, BFH_E_INVALID,
                 "%s/%s: the database's value filters use m=%llu bits, k=%u, seed=%llu; the "
                 "options ask for m=%llu, k=%u, seed=%llu (open with the stored values)",
                 dir, DB_PARAMS_FILE, (unsigned long long)stored->m, stored->k,
                 (unsigned long long)stored->seed, (unsigned long long)want->m, want->k,
                 (unsigned long long)want->seed);
}

#include "lsm/filename.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/coding.h"
#include "util/crc32c.h"
#include "util/path.h"

char *lsm_filename_log(const char *dir, uint64_t number) {
  return path_fmt("%s/%06" PRIu64 ".log", dir, number);
}

char *lsm_filename_manifest(const char *dir, uint64_t number) {
  return path_fmt("%s/MANIFEST-%06" PRIu64, dir, number);
}

char *lsm_filename_current(const char *dir) {
  return path_join(dir, "CURRENT");
}

char *lsm_filename_temp(const char *dir) {
  return path_join(dir, "CURRENT.tmp");
}

char *lsm_filename_lock(const char *dir) {
  return path_join(dir, "LOCK");
}

char *lsm_filename_identity(const char *dir) {
  return path_join(dir, "IDENTITY");
}

/* Parses all-digit s[0,n) into *v; 0 on an empty string, a non-digit or overflow. */
static int parse_number(const char *s, size_t n, uint64_t *v) {
  if (n == 0) return 0;
  uint64_t x = 0;
  for (size_t i = 0; i < n; i++) {
    if (s[i] < '0' || s[i] > '9') return 0;
    uint64_t d = (uint64_t)(s[i] - '0');
    if (x > (UINT64_MAX - d) / 10) return 0;
    x = x * 10 + d;
  }
  *v = x;
  return 1;
}

int lsm_filename_parse(const char *name, uint64_t *number, lsm_file_type_t *type) {
  *number = 0;
  if (strcmp(name, "CURRENT") == 0) {
    *type = LSM_FILE_CURRENT;
    return 1;
  }
  if (strcmp(name, "CURRENT.tmp") == 0) {
    *type = LSM_FILE_TEMP;
    return 1;
  }
  if (strcmp(name, "LOCK") == 0) {
    *type = LSM_FILE_LOCK;
    return 1;
  }
  if (strcmp(name, "IDENTITY") == 0) {
    *type = LSM_FILE_IDENTITY;
    return 1;
  }
  if (strncmp(name, "MANIFEST-", 9) == 0) {
    if (!parse_number(name + 9, strlen(name + 9), number)) return 0;
    *type = LSM_FILE_MANIFEST;
    return 1;
  }
  const char *dot = strchr(name, '.');
  if (!dot || !parse_number(name, (size_t)(dot - name), number)) return 0;
  if (strcmp(dot + 1, "log") == 0) {
    *type = LSM_FILE_LOG;
    return 1;
  }
  if (strcmp(dot + 1, LSM_TABLE_EXT) == 0) {
    *type = LSM_FILE_TABLE;
    return 1;
  }
  return 0;
}

void lsm_identity_encode(uint8_t out[LSM_IDENTITY_BYTES]) {
  memcpy(out, LSM_IDENTITY_MAGIC, 8);
  encode_fixed32(out + 8, LSM_FORMAT_VERSION);
  encode_fixed32(out + 12, crc32c_mask(crc32c_value(out, 12)));
}

/* An IDENTITY that is not ours: not empty, and its first bytes differ from the magic in
   more than two places (another engine's IDENTITY, e.g. RocksDB's UUID text). Anything
   closer is our file, damaged. */
static int foreign_identity(const uint8_t *data, size_t n) {
  size_t m = n < 8 ? n : 8, same = 0;
  for (size_t i = 0; i < m; i++) same += data[i] == (uint8_t)LSM_IDENTITY_MAGIC[i];
  return n > 0 && same + 2 < m;
}

int lsm_identity_check(const uint8_t *data, size_t n, const char *path, err_t *err) {
  if (foreign_identity(data, n))
    return err_set(err, ST_E_INVALID, "%s: not a bfh lsm database (bad IDENTITY magic)", path);
  if (n != LSM_IDENTITY_BYTES || memcmp(data, LSM_IDENTITY_MAGIC, 8) != 0)
    return err_set(err, ST_E_CORRUPT, "%s: at offset 0: damaged IDENTITY (%zu bytes)", path, n);
  if (crc32c_unmask(decode_fixed32(data + 12)) != crc32c_value(data, 12))
    return err_set(err, ST_E_CORRUPT, "%s: at offset 12: IDENTITY checksum mismatch", path);
  uint32_t version = decode_fixed32(data + 8);
  if (version != LSM_FORMAT_VERSION)
    return err_set(err, ST_E_UNSUPPORTED,
                   "%s: format version %u is not supported (this build reads version %u)", path,
                   version, LSM_FORMAT_VERSION);
  return ST_OK;
}

int lsm_identity_read(env_t *io, const char *dir, err_t *err) {
  char *path = lsm_filename_identity(dir);
  if (!path) return err_set(err, ST_E_NOMEM, "%s/IDENTITY: no memory for its path", dir);
  int rc = ST_NOT_FOUND;
  void *data = NULL;
  size_t n = 0;
  if (env_exists(io, path)) {
    rc = env_read_file(io, path, &data, &n, err);
    if (rc == ST_OK) rc = lsm_identity_check(data, n, path, err);
  }
  free(data);
  free(path);
  return rc;
}

/* The BFH-PARAMS file: see db_params.h for the byte layout. */
#include "api/db_params.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bfh.h"
#include "util/coding.h"
#include "util/crc32c.h"
#include "util/path.h"

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

/* db_params_read on the file's path. */
static int read_at(env_t *io, const char *path, db_params_t *out, err_t *err) {
  if (!env_exists(io, path)) return BFH_NOT_FOUND; /* no I/O call: nothing to fault */
  void *data = NULL;
  size_t n = 0;
  int rc = env_read_file(io, path, &data, &n, err);
  if (rc != BFH_OK) {
    if (rc != BFH_E_NOMEM && !env_exists(io, path)) return BFH_NOT_FOUND;
    return rc; /* the message names the file */
  }
  rc = db_params_decode(data, n, path, out, err);
  free(data);
  return rc;
}

int db_params_read(env_t *io, const char *dir, db_params_t *out, err_t *err) {
  char *path = path_join(dir, DB_PARAMS_FILE);
  if (!path) return err_set(err, BFH_E_NOMEM, "%s/%s: no memory for its path", dir, DB_PARAMS_FILE);
  int rc = read_at(io, path, out, err);
  free(path);
  return rc;
}

int db_params_write(env_t *io, const char *dir, const db_params_t *p, err_t *err) {
  char *path = path_join(dir, DB_PARAMS_FILE);
  char *tmp = path_fmt("%s/%s.tmp", dir, DB_PARAMS_FILE);
  if (!path || !tmp) {
    free(path);
    free(tmp);
    return err_set(err, BFH_E_NOMEM, "%s/%s: no memory for its path", dir, DB_PARAMS_FILE);
  }
  uint8_t buf[DB_PARAMS_BYTES];
  db_params_encode(p, buf);
  int rc = env_write_file(io, tmp, buf, sizeof buf, err); /* create, write, fdatasync */
  if (rc == BFH_OK) rc = env_rename(io, tmp, path, err);
  if (rc != BFH_OK)
    (void)env_unlink(io, tmp, NULL);
  else
    rc = env_sync_dir(io, dir, err);
  free(path);
  free(tmp);
  return rc;
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

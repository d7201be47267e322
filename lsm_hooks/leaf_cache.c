/* The sidecar cache files of leaves; see leaf_cache.h for their layout. */
#include "lsm_hooks/leaf_cache.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bfh.h"
#include "util/coding.h"
#include "util/crc32c.h"

int leaf_cache_load(lsm_io_t *io, const char *path, uint64_t number, uint64_t size, uint64_t m,
                    uint32_t k, uint64_t seed, value_filter_t **out, err_t *err) {
  if (!lsm_io_exists(io, path)) return err_set(err, BFH_NOT_FOUND, "filter cache %s: absent", path);
  lsm_rfile_t *fd = NULL;
  int rc = lsm_io_open_read(io, path, &fd, err);
  if (rc != BFH_OK) {
    if (rc != BFH_E_NOMEM && !lsm_io_exists(io, path))
      return err_set(err, BFH_NOT_FOUND, "filter cache %s: absent", path);
    return err_prefix(err, "filter cache %s: ", path);
  }
  size_t want = LEAF_CACHE_HEADER_BYTES + value_filter_serialized_size(m);
  uint8_t *buf = malloc(want + 1);
  if (!buf) {
    lsm_rfile_close(fd);
    return err_set(err, BFH_E_NOMEM, "filter cache %s: no memory", path);
  }
  /* Read one byte more than expected to notice a file that is too long. */
  size_t got = 0;
  rc = lsm_rfile_pread(fd, 0, buf, want + 1, &got, err);
  lsm_rfile_close(fd);
  if (rc != BFH_OK) {
    free(buf);
    return err_prefix(err, "filter cache %s: ", path);
  }
  rc = BFH_E_CORRUPT;
  const uint8_t *h = buf;
  if (got != want) {
    err_set(err, rc, "filter cache %s: %zu bytes, expected %zu", path, got, want);
  } else if (memcmp(h, LEAF_CACHE_MAGIC, 4) != 0 || decode_fixed32(h + 4) != LEAF_CACHE_VERSION) {
    err_set(err, rc, "filter cache %s: bad magic or version", path);
  } else if (crc32c_unmask(decode_fixed32(h + 28)) != crc32c_value(h, 28)) {
    err_set(err, rc, "filter cache %s: header checksum mismatch", path);
  } else if (decode_fixed32(h + 24) != 0) {
    err_set(err, rc, "filter cache %s: unknown flags %u", path, decode_fixed32(h + 24));
  } else if (decode_fixed64(h + 8) != number || decode_fixed64(h + 16) != size) {
    err_set(err, rc, "filter cache %s: made for table %llu of %llu bytes, not %llu of %llu", path,
            (unsigned long long)decode_fixed64(h + 8), (unsigned long long)decode_fixed64(h + 16),
            (unsigned long long)number, (unsigned long long)size);
  } else {
    value_filter_t *f = NULL;
    rc = value_filter_deserialize(h + LEAF_CACHE_HEADER_BYTES, want - LEAF_CACHE_HEADER_BYTES, &f,
                                  err);
    if (rc != BFH_OK) {
      err_prefix(err, "filter cache %s: ", path);
    } else if (f->m != m || f->k != k || f->seed != seed) {
      value_filter_destroy(f);
      rc = err_set(err, BFH_E_CORRUPT, "filter cache %s: made with other m, k or seed", path);
    } else {
      *out = f;
    }
  }
  free(buf);
  return rc;
}

int leaf_cache_encode(uint64_t number, uint64_t size, const value_filter_t *f, uint8_t **out,
                      size_t *len, err_t *err) {
  size_t n = LEAF_CACHE_HEADER_BYTES + value_filter_serialized_size(f->m);
  uint8_t *buf = malloc(n);
  if (!buf)
    return err_set(err, BFH_E_NOMEM, "filter cache of table %llu: no memory",
                   (unsigned long long)number);
  memcpy(buf, LEAF_CACHE_MAGIC, 4);
  encode_fixed32(buf + 4, LEAF_CACHE_VERSION);
  encode_fixed64(buf + 8, number);
  encode_fixed64(buf + 16, size);
  encode_fixed32(buf + 24, 0); /* flags */
  encode_fixed32(buf + 28, crc32c_mask(crc32c_value(buf, 28)));
  value_filter_serialize(f, buf + LEAF_CACHE_HEADER_BYTES);
  *out = buf;
  *len = n;
  return BFH_OK;
}

int leaf_cache_write(lsm_io_t *io, const char *path, const uint8_t *buf, size_t n, err_t *err) {
  char tmp[4200], dir[4200];
  if ((size_t)snprintf(tmp, sizeof tmp, "%s.tmp", path) >= sizeof tmp)
    return err_set(err, BFH_E_INVALID, "filter cache %s: path too long", path);
  snprintf(dir, sizeof dir, "%s", path);
  char *slash = strrchr(dir, '/');
  if (slash)
    *slash = '\0';
  else
    snprintf(dir, sizeof dir, ".");
  /* tmp: written and fdatasynced, renamed, and the rename made durable (with leaves on disk
     the leaf lives in this file from the moment it is added). */
  int rc = lsm_io_write_file(io, tmp, buf, n, err);
  if (rc == BFH_OK) rc = lsm_io_rename(io, tmp, path, err);
  if (rc == BFH_OK) rc = lsm_io_sync_dir(io, dir, err);
  if (rc != BFH_OK) {
    (void)lsm_io_unlink(io, tmp, NULL);
    return err_prefix(err, "filter cache %s: ", path);
  }
  return BFH_OK;
}

int leaf_cache_store(lsm_io_t *io, const char *path, uint64_t number, uint64_t size,
                     const value_filter_t *f, err_t *err) {
  uint8_t *buf = NULL;
  size_t n = 0;
  int rc = leaf_cache_encode(number, size, f, &buf, &n, err);
  if (rc != BFH_OK) return rc;
  rc = leaf_cache_write(io, path, buf, n, err);
  free(buf);
  return rc;
}

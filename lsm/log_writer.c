/* Log writer: appends CRC-protected records in 32 KiB blocks (lsm/log.h).
 *
 * Byte layout (doc/format.md "Log"): the file is a sequence of 32,768-byte blocks (the
 * last one may be short). A block holds physical records
 *   [masked crc32c fixed32][length fixed16][type u8][payload: length bytes]
 * crc = crc32c(type byte | payload), masked as in util/crc32c.h. A record never spans a
 * block boundary: a logical record larger than the room left is split into FIRST, MIDDLE...,
 * LAST fragments (FULL when it fits). When fewer than 7 bytes remain in a block, they are
 * filled with zeros and the next record starts in the next block.
 */
#include <stdlib.h>
#include <string.h>

#include "lsm/log.h"
#include "util/coding.h"
#include "util/crc32c.h"

struct log_writer {
  env_file_t *file;
  size_t block_offset; /* bytes used in the current block */
  uint32_t type_crc[LOG_LAST + 1];
  err_t dead; /* code != ST_OK: a write failed */
};

static int writer_create(env_t *io, const char *path, int append, log_writer_t **out,
                         err_t *err) {
  *out = NULL;
  log_writer_t *w = calloc(1, sizeof *w);
  if (!w) return err_set(err, ST_E_NOMEM, "log %s: out of memory", path);
  int rc = append ? env_open_append(io, path, &w->file, err)
                  : env_open_write(io, path, &w->file, err);
  if (rc) {
    free(w);
    return rc;
  }
  for (int t = 0; t <= LOG_LAST; t++) {
    uint8_t b = (uint8_t)t;
    w->type_crc[t] = crc32c_value(&b, 1);
  }
  /* Records never span blocks, so the position in the last block is all the state an
     earlier writer left. */
  w->block_offset = (size_t)(env_file_size(w->file) % LOG_BLOCK_BYTES);
  err_clear(&w->dead);
  *out = w;
  return ST_OK;
}

int log_writer_open(env_t *io, const char *path, log_writer_t **out, err_t *err) {
  return writer_create(io, path, 0, out, err);
}

int log_writer_open_append(env_t *io, const char *path, log_writer_t **out, err_t *err) {
  return writer_create(io, path, 1, out, err);
}

static int fail(log_writer_t *w, int rc, err_t *err) {
  if (err)
    w->dead = *err;
  else
    err_set(&w->dead, rc, "log %s: write failed", env_file_path(w->file));
  w->dead.code = rc;
  return rc;
}

static int dead(const log_writer_t *w, err_t *err) {
  if (err) *err = w->dead;
  return w->dead.code;
}

static int emit(log_writer_t *w, int type, const uint8_t *p, size_t n, err_t *err) {
  uint8_t h[LOG_HEADER_BYTES];
  uint32_t crc = crc32c_mask(crc32c_extend(w->type_crc[type], p, n));
  encode_fixed32(h, crc);
  h[4] = (uint8_t)n;
  h[5] = (uint8_t)(n >> 8);
  h[6] = (uint8_t)type;
  int rc = env_file_append(w->file, h, sizeof h, err);
  if (!rc && n) rc = env_file_append(w->file, p, n, err);
  w->block_offset += LOG_HEADER_BYTES + n;
  return rc;
}

int log_writer_add(log_writer_t *w, const void *data, size_t n, int sync, err_t *err) {
  if (w->dead.code) return dead(w, err);
  static const uint8_t zeros[LOG_HEADER_BYTES];
  const uint8_t *p = data;
  size_t left = n;
  int begin = 1, rc;
  do {
    size_t room = LOG_BLOCK_BYTES - w->block_offset;
    if (room < LOG_HEADER_BYTES) {
      if (room && (rc = env_file_append(w->file, zeros, room, err))) return fail(w, rc, err);
      w->block_offset = 0;
    }
    size_t avail = LOG_BLOCK_BYTES - w->block_offset - LOG_HEADER_BYTES;
    size_t frag = left < avail ? left : avail;
    int end = frag == left;
    int type = begin && end ? LOG_FULL : begin ? LOG_FIRST : end ? LOG_LAST : LOG_MIDDLE;
    if ((rc = emit(w, type, p, frag, err))) return fail(w, rc, err);
    p += frag;
    left -= frag;
    begin = 0;
  } while (left > 0);
  rc = sync ? env_file_sync(w->file, err) : env_file_flush(w->file, err);
  if (rc) return fail(w, rc, err);
  return ST_OK;
}

int log_writer_sync(log_writer_t *w, err_t *err) {
  if (w->dead.code) return dead(w, err);
  int rc = env_file_sync(w->file, err);
  if (rc) return fail(w, rc, err);
  return ST_OK;
}

int log_writer_close(log_writer_t *w, err_t *err) {
  if (!w) return ST_OK;
  int rc = env_file_close(w->file, err);
  free(w);
  return rc;
}

uint64_t log_writer_size(const log_writer_t *w) {
  return env_file_size(w->file);
}

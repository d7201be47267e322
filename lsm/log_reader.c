/* Log reader: returns the records of a log in order, stopping cleanly at a torn tail
 * (lsm/log.h; the layout is described in log_writer.c and doc/format.md "Log").
 */
#include <stdlib.h>
#include <string.h>

#include "lsm/log.h"
#include "util/coding.h"
#include "util/crc32c.h"

struct log_reader {
  char *path;
  uint8_t *buf; /* the whole file (owned) */
  size_t size;
  size_t pos; /* next physical record */
  uint64_t record_offset;
  uint64_t dropped;
  int at_end;
  err_t status;     /* sticky error */
  size_t bad_at;    /* where the record behind status starts */
  uint8_t *scratch; /* reassembled fragmented record */
  size_t scratch_len, scratch_cap;
};

int log_reader_open(lsm_io_t *io, const char *path, log_reader_t **out, err_t *err) {
  *out = NULL;
  log_reader_t *r = calloc(1, sizeof *r);
  if (!r || !(r->path = strdup(path))) {
    free(r);
    return err_set(err, ST_E_NOMEM, "log %s: out of memory", path);
  }
  void *data;
  int rc = lsm_io_read_file(io, path, &data, &r->size, err);
  if (rc) {
    free(r->path);
    free(r);
    return rc;
  }
  r->buf = data;
  err_clear(&r->status);
  *out = r;
  return ST_OK;
}

void log_reader_close(log_reader_t *r) {
  if (!r) return;
  free(r->buf);
  free(r->scratch);
  free(r->path);
  free(r);
}

uint64_t log_reader_record_offset(const log_reader_t *r) {
  return r->record_offset;
}
uint64_t log_reader_dropped_bytes(const log_reader_t *r) {
  return r->dropped;
}
uint64_t log_reader_end_offset(const log_reader_t *r) {
  return r->at_end ? r->size - r->dropped : r->pos;
}

static int all_zero(const uint8_t *p, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (p[i]) return 0;
  return 1;
}

/* The data from `start` on is not a valid record: a torn tail if nothing but zeros
   follows the bad record (ending at `bad_end`), corruption otherwise. */
static int bad_record(log_reader_t *r, size_t start, size_t bad_at, size_t bad_end,
                      const char *what, err_t *err) {
  if (bad_end > r->size) bad_end = r->size;
  if (all_zero(r->buf + bad_end, r->size - bad_end)) {
    r->at_end = 1;
    r->dropped = r->size - start;
    r->pos = r->size;
    return ST_NOT_FOUND;
  }
  err_set(&r->status, ST_E_CORRUPT, "log %s: record at %zu: %s", r->path, bad_at, what);
  r->bad_at = start;
  if (err) *err = r->status;
  return ST_E_CORRUPT;
}

static int scratch_append(log_reader_t *r, const uint8_t *p, size_t n) {
  if (n == 0) return 0; /* an empty fragment: nothing to copy (scratch may be NULL) */
  if (r->scratch_len + n > r->scratch_cap) {
    size_t cap = r->scratch_cap ? r->scratch_cap : 65536;
    while (cap < r->scratch_len + n) cap *= 2;
    uint8_t *s = realloc(r->scratch, cap);
    if (!s) return -1;
    r->scratch = s;
    r->scratch_cap = cap;
  }
  memcpy(r->scratch + r->scratch_len, p, n);
  r->scratch_len += n;
  return 0;
}

int log_reader_next(log_reader_t *r, const void **data, size_t *n, err_t *err) {
  if (r->status.code) {
    if (err) *err = r->status;
    return r->status.code;
  }
  if (r->at_end) return ST_NOT_FOUND;
  int in_frag = 0;
  size_t start = r->pos; /* first fragment of the record being assembled */
  r->scratch_len = 0;
  for (;;) {
    size_t block_left = LOG_BLOCK_BYTES - r->pos % LOG_BLOCK_BYTES;
    if (block_left < LOG_HEADER_BYTES) { /* zero trailer */
      r->pos += block_left;
      if (!in_frag) start = r->pos;
    }
    if (r->pos >= r->size) {
      r->pos = r->size;
      r->at_end = 1;
      r->dropped = in_frag ? r->size - start : 0;
      return ST_NOT_FOUND;
    }
    size_t at = r->pos;
    if (!in_frag) start = at;
    if (r->size - at < LOG_HEADER_BYTES)
      return bad_record(r, start, at, r->size, "truncated header", err);
    const uint8_t *h = r->buf + at;
    uint32_t len = (uint32_t)h[4] | ((uint32_t)h[5] << 8);
    int type = h[6];
    size_t block_left2 = LOG_BLOCK_BYTES - at % LOG_BLOCK_BYTES;
    if (LOG_HEADER_BYTES + len > block_left2)
      return bad_record(r, start, at, at + block_left2, "bad length", err);
    size_t end = at + LOG_HEADER_BYTES + len;
    if (end > r->size) return bad_record(r, start, at, r->size, "truncated record", err);
    uint32_t want = crc32c_unmask(decode_fixed32(h));
    uint32_t got = crc32c_value(h + 6, 1 + (size_t)len);
    if (type == LOG_ZERO || type > LOG_LAST)
      return bad_record(r, start, at, end, "bad record type", err);
    if (want != got) return bad_record(r, start, at, end, "checksum mismatch", err);
    const uint8_t *payload = h + LOG_HEADER_BYTES;
    r->pos = end;
    switch (type) {
      case LOG_FULL:
        if (in_frag)
          return bad_record(r, start, at, end, "FULL record inside a fragmented one", err);
        r->record_offset = at;
        *data = payload;
        *n = len;
        return ST_OK;
      case LOG_FIRST:
        if (in_frag)
          return bad_record(r, start, at, end, "FIRST record inside a fragmented one", err);
        in_frag = 1;
        r->scratch_len = 0;
        break;
      default: /* MIDDLE, LAST */
        if (!in_frag) return bad_record(r, start, at, end, "fragment without a FIRST", err);
        break;
    }
    if (scratch_append(r, payload, len) != 0) {
      err_set(&r->status, ST_E_NOMEM, "log %s: out of memory", r->path);
      if (err) *err = r->status;
      return ST_E_NOMEM;
    }
    if (type == LOG_LAST) {
      r->record_offset = start;
      *data = r->scratch;
      *n = r->scratch_len;
      return ST_OK;
    }
  }
}

uint64_t log_reader_skip_damage(log_reader_t *r) {
  if (r->status.code != ST_E_CORRUPT) return 0;
  size_t next = (r->bad_at / LOG_BLOCK_BYTES + 1) * (size_t)LOG_BLOCK_BYTES;
  if (next > r->size) next = r->size;
  uint64_t skipped = next - r->bad_at;
  r->pos = next;
  err_clear(&r->status);
  return skipped;
}

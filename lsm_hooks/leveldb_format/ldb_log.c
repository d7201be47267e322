/* ldb_log: see leveldb_format/ldb_log.h for the byte layout. */
#include "lsm_hooks/leveldb_format/ldb_log.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bfh.h"
#include "util/coding.h"
#include "util/crc32c.h"

enum { REC_ZERO = 0, REC_FULL = 1, REC_FIRST = 2, REC_MIDDLE = 3, REC_LAST = 4 };

#define BATCH_HEADER_BYTES 12

static const uint8_t *get_varstring(const uint8_t *p, const uint8_t *end, const uint8_t **s,
                                    size_t *n) {
  uint32_t len;
  p = decode_varint32(p, end, &len);
  if (!p || len > (size_t)(end - p)) return NULL;
  *s = p;
  *n = len;
  return p + len;
}

int ldb_log_decode_batch(const uint8_t *p, size_t n, const char *where, ldb_visit_fn fn, void *arg,
                         int *stopped, ldb_read_stats_t *st, err_t *err) {
  *stopped = 0;
  if (n < BATCH_HEADER_BYTES)
    return err_set(err, BFH_E_CORRUPT, "%s: write batch of %zu bytes is too short", where, n);
  uint64_t seq = decode_fixed64(p);
  uint32_t count = decode_fixed32(p + 8);
  const uint8_t *q = p + BATCH_HEADER_BYTES, *end = p + n;
  uint32_t i = 0;
  for (; q < end; i++) {
    ldb_entry_t e = {.seq = seq + i};
    uint8_t tag = *q++;
    if (tag == LDB_TYPE_VALUE) {
      q = get_varstring(q, end, &e.key, &e.key_len);
      if (q) q = get_varstring(q, end, &e.val, &e.val_len);
      e.type = LDB_TYPE_VALUE;
    } else if (tag == LDB_TYPE_DELETION) {
      q = get_varstring(q, end, &e.key, &e.key_len);
      e.val = (const uint8_t *)"";
      e.type = LDB_TYPE_DELETION;
    } else {
      return err_set(err, BFH_E_CORRUPT, "%s: write batch entry %u: unknown tag %u", where, i, tag);
    }
    if (!q) return err_set(err, BFH_E_CORRUPT, "%s: write batch entry %u: truncated", where, i);
    if (i >= count)
      return err_set(err, BFH_E_CORRUPT, "%s: write batch holds more than its count %u", where,
                     count);
    if (st) st->entries++;
    if (fn(arg, &e)) {
      *stopped = 1;
      return BFH_OK;
    }
  }
  if (i != count)
    return err_set(err, BFH_E_CORRUPT, "%s: write batch holds %u entries, count says %u", where, i,
                   count);
  return BFH_OK;
}

/* Reads [offset, EOF) of f into *data (malloc'd). */
static int read_tail(env_rfile_t *f, const char *kind, const char *path, uint64_t offset,
                     uint8_t **data, uint64_t *n, err_t *err) {
  uint64_t size = env_rfile_size(f);
  uint64_t want = size > offset ? size - offset : 0;
  uint8_t *p = malloc(want ? want : 1);
  if (!p)
    return err_set(err, BFH_E_NOMEM, "%s: no memory for %llu bytes", path,
                   (unsigned long long)want);
  size_t got = 0;
  if (want > 0) {
    int rc = env_rfile_pread(f, offset, p, (size_t)want, &got, err);
    if (rc != BFH_OK) {
      free(p);
      return err_prefix(err, "%s %s: ", kind, path);
    }
  }
  *data = p;
  *n = got;
  return BFH_OK;
}

/* A record cut short by the end of the file at h (avail bytes from the header on, at most the
   rest of its block): is it a record whose length field was damaged rather than a write in
   flight? It is when the checksum in its header matches the type byte and some prefix of the
   bytes that follow (the record that was written there, shorter than its length says). A
   write in flight matches no prefix except by chance (2^-32 per length tried). */
static int tail_length_damaged(const uint8_t *h, size_t avail) {
  if (avail < LDB_LOG_HEADER_BYTES) return 0;
  uint32_t want = crc32c_unmask(decode_fixed32(h));
  uint32_t c = crc32c_value(&h[6], 1);
  if (c == want) return 1;
  for (size_t i = LDB_LOG_HEADER_BYTES; i < avail; i++) {
    c = crc32c_extend(c, &h[i], 1);
    if (c == want) return 1;
  }
  return 0;
}

int ldb_log_records(env_t *io, const char *path, const char *kind, uint64_t offset, int flags,
                    ldb_record_fn fn, void *arg, uint64_t *next_offset, ldb_read_stats_t *st,
                    err_t *err) {
  if (next_offset) *next_offset = offset;
  if (!env_exists(io, path))
    return err_set(err, BFH_NOT_FOUND, "%s %s: no such file", kind, path);
  env_rfile_t *f = NULL;
  int rc = env_open_read(io, path, &f, err);
  if (rc != BFH_OK) {
    if (rc != BFH_E_NOMEM && !env_exists(io, path))
      return err_set(err, BFH_NOT_FOUND, "%s %s: no such file", kind, path);
    return err_prefix(err, "%s %s: ", kind, path);
  }
  uint8_t *data = NULL;
  uint64_t n = 0;
  rc = read_tail(f, kind, path, offset, &data, &n, err);
  env_rfile_close(f);
  if (rc != BFH_OK) return rc;
  if (st) st->bytes_read += n;

  /* Fragments of a logical record spanning blocks are gathered in rec. */
  uint8_t *rec = NULL;
  size_t rec_len = 0, rec_cap = 0;
  int in_frag = 0;
  uint64_t rec_start = offset; /* file offset of the logical record being gathered */
  uint64_t pos = 0;            /* relative to offset */
  rc = BFH_OK;
  for (;;) {
    uint64_t abs = offset + pos;
    uint64_t left_in_block = LDB_LOG_BLOCK_BYTES - abs % LDB_LOG_BLOCK_BYTES;
    if (left_in_block < LDB_LOG_HEADER_BYTES) {
      if (n - pos < left_in_block) break; /* trailer not yet written */
      pos += left_in_block;
      if (!in_frag && next_offset) *next_offset = offset + pos;
      continue;
    }
    if (n - pos < LDB_LOG_HEADER_BYTES) break; /* header not yet written */
    const uint8_t *h = data + pos;
    uint32_t len = (uint32_t)h[4] | ((uint32_t)h[5] << 8);
    uint8_t type = h[6];
    if (len > left_in_block - LDB_LOG_HEADER_BYTES) {
      rc = err_set(err, BFH_E_CORRUPT, "%s %s: record at %llu: length %u crosses the block", kind,
                   path, (unsigned long long)abs, len);
      break;
    }
    if (n - pos - LDB_LOG_HEADER_BYTES < len) { /* payload not yet written */
      if ((flags & LDB_LOG_CHECK_TAIL) && tail_length_damaged(h, (size_t)(n - pos)))
        rc = err_set(err, BFH_E_CORRUPT,
                     "%s %s: record at %llu: length %u runs past the end of the file, but the "
                     "checksum matches a shorter record (damaged length)",
                     kind, path, (unsigned long long)abs, len);
      break;
    }
    const uint8_t *payload = h + LDB_LOG_HEADER_BYTES;
    pos += LDB_LOG_HEADER_BYTES + len;
    if (type == REC_ZERO && len == 0) { /* preallocated zeros: skip */
      if (!in_frag && next_offset) *next_offset = offset + pos;
      continue;
    }
    uint32_t want = crc32c_unmask(decode_fixed32(h));
    uint32_t got = crc32c_extend(crc32c_value(&h[6], 1), payload, len);
    if (want != got) {
      rc = err_set(err, BFH_E_CORRUPT, "%s %s: record at %llu: checksum mismatch", kind, path,
                   (unsigned long long)abs);
      break;
    }
    if (type == REC_FULL || type == REC_FIRST) {
      if (in_frag) {
        rc = err_set(err, BFH_E_CORRUPT,
                     "%s %s: record at %llu: new record inside the fragmented record at %llu", kind,
                     path, (unsigned long long)abs, (unsigned long long)rec_start);
        break;
      }
      rec_start = abs;
      rec_len = 0;
    } else if (type == REC_MIDDLE || type == REC_LAST) {
      if (!in_frag) {
        rc = err_set(err, BFH_E_CORRUPT, "%s %s: record at %llu: fragment without a first", kind,
                     path, (unsigned long long)abs);
        break;
      }
    } else {
      rc = err_set(err, BFH_E_CORRUPT, "%s %s: record at %llu: unknown record type %u", kind, path,
                   (unsigned long long)abs, type);
      break;
    }
    const uint8_t *whole = payload;
    size_t whole_len = len;
    if (type != REC_FULL) {
      if (rec_len + len > rec_cap) {
        size_t c = rec_cap ? rec_cap : 65536;
        while (c < rec_len + len) c *= 2;
        uint8_t *p = realloc(rec, c);
        if (!p) {
          rc = err_set(err, BFH_E_NOMEM, "%s %s: no memory for a record", kind, path);
          break;
        }
        rec = p;
        rec_cap = c;
      }
      if (len) memcpy(rec + rec_len, payload, len); /* rec is NULL before a first payload */
      rec_len += len;
      in_frag = type != REC_LAST;
      if (in_frag) continue;
      whole = rec;
      whole_len = rec_len;
    }
    if (st) st->blocks++;
    int stopped = 0;
    rc = fn(arg, whole, whole_len, rec_start, &stopped, err);
    if (rc != BFH_OK) break;
    if (next_offset) *next_offset = offset + pos;
    if (stopped) break;
  }
  free(rec);
  free(data);
  return rc;
}

typedef struct batch_reader {
  const char *path;
  ldb_visit_fn fn;
  void *arg;
  ldb_read_stats_t *st;
} batch_reader_t;

static int visit_batch(void *arg, const uint8_t *p, size_t n, uint64_t at, int *stopped,
                       err_t *err) {
  batch_reader_t *b = arg;
  char where[4200];
  snprintf(where, sizeof where, "log %s: record at %llu", b->path, (unsigned long long)at);
  return ldb_log_decode_batch(p, n, where, b->fn, b->arg, stopped, b->st, err);
}

int ldb_log_read_flags(env_t *io, const char *path, uint64_t offset, int flags, ldb_visit_fn fn,
                       void *arg, uint64_t *next_offset, ldb_read_stats_t *st, err_t *err) {
  batch_reader_t b = {path, fn, arg, st};
  return ldb_log_records(io, path, "log", offset, flags, visit_batch, &b, next_offset, st, err);
}

int ldb_log_read(env_t *io, const char *path, uint64_t offset, ldb_visit_fn fn, void *arg,
                 uint64_t *next_offset, ldb_read_stats_t *st, err_t *err) {
  return ldb_log_read_flags(io, path, offset, 0, fn, arg, next_offset, st, err);
}

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
  const char *kind; /* names the file in messages ("log"; borrowed) */
  int flags;        /* LOG_READER_* */
  uint8_t *buf;     /* the file from base on (owned) */
  size_t base;      /* file offset of buf[0] */
  size_t size;      /* file offset where buf ends */
  size_t pos;       /* next physical record (file offsets throughout) */
  uint64_t record_offset;
  uint64_t dropped;
  int at_end;
  err_t status;     /* sticky error */
  size_t bad_at;    /* where the record behind status starts */
  size_t resume;    /* where log_reader_skip_damage may go on (see bad_record) */
  int resume_check; /* resume is only a guess (a damaged record's own length): verify it */
  size_t fallback;  /* where it goes on if the guess fails: the next block */
  size_t cut_at;    /* the physical record the end of the file cut short, if has_cut */
  int has_cut;
  uint32_t log_number; /* LOG_READER_RECYCLABLE: this log's number */
  int old_record;      /* the read ended at a recyclable record of another log number */
  int recycled;        /* the record at offset 0 is recyclable */
  uint8_t *scratch; /* reassembled fragmented record */
  size_t scratch_len, scratch_cap;
};

int log_reader_open(env_t *io, const char *path, log_reader_t **out, err_t *err) {
  return log_reader_open_at(io, path, "log", 0, 0, out, err);
}

int log_reader_open_at(env_t *io, const char *path, const char *kind, uint64_t offset, int flags,
                       log_reader_t **out, err_t *err) {
  *out = NULL;
  log_reader_t *r = calloc(1, sizeof *r);
  if (!r || !(r->path = strdup(path))) {
    free(r);
    return err_set(err, ST_E_NOMEM, "%s %s: out of memory", kind, path);
  }
  void *data;
  size_t n;
  int rc = env_read_file_at(io, path, offset, &data, &n, err);
  if (rc) {
    free(r->path);
    free(r);
    return rc;
  }
  r->buf = data;
  r->kind = kind;
  r->flags = flags;
  r->base = r->pos = (size_t)offset;
  r->size = r->base + n;
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

void log_reader_set_log_number(log_reader_t *r, uint32_t number) {
  r->log_number = number;
}
int log_reader_old_record(const log_reader_t *r) {
  return r->at_end && r->old_record;
}
int log_reader_recycled(const log_reader_t *r) {
  return r->recycled;
}

/* Types 5-8 of a reader that reads RocksDB's recyclable records. */
static int is_recyclable(const log_reader_t *r, int type) {
  return (r->flags & LOG_READER_RECYCLABLE) && type >= LOG_RECYCLABLE_FULL &&
         type <= LOG_RECYCLABLE_LAST;
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
uint64_t log_reader_bytes_read(const log_reader_t *r) {
  return r->size - r->base;
}
int log_reader_cut_record(const log_reader_t *r, uint64_t *at, const uint8_t **p, size_t *n) {
  if (!r->at_end || !r->has_cut) return 0;
  *at = r->cut_at;
  *p = r->buf + (r->cut_at - r->base);
  *n = r->size - r->cut_at;
  return 1;
}

/* The byte at file offset pos (base <= pos <= size). */
static inline const uint8_t *at_offset(const log_reader_t *r, size_t pos) {
  return r->buf + (pos - r->base);
}

static int all_zero(const uint8_t *p, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (p[i]) return 0;
  return 1;
}

/* Where reading may go on after a bad record, for log_reader_skip_damage: */
enum {
  RESUME_BLOCK, /* the next block: the record's length cannot be trusted */
  RESUME_GUESS, /* bad_end, if a valid record starts there (the length may be damaged) */
  RESUME_EXACT  /* bad_end: the bad record's extent is known (its header checked out) */
};

/* The data from `start` on is not a valid record: a torn tail if the end of the file cut the
   record at bad_at short (cut), or (without LOG_READER_LIVE) if nothing but zeros follows the
   bad record (ending at `bad_end`); corruption otherwise. `bad_at` is the offset the message
   names; `resume` says where log_reader_skip_damage may go on. */
static int bad_record(log_reader_t *r, size_t start, size_t bad_at, size_t bad_end, int resume,
                      int cut, const char *what, err_t *err) {
  if (bad_end > r->size) bad_end = r->size;
  if (cut ||
      (!(r->flags & LOG_READER_LIVE) && all_zero(at_offset(r, bad_end), r->size - bad_end))) {
    r->cut_at = bad_at;
    r->has_cut = cut;
    r->at_end = 1;
    r->dropped = r->size - start;
    r->pos = r->size;
    return ST_NOT_FOUND;
  }
  err_set(&r->status, ST_E_CORRUPT, "%s %s: record at %zu: %s", r->kind, r->path, bad_at, what);
  r->bad_at = start;
  r->fallback = (bad_at / LOG_BLOCK_BYTES + 1) * (size_t)LOG_BLOCK_BYTES;
  r->resume = resume == RESUME_BLOCK ? r->fallback : bad_end;
  r->resume_check = resume == RESUME_GUESS;
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
      /* Live: a trailer not all written yet ends the read before it. */
      if ((r->flags & LOG_READER_LIVE) && block_left > r->size - r->pos) {
        if (!in_frag) start = r->pos;
        r->at_end = 1;
        r->dropped = r->size - start;
        r->pos = r->size;
        return ST_NOT_FOUND;
      }
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
      return bad_record(r, start, at, r->size, RESUME_EXACT, 1, "truncated header", err);
    const uint8_t *h = at_offset(r, at);
    uint32_t len = (uint32_t)h[4] | ((uint32_t)h[5] << 8);
    int type = h[6];
    size_t block_left2 = LOG_BLOCK_BYTES - at % LOG_BLOCK_BYTES;
    size_t hlen = LOG_HEADER_BYTES; /* RocksDB's recyclable records: 4 bytes of log number more */
    if (is_recyclable(r, type)) {
      hlen = LOG_RECYCLABLE_HEADER_BYTES;
      if (at == 0) r->recycled = 1;
      if (hlen > block_left2)
        return bad_record(r, start, at, at + block_left2, RESUME_BLOCK, 0, "bad header", err);
      if (r->size - at < hlen)
        return bad_record(r, start, at, r->size, RESUME_EXACT, 1, "truncated header", err);
      if (decode_fixed32(h + LOG_HEADER_BYTES) != r->log_number) { /* an older log's record */
        r->old_record = 1;
        r->at_end = 1;
        r->dropped = r->size - start;
        r->pos = r->size;
        return ST_NOT_FOUND;
      }
    }
    if (hlen + len > block_left2)
      return bad_record(r, start, at, at + block_left2, RESUME_BLOCK, 0, "bad length", err);
    size_t end = at + hlen + len;
    if (end > r->size)
      return bad_record(r, start, at, r->size, RESUME_EXACT, 1, "truncated record", err);
    if ((r->flags & LOG_READER_LIVE) && type == LOG_ZERO && len == 0) { /* preallocation */
      r->pos = end;
      continue;
    }
    uint32_t want = crc32c_unmask(decode_fixed32(h));
    uint32_t got = crc32c_value(h + 6, hlen - 6 + (size_t)len);
    if (type == LOG_ZERO || (type > LOG_LAST && !is_recyclable(r, type)))
      return bad_record(r, start, at, end, RESUME_GUESS, 0, "bad record type", err);
    if (want != got)
      return bad_record(r, start, at, end, RESUME_GUESS, 0, "checksum mismatch", err);
    if (hlen == LOG_RECYCLABLE_HEADER_BYTES) type -= LOG_RECYCLABLE_FULL - LOG_FULL;
    const uint8_t *payload = h + hlen;
    r->pos = end;
    switch (type) {
      case LOG_FULL:
        if (in_frag) /* the fragmented record before it lost its LAST: drop it, keep this */
          return bad_record(r, start, start, at, RESUME_EXACT, 0,
                            "fragmented record without a LAST", err);
        r->record_offset = at;
        *data = payload;
        *n = len;
        return ST_OK;
      case LOG_FIRST:
        if (in_frag)
          return bad_record(r, start, start, at, RESUME_EXACT, 0,
                            "fragmented record without a LAST", err);
        in_frag = 1;
        r->scratch_len = 0;
        break;
      default: /* MIDDLE, LAST */
        if (!in_frag)
          return bad_record(r, start, at, end, RESUME_EXACT, 0, "fragment without a FIRST", err);
        break;
    }
    if (scratch_append(r, payload, len) != 0) {
      err_set(&r->status, ST_E_NOMEM, "%s %s: out of memory", r->kind, r->path);
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

/* The physical record at pos, if it checks out: 1 and its type and end. A block's zero
   trailer is not a record (0). */
static int record_ok(const log_reader_t *r, size_t pos, int *type, size_t *end) {
  size_t block_left = LOG_BLOCK_BYTES - pos % LOG_BLOCK_BYTES;
  if (block_left < LOG_HEADER_BYTES || r->size - pos < LOG_HEADER_BYTES) return 0;
  const uint8_t *h = at_offset(r, pos);
  size_t len = (size_t)h[4] | ((size_t)h[5] << 8);
  size_t hlen = is_recyclable(r, h[6]) ? LOG_RECYCLABLE_HEADER_BYTES : LOG_HEADER_BYTES;
  if (hlen + len > block_left || pos + hlen + len > r->size) return 0;
  if (h[6] == LOG_ZERO || (h[6] > LOG_LAST && !is_recyclable(r, h[6]))) return 0;
  if (hlen > LOG_HEADER_BYTES && decode_fixed32(h + LOG_HEADER_BYTES) != r->log_number) return 0;
  if (crc32c_unmask(decode_fixed32(h)) != crc32c_value(h + 6, hlen - 6 + len)) return 0;
  *type = hlen > LOG_HEADER_BYTES ? h[6] - (LOG_RECYCLABLE_FULL - LOG_FULL) : h[6];
  *end = pos + hlen + len;
  return 1;
}

/* pos, or the start of the next block if pos is in a block's zero trailer. */
static size_t past_trailer(size_t pos) {
  size_t block_left = LOG_BLOCK_BYTES - pos % LOG_BLOCK_BYTES;
  return block_left < LOG_HEADER_BYTES ? pos + block_left : pos;
}

uint64_t log_reader_skip_damage(log_reader_t *r) {
  if (r->status.code != ST_E_CORRUPT) return 0;
  size_t pos = past_trailer(r->resume), end;
  int type;
  /* A damaged record's length is trusted only if a valid record starts where it ends (a
     checksum over a false start matches by chance once in 2^32); a block boundary is always
     a record boundary. */
  if (r->resume_check && pos % LOG_BLOCK_BYTES != 0 && pos < r->size &&
      !record_ok(r, pos, &type, &end))
    pos = r->fallback;
  /* The MIDDLE and LAST fragments of a record whose start was lost belong to the damage
     (LevelDB's reader resynchronises the same way): skip them, stop at a FULL or FIRST
     record, or at anything that does not check out (damage of its own, reported next). */
  for (;;) {
    pos = past_trailer(pos);
    if (pos >= r->size || !record_ok(r, pos, &type, &end)) break;
    if (type == LOG_FULL || type == LOG_FIRST) break;
    pos = end;
  }
  if (pos > r->size) pos = r->size;
  uint64_t skipped = pos - r->bad_at;
  r->pos = pos;
  err_clear(&r->status);
  return skipped;
}

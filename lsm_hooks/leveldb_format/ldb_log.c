/* ldb_log: see leveldb_format/ldb_log.h for the byte layout. */
#include "lsm_hooks/leveldb_format/ldb_log.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bfh.h"
#include "lsm/log.h"
#include "lsm/table_hook.h"
#include "lsm/write_batch.h"
#include "util/coding.h"
#include "util/crc32c.h"

_Static_assert(LDB_TYPE_VALUE == LSM_TYPE_VALUE && LDB_TYPE_DELETION == LSM_TYPE_DELETION,
               "LevelDB's value types are the own engine's");

typedef struct batch_visit {
  ldb_visit_fn fn;
  void *arg;
  ldb_read_stats_t *st;
  int stopped;
} batch_visit_t;

static int visit_entry(void *arg, uint64_t seq, int type, const void *key, size_t klen,
                       const void *val, size_t vlen) {
  batch_visit_t *v = arg;
  ldb_entry_t e = {.key = key,
                   .key_len = klen,
                   .val = val ? val : (const uint8_t *)"",
                   .val_len = vlen,
                   .seq = seq,
                   .type = type};
  if (v->st) v->st->entries++;
  return v->stopped = v->fn(v->arg, &e) != 0;
}

/* LevelDB's write batch is the own engine's (lsm/write_batch.h), byte for byte. */
int ldb_log_decode_batch(const uint8_t *p, size_t n, const char *where, ldb_visit_fn fn, void *arg,
                         int *stopped, ldb_read_stats_t *st, err_t *err) {
  batch_visit_t v = {fn, arg, st, 0};
  int rc = write_batch_iterate(p, n, visit_entry, &v, err);
  *stopped = v.stopped;
  if (v.stopped) return BFH_OK;
  return rc == BFH_OK ? BFH_OK : err_prefix(err, "%s: ", where);
}

/* A record cut short by the end of the file at h (avail bytes from the header on, at most the
   rest of its block): is it a record whose length field was damaged rather than a write in
   flight? It is when the checksum in its header matches the type byte and some prefix of the
   bytes that follow (the record that was written there, shorter than its length says). A
   write in flight matches no prefix except by chance (2^-32 per length tried). */
int ldb_log_tail_length_damaged(const uint8_t *h, size_t avail) {
  if (avail < LOG_HEADER_BYTES) return 0;
  uint32_t want = crc32c_unmask(decode_fixed32(h));
  uint32_t c = crc32c_value(&h[6], 1);
  if (c == want) return 1;
  for (size_t i = LOG_HEADER_BYTES; i < avail; i++) {
    c = crc32c_extend(c, &h[i], 1);
    if (c == want) return 1;
  }
  return 0;
}

/* The framing (blocks, fragments, checksums) is the own engine's log reader's (lsm/log.h), in
   its LOG_READER_LIVE mode: LevelDB's writer may be appending while the file is read. */
int ldb_log_records(env_t *io, const char *path, const char *kind, uint64_t offset, int flags,
                    ldb_record_fn fn, void *arg, uint64_t *next_offset, ldb_read_stats_t *st,
                    err_t *err) {
  if (next_offset) *next_offset = offset;
  if (!env_exists(io, path)) return err_set(err, BFH_NOT_FOUND, "%s %s: no such file", kind, path);
  log_reader_t *r = NULL;
  int rc = log_reader_open_at(io, path, kind, offset, LOG_READER_LIVE, &r, err);
  if (rc != BFH_OK) {
    if (rc != BFH_E_NOMEM && !env_exists(io, path))
      return err_set(err, BFH_NOT_FOUND, "%s %s: no such file", kind, path);
    return rc == BFH_E_NOMEM ? rc : err_prefix(err, "%s %s: ", kind, path);
  }
  if (st) st->bytes_read += log_reader_bytes_read(r);
  for (;;) {
    const void *p;
    size_t n;
    rc = log_reader_next(r, &p, &n, err);
    if (rc == BFH_NOT_FOUND) { /* the end, or a record not all written yet */
      rc = BFH_OK;
      if (next_offset) *next_offset = log_reader_end_offset(r);
      uint64_t at;
      const uint8_t *h;
      size_t avail;
      if ((flags & LDB_LOG_CHECK_TAIL) && log_reader_cut_record(r, &at, &h, &avail) &&
          ldb_log_tail_length_damaged(h, avail))
        rc = err_set(err, BFH_E_CORRUPT,
                     "%s %s: record at %llu: length %u runs past the end of the file, but the "
                     "checksum matches a shorter record (damaged length)",
                     kind, path, (unsigned long long)at, (unsigned)h[4] | ((unsigned)h[5] << 8));
      break;
    }
    if (rc != BFH_OK) break;
    if (st) st->blocks++;
    int stopped = 0;
    rc = fn(arg, p, n, log_reader_record_offset(r), &stopped, err);
    if (rc != BFH_OK) break;
    if (next_offset) *next_offset = log_reader_end_offset(r);
    if (stopped) break;
  }
  log_reader_close(r);
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
  char where[ERR_MSG_BYTES]; /* only a message's prefix: err_t holds no more */
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

/* rdb_log: see rocksdb_format/rdb_log.h for the byte layout. */
#include "lsm_hooks/rocksdb_format/rdb_log.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bfh.h"
#include "lsm/log.h"
#include "lsm_hooks/leveldb_format/ldb_log.h"
#include "util/coding.h"

#define WB_HEADER_BYTES 12    /* sequence fixed64 | count fixed32 */
#define LOG_SET_COMPRESSION 9 /* kSetCompressionType: the first record of a compressed WAL */

int rdb_log_tag_is_key(int tag) {
  switch (tag) {
    case RDB_WB_DELETION:
    case RDB_WB_VALUE:
    case RDB_WB_MERGE:
    case RDB_WB_CF_DELETION:
    case RDB_WB_CF_VALUE:
    case RDB_WB_CF_MERGE:
    case RDB_WB_SINGLE_DELETION:
    case RDB_WB_CF_SINGLE_DELETION:
    case RDB_WB_CF_RANGE_DELETION:
    case RDB_WB_RANGE_DELETION:
    case RDB_WB_CF_BLOB_INDEX:
    case RDB_WB_BLOB_INDEX:
    case RDB_WB_WIDE_COLUMN_ENTITY:
    case RDB_WB_CF_WIDE_COLUMN_ENTITY:
      return 1;
    case RDB_WB_LOG_DATA:
    case RDB_WB_BEGIN_PREPARE:
    case RDB_WB_END_PREPARE:
    case RDB_WB_COMMIT:
    case RDB_WB_ROLLBACK:
    case RDB_WB_NOOP:
    case RDB_WB_BEGIN_PERSISTED_PREPARE:
    case RDB_WB_BEGIN_UNPREPARE:
    case RDB_WB_COMMIT_WITH_TS:
      return 0;
    default:
      return -1;
  }
}

const char *rdb_log_tag_name(int tag) {
  switch (tag) {
    case RDB_WB_DELETION:
      return "deletion";
    case RDB_WB_VALUE:
      return "value";
    case RDB_WB_MERGE:
      return "merge";
    case RDB_WB_LOG_DATA:
      return "log data";
    case RDB_WB_CF_DELETION:
      return "column family deletion";
    case RDB_WB_CF_VALUE:
      return "column family value";
    case RDB_WB_CF_MERGE:
      return "column family merge";
    case RDB_WB_SINGLE_DELETION:
      return "single deletion";
    case RDB_WB_CF_SINGLE_DELETION:
      return "column family single deletion";
    case RDB_WB_BEGIN_PREPARE:
      return "begin prepare (2PC)";
    case RDB_WB_END_PREPARE:
      return "end prepare (2PC)";
    case RDB_WB_COMMIT:
      return "commit (2PC)";
    case RDB_WB_ROLLBACK:
      return "rollback (2PC)";
    case RDB_WB_NOOP:
      return "noop";
    case RDB_WB_CF_RANGE_DELETION:
      return "column family range deletion";
    case RDB_WB_RANGE_DELETION:
      return "range deletion";
    case RDB_WB_CF_BLOB_INDEX:
      return "column family blob index";
    case RDB_WB_BLOB_INDEX:
      return "blob index";
    case RDB_WB_BEGIN_PERSISTED_PREPARE:
      return "begin persisted prepare (2PC)";
    case RDB_WB_BEGIN_UNPREPARE:
      return "begin unprepare (2PC)";
    case RDB_WB_COMMIT_WITH_TS:
      return "commit with timestamp (2PC)";
    case RDB_WB_WIDE_COLUMN_ENTITY:
      return "wide-column entity";
    case RDB_WB_CF_WIDE_COLUMN_ENTITY:
      return "column family wide-column entity";
    default:
      return "unknown";
  }
}

int rdb_log_number_from_name(const char *name, uint64_t *number) {
  size_t len = strlen(name);
  if (len < 5 || len > 24 || strcmp(name + len - 4, ".log") != 0) return 0;
  uint64_t v = 0;
  for (size_t i = 0; i < len - 4; i++) {
    if (name[i] < '0' || name[i] > '9') return 0;
    if (v > (UINT64_MAX - 9) / 10) return 0;
    v = v * 10 + (uint64_t)(name[i] - '0');
  }
  *number = v;
  return 1;
}

/* A varstring at *p (< limit): 1 with its bytes, 0 if cut short. */
static int get_varstring(const uint8_t **p, const uint8_t *limit, const uint8_t **s, size_t *n) {
  uint32_t len;
  const uint8_t *q = decode_varint32(*p, limit, &len);
  if (!q || (size_t)(limit - q) < len) return 0;
  *s = q;
  *n = len;
  *p = q + len;
  return 1;
}

/* The plain tag of a column-family variant (the tag itself otherwise). */
static int plain_tag(int tag) {
  switch (tag) {
    case RDB_WB_CF_DELETION:
      return RDB_WB_DELETION;
    case RDB_WB_CF_VALUE:
      return RDB_WB_VALUE;
    case RDB_WB_CF_MERGE:
      return RDB_WB_MERGE;
    case RDB_WB_CF_SINGLE_DELETION:
      return RDB_WB_SINGLE_DELETION;
    case RDB_WB_CF_RANGE_DELETION:
      return RDB_WB_RANGE_DELETION;
    case RDB_WB_CF_BLOB_INDEX:
      return RDB_WB_BLOB_INDEX;
    case RDB_WB_CF_WIDE_COLUMN_ENTITY:
      return RDB_WB_WIDE_COLUMN_ENTITY;
    default:
      return tag;
  }
}

int rdb_log_decode_batch(const uint8_t *p, size_t n, uint64_t log_number, uint64_t at,
                         const char *where, rdb_log_visit_fn fn, void *arg, int *stopped,
                         rdb_log_stats_t *st, err_t *err) {
  *stopped = 0;
  if (n < WB_HEADER_BYTES)
    return err_set(err, BFH_E_CORRUPT, "%s: write batch of %zu bytes, shorter than its header",
                   where, n);
  uint64_t seq = decode_fixed64(p);
  uint32_t count = decode_fixed32(p + 8);
  const uint8_t *q = p + WB_HEADER_BYTES, *limit = p + n;
  uint32_t found = 0;
  if (st) st->records++;
  while (q < limit) {
    size_t off = (size_t)(q - p);
    int tag = *q++;
    int kind = rdb_log_tag_is_key(tag);
    if (kind < 0)
      return err_set(err, BFH_E_CORRUPT, "%s: write batch byte %zu: unknown tag 0x%x", where, off,
                     (unsigned)tag);
    rdb_log_entry_t e = {.type = plain_tag(tag),
                         .tag = tag,
                         .seq = seq + found,
                         .key = (const uint8_t *)"",
                         .val = (const uint8_t *)"",
                         .log_number = log_number,
                         .record_offset = at};
    int ok = 1;
    if (e.type != tag && !(q = decode_varint32(q, limit, &e.cf))) goto cut;
    switch (e.type) {
      case RDB_WB_VALUE:
      case RDB_WB_MERGE:
      case RDB_WB_RANGE_DELETION:
      case RDB_WB_BLOB_INDEX:
      case RDB_WB_WIDE_COLUMN_ENTITY:
        ok = get_varstring(&q, limit, &e.key, &e.key_len) &&
             get_varstring(&q, limit, &e.val, &e.val_len);
        break;
      case RDB_WB_DELETION:
      case RDB_WB_SINGLE_DELETION:
        ok = get_varstring(&q, limit, &e.key, &e.key_len);
        break;
      case RDB_WB_LOG_DATA:
      case RDB_WB_END_PREPARE:
      case RDB_WB_COMMIT:
      case RDB_WB_ROLLBACK:
        ok = get_varstring(&q, limit, &e.val, &e.val_len);
        break;
      case RDB_WB_COMMIT_WITH_TS:
        ok = get_varstring(&q, limit, &e.key, &e.key_len) &&
             get_varstring(&q, limit, &e.val, &e.val_len);
        break;
      default: /* NOOP, BEGIN_*: no fields */
        break;
    }
    if (!ok) goto cut;
    if (kind == 1) found++;
    if (st) st->entries++;
    if (fn(arg, &e) != 0) {
      *stopped = 1;
      return BFH_OK;
    }
    continue;
  cut:
    return err_set(err, BFH_E_CORRUPT, "%s: write batch byte %zu: %s record cut short", where, off,
                   rdb_log_tag_name(tag));
  }
  if (found != count)
    return err_set(err, BFH_E_CORRUPT, "%s: write batch has %u records, its header says %u", where,
                   (unsigned)found, (unsigned)count);
  return BFH_OK;
}

/* The first bytes of the file at path: *n of them (up to cap) in buf. */
static int read_head(env_t *io, const char *path, uint8_t *buf, size_t cap, size_t *n, err_t *err) {
  env_rfile_t *f = NULL;
  *n = 0;
  int rc = env_open_read(io, path, &f, err);
  if (rc != BFH_OK) return rc;
  rc = env_rfile_pread(f, 0, buf, cap, n, err);
  env_rfile_close(f);
  return rc;
}

/* The framing is the own engine's log reader's (lsm/log.h) in its LOG_READER_LIVE mode (RocksDB
   may be appending while the file is read), with RocksDB's recyclable records. */
int rdb_log_records(env_t *io, const char *path, const char *kind, uint64_t log_number,
                    uint64_t offset, int flags, rdb_record_fn fn, void *arg, uint64_t *next_offset,
                    rdb_log_stats_t *st, err_t *err) {
  if (next_offset) *next_offset = offset;
  if (!env_exists(io, path)) return err_set(err, BFH_NOT_FOUND, "%s %s: no such file", kind, path);
  /* The first record says whether the log is compressed (refused) or recycled (it may end in a
     previous life's bytes), also when the read resumes further on. */
  uint8_t head[LOG_RECYCLABLE_HEADER_BYTES];
  size_t hn;
  int rc = read_head(io, path, head, sizeof head, &hn, err);
  if (rc != BFH_OK) {
    if (rc != BFH_E_NOMEM && !env_exists(io, path))
      return err_set(err, BFH_NOT_FOUND, "%s %s: no such file", kind, path);
    return err_prefix(err, "%s %s: ", kind, path);
  }
  if (hn >= LOG_HEADER_BYTES && head[6] == LOG_SET_COMPRESSION)
    return err_set(err, BFH_E_UNSUPPORTED,
                   "%s %s: a compressed write-ahead log (RocksDB's wal_compression) is not "
                   "supported",
                   kind, path);
  int recycled = hn >= LOG_RECYCLABLE_HEADER_BYTES && head[6] >= LOG_RECYCLABLE_FULL &&
                 head[6] <= LOG_RECYCLABLE_LAST &&
                 decode_fixed32(head + LOG_HEADER_BYTES) == (uint32_t)log_number;
  log_reader_t *r = NULL;
  rc = log_reader_open_at(io, path, kind, offset, LOG_READER_LIVE | LOG_READER_RECYCLABLE, &r, err);
  if (rc != BFH_OK) {
    if (rc != BFH_E_NOMEM && !env_exists(io, path))
      return err_set(err, BFH_NOT_FOUND, "%s %s: no such file", kind, path);
    return rc == BFH_E_NOMEM ? rc : err_prefix(err, "%s %s: ", kind, path);
  }
  log_reader_set_log_number(r, (uint32_t)log_number); /* RocksDB writes its low 32 bits */
  uint64_t size = offset + log_reader_bytes_read(r);
  if (st) st->bytes_read += log_reader_bytes_read(r);
  uint64_t live_end = offset; /* end of the last complete record */
  for (;;) {
    const void *p;
    size_t n;
    rc = log_reader_next(r, &p, &n, err);
    if (rc == BFH_NOT_FOUND) { /* the end, a write in flight, or an older log's record */
      rc = BFH_OK;
      live_end = log_reader_end_offset(r);
      uint64_t at;
      const uint8_t *h;
      size_t avail;
      if (log_reader_old_record(r) || recycled) { /* what follows is an older log's */
        if (st) st->old_bytes += size - live_end;
      } else if ((flags & RDB_LOG_CHECK_TAIL) && log_reader_cut_record(r, &at, &h, &avail) &&
                 ldb_log_tail_length_damaged(h, avail)) {
        rc = err_set(err, BFH_E_CORRUPT,
                     "%s %s: record at %llu: length %u runs past the end of the file, but the "
                     "checksum matches a shorter record (damaged length)",
                     kind, path, (unsigned long long)at, (unsigned)h[4] | ((unsigned)h[5] << 8));
      }
      break;
    }
    if (rc == BFH_E_CORRUPT && recycled) {
      /* In a recycled log, the bytes after the live end are an older log's: the live log ends
         at the damage unless a record of this log follows it (then the damage is real). */
      err_t first = *err;
      int real = 0;
      for (int guard = 0; guard < 1 << 20; guard++) {
        log_reader_skip_damage(r);
        const void *p2;
        size_t n2;
        int rc2 = log_reader_next(r, &p2, &n2, err);
        if (rc2 == BFH_OK) real = 1;
        if (rc2 != BFH_E_CORRUPT) break;
      }
      if (real) {
        *err = first;
        break;
      }
      rc = BFH_OK;
      if (st) st->old_bytes += size - live_end;
      break;
    }
    if (rc != BFH_OK) break;
    int stopped = 0;
    rc = fn(arg, p, n, log_reader_record_offset(r), &stopped, err);
    if (rc != BFH_OK) break;
    live_end = log_reader_end_offset(r);
    if (stopped) break;
  }
  if (next_offset) *next_offset = live_end;
  log_reader_close(r);
  return rc;
}

typedef struct batch_reader {
  const char *path;
  uint64_t log_number;
  rdb_log_visit_fn fn;
  void *arg;
  rdb_log_stats_t *st;
} batch_reader_t;

static int visit_batch(void *arg, const uint8_t *p, size_t n, uint64_t at, int *stopped,
                       err_t *err) {
  batch_reader_t *b = arg;
  char where[ERR_MSG_BYTES]; /* only a message's prefix: err_t holds no more */
  snprintf(where, sizeof where, "log %s: record at %llu", b->path, (unsigned long long)at);
  return rdb_log_decode_batch(p, n, b->log_number, at, where, b->fn, b->arg, stopped, b->st, err);
}

int rdb_log_read(env_t *io, const char *path, uint64_t log_number, uint64_t offset, int flags,
                 rdb_log_visit_fn fn, void *arg, uint64_t *next_offset, rdb_log_stats_t *st,
                 err_t *err) {
  batch_reader_t b = {path, log_number, fn, arg, st};
  return rdb_log_records(io, path, "log", log_number, offset, flags, visit_batch, &b, next_offset,
                         st, err);
}

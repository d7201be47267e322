/* ldb_table: see leveldb/table.h for the byte layout. */
#include "lsm_hooks/leveldb/table.h"

#include <snappy-c.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bfh.h"
#include "util/coding.h"
#include "util/crc32c.h"

/* A block bigger than this after decompression is taken as damage (LevelDB blocks are
   ~4 KiB; one holding a single maximal value is ~64 MiB). */
#define MAX_BLOCK_BYTES (256u << 20)

typedef struct buf {
  uint8_t *p;
  size_t cap;
} buf_t;

typedef struct reader {
  const char *path;
  const uint8_t *file; /* whole file */
  uint64_t size;
  uint64_t blocks_end; /* blocks and trailers lie in [0, blocks_end) */
  buf_t index_buf;     /* decompressed index block */
  buf_t data_buf;      /* decompressed data block */
  buf_t key;           /* current data key */
  ldb_visit_fn fn;
  void *arg;
  ldb_read_stats_t *st;
  int stopped;
  err_t *err;
} reader_t;

static int buf_reserve(buf_t *b, size_t n) {
  if (n <= b->cap) return BFH_OK;
  size_t c = b->cap ? b->cap : 4096;
  while (c < n) c *= 2;
  uint8_t *p = realloc(b->p, c);
  if (!p) return BFH_E_NOMEM;
  b->p = p;
  b->cap = c;
  return BFH_OK;
}

/* Reads the whole file at path into *data (malloc'd, caller frees), through io. */
static int read_file(lsm_io_t *io, const char *path, uint8_t **data, uint64_t *size, err_t *err) {
  lsm_rfile_t *f = NULL;
  int rc = lsm_io_open_read(io, path, &f, err);
  if (rc != BFH_OK) {
    if (rc != BFH_E_NOMEM && !lsm_io_exists(io, path))
      return err_set(err, BFH_NOT_FOUND, "table %s: no such file", path);
    return err_prefix(err, "table %s: ", path);
  }
  uint64_t n = lsm_rfile_size(f);
  uint8_t *p = malloc(n ? n : 1);
  if (!p) {
    lsm_rfile_close(f);
    return err_set(err, BFH_E_NOMEM, "table %s: no memory for %llu bytes", path,
                   (unsigned long long)n);
  }
  uint64_t got = 0;
  while (got < n) {
    size_t want = n - got > (1u << 30) ? (1u << 30) : (size_t)(n - got), r = 0;
    rc = lsm_rfile_pread(f, got, p + got, want, &r, err);
    if (rc != BFH_OK) {
      free(p);
      lsm_rfile_close(f);
      return err_prefix(err, "table %s: ", path);
    }
    if (r == 0) {
      free(p);
      lsm_rfile_close(f);
      return err_set(err, BFH_E_CORRUPT, "table %s: file shrank to %llu bytes while read", path,
                     (unsigned long long)got);
    }
    got += (uint64_t)r;
  }
  lsm_rfile_close(f);
  *data = p;
  *size = n;
  return BFH_OK;
}

static int corrupt(reader_t *r, uint64_t off, const char *what) {
  return err_set(r->err, BFH_E_CORRUPT, "table %s: block at %llu: %s", r->path,
                 (unsigned long long)off, what);
}

/* Checks the trailer of the block at [off, off+n) and returns its contents in *out and *out_len
   (pointing into the file or into b after decompression). */
static int read_block(reader_t *r, uint64_t off, uint64_t n, buf_t *b, const uint8_t **out,
                      size_t *out_len) {
  if (off > r->blocks_end || n > r->blocks_end - off ||
      LDB_BLOCK_TRAILER_BYTES > r->blocks_end - off - n)
    return corrupt(r, off, "handle points past the end of the file");
  const uint8_t *p = r->file + off;
  uint8_t type = p[n];
  uint32_t want = crc32c_unmask(decode_fixed32(p + n + 1));
  uint32_t got = crc32c_extend(crc32c_value(p, (size_t)n), &type, 1);
  if (want != got) return corrupt(r, off, "checksum mismatch");
  if (type == 0) {
    *out = p;
    *out_len = (size_t)n;
    return BFH_OK;
  }
  if (type != 1) return corrupt(r, off, "unknown compression type");
  size_t ulen;
  if (snappy_uncompressed_length((const char *)p, (size_t)n, &ulen) != SNAPPY_OK ||
      ulen > MAX_BLOCK_BYTES)
    return corrupt(r, off, "bad snappy length");
  if (buf_reserve(b, ulen ? ulen : 1) != BFH_OK)
    return err_set(r->err, BFH_E_NOMEM, "table %s: block at %llu: no memory", r->path,
                   (unsigned long long)off);
  size_t outn = b->cap;
  if (snappy_uncompress((const char *)p, (size_t)n, (char *)b->p, &outn) != SNAPPY_OK ||
      outn != ulen)
    return corrupt(r, off, "snappy data does not decompress");
  *out = b->p;
  *out_len = ulen;
  return BFH_OK;
}

/* Walks the entries of one block. For the index block (data == 0) every value is a block
   handle whose data block is walked in turn; for a data block every entry goes to fn. */
static int walk_block(reader_t *r, uint64_t off, const uint8_t *b, size_t len, int data) {
  char what[96];
  if (len < 4) return corrupt(r, off, "block shorter than its restart count");
  uint32_t nrestarts = decode_fixed32(b + len - 4);
  if (nrestarts > (len - 4) / 4) return corrupt(r, off, "restart count exceeds the block");
  size_t limit = len - 4 - 4 * (size_t)nrestarts;
  uint32_t prev_restart = 0;
  for (uint32_t i = 0; i < nrestarts; i++) {
    uint32_t rs = decode_fixed32(b + limit + 4 * (size_t)i);
    if ((rs >= limit && !(rs == 0 && limit == 0)) || rs < prev_restart) {
      snprintf(what, sizeof what, "restart point %u (%u) out of order or range", i, rs);
      return corrupt(r, off, what);
    }
    prev_restart = rs;
  }
  const uint8_t *p = b, *end = b + limit;
  size_t key_len = 0;
  while (p < end) {
    size_t at = (size_t)(p - b);
    uint32_t shared, non_shared, vlen;
    p = decode_varint32(p, end, &shared);
    if (p) p = decode_varint32(p, end, &non_shared);
    if (p) p = decode_varint32(p, end, &vlen);
    if (!p || shared > key_len || non_shared > (size_t)(end - p) ||
        vlen > (size_t)(end - p) - non_shared) {
      snprintf(what, sizeof what, "entry at +%zu: bad lengths", at);
      return corrupt(r, off, what);
    }
    const uint8_t *kdelta = p, *val = p + non_shared;
    p = val + vlen;
    if (!data) {
      key_len = (size_t)shared + non_shared;
      uint64_t boff, bsize;
      const uint8_t *q = decode_varint64(val, val + vlen, &boff);
      if (q) q = decode_varint64(q, val + vlen, &bsize);
      if (!q) {
        snprintf(what, sizeof what, "index entry at +%zu: bad block handle", at);
        return corrupt(r, off, what);
      }
      const uint8_t *db;
      size_t dlen;
      int rc = read_block(r, boff, bsize, &r->data_buf, &db, &dlen);
      if (rc == BFH_OK) rc = walk_block(r, boff, db, dlen, 1);
      if (rc != BFH_OK || r->stopped) return rc;
      if (r->st) r->st->blocks++;
      continue;
    }
    if (buf_reserve(&r->key, (size_t)shared + non_shared) != BFH_OK)
      return err_set(r->err, BFH_E_NOMEM, "table %s: no memory for a key", r->path);
    if (non_shared) memcpy(r->key.p + shared, kdelta, non_shared); /* key.p may be NULL */
    key_len = (size_t)shared + non_shared;
    if (key_len < 8) {
      snprintf(what, sizeof what, "entry at +%zu: internal key shorter than 8 bytes", at);
      return corrupt(r, off, what);
    }
    uint64_t tag = decode_fixed64(r->key.p + key_len - 8);
    ldb_entry_t e = {.key = r->key.p,
                     .key_len = key_len - 8,
                     .val = val,
                     .val_len = vlen,
                     .seq = tag >> 8,
                     .type = (int)(tag & 0xff)};
    if (e.type != LDB_TYPE_VALUE && e.type != LDB_TYPE_DELETION) {
      snprintf(what, sizeof what, "entry at +%zu: unknown value type %d", at, e.type);
      return corrupt(r, off, what);
    }
    if (r->st) r->st->entries++;
    if (r->fn(r->arg, &e)) {
      r->stopped = 1;
      return BFH_OK;
    }
  }
  return BFH_OK;
}

int ldb_table_scan(lsm_io_t *io, const char *path, ldb_visit_fn fn, void *arg, ldb_read_stats_t *st,
                   err_t *err) {
  uint8_t *file = NULL;
  uint64_t size = 0;
  int rc = read_file(io, path, &file, &size, err);
  if (rc != BFH_OK) return rc;
  if (st) st->bytes_read += size;
  reader_t r = {
      .path = path, .file = file, .size = size, .fn = fn, .arg = arg, .st = st, .err = err};
  if (size < LDB_FOOTER_BYTES) {
    rc = err_set(err, BFH_E_CORRUPT, "table %s: file of %llu bytes is too short for a footer", path,
                 (unsigned long long)size);
    goto out;
  }
  const uint8_t *footer = file + size - LDB_FOOTER_BYTES;
  if (decode_fixed64(footer + 40) != LDB_TABLE_MAGIC) {
    rc = err_set(err, BFH_E_CORRUPT, "table %s: footer at %llu: bad magic number", path,
                 (unsigned long long)(size - LDB_FOOTER_BYTES));
    goto out;
  }
  uint64_t h[4];
  const uint8_t *q = footer;
  for (int i = 0; i < 4 && q; i++) q = decode_varint64(q, footer + 40, &h[i]);
  if (!q) {
    rc = err_set(err, BFH_E_CORRUPT, "table %s: footer at %llu: bad block handles", path,
                 (unsigned long long)(size - LDB_FOOTER_BYTES));
    goto out;
  }
  r.blocks_end = size - LDB_FOOTER_BYTES;
  const uint8_t *ib;
  size_t ilen;
  rc = read_block(&r, h[2], h[3], &r.index_buf, &ib, &ilen);
  if (rc == BFH_OK) rc = walk_block(&r, h[2], ib, ilen, 0);
out:
  free(r.index_buf.p);
  free(r.data_buf.p);
  free(r.key.p);
  free(file);
  return rc;
}

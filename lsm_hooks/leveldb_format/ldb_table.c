/* ldb_table: see leveldb_format/ldb_table.h for the byte layout. */
#include "lsm_hooks/leveldb_format/ldb_table.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bfh.h"
#include "filters/hash.h"
#include "lsm/block.h"
#include "lsm/block_cache.h"
#include "lsm/internal_key.h"
#include "util/coding.h"
#include "util/snappy_api.h"

_Static_assert(LDB_TYPE_VALUE == LSM_TYPE_VALUE && LDB_TYPE_DELETION == LSM_TYPE_DELETION,
               "LevelDB's value types are the own engine's");

/* A block bigger than this after decompression is taken as damage (LevelDB blocks are
   ~4 KiB; one holding a single maximal value is ~64 MiB). */
#define MAX_BLOCK_BYTES (256u << 20)

typedef struct buf {
  uint8_t *p;
  size_t cap;
} buf_t;

typedef struct reader {
  const char *path;
  const uint8_t *file; /* whole file (NULL when single blocks are read) */
  uint64_t size;
  uint64_t blocks_end; /* blocks and trailers lie in [0, blocks_end) */
  buf_t index_buf;     /* decompressed index block */
  buf_t data_buf;      /* decompressed data block */
  ldb_visit_fn fn;
  ldb_block_fn block_fn; /* NULL: block ends not reported */
  void *arg;
  ldb_read_stats_t *st;
  int stopped;
  err_t *err;
  const block_needle_t *nd; /* a data block's entries are visited only when their value */
  size_t nn;                /* holds one of these (nn 0: every entry) */
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

/* Opens the table at path through io: BFH_NOT_FOUND if it does not exist. */
static int open_table(env_t *io, const char *path, env_rfile_t **f, err_t *err) {
  int rc = env_open_read(io, path, f, err);
  if (rc == BFH_OK) return BFH_OK;
  if (rc != BFH_E_NOMEM && !env_exists(io, path))
    return err_set(err, BFH_NOT_FOUND, "table %s: no such file", path);
  return err_prefix(err, "table %s: ", path);
}

/* Reads exactly n bytes at off into p: a file that ends before is one that shrank under the
   reader (its size was taken at open), which is damage. */
static int read_at(env_rfile_t *f, const char *path, uint64_t off, uint8_t *p, uint64_t n,
                   err_t *err) {
  uint64_t got = 0;
  while (got < n) {
    size_t want = n - got > (1u << 30) ? (1u << 30) : (size_t)(n - got), r = 0;
    int rc = env_rfile_pread(f, off + got, p + got, want, &r, err);
    if (rc != BFH_OK) return err_prefix(err, "table %s: ", path);
    if (r == 0)
      return err_set(err, BFH_E_CORRUPT, "table %s: file shrank to %llu bytes while read", path,
                     (unsigned long long)(off + got));
    got += (uint64_t)r;
  }
  return BFH_OK;
}

/* Reads the whole of the open table f (named path) into *data (malloc'd, caller frees). */
static int read_file(env_rfile_t *f, const char *path, uint8_t **data, uint64_t *size, err_t *err) {
  uint64_t n = env_rfile_size(f);
  uint8_t *p = malloc(n ? n : 1);
  if (!p)
    return err_set(err, BFH_E_NOMEM, "table %s: no memory for %llu bytes", path,
                   (unsigned long long)n);
  int rc = read_at(f, path, 0, p, n, err);
  if (rc != BFH_OK) {
    free(p);
    return rc;
  }
  *data = p;
  *size = n;
  return BFH_OK;
}

static int corrupt(reader_t *r, uint64_t off, const char *what) {
  return err_set(r->err, BFH_E_CORRUPT, "table %s: block at %llu: %s", r->path,
                 (unsigned long long)off, what);
}

/* Checks that the block at [off, off+n) and its trailer lie before the footer. */
static int check_handle(reader_t *r, uint64_t off, uint64_t n) {
  if (off > r->blocks_end || n > r->blocks_end - off ||
      BLOCK_TRAILER_BYTES > r->blocks_end - off - n)
    return corrupt(r, off, "handle points past the end of the file");
  return BFH_OK;
}

/* Checks the trailer of the block at off, whose n bytes of contents and trailer are at p,
   and returns its contents in *out and *out_len (pointing into p or into b after
   decompression). */
static int decode_block(reader_t *r, uint64_t off, const uint8_t *p, uint64_t n, buf_t *b,
                        const uint8_t **out, size_t *out_len) {
  uint8_t type = p[n];
  if (block_trailer_crc_check(p, (size_t)n)) return corrupt(r, off, "checksum mismatch");
  if (type == BLOCK_TYPE_RAW) {
    *out = p;
    *out_len = (size_t)n;
    return BFH_OK;
  }
  if (type != 1) return corrupt(r, off, "unknown compression type");
  if (snappy_api_bind(r->err) != BFH_OK)
    return err_prefix(r->err, "table %s: block at %llu: snappy: ", r->path,
                      (unsigned long long)off);
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

/* The block at [off, off+n) of the file in memory, as decode_block. */
static int read_block(reader_t *r, uint64_t off, uint64_t n, buf_t *b, const uint8_t **out,
                      size_t *out_len) {
  int rc = check_handle(r, off, n);
  if (rc != BFH_OK) return rc;
  return decode_block(r, off, r->file + off, n, b, out, out_len);
}

static int walk_block(reader_t *r, uint64_t off, const uint8_t *b, size_t len, int data);

/* Hands every entry of the data block at off (contents n bytes in the file, decoded to
   b[0, len)) to fn, then reports the block's end to block_fn. */
static int visit_data_block(reader_t *r, uint64_t off, uint64_t n, const uint8_t *b, size_t len) {
  int rc = walk_block(r, off, b, len, 1);
  if (rc != BFH_OK || r->stopped) return rc;
  if (r->st) r->st->blocks++;
  if (r->block_fn && r->block_fn(r->arg, off, n)) r->stopped = 1;
  return BFH_OK;
}

/* Parses the block at off (decoded to b[0, len)) for walk_block and table_tag: its restart
   count, and (check_restarts) every restart point inside the entries and ascending. */
static int parse_block(reader_t *r, uint64_t off, const uint8_t *b, size_t len, int check_restarts,
                       block_t *blk) {
  if (len < 4) return corrupt(r, off, "block shorter than its restart count");
  if (block_parse(blk, b, len)) /* more restarts than fit, or none before entries */
    return corrupt(r, off, "bad restart count");
  uint32_t prev = 0, limit = blk->restarts_offset;
  for (uint32_t i = 0; check_restarts && i < blk->nrestarts; i++) {
    uint32_t rs = decode_fixed32(b + limit + 4 * (size_t)i);
    if ((rs >= limit && !(rs == 0 && limit == 0)) || rs < prev) {
      char what[96];
      snprintf(what, sizeof what, "restart point %u (%u) out of order or range", i, rs);
      return corrupt(r, off, what);
    }
    prev = rs;
  }
  return BFH_OK;
}

/* An entry of a data block walk_needled found, to fn. */
typedef struct needled {
  reader_t *r;
  uint64_t off; /* the block's */
  int rc;
} needled_t;

static int visit_needled(void *arg, const uint8_t *key, size_t key_len, const uint8_t *val,
                         uint32_t val_len, const uint8_t *prev, size_t prev_len) {
  needled_t *x = arg;
  reader_t *r = x->r;
  (void)prev, (void)prev_len;
  internal_key_parts_t k;
  if (internal_key_parse(key, key_len, &k)) {
    x->rc = corrupt(r, x->off,
                    key_len < INTERNAL_KEY_TAG_BYTES ? "entry: internal key shorter than 8 bytes"
                                                     : "entry: unknown value type");
    return 1;
  }
  ldb_entry_t e = {k.user_key, k.user_len, val, val_len, k.seq, k.type};
  if (r->fn(r->arg, &e)) r->stopped = 1;
  return r->stopped;
}

/* The data block blk (at off) for a reader with needles: only the entries whose value holds
   one are decoded whole and go to fn (lsm/block.h block_scan_containing); the entries decoded
   on the way count in st. */
static int walk_needled(reader_t *r, uint64_t off, const block_t *blk) {
  needled_t x = {r, off, BFH_OK};
  uint64_t entries = 0;
  int s = block_scan_containing(blk, r->nd, r->nn, visit_needled, &x, &entries);
  if (r->st) r->st->entries += entries;
  if (x.rc != BFH_OK) return x.rc;
  return s < 0 ? corrupt(r, off, "entry: bad lengths") : BFH_OK;
}

/* Walks the entries of one block with the own engine's block cursor (lsm/block.h: the entry
   format is the same). For the index block (data == 0) every value is a block handle whose
   data block is walked in turn; for a data block every entry goes to fn, or with needles
   those walk_needled finds. */
static int walk_block(reader_t *r, uint64_t off, const uint8_t *b, size_t len, int data) {
  char what[96];
  block_t blk;
  int rc = parse_block(r, off, b, len, 1, &blk);
  if (rc != BFH_OK) return rc;
  if (data && r->nn) return walk_needled(r, off, &blk);
  block_cursor_t c;
  block_cursor_init(&c, &blk, NULL);
  uint32_t at = 0; /* the entry the cursor decodes */
  for (block_cursor_seek_first(&c); block_cursor_valid(&c); block_cursor_next(&c)) {
    if (!data) {
      block_handle_t h;
      if (!block_handle_decode(c.val, c.val + c.val_len, &h)) {
        snprintf(what, sizeof what, "index entry at +%u: bad block handle", at);
        rc = corrupt(r, off, what);
        break;
      }
      const uint8_t *db;
      size_t dlen;
      rc = read_block(r, h.offset, h.size, &r->data_buf, &db, &dlen);
      if (rc == BFH_OK) rc = visit_data_block(r, h.offset, h.size, db, dlen);
      if (rc != BFH_OK || r->stopped) break;
      at = c.next_offset;
      continue;
    }
    internal_key_parts_t k;
    if (internal_key_parse(c.key, c.key_len, &k)) {
      if (c.key_len < INTERNAL_KEY_TAG_BYTES)
        snprintf(what, sizeof what, "entry at +%u: internal key shorter than 8 bytes", at);
      else
        snprintf(what, sizeof what, "entry at +%u: unknown value type %d", at,
                 c.key[c.key_len - INTERNAL_KEY_TAG_BYTES]);
      rc = corrupt(r, off, what);
      break;
    }
    ldb_entry_t e = {.key = k.user_key,
                     .key_len = k.user_len,
                     .val = c.val,
                     .val_len = c.val_len,
                     .seq = k.seq,
                     .type = k.type};
    if (r->st) r->st->entries++;
    if (r->fn(r->arg, &e)) {
      r->stopped = 1;
      break;
    }
    at = c.next_offset;
  }
  if (rc == BFH_OK && block_cursor_corrupt(&c)) {
    snprintf(what, sizeof what, "entry at +%u: bad lengths", at);
    rc = corrupt(r, off, what);
  }
  block_cursor_release(&c);
  return rc;
}

/* The index block's handle from the footer (LDB_FOOTER_BYTES at footer, file offset at):
   metaindex handle, index handle, padding, magic. */
static int decode_footer(const char *path, const uint8_t *footer, uint64_t at,
                         block_handle_t *index, err_t *err) {
  if (decode_fixed64(footer + 40) != LDB_TABLE_MAGIC)
    return err_set(err, BFH_E_CORRUPT, "table %s: footer at %llu: bad magic number", path,
                   (unsigned long long)at);
  block_handle_t meta;
  const uint8_t *q = block_handle_decode(footer, footer + 40, &meta);
  if (!q || !block_handle_decode(q, footer + 40, index))
    return err_set(err, BFH_E_CORRUPT, "table %s: footer at %llu: bad block handles", path,
                   (unsigned long long)at);
  return BFH_OK;
}

/* ---- The table's tag ------------------------------------------------------------------ */

/* Where the tag's bytes come from: the whole file in memory (file != NULL) or f, read through
   a window of TAG_WINDOW_BYTES (the data blocks' trailers lie ascending, about one every
   4 KiB: one pread per window instead of one per trailer). */
#define TAG_WINDOW_BYTES (256u << 10)
typedef struct tag_src {
  const char *path;
  const uint8_t *file;
  env_rfile_t *f;
  uint64_t size;
  buf_t win; /* file bytes [win_at, win_at + win_len) */
  uint64_t win_at, win_len;
} tag_src_t;

static int tag_read(tag_src_t *t, uint64_t off, uint8_t *p, uint64_t n, err_t *err) {
  if (off > t->size || n > t->size - off)
    return err_set(err, BFH_E_CORRUPT,
                   "table %s: block at %llu: handle points past the end of the file", t->path,
                   (unsigned long long)off);
  if (t->file) {
    memcpy(p, t->file + off, (size_t)n);
    return BFH_OK;
  }
  if (n > BLOCK_TRAILER_BYTES) return read_at(t->f, t->path, off, p, n, err);
  if (off < t->win_at || off + n > t->win_at + t->win_len) {
    uint64_t len = t->size - off < TAG_WINDOW_BYTES ? t->size - off : TAG_WINDOW_BYTES;
    if (buf_reserve(&t->win, (size_t)len) != BFH_OK)
      return err_set(err, BFH_E_NOMEM, "table %s: no memory for its tag", t->path);
    t->win_len = 0;
    int rc = read_at(t->f, t->path, off, t->win.p, len, err);
    if (rc != BFH_OK) return rc;
    t->win_at = off;
    t->win_len = len;
  }
  memcpy(p, t->win.p + (off - t->win_at), (size_t)n);
  return BFH_OK;
}

/* Appends n bytes to the tag's input d (grown as needed). */
static int tag_append(buf_t *d, size_t *len, uint64_t n, const char *path, err_t *err) {
  if (buf_reserve(d, *len + (size_t)n) != BFH_OK)
    return err_set(err, BFH_E_NOMEM, "table %s: no memory for its tag", path);
  *len += (size_t)n;
  return BFH_OK;
}

/* The tag of the table t: the bytes of its footer, its index block (contents and trailer,
   checked) and the trailer of every data block the index lists, in index order, hashed. */
static int table_tag(tag_src_t *t, uint64_t *tag, err_t *err) {
  if (t->size < LDB_FOOTER_BYTES)
    return err_set(err, BFH_E_CORRUPT, "table %s: file of %llu bytes is too short for a footer",
                   t->path, (unsigned long long)t->size);
  buf_t d = {0}, ib = {0};
  size_t len = 0;
  uint64_t footer_at = t->size - LDB_FOOTER_BYTES;
  block_handle_t ih = {0};
  int rc = tag_append(&d, &len, LDB_FOOTER_BYTES, t->path, err);
  if (rc == BFH_OK) rc = tag_read(t, footer_at, d.p, LDB_FOOTER_BYTES, err);
  if (rc == BFH_OK) rc = decode_footer(t->path, d.p, footer_at, &ih, err);
  reader_t r = {.path = t->path, .size = t->size, .blocks_end = footer_at, .err = err};
  if (rc == BFH_OK) rc = check_handle(&r, ih.offset, ih.size);
  if (rc == BFH_OK && ih.size > MAX_BLOCK_BYTES)
    rc = corrupt(&r, ih.offset, "index block too large");
  size_t at = len;
  if (rc == BFH_OK) rc = tag_append(&d, &len, ih.size + BLOCK_TRAILER_BYTES, t->path, err);
  if (rc == BFH_OK) rc = tag_read(t, ih.offset, d.p + at, ih.size + BLOCK_TRAILER_BYTES, err);
  const uint8_t *b = NULL;
  size_t blen = 0;
  if (rc == BFH_OK) rc = decode_block(&r, ih.offset, d.p + at, ih.size, &ib, &b, &blen);
  /* b points into d or ib: the index is walked from a copy, since d grows. */
  uint8_t *index = NULL;
  if (rc == BFH_OK && !(index = malloc(blen ? blen : 1)))
    rc = err_set(err, BFH_E_NOMEM, "table %s: no memory for its index", t->path);
  if (rc == BFH_OK) memcpy(index, b, blen);
  block_t blk;
  if (rc == BFH_OK) rc = parse_block(&r, ih.offset, index, blen, 0, &blk);
  if (rc == BFH_OK) {
    block_cursor_t c;
    block_cursor_init(&c, &blk, NULL);
    for (block_cursor_seek_first(&c); rc == BFH_OK && block_cursor_valid(&c);
         block_cursor_next(&c)) {
      block_handle_t h;
      if (!block_handle_decode(c.val, c.val + c.val_len, &h))
        rc = corrupt(&r, ih.offset, "index entry: bad block handle");
      if (rc == BFH_OK) rc = check_handle(&r, h.offset, h.size);
      at = len;
      if (rc == BFH_OK) rc = tag_append(&d, &len, BLOCK_TRAILER_BYTES, t->path, err);
      if (rc == BFH_OK) rc = tag_read(t, h.offset + h.size, d.p + at, BLOCK_TRAILER_BYTES, err);
    }
    if (rc == BFH_OK && block_cursor_corrupt(&c))
      rc = corrupt(&r, ih.offset, "index entry: bad lengths");
    block_cursor_release(&c);
  }
  if (rc == BFH_OK) *tag = bfh_hash64(d.p, len, LDB_TABLE_TAG_SEED);
  free(index);
  free(ib.p);
  free(d.p);
  return rc;
}

int ldb_table_tag(env_t *io, const char *path, uint64_t *tag, err_t *err) {
  env_rfile_t *f = NULL;
  int rc = open_table(io, path, &f, err);
  if (rc != BFH_OK) return rc;
  tag_src_t t = {.path = path, .f = f, .size = env_rfile_size(f)};
  rc = table_tag(&t, tag, err);
  env_rfile_close(f);
  free(t.win.p);
  return rc;
}

/* ---- Reading a table ------------------------------------------------------------------- */
static int scan_file(env_rfile_t *f, const char *path, ldb_visit_fn fn, ldb_block_fn block_fn,
                     void *arg, ldb_read_stats_t *st, uint64_t *tag, err_t *err);

int ldb_table_scan(env_t *io, const char *path, ldb_visit_fn fn, void *arg, ldb_read_stats_t *st,
                   err_t *err) {
  return ldb_table_scan_tagged(io, path, fn, NULL, arg, st, NULL, err);
}

int ldb_table_scan_blocks(env_t *io, const char *path, ldb_visit_fn fn, ldb_block_fn block_fn,
                          void *arg, ldb_read_stats_t *st, err_t *err) {
  return ldb_table_scan_tagged(io, path, fn, block_fn, arg, st, NULL, err);
}

int ldb_table_scan_tagged(env_t *io, const char *path, ldb_visit_fn fn, ldb_block_fn block_fn,
                          void *arg, ldb_read_stats_t *st, uint64_t *tag, err_t *err) {
  env_rfile_t *f = NULL;
  int rc = open_table(io, path, &f, err);
  if (rc != BFH_OK) return rc;
  rc = scan_file(f, path, fn, block_fn, arg, st, tag, err);
  env_rfile_close(f);
  return rc;
}

int ldb_table_scan_rfile(env_rfile_t *f, const char *path, ldb_visit_fn fn, void *arg,
                         ldb_read_stats_t *st, err_t *err) {
  return scan_file(f, path, fn, NULL, arg, st, NULL, err);
}

static int scan_file(env_rfile_t *f, const char *path, ldb_visit_fn fn, ldb_block_fn block_fn,
                     void *arg, ldb_read_stats_t *st, uint64_t *tag, err_t *err) {
  uint8_t *file = NULL;
  uint64_t size = 0;
  int rc = read_file(f, path, &file, &size, err);
  if (rc != BFH_OK) return rc;
  if (st) st->bytes_read += size;
  reader_t r = {.path = path,
                .file = file,
                .size = size,
                .fn = fn,
                .block_fn = block_fn,
                .arg = arg,
                .st = st,
                .err = err};
  if (size < LDB_FOOTER_BYTES) {
    rc = err_set(err, BFH_E_CORRUPT, "table %s: file of %llu bytes is too short for a footer", path,
                 (unsigned long long)size);
    goto out;
  }
  block_handle_t ih;
  rc = decode_footer(path, file + size - LDB_FOOTER_BYTES, size - LDB_FOOTER_BYTES, &ih, err);
  if (rc != BFH_OK) goto out;
  r.blocks_end = size - LDB_FOOTER_BYTES;
  const uint8_t *ib;
  size_t ilen;
  rc = read_block(&r, ih.offset, ih.size, &r.index_buf, &ib, &ilen);
  if (rc == BFH_OK) rc = walk_block(&r, ih.offset, ib, ilen, 0);
  if (rc == BFH_OK && tag) { /* from the bytes the entries came from */
    tag_src_t t = {.path = path, .file = file, .size = size};
    rc = table_tag(&t, tag, err);
  }
out:
  free(r.index_buf.p);
  free(r.data_buf.p);
  free(file);
  return rc;
}

/* One data block read on its own: contents and trailer with one pread; once visited whole
   and well formed, its decoded contents go to use's cache as its fill allows (use NULL:
   nowhere). */
static int read_ref(reader_t *r, env_rfile_t *f, block_ref_t ref, buf_t *raw,
                    const block_cache_use_t *use) {
  int rc = check_handle(r, ref.offset, ref.size);
  if (rc != BFH_OK) return rc;
  uint64_t n = ref.size + BLOCK_TRAILER_BYTES;
  if (buf_reserve(raw, (size_t)n) != BFH_OK)
    return err_set(r->err, BFH_E_NOMEM, "table %s: block at %llu: no memory", r->path,
                   (unsigned long long)ref.offset);
  rc = read_at(f, r->path, ref.offset, raw->p, n, r->err);
  if (rc != BFH_OK) return rc;
  if (r->st) r->st->bytes_read += n;
  const uint8_t *b;
  size_t len;
  rc = decode_block(r, ref.offset, raw->p, ref.size, &r->data_buf, &b, &len);
  if (rc != BFH_OK) return rc;
  rc = visit_data_block(r, ref.offset, ref.size, b, len);
  if (rc == BFH_OK) block_cache_use_keep(use, ref.offset, b, len);
  return rc;
}

/* Blocks refs[0, n) through use: each one the cache holds is walked where it is, each one it
   lacks read from *f, which is opened (from io and r->path) at the first such block when NULL,
   and left to the caller to close. */
static int read_refs_cached(reader_t *r, env_t *io, env_rfile_t **f, const block_ref_t *refs,
                            size_t n, const block_cache_use_t *use) {
  buf_t raw = {0};
  int rc = BFH_OK;
  for (size_t i = 0; rc == BFH_OK && !r->stopped && i < n; i++) {
    block_cache_handle_t *h;
    size_t len;
    const uint8_t *b = block_cache_use_pin(use, refs[i].offset, &len, &h);
    if (b) {
      if (r->st) r->st->bytes_read += refs[i].size + BLOCK_TRAILER_BYTES;
      rc = visit_data_block(r, refs[i].offset, refs[i].size, b, len);
      block_cache_release(h);
      continue;
    }
    if (!*f && (rc = open_table(io, r->path, f, r->err)) != BFH_OK) break;
    r->size = env_rfile_size(*f);
    r->blocks_end = r->size > LDB_FOOTER_BYTES ? r->size - LDB_FOOTER_BYTES : 0;
    rc = read_ref(r, *f, refs[i], &raw, use);
  }
  free(raw.p);
  free(r->data_buf.p);
  return rc;
}

void ldb_table_keep_block(const char *path, uint64_t file_size, block_ref_t ref, const uint8_t *raw,
                          const block_cache_use_t *use) {
  reader_t r = {.path = path, .size = file_size};
  r.blocks_end = file_size > LDB_FOOTER_BYTES ? file_size - LDB_FOOTER_BYTES : 0;
  const uint8_t *b;
  size_t len;
  if (check_handle(&r, ref.offset, ref.size) == BFH_OK &&
      decode_block(&r, ref.offset, raw, ref.size, &r.data_buf, &b, &len) == BFH_OK)
    block_cache_use_keep(use, ref.offset, b, len);
  free(r.data_buf.p);
}

int ldb_table_read_blocks_cached(env_t *io, const char *path, const block_ref_t *refs, size_t n,
                                 const block_cache_use_t *use, const block_needle_t *nd, size_t nn,
                                 ldb_visit_fn fn, void *arg, ldb_read_stats_t *st, err_t *err) {
  reader_t r = {.path = path, .fn = fn, .arg = arg, .st = st, .err = err, .nd = nd, .nn = nn};
  env_rfile_t *f = NULL; /* opened at the first block the cache lacks */
  int rc = read_refs_cached(&r, io, &f, refs, n, use);
  if (f) env_rfile_close(f);
  return rc;
}

int ldb_table_read_blocks(env_t *io, const char *path, const block_ref_t *refs, size_t n,
                          ldb_visit_fn fn, void *arg, ldb_read_stats_t *st, err_t *err) {
  return ldb_table_read_blocks_cached(io, path, refs, n, NULL, NULL, 0, fn, arg, st, err);
}

int ldb_table_read_blocks_rfile_cached(env_rfile_t *f, const char *path, const block_ref_t *refs,
                                       size_t n, const block_cache_use_t *use,
                                       const block_needle_t *nd, size_t nn, ldb_visit_fn fn,
                                       void *arg, ldb_read_stats_t *st, err_t *err) {
  reader_t r = {.path = path, .fn = fn, .arg = arg, .st = st, .err = err, .nd = nd, .nn = nn};
  return read_refs_cached(&r, NULL, &f, refs, n, use);
}

/* rdb_table: see rocksdb_format/rdb_table.h for the byte layout. */
#include "lsm_hooks/rocksdb_format/rdb_table.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "bfh.h"
#include "filters/hash.h"
#include "lsm/block.h"
#include "lsm/block_cache.h"
#include "util/coding.h"
#include "util/compress_api.h"
#include "util/crc32c.h"
#include "util/snappy_api.h"

_Static_assert(BLOCK_TRAILER_BYTES == 5, "RocksDB's block trailer is LevelDB's 5 bytes");

/* A block bigger than this after decompression is taken as damage. */
#define MAX_BLOCK_BYTES (256u << 20)

/* The compression types of a block trailer (RocksDB's CompressionType). */
enum {
  COMP_NONE = 0,
  COMP_SNAPPY = 1,
  COMP_ZLIB = 2,
  COMP_BZIP2 = 3,
  COMP_LZ4 = 4,
  COMP_LZ4HC = 5,
  COMP_XPRESS = 6,
  COMP_ZSTD = 7,
  COMP_ZSTD_NOT_FINAL = 0x40
};

/* Data blocks with a hash map: the top bit of the restart count says so. */
#define HASH_INDEX_FLAG 0x80000000u
#define HASH_NO_ENTRY 255
#define HASH_COLLISION 254

/* XXH3's checksum mixes the type byte in afterwards with this multiplier (RocksDB's
   table/format.cc, ComputeBuiltinChecksumWithLastByte). */
#define XXH3_LAST_BYTE_PRIME 0x6b9083d9u

typedef struct buf {
  uint8_t *p;
  size_t cap;
} buf_t;

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

/* A table being read: its bytes (the whole file in memory, or f read with pread), what its
   footer and properties say, and the visitor. */
typedef struct table {
  const char *path;
  const uint8_t *file; /* whole file, or NULL: read from f */
  env_rfile_t *f;
  uint64_t size;
  uint64_t footer_at; /* blocks and trailers lie in [0, footer_at) */
  uint32_t footer_len;
  uint32_t fv;
  int cks;
  block_handle_t meta_h, index_h, range_del_h, props_h;
  int has_props;
  rdb_table_props_t props;
  buf_t raw; /* a block's bytes read with pread */
  buf_t win; /* tag: file bytes [win_at, win_at + win_len) */
  uint64_t win_at, win_len;
  rdb_visit_fn fn;
  rdb_block_fn block_fn;
  void *arg;
  rdb_read_stats_t *st;
  int stopped;
  err_t *err;
  const uint8_t *ikey; /* the index entry's key while walk_index calls its handle_fn */
  size_t ikey_len;
  const block_needle_t *nd; /* a data block's entries are visited only when their value */
  size_t nn;                /* holds one of these (nn 0: every entry) */
} table_t;

static int corrupt(table_t *t, uint64_t off, const char *what) {
  return err_set(t->err, BFH_E_CORRUPT, "table %s: block at %llu: %s", t->path,
                 (unsigned long long)off, what);
}

static int nomem(table_t *t) {
  return err_set(t->err, BFH_E_NOMEM, "table %s: no memory", t->path);
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

/* The n bytes at off: a pointer into the file in memory, or read into b with one pread. */
static int fetch(table_t *t, uint64_t off, uint64_t n, buf_t *b, const uint8_t **p) {
  if (off > t->size || n > t->size - off) return corrupt(t, off, "points past the end of the file");
  if (t->file) {
    *p = t->file + off;
    return BFH_OK;
  }
  if (buf_reserve(b, n ? (size_t)n : 1) != BFH_OK) return nomem(t);
  int rc = read_at(t->f, t->path, off, b->p, n, t->err);
  if (rc != BFH_OK) return rc;
  if (t->st) t->st->bytes_read += n;
  *p = b->p;
  return BFH_OK;
}

/* Checks that the block at [off, off+n) and its trailer lie before the footer. */
static int check_handle(table_t *t, uint64_t off, uint64_t n) {
  if (off > t->footer_at || n > t->footer_at - off || BLOCK_TRAILER_BYTES > t->footer_at - off - n)
    return corrupt(t, off, "handle points past the end of the file");
  if (n > MAX_BLOCK_BYTES) return corrupt(t, off, "block too large");
  return BFH_OK;
}

/* ---- Checksums and compression -------------------------------------------------------- */

/* 0 if the checksum in the trailer after p[0, n) matches p[0, n] (contents and type byte). */
static int checksum_ok(int cks, const uint8_t *p, size_t n) {
  uint32_t want = decode_fixed32(p + n + 1), got;
  switch (cks) {
    case RDB_CHECKSUM_NONE:
      return 1;
    case RDB_CHECKSUM_CRC32C:
      got = crc32c_mask(crc32c_value(p, n + 1));
      break;
    case RDB_CHECKSUM_XXHASH:
      got = XXH32(p, n + 1, 0);
      break;
    case RDB_CHECKSUM_XXHASH64:
      got = (uint32_t)XXH64(p, n + 1, 0);
      break;
    case RDB_CHECKSUM_XXH3:
      got = (uint32_t)XXH3_64bits(p, n) ^ ((uint32_t)p[n] * XXH3_LAST_BYTE_PRIME);
      break;
    default:
      return 0;
  }
  return got == want;
}

/* Inflates or bunzips src[0, n) into b when the decompressed size is not stated (format_version
   0 and 1): the output grows until the stream ends. */
static int grow_out(table_t *t, buf_t *b, size_t have) {
  if (have >= MAX_BLOCK_BYTES) return BFH_E_CORRUPT;
  if (buf_reserve(b, have * 2 > 4096 ? have * 2 : 4096) != BFH_OK) return nomem(t);
  return BFH_OK;
}

static int zlib_inflate(table_t *t, uint64_t off, const uint8_t *src, size_t n, size_t ulen,
                        int sized, buf_t *b, size_t *out_len) {
  for (int attempt = 0; attempt < 2; attempt++) {
    /* RocksDB writes raw deflate (negative window bits); a zlib or gzip header, when the
       writer asked for one, is accepted on the second attempt. */
    z_stream zs;
    memset(&zs, 0, sizeof zs);
    if (inflateInit2(&zs, attempt == 0 ? -15 : 15 + 32) != Z_OK) return nomem(t);
    size_t cap = sized ? ulen : (n * 4 > 4096 ? n * 4 : 4096);
    if (buf_reserve(b, cap ? cap : 1) != BFH_OK) {
      inflateEnd(&zs);
      return nomem(t);
    }
    zs.next_in = (Bytef *)src;
    zs.avail_in = (uInt)n;
    size_t done = 0;
    int zr;
    for (;;) {
      zs.next_out = b->p + done;
      zs.avail_out = (uInt)(b->cap - done);
      zr = inflate(&zs, Z_FINISH);
      done = b->cap - zs.avail_out;
      if (zr == Z_STREAM_END || sized) break;
      if (zr != Z_BUF_ERROR && zr != Z_OK) break;
      if (zs.avail_out != 0) break; /* input ended before the stream did */
      int rc = grow_out(t, b, b->cap);
      if (rc != BFH_OK) {
        inflateEnd(&zs);
        return rc == BFH_E_CORRUPT ? corrupt(t, off, "zlib block too large") : rc;
      }
    }
    inflateEnd(&zs);
    if (zr == Z_STREAM_END && (!sized || done == ulen)) {
      *out_len = done;
      return BFH_OK;
    }
  }
  return corrupt(t, off, "zlib data does not decompress");
}

static int bzip2_decompress(table_t *t, uint64_t off, const uint8_t *src, size_t n, size_t ulen,
                            int sized, buf_t *b, size_t *out_len) {
  bz_stream bs;
  memset(&bs, 0, sizeof bs);
  if (BZ2_bzDecompressInit(&bs, 0, 0) != BZ_OK) return nomem(t);
  size_t cap = sized ? ulen : (n * 4 > 4096 ? n * 4 : 4096);
  if (buf_reserve(b, cap ? cap : 1) != BFH_OK) {
    BZ2_bzDecompressEnd(&bs);
    return nomem(t);
  }
  bs.next_in = (char *)src;
  bs.avail_in = (unsigned)n;
  size_t done = 0;
  int br;
  for (;;) {
    bs.next_out = (char *)b->p + done;
    bs.avail_out = (unsigned)(b->cap - done);
    br = BZ2_bzDecompress(&bs);
    done = b->cap - bs.avail_out;
    if (br != BZ_OK || sized) break;
    if (bs.avail_out != 0) break; /* input ended before the stream did */
    int rc = grow_out(t, b, b->cap);
    if (rc != BFH_OK) {
      BZ2_bzDecompressEnd(&bs);
      return rc == BFH_E_CORRUPT ? corrupt(t, off, "bzip2 block too large") : rc;
    }
  }
  BZ2_bzDecompressEnd(&bs);
  if (br != BZ_STREAM_END || (sized && done != ulen))
    return corrupt(t, off, "bzip2 data does not decompress");
  *out_len = done;
  return BFH_OK;
}

/* A decompressor whose library did not bind (compress_api.h): its message, prefixed. */
static int unbound(table_t *t, uint64_t off, const char *what) {
  return err_prefix(t->err, "table %s: block at %llu: %s: ", t->path, (unsigned long long)off,
                    what);
}

/* Checks the trailer of the block at off, whose n bytes of contents and trailer are at p, and
   returns its contents in *out and *out_len (pointing into p or into b after decompression). */
static int decode_block(table_t *t, uint64_t off, const uint8_t *p, uint64_t n, buf_t *b,
                        const uint8_t **out, size_t *out_len) {
  uint8_t type = p[n];
  if (!checksum_ok(t->cks, p, (size_t)n)) return corrupt(t, off, "checksum mismatch");
  if (type == COMP_NONE) {
    *out = p;
    *out_len = (size_t)n;
    return BFH_OK;
  }
  const uint8_t *src = p, *end = p + n;
  uint32_t ulen = 0;
  /* From format_version 2 on (and always for zstd) the decompressed size comes first. */
  int sized =
      type != COMP_SNAPPY && (t->fv >= 2 || type == COMP_ZSTD || type == COMP_ZSTD_NOT_FINAL);
  if (sized && !(src = decode_varint32(src, end, &ulen)))
    return corrupt(t, off, "bad decompressed size");
  if (sized && ulen > MAX_BLOCK_BYTES) return corrupt(t, off, "decompressed size too large");
  size_t srclen = (size_t)(end - src), got = 0;
  switch (type) {
    case COMP_SNAPPY: {
      if (snappy_api_bind(t->err) != BFH_OK)
        return err_prefix(t->err, "table %s: block at %llu: snappy: ", t->path,
                          (unsigned long long)off);
      size_t sl;
      if (snappy_uncompressed_length((const char *)src, srclen, &sl) != SNAPPY_OK ||
          sl > MAX_BLOCK_BYTES)
        return corrupt(t, off, "bad snappy length");
      if (buf_reserve(b, sl ? sl : 1) != BFH_OK) return nomem(t);
      got = b->cap;
      if (snappy_uncompress((const char *)src, srclen, (char *)b->p, &got) != SNAPPY_OK ||
          got != sl)
        return corrupt(t, off, "snappy data does not decompress");
      break;
    }
    case COMP_ZLIB: {
      if (zlib_api_bind(t->err) != BFH_OK) return unbound(t, off, "zlib");
      int rc = zlib_inflate(t, off, src, srclen, ulen, sized, b, &got);
      if (rc != BFH_OK) return rc;
      break;
    }
    case COMP_BZIP2: {
      if (bz2_api_bind(t->err) != BFH_OK) return unbound(t, off, "bzip2");
      int rc = bzip2_decompress(t, off, src, srclen, ulen, sized, b, &got);
      if (rc != BFH_OK) return rc;
      break;
    }
    case COMP_LZ4:
    case COMP_LZ4HC: {
      if (lz4_api_bind(t->err) != BFH_OK) return unbound(t, off, "lz4");
      if (!sized) { /* format_version 0 and 1: fixed32 size, then 4 bytes more */
        if (srclen < 8) return corrupt(t, off, "lz4 block shorter than its header");
        ulen = decode_fixed32(src);
        if (ulen > MAX_BLOCK_BYTES) return corrupt(t, off, "decompressed size too large");
        src += 8;
        srclen -= 8;
      }
      if (srclen > INT32_MAX) return corrupt(t, off, "lz4 block too large");
      if (buf_reserve(b, ulen ? ulen : 1) != BFH_OK) return nomem(t);
      int r = LZ4_decompress_safe((const char *)src, (char *)b->p, (int)srclen, (int)ulen);
      if (r < 0 || (uint32_t)r != ulen) return corrupt(t, off, "lz4 data does not decompress");
      got = ulen;
      break;
    }
    case COMP_ZSTD:
    case COMP_ZSTD_NOT_FINAL: {
      if (zstd_api_bind(t->err) != BFH_OK) return unbound(t, off, "zstd");
      if (buf_reserve(b, ulen ? ulen : 1) != BFH_OK) return nomem(t);
      size_t r = ZSTD_decompress(b->p, ulen, src, srclen);
      if (ZSTD_isError(r) || r != ulen) return corrupt(t, off, "zstd data does not decompress");
      got = ulen;
      break;
    }
    default: {
      char what[64];
      snprintf(what, sizeof what, "compression type %u not supported", type);
      return err_set(t->err, BFH_E_UNSUPPORTED, "table %s: block at %llu: %s", t->path,
                     (unsigned long long)off, what);
    }
  }
  *out = b->p;
  *out_len = got;
  return BFH_OK;
}

/* The block at handle h: contents and trailer read (or pointed at), checked and decompressed
   into b. With raw != NULL, *raw points at its n + 5 bytes as the file holds them. */
static int read_block(table_t *t, block_handle_t h, buf_t *b, const uint8_t **out, size_t *out_len,
                      const uint8_t **raw) {
  int rc = check_handle(t, h.offset, h.size);
  if (rc != BFH_OK) return rc;
  const uint8_t *p = NULL; /* set by fetch (GCC cannot tell its errors are nonzero) */
  rc = fetch(t, h.offset, h.size + BLOCK_TRAILER_BYTES, &t->raw, &p);
  if (rc != BFH_OK) return rc;
  if (raw) *raw = p;
  return decode_block(t, h.offset, p, h.size, b, out, out_len);
}

/* ---- Blocks --------------------------------------------------------------------------- */

/* Parses the block at off (decoded to b[0, len)): its restart array, with the data-block hash
   map before the restart count when its top bit says so, and every restart point inside the
   entries and ascending. */
static int parse_block(table_t *t, uint64_t off, const uint8_t *b, size_t len, block_t *blk) {
  if (len < 4) return corrupt(t, off, "block shorter than its restart count");
  if (len > UINT32_MAX) return corrupt(t, off, "block too large");
  uint32_t word = decode_fixed32(b + len - 4), n = word;
  size_t end = len - 4; /* end of the restart array */
  if (word & HASH_INDEX_FLAG) {
    n = word & ~HASH_INDEX_FLAG;
    if (end < 2) return corrupt(t, off, "block shorter than its hash map");
    uint32_t nb = (uint32_t)b[end - 2] | (uint32_t)b[end - 1] << 8;
    if (nb == 0 || nb > end - 2) return corrupt(t, off, "bad hash map size");
    end -= 2 + nb;
    for (uint32_t i = 0; i < nb; i++) {
      uint8_t v = b[end + i];
      if (v != HASH_NO_ENTRY && v != HASH_COLLISION && v >= n)
        return corrupt(t, off, "hash map names a restart point the block lacks");
    }
  }
  if (n == 0 || n > end / 4) return corrupt(t, off, "bad restart count");
  uint32_t limit = (uint32_t)(end - 4 * (size_t)n), prev = 0;
  for (uint32_t i = 0; i < n; i++) {
    uint32_t rs = decode_fixed32(b + limit + 4 * (size_t)i);
    if ((rs >= limit && !(rs == 0 && limit == 0)) || rs < prev || (i == 0 && rs != 0)) {
      char what[96];
      snprintf(what, sizeof what, "restart point %u (%u) out of order or range", i, rs);
      return corrupt(t, off, what);
    }
    prev = rs;
  }
  blk->data = b;
  blk->size = len;
  blk->restarts_offset = limit;
  blk->nrestarts = n;
  return BFH_OK;
}

/* Value types a table's data blocks may hold. */
static int data_type_known(int type) {
  switch (type) {
    case RDB_TYPE_DELETION:
    case RDB_TYPE_VALUE:
    case RDB_TYPE_MERGE:
    case RDB_TYPE_SINGLE_DELETION:
    case RDB_TYPE_BLOB_INDEX:
    case RDB_TYPE_DELETION_WITH_TIMESTAMP:
    case RDB_TYPE_WIDE_COLUMN_ENTITY:
      return 1;
    default:
      return 0;
  }
}

static void count_type(rdb_read_stats_t *st, int type) {
  if (!st) return;
  st->entries++;
  if (type == RDB_TYPE_MERGE)
    st->merges++;
  else if (type == RDB_TYPE_BLOB_INDEX)
    st->blob_refs++;
  else if (type == RDB_TYPE_RANGE_DELETION)
    st->range_dels++;
  else if (type == RDB_TYPE_DELETION_WITH_TIMESTAMP || type == RDB_TYPE_WIDE_COLUMN_ENTITY)
    st->other++;
}

/* An entry of a data block walk_needled found, to fn. */
typedef struct needled {
  table_t *t;
  uint64_t off;     /* the block's */
  uint64_t visited; /* entries handed to fn (count_type counts them) */
  int rc;
} needled_t;

static int visit_needled(void *arg, const uint8_t *key, size_t key_len, const uint8_t *val,
                         uint32_t val_len, const uint8_t *prev, size_t prev_len) {
  needled_t *x = arg;
  table_t *t = x->t;
  (void)prev, (void)prev_len;
  if (key_len < 8) {
    x->rc = corrupt(t, x->off, "entry: internal key shorter than 8 bytes");
    return 1;
  }
  uint64_t tag = decode_fixed64(key + key_len - 8);
  int type = (int)(tag & 0xff);
  if (!data_type_known(type)) {
    x->rc = corrupt(t, x->off, "entry: unknown value type");
    return 1;
  }
  rdb_entry_t e = {.key = key,
                   .key_len = key_len - 8,
                   .val = val,
                   .val_len = val_len,
                   .seq = tag >> 8,
                   .type = type};
  count_type(t->st, type);
  x->visited++;
  if (t->fn(t->arg, &e)) t->stopped = 1;
  return t->stopped;
}

/* The data block blk (at off) for a read with needles: only the entries whose value holds
   one are decoded whole and go to fn (lsm/block.h block_scan_containing). Every entry skipped
   is one whose value holds no needle, so it cannot pass the search's test; a table read this
   way has a block filter or map, which bfh builds only for a table it read whole without
   meeting an entry it refuses (rdb_entry_refuse), so none is skipped unseen. entries in st
   counts the entries decoded. */
static int walk_needled(table_t *t, uint64_t off, const block_t *blk) {
  needled_t x = {t, off, 0, BFH_OK};
  uint64_t entries = 0;
  int s = block_scan_containing(blk, t->nd, t->nn, visit_needled, &x, &entries);
  if (t->st && entries > x.visited) t->st->entries += entries - x.visited;
  if (x.rc != BFH_OK) return x.rc;
  return s < 0 ? corrupt(t, off, "entry: bad lengths") : BFH_OK;
}

/* Hands every entry of the block at off (decoded to b[0, len)) to fn: a data block
   (range_del == 0), or with needles those walk_needled finds, or the range-deletion block,
   whose keys all have type RDB_TYPE_RANGE_DELETION.
 */
static int walk_entries(table_t *t, uint64_t off, const uint8_t *b, size_t len, int range_del) {
  char what[96];
  block_t blk;
  int rc = parse_block(t, off, b, len, &blk);
  if (rc != BFH_OK) return rc;
  if (!range_del && t->nn) return walk_needled(t, off, &blk);
  block_cursor_t c;
  block_cursor_init(&c, &blk, NULL);
  uint32_t at = 0;
  for (block_cursor_seek_first(&c); block_cursor_valid(&c); block_cursor_next(&c)) {
    if (c.key_len < 8) {
      snprintf(what, sizeof what, "entry at +%u: internal key shorter than 8 bytes", at);
      rc = corrupt(t, off, what);
      break;
    }
    uint64_t tag = decode_fixed64(c.key + c.key_len - 8);
    int type = (int)(tag & 0xff);
    if (range_del ? type != RDB_TYPE_RANGE_DELETION : !data_type_known(type)) {
      snprintf(what, sizeof what, "entry at +%u: unknown value type 0x%x", at, type);
      rc = corrupt(t, off, what);
      break;
    }
    rdb_entry_t e = {.key = c.key,
                     .key_len = c.key_len - 8,
                     .val = c.val,
                     .val_len = c.val_len,
                     .seq = tag >> 8,
                     .type = type};
    count_type(t->st, type);
    if (t->fn(t->arg, &e)) {
      t->stopped = 1;
      break;
    }
    at = c.next_offset;
  }
  if (rc == BFH_OK && block_cursor_corrupt(&c)) {
    snprintf(what, sizeof what, "entry at +%u: bad lengths", at);
    rc = corrupt(t, off, what);
  }
  block_cursor_release(&c);
  return rc;
}

/* Hands every entry of the data block at off (contents n bytes in the file, decoded to
   b[0, len)) to fn, then reports the block's end to block_fn. */
static int visit_data_block(table_t *t, uint64_t off, uint64_t n, const uint8_t *b, size_t len) {
  int rc = walk_entries(t, off, b, len, 0);
  if (rc != BFH_OK || t->stopped) return rc;
  if (t->st) t->st->blocks++;
  if (t->block_fn && t->block_fn(t->arg, off, n)) t->stopped = 1;
  return BFH_OK;
}

/* A named-entries block (metaindex, properties): fn(arg, name, value) for each entry. */
typedef int (*named_fn)(table_t *t, const uint8_t *key, size_t klen, const uint8_t *val,
                        size_t vlen);
static int walk_named(table_t *t, uint64_t off, const uint8_t *b, size_t len, named_fn fn) {
  block_t blk;
  int rc = parse_block(t, off, b, len, &blk);
  if (rc != BFH_OK) return rc;
  block_cursor_t c;
  block_cursor_init(&c, &blk, NULL);
  for (block_cursor_seek_first(&c); rc == BFH_OK && block_cursor_valid(&c); block_cursor_next(&c))
    rc = fn(t, c.key, c.key_len, c.val, c.val_len);
  if (rc == BFH_OK && block_cursor_corrupt(&c)) rc = corrupt(t, off, "entry: bad lengths");
  block_cursor_release(&c);
  return rc;
}

/* ---- Index blocks --------------------------------------------------------------------- */

/* Calls fn(t, handle, arg) for every block handle an index block (decoded to b[0, len), at off
   in the file) lists, in order. The entries are walked here, not with the block cursor: with
   delta-encoded values (format_version >= 4) an entry has no value length, its value being a
   block handle at a restart point and a size difference elsewhere. */
typedef int (*handle_fn)(table_t *t, block_handle_t h, void *arg);
static int walk_index(table_t *t, uint64_t off, const uint8_t *b, size_t len, handle_fn fn,
                      void *arg) {
  char what[96];
  block_t blk;
  int rc = parse_block(t, off, b, len, &blk);
  if (rc != BFH_OK) return rc;
  int delta = t->props.index_value_is_delta_encoded;
  int first_key = t->props.index_type == RDB_INDEX_BINARY_WITH_FIRST_KEY;
  const uint8_t *p = b, *limit = b + blk.restarts_offset;
  uint32_t next_restart = 0; /* index of the next restart point not yet passed */
  size_t key_len = 0;
  buf_t key = {0}; /* the entry's key (the walk's own: a partition's walk nests in it) */
  block_handle_t prev = {0};
  int have_prev = 0;
  while (p < limit && !t->stopped) {
    uint32_t at = (uint32_t)(p - b), shared, non_shared, vlen = 0;
    int restart = 0;
    while (next_restart < blk.nrestarts &&
           decode_fixed32(b + blk.restarts_offset + 4 * (size_t)next_restart) <= at) {
      restart = decode_fixed32(b + blk.restarts_offset + 4 * (size_t)next_restart) == at;
      next_restart++;
    }
    if (!(p = decode_varint32(p, limit, &shared)) ||
        !(p = decode_varint32(p, limit, &non_shared)) ||
        (!delta && !(p = decode_varint32(p, limit, &vlen))) || shared > key_len ||
        (restart && shared != 0) || non_shared > (size_t)(limit - p)) {
      snprintf(what, sizeof what, "index entry at +%u: bad lengths", at);
      free(key.p);
      return corrupt(t, off, what);
    }
    key_len = (size_t)shared + non_shared;
    if (buf_reserve(&key, key_len ? key_len : 1) != BFH_OK) {
      free(key.p);
      return nomem(t);
    }
    if (non_shared) memcpy(key.p + shared, p, non_shared);
    p += non_shared;
    block_handle_t h;
    const uint8_t *vend;
    if (!delta) {
      if (vlen > (size_t)(limit - p)) {
        snprintf(what, sizeof what, "index entry at +%u: bad lengths", at);
        free(key.p);
        return corrupt(t, off, what);
      }
      vend = p + vlen;
      if (!block_handle_decode(p, vend, &h)) {
        snprintf(what, sizeof what, "index entry at +%u: bad block handle", at);
        free(key.p);
        return corrupt(t, off, what);
      }
    } else {
      vend = limit;
      const uint8_t *q;
      if (restart || !have_prev) {
        if (!restart) {
          snprintf(what, sizeof what, "index entry at +%u: size delta without a handle", at);
          free(key.p);
          return corrupt(t, off, what);
        }
        q = block_handle_decode(p, vend, &h);
      } else {
        uint64_t z = 0;
        q = decode_varint64(p, vend, &z);
        int64_t d = (int64_t)(z >> 1) ^ -(int64_t)(z & 1); /* zigzag */
        h.offset = prev.offset + prev.size + BLOCK_TRAILER_BYTES;
        h.size = (uint64_t)((int64_t)prev.size + d);
      }
      if (!q) {
        snprintf(what, sizeof what, "index entry at +%u: bad block handle", at);
        free(key.p);
        return corrupt(t, off, what);
      }
      p = q;
    }
    if (first_key && delta) { /* the block's first key follows, length-prefixed */
      uint32_t fk;
      const uint8_t *q = decode_varint32(p, vend, &fk);
      if (!q || fk > (size_t)(vend - q)) {
        snprintf(what, sizeof what, "index entry at +%u: bad first key", at);
        free(key.p);
        return corrupt(t, off, what);
      }
      p = q + fk;
    }
    if (!delta) p = vend;
    prev = h;
    have_prev = 1;
    t->ikey = key.p;
    t->ikey_len = key_len;
    rc = fn(t, h, arg);
    if (rc != BFH_OK) {
      free(key.p);
      return rc;
    }
  }
  free(key.p);
  return BFH_OK;
}

/* Visits the data blocks of the index at ih: for a two-level index, ih is the top level and
   each of its handles an index partition. */
typedef struct index_walk {
  handle_fn fn; /* called for every data block */
  void *arg;
  /* NULL, or told each index block read, with its contents and trailer as the file holds them */
  int (*index_fn)(table_t *t, block_handle_t h, const uint8_t *raw, void *arg);
  buf_t part_buf;
} index_walk_t;

static int visit_partition(table_t *t, block_handle_t h, void *arg) {
  index_walk_t *w = arg;
  const uint8_t *b, *raw;
  size_t len;
  int rc = read_block(t, h, &w->part_buf, &b, &len, &raw);
  if (rc == BFH_OK && w->index_fn) rc = w->index_fn(t, h, raw, w->arg);
  if (rc == BFH_OK) rc = walk_index(t, h.offset, b, len, w->fn, w->arg);
  return rc;
}

static int walk_data_handles(table_t *t, index_walk_t *w) {
  buf_t top = {0};
  const uint8_t *b, *raw;
  size_t len;
  int rc = read_block(t, t->index_h, &top, &b, &len, &raw);
  if (rc == BFH_OK && w->index_fn) rc = w->index_fn(t, t->index_h, raw, w->arg);
  if (rc == BFH_OK && !t->file) { /* raw lives in t->raw, which the partitions reuse */
    if (b == t->raw.p) {
      uint8_t *copy = malloc(len ? len : 1);
      if (!copy)
        rc = nomem(t);
      else {
        memcpy(copy, b, len);
        free(top.p);
        top.p = copy;
        top.cap = len ? len : 1;
        b = copy;
      }
    }
  }
  if (rc == BFH_OK) {
    if (t->props.index_type == RDB_INDEX_TWO_LEVEL)
      rc = walk_index(t, t->index_h.offset, b, len, visit_partition, w);
    else
      rc = walk_index(t, t->index_h.offset, b, len, w->fn, w->arg);
  }
  free(top.p);
  free(w->part_buf.p);
  w->part_buf.p = NULL;
  return rc;
}

/* ---- Footer, metaindex, properties ---------------------------------------------------- */

static int footer_error(table_t *t, uint64_t at, const char *what) {
  return err_set(t->err, BFH_E_CORRUPT, "table %s: footer at %llu: %s", t->path,
                 (unsigned long long)at, what);
}

/* Reads the footer: format_version, checksum type, the metaindex and index handles. */
static int read_footer(table_t *t) {
  if (t->size < RDB_LEGACY_FOOTER_BYTES)
    return err_set(t->err, BFH_E_CORRUPT, "table %s: file of %llu bytes is too short for a footer",
                   t->path, (unsigned long long)t->size);
  /* One read of the last 53 bytes (48 when the file is shorter) holds either footer. */
  uint32_t n = t->size >= RDB_FOOTER_BYTES ? RDB_FOOTER_BYTES : RDB_LEGACY_FOOTER_BYTES;
  const uint8_t *p = NULL;
  int rc = fetch(t, t->size - n, n, &t->raw, &p);
  if (rc != BFH_OK) return rc;
  uint64_t magic = decode_fixed64(p + n - 8);
  const uint8_t *h;
  if (magic == RDB_TABLE_LEGACY_MAGIC) {
    t->footer_len = RDB_LEGACY_FOOTER_BYTES;
    t->footer_at = t->size - RDB_LEGACY_FOOTER_BYTES;
    t->fv = 0;
    t->cks = RDB_CHECKSUM_CRC32C;
    h = p + n - RDB_LEGACY_FOOTER_BYTES;
  } else if (magic == RDB_TABLE_MAGIC) {
    if (n < RDB_FOOTER_BYTES)
      return err_set(t->err, BFH_E_CORRUPT,
                     "table %s: file of %llu bytes is too short for a footer", t->path,
                     (unsigned long long)t->size);
    t->footer_len = RDB_FOOTER_BYTES;
    t->footer_at = t->size - RDB_FOOTER_BYTES;
    t->cks = p[0];
    t->fv = decode_fixed32(p + 41);
    h = p + 1;
    if (t->fv == 0) return footer_error(t, t->footer_at, "format_version 0 with the new magic");
    if (t->fv > RDB_MAX_FORMAT_VERSION)
      return err_set(t->err, BFH_E_UNSUPPORTED,
                     "table %s: footer at %llu: format_version %u not supported (at most %u)",
                     t->path, (unsigned long long)t->footer_at, t->fv, RDB_MAX_FORMAT_VERSION);
    if (t->cks > RDB_CHECKSUM_XXH3)
      return err_set(t->err, BFH_E_UNSUPPORTED,
                     "table %s: footer at %llu: checksum type %d not supported", t->path,
                     (unsigned long long)t->footer_at, t->cks);
  } else {
    return footer_error(t, t->size - 8, "bad magic number");
  }
  const uint8_t *q = block_handle_decode(h, h + 40, &t->meta_h);
  if (!q || !block_handle_decode(q, h + 40, &t->index_h))
    return footer_error(t, t->footer_at, "bad block handles");
  t->props.format_version = t->fv;
  t->props.checksum_type = t->cks;
  return BFH_OK;
}

static int name_is(const uint8_t *k, size_t n, const char *name) {
  return n == strlen(name) && memcmp(k, name, n) == 0;
}

static int on_meta(table_t *t, const uint8_t *k, size_t kn, const uint8_t *v, size_t vn) {
  block_handle_t h;
  int props = name_is(k, kn, "rocksdb.properties") || name_is(k, kn, "rocksdb.stats");
  int range = name_is(k, kn, "rocksdb.range_del");
  if (name_is(k, kn, "rocksdb.compression_dict")) t->props.has_compression_dict = 1;
  if (!props && !range) return BFH_OK;
  if (!block_handle_decode(v, v + vn, &h))
    return corrupt(t, t->meta_h.offset, "metaindex: bad block handle");
  int rc = check_handle(t, h.offset, h.size);
  if (rc != BFH_OK) return rc;
  if (props) {
    t->props_h = h;
    t->has_props = 1;
  } else {
    t->range_del_h = h;
    t->props.has_range_del_block = 1;
  }
  return BFH_OK;
}

static int prop_u64(table_t *t, const uint8_t *v, size_t vn, uint64_t *out) {
  if (!decode_varint64(v, v + vn, out))
    return corrupt(t, t->props_h.offset, "properties: bad number");
  return BFH_OK;
}

static int prop_str(table_t *t, const uint8_t *v, size_t vn, char **out) {
  char *s = malloc(vn + 1);
  if (!s) return nomem(t);
  memcpy(s, v, vn);
  s[vn] = 0;
  free(*out);
  *out = s;
  return BFH_OK;
}

static int on_prop(table_t *t, const uint8_t *k, size_t kn, const uint8_t *v, size_t vn) {
  rdb_table_props_t *p = &t->props;
  uint64_t x = 0;
  int rc = BFH_OK;
  if (name_is(k, kn, "rocksdb.column.family.id"))
    rc = prop_u64(t, v, vn, &p->cf_id);
  else if (name_is(k, kn, "rocksdb.column.family.name"))
    rc = prop_str(t, v, vn, &p->cf_name);
  else if (name_is(k, kn, "rocksdb.num.entries"))
    rc = prop_u64(t, v, vn, &p->num_entries);
  else if (name_is(k, kn, "rocksdb.deleted.keys"))
    rc = prop_u64(t, v, vn, &p->num_deletions);
  else if (name_is(k, kn, "rocksdb.merge.operands"))
    rc = prop_u64(t, v, vn, &p->num_merge_operands);
  else if (name_is(k, kn, "rocksdb.num.range-deletions"))
    rc = prop_u64(t, v, vn, &p->num_range_deletions);
  else if (name_is(k, kn, "rocksdb.num.data.blocks"))
    rc = prop_u64(t, v, vn, &p->num_data_blocks);
  else if (name_is(k, kn, "rocksdb.merge.operator"))
    rc = prop_str(t, v, vn, &p->merge_operator);
  else if (name_is(k, kn, "rocksdb.comparator"))
    rc = prop_str(t, v, vn, &p->comparator);
  else if (name_is(k, kn, "rocksdb.compression"))
    rc = prop_str(t, v, vn, &p->compression);
  else if (name_is(k, kn, "rocksdb.prefix.extractor.name"))
    rc = prop_str(t, v, vn, &p->prefix_extractor);
  else if (name_is(k, kn, "rocksdb.index.key.is.user.key")) {
    if ((rc = prop_u64(t, v, vn, &x)) == BFH_OK) p->index_key_is_user_key = x != 0;
  } else if (name_is(k, kn, "rocksdb.index.value.is.delta.encoded")) {
    if ((rc = prop_u64(t, v, vn, &x)) == BFH_OK) p->index_value_is_delta_encoded = x != 0;
  } else if (name_is(k, kn, "rocksdb.block.based.table.index.type")) {
    if (vn != 4) return corrupt(t, t->props_h.offset, "properties: bad index type");
    p->index_type = decode_fixed32(v); /* fixed32, unlike the numbers above */
  } else if (name_is(k, kn, "rocksdb.external_sst_file.version")) {
    if (vn != 4) return corrupt(t, t->props_h.offset, "properties: bad external file version");
    p->has_ext_version = 1;
    p->ext_version = decode_fixed32(v);
  } else if (name_is(k, kn, "rocksdb.external_sst_file.global_seqno")) {
    if (vn != 8) return corrupt(t, t->props_h.offset, "properties: bad global sequence number");
    p->has_ext_global_seqno = 1;
    p->ext_global_seqno = decode_fixed64(v);
  }
  return rc;
}

/* The place in the block p[0, n) (uncompressed) of the value of its property
   rocksdb.external_sst_file.global_seqno, if it has one of 8 bytes: 1 and *at, else 0. */
static int global_seqno_at(table_t *t, const uint8_t *p, size_t n, size_t *at) {
  block_t blk;
  if (parse_block(t, t->props_h.offset, p, n, &blk) != BFH_OK) return 0;
  block_cursor_t c;
  block_cursor_init(&c, &blk, NULL);
  int found = 0;
  for (block_cursor_seek_first(&c); !found && block_cursor_valid(&c); block_cursor_next(&c))
    if (name_is(c.key, c.key_len, "rocksdb.external_sst_file.global_seqno") && c.val_len == 8 &&
        c.val >= p && c.val + 8 <= p + n) {
      *at = (size_t)(c.val - p);
      found = 1;
    }
  block_cursor_release(&c);
  return found;
}

/* The properties block, its checksum verified as RocksDB's reader verifies it
   (table/meta_blocks.cc ReadTablePropertiesHelper): an ingestion with write_global_seqno (the
   default in 7.8.3) writes the file's global sequence number into its property
   rocksdb.external_sst_file.global_seqno after SstFileWriter computed the checksum, so a block
   whose checksum does not match is checked again with that value as SstFileWriter wrote it,
   0. The block read is the one in the file. */
static int read_props_block(table_t *t, buf_t *mb, const uint8_t **b, size_t *len) {
  block_handle_t h = t->props_h;
  int rc = check_handle(t, h.offset, h.size);
  if (rc != BFH_OK) return rc;
  const uint8_t *p = NULL;
  rc = fetch(t, h.offset, h.size + BLOCK_TRAILER_BYTES, &t->raw, &p);
  if (rc != BFH_OK) return rc;
  size_t n = (size_t)h.size, at;
  if (!checksum_ok(t->cks, p, n) && p[n] == COMP_NONE && global_seqno_at(t, p, n, &at)) {
    uint8_t *q = malloc(n + BLOCK_TRAILER_BYTES);
    if (!q) return nomem(t);
    memcpy(q, p, n + BLOCK_TRAILER_BYTES);
    memset(q + at, 0, 8);
    int ok = checksum_ok(t->cks, q, n);
    free(q);
    if (ok) {
      *b = p;
      *len = n;
      return BFH_OK;
    }
  }
  return decode_block(t, h.offset, p, h.size, mb, b, len);
}

/* Reads the footer, the metaindex and the properties block into t->props. The index type and
   the delta encoding of index values decide how the index is read. */
static int read_meta(table_t *t) {
  int rc = read_footer(t);
  if (rc != BFH_OK) return rc;
  t->props.cf_id = RDB_CF_UNKNOWN;
  buf_t mb = {0};
  const uint8_t *b;
  size_t len;
  rc = read_block(t, t->meta_h, &mb, &b, &len, NULL);
  if (rc == BFH_OK) rc = walk_named(t, t->meta_h.offset, b, len, on_meta);
  if (rc == BFH_OK && t->props.has_compression_dict)
    rc = err_set(t->err, BFH_E_UNSUPPORTED,
                 "table %s: its blocks are compressed with a dictionary (not supported)", t->path);
  if (rc == BFH_OK && t->has_props) {
    rc = read_props_block(t, &mb, &b, &len);
    if (rc == BFH_OK) rc = walk_named(t, t->props_h.offset, b, len, on_prop);
  }
  if (rc == BFH_OK && t->props.index_type > RDB_INDEX_BINARY_WITH_FIRST_KEY)
    rc = err_set(t->err, BFH_E_UNSUPPORTED, "table %s: index type %u not supported", t->path,
                 t->props.index_type);
  free(mb.p);
  return rc;
}

int rdb_table_global_seqno(const rdb_table_props_t *p, const char *path, uint64_t largest_seqno,
                           uint64_t *gseq, err_t *err) {
  *gseq = RDB_NO_GLOBAL_SEQNO;
  if (!p->has_ext_version) {
    if (p->has_ext_global_seqno)
      return err_set(err, BFH_E_CORRUPT,
                     "table %s: not an ingested file, yet it has a global sequence number "
                     "(%llu)",
                     path, (unsigned long long)p->ext_global_seqno);
    return BFH_OK;
  }
  if (p->ext_version < 2) {
    if (p->has_ext_global_seqno || p->ext_version != 1)
      return err_set(err, BFH_E_CORRUPT,
                     "table %s: ingested file of version %u with a global sequence number",
                     path, p->ext_version);
    return BFH_OK; /* version 1: the entries carry their sequences */
  }
  uint64_t g = p->has_ext_global_seqno ? p->ext_global_seqno : 0;
  if (largest_seqno < RDB_MAX_SEQNO) { /* as RocksDB, which passes kMaxSequenceNumber for unknown */
    if (g == 0) g = largest_seqno;
    if (g != largest_seqno)
      return err_set(err, BFH_E_CORRUPT,
                     "table %s: ingested file's global sequence number %llu is not the "
                     "MANIFEST's largest sequence of the file (%llu)",
                     path, (unsigned long long)g, (unsigned long long)largest_seqno);
  }
  if (g > RDB_MAX_SEQNO)
    return err_set(err, BFH_E_CORRUPT,
                   "table %s: ingested file's global sequence number %llu is above the "
                   "largest sequence",
                   path, (unsigned long long)g);
  *gseq = g;
  return BFH_OK;
}

void rdb_table_props_release(rdb_table_props_t *p) {
  if (!p) return;
  free(p->cf_name);
  free(p->merge_operator);
  free(p->comparator);
  free(p->compression);
  free(p->prefix_extractor);
  memset(p, 0, sizeof *p);
}

/* Hands t->props to the caller (or frees it). */
static void give_props(table_t *t, rdb_table_props_t *out) {
  if (out) {
    rdb_table_props_release(out);
    *out = t->props;
  } else {
    rdb_table_props_release(&t->props);
  }
  memset(&t->props, 0, sizeof t->props);
}

static void table_release(table_t *t) {
  rdb_table_props_release(&t->props);
  free(t->raw.p);
  free(t->win.p);
  t->raw.p = t->win.p = NULL;
}

int rdb_table_props_read_rfile(env_rfile_t *f, const char *path, rdb_table_props_t *props,
                               err_t *err) {
  table_t t = {.path = path, .f = f, .size = env_rfile_size(f), .err = err};
  int rc = read_meta(&t);
  give_props(&t, props);
  table_release(&t);
  return rc;
}

int rdb_table_props_read(env_t *io, const char *path, rdb_table_props_t *props, err_t *err) {
  memset(props, 0, sizeof *props);
  env_rfile_t *f = NULL;
  int rc = open_table(io, path, &f, err);
  if (rc != BFH_OK) return rc;
  rc = rdb_table_props_read_rfile(f, path, props, err);
  env_rfile_close(f);
  return rc;
}

/* ---- The table's tag ------------------------------------------------------------------ */

#define TAG_WINDOW_BYTES (256u << 10)

typedef struct tag_state {
  buf_t d;
  size_t len;
} tag_state_t;

static int tag_append(table_t *t, tag_state_t *s, const uint8_t *p, uint64_t n) {
  if (buf_reserve(&s->d, s->len + (size_t)n) != BFH_OK) return nomem(t);
  memcpy(s->d.p + s->len, p, (size_t)n);
  s->len += (size_t)n;
  return BFH_OK;
}

/* A 5-byte trailer at off: from memory or through the window (one pread per 256 KiB). */
static int tag_trailer(table_t *t, tag_state_t *s, uint64_t off) {
  if (t->file) return tag_append(t, s, t->file + off, BLOCK_TRAILER_BYTES);
  if (off < t->win_at || off + BLOCK_TRAILER_BYTES > t->win_at + t->win_len) {
    uint64_t len = t->size - off < TAG_WINDOW_BYTES ? t->size - off : TAG_WINDOW_BYTES;
    if (buf_reserve(&t->win, (size_t)len) != BFH_OK) return nomem(t);
    t->win_len = 0;
    int rc = read_at(t->f, t->path, off, t->win.p, len, t->err);
    if (rc != BFH_OK) return rc;
    t->win_at = off;
    t->win_len = len;
  }
  return tag_append(t, s, t->win.p + (off - t->win_at), BLOCK_TRAILER_BYTES);
}

static int tag_data(table_t *t, block_handle_t h, void *arg) {
  int rc = check_handle(t, h.offset, h.size);
  if (rc != BFH_OK) return rc;
  return tag_trailer(t, arg, h.offset + h.size);
}

/* The index blocks' bytes (contents and trailer) go into the tag too. */
static int tag_index_block(table_t *t, block_handle_t h, const uint8_t *raw, void *arg) {
  return tag_append(t, arg, raw, h.size + BLOCK_TRAILER_BYTES);
}

/* The tag of t (footer, metaindex and props already read). */
static int table_tag(table_t *t, uint64_t *tag) {
  tag_state_t s = {0};
  const uint8_t *p = NULL;
  int rc = fetch(t, t->footer_at, t->footer_len, &t->raw, &p);
  if (rc == BFH_OK) rc = tag_append(t, &s, p, t->footer_len);
  if (rc == BFH_OK) rc = check_handle(t, t->meta_h.offset, t->meta_h.size);
  if (rc == BFH_OK)
    rc = fetch(t, t->meta_h.offset, t->meta_h.size + BLOCK_TRAILER_BYTES, &t->raw, &p);
  if (rc == BFH_OK) rc = tag_append(t, &s, p, t->meta_h.size + BLOCK_TRAILER_BYTES);
  if (rc == BFH_OK) {
    index_walk_t w = {.fn = tag_data, .arg = &s, .index_fn = tag_index_block};
    rc = walk_data_handles(t, &w);
  }
  if (rc == BFH_OK && t->props.has_range_del_block)
    rc = tag_trailer(t, &s, t->range_del_h.offset + t->range_del_h.size);
  if (rc == BFH_OK) *tag = bfh_hash64(s.d.p, s.len, RDB_TABLE_TAG_SEED);
  free(s.d.p);
  return rc;
}

int rdb_table_tag(env_t *io, const char *path, uint64_t *tag, err_t *err) {
  env_rfile_t *f = NULL;
  int rc = open_table(io, path, &f, err);
  if (rc != BFH_OK) return rc;
  table_t t = {.path = path, .f = f, .size = env_rfile_size(f), .err = err};
  rc = read_meta(&t);
  if (rc == BFH_OK) rc = table_tag(&t, tag);
  table_release(&t);
  env_rfile_close(f);
  return rc;
}

/* ---- Reading a table ------------------------------------------------------------------- */

typedef struct scan_state {
  buf_t data_buf;
} scan_state_t;

static int scan_data(table_t *t, block_handle_t h, void *arg) {
  scan_state_t *s = arg;
  const uint8_t *b;
  size_t len;
  int rc = read_block(t, h, &s->data_buf, &b, &len, NULL);
  if (rc != BFH_OK) return rc;
  return visit_data_block(t, h.offset, h.size, b, len);
}

int rdb_table_scan_rfile(env_rfile_t *f, const char *path, rdb_visit_fn fn, rdb_block_fn block_fn,
                         void *arg, rdb_read_stats_t *st, uint64_t *tag, rdb_table_props_t *props,
                         err_t *err) {
  if (props) memset(props, 0, sizeof *props);
  uint64_t size = env_rfile_size(f);
  uint8_t *file = malloc(size ? size : 1);
  if (!file)
    return err_set(err, BFH_E_NOMEM, "table %s: no memory for %llu bytes", path,
                   (unsigned long long)size);
  int rc = read_at(f, path, 0, file, size, err);
  if (rc != BFH_OK) {
    free(file);
    return rc;
  }
  if (st) st->bytes_read += size;
  table_t t = {.path = path,
               .file = file,
               .size = size,
               .fn = fn,
               .block_fn = block_fn,
               .arg = arg,
               .st = st,
               .err = err};
  scan_state_t s = {0};
  rc = read_meta(&t);
  if (rc == BFH_OK) {
    index_walk_t w = {.fn = scan_data, .arg = &s};
    rc = walk_data_handles(&t, &w);
  }
  if (rc == BFH_OK && !t.stopped && t.props.has_range_del_block) {
    const uint8_t *b;
    size_t len;
    rc = read_block(&t, t.range_del_h, &s.data_buf, &b, &len, NULL);
    if (rc == BFH_OK) rc = walk_entries(&t, t.range_del_h.offset, b, len, 1);
  }
  if (rc == BFH_OK && tag) rc = table_tag(&t, tag); /* from the bytes the entries came from */
  give_props(&t, props);
  table_release(&t);
  free(s.data_buf.p);
  free(file);
  return rc;
}

int rdb_table_scan_tagged(env_t *io, const char *path, rdb_visit_fn fn, rdb_block_fn block_fn,
                          void *arg, rdb_read_stats_t *st, uint64_t *tag, rdb_table_props_t *props,
                          err_t *err) {
  if (props) memset(props, 0, sizeof *props);
  env_rfile_t *f = NULL;
  int rc = open_table(io, path, &f, err);
  if (rc != BFH_OK) return rc;
  rc = rdb_table_scan_rfile(f, path, fn, block_fn, arg, st, tag, props, err);
  env_rfile_close(f);
  return rc;
}

int rdb_table_scan(env_t *io, const char *path, rdb_visit_fn fn, void *arg, rdb_read_stats_t *st,
                   err_t *err) {
  return rdb_table_scan_tagged(io, path, fn, NULL, arg, st, NULL, NULL, err);
}

int rdb_table_scan_blocks(env_t *io, const char *path, rdb_visit_fn fn, rdb_block_fn block_fn,
                          void *arg, rdb_read_stats_t *st, err_t *err) {
  return rdb_table_scan_tagged(io, path, fn, block_fn, arg, st, NULL, NULL, err);
}

int rdb_table_footer_read_rfile(env_rfile_t *f, const char *path, rdb_table_footer_t *out,
                                err_t *err) {
  table_t t = {.path = path, .f = f, .size = env_rfile_size(f), .err = err};
  int rc = read_footer(&t);
  if (rc == BFH_OK)
    *out = (rdb_table_footer_t){.size = t.size,
                                .footer_at = t.footer_at,
                                .footer_len = t.footer_len,
                                .format_version = t.fv,
                                .checksum_type = t.cks};
  table_release(&t);
  return rc;
}

int rdb_table_read_blocks_rfile(env_rfile_t *f, const char *path, const block_ref_t *refs, size_t n,
                                rdb_visit_fn fn, void *arg, rdb_read_stats_t *st, err_t *err) {
  return rdb_table_read_blocks_footer(f, path, NULL, refs, n, fn, arg, st, err);
}

/* Blocks refs[0, n) through use: each one the cache holds is walked where it is, each one it
   lacks read from *f, which is opened (from io and t->path) at the first such block when NULL,
   and left to the caller to close; the footer is taken from ft when it was read at f's size,
   else read, at that first block. */
static int read_refs_cached(table_t *t, env_t *io, env_rfile_t **f, const rdb_table_footer_t *ft,
                            const block_ref_t *refs, size_t n, const block_cache_use_t *use) {
  buf_t data = {0};
  int rc = BFH_OK, footer = 0;
  for (size_t i = 0; rc == BFH_OK && !t->stopped && i < n; i++) {
    block_cache_handle_t *bh;
    size_t len;
    const uint8_t *b = block_cache_use_pin(use, refs[i].offset, &len, &bh);
    if (b) {
      if (t->st) t->st->bytes_read += refs[i].size + BLOCK_TRAILER_BYTES;
      rc = visit_data_block(t, refs[i].offset, refs[i].size, b, len);
      block_cache_release(bh);
      continue;
    }
    if (!footer) {
      if (!*f && (rc = open_table(io, t->path, f, t->err)) != BFH_OK) break;
      t->f = *f;
      t->size = env_rfile_size(*f);
      if (ft && ft->size == t->size) { /* read of these very bytes before: not again */
        t->footer_at = ft->footer_at;
        t->footer_len = ft->footer_len;
        t->fv = ft->format_version;
        t->cks = ft->checksum_type;
        t->props.format_version = t->fv;
        t->props.checksum_type = t->cks;
      } else if ((rc = read_footer(t)) != BFH_OK) {
        break;
      }
      footer = 1;
    }
    block_handle_t h = {.offset = refs[i].offset, .size = refs[i].size};
    rc = read_block(t, h, &data, &b, &len, NULL);
    if (rc == BFH_OK) rc = visit_data_block(t, h.offset, h.size, b, len);
    if (rc == BFH_OK) block_cache_use_keep(use, h.offset, b, len);
  }
  free(data.p);
  return rc;
}

void rdb_table_keep_block(const char *path, const rdb_table_footer_t *ft, block_ref_t ref,
                          const uint8_t *raw, const block_cache_use_t *use) {
  table_t t = {.path = path,
               .size = ft->size,
               .footer_at = ft->footer_at,
               .footer_len = ft->footer_len,
               .fv = ft->format_version,
               .cks = ft->checksum_type};
  buf_t data = {0};
  const uint8_t *b;
  size_t len;
  if (check_handle(&t, ref.offset, ref.size) == BFH_OK &&
      decode_block(&t, ref.offset, raw, ref.size, &data, &b, &len) == BFH_OK)
    block_cache_use_keep(use, ref.offset, b, len);
  free(data.p);
}

int rdb_table_read_blocks_footer(env_rfile_t *f, const char *path, const rdb_table_footer_t *ft,
                                 const block_ref_t *refs, size_t n, rdb_visit_fn fn, void *arg,
                                 rdb_read_stats_t *st, err_t *err) {
  return rdb_table_read_blocks_footer_cached(f, path, ft, refs, n, NULL, NULL, 0, fn, arg, st, err);
}

int rdb_table_read_blocks_footer_cached(env_rfile_t *f, const char *path,
                                        const rdb_table_footer_t *ft, const block_ref_t *refs,
                                        size_t n, const block_cache_use_t *use,
                                        const block_needle_t *nd, size_t nn, rdb_visit_fn fn,
                                        void *arg, rdb_read_stats_t *st, err_t *err) {
  table_t t = {.path = path, .fn = fn, .arg = arg, .st = st, .err = err, .nd = nd, .nn = nn};
  int rc = read_refs_cached(&t, NULL, &f, ft, refs, n, use);
  table_release(&t);
  return rc;
}

int rdb_table_read_blocks(env_t *io, const char *path, const block_ref_t *refs, size_t n,
                          rdb_visit_fn fn, void *arg, rdb_read_stats_t *st, err_t *err) {
  return rdb_table_read_blocks_cached(io, path, refs, n, NULL, NULL, 0, fn, arg, st, err);
}

int rdb_table_read_blocks_cached(env_t *io, const char *path, const block_ref_t *refs, size_t n,
                                 const block_cache_use_t *use, const block_needle_t *nd, size_t nn,
                                 rdb_visit_fn fn, void *arg, rdb_read_stats_t *st, err_t *err) {
  table_t t = {.path = path, .fn = fn, .arg = arg, .st = st, .err = err, .nd = nd, .nn = nn};
  env_rfile_t *f = NULL; /* opened, and its footer read, at the first block the cache lacks */
  int rc = read_refs_cached(&t, io, &f, NULL, refs, n, use);
  table_release(&t);
  if (f) env_rfile_close(f);
  return rc;
}

/* ---- The index alone ------------------------------------------------------------------ */

typedef struct index_visit {
  rdb_index_fn fn;
  void *arg;
} index_visit_t;

static int visit_index_entry(table_t *t, block_handle_t h, void *arg) {
  index_visit_t *v = arg;
  size_t n = t->ikey_len;
  if (!t->props.index_key_is_user_key) { /* an internal key: drop its 8-byte trailer */
    if (n < 8) return corrupt(t, t->index_h.offset, "index key shorter than its trailer");
    n -= 8;
  }
  if (v->fn(v->arg, t->ikey, n, h.offset, h.size)) t->stopped = 1;
  return BFH_OK;
}

int rdb_table_index_rfile(env_rfile_t *f, const char *path, rdb_index_fn fn, rdb_visit_fn range_fn,
                          void *arg, rdb_read_stats_t *st, rdb_table_props_t *props, err_t *err) {
  if (props) memset(props, 0, sizeof *props);
  table_t t = {.path = path, .f = f, .size = env_rfile_size(f), .st = st, .err = err};
  int rc = read_meta(&t);
  if (rc == BFH_OK) {
    index_visit_t v = {fn, arg};
    index_walk_t w = {.fn = visit_index_entry, .arg = &v};
    rc = walk_data_handles(&t, &w);
  }
  if (rc == BFH_OK && !t.stopped && range_fn && t.props.has_range_del_block) {
    buf_t buf = {0};
    const uint8_t *b;
    size_t len;
    t.fn = range_fn;
    t.arg = arg;
    rc = read_block(&t, t.range_del_h, &buf, &b, &len, NULL);
    if (rc == BFH_OK) rc = walk_entries(&t, t.range_del_h.offset, b, len, 1);
    free(buf.p);
  }
  give_props(&t, props);
  table_release(&t);
  return rc;
}

/* The persisted value index (persisted_index.h; doc/format.md "Persisted value index").
 *
 * File: header (64 bytes) | directory (dir_len bytes) | crc32c of the directory (masked,
 * fixed32) | each group's rows | each table's map head.
 *   header: magic "BFHINDX1" | version fixed32 (2) | k fixed32 | m fixed64 | seed fixed64 |
 *           lean_bits fixed32 | ngroups fixed32 | ntables fixed32 | chunk_bytes fixed32 |
 *           dir_len fixed64 | crc32c fixed32 (masked, of bytes [0, 56) and [60, 64); version
 *           1: of [0, 56) only) | binding fixed32 (PERSISTED_INDEX_*_TABLES: whose stamps the
 *           tables carry; checked at open; version 1 files are the own engine's: 0)
 *   directory: ngroups x group (40 bytes), then for each group its nchunks chunk CRCs
 *              (fixed32 each), then ntables x table (48 bytes, ascending by number)
 *     group: mf fixed64 | rows fixed64 | row_bytes fixed32 | slots fixed32 |
 *            rows_per_chunk fixed32 | nchunks fixed32 | rows_off fixed64
 *     table: number fixed64 | size fixed64 | stamp fixed64 | head_off fixed64 |
 *            head_len fixed32 | group fixed32 | slot fixed32 | 0 fixed32
 *   chunk c of group g: rows [c rpc, min(rows, (c + 1) rpc)) at rows_off + c rpc row_bytes;
 *   its CRC (masked) is over fixed32 g, fixed32 c and its bytes.
 */
#include "index/persisted_index.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>

#include "bfh.h"
#include "hierarchy/sliced.h"
#include "index/value_block_map.h"
#include "index/value_index_private.h"
#include "util/coding.h"
#include "util/crc32c.h"
#include "util/path.h"
#include "util/sort.h"

#define MAGIC "BFHINDX1"
#define VERSION 2 /* 1: a group's first field was its fold r, not mf (still read) */
#define HEADER_BYTES 64
#define GROUP_BYTES 40
#define TABLE_BYTES 48
#define NO_GROUP 0xffffffffu
#define MAX_HEAD_BYTES (64u << 20)

typedef struct pgroup {
  uint64_t mf, rows, rows_off; /* mf: the bits of its folded leaves (version 1 stored m / mf) */
  fold_map_t map;
  uint32_t row_bytes, slots, rpc, nchunks;
  const uint8_t *crcs; /* nchunks fixed32, in the directory */
  uint8_t **chunk;     /* nchunks: NULL until read and checked (owned) */
  uint8_t *bad;        /* nchunks: 1 if found damaged */
} pgroup_t;

typedef struct ptable {
  uint64_t number, size, stamp, head_off;
  uint32_t head_len, group, slot;
  int bound;
} ptable_t;

struct persisted_index {
  env_rfile_t *f;          /* owned; NULL for a file in memory */
  persisted_index_binding_t binding;
  const uint8_t *mem;      /* the file in memory (borrowed) */
  uint64_t file_len;
  char name[256];          /* for messages */
  uint8_t *dir;            /* the directory (owned) */
  pgroup_t *groups;
  uint32_t ngroups;
  ptable_t *tables;
  size_t ntables, nbound;
  pthread_mutex_t mu; /* chunks, bad, stats */
  persisted_index_stats_t st;
  uint64_t dir_len;     /* the directory's bytes in memory */
  uint64_t chunk_bytes; /* the chunks read and kept (mu) */
};

/* ---- Stamps --------------------------------------------------------------------------- */

int persisted_index_table_stamp(env_t *io, const char *path, uint64_t *stamp, err_t *err) {
  env_rfile_t *f = NULL;
  int rc = env_open_read(io ? io : env_default(), path, &f, err);
  if (rc != BFH_OK) return rc;
  rc = persisted_index_rfile_stamp(f, path, stamp, err);
  env_rfile_close(f);
  return rc;
}

int persisted_index_rfile_stamp(env_rfile_t *f, const char *path, uint64_t *stamp, err_t *err) {
  env_file_stamp_t fs;
  int rc = env_rfile_stamp(f, &fs, err);
  uint8_t buf[40 + 64];
  memset(buf, 0, sizeof buf);
  if (rc == BFH_OK) {
    size_t got = 0;
    if (fs.size < 64)
      rc = err_set(err, BFH_E_CORRUPT, "%s: shorter than a footer", path);
    else
      rc = env_rfile_pread(f, fs.size - 64, buf + 40, 64, &got, err);
    if (rc == BFH_OK && got != 64) rc = err_set(err, BFH_E_CORRUPT, "%s: short read", path);
  }
  if (rc != BFH_OK) return rc;
  encode_fixed64(buf, fs.dev);
  encode_fixed64(buf + 8, fs.ino);
  encode_fixed64(buf + 16, fs.size);
  encode_fixed64(buf + 24, (uint64_t)fs.mtime_ns);
  encode_fixed64(buf + 32, (uint64_t)fs.ctime_ns);
  uint64_t h = bfh_hash64(buf, sizeof buf, 0x62666869647831ull);
  *stamp = h ? h : 1;
  return BFH_OK;
}

/* ---- Writing -------------------------------------------------------------------------- */

static int by_number(const void *a, const void *b) {
  uint64_t x = (*(const persisted_index_table_t *const *)a)->number;
  uint64_t y = (*(const persisted_index_table_t *const *)b)->number;
  return x < y ? -1 : x > y;
}

/* Rows of rb bytes in a chunk of about PERSISTED_INDEX_CHUNK_BYTES (at least one). */
static uint64_t rows_per_chunk(size_t rb) {
  return rb && PERSISTED_INDEX_CHUNK_BYTES / rb ? PERSISTED_INDEX_CHUNK_BYTES / rb : 1;
}

/* The header's CRC: of bytes [0, 56), and from version 2 on of the binding too (a version 1
   file, the own engine's, holds 0 there, outside its CRC). */
static uint32_t header_crc(const uint8_t *hdr) {
  uint32_t crc = crc32c_value(hdr, 56);
  return decode_fixed32(hdr + 8) == 1 ? crc : crc32c_extend(crc, hdr + 60, 4);
}

static uint32_t chunk_crc(uint32_t g, uint32_t c, const uint8_t *data, size_t len) {
  uint8_t pre[8];
  encode_fixed32(pre, g);
  encode_fixed32(pre + 4, c);
  return crc32c_mask(crc32c_extend(crc32c_value(pre, 8), data, len));
}

int persisted_index_write(env_t *io, const char *dir, value_index_t *vi,
                          const persisted_index_table_t *t, size_t n, size_t *written,
                          err_t *err) {
  return persisted_index_write_kind(io, dir, PERSISTED_INDEX_OWN_TABLES, vi, t, n, written, err);
}

/* persisted_index_write_kind into path (by way of tmp), once vi is applied. */
static int write_kind_at(env_t *io, const char *dir, const char *path, const char *tmp,
                         uint32_t kind, value_index_t *vi, const persisted_index_table_t *t,
                         size_t n, size_t *written, err_t *err) {
  int rc = BFH_OK;
  const persisted_index_table_t **sorted = calloc(n ? n : 1, sizeof *sorted);
  uint8_t *tabs = calloc(n ? n : 1, TABLE_BYTES);
  if (!sorted || !tabs) {
    free(sorted);
    free(tabs);
    return err_set(err, BFH_E_NOMEM, "%s: out of memory", path);
  }
  for (size_t i = 0; i < n; i++) sorted[i] = &t[i];
  qsort(sorted, n, sizeof *sorted, by_number);
  pthread_rwlock_rdlock(&vi->lock);
  uint32_t ng = (uint32_t)vi->ngroups;
  /* Sizes: the directory, then the rows, then the heads. */
  uint64_t dir_len = (uint64_t)ng * GROUP_BYTES;
  for (uint32_t g = 0; g < ng; g++) {
    const uint8_t *rows;
    size_t rb, slots;
    const uint64_t *ids;
    sliced_rows(vi->groups[g].sliced, &rows, &rb, &slots, &ids);
    uint64_t nrows = vi->groups[g].mf;
    uint64_t rpc = rows_per_chunk(rb);
    dir_len += 4 * ((nrows + rpc - 1) / rpc);
  }
  size_t nt = 0;
  for (size_t i = 0; i < n; i++) {
    const leaf_t *l = value_index_leaf_find(vi, sorted[i]->number);
    if (!l || !sorted[i]->head || !sorted[i]->stamp || (i && sorted[i - 1]->number == sorted[i]->number))
      continue;
    uint32_t slot = NO_GROUP;
    const uint8_t *rows;
    size_t rb, slots;
    const uint64_t *ids;
    sliced_rows(vi->groups[l->group].sliced, &rows, &rb, &slots, &ids);
    for (size_t j = 0; j < slots; j++)
      if (ids[j] == l->number && sliced_slot_live(vi->groups[l->group].sliced, j)) {
        slot = (uint32_t)j;
        break;
      }
    if (slot == NO_GROUP) continue;
    uint8_t *e = tabs + nt * TABLE_BYTES;
    encode_fixed64(e, sorted[i]->number);
    encode_fixed64(e + 8, sorted[i]->size);
    encode_fixed64(e + 16, sorted[i]->stamp);
    encode_fixed32(e + 32, (uint32_t)sorted[i]->head_len);
    encode_fixed32(e + 36, l->group);
    encode_fixed32(e + 40, slot);
    encode_fixed32(e + 44, 0);
    sorted[nt++] = sorted[i]; /* compacted in place: sorted[nt] is the table of entry nt */
  }
  dir_len += (uint64_t)nt * TABLE_BYTES;
  uint8_t *dirb = calloc(1, dir_len + 4);
  if (!dirb) {
    pthread_rwlock_unlock(&vi->lock);
    free(sorted);
    free(tabs);
    return err_set(err, BFH_E_NOMEM, "%s: out of memory", path);
  }
  uint64_t off = HEADER_BYTES + dir_len + 4, crc_at = (uint64_t)ng * GROUP_BYTES;
  for (uint32_t g = 0; g < ng; g++) {
    const uint8_t *rows;
    size_t rb, slots;
    const uint64_t *ids;
    sliced_rows(vi->groups[g].sliced, &rows, &rb, &slots, &ids);
    uint64_t nrows = vi->groups[g].mf;
    uint64_t rpc = rows_per_chunk(rb);
    uint64_t nch = (nrows + rpc - 1) / rpc;
    uint8_t *e = dirb + (uint64_t)g * GROUP_BYTES;
    encode_fixed64(e, vi->groups[g].mf);
    encode_fixed64(e + 8, rb ? nrows : 0);
    encode_fixed32(e + 16, (uint32_t)rb);
    encode_fixed32(e + 20, (uint32_t)slots);
    encode_fixed32(e + 24, (uint32_t)rpc);
    encode_fixed32(e + 28, (uint32_t)nch);
    encode_fixed64(e + 32, off);
    for (uint64_t c = 0; c < nch; c++) {
      uint64_t r0 = c * rpc, r1 = r0 + rpc < nrows ? r0 + rpc : nrows;
      encode_fixed32(dirb + crc_at + 4 * c,
                     rb ? chunk_crc(g, (uint32_t)c, rows + r0 * rb, (size_t)((r1 - r0) * rb)) : 0);
    }
    crc_at += 4 * nch;
    off += rb ? nrows * rb : 0;
  }
  for (size_t i = 0; i < nt; i++) {
    encode_fixed64(tabs + i * TABLE_BYTES + 24, off);
    off += sorted[i]->head_len;
  }
  memcpy(dirb + crc_at, tabs, nt * TABLE_BYTES);
  encode_fixed32(dirb + dir_len, crc32c_mask(crc32c_value(dirb, dir_len)));
  uint8_t hdr[HEADER_BYTES];
  memset(hdr, 0, sizeof hdr);
  memcpy(hdr, MAGIC, 8);
  encode_fixed32(hdr + 8, VERSION);
  encode_fixed32(hdr + 12, vi->params.k);
  encode_fixed64(hdr + 16, vi->params.m);
  encode_fixed64(hdr + 24, vi->params.seed);
  encode_fixed32(hdr + 32, vi->params.lean_bits);
  encode_fixed32(hdr + 36, ng);
  encode_fixed32(hdr + 40, (uint32_t)nt);
  encode_fixed32(hdr + 44, PERSISTED_INDEX_CHUNK_BYTES);
  encode_fixed64(hdr + 48, dir_len);
  encode_fixed32(hdr + 60, kind);
  encode_fixed32(hdr + 56, crc32c_mask(header_crc(hdr)));
  env_file_t *f = NULL;
  rc = env_open_write(io, tmp, &f, err);
  if (rc == BFH_OK) rc = env_file_append(f, hdr, sizeof hdr, err);
  if (rc == BFH_OK) rc = env_file_append(f, dirb, dir_len + 4, err);
  for (uint32_t g = 0; g < ng && rc == BFH_OK; g++) {
    const uint8_t *rows;
    size_t rb, slots;
    const uint64_t *ids;
    sliced_rows(vi->groups[g].sliced, &rows, &rb, &slots, &ids);
    if (rb) rc = env_file_append(f, rows, (size_t)(vi->groups[g].mf * rb), err);
  }
  pthread_rwlock_unlock(&vi->lock);
  for (size_t i = 0; i < nt && rc == BFH_OK; i++)
    rc = env_file_append(f, sorted[i]->head, sorted[i]->head_len, err);
  if (rc == BFH_OK) rc = env_file_sync(f, err);
  if (f) {
    err_t ce;
    int crc = env_file_close(f, &ce);
    if (rc == BFH_OK && crc != BFH_OK) {
      rc = crc;
      *err = ce;
    }
  }
  if (rc == BFH_OK) rc = env_rename(io, tmp, path, err);
  if (rc == BFH_OK) rc = env_sync_dir(io, dir, err);
  if (rc != BFH_OK) (void)env_unlink(io, tmp, NULL);
  free(dirb);
  free(sorted);
  free(tabs);
  if (rc == BFH_OK && written) *written = nt;
  return rc;
}

int persisted_index_write_kind(env_t *io, const char *dir, uint32_t kind, value_index_t *vi,
                               const persisted_index_table_t *t, size_t n, size_t *written,
                               err_t *err) {
  if (written) *written = 0;
  if (!value_index_lean(vi))
    return err_set(err, BFH_E_INVALID, "%s: the persisted index holds the lean layout only", dir);
  if (!io) io = env_default();
  int rc = value_index_apply(vi, err);
  if (rc != BFH_OK) return rc;
  char *path = path_join(dir, PERSISTED_INDEX_FILE),
       *tmp = path_fmt("%s/%s.tmp", dir, PERSISTED_INDEX_FILE);
  rc = path && tmp ? write_kind_at(io, dir, path, tmp, kind, vi, t, n, written, err)
                   : err_set(err, BFH_E_NOMEM, "%s/%s: out of memory", dir, PERSISTED_INDEX_FILE);
  free(path);
  free(tmp);
  return rc;
}

/* ---- Reading -------------------------------------------------------------------------- */

static int read_at(persisted_index_t *x, uint64_t off, size_t len, uint8_t *buf, err_t *err) {
  if (off > x->file_len || len > x->file_len - off)
    return err_set(err, BFH_E_CORRUPT, "%s: at %llu: %zu bytes past its end", x->name,
                   (unsigned long long)off, len);
  if (x->mem) {
    memcpy(buf, x->mem + off, len);
    return BFH_OK;
  }
  size_t got = 0;
  int rc = env_rfile_pread(x->f, off, buf, len, &got, err);
  if (rc == BFH_OK && got != len)
    rc = err_set(err, BFH_E_CORRUPT, "%s: at %llu: short read (truncated)", x->name,
                 (unsigned long long)off);
  return rc;
}

static int corrupt(persisted_index_t *x, err_t *err, uint64_t off, const char *what) {
  return err_set(err, BFH_E_CORRUPT, "%s: at %llu: %s", x->name, (unsigned long long)off, what);
}

/* Checks the header and the directory and lays out groups and tables. */
static int parse(persisted_index_t *x, const value_index_params_t *p, err_t *err) {
  uint8_t hdr[HEADER_BYTES];
  int rc = read_at(x, 0, sizeof hdr, hdr, err);
  if (rc != BFH_OK) return rc;
  if (memcmp(hdr, MAGIC, 8) != 0) return corrupt(x, err, 0, "bad magic");
  if (crc32c_unmask(decode_fixed32(hdr + 56)) != header_crc(hdr))
    return corrupt(x, err, 56, "header checksum mismatch");
  uint32_t version = decode_fixed32(hdr + 8);
  if (version != VERSION && version != 1)
    return err_set(err, BFH_E_INVALID, "%s: version %u", x->name, version);
  if (decode_fixed32(hdr + 60) != x->binding.kind)
    return err_set(err, BFH_E_INVALID, "%s: made for another engine's tables (binding %u, not %u)",
                   x->name, decode_fixed32(hdr + 60), x->binding.kind);
  if (decode_fixed32(hdr + 12) != p->k || decode_fixed64(hdr + 16) != p->m ||
      decode_fixed64(hdr + 24) != p->seed || decode_fixed32(hdr + 32) != p->lean_bits)
    return err_set(err, BFH_E_INVALID, "%s: made under other index parameters", x->name);
  uint32_t ng = decode_fixed32(hdr + 36), nt = decode_fixed32(hdr + 40);
  uint64_t dir_len = decode_fixed64(hdr + 48);
  if (dir_len > x->file_len || (uint64_t)ng * GROUP_BYTES + (uint64_t)nt * TABLE_BYTES > dir_len)
    return corrupt(x, err, 48, "directory larger than the file");
  if (!(x->dir = malloc(dir_len + 4))) return err_set(err, BFH_E_NOMEM, "out of memory");
  x->dir_len = dir_len + 4;
  rc = read_at(x, HEADER_BYTES, (size_t)dir_len + 4, x->dir, err);
  if (rc != BFH_OK) return rc;
  if (crc32c_unmask(decode_fixed32(x->dir + dir_len)) != crc32c_value(x->dir, (size_t)dir_len))
    return corrupt(x, err, HEADER_BYTES + dir_len, "directory checksum mismatch");
  x->groups = calloc(ng ? ng : 1, sizeof *x->groups);
  x->tables = calloc(nt ? nt : 1, sizeof *x->tables);
  if (!x->groups || !x->tables) return err_set(err, BFH_E_NOMEM, "out of memory");
  x->ngroups = ng;
  uint64_t at = (uint64_t)ng * GROUP_BYTES;
  for (uint32_t g = 0; g < ng; g++) {
    const uint8_t *e = x->dir + (uint64_t)g * GROUP_BYTES;
    pgroup_t *q = &x->groups[g];
    uint64_t key = decode_fixed64(e);
    q->rows = decode_fixed64(e + 8);
    q->row_bytes = decode_fixed32(e + 16);
    q->slots = decode_fixed32(e + 20);
    q->rpc = decode_fixed32(e + 24);
    q->nchunks = decode_fixed32(e + 28);
    q->rows_off = decode_fixed64(e + 32);
    uint64_t off = HEADER_BYTES + (uint64_t)g * GROUP_BYTES;
    if (version == 1) /* the fold r, a divisor of m: folded to m / r bits, the same positions */
      q->mf = key && p->m % key == 0 ? p->m / key : 0;
    else
      q->mf = key <= p->m ? key : 0;
    if (q->mf == 0 || (q->rows && q->rows != q->mf) || q->rpc == 0 ||
        (uint64_t)q->slots > (uint64_t)q->row_bytes * 8 ||
        q->nchunks != (q->rows + q->rpc - 1) / q->rpc || (!q->row_bytes && q->rows))
      return corrupt(x, err, off, "group does not add up");
    fold_map_init(&q->map, p->m, q->mf);
    if (at + 4ull * q->nchunks > dir_len) return corrupt(x, err, off, "chunk CRCs past the directory");
    q->crcs = x->dir + at;
    at += 4ull * q->nchunks;
    uint64_t bytes = q->rows * q->row_bytes;
    if (q->row_bytes && bytes / q->row_bytes != q->rows) return corrupt(x, err, off, "rows overflow");
    if (q->rows_off > x->file_len || bytes > x->file_len - q->rows_off)
      return corrupt(x, err, off, "rows past the end of the file (truncated)");
    q->chunk = calloc(q->nchunks ? q->nchunks : 1, sizeof *q->chunk);
    q->bad = calloc(q->nchunks ? q->nchunks : 1, 1);
    if (!q->chunk || !q->bad) return err_set(err, BFH_E_NOMEM, "out of memory");
  }
  if (at + (uint64_t)nt * TABLE_BYTES != dir_len)
    return corrupt(x, err, HEADER_BYTES + at, "directory length does not add up");
  for (uint32_t i = 0; i < nt; i++) {
    const uint8_t *e = x->dir + at + (uint64_t)i * TABLE_BYTES;
    ptable_t *t = &x->tables[i];
    t->number = decode_fixed64(e);
    t->size = decode_fixed64(e + 8);
    t->stamp = decode_fixed64(e + 16);
    t->head_off = decode_fixed64(e + 24);
    t->head_len = decode_fixed32(e + 32);
    t->group = decode_fixed32(e + 36);
    t->slot = decode_fixed32(e + 40);
    uint64_t off = HEADER_BYTES + at + (uint64_t)i * TABLE_BYTES;
    if (i && t->number <= x->tables[i - 1].number) return corrupt(x, err, off, "tables out of order");
    if (t->group >= ng || t->slot >= x->groups[t->group].slots || t->head_len > MAX_HEAD_BYTES ||
        t->head_off > x->file_len || t->head_len > x->file_len - t->head_off)
      return corrupt(x, err, off, "table entry does not add up (or truncated)");
  }
  x->ntables = nt;
  return BFH_OK;
}

static int open_common(persisted_index_t *x, const value_index_params_t *p,
                       persisted_index_t **out, err_t *err) {
  pthread_mutex_init(&x->mu, NULL);
  int rc = parse(x, p, err);
  if (rc != BFH_OK) {
    persisted_index_destroy(x);
    return rc;
  }
  *out = x;
  return BFH_OK;
}

int persisted_index_open(env_t *io, const char *dir, const value_index_params_t *p,
                         persisted_index_t **out, err_t *err) {
  return persisted_index_open_bound(io, dir, p, NULL, out, err);
}

int persisted_index_open_bound(env_t *io, const char *dir, const value_index_params_t *p,
                               const persisted_index_binding_t *b, persisted_index_t **out,
                               err_t *err) {
  *out = NULL;
  if (!io) io = env_default();
  char *path = path_join(dir, PERSISTED_INDEX_FILE);
  if (!path) return err_set(err, BFH_E_NOMEM, "%s/%s: out of memory", dir, PERSISTED_INDEX_FILE);
  persisted_index_t *x = NULL;
  int rc = env_exists(io, path) ? BFH_OK : BFH_NOT_FOUND;
  if (rc == BFH_OK && !(x = calloc(1, sizeof *x)))
    rc = err_set(err, BFH_E_NOMEM, "%s: out of memory", path);
  if (rc == BFH_OK) {
    snprintf(x->name, sizeof x->name, "%.255s", path);
    if (b) x->binding = *b;
    rc = env_open_read(io, path, &x->f, err);
  }
  free(path);
  if (rc != BFH_OK) {
    free(x);
    return rc;
  }
  x->file_len = env_rfile_size(x->f);
  return open_common(x, p, out, err);
}

int persisted_index_open_mem(const uint8_t *data, size_t len, const value_index_params_t *p,
                             persisted_index_t **out, err_t *err) {
  *out = NULL;
  persisted_index_t *x = calloc(1, sizeof *x);
  if (!x) return err_set(err, BFH_E_NOMEM, "out of memory");
  snprintf(x->name, sizeof x->name, "%s", PERSISTED_INDEX_FILE);
  x->mem = data;
  x->file_len = len;
  return open_common(x, p, out, err);
}

void persisted_index_destroy(persisted_index_t *x) {
  if (!x) return;
  for (uint32_t g = 0; x->groups && g < x->ngroups; g++) {
    for (uint32_t c = 0; x->groups[g].chunk && c < x->groups[g].nchunks; c++)
      free(x->groups[g].chunk[c]);
    free(x->groups[g].chunk);
    free(x->groups[g].bad);
  }
  free(x->groups);
  free(x->tables);
  free(x->dir);
  env_rfile_close(x->f);
  pthread_mutex_destroy(&x->mu);
  free(x);
}

static ptable_t *find_table(const persisted_index_t *x, uint64_t number) {
  size_t i = U64_LOWER_BOUND(x->tables, x->ntables, number, number);
  return i < x->ntables && x->tables[i].number == number ? &x->tables[i] : NULL;
}

int persisted_index_bind(persisted_index_t *x, uint64_t number, uint64_t size, uint64_t stamp) {
  ptable_t *t = find_table(x, number);
  if (!t || t->size != size || t->stamp != stamp || !stamp) return 0;
  if (!t->bound) x->nbound++;
  t->bound = 1;
  return 1;
}

int persisted_index_unbind(persisted_index_t *x, uint64_t number) {
  ptable_t *t = x ? find_table(x, number) : NULL;
  if (!t || !t->bound) return 0;
  t->bound = 0;
  x->nbound--;
  return 1;
}

int persisted_index_covers(const persisted_index_t *x, uint64_t number) {
  const ptable_t *t = x ? find_table(x, number) : NULL;
  return t && t->bound;
}

size_t persisted_index_bound(const persisted_index_t *x) {
  return x->nbound;
}

/* Row `row` of group g, from its chunk (read and checked at its first use); NULL if the
   chunk is damaged (counted in bi once). x->mu held. */
static const uint8_t *group_row(persisted_index_t *x, uint32_t g, uint64_t row, block_index_t *bi) {
  pgroup_t *q = &x->groups[g];
  uint64_t c = row / q->rpc;
  if (row >= q->rows || c >= q->nchunks) return NULL;
  if (q->bad[c]) return NULL;
  if (!q->chunk[c]) {
    uint64_t r0 = c * q->rpc, r1 = r0 + q->rpc < q->rows ? r0 + q->rpc : q->rows;
    size_t len = (size_t)((r1 - r0) * q->row_bytes);
    uint8_t *buf = malloc(len ? len : 1);
    if (!buf) return NULL; /* no memory: maybe, not counted as damage */
    err_t e;
    err_clear(&e);
    uint64_t off = q->rows_off + r0 * q->row_bytes;
    int rc = read_at(x, off, len, buf, &e);
    x->st.chunks_checked++;
    if (rc == BFH_OK && chunk_crc(g, (uint32_t)c, buf, len) != decode_fixed32(q->crcs + 4 * c))
      rc = corrupt(x, &e, off, "chunk checksum mismatch");
    if (rc != BFH_OK) {
      free(buf);
      q->bad[c] = 1;
      x->st.chunks_damaged++;
      if (bi) block_index_count_damaged(bi, &e);
      return NULL;
    }
    q->chunk[c] = buf;
    x->chunk_bytes += len;
  }
  return q->chunk[c] + (row - c * q->rpc) * q->row_bytes;
}

void persisted_index_select(persisted_index_t *x, const probe_t *p, const uint64_t *numbers,
                            size_t n, const uint8_t *ask, uint8_t *scan, block_index_t *bi,
                            size_t *answered) {
  size_t ans = 0;
  if (answered) *answered = 0;
  if (!x || x->nbound == 0) return;
  /* Each group's AND of its k rows, computed at its first covered table. */
  uint8_t **and_rows = calloc(x->ngroups ? x->ngroups : 1, sizeof *and_rows);
  uint8_t *done = calloc(x->ngroups ? x->ngroups : 1, 1);
  if (!and_rows || !done) {
    free(and_rows);
    free(done);
    return; /* no memory: the tables stay selected */
  }
  pthread_mutex_lock(&x->mu);
  for (size_t i = 0; i < n; i++) {
    if (!ask[i]) continue;
    ptable_t *t = find_table(x, numbers[i]);
    if (!t || !t->bound) continue;
    uint32_t g = t->group;
    if (!done[g]) {
      done[g] = 1;
      pgroup_t *q = &x->groups[g];
      uint8_t *acc = q->row_bytes ? malloc(q->row_bytes) : NULL;
      if (acc) {
        memset(acc, 0xff, q->row_bytes);
        probe_t f;
        value_index_fold_probe(p, &q->map, &f);
        for (uint32_t j = 0; j < f.k && acc; j++) {
          const uint8_t *row = group_row(x, g, f.pos[j], bi);
          if (!row) {
            free(acc);
            acc = NULL; /* damaged: every table of the group is maybe */
            break;
          }
          for (uint32_t b = 0; b < q->row_bytes; b++) acc[b] &= row[b];
        }
      }
      and_rows[g] = acc;
    }
    const uint8_t *acc = and_rows[g];
    scan[i] = !acc || ((acc[t->slot / 8] >> (t->slot % 8)) & 1);
    ans++;
    if (scan[i] && bi && !block_index_has(bi, t->number)) {
      uint8_t *head = malloc(t->head_len ? t->head_len : 1);
      err_t e;
      err_clear(&e);
      value_block_map_t *m = NULL;
      int rc = head ? read_at(x, t->head_off, t->head_len, head, &e)
                    : err_set(&e, BFH_E_NOMEM, "out of memory");
      if (rc == BFH_OK && x->binding.open_map)
        rc = x->binding.open_map(x->binding.arg, t->number, t->size, t->stamp, head, t->head_len,
                                 &m, &e);
      else if (rc == BFH_OK)
        rc = value_block_map_open(head, t->head_len, &m, &e);
      free(head);
      if (rc == BFH_OK) {
        x->st.heads_read++;
        (void)block_index_put_map(bi, t->number, m); /* frees m if it cannot keep it */
      } else if (rc != BFH_E_NOMEM && rc != BFH_NOT_FOUND) {
        x->st.heads_damaged++;
        err_prefix(&e, "%s: table %llu: map head: ", x->name, (unsigned long long)t->number);
        block_index_count_damaged(bi, &e);
      }
    }
  }
  pthread_mutex_unlock(&x->mu);
  for (uint32_t g = 0; g < x->ngroups; g++) free(and_rows[g]);
  free(and_rows);
  free(done);
  if (answered) *answered = ans;
}

void persisted_index_get_stats(persisted_index_t *x, persisted_index_stats_t *st) {
  memset(st, 0, sizeof *st);
  if (!x) return;
  pthread_mutex_lock(&x->mu);
  *st = x->st;
  pthread_mutex_unlock(&x->mu);
}

uint64_t persisted_index_memory(persisted_index_t *x) {
  if (!x) return 0;
  pthread_mutex_lock(&x->mu);
  uint64_t b = sizeof *x + x->dir_len + x->ntables * sizeof *x->tables + x->chunk_bytes;
  for (uint32_t g = 0; g < x->ngroups; g++)
    b += sizeof *x->groups + (uint64_t)x->groups[g].nchunks * (sizeof(uint8_t *) + 1);
  pthread_mutex_unlock(&x->mu);
  return b;
}

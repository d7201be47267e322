/* The sidecar cache files of leaves; see leaf_cache.h for their layout. */
#include "index/leaf_cache.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bfh.h"
#include "filters/hash.h"
#include "util/coding.h"
#include "util/crc32c.h"
#include "util/path.h"

/* Tests only (leaf_cache_test_*). */
static _Atomic int64_t stamp_margin_ns = LEAF_CACHE_STAMP_MARGIN_NS;
static _Atomic uint64_t stamped_loads;

/* Checks the header of a cache file of len bytes for table t (by t's stamp when by_stamp,
   else by its tag). On BFH_OK *flags are its flags. Anything else is BFH_E_CORRUPT: the file
   is stale. */
static int check_header(const uint8_t *h, size_t len, const char *path, const leaf_cache_table_t *t,
                        int by_stamp, uint32_t *flags, err_t *err) {
  const int rc = BFH_E_CORRUPT;
  if (len < LEAF_CACHE_HEADER_BYTES)
    return err_set(err, rc, "filter cache %s: %zu bytes, too short for its header", path, len);
  uint32_t version = decode_fixed32(h + 4);
  if (memcmp(h, LEAF_CACHE_MAGIC, 4) != 0)
    return err_set(err, rc, "filter cache %s: bad magic", path);
  /* 1 and 2 are not bound to their table's bytes, 3 has no stamp; 4 has no map (it loads,
     its table keeps its block filter); 5 has a map whose head is of version 2 (it loads) */
  if (version != LEAF_CACHE_VERSION && version != LEAF_CACHE_VERSION_MAP_V2 &&
      version != LEAF_CACHE_VERSION_NO_MAP)
    return err_set(err, rc, "filter cache %s: stale, of version %u, not %u", path, version,
                   LEAF_CACHE_VERSION);
  if (crc32c_unmask(decode_fixed32(h + 44)) != crc32c_value(h, 44))
    return err_set(err, rc, "filter cache %s: header checksum mismatch", path);
  *flags = decode_fixed32(h + 40);
  uint32_t known = LEAF_CACHE_HAS_BLOCKS | (version != LEAF_CACHE_VERSION_NO_MAP ? LEAF_CACHE_HAS_MAP : 0);
  if (*flags & ~known) return err_set(err, rc, "filter cache %s: unknown flags %u", path, *flags);
  if ((*flags & LEAF_CACHE_HAS_MAP) && !(*flags & LEAF_CACHE_HAS_BLOCKS))
    return err_set(err, rc, "filter cache %s: a map without a block filter", path);
  if (decode_fixed64(h + 8) != t->number || decode_fixed64(h + 16) != t->size)
    return err_set(
        err, rc, "filter cache %s: stale, made for table %llu of %llu bytes, not %llu of %llu",
        path, (unsigned long long)decode_fixed64(h + 8), (unsigned long long)decode_fixed64(h + 16),
        (unsigned long long)t->number, (unsigned long long)t->size);
  if (by_stamp) {
    uint64_t stamp = decode_fixed64(h + 32);
    if (!t->stamp || stamp != t->stamp)
      return err_set(
          err, rc, "filter cache %s: made for table %llu with stamp %016llx, not %016llx", path,
          (unsigned long long)t->number, (unsigned long long)stamp, (unsigned long long)t->stamp);
    return BFH_OK;
  }
  if (decode_fixed64(h + 24) != t->tag)
    return err_set(err, rc,
                   "filter cache %s: stale, made for other contents of table %llu (tag %016llx; "
                   "the table's is %016llx)",
                   path, (unsigned long long)t->number, (unsigned long long)decode_fixed64(h + 24),
                   (unsigned long long)t->tag);
  return BFH_OK;
}

/* The leaf at p[0, len) (exactly its serialized size), with parameters (m, k, seed). */
static int load_leaf(const uint8_t *p, size_t len, const char *path, uint64_t m, uint32_t k,
                     uint64_t seed, value_filter_t **out, err_t *err) {
  value_filter_t *f = NULL;
  int rc = value_filter_deserialize(p, len, &f, err);
  if (rc != BFH_OK) return err_prefix(err, "filter cache %s: ", path);
  if (f->m != m || f->k != k || f->seed != seed) {
    value_filter_destroy(f);
    return err_set(err, BFH_E_CORRUPT, "filter cache %s: made with other m, k or seed", path);
  }
  *out = f;
  return BFH_OK;
}

/* Reads exactly n bytes at off of the cache file fd into p. */
static int pread_exact(env_rfile_t *fd, const char *path, uint64_t off, void *p, size_t n,
                       err_t *err) {
  size_t got = 0;
  int rc = env_rfile_pread(fd, off, p, n, &got, err);
  if (rc != BFH_OK) return err_prefix(err, "filter cache %s: ", path);
  if (got != n)
    return err_set(err, BFH_E_CORRUPT, "filter cache %s: %zu bytes at %llu, expected %zu", path,
                   got, (unsigned long long)off, n);
  return BFH_OK;
}

/* The descriptors maps hold, process-wide, and how many they may (leaf_cache.h
   "Descriptors"): a map whose file is held reads a chunk with one pread; past the budget a map
   keeps its file's stamp instead and opens the file again at each chunk read. The budget is
   env_fd_share's. */
static atomic_long g_map_fds_held;
static atomic_long g_map_fd_budget = -1; /* -1: not computed yet */

static long map_fd_budget(void) {
  long b = atomic_load(&g_map_fd_budget);
  if (b >= 0) return b;
  b = (long)env_fd_share();
  atomic_store(&g_map_fd_budget, b);
  return b;
}

void leaf_cache_test_map_fd_budget(long budget) {
  atomic_store(&g_map_fd_budget, budget);
}

/* The chunks of a map loaded from a cache file: the file (held open, or known by its stamp)
   and where they lie. */
typedef struct map_file {
  env_t *io;               /* borrowed: the engine's, which outlives its maps */
  env_rfile_t *fd;         /* the file held open; NULL past the budget */
  env_file_stamp_t stamp;  /* the file's, taken when the map was loaded from it */
  uint64_t base, len;      /* the chunks: [base, base + len) of the file */
  char path[];
} map_file_t;

static int same_stamp(const env_file_stamp_t *a, const env_file_stamp_t *b) {
  return a->dev == b->dev && a->ino == b->ino && a->size == b->size &&
         a->mtime_ns == b->mtime_ns && a->ctime_ns == b->ctime_ns;
}

/* Reads a chunk from the file the map was loaded from. A file opened again must be that very
   file (its stamp): one rewritten or replaced under the name since is refused as damage, and
   the caller reads the table whole; its chunks are never taken for this map's. */
static int map_file_read(void *arg, uint64_t off, size_t len, void *buf, err_t *err) {
  map_file_t *f = arg;
  if (off > f->len || len > f->len - off)
    return err_set(err, BFH_E_CORRUPT,
                   "filter cache %s: map chunk at %llu (%zu bytes) past its "
                   "%llu bytes of chunks",
                   f->path, (unsigned long long)off, len, (unsigned long long)f->len);
  if (f->fd) return pread_exact(f->fd, f->path, f->base + off, buf, len, err);
  env_rfile_t *fd = NULL;
  env_file_stamp_t now;
  int rc = env_open_read(f->io, f->path, &fd, err);
  if (rc == BFH_OK) rc = env_rfile_stamp(fd, &now, err);
  if (rc != BFH_OK) {
    env_rfile_close(fd);
    return err_set(err, BFH_E_CORRUPT, "filter cache %s: cannot be read again for its map: %s",
                   f->path, err->msg);
  }
  if (!same_stamp(&now, &f->stamp))
    rc = err_set(err, BFH_E_CORRUPT, "filter cache %s: replaced since its map was loaded",
                 f->path);
  else
    rc = pread_exact(fd, f->path, f->base + off, buf, len, err);
  env_rfile_close(fd);
  return rc;
}

static void map_file_release(void *arg) {
  map_file_t *f = arg;
  if (f->fd) {
    env_rfile_close(f->fd);
    atomic_fetch_sub(&g_map_fds_held, 1);
  }
  free(f);
}

/* The map section of a v5 file with a map: its sizes, at leaf_end, checked. */
typedef struct sections {
  uint64_t blocks_len, head_len, chunks_len;
} sections_t;

static int read_sections(env_rfile_t *fd, const char *path, uint64_t leaf_end, uint64_t size,
                         sections_t *sec, err_t *err) {
  uint8_t b[LEAF_CACHE_MAP_SECTION_BYTES];
  if (size < leaf_end + sizeof b)
    return err_set(err, BFH_E_CORRUPT, "filter cache %s: %llu bytes, too short for its map", path,
                   (unsigned long long)size);
  int rc = pread_exact(fd, path, leaf_end, b, sizeof b, err);
  if (rc != BFH_OK) return rc;
  if (crc32c_unmask(decode_fixed32(b + 24)) != crc32c_value(b, 24))
    return err_set(err, BFH_E_CORRUPT, "filter cache %s: map section checksum mismatch", path);
  sec->blocks_len = decode_fixed64(b);
  sec->head_len = decode_fixed64(b + 8);
  sec->chunks_len = decode_fixed64(b + 16);
  uint64_t rest = size - leaf_end - sizeof b;
  if (sec->blocks_len > rest || sec->head_len > rest - sec->blocks_len ||
      sec->chunks_len != rest - sec->blocks_len - sec->head_len || sec->head_len > (1u << 30) ||
      sec->blocks_len > (1u << 30))
    return err_set(err, BFH_E_CORRUPT,
                   "filter cache %s: map section sizes %llu, %llu, %llu do not fit its %llu bytes",
                   path, (unsigned long long)sec->blocks_len, (unsigned long long)sec->head_len,
                   (unsigned long long)sec->chunks_len, (unsigned long long)size);
  return BFH_OK;
}

/* Where map_file_read reads a chunk: in the file held open, at its place there; nothing to say
   for a file opened at each read. */
static int map_file_place(void *arg, uint64_t off, size_t len, env_t **io, env_rfile_t **fd,
                          uint64_t *at) {
  map_file_t *f = arg;
  if (!f->fd || off > f->len || len > f->len - off) return 0;
  *io = f->io;
  *fd = f->fd;
  *at = f->base + off;
  return 1;
}

/* Reads n bytes at off into a new buffer *out (the caller frees it). */
static int read_part(env_rfile_t *fd, const char *path, uint64_t off, size_t n, uint8_t **out,
                     err_t *err) {
  uint8_t *p = malloc(n ? n : 1);
  if (!p) return err_set(err, BFH_E_NOMEM, "filter cache %s: no memory for %zu bytes", path, n);
  int rc = pread_exact(fd, path, off, p, n, err);
  if (rc != BFH_OK) {
    free(p);
    return rc;
  }
  *out = p;
  return BFH_OK;
}

/* The map of a file with one: its head parsed, with a reader of its chunks from fd, which it
   then owns (*fdp is set to NULL) while the descriptor budget allows, else from the file
   opened again by path and checked against fd's stamp at each read. */
static int load_map(env_t *io, env_rfile_t **fdp, const char *path, uint64_t head_off,
                    const sections_t *sec, value_block_map_t **out, err_t *err) {
  uint8_t *head = NULL;
  int rc = read_part(*fdp, path, head_off, (size_t)sec->head_len, &head, err);
  value_block_map_t *m = NULL;
  if (rc == BFH_OK) {
    rc = value_block_map_open(head, (size_t)sec->head_len, &m, err);
    if (rc != BFH_OK) err_prefix(err, "filter cache %s: ", path);
  }
  free(head);
  size_t plen = strlen(path) + 1;
  map_file_t *f = rc == BFH_OK ? malloc(sizeof *f + plen) : NULL;
  if (rc == BFH_OK && !f) rc = err_set(err, BFH_E_NOMEM, "filter cache %s: no memory", path);
  if (rc != BFH_OK) {
    value_block_map_destroy(m);
    return rc;
  }
  f->io = io;
  f->fd = NULL;
  f->base = head_off + sec->head_len;
  f->len = sec->chunks_len;
  memcpy(f->path, path, plen);
  rc = env_rfile_stamp(*fdp, &f->stamp, err);
  if (rc != BFH_OK) {
    free(f);
    value_block_map_destroy(m);
    return err_prefix(err, "filter cache %s: ", path);
  }
  if (atomic_fetch_add(&g_map_fds_held, 1) < map_fd_budget()) {
    f->fd = *fdp;
    *fdp = NULL;
  } else {
    atomic_fetch_sub(&g_map_fds_held, 1);
  }
  value_block_map_set_reader(m, map_file_read, f, map_file_release, sizeof *f + plen);
  value_block_map_set_place(m, map_file_place);
  *out = m;
  return BFH_OK;
}

/* Opens the cache file at path. */
static int open_cache_file(env_t *io, const char *path, env_rfile_t **fd, err_t *err) {
  if (!env_exists(io, path)) return err_set(err, BFH_NOT_FOUND, "filter cache %s: absent", path);
  int rc = env_open_read(io, path, fd, err);
  if (rc == BFH_OK) return BFH_OK;
  if (rc != BFH_E_NOMEM && !env_exists(io, path))
    return err_set(err, BFH_NOT_FOUND, "filter cache %s: absent", path);
  return err_prefix(err, "filter cache %s: ", path);
}

/* Reads the header of the cache file open as fd into h and checks it for table t (by its
   stamp with by_stamp, else by its tag); *flags gets its flags. */
static int read_header(env_rfile_t *fd, const char *path, const leaf_cache_table_t *t,
                       int by_stamp, uint8_t h[LEAF_CACHE_HEADER_BYTES], uint32_t *flags,
                       err_t *err) {
  uint64_t size = env_rfile_size(fd);
  if (size < LEAF_CACHE_HEADER_BYTES)
    return err_set(err, BFH_E_CORRUPT, "filter cache %s: %llu bytes, too short for its header",
                   path, (unsigned long long)size);
  int rc = pread_exact(fd, path, 0, h, LEAF_CACHE_HEADER_BYTES, err);
  if (rc == BFH_OK) rc = check_header(h, LEAF_CACHE_HEADER_BYTES, path, t, by_stamp, flags, err);
  return rc;
}

/* leaf_cache_load (by_stamp 0), leaf_cache_load_stamped (1; *tag = the file's tag) and
   leaf_cache_load_map. Reads the file through one open fd: with a map wanted and present,
   the fd stays open in the map (its chunks are read from this very file), and the block
   filter is not read. */
static int load(env_t *io, const char *path, const leaf_cache_table_t *t, int by_stamp,
                uint64_t *tag, uint64_t m, uint32_t k, uint64_t seed, value_filter_t **out,
                block_filter_t **blocks, value_block_map_t **map, int verify_chunks,
                err_t *err) {
  env_rfile_t *fd = NULL;
  int rc = open_cache_file(io, path, &fd, err);
  if (rc != BFH_OK) return rc;
  uint64_t size = env_rfile_size(fd);
  uint8_t h[LEAF_CACHE_HEADER_BYTES];
  uint32_t flags = 0;
  uint64_t leaf_end = LEAF_CACHE_HEADER_BYTES + value_filter_serialized_size(m);
  rc = read_header(fd, path, t, by_stamp, h, &flags, err);
  if (rc == BFH_OK && tag) *tag = decode_fixed64(h + 24);
  int has_blocks = (flags & LEAF_CACHE_HAS_BLOCKS) != 0,
      has_map = (flags & LEAF_CACHE_HAS_MAP) != 0;
  if (rc == BFH_OK && (has_blocks ? size < leaf_end : size != leaf_end))
    rc = err_set(err, BFH_E_CORRUPT, "filter cache %s: %llu bytes, expected %s%llu", path,
                 (unsigned long long)size, has_blocks ? "at least " : "",
                 (unsigned long long)leaf_end);
  sections_t sec = {size - (rc == BFH_OK ? leaf_end : 0), 0, 0};
  uint64_t blocks_off = leaf_end;
  if (rc == BFH_OK && has_map) {
    rc = read_sections(fd, path, leaf_end, size, &sec, err);
    blocks_off = leaf_end + LEAF_CACHE_MAP_SECTION_BYTES;
  }
  value_filter_t *f = NULL;
  block_filter_t *bf = NULL;
  value_block_map_t *vm = NULL;
  uint8_t *buf = NULL;
  if (rc == BFH_OK)
    rc = read_part(fd, path, LEAF_CACHE_HEADER_BYTES, (size_t)(leaf_end - LEAF_CACHE_HEADER_BYTES),
                   &buf, err);
  if (rc == BFH_OK)
    rc = load_leaf(buf, (size_t)(leaf_end - LEAF_CACHE_HEADER_BYTES), path, m, k, seed, &f, err);
  free(buf);
  buf = NULL;
  if (rc == BFH_OK && has_map && map)
    rc = load_map(io, &fd, path, blocks_off + sec.blocks_len, &sec, &vm, err);
  if (rc == BFH_OK && vm && verify_chunks) {
    rc = value_block_map_verify(vm, NULL, NULL, blocks_off + sec.blocks_len + sec.head_len, err);
    if (rc != BFH_OK) err_prefix(err, "filter cache %s: ", path);
  }
  if (rc == BFH_OK && has_blocks && !vm) {
    rc = read_part(fd, path, blocks_off, (size_t)sec.blocks_len, &buf, err);
    if (rc == BFH_OK) {
      rc = block_filter_deserialize(buf, (size_t)sec.blocks_len, &bf, err);
      if (rc != BFH_OK) err_prefix(err, "filter cache %s: ", path);
    }
    free(buf);
  }
  env_rfile_close(fd);
  if (rc != BFH_OK) {
    value_filter_destroy(f);
    value_block_map_destroy(vm);
    return rc;
  }
  *out = f;
  if (blocks)
    *blocks = bf;
  else
    block_filter_destroy(bf);
  if (map) *map = vm;
  return BFH_OK;
}

int leaf_cache_load(env_t *io, const char *path, const leaf_cache_table_t *t, uint64_t m,
                    uint32_t k, uint64_t seed, value_filter_t **out, block_filter_t **blocks,
                    err_t *err) {
  return load(io, path, t, 0, NULL, m, k, seed, out, blocks, NULL, 0, err);
}

int leaf_cache_check(env_t *io, const char *path, const leaf_cache_table_t *t, uint64_t m,
                     uint32_t k, uint64_t seed, err_t *err) {
  value_filter_t *f = NULL;
  block_filter_t *bf = NULL;
  value_block_map_t *vm = NULL;
  int rc = load(io, path, t, 0, NULL, m, k, seed, &f, &bf, NULL, 0, err);
  value_filter_destroy(f);
  f = NULL;
  if (rc == BFH_OK) rc = load(io, path, t, 0, NULL, m, k, seed, &f, NULL, &vm, 1, err);
  value_filter_destroy(f);
  block_filter_destroy(bf);
  value_block_map_destroy(vm);
  return rc;
}

int leaf_cache_load_stamped(env_t *io, const char *path, leaf_cache_table_t *t, uint64_t m,
                            uint32_t k, uint64_t seed, value_filter_t **out,
                            block_filter_t **blocks, err_t *err) {
  return leaf_cache_load_map(io, path, t, 1, m, k, seed, out, blocks, NULL, err);
}

int leaf_cache_restamped(env_t *io, const char *path, const leaf_cache_table_t *t, uint8_t **out,
                         size_t *len, err_t *err) {
  void *data = NULL;
  size_t n = 0;
  int rc = env_read_file(io, path, &data, &n, err);
  if (rc != BFH_OK) return err_prefix(err, "filter cache %s: ", path);
  uint8_t *b = data;
  uint32_t flags;
  rc = check_header(b, n, path, t, 0, &flags, err);
  if (rc == BFH_OK && decode_fixed32(b + 4) != LEAF_CACHE_VERSION)
    rc = err_set(err, BFH_E_CORRUPT, "filter cache %s: of an older version", path);
  if (rc != BFH_OK) {
    free(data);
    return rc;
  }
  encode_fixed64(b + 32, t->stamp);
  encode_fixed32(b + 44, crc32c_mask(crc32c_value(b, 44)));
  *out = b;
  *len = n;
  return BFH_OK;
}

int leaf_cache_load_map(env_t *io, const char *path, leaf_cache_table_t *t, int by_stamp,
                        uint64_t m, uint32_t k, uint64_t seed, value_filter_t **out,
                        block_filter_t **blocks, value_block_map_t **map, err_t *err) {
  uint64_t tag = 0;
  int rc =
      load(io, path, t, by_stamp, by_stamp ? &tag : NULL, m, k, seed, out, blocks, map, 0, err);
  if (rc == BFH_OK && by_stamp) {
    t->tag = tag;
    atomic_fetch_add(&stamped_loads, 1);
  }
  return rc;
}

/* Opens the cache file at path of table t by t's stamp and finds its map head: on BFH_OK
   *fd is open (the caller closes it), *head the head's bytes (malloc'd, the caller frees
   them), *head_off where they lie and *sec the map section. The leaf and the block filter are
   not read. */
static int find_map_head(env_t *io, const char *path, const leaf_cache_table_t *t, uint64_t m,
                         env_rfile_t **fd, sections_t *sec, uint64_t *head_off, uint8_t **head,
                         err_t *err) {
  *fd = NULL;
  *head = NULL;
  if (!t->stamp)
    return err_set(err, BFH_E_CORRUPT, "filter cache %s: table %llu has no stamp", path,
                   (unsigned long long)t->number);
  int rc = open_cache_file(io, path, fd, err);
  if (rc != BFH_OK) return rc;
  uint64_t size = env_rfile_size(*fd);
  uint8_t h[LEAF_CACHE_HEADER_BYTES];
  uint32_t flags = 0;
  uint64_t leaf_end = LEAF_CACHE_HEADER_BYTES + value_filter_serialized_size(m);
  rc = read_header(*fd, path, t, 1, h, &flags, err);
  if (rc == BFH_OK && !(flags & LEAF_CACHE_HAS_MAP))
    rc = err_set(err, BFH_E_CORRUPT, "filter cache %s: holds no map", path);
  if (rc == BFH_OK) rc = read_sections(*fd, path, leaf_end, size, sec, err);
  *head_off = leaf_end + LEAF_CACHE_MAP_SECTION_BYTES + sec->blocks_len;
  if (rc == BFH_OK) rc = read_part(*fd, path, *head_off, (size_t)sec->head_len, head, err);
  if (rc != BFH_OK) {
    env_rfile_close(*fd);
    *fd = NULL;
  }
  return rc;
}

int leaf_cache_map_head(env_t *io, const char *path, const leaf_cache_table_t *t, uint64_t m,
                        uint8_t **head, size_t *head_len, err_t *err) {
  env_rfile_t *fd;
  sections_t sec;
  uint64_t off;
  int rc = find_map_head(io, path, t, m, &fd, &sec, &off, head, err);
  env_rfile_close(fd);
  if (rc == BFH_OK) *head_len = (size_t)sec.head_len;
  return rc;
}

int leaf_cache_load_map_by_head(env_t *io, const char *path, const leaf_cache_table_t *t,
                                uint64_t m, const uint8_t *head, size_t head_len,
                                value_block_map_t **map, err_t *err) {
  *map = NULL;
  env_rfile_t *fd;
  sections_t sec;
  uint64_t off;
  uint8_t *own = NULL;
  int rc = find_map_head(io, path, t, m, &fd, &sec, &off, &own, err);
  if (rc == BFH_OK && (sec.head_len != head_len || memcmp(own, head, head_len) != 0))
    rc = err_set(err, BFH_E_CORRUPT, "filter cache %s: its map head is not the one expected", path);
  free(own);
  if (rc == BFH_OK) rc = load_map(io, &fd, path, off, &sec, map, err);
  env_rfile_close(fd);
  return rc;
}

void leaf_cache_test_set_stamp_margin(int64_t ns) {
  atomic_store(&stamp_margin_ns, ns < 0 ? LEAF_CACHE_STAMP_MARGIN_NS : ns);
}

uint64_t leaf_cache_test_stamped_loads(void) {
  return atomic_load(&stamped_loads);
}

uint64_t leaf_cache_stamp(const env_file_stamp_t *st, const uint8_t *footer, size_t footer_len,
                          int64_t now_ns) {
  int64_t margin = atomic_load(&stamp_margin_ns);
  int64_t newest = st->mtime_ns > st->ctime_ns ? st->mtime_ns : st->ctime_ns;
  if (newest > now_ns || now_ns - newest < margin) return 0; /* racily clean: no stamp */
  uint8_t b[40];
  encode_fixed64(b, st->dev);
  encode_fixed64(b + 8, st->ino);
  encode_fixed64(b + 16, st->size);
  encode_fixed64(b + 24, (uint64_t)st->mtime_ns);
  encode_fixed64(b + 32, (uint64_t)st->ctime_ns);
  uint64_t h = bfh_hash64(b, sizeof b, LEAF_CACHE_STAMP_SEED);
  h = bfh_hash64(footer, footer_len, h);
  return h ? h : 1;
}

int leaf_cache_encode(const leaf_cache_table_t *t, const value_filter_t *f,
                      const block_filter_t *blocks, uint8_t **out, size_t *len, err_t *err) {
  return leaf_cache_encode_map(t, f, blocks, NULL, out, len, err);
}

int leaf_cache_encode_map(const leaf_cache_table_t *t, const value_filter_t *f,
                          const block_filter_t *blocks, const leaf_cache_map_bytes_t *map,
                          uint8_t **out, size_t *len, err_t *err) {
  if (map && !map->head) map = NULL;
  if (map && !blocks)
    return err_set(err, BFH_E_INVALID, "filter cache of table %llu: a map without a block filter",
                   (unsigned long long)t->number);
  size_t leaf_end = LEAF_CACHE_HEADER_BYTES + value_filter_serialized_size(f->m);
  size_t blen = blocks ? block_filter_serialized_size(blocks) : 0;
  size_t n = leaf_end + blen;
  if (map) n += LEAF_CACHE_MAP_SECTION_BYTES + map->head_len + map->chunks_len;
  uint8_t *buf = malloc(n);
  if (!buf)
    return err_set(err, BFH_E_NOMEM, "filter cache of table %llu: no memory",
                   (unsigned long long)t->number);
  memcpy(buf, LEAF_CACHE_MAGIC, 4);
  encode_fixed32(buf + 4, LEAF_CACHE_VERSION);
  encode_fixed64(buf + 8, t->number);
  encode_fixed64(buf + 16, t->size);
  encode_fixed64(buf + 24, t->tag);
  encode_fixed64(buf + 32, t->stamp);
  encode_fixed32(buf + 40,
                 (blocks ? LEAF_CACHE_HAS_BLOCKS : 0) | (map ? LEAF_CACHE_HAS_MAP : 0)); /* flags */
  encode_fixed32(buf + 44, crc32c_mask(crc32c_value(buf, 44)));
  value_filter_serialize(f, buf + LEAF_CACHE_HEADER_BYTES);
  uint8_t *p = buf + leaf_end;
  if (map) {
    encode_fixed64(p, blen);
    encode_fixed64(p + 8, map->head_len);
    encode_fixed64(p + 16, map->chunks_len);
    encode_fixed32(p + 24, crc32c_mask(crc32c_value(p, 24)));
    p += LEAF_CACHE_MAP_SECTION_BYTES;
  }
  if (blocks) block_filter_serialize(blocks, p);
  p += blen;
  if (map) {
    memcpy(p, map->head, map->head_len);
    memcpy(p + map->head_len, map->chunks, map->chunks_len);
  }
  *out = buf;
  *len = n;
  return BFH_OK;
}

int leaf_cache_write(env_t *io, const char *path, const uint8_t *buf, size_t n, err_t *err) {
  const char *slash = strrchr(path, '/');
  char *tmp = path_fmt("%s.tmp", path);
  char *dir = slash ? path_fmt("%.*s", (int)(slash - path), path) : strdup(".");
  if (!tmp || !dir) {
    free(tmp);
    free(dir);
    return err_set(err, BFH_E_NOMEM, "filter cache %s: no memory for its paths", path);
  }
  /* tmp: written and fdatasynced, renamed, and the rename made durable (with leaves on disk
     the leaf lives in this file from the moment it is added). */
  int rc = env_write_file(io, tmp, buf, n, err);
  if (rc == BFH_OK) rc = env_rename(io, tmp, path, err);
  if (rc == BFH_OK) rc = env_sync_dir(io, dir, err);
  if (rc != BFH_OK) {
    (void)env_unlink(io, tmp, NULL);
    err_prefix(err, "filter cache %s: ", path);
  }
  free(tmp);
  free(dir);
  return rc;
}

int leaf_cache_store(env_t *io, const char *path, const leaf_cache_table_t *t,
                     const value_filter_t *f, const block_filter_t *blocks, err_t *err) {
  return leaf_cache_store_map(io, path, t, f, blocks, NULL, err);
}

int leaf_cache_store_map(env_t *io, const char *path, const leaf_cache_table_t *t,
                         const value_filter_t *f, const block_filter_t *blocks,
                         const leaf_cache_map_bytes_t *map, err_t *err) {
  uint8_t *buf = NULL;
  size_t n = 0;
  int rc = leaf_cache_encode_map(t, f, blocks, map, &buf, &n, err);
  if (rc != BFH_OK) return rc;
  rc = leaf_cache_write(io, path, buf, n, err);
  free(buf);
  return rc;
}

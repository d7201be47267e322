/* The sidecar cache files of leaves; see leaf_cache.h for their layout. */
#include "lsm_hooks/index/leaf_cache.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bfh.h"
#include "filters/hash.h"
#include "util/coding.h"
#include "util/crc32c.h"

/* Tests only (leaf_cache_test_*). */
static _Atomic int64_t stamp_margin_ns = LEAF_CACHE_STAMP_MARGIN_NS;
static _Atomic uint64_t stamped_loads;

/* Reads the whole cache file at path into *buf (malloc'd, the caller frees it). */
static int read_cache_file(env_t *io, const char *path, uint8_t **buf, size_t *len, err_t *err) {
  if (!env_exists(io, path)) return err_set(err, BFH_NOT_FOUND, "filter cache %s: absent", path);
  env_rfile_t *fd = NULL;
  int rc = env_open_read(io, path, &fd, err);
  if (rc != BFH_OK) {
    if (rc != BFH_E_NOMEM && !env_exists(io, path))
      return err_set(err, BFH_NOT_FOUND, "filter cache %s: absent", path);
    return err_prefix(err, "filter cache %s: ", path);
  }
  size_t n = (size_t)env_rfile_size(fd), got = 0;
  uint8_t *p = malloc(n ? n : 1);
  if (!p) {
    env_rfile_close(fd);
    return err_set(err, BFH_E_NOMEM, "filter cache %s: no memory for %zu bytes", path, n);
  }
  rc = env_rfile_pread(fd, 0, p, n, &got, err);
  env_rfile_close(fd);
  if (rc != BFH_OK) {
    free(p);
    return err_prefix(err, "filter cache %s: ", path);
  }
  *buf = p;
  *len = got; /* less than n if the file shrank: then its length is wrong */
  return BFH_OK;
}

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
  if (version != LEAF_CACHE_VERSION) /* 1 and 2 are not bound to their table's bytes */
    return err_set(err, rc, "filter cache %s: stale, of version %u, not %u", path, version,
                   LEAF_CACHE_VERSION);
  if (crc32c_unmask(decode_fixed32(h + 44)) != crc32c_value(h, 44))
    return err_set(err, rc, "filter cache %s: header checksum mismatch", path);
  *flags = decode_fixed32(h + 40);
  if (*flags & ~LEAF_CACHE_HAS_BLOCKS)
    return err_set(err, rc, "filter cache %s: unknown flags %u", path, *flags);
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

/* leaf_cache_load (by_stamp 0) and leaf_cache_load_stamped (1; *tag = the file's tag). */
static int load(env_t *io, const char *path, const leaf_cache_table_t *t, int by_stamp,
                uint64_t *tag, uint64_t m, uint32_t k, uint64_t seed, value_filter_t **out,
                block_filter_t **blocks, err_t *err) {
  uint8_t *buf = NULL;
  size_t len = 0;
  int rc = read_cache_file(io, path, &buf, &len, err);
  if (rc != BFH_OK) return rc;
  uint32_t flags = 0;
  size_t leaf_end = LEAF_CACHE_HEADER_BYTES + value_filter_serialized_size(m);
  rc = check_header(buf, len, path, t, by_stamp, &flags, err);
  if (rc == BFH_OK && tag) *tag = decode_fixed64(buf + 24);
  int has_blocks = (flags & LEAF_CACHE_HAS_BLOCKS) != 0;
  if (rc == BFH_OK && (has_blocks ? len < leaf_end : len != leaf_end))
    rc = err_set(err, BFH_E_CORRUPT, "filter cache %s: %zu bytes, expected %s%zu", path, len,
                 has_blocks ? "at least " : "", leaf_end);
  value_filter_t *f = NULL;
  block_filter_t *bf = NULL;
  if (rc == BFH_OK)
    rc = load_leaf(buf + LEAF_CACHE_HEADER_BYTES, leaf_end - LEAF_CACHE_HEADER_BYTES, path, m, k,
                   seed, &f, err);
  if (rc == BFH_OK && has_blocks) {
    rc = block_filter_deserialize(buf + leaf_end, len - leaf_end, &bf, err);
    if (rc != BFH_OK) err_prefix(err, "filter cache %s: ", path);
  }
  free(buf);
  if (rc != BFH_OK) {
    value_filter_destroy(f);
    return rc;
  }
  *out = f;
  if (blocks)
    *blocks = bf;
  else
    block_filter_destroy(bf);
  return BFH_OK;
}

int leaf_cache_load(env_t *io, const char *path, const leaf_cache_table_t *t, uint64_t m,
                    uint32_t k, uint64_t seed, value_filter_t **out, block_filter_t **blocks,
                    err_t *err) {
  return load(io, path, t, 0, NULL, m, k, seed, out, blocks, err);
}

int leaf_cache_load_stamped(env_t *io, const char *path, leaf_cache_table_t *t, uint64_t m,
                            uint32_t k, uint64_t seed, value_filter_t **out,
                            block_filter_t **blocks, err_t *err) {
  uint64_t tag = 0;
  int rc = load(io, path, t, 1, &tag, m, k, seed, out, blocks, err);
  if (rc == BFH_OK) {
    t->tag = tag;
    atomic_fetch_add(&stamped_loads, 1);
  }
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
  size_t leaf_end = LEAF_CACHE_HEADER_BYTES + value_filter_serialized_size(f->m);
  size_t n = leaf_end + (blocks ? block_filter_serialized_size(blocks) : 0);
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
  encode_fixed32(buf + 40, blocks ? LEAF_CACHE_HAS_BLOCKS : 0); /* flags */
  encode_fixed32(buf + 44, crc32c_mask(crc32c_value(buf, 44)));
  value_filter_serialize(f, buf + LEAF_CACHE_HEADER_BYTES);
  if (blocks) block_filter_serialize(blocks, buf + leaf_end);
  *out = buf;
  *len = n;
  return BFH_OK;
}

int leaf_cache_write(env_t *io, const char *path, const uint8_t *buf, size_t n, err_t *err) {
  char tmp[4200], dir[4200];
  if ((size_t)snprintf(tmp, sizeof tmp, "%s.tmp", path) >= sizeof tmp)
    return err_set(err, BFH_E_INVALID, "filter cache %s: path too long", path);
  snprintf(dir, sizeof dir, "%s", path);
  char *slash = strrchr(dir, '/');
  if (slash)
    *slash = '\0';
  else
    snprintf(dir, sizeof dir, ".");
  /* tmp: written and fdatasynced, renamed, and the rename made durable (with leaves on disk
     the leaf lives in this file from the moment it is added). */
  int rc = env_write_file(io, tmp, buf, n, err);
  if (rc == BFH_OK) rc = env_rename(io, tmp, path, err);
  if (rc == BFH_OK) rc = env_sync_dir(io, dir, err);
  if (rc != BFH_OK) {
    (void)env_unlink(io, tmp, NULL);
    return err_prefix(err, "filter cache %s: ", path);
  }
  return BFH_OK;
}

int leaf_cache_store(env_t *io, const char *path, const leaf_cache_table_t *t,
                     const value_filter_t *f, const block_filter_t *blocks, err_t *err) {
  uint8_t *buf = NULL;
  size_t n = 0;
  int rc = leaf_cache_encode(t, f, blocks, &buf, &n, err);
  if (rc != BFH_OK) return rc;
  rc = leaf_cache_write(io, path, buf, n, err);
  free(buf);
  return rc;
}

/* Table reader (lsm/table.h; the file layout is at the top of table_builder.c).
 *
 * The file is read with pread(2), or copied out of a mapping of it (table_read_mapped).
 * Open reads, verifies and keeps in memory:
 * the footer, the index (parsed into arrays of separator keys and data block handles) and
 * the meta index; the key filter is read and verified by the first lookup that needs it
 * (load_filter), so that an open which never gets by key never reads it. Every later read
 * copies a block (or a run of blocks) into a buffer of the caller's and checks each block's
 * CRC there, every time: the bytes served are the bytes checked (a get may instead copy its
 * block from the database's block cache, lsm/block_cache.h, which holds copies checked when
 * they entered). A table changed under an open handle therefore gives a checksum error,
 * never a wrong answer, and a truncated one a short read. A mapping raises SIGBUS on a page
 * past the new end of the file; a mapped table copies out of it only with mapped_copy
 * (util/mapped_copy.h), which catches that fault and makes it the same short read.
 */
#include "lsm/table.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "filters/blocked_filter.h"
#include "filters/hash.h"
#include "lsm/block.h"
#include "lsm/block_cache.h"
#include "util/coding.h"
#include "util/crc32c.h"
#include "util/mapped_copy.h"
#include "util/path.h"

typedef struct meta_entry {
  char *name; /* owned, NUL-terminated */
  block_handle_t h;
  uint64_t hash; /* name_hash(name): find_meta compares it first, in the entry */
} meta_entry_t;

/* The hash of a NUL-terminated name. A search looks a meta block up by name for each chunk of
   a map it reads, and each entry's name is an allocation of its own: comparing hashes first
   reads one name, the one that matches, not every name before it. */
static uint64_t name_hash(const char *name) {
  return bfh_hash64(name, strlen(name), 0);
}

/* How far ahead a sequential walk over the data blocks reads in one pread. */
#define RUN_BYTES (256u << 10)

struct table {
  atomic_int refs;
  env_rfile_t *file;
  uint64_t size; /* at open */
  uint64_t number;
  char name[64]; /* base name of the file, for messages */
  uint64_t entries;
  /* index */
  uint32_t nblocks;
  block_handle_t *handles;
  uint8_t *keys;     /* separator keys, concatenated */
  uint32_t *key_off; /* nblocks + 1 offsets into keys */
  /* What index_find searches first: the separators' user keys share their first fp_skip
     bytes; key_fp[i] is the next 8 bytes of separator i's user key (zero-padded), big-endian,
     so that comparing two fps is comparing those bytes (fp_of). */
  size_t fp_skip;
  uint64_t *key_fp;
  /* key filter (a copy, owned): read and checked by the first lookup that needs it
     (load_filter), not at open, so that an open that only searches by value or scans never
     reads it. filter_h is its block; filter stays NULL until read (filter_mu). */
  int has_filter;
  block_handle_t filter_h;
  pthread_mutex_t filter_mu;
  _Atomic(uint8_t *) filter;
  size_t filter_size; /* filter_h.size */
  /* meta index */
  meta_entry_t *meta;
  size_t nmeta;
  _Atomic uint64_t blocks_read; /* data blocks read and checked, for table_get_stats */
  block_cache_t *cache; /* NULL, or where gets keep the blocks they read (borrowed) */
  uint64_t cache_id;    /* this open's id in it */
  size_t index_bytes;
  const uint8_t *map; /* NULL, or the file mapped (table_read_mapped): reads copy from it */
};

void table_buf_init(table_buf_t *b, uint8_t *stack, size_t cap) {
  b->p = stack;
  b->cap = stack ? cap : 0;
  b->heap = NULL;
}

void table_buf_release(table_buf_t *b) {
  if (!b) return;
  free(b->heap);
  b->heap = NULL;
  b->p = NULL;
  b->cap = 0;
}

/* Makes room for n bytes (the contents need not be kept); 0 or -1 on no memory. */
static int buf_reserve(table_buf_t *b, size_t n) {
  if (n <= b->cap) return 0;
  uint8_t *p = malloc(n);
  if (!p) return -1;
  free(b->heap);
  b->heap = b->p = p;
  b->cap = n;
  return 0;
}

char *table_file_path(const char *dir, uint64_t number) {
  return path_fmt("%s/%06llu.sst", dir, (unsigned long long)number);
}

static int corrupt(const table_t *t, uint64_t offset, const char *what, err_t *err) {
  return err_set(err, ST_E_CORRUPT, "table %s: block at %llu: %s", t->name,
                 (unsigned long long)offset, what);
}

static void table_free(table_t *t) {
  if (!t) return;
  env_rfile_close(t->file);
  free(atomic_load(&t->filter));
  pthread_mutex_destroy(&t->filter_mu);
  free(t->handles);
  free(t->keys);
  free(t->key_off);
  free(t->key_fp);
  for (size_t i = 0; i < t->nmeta; i++) free(t->meta[i].name);
  free(t->meta);
  free(t);
}

/* internal_key_compare for cursors over data blocks, whose keys are checked only when an
   entry is used (internal_key_parse): a key shorter than the tag, which a crafted block with
   a valid CRC can hold, compares bytewise instead of making the comparison read before it. */
static int data_key_compare(const void *a, size_t alen, const void *b, size_t blen) {
  if (alen < INTERNAL_KEY_TAG_BYTES || blen < INTERNAL_KEY_TAG_BYTES)
    return bytewise_compare(a, alen, b, blen);
  return internal_key_compare(a, alen, b, blen);
}

/* 1 if [offset, offset + size + trailer) lies before the footer. */
static int handle_ok(const table_t *t, const block_handle_t *h) {
  uint64_t limit = t->size - TABLE_FOOTER_BYTES;
  return h->offset <= limit && h->size <= limit - h->offset &&
         BLOCK_TRAILER_BYTES <= limit - h->offset - h->size;
}

/* Reads `n` bytes at `offset` into p, from the mapping if there is one, else with pread:
   ST_OK, the io layer's error, or ST_E_CORRUPT naming `block` if the file now ends before
   them (it shrank since the open). */
static int read_at(const table_t *t, uint64_t offset, uint8_t *p, size_t n, uint64_t block,
                   err_t *err) {
  if (t->map) {
    if (offset <= t->size && n <= t->size - offset && mapped_copy(p, t->map + offset, n) == 0)
      return ST_OK;
  } else {
    size_t got;
    int rc = env_rfile_pread(t->file, offset, p, n, &got, err);
    if (rc) return rc;
    if (got == n) return ST_OK;
  }
  return corrupt(t, block, "truncated: the file ends inside the block", err);
}

/* read_at into buf->p, made large enough. */
static int read_span(const table_t *t, uint64_t offset, size_t n, uint64_t block, table_buf_t *buf,
                     err_t *err) {
  if (buf_reserve(buf, n)) return err_set(err, ST_E_NOMEM, "table %s: out of memory", t->name);
  return read_at(t, offset, buf->p, n, block, err);
}

/* Reads the block at h into buf, verifies its CRC there and parses it (b may be NULL: only
   read and verify). The block's contents are buf->p[0, h->size). */
static int read_checked(const table_t *t, const block_handle_t *h, table_buf_t *buf, block_t *b,
                        err_t *err) {
  if (!handle_ok(t, h)) return corrupt(t, h->offset, "block handle out of bounds", err);
  int rc = read_span(t, h->offset, (size_t)h->size + BLOCK_TRAILER_BYTES, h->offset, buf, err);
  if (rc) return rc;
  if (block_trailer_check(buf->p, (size_t)h->size))
    return corrupt(t, h->offset, "checksum mismatch", err);
  if (b && block_parse(b, buf->p, (size_t)h->size))
    return corrupt(t, h->offset, "malformed block", err);
  return ST_OK;
}

/* The index and the meta index are parsed into arrays owned by t; their block is read into a
   buffer freed when the parse ends. */
static int parse_index(table_t *t, const block_handle_t *ih, const block_t *bp, err_t *err);
static int parse_meta(table_t *t, const block_handle_t *mh, const block_t *bp, err_t *err);

static int load_block(table_t *t, const block_handle_t *h,
                      int (*parse)(table_t *, const block_handle_t *, const block_t *, err_t *),
                      err_t *err) {
  table_buf_t buf;
  table_buf_init(&buf, NULL, 0);
  block_t b;
  int rc = read_checked(t, h, &buf, &b, err);
  if (!rc) rc = parse(t, h, &b, err);
  table_buf_release(&buf);
  return rc;
}

/* Bytes [skip, skip + 8) of user key k (len bytes), zero-padded, as a big-endian number: for
   keys that share their first skip bytes, fp_of(a) < fp_of(b) implies a < b, and
   fp_of(a) > fp_of(b) implies a > b (equal fps decide nothing). */
static uint64_t fp_of(const uint8_t *k, size_t len, size_t skip) {
  uint64_t v = 0;
  for (size_t j = 0; j < 8; j++) v = v << 8 | (skip + j < len ? k[skip + j] : 0);
  return v;
}

static int parse_index(table_t *t, const block_handle_t *ih, const block_t *bp, err_t *err) {
  block_t b = *bp;
  /* Count entries (restart interval 1: one restart per entry). */
  size_t cap = b.nrestarts, n = 0, kbytes = 0;
  t->handles = malloc((cap ? cap : 1) * sizeof *t->handles);
  t->key_off = malloc((cap + 1) * sizeof *t->key_off);
  size_t kcap = b.restarts_offset ? b.restarts_offset : 1;
  t->keys = malloc(kcap);
  if (!t->handles || !t->key_off || !t->keys)
    return err_set(err, ST_E_NOMEM, "table %s: out of memory", t->name);
  block_cursor_t c;
  block_cursor_init(&c, &b, internal_key_compare);
  for (block_cursor_seek_first(&c); block_cursor_valid(&c); block_cursor_next(&c)) {
    block_handle_t h;
    const uint8_t *v = c.val;
    if (n == cap || c.key_len < INTERNAL_KEY_TAG_BYTES || kbytes + c.key_len > kcap ||
        block_handle_decode(v, v + c.val_len, &h) != v + c.val_len || !handle_ok(t, &h) ||
        (n && internal_key_compare(t->keys + t->key_off[n - 1], kbytes - t->key_off[n - 1], c.key,
                                   c.key_len) >= 0)) {
      block_cursor_release(&c);
      return corrupt(t, ih->offset, "malformed index entry", err);
    }
    t->key_off[n] = (uint32_t)kbytes;
    memcpy(t->keys + kbytes, c.key, c.key_len);
    kbytes += c.key_len;
    t->handles[n++] = h;
  }
  int bad = block_cursor_corrupt(&c);
  block_cursor_release(&c);
  if (bad) return corrupt(t, ih->offset, "malformed index block", err);
  t->key_off[n] = (uint32_t)kbytes;
  t->nblocks = (uint32_t)n;
  /* The separators' common user-key prefix, and each one's next 8 bytes. */
  size_t skip = n ? t->key_off[1] - INTERNAL_KEY_TAG_BYTES : 0;
  for (size_t i = 1; i < n && skip; i++) {
    const uint8_t *a = t->keys, *b = t->keys + t->key_off[i];
    size_t blen = t->key_off[i + 1] - t->key_off[i] - INTERNAL_KEY_TAG_BYTES, j = 0;
    if (blen < skip) skip = blen;
    while (j < skip && a[j] == b[j]) j++;
    skip = j;
  }
  t->fp_skip = skip;
  if (!(t->key_fp = malloc((n ? n : 1) * sizeof *t->key_fp)))
    return err_set(err, ST_E_NOMEM, "table %s: out of memory", t->name);
  for (size_t i = 0; i < n; i++)
    t->key_fp[i] = fp_of(t->keys + t->key_off[i],
                         t->key_off[i + 1] - t->key_off[i] - INTERNAL_KEY_TAG_BYTES, skip);
  t->index_bytes =
      kbytes + n * (sizeof *t->handles + sizeof *t->key_off + sizeof *t->key_fp);
  return ST_OK;
}

static int parse_meta(table_t *t, const block_handle_t *mh, const block_t *bp, err_t *err) {
  block_t b = *bp;
  int rc;
  t->meta = calloc(b.nrestarts ? b.nrestarts : 1, sizeof *t->meta);
  if (!t->meta) return err_set(err, ST_E_NOMEM, "table %s: out of memory", t->name);
  block_cursor_t c;
  block_cursor_init(&c, &b, bytewise_compare);
  rc = ST_OK;
  for (block_cursor_seek_first(&c); block_cursor_valid(&c); block_cursor_next(&c)) {
    block_handle_t h;
    const uint8_t *v = c.val;
    if (t->nmeta == b.nrestarts || block_handle_decode(v, v + c.val_len, &h) != v + c.val_len ||
        !handle_ok(t, &h) || memchr(c.key, 0, c.key_len)) {
      rc = corrupt(t, mh->offset, "malformed meta index entry", err);
      break;
    }
    meta_entry_t *m = &t->meta[t->nmeta];
    if (!(m->name = malloc(c.key_len + 1))) {
      rc = err_set(err, ST_E_NOMEM, "table %s: out of memory", t->name);
      break;
    }
    memcpy(m->name, c.key, c.key_len);
    m->name[c.key_len] = 0;
    m->h = h;
    m->hash = name_hash(m->name);
    t->nmeta++;
  }
  if (!rc && block_cursor_corrupt(&c)) rc = corrupt(t, mh->offset, "malformed meta index", err);
  block_cursor_release(&c);
  return rc;
}

static const meta_entry_t *find_meta(const table_t *t, const char *name) {
  const uint64_t h = name_hash(name);
  for (size_t i = 0; i < t->nmeta; i++)
    if (t->meta[i].hash == h && strcmp(t->meta[i].name, name) == 0) return &t->meta[i];
  return NULL;
}

int table_open(env_t *io, const char *path, uint64_t file_number, table_t **out, err_t *err) {
  *out = NULL;
  env_rfile_t *f = NULL;
  int rc = env_open_read(io, path, &f, err);
  if (rc == ST_OK && (rc = table_open_file(f, path, file_number, out, err)) != ST_OK)
    env_rfile_close(f);
  return rc;
}

int table_open_file(env_rfile_t *file, const char *path, uint64_t file_number, table_t **out,
                    err_t *err) {
  *out = NULL;
  table_t *t = calloc(1, sizeof *t);
  if (!t) return err_set(err, ST_E_NOMEM, "table %s: out of memory", path);
  atomic_init(&t->refs, 1);
  atomic_init(&t->filter, NULL);
  pthread_mutex_init(&t->filter_mu, NULL);
  t->number = file_number;
  const char *base = strrchr(path, '/');
  snprintf(t->name, sizeof t->name, "%s", base ? base + 1 : path);
  t->file = file;
  int rc = ST_OK;
  t->size = env_rfile_size(t->file);
  if (t->size < TABLE_FOOTER_BYTES) {
    rc = err_set(err, ST_E_CORRUPT, "table %s: file too short (%llu bytes)", t->name,
                 (unsigned long long)t->size);
    goto fail;
  }
  uint64_t foff = t->size - TABLE_FOOTER_BYTES;
  uint8_t f[TABLE_FOOTER_BYTES];
  table_buf_t fb;
  table_buf_init(&fb, f, sizeof f);
  if ((rc = read_span(t, foff, TABLE_FOOTER_BYTES, foff, &fb, err))) goto fail;
  if (decode_fixed64(f + 56) != TABLE_MAGIC) {
    rc = err_set(err, ST_E_CORRUPT, "table %s: footer at %llu: bad magic number", t->name,
                 (unsigned long long)foff);
    goto fail;
  }
  if (crc32c_unmask(decode_fixed32(f + 52)) != crc32c_value(f, 52)) {
    rc = err_set(err, ST_E_CORRUPT, "table %s: footer at %llu: checksum mismatch", t->name,
                 (unsigned long long)foff);
    goto fail;
  }
  uint32_t version = decode_fixed32(f + 48);
  if (version != TABLE_FORMAT_VERSION) {
    rc = err_set(err, ST_E_UNSUPPORTED, "table %s: format version %u (this build reads %u)",
                 t->name, version, TABLE_FORMAT_VERSION);
    goto fail;
  }
  t->entries = decode_fixed64(f + 40);
  block_handle_t mh, ih;
  const uint8_t *p = block_handle_decode(f, f + 40, &mh);
  if (!p || !block_handle_decode(p, f + 40, &ih)) {
    rc = err_set(err, ST_E_CORRUPT, "table %s: footer at %llu: malformed handles", t->name,
                 (unsigned long long)foff);
    goto fail;
  }
  if ((rc = load_block(t, &ih, parse_index, err)) || (rc = load_block(t, &mh, parse_meta, err)))
    goto fail;
  const meta_entry_t *kf = find_meta(t, TABLE_KEY_FILTER_NAME);
  if (kf) {
    t->has_filter = 1;
    t->filter_h = kf->h;
    t->filter_size = (size_t)kf->h.size;
  }
  atomic_init(&t->blocks_read, 0);
  *out = t;
  return ST_OK;
fail:
  t->file = NULL; /* the caller's still */
  table_free(t);
  return rc;
}

void table_ref(table_t *t) {
  atomic_fetch_add_explicit(&t->refs, 1, memory_order_relaxed);
}

void table_unref(table_t *t) {
  if (t && atomic_fetch_sub_explicit(&t->refs, 1, memory_order_acq_rel) == 1) table_free(t);
}

uint64_t table_number(const table_t *t) {
  return t->number;
}
uint64_t table_file_size(const table_t *t) {
  return t->size;
}
int table_has_key_filter(const table_t *t) {
  return t->has_filter;
}

/* The key filter, read and checked at the first call (under filter_mu; later calls take no
   lock). *out NULL: the table has none. A damaged filter fails every lookup that needs it,
   with the message naming the table and the block, as its open used to. */
static int load_filter(table_t *t, const uint8_t **out, err_t *err) {
  *out = atomic_load_explicit(&t->filter, memory_order_acquire);
  if (*out || !t->has_filter) return ST_OK;
  pthread_mutex_lock(&t->filter_mu);
  int rc = ST_OK;
  uint8_t *f = atomic_load_explicit(&t->filter, memory_order_acquire);
  if (!f) {
    table_buf_t kb;
    table_buf_init(&kb, NULL, 0);
    rc = read_checked(t, &t->filter_h, &kb, NULL, err);
    if (rc == ST_OK) {
      f = kb.heap; /* the key filter keeps the buffer */
      atomic_store_explicit(&t->filter, f, memory_order_release);
    } else {
      table_buf_release(&kb);
    }
  }
  pthread_mutex_unlock(&t->filter_mu);
  *out = f;
  return rc;
}

void table_get_stats(const table_t *t, table_stats_t *st) {
  st->data_blocks = t->nblocks;
  st->blocks_read =
      atomic_load_explicit((_Atomic uint64_t *)&t->blocks_read, memory_order_relaxed);
  st->filter_bytes = t->filter_size;
  st->index_bytes = t->index_bytes;
}

void table_key_prefetch(const table_t *t, uint64_t key_hash) {
  const uint8_t *f =
      atomic_load_explicit((_Atomic(uint8_t *) *)&t->filter, memory_order_acquire);
  if (f) blocked_filter_prefetch(f, t->filter_size, key_hash);
}

int table_key_may_match(const table_t *t, uint64_t key_hash) {
  const uint8_t *f;
  /* An unreadable filter says maybe: table_get then reports the damage. */
  if (load_filter((table_t *)t, &f, NULL) != ST_OK || !f) return 1;
  return blocked_filter_may_contain(f, t->filter_size, key_hash);
}

/* Checks and parses the data block at h, whose contents (and trailer) are at c. */
static int check_block(const table_t *t, const block_handle_t *h, const uint8_t *c, block_t *b,
                       err_t *err) {
  if (block_trailer_check(c, (size_t)h->size))
    return corrupt(t, h->offset, "checksum mismatch", err);
  if (block_parse(b, c, (size_t)h->size)) return corrupt(t, h->offset, "malformed block", err);
  return ST_OK;
}

/* Data block i, read into buf and checked there. */
static int data_block(table_t *t, uint32_t i, table_buf_t *buf, block_t *b, err_t *err) {
  const block_handle_t *h = &t->handles[i];
  int rc = read_span(t, h->offset, (size_t)h->size + BLOCK_TRAILER_BYTES, h->offset, buf, err);
  if (rc) return rc;
  atomic_fetch_add_explicit(&t->blocks_read, 1, memory_order_relaxed);
  return check_block(t, h, buf->p, b, err);
}

/* Data block i through the block cache, pinned there (*pin set, for the caller to release):
   a hit, or (fill set) a miss read from the file straight into a cache entry
   (block_cache_alloc), checked there and then published (one copy of the block: the
   kernel's, or the mapping's, into the entry). Without a cache, for a miss without fill, or
   when no entry can be had, read into buf and checked there (*pin NULL). *hit (may be NULL):
   1 when the cache served it, so that no byte was read. */
static int cached_data_block(table_t *t, uint32_t i, int fill, table_buf_t *buf, block_t *b,
                             block_cache_handle_t **pin, int *hit, err_t *err) {
  const block_handle_t *h = &t->handles[i];
  *pin = NULL;
  if (hit) *hit = 0;
  if (!t->cache) return data_block(t, i, buf, b, err);
  const uint8_t *kept = block_cache_pin(t->cache, t->cache_id, h->offset, (size_t)h->size, pin);
  if (kept) {
    if (hit) *hit = 1;
    return block_parse(b, kept, (size_t)h->size) ? corrupt(t, h->offset, "malformed block", err)
                                                 : ST_OK;
  }
  if (!fill) return data_block(t, i, buf, b, err);
  size_t n = (size_t)h->size + BLOCK_TRAILER_BYTES;
  block_cache_handle_t *e = block_cache_alloc(t->cache, t->cache_id, h->offset, n);
  if (!e) return data_block(t, i, buf, b, err);
  uint8_t *p = block_cache_data(e);
  int rc = read_at(t, h->offset, p, n, h->offset, err);
  if (rc == ST_OK) {
    atomic_fetch_add_explicit(&t->blocks_read, 1, memory_order_relaxed);
    rc = check_block(t, h, p, b, err);
  }
  if (rc != ST_OK) {
    block_cache_release(e); /* never published: freed */
    return rc;
  }
  block_cache_publish(t->cache, e, (size_t)h->size);
  *pin = e;
  return ST_OK;
}

/* Moves a value found in a pinned block into buf, so that it outlives the pin: the get copies
   its value's bytes, not its block's. */
static int value_to_buf(const table_t *t, table_buf_t *buf, lsm_lookup_t *out, err_t *err) {
  if (buf_reserve(buf, out->val_len + 1)) {
    out->state = LSM_LOOKUP_ABSENT;
    out->val = NULL;
    return err_set(err, ST_E_NOMEM, "table %s: out of memory", t->name);
  }
  memcpy(buf->p, out->val, out->val_len);
  out->val = buf->p;
  return ST_OK;
}

int table_read_mapped(table_t *t) {
  const uint8_t *p;
  if (!mapped_copy_ready() || env_rfile_map(t->file, &p, NULL) != ST_OK) return 0;
  t->map = p;
  return 1;
}

void table_set_block_cache(table_t *t, block_cache_t *cache) {
  t->cache = cache;
  t->cache_id = cache ? block_cache_new_id(cache) : 0;
}

/* A walk over the data blocks in file order that reads them in runs of up to RUN_BYTES (one
   pread for many blocks) and checks each as it is served.

   Its buffer comes from a few kept for the process (up to SPARE_RUNS of RUN_BYTES, 1 MiB;
   never freed, reachable from `spare`), else from malloc: a search scans table after table,
   and a fresh 256 KiB buffer each time cost its 64 page faults (each a page the kernel zeroes
   just before pread overwrites it) and left the copy writing to memory not in any cache. A
   buffer is taken by one walk at a time (atomic exchange), so the bytes a walk checks and
   serves are its own. */
#define SPARE_RUNS 4
static _Atomic(uint8_t *) spare[SPARE_RUNS];

typedef struct run {
  table_t *t;
  table_buf_t buf;
  uint32_t lo, hi;  /* the blocks [lo, hi) are in buf */
  uint64_t base;    /* file offset of buf->p[0] */
  uint64_t checked; /* blocks checked, added to t->blocks_read at release */
  uint32_t run_bytes; /* RUN_BYTES for a walk in file order; 0: one block per read */
  /* A walk of chosen blocks (run_bytes 0) over a table with a block cache reads each block
     through it: a block it holds costs no read; a missed one enters it while *fill (bytes)
     covers it, and *fill shrinks by its size (fill NULL: none enters). */
  uint64_t *fill;
  block_cache_handle_t *pin; /* the block served last, when the cache holds it */
} run_t;

/* sequential: the walk goes through the blocks in file order (runs of RUN_BYTES); else it
   reads the few blocks it is asked for one by one (a block filter's picks: a run would read
   up to 256 KiB for each 4 KiB block). */
static void run_init(run_t *r, table_t *t, int sequential) {
  r->t = t;
  r->run_bytes = sequential ? RUN_BYTES : 0;
  table_buf_init(&r->buf, NULL, 0);
  for (int i = 0; sequential && i < SPARE_RUNS && !r->buf.heap; i++) {
    uint8_t *p = atomic_exchange_explicit(&spare[i], NULL, memory_order_acquire);
    if (p) {
      r->buf.heap = r->buf.p = p;
      r->buf.cap = RUN_BYTES;
    }
  }
  r->lo = r->hi = 0;
  r->base = 0;
  r->checked = 0;
  r->fill = NULL;
  r->pin = NULL;
}

/* Block i of a walk of chosen blocks, through the block cache (run_t.fill). */
static int run_cached_block(run_t *r, uint32_t i, block_t *b, err_t *err) {
  table_t *t = r->t;
  size_t n = (size_t)t->handles[i].size + BLOCK_TRAILER_BYTES;
  int fill = r->fill && *r->fill >= n, hit;
  r->lo = r->hi = 0; /* a miss read past the cache lands in buf */
  int rc = cached_data_block(t, i, fill, &r->buf, b, &r->pin, &hit, err);
  if (rc == ST_OK && fill && r->pin && !hit) *r->fill -= n;
  return rc;
}

/* Data block i (checked) from the run, reading the run that starts at i if it is not there. */
static int run_block(run_t *r, uint32_t i, block_t *b, err_t *err) {
  table_t *t = r->t;
  if (r->pin) {
    block_cache_release(r->pin);
    r->pin = NULL;
  }
  if (!r->run_bytes && t->cache) return run_cached_block(r, i, b, err);
  if (i < r->lo || i >= r->hi) {
    uint64_t start = t->handles[i].offset, end = start;
    uint32_t j = i;
    while (j < t->nblocks) { /* at least block i; then while the run stays short */
      const block_handle_t *h = &t->handles[j];
      uint64_t e = h->offset + h->size + BLOCK_TRAILER_BYTES;
      if (j > i && (h->offset < start || e - start > r->run_bytes)) break;
      if (e > end) end = e;
      j++;
    }
    r->lo = r->hi = 0; /* nothing valid if the read fails */
    /* a walk's buffer is RUN_BYTES at least, so that it may be kept for the next walk */
    if (buf_reserve(&r->buf, r->run_bytes))
      return err_set(err, ST_E_NOMEM, "table %s: out of memory", t->name);
    int rc = read_span(t, start, (size_t)(end - start), start, &r->buf, err);
    if (rc) return rc;
    r->lo = i;
    r->hi = j;
    r->base = start;
  }
  r->checked++;
  return check_block(t, &t->handles[i], r->buf.p + (t->handles[i].offset - r->base), b, err);
}

static void run_release(run_t *r) {
  if (r->pin) block_cache_release(r->pin);
  atomic_fetch_add_explicit(&r->t->blocks_read, r->checked, memory_order_relaxed);
  if (r->buf.heap && r->buf.cap == RUN_BYTES) {
    for (int i = 0; i < SPARE_RUNS; i++) {
      uint8_t *none = NULL;
      if (atomic_compare_exchange_strong_explicit(&spare[i], &none, r->buf.heap,
                                                  memory_order_release, memory_order_relaxed)) {
        r->buf.heap = r->buf.p = NULL;
        r->buf.cap = 0;
        return;
      }
    }
  }
  table_buf_release(&r->buf);
}

/* First data block whose separator (its last key) >= ikey (n >= INTERNAL_KEY_TAG_BYTES);
   nblocks if none. Searches the separators' fps (a dense array, no key read, no call), then
   compares whole keys only among the separators whose fp equals the key's. */
static uint32_t index_find(const table_t *t, const uint8_t *ikey, size_t n) {
  uint32_t nb = t->nblocks;
  if (nb == 0) return 0;
  size_t ulen = n - INTERNAL_KEY_TAG_BYTES, skip = t->fp_skip;
  /* Against the common prefix first (separator 0 holds it): a key outside it is below or
     above every separator. */
  int c = memcmp(ikey, t->keys, ulen < skip ? ulen : skip);
  if (c < 0 || (c == 0 && ulen < skip)) return 0;
  if (c > 0) return nb;
  uint64_t kf = fp_of(ikey, ulen, skip);
  uint32_t lo = 0, hi = nb;
  while (lo < hi) { /* first fp >= kf: every separator before it is < ikey */
    uint32_t mid = lo + (hi - lo) / 2;
    if (t->key_fp[mid] < kf)
      lo = mid + 1;
    else
      hi = mid;
  }
  uint32_t end = lo; /* first fp > kf: from there on, every separator is > ikey */
  for (uint32_t h = nb; end < h;) {
    uint32_t mid = end + (h - end) / 2;
    if (t->key_fp[mid] <= kf)
      end = mid + 1;
    else
      h = mid;
  }
  hi = end;
  while (lo < hi) {
    uint32_t mid = lo + (hi - lo) / 2;
    const uint8_t *k = t->keys + t->key_off[mid];
    size_t klen = t->key_off[mid + 1] - t->key_off[mid];
    if (internal_key_compare(k, klen, ikey, n) < 0)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

int table_get(table_t *t, const void *key, size_t klen, uint64_t key_hash, uint64_t max_seq,
              table_buf_t *buf, lsm_lookup_t *out, err_t *err) {
  return table_get_kept(t, key, klen, key_hash, max_seq, NULL, buf, out, err);
}

int table_get_kept(table_t *t, const void *key, size_t klen, uint64_t key_hash, uint64_t max_seq,
                   block_memo_t *memo, table_buf_t *buf, lsm_lookup_t *out, err_t *err) {
  out->state = LSM_LOOKUP_ABSENT;
  out->val = NULL;
  out->val_len = 0;
  out->seq = 0;
  const uint8_t *kept_val;
  const block_memo_match_t *first = block_memo_first(memo, t->number, key, klen, key_hash,
                                                     &kept_val);
  if (first && first->seq <= max_seq) {
    /* Why this is the entry the seek below would find: `first` is an entry of the table
       whose predecessor in its block has another user key (visit_value), and a table's
       entries are in internal-key order (user key ascending, then sequence descending), so
       it is the first entry of key in the table: every other version of key follows it and
       is older. The seek finds the first entry >= (key, max_seq); entries of smaller user
       keys are below that, and first = (key, seq <= max_seq) is not. So the answer is first,
       a value (only value entries matched), whose bytes the memo kept after their CRC was
       checked (block_memo.h); the filter would say maybe and the index name its block. */
    memo->direct++;
    out->state = LSM_LOOKUP_VALUE;
    out->seq = first->seq;
    out->val = kept_val;
    out->val_len = first->val_len;
    return ST_OK;
  }
  const uint8_t *filter;
  int frc = load_filter(t, &filter, err);
  if (frc != ST_OK) return frc;
  if (filter && !blocked_filter_may_contain(filter, t->filter_size, key_hash)) return ST_OK;
  uint8_t stack[256], *ikey = stack;
  size_t iklen = klen + INTERNAL_KEY_TAG_BYTES;
  if (iklen > sizeof stack && !(ikey = malloc(iklen)))
    return err_set(err, ST_E_NOMEM, "table %s: out of memory", t->name);
  internal_key_encode(ikey, key, klen, max_seq, LSM_TYPE_VALUE);
  int rc = ST_OK;
  uint32_t i = index_find(t, ikey, iklen);
  if (i < t->nblocks) {
    block_t b;
    block_cache_handle_t *pin = NULL;
    const block_memo_slot_t *kept = block_memo_get(memo, t->number, i);
    if (kept && kept->whole) /* checked when it was kept (block_memo.h) */
      rc = block_parse(&b, kept->data, kept->size)
               ? corrupt(t, t->handles[i].offset, "malformed block", err)
               : ST_OK;
    else
      rc = cached_data_block(t, i, 1, buf, &b, &pin, NULL, err);
    if (!rc) {
      block_cursor_t c;
      block_cursor_init(&c, &b, data_key_compare);
      block_cursor_seek(&c, ikey, iklen);
      internal_key_parts_t k;
      if (block_cursor_corrupt(&c)) {
        rc = corrupt(t, t->handles[i].offset, "malformed entry", err);
      } else if (block_cursor_valid(&c)) {
        if (internal_key_parse(c.key, c.key_len, &k)) {
          rc = corrupt(t, t->handles[i].offset, "malformed internal key", err);
        } else if (bytewise_compare(k.user_key, k.user_len, key, klen) == 0) {
          out->seq = k.seq;
          if (k.type == LSM_TYPE_VALUE) {
            out->state = LSM_LOOKUP_VALUE;
            out->val = c.val;
            out->val_len = c.val_len;
          } else {
            out->state = LSM_LOOKUP_DELETED;
          }
        }
      }
      block_cursor_release(&c);
    }
    if (pin) {
      if (rc == ST_OK && out->state == LSM_LOOKUP_VALUE) rc = value_to_buf(t, buf, out, err);
      block_cache_release(pin);
    }
  }
  if (ikey != stack) free(ikey);
  return rc;
}

/* Visits every entry of data block i (table_scan's loop body); *stop is set when fn asks to
   stop. */
static int scan_block_all(run_t *run, uint32_t i, lsm_visit_fn fn, void *arg, int *stop,
                          lsm_scan_stats_t *acc, err_t *err) {
  table_t *t = run->t;
  block_t b;
  int rc = run_block(run, i, &b, err);
  if (rc) return rc;
  acc->bytes_read += t->handles[i].size + BLOCK_TRAILER_BYTES;
  block_cursor_t c;
  block_cursor_init(&c, &b, data_key_compare);
  for (block_cursor_seek_first(&c); block_cursor_valid(&c); block_cursor_next(&c)) {
    internal_key_parts_t k;
    if (internal_key_parse(c.key, c.key_len, &k)) {
      rc = corrupt(t, t->handles[i].offset, "malformed internal key", err);
      break;
    }
    acc->entries++;
    if (fn(arg, k.user_key, k.user_len, c.val, c.val_len, k.seq, k.type)) {
      *stop = 1;
      break;
    }
  }
  if (!rc && block_cursor_corrupt(&c))
    rc = corrupt(t, t->handles[i].offset, "malformed entry", err);
  block_cursor_release(&c);
  return rc;
}

static void add_scan_stats(lsm_scan_stats_t *st, const lsm_scan_stats_t *acc) {
  if (!st) return;
  st->entries += acc->entries;
  st->bytes_read += acc->bytes_read;
}

int table_scan(table_t *t, lsm_visit_fn fn, void *arg, lsm_scan_stats_t *st, err_t *err) {
  lsm_scan_stats_t acc = {0, 0};
  int rc = ST_OK, stop = 0;
  run_t run;
  run_init(&run, t, 1);
  for (uint32_t i = 0; i < t->nblocks && !stop && !rc; i++)
    rc = scan_block_all(&run, i, fn, arg, &stop, &acc, err);
  run_release(&run);
  add_scan_stats(st, &acc);
  return rc;
}

int table_walk(table_t *t, table_entry_fn fn, table_damage_fn damage, void *arg,
               uint64_t *bad_blocks) {
  *bad_blocks = 0;
  run_t run;
  run_init(&run, t, 1);
  int rc = 0;
  for (uint32_t i = 0; i < t->nblocks && !rc; i++) {
    const block_handle_t *h = &t->handles[i];
    block_t b;
    err_t e;
    if (run_block(&run, i, &b, &e)) {
      (*bad_blocks)++;
      if (damage) damage(arg, h->offset, e.msg);
      continue;
    }
    block_cursor_t c;
    block_cursor_init(&c, &b, internal_key_compare);
    int bad_key = 0;
    for (block_cursor_seek_first(&c); block_cursor_valid(&c) && !rc; block_cursor_next(&c)) {
      internal_key_parts_t k;
      if ((bad_key = internal_key_parse(c.key, c.key_len, &k) != 0)) break;
      if (fn) rc = fn(arg, c.key, c.key_len, c.val, c.val_len);
    }
    int bad_entry = block_cursor_corrupt(&c);
    block_cursor_release(&c);
    if (rc) break;
    if (damage && (bad_key || bad_entry)) {
      corrupt(t, h->offset, bad_key ? "malformed internal key" : "malformed entry", &e);
      damage(arg, h->offset, e.msg);
    }
    *bad_blocks += bad_key || bad_entry;
  }
  run_release(&run);
  return rc;
}

int table_salvage(table_t *t, table_entry_fn fn, void *arg, uint64_t *bad_blocks) {
  return table_walk(t, fn, NULL, arg, bad_blocks);
}

uint64_t table_check_meta(const table_t *t, table_damage_fn damage, void *arg) {
  uint64_t bad = 0;
  table_buf_t buf;
  table_buf_init(&buf, NULL, 0);
  for (size_t i = 0; i < t->nmeta; i++) {
    err_t e;
    if (read_checked(t, &t->meta[i].h, &buf, NULL, &e) == ST_OK) continue;
    bad++;
    if (damage) damage(arg, t->meta[i].h.offset, e.msg);
  }
  table_buf_release(&buf);
  return bad;
}

size_t table_meta_count(const table_t *t) {
  return t->nmeta;
}

uint64_t table_entries(const table_t *t) {
  return t->entries;
}

const uint8_t *table_largest(const table_t *t, size_t *n) {
  if (t->nblocks == 0) {
    *n = 0;
    return NULL;
  }
  *n = t->key_off[t->nblocks] - t->key_off[t->nblocks - 1];
  return t->keys + t->key_off[t->nblocks - 1];
}

typedef struct value_visit {
  lsm_visit_fn fn;
  void *arg;
  int bad_key;      /* a matching entry's internal key did not parse */
  uint64_t matches; /* entries whose value matched (block_scan_value's calls) */
  block_memo_t *memo; /* keeps the blocks with a match; NULL: none kept */
  /* With memo: the current block's contents, and its matches that are the first entry of
     their user key in the table (keys copied: owned here until block_memo_put copies them). */
  const uint8_t *block;
  block_memo_match_t *firsts;
  size_t nfirsts, cap_firsts;
  /* How a block is scanned: decoding every entry (a table read whole: SCAN and the paper's
     methods, whose scan cost is the one compared with the authors' code), or looking for the
     value's bytes first (the blocks a value-to-block map or block filter names). */
  block_scan_fn scan;
  /* Or, a scan for a predicate (table_scan_blocks_containing): block_scan_containing of these
     needles (nd NULL: scan's). */
  const block_needle_t *nd;
  size_t nn;
} value_visit_t;

static int visit_value(void *arg, const uint8_t *key, size_t key_len, const uint8_t *val,
                       uint32_t val_len, const uint8_t *prev, size_t prev_len) {
  value_visit_t *vv = arg;
  internal_key_parts_t k, pk;
  if (internal_key_parse(key, key_len, &k)) {
    vv->bad_key = 1;
    return 1;
  }
  vv->matches++;
  /* The first entry of its user key in the table: the one before it in the block has another
     user key. The block's first entry is never taken (its predecessor is in the block
     before); neither is an entry after a key that does not parse. */
  if (vv->memo && k.type == LSM_TYPE_VALUE && prev && !internal_key_parse(prev, prev_len, &pk) &&
      bytewise_compare(pk.user_key, pk.user_len, k.user_key, k.user_len) != 0) {
    if (vv->nfirsts == vv->cap_firsts) {
      size_t cap = vv->cap_firsts ? 2 * vv->cap_firsts : 8;
      block_memo_match_t *f = realloc(vv->firsts, cap * sizeof *f);
      if (f) vv->firsts = f, vv->cap_firsts = cap;
    }
    uint8_t *copy = vv->nfirsts < vv->cap_firsts ? malloc(k.user_len ? k.user_len : 1) : NULL;
    if (copy) { /* else left out: its get seeks */
      if (k.user_len) memcpy(copy, k.user_key, k.user_len);
      vv->firsts[vv->nfirsts++] =
          (block_memo_match_t){copy, k.user_len, k.seq, (uint32_t)(val - vv->block), val_len};
    }
  }
  return vv->fn(vv->arg, k.user_key, k.user_len, val, val_len, k.seq, k.type);
}

/* Scans data block i for val (the body of table_scan_value's loop); *stopped is set when fn
   asks to stop. With vv->memo, a block with a match is kept there with its matches that are
   the first entry of their key. */
static int scan_value_block(run_t *run, uint32_t i, const void *val, size_t n, value_visit_t *vv,
                            int *stopped, lsm_scan_stats_t *st, err_t *err) {
  table_t *t = run->t;
  block_t b;
  int rc = run_block(run, i, &b, err);
  if (rc) return rc;
  st->bytes_read += t->handles[i].size + BLOCK_TRAILER_BYTES;
  uint64_t before = vv->matches;
  const uint8_t *contents = b.data;
  vv->block = contents;
  vv->nfirsts = 0;
  int r = vv->nd ? block_scan_containing(&b, vv->nd, vv->nn, visit_value, vv, &st->entries)
                 : vv->scan(&b, val, n, visit_value, vv, &st->entries);
  if (vv->bad_key)
    rc = corrupt(t, t->handles[i].offset, "malformed internal key", err);
  else if (r < 0)
    rc = corrupt(t, t->handles[i].offset, "malformed entry", err);
  else if (vv->memo && vv->matches - before > vv->nfirsts) /* a get will seek in it */
    block_memo_put(vv->memo, t->number, i, contents, (size_t)t->handles[i].size, vv->firsts,
                   vv->nfirsts); /* the checked contents, as run_block served them */
  else if (vv->memo && vv->nfirsts) /* every match a first: its value is the answer */
    block_memo_put_values(vv->memo, t->number, i, contents, (size_t)t->handles[i].size,
                          vv->firsts, vv->nfirsts);
  for (size_t j = 0; j < vv->nfirsts; j++) free(vv->firsts[j].user_key);
  vv->nfirsts = 0;
  if (rc) return rc;
  *stopped = r > 0;
  return ST_OK;
}

int table_scan_value(table_t *t, const void *val, size_t n, lsm_visit_fn fn, void *arg,
                     lsm_scan_stats_t *st, err_t *err) {
  return table_scan_value_kept(t, val, n, fn, arg, st, NULL, err);
}

int table_scan_value_kept(table_t *t, const void *val, size_t n, lsm_visit_fn fn, void *arg,
                          lsm_scan_stats_t *st, block_memo_t *memo, err_t *err) {
  lsm_scan_stats_t acc = {0, 0};
  value_visit_t vv = {.fn = fn, .arg = arg, .memo = memo, .scan = block_scan_value_all};
  int rc = ST_OK, stopped = 0;
  run_t run;
  run_init(&run, t, 1);
  for (uint32_t i = 0; i < t->nblocks && rc == ST_OK && !stopped; i++)
    rc = scan_value_block(&run, i, val, n, &vv, &stopped, &acc, err);
  run_release(&run);
  free(vv.firsts);
  if (st) {
    st->entries += acc.entries;
    st->bytes_read += acc.bytes_read;
  }
  return rc;
}

/* The data block whose handle is exactly ref, or nblocks if none. */
static uint32_t block_at(const table_t *t, const block_ref_t *ref) {
  uint32_t lo = 0, hi = t->nblocks;
  while (lo < hi) {
    uint32_t mid = lo + (hi - lo) / 2;
    if (t->handles[mid].offset < ref->offset)
      lo = mid + 1;
    else
      hi = mid;
  }
  int exact =
      lo < t->nblocks && t->handles[lo].offset == ref->offset && t->handles[lo].size == ref->size;
  return exact ? lo : t->nblocks;
}

int table_scan_value_blocks(table_t *t, const block_ref_t *refs, size_t nrefs, const void *val,
                            size_t n, lsm_visit_fn fn, void *arg, lsm_scan_stats_t *st,
                            err_t *err) {
  return table_scan_value_blocks_kept(t, refs, nrefs, val, n, fn, arg, st, NULL, NULL, err);
}

/* table_scan_value_blocks_kept with the visitor vv set up. */
static int scan_blocks_visiting(table_t *t, const block_ref_t *refs, size_t nrefs, const void *val,
                                size_t n, value_visit_t vv, lsm_scan_stats_t *st, uint64_t *fill,
                                err_t *err) {
  lsm_scan_stats_t acc = {0, 0};
  int rc = ST_OK, stopped = 0;
  run_t run;
  run_init(&run, t, 0);
  run.fill = fill;
  for (size_t j = 0; j < nrefs && rc == ST_OK && !stopped; j++) {
    uint32_t i = block_at(t, &refs[j]);
    rc = i < t->nblocks ? scan_value_block(&run, i, val, n, &vv, &stopped, &acc, err)
                        : corrupt(t, refs[j].offset, "block filter names no data block", err);
  }
  run_release(&run);
  free(vv.firsts);
  if (st) {
    st->entries += acc.entries;
    st->bytes_read += acc.bytes_read;
  }
  return rc;
}

int table_scan_value_blocks_kept(table_t *t, const block_ref_t *refs, size_t nrefs, const void *val,
                                 size_t n, lsm_visit_fn fn, void *arg, lsm_scan_stats_t *st,
                                 block_memo_t *memo, uint64_t *fill, err_t *err) {
  value_visit_t vv = {.fn = fn, .arg = arg, .memo = memo, .scan = block_scan_value};
  return scan_blocks_visiting(t, refs, nrefs, val, n, vv, st, fill, err);
}

int table_scan_blocks_containing(table_t *t, const block_ref_t *refs, size_t nrefs,
                                 const block_needle_t *nd, size_t nn, lsm_visit_fn fn, void *arg,
                                 lsm_scan_stats_t *st, block_memo_t *memo, uint64_t *fill,
                                 err_t *err) {
  value_visit_t vv = {.fn = fn, .arg = arg, .memo = memo, .nd = nd, .nn = nn};
  return scan_blocks_visiting(t, refs, nrefs, NULL, 0, vv, st, fill, err);
}

int table_scan_blocks(table_t *t, const block_ref_t *refs, size_t nrefs, lsm_visit_fn fn, void *arg,
                      lsm_scan_stats_t *st, uint64_t *fill, err_t *err) {
  lsm_scan_stats_t acc = {0, 0};
  int rc = ST_OK, stop = 0;
  run_t run;
  run_init(&run, t, 0);
  run.fill = fill;
  for (size_t j = 0; j < nrefs && rc == ST_OK && !stop; j++) {
    uint32_t i = block_at(t, &refs[j]);
    rc = i < t->nblocks ? scan_block_all(&run, i, fn, arg, &stop, &acc, err)
                        : corrupt(t, refs[j].offset, "block filter names no data block", err);
  }
  run_release(&run);
  add_scan_stats(st, &acc);
  return rc;
}

int table_read_meta(table_t *t, const char *name, void **data, size_t *size, uint64_t *offset,
                    err_t *err) {
  const meta_entry_t *m = find_meta(t, name);
  if (!m) return ST_NOT_FOUND;
  table_buf_t buf;
  table_buf_init(&buf, NULL, 0);
  int rc = read_checked(t, &m->h, &buf, NULL, err); /* reads at least the trailer: heap */
  if (rc) {
    table_buf_release(&buf);
    return rc;
  }
  *data = buf.heap; /* the caller's now */
  *size = (size_t)m->h.size;
  if (offset) *offset = m->h.offset;
  return ST_OK;
}

/* Where bytes [off, off + len) of the contents of meta block `name` lie in t's file: ST_OK
   with *at set (and *block, where the meta block begins), or ST_E_CORRUPT (the block absent,
   or shorter). */
static int meta_at(const table_t *t, const char *name, uint64_t off, uint64_t len, uint64_t *at,
                   uint64_t *block, err_t *err) {
  const meta_entry_t *m = find_meta(t, name);
  if (!m) return err_set(err, ST_E_CORRUPT, "table %s: no meta block %s", t->name, name);
  if (!handle_ok(t, &m->h) || off > m->h.size || len > m->h.size - off)
    return corrupt(t, m->h.offset, "meta block read out of bounds", err);
  *at = m->h.offset + off;
  *block = m->h.offset;
  return ST_OK;
}

/* The read ahead of [at, at + read) into a cache entry of kept bytes (table_ahead_prepare):
   block is the data block's index, or t's nblocks for bytes of a meta block. */
static int ahead_piece(table_t *t, uint32_t block, uint64_t at, size_t kept, size_t read,
                       uint64_t *fill, table_ahead_t *a, env_read_t *r) {
  if (*fill < read) return 0;
  block_cache_handle_t *pin;
  if (block_cache_pin(t->cache, t->cache_id, at, kept, &pin)) {
    block_cache_release(pin);
    return 0;
  }
  block_cache_handle_t *e = block_cache_alloc(t->cache, t->cache_id, at, read);
  if (!e) return 0;
  *fill -= read;
  *a = (table_ahead_t){t, block, at, kept, e};
  *r = (env_read_t){t->file, at, block_cache_data(e), read, 0, ST_OK};
  return 1;
}

/* ahead_piece of data block i (the cache keeps it without its trailer). */
static int ahead_data_block(table_t *t, uint32_t i, uint64_t *fill, table_ahead_t *a,
                            env_read_t *r) {
  const block_handle_t *h = &t->handles[i];
  return ahead_piece(t, i, h->offset, (size_t)h->size, (size_t)h->size + BLOCK_TRAILER_BYTES, fill,
                     a, r);
}

int table_ahead_prepare(table_t *t, const char *meta, const block_ref_t *ref, uint64_t *fill,
                        table_ahead_t *a, env_read_t *r) {
  if (!t->cache || t->map || !fill) return 0;
  if (!meta) {
    uint32_t i = block_at(t, ref);
    return i < t->nblocks && ahead_data_block(t, i, fill, a, r);
  }
  uint64_t at, block;
  if (ref->size == 0 || meta_at(t, meta, ref->offset, ref->size, &at, &block, NULL) != ST_OK)
    return 0;
  return ahead_piece(t, t->nblocks, at, (size_t)ref->size, (size_t)ref->size, fill, a, r);
}

int table_get_ahead(table_t *t, const void *key, size_t klen, uint64_t key_hash, uint64_t max_seq,
                    uint64_t *fill, table_ahead_t *a, env_read_t *r) {
  if (!table_key_may_match(t, key_hash)) return TABLE_AHEAD_ABSENT;
  uint8_t stack[256], *ikey = stack;
  size_t iklen = klen + INTERNAL_KEY_TAG_BYTES;
  if (iklen > sizeof stack && !(ikey = malloc(iklen))) return TABLE_AHEAD_NONE;
  internal_key_encode(ikey, key, klen, max_seq, LSM_TYPE_VALUE);
  uint32_t i = index_find(t, ikey, iklen);
  if (ikey != stack) free(ikey);
  /* Past every block, table_get finds nothing here either. */
  if (i >= t->nblocks) return TABLE_AHEAD_ABSENT;
  if (!t->cache || t->map) return TABLE_AHEAD_NONE;
  return ahead_data_block(t, i, fill, a, r) ? TABLE_AHEAD_READ : TABLE_AHEAD_NONE;
}

void table_ahead_finish(const table_ahead_t *a, const env_read_t *r) {
  table_t *t = a->t;
  int ok = r->rc == ST_OK && r->got == r->n;
  if (ok && a->block < t->nblocks) {
    block_t b;
    ok = check_block(t, &t->handles[a->block], r->buf, &b, NULL) == ST_OK;
    if (ok) atomic_fetch_add_explicit(&t->blocks_read, 1, memory_order_relaxed);
  }
  if (ok) block_cache_publish(t->cache, a->e, a->n);
  block_cache_release(a->e); /* unpublished: freed */
}

int table_read_meta_range(table_t *t, const char *name, uint64_t off, size_t len, void *buf,
                          uint64_t *fill, err_t *err) {
  uint64_t at, block;
  int rc = meta_at(t, name, off, len, &at, &block, err);
  if (rc != ST_OK) return rc;
  if (t->cache && len) {
    block_cache_handle_t *pin;
    const uint8_t *kept = block_cache_pin(t->cache, t->cache_id, at, len, &pin);
    if (kept) {
      memcpy(buf, kept, len);
      block_cache_release(pin);
      return ST_OK;
    }
  }
  rc = read_at(t, at, buf, len, block, err);
  block_cache_use_t use = {t->cache, t->cache_id, fill};
  if (rc == ST_OK && len) block_cache_use_keep(&use, at, buf, len);
  return rc;
}

/* ---- Two-level iterator ---------------------------------------------------------------- */

typedef struct table_iter {
  iterator_t base;
  table_t *t;
  uint32_t bi; /* current data block; nblocks = none */
  table_buf_t buf; /* its bytes: the keys and values served point here */
  block_t blk;
  block_cursor_t cur;
  err_t status;
} table_iter_t;

/* Loads data block i and leaves the cursor unpositioned; 0 on success. */
static int ti_load(table_iter_t *ti, uint32_t i) {
  block_cursor_release(&ti->cur);
  ti->bi = i;
  memset(&ti->blk, 0, sizeof ti->blk);
  block_cursor_init(&ti->cur, &ti->blk, data_key_compare);
  if (i >= ti->t->nblocks) return -1;
  if (data_block(ti->t, i, &ti->buf, &ti->blk, &ti->status)) {
    memset(&ti->blk, 0, sizeof ti->blk);
    ti->bi = ti->t->nblocks;
    return -1;
  }
  return 0;
}

/* Moves forward over exhausted blocks; records a malformed entry, or a key too short to be
   an internal key (only a crafted block with a valid checksum has one), as an error: no
   consumer of the iterator (merge, compaction, repair) ever sees such a key. */
static void ti_settle(table_iter_t *ti) {
  for (;;) {
    int short_key = block_cursor_valid(&ti->cur) && ti->cur.key_len < INTERNAL_KEY_TAG_BYTES;
    if (block_cursor_corrupt(&ti->cur) || short_key) {
      corrupt(ti->t, ti->t->handles[ti->bi].offset,
              short_key ? "malformed internal key" : "malformed entry", &ti->status);
      ti->bi = ti->t->nblocks;
      return;
    }
    if (block_cursor_valid(&ti->cur) || ti->bi >= ti->t->nblocks) return;
    if (ti_load(ti, ti->bi + 1)) return;
    block_cursor_seek_first(&ti->cur);
  }
}

static void ti_seek_first(iterator_t *it) {
  table_iter_t *ti = (table_iter_t *)it;
  if (ti->status.code) return;
  if (ti_load(ti, 0)) return;
  block_cursor_seek_first(&ti->cur);
  ti_settle(ti);
}

static void ti_seek(iterator_t *it, const void *target, size_t n) {
  table_iter_t *ti = (table_iter_t *)it;
  if (ti->status.code) return;
  if (n < INTERNAL_KEY_TAG_BYTES) { /* not an internal key: treat as the smallest */
    ti_seek_first(it);
    return;
  }
  if (ti_load(ti, index_find(ti->t, target, n))) return;
  block_cursor_seek(&ti->cur, target, n);
  ti_settle(ti);
}

static int ti_valid(const iterator_t *it) {
  const table_iter_t *ti = (const table_iter_t *)it;
  return !ti->status.code && ti->bi < ti->t->nblocks && block_cursor_valid(&ti->cur);
}

static void ti_next(iterator_t *it) {
  table_iter_t *ti = (table_iter_t *)it;
  block_cursor_next(&ti->cur);
  ti_settle(ti);
}

static const void *ti_key(const iterator_t *it, size_t *n) {
  const table_iter_t *ti = (const table_iter_t *)it;
  *n = ti->cur.key_len;
  return ti->cur.key;
}

static const void *ti_value(const iterator_t *it, size_t *n) {
  const table_iter_t *ti = (const table_iter_t *)it;
  *n = ti->cur.val_len;
  return ti->cur.val;
}

static int ti_status(const iterator_t *it, err_t *err) {
  const table_iter_t *ti = (const table_iter_t *)it;
  if (err) *err = ti->status;
  return ti->status.code;
}

static void ti_destroy(iterator_t *it) {
  table_iter_t *ti = (table_iter_t *)it;
  block_cursor_release(&ti->cur);
  table_buf_release(&ti->buf);
  table_unref(ti->t);
  free(ti);
}

static const iterator_ops_t table_iter_ops = {ti_seek_first, ti_seek,  ti_valid,  ti_next,
                                              ti_key,        ti_value, ti_status, ti_destroy};

iterator_t *table_iterator_create(table_t *t) {
  table_iter_t *ti = calloc(1, sizeof *ti);
  if (!ti) return NULL;
  ti->base.ops = &table_iter_ops;
  table_ref(t);
  ti->t = t;
  ti->bi = t->nblocks;
  table_buf_init(&ti->buf, NULL, 0);
  err_clear(&ti->status);
  block_cursor_init(&ti->cur, &ti->blk, data_key_compare);
  return &ti->base;
}

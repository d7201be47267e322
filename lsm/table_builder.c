/* Table builder (lsm/table_builder.h).
 *
 * Byte layout of a table file (doc/format.md "Table"):
 *
 *   data block 0 | trailer              blocks of ~block_bytes (lsm/block_builder.c layout),
 *   ...                                 keys = internal keys in order, values = values
 *   data block N-1 | trailer
 *   key filter | trailer                (if key_bits_per_key > 0) blocked Bloom filter over
 *                                       the distinct user keys (filters/blocked_filter.h)
 *   hook meta block | trailer           one per block returned by the hook's finish()
 *   ...
 *   meta index block | trailer          block format, restart interval 1; key = meta block
 *                                       name (bytes, sorted), value = block handle
 *   index block | trailer               block format, restart interval 1; key = the last
 *                                       internal key of data block i, value = its handle
 *   footer (TABLE_FOOTER_BYTES = 64):
 *     [0, 40)  meta index handle, index handle (varint64 offset, varint64 size each),
 *              zero padding
 *     [40, 48) entries           fixed64
 *     [48, 52) format version    fixed32 (TABLE_FORMAT_VERSION)
 *     [52, 56) masked crc32c of bytes [0, 52) fixed32
 *     [56, 64) magic             fixed64 (TABLE_MAGIC)
 *
 * Every trailer is [type u8 = 0][masked crc32c(contents | type) fixed32] (lsm/block.h);
 * a handle's size excludes the trailer.
 */
#include "lsm/table_builder.h"

#include <stdlib.h>
#include <string.h>

#include "filters/blocked_filter.h"
#include "lsm/block.h"
#include "lsm/block_builder.h"
#include "lsm/internal_key.h"
#include "lsm/table.h"
#include "util/coding.h"
#include "util/crc32c.h"
#include "util/vec.h"

struct table_builder {
  table_builder_options_t opt;
  env_file_t *file;
  char *path;
  uint64_t number;
  uint64_t offset; /* bytes written */
  block_builder_t data, index;
  u64vec_t hashes;       /* of distinct user keys */
  uint8_t *first, *last; /* smallest / largest internal key so far */
  size_t first_len, last_len, first_cap, last_cap;
  uint64_t entries;
  uint64_t max_seq; /* of the entries added */
  void *hook_state;
  uint64_t *hook_offsets; /* where each hook meta block's contents start */
  int ended;              /* hook end() called */
  int finished;           /* finish succeeded */
  int dead;               /* an error happened */
};

void table_builder_options_init(table_builder_options_t *o) {
  o->block_bytes = 4096;
  o->restart_interval = BLOCK_RESTART_INTERVAL;
  o->key_bits_per_key = 10;
  o->hook = NULL;
  o->sync = 1;
}

static void hook_end(table_builder_t *tb, int ok) {
  if (tb->ended) return;
  tb->ended = 1;
  const lsm_table_hook_t *h = tb->opt.hook;
  if (h && tb->hook_state && h->end) {
    static const uint64_t no_blocks[1];
    h->end(tb->hook_state, !ok ? NULL : tb->hook_offsets ? tb->hook_offsets : no_blocks);
  }
}

int table_builder_create(env_t *io, const char *path, uint64_t file_number,
                         const table_builder_options_t *opt, table_builder_t **out, err_t *err) {
  *out = NULL;
  table_builder_t *tb = calloc(1, sizeof *tb);
  if (!tb || !(tb->path = strdup(path))) {
    free(tb);
    return err_set(err, ST_E_NOMEM, "table %s: out of memory", path);
  }
  tb->opt = *opt;
  if (!tb->opt.block_bytes) tb->opt.block_bytes = 4096;
  if (tb->opt.restart_interval <= 0) tb->opt.restart_interval = BLOCK_RESTART_INTERVAL;
  if (tb->opt.key_bits_per_key < 0) tb->opt.key_bits_per_key = 0;
  tb->number = file_number;
  block_builder_init(&tb->data, tb->opt.restart_interval);
  block_builder_init(&tb->index, 1);
  u64vec_init(&tb->hashes);
  int rc = env_open_write(io, path, &tb->file, err);
  if (rc) {
    tb->ended = 1;
    table_builder_destroy(tb);
    return rc;
  }
  const lsm_table_hook_t *h = tb->opt.hook;
  if (h && h->begin) {
    tb->hook_state = h->begin(h->ctx, file_number);
    if (!tb->hook_state) {
      tb->ended = 1;
      table_builder_destroy(tb);
      return err_set(err, ST_E_NOMEM, "table %s: table hook begin failed", path);
    }
  }
  *out = tb;
  return ST_OK;
}

static int set_key(uint8_t **buf, size_t *cap, size_t *len, const void *k, size_t n) {
  if (n > *cap) {
    size_t c = *cap ? *cap : 64;
    while (c < n) c *= 2;
    uint8_t *p = realloc(*buf, c);
    if (!p) return -1;
    *buf = p;
    *cap = c;
  }
  memcpy(*buf, k, n);
  *len = n;
  return 0;
}

static int fail(table_builder_t *tb, int rc) {
  tb->dead = rc;
  return rc;
}

/* Writes contents + trailer; *h = its handle. */
static int write_block(table_builder_t *tb, const uint8_t *contents, size_t n, block_handle_t *h,
                       err_t *err) {
  uint8_t trailer[BLOCK_TRAILER_BYTES];
  block_trailer_encode(trailer, contents, n);
  h->offset = tb->offset;
  h->size = n;
  int rc = env_file_append(tb->file, contents, n, err);
  if (!rc) rc = env_file_append(tb->file, trailer, sizeof trailer, err);
  if (rc) return fail(tb, rc);
  tb->offset += n + BLOCK_TRAILER_BYTES;
  return ST_OK;
}

static int nomem(table_builder_t *tb, err_t *err) {
  fail(tb, ST_E_NOMEM);
  return err_set(err, ST_E_NOMEM, "table %s: out of memory", tb->path);
}

static int flush_data(table_builder_t *tb, err_t *err) {
  if (block_builder_empty(&tb->data)) return ST_OK;
  size_t n;
  const uint8_t *c = block_builder_finish(&tb->data, &n);
  if (!c) return nomem(tb, err);
  block_handle_t h;
  int rc = write_block(tb, c, n, &h, err);
  if (rc) return rc;
  uint8_t enc[BLOCK_HANDLE_MAX_BYTES];
  size_t elen = (size_t)(block_handle_encode(enc, &h) - enc);
  if (block_builder_add(&tb->index, tb->last, tb->last_len, enc, elen)) return nomem(tb, err);
  block_builder_reset(&tb->data);
  const lsm_table_hook_t *hook = tb->opt.hook;
  if (hook && hook->block_written && tb->hook_state)
    hook->block_written(tb->hook_state, h.offset, h.size);
  return ST_OK;
}

int table_builder_add(table_builder_t *tb, const void *ikey, size_t iklen, const void *val,
                      size_t vlen, err_t *err) {
  if (tb->dead || tb->finished)
    return err_set(err, tb->dead ? tb->dead : ST_E_INVALID, "table %s: builder is %s", tb->path,
                   tb->dead ? "dead after an error" : "finished");
  internal_key_parts_t k;
  if (internal_key_parse(ikey, iklen, &k))
    return fail(tb, err_set(err, ST_E_INVALID, "table %s: malformed internal key", tb->path));
  int new_user_key = 1;
  if (tb->entries) {
    if (internal_key_compare(tb->last, tb->last_len, ikey, iklen) >= 0)
      return fail(tb, err_set(err, ST_E_INVALID, "table %s: keys added out of order at entry %llu",
                              tb->path, (unsigned long long)tb->entries));
    new_user_key = bytewise_compare(tb->last, tb->last_len - INTERNAL_KEY_TAG_BYTES, k.user_key,
                                    k.user_len) != 0;
  } else if (set_key(&tb->first, &tb->first_cap, &tb->first_len, ikey, iklen)) {
    return nomem(tb, err);
  }
  if (new_user_key && tb->opt.key_bits_per_key > 0 &&
      u64vec_push(&tb->hashes, blocked_filter_key_hash(k.user_key, k.user_len)))
    return nomem(tb, err);
  if (block_builder_add(&tb->data, ikey, iklen, val, vlen) ||
      set_key(&tb->last, &tb->last_cap, &tb->last_len, ikey, iklen))
    return nomem(tb, err);
  tb->entries++;
  if (k.seq > tb->max_seq) tb->max_seq = k.seq;
  const lsm_table_hook_t *h = tb->opt.hook;
  if (h && h->add && tb->hook_state)
    h->add(tb->hook_state, k.user_key, k.user_len, val, vlen, k.seq, k.type);
  if (block_builder_size_estimate(&tb->data) >= tb->opt.block_bytes) return flush_data(tb, err);
  return ST_OK;
}

typedef struct named_handle {
  const char *name;
  block_handle_t h;
} named_handle_t;

static int by_name(const void *a, const void *b) {
  return strcmp(((const named_handle_t *)a)->name, ((const named_handle_t *)b)->name);
}

static int write_footer(table_builder_t *tb, const block_handle_t *meta,
                        const block_handle_t *index, err_t *err) {
  uint8_t f[TABLE_FOOTER_BYTES];
  memset(f, 0, sizeof f);
  uint8_t *p = block_handle_encode(f, meta);
  block_handle_encode(p, index);
  encode_fixed64(f + 40, tb->entries);
  encode_fixed32(f + 48, TABLE_FORMAT_VERSION);
  encode_fixed32(f + 52, crc32c_mask(crc32c_value(f, 52)));
  encode_fixed64(f + 56, TABLE_MAGIC);
  int rc = env_file_append(tb->file, f, sizeof f, err);
  if (rc) return fail(tb, rc);
  tb->offset += sizeof f;
  return ST_OK;
}

static int finish(table_builder_t *tb, err_t *err) {
  int rc = flush_data(tb, err);
  if (rc) return rc;
  named_handle_t *metas = NULL;
  size_t nmeta = 0;
  const lsm_meta_block_t *blocks = NULL;
  size_t nblocks = 0;
  const lsm_table_hook_t *h = tb->opt.hook;
  if (h && h->finish && tb->hook_state) {
    rc = h->finish(tb->hook_state, &blocks, &nblocks);
    if (rc) return fail(tb, err_set(err, rc, "table %s: table hook finish failed", tb->path));
    if (nblocks && !blocks) nblocks = 0;
  }
  metas = calloc(nblocks + 1, sizeof *metas);
  if (!metas) return nomem(tb, err);
  if (nblocks && !(tb->hook_offsets = calloc(nblocks, sizeof *tb->hook_offsets))) {
    free(metas);
    return nomem(tb, err);
  }
  if (tb->opt.key_bits_per_key > 0) {
    size_t fsize = blocked_filter_size(tb->hashes.n, tb->opt.key_bits_per_key);
    uint8_t *filter = malloc(fsize);
    if (!filter) {
      free(metas);
      return nomem(tb, err);
    }
    blocked_filter_build(filter, fsize, tb->hashes.v, tb->hashes.n, tb->opt.key_bits_per_key);
    metas[nmeta].name = TABLE_KEY_FILTER_NAME;
    rc = write_block(tb, filter, fsize, &metas[nmeta].h, err);
    free(filter);
    nmeta++;
    if (rc) goto out;
  }
  for (size_t i = 0; i < nblocks; i++) {
    if (!blocks[i].name || !blocks[i].name[0] || (blocks[i].size && !blocks[i].data)) {
      rc = fail(tb, err_set(err, ST_E_INVALID, "table %s: hook meta block %zu is malformed",
                            tb->path, i));
      goto out;
    }
    metas[nmeta].name = blocks[i].name;
    rc = write_block(tb, blocks[i].size ? blocks[i].data : (const uint8_t *)"", blocks[i].size,
                     &metas[nmeta].h, err);
    tb->hook_offsets[i] = metas[nmeta].h.offset;
    nmeta++;
    if (rc) goto out;
  }
  qsort(metas, nmeta, sizeof *metas, by_name);
  block_builder_t mb;
  block_builder_init(&mb, 1);
  for (size_t i = 0; i < nmeta; i++) {
    if (i && strcmp(metas[i - 1].name, metas[i].name) == 0) {
      block_builder_release(&mb);
      rc = fail(tb, err_set(err, ST_E_INVALID, "table %s: two meta blocks named \"%s\"", tb->path,
                            metas[i].name));
      goto out;
    }
    uint8_t enc[BLOCK_HANDLE_MAX_BYTES];
    size_t elen = (size_t)(block_handle_encode(enc, &metas[i].h) - enc);
    if (block_builder_add(&mb, metas[i].name, strlen(metas[i].name), enc, elen)) {
      block_builder_release(&mb);
      rc = nomem(tb, err);
      goto out;
    }
  }
  size_t n;
  const uint8_t *c = block_builder_finish(&mb, &n);
  block_handle_t meta_h, index_h;
  rc = c ? write_block(tb, c, n, &meta_h, err) : nomem(tb, err);
  block_builder_release(&mb);
  if (rc) goto out;
  c = block_builder_finish(&tb->index, &n);
  rc = c ? write_block(tb, c, n, &index_h, err) : nomem(tb, err);
  if (rc) goto out;
  rc = write_footer(tb, &meta_h, &index_h, err);
  if (rc) goto out;
  rc = tb->opt.sync ? env_file_sync(tb->file, err) : env_file_flush(tb->file, err);
  if (rc) goto out;
  rc = env_file_close(tb->file, err);
  tb->file = NULL;
out:
  free(metas);
  if (rc) fail(tb, rc);
  return rc;
}

int table_builder_finish(table_builder_t *tb, err_t *err) {
  if (tb->dead || tb->finished) {
    int rc = err_set(err, tb->dead ? tb->dead : ST_E_INVALID, "table %s: builder is %s", tb->path,
                     tb->dead ? "dead after an error" : "already finished");
    hook_end(tb, 0);
    return rc;
  }
  int rc = finish(tb, err);
  if (rc) {
    hook_end(tb, 0);
    return rc;
  }
  tb->finished = 1;
  hook_end(tb, 1);
  return ST_OK;
}

void table_builder_destroy(table_builder_t *tb) {
  if (!tb) return;
  if (!tb->finished) hook_end(tb, 0);
  env_file_close(tb->file, NULL);
  block_builder_release(&tb->data);
  block_builder_release(&tb->index);
  u64vec_release(&tb->hashes);
  free(tb->first);
  free(tb->last);
  free(tb->hook_offsets);
  free(tb->path);
  free(tb);
}

uint64_t table_builder_entries(const table_builder_t *tb) {
  return tb->entries;
}

uint64_t table_builder_max_seq(const table_builder_t *tb) {
  return tb->max_seq;
}
uint64_t table_builder_file_size(const table_builder_t *tb) {
  return tb->offset;
}

const uint8_t *table_builder_smallest(const table_builder_t *tb, size_t *n) {
  *n = tb->entries ? tb->first_len : 0;
  return tb->entries ? tb->first : NULL;
}

const uint8_t *table_builder_largest(const table_builder_t *tb, size_t *n) {
  *n = tb->entries ? tb->last_len : 0;
  return tb->entries ? tb->last : NULL;
}

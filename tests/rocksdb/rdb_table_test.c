/* Tests of the reader of RocksDB's block-based tables (lsm_hooks/rocksdb_format/rdb_table)
 * against tables written by stock RocksDB 7.8.3 through its C API: a matrix over compression,
 * checksum type, format_version, index type, the data-block hash index and the index restart
 * interval, each table read back and compared entry by entry (by sequence number) with what
 * was written; damage (every byte flipped in turn: an error naming file and offset, or the
 * same entries, never another answer); single blocks read by the refs a scan reported; the tag.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <rocksdb/c.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bfh.h"
#include "lsm/block.h"
#include "lsm_hooks/rocksdb_format/rdb_table.h"
#include "tests/test_util.h"
#include "util/coding.h"
#include "util/random.h"

static char tmpdir[4096];

/* ---- What is written: one record per sequence number ---------------------------------- */

#define MAX_OPS 2000
typedef struct rec {
  char key[40];
  size_t key_len;
  char val[300];
  size_t val_len;
  int type; /* RDB_TYPE_* */
  int seen;
} rec_t;

typedef struct model {
  rec_t recs[MAX_OPS + 1]; /* by sequence (1-based) */
  uint64_t nseq;
  uint64_t visited;
  int order_bad; /* data entries out of (user key asc, seq desc) order */
  char last_key[40];
  size_t last_len;
  uint64_t last_seq;
  int have_last;
  int mismatch; /* an entry that matches no record */
  int blobs;    /* puts of BLOB_MIN bytes or more are blob references in the table */
  uint64_t blocks;
  block_ref_t refs[4096];
} model_t;

/* The merge operator: concatenation (never called on data kept apart by snapshots). */
static char *merge_full(void *s, const char *k, size_t kl, const char *ev, size_t evl,
                        const char *const *ops, const size_t *opl, int n, unsigned char *ok,
                        size_t *outl) {
  (void)s, (void)k, (void)kl;
  size_t len = evl;
  for (int i = 0; i < n; i++) len += opl[i];
  char *out = malloc(len + 1), *p = out;
  if (ev) memcpy(p, ev, evl), p += evl;
  for (int i = 0; i < n; i++) memcpy(p, ops[i], opl[i]), p += opl[i];
  *ok = 1;
  *outl = len;
  return out;
}
static char *merge_partial(void *s, const char *k, size_t kl, const char *const *ops,
                           const size_t *opl, int n, unsigned char *ok, size_t *outl) {
  return merge_full(s, k, kl, NULL, 0, ops, opl, n, ok, outl);
}
static void merge_delete(void *s, const char *v, size_t n) {
  (void)s, (void)n;
  free((void *)v);
}
static void merge_state_free(void *s) {
  (void)s;
}
static const char *merge_name(void *s) {
  (void)s;
  return "bfh.test.concat";
}

typedef struct config {
  int compression; /* rocksdb_*_compression */
  const char *compression_name;
  int checksum;       /* 1 crc32c, 2 xxhash, 3 xxhash64, 4 xxh3 */
  int format_version; /* 0..5 */
  int index_type;     /* 0 binary, 1 hash, 2 two-level */
  int data_hash;      /* data block hash index */
  int index_restart;  /* index_block_restart_interval */
  int nops;
  int blobs; /* values of BLOB_MIN bytes or more go to blob files */
} config_t;

#define BLOB_MIN 100

static void make_key(rng_t *r, char *k, size_t *n) {
  *n = (size_t)snprintf(k, 40, "key%05u", (unsigned)rng_below(r, 300));
}

/* Writes the workload of c into a fresh database dir with one snapshot after every write (so
   that the flush keeps every version), flushes it to one table and returns the table's path
   in path. m gets a record per sequence number. */
static void write_table(const config_t *c, const char *dir, model_t *m, char *path, size_t cap) {
  rocksdb_options_t *o = rocksdb_options_create();
  rocksdb_options_set_create_if_missing(o, 1);
  rocksdb_options_set_disable_auto_compactions(o, 1);
  rocksdb_options_set_compression(o, c->compression);
  rocksdb_block_based_table_options_t *bo = rocksdb_block_based_options_create();
  rocksdb_block_based_options_set_checksum(bo, (char)c->checksum);
  rocksdb_block_based_options_set_format_version(bo, c->format_version);
  rocksdb_block_based_options_set_block_size(bo, 512);
  rocksdb_block_based_options_set_index_type(bo, c->index_type);
  rocksdb_block_based_options_set_index_block_restart_interval(bo, c->index_restart);
  rocksdb_block_based_options_set_metadata_block_size(bo, 256); /* several index partitions */
  if (c->data_hash) {
    rocksdb_block_based_options_set_data_block_index_type(
        bo, rocksdb_block_based_table_data_block_index_type_binary_search_and_hash);
    rocksdb_block_based_options_set_data_block_hash_ratio(bo, 0.75);
  }
  if (c->index_type == 1)
    rocksdb_options_set_prefix_extractor(o, rocksdb_slicetransform_create_fixed_prefix(5));
  rocksdb_options_set_block_based_table_factory(o, bo);
  rocksdb_mergeoperator_t *mo = rocksdb_mergeoperator_create(
      NULL, merge_state_free, merge_full, merge_partial, merge_delete, merge_name);
  rocksdb_options_set_merge_operator(o, mo);
  if (c->blobs) {
    rocksdb_options_set_enable_blob_files(o, 1);
    rocksdb_options_set_min_blob_size(o, BLOB_MIN);
  }
  char *e = NULL;
  rocksdb_t *db = rocksdb_open(o, dir, &e);
  if (e) fail_msg("rocksdb_open %s: %s", dir, e);
  rocksdb_writeoptions_t *wo = rocksdb_writeoptions_create();
  rocksdb_writeoptions_disable_WAL(wo, 1);
  const rocksdb_snapshot_t *snaps[MAX_OPS];
  rng_t r;
  rng_init(&r, 0x5eed0000u + (uint64_t)c->nops);
  memset(m, 0, sizeof *m);
  m->blobs = c->blobs;
  for (int i = 0; i < c->nops; i++) {
    rec_t *x = &m->recs[++m->nseq];
    make_key(&r, x->key, &x->key_len);
    uint64_t kind = rng_below(&r, 20);
    if (kind < 12 || kind == 19) { /* a put, now and then of the empty value */
      x->type = RDB_TYPE_VALUE;
      x->val_len = kind == 19 ? 0 : (size_t)rng_below(&r, 250);
      for (size_t j = 0; j < x->val_len; j++) x->val[j] = (char)('a' + (j * 7 + i) % 26);
      rocksdb_put(db, wo, x->key, x->key_len, x->val, x->val_len, &e);
    } else if (kind < 14) {
      x->type = RDB_TYPE_DELETION;
      rocksdb_delete(db, wo, x->key, x->key_len, &e);
    } else if (kind < 15) {
      x->type = RDB_TYPE_SINGLE_DELETION;
      rocksdb_singledelete(db, wo, x->key, x->key_len, &e);
    } else if (kind < 18) {
      x->type = RDB_TYPE_MERGE;
      x->val_len = (size_t)snprintf(x->val, sizeof x->val, "op%d", i);
      rocksdb_merge(db, wo, x->key, x->key_len, x->val, x->val_len, &e);
    } else { /* a range deletion [key, key + "~") */
      x->type = RDB_TYPE_RANGE_DELETION;
      memcpy(x->val, x->key, x->key_len);
      x->val[x->key_len] = '~';
      x->val_len = x->key_len + 1;
      rocksdb_writebatch_t *wb = rocksdb_writebatch_create();
      rocksdb_writebatch_delete_range(wb, x->key, x->key_len, x->val, x->val_len);
      rocksdb_write(db, wo, wb, &e);
      rocksdb_writebatch_destroy(wb);
    }
    if (e) fail_msg("write %d: %s", i, e);
    snaps[i] = rocksdb_create_snapshot(db);
  }
  rocksdb_flushoptions_t *fo = rocksdb_flushoptions_create();
  rocksdb_flushoptions_set_wait(fo, 1);
  rocksdb_flush(db, fo, &e);
  if (e) fail_msg("flush: %s", e);
  const rocksdb_livefiles_t *lf = rocksdb_livefiles(db);
  assert_int_equal(rocksdb_livefiles_count(lf), 1);
  snprintf(path, cap, "%s%s", dir, rocksdb_livefiles_name(lf, 0));
  rocksdb_livefiles_destroy(lf);
  for (int i = 0; i < c->nops; i++) rocksdb_release_snapshot(db, snaps[i]);
  rocksdb_flushoptions_destroy(fo);
  rocksdb_writeoptions_destroy(wo);
  rocksdb_close(db);
  rocksdb_options_destroy(o);
  rocksdb_block_based_options_destroy(bo);
}

static int visit(void *arg, const rdb_entry_t *e) {
  model_t *m = arg;
  m->visited++;
  if (e->seq == 0 || e->seq > m->nseq) {
    m->mismatch++;
    return 0;
  }
  rec_t *x = &m->recs[e->seq];
  if (m->blobs && x->type == RDB_TYPE_VALUE && x->val_len >= BLOB_MIN) {
    /* a blob reference (its encoding is RocksDB's), not the value */
    if (x->seen || e->type != RDB_TYPE_BLOB_INDEX || x->key_len != e->key_len ||
        memcmp(x->key, e->key, e->key_len) != 0 || e->val_len == 0)
      m->mismatch++;
    x->seen = 1;
    return 0;
  }
  if (x->seen || x->type != e->type || x->key_len != e->key_len ||
      memcmp(x->key, e->key, e->key_len) != 0 || x->val_len != e->val_len ||
      (e->val_len && memcmp(x->val, e->val, e->val_len) != 0)) {
    m->mismatch++;
    return 0;
  }
  x->seen = 1;
  if (e->type != RDB_TYPE_RANGE_DELETION) {
    if (m->have_last) {
      size_t n = m->last_len < e->key_len ? m->last_len : e->key_len;
      int cmp = memcmp(m->last_key, e->key, n);
      if (cmp == 0) cmp = m->last_len < e->key_len ? -1 : m->last_len > e->key_len;
      if (cmp > 0 || (cmp == 0 && m->last_seq <= e->seq)) m->order_bad++;
    }
    memcpy(m->last_key, e->key, e->key_len);
    m->last_len = e->key_len;
    m->last_seq = e->seq;
    m->have_last = 1;
  }
  return 0;
}

static int on_block(void *arg, uint64_t off, uint64_t size) {
  model_t *m = arg;
  if (m->blocks < 4096) m->refs[m->blocks] = (block_ref_t){.offset = off, .size = size};
  m->blocks++;
  return 0;
}

/* visit for the entries whose value (as the table stores it) holds the needle: the reference
   a read with that needle must agree with. */
typedef struct needled {
  model_t *m;
  block_needle_t nd;
  uint64_t held;
} needled_t;

static int visit_if_needled(void *arg, const rdb_entry_t *e) {
  needled_t *x = arg;
  if (!memmem(e->val, e->val_len, x->nd.bytes, x->nd.len)) return 0;
  x->held++;
  return visit(x->m, e);
}

static void reset_seen(model_t *m) {
  for (uint64_t s = 1; s <= m->nseq; s++) m->recs[s].seen = 0;
  m->visited = 0;
  m->mismatch = m->order_bad = 0;
  m->have_last = 0;
  m->blocks = 0;
}

static uint64_t count_type(const model_t *m, int type) {
  uint64_t n = 0;
  for (uint64_t s = 1; s <= m->nseq; s++) {
    const rec_t *x = &m->recs[s];
    int blob = m->blobs && x->type == RDB_TYPE_VALUE && x->val_len >= BLOB_MIN;
    n += (blob ? RDB_TYPE_BLOB_INDEX : x->type) == type;
  }
  return n;
}

/* Writes a table with c and checks that every read of it gives back exactly what was written. */
static void check_config(const config_t *c) {
  char dir[4200], path[4400];
  static int serial;
  snprintf(dir, sizeof dir, "%s/db%d", tmpdir, serial++);
  static model_t m;
  write_table(c, dir, &m, path, sizeof path);
  err_t err = {0};
  rdb_read_stats_t st = {0};
  rdb_table_props_t props;
  uint64_t tag = 0, tag2 = 0;
  int rc = rdb_table_scan_tagged(env_default(), path, visit, on_block, &m, &st, &tag, &props, &err);
  if (rc != BFH_OK)
    fail_msg("comp %s cks %d fv %d index %d hash %d: %s", c->compression_name, c->checksum,
             c->format_version, c->index_type, c->data_hash, err.msg);
  assert_int_equal(m.mismatch, 0);
  assert_int_equal(m.order_bad, 0);
  assert_int_equal(m.visited, m.nseq); /* every write, once */
  assert_int_equal(st.entries, m.nseq);
  assert_int_equal(st.merges, count_type(&m, RDB_TYPE_MERGE));
  assert_int_equal(st.range_dels, count_type(&m, RDB_TYPE_RANGE_DELETION));
  assert_int_equal(st.blob_refs, count_type(&m, RDB_TYPE_BLOB_INDEX));
  assert_true(!c->blobs || st.blob_refs > 0);
  assert_int_equal(st.blocks, m.blocks);
  assert_true(m.blocks > 3);
  /* The properties. */
  /* Asked for format_version 0 and a checksum other than CRC32C, which the legacy footer
     cannot name, RocksDB writes format_version 1. */
  assert_int_equal(props.format_version,
                   c->format_version == 0 && c->checksum != 1 ? 1 : c->format_version);
  assert_int_equal(props.checksum_type, c->checksum);
  assert_int_equal(props.cf_id, 0);
  assert_string_equal(props.cf_name, "default");
  assert_string_equal(props.compression, c->compression_name);
  assert_string_equal(props.merge_operator, "bfh.test.concat");
  assert_string_equal(props.comparator, "leveldb.BytewiseComparator");
  assert_int_equal(props.index_type, c->index_type);
  assert_int_equal(props.num_range_deletions, count_type(&m, RDB_TYPE_RANGE_DELETION));
  assert_int_equal(props.num_merge_operands, count_type(&m, RDB_TYPE_MERGE));
  assert_int_equal(props.num_entries, m.nseq); /* range tombstones included */
  assert_int_equal(props.num_data_blocks, m.blocks);
  assert_int_equal(props.has_range_del_block, count_type(&m, RDB_TYPE_RANGE_DELETION) > 0);
  assert_int_equal(props.index_value_is_delta_encoded, c->format_version >= 4);
  if (c->format_version < 3) assert_int_equal(props.index_key_is_user_key, 0);
  rdb_table_props_t p2;
  assert_int_equal(rdb_table_props_read(env_default(), path, &p2, &err), BFH_OK);
  assert_int_equal(p2.num_entries, props.num_entries);
  rdb_table_props_release(&p2);
  rdb_table_props_release(&props);
  rdb_table_props_release(NULL);
  /* The tag: the same from the file's own read. */
  assert_int_equal(rdb_table_tag(env_default(), path, &tag2, &err), BFH_OK);
  assert_true(tag == tag2);
  /* Single blocks by the refs the scan reported: all of them give the data entries back;
     the last one alone gives only its own. */
  uint64_t nblocks = m.blocks;
  block_ref_t *refs = malloc(sizeof(block_ref_t) * nblocks);
  memcpy(refs, m.refs, sizeof(block_ref_t) * nblocks);
  reset_seen(&m);
  rdb_read_stats_t st2 = {0};
  rc = rdb_table_read_blocks(env_default(), path, refs, nblocks, visit, &m, &st2, &err);
  if (rc != BFH_OK) fail_msg("read_blocks: %s", err.msg);
  assert_int_equal(m.mismatch, 0);
  assert_int_equal(m.visited, m.nseq - count_type(&m, RDB_TYPE_RANGE_DELETION));
  assert_int_equal(st2.blocks, nblocks);
  reset_seen(&m);
  assert_int_equal(
      rdb_table_read_blocks(env_default(), path, refs + nblocks - 1, 1, visit, &m, NULL, &err),
      BFH_OK);
  assert_true(m.visited > 0 && m.visited < m.nseq / 2);
  assert_int_equal(m.mismatch, 0);
  /* A read that looks for a needle (4 bytes of a value of the middle record that has 8 or
     more): exactly the entries whose stored value holds it, fewer entries decoded. */
  uint64_t mid = m.nseq / 2;
  while (mid <= m.nseq && (m.recs[mid].type != RDB_TYPE_VALUE || m.recs[mid].val_len < 8)) mid++;
  if (mid <= m.nseq) {
    needled_t want = {&m, {m.recs[mid].val + 2, 4}, 0};
    reset_seen(&m);
    assert_int_equal(rdb_table_read_blocks(env_default(), path, refs, nblocks, visit_if_needled,
                                           &want, NULL, &err),
                     BFH_OK);
    assert_true(want.held > 0);
    reset_seen(&m);
    rdb_read_stats_t st3 = {0};
    assert_int_equal(rdb_table_read_blocks_cached(env_default(), path, refs, nblocks, NULL,
                                                  &want.nd, 1, visit, &m, &st3, &err),
                     BFH_OK);
    assert_int_equal(m.visited, want.held);
    assert_int_equal(m.mismatch, 0);
    assert_true(st3.entries >= want.held && st3.entries < st2.entries);
  }
  /* The footer read once (rdb_table_footer_read_rfile) and passed to each read of blocks: the
     same entries, and no byte read but the blocks'; a footer taken at another size is not
     trusted (read again: the same answer). */
  env_rfile_t *f = NULL;
  assert_int_equal(env_open_read(env_default(), path, &f, &err), BFH_OK);
  rdb_table_footer_t ft;
  assert_int_equal(rdb_table_footer_read_rfile(f, path, &ft, &err), BFH_OK);
  assert_int_equal(ft.size, env_rfile_size(f));
  assert_int_equal(ft.format_version,
                   c->format_version == 0 && c->checksum != 1 ? 1 : c->format_version);
  assert_int_equal(ft.checksum_type, c->checksum);
  assert_int_equal(ft.footer_at + ft.footer_len, ft.size);
  rdb_table_footer_t other = ft;
  other.size++;
  for (int pass = 0; pass < 2; pass++) {
    reset_seen(&m);
    rdb_read_stats_t st3 = {0};
    assert_int_equal(rdb_table_read_blocks_footer(f, path, pass ? &other : &ft, refs, nblocks,
                                                  visit, &m, &st3, &err),
                     BFH_OK);
    assert_int_equal(m.mismatch, 0);
    assert_int_equal(m.visited, m.nseq - count_type(&m, RDB_TYPE_RANGE_DELETION));
    assert_int_equal(st3.blocks, nblocks);
    /* pass 0: the blocks alone; pass 1: the footer's last bytes read again too */
    uint64_t footer_read = ft.size >= RDB_FOOTER_BYTES ? RDB_FOOTER_BYTES : RDB_LEGACY_FOOTER_BYTES;
    assert_int_equal(st3.bytes_read + (pass ? 0 : footer_read), st2.bytes_read);
  }
  env_rfile_close(f);
  free(refs);
  test_rmrf(dir);
}

static const struct {
  int type;
  const char *name;
} comps[] = {{rocksdb_no_compression, "NoCompression"}, {rocksdb_snappy_compression, "Snappy"},
             {rocksdb_zlib_compression, "Zlib"},        {rocksdb_bz2_compression, "BZip2"},
             {rocksdb_lz4_compression, "LZ4"},          {rocksdb_lz4hc_compression, "LZ4HC"},
             {rocksdb_zstd_compression, "ZSTD"}};
#define NCOMPS (sizeof comps / sizeof comps[0])

/* Every compressor under every checksum type, format_version 5 (the default) and 2. */
static void test_rdb_table_compression_checksum(void **state) {
  (void)state;
  for (size_t ci = 0; ci < NCOMPS; ci++)
    for (int cks = 1; cks <= 4; cks++)
      for (int fv = 2; fv <= 5; fv += 3) {
        config_t c = {.compression = comps[ci].type,
                      .compression_name = comps[ci].name,
                      .checksum = cks,
                      .format_version = fv,
                      .index_type = 0,
                      .data_hash = 0,
                      .index_restart = 1,
                      .nops = 600};
        check_config(&c);
      }
}

/* Every format_version under every index type, with and without the data-block hash index,
   index restart intervals 1 and 4 (delta-encoded values between restarts), the compressor and
   checksum type rotating. format_version 0 and 1 frame compressed blocks the old way. */
static void test_rdb_table_versions_indexes(void **state) {
  (void)state;
  int k = 0;
  for (int fv = 0; fv <= 5; fv++)
    for (int it = 0; it <= 2; it++)
      for (int dh = 0; dh <= 1; dh++)
        for (int ri = 1; ri <= 4; ri += 3, k++) {
          config_t c = {.compression = comps[k % NCOMPS].type,
                        .compression_name = comps[k % NCOMPS].name,
                        .checksum = 1 + k % 4,
                        .format_version = fv,
                        .index_type = it,
                        .data_hash = dh,
                        .index_restart = ri,
                        .nops = 800};
          check_config(&c);
        }
}

/* ---- Damage --------------------------------------------------------------------------- */

typedef struct digest {
  uint64_t h, n;
} digest_t;

static int digest_visit(void *arg, const rdb_entry_t *e) {
  digest_t *d = arg;
  d->n++;
  d->h = d->h * 1099511628211ull ^ e->seq ^ (uint64_t)e->type << 56;
  for (size_t i = 0; i < e->key_len; i++) d->h = d->h * 31 + e->key[i];
  for (size_t i = 0; i < e->val_len; i++) d->h = d->h * 37 + e->val[i];
  return 0;
}

static uint8_t *slurp(const char *path, size_t *n) {
  FILE *f = fopen(path, "rb");
  assert_non_null(f);
  fseek(f, 0, SEEK_END);
  *n = (size_t)ftell(f);
  fseek(f, 0, SEEK_SET);
  uint8_t *p = malloc(*n);
  assert_int_equal(fread(p, 1, *n, f), *n);
  fclose(f);
  return p;
}

static void spit(const char *path, const uint8_t *p, size_t n) {
  FILE *f = fopen(path, "wb");
  assert_non_null(f);
  assert_int_equal(fwrite(p, 1, n, f), n);
  fclose(f);
}

/* Every byte of a small table flipped in turn, under each checksum type: the read fails with
   BFH_E_CORRUPT or BFH_E_UNSUPPORTED naming the file, or gives the very same entries (a byte the
   reader does not use: the filter, the footer's padding). Never a crash, never other entries. */
static void test_rdb_table_every_byte_flipped(void **state) {
  (void)state;
  for (int cks = 1; cks <= 4; cks++) {
    /* crc32c: format_version 0 (the legacy footer), zlib; xxhash: snappy and the data-block
       hash index; xxhash64: zstd and a partitioned index; XXH3: bzip2, the hash index. */
    static const int comp[] = {0, rocksdb_zlib_compression, rocksdb_snappy_compression,
                               rocksdb_zstd_compression, rocksdb_bz2_compression};
    static const int fv[] = {0, 0, 3, 4, 5}, index[] = {0, 0, 0, 2, 1};
    config_t c = {.compression = comp[cks],
                  .compression_name = "",
                  .checksum = cks,
                  .format_version = fv[cks],
                  .index_type = index[cks],
                  .data_hash = cks == 2,
                  .index_restart = 1,
                  .nops = 40};
    char dir[4200], path[4400], bad[4400];
    snprintf(dir, sizeof dir, "%s/flip%d", tmpdir, cks);
    static model_t m;
    write_table(&c, dir, &m, path, sizeof path);
    snprintf(bad, sizeof bad, "%s/bad.sst", tmpdir);
    size_t n;
    uint8_t *orig = slurp(path, &n);
    /* BFH_RDB_TABLE_SEEDS=DIR: these small tables are the fuzz target's seeds
       (tests/fuzz/regress/rdb_table/). */
    const char *seeds = getenv("BFH_RDB_TABLE_SEEDS");
    if (seeds && *seeds) {
      char seed[4400];
      snprintf(seed, sizeof seed, "%s/seed-checksum%d-fv%d-index%d.sst", seeds, cks, fv[cks],
               index[cks]);
      spit(seed, orig, n);
    }
    err_t err = {0};
    digest_t want = {0};
    assert_int_equal(rdb_table_scan(env_default(), path, digest_visit, &want, NULL, &err), BFH_OK);
    assert_int_equal(want.n, 40);
    uint64_t errors = 0, same = 0;
    for (size_t i = 0; i < n; i++) {
      orig[i] ^= 0x20;
      spit(bad, orig, n);
      orig[i] ^= 0x20;
      digest_t got = {0};
      int rc = rdb_table_scan(env_default(), bad, digest_visit, &got, NULL, &err);
      if (rc == BFH_OK) {
        if (got.h != want.h || got.n != want.n)
          fail_msg("checksum type %d: byte %zu flipped: other entries, no error", cks, i);
        same++;
      } else {
        if (rc != BFH_E_CORRUPT && rc != BFH_E_UNSUPPORTED)
          fail_msg("byte %zu: rc %d (%s)", i, rc, err.msg);
        assert_non_null(strstr(err.msg, bad));
        errors++;
      }
    }
    /* Most bytes are checked: the data, index, metaindex and properties blocks. */
    assert_true(errors > n / 2);
    free(orig);
    test_rmrf(dir);
  }
}

/* A flipped byte in the first data block, in the index block and in the footer's magic: each
   BFH_E_CORRUPT with a message naming the file and the offset of what is damaged. */
static void test_rdb_table_corrupt_names_offset(void **state) {
  (void)state;
  config_t c = {.compression = rocksdb_lz4_compression,
                .compression_name = "LZ4",
                .checksum = 4,
                .format_version = 5,
                .index_type = 0,
                .index_restart = 1,
                .nops = 300};
  char dir[4200], path[4400], bad[4400], want[4600];
  snprintf(dir, sizeof dir, "%s/corrupt", tmpdir);
  static model_t m;
  write_table(&c, dir, &m, path, sizeof path);
  snprintf(bad, sizeof bad, "%s/corrupt.sst", tmpdir);
  size_t n;
  uint8_t *p = slurp(path, &n);
  err_t err = {0};
  reset_seen(&m);
  assert_int_equal(rdb_table_scan_blocks(env_default(), path, visit, on_block, &m, NULL, &err),
                   BFH_OK);
  block_ref_t first = m.refs[0];
  /* The index handle, from the footer (checksum type, metaindex handle, index handle). */
  block_handle_t meta, index;
  const uint8_t *q = block_handle_decode(p + n - 52, p + n - 12, &meta);
  assert_non_null(q);
  assert_non_null(block_handle_decode(q, p + n - 12, &index));
  struct {
    uint64_t at, named;
  } cases[] = {{first.offset + first.size / 2, first.offset},
               {index.offset + 1, index.offset},
               {n - 3, n - 8}};
  for (size_t i = 0; i < 3; i++) {
    p[cases[i].at] ^= 0x01;
    spit(bad, p, n);
    p[cases[i].at] ^= 0x01;
    reset_seen(&m);
    assert_int_equal(rdb_table_scan(env_default(), bad, visit, &m, NULL, &err), BFH_E_CORRUPT);
    snprintf(want, sizeof want, "table %s: %s at %llu", bad, i == 2 ? "footer" : "block",
             (unsigned long long)cases[i].named);
    if (!strstr(err.msg, want)) fail_msg("case %zu: '%s' lacks '%s'", i, err.msg, want);
    if (i == 0) { /* the damaged block read alone: the same, also with the footer known */
      assert_int_equal(rdb_table_read_blocks(env_default(), bad, &first, 1, visit, &m, NULL, &err),
                       BFH_E_CORRUPT);
      assert_non_null(strstr(err.msg, want));
      env_rfile_t *f = NULL;
      rdb_table_footer_t ft;
      assert_int_equal(env_open_read(env_default(), bad, &f, &err), BFH_OK);
      assert_int_equal(rdb_table_footer_read_rfile(f, bad, &ft, &err), BFH_OK);
      assert_int_equal(
          rdb_table_read_blocks_footer(f, bad, &ft, &first, 1, visit, &m, NULL, &err),
          BFH_E_CORRUPT);
      assert_non_null(strstr(err.msg, want));
      env_rfile_close(f);
    }
    if (i == 2) { /* a damaged footer: no footer to keep */
      env_rfile_t *f = NULL;
      rdb_table_footer_t ft;
      assert_int_equal(env_open_read(env_default(), bad, &f, &err), BFH_OK);
      assert_int_equal(rdb_table_footer_read_rfile(f, bad, &ft, &err), BFH_E_CORRUPT);
      assert_non_null(strstr(err.msg, want));
      env_rfile_close(f);
    }
  }
  /* A ref outside the file, a truncated file, a missing file. */
  block_ref_t far = {.offset = n, .size = 10};
  assert_int_equal(rdb_table_read_blocks(env_default(), path, &far, 1, visit, &m, NULL, &err),
                   BFH_E_CORRUPT);
  spit(bad, p, n / 2);
  assert_int_equal(rdb_table_scan(env_default(), bad, visit, &m, NULL, &err), BFH_E_CORRUPT);
  snprintf(want, sizeof want, "%s/missing.sst", tmpdir);
  assert_int_equal(rdb_table_scan(env_default(), want, visit, &m, NULL, &err), BFH_NOT_FOUND);
  assert_int_equal(rdb_table_tag(env_default(), want, &far.offset, &err), BFH_NOT_FOUND);
  free(p);
  test_rmrf(dir);
}

/* The tag changes with the table's contents: two tables of the same keys, one value changed. */
static void test_rdb_table_tag_binds_contents(void **state) {
  (void)state;
  config_t c = {.compression = rocksdb_snappy_compression,
                .compression_name = "Snappy",
                .checksum = 1,
                .format_version = 5,
                .index_type = 2,
                .index_restart = 1,
                .nops = 200};
  char dir[4200], path[4400], bad[4400];
  snprintf(dir, sizeof dir, "%s/tag", tmpdir);
  static model_t m;
  write_table(&c, dir, &m, path, sizeof path);
  snprintf(bad, sizeof bad, "%s/tag.sst", tmpdir);
  size_t n;
  uint8_t *p = slurp(path, &n);
  err_t err = {0};
  uint64_t t1, t2;
  assert_int_equal(rdb_table_tag(env_default(), path, &t1, &err), BFH_OK);
  /* The same bytes elsewhere: the same tag. A changed data-block trailer: another tag. */
  spit(bad, p, n);
  assert_int_equal(rdb_table_tag(env_default(), bad, &t2, &err), BFH_OK);
  assert_true(t1 == t2);
  reset_seen(&m);
  assert_int_equal(rdb_table_scan_blocks(env_default(), path, visit, on_block, &m, NULL, &err),
                   BFH_OK);
  p[m.refs[1].offset + m.refs[1].size + 2] ^= 1; /* the checksum of the second block */
  spit(bad, p, n);
  assert_int_equal(rdb_table_tag(env_default(), bad, &t2, &err), BFH_OK);
  assert_true(t1 != t2);
  free(p);
  test_rmrf(dir);
}

static int setup(void **state) {
  (void)state;
  return test_tmpdir_create(tmpdir, sizeof tmpdir, "rdb_table");
}

static int teardown(void **state) {
  (void)state;
  return test_rmrf(tmpdir);
}

/* Values in blob files: the table holds blob references (type 0x11), counted and reported as
   such, never taken for values. */
static void test_rdb_table_blob_references(void **state) {
  (void)state;
  for (int fv = 2; fv <= 5; fv += 3) {
    config_t c = {.compression = rocksdb_zstd_compression,
                  .compression_name = "ZSTD",
                  .checksum = 4,
                  .format_version = fv,
                  .index_restart = 1,
                  .nops = 600,
                  .blobs = 1};
    check_config(&c);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_rdb_table_compression_checksum),
      cmocka_unit_test(test_rdb_table_versions_indexes),
      cmocka_unit_test(test_rdb_table_every_byte_flipped),
      cmocka_unit_test(test_rdb_table_corrupt_names_offset),
      cmocka_unit_test(test_rdb_table_tag_binds_contents),
      cmocka_unit_test(test_rdb_table_blob_references),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}

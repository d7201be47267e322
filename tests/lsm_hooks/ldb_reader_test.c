/* Tests of the LevelDB file readers (lsm_hooks/engines/leveldb/table, log, sstables) against
 * databases written by stock LevelDB 1.23 through its C API with default options (snappy
 * blocks, 4 MiB write buffer, 2 MiB tables), and of the filters built from a table
 * (lsm_hooks/engines/leveldb/filter). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <dirent.h>
#include <fcntl.h>
#include <leveldb/c.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bfh.h"
#include "lsm_hooks/engines/leveldb/ldb_engine.h"
#include "lsm/block.h"
#include "lsm/log.h"
#include "lsm_hooks/leveldb_format/ldb_log.h"
#include "lsm_hooks/leveldb_format/ldb_sstables.h"
#include "lsm_hooks/leveldb_format/ldb_table.h"
#include "tests/leveldb_test_util.h"
#include "tests/test_util.h"
#include "util/coding.h"
#include "util/random.h"

#define NKEYS 120000u       /* key space */
#define NOPS_TABLES 300000u /* puts and deletes, fully compacted: tables on one or two levels */
#define NOPS_FLUSHED 20000u /* then flushed: one more table, on a level above those */
#define NOPS_LOG 10000u     /* then written by each test: in the log (well under 4 MiB) */
#define BIG_OP (NOPS_TABLES + NOPS_FLUSHED + NOPS_LOG / 2) /* a value of BIG_VALUE bytes */
#define BIG_VALUE 100000 /* one value spans several log blocks (FIRST/MIDDLE/LAST) */

static char tmpdir[4096];
static char template_db[4200];

static int key_index(const uint8_t *k, size_t n) {
  if (n != 11 || memcmp(k, "key", 3) != 0) return -1;
  char buf[9];
  memcpy(buf, k + 3, 8);
  buf[8] = 0;
  return atoi(buf);
}

/* Values: compressible text of 20..200 bytes (snappy pays), a few repeated, one big. */
static size_t make_value(rng_t *r, uint32_t op, char *out) {
  if (op == BIG_OP) {
    for (int i = 0; i < BIG_VALUE; i++) out[i] = (char)('a' + i % 26);
    return BIG_VALUE;
  }
  uint64_t id = rng_below(r, 10) == 0 ? rng_below(r, 50) : op;
  size_t len = 20 + (size_t)rng_below(r, 180);
  int n = snprintf(out, 64, "value-%llu-", (unsigned long long)id);
  rng_t vr; /* the value depends on id only, so repeated ids repeat values */
  rng_init(&vr, id);
  for (size_t i = (size_t)n; i < len; i++)
    out[i] = i % 2 ? (char)('a' + rng_below(&vr, 26)) : (char)('a' + (id + i / 8) % 26);
  return len > (size_t)n ? len : (size_t)n;
}

/* Operations first_op .. first_op + nops - 1: a put of a random key, or one time in ten a
   delete. Returns 0, or -1 after printing what failed (it asserts nothing, so that a fixture's
   setup can release what it opened before it fails). */
static int write_ops(leveldb_t *db, uint64_t seed, uint32_t first_op, uint32_t nops) {
  leveldb_writeoptions_t *wo = leveldb_writeoptions_create();
  rng_t r;
  rng_init(&r, seed);
  char *val = malloc(BIG_VALUE), *err = NULL;
  int rc = val ? 0 : -1;
  for (uint32_t op = first_op; rc == 0 && op < first_op + nops; op++) {
    char key[16];
    snprintf(key, sizeof key, "key%08u", (unsigned)rng_below(&r, NKEYS));
    if (rng_below(&r, 10) == 0) {
      leveldb_delete(db, wo, key, 11, &err);
    } else {
      size_t n = make_value(&r, op, val);
      leveldb_put(db, wo, key, 11, val, n, &err);
    }
    if (err) {
      print_error("write_ops: %s\n", err);
      leveldb_free(err);
      rc = -1;
    }
  }
  free(val);
  leveldb_writeoptions_destroy(wo);
  return rc;
}

/* The template: NOPS_TABLES operations compacted into tables (every level below 0 that holds
   them), then NOPS_FLUSHED more flushed into one table. That table overlaps the others, so
   LevelDB places it on a level above theirs: the readers see tables on at least two levels.
   It is settled (tests/leveldb_test_util.h): an open of a copy compacts nothing. */
static int group_setup(void **state) {
  (void)state;
  assert_int_equal(test_tmpdir_create(tmpdir, sizeof tmpdir, "ldb_reader"), 0);
  snprintf(template_db, sizeof template_db, "%s/template", tmpdir);
  leveldb_options_t *opt = leveldb_options_create();
  leveldb_options_set_create_if_missing(opt, 1);
  char *err = NULL;
  leveldb_t *db = leveldb_open(opt, template_db, &err);
  assert_null(err);
  assert_int_equal(write_ops(db, 5, 0, NOPS_TABLES), 0);
  leveldb_compact_range(db, NULL, 0, NULL, 0);
  ldb_test_settle(db);
  assert_int_equal(write_ops(db, 6, NOPS_TABLES, NOPS_FLUSHED), 0);
  ldb_test_settle(db);
  leveldb_close(db);
  leveldb_options_destroy(opt);
  return 0;
}

static int group_teardown(void **state) {
  (void)state;
  return test_rmrf(tmpdir);
}

/* Each test: a copy of the template, open, with NOPS_LOG more operations in its log. */
typedef struct db_fixture {
  leveldb_t *db;
  leveldb_options_t *opt;
  leveldb_readoptions_t *ro;
  leveldb_iterator_t *pin; /* a test's pinning iterator, destroyed by the teardown */
  char path[4300];
} db_fixture_t;

static int fixture_release(db_fixture_t *f) {
  if (f->pin) leveldb_iter_destroy(f->pin); /* LevelDB asserts no version is left in use */
  if (f->db) leveldb_close(f->db);
  if (f->ro) leveldb_readoptions_destroy(f->ro);
  if (f->opt) leveldb_options_destroy(f->opt);
  int rc = test_rmrf(f->path);
  free(f);
  return rc;
}

/* Asserts nothing: cmocka runs no teardown after a failed setup, so the setup releases
   what it opened itself. */
static int fixture_setup(void **state) {
  static unsigned count;
  db_fixture_t *f = calloc(1, sizeof *f);
  if (!f) return -1;
  snprintf(f->path, sizeof f->path, "%s/test%u", tmpdir, count++);
  if (test_copy_dir(template_db, f->path) != 0) {
    print_error("cannot copy %s to %s\n", template_db, f->path);
    fixture_release(f);
    return -1;
  }
  f->opt = leveldb_options_create();
  f->ro = leveldb_readoptions_create();
  char *err = NULL;
  f->db = leveldb_open(f->opt, f->path, &err);
  if (err) {
    print_error("leveldb_open %s: %s\n", f->path, err);
    leveldb_free(err);
    f->db = NULL;
    fixture_release(f);
    return -1;
  }
  if (write_ops(f->db, 7, NOPS_TABLES + NOPS_FLUSHED, NOPS_LOG) != 0) {
    fixture_release(f);
    return -1;
  }
  *state = f;
  return 0;
}

static int fixture_teardown(void **state) {
  return fixture_release(*state);
}

/* The newest version of every key seen by the readers. */
typedef struct newest {
  uint64_t seq[NKEYS];
  int type[NKEYS]; /* -1: never seen */
  char *val[NKEYS];
  size_t val_len[NKEYS];
  uint64_t entries;
  uint64_t table_entries, log_entries;
} newest_t;

static int record(void *arg, const ldb_entry_t *e) {
  newest_t *nw = arg;
  int i = key_index(e->key, e->key_len);
  assert_true(i >= 0 && i < (int)NKEYS);
  nw->entries++;
  if (nw->type[i] >= 0 && nw->seq[i] >= e->seq) {
    assert_true(nw->seq[i] != e->seq || nw->type[i] == e->type); /* same seq: same entry */
    return 0;
  }
  nw->seq[i] = e->seq;
  nw->type[i] = e->type;
  free(nw->val[i]);
  nw->val[i] = malloc(e->val_len + 1);
  memcpy(nw->val[i], e->val, e->val_len);
  nw->val_len[i] = e->val_len;
  return 0;
}

static int list_numbers(const char *dir, const char *suffix, uint64_t *out, int max) {
  DIR *d = opendir(dir);
  assert_non_null(d);
  struct dirent *de;
  int n = 0;
  size_t sl = strlen(suffix);
  while ((de = readdir(d))) {
    size_t l = strlen(de->d_name);
    if (l > sl && !strcmp(de->d_name + l - sl, suffix) && n < max)
      out[n++] = strtoull(de->d_name, NULL, 10);
  }
  closedir(d);
  return n;
}

static void test_ldb_reader_accounts_for_every_entry(void **state) {
  db_fixture_t *f = *state;
  newest_t *nw = calloc(1, sizeof *nw);
  for (uint32_t i = 0; i < NKEYS; i++) nw->type[i] = -1;
  err_t err;
  ldb_read_stats_t st = {0};
  /* Logs first, then the pinned table list (doc/leveldb.md). */
  uint64_t logs[64];
  int nlogs = list_numbers(f->path, ".log", logs, 64);
  assert_true(nlogs >= 1);
  for (int i = 0; i < nlogs; i++) {
    char p[4400];
    snprintf(p, sizeof p, "%s/%06llu.log", f->path, (unsigned long long)logs[i]);
    uint64_t next = 0;
    int rc = ldb_log_read(env_default(), p, 0, record, nw, &next, &st, &err);
    if (rc == BFH_NOT_FOUND) continue;
    assert_int_equal(rc, BFH_OK);
  }
  nw->log_entries = nw->entries;
  char *list = leveldb_property_value(f->db, "leveldb.sstables");
  for (;;) {
    f->pin = leveldb_create_iterator(f->db, f->ro);
    char *again = leveldb_property_value(f->db, "leveldb.sstables");
    int same = !strcmp(list, again);
    leveldb_free(list);
    list = again;
    if (same) break;
    leveldb_iter_destroy(f->pin);
    f->pin = NULL;
  }
  ldb_sstable_t *t;
  size_t nt;
  assert_int_equal(ldb_sstables_parse(list, &t, &nt, &err), BFH_OK);
  leveldb_free(list);
  int levels_used[8] = {0}, nlevels = 0;
  for (size_t i = 0; i < nt; i++) {
    char p[4400];
    snprintf(p, sizeof p, "%s/%06llu.ldb", f->path, (unsigned long long)t[i].number);
    struct stat sb;
    assert_int_equal(stat(p, &sb), 0);
    assert_int_equal((uint64_t)sb.st_size, t[i].size);
    assert_int_equal(ldb_table_scan(env_default(), p, record, nw, &st, &err), BFH_OK);
    if (!levels_used[t[i].level]++) nlevels++;
  }
  nw->table_entries = nw->entries - nw->log_entries;
  print_message("readers: %llu log entries, %llu table entries in %zu tables on %d levels\n",
                (unsigned long long)nw->log_entries, (unsigned long long)nw->table_entries, nt,
                nlevels);
  assert_true(nlevels >= 2);
  assert_true(nw->log_entries > 0);
  assert_true(nw->table_entries > 100000);
  free(t);

  /* Every key: the newest version read equals what LevelDB returns. */
  leveldb_readoptions_t *ro2 = leveldb_readoptions_create();
  uint64_t live = 0;
  for (uint32_t i = 0; i < NKEYS; i++) {
    char key[16];
    snprintf(key, sizeof key, "key%08u", i);
    size_t vl;
    char *e = NULL;
    char *v = leveldb_get(f->db, ro2, key, 11, &vl, &e);
    assert_null(e);
    if (nw->type[i] == LDB_TYPE_VALUE) {
      assert_non_null(v);
      assert_int_equal(vl, nw->val_len[i]);
      assert_memory_equal(v, nw->val[i], vl);
      live++;
    } else {
      assert_null(v);
    }
    leveldb_free(v);
  }
  /* And a plain iterator sees exactly the live keys. */
  leveldb_iterator_t *it = leveldb_create_iterator(f->db, ro2);
  uint64_t seen = 0;
  for (leveldb_iter_seek_to_first(it); leveldb_iter_valid(it); leveldb_iter_next(it)) {
    size_t kl;
    const char *k = leveldb_iter_key(it, &kl);
    int i = key_index((const uint8_t *)k, kl);
    assert_true(i >= 0);
    assert_int_equal(nw->type[i], LDB_TYPE_VALUE);
    seen++;
  }
  assert_int_equal(seen, live);
  leveldb_iter_destroy(it);
  leveldb_iter_destroy(f->pin);
  f->pin = NULL;
  leveldb_readoptions_destroy(ro2);
  for (uint32_t i = 0; i < NKEYS; i++) free(nw->val[i]);
  free(nw);
}

static int count_entry(void *arg, const ldb_entry_t *e) {
  (void)e;
  (*(uint64_t *)arg)++;
  return 0;
}

/* XORs the byte at off with 0x40 (twice restores it). */
static void flip_byte(const char *path, uint64_t off) {
  assert_int_equal(test_file_xor_byte(path, off, 0x40), 0);
}

/* Copies the last table of the list to dst, while an iterator pins it. */
static void copy_last_table(db_fixture_t *f, const char *dst) {
  f->pin = leveldb_create_iterator(f->db, f->ro);
  char *list = leveldb_property_value(f->db, "leveldb.sstables");
  ldb_sstable_t *t;
  size_t nt;
  err_t err;
  assert_int_equal(ldb_sstables_parse(list, &t, &nt, &err), BFH_OK);
  leveldb_free(list);
  assert_true(nt > 0);
  char src[4400];
  snprintf(src, sizeof src, "%s/%06llu.ldb", f->path, (unsigned long long)t[nt - 1].number);
  assert_int_equal(test_copy_file(src, dst, UINT64_MAX), 0);
  leveldb_iter_destroy(f->pin);
  f->pin = NULL;
  free(t);
}

static void test_ldb_reader_corrupt_table_names_file_and_offset(void **state) {
  db_fixture_t *f = *state;
  uint64_t nums[256];
  int n = list_numbers(f->path, ".ldb", nums, 256);
  assert_true(n > 0);
  char src[4400], dst[4400];
  snprintf(dst, sizeof dst, "%s/copy.ldb", tmpdir);
  copy_last_table(f, dst);
  err_t err;
  uint64_t cnt = 0;
  assert_int_equal(ldb_table_scan(env_default(), dst, count_entry, &cnt, NULL, &err), BFH_OK);
  assert_true(cnt > 1000);

  flip_byte(dst, 100); /* inside the first data block */
  cnt = 0;
  assert_int_equal(ldb_table_scan(env_default(), dst, count_entry, &cnt, NULL, &err),
                   BFH_E_CORRUPT);
  print_message("flipped data byte: %s\n", err.msg);
  assert_non_null(strstr(err.msg, dst));
  assert_non_null(strstr(err.msg, "block at 0"));
  assert_non_null(strstr(err.msg, "checksum"));
  assert_int_equal(cnt, 0);
  flip_byte(dst, 100);

  struct stat sb;
  assert_int_equal(stat(dst, &sb), 0);
  flip_byte(dst, (uint64_t)sb.st_size - 1); /* magic */
  assert_int_equal(ldb_table_scan(env_default(), dst, count_entry, &cnt, NULL, &err),
                   BFH_E_CORRUPT);
  assert_non_null(strstr(err.msg, "magic"));
  flip_byte(dst, (uint64_t)sb.st_size - 1);

  /* Truncated table: no footer where it should be. */
  snprintf(src, sizeof src, "%s/trunc.ldb", tmpdir);
  assert_int_equal(test_copy_file(dst, src, (uint64_t)sb.st_size / 2), 0);
  assert_int_equal(ldb_table_scan(env_default(), src, count_entry, &cnt, NULL, &err),
                   BFH_E_CORRUPT);
  /* Absent table. */
  snprintf(src, sizeof src, "%s/absent.ldb", tmpdir);
  assert_int_equal(ldb_table_scan(env_default(), src, count_entry, &cnt, NULL, &err),
                   BFH_NOT_FOUND);
  /* Every single-byte flip in the first 4 KiB and in the index is detected or harmless:
     the reader never crashes and never reports more entries than the table holds. */
  uint64_t full = 0;
  assert_int_equal(ldb_table_scan(env_default(), dst, count_entry, &full, NULL, &err), BFH_OK);
  for (uint64_t off = (uint64_t)sb.st_size - 600; off < (uint64_t)sb.st_size; off += 7) {
    flip_byte(dst, off);
    cnt = 0;
    int rc = ldb_table_scan(env_default(), dst, count_entry, &cnt, NULL, &err);
    assert_true(rc == BFH_OK || rc == BFH_E_CORRUPT);
    if (rc == BFH_OK) assert_int_equal(cnt, full);
    flip_byte(dst, off);
  }
}

/* ---- Reading single data blocks ----------------------------------------------------------- */

/* An entry as read, for comparing reads. */
typedef struct seen_entry {
  int key;
  int type;
  uint64_t seq;
  uint64_t val_hash;
} seen_entry_t;

/* The entries of a read in order and, from ldb_table_scan_blocks, its data blocks: block i
   lies at refs[i] and holds entries [ends[i - 1], ends[i]) (ends[-1] = 0). */
typedef struct table_read {
  seen_entry_t *e;
  size_t n, cap;
  block_ref_t *refs;
  size_t *ends;
  size_t nblocks, bcap;
  size_t stop_after_blocks; /* block_fn stops the read after that many (0: never) */
  uint64_t hash_seed;       /* of val_hash */
} table_read_t;

static int add_entry(void *arg, const ldb_entry_t *e) {
  table_read_t *r = arg;
  if (r->n == r->cap) {
    r->cap = r->cap ? 2 * r->cap : 4096;
    r->e = realloc(r->e, r->cap * sizeof *r->e);
    assert_non_null(r->e);
  }
  r->e[r->n++] = (seen_entry_t){.key = key_index(e->key, e->key_len),
                                .type = e->type,
                                .seq = e->seq,
                                .val_hash = bfh_hash64(e->val, e->val_len, r->hash_seed)};
  return 0;
}

static int add_block(void *arg, uint64_t offset, uint64_t size) {
  table_read_t *r = arg;
  if (r->nblocks == r->bcap) {
    r->bcap = r->bcap ? 2 * r->bcap : 256;
    r->refs = realloc(r->refs, r->bcap * sizeof *r->refs);
    r->ends = realloc(r->ends, r->bcap * sizeof *r->ends);
    assert_true(r->refs && r->ends);
  }
  r->refs[r->nblocks] = (block_ref_t){offset, size};
  r->ends[r->nblocks++] = r->n;
  return r->stop_after_blocks && r->nblocks == r->stop_after_blocks;
}

static void table_read_release(table_read_t *r) {
  free(r->e);
  free(r->refs);
  free(r->ends);
  memset(r, 0, sizeof *r);
}

static size_t block_first(const table_read_t *r, size_t i) {
  return i ? r->ends[i - 1] : 0;
}

/* The metaindex handle's offset, from the footer of the table file at path. */
static uint64_t metaindex_offset(const char *path) {
  FILE *fp = fopen(path, "rb");
  assert_non_null(fp);
  uint8_t footer[LDB_FOOTER_BYTES];
  assert_int_equal(fseek(fp, -(long)LDB_FOOTER_BYTES, SEEK_END), 0);
  assert_int_equal(fread(footer, 1, sizeof footer, fp), sizeof footer);
  fclose(fp);
  uint64_t off;
  assert_non_null(decode_varint64(footer, footer + 40, &off));
  return off;
}

static uint64_t file_size(const char *path) {
  struct stat sb;
  assert_int_equal(stat(path, &sb), 0);
  return (uint64_t)sb.st_size;
}

/* The whole-table read with block ends: every entry lies in exactly one reported block, and
   the blocks are the table's data blocks, back to back from offset 0 up to the metaindex
   (LevelDB writes them so; with the C API's default options there is no filter block). */
static void expect_blocks_cover_table(const char *path, table_read_t *whole) {
  err_t err;
  ldb_read_stats_t st = {0};
  assert_int_equal(
      ldb_table_scan_blocks(env_default(), path, add_entry, add_block, whole, &st, &err),
      BFH_OK);
  assert_true(whole->nblocks > 10);
  assert_int_equal(st.blocks, whole->nblocks);
  assert_int_equal(st.entries, whole->n);
  assert_int_equal(whole->ends[whole->nblocks - 1], whole->n); /* no entry after the last */
  uint64_t at = 0;
  for (size_t i = 0; i < whole->nblocks; i++) {
    assert_int_equal(whole->refs[i].offset, at);
    assert_true(whole->ends[i] > block_first(whole, i)); /* LevelDB writes no empty block */
    at += whole->refs[i].size + BLOCK_TRAILER_BYTES;
  }
  assert_int_equal(at, metaindex_offset(path));
  /* And ldb_table_scan sees the same entries. */
  table_read_t plain = {0};
  assert_int_equal(ldb_table_scan(env_default(), path, add_entry, &plain, NULL, &err), BFH_OK);
  assert_int_equal(plain.n, whole->n);
  assert_memory_equal(plain.e, whole->e, whole->n * sizeof *whole->e);
  table_read_release(&plain);
  /* block_fn can stop the read: after the third block's end, no entry of the fourth. */
  table_read_t part = {.stop_after_blocks = 3};
  assert_int_equal(
      ldb_table_scan_blocks(env_default(), path, add_entry, add_block, &part, NULL, &err),
      BFH_OK);
  assert_int_equal(part.nblocks, 3);
  assert_int_equal(part.n, whole->ends[2]);
  table_read_release(&part);
}

/* Reads refs with ldb_table_read_blocks and checks it visits exactly the entries the whole
   read found in those blocks, in the order of refs, reading only those blocks. */
static void expect_read_blocks(const char *path, const table_read_t *whole, const size_t *idx,
                               size_t n) {
  block_ref_t *refs = calloc(n ? n : 1, sizeof *refs);
  assert_non_null(refs);
  uint64_t bytes = 0;
  size_t entries = 0;
  for (size_t i = 0; i < n; i++) {
    refs[i] = whole->refs[idx[i]];
    bytes += refs[i].size + BLOCK_TRAILER_BYTES;
    entries += whole->ends[idx[i]] - block_first(whole, idx[i]);
  }
  table_read_t got = {0};
  ldb_read_stats_t st = {0};
  err_t err;
  assert_int_equal(
      ldb_table_read_blocks(env_default(), path, refs, n, add_entry, &got, &st, &err), BFH_OK);
  assert_int_equal(got.n, entries);
  assert_int_equal(st.entries, entries);
  assert_int_equal(st.blocks, n);
  assert_int_equal(st.bytes_read, bytes);
  size_t at = 0;
  for (size_t i = 0; i < n; i++) {
    size_t first = block_first(whole, idx[i]), len = whole->ends[idx[i]] - first;
    assert_memory_equal(got.e + at, whole->e + first, len * sizeof *got.e);
    at += len;
  }
  table_read_release(&got);
  free(refs);
}

/* add_entry for the entries whose value holds one of the needles. */
typedef struct needled_read {
  table_read_t r;
  const block_needle_t *nd;
  size_t nn;
} needled_read_t;

static int add_needled(void *arg, const ldb_entry_t *e) {
  needled_read_t *x = arg;
  for (size_t i = 0; i < x->nn; i++)
    if (memmem(e->val, e->val_len, x->nd[i].bytes, x->nd[i].len)) return add_entry(&x->r, e);
  return 0;
}

/* A read of every block with needles (ldb_table_read_blocks_cached) visits exactly the entries
   the read without them finds holding one, in order, and decodes fewer entries than there are. */
static void expect_needled_read(const char *path, const table_read_t *whole,
                                const block_needle_t *nd, size_t nn) {
  err_t err;
  needled_read_t want = {.nd = nd, .nn = nn};
  assert_int_equal(ldb_table_read_blocks(env_default(), path, whole->refs, whole->nblocks,
                                         add_needled, &want, NULL, &err),
                   BFH_OK);
  table_read_t got = {0};
  ldb_read_stats_t st = {0};
  assert_int_equal(ldb_table_read_blocks_cached(env_default(), path, whole->refs, whole->nblocks,
                                                NULL, nd, nn, add_entry, &got, &st, &err),
                   BFH_OK);
  assert_int_equal(got.n, want.r.n);
  assert_memory_equal(got.e, want.r.e, got.n * sizeof *got.e);
  assert_true(st.entries >= got.n && st.entries < whole->n);
  print_message("needles '%.*s'...: %zu entries of %zu visited, %llu decoded\n", (int)nd[0].len,
                (const char *)nd[0].bytes, got.n, whole->n, (unsigned long long)st.entries);
  table_read_release(&got);
  table_read_release(&want.r);
}

static void test_ldb_reader_reads_single_blocks(void **state) {
  db_fixture_t *f = *state;
  char dst[4400];
  snprintf(dst, sizeof dst, "%s/blocks.ldb", tmpdir);
  copy_last_table(f, dst);
  table_read_t whole = {0};
  expect_blocks_cover_table(dst, &whole);
  print_message("table: %zu entries in %zu data blocks\n", whole.n, whole.nblocks);

  size_t nb = whole.nblocks, *idx = calloc(nb, sizeof *idx);
  assert_non_null(idx);
  for (size_t i = 0; i < nb; i++) idx[i] = i;
  expect_read_blocks(dst, &whole, idx, nb); /* all: the whole table's entries */
  size_t n = 0;
  for (size_t i = 1; i < nb; i += 3) idx[n++] = i;
  expect_read_blocks(dst, &whole, idx, n); /* every third */
  idx[0] = nb - 1, idx[1] = 0, idx[2] = nb / 2;
  expect_read_blocks(dst, &whole, idx, 3); /* out of file order: read in the order given */
  expect_read_blocks(dst, &whole, idx, 0);
  /* Reads that look for needles: a value's prefix, two of them, and a byte. */
  const block_needle_t one[] = {{"value-4", 7}};
  const block_needle_t two[] = {{"value-17-", 9}, {"value-3", 7}};
  const block_needle_t byte[] = {{"q", 1}};
  expect_needled_read(dst, &whole, one, 1);
  expect_needled_read(dst, &whole, two, 2);
  expect_needled_read(dst, &whole, byte, 1);

  /* A damaged block: its read fails naming the file and the block; others still read. */
  size_t bad = nb / 2;
  block_ref_t ref = whole.refs[bad];
  assert_int_equal(test_file_xor_byte(dst, ref.offset + ref.size / 2, 0x40), 0);
  table_read_t got = {0};
  err_t err;
  char at[64];
  snprintf(at, sizeof at, "block at %llu:", (unsigned long long)ref.offset);
  assert_int_equal(
      ldb_table_read_blocks(env_default(), dst, &ref, 1, add_entry, &got, NULL, &err),
      BFH_E_CORRUPT);
  print_message("damaged block: %s\n", err.msg);
  assert_non_null(strstr(err.msg, dst));
  assert_non_null(strstr(err.msg, at));
  assert_int_equal(got.n, 0);
  idx[0] = bad - 1, idx[1] = bad + 1;
  expect_read_blocks(dst, &whole, idx, 2);
  assert_int_equal(test_file_xor_byte(dst, ref.offset + ref.size / 2, 0x40), 0);

  /* Refs outside the file: past its end, and running into the footer. */
  uint64_t size = file_size(dst);
  block_ref_t outside[] = {{size, 10},
                           {size - LDB_FOOTER_BYTES - 10, 10},
                           {whole.refs[0].offset, size - BLOCK_TRAILER_BYTES},
                           {UINT64_MAX - 2, 4}};
  for (size_t i = 0; i < sizeof outside / sizeof *outside; i++) {
    ldb_read_stats_t st = {0};
    assert_int_equal(
        ldb_table_read_blocks(env_default(), dst, &outside[i], 1, add_entry, &got, &st, &err),
        BFH_E_CORRUPT);
    snprintf(at, sizeof at, "block at %llu:", (unsigned long long)outside[i].offset);
    assert_non_null(strstr(err.msg, at));
    assert_non_null(strstr(err.msg, "past the end"));
    assert_int_equal(st.bytes_read, 0);
  }
  assert_int_equal(got.n, 0);

  /* A table deleted under the reader. */
  assert_int_equal(unlink(dst), 0);
  assert_int_equal(
      ldb_table_read_blocks(env_default(), dst, whole.refs, 1, add_entry, &got, NULL, &err),
      BFH_NOT_FOUND);
  free(idx);
  table_read_release(&got);
  table_read_release(&whole);
}

/* ldb_filter_read with a block filter: the leaf is the one built value by value, and the
   filter's blocks are exactly the data blocks holding a value entry, each found by the hash
   (bfh_hash64 under the seed) of every value it holds: a Bloom filter has no false
   negatives. */
static int add_to_leaf(void *arg, const ldb_entry_t *e) {
  if (e->type == LDB_TYPE_VALUE) value_filter_add(arg, e->val, e->val_len);
  return 0;
}

static void test_ldb_reader_filter_build_blocks(void **state) {
  db_fixture_t *f = *state;
  char dst[4400];
  snprintf(dst, sizeof dst, "%s/filter.ldb", tmpdir);
  copy_last_table(f, dst);
  value_index_params_t p = {.m = 1 << 20, .k = 5, .seed = 99};
  value_filter_t *want = value_filter_create(p.m, p.k, p.seed);
  /* plain.blocks must be set to NULL: a table read without block_bits has no block filter. */
  index_leaf_read_t plain = {.blocks = (block_filter_t *)&want}, built = {0}, refused = {0};
  ldb_read_stats_t st = {0};
  err_t err;
  assert_int_equal(ldb_table_scan(env_default(), dst, add_to_leaf, want, NULL, &err), BFH_OK);
  assert_int_equal(ldb_filter_read(env_default(), dst, &p, &plain, NULL, &err), BFH_OK);
  assert_null(plain.blocks);
  p.block_bits = 10;
  assert_int_equal(ldb_filter_read(env_default(), dst, &p, &built, &st, &err), BFH_OK);
  value_filter_t *leaf = built.filter;
  block_filter_t *blocks = built.blocks;
  assert_non_null(blocks);
  /* The tag of the bytes the filters came from is the one a later check reads from the file. */
  uint64_t file_tag = 1;
  assert_int_equal(ldb_table_tag(env_default(), dst, &file_tag, &err), BFH_OK);
  assert_true(built.tag == file_tag);
  assert_memory_equal(plain.filter->words, want->words, want->nwords * 8);
  assert_memory_equal(leaf->words, want->words, want->nwords * 8);
  p.block_bits = BLOCK_FILTER_MAX_BITS + 1;
  assert_int_equal(ldb_filter_read(env_default(), dst, &p, &refused, NULL, &err), BFH_E_INVALID);

  table_read_t whole = {.hash_seed = p.seed};
  assert_int_equal(
      ldb_table_scan_blocks(env_default(), dst, add_entry, add_block, &whole, NULL, &err),
      BFH_OK);
  assert_int_equal(st.blocks, whole.nblocks);
  uint32_t nb = block_filter_blocks(blocks), j = 0; /* j: the filter's index of block i */
  uint32_t *may = calloc(nb ? nb : 1, sizeof *may);
  assert_non_null(may);
  uint64_t values = 0, probed = 0;
  for (size_t i = 0; i < whole.nblocks; i++) {
    uint64_t before = values;
    for (size_t e = block_first(&whole, i); e < whole.ends[i]; e++) {
      if (whole.e[e].type != LDB_TYPE_VALUE) continue;
      assert_true(j < nb);
      uint32_t n = block_filter_probe(blocks, whole.e[e].val_hash, may), hit = 0;
      for (uint32_t q = 0; q < n; q++) hit |= may[q] == j;
      assert_true(hit);
      probed += n;
      values++;
    }
    if (values == before) continue; /* a block of deletions only is left out */
    block_ref_t r = block_filter_ref(blocks, j++);
    assert_int_equal(r.offset, whole.refs[i].offset);
    assert_int_equal(r.size, whole.refs[i].size);
  }
  assert_int_equal(j, nb);
  assert_int_equal(values, block_filter_values(blocks));
  print_message("block filter: %llu values in %u blocks; a present value names %.2f blocks\n",
                (unsigned long long)values, nb, (double)probed / (double)values);
  free(may);
  table_read_release(&whole);
  value_filter_destroy(want);
  value_filter_destroy(leaf);
  value_filter_destroy(plain.filter);
  block_filter_destroy(blocks);
}

static void test_ldb_reader_truncated_log_tail_stops_cleanly(void **state) {
  db_fixture_t *f = *state;
  uint64_t logs[64];
  int nlogs = list_numbers(f->path, ".log", logs, 64);
  assert_true(nlogs >= 1);
  uint64_t newest = 0;
  for (int i = 0; i < nlogs; i++)
    if (logs[i] > newest) newest = logs[i];
  /* Make sure the live log holds a record spanning blocks. */
  leveldb_writeoptions_t *wo = leveldb_writeoptions_create();
  char *big = malloc(70000), *e = NULL;
  memset(big, 'z', 70000);
  leveldb_put(f->db, wo, "key00000001", 11, big, 70000, &e);
  assert_null(e);
  free(big);
  leveldb_writeoptions_destroy(wo);
  nlogs = list_numbers(f->path, ".log", logs, 64);
  newest = 0;
  for (int i = 0; i < nlogs; i++)
    if (logs[i] > newest) newest = logs[i];
  char src[4400], dst[4400];
  snprintf(src, sizeof src, "%s/%06llu.log", f->path, (unsigned long long)newest);
  snprintf(dst, sizeof dst, "%s/copy.log", tmpdir);
  assert_int_equal(test_copy_file(src, dst, UINT64_MAX), 0);
  struct stat sb;
  assert_int_equal(stat(dst, &sb), 0);
  uint64_t size = (uint64_t)sb.st_size;
  err_t err;
  uint64_t full = 0, next = 0;
  assert_int_equal(ldb_log_read(env_default(), dst, 0, count_entry, &full, &next, NULL, &err),
                   BFH_OK);
  assert_int_equal(next, size);
  assert_true(full > 0);

  /* Cut the copy at many points: each read stops cleanly, and resuming from next_offset on
     the whole file gives exactly the remaining entries. */
  rng_t r;
  rng_init(&r, 11);
  char cut[4400];
  snprintf(cut, sizeof cut, "%s/cut.log", tmpdir);
  uint64_t points[40];
  for (int i = 0; i < 36; i++) points[i] = rng_below(&r, size);
  points[36] = size - 1;
  points[37] = size > 70000 ? size - 70000 : 1; /* inside the big record */
  points[38] = 3;
  points[39] = LOG_BLOCK_BYTES < size ? LOG_BLOCK_BYTES + 3 : 2;
  for (int i = 0; i < 40; i++) {
    assert_int_equal(test_copy_file(dst, cut, points[i]), 0);
    uint64_t part = 0, resume = 0;
    assert_int_equal(
        ldb_log_read(env_default(), cut, 0, count_entry, &part, &resume, NULL, &err), BFH_OK);
    assert_true(resume <= points[i]);
    assert_true(part <= full);
    uint64_t rest = 0, end = 0;
    assert_int_equal(
        ldb_log_read(env_default(), dst, resume, count_entry, &rest, &end, NULL, &err), BFH_OK);
    assert_int_equal(part + rest, full);
    assert_int_equal(end, size);
  }
  /* A flipped payload byte in the middle is corruption, with file and offset. */
  flip_byte(dst, size / 2);
  uint64_t cnt = 0;
  assert_int_equal(ldb_log_read(env_default(), dst, 0, count_entry, &cnt, &next, NULL, &err),
                   BFH_E_CORRUPT);
  print_message("flipped log byte: %s\n", err.msg);
  assert_non_null(strstr(err.msg, dst));
  assert_non_null(strstr(err.msg, "record at"));
}

static void test_ldb_reader_sstables_parse(void **state) {
  (void)state;
  const char *text =
      "--- level 0 ---\n"
      " 20:1273633['k0000b768660cf012' @ 203441 : 1 .. 'k7fff23492b54ce15' @ 218920 : 1]\n"
      " 21:99['a]\\x0a --- level 9 ---' @ 1 : 1 .. 'b' @ 2 : 0]\n"
      "--- level 1 ---\n"
      "--- level 2 ---\n"
      " 7:2097152['x' @ 5 : 1 .. 'y' @ 6 : 1]\n"
      "--- level 3 ---\n";
  ldb_sstable_t *t;
  size_t n;
  err_t err;
  assert_int_equal(ldb_sstables_parse(text, &t, &n, &err), BFH_OK);
  assert_int_equal(n, 3);
  assert_int_equal(t[0].level, 0);
  assert_int_equal(t[0].number, 20);
  assert_int_equal(t[0].size, 1273633);
  assert_int_equal(t[1].number, 21);
  assert_int_equal(t[1].size, 99);
  assert_int_equal(t[2].level, 2);
  assert_int_equal(t[2].number, 7);
  assert_int_equal(t[2].size, 2097152);
  free(t);
  assert_int_equal(ldb_sstables_parse("", &t, &n, &err), BFH_OK);
  assert_int_equal(n, 0);
  assert_int_equal(ldb_sstables_parse("--- level 0 ---\n 12x:3['a']\n", &t, &n, &err),
                   BFH_E_CORRUPT);
  assert_non_null(strstr(err.msg, "line 2"));
  assert_int_equal(ldb_sstables_parse("garbage\n", &t, &n, &err), BFH_E_CORRUPT);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_ldb_reader_accounts_for_every_entry, fixture_setup,
                                      fixture_teardown),
      cmocka_unit_test_setup_teardown(test_ldb_reader_corrupt_table_names_file_and_offset,
                                      fixture_setup, fixture_teardown),
      cmocka_unit_test_setup_teardown(test_ldb_reader_reads_single_blocks, fixture_setup,
                                      fixture_teardown),
      cmocka_unit_test_setup_teardown(test_ldb_reader_filter_build_blocks, fixture_setup,
                                      fixture_teardown),
      cmocka_unit_test_setup_teardown(test_ldb_reader_truncated_log_tail_stops_cleanly,
                                      fixture_setup, fixture_teardown),
      cmocka_unit_test(test_ldb_reader_sstables_parse),
  };
  return cmocka_run_group_tests(tests, group_setup, group_teardown);
}

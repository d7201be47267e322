/* Tests of tables (lsm/table_builder.h, lsm/table.h), the table cache and the merging
   iterator: a 100k-entry table with a checking hook, gets, iteration, scans, meta blocks,
   and damage detection byte by byte. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "filters/blocked_filter.h"
#include "lsm/block.h"
#include "lsm/block_cache.h"
#include "lsm/memtable.h"
#include "lsm/table.h"
#include "lsm/table_builder.h"
#include "lsm/table_cache.h"
#include "tests/test_util.h"
#include "util/coding.h"
#include "util/crc32c.h"
#include "util/random.h"
#include "tests/env_fault.h"


/* The buffer of every table_get here (a value read stays valid until the next get). */
static table_buf_t tbuf;

/* table_read_meta, keeping the copy it returns until the next call (so a test need not free
   it). */
static void *meta_copy;
static int read_meta(table_t *t, const char *name, const void **md, size_t *ms, uint64_t *off,
                     err_t *err) {
  free(meta_copy);
  meta_copy = NULL;
  int rc = table_read_meta(t, name, &meta_copy, ms, off, err);
  *md = meta_copy;
  return rc;
}

static char dir[4096]; /* the current test's temporary directory */

/* Each test that writes files gets a fresh `dir`; the teardown removes it with whatever the
   test left in it, even when the test failed. */
static int dir_setup(void **state) {
  (void)state;
  return test_tmpdir_create(dir, sizeof dir, "table_test");
}

static int dir_teardown(void **state) {
  (void)state;
  return test_rmrf(dir);
}

/* ---- The data set: user key u (even numbers), newest version first ------------------- */

typedef struct ent {
  uint32_t user; /* user key number */
  uint64_t seq;
  int type;
} ent_t;

static size_t ukey(char *buf, uint32_t u) {
  return (size_t)snprintf(buf, 32, "key%08u", u);
}
static size_t uval(char *buf, uint32_t u, uint64_t seq) {
  return (size_t)snprintf(buf, 64, "value-%u-%llu-padding-padding", u, (unsigned long long)seq);
}

/* nkeys user keys 0, 2, 4, ...; every 4th has an older version; every 7th's newest is a
   deletion. Returns the entries in table order. */
static ent_t *make_entries(uint32_t nkeys, size_t *n) {
  ent_t *e = malloc((size_t)nkeys * 2 * sizeof *e);
  size_t k = 0;
  for (uint32_t i = 0; i < nkeys; i++) {
    e[k].user = 2 * i;
    e[k].seq = 1000000 + i;
    e[k].type = i % 7 == 3 ? LSM_TYPE_DELETION : LSM_TYPE_VALUE;
    k++;
    if (i % 4 == 1) {
      e[k].user = 2 * i;
      e[k].seq = i + 1;
      e[k].type = LSM_TYPE_VALUE;
      k++;
    }
  }
  *n = k;
  return e;
}

/* ---- A hook that checks the calls it gets -------------------------------------------- */

typedef struct hook_ctx {
  int begins, ends_ok, ends_fail, finishes;
  uint64_t adds, last_number, deletions;
  uint64_t offsets[2]; /* what the last end() said of the two meta blocks */
  /* block_written calls: where each data block lies and how many adds came before it */
  block_ref_t refs[4096];
  uint64_t adds_before[4096];
  size_t nrefs;
} hook_ctx_t;

typedef struct hook_state {
  hook_ctx_t *ctx;
  uint64_t number, adds;
  char text[64];
  lsm_meta_block_t blocks[2];
} hook_state_t;

static void *h_begin(void *ctx, uint64_t number) {
  hook_ctx_t *c = ctx;
  c->begins++;
  c->last_number = number;
  hook_state_t *s = calloc(1, sizeof *s);
  s->ctx = c;
  s->number = number;
  return s;
}

static void h_add(void *state, const void *key, size_t klen, const void *val, size_t vlen,
                  uint64_t seq, int type) {
  (void)key;
  (void)klen;
  (void)val;
  (void)vlen;
  (void)seq;
  hook_state_t *s = state;
  s->adds++;
  s->ctx->adds++;
  if (type == LSM_TYPE_DELETION) s->ctx->deletions++;
}

static void h_block_written(void *state, uint64_t offset, uint64_t size) {
  hook_state_t *s = state;
  hook_ctx_t *c = s->ctx;
  assert_true(c->nrefs < 4096);
  c->refs[c->nrefs] = (block_ref_t){offset, size};
  c->adds_before[c->nrefs++] = s->adds;
}

static int h_finish(void *state, const lsm_meta_block_t **blocks, size_t *n) {
  hook_state_t *s = state;
  s->ctx->finishes++;
  snprintf(s->text, sizeof s->text, "adds=%llu number=%llu", (unsigned long long)s->adds,
           (unsigned long long)s->number);
  s->blocks[0].name = "test.meta";
  s->blocks[0].data = s->text;
  s->blocks[0].size = strlen(s->text);
  s->blocks[1].name = "aaa.empty"; /* sorts before the key filter's name */
  s->blocks[1].data = NULL;
  s->blocks[1].size = 0;
  *blocks = s->blocks;
  *n = 2;
  return 0;
}

static void h_end(void *state, const uint64_t *offsets) {
  hook_state_t *s = state;
  if (offsets) {
    s->ctx->ends_ok++;
    memcpy(s->ctx->offsets, offsets, sizeof s->ctx->offsets);
  } else {
    s->ctx->ends_fail++;
  }
  free(s);
}

static lsm_table_hook_t make_hook(hook_ctx_t *c) {
  lsm_table_hook_t h = {c, h_begin, h_add, h_block_written, h_finish, h_end, NULL, NULL, NULL};
  return h;
}

static int count_entry(void *arg, const void *key, size_t key_len, const void *val, size_t val_len,
                       uint64_t seq, int type) {
  (void)key, (void)key_len, (void)val, (void)val_len, (void)seq, (void)type;
  (*(uint64_t *)arg)++;
  return 0;
}

/* A ref that is no data block's handle: table_scan_value_blocks reports it as corrupt. */
static void expect_names_no_block(table_t *t, uint64_t offset, uint64_t size) {
  block_ref_t bad = {offset, size};
  err_t err;
  uint64_t cnt = 0;
  assert_int_equal(table_scan_value_blocks(t, &bad, 1, "x", 1, count_entry, &cnt, NULL, &err),
                   ST_E_CORRUPT);
  assert_non_null(strstr(err.msg, "block filter names no data block"));
  assert_int_equal(cnt, 0);
}

/* The hook's block_written calls tile the data blocks: one per block, in file order, with
   the adds before each; table_scan_value_blocks over each ref visits exactly the entries
   added in that block (here: the entries with a given value), over all refs the same as
   table_scan_value; a ref that is not a data block's handle (an offset beside one's, the
   right offset with another size, past the last block) is ST_E_CORRUPT. */
static void expect_block_refs(table_t *t, const hook_ctx_t *hc, const ent_t *e, size_t n) {
  table_stats_t ts;
  table_get_stats(t, &ts);
  assert_int_equal(hc->nrefs, ts.data_blocks);
  assert_true(hc->nrefs > 1);
  assert_int_equal(hc->adds_before[hc->nrefs - 1], n);
  for (size_t b = 0; b < hc->nrefs; b++) {
    if (b) assert_int_equal(hc->refs[b].offset, hc->refs[b - 1].offset + hc->refs[b - 1].size + 5);
    expect_names_no_block(t, hc->refs[b].offset + 1, hc->refs[b].size);
    if (b) expect_names_no_block(t, hc->refs[b].offset - 1, hc->refs[b].size);
    expect_names_no_block(t, hc->refs[b].offset, hc->refs[b].size + 1);
    /* every value entry of block b is found by a scan of block b alone */
    uint64_t first = b ? hc->adds_before[b - 1] : 0;
    for (uint64_t i = first; i < hc->adds_before[b]; i++) {
      if (e[i].type != LSM_TYPE_VALUE) continue;
      char v[64];
      size_t vn = uval(v, e[i].user, e[i].seq);
      uint64_t in_block = 0, in_table = 0, in_all = 0;
      err_t err;
      assert_int_equal(
          table_scan_value_blocks(t, &hc->refs[b], 1, v, vn, count_entry, &in_block, NULL, &err),
          ST_OK);
      assert_int_equal(table_scan_value(t, v, vn, count_entry, &in_table, NULL, &err), ST_OK);
      assert_int_equal(
          table_scan_value_blocks(t, hc->refs, hc->nrefs, v, vn, count_entry, &in_all, NULL, &err),
          ST_OK);
      assert_true(in_block >= 1);
      assert_int_equal(in_all, in_table);
      break; /* one value per block is enough */
    }
  }
  const block_ref_t *last = &hc->refs[hc->nrefs - 1];
  expect_names_no_block(t, last->offset + last->size + 5, last->size);
  expect_names_no_block(t, UINT64_MAX - 4096, 4096);
}

/* The chosen blocks of a search through a block cache (table_scan_value_blocks_kept's fill):
   a miss enters while fill covers it and fill shrinks by its bytes; the same blocks then hit
   and give the same entries; without fill, or with less than a block left, a miss does not
   enter; a meta range enters as read and is served from the cache as the file's bytes. */
static void expect_chosen_blocks_cached(table_t *t, const hook_ctx_t *hc, const ent_t *e) {
  block_cache_t *bc = block_cache_create(1u << 20);
  assert_non_null(bc);
  table_set_block_cache(t, bc);
  char v[64];
  size_t vn = uval(v, e[0].user, e[0].seq); /* in block 0 */
  const block_ref_t *r0 = &hc->refs[0], *r1 = &hc->refs[1];
  uint64_t fill = 3 * (r0->size + BLOCK_TRAILER_BYTES), before = fill, want = 0, got = 0;
  block_cache_stats_t st0, st;
  err_t err;
  assert_int_equal(table_scan_value_blocks(t, r0, 1, v, vn, count_entry, &want, NULL, &err),
                   ST_OK);
  assert_true(want >= 1);
  block_cache_get_stats(bc, &st0); /* no fill: nothing entered */
  assert_int_equal(st0.inserts, 0);
  assert_int_equal(table_scan_value_blocks_kept(t, r0, 1, v, vn, count_entry, &got, NULL, NULL,
                                                &fill, &err),
                   ST_OK);
  assert_int_equal(got, want);
  assert_int_equal(fill, before - (r0->size + BLOCK_TRAILER_BYTES));
  block_cache_get_stats(bc, &st);
  assert_int_equal(st.inserts, 1);
  got = 0; /* again: a hit, the same entries, fill untouched */
  assert_int_equal(table_scan_value_blocks_kept(t, r0, 1, v, vn, count_entry, &got, NULL, NULL,
                                                &fill, &err),
                   ST_OK);
  assert_int_equal(got, want);
  assert_int_equal(fill, before - (r0->size + BLOCK_TRAILER_BYTES));
  block_cache_stats_t st2;
  block_cache_get_stats(bc, &st2);
  assert_int_equal(st2.hits, st.hits + 1);
  assert_int_equal(st2.inserts, 1);
  /* too little fill left for block 1: read, not kept */
  uint64_t little = r1->size;
  got = 0;
  assert_int_equal(table_scan_blocks(t, r1, 1, count_entry, &got, NULL, &little, &err), ST_OK);
  assert_true(got > 0);
  assert_int_equal(little, r1->size);
  block_cache_get_stats(bc, &st2);
  assert_int_equal(st2.inserts, 1);
  /* a meta range: read and kept, then served from the cache */
  const void *md;
  size_t ms;
  uint64_t off;
  assert_int_equal(read_meta(t, "test.meta", &md, &ms, &off, &err), ST_OK);
  assert_true(ms > 4);
  char a[64], b[64];
  fill = 64;
  assert_int_equal(table_read_meta_range(t, "test.meta", 2, ms - 2, a, &fill, &err), ST_OK);
  assert_memory_equal(a, (const char *)md + 2, ms - 2);
  assert_int_equal(fill, 64 - (ms - 2));
  block_cache_get_stats(bc, &st);
  assert_int_equal(st.inserts, 2);
  assert_int_equal(table_read_meta_range(t, "test.meta", 2, ms - 2, b, NULL, &err), ST_OK);
  assert_memory_equal(b, (const char *)md + 2, ms - 2);
  block_cache_get_stats(bc, &st2);
  assert_int_equal(st2.hits, st.hits + 1);
  table_set_block_cache(t, NULL);
  block_cache_destroy(bc);
}

static void build_table(const char *path, uint64_t number, const ent_t *e, size_t n,
                        const table_builder_options_t *opt) {
  table_builder_t *tb;
  err_t err;
  assert_int_equal(table_builder_create(env_default(), path, number, opt, &tb, &err), ST_OK);
  for (size_t i = 0; i < n; i++) {
    char k[32], v[64];
    uint8_t ik[40];
    size_t kn = ukey(k, e[i].user);
    size_t ikn = internal_key_encode(ik, k, kn, e[i].seq, e[i].type);
    size_t vn = e[i].type == LSM_TYPE_VALUE ? uval(v, e[i].user, e[i].seq) : 0;
    assert_int_equal(table_builder_add(tb, ik, ikn, v, vn, &err), ST_OK);
  }
  assert_int_equal(table_builder_entries(tb), n);
  if (table_builder_finish(tb, &err) != ST_OK) fail_msg("%s", err.msg);
  uint64_t size;
  assert_int_equal(env_path_size(env_default(), path, &size, &err), ST_OK);
  assert_int_equal(table_builder_file_size(tb), size);
  table_builder_destroy(tb);
}

typedef struct scan_ctx {
  const ent_t *e;
  size_t n, i;
  int bad;
} scan_ctx_t;

static int scan_check(void *arg, const void *key, size_t klen, const void *val, size_t vlen,
                      uint64_t seq, int type) {
  scan_ctx_t *c = arg;
  char k[32], v[64];
  if (c->i >= c->n) {
    c->bad++;
    return 1;
  }
  const ent_t *x = &c->e[c->i++];
  size_t kn = ukey(k, x->user);
  size_t vn = x->type == LSM_TYPE_VALUE ? uval(v, x->user, x->seq) : 0;
  if (klen != kn || memcmp(key, k, kn) || vlen != vn || (vn && memcmp(val, v, vn)) ||
      seq != x->seq || type != x->type)
    c->bad++;
  return 0;
}

/* table_scan_value must visit exactly the one entry holding a value. */
typedef struct value_ctx {
  const ent_t *want;
  int visits, bad;
} value_ctx_t;

static int value_check(void *arg, const void *key, size_t klen, const void *val, size_t vlen,
                       uint64_t seq, int type) {
  value_ctx_t *c = arg;
  char k[32], v[64];
  size_t kn = ukey(k, c->want->user), vn = uval(v, c->want->user, c->want->seq);
  c->visits++;
  if (klen != kn || memcmp(key, k, kn) || vlen != vn || memcmp(val, v, vn) || seq != c->want->seq ||
      type != LSM_TYPE_VALUE)
    c->bad++;
  return 0;
}

static void test_table_build_get_iterate_scan(void **state) {
  (void)state;
  size_t n;
  ent_t *e = make_entries(80000, &n);
  assert_int_equal(n, 100000);
  char path[8192];
  assert_int_equal(test_path_take(path, sizeof path, table_file_path(dir, 7)), 0);
  hook_ctx_t hc = {0};
  lsm_table_hook_t hook = make_hook(&hc);
  table_builder_options_t opt;
  table_builder_options_init(&opt);
  opt.hook = &hook;
  build_table(path, 7, e, n, &opt);
  /* the hook saw every entry once, in one begin/finish/end(1) cycle */
  assert_int_equal(hc.begins, 1);
  assert_int_equal(hc.last_number, 7);
  assert_int_equal(hc.adds, n);
  assert_int_equal(hc.finishes, 1);
  assert_int_equal(hc.ends_ok, 1);
  assert_int_equal(hc.ends_fail, 0);

  table_t *t;
  err_t err;
  assert_int_equal(table_open(env_default(), path, 7, &t, &err), ST_OK);
  assert_int_equal(table_number(t), 7);
  assert_true(table_has_key_filter(t));
  expect_block_refs(t, &hc, e, n);
  expect_chosen_blocks_cached(t, &hc, e);

  /* get: every user key, newest version and older versions by max_seq */
  char k[32], v[64];
  lsm_lookup_t r;
  for (size_t i = 0; i < n; i++) {
    size_t kn = ukey(k, e[i].user);
    uint64_t h = blocked_filter_key_hash(k, kn);
    assert_int_equal(table_get(t, k, kn, h, e[i].seq, &tbuf, &r, &err), ST_OK);
    assert_int_equal(r.seq, e[i].seq);
    if (e[i].type == LSM_TYPE_VALUE) {
      assert_int_equal(r.state, LSM_LOOKUP_VALUE);
      size_t vn = uval(v, e[i].user, e[i].seq);
      assert_int_equal(r.val_len, vn);
      assert_memory_equal(r.val, v, vn);
    } else {
      assert_int_equal(r.state, LSM_LOOKUP_DELETED);
    }
    if (i == 0 || e[i - 1].user != e[i].user) { /* newest: also with LSM_MAX_SEQ */
      assert_int_equal(table_get(t, k, kn, h, LSM_MAX_SEQ, &tbuf, &r, &err), ST_OK);
      assert_int_equal(r.seq, e[i].seq);
    }
    if (i + 1 == n || e[i + 1].user != e[i].user) { /* below the oldest: absent */
      assert_int_equal(table_get(t, k, kn, h, e[i].seq - 1, &tbuf, &r, &err), ST_OK);
      assert_int_equal(r.state, LSM_LOOKUP_ABSENT);
    }
  }
  /* absent keys: odd numbers and keys past both ends. The filter (10 bits/key, model FPR
     0.96%) passes at most 1.5% of 80,000 absent keys (> 10 standard deviations away). */
  int passed = 0;
  for (uint32_t u = 1; u < 160000; u += 2) {
    size_t kn = ukey(k, u);
    uint64_t h = blocked_filter_key_hash(k, kn);
    passed += table_key_may_match(t, h);
    assert_int_equal(table_get(t, k, kn, h, LSM_MAX_SEQ, &tbuf, &r, &err), ST_OK);
    assert_int_equal(r.state, LSM_LOOKUP_ABSENT);
  }
  print_message("key filter: %d of 80000 absent keys passed (%.3f%%)\n", passed,
                100.0 * passed / 80000);
  assert_true(passed <= 80000 * 15 / 1000);
  assert_int_equal(table_get(t, "a", 1, blocked_filter_key_hash("a", 1), LSM_MAX_SEQ, &tbuf, &r, &err),
                   ST_OK);
  assert_int_equal(r.state, LSM_LOOKUP_ABSENT);
  assert_int_equal(table_get(t, "zz", 2, blocked_filter_key_hash("zz", 2), LSM_MAX_SEQ, &tbuf, &r, &err),
                   ST_OK);
  assert_int_equal(r.state, LSM_LOOKUP_ABSENT);

  /* iterator: order and seek */
  iterator_t *it = table_iterator_create(t);
  size_t i = 0;
  for (iterator_seek_first(it); iterator_valid(it); iterator_next(it), i++) {
    size_t kl;
    const void *key = iterator_key(it, &kl);
    uint8_t want[40];
    size_t kn = ukey(k, e[i].user);
    size_t wn = internal_key_encode(want, k, kn, e[i].seq, e[i].type);
    assert_int_equal(kl, wn);
    assert_memory_equal(key, want, wn);
  }
  assert_int_equal(i, n);
  assert_int_equal(iterator_status(it, &err), ST_OK);
  rng_t rng;
  rng_init(&rng, 5);
  for (int j = 0; j < 2000; j++) {
    uint32_t u = (uint32_t)rng_below(&rng, 160010);
    uint8_t target[40];
    size_t kn = ukey(k, u);
    size_t tn = internal_key_encode(target, k, kn, LSM_MAX_SEQ, LSM_TYPE_VALUE);
    iterator_seek(it, target, tn);
    uint32_t want = (u + 1) / 2 * 2; /* first even >= u */
    if (want >= 160000) {
      assert_false(iterator_valid(it));
      continue;
    }
    assert_true(iterator_valid(it));
    size_t kl;
    const uint8_t *key = iterator_key(it, &kl);
    size_t wn = ukey(k, want);
    assert_int_equal(kl, wn + 8);
    assert_memory_equal(key, k, wn);
  }
  iterator_destroy(it);

  /* scan visits every entry in order */
  scan_ctx_t sc = {e, n, 0, 0};
  lsm_scan_stats_t st = {0, 0};
  assert_int_equal(table_scan(t, scan_check, &sc, &st, &err), ST_OK);
  assert_int_equal(sc.i, n);
  assert_int_equal(sc.bad, 0);
  assert_int_equal(st.entries, n);
  /* scan by value: every 997th value entry is found, alone, with its key and sequence */
  for (size_t i = 0; i < n; i += 997) {
    if (e[i].type != LSM_TYPE_VALUE) continue;
    char v[64];
    size_t vn = uval(v, e[i].user, e[i].seq);
    value_ctx_t vc = {&e[i], 0, 0};
    lsm_scan_stats_t vs = {0, 0};
    assert_int_equal(table_scan_value(t, v, vn, value_check, &vc, &vs, &err), ST_OK);
    assert_int_equal(vc.visits, 1);
    assert_int_equal(vc.bad, 0);
    assert_int_equal(vs.entries, n);
    assert_int_equal(vs.bytes_read, st.bytes_read);
  }
  value_ctx_t none = {&e[0], 0, 0};
  table_stats_t before, ts;
  table_get_stats(t, &before);
  assert_int_equal(table_scan_value(t, "value-absent", 12, value_check, &none, NULL, &err), ST_OK);
  assert_int_equal(none.visits, 0);
  table_get_stats(t, &ts);
  /* every block read and checked again, once: no check is remembered from the reads before */
  assert_true(before.blocks_read >= ts.data_blocks);
  assert_int_equal(ts.blocks_read - before.blocks_read, ts.data_blocks);
  assert_true(st.bytes_read > 0 && st.bytes_read < table_file_size(t));
  print_message("table: %llu bytes, %llu data blocks, index %llu bytes, filter %llu bytes\n",
                (unsigned long long)table_file_size(t), (unsigned long long)ts.data_blocks,
                (unsigned long long)ts.index_bytes, (unsigned long long)ts.filter_bytes);

  /* meta blocks read back, at the offset they say */
  const void *md;
  size_t ms;
  uint64_t off;
  assert_int_equal(read_meta(t, "test.meta", &md, &ms, &off, &err), ST_OK);
  assert_int_equal(off, hc.offsets[0]); /* end() told the hook where its block landed */
  char want[64];
  snprintf(want, sizeof want, "adds=%zu number=7", n);
  assert_int_equal(ms, strlen(want));
  assert_memory_equal(md, want, ms);
  int fd = open(path, O_RDONLY);
  char buf[64];
  assert_int_equal(pread(fd, buf, ms, (off_t)off), (ssize_t)ms);
  close(fd);
  assert_memory_equal(buf, want, ms);
  assert_int_equal(read_meta(t, "aaa.empty", &md, &ms, &off, &err), ST_OK);
  assert_int_equal(ms, 0);
  assert_int_equal(read_meta(t, TABLE_KEY_FILTER_NAME, &md, &ms, &off, &err), ST_OK);
  assert_int_equal(ms, ts.filter_bytes);
  assert_int_equal(read_meta(t, "nope", &md, &ms, &off, &err), ST_NOT_FOUND);
  table_unref(t);
  free(e);
}

/* table_get_kept after a scan by value that kept its blocks: for every entry's value, the get
   of its key answers as table_get does, newest version first. Keys with an older version
   that is the one scanned (a newer version, value or deletion, precedes it in the table,
   sometimes in the block before) must get the newer one; a key whose scanned entry is its
   first is answered from the kept match without a seek (memo.direct counts those). */
static void test_table_get_kept_newest_version_wins(void **state) {
  (void)state;
  size_t n;
  ent_t *e = make_entries(6000, &n);
  char path[8192];
  assert_int_equal(test_path_take(path, sizeof path, table_file_path(dir, 11)), 0);
  table_builder_options_t opt;
  table_builder_options_init(&opt);
  build_table(path, 11, e, n, &opt);
  table_t *t;
  err_t err;
  assert_int_equal(table_open(env_default(), path, 11, &t, &err), ST_OK);
  uint64_t older = 0, first = 0;
  for (size_t i = 0; i < n; i++) {
    if (e[i].type != LSM_TYPE_VALUE) continue;
    block_memo_t memo; /* one per search, as a snapshot keeps it */
    block_memo_init(&memo);
    char k[32], v[64];
    size_t kn = ukey(k, e[i].user), vn = uval(v, e[i].user, e[i].seq);
    uint64_t hits = 0;
    assert_int_equal(table_scan_value_kept(t, v, vn, count_entry, &hits, NULL, &memo, &err), ST_OK);
    assert_int_equal(hits, 1);
    uint64_t h = blocked_filter_key_hash(k, kn), direct = memo.direct;
    lsm_lookup_t want, got;
    table_buf_t b1, b2;
    table_buf_init(&b1, NULL, 0);
    table_buf_init(&b2, NULL, 0);
    assert_int_equal(table_get(t, k, kn, h, LSM_MAX_SEQ, &b1, &want, &err), ST_OK);
    assert_int_equal(table_get_kept(t, k, kn, h, LSM_MAX_SEQ, &memo, &b2, &got, &err), ST_OK);
    assert_int_equal(got.state, want.state);
    assert_int_equal(got.seq, want.seq);
    assert_int_equal(got.val_len, want.val_len);
    if (want.val_len) assert_memory_equal(got.val, want.val, want.val_len);
    int is_first = i == 0 || e[i - 1].user != e[i].user;
    if (!is_first) {
      older++;
      assert_int_equal(memo.direct, direct); /* never answered from an older version */
      assert_true(want.seq != e[i].seq);
    } else {
      first += memo.direct - direct;
    }
    table_buf_release(&b1);
    table_buf_release(&b2);
    block_memo_release(&memo);
  }
  assert_true(older > 1000);
  /* every first version but those opening a block (~1 in 100 here) went without a seek */
  assert_true(first > 4000);
  table_unref(t);
  free(e);
}

/* index_find searches the separators' 8 bytes after their common prefix before it compares
   whole keys. Keys with a 13-byte common prefix, many of whose separators tie on those 8
   bytes (they differ only after them), in blocks of 256 bytes; every get and iterator seek
   agrees with an in-memory oracle: present keys, absent keys between them, keys below and
   above every key, keys shorter than the common prefix and keys that leave it. */
#define FP_KEYS 3000
static size_t fp_key(char *buf, uint32_t i) {
  /* the separators share "commonprefix-000000"; the 8 bytes after it ("00-tie-t") are the
     same for the 100 keys of a group, which differ only after them */
  return (size_t)snprintf(buf, 48, "commonprefix-%08u-tie-tie-%04u", i / 100, (i % 100) * 2 + 1);
}

static int str_cmp(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

static void test_table_index_find_prefix_and_ties(void **state) {
  (void)state;
  char path[8192];
  assert_int_equal(test_path_take(path, sizeof path, table_file_path(dir, 21)), 0);
  table_builder_options_t opt;
  table_builder_options_init(&opt);
  opt.block_bytes = 256;
  opt.sync = 0;
  table_builder_t *tb;
  err_t err;
  assert_int_equal(table_builder_create(env_default(), path, 21, &opt, &tb, &err), ST_OK);
  for (uint32_t i = 0; i < FP_KEYS; i++) {
    char k[48];
    uint8_t ik[64];
    size_t kn = fp_key(k, i);
    size_t ikn = internal_key_encode(ik, k, kn, 100 + i, LSM_TYPE_VALUE);
    assert_int_equal(table_builder_add(tb, ik, ikn, k, kn, &err), ST_OK);
  }
  assert_int_equal(table_builder_finish(tb, &err), ST_OK);
  table_builder_destroy(tb);
  table_t *t;
  assert_int_equal(table_open(env_default(), path, 21, &t, &err), ST_OK);
  table_stats_t ts;
  table_get_stats(t, &ts);
  assert_true(ts.data_blocks > 500); /* many separators, most tying with a neighbour's fp */
  /* The probes: every key, the even numbers between them, and keys around the prefix. */
  enum { EXTRA = 8 };
  static const char *const extra[EXTRA] = {
      "", "common", "commonprefix-", "commonprefix-0", "commonprefix-00000029",
      "commonprefix-99", "commonprefiw-zzzz", "commonprefiz"};
  size_t np = 2 * FP_KEYS + EXTRA;
  char **probe = malloc(np * sizeof *probe);
  for (uint32_t i = 0; i < FP_KEYS; i++) {
    probe[2 * i] = malloc(48);
    fp_key(probe[2 * i], i);
    probe[2 * i + 1] = malloc(48);
    snprintf(probe[2 * i + 1], 48, "commonprefix-%08u-tie-tie-%04u", i / 100, (i % 100) * 2);
  }
  for (int j = 0; j < EXTRA; j++) probe[2 * FP_KEYS + j] = strdup(extra[j]);
  char **keys = malloc(FP_KEYS * sizeof *keys); /* the oracle: the keys, sorted */
  for (uint32_t i = 0; i < FP_KEYS; i++) keys[i] = probe[2 * i];
  qsort(keys, FP_KEYS, sizeof *keys, str_cmp);
  iterator_t *it = table_iterator_create(t);
  for (size_t p = 0; p < np; p++) {
    const char *k = probe[p];
    size_t kn = strlen(k);
    size_t lo = 0, hi = FP_KEYS; /* first key >= k */
    while (lo < hi) {
      size_t mid = (lo + hi) / 2;
      if (strcmp(keys[mid], k) < 0)
        lo = mid + 1;
      else
        hi = mid;
    }
    int present = lo < FP_KEYS && strcmp(keys[lo], k) == 0;
    lsm_lookup_t got;
    assert_int_equal(table_get(t, k, kn, blocked_filter_key_hash(k, kn), LSM_MAX_SEQ, &tbuf,
                               &got, &err),
                     ST_OK);
    if (present != (got.state == LSM_LOOKUP_VALUE)) fail_msg("get %s: state %d", k, got.state);
    if (present) assert_memory_equal(got.val, k, kn); /* the value is the key */
    uint8_t ik[64];
    size_t ikn = internal_key_encode(ik, k, kn, LSM_MAX_SEQ, LSM_TYPE_VALUE);
    iterator_seek(it, ik, ikn);
    if (lo == FP_KEYS) {
      assert_false(iterator_valid(it));
      continue;
    }
    assert_true(iterator_valid(it));
    size_t n;
    const uint8_t *at = iterator_key(it, &n);
    if (n - 8 != strlen(keys[lo]) || memcmp(at, keys[lo], n - 8) != 0)
      fail_msg("seek %s: landed on %.*s, want %s", k, (int)(n - 8), (const char *)at, keys[lo]);
  }
  iterator_destroy(it);
  for (size_t p = 0; p < np; p++) free(probe[p]);
  free(probe);
  free(keys);
  table_unref(t);
}

static void test_table_without_filter_and_empty(void **state) {
  (void)state;
  size_t n;
  ent_t *e = make_entries(1000, &n);
  char path[8192];
  assert_int_equal(test_path_take(path, sizeof path, table_file_path(dir, 8)), 0);
  table_builder_options_t opt;
  table_builder_options_init(&opt);
  opt.key_bits_per_key = 0;
  build_table(path, 8, e, n, &opt);
  table_t *t;
  err_t err;
  assert_int_equal(table_open(env_default(), path, 8, &t, &err), ST_OK);
  assert_false(table_has_key_filter(t));
  lsm_lookup_t r;
  char k[32];
  size_t kn = ukey(k, 10);
  assert_int_equal(table_get(t, k, kn, 0, LSM_MAX_SEQ, &tbuf, &r, &err), ST_OK);
  assert_int_equal(r.state, LSM_LOOKUP_VALUE);
  table_unref(t);
  /* a table with no entries */
  build_table(path, 8, e, 0, &opt);
  assert_int_equal(table_open(env_default(), path, 8, &t, &err), ST_OK);
  assert_int_equal(table_get(t, k, kn, 0, LSM_MAX_SEQ, &tbuf, &r, &err), ST_OK);
  assert_int_equal(r.state, LSM_LOOKUP_ABSENT);
  iterator_t *it = table_iterator_create(t);
  iterator_seek_first(it);
  assert_false(iterator_valid(it));
  iterator_destroy(it);
  table_unref(t);
  free(e);
}

/* A key shorter than an internal key's 8-byte tag, in a block whose checksum is right (a
   crafted or buggy file): the iterator stops with ST_E_CORRUPT instead of handing it to
   the merge and compaction, which would read before it; table_salvage skips it. */
static void test_table_short_internal_key_is_corrupt(void **state) {
  (void)state;
  char path[8192];
  assert_int_equal(test_path_take(path, sizeof path, table_file_path(dir, 12)), 0);
  /* The builder refuses such a key, so the file is the fuzzer's crafted table (its data
     block holds a 3-byte key; its checksums are right). */
  assert_int_equal(
      test_copy_file(BFH_SOURCE_DIR "/tests/fuzz/regress/table/data-key-shorter-than-tag", path,
                     UINT64_MAX),
      0);
  err_t err;
  table_t *t;
  assert_int_equal(table_open(env_default(), path, 12, &t, &err), ST_OK);
  iterator_t *it = table_iterator_create(t);
  iterator_seek_first(it);
  assert_false(iterator_valid(it));
  err_clear(&err);
  assert_int_equal(iterator_status(it, &err), ST_E_CORRUPT);
  assert_non_null(strstr(err.msg, "malformed internal key"));
  iterator_destroy(it);
  uint64_t bad = 0;
  assert_int_equal(table_salvage(t, NULL, NULL, &bad), 0);
  assert_int_equal(bad, 1);
  table_unref(t);
}

static void test_table_builder_hook_abandon_and_order(void **state) {
  (void)state;
  char path[8192];
  assert_int_equal(test_path_take(path, sizeof path, table_file_path(dir, 9)), 0);
  hook_ctx_t hc = {0};
  lsm_table_hook_t hook = make_hook(&hc);
  table_builder_options_t opt;
  table_builder_options_init(&opt);
  opt.hook = &hook;
  table_builder_t *tb;
  err_t err;
  assert_int_equal(table_builder_create(env_default(), path, 9, &opt, &tb, &err), ST_OK);
  uint8_t a[16], b[16];
  size_t an = internal_key_encode(a, "b", 1, 5, LSM_TYPE_VALUE);
  size_t bn = internal_key_encode(b, "a", 1, 5, LSM_TYPE_VALUE);
  assert_int_equal(table_builder_add(tb, a, an, "x", 1, &err), ST_OK);
  assert_int_equal(table_builder_add(tb, b, bn, "x", 1, &err), ST_E_INVALID); /* out of order */
  assert_non_null(strstr(err.msg, "out of order"));
  assert_int_equal(table_builder_finish(tb, &err), ST_E_INVALID);
  table_builder_destroy(tb);
  assert_int_equal(hc.ends_fail, 1); /* end(0) exactly once */
  assert_int_equal(hc.ends_ok, 0);
  /* abandoned without finish */
  assert_int_equal(table_builder_create(env_default(), path, 10, &opt, &tb, &err), ST_OK);
  assert_int_equal(table_builder_add(tb, a, an, "x", 1, &err), ST_OK);
  table_builder_destroy(tb);
  assert_int_equal(hc.ends_fail, 2);
  assert_int_equal(hc.finishes, 0);
  /* a failing write fails the build and gives end(0) */
  env_t *io = env_create_faulty();
  assert_int_equal(table_builder_create(io, path, 11, &opt, &tb, &err), ST_OK);
  assert_int_equal(table_builder_add(tb, a, an, "x", 1, &err), ST_OK);
  env_fail(io, ENV_OP_SYNC, 1, 0);
  assert_int_equal(table_builder_finish(tb, &err), ST_E_IO);
  table_builder_destroy(tb);
  assert_int_equal(hc.ends_fail, 3);
  assert_int_equal(hc.ends_ok, 0);
  env_destroy(io);
}

/* Flips one byte at a time over the data blocks of a small table: every get either returns
   the right answer or ST_E_CORRUPT naming the file and a block; never a wrong value. */
static void test_table_every_data_byte_flip_detected(void **state) {
  (void)state;
  size_t n;
  ent_t *e = make_entries(240, &n);
  char path[8192];
  assert_int_equal(test_path_take(path, sizeof path, table_file_path(dir, 12)), 0);
  table_builder_options_t opt;
  table_builder_options_init(&opt);
  opt.block_bytes = 1024;
  build_table(path, 12, e, n, &opt);
  table_t *t;
  err_t err;
  assert_int_equal(table_open(env_default(), path, 12, &t, &err), ST_OK);
  const void *md;
  size_t ms;
  uint64_t data_end;
  assert_int_equal(read_meta(t, TABLE_KEY_FILTER_NAME, &md, &ms, &data_end, &err), ST_OK);
  table_stats_t ts;
  table_get_stats(t, &ts);
  assert_true(ts.data_blocks >= 8);
  table_unref(t);
  int fd = open(path, O_RDWR);
  assert_true(fd >= 0);
  char k[32], v[64];
  for (uint64_t pos = 0; pos < data_end; pos++) {
    uint8_t byte;
    assert_int_equal(pread(fd, &byte, 1, (off_t)pos), 1);
    uint8_t flipped = byte ^ (uint8_t)(1u << (pos % 8));
    assert_int_equal(pwrite(fd, &flipped, 1, (off_t)pos), 1);
    assert_int_equal(table_open(env_default(), path, 12, &t, &err), ST_OK);
    int corrupt = 0;
    for (size_t i = 0; i < n; i++) {
      lsm_lookup_t r;
      size_t kn = ukey(k, e[i].user);
      int rc = table_get(t, k, kn, blocked_filter_key_hash(k, kn), e[i].seq, &tbuf, &r, &err);
      if (rc == ST_E_CORRUPT) {
        assert_non_null(strstr(err.msg, "table 000012.sst: block at "));
        corrupt++;
        continue;
      }
      assert_int_equal(rc, ST_OK);
      assert_int_equal(r.seq, e[i].seq);
      assert_int_equal(r.state,
                       e[i].type == LSM_TYPE_VALUE ? LSM_LOOKUP_VALUE : LSM_LOOKUP_DELETED);
      if (r.state == LSM_LOOKUP_VALUE) {
        size_t vn = uval(v, e[i].user, e[i].seq);
        assert_int_equal(r.val_len, vn);
        assert_memory_equal(r.val, v, vn);
      }
    }
    if (!corrupt) fail_msg("flip at %llu not detected by get", (unsigned long long)pos);
    scan_ctx_t sc = {e, n, 0, 0};
    assert_int_equal(table_scan(t, scan_check, &sc, NULL, &err), ST_E_CORRUPT);
    assert_int_equal(sc.bad, 0);
    value_ctx_t vc = {&e[0], 0, 0};
    assert_int_equal(table_scan_value(t, "value-absent", 12, value_check, &vc, NULL, &err),
                     ST_E_CORRUPT);
    assert_non_null(strstr(err.msg, "table 000012.sst: block at "));
    iterator_t *it = table_iterator_create(t);
    size_t cnt = 0;
    for (iterator_seek_first(it); iterator_valid(it); iterator_next(it)) cnt++;
    assert_true(cnt < n);
    assert_int_equal(iterator_status(it, &err), ST_E_CORRUPT);
    iterator_destroy(it);
    table_unref(t);
    assert_int_equal(pwrite(fd, &byte, 1, (off_t)pos), 1);
  }
  close(fd);
  free(e);
}

/* Scans reuse their read buffers (lsm/table.c keeps a few for the process): a scan after a
   byte was flipped under the open handle must read the block again and report it, though
   the buffer it gets still holds the block's good bytes from the scan before; after the byte
   is put back the scan is whole again; a file truncated under the handle is an error. */
static void test_table_scan_after_damage_under_open_handle(void **state) {
  (void)state;
  size_t n;
  ent_t *e = make_entries(24000, &n); /* about 1.3 MB: several read runs */
  char path[8192];
  assert_int_equal(test_path_take(path, sizeof path, table_file_path(dir, 13)), 0);
  table_builder_options_t opt;
  table_builder_options_init(&opt);
  build_table(path, 13, e, n, &opt);
  table_t *t;
  err_t err;
  assert_int_equal(table_open(env_default(), path, 13, &t, &err), ST_OK);
  const void *md;
  size_t ms;
  uint64_t data_end;
  assert_int_equal(read_meta(t, TABLE_KEY_FILTER_NAME, &md, &ms, &data_end, &err), ST_OK);
  assert_true(data_end > 4 * (256u << 10));
  int fd = open(path, O_RDWR);
  assert_true(fd >= 0);
  const uint64_t at[] = {data_end / 9, data_end / 2, data_end - 100};
  for (size_t a = 0; a < sizeof at / sizeof at[0]; a++) {
    scan_ctx_t sc = {e, n, 0, 0};
    assert_int_equal(table_scan(t, scan_check, &sc, NULL, &err), ST_OK);
    assert_int_equal(sc.i, n);
    assert_int_equal(sc.bad, 0);
    uint8_t byte, flipped;
    assert_int_equal(pread(fd, &byte, 1, (off_t)at[a]), 1);
    flipped = byte ^ 0x10;
    assert_int_equal(pwrite(fd, &flipped, 1, (off_t)at[a]), 1);
    sc = (scan_ctx_t){e, n, 0, 0};
    assert_int_equal(table_scan(t, scan_check, &sc, NULL, &err), ST_E_CORRUPT);
    assert_non_null(strstr(err.msg, "table 000013.sst: block at "));
    assert_int_equal(sc.bad, 0);
    assert_true(sc.i < n);
    value_ctx_t vc = {&e[0], 0, 0};
    assert_int_equal(table_scan_value(t, "value-absent", 12, value_check, &vc, NULL, &err),
                     ST_E_CORRUPT);
    assert_non_null(strstr(err.msg, "checksum mismatch"));
    assert_int_equal(pwrite(fd, &byte, 1, (off_t)at[a]), 1);
  }
  scan_ctx_t sc = {e, n, 0, 0};
  assert_int_equal(table_scan(t, scan_check, &sc, NULL, &err), ST_OK);
  assert_int_equal(sc.i, n);
  assert_int_equal(ftruncate(fd, (off_t)(data_end / 2)), 0);
  sc = (scan_ctx_t){e, n, 0, 0};
  assert_int_equal(table_scan(t, scan_check, &sc, NULL, &err), ST_E_CORRUPT);
  assert_non_null(strstr(err.msg, "truncated"));
  assert_int_equal(sc.bad, 0);
  close(fd);
  table_unref(t);
  free(e);
}

/* Damage to the footer, index or meta index makes open fail; a damaged key filter fails the
   first get that needs it; a damaged hook meta block fails its read. */
static void test_table_metadata_damage_rejected(void **state) {
  (void)state;
  size_t n;
  ent_t *e = make_entries(500, &n);
  char path[8192];
  assert_int_equal(test_path_take(path, sizeof path, table_file_path(dir, 13)), 0);
  hook_ctx_t hc = {0};
  lsm_table_hook_t hook = make_hook(&hc);
  table_builder_options_t opt;
  table_builder_options_init(&opt);
  opt.hook = &hook;
  build_table(path, 13, e, n, &opt);
  void *orig;
  size_t size;
  err_t err;
  assert_int_equal(env_read_file(env_default(), path, &orig, &size, &err), ST_OK);
  table_t *t;
  assert_int_equal(table_open(env_default(), path, 13, &t, &err), ST_OK);
  const void *md;
  size_t ms;
  uint64_t filter_off, meta_off;
  assert_int_equal(read_meta(t, TABLE_KEY_FILTER_NAME, &md, &ms, &filter_off, &err), ST_OK);
  assert_int_equal(read_meta(t, "test.meta", &md, &ms, &meta_off, &err), ST_OK);
  table_unref(t);
  /* meta index and index start at the meta index handle of the footer */
  block_handle_t mh;
  const uint8_t *f = (const uint8_t *)orig + size - TABLE_FOOTER_BYTES;
  assert_non_null(block_handle_decode(f, f + 40, &mh));
  int fd = open(path, O_RDWR);
  for (uint64_t pos = filter_off; pos < size; pos++) {
    uint8_t byte = ((uint8_t *)orig)[pos], flipped = byte ^ 0x10;
    assert_int_equal(pwrite(fd, &flipped, 1, (off_t)pos), 1);
    int rc = table_open(env_default(), path, 13, &t, &err);
    if (pos >= meta_off && pos < mh.offset) {
      /* the hook's meta blocks are verified when read, not at open */
      assert_int_equal(rc, ST_OK);
      int r1 = read_meta(t, "test.meta", &md, &ms, NULL, &err);
      int r2 = read_meta(t, "aaa.empty", &md, &ms, NULL, &err);
      if (r1 != ST_E_CORRUPT && r2 != ST_E_CORRUPT)
        fail_msg("flip in meta blocks at %llu not detected", (unsigned long long)pos);
      assert_non_null(strstr(err.msg, "table 000013.sst: block at "));
      table_unref(t);
    } else if (pos < meta_off) {
      /* the key filter is verified by the first lookup that needs it, not at open */
      assert_int_equal(rc, ST_OK);
      table_buf_t tbuf;
      table_buf_init(&tbuf, NULL, 0);
      lsm_lookup_t r;
      char k[32];
      size_t kn = ukey(k, e[0].user);
      rc = table_get(t, k, kn, blocked_filter_key_hash(k, kn), LSM_MAX_SEQ, &tbuf, &r, &err);
      table_buf_release(&tbuf);
      if (rc != ST_E_CORRUPT)
        fail_msg("flip in key filter at %llu: get rc %d", (unsigned long long)pos, rc);
      assert_non_null(strstr(err.msg, "table 000013.sst: block at "));
      assert_true(table_key_may_match(t, 42)); /* unreadable: maybe */
      table_unref(t);
    } else {
      /* meta index, index, footer: open fails */
      if (rc != ST_E_CORRUPT) fail_msg("flip at %llu: open rc %d", (unsigned long long)pos, rc);
      assert_non_null(strstr(err.msg, "table 000013.sst: "));
    }
    assert_int_equal(pwrite(fd, &byte, 1, (off_t)pos), 1);
  }
  /* a newer format version with a valid footer checksum */
  uint8_t footer[TABLE_FOOTER_BYTES];
  memcpy(footer, f, sizeof footer);
  encode_fixed32(footer + 48, TABLE_FORMAT_VERSION + 1);
  encode_fixed32(footer + 52, crc32c_mask(crc32c_value(footer, 52)));
  assert_int_equal(pwrite(fd, footer, sizeof footer, (off_t)(size - TABLE_FOOTER_BYTES)),
                   TABLE_FOOTER_BYTES);
  assert_int_equal(table_open(env_default(), path, 13, &t, &err), ST_E_UNSUPPORTED);
  /* truncated files */
  assert_int_equal(ftruncate(fd, (off_t)(size - 1)), 0);
  assert_int_equal(table_open(env_default(), path, 13, &t, &err), ST_E_CORRUPT);
  assert_int_equal(ftruncate(fd, 10), 0);
  assert_int_equal(table_open(env_default(), path, 13, &t, &err), ST_E_CORRUPT);
  assert_non_null(strstr(err.msg, "too short"));
  close(fd);
  free(orig);
  free(e);
}

static void test_table_cache_lru_and_evict(void **state) {
  (void)state;
  size_t n;
  ent_t *e = make_entries(100, &n);
  table_builder_options_t opt;
  table_builder_options_init(&opt);
  for (uint64_t num = 1; num <= 5; num++) {
    char path[8192];
    assert_int_equal(test_path_take(path, sizeof path, table_file_path(dir, num)), 0);
    build_table(path, num, e, n, &opt);
  }
  table_cache_t *tc = table_cache_create(env_default(), dir, 2);
  assert_non_null(tc);
  err_t err;
  table_t *held;
  assert_int_equal(table_cache_get(tc, 1, &held, &err), ST_OK);
  for (uint64_t num = 1; num <= 5; num++) {
    table_t *t;
    assert_int_equal(table_cache_get(tc, num, &t, &err), ST_OK);
    assert_int_equal(table_number(t), num);
    table_unref(t);
    assert_true(table_cache_size(tc) <= 2);
  }
  /* table 1 was evicted from the cache but is still usable through our reference */
  char k[32];
  size_t kn = ukey(k, 4);
  lsm_lookup_t r;
  assert_int_equal(table_get(held, k, kn, blocked_filter_key_hash(k, kn), LSM_MAX_SEQ, &tbuf, &r, &err),
                   ST_OK);
  assert_int_equal(r.state, LSM_LOOKUP_VALUE);
  table_unref(held);
  /* the same table twice is the same reader */
  table_t *a, *b;
  assert_int_equal(table_cache_get(tc, 5, &a, &err), ST_OK);
  assert_int_equal(table_cache_get(tc, 5, &b, &err), ST_OK);
  assert_ptr_equal(a, b);
  table_unref(b);
  table_cache_evict(tc, 5);
  table_cache_evict(tc, 99);
  assert_int_equal(table_cache_get(tc, 5, &b, &err), ST_OK);
  assert_ptr_not_equal(a, b);
  table_unref(a);
  table_unref(b);
  assert_int_equal(table_cache_get(tc, 42, &a, &err), ST_E_IO);
  assert_non_null(strstr(err.msg, "000042.sst"));
  table_cache_destroy(tc);
  table_cache_destroy(NULL);
  free(e);
}

/* Three tables with interleaved keys and a memtable merge into one ordered stream. */
static void test_merging_iterator_orders_all_children(void **state) {
  (void)state;
  size_t n;
  ent_t *e = make_entries(3000, &n);
  ent_t *part[4];
  size_t np[4] = {0};
  for (int j = 0; j < 4; j++) part[j] = malloc(n * sizeof *e);
  for (size_t i = 0; i < n; i++) {
    int j = (int)((e[i].user / 2 * 2654435761u >> 7) % 4);
    part[j][np[j]++] = e[i];
  }
  iterator_t *children[5];
  table_builder_options_t opt;
  table_builder_options_init(&opt);
  err_t err;
  for (int j = 0; j < 3; j++) {
    char path[8192];
    assert_int_equal(test_path_take(path, sizeof path, table_file_path(dir, (uint64_t)j + 1)), 0);
    build_table(path, (uint64_t)j + 1, part[j], np[j], &opt);
    table_t *t;
    assert_int_equal(table_open(env_default(), path, (uint64_t)j + 1, &t, &err), ST_OK);
    children[j] = table_iterator_create(t);
    table_unref(t); /* the iterator holds its own reference */
  }
  memtable_t *m = memtable_create();
  for (size_t i = 0; i < np[3]; i++) {
    char k[32], v[64];
    size_t kn = ukey(k, part[3][i].user);
    size_t vn = part[3][i].type ? uval(v, part[3][i].user, part[3][i].seq) : 0;
    assert_int_equal(memtable_add(m, part[3][i].seq, part[3][i].type, k, kn, v, vn), ST_OK);
  }
  children[3] = memtable_iterator_create(m);
  memtable_unref(m);
  children[4] = iterator_empty_create(ST_OK, NULL);
  iterator_t *it = merging_iterator_create(children, 5);
  assert_non_null(it);
  size_t i = 0;
  for (iterator_seek_first(it); iterator_valid(it); iterator_next(it), i++) {
    size_t kl;
    const uint8_t *key = iterator_key(it, &kl);
    internal_key_parts_t p;
    assert_int_equal(internal_key_parse(key, kl, &p), 0);
    char k[32];
    size_t kn = ukey(k, e[i].user);
    assert_int_equal(p.user_len, kn);
    assert_memory_equal(p.user_key, k, kn);
    assert_int_equal(p.seq, e[i].seq);
  }
  assert_int_equal(i, n);
  /* seek into the middle */
  uint8_t target[40];
  char k[32];
  size_t kn = ukey(k, e[n / 2].user);
  size_t tn = internal_key_encode(target, k, kn, LSM_MAX_SEQ, LSM_TYPE_VALUE);
  iterator_seek(it, target, tn);
  assert_true(iterator_valid(it));
  size_t kl;
  const uint8_t *key = iterator_key(it, &kl);
  assert_memory_equal(key, k, kn);
  assert_int_equal(iterator_status(it, &err), ST_OK);
  iterator_destroy(it);
  /* an erroring child makes the merge report it */
  err_t bad;
  err_set(&bad, ST_E_CORRUPT, "boom");
  iterator_t *one[1] = {iterator_empty_create(ST_E_CORRUPT, &bad)};
  it = merging_iterator_create(one, 1);
  iterator_seek_first(it);
  assert_false(iterator_valid(it));
  assert_int_equal(iterator_status(it, &err), ST_E_CORRUPT);
  assert_string_equal(err.msg, "boom");
  iterator_destroy(it);
  for (int j = 0; j < 4; j++) free(part[j]);
  free(e);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_table_build_get_iterate_scan, dir_setup, dir_teardown),
      cmocka_unit_test_setup_teardown(test_table_without_filter_and_empty, dir_setup, dir_teardown),
      cmocka_unit_test_setup_teardown(test_table_index_find_prefix_and_ties, dir_setup, dir_teardown),
      cmocka_unit_test_setup_teardown(test_table_get_kept_newest_version_wins, dir_setup,
                                      dir_teardown),
      cmocka_unit_test_setup_teardown(test_table_short_internal_key_is_corrupt, dir_setup,
                                      dir_teardown),
      cmocka_unit_test_setup_teardown(test_table_builder_hook_abandon_and_order, dir_setup,
                                      dir_teardown),
      cmocka_unit_test_setup_teardown(test_table_every_data_byte_flip_detected, dir_setup,
                                      dir_teardown),
      cmocka_unit_test_setup_teardown(test_table_scan_after_damage_under_open_handle, dir_setup,
                                      dir_teardown),
      cmocka_unit_test_setup_teardown(test_table_metadata_damage_rejected, dir_setup, dir_teardown),
      cmocka_unit_test_setup_teardown(test_table_cache_lru_and_evict, dir_setup, dir_teardown),
      cmocka_unit_test_setup_teardown(test_merging_iterator_orders_all_children, dir_setup,
                                      dir_teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

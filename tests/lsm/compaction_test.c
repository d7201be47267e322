/* Tests of compactions (lsm/compaction.h) over real tables written with the table builder:
   which level and inputs lsm_compaction_pick chooses (L0 overlap closure, round robin by
   compact pointer), trivial moves, the merge of lsm_compaction_run against an oracle
   (newest version of each key kept, deletions dropped only where no deeper level may hold
   the key), output splitting by table_bytes and by grandparent overlap, interruption and a
   damaged input, and lsm_compaction_fill_edit applied to the version set. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lsm/compaction.h"
#include "lsm/filename.h"
#include "lsm/internal_key.h"
#include "util/env.h"
#include "lsm/table.h"
#include "lsm/table_builder.h"
#include "lsm/version_edit.h"
#include "lsm/version_set.h"
#include "tests/test_util.h"
#include "util/random.h"

static char dir[TEST_PATH_MAX]; /* the current test's temporary directory */
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;

static int dir_setup(void **state) {
  (void)state;
  return test_tmpdir_create(dir, sizeof dir, "compaction_test");
}

static int dir_teardown(void **state) {
  (void)state;
  return test_rmrf(dir);
}

/* ---- Entries and tables -------------------------------------------------------------- */

typedef struct entry {
  unsigned id; /* user key "k%06u" */
  uint64_t seq;
  int type;
} entry_t;

static size_t ukey(char *buf, unsigned id) {
  return (size_t)snprintf(buf, 16, "k%06u", id);
}

/* The value of (id, seq): vlen bytes (>= 24) that name both; deletions have none. */
static size_t value_of(char *buf, unsigned id, uint64_t seq, size_t vlen) {
  int n = snprintf(buf, vlen + 1, "v%u-%" PRIu64 "-", id, seq);
  for (size_t i = (size_t)n; i < vlen; i++) buf[i] = (char)('a' + (id + i) % 26);
  return vlen;
}

/* Internal order: id ascending, then newest (highest seq) first. */
static int cmp_entry(const void *a, const void *b) {
  const entry_t *x = a, *y = b;
  if (x->id != y->id) return x->id < y->id ? -1 : 1;
  return x->seq > y->seq ? -1 : x->seq < y->seq;
}

static lsm_version_set_t *vs;
static size_t value_bytes = 40;

/* Writes a table of ents (sorted here) with a fresh file number and adds it to e at
   level. Returns the file number. */
static uint64_t build_table(lsm_version_edit_t *e, int level, entry_t *ents, size_t n) {
  qsort(ents, n, sizeof *ents, cmp_entry);
  uint64_t number = lsm_version_set_new_file_number(vs);
  char path[TEST_PATH_MAX];
  assert_int_equal(test_path_take(path, sizeof path, table_file_path(dir, number)), 0);
  table_builder_options_t opt;
  table_builder_options_init(&opt);
  opt.sync = 0;
  table_builder_t *tb;
  err_t err;
  assert_int_equal(table_builder_create(env_default(), path, number, &opt, &tb, &err), ST_OK);
  for (size_t i = 0; i < n; i++) {
    char k[16], v[256];
    uint8_t ik[32];
    size_t kn = ukey(k, ents[i].id);
    size_t ikn = internal_key_encode(ik, k, kn, ents[i].seq, ents[i].type);
    size_t vn =
        ents[i].type == LSM_TYPE_VALUE ? value_of(v, ents[i].id, ents[i].seq, value_bytes) : 0;
    assert_int_equal(table_builder_add(tb, ik, ikn, v, vn, &err), ST_OK);
  }
  assert_int_equal(table_builder_finish(tb, &err), ST_OK);
  size_t sl, ll;
  const uint8_t *s = table_builder_smallest(tb, &sl), *l = table_builder_largest(tb, &ll);
  assert_int_equal(
      lsm_version_edit_add_file(e, level, number, table_builder_file_size(tb), s, sl, l, ll),
      ST_OK);
  table_builder_destroy(tb);
  return number;
}

/* Adds to e at level a file meta with no table behind it (for levels a compaction only
   measures, never reads): user keys [lo, hi], the given size. */
static uint64_t add_fake_file(lsm_version_edit_t *e, int level, unsigned lo, unsigned hi,
                              uint64_t size) {
  char a[16], b[16];
  uint8_t s[32], l[32];
  size_t sn = internal_key_encode(s, a, ukey(a, lo), 1, LSM_TYPE_VALUE);
  size_t ln = internal_key_encode(l, b, ukey(b, hi), 1, LSM_TYPE_VALUE);
  uint64_t number = lsm_version_set_new_file_number(vs);
  assert_int_equal(lsm_version_edit_add_file(e, level, number, size, s, sn, l, ln), ST_OK);
  return number;
}

static void apply(lsm_version_edit_t *e) {
  err_t err;
  err_clear(&err);
  pthread_mutex_lock(&mu);
  int rc = lsm_version_set_log_and_apply(vs, e, &mu, &err);
  pthread_mutex_unlock(&mu);
  if (rc != ST_OK) fail_msg("log_and_apply: %s", err.msg);
  lsm_version_edit_release(e);
  lsm_version_edit_init(e);
}

/* ---- The environment (as lsm/db.c provides it) --------------------------------------- */

typedef struct env_ctx {
  long interrupt_at; /* interrupt() returns 1 from its interrupt_at-th call (0: never) */
  long calls;
  uint64_t new_files;
} env_ctx_t;

static uint64_t env_new_file(void *arg) {
  env_ctx_t *c = arg;
  pthread_mutex_lock(&mu);
  uint64_t n = lsm_version_set_new_file_number(vs);
  pthread_mutex_unlock(&mu);
  c->new_files++;
  return n;
}

static int env_interrupt(void *arg) {
  env_ctx_t *c = arg;
  c->calls++;
  return c->interrupt_at && c->calls >= c->interrupt_at;
}

/* The reader of f, opened once and kept by the meta (which drops it when destroyed). */
static int env_open_table(void *arg, lsm_file_meta_t *f, struct table **t, err_t *err) {
  (void)arg;
  table_t *cur = atomic_load(&f->table);
  if (!cur) {
    char path[TEST_PATH_MAX];
    assert_int_equal(test_path_take(path, sizeof path, table_file_path(dir, f->number)), 0);
    int rc = table_open(env_default(), path, f->number, &cur, err);
    if (rc != ST_OK) return rc;
    atomic_store(&f->table, cur);
  }
  *t = cur;
  return ST_OK;
}

static lsm_compaction_env_t make_env(env_ctx_t *c) {
  lsm_compaction_env_t env = {.io = env_default(),
                              .dir = dir,
                              .new_file = env_new_file,
                              .interrupt = env_interrupt,
                              .open_table = env_open_table,
                              .arg = c};
  table_builder_options_init(&env.topt);
  env.topt.sync = 0;
  return env;
}

static lsm_compaction_t *pick(uint64_t table_bytes) {
  pthread_mutex_lock(&mu);
  lsm_compaction_t *c = lsm_compaction_pick(vs, table_bytes);
  pthread_mutex_unlock(&mu);
  return c;
}

static void destroy(lsm_compaction_t *c) {
  pthread_mutex_lock(&mu);
  lsm_compaction_destroy(c);
  pthread_mutex_unlock(&mu);
}

/* Sorted file numbers of files[0, n). */
static void numbers_of(lsm_file_meta_t *const *files, size_t n, uint64_t *out) {
  for (size_t i = 0; i < n; i++) out[i] = files[i]->number;
  u64vec_t a = {out, n, n};
  u64vec_sort(&a);
}

static void assert_files(lsm_file_meta_t *const *files, size_t n, const uint64_t *want,
                         size_t nwant) {
  uint64_t got[64];
  assert_int_equal(n, nwant);
  assert_true(n <= 64);
  numbers_of(files, n, got);
  uint64_t w[64];
  memcpy(w, want, nwant * sizeof *w);
  u64vec_t a = {w, nwant, nwant};
  u64vec_sort(&a);
  for (size_t i = 0; i < n; i++) assert_int_equal(got[i], w[i]);
}

/* ---- Reading the outputs back -------------------------------------------------------- */

/* Checks every output of c: a table whose size, smallest and largest keys are the ones
   listed, in key order and disjoint from the next; returns all their entries (malloc'd,
   *n) and checks each value is the one written for (id, seq). */
static entry_t *read_outputs(const lsm_compaction_t *c, size_t *n) {
  size_t cap = 1024, k = 0;
  entry_t *out = malloc(cap * sizeof *out);
  for (size_t o = 0; o < c->noutputs; o++) {
    const lsm_output_t *x = &c->outputs[o];
    char path[TEST_PATH_MAX];
    assert_int_equal(test_path_take(path, sizeof path, table_file_path(dir, x->number)), 0);
    table_t *t;
    err_t err;
    assert_int_equal(table_open(env_default(), path, x->number, &t, &err), ST_OK);
    assert_int_equal(table_file_size(t), x->size);
    iterator_t *it = table_iterator_create(t);
    size_t first = k;
    uint8_t last[32];
    size_t last_len = 0;
    for (iterator_seek_first(it); iterator_valid(it); iterator_next(it)) {
      size_t kl, vl;
      const uint8_t *key = iterator_key(it, &kl);
      const char *val = iterator_value(it, &vl);
      if (k == first) {
        assert_int_equal(kl, x->smallest_len);
        assert_memory_equal(key, x->smallest, kl);
      }
      assert_true(kl <= sizeof last);
      memcpy(last, key, kl);
      last_len = kl;
      internal_key_parts_t p = {0};
      assert_int_equal(internal_key_parse(key, kl, &p), 0);
      char ub[8];
      assert_int_equal(p.user_len, 7);
      memcpy(ub, p.user_key, 7);
      ub[7] = '\0';
      if (k == cap) out = realloc(out, (cap *= 2) * sizeof *out);
      out[k] = (entry_t){(unsigned)strtoul(ub + 1, NULL, 10), p.seq, p.type};
      if (p.type == LSM_TYPE_VALUE) {
        char want[256];
        size_t wn = value_of(want, out[k].id, p.seq, value_bytes);
        assert_int_equal(vl, wn);
        assert_memory_equal(val, want, wn);
      } else {
        assert_int_equal(vl, 0);
      }
      k++;
    }
    assert_int_equal(iterator_status(it, &err), ST_OK);
    assert_true(k > first); /* no empty output */
    assert_int_equal(last_len, x->largest_len);
    assert_memory_equal(last, x->largest, last_len);
    iterator_destroy(it);
    table_unref(t);
    if (o > 0) /* ordered and disjoint in user keys */
      assert_true(bytewise_compare(c->outputs[o - 1].largest, c->outputs[o - 1].largest_len - 8,
                                   x->smallest, x->smallest_len - 8) < 0);
  }
  *n = k;
  return out;
}

/* What a compaction must produce from `in`: the newest entry of each id, except deletions
   of ids that no deeper level may hold (covered[id] == 0). In key order; *n entries. */
static entry_t *expected_outputs(entry_t *in, size_t nin, const uint8_t *covered, size_t *n) {
  qsort(in, nin, sizeof *in, cmp_entry);
  entry_t *out = malloc((nin ? nin : 1) * sizeof *out);
  size_t k = 0;
  for (size_t i = 0; i < nin; i++) {
    if (i > 0 && in[i].id == in[i - 1].id) continue;
    if (in[i].type == LSM_TYPE_DELETION && !covered[in[i].id]) continue;
    out[k++] = in[i];
  }
  *n = k;
  return out;
}

static void assert_entries_equal(const entry_t *got, size_t ngot, const entry_t *want,
                                 size_t nwant) {
  assert_int_equal(ngot, nwant);
  for (size_t i = 0; i < ngot; i++) {
    if (got[i].id != want[i].id || got[i].seq != want[i].seq || got[i].type != want[i].type)
      fail_msg("entry %zu: got (%u, %" PRIu64 ", %d), expected (%u, %" PRIu64 ", %d)", i, got[i].id,
               got[i].seq, got[i].type, want[i].id, want[i].seq, want[i].type);
  }
}

/* ---- A level-0 compaction -------------------------------------------------------------- */

#define MAX_ID 1000

/* The scene of the L0 tests, built from a fixed seed:
     L0: 4 tables over ids [0, 400) (each id with probability 1/2; seq grows with the table;
         1 in 5 entries a deletion; 1 in 10 ids also with an older version in the table;
         with deeper levels, the newest deletes the ids at and next to their edges)
     L1: a = ids [0, 400) every other id (older seqs), b = ids [500, 600)
     L2: c = ids [100, 200), d = [450, 460]        L3: e = ids [300, 310]
   All entries of L0 and L1a go to `in` (the compaction's inputs). */
typedef struct scene {
  uint64_t l0[4], l1a, l1b, l2c, l2d, l3e;
  entry_t *in;
  size_t nin;
  uint8_t covered[MAX_ID]; /* ids inside the range of an L2 or L3 table */
} scene_t;

static void cover(scene_t *s, const entry_t *buf, size_t n) {
  for (unsigned id = buf[0].id; id <= buf[n - 1].id; id++) s->covered[id] = 1;
}

static void range_entries(entry_t *buf, size_t *n, unsigned lo, unsigned hi, unsigned step,
                          uint64_t seq) {
  *n = 0;
  for (unsigned id = lo; id < hi; id += step) buf[(*n)++] = (entry_t){id, seq, LSM_TYPE_VALUE};
}

static void build_scene(scene_t *s, uint64_t seed, int with_deeper_levels) {
  rng_t r;
  rng_init(&r, seed);
  entry_t *buf = malloc(2 * MAX_ID * sizeof *buf);
  s->in = malloc(8 * MAX_ID * sizeof *s->in);
  s->nin = 0;
  memset(s->covered, 0, sizeof s->covered);
  lsm_version_edit_t e;
  lsm_version_edit_init(&e);
  size_t n;
  /* Deeper levels first: their seqs are the oldest. */
  if (with_deeper_levels) {
    range_entries(buf, &n, 100, 200, 3, 1);
    cover(s, buf, n);
    s->l2c = build_table(&e, 2, buf, n);
    range_entries(buf, &n, 450, 461, 1, 1);
    cover(s, buf, n);
    s->l2d = build_table(&e, 2, buf, n);
    range_entries(buf, &n, 300, 311, 2, 1);
    cover(s, buf, n);
    s->l3e = build_table(&e, 3, buf, n);
  }
  range_entries(buf, &n, 0, 400, 2, 10);
  memcpy(s->in + s->nin, buf, n * sizeof *buf);
  s->nin += n;
  s->l1a = build_table(&e, 1, buf, n);
  range_entries(buf, &n, 500, 600, 1, 10);
  s->l1b = build_table(&e, 1, buf, n);
  for (int t = 0; t < 4; t++) {
    n = 0;
    for (unsigned id = 0; id < 400; id++) {
      /* The newest table deletes the ids at and next to the edges of the deeper tables. */
      int edge = t == 3 && with_deeper_levels &&
                 (id % 100 == 0 || id % 100 == 99 || id == 310 || id == 311);
      if (!edge && rng_below(&r, 2)) continue;
      uint64_t seq = 10000 * (uint64_t)(t + 1) + 2 * id + 1;
      int type = edge || rng_below(&r, 5) == 0 ? LSM_TYPE_DELETION : LSM_TYPE_VALUE;
      buf[n++] = (entry_t){id, seq, type};
      if (rng_below(&r, 10) == 0) buf[n++] = (entry_t){id, seq - 1, LSM_TYPE_VALUE};
    }
    memcpy(s->in + s->nin, buf, n * sizeof *buf);
    s->nin += n;
    s->l0[t] = build_table(&e, 0, buf, n);
  }
  apply(&e);
  free(buf);
}

static void test_compaction_level0_pick_run_fill_edit(void **state) {
  (void)state;
  err_t err;
  assert_int_equal(lsm_version_set_create(dir, env_default(), 1 << 20, &vs, &err), ST_OK);
  scene_t s;
  build_scene(&s, 2024, 1);
  assert_int_equal(vs->current->score_level, 0);

  lsm_compaction_t *c = pick(1 << 20);
  assert_non_null(c);
  assert_int_equal(c->level, 0);
  assert_files(c->inputs[0], c->ninputs[0], s.l0, 4);
  assert_files(c->inputs[1], c->ninputs[1], &s.l1a, 1);
  assert_files(c->grandparents, c->ngrandparents, &s.l2c, 1);
  assert_false(lsm_compaction_is_trivial_move(c));

  env_ctx_t ctx = {0};
  lsm_compaction_env_t env = make_env(&ctx);
  err_clear(&err);
  int rc = lsm_compaction_run(c, &env, &err);
  if (rc != ST_OK) fail_msg("run: %s", err.msg);
  assert_int_equal(c->noutputs, 1);
  assert_int_equal(ctx.new_files, 1);
  uint64_t read = 0;
  for (int w = 0; w < 2; w++)
    for (size_t i = 0; i < c->ninputs[w]; i++) read += c->inputs[w][i]->size;
  assert_int_equal(c->bytes_read, read);
  assert_int_equal(c->bytes_written, c->outputs[0].size);

  /* Deletions survive only where L2 (ids 100..199) or L3 (300..310) may hold the key. */
  size_t ngot, nwant;
  entry_t *got = read_outputs(c, &ngot);
  entry_t *want = expected_outputs(s.in, s.nin, s.covered, &nwant);
  assert_entries_equal(got, ngot, want, nwant);
  size_t kept = 0, dropped = 0;
  for (size_t i = 0; i < nwant; i++) kept += want[i].type == LSM_TYPE_DELETION;
  for (size_t i = 0; i < s.nin; i++)
    dropped += s.in[i].type == LSM_TYPE_DELETION && !s.covered[s.in[i].id];
  assert_true(kept > 0 && dropped > 0); /* the scene exercises both */
  free(got);
  free(want);

  /* fill_edit: delete every input, add the output at L1, no compact pointer for L0. */
  lsm_version_edit_t e;
  lsm_version_edit_init(&e);
  assert_int_equal(lsm_compaction_fill_edit(c, &e), ST_OK);
  assert_int_equal(e.ndeleted, 5);
  for (size_t i = 0; i < e.ndeleted; i++) {
    int is_l0 = 0;
    for (int t = 0; t < 4; t++) is_l0 |= e.deleted[i].number == s.l0[t];
    assert_int_equal(e.deleted[i].level, is_l0 ? 0 : 1);
    if (!is_l0) assert_int_equal(e.deleted[i].number, s.l1a);
  }
  assert_int_equal(e.nadded, 1);
  assert_int_equal(e.added[0].level, 1);
  const lsm_output_t *o = &c->outputs[0];
  assert_int_equal(e.added[0].meta->number, o->number);
  assert_int_equal(e.added[0].meta->size, o->size);
  assert_memory_equal(e.added[0].meta->smallest, o->smallest, o->smallest_len);
  assert_memory_equal(e.added[0].meta->largest, o->largest, o->largest_len);
  assert_int_equal(e.npointers, 0);
  apply(&e);
  const lsm_version_t *v = vs->current;
  assert_int_equal(v->nfiles[0], 0);
  assert_int_equal(v->nfiles[1], 2);
  assert_int_equal(v->files[1][0]->number, o->number);
  assert_int_equal(v->files[1][1]->number, s.l1b);
  assert_int_equal(v->nfiles[2], 2);
  assert_int_equal(v->nfiles[3], 1);
  assert_true(v->score < 1);

  /* Destroying the compaction releases the old version: the inputs become obsolete. */
  assert_int_equal(vs->obsolete.n, 0);
  destroy(c);
  assert_int_equal(vs->obsolete.n, 5);
  u64vec_sort(&vs->obsolete);
  uint64_t inputs[5] = {s.l0[0], s.l0[1], s.l0[2], s.l0[3], s.l1a};
  u64vec_t a = {inputs, 5, 5};
  u64vec_sort(&a);
  for (int i = 0; i < 5; i++) assert_int_equal(vs->obsolete.v[i], inputs[i]);
  free(s.in);
  lsm_version_set_destroy(vs);
  vs = NULL;
}

static void test_compaction_bottom_level_drops_every_deletion(void **state) {
  (void)state;
  /* The same merge with nothing below L1: every deletion goes. */
  err_t err;
  assert_int_equal(lsm_version_set_create(dir, env_default(), 1 << 20, &vs, &err), ST_OK);
  scene_t s;
  build_scene(&s, 77, 0);
  lsm_compaction_t *c = pick(1 << 20);
  assert_non_null(c);
  assert_int_equal(c->ngrandparents, 0);
  env_ctx_t ctx = {0};
  lsm_compaction_env_t env = make_env(&ctx);
  assert_int_equal(lsm_compaction_run(c, &env, &err), ST_OK);
  size_t ngot, nwant, deletions = 0;
  entry_t *got = read_outputs(c, &ngot);
  entry_t *want = expected_outputs(s.in, s.nin, s.covered, &nwant);
  assert_entries_equal(got, ngot, want, nwant);
  for (size_t i = 0; i < ngot; i++) assert_int_equal(got[i].type, LSM_TYPE_VALUE);
  for (size_t i = 0; i < s.nin; i++) deletions += s.in[i].type == LSM_TYPE_DELETION;
  assert_true(deletions > 0);
  free(got);
  free(want);
  destroy(c);
  free(s.in);
  lsm_version_set_destroy(vs);
  vs = NULL;
}

static void test_compaction_outputs_split_at_table_bytes(void **state) {
  (void)state;
  /* 4 L0 tables over 3000 ids with 100-byte values (about 400 KB of entries); outputs of
     table_bytes = 16 KiB. The builder measures whole blocks (4 KiB by default), so every
     output but the last is at least table_bytes and less than table_bytes + one block (the
     one that crossed the mark) + 2 KiB for the index, key filter and footer. */
  const uint64_t table_bytes = 16 << 10;
  err_t err;
  assert_int_equal(lsm_version_set_create(dir, env_default(), 1 << 30, &vs, &err), ST_OK);
  value_bytes = 100;
  rng_t r;
  rng_init(&r, 5);
  entry_t *buf = malloc(3000 * sizeof *buf), *in = malloc(4 * 3000 * sizeof *in);
  size_t nin = 0;
  lsm_version_edit_t e;
  lsm_version_edit_init(&e);
  for (int t = 0; t < 4; t++) {
    size_t n = 0;
    for (unsigned id = 0; id < 3000; id++)
      if (rng_below(&r, 2))
        buf[n++] = (entry_t){id, 10000 * (uint64_t)(t + 1) + id, LSM_TYPE_VALUE};
    memcpy(in + nin, buf, n * sizeof *buf);
    nin += n;
    build_table(&e, 0, buf, n);
  }
  apply(&e);
  lsm_compaction_t *c = pick(table_bytes);
  assert_non_null(c);
  assert_int_equal(c->ninputs[0], 4);
  env_ctx_t ctx = {0};
  lsm_compaction_env_t env = make_env(&ctx);
  assert_int_equal(lsm_compaction_run(c, &env, &err), ST_OK);
  assert_true(c->noutputs >= 10);
  uint64_t total = 0;
  for (size_t i = 0; i < c->noutputs; i++) {
    total += c->outputs[i].size;
    if (i + 1 < c->noutputs) assert_true(c->outputs[i].size >= table_bytes);
    assert_true(c->outputs[i].size < table_bytes + 4096 + 2048);
  }
  assert_int_equal(total, c->bytes_written);
  uint8_t covered[3000] = {0};
  size_t ngot, nwant;
  entry_t *got = read_outputs(c, &ngot);
  entry_t *want = expected_outputs(in, nin, covered, &nwant);
  assert_entries_equal(got, ngot, want, nwant);
  free(got);
  free(want);

  /* fill_edit + apply: the outputs become L1, in key order. */
  assert_int_equal(lsm_compaction_fill_edit(c, &e), ST_OK);
  assert_int_equal(e.nadded, c->noutputs);
  apply(&e);
  assert_int_equal(vs->current->nfiles[0], 0);
  assert_int_equal(vs->current->nfiles[1], c->noutputs);
  for (size_t i = 0; i < c->noutputs; i++)
    assert_int_equal(vs->current->files[1][i]->number, c->outputs[i].number);
  destroy(c);
  free(buf);
  free(in);
  value_bytes = 40;
  lsm_version_set_destroy(vs);
  vs = NULL;
}

static void test_compaction_outputs_split_at_grandparent_overlap(void **state) {
  (void)state;
  /* L2 holds 40 files (metas only) of 1 MiB each at ids [10i, 10i+5]; outputs of
     table_bytes = 1 MiB may overlap at most 10 MiB of L2. An output ends once the files it
     passed exceed that, so it overlaps at most 11 passed files plus the one it ends in:
     bound 12 files of L2 per output, and with 40 of them at least 4 outputs. */
  const uint64_t mib = 1 << 20;
  err_t err;
  assert_int_equal(lsm_version_set_create(dir, env_default(), 100 * mib, &vs, &err), ST_OK);
  lsm_version_edit_t e;
  lsm_version_edit_init(&e);
  for (unsigned i = 0; i < 40; i++) add_fake_file(&e, 2, 10 * i, 10 * i + 5, mib);
  entry_t *buf = malloc(400 * sizeof *buf);
  for (int t = 0; t < 4; t++) {
    size_t n = 0;
    for (unsigned id = (unsigned)t; id < 400; id += 4)
      buf[n++] = (entry_t){id, 100 + id, LSM_TYPE_VALUE};
    build_table(&e, 0, buf, n);
  }
  free(buf);
  apply(&e);
  lsm_compaction_t *c = pick(mib);
  assert_non_null(c);
  assert_int_equal(c->ninputs[0], 4);
  assert_int_equal(c->ngrandparents, 40);
  env_ctx_t ctx = {0};
  lsm_compaction_env_t env = make_env(&ctx);
  assert_int_equal(lsm_compaction_run(c, &env, &err), ST_OK);
  assert_true(c->noutputs >= 4);
  for (size_t o = 0; o < c->noutputs; o++) {
    const lsm_output_t *x = &c->outputs[o];
    lsm_file_meta_t **ov;
    size_t nov;
    assert_int_equal(lsm_version_overlapping_files(c->version, 2, x->smallest, x->smallest_len - 8,
                                                   x->largest, x->largest_len - 8, &ov, &nov),
                     ST_OK);
    free(ov);
    assert_true(nov <= 12);
  }
  size_t ngot;
  entry_t *got = read_outputs(c, &ngot);
  assert_int_equal(ngot, 400);
  for (size_t i = 0; i < ngot; i++) assert_int_equal(got[i].id, i);
  free(got);
  destroy(c);
  lsm_version_set_destroy(vs);
  vs = NULL;
}

/* ---- Sorted levels: round robin and trivial moves ------------------------------------ */

static void test_compaction_level1_round_robin_and_trivial_move(void **state) {
  (void)state;
  /* L1 a [0, 100), b [100, 200), c [200, 300) over a budget of 2000 bytes; L2 d [150, 250]
     overlaps b and c; L3 f [0, 50] lies under a. */
  err_t err;
  assert_int_equal(lsm_version_set_create(dir, env_default(), 2000, &vs, &err), ST_OK);
  entry_t buf[100];
  size_t n;
  lsm_version_edit_t e;
  lsm_version_edit_init(&e);
  range_entries(buf, &n, 0, 51, 5, 1);
  uint64_t f = build_table(&e, 3, buf, n);
  range_entries(buf, &n, 150, 251, 10, 2);
  uint64_t d = build_table(&e, 2, buf, n);
  range_entries(buf, &n, 0, 100, 2, 5);
  uint64_t a = build_table(&e, 1, buf, n);
  range_entries(buf, &n, 100, 200, 2, 5);
  uint64_t b = build_table(&e, 1, buf, n);
  range_entries(buf, &n, 200, 300, 2, 5);
  uint64_t cc = build_table(&e, 1, buf, n);
  apply(&e);
  const lsm_version_t *v = vs->current;
  assert_int_equal(v->score_level, 1);
  assert_true(lsm_version_level_bytes(v, 1) > 2000);

  /* No compact pointer: the first file. Nothing under it at L2 and little at L3: a
     trivial move, unless L3's overlap exceeds 10 * table_bytes. */
  lsm_compaction_t *c = pick(1 << 20);
  assert_non_null(c);
  assert_int_equal(c->level, 1);
  assert_files(c->inputs[0], c->ninputs[0], &a, 1);
  assert_int_equal(c->ninputs[1], 0);
  assert_files(c->grandparents, c->ngrandparents, &f, 1);
  assert_true(lsm_compaction_is_trivial_move(c));
  destroy(c);
  c = pick(1); /* overlap allowed: 10 bytes, less than table f */
  assert_non_null(c);
  assert_false(lsm_compaction_is_trivial_move(c));
  destroy(c);

  /* The compact pointer at a's largest key: the next pick is b, with d below. */
  assert_int_equal(lsm_version_edit_set_compact_pointer(&e, 1, v->files[1][0]->largest,
                                                        v->files[1][0]->largest_len),
                   ST_OK);
  apply(&e);
  c = pick(1 << 20);
  assert_non_null(c);
  assert_files(c->inputs[0], c->ninputs[0], &b, 1);
  assert_files(c->inputs[1], c->ninputs[1], &d, 1);
  assert_false(lsm_compaction_is_trivial_move(c));

  /* Run it; fill_edit moves the pointer to b's largest, so the next pick is c. */
  env_ctx_t ctx = {0};
  lsm_compaction_env_t env = make_env(&ctx);
  assert_int_equal(lsm_compaction_run(c, &env, &err), ST_OK);
  assert_int_equal(c->noutputs, 1);
  lsm_version_edit_t fe;
  lsm_version_edit_init(&fe);
  assert_int_equal(lsm_compaction_fill_edit(c, &fe), ST_OK);
  assert_int_equal(fe.ndeleted, 2);
  assert_int_equal(fe.deleted[0].level, 1);
  assert_int_equal(fe.deleted[0].number, b);
  assert_int_equal(fe.deleted[1].level, 2);
  assert_int_equal(fe.deleted[1].number, d);
  assert_int_equal(fe.nadded, 1);
  assert_int_equal(fe.added[0].level, 2);
  assert_int_equal(fe.npointers, 1);
  assert_int_equal(fe.pointers[0].level, 1);
  const lsm_file_meta_t *bm = c->inputs[0][0];
  assert_int_equal(fe.pointers[0].len, bm->largest_len);
  assert_memory_equal(fe.pointers[0].key, bm->largest, bm->largest_len);
  /* The merge of b (seq 5) and d (seq 2): ids of both, each once, the newer where both. */
  size_t ngot;
  entry_t *got = read_outputs(c, &ngot);
  size_t k = 0;
  for (unsigned id = 100; id <= 250; id++) {
    int in_b = id < 200 && id % 2 == 0, in_d = id >= 150 && id % 10 == 0;
    if (!in_b && !in_d) continue;
    assert_true(k < ngot);
    assert_int_equal(got[k].id, id);
    assert_int_equal(got[k].seq, in_b ? 5 : 2);
    k++;
  }
  assert_int_equal(k, ngot);
  free(got);
  apply(&fe);
  destroy(c);
  c = pick(1 << 20);
  assert_non_null(c);
  assert_int_equal(c->level, 1);
  assert_files(c->inputs[0], c->ninputs[0], &cc, 1);
  destroy(c);

  /* A pointer past the last file wraps around to the first. */
  v = vs->current;
  const lsm_file_meta_t *last = v->files[1][v->nfiles[1] - 1];
  assert_int_equal(last->number, cc);
  assert_int_equal(lsm_version_edit_set_compact_pointer(&e, 1, last->largest, last->largest_len),
                   ST_OK);
  apply(&e);
  c = pick(1 << 20);
  assert_non_null(c);
  assert_files(c->inputs[0], c->ninputs[0], &a, 1);
  destroy(c);
  lsm_version_set_destroy(vs);
  vs = NULL;
}

static void test_compaction_level0_disjoint_is_trivial_and_none_below_trigger(void **state) {
  (void)state;
  err_t err;
  assert_int_equal(lsm_version_set_create(dir, env_default(), 1 << 20, &vs, &err), ST_OK);
  entry_t buf[20];
  size_t n;
  lsm_version_edit_t e;
  lsm_version_edit_init(&e);
  uint64_t l0[4];
  /* 3 L0 tables: below the trigger of 4, no compaction. */
  for (unsigned t = 0; t < 3; t++) {
    range_entries(buf, &n, 100 * (3 - t), 100 * (3 - t) + 20, 1, 10 + t);
    l0[t] = build_table(&e, 0, buf, n);
  }
  apply(&e);
  assert_null(pick(1 << 20));
  /* A 4th, disjoint from the others: the oldest alone moves down. */
  range_entries(buf, &n, 0, 20, 1, 20);
  l0[3] = build_table(&e, 0, buf, n);
  apply(&e);
  lsm_compaction_t *c = pick(1 << 20);
  assert_non_null(c);
  assert_int_equal(c->level, 0);
  assert_files(c->inputs[0], c->ninputs[0], &l0[0], 1);
  assert_int_equal(c->ninputs[1], 0);
  assert_true(lsm_compaction_is_trivial_move(c));
  destroy(c);
  lsm_version_set_destroy(vs);
  vs = NULL;
}

/* ---- Failures ------------------------------------------------------------------------ */

/* The .sst files in dir, sorted; returns the count. */
static size_t list_tables(uint64_t *out, size_t cap) {
  DIR *d = opendir(dir);
  assert_non_null(d);
  struct dirent *de;
  size_t k = 0;
  while ((de = readdir(d))) {
    uint64_t num;
    lsm_file_type_t type;
    if (lsm_filename_parse(de->d_name, &num, &type) && type == LSM_FILE_TABLE) {
      assert_true(k < cap);
      out[k++] = num;
    }
  }
  closedir(d);
  u64vec_t a = {out, k, k};
  u64vec_sort(&a);
  return k;
}

static void test_compaction_interrupted_keeps_finished_outputs(void **state) {
  (void)state;
  /* Interrupted in the middle (the 3000th entry, outputs of 8 KiB): ST_E_IO, the outputs
     finished so far are listed and on disk, and the one being built is gone. */
  err_t err;
  assert_int_equal(lsm_version_set_create(dir, env_default(), 1 << 30, &vs, &err), ST_OK);
  entry_t *buf = malloc(2000 * sizeof *buf);
  lsm_version_edit_t e;
  lsm_version_edit_init(&e);
  uint64_t inputs[4];
  for (int t = 0; t < 4; t++) {
    size_t n = 0;
    for (unsigned id = (unsigned)t; id < 8000; id += 4)
      buf[n++] = (entry_t){id, 100 + id, LSM_TYPE_VALUE};
    inputs[t] = build_table(&e, 0, buf, n);
  }
  free(buf);
  apply(&e);
  lsm_compaction_t *c = pick(8 << 10);
  assert_non_null(c);
  env_ctx_t ctx = {.interrupt_at = 3000};
  lsm_compaction_env_t env = make_env(&ctx);
  err_clear(&err);
  assert_int_equal(lsm_compaction_run(c, &env, &err), ST_E_IO);
  assert_true(err.msg[0] != '\0');
  assert_int_equal(ctx.calls, 3000);
  assert_true(c->noutputs >= 2);
  assert_int_equal(ctx.new_files, c->noutputs + 1); /* the unfinished one had a number too */
  uint64_t want[64], got[64];
  for (int t = 0; t < 4; t++) want[t] = inputs[t];
  for (size_t i = 0; i < c->noutputs; i++) want[4 + i] = c->outputs[i].number;
  size_t nwant = 4 + c->noutputs;
  u64vec_t a = {want, nwant, nwant};
  u64vec_sort(&a);
  size_t ngot = list_tables(got, 64);
  assert_int_equal(ngot, nwant);
  for (size_t i = 0; i < ngot; i++) assert_int_equal(got[i], want[i]);
  size_t nentries;
  entry_t *ents = read_outputs(c, &nentries); /* each listed output is a complete table */
  assert_true(nentries > 0 && nentries < 3000);
  free(ents);
  destroy(c);
  lsm_version_set_destroy(vs);
  vs = NULL;
}

static void test_compaction_damaged_input_is_corrupt(void **state) {
  (void)state;
  err_t err;
  assert_int_equal(lsm_version_set_create(dir, env_default(), 1 << 20, &vs, &err), ST_OK);
  scene_t s;
  build_scene(&s, 3, 0);
  /* A byte inside the first data block of the third L0 table. */
  char path[TEST_PATH_MAX];
  assert_int_equal(test_path_take(path, sizeof path, table_file_path(dir, s.l0[2])), 0);
  assert_int_equal(test_file_xor_byte(path, 20, 0x40), 0);
  lsm_compaction_t *c = pick(1 << 20);
  assert_non_null(c);
  env_ctx_t ctx = {0};
  lsm_compaction_env_t env = make_env(&ctx);
  err_clear(&err);
  assert_int_equal(lsm_compaction_run(c, &env, &err), ST_E_CORRUPT);
  char name[32];
  snprintf(name, sizeof name, "%06" PRIu64 ".sst", s.l0[2]);
  if (!strstr(err.msg, name) || !strstr(err.msg, "block at 0"))
    fail_msg("message \"%s\" does not name %s and the block", err.msg, name);
  destroy(c);
  free(s.in);
  lsm_version_set_destroy(vs);
  vs = NULL;
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_compaction_level0_pick_run_fill_edit, dir_setup,
                                      dir_teardown),
      cmocka_unit_test_setup_teardown(test_compaction_bottom_level_drops_every_deletion, dir_setup,
                                      dir_teardown),
      cmocka_unit_test_setup_teardown(test_compaction_outputs_split_at_table_bytes, dir_setup,
                                      dir_teardown),
      cmocka_unit_test_setup_teardown(test_compaction_outputs_split_at_grandparent_overlap,
                                      dir_setup, dir_teardown),
      cmocka_unit_test_setup_teardown(test_compaction_level1_round_robin_and_trivial_move,
                                      dir_setup, dir_teardown),
      cmocka_unit_test_setup_teardown(
          test_compaction_level0_disjoint_is_trivial_and_none_below_trigger, dir_setup,
          dir_teardown),
      cmocka_unit_test_setup_teardown(test_compaction_interrupted_keeps_finished_outputs, dir_setup,
                                      dir_teardown),
      cmocka_unit_test_setup_teardown(test_compaction_damaged_input_is_corrupt, dir_setup,
                                      dir_teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

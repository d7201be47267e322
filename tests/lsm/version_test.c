/* Tests of version edits (lsm/version_edit.h) and the version set (lsm/version_set.h):
   the encoding of every tag and its round trip at boundary values; truncated and garbled
   edits are ST_E_CORRUPT; log_and_apply against an in-memory model of the levels, then
   recovery from the MANIFEST in a fresh set; a torn manifest tail; live and obsolete files;
   key-range queries against a brute-force oracle; the level scores. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lsm/filename.h"
#include "lsm/internal_key.h"
#include "util/env.h"
#include "lsm/log.h"
#include "lsm/version_edit.h"
#include "lsm/version_set.h"
#include "tests/test_util.h"
#include "util/random.h"

static char dir[TEST_PATH_MAX]; /* the current test's temporary directory */
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;

static int dir_setup(void **state) {
  (void)state;
  return test_tmpdir_create(dir, sizeof dir, "version_test");
}

static int dir_teardown(void **state) {
  (void)state;
  return test_rmrf(dir);
}

/* ---- Keys ---------------------------------------------------------------------------- */

typedef struct ikey {
  uint8_t b[32];
  size_t n;
} ikey_t;

/* The user key of id: fixed width, so key order is id order. */
static size_t ukey(char *buf, unsigned id) {
  return (size_t)snprintf(buf, 16, "k%06u", id);
}

static ikey_t ik(unsigned id, uint64_t seq) {
  char u[16];
  size_t n = ukey(u, id);
  ikey_t k;
  k.n = internal_key_encode(k.b, u, n, seq, LSM_TYPE_VALUE);
  return k;
}

/* ---- Comparing edits and versions ---------------------------------------------------- */

static void assert_file_meta_equal(const lsm_file_meta_t *a, const lsm_file_meta_t *b) {
  assert_int_equal(a->number, b->number);
  assert_int_equal(a->size, b->size);
  assert_int_equal(a->smallest_len, b->smallest_len);
  assert_memory_equal(a->smallest, b->smallest, a->smallest_len);
  assert_int_equal(a->largest_len, b->largest_len);
  assert_memory_equal(a->largest, b->largest, a->largest_len);
  assert_int_equal(a->max_seq, b->max_seq);
}

static void assert_edits_equal(const lsm_version_edit_t *a, const lsm_version_edit_t *b) {
  assert_int_equal(a->has_format_version, b->has_format_version);
  if (a->has_format_version) assert_int_equal(a->format_version, b->format_version);
  assert_int_equal(a->has_log_number, b->has_log_number);
  if (a->has_log_number) assert_int_equal(a->log_number, b->log_number);
  assert_int_equal(a->has_next_file, b->has_next_file);
  if (a->has_next_file) assert_int_equal(a->next_file, b->next_file);
  assert_int_equal(a->has_last_sequence, b->has_last_sequence);
  if (a->has_last_sequence) assert_int_equal(a->last_sequence, b->last_sequence);
  assert_int_equal(a->has_log_closed, b->has_log_closed);
  if (a->has_log_closed) {
    assert_int_equal(a->closed_log, b->closed_log);
    assert_int_equal(a->closed_log_size, b->closed_log_size);
  }
  assert_int_equal(a->npointers, b->npointers);
  for (size_t i = 0; i < a->npointers; i++) {
    assert_int_equal(a->pointers[i].level, b->pointers[i].level);
    assert_int_equal(a->pointers[i].len, b->pointers[i].len);
    assert_memory_equal(a->pointers[i].key, b->pointers[i].key, a->pointers[i].len);
  }
  assert_int_equal(a->ndeleted, b->ndeleted);
  for (size_t i = 0; i < a->ndeleted; i++) {
    assert_int_equal(a->deleted[i].level, b->deleted[i].level);
    assert_int_equal(a->deleted[i].number, b->deleted[i].number);
  }
  assert_int_equal(a->nadded, b->nadded);
  for (size_t i = 0; i < a->nadded; i++) {
    assert_int_equal(a->added[i].level, b->added[i].level);
    assert_file_meta_equal(a->added[i].meta, b->added[i].meta);
  }
}

/* Encodes e, decodes the bytes into a fresh edit, checks both are equal and that the
   decoded edit encodes to the same bytes. */
static void check_round_trip(const lsm_version_edit_t *e) {
  uint8_t *buf, *buf2;
  size_t n, n2;
  assert_int_equal(lsm_version_edit_encode(e, &buf, &n), ST_OK);
  lsm_version_edit_t d;
  lsm_version_edit_init(&d);
  err_t err;
  err_clear(&err);
  assert_int_equal(lsm_version_edit_decode(&d, buf, n, "round trip", &err), ST_OK);
  assert_edits_equal(e, &d);
  assert_int_equal(lsm_version_edit_encode(&d, &buf2, &n2), ST_OK);
  assert_int_equal(n2, n);
  assert_memory_equal(buf2, buf, n);
  free(buf);
  free(buf2);
  lsm_version_edit_release(&d);
}

/* ---- Version edits ------------------------------------------------------------------- */

/* Values at the edges of the varint widths (1, 2, 5, 10 bytes) and of 32 and 64 bits. */
static const uint64_t boundaries[] = {0,
                                      1,
                                      127,
                                      128,
                                      16383,
                                      16384,
                                      UINT32_MAX,
                                      (uint64_t)UINT32_MAX + 1,
                                      ((uint64_t)1 << 63) - 1,
                                      (uint64_t)1 << 63,
                                      UINT64_MAX};

static void test_version_edit_every_tag_round_trips_at_boundaries(void **state) {
  (void)state;
  uint8_t key[300 + 8];
  for (size_t i = 0; i < sizeof key; i++) key[i] = (uint8_t)(i * 7 + 1);
  for (size_t b = 0; b < sizeof boundaries / sizeof boundaries[0]; b++) {
    uint64_t v = boundaries[b];
    lsm_version_edit_t e;
    lsm_version_edit_init(&e);
    e.has_format_version = 1; /* tag 7: set by the set's snapshot edit, no setter */
    e.format_version = v > UINT32_MAX ? UINT32_MAX : (uint32_t)v;
    lsm_version_edit_set_log_number(&e, v);     /* tag 1 */
    lsm_version_edit_set_next_file(&e, ~v);     /* tag 2 */
    lsm_version_edit_set_last_sequence(&e, v);  /* tag 3 */
    lsm_version_edit_set_log_closed(&e, v, ~v); /* tag 8 */
    /* tag 4: the shortest key (an empty user key) and one whose length takes 2 bytes */
    assert_int_equal(lsm_version_edit_set_compact_pointer(&e, 0, key, 8), ST_OK);
    assert_int_equal(lsm_version_edit_set_compact_pointer(&e, LSM_NUM_LEVELS - 1, key, sizeof key),
                     ST_OK);
    /* tag 5 and tag 6 at every level, tag 9 after every other new file (the others have no
       recorded bound); v = 2^64-1 is no bound, LSM_SEQ_UNKNOWN, so tag 9 is not written */
    for (int l = 0; l < LSM_NUM_LEVELS; l++) {
      assert_int_equal(lsm_version_edit_delete_file(&e, l, v + (uint64_t)l), ST_OK);
      assert_int_equal(
          lsm_version_edit_add_table(&e, l, v - (uint64_t)l, v, key, 8 + (size_t)l, key,
                                     sizeof key - (size_t)l, l % 2 ? v : LSM_SEQ_UNKNOWN),
          ST_OK);
    }
    check_round_trip(&e);
    lsm_version_edit_release(&e);
  }
  /* An empty edit encodes to nothing and decodes (also from a NULL pointer) to nothing. */
  lsm_version_edit_t e, d;
  lsm_version_edit_init(&e);
  uint8_t *buf;
  size_t n;
  assert_int_equal(lsm_version_edit_encode(&e, &buf, &n), ST_OK);
  assert_int_equal(n, 0);
  free(buf);
  lsm_version_edit_init(&d);
  assert_int_equal(lsm_version_edit_decode(&d, NULL, 0, "empty", NULL), ST_OK);
  assert_edits_equal(&e, &d);
  lsm_version_edit_release(&d);
}

/* A random edit: each field present with probability 1/2, values of random bit widths,
   0..5 entries per list, keys of 8..40 bytes. */
static void random_edit(rng_t *r, lsm_version_edit_t *e) {
#define RANDOM_VALUE() (rng_next(r) >> rng_below(r, 64))
  uint8_t key[40];
  if (rng_below(r, 2)) {
    e->has_format_version = 1;
    e->format_version = (uint32_t)RANDOM_VALUE();
  }
  if (rng_below(r, 2)) lsm_version_edit_set_log_number(e, RANDOM_VALUE());
  if (rng_below(r, 2)) lsm_version_edit_set_next_file(e, RANDOM_VALUE());
  if (rng_below(r, 2)) lsm_version_edit_set_last_sequence(e, RANDOM_VALUE());
  if (rng_below(r, 2)) lsm_version_edit_set_log_closed(e, RANDOM_VALUE(), RANDOM_VALUE());
  size_t np = rng_below(r, 6), nd = rng_below(r, 6), na = rng_below(r, 6);
  for (size_t i = 0; i < np + na; i++) {
    size_t len = 9 + rng_below(r, sizeof key - 9 + 1); /* the largest key drops a byte */
    for (size_t j = 0; j < len; j++) key[j] = (uint8_t)rng_next(r);
    int level = (int)rng_below(r, LSM_NUM_LEVELS);
    if (i < np)
      assert_int_equal(lsm_version_edit_set_compact_pointer(e, level, key, len), ST_OK);
    else
      assert_int_equal(lsm_version_edit_add_file(e, level, RANDOM_VALUE(), RANDOM_VALUE(), key, len,
                                                 key + 1, len - 1),
                       ST_OK);
  }
  for (size_t i = 0; i < nd; i++)
    assert_int_equal(
        lsm_version_edit_delete_file(e, (int)rng_below(r, LSM_NUM_LEVELS), RANDOM_VALUE()), ST_OK);
#undef RANDOM_VALUE
}

static void test_version_edit_random_round_trip(void **state) {
  (void)state;
  rng_t r;
  rng_init(&r, 42);
  for (int i = 0; i < 2000; i++) {
    lsm_version_edit_t e;
    lsm_version_edit_init(&e);
    random_edit(&r, &e);
    check_round_trip(&e);
    lsm_version_edit_release(&e);
  }
}

/* Decodes exactly [p, p+n) from a heap copy of that size (so that ASan sees any read past
   the end) and returns the status; err gets the message. */
static int decode_copy(const uint8_t *p, size_t n, const char *where, err_t *err) {
  uint8_t *c = malloc(n ? n : 1);
  assert_non_null(c);
  if (n) memcpy(c, p, n);
  lsm_version_edit_t e;
  lsm_version_edit_init(&e);
  err_clear(err);
  int rc = lsm_version_edit_decode(&e, c, n, where, err);
  lsm_version_edit_release(&e);
  free(c);
  return rc;
}

/* Appends the encoding of e to buf (at *n) and records where it ends. */
static void append_encoding(lsm_version_edit_t *e, uint8_t *buf, size_t cap, size_t *n,
                            size_t *ends, size_t *nends) {
  uint8_t *p;
  size_t len;
  assert_int_equal(lsm_version_edit_encode(e, &p, &len), ST_OK);
  assert_true(*n + len <= cap);
  memcpy(buf + *n, p, len);
  *n += len;
  ends[(*nends)++] = *n;
  free(p);
  lsm_version_edit_release(e);
  lsm_version_edit_init(e);
}

static void test_version_edit_truncation_is_corrupt(void **state) {
  (void)state;
  /* One field of every tag, each encoded alone: the concatenation is a valid edit whose
     field boundaries are known. A cut at a boundary is a shorter valid edit; a cut
     anywhere else must be ST_E_CORRUPT. */
  uint8_t buf[2048], key[200];
  for (size_t i = 0; i < sizeof key; i++) key[i] = (uint8_t)(0xa5 ^ i);
  size_t n = 0, ends[16], nends = 0;
  lsm_version_edit_t e;
  lsm_version_edit_init(&e);
  e.has_format_version = 1;
  e.format_version = UINT32_MAX;
  append_encoding(&e, buf, sizeof buf, &n, ends, &nends);
  lsm_version_edit_set_log_number(&e, UINT64_MAX);
  append_encoding(&e, buf, sizeof buf, &n, ends, &nends);
  lsm_version_edit_set_next_file(&e, 1ull << 40);
  append_encoding(&e, buf, sizeof buf, &n, ends, &nends);
  lsm_version_edit_set_last_sequence(&e, LSM_MAX_SEQ);
  append_encoding(&e, buf, sizeof buf, &n, ends, &nends);
  assert_int_equal(lsm_version_edit_set_compact_pointer(&e, 3, key, sizeof key), ST_OK);
  append_encoding(&e, buf, sizeof buf, &n, ends, &nends);
  assert_int_equal(lsm_version_edit_delete_file(&e, 6, 1ull << 35), ST_OK);
  append_encoding(&e, buf, sizeof buf, &n, ends, &nends);
  assert_int_equal(
      lsm_version_edit_add_file(&e, 2, 300, 1ull << 33, key, 150, key + 10, sizeof key - 10),
      ST_OK);
  append_encoding(&e, buf, sizeof buf, &n, ends, &nends);
  lsm_version_edit_set_log_closed(&e, 1ull << 50, 70000);
  append_encoding(&e, buf, sizeof buf, &n, ends, &nends);
  assert_int_equal(nends, 8);

  size_t boundary = 0, corrupt = 0;
  for (size_t cut = 0; cut < n; cut++) {
    int at_boundary = cut == 0;
    for (size_t i = 0; i < nends; i++) at_boundary |= ends[i] == cut;
    err_t err;
    int rc = decode_copy(buf, cut, "MANIFEST-000007: record at 99", &err);
    if (at_boundary) {
      assert_int_equal(rc, ST_OK);
      boundary++;
    } else {
      assert_int_equal(rc, ST_E_CORRUPT);
      assert_int_equal(err.code, ST_E_CORRUPT);
      assert_non_null(strstr(err.msg, "MANIFEST-000007: record at 99"));
      assert_non_null(strstr(err.msg, "version edit byte"));
      corrupt++;
    }
  }
  assert_int_equal(boundary, nends); /* 0 and every end but the last (= n) */
  assert_int_equal(corrupt, n - nends);
  err_t err;
  assert_int_equal(decode_copy(buf, n, "whole", &err), ST_OK);
}

typedef struct garbled {
  const char *what;
  uint8_t bytes[32];
  size_t n;
  size_t field; /* offset of the bad field, as the message must say */
} garbled_t;

static void test_version_edit_garbled_is_corrupt(void **state) {
  (void)state;
  const garbled_t cases[] = {
      {"tag 0", {0}, 1, 0},
      {"tag 10 (one past FILE_MAX_SEQ)", {10, 1}, 2, 0},
      {"file max sequence without a new file", {9, 1}, 2, 0},
      {"file max sequence twice",
       {6, 1, 2, 3, 8, 1, 2, 3, 4, 5, 6, 7, 8, 8, 1, 2, 3, 4, 5, 6, 7, 8, 9, 5, 9, 6},
       26,
       24},
      {"unknown tag after a good field", {1, 5, 100, 1}, 4, 2},
      {"tag of 2^35", {0x80, 0x80, 0x80, 0x80, 0x80, 0x01}, 6, 0},
      {"varint of 11 bytes",
       {1, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01},
       12,
       0},
      {"format version of 2^32", {7, 0x80, 0x80, 0x80, 0x80, 0x10}, 6, 0},
      {"deleted file at level 7", {3, 1, 5, LSM_NUM_LEVELS, 9}, 5, 2},
      {"new file at level 200", {6, 0xc8, 0x01, 1, 1, 8, 1, 2, 3, 4, 5, 6, 7, 8}, 14, 0},
      {"compact pointer key of 7 bytes", {4, 1, 7, 1, 2, 3, 4, 5, 6, 7}, 10, 0},
      {"compact pointer length past the end", {4, 1, 0xff, 0xff, 0xff, 0xff, 0x0f, 1, 2}, 9, 0},
      {"new file smallest of 7 bytes",
       {6, 1, 2, 3, 7, 1, 2, 3, 4, 5, 6, 7, 8, 1, 2, 3, 4, 5, 6, 7, 8, 9},
       22,
       0},
      {"log closed without its size", {2, 4, 8, 0x80, 0x01}, 5, 2},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    const garbled_t *g = &cases[i];
    err_t err;
    int rc = decode_copy(g->bytes, g->n, "edit-under-test", &err);
    if (rc != ST_E_CORRUPT) fail_msg("%s: status %d, expected ST_E_CORRUPT", g->what, rc);
    char want[64];
    snprintf(want, sizeof want, "edit-under-test: version edit byte %zu: bad", g->field);
    if (!strstr(err.msg, want)) fail_msg("%s: message \"%s\" lacks \"%s\"", g->what, err.msg, want);
  }

  /* Random bytes (seed 7; 20000 inputs of 0..63 bytes, biased to small values so that
     tags and levels are often valid) and every single-bit flip of a valid encoding:
     ST_OK or ST_E_CORRUPT, never anything else (and, under ASan, no bad read). */
  rng_t r;
  rng_init(&r, 7);
  uint8_t in[64];
  size_t ok = 0;
  for (int t = 0; t < 20000; t++) {
    size_t n = rng_below(&r, sizeof in);
    for (size_t j = 0; j < n; j++)
      in[j] = (uint8_t)(rng_below(&r, 4) ? rng_below(&r, 12) : rng_next(&r));
    err_t err;
    int rc = decode_copy(in, n, "random", &err);
    assert_true(rc == ST_OK || rc == ST_E_CORRUPT);
    ok += rc == ST_OK;
  }
  assert_true(ok > 0 && ok < 20000); /* both outcomes are exercised */
  lsm_version_edit_t e;
  lsm_version_edit_init(&e);
  random_edit(&r, &e);
  lsm_version_edit_set_log_closed(&e, 12345, 678);
  assert_int_equal(lsm_version_edit_add_file(&e, 1, 77, 4096, "abcdefghij", 10, "abcdefghik", 10),
                   ST_OK);
  uint8_t *buf;
  size_t n;
  assert_int_equal(lsm_version_edit_encode(&e, &buf, &n), ST_OK);
  lsm_version_edit_release(&e);
  for (size_t off = 0; off < n; off++)
    for (int bit = 0; bit < 8; bit++) {
      buf[off] ^= (uint8_t)(1u << bit);
      err_t err;
      int rc = decode_copy(buf, n, "flipped", &err);
      assert_true(rc == ST_OK || rc == ST_E_CORRUPT);
      buf[off] ^= (uint8_t)(1u << bit);
    }
  free(buf);
}

/* ---- A model of the levels ----------------------------------------------------------- */

typedef struct mfile {
  int level;
  uint64_t number, size;
  ikey_t smallest, largest;
} mfile_t;

typedef struct model {
  mfile_t f[512];
  size_t n;
} model_t;

static int cmp_mfile(const void *a, const void *b) {
  const mfile_t *x = a, *y = b;
  if (x->level != y->level) return x->level - y->level;
  if (x->level > 0) {
    int c = internal_key_compare(x->smallest.b, x->smallest.n, y->smallest.b, y->smallest.n);
    if (c) return c;
  }
  return x->number < y->number ? -1 : x->number > y->number;
}

/* Checks v lists exactly the model's files, L0 by file number, other levels by smallest
   key. */
static void assert_version_matches(const lsm_version_t *v, const model_t *m) {
  static mfile_t sorted[512];
  memcpy(sorted, m->f, m->n * sizeof *sorted);
  qsort(sorted, m->n, sizeof *sorted, cmp_mfile);
  size_t k = 0;
  for (int l = 0; l < LSM_NUM_LEVELS; l++) {
    for (size_t i = 0; i < v->nfiles[l]; i++, k++) {
      assert_true(k < m->n);
      const mfile_t *x = &sorted[k];
      const lsm_file_meta_t *f = v->files[l][i];
      assert_int_equal(x->level, l);
      assert_int_equal(f->number, x->number);
      assert_int_equal(f->size, x->size);
      assert_int_equal(f->smallest_len, x->smallest.n);
      assert_memory_equal(f->smallest, x->smallest.b, x->smallest.n);
      assert_int_equal(f->largest_len, x->largest.n);
      assert_memory_equal(f->largest, x->largest.b, x->largest.n);
    }
  }
  assert_int_equal(k, m->n);
  assert_int_equal(lsm_version_file_count(v), m->n);
}

static void edit_add(lsm_version_edit_t *e, model_t *m, int level, uint64_t number, uint64_t size,
                     ikey_t lo, ikey_t hi) {
  assert_int_equal(lsm_version_edit_add_file(e, level, number, size, lo.b, lo.n, hi.b, hi.n),
                   ST_OK);
  if (m) m->f[m->n++] = (mfile_t){level, number, size, lo, hi};
}

static void edit_delete(lsm_version_edit_t *e, model_t *m, size_t i) {
  assert_int_equal(lsm_version_edit_delete_file(e, m->f[i].level, m->f[i].number), ST_OK);
  m->f[i] = m->f[--m->n];
}

static int apply(lsm_version_set_t *vs, lsm_version_edit_t *e, err_t *err) {
  pthread_mutex_lock(&mu);
  int rc = lsm_version_set_log_and_apply(vs, e, &mu, err);
  pthread_mutex_unlock(&mu);
  lsm_version_edit_release(e);
  lsm_version_edit_init(e);
  return rc;
}

static lsm_version_set_t *new_set(uint64_t level1_bytes) {
  lsm_version_set_t *vs = NULL;
  err_t err;
  assert_int_equal(lsm_version_set_create(dir, env_default(), level1_bytes, &vs, &err), ST_OK);
  return vs;
}

/* A fresh set recovered from dir's CURRENT and MANIFEST. */
static lsm_version_set_t *recover_set(uint64_t level1_bytes) {
  lsm_version_set_t *vs = new_set(level1_bytes);
  err_t err;
  err_clear(&err);
  int rc = lsm_version_set_recover(vs, &err);
  if (rc != ST_OK) fail_msg("recover: %d %s", rc, err.msg);
  return vs;
}

typedef struct scalars {
  uint64_t log_number, next_file, last_sequence;
  uint8_t pointer[LSM_NUM_LEVELS][32];
  size_t pointer_len[LSM_NUM_LEVELS]; /* 0: none */
} scalars_t;

static void assert_scalars(const lsm_version_set_t *vs, const scalars_t *s) {
  assert_int_equal(vs->log_number, s->log_number);
  assert_int_equal(vs->next_file, s->next_file);
  assert_int_equal(vs->last_sequence, s->last_sequence);
  for (int l = 0; l < LSM_NUM_LEVELS; l++) {
    if (!s->pointer_len[l]) {
      assert_null(vs->compact_pointer[l]);
      continue;
    }
    assert_non_null(vs->compact_pointer[l]);
    assert_int_equal(vs->compact_pointer_len[l], s->pointer_len[l]);
    assert_memory_equal(vs->compact_pointer[l], s->pointer[l], s->pointer_len[l]);
  }
}

/* ---- The version set ----------------------------------------------------------------- */

static void test_version_set_apply_and_recover_random(void **state) {
  (void)state;
  /* 60 edits from seed 1234, each adding 0..4 files at random levels and deleting 0..3
     live ones, sometimes moving the log number and a compact pointer. Files of levels >= 1
     sit in distinct random slots of the key space (disjoint ranges, random order of
     creation); L0 files take any range. After every edit the current version must equal
     the model; a fresh set recovered from the MANIFEST must too, with the same scalars. */
  static model_t m;
  m.n = 0;
  scalars_t s;
  memset(&s, 0, sizeof s);
  static uint8_t slot_used[20000];
  memset(slot_used, 0, sizeof slot_used);
  rng_t r;
  rng_init(&r, 1234);
  lsm_version_set_t *vs = new_set(1 << 20);
  lsm_version_edit_t e;
  lsm_version_edit_init(&e);
  err_t err;
  for (int step = 0; step < 60; step++) {
    size_t nadd = rng_below(&r, 5), ndel = m.n ? rng_below(&r, 4) : 0;
    for (size_t i = 0; i < ndel && m.n; i++) edit_delete(&e, &m, rng_below(&r, m.n));
    for (size_t i = 0; i < nadd && m.n < 500; i++) {
      int level = (int)rng_below(&r, LSM_NUM_LEVELS);
      unsigned lo, hi;
      if (level == 0) {
        lo = (unsigned)rng_below(&r, 10 * 20000);
        hi = lo + (unsigned)rng_below(&r, 500);
      } else {
        unsigned slot;
        do slot = (unsigned)rng_below(&r, 20000);
        while (slot_used[slot]);
        slot_used[slot] = 1;
        lo = 10 * slot;
        hi = lo + (unsigned)rng_below(&r, 10);
      }
      uint64_t seq = rng_below(&r, LSM_MAX_SEQ);
      uint64_t number = lsm_version_set_new_file_number(vs);
      edit_add(&e, &m, level, number, 1 + rng_below(&r, 1 << 20), ik(lo, seq + 1), ik(hi, seq));
    }
    if (rng_below(&r, 3) == 0) {
      s.log_number = rng_below(&r, 1000000);
      lsm_version_edit_set_log_number(&e, s.log_number);
    }
    if (rng_below(&r, 3) == 0) {
      int level = 1 + (int)rng_below(&r, LSM_NUM_LEVELS - 2);
      ikey_t k = ik((unsigned)rng_below(&r, 200000), rng_below(&r, 1000));
      assert_int_equal(lsm_version_edit_set_compact_pointer(&e, level, k.b, k.n), ST_OK);
      memcpy(s.pointer[level], k.b, k.n);
      s.pointer_len[level] = k.n;
    }
    vs->last_sequence += rng_below(&r, 1000); /* as the db's writes do */
    assert_int_equal(apply(vs, &e, &err), ST_OK);
    assert_version_matches(vs->current, &m);
  }
  s.next_file = vs->next_file;
  s.last_sequence = vs->last_sequence;
  assert_scalars(vs, &s);
  assert_true(m.n > 20); /* the sequence left something to compare */
  lsm_version_set_destroy(vs);

  vs = recover_set(1 << 20);
  assert_version_matches(vs->current, &m);
  assert_scalars(vs, &s);
  assert_int_equal(vs->manifest_dropped, 0);
  assert_false(vs->has_closed_log);

  /* Reopen: a snapshot into a new manifest named by CURRENT; then one more edit. */
  uint64_t old_manifest = vs->manifest_number;
  assert_int_equal(lsm_version_set_write_snapshot(vs, &err), ST_OK);
  assert_true(vs->manifest_number > old_manifest);
  char path[TEST_PATH_MAX], want[64];
  assert_int_equal(test_path_take(path, sizeof path, lsm_filename_current(dir)), 0);
  void *cur;
  size_t cur_len;
  assert_int_equal(env_read_file(env_default(), path, &cur, &cur_len, &err), ST_OK);
  snprintf(want, sizeof want, "MANIFEST-%06" PRIu64 "\n", vs->manifest_number);
  assert_int_equal(cur_len, strlen(want));
  assert_memory_equal(cur, want, cur_len);
  free(cur);
  edit_delete(&e, &m, 0);
  edit_add(&e, &m, 0, lsm_version_set_new_file_number(vs), 5, ik(1, 9), ik(2, 9));
  assert_int_equal(apply(vs, &e, &err), ST_OK);
  s.next_file = vs->next_file;
  lsm_version_set_destroy(vs);
  vs = recover_set(1 << 20);
  assert_version_matches(vs->current, &m);
  assert_scalars(vs, &s);
  lsm_version_set_destroy(vs);
}

static void test_version_set_log_closed_and_torn_tail(void **state) {
  (void)state;
  model_t *m = calloc(1, sizeof *m);
  lsm_version_set_t *vs = new_set(1 << 20);
  lsm_version_edit_t e;
  lsm_version_edit_init(&e);
  err_t err;
  edit_add(&e, m, 1, lsm_version_set_new_file_number(vs), 100, ik(10, 5), ik(20, 5));
  edit_add(&e, m, 2, lsm_version_set_new_file_number(vs), 200, ik(30, 5), ik(40, 5));
  assert_int_equal(apply(vs, &e, &err), ST_OK);
  model_t before = *m;
  edit_add(&e, m, 0, lsm_version_set_new_file_number(vs), 300, ik(0, 7), ik(99, 7));
  lsm_version_edit_set_log_closed(&e, 77, 123456);
  assert_int_equal(apply(vs, &e, &err), ST_OK);
  char manifest[TEST_PATH_MAX];
  assert_int_equal(
      test_path_take(manifest, sizeof manifest, lsm_filename_manifest(dir, vs->manifest_number)),
      0);
  lsm_version_set_destroy(vs);

  /* The last record says the database closed cleanly. */
  vs = recover_set(1 << 20);
  assert_true(vs->has_closed_log);
  assert_int_equal(vs->closed_log, 77);
  assert_int_equal(vs->closed_log_size, 123456);
  assert_version_matches(vs->current, m);
  lsm_version_set_destroy(vs);

  /* A torn record after the close (the first 10 bytes of a record: a header whose length
     runs past the end): the close is no longer the last record, so it does not count. */
  struct stat st;
  assert_int_equal(stat(manifest, &st), 0);
  uint8_t head[10];
  FILE *f = fopen(manifest, "r+b");
  assert_non_null(f);
  assert_int_equal(fread(head, 1, sizeof head, f), sizeof head);
  assert_int_equal(fseek(f, 0, SEEK_END), 0);
  assert_int_equal(fwrite(head, 1, sizeof head, f), sizeof head);
  assert_int_equal(fclose(f), 0);
  vs = recover_set(1 << 20);
  assert_int_equal(vs->manifest_dropped, sizeof head);
  assert_int_equal(vs->manifest_valid_end, (uint64_t)st.st_size);
  assert_false(vs->has_closed_log);
  assert_version_matches(vs->current, m);
  lsm_version_set_destroy(vs);

  /* The last record cut short: left out, counted in manifest_dropped, and the close it
     carried is forgotten. */
  assert_int_equal(truncate(manifest, st.st_size - 3), 0);
  vs = recover_set(1 << 20);
  assert_true(vs->manifest_dropped > 0);
  assert_int_equal(vs->manifest_valid_end + vs->manifest_dropped, (uint64_t)st.st_size - 3);
  assert_false(vs->has_closed_log);
  assert_version_matches(vs->current, &before);
  lsm_version_set_destroy(vs);
  free(m);
}

static void test_version_set_bad_edit_leaves_current(void **state) {
  (void)state;
  /* An edit that would make two level-1 files overlap is refused (ST_E_CORRUPT) and
     neither the current version nor the manifest changes. */
  model_t *m = calloc(1, sizeof *m);
  lsm_version_set_t *vs = new_set(1 << 20);
  lsm_version_edit_t e;
  lsm_version_edit_init(&e);
  err_t err;
  edit_add(&e, m, 1, lsm_version_set_new_file_number(vs), 100, ik(10, 5), ik(20, 5));
  assert_int_equal(apply(vs, &e, &err), ST_OK);
  lsm_version_t *cur = vs->current;
  edit_add(&e, NULL, 1, lsm_version_set_new_file_number(vs), 100, ik(20, 9), ik(30, 9));
  err_clear(&err);
  assert_int_equal(apply(vs, &e, &err), ST_E_CORRUPT);
  assert_non_null(strstr(err.msg, "overlap"));
  assert_ptr_equal(vs->current, cur);
  assert_version_matches(vs->current, m);
  /* Touching ranges are fine on either side. */
  edit_add(&e, m, 1, lsm_version_set_new_file_number(vs), 100, ik(21, 9), ik(30, 9));
  edit_add(&e, m, 1, lsm_version_set_new_file_number(vs), 100, ik(1, 9), ik(9, 9));
  assert_int_equal(apply(vs, &e, &err), ST_OK);
  assert_version_matches(vs->current, m);
  lsm_version_set_destroy(vs);
  vs = recover_set(1 << 20);
  assert_version_matches(vs->current, m);
  lsm_version_set_destroy(vs);
  free(m);
}

/* Writes dir/MANIFEST-000009 holding the given edits and points CURRENT at it. */
static void write_manifest(lsm_version_edit_t *edits, size_t n) {
  char path[TEST_PATH_MAX];
  err_t err;
  assert_int_equal(test_path_take(path, sizeof path, lsm_filename_manifest(dir, 9)), 0);
  log_writer_t *w;
  assert_int_equal(log_writer_open(env_default(), path, &w, &err), ST_OK);
  for (size_t i = 0; i < n; i++) {
    uint8_t *rec;
    size_t len;
    assert_int_equal(lsm_version_edit_encode(&edits[i], &rec, &len), ST_OK);
    assert_int_equal(log_writer_add(w, rec, len, 0, &err), ST_OK);
    free(rec);
    lsm_version_edit_release(&edits[i]);
  }
  assert_int_equal(log_writer_close(w, &err), ST_OK);
  assert_int_equal(test_path_take(path, sizeof path, lsm_filename_current(dir)), 0);
  assert_int_equal(env_write_file(env_default(), path, "MANIFEST-000009\n", 16, &err), ST_OK);
}

static int recover_status(err_t *err) {
  lsm_version_set_t *vs = new_set(1 << 20);
  err_clear(err);
  int rc = lsm_version_set_recover(vs, err);
  lsm_version_set_destroy(vs);
  return rc;
}

/* A complete first edit: format version, log number, next file, last sequence. */
static void full_edit(lsm_version_edit_t *e, uint32_t format_version) {
  lsm_version_edit_init(e);
  e->has_format_version = 1;
  e->format_version = format_version;
  lsm_version_edit_set_log_number(e, 3);
  lsm_version_edit_set_next_file(e, 20);
  lsm_version_edit_set_last_sequence(e, 100);
}

static void test_version_set_recover_refuses_bad_manifests(void **state) {
  (void)state;
  err_t err;
  char path[TEST_PATH_MAX];
  assert_int_equal(test_path_take(path, sizeof path, lsm_filename_current(dir)), 0);
  lsm_version_edit_t e[2];

  /* A good manifest first, so each case below differs from it by one thing. */
  full_edit(&e[0], LSM_FORMAT_VERSION);
  write_manifest(e, 1);
  assert_int_equal(recover_status(&err), ST_OK);

  /* CURRENT without its newline, or naming something that is not a manifest. */
  assert_int_equal(env_write_file(env_default(), path, "MANIFEST-000009", 15, &err), ST_OK);
  assert_int_equal(recover_status(&err), ST_E_CORRUPT);
  assert_non_null(strstr(err.msg, "CURRENT"));
  assert_int_equal(env_write_file(env_default(), path, "000009.log\n", 11, &err), ST_OK);
  assert_int_equal(recover_status(&err), ST_E_CORRUPT);
  /* CURRENT naming a manifest that does not exist. */
  assert_int_equal(env_write_file(env_default(), path, "MANIFEST-000010\n", 16, &err), ST_OK);
  assert_int_equal(recover_status(&err), ST_E_CORRUPT);
  assert_non_null(strstr(err.msg, "MANIFEST-000010"));

  /* A first edit without a format version. */
  full_edit(&e[0], LSM_FORMAT_VERSION);
  e[0].has_format_version = 0;
  write_manifest(e, 1);
  assert_int_equal(recover_status(&err), ST_E_CORRUPT);
  assert_non_null(strstr(err.msg, "MANIFEST-000009"));

  /* Another format version. */
  full_edit(&e[0], LSM_FORMAT_VERSION + 1);
  write_manifest(e, 1);
  assert_int_equal(recover_status(&err), ST_E_UNSUPPORTED);

  /* No last sequence anywhere. */
  full_edit(&e[0], LSM_FORMAT_VERSION);
  e[0].has_last_sequence = 0;
  write_manifest(e, 1);
  assert_int_equal(recover_status(&err), ST_E_CORRUPT);
  assert_non_null(strstr(err.msg, "last sequence"));

  /* A second edit that makes level 1 overlap. */
  full_edit(&e[0], LSM_FORMAT_VERSION);
  edit_add(&e[0], NULL, 1, 11, 10, ik(1, 1), ik(5, 1));
  lsm_version_edit_init(&e[1]);
  edit_add(&e[1], NULL, 1, 12, 10, ik(5, 2), ik(8, 2));
  write_manifest(e, 2);
  assert_int_equal(recover_status(&err), ST_E_CORRUPT);
  assert_non_null(strstr(err.msg, "MANIFEST-000009: record at offset"));

  /* A record (with a good checksum) whose edit does not decode, in the middle. */
  char mpath[TEST_PATH_MAX];
  assert_int_equal(test_path_take(mpath, sizeof mpath, lsm_filename_manifest(dir, 9)), 0);
  log_writer_t *w;
  assert_int_equal(log_writer_open(env_default(), mpath, &w, &err), ST_OK);
  full_edit(&e[0], LSM_FORMAT_VERSION);
  uint8_t *rec;
  size_t len;
  assert_int_equal(lsm_version_edit_encode(&e[0], &rec, &len), ST_OK);
  lsm_version_edit_release(&e[0]);
  assert_int_equal(log_writer_add(w, rec, len, 0, &err), ST_OK);
  const uint8_t bad[] = {1, 5, 42};
  assert_int_equal(log_writer_add(w, bad, sizeof bad, 0, &err), ST_OK);
  assert_int_equal(log_writer_add(w, rec, len, 0, &err), ST_OK);
  free(rec);
  assert_int_equal(log_writer_close(w, &err), ST_OK);
  assert_int_equal(env_write_file(env_default(), path, "MANIFEST-000009\n", 16, &err), ST_OK);
  assert_int_equal(recover_status(&err), ST_E_CORRUPT);
  assert_non_null(strstr(err.msg, "MANIFEST-000009: record at offset"));
  assert_non_null(strstr(err.msg, "unknown tag"));
}

static void test_version_set_live_and_obsolete_files(void **state) {
  (void)state;
  lsm_version_set_t *vs = new_set(1 << 20);
  lsm_version_edit_t e;
  lsm_version_edit_init(&e);
  err_t err;
  u64vec_t live;
  u64vec_init(&live);
  assert_int_equal(lsm_version_set_live_files(vs, &live), ST_OK);
  assert_int_equal(live.n, 0);

  edit_add(&e, NULL, 0, 40, 1, ik(1, 1), ik(9, 1));
  edit_add(&e, NULL, 1, 31, 1, ik(1, 1), ik(9, 1));
  edit_add(&e, NULL, 2, 52, 1, ik(1, 1), ik(9, 1));
  assert_int_equal(apply(vs, &e, &err), ST_OK);
  lsm_version_t *pinned = vs->current;
  lsm_version_ref(pinned);
  assert_int_equal(lsm_version_edit_delete_file(&e, 0, 40), ST_OK);
  assert_int_equal(lsm_version_edit_delete_file(&e, 1, 31), ST_OK);
  edit_add(&e, NULL, 1, 63, 1, ik(1, 2), ik(9, 2));
  assert_int_equal(apply(vs, &e, &err), ST_OK);

  /* The pinned version keeps 40 and 31 live. */
  assert_int_equal(lsm_version_set_live_files(vs, &live), ST_OK);
  const uint64_t both[] = {31, 40, 52, 63};
  size_t k = 0;
  for (size_t i = 0; i < live.n; i++) {
    if (i > 0) assert_true(live.v[i - 1] <= live.v[i]);
    if (i > 0 && live.v[i - 1] == live.v[i]) continue; /* listed by both versions */
    assert_true(k < 4);
    assert_int_equal(live.v[i], both[k++]);
  }
  assert_int_equal(k, 4);
  assert_int_equal(vs->obsolete.n, 0);

  /* Releasing it makes exactly those two obsolete. */
  lsm_version_unref(pinned);
  assert_int_equal(vs->obsolete.n, 2);
  u64vec_sort(&vs->obsolete);
  assert_int_equal(vs->obsolete.v[0], 31);
  assert_int_equal(vs->obsolete.v[1], 40);
  assert_int_equal(lsm_version_set_live_files(vs, &live), ST_OK);
  assert_int_equal(live.n, 2);
  assert_int_equal(live.v[0], 52);
  assert_int_equal(live.v[1], 63);
  u64vec_release(&live);
  lsm_version_set_destroy(vs);
}

/* ---- Key-range queries --------------------------------------------------------------- */

/* Numbers of the files `out` as a sorted list in buf; returns the count. */
static size_t sorted_numbers(lsm_file_meta_t **out, size_t n, uint64_t *buf) {
  for (size_t i = 0; i < n; i++) buf[i] = out[i]->number;
  u64vec_t a = {buf, n, n};
  u64vec_sort(&a);
  return n;
}

/* Checks lsm_version_overlapping_files(level, [lo, hi]) gives exactly `want` (ids < 0:
   unbounded) and lsm_version_overlaps agrees. */
static void check_overlapping(const lsm_version_t *v, int level, int lo, int hi,
                              const uint64_t *want, size_t nwant) {
  char a[16], b[16];
  size_t an = lo >= 0 ? ukey(a, (unsigned)lo) : 0, bn = hi >= 0 ? ukey(b, (unsigned)hi) : 0;
  lsm_file_meta_t **out;
  size_t n;
  assert_int_equal(lsm_version_overlapping_files(v, level, lo >= 0 ? a : NULL, an,
                                                 hi >= 0 ? b : NULL, bn, &out, &n),
                   ST_OK);
  uint64_t got[64];
  assert_true(n <= 64);
  sorted_numbers(out, n, got);
  free(out);
  if (n != nwant) fail_msg("level %d [%d, %d]: %zu files, expected %zu", level, lo, hi, n, nwant);
  for (size_t i = 0; i < n; i++) assert_int_equal(got[i], want[i]);
  assert_int_equal(lsm_version_overlaps(v, level, lo >= 0 ? a : NULL, an, hi >= 0 ? b : NULL, bn),
                   nwant > 0);
}

static void test_version_overlapping_files_level0_and_sorted(void **state) {
  (void)state;
  lsm_version_set_t *vs = new_set(1 << 30);
  lsm_version_edit_t e;
  lsm_version_edit_init(&e);
  err_t err;
  /* L0: 1 [10, 20], 2 [18, 30], 3 [40, 50], 4 [29, 35], 5 [60, 70]. The sequence numbers
     differ from file to file: only user keys may matter. */
  edit_add(&e, NULL, 0, 1, 1, ik(10, 9), ik(20, 1));
  edit_add(&e, NULL, 0, 2, 1, ik(18, 2), ik(30, 8));
  edit_add(&e, NULL, 0, 3, 1, ik(40, 3), ik(50, 3));
  edit_add(&e, NULL, 0, 4, 1, ik(29, 7), ik(35, 4));
  edit_add(&e, NULL, 0, 5, 1, ik(60, 5), ik(70, 6));
  /* L1: 11 [10, 19], 12 [20, 29], 13 [30, 39], 14 [50, 59] (added out of order). */
  edit_add(&e, NULL, 1, 14, 1, ik(50, 1), ik(59, 1));
  edit_add(&e, NULL, 1, 12, 1, ik(20, 1), ik(29, 1));
  edit_add(&e, NULL, 1, 11, 1, ik(10, 1), ik(19, 1));
  edit_add(&e, NULL, 1, 13, 1, ik(30, 1), ik(39, 1));
  assert_int_equal(apply(vs, &e, &err), ST_OK);
  const lsm_version_t *v = vs->current;

  /* Level 0: a hit widens the range to the files it touches, transitively. */
  check_overlapping(v, 0, 15, 15, (uint64_t[]){1, 2, 4}, 3);
  check_overlapping(v, 0, 36, 39, NULL, 0);
  check_overlapping(v, 0, 50, 50, (uint64_t[]){3}, 1);
  check_overlapping(v, 0, 70, 100, (uint64_t[]){5}, 1);
  check_overlapping(v, 0, 71, 100, NULL, 0);
  check_overlapping(v, 0, 35, 40, (uint64_t[]){1, 2, 3, 4}, 4);
  check_overlapping(v, 0, -1, -1, (uint64_t[]){1, 2, 3, 4, 5}, 5);
  check_overlapping(v, 0, -1, 9, NULL, 0);
  check_overlapping(v, 0, 65, -1, (uint64_t[]){5}, 1);

  /* Sorted levels: exactly the files whose range meets the query, bounds inclusive. */
  check_overlapping(v, 1, 25, 35, (uint64_t[]){12, 13}, 2);
  check_overlapping(v, 1, 19, 20, (uint64_t[]){11, 12}, 2);
  check_overlapping(v, 1, 29, 29, (uint64_t[]){12}, 1);
  check_overlapping(v, 1, 40, 49, NULL, 0);
  check_overlapping(v, 1, 60, 99, NULL, 0);
  check_overlapping(v, 1, 0, 9, NULL, 0);
  check_overlapping(v, 1, -1, 15, (uint64_t[]){11}, 1);
  check_overlapping(v, 1, 55, -1, (uint64_t[]){14}, 1);
  check_overlapping(v, 1, -1, -1, (uint64_t[]){11, 12, 13, 14}, 4);
  check_overlapping(v, 2, -1, -1, NULL, 0);

  /* find_file: the first file whose largest key is >= the key. */
  char k[16];
  const struct {
    unsigned id;
    size_t index;
  } finds[] = {{0, 0}, {19, 0}, {20, 1}, {39, 2}, {40, 3}, {59, 3}, {60, 4}};
  for (size_t i = 0; i < sizeof finds / sizeof finds[0]; i++) {
    size_t kn = ukey(k, finds[i].id);
    assert_int_equal(lsm_version_find_file(v, 1, k, kn), finds[i].index);
  }
  lsm_version_set_destroy(vs);
}

/* Brute force: the files of the level meeting [lo, hi], for L0 widened to a fixed point. */
static size_t oracle_overlapping(const unsigned (*ranges)[3], size_t n, int level0, unsigned lo,
                                 unsigned hi, uint64_t *out) {
  int changed = 1;
  while (changed) {
    changed = 0;
    for (size_t i = 0; i < n && level0; i++)
      if (ranges[i][1] >= lo && ranges[i][0] <= hi && (ranges[i][0] < lo || ranges[i][1] > hi)) {
        lo = ranges[i][0] < lo ? ranges[i][0] : lo;
        hi = ranges[i][1] > hi ? ranges[i][1] : hi;
        changed = 1;
      }
  }
  size_t k = 0;
  for (size_t i = 0; i < n; i++)
    if (ranges[i][1] >= lo && ranges[i][0] <= hi) out[k++] = ranges[i][2];
  u64vec_t a = {out, k, k};
  u64vec_sort(&a);
  return k;
}

static void test_version_overlapping_files_random(void **state) {
  (void)state;
  /* Seed 99: 50 rounds of 12 L0 files (any ranges in [0, 1000)) and up to 12 L1 files
     (disjoint ranges), 40 random queries each, compared with the brute-force oracle. */
  rng_t r;
  rng_init(&r, 99);
  for (int round = 0; round < 50; round++) {
    lsm_version_set_t *vs = new_set(1 << 30);
    lsm_version_edit_t e;
    lsm_version_edit_init(&e);
    err_t err;
    unsigned l0[12][3], l1[12][3];
    size_t n1 = 0;
    for (size_t i = 0; i < 12; i++) {
      unsigned lo = (unsigned)rng_below(&r, 1000), hi = lo + (unsigned)rng_below(&r, 80);
      l0[i][0] = lo, l0[i][1] = hi, l0[i][2] = (unsigned)(100 + i);
      edit_add(&e, NULL, 0, 100 + i, 1, ik(lo, 1), ik(hi, 1));
    }
    /* L1: slots of width 80 in [0, 960), each used with probability 1/2. */
    for (unsigned slot = 0; slot < 12; slot++) {
      if (rng_below(&r, 2)) continue;
      unsigned lo = slot * 80 + (unsigned)rng_below(&r, 40), hi = lo + (unsigned)rng_below(&r, 40);
      l1[n1][0] = lo, l1[n1][1] = hi, l1[n1][2] = 200 + slot;
      edit_add(&e, NULL, 1, 200 + slot, 1, ik(lo, 1), ik(hi, 1));
      n1++;
    }
    assert_int_equal(apply(vs, &e, &err), ST_OK);
    for (int q = 0; q < 40; q++) {
      unsigned lo = (unsigned)rng_below(&r, 1100), hi = lo + (unsigned)rng_below(&r, 100);
      uint64_t want[12];
      size_t nw = oracle_overlapping(l0, 12, 1, lo, hi, want);
      check_overlapping(vs->current, 0, (int)lo, (int)hi, want, nw);
      nw = oracle_overlapping(l1, n1, 0, lo, hi, want);
      check_overlapping(vs->current, 1, (int)lo, (int)hi, want, nw);
    }
    lsm_version_set_destroy(vs);
  }
}

/* ---- Scores -------------------------------------------------------------------------- */

static void test_version_scores_pick_the_level(void **state) {
  (void)state;
  lsm_version_set_t *vs = new_set(1000);
  assert_int_equal(lsm_version_set_max_bytes(vs, 1), 1000);
  assert_int_equal(lsm_version_set_max_bytes(vs, 2), 10000);
  assert_int_equal(lsm_version_set_max_bytes(vs, 5), 10000000);
  assert_true(vs->current->score < 1);
  lsm_version_edit_t e;
  lsm_version_edit_init(&e);
  err_t err;
  unsigned id = 0;
#define ADD(level, size)                                                                \
  do {                                                                                  \
    edit_add(&e, NULL, (level), 1000 + id, (size), ik(10 * id, 1), ik(10 * id + 5, 1)); \
    id++;                                                                               \
  } while (0)

  /* L0: 3 files is 0.75 of the trigger, 4 is due. */
  for (int i = 0; i < 3; i++) ADD(0, 1);
  assert_int_equal(apply(vs, &e, &err), ST_OK);
  assert_true(vs->current->score < 1);
  ADD(0, 1);
  assert_int_equal(apply(vs, &e, &err), ST_OK);
  assert_true(vs->current->score >= 1);
  assert_int_equal(vs->current->score_level, 0);

  /* L1 at 999 bytes is not due; at 1500 it beats L0's 1.0. */
  ADD(1, 999);
  assert_int_equal(apply(vs, &e, &err), ST_OK);
  assert_int_equal(lsm_version_level_bytes(vs->current, 1), 999);
  assert_int_equal(vs->current->score_level, 0);
  ADD(1, 501);
  assert_int_equal(apply(vs, &e, &err), ST_OK);
  assert_int_equal(vs->current->score_level, 1);
  assert_true(vs->current->score > 1.49 && vs->current->score < 1.51);

  /* L3 at 3x its budget (100000) wins. */
  ADD(3, 300000);
  assert_int_equal(apply(vs, &e, &err), ST_OK);
  assert_int_equal(vs->current->score_level, 3);
  assert_true(vs->current->score > 2.99 && vs->current->score < 3.01);

  /* The last level has nowhere to compact to: however full, it is never picked. */
  ADD(LSM_NUM_LEVELS - 1, (uint64_t)1 << 50);
  assert_int_equal(apply(vs, &e, &err), ST_OK);
  assert_int_equal(vs->current->score_level, 3);
#undef ADD
  lsm_version_set_destroy(vs);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_version_edit_every_tag_round_trips_at_boundaries),
      cmocka_unit_test(test_version_edit_random_round_trip),
      cmocka_unit_test(test_version_edit_truncation_is_corrupt),
      cmocka_unit_test(test_version_edit_garbled_is_corrupt),
      cmocka_unit_test_setup_teardown(test_version_set_apply_and_recover_random, dir_setup,
                                      dir_teardown),
      cmocka_unit_test_setup_teardown(test_version_set_log_closed_and_torn_tail, dir_setup,
                                      dir_teardown),
      cmocka_unit_test_setup_teardown(test_version_set_bad_edit_leaves_current, dir_setup,
                                      dir_teardown),
      cmocka_unit_test_setup_teardown(test_version_set_recover_refuses_bad_manifests, dir_setup,
                                      dir_teardown),
      cmocka_unit_test_setup_teardown(test_version_set_live_and_obsolete_files, dir_setup,
                                      dir_teardown),
      cmocka_unit_test_setup_teardown(test_version_overlapping_files_level0_and_sorted, dir_setup,
                                      dir_teardown),
      cmocka_unit_test_setup_teardown(test_version_overlapping_files_random, dir_setup,
                                      dir_teardown),
      cmocka_unit_test_setup_teardown(test_version_scores_pick_the_level, dir_setup, dir_teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

/* The public ordered iterator (bfh_iter_*) and the engine table's names (bfh_engine_*),
 * through include/bfh.h only, over every engine row: the own engine, LevelDB read-write, and
 * LevelDB read-only on a live database (its owner, a read-write handle, keeps it open and
 * writes while the read-only handle iterates).
 *
 * One body per property, driven by a row description. The oracle is an array of the keys'
 * current values (fixed seed); the iterator must list exactly its live keys in bytewise
 * order with their values, seek to the first key >= the one asked, and keep showing the
 * version of its creation while writes go on.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bfh.h"
#include "tests/test_util.h"
#include "util/random.h"

#define NKEYS 600
#define NOPS 6000
#define MAXV 40

static char tmpdir[4096];

typedef struct row {
  const char *name;
  bfh_engine engine;
  int read_only; /* iterate through a read-only handle while a read-write one owns the db */
} row_t;

typedef struct oracle {
  int live[NKEYS];
  char val[NKEYS][MAXV];
  size_t len[NKEYS];
} oracle_t;

typedef struct fx {
  char dir[4300];
  bfh_db *owner; /* the read-write handle that writes */
  bfh_db *db;    /* the handle iterated (owner, or a read-only one) */
  oracle_t o;
  rng_t rng;
} fx_t;

static size_t key_of(int id, char *buf) {
  return (size_t)snprintf(buf, 16, "k%05d", id);
}

static bfh_options options(const row_t *r, int read_only) {
  bfh_options o;
  bfh_options_init(&o);
  o.engine = r->engine;
  o.value_filter_bits = 4096;
  o.memtable_bytes = 64 << 10; /* the smallest: several tables and levels */
  o.table_bytes = 16 << 10;
  o.read_only = read_only;
  return o;
}

/* Random puts and deletes through the owner, mirrored in the oracle. */
static void write_ops(fx_t *f, int n) {
  for (int i = 0; i < n; i++) {
    int id = (int)(rng_next(&f->rng) % NKEYS);
    char k[16];
    size_t kl = key_of(id, k);
    if (rng_next(&f->rng) % 5 == 0) {
      assert_int_equal(bfh_delete(f->owner, k, kl), BFH_OK);
      f->o.live[id] = 0;
    } else {
      size_t vl = (size_t)(rng_next(&f->rng) % MAXV); /* empty values too */
      for (size_t j = 0; j < vl; j++) f->o.val[id][j] = (char)('a' + rng_next(&f->rng) % 26);
      assert_int_equal(bfh_put(f->owner, k, kl, f->o.val[id], vl), BFH_OK);
      f->o.live[id] = 1;
      f->o.len[id] = vl;
    }
  }
}

static void fx_open(fx_t *f, const row_t *r, const char *name) {
  memset(f, 0, sizeof *f);
  rng_init(&f->rng, 0x6974657273ull); /* "iters" */
  snprintf(f->dir, sizeof f->dir, "%s/%s-%s", tmpdir, r->name, name);
  bfh_options o = options(r, 0);
  assert_int_equal(bfh_open(f->dir, &o, &f->owner), BFH_OK);
  write_ops(f, NOPS / 2);
  assert_int_equal(bfh_flush(f->owner), BFH_OK);
  write_ops(f, NOPS / 2); /* the rest partly in memtables and logs */
  f->db = f->owner;
  if (r->read_only) {
    bfh_options ro = options(r, 1);
    if (bfh_open(f->dir, &ro, &f->db) != BFH_OK) fail_msg("read-only open: %s", bfh_last_error(NULL));
  }
}

static void fx_close(fx_t *f) {
  if (f->db != f->owner) assert_int_equal(bfh_close(f->db), BFH_OK);
  assert_int_equal(bfh_close(f->owner), BFH_OK);
}

/* The iterator from its position lists exactly the oracle's live keys from id `from` on. */
static void expect_from(bfh_iter *it, const oracle_t *o, int from) {
  for (int id = from; id < NKEYS; id++) {
    if (!o->live[id]) continue;
    assert_true(bfh_iter_valid(it));
    char k[16];
    size_t kl = key_of(id, k), gkl, gvl;
    const void *gk = bfh_iter_key(it, &gkl), *gv = bfh_iter_value(it, &gvl);
    assert_int_equal(gkl, kl);
    assert_memory_equal(gk, k, kl);
    assert_int_equal(gvl, o->len[id]);
    if (gvl) assert_memory_equal(gv, o->val[id], gvl);
    bfh_iter_next(it);
  }
  assert_false(bfh_iter_valid(it));
  assert_int_equal(bfh_iter_status(it), BFH_OK);
}

static void body_model(const row_t *r) {
  fx_t *f = malloc(sizeof *f);
  assert_non_null(f);
  fx_open(f, r, "model");
  bfh_iter *it;
  if (bfh_iter_create(f->db, &it) != BFH_OK) fail_msg("bfh_iter_create: %s", bfh_last_error(f->db));
  assert_false(bfh_iter_valid(it)); /* not valid before a seek */
  bfh_iter_seek_first(it);
  expect_from(it, &f->o, 0);
  /* Seeks: to a key (live or not), between two keys, before the first, past the last. */
  for (int id = 0; id < NKEYS; id += 37) {
    char k[16];
    size_t kl = key_of(id, k);
    bfh_iter_seek(it, k, kl);
    expect_from(it, &f->o, id);
    k[kl] = '!'; /* just after k: the next id on */
    bfh_iter_seek(it, k, kl + 1);
    expect_from(it, &f->o, id + 1);
  }
  bfh_iter_seek(it, "a", 1);
  expect_from(it, &f->o, 0);
  bfh_iter_seek(it, "z", 1);
  assert_false(bfh_iter_valid(it));
  bfh_iter_destroy(it);
  fx_close(f);
  free(f);
}

/* Writes after the creation are not seen: the iterator keeps its version. */
static void body_version(const row_t *r) {
  fx_t *f = malloc(sizeof *f);
  assert_non_null(f);
  fx_open(f, r, "version");
  bfh_iter *it;
  if (bfh_iter_create(f->db, &it) != BFH_OK) fail_msg("bfh_iter_create: %s", bfh_last_error(f->db));
  oracle_t *before = malloc(sizeof *before);
  assert_non_null(before);
  *before = f->o;
  write_ops(f, NOPS);                         /* overwrites, deletes, new keys */
  assert_int_equal(bfh_flush(f->owner), BFH_OK); /* and tables made and compacted */
  bfh_iter_seek_first(it);
  expect_from(it, before, 0);
  bfh_iter_destroy(it);
  /* A new iterator sees the writes. */
  assert_int_equal(bfh_iter_create(f->db, &it), BFH_OK);
  bfh_iter_seek_first(it);
  expect_from(it, &f->o, 0);
  bfh_iter_destroy(it);
  free(before);
  fx_close(f);
  free(f);
}

static const row_t ROWS[] = {{"lsm", BFH_ENGINE_LSM, 0},
                             {"leveldb", BFH_ENGINE_LEVELDB, 0},
                             {"leveldb-ro", BFH_ENGINE_LEVELDB, 1},
                             {"lsm-ro", BFH_ENGINE_LSM, 1}};

static void test_iter_model_lsm(void **s) {
  (void)s, body_model(&ROWS[0]);
}
static void test_iter_model_leveldb(void **s) {
  (void)s, body_model(&ROWS[1]);
}
static void test_iter_model_leveldb_readonly(void **s) {
  (void)s, body_model(&ROWS[2]);
}
static void test_iter_version_lsm(void **s) {
  (void)s, body_version(&ROWS[0]);
}
static void test_iter_version_leveldb(void **s) {
  (void)s, body_version(&ROWS[1]);
}
static void test_iter_version_leveldb_readonly(void **s) {
  (void)s, body_version(&ROWS[2]);
}
static void test_iter_model_lsm_readonly(void **s) {
  (void)s, body_model(&ROWS[3]);
}
static void test_iter_version_lsm_readonly(void **s) {
  (void)s, body_version(&ROWS[3]);
}

static void test_iter_arguments(void **s) {
  (void)s;
  bfh_iter *it = (bfh_iter *)1;
  assert_int_equal(bfh_iter_create(NULL, &it), BFH_E_INVALID);
  bfh_iter_destroy(NULL);
  assert_false(bfh_iter_valid(NULL));
}

/* A damaged data block ends the iteration with BFH_E_CORRUPT; the iterator keeps its own
   message, naming the table, which a later failure on the handle does not replace. */
static void test_iter_error_is_its_own(void **s) {
  (void)s;
  char dir[4300], table[4400];
  snprintf(dir, sizeof dir, "%s/damaged", tmpdir);
  bfh_options o = options(&ROWS[0], 0);
  bfh_db *db = NULL;
  assert_int_equal(bfh_open(dir, &o, &db), BFH_OK);
  char key[16], val[MAXV];
  for (int i = 0; i < NKEYS; i++) {
    size_t kl = key_of(i, key);
    int vl = snprintf(val, sizeof val, "value-%d", i);
    assert_int_equal(bfh_put(db, key, kl, val, (size_t)vl), BFH_OK);
  }
  assert_int_equal(bfh_flush(db), BFH_OK); /* the memtable written out as a table */
  assert_int_equal(bfh_close(db), BFH_OK);
  /* The first table file's first data block starts at offset 0. */
  snprintf(table, sizeof table, "%s/000005.sst", dir);
  for (uint64_t n = 4; access(table, F_OK) != 0 && n < 64; n++)
    snprintf(table, sizeof table, "%s/%06llu.sst", dir, (unsigned long long)n);
  assert_int_equal(access(table, F_OK), 0);
  assert_int_equal(test_file_xor_byte(table, 20, 0x5a), 0);
  o.read_only = 0;
  assert_int_equal(bfh_open(dir, &o, &db), BFH_OK);
  bfh_iter *it = NULL;
  assert_int_equal(bfh_iter_create(db, &it), BFH_OK);
  assert_null(bfh_iter_error(it)); /* not started: sound */
  size_t n = 0;
  for (bfh_iter_seek_first(it); bfh_iter_valid(it); bfh_iter_next(it)) n++;
  assert_true(n < NKEYS);
  assert_int_equal(bfh_iter_status(it), BFH_E_CORRUPT);
  const char *msg = bfh_iter_error(it);
  assert_non_null(msg);
  if (!strstr(msg, strrchr(table, '/') + 1)) fail_msg("'%s' does not name %s", msg, table);
  void *v = NULL;
  size_t vl = 0;
  assert_int_equal(bfh_get(db, NULL, 1, &v, &vl), BFH_E_INVALID); /* the handle's error */
  assert_non_null(strstr(bfh_iter_error(it), strrchr(table, '/') + 1));
  assert_null(bfh_iter_error(NULL));
  bfh_iter_destroy(it);
  assert_int_equal(bfh_close(db), BFH_OK);
}

/* The engines table as bfh.h shows it: names both ways, capabilities per engine. */
static void test_engine_table(void **s) {
  (void)s;
  assert_string_equal(bfh_engine_name(BFH_ENGINE_LSM), "lsm");
  assert_string_equal(bfh_engine_name(BFH_ENGINE_LEVELDB), "leveldb");
  assert_null(bfh_engine_name((bfh_engine)99));
  assert_null(bfh_engine_get((bfh_engine)99));
  assert_null(bfh_engine_find("cassandra"));
  assert_null(bfh_engine_find(NULL));
  const bfh_engine_info *rdb = bfh_engine_find("rocksdb");
  assert_non_null(rdb);
  assert_int_equal(rdb->engine, BFH_ENGINE_ROCKSDB);
  assert_string_equal(bfh_engine_name(BFH_ENGINE_ROCKSDB), "rocksdb");
  unsigned rdb_caps = BFH_ENGINE_CAN_WRITE | BFH_ENGINE_CAN_READ_ONLY | BFH_ENGINE_CAN_REPAIR |
                      BFH_ENGINE_CAN_CHECK | BFH_ENGINE_CAN_ITERATE;
  assert_int_equal(rdb->caps & rdb_caps, rdb_caps); /* read-write and read-only rows */
  const bfh_engine_info *lsm = bfh_engine_find("lsm"), *ldb = bfh_engine_find("leveldb");
  assert_non_null(lsm);
  assert_non_null(ldb);
  assert_int_equal(lsm->engine, BFH_ENGINE_LSM);
  assert_int_equal(ldb->engine, BFH_ENGINE_LEVELDB);
  assert_ptr_equal(bfh_engine_get(BFH_ENGINE_LEVELDB), ldb);
  /* The default engine is the first. */
  bfh_options o;
  bfh_options_init(&o);
  assert_int_equal(bfh_engine_at(0)->engine, o.engine);
  size_t n = 0;
  while (bfh_engine_at(n)) n++;
  assert_int_equal(n, 3); /* one entry per engine, whatever its rows */
  unsigned all = BFH_ENGINE_CAN_WRITE | BFH_ENGINE_CAN_REPAIR | BFH_ENGINE_CAN_CHECK |
                 BFH_ENGINE_CAN_ITERATE;
  assert_int_equal(lsm->caps & all, all);
  assert_int_equal(ldb->caps & all, all);
  assert_true(lsm->caps & BFH_ENGINE_CAN_STANDALONE);
  assert_true(lsm->caps & BFH_ENGINE_CAN_READ_ONLY); /* read-write and read-only rows */
  assert_true(ldb->caps & BFH_ENGINE_CAN_READ_ONLY);
  assert_true(ldb->caps & BFH_ENGINE_CAN_STANDALONE); /* its read-write row keeps one */
  assert_true(lsm->caps & BFH_ENGINE_CAN_REPAIR_REPORT);
  assert_false(ldb->caps & BFH_ENGINE_CAN_REPAIR_REPORT);
  assert_true(strlen(lsm->description) > 0);
}

static int setup(void **s) {
  (void)s;
  return test_tmpdir_create(tmpdir, sizeof tmpdir, "iter");
}

static int teardown(void **s) {
  (void)s;
  return test_rmrf(tmpdir);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_engine_table),
      cmocka_unit_test(test_iter_arguments),
      cmocka_unit_test(test_iter_error_is_its_own),
      cmocka_unit_test(test_iter_model_lsm),
      cmocka_unit_test(test_iter_model_leveldb),
      cmocka_unit_test(test_iter_model_leveldb_readonly),
      cmocka_unit_test(test_iter_version_lsm),
      cmocka_unit_test(test_iter_version_leveldb),
      cmocka_unit_test(test_iter_version_leveldb_readonly),
      cmocka_unit_test(test_iter_model_lsm_readonly),
      cmocka_unit_test(test_iter_version_lsm_readonly),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}

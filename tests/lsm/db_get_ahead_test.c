/* lsm_get_ahead: the read ahead of a validation's gets. It must read, in batches, the data
 * block each get will read first (the newest table that may hold the key, not an older one
 * or one whose range leaves the key out; nothing for a key a memtable holds), so that the
 * gets then make no read of their own; and it must change no answer: a batch that fails or a
 * block that does not check out leaves the get to read it and report on it.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lsm/db.h"
#include "tests/env_fault.h"
#include "tests/lsm/db_fault_fixture.h"
#include "tests/lsm/db_test_util.h"
#include "tests/test_util.h"

#define NKEYS 2000 /* table A: keys 0..1999 */
#define NNEWER 200 /* table B, newer: keys 0..199 again */
#define NABSENT 10 /* keys 5000..5009: no table's range holds them */
#define VALUE_BYTES 100

typedef db_fault_fixture_t fixture_t;

static int setup(void **state) {
  return db_fault_fixture_setup(state, "db_get_ahead");
}

/* The value of key id written in `round` ('a' table A, 'b' table B, 'c' the memtable). */
static size_t value_of(char *buf, uint64_t id, char round) {
  memset(buf, round, VALUE_BYTES);
  snprintf(buf, VALUE_BYTES, "%c-%llu-", round, (unsigned long long)id);
  buf[strlen(buf)] = round; /* the bytes after the digits stay `round` */
  return VALUE_BYTES;
}

static void put(fixture_t *f, uint64_t id, char round) {
  char k[32], v[VALUE_BYTES];
  size_t kl = test_key(k, id), vl = value_of(v, id, round);
  err_t e;
  err_clear(&e);
  if (lsm_put(f->db, k, kl, v, vl, &e) != ST_OK) fail_msg("put: %s", e.msg);
}

static void flush(fixture_t *f) {
  err_t e;
  err_clear(&e);
  if (lsm_flush(f->db, &e) != ST_OK) fail_msg("flush: %s", e.msg);
}

/* Table A (keys 0..NKEYS-1), table B over it (keys 0..NNEWER-1), the database closed and
   opened again, so that its block cache holds nothing. */
static void two_tables(fixture_t *f) {
  db_fault_open(f);
  for (uint64_t id = 0; id < NKEYS; id++) put(f, id, 'a');
  flush(f);
  for (uint64_t id = 0; id < NNEWER; id++) put(f, id, 'b');
  flush(f);
  db_fault_close(f);
  db_fault_open(f);
}

/* What key id holds after two_tables and the memtable writes of the tests: 0 none, else the
   round of its latest value. */
static char latest(uint64_t id) {
  if (id >= 300 && id < 310) return 0; /* deleted in the memtable */
  if (id >= 400 && id < 410) return 'c';
  if (id < NNEWER) return 'b';
  return id < NKEYS ? 'a' : 0;
}

/* Every key of two_tables, then the absent ones, as key_ref_t (keys[i] holds the bytes). */
typedef struct keyset {
  char k[NKEYS + NABSENT][32];
  key_ref_t ref[NKEYS + NABSENT];
  size_t n;
} keyset_t;

static keyset_t *all_keys(void) {
  keyset_t *ks = calloc(1, sizeof *ks);
  assert_non_null(ks);
  for (uint64_t id = 0; id < NKEYS + NABSENT; id++) {
    uint64_t key_id = id < NKEYS ? id : 5000 + (id - NKEYS);
    size_t len = test_key(ks->k[ks->n], key_id);
    ks->ref[ks->n] = (key_ref_t){ks->k[ks->n], len};
    ks->n++;
  }
  return ks;
}

static uint64_t id_of(size_t i) {
  return i < NKEYS ? i : 5000 + (i - NKEYS);
}

/* Gets every key of ks and checks its answer (latest); returns how many gave ST_E_CORRUPT,
   whose message must name a table file and an offset. */
static uint64_t expect_answers(fixture_t *f, const keyset_t *ks) {
  uint64_t corrupt = 0;
  for (size_t i = 0; i < ks->n; i++) {
    uint64_t id = id_of(i);
    void *val = NULL;
    size_t len = 0;
    err_t e;
    err_clear(&e);
    int rc = lsm_get(f->db, ks->ref[i].bytes, ks->ref[i].len, &val, &len, &e);
    if (rc == ST_E_CORRUPT) {
      if (!strstr(e.msg, ".sst") || !strstr(e.msg, " at "))
        fail_msg("corruption message lacks file or offset: %s", e.msg);
      corrupt++;
      continue;
    }
    char want = latest(id);
    if (!want) {
      if (rc != ST_NOT_FOUND) fail_msg("key %llu: %d, want none", (unsigned long long)id, rc);
      continue;
    }
    if (rc != ST_OK) fail_msg("key %llu: %d %s", (unsigned long long)id, rc, e.msg);
    char v[VALUE_BYTES];
    size_t vl = value_of(v, id, want);
    if (len != vl || memcmp(val, v, vl) != 0)
      fail_msg("key %llu: wrong value '%.12s', want '%.12s'", (unsigned long long)id,
               (const char *)val, v);
    free(val);
  }
  return corrupt;
}

static void memtable_writes(fixture_t *f) {
  for (uint64_t id = 300; id < 310; id++) {
    char k[32];
    size_t kl = test_key(k, id);
    err_t e;
    err_clear(&e);
    if (lsm_delete(f->db, k, kl, &e) != ST_OK) fail_msg("delete: %s", e.msg);
  }
  for (uint64_t id = 400; id < 410; id++) put(f, id, 'c');
}

/* two_tables and the memtable writes: the keys of every case, from the memtable to none. */
static keyset_t *every_case(fixture_t *f) {
  two_tables(f);
  memtable_writes(f);
  return all_keys();
}

/* After the read ahead, the gets of every key (in the newer table, the older one, the
   memtable, deleted, absent) answer as before and make no read of their own; a second read
   ahead finds everything in the cache and reads nothing. */
static void test_get_ahead_reads_what_the_gets_read(void **state) {
  fixture_t *f = *state;
  keyset_t *ks = every_case(f);
  uint64_t batches = env_op_count(f->io, ENV_OP_BATCH);
  uint64_t reads = env_op_count(f->io, ENV_OP_READ);
  lsm_get_ahead(f->db, ks->ref, ks->n);
  uint64_t batched = env_op_count(f->io, ENV_OP_BATCH) - batches;
  uint64_t ahead_reads = env_op_count(f->io, ENV_OP_READ) - reads;
  /* The blocks came in batches (the opens' reads of footers, indexes and filters are
     counted among the reads too). */
  assert_true(batched > 0);
  print_message("read ahead: %llu batches, %llu reads\n", (unsigned long long)batched,
                (unsigned long long)ahead_reads);
  reads = env_op_count(f->io, ENV_OP_READ);
  assert_int_equal(expect_answers(f, ks), 0);
  if (env_op_count(f->io, ENV_OP_READ) != reads)
    fail_msg("the gets read %llu times after the read ahead",
             (unsigned long long)(env_op_count(f->io, ENV_OP_READ) - reads));
  batches = env_op_count(f->io, ENV_OP_BATCH);
  lsm_get_ahead(f->db, ks->ref, ks->n);
  assert_int_equal(env_op_count(f->io, ENV_OP_BATCH), batches);
  assert_int_equal(env_op_count(f->io, ENV_OP_READ), reads);
  free(ks);
}

/* Without the read ahead the same gets read: the test above would see it. */
static void test_gets_read_without_it(void **state) {
  fixture_t *f = *state;
  keyset_t *ks = every_case(f);
  uint64_t reads = env_op_count(f->io, ENV_OP_READ);
  assert_int_equal(expect_answers(f, ks), 0);
  assert_true(env_op_count(f->io, ENV_OP_READ) > reads);
  free(ks);
}

/* Every batch failing: the gets read for themselves and answer the same. */
static void test_get_ahead_failed_batches(void **state) {
  fixture_t *f = *state;
  keyset_t *ks = every_case(f);
  env_fail(f->io, ENV_OP_BATCH, 1, 1);
  lsm_get_ahead(f->db, ks->ref, ks->n);
  assert_true(env_faults_injected(f->io) > 0);
  env_fail_none(f->io);
  uint64_t reads = env_op_count(f->io, ENV_OP_READ);
  assert_int_equal(expect_answers(f, ks), 0);
  assert_true(env_op_count(f->io, ENV_OP_READ) > reads);
  free(ks);
}

/* A byte flipped in the middle of table A: the read ahead does not put the damaged block in
   the cache, and the gets of its keys report the damage with file and offset, as they do
   without the read ahead; every other key answers. */
static void test_get_ahead_damaged_block(void **state) {
  fixture_t *f = *state;
  two_tables(f);
  lsm_snapshot_t *s = lsm_snapshot_acquire(f->db);
  assert_non_null(s);
  const lsm_table_info_t *t;
  assert_int_equal(lsm_snapshot_tables(s, &t), 2);
  const lsm_table_info_t *a = t[0].number < t[1].number ? &t[0] : &t[1];
  char path[TEST_PATH_MAX + 64];
  snprintf(path, sizeof path, "%s/%06llu.sst", f->dir, (unsigned long long)a->number);
  uint64_t middle = a->size / 2; /* in its data blocks, which are most of it */
  lsm_snapshot_release(s);
  db_fault_close(f);
  assert_int_equal(test_file_xor_byte(path, middle, 0x5a), 0);
  db_fault_open(f);
  memtable_writes(f);
  keyset_t *ks = all_keys();
  lsm_get_ahead(f->db, ks->ref, ks->n);
  uint64_t corrupt = expect_answers(f, ks);
  print_message("%llu of %zu gets reported the damaged block\n", (unsigned long long)corrupt,
                ks->n);
  assert_true(corrupt > 0 && corrupt < NKEYS - NNEWER);
  free(ks);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_get_ahead_reads_what_the_gets_read, setup,
                                      db_fault_fixture_teardown),
      cmocka_unit_test_setup_teardown(test_gets_read_without_it, setup, db_fault_fixture_teardown),
      cmocka_unit_test_setup_teardown(test_get_ahead_failed_batches, setup,
                                      db_fault_fixture_teardown),
      cmocka_unit_test_setup_teardown(test_get_ahead_damaged_block, setup,
                                      db_fault_fixture_teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

/* bfh_repair's one rule (api/repair.c, engines/repair_stage.h): a repair either
 * succeeds or leaves the directory byte for byte as it found it.
 *   - RocksDB, two column families, cf1 flushed while its writes are still in the live WAL
 *     (check reads it clean): RocksDB's RepairDB fails on it ("force_consistency_checks");
 *     the directory is as it was and both families read every key;
 *   - a LevelDB database with a stray 0-byte OPTIONS file: detection takes it for LevelDB's
 *     by its tables' magic, so bfh_repair --engine rocksdb refuses it untouched and the
 *     LevelDB engine opens it; with a RocksDB IDENTITY beside it too (so that it passes for
 *     RocksDB's), RocksDB's repair either keeps every key or is refused untouched;
 *   - a database named through a symbolic link is repaired where the link points, and the
 *     link is left a link;
 *   - the fault sweep: every operation of the stage (open, read, write, sync, rename and link,
 *     unlink, mkdir) failed in turn, for good (a dead disk), on the own engine's, LevelDB's
 *     and RocksDB's database: each failed repair leaves the directory byte for byte as it was,
 *     and a repair after it succeeds with every key;
 *   - the crash sweep: the process stopped (_exit) before each step of a repair of the own
 *     engine's database: the directory reads as before (or as repaired, from the swap on), and
 *     the next repair finishes or removes what the crash left.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <dirent.h>
#include <leveldb/c.h>
#include <rocksdb/c.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bfh.h"
#include "api/testbed.h" /* bfh_internal_repair_with_io, the stage's step hook */
#include "tests/rocksdb_test_util.h"
#include "tests/test_util.h"
#include "util/crc32c.h"
#include "tests/env_fault.h"

static char g_tmp[512], g_db[600], g_work[600];

static int setup(void **state) {
  (void)state;
  if (test_tmpdir_create(g_tmp, sizeof g_tmp, "repair_stage_test") != 0) return -1;
  snprintf(g_db, sizeof g_db, "%s/db", g_tmp);
  snprintf(g_work, sizeof g_work, "%s/work", g_tmp);
  return 0;
}

static int teardown(void **state) {
  (void)state;
  return test_rmrf(g_tmp);
}

/* ---- What a directory holds ---------------------------------------------------------- */

typedef struct buf {
  char *p;
  size_t n, cap;
} buf_t;

static void buf_add(buf_t *b, const char *s) {
  size_t l = strlen(s);
  if (b->n + l + 1 > b->cap) {
    b->cap = (b->n + l + 1) * 2;
    b->p = realloc(b->p, b->cap);
    assert_non_null(b->p);
  }
  memcpy(b->p + b->n, s, l + 1);
  b->n += l;
}

static int by_name(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Every name under dir (sorted, recursively) with its type, size and the CRC of its bytes. */
static void snapshot_into(const char *dir, const char *rel, buf_t *out) {
  DIR *d = opendir(dir);
  assert_non_null(d);
  char *names[4096];
  size_t n = 0;
  struct dirent *de;
  while ((de = readdir(d)))
    if (strcmp(de->d_name, ".") && strcmp(de->d_name, "..")) {
      assert_true(n < 4096);
      names[n++] = strdup(de->d_name);
    }
  closedir(d);
  qsort(names, n, sizeof *names, by_name);
  for (size_t i = 0; i < n; i++) {
    char p[4096], r[4096], line[4400];
    snprintf(p, sizeof p, "%s/%s", dir, names[i]);
    snprintf(r, sizeof r, "%s%s", rel, names[i]);
    struct stat sb;
    assert_int_equal(lstat(p, &sb), 0);
    if (S_ISDIR(sb.st_mode)) {
      snprintf(line, sizeof line, "%s/\n", r);
      buf_add(out, line);
      strcat(r, "/");
      snapshot_into(p, r, out);
    } else {
      size_t len = 0;
      uint8_t *bytes = test_read_file(p, &len);
      uint32_t crc = bytes ? crc32c_value(bytes, len) : 0;
      free(bytes);
      snprintf(line, sizeof line, "%s %zu %08x\n", r, len, crc);
      buf_add(out, line);
    }
    free(names[i]);
  }
}

static char *snapshot(const char *dir) {
  buf_t b = {0};
  buf_add(&b, "");
  snapshot_into(dir, "", &b);
  return b.p;
}

/* Whether the parent of g_db holds anything but db (and work): a stage left behind. */
static int stage_left(void) {
  char p[700];
  snprintf(p, sizeof p, "%s/.db.bfh-repair", g_tmp);
  return access(p, F_OK) == 0;
}

/* ---- The databases ------------------------------------------------------------------- */

#define NKEYS 600

static size_t kv(int i, char *k, char *v, size_t *vl) {
  *vl = (size_t)sprintf(v, "value-%d", i % 53);
  return (size_t)sprintf(k, "key%06d", i);
}

/* Live keys of the database in dir (column family cf, NULL: the default), read with bfh. */
static uint64_t bfh_keys(const char *dir, bfh_engine engine, const char *cf) {
  bfh_options o;
  bfh_options_init(&o);
  o.engine = engine;
  o.value_filters = 0;
  o.create_if_missing = 0;
  o.column_family = cf;
  bfh_db *db = NULL;
  if (bfh_open(dir, &o, &db) != BFH_OK) fail_msg("open %s: %s", dir, bfh_last_error(NULL));
  bfh_iter *it = NULL;
  assert_int_equal(bfh_iter_create(db, &it), BFH_OK);
  uint64_t n = 0;
  for (bfh_iter_seek_first(it); bfh_iter_valid(it); bfh_iter_next(it)) n++;
  assert_int_equal(bfh_iter_status(it), BFH_OK);
  bfh_iter_destroy(it);
  assert_int_equal(bfh_close(db), BFH_OK);
  return n;
}

static void make_own(const char *dir) {
  bfh_options o;
  bfh_options_init(&o);
  o.memtable_bytes = 64 << 10;
  o.table_bytes = 32 << 10;
  bfh_db *db = NULL;
  assert_int_equal(bfh_open(dir, &o, &db), BFH_OK);
  char k[32], v[32];
  size_t vl;
  for (int i = 0; i < NKEYS; i++) {
    size_t kl = kv(i, k, v, &vl);
    assert_int_equal(bfh_put(db, k, kl, v, vl), BFH_OK);
  }
  assert_int_equal(bfh_close(db), BFH_OK);
}

static leveldb_t *ldb_open(const char *dir) {
  leveldb_options_t *o = leveldb_options_create();
  leveldb_options_set_create_if_missing(o, 1);
  leveldb_options_set_write_buffer_size(o, 16 << 10);
  char *err = NULL;
  leveldb_t *db = leveldb_open(o, dir, &err);
  leveldb_options_destroy(o);
  if (err) fail_msg("leveldb_open %s: %s", dir, err);
  return db;
}

/* A LevelDB database: tables (.ldb) and a log. */
static void make_leveldb(const char *dir, int n) {
  leveldb_t *db = ldb_open(dir);
  leveldb_writeoptions_t *wo = leveldb_writeoptions_create();
  char k[32], v[32], *err = NULL;
  size_t vl;
  for (int i = 0; i < n; i++) {
    size_t kl = kv(i, k, v, &vl);
    leveldb_put(db, wo, k, kl, v, vl, &err);
    assert_null(err);
  }
  leveldb_writeoptions_destroy(wo);
  leveldb_close(db);
}

static uint64_t leveldb_keys(const char *dir) {
  leveldb_t *db = ldb_open(dir);
  leveldb_readoptions_t *ro = leveldb_readoptions_create();
  leveldb_iterator_t *it = leveldb_create_iterator(db, ro);
  uint64_t n = 0;
  for (leveldb_iter_seek_to_first(it); leveldb_iter_valid(it); leveldb_iter_next(it)) n++;
  leveldb_iter_destroy(it);
  leveldb_readoptions_destroy(ro);
  leveldb_close(db);
  return n;
}

/* RocksDB with the default family and cf1: cf1's NKEYS + 10 keys flushed, the default's NKEYS
   keys only in the WAL, which still holds cf1's writes too. */
static void make_rocksdb(const char *dir) {
  const char *names[] = {"cf1"};
  rdbt_t t;
  assert_int_equal(rdbt_open(&t, dir, 0, names, 1), 0);
  rocksdb_writebatch_t *b = rocksdb_writebatch_create();
  char k[32], v[32];
  size_t vl;
  for (int i = 0; i < NKEYS + 10; i++) {
    size_t kl = kv(i, k, v, &vl);
    rocksdb_writebatch_put_cf(b, rdbt_cf(&t, 1), k, kl, v, vl);
    if (i < NKEYS) rocksdb_writebatch_put_cf(b, rdbt_cf(&t, 0), k, kl, v, vl);
  }
  assert_int_equal(rdbt_write(&t, b), 0);
  rocksdb_writebatch_destroy(b);
  assert_int_equal(rdbt_flush(&t, 1), 0);
  rdbt_close(&t);
}

/* ---- Item 1: RocksDB, two column families --------------------------------------------- */

static void test_repair_rocksdb_two_families_all_or_nothing(void **state) {
  (void)state;
  make_rocksdb(g_db);
  bfh_options o;
  bfh_options_init(&o);
  o.engine = BFH_ENGINE_ROCKSDB;
  assert_int_equal(bfh_check(g_db, &o, NULL, NULL, NULL), BFH_OK);
  char *before = snapshot(g_db);
  bfh_repair_report rep;
  int rc = bfh_repair(g_db, &o, &rep);
  char *after = snapshot(g_db);
  if (rc == BFH_OK) {
    print_message("repaired: %s\n", g_db);
  } else {
    print_message("refused (%d): %s\n", rc, bfh_last_error(NULL));
    assert_string_equal(before, after);
    assert_non_null(strstr(bfh_last_error(NULL), "nothing changed"));
  }
  assert_false(stage_left());
  /* Either way every key of both families reads, with bfh's readers and with RocksDB's. */
  o.read_only = 1;
  assert_int_equal(bfh_keys(g_db, BFH_ENGINE_ROCKSDB, NULL), NKEYS);
  assert_int_equal(bfh_keys(g_db, BFH_ENGINE_ROCKSDB, "cf1"), NKEYS + 10);
  rocksdb_options_t *ro = rocksdb_options_create();
  const char *all[] = {"default", "cf1"};
  const rocksdb_options_t *opts[] = {ro, ro};
  rocksdb_column_family_handle_t *h[2];
  char *err = NULL;
  rocksdb_t *db = rocksdb_open_for_read_only_column_families(ro, g_db, 2, all, opts, h, 0, &err);
  if (err) fail_msg("stock read-only open: %s", err);
  rocksdb_readoptions_t *rdo = rocksdb_readoptions_create();
  for (int f = 0; f < 2; f++) {
    rocksdb_iterator_t *it = rocksdb_create_iterator_cf(db, rdo, h[f]);
    int n = 0;
    for (rocksdb_iter_seek_to_first(it); rocksdb_iter_valid(it); rocksdb_iter_next(it)) n++;
    rocksdb_iter_destroy(it);
    assert_int_equal(n, f ? NKEYS + 10 : NKEYS);
    rocksdb_column_family_handle_destroy(h[f]);
  }
  rocksdb_readoptions_destroy(rdo);
  rocksdb_close(db);
  rocksdb_options_destroy(ro);
  free(before);
  free(after);
}

/* ---- Item 2: a LevelDB database with a stray OPTIONS file ------------------------------ */

static void touch(const char *dir, const char *name, const char *text) {
  char p[700];
  snprintf(p, sizeof p, "%s/%s", dir, name);
  assert_int_equal(test_write_file(p, (const uint8_t *)text, strlen(text)), 0);
}

static void test_repair_leveldb_with_stray_options(void **state) {
  (void)state;
  make_leveldb(g_db, 20000);
  touch(g_db, "OPTIONS-000005", "");
  char *before = snapshot(g_db);
  bfh_options o;
  bfh_options_init(&o);
  o.engine = BFH_ENGINE_ROCKSDB;
  assert_int_equal(bfh_repair(g_db, &o, NULL), BFH_E_INVALID);
  assert_non_null(strstr(bfh_last_error(NULL), "LevelDB"));
  assert_int_equal(bfh_check(g_db, &o, NULL, NULL, NULL), BFH_E_INVALID);
  char *after = snapshot(g_db);
  assert_string_equal(before, after);
  assert_false(stage_left());
  /* The LevelDB engine takes it for its own, and reads it whole. */
  o.engine = BFH_ENGINE_LEVELDB;
  assert_int_equal(bfh_check(g_db, &o, NULL, NULL, NULL), BFH_OK);
  assert_int_equal(bfh_keys(g_db, BFH_ENGINE_LEVELDB, NULL), 20000);
  free(before);
  free(after);
}

/* With a RocksDB IDENTITY too, the directory passes for RocksDB's (LevelDB's magic is RocksDB's
   format_version 0): RocksDB's repair runs on the stage. Whether it finds LevelDB's tables
   depends on where LevelDB left them; either it keeps every key (checked by the census before
   the swap) or the repair is refused with the directory as it was: never less. */
static void test_repair_rocksdb_of_leveldb_tables_all_or_nothing(void **state) {
  (void)state;
  make_leveldb(g_db, 20000);
  touch(g_db, "OPTIONS-000005", "");
  touch(g_db, "IDENTITY", "6f1f5c8e-6d3a-4a57-9d38-0d0f6b0b1a11\n");
  char *before = snapshot(g_db);
  bfh_options o;
  bfh_options_init(&o);
  o.engine = BFH_ENGINE_ROCKSDB;
  int rc = bfh_repair(g_db, &o, NULL);
  print_message("%d: %s\n", rc, rc == BFH_OK ? "repaired" : bfh_last_error(NULL));
  assert_false(stage_left());
  if (rc == BFH_OK) {
    o.read_only = 1;
    assert_int_equal(bfh_keys(g_db, BFH_ENGINE_ROCKSDB, NULL), 20000);
  } else {
    assert_non_null(strstr(bfh_last_error(NULL), "nothing changed"));
    char *after = snapshot(g_db);
    assert_string_equal(before, after);
    free(after);
    char p[700];
    snprintf(p, sizeof p, "%s/IDENTITY", g_db);
    unlink(p);
    assert_int_equal(leveldb_keys(g_db), 20000);
  }
  free(before);
}

/* ---- The fault sweep ------------------------------------------------------------------ */

typedef struct engine_case {
  bfh_engine engine;
  const char *name;
  void (*make)(const char *dir);
  uint64_t keys; /* of the default family */
} engine_case_t;

static void make_leveldb_small(const char *dir) {
  make_leveldb(dir, NKEYS);
}

/* RocksDB with two families that RocksDB's repair mends: both flushed, then more writes to
   the default family only, in the WAL. */
static void make_rocksdb_repairable(const char *dir) {
  const char *names[] = {"cf1"};
  rdbt_t t;
  assert_int_equal(rdbt_open(&t, dir, 0, names, 1), 0);
  char k[32], v[32];
  size_t vl;
  for (int round = 0; round < 2; round++) {
    rocksdb_writebatch_t *b = rocksdb_writebatch_create();
    for (int i = round * NKEYS / 2; i < (round + 1) * NKEYS / 2; i++) {
      size_t kl = kv(i, k, v, &vl);
      rocksdb_writebatch_put_cf(b, rdbt_cf(&t, 0), k, kl, v, vl);
      if (!round) rocksdb_writebatch_put_cf(b, rdbt_cf(&t, 1), k, kl, v, vl);
    }
    assert_int_equal(rdbt_write(&t, b), 0);
    rocksdb_writebatch_destroy(b);
    if (!round) assert_int_equal(rdbt_flush(&t, 0) | rdbt_flush(&t, 1), 0);
  }
  rdbt_close(&t);
}

static const engine_case_t cases[] = {
    {BFH_ENGINE_LSM, "lsm", make_own, NKEYS},
    {BFH_ENGINE_LEVELDB, "leveldb", make_leveldb_small, NKEYS},
    {BFH_ENGINE_ROCKSDB, "rocksdb", make_rocksdb_repairable, NKEYS},
};

static const env_op_t sweep_ops[] = {ENV_OP_OPEN,   ENV_OP_WRITE, ENV_OP_SYNC, ENV_OP_RENAME,
                                     ENV_OP_UNLINK, ENV_OP_READ,  ENV_OP_MKDIR};

static uint64_t keys_of(const engine_case_t *c, const char *dir) {
  return c->engine == BFH_ENGINE_LEVELDB ? leveldb_keys(dir) : bfh_keys(dir, c->engine, NULL);
}

static void sweep_engine(const engine_case_t *c) {
  /* One database, copied afresh for each run. */
  test_rmrf(g_work);
  c->make(g_work);
  bfh_options o;
  bfh_options_init(&o);
  o.engine = c->engine;
  env_t *io = env_create_faulty();
  assert_non_null(io);
  uint64_t counted[ENV_OP_KINDS] = {0};
  test_rmrf(g_db);
  assert_int_equal(test_copy_dir(g_work, g_db), 0);
  uint64_t start[ENV_OP_KINDS];
  for (int k = 0; k < ENV_OP_KINDS; k++) start[k] = env_op_count(io, (env_op_t)k);
  bfh_repair_report rep;
  if (bfh_internal_repair_with_io(g_db, &o, io, &rep) != BFH_OK)
    fail_msg("%s: repair without faults: %s", c->name, bfh_last_error(NULL));
  /* The old directory is kept whole in lost/, and reads as the database did. */
  assert_int_equal(rep.before_repair, 1);
  char old[700];
  snprintf(old, sizeof old, "%s/lost/before-repair-1", g_db);
  char *kept = snapshot(old), *orig = snapshot(g_work);
  assert_string_equal(kept, orig);
  free(kept);
  free(orig);
  for (int k = 0; k < ENV_OP_KINDS; k++) counted[k] = env_op_count(io, (env_op_t)k) - start[k];
  int runs = 0, refused = 0;
  for (size_t s = 0; s < sizeof sweep_ops / sizeof sweep_ops[0]; s++) {
    env_op_t op = sweep_ops[s];
    for (uint64_t n = 1; n <= counted[op]; n++) {
      test_rmrf(g_db);
      assert_int_equal(test_copy_dir(g_work, g_db), 0);
      char *before = snapshot(g_db);
      env_fail(io, op, n, 1);
      int rc = bfh_internal_repair_with_io(g_db, &o, io, NULL);
      env_fail_none(io);
      runs++;
      if (rc != BFH_OK) {
        refused++;
        char *after = snapshot(g_db);
        if (strcmp(before, after) != 0)
          fail_msg("%s: op %d #%llu failed (%s) and the directory changed:\nbefore\n%s\nafter\n%s",
                   c->name, (int)op, (unsigned long long)n, bfh_last_error(NULL), before, after);
        free(after);
      }
      free(before);
      /* Whatever the fault left (a stage it could not remove), the next repair finishes. */
      if (bfh_repair(g_db, &o, NULL) != BFH_OK)
        fail_msg("%s: repair after op %d #%llu: %s", c->name, (int)op, (unsigned long long)n,
                 bfh_last_error(NULL));
      assert_false(stage_left());
      assert_int_equal(keys_of(c, g_db), c->keys);
    }
  }
  print_message("%s: %d runs, %d failed and left the directory as it was\n", c->name, runs,
                refused);
  assert_true(refused > 0);
  env_destroy(io);
}

static void test_repair_fault_sweep(void **state) {
  (void)state;
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) sweep_engine(&cases[i]);
}

/* A database named through a symbolic link: the stage goes beside the directory it names, and
   the link still names the repaired database. */
static void test_repair_through_a_symlink(void **state) {
  (void)state;
  make_own(g_db);
  char link[700];
  snprintf(link, sizeof link, "%s/link", g_tmp);
  assert_int_equal(symlink(g_db, link), 0);
  bfh_options o;
  bfh_options_init(&o);
  bfh_repair_report rep;
  if (bfh_repair(link, &o, &rep) != BFH_OK) fail_msg("repair: %s", bfh_last_error(NULL));
  assert_int_equal(rep.before_repair, 1);
  struct stat sb;
  assert_int_equal(lstat(link, &sb), 0);
  assert_true(S_ISLNK(sb.st_mode));
  assert_false(stage_left());
  assert_int_equal(bfh_keys(link, BFH_ENGINE_LSM, NULL), NKEYS);
}

/* ---- The crash sweep ------------------------------------------------------------------ */

static int g_stop_at, g_steps;

static void stop_or_count(void *arg, int step) {
  (void)arg;
  g_steps = step;
  if (g_stop_at && step == g_stop_at) _exit(0);
}

static int lost_copies(const char *dir) {
  char p[700];
  snprintf(p, sizeof p, "%s/lost", dir);
  DIR *d = opendir(p);
  if (!d) return 0;
  int n = 0;
  struct dirent *de;
  while ((de = readdir(d))) n += !strncmp(de->d_name, "before-repair-", 14);
  closedir(d);
  return n;
}

static void test_repair_crash_sweep(void **state) {
  (void)state;
  test_rmrf(g_work);
  make_own(g_work);
  bfh_options o;
  bfh_options_init(&o);
  /* The steps of one repair. */
  test_rmrf(g_db);
  assert_int_equal(test_copy_dir(g_work, g_db), 0);
  char *pristine = snapshot(g_db);
  g_stop_at = 0;
  repair_stage_set_step_hook(stop_or_count, NULL);
  assert_int_equal(bfh_repair(g_db, &o, NULL), BFH_OK);
  int steps = g_steps;
  assert_true(steps > 10);
  int as_before = 0, as_repaired = 0;
  for (int s = 1; s <= steps; s++) {
    test_rmrf(g_db);
    assert_int_equal(test_copy_dir(g_work, g_db), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
      g_stop_at = s;
      bfh_repair(g_db, &o, NULL);
      _exit(1); /* the step was never reached */
    }
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    char *now = snapshot(g_db);
    if (!strcmp(now, pristine)) {
      as_before++;
    } else {
      /* From the swap on: the repaired database, with the old one in lost/ or beside it. */
      as_repaired++;
      assert_int_equal(bfh_keys(g_db, BFH_ENGINE_LSM, NULL), NKEYS);
    }
    free(now);
    g_stop_at = 0;
    assert_int_equal(bfh_repair(g_db, &o, NULL), BFH_OK);
    assert_false(stage_left());
    assert_int_equal(bfh_keys(g_db, BFH_ENGINE_LSM, NULL), NKEYS);
    assert_true(lost_copies(g_db) >= 1);
  }
  repair_stage_set_step_hook(NULL, NULL);
  print_message("%d crash points: %d read as before, %d as repaired\n", steps, as_before,
                as_repaired);
  assert_true(as_before > 0 && as_repaired > 0);
  free(pristine);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_repair_rocksdb_two_families_all_or_nothing, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_repair_leveldb_with_stray_options, setup, teardown),
      cmocka_unit_test_setup_teardown(test_repair_rocksdb_of_leveldb_tables_all_or_nothing, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_repair_through_a_symlink, setup, teardown),
      cmocka_unit_test_setup_teardown(test_repair_fault_sweep, setup, teardown),
      cmocka_unit_test_setup_teardown(test_repair_crash_sweep, setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

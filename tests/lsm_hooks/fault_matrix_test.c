/* The fault matrix: for each phase of the own engine (log append, memtable flush,
 * compaction, manifest write, CURRENT switch, filter sidecar write, value-index rebuild, and
 * the creation of a database), each kind of I/O call (open, read, write, sync, rename,
 * unlink, mkdir) and each error (EIO, ENOSPC, a short write, a failed fsync that loses the
 * unsynced pages), one fault is injected (util/env.h: the next call of that kind on a file
 * whose name matches the phase's pattern) while the database runs through the public API
 * with sync = 1. Every cell checks that:
 *   - the first call that fails returns BFH_E_IO with a message naming the file (and "No
 *     space left on device" for ENOSPC and short writes); a fault the engine absorbs by
 *     design (an obsolete file it could not delete, a filter it could not read back, which
 *     leaves the table to be scanned) fails no call and is counted as absorbed;
 *   - the database then either keeps working or refuses writes with an error;
 *   - while it is still open, and after a reopen with the real I/O layer, every
 *     acknowledged write is there (a write that failed may or may not be) and every value
 *     search, with every method, reports exactly the keys that hold the value.
 * The matrix (cells tried / passed / absorbed / not applicable) is printed; a cell shows its
 * worst run (FAIL, else ok, else abs). BFH-PARAMS (the value-filter parameters, bfh's own
 * file) is read at open (value-index rebuild row) and written at creation (database create
 * row) through the same I/O layer. Cells that do not apply are listed as n/a: the own engine
 * has no filter sidecar (its value filters are a meta block of each table, written by flush
 * and compaction; the LevelDB engine's sidecar files are the matrix of
 * fault_matrix_leveldb_test.c; both share fault_matrix_util.h), reads and unlinks do not
 * run out of space, and a short write or a lost fsync exists only for writes and syncs.
 * Every applicable cell must reach its fault: a cell whose fault never fires fails.
 *
 * Each cell starts from a copy of one template database (three L0 tables, so that the
 * flush of the cell's writes starts a compaction: one pass runs every phase) and runs
 * deterministically: flush and compaction are waited for (bfh_flush, wait-for-idle),
 * never timed.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "bfh.h"
#include "lsm/db.h"
#include "tests/env_fault.h"
#include "util/env.h"
#include "api/testbed.h"
#include "lsm_hooks/engines/lsm/engine_lsm.h"
#include "tests/lsm_hooks/fault_matrix_util.h"
#include "tests/test_util.h"
#include "util/random.h"

#define TEMPLATE_PUTS 60 /* writes per template table */
#define MAX_CELLS 128

/* ---- phases, kinds, errors, cells -------------------------------------------------------- */

enum {
  PH_LOG,
  PH_FLUSH,
  PH_COMPACTION,
  PH_MANIFEST,
  PH_CURRENT,
  PH_SIDECAR,
  PH_REBUILD,
  PH_CREATE,
  PHASES
};
static const char *const phase_names[PHASES] = {
    "log append",     "memtable flush",       "compaction",          "manifest write",
    "CURRENT switch", "filter sidecar write", "value-index rebuild", "database create"};

/* When the fault is armed: before opening a new database, before reopening the template,
   once the template is open (before the cell's writes, flush and compaction), or before
   reopening the template after writes that only its log holds (recovery replays it). */
typedef enum action { ACT_CREATE, ACT_REOPEN, ACT_INGEST, ACT_RECOVER } action_t;

typedef struct target {
  int phase;
  env_op_t op;
  action_t act;
  const char *pattern; /* NULL: every path; "@out": the compaction's first output table */
  uint64_t n;          /* the nth matching call fails */
} target_t;

/* The (phase, kind) pairs that exist in the own engine, with the file that reaches them.
   A cell with several targets (a manifest edit of a flush and of a compaction, the first
   or a later write of a file) passes when every one does. Tables are read with pread (a read
   call): the first read of a table file fails in the compaction cell (its inputs) and in the
   rebuild cell (a table's footer at the reopen). */
static const target_t targets[] = {
    {PH_LOG, ENV_OP_OPEN, ACT_INGEST, "*.log", 1},  /* the new log of a memtable switch */
    {PH_LOG, ENV_OP_READ, ACT_RECOVER, "*.log", 1}, /* replayed at open */
    {PH_LOG, ENV_OP_WRITE, ACT_INGEST, "*.log", 1},
    {PH_LOG, ENV_OP_WRITE, ACT_INGEST, "*.log", 5}, /* after acknowledged writes */
    {PH_LOG, ENV_OP_SYNC, ACT_INGEST, "*.log", 1},
    {PH_LOG, ENV_OP_SYNC, ACT_INGEST, "*.log", 5},
    {PH_FLUSH, ENV_OP_OPEN, ACT_INGEST, "*.sst", 1},
    {PH_FLUSH, ENV_OP_WRITE, ACT_INGEST, "*.sst", 1},
    {PH_FLUSH, ENV_OP_WRITE, ACT_INGEST, "*.sst", 3}, /* a later block of the table */
    {PH_FLUSH, ENV_OP_SYNC, ACT_INGEST, "*.sst", 1},
    {PH_FLUSH, ENV_OP_UNLINK, ACT_INGEST, "*.log", 1}, /* the log the flush made obsolete */
    {PH_FLUSH, ENV_OP_OPEN, ACT_RECOVER, "*.sst", 1},  /* the table of a log replayed */
    {PH_FLUSH, ENV_OP_WRITE, ACT_RECOVER, "*.sst", 1},
    {PH_FLUSH, ENV_OP_SYNC, ACT_RECOVER, "*.sst", 1},
    {PH_COMPACTION, ENV_OP_OPEN, ACT_INGEST, "@out", 1},
    {PH_COMPACTION, ENV_OP_WRITE, ACT_INGEST, "@out", 1},
    {PH_COMPACTION, ENV_OP_WRITE, ACT_INGEST, "@out", 3},
    {PH_COMPACTION, ENV_OP_SYNC, ACT_INGEST, "@out", 1},
    {PH_COMPACTION, ENV_OP_READ, ACT_INGEST, "*.sst", 1},
    {PH_COMPACTION, ENV_OP_UNLINK, ACT_INGEST, "*.sst", 1},   /* the inputs, once obsolete */
    {PH_MANIFEST, ENV_OP_OPEN, ACT_REOPEN, "MANIFEST-*", 1},  /* the new manifest of an open */
    {PH_MANIFEST, ENV_OP_READ, ACT_REOPEN, "MANIFEST-*", 1},  /* recovery */
    {PH_MANIFEST, ENV_OP_WRITE, ACT_INGEST, "MANIFEST-*", 1}, /* the flush's edit */
    {PH_MANIFEST, ENV_OP_WRITE, ACT_INGEST, "MANIFEST-*", 2}, /* the compaction's edit */
    {PH_MANIFEST, ENV_OP_SYNC, ACT_INGEST, "MANIFEST-*", 1},
    {PH_MANIFEST, ENV_OP_SYNC, ACT_INGEST, "MANIFEST-*", 2},
    {PH_CURRENT, ENV_OP_OPEN, ACT_REOPEN, "CURRENT.tmp", 1},
    {PH_CURRENT, ENV_OP_READ, ACT_REOPEN, "CURRENT", 1},
    {PH_CURRENT, ENV_OP_WRITE, ACT_REOPEN, "CURRENT.tmp", 1},
    {PH_CURRENT, ENV_OP_SYNC, ACT_REOPEN, "CURRENT.tmp", 1},
    {PH_CURRENT, ENV_OP_RENAME, ACT_REOPEN, "CURRENT.tmp", 1},
    {PH_CURRENT, ENV_OP_UNLINK, ACT_REOPEN, "MANIFEST-*", 1}, /* the manifest replaced */
    {PH_REBUILD, ENV_OP_OPEN, ACT_REOPEN, "*.sst", 1},
    {PH_REBUILD, ENV_OP_READ, ACT_REOPEN, "*.sst", 1},
    {PH_REBUILD, ENV_OP_OPEN, ACT_REOPEN, "BFH-PARAMS", 1}, /* the filter parameters */
    {PH_REBUILD, ENV_OP_READ, ACT_REOPEN, "BFH-PARAMS", 1},
    {PH_CREATE, ENV_OP_MKDIR, ACT_CREATE, NULL, 1},
    {PH_CREATE, ENV_OP_OPEN, ACT_CREATE, NULL, 1},
    {PH_CREATE, ENV_OP_WRITE, ACT_CREATE, NULL, 1},
    {PH_CREATE, ENV_OP_SYNC, ACT_CREATE, NULL, 1},
    {PH_CREATE, ENV_OP_RENAME, ACT_CREATE, NULL, 1},
    {PH_CREATE, ENV_OP_OPEN, ACT_CREATE, "BFH-PARAMS.tmp", 1}, /* written after the engine */
    {PH_CREATE, ENV_OP_WRITE, ACT_CREATE, "BFH-PARAMS.tmp", 1},
    {PH_CREATE, ENV_OP_SYNC, ACT_CREATE, "BFH-PARAMS.tmp", 1},
    {PH_CREATE, ENV_OP_RENAME, ACT_CREATE, "BFH-PARAMS.tmp", 1},
};
#define NTARGETS (sizeof targets / sizeof targets[0])

/* ---- the fixture ---------------------------------------------------------------------- */

typedef struct fixture {
  char base[4096];     /* the test's directory */
  char templ[4200];    /* the template database */
  model_t templ_model; /* what it holds */
  char out_name[64];   /* its compaction's first output table, e.g. "000012.sst" */
  outcome_t matrix[PHASES][NKINDS][ENV_ERRORS];
  char failures[8192]; /* what the failed cells said */
  size_t failures_len;
} fixture_t;

static void options(bfh_options *o) {
  bfh_options_init(o);
  o->sync = 1;
  o->value_filter_bits = 8192;
  o->memtable_bytes = 1u << 20; /* switched by bfh_flush only */
}

static int copy_dir(const char *from, const char *to) {
  if (mkdir(to, 0755) != 0) return -1;
  DIR *d = opendir(from);
  if (!d) return -1;
  struct dirent *e;
  int rc = 0;
  while (rc == 0 && (e = readdir(d)) != NULL) {
    if (e->d_name[0] == '.') continue;
    char a[8192], b[8192];
    snprintf(a, sizeof a, "%s/%s", from, e->d_name);
    snprintf(b, sizeof b, "%s/%s", to, e->d_name);
    rc = test_copy_file(a, b, UINT64_MAX);
  }
  closedir(d);
  return rc;
}

/* ---- the template ------------------------------------------------------------------------ */

static lsm_db_t *own_db(bfh_db *db) {
  return engine_lsm_db(bfh_internal_engine(db));
}

static int wait_idle(bfh_db *db, char *msg, size_t cap) {
  err_t e;
  err_clear(&e);
  int rc = engine_lsm_wait_idle(bfh_internal_engine(db), &e);
  if (rc != BFH_OK) snprintf(msg, cap, "%s", e.msg);
  return rc;
}

/* Lists the table numbers of dir into nums (at most cap); returns the count. */
static size_t list_tables(const char *dir, uint64_t *nums, size_t cap) {
  DIR *d = opendir(dir);
  size_t n = 0;
  if (!d) return 0;
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    size_t l = strlen(e->d_name);
    if (l > 4 && strcmp(e->d_name + l - 4, ".sst") == 0 && n < cap)
      nums[n++] = strtoull(e->d_name, NULL, 10);
  }
  closedir(d);
  return n;
}

static int fixture_setup(void **state) {
  fixture_t *fx = calloc(1, sizeof *fx);
  if (!fx) return -1;
  *state = fx;
  if (test_tmpdir_create(fx->base, sizeof fx->base, "fault_matrix") != 0) return -1;
  snprintf(fx->templ, sizeof fx->templ, "%s/template", fx->base);
  bfh_options o;
  options(&o);
  o.sync = 0;
  bfh_db *db;
  if (bfh_open(fx->templ, &o, &db) != BFH_OK) return -1;
  rng_t r;
  rng_init(&r, 20261123);
  char key[32], val[64], msg[ERR_MSG_BYTES];
  lsm_stats_t st;
  int rounds = 0;
  do {
    for (int i = 0; i < TEMPLATE_PUTS; i++) {
      unsigned id = (unsigned)rng_below(&r, NKEYS), v = 1 + (unsigned)rng_below(&r, NVALS);
      int del = rng_below(&r, 10) == 0;
      int rc = del ? bfh_delete(db, key, key_of(key, id))
                   : bfh_put(db, key, key_of(key, id), val, value_of(val, v));
      if (rc != BFH_OK) return -1;
      fx->templ_model.v[id] = del ? 0 : (uint8_t)v;
    }
    if (bfh_flush(db) != BFH_OK || wait_idle(db, msg, sizeof msg) != BFH_OK) return -1;
    lsm_get_stats(own_db(db), &st);
  } while (st.files_per_level[0] < 3 && ++rounds < 20);
  if (bfh_close(db) != BFH_OK || st.files_per_level[0] != 3) return -1;
  return 0;
}

static int fixture_teardown(void **state) {
  fixture_t *fx = *state;
  if (!fx) return 0;
  int rc = fx->base[0] ? test_rmrf(fx->base) : 0;
  free(fx);
  return rc;
}

/* ---- one cell -------------------------------------------------------------------------- */

static outcome_t run_cell(fixture_t *fx, int cell_no, const target_t *t, env_error_t error,
                          int sticky, char *why, size_t why_cap) {
  cell_run_t c = {{0}};
  char dir[4300], path[4400];
  snprintf(dir, sizeof dir, "%s/cell%03d", fx->base, cell_no);
  model_t m = fx->templ_model;
  if (t->act == ACT_CREATE) {
    memset(&m, 0, sizeof m);
    check(&c, mkdir(dir, 0755) == 0, "mkdir %s", dir);
    snprintf(path, sizeof path, "%s/db", dir);
  } else {
    check(&c, copy_dir(fx->templ, dir) == 0, "copy the template to %s", dir);
    snprintf(path, sizeof path, "%s", dir);
  }
  env_t *io = env_create_faulty();
  check(&c, io != NULL, "no memory for an io");
  env_fault_t f = {
      .op = t->op,
      .n = t->n,
      .sticky = sticky,
      .error = error,
      .pattern = t->pattern && strcmp(t->pattern, "@out") == 0 ? fx->out_name : t->pattern};
  bfh_options o;
  options(&o);
  rng_t r;
  rng_init(&r, 1000 + (uint64_t)cell_no);
  int first_rc = BFH_OK;
  char first_msg[ERR_MSG_BYTES] = "";
  bfh_db *db = NULL;
  if (!c.msg[0] && t->act == ACT_RECOVER) cell_write_before_recovery(&c, path, &o, &m, &r);
  if (!c.msg[0]) {
    db = cell_open(&c, path, &o, io, &f, t->act == ACT_INGEST, &first_rc, first_msg);
    if (db) {
      ingest(&c, db, &m, &r, wait_idle, &first_rc, first_msg);
      cell_write_after(&c, db, &m, &r, first_rc);
      check_db(&c, db, &m, 0, sticky, "before reopen", NULL, NULL);
      (void)bfh_close(db); /* its status repeats the first error */
    }
  }
  uint64_t fired = env_faults_injected(io);
  char fault_path[4096];
  env_last_fault_path(io, fault_path, sizeof fault_path);
  env_destroy(io);
  check(&c, fired > 0, "the fault was never reached");
  return cell_verdict(&c, dir, path, &o, &m, fault_path, sticky, error, first_rc, first_msg, why,
                      why_cap);
}

/* The first compaction output of the template's next flush (a dry run without faults). */
static void find_compaction_output(void **state) {
  fixture_t *fx = *state;
  char dir[4300], msg[ERR_MSG_BYTES];
  snprintf(dir, sizeof dir, "%s/dry", fx->base);
  assert_int_equal(copy_dir(fx->templ, dir), 0);
  uint64_t before[64], after[64];
  size_t nb = list_tables(dir, before, 64);
  bfh_options o;
  options(&o);
  bfh_db *db;
  assert_int_equal(bfh_open(dir, &o, &db), BFH_OK);
  model_t m = fx->templ_model;
  rng_t r;
  rng_init(&r, 1);
  cell_run_t c = {{0}};
  int first_rc = BFH_OK;
  char first_msg[ERR_MSG_BYTES];
  ingest(&c, db, &m, &r, wait_idle, &first_rc, first_msg);
  assert_int_equal(first_rc, BFH_OK);
  assert_int_equal(wait_idle(db, msg, sizeof msg), BFH_OK);
  lsm_stats_t st;
  lsm_get_stats(own_db(db), &st);
  assert_true(st.compactions >= 1);
  assert_int_equal(bfh_close(db), BFH_OK);
  size_t na = list_tables(dir, after, 64);
  uint64_t first = 0;
  for (size_t i = 0; i < na; i++) {
    int old = 0;
    for (size_t j = 0; j < nb; j++) old |= after[i] == before[j];
    if (!old && (!first || after[i] < first)) first = after[i];
  }
  assert_true(first != 0);
  snprintf(fx->out_name, sizeof fx->out_name, "%06llu.sst", (unsigned long long)first);
  assert_int_equal(test_rmrf(dir), 0);
}

/* Runs every cell (sticky: the fault is a dead disk, every later matching call of the kind
   fails too, until the database is closed) and prints the matrix. */
static void run_matrix(void **state, int sticky) {
  fixture_t *fx = *state;
  find_compaction_output(state);
  int cell_no = 0, runs = 0, failed = 0;
  for (size_t i = 0; i < NTARGETS; i++) {
    const target_t *t = &targets[i];
    for (int e = 0; e < ENV_ERRORS; e++) {
      if (!error_applies(t->op, (env_error_t)e)) continue;
      char why[1024];
      outcome_t out = run_cell(fx, cell_no++, t, (env_error_t)e, sticky, why, sizeof why);
      outcome_t *cell = &fx->matrix[t->phase][kind_index(t->op)][e];
      cell_merge(cell, out);
      runs++;
      if (out == CELL_FAILED) {
        failed++;
        failures_add(fx->failures, sizeof fx->failures, &fx->failures_len, "  %s / %s / %s: %s\n",
                     phase_names[t->phase], kind_names[kind_index(t->op)], error_names[e], why);
      }
    }
  }
  /* The matrix: ok = a clear error and every check passed; abs = absorbed (no call failed,
     every check passed); FAIL; n/a. */
  int tried = matrix_report("own engine", sticky, runs, fx->matrix, PHASES, phase_names, NULL);
  print_message(
      "n/a: filter sidecar write (the own engine keeps each value filter in its table,\n"
      "  written by flush and compaction; the LevelDB engine's .vf sidecars are the\n"
      "  matrix of fault_matrix_leveldb_test);\n"
      "  ENOSPC on reads and unlinks; short writes and lost fsyncs outside writes and syncs.\n"
      "abs: no call failed by design (an obsolete file left for the next cleanup, a\n"
      "  filter not read back: its table is scanned by every search).\n");
  if (failed) fail_msg("%d runs failed:\n%s", failed, fx->failures);
  assert_true(tried >= 50); /* the matrix ran */
}

static void test_fault_matrix_one_fault_keeps_acknowledged_writes(void **state) {
  run_matrix(state, 0);
}

static void test_fault_matrix_dead_disk_keeps_acknowledged_writes(void **state) {
  run_matrix(state, 1);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_fault_matrix_one_fault_keeps_acknowledged_writes,
                                      fixture_setup, fixture_teardown),
      cmocka_unit_test_setup_teardown(test_fault_matrix_dead_disk_keeps_acknowledged_writes,
                                      fixture_setup, fixture_teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

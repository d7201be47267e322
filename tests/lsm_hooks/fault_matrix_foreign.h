/* The fault matrix of an engine over another store's files (the LevelDB engine:
 * fault_matrix_leveldb_test.c; the RocksDB engine: fault_matrix_rocksdb_test.c), the companion
 * of fault_matrix_test.c (the own engine), with its cells, checks (fault_matrix_util.h) and
 * printed matrix, over the phases in which bfh's own I/O takes part. bfh_internal_open_io
 * routes the engine's own file accesses through a faulty env_t (util/env.h); the store's own
 * files are written through its Env, which bfh cannot hook. The phases, actions, fixture and
 * cells are the same for every such engine; each test file names its engine and the (phase,
 * kind, file) targets its I/O reaches (a foreign_engine_t).
 *
 * Each cell: one fault (or a dead disk: the fault repeats until close) on the next call of a
 * kind on a file whose name matches the target's pattern, while the database runs through the
 * public API with sync = 1: the first failed call returns BFH_E_IO naming the file (and "No
 * space left on device" for ENOSPC and short writes), or nothing fails (absorbed by design);
 * the database keeps working or refuses writes with an error; before and after a reopen with
 * the real I/O layer every acknowledged write is there and every search, by every method,
 * reports exactly the keys holding the value: a failing read gives an error, never a wrong
 * answer. Every cell must reach its fault. No timing: the cells' writes end with bfh_flush
 * (which indexes the new table itself); the cache files of in-memory leaves are written at
 * close at the latest; the template holds one table, so that no cell reaches a level-0
 * compaction trigger (the gets of the checks may start a seek compaction: its outputs are
 * indexed like any table, and the checks hold whenever it runs).
 *
 * Header-only; include after cmocka.h. Each test is registered with
 * cmocka_unit_test_prestate_setup_teardown(test, fixture_setup, fixture_teardown, &engine).
 */
#ifndef BFH_TESTS_LSM_HOOKS_FAULT_MATRIX_FOREIGN_H
#define BFH_TESTS_LSM_HOOKS_FAULT_MATRIX_FOREIGN_H

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "bfh.h"
#include "api/testbed.h"
#include "tests/lsm_hooks/fault_matrix_util.h"
#include "tests/test_util.h"
#include "tests/env_fault.h"
#include "util/env.h"
#include "util/random.h"

#define TEMPLATE_PUTS 80 /* writes of the template's one table */

/* ---- phases, kinds, errors, cells -------------------------------------------------------- */

enum {
  PH_LOG,
  PH_FLUSH,
  PH_COMPACTION,
  PH_MANIFEST,
  PH_CURRENT,
  PH_SIDECAR_MEM,
  PH_SIDECAR_DISK,
  PH_REBUILD,
  PH_CREATE,
  PHASES
};
static const char *const phase_names[PHASES] = {
    "log append",        "memtable flush",      "compaction",
    "manifest write",    "CURRENT switch",      "sidecar (in memory)",
    "sidecar (on disk)", "value-index rebuild", "database create"};

/* When the fault is armed: before creating a database; before reopening the template (with
   its cache files, without them, or with a stray cache file added); once the template is
   open (before the cell's writes and flush). */
typedef enum action {
  ACT_CREATE,
  ACT_REOPEN,
  ACT_REOPEN_NOCACHE,
  ACT_REOPEN_STRAY,
  ACT_REOPEN_STALE, /* every cache file damaged: deleted and rebuilt at open */
  ACT_INGEST,
  ACT_RECOVER /* before reopening the template after writes that only its log holds */
} action_t;

typedef struct target {
  int phase;
  env_op_t op;
  action_t act;
  const char *pattern; /* NULL: every path */
  int on_disk;         /* leaves on disk (bfh_options.leaves_on_disk) */
} target_t;

/* The targets every such engine shares after its log rows: its MANIFEST and CURRENT read
   before the store's open, the indexer's reads of a new table (TABLES: the pattern of its
   table files), the filter cache files, the value-index rebuild at open, the creation. */
// clang-format off
#define FOREIGN_TARGETS(TABLES)                                     \
    {PH_MANIFEST, ENV_OP_OPEN, ACT_REOPEN, "MANIFEST-*", 0},        \
    {PH_MANIFEST, ENV_OP_READ, ACT_REOPEN, "MANIFEST-*", 0},        \
    {PH_CURRENT, ENV_OP_OPEN, ACT_REOPEN, "CURRENT", 0},            \
    {PH_CURRENT, ENV_OP_READ, ACT_REOPEN, "CURRENT", 0},            \
    /* the indexer reads the new table */                           \
    {PH_FLUSH, ENV_OP_OPEN, ACT_INGEST, TABLES, 0},                 \
    {PH_FLUSH, ENV_OP_READ, ACT_INGEST, TABLES, 0},                 \
    {PH_FLUSH, ENV_OP_OPEN, ACT_INGEST, TABLES, 1},                 \
    {PH_FLUSH, ENV_OP_READ, ACT_INGEST, TABLES, 1},                 \
    {PH_SIDECAR_MEM, ENV_OP_OPEN, ACT_INGEST, "*.vf.tmp", 0},       \
    {PH_SIDECAR_MEM, ENV_OP_WRITE, ACT_INGEST, "*.vf.tmp", 0},      \
    {PH_SIDECAR_MEM, ENV_OP_SYNC, ACT_INGEST, "*.vf.tmp", 0},       \
    /* the rename's */                                              \
    {PH_SIDECAR_MEM, ENV_OP_SYNC, ACT_INGEST, LEAF_CACHE_DIR, 0},   \
    {PH_SIDECAR_MEM, ENV_OP_RENAME, ACT_INGEST, "*.vf.tmp", 0},     \
    {PH_SIDECAR_DISK, ENV_OP_OPEN, ACT_INGEST, "*.vf.tmp", 1},      \
    {PH_SIDECAR_DISK, ENV_OP_WRITE, ACT_INGEST, "*.vf.tmp", 1},     \
    {PH_SIDECAR_DISK, ENV_OP_SYNC, ACT_INGEST, "*.vf.tmp", 1},      \
    {PH_SIDECAR_DISK, ENV_OP_SYNC, ACT_INGEST, LEAF_CACHE_DIR, 1},  \
    {PH_SIDECAR_DISK, ENV_OP_RENAME, ACT_INGEST, "*.vf.tmp", 1},    \
    {PH_REBUILD, ENV_OP_OPEN, ACT_REOPEN, "BFH-PARAMS", 0},         \
    {PH_REBUILD, ENV_OP_READ, ACT_REOPEN, "BFH-PARAMS", 0},         \
    {PH_REBUILD, ENV_OP_MKDIR, ACT_REOPEN, LEAF_CACHE_DIR, 0},      \
    /* the cache load */                                            \
    {PH_REBUILD, ENV_OP_OPEN, ACT_REOPEN, "*.vf", 0},               \
    {PH_REBUILD, ENV_OP_READ, ACT_REOPEN, "*.vf", 0},               \
    {PH_REBUILD, ENV_OP_OPEN, ACT_REOPEN, "*.vf", 1},               \
    {PH_REBUILD, ENV_OP_READ, ACT_REOPEN, "*.vf", 1},               \
    /* the table reads */                                           \
    {PH_REBUILD, ENV_OP_OPEN, ACT_REOPEN_NOCACHE, TABLES, 0},       \
    {PH_REBUILD, ENV_OP_READ, ACT_REOPEN_NOCACHE, TABLES, 0},       \
    {PH_REBUILD, ENV_OP_OPEN, ACT_REOPEN_NOCACHE, TABLES, 1},       \
    {PH_REBUILD, ENV_OP_READ, ACT_REOPEN_NOCACHE, TABLES, 1},       \
    /* the rebuilt leaf */                                          \
    {PH_REBUILD, ENV_OP_WRITE, ACT_REOPEN_NOCACHE, "*.vf.tmp", 1},  \
    /* a stray cache file */                                        \
    {PH_REBUILD, ENV_OP_UNLINK, ACT_REOPEN_STRAY, "*.vf", 0},       \
    /* a damaged one */                                             \
    {PH_REBUILD, ENV_OP_UNLINK, ACT_REOPEN_STALE, "*.vf", 0},       \
    {PH_REBUILD, ENV_OP_UNLINK, ACT_REOPEN_STALE, "*.vf", 1},       \
    /* the database directory */                                    \
    {PH_CREATE, ENV_OP_MKDIR, ACT_CREATE, "db", 0},                 \
    {PH_CREATE, ENV_OP_MKDIR, ACT_CREATE, LEAF_CACHE_DIR, 0},       \
    {PH_CREATE, ENV_OP_OPEN, ACT_CREATE, "BFH-PARAMS.tmp", 0},      \
    {PH_CREATE, ENV_OP_WRITE, ACT_CREATE, "BFH-PARAMS.tmp", 0},     \
    {PH_CREATE, ENV_OP_SYNC, ACT_CREATE, "BFH-PARAMS.tmp", 0},      \
    /* the directory, after the rename */                           \
    {PH_CREATE, ENV_OP_SYNC, ACT_CREATE, "db", 0},                  \
    {PH_CREATE, ENV_OP_RENAME, ACT_CREATE, "BFH-PARAMS.tmp", 0},
// clang-format on

/* ---- the engine ------------------------------------------------------------------------ */

typedef struct foreign_engine {
  const char *name;          /* in the printed matrix: "LevelDB engine" */
  int engine;                /* bfh_options.engine */
  const char *tmpdir;        /* the test directory's name */
  const char *table_pattern; /* its table files ("*.ldb"): a dead disk there may fail searches */
  const char *own_files;     /* why the compaction row is n/a (its files are the store's) */
  const char *na_text;       /* printed after the matrix: the n/a and abs cells explained */
  const target_t *targets;   /* the (phase, kind) pairs where bfh's own I/O runs */
  size_t ntargets;
  int (*sync)(engine_t *e, err_t *err); /* index every live table not indexed yet */
  int min_tried;                        /* cells the matrix must have tried */
} foreign_engine_t;

/* ---- the fixture ---------------------------------------------------------------------- */

typedef struct fixture {
  const foreign_engine_t *fe;
  char base[4096];     /* the test's directory */
  char templ[4200];    /* the template database */
  model_t templ_model; /* what it holds */
  outcome_t matrix[PHASES][NKINDS][ENV_ERRORS];
  char failures[8192]; /* what the failed cells said */
  size_t failures_len;
} fixture_t;

static inline void options(const foreign_engine_t *fe, bfh_options *o, int on_disk) {
  bfh_options_init(o);
  o->engine = fe->engine;
  o->sync = 1;
  o->value_filter_bits = 8192;
  o->memtable_bytes = 1u << 20; /* switched by bfh_flush only */
  o->leaves_on_disk = on_disk ? BFH_LEAVES_ON_DISK : BFH_LEAVES_IN_MEMORY;
}

/* Calls fn on the path of every file of dir/bfh-filters (the cache files); returns how many,
   or a negative number if the directory cannot be read or fn failed on one. */
static inline int for_each_cache(const char *dir, int (*fn)(const char *path)) {
  char cdir[4400];
  snprintf(cdir, sizeof cdir, "%s/%s", dir, LEAF_CACHE_DIR);
  DIR *d = opendir(cdir);
  if (!d) return -1;
  struct dirent *e;
  int n = 0;
  while ((e = readdir(d)) != NULL) {
    if (e->d_name[0] == '.') continue;
    char p[8192];
    snprintf(p, sizeof p, "%s/%s", cdir, e->d_name);
    if (fn(p) != 0) n = -1000;
    n++;
  }
  closedir(d);
  return n;
}

/* Removes every cache file of dir; returns how many. */
static inline int remove_caches(const char *dir) {
  return for_each_cache(dir, remove);
}

/* The tables a view lists that have no leaf (-1 if no view could be taken). */
static inline int tables_without_leaf(bfh_db *db) {
  engine_t *e = bfh_internal_engine(db);
  engine_view_t *v = NULL;
  err_t err;
  err_clear(&err);
  if (e->ops->view_acquire(e, &v, &err) != BFH_OK) return -1;
  const engine_table_t *t;
  size_t n = e->ops->view_tables(v, &t);
  int missing = 0;
  for (size_t i = 0; i < n; i++)
    missing += !value_index_contains(bfh_internal_index(db), t[i].number);
  e->ops->view_release(e, v);
  return missing;
}

/* Flips a byte of the filter of a cache file (its checksum then fails). */
static inline int damage_cache(const char *path) {
  return test_file_xor_byte(path, LEAF_CACHE_HEADER_BYTES + 40, 0x5a);
}

/* Damages every cache file of dir; returns how many. */
static inline int damage_caches(const char *dir) {
  return for_each_cache(dir, damage_cache);
}

/* ---- the template ------------------------------------------------------------------------ */

/* The test's state starts as its foreign_engine_t (cmocka_unit_test_prestate_setup_teardown). */
static inline int fixture_setup(void **state) {
  const foreign_engine_t *fe = *state;
  fixture_t *fx = calloc(1, sizeof *fx);
  if (!fx) return -1;
  *state = fx;
  fx->fe = fe;
  if (test_tmpdir_create(fx->base, sizeof fx->base, fe->tmpdir) != 0) return -1;
  snprintf(fx->templ, sizeof fx->templ, "%s/template", fx->base);
  bfh_options o;
  options(fe, &o, 0);
  o.sync = 0;
  bfh_db *db;
  if (bfh_open(fx->templ, &o, &db) != BFH_OK) return -1;
  rng_t r;
  rng_init(&r, 20261123);
  char key[32], val[64];
  for (int i = 0; i < TEMPLATE_PUTS; i++) {
    unsigned id = (unsigned)rng_below(&r, NKEYS), v = 1 + (unsigned)rng_below(&r, NVALS);
    int del = rng_below(&r, 10) == 0;
    int rc = del ? bfh_delete(db, key, key_of(key, id))
                 : bfh_put(db, key, key_of(key, id), val, value_of(val, v));
    if (rc != BFH_OK) return -1;
    fx->templ_model.v[id] = del ? 0 : (uint8_t)v;
  }
  if (bfh_flush(db) != BFH_OK) return -1;
  if (bfh_close(db) != BFH_OK) return -1; /* writes the table's cache file */
  /* The template must hold cache files for the cells that load them. */
  char cdir[4400];
  snprintf(cdir, sizeof cdir, "%s/%s", fx->templ, LEAF_CACHE_DIR);
  DIR *d = opendir(cdir);
  if (!d) return -1;
  int caches = 0;
  struct dirent *e;
  while ((e = readdir(d)) != NULL) caches += strstr(e->d_name, ".vf") != NULL;
  closedir(d);
  return caches >= 1 ? 0 : -1;
}

static inline int fixture_teardown(void **state) {
  fixture_t *fx = *state;
  if (!fx) return 0;
  int rc = fx->base[0] ? test_rmrf(fx->base) : 0;
  free(fx);
  return rc;
}

/* ---- one cell -------------------------------------------------------------------------- */

static inline outcome_t run_cell(fixture_t *fx, int cell_no, const target_t *t, env_error_t error,
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
    check(&c, test_copy_dir(fx->templ, dir) == 0, "copy the template to %s", dir);
    snprintf(path, sizeof path, "%s", dir);
  }
  if (!c.msg[0] && t->act == ACT_REOPEN_NOCACHE)
    check(&c, remove_caches(dir) >= 1, "remove the cache files of %s", dir);
  if (!c.msg[0] && t->act == ACT_REOPEN_STALE)
    check(&c, damage_caches(dir) >= 1, "damage the cache files of %s", dir);
  if (!c.msg[0] && t->act == ACT_REOPEN_STRAY) {
    char stray[4500];
    snprintf(stray, sizeof stray, "%s/%s/999999.vf", dir, LEAF_CACHE_DIR);
    FILE *sf = fopen(stray, "w");
    check(&c, sf && fputs("stray", sf) >= 0 && fclose(sf) == 0, "write %s", stray);
  }
  env_t *io = env_create_faulty();
  check(&c, io != NULL, "no memory for an io");
  env_fault_t f = {.op = t->op, .n = 1, .sticky = sticky, .error = error, .pattern = t->pattern};
  bfh_options o;
  options(fx->fe, &o, t->on_disk);
  rng_t r;
  rng_init(&r, 1000 + (uint64_t)cell_no);
  int first_rc = BFH_OK;
  char first_msg[ERR_MSG_BYTES] = "";
  bfh_db *db = NULL;
  if (!c.msg[0] && t->act == ACT_RECOVER) cell_write_before_recovery(&c, path, &o, &m, &r);
  if (!c.msg[0]) {
    db = cell_open(&c, path, &o, io, &f, t->act == ACT_INGEST, &first_rc, first_msg);
    if (db) {
      ingest(&c, db, &m, &r, NULL, &first_rc, first_msg);
      cell_write_after(&c, db, &m, &r, first_rc);
      /* A search that must read a table or a log it cannot read fails, with a message
         naming the file (the cell's error if none came before); a fault on any other file
         of bfh's fails no search. */
      int log = t->pattern && strcmp(t->pattern, "*.log") == 0;
      int tolerate =
          (sticky && t->pattern && strcmp(t->pattern, fx->fe->table_pattern) == 0) || log;
      check_db(&c, db, &m, 0, tolerate, "before reopen", &first_rc, first_msg);
      if (t->phase == PH_SIDECAR_DISK) {
        /* The leaf whose file was not written was never added (the table was scanned);
           with one fault, the next sync writes it and adds the leaf. */
        index_sync_stats_t st;
        index_sync_get_stats(bfh_internal_sync(db), &st);
        check(&c, st.cache_write_failures >= 1, "no cache write failure was counted");
        if (!sticky) {
          /* The engine may be compacting still: a table listed after the sync has no leaf
             until the next one. Sync until every listed table has a leaf (a table whose
             cache file is never written would exhaust the attempts). */
          int missing = -1;
          for (int attempt = 0; attempt < 100 && missing != 0 && !c.msg[0]; attempt++) {
            err_t se;
            err_clear(&se);
            check(&c, fx->fe->sync(bfh_internal_engine(db), &se) == BFH_OK, "sync: %s", se.msg);
            missing = tables_without_leaf(db);
          }
          check(&c, missing == 0, "a listed table without a leaf after a sync");
        }
      }
      (void)bfh_close(db); /* the cache files of in-memory leaves are written here */
    }
  }
  uint64_t fired = env_faults_injected(io);
  char fault_path[4096];
  env_last_fault_path(io, fault_path, sizeof fault_path);
  /* A power loss after the close: bfh's files written through io (cache files, BFH-PARAMS)
     lose what was not synced (the engine's own files are not written through io). */
  err_t pe;
  err_clear(&pe);
  check(&c, env_drop_unsynced(io, &pe) == BFH_OK, "power loss: %s", pe.msg);
  env_destroy(io);
  check(&c, fired > 0, "the fault was never reached");
  return cell_verdict(&c, dir, path, &o, &m, fault_path, sticky, error, first_rc, first_msg, why,
                      why_cap);
}

/* Runs every cell (sticky: a dead disk, every later matching call of the kind fails too,
   until the database is closed) and prints the matrix. */
static inline void run_matrix(void **state, int sticky) {
  fixture_t *fx = *state;
  int cell_no = 0, runs = 0, failed = 0;
  const foreign_engine_t *fe = fx->fe;
  for (size_t i = 0; i < fe->ntargets; i++) {
    const target_t *t = &fe->targets[i];
    for (int e = 0; e < ENV_ERRORS; e++) {
      if (!error_applies(t->op, (env_error_t)e)) continue;
      char why[1024];
      outcome_t out = run_cell(fx, cell_no++, t, (env_error_t)e, sticky, why, sizeof why);
      outcome_t *cell = &fx->matrix[t->phase][kind_index(t->op)][e];
      cell_merge(cell, out);
      if (getenv("BFH_FAULT_MATRIX_VERBOSE"))
        print_message("  run %d %s / %s / %s%s: %s\n", cell_no - 1, phase_names[t->phase],
                      kind_names[kind_index(t->op)], error_names[e],
                      t->on_disk ? " (leaves on disk)" : "", why);
      runs++;
      if (out == CELL_FAILED) {
        failed++;
        failures_add(fx->failures, sizeof fx->failures, &fx->failures_len, "  %s / %s / %s%s: %s\n",
                     phase_names[t->phase], kind_names[kind_index(t->op)], error_names[e],
                     t->on_disk ? " (leaves on disk)" : "", why);
      }
    }
  }
  /* The phases whose files are the engine's only (its Env): n/a, for this reason. */
  const char *whole_row_na[PHASES] = {[PH_COMPACTION] = fe->own_files};
  int tried = matrix_report(fe->name, sticky, runs, fx->matrix, PHASES, phase_names, whole_row_na);
  print_message("%s", fe->na_text);
  if (failed) fail_msg("%d runs failed:\n%s", failed, fx->failures);
  assert_true(tried >= fe->min_tried); /* the matrix ran */
}

#endif

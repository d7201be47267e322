/* Shared by the fault matrices of every engine (fault_matrix_test.c: the own engine;
 * fault_matrix_foreign.h: the LevelDB and RocksDB engines): the keys and values the cells write,
 * the model of what a database must hold, the kinds of I/O call and errors of the matrix, checks
 * that record instead of aborting (every cell runs, the matrix is printed), and the check of
 * every get and every search, by every method, against the model. Header-only; include after
 * cmocka.h and bfh.h.
 */
#ifndef BFH_TESTS_LSM_HOOKS_FAULT_MATRIX_UTIL_H
#define BFH_TESTS_LSM_HOOKS_FAULT_MATRIX_UTIL_H

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bfh.h"
#include "tests/env_fault.h"
#include "util/env.h"
#include "api/testbed.h"
#include "util/err.h"
#include "util/random.h"
#include "tests/test_util.h"

#define NKEYS 300
#define NVALS 16     /* distinct values (1..NVALS); 0 = absent */
#define CELL_PUTS 16 /* writes of a cell before its flush */

/* ---- keys, values, the model ----------------------------------------------------------- */

static inline size_t key_of(char *buf, unsigned id) {
  return (size_t)snprintf(buf, 32, "key%09u", id);
}

static inline size_t value_of(char *buf, unsigned v) {
  return (size_t)snprintf(buf, 64, "value-%02u-of-the-fault-matrix", v);
}

/* What the database must hold: v[id] = the acknowledged value (0: absent); doubt[id] = a bit
   per value (bit 0: absent) that a failed write may have left instead. */
typedef struct model {
  uint8_t v[NKEYS];
  uint32_t doubt[NKEYS];
} model_t;

/* ---- kinds, errors, outcomes ---------------------------------------------------------- */

static const env_op_t kinds[] = {ENV_OP_OPEN,   ENV_OP_READ,   ENV_OP_WRITE, ENV_OP_SYNC,
                                 ENV_OP_RENAME, ENV_OP_UNLINK, ENV_OP_MKDIR};
#define NKINDS (sizeof kinds / sizeof kinds[0])
static const char *kind_names[NKINDS] = {"open",   "read",   "write", "fsync",
                                         "rename", "unlink", "mkdir"};
static const char *error_names[ENV_ERRORS] = {"EIO", "ENOSPC", "short", "fsync"};

static inline int error_applies(env_op_t op, env_error_t e) {
  switch (e) {
    case ENV_ERR_EIO:
      return 1;
    case ENV_ERR_ENOSPC: /* no space: calls that allocate */
      return op != ENV_OP_READ && op != ENV_OP_UNLINK;
    case ENV_ERR_SHORT:
      return op == ENV_OP_WRITE;
    case ENV_ERR_FSYNC:
      return op == ENV_OP_SYNC;
    default:
      return 0;
  }
}

static inline int kind_index(env_op_t op) {
  for (size_t i = 0; i < NKINDS; i++)
    if (kinds[i] == op) return (int)i;
  return -1;
}

typedef enum outcome { CELL_NA = 0, CELL_PASSED, CELL_ABSORBED, CELL_FAILED } outcome_t;

/* ---- checks that record instead of aborting (every cell runs, the matrix is printed) ---- */

typedef struct cell_run {
  char msg[1024]; /* the first failed check; "" while all passed */
} cell_run_t;

static inline void check(cell_run_t *c, int ok, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static inline void check(cell_run_t *c, int ok, const char *fmt, ...) {
  if (ok || c->msg[0]) return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(c->msg, sizeof c->msg, fmt, ap);
  va_end(ap);
}

/* ---- searches and gets against the model ----------------------------------------------- */

typedef struct found {
  uint8_t seen[NKEYS];
  int bad; /* a key out of range or reported twice */
} found_t;

static inline int on_match(void *arg, const void *key, size_t len) {
  found_t *f = arg;
  char buf[32];
  if (len < 4 || len >= sizeof buf) {
    f->bad = 1;
    return 0;
  }
  memcpy(buf, key, len);
  buf[len] = 0;
  unsigned long id = strtoul(buf + 3, NULL, 10);
  if (id >= NKEYS || f->seen[id]) {
    f->bad = 1;
    return 0;
  }
  f->seen[id] = 1;
  return 0;
}

/* Records rc and msg as the cell's first error if it has none yet (first_rc may be NULL). */
static inline void note_error(int rc, const char *msg, int *first_rc, char *first_msg) {
  if (!first_rc || *first_rc != BFH_OK) return;
  *first_rc = rc;
  snprintf(first_msg, ERR_MSG_BYTES, "%s", msg);
}

/* Runs a cell's writes (sync) and a flush, then settle(db) if given (the own engine waits
   for its background work); records the first failure. */
typedef int (*settle_fn)(bfh_db *db, char *msg, size_t cap);
static inline void ingest(cell_run_t *c, bfh_db *db, model_t *m, rng_t *r, settle_fn settle,
                          int *first_rc, char *first_msg) {
  char key[32], val[64];
  for (int i = 0; i <= CELL_PUTS + (settle != NULL); i++) {
    int rc;
    char msg[ERR_MSG_BYTES] = "";
    if (i == CELL_PUTS) {
      rc = bfh_flush(db);
      if (rc != BFH_OK) snprintf(msg, sizeof msg, "%s", bfh_last_error(db));
    } else if (i == CELL_PUTS + 1) {
      rc = settle(db, msg, sizeof msg);
    } else {
      unsigned id = (unsigned)rng_below(r, NKEYS), v = 1 + (unsigned)rng_below(r, NVALS);
      int del = rng_below(r, 10) == 0;
      rc = del ? bfh_delete(db, key, key_of(key, id))
               : bfh_put(db, key, key_of(key, id), val, value_of(val, v));
      if (rc == BFH_OK) {
        m->v[id] = del ? 0 : (uint8_t)v;
        m->doubt[id] = 0;
      } else {
        m->doubt[id] |= 1u << (del ? 0 : v);
        snprintf(msg, sizeof msg, "%s", bfh_last_error(db));
        check(c, rc < 0 && msg[0], "a failed write returned %d without a message", rc);
      }
    }
    if (rc != BFH_OK) note_error(rc, msg, first_rc, first_msg);
  }
}

/* Every get and every value search (each method) agrees with m; with `resolve`, the keys in
   doubt take the state found (after a reopen), else either state is accepted. With
   `tolerate` (a dead disk), a call may fail with a message, never answer wrongly. */
static inline void check_db(cell_run_t *c, bfh_db *db, model_t *m, int resolve, int tolerate,
                            const char *when, int *first_rc, char *first_msg) {
  char key[32], val[64];
  for (unsigned id = 0; id < NKEYS && !c->msg[0]; id++) {
    size_t kl = key_of(key, id);
    void *got = NULL;
    size_t gl = 0;
    int rc = bfh_get(db, key, kl, &got, &gl);
    unsigned gv = 0;
    if (rc == BFH_OK) {
      for (unsigned v = 1; v <= NVALS && !gv; v++)
        if (value_of(val, v) == gl && memcmp(val, got, gl) == 0) gv = v;
      check(c, gv != 0, "%s: get %s: a value never written", when, key);
    } else if (tolerate && rc < 0 && bfh_last_error(db)[0]) {
      note_error(rc, bfh_last_error(db), first_rc, first_msg);
      continue;
    } else {
      check(c, rc == BFH_NOT_FOUND, "%s: get %s: %d %s", when, key, rc, bfh_last_error(db));
    }
    bfh_free(got);
    if (c->msg[0]) return;
    check(c, gv == m->v[id] || (m->doubt[id] >> gv & 1),
          "%s: get %s: value %u, acknowledged %u (in doubt: %#x)", when, key, gv, m->v[id],
          m->doubt[id]);
    if (resolve) {
      m->v[id] = (uint8_t)gv;
      m->doubt[id] = 0;
    }
  }
  for (unsigned v = 1; v <= NVALS + 1 && !c->msg[0]; v++) { /* NVALS + 1: never written */
    size_t vl = value_of(val, v);
    for (int method = BFH_SEARCH_SCAN; method <= BFH_SEARCH_AUTO && !c->msg[0]; method++) {
      found_t f;
      memset(&f, 0, sizeof f);
      int rc = bfh_search(db, val, vl, (bfh_method)method, on_match, &f, NULL);
      if (tolerate && rc < 0 && bfh_last_error(db)[0]) {
        note_error(rc, bfh_last_error(db), first_rc, first_msg);
        continue;
      }
      check(c, rc == BFH_OK, "%s: search value %u method %d: %d %s", when, v, method, rc,
            bfh_last_error(db));
      check(c, !f.bad, "%s: search value %u method %d: a key reported twice", when, v, method);
      for (unsigned id = 0; id < NKEYS && !c->msg[0]; id++) {
        int want = m->v[id] == v, may = (m->doubt[id] >> v) & 1;
        check(c, f.seen[id] == want || may,
              "%s: search value %u method %d: key %u %s (acknowledged value %u)", when, v, method,
              id, f.seen[id] ? "reported" : "missed", m->v[id]);
      }
    }
  }
}

/* Counts and prints a matrix of `phases` rows of cells (outcome_t [phases][NKINDS]
   [ENV_ERRORS]): a summary line for `engine`, then one line per phase and call kind. A
   phase with whole_row_na[p] set (may be NULL) prints as one n/a line with that reason.
   Returns the cells tried. */
static inline int matrix_report(const char *engine, int sticky, int runs,
                                outcome_t (*matrix)[NKINDS][ENV_ERRORS], int phases,
                                const char *const *phase_names, const char *const *whole_row_na) {
  int tried = 0, passed = 0, absorbed = 0, na = 0;
  for (int p = 0; p < phases; p++)
    for (size_t k = 0; k < NKINDS; k++)
      for (int e = 0; e < ENV_ERRORS; e++) {
        outcome_t o = matrix[p][k][e];
        na += o == CELL_NA;
        tried += o != CELL_NA;
        passed += o == CELL_PASSED || o == CELL_ABSORBED;
        absorbed += o == CELL_ABSORBED;
      }
  print_message(
      "fault matrix (%s, %s): %d cells tried (%d runs), %d passed (%d of them absorbed), %d "
      "failed, %d n/a\n",
      engine, sticky ? "dead disk: the fault repeats until close" : "one fault", tried, runs,
      passed, absorbed, tried - passed, na);
  print_message("%-21s %-7s %-6s %-6s %-6s %-6s\n", "phase", "call", "EIO", "ENOSPC", "short",
                "fsync");
  static const char *marks[] = {"n/a", "ok", "abs", "FAIL"};
  for (int p = 0; p < phases; p++) {
    if (whole_row_na && whole_row_na[p]) {
      print_message("%-21s (all)   n/a: %s\n", phase_names[p], whole_row_na[p]);
      continue;
    }
    for (size_t k = 0; k < NKINDS; k++) {
      outcome_t *row = matrix[p][k];
      print_message("%-21s %-7s %-6s %-6s %-6s %-6s\n", k == 0 ? phase_names[p] : "", kind_names[k],
                    marks[row[0]], marks[row[1]], marks[row[2]], marks[row[3]]);
    }
  }
  return tried;
}

/* Opens path over io with fault f armed before the open (a fault in recovery), or after it
   when arm_after_open (a fault in what the cell then does). A failed open is the cell's
   first error; it must leave no handle, and may fail only with a fault armed. Returns the
   handle or NULL. */
static inline bfh_db *cell_open(cell_run_t *c, const char *path, const bfh_options *o, env_t *io,
                                const env_fault_t *f, int arm_after_open, int *first_rc,
                                char *first_msg) {
  bfh_db *db = NULL;
  if (!arm_after_open) check(c, env_fail_with(io, f) == BFH_OK, "arm");
  int rc = bfh_internal_open_io(path, o, io, &db);
  if (rc != BFH_OK) {
    *first_rc = rc;
    snprintf(first_msg, ERR_MSG_BYTES, "%s", bfh_last_error(NULL));
    check(c, db == NULL, "a failed open left a handle");
    check(c, !arm_after_open, "open without a fault failed: %s", first_msg);
  }
  if (db && arm_after_open) check(c, env_fail_with(io, f) == BFH_OK, "arm");
  return db;
}

/* Before a cell that recovers: writes that only the log holds (no flush), then a close, so
   that the cell's reopen reads (replays) them. m follows the writes. */
static inline void cell_write_before_recovery(cell_run_t *c, const char *path, const bfh_options *o,
                                              model_t *m, rng_t *r) {
  bfh_db *pre = NULL;
  int rc = bfh_open(path, o, &pre);
  check(c, rc == BFH_OK, "open before recovery: %s", bfh_last_error(NULL));
  if (rc != BFH_OK) return;
  char key[32], val[64];
  for (int i = 0; i < CELL_PUTS && !c->msg[0]; i++) {
    unsigned id = (unsigned)rng_below(r, NKEYS), v = 1 + (unsigned)rng_below(r, NVALS);
    check(c, bfh_put(pre, key, key_of(key, id), val, value_of(val, v)) == BFH_OK,
          "put before recovery: %s", bfh_last_error(pre));
    m->v[id] = (uint8_t)v;
    m->doubt[id] = 0;
  }
  check(c, bfh_close(pre) == BFH_OK, "close before recovery");
}

/* Appends a failed cell's line to the report buf (cap bytes, *len used); a report that is
   full keeps its first lines. */
static inline void failures_add(char *buf, size_t cap, size_t *len, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static inline void failures_add(char *buf, size_t cap, size_t *len, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(buf + *len, cap - *len, fmt, ap);
  va_end(ap);
  if (n > 0) *len += (size_t)n;
  if (*len >= cap) *len = cap - 1;
}

/* After the cell's writes: the database keeps working, or refuses a write with an error
   (and only after an error came). m follows the write. */
static inline void cell_write_after(cell_run_t *c, bfh_db *db, model_t *m, rng_t *r, int first_rc) {
  char key[32], val[64];
  unsigned id = (unsigned)rng_below(r, NKEYS), v = 1 + (unsigned)rng_below(r, NVALS);
  int rc = bfh_put(db, key, key_of(key, id), val, value_of(val, v));
  if (rc == BFH_OK) {
    m->v[id] = (uint8_t)v;
    m->doubt[id] = 0;
  } else {
    m->doubt[id] |= 1u << v;
    check(c, rc < 0 && bfh_last_error(db)[0], "a refused write said nothing (%d)", rc);
    check(c, first_rc != BFH_OK, "a write failed after no error: %s", bfh_last_error(db));
  }
}

/* The end of a cell, after the database was closed and its faulty io destroyed: the first
   error (unless the fault was absorbed: no call failed) is BFH_E_IO and names the faulted
   file (fault_path; with a dead disk, some faulted file of dir), and says the disk is full
   for ENOSPC and short writes; then a reopen of path with the real I/O layer (options o)
   has every acknowledged write of m, right answers, and takes writes again. dir is removed.
   The cell's outcome, with the reason (or the first error) in why. */
static inline outcome_t cell_verdict(cell_run_t *c, const char *dir, const char *path,
                                     const bfh_options *o, model_t *m, const char *fault_path,
                                     int sticky, env_error_t error, int first_rc,
                                     const char *first_msg, char *why, size_t why_cap) {
  int absorbed = first_rc == BFH_OK;
  if (!absorbed) {
    const char *base = strrchr(fault_path, '/');
    base = base ? base + 1 : fault_path;
    check(c, first_rc == BFH_E_IO, "the first error is %d, not BFH_E_IO: %s", first_rc, first_msg);
    /* It names the file: the one faulted (one fault), or one of the files faulted (a dead
       disk fails many calls, and the first a caller sees need not be the last injected). */
    if (!sticky)
      check(c, base[0] && strstr(first_msg, base) != NULL, "the error does not name %s: \"%s\"",
            base, first_msg);
    else
      check(c, strstr(first_msg, "injected fault: ") && strstr(first_msg, dir),
            "the error does not name a faulted file of %s: \"%s\"", dir, first_msg);
    if (error == ENV_ERR_ENOSPC || error == ENV_ERR_SHORT)
      check(c, strstr(first_msg, "No space left on device") != NULL,
            "the error does not say the disk is full: \"%s\"", first_msg);
  }
  /* Reopen with the real I/O layer: every acknowledged write, right answers. */
  if (!c->msg[0]) {
    bfh_db *db = NULL;
    int rc = bfh_open(path, o, &db);
    check(c, rc == BFH_OK, "reopen: %d %s", rc, bfh_last_error(NULL));
    if (rc == BFH_OK) {
      check_db(c, db, m, 1, 0, "after reopen", NULL, NULL);
      /* and it takes writes again */
      char key[32], val[64];
      check(c, bfh_put(db, key, key_of(key, 7), val, value_of(val, 3)) == BFH_OK,
            "write after reopen: %s", bfh_last_error(db));
      check(c, bfh_flush(db) == BFH_OK, "flush after reopen: %s", bfh_last_error(db));
      (void)bfh_close(db);
    }
  }
  (void)test_rmrf(dir);
  if (c->msg[0]) {
    snprintf(why, why_cap, "%s", c->msg);
    return CELL_FAILED;
  }
  snprintf(why, why_cap, "%s", absorbed ? "absorbed" : first_msg);
  return absorbed ? CELL_ABSORBED : CELL_PASSED;
}

/* Merges a run's outcome into its cell: a cell shows its worst run (FAIL, else ok: a clear
   error, else abs). */
static inline void cell_merge(outcome_t *cell, outcome_t out) {
  static const int rank[] = {
      [CELL_NA] = 0, [CELL_ABSORBED] = 1, [CELL_PASSED] = 2, [CELL_FAILED] = 3};
  if (rank[out] > rank[*cell]) *cell = out;
}

#endif

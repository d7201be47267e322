/* Corruption sweep through include/bfh.h, for both engines and both places of the leaf
 * filters: one test body driven by the engine.
 *
 * A database is built through bfh.h (NKEYS keys over several tables, overwrites and deletions
 * flushed, the last LOG_KEYS fresh keys only in the write-ahead log; unique values and a few
 * shared ones) and closed. Then for every file of every kind (tables, logs, MANIFEST, CURRENT,
 * BFH-PARAMS, IDENTITY, the LevelDB engine's filter caches bfh-filters/NNNNNN.vf) a copy of
 * the database is damaged: one byte XORed with a nonzero mask at the first and last byte and
 * at a fixed-seed sample of offsets, or the file truncated (to 0, half, all but one byte).
 * Each copy is opened and every key is read and a sample of values searched with every
 * method. Every answer must be correct or BFH_E_CORRUPT with a message naming the damaged file
 * (open too may fail with BFH_E_CORRUPT naming it). Nothing may crash.
 *
 * What a damage may change:
 *   - a truncated write-ahead log is a crash's torn tail: its last writes may be lost, but
 *     only as a suffix of the write order (the keys of the log are fresh, so a lost one reads
 *     NOT_FOUND), and a search may miss exactly the lost keys;
 *   - an open that fails must leave every file as it was (same names, same sizes), except
 *     LevelDB's own text log LOG (and LOG.old, LOCK), which LevelDB rotates at every open;
 *   - an open that succeeds may delete files as the engine does after any recovery: the
 *     replayed logs, the older MANIFEST, compacted tables, filter caches it rebuilds; every
 *     answer is then checked, so a file the database still needed shows as a wrong answer.
 * Every failure is printed with engine, leaves, file, damage and what happened; the counts per
 * file kind are printed at the end of each test (trials, all answers correct, corruption
 * reported, failures), and the test fails unless failures are 0.
 *
 * The same damage done under an open handle (the *_under_open_handle tests): the copy is opened
 * and every answer read once (so each block has been read and checked before), then one of
 * its table files is damaged in place, and every answer is read again: each must be right or
 * BFH_E_CORRUPT naming the table and the offset of the block, and nothing may crash (a
 * truncated table, read through a memory map, would raise SIGBUS). The own engine and the
 * read-only LevelDB engine get flips and truncations; the read-write LevelDB engine gets flips
 * only: stock LevelDB maps its tables, and a table truncated under it kills the process inside
 * LevelDB (doc/leveldb.md). Stock LevelDB also checks a table's index and filter blocks once,
 * when it opens the table, and then reads them from its memory map: a flip there under its
 * open handle can make a get miss or misread, which bfh cannot reach. Such trials (the byte
 * between the last data block and the footer) are counted apart ("ldb-trust": each wrong
 * answer printed); every other one must be right or reported, as for the other engines.
 *
 * Scale: SAMPLE_FLIPS offsets per file (fewer under BFH_TEST_SCALE < 1 and in sanitizer
 * builds), MAX_CACHE_FILES filter cache files.
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
#include <unistd.h>

#include "bfh.h"
/* Not public (api/testbed.h): the reader of LevelDB's tables (ldb_table_scan_blocks, to
   find where each table's data blocks end) and the I/O layer's default. */
#include "api/testbed.h"
#include "tests/test_util.h"
#include "util/env.h"
#include "util/random.h"

#define NKEYS 3000
#define PHASE 1200     /* keys per flushed phase */
#define LOG_FIRST 2400 /* ids LOG_FIRST.. are written last and stay in the log */
#define NSHARED 5
#define SAMPLE_FLIPS 12   /* per file, besides the first and last byte */
#define MAX_CACHE_FILES 2 /* filter cache files damaged (they are all alike) */
#define MAX_FILES 64
#define MAX_PRINTED 40 /* failures printed per test */

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define SWEEP_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define SWEEP_SANITIZED 1
#endif
#endif
#ifndef SWEEP_SANITIZED
#define SWEEP_SANITIZED 0
#endif

enum {
  KIND_TABLE,
  KIND_LOG,
  KIND_MANIFEST,
  KIND_CURRENT,
  KIND_PARAMS,
  KIND_IDENTITY,
  KIND_CACHE,
  NKINDS
};
static const char *const kind_names[NKINDS] = {"table",      "log",      "MANIFEST",    "CURRENT",
                                               "BFH-PARAMS", "IDENTITY", "filter cache"};

typedef struct counts {
  unsigned trials, correct, corrupt, failures, ldb_trust;
} counts_t;

typedef struct sweep {
  char root[4096];  /* the test's temporary directory */
  char base[4200];  /* the pristine database */
  char trial[4200]; /* the damaged copy */
  bfh_engine engine;
  int leaves;
  int read_only;    /* the LevelDB engine's read-only mode (the database is built read-write) */
  int under_open;   /* damage the tables of an open handle (the *_under_open_handle tests) */
  char *val[NKEYS]; /* the oracle: current value of id, NULL if none */
  size_t val_len[NKEYS];
  counts_t counts[NKINDS];
  unsigned printed;
  bfh_db *db; /* the open handle, closed by the teardown if a test fails with it open */
} sweep_t;

/* ---- The database and its oracle ------------------------------------------------------- */

static void options(const sweep_t *s, bfh_options *o) {
  bfh_options_init(o);
  o->engine = s->engine;
  o->value_filter_bits = 8192;
  o->memtable_bytes = 64 << 10; /* LevelDB's minimum: the log keys stay in one memtable */
  o->table_bytes = 16 << 10;
  o->leaves_on_disk = s->leaves;
}

static size_t key_of(unsigned id, char *buf) {
  return (size_t)snprintf(buf, 16, "key%06u", id);
}

/* Shared values for id % 10 == 3, else unique per (id, version). */
static void set_value(sweep_t *s, unsigned id, unsigned version) {
  char buf[64];
  int n = id % 10 == 3 ? snprintf(buf, sizeof buf, "shared-%u", id % NSHARED)
                       : snprintf(buf, sizeof buf, "u%06u-v%u-%.*s", id, version, (int)(id % 23),
                                  "abcdefghijklmnopqrstuvwxyz");
  free(s->val[id]);
  s->val[id] = malloc((size_t)n);
  assert_non_null(s->val[id]);
  memcpy(s->val[id], buf, (size_t)n);
  s->val_len[id] = (size_t)n;
}

static void put(sweep_t *s, bfh_db *db, unsigned id, unsigned version) {
  char k[16];
  set_value(s, id, version);
  int rc = bfh_put(db, k, key_of(id, k), s->val[id], s->val_len[id]);
  if (rc != BFH_OK) fail_msg("put: %s", bfh_last_error(db));
}

static void build(sweep_t *s) {
  bfh_options o;
  options(s, &o);
  bfh_db *db;
  if (bfh_open(s->base, &o, &db) != BFH_OK) fail_msg("open: %s", bfh_last_error(NULL));
  s->db = db;
  for (unsigned id = 0; id < LOG_FIRST; id++) {
    put(s, db, id, 1);
    if (id % PHASE == PHASE - 1) assert_int_equal(bfh_flush(db), BFH_OK);
  }
  for (unsigned id = 0; id < LOG_FIRST; id++) {
    char k[16];
    if (id % 7 == 0) put(s, db, id, 2);
    if (id % 13 == 0) {
      assert_int_equal(bfh_delete(db, k, key_of(id, k)), BFH_OK);
      free(s->val[id]);
      s->val[id] = NULL;
    }
  }
  assert_int_equal(bfh_flush(db), BFH_OK);
  for (unsigned id = LOG_FIRST; id < NKEYS; id++) put(s, db, id, 1); /* only in the log */
  s->db = NULL;
  assert_int_equal(bfh_close(db), BFH_OK);
}

/* ---- Files ------------------------------------------------------------------------------ */

typedef struct file {
  char rel[256]; /* path relative to the database directory */
  uint64_t size;
  int kind;
  uint64_t data_end; /* LevelDB tables: where the last data block's trailer ends */
} file_t;

static int kind_of(const char *name) {
  size_t n = strlen(name);
  if (n > 4 && (!strcmp(name + n - 4, ".ldb") || !strcmp(name + n - 4, ".sst"))) return KIND_TABLE;
  if (n > 4 && !strcmp(name + n - 4, ".log")) return KIND_LOG;
  if (!strncmp(name, "MANIFEST-", 9)) return KIND_MANIFEST;
  if (!strcmp(name, "CURRENT")) return KIND_CURRENT;
  if (!strcmp(name, "BFH-PARAMS")) return KIND_PARAMS;
  if (!strcmp(name, "IDENTITY")) return KIND_IDENTITY;
  if (n > 3 && !strcmp(name + n - 3, ".vf")) return KIND_CACHE;
  return -1; /* LOG, LOG.old, LOCK: not the database's data */
}

/* Lists dir and its subdirectories (one level: bfh-filters) into f; returns the count. */
static size_t list_files(const char *dir, const char *sub, file_t *f, size_t n, size_t cap) {
  char path[4400];
  snprintf(path, sizeof path, "%s%s%s", dir, sub[0] ? "/" : "", sub);
  DIR *d = opendir(path);
  assert_non_null(d);
  struct dirent *de;
  while ((de = readdir(d))) {
    if (de->d_name[0] == '.') continue;
    char p[4700];
    snprintf(p, sizeof p, "%s/%s", path, de->d_name);
    struct stat sb;
    if (stat(p, &sb) != 0) continue;
    char rel[256];
    snprintf(rel, sizeof rel, "%.100s%s%.100s", sub, sub[0] ? "/" : "", de->d_name);
    if (S_ISDIR(sb.st_mode)) {
      if (!sub[0]) n = list_files(dir, rel, f, n, cap);
      continue;
    }
    assert_true(n < cap);
    snprintf(f[n].rel, sizeof f[n].rel, "%s", rel);
    f[n].size = (uint64_t)sb.st_size;
    f[n].kind = kind_of(de->d_name);
    n++;
  }
  closedir(d);
  return n;
}

/* ---- One trial -------------------------------------------------------------------------- */

typedef struct trial {
  sweep_t *s;
  const file_t *file;
  char damage[64];
  int truncated_log;
  int reported; /* some answer was BFH_E_CORRUPT naming the file */
  int failed;
  int ldb_trust;  /* damage in blocks stock LevelDB checks only at open (see the top) */
  int ldb_missed; /* ... and some answer was wrong */
} trial_t;

static void failure(trial_t *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void failure(trial_t *t, const char *fmt, ...) {
  if (t->ldb_trust)
    t->ldb_missed = 1;
  else
    t->failed = 1;
  if (t->s->printed++ >= MAX_PRINTED) return;
  char what[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(what, sizeof what, fmt, ap);
  va_end(ap);
  print_message("%s %s engine, leaves %s, %s %s, %s: %s\n", t->ldb_trust ? "LDB-TRUST" : "FAIL",
                t->s->engine == BFH_ENGINE_LSM ? "own" : "leveldb",
                t->s->leaves == BFH_LEAVES_IN_MEMORY ? "in memory" : "on disk",
                kind_names[t->file->kind], t->file->rel, t->damage, what);
}

/* A failed call: BFH_E_CORRUPT naming the damaged file is a report, anything else a failure. */
static void check_error(trial_t *t, int rc, const char *msg, const char *call) {
  const char *base = strrchr(t->file->rel, '/');
  base = base ? base + 1 : t->file->rel;
  if (rc == BFH_E_CORRUPT && strstr(msg, base)) {
    t->reported = 1;
    if (getenv("SWEEP_SHOW")) print_message("  %s: %s\n", t->damage, msg);
    return;
  }
  failure(t, "%s: %s (%d): %s", call, bfh_strerror(rc), rc, msg);
}

typedef struct found {
  uint8_t hit[NKEYS];
  int dup, foreign;
} found_t;

static int on_match(void *arg, const void *key, size_t len) {
  found_t *f = arg;
  char buf[16];
  unsigned id;
  if (len != 9 || (memcpy(buf, key, 9), buf[9] = 0, sscanf(buf, "key%06u", &id) != 1) ||
      id >= NKEYS) {
    f->foreign = 1;
    return 0;
  }
  f->dup |= f->hit[id];
  f->hit[id] = 1;
  return 0;
}

static void check_answers(trial_t *t, bfh_db *db) {
  sweep_t *s = t->s;
  /* Gets. lost[]: log keys that read NOT_FOUND (allowed after a truncated log). */
  static uint8_t lost[NKEYS];
  memset(lost, 0, sizeof lost);
  unsigned first_lost = NKEYS, last_found_log = 0;
  for (unsigned id = 0; id < NKEYS && !t->failed && !t->ldb_missed; id++) {
    char k[16];
    void *v = NULL;
    size_t vl = 0;
    int rc = bfh_get(db, k, key_of(id, k), &v, &vl);
    if (rc == BFH_OK && s->val[id] && vl == s->val_len[id] && !memcmp(v, s->val[id], vl)) {
      if (id >= LOG_FIRST) last_found_log = id;
    } else if (rc == BFH_NOT_FOUND && !s->val[id]) {
    } else if (rc == BFH_NOT_FOUND && t->truncated_log && id >= LOG_FIRST) {
      lost[id] = 1;
      if (id < first_lost) first_lost = id;
    } else if (rc < 0) {
      check_error(t, rc, bfh_last_error(db), "get");
    } else {
      failure(t, "get %s: %s, expected %s", k, rc == BFH_OK ? "a wrong value" : "NOT_FOUND",
              s->val[id] ? "its value" : "NOT_FOUND");
    }
    bfh_free(v);
  }
  if (!t->failed && first_lost < last_found_log)
    failure(t, "the truncated log lost key%06u but kept the later key%06u", first_lost,
            last_found_log);
  /* Searches: the shared values, unique ones from each phase, an overwritten key's old value
     (no result), with every method. */
  static const unsigned probe_ids[] = {14, 1255, 2410, 2999, 21, 700};
  for (unsigned q = 0; q < NSHARED + 7 && !t->failed && !t->ldb_missed; q++) {
    char buf[64];
    size_t len;
    if (q < NSHARED) {
      len = (size_t)snprintf(buf, sizeof buf, "shared-%u", q);
    } else if (q < NSHARED + 6) {
      unsigned id = probe_ids[q - NSHARED];
      if (!s->val[id]) continue;
      memcpy(buf, s->val[id], s->val_len[id]);
      len = s->val_len[id];
    } else {
      len = (size_t)snprintf(buf, sizeof buf, "u%06u-v1-%.*s", 14u, 14, "abcdefghijklmn");
    }
    for (int m = BFH_SEARCH_SCAN; m <= BFH_SEARCH_AUTO && !t->failed; m++) {
      static found_t f;
      memset(&f, 0, sizeof f);
      int rc = bfh_search(db, buf, len, (bfh_method)m, on_match, &f, NULL);
      if (rc < 0) {
        check_error(t, rc, bfh_last_error(db), "search");
        continue;
      }
      if (f.dup || f.foreign) {
        failure(t, "search %.*s method %d: a key twice or a key never written", (int)len, buf, m);
        continue;
      }
      for (unsigned id = 0; id < NKEYS; id++) {
        int want = s->val[id] && s->val_len[id] == len && !memcmp(s->val[id], buf, len);
        if (want && !f.hit[id] && lost[id]) continue;
        if (want != f.hit[id]) {
          failure(t, "search %.*s method %d: key%06u %s", (int)len, buf, m, id,
                  want ? "missing" : "reported but its value differs");
          break;
        }
      }
    }
  }
}

/* The copy opened, every answer read (and checked: all must be right), then the damage done
   to the open handle's files by damage(path, arg), then every answer read again. */
static void run_trial_under_open(trial_t *t, void (*damage)(const char *path, void *arg),
                                 void *arg) {
  sweep_t *s = t->s;
  bfh_options o;
  options(s, &o);
  o.create_if_missing = 0;
  o.read_only = s->read_only;
  bfh_db *db = NULL;
  if (bfh_open(s->trial, &o, &db) != BFH_OK) fail_msg("open: %s", bfh_last_error(NULL));
  s->db = db;
  check_answers(t, db);
  if (t->failed || t->reported) fail_msg("the undamaged copy answered wrong: %s", t->damage);
  char path[4500];
  snprintf(path, sizeof path, "%s/%s", s->trial, t->file->rel);
  damage(path, arg);
  check_answers(t, db);
  s->db = NULL;
  int rc = bfh_close(db);
  if (rc != BFH_OK) check_error(t, rc, bfh_last_error(NULL), "close");
}

typedef struct damage_spec {
  uint64_t off;
  uint8_t mask; /* 0: truncate to off */
} damage_spec_t;

static void damage_file(const char *path, void *arg) {
  const damage_spec_t *d = arg;
  if (d->mask) {
    assert_int_equal(test_file_xor_byte(path, d->off, d->mask), 0);
  } else {
    assert_int_equal(truncate(path, (off_t)d->off), 0); /* in place: the handle's file */
  }
}

static void run_trial(trial_t *t) {
  sweep_t *s = t->s;
  bfh_options o;
  options(s, &o);
  file_t before[MAX_FILES], after[MAX_FILES];
  size_t nb = list_files(s->trial, "", before, 0, MAX_FILES);
  bfh_db *db = NULL;
  int rc = bfh_open(s->trial, &o, &db);
  if (rc != BFH_OK) {
    check_error(t, rc, bfh_last_error(NULL), "open");
    size_t na = list_files(s->trial, "", after, 0, MAX_FILES);
    for (size_t i = 0; i < nb; i++) {
      if (before[i].kind < 0) continue; /* LevelDB's LOG, LOG.old, LOCK */
      size_t j = 0;
      while (j < na && strcmp(after[j].rel, before[i].rel)) j++;
      if (j == na)
        failure(t, "the failed open deleted %s", before[i].rel);
      else if (after[j].size != before[i].size)
        failure(t, "the failed open changed the size of %s from %llu to %llu", before[i].rel,
                (unsigned long long)before[i].size, (unsigned long long)after[j].size);
    }
    return;
  }
  s->db = db;
  check_answers(t, db);
  s->db = NULL;
  assert_int_equal(bfh_close(db), BFH_OK);
}

/* Copies the base, applies the damage (flip at off with mask, or truncation to off when mask
   is 0), runs the trial and counts it. */
static void trial_at(sweep_t *s, const file_t *f, uint64_t off, uint8_t mask) {
  trial_t t = {.s = s, .file = f};
  assert_int_equal(test_copy_dir(s->base, s->trial), 0);
  char path[4500], tmp[4600];
  snprintf(path, sizeof path, "%s/%s", s->trial, f->rel);
  if (s->under_open) {
    damage_spec_t d = {off, mask};
    if (mask)
      snprintf(t.damage, sizeof t.damage, "byte %llu ^= 0x%02x under the open handle",
               (unsigned long long)off, mask);
    else
      snprintf(t.damage, sizeof t.damage, "truncated to %llu of %llu under the open handle",
               (unsigned long long)off, (unsigned long long)f->size);
    t.ldb_trust = s->engine == BFH_ENGINE_LEVELDB && !s->read_only && f->data_end &&
                  off >= f->data_end && off + 48 < f->size; /* not the 48-byte footer */
    run_trial_under_open(&t, damage_file, &d);
  } else if (mask) {
    snprintf(t.damage, sizeof t.damage, "byte %llu ^= 0x%02x", (unsigned long long)off, mask);
    assert_int_equal(test_file_xor_byte(path, off, mask), 0);
  } else {
    snprintf(t.damage, sizeof t.damage, "truncated to %llu of %llu", (unsigned long long)off,
             (unsigned long long)f->size);
    snprintf(tmp, sizeof tmp, "%s.cut", path);
    assert_int_equal(test_copy_file(path, tmp, off), 0);
    assert_int_equal(rename(tmp, path), 0);
    t.truncated_log = f->kind == KIND_LOG;
  }
  run_trial(&t);
  counts_t *c = &s->counts[f->kind];
  c->trials++;
  if (t.failed)
    c->failures++;
  else if (t.ldb_missed)
    c->ldb_trust++;
  else if (t.reported)
    c->corrupt++;
  else
    c->correct++;
  assert_int_equal(test_rmrf(s->trial), 0);
}

static int on_block_end(void *arg, uint64_t offset, uint64_t size) {
  uint64_t *end = arg;
  if (offset + size + 5 > *end) *end = offset + size + 5; /* the 5-byte trailer */
  return 0;
}

static int no_entry(void *arg, const ldb_entry_t *e) {
  (void)arg;
  (void)e;
  return 0;
}

static void sweep(sweep_t *s) {
  build(s);
  file_t files[MAX_FILES];
  size_t n = list_files(s->base, "", files, 0, MAX_FILES);
  for (size_t i = 0; i < n; i++) { /* LevelDB tables: where their data blocks end */
    files[i].data_end = 0;
    if (s->engine != BFH_ENGINE_LEVELDB || files[i].kind != KIND_TABLE) continue;
    char path[4500];
    err_t e;
    snprintf(path, sizeof path, "%s/%s", s->base, files[i].rel);
    if (ldb_table_scan_blocks(env_default(), path, no_entry, on_block_end, &files[i].data_end,
                              NULL, &e) != BFH_OK)
      fail_msg("%s: %s", path, e.msg);
  }
  const char *scale_env = getenv("BFH_TEST_SCALE");
  double scale = scale_env && atof(scale_env) > 0 ? atof(scale_env) : SWEEP_SANITIZED ? 0.2 : 1.0;
  unsigned flips = (unsigned)(SAMPLE_FLIPS * (scale < 1 ? scale : 1));
  if (flips < 3) flips = 3;
  unsigned caches = 0;
  /* Under an open handle only the tables are read after the open; stock LevelDB's mapped
     tables are not truncated (see the top). */
  int truncations = !s->under_open || s->engine == BFH_ENGINE_LSM || s->read_only;
  for (size_t i = 0; i < n; i++) {
    const file_t *f = &files[i];
    if (f->kind < 0 || f->size == 0) continue;
    if (s->under_open && f->kind != KIND_TABLE) continue;
    if (f->kind == KIND_CACHE && caches++ >= MAX_CACHE_FILES) continue;
    rng_t r;
    rng_init(&r, 0x5eed0000u + (uint64_t)i);
    trial_at(s, f, 0, (uint8_t)(1 + rng_below(&r, 255)));
    trial_at(s, f, f->size - 1, (uint8_t)(1 + rng_below(&r, 255)));
    for (unsigned j = 0; j < flips; j++)
      trial_at(s, f, rng_below(&r, f->size), (uint8_t)(1 + rng_below(&r, 255)));
    if (!truncations) continue;
    trial_at(s, f, 0, 0);
    trial_at(s, f, f->size / 2, 0);
    trial_at(s, f, f->size - 1, 0);
  }
  unsigned failures = 0;
  print_message("corruption sweep, %s engine%s, leaves %s%s:\n",
                s->engine == BFH_ENGINE_LSM ? "own" : "leveldb", s->read_only ? " read-only" : "",
                s->leaves == BFH_LEAVES_IN_MEMORY ? "in memory" : "on disk",
                s->under_open ? ", damage under an open handle" : "");
  print_message("  %-13s %7s %8s %8s %9s %9s\n", "file kind", "trials", "correct", "corrupt",
                "failures", "ldb-trust");
  for (int k = 0; k < NKINDS; k++) {
    const counts_t *c = &s->counts[k];
    if (!c->trials) continue;
    print_message("  %-13s %7u %8u %8u %9u %9u\n", kind_names[k], c->trials, c->correct, c->corrupt,
                  c->failures, c->ldb_trust);
    failures += c->failures;
  }
  assert_int_equal(failures, 0);
}

/* ---- Fixtures and tests ------------------------------------------------------------------ */

static int setup(void **state) {
  sweep_t *s = calloc(1, sizeof *s);
  if (!s) return -1;
  if (test_tmpdir_create(s->root, sizeof s->root, "corrupt_sweep") != 0) {
    free(s);
    return -1;
  }
  snprintf(s->base, sizeof s->base, "%s/base", s->root);
  snprintf(s->trial, sizeof s->trial, "%s/trial", s->root);
  *state = s;
  return 0;
}

static int teardown(void **state) {
  sweep_t *s = *state;
  if (!s) return 0;
  bfh_close(s->db);
  for (unsigned i = 0; i < NKEYS; i++) free(s->val[i]);
  int rc = test_rmrf(s->root);
  free(s);
  return rc == 0 ? 0 : -1;
}

static void run(void **state, bfh_engine engine, int leaves) {
  sweep_t *s = *state;
  s->engine = engine;
  s->leaves = leaves;
  sweep(s);
}

static void run_under_open(void **state, bfh_engine engine, int read_only) {
  sweep_t *s = *state;
  s->engine = engine;
  s->leaves = BFH_LEAVES_IN_MEMORY;
  s->read_only = read_only;
  s->under_open = 1;
  sweep(s);
}

static void test_corrupt_sweep_lsm_under_open_handle(void **state) {
  run_under_open(state, BFH_ENGINE_LSM, 0);
}
static void test_corrupt_sweep_leveldb_under_open_handle(void **state) {
  run_under_open(state, BFH_ENGINE_LEVELDB, 0);
}
static void test_corrupt_sweep_leveldb_read_only_under_open_handle(void **state) {
  run_under_open(state, BFH_ENGINE_LEVELDB, 1);
}

static void test_corrupt_sweep_leveldb_leaves_in_memory(void **state) {
  run(state, BFH_ENGINE_LEVELDB, BFH_LEAVES_IN_MEMORY);
}
static void test_corrupt_sweep_leveldb_leaves_on_disk(void **state) {
  run(state, BFH_ENGINE_LEVELDB, BFH_LEAVES_ON_DISK);
}
static void test_corrupt_sweep_lsm_leaves_in_memory(void **state) {
  run(state, BFH_ENGINE_LSM, BFH_LEAVES_IN_MEMORY);
}
static void test_corrupt_sweep_lsm_leaves_on_disk(void **state) {
  run(state, BFH_ENGINE_LSM, BFH_LEAVES_ON_DISK);
}

/* Leaves on disk, damaged under an open database: every filter's words are zeroed in place
   (the table files of the own engine, the filter cache files of the LevelDB engine), as a
   failing disk or a stray writer would leave them. A zeroed filter says "no" to everything;
   read back unverified it would hide every key. Every answer must stay right. */
static void zero_filters_while_open(void **state, bfh_engine engine) {
  sweep_t *s = *state;
  s->engine = engine;
  s->leaves = BFH_LEAVES_ON_DISK;
  build(s);
  bfh_options o;
  options(s, &o);
  o.create_if_missing = 0;
  if (bfh_open(s->base, &o, &s->db) != BFH_OK) fail_msg("open: %s", bfh_last_error(NULL));
  file_t files[MAX_FILES];
  size_t n = list_files(s->base, "", files, 0, MAX_FILES), zeroed = 0;
  const int kind = engine == BFH_ENGINE_LSM ? KIND_TABLE : KIND_CACHE;
  const file_t *first = NULL;
  for (size_t i = 0; i < n; i++) {
    if (files[i].kind != kind) continue;
    char path[4600];
    snprintf(path, sizeof path, "%.4199s/%.255s", s->base, files[i].rel);
    FILE *fp = fopen(path, "r+b");
    assert_non_null(fp);
    static uint8_t buf[1 << 20];
    size_t len = fread(buf, 1, sizeof buf, fp);
    uint8_t *magic = memmem(buf, len, "BFHV", 4);
    if (!magic) fail_msg("%s: no value filter in it", path);
    long words = (long)(magic - buf) + 32; /* the filter's header is 32 bytes */
    assert_true((size_t)words + o.value_filter_bits / 8 <= len);
    assert_int_equal(fseek(fp, words, SEEK_SET), 0);
    for (uint64_t b = 0; b < o.value_filter_bits / 8; b++) assert_int_equal(fputc(0, fp), 0);
    assert_int_equal(fclose(fp), 0);
    zeroed++;
    if (!first) first = &files[i];
  }
  assert_true(zeroed >= 2);
  trial_t t = {.s = s, .file = first};
  snprintf(t.damage, sizeof t.damage, "every filter zeroed while open");
  check_answers(&t, s->db);
  print_message("%s engine: %zu filters zeroed under the open database: answers %s\n",
                engine == BFH_ENGINE_LSM ? "own" : "leveldb", zeroed,
                t.failed ? "WRONG" : "all right");
  assert_false(t.failed);
  assert_int_equal(bfh_close(s->db), BFH_OK);
  s->db = NULL;
}

static void test_corrupt_sweep_lsm_filters_zeroed_while_open(void **state) {
  zero_filters_while_open(state, BFH_ENGINE_LSM);
}
static void test_corrupt_sweep_leveldb_filters_zeroed_while_open(void **state) {
  zero_filters_while_open(state, BFH_ENGINE_LEVELDB);
}

/* An optional argument selects tests by name (a cmocka filter, e.g. "*leveldb*"). */
int main(int argc, char **argv) {
  if (argc > 1) cmocka_set_test_filter(argv[1]);
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_corrupt_sweep_leveldb_leaves_in_memory, setup, teardown),
      cmocka_unit_test_setup_teardown(test_corrupt_sweep_leveldb_leaves_on_disk, setup, teardown),
      cmocka_unit_test_setup_teardown(test_corrupt_sweep_lsm_leaves_in_memory, setup, teardown),
      cmocka_unit_test_setup_teardown(test_corrupt_sweep_lsm_leaves_on_disk, setup, teardown),
      cmocka_unit_test_setup_teardown(test_corrupt_sweep_lsm_filters_zeroed_while_open, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_corrupt_sweep_leveldb_filters_zeroed_while_open, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_corrupt_sweep_lsm_under_open_handle, setup, teardown),
      cmocka_unit_test_setup_teardown(test_corrupt_sweep_leveldb_under_open_handle, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_corrupt_sweep_leveldb_read_only_under_open_handle, setup,
                                      teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

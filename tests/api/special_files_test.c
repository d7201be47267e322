/* A name bfh opens that its user replaced with something other than a regular file (issue 44,
 * item 4; util/env.h): a FIFO never makes an open, a search or a check wait. A FIFO in place of
 * a filter cache file (bfh-filters/NNNNNN.vf) is a stale cache file, rebuilt from its table; a
 * FIFO in place of a database file (CURRENT, a table, BFH-PARAMS) is an error that names it,
 * "not a regular file (a FIFO)".
 *
 * Every operation that could wait runs in a child process under alarm(BOUND_S): a regression
 * kills the child with SIGALRM and fails the test instead of hanging the suite. The children
 * also write the databases (stock LevelDB and RocksDB start background threads that a fork
 * would not carry over), so this process never opens one itself; it only lays the FIFOs and
 * looks at the files afterwards.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <dirent.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bfh.h"
#include "tests/test_util.h"

#define NKEYS 2000
#define BOUND_S 60 /* a small database's open, search and close take well under a second */
#define FIFO_MSG "not a regular file (a FIFO)"

static char tmpdir[TEST_PATH_MAX];

/* ---- Running bounded in a child --------------------------------------------------------- */

/* Work for a child: 0 on success, else nonzero with a message in msg (cap bytes). */
typedef int (*child_fn)(const void *arg, char *msg, size_t cap);

/* A child's failure: the message into msg; returns 1. */
static int failed(char *msg, size_t cap, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int failed(char *msg, size_t cap, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, cap, fmt, ap);
  va_end(ap);
  return 1;
}

/* Runs fn(arg) in a child process killed by SIGALRM after BOUND_S seconds; fails the test if
   the child was killed (it waited) or fn failed (with fn's message). */
static void run_bounded(const char *what, child_fn fn, const void *arg) {
  int fds[2];
  assert_int_equal(pipe(fds), 0);
  fflush(NULL);
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    close(fds[0]);
    alarm(BOUND_S);
    char msg[1024] = "";
    int rc = fn(arg, msg, sizeof msg);
    ssize_t w = write(fds[1], msg, strlen(msg));
    (void)w;
    _exit(rc ? 1 : 0);
  }
  close(fds[1]);
  char msg[1024];
  size_t n = 0;
  ssize_t r;
  while (n < sizeof msg - 1 && (r = read(fds[0], msg + n, sizeof msg - 1 - n)) > 0) n += (size_t)r;
  msg[n] = '\0';
  close(fds[0]);
  int status;
  assert_int_equal(waitpid(pid, &status, 0), pid);
  if (WIFSIGNALED(status) && WTERMSIG(status) == SIGALRM)
    fail_msg("%s: still waiting after %d s (on the FIFO): killed", what, BOUND_S);
  if (WIFSIGNALED(status)) fail_msg("%s: killed by signal %d", what, WTERMSIG(status));
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) fail_msg("%s: %s", what, msg);
}

/* ---- The databases ---------------------------------------------------------------------- */

typedef struct db_case {
  const char *name;
  bfh_engine engine;
  int read_only; /* the second open (after the FIFO) is read-only, with an index dir */
  char dir[TEST_PATH_MAX + 16], idx[TEST_PATH_MAX + 16];
} db_case_t;

static size_t key_of(uint32_t i, char *out) {
  return (size_t)snprintf(out, 32, "key%06u", i);
}

static size_t value_of(uint32_t i, char *out) {
  return (size_t)snprintf(out, 64, "value-%06u-of-the-special-files-test", i);
}

static void options_for(const db_case_t *c, int read_only, bfh_options *o) {
  bfh_options_init(o);
  o->engine = c->engine;
  o->value_filter_bits = 1 << 14;
  o->read_only = read_only;
  o->index_dir = read_only && c->idx[0] ? c->idx : NULL;
}

/* Child: writes NKEYS entries into c->dir and flushes them into tables; with read_only, then
   opens it read-only once with its index dir, so that the cache files are written there. */
static int make_db(const void *arg, char *msg, size_t cap) {
  const db_case_t *c = arg;
  bfh_options o;
  options_for(c, 0, &o);
  bfh_db *db;
  int rc = bfh_open(c->dir, &o, &db);
  if (rc != BFH_OK) return failed(msg, cap, "open: %s", bfh_last_error(NULL));
  char k[32], v[64];
  for (uint32_t i = 0; i < NKEYS && rc == BFH_OK; i++) {
    size_t kl = key_of(i, k), vl = value_of(i, v);
    rc = bfh_put(db, k, kl, v, vl);
  }
  if (rc == BFH_OK) rc = bfh_flush(db);
  if (rc != BFH_OK) failed(msg, cap, "put/flush: %s", bfh_last_error(db));
  if (bfh_close(db) != BFH_OK || rc != BFH_OK) return 1;
  if (!c->read_only) return 0;
  options_for(c, 1, &o);
  if (bfh_open(c->dir, &o, &db) != BFH_OK)
    return failed(msg, cap, "read-only open: %s", bfh_last_error(NULL));
  return bfh_close(db) != BFH_OK;
}

static int count_match(void *arg, const void *key, size_t len) {
  (void)key, (void)len;
  ++*(int *)arg;
  return 0;
}

/* Child: opens the database as the case says (read-only with its index dir, or read-write)
   and finds three values by AUTO, then closes it. */
static int open_and_search(const void *arg, char *msg, size_t cap) {
  const db_case_t *c = arg;
  bfh_options o;
  options_for(c, c->read_only, &o);
  bfh_db *db;
  if (bfh_open(c->dir, &o, &db) != BFH_OK)
    return failed(msg, cap, "open: %s", bfh_last_error(NULL));
  static const uint32_t probe[] = {0, NKEYS / 2, NKEYS - 1};
  for (size_t i = 0; i < sizeof probe / sizeof *probe; i++) {
    char v[64];
    size_t vl = value_of(probe[i], v);
    int found = 0;
    bfh_search_stats st;
    int rc = bfh_search(db, v, vl, BFH_SEARCH_AUTO, count_match, &found, &st);
    if (rc != BFH_OK || found != 1) {
      failed(msg, cap, "search of value %u: status %d, %d found: %s", probe[i], rc, found,
             rc ? bfh_last_error(db) : "");
      bfh_close(db);
      return 1;
    }
  }
  return bfh_close(db) != BFH_OK;
}

/* What bfh_check told: the files it reported, their messages. */
typedef struct told {
  char text[4096];
} told_t;

static void on_damage(void *arg, const char *file, uint64_t offset, const char *what) {
  told_t *t = arg;
  size_t n = strlen(t->text);
  snprintf(t->text + n, sizeof t->text - n, "%s at %llu: %s\n", file, (unsigned long long)offset,
           what);
}

/* Child: bfh_check of the database, which must find no damage but the harmless cache file
   it names (a FIFO where bfh-filters/<the file> was). */
static int check_db(const void *arg, char *msg, size_t cap) {
  const db_case_t *c = arg;
  bfh_options o;
  options_for(c, 0, &o);
  told_t t = {""};
  bfh_check_report rep;
  int rc = bfh_check(c->dir, &o, on_damage, &t, &rep);
  if (rc != BFH_OK)
    return failed(msg, cap, "bfh_check: status %d: %s; told:\n%s", rc, bfh_last_error(NULL),
                  t.text);
  if (rep.damaged != 0 || rep.cache_damaged != 1 || !strstr(t.text, FIFO_MSG))
    return failed(msg, cap, "bfh_check: %llu damaged, %llu cache files damaged; told:\n%s",
                  (unsigned long long)rep.damaged, (unsigned long long)rep.cache_damaged, t.text);
  return 0;
}

/* The first name in dir ending with suffix, into out (its path). */
static void first_file(const char *dir, const char *suffix, char *out, size_t cap) {
  DIR *d = opendir(dir);
  assert_non_null(d);
  struct dirent *de;
  out[0] = '\0';
  size_t sl = strlen(suffix);
  while ((de = readdir(d))) {
    size_t n = strlen(de->d_name);
    if (n > sl && strcmp(de->d_name + n - sl, suffix) == 0) {
      snprintf(out, cap, "%s/%s", dir, de->d_name);
      break;
    }
  }
  closedir(d);
  if (!out[0]) fail_msg("no *%s file in %s", suffix, dir);
}

static void make_fifo(const char *path) {
  assert_int_equal(unlink(path), 0);
  assert_int_equal(mkfifo(path, 0644), 0);
}

static int is_kind(const char *path, mode_t kind) {
  struct stat sb;
  return lstat(path, &sb) == 0 && (sb.st_mode & S_IFMT) == kind;
}

static int engine_built(bfh_engine e) {
  const bfh_engine_info *info = bfh_engine_get(e);
  return info != NULL;
}

/* A fresh case: its database directory and (read-only) index directory under tmpdir. */
static void case_init(db_case_t *c, const char *name, bfh_engine engine, int read_only) {
  memset(c, 0, sizeof *c);
  c->name = name;
  c->engine = engine;
  c->read_only = read_only;
  snprintf(c->dir, sizeof c->dir, "%s/%s", tmpdir, name);
  if (read_only) snprintf(c->idx, sizeof c->idx, "%s/%s-idx", tmpdir, name);
}

/* ---- A FIFO in place of a cache file: stale, rebuilt ------------------------------------- */

/* The case's database with a FIFO in place of one of its cache files (in the database's
   bfh-filters/, or the index dir's): the open and the searches go on as with a stale file,
   and the file is a regular one again afterwards (rebuilt). */
static void cache_fifo(bfh_engine engine, int read_only, const char *name) {
  if (!engine_built(engine)) skip();
  db_case_t c;
  case_init(&c, name, engine, read_only);
  run_bounded("make the database", make_db, &c);
  char cache_dir[TEST_PATH_MAX + 64], vf[TEST_PATH_MAX + 128];
  snprintf(cache_dir, sizeof cache_dir, "%s/bfh-filters", read_only ? c.idx : c.dir);
  first_file(cache_dir, ".vf", vf, sizeof vf);
  make_fifo(vf);
  run_bounded("open and search with a FIFO cache file", open_and_search, &c);
  if (!is_kind(vf, S_IFREG)) fail_msg("%s was not rebuilt as a regular file", vf);
}

static void test_special_files_leveldb_cache_fifo_is_rebuilt(void **state) {
  (void)state;
  cache_fifo(BFH_ENGINE_LEVELDB, 0, "leveldb-cache");
}

static void test_special_files_leveldb_readonly_cache_fifo_is_rebuilt(void **state) {
  (void)state;
  cache_fifo(BFH_ENGINE_LEVELDB, 1, "leveldb-ro-cache");
}

static void test_special_files_rocksdb_cache_fifo_is_rebuilt(void **state) {
  (void)state;
  cache_fifo(BFH_ENGINE_ROCKSDB, 0, "rocksdb-cache");
}

static void test_special_files_rocksdb_readonly_cache_fifo_is_rebuilt(void **state) {
  (void)state;
  cache_fifo(BFH_ENGINE_ROCKSDB, 1, "rocksdb-ro-cache");
}

/* bfh check reports the FIFO as a harmless cache file and reads on. */
static void test_special_files_check_reports_cache_fifo(void **state) {
  (void)state;
  db_case_t c;
  case_init(&c, "leveldb-check", BFH_ENGINE_LEVELDB, 0);
  run_bounded("make the database", make_db, &c);
  char cache_dir[TEST_PATH_MAX + 64], vf[TEST_PATH_MAX + 128];
  snprintf(cache_dir, sizeof cache_dir, "%s/bfh-filters", c.dir);
  first_file(cache_dir, ".vf", vf, sizeof vf);
  make_fifo(vf);
  run_bounded("bfh_check with a FIFO cache file", check_db, &c);
  assert_true(is_kind(vf, S_IFIFO)); /* a check changes nothing */
}

/* ---- A FIFO in place of a database file: an error naming it ------------------------------ */

/* Which file of the database becomes a FIFO. */
typedef enum which { CURRENT_FILE, TABLE_FILE, PARAMS_FILE } which_t;

typedef struct db_fifo_case {
  db_case_t c;
  char fifo[TEST_PATH_MAX + 128];
} db_fifo_case_t;

/* Child: the open fails, or else a search of every value does, with BFH_E_CORRUPT and a
   message naming the FIFO. */
static int expect_refused(const void *arg, char *msg, size_t cap) {
  const db_fifo_case_t *f = arg;
  bfh_options o;
  options_for(&f->c, f->c.read_only, &o);
  bfh_db *db;
  int rc = bfh_open(f->c.dir, &o, &db);
  const char *e = NULL;
  if (rc == BFH_OK) {
    int found = 0;
    char v[64];
    size_t vl = value_of(0, v);
    bfh_search_stats st;
    rc = bfh_search(db, v, vl, BFH_SEARCH_SCAN, count_match, &found, &st);
    if (rc != BFH_OK) e = bfh_last_error(db);
  } else {
    e = bfh_last_error(NULL);
    db = NULL;
  }
  const char *base = strrchr(f->fifo, '/') + 1;
  int ok = rc == BFH_E_CORRUPT && e && strstr(e, FIFO_MSG) && strstr(e, base);
  if (!ok)
    failed(msg, cap, "%s open or search: status %d (want %d), message: %s", f->c.name, rc,
           BFH_E_CORRUPT, e ? e : "(none)");
  bfh_close(db);
  return !ok;
}

static void db_fifo(bfh_engine engine, int read_only, which_t which, const char *name) {
  if (!engine_built(engine)) skip();
  db_fifo_case_t f;
  case_init(&f.c, name, engine, read_only);
  run_bounded("make the database", make_db, &f.c);
  if (which == CURRENT_FILE)
    snprintf(f.fifo, sizeof f.fifo, "%s/CURRENT", f.c.dir);
  else if (which == PARAMS_FILE)
    snprintf(f.fifo, sizeof f.fifo, "%s/BFH-PARAMS", read_only ? f.c.idx : f.c.dir);
  else
    first_file(f.c.dir, engine == BFH_ENGINE_LEVELDB ? ".ldb" : ".sst", f.fifo, sizeof f.fifo);
  make_fifo(f.fifo);
  run_bounded(name, expect_refused, &f);
  assert_true(is_kind(f.fifo, S_IFIFO)); /* damage is reported, never repaired silently */
}

static void test_special_files_database_fifo_is_an_error(void **state) {
  (void)state;
  db_fifo(BFH_ENGINE_LSM, 0, CURRENT_FILE, "lsm-current");
  db_fifo(BFH_ENGINE_LSM, 0, TABLE_FILE, "lsm-table");
  db_fifo(BFH_ENGINE_LSM, 0, PARAMS_FILE, "lsm-params");
  db_fifo(BFH_ENGINE_LEVELDB, 0, CURRENT_FILE, "leveldb-current");
  db_fifo(BFH_ENGINE_LEVELDB, 0, TABLE_FILE, "leveldb-table");
  db_fifo(BFH_ENGINE_LEVELDB, 1, CURRENT_FILE, "leveldb-ro-current");
  db_fifo(BFH_ENGINE_LEVELDB, 1, TABLE_FILE, "leveldb-ro-table");
  db_fifo(BFH_ENGINE_LEVELDB, 1, PARAMS_FILE, "leveldb-ro-params");
}

static void test_special_files_rocksdb_database_fifo_is_an_error(void **state) {
  (void)state;
  if (!engine_built(BFH_ENGINE_ROCKSDB)) skip();
  db_fifo(BFH_ENGINE_ROCKSDB, 0, CURRENT_FILE, "rocksdb-current");
  db_fifo(BFH_ENGINE_ROCKSDB, 0, TABLE_FILE, "rocksdb-table");
  db_fifo(BFH_ENGINE_ROCKSDB, 1, CURRENT_FILE, "rocksdb-ro-current");
  db_fifo(BFH_ENGINE_ROCKSDB, 1, TABLE_FILE, "rocksdb-ro-table");
}

static int setup(void **state) {
  (void)state;
  return test_tmpdir_create(tmpdir, sizeof tmpdir, "special_files_test");
}

static int teardown(void **state) {
  (void)state;
  return test_rmrf(tmpdir);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_special_files_leveldb_cache_fifo_is_rebuilt),
      cmocka_unit_test(test_special_files_leveldb_readonly_cache_fifo_is_rebuilt),
      cmocka_unit_test(test_special_files_rocksdb_cache_fifo_is_rebuilt),
      cmocka_unit_test(test_special_files_rocksdb_readonly_cache_fifo_is_rebuilt),
      cmocka_unit_test(test_special_files_check_reports_cache_fifo),
      cmocka_unit_test(test_special_files_database_fifo_is_an_error),
      cmocka_unit_test(test_special_files_rocksdb_database_fifo_is_an_error),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}

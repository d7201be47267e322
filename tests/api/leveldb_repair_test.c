/* bfh_repair with BFH_ENGINE_LEVELDB (LevelDB's RepairDB behind bfh's checks,
 * lsm_hooks/engines/leveldb/ldb_repair.c): it refuses, writing nothing, a directory of the own engine
 * (with or without its IDENTITY), a plain or missing directory, and a database that a LevelDB
 * program holds open, in another process (which goes on writing, and reopens its database
 * intact afterwards) or in this one (whose lock survives the refusal); while it repairs it
 * holds the locks, so that neither LevelDB nor bfh can open the database.
 *
 * The LevelDB owners run in other processes: this program run again with --own or
 * --try-open (exec, so that LevelDB starts afresh there).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <dirent.h>
#include <leveldb/c.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bfh.h"
/* Not public (api/testbed.h): the hook run while the repair holds its locks. */
#include "api/testbed.h"
#include "tests/test_util.h"

#define NKEYS 2000

static char tmpdir[4096];
static char self_exe[4096];

/* ---- The other processes ------------------------------------------------------------------ */

static leveldb_t *ldb_open_small(const char *dir, int create, char **err) {
  leveldb_options_t *o = leveldb_options_create();
  leveldb_options_set_create_if_missing(o, create);
  leveldb_options_set_write_buffer_size(o, 64 << 10); /* tables and a log, compactions */
  leveldb_t *db = leveldb_open(o, dir, err);
  leveldb_options_destroy(o);
  return db;
}

static size_t kv(long i, char *k, char *v, size_t *vl) {
  *vl = (size_t)snprintf(v, 64, "value-%ld-%0*d", i, 40, 7);
  return (size_t)snprintf(k, 32, "k%08ld", i);
}

static void put(leveldb_t *db, leveldb_writeoptions_t *wo, long i, char **err) {
  char k[32], v[64];
  size_t vl, kl = kv(i, k, v, &vl);
  leveldb_put(db, wo, k, kl, v, vl, err);
}

/* --own DIR: owns DIR through LevelDB, writes NKEYS keys, prints "ready", writes on until
   its standard input closes, then closes the database, opens it again and finds every key it
   wrote. Exit 0 if all of that worked. */
static int own_main(const char *dir) {
  char *err = NULL, k[32], v[64];
  size_t vl;
  leveldb_t *db = ldb_open_small(dir, 1, &err);
  if (err) return fprintf(stderr, "owner: open: %s\n", err), 2;
  leveldb_writeoptions_t *wo = leveldb_writeoptions_create();
  long n = 0;
  for (; n < NKEYS && !err; n++) put(db, wo, n, &err);
  if (err) return fprintf(stderr, "owner: put: %s\n", err), 3;
  printf("ready\n");
  fflush(stdout);
  struct pollfd pf = {.fd = 0, .events = POLLIN};
  while (!err && poll(&pf, 1, 0) == 0)
    for (int i = 0; i < 100 && !err; i++, n++) put(db, wo, n, &err);
  if (err) return fprintf(stderr, "owner: put: %s\n", err), 4;
  leveldb_writeoptions_destroy(wo);
  leveldb_close(db);
  db = ldb_open_small(dir, 0, &err); /* the reopen a repair under the owner broke */
  if (err) return fprintf(stderr, "owner: reopen: %s\n", err), 5;
  leveldb_readoptions_t *ro = leveldb_readoptions_create();
  for (long i = 0; i < n && !err; i++) {
    size_t kl = kv(i, k, v, &vl), gl = 0;
    char *got = leveldb_get(db, ro, k, kl, &gl, &err);
    if (!err && (!got || gl != vl || memcmp(got, v, vl) != 0))
      return fprintf(stderr, "owner: key %ld of %ld lost\n", i, n), 6;
    leveldb_free(got);
  }
  if (err) return fprintf(stderr, "owner: get: %s\n", err), 7;
  leveldb_readoptions_destroy(ro);
  leveldb_close(db);
  return 0;
}

/* --try-open DIR: exit 0 if LevelDB cannot open DIR because of its lock. */
static int try_open_main(const char *dir) {
  char *err = NULL;
  leveldb_t *db = ldb_open_small(dir, 0, &err);
  if (db) leveldb_close(db);
  int locked = err && strstr(err, "lock");
  if (!locked) fprintf(stderr, "try-open: %s\n", err ? err : "opened");
  leveldb_free(err); /* (a leak here fails the child under LeakSanitizer) */
  return locked ? 0 : 1;
}

/* Runs this program with args; its standard input and output are pipes (*to, *from). */
static pid_t spawn(const char *mode, const char *dir, int *to, int *from) {
  int in[2], out[2];
  assert_int_equal(pipe(in), 0);
  assert_int_equal(pipe(out), 0);
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    dup2(in[0], 0);
    dup2(out[1], 1);
    close(in[0]), close(in[1]), close(out[0]), close(out[1]);
    execl(self_exe, self_exe, mode, dir, (char *)NULL);
    _exit(127);
  }
  close(in[0]);
  close(out[1]);
  *to = in[1];
  *from = out[0];
  return pid;
}

static int wait_exit(pid_t pid) {
  int status;
  assert_int_equal(waitpid(pid, &status, 0), pid);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/* Runs --try-open on dir: 0 if LevelDB found the database locked. */
static int try_open(const char *dir) {
  int to, from;
  pid_t pid = spawn("--try-open", dir, &to, &from);
  close(to);
  close(from);
  return wait_exit(pid);
}

/* ---- Helpers -------------------------------------------------------------------------------- */

/* Every file of dir (names, sizes, bytes) into out, as one string. */
static void listing(const char *dir, char *out, size_t cap) {
  struct dirent **list;
  int n = scandir(dir, &list, NULL, alphasort);
  assert_true(n >= 0);
  out[0] = '\0';
  for (int i = 0; i < n; i++) {
    char p[4400], line[600];
    snprintf(p, sizeof p, "%s/%s", dir, list[i]->d_name);
    struct stat sb;
    assert_int_equal(stat(p, &sb), 0);
    unsigned long sum = 0;
    FILE *f = S_ISREG(sb.st_mode) ? fopen(p, "rb") : NULL;
    for (int c; f && (c = fgetc(f)) != EOF;) sum = sum * 131 + (unsigned)c;
    if (f) fclose(f);
    snprintf(line, sizeof line, "%s %lld %lx\n", list[i]->d_name, (long long)sb.st_size, sum);
    strncat(out, line, cap - strlen(out) - 1);
    free(list[i]);
  }
  free(list);
}

static int repair_leveldb(const char *dir) {
  bfh_options o;
  bfh_options_init(&o);
  o.engine = BFH_ENGINE_LEVELDB;
  int rc = bfh_repair(dir, &o, NULL);
  print_message("repair %s: %s\n", dir, rc == BFH_OK ? "ok" : bfh_last_error(NULL));
  return rc;
}

/* bfh_repair with the LevelDB engine refuses dir with rc, a message holding msg, and leaves
   every file as it was. */
static void assert_refused(const char *dir, int rc, const char *msg) {
  static char before[1 << 16], after[1 << 16];
  listing(dir, before, sizeof before);
  assert_int_equal(repair_leveldb(dir), rc);
  if (!strstr(bfh_last_error(NULL), msg))
    fail_msg("message \"%s\" lacks \"%s\"", bfh_last_error(NULL), msg);
  listing(dir, after, sizeof after);
  assert_string_equal(before, after);
}

static void own_get(const char *dir, const char *key, const char *want) {
  bfh_db *db = NULL;
  assert_int_equal(bfh_open(dir, NULL, &db), BFH_OK);
  void *v = NULL;
  size_t n = 0;
  assert_int_equal(bfh_get(db, key, strlen(key), &v, &n), BFH_OK);
  assert_int_equal(n, strlen(want));
  assert_memory_equal(v, want, n);
  bfh_free(v);
  assert_int_equal(bfh_close(db), BFH_OK);
}

/* ---- Tests ---------------------------------------------------------------------------------- */

/* An own-engine database: refused, untouched, still readable by the own engine; without its
   IDENTITY it is told by its tables' magic. */
static void test_leveldb_repair_refuses_own_engine(void **state) {
  (void)state;
  char dir[4300], p[4400];
  snprintf(dir, sizeof dir, "%s/own", tmpdir);
  bfh_db *db = NULL;
  bfh_options o;
  bfh_options_init(&o);
  o.create_if_missing = 1;
  assert_int_equal(bfh_open(dir, &o, &db), BFH_OK);
  for (int i = 0; i < 1000; i++) {
    char k[32], v[32];
    int kl = snprintf(k, sizeof k, "k%d", i), vl = snprintf(v, sizeof v, "v%d", i);
    assert_int_equal(bfh_put(db, k, (size_t)kl, v, (size_t)vl), BFH_OK);
  }
  assert_int_equal(bfh_flush(db), BFH_OK);
  assert_int_equal(bfh_put(db, "last", 4, "in-log", 6), BFH_OK);
  assert_int_equal(bfh_close(db), BFH_OK);
  assert_refused(dir, BFH_E_INVALID, "is a bfh (own engine) database");
  own_get(dir, "k999", "v999");
  own_get(dir, "last", "in-log");
  snprintf(p, sizeof p, "%s/lost", dir);
  assert_int_equal(access(p, F_OK), -1);
  /* IDENTITY gone: its tables still say whose they are. */
  char ident[4400], saved[4400];
  snprintf(ident, sizeof ident, "%s/IDENTITY", dir);
  snprintf(saved, sizeof saved, "%s/IDENTITY.saved", tmpdir);
  assert_int_equal(rename(ident, saved), 0);
  assert_refused(dir, BFH_E_INVALID, "own-engine table");
  assert_int_equal(rename(saved, ident), 0);
  own_get(dir, "k7", "v7");
}

/* A directory with no LevelDB file (empty, or with other files) and a missing one: refused,
   nothing written or created. */
static void test_leveldb_repair_refuses_plain_directory(void **state) {
  (void)state;
  char dir[4300], p[4400];
  snprintf(dir, sizeof dir, "%s/plain", tmpdir);
  assert_int_equal(test_mkdirs(dir), 0);
  assert_refused(dir, BFH_E_INVALID, "not a LevelDB database");
  snprintf(p, sizeof p, "%s/notes.txt", dir);
  FILE *f = fopen(p, "w");
  assert_non_null(f);
  fputs("hello\n", f);
  fclose(f);
  snprintf(p, sizeof p, "%s/LOG", dir); /* what a failed create leaves is no database */
  f = fopen(p, "w");
  assert_non_null(f);
  fclose(f);
  assert_refused(dir, BFH_E_INVALID, "not a LevelDB database");
  snprintf(p, sizeof p, "%s/missing", tmpdir);
  assert_int_equal(repair_leveldb(p), BFH_E_INVALID);
  assert_non_null(strstr(bfh_last_error(NULL), "does not exist"));
  assert_int_equal(access(p, F_OK), -1);
}

/* A LevelDB program in another process owns the database and keeps writing: the repair is
   refused naming the process, and the owner, closing and reopening, finds every key. */
static void test_leveldb_repair_refuses_live_owner(void **state) {
  (void)state;
  char dir[4300], p[4400];
  snprintf(dir, sizeof dir, "%s/live", tmpdir);
  int to, from;
  pid_t pid = spawn("--own", dir, &to, &from);
  char buf[16] = {0};
  assert_int_equal(read(from, buf, 6), 6); /* "ready\n": it holds the database */
  assert_string_equal(buf, "ready\n");
  char want[64];
  snprintf(want, sizeof want, "database is open in process %ld", (long)pid);
  assert_int_equal(repair_leveldb(dir), BFH_E_BUSY);
  if (!strstr(bfh_last_error(NULL), want))
    fail_msg("message \"%s\" lacks \"%s\"", bfh_last_error(NULL), want);
  snprintf(p, sizeof p, "%s/lost", dir);
  assert_int_equal(access(p, F_OK), -1); /* RepairDB never ran */
  close(to);                              /* the owner stops, closes and reopens */
  close(from);
  assert_int_equal(wait_exit(pid), 0);
  assert_int_equal(repair_leveldb(dir), BFH_OK); /* closed: now it may */
}

/* This process holds the database through LevelDB: refused without touching LOCK, whose lock
   this process still holds afterwards. */
static void test_leveldb_repair_refuses_own_process(void **state) {
  (void)state;
  char dir[4300];
  snprintf(dir, sizeof dir, "%s/self", tmpdir);
  char *err = NULL;
  leveldb_t *db = ldb_open_small(dir, 1, &err);
  assert_null(err);
  leveldb_writeoptions_t *wo = leveldb_writeoptions_create();
  leveldb_put(db, wo, "a", 1, "b", 1, &err);
  assert_null(err);
  assert_int_equal(repair_leveldb(dir), BFH_E_BUSY);
  assert_non_null(strstr(bfh_last_error(NULL), "(this one)"));
  assert_int_equal(try_open(dir), 0); /* the lock is still this process's */
  leveldb_writeoptions_destroy(wo);
  leveldb_close(db);
}

typedef struct lock_probe {
  int fired, ldb_locked, bfh_busy;
} lock_probe_t;

static void probe_locks(void *arg, const char *path) {
  lock_probe_t *h = arg;
  h->fired++;
  h->ldb_locked = try_open(path) == 0;
  bfh_options o;
  bfh_options_init(&o);
  o.engine = BFH_ENGINE_LEVELDB;
  bfh_db *db = NULL;
  h->bfh_busy = bfh_open(path, &o, &db) == BFH_E_BUSY;
  bfh_close(db);
}

/* While RepairDB runs, LevelDB (another process) and bfh (this one) cannot open the database;
   after it, the data is there. */
static void test_leveldb_repair_holds_the_lock(void **state) {
  (void)state;
  char dir[4300];
  snprintf(dir, sizeof dir, "%s/held", tmpdir);
  int to, from;
  pid_t pid = spawn("--own", dir, &to, &from);
  char buf[8];
  assert_int_equal(read(from, buf, 6), 6);
  close(to);
  close(from);
  assert_int_equal(wait_exit(pid), 0);
  lock_probe_t h = {0};
  engine_leveldb_repair_set_hook(probe_locks, &h);
  assert_int_equal(repair_leveldb(dir), BFH_OK);
  engine_leveldb_repair_set_hook(NULL, NULL);
  assert_int_equal(h.fired, 1);
  assert_true(h.ldb_locked);
  assert_true(h.bfh_busy);
  assert_int_equal(try_open(dir), 1); /* released: LevelDB opens it again */
  char *err = NULL, k[32], v[64];
  size_t vl;
  leveldb_t *db = ldb_open_small(dir, 0, &err);
  assert_null(err);
  leveldb_readoptions_t *ro = leveldb_readoptions_create();
  for (long i = 0; i < NKEYS; i += 37) {
    size_t gl, kl = kv(i, k, v, &vl);
    char *got = leveldb_get(db, ro, k, kl, &gl, &err);
    assert_null(err);
    assert_non_null(got);
    assert_int_equal(gl, vl);
    assert_memory_equal(got, v, vl);
    leveldb_free(got);
  }
  leveldb_readoptions_destroy(ro);
  leveldb_close(db);
}

static int setup(void **state) {
  (void)state;
  return test_tmpdir_create(tmpdir, sizeof tmpdir, "leveldb_repair");
}

static int teardown(void **state) {
  (void)state;
  return test_rmrf(tmpdir);
}

int main(int argc, char **argv) {
  if (argc == 3 && !strcmp(argv[1], "--own")) return own_main(argv[2]);
  if (argc == 3 && !strcmp(argv[1], "--try-open")) return try_open_main(argv[2]);
  ssize_t n = readlink("/proc/self/exe", self_exe, sizeof self_exe - 1);
  if (n <= 0) return 1;
  self_exe[n] = '\0';
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_leveldb_repair_refuses_own_engine),
      cmocka_unit_test(test_leveldb_repair_refuses_plain_directory),
      cmocka_unit_test(test_leveldb_repair_refuses_live_owner),
      cmocka_unit_test(test_leveldb_repair_refuses_own_process),
      cmocka_unit_test(test_leveldb_repair_holds_the_lock),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}

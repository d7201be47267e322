/* A read-only handle writes nothing into the database's directory (issue 44, item 5): an index
 * directory inside it is refused (BFH_E_INVALID) however it is spelled, whether it exists yet
 * or not, and nothing is created in the database's directory by the refused open. The
 * spellings: DB/idx, DB/../DB/idx, link-to-DB/idx, DB itself, DB/new/../idx, an existing
 * subdirectory of DB, and DB opened through a symlink with DB/idx as the index directory. An
 * index directory whose name only starts like the database's (DB-idx) and one reached from
 * DB by ".." are outside, and work. Each check runs on the LevelDB and the RocksDB read-only
 * engines (one body, driven by a table).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bfh.h"
#include "tests/test_util.h"

#define NKEYS 500

static char tmpdir[TEST_PATH_MAX];

/* The names under dir, recursively ("a", "a/b", ...), one per line, sorted, into out. */
static void tree(const char *dir, const char *rel, char *out, size_t cap) {
  char path[2 * TEST_PATH_MAX];
  snprintf(path, sizeof path, "%s%s%s", dir, rel[0] ? "/" : "", rel);
  DIR *d = opendir(path);
  assert_non_null(d);
  char *names[256];
  size_t n = 0;
  struct dirent *de;
  while ((de = readdir(d)) && n < 256)
    if (strcmp(de->d_name, ".") && strcmp(de->d_name, "..")) names[n++] = strdup(de->d_name);
  closedir(d);
  for (size_t i = 1; i < n; i++) /* insertion sort: a few dozen names */
    for (size_t j = i; j > 0 && strcmp(names[j - 1], names[j]) > 0; j--) {
      char *t = names[j];
      names[j] = names[j - 1];
      names[j - 1] = t;
    }
  for (size_t i = 0; i < n; i++) {
    char sub[TEST_PATH_MAX];
    snprintf(sub, sizeof sub, "%s%s%s", rel, rel[0] ? "/" : "", names[i]);
    size_t len = strlen(out);
    snprintf(out + len, cap - len, "%s\n", sub);
    struct stat sb;
    snprintf(path, sizeof path, "%s/%s", dir, sub);
    if (lstat(path, &sb) == 0 && S_ISDIR(sb.st_mode)) tree(dir, sub, out, cap);
    free(names[i]);
  }
}

typedef struct engine_case {
  const char *name;
  bfh_engine engine;
} engine_case_t;

static const engine_case_t ENGINES[] = {{"leveldb", BFH_ENGINE_LEVELDB},
                                        {"rocksdb", BFH_ENGINE_ROCKSDB}};

/* A database of the engine in tmpdir/<name>, written and closed by its read-write engine. */
static void make_db(const engine_case_t *e, char *db, size_t cap) {
  snprintf(db, cap, "%s/%s", tmpdir, e->name);
  bfh_options o;
  bfh_options_init(&o);
  o.engine = e->engine;
  o.value_filter_bits = 1 << 14;
  bfh_db *h;
  if (bfh_open(db, &o, &h) != BFH_OK) fail_msg("open %s: %s", db, bfh_last_error(NULL));
  char k[32], v[32];
  for (int i = 0; i < NKEYS; i++) {
    int kl = snprintf(k, sizeof k, "key%05d", i), vl = snprintf(v, sizeof v, "val%05d", i);
    assert_int_equal(bfh_put(h, k, (size_t)kl, v, (size_t)vl), BFH_OK);
  }
  assert_int_equal(bfh_flush(h), BFH_OK);
  assert_int_equal(bfh_close(h), BFH_OK);
}

static int count_match(void *arg, const void *key, size_t len) {
  (void)key, (void)len;
  ++*(int *)arg;
  return 0;
}

static int open_ro(const engine_case_t *e, const char *db, const char *idx, bfh_db **h) {
  bfh_options o;
  bfh_options_init(&o);
  o.engine = e->engine;
  o.read_only = 1;
  o.index_dir = idx;
  *h = NULL;
  return bfh_open(db, &o, h);
}

/* The read-only open of db with index directory idx is refused, and db's directory (the real
   one, real_db) holds the same names as before. */
static void expect_refused(const engine_case_t *e, const char *db, const char *idx,
                           const char *real_db, const char *before) {
  bfh_db *h;
  int rc = open_ro(e, db, idx, &h);
  if (rc != BFH_E_INVALID) {
    bfh_close(h);
    fail_msg("%s: read-only open of %s with index dir %s: status %d, want BFH_E_INVALID (%s)",
             e->name, db, idx, rc, rc ? bfh_last_error(NULL) : "opened");
  }
  const char *msg = bfh_last_error(NULL);
  if (!strstr(msg, "inside")) fail_msg("%s: message '%s' does not say 'inside'", idx, msg);
  static char after[1 << 16];
  after[0] = '\0';
  tree(real_db, "", after, sizeof after);
  if (strcmp(before, after) != 0)
    fail_msg("%s: the refused open changed %s:\nbefore:\n%safter:\n%s", idx, real_db, before,
             after);
}

static void expect_opens(const engine_case_t *e, const char *db, const char *idx,
                         const char *before) {
  bfh_db *h;
  int rc = open_ro(e, db, idx, &h);
  if (rc != BFH_OK) fail_msg("%s: index dir %s: %d %s", e->name, idx, rc, bfh_last_error(NULL));
  char v[32];
  int vl = snprintf(v, sizeof v, "val%05d", 7);
  bfh_search_stats st;
  int found = 0;
  assert_int_equal(bfh_search(h, v, (size_t)vl, BFH_SEARCH_AUTO, count_match, &found, &st), BFH_OK);
  assert_int_equal(found, 1);
  assert_int_equal(bfh_close(h), BFH_OK);
  static char after[1 << 16];
  after[0] = '\0';
  tree(db, "", after, sizeof after);
  assert_string_equal(before, after);
  struct stat sb;
  char params[2 * TEST_PATH_MAX];
  snprintf(params, sizeof params, "%s/BFH-PARAMS", idx);
  assert_int_equal(stat(params, &sb), 0); /* the index went where it was asked to */
}

static void test_readonly_index_dir_inside_the_database_is_refused(void **state) {
  (void)state;
  for (size_t i = 0; i < sizeof ENGINES / sizeof *ENGINES; i++) {
    const engine_case_t *e = &ENGINES[i];
    if (!bfh_engine_get(e->engine)) continue;
    char db[TEST_PATH_MAX + 32], p[2 * TEST_PATH_MAX], link[TEST_PATH_MAX + 64];
    make_db(e, db, sizeof db);
    snprintf(p, sizeof p, "%s/sub", db); /* an existing subdirectory */
    assert_int_equal(mkdir(p, 0755), 0);
    snprintf(link, sizeof link, "%s/link-to-%s", tmpdir, e->name);
    assert_int_equal(symlink(db, link), 0);
    static char before[1 << 16];
    before[0] = '\0';
    tree(db, "", before, sizeof before);

    snprintf(p, sizeof p, "%s/idx", db);
    expect_refused(e, db, p, db, before);
    snprintf(p, sizeof p, "%s/../%s/idx", db, e->name);
    expect_refused(e, db, p, db, before);
    snprintf(p, sizeof p, "%s/idx", link);
    expect_refused(e, db, p, db, before);
    expect_refused(e, db, db, db, before);
    snprintf(p, sizeof p, "%s/", db);
    expect_refused(e, db, p, db, before);
    snprintf(p, sizeof p, "%s/new/../idx", db);
    expect_refused(e, db, p, db, before);
    snprintf(p, sizeof p, "%s/sub", db);
    expect_refused(e, db, p, db, before);
    snprintf(p, sizeof p, "%s/sub/deeper/idx", db);
    expect_refused(e, db, p, db, before);
    /* The database through a symlink, the index directory by its real path, and the other
       way round. */
    snprintf(p, sizeof p, "%s/idx", db);
    expect_refused(e, link, p, db, before);
    snprintf(p, sizeof p, "%s/idx", link);
    expect_refused(e, link, p, db, before);

    /* Outside: a name the database's is a prefix of, and one reached by "..". */
    snprintf(p, sizeof p, "%s-idx", db);
    expect_opens(e, db, p, before);
    snprintf(p, sizeof p, "%s/../%s-idx2", db, e->name);
    expect_opens(e, db, p, before);
  }
}

static int setup(void **state) {
  (void)state;
  char made[TEST_PATH_MAX];
  if (test_tmpdir_create(made, sizeof made, "readonly_index_dir_test") != 0) return -1;
  return realpath(made, tmpdir) ? 0 : -1;
}

static int teardown(void **state) {
  (void)state;
  return test_rmrf(tmpdir);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_readonly_index_dir_inside_the_database_is_refused),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}

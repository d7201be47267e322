/* The own engine's read-only row (bfh_options.read_only on BFH_ENGINE_LSM, lsm_readonly.h):
 * an open, every search method, get, iteration, stats and tables write nothing anywhere in the
 * database's directory (names, sizes, times and contents the same before and after); it opens
 * beside a read-write handle that holds the LOCK and sees that handle's writes (in its log, in
 * new tables, deletions) at the next search, while a search with nothing written reads no file
 * again; a log record or MANIFEST edit cut short at the end is "not yet there" and is read once
 * complete; a missing database is a clear error that creates nothing.
 * The live test against a writer in another process: lsm_readonly_concurrency_test.c. */
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
#include "lsm_hooks/engines/lsm/engine_lsm.h"
#include "lsm_hooks/engines/lsm_ro/lsm_readonly.h"
#include "api/testbed.h" /* bfh_internal_engine: the refresh counter, the writer */
#include "tests/test_util.h"
#include "util/crc32c.h"

#define NKEYS 20000
#define NTAIL 300 /* puts left in the log */
#define NVALS 10

static char g_dir[1024], g_db[1100];

static int setup(void **state) {
  (void)state;
  if (test_tmpdir_create(g_dir, sizeof g_dir, "lsm_readonly_test")) return -1;
  snprintf(g_db, sizeof g_db, "%s/db", g_dir);
  return 0;
}

static int teardown(void **state) {
  (void)state;
  return test_rmrf(g_dir);
}

static size_t key_of(int i, char *buf) {
  return (size_t)sprintf(buf, "k%06d", i);
}
static size_t val_of(int v, char *buf) {
  return (size_t)sprintf(buf, "v%d", v);
}

/* 1: both opens read tables through mappings (bfh_options.mmap_reads). */
static int g_mapped;

static bfh_db *open_rw(void) {
  bfh_options o;
  bfh_options_init(&o);
  o.mmap_reads = g_mapped;
  o.memtable_bytes = 64 << 10;
  o.table_bytes = 64 << 10;
  bfh_db *db = NULL;
  int rc = bfh_open(g_db, &o, &db);
  if (rc != BFH_OK) fail_msg("read-write open: %d %s", rc, bfh_last_error(NULL));
  return db;
}

static bfh_db *open_ro(void) {
  bfh_options o;
  bfh_options_init(&o);
  o.read_only = 1;
  o.mmap_reads = g_mapped;
  bfh_db *db = NULL;
  int rc = bfh_open(g_db, &o, &db);
  if (rc != BFH_OK) fail_msg("read-only open: %d %s", rc, bfh_last_error(NULL));
  return db;
}

static void put(bfh_db *db, int i, int v) {
  char k[32], val[32];
  size_t kl = key_of(i, k), vl = val_of(v, val);
  assert_int_equal(bfh_put(db, k, kl, val, vl), BFH_OK);
}

/* Keys 0..NKEYS-1 with value i mod NVALS, flushed into tables, then NTAIL of them again with
   value NVALS + 1 left in the log. */
static void make_database(bfh_db *db) {
  for (int i = 0; i < NKEYS; i++) put(db, i, i % NVALS);
  assert_int_equal(bfh_flush(db), BFH_OK);
  for (int i = 0; i < NTAIL; i++) put(db, i * 7, NVALS + 1);
}

/* The keys value v is held by in make_database's state. */
static int expected(int v) {
  if (v == NVALS + 1) return NTAIL;
  int n = 0;
  for (int i = 0; i < NKEYS; i++) n += i % NVALS == v && !(i % 7 == 0 && i / 7 < NTAIL);
  return n;
}

static int count_key(void *arg, const void *key, size_t kl) {
  (void)key, (void)kl;
  ++*(int *)arg;
  return 0;
}

static int search_count(bfh_db *db, int v, bfh_method m) {
  char val[32];
  size_t vl = val_of(v, val);
  int n = 0;
  int rc = bfh_search(db, val, vl, m, count_key, &n, NULL);
  if (rc != BFH_OK) fail_msg("search v%d method %d: %d %s", v, (int)m, rc, bfh_last_error(db));
  return n;
}

/* ---- The directory's state ---------------------------------------------------------------- */

/* Each file's name, size, modification and change times (ns) and CRC, sorted by name
   (malloc'd). */
static char *dir_state(const char *dir) {
  struct dirent **names = NULL;
  int n = scandir(dir, &names, NULL, alphasort);
  assert_true(n >= 0);
  size_t cap = 64 + (size_t)n * 160, len = 0;
  char *out = calloc(1, cap);
  assert_non_null(out);
  for (int i = 0; i < n; i++) {
    char path[2200];
    snprintf(path, sizeof path, "%s/%s", dir, names[i]->d_name);
    struct stat st;
    assert_int_equal(lstat(path, &st), 0);
    uint32_t crc = 0;
    if (S_ISREG(st.st_mode)) {
      size_t size = 0;
      uint8_t *data = test_read_file(path, &size);
      assert_true(data != NULL || size == 0);
      crc = crc32c_value(data, size);
      free(data);
    }
    len +=
        (size_t)snprintf(out + len, cap - len, "%s:%lld:%lld.%09ld:%lld.%09ld:%08x\n",
                         names[i]->d_name, (long long)st.st_size, (long long)st.st_mtim.tv_sec,
                         st.st_mtim.tv_nsec, (long long)st.st_ctim.tv_sec, st.st_ctim.tv_nsec, crc);
    free(names[i]);
  }
  free(names);
  return out;
}

static int on_table(void *arg, const bfh_table_info *t) {
  (void)t;
  ++*(int *)arg;
  return 0;
}

/* Open, a search by every method, gets (a table's key, a log's key, a missing key), a whole
   iteration, stats and tables, then close: the directory is as it was, file by file. */
static void test_lsm_readonly_writes_nothing(void **state) {
  (void)state;
  bfh_db *w = open_rw();
  make_database(w);
  assert_int_equal(bfh_close(w), BFH_OK);
  char *before = dir_state(g_db);

  bfh_db *r = open_ro();
  assert_int_equal(engine_lsm_ro_refreshes(bfh_internal_engine(r)), 1); /* the open's */
  for (int m = BFH_SEARCH_SCAN; m <= BFH_SEARCH_AUTO; m++) {
    assert_int_equal(search_count(r, 3, (bfh_method)m), expected(3));
    assert_int_equal(search_count(r, NVALS + 1, (bfh_method)m), expected(NVALS + 1));
  }
  /* Nothing was written: every search after the open's refresh was one poll of the watch. */
  assert_int_equal(engine_lsm_ro_refreshes(bfh_internal_engine(r)), 1);
  void *v = NULL;
  size_t vl = 0;
  assert_int_equal(bfh_get(r, "k000013", 7, &v, &vl), BFH_OK);
  assert_memory_equal(v, "v3", 2);
  bfh_free(v);
  assert_int_equal(bfh_get(r, "k000014", 7, &v, &vl), BFH_OK); /* rewritten in the log */
  assert_memory_equal(v, "v11", 3);
  bfh_free(v);
  assert_int_equal(bfh_get(r, "nokey", 5, &v, &vl), BFH_NOT_FOUND);
  bfh_iter *it = NULL;
  assert_int_equal(bfh_iter_create(r, &it), BFH_OK);
  int n = 0;
  for (bfh_iter_seek_first(it); bfh_iter_valid(it); bfh_iter_next(it)) n++;
  assert_int_equal(bfh_iter_status(it), BFH_OK);
  bfh_iter_destroy(it);
  assert_int_equal(n, NKEYS);
  bfh_db_stats st;
  assert_int_equal(bfh_stats(r, &st), BFH_OK);
  assert_true(st.tables > 0);
  int tables = 0;
  assert_int_equal(bfh_tables(r, on_table, &tables), BFH_OK);
  assert_int_equal((uint64_t)tables, st.tables);
  assert_int_equal(bfh_put(r, "x", 1, "y", 1), BFH_E_UNSUPPORTED);
  assert_int_equal(bfh_close(r), BFH_OK);

  char *after = dir_state(g_db);
  assert_string_equal(before, after);
  free(before);
  free(after);
}

/* A read-write handle holds the LOCK; the read-only one opens beside it, finds what it wrote
   (tables and log), sees its next writes (a put in the log, a flush, a delete) at the next
   search, and with nothing written reads no file again. */
static void beside_writer(void) {
  bfh_db *w = open_rw();
  make_database(w);
  /* The writer's compactions run on a thread of their own: wait until it has none left, so
     that "nothing written" below holds for the files too. */
  err_t err;
  err_clear(&err);
  assert_int_equal(engine_lsm_wait_idle(bfh_internal_engine(w), &err), BFH_OK);
  bfh_db *r = open_ro();
  engine_t *e = bfh_internal_engine(r);
  assert_int_equal(search_count(r, 4, BFH_SEARCH_AUTO), expected(4));
  assert_int_equal(search_count(r, NVALS + 1, BFH_SEARCH_AUTO), NTAIL);

  uint64_t refreshes = engine_lsm_ro_refreshes(e);
  assert_int_equal(search_count(r, 4, BFH_SEARCH_AUTO), expected(4));
  assert_int_equal(engine_lsm_ro_refreshes(e), refreshes); /* nothing written: one poll */

  put(w, 5, NVALS + 2); /* in the writer's log */
  assert_int_equal(search_count(r, NVALS + 2, BFH_SEARCH_AUTO), 1);
  assert_true(engine_lsm_ro_refreshes(e) > refreshes);
  for (int i = 0; i < 5000; i++) put(w, NKEYS + i, NVALS + 3);
  assert_int_equal(bfh_flush(w), BFH_OK); /* new tables, the log number moved */
  for (int m = BFH_SEARCH_SCAN; m <= BFH_SEARCH_AUTO; m++)
    assert_int_equal(search_count(r, NVALS + 3, (bfh_method)m), 5000);
  assert_int_equal(bfh_delete(w, "k000005", 7), BFH_OK);
  assert_int_equal(search_count(r, NVALS + 2, BFH_SEARCH_AUTO), 0);
  void *v = NULL;
  size_t vl = 0;
  assert_int_equal(bfh_get(r, "k000005", 7, &v, &vl), BFH_NOT_FOUND);

  /* The writer still owns the database: a second read-write open is refused. */
  bfh_options o;
  bfh_options_init(&o);
  bfh_db *w2 = NULL;
  assert_int_equal(bfh_open(g_db, &o, &w2), BFH_E_BUSY);
  assert_int_equal(bfh_close(r), BFH_OK);
  assert_int_equal(bfh_close(w), BFH_OK);
}

static void test_lsm_readonly_beside_writer(void **state) {
  (void)state;
  beside_writer();
}

/* The same with both opens reading tables through mappings. */
static void test_lsm_readonly_beside_writer_mapped(void **state) {
  (void)state;
  g_mapped = 1;
  beside_writer();
  g_mapped = 0;
}

/* Appends the bytes [from, to) of data to path (a writer finishing its record). */
static void append(const char *path, const uint8_t *data, size_t from, size_t to) {
  FILE *f = fopen(path, "ab");
  assert_non_null(f);
  assert_int_equal(fwrite(data + from, 1, to - from, f), to - from);
  assert_int_equal(fclose(f), 0);
}

/* The newest log file of the database (its name into path). */
static void newest_log(char *path, size_t cap) {
  DIR *d = opendir(g_db);
  assert_non_null(d);
  unsigned long long best = 0;
  struct dirent *de;
  while ((de = readdir(d))) {
    unsigned long long n;
    char ext[8];
    if (sscanf(de->d_name, "%llu.%7s", &n, ext) == 2 && strcmp(ext, "log") == 0 && n > best)
      best = n;
  }
  closedir(d);
  assert_true(best > 0);
  snprintf(path, cap, "%s/%06llu.log", g_db, best);
}

/* A log whose last record is cut short (a write in flight) opens and searches as without that
   record; once the rest is appended, the next search finds it. The same for the MANIFEST's
   last edit (a flush's edit in flight): its table is not seen until the edit is whole. */
static void test_lsm_readonly_torn_tails(void **state) {
  (void)state;
  bfh_db *w = open_rw();
  make_database(w);
  put(w, 1, NVALS + 4); /* the log's last record */
  assert_int_equal(bfh_close(w), BFH_OK);
  char log[2200];
  newest_log(log, sizeof log);
  size_t len = 0;
  uint8_t *whole = test_read_file(log, &len);
  assert_non_null(whole);
  assert_int_equal(truncate(log, (off_t)(len - 5)), 0);

  bfh_db *r = open_ro();
  assert_int_equal(search_count(r, NVALS + 4, BFH_SEARCH_AUTO), 0);
  assert_int_equal(search_count(r, NVALS + 1, BFH_SEARCH_AUTO), NTAIL);
  append(log, whole, len - 5, len - 2); /* still short */
  assert_int_equal(search_count(r, NVALS + 4, BFH_SEARCH_AUTO), 0);
  append(log, whole, len - 2, len);
  assert_int_equal(search_count(r, NVALS + 4, BFH_SEARCH_AUTO), 1);
  assert_int_equal(bfh_close(r), BFH_OK);
  free(whole);
}

/* Copies into dir `to` every file of `from` that `to` lacks. */
static void copy_missing(const char *from, const char *to) {
  DIR *d = opendir(from);
  assert_non_null(d);
  for (struct dirent *de; (de = readdir(d));) {
    char a[2400], b[2400];
    snprintf(a, sizeof a, "%s/%s", from, de->d_name);
    snprintf(b, sizeof b, "%s/%s", to, de->d_name);
    if (de->d_name[0] != '.' && access(b, F_OK) != 0)
      assert_int_equal(test_copy_file(a, b, UINT64_MAX), 0);
  }
  closedir(d);
}

static uint64_t live_tables(bfh_db *db) {
  bfh_db_stats st;
  assert_int_equal(bfh_stats(db, &st), BFH_OK);
  return st.tables;
}

/* A flush's MANIFEST edit cut short (the moment between the writer's append of the edit and
   the deletion of the flushed log, rebuilt in a copy): the reader sees the version before it,
   its entries in the log; once the edit is whole, the version after it, with the flush's table.
   Both answers hold every entry. */
static void test_lsm_readonly_torn_manifest(void **state) {
  (void)state;
  char copy[1200];
  snprintf(copy, sizeof copy, "%s/copy", g_dir);
  bfh_db *w = open_rw();
  for (int i = 0; i < 10; i++) put(w, i, NVALS + 4);
  assert_int_equal(bfh_flush(w), BFH_OK);                    /* few tables: no compaction is due */
  for (int i = 0; i < 500; i++) put(w, 100 + i, NVALS + 5); /* in the log, below a memtable */
  assert_int_equal(engine_lsm_wait_idle(bfh_internal_engine(w), NULL), BFH_OK);
  assert_int_equal(test_copy_dir(g_db, copy), 0);
  assert_int_equal(bfh_flush(w), BFH_OK); /* a second table, an edit, the log deleted */
  char cur[256], manifest[2400], copied[2400];
  assert_int_equal(test_current_manifest(g_db, cur, sizeof cur), 0);
  snprintf(manifest, sizeof manifest, "%s/%s", g_db, cur);
  snprintf(copied, sizeof copied, "%s/%s", copy, cur);
  size_t mlen = 0;
  uint8_t *m = test_read_file(manifest, &mlen); /* its last record: the flush's edit */
  assert_non_null(m);
  assert_int_equal(bfh_close(w), BFH_OK);
  copy_missing(g_db, copy); /* the new table and log; the copy keeps the flushed log */
  assert_int_equal(test_write_file(copied, m, mlen - 3), 0);

  bfh_options o;
  bfh_options_init(&o);
  o.read_only = 1;
  bfh_db *r = NULL;
  assert_int_equal(bfh_open(copy, &o, &r), BFH_OK);
  char val[32];
  size_t vl = val_of(NVALS + 5, val);
  int n = 0;
  assert_int_equal(bfh_search(r, val, vl, BFH_SEARCH_AUTO, count_key, &n, NULL), BFH_OK);
  assert_int_equal(n, 500);
  uint64_t tables = live_tables(r);
  append(copied, m, mlen - 3, mlen);
  n = 0;
  assert_int_equal(bfh_search(r, val, vl, BFH_SEARCH_AUTO, count_key, &n, NULL), BFH_OK);
  assert_int_equal(n, 500);
  assert_int_equal(live_tables(r), tables + 1);
  assert_int_equal(bfh_close(r), BFH_OK);
  free(m);
}

/* A new read-only handle's first search reads what the writer's filters point at, not every
   table: with BFH-INDEX written by the writer's close, AUTO for a value held by one key reads
   at most 2 of the many tables, and under a tenth of SCAN's bytes (the bound is loose: a false
   positive of the folded leaves costs one table's block). */
static void test_lsm_readonly_first_search_reads_little(void **state) {
  (void)state;
  bfh_db *w = open_rw();
  for (int i = 0; i < NKEYS; i++) {
    char k[32], v[32];
    size_t kl = key_of(i, k), vl = (size_t)sprintf(v, "unique-%d", i);
    assert_int_equal(bfh_put(w, k, kl, v, vl), BFH_OK);
  }
  assert_int_equal(bfh_close(w), BFH_OK);
  bfh_db *r = open_ro();
  bfh_search_stats auto_st, scan_st;
  int n = 0;
  assert_int_equal(bfh_search(r, "unique-4242", 11, BFH_SEARCH_AUTO, count_key, &n, &auto_st),
                   BFH_OK);
  assert_int_equal(n, 1);
  assert_int_equal(bfh_close(r), BFH_OK);
  r = open_ro();
  n = 0;
  assert_int_equal(bfh_search(r, "unique-4242", 11, BFH_SEARCH_SCAN, count_key, &n, &scan_st),
                   BFH_OK);
  assert_int_equal(n, 1);
  assert_int_equal(bfh_close(r), BFH_OK);
  print_message("AUTO read %llu of %u tables, %llu bytes; SCAN %llu bytes\n",
                (unsigned long long)auto_st.tables_scanned, auto_st.tables_live,
                (unsigned long long)auto_st.bytes_read, (unsigned long long)scan_st.bytes_read);
  assert_true(auto_st.tables_live >= 10);
  assert_true(auto_st.tables_scanned <= 2);
  assert_true(auto_st.bytes_read * 10 < scan_st.bytes_read);
}

/* No database at the path, or a directory without one: BFH_E_INVALID naming the path, and
   nothing is created. */
static void test_lsm_readonly_missing(void **state) {
  (void)state;
  char path[1200];
  snprintf(path, sizeof path, "%s/none", g_dir);
  bfh_options o;
  bfh_options_init(&o);
  o.read_only = 1;
  bfh_db *db = NULL;
  int rc = bfh_open(path, &o, &db);
  assert_true(rc == BFH_E_INVALID || rc == BFH_E_IO);
  assert_null(db);
  assert_non_null(strstr(bfh_last_error(NULL), path));
  assert_int_equal(access(path, F_OK), -1);
  assert_int_equal(test_mkdirs(path), 0);
  assert_int_equal(bfh_open(path, &o, &db), BFH_E_INVALID);
  assert_non_null(strstr(bfh_last_error(NULL), "no CURRENT"));
  DIR *d = opendir(path);
  assert_non_null(d);
  int entries = 0;
  for (struct dirent *de; (de = readdir(d));) entries += de->d_name[0] != '.';
  closedir(d);
  assert_int_equal(entries, 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_lsm_readonly_writes_nothing, setup, teardown),
      cmocka_unit_test_setup_teardown(test_lsm_readonly_beside_writer, setup, teardown),
      cmocka_unit_test_setup_teardown(test_lsm_readonly_beside_writer_mapped, setup, teardown),
      cmocka_unit_test_setup_teardown(test_lsm_readonly_torn_tails, setup, teardown),
      cmocka_unit_test_setup_teardown(test_lsm_readonly_torn_manifest, setup, teardown),
      cmocka_unit_test_setup_teardown(test_lsm_readonly_first_search_reads_little, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_lsm_readonly_missing, setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

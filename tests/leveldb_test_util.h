/* Helpers for the tests that write databases with stock LevelDB 1.23 through its C API (and
 * stat their tables, to tell a table made again from the one before):
 * force the memtable into a table, and wait until LevelDB's background thread has no
 * compaction left to do. A test that asserts on a table layout builds it, then waits until
 * it is settled, so that no background compaction changes it under the test (and a reopen
 * starts none). Header-only; include after cmocka.h. Links the library's internals
 * (lsm_hooks/leveldb_format/ldb_sstables, through api/testbed.h).
 *
 * LevelDB 1.23 starts a compaction on its own in two cases (db/version_set.cc):
 *   - size: level 0 holds kL0_CompactionTrigger = 4 files, or a level L in 1..5 holds more
 *     than MaxBytesForLevel(L) = 10 MiB * 10^(L-1) bytes of table files (a score >= 1 in
 *     VersionSet::Finalize). While such a compaction runs, its inputs stay listed, so the
 *     rule still holds until it is installed: a listing that breaks no rule means none runs.
 *   - seek: a file was charged allowed_seeks (at least 100) reads that had to look further.
 *     Only reads charge: gets and iterators' read samples (one per MiB read). The writers of
 *     these tests read no more than one pass of an iterator, far below that.
 * The memtable is the third piece of background work; ldb_test_flush finishes it at once.
 */
#ifndef BFH_TESTS_LEVELDB_TEST_UTIL_H
#define BFH_TESTS_LEVELDB_TEST_UTIL_H

#include <dirent.h>
#include <leveldb/c.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "bfh.h"
/* Not public (api/testbed.h): the parser of LevelDB's table list. */
#include "api/testbed.h"

#define LDB_TEST_L0_TRIGGER 4
#define LDB_TEST_SETTLE_TIMEOUT_S 300 /* a compaction of tens of MB on a loaded machine */

/* Forces the memtable into a table and waits for it: compact_range over the empty key range
   flushes the memtable (DBImpl::TEST_CompactMemTable) and compacts no level, since no table
   holds the empty key. */
static inline void ldb_test_flush(leveldb_t *db) {
  leveldb_compact_range(db, "", 0, "", 0);
}

/* 1 if the listing triggers no size compaction (see the top of this file). */
static inline int ldb_test_settled(const ldb_sstable_t *t, size_t n) {
  uint64_t bytes[8] = {0};
  size_t l0 = 0;
  for (size_t i = 0; i < n; i++) {
    if (t[i].level == 0) l0++;
    if (t[i].level >= 0 && t[i].level < 8) bytes[t[i].level] += t[i].size;
  }
  if (l0 >= LDB_TEST_L0_TRIGGER) return 0;
  double limit = 10.0 * 1048576.0;
  for (int level = 1; level <= 5; level++, limit *= 10)
    if ((double)bytes[level] >= limit) return 0;
  return 1;
}

/* Flushes the memtable, then waits until the table list triggers no size compaction (it
   polls every 10 ms). Fails the test, printing the list, if that takes more than
   LDB_TEST_SETTLE_TIMEOUT_S seconds. */
static inline void ldb_test_settle(leveldb_t *db) {
  ldb_test_flush(db);
  for (int polls = 0;; polls++) {
    char *list = leveldb_property_value(db, "leveldb.sstables");
    assert_non_null(list);
    ldb_sstable_t *t;
    size_t n;
    err_t err;
    assert_int_equal(ldb_sstables_parse(list, &t, &n, &err), BFH_OK);
    int settled = ldb_test_settled(t, n);
    free(t);
    if (settled) {
      leveldb_free(list);
      return;
    }
    if (polls >= LDB_TEST_SETTLE_TIMEOUT_S * 100) {
      print_message("LevelDB still has a compaction to do after %d s:\n%s\n",
                    LDB_TEST_SETTLE_TIMEOUT_S, list);
      leveldb_free(list);
      fail_msg("LevelDB's compactions did not settle");
    }
    leveldb_free(list);
    struct timespec ts = {0, 10 * 1000 * 1000};
    nanosleep(&ts, NULL);
  }
}

/* The .ldb files of dir (up to 64) with what stat(2) says of each. */
typedef struct ldb_test_files {
  size_t n;
  char name[64][32];
  struct stat st[64];
} ldb_test_files_t;

static inline void ldb_test_stat_tables(const char *dir, ldb_test_files_t *ts) {
  ts->n = 0;
  DIR *d = opendir(dir);
  assert_non_null(d);
  struct dirent *e;
  while ((e = readdir(d)) && ts->n < 64) {
    size_t len = strlen(e->d_name);
    if (len < 5 || len >= 32 || strcmp(e->d_name + len - 4, ".ldb") != 0) continue;
    char p[4400];
    int pn = snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
    assert_true(pn > 0 && (size_t)pn < sizeof p);
    memcpy(ts->name[ts->n], e->d_name, len + 1); /* len < 32: checked above */
    assert_int_equal(stat(p, &ts->st[ts->n]), 0);
    ts->n++;
  }
  closedir(d);
  assert_true(ts->n > 0);
}

/* Are a and b the same file as the file system tells it (inode, modification and change
   times)? A table made again under its name most often is not. */
static inline int ldb_test_same_file(const struct stat *a, const struct stat *b) {
  return a->st_ino == b->st_ino && a->st_mtim.tv_sec == b->st_mtim.tv_sec &&
         a->st_mtim.tv_nsec == b->st_mtim.tv_nsec && a->st_ctim.tv_sec == b->st_ctim.tv_sec &&
         a->st_ctim.tv_nsec == b->st_ctim.tv_nsec;
}

#endif

/* bfh_repair: a database that refuses to open (a manifest cut short, a damaged log) or that
 * reports damage on reads (a damaged table block) opens again after a repair, with every
 * key whose records survived, never a value the key did not have, and value searches (every
 * method) that agree with gets. Damaged files end up in <db>/lost/.
 *
 * The database: NKEYS keys written once, then every 7th deleted and every 5th overwritten,
 * with small memtables and tables (many flushes and compactions), the last writes only in
 * the log. A key's allowed answers after a repair are its current value, and, where records
 * were dropped, an older value or no value (the newer record may be what was lost).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "bfh.h"
#include "tests/test_util.h"

#define NKEYS 20000
#define DOMAIN 500 /* values "v1-%03u" shared by several keys; overwrites "v2-%05u" unique */

typedef struct fixture {
  char dir[512];
  bfh_options opt;
} fixture_t;

static size_t key_of(uint32_t i, char *buf) {
  return (size_t)sprintf(buf, "key%06u", i);
}
static size_t first_value(uint32_t i, char *buf) {
  return (size_t)sprintf(buf, "v1-%03u", i % DOMAIN);
}
static size_t second_value(uint32_t i, char *buf) {
  return (size_t)sprintf(buf, "v2-%05u", i);
}
static int deleted(uint32_t i) {
  return i % 7 == 0 && i % 5 != 0;
}
static int overwritten(uint32_t i) {
  return i % 5 == 0;
}

static int count_match(void *arg, const void *key, size_t len) {
  (void)key, (void)len;
  (*(size_t *)arg)++;
  return 0;
}

static int setup(void **state) {
  fixture_t *fx = calloc(1, sizeof *fx);
  if (!fx || test_tmpdir_create(fx->dir, sizeof fx->dir, "repair_test") != 0) return -1;
  bfh_options_init(&fx->opt);
  fx->opt.memtable_bytes = 256 << 10;
  fx->opt.table_bytes = 64 << 10;
  fx->opt.value_filter_bits = 8192;
  *state = fx;
  return 0;
}

static int teardown(void **state) {
  fixture_t *fx = *state;
  int rc = access(fx->dir, F_OK) == 0 ? test_rmrf(fx->dir) : 0;
  free(fx);
  return rc;
}

static void build(fixture_t *fx) {
  bfh_db *db = NULL;
  if (bfh_open(fx->dir, &fx->opt, &db) != BFH_OK) fail_msg("open: %s", bfh_last_error(NULL));
  char k[32], v[32];
  for (uint32_t i = 0; i < NKEYS; i++)
    assert_int_equal(bfh_put(db, k, key_of(i, k), v, first_value(i, v)), BFH_OK);
  for (uint32_t i = 0; i < NKEYS; i++) {
    if (deleted(i)) assert_int_equal(bfh_delete(db, k, key_of(i, k)), BFH_OK);
    if (overwritten(i)) assert_int_equal(bfh_put(db, k, key_of(i, k), v, second_value(i, v)), 0);
  }
  assert_int_equal(bfh_close(db), BFH_OK);
}

/* Opens the database; counts keys with their current value (*exact), with an older value or
   none (*older); fails on any other answer. Then checks every method's search for a sample
   of values against gets. */
static void check_db(fixture_t *fx, uint32_t *exact, uint32_t *older) {
  bfh_options o = fx->opt;
  o.create_if_missing = 0;
  bfh_db *db = NULL;
  if (bfh_open(fx->dir, &o, &db) != BFH_OK) fail_msg("reopen: %s", bfh_last_error(NULL));
  *exact = *older = 0;
  static uint8_t holds[NKEYS]; /* 1: the key's value is its first value */
  for (uint32_t i = 0; i < NKEYS; i++) {
    char k[32], want1[32], want2[32];
    size_t kl = key_of(i, k), l1 = first_value(i, want1), l2 = second_value(i, want2);
    void *val = NULL;
    size_t vlen = 0;
    int rc = bfh_get(db, k, kl, &val, &vlen);
    int is1 = rc == BFH_OK && vlen == l1 && memcmp(val, want1, l1) == 0;
    int is2 = rc == BFH_OK && vlen == l2 && memcmp(val, want2, l2) == 0;
    if (rc != BFH_OK && rc != BFH_NOT_FOUND) fail_msg("get %s: %s", k, bfh_last_error(db));
    if (rc == BFH_OK && !is1 && !is2) fail_msg("get %s: a value it never had", k);
    int current = overwritten(i) ? is2 : deleted(i) ? rc == BFH_NOT_FOUND : is1;
    if (current)
      (*exact)++;
    else if (is2)
      fail_msg("get %s: the overwrite, but the key was never overwritten", k);
    else
      (*older)++;
    holds[i] = is1;
    bfh_free(val);
  }
  for (uint32_t d = 0; d < DOMAIN; d += 37) {
    char v[32];
    size_t vl = (size_t)sprintf(v, "v1-%03u", d);
    size_t want = 0;
    for (uint32_t i = d; i < NKEYS; i += DOMAIN) want += holds[i];
    for (int m = BFH_SEARCH_SCAN; m <= BFH_SEARCH_AUTO; m++) {
      bfh_search_stats st;
      size_t got = 0;
      int rc = bfh_search(db, v, vl, (bfh_method)m, count_match, &got, &st);
      if (rc != BFH_OK) fail_msg("search %s method %d: %s", v, m, bfh_last_error(db));
      if (got != want) fail_msg("search %s method %d: %zu keys, gets say %zu", v, m, got, want);
    }
  }
  assert_int_equal(bfh_close(db), BFH_OK);
}

static void repair_ok(fixture_t *fx, bfh_repair_report *rep) {
  if (bfh_repair(fx->dir, &fx->opt, rep) != BFH_OK) fail_msg("repair: %s", bfh_last_error(NULL));
  print_message(
      "repair: %llu logs (%llu records, %llu bytes dropped), %llu tables (%llu damaged, "
      "%llu lost, %llu blocks dropped) -> %llu keys in %llu tables, %llu files to lost/\n",
      (unsigned long long)rep->logs, (unsigned long long)rep->log_records,
      (unsigned long long)rep->log_bytes_dropped, (unsigned long long)rep->tables,
      (unsigned long long)rep->tables_damaged, (unsigned long long)rep->tables_lost,
      (unsigned long long)rep->blocks_dropped, (unsigned long long)rep->keys_out,
      (unsigned long long)rep->tables_out, (unsigned long long)rep->files_moved);
}

static void expect_open_corrupt(fixture_t *fx) {
  bfh_db *db = NULL;
  int rc = bfh_open(fx->dir, &fx->opt, &db);
  if (rc != BFH_E_CORRUPT)
    fail_msg("open of the damaged database: %d %s", rc, bfh_last_error(NULL));
}

/* The file of the database whose name starts with prefix and ends with suffix: the largest
   one (largest != 0) or the one with the largest name (the newest). */
static void find_file(fixture_t *fx, const char *prefix, const char *suffix, char *path, size_t cap,
                      int largest) {
  DIR *d = opendir(fx->dir);
  assert_non_null(d);
  char best[256] = "";
  off_t best_size = -1;
  struct dirent *de;
  while ((de = readdir(d))) {
    size_t n = strlen(de->d_name), sl = strlen(suffix);
    if (strncmp(de->d_name, prefix, strlen(prefix)) || n < sl ||
        strcmp(de->d_name + n - sl, suffix))
      continue;
    struct stat sb;
    snprintf(path, cap, "%s/%s", fx->dir, de->d_name);
    assert_int_equal(stat(path, &sb), 0);
    if (!S_ISREG(sb.st_mode)) continue;
    if (largest ? sb.st_size > best_size : strcmp(de->d_name, best) > 0) {
      snprintf(best, sizeof best, "%s", de->d_name);
      best_size = sb.st_size;
    }
  }
  closedir(d);
  if (!best[0]) fail_msg("no %s*%s in %s", prefix, suffix, fx->dir);
  snprintf(path, cap, "%s/%s", fx->dir, best);
}

/* A manifest cut in half: the open refuses; the repair keeps every key exactly. */
static void test_repair_manifest_cut_short(void **state) {
  fixture_t *fx = *state;
  build(fx);
  char path[1024];
  find_file(fx, "MANIFEST-", "", path, sizeof path, 0);
  struct stat sb;
  assert_int_equal(stat(path, &sb), 0);
  assert_int_equal(truncate(path, sb.st_size / 2), 0);
  expect_open_corrupt(fx);
  bfh_repair_report rep;
  repair_ok(fx, &rep);
  assert_int_equal(rep.tables_lost + rep.tables_damaged + rep.blocks_dropped, 0);
  assert_true(rep.files_moved >= 1); /* the cut manifest */
  uint32_t exact, older;
  check_db(fx, &exact, &older);
  assert_int_equal(exact, NKEYS);
  /* A second repair of a sound database changes nothing a reader sees. */
  repair_ok(fx, &rep);
  assert_int_equal(rep.log_bytes_dropped + rep.blocks_dropped + rep.tables_lost, 0);
  check_db(fx, &exact, &older);
  assert_int_equal(exact, NKEYS);
}

/* A damaged BFH-PARAMS: the open refuses it; the repair writes every table's filter with the
   caller's m, k and seed, records them again and says so; a second repair finds them sound. */
static void test_repair_rewrites_damaged_params(void **state) {
  fixture_t *fx = *state;
  build(fx);
  char path[1024];
  snprintf(path, sizeof path, "%s/BFH-PARAMS", fx->dir);
  assert_int_equal(test_file_xor_byte(path, 9, 0x10), 0);
  expect_open_corrupt(fx);
  bfh_repair_report rep;
  repair_ok(fx, &rep);
  assert_int_equal(rep.params_rewritten, 1);
  uint32_t exact, older;
  check_db(fx, &exact, &older);
  assert_int_equal(exact, NKEYS);
  repair_ok(fx, &rep);
  assert_int_equal(rep.params_rewritten, 0);
  check_db(fx, &exact, &older);
  assert_int_equal(exact, NKEYS);
}

/* A damaged data block: reads report it; the repair drops that block alone. */
static void test_repair_damaged_table_block(void **state) {
  fixture_t *fx = *state;
  build(fx);
  char path[1024];
  find_file(fx, "", ".sst", path, sizeof path, 1);
  assert_int_equal(test_file_xor_byte(path, 100, 0x5a), 0); /* inside the first data block */
  bfh_repair_report rep;
  repair_ok(fx, &rep);
  assert_int_equal(rep.tables_damaged, 1);
  assert_true(rep.blocks_dropped >= 1);
  char lost[1100];
  snprintf(lost, sizeof lost, "%s/lost/%s", fx->dir, strrchr(path, '/') + 1);
  assert_int_equal(access(lost, F_OK), 0);
  uint32_t exact, older;
  check_db(fx, &exact, &older);
  print_message("after a damaged block: %u keys exact, %u older or gone\n", exact, older);
  assert_true(older > 0);
  assert_true(exact > NKEYS * 9 / 10); /* one 4 KiB block of a table holds ~100 keys */
}

/* A log damaged in its middle, after a clean close: the open refuses; the repair skips the
   damaged record alone (a payload byte flipped: the next record starts where its length
   says) and keeps every record before and after it: at most its one key is older. */
static void test_repair_damaged_log(void **state) {
  fixture_t *fx = *state;
  fx->opt.memtable_bytes = 4 << 20; /* the whole second pass stays in the log */
  build(fx);
  char path[1024];
  find_file(fx, "", ".log", path, sizeof path, 1);
  struct stat sb;
  assert_int_equal(stat(path, &sb), 0);
  assert_true(sb.st_size > 3 * 32768);
  assert_int_equal(test_file_xor_byte(path, (uint64_t)sb.st_size / 2, 0x5a), 0);
  expect_open_corrupt(fx);
  bfh_repair_report rep;
  repair_ok(fx, &rep);
  assert_true(rep.log_bytes_dropped > 0 && rep.log_bytes_dropped < 64); /* one record */
  uint32_t exact, older;
  check_db(fx, &exact, &older);
  print_message("after a damaged log record: %u keys exact, %u older or gone\n", exact, older);
  assert_true(older <= 1);
}

/* Repair takes the LOCK: an open database is refused. */
static void test_repair_refuses_open_database(void **state) {
  fixture_t *fx = *state;
  build(fx);
  bfh_db *db = NULL;
  assert_int_equal(bfh_open(fx->dir, &fx->opt, &db), BFH_OK);
  bfh_repair_report rep;
  assert_int_equal(bfh_repair(fx->dir, &fx->opt, &rep), BFH_E_BUSY);
  assert_non_null(strstr(bfh_last_error(NULL), fx->dir));
  assert_int_equal(bfh_close(db), BFH_OK);
}

/* A LevelDB database goes through LevelDB's own RepairDB and reopens with its keys. */
static void test_repair_leveldb_engine(void **state) {
  fixture_t *fx = *state;
  fx->opt.engine = BFH_ENGINE_LEVELDB;
  build(fx);
  bfh_repair_report rep;
  repair_ok(fx, &rep);
  uint32_t exact, older;
  check_db(fx, &exact, &older);
  assert_int_equal(exact, NKEYS);
}

/* ---- Damaged log records: resync at the next record, newest surviving version wins ------ */

/* Where the n-th logical record (0-based) of the log at path starts (its FULL or FIRST
   fragment), walking the framing of doc/format.md "Log": 32 KiB blocks, 7-byte headers
   [crc fixed32][length fixed16][type u8]. */
static uint64_t log_record_at(const char *path, unsigned n) {
  FILE *f = fopen(path, "rb");
  assert_non_null(f);
  static uint8_t buf[8 << 20];
  size_t size = fread(buf, 1, sizeof buf, f);
  fclose(f);
  size_t pos = 0;
  unsigned seen = 0;
  while (pos + 7 <= size) {
    size_t left = 32768 - pos % 32768;
    if (left < 7) {
      pos += left;
      continue;
    }
    size_t len = (size_t)buf[pos + 4] | ((size_t)buf[pos + 5] << 8);
    int type = buf[pos + 6];
    if ((type == 1 || type == 2) && seen++ == n) return pos;
    pos += 7 + len;
  }
  fail_msg("%s: no record %u", path, n);
  return 0;
}

/* Puts (one record each) of key i = 0..nkeys-1, value "r<round>-<i>" padded, for rounds
   [from, to), into the database at dir with a memtable that holds them all (one log). */
static void put_rounds(fixture_t *fx, unsigned nkeys, unsigned from, unsigned to) {
  bfh_options o = fx->opt;
  o.memtable_bytes = 16 << 20;
  bfh_db *db = NULL;
  if (bfh_open(fx->dir, &o, &db) != BFH_OK) fail_msg("open: %s", bfh_last_error(NULL));
  char k[32], v[96];
  for (unsigned r = from; r < to; r++)
    for (unsigned i = 0; i < nkeys; i++) {
      int vl =
          snprintf(v, sizeof v, "r%02u-%05u-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx", r, i);
      assert_int_equal(bfh_put(db, k, key_of(i, k), v, (size_t)vl), BFH_OK);
    }
  assert_int_equal(bfh_close(db), BFH_OK);
}

/* The round of key i's value (-1: no value or not of this form). */
static int round_of(bfh_db *db, unsigned i) {
  char k[32];
  void *val = NULL;
  size_t vlen = 0;
  int rc = bfh_get(db, k, key_of(i, k), &val, &vlen);
  if (rc != BFH_OK && rc != BFH_NOT_FOUND) fail_msg("get: %s", bfh_last_error(db));
  unsigned r = 0, key = 0;
  int ok = rc == BFH_OK && vlen > 10 && sscanf(val, "r%02u-%05u", &r, &key) == 2 && key == i;
  bfh_free(val);
  return ok ? (int)r : -1;
}

static void log_path(fixture_t *fx, char *path, size_t cap) {
  find_file(fx, "", ".log", path, cap, 1);
}

/* The case: 1,000 puts, a payload byte of record 11 flipped. The repair keeps the
   999 others (it kept 10 when it skipped to the next block and every later block began
   with the rest of a record cut by the skip), and check reads every record and reports
   the one damage with its file and offset. */
static unsigned damages_seen;
static uint64_t damage_offset;
static void on_damage(void *arg, const char *file, uint64_t offset, const char *what) {
  (void)arg, (void)what;
  damages_seen++;
  damage_offset = offset;
  assert_non_null(strstr(file, ".log"));
}

static void test_repair_resyncs_after_a_damaged_record(void **state) {
  fixture_t *fx = *state;
  put_rounds(fx, 1000, 0, 1);
  char path[1024];
  log_path(fx, path, sizeof path);
  uint64_t at = log_record_at(path, 10);
  assert_int_equal(test_file_xor_byte(path, at + 7 + 20, 0x40), 0);
  bfh_check_report cr;
  damages_seen = 0;
  assert_int_equal(bfh_check(fx->dir, &fx->opt, on_damage, NULL, &cr), BFH_E_CORRUPT);
  print_message("check: %llu records checked, %llu damaged (at %llu)\n",
                (unsigned long long)cr.records, (unsigned long long)cr.damaged,
                (unsigned long long)damage_offset);
  assert_int_equal(damages_seen, 1);
  assert_int_equal(damage_offset, at);
  assert_true(cr.records >= 999);
  bfh_repair_report rep;
  repair_ok(fx, &rep);
  assert_int_equal(rep.log_records, 999);
  assert_int_equal(rep.keys_out, 999);
  assert_true(rep.log_bytes_dropped < 100);
  bfh_db *db = NULL;
  assert_int_equal(bfh_open(fx->dir, &fx->opt, &db), BFH_OK);
  for (unsigned i = 0; i < 1000; i++) assert_int_equal(round_of(db, i), i == 10 ? -1 : 0);
  assert_int_equal(bfh_close(db), BFH_OK);
}

/* Several versions of every key in one log, two records damaged in its middle: a payload
   byte (that record alone is lost) and a length (the rest of its 32 KiB block is lost).
   Every record after them is kept and applied in sequence order, so every key ends at the
   newest version that survived: round 9, except the key whose round-9 record was the
   damaged one, which holds round 8. Then 2,000 keys in a table at round 0 and again in the
   log at round 1, a record in the middle of the log damaged: only its key goes back to
   round 0 (1,001 did when the repair lost the rest of the log). */
static void test_repair_keeps_the_newest_surviving_version(void **state) {
  fixture_t *fx = *state;
  enum { KEYS = 300, ROUNDS = 10 };
  put_rounds(fx, KEYS, 0, ROUNDS);
  char path[1024];
  log_path(fx, path, sizeof path);
  unsigned payload = 9 * KEYS + 17, length = 6 * KEYS + 100;
  assert_int_equal(test_file_xor_byte(path, log_record_at(path, payload) + 7 + 30, 0x40), 0);
  assert_int_equal(test_file_xor_byte(path, log_record_at(path, length) + 4, 0x03), 0);
  bfh_repair_report rep;
  repair_ok(fx, &rep);
  bfh_db *db = NULL;
  assert_int_equal(bfh_open(fx->dir, &fx->opt, &db), BFH_OK);
  for (unsigned i = 0; i < KEYS; i++) {
    int want = i == 17 ? ROUNDS - 2 : ROUNDS - 1, got = round_of(db, i);
    if (got != want) fail_msg("key %u: round %d, want %d", i, got, want);
  }
  assert_int_equal(bfh_close(db), BFH_OK);
  assert_int_equal(test_rmrf(fx->dir), 0);

  /* 2,000 keys at round 0 in a table, round 1 in the log. */
  assert_int_equal(test_tmpdir_create(fx->dir, sizeof fx->dir, "repair_test"), 0);
  put_rounds(fx, 2000, 0, 1);
  assert_int_equal(bfh_open(fx->dir, &fx->opt, &db), BFH_OK);
  assert_int_equal(bfh_flush(db), BFH_OK);
  assert_int_equal(bfh_close(db), BFH_OK);
  put_rounds(fx, 2000, 1, 2);
  log_path(fx, path, sizeof path);
  assert_int_equal(test_file_xor_byte(path, log_record_at(path, 1000) + 7 + 30, 0x40), 0);
  repair_ok(fx, &rep);
  assert_int_equal(bfh_open(fx->dir, &fx->opt, &db), BFH_OK);
  unsigned reverted = 0;
  for (unsigned i = 0; i < 2000; i++) {
    int got = round_of(db, i);
    assert_true(got == 0 || got == 1);
    reverted += got == 0;
  }
  assert_int_equal(bfh_close(db), BFH_OK);
  print_message("2,000 keys, one log record damaged: %u keys back at their older value\n",
                reverted);
  assert_int_equal(reverted, 1);
}

static int count_suffix(const char *dir, const char *suffix) {
  DIR *d = opendir(dir);
  assert_non_null(d);
  int n = 0;
  struct dirent *de;
  while ((de = readdir(d))) {
    size_t l = strlen(de->d_name), sl = strlen(suffix);
    n += l >= sl && strcmp(de->d_name + l - sl, suffix) == 0;
  }
  closedir(d);
  return n;
}

/* CURRENT removed: an open that may create refuses the database (BFH_E_CORRUPT, saying to
   repair it) and leaves its tables and logs, where it used to create a new database over
   them and delete them; the repair then brings back every key. A database opened once and
   never written has only BFH-PARAMS to show for it: refused too. */
static void test_missing_current_is_refused_then_repaired(void **state) {
  fixture_t *fx = *state;
  build(fx);
  char cur[600];
  snprintf(cur, sizeof cur, "%s/CURRENT", fx->dir);
  int tables = count_suffix(fx->dir, ".sst");
  assert_true(tables > 0);
  assert_int_equal(unlink(cur), 0);
  bfh_db *db = NULL;
  assert_int_equal(bfh_open(fx->dir, &fx->opt, &db), BFH_E_CORRUPT);
  assert_null(db);
  print_message("%s\n", bfh_last_error(NULL));
  assert_non_null(strstr(bfh_last_error(NULL), fx->dir));
  assert_non_null(strstr(bfh_last_error(NULL), "bfh repair"));
  assert_int_equal(count_suffix(fx->dir, ".sst"), tables);
  assert_int_not_equal(access(cur, F_OK), 0);
  bfh_repair_report rep;
  repair_ok(fx, &rep);
  uint32_t exact, older;
  check_db(fx, &exact, &older);
  assert_int_equal(exact, NKEYS);
  assert_int_equal(test_rmrf(fx->dir), 0);

  assert_int_equal(test_tmpdir_create(fx->dir, sizeof fx->dir, "repair_test"), 0);
  assert_int_equal(bfh_open(fx->dir, &fx->opt, &db), BFH_OK);
  assert_int_equal(bfh_close(db), BFH_OK);
  snprintf(cur, sizeof cur, "%s/CURRENT", fx->dir);
  assert_int_equal(unlink(cur), 0);
  assert_int_equal(bfh_open(fx->dir, &fx->opt, &db), BFH_E_CORRUPT);
  assert_non_null(strstr(bfh_last_error(NULL), "BFH-PARAMS"));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_repair_manifest_cut_short, setup, teardown),
      cmocka_unit_test_setup_teardown(test_repair_rewrites_damaged_params, setup, teardown),
      cmocka_unit_test_setup_teardown(test_repair_damaged_table_block, setup, teardown),
      cmocka_unit_test_setup_teardown(test_repair_damaged_log, setup, teardown),
      cmocka_unit_test_setup_teardown(test_repair_resyncs_after_a_damaged_record, setup, teardown),
      cmocka_unit_test_setup_teardown(test_repair_keeps_the_newest_surviving_version, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_missing_current_is_refused_then_repaired, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_repair_refuses_open_database, setup, teardown),
      cmocka_unit_test_setup_teardown(test_repair_leveldb_engine, setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

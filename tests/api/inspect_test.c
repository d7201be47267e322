/* bfh_tables and bfh_check (include/bfh.h, "Inspection"), on both engines:
 *   - bfh_tables lists what bfh_stats counts (tables, bytes, the leaves' mean fill), every
 *     entry of a table lies in the key range it reports, and the entry counts add up to the
 *     keys put (each key is put once, so no table holds an older version);
 *   - bfh_check finds nothing in a clean database, refuses an open one (also one stock
 *     LevelDB holds), and names the file and the damaged block or record of a byte flipped in
 *     a table's data block, a MANIFEST record, a log record or BFH-PARAMS, and a live table
 *     that is missing; a crash's leftover table is no damage; it changes no byte of the
 *     database.
 * Block and record places are taken from the files themselves: a table's block filter names
 * its data blocks (filters/block_filter.h), the log reader the records (lsm/log.h).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <leveldb/c.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bfh.h"
#include "filters/block_filter.h"
#include "lsm/log.h"
#include "lsm/table.h"
/* Not public (api/testbed.h): the views and table scans (every entry of a table), the
   own engine's compaction wait, the LevelDB engine's indexing, and the filter cache. */
#include "api/testbed.h"
#include "tests/test_util.h"
#include "tests/api/db_fixture.h"

#define NKEYS 3000
#define NVALUES 20 /* every entry holds one of these: scanning for each visits every entry */
#define M_BITS 8192

static int setup(void **state) {
  return db_fixture_setup(state, "inspect");
}

static void options(bfh_options *o, bfh_engine engine) {
  bfh_options_init(o);
  o->engine = engine;
  o->value_filter_bits = M_BITS;
  o->memtable_bytes = 64 << 10;
  o->table_bytes = 32 << 10;
}

static size_t key_of(unsigned i, char *buf) {
  return (size_t)snprintf(buf, 16, "key%06u", (i * 7919u) % NKEYS); /* not in key order */
}

static size_t value_of(unsigned v, char *buf) {
  return (size_t)snprintf(buf, 128, "value-%02u-%060u", v, v);
}

/* Opens f->dir with o and puts every key; flush: also writes the memtable out and waits
   until the tables are settled and indexed. The handle stays open in f->db. */
static void fill_with(db_fixture_t *f, const bfh_options *o, int flush) {
  if (bfh_open(f->dir, o, &f->db) != BFH_OK) fail_msg("open: %s", bfh_last_error(NULL));
  for (unsigned i = 0; i < NKEYS; i++) {
    char k[16], v[128];
    assert_int_equal(bfh_put(f->db, k, key_of(i, k), v, value_of(i % NVALUES, v)), BFH_OK);
  }
  if (!flush) return;
  assert_int_equal(bfh_flush(f->db), BFH_OK);
  err_t e;
  engine_t *eng = bfh_internal_engine(f->db);
  if (o->engine == BFH_ENGINE_LSM)
    assert_int_equal(engine_lsm_wait_idle(eng, &e), BFH_OK);
  else
    assert_int_equal(engine_stock_sync(eng, &e), BFH_OK);
}

static void fill(db_fixture_t *f, bfh_engine engine, int flush) {
  bfh_options o;
  options(&o, engine);
  fill_with(f, &o, flush);
}

static void close_db(db_fixture_t *f) {
  assert_int_equal(bfh_close(f->db), BFH_OK);
  f->db = NULL;
}

/* ---- bfh_tables -------------------------------------------------------------------------- */

typedef struct listed {
  bfh_table_info t[256];
  uint8_t keys[256][2][16]; /* copies of smallest and largest */
  size_t n;
} listed_t;

static int collect(void *arg, const bfh_table_info *t) {
  listed_t *l = arg;
  assert_true(l->n < 256);
  assert_true(t->smallest_len <= 16 && t->largest_len <= 16);
  l->t[l->n] = *t;
  memcpy(l->keys[l->n][0], t->smallest, t->smallest_len);
  memcpy(l->keys[l->n][1], t->largest, t->largest_len);
  l->t[l->n].smallest = l->keys[l->n][0];
  l->t[l->n].largest = l->keys[l->n][1];
  l->n++;
  return 0;
}

static int key_cmp(const void *a, size_t an, const void *b, size_t bn) {
  int c = memcmp(a, b, an < bn ? an : bn);
  return c ? c : (an > bn) - (an < bn);
}

typedef struct in_range {
  const bfh_table_info *t;
  uint64_t seen, outside;
} in_range_t;

static int count_in_range(void *arg, const void *key, size_t n, uint64_t seq) {
  (void)seq;
  in_range_t *r = arg;
  r->seen++;
  r->outside += key_cmp(key, n, r->t->smallest, r->t->smallest_len) < 0 ||
                key_cmp(key, n, r->t->largest, r->t->largest_len) > 0;
  return 0;
}

/* Every entry of each table (found by scanning it for every value) lies in its range, and
   there are as many as the table says. The view is released before any assertion, so that a
   failure leaves the handle closable. */
static void check_ranges(bfh_db *db, const listed_t *l) {
  engine_t *e = bfh_internal_engine(db);
  engine_view_t *v;
  err_t err;
  assert_int_equal(e->ops->view_acquire(e, &v, &err), BFH_OK);
  in_range_t r[256];
  int rc = BFH_OK;
  for (size_t i = 0; i < l->n; i++) {
    r[i] = (in_range_t){&l->t[i], 0, 0};
    for (unsigned val = 0; val < NVALUES && rc == BFH_OK; val++) {
      char buf[128];
      size_t vn = value_of(val, buf);
      engine_scan_stats_t st = {0, 0};
      engine_value_test_t test = engine_value_test_equal(buf, vn);
      rc = e->ops->scan_table(e, v, l->t[i].number, &test, count_in_range, &r[i], &st, &err);
    }
  }
  e->ops->view_release(e, v);
  assert_int_equal(rc, BFH_OK);
  for (size_t i = 0; i < l->n; i++) {
    assert_int_equal(r[i].outside, 0);
    assert_int_equal(r[i].seen, l->t[i].entries);
  }
}

/* With LevelDB a background compaction may replace tables after fill's sync, and a table it
   wrote has no value filter until the next sync indexes it: list and count again (bounded)
   until a listing and the counts describe the same indexed tables. */
static void list_settled(db_fixture_t *f, bfh_engine engine, listed_t *l, bfh_db_stats *st) {
  for (int attempt = 0; attempt < 100; attempt++) {
    memset(l, 0, sizeof *l);
    assert_int_equal(bfh_tables(f->db, collect, l), BFH_OK);
    assert_int_equal(bfh_stats(f->db, st), BFH_OK);
    size_t filters = 0;
    for (size_t i = 0; i < l->n; i++) filters += l->t[i].has_value_filter != 0;
    if (engine != BFH_ENGINE_LEVELDB || (l->n == st->tables && filters == l->n)) return;
    err_t e;
    assert_int_equal(engine_stock_sync(bfh_internal_engine(f->db), &e), BFH_OK);
  }
}

static void tables_match_stats(void **state, bfh_engine engine) {
  db_fixture_t *f = *state;
  fill(f, engine, 1);
  static listed_t l;
  bfh_db_stats st;
  list_settled(f, engine, &l, &st);
  assert_true(l.n >= 2);
  assert_int_equal(l.n, st.tables);
  uint64_t bytes = 0, entries = 0, filters = 0;
  double fill_sum = 0;
  for (size_t i = 0; i < l.n; i++) {
    const bfh_table_info *t = &l.t[i];
    bytes += t->bytes;
    entries += t->entries;
    if (i) /* level by level, by number within a level */
      assert_true(t->level > l.t[i - 1].level ||
                  (t->level == l.t[i - 1].level && t->number > l.t[i - 1].number));
    assert_true(key_cmp(t->smallest, t->smallest_len, t->largest, t->largest_len) <= 0);
    if (!t->has_value_filter) continue;
    filters++;
    fill_sum += t->value_filter_fill;
    assert_int_equal(t->value_filter_bits, M_BITS);
    assert_true(t->value_filter_fill > 0 && t->value_filter_fill < 1);
    assert_true(fabs(t->value_filter_fpr - pow(t->value_filter_fill, t->value_filter_hashes)) <
                1e-12);
    assert_true(t->has_block_filter); /* block_filter_bits_per_value defaults to 10 */
  }
  assert_int_equal(bytes, st.table_bytes);
  assert_int_equal(entries, NKEYS);
  assert_int_equal(filters, st.leaf_filters);
  assert_int_equal(filters, l.n);
  assert_true(fabs(fill_sum / (double)filters - st.mean_leaf_fill) < 1e-9);
  check_ranges(f->db, &l);
  close_db(f);
}

static int stop_at_first(void *arg, const bfh_table_info *t) {
  (void)t;
  (*(int *)arg)++;
  return 1;
}

static void tables_stop(void **state, bfh_engine engine) {
  db_fixture_t *f = *state;
  fill(f, engine, 1);
  int calls = 0;
  assert_int_equal(bfh_tables(f->db, stop_at_first, &calls), BFH_OK);
  assert_int_equal(calls, 1);
  close_db(f);
}

/* ---- bfh_check ----------------------------------------------------------------------------- */

typedef struct damage {
  char file[256];
  uint64_t offset;
  char what[256];
  int n;
  char all[1024]; /* every damage reported, "file@offset: what; ..." (for a failure's message) */
} damage_t;

static void note_damage(void *arg, const char *file, uint64_t offset, const char *what) {
  damage_t *d = arg;
  size_t used = strlen(d->all);
  snprintf(d->all + used, sizeof d->all - used, "%s@%llu: %s; ", file, (unsigned long long)offset,
           what);
  if (d->n++ == 0) {
    snprintf(d->file, sizeof d->file, "%s", file);
    snprintf(d->what, sizeof d->what, "%s", what);
    d->offset = offset;
  }
}

/* Every file under dir (recursively) and its bytes, as one text: equal before and after a
   check means the check changed nothing. */
typedef struct files {
  char *buf;
  size_t len, cap;
} files_t;

static void append(files_t *fs, const void *p, size_t n) {
  if (fs->len + n > fs->cap) {
    fs->cap = (fs->len + n) * 2;
    fs->buf = realloc(fs->buf, fs->cap);
    assert_non_null(fs->buf);
  }
  memcpy(fs->buf + fs->len, p, n);
  fs->len += n;
}

static int by_name(const struct dirent **a, const struct dirent **b) {
  return strcmp((*a)->d_name, (*b)->d_name);
}

static void read_tree(const char *dir, files_t *fs) {
  struct dirent **names;
  int n = scandir(dir, &names, NULL, by_name);
  assert_true(n >= 0);
  for (int i = 0; i < n; i++) {
    char path[TEST_PATH_MAX + 512];
    snprintf(path, sizeof path, "%s/%s", dir, names[i]->d_name);
    struct stat sb;
    if (names[i]->d_name[0] != '.' && stat(path, &sb) == 0) {
      append(fs, path, strlen(path) + 1);
      if (S_ISDIR(sb.st_mode)) {
        read_tree(path, fs);
      } else {
        FILE *fp = fopen(path, "rb");
        assert_non_null(fp);
        char buf[65536];
        size_t got;
        while ((got = fread(buf, 1, sizeof buf, fp)) > 0) append(fs, buf, got);
        fclose(fp);
      }
    }
    free(names[i]);
  }
  free(names);
}

/* bfh_check of f->dir: its status, the first damage reported, and the report; fails the test
   if the check changed any file. */
static int check(db_fixture_t *f, bfh_engine engine, damage_t *d, bfh_check_report *rep) {
  bfh_options o;
  options(&o, engine);
  files_t before = {0}, after = {0};
  read_tree(f->dir, &before);
  memset(d, 0, sizeof *d);
  int rc = bfh_check(f->dir, &o, note_damage, d, rep);
  read_tree(f->dir, &after);
  assert_int_equal(before.len, after.len);
  assert_memory_equal(before.buf, after.buf, before.len);
  free(before.buf);
  free(after.buf);
  return rc;
}

static void check_clean(void **state, bfh_engine engine) {
  db_fixture_t *f = *state;
  fill(f, engine, 1);
  close_db(f);
  damage_t d;
  bfh_check_report rep;
  assert_int_equal(check(f, engine, &d, &rep), BFH_OK);
  assert_int_equal(d.n, 0);
  assert_int_equal(rep.damaged, 0);
  assert_int_equal(rep.cache_damaged, 0);
  assert_true(rep.files >= 4 && rep.bytes > 0 && rep.blocks > 0 && rep.records > 0);
}

static void check_busy(void **state, bfh_engine engine) {
  db_fixture_t *f = *state;
  fill(f, engine, 0);
  bfh_options o;
  options(&o, engine);
  damage_t d = {0};
  bfh_check_report rep;
  assert_int_equal(bfh_check(f->dir, &o, note_damage, &d, &rep), BFH_E_BUSY);
  assert_non_null(strstr(bfh_last_error(NULL), "open"));
  assert_int_equal(d.n, 0);
  close_db(f);
  assert_int_equal(check(f, engine, &d, &rep), BFH_OK);
}

/* The name (without the directory) of the newest file of dir whose name ends in suffix: the
   one with the highest number, which is live (older logs and compacted tables may linger
   until the next open deletes them). */
static void newest_file(const char *dir, const char *suffix, char *out, size_t cap) {
  struct dirent **names;
  int n = scandir(dir, &names, NULL, by_name);
  assert_true(n >= 0);
  out[0] = '\0';
  for (int i = 0; i < n; i++) {
    const char *s = names[i]->d_name;
    size_t len = strlen(s), sl = strlen(suffix);
    if (len > sl && strcmp(s + len - sl, suffix) == 0) snprintf(out, cap, "%s", s);
    free(names[i]);
  }
  free(names);
  assert_true(out[0] != '\0');
}

/* The file name of the first table bfh_tables lists: a live one (a compacted table may still
   be in the directory until the next open deletes it, and is no part of the database). */
static uint64_t live_table(db_fixture_t *f, bfh_engine engine, char *out, size_t cap) {
  static listed_t l;
  memset(&l, 0, sizeof l);
  assert_int_equal(bfh_tables(f->db, collect, &l), BFH_OK);
  assert_true(l.n > 0);
  snprintf(out, cap, "%06llu.%s", (unsigned long long)l.t[0].number,
           engine == BFH_ENGINE_LSM ? "sst" : "ldb");
  return l.t[0].number;
}

/* Fills f's database (flushed), closes it, and names in name a table that is live in the
   database at rest, for a test to damage. Own engine: live_table's pick, made before the
   close. LevelDB: the largest table the MANIFEST names, since a table bfh_tables listed
   before the close may have been compacted away since, and yet still be in the directory
   (LevelDB deletes an obsolete file only when no reader holds it); bfh_check rightly skips
   it. */
/* The live version of LevelDB database f, from its current manifest. */
static void read_live_version(db_fixture_t *f, ldb_version_t *v) {
  char path[TEST_PATH_MAX + 512], manifest[64];
  assert_int_equal(test_current_manifest(f->dir, manifest, sizeof manifest), 0);
  snprintf(path, sizeof path, "%s/%s", f->dir, manifest);
  uint64_t next;
  err_t e;
  assert_int_equal(ldb_version_read(env_default(), path, 0, v, &next, &e), BFH_OK);
}

static void fill_closed(db_fixture_t *f, bfh_engine engine, char *name, size_t cap) {
  fill(f, engine, 1);
  live_table(f, engine, name, cap);
  close_db(f);
  if (engine == BFH_ENGINE_LSM) return;
  ldb_version_t v = {0};
  read_live_version(f, &v);
  assert_true(v.nfiles > 0);
  const ldb_file_t *largest = &v.files[0];
  for (size_t i = 1; i < v.nfiles; i++)
    if (v.files[i].size > largest->size) largest = &v.files[i];
  snprintf(name, cap, "%06llu.ldb", (unsigned long long)largest->number);
  ldb_version_release(&v);
}

typedef struct blocks {
  block_ref_t b[4096];
  size_t n;
} blocks_t;

static int note_block(void *arg, uint64_t offset, uint64_t size) {
  blocks_t *bs = arg;
  assert_true(bs->n < 4096);
  bs->b[bs->n++] = (block_ref_t){.offset = offset, .size = size};
  return 0;
}

static int skip_entry(void *arg, const ldb_entry_t *e) {
  (void)arg, (void)e;
  return 0;
}

/* The data block in the middle of table `name` of f->dir: from the table's block filter (own
   engine), or from a scan of the table's blocks (LevelDB). */
static block_ref_t middle_block(db_fixture_t *f, bfh_engine engine, const char *name) {
  char path[TEST_PATH_MAX + 512];
  snprintf(path, sizeof path, "%s/%s", f->dir, name);
  err_t e;
  if (engine == BFH_ENGINE_LEVELDB) {
    static blocks_t bs;
    bs.n = 0;
    assert_int_equal(
        ldb_table_scan_blocks(env_default(), path, skip_entry, note_block, &bs, NULL, &e), BFH_OK);
    assert_true(bs.n >= 3);
    return bs.b[bs.n / 2];
  }
  table_t *t;
  assert_int_equal(table_open(env_default(), path, strtoull(name, NULL, 10), &t, &e), BFH_OK);
  void *data;
  size_t size;
  assert_int_equal(table_read_meta(t, "bfh.block_filter", &data, &size, NULL, &e), BFH_OK);
  block_filter_t *bf = NULL;
  assert_int_equal(block_filter_deserialize(data, size, &bf, &e), BFH_OK);
  free(data);
  table_unref(t);
  assert_true(block_filter_blocks(bf) >= 3);
  block_ref_t r = block_filter_ref(bf, block_filter_blocks(bf) / 2);
  block_filter_destroy(bf);
  return r;
}

/* Checks f's database: exactly one damage, in file name, described with `what` in it. */
static damage_t expect_one_damage(db_fixture_t *f, bfh_engine engine, const char *name,
                                  const char *what) {
  damage_t d;
  bfh_check_report rep;
  assert_int_equal(check(f, engine, &d, &rep), BFH_E_CORRUPT);
  assert_int_equal(d.n, 1);
  assert_int_equal(rep.damaged, 1);
  assert_string_equal(d.file, name);
  assert_non_null(strstr(d.what, what));
  return d;
}

/* Flips a byte in the middle of a data block in the middle of a table: the damage is that
   block, at its offset. */
static void check_table_block(void **state, bfh_engine engine) {
  db_fixture_t *f = *state;
  char name[256], path[TEST_PATH_MAX + 512];
  fill_closed(f, engine, name, sizeof name);
  block_ref_t b = middle_block(f, engine, name);
  snprintf(path, sizeof path, "%s/%s", f->dir, name);
  assert_int_equal(test_file_xor_byte(path, b.offset + b.size / 2, 0x40), 0);
  assert_int_equal(expect_one_damage(f, engine, name, "checksum").offset, b.offset);
}

/* The offset and length (header included) of record i of the log-format file at path. */
static void record_place(const char *path, int i, uint64_t *offset, uint64_t *len) {
  log_reader_t *r;
  err_t e;
  assert_int_equal(log_reader_open(env_default(), path, &r, &e), BFH_OK);
  const void *data;
  size_t n = 0;
  for (int k = 0; k <= i; k++) assert_int_equal(log_reader_next(r, &data, &n, &e), BFH_OK);
  *offset = log_reader_record_offset(r);
  *len = LOG_HEADER_BYTES + n;
  assert_int_equal(log_reader_next(r, &data, &n, &e), BFH_OK); /* not the last record */
  log_reader_close(r);
}

/* Flips a byte inside the payload of the first record of log-format file `name`: the damage
   is that record, at its offset. */
static void check_record(db_fixture_t *f, bfh_engine engine, const char *name) {
  char path[TEST_PATH_MAX + 512];
  snprintf(path, sizeof path, "%s/%s", f->dir, name);
  uint64_t off, len;
  record_place(path, 0, &off, &len);
  assert_int_equal(test_file_xor_byte(path, off + LOG_HEADER_BYTES + 1, 0x40), 0);
  damage_t d;
  bfh_check_report rep;
  assert_int_equal(check(f, engine, &d, &rep), BFH_E_CORRUPT);
  if (d.n != 1)
    fail_msg("%d damages, want 1 in %s at %llu: %s", d.n, name, (unsigned long long)off, d.all);
  assert_string_equal(d.file, name);
  assert_true(d.offset >= off && d.offset < off + len);
}

/* A closed database whose log holds every put (no memtable is written out), so that it spans
   several 32 KiB blocks; name and path get the log's. Returns its size. */
static uint64_t fill_log(db_fixture_t *f, bfh_engine engine, char *name, char *path) {
  bfh_options o;
  options(&o, engine);
  o.memtable_bytes = 4 << 20;
  fill_with(f, &o, 0);
  close_db(f);
  newest_file(f->dir, ".log", name, 256);
  snprintf(path, TEST_PATH_MAX + 512, "%s/%s", f->dir, name);
  struct stat sb;
  assert_int_equal(stat(path, &sb), 0);
  assert_true(sb.st_size > 2 * LOG_BLOCK_BYTES);
  return (uint64_t)sb.st_size;
}

/* Reading on after the damaged record meets the rest of a record the skip cut, which is not
   damage of its own. */
static void check_log_record(void **state, bfh_engine engine) {
  db_fixture_t *f = *state;
  char name[256], path[TEST_PATH_MAX + 512];
  fill_log(f, engine, name, path);
  check_record(f, engine, name);
}

/* A log cut in its last record (a crash during a write) has a torn tail: counted, not
   damage. */
static void check_torn_tail(void **state, bfh_engine engine) {
  db_fixture_t *f = *state;
  char name[256], path[TEST_PATH_MAX + 512];
  uint64_t size = fill_log(f, engine, name, path);
  assert_int_equal(truncate(path, (off_t)size - 3), 0);
  damage_t d;
  bfh_check_report rep;
  assert_int_equal(check(f, engine, &d, &rep), BFH_OK);
  assert_int_equal(d.n, 0);
  assert_int_equal(rep.torn_tails, 1);
  assert_true(rep.torn_tail_bytes > 3);
}

/* Removes the table files that the current manifest of LevelDB database f does not list. A
   compaction LevelDB abandons at the close leaves its partial output behind for the next
   open to delete; a check finds it a leftover while the manifest says which tables are live,
   and cannot tell it from a damaged live table once the manifest is damaged. */
static void remove_leftover_tables(db_fixture_t *f) {
  char path[TEST_PATH_MAX + 512];
  ldb_version_t v = {0};
  read_live_version(f, &v);
  DIR *d = opendir(f->dir);
  assert_non_null(d);
  struct dirent *de;
  while ((de = readdir(d))) {
    unsigned long long number;
    char ext[8];
    if (sscanf(de->d_name, "%llu.%7s", &number, ext) != 2 || strcmp(ext, "ldb") != 0) continue;
    int live = 0;
    for (size_t i = 0; i < v.nfiles; i++) live |= v.files[i].number == number;
    if (live) continue;
    snprintf(path, sizeof path, "%s/%s", f->dir, de->d_name);
    assert_int_equal(unlink(path), 0);
  }
  closedir(d);
  ldb_version_release(&v);
}

static void check_manifest_record(void **state, bfh_engine engine) {
  db_fixture_t *f = *state;
  fill(f, engine, 1);
  close_db(f);
  if (engine == BFH_ENGINE_LEVELDB) remove_leftover_tables(f);
  char name[256]; /* the live one: an old one may linger */
  assert_int_equal(test_current_manifest(f->dir, name, sizeof name), 0);
  check_record(f, engine, name);
}

static void check_params(void **state, bfh_engine engine) {
  db_fixture_t *f = *state;
  fill(f, engine, 1);
  close_db(f);
  char path[TEST_PATH_MAX + 512];
  snprintf(path, sizeof path, "%s/BFH-PARAMS", f->dir);
  assert_int_equal(test_file_xor_byte(path, 10, 0x01), 0);
  damage_t d;
  bfh_check_report rep;
  assert_int_equal(check(f, engine, &d, &rep), BFH_E_CORRUPT);
  assert_int_equal(d.n, 1);
  assert_string_equal(d.file, "BFH-PARAMS");
  assert_int_equal(d.offset, 0); /* one record, one checksum: the whole file */
}

/* A table a crash cut short while a compaction wrote it (the first half of a live table, under
   a number no version names) is no part of the database: the next open deletes it unread. */
static void check_leftover(void **state, bfh_engine engine) {
  db_fixture_t *f = *state;
  char name[256], path[TEST_PATH_MAX + 512], leftover[TEST_PATH_MAX + 512];
  fill_closed(f, engine, name, sizeof name);
  snprintf(path, sizeof path, "%s/%s", f->dir, name);
  snprintf(leftover, sizeof leftover, "%s/900000.%s", f->dir,
           engine == BFH_ENGINE_LSM ? "sst" : "ldb");
  struct stat sb;
  assert_int_equal(stat(path, &sb), 0);
  assert_int_equal(test_copy_file(path, leftover, (uint64_t)sb.st_size / 2), 0);
  damage_t d;
  bfh_check_report rep;
  assert_int_equal(check(f, engine, &d, &rep), BFH_OK);
  assert_int_equal(d.n, 0);
  assert_int_equal(rep.damaged, 0);
}

/* A live table deleted: damage, named. */
static void check_missing_table(void **state, bfh_engine engine) {
  db_fixture_t *f = *state;
  char name[256], path[TEST_PATH_MAX + 512];
  fill_closed(f, engine, name, sizeof name);
  snprintf(path, sizeof path, "%s/%s", f->dir, name);
  assert_int_equal(unlink(path), 0);
  expect_one_damage(f, engine, name, "missing");
}

/* LevelDB: a database that a program other than bfh holds open (here stock LevelDB in this
   very process) is refused, twice: the first check did not release the holder's lock (closing
   any descriptor of LOCK would have, which is why this test cannot use check(): it reads
   every file). Once closed, it checks clean. */
static void test_check_leveldb_held(void **state) {
  db_fixture_t *f = *state;
  fill(f, BFH_ENGINE_LEVELDB, 1);
  close_db(f);
  leveldb_options_t *lo = leveldb_options_create();
  char *err = NULL;
  leveldb_t *held = leveldb_open(lo, f->dir, &err);
  assert_null(err);
  bfh_options o;
  options(&o, BFH_ENGINE_LEVELDB);
  damage_t d = {0};
  bfh_check_report rep;
  for (int i = 0; i < 2; i++) {
    assert_int_equal(bfh_check(f->dir, &o, note_damage, &d, &rep), BFH_E_BUSY);
    assert_non_null(strstr(bfh_last_error(NULL), "holds LevelDB's LOCK"));
    assert_int_equal(d.n, 0);
  }
  leveldb_close(held);
  leveldb_options_destroy(lo);
  assert_int_equal(check(f, BFH_ENGINE_LEVELDB, &d, &rep), BFH_OK);
}

/* LevelDB: a damaged filter cache file is reported as harmless, and the database is clean.
   The table is one the MANIFEST names at rest (fill_closed: one listed before the close may
   have been compacted away, and bfh_check rightly skips its leftover cache file). */
static void test_check_leveldb_cache(void **state) {
  db_fixture_t *f = *state;
  char table[256], name[256], path[TEST_PATH_MAX + 1024];
  fill_closed(f, BFH_ENGINE_LEVELDB, table, sizeof table); /* the close writes the cache files */
  uint64_t number = strtoull(table, NULL, 10);
  snprintf(name, sizeof name, "%06llu.vf", (unsigned long long)number);
  snprintf(path, sizeof path, "%s/%s/%s", f->dir, LEAF_CACHE_DIR, name);
  assert_int_equal(test_file_xor_byte(path, LEAF_CACHE_HEADER_BYTES + 100, 0x01), 0);
  damage_t d;
  bfh_check_report rep;
  assert_int_equal(check(f, BFH_ENGINE_LEVELDB, &d, &rep), BFH_OK);
  assert_int_equal(d.n, 1);
  assert_int_equal(rep.damaged, 0);
  assert_int_equal(rep.cache_damaged, 1);
  assert_non_null(strstr(d.file, name));
  assert_non_null(strstr(d.what, "harmless"));
}

/* Own engine: a byte flipped in a table's value filter (a meta block) is named at the
   block's offset. */
static void test_check_value_filter(void **state) {
  db_fixture_t *f = *state;
  fill(f, BFH_ENGINE_LSM, 1);
  char name[256], path[TEST_PATH_MAX + 512];
  live_table(f, BFH_ENGINE_LSM, name, sizeof name);
  close_db(f);
  snprintf(path, sizeof path, "%s/%s", f->dir, name);
  table_t *t;
  err_t e;
  assert_int_equal(table_open(env_default(), path, strtoull(name, NULL, 10), &t, &e), BFH_OK);
  void *data;
  size_t size;
  uint64_t offset;
  assert_int_equal(table_read_meta(t, "bfh.value_filter", &data, &size, &offset, &e), BFH_OK);
  free(data);
  table_unref(t);
  assert_int_equal(test_file_xor_byte(path, offset + size / 2, 0x01), 0);
  damage_t d;
  bfh_check_report rep;
  assert_int_equal(check(f, BFH_ENGINE_LSM, &d, &rep), BFH_E_CORRUPT);
  assert_int_equal(d.n, 1);
  assert_string_equal(d.file, name);
  assert_int_equal(d.offset, offset);
}

/* Own engine: the stand-alone index is checked too, its files named under its directory. */
static void test_check_standalone(void **state) {
  db_fixture_t *f = *state;
  bfh_options o;
  options(&o, BFH_ENGINE_LSM);
  o.standalone_index = 1;
  fill_with(f, &o, 1);
  close_db(f);
  damage_t d;
  bfh_check_report clean, rep;
  assert_int_equal(check(f, BFH_ENGINE_LSM, &d, &clean), BFH_OK);
  char dir[TEST_PATH_MAX + 512], name[256], path[TEST_PATH_MAX + 1024], want[300];
  snprintf(dir, sizeof dir, "%s/bfh-standalone", f->dir);
  newest_file(dir, ".sst", name, sizeof name);
  snprintf(path, sizeof path, "%s/%s", dir, name);
  assert_int_equal(test_file_xor_byte(path, 10, 0x40), 0); /* in the first data block, at 0 */
  assert_int_equal(check(f, BFH_ENGINE_LSM, &d, &rep), BFH_E_CORRUPT);
  assert_int_equal(d.n, 1);
  snprintf(want, sizeof want, "bfh-standalone/%s", name);
  assert_string_equal(d.file, want);
  assert_int_equal(d.offset, 0);
  assert_int_equal(rep.files, clean.files);
}

/* A database of the other engine is no database of the engine asked for. */
static void test_check_wrong_engine(void **state) {
  db_fixture_t *f = *state;
  fill(f, BFH_ENGINE_LSM, 0);
  close_db(f);
  damage_t d;
  bfh_check_report rep;
  assert_int_equal(check(f, BFH_ENGINE_LEVELDB, &d, &rep), BFH_E_INVALID);
  assert_int_equal(d.n, 0);
  assert_int_equal(test_rmrf(f->dir), 0);
  fill(f, BFH_ENGINE_LEVELDB, 0);
  close_db(f);
  assert_int_equal(check(f, BFH_ENGINE_LSM, &d, &rep), BFH_E_INVALID);
  assert_int_equal(d.n, 0);
}

/* One test per body and engine. */
#define BOTH_ENGINES(body)                          \
  static void test_##body##_lsm(void **state) {     \
    body(state, BFH_ENGINE_LSM);                    \
  }                                                 \
  static void test_##body##_leveldb(void **state) { \
    body(state, BFH_ENGINE_LEVELDB);                \
  }
BOTH_ENGINES(tables_match_stats)
BOTH_ENGINES(tables_stop)
BOTH_ENGINES(check_clean)
BOTH_ENGINES(check_busy)
BOTH_ENGINES(check_table_block)
BOTH_ENGINES(check_log_record)
BOTH_ENGINES(check_torn_tail)
BOTH_ENGINES(check_manifest_record)
BOTH_ENGINES(check_params)
BOTH_ENGINES(check_leftover)
BOTH_ENGINES(check_missing_table)

#define T(name) cmocka_unit_test_setup_teardown(name, setup, db_fixture_teardown)
int main(void) {
  const struct CMUnitTest tests[] = {
      T(test_tables_match_stats_lsm),
      T(test_tables_match_stats_leveldb),
      T(test_tables_stop_lsm),
      T(test_tables_stop_leveldb),
      T(test_check_clean_lsm),
      T(test_check_clean_leveldb),
      T(test_check_busy_lsm),
      T(test_check_busy_leveldb),
      T(test_check_table_block_lsm),
      T(test_check_table_block_leveldb),
      T(test_check_log_record_lsm),
      T(test_check_log_record_leveldb),
      T(test_check_torn_tail_lsm),
      T(test_check_torn_tail_leveldb),
      T(test_check_manifest_record_lsm),
      T(test_check_manifest_record_leveldb),
      T(test_check_params_lsm),
      T(test_check_params_leveldb),
      T(test_check_leftover_lsm),
      T(test_check_leftover_leveldb),
      T(test_check_missing_table_lsm),
      T(test_check_missing_table_leveldb),
      T(test_check_leveldb_held),
      T(test_check_leveldb_cache),
      T(test_check_value_filter),
      T(test_check_standalone),
      T(test_check_wrong_engine),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

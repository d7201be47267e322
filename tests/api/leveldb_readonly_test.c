/* The read-only LevelDB mode (bfh_options.read_only, doc/leveldb.md "Searching a live LevelDB
 * database read-only"): searches of a database another process holds open and keeps writing,
 * a table that vanishes under a search, a memtable flushed between a refresh's MANIFEST read
 * and its log read, a put between two searches found by the second while searches with nothing
 * written read no file again, files never created or changed, writes refused, and
 * engine detection in both directions without creating a file.
 *
 * The live test forks a writer that owns the database through LevelDB's C API. It runs first:
 * a child forked after this process used LevelDB would lack LevelDB's background thread. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <dirent.h>
#include <leveldb/c.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bfh.h"
/* Not public (api/testbed.h): the read-only engine's test hooks and its retry
   counter. */
#include "api/testbed.h"
#include "tests/test_util.h"
#include "util/random.h"

#define NKEYS 3000
#define NVALS 16 /* the value domain: value ids 0..15 */
#define ROUNDS 24
#define OPS_PER_ROUND 1500 /* ~190 KB of values: about three 64 KiB memtables a round */
#define SEED 0x726f74657374ull
#define ABSENT (-1)

static char tmpdir[4096];

/* ---- The workload: both processes generate it from the seed ----------------------------- */

typedef struct op {
  int key, val; /* val ABSENT: a delete */
} op_t;

/* The ops of round r: 10% deletes, puts of a value id chosen uniformly. */
static void round_ops(int r, op_t *ops) {
  rng_t g;
  rng_init(&g, SEED + (uint64_t)r);
  for (int i = 0; i < OPS_PER_ROUND; i++) {
    ops[i].key = (int)rng_below(&g, NKEYS);
    ops[i].val = rng_below(&g, 10) == 0 ? ABSENT : (int)rng_below(&g, NVALS);
  }
}

static size_t key_bytes(int key, char *out) {
  return (size_t)snprintf(out, 32, "key%06d", key);
}

/* 120 bytes, poorly compressible, a function of the id only. */
static size_t value_bytes(int id, char *out) {
  rng_t g;
  rng_init(&g, 1000u + (uint64_t)id);
  int n = snprintf(out, 32, "value-%02d-", id);
  for (int i = n; i < 120; i++) out[i] = (char)('!' + rng_below(&g, 90));
  return 120;
}

static void apply(int *model, const op_t *ops) {
  for (int i = 0; i < OPS_PER_ROUND; i++) model[ops[i].key] = ops[i].val;
}

/* ---- The writer (child) ------------------------------------------------------------------ */

static leveldb_t *ldb_open_small(const char *dir, leveldb_options_t **o) {
  *o = leveldb_options_create();
  leveldb_options_set_create_if_missing(*o, 1);
  leveldb_options_set_write_buffer_size(*o, 64 << 10); /* flushes and compacts often */
  char *err = NULL;
  leveldb_t *db = leveldb_open(*o, dir, &err);
  if (err) leveldb_free(err);
  return db;
}

static int write_round(leveldb_t *db, int r) {
  op_t ops[OPS_PER_ROUND];
  round_ops(r, ops);
  leveldb_writeoptions_t *wo = leveldb_writeoptions_create();
  char k[32], v[128], *err = NULL;
  for (int i = 0; i < OPS_PER_ROUND && !err; i++) {
    size_t kl = key_bytes(ops[i].key, k);
    if (ops[i].val == ABSENT)
      leveldb_delete(db, wo, k, kl, &err);
    else
      leveldb_put(db, wo, k, kl, v, value_bytes(ops[i].val, v), &err);
  }
  leveldb_writeoptions_destroy(wo);
  if (err) leveldb_free(err);
  return err ? -1 : 0;
}

/* Writes round after round; tells the parent after each (every write acknowledged), then
   waits for its go. Exit status 0 if every write succeeded. */
static void writer_main(const char *dir, int to_parent, int from_parent) {
  leveldb_options_t *o;
  leveldb_t *db = ldb_open_small(dir, &o);
  if (!db) _exit(2);
  for (int r = 0; r < ROUNDS; r++) {
    if (write_round(db, r) != 0) _exit(3);
    char c = (char)r;
    if (write(to_parent, &c, 1) != 1) _exit(4);
    if (r + 1 < ROUNDS && read(from_parent, &c, 1) != 1) _exit(5);
  }
  leveldb_close(db);
  leveldb_options_destroy(o);
  _exit(0);
}

/* ---- Checks ------------------------------------------------------------------------------ */

typedef struct hits {
  int count[NKEYS];
  int bad; /* keys reported that are not of the workload */
} hits_t;

static int on_hit(void *arg, const void *key, size_t len) {
  hits_t *h = arg;
  char buf[32];
  if (len >= sizeof buf) return h->bad++, 0;
  memcpy(buf, key, len);
  buf[len] = '\0';
  int k;
  if (sscanf(buf, "key%d", &k) != 1 || k < 0 || k >= NKEYS) return h->bad++, 0;
  h->count[k]++;
  return 0;
}

static bfh_db *open_ro(const char *dir, const char *index_dir) {
  bfh_options o;
  bfh_options_init(&o);
  o.engine = BFH_ENGINE_LEVELDB;
  o.read_only = 1;
  o.index_dir = index_dir;
  o.value_filter_bits = 1 << 14;
  bfh_db *db = NULL;
  int rc = bfh_open(dir, &o, &db);
  if (rc != BFH_OK) print_message("open read-only: %s\n", bfh_last_error(NULL));
  assert_int_equal(rc, BFH_OK);
  return db;
}

/* Searches value id v by method and checks the keys found against the state `before`
   (acknowledged when the search began) and the ops `during` (being written while it runs;
   NULL: none, the result must then equal the state exactly). A key must be found if it
   held v before and no op during touches it; a key found must hold v before or get v by an
   op during. Each key at most once. */
static void check_search(bfh_db *db, int v, bfh_method method, const int *before,
                         const op_t *during) {
  static hits_t h;
  memset(&h, 0, sizeof h);
  char val[128];
  size_t vl = value_bytes(v, val);
  int rc = bfh_search(db, val, vl, method, on_hit, &h, NULL);
  if (rc != BFH_OK) print_message("search: %s\n", bfh_last_error(db));
  assert_int_equal(rc, BFH_OK);
  assert_int_equal(h.bad, 0);
  static uint8_t touched[NKEYS], gets_v[NKEYS];
  memset(touched, 0, sizeof touched);
  memset(gets_v, 0, sizeof gets_v);
  for (int i = 0; during && i < OPS_PER_ROUND; i++) {
    touched[during[i].key] = 1;
    if (during[i].val == v) gets_v[during[i].key] = 1;
  }
  for (int k = 0; k < NKEYS; k++) {
    assert_true(h.count[k] <= 1);
    if (before[k] == v && !touched[k] && h.count[k] == 0)
      fail_msg("method %d, value %d: key%06d missed", method, v, k);
    if (h.count[k] && before[k] != v && !gets_v[k])
      fail_msg("method %d, value %d: key%06d reported, but it never held that value", method, v, k);
  }
}

/* bfh_get of a sample of keys equals the state (quiescent writer). */
static void check_gets(bfh_db *db, const int *model, int r) {
  for (int k = r; k < NKEYS; k += 97) {
    char key[32], want[128];
    void *got = NULL;
    size_t n = 0;
    int rc = bfh_get(db, key, key_bytes(k, key), &got, &n);
    if (model[k] == ABSENT) {
      assert_int_equal(rc, BFH_NOT_FOUND);
      continue;
    }
    assert_int_equal(rc, BFH_OK);
    size_t wl = value_bytes(model[k], want);
    assert_int_equal(n, wl);
    assert_memory_equal(got, want, wl);
    bfh_free(got);
  }
}

/* Is name "<digits>.<suffix>" (000012.log)? */
static int numbered(const char *name, const char *suffix) {
  size_t d = strspn(name, "0123456789");
  return d > 0 && name[d] == '.' && strcmp(name + d + 1, suffix) == 0;
}

/* Every name in dir is one LevelDB makes: the reader created nothing there. */
static void assert_only_leveldb_files(const char *dir) {
  DIR *d = opendir(dir);
  assert_non_null(d);
  struct dirent *de;
  while ((de = readdir(d))) {
    const char *n = de->d_name;
    int ok = !strcmp(n, ".") || !strcmp(n, "..") || !strcmp(n, "CURRENT") || !strcmp(n, "LOCK") ||
             !strcmp(n, "LOG") || !strcmp(n, "LOG.old") || !strncmp(n, "MANIFEST-", 9) ||
             numbered(n, "log") || numbered(n, "ldb") || numbered(n, "sst") || numbered(n, "dbtmp");
    if (!ok) fail_msg("%s/%s: not a LevelDB file (made by the reader?)", dir, n);
  }
  closedir(d);
}

static const bfh_method methods[] = {BFH_SEARCH_SCAN, BFH_SEARCH_LEAVES, BFH_SEARCH_HIERARCHY,
                                     BFH_SEARCH_SLICED, BFH_SEARCH_AUTO};

/* A writer process owns the database (its LOCK held) and writes ROUNDS rounds; between
   rounds, and on odd rounds while it writes the next, two read-only handles (filters in
   memory; filters in an index directory) search every value with every method in turn. */
static void test_readonly_live_writer(void **state) {
  (void)state;
  char root[4200], dir[4300], index_dir[4300];
  snprintf(root, sizeof root, "%s/live", tmpdir);
  assert_int_equal(test_mkdirs(root), 0);
  snprintf(dir, sizeof dir, "%s/db", root);
  snprintf(index_dir, sizeof index_dir, "%s/index/nested", root);
  int up[2], down[2];
  assert_int_equal(pipe(up), 0);
  assert_int_equal(pipe(down), 0);
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    close(up[0]);
    close(down[1]);
    writer_main(dir, up[1], down[0]);
  }
  close(up[1]);
  close(down[0]);

  static int model[NKEYS];
  static op_t ops[OPS_PER_ROUND], next[OPS_PER_ROUND];
  for (int k = 0; k < NKEYS; k++) model[k] = ABSENT;
  char c;
  assert_int_equal(read(up[0], &c, 1), 1); /* round 0 written: the database exists */
  round_ops(0, ops);
  apply(model, ops);
  bfh_db *dbs[2] = {open_ro(dir, NULL), open_ro(dir, index_dir)};
  int searches = 0;
  for (int r = 0; r < ROUNDS; r++) {
    int concurrent = r % 2 == 1 && r + 1 < ROUNDS;
    if (concurrent) {
      round_ops(r + 1, next);
      assert_int_equal(write(down[1], &c, 1), 1); /* the writer starts round r + 1 */
    }
    for (int v = 0; v < NVALS; v++, searches++)
      check_search(dbs[searches % 2], v, methods[searches % 5], model, concurrent ? next : NULL);
    if (!concurrent) {
      check_gets(dbs[r % 2], model, r);
      if (r + 1 == ROUNDS) break;
      round_ops(r + 1, next);
      assert_int_equal(write(down[1], &c, 1), 1);
    }
    assert_int_equal(read(up[0], &c, 1), 1); /* round r + 1 acknowledged */
    apply(model, next);
  }
  int status;
  assert_int_equal(waitpid(pid, &status, 0), pid);
  assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0); /* every write succeeded */
  /* After the writer closed: one more exact pass over the final state. */
  for (int v = 0; v < NVALS; v++) check_search(dbs[v % 2], v, methods[v % 5], model, NULL);
  bfh_db_stats st;
  assert_int_equal(bfh_stats(dbs[1], &st), BFH_OK);
  assert_true(st.tables > 0);
  assert_int_equal(st.leaf_filters, st.tables);
  print_message("live: %d searches; retries %llu + %llu; %llu tables\n", searches,
                (unsigned long long)stock_ro_counts(bfh_internal_engine(dbs[0])).retries,
                (unsigned long long)stock_ro_counts(bfh_internal_engine(dbs[1])).retries,
                (unsigned long long)st.tables);
  assert_int_equal(bfh_close(dbs[0]), BFH_OK);
  assert_int_equal(bfh_close(dbs[1]), BFH_OK);
  close(up[0]);
  close(down[1]);
  assert_only_leveldb_files(dir);
  char p[4400];
  snprintf(p, sizeof p, "%s/BFH-PARAMS", index_dir);
  assert_int_equal(access(p, F_OK), 0); /* the parameters went to the index directory */
  snprintf(p, sizeof p, "%s/bfh-filters", index_dir);
  DIR *d = opendir(p);
  assert_non_null(d);
  int cached = 0;
  struct dirent *de;
  while ((de = readdir(d))) cached += strstr(de->d_name, ".vf") != NULL;
  closedir(d);
  assert_true(cached > 0);
}

/* ---- A database at rest ----------------------------------------------------------------- */

/* A database written by LevelDB and closed: keys 0..NKEYS-1 with value id key % NVALS,
   compacted into tables, plus a log of overwrites (value id (key + 1) % NVALS for keys below
   300). model gets the state. */
static void make_db(const char *dir, int *model) {
  leveldb_options_t *o;
  leveldb_t *db = ldb_open_small(dir, &o);
  assert_non_null(db);
  leveldb_writeoptions_t *wo = leveldb_writeoptions_create();
  char k[32], v[128], *err = NULL;
  for (int key = 0; key < NKEYS; key++) {
    model[key] = key % NVALS;
    leveldb_put(db, wo, k, key_bytes(key, k), v, value_bytes(model[key], v), &err);
    assert_null(err);
  }
  leveldb_compact_range(db, NULL, 0, NULL, 0);
  for (int key = 0; key < 300; key++) {
    model[key] = (key + 1) % NVALS;
    leveldb_put(db, wo, k, key_bytes(key, k), v, value_bytes(model[key], v), &err);
    assert_null(err);
  }
  leveldb_writeoptions_destroy(wo);
  leveldb_close(db);
  leveldb_options_destroy(o);
}

typedef struct file_snap {
  char name[256];
  size_t len;
  uint8_t *data;
  struct timespec mtime;
} file_snap_t;

/* Every file of dir with its bytes and mtime; returns the count. */
static size_t snapshot(const char *dir, file_snap_t *out, size_t cap) {
  DIR *d = opendir(dir);
  assert_non_null(d);
  size_t n = 0;
  struct dirent *de;
  while ((de = readdir(d))) {
    if (de->d_name[0] == '.') continue;
    assert_true(n < cap);
    file_snap_t *f = &out[n++];
    snprintf(f->name, sizeof f->name, "%s", de->d_name);
    char p[4400];
    snprintf(p, sizeof p, "%s/%s", dir, de->d_name);
    struct stat sb;
    assert_int_equal(stat(p, &sb), 0);
    f->mtime = sb.st_mtim;
    f->len = (size_t)sb.st_size;
    f->data = malloc(f->len + 1);
    FILE *fp = fopen(p, "rb");
    assert_non_null(fp);
    assert_int_equal(fread(f->data, 1, f->len, fp), f->len);
    fclose(fp);
  }
  closedir(d);
  return n;
}

static void assert_same_snapshot(const file_snap_t *a, size_t na, const file_snap_t *b, size_t nb) {
  assert_int_equal(na, nb);
  for (size_t i = 0; i < na; i++) {
    size_t j = 0;
    while (j < nb && strcmp(a[i].name, b[j].name) != 0) j++;
    if (j == nb) fail_msg("%s: gone", a[i].name);
    assert_int_equal(a[i].len, b[j].len);
    assert_memory_equal(a[i].data, b[j].data, a[i].len);
    assert_true(a[i].mtime.tv_sec == b[j].mtime.tv_sec && a[i].mtime.tv_nsec == b[j].mtime.tv_nsec);
  }
}

static void snapshot_free(file_snap_t *s, size_t n) {
  for (size_t i = 0; i < n; i++) free(s[i].data);
}

static void exact_searches(bfh_db *db, const int *model) {
  for (int v = 0; v < NVALS; v++) check_search(db, v, methods[v % 5], model, NULL);
}

/* Opening, searching, getting, stats and closing leave every file's name, bytes and mtime as
   they were; writes are refused. */
static void test_readonly_leaves_files_untouched(void **state) {
  (void)state;
  char dir[4300];
  snprintf(dir, sizeof dir, "%s/rest", tmpdir);
  static int model[NKEYS];
  make_db(dir, model);
  static file_snap_t before[256], after[256];
  size_t nb = snapshot(dir, before, 256);
  bfh_db *db = open_ro(dir, NULL);
  exact_searches(db, model);
  check_gets(db, model, 0);
  bfh_db_stats st;
  assert_int_equal(bfh_stats(db, &st), BFH_OK);
  assert_int_equal(bfh_put(db, "k", 1, "v", 1), BFH_E_UNSUPPORTED);
  assert_non_null(strstr(bfh_last_error(db), "read-only handle"));
  assert_int_equal(bfh_delete(db, "k", 1), BFH_E_UNSUPPORTED);
  assert_int_equal(bfh_flush(db), BFH_E_UNSUPPORTED);
  assert_int_equal(bfh_close(db), BFH_OK);
  size_t na = snapshot(dir, after, 256);
  assert_same_snapshot(before, nb, after, na);
  snapshot_free(before, nb);
  snapshot_free(after, na);
}

/* ---- A table that vanishes under a search ------------------------------------------------ */

/* bfh_match_fn: counts the keys "keyNNNNNN" found in seen[]. */
static int count_key(void *arg, const void *key, size_t len) {
  int *seen = arg, k;
  char buf[32];
  assert_true(len < sizeof buf);
  memcpy(buf, key, len);
  buf[len] = '\0';
  assert_int_equal(sscanf(buf, "key%d", &k), 1);
  seen[k]++;
  return 0;
}

/* count_key as an engine_match_fn. */
static int count_entry(void *arg, const void *key, size_t len, uint64_t seq) {
  (void)seq;
  return count_key(arg, key, len);
}

typedef struct vanish {
  const char *dir;
  int fired;
} vanish_t;

/* Before the first table read: the owner opens the database (a new MANIFEST), rewrites every
   key with its value and compacts everything: the table about to be read is deleted. */
static void vanish_hook(void *arg, uint64_t number) {
  vanish_t *h = arg;
  if (h->fired++) return;
  leveldb_options_t *o;
  leveldb_t *db = ldb_open_small(h->dir, &o);
  assert_non_null(db);
  leveldb_readoptions_t *ro = leveldb_readoptions_create();
  leveldb_writeoptions_t *wo = leveldb_writeoptions_create();
  leveldb_iterator_t *it = leveldb_create_iterator(db, ro);
  char *err = NULL;
  for (leveldb_iter_seek_to_first(it); leveldb_iter_valid(it); leveldb_iter_next(it)) {
    size_t kl, vl;
    const char *k = leveldb_iter_key(it, &kl), *v = leveldb_iter_value(it, &vl);
    leveldb_put(db, wo, k, kl, v, vl, &err);
    assert_null(err);
  }
  leveldb_iter_destroy(it);
  leveldb_compact_range(db, NULL, 0, NULL, 0);
  leveldb_readoptions_destroy(ro);
  leveldb_writeoptions_destroy(wo);
  leveldb_close(db);
  leveldb_options_destroy(o);
  char ldb[4400], sst[4400];
  snprintf(ldb, sizeof ldb, "%s/%06llu.ldb", h->dir, (unsigned long long)number);
  snprintf(sst, sizeof sst, "%s/%06llu.sst", h->dir, (unsigned long long)number);
  if (access(ldb, F_OK) == 0 || access(sst, F_OK) == 0)
    fail_msg("table %llu: still there after the compaction", (unsigned long long)number);
}

/* The table a search is about to read is compacted away and the MANIFEST replaced. Pinned
   (the default: the handle holds the files of the version it read open), the search reads
   the unlinked file through its descriptor and answers exactly without starting over; with
   pinning off it starts over from the new MANIFEST and answers exactly. Each key once. */
static void test_readonly_table_vanishes(void **state) {
  (void)state;
  for (int pinned = 1; pinned >= 0; pinned--) {
    char dir[4300];
    snprintf(dir, sizeof dir, "%s/vanish%d", tmpdir, pinned);
    static int model[NKEYS];
    make_db(dir, model);
    for (size_t m = 0; m < sizeof methods / sizeof methods[0]; m++) {
      bfh_db *db = open_ro(dir, NULL);
      engine_t *e = bfh_internal_engine(db);
      if (!pinned) { /* from the next refresh on: the one of the search below */
        stock_ro_set_pin_max(e, 0);
        check_gets(db, model, (int)m);
        assert_int_equal(stock_ro_counts(e).pinned, 0);
      }
      assert_true(pinned ? stock_ro_counts(e).pinned > 0 : 1);
      vanish_t h = {dir, 0};
      stock_ro_set_read_hook(e, vanish_hook, &h);
      uint64_t before = stock_ro_counts(e).retries;
      check_search(db, (int)m, methods[m], model, NULL);
      assert_true(h.fired > 0);
      if (pinned)
        assert_int_equal(stock_ro_counts(e).retries, before);
      else
        assert_true(stock_ro_counts(e).retries > before);
      stock_ro_set_read_hook(e, NULL, NULL);
      check_gets(db, model, (int)m);
      assert_int_equal(bfh_close(db), BFH_OK);
    }
  }
}

/* Every table file of the version a handle read is deleted while it holds them open: its
   view's scans, and searches and gets of that unchanged state, answer exactly from the open
   files. A new handle, which finds the tables the MANIFEST names gone twice with no edit in
   between, reports the damage (BFH_E_CORRUPT naming a table), not BUSY. */
static void test_readonly_pinned_files_outlive_unlink(void **state) {
  (void)state;
  char dir[4300];
  snprintf(dir, sizeof dir, "%s/pinned", tmpdir);
  static int model[NKEYS];
  make_db(dir, model);
  bfh_db *db = open_ro(dir, NULL);
  engine_t *e = bfh_internal_engine(db);
  check_gets(db, model, 0); /* a refresh: every table of the version is held open */
  uint64_t pinned = stock_ro_counts(e).pinned;
  assert_true(pinned > 0);
  engine_view_t *v = NULL;
  err_t err;
  assert_int_equal(e->ops->view_acquire(e, &v, &err), BFH_OK);
  const engine_table_t *t;
  size_t nt = e->ops->view_tables(v, &t);
  assert_int_equal(nt, pinned);
  for (size_t i = 0; i < nt; i++) {
    char p[4400];
    snprintf(p, sizeof p, "%s/%06llu.ldb", dir, (unsigned long long)t[i].number);
    assert_int_equal(unlink(p), 0);
  }
  /* The view's own reads: every table scanned through the open files. */
  for (int val = 0; val < NVALS; val++) {
    char vb[128];
    size_t vl = value_bytes(val, vb);
    static int seen[NKEYS];
    memset(seen, 0, sizeof seen);
    for (size_t i = 0; i < nt; i++) {
      engine_scan_stats_t st = {0};
      engine_value_test_t test = engine_value_test_equal(vb, vl);
      assert_int_equal(e->ops->scan_table(e, v, t[i].number, &test, count_entry, seen, &st, &err),
                       BFH_OK);
      assert_true(st.entries > 0);
    }
    for (int k = 300; k < NKEYS; k++) /* keys above 300 live in the tables only */
      assert_int_equal(seen[k] > 0, model[k] == val);
  }
  e->ops->view_release(e, v);
  exact_searches(db, model);
  check_gets(db, model, 1);
  assert_int_equal(stock_ro_counts(e).retries, 0);
  bfh_options o;
  bfh_options_init(&o);
  o.engine = BFH_ENGINE_LEVELDB;
  o.read_only = 1;
  bfh_db *db2 = NULL;
  assert_int_equal(bfh_open(dir, &o, &db2), BFH_E_CORRUPT);
  if (!strstr(bfh_last_error(NULL), "is missing"))
    fail_msg("message \"%s\" lacks \"is missing\"", bfh_last_error(NULL));
  assert_int_equal(bfh_close(db), BFH_OK);
}

/* ---- A memtable flushed in the middle of a refresh --------------------------------------- */

typedef struct flush_hook {
  leveldb_t *owner;
  leveldb_writeoptions_t *wo;
  int first, armed;
} flush_hook_t;

enum { BATCH = 200, V_LOG = 5, V_TABLE = 6 };

/* The owner overwrites keys first..first+BATCH-1 with value id v (~26 KB of values: they stay
   in its 64 KiB memtable and its log). */
static void overwrite(leveldb_t *owner, leveldb_writeoptions_t *wo, int first, int v) {
  char k[32], val[128], *err = NULL;
  for (int key = first; key < first + BATCH; key++) {
    leveldb_put(owner, wo, k, key_bytes(key, k), val, value_bytes(v, val), &err);
    assert_null(err);
  }
}

/* Once armed, after the refresh has read the log: the owner overwrites the batch again and
   flushes its memtable into a table. In the MANIFEST the refresh is about to read again,
   that raises the log number, and the log it read is deleted. */
static void flush_hook(void *arg) {
  flush_hook_t *h = arg;
  if (!h->armed) return;
  h->armed = 0;
  overwrite(h->owner, h->wo, h->first, V_TABLE);
  leveldb_compact_range(h->owner, NULL, 0, NULL, 0);
}

/* Counts the *.log files of dir. */
static int count_logs(const char *dir) {
  DIR *d = opendir(dir);
  assert_non_null(d);
  int n = 0;
  for (struct dirent *e; (e = readdir(d));) n += numbered(e->d_name, "log");
  closedir(d);
  return n;
}

/* The owner keeps the database open and writes a batch of overwrites (value V_LOG) into its
   log. A refresh reads that log; then the owner overwrites the batch again (V_TABLE),
   flushes the memtable into a table and deletes the log; then the refresh reads the
   MANIFEST again. Its log number moved: the refresh must start over. Otherwise it would put
   the V_LOG entries it read from the old log on top of the new version's tables, which hold
   V_TABLE, and miss every key of the batch. Once per method. */
static void test_readonly_log_flushed_under_refresh(void **state) {
  (void)state;
  char dir[4300];
  snprintf(dir, sizeof dir, "%s/flushed", tmpdir);
  static int model[NKEYS];
  make_db(dir, model);
  leveldb_options_t *o;
  leveldb_t *owner = ldb_open_small(dir, &o);
  assert_non_null(owner);
  flush_hook_t h = {owner, leveldb_writeoptions_create(), 0, 0};
  bfh_db *db = open_ro(dir, NULL);
  engine_t *e = bfh_internal_engine(db);
  stock_ro_set_logs_hook(e, flush_hook, &h);
  for (size_t m = 0; m < sizeof methods / sizeof methods[0]; m++) {
    h.first = (int)m * BATCH;
    overwrite(owner, h.wo, h.first, V_LOG);
    assert_int_equal(count_logs(dir), 1);
    uint64_t before = stock_ro_counts(e).retries;
    h.armed = 1;
    for (int key = h.first; key < h.first + BATCH; key++) model[key] = V_TABLE;
    check_search(db, V_TABLE, methods[m], model, NULL);
    assert_int_equal(h.armed, 0);
    assert_true(stock_ro_counts(e).retries > before);
    check_search(db, V_LOG, methods[m], model, NULL);
    check_gets(db, model, (int)m);
  }
  stock_ro_set_logs_hook(e, NULL, NULL);
  assert_int_equal(bfh_close(db), BFH_OK);
  leveldb_writeoptions_destroy(h.wo);
  leveldb_close(owner);
  leveldb_options_destroy(o);
}

/* The refresh's watch (dir_watch.h): with nothing written, searches read no file again (the
   refresh count stays); a put made between two searches, with nothing else happening, is
   found by the second (also after the owner compacts, and after it reopens: a new MANIFEST,
   CURRENT renamed). */
static void test_readonly_refresh_watch(void **state) {
  (void)state;
  char dir[4300];
  snprintf(dir, sizeof dir, "%s/watched", tmpdir);
  static int model[NKEYS];
  make_db(dir, model);
  leveldb_options_t *o;
  leveldb_t *owner = ldb_open_small(dir, &o);
  assert_non_null(owner);
  leveldb_compact_range(owner, NULL, 0, NULL, 0); /* no background work left */
  leveldb_writeoptions_t *wo = leveldb_writeoptions_create();
  bfh_db *db = open_ro(dir, NULL);
  engine_t *e = bfh_internal_engine(db);
  char k[32], v[128], *err = NULL;
  int seen[NKEYS];
  size_t vl = value_bytes(NVALS + 1, v); /* held by no key */
  uint64_t refreshes = 0;
  for (int i = 0; i < 21; i++) { /* from the first search on: the open's read was the last */
    if (i == 0) refreshes = stock_ro_counts(e).refreshes;
    memset(seen, 0, sizeof seen);
    assert_int_equal(bfh_search(db, v, vl, BFH_SEARCH_AUTO, count_key, seen, NULL), BFH_OK);
  }
  assert_int_equal(stock_ro_counts(e).refreshes, refreshes);
  for (int i = 0; i < 30; i++) {
    if (i % 10 == 9) { /* the owner reopens: a new MANIFEST, CURRENT renamed, a new log */
      leveldb_close(owner);
      leveldb_options_destroy(o);
      assert_non_null(owner = ldb_open_small(dir, &o));
    }
    int key = 7 * i, id = NVALS + 2 + i;
    vl = value_bytes(id, v);
    leveldb_put(owner, wo, k, key_bytes(key, k), v, vl, &err);
    assert_null(err);
    if (i % 10 == 4) leveldb_compact_range(owner, NULL, 0, NULL, 0); /* the log goes */
    memset(seen, 0, sizeof seen);
    assert_int_equal(bfh_search(db, v, vl, BFH_SEARCH_AUTO, count_key, seen, NULL), BFH_OK);
    if (seen[key] != 1) fail_msg("put %d: key %d not found once by the next search", i, key);
  }
  assert_int_equal(bfh_close(db), BFH_OK);
  leveldb_writeoptions_destroy(wo);
  leveldb_close(owner);
  leveldb_options_destroy(o);
}

/* ---- Options and engine detection -------------------------------------------------------- */

static void test_readonly_options(void **state) {
  (void)state;
  bfh_options o;
  bfh_options_init(&o);
  assert_int_equal(o.read_only, 0);
  assert_null(o.index_dir);
  char dir[4300];
  snprintf(dir, sizeof dir, "%s/opts", tmpdir);
  o.read_only = 1; /* the own engine's read-only row: no database there, nothing created */
  bfh_db *db = NULL;
  assert_int_equal(bfh_open(dir, &o, &db), BFH_E_INVALID);
  assert_int_equal(access(dir, F_OK), -1);
  o.engine = BFH_ENGINE_LEVELDB; /* no database there: nothing is created */
  assert_int_equal(bfh_open(dir, &o, &db), BFH_E_INVALID);
  assert_int_equal(access(dir, F_OK), -1);
  o.leaves_on_disk = BFH_LEAVES_ON_DISK;
  assert_int_equal(bfh_open(dir, &o, &db), BFH_E_INVALID);
  assert_non_null(strstr(bfh_last_error(NULL), "index_dir"));
}

/* The names in dir, sorted, joined. */
static void listing(const char *dir, char *out, size_t cap) {
  struct dirent **list;
  int n = scandir(dir, &list, NULL, alphasort);
  assert_true(n >= 0);
  out[0] = '\0';
  for (int i = 0; i < n; i++) {
    strncat(out, list[i]->d_name, cap - strlen(out) - 2);
    strncat(out, "\n", cap - strlen(out) - 1);
    free(list[i]);
  }
  free(list);
}

static void assert_refused(const char *dir, bfh_engine engine, int read_only, const char *msg) {
  static char before[8192], after[8192];
  listing(dir, before, sizeof before);
  bfh_options o;
  bfh_options_init(&o);
  o.engine = engine;
  o.read_only = read_only;
  bfh_db *db = NULL;
  assert_int_equal(bfh_open(dir, &o, &db), BFH_E_INVALID);
  if (!strstr(bfh_last_error(NULL), msg))
    fail_msg("message \"%s\" lacks \"%s\"", bfh_last_error(NULL), msg);
  listing(dir, after, sizeof after);
  assert_string_equal(before, after);
}

/* Each engine refuses the other's directory with BFH_E_INVALID and creates no file there. */
static void test_engine_detection(void **state) {
  (void)state;
  char own[4300], ldb[4300];
  snprintf(own, sizeof own, "%s/own", tmpdir);
  bfh_db *db = NULL;
  assert_int_equal(bfh_open(own, NULL, &db), BFH_OK);
  assert_int_equal(bfh_put(db, "k", 1, "v", 1), BFH_OK);
  assert_int_equal(bfh_close(db), BFH_OK);
  char want[4400];
  snprintf(want, sizeof want, "%s is a bfh (own engine) database", own);
  assert_refused(own, BFH_ENGINE_LEVELDB, 0, want);
  assert_refused(own, BFH_ENGINE_LEVELDB, 1, want);
  assert_refused(own, BFH_ENGINE_LEVELDB, 1, "open it with the lsm engine");

  snprintf(ldb, sizeof ldb, "%s/ldb", tmpdir);
  static int model[NKEYS];
  make_db(ldb, model);
  assert_refused(ldb, BFH_ENGINE_LSM, 0, "is a LevelDB database");
  assert_refused(ldb, BFH_ENGINE_LSM, 0, "open it with the leveldb engine");

  /* bfh_engine_detect tells them apart, and a RocksDB database, and finds none where there is
     none (an empty directory, a missing one), touching nothing. */
  char rdb[4300], empty[4300], missing[4300];
  snprintf(rdb, sizeof rdb, "%s/rdb", tmpdir);
  bfh_options ro;
  bfh_options_init(&ro);
  ro.engine = BFH_ENGINE_ROCKSDB;
  assert_int_equal(bfh_open(rdb, &ro, &db), BFH_OK);
  assert_int_equal(bfh_put(db, "k", 1, "v", 1), BFH_OK);
  assert_int_equal(bfh_flush(db), BFH_OK);
  assert_int_equal(bfh_close(db), BFH_OK);
  snprintf(empty, sizeof empty, "%s/empty", tmpdir);
  assert_int_equal(mkdir(empty, 0755), 0);
  snprintf(missing, sizeof missing, "%s/missing", tmpdir);
  const struct {
    const char *dir;
    int rc;
    bfh_engine engine;
  } cases[] = {{own, BFH_OK, BFH_ENGINE_LSM},
               {ldb, BFH_OK, BFH_ENGINE_LEVELDB},
               {rdb, BFH_OK, BFH_ENGINE_ROCKSDB},
               {empty, BFH_E_INVALID, 99},
               {missing, BFH_E_INVALID, 99}};
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    static char before[8192], after[8192];
    int exists = access(cases[i].dir, F_OK) == 0;
    if (exists) listing(cases[i].dir, before, sizeof before);
    bfh_engine e = (bfh_engine)99;
    assert_int_equal(bfh_engine_detect(cases[i].dir, &e), cases[i].rc);
    assert_int_equal(e, cases[i].engine);
    if (cases[i].rc != BFH_OK) assert_non_null(strstr(bfh_last_error(NULL), "no database"));
    if (!exists) continue;
    listing(cases[i].dir, after, sizeof after);
    assert_string_equal(before, after);
  }
  assert_int_equal(access(missing, F_OK), -1);
  assert_int_equal(bfh_engine_detect(NULL, NULL), BFH_E_INVALID);
}

static int setup(void **state) {
  (void)state;
  return test_tmpdir_create(tmpdir, sizeof tmpdir, "leveldb_readonly");
}

static int teardown(void **state) {
  (void)state;
  return test_rmrf(tmpdir);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_readonly_live_writer), /* first: it forks a LevelDB writer */
      cmocka_unit_test(test_readonly_leaves_files_untouched),
      cmocka_unit_test(test_readonly_table_vanishes),
      cmocka_unit_test(test_readonly_pinned_files_outlive_unlink),
      cmocka_unit_test(test_readonly_log_flushed_under_refresh),
      cmocka_unit_test(test_readonly_refresh_watch),
      cmocka_unit_test(test_readonly_options),
      cmocka_unit_test(test_engine_detection),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}

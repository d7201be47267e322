/* The read-only LevelDB engine (stock/stock_ro_rows.h): its design, then LevelDB's side of the
 * read-only stock core's format interface (stock/stock_ro.h): the MANIFEST and logs over
 * leveldb_format/, a get's and an iterator's read of a table, the table stamp (for the core's
 * persisted index), and the open.
 *
 * A refresh (at every view, so at every search, and at every bfh_get) brings the engine's
 * state up to the database's newest version. It starts with a poll of an inotify watch on the
 * directory (dir_watch.h: files made, renamed, removed or written; the directory moved): when
 * the poll finds nothing, the last refresh succeeded and no read found a file gone since,
 * nothing was written since that refresh began and its state is still the newest: the refresh
 * ends there, one read(2). Otherwise (and without a watch) it reads:
 *   1. read CURRENT and the MANIFEST it names: from where the last read stopped while the
 *      name is the same (LevelDB only appends to a MANIFEST), whole when it changed; a
 *      record cut short at the end is an edit in flight, read next time. This gives version
 *      V: its tables and its log number L.
 *   2. list the directory and read every log numbered >= L (and V's prev log number) from
 *      where the last read stopped (a record cut short at the end is a write in flight);
 *      drop what was read of older logs.
 *   3. read the MANIFEST again (usually nothing new). If its log number is no longer L,
 *      start over at 1; else the state is the tables of this newest version V' plus the
 *      entries read in 2.
 * Why that state holds every write acknowledged before the refresh began, and no write
 * undone: LevelDB writes a memtable's table, then the edit that adds it and raises the log
 * number past the memtable's log, and only then deletes that log; a compaction writes its
 * tables, then the edit, then deletes its inputs. So a write acknowledged before step 1 is
 * in a log >= L (read to its end in 2, after the write) or in a log < L, whose data is in
 * V's tables, and still in V' (V' differs from V only by compactions: the log number did not
 * move). A log >= L can be gone in 2 only after an edit raising the log number was written,
 * which 3 sees (it reads after the deletion). The entries read in 2 are a prefix of the
 * writes in sequence order on top of V''s tables: a state the database passed through.
 * Files of V' may still vanish after 3 (a compaction's inputs are deleted once its edit is
 * written). So the refresh ends by opening every table of V' (a stock_pin_t per table, shared by
 * the states that list it): an unlinked file stays readable through its descriptor, and
 * every later read of the state goes through it. A table gone before its open was deleted
 * after an edit the next MANIFEST read sees: start over at 1 (gone again with nothing new in
 * the MANIFEST: the MANIFEST names a missing table, damage). Beyond pin_max descriptors a
 * table is read by name: a table read that finds its file gone (ENOENT) then makes the
 * search start over with a new refresh (engine_ops_t.search_attempts: search.c starts it over), and
 * its keys are reported only by the attempt that read every table it listed, so each once. A
 * MANIFEST replaced between reading CURRENT and reading it is the same: start over. Retries are
 * bounded (STOCK_RO_ATTEMPTS), then BFH_E_BUSY.
 *
 * A search validates its candidates against its own view (the state of its refresh): the
 * gets it makes pass that view (engine_ops_t.get), and read its state: logs newest first,
 * then the tables by level (level 0 newest first), each table only if its key range holds
 * the key. A bfh_get (no view) refreshes first.
 *
 * An iterator (bfh_iter_*) refreshes, then reads every entry of that state (its logs and
 * every table of its version) into memory (sorted_iter.h) and iterates there: the files it
 * read may vanish afterwards without harm. A table gone before it was read starts the read
 * over from a new refresh, as a search does.
 *
 * A log read can race the owner's append and see part of a write(2): a record that looks
 * damaged. Such a refresh is started over too; damage that stays for every attempt is
 * reported (BFH_E_CORRUPT).
 *
 * A database replaced at the path (removed, and another made there: stock LevelDB gives the
 * new one the same MANIFEST name, log and table numbers, often the same sizes) must not be
 * read as the old one went on. Names are not identities, so the engine holds open the MANIFEST
 * it reads, each log it reads and (pins) each table of its state, and compares the file a name
 * gives now (one stat, which the refresh made for the size anyway) with the file it holds
 * (device and inode: a file held open keeps its inode, so another file cannot have it):
 *   - the MANIFEST (every read): another file under the name, or a shorter one, is a new
 *     database: what was read of the MANIFEST and the logs is dropped, and the refresh starts
 *     over (step 3 sees a change made after step 1);
 *   - a log (every read): another file is read from its start, its old entries dropped;
 *   - the tables: after the MANIFEST was read whole (another name or another file), the pin a
 *     table number had is kept only if its name still gives that file, else the new file is
 *     pinned. Every table's identity goes to index_sync with the live list
 *     (index_table_t.id), which drops a leaf made from another file and reads the table again.
 * A table beyond pin_max is not held: its identity is its name's device and inode, taken after
 * each whole MANIFEST read (an inode freed and given again to the new table would go
 * unnoticed there). A search running across the replacement answers from its own state.
 */
#include "lsm_hooks/engines/stock/stock_ro_rows.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lsm_hooks/engines/engine_detect.h"
#include "lsm_hooks/engines/leveldb/adapter.h"
#include "lsm_hooks/leveldb_format/ldb_log.h"
#include "lsm_hooks/leveldb_format/ldb_table.h"
#include "lsm_hooks/leveldb_format/ldb_version_edit.h"
#include "util/vec.h"

typedef struct engine_ro {
  stock_ro_t ro;
  ldb_version_t version; /* guarded by ro.mu */
} engine_ro_t;

/* A state: the core's, and its copy of the version. */
typedef struct ro_state {
  stock_ro_state_t base;
  ldb_version_t version;
} ro_state_t;

#define LDB(r) ((engine_ro_t *)(r))

/* ---- The MANIFEST and the logs -------------------------------------------------------------- */

/* The MANIFEST that CURRENT names; no CURRENT: a database being made, read again. */
static int current(stock_ro_t *r, char **manifest, err_t *err) {
  int rc = stock_current_read(r->io, r->path, manifest, err);
  return rc == BFH_NOT_FOUND ? STOCK_RO_AGAIN : rc;
}

static void version_forget(stock_ro_t *r) {
  ldb_version_release(&LDB(r)->version);
}

static int version_read(stock_ro_t *r, const char *path, uint64_t from, uint64_t *next,
                        err_t *err) {
  return ldb_version_read(r->io, path, from, &LDB(r)->version, next, err);
}

static int version_mark(stock_ro_t *r, stock_ro_mark_t *m, err_t *err) {
  (void)err;
  if (!LDB(r)->version.has_log_number) return STOCK_RO_AGAIN; /* a new MANIFEST being written */
  *m = (stock_ro_mark_t){.log_number = LDB(r)->version.log_number};
  return BFH_OK;
}

/* The logs numbered >= the version's log number, and its prev log, from the directory. */
static int live_logs(stock_ro_t *r, uint64_t **out, size_t *n_out, err_t *err) {
  const ldb_version_t *v = &LDB(r)->version;
  char **names;
  size_t n;
  int rc = env_list_dir(r->io, r->path, &names, &n, err);
  if (rc != BFH_OK) return rc;
  u64vec_t nums;
  u64vec_init(&nums);
  for (size_t i = 0; i < n && rc == BFH_OK; i++) {
    uint64_t num;
    if (stock_file_number(names[i], "log", &num) &&
        (num >= v->log_number || (v->prev_log_number && num == v->prev_log_number)) &&
        u64vec_push(&nums, num) != BFH_OK)
      rc = err_set(err, BFH_E_NOMEM, "%s: no memory to list logs", r->path);
  }
  env_names_free(names, n);
  u64vec_sort(&nums);
  *out = nums.v;
  *n_out = nums.n;
  if (rc != BFH_OK) u64vec_release(&nums), *out = NULL;
  return rc;
}

static int log_entry(void *arg, const ldb_entry_t *e) {
  return stock_chunk_builder_add(arg, e->type == LDB_TYPE_VALUE, e->seq, e->key, e->key_len, e->val,
                                 e->val_len);
}

static int log_read(stock_ro_t *r, const char *path, uint64_t number, uint64_t from,
                    stock_chunk_builder_t *b, uint64_t *next, err_t *err) {
  (void)number;
  return ldb_log_read(r->io, path, from, log_entry, b, next, NULL, err);
}

/* ---- States and tables ---------------------------------------------------------------------- */

static int state_make(stock_ro_t *r, stock_ro_state_t *base, err_t *err) {
  (void)err;
  ro_state_t *s = (ro_state_t *)base;
  const ldb_version_t *v = &s->version;
  if (ldb_version_copy(&s->version, &LDB(r)->version) != BFH_OK ||
      !(base->order = malloc((v->nfiles + 1) * sizeof *base->order)))
    return BFH_E_NOMEM;
  for (size_t i = 0; i < v->nfiles; i++) {
    const ldb_file_t *f = &v->files[i];
    base->order[i] = (stock_ro_table_t){
        .t = {.number = f->number,
              .size = f->size,
              .level = f->level,
              .max_seq = f->max_seq == LDB_SEQ_UNKNOWN ? ENGINE_SEQ_UNKNOWN : f->max_seq},
        .lo = f->smallest,
        .lo_len = f->smallest_len,
        .hi = f->largest,
        .hi_len = f->largest_len};
  }
  base->ntables = v->nfiles;
  return BFH_OK;
}

static void state_release(stock_ro_state_t *s) {
  ldb_version_release(&((ro_state_t *)s)->version);
}

static int table_match(stock_ro_t *r, stock_pin_t *p, uint64_t number, const block_ref_t *refs,
                       size_t n, const stock_match_t *m, engine_scan_stats_t *st, err_t *err) {
  if (p) return ldb_table_match_rfile(p->f, p->path, refs, n, NULL, m, st, err);
  return ldb_table_match(r->io, r->path, number, refs, n, NULL, m, st, err);
}

/* ---- Gets and iterators ---------------------------------------------------------------------- */

/* Every entry of table t to fn, in internal-key order (user key ascending, newest first). */
static int table_scan(stock_ro_t *r, stock_pin_t *p, const char *path, ldb_visit_fn fn, void *arg,
                      err_t *err) {
  if (p) return ldb_table_scan_rfile(p->f, path, fn, arg, NULL, err);
  return ldb_table_scan(r->io, path, fn, arg, NULL, err);
}

/* The first entry of the key is its newest in the table; a greater key ends the search. */
static int visit_lookup(void *arg, const ldb_entry_t *e) {
  stock_lookup_t *l = arg;
  int c = stock_key_cmp(e->key, e->key_len, l->key, l->key_len);
  if (c == 0) (void)stock_lookup_set(l, e->type == LDB_TYPE_VALUE, e->seq, e->val, e->val_len);
  return c >= 0;
}

static int table_get(stock_ro_t *r, const stock_ro_table_t *t, stock_pin_t *p, const char *path,
                     void *lookup, err_t *err) {
  (void)t;
  return table_scan(r, p, path, visit_lookup, lookup, err);
}

/* Log entries rank above every table entry (sequence numbers are below 2^56), in the order
   they were written. */
#define LOG_RANK (1ull << 56)

typedef struct gather {
  stock_sorted_t *sorted;
  uint64_t rank; /* the next log entry's */
  int nomem;
} gather_t;

static int gather_log_entry(void *arg, const uint8_t *k, size_t kl, const uint8_t *v, size_t vl,
                            int is_value, uint64_t seq) {
  gather_t *g = arg;
  (void)seq;
  return g->nomem = stock_sorted_add(g->sorted, k, kl, v, vl, is_value, g->rank++) != BFH_OK;
}

static int gather_table_entry(void *arg, const ldb_entry_t *e) {
  gather_t *g = arg;
  return g->nomem = stock_sorted_add(g->sorted, e->key, e->key_len, e->val, e->val_len,
                                     e->type == LDB_TYPE_VALUE, e->seq) != BFH_OK;
}

static int gather_table(stock_ro_t *r, const stock_ro_table_t *t, stock_pin_t *p, const char *path,
                        void *g, err_t *err) {
  (void)t;
  return table_scan(r, p, path, gather_table_entry, g, err);
}

/* Every entry of s into sorted: its log chunks, then every table of its version. */
static int gather(stock_ro_t *r, const stock_ro_state_t *s, stock_sorted_t *sorted, err_t *err) {
  gather_t g = {sorted, LOG_RANK, 0};
  (void)stock_chunks_each(s->chunks, s->nchunks, gather_log_entry, &g);
  int rc = BFH_OK;
  for (size_t i = 0; i < s->ntables && rc == BFH_OK && !g.nomem; i++)
    rc = stock_ro_table_read(r, s, &s->order[i], gather_table, &g, err);
  if (rc == BFH_OK && g.nomem) rc = err_set(err, BFH_E_NOMEM, "%s: iterator: no memory", r->path);
  return rc;
}

/* ---- The filters' source -------------------------------------------------------------------- */

static int read_leaf(void *ctx, uint64_t number, const value_index_params_t *p,
                     index_leaf_read_t *out, err_t *err) {
  stock_ro_t *r = ctx;
  return ldb_leaf_read(r->io, r->path, number, p, out, err);
}

static int table_tag(void *ctx, uint64_t number, uint64_t *tag, err_t *err) {
  stock_ro_t *r = ctx;
  return ldb_table_tag_of(r->io, r->path, number, tag, err);
}

/* The stamp of table `number` (index_sync_stamp: an fstat of its file and its 48-byte footer,
   in place of a tag, which reads every page of the table; 0: too fresh to stamp). */
static int table_stamp(void *ctx, uint64_t number, uint64_t *stamp, err_t *err) {
  stock_ro_t *r = ctx;
  char *path;
  int rc = ldb_table_path(r->path, number, &path, err);
  if (rc != BFH_OK) return rc;
  env_rfile_t *f = NULL;
  env_file_stamp_t st;
  uint8_t footer[48];
  size_t got = 0;
  if ((rc = env_open_read(r->io, path, &f, err)) == BFH_OK) rc = env_rfile_stamp(f, &st, err);
  uint64_t size = rc == BFH_OK ? env_rfile_size(f) : 0;
  if (rc == BFH_OK && size < sizeof footer)
    rc = err_set(err, BFH_E_CORRUPT, "%s: %llu bytes, shorter than a footer", path,
                 (unsigned long long)size);
  if (rc == BFH_OK) rc = env_rfile_pread(f, size - sizeof footer, footer, sizeof footer, &got, err);
  if (rc == BFH_OK && got != sizeof footer)
    rc = err_set(err, BFH_E_CORRUPT, "%s: footer cut short", path);
  env_rfile_close(f);
  free(path);
  struct timespec now;
  clock_gettime(CLOCK_REALTIME, &now);
  if (rc == BFH_OK)
    *stamp = index_sync_stamp(&st, footer, sizeof footer,
                              (int64_t)now.tv_sec * 1000000000 + now.tv_nsec);
  return rc;
}

static const stock_ro_format_t leveldb_format = {
    .name = "LevelDB",
    .dir_kind = ENGINE_DIR_LEVELDB,
    .logs_what = "MANIFEST and logs",
    .table_ext = {"ldb", "sst"},
    .id_seed = 0x726f6b6579733031ull, /* "rokeys01" */
    .engine_bytes = sizeof(engine_ro_t),
    .state_bytes = sizeof(ro_state_t),
    .pin_bytes = sizeof(stock_pin_t),
    STOCK_RO_FORMAT_FIELDS,
    .table_get = table_get,
    .gather = gather,
    .source = {.read_leaf = read_leaf, .table_tag = table_tag, .table_stamp = table_stamp}};

static const engine_ops_t ro_ops = STOCK_RO_OPS("leveldb-readonly");

int engine_leveldb_ro_open(const char *path, const bfh_options *opt, struct env *io,
                           index_sync_t *sync, engine_t **out, err_t *err) {
  return stock_ro_open(&leveldb_format, &ro_ops, path, opt, io, sync, out, err);
}

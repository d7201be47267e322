/* The read-only RocksDB engine (rdb_readonly.h): what RocksDB adds to the read-only stock
 * core (stock/stock_ro.h), behind the core's format interface below; rro_internal.h maps the
 * other files of the folder. The refresh, its consistency argument, the pins, the retries and a
 * replaced database are the core's, argued at the top of leveldb_ro/readonly.c; RocksDB differs
 * in these steps of a refresh:
 *   1. the MANIFEST (rdb_manifest.h) is read on while the name and the file are the same:
 *      RocksDB only appends to it until it starts a new one, at an open or past
 *      max_manifest_file_size. Version V gives the column family's tables and its log number L.
 *   2. the WALs numbered >= L (rdb_version_live_logs, rdb_version_log_wanted for the column
 *      family) are read, keeping only the column family's entries.
 *   3. the MANIFEST read again starts the refresh over when the column family's L moved.
 * Why that state holds every write acknowledged before the refresh began: RocksDB writes a
 * memtable's table, then the edit that adds it and raises the column family's log number past
 * the memtable's WAL, and only then deletes the WAL (once no column family needs it); a
 * compaction writes its tables, then the edit, then deletes its inputs. So V' differs from V
 * only by compactions and other column families' flushes (L did not move), and a WAL >= L can
 * be gone in 2 only after an edit raising L, which 3 sees. WAL entries are newer than every
 * table entry of the column family (their memtable is not flushed), so a lookup reads the WAL
 * chunks first, then the tables whose key range holds the key, level 0 newest first (by largest
 * sequence), then each deeper level. A pinned table is looked up through its key index (each
 * data block's last key, made by one read of the table the first time a lookup needs it), so a
 * lookup reads one data block per table.
 *
 * Range deletions are answered as RocksDB's Get answers them (rro_get.c): the WAL's
 * DeleteRange records go into their chunk, each table's range-deletion block is read with its
 * key index (a range tombstone widens its table's key range, so every lookup of a key it may
 * cover reaches that table), both fragmented (stock_tombs.c); a key's newest entry is deleted
 * when a tombstone met before it in lookup order, or in its own table, has a larger sequence.
 *
 * What the engine does not answer is refused (BFH_E_UNSUPPORTED naming it), never guessed:
 * merge operands, blob references and wide-column entities (as the read-write engine,
 * rocksdb/rdb_reads.c).
 */
#include "lsm_hooks/engines/rocksdb_ro/rdb_readonly.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lsm_hooks/engines/engine_detect.h"
#include "lsm_hooks/engines/rocksdb/rdb_adapter.h"
#include "lsm_hooks/engines/rocksdb_ro/rro_internal.h"
#include "lsm_hooks/rocksdb_format/rdb_log.h"

#define RDB(r) ((rro_t *)(r))

/* ---- The MANIFEST and the WALs -------------------------------------------------------------- */

static int current(stock_ro_t *r, char **path, err_t *err) {
  return rdb_manifest_current(r->io, r->path, path, err);
}

static void version_forget(stock_ro_t *r) {
  rdb_version_release(&RDB(r)->version);
}

static int version_read(stock_ro_t *r, const char *path, uint64_t from, uint64_t *next,
                        err_t *err) {
  return rdb_version_read(r->io, path, from, 0, &RDB(r)->version, next, err);
}

/* The column family named cf_name in the version (its id into cf), its log number into *m;
   what the engine cannot read in it: BFH_E_UNSUPPORTED naming it. */
static int version_mark(stock_ro_t *base, stock_ro_mark_t *m, err_t *err) {
  rro_t *r = RDB(base);
  if (!rdb_version_cf(&r->version, 0)) return STOCK_RO_AGAIN; /* a MANIFEST being written */
  const rdb_cf_t *cf = rdb_version_cf_by_name(&r->version, r->cf_name);
  if (!cf) {
    char names[512];
    size_t at = 0;
    names[0] = '\0';
    for (size_t i = 0; i < r->version.ncfs && at + 2 < sizeof names; i++)
      at += (size_t)snprintf(names + at, sizeof names - at, "%s'%s'", i ? ", " : "",
                             r->version.cfs[i].name);
    return err_set(err, BFH_E_INVALID, "%s: no column family '%s' (the database has %s)",
                   base->path, r->cf_name, names);
  }
  if (cf->id != r->cf) { /* dropped and made again under the name: another family */
    stock_ro_forget_logs(base);
    base->version_changed = 1;
    r->cf = cf->id;
  }
  if (cf->comparator && strcmp(cf->comparator, "leveldb.BytewiseComparator") != 0)
    return err_set(err, BFH_E_UNSUPPORTED,
                   "%s: the column family '%s' orders keys with '%s'; bfh reads databases "
                   "with the bytewise comparator only",
                   base->path, cf->name, cf->comparator);
  for (size_t i = 0; i < r->version.nfiles; i++) {
    const rdb_file_t *f = &r->version.files[i];
    if (f->cf == r->cf && f->path_id != 0)
      return err_set(err, BFH_E_UNSUPPORTED,
                     "%s: table %06llu lives in db_paths[%u], outside the directory; bfh reads "
                     "tables in the database's directory only",
                     base->path, (unsigned long long)f->number, f->path_id);
  }
  *m = (stock_ro_mark_t){.log_number = cf->log_number, .family = r->cf};
  return BFH_OK;
}

/* The WALs that hold writes of the column family not yet in its tables. */
static int live_logs(stock_ro_t *base, uint64_t **nums, size_t *n, err_t *err) {
  rro_t *r = RDB(base);
  int rc = rdb_version_live_logs(base->io, base->path, &r->version, nums, n, err);
  if (rc != BFH_OK) return rc;
  size_t k = 0;
  for (size_t i = 0; i < *n; i++)
    if (rdb_version_log_wanted(&r->version, r->cf, (*nums)[i])) (*nums)[k++] = (*nums)[i];
  *n = k;
  return BFH_OK;
}

/* A WAL read into a chunk: the column family's entries, and what is refused. */
typedef struct wal_read {
  stock_chunk_builder_t *b;
  uint32_t cf;
  int rc;          /* a refusal (BFH_E_UNSUPPORTED) met in the WAL */
  err_t *err;      /* where the refusal is written */
  const char *dir; /* the database, in messages */
} wal_read_t;

/* rdb_log_read's visitor: the column family's puts, deletions and range deletions into the
   chunk; a merge operand, blob reference or wide-column entity of it is refused. */
static int wal_entry(void *arg, const rdb_log_entry_t *e) {
  wal_read_t *w = arg;
  if (e->cf != w->cf) return 0; /* another column family's */
  switch (e->type) {
    case RDB_WB_VALUE:
    case RDB_WB_DELETION:
    case RDB_WB_SINGLE_DELETION:
      return stock_chunk_builder_add(w->b, e->type == RDB_WB_VALUE, e->seq, e->key, e->key_len,
                                     e->val, e->val_len);
    case RDB_WB_RANGE_DELETION: /* key: begin, val: end */
      if (stock_tombs_builder_add(&w->b->tombs, e->key, e->key_len, e->val, e->val_len, e->seq) !=
          BFH_OK)
        return w->b->nomem = 1;
      return 0;
    case RDB_WB_MERGE:
    case RDB_WB_BLOB_INDEX:
    case RDB_WB_WIDE_COLUMN_ENTITY:
      w->rc = err_set(w->err, BFH_E_UNSUPPORTED,
                      "%s: WAL %06llu holds %s at sequence %llu; bfh cannot search this database "
                      "read-only",
                      w->dir, (unsigned long long)e->log_number,
                      e->type == RDB_WB_MERGE        ? "a merge operand (bfh has no merge operator)"
                      : e->type == RDB_WB_BLOB_INDEX ? "a blob reference (bfh does not read "
                                                       "RocksDB's blob files)"
                                                     : "a wide-column entity",
                      (unsigned long long)e->seq);
      return 1;
    default:
      return 0; /* markers */
  }
}

static int log_read(stock_ro_t *r, const char *path, uint64_t number, uint64_t from,
                    stock_chunk_builder_t *b, uint64_t *next, err_t *err) {
  wal_read_t w = {.b = b, .cf = RDB(r)->cf, .err = err, .dir = r->path};
  rdb_log_stats_t st = {0};
  int rc = rdb_log_read(r->io, path, number, from, 0, wal_entry, &w, next, &st, err);
  atomic_fetch_add(&r->log_bytes, st.bytes_read);
  return rc == BFH_OK ? w.rc : rc;
}

/* ---- States and pins ------------------------------------------------------------------------ */

/* The column family's files of the version (the core sorts them; each pin keeps its file's
   largest sequence, max_seq: an ingested table's global sequence number). */
static int state_make(stock_ro_t *r, stock_ro_state_t *base, err_t *err) {
  (void)err;
  rro_state_t *s = (rro_state_t *)base;
  if (rdb_version_copy(&s->version, &RDB(r)->version) != BFH_OK ||
      !(base->order = malloc((s->version.nfiles + 1) * sizeof *base->order)))
    return BFH_E_NOMEM;
  for (size_t i = 0; i < s->version.nfiles; i++) {
    const rdb_file_t *f = &s->version.files[i];
    if (f->cf != RDB(r)->cf) continue;
    base->order[base->ntables++] = (stock_ro_table_t){
        .t = {.number = f->number, .size = f->size, .level = f->level, .max_seq = f->largest_seqno},
        .lo = f->smallest,
        .lo_len = f->smallest_len,
        .hi = f->largest,
        .hi_len = f->largest_len};
  }
  return BFH_OK;
}

static void state_release(stock_ro_state_t *s) {
  rdb_version_release(&((rro_state_t *)s)->version);
}

static void pin_init(stock_ro_state_t *s, size_t i, stock_pin_t *base) {
  rro_pin_t *p = (rro_pin_t *)base;
  atomic_init(&p->footer_known, 0);
  pthread_mutex_init(&p->mu, NULL);
  p->largest_seqno = s->tables[i].max_seq;
}

static int table_match(stock_ro_t *r, stock_pin_t *p, uint64_t number, const block_ref_t *refs,
                       size_t n, const stock_match_t *m, engine_scan_stats_t *st, err_t *err) {
  if (p)
    return rdb_table_match_rfile(p->f, p->path, n ? rro_pin_footer((rro_pin_t *)p) : NULL, refs, n,
                                 m, st, err);
  return rdb_table_match(r->io, r->path, number, refs, n, m, st, err);
}

/* ---- The filters' source, the open ---------------------------------------------------------- */

/* Through the newest state's pin when it holds the table: a table compacted away since it
   was listed is still read (by name it would be gone, and its leaf never made while a view
   waits for it). The read passes over the whole table: the pin's key index and range
   tombstones are taken from it on the way (a lookup then reads no index block), so that
   building the filters and the first search's lookups read each table once. */
static int read_leaf(void *ctx, uint64_t number, const value_index_params_t *p,
                     index_leaf_read_t *out, err_t *err) {
  stock_ro_t *r = ctx;
  rro_pin_t *pin = (rro_pin_t *)stock_ro_newest_pin(r, number);
  if (!pin) return rdb_leaf_read(r->io, r->path, number, p, out, err);
  rro_keys_t k = {0};
  rdb_leaf_tap_t tap = {rro_keys_tap_entry, rro_keys_tap_block, &k};
  int tapped = rro_pin_keys_wanted(pin);
  int rc = rdb_leaf_read_tapped(pin->base.f, pin->base.path, p, tapped ? &tap : NULL, out, err);
  if (rc == BFH_OK && tapped)
    rro_pin_keys_install(pin, &k);
  else
    rro_keys_release(&k);
  stock_pin_unref(&pin->base);
  return rc;
}

static int table_tag(void *ctx, uint64_t number, uint64_t *tag, err_t *err) {
  stock_ro_t *r = ctx;
  return rdb_table_tag_of(r->io, r->path, number, tag, err);
}

static int init(stock_ro_t *r, const bfh_options *opt, err_t *err) {
  if (!(RDB(r)->cf_name = strdup(opt->column_family ? opt->column_family : "default")))
    return err_set(err, BFH_E_NOMEM, "%s: no memory", r->path);
  return BFH_OK;
}

static void release(stock_ro_t *r) {
  free(RDB(r)->cf_name);
}

static const stock_ro_format_t rocksdb_format = {
    .name = "RocksDB",
    .newest_by_seq = 1,
    .dir_kind = ENGINE_DIR_ROCKSDB,
    .logs_what = "MANIFEST and WALs",
    .table_ext = {"sst", "ldb"},
    .id_seed = 0x726f6b6579733032ull, /* "rokeys02" */
    .engine_bytes = sizeof(rro_t),
    .state_bytes = sizeof(rro_state_t),
    .pin_bytes = sizeof(rro_pin_t),
    STOCK_RO_FORMAT_FIELDS,
    .table_get = rro_table_get,
    .gather = rro_gather,
    .pin_init = pin_init,
    .release = release,
    .pin_release = rro_pin_release,
    .source = {.read_leaf = read_leaf, .table_tag = table_tag},
    .init = init};

static const engine_ops_t rro_ops = STOCK_RO_OPS("rocksdb-readonly");

int engine_rocksdb_ro_open(const char *path, const bfh_options *opt, struct env *io,
                           index_sync_t *sync, engine_t **out, err_t *err) {
  return stock_ro_open(&rocksdb_format, &rro_ops, path, opt, io, sync, out, err);
}

int engine_rocksdb_ro_describe(engine_t *e, uint64_t number, bfh_table_info *info, err_t *err) {
  stock_ro_t *r = (stock_ro_t *)e;
  int rc = rdb_describe_table(r->io, r->path, number, info, err);
  return stock_ro_status(r, rc, number, err); /* compacted away since it was listed */
}

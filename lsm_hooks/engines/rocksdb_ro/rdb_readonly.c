/* The read-only RocksDB engine (stock/stock_ro_rows.h): what RocksDB adds to the read-only stock
 * core (stock/stock_ro.h), behind the core's format interface below. The refresh, its consistency
 * argument, the pins, the retries and a replaced database are the core's, argued at the top of
 * leveldb_ro/readonly.c; RocksDB differs in these steps of a refresh:
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
 * Range deletions are answered as RocksDB's Get answers them (db/version_set.cc Version::Get,
 * db/table_cache.cc TableCache::Get, db/get_context.cc): the WAL's DeleteRange records go into
 * their chunk, each table's range-deletion block is read with its key index (a range tombstone
 * widens its table's key range, so every lookup of a key it may cover reaches that table), both
 * fragmented (stock_tombs.c). The largest sequence of the tombstones covering the key is
 * gathered from the chunks, then from each table in lookup order whose key range holds the key,
 * up to and including the one that holds the key's newest entry; that entry is deleted when the
 * gathered sequence is larger than its own. An iterator applies the rule to every entry it
 * gathers.
 *
 * What the engine does not answer is refused (BFH_E_UNSUPPORTED naming it), never guessed:
 * merge operands, blob references and wide-column entities (as the read-write engine,
 * rocksdb/rdb_reads.c).
 */
#include "lsm_hooks/engines/stock/stock_ro_rows.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lsm_hooks/engines/engine_detect.h"
#include "lsm_hooks/engines/rocksdb/rdb_adapter.h"
#include "lsm_hooks/rocksdb_format/rdb_entry.h"
#include "lsm_hooks/rocksdb_format/rdb_log.h"
#include "lsm_hooks/rocksdb_format/rdb_manifest.h"
#include "lsm_hooks/rocksdb_format/rdb_table.h"

typedef struct rro {
  stock_ro_t ro;
  char *cf_name; /* the column family read: bfh_options.column_family, "default" when NULL */
  uint32_t cf;   /* the id of the column family named cf_name in version (guarded by ro.mu) */
  rdb_version_t version; /* guarded by ro.mu */
} rro_t;

/* A state: the core's, and its copy of the version (the core's order and tables: the column
   family's files). */
typedef struct rro_state {
  stock_ro_state_t base;
  rdb_version_t version;
} rro_state_t;

#define RDB(r) ((rro_t *)(r))

/* A data block of a table and its index entry's user key, a separator (>= every key of the
   block, < every key of the next): for a point lookup, the first block whose separator is >=
   the key holds the key's newest entry in the table. */
typedef struct rro_kblock {
  uint64_t offset, size;
  size_t key_at, key_len; /* in rro_pin_t.keys */
} rro_kblock_t;

/* The format's pin (stock_pin_t first) with its table's key index, built once under the pin's
   own mutex by the first lookup that needs it (a read of the table's index, not of its data
   blocks). */
typedef struct rro_pin {
  stock_pin_t base;
  uint64_t largest_seqno; /* the MANIFEST's largest sequence of the file */
  /* The file's footer, read once by the first read of its blocks (pin_footer): set under mu,
     then footer_known (release); read without mu once footer_known says so (acquire). */
  atomic_int footer_known;
  rdb_table_footer_t footer;
  pthread_mutex_t mu; /* guards what follows */
  int gseq_known;     /* gseq was read from the table's properties */
  uint64_t gseq;      /* the table's global sequence number (RDB_NO_GLOBAL_SEQNO: none) */
  int built;          /* 0 not yet, 1 built, else the status of the failed build */
  rro_kblock_t *blocks;
  size_t nblocks;
  uint8_t *keys;
  stock_tombs_t *tombs; /* the table's range tombstones (NULL: none) */
  char *why;            /* the failed build's message (malloc'd) */
} rro_pin_t;

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

/* ---- States --------------------------------------------------------------------------------- */

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

/* ---- A pinned table's key index ------------------------------------------------------------- */

/* The sequence of an entry of a table whose global sequence number is gseq (an ingested
   table's entries all take it, as RocksDB's reader gives it to them). */
static uint64_t seq_of(uint64_t gseq, uint64_t seq) {
  return gseq != RDB_NO_GLOBAL_SEQNO ? gseq : seq;
}

/* A table's key index and range tombstones in the making, caller-owned, zeroed to start: from a
   read of the table's index (the first lookup), or tapped from the leaf read that passes over
   the whole table anyway (read_leaf), then installed in its pin. */
typedef struct keys {
  rro_kblock_t *blocks;
  size_t nblocks, blocks_cap;
  uint8_t *keys;
  size_t keys_len, keys_cap;
  stock_tombs_builder_t tombs;
  uint8_t *last; /* the tap: the last user key of the block being read */
  size_t last_len, last_cap;
  int nomem;
} keys_t;

static void pin_keys_release(rro_pin_t *p) {
  free(p->why);
  p->why = NULL;
  free(p->blocks);
  free(p->keys);
  stock_tombs_destroy(p->tombs);
  p->tombs = NULL;
  p->blocks = NULL;
  p->keys = NULL;
  p->nblocks = 0;
}

static void keys_release(keys_t *k) {
  free(k->blocks);
  free(k->keys);
  free(k->last);
  stock_tombs_builder_release(&k->tombs);
  memset(k, 0, sizeof *k);
}

static int keys_add_block(keys_t *k, const uint8_t *key, size_t key_len, uint64_t offset,
                          uint64_t size) {
  if (stock_grow(&k->blocks, &k->blocks_cap, k->nblocks + 1, sizeof *k->blocks, 64) != BFH_OK ||
      stock_grow(&k->keys, &k->keys_cap, k->keys_len + key_len, 1, 4096) != BFH_OK)
    return k->nomem = 1;
  if (key_len) memcpy(k->keys + k->keys_len, key, key_len);
  k->blocks[k->nblocks++] =
      (rro_kblock_t){.offset = offset, .size = size, .key_at = k->keys_len, .key_len = key_len};
  k->keys_len += key_len;
  return 0;
}

static int kb_tomb(void *arg, const rdb_entry_t *e) {
  keys_t *k = arg;
  if (stock_tombs_builder_add(&k->tombs, e->key, e->key_len, e->val, e->val_len, e->seq) != BFH_OK)
    return k->nomem = 1;
  return 0;
}

static int kb_block(void *arg, const uint8_t *key, size_t key_len, uint64_t offset, uint64_t size) {
  keys_t *k = arg;
  return k->nomem ? 1 : keys_add_block(k, key, key_len, offset, size);
}

static int tap_entry(void *arg, const rdb_entry_t *e) {
  keys_t *k = arg;
  if (k->nomem) return 0;
  if (e->type == RDB_TYPE_RANGE_DELETION) return kb_tomb(k, e), 0;
  if (stock_grow(&k->last, &k->last_cap, e->key_len, 1, 64) != BFH_OK) return k->nomem = 1, 0;
  if (e->key_len) memcpy(k->last, e->key, e->key_len);
  k->last_len = e->key_len;
  return 0;
}

/* A block's last user key is a separator as good as its index entry's: >= every key of the
   block, < every key of the next (a block without entries gets the one before it, so that no
   lookup stops there). */
static int tap_block(void *arg, uint64_t offset, uint64_t size) {
  keys_t *k = arg;
  if (!k->nomem) keys_add_block(k, k->last, k->last_len, offset, size);
  return 0;
}

/* Moves k's index into p (REQUIRES p->mu, p not built, p->gseq known): BFH_OK, or
   BFH_E_NOMEM. An ingested table's range tombstones take its global sequence number. */
static int keys_take(rro_pin_t *p, keys_t *k) {
  if (k->nomem) return BFH_E_NOMEM;
  for (size_t i = 0; i < k->tombs.n; i++) k->tombs.t[i].seq = seq_of(p->gseq, k->tombs.t[i].seq);
  if (stock_tombs_finish(&k->tombs, &p->tombs) != BFH_OK) return BFH_E_NOMEM;
  p->blocks = k->blocks;
  p->nblocks = k->nblocks;
  p->keys = k->keys;
  k->blocks = NULL;
  k->keys = NULL;
  p->built = 1;
  return BFH_OK;
}

/* p's footer (borrowed from p), read from its file the first time; NULL when that read failed
   (a read of blocks then reads the footer itself and reports what is wrong). */
static const rdb_table_footer_t *pin_footer(rro_pin_t *p) {
  if (atomic_load_explicit(&p->footer_known, memory_order_acquire)) return &p->footer;
  pthread_mutex_lock(&p->mu);
  if (!atomic_load_explicit(&p->footer_known, memory_order_relaxed)) {
    err_t e;
    if (rdb_table_footer_read_rfile(p->base.f, p->base.path, &p->footer, &e) == BFH_OK)
      atomic_store_explicit(&p->footer_known, 1, memory_order_release);
  }
  pthread_mutex_unlock(&p->mu);
  return atomic_load_explicit(&p->footer_known, memory_order_acquire) ? &p->footer : NULL;
}

/* p->gseq from the table's properties props (REQUIRES p->mu). */
static int pin_gseq_set(rro_pin_t *p, const rdb_table_props_t *props, err_t *err) {
  int rc = rdb_table_global_seqno(props, p->base.path, p->largest_seqno, &p->gseq, err);
  if (rc == BFH_OK) p->gseq_known = 1;
  return rc;
}

/* p->gseq known, read from the table's properties if need be (REQUIRES p->mu). */
static int pin_gseq_read(rro_pin_t *p, err_t *err) {
  if (p->gseq_known) return BFH_OK;
  rdb_table_props_t props = {0};
  int rc = rdb_table_props_read_rfile(p->base.f, p->base.path, &props, err);
  if (rc == BFH_OK) rc = pin_gseq_set(p, &props, err);
  rdb_table_props_release(&props);
  return rc;
}

/* *gseq: the global sequence number of table t (rdb_table_global_seqno), from its pin p (read
   once) or read by name at path: BFH_OK, or the read's error (by name: BFH_NOT_FOUND when the
   file is gone). */
static int table_gseq(stock_ro_t *r, const stock_ro_table_t *t, rro_pin_t *p, const char *path,
                      uint64_t *gseq, err_t *err) {
  if (p) {
    pthread_mutex_lock(&p->mu);
    int rc = pin_gseq_read(p, err);
    *gseq = p->gseq;
    pthread_mutex_unlock(&p->mu);
    return rc;
  }
  rdb_table_props_t props = {0};
  int rc = rdb_table_props_read(r->io, path, &props, err);
  if (rc == BFH_OK) rc = rdb_table_global_seqno(&props, path, t->t.max_seq, gseq, err);
  rdb_table_props_release(&props);
  return rc;
}

/* Installs k (made from p's whole table) as p's key index unless one was built meanwhile;
   releases k. */
static void pin_keys_install(rro_pin_t *p, keys_t *k) {
  err_t e;
  pthread_mutex_lock(&p->mu);
  /* Not installed when the properties cannot be read: the first lookup builds the index and
     reports why. */
  if (!p->built && pin_gseq_read(p, &e) == BFH_OK && keys_take(p, k) != BFH_OK) pin_keys_release(p);
  pthread_mutex_unlock(&p->mu);
  keys_release(k);
}

/* Builds p's key index and range tombstones once (one read of the table's index and
   range-deletion block): BFH_OK, or the build's status (kept: a refused table stays
   refused). */
static int pin_keys(rro_pin_t *p, err_t *err) {
  pthread_mutex_lock(&p->mu);
  int rc = BFH_OK;
  if (!p->built) {
    keys_t k = {0};
    rdb_table_props_t props;
    rc = rdb_table_index_rfile(p->base.f, p->base.path, kb_block, kb_tomb, &k, NULL, &props, err);
    if (rc == BFH_OK && props.num_merge_operands)
      rc = err_set(err, BFH_E_UNSUPPORTED,
                   "table %s: holds a merge operand; bfh cannot search a RocksDB database with "
                   "merge operands (it has no merge operator to apply them)",
                   p->base.path);
    if (rc == BFH_OK && !p->gseq_known) rc = pin_gseq_set(p, &props, err);
    if (rc == BFH_OK && keys_take(p, &k) != BFH_OK)
      rc = err_set(err, BFH_E_NOMEM, "table %s: no memory for its key index", p->base.path);
    keys_release(&k);
    rdb_table_props_release(&props);
    if (rc != BFH_OK) pin_keys_release(p);
    /* Damage and refusals stay, with their message; no memory may pass. */
    if (rc != BFH_E_NOMEM) p->built = rc == BFH_OK ? 1 : rc;
    if (rc != BFH_OK && rc != BFH_E_NOMEM) p->why = strdup(err->msg);
  } else if (p->built != 1) {
    rc = err_set(err, p->built, "%s", p->why ? p->why : "table could not be read");
  }
  pthread_mutex_unlock(&p->mu);
  return rc;
}

static void pin_init(stock_ro_state_t *s, size_t i, stock_pin_t *base) {
  rro_pin_t *p = (rro_pin_t *)base;
  atomic_init(&p->footer_known, 0);
  pthread_mutex_init(&p->mu, NULL);
  p->largest_seqno = s->tables[i].max_seq;
}

static void pin_release(stock_pin_t *base) {
  rro_pin_t *p = (rro_pin_t *)base;
  pin_keys_release(p);
  pthread_mutex_destroy(&p->mu);
}

/* ---- A search's and the filters' reads ------------------------------------------------------ */

static int table_match(stock_ro_t *r, stock_pin_t *p, uint64_t number, const block_ref_t *refs,
                       size_t n, const stock_match_t *m, engine_scan_stats_t *st, err_t *err) {
  if (p)
    return rdb_table_match_rfile(p->f, p->path, n ? pin_footer((rro_pin_t *)p) : NULL, refs, n, NULL, m,
                                 st, err);
  return rdb_table_match(r->io, r->path, number, refs, n, NULL, m, st, err);
}

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
  keys_t k = {0};
  rdb_leaf_tap_t tap = {tap_entry, tap_block, &k};
  pthread_mutex_lock(&pin->mu);
  int tapped = !pin->built;
  pthread_mutex_unlock(&pin->mu);
  int rc = rdb_leaf_read_tapped(pin->base.f, pin->base.path, p, tapped ? &tap : NULL, out, err);
  if (rc == BFH_OK && tapped)
    pin_keys_install(pin, &k);
  else
    keys_release(&k);
  stock_pin_unref(&pin->base);
  return rc;
}

/* ---- Point lookups -------------------------------------------------------------------------- */

/* A lookup in the tables: the core's, and the table being read. */
typedef struct lookup {
  stock_lookup_t *g;
  int whole;     /* a whole-table read: go on past the key to the table's range tombstones */
  uint64_t gseq; /* the table being read: its global sequence number (seq_of) */
  int rc;        /* a refusal (rdb_entry_refuse) */
  const char *path;
  err_t *err;
} lookup_t;

/* Entries come in internal-key order (user key ascending, newest first): the first entry of
   the key is its newest in the table; a greater key ends the search. */
static int visit_lookup(void *arg, const rdb_entry_t *e) {
  lookup_t *l = arg;
  if (e->type == RDB_TYPE_RANGE_DELETION) { /* a whole-table read's, after every data block */
    if (stock_key_cmp(e->key, e->key_len, l->g->key, l->g->key_len) <= 0 &&
        stock_key_cmp(l->g->key, l->g->key_len, e->val, e->val_len) < 0 &&
        seq_of(l->gseq, e->seq) > l->g->cover)
      l->g->cover = seq_of(l->gseq, e->seq);
    return 0;
  }
  int c = stock_key_cmp(e->key, e->key_len, l->g->key, l->g->key_len);
  if (c < 0 || (l->whole && (c > 0 || l->g->found))) return 0;
  if (c > 0) return 1;
  if ((l->rc = rdb_entry_refuse(e, l->path, l->err)) != BFH_OK) return 1;
  (void)stock_lookup_set(l->g, e->type == RDB_TYPE_VALUE, seq_of(l->gseq, e->seq), e->val,
                         e->val_len);
  return !l->whole;
}

/* The newest entry of l->g->key in pinned table p: one data block, found by the key index. */
static int pin_lookup(rro_pin_t *p, lookup_t *l, err_t *err) {
  int rc = pin_keys(p, err);
  if (rc != BFH_OK) return rc;
  uint64_t cover = stock_tombs_max(p->tombs, l->g->key, l->g->key_len);
  if (cover > l->g->cover) l->g->cover = cover;
  size_t lo = 0, hi = p->nblocks; /* the first block whose last key is >= the key */
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    const rro_kblock_t *b = &p->blocks[mid];
    if (stock_key_cmp(p->keys + b->key_at, b->key_len, l->g->key, l->g->key_len) < 0)
      lo = mid + 1;
    else
      hi = mid;
  }
  if (lo == p->nblocks) return BFH_OK;
  block_ref_t ref = {.offset = p->blocks[lo].offset, .size = p->blocks[lo].size};
  return rdb_table_read_blocks_footer(p->base.f, p->base.path, pin_footer(p), &ref, 1, visit_lookup,
                                      l, NULL, err);
}

static int table_get(stock_ro_t *r, const stock_ro_table_t *t, stock_pin_t *p, const char *path,
                     void *lookup, err_t *err) {
  lookup_t l = {.g = lookup, .whole = !p, .gseq = RDB_NO_GLOBAL_SEQNO, .path = path, .err = err};
  int rc = table_gseq(r, t, (rro_pin_t *)p, path, &l.gseq, err);
  if (rc == BFH_OK && p)
    rc = pin_lookup((rro_pin_t *)p, &l, err);
  else if (rc == BFH_OK) /* not held (beyond pin_max): read by name, whole (its range tombstones
                            come last) */
    rc = rdb_table_scan(r->io, path, visit_lookup, &l, NULL, err);
  return rc == BFH_OK ? l.rc : rc;
}

/* ---- Ordered iteration -------------------------------------------------------------------------
   bfh_iter_* reads every entry of a refreshed state into memory (sorted_iter.h); an entry the
   range-deletion rule at the top deletes goes in as a deletion. */

typedef struct gather {
  stock_sorted_t *sorted;
  const stock_ro_state_t *s;
  const stock_tombs_t **tombs; /* parallel to s->order: each table's range tombstones, or NULL */
  stock_tombs_t **owned;       /* ... those read by name */
  size_t *with;                /* the places in s->order of the tables with tombstones ... */
  size_t nwith;                /* ... ascending */
  size_t rank;                 /* the source read: 0 the chunks, i + 1 s->order[i] */
  stock_tombs_builder_t tb;    /* a table read by name: its tombstones */
  const char *path;
  uint64_t gseq; /* the table read: its global sequence number (seq_of) */
  err_t *err;
  int nomem, rc;
} gather_t;

/* Whether the tombstones a lookup of k would have gathered by the time it reads the source of
   rank g->rank cover k@seq. */
static int range_deleted(const gather_t *g, const uint8_t *k, size_t kl, uint64_t seq) {
  const stock_ro_state_t *s = g->s;
  for (size_t i = 0; i < s->nchunks; i++)
    if (stock_tombs_max(s->chunks[i]->tombs, k, kl) > seq) return 1;
  for (size_t j = 0; j < g->nwith && g->with[j] < g->rank; j++) {
    size_t i = g->with[j];
    if (stock_ro_table_holds(&s->order[i], k, kl) && stock_tombs_max(g->tombs[i], k, kl) > seq)
      return 1;
  }
  return 0;
}

static int gather_add(void *arg, const uint8_t *k, size_t kl, const uint8_t *v, size_t vl,
                      int is_value, uint64_t seq) {
  gather_t *g = arg;
  if (is_value && g->nwith + g->s->nchunks > 0 && range_deleted(g, k, kl, seq)) is_value = 0;
  if (stock_sorted_add(g->sorted, k, kl, v, vl, is_value, seq) != BFH_OK) return g->nomem = 1;
  return 0;
}

static int gather_table_entry(void *arg, const rdb_entry_t *e) {
  gather_t *g = arg;
  if ((g->rc = rdb_entry_refuse(e, g->path, g->err)) != BFH_OK) return 1;
  if (e->type == RDB_TYPE_RANGE_DELETION) return 0; /* read before, into g->tombs */
  if (e->type == RDB_TYPE_DELETION_WITH_TIMESTAMP) {
    g->rc = err_set(g->err, BFH_E_UNSUPPORTED,
                    "table %s: holds a deletion with a timestamp (sequence %llu), which the "
                    "read-only engine does not answer",
                    g->path, (unsigned long long)e->seq);
    return 1;
  }
  return gather_add(g, e->key, e->key_len, e->val, e->val_len, e->type == RDB_TYPE_VALUE,
                    seq_of(g->gseq, e->seq));
}

static int gather_tomb(void *arg, const rdb_entry_t *e) {
  gather_t *g = arg;
  if (e->type != RDB_TYPE_RANGE_DELETION) return 0;
  if (stock_tombs_builder_add(&g->tb, e->key, e->key_len, e->val, e->val_len,
                              seq_of(g->gseq, e->seq)) != BFH_OK)
    return g->nomem = 1;
  return 0;
}

/* *gseq as table_gseq gives it, then every entry of table t to fn (with arg, which holds gseq),
   in internal-key order, its range tombstones last: through its pin p, else by name. */
static int table_scan(stock_ro_t *r, const stock_ro_table_t *t, stock_pin_t *p, const char *path,
                      rdb_visit_fn fn, void *arg, uint64_t *gseq, err_t *err) {
  int rc = table_gseq(r, t, (rro_pin_t *)p, path, gseq, err);
  if (rc != BFH_OK) return rc;
  if (p) return rdb_table_scan_rfile(p->f, path, fn, NULL, arg, NULL, NULL, NULL, err);
  return rdb_table_scan(r->io, path, fn, arg, NULL, err);
}

/* g->tombs[i] for the table t, s->order[i]: its pin's (at the global sequence), or read by
   name into g->owned[i]. */
static int table_tombs(stock_ro_t *r, const stock_ro_table_t *t, stock_pin_t *p, const char *path,
                       void *arg, err_t *err) {
  gather_t *g = arg;
  size_t i = (size_t)(t - g->s->order);
  if (p) {
    int rc = pin_keys((rro_pin_t *)p, err);
    g->tombs[i] = rc == BFH_OK ? ((rro_pin_t *)p)->tombs : NULL;
    return rc;
  }
  int rc = table_scan(r, t, NULL, path, gather_tomb, g, &g->gseq, err);
  if (rc == BFH_OK && !g->nomem && stock_tombs_finish(&g->tb, &g->owned[i]) != BFH_OK) g->nomem = 1;
  stock_tombs_builder_release(&g->tb);
  g->tombs[i] = g->owned[i];
  return rc;
}

/* The entries of table t, s->order[i], into g. */
static int table_entries(stock_ro_t *r, const stock_ro_table_t *t, stock_pin_t *p, const char *path,
                         void *arg, err_t *err) {
  gather_t *g = arg;
  g->path = path;
  g->rank = (size_t)(t - g->s->order) + 1;
  int rc = table_scan(r, t, p, path, gather_table_entry, g, &g->gseq, err);
  return rc == BFH_OK ? g->rc : rc;
}

/* Every entry of s into sorted: its WAL chunks, then every table of the column family in
   lookup order, each table's range tombstones read first. RocksDB's sequences are global: the
   newest version of a key is the one with the largest. */
static int gather(stock_ro_t *r, const stock_ro_state_t *s, stock_sorted_t *sorted, err_t *err) {
  size_t n = s->ntables;
  gather_t g = {.sorted = sorted, .s = s, .err = err};
  g.owned = calloc(n + 1, sizeof *g.owned);
  g.tombs = calloc(n + 1, sizeof *g.tombs);
  g.with = calloc(n + 1, sizeof *g.with);
  int rc = g.owned && g.tombs && g.with ? BFH_OK : BFH_E_NOMEM;
  for (size_t i = 0; i < n && rc == BFH_OK && !g.nomem; i++) {
    rc = stock_ro_table_read(r, s, &s->order[i], table_tombs, &g, err);
    if (rc == BFH_OK && g.tombs[i]) g.with[g.nwith++] = i;
  }
  if (rc == BFH_OK && !g.nomem) (void)stock_chunks_each(s->chunks, s->nchunks, gather_add, &g);
  for (size_t i = 0; i < n && rc == BFH_OK && !g.nomem; i++)
    rc = stock_ro_table_read(r, s, &s->order[i], table_entries, &g, err);
  if (rc == BFH_E_NOMEM || (rc == BFH_OK && g.nomem))
    rc = err_set(err, BFH_E_NOMEM, "%s: iterator: no memory", r->path);
  for (size_t i = 0; g.owned && i < n; i++) stock_tombs_destroy(g.owned[i]);
  free(g.owned);
  free(g.tombs);
  free(g.with);
  return rc;
}

/* ---- The filters' source, the open ---------------------------------------------------------- */

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
    .table_get = table_get,
    .gather = gather,
    .pin_init = pin_init,
    .release = release,
    .pin_release = pin_release,
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

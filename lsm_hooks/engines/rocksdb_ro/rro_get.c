/* The key index of a pinned table (its index block(s) and range-deletion block read once: each
   data block's separator key, the table's range tombstones), and a get's read of one table (the
   core's stock_ro_get walks the chunks newest first, then the tables that may hold the key in
   lookup order): one data block read through the key index. Range deletions answer as RocksDB's
   Get does (db/version_set.cc Version::Get, db/table_cache.cc TableCache::Get,
   db/get_context.cc): the largest sequence of the range tombstones covering the key is gathered
   from the chunks, then from each table in lookup order whose key range holds the key (a
   tombstone widens its table's range), up to and including the one that holds the key's newest
   entry; that entry is deleted when the gathered sequence is larger than its own. */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "lsm_hooks/engines/rocksdb/rdb_adapter.h"
#include "lsm_hooks/engines/rocksdb_ro/rro_internal.h"
#include "lsm_hooks/rocksdb_format/rdb_table.h"

/* ---- A pinned table's key index --------------------------------------------------------- */

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

void rro_keys_release(rro_keys_t *k) {
  free(k->blocks);
  free(k->keys);
  free(k->last);
  stock_tombs_builder_release(&k->tombs);
  memset(k, 0, sizeof *k);
}

static int keys_add_block(rro_keys_t *k, const uint8_t *key, size_t key_len, uint64_t offset,
                          uint64_t size) {
  if (k->nblocks == k->blocks_cap) {
    size_t c = k->blocks_cap ? 2 * k->blocks_cap : 64;
    rro_kblock_t *q = realloc(k->blocks, c * sizeof *q);
    if (!q) return k->nomem = 1;
    k->blocks = q;
    k->blocks_cap = c;
  }
  if (k->keys_len + key_len > k->keys_cap) {
    size_t c = k->keys_cap ? 2 * k->keys_cap : 4096;
    while (c < k->keys_len + key_len) c *= 2;
    uint8_t *q = realloc(k->keys, c);
    if (!q) return k->nomem = 1;
    k->keys = q;
    k->keys_cap = c;
  }
  if (key_len) memcpy(k->keys + k->keys_len, key, key_len);
  k->blocks[k->nblocks++] =
      (rro_kblock_t){.offset = offset, .size = size, .key_at = k->keys_len, .key_len = key_len};
  k->keys_len += key_len;
  return 0;
}

static int kb_tomb(void *arg, const rdb_entry_t *e) {
  rro_keys_t *k = arg;
  if (stock_tombs_builder_add(&k->tombs, e->key, e->key_len, e->val, e->val_len, e->seq) != BFH_OK)
    return k->nomem = 1;
  return 0;
}

static int kb_block(void *arg, const uint8_t *key, size_t key_len, uint64_t offset, uint64_t size) {
  rro_keys_t *k = arg;
  return k->nomem ? 1 : keys_add_block(k, key, key_len, offset, size);
}

int rro_keys_tap_entry(void *arg, const rdb_entry_t *e) {
  rro_keys_t *k = arg;
  if (k->nomem) return 0;
  if (e->type == RDB_TYPE_RANGE_DELETION) return kb_tomb(k, e), 0;
  if (e->key_len > k->last_cap) {
    size_t c = k->last_cap ? 2 * k->last_cap : 64;
    while (c < e->key_len) c *= 2;
    uint8_t *q = realloc(k->last, c);
    if (!q) return k->nomem = 1, 0;
    k->last = q;
    k->last_cap = c;
  }
  if (e->key_len) memcpy(k->last, e->key, e->key_len);
  k->last_len = e->key_len;
  return 0;
}

/* A block's last user key is a separator as good as its index entry's: >= every key of the
   block, < every key of the next (a block without entries gets the one before it, so that no
   lookup stops there). */
int rro_keys_tap_block(void *arg, uint64_t offset, uint64_t size) {
  rro_keys_t *k = arg;
  if (!k->nomem) keys_add_block(k, k->last, k->last_len, offset, size);
  return 0;
}

/* Moves k's index into p (REQUIRES p->mu, p not built, p->gseq known): BFH_OK, or
   BFH_E_NOMEM. An ingested table's range tombstones take its global sequence number. */
static int keys_take(rro_pin_t *p, rro_keys_t *k) {
  if (k->nomem) return BFH_E_NOMEM;
  for (size_t i = 0; i < k->tombs.n; i++) k->tombs.t[i].seq = rro_seq(p->gseq, k->tombs.t[i].seq);
  if (stock_tombs_finish(&k->tombs, &p->tombs) != BFH_OK) return BFH_E_NOMEM;
  p->blocks = k->blocks;
  p->nblocks = k->nblocks;
  p->keys = k->keys;
  k->blocks = NULL;
  k->keys = NULL;
  p->built = 1;
  return BFH_OK;
}

int rro_pin_keys_wanted(rro_pin_t *p) {
  pthread_mutex_lock(&p->mu);
  int wanted = !p->built;
  pthread_mutex_unlock(&p->mu);
  return wanted;
}

const rdb_table_footer_t *rro_pin_footer(rro_pin_t *p) {
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

void rro_pin_keys_install(rro_pin_t *p, rro_keys_t *k) {
  err_t e;
  pthread_mutex_lock(&p->mu);
  /* Not installed when the properties cannot be read: the first lookup builds the index and
     reports why. */
  if (!p->built && pin_gseq_read(p, &e) == BFH_OK && keys_take(p, k) != BFH_OK) pin_keys_release(p);
  pthread_mutex_unlock(&p->mu);
  rro_keys_release(k);
}

/* What the table's properties say the engine cannot answer: BFH_E_UNSUPPORTED naming it. */
static int props_refuse(const rro_pin_t *p, const rdb_table_props_t *pr, err_t *err) {
  if (pr->num_merge_operands)
    return err_set(err, BFH_E_UNSUPPORTED,
                   "table %s: holds a merge operand; bfh cannot search a RocksDB database with "
                   "merge operands (it has no merge operator to apply them)",
                   p->base.path);
  return BFH_OK;
}

/* Builds p's key index and range tombstones once (one read of the table's index and
   range-deletion block): BFH_OK, or the build's status (kept: a refused table stays
   refused). */
static int pin_keys(rro_pin_t *p, err_t *err) {
  pthread_mutex_lock(&p->mu);
  int rc = BFH_OK;
  if (!p->built) {
    rro_keys_t k = {0};
    rdb_table_props_t props;
    rc = rdb_table_index_rfile(p->base.f, p->base.path, kb_block, kb_tomb, &k, NULL, &props, err);
    if (rc == BFH_OK) rc = props_refuse(p, &props, err);
    if (rc == BFH_OK && !p->gseq_known) rc = pin_gseq_set(p, &props, err);
    if (rc == BFH_OK && keys_take(p, &k) != BFH_OK)
      rc = err_set(err, BFH_E_NOMEM, "table %s: no memory for its key index", p->base.path);
    rro_keys_release(&k);
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

int rro_table_gseq(stock_ro_t *r, const stock_ro_table_t *t, rro_pin_t *p, const char *path,
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

int rro_pin_tombs(rro_pin_t *p, const stock_tombs_t **t, err_t *err) {
  int rc = pin_keys(p, err);
  *t = rc == BFH_OK ? p->tombs : NULL;
  return rc;
}

/* ---- Point lookups ---------------------------------------------------------------------- */

/* A lookup in the tables: the core's, and the table being read. */
typedef struct lookup {
  stock_lookup_t *g;
  int whole;     /* a whole-table read: go on past the key to the table's range tombstones */
  uint64_t gseq; /* the table being read: its global sequence number (rro_seq) */
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
        rro_seq(l->gseq, e->seq) > l->g->cover)
      l->g->cover = rro_seq(l->gseq, e->seq);
    return 0;
  }
  int c = stock_key_cmp(e->key, e->key_len, l->g->key, l->g->key_len);
  if (c < 0 || (l->whole && (c > 0 || l->g->found))) return 0;
  if (c > 0) return 1;
  if ((l->rc = rdb_entry_refuse(e, l->path, l->err)) != BFH_OK) return 1;
  (void)stock_lookup_set(l->g, e->type == RDB_TYPE_VALUE, rro_seq(l->gseq, e->seq), e->val,
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
  return rdb_table_read_blocks_footer(p->base.f, p->base.path, rro_pin_footer(p), &ref, 1,
                                      visit_lookup, l, NULL, err);
}

int rro_table_get(stock_ro_t *r, const stock_ro_table_t *t, stock_pin_t *p, const char *path,
                  void *lookup, err_t *err) {
  lookup_t l = {.g = lookup, .whole = !p, .gseq = RDB_NO_GLOBAL_SEQNO, .path = path, .err = err};
  int rc = rro_table_gseq(r, t, (rro_pin_t *)p, path, &l.gseq, err);
  if (rc == BFH_OK && p)
    rc = pin_lookup((rro_pin_t *)p, &l, err);
  else if (rc == BFH_OK) /* not held (beyond pin_max): read by name, whole (its range tombstones
                            come last) */
    rc = rdb_table_scan(r->io, path, visit_lookup, &l, NULL, err);
  return rc == BFH_OK ? l.rc : rc;
}

/* stock_ro_format_t.pin_release: the key index and tombstones. */
void rro_pin_release(stock_pin_t *base) {
  rro_pin_t *p = (rro_pin_t *)base;
  pin_keys_release(p);
  pthread_mutex_destroy(&p->mu);
}

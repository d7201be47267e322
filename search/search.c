/* Non-key search over engine_t; see search.h. */
#include "search/search.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "filters/hash.h"
#include "search/key_list.h"
#include "search/search_plan.h"
#include "util/vec.h"
#include "util/clock.h"

/* ---- A set of candidate keys (open addressing, keys copied) -------------------------- */

typedef struct key_entry {
  uint64_t hash;
  size_t len;
  uint8_t *key; /* owned; NULL: empty slot */
  uint64_t seq; /* the largest sequence number among the key's matches read */
  int checked;  /* the newest K's validation: 0 not yet, KEY_PASSES, KEY_FAILS */
} key_entry_t;

#define KEY_PASSES 1
#define KEY_FAILS 2

typedef struct key_set {
  key_entry_t *slots;
  size_t cap, n; /* cap: 0 or a power of two */
} key_set_t;

static void key_set_release(key_set_t *s) {
  for (size_t i = 0; i < s->cap; i++) free(s->slots[i].key);
  free(s->slots);
  s->slots = NULL;
  s->cap = s->n = 0;
}

static int key_set_grow(key_set_t *s) {
  size_t cap = s->cap ? s->cap * 2 : 64;
  key_entry_t *slots = calloc(cap, sizeof *slots);
  if (!slots) return BFH_E_NOMEM;
  for (size_t i = 0; i < s->cap; i++) {
    if (!s->slots[i].key) continue;
    size_t j = s->slots[i].hash & (cap - 1);
    while (slots[j].key) j = (j + 1) & (cap - 1);
    slots[j] = s->slots[i];
  }
  free(s->slots);
  s->slots = slots;
  s->cap = cap;
  return BFH_OK;
}

/* Inserts key if absent, and keeps the largest seq it was matched at. BFH_OK or
   BFH_E_NOMEM. */
static int key_set_add(key_set_t *s, const void *key, size_t len, uint64_t seq) {
  if ((s->n + 1) * 2 > s->cap && key_set_grow(s) != BFH_OK) return BFH_E_NOMEM;
  uint64_t h = bfh_hash64(key, len, 0x6b657973ull);
  size_t j = h & (s->cap - 1);
  for (; s->slots[j].key; j = (j + 1) & (s->cap - 1))
    if (s->slots[j].hash == h && s->slots[j].len == len && memcmp(s->slots[j].key, key, len) == 0) {
      if (seq > s->slots[j].seq) s->slots[j].seq = seq;
      return BFH_OK;
    }
  uint8_t *copy = malloc(len ? len : 1);
  if (!copy) return BFH_E_NOMEM;
  memcpy(copy, key, len);
  s->slots[j].hash = h;
  s->slots[j].len = len;
  s->slots[j].key = copy;
  s->slots[j].seq = seq;
  s->slots[j].checked = 0;
  s->n++;
  return BFH_OK;
}

/* ---- The search ---------------------------------------------------------------------- */

typedef struct collect {
  key_set_t *set;
  uint64_t matches;
  int nomem;
} collect_t;

static int collect_key(void *arg, const void *key, size_t key_len, uint64_t seq) {
  collect_t *c = arg;
  c->matches++;
  if (key_set_add(c->set, key, key_len, seq) != BFH_OK) {
    c->nomem = 1;
    return 1;
  }
  return 0;
}

/* A block a leaf of a predicate may hold, and the bound of the leaf's entries there. */
typedef struct leaf_ref {
  block_ref_t ref;
  uint64_t bound;
  uint32_t leaf;
} leaf_ref_t;

/* How the selected tables and the memtables are read: whole (the paper's methods), or,
   with AUTO, through the block filters and the memtables' value index. */
typedef struct reader {
  int by_blocks;
  block_index_t *blocks; /* the index's block filters (by_blocks) */
  uint64_t hash;         /* the search's one hash of the value (by_blocks) */
  block_refs_t refs;     /* the blocks of one table's probe */
  /* A search by a predicate (NULL: by a value): its leaves' hashes, and the scratch of the
     per-block combination (pred_blocks). */
  const search_pred_t *pred;
  block_refs_t leaf_refs;
  leaf_ref_t *tagged;
  size_t ntagged, cap_tagged;
  uint8_t *marks; /* nleaves bytes */
  /* The chunks read ahead of maps that read their own files (read_tables_ahead), or NULL. */
  block_chunks_ahead_t *own_ahead;
} reader_t;

static void reader_release(reader_t *rd) {
  block_refs_release(&rd->refs);
  block_refs_release(&rd->leaf_refs);
  free(rd->tagged);
  free(rd->marks);
}

/* A table whose block filter says maybe for more than this share of its blocks is read
   whole: reading block by block would save little and costs a lookup per block. */
#define WHOLE_TABLE_SHARE 0.5

static int scan_whole(engine_t *e, engine_view_t *view, uint64_t number,
                      const engine_value_test_t *test, collect_t *c, engine_scan_stats_t *ss,
                      bfh_search_stats *st, err_t *err) {
  st->tables_scanned++;
  return engine_scan_table(e, view, number, test, collect_key, c, ss, err);
}

/* The chunk reads of a table's value-to-block map (block_map_io_t), through the engine. */
typedef struct map_read {
  engine_t *e;
  engine_view_t *view;
  uint64_t number;
} map_read_t;

static int read_map_chunk(void *arg, uint64_t off, size_t len, void *buf, err_t *err) {
  map_read_t *m = arg;
  return engine_read_meta(m->e, m->view, m->number, VALUE_BLOCK_MAP_CHUNKS_NAME, off, len, buf,
                          err);
}

static int by_offset(const void *a, const void *b) {
  const leaf_ref_t *x = a, *y = b;
  return x->ref.offset < y->ref.offset ? -1 : x->ref.offset > y->ref.offset;
}

/* Appends ref, with its sequence bound, to r: BFH_OK or BFH_E_NOMEM. */
static int refs_push(block_refs_t *r, const block_ref_t *ref, uint64_t bound) {
  if (r->n == r->cap && block_refs_reserve(r, r->cap ? 2 * r->cap : 16) != BFH_OK)
    return BFH_E_NOMEM;
  r->bound[r->n] = bound;
  r->v[r->n++] = *ref;
  return BFH_OK;
}

/* block_index_probe for a predicate: into rd->refs, in file order, the blocks of table
   `number` where the predicate may hold, each leaf's blocks (its own probe) combined per
   block by the tree. A block's bound is the largest of its leaves': an entry that satisfies
   the predicate (AND and OR only) holds one of the leaves named there, whose bound is at
   least its sequence number. Returns as block_index_probe (its first failure among the
   leaves). */
static int probe_pred(reader_t *rd, uint64_t number, uint32_t *nblocks, block_map_io_t *io,
                      err_t *err) {
  const search_pred_t *p = rd->pred;
  rd->ntagged = 0;
  for (size_t i = 0; i < p->nleaves; i++) {
    int rc = block_index_probe(rd->blocks, number, p->hash[i], &rd->leaf_refs, nblocks, io, err);
    if (rc != BFH_OK) return rc;
    size_t need = rd->ntagged + rd->leaf_refs.n;
    if (need > rd->cap_tagged) {
      size_t cap = rd->cap_tagged ? rd->cap_tagged : 64;
      while (cap < need) cap *= 2;
      leaf_ref_t *t = realloc(rd->tagged, cap * sizeof *t);
      if (!t) return err_set(err, BFH_E_NOMEM, "search: out of memory for blocks");
      rd->tagged = t;
      rd->cap_tagged = cap;
    }
    for (size_t j = 0; j < rd->leaf_refs.n; j++)
      rd->tagged[rd->ntagged++] =
          (leaf_ref_t){rd->leaf_refs.v[j], rd->leaf_refs.bound[j], (uint32_t)i};
  }
  if (rd->ntagged > 1) qsort(rd->tagged, rd->ntagged, sizeof *rd->tagged, by_offset);
  rd->refs.n = 0;
  for (size_t a = 0, b; a < rd->ntagged; a = b) {
    memset(rd->marks, 0, p->nleaves);
    uint64_t bound = 0;
    for (b = a; b < rd->ntagged && rd->tagged[b].ref.offset == rd->tagged[a].ref.offset; b++) {
      rd->marks[rd->tagged[b].leaf] = 1;
      if (rd->tagged[b].bound > bound) bound = rd->tagged[b].bound;
    }
    if (expr_eval(p->expr, rd->marks) && refs_push(&rd->refs, &rd->tagged[a].ref, bound) != BFH_OK)
      return err_set(err, BFH_E_NOMEM, "search: out of memory for blocks");
  }
  return BFH_OK;
}

/* Probes table `number`'s map or block filter for rd's value or predicate: rd->refs gets the
   blocks that may hold it, in file order, *nblocks how many the map or filter covers; the map
   chunks read are counted in st and their bytes (from the table or a cache file) added to
   *bytes_read. Returns as block_index_probe. */
static int probe_table(engine_t *e, engine_view_t *view, reader_t *rd, uint64_t number,
                       uint32_t *nblocks, bfh_search_stats *st, uint64_t *bytes_read, err_t *err) {
  map_read_t mr = {e, view, number};
  /* No read_meta (the LevelDB engines): only maps with their own reader are read. */
  block_map_io_t io = {
      engine_has_read_meta(e) ? read_map_chunk : NULL, &mr, 0, 0, 0, rd->own_ahead};
  int rc = rd->pred ? probe_pred(rd, number, nblocks, &io, err)
                    : block_index_probe(rd->blocks, number, rd->hash, &rd->refs, nblocks, &io, err);
  st->map_chunks_read += io.chunks_read;
  *bytes_read += io.bytes_read;
  return rc;
}

/* Whether the blocks a probe named (rd->refs) of a table of nblocks are few enough to read one
   by one rather than the whole table. */
static int few_blocks(const reader_t *rd, uint32_t nblocks) {
  return rd->refs.n <= WHOLE_TABLE_SHARE * nblocks;
}

/* Reads the whole table after a read through its map or block filter failed as corrupt
   (why: that error): if the table reads, the map or filter did not describe it and is
   dropped (counted, block_index_drop_damaged); if not, the table is damaged and that error
   is returned. */
static int scan_after_damage(engine_t *e, engine_view_t *view, reader_t *rd, uint64_t number,
                             const engine_value_test_t *test, collect_t *c, engine_scan_stats_t *ss,
                             bfh_search_stats *st, const err_t *why, err_t *err) {
  err_t first = *why;
  int rc = scan_whole(e, view, number, test, c, ss, st, err);
  if (rc == BFH_OK) block_index_drop_damaged(rd->blocks, number, &first);
  return rc;
}

/* Probes table `number` for rd's value or predicate (probe_table), counting the probe in st:
   BFH_OK with *named set when rd->refs holds the blocks to read (of *nblocks); BFH_OK with
   *named 0 when the table was read whole instead (no map nor filter, or one that does not
   check out: scan_after_damage); else the error. */
static int probe_or_scan(engine_t *e, engine_view_t *view, reader_t *rd, uint64_t number,
                         uint32_t *nblocks, int *named, const engine_value_test_t *test,
                         collect_t *c, engine_scan_stats_t *ss, bfh_search_stats *st, err_t *err) {
  *named = 0;
  int rc = probe_table(e, view, rd, number, nblocks, st, &ss->bytes_read, err);
  if (rc == BFH_NOT_FOUND) return scan_whole(e, view, number, test, c, ss, st, err);
  if (rc == BFH_E_CORRUPT) return scan_after_damage(e, view, rd, number, test, c, ss, st, err, err);
  if (rc != BFH_OK) return rc;
  st->block_filters_probed++;
  *named = 1;
  return BFH_OK;
}

/* Reads blocks refs[0, n) of table `number`, counted in st (not the table: the caller's);
   a read that fails as corrupt reads the whole table (scan_after_damage). */
static int scan_named(engine_t *e, engine_view_t *view, reader_t *rd, uint64_t number,
                      const block_ref_t *refs, size_t n, const engine_value_test_t *test,
                      collect_t *c, engine_scan_stats_t *ss, bfh_search_stats *st, err_t *err) {
  int rc = engine_scan_blocks(e, view, number, refs, n, test, collect_key, c, ss, err);
  if (rc == BFH_OK) st->blocks_read += n;
  if (rc != BFH_E_CORRUPT) return rc;
  return scan_after_damage(e, view, rd, number, test, c, ss, st, err, err);
}

/* Reads the blocks rd->refs names of table `number` (of the nblocks its map or filter covers):
   one by one when they are few, else the whole table (counted in st as scan_named and
   scan_whole count). */
static int read_named(engine_t *e, engine_view_t *view, reader_t *rd, uint64_t number,
                      uint32_t nblocks, const engine_value_test_t *test, collect_t *c,
                      engine_scan_stats_t *ss, bfh_search_stats *st, err_t *err) {
  if (!few_blocks(rd, nblocks)) return scan_whole(e, view, number, test, c, ss, st, err);
  return scan_named(e, view, rd, number, rd->refs.v, rd->refs.n, test, c, ss, st, err);
}

/* Reads table `number` through its value-to-block map or its block filter: only the blocks
   that may hold val. A table without either is read whole, and so is one whose read through
   them fails as corrupt (scan_after_damage). */
static int scan_by_blocks(engine_t *e, engine_view_t *view, reader_t *rd, uint64_t number,
                          const engine_value_test_t *test, collect_t *c, engine_scan_stats_t *ss,
                          bfh_search_stats *st, err_t *err) {
  uint32_t nblocks = 0;
  int named;
  int rc = probe_or_scan(e, view, rd, number, &nblocks, &named, test, c, ss, st, err);
  if (rc != BFH_OK || !named || rd->refs.n == 0) return rc;
  uint64_t scanned = st->tables_scanned; /* a read whole counts itself */
  rc = read_named(e, view, rd, number, nblocks, test, c, ss, st, err);
  if (rc == BFH_OK && st->tables_scanned == scanned) st->tables_scanned++;
  return rc;
}

/* The memtables: scanned whole, or with the blocks reader looked up in their value index
   under the value's hash, or under each leaf's of a predicate's cover (every entry that
   satisfies it is under one of those). */
static int read_memtables(engine_t *e, engine_view_t *view, const reader_t *rd,
                          const engine_value_test_t *test, collect_t *c, engine_scan_stats_t *ss,
                          err_t *err) {
  if (!rd->by_blocks) return engine_scan_memtables(e, view, test, collect_key, c, ss, err);
  if (!rd->pred) return engine_find_memtables(e, view, test, rd->hash, collect_key, c, ss, err);
  int rc = BFH_OK;
  for (size_t i = 0; i < rd->pred->ncover && rc == BFH_OK; i++)
    rc = engine_find_memtables(e, view, test, rd->pred->hash[rd->pred->cover[i]], collect_key, c,
                               ss, err);
  return rc;
}

/* Reads table t by rd (whole, or through its block filter), counting it in st. */
static int read_table(engine_t *e, engine_view_t *view, reader_t *rd, const engine_table_t *t,
                      const engine_value_test_t *test, collect_t *c, engine_scan_stats_t *ss,
                      bfh_search_stats *st, err_t *err) {
  uint64_t before = c->matches;
  int rc = rd->by_blocks ? scan_by_blocks(e, view, rd, t->number, test, c, ss, st, err)
                         : scan_whole(e, view, t->number, test, c, ss, st, err);
  if (c->matches > before) st->tables_matched++;
  return rc;
}

/* ---- Reading ahead ----------------------------------------------------------------------
   A search by blocks knows, before it probes a table, the map chunk the probe reads first
   (block_index_sure_spans, from memory), and once it has probed, the blocks it reads. One by
   one, each of those reads is a system call, and on a warm database those calls were the
   largest part of the search's time (doc/search.md "Reading ahead"). So where the engine reads ahead
   (engine_read_ahead), the tables are read in three steps: every selected table's first
   chunks are read ahead together; every table is probed; then the blocks all the probes
   named are read ahead together, and each table's blocks are scanned. The scans and probes
   read what they read as before, and find it in the block cache. */

/* The pieces to read ahead, and the tables whose blocks are read after the probes. */
typedef struct ahead {
  block_ahead_t *piece;
  size_t npieces, cap_pieces;
  struct named_table {
    size_t table;    /* index into the selected tables */
    size_t first, n; /* its blocks: piece[first, first + n) */
  } * named;
  size_t nnamed, cap_named;
} ahead_t;

static void ahead_release(ahead_t *a) {
  free(a->piece);
  free(a->named);
}

static int ahead_push(ahead_t *a, uint64_t number, const char *meta, block_ref_t block) {
  if (a->npieces == a->cap_pieces) {
    size_t cap = a->cap_pieces ? 2 * a->cap_pieces : 64;
    block_ahead_t *p = realloc(a->piece, cap * sizeof *p);
    if (!p) return BFH_E_NOMEM;
    a->piece = p;
    a->cap_pieces = cap;
  }
  a->piece[a->npieces++] = (block_ahead_t){number, meta, block};
  return BFH_OK;
}

/* Keeps the blocks rd->refs names of selected table i (`number`) for the second read ahead. */
static int ahead_keep(ahead_t *a, size_t i, uint64_t number, const reader_t *rd) {
  if (a->nnamed == a->cap_named) {
    size_t cap = a->cap_named ? 2 * a->cap_named : 16;
    struct named_table *t = realloc(a->named, cap * sizeof *t);
    if (!t) return BFH_E_NOMEM;
    a->named = t;
    a->cap_named = cap;
  }
  a->named[a->nnamed++] = (struct named_table){i, a->npieces, rd->refs.n};
  for (size_t j = 0; j < rd->refs.n; j++)
    if (ahead_push(a, number, NULL, rd->refs.v[j]) != BFH_OK) return BFH_E_NOMEM;
  return BFH_OK;
}

/* The first step: the chunks the probes of the selected tables surely read, read ahead: from
   the tables, by the engine; from the files of maps that read their own (the stock engines'
   cache files), by the block index, into own. */
static int ahead_chunks(engine_t *e, engine_view_t *view, const reader_t *rd,
                        const engine_table_t *tables, size_t n, const uint8_t *scan, ahead_t *a,
                        block_chunks_ahead_t *own, err_t *err) {
  const uint64_t *hashes = rd->pred ? rd->pred->hash : &rd->hash;
  size_t nhashes = rd->pred ? rd->pred->nleaves : 1, nselected = 0;
  block_span_t *span = malloc(nhashes * sizeof *span);
  uint64_t *selected = malloc((n ? n : 1) * sizeof *selected);
  int rc = span && selected ? BFH_OK : BFH_E_NOMEM;
  for (size_t i = 0; i < n && rc == BFH_OK; i++) {
    if (!scan[i]) continue;
    selected[nselected++] = tables[i].number;
    size_t k = block_index_sure_spans(rd->blocks, tables[i].number, hashes, nhashes, span);
    for (size_t j = 0; j < k && rc == BFH_OK; j++)
      rc = ahead_push(a, tables[i].number, VALUE_BLOCK_MAP_CHUNKS_NAME,
                      (block_ref_t){span[j].offset, span[j].len});
  }
  if (rc == BFH_OK)
    rc = block_index_read_ahead_own(rd->blocks, selected, nselected, hashes, nhashes, own);
  free(span);
  free(selected);
  if (rc != BFH_OK) return err_set(err, rc, "search: out of memory");
  engine_read_ahead(e, view, a->piece, a->npieces);
  a->npieces = 0;
  return BFH_OK;
}

/* read_table of every table with scan[i] set, through the three steps above. */
static int read_tables_ahead(engine_t *e, engine_view_t *view, reader_t *rd,
                             const engine_table_t *tables, size_t n, const uint8_t *scan,
                             const engine_value_test_t *test, collect_t *c, engine_scan_stats_t *ss,
                             bfh_search_stats *st, err_t *err) {
  ahead_t a = {0};
  block_chunks_ahead_t own = {0};
  int rc = ahead_chunks(e, view, rd, tables, n, scan, &a, &own, err);
  rd->own_ahead = &own;
  for (size_t i = 0; i < n && rc == BFH_OK; i++) {
    if (!scan[i]) continue;
    uint64_t before = c->matches;
    uint32_t nblocks = 0;
    int named;
    rc = probe_or_scan(e, view, rd, tables[i].number, &nblocks, &named, test, c, ss, st, err);
    if (rc == BFH_OK && named && rd->refs.n) {
      if (few_blocks(rd, nblocks))
        rc = ahead_keep(&a, i, tables[i].number, rd) == BFH_OK
                 ? BFH_OK
                 : err_set(err, BFH_E_NOMEM, "search: out of memory for blocks");
      else
        rc = scan_whole(e, view, tables[i].number, test, c, ss, st, err);
    }
    if (c->matches > before) st->tables_matched++;
  }
  rd->own_ahead = NULL;
  block_chunks_ahead_release(&own);
  if (rc == BFH_OK) engine_read_ahead(e, view, a.piece, a.npieces);
  block_refs_t refs = {0};
  for (size_t k = 0; k < a.nnamed && rc == BFH_OK; k++) {
    const struct named_table *t = &a.named[k];
    if (block_refs_reserve(&refs, t->n) != BFH_OK) {
      rc = err_set(err, BFH_E_NOMEM, "search: out of memory for blocks");
      break;
    }
    for (size_t j = 0; j < t->n; j++) refs.v[j] = a.piece[t->first + j].block;
    uint64_t before = c->matches, scanned = st->tables_scanned; /* a read whole counts itself */
    rc = scan_named(e, view, rd, tables[t->table].number, refs.v, t->n, test, c, ss, st, err);
    if (rc == BFH_OK && st->tables_scanned == scanned) st->tables_scanned++;
    if (c->matches > before) st->tables_matched++;
  }
  block_refs_release(&refs);
  ahead_release(&a);
  return rc;
}

/* Reads the tables with scan[i] set, then the memtables; then validates every key and
   reports those that pass. */
static int scan_and_validate(engine_t *e, engine_view_t *view, reader_t *rd,
                             const engine_table_t *tables, size_t n, const uint8_t *scan,
                             const engine_value_test_t *test, bfh_match_fn fn, void *arg,
                             bfh_search_stats *st, err_t *err) {
  key_set_t set = {NULL, 0, 0};
  collect_t c = {&set, 0, 0};
  engine_scan_stats_t ss = {0, 0};
  int rc = BFH_OK;
  if (rd->by_blocks && engine_has_read_ahead(e))
    rc = read_tables_ahead(e, view, rd, tables, n, scan, test, &c, &ss, st, err);
  else
    for (size_t i = 0; i < n && rc == BFH_OK; i++)
      if (scan[i]) rc = read_table(e, view, rd, &tables[i], test, &c, &ss, st, err);
  if (rc == BFH_OK) rc = read_memtables(e, view, rd, test, &c, &ss, err);
  if (rc == BFH_OK && c.nomem) rc = err_set(err, BFH_E_NOMEM, "search: out of memory for keys");
  st->entries_scanned += ss.entries;
  st->bytes_read += ss.bytes_read;
  st->candidates += set.n;
  for (size_t i = 0; rc == BFH_OK && i < set.cap; i++) {
    key_entry_t *k = &set.slots[i];
    if (!k->key) continue;
    int holds = engine_key_passes(e, view, k->key, k->len, test, err);
    if (holds < 0) rc = holds;
    if (holds <= 0) continue;
    st->results++;
    if (fn && fn(arg, k->key, k->len)) break;
  }
  key_set_release(&set);
  return rc;
}

/* ---- The newest K (doc/query.md "The newest K") ------------------------------------------
   The memtables first, then the selected tables and the blocks their maps name, largest
   bound first (a table's max_seq; a block's bound for the value or predicate, from its
   map); before a table or block with a bound is read, the candidates found since the last
   check are validated, and the reads stop once K keys that pass have a sequence above its
   bound (so above every unread table's and block's). Exact: a key's latest version, when it
   passes, is an entry that passes, so it is found in the source that holds it (no filter
   rules out an entry that passes, and a bound is at least every such entry's sequence); a
   key that passes and ranks in the newest K has its latest version newer than every unread
   bound, so that version was read, and the key's largest matched sequence is its latest
   write's. A key whose latest version is unread has a matched sequence at most the bound
   over it, and ranks after the K kept. Validation reads the latest version as every search
   does (engine_key_passes); the sequences are the view's writes. */

/* Validates the keys of set not validated yet. BFH_OK, or the first failing get's status. */
static int validate_new(engine_t *e, engine_view_t *view, key_set_t *set,
                        const engine_value_test_t *test, err_t *err) {
  for (size_t i = 0; i < set->cap; i++) {
    key_entry_t *k = &set->slots[i];
    if (!k->key || k->checked) continue;
    int holds = engine_key_passes(e, view, k->key, k->len, test, err);
    if (holds < 0) return holds;
    k->checked = holds ? KEY_PASSES : KEY_FAILS;
  }
  return BFH_OK;
}

/* The k-th largest sequence number among the keys of set that pass, into *kth; *have 0 when
   fewer than k pass. BFH_OK or BFH_E_NOMEM. */
static int newest_kth(const key_set_t *set, uint64_t k, int *have, uint64_t *kth, err_t *err) {
  size_t n = 0;
  for (size_t i = 0; i < set->cap; i++)
    n += set->slots[i].key && set->slots[i].checked == KEY_PASSES;
  *have = n >= k;
  if (!*have) return BFH_OK;
  uint64_t *v = malloc(n * sizeof *v);
  if (!v) return err_set(err, BFH_E_NOMEM, "search: out of memory for %zu keys", n);
  n = 0;
  for (size_t i = 0; i < set->cap; i++)
    if (set->slots[i].key && set->slots[i].checked == KEY_PASSES) v[n++] = set->slots[i].seq;
  int rc = u64_radix_sort(v, n, 64) == ST_OK ? BFH_OK
                                             : err_set(err, BFH_E_NOMEM, "search: out of memory");
  if (rc == BFH_OK) *kth = v[n - k];
  free(v);
  return rc;
}

/* Newest sequence first; equal sequences (a batch ingested at one sequence, or RocksDB's
   bottom level, where sequences are zeroed) by key, bytewise. */
static int by_seq_desc(const void *a, const void *b) {
  const key_entry_t *x = *(const key_entry_t *const *)a;
  const key_entry_t *y = *(const key_entry_t *const *)b;
  if (x->seq != y->seq) return x->seq > y->seq ? -1 : 1;
  int c = memcmp(x->key, y->key, x->len < y->len ? x->len : y->len);
  return c ? c : (x->len > y->len) - (x->len < y->len);
}

/* Reports the (at most k) newest keys of set that pass, newest first. */
static int report_newest(key_set_t *set, uint64_t k, bfh_match_fn fn, void *arg,
                         bfh_search_stats *st, err_t *err) {
  size_t n = 0;
  for (size_t i = 0; i < set->cap; i++)
    n += set->slots[i].key && set->slots[i].checked == KEY_PASSES;
  key_entry_t **v = malloc((n ? n : 1) * sizeof *v);
  if (!v) return err_set(err, BFH_E_NOMEM, "search: out of memory for %zu keys", n);
  n = 0;
  for (size_t i = 0; i < set->cap; i++)
    if (set->slots[i].key && set->slots[i].checked == KEY_PASSES) v[n++] = &set->slots[i];
  qsort(v, n, sizeof *v, by_seq_desc);
  for (size_t i = 0; i < n && i < k; i++) {
    st->results++;
    if (fn && fn(arg, v[i]->key, v[i]->len)) break;
  }
  free(v);
  return BFH_OK;
}

/* What the newest K reads next: a selected table not probed yet (block 0 x 0: whole), or
   one block that a table's probe named, with a bound on the sequence numbers of the entries
   there that may match (ENGINE_SEQ_UNKNOWN: none, read first). */
typedef struct unit {
  uint64_t bound;
  const engine_table_t *table;
  size_t slot; /* the table's in the read state */
  block_ref_t ref;
} unit_t;

/* A max-heap of units by bound; among equal bounds, tables before their blocks, then by table
   number, then by offset (the order is the same in every run). */
typedef struct units {
  unit_t *v;
  size_t n, cap;
} units_t;

static int unit_before(const unit_t *a, const unit_t *b) {
  if (a->bound != b->bound) return a->bound > b->bound;
  if ((a->ref.size == 0) != (b->ref.size == 0)) return a->ref.size == 0;
  if (a->table->number != b->table->number) return a->table->number > b->table->number;
  return a->ref.offset < b->ref.offset;
}

static int units_push(units_t *h, const unit_t *u) {
  if (h->n == h->cap) {
    size_t cap = h->cap ? 2 * h->cap : 64;
    unit_t *v = realloc(h->v, cap * sizeof *v);
    if (!v) return BFH_E_NOMEM;
    h->v = v;
    h->cap = cap;
  }
  size_t i = h->n++;
  for (; i > 0 && unit_before(u, &h->v[(i - 1) / 2]); i = (i - 1) / 2) h->v[i] = h->v[(i - 1) / 2];
  h->v[i] = *u;
  return BFH_OK;
}

static unit_t units_pop(units_t *h) {
  unit_t top = h->v[0], last = h->v[--h->n];
  size_t i = 0;
  for (;;) {
    size_t l = 2 * i + 1, r = l + 1, m = i;
    const unit_t *at = &last;
    if (l < h->n && unit_before(&h->v[l], at)) m = l, at = &h->v[l];
    if (r < h->n && unit_before(&h->v[r], at)) m = r;
    if (m == i) break;
    h->v[i] = h->v[m];
    i = m;
  }
  if (h->n) h->v[i] = last;
  return top;
}

/* A table's state in the newest K's reads. */
#define READ_WHOLE 1   /* read whole: its remaining blocks are skipped */
#define READ_COUNTED 2 /* counted in tables_scanned */
#define READ_MATCHED 4 /* counted in tables_matched */

/* Reads unit u: a table (whole, or probed: the blocks its map names, each with its own bound,
   go onto the heap; a map without bounds or a block filter has its blocks read at once, as
   a search reads them), or one block of a probed table. */
static int read_unit(engine_t *e, engine_view_t *view, reader_t *rd, const unit_t *u,
                     uint8_t *state, units_t *h, const engine_value_test_t *test, collect_t *c,
                     engine_scan_stats_t *ss, bfh_search_stats *st, err_t *err) {
  const engine_table_t *t = u->table;
  uint64_t before = c->matches, scanned = st->tables_scanned, blocks = st->blocks_read;
  int rc = BFH_OK;
  if (u->ref.size > 0) {
    if (state[u->slot] & READ_WHOLE) return BFH_OK;
    rc = scan_named(e, view, rd, t->number, &u->ref, 1, test, c, ss, st, err);
  } else if (!rd->by_blocks) {
    rc = scan_whole(e, view, t->number, test, c, ss, st, err);
  } else {
    uint32_t nblocks = 0;
    int named;
    rc = probe_or_scan(e, view, rd, t->number, &nblocks, &named, test, c, ss, st, err);
    /* One map or filter named them all: bounded all, or none. */
    int bounded = named && rd->refs.n > 0 && rd->refs.bound[0] != VALUE_BLOCK_MAP_NO_BOUND;
    if (rc == BFH_OK && named && rd->refs.n > 0 && !bounded)
      rc = read_named(e, view, rd, t->number, nblocks, test, c, ss, st, err);
    for (size_t j = 0; rc == BFH_OK && bounded && j < rd->refs.n; j++) {
      unit_t b = {rd->refs.bound[j] < t->max_seq ? rd->refs.bound[j] : t->max_seq, t, u->slot,
                  rd->refs.v[j]};
      if (units_push(h, &b) != BFH_OK) rc = err_set(err, BFH_E_NOMEM, "search: out of memory");
    }
    if (rc == BFH_OK && bounded) return BFH_OK; /* nothing read yet */
  }
  /* A whole read counted the table itself; a read of blocks counts it once. */
  if (st->tables_scanned > scanned) {
    state[u->slot] |= READ_WHOLE | READ_COUNTED;
  } else if (st->blocks_read > blocks && !(state[u->slot] & READ_COUNTED)) {
    st->tables_scanned++;
    state[u->slot] |= READ_COUNTED;
  }
  if (c->matches > before && !(state[u->slot] & READ_MATCHED)) {
    st->tables_matched++;
    state[u->slot] |= READ_MATCHED;
  }
  return rc;
}

/* scan_and_validate for the newest k: reads the memtables, then the tables with scan[i] set
   and the blocks their maps name by decreasing bound (a table's max_seq, a block's bound
   for the value or predicate), and stops as soon as the newest k are known. */
static int scan_newest(engine_t *e, engine_view_t *view, reader_t *rd, const engine_table_t *tables,
                       size_t n, const uint8_t *scan, uint64_t k, const engine_value_test_t *test,
                       bfh_match_fn fn, void *arg, bfh_search_stats *st, err_t *err) {
  key_set_t set = {NULL, 0, 0};
  collect_t c = {&set, 0, 0};
  engine_scan_stats_t ss = {0, 0};
  units_t h = {NULL, 0, 0};
  uint8_t *state = calloc(n ? n : 1, 1);
  int rc = state ? BFH_OK : err_set(err, BFH_E_NOMEM, "search: out of memory");
  for (size_t i = 0; rc == BFH_OK && i < n; i++) {
    unit_t u = {tables[i].max_seq, &tables[i], i, {0, 0}};
    if (scan[i] && units_push(&h, &u) != BFH_OK)
      rc = err_set(err, BFH_E_NOMEM, "search: out of memory");
  }
  if (rc == BFH_OK) rc = read_memtables(e, view, rd, test, &c, &ss, err);
  /* The k-th newest key that passes, as of checked matches: recounted only after new ones
     (a unit without a bound is read first and checks nothing). */
  uint64_t checked = UINT64_MAX, kth = 0;
  int have = 0;
  while (rc == BFH_OK && !c.nomem && h.n > 0) {
    /* Every unread entry that may match is at most the top unit's bound. */
    uint64_t bound = h.v[0].bound;
    if (bound != ENGINE_SEQ_UNKNOWN && c.matches != checked) {
      rc = validate_new(e, view, &set, test, err);
      if (rc == BFH_OK) rc = newest_kth(&set, k, &have, &kth, err);
      checked = c.matches;
    }
    if (rc != BFH_OK || (bound != ENGINE_SEQ_UNKNOWN && have && kth > bound)) break;
    unit_t u = units_pop(&h);
    rc = read_unit(e, view, rd, &u, state, &h, test, &c, &ss, st, err);
  }
  if (rc == BFH_OK && c.nomem) rc = err_set(err, BFH_E_NOMEM, "search: out of memory for keys");
  if (rc == BFH_OK) rc = validate_new(e, view, &set, test, err);
  free(h.v);
  free(state);
  st->entries_scanned += ss.entries;
  st->bytes_read += ss.bytes_read;
  st->candidates += set.n;
  if (rc == BFH_OK) rc = report_newest(&set, k, fn, arg, st, err);
  key_set_release(&set);
  return rc;
}

/* Chooses which of the view's n tables to scan (scan[i] for tables[i]) and adds its filter
   tests to st. */
typedef int (*select_fn)(const void *arg, engine_view_t *view, const engine_table_t *tables,
                         size_t n, uint8_t *scan, bfh_search_stats *st, err_t *err);

/* AUTO's trial of the stand-alone index for a predicate or a whole value
   (search_query_t.try_standalone): it answers within the candidates whose validation costs less
   than reading the selected tables as rd would (whole, or the blocks their filters name), keeping
   st's filter tests; BFH_NOT_FOUND, having reported nothing, when it declines (nothing to read but
   the memtables, or too many candidates). */
typedef struct instead {
  const search_ctx_t *c;
  const search_pred_t *pred; /* NULL: the whole value val[0, val_len) */
  const void *val;
  size_t val_len;
} instead_t;

/* The leaves of the search as written: the index's seeks. */
static size_t instead_leaves(const instead_t *in) {
  return in->pred ? expr_leaf_count(in->pred->where) : 1;
}

/* The bytes rd would read of table t into *bytes: the map chunks its probe reads, and where
   its block filter or map names few enough blocks, their share of the table (the probe is
   made again if the table is read), else the whole table. */
static int table_read_bytes(engine_t *e, engine_view_t *view, reader_t *rd, const engine_table_t *t,
                            bfh_search_stats *st, uint64_t *bytes, err_t *err) {
  *bytes = t->size;
  if (!rd->by_blocks) return BFH_OK;
  uint32_t nblocks = 0;
  uint64_t chunk_bytes = 0;
  int rc = probe_table(e, view, rd, t->number, &nblocks, st, &chunk_bytes, err);
  /* Without a filter or map, or with one that does not check out, the table is read whole
     (a damaged one is reported by that read). */
  if (rc == BFH_NOT_FOUND || rc == BFH_E_CORRUPT) return BFH_OK;
  if (rc != BFH_OK) return rc;
  if (few_blocks(rd, nblocks)) *bytes = nblocks ? t->size * rd->refs.n / nblocks : 0;
  *bytes += chunk_bytes; /* a read by blocks probes first */
  return BFH_OK;
}

/* The weighing of AUTO's trial: the selected tables' block probes, made while the bytes
   they name cost less than validating the candidates (search_standalone_trial_t.worth). */
typedef struct weigh {
  const search_ctx_t *c;
  engine_t *e;
  engine_view_t *view;
  reader_t *rd;
  const engine_table_t *tables;
  size_t n;
  const uint8_t *scan;
  bfh_search_stats *st;
  int rc; /* a probe's failure, else BFH_OK */
  err_t *err;
} weigh_t;

/* The weighing's sample: the tables probed before the estimate from them may decide, and how
   far past the budget the estimate must be to decide for the index. */
#define WEIGH_SAMPLE 8
#define WEIGH_MARGIN 2.0

static int index_worth(void *arg, uint64_t candidates) {
  weigh_t *w = arg;
  /* A probe of a selected table probes its map for the value, or for every leaf of a
     predicate (probe_pred), and each such probe surely reads a chunk of the map unless its sketch
     rules the leaf out there (block_index_sure_read, from memory). When those bytes alone outweigh
     the candidates, no probe can change the answer (it only adds bytes), so none is made. */
  const search_pred_t *p = w->rd->pred;
  if (w->rd->by_blocks) {
    int can_read = engine_has_read_meta(w->e);
    const uint64_t *hashes = p ? p->hash : &w->rd->hash;
    size_t nhashes = p ? p->nleaves : 1;
    uint64_t sure = 0;
    for (size_t i = 0; i < w->n; i++) {
      if (!w->scan[i]) continue;
      sure += block_index_sure_read(w->rd->blocks, w->tables[i].number, hashes, nhashes, can_read);
      if (search_standalone_budget(w->c, sure) >= candidates) return 1;
    }
  }
  /* Then a sample of the selected tables, spread over them: when the share of their sizes
     that they would read, carried over to every selected table, outweighs the candidates
     WEIGH_MARGIN times over, the index answers. A wrong guess costs at most the candidates'
     validation, which the trial bounds by the selected tables read whole (try_instead). Else
     the other tables are weighed one by one until the bytes outweigh the candidates or none
     is left. */
  size_t m = 0;
  uint64_t whole = 0;
  for (size_t i = 0; i < w->n; i++)
    if (w->scan[i]) m++, whole += w->tables[i].size;
  const size_t stride = m > WEIGH_SAMPLE ? m / WEIGH_SAMPLE : 1;
  uint64_t bytes = 0, sampled = 0;
  for (int pass = 0; pass < 2; pass++) {
    for (size_t i = 0, j = 0; i < w->n; i++) {
      if (!w->scan[i]) continue;
      int in_sample = j % stride == 0 && j / stride < WEIGH_SAMPLE;
      j++;
      if (in_sample != (pass == 0)) continue;
      if (pass == 1 && search_standalone_budget(w->c, bytes) >= candidates) return 1;
      uint64_t b = 0;
      w->rc = table_read_bytes(w->e, w->view, w->rd, &w->tables[i], w->st, &b, w->err);
      if (w->rc != BFH_OK) return 0;
      bytes += b;
      if (pass == 0) sampled += w->tables[i].size;
    }
    if (pass == 0 && m > WEIGH_SAMPLE && sampled > 0 &&
        search_standalone_budget(w->c, (uint64_t)((double)bytes / (double)sampled * (double)whole /
                                                  WEIGH_MARGIN)) >= candidates)
      return 1;
  }
  return search_standalone_budget(w->c, bytes) >= candidates;
}

/* The stand-alone index's answer under trial: *st takes its method and counts when it
   answered; BFH_NOT_FOUND, having reported nothing, when the trial declined. */
static int ask_index(const instead_t *in, const search_standalone_trial_t *trial, bfh_match_fn fn,
                     void *arg, bfh_search_stats *st, err_t *err) {
  bfh_search_stats s;
  int rc = in->pred ? search_standalone_pred(in->c, in->pred, trial, fn, arg, &s, err)
                    : search_standalone_value(in->c, in->val, in->val_len, NULL, trial, fn, arg, &s,
                                              err);
  if (rc == BFH_NOT_FOUND) return rc;
  st->method_used = s.method_used;
  st->entries_scanned = s.entries_scanned;
  st->candidates = s.candidates;
  st->results = s.results;
  st->trusted = s.trusted;
  return rc;
}

/* The first trial's weighing of its candidates (search_standalone_first_worth). */
typedef struct first {
  const search_ctx_t *c;
  const search_pred_t *pred;
  size_t ntables;
} first_t;

static int first_worth(void *arg, uint64_t candidates) {
  const first_t *f = arg;
  return search_standalone_first_worth(f->c, f->pred->nleaves, f->pred->range_pieces, f->ntables,
                                       candidates);
}

/* AUTO's trial of the stand-alone index before the selection, when selecting over n tables
   would cost more than twice the index's seeks (search_standalone_first_budget): it answers
   when its candidates cost less to validate than that selection and the tables it would pass
   (search_standalone_first_worth); BFH_NOT_FOUND, having reported nothing, when the selection
   is too cheap to skip or the candidates too many. */
static int try_first(const instead_t *in, size_t n, bfh_match_fn fn, void *arg,
                     bfh_search_stats *st, err_t *err) {
  if (!in->pred) return BFH_NOT_FOUND; /* a value's selection is its one item's */
  const search_pred_t *p = in->pred;
  if (search_standalone_first_budget(in->c, p->nleaves, expr_leaf_count(p->where), p->range_pieces,
                                     n) == 0)
    return BFH_NOT_FOUND;
  first_t f = {in->c, p, n};
  search_standalone_trial_t trial = {
      search_standalone_first_limit(in->c, p->nleaves, p->range_pieces, n), first_worth, &f};
  return ask_index(in, &trial, fn, arg, st, err);
}

/* AUTO's trial of the stand-alone index after the selection: it answers when reading the
   selected tables would cost more than validating its candidates (index_worth); BFH_NOT_FOUND,
   having reported nothing, when it declined or was not worth asking (a few tables, read by
   blocks, cost less than its seek: search_standalone_after_worth). */
static int try_instead(const instead_t *in, engine_t *e, engine_view_t *view, reader_t *rd,
                       const engine_table_t *tables, size_t n, const uint8_t *scan, bfh_match_fn fn,
                       void *arg, bfh_search_stats *st, err_t *err) {
  /* The tables read whole bound what they can cost: no more candidates are worth reading. */
  uint64_t whole = 0;
  size_t selected = 0;
  for (size_t i = 0; i < n; i++)
    if (scan[i]) whole += tables[i].size, selected++;
  if (!search_standalone_after_worth(in->c, instead_leaves(in), selected, rd->by_blocks))
    return BFH_NOT_FOUND;
  uint64_t budget = search_standalone_budget(in->c, whole);
  if (budget == 0) return BFH_NOT_FOUND;
  weigh_t w = {in->c, e, view, rd, tables, n, scan, st, BFH_OK, err};
  search_standalone_trial_t trial = {budget, index_worth, &w};
  int rc = ask_index(in, &trial, fn, arg, st, err);
  return w.rc != BFH_OK ? w.rc : rc;
}

/* The frame every search shares: take a view, select the tables, scan them and the
   memtables, validate, release the view; time it all. newest: 0 every key, else the newest
   K (scan_newest). instead (may be NULL): AUTO's trial of the stand-alone index, before the
   view and the selection when that would cost more than twice the index's seeks (try_first),
   else between the selection and the reads (try_instead). */
static int run(engine_t *e, uint32_t method_used, select_fn select, const void *sel_arg,
               const instead_t *instead, reader_t *rd, const engine_value_test_t *test,
               uint64_t newest, bfh_match_fn fn, void *arg, bfh_search_stats *out, err_t *err) {
  uint64_t t0 = clock_now_ns();
  bfh_search_stats st;
  memset(&st, 0, sizeof st);
  st.method_used = method_used;
  engine_view_t *view = NULL;
  int rc = BFH_OK, answered = 0;
  /* The first trial needs no view (the index validates on the newest state): the tables the
     planner counts (search_tables_planned) stand for the view's, and one answered takes
     none. */
  if (instead && !newest) {
    rc = try_first(instead, search_tables_planned(instead->c), fn, arg, &st, err);
    answered = rc != BFH_NOT_FOUND;
    if (!answered) rc = BFH_OK;
  }
  if (rc == BFH_OK && !answered) rc = engine_view_acquire(e, &view, err);
  if (rc == BFH_OK && !answered) {
    const engine_table_t *tables;
    size_t n = engine_view_tables(e, view, &tables);
    st.tables_live = (uint32_t)n;
    uint8_t *scan = malloc(n ? n : 1);
    if (!scan) rc = err_set(err, BFH_E_NOMEM, "search: out of memory");
    if (rc == BFH_OK) rc = select(sel_arg, view, tables, n, scan, &st, err);
    if (rc == BFH_OK && instead && !newest) {
      rc = try_instead(instead, e, view, rd, tables, n, scan, fn, arg, &st, err);
      answered = rc != BFH_NOT_FOUND;
      if (!answered) rc = BFH_OK;
    }
    if (rc == BFH_OK && !answered && newest)
      rc = scan_newest(e, view, rd, tables, n, scan, newest, test, fn, arg, &st, err);
    else if (rc == BFH_OK && !answered)
      rc = scan_and_validate(e, view, rd, tables, n, scan, test, fn, arg, &st, err);
    free(scan);
    engine_view_release(e, view);
  }
  st.elapsed_ns = clock_now_ns() - t0;
  if (out) *out = st;
  return rc;
}

typedef struct planned {
  const search_ctx_t *c;
  const search_query_t *q;
} planned_t;

static void add_filter_tests(bfh_search_stats *st, const bfh_search_stats *leaf) {
  st->internal_probes += leaf->internal_probes;
  st->leaf_probes += leaf->leaf_probes;
  st->leaf_positives += leaf->leaf_positives;
  st->internal_maybe += leaf->internal_maybe;
}

/* The zones (doc/query.md "Zones"): a leaf whose terms' codes all lie in [zone_lo, zone_hi]
   is false at a table whose map keeps a zone of the leaf's attribute that meets none of them
   (the table holds no term of it with such a code). yes holds the leaves' answers per table
   (leaf i's at yes[i * n]), scan the tree's over them; only the selected tables are looked at,
   scan is evaluated again where a zone turned a leaf false, and st->tables_zoned counts the
   tables that leaves unread. */
static int apply_zones(const planned_t *p, const engine_table_t *tables, size_t n, uint8_t *yes,
                       uint8_t *scan, bfh_search_stats *st, err_t *err) {
  const search_pred_t *pred = p->q->pred;
  size_t nl = pred->nleaves;
  int any = 0;
  for (size_t i = 0; i < nl; i++) any |= pred->zone_id[i] != 0;
  size_t m = 0; /* only the selected tables can be ruled out */
  for (size_t j = 0; j < n; j++) m += scan[j];
  if (!any || m == 0) return BFH_OK;
  uint64_t *numbers = malloc(m * 3 * sizeof *numbers);
  size_t *at = malloc(m * sizeof *at);
  uint8_t *changed = calloc(m, 1);
  if (!numbers || !at || !changed) {
    free(numbers);
    free(at);
    free(changed);
    return err_set(err, BFH_E_NOMEM, "search: out of memory for %zu tables' zones", m);
  }
  uint64_t *lo = numbers + m, *hi = numbers + 2 * m;
  for (size_t j = 0, k = 0; j < n; j++)
    if (scan[j]) at[k] = j, numbers[k++] = tables[j].number;
  block_index_t *bi = value_index_blocks(p->c->index);
  for (size_t i = 0; i < nl; i++) {
    uint64_t id = pred->zone_id[i];
    /* Each attribute's zones once: at its first leaf. */
    int seen = id == 0;
    for (size_t a = 0; a < i && !seen; a++) seen = pred->zone_id[a] == id;
    if (seen) continue;
    block_index_zones(bi, numbers, m, id, lo, hi);
    for (size_t l = i; l < nl; l++) {
      if (pred->zone_id[l] != id) continue;
      for (size_t k = 0; k < m; k++) {
        uint8_t *y = &yes[l * n + at[k]];
        if (!*y || (pred->zone_lo[l] <= hi[k] && lo[k] <= pred->zone_hi[l])) continue;
        *y = 0;
        changed[k] = 1;
      }
    }
  }
  for (size_t k = 0; k < m; k++) {
    if (!changed[k]) continue;
    size_t j = at[k];
    scan[j] = (uint8_t)search_pred_eval(pred, yes + j, n, yes + nl * n);
    st->tables_zoned += !scan[j];
  }
  free(numbers);
  free(at);
  free(changed);
  return BFH_OK;
}

/* The range filters (doc/query.md "Range filters"): after the zones, the item leaves of one
   written range are false at a selected table whose map's range filter of the range's
   attribute holds no code in the least zone_lo to the largest zone_hi of those leaves (the
   range's codes its items cover). The filter's head is in memory; a piece of its body is read
   where the head cannot decide (block_index_range). The tree is evaluated again where a leaf
   turned false; st->tables_ranged counts the tables that leaves unread and
   st->range_pieces_read the pieces read (their bytes in bytes_read). A piece that does not
   check out drops the table's map (the table is then read whole, as after a damaged chunk). */
static int apply_ranges(const planned_t *p, engine_view_t *view, const engine_table_t *tables,
                        size_t n, uint8_t *yes, uint8_t *scan, bfh_search_stats *st, err_t *err) {
  const search_pred_t *pred = p->q->pred;
  const search_pred_range_t *g = pred->ranges;
  size_t nl = pred->nleaves, ng = pred->nranges;
  block_index_t *bi = value_index_blocks(p->c->index);
  engine_t *e = p->c->engine;
  int rc = BFH_OK;
  for (size_t j = 0; j < n && ng > 0 && rc == BFH_OK; j++) {
    if (!scan[j]) continue;
    map_read_t mr = {e, view, tables[j].number};
    block_map_io_t io = {engine_has_read_meta(e) ? read_map_chunk : NULL, &mr, 0, 0, 0, NULL};
    int changed = 0;
    for (size_t k = 0; k < ng && rc == BFH_OK; k++) {
      int live = 0; /* an item of the range still says maybe here */
      for (size_t i = 0; i < nl && !live; i++)
        live = pred->zone_src[i] == g[k].src && yes[i * n + j];
      if (!live || g[k].lo > g[k].hi || g[k].exact) continue;
      err_t why;
      err_clear(&why);
      int held = block_index_range(bi, tables[j].number, g[k].zone_id, g[k].lo, g[k].hi, &io, &why);
      if (held == BFH_E_CORRUPT) {
        block_index_drop_damaged(bi, tables[j].number, &why);
        continue;
      }
      if (held < 0) rc = err_set(err, held, "%s", why.msg);
      if (held != 0) continue;
      for (size_t i = 0; i < nl; i++)
        if (pred->zone_src[i] == g[k].src) yes[i * n + j] = 0;
      changed = 1;
    }
    st->range_pieces_read += io.range_pieces_read;
    st->bytes_read += io.bytes_read;
    if (changed) {
      scan[j] = (uint8_t)search_pred_eval(pred, yes + j, n, yes + nl * n);
      st->tables_ranged += !scan[j];
    }
  }
  return rc;
}

/* The provider's selection for each leaf of the predicate (its probe), combined per table by
   the tree, and narrowed by the zones and the range filters: a table is read when the
   predicate may hold there. */
static int select_pred(const planned_t *p, engine_view_t *view, const engine_table_t *tables,
                       size_t n, uint8_t *scan, bfh_search_stats *st, err_t *err) {
  const search_pred_t *pred = p->q->pred;
  size_t nl = pred->nleaves;
  uint8_t *yes = malloc(nl * (n ? n : 1) + nl);
  if (!yes) return err_set(err, BFH_E_NOMEM, "search: out of memory for %zu terms", nl);
  search_query_t leaf = *p->q;
  leaf.pred = NULL;
  int rc = BFH_OK;
  for (size_t i = 0; i < nl && rc == BFH_OK; i++) {
    bfh_search_stats ls;
    memset(&ls, 0, sizeof ls);
    leaf.hash = pred->hash[i];
    leaf.probe = pred->probe[i];
    rc = p->q->provider->select(p->c, &leaf, tables, n, yes + i * n, &ls, err);
    add_filter_tests(st, &ls);
  }
  for (size_t j = 0; j < n && rc == BFH_OK; j++)
    scan[j] = (uint8_t)search_pred_eval(pred, yes + j, n, yes + nl * n);
  if (rc == BFH_OK && p->c->index) rc = apply_zones(p, tables, n, yes, scan, st, err);
  if (rc == BFH_OK && p->c->index) rc = apply_ranges(p, view, tables, n, yes, scan, st, err);
  free(yes);
  return rc;
}

static int select_planned(const void *arg, engine_view_t *view, const engine_table_t *tables,
                          size_t n, uint8_t *scan, bfh_search_stats *st, err_t *err) {
  const planned_t *p = arg;
  if (p->q->provider->select_in_view)
    return p->q->provider->select_in_view(p->c, p->q, view, tables, n, scan, st, err);
  if (p->q->pred && (p->q->provider->caps & SEARCH_CAP_INDEX))
    return select_pred(p, view, tables, n, scan, st, err);
  return p->q->provider->select(p->c, p->q, tables, n, scan, st, err);
}

static int execute_once(const search_ctx_t *c, const search_query_t *q, bfh_match_fn fn, void *arg,
                        bfh_search_stats *out, err_t *err) {
  if (q->provider->caps & SEARCH_CAP_OWN_STORE) return q->provider->search(c, q, fn, arg, out, err);
  planned_t p = {c, q};
  reader_t rd = {.by_blocks = q->by_blocks, .hash = q->hash, .pred = q->pred};
  if (q->by_blocks) rd.blocks = value_index_blocks(c->index);
  engine_value_test_t test = engine_value_test_equal(q->val, q->val_len);
  search_pred_match_t m;
  uint8_t *marks = NULL;
  if (q->pred) {
    size_t nl = q->pred->nscratch ? q->pred->nscratch : 1;
    marks = malloc(nl);
    rd.marks = malloc(nl);
    if (!marks || !rd.marks) {
      free(marks);
      reader_release(&rd);
      if (out) memset(out, 0, sizeof *out);
      return err_set(err, BFH_E_NOMEM, "search: out of memory for a predicate");
    }
    search_pred_test(q->pred, marks, &m, &test);
  }
  instead_t in = {c, q->pred, q->val, q->val_len};
  int rc = run(c->engine, (uint32_t)q->provider->method, select_planned, &p,
               q->try_standalone ? &in : NULL, &rd, &test, q->newest, fn, arg, out, err);
  reader_release(&rd);
  free(marks);
  return rc;
}

/* ---- Starting over (engine.h: the retry capability) ------------------------------------
   An engine whose files another process deletes under its views (the read-only engines) says
   BFH_E_BUSY when a file of the view vanished; the search then runs again with the same plan
   and hash from a new view, at most engine_search_attempts times. Its keys are collected and
   reported only once an attempt read every table it listed, so a key is never reported by
   an attempt that could have missed others. */

static int execute_retrying(const search_ctx_t *c, const search_query_t *q, int attempts,
                            bfh_match_fn fn, void *arg, bfh_search_stats *st, err_t *err) {
  uint64_t t0 = clock_now_ns();
  key_list_t f = {0};
  bfh_search_stats s;
  memset(&s, 0, sizeof s);
  int rc = BFH_E_BUSY;
  for (int attempt = 0; attempt < attempts && rc == BFH_E_BUSY; attempt++) {
    if (attempt) engine_retried(c->engine);
    key_list_clear(&f);
    rc = execute_once(c, q, key_list_add, &f, &s, err); /* the same plan and hash every time */
    if (rc == BFH_OK && f.nomem) rc = err_set(err, BFH_E_NOMEM, "search: out of memory for keys");
  }
  if (rc == BFH_E_BUSY)
    err_prefix(err,
               "search gave up after %d attempts (the database changed under each): ", attempts);
  s.results = 0;
  for (size_t i = 0; rc == BFH_OK && i < f.n; i++) {
    s.results++;
    if (fn && fn(arg, f.v[i].bytes, f.v[i].len)) break;
  }
  key_list_release(&f);
  s.elapsed_ns = clock_now_ns() - t0;
  if (st) *st = s;
  return rc;
}

int search_execute(const search_ctx_t *c, const search_query_t *q, bfh_match_fn fn, void *arg,
                   bfh_search_stats *out, err_t *err) {
  int attempts = engine_search_attempts(c->engine);
  if (attempts > 1) return execute_retrying(c, q, attempts, fn, arg, out, err);
  return execute_once(c, q, fn, arg, out, err);
}

int search_run(engine_t *e, value_index_t *vi, const void *val, size_t val_len, bfh_method method,
               bfh_match_fn fn, void *arg, bfh_search_stats *out, err_t *err) {
  search_ctx_t c = {e, vi, NULL, NULL};
  search_query_t q;
  int rc = search_prepare(&c, val, val_len, method, 0, &q, err);
  if (rc != BFH_OK) {
    if (out) memset(out, 0, sizeof *out);
    return rc;
  }
  return search_execute(&c, &q, fn, arg, out, err);
}

typedef struct given_tables {
  const uint64_t *numbers; /* ascending */
  size_t n;
} given_tables_t;

static int select_given(const void *arg, engine_view_t *view, const engine_table_t *tables,
                        size_t n, uint8_t *scan, bfh_search_stats *st, err_t *err) {
  (void)view, (void)st, (void)err;
  const given_tables_t *g = arg;
  for (size_t i = 0; i < n; i++)
    scan[i] = (uint8_t)u64_sorted_contains(g->numbers, g->n, tables[i].number);
  return BFH_OK;
}

int search_run_tables(engine_t *e, const void *val, size_t val_len, const uint64_t *numbers,
                      size_t nn, bfh_match_fn fn, void *arg, bfh_search_stats *out, err_t *err) {
  given_tables_t g = {numbers, nn};
  reader_t rd = {.by_blocks = 0};
  engine_value_test_t test = engine_value_test_equal(val, val_len);
  return run(e, SEARCH_ORACLE, select_given, &g, NULL, &rd, &test, 0, fn, arg, out, err);
}

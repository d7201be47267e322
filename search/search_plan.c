/* The search providers and the planner; see search_plan.h. */
#include "search/search_plan.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- The cost model (doc/search.md "AUTO") --------------------------------------------- */

/* The cost of a search by each provider is the cost of selecting plus the cost of reading
   each table selected, in ns. Measured on the 2-core test machine, release build; only their
   ratios matter:
     leaf probe, in memory: 37-50 ns (hierarchy_bench, 119 and 599 leaves of 2,000,000 bits);
     on disk: ~5 us (search_bench, LEAVES with leaves on disk: +0.62 ms for 126 leaves);
     bit-sliced index: 35 ns at 119 leaves, 290 ns at 599 (hierarchy_bench): k rows of
     ~12 ns plus ~9 ns per 64 leaves;
     a 2 MiB table read whole: ~250 us (`bfh run beyond`, 1M entries: SCAN 3.5 ms over
     13 tables);
     a table read through its block filter: ~5 us (the same run: AUTO 7.7 us per present
     value, 1.2 us per absent one, 5.6 blocks: ~1 us a block);
     a table read through its value-to-block map (the lean layout): one 2 KiB chunk of the
     map, read as a block is (~1 us), and only the blocks it names: none for a table its
     leaf passed falsely, one for the table holding the value: ~2 us a selected table, as
     the model counts them (the false ones and half a true one per search). */
#define COST_LEAF_NS 45.0
#define COST_LEAF_DISK_NS 5000.0
#define COST_SLICED_ROW_NS 12.0
#define COST_SLICED_WORD_NS 9.0
#define COST_TABLE_NS 250000.0
#define COST_BLOCKS_NS 5000.0
#define COST_MAP_NS 2000.0

/* A predicate's costs, from `bfh run attributes --scale medium`
   (measurements/query/attributes-1000000.csv; 1M JSON values of three attributes, 309 tables
   of ~205 KiB, about 63 MB): SCAN tests every value's terms, 0.364 s for a 1% term, ~5.7 ns a
   table byte; STANDALONE validates each candidate with a get and the test, 0.111 s for its
   10,000 keys with their postings, ~11.1 us a key: the prior of candidate_ns (below), which a
   database's own measure replaces. Only their ratio matters. */
#define COST_PRED_TABLE_BYTE_NS 5.7
#define COST_PRED_CANDIDATE_NS 11100.0

/* A candidate's validation is a get and the predicate's test: what it costs depends on the
   database (its levels, its values' format, what the caches hold), so the planner weighs
   candidates by what this database's own searches measured (standalone_candidate_ns), kept
   within [COST_PRED_CANDIDATE_NS / 16, 4 COST_PRED_CANDIDATE_NS] so that one odd measurement
   cannot swing the plan far, and by COST_PRED_CANDIDATE_NS before any. At 10M records of
   `NAME,N` (bench/ranges_bench.c) the searches measured about 0.8 us a candidate with the
   blocks in the block cache and 5 us with them in the page cache. */
static double candidate_ns(const search_ctx_t *c) {
  double ns = c->standalone ? standalone_candidate_ns(c->standalone) : 0;
  if (ns <= 0) return COST_PRED_CANDIDATE_NS;
  if (ns < COST_PRED_CANDIDATE_NS / 16) return COST_PRED_CANDIDATE_NS / 16;
  if (ns > 4 * COST_PRED_CANDIDATE_NS) return 4 * COST_PRED_CANDIDATE_NS;
  return ns;
}

/* Selecting a predicate's tables costs each filter item a pass over the view's tables
   (value_index_select: the index's candidates, each table's leaf and map sketch): about
   120-200 ns an item and a table, from bench/ranges_bench at 10M records (223-226 tables),
   where AUTO's empty range of 1,024 codes (34 items) took 0.9-1.5 ms more than STANDALONE,
   which selects nothing. The stand-alone index is tried first when that selection would cost
   FIRST_OVER_SEEK times its seeks' estimate (one per leaf of the predicate as written: a range
   is one seek and a scan, an IN list one seek per value), which counts runs, not their block
   reads (a seek measured 15-21 us where the estimate says 9-15). A trial that declines has
   cost the seeks and a few postings. The rate is a cover's: its items are held in most tables
   (each dyadic interval of values spread over every table), so each table passes the slices
   and is asked its leaf and sketch. A predicate of terms only (no cover: as many items as
   leaves written) selects first: a term that no table holds is ruled out by the slices for
   ~10 ns a table (an absent equality over 313 tables at 1M: 3.3 us, against 20 us for the
   index's seek), and one that many hold is weighed after the selection. */
#define COST_PRED_SELECT_ITEM_TABLE_NS 150.0
#define FIRST_OVER_SEEK 2.0
/* A piece of a table's range filter read by the selection (search_pred_t.range_pieces): a
   pread of about 600 bytes through the table and its CRC. bench/ranges_bench at 10M records
   with one coarse level (`LEVELS=24 scripts/ranges-warm.sh`, 220 tables): SLICED's empty
   range of 1,024 codes reads about 263 pieces, and took 5.5 to 23 us a piece with the machine
   quiet and busy. The low end is taken: the index goes first only where the pieces surely
   cost more than its seeks. */
#define COST_RANGE_PIECE_NS 5500.0

/* ---- The readers -------------------------------------------------------------------------- */

typedef struct search_reader {
  const char *name;
  int by_blocks;
  double table_ns; /* reading one selected table */
  int (*available)(const search_ctx_t *c);
} search_reader_t;

/* Tables bound to the persisted index count: a selected one gets its map head from the file
   before it is read. */
static int has_block_filters(const search_ctx_t *c) {
  uint64_t tables, maps;
  block_index_counts(value_index_blocks(c->index), &tables, &maps);
  return tables > 0 || value_index_persisted_bound(c->index) > 0;
}

/* Cheapest first: AUTO takes the first available. */
static const search_reader_t READERS[] = {
    {"blocks", 1, COST_BLOCKS_NS, has_block_filters},
    {"whole", 0, COST_TABLE_NS, NULL},
};
#define NREADERS (sizeof READERS / sizeof READERS[0])

/* ---- The providers ------------------------------------------------------------------------ */

static int has_index(const search_ctx_t *c) {
  return c->index != NULL;
}

static int has_standalone(const search_ctx_t *c) {
  return c->standalone != NULL;
}

/* While leaves load, a filter method reads the loading tables as SCAN would, through their
   block filters, and skips those whose leaf says no: SCAN is charged one leaf probe per
   loading table more, so that it does not win that tie. */
static double cost_scan(const search_ctx_t *c, const search_costs_t *k) {
  (void)c;
  return (k->leaves + k->loading) * k->per_table + k->loading * COST_LEAF_NS;
}

/* A filter method also reads every table whose leaf is still loading, through its block
   filter (index_sync.h "Loading at open"). */
static double cost_leaves(const search_ctx_t *c, const search_costs_t *k) {
  (void)c;
  if (k->leaves == 0 && k->loading == 0) return HUGE_VAL;
  return k->leaves * (k->leaves_on_disk ? COST_LEAF_DISK_NS : COST_LEAF_NS) +
         (k->selected + k->loading) * k->per_table;
}

static double cost_sliced(const search_ctx_t *c, const search_costs_t *k) {
  (void)c;
  if (k->leaves == 0 && k->loading == 0) return HUGE_VAL;
  return k->k * (COST_SLICED_ROW_NS + (k->leaves / 64.0) * COST_SLICED_WORD_NS) +
         (k->selected + k->loading) * k->per_table;
}

static double cost_standalone(const search_ctx_t *c, const search_costs_t *k) {
  (void)k;
  return standalone_cost_ns(c->standalone);
}

static uint64_t standalone_seed(const search_ctx_t *c) {
  (void)c;
  return standalone_value_seed();
}

static int select_all(const search_ctx_t *c, const search_query_t *q, const engine_table_t *tables,
                      size_t n, uint8_t *scan, bfh_search_stats *st, err_t *err) {
  (void)c, (void)q, (void)tables, (void)st, (void)err;
  memset(scan, 1, n);
  return BFH_OK;
}

/* The index's positives by `by` among the view's tables, and every table the index has no
   leaf for (value_index_select). */
static int select_by(value_index_by_fn by, const search_ctx_t *c, const search_query_t *q,
                     const engine_table_t *tables, size_t n, uint8_t *scan, bfh_search_stats *st,
                     err_t *err) {
  uint64_t *numbers = malloc((n ? n : 1) * sizeof *numbers);
  if (!numbers) return err_set(err, BFH_E_NOMEM, "search: out of memory");
  for (size_t i = 0; i < n; i++) numbers[i] = tables[i].number;
  probe_stats_t ps = {0, 0, 0, 0};
  int rc = value_index_select(c->index, by, &q->probe, numbers, n, scan, &ps, err);
  st->internal_probes = ps.internal_probes;
  st->leaf_probes = ps.leaf_probes;
  st->leaf_positives = ps.leaf_positives;
  st->internal_maybe = ps.internal_maybe;
  free(numbers);
  return rc;
}

#define SELECT_BY(fn, by)                                                                     \
  static int fn(const search_ctx_t *c, const search_query_t *q, const engine_table_t *tables, \
                size_t n, uint8_t *scan, bfh_search_stats *st, err_t *err) {                  \
    return select_by(by, c, q, tables, n, scan, st, err);                                     \
  }
SELECT_BY(select_leaves, value_index_by_leaves)
SELECT_BY(select_hierarchy, value_index_by_hierarchy)
SELECT_BY(select_sliced, value_index_by_sliced)

static int search_standalone(const search_ctx_t *c, const search_query_t *q, bfh_match_fn fn,
                             void *arg, bfh_search_stats *st, err_t *err) {
  if (q->pred) return search_standalone_pred(c, q->pred, NULL, fn, arg, st, err);
  return search_standalone_value(c, q->val, q->val_len, &q->hash, NULL, fn, arg, st, err);
}

/* ---- The Cuckoo Index (doc/search.md "The Cuckoo Index") ---------------------------------- */

static int has_cuckoo(const search_ctx_t *c) {
  return c->cuckoo != NULL;
}

static uint64_t cuckoo_seed(const search_ctx_t *c) {
  return c->cuckoo ? cuckoo_index_seed(c->cuckoo) : BFH_DEFAULT_SEED;
}

typedef struct key_acc {
  uint32_t *v;
  size_t n, cap;
  int nomem;
  int read; /* the table's values were read: add it (even with none) */
} key_acc_t;

static void key_acc_push(void *arg, uint64_t hash) {
  key_acc_t *a = arg;
  if (a->n == a->cap) {
    size_t cap = a->cap ? a->cap * 2 : 4096;
    uint32_t *v = realloc(a->v, cap * sizeof *v);
    if (!v) {
      a->nomem = 1;
      return;
    }
    a->v = v;
    a->cap = cap;
  }
  a->v[a->n++] = cuckoo_index_key(hash);
}

/* Brings the index to the view's tables: drops those not in it, adds those not in the index
   from their values (engine table_hashes). A table that cannot be read is left out: it is
   scanned, never skipped (its read error comes again from the scan). */
static int cuckoo_catch_up(const search_ctx_t *c, engine_view_t *view, const engine_table_t *tables,
                           size_t n, err_t *err) {
  cuckoo_index_t *ci = c->cuckoo;
  /* The same tables as last time (by a digest: a collision only leaves a table unindexed,
     and so read, or a gone one held, and so memory): nothing to do. */
  uint64_t digest = 0x6375636b6f6full + n;
  for (size_t i = 0; i < n; i++) {
    uint64_t x = (tables[i].number + 1) * 0x9e3779b97f4a7c15ull;
    digest += (x ^ (x >> 29)) * 0xbf58476d1ce4e5b9ull;
  }
  if (digest == cuckoo_index_synced(ci)) return BFH_OK;
  uint64_t *live = malloc((n ? n : 1) * sizeof *live);
  if (!live) return err_set(err, BFH_E_NOMEM, "search: out of memory");
  for (size_t i = 0; i < n; i++) live[i] = tables[i].number;
  qsort(live, n, sizeof *live, u64_compare);
  (void)cuckoo_index_retain(ci, live, n);
  free(live);
  if (!engine_has_table_hashes(c->engine)) return BFH_OK;
  /* Every new table's keys first, then one reserve for all (as if every value were new),
     the adds, and a fit if shared values left the table under half full. */
  key_acc_t *acc = calloc(n ? n : 1, sizeof *acc);
  if (!acc) return err_set(err, BFH_E_NOMEM, "search: out of memory for cuckoo keys");
  int rc = BFH_OK;
  uint64_t total = 0;
  size_t added = 0;
  for (size_t i = 0; i < n && rc == BFH_OK; i++) {
    if (cuckoo_index_contains(ci, tables[i].number)) continue;
    err_t rerr;
    err_clear(&rerr);
    int r = engine_table_hashes(c->engine, view, tables[i].number, cuckoo_index_seed(ci),
                                key_acc_push, &acc[i], NULL, &rerr);
    if (acc[i].nomem) rc = err_set(err, BFH_E_NOMEM, "search: out of memory for cuckoo keys");
    acc[i].read = r == BFH_OK && !acc[i].nomem; /* else not indexed: scanned */
    if (acc[i].read) total += acc[i].n;
  }
  if (rc == BFH_OK && total) {
    cuckoo_index_stats_t cs;
    cuckoo_index_get_stats(ci, &cs);
    if (cuckoo_index_reserve(ci, cs.entries + total) != BFH_OK)
      rc = err_set(err, BFH_E_NOMEM, "search: out of memory for the cuckoo index");
  }
  for (size_t i = 0; i < n && rc == BFH_OK; i++) {
    if (!acc[i].read) continue;
    rc = cuckoo_index_add_table(ci, tables[i].number, acc[i].v, acc[i].n, err);
    added++;
  }
  if (rc == BFH_OK && added && cuckoo_index_fit(ci) != BFH_OK)
    rc = err_set(err, BFH_E_NOMEM, "search: out of memory for the cuckoo index");
  int all = 1;
  for (size_t i = 0; i < n; i++) {
    free(acc[i].v);
    all &= cuckoo_index_contains(ci, tables[i].number);
  }
  free(acc);
  /* Synced only when every table is in: a table that could not be read is tried again. */
  if (rc == BFH_OK && all) cuckoo_index_set_synced(ci, digest);
  return rc;
}

/* The view's tables the Cuckoo Index names for the value, and every table it does not
   hold. One lookup in one structure over all tables: counted as internal_probes = 1 (and
   internal_maybe = 1 when it named any table); no per-table filter is tested. */
static int select_cuckoo(const search_ctx_t *c, const search_query_t *q, engine_view_t *view,
                         const engine_table_t *tables, size_t n, uint8_t *scan,
                         bfh_search_stats *st, err_t *err) {
  cuckoo_index_t *ci = c->cuckoo;
  cuckoo_index_lock(ci);
  int rc = cuckoo_catch_up(c, view, tables, n, err);
  u64vec_t hit;
  u64vec_init(&hit);
  if (rc == BFH_OK && cuckoo_index_lookup(ci, cuckoo_index_key(q->hash), &hit, NULL) != BFH_OK)
    rc = err_set(err, BFH_E_NOMEM, "search: out of memory");
  if (rc == BFH_OK) {
    u64vec_sort(&hit);
    st->internal_probes++;
    st->internal_maybe += hit.n > 0;
    for (size_t i = 0; i < n; i++)
      scan[i] = (uint8_t)(u64_sorted_contains(hit.v, hit.n, tables[i].number) ||
                          !cuckoo_index_contains(ci, tables[i].number));
  }
  cuckoo_index_unlock(ci);
  u64vec_release(&hit);
  return rc;
}

/* In bfh_method order: PROVIDERS[m].method == m. */
static const search_provider_t PROVIDERS[] = {
    {BFH_SEARCH_SCAN, "scan", SEARCH_CAP_AUTO, NULL, NULL, cost_scan, NULL, select_all, NULL, NULL},
    {BFH_SEARCH_LEAVES, "leaves", SEARCH_CAP_AUTO | SEARCH_CAP_INDEX, has_index,
     "value filters (value_filters = 1)", cost_leaves, NULL, select_leaves, NULL, NULL},
    {BFH_SEARCH_HIERARCHY, "hierarchy", SEARCH_CAP_INDEX, has_index,
     "value filters (value_filters = 1)", NULL, NULL, select_hierarchy, NULL, NULL},
    {BFH_SEARCH_SLICED, "sliced", SEARCH_CAP_AUTO | SEARCH_CAP_INDEX, has_index,
     "value filters (value_filters = 1)", cost_sliced, NULL, select_sliced, NULL, NULL},
    {BFH_SEARCH_AUTO, "auto", SEARCH_CAP_PLANNER, NULL, NULL, NULL, NULL, NULL, NULL, NULL},
    {BFH_SEARCH_STANDALONE, "standalone", SEARCH_CAP_AUTO | SEARCH_CAP_OWN_STORE, has_standalone,
     "a handle opened with standalone_index = 1", cost_standalone, standalone_seed, NULL,
     search_standalone, NULL},
    {BFH_SEARCH_CUCKOO, "cuckoo", SEARCH_CAP_STRICT, has_cuckoo,
     "a handle opened with cuckoo_index = 1", NULL, cuckoo_seed, NULL, NULL, select_cuckoo},
};
#define NPROVIDERS (sizeof PROVIDERS / sizeof PROVIDERS[0])

const search_provider_t *search_provider_of(bfh_method method) {
  if ((int)method < 0 || (size_t)method >= NPROVIDERS) return NULL;
  return &PROVIDERS[method];
}

const char *bfh_method_name(bfh_method method) {
  const search_provider_t *p = search_provider_of(method);
  return p ? p->name : NULL;
}

const char *search_methods_list(char *buf, size_t n) {
  size_t at = (size_t)snprintf(buf, n, "0..%zu:", NPROVIDERS - 1);
  for (size_t i = 0; i < NPROVIDERS && at < n; i++)
    at += (size_t)snprintf(buf + at, n - at, "%s %s", i ? "," : "", PROVIDERS[i].name);
  return buf;
}

/* ---- The planner -------------------------------------------------------------------------- */

static int available(const search_provider_t *p, const search_ctx_t *c) {
  if ((p->caps & SEARCH_CAP_INDEX) && !c->index) return 0;
  return !p->available || p->available(c);
}

/* What the cost estimates know, with the cheapest available reader. */
static void gather_costs(const search_ctx_t *c, search_costs_t *k, const search_reader_t **rd) {
  *rd = &READERS[NREADERS - 1];
  for (size_t i = 0; i < NREADERS; i++)
    if (!READERS[i].available || READERS[i].available(c)) {
      *rd = &READERS[i];
      break;
    }
  value_index_stats_t vs;
  value_index_get_plan_stats(c->index, &vs);
  const value_index_params_t *p = value_index_params(c->index);
  /* Tables the persisted index answers for are probed as leaves are (persisted_index.h). */
  k->leaves = (double)(vs.leaves + vs.persisted);
  /* Tables with a block filter and no leaf yet: their leaves are loading. */
  uint64_t tables, maps;
  block_index_counts(value_index_blocks(c->index), &tables, &maps);
  k->loading = tables > vs.leaves ? (double)(tables - vs.leaves) : 0;
  k->fpr = 1.0;
  for (uint32_t i = 0; i < p->k; i++) k->fpr *= vs.probe_fill;
  /* Tables a filter method reads: the false positives, and half the time (present or absent
     value alike) the one table holding the value. */
  k->selected = k->leaves * k->fpr + 0.5;
  if (k->selected > k->leaves) k->selected = k->leaves;
  k->per_table = (*rd)->table_ns;
  /* Tables read through a value-to-block map cost a chunk and the named blocks, the others
     their block filter's reads: the mean over the tables the block index holds. */
  if ((*rd)->by_blocks && maps > 0 && tables >= maps)
    k->per_table =
        ((double)maps * COST_MAP_NS + (double)(tables - maps) * COST_BLOCKS_NS) / (double)tables;
  k->k = p->k;
  k->leaves_on_disk = p->leaves_on_disk;
}

size_t search_tables_planned(const search_ctx_t *c) {
  if (!c->index) return 0;
  value_index_stats_t vs;
  value_index_get_plan_stats(c->index, &vs);
  uint64_t tables, maps, leaves = vs.leaves + vs.persisted;
  block_index_counts(value_index_blocks(c->index), &tables, &maps);
  return (size_t)(leaves > tables ? leaves : tables);
}

/* Fills q's provider, by_blocks and cost_ns for method (known and available). */
static void plan(const search_ctx_t *c, const search_provider_t *asked, search_query_t *q) {
  q->by_blocks = 0;
  q->cost_ns = 0;
  q->provider = asked;
  if (!c->index) {
    /* No leaves: a named method (SCAN) runs as named; AUTO takes the stand-alone index if
       there is one (no embedded estimate: every table would be read), else SCAN. */
    q->cost_ns = HUGE_VAL;
    if (asked->caps & SEARCH_CAP_PLANNER)
      q->provider = c->standalone ? &PROVIDERS[BFH_SEARCH_STANDALONE] : &PROVIDERS[BFH_SEARCH_SCAN];
    return;
  }
  if (!(asked->caps & SEARCH_CAP_PLANNER)) return;
  const search_reader_t *rd;
  search_costs_t k;
  gather_costs(c, &k, &rd);
  /* Table order breaks ties: SCAN first, then the filters, the stand-alone index last (a
     later row is taken only when strictly cheaper). */
  double best = HUGE_VAL;
  const search_provider_t *choice = NULL;
  for (size_t i = 0; i < NPROVIDERS; i++) {
    const search_provider_t *p = &PROVIDERS[i];
    if (!(p->caps & SEARCH_CAP_AUTO) || !p->cost_estimate || !available(p, c)) continue;
    double cost = p->cost_estimate(c, &k);
    if (!choice || cost < best) {
      best = cost;
      choice = p;
    }
  }
  q->provider = choice;
  q->by_blocks = !(choice->caps & SEARCH_CAP_OWN_STORE) && rd->by_blocks;
  q->cost_ns = best;
}

uint64_t search_standalone_budget(const search_ctx_t *c, uint64_t selected_bytes) {
  return (uint64_t)((double)selected_bytes * COST_PRED_TABLE_BYTE_NS / candidate_ns(c));
}

/* The selection's cost that search_standalone_first_budget weighs. */
static double first_select_ns(size_t nitems, size_t range_pieces, size_t ntables) {
  return (double)ntables * ((double)nitems * COST_PRED_SELECT_ITEM_TABLE_NS +
                            (double)range_pieces * COST_RANGE_PIECE_NS);
}

uint64_t search_standalone_first_budget(const search_ctx_t *c, size_t nitems, size_t nwritten,
                                        size_t range_pieces, size_t ntables) {
  if (!c->standalone || (nitems <= nwritten && range_pieces == 0)) return 0;
  double select_ns = first_select_ns(nitems, range_pieces, ntables);
  if (select_ns < FIRST_OVER_SEEK * (double)nwritten * standalone_cost_ns(c->standalone)) return 0;
  return (uint64_t)(select_ns / candidate_ns(c));
}

/* What a table the selection passes surely costs the weighing after it
   (search_standalone_budget's rate): the chunk of its map (2 KiB) and one block (4 KiB), the
   least a table holding a candidate is read by. */
#define FIRST_TABLE_BYTES 6144.0

/* The selection and the tables it would pass, `selected` of them, at what the weighing
   counts. */
static double first_bound_ns(size_t nitems, size_t range_pieces, size_t ntables, double selected) {
  return first_select_ns(nitems, range_pieces, ntables) +
         selected * FIRST_TABLE_BYTES * COST_PRED_TABLE_BYTE_NS;
}

uint64_t search_standalone_first_limit(const search_ctx_t *c, size_t nitems, size_t range_pieces,
                                       size_t ntables) {
  return (uint64_t)(first_bound_ns(nitems, range_pieces, ntables, (double)ntables) /
                    candidate_ns(c));
}

int search_standalone_first_worth(const search_ctx_t *c, size_t nitems, size_t range_pieces,
                                  size_t ntables, uint64_t ncand) {
  if (ntables == 0) return 1;
  /* ncand keys in ntables tables at random: the tables holding at least one. */
  double n = (double)ntables;
  double selected = n * -expm1((double)ncand * log1p(-1.0 / n));
  if (ntables == 1) selected = ncand > 0;
  return (double)ncand * candidate_ns(c) <= first_bound_ns(nitems, range_pieces, ntables, selected);
}

int search_standalone_after_worth(const search_ctx_t *c, size_t nwritten, size_t selected,
                                  int by_blocks) {
  if (!c->standalone || selected == 0) return 0;
  if (!by_blocks) return 1;
  return (double)selected * COST_MAP_NS >= (double)nwritten * standalone_cost_ns(c->standalone);
}

/* The seed the chosen provider's filters hash with. */
static uint64_t query_seed(const search_ctx_t *c, const search_provider_t *p) {
  return p->hash_seed ? p->hash_seed(c)
         : c->index   ? value_index_params(c->index)->seed
                      : BFH_DEFAULT_SEED;
}

/* The table method a search takes instead of a store of its own: LEAVES (through the block
   filters when there are any), or SCAN without value filters. */
static void plan_tables(const search_ctx_t *c, search_query_t *q) {
  q->provider = c->index ? &PROVIDERS[BFH_SEARCH_LEAVES] : &PROVIDERS[BFH_SEARCH_SCAN];
  q->by_blocks = c->index && has_block_filters(c);
}

int search_prepare(const search_ctx_t *c, const void *val, size_t val_len, bfh_method method,
                   uint64_t newest, search_query_t *q, err_t *err) {
  const search_provider_t *asked = search_provider_of(method);
  if (!asked) {
    char list[160];
    return err_set(err, BFH_E_INVALID, "unknown method %d (%s)", (int)method,
                   search_methods_list(list, sizeof list));
  }
  if ((asked->caps & (SEARCH_CAP_OWN_STORE | SEARCH_CAP_STRICT)) && !available(asked, c))
    return err_set(err, BFH_E_UNSUPPORTED, "method %s needs %s", asked->name, asked->unavailable);
  q->val = val;
  q->val_len = val_len;
  q->pred = NULL;
  q->newest = newest;
  q->try_standalone = 0;
  plan(c, asked, q);
  if (newest && (q->provider->caps & SEARCH_CAP_OWN_STORE)) plan_tables(c, q);
  /* A named filter method without an index runs as SCAN (value filters off). */
  if (!c->index && (q->provider->caps & SEARCH_CAP_INDEX))
    q->provider = &PROVIDERS[BFH_SEARCH_SCAN];
  const search_provider_t *p = q->provider;
  /* CUCKOO reads the tables it names through their block filters, the memtables through their
     value index, as AUTO does (its hash is under the value filters' seed). */
  if (p->method == BFH_SEARCH_CUCKOO && c->index && has_block_filters(c)) q->by_blocks = 1;
  /* AUTO's estimates hold a value to a table or two; where the filters select many more (a
     value many keys hold), the stand-alone index, when the database keeps it, may answer for
     less: AUTO asks it once they have selected (search_query_t.try_standalone). */
  q->try_standalone = (asked->caps & SEARCH_CAP_PLANNER) && (p->caps & SEARCH_CAP_INDEX) &&
                      c->standalone && standalone_holds_whole(c->standalone) && !newest;
  q->hash = bfh_value_hash(val, val_len, query_seed(c, p)); /* the one hash of this search */
  q->probe.k = 0;
  if ((p->caps & SEARCH_CAP_INDEX) && c->index) {
    const value_index_params_t *vp = value_index_params(c->index);
    probe_init(&q->probe, q->hash, vp->m, vp->k);
  }
  return BFH_OK;
}

int search_prepare_pred(const search_ctx_t *c, const expr_t *expr, const terms_t *terms,
                        bfh_method method, uint64_t newest, search_pred_t *pred, search_query_t *q,
                        err_t *err) {
  memset(pred, 0, sizeof *pred);
  const search_provider_t *asked = search_provider_of(method);
  if (asked && (asked->caps & SEARCH_CAP_STRICT))
    return err_set(err, BFH_E_UNSUPPORTED,
                   "method %s answers whole values only, not predicates (use auto, scan, "
                   "leaves, hierarchy, sliced or standalone)",
                   asked->name);
  static const uint8_t none = 0;
  int rc = search_prepare(c, &none, 0, method, newest, q, err);
  if (rc != BFH_OK) return rc;
  /* AUTO plans a predicate's search with the cheapest table method (the stand-alone index's
     estimate is a whole value's), and, where the database keeps that index, tries it once
     the filters have selected the tables (search_query_t.try_standalone). STANDALONE, named,
     answers any predicate from its per-attribute indexes, equalities by their terms and
     ranges and prefixes by scans of them (search_standalone_pred.c); for the newest K
     search_prepare has already planned tables. */
  if ((q->provider->caps & SEARCH_CAP_OWN_STORE) && q->provider != asked) plan_tables(c, q);
  q->try_standalone = (asked->caps & SEARCH_CAP_PLANNER) && c->standalone && !newest;
  const search_provider_t *p = q->provider;
  uint64_t m = 0;
  uint32_t k = 0;
  if ((p->caps & SEARCH_CAP_INDEX) && c->index) {
    m = value_index_params(c->index)->m;
    k = value_index_params(c->index)->k;
  }
  rc = search_pred_init(pred, expr, terms, query_seed(c, p), m, k, err);
  if (rc != BFH_OK) return rc;
  /* A plan no filter narrows (a range on an attribute without range items, or wider than
     the probe budget) reads every table and memtable: SCAN, which says so in method_used.
     The stand-alone index reads its own store, whatever the filters hold. */
  if (pred->read_all && !(p->caps & SEARCH_CAP_OWN_STORE)) {
    q->provider = &PROVIDERS[BFH_SEARCH_SCAN];
    q->by_blocks = 0;
  }
  q->pred = pred;
  return BFH_OK;
}

search_plan_t search_plan(value_index_t *index, bfh_method method) {
  search_ctx_t c = {NULL, index, NULL, NULL};
  const search_provider_t *asked = search_provider_of(method);
  if (!asked) asked = &PROVIDERS[BFH_SEARCH_SCAN];
  search_query_t q;
  plan(&c, asked, &q);
  if (!index) q.provider = &PROVIDERS[BFH_SEARCH_SCAN];
  return (search_plan_t){q.provider->method, q.by_blocks, q.cost_ns};
}

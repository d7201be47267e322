/* The search providers and the one planner over them.
 *
 * Every search method is one row of a table (search_plan.c), in the shape of PostgreSQL's
 * index access methods: a provider is its bfh_method, its one name, capability flags and
 * callbacks, among them a cost estimate the planner calls to choose.
 *
 *   method      name         caps                  selects the tables to read by
 *   SCAN        scan         AUTO                  every table of the view
 *   LEAVES      leaves       AUTO, INDEX           testing every leaf (value_index_by_leaves)
 *   HIERARCHY   hierarchy    INDEX                 descending the hierarchy
 *   SLICED      sliced       AUTO, INDEX           ANDing k rows of the bit-sliced index
 *   AUTO        auto         PLANNER               (the planner's choice among the AUTO rows)
 *   STANDALONE  standalone   AUTO, OWN_STORE       (none: a prefix seek in its own store)
 *   CUCKOO      cuckoo       STRICT                looking the value up in the Cuckoo Index
 *                                                  (select_in_view: it indexes the view's
 *                                                  new tables first)
 *
 * A second, smaller table holds the readers, which say how the selected tables and the
 * memtables are read: `whole` (every selected table read whole, the memtables scanned: the
 * paper's methods) and `blocks` (each table through its block filter, the memtables through
 * their value index: what AUTO uses when the tables have block filters).
 *
 * Planning (search_prepare), once per search: a named method runs as named with the whole
 * reader; AUTO asks every available AUTO row for its cost estimate (with the cheapest
 * available reader's cost per table) and takes the cheapest. Then the value is hashed once,
 * bfh_value_hash under the chosen provider's seed, and that hash (and the probe made from it)
 * is passed down to every filter the search touches: leaves, hierarchy, bit-sliced index,
 * block filters, the memtables' value index, the stand-alone index. Nothing below hashes the
 * value again (tests/api/search_hash_test.c counts).
 *
 * Adding a method: one enum value in include/bfh.h, one row here (its select or search
 * callback and, to be chosen by AUTO, a cost estimate), and its line in doc/search.md.
 */
#ifndef BFH_LSM_HOOKS_SEARCH_PLAN_H
#define BFH_LSM_HOOKS_SEARCH_PLAN_H

#include <stddef.h>
#include <stdint.h>

#include "bfh.h"
#include "filters/hash.h"
#include "lsm_hooks/engines/engine.h"
#include "index/standalone.h"
#include "index/cuckoo_index.h"
#include "index/value_index.h"
#include "search/search_pred.h"
#include "util/err.h"

/* What a search runs over. All borrowed. */
typedef struct search_ctx {
  engine_t *engine;
  value_index_t *index;     /* NULL: value filters off (only SCAN runs) */
  standalone_t *standalone; /* NULL: no stand-alone index */
  cuckoo_index_t *cuckoo;   /* NULL: no Cuckoo Index (bfh_options.cuckoo_index) */
} search_ctx_t;

typedef struct search_query search_query_t;

/* Capability flags of a provider. */
#define SEARCH_CAP_AUTO 0x1u      /* AUTO may choose it, by its cost estimate */
#define SEARCH_CAP_INDEX 0x2u     /* selects tables by their leaves: needs the value index */
#define SEARCH_CAP_OWN_STORE 0x4u /* answers from a store of its own (search), not by tables */
#define SEARCH_CAP_PLANNER 0x8u   /* not a provider: asks the planner to choose (AUTO) */
#define SEARCH_CAP_STRICT 0x10u   /* named but not available: BFH_E_UNSUPPORTED (no fallback) */

/* What a cost estimate knows of the index, gathered once per plan. */
typedef struct search_costs {
  double leaves;    /* leaves in the index */
  double loading;   /* tables with a block filter but no leaf yet (loading at open) */
  double fpr;       /* a leaf's false positive rate, fill^k */
  double selected;  /* tables a filter method reads: leaves * fpr + 0.5 (at most leaves) */
  double per_table; /* ns to read one selected table with the chosen reader */
  uint32_t k;       /* probes per filter */
  int leaves_on_disk;
} search_costs_t;

typedef struct search_provider {
  bfh_method method;
  const char *name; /* the method's one name: bfh_method_name, the CLI, the drivers */
  unsigned caps;    /* SEARCH_CAP_* */
  /* Whether it can run on c (NULL: always); `unavailable` says what it needs. */
  int (*available)(const search_ctx_t *c);
  const char *unavailable;
  /* Its cost in ns (only ratios matter; doc/search.md "AUTO"); NULL: AUTO never picks it. */
  double (*cost_estimate)(const search_ctx_t *c, const search_costs_t *k);
  /* The seed its filters hash values with (NULL: the value index's). */
  uint64_t (*hash_seed)(const search_ctx_t *c);
  /* Table selectors: scan[i] = 1 for every tables[i] to read; adds filter tests to st. */
  int (*select)(const search_ctx_t *c, const search_query_t *q, const engine_table_t *tables,
                size_t n, uint8_t *scan, bfh_search_stats *st, err_t *err);
  /* SEARCH_CAP_OWN_STORE: the whole search (validation included). */
  int (*search)(const search_ctx_t *c, const search_query_t *q, bfh_match_fn fn, void *arg,
                bfh_search_stats *st, err_t *err);
  /* A table selector that also needs the search's view (to read tables; NULL: select). */
  int (*select_in_view)(const search_ctx_t *c, const search_query_t *q, engine_view_t *view,
                        const engine_table_t *tables, size_t n, uint8_t *scan, bfh_search_stats *st,
                        err_t *err);
} search_provider_t;

/* AUTO's trial of the stand-alone index for a predicate (search.c): the index answers only
   if it has at most max_candidates keys to validate and worth(arg, candidates) says that
   validating them costs less than the tables. */
typedef struct search_standalone_trial {
  uint64_t max_candidates;
  int (*worth)(void *arg, uint64_t candidates);
  void *arg;
} search_standalone_trial_t;

/* BFH_SEARCH_STANDALONE for a predicate (search_standalone_pred.c): the keys the stand-alone
   index holds under the terms that satisfy the leaves of a cover of the predicate as written
   (pred->where), narrowed by the other leaves' postings, each validated against the whole
   predicate, or taken on the index's word where it can answer for it (doc/standalone.md
   "Exact answers"). trial NULL: always; else, when the trial fails, BFH_NOT_FOUND before any
   key is reported (*out counts the index entries read). out (may be NULL): the method, the
   entries read, candidates, results, trusted and the time. */
int search_standalone_pred(const search_ctx_t *c, const search_pred_t *pred,
                           const search_standalone_trial_t *trial, bfh_match_fn fn, void *arg,
                           bfh_search_stats *out, err_t *err);

/* BFH_SEARCH_STANDALONE for the whole value val[0, val_len), and AUTO's trial of the index
   for it, as search_standalone_pred is for a predicate: the keys the index holds under it,
   and when the trial (NULL: none) takes them, their answer (BFH_NOT_FOUND before any is
   reported when it declines: more than max_candidates, or not worth). hash (may be NULL):
   the value's hash under standalone_value_seed, the planner's one hash of the search (used
   only for a value held by its hash). out (may be NULL) as search_standalone_pred fills it. */
int search_standalone_value(const search_ctx_t *c, const void *val, size_t val_len,
                            const uint64_t *hash, const search_standalone_trial_t *trial,
                            bfh_match_fn fn, void *arg, bfh_search_stats *out, err_t *err);

/* A planned search: made by search_prepare, run by search_execute (any number of times: a
   read-only search that restarts keeps its plan and its hash). */
struct search_query {
  const void *val; /* borrowed: must outlive the query */
  size_t val_len;
  /* A search by a predicate (search_pred.h; borrowed, must outlive the query): val is then
     unused, and hash and probe are the pred's per leaf. NULL: a whole-value search of val. */
  const search_pred_t *pred;
  const search_provider_t *provider; /* the chosen one: never AUTO */
  int by_blocks;   /* the blocks reader: tables through block filters, memtables by index */
  double cost_ns;  /* AUTO's estimate; 0 for a named method, HUGE_VAL without an index */
  uint64_t hash;   /* the value's one hash, bfh_value_hash under the provider's seed */
  probe_t probe;   /* the k positions from hash (providers with SEARCH_CAP_INDEX) */
  uint64_t newest; /* 0: every key; K: the K whose latest write is newest, newest first */
  /* AUTO's search, of a predicate or a whole value, over a database that keeps the
     stand-alone index (of whole values, for a whole value): once the filters selected the
     tables, the index answers instead when its candidates cost less to validate than those
     tables to read (search_standalone_budget). */
  int try_standalone;
};

/* For AUTO's trial: the most candidates the stand-alone index of c may validate for a
   predicate and still cost less than reading selected_bytes of tables by it (0: none; the
   tables are read), each candidate at what this database's validations measured. */
uint64_t search_standalone_budget(const search_ctx_t *c, uint64_t selected_bytes);
/* For AUTO's trial after the selection: whether the stand-alone index is worth asking
   instead of reading the selected tables, 0 when none is selected or when reading them by
   blocks (by_blocks), a map chunk and the blocks it names each, would cost less than the
   index's seeks, one per leaf of the predicate as written (nwritten). A point query's table or
   two is read, not the index's seek paid on top of their selection. */
int search_standalone_after_worth(const search_ctx_t *c, size_t nwritten, size_t selected,
                                  int by_blocks);
/* For AUTO's trial before the selection: when selecting over ntables tables for a predicate
   of nitems filter items, more than its nwritten leaves as written (a range's cover), with
   range_pieces pieces of each table's range filters to read (search_pred_t.range_pieces),
   would cost much more than the stand-alone index's seeks, one per leaf as written, the most
   candidates the index may validate for less than that selection alone; 0 when the
   selection is too cheap to be worth skipping, or the predicate has neither a cover nor a
   range filter to read (the trial comes after it, as above). */
uint64_t search_standalone_first_budget(const search_ctx_t *c, size_t nitems, size_t nwritten,
                                        size_t range_pieces, size_t ntables);

/* The tables the planner's estimates count: those the value index holds a leaf of or the
   persisted index answers for, or the block index holds a map or block filter of, whichever
   are more (0 without value filters). */
size_t search_tables_planned(const search_ctx_t *c);
/* The first trial's answer once the index found ncand candidates (after a nonzero
   search_standalone_first_budget for the same predicate): 1 when validating them costs less
   than the selection plus what the weighing after it (search_standalone_budget) would count
   at least for the tables the selection would pass, those holding the candidates, so that
   the index would answer after the selection too. ncand keys spread over ntables tables are
   taken to fall in ntables (1 - (1 - 1/ntables)^ncand) of them, each surely read by a map
   chunk and one block. */
int search_standalone_first_worth(const search_ctx_t *c, size_t nitems, size_t range_pieces,
                                  size_t ntables, uint64_t ncand);
/* The most candidates search_standalone_first_worth can take (every table selected): the
   first trial reads no more postings than that many candidates need. */
uint64_t search_standalone_first_limit(const search_ctx_t *c, size_t nitems, size_t range_pieces,
                                       size_t ntables);

/* The row of method, or NULL for a value that names no method. */
const search_provider_t *search_provider_of(bfh_method method);
/* "0..5: scan, leaves, ..." for a message: the methods in enum order. buf gets at most n
   bytes, NUL-terminated; returns buf. */
const char *search_methods_list(char *buf, size_t n);

/* Plans the search of val by method over c for the newest `newest` keys (0: every key) and
   hashes val once: fills *q. A store of its own (STANDALONE) knows no sequence numbers: the
   newest K, asked of it, runs as the table method AUTO would take without it (LEAVES, through
   the block filters when there are any; SCAN without value filters), and method_used says so.
   BFH_OK; BFH_E_INVALID for an unknown method; BFH_E_UNSUPPORTED for a method c cannot run
   (the message says what it needs). */
int search_prepare(const search_ctx_t *c, const void *val, size_t val_len, bfh_method method,
                   uint64_t newest, search_query_t *q, err_t *err);
/* search_prepare for the predicate expr (bound to c's declared attributes terms, NULL for
   none): the same plan, and *pred (the caller's, released with search_pred_release whatever
   the result) filled with each leaf's hash under the chosen provider's seed; a plan no filter
   narrows (search_pred_t.read_all) runs as SCAN. STANDALONE, named, answers every predicate
   from its per-attribute indexes (search_standalone_pred: equalities, ranges and prefixes),
   except the newest K, which runs as AUTO would run it. AUTO plans a table method for a
   predicate and, where the stand-alone index is kept, tries it after the selection
   (search_query_t.try_standalone); CUCKOO answers whole values only: BFH_E_UNSUPPORTED
   saying so. */
int search_prepare_pred(const search_ctx_t *c, const expr_t *expr, const terms_t *terms,
                        bfh_method method, uint64_t newest, search_pred_t *pred, search_query_t *q,
                        err_t *err);

/* How a search by method would run over an engine with index (no stand-alone index): the
   table selection (never AUTO), whether by blocks, and AUTO's estimate. Hashes nothing. */
typedef struct search_plan {
  bfh_method method;
  int by_blocks;
  double cost_ns;
} search_plan_t;
search_plan_t search_plan(value_index_t *index, bfh_method method);

#endif

/* Non-key search (the paper's Algorithms 1-3) over any engine_t.
 *
 *   1. view = engine view (a consistent set of live tables and memtables)
 *   2. (search_prepare, search_plan.h, before the view) the plan: the provider and reader;
 *      the value's one hash and its k bit positions (hash sharing), passed down to every
 *      filter below
 *   3. tables to read, by the provider's select: SCAN: every table of the view; LEAVES /
 *      HIERARCHY / SLICED: the tables whose leaf says maybe by that method, plus every table
 *      of the view the index has no leaf for (not indexed yet, or no readable filter: never
 *      skipped)
 *   4. scan those tables, then the memtables, for entries whose value equals v; collect the
 *      keys (each once)
 *   5. validate every key against the latest version (engine get: live, value == v) and
 *      report it; fn returning nonzero stops the search early
 * For the newest K (search_query_t.newest) steps 4 and 5 change (search.c "The newest K"):
 * the memtables first, then the tables by decreasing max_seq, validating as it goes and
 * stopping once K keys that pass are newer than every unread table; then the K newest are
 * reported, newest first.
 * The four named methods are the paper's: they read each selected table whole and scan the
 * memtables. BFH_SEARCH_AUTO goes beyond it (search_plan.h, doc/search.md "AUTO"): it picks
 * the cheapest provider by their cost estimates, reads each selected table through its
 * block filter (only the data blocks that may hold v; a table without one whole), and
 * finds the memtables' entries through their value index.
 * A search by a predicate (search_query_t.pred; search_pred.h) runs the same frame: each leaf
 * selects tables and blocks by its item hash, the tree combines them, and every entry found
 * and every candidate's latest version is tested by the whole predicate.
 */
#ifndef BFH_LSM_HOOKS_SEARCH_H
#define BFH_LSM_HOOKS_SEARCH_H

#include <stddef.h>

#include "bfh.h"
#include "lsm_hooks/engines/engine.h"
#include "search/search_plan.h"
#include "index/value_index.h"
#include "util/err.h"

/* Runs the planned search q (search_prepare) over c: the provider's own search, or the
   frame above with the provider's table selection and q's reader, passing q's one hash and
   probe down. May run q again (it hashes nothing). Over an engine with the retry capability
   (engine_search_attempts > 1) a run that meets BFH_E_BUSY (a file of its view vanished under
   it) starts over from a new view, at most that many times in all, then BFH_E_BUSY saying so;
   the keys are then reported to fn only from the attempt that completed, and st counts that
   attempt. st may be NULL; fn may be NULL (only counts). */
int search_execute(const search_ctx_t *c, const search_query_t *q, bfh_match_fn fn, void *arg,
                   bfh_search_stats *st, err_t *err);

/* search_prepare and search_execute over e's view, with index's leaves (NULL: value filters
   off, only BFH_SEARCH_SCAN) and no stand-alone index. st may be NULL; fn may be NULL. */
int search_run(engine_t *e, value_index_t *index, const void *val, size_t val_len,
               bfh_method method, bfh_match_fn fn, void *arg, bfh_search_stats *st, err_t *err);

/* search_run_tables's method_used: not a bfh_method. */
#define SEARCH_ORACLE 100

/* Restricts the tables scanned to the given sorted list of numbers (plus the memtables),
   skipping the filters: the benchmark's oracle, which knows which tables hold the value.
   Same validation as search_run. */
int search_run_tables(engine_t *e, const void *val, size_t val_len, const uint64_t *numbers,
                      size_t n, bfh_match_fn fn, void *arg, bfh_search_stats *st, err_t *err);

#endif

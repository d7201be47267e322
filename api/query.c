/* The query calls of include/bfh.h: a search by a predicate over the declared attributes
 * (doc/query.md), one-shot (bfh_query) or prepared (bfh_query_prepare, _run, _free). The
 * expression is parsed and bound once (query/expr.h); each run plans it (search_plan.h's
 * search_prepare_pred) and runs it through search.h's frame. A predicate that is one leaf on
 * the whole value (`value = '...'`) runs as the whole-value search of its term. */
#include <stdlib.h>
#include <string.h>

#include "api/handle.h"
#include "query/expr.h"
#include "search/search.h"
#include "search/search_pred.h"

struct bfh_prepared {
  bfh_db *db;   /* borrowed: the prepared query must be freed before it is closed */
  expr_t *expr; /* owned; bound to db->terms (or to the whole value without them) */
};

/* Parses and binds where for db into *out (new, owned by the caller: bfh_query_free). */
static int prepare(bfh_db *db, const char *fn_name, const char *where, bfh_prepared **out) {
  CHECK_DB(fn_name);
  if (!where) return invalid(db, "%s: where (the expression) is NULL", fn_name);
  bfh_prepared *q = calloc(1, sizeof *q);
  if (!q) return api_failf(db, BFH_E_NOMEM, "%s: out of memory", fn_name);
  err_t err;
  err_clear(&err);
  int rc = expr_parse(where, strlen(where), &q->expr, &err);
  if (rc == BFH_OK) rc = search_pred_bind(q->expr, db->terms, &err);
  if (rc != BFH_OK) {
    bfh_query_free(q);
    err_prefix(&err, "%s: ", fn_name);
    return api_fail(db, rc, &err);
  }
  q->db = db;
  *out = q;
  return BFH_OK;
}

int bfh_query_prepare(bfh_db *db, const char *where, bfh_prepared **q) {
  if (!q) return invalid(db, "bfh_query_prepare: q (the output pointer) is NULL");
  *q = NULL;
  return prepare(db, "bfh_query_prepare", where, q);
}

void bfh_query_free(bfh_prepared *q) {
  if (!q) return;
  expr_destroy(q->expr);
  free(q);
}

/* Runs q into *st (zeroed first). */
static int run(bfh_prepared *q, const char *fn_name, bfh_method method, uint64_t newest,
               bfh_match_fn fn, void *arg, bfh_search_stats *st) {
  bfh_db *db = q->db;
  err_t err;
  err_clear(&err);
  search_ctx_t ctx = {db->engine, db->index, db->standalone, db->cuckoo};
  search_pred_t pred;
  search_query_t sq;
  api_search_begin(db, method);
  int rc = search_prepare_pred(&ctx, q->expr, db->terms, method, newest, &pred, &sq, &err);
  const void *val;
  size_t len;
  if (rc == BFH_OK && search_pred_whole_value(&pred, &val, &len)) {
    search_pred_release(&pred);
    return api_search(db, fn_name, val, len, method, newest, fn, arg, st);
  }
  if (rc != BFH_OK)
    err_prefix(&err, "%s: ", fn_name);
  else
    rc = search_execute(&ctx, &sq, fn, arg, st, &err);
  search_pred_release(&pred);
  api_search_end(db, method);
  return api_fail(db, rc, &err);
}

int bfh_query_run_sized(bfh_prepared *q, bfh_method method, uint64_t newest, bfh_match_fn fn,
                        void *arg, bfh_search_stats *stats, size_t stats_size) {
  bfh_search_stats st;
  memset(&st, 0, sizeof st);
  int rc = q ? run(q, "bfh_query_run", method, newest, fn, arg, &st)
             : invalid(NULL, "bfh_query_run: q (the prepared query) is NULL");
  if (stats) api_copy_out(stats, stats_size, &st, sizeof st);
  return rc;
}

int bfh_query_sized(bfh_db *db, const char *where, bfh_method method, uint64_t newest,
                    bfh_match_fn fn, void *arg, bfh_search_stats *stats, size_t stats_size) {
  bfh_search_stats st;
  memset(&st, 0, sizeof st);
  bfh_prepared *q = NULL;
  int rc = prepare(db, "bfh_query", where, &q);
  if (rc == BFH_OK) rc = run(q, "bfh_query", method, newest, fn, arg, &st);
  bfh_query_free(q);
  if (stats) api_copy_out(stats, stats_size, &st, sizeof st);
  return rc;
}

/* The data calls of include/bfh.h: put, delete, get, flush, search and the ordered
 * iterator, each checking its arguments, then going to the engine (through the stand-alone
 * index's write protocol when there is one) or to search_plan.h's one planner. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/handle.h"
#include "search/search.h"

/* ---- Argument checks --------------------------------------------------------------------- */

static int check_key(const bfh_db *db, const char *fn, const void *key, size_t len) {
  if (!key && len) return invalid(db, "%s: key is NULL but key_len is %zu", fn, len);
  if (len == 0) return invalid(db, "%s: empty key (keys are 1..%u bytes)", fn, BFH_MAX_KEY_BYTES);
  if (len > BFH_MAX_KEY_BYTES)
    return invalid(db, "%s: key of %zu bytes; the limit is %u", fn, len, BFH_MAX_KEY_BYTES);
  return BFH_OK;
}

static int check_value(const bfh_db *db, const char *fn, const void *val, size_t len) {
  if (!val && len) return invalid(db, "%s: value is NULL but val_len is %zu", fn, len);
  if (len > BFH_MAX_VALUE_BYTES)
    return invalid(db, "%s: value of %zu bytes; the limit is %u", fn, len, BFH_MAX_VALUE_BYTES);
  return BFH_OK;
}

int bfh_put(bfh_db *db, const void *key, size_t key_len, const void *val, size_t val_len) {
  CHECK_DB("bfh_put");
  int rc = check_key(db, "bfh_put", key, key_len);
  if (rc == BFH_OK) rc = check_value(db, "bfh_put", val, val_len);
  if (rc != BFH_OK) return rc;
  err_t err;
  err_clear(&err);
  static const uint8_t empty = 0;
  if (db->standalone)
    rc = standalone_put(db->standalone, key, key_len, val ? val : &empty, val_len, &err);
  else
    rc = engine_put(db->engine, key, key_len, val ? val : &empty, val_len, &err);
  return api_fail(db, rc, &err);
}

int bfh_delete(bfh_db *db, const void *key, size_t key_len) {
  CHECK_DB("bfh_delete");
  int rc = check_key(db, "bfh_delete", key, key_len);
  if (rc != BFH_OK) return rc;
  err_t err;
  err_clear(&err);
  rc = db->standalone ? standalone_delete(db->standalone, key, key_len, &err)
                      : engine_del(db->engine, key, key_len, &err);
  return api_fail(db, rc, &err);
}

int bfh_get(bfh_db *db, const void *key, size_t key_len, void **val, size_t *val_len) {
  CHECK_DB("bfh_get");
  int rc = check_key(db, "bfh_get", key, key_len);
  if (rc != BFH_OK) return rc;
  if (!val || !val_len) return invalid(db, "bfh_get: val or val_len is NULL");
  *val = NULL;
  *val_len = 0;
  err_t err;
  err_clear(&err);
  rc = engine_get(db->engine, NULL, key, key_len, val, val_len, &err);
  if (rc == BFH_OK && !*val) {
    *val = malloc(1);
    if (!*val) return invalid(db, "bfh_get: out of memory"), BFH_E_NOMEM;
  }
  return api_fail(db, rc, &err);
}

/* Whether a declared attribute is the whole value (`value`, not :int), whose items are the
   whole value's hashes (query/terms.h). */
static int whole_value_indexed(const terms_t *t) {
  for (size_t i = 0; i < terms_count(t); i++) {
    const attr_spec_t *s = terms_spec(t, i);
    if (s->kind == ATTR_VALUE && !s->is_int) return 1;
  }
  return 0;
}

int api_search(bfh_db *db, const char *fn_name, const void *val, size_t val_len, bfh_method method,
               uint64_t newest, bfh_match_fn fn, void *arg, bfh_search_stats *stats) {
  CHECK_DB(fn_name);
  int rc = check_value(db, fn_name, val, val_len);
  if (rc != BFH_OK) return rc;
  err_t err;
  err_clear(&err);
  static const uint8_t empty = 0;
  if (val == NULL) val = &empty;
  /* With declared attributes the filters hold the whole value only under a `value`
     attribute: without one a whole-value search reads every table (AUTO is SCAN), and a
     method that would trust the filters is refused rather than miss keys. */
  if (db->terms && !whole_value_indexed(db->terms)) {
    if (method == BFH_SEARCH_AUTO) method = BFH_SEARCH_SCAN;
    if (method != BFH_SEARCH_SCAN && method != BFH_SEARCH_STANDALONE)
      return invalid(db,
                     "%s: method %s: this database indexes its declared attributes, "
                     "not whole values (declare an attribute with the extractor value for "
                     "that); search it by scan",
                     fn_name, bfh_method_name(method) ? bfh_method_name(method) : "?");
  }
  /* One plan (search_plan.h), AUTO's choice among the providers included, and one hash. */
  search_ctx_t ctx = {db->engine, db->index, db->standalone, db->cuckoo};
  search_query_t q;
  /* A named filter method measures the whole index: it waits for the leaves still loading
     at open (index_sync.h "Loading at open"); AUTO reads their tables through their block
     filters meanwhile. */
  api_search_begin(db, method);
  rc = search_prepare(&ctx, val, val_len, method, newest, &q, &err);
  if (rc != BFH_OK) {
    err_prefix(&err, "%s: ", fn_name);
    return api_fail(db, rc, &err);
  }
  rc = search_execute(&ctx, &q, fn, arg, stats, &err); /* starts over on a read-only engine */
  api_search_end(db, method);
  return api_fail(db, rc, &err);
}

void api_search_begin(bfh_db *db, bfh_method method) {
  const search_provider_t *named = search_provider_of(method);
  if (db->sync && named && (named->caps & SEARCH_CAP_INDEX))
    (void)index_sync_loader_wait(db->sync, NULL, NULL);
}

void api_search_end(bfh_db *db, bfh_method method) {
  /* A search by the index: from the second on, the leaves still loading come in the
     background (after this search, which they would only slow down; a process that searches
     once never waits for a loader at its close). */
  if (db->sync && method != BFH_SEARCH_SCAN) (void)index_sync_loader_searched(db->sync, NULL);
}

int bfh_search_sized(bfh_db *db, const void *val, size_t val_len, bfh_method method,
                     bfh_match_fn fn, void *arg, bfh_search_stats *stats, size_t stats_size) {
  bfh_search_stats st;
  memset(&st, 0, sizeof st);
  int rc = api_search(db, "bfh_search", val, val_len, method, 0, fn, arg, &st);
  if (stats) api_copy_out(stats, stats_size, &st, sizeof st);
  return rc;
}

int bfh_flush(bfh_db *db) {
  CHECK_DB("bfh_flush");
  err_t err;
  err_clear(&err);
  return api_fail(db, engine_flush(db->engine, &err), &err);
}

/* ---- Ordered iteration ------------------------------------------------------------------- */

struct bfh_iter {
  bfh_db *db; /* for the last error */
  engine_iter_t *it;
  char error[ERR_MSG_BYTES]; /* bfh_iter_error: the message of the error that ended it */
};

int bfh_iter_create(bfh_db *db, bfh_iter **out) {
  CHECK_DB("bfh_iter_create");
  if (!out) return invalid(db, "bfh_iter_create: it (the output pointer) is NULL");
  *out = NULL;
  if (!(db->kind->caps & ENGINE_CAP_ITERATE))
    return api_failf(db, BFH_E_UNSUPPORTED,
                     "bfh_iter_create: the %s engine has no ordered iterator", db->kind->name);
  bfh_iter *it = calloc(1, sizeof *it);
  if (!it) return api_failf(db, BFH_E_NOMEM, "bfh_iter_create: out of memory");
  err_t err;
  err_clear(&err);
  int rc = engine_iter_create(db->engine, &it->it, &err);
  if (rc != BFH_OK) {
    free(it);
    return api_fail(db, rc, &err);
  }
  it->db = db;
  *out = it;
  return BFH_OK;
}

void bfh_iter_destroy(bfh_iter *it) {
  if (!it) return;
  it->it->ops->destroy(it->it);
  free(it);
}

void bfh_iter_seek_first(bfh_iter *it) {
  it->it->ops->seek_first(it->it);
}

void bfh_iter_seek(bfh_iter *it, const void *key, size_t key_len) {
  static const uint8_t empty = 0;
  it->it->ops->seek(it->it, key ? key : &empty, key_len);
}

int bfh_iter_valid(const bfh_iter *it) {
  return it && it->it->ops->valid(it->it);
}

void bfh_iter_next(bfh_iter *it) {
  it->it->ops->next(it->it);
}

const void *bfh_iter_key(const bfh_iter *it, size_t *key_len) {
  return it->it->ops->key(it->it, key_len);
}

const void *bfh_iter_value(const bfh_iter *it, size_t *val_len) {
  return it->it->ops->value(it->it, val_len);
}

int bfh_iter_status(const bfh_iter *it) {
  if (!it) return invalid(NULL, "bfh_iter_status: it is NULL");
  err_t err;
  err_clear(&err);
  return api_fail(it->db, it->it->ops->status(it->it, &err), &err);
}

const char *bfh_iter_error(bfh_iter *it) {
  if (!it) return NULL;
  err_t err;
  err_clear(&err);
  if (it->it->ops->status(it->it, &err) == BFH_OK) return NULL;
  snprintf(it->error, sizeof it->error, "%s", err.msg[0] ? err.msg : "iteration failed");
  return it->error;
}

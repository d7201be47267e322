/* What the files of the public API's implementation share (internal to api/):
 * the handle behind bfh_db, the per-thread last error, and the versioned-struct and option
 * helpers (handle.c). api.c: open, close, repair; options.c: bfh_options; access.c: puts,
 * gets, deletes, searches, iteration; stats.c: bfh_stats, bfh_tables, bfh_check.
 */
#ifndef BFH_LSM_HOOKS_API_HANDLE_H
#define BFH_LSM_HOOKS_API_HANDLE_H

#include <stddef.h>
#include <stdint.h>

#include "bfh.h"
#include "api/db_params.h"
#include "lsm_hooks/engines/engine.h"
#include "index/cuckoo_index.h"
#include "index/index_sync.h"
#include "index/value_index.h"
#include "index/standalone.h"
#include "query/terms.h"
#include "util/env.h"
#include "util/err.h"

struct bfh_db {
  uint64_t id;
  engine_t *engine;
  const engine_kind_t *kind; /* the row that opened engine */
  value_index_t *index;      /* NULL when value filters are off */
  index_sync_t *sync;        /* the index's only writer, fed by the engine; NULL without one */
  standalone_t *standalone;  /* bfh_options.standalone_index; NULL without */
  bfh_options opt;
  cuckoo_index_t *cuckoo; /* bfh_options.cuckoo_index; NULL without */
  terms_t *terms; /* the declared attributes (stored or given); NULL without: the whole value.
                     opt.attributes is cleared (the caller's memory): these are the handle's */
};

/* A new handle id: never 0, never reused. */
uint64_t api_handle_id(void);
/* Records err's message for db (NULL: no handle) if rc is a failure; returns rc. */
int api_fail(const bfh_db *db, int rc, const err_t *err);
/* Records a formatted message for a failure code; returns code. */
int api_failf(const bfh_db *db, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
#define invalid(db, ...) api_failf(db, BFH_E_INVALID, __VA_ARGS__)

#define CHECK_DB(fn)                                            \
  do {                                                          \
    if (!db) return invalid(NULL, "%s: db handle is NULL", fn); \
  } while (0)

/* bfh_search's body (api/access.c), its messages prefixed with fn_name: the whole-value
   search of val by method (newest: 0 every key, else the newest K, newest first), stats
   filled as far as it got. */
int api_search(bfh_db *db, const char *fn_name, const void *val, size_t val_len, bfh_method method,
               uint64_t newest, bfh_match_fn fn, void *arg, bfh_search_stats *stats);
/* What every search by method does around its run: a named method that reads the filters
   waits for the leaves still loading at open; a search by the index lets the loader go on in
   the background after it. */
void api_search_begin(bfh_db *db, bfh_method method);
void api_search_end(bfh_db *db, bfh_method method);

/* Gives a caller's struct of dst_size bytes the first bytes of the library's own src: an
   older caller gets the fields it knows; a newer one gets zeros past the library's. */
void api_copy_out(void *dst, size_t dst_size, const void *src, size_t src_size);

/* *out = the defaults overlaid with the caller's struct, as far as its struct_size reaches. */
int api_options_copy_in(const char *fn, const bfh_options *in, bfh_options *out);
/* *out = *in (the defaults for what in lacks, or for everything when in is NULL); then the
   options are checked against the engine kind that opens them. */
int api_options_or_defaults(const char *fn, const bfh_options *in, bfh_options *out);
/* The k of value filters a new database opened with o gets (bfh.h, value_filter_hashes): o's
   own, or for 0 the paper's (DB_PARAMS_PAPER_HASHES), except under the lean layout with
   value-to-block maps on an engine that writes them, whose leaves are kept folded to about
   index_bits_per_value bits per value: there ln 2 x bits, rounded, the k of fewest false
   positives at that size (doc/search.md "The leaves' k"). */
uint32_t api_filter_hashes(const bfh_options *o);
/* The m, k and seed a handle opened with o uses: o's where nonzero, else the database's
   stored ones (stored, NULL when it has none), else a new database's (BFH_DEFAULT_VALUE_
   FILTER_BITS, api_filter_hashes, BFH_DEFAULT_HASH_SEED). A nonzero one that differs from
   the stored is left for db_params_check to refuse. */
db_params_t api_params_want(const bfh_options *o, const db_params_t *stored);

/* How a staged repair (api/repair.c) is asked to differ from bfh_repair's: bfh_index_add
   (api/index_admin.c) rewrites every table with the items of other attributes, and writes
   their declaration into the stage before it is swapped in. */
typedef struct api_repair_with {
  attr_spec_t *specs; /* the attributes whose items the tables get (the repair takes them
                         over: it frees them and sets the field to NULL) */
  size_t n;
  /* Called with the stage's directory once the repaired database in it has been checked,
     before the swap; an error leaves path as it was. NULL: none. */
  int (*before_commit)(void *arg, env_t *io, const char *stage_dir, err_t *err);
  void *arg;
} api_repair_with_t;

/* Steps 1 to 6 of the staged repair (api/repair.c) of the database in path, the engine
   opt->engine's (it must have ENGINE_CAP_REPAIR); with NULL: bfh_repair's, without the
   stand-alone index's rebuild. io: the stage's file layer (NULL: the real one). */
int api_repair_staged(const char *path, const bfh_options *opt, env_t *io, api_repair_with_t *with,
                      bfh_repair_report *rep, err_t *err);

#endif

/* The implementation of include/bfh.h, its handles: the per-thread last error, and the wiring
 * of db_params, the value index, an engine and the optional stand-alone index at open. The
 * rest of the API is in options.c (bfh_options), access.c (puts, gets, deletes, searches,
 * iteration) and stats.c (statistics, inspection); handle.h is what they share (the last
 * error, handle.c).
 *
 * Open: check options (against the capabilities of the engine kind that opens them,
 * engine.h; a read-only handle's index directory outside the database's) -> BFH-PARAMS
 * (compare m, k, seed with the stored ones; a mismatch is BFH_E_INVALID, never silent
 * mixing) -> value_index_create -> the kind's open (which takes the database's lock: a
 * second open gets BFH_E_BUSY), or with standalone_index standalone_open (the kind's
 * open_replaying, then the index) -> write BFH-PARAMS if it was absent. With the stand-alone index, puts and deletes go through standalone.c's write
 * protocol. A read-only handle opens the kind with ENGINE_CAP_READ_ONLY, keeps BFH-PARAMS in
 * its index directory (or nowhere), and searches through its kind's search (which starts a
 * search over when the owner of the database deletes a file under it).
 */
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lsm/repair.h"
#include "api/db_attrs.h"
#include "api/db_params.h"
#include "api/handle.h"
#include "util/env.h"
#include "util/path.h"
#include "util/status.h"

/* ---- Open and close -------------------------------------------------------------------- */

/* hierarchy.h numbers its placements as bfh.h does. */
_Static_assert(HIERARCHY_SIMILARITY == (int)BFH_PLACEMENT_SIMILARITY &&
                   HIERARCHY_POSITIONAL == (int)BFH_PLACEMENT_POSITIONAL &&
                   HIERARCHY_PAPER == (int)BFH_PLACEMENT_PAPER,
               "placement numbers");

static int open_with_io(const char *path, const bfh_options *opt_in, struct env *io, bfh_db **out);

/* A read-only handle writes nothing into the database's directory: its index directory must
   lie outside it, compared where both really are (util/path.h), whether the index directory
   exists yet or not ("DB/idx", "DB/../DB/idx" and "link-to-DB/idx" are all inside). Checked
   before anything is created. */
static int check_index_dir(const char *path, const bfh_options *opt) {
  if (!opt->read_only || !opt->index_dir) return BFH_OK;
  char *db = NULL, *idx = NULL;
  err_t err;
  err_clear(&err);
  int rc = path_resolve(path, &db, &err);
  if (rc == ST_OK) rc = path_resolve(opt->index_dir, &idx, &err);
  if (rc != ST_OK)
    rc = api_failf(NULL, rc == ST_E_NOMEM ? BFH_E_NOMEM : BFH_E_INVALID, "bfh_open: index_dir: %s",
                   err.msg);
  else if (path_within(db, idx))
    rc = invalid(NULL,
                 "bfh_open: the index directory %s (%s) lies inside the database's directory "
                 "%s (%s); a read-only open writes nothing there: choose one outside it",
                 opt->index_dir, idx, path, db);
  free(db);
  free(idx);
  return rc;
}

/* The handle's attributes (db_attrs.h), into *terms (NULL without any). stored_dir: where
   BFH-ATTRS is kept (NULL: nowhere, a read-only handle without an index directory). existing:
   the database was opened before (its BFH-PARAMS is there), so its stored declarations rule:
   the options may repeat them or give none, nothing else. Otherwise the options' rule, and
   *write (when writable) says they are to be stored before the engine opens; a BFH-ATTRS
   left by a creation that stopped before BFH-PARAMS is taken when the options declare none.
   A handle without value filters (never writable here) takes the stored ones as those of a
   database opened before, when there are some. */
static int open_attributes(env_t *io, const char *stored_dir, const bfh_options *opt,
                           int existing, int writable, terms_t **terms, int *write, err_t *err) {
  *terms = NULL;
  *write = 0;
  attr_spec_t *want = NULL, *stored = NULL;
  size_t nwant = opt->attribute_count, nstored = 0;
  int rc = db_attrs_parse(opt->attributes, nwant, &want, err);
  if (rc != BFH_OK) return err_prefix(err, "bfh_open: "), rc;
  int have_stored = 0;
  if (stored_dir) {
    rc = db_attrs_read(io, stored_dir, &stored, &nstored, err);
    if (rc == BFH_OK) have_stored = 1;
    else if (rc == BFH_NOT_FOUND) rc = BFH_OK;
  }
  attr_spec_t *use = NULL;
  size_t n = 0;
  if (!opt->value_filters) existing = have_stored;
  if (rc == BFH_OK && existing) {
    if (nwant) rc = db_attrs_check(stored_dir, stored, nstored, want, nwant, err);
    use = stored, n = nstored, stored = NULL;
  } else if (rc == BFH_OK) {
    if (nwant) {
      use = want, n = nwant, want = NULL;
      *write = writable;
    } else if (have_stored) {
      use = stored, n = nstored, stored = NULL;
    }
  }
  if (rc == BFH_OK && n) {
    rc = terms_create(use, n, opt->hash_seed, terms, err);
    if (rc == BFH_OK) use = NULL; /* terms owns it */
  }
  attr_specs_free(want, nwant);
  attr_specs_free(stored, nstored);
  attr_specs_free(use, n);
  if (rc != BFH_OK) *write = 0;
  return rc;
}

int bfh_open(const char *path, const bfh_options *opt_in, bfh_db **out) {
  return open_with_io(path, opt_in, NULL, out);
}

static int open_with_io(const char *path, const bfh_options *opt_in, struct env *io, bfh_db **out) {
  if (!out) return invalid(NULL, "bfh_open: db (the output handle pointer) is NULL");
  *out = NULL;
  if (!path || !path[0]) return invalid(NULL, "bfh_open: path is NULL or empty");
  bfh_options opt;
  int rc = api_options_or_defaults("bfh_open", opt_in, &opt);
  if (rc == BFH_OK) rc = check_index_dir(path, &opt);
  if (rc != BFH_OK) return rc;

  const engine_kind_t *kind = engine_kind_for(opt.engine, opt.read_only);
  if ((kind->caps & ENGINE_CAP_STANDALONE) && !opt.standalone_index && standalone_exists(path))
    return invalid(NULL,
                   "bfh_open: %s has a stand-alone index (%s/): open it with standalone_index = 1, "
                   "or remove that directory to drop the index",
                   path, STANDALONE_DIR);
  err_t err;
  err_clear(&err);
  db_params_t want = api_params_want(&opt, NULL);
  db_params_t stored;
  int have_params = 0;
  env_t *fio = io ? io : env_default(); /* bfh's own files: BFH-PARAMS */
  /* A read-only handle keeps its BFH-PARAMS in its index directory, or nowhere; one whose
     filters are the database's own (ENGINE_CAP_PARAMS_IN_DB) reads the database's and writes
     none. */
  int params_in_db = opt.read_only && (kind->caps & ENGINE_CAP_PARAMS_IN_DB);
  const char *params_dir = opt.read_only && !params_in_db ? opt.index_dir : path;
  if (opt.value_filters && params_dir) {
    rc = db_params_read(fio, params_dir, &stored, &err);
    if (rc == BFH_OK) {
      have_params = 1;
      want = api_params_want(&opt, &stored); /* 0: the database's own */
      rc = db_params_check(params_dir, &stored, &want, &err);
    } else if (rc == BFH_NOT_FOUND) {
      rc = BFH_OK;
    }
    if (rc != BFH_OK) return api_fail(NULL, rc, &err);
  }

  opt.value_filter_bits = want.m;
  opt.value_filter_hashes = want.k;
  opt.hash_seed = want.seed;
  /* The attributes: the stored ones, which the options must match if they declare any; a new
     database's are the options' and are stored before the engine first writes. */
  terms_t *terms = NULL;
  int write_attrs = 0;
  rc = open_attributes(fio, params_dir, &opt, have_params,
                       opt.value_filters && params_dir && !params_in_db, &terms, &write_attrs,
                       &err);
  if (rc != BFH_OK) return api_fail(NULL, rc, &err);
  opt.attributes = NULL; /* the caller's memory: the handle keeps terms */
  opt.attribute_count = 0;
  bfh_db *db = calloc(1, sizeof *db);
  if (!db) {
    terms_destroy(terms);
    return invalid(NULL, "bfh_open: %s: out of memory", path), BFH_E_NOMEM;
  }
  db->id = api_handle_id();
  db->opt = opt;
  db->kind = kind;
  db->terms = terms;
  if (rc == BFH_OK && opt.value_filters) {
    value_index_params_t vp = {want.m,
                               want.k,
                               want.seed,
                               opt.order,
                               opt.leaves_on_disk,
                               (hierarchy_placement_t)opt.placement,
                               opt.block_filter_bits_per_value,
                               fio,
                               opt.index_bits_per_value,
                               opt.block_maps && opt.index_bits_per_value > 0};
    db->index = value_index_create(&vp, &err);
    if (!db->index) rc = err.code ? err.code : BFH_E_NOMEM;
  }
  if (rc != BFH_OK) {
    terms_destroy(db->terms);
    free(db);
    return api_fail(NULL, rc, &err);
  }
  if (db->index && !(db->sync = index_sync_create(db->index, &err))) rc = err.code;
  if (db->sync) index_sync_set_terms(db->sync, terms_value_terms(db->terms));
  /* The Cuckoo Index hashes under the value filters' seed: a search hashes once. */
  if (rc == BFH_OK && opt.cuckoo_index &&
      !(db->cuckoo =
            cuckoo_index_create(db->index ? value_index_params(db->index)->seed : opt.hash_seed)))
    rc = err_set(&err, BFH_E_NOMEM, "bfh_open: out of memory for the cuckoo index");
  if (rc == BFH_OK && opt.standalone_index)
    rc = standalone_open(kind, path, &opt, db->terms, io, db->sync, &db->engine,
                         &db->standalone, &err);
  else if (rc == BFH_OK)
    rc = kind->open(path, &opt, io, db->sync, &db->engine, &err);
  /* BFH-ATTRS before BFH-PARAMS, the mark of a database opened before: a creation stopped
     between the two is a new database again at the next open. */
  int opened = rc == BFH_OK;
  if (rc == BFH_OK && write_attrs)
    rc = db_attrs_write(fio, params_dir, terms_spec(terms, 0), terms_count(terms), &err);
  if (rc == BFH_OK && opt.value_filters && params_dir && !have_params && !params_in_db)
    rc = db_params_write(fio, params_dir, &want, &err);
  if (rc != BFH_OK && opened) {
    engine_close(db->engine, NULL);
    db->engine = NULL;
    standalone_close(db->standalone);
  }
  if (rc != BFH_OK) {
    cuckoo_index_destroy(db->cuckoo);
    index_sync_destroy(db->sync);
    value_index_destroy(db->index);
    terms_destroy(db->terms);
    free(db);
    return api_fail(NULL, rc, &err);
  }
  *out = db;
  return BFH_OK;
}

int bfh_close(bfh_db *db) {
  if (!db) return BFH_OK;
  err_t err;
  err_clear(&err);
  int rc = engine_close(db->engine, &err);
  int rc2 = standalone_close(db->standalone); /* after the engine: every write reached both */
  if (rc == BFH_OK) rc = rc2;
  cuckoo_index_destroy(db->cuckoo);
  index_sync_destroy(db->sync);
  value_index_destroy(db->index);
  terms_destroy(db->terms); /* after the engine and the index, which hashed through it */
  free(db);
  /* The handle is gone: a failure can only be reported without it. */
  if (rc < 0 && err.code != BFH_OK) return invalid(NULL, "bfh_close: %s", err.msg), rc;
  if (rc < 0) return invalid(NULL, "bfh_close: %s", bfh_strerror(rc)), rc;
  return rc;
}

/* ---- The testbed's access, for tests and benchmarks (api/testbed.h) ------------------ */

#include "api/testbed.h"

engine_t *bfh_internal_engine(bfh_db *db) {
  return db->engine;
}
value_index_t *bfh_internal_index(bfh_db *db) {
  return db->index;
}
standalone_t *bfh_internal_standalone(bfh_db *db) {
  return db->standalone;
}
cuckoo_index_t *bfh_internal_cuckoo(bfh_db *db) {
  return db->cuckoo;
}
terms_t *bfh_internal_terms(bfh_db *db) {
  return db->terms;
}
index_sync_t *bfh_internal_sync(bfh_db *db) {
  return db->sync;
}
uint32_t bfh_internal_filter_hashes(const bfh_options *opt) {
  bfh_options o;
  return api_options_copy_in("bfh_internal_filter_hashes", opt, &o) == BFH_OK
             ? api_filter_hashes(&o)
             : 0;
}

int bfh_internal_open_io(const char *path, const bfh_options *opt, struct env *io, bfh_db **db) {
  return open_with_io(path, opt, io, db);
}

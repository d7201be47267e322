/* The implementation of include/bfh.h: argument checks, the per-thread last error, and the
 * wiring of db_params, the value index, an engine and the optional stand-alone index.
 *
 * Open: check options (against the capabilities of the engine kind that opens them,
 * engine.h) -> BFH-PARAMS (compare m, k, seed with the stored ones; a mismatch is
 * BFH_E_INVALID, never silent mixing) -> value_index_create -> the kind's open (which takes
 * the database's lock: a second open gets BFH_E_BUSY), or with standalone_index
 * standalone_open (the kind's open_replaying, then the index) -> write BFH-PARAMS if it was
 * absent. With the stand-alone index, puts and deletes go through standalone.c's write
 * protocol. A read-only handle opens the kind with ENGINE_CAP_READ_ONLY, keeps BFH-PARAMS in
 * its index directory (or nowhere), and searches through its kind's search (which starts a
 * search over when the owner of the database deletes a file under it).
 *
 * Last error: each thread keeps a few (handle id, message) pairs in thread-local storage;
 * handle ids come from a global counter and are never reused, so a message never outlives
 * its handle's identity. Id 0 is "no handle" (bfh_open failures, NULL handles).
 */
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bfh.h"
#include "util/env.h"
#include "lsm/repair.h"
#include "lsm_hooks/api/db_inspect.h"
#include "lsm_hooks/api/db_params.h"
#include "lsm_hooks/engines/engine.h"
#include "lsm_hooks/index/index_sync.h"
#include "lsm_hooks/search/search.h"
#include "lsm_hooks/search/standalone.h"
#include "lsm_hooks/index/value_index.h"
#include "util/err.h"
#include "util/status.h"

/* The internal status codes are the public ones: a status goes up unchanged. */
#define SAME_STATUS(name) ((int)ST_##name == (int)BFH_##name)
_Static_assert(SAME_STATUS(OK) && SAME_STATUS(NOT_FOUND) && SAME_STATUS(E_INVALID) &&
                   SAME_STATUS(E_IO) && SAME_STATUS(E_CORRUPT) && SAME_STATUS(E_NOMEM) &&
                   SAME_STATUS(E_BUSY) && SAME_STATUS(E_UNSUPPORTED),
               "util/status.h and include/bfh.h disagree");
#undef SAME_STATUS

struct bfh_db {
  uint64_t id;
  engine_t *engine;
  const engine_kind_t *kind; /* the row that opened engine */
  value_index_t *index;      /* NULL when value filters are off */
  index_sync_t *sync;        /* the index's only writer, fed by the engine; NULL with the index */
  standalone_t *standalone;  /* bfh_options.standalone_index; NULL without */
  bfh_options opt;
};

/* ---- Last error, per thread and handle -------------------------------------------------- */

#define LAST_ERROR_SLOTS 8

typedef struct last_error {
  uint64_t id;
  uint64_t stamp;
  int used;
  char msg[ERR_MSG_BYTES];
} last_error_t;

static _Thread_local last_error_t tl_errors[LAST_ERROR_SLOTS];
static _Thread_local uint64_t tl_stamp;
static _Atomic uint64_t next_id = 1;

static void remember(uint64_t id, const char *msg) {
  int slot = -1;
  for (int i = 0; i < LAST_ERROR_SLOTS && slot < 0; i++)
    if (tl_errors[i].used && tl_errors[i].id == id) slot = i;
  for (int i = 0; i < LAST_ERROR_SLOTS && slot < 0; i++)
    if (!tl_errors[i].used) slot = i;
  if (slot < 0) { /* every slot taken: replace the least recently written */
    slot = 0;
    for (int i = 1; i < LAST_ERROR_SLOTS; i++)
      if (tl_errors[i].stamp < tl_errors[slot].stamp) slot = i;
  }
  last_error_t *e = &tl_errors[slot];
  e->used = 1;
  e->id = id;
  e->stamp = ++tl_stamp;
  snprintf(e->msg, sizeof e->msg, "%s", msg && msg[0] ? msg : "unknown error");
}

/* Records err's message for db (NULL: no handle) if rc is a failure; returns rc. */
static int fail(const bfh_db *db, int rc, const err_t *err) {
  if (rc < 0) {
    char buf[ERR_MSG_BYTES];
    if (err && err->msg[0])
      snprintf(buf, sizeof buf, "%s", err->msg);
    else
      snprintf(buf, sizeof buf, "%s", bfh_strerror(rc));
    remember(db ? db->id : 0, buf);
  }
  return rc;
}

/* Records a formatted message for a failure code; returns code. */
static int failf(const bfh_db *db, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int failf(const bfh_db *db, int code, const char *fmt, ...) {
  err_t e;
  e.code = code;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(e.msg, sizeof e.msg, fmt, ap);
  va_end(ap);
  return fail(db, code, &e);
}

#define invalid(db, ...) failf(db, BFH_E_INVALID, __VA_ARGS__)

const char *bfh_last_error(const bfh_db *db) {
  uint64_t id = db ? db->id : 0;
  for (int i = 0; i < LAST_ERROR_SLOTS; i++)
    if (tl_errors[i].used && tl_errors[i].id == id) return tl_errors[i].msg;
  return "";
}

const char *bfh_strerror(int status) {
  switch (status) {
    case BFH_OK:
      return "ok";
    case BFH_NOT_FOUND:
      return "not found";
    case BFH_E_INVALID:
      return "invalid argument or option";
    case BFH_E_IO:
      return "i/o error";
    case BFH_E_CORRUPT:
      return "corrupt file";
    case BFH_E_NOMEM:
      return "out of memory";
    case BFH_E_BUSY:
      return "database is in use by another handle or process";
    case BFH_E_UNSUPPORTED:
      return "not supported";
    default:
      return "unknown status";
  }
}

void bfh_free(void *p) {
  free(p);
}

const char *bfh_version(void) {
  return BFH_VERSION_STRING;
}

/* ---- Versioned structs (doc/api.md "ABI") ------------------------------------------------- */

/* Gives a caller's struct of dst_size bytes the first bytes of the library's own src: an
   older caller gets the fields it knows; a newer one gets zeros past the library's. */
static void copy_out(void *dst, size_t dst_size, const void *src, size_t src_size) {
  size_t n = dst_size < src_size ? dst_size : src_size;
  memcpy(dst, src, n);
  if (dst_size > n) memset((char *)dst + n, 0, dst_size - n);
}

/* ---- Options ------------------------------------------------------------------------- */

static void options_defaults(bfh_options *opt) {
  memset(opt, 0, sizeof *opt);
  opt->struct_size = sizeof *opt;
  opt->engine = engine_kind_at(0)->id; /* the first row of engines.c */
  opt->create_if_missing = 1;
  opt->value_filter_bits = 2000000;
  opt->value_filter_hashes = 3;
  opt->order = 5;
  opt->key_bits_per_key = 10;
  opt->memtable_bytes = 4u << 20;
  opt->table_bytes = 2u << 20;
  opt->sync = 0;
  opt->leaves_on_disk = BFH_LEAVES_IN_MEMORY;
  opt->value_filters = 1;
  opt->placement = BFH_PLACEMENT_SIMILARITY;
  opt->hash_seed = BFH_DEFAULT_SEED;
  opt->block_filter_bits = BLOCK_FILTER_DEFAULT_BITS;
  opt->read_only = 0;
  opt->index_dir = NULL;
  opt->memtable_index = 1;
}

void bfh_options_init_sized(bfh_options *opt, size_t size) {
  if (!opt || size < sizeof opt->struct_size) return;
  bfh_options d;
  options_defaults(&d);
  copy_out(opt, size, &d, sizeof d);
  opt->struct_size = size;
}

/* *out = the defaults overlaid with the caller's struct, as far as its struct_size reaches. */
static int options_copy_in(const char *fn, const bfh_options *in, bfh_options *out) {
  options_defaults(out);
  if (!in) return BFH_OK;
  if (in->struct_size == 0)
    return invalid(NULL, "%s: bfh_options.struct_size is 0: start from bfh_options_init", fn);
  if (in->struct_size > sizeof *out)
    return invalid(NULL,
                   "%s: bfh_options of %zu bytes, but this library (%s) knows %zu: the program "
                   "was built against a newer bfh.h",
                   fn, in->struct_size, bfh_version(), sizeof *out);
  memcpy(out, in, in->struct_size);
  out->struct_size = sizeof *out;
  return BFH_OK;
}

/* Largest m accepted: 2^28 bits, a 32 MiB filter per table. The bit-sliced index keeps one
   row per bit, 8 bytes per 64 tables, so it already takes 2 GiB at this m (m = 2^32 would
   ask for 32 GiB before the first table). The paper's filters are 20k..2M bits. */
#define MAX_FILTER_BITS (1ull << 28)

/* The names of the engines with a row that has caps, ", "-separated, into buf. */
static const char *rows_with(unsigned caps, char *buf, size_t cap) {
  buf[0] = 0;
  const engine_kind_t *k;
  for (size_t i = 0; (k = engine_kind_at(i)); i++)
    if ((k->caps & caps) == caps && !strstr(buf, k->name))
      snprintf(buf + strlen(buf), cap - strlen(buf), "%s%s", buf[0] ? ", " : "", k->name);
  return buf;
}

static int check_options(const bfh_options *o) {
  char buf[256];
  const engine_kind_t *kind = engine_kind(o->engine);
  if (!kind) {
    char known[256] = "";
    const engine_kind_t *k;
    for (size_t i = 0; (k = engine_kind_at(i)); i++)
      if (!strstr(known, k->name))
        snprintf(known + strlen(known), sizeof known - strlen(known), "%s%d %s", i ? ", " : "",
                 (int)k->id, k->name);
    return invalid(NULL, "bfh_open: unknown engine %d (%s)", (int)o->engine, known);
  }
  if (o->value_filter_bits < 64)
    return invalid(NULL, "bfh_open: value_filter_bits (m) = %llu; it must be at least 64",
                   (unsigned long long)o->value_filter_bits);
  if (o->value_filter_bits > MAX_FILTER_BITS)
    return invalid(NULL, "bfh_open: value_filter_bits (m) = %llu; at most %llu",
                   (unsigned long long)o->value_filter_bits, MAX_FILTER_BITS);
  if (o->value_filter_hashes < 1 || o->value_filter_hashes > 32)
    return invalid(NULL, "bfh_open: value_filter_hashes (k) = %u; it must be in 1..32",
                   o->value_filter_hashes);
  if (o->order < 2)
    return invalid(NULL, "bfh_open: order (d) = %u; it must be at least 2", o->order);
  if (o->order > (1u << 20))
    return invalid(NULL, "bfh_open: order (d) = %u; at most %u", o->order, 1u << 20);
  if (!(o->key_bits_per_key >= 0 && o->key_bits_per_key <= 64))
    return invalid(NULL, "bfh_open: key_bits_per_key = %g; it must be in 0..64",
                   o->key_bits_per_key);
  if (o->memtable_bytes < 1024)
    return invalid(NULL, "bfh_open: memtable_bytes = %zu; it must be at least 1024",
                   o->memtable_bytes);
  if (o->table_bytes < 1024)
    return invalid(NULL, "bfh_open: table_bytes = %zu; it must be at least 1024", o->table_bytes);
  if (o->placement != BFH_PLACEMENT_SIMILARITY && o->placement != BFH_PLACEMENT_POSITIONAL &&
      o->placement != BFH_PLACEMENT_PAPER)
    return invalid(NULL, "bfh_open: placement = %d; 0 (similarity), 1 (positional) or 2 (paper)",
                   o->placement);
  if (o->block_filter_bits > BLOCK_FILTER_MAX_BITS)
    return invalid(NULL, "bfh_open: block_filter_bits = %u; 0 (none) to %d", o->block_filter_bits,
                   BLOCK_FILTER_MAX_BITS);
  if (o->standalone_index != 0 && o->standalone_index != 1)
    return invalid(NULL, "bfh_open: standalone_index = %d; 0 or 1", o->standalone_index);
  if (o->standalone_index && !(kind->caps & ENGINE_CAP_STANDALONE))
    return failf(NULL, BFH_E_UNSUPPORTED,
                 "bfh_open: standalone_index needs an engine that tells bfh every write (%s); "
                 "the %s engine does not",
                 rows_with(ENGINE_CAP_STANDALONE, buf, sizeof buf), kind->name);
  if (o->read_only != 0 && o->read_only != 1)
    return invalid(NULL, "bfh_open: read_only = %d; 0 or 1", o->read_only);
  if (o->read_only && !engine_kind_for(o->engine, 1))
    return failf(NULL, BFH_E_UNSUPPORTED,
                 "bfh_open: read_only needs an engine with a read-only mode (%s); the %s engine "
                 "has none",
                 rows_with(ENGINE_CAP_READ_ONLY, buf, sizeof buf), kind->name);
  if (o->standalone_index && o->read_only)
    return failf(NULL, BFH_E_UNSUPPORTED,
                 "bfh_open: standalone_index and read_only: a read-only handle writes no index");
  if (o->read_only && o->leaves_on_disk && !o->index_dir)
    return invalid(NULL,
                   "bfh_open: read_only with leaves on disk needs an index_dir to keep "
                   "them in (nothing is written into the database)");
  if (o->leaves_on_disk != BFH_LEAVES_IN_MEMORY && o->leaves_on_disk != BFH_LEAVES_ON_DISK &&
      o->leaves_on_disk != BFH_LEAVES_ON_DISK_WHOLE)
    return invalid(NULL,
                   "bfh_open: leaves_on_disk = %d; 0 (in memory), 1 (on disk) or 2 (on disk, "
                   "read whole)",
                   o->leaves_on_disk);
  return BFH_OK;
}

/* *out = *in (the defaults for what in lacks, or for everything when in is NULL); then
   check_options. */
static int options_or_defaults(const char *fn, const bfh_options *in, bfh_options *out) {
  int rc = options_copy_in(fn, in, out);
  return rc == BFH_OK ? check_options(out) : rc;
}

/* ---- Open and close -------------------------------------------------------------------- */

/* hierarchy.h numbers its placements as bfh.h does. */
_Static_assert(HIERARCHY_SIMILARITY == (int)BFH_PLACEMENT_SIMILARITY &&
                   HIERARCHY_POSITIONAL == (int)BFH_PLACEMENT_POSITIONAL &&
                   HIERARCHY_PAPER == (int)BFH_PLACEMENT_PAPER,
               "placement numbers");

static int open_with_io(const char *path, const bfh_options *opt_in, struct env *io,
                        bfh_db **out);

int bfh_open(const char *path, const bfh_options *opt_in, bfh_db **out) {
  return open_with_io(path, opt_in, NULL, out);
}

static int open_with_io(const char *path, const bfh_options *opt_in, struct env *io,
                        bfh_db **out) {
  if (!out) return invalid(NULL, "bfh_open: db (the output handle pointer) is NULL");
  *out = NULL;
  if (!path || !path[0]) return invalid(NULL, "bfh_open: path is NULL or empty");
  bfh_options opt;
  int rc = options_or_defaults("bfh_open", opt_in, &opt);
  if (rc != BFH_OK) return rc;

  const engine_kind_t *kind = engine_kind_for(opt.engine, opt.read_only);
  if ((kind->caps & ENGINE_CAP_STANDALONE) && !opt.standalone_index && standalone_exists(path))
    return invalid(NULL,
                   "bfh_open: %s has a stand-alone index (%s/): open it with standalone_index = 1, "
                   "or remove that directory to drop the index",
                   path, STANDALONE_DIR);
  err_t err;
  err_clear(&err);
  db_params_t want = {opt.value_filter_bits, opt.value_filter_hashes, opt.hash_seed};
  db_params_t stored;
  int have_params = 0;
  env_t *fio = io ? io : env_default(); /* bfh's own files: BFH-PARAMS */
  /* A read-only handle keeps its BFH-PARAMS in its index directory, or nowhere. */
  const char *params_dir = opt.read_only ? opt.index_dir : path;
  if (opt.value_filters && params_dir) {
    rc = db_params_read(fio, params_dir, &stored, &err);
    if (rc == BFH_OK) {
      have_params = 1;
      rc = db_params_check(params_dir, &stored, &want, &err);
    } else if (rc == BFH_NOT_FOUND) {
      rc = BFH_OK;
    }
    if (rc != BFH_OK) return fail(NULL, rc, &err);
  }

  bfh_db *db = calloc(1, sizeof *db);
  if (!db) return invalid(NULL, "bfh_open: %s: out of memory", path), BFH_E_NOMEM;
  db->id = atomic_fetch_add(&next_id, 1);
  db->opt = opt;
  db->kind = kind;
  if (opt.value_filters) {
    value_index_params_t vp = {want.m,
                               want.k,
                               want.seed,
                               opt.order,
                               opt.leaves_on_disk,
                               (hierarchy_placement_t)opt.placement,
                               opt.block_filter_bits,
                               fio};
    db->index = value_index_create(&vp, &err);
    if (!db->index) {
      free(db);
      return fail(NULL, err.code ? err.code : BFH_E_NOMEM, &err);
    }
  }
  if (db->index && !(db->sync = index_sync_create(db->index, &err))) rc = err.code;
  if (rc == BFH_OK && opt.standalone_index)
    rc = standalone_open(kind, path, &opt, io, db->sync, &db->engine, &db->standalone, &err);
  else if (rc == BFH_OK)
    rc = kind->open(path, &opt, io, db->sync, &db->engine, &err);
  if (rc == BFH_OK && opt.value_filters && params_dir && !have_params) {
    rc = db_params_write(fio, params_dir, &want, &err);
    if (rc != BFH_OK) {
      db->engine->ops->close(db->engine, NULL);
      db->engine = NULL;
      standalone_close(db->standalone);
    }
  }
  if (rc != BFH_OK) {
    index_sync_destroy(db->sync);
    value_index_destroy(db->index);
    free(db);
    return fail(NULL, rc, &err);
  }
  *out = db;
  return BFH_OK;
}

/* Drops the stand-alone index and opens the database with one, which builds it. */
static int rebuild_standalone(const char *path, const bfh_options *opt, err_t *err) {
  int rc = standalone_drop(path, err);
  if (rc != BFH_OK) return rc;
  bfh_options o = *opt;
  o.standalone_index = 1;
  o.create_if_missing = 0;
  bfh_db *db;
  rc = open_with_io(path, &o, NULL, &db);
  if (rc != BFH_OK) return err_set(err, rc, "%s", bfh_last_error(NULL));
  rc = bfh_close(db);
  if (rc != BFH_OK) return err_set(err, rc, "%s", bfh_last_error(NULL));
  return BFH_OK;
}

int bfh_repair_sized(const char *path, const bfh_options *opt_in, bfh_repair_report *report,
                     size_t report_size) {
  bfh_repair_report rep;
  memset(&rep, 0, sizeof rep);
  if (report) copy_out(report, report_size, &rep, sizeof rep);
  if (!path || !path[0]) return invalid(NULL, "bfh_repair: path is NULL or empty");
  bfh_options opt;
  int rc = options_or_defaults("bfh_repair", opt_in, &opt);
  if (rc != BFH_OK) return rc;
  err_t err;
  err_clear(&err);
  const engine_kind_t *kind = engine_kind(opt.engine);
  if (!(kind->caps & ENGINE_CAP_REPAIR))
    return failf(NULL, BFH_E_UNSUPPORTED, "bfh_repair: the %s engine has no repair", kind->name);
  rc = kind->repair(path, &opt, &rep, &err);
  if (rc == BFH_OK && (kind->caps & ENGINE_CAP_STANDALONE) && standalone_exists(path)) {
    /* The repaired database may hold writes the index lost, or have lost some it has. */
    rc = rebuild_standalone(path, &opt, &err);
    rep.standalone_rebuilt = rc == BFH_OK;
  }
  if (report) copy_out(report, report_size, &rep, sizeof rep);
  return rc == BFH_OK ? BFH_OK : fail(NULL, rc, &err);
}

int bfh_close(bfh_db *db) {
  if (!db) return BFH_OK;
  err_t err;
  err_clear(&err);
  int rc = db->engine->ops->close(db->engine, &err);
  int rc2 = standalone_close(db->standalone); /* after the engine: every write reached both */
  if (rc == BFH_OK) rc = rc2;
  index_sync_destroy(db->sync);
  value_index_destroy(db->index);
  free(db);
  /* The handle is gone: a failure can only be reported without it. */
  if (rc < 0 && err.code != BFH_OK) return invalid(NULL, "bfh_close: %s", err.msg), rc;
  if (rc < 0) return invalid(NULL, "bfh_close: %s", bfh_strerror(rc)), rc;
  return rc;
}

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

#define CHECK_DB(fn)                                            \
  do {                                                          \
    if (!db) return invalid(NULL, "%s: db handle is NULL", fn); \
  } while (0)

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
    rc = db->engine->ops->put(db->engine, key, key_len, val ? val : &empty, val_len, &err);
  return fail(db, rc, &err);
}

int bfh_delete(bfh_db *db, const void *key, size_t key_len) {
  CHECK_DB("bfh_delete");
  int rc = check_key(db, "bfh_delete", key, key_len);
  if (rc != BFH_OK) return rc;
  err_t err;
  err_clear(&err);
  rc = db->standalone ? standalone_delete(db->standalone, key, key_len, &err)
                      : db->engine->ops->del(db->engine, key, key_len, &err);
  return fail(db, rc, &err);
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
  rc = db->engine->ops->get(db->engine, NULL, key, key_len, val, val_len, &err);
  if (rc == BFH_OK && !*val) {
    *val = malloc(1);
    if (!*val) return invalid(db, "bfh_get: out of memory"), BFH_E_NOMEM;
  }
  return fail(db, rc, &err);
}

static int search(bfh_db *db, const void *val, size_t val_len, bfh_method method, bfh_match_fn fn,
                  void *arg, bfh_search_stats *stats) {
  CHECK_DB("bfh_search");
  int rc = check_value(db, "bfh_search", val, val_len);
  if (rc != BFH_OK) return rc;
  err_t err;
  err_clear(&err);
  static const uint8_t empty = 0;
  if (val == NULL) val = &empty;
  /* One plan (search_plan.h), AUTO's choice among the providers included, and one hash. */
  search_ctx_t ctx = {db->engine, db->index, db->standalone};
  search_query_t q;
  rc = search_prepare(&ctx, val, val_len, method, &q, &err);
  if (rc != BFH_OK) {
    err_prefix(&err, "bfh_search: ");
    return fail(db, rc, &err);
  }
  if (db->kind->search)
    rc = db->kind->search(&ctx, &q, fn, arg, stats, &err);
  else
    rc = search_execute(&ctx, &q, fn, arg, stats, &err);
  return fail(db, rc, &err);
}

int bfh_search_sized(bfh_db *db, const void *val, size_t val_len, bfh_method method,
                     bfh_match_fn fn, void *arg, bfh_search_stats *stats, size_t stats_size) {
  bfh_search_stats st;
  memset(&st, 0, sizeof st);
  int rc = search(db, val, val_len, method, fn, arg, &st);
  if (stats) copy_out(stats, stats_size, &st, sizeof st);
  return rc;
}

int bfh_flush(bfh_db *db) {
  CHECK_DB("bfh_flush");
  err_t err;
  err_clear(&err);
  return fail(db, db->engine->ops->flush(db->engine, &err), &err);
}

static int db_stats(bfh_db *db, bfh_db_stats *st) {
  memset(st, 0, sizeof *st);
  err_t err;
  err_clear(&err);
  /* The table list comes from a view, so that it is the same one a search would see. */
  engine_view_t *view;
  int rc = db->engine->ops->view_acquire(db->engine, &view, &err);
  if (rc != BFH_OK) return fail(db, rc, &err);
  const engine_table_t *tables;
  size_t n = db->engine->ops->view_tables(view, &tables);
  st->tables = n;
  for (size_t i = 0; i < n; i++) st->table_bytes += tables[i].size;
  db->engine->ops->view_release(db->engine, view);
  if (db->engine->ops->stats) db->engine->ops->stats(db->engine, st);
  if (db->standalone) {
    standalone_stats_t ss;
    standalone_get_stats(db->standalone, &ss);
    st->standalone_index = 1;
    st->standalone_entries = ss.entries_put;
    st->standalone_tables = ss.tables;
    st->standalone_bytes = ss.bytes;
    st->standalone_bytes_written = ss.bytes_written;
    st->old_value_reads = ss.old_reads;
    st->old_value_read_ns = ss.old_read_ns;
  }
  if (db->index) {
    value_index_stats_t vs;
    value_index_get_stats(db->index, &vs);
    st->leaf_filters = vs.leaves;
    st->leaf_filter_bytes = vs.leaf_bytes_total;
    st->internal_bytes = vs.internal_bytes;
    st->sliced_bytes = vs.sliced_bytes;
    st->hierarchy_height = vs.height;
    st->mean_leaf_fill = vs.mean_fill;
    st->leaf_memory_bytes = vs.leaf_bytes;
    /* What the index was built with: m, k and seed are the stored ones (open checked them). */
    const value_index_params_t *p = value_index_params(db->index);
    st->value_filters = 1;
    st->value_filter_bits = p->m;
    st->value_filter_hashes = p->k;
    st->order = p->order;
    st->placement = (int)p->placement;
    st->hash_seed = p->seed;
    block_index_stats_t bs;
    block_index_get_stats(value_index_blocks(db->index), &bs);
    index_sync_stats_t ss;
    index_sync_get_stats(db->sync, &ss);
    st->block_filter_tables = bs.tables;
    st->block_filter_bytes = bs.bytes;
    st->block_filters_damaged = bs.damaged + ss.blocks_damaged;
  }
  return BFH_OK;
}

int bfh_stats_sized(bfh_db *db, bfh_db_stats *st, size_t st_size) {
  CHECK_DB("bfh_stats");
  if (!st) return invalid(db, "bfh_stats: st is NULL");
  bfh_db_stats full;
  int rc = db_stats(db, &full);
  copy_out(st, st_size, &full, sizeof full);
  return rc;
}

int bfh_stored_params(const char *path, bfh_options *opt) {
  if (!path || !path[0] || !opt)
    return invalid(NULL, "bfh_stored_params: path is NULL or empty, or opt is NULL");
  bfh_options o;
  int rc = options_copy_in("bfh_stored_params", opt, &o);
  if (rc != BFH_OK) return rc;
  db_params_t p;
  err_t err;
  err_clear(&err);
  rc = db_params_read(env_default(), path, &p, &err);
  if (rc != BFH_OK) return rc == BFH_NOT_FOUND ? rc : fail(NULL, rc, &err);
  o.value_filter_bits = p.m;
  o.value_filter_hashes = p.k;
  o.hash_seed = p.seed;
  o.struct_size = opt->struct_size;
  copy_out(opt, opt->struct_size, &o, sizeof o); /* only the fields the caller has */
  return BFH_OK;
}

/* ---- Inspection (lsm_hooks/api/db_inspect.h) ------------------------------------------------- */

int bfh_tables(bfh_db *db, bfh_table_fn fn, void *arg) {
  CHECK_DB("bfh_tables");
  if (!fn) return invalid(db, "bfh_tables: fn is NULL");
  err_t err;
  err_clear(&err);
  int rc = db_inspect_tables(db->engine, db->kind, db->index, fn, arg, &err);
  return rc == BFH_OK ? BFH_OK : fail(db, rc, &err);
}

int bfh_check_sized(const char *path, const bfh_options *opt_in, bfh_damage_fn fn, void *arg,
                    bfh_check_report *report, size_t report_size) {
  if (!path || !path[0]) return invalid(NULL, "bfh_check: path is NULL or empty");
  bfh_options opt;
  int rc = options_or_defaults("bfh_check", opt_in, &opt);
  if (rc != BFH_OK) return rc;
  bfh_check_report rep;
  memset(&rep, 0, sizeof rep);
  err_t err;
  err_clear(&err);
  const engine_kind_t *kind = engine_kind(opt.engine);
  if (!(kind->caps & ENGINE_CAP_CHECK))
    return failf(NULL, BFH_E_UNSUPPORTED, "bfh_check: the %s engine has no check", kind->name);
  rc = db_inspect_check(path, kind, fn, arg, &rep, &err);
  if (report) copy_out(report, report_size, &rep, sizeof rep);
  return rc == BFH_OK ? BFH_OK : fail(NULL, rc, &err);
}

/* ---- Ordered iteration ------------------------------------------------------------------- */

struct bfh_iter {
  bfh_db *db; /* for the last error */
  engine_iter_t *it;
};

int bfh_iter_create(bfh_db *db, bfh_iter **out) {
  CHECK_DB("bfh_iter_create");
  if (!out) return invalid(db, "bfh_iter_create: it (the output pointer) is NULL");
  *out = NULL;
  if (!(db->kind->caps & ENGINE_CAP_ITERATE))
    return failf(db, BFH_E_UNSUPPORTED, "bfh_iter_create: the %s engine has no ordered iterator",
                 db->kind->name);
  bfh_iter *it = calloc(1, sizeof *it);
  if (!it) return failf(db, BFH_E_NOMEM, "bfh_iter_create: out of memory");
  err_t err;
  err_clear(&err);
  int rc = db->engine->ops->iter_create(db->engine, &it->it, &err);
  if (rc != BFH_OK) {
    free(it);
    return fail(db, rc, &err);
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
  return fail(it->db, it->it->ops->status(it->it, &err), &err);
}

/* ---- The testbed's access, for tests and benchmarks (lsm_hooks/testbed.h) ------------------ */

#include "lsm_hooks/testbed.h"

engine_t *bfh_internal_engine(bfh_db *db) {
  return db->engine;
}
value_index_t *bfh_internal_index(bfh_db *db) {
  return db->index;
}
standalone_t *bfh_internal_standalone(bfh_db *db) {
  return db->standalone;
}

int bfh_internal_open_io(const char *path, const bfh_options *opt, struct env *io, bfh_db **db) {
  return open_with_io(path, opt, io, db);
}

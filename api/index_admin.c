/* bfh_index_add and bfh_index_drop: a database's declared attributes changed after its
 * creation (doc/query.md "Adding and dropping attributes").
 *
 * The rule that makes them safe: the declarations on disk (BFH-ATTRS) never name an attribute
 * whose items some table's filters lack, or a search trusting the filters would miss keys.
 *   add:  the staged repair (api/repair.c, api_repair_staged) rewrites every table, beside the
 *         database, with the items of the stored attributes and the new one; once the stage
 *         is checked, the new BFH-ATTRS is written into it and the persisted index (BFH-INDEX,
 *         a cache of the old tables' filters) removed from it; one swap puts the stage in
 *         place. Before the swap the database is untouched; after it, tables and declarations
 *         are new together.
 *   drop: the declaration goes first (BFH-ATTRS replaced atomically: tmp, fsync, rename,
 *         fsync of the directory); the dropped attribute's items stay in the filters, where
 *         they only raise the false-positive rate until the tables are rewritten.
 * Both take the engine's repair locks, so no handle has the database open meanwhile.
 */
#include <stdlib.h>
#include <string.h>

#include "api/db_attrs.h"
#include "api/db_params.h"
#include "api/handle.h"
#include "api/testbed.h"
#include "index/persisted_index.h"
#include "util/path.h"

/* The stored declarations of path (*n = 0 and *specs NULL when it has none). */
static int stored_specs(env_t *io, const char *path, attr_spec_t **specs, size_t *n, err_t *err) {
  *specs = NULL;
  *n = 0;
  int rc = db_attrs_read(io, path, specs, n, err);
  return rc == BFH_NOT_FOUND ? BFH_OK : rc;
}

/* A copy of specs[0, n) (through their stored form), into *out; the caller frees it with
   attr_specs_free. */
static int specs_copy(const attr_spec_t *specs, size_t n, attr_spec_t **out, err_t *err) {
  uint8_t *buf = NULL;
  size_t len = 0, got = 0;
  int rc = attr_specs_encode(specs, n, &buf, &len, err);
  if (rc == BFH_OK) rc = attr_specs_decode(buf, len, "attributes", out, &got, err);
  free(buf);
  return rc;
}

static int find_spec(const attr_spec_t *specs, size_t n, const char *name) {
  for (size_t i = 0; i < n; i++)
    if (strcmp(specs[i].name, name) == 0) return (int)i;
  return -1;
}

/* The declarations after adding attr: the stored ones (or `value=value` for a database without
   any), then attr's. *out (n + 1 specs) is the caller's, freed with attr_specs_free. */
static int specs_with(const attr_spec_t *stored, size_t n, const bfh_attribute *attr,
                      attr_spec_t **out, size_t *nout, err_t *err) {
  static const bfh_attribute whole = {"value", "value"};
  bfh_attribute all[TERMS_MAX_ATTRS + 1];
  size_t m = 0;
  if (n == 0) all[m++] = whole;
  if (n + m + 1 > TERMS_MAX_ATTRS)
    return err_set(err, BFH_E_INVALID, "attributes: %zu declared already; at most %d", n,
                   TERMS_MAX_ATTRS);
  char(*names)[ATTR_MAX_DECL_BYTES + 1] = malloc((n ? n : 1) * sizeof *names);
  if (!names) return err_set(err, BFH_E_NOMEM, "attributes: out of memory");
  for (size_t i = 0; i < n; i++) {
    attr_spec_format(&stored[i], names[i], sizeof names[i]);
    char *eq = strchr(names[i], '=');
    *eq = '\0'; /* the canonical form is NAME=EXTRACTOR, and a name holds no '=' */
    all[m++] = (bfh_attribute){names[i], eq + 1};
  }
  all[m++] = *attr;
  /* db_attrs_parse refuses a name declared twice, naming it. */
  int rc = db_attrs_parse(all, m, out, err);
  if (rc == BFH_OK) *nout = m;
  free(names);
  return rc;
}

typedef struct add_ctx {
  const attr_spec_t *specs; /* the new declarations */
  size_t n;
  bfh_progress_fn progress;
  void *arg;
} add_ctx_t;

static void progress(const add_ctx_t *c, uint64_t done) {
  if (c->progress) c->progress(c->arg, done, 3);
}

/* api_repair_with_t.before_commit: the new declarations into the checked stage, and the
   persisted index of the old tables out of it. */
static int declare_in_stage(void *arg, env_t *io, const char *stage, err_t *err) {
  add_ctx_t *c = arg;
  if (!io) io = env_default();
  progress(c, 2);
  int rc = db_attrs_write(io, stage, c->specs, c->n, err);
  char *pi = rc == BFH_OK ? path_join(stage, PERSISTED_INDEX_FILE) : NULL;
  if (rc == BFH_OK && !pi) rc = err_set(err, BFH_E_NOMEM, "out of memory");
  if (rc == BFH_OK && env_exists(io, pi)) rc = env_unlink(io, pi, err);
  if (rc == BFH_OK) rc = env_sync_dir(io, stage, err);
  free(pi);
  return rc;
}

/* Checks path, the options and the engine shared by add and drop into *opt. */
static int admin_options(const char *fn, const char *path, const bfh_options *in, bfh_options *opt,
                         unsigned need_caps) {
  if (!path || !path[0]) return invalid(NULL, "%s: path is NULL or empty", fn);
  int rc = api_options_or_defaults(fn, in, opt);
  if (rc != BFH_OK) return rc;
  const engine_kind_t *kind = engine_kind(opt->engine);
  if ((kind->caps & need_caps) != need_caps)
    return api_failf(NULL, BFH_E_UNSUPPORTED,
                     "%s: the %s engine cannot change its attributes here (the own engine can)", fn,
                     kind->name);
  return BFH_OK;
}

static int index_add_with_io(const char *path, const bfh_options *opt_in, const bfh_attribute *attr,
                             bfh_progress_fn fn, void *arg, env_t *io, bfh_index_report *report,
                             size_t report_size) {
  bfh_index_report out;
  memset(&out, 0, sizeof out);
  if (report) api_copy_out(report, report_size, &out, sizeof out);
  bfh_options opt;
  int rc = admin_options("bfh_index_add", path, opt_in, &opt, ENGINE_CAP_OWN | ENGINE_CAP_REPAIR);
  if (rc != BFH_OK) return rc;
  if (!attr || !attr->name || !attr->extractor)
    return invalid(NULL, "bfh_index_add: the attribute, its name or its extractor is NULL");
  err_t err;
  err_clear(&err);
  env_t *fio = env_default();
  db_params_t params;
  rc = db_params_read(fio, path, &params, &err);
  if (rc == BFH_NOT_FOUND)
    rc = err_set(&err, BFH_E_INVALID, "%s has no value filters (no BFH-PARAMS): nothing to index",
                 path);
  attr_spec_t *stored = NULL, *specs = NULL;
  size_t ns = 0, n = 0;
  if (rc == BFH_OK) rc = stored_specs(fio, path, &stored, &ns, &err);
  if (rc == BFH_OK) rc = specs_with(stored, ns, attr, &specs, &n, &err);
  api_repair_with_t with = {NULL, 0, declare_in_stage, NULL};
  add_ctx_t ctx = {specs, n, fn, arg};
  with.arg = &ctx;
  if (rc == BFH_OK) rc = specs_copy(specs, n, &with.specs, &err);
  with.n = with.specs ? n : 0;
  bfh_repair_report rep;
  memset(&rep, 0, sizeof rep);
  if (rc == BFH_OK) {
    progress(&ctx, 0);
    rc = api_repair_staged(path, &opt, io, &with, &rep, &err);
  }
  if (rc == BFH_OK) progress(&ctx, 3);
  attr_specs_free(with.specs, with.n); /* left when the repair did not take them */
  attr_specs_free(specs, n);
  attr_specs_free(stored, ns);
  out.tables_out = rep.tables_out;
  out.keys_out = rep.keys_out;
  out.before_change = rep.before_repair;
  if (report) api_copy_out(report, report_size, &out, sizeof out);
  if (rc != BFH_OK) err_prefix(&err, "bfh_index_add: ");
  return rc == BFH_OK ? BFH_OK : api_fail(NULL, rc, &err);
}

int bfh_index_add_sized(const char *path, const bfh_options *opt, const bfh_attribute *attr,
                        bfh_progress_fn fn, void *arg, bfh_index_report *report,
                        size_t report_size) {
  return index_add_with_io(path, opt, attr, fn, arg, NULL, report, report_size);
}

int bfh_internal_index_add_with_io(const char *path, const bfh_options *opt,
                                   const bfh_attribute *attr, env_t *io) {
  return index_add_with_io(path, opt, attr, NULL, NULL, io, NULL, 0);
}

/* The declarations of path without name, written over BFH-ATTRS. */
static int drop_declaration(env_t *io, const char *path, const char *name, err_t *err) {
  attr_spec_t *specs = NULL;
  size_t n = 0;
  int rc = stored_specs(io, path, &specs, &n, err);
  int i = rc == BFH_OK ? find_spec(specs, n, name) : -1;
  if (rc == BFH_OK && i < 0)
    rc = err_set(err, BFH_E_INVALID, "%s declares no attribute %s", path, name);
  /* None left would mean "the whole value", whose items the tables may not hold. */
  if (rc == BFH_OK && n == 1)
    rc = err_set(err, BFH_E_INVALID,
                 "%s: %s is its last attribute; declare another first (bfh index add)", path, name);
  /* A composite's member goes after the composite, never before it. */
  for (size_t j = 0; rc == BFH_OK && j < n; j++)
    if (specs[j].kind == ATTR_PAIR &&
        (strcmp(specs[j].member[0], name) == 0 || strcmp(specs[j].member[1], name) == 0))
      rc = err_set(err, BFH_E_INVALID, "%s: %s is a member of the composite %s; drop %s first",
                   path, name, specs[j].name, specs[j].name);
  if (rc == BFH_OK) {
    attr_spec_release(&specs[i]);
    memmove(&specs[i], &specs[i + 1], (n - (size_t)i - 1) * sizeof *specs);
    n--;
    rc = db_attrs_write(io, path, specs, n, err);
  }
  attr_specs_free(specs, n);
  return rc;
}

int bfh_index_drop(const char *path, const bfh_options *opt_in, const char *name) {
  bfh_options opt;
  int rc = admin_options("bfh_index_drop", path, opt_in, &opt, ENGINE_CAP_REPAIR);
  if (rc != BFH_OK) return rc;
  if (!name) return invalid(NULL, "bfh_index_drop: name is NULL");
  const engine_kind_t *kind = engine_kind(opt.engine);
  err_t err;
  err_clear(&err);
  void *lock = NULL;
  rc = kind->repair_lock(path, &lock, &err);
  if (rc == BFH_OK) rc = drop_declaration(env_default(), path, name, &err);
  kind->repair_unlock(lock);
  if (rc != BFH_OK) err_prefix(&err, "bfh_index_drop: ");
  return rc == BFH_OK ? BFH_OK : api_fail(NULL, rc, &err);
}

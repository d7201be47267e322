/* bfh_repair: one rule for every engine. Nothing under the database's directory is moved,
 * replaced or written until the repaired database has been built beside it and checked:
 *
 *   1. the engine's repair_lock checks that the directory is its database and takes the
 *      locks its owners take (engine.h);
 *   2. a stage, a copy of the directory made of hard links and small copies, is made beside
 *      it (lsm_hooks/engines/repair_stage.h);
 *   3. the census before: what the stage reads as it is, with bfh's own readers (a read-only
 *      handle of each column family; the own engine has none and is skipped), and, for the
 *      stock engines, which tables `bfh check` reads clean;
 *   4. the engine's repair runs in the stage;
 *   5. the census after: the stage opens, and reads in each column family at least the keys
 *      it read before; every table check read clean is still live (a stock repair keeps a
 *      clean table by its number: one it drops was not found, as RocksDB's repair with
 *      LevelDB's .ldb tables); the own engine's stage holds the keys its repair says it wrote;
 *   6. the stage is swapped in, in one step.
 * A failure at any step, or a census that finds less, leaves the directory as it was, byte
 * for byte, and says why. A stand-alone index is built again afterwards (standalone.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/db_attrs.h"
#include "api/db_inspect.h"
#include "api/handle.h"
#include "lsm_hooks/engines/stock/stock.h"
#include "lsm_hooks/engines/repair_stage.h"
#include "api/testbed.h"
#include "util/env.h"

/* ---- The census ----------------------------------------------------------------------- */

typedef struct census {
  size_t n;         /* column families (1 for an engine without them) */
  char **names;     /* their names (NULL: the engine's only one) */
  uint64_t *keys;   /* live keys read in each */
  int known;        /* 0: the database did not open (keys unknown) */
  uint64_t *tables; /* live table numbers of every family (after), or tables check read
                       clean (before) */
  size_t ntables, tables_cap;
  char why[ERR_MSG_BYTES]; /* why it did not open */
} census_t;

static void census_release(census_t *c) {
  env_names_free(c->names, c->names ? c->n : 0);
  free(c->keys);
  free(c->tables);
  memset(c, 0, sizeof *c);
}

static int add_table(census_t *c, uint64_t number) {
  if (c->ntables == c->tables_cap) {
    size_t cap = c->tables_cap ? 2 * c->tables_cap : 64;
    uint64_t *t = realloc(c->tables, cap * sizeof *t);
    if (!t) return BFH_E_NOMEM;
    c->tables = t;
    c->tables_cap = cap;
  }
  c->tables[c->ntables++] = number;
  return BFH_OK;
}

static int has_table(const census_t *c, uint64_t number) {
  for (size_t i = 0; i < c->ntables; i++)
    if (c->tables[i] == number) return 1;
  return 0;
}

/* The live keys and tables of one column family (name; NULL: the only one) of dir, through
   the row of kind that reads without writing into the directory (the own engine has none:
   its read-write row, on the stage). */
static int count_family(const engine_kind_t *kind, const char *dir, const char *name,
                        uint64_t *keys, census_t *c, err_t *err) {
  bfh_options o;
  int rc = api_options_or_defaults("bfh_repair", NULL, &o);
  if (rc != BFH_OK) return err_set(err, rc, "bfh_repair: options");
  o.engine = kind->id;
  o.value_filters = 0;
  o.create_if_missing = 0;
  o.column_family = name;
  o.read_only = (kind->caps & ENGINE_CAP_OWN) == 0;
  const engine_kind_t *row = engine_kind_for(kind->id, o.read_only);
  engine_t *e = NULL;
  rc = row->open(dir, &o, NULL, NULL, &e, err);
  if (rc != BFH_OK) return rc;
  engine_iter_t *it = NULL;
  rc = engine_iter_create(e, &it, err);
  *keys = 0;
  if (rc == BFH_OK) {
    for (it->ops->seek_first(it); it->ops->valid(it); it->ops->next(it)) ++*keys;
    rc = it->ops->status(it, err);
    it->ops->destroy(it);
  }
  engine_view_t *view = NULL;
  if (rc == BFH_OK) rc = engine_view_acquire(e, &view, err);
  if (rc == BFH_OK) {
    const engine_table_t *t;
    size_t n = engine_view_tables(e, view, &t);
    for (size_t i = 0; i < n && rc == BFH_OK; i++)
      if (add_table(c, t[i].number) != BFH_OK) rc = err_set(err, BFH_E_NOMEM, "%s: no memory", dir);
    engine_view_release(e, view);
  }
  err_t e2;
  int crc = engine_close(e, rc == BFH_OK ? err : &e2);
  return rc == BFH_OK ? crc : rc;
}

/* What dir reads: its column families, each one's live keys and the live tables. c->known is 0
   (and c->why says why) when it does not open; an error only for no memory. */
static int census_read(const engine_kind_t *kind, const char *dir, census_t *c, err_t *err) {
  memset(c, 0, sizeof *c);
  err_t e;
  err_clear(&e);
  int rc = kind->families ? kind->families(dir, &c->names, &c->n, &e) : BFH_OK;
  if (!kind->families) c->n = 1;
  if (rc == BFH_OK && !(c->keys = calloc(c->n ? c->n : 1, sizeof *c->keys)))
    return err_set(err, BFH_E_NOMEM, "%s: no memory", dir);
  for (size_t i = 0; i < c->n && rc == BFH_OK; i++)
    rc = count_family(kind, dir, c->names ? c->names[i] : NULL, &c->keys[i], c, &e);
  if (rc == BFH_E_NOMEM) return err_set(err, rc, "%s", e.msg);
  c->known = rc == BFH_OK;
  if (!c->known) snprintf(c->why, sizeof c->why, "%s", e.msg);
  return BFH_OK;
}

/* The tables check reads clean: every table file of dir that check names no damage in. */
static void note_damage(void *arg, const char *file, uint64_t offset, const char *what) {
  (void)offset, (void)what;
  census_t *c = arg;
  uint64_t number;
  if (!stock_table_file_number(file, &number)) return;
  for (size_t i = 0; i < c->ntables; i++)
    if (c->tables[i] == number) c->tables[i] = c->tables[--c->ntables], i--;
}

static int clean_tables(const engine_kind_t *kind, const char *dir, census_t *c, err_t *err) {
  char **names = NULL;
  size_t n = 0;
  int rc = env_list_dir(env_default(), dir, &names, &n, err);
  c->ntables = 0;
  for (size_t i = 0; i < n && rc == BFH_OK; i++) {
    uint64_t number;
    if (stock_table_file_number(names[i], &number) && add_table(c, number) != BFH_OK)
      rc = err_set(err, BFH_E_NOMEM, "%s: no memory", dir);
  }
  env_names_free(names, n);
  bfh_check_report rep;
  memset(&rep, 0, sizeof rep);
  err_t e;
  /* What check finds wrong besides the tables (a damaged MANIFEST, a log) is the repair's to
     mend; only a failure to run it at all is an error here. */
  int crc = rc == BFH_OK ? db_inspect_check(dir, kind, note_damage, c, &rep, &e) : rc;
  if (crc != BFH_OK && crc != BFH_E_CORRUPT) rc = err_set(err, crc, "check: %s", e.msg);
  return rc;
}

/* Step 5 of the header: BFH_OK when after holds what before held. */
static int census_compare(const engine_kind_t *kind, const census_t *before, const census_t *after,
                          const bfh_repair_report *rep, err_t *err) {
  if (!after->known)
    return err_set(err, BFH_E_CORRUPT, "the repaired copy does not open: %s", after->why);
  for (size_t i = 0; before->known && i < before->n; i++) {
    const char *name = before->names ? before->names[i] : NULL;
    size_t j = 0;
    while (name && j < after->n && strcmp(after->names[j], name) != 0) j++;
    uint64_t kept = j < after->n ? after->keys[j] : 0;
    if (kept < before->keys[i])
      return err_set(err, BFH_E_CORRUPT,
                     "the repaired copy reads %llu keys%s%s%s where the database reads %llu",
                     (unsigned long long)kept, name ? " in column family '" : "", name ? name : "",
                     name ? "'" : "", (unsigned long long)before->keys[i]);
  }
  if (!(kind->caps & ENGINE_CAP_OWN)) {
    size_t dropped = 0, first = 0;
    for (size_t i = 0; i < before->ntables; i++)
      if (!has_table(after, before->tables[i]) && dropped++ == 0) first = i;
    if (dropped)
      return err_set(err, BFH_E_CORRUPT,
                     "the repair dropped %zu of the %zu tables check reads clean (the first: "
                     "%06llu)",
                     dropped, before->ntables, (unsigned long long)before->tables[first]);
  } else if (after->keys[0] != rep->keys_out) {
    return err_set(err, BFH_E_CORRUPT,
                   "the repaired copy reads %llu keys where the repair wrote %llu",
                   (unsigned long long)after->keys[0], (unsigned long long)rep->keys_out);
  }
  return BFH_OK;
}

/* ---- The repair ------------------------------------------------------------------------ */

/* Drops the stand-alone index and opens the database with one, which builds it. */
static int rebuild_standalone(const char *path, const bfh_options *opt, err_t *err) {
  int rc = standalone_drop(path, err);
  if (rc != BFH_OK) return rc;
  bfh_options o = *opt;
  o.standalone_index = 1;
  o.create_if_missing = 0;
  bfh_db *db;
  rc = bfh_open(path, &o, &db);
  if (rc != BFH_OK) return err_set(err, rc, "%s", bfh_last_error(NULL));
  rc = bfh_close(db);
  if (rc != BFH_OK) return err_set(err, rc, "%s", bfh_last_error(NULL));
  return BFH_OK;
}

/* The engine's repair of the stage dir. The own engine writes the value filters of the
   tables it rebuilds: with the database's m, k and seed (BFH-PARAMS), or, where the file is
   missing or damaged, the caller's, which the file then records. */
static int repair_with_params(const engine_kind_t *kind, const char *dir, const bfh_options *opt,
                              api_repair_with_t *with, bfh_repair_report *rep, err_t *err) {
  if (!(kind->caps & ENGINE_CAP_OWN) || !opt->value_filters)
    return kind->repair(dir, opt, rep, err);
  bfh_options o = *opt;
  db_params_t params;
  err_t e;
  int rc = db_params_read(env_default(), dir, &params, &e);
  if (rc == BFH_E_UNSUPPORTED || rc == BFH_E_NOMEM || rc == BFH_E_IO) {
    *err = e;
    return rc;
  }
  int rewrite = rc != BFH_OK;
  if (rewrite)
    params = (db_params_t){opt->value_filter_bits, opt->value_filter_hashes, opt->hash_seed};
  o.value_filter_bits = params.m;
  o.value_filter_hashes = params.k;
  o.hash_seed = params.seed;
  /* And with its declared attributes' items (BFH-ATTRS, db_attrs.h), as its other tables. */
  attr_spec_t *specs = NULL;
  size_t nspecs = 0;
  terms_t *terms = NULL;
  if (with) { /* the attributes the caller gives, not the stored ones */
    specs = with->specs, nspecs = with->n, rc = BFH_OK;
    with->specs = NULL, with->n = 0;
  } else {
    rc = db_attrs_read(env_default(), dir, &specs, &nspecs, err);
  }
  if (rc == BFH_NOT_FOUND || (rc == BFH_OK && nspecs == 0)) {
    rc = kind->repair(dir, &o, rep, err);
  } else if (rc == BFH_OK) {
    rc = terms_create(specs, nspecs, params.seed, &terms, err);
    if (rc == BFH_OK) specs = NULL; /* terms owns them */
    if (rc == BFH_OK) rc = engine_lsm_repair_items(dir, &o, terms_value_terms(terms), rep, err);
  }
  attr_specs_free(specs, nspecs);
  terms_destroy(terms);
  if (rc == BFH_OK && rewrite) rc = db_params_write(env_default(), dir, &params, err);
  rep->params_rewritten = rc == BFH_OK && rewrite;
  return rc;
}

/* Steps 2 to 6 of the header, under the engine's locks. */
static int repair_staged(const engine_kind_t *kind, env_t *io, const char *path,
                         const bfh_options *opt, api_repair_with_t *with, bfh_repair_report *rep,
                         err_t *err) {
  repair_stage_t *stage = NULL;
  int rc = repair_stage_create(io, path, &stage, err);
  if (rc != BFH_OK) return rc;
  const char *dir = repair_stage_dir(stage);
  census_t before, after;
  memset(&before, 0, sizeof before);
  memset(&after, 0, sizeof after);
  if (!(kind->caps & ENGINE_CAP_OWN)) rc = census_read(kind, dir, &before, err);
  if (rc == BFH_OK && (kind->caps & ENGINE_CAP_CHECK) && !(kind->caps & ENGINE_CAP_OWN))
    rc = clean_tables(kind, dir, &before, err);
  if (rc == BFH_OK) rc = repair_with_params(kind, dir, opt, with, rep, err);
  if (rc == BFH_OK) rc = census_read(kind, dir, &after, err);
  if (rc == BFH_OK) rc = census_compare(kind, &before, &after, rep, err);
  if (rc == BFH_OK && with && with->before_commit) rc = with->before_commit(with->arg, io, dir, err);
  census_release(&before);
  census_release(&after);
  if (rc != BFH_OK) {
    repair_stage_name_path(stage, err);
    repair_stage_destroy(stage);
    err_prefix(err, "%s: repair refused, nothing changed: ", path);
    return rc;
  }
  unsigned kept = 0;
  rc = repair_stage_commit(stage, &kept, err);
  rep->before_repair = kept;
  if (rc != BFH_OK)
    err_prefix(err, "%s: repair built but not put in place, nothing changed: ", path);
  return rc;
}

int api_repair_staged(const char *path, const bfh_options *opt, env_t *io,
                      api_repair_with_t *with, bfh_repair_report *rep, err_t *err) {
  const engine_kind_t *kind = engine_kind(opt->engine);
  /* With 0s, a database that lost its BFH-PARAMS gets a new one's m, k and seed (stored ones
     win). */
  bfh_options ropt = *opt;
  db_params_t p = api_params_want(opt, NULL);
  ropt.value_filter_bits = p.m;
  ropt.value_filter_hashes = p.k;
  ropt.hash_seed = p.seed;
  void *lock = NULL;
  int rc = kind->repair_lock(path, &lock, err);
  if (rc == BFH_OK) rc = repair_staged(kind, io, path, &ropt, with, rep, err);
  kind->repair_unlock(lock);
  return rc;
}

static int repair_with_io(const char *path, const bfh_options *opt_in, env_t *io,
                          bfh_repair_report *report, size_t report_size) {
  bfh_repair_report rep;
  memset(&rep, 0, sizeof rep);
  if (report) api_copy_out(report, report_size, &rep, sizeof rep);
  if (!path || !path[0]) return invalid(NULL, "bfh_repair: path is NULL or empty");
  bfh_options opt;
  int rc = api_options_or_defaults("bfh_repair", opt_in, &opt);
  if (rc != BFH_OK) return rc;
  err_t err;
  err_clear(&err);
  const engine_kind_t *kind = engine_kind(opt.engine);
  if (!(kind->caps & ENGINE_CAP_REPAIR))
    return api_failf(NULL, BFH_E_UNSUPPORTED, "bfh_repair: the %s engine has no repair",
                     kind->name);
  rc = api_repair_staged(path, &opt, io, NULL, &rep, &err);
  if (rc == BFH_OK && (kind->caps & ENGINE_CAP_STANDALONE) && standalone_exists(path)) {
    /* The repaired database may hold writes the index lost, or have lost some it has. */
    rc = rebuild_standalone(path, &opt, &err);
    rep.standalone_rebuilt = rc == BFH_OK;
  }
  if (report) api_copy_out(report, report_size, &rep, sizeof rep);
  return rc == BFH_OK ? BFH_OK : api_fail(NULL, rc, &err);
}

int bfh_repair_sized(const char *path, const bfh_options *opt, bfh_repair_report *report,
                     size_t report_size) {
  return repair_with_io(path, opt, NULL, report, report_size);
}

int bfh_internal_repair_with_io(const char *path, const bfh_options *opt, env_t *io,
                                bfh_repair_report *report) {
  return repair_with_io(path, opt, io, report, sizeof *report);
}

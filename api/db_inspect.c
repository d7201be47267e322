/* db_inspect: the live tables of a handle, and the check of a closed database
 * (api/db_inspect.h).
 */
#include "api/db_inspect.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lsm/filename.h"
#include "lsm/verify.h"
#include "api/db_params.h"
#include "index/block_index.h"
#include "index/standalone.h"
#include "util/env.h"
#include "util/path.h"

/* ---- bfh_tables ------------------------------------------------------------------------ */

static int by_level_number(const void *a, const void *b) {
  const engine_table_t *x = a, *y = b;
  if (x->level != y->level) return x->level < y->level ? -1 : 1;
  return x->number < y->number ? -1 : x->number > y->number;
}

/* The value filter of a table vi has a leaf for, built again from the table as the leaf was,
   and whether vi holds a block filter for it. */
static int describe_filter(value_index_t *vi, index_sync_t *sync, uint64_t number,
                           bfh_table_info *info, err_t *err) {
  if (!vi || !sync || !value_index_contains(vi, number)) return ST_OK; /* not indexed (yet) */
  const value_index_params_t *p = value_index_params(vi);
  value_filter_t *leaf = NULL;
  int rc = index_sync_read_filter(sync, number, &leaf, err);
  if (rc != ST_OK) return rc;
  info->has_value_filter = 1;
  info->value_filter_fill = value_filter_fill_ratio(leaf);
  info->value_filter_fpr = value_filter_fpr_estimate(leaf);
  info->value_filter_bits = p->m;
  info->value_filter_hashes = p->k;
  info->has_block_filter = block_index_has(value_index_blocks(vi), number);
  value_filter_destroy(leaf);
  return ST_OK;
}

/* Describes each table of the list and hands it to fn. */
static int visit_tables(engine_t *e, const engine_kind_t *kind, value_index_t *vi,
                        index_sync_t *sync, const engine_table_t *tables, size_t n, bfh_table_fn fn,
                        void *arg, err_t *err) {
  int rc = ST_OK, stop = 0;
  for (size_t i = 0; i < n && rc == ST_OK && !stop; i++) {
    bfh_table_info info;
    memset(&info, 0, sizeof info);
    info.number = tables[i].number;
    info.level = tables[i].level;
    info.bytes = tables[i].size;
    rc = kind->describe(e, info.number, &info, err);
    if (rc == ST_OK && !info.has_value_filter)
      rc = describe_filter(vi, sync, info.number, &info, err);
    if (rc == ST_OK) stop = fn(arg, &info);
    free((void *)info.smallest);
    free((void *)info.largest);
  }
  return rc;
}

int db_inspect_tables(engine_t *e, const engine_kind_t *kind, value_index_t *vi, index_sync_t *sync,
                      bfh_table_fn fn, void *arg, err_t *err) {
  engine_view_t *view;
  int rc = engine_view_acquire(e, &view, err);
  if (rc != ST_OK) return rc;
  const engine_table_t *listed;
  size_t n = engine_view_tables(e, view, &listed);
  engine_table_t *tables = malloc((n ? n : 1) * sizeof *tables);
  if (!tables) {
    rc = err_set(err, ST_E_NOMEM, "tables: out of memory");
  } else {
    memcpy(tables, listed, n * sizeof *tables);
    qsort(tables, n, sizeof *tables, by_level_number);
    rc = visit_tables(e, kind, vi, sync, tables, n, fn, arg, err);
  }
  free(tables);
  engine_view_release(e, view);
  return rc;
}

/* ---- bfh_check ------------------------------------------------------------------------- */

/* BFH-PARAMS: a 36-byte record with one checksum, so damage is reported at offset 0. Sets
 *p (zero when absent or damaged). */
static int check_params(const char *path, bfh_damage_fn fn, void *arg, engine_check_stats_t *st,
                        db_params_t *p, err_t *err) {
  memset(p, 0, sizeof *p);
  err_t e;
  int rc = db_params_read(env_default(), path, p, &e);
  if (rc == ST_NOT_FOUND) return ST_OK;
  if (rc == ST_E_CORRUPT || rc == ST_E_UNSUPPORTED) {
    memset(p, 0, sizeof *p);
    st->damaged++;
    if (fn) fn(arg, DB_PARAMS_FILE, 0, lsm_verify_message_what(e.msg));
  } else if (rc != ST_OK) {
    if (err) *err = e;
    return rc;
  }
  uint64_t size = 0;
  char *file = path_join(path, DB_PARAMS_FILE);
  if (!file) return err_set(err, ST_E_NOMEM, "%s/%s: no memory for its path", path, DB_PARAMS_FILE);
  if (env_path_size(env_default(), file, &size, NULL) == ST_OK) st->files++;
  st->bytes += size;
  free(file);
  return ST_OK;
}

/* Damage in the stand-alone index's directory, named from the database's. */
typedef struct prefixed {
  bfh_damage_fn fn;
  void *arg;
} prefixed_t;

static void prefixed_damage(void *arg, const char *file, uint64_t offset, const char *what) {
  prefixed_t *c = arg;
  if (!c->fn) return;
  char *name = path_join(STANDALONE_DIR, file);
  c->fn(c->arg, name ? name : file, offset, what); /* no memory: the bare name */
  free(name);
}

int db_inspect_check(const char *path, const engine_kind_t *kind, bfh_damage_fn fn, void *arg,
                     bfh_check_report *rep, err_t *err) {
  engine_check_stats_t st;
  memset(&st, 0, sizeof st);
  db_params_t stored;
  int rc = check_params(path, fn, arg, &st, &stored, err);
  engine_filter_params_t p = {stored.m, stored.k, stored.seed};
  if (rc == ST_OK) rc = kind->check(path, &p, fn, arg, &st, &rep->cache_damaged, err);
  if (rc == ST_OK && (kind->caps & ENGINE_CAP_STANDALONE) && standalone_exists(path)) {
    /* The index is an own-engine store whatever the database's engine. */
    const engine_kind_t *own = engine_kind(BFH_ENGINE_LSM);
    char *dir = path_join(path, STANDALONE_DIR);
    prefixed_t pc = {fn, arg};
    rc = dir ? own->check(dir, &p, prefixed_damage, &pc, &st, &rep->cache_damaged, err)
             : err_set(err, ST_E_NOMEM, "%s/%s: no memory for its path", path, STANDALONE_DIR);
    free(dir);
  }
  rep->files = st.files;
  rep->bytes = st.bytes;
  rep->blocks = st.blocks;
  rep->records = st.records;
  rep->damaged = st.damaged;
  rep->torn_tails = st.torn_tails;
  rep->torn_tail_bytes = st.torn_tail_bytes;
  if (rc == ST_OK && st.damaged)
    rc = err_set(err, ST_E_CORRUPT, "%s: %llu damaged records, blocks or files", path,
                 (unsigned long long)st.damaged);
  return rc;
}

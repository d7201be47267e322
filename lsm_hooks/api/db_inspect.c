/* db_inspect: the live tables of a handle, and the check of a closed database
 * (lsm_hooks/api/db_inspect.h).
 */
#include "lsm_hooks/api/db_inspect.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "filters/block_filter.h"
#include "filters/value_filter.h"
#include "lsm/filename.h"
#include "lsm/table.h"
#include "lsm/verify.h"
#include "lsm_hooks/api/db_params.h"
#include "lsm_hooks/engines/lsm/engine_lsm.h"
#include "lsm_hooks/search/standalone.h"
#include "lsm_hooks/engines/lsm/value_hook.h"

/* ---- bfh_tables ------------------------------------------------------------------------ */

/* A copy of the user key of internal key ikey; NULL on no memory. */
static uint8_t *copy_user_key(const uint8_t *ikey, size_t iklen, size_t *n) {
  *n = iklen >= INTERNAL_KEY_TAG_BYTES ? iklen - INTERNAL_KEY_TAG_BYTES : 0;
  uint8_t *p = malloc(*n ? *n : 1);
  if (p) memcpy(p, ikey, *n);
  return p;
}

/* The key range: the first key of the first data block (one block read) and the index's
   last separator, which is the table's last key. */
static int describe_keys(table_t *t, bfh_table_info *info, err_t *err) {
  iterator_t *it = table_iterator_create(t);
  if (!it) return err_set(err, ST_E_NOMEM, "tables: out of memory");
  iterator_seek_first(it);
  int rc = iterator_status(it, err);
  if (rc == ST_OK && iterator_valid(it)) {
    size_t sl, ll;
    const uint8_t *s = iterator_key(it, &sl), *l = table_largest(t, &ll);
    info->smallest = copy_user_key(s, sl, &info->smallest_len);
    info->largest = copy_user_key(l, ll, &info->largest_len);
    if (!info->smallest || !info->largest) rc = err_set(err, ST_E_NOMEM, "tables: out of memory");
  }
  iterator_destroy(it);
  return rc;
}

/* The value filter and block filter the table hook stored in the table's meta blocks. */
static int describe_filters(table_t *t, bfh_table_info *info, err_t *err) {
  void *data;
  size_t size;
  int rc = table_read_meta(t, VALUE_HOOK_META_NAME, &data, &size, NULL, err);
  if (rc == ST_OK) {
    value_filter_t *f = NULL;
    rc = value_filter_deserialize(data, size, &f, err);
    free(data);
    if (rc != ST_OK) return rc;
    info->has_value_filter = 1;
    info->value_filter_fill = value_filter_fill_ratio(f);
    info->value_filter_fpr = value_filter_fpr_estimate(f);
    info->value_filter_bits = f->m;
    info->value_filter_hashes = f->k;
    value_filter_destroy(f);
  } else if (rc != ST_NOT_FOUND) {
    return rc;
  }
  rc = table_read_meta(t, VALUE_HOOK_BLOCKS_META_NAME, &data, &size, NULL, err);
  info->has_block_filter = rc == ST_OK;
  if (rc == ST_OK) free(data);
  return rc == ST_NOT_FOUND ? ST_OK : rc;
}

int db_inspect_lsm_describe(engine_t *e, value_index_t *vi, uint64_t number, bfh_table_info *info,
                            err_t *err) {
  (void)vi; /* the own engine's tables carry their filters */
  char path[LSM_PATH_MAX];
  lsm_table_path(engine_lsm_db(e), number, path, sizeof path);
  table_t *t = NULL;
  int rc = table_open(env_default(), path, number, &t, err);
  if (rc != ST_OK) return rc;
  info->entries = table_entries(t);
  rc = describe_keys(t, info, err);
  if (rc == ST_OK) rc = describe_filters(t, info, err);
  table_unref(t);
  return rc;
}

static int by_level_number(const void *a, const void *b) {
  const engine_table_t *x = a, *y = b;
  if (x->level != y->level) return x->level < y->level ? -1 : 1;
  return x->number < y->number ? -1 : x->number > y->number;
}

/* Describes each table of the list and hands it to fn. */
static int visit_tables(engine_t *e, const engine_kind_t *kind, value_index_t *vi,
                        const engine_table_t *tables, size_t n, bfh_table_fn fn, void *arg,
                        err_t *err) {
  int rc = ST_OK, stop = 0;
  for (size_t i = 0; i < n && rc == ST_OK && !stop; i++) {
    bfh_table_info info;
    memset(&info, 0, sizeof info);
    info.number = tables[i].number;
    info.level = tables[i].level;
    info.bytes = tables[i].size;
    rc = kind->describe(e, vi, info.number, &info, err);
    if (rc == ST_OK) stop = fn(arg, &info);
    free((void *)info.smallest);
    free((void *)info.largest);
  }
  return rc;
}

int db_inspect_tables(engine_t *e, const engine_kind_t *kind, value_index_t *vi, bfh_table_fn fn,
                      void *arg, err_t *err) {
  engine_view_t *view;
  int rc = e->ops->view_acquire(e, &view, err);
  if (rc != ST_OK) return rc;
  const engine_table_t *listed;
  size_t n = e->ops->view_tables(view, &listed);
  engine_table_t *tables = malloc((n ? n : 1) * sizeof *tables);
  if (!tables) {
    rc = err_set(err, ST_E_NOMEM, "tables: out of memory");
  } else {
    memcpy(tables, listed, n * sizeof *tables);
    qsort(tables, n, sizeof *tables, by_level_number);
    rc = visit_tables(e, kind, vi, tables, n, fn, arg, err);
  }
  free(tables);
  e->ops->view_release(e, view);
  return rc;
}

/* ---- bfh_check ------------------------------------------------------------------------- */

/* Where damage goes: the caller's bfh_damage_fn, each file name behind a prefix. */
typedef struct check {
  lsm_damage_fn fn; /* may be NULL */
  void *arg;
  const char *prefix; /* "" or the stand-alone index's directory and '/' */
} check_t;

static void on_damage(void *arg, const char *file, uint64_t offset, const char *what) {
  check_t *c = arg;
  if (!c->fn) return;
  char name[LSM_PATH_MAX];
  snprintf(name, sizeof name, "%s%s", c->prefix, file);
  c->fn(c->arg, name, offset, what);
}

/* A value or block filter whose meta block checked out but whose own layout does not
   (its own checksum, its header). A meta block that failed its checksum was reported by
   lsm_verify already. */
static uint64_t check_filter(check_t *c, table_t *t, const char *file, const char *meta) {
  void *data;
  size_t size;
  uint64_t offset;
  if (table_read_meta(t, meta, &data, &size, &offset, NULL) != ST_OK) return 0;
  err_t e;
  int rc;
  if (strcmp(meta, VALUE_HOOK_META_NAME) == 0) {
    value_filter_t *f = NULL;
    rc = value_filter_deserialize(data, size, &f, &e);
    value_filter_destroy(f);
  } else {
    block_filter_t *f = NULL;
    rc = block_filter_deserialize(data, size, &f, &e);
    block_filter_destroy(f);
  }
  free(data);
  if (rc != ST_E_CORRUPT && rc != ST_E_UNSUPPORTED) return 0;
  on_damage(c, file, offset, lsm_verify_message_what(e.msg));
  return 1;
}

static uint64_t check_table_filters(void *arg, table_t *t, const char *file) {
  return check_filter(arg, t, file, VALUE_HOOK_META_NAME) +
         check_filter(arg, t, file, VALUE_HOOK_BLOCKS_META_NAME);
}

/* BFH-PARAMS: a 36-byte record with one checksum, so damage is reported at offset 0. Sets
 *p (zero when absent or damaged). */
static int check_params(const char *path, check_t *c, lsm_verify_stats_t *st, db_params_t *p,
                        err_t *err) {
  memset(p, 0, sizeof *p);
  err_t e;
  int rc = db_params_read(env_default(), path, p, &e);
  if (rc == ST_NOT_FOUND) return ST_OK;
  if (rc == ST_E_CORRUPT || rc == ST_E_UNSUPPORTED) {
    memset(p, 0, sizeof *p);
    st->damaged++;
    on_damage(c, DB_PARAMS_FILE, 0, lsm_verify_message_what(e.msg));
  } else if (rc != ST_OK) {
    if (err) *err = e;
    return rc;
  }
  uint64_t size = 0;
  char file[LSM_PATH_MAX];
  snprintf(file, sizeof file, "%s/%s", path, DB_PARAMS_FILE);
  if (env_path_size(env_default(), file, &size, NULL) == ST_OK) st->files++;
  st->bytes += size;
  return ST_OK;
}

int db_inspect_lsm_check(const char *path, const db_params_t *p, lsm_damage_fn damage, void *arg,
                         lsm_verify_stats_t *st, uint64_t *cache_damaged, err_t *err) {
  (void)p, (void)cache_damaged; /* the filters are checked against their own checksums */
  check_t c = {damage, arg, ""};
  lsm_verify_hooks_t hooks = {on_damage, check_table_filters, &c};
  int rc = lsm_verify(path, env_default(), &hooks, st, err);
  if (rc != ST_OK || !standalone_exists(path)) return rc;
  char dir[LSM_PATH_MAX];
  snprintf(dir, sizeof dir, "%s/%s", path, STANDALONE_DIR);
  check_t sc = {damage, arg, STANDALONE_DIR "/"};
  hooks.arg = &sc;
  return lsm_verify(dir, env_default(), &hooks, st, err);
}

int db_inspect_check(const char *path, const engine_kind_t *kind, bfh_damage_fn fn, void *arg,
                     bfh_check_report *rep, err_t *err) {
  check_t c = {fn, arg, ""};
  lsm_verify_stats_t st;
  memset(&st, 0, sizeof st);
  db_params_t p;
  int rc = check_params(path, &c, &st, &p, err);
  if (rc == ST_OK) rc = kind->check(path, &p, fn, arg, &st, &rep->cache_damaged, err);
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

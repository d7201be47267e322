/* The own engine's row of engines.c: describe (bfh_tables) and check (bfh_check), read with
 * lsm/ (table.h, verify.h): a table's footer, index, first data block and filter meta
 * blocks; lsm_verify of the database, and the layout of every
 * filter meta block. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "filters/block_filter.h"
#include "filters/value_filter.h"
#include "lsm/filename.h"
#include "lsm/table.h"
#include "lsm/verify.h"
#include "lsm_hooks/engines/lsm/engine_lsm.h"
#include "lsm_hooks/engines/lsm/value_hook.h"
#include "util/env.h"
#include "util/path.h"

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

int engine_lsm_describe(engine_t *e, uint64_t number, bfh_table_info *info, err_t *err) {
  /* the own engine's tables carry their filters: they are facts of its tables */
  char *path = lsm_table_path(engine_lsm_db(e), number);
  if (!path)
    return err_set(err, ST_E_NOMEM, "table %06llu: no memory for its path",
                   (unsigned long long)number);
  table_t *t = NULL;
  int rc = table_open(env_default(), path, number, &t, err);
  free(path);
  if (rc != ST_OK) return rc;
  rc = engine_lsm_describe_table(t, info, err);
  table_unref(t);
  return rc;
}

int engine_lsm_describe_table(table_t *t, bfh_table_info *info, err_t *err) {
  info->entries = table_entries(t);
  int rc = describe_keys(t, info, err);
  if (rc == ST_OK) rc = describe_filters(t, info, err);
  return rc;
}

/* ---- bfh_check ------------------------------------------------------------------------- */

/* Where damage goes: the caller's function. */
typedef struct check {
  engine_damage_fn fn; /* may be NULL */
  void *arg;
} check_t;

static void on_damage(void *arg, const char *file, uint64_t offset, const char *what) {
  check_t *c = arg;
  if (c->fn) c->fn(c->arg, file, offset, what);
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

int engine_lsm_check(const char *path, const engine_filter_params_t *p, engine_damage_fn damage,
                     void *arg, engine_check_stats_t *st, uint64_t *cache_damaged, err_t *err) {
  (void)p, (void)cache_damaged; /* the filters are checked against their own checksums */
  check_t c = {damage, arg};
  lsm_verify_hooks_t hooks = {on_damage, check_table_filters, &c};
  lsm_verify_stats_t ls = {0};
  int rc = lsm_verify(path, env_default(), &hooks, &ls, err);
  st->files += ls.files;
  st->bytes += ls.bytes;
  st->blocks += ls.blocks;
  st->records += ls.records;
  st->damaged += ls.damaged;
  st->torn_tails += ls.torn_tails;
  st->torn_tail_bytes += ls.torn_tail_bytes;
  return rc;
}

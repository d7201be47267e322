/* The value-filter table-build hook; see value_hook.h. */
#include "lsm_hooks/value_hook.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "lsm/table.h"

struct value_hook {
  index_sync_t *sync; /* borrowed; may be NULL */
  uint64_t m, seed;
  uint32_t k;
  char *dir; /* owned */
  lsm_table_hook_t hook;
  _Atomic uint64_t built, failed, values;
};

typedef struct table_state {
  value_hook_t *h;
  uint64_t number;
  value_filter_t *filter; /* owned until handed to the index */
  uint8_t *ser;           /* serialized filter, owned */
  size_t ser_size;
  uint64_t values;
  lsm_meta_block_t block;
} table_state_t;

static void *hook_begin(void *ctx, uint64_t file_number) {
  value_hook_t *h = ctx;
  table_state_t *s = calloc(1, sizeof *s);
  if (!s) return NULL;
  s->h = h;
  s->number = file_number;
  s->filter = value_filter_create(h->m, h->k, h->seed);
  if (!s->filter) {
    free(s);
    return NULL;
  }
  return s;
}

static void hook_add(void *state, const void *key, size_t key_len, const void *val, size_t val_len,
                     uint64_t seq, int type) {
  (void)key, (void)key_len, (void)seq;
  table_state_t *s = state;
  if (type != LSM_TYPE_VALUE) return;
  value_filter_add(s->filter, val, val_len);
  s->values++;
}

static int hook_finish(void *state, const lsm_meta_block_t **blocks, size_t *n) {
  table_state_t *s = state;
  s->ser_size = value_filter_serialized_size(s->filter->m);
  s->ser = malloc(s->ser_size);
  if (!s->ser) return BFH_E_NOMEM;
  value_filter_serialize(s->filter, s->ser);
  s->block.name = VALUE_HOOK_META_NAME;
  s->block.data = s->ser;
  s->block.size = s->ser_size;
  *blocks = &s->block;
  *n = 1;
  return BFH_OK;
}

static void hook_end(void *state, const uint64_t *block_offsets) {
  table_state_t *s = state;
  value_hook_t *h = s->h;
  if (block_offsets && s->ser) {
    atomic_fetch_add(&h->built, 1);
    atomic_fetch_add(&h->values, s->values);
    if (h->sync) {
      char path[4096];
      table_file_path(h->dir, s->number, path, sizeof path);
      index_sync_table_built(h->sync, s->number, s->filter, path, block_offsets[0]);
      s->filter = NULL; /* index_sync owns it now */
    }
  } else {
    atomic_fetch_add(&h->failed, 1);
  }
  value_filter_destroy(s->filter);
  free(s->ser);
  free(s);
}

static void hook_table_added(void *ctx, uint64_t file_number, uint64_t size) {
  value_hook_t *h = ctx;
  if (h->sync) index_sync_table_added(h->sync, file_number, size);
}

static void hook_table_removed(void *ctx, uint64_t file_number) {
  value_hook_t *h = ctx;
  if (h->sync) index_sync_table_removed(h->sync, file_number);
}

value_hook_t *value_hook_create(index_sync_t *sync, uint64_t m, uint32_t k, uint64_t seed,
                                const char *dir, err_t *err) {
  value_hook_t *h = calloc(1, sizeof *h);
  if (!h || !(h->dir = strdup(dir))) {
    free(h);
    err_set(err, BFH_E_NOMEM, "value hook: out of memory");
    return NULL;
  }
  h->sync = sync;
  h->m = m;
  h->k = k;
  h->seed = seed;
  h->hook.ctx = h;
  h->hook.begin = hook_begin;
  h->hook.add = hook_add;
  h->hook.finish = hook_finish;
  h->hook.end = hook_end;
  h->hook.table_added = hook_table_added;
  h->hook.table_removed = hook_table_removed;
  return h;
}

void value_hook_destroy(value_hook_t *h) {
  if (!h) return;
  free(h->dir);
  free(h);
}

const lsm_table_hook_t *value_hook_table_hook(value_hook_t *h) {
  return &h->hook;
}

void value_hook_get_stats(value_hook_t *h, value_hook_stats_t *st) {
  st->tables_built = atomic_load(&h->built);
  st->tables_failed = atomic_load(&h->failed);
  st->values_added = atomic_load(&h->values);
}

/* The value-filter table-build hook; see value_hook.h. */
#include "lsm_hooks/engines/lsm/value_hook.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "filters/value_terms.h"
#include "lsm/table.h"
#include "index/index_sync.h"

struct value_hook {
  index_sync_t *sync; /* borrowed; may be NULL */
  uint64_t m, seed;
  uint32_t k;
  uint32_t block_bits;        /* bits per value of the block filters; 0: none */
  const value_terms_t *terms; /* each value's items (borrowed); NULL: the whole value */
  char *dir;                  /* owned */
  lsm_table_hook_t hook;
  _Atomic uint64_t built, failed, values;
  /* The builders of the last table ended, kept with their memory for the next: a table's
     arrays (8 bytes a value's item in each, megabytes at 2 MiB tables) grown from empty by
     doubling at every flush and compaction cost a copy of what they held and a page fault
     for each page they touched, about a sixth of a random load's CPU. */
  pthread_mutex_t spare_mu;
  block_filter_builder_t *spare_blocks;
  value_block_map_builder_t *spare_map;
};

typedef struct table_state {
  value_hook_t *h;
  uint64_t number;
  value_filter_t *filter;         /* owned until handed to the index */
  block_filter_builder_t *blocks; /* owned; NULL without block filters */
  block_filter_t *block_filter;   /* owned until handed to the index */
  value_block_map_builder_t *map; /* owned; NULL without block filters */
  int nomem;                      /* a builder ran out of memory */
  uint8_t *ser[4];                /* serialized leaf, block filter, map head and chunks, owned */
  size_t head_len;                /* ser[2]'s */
  uint64_t values;
  uint64_t seq; /* the entry being added's */
  lsm_meta_block_t meta[4];
} table_state_t;

/* A block filter builder and a map builder for a table: the spare ones, else new; NULL on
   no memory. */
static block_filter_builder_t *take_blocks(value_hook_t *h) {
  pthread_mutex_lock(&h->spare_mu);
  block_filter_builder_t *b = h->spare_blocks;
  h->spare_blocks = NULL;
  pthread_mutex_unlock(&h->spare_mu);
  return b ? b : block_filter_builder_create(h->block_bits);
}

static value_block_map_builder_t *take_map(value_hook_t *h) {
  pthread_mutex_lock(&h->spare_mu);
  value_block_map_builder_t *m = h->spare_map;
  h->spare_map = NULL;
  pthread_mutex_unlock(&h->spare_mu);
  return m ? m : value_block_map_builder_create();
}

/* Keeps a table's builders as the spare ones, emptied, unless there are spares already. */
static void give_back(value_hook_t *h, block_filter_builder_t *b, value_block_map_builder_t *m) {
  if (b) block_filter_builder_reset(b);
  if (m) value_block_map_builder_reset(m);
  pthread_mutex_lock(&h->spare_mu);
  if (b && !h->spare_blocks) h->spare_blocks = b, b = NULL;
  if (m && !h->spare_map) h->spare_map = m, m = NULL;
  pthread_mutex_unlock(&h->spare_mu);
  block_filter_builder_destroy(b);
  value_block_map_builder_destroy(m);
}

static void state_free(table_state_t *s) {
  value_filter_destroy(s->filter);
  give_back(s->h, s->blocks, s->map);
  block_filter_destroy(s->block_filter);
  for (int i = 0; i < 4; i++) free(s->ser[i]);
  free(s);
}

/* Every attribute with a zone gets one in the map, empty when the table holds no term of it
   (value_block_map_builder_declare_zone). */
static int declare_zones(value_block_map_builder_t *map, const value_terms_t *terms) {
  uint64_t ids[VALUE_TERMS_MAX_ZONES];
  size_t n = value_terms_zone_ids(terms, ids);
  int rc = BFH_OK;
  for (size_t i = 0; i < n && rc == BFH_OK; i++)
    rc = value_block_map_builder_declare_zone(map, ids[i]);
  return rc;
}

static void *hook_begin(void *ctx, uint64_t file_number) {
  value_hook_t *h = ctx;
  table_state_t *s = calloc(1, sizeof *s);
  if (!s) return NULL;
  s->h = h;
  s->number = file_number;
  s->filter = value_filter_create(h->m, h->k, h->seed);
  if (h->block_bits) s->blocks = take_blocks(h);
  /* The map only when this handle's layout reads it (the lean layout with block maps): a
     table of the paper's layout pays nothing for it, on disk or in ingest. */
  int maps = h->block_bits && h->sync && index_sync_params(h->sync)->block_maps;
  if (maps) s->map = take_map(h);
  if (!s->filter || (h->block_bits && !s->blocks) || (maps && !s->map) ||
      (s->map && declare_zones(s->map, h->terms) != BFH_OK)) {
    state_free(s);
    return NULL;
  }
  return s;
}

static void add_code(void *arg, uint64_t zone_id, uint64_t code) {
  table_state_t *s = arg;
  if (value_block_map_builder_zone(s->map, zone_id, code) != BFH_OK) s->nomem = 1;
}

static void add_item(void *arg, uint64_t hash) {
  table_state_t *s = arg;
  value_filter_add_hash(s->filter, hash);
  if (s->blocks && block_filter_builder_add(s->blocks, hash) != BFH_OK) s->nomem = 1;
  if (s->map && value_block_map_builder_add(s->map, hash, s->seq) != BFH_OK) s->nomem = 1;
}

static void hook_add(void *state, const void *key, size_t key_len, const void *val, size_t val_len,
                     uint64_t seq, int type) {
  (void)key, (void)key_len;
  table_state_t *s = state;
  if (type != LSM_TYPE_VALUE) return;
  s->seq = seq;
  /* One item per (attribute, term), or the whole value without attributes: a failed
     extraction fails the table (its filters would miss the value's items). */
  int rc = s->map ? value_terms_hash_zoned(s->h->terms, val, val_len, s->filter->seed, 0, add_item,
                                           add_code, s)
                  : value_terms_hash(s->h->terms, val, val_len, s->filter->seed, 0, add_item, s);
  if (rc < 0) s->nomem = 1;
  s->values++;
}

static void hook_block_written(void *state, uint64_t offset, uint64_t size) {
  table_state_t *s = state;
  if (s->blocks && block_filter_builder_end_block(s->blocks, offset, size) != BFH_OK) s->nomem = 1;
  if (s->map && value_block_map_builder_end_block(s->map, offset, size) != BFH_OK) s->nomem = 1;
}

static int hook_finish(void *state, const lsm_meta_block_t **blocks, size_t *n) {
  table_state_t *s = state;
  if (s->nomem) return BFH_E_NOMEM;
  size_t leaf_size = value_filter_serialized_size(s->filter->m);
  if (!(s->ser[0] = malloc(leaf_size))) return BFH_E_NOMEM;
  value_filter_serialize(s->filter, s->ser[0]);
  s->meta[0] = (lsm_meta_block_t){VALUE_HOOK_META_NAME, s->ser[0], leaf_size};
  *blocks = s->meta;
  *n = 1;
  if (!s->blocks) return BFH_OK;
  err_t err;
  int rc = block_filter_builder_finish(s->blocks, &s->block_filter, &err);
  if (rc != BFH_OK) return rc;
  size_t size = block_filter_serialized_size(s->block_filter);
  if (!(s->ser[1] = malloc(size))) return BFH_E_NOMEM;
  block_filter_serialize(s->block_filter, s->ser[1]);
  s->meta[1] = (lsm_meta_block_t){VALUE_HOOK_BLOCKS_META_NAME, s->ser[1], size};
  *n = 2;
  if (!s->map) return BFH_OK;
  size_t chunks_len;
  rc = value_block_map_builder_finish(s->map, &s->ser[2], &s->head_len, &s->ser[3], &chunks_len);
  if (rc == BFH_NOT_FOUND) return BFH_OK; /* blocks it cannot name: the block filter serves */
  if (rc != BFH_OK) return rc;
  s->meta[2] = (lsm_meta_block_t){VALUE_BLOCK_MAP_HEAD_NAME, s->ser[2], s->head_len};
  s->meta[3] = (lsm_meta_block_t){VALUE_BLOCK_MAP_CHUNKS_NAME, s->ser[3], chunks_len};
  *n = 4;
  return BFH_OK;
}

/* With block maps in use (value_index_params_t.block_maps), the table's map enters the block
   index now, in place of its block filter (which is not handed over: memory). A map that
   cannot be made (no memory) leaves the block filter to serve. */
static void hand_over_map(table_state_t *s) {
  value_hook_t *h = s->h;
  if (!s->ser[2] || !index_sync_params(h->sync)->block_maps) return;
  value_block_map_t *m = NULL;
  err_t err;
  if (value_block_map_open(s->ser[2], s->head_len, &m, &err) != BFH_OK) return;
  if (block_index_put_map(index_sync_block_index(h->sync), s->number, m) != BFH_OK) return;
  block_filter_destroy(s->block_filter);
  s->block_filter = NULL;
}

static void hook_end(void *state, const uint64_t *block_offsets) {
  table_state_t *s = state;
  value_hook_t *h = s->h;
  if (block_offsets && s->ser[0]) {
    atomic_fetch_add(&h->built, 1);
    atomic_fetch_add(&h->values, s->values);
    if (h->sync) {
      char *path = table_file_path(h->dir, s->number);
      hand_over_map(s);
      if (path) {
        index_sync_table_built(h->sync, s->number, s->filter, s->block_filter, path,
                               block_offsets[0]);
        s->filter = NULL; /* index_sync owns them now */
        s->block_filter = NULL;
      } /* else no memory: as in index_sync, no built leaf; the table is read at install */
      free(path);
    }
  } else {
    atomic_fetch_add(&h->failed, 1);
  }
  state_free(s);
}

static void hook_table_added(void *ctx, uint64_t file_number, uint64_t size) {
  value_hook_t *h = ctx;
  if (h->sync) index_sync_table_added(h->sync, file_number, size);
}

static void hook_table_removed(void *ctx, uint64_t file_number) {
  value_hook_t *h = ctx;
  if (h->sync) index_sync_table_removed(h->sync, file_number);
}

/* The background thread, after a flush or a compaction: the index takes in what it changed
   (index_sync_apply), so that no search pays for it. */
static void hook_changed(void *ctx) {
  value_hook_t *h = ctx;
  if (h->sync) index_sync_apply(h->sync);
}

value_hook_t *value_hook_create(index_sync_t *sync, uint64_t m, uint32_t k, uint64_t seed,
                                uint32_t block_bits, const char *dir, err_t *err) {
  value_hook_t *h = calloc(1, sizeof *h);
  if (!h || !(h->dir = strdup(dir))) {
    free(h);
    err_set(err, BFH_E_NOMEM, "value hook: out of memory");
    return NULL;
  }
  pthread_mutex_init(&h->spare_mu, NULL);
  h->sync = sync;
  h->terms = sync ? index_sync_terms(sync) : NULL;
  h->m = m;
  h->k = k;
  h->seed = seed;
  h->block_bits = block_bits;
  h->hook.ctx = h;
  h->hook.begin = hook_begin;
  h->hook.add = hook_add;
  h->hook.block_written = hook_block_written;
  h->hook.finish = hook_finish;
  h->hook.end = hook_end;
  h->hook.table_added = hook_table_added;
  h->hook.table_removed = hook_table_removed;
  h->hook.changed = hook_changed;
  return h;
}

/* Drops the spare builders (their zones are of the attributes they were built under). */
static void drop_spares(value_hook_t *h) {
  pthread_mutex_lock(&h->spare_mu);
  block_filter_builder_destroy(h->spare_blocks);
  value_block_map_builder_destroy(h->spare_map);
  h->spare_blocks = NULL;
  h->spare_map = NULL;
  pthread_mutex_unlock(&h->spare_mu);
}

void value_hook_destroy(value_hook_t *h) {
  if (!h) return;
  drop_spares(h);
  pthread_mutex_destroy(&h->spare_mu);
  free(h->dir);
  free(h);
}

void value_hook_set_terms(value_hook_t *h, const value_terms_t *terms) {
  h->terms = terms;
  drop_spares(h);
}

const lsm_table_hook_t *value_hook_table_hook(value_hook_t *h) {
  return &h->hook;
}

void value_hook_get_stats(value_hook_t *h, value_hook_stats_t *st) {
  st->tables_built = atomic_load(&h->built);
  st->tables_failed = atomic_load(&h->failed);
  st->values_added = atomic_load(&h->values);
}

/* index_sync_t: the one writer of the value index; see index_sync.h, and
 * index_sync_private.h for its states, its locks and its files. This one: the records, the
 * creation, the pushed reports (the own engine's table-build hook) and the statistics.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bfh.h"
#include "index/index_sync_private.h"
#include "util/path.h"
#include "util/sort.h"
#include "util/clock.h"

char *index_sync_cache_path(const index_sync_t *s, uint64_t number) {
  return path_fmt("%s/%06llu.vf", s->src.cache_dir, (unsigned long long)number);
}

/* ---- Records ---------------------------------------------------------------------------- */

static size_t lower_bound(const index_sync_t *s, uint64_t number) {
  return U64_LOWER_BOUND(s->recs, s->n, number, number);
}

record_t *index_sync_find(index_sync_t *s, uint64_t number) {
  size_t i = lower_bound(s, number);
  return i < s->n && s->recs[i].number == number ? &s->recs[i] : NULL;
}

/* The record of number, inserted (zeroed but for the number) if absent; NULL on no
   memory. */
record_t *index_sync_find_or_insert(index_sync_t *s, uint64_t number) {
  size_t i = lower_bound(s, number);
  if (i < s->n && s->recs[i].number == number) return &s->recs[i];
  if (s->n == s->cap) {
    size_t c = s->cap ? 2 * s->cap : 64;
    record_t *r = realloc(s->recs, c * sizeof *r);
    if (!r) return NULL;
    s->recs = r;
    s->cap = c;
  }
  memmove(s->recs + i + 1, s->recs + i, (s->n - i) * sizeof *s->recs);
  s->n++;
  s->recs[i] = (record_t){.number = number};
  return &s->recs[i];
}

void index_sync_record_release(record_t *r) {
  value_filter_destroy(r->filter);
  block_filter_destroy(r->blocks);
  r->blocks = NULL;
  free(r->path);
  free(r->cache_buf);
  r->filter = NULL;
  r->path = NULL;
  r->cache_buf = NULL;
  r->parked = 0;
}

static uint64_t min_pin(const index_sync_t *s) {
  uint64_t m = UINT64_MAX;
  for (size_t i = 0; i < s->npins; i++)
    if (s->pins[i] < m) m = s->pins[i];
  return m;
}

/* Drops the records of tables gone before every pinned view was taken, with their leaves;
   their cache files are appended to unlink (numbers) for the caller to delete outside mu.
   REQUIRES mu. */
void index_sync_remove_gone(index_sync_t *s, u64vec_t *unlink) {
  if (!s->gone_pending) return;
  uint64_t oldest = min_pin(s);
  size_t w = 0;
  int pending = 0;
  for (size_t i = 0; i < s->n; i++) {
    record_t *r = &s->recs[i];
    if (r->gone_epoch && r->gone_epoch <= oldest) {
      if (r->state == REC_INDEXED && value_index_remove(s->index, r->number) == BFH_OK)
        s->stats.tables_removed++;
      /* Its early block filter, or a value-to-block map the engine put (value_hook.h). */
      if (r->state != REC_INDEXED) block_index_remove(value_index_blocks(s->index), r->number);
      /* A cache file exists unless its bytes were still waiting to be written (an upgraded
         leaf's old file exists while its new bytes wait). */
      int has_file = !r->cache_buf || r->source == INDEX_LEAF_CACHED;
      if (s->src.cache_dir && has_file && r->state == REC_INDEXED)
        (void)u64vec_push(unlink, r->number);
      /* A parked leaf: its cache file exists unless its bytes wait in cache_buf. */
      else if (s->src.cache_dir && r->parked && r->state == REC_TO_READ &&
               (!r->cache_buf || r->parked_source == INDEX_LEAF_CACHED))
        (void)u64vec_push(unlink, r->number);
      index_sync_record_release(r);
      continue;
    }
    pending |= r->gone_epoch != 0;
    s->recs[w++] = *r;
  }
  s->n = w;
  s->gone_pending = pending;
}

void index_sync_unlink_caches(index_sync_t *s, u64vec_t *numbers) {
  for (size_t i = 0; i < numbers->n; i++) {
    char *path = index_sync_cache_path(s, numbers->v[i]);
    if (path) (void)env_unlink(s->src.io, path, NULL); /* else left: rewritten or unused */
    free(path);
  }
  u64vec_release(numbers);
}

/* Marks r gone at a new epoch. REQUIRES mu. */
void index_sync_mark_gone(index_sync_t *s, record_t *r) {
  if (r->gone_epoch) return;
  /* A persisted index no longer answers for it: a later table under its number (a database
     made again at its path) is another file. */
  (void)value_index_persisted_unbind(s->index, r->number);
  r->gone_epoch = s->epoch;
  s->gone_pending = 1;
}

/* ---- Creation --------------------------------------------------------------------------- */

index_sync_t *index_sync_create(value_index_t *index, err_t *err) {
  index_sync_t *s = calloc(1, sizeof *s);
  if (!s) {
    err_set(err, BFH_E_NOMEM, "index sync: out of memory");
    return NULL;
  }
  s->index = index;
  s->src.io = env_default();
  s->epoch = 1;
  pthread_mutex_init(&s->run_mu, NULL);
  pthread_mutex_init(&s->mu, NULL);
  pthread_mutex_init(&s->load_mu, NULL);
  pthread_cond_init(&s->load_cv, NULL);
  return s;
}

void index_sync_destroy(index_sync_t *s) {
  if (!s) return;
  index_sync_loader_stop(s);
  for (size_t i = 0; i < s->n; i++) index_sync_record_release(&s->recs[i]);
  free(s->recs);
  free(s->pins);
  free((char *)s->src.cache_dir);
  pthread_mutex_destroy(&s->run_mu);
  pthread_mutex_destroy(&s->mu);
  pthread_mutex_destroy(&s->load_mu);
  pthread_cond_destroy(&s->load_cv);
  free(s);
}

int index_sync_set_source(index_sync_t *s, const index_source_t *src, err_t *err) {
  char *dir = NULL;
  if (src->cache_dir && !src->table_tag)
    return err_set(err, BFH_E_INVALID, "index sync: a filter cache needs the tables' tags");
  if (src->cache_dir && !(dir = strdup(src->cache_dir)))
    return err_set(err, BFH_E_NOMEM, "index sync: out of memory");
  free((char *)s->src.cache_dir);
  s->src = *src;
  s->src.cache_dir = dir;
  if (!s->src.io) s->src.io = env_default();
  return BFH_OK;
}

const value_index_params_t *index_sync_params(const index_sync_t *s) {
  return value_index_params(s->index);
}

void index_sync_set_terms(index_sync_t *s, const value_terms_t *terms) {
  s->terms = terms;
}

const value_terms_t *index_sync_terms(const index_sync_t *s) {
  return s ? s->terms : NULL;
}

value_index_t *index_sync_value_index(index_sync_t *s) {
  return s->index;
}

block_index_t *index_sync_block_index(index_sync_t *s) {
  return value_index_blocks(s->index);
}

/* ---- Pushed reports --------------------------------------------------------------------- */

void index_sync_table_built(index_sync_t *s, uint64_t number, value_filter_t *filter,
                            block_filter_t *blocks, const char *path, uint64_t offset) {
  pthread_mutex_lock(&s->mu);
  record_t *r = index_sync_find_or_insert(s, number);
  char *p = path ? strdup(path) : NULL;
  if (!r || r->state != REC_BUILT || r->filter || (path && !p)) {
    /* No memory, or a number reported twice: the table gets no built leaf (at install it is
       marked to be read). */
    value_filter_destroy(filter);
    block_filter_destroy(blocks);
    free(p);
  } else {
    r->filter = filter;
    r->blocks = blocks;
    r->path = p;
    r->offset = offset;
  }
  pthread_mutex_unlock(&s->mu);
}

/* Puts a table's block filter (taking it; NULL: none) into the block index. REQUIRES mu. */
void index_sync_add_blocks(index_sync_t *s, uint64_t number, block_filter_t *blocks) {
  if (blocks && block_index_put(value_index_blocks(s->index), number, blocks) == BFH_OK)
    s->stats.blocks_added++;
}

/* r's table is live: the built filter becomes its leaf, or it is marked to be read.
   REQUIRES mu. */
void index_sync_make_live(index_sync_t *s, record_t *r, uint64_t size, uint64_t now) {
  if (r->state == REC_BUILT) {
    uint64_t number = r->number;
    r->size = size;
    r->live_ns = now;
    if (r->filter) {
      err_t e;
      int rc = value_index_add(s->index, number, r->filter, r->path, r->offset, &e);
      r->filter = NULL; /* the index owns it now (or freed it) */
      free(r->path);
      r->path = NULL;
      r->state = rc == BFH_OK ? REC_INDEXED : REC_UNREADABLE;
      r->source = rc == BFH_OK ? INDEX_LEAF_BUILT : INDEX_LEAF_NONE;
      if (rc == BFH_OK) {
        s->stats.tables_built++;
        index_sync_add_blocks(s, number, r->blocks);
      } else {
        s->stats.add_errors++;
        block_filter_destroy(r->blocks);
      }
      r->blocks = NULL;
    } else {
      r->state = REC_TO_READ;
    }
  }
  /* A table that is already live (or gone) keeps its record. */
}

void index_sync_table_added(index_sync_t *s, uint64_t number, uint64_t size) {
  pthread_mutex_lock(&s->mu);
  record_t *r = index_sync_find_or_insert(s, number);
  if (r)
    index_sync_make_live(s, r, size,
                         clock_now_ns()); /* no memory: no record, no leaf: always scanned */
  pthread_mutex_unlock(&s->mu);
}

void index_sync_table_removed(index_sync_t *s, uint64_t number) {
  u64vec_t unlink;
  u64vec_init(&unlink);
  pthread_mutex_lock(&s->mu);
  record_t *r = index_sync_find(s, number);
  if (r) {
    s->epoch++;
    index_sync_mark_gone(s, r);
    index_sync_remove_gone(s, &unlink);
  }
  pthread_mutex_unlock(&s->mu);
  index_sync_unlink_caches(s, &unlink);
}

void index_sync_apply(index_sync_t *s) {
  (void)value_index_apply(s->index, NULL); /* a leaf that fails to go in: its table is read */
}

void index_sync_use_applier(index_sync_t *s) {
  value_index_set_applier(s->index, 1);
}

/* ---- Queries --------------------------------------------------------------------------- */

index_leaf_source_t index_sync_leaf_source(index_sync_t *s, uint64_t number) {
  pthread_mutex_lock(&s->mu);
  record_t *r = index_sync_find(s, number);
  index_leaf_source_t src = r && !r->gone_epoch ? r->source : INDEX_LEAF_NONE;
  pthread_mutex_unlock(&s->mu);
  return src;
}

void index_sync_get_stats(index_sync_t *s, index_sync_stats_t *st) {
  pthread_mutex_lock(&s->mu);
  *st = s->stats;
  pthread_mutex_unlock(&s->mu);
}

int index_sync_read_filter(index_sync_t *s, uint64_t number, value_filter_t **filter, err_t *err) {
  *filter = NULL;
  value_index_params_t p = *value_index_params(s->index);
  p.block_bits = 0; /* the value filter alone */
  index_leaf_read_t leaf;
  memset(&leaf, 0, sizeof leaf);
  leaf.terms = s->terms;
  int rc = s->src.read_leaf ? s->src.read_leaf(s->src.ctx, number, &p, &leaf, err)
                            : err_set(err, BFH_E_INVALID, "table %06llu: no source of filters",
                                      (unsigned long long)number);
  block_filter_destroy(leaf.blocks);
  free(leaf.path);
  free(leaf.map_head);
  free(leaf.map_chunks);
  value_block_map_destroy(leaf.map);
  if (rc == BFH_OK)
    *filter = leaf.filter;
  else
    value_filter_destroy(leaf.filter);
  return rc;
}

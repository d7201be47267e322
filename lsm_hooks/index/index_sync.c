/* index_sync_t: the one writer of the value index; see index_sync.h.
 *
 * State: one record per table index_sync knows of, in an array sorted by number, under mu.
 * A record is
 *   built     not live yet: a new record, or one whose filter the hook handed over
 *   to read   live, no leaf yet: index_sync_run will read its filter
 *   indexed   live, its leaf is in the value index (or queued there)
 *   unreadable  live, its filter could not be read: no leaf, always scanned
 * An indexed record whose leaf came from a cache file without a block filter, while block
 * filters are on, also wants its block filter (wants_blocks): a run reads the table for it.
 * and, once its table left the live version, gone (gone_epoch != 0) until no pinned view
 * may list it; then its leaf and cache file are removed and the record dropped.
 *
 * Lock order: run_mu (one run at a time), then mu. The value index is only called for its
 * O(1) queue operations under mu; table and cache-file reads happen with mu released: a
 * run copies the numbers it must read, reads them, and takes mu again to add the leaves of
 * the tables that are still live.
 */
#include "lsm_hooks/index/index_sync.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bfh.h"
#include "lsm_hooks/index/leaf_cache.h"

enum { REC_BUILT, REC_TO_READ, REC_INDEXED, REC_UNREADABLE };

typedef struct record {
  uint64_t number, size;
  uint64_t id; /* index_table_t.id of the file the record is for (0: not known) */
  int state;
  index_leaf_source_t source;
  uint64_t live_ns;       /* when it was reported live */
  uint64_t gone_epoch;    /* 0 while live (or built) */
  value_filter_t *filter; /* REC_BUILT: the hook's filter (owned) */
  block_filter_t *blocks; /* REC_BUILT: the hook's block filter (owned, may be NULL) */
  int wants_blocks;       /* REC_INDEXED: a cached leaf to upgrade with a block filter */
  char *path;             /* REC_BUILT: where it is stored (owned, may be NULL) */
  uint64_t offset;
  uint8_t *cache_buf; /* leaves in memory: its cache file's bytes, not written yet */
  size_t cache_len;
} record_t;

struct index_sync {
  value_index_t *index; /* borrowed */
  index_source_t src;   /* cache_dir copied */
  pthread_mutex_t run_mu;
  pthread_mutex_t mu; /* guards everything below */
  record_t *recs;     /* sorted by number */
  size_t n, cap;
  uint64_t epoch;
  uint64_t *pins; /* epochs of the pinned views (unsorted, with repeats) */
  size_t npins, pins_cap;
  int gone_pending; /* some record is gone but not removed yet */
  index_sync_stats_t stats;
};

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void cache_path(const index_sync_t *s, uint64_t number, char *out, size_t n) {
  snprintf(out, n, "%s/%06llu.vf", s->src.cache_dir, (unsigned long long)number);
}

/* ---- Records ---------------------------------------------------------------------------- */

static size_t lower_bound(const index_sync_t *s, uint64_t number) {
  size_t lo = 0, hi = s->n;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (s->recs[mid].number < number)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

static record_t *find(index_sync_t *s, uint64_t number) {
  size_t i = lower_bound(s, number);
  return i < s->n && s->recs[i].number == number ? &s->recs[i] : NULL;
}

/* The record of number, inserted (zeroed but for the number) if absent; NULL on no
   memory. */
static record_t *find_or_insert(index_sync_t *s, uint64_t number) {
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

static void record_release(record_t *r) {
  value_filter_destroy(r->filter);
  block_filter_destroy(r->blocks);
  r->blocks = NULL;
  free(r->path);
  free(r->cache_buf);
  r->filter = NULL;
  r->path = NULL;
  r->cache_buf = NULL;
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
static void remove_gone(index_sync_t *s, u64vec_t *unlink) {
  if (!s->gone_pending) return;
  uint64_t oldest = min_pin(s);
  size_t w = 0;
  int pending = 0;
  for (size_t i = 0; i < s->n; i++) {
    record_t *r = &s->recs[i];
    if (r->gone_epoch && r->gone_epoch <= oldest) {
      if (r->state == REC_INDEXED && value_index_remove(s->index, r->number) == BFH_OK)
        s->stats.tables_removed++;
      /* A cache file exists unless its bytes were still waiting to be written (an upgraded
         leaf's old file exists while its new bytes wait). */
      int has_file = !r->cache_buf || r->source == INDEX_LEAF_CACHED;
      if (s->src.cache_dir && has_file && r->state == REC_INDEXED)
        (void)u64vec_push(unlink, r->number);
      record_release(r);
      continue;
    }
    pending |= r->gone_epoch != 0;
    s->recs[w++] = *r;
  }
  s->n = w;
  s->gone_pending = pending;
}

static void unlink_caches(index_sync_t *s, u64vec_t *numbers) {
  for (size_t i = 0; i < numbers->n; i++) {
    char path[4200];
    cache_path(s, numbers->v[i], path, sizeof path);
    (void)env_unlink(s->src.io, path, NULL);
  }
  u64vec_release(numbers);
}

/* Marks r gone at a new epoch. REQUIRES mu. */
static void mark_gone(index_sync_t *s, record_t *r) {
  if (r->gone_epoch) return;
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
  return s;
}

void index_sync_destroy(index_sync_t *s) {
  if (!s) return;
  for (size_t i = 0; i < s->n; i++) record_release(&s->recs[i]);
  free(s->recs);
  free(s->pins);
  free((char *)s->src.cache_dir);
  pthread_mutex_destroy(&s->run_mu);
  pthread_mutex_destroy(&s->mu);
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

/* ---- Pushed reports --------------------------------------------------------------------- */

void index_sync_table_built(index_sync_t *s, uint64_t number, value_filter_t *filter,
                            block_filter_t *blocks, const char *path, uint64_t offset) {
  pthread_mutex_lock(&s->mu);
  record_t *r = find_or_insert(s, number);
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
static void add_blocks(index_sync_t *s, uint64_t number, block_filter_t *blocks) {
  if (blocks && block_index_put(value_index_blocks(s->index), number, blocks) == BFH_OK)
    s->stats.blocks_added++;
}

/* r's table is live: the built filter becomes its leaf, or it is marked to be read.
   REQUIRES mu. */
static void make_live(index_sync_t *s, record_t *r, uint64_t size, uint64_t now) {
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
        add_blocks(s, number, r->blocks);
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
  record_t *r = find_or_insert(s, number);
  if (r) make_live(s, r, size, now_ns()); /* no memory: no record, no leaf: always scanned */
  pthread_mutex_unlock(&s->mu);
}

void index_sync_table_removed(index_sync_t *s, uint64_t number) {
  u64vec_t unlink;
  u64vec_init(&unlink);
  pthread_mutex_lock(&s->mu);
  record_t *r = find(s, number);
  if (r) {
    s->epoch++;
    mark_gone(s, r);
    remove_gone(s, &unlink);
  }
  pthread_mutex_unlock(&s->mu);
  unlink_caches(s, &unlink);
}

/* ---- Pulled reports --------------------------------------------------------------------- */

static int cmp_table(const void *a, const void *b) {
  uint64_t x = ((const index_table_t *)a)->number, y = ((const index_table_t *)b)->number;
  return x < y ? -1 : x > y;
}

/* r's number names another file than the one its leaf describes: the leaf (and block
   filter, and cache bytes not written yet) go at once, and the table is read again. Its cache
   file is left: it is bound to the old table's tag, so the next load finds it stale. A view
   still reading the old file meanwhile scans the table (it has no leaf). REQUIRES mu. */
static void forget_leaf(index_sync_t *s, record_t *r, uint64_t size, uint64_t now) {
  if (r->state == REC_INDEXED) (void)value_index_remove(s->index, r->number);
  record_release(r);
  r->state = REC_TO_READ;
  r->source = INDEX_LEAF_NONE;
  r->wants_blocks = 0;
  r->size = size;
  r->live_ns = now;
  s->stats.tables_replaced++;
}

int index_sync_tables_listed(index_sync_t *s, const index_table_t *live, size_t n,
                             uint64_t *view_epoch, err_t *err) {
  index_table_t *sorted = malloc((n ? n : 1) * sizeof *sorted);
  if (!sorted) return err_set(err, BFH_E_NOMEM, "index sync: out of memory");
  if (n) memcpy(sorted, live, n * sizeof *sorted); /* live may be NULL when n == 0 */
  qsort(sorted, n, sizeof *sorted, cmp_table);
  u64vec_t unlink;
  u64vec_init(&unlink);
  int rc = BFH_OK;
  pthread_mutex_lock(&s->mu);
  if (view_epoch && s->npins == s->pins_cap) {
    size_t c = s->pins_cap ? 2 * s->pins_cap : 16;
    uint64_t *p = realloc(s->pins, c * sizeof *p);
    if (p) {
      s->pins = p;
      s->pins_cap = c;
    }
  }
  if (s->n + n > s->cap) { /* room for every new record up front: nothing fails halfway */
    size_t c = s->cap ? s->cap : 64;
    while (c < s->n + n) c *= 2;
    record_t *r = realloc(s->recs, c * sizeof *r);
    if (r) {
      s->recs = r;
      s->cap = c;
    }
  }
  if (s->n + n > s->cap || (view_epoch && s->npins == s->pins_cap)) {
    rc = err_set(err, BFH_E_NOMEM, "index sync: out of memory");
    goto out;
  }
  s->epoch++;
  /* Gone: live records missing from the list (a merge of two sorted lists). */
  for (size_t i = 0, j = 0; i < s->n; i++) {
    record_t *r = &s->recs[i];
    while (j < n && sorted[j].number < r->number) j++;
    if (r->state != REC_BUILT && (j == n || sorted[j].number != r->number)) mark_gone(s, r);
  }
  /* New: listed tables without a record; replaced: listed tables whose number names another
     file now. */
  uint64_t now = now_ns();
  for (size_t j = 0; j < n; j++) {
    record_t *r = find_or_insert(s, sorted[j].number); /* cannot fail: room was made */
    if (sorted[j].id && r->id && r->id != sorted[j].id && !r->gone_epoch && r->state != REC_BUILT)
      forget_leaf(s, r, sorted[j].size, now);
    if (sorted[j].id) r->id = sorted[j].id;
    make_live(s, r, sorted[j].size, now);
  }
  if (view_epoch) {
    *view_epoch = s->epoch;
    s->pins[s->npins++] = s->epoch;
  }
  remove_gone(s, &unlink);
out:
  pthread_mutex_unlock(&s->mu);
  unlink_caches(s, &unlink);
  free(sorted);
  return rc;
}

void index_sync_view_unpin(index_sync_t *s, uint64_t epoch) {
  u64vec_t unlink;
  u64vec_init(&unlink);
  pthread_mutex_lock(&s->mu);
  for (size_t i = 0; i < s->npins; i++)
    if (s->pins[i] == epoch) {
      s->pins[i] = s->pins[--s->npins];
      break;
    }
  remove_gone(s, &unlink);
  pthread_mutex_unlock(&s->mu);
  unlink_caches(s, &unlink);
}

/* ---- Reading filters -------------------------------------------------------------------- */

typedef struct job {
  uint64_t number, size;
  uint64_t id;           /* the record's id when the job was made */
  int upgrade;           /* the table is indexed: only its block filter is wanted */
  index_leaf_read_t got; /* what was read */
  int rc;                /* BFH_OK, BFH_NOT_FOUND (gone), or the read's error */
  int retry;             /* rc is not the table's fault (no memory, a cache file not written) */
  index_leaf_source_t source;
  uint8_t *cache_buf; /* leaves in memory: the cache file to write later */
  size_t cache_len;
  char msg[ERR_MSG_BYTES];
} job_t;

static void job_release(job_t *j) {
  value_filter_destroy(j->got.filter);
  block_filter_destroy(j->got.blocks);
  free(j->got.path);
  free(j->cache_buf);
}

/* The leaf of one table from its cache file. BFH_OK, or why not (a stale file is
   removed: it will be rebuilt). */
static int load_cached(index_sync_t *s, job_t *j, const char *cpath) {
  const value_index_params_t *p = value_index_params(s->index);
  err_t e;
  if (!env_exists(s->src.io, cpath)) return BFH_NOT_FOUND;
  /* The table's tag first: a file made for other bytes under this number is stale. */
  leaf_cache_table_t t = {.number = j->number, .size = j->size};
  int r = s->src.table_tag(s->src.ctx, j->number, &t.tag, &e);
  if (r != BFH_OK) return r; /* the table is gone or damaged: read_leaf tells which */
  r = leaf_cache_load(s->src.io, cpath, &t, p->m, p->k, p->seed, &j->got.filter, &j->got.blocks,
                      &e);
  if (r != BFH_OK) {
    if (r != BFH_NOT_FOUND) {
      (void)env_unlink(s->src.io, cpath, NULL);
      pthread_mutex_lock(&s->mu);
      s->stats.cache_stale += r == BFH_E_CORRUPT;
      pthread_mutex_unlock(&s->mu);
    }
    return r;
  }
  j->got.tag = t.tag;
  if (!p->block_bits) { /* block filters are off for this open */
    block_filter_destroy(j->got.blocks);
    j->got.blocks = NULL;
  }
  j->source = INDEX_LEAF_CACHED;
  j->rc = BFH_OK;
  if (p->leaves_on_disk && !(j->got.path = strdup(cpath))) j->rc = BFH_E_NOMEM;
  j->retry = j->rc != BFH_OK;
  j->got.offset = LEAF_CACHE_HEADER_BYTES;
  return BFH_OK;
}

/* The leaf of one table (or, for an upgrade, its block filter), with mu released: the cache
   file first, else read_leaf (and then the cache file: with leaves on disk written now,
   since it is the leaf; otherwise its bytes kept to be written later). */
static void read_job(index_sync_t *s, job_t *j) {
  const value_index_params_t *p = value_index_params(s->index);
  char cpath[4200] = "";
  err_t e;
  uint64_t t0 = now_ns();
  if (s->src.cache_dir) cache_path(s, j->number, cpath, sizeof cpath);
  if (s->src.cache_dir && !j->upgrade && load_cached(s, j, cpath) == BFH_OK) return;
  j->rc = s->src.read_leaf(s->src.ctx, j->number, p, &j->got, &e);
  pthread_mutex_lock(&s->mu);
  s->stats.read_ns += now_ns() - t0;
  s->stats.read_bytes += j->got.bytes_read;
  pthread_mutex_unlock(&s->mu);
  if (j->rc != BFH_OK) {
    j->retry = j->rc == BFH_E_NOMEM;
    snprintf(j->msg, sizeof j->msg, "%s", e.msg);
    return;
  }
  j->source = INDEX_LEAF_READ;
  if (!s->src.cache_dir) return;
  free(j->got.path); /* the cache file is where the leaf lives */
  j->got.path = NULL;
  const leaf_cache_table_t t = {.number = j->number, .size = j->size, .tag = j->got.tag};
  if (p->leaves_on_disk && !j->upgrade) {
    j->rc = leaf_cache_store(s->src.io, cpath, &t, j->got.filter, j->got.blocks, &e);
    if (j->rc == BFH_OK && !(j->got.path = strdup(cpath))) j->rc = BFH_E_NOMEM;
    j->got.offset = LEAF_CACHE_HEADER_BYTES;
    if (j->rc != BFH_OK) {
      j->retry = 1;
      snprintf(j->msg, sizeof j->msg, "%s", e.msg);
      value_filter_destroy(j->got.filter);
      j->got.filter = NULL;
    }
  } else if (leaf_cache_encode(&t, j->got.filter, j->got.blocks, &j->cache_buf, &j->cache_len,
                               &e) != BFH_OK) {
    j->cache_buf = NULL; /* the cache only speeds up a reopen */
  }
}

/* Writes the cache bytes of the live records listed for at least cache_delay_ns (all with
   force). REQUIRES run_mu, not mu. */
static void write_due_caches(index_sync_t *s, int force) {
  if (!s->src.cache_dir) return;
  uint64_t now = now_ns();
  pthread_mutex_lock(&s->mu);
  size_t n = 0;
  for (size_t i = 0; i < s->n; i++) {
    record_t *r = &s->recs[i];
    n += r->cache_buf && !r->gone_epoch && (force || now - r->live_ns >= s->src.cache_delay_ns);
  }
  job_t *w = n ? calloc(n, sizeof *w) : NULL;
  size_t k = 0;
  for (size_t i = 0; w && i < s->n; i++) {
    record_t *r = &s->recs[i];
    if (r->cache_buf && !r->gone_epoch && (force || now - r->live_ns >= s->src.cache_delay_ns)) {
      w[k++] = (job_t){.number = r->number, .cache_buf = r->cache_buf, .cache_len = r->cache_len};
      r->cache_buf = NULL;
    }
  }
  pthread_mutex_unlock(&s->mu);
  for (size_t i = 0; i < k; i++) {
    char path[4200];
    cache_path(s, w[i].number, path, sizeof path);
    err_t e;
    (void)leaf_cache_write(s->src.io, path, w[i].cache_buf, w[i].cache_len, &e); /* a speed-up:
                                                                           not retried */
    free(w[i].cache_buf);
  }
  /* A table that went while its file was written: the file goes too. */
  pthread_mutex_lock(&s->mu);
  u64vec_t unlink;
  u64vec_init(&unlink);
  for (size_t i = 0; i < k; i++) {
    record_t *r = find(s, w[i].number);
    if (!r || r->gone_epoch) (void)u64vec_push(&unlink, w[i].number);
  }
  pthread_mutex_unlock(&s->mu);
  unlink_caches(s, &unlink);
  free(w);
}

static int due(const record_t *r, uint64_t now, uint64_t min_age_ns) {
  int wanted = r->state == REC_TO_READ || (r->state == REC_INDEXED && r->wants_blocks);
  return wanted && !r->gone_epoch && now - r->live_ns >= min_age_ns;
}

/* Notes a block filter that could not be read. REQUIRES mu. */
static void note_blocks_damage(index_sync_t *s, const err_t *e) {
  if (e->code == BFH_OK) return;
  s->stats.blocks_damaged++;
  snprintf(s->stats.last_blocks_damaged, sizeof s->stats.last_blocks_damaged, "%.255s", e->msg);
}

/* The result of an upgrade job for the indexed record r. REQUIRES mu. */
static void finish_upgrade(index_sync_t *s, record_t *r, job_t *j) {
  if (j->retry) return; /* stays wanted: the next run tries again */
  r->wants_blocks = 0;  /* whatever happened, the table is not read again for it */
  note_blocks_damage(s, &j->got.blocks_err);
  if (j->rc != BFH_OK || !j->got.blocks) return;
  add_blocks(s, r->number, j->got.blocks);
  j->got.blocks = NULL;
  s->stats.blocks_upgraded++;
  free(r->cache_buf); /* the cache file is rewritten with the block filter */
  r->cache_buf = j->cache_buf;
  r->cache_len = j->cache_len;
  j->cache_buf = NULL;
}

/* The result of a job that read the leaf of r (REC_TO_READ): err gets the first error
   that is not the table's fault. REQUIRES mu. */
static void finish_read(index_sync_t *s, record_t *r, job_t *j, int *rc, err_t *err) {
  if (j->rc == BFH_NOT_FOUND) return; /* the file vanished: the next list says gone */
  if (j->retry) {                     /* stays marked: the next run tries again */
    if (j->rc != BFH_E_NOMEM) s->stats.cache_write_failures++;
    if (*rc == BFH_OK) *rc = err_set(err, j->rc, "%s", j->msg);
    return;
  }
  if (j->rc != BFH_OK) {
    r->state = REC_UNREADABLE;
    r->source = INDEX_LEAF_UNREADABLE;
    s->stats.tables_unreadable++;
    snprintf(s->stats.last_unreadable, sizeof s->stats.last_unreadable, "%.255s", j->msg);
    return;
  }
  err_t e;
  int r2 = value_index_add(s->index, j->number, j->got.filter, j->got.path, j->got.offset, &e);
  j->got.filter = NULL; /* the index owns it now (or freed it) */
  if (r2 != BFH_OK) {
    s->stats.add_errors++;
    r->state = REC_UNREADABLE;
    return;
  }
  r->state = REC_INDEXED;
  r->source = j->source;
  if (j->source == INDEX_LEAF_CACHED)
    s->stats.tables_cached++;
  else
    s->stats.tables_read++;
  note_blocks_damage(s, &j->got.blocks_err);
  const value_index_params_t *p = value_index_params(s->index);
  r->wants_blocks = !j->got.blocks && j->source == INDEX_LEAF_CACHED && p->block_bits;
  add_blocks(s, r->number, j->got.blocks);
  j->got.blocks = NULL;
  r->cache_buf = j->cache_buf;
  r->cache_len = j->cache_len;
  j->cache_buf = NULL;
}

int index_sync_run(index_sync_t *s, int mode, uint64_t min_age_ns, err_t *err) {
  if (mode == INDEX_RUN_ALL) min_age_ns = 0;
  pthread_mutex_lock(&s->run_mu);
  write_due_caches(s, 0);
  /* The tables to read. */
  pthread_mutex_lock(&s->mu);
  uint64_t now = now_ns();
  size_t njobs = 0;
  for (size_t i = 0; s->src.read_leaf && i < s->n; i++) njobs += due(&s->recs[i], now, min_age_ns);
  job_t *jobs = njobs ? calloc(njobs, sizeof *jobs) : NULL;
  size_t k = 0;
  for (size_t i = 0; jobs && i < s->n; i++) {
    const record_t *r = &s->recs[i];
    if (due(r, now, min_age_ns))
      jobs[k++] = (job_t){
          .number = r->number, .size = r->size, .id = r->id, .upgrade = r->state != REC_TO_READ};
  }
  pthread_mutex_unlock(&s->mu);
  int rc = BFH_OK;
  if (njobs && !jobs) {
    rc = err_set(err, BFH_E_NOMEM, "index sync: out of memory");
    goto out;
  }
  for (size_t i = 0; i < njobs; i++) read_job(s, &jobs[i]);
  /* The leaves of the tables still live. */
  u64vec_t unlink;
  u64vec_init(&unlink);
  pthread_mutex_lock(&s->mu);
  for (size_t i = 0; i < njobs; i++) {
    job_t *j = &jobs[i];
    record_t *r = find(s, j->number);
    int want = j->upgrade ? REC_INDEXED : REC_TO_READ;
    if (!r || r->gone_epoch || r->state != want || r->id != j->id) {
      /* Gone (or replaced by another file) while it was read: a cache file written for it goes
         too. */
      if (j->rc == BFH_OK && j->source == INDEX_LEAF_READ && s->src.cache_dir &&
          value_index_params(s->index)->leaves_on_disk && !j->upgrade)
        (void)u64vec_push(&unlink, j->number);
      continue;
    }
    if (j->upgrade)
      finish_upgrade(s, r, j);
    else
      finish_read(s, r, j, &rc, err);
  }
  remove_gone(s, &unlink);
  pthread_mutex_unlock(&s->mu);
  unlink_caches(s, &unlink);
out:
  for (size_t i = 0; i < njobs && jobs; i++) job_release(&jobs[i]);
  free(jobs);
  pthread_mutex_unlock(&s->run_mu);
  return rc;
}

int index_sync_pending(index_sync_t *s, uint64_t min_age_ns) {
  pthread_mutex_lock(&s->mu);
  uint64_t now = now_ns();
  int any = 0;
  for (size_t i = 0; i < s->n && !any; i++) any = due(&s->recs[i], now, min_age_ns);
  pthread_mutex_unlock(&s->mu);
  return any;
}

void index_sync_close_caches(index_sync_t *s) {
  pthread_mutex_lock(&s->run_mu);
  write_due_caches(s, 1);
  pthread_mutex_unlock(&s->run_mu);
}

index_leaf_source_t index_sync_leaf_source(index_sync_t *s, uint64_t number) {
  pthread_mutex_lock(&s->mu);
  record_t *r = find(s, number);
  index_leaf_source_t src = r && !r->gone_epoch ? r->source : INDEX_LEAF_NONE;
  pthread_mutex_unlock(&s->mu);
  return src;
}

void index_sync_get_stats(index_sync_t *s, index_sync_stats_t *st) {
  pthread_mutex_lock(&s->mu);
  *st = s->stats;
  pthread_mutex_unlock(&s->mu);
}

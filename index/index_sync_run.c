/* index_sync_t's reads: index_sync_run gives the tables marked to be read their leaf (from
 * the sidecar cache, else through the source's read_leaf), with mu released while files are
 * read, and writes the cache files that are due. See index_sync.h.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bfh.h"
#include "index/index_sync_private.h"
#include "index/leaf_cache.h"
#include "util/clock.h"

typedef struct job {
  uint64_t number, size;
  uint64_t id;           /* the record's id when the job was made */
  int upgrade;           /* the table is indexed: only its block filter is wanted */
  int parked;            /* got is the leaf a parking run left in the record: no read */
  int had_blocks;        /* the table's block filter went ahead of the leaf (early_blocks) */
  index_leaf_read_t got; /* what was read */
  /* The leaf made of got.filter as soon as it was read (make_leaf), or NULL; made: make_leaf
     took got.filter (a NULL leaf failed: make_err says why). */
  value_index_leaf_t *leaf;
  int made;
  err_t make_err;
  int rc;    /* BFH_OK, BFH_NOT_FOUND (gone), or the read's error */
  int retry; /* rc is not the table's fault (no memory, a cache file not written) */
  index_leaf_source_t source;
  uint8_t *cache_buf; /* leaves in memory: the cache file to write later */
  size_t cache_len;
  char msg[ERR_MSG_BYTES];
} job_t;

static void job_release(index_sync_t *s, job_t *j) {
  value_index_leaf_discard(s->index, j->leaf);
  value_filter_destroy(j->got.filter);
  block_filter_destroy(j->got.blocks);
  value_block_map_destroy(j->got.map);
  free(j->got.map_head);
  free(j->got.map_chunks);
  free(j->got.path);
  free(j->cache_buf);
}

static int loaded(index_sync_t *s, job_t *j, const char *cpath, const leaf_cache_table_t *t,
                  int restamp);

/* The leaf of one table from its cache file. BFH_OK, or why not (a stale file is
   removed: it will be rebuilt). */
static int load_cached(index_sync_t *s, job_t *j, const char *cpath) {
  const value_index_params_t *p = value_index_params(s->index);
  err_t e;
  if (!env_exists(s->src.io, cpath)) return BFH_NOT_FOUND;
  leaf_cache_table_t t = {.number = j->number, .size = j->size};
  /* The map instead of the block filter when this layout reads maps (a file without one: its
     block filter). */
  value_block_map_t **map = p->block_maps && p->block_bits ? &j->got.map : NULL;
  /* The table's stamp first (a stat and its footer): a file made with it is the table's. */
  if (s->src.table_stamp && s->src.table_stamp(s->src.ctx, j->number, &t.stamp, &e) == BFH_OK &&
      t.stamp != 0 &&
      leaf_cache_load_map(s->src.io, cpath, &t, 1, p->m, p->k, p->seed, &j->got.filter,
                          &j->got.blocks, map, &e) == BFH_OK)
    return loaded(s, j, cpath, &t, 0);
  /* Else the table's tag: a file made for other bytes under this number is stale. */
  int r = s->src.table_tag(s->src.ctx, j->number, &t.tag, &e);
  if (r != BFH_OK) return r; /* the table is gone or damaged: read_leaf tells which */
  r = leaf_cache_load_map(s->src.io, cpath, &t, 0, p->m, p->k, p->seed, &j->got.filter,
                          &j->got.blocks, map, &e);
  if (r != BFH_OK) {
    if (r != BFH_NOT_FOUND) {
      (void)env_unlink(s->src.io, cpath, NULL);
      pthread_mutex_lock(&s->mu);
      s->stats.cache_stale += r == BFH_E_CORRUPT;
      pthread_mutex_unlock(&s->mu);
    }
    return r;
  }
  /* Bound by its tag under another stamp (the file was copied, or its inode touched): with
     leaves in memory the file is written again later with the stamp of now, taken before
     the tag, so that the next open needs no tag. */
  return loaded(s, j, cpath, &t, t.stamp != 0 && !p->leaves_on_disk);
}

/* The rest of load_cached, once the cache file at cpath is bound to table t: j holds its
   filters. restamp: keep the file's bytes with t's stamp, to be written later. */
static int loaded(index_sync_t *s, job_t *j, const char *cpath, const leaf_cache_table_t *t,
                  int restamp) {
  const value_index_params_t *p = value_index_params(s->index);
  err_t e;
  j->got.tag = t->tag;
  /* The file is copied with the new stamp (a map's chunks, and with a map the block filter,
     are not held here); one of an older version is made again from its filters. */
  if (restamp &&
      leaf_cache_restamped(s->src.io, cpath, t, &j->cache_buf, &j->cache_len, &e) != BFH_OK &&
      (j->got.map || leaf_cache_encode(t, j->got.filter, j->got.blocks, &j->cache_buf,
                                       &j->cache_len, &e) != BFH_OK))
    j->cache_buf = NULL; /* the cache only speeds up a reopen */
  if (!p->block_bits) {  /* block filters are off for this open */
    block_filter_destroy(j->got.blocks);
    j->got.blocks = NULL;
    value_block_map_destroy(j->got.map);
    j->got.map = NULL;
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
static void read_job_at(index_sync_t *s, job_t *j, const char *cpath) {
  const value_index_params_t *p = value_index_params(s->index);
  err_t e;
  uint64_t t0 = clock_now_ns();
  if (s->src.cache_dir && !j->upgrade && load_cached(s, j, cpath) == BFH_OK) return;
  /* The stamp before the read: a table changed after it is never stamped with these bytes. */
  uint64_t stamp = 0;
  if (s->src.cache_dir && s->src.table_stamp &&
      s->src.table_stamp(s->src.ctx, j->number, &stamp, &e) != BFH_OK)
    stamp = 0;
  /* The map goes into the cache file whatever this open's layout: a later open with maps
     finds it there. */
  j->got.want_map = s->src.cache_dir && p->block_bits && !j->upgrade;
  j->got.terms = s->terms;
  j->rc = s->src.read_leaf(s->src.ctx, j->number, p, &j->got, &e);
  pthread_mutex_lock(&s->mu);
  s->stats.read_ns += clock_now_ns() - t0;
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
  leaf_cache_table_t t = {.number = j->number, .size = j->size, .tag = j->got.tag, .stamp = stamp};
  const leaf_cache_map_bytes_t mb = {j->got.map_head, j->got.map_chunks, j->got.map_head_len,
                                     j->got.map_chunks_len};
  if (p->block_maps && !p->leaves_on_disk && !j->upgrade && j->got.map_head && j->got.blocks) {
    /* A map: its chunks are read from the cache file, so the file is written now and the map
       loaded from it (bound to it), in place of the block filter. If that fails, the block
       filter serves and the file is written later. */
    value_filter_t *f2 = NULL;
    if (leaf_cache_store_map(s->src.io, cpath, &t, j->got.filter, j->got.blocks, &mb, &e) ==
            BFH_OK &&
        leaf_cache_load_map(s->src.io, cpath, &t, 0, p->m, p->k, p->seed, &f2, NULL, &j->got.map,
                            &e) == BFH_OK &&
        j->got.map) {
      value_filter_destroy(f2);
      block_filter_destroy(j->got.blocks);
      j->got.blocks = NULL;
      return;
    }
    value_filter_destroy(f2);
  }
  if (p->leaves_on_disk && !j->upgrade) {
    j->rc = leaf_cache_store_map(s->src.io, cpath, &t, j->got.filter, j->got.blocks, &mb, &e);
    if (j->rc == BFH_OK && !(j->got.path = strdup(cpath))) j->rc = BFH_E_NOMEM;
    j->got.offset = LEAF_CACHE_HEADER_BYTES;
    value_filter_t *f2 = NULL; /* with maps: the map from the file, in place of the filter */
    if (j->rc == BFH_OK && p->block_maps && j->got.map_head &&
        leaf_cache_load_map(s->src.io, cpath, &t, 0, p->m, p->k, p->seed, &f2, NULL, &j->got.map,
                            &e) == BFH_OK &&
        j->got.map) {
      block_filter_destroy(j->got.blocks);
      j->got.blocks = NULL;
    }
    value_filter_destroy(f2);
    if (j->rc != BFH_OK) {
      j->retry = 1;
      snprintf(j->msg, sizeof j->msg, "%s", e.msg);
      value_filter_destroy(j->got.filter);
      j->got.filter = NULL;
    }
  } else if (leaf_cache_encode_map(&t, j->got.filter, j->got.blocks, &mb, &j->cache_buf,
                                   &j->cache_len, &e) != BFH_OK) {
    j->cache_buf = NULL; /* the cache only speeds up a reopen */
  }
}

/* read_job_at with the table's cache file ("" without a cache directory). */
static void read_job(index_sync_t *s, job_t *j) {
  if (j->parked) return; /* read by the parking run */
  char *cpath = NULL;
  if (s->src.cache_dir && !(cpath = index_sync_cache_path(s, j->number))) {
    j->rc = BFH_E_NOMEM;
    j->retry = 1;
    snprintf(j->msg, sizeof j->msg, "table %06llu: no memory for its cache file's path",
             (unsigned long long)j->number);
    return;
  }
  read_job_at(s, j, cpath ? cpath : "");
  free(cpath);
}

/* Makes the leaf of a job that read a table's filter at once (value_index_leaf_make), so that
   a run holds one table's words at a time: in the lean layout a filter stored in a file keeps
   only its chunk CRCs until it is folded. Not for an upgrade or a parking run (its leaf waits
   whole in the record). */
static void make_leaf(index_sync_t *s, job_t *j, int parking) {
  if (parking || j->upgrade || j->rc != BFH_OK || j->retry || !j->got.filter) return;
  err_clear(&j->make_err);
  j->leaf = value_index_leaf_make(s->index, j->number, j->got.filter, j->got.path, j->got.offset,
                                  &j->make_err);
  j->got.filter = NULL;
  j->made = 1;
}

/* Writes the cache bytes of the live records listed for at least cache_delay_ns (all with
   force). REQUIRES run_mu, not mu. */
static void write_due_caches(index_sync_t *s, int force) {
  if (!s->src.cache_dir) return;
  uint64_t now = clock_now_ns();
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
    char *path = index_sync_cache_path(s, w[i].number);
    err_t e;
    if (path) /* a speed-up: not retried (nor without memory for the path) */
      (void)leaf_cache_write(s->src.io, path, w[i].cache_buf, w[i].cache_len, &e);
    free(path);
    free(w[i].cache_buf);
  }
  /* A table that went while its file was written: the file goes too. */
  pthread_mutex_lock(&s->mu);
  u64vec_t unlink;
  u64vec_init(&unlink);
  for (size_t i = 0; i < k; i++) {
    record_t *r = index_sync_find(s, w[i].number);
    if (!r || r->gone_epoch) (void)u64vec_push(&unlink, w[i].number);
  }
  pthread_mutex_unlock(&s->mu);
  index_sync_unlink_caches(s, &unlink);
  free(w);
}

/* A table to read now: one without a leaf, or a cached leaf's table wanting its block
   filter, live for min_age_ns; one without a leaf that a search met, at once. */
static int due(const record_t *r, uint64_t now, uint64_t min_age_ns) {
  int wanted = r->state == REC_TO_READ || (r->state == REC_INDEXED && r->wants_blocks);
  int aged = now - r->live_ns >= min_age_ns || (r->state == REC_TO_READ && r->met);
  return wanted && !r->gone_epoch && aged;
}

/* Is r a table a parking run reads (one without a leaf, not parked yet, that the persisted
   index does not answer for: its map head comes from that file when a search selects it)?
   REQUIRES mu. */
static int wants_parking(index_sync_t *s, const record_t *r) {
  return r->state == REC_TO_READ && !r->parked &&
         !value_index_persisted_covers(s->index, r->number);
}

/* Notes a block filter that could not be read. REQUIRES mu. */
static void note_blocks_damage(index_sync_t *s, const err_t *e) {
  if (e->code == BFH_OK) return;
  s->stats.blocks_damaged++;
  snprintf(s->stats.last_blocks_damaged, sizeof s->stats.last_blocks_damaged, "%.255s", e->msg);
}

/* The table's block level into the block index: its map (from its cache file) if it has one,
   else its block filter. Takes both from got. REQUIRES mu. */
static void add_block_level(index_sync_t *s, uint64_t number, index_leaf_read_t *got) {
  value_block_map_t *m = got->map;
  got->map = NULL;
  if (m && block_index_put_map(value_index_blocks(s->index), number, m) == BFH_OK) {
    s->stats.blocks_added++;
    block_filter_destroy(got->blocks);
    got->blocks = NULL;
    return;
  }
  index_sync_add_blocks(s, number, got->blocks);
  got->blocks = NULL;
}

/* The result of an upgrade job for the indexed record r. REQUIRES mu. */
static void finish_upgrade(index_sync_t *s, record_t *r, job_t *j) {
  if (j->retry) return; /* stays wanted: the next run tries again */
  r->wants_blocks = 0;  /* whatever happened, the table is not read again for it */
  note_blocks_damage(s, &j->got.blocks_err);
  if (j->rc != BFH_OK || !j->got.blocks) return;
  index_sync_add_blocks(s, r->number, j->got.blocks);
  j->got.blocks = NULL;
  s->stats.blocks_upgraded++;
  free(r->cache_buf); /* the cache file is rewritten with the block filter */
  r->cache_buf = j->cache_buf;
  r->cache_len = j->cache_len;
  j->cache_buf = NULL;
}

/* r's block filter, read ahead of its leaf, leaves the block index. REQUIRES mu. */
static void drop_early_blocks(index_sync_t *s, record_t *r) {
  if (!r->early_blocks) return;
  block_index_remove(value_index_blocks(s->index), r->number);
  r->early_blocks = 0;
}

/* A parking run's result for r (REC_TO_READ): the block filter enters the block index now,
   the leaf waits in the record for the next run. REQUIRES mu. */
static void park(index_sync_t *s, record_t *r, job_t *j) {
  if (j->got.map) {
    value_block_map_t *m = j->got.map;
    j->got.map = NULL;
    if (block_index_put_map(value_index_blocks(s->index), r->number, m) == BFH_OK) {
      r->early_blocks = 1;
      s->stats.blocks_early++;
      block_filter_destroy(j->got.blocks);
      j->got.blocks = NULL;
    }
  }
  if (j->got.blocks &&
      block_index_put(value_index_blocks(s->index), r->number, j->got.blocks) == BFH_OK) {
    r->early_blocks = 1;
    s->stats.blocks_early++;
  }
  j->got.blocks = NULL;
  note_blocks_damage(s, &j->got.blocks_err);
  err_clear(&j->got.blocks_err);
  r->parked = 1;
  r->parked_source = j->source;
  r->filter = j->got.filter;
  r->path = j->got.path;
  r->offset = j->got.offset;
  r->cache_buf = j->cache_buf;
  r->cache_len = j->cache_len;
  j->got.filter = NULL;
  j->got.path = NULL;
  j->cache_buf = NULL;
}

/* Hands j's leaf to the value index: the one make_leaf made, else its filter; the index owns
   it then (or freed it). */
static int add_leaf(index_sync_t *s, job_t *j, err_t *e) {
  value_filter_t *f = j->got.filter;
  value_index_leaf_t *l = j->leaf;
  j->got.filter = NULL;
  j->leaf = NULL;
  if (!j->made) return value_index_add(s->index, j->number, f, j->got.path, j->got.offset, e);
  if (l) return value_index_add_leaf(s->index, l, e);
  *e = j->make_err;
  return j->make_err.code;
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
    drop_early_blocks(s, r); /* the table is read whole: its bytes did not check out */
    r->state = REC_UNREADABLE;
    r->source = INDEX_LEAF_UNREADABLE;
    s->stats.tables_unreadable++;
    snprintf(s->stats.last_unreadable, sizeof s->stats.last_unreadable, "%.255s", j->msg);
    return;
  }
  err_t e;
  int r2 = add_leaf(s, j, &e);
  if (r2 != BFH_OK) {
    drop_early_blocks(s, r);
    s->stats.add_errors++;
    r->state = REC_UNREADABLE;
    return;
  }
  r->state = REC_INDEXED;
  r->source = j->source;
  r->early_blocks = 0; /* value_index_remove drops the block filter with the leaf now */
  if (j->source == INDEX_LEAF_CACHED)
    s->stats.tables_cached++;
  else
    s->stats.tables_read++;
  note_blocks_damage(s, &j->got.blocks_err);
  const value_index_params_t *p = value_index_params(s->index);
  r->wants_blocks = !j->got.blocks && !j->got.map && !j->had_blocks &&
                    j->source == INDEX_LEAF_CACHED && p->block_bits;
  add_block_level(s, r->number, &j->got);
  r->cache_buf = j->cache_buf;
  r->cache_len = j->cache_len;
  j->cache_buf = NULL;
}

int index_sync_run(index_sync_t *s, int mode, uint64_t min_age_ns, err_t *err) {
  return index_sync_run_some(s, mode, min_age_ns, SIZE_MAX, NULL, err);
}

static int run(index_sync_t *s, int mode, uint64_t min_age_ns, size_t limit, size_t *ran,
               int parking, err_t *err);

int index_sync_run_some(index_sync_t *s, int mode, uint64_t min_age_ns, size_t limit, size_t *ran,
                        err_t *err) {
  return run(s, mode, min_age_ns, limit, ran, 0, err);
}

int index_sync_run_parking(index_sync_t *s, err_t *err) {
  return run(s, INDEX_RUN_ALL, 0, SIZE_MAX, NULL, 1, err);
}

/* Job j, read, enters the index (or is parked, or its table's block filter is upgraded),
   unless its table went (or was replaced by another file) while it was read: a cache file
   written for it then goes too, into unlink. REQUIRES mu. */
static void finish_job(index_sync_t *s, job_t *j, int parking, u64vec_t *unlink, int *rc,
                       err_t *err) {
  record_t *r = index_sync_find(s, j->number);
  int want = j->upgrade ? REC_INDEXED : REC_TO_READ;
  if (!r || r->gone_epoch || r->state != want || r->id != j->id) {
    if (j->rc == BFH_OK && j->source == INDEX_LEAF_READ && s->src.cache_dir &&
        value_index_params(s->index)->leaves_on_disk && !j->upgrade)
      (void)u64vec_push(unlink, j->number);
    return;
  }
  if (j->upgrade)
    finish_upgrade(s, r, j);
  else if (parking && j->rc == BFH_OK && !j->retry)
    park(s, r, j);
  else
    finish_read(s, r, j, rc, err);
}

/* With parking, only tables marked to be read and not parked yet are read, and each one's
   leaf is parked (park above) instead of entering the value index. */
static int run(index_sync_t *s, int mode, uint64_t min_age_ns, size_t limit, size_t *ran,
               int parking, err_t *err) {
  if (mode == INDEX_RUN_ALL) min_age_ns = 0;
  pthread_mutex_lock(&s->run_mu);
  write_due_caches(s, 0);
  /* The tables to read. */
  pthread_mutex_lock(&s->mu);
  uint64_t now = clock_now_ns();
  size_t njobs = 0;
  for (size_t i = 0; s->src.read_leaf && i < s->n && njobs < limit; i++)
    njobs += due(&s->recs[i], now, min_age_ns) && (!parking || wants_parking(s, &s->recs[i]));
  job_t *jobs = njobs ? calloc(njobs, sizeof *jobs) : NULL;
  size_t k = 0;
  for (size_t i = 0; jobs && i < s->n && k < njobs; i++) {
    record_t *r = &s->recs[i];
    if (!due(r, now, min_age_ns) || (parking && !wants_parking(s, r))) continue;
    job_t *j = &jobs[k++];
    *j = (job_t){.number = r->number,
                 .size = r->size,
                 .id = r->id,
                 .upgrade = r->state != REC_TO_READ,
                 .had_blocks = r->early_blocks};
    if (r->state == REC_TO_READ && r->parked) { /* the leaf a parking run read */
      j->parked = 1;
      j->rc = BFH_OK;
      j->source = r->parked_source;
      j->got.filter = r->filter;
      j->got.path = r->path;
      j->got.offset = r->offset;
      j->cache_buf = r->cache_buf;
      j->cache_len = r->cache_len;
      r->filter = NULL;
      r->path = NULL;
      r->cache_buf = NULL;
      r->parked = 0;
    }
  }
  pthread_mutex_unlock(&s->mu);
  if (ran) *ran = njobs;
  int rc = BFH_OK;
  if (njobs && !jobs) {
    rc = err_set(err, BFH_E_NOMEM, "index sync: out of memory");
    goto out;
  }
  /* The leaves of the tables still live: all together, or (INDEX_RUN_AGED, the background
     thread's runs, whose tables searches read whole meanwhile) each as soon as it is read. */
  const size_t step = mode == INDEX_RUN_AGED ? 1 : njobs;
  for (size_t from = 0; from < njobs; from += step) {
    const size_t to = njobs - from < step ? njobs : from + step;
    for (size_t i = from; i < to; i++) {
      read_job(s, &jobs[i]);
      make_leaf(s, &jobs[i], parking);
    }
    u64vec_t unlink;
    u64vec_init(&unlink);
    pthread_mutex_lock(&s->mu);
    for (size_t i = from; i < to; i++) finish_job(s, &jobs[i], parking, &unlink, &rc, err);
    index_sync_remove_gone(s, &unlink);
    pthread_mutex_unlock(&s->mu);
    index_sync_unlink_caches(s, &unlink);
  }
out:
  for (size_t i = 0; i < njobs && jobs; i++) job_release(s, &jobs[i]);
  free(jobs);
  pthread_mutex_unlock(&s->run_mu);
  return rc;
}

int index_sync_pending(index_sync_t *s, uint64_t min_age_ns) {
  pthread_mutex_lock(&s->mu);
  uint64_t now = clock_now_ns();
  int any = 0;
  for (size_t i = 0; i < s->n && !any; i++) any = due(&s->recs[i], now, min_age_ns);
  pthread_mutex_unlock(&s->mu);
  return any;
}

int index_sync_take_met(index_sync_t *s) {
  pthread_mutex_lock(&s->mu);
  int met = s->met_new;
  s->met_new = 0;
  pthread_mutex_unlock(&s->mu);
  return met;
}

void index_sync_close_caches(index_sync_t *s) {
  pthread_mutex_lock(&s->run_mu);
  write_due_caches(s, 1);
  pthread_mutex_unlock(&s->run_mu);
}

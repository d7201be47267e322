/* The block filters of the live tables; see block_index.h. A u64_map from table number to
 * filter pointer under a rwlock: probes (searches) share it, puts and removes (index_sync,
 * a few per flush or compaction) take it alone. */
#include "index/block_index.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bfh.h"
#include "util/u64_map.h"

struct block_index {
  pthread_rwlock_t lock;
  u64_map_t filters; /* number -> block_filter_t * (owned) */
  u64_map_t maps;    /* number -> value_block_map_t * (owned) */
  block_index_stats_t st;
  /* st.tables and st.maps, for block_index_counts to read without the lock */
  _Atomic uint64_t ntables, nmaps;
};

int block_refs_reserve(block_refs_t *r, size_t n) {
  if (n <= r->cap) return BFH_OK;
  block_ref_t *v = realloc(r->v, n * sizeof *v);
  if (!v) return BFH_E_NOMEM;
  r->v = v;
  uint64_t *b = realloc(r->bound, n * sizeof *b);
  if (!b) return BFH_E_NOMEM;
  r->bound = b;
  r->cap = n;
  return BFH_OK;
}

void block_refs_release(block_refs_t *r) {
  free(r->v);
  free(r->bound);
  free(r->scratch);
  *r = (block_refs_t){0};
}

block_index_t *block_index_create(void) {
  block_index_t *bi = calloc(1, sizeof *bi);
  if (!bi) return NULL;
  if (pthread_rwlock_init(&bi->lock, NULL)) {
    free(bi);
    return NULL;
  }
  u64_map_init(&bi->filters);
  u64_map_init(&bi->maps);
  return bi;
}

void block_index_destroy(block_index_t *bi) {
  if (!bi) return;
  uint64_t v;
  for (size_t pos = 0; u64_map_next(&bi->filters, &pos, NULL, &v);)
    block_filter_destroy((block_filter_t *)(uintptr_t)v);
  u64_map_release(&bi->filters);
  for (size_t pos = 0; u64_map_next(&bi->maps, &pos, NULL, &v);)
    value_block_map_destroy((value_block_map_t *)(uintptr_t)v);
  u64_map_release(&bi->maps);
  pthread_rwlock_destroy(&bi->lock);
  free(bi);
}

static block_filter_t *find(const block_index_t *bi, uint64_t number) {
  uint64_t v;
  return u64_map_get(&bi->filters, number, &v) ? (block_filter_t *)(uintptr_t)v : NULL;
}

static value_block_map_t *find_map(const block_index_t *bi, uint64_t number) {
  uint64_t v;
  return u64_map_get(&bi->maps, number, &v) ? (value_block_map_t *)(uintptr_t)v : NULL;
}

static void count(block_index_t *bi, const block_filter_t *f, int sign) {
  bi->st.tables += (uint64_t)sign;
  atomic_store_explicit(&bi->ntables, bi->st.tables, memory_order_relaxed);
  bi->st.bytes += (uint64_t)sign * block_filter_memory(f);
  bi->st.values += (uint64_t)sign * block_filter_values(f);
}

static void count_map(block_index_t *bi, const value_block_map_t *m, int sign) {
  bi->st.tables += (uint64_t)sign;
  bi->st.maps += (uint64_t)sign;
  atomic_store_explicit(&bi->ntables, bi->st.tables, memory_order_relaxed);
  atomic_store_explicit(&bi->nmaps, bi->st.maps, memory_order_relaxed);
  bi->st.bytes += (uint64_t)sign * value_block_map_memory(m);
}

/* Takes table number's filter out (returned for the caller to free outside the lock).
   REQUIRES the write lock. */
static block_filter_t *take_filter(block_index_t *bi, uint64_t number) {
  block_filter_t *old = find(bi, number);
  if (old) {
    u64_map_del(&bi->filters, number, NULL);
    count(bi, old, -1);
  }
  return old;
}

static value_block_map_t *take_map(block_index_t *bi, uint64_t number) {
  value_block_map_t *old = find_map(bi, number);
  if (old) {
    u64_map_del(&bi->maps, number, NULL);
    count_map(bi, old, -1);
  }
  return old;
}

int block_index_put(block_index_t *bi, uint64_t number, block_filter_t *f) {
  pthread_rwlock_wrlock(&bi->lock);
  if (find_map(bi, number)) { /* the map replaces it: nothing to keep */
    pthread_rwlock_unlock(&bi->lock);
    block_filter_destroy(f);
    return BFH_OK;
  }
  block_filter_t *old = find(bi, number);
  int rc = u64_map_put(&bi->filters, number, (uint64_t)(uintptr_t)f);
  if (rc == BFH_OK) {
    if (old) count(bi, old, -1);
    count(bi, f, 1);
  }
  pthread_rwlock_unlock(&bi->lock);
  block_filter_destroy(rc == BFH_OK ? old : f);
  return rc;
}

int block_index_put_map(block_index_t *bi, uint64_t number, value_block_map_t *m) {
  pthread_rwlock_wrlock(&bi->lock);
  value_block_map_t *old = find_map(bi, number);
  int rc = u64_map_put(&bi->maps, number, (uint64_t)(uintptr_t)m);
  block_filter_t *f = NULL;
  if (rc == BFH_OK) {
    if (old) count_map(bi, old, -1);
    count_map(bi, m, 1);
    f = take_filter(bi, number);
  }
  pthread_rwlock_unlock(&bi->lock);
  value_block_map_destroy(rc == BFH_OK ? old : m);
  block_filter_destroy(f);
  return rc;
}

void block_index_remove(block_index_t *bi, uint64_t number) {
  pthread_rwlock_wrlock(&bi->lock);
  block_filter_t *old = take_filter(bi, number);
  value_block_map_t *m = take_map(bi, number);
  pthread_rwlock_unlock(&bi->lock);
  block_filter_destroy(old);
  value_block_map_destroy(m);
}

void block_index_drop_damaged(block_index_t *bi, uint64_t number, const err_t *why) {
  block_index_remove(bi, number);
  block_index_count_damaged(bi, why);
}

void block_index_prefetch(block_index_t *bi, const uint64_t *numbers, size_t n,
                          uint64_t value_hash) {
  pthread_rwlock_rdlock(&bi->lock);
  for (size_t i = 0; i < n && u64_map_count(&bi->maps) > 0; i++) {
    const value_block_map_t *m = find_map(bi, numbers[i]);
    if (m) value_block_map_prefetch(m, value_hash);
  }
  pthread_rwlock_unlock(&bi->lock);
}

void block_index_rule_out(block_index_t *bi, const uint64_t *numbers, size_t n, uint64_t value_hash,
                          uint8_t *out) {
  pthread_rwlock_rdlock(&bi->lock);
  for (size_t i = 0; i < n; i++) {
    const value_block_map_t *m = u64_map_count(&bi->maps) ? find_map(bi, numbers[i]) : NULL;
    out[i] = m ? (uint8_t)value_block_map_rules_out(m, value_hash) : 0;
  }
  pthread_rwlock_unlock(&bi->lock);
}

void block_index_zones(block_index_t *bi, const uint64_t *numbers, size_t n, uint64_t zone_id,
                       uint64_t *lo, uint64_t *hi) {
  pthread_rwlock_rdlock(&bi->lock);
  int any = u64_map_count(&bi->maps) > 0;
  for (size_t i = 0; i < n; i++) {
    const value_block_map_t *m = any ? find_map(bi, numbers[i]) : NULL;
    if (!m || !value_block_map_zone(m, zone_id, &lo[i], &hi[i])) lo[i] = 0, hi[i] = UINT64_MAX;
  }
  pthread_rwlock_unlock(&bi->lock);
}

/* Table number's map, if a probe would read it: through the caller's reader (can_read) or
   its own (value_block_map_set_reader); else NULL. Lock held. */
static const value_block_map_t *map_to_read(const block_index_t *bi, uint64_t number,
                                            int can_read) {
  const value_block_map_t *m = u64_map_count(&bi->maps) ? find_map(bi, number) : NULL;
  return m && (can_read || value_block_map_has_reader(m)) ? m : NULL;
}

uint64_t block_index_sure_read(block_index_t *bi, uint64_t number, const uint64_t *hashes, size_t n,
                               int can_read) {
  pthread_rwlock_rdlock(&bi->lock);
  const value_block_map_t *m = map_to_read(bi, number, can_read);
  uint64_t bytes = 0;
  for (size_t i = 0; m && i < n; i++) bytes += value_block_map_sure_read(m, hashes[i]);
  pthread_rwlock_unlock(&bi->lock);
  return bytes;
}

size_t block_index_sure_spans(block_index_t *bi, uint64_t number, const uint64_t *hashes, size_t n,
                              block_span_t *out) {
  pthread_rwlock_rdlock(&bi->lock);
  const value_block_map_t *m = map_to_read(bi, number, 1);
  size_t k = 0;
  if (m && value_block_map_has_reader(m)) m = NULL; /* read from its own file, not the table */
  for (size_t i = 0; m && i < n; i++)
    k += value_block_map_sure_span(m, hashes[i], &out[k].offset, &out[k].len);
  pthread_rwlock_unlock(&bi->lock);
  return k;
}

int block_index_has_map(block_index_t *bi, uint64_t number) {
  pthread_rwlock_rdlock(&bi->lock);
  int has = find_map(bi, number) != NULL;
  pthread_rwlock_unlock(&bi->lock);
  return has;
}

void block_index_count_damaged(block_index_t *bi, const err_t *why) {
  pthread_rwlock_wrlock(&bi->lock);
  bi->st.damaged++;
  snprintf(bi->st.last_damaged, sizeof bi->st.last_damaged, "%.255s", why->msg);
  pthread_rwlock_unlock(&bi->lock);
}

int block_index_has(block_index_t *bi, uint64_t number) {
  pthread_rwlock_rdlock(&bi->lock);
  int has = find(bi, number) != NULL || find_map(bi, number) != NULL;
  pthread_rwlock_unlock(&bi->lock);
  return has;
}

/* Room for n refs and n scratch indexes. */
static int refs_reserve(block_refs_t *r, size_t n) {
  if (n > r->cap && block_refs_reserve(r, n) != BFH_OK) return BFH_E_NOMEM;
  if (n > r->scratch_cap) {
    uint32_t *s = realloc(r->scratch, n * sizeof *s);
    if (!s) return BFH_E_NOMEM;
    r->scratch = s;
    r->scratch_cap = n;
  }
  return BFH_OK;
}

/* ---- Chunks read ahead ------------------------------------------------------------------ */

void block_chunks_ahead_release(block_chunks_ahead_t *a) {
  for (size_t i = 0; i < a->n; i++) free(a->v[i].bytes);
  free(a->v);
  memset(a, 0, sizeof *a);
}

/* Makes the reads rd[0, k) of io; a read that fails or comes short leaves its chunk empty. */
static void ahead_batch(env_t *io, env_read_t *rd, const size_t *at, size_t k,
                        block_chunks_ahead_t *a) {
  (void)env_read_batch(io, rd, k, NULL); /* each read has its own result */
  for (size_t j = 0; j < k; j++)
    if (rd[j].rc != BFH_OK || rd[j].got != rd[j].n) {
      free(a->v[at[j]].bytes);
      a->v[at[j]].bytes = NULL;
    }
}

int block_index_read_ahead_own(block_index_t *bi, const uint64_t *numbers, size_t n,
                               const uint64_t *hashes, size_t nh, block_chunks_ahead_t *a) {
  env_read_t rd[BLOCK_INDEX_AHEAD_BATCH];
  size_t at[BLOCK_INDEX_AHEAD_BATCH], k = 0;
  env_t *batch_io = NULL;
  int rc = BFH_OK;
  pthread_rwlock_rdlock(&bi->lock); /* the maps' files stay open while it is held */
  for (size_t i = 0; i < n && rc == BFH_OK && u64_map_count(&bi->maps); i++) {
    const value_block_map_t *m = find_map(bi, numbers[i]);
    size_t first = a->n; /* this table's chunks: a->v[first, a->n) */
    for (size_t j = 0; m && j < nh && rc == BFH_OK; j++) {
      uint64_t off, pos;
      size_t len, q = first;
      env_t *io;
      env_rfile_t *f;
      if (!value_block_map_sure_span(m, hashes[j], &off, &len) ||
          !value_block_map_own_place(m, off, len, &io, &f, &pos))
        continue;
      while (q < a->n && a->v[q].off != off) q++;
      if (q < a->n) continue; /* another hash's chunk too */
      if (k == BLOCK_INDEX_AHEAD_BATCH || (k && io != batch_io)) {
        ahead_batch(batch_io, rd, at, k, a);
        k = 0;
      }
      uint8_t *b = NULL;
      if (a->n == a->cap) {
        size_t cap = a->cap ? 2 * a->cap : 64;
        block_chunk_ahead_t *v = realloc(a->v, cap * sizeof *v);
        if (!v)
          rc = BFH_E_NOMEM;
        else
          a->v = v, a->cap = cap;
      }
      if (rc == BFH_OK && !(b = malloc(len ? len : 1))) rc = BFH_E_NOMEM;
      if (rc != BFH_OK) break;
      a->v[a->n] = (block_chunk_ahead_t){numbers[i], off, len, b};
      at[k] = a->n++;
      rd[k++] = (env_read_t){f, pos, b, len, 0, BFH_OK};
      batch_io = io;
    }
  }
  if (k) ahead_batch(batch_io, rd, at, k, a);
  pthread_rwlock_unlock(&bi->lock);
  return rc;
}

/* Copies the chunk of table `number` at [off, off + len) into buf if a holds it: 1, else 0. */
static int ahead_take(block_chunks_ahead_t *a, uint64_t number, uint64_t off, size_t len,
                      void *buf) {
  for (size_t k = 0, i = a->hint; k < a->n; k++, i = i + 1 < a->n ? i + 1 : 0) {
    const block_chunk_ahead_t *c = &a->v[i];
    if (c->number != number || c->off != off || c->len != len) continue;
    a->hint = i;
    if (!c->bytes) return 0;
    memcpy(buf, c->bytes, len);
    return 1;
  }
  return 0;
}

/* The reader of a map with its own reader during a search that read ahead: the chunks read
   ahead, else the map's own reader. */
typedef struct ahead_reader {
  const value_block_map_t *m;
  block_chunks_ahead_t *a;
  uint64_t number;
} ahead_reader_t;

static int read_ahead_or_own(void *arg, uint64_t off, size_t len, void *buf, err_t *err) {
  ahead_reader_t *r = arg;
  if (ahead_take(r->a, r->number, off, len, buf)) return BFH_OK;
  return value_block_map_read_own(r->m, off, len, buf, err);
}

/* Probes table number's map: out gets the blocks it names. REQUIRES the read lock. */
static int probe_map(const value_block_map_t *m, uint64_t number, uint64_t value_hash,
                     block_refs_t *out, uint32_t *blocks, block_map_io_t *io, err_t *err) {
  if (refs_reserve(out, value_block_map_blocks(m)) != BFH_OK)
    return err_set(err, BFH_E_NOMEM, "block index: out of memory");
  uint32_t n = 0;
  int rc;
  if (io->ahead && io->ahead->n && value_block_map_has_reader(m)) {
    ahead_reader_t r = {m, io->ahead, number};
    rc = value_block_map_probe_through(m, value_hash, read_ahead_or_own, &r, out->scratch,
                                       out->bound, &n, &io->chunks_read, &io->bytes_read, err);
  } else {
    rc = value_block_map_probe(m, value_hash, io->read, io->arg, out->scratch, out->bound, &n,
                               &io->chunks_read, &io->bytes_read, err);
  }
  if (rc != BFH_OK) return rc;
  for (uint32_t i = 0; i < n; i++) out->v[i] = value_block_map_ref(m, out->scratch[i]);
  out->n = n;
  if (blocks) *blocks = value_block_map_blocks(m);
  return BFH_OK;
}

int block_index_probe(block_index_t *bi, uint64_t number, uint64_t value_hash, block_refs_t *out,
                      uint32_t *blocks, block_map_io_t *io, err_t *err) {
  out->n = 0;
  pthread_rwlock_rdlock(&bi->lock);
  const value_block_map_t *m = map_to_read(bi, number, io && io->read);
  if (m) {
    int rc = probe_map(m, number, value_hash, out, blocks, io, err);
    pthread_rwlock_unlock(&bi->lock);
    return rc;
  }
  const block_filter_t *f = find(bi, number);
  int rc = !f ? BFH_NOT_FOUND : refs_reserve(out, block_filter_blocks(f));
  if (rc == BFH_OK) {
    uint32_t n = block_filter_probe(f, value_hash, out->scratch);
    for (uint32_t i = 0; i < n; i++) {
      out->v[i] = block_filter_ref(f, out->scratch[i]);
      out->bound[i] = VALUE_BLOCK_MAP_NO_BOUND;
    }
    out->n = n;
    if (blocks) *blocks = block_filter_blocks(f);
  }
  pthread_rwlock_unlock(&bi->lock);
  if (rc == BFH_E_NOMEM) err_set(err, rc, "block index: out of memory");
  return rc;
}

int block_index_range(block_index_t *bi, uint64_t number, uint64_t zone_id, uint64_t lo,
                      uint64_t hi, block_map_io_t *io, err_t *err) {
  pthread_rwlock_rdlock(&bi->lock);
  const value_block_map_t *m = map_to_read(bi, number, io && io->read);
  int rc = 1;
  if (m && value_block_map_has_range(m, zone_id))
    rc =
        value_block_map_range(m, zone_id, lo, hi, io ? io->read : NULL, io ? io->arg : NULL,
                              io ? &io->range_pieces_read : NULL, io ? &io->bytes_read : NULL, err);
  pthread_rwlock_unlock(&bi->lock);
  return rc;
}

void block_index_counts(block_index_t *bi, uint64_t *tables, uint64_t *maps) {
  *tables = atomic_load_explicit(&bi->ntables, memory_order_relaxed);
  *maps = atomic_load_explicit(&bi->nmaps, memory_order_relaxed);
}

void block_index_get_stats(block_index_t *bi, block_index_stats_t *st) {
  pthread_rwlock_rdlock(&bi->lock);
  *st = bi->st;
  st->held_bytes = st->bytes + sizeof *bi + u64_map_size_in_bytes(&bi->filters) +
                   u64_map_size_in_bytes(&bi->maps);
  pthread_rwlock_unlock(&bi->lock);
}

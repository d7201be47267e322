/* value_index_t: leaves (one value filter per live table), the hierarchy and the bit-sliced
 * index over them, under one rwlock. See value_index.h.
 *
 * Adds and removes are queued and applied in one batch before the next query (see
 * value_index_apply in the header): the engine's threads pay O(1) per table, and the many
 * tables a compaction burst creates and drops between two searches cost the index nothing.
 *
 * Leaves are kept in an array sorted by table number (binary search; adds and removes are
 * rare next to searches, so the O(B) memmove does not matter), which is also the order in
 * which BFH_SEARCH_LEAVES tests them.
 *
 * Leaves on disk: a leaf keeps the path of the file holding its serialized filter
 * (filters/value_filter.h layout) and the offset of that serialized form. A probe preads the k
 * words it needs through a small cache of open descriptors; any read failure counts as "maybe"
 * (never a false negative). While value_index_add runs, the new leaf's words are still in memory,
 * so the hierarchy's load() of that leaf reads no file.
 *
 * A filter read back from disk is verified before it may say "no": when a leaf is added its
 * words are in memory (checked by the CRC of the block or file they came from), and the leaf
 * keeps a CRC32C of every CHUNK_BYTES of them. A probe reads the whole chunk around each word
 * it needs and checks it; a chunk that does not match (the file changed or went bad under an
 * open database) counts as "maybe", and so does a whole-filter read that does not match.
 */
#include "lsm_hooks/index/value_index.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "filters/bits.h"
#include "hierarchy/id_map.h"
#include "hierarchy/sliced.h"
#include "util/coding.h"
#include "util/crc32c.h"

#define FD_CACHE_SLOTS 64
#define CHUNK_WORDS 64 /* a leaf on disk is verified in chunks of 512 bytes */
#define CHUNK_BYTES (8 * CHUNK_WORDS)

typedef struct leaf {
  uint64_t number;
  value_filter_t *filter; /* owned; NULL when the leaf lives on disk */
  char *path;             /* owned; may be NULL for in-memory leaves */
  uint64_t offset;        /* of the serialized filter in path */
  uint64_t popcount;
  uint32_t *crcs; /* owned; leaves on disk: CRC32C of each chunk of words as stored */
} leaf_t;

typedef struct pending_op {
  uint64_t number;
  leaf_t *leaf; /* owned; NULL for a remove */
} pending_op_t;

typedef struct fd_slot {
  uint64_t number;
  int fd;   /* -1: free */
  int refs; /* searches using the fd right now */
  uint64_t last_use;
} fd_slot_t;

struct value_index {
  value_index_params_t params;
  size_t nwords;
  pthread_rwlock_t lock;
  leaf_t **leaves; /* sorted by number */
  size_t n, cap;
  uint64_t popcount_sum;
  hierarchy_t *hier;
  sliced_t *sliced;
  const uint64_t *adding_words; /* words of the leaf being added (for load()) */
  uint64_t adding_number;
  /* Adds and removes are queued (O(1) for the engine's flush and compaction threads) and
     applied in one go before the next query; tables that come and go between two queries
     never touch the hierarchy or the sliced index. Lock order: lock, then pend_mu. */
  pthread_mutex_t pend_mu;
  pending_op_t *pend; /* in call order; leaf != NULL: add, NULL: remove */
  size_t npend, cappend;
  _Atomic size_t npend_atomic;
  id_map_t members;      /* tables indexed or queued for adding, minus those queued for removal */
  block_index_t *blocks; /* the block filters under the leaves (owned) */
  pthread_mutex_t fd_mu; /* guards fds and clock */
  fd_slot_t fds[FD_CACHE_SLOTS];
  uint64_t clock;
};

/* ---- The sorted leaf array ---------------------------------------------------------- */

/* Index of the first leaf with number >= x. */
static size_t lower_bound(const value_index_t *vi, uint64_t x) {
  size_t lo = 0, hi = vi->n;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (vi->leaves[mid]->number < x)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

static leaf_t *find_leaf(const value_index_t *vi, uint64_t number) {
  size_t i = lower_bound(vi, number);
  return (i < vi->n && vi->leaves[i]->number == number) ? vi->leaves[i] : NULL;
}

static void leaf_free(leaf_t *l) {
  if (!l) return;
  value_filter_destroy(l->filter);
  free(l->path);
  free(l->crcs);
  free(l);
}

static size_t chunk_count(size_t nwords) {
  return (nwords + CHUNK_WORDS - 1) / CHUNK_WORDS;
}

/* CRC32C of chunk c of a filter's words as they are stored (little-endian). */
static uint32_t chunk_crc(const uint64_t *words, size_t nwords, size_t c) {
  uint8_t buf[CHUNK_BYTES];
  size_t first = c * CHUNK_WORDS, n = nwords - first < CHUNK_WORDS ? nwords - first : CHUNK_WORDS;
  for (size_t i = 0; i < n; i++) encode_fixed64(buf + 8 * i, words[first + i]);
  return crc32c_value(buf, 8 * n);
}

/* ---- Reading leaves from disk ------------------------------------------------------- */

/* Returns an fd for leaf l (slot index in *slot, or -1 if the fd is not cached and the
   caller must close it), or -1 on failure. Called with no lock but the index's read or
   write lock held. */
static int fd_get(value_index_t *vi, const leaf_t *l, int *slot) {
  *slot = -1;
  pthread_mutex_lock(&vi->fd_mu);
  int victim = -1;
  for (int i = 0; i < FD_CACHE_SLOTS; i++) {
    fd_slot_t *s = &vi->fds[i];
    if (s->fd >= 0 && s->number == l->number) {
      s->refs++;
      s->last_use = ++vi->clock;
      *slot = i;
      pthread_mutex_unlock(&vi->fd_mu);
      return s->fd;
    }
    if (s->refs != 0) continue;
    if (victim < 0 || s->fd < 0) {
      if (victim < 0 || vi->fds[victim].fd >= 0) victim = i;
    } else if (vi->fds[victim].fd >= 0 && s->last_use < vi->fds[victim].last_use) {
      victim = i;
    }
  }
  pthread_mutex_unlock(&vi->fd_mu);
  if (!l->path) return -1;
  int fd = open(l->path, O_RDONLY | O_CLOEXEC);
  if (fd < 0 || victim < 0) return fd;
  pthread_mutex_lock(&vi->fd_mu);
  fd_slot_t *s = &vi->fds[victim];
  if (s->refs == 0) {
    if (s->fd >= 0) close(s->fd);
    s->fd = fd;
    s->number = l->number;
    s->refs = 1;
    s->last_use = ++vi->clock;
    *slot = victim;
  }
  pthread_mutex_unlock(&vi->fd_mu);
  return fd;
}

static void fd_put(value_index_t *vi, int fd, int slot) {
  if (slot < 0) {
    if (fd >= 0) close(fd);
    return;
  }
  pthread_mutex_lock(&vi->fd_mu);
  vi->fds[slot].refs--;
  pthread_mutex_unlock(&vi->fd_mu);
}

/* Closes the cached fd of `number` (the leaf is going away). Write lock held. */
static void fd_forget(value_index_t *vi, uint64_t number) {
  pthread_mutex_lock(&vi->fd_mu);
  for (int i = 0; i < FD_CACHE_SLOTS; i++) {
    fd_slot_t *s = &vi->fds[i];
    if (s->fd >= 0 && s->number == number && s->refs == 0) {
      close(s->fd);
      s->fd = -1;
    }
  }
  pthread_mutex_unlock(&vi->fd_mu);
}

static int pread_full(int fd, void *buf, size_t n, uint64_t off) {
  uint8_t *p = buf;
  while (n > 0) {
    ssize_t r = pread(fd, p, n, (off_t)off);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return -1;
    p += r;
    n -= (size_t)r;
    off += (uint64_t)r;
  }
  return 0;
}

static int leaf_load(value_index_t *vi, leaf_t *l, uint64_t *out);

/* 1 maybe, 0 no. Any failure is "maybe". */
static int leaf_probe(value_index_t *vi, leaf_t *l, const probe_t *p) {
  if (l->filter) return bits_test_probe(l->filter->words, p);
  if (vi->adding_words && vi->adding_number == l->number)
    return bits_test_probe(vi->adding_words, p);
  if (vi->params.leaves_on_disk == BFH_LEAVES_ON_DISK_WHOLE) { /* the paper's cost */
    uint64_t *words = malloc(vi->nwords * 8);
    if (!words) return 1;
    (void)leaf_load(vi, l, words); /* a failed read leaves all ones: maybe */
    int maybe = bits_test_probe(words, p);
    free(words);
    return maybe;
  }
  uint64_t off = l->offset;
  if (!l->crcs) return 1;
  int slot, fd = fd_get(vi, l, &slot);
  if (fd < 0) return 1;
  int maybe = 1;
  uint8_t chunk[CHUNK_BYTES];
  size_t have = SIZE_MAX; /* the chunk in `chunk`, verified */
  for (uint32_t i = 0; i < p->k; i++) {
    uint64_t pos = p->pos[i], w = pos >> 6;
    size_t c = (size_t)(w / CHUNK_WORDS);
    if (c != have) {
      size_t first = c * CHUNK_WORDS;
      size_t n = vi->nwords - first < CHUNK_WORDS ? vi->nwords - first : CHUNK_WORDS;
      if (pread_full(fd, chunk, 8 * n, off + value_filter_word_offset(first)) != 0 ||
          crc32c_value(chunk, 8 * n) != l->crcs[c])
        break; /* unreadable or damaged: maybe */
      have = c;
    }
    if (!((decode_fixed64(chunk + 8 * (w % CHUNK_WORDS)) >> (pos & 63)) & 1)) {
      maybe = 0;
      break;
    }
  }
  fd_put(vi, fd, slot);
  return maybe;
}

/* 1 if the stored words in buf (nwords of them, little-endian) match l's chunk CRCs. */
static int chunks_match(const leaf_t *l, const uint8_t *buf, size_t nwords) {
  if (!l->crcs) return 0;
  for (size_t c = 0; c < chunk_count(nwords); c++) {
    size_t first = c * CHUNK_WORDS;
    size_t n = nwords - first < CHUNK_WORDS ? nwords - first : CHUNK_WORDS;
    if (crc32c_value(buf + 8 * first, 8 * n) != l->crcs[c]) return 0;
  }
  return 1;
}

/* Copies leaf l's words into out. On a read failure, out is all ones over m bits (an
   ancestor then says maybe everywhere: slower, never wrong) and the error is returned. */
static int leaf_load(value_index_t *vi, leaf_t *l, uint64_t *out) {
  if (l->filter) {
    memcpy(out, l->filter->words, vi->nwords * 8);
    return BFH_OK;
  }
  if (vi->adding_words && vi->adding_number == l->number) {
    memcpy(out, vi->adding_words, vi->nwords * 8);
    return BFH_OK;
  }
  int rc = BFH_E_IO;
  int slot, fd = fd_get(vi, l, &slot);
  if (fd >= 0) {
    uint8_t *buf = malloc(vi->nwords * 8);
    if (buf && pread_full(fd, buf, vi->nwords * 8, l->offset + value_filter_word_offset(0)) == 0 &&
        chunks_match(l, buf, vi->nwords)) {
      for (size_t i = 0; i < vi->nwords; i++) out[i] = decode_fixed64(buf + 8 * i);
      rc = BFH_OK;
    }
    free(buf);
    fd_put(vi, fd, slot);
  }
  if (rc != BFH_OK) {
    memset(out, 0xff, vi->nwords * 8);
    if (vi->params.m % 64) out[vi->nwords - 1] = (1ull << (vi->params.m % 64)) - 1;
  }
  return rc;
}

static int source_probe(void *ctx, uint64_t id, const probe_t *p) {
  value_index_t *vi = ctx;
  leaf_t *l = find_leaf(vi, id);
  return l ? leaf_probe(vi, l, p) : 1;
}

static int source_load(void *ctx, uint64_t id, uint64_t *out) {
  value_index_t *vi = ctx;
  leaf_t *l = find_leaf(vi, id);
  if (!l) {
    if (vi->adding_words && vi->adding_number == id) {
      memcpy(out, vi->adding_words, vi->nwords * 8);
      return BFH_OK;
    }
    return BFH_E_INVALID;
  }
  /* A failed read leaves all ones in out: the ancestors over-approximate, which keeps the
     no-false-negative guarantee, so the hierarchy may go on. */
  (void)leaf_load(vi, l, out);
  return BFH_OK;
}

/* ---- Lifecycle ---------------------------------------------------------------------- */

value_index_t *value_index_create(const value_index_params_t *p, err_t *err) {
  if (!p || p->m < VALUE_FILTER_MIN_BITS || p->k < 1 || p->k > BFH_MAX_HASHES || p->order < 2) {
    err_set(err, BFH_E_INVALID,
            "value index: bad parameters (m %llu must be >= %d, k %u in 1..%d, order %u >= 2)",
            p ? (unsigned long long)p->m : 0ull, VALUE_FILTER_MIN_BITS, p ? p->k : 0,
            BFH_MAX_HASHES, p ? p->order : 0);
    return NULL;
  }
  value_index_t *vi = calloc(1, sizeof *vi);
  if (!vi) goto nomem;
  vi->params = *p;
  vi->nwords = bits_words(p->m);
  pthread_rwlock_init(&vi->lock, NULL);
  pthread_mutex_init(&vi->fd_mu, NULL);
  pthread_mutex_init(&vi->pend_mu, NULL);
  id_map_init(&vi->members);
  for (int i = 0; i < FD_CACHE_SLOTS; i++) vi->fds[i].fd = -1;
  hierarchy_leaf_source_t src = {source_probe, source_load, vi};
  vi->hier = hierarchy_create(p->order, p->m, p->placement, &src);
  vi->sliced = sliced_create(p->m);
  vi->blocks = block_index_create();
  if (!vi->hier || !vi->sliced || !vi->blocks) {
    value_index_destroy(vi);
    goto nomem;
  }
  return vi;
nomem:
  err_set(err, BFH_E_NOMEM, "value index: out of memory (m %llu bits)", (unsigned long long)p->m);
  return NULL;
}

void value_index_destroy(value_index_t *vi) {
  if (!vi) return;
  hierarchy_destroy(vi->hier);
  sliced_destroy(vi->sliced);
  block_index_destroy(vi->blocks);
  for (size_t i = 0; i < vi->n; i++) leaf_free(vi->leaves[i]);
  free(vi->leaves);
  for (size_t i = 0; i < vi->npend; i++) leaf_free(vi->pend[i].leaf);
  free(vi->pend);
  id_map_release(&vi->members);
  pthread_mutex_destroy(&vi->pend_mu);
  for (int i = 0; i < FD_CACHE_SLOTS; i++)
    if (vi->fds[i].fd >= 0) close(vi->fds[i].fd);
  pthread_rwlock_destroy(&vi->lock);
  pthread_mutex_destroy(&vi->fd_mu);
  free(vi);
}

const value_index_params_t *value_index_params(const value_index_t *vi) {
  return &vi->params;
}

/* ---- Adding and removing leaves ----------------------------------------------------- */

static int check_filter(const value_index_t *vi, uint64_t number, const value_filter_t *f,
                        err_t *err) {
  if (!f)
    return err_set(err, BFH_E_INVALID, "value index: table %llu: no filter",
                   (unsigned long long)number);
  if (f->m != vi->params.m || f->k != vi->params.k || f->seed != vi->params.seed)
    return err_set(err, BFH_E_INVALID,
                   "value index: table %llu: filter has m=%llu k=%u seed=%llu, the database "
                   "uses m=%llu k=%u seed=%llu",
                   (unsigned long long)number, (unsigned long long)f->m, f->k,
                   (unsigned long long)f->seed, (unsigned long long)vi->params.m, vi->params.k,
                   (unsigned long long)vi->params.seed);
  return BFH_OK;
}

/* Inserts leaf l (filter in memory) into the array, the hierarchy and the sliced index,
   then drops the words if leaves live on disk. Write lock held. On failure nothing
   changed and l is not freed. */
static int add_locked(value_index_t *vi, leaf_t *l, int in_sliced, err_t *err) {
  if (vi->n == vi->cap) {
    size_t c = vi->cap ? vi->cap * 2 : 64;
    leaf_t **a = realloc(vi->leaves, c * sizeof *a);
    if (!a) return err_set(err, BFH_E_NOMEM, "value index: out of memory");
    vi->leaves = a;
    vi->cap = c;
  }
  const uint64_t *words = l->filter->words;
  int rc = in_sliced ? BFH_OK : sliced_add(vi->sliced, l->number, words);
  if (rc != BFH_OK)
    return err_set(err, rc, "value index: table %llu: sliced index add failed",
                   (unsigned long long)l->number);
  vi->adding_words = words;
  vi->adding_number = l->number;
  rc = hierarchy_insert(vi->hier, l->number, vi->params.leaves_on_disk ? NULL : words);
  vi->adding_words = NULL;
  if (rc != BFH_OK) {
    sliced_remove(vi->sliced, l->number);
    return err_set(err, rc, "value index: table %llu: hierarchy insert failed",
                   (unsigned long long)l->number);
  }
  size_t i = lower_bound(vi, l->number);
  memmove(vi->leaves + i + 1, vi->leaves + i, (vi->n - i) * sizeof *vi->leaves);
  vi->leaves[i] = l;
  vi->n++;
  vi->popcount_sum += l->popcount;
  if (vi->params.leaves_on_disk) {
    value_filter_destroy(l->filter);
    l->filter = NULL;
  }
  return BFH_OK;
}

/* A new leaf for filter (not owned until the call succeeds); on_disk: its words will be
   read back from path, so their chunk CRCs are taken now. NULL on no memory. */
static leaf_t *leaf_new(uint64_t number, value_filter_t *filter, const char *path, uint64_t offset,
                        int on_disk) {
  leaf_t *l = calloc(1, sizeof *l);
  if (!l) return NULL;
  size_t nchunks = chunk_count(filter->nwords);
  if ((path && !(l->path = strdup(path))) ||
      (on_disk && !(l->crcs = malloc(nchunks * sizeof *l->crcs)))) {
    free(l->path);
    free(l);
    return NULL;
  }
  for (size_t c = 0; on_disk && c < nchunks; c++)
    l->crcs[c] = chunk_crc(filter->words, filter->nwords, c);
  l->number = number;
  l->filter = filter;
  l->offset = offset;
  l->popcount = value_filter_popcount(filter);
  return l;
}

/* ---- The pending queue -------------------------------------------------------------- */

/* Queues an add (l != NULL) or a remove. pend_mu held. BFH_OK or BFH_E_NOMEM. */
static int pend_push(value_index_t *vi, uint64_t number, leaf_t *l) {
  if (vi->npend == vi->cappend) {
    size_t c = vi->cappend ? 2 * vi->cappend : 64;
    pending_op_t *a = realloc(vi->pend, c * sizeof *a);
    if (!a) return BFH_E_NOMEM;
    vi->pend = a;
    vi->cappend = c;
  }
  vi->pend[vi->npend].number = number;
  vi->pend[vi->npend].leaf = l;
  vi->npend++;
  atomic_store(&vi->npend_atomic, vi->npend);
  return BFH_OK;
}

/* Inserts the m new leaves into the array, the sliced index (64 at a time by transposes)
   and the hierarchy. Write lock held. A leaf that cannot go in is freed (its table is then
   simply not indexed: searches scan it). Returns how many went in. */
static size_t insert_leaves_locked(value_index_t *vi, leaf_t **ls, size_t m, int *first_rc,
                                   err_t *err) {
  size_t done = 0;
  int batched = 0;
  if (m > 1) {
    uint64_t *ids = malloc(m * sizeof *ids);
    const uint64_t **ws = malloc(m * sizeof *ws);
    if (ids && ws) {
      for (size_t i = 0; i < m; i++) {
        ids[i] = ls[i]->number;
        ws[i] = ls[i]->filter->words;
      }
      batched = sliced_reserve(vi->sliced, sliced_leaf_count(vi->sliced) + m) == BFH_OK &&
                sliced_add_batch(vi->sliced, ids, ws, m) == BFH_OK;
    }
    free(ids);
    free(ws);
  }
  for (size_t i = 0; i < m; i++) {
    int rc = add_locked(vi, ls[i], batched, err);
    if (rc != BFH_OK) {
      if (*first_rc == BFH_OK) *first_rc = rc;
      leaf_free(ls[i]);
      continue;
    }
    done++;
  }
  return done;
}

/* Removes leaf `number` from the array, the hierarchy and the sliced index. Write lock
   held. Returns the leaf (caller frees) or NULL if absent. */
static leaf_t *remove_locked(value_index_t *vi, uint64_t number) {
  size_t i = lower_bound(vi, number);
  if (i >= vi->n || vi->leaves[i]->number != number) return NULL;
  leaf_t *l = vi->leaves[i];
  /* Out of the array first: the hierarchy's load() must not see it while the ancestors are
     recomputed. */
  memmove(vi->leaves + i, vi->leaves + i + 1, (vi->n - i - 1) * sizeof *vi->leaves);
  vi->n--;
  vi->popcount_sum -= l->popcount;
  hierarchy_remove(vi->hier, number);
  sliced_remove_filter(vi->sliced, number, l->filter ? l->filter->words : NULL);
  fd_forget(vi, number);
  return l;
}

/* Applies the queued adds and removes: removes first, then the adds as one batch (numbers
   are never reused, and an add whose table was removed before being applied was dropped from
   the queue, so the order between different tables does not matter). */
static int apply_pending(value_index_t *vi, err_t *err) {
  if (atomic_load(&vi->npend_atomic) == 0) return BFH_OK;
  pthread_rwlock_wrlock(&vi->lock);
  pthread_mutex_lock(&vi->pend_mu);
  pending_op_t *ops = vi->pend;
  size_t n = vi->npend;
  vi->pend = NULL;
  vi->npend = vi->cappend = 0;
  atomic_store(&vi->npend_atomic, 0);
  pthread_mutex_unlock(&vi->pend_mu);
  int rc = BFH_OK;
  size_t m = 0;
  hierarchy_batch_begin(vi->hier); /* the paper's tree: one rebuild for all of them */
  for (size_t i = 0; i < n; i++) {
    if (ops[i].leaf) {
      ops[m++] = ops[i]; /* compact the adds to the front */
      continue;
    }
    leaf_free(remove_locked(vi, ops[i].number));
  }
  leaf_t **ls = malloc((m ? m : 1) * sizeof *ls);
  if (ls) {
    for (size_t i = 0; i < m; i++) ls[i] = ops[i].leaf;
    insert_leaves_locked(vi, ls, m, &rc, err);
    free(ls);
  } else {
    for (size_t i = 0; i < m; i++) insert_leaves_locked(vi, &ops[i].leaf, 1, &rc, err);
  }
  /* A failed rebuild leaves a correct tree in B+-tree shape; the next batch retries. */
  (void)hierarchy_batch_end(vi->hier);
  pthread_rwlock_unlock(&vi->lock);
  free(ops);
  return rc;
}

/* Validates and queues one add; takes ownership of filter. */
static int queue_add(value_index_t *vi, uint64_t number, value_filter_t *filter, const char *path,
                     uint64_t offset, err_t *err) {
  int rc = check_filter(vi, number, filter, err);
  if (rc == BFH_OK && vi->params.leaves_on_disk && !path)
    rc = err_set(err, BFH_E_INVALID, "value index: table %llu: leaves on disk need a path",
                 (unsigned long long)number);
  if (rc != BFH_OK) {
    value_filter_destroy(filter);
    return rc;
  }
  leaf_t *l = leaf_new(number, filter, path, offset, vi->params.leaves_on_disk);
  if (!l) {
    value_filter_destroy(filter);
    return err_set(err, BFH_E_NOMEM, "value index: out of memory");
  }
  pthread_mutex_lock(&vi->pend_mu);
  if (id_map_get(&vi->members, number, NULL)) {
    rc = err_set(err, BFH_E_INVALID, "value index: table %llu is already indexed",
                 (unsigned long long)number);
  } else if (id_map_reserve(&vi->members, id_map_count(&vi->members) + 1) != BFH_OK ||
             pend_push(vi, number, l) != BFH_OK) {
    rc = err_set(err, BFH_E_NOMEM, "value index: out of memory");
  } else {
    id_map_put(&vi->members, number, 1); /* cannot fail after the reserve */
  }
  pthread_mutex_unlock(&vi->pend_mu);
  if (rc != BFH_OK) leaf_free(l);
  return rc;
}

int value_index_add(value_index_t *vi, uint64_t number, value_filter_t *filter, const char *path,
                    uint64_t offset, err_t *err) {
  return queue_add(vi, number, filter, path, offset, err);
}

int value_index_add_batch(value_index_t *vi, size_t n, const uint64_t *numbers,
                          value_filter_t **filters, const char *const *paths,
                          const uint64_t *offsets, size_t *added, err_t *err) {
  int first = BFH_OK;
  size_t queued = 0;
  for (size_t i = 0; i < n; i++) {
    err_t e;
    int rc = queue_add(vi, numbers[i], filters[i], paths ? paths[i] : NULL,
                       offsets ? offsets[i] : 0, &e);
    if (rc == BFH_OK) {
      queued++;
    } else if (first == BFH_OK) {
      first = rc;
      if (err) *err = e;
    }
  }
  err_t e;
  int rc = apply_pending(vi, &e);
  if (rc != BFH_OK && first == BFH_OK) {
    first = rc;
    if (err) *err = e;
  }
  if (added) *added = queued;
  return first;
}

int value_index_remove(value_index_t *vi, uint64_t number) {
  leaf_t *drop = NULL;
  int rc = BFH_OK;
  pthread_mutex_lock(&vi->pend_mu);
  if (!id_map_get(&vi->members, number, NULL)) {
    rc = BFH_NOT_FOUND;
  } else {
    /* A table removed before its add was applied costs the index nothing. */
    for (size_t i = vi->npend; i-- > 0;) {
      if (vi->pend[i].number == number && vi->pend[i].leaf) {
        drop = vi->pend[i].leaf;
        memmove(vi->pend + i, vi->pend + i + 1, (vi->npend - i - 1) * sizeof *vi->pend);
        vi->npend--;
        atomic_store(&vi->npend_atomic, vi->npend);
        break;
      }
    }
    if (!drop && pend_push(vi, number, NULL) != BFH_OK) {
      /* No memory to queue it: remove it now (the caller is not a search). */
      pthread_mutex_unlock(&vi->pend_mu);
      pthread_rwlock_wrlock(&vi->lock);
      drop = remove_locked(vi, number);
      pthread_rwlock_unlock(&vi->lock);
      pthread_mutex_lock(&vi->pend_mu);
    }
    id_map_del(&vi->members, number);
  }
  pthread_mutex_unlock(&vi->pend_mu);
  leaf_free(drop);
  if (rc == BFH_OK) block_index_remove(vi->blocks, number);
  return rc;
}

block_index_t *value_index_blocks(value_index_t *vi) {
  return vi->blocks;
}

int value_index_contains(value_index_t *vi, uint64_t number) {
  pthread_mutex_lock(&vi->pend_mu);
  int c = id_map_get(&vi->members, number, NULL);
  pthread_mutex_unlock(&vi->pend_mu);
  return c;
}

size_t value_index_leaf_count(value_index_t *vi) {
  pthread_mutex_lock(&vi->pend_mu);
  size_t n = id_map_count(&vi->members);
  pthread_mutex_unlock(&vi->pend_mu);
  return n;
}

int value_index_apply(value_index_t *vi, err_t *err) {
  return apply_pending(vi, err);
}

/* ---- Queries ------------------------------------------------------------------------ */

void value_index_probe(const value_index_t *vi, const void *val, size_t len, probe_t *out) {
  probe_init(out, bfh_value_hash(val, len, vi->params.seed), vi->params.m, vi->params.k);
}

int value_index_by_leaves(value_index_t *vi, const probe_t *p, u64vec_t *out, probe_stats_t *st) {
  for (size_t i = 0; i < vi->n; i++) {
    if (st) st->leaf_probes++;
    if (leaf_probe(vi, vi->leaves[i], p)) {
      if (st) st->leaf_positives++;
      int rc = u64vec_push(out, vi->leaves[i]->number);
      if (rc != BFH_OK) return rc;
    }
  }
  return BFH_OK;
}

int value_index_by_hierarchy(value_index_t *vi, const probe_t *p, u64vec_t *out,
                             probe_stats_t *st) {
  return hierarchy_search(vi->hier, p, out, st);
}

int value_index_by_sliced(value_index_t *vi, const probe_t *p, u64vec_t *out, probe_stats_t *st) {
  return sliced_search(vi->sliced, p, out, st);
}

static int candidates_locked(value_index_t *vi, value_index_by_fn by, const probe_t *p,
                             u64vec_t *out, probe_stats_t *st, err_t *err) {
  int rc = by(vi, p, out, st);
  if (rc != BFH_OK) return err_set(err, rc, "value index: candidate search failed");
  return BFH_OK;
}

int value_index_candidates(value_index_t *vi, value_index_by_fn by, const probe_t *p, u64vec_t *out,
                           probe_stats_t *st, err_t *err) {
  apply_pending(vi, NULL);
  pthread_rwlock_rdlock(&vi->lock);
  int rc = candidates_locked(vi, by, p, out, st, err);
  pthread_rwlock_unlock(&vi->lock);
  return rc;
}

int value_index_select(value_index_t *vi, value_index_by_fn by, const probe_t *p,
                       const uint64_t *numbers, size_t n, uint8_t *scan, probe_stats_t *st,
                       err_t *err) {
  u64vec_t cand;
  u64vec_init(&cand);
  apply_pending(vi, NULL);
  pthread_rwlock_rdlock(&vi->lock);
  int rc = candidates_locked(vi, by, p, &cand, st, err);
  if (rc == BFH_OK) {
    u64vec_sort(&cand);
    for (size_t i = 0; i < n; i++)
      scan[i] = u64_sorted_contains(cand.v, cand.n, numbers[i]) || !find_leaf(vi, numbers[i]);
  }
  pthread_rwlock_unlock(&vi->lock);
  u64vec_release(&cand);
  return rc;
}

void value_index_get_stats(value_index_t *vi, value_index_stats_t *st) {
  memset(st, 0, sizeof *st);
  apply_pending(vi, NULL);
  pthread_rwlock_rdlock(&vi->lock);
  st->leaves = vi->n;
  uint64_t per_leaf = value_filter_serialized_size(vi->params.m);
  for (size_t i = 0; i < vi->n; i++) {
    if (vi->leaves[i]->filter) st->leaf_bytes += vi->nwords * 8;
    if (vi->leaves[i]->crcs) st->leaf_bytes += chunk_count(vi->nwords) * 4;
  }
  st->leaf_bytes_total = vi->n * per_leaf;
  st->internal_bytes = hierarchy_size_in_bytes(vi->hier);
  st->sliced_bytes = sliced_size_in_bytes(vi->sliced);
  st->height = hierarchy_height(vi->hier);
  st->mean_fill = vi->n ? (double)vi->popcount_sum / ((double)vi->n * (double)vi->params.m) : 0;
  pthread_rwlock_unlock(&vi->lock);
}

int value_index_validate(value_index_t *vi, err_t *err) {
  apply_pending(vi, NULL);
  pthread_rwlock_rdlock(&vi->lock);
  int rc = hierarchy_validate(vi->hier, err);
  if (rc == BFH_OK &&
      (hierarchy_leaf_count(vi->hier) != vi->n || sliced_leaf_count(vi->sliced) != vi->n))
    rc = err_set(err, BFH_E_CORRUPT, "value index: %zu leaves, hierarchy %zu, sliced %zu", vi->n,
                 hierarchy_leaf_count(vi->hier), sliced_leaf_count(vi->sliced));
  for (size_t i = 0; rc == BFH_OK && i < vi->n; i++) {
    uint64_t id = vi->leaves[i]->number;
    if (!hierarchy_contains(vi->hier, id) || !sliced_contains(vi->sliced, id))
      rc = err_set(err, BFH_E_CORRUPT, "value index: table %llu missing from %s",
                   (unsigned long long)id,
                   hierarchy_contains(vi->hier, id) ? "the sliced index" : "the hierarchy");
    if (i && vi->leaves[i - 1]->number >= id)
      rc = err_set(err, BFH_E_CORRUPT, "value index: leaf array out of order at %zu", i);
  }
  pthread_rwlock_unlock(&vi->lock);
  return rc;
}

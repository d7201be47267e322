/* The Cuckoo Index; see cuckoo_index.h. */
#include "index/cuckoo_index.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "bfh.h"

#define INLINE_BIT 0x80000000u
#define MAX_LOAD 0.90
#define FIRST_BUCKETS 1024u

/* The next bucket count: x1.25 (rounded up to 64), so that the load stays in [0.72, 0.9]
   (x2 would leave it at 0.45 after a growth). Any count works: the second bucket is
   (H(f) - i) mod nb. */
static uint32_t grown(uint32_t nb) {
  return (nb + nb / 4 + 63) & ~63u;
}

typedef struct idset {
  uint32_t n, cap;
  uint32_t *ids; /* sorted table ids; owned */
} idset_t;

typedef struct table_rec {
  uint64_t number;
  uint32_t *keys; /* sorted, distinct; owned; NULL: a free record */
  size_t nkeys;
  int used;
} table_rec_t;

struct cuckoo_index {
  pthread_mutex_t mu;
  uint64_t seed;
  uint32_t nb;   /* buckets */
  uint16_t *fp;  /* nb * CUCKOO_SLOTS fingerprints; 0: an empty slot */
  uint32_t *ref; /* nb * CUCKOO_SLOTS references */
  uint64_t entries;
  idset_t *sets; /* out-of-line sets, by index */
  uint32_t nsets, capsets;
  uint32_t *free_sets; /* indexes of free sets */
  uint32_t nfree_sets;
  table_rec_t *recs; /* by table id */
  uint32_t nrecs, caprecs;
  uint32_t *by_number; /* ids of the used records, in ascending number */
  uint32_t ntables;
  uint64_t rebuilds, keys_added, kick_state;
  uint64_t synced; /* cuckoo_index_set_synced's digest */
};

/* ---- Hashing ----------------------------------------------------------------------------- */

static inline uint32_t mix32(uint32_t x) {
  x ^= x >> 16;
  x *= 0x7feb352du;
  x ^= x >> 15;
  x *= 0x846ca68bu;
  x ^= x >> 16;
  return x;
}

static inline uint32_t reduce(uint32_t x, uint32_t n) {
  return (uint32_t)(((uint64_t)x * n) >> 32);
}

static inline uint16_t key_fp(uint32_t key) {
  uint16_t f = (uint16_t)key;
  return f ? f : 1;
}

static inline uint32_t key_bucket(uint32_t key, uint32_t nb) {
  return reduce(mix32(key ^ 0x9e3779b9u), nb);
}

/* The other bucket of an entry with fingerprint f in bucket i: (H(f) - i) mod nb. */
static inline uint32_t alt_bucket(uint16_t f, uint32_t i, uint32_t nb) {
  uint32_t h = reduce(mix32((uint32_t)f * 0x5bd1e995u), nb);
  return h >= i ? h - i : h + nb - i;
}

/* ---- Table sets ------------------------------------------------------------------------------ */

static int set_new(cuckoo_index_t *ci, uint32_t a, uint32_t b, uint32_t *out) {
  uint32_t s;
  if (ci->nfree_sets) {
    s = ci->free_sets[--ci->nfree_sets];
  } else {
    if (ci->nsets == ci->capsets) {
      uint32_t cap = ci->capsets ? ci->capsets * 2 : 64;
      idset_t *v = realloc(ci->sets, cap * sizeof *v);
      if (!v) return BFH_E_NOMEM;
      uint32_t *f = realloc(ci->free_sets, cap * sizeof *f);
      if (!f) {
        ci->sets = v;
        return BFH_E_NOMEM;
      }
      ci->sets = v;
      ci->free_sets = f;
      ci->capsets = cap;
    }
    s = ci->nsets++;
  }
  idset_t *set = &ci->sets[s];
  if (!(set->ids = malloc(4 * sizeof *set->ids))) {
    ci->free_sets[ci->nfree_sets++] = s;
    set->n = set->cap = 0;
    return BFH_E_NOMEM;
  }
  set->cap = 4;
  set->n = 2;
  set->ids[0] = a < b ? a : b;
  set->ids[1] = a < b ? b : a;
  *out = s;
  return BFH_OK;
}

static void set_free(cuckoo_index_t *ci, uint32_t s) {
  free(ci->sets[s].ids);
  ci->sets[s].ids = NULL;
  ci->sets[s].n = ci->sets[s].cap = 0;
  ci->free_sets[ci->nfree_sets++] = s;
}

/* Adds table id t to the set of reference *r (converting an inline one). */
static int ref_add(cuckoo_index_t *ci, uint32_t *r, uint32_t t) {
  if (*r & INLINE_BIT) {
    uint32_t old = *r & ~INLINE_BIT;
    if (old == t) return BFH_OK;
    uint32_t s;
    int rc = set_new(ci, old, t, &s);
    if (rc != BFH_OK) return rc;
    *r = s;
    return BFH_OK;
  }
  idset_t *set = &ci->sets[*r];
  uint32_t lo = 0, hi = set->n;
  while (lo < hi) {
    uint32_t mid = (lo + hi) / 2;
    if (set->ids[mid] < t)
      lo = mid + 1;
    else
      hi = mid;
  }
  if (lo < set->n && set->ids[lo] == t) return BFH_OK;
  if (set->n == set->cap) {
    uint32_t cap = set->cap * 2;
    uint32_t *ids = realloc(set->ids, cap * sizeof *ids);
    if (!ids) return BFH_E_NOMEM;
    set->ids = ids;
    set->cap = cap;
  }
  memmove(set->ids + lo + 1, set->ids + lo, (set->n - lo) * sizeof *set->ids);
  set->ids[lo] = t;
  set->n++;
  return BFH_OK;
}

/* Removes t from the set of reference *r; returns 1 if t was in it. *empty: nothing is left. */
static int ref_remove(cuckoo_index_t *ci, uint32_t *r, uint32_t t, int *empty) {
  *empty = 0;
  if (*r & INLINE_BIT) {
    if ((*r & ~INLINE_BIT) != t) return 0;
    *empty = 1;
    return 1;
  }
  idset_t *set = &ci->sets[*r];
  uint32_t i = 0;
  while (i < set->n && set->ids[i] < t) i++;
  if (i == set->n || set->ids[i] != t) return 0;
  memmove(set->ids + i, set->ids + i + 1, (set->n - i - 1) * sizeof *set->ids);
  set->n--;
  if (set->n == 1) { /* back inline */
    uint32_t last = set->ids[0];
    set_free(ci, *r);
    *r = INLINE_BIT | last;
  }
  return 1;
}

static void ref_release(cuckoo_index_t *ci, uint32_t r) {
  if (!(r & INLINE_BIT)) set_free(ci, r);
}

/* ---- The cuckoo table ------------------------------------------------------------------------ */

static int alloc_table(cuckoo_index_t *ci, uint32_t nb) {
  uint16_t *fp = calloc((size_t)nb * CUCKOO_SLOTS, sizeof *fp);
  uint32_t *ref = calloc((size_t)nb * CUCKOO_SLOTS, sizeof *ref);
  if (!fp || !ref) {
    free(fp);
    free(ref);
    return BFH_E_NOMEM;
  }
  free(ci->fp);
  free(ci->ref);
  ci->fp = fp;
  ci->ref = ref;
  ci->nb = nb;
  ci->entries = 0;
  return BFH_OK;
}

/* The slot of the entry (f, pair of bucket i), or -1. */
static long find_slot(const cuckoo_index_t *ci, uint16_t f, uint32_t i) {
  uint32_t j = alt_bucket(f, i, ci->nb);
  for (int s = 0; s < CUCKOO_SLOTS; s++)
    if (ci->fp[(size_t)i * CUCKOO_SLOTS + s] == f) return (long)i * CUCKOO_SLOTS + s;
  for (int s = 0; s < CUCKOO_SLOTS; s++)
    if (ci->fp[(size_t)j * CUCKOO_SLOTS + s] == f) return (long)j * CUCKOO_SLOTS + s;
  return -1;
}

static long empty_slot(const cuckoo_index_t *ci, uint32_t i) {
  for (int s = 0; s < CUCKOO_SLOTS; s++)
    if (!ci->fp[(size_t)i * CUCKOO_SLOTS + s]) return (long)i * CUCKOO_SLOTS + s;
  return -1;
}

static uint32_t next_random(cuckoo_index_t *ci) {
  ci->kick_state = ci->kick_state * 6364136223846793005ull + 1442695040888963407ull;
  return (uint32_t)(ci->kick_state >> 33);
}

/* Places a new entry (f, r) whose first bucket is i. 1: placed; 0: the kick chain failed
   (the homeless entry is lost: the caller rebuilds from the keys). */
static int place(cuckoo_index_t *ci, uint16_t f, uint32_t r, uint32_t i) {
  long s = empty_slot(ci, i);
  if (s < 0) {
    i = alt_bucket(f, i, ci->nb);
    s = empty_slot(ci, i);
  }
  for (int kick = 0; s < 0 && kick < CUCKOO_MAX_KICKS; kick++) {
    long victim = (long)i * CUCKOO_SLOTS + (next_random(ci) % CUCKOO_SLOTS);
    uint16_t vf = ci->fp[victim];
    uint32_t vr = ci->ref[victim];
    ci->fp[victim] = f;
    ci->ref[victim] = r;
    f = vf;
    r = vr;
    i = alt_bucket(f, i, ci->nb);
    s = empty_slot(ci, i);
  }
  if (s < 0) {
    ref_release(ci, r);
    return 0;
  }
  ci->fp[s] = f;
  ci->ref[s] = r;
  ci->entries++;
  return 1;
}

/* Adds table id t for key. 1 placed, 0 the table must be rebuilt, < 0 no memory. */
static int insert_key(cuckoo_index_t *ci, uint32_t key, uint32_t t) {
  uint16_t f = key_fp(key);
  uint32_t i = key_bucket(key, ci->nb);
  long s = find_slot(ci, f, i);
  if (s >= 0) return ref_add(ci, &ci->ref[s], t) == BFH_OK ? 1 : BFH_E_NOMEM;
  return place(ci, f, INLINE_BIT | t, i);
}

static void clear_entries(cuckoo_index_t *ci) {
  for (uint32_t s = 0; s < ci->nsets; s++) {
    free(ci->sets[s].ids);
    ci->sets[s].ids = NULL;
  }
  ci->nsets = 0;
  ci->nfree_sets = 0;
}

/* Builds the table again with at least nb buckets from every table's keys, doubling until
   every key is placed. */
static int rebuild(cuckoo_index_t *ci, uint32_t nb) {
  for (;;) {
    ci->rebuilds++;
    clear_entries(ci);
    if (alloc_table(ci, nb) != BFH_OK) return BFH_E_NOMEM;
    int ok = 1;
    for (uint32_t t = 0; ok && t < ci->nrecs; t++) {
      if (!ci->recs[t].used) continue;
      for (size_t k = 0; k < ci->recs[t].nkeys; k++) {
        int r = insert_key(ci, ci->recs[t].keys[k], t);
        if (r < 0) return BFH_E_NOMEM;
        if (r == 0) {
          ok = 0;
          break;
        }
      }
    }
    if (ok) return BFH_OK;
    nb = grown(nb);
  }
}

static uint32_t buckets_for(uint64_t entries, double load) {
  uint64_t nb = (uint64_t)((double)entries / (CUCKOO_SLOTS * load)) + 1;
  if (nb < FIRST_BUCKETS) nb = FIRST_BUCKETS;
  if (nb > (1ull << 30)) nb = 1ull << 30;
  return ((uint32_t)nb + 63) & ~63u;
}

int cuckoo_index_reserve(cuckoo_index_t *ci, uint64_t entries) {
  if ((double)entries <= MAX_LOAD * CUCKOO_SLOTS * ci->nb) return BFH_OK;
  return rebuild(ci, buckets_for(entries, 0.8));
}

int cuckoo_index_fit(cuckoo_index_t *ci) {
  uint32_t want = buckets_for(ci->entries, 0.8);
  if ((double)ci->entries >= 0.5 * CUCKOO_SLOTS * ci->nb || want >= ci->nb) return BFH_OK;
  return rebuild(ci, want);
}

/* ---- Tables ---------------------------------------------------------------------------------- */

static long find_table(const cuckoo_index_t *ci, uint64_t number, uint32_t *pos) {
  uint32_t lo = 0, hi = ci->ntables;
  while (lo < hi) {
    uint32_t mid = (lo + hi) / 2;
    if (ci->recs[ci->by_number[mid]].number < number)
      lo = mid + 1;
    else
      hi = mid;
  }
  if (pos) *pos = lo;
  if (lo < ci->ntables && ci->recs[ci->by_number[lo]].number == number) return ci->by_number[lo];
  return -1;
}

static int cmp_u32(const void *a, const void *b) {
  uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
  return (x > y) - (x < y);
}

cuckoo_index_t *cuckoo_index_create(uint64_t seed) {
  cuckoo_index_t *ci = calloc(1, sizeof *ci);
  if (!ci) return NULL;
  ci->seed = seed;
  ci->kick_state = 0x6375636b6f6f31ull; /* fixed: the same inserts give the same table */
  if (alloc_table(ci, FIRST_BUCKETS) != BFH_OK) {
    free(ci);
    return NULL;
  }
  pthread_mutex_init(&ci->mu, NULL);
  return ci;
}

void cuckoo_index_destroy(cuckoo_index_t *ci) {
  if (!ci) return;
  clear_entries(ci);
  free(ci->sets);
  free(ci->free_sets);
  for (uint32_t t = 0; t < ci->nrecs; t++) free(ci->recs[t].keys);
  free(ci->recs);
  free(ci->by_number);
  free(ci->fp);
  free(ci->ref);
  pthread_mutex_destroy(&ci->mu);
  free(ci);
}

uint64_t cuckoo_index_seed(const cuckoo_index_t *ci) {
  return ci->seed;
}

uint64_t cuckoo_index_synced(const cuckoo_index_t *ci) {
  return ci->synced;
}

void cuckoo_index_set_synced(cuckoo_index_t *ci, uint64_t digest) {
  ci->synced = digest;
}

void cuckoo_index_lock(cuckoo_index_t *ci) {
  pthread_mutex_lock(&ci->mu);
}

void cuckoo_index_unlock(cuckoo_index_t *ci) {
  pthread_mutex_unlock(&ci->mu);
}

int cuckoo_index_contains(const cuckoo_index_t *ci, uint64_t number) {
  return find_table(ci, number, NULL) >= 0;
}

int cuckoo_index_add_table(cuckoo_index_t *ci, uint64_t number, uint32_t *keys, size_t n,
                           err_t *err) {
  uint32_t pos;
  if (find_table(ci, number, &pos) >= 0)
    return err_set(err, BFH_E_INVALID, "cuckoo index: table %llu is already in",
                   (unsigned long long)number);
  ci->keys_added += n;
  if (n) qsort(keys, n, sizeof *keys, cmp_u32);
  size_t d = 0;
  for (size_t i = 0; i < n; i++)
    if (d == 0 || keys[i] != keys[d - 1]) keys[d++] = keys[i];
  /* A record of its own, a copy of the keys. */
  uint32_t t = 0;
  while (t < ci->nrecs && ci->recs[t].used) t++;
  if (t == ci->caprecs) {
    uint32_t cap = ci->caprecs ? ci->caprecs * 2 : 16;
    table_rec_t *r = realloc(ci->recs, cap * sizeof *r);
    if (!r) return err_set(err, BFH_E_NOMEM, "cuckoo index: out of memory");
    ci->recs = r;
    uint32_t *b = realloc(ci->by_number, cap * sizeof *b);
    if (!b) return err_set(err, BFH_E_NOMEM, "cuckoo index: out of memory");
    ci->by_number = b;
    ci->caprecs = cap;
  }
  uint32_t *copy = malloc((d ? d : 1) * sizeof *copy);
  if (!copy) return err_set(err, BFH_E_NOMEM, "cuckoo index: out of memory");
  if (d) memcpy(copy, keys, d * sizeof *copy);
  if (t == ci->nrecs) ci->nrecs++;
  ci->recs[t] = (table_rec_t){number, copy, d, 1};
  memmove(ci->by_number + pos + 1, ci->by_number + pos, (ci->ntables - pos) * sizeof(uint32_t));
  ci->by_number[pos] = t;
  ci->ntables++;
  /* Its keys into the cuckoo table; a full table or a failed kick chain rebuilds it bigger. */
  int rc = BFH_OK;
  for (size_t k = 0; k < d; k++) {
    if ((double)(ci->entries + 1) > MAX_LOAD * CUCKOO_SLOTS * ci->nb) {
      rc = rebuild(ci, grown(ci->nb)); /* takes this table's keys too */
      break;
    }
    int r = insert_key(ci, copy[k], t);
    if (r < 0) {
      rc = BFH_E_NOMEM;
      break;
    }
    if (r == 0) {
      rc = rebuild(ci, grown(ci->nb));
      break;
    }
  }
  if (rc != BFH_OK) {
    /* The table's keys may be partly in: take it out again (what is in is removed). */
    cuckoo_index_remove_table(ci, number);
    return err_set(err, rc, "cuckoo index: out of memory adding table %llu",
                   (unsigned long long)number);
  }
  return BFH_OK;
}

int cuckoo_index_remove_table(cuckoo_index_t *ci, uint64_t number) {
  uint32_t pos;
  long id = find_table(ci, number, &pos);
  if (id < 0) return BFH_NOT_FOUND;
  uint32_t t = (uint32_t)id;
  table_rec_t *rec = &ci->recs[t];
  for (size_t k = 0; k < rec->nkeys; k++) {
    uint16_t f = key_fp(rec->keys[k]);
    uint32_t i = key_bucket(rec->keys[k], ci->nb);
    long s = find_slot(ci, f, i);
    if (s < 0) continue; /* an earlier key of this table shared the entry and emptied it */
    int empty;
    ref_remove(ci, &ci->ref[s], t, &empty);
    if (empty) {
      ci->fp[s] = 0;
      ci->ref[s] = 0;
      ci->entries--;
    }
  }
  free(rec->keys);
  rec->keys = NULL;
  rec->nkeys = 0;
  rec->used = 0;
  memmove(ci->by_number + pos, ci->by_number + pos + 1, (ci->ntables - pos - 1) * sizeof(uint32_t));
  ci->ntables--;
  return BFH_OK;
}

size_t cuckoo_index_retain(cuckoo_index_t *ci, const uint64_t *live, size_t n) {
  size_t removed = 0;
  for (uint32_t i = 0; i < ci->ntables;) {
    uint64_t number = ci->recs[ci->by_number[i]].number;
    if (u64_sorted_contains(live, n, number)) {
      i++;
      continue;
    }
    cuckoo_index_remove_table(ci, number); /* by_number[i] is the next table now */
    removed++;
  }
  return removed;
}

static int push_ref(const cuckoo_index_t *ci, uint32_t r, u64vec_t *out) {
  if (r & INLINE_BIT) return u64vec_push(out, ci->recs[r & ~INLINE_BIT].number);
  const idset_t *set = &ci->sets[r];
  for (uint32_t i = 0; i < set->n; i++)
    if (u64vec_push(out, ci->recs[set->ids[i]].number) != BFH_OK) return BFH_E_NOMEM;
  return BFH_OK;
}

int cuckoo_index_lookup(const cuckoo_index_t *ci, uint32_t key, u64vec_t *out,
                        uint64_t *slots_checked) {
  uint16_t f = key_fp(key);
  uint32_t b[2];
  b[0] = key_bucket(key, ci->nb);
  b[1] = alt_bucket(f, b[0], ci->nb);
  for (int x = 0; x < 2; x++) {
    for (int s = 0; s < CUCKOO_SLOTS; s++) {
      size_t at = (size_t)b[x] * CUCKOO_SLOTS + s;
      if (ci->fp[at] == f && push_ref(ci, ci->ref[at], out) != BFH_OK) return BFH_E_NOMEM;
    }
    if (b[1] == b[0]) break;
  }
  if (slots_checked) *slots_checked = (b[1] == b[0] ? 1 : 2) * CUCKOO_SLOTS;
  return BFH_OK;
}

int cuckoo_index_tables(const cuckoo_index_t *ci, u64vec_t *out) {
  for (uint32_t i = 0; i < ci->ntables; i++)
    if (u64vec_push(out, ci->recs[ci->by_number[i]].number) != BFH_OK) return BFH_E_NOMEM;
  return BFH_OK;
}

void cuckoo_index_get_stats(const cuckoo_index_t *ci, cuckoo_index_stats_t *st) {
  memset(st, 0, sizeof *st);
  st->tables = ci->ntables;
  st->entries = ci->entries;
  st->buckets = ci->nb;
  st->table_bytes = (uint64_t)ci->nb * CUCKOO_SLOTS * (sizeof(uint16_t) + sizeof(uint32_t));
  for (uint32_t s = 0; s < ci->nsets; s++) {
    if (!ci->sets[s].ids) continue;
    st->sets++;
    st->set_bytes += (uint64_t)ci->sets[s].cap * sizeof(uint32_t);
  }
  st->set_bytes += (uint64_t)ci->capsets * (sizeof(idset_t) + sizeof(uint32_t));
  for (uint32_t t = 0; t < ci->nrecs; t++)
    if (ci->recs[t].used) st->key_bytes += (ci->recs[t].nkeys ? ci->recs[t].nkeys : 1) * 4;
  st->rebuilds = ci->rebuilds;
  st->keys_added = ci->keys_added;
  st->bytes = sizeof *ci + st->table_bytes + st->set_bytes + st->key_bytes +
              (uint64_t)ci->caprecs * (sizeof(table_rec_t) + sizeof(uint32_t));
}

int cuckoo_index_validate(const cuckoo_index_t *ci, err_t *err) {
  uint64_t entries = 0;
  for (size_t at = 0; at < (size_t)ci->nb * CUCKOO_SLOTS; at++) {
    uint16_t f = ci->fp[at];
    if (!f) continue;
    entries++;
    uint32_t r = ci->ref[at];
    if (r & INLINE_BIT) {
      uint32_t t = r & ~INLINE_BIT;
      if (t >= ci->nrecs || !ci->recs[t].used)
        return err_set(err, BFH_E_CORRUPT, "cuckoo index: slot %zu names a free table", at);
    } else if (r >= ci->nsets || ci->sets[r].n < 2) {
      return err_set(err, BFH_E_CORRUPT, "cuckoo index: slot %zu has a bad set", at);
    }
  }
  if (entries != ci->entries)
    return err_set(err, BFH_E_CORRUPT, "cuckoo index: %llu entries counted, %llu held",
                   (unsigned long long)ci->entries, (unsigned long long)entries);
  u64vec_t out;
  u64vec_init(&out);
  for (uint32_t t = 0; t < ci->nrecs; t++) {
    if (!ci->recs[t].used) continue;
    for (size_t k = 0; k < ci->recs[t].nkeys; k++) {
      out.n = 0;
      if (cuckoo_index_lookup(ci, ci->recs[t].keys[k], &out, NULL) != BFH_OK) {
        u64vec_release(&out);
        return err_set(err, BFH_E_NOMEM, "cuckoo index: out of memory");
      }
      if (!u64_sorted_contains(out.v, out.n, ci->recs[t].number)) {
        int found = 0;
        for (size_t i = 0; i < out.n; i++) found |= out.v[i] == ci->recs[t].number;
        if (!found) {
          u64vec_release(&out);
          return err_set(err, BFH_E_CORRUPT, "cuckoo index: table %llu key %08x not found",
                         (unsigned long long)ci->recs[t].number, ci->recs[t].keys[k]);
        }
      }
    }
  }
  u64vec_release(&out);
  return BFH_OK;
}

/* What the files of the value index share (internal to index/).
 *
 *   value_index.c         the index's life and its maintenance: adds and removes queued,
 *                         then applied to the leaf array, the hierarchy and the bit-sliced
 *                         index in one batch; validation
 *   value_index_leaves.c  the leaf store: the leaves sorted by table number, and leaves on
 *                         disk (their words read back through the env, CRC-checked in
 *                         chunks); the hierarchy's leaf source; a lean leaf folded as its
 *                         words stream back from its file
 *   value_index_query.c   the probes: candidates by leaves, hierarchy or bit-sliced index,
 *                         a search's selection, statistics
 *
 * Locks: `lock` (rwlock) guards the leaf array, the hierarchy and the sliced index (write for
 * apply, read for queries); pend_mu the queue and members; files.mu the open leaf files;
 * apply_mu makes the appliers of the queue take turns. Lock order: apply_mu, lock, pend_mu;
 * files.mu is taken alone.
 */
#ifndef BFH_LSM_HOOKS_INDEX_VALUE_INDEX_PRIVATE_H
#define BFH_LSM_HOOKS_INDEX_VALUE_INDEX_PRIVATE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "hierarchy/hierarchy.h"
#include "util/u64_map.h"
#include "hierarchy/sliced.h"
#include "index/value_index.h"
#include "util/env.h"

#define VALUE_INDEX_FILE_SLOTS 64
#define VALUE_INDEX_BITS_LIMIT ((uint64_t)1 << 24) /* a bitmap of 2 MiB at most */

typedef struct leaf {
  uint64_t number;
  value_filter_t *filter; /* owned; NULL when the leaf lives on disk */
  char *path;             /* owned; may be NULL for in-memory leaves */
  uint64_t offset;        /* of the serialized filter in path */
  uint64_t popcount;
  uint32_t *crcs; /* owned; leaves on disk: CRC32C of each chunk of words as stored */
  uint32_t group; /* lean: its fold group (value_index.groups) */
  uint64_t folded_popcount; /* lean: set bits of the folded leaf */
  /* Lean, made by value_index_leaf_make from a filter stored at path/offset: its words were
     dropped (filter NULL, crcs and popcount kept) and are read back, chunk by chunk, when it
     is folded (value_index_leaf_fold_stream). */
  int streamed;
  uint64_t held; /* bytes of its words counted in value_index.held (a whole leaf queued) */
} leaf_t;

/* A fold of an m-bit leaf to mf bits (1 <= mf <= m, any mf): leaf position p becomes
   floor(p mf / m), and folded bit j is the OR of the leaf bits p with floor(p mf / m) = j (a
   run of about m / mf consecutive bits). When mf divides m this is p / (m / mf), the power-of-
   two folds of old. Computed without a division: floor(x / m) = (x c) >> L for every
   x = p mf < 2^N, with L = max(64, N + ceil(log2 m)) and c = ceil(2^L / m) (Granlund and
   Montgomery's bound: the error x (c m - 2^L) / (m 2^L) < 2^(N - L) <= 1 / m never crosses an
   integer); c fits 64 bits while N <= 62, else (m above 2^31) a 128-bit division. */
typedef struct fold_map {
  uint64_t m, mf;
  uint64_t c;     /* 0: the slow path (division) */
  uint32_t shift; /* L - 64 */
} fold_map_t;

static inline void fold_map_init(fold_map_t *f, uint64_t m, uint64_t mf) {
  f->m = m;
  f->mf = mf;
  f->c = 0;
  f->shift = 0;
  uint64_t top = m - 1; /* the largest p */
  if (m < 2 || (mf && top > UINT64_MAX / mf)) return;
  uint64_t xmax = top * mf;
  uint32_t n = xmax ? 64u - (uint32_t)__builtin_clzll(xmax) : 1u;
  uint32_t lg = 64u - (uint32_t)__builtin_clzll(m - 1); /* ceil(log2 m), m >= 2 */
  if (n > 62) return;
  uint32_t l = n + lg < 64 ? 64 : n + lg;
  unsigned __int128 one = 1;
  f->c = (uint64_t)(((one << l) + m - 1) / m);
  f->shift = l - 64;
}

/* Leaf position p (< m) in the folded leaf. */
static inline uint64_t fold_map_pos(const fold_map_t *f, uint64_t p) {
  if (f->c) return (uint64_t)(((unsigned __int128)(p * f->mf) * f->c) >> 64 >> f->shift);
  return (uint64_t)((unsigned __int128)p * f->mf / f->m);
}

/* Lean: the leaves folded to mf bits, in one bit-sliced index of mf rows. */
typedef struct fold_group {
  uint64_t mf;
  fold_map_t map;
  sliced_t *sliced; /* owned */
  double fill_sum;  /* sum of its leaves' folded fill ratios */
  int small;        /* made for an index of a few tables: never grows (value_index.c) */
  size_t want;      /* the capacity a deferred plan made room for (apply_lean grows the group
                       to it beside the readers); 0: none */
} fold_group_t;

typedef struct pending_op {
  uint64_t number;
  leaf_t *leaf; /* owned; NULL for a remove */
} pending_op_t;

/* One open leaf file, kept for the next probe of that leaf. */
typedef struct leaf_file_slot {
  uint64_t number;
  env_rfile_t *f; /* NULL: free */
  int refs;       /* searches using the file right now */
  uint64_t last_use;
} leaf_file_slot_t;

/* The open files of leaves on disk, least recently used closed first. */
typedef struct leaf_files {
  env_t *io;          /* borrowed (value_index_params_t.io, or env_default()) */
  pthread_mutex_t mu; /* guards slots and clock */
  leaf_file_slot_t slots[VALUE_INDEX_FILE_SLOTS];
  uint64_t clock;
} leaf_files_t;

struct value_index {
  value_index_params_t params;
  size_t nwords;
  pthread_rwlock_t lock;
  leaf_t **leaves; /* sorted by number */
  uint64_t *numbers; /* their numbers, in the same order (a search looks them up: cap entries) */
  /* Bit x set iff table x has a leaf, for x < 64 nbits_words (a search asks this for every
     table of its view: a binary search per table mispredicts about half its branches).
     Numbers at or above VALUE_INDEX_BITS_LIMIT, or all after a failed growth
     (bits_broken), are looked up in numbers instead. */
  uint64_t *leaf_bits;
  size_t nbits_words;
  int bits_broken;
  size_t n, cap;
  uint64_t popcount_sum;
  hierarchy_t *hier;
  sliced_t *sliced;      /* the paper's layout; lean: unused (empty) */
  fold_group_t *groups;  /* lean: in creation order, an emptied one reused (owned) */
  size_t ngroups, capgroups;
  const uint64_t *adding_words; /* words of the leaf being added (for load()) */
  uint64_t adding_number;
  /* Adds and removes are queued (O(1) for the engine's flush and compaction threads) and
     applied in one batch before the next query, or by the engine's applier; tables that
     come and go between two applies never touch the hierarchy or the sliced index. */
  pthread_mutex_t pend_mu;
  /* One applier at a time: the lean layout applies a batch piece by piece, taking `lock`
     for each piece (apply_lean), and no other applier may plan into the room it made. */
  pthread_mutex_t apply_mu;
  /* Set by value_index_set_applier: an engine thread applies the queue after each change,
     and the queries no longer apply it themselves. */
  _Atomic int applier;
  pending_op_t *pend; /* in call order; leaf != NULL: add, NULL: remove */
  size_t npend, cappend;
  _Atomic size_t npend_atomic;
  /* A paper-placement tree whose rebuild a loader step put off (value_index_apply_step): the
     tree is correct in B+-tree shape, and the next value_index_apply rebuilds it. */
  _Atomic int unsettled;
  uint64_t add_batches; /* batches of adds applied (value_index_add_batch_count); write lock */
  u64_map_t members;    /* tables indexed or queued for adding, minus those queued for removal */
  block_index_t *blocks; /* the block filters under the leaves (owned) */
  /* The persisted index (persisted_index.h), attached at open; it answers for the tables it
     covers that have no leaf yet (owned; NULL: none). */
  struct persisted_index *pidx;
  uint64_t pidx_damaged; /* damage found in the files attached before (chunks and heads) */
  leaf_files_t files;
  /* Bytes of leaf words held outside the index's structures, now and at most (the loader's
     transient memory, value_index_stats_t.load_peak_bytes): whole leaves made or queued,
     and a fold's read buffer and folded leaf. */
  _Atomic uint64_t held, held_peak;
  /* Chunks of streamed leaves found damaged or unreadable when folded (folded as ones:
     maybe), and the message of the last one (file and offset). Write lock. */
  uint64_t fold_damaged;
  char fold_damage_msg[256];
};

/* The lean layout (value_index.h "Lean") is in use. */
static inline int value_index_lean(const value_index_t *vi) {
  return vi->params.lean_bits > 0 && !vi->params.leaves_on_disk;
}

/* p's positions in a leaf folded by f (fold_map_pos). */
static inline void value_index_fold_probe(const probe_t *p, const fold_map_t *f, probe_t *out) {
  out->k = p->k;
  out->hash = p->hash;
  for (uint32_t i = 0; i < p->k; i++) out->pos[i] = fold_map_pos(f, p->pos[i]);
}

void value_index_leaf_free(leaf_t *l); /* NULL allowed; what it held is not unheld */
/* Adds delta (may be negative) to vi->held and raises held_peak to it. */
void value_index_held_add(value_index_t *vi, int64_t delta);

/* ---- The leaf store (value_index_leaves.c) ---------------------------------------------- */

leaf_t *value_index_leaf_find(const value_index_t *vi, uint64_t number);
/* Whether table `number` has a leaf (leaf_bits, or numbers). Lock held. */
static inline int value_index_has_leaf(const value_index_t *vi, uint64_t number) {
  if (!vi->bits_broken) {
    if (number < (uint64_t)vi->nbits_words * 64)
      return (int)(vi->leaf_bits[number >> 6] >> (number & 63) & 1);
    if (number < VALUE_INDEX_BITS_LIMIT) return 0;
  }
  return value_index_leaf_find(vi, number) != NULL;
}

/* Index of the first leaf with number >= x. Lock held. */
size_t value_index_leaf_lower_bound(const value_index_t *vi, uint64_t x);
/* Sets (on) or clears leaf_bits' bit of number; write lock held. Growth that fails turns the
   bitmap off (bits_broken). */
void value_index_bits_set(value_index_t *vi, uint64_t number, int on);
/* The leaf of number, or NULL. Lock held. */
leaf_t *value_index_leaf_find(const value_index_t *vi, uint64_t number);
/* A new leaf for filter (not owned until the call succeeds); on_disk: its words will be
   read back from path, so their chunk CRCs are taken now. NULL on no memory. */
leaf_t *value_index_leaf_new(uint64_t number, value_filter_t *filter, const char *path,
                             uint64_t offset, int on_disk);
/* 1 maybe, 0 no. Any failure to read a leaf on disk is "maybe". Lock held. */
int value_index_leaf_probe(value_index_t *vi, leaf_t *l, const probe_t *p);
/* Bytes of memory a leaf holds: its words in memory, or its chunk CRCs. */
uint64_t value_index_leaf_mem_bytes(const value_index_t *vi, const leaf_t *l);
/* Folds n words of a leaf, words[0, n) being its words first .. first + n, into fw (map's
   mf bits). */
void value_index_fold_words(const fold_map_t *map, const uint64_t *words, size_t first, size_t n,
                            uint64_t *fw);
/* Folds a streamed leaf l (l->streamed) into fw (map's mf bits, zeroed by the caller): its
   words are read from l->path in VALUE_INDEX_FOLD_READ_BYTES at a time, each chunk checked
   against l->crcs. A chunk that cannot be read or does not match is folded as all ones (its
   positions say maybe: never a false negative) and counted in vi->fold_damaged, with its file
   and offset in fold_damage_msg. Write lock held. */
void value_index_leaf_fold_stream(value_index_t *vi, const leaf_t *l, const fold_map_t *map,
                                  uint64_t *fw);
/* The hierarchy's leaf source over vi's leaves (probe and load, from memory or disk). */
hierarchy_leaf_source_t value_index_leaf_source(value_index_t *vi);

/* The open leaf files: init (over io, borrowed; NULL: env_default(); fs zeroed), release
   (closes them all), and forget (closes the file of `number`, whose leaf is going away; write
   lock held). */
void value_index_files_init(leaf_files_t *fs, env_t *io);
void value_index_files_release(leaf_files_t *fs);
void value_index_files_forget(leaf_files_t *fs, uint64_t number);

#endif

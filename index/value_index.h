/* value_index_t: the leaves (one value filter per live table), the hierarchy over them and
 * the bit-sliced index, kept in step with the tables an engine adds and removes.
 *
 * Its only writer is index/index_sync.c, which calls value_index_add() when a table
 * with a value filter becomes live and value_index_remove() when it leaves the live version
 * (engines report those events to index_sync, never to the index). Both go through the
 * hierarchy's incremental insert/remove and the sliced index's add/remove; nothing is
 * rebuilt whole.
 *
 * Leaves in memory (default): the index owns each leaf's filter words. Leaves on disk (the
 * paper's setting): the index keeps only where the serialized filter lives (file path and
 * offset, filters/value_filter.h layout) and reads the k words a probe needs from there,
 * through params.io. A leaf that cannot be opened or read, or whose words do not match the
 * CRCs taken when it was added, says maybe: its table is scanned, never skipped.
 *
 * Thread-safe: adds/removes take a write lock; candidate queries a read lock.
 */
#ifndef BFH_LSM_HOOKS_VALUE_INDEX_H
#define BFH_LSM_HOOKS_VALUE_INDEX_H

#include <stddef.h>
#include <stdint.h>

#include "bfh.h"
#include "filters/hash.h"
#include "hierarchy/hierarchy.h"
#include "index/block_index.h"
#include "filters/value_filter.h"
#include "util/env.h"
#include "util/err.h"
#include "util/vec.h"

typedef struct value_index value_index_t;

typedef struct value_index_params {
  uint64_t m;         /* filter bits */
  uint32_t k;         /* hash functions */
  uint64_t seed;      /* value hash seed */
  uint32_t order;     /* hierarchy order d */
  int leaves_on_disk; /* a bfh_leaves: 0 in memory; 1 on disk, k words read per probe; 2 on
                         disk, the whole filter read per probe */
  hierarchy_placement_t placement;
  uint32_t block_bits; /* bits per value of the tables' block filters; 0: none built */
  env_t *io;           /* leaves on disk are opened and read through it (borrowed, must outlive the
                          index; NULL: env_default()): the database's, so that fault injection reaches
                          them */
  uint32_t lean_bits;  /* 0: the paper's layout (every leaf's m bits in memory, the hierarchy and
                          the bit-sliced index over them). > 0 (leaves in memory only): the lean
                          layout: each leaf folded to about lean_bits bits per value it holds,
                          kept once, in a bit-sliced index per fold (see "Lean" below) */
  int block_maps;      /* lean layout only: the tables' value-to-block maps
                          (value_block_map.h; the own engine's in its tables, the LevelDB
                          engines' in their filter cache files, leaf_cache.h) replace their
                          block filters in the block index */
} value_index_params_t;

/* Lean (doc/search.md "The lean index"): a leaf of m bits is folded to m' bits (any m' <= m),
   leaf bit p becoming bit floor(p m' / m) (value_index_private.h fold_map_*, a multiply and a
   shift): a value's position in the folded filter is its position in the leaf so reduced, so
   a folded leaf answers every probe its leaf would (never a false negative), with more false
   positives. A table asks for lean_bits x the values it holds (estimated from its popcount);
   tables of about one size share a fold group, one bit-sliced index, the only copy of their
   bits (value_index.c plan_folds_locked); LEAVES probes read their columns and HIERARCHY
   answers through the slices (no hierarchy is kept). */

/* Returns a new empty index, or NULL on bad parameters / no memory (message in err).
   Client calls value_index_destroy(). */
value_index_t *value_index_create(const value_index_params_t *p, err_t *err);
void value_index_destroy(value_index_t *vi); /* NULL allowed */
const value_index_params_t *value_index_params(const value_index_t *vi);

/* Adds the leaf of table `number`. Takes ownership of filter (whose m, k and seed must
   match the index: BFH_E_INVALID otherwise). path/offset say where the serialized filter
   is stored (needed when leaves are on disk; path may be NULL otherwise; copied).
   Adding a number already present replaces nothing and returns BFH_E_INVALID. */
int value_index_add(value_index_t *vi, uint64_t number, value_filter_t *filter, const char *path,
                    uint64_t offset, err_t *err);
/* A table's leaf made before it is added (index_sync's reads, with no lock of the index held),
   so that a loader holds one table's words at a time, not every table's until they enter the
   index together. In the lean layout, for a filter stored at path/offset (serialized,
   filters/value_filter.h layout, in a file that outlives the add), only its popcount and the
   CRCs of its words' chunks are kept: the words are dropped now and read back from the file,
   chunk by chunk, when the leaf is folded into its group (a chunk that does not match says
   maybe); the fold is the one the whole filter would give. Otherwise the leaf holds the
   filter. Takes ownership of filter; path copied. NULL, with a message in err, for a filter
   of other m, k or seed than the index's (BFH_E_INVALID) or no memory. */
typedef struct leaf value_index_leaf_t;
#define VALUE_INDEX_FOLD_READ_BYTES (64u << 10) /* a made leaf's words read at once to fold */
value_index_leaf_t *value_index_leaf_make(value_index_t *vi, uint64_t number,
                                          value_filter_t *filter, const char *path, uint64_t offset,
                                          err_t *err);
/* value_index_add of a made leaf (taking it, also on failure). */
int value_index_add_leaf(value_index_t *vi, value_index_leaf_t *l, err_t *err);
/* Frees a made leaf that will not be added (NULL allowed). */
void value_index_leaf_discard(value_index_t *vi, value_index_leaf_t *l);
/* Removes the leaf of table `number`, and its block filter; BFH_NOT_FOUND if absent. */
int value_index_remove(value_index_t *vi, uint64_t number);
/* The block filters under the leaves (owned by vi; index_sync puts them, searches probe). */
block_index_t *value_index_blocks(value_index_t *vi);
int value_index_contains(value_index_t *vi, uint64_t number);
size_t value_index_leaf_count(value_index_t *vi);

/* The probe of a value under the index's m, k and seed (hashes it: a search instead makes
   its probe from its one hash, probe_init with value_index_params). */
void value_index_probe(const value_index_t *vi, const void *val, size_t len, probe_t *out);

/* How the index finds the tables whose leaf says maybe for p: one function per structure,
   each appending their numbers to out and adding its filter tests to st (a leaf that cannot
   be read counts as maybe). The search providers (search/search_plan.c) name them.
   REQUIRES the index's read lock: pass them to value_index_candidates or value_index_select,
   never call them directly. */
typedef int (*value_index_by_fn)(value_index_t *vi, const probe_t *p, u64vec_t *out,
                                 probe_stats_t *st);
int value_index_by_leaves(value_index_t *vi, const probe_t *p, u64vec_t *out,
                          probe_stats_t *st); /* every leaf tested */
int value_index_by_hierarchy(value_index_t *vi, const probe_t *p, u64vec_t *out,
                             probe_stats_t *st); /* descends the hierarchy */
int value_index_by_sliced(value_index_t *vi, const probe_t *p, u64vec_t *out,
                          probe_stats_t *st); /* ANDs k rows of the bit-sliced index */

/* Appends to out the numbers of the tables whose leaf says maybe for p, found by `by`, and
   adds the filter tests to st. */
int value_index_candidates(value_index_t *vi, value_index_by_fn by, const probe_t *p, u64vec_t *out,
                           probe_stats_t *st, err_t *err);

typedef struct value_index_stats {
  uint64_t leaves;
  uint64_t leaf_bytes;       /* leaf filter words held in memory (on disk: a 4-byte CRC per
                                512 bytes of every leaf, see value_index_leaves.c) */
  uint64_t leaf_bytes_total; /* what all leaves take (in memory or on disk) */
  uint64_t internal_bytes;   /* hierarchy internal nodes */
  uint64_t sliced_bytes;     /* bit-sliced index */
  uint32_t height;           /* internal levels of the hierarchy */
  double mean_fill;          /* mean fill ratio of the leaves */
  double probe_fill;         /* mean fill ratio of what a probe tests (the folded leaves when
                                lean, else mean_fill): a probe's FPR is about probe_fill^k */
  uint64_t sliced_groups;    /* bit-sliced indexes (lean: one per fold; else 1) */
  uint64_t sliced_row_bits;  /* bits their rows hold: rows x capacity in slots, summed */
  uint64_t block_bytes;      /* the block filters and their map */
  uint64_t persisted;        /* tables without a leaf the persisted index answers for (its
                                directory and the chunks it read count in index_bytes) */
  /* The most bytes of leaf words it held at once outside its structures since it was made:
     whole leaves made or queued and not entered yet, a streamed leaf's read buffer and a
     folded leaf before it enters its group (an open's transient memory, beside index_bytes) */
  uint64_t load_peak_bytes;
  uint64_t fold_damaged;     /* chunks of streamed leaves damaged when folded (said maybe) */
  char fold_damage_msg[256]; /* the last one's table, file and offset ("" if none) */
  uint64_t index_bytes;      /* every byte the index holds in memory: leaves in memory (or
                                their CRCs), the leaf records and array, the hierarchy, the
                                slices, the block filters, the id maps and the pending queue */
} value_index_stats_t;
void value_index_get_stats(value_index_t *vi, value_index_stats_t *st);
/* What a search's planner needs of value_index_get_stats, without walking the leaves and
   the structures for their bytes: leaves, persisted, mean_fill and probe_fill (the rest 0). */
void value_index_get_plan_stats(value_index_t *vi, value_index_stats_t *st);

/* Adds n leaves at once (bulk load at open): the sliced index is filled by transposes.
   Takes ownership of every filters[i]; paths/offsets may be NULL (in-memory leaves). Leaves that
   are invalid or already present are skipped (freed); the first such error is returned, and *added
   (may be NULL) says how many went in. */
int value_index_add_batch(value_index_t *vi, size_t n, const uint64_t *numbers,
                          value_filter_t **filters, const char *const *paths,
                          const uint64_t *offsets, size_t *added, err_t *err);

/* The tables of a search, atomically: for each numbers[i] (the view's tables), scan[i] = 1 if
   its leaf says maybe for p by `by`, or if the index has no leaf for it (not indexed:
   always scanned, never skipped); 0 otherwise. Adds the filter tests to st. */
int value_index_select(value_index_t *vi, value_index_by_fn by, const probe_t *p,
                       const uint64_t *numbers, size_t n, uint8_t *scan, probe_stats_t *st,
                       err_t *err);

/* Adds and removes are queued (O(1), so that the engine's flush and compaction threads never
   wait on the hierarchy or the sliced index) and applied, incrementally, in one batch before
   the next query (candidates, select, stats, validate) or by this call. A table
   added and removed between two applies never touches the hierarchy or the sliced index.
   value_index_contains / value_index_leaf_count see queued operations at once. One applier
   at a time; the lean layout applies a batch piece by piece, each piece (a remove, an add, a
   fold group's growth or shrink) under the write lock alone, so that a query waits for one
   piece at most. */
int value_index_apply(value_index_t *vi, err_t *err);

/* on 1: an engine thread calls value_index_apply after each change it reports (the own
   engine's background thread, after each flush or compaction). With the lean layout,
   value_index_select and value_index_get_plan_stats then no longer apply the queue: a search
   neither pays for an apply nor waits for a whole one, and reads a table whose add still
   waits by its map, as one without a leaf. value_index_candidates, the statistics and
   validation still apply it first, and so does every query of the paper's layout (which
   settles its tree there, value_index_apply_step). */
void value_index_set_applier(value_index_t *vi, int on);

/* value_index_apply for a loader that adds the tables of an opened database a few at a time:
   with settle 0, a paper-placement hierarchy is left correct in B+-tree shape instead of
   being rebuilt whole (O(B) node ORs) after every step, which would make loading B tables
   cost O(B^2 / step); the last step passes settle 1, and any query before it (which calls
   value_index_apply) rebuilds it first, so a query always sees the paper's tree. */
int value_index_apply_step(value_index_t *vi, int settle, err_t *err);

/* How many adds are queued (not applied yet). */
size_t value_index_pending(value_index_t *vi);
/* The bytes the queued adds hold: the words of whole leaves, the chunk CRCs of leaves made to
   stream (value_index_leaf_make). */
uint64_t value_index_pending_bytes(value_index_t *vi);

/* Room in the bit-sliced index for `extra` more leaves at once (a loader that knows how many
   tables it will read), so that their adds do not re-lay its rows again and again. */
int value_index_reserve(value_index_t *vi, size_t extra, err_t *err);

/* hierarchy_rebuild_count of the index's hierarchy (tests: a loader rebuilds a paper tree once). */
uint64_t value_index_rebuild_count(value_index_t *vi);
/* sliced_relay_count of the bit-sliced index (tests: leaves added a few at a time re-lay its
   rows O(log n) times, not once per batch). */
uint64_t value_index_relay_count(value_index_t *vi);
/* How many batches of adds were applied (tests: the loader enters an open's leaves in one,
   so that the lean layout plans its fold groups over all of them). */
uint64_t value_index_add_batch_count(value_index_t *vi);

/* Attaches the persisted index x (persisted_index.h, taking ownership; bound to the live
   tables): value_index_select then asks it about the tables that have no leaf yet. NULL
   detaches (and frees) it: the loader does so once every leaf is in. */
struct persisted_index;
void value_index_attach_persisted(value_index_t *vi, struct persisted_index *x);
/* Does the attached persisted index answer for table `number`? */
int value_index_persisted_covers(value_index_t *vi, uint64_t number);
/* Chunks and map heads found damaged in the persisted indexes attached so far (a file with
   damage is worth writing again). */
uint64_t value_index_persisted_damaged(value_index_t *vi);
/* The attached persisted index no longer answers for table `number` (gone from the live set,
   or its number names another file now): 1 if it did. */
int value_index_persisted_unbind(value_index_t *vi, uint64_t number);
/* The tables the attached persisted index is bound to (0 without one): a search that selects
   one gets its map head from the file (persisted_index_select), so it is read by blocks. */
uint64_t value_index_persisted_bound(value_index_t *vi);

/* Checks the hierarchy (hierarchy_validate) and that the leaves, the hierarchy and the sliced
   index hold the same ids. BFH_OK or BFH_E_CORRUPT with the first violation. */
int value_index_validate(value_index_t *vi, err_t *err);

#endif

/* hierarchy_t: the Bloom filter hierarchy (the paper's Section III).
 *
 * A B+-tree-like tree of order d over leaf filters: every internal node holds the bitwise
 * OR of its children's filters; non-root internal nodes have d..2d children, the root
 * 2..2d (a hierarchy with one leaf has a root with that single child). All leaves are at
 * the same depth. A search tests the root's filter, descends only into children that say
 * maybe, and tests the leaves under those.
 *
 * Leaves are identified by a caller-chosen 64-bit id (a table's file number). The leaf
 * filter words are NOT copied: the caller keeps them (see hierarchy_insert), or keeps them
 * on disk and answers through hierarchy_leaf_source_t. Internal node filters are owned by
 * the hierarchy.
 *
 * Placement of a new leaf:
 *  - HIERARCHY_SIMILARITY: from the root, descend into the child whose filter is closest to
 *    the new leaf (smallest Hamming distance; ties go to the child with fewer leaves, then
 *    the leftmost), OR the leaf into every node on the way, split on overflow.
 *  - HIERARCHY_POSITIONAL: leaves in insertion (table) order, a new leaf is appended at the
 *    right edge, B+-tree rules as above. hierarchy_build() bulk-builds it
 *    bottom-up.
 *  - HIERARCHY_PAPER: the tree of the paper's authors' code, static: the leaves in id (table)
 *    order, grouped bottom-up into nodes of exactly d children (the last node of a level
 *    takes the rest, 1..d), level after level until one node remains. It has no B+-tree
 *    invariants: every insert or remove rebuilds it whole, O(B) node ORs (and a load of
 *    every non-resident leaf); hierarchy_batch_begin/end make a batch of changes cost one
 *    rebuild. Its node counts are ceil(B / d^i) per level.
 * Removing a leaf recomputes the OR of its ancestors and borrows from or merges with a
 * sibling on underflow. Both touch O(d log_d B) nodes; the B+-tree placements never
 * rebuild whole.
 *
 * Not thread-safe: the caller serializes writers against readers (searches only read).
 */
#ifndef BFH_HIERARCHY_HIERARCHY_H
#define BFH_HIERARCHY_HIERARCHY_H

#include <stddef.h>
#include <stdint.h>

#include "filters/hash.h"
#include "util/err.h"
#include "util/vec.h"

typedef struct hierarchy hierarchy_t;

/* The same numbers as bfh_placement in bfh.h (api/api.c checks it). */
typedef enum hierarchy_placement {
  HIERARCHY_SIMILARITY = 0,
  HIERARCHY_POSITIONAL = 1,
  HIERARCHY_PAPER = 2
} hierarchy_placement_t;

/* How to reach leaves whose words are not resident (inserted with words == NULL). */
typedef struct hierarchy_leaf_source {
  /* Tests leaf `id` against p: 1 maybe, 0 no. On error it must return 1 (never a false
     negative). */
  int (*probe)(void *ctx, uint64_t id, const probe_t *p);
  /* Copies leaf `id`'s words (ceil(m/64) words) into out; ST_OK or an error status. */
  int (*load)(void *ctx, uint64_t id, uint64_t *out);
  void *ctx;
} hierarchy_leaf_source_t;

/* Returns a new empty hierarchy of order `order` (2..4096) over m-bit filters, or NULL on bad
   arguments or no memory. source may be NULL if every leaf will be resident; it is copied.
   Client is responsible for calling hierarchy_destroy(). */
hierarchy_t *hierarchy_create(uint32_t order, uint64_t m, hierarchy_placement_t placement,
                              const hierarchy_leaf_source_t *source);
void hierarchy_destroy(hierarchy_t *h); /* NULL allowed */

/* Adds leaf `id` with filter `words` (ceil(m/64) words). words is borrowed: it must stay
   valid and unchanged until the leaf is removed or the hierarchy destroyed. words == NULL
   means "not resident": the source's load() is called to read it when needed.
   Returns ST_OK, ST_E_INVALID if id is already present, ST_E_NOMEM, or the source's
   error status (the hierarchy is then unchanged). */
int hierarchy_insert(hierarchy_t *h, uint64_t id, const uint64_t *words);
/* Removes leaf `id`. ST_NOT_FOUND if absent. */
int hierarchy_remove(hierarchy_t *h, uint64_t id);
/* Replaces the whole content by the n leaves in the given order, built bottom-up: with every
   node as full as the order allows (2d children; the last two of a level share the rest so
   that none has fewer than d), or, for HIERARCHY_PAPER, exactly d children (the last node of
   a level fewer). words[i] as in insert. On an error the hierarchy is unchanged. */
int hierarchy_build(hierarchy_t *h, const uint64_t *ids, const uint64_t *const *words, size_t n);

/* HIERARCHY_PAPER (no effect for the other placements): between begin and end, inserts and
   removes keep the tree correct with the positional B+-tree steps, and end rebuilds it once
   in the paper's shape. A search in between is correct (never a false negative); only the
   shape differs. hierarchy_batch_end returns ST_OK, or the rebuild's error (ST_E_NOMEM, a
   leaf load's status): the tree is then still correct, and the next change or batch end
   rebuilds it. */
void hierarchy_batch_begin(hierarchy_t *h);
int hierarchy_batch_end(hierarchy_t *h);
/* How many times a HIERARCHY_PAPER tree was rebuilt whole since its creation (a change outside
   a batch, a batch end, a retry after a failed rebuild); 0 for the other placements. */
uint64_t hierarchy_rebuild_count(const hierarchy_t *h);

/* Appends to out the ids of the leaves that say maybe for p, and adds to st (may be NULL)
   the internal nodes tested (internal_probes) and, of those, the ones that said maybe
   (internal_maybe: the root included; its children are then tested), the leaves tested and
   the leaves that said maybe. ST_OK or ST_E_NOMEM. */
int hierarchy_search(const hierarchy_t *h, const probe_t *p, u64vec_t *out, probe_stats_t *st);

/* Checks every invariant: child counts (root 2..2d, others d..2d; for HIERARCHY_PAPER exactly
   d, the last node of a level 1..d), equal leaf depth, parent links, each leaf id once, and
   every internal node == OR of its children (loading non-resident leaves). ST_OK, or
   ST_E_CORRUPT with the first violation in err. */
int hierarchy_validate(const hierarchy_t *h, err_t *err);

size_t hierarchy_leaf_count(const hierarchy_t *h);
int hierarchy_contains(const hierarchy_t *h, uint64_t id);
/* Levels of internal nodes, 0 = the level just above the leaves; 0 if empty. */
uint32_t hierarchy_height(const hierarchy_t *h);
uint32_t hierarchy_order(const hierarchy_t *h);

typedef struct hierarchy_level_stats {
  uint32_t level; /* 0 = parents of leaves */
  uint64_t nodes;
  uint64_t bytes; /* filter words and bookkeeping of the nodes of this level */
} hierarchy_level_stats_t;
/* Fills up to cap levels (bottom-up); returns the number of internal levels. */
uint32_t hierarchy_level_stats(const hierarchy_t *h, hierarchy_level_stats_t *out, uint32_t cap);
/* Memory owned by the hierarchy (internal nodes and bookkeeping; not the borrowed leaves). */
size_t hierarchy_size_in_bytes(const hierarchy_t *h);

/* FOR TESTS ONLY: flips bit pos of the leftmost internal node at `level` (0 = parents of
   leaves), so that a test can prove hierarchy_validate() detects a damaged node.
   ST_OK, or ST_E_INVALID if there is no such level or pos >= m. */
int hierarchy_debug_flip_bit(hierarchy_t *h, uint32_t level, uint64_t pos);

#endif

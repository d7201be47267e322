/* lsm_compaction_t: choosing and running one leveled compaction (LevelDB's policy).
 *
 * Pick: every version carries a score per level: L0 = files / 4, Li = bytes / max_bytes(i)
 * (L1 = level1_bytes, x10 per level). The level with the best score >= 1 is compacted:
 * for L0 every file overlapping the oldest chosen one; for Li the first file after the
 * level's compact pointer (round robin over the key space). The inputs of level+1 are the
 * files overlapping that range.
 *
 * Run: a merging iterator over the inputs yields internal keys newest first per user key.
 * Only the newest entry of each user key is kept (no reader needs older ones: readers pin
 * whole versions, and sequence numbers bound only the memtables). A deletion is dropped
 * too when no level below the output holds the key (the bottom for that key). Outputs are
 * split at table_bytes and where they would overlap more than 10 tables of level+2.
 *
 * Locking: pick REQUIRES the db mutex; run is called without it.
 */
#ifndef BFH_LSM_COMPACTION_H
#define BFH_LSM_COMPACTION_H

#include <stddef.h>
#include <stdint.h>

#include "util/env.h"
#include "lsm/table_builder.h"
#include "lsm/version_set.h"
#include "util/err.h"

/* A table written by a compaction or flush. */
typedef struct lsm_output {
  uint64_t number;
  uint64_t size;
  uint8_t *smallest, *largest; /* internal keys, owned */
  size_t smallest_len, largest_len;
  uint64_t max_seq; /* the largest sequence number of its entries */
} lsm_output_t;

typedef struct lsm_compaction {
  int level;              /* inputs[0] from level, inputs[1] and outputs at level + 1 */
  lsm_version_t *version; /* the input version (one reference held) */
  lsm_file_meta_t **inputs[2];
  size_t ninputs[2];
  lsm_file_meta_t **grandparents; /* level + 2 files overlapping the inputs */
  size_t ngrandparents;
  uint64_t max_output_bytes;
  uint64_t max_grandparent_overlap;
  /* run state */
  size_t grand_index;
  int seen_key;
  uint64_t overlapped_bytes;
  size_t level_ptrs[LSM_NUM_LEVELS];
  lsm_output_t *outputs;
  size_t noutputs;
  uint64_t bytes_read, bytes_written;
} lsm_compaction_t;

/* What run needs from the database. */
typedef struct lsm_compaction_env {
  env_t *io;
  const char *dir;
  table_builder_options_t topt;
  /* Returns a fresh file number, already protected from deletion (takes the db mutex). */
  uint64_t (*new_file)(void *arg);
  /* Called between entries: returns nonzero to abandon the run (shutdown). May also do
     urgent work itself (flush the immutable memtable). */
  int (*interrupt)(void *arg);
  /* Opens table `f` (borrowed reader: valid while the version holding f lives). */
  int (*open_table)(void *arg, lsm_file_meta_t *f, struct table **t, err_t *err);
  void *arg;
} lsm_compaction_env_t;

/* The compaction the current version needs, or NULL if none (or no memory). REQUIRES the
   db mutex. Client calls lsm_compaction_destroy (with the mutex held: it unrefs a
   version). */
lsm_compaction_t *lsm_compaction_pick(lsm_version_set_t *vs, uint64_t table_bytes);
void lsm_compaction_destroy(lsm_compaction_t *c); /* NULL allowed */

/* 1 if the single input file can move to level + 1 without rewriting it. */
int lsm_compaction_is_trivial_move(const lsm_compaction_t *c);

/* Merges the inputs into new tables (c->outputs). On failure the outputs written so far
   stay listed in c->outputs (their files exist; the caller reports and unlinks them).
   ST_E_CORRUPT names the damaged input file and offset. */
int lsm_compaction_run(lsm_compaction_t *c, const lsm_compaction_env_t *env, err_t *err);

/* Adds to edit: deletion of every input, the outputs at level + 1, the compact pointer.
   ST_OK or ST_E_NOMEM. */
int lsm_compaction_fill_edit(const lsm_compaction_t *c, lsm_version_edit_t *edit);

/* Frees the key copies of an output array. */
void lsm_outputs_free(lsm_output_t *o, size_t n);

#endif

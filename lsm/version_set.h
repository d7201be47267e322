/* lsm_version_t / lsm_version_set_t: the live table files per level, and the manifest.
 *
 * A version is an immutable list of table files per level (L0 ordered by file number,
 * levels >= 1 by smallest key, with disjoint key ranges). Readers pin a version with
 * lsm_version_ref() and release it with lsm_version_unref(); a table file is deleted only
 * when no live version lists it (lsm_version_set_live_files + db.c).
 *
 * The version set holds the current version, the next file number, the last sequence and
 * the log number, and records every change as a version edit appended to the manifest
 * (a log of CRC-checked records, lsm/log.h). CURRENT names the manifest and is switched
 * atomically: CURRENT.tmp is written and fsynced, renamed over CURRENT, and the directory
 * is fsynced. Every open writes a fresh manifest holding one snapshot edit.
 *
 * Locking: every function here REQUIRES the caller to hold the database mutex (passed to
 * lsm_version_set_log_and_apply, which releases it while it writes the manifest). Only one
 * thread at a time may call log_and_apply (the background thread, or open).
 */
#ifndef BFH_LSM_VERSION_SET_H
#define BFH_LSM_VERSION_SET_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "util/env.h"
#include "lsm/log.h"
#include "lsm/version_edit.h"
#include "util/err.h"
#include "util/vec.h"

typedef struct lsm_version_set lsm_version_set_t;

typedef struct lsm_version {
  lsm_version_set_t *vs;
  lsm_file_meta_t **files[LSM_NUM_LEVELS]; /* owned arrays; metas shared (refs) */
  size_t nfiles[LSM_NUM_LEVELS];
  int refs;
  double score;                    /* best compaction score (>= 1: a compaction is due) */
  int score_level;                 /* its level */
  struct lsm_version *prev, *next; /* the set's list of live versions */
} lsm_version_t;

/* Table files in v, over all levels. */
static inline size_t lsm_version_file_count(const lsm_version_t *v) {
  size_t n = 0;
  for (int l = 0; l < LSM_NUM_LEVELS; l++) n += v->nfiles[l];
  return n;
}

struct lsm_version_set {
  char *dir;
  env_t *io;
  uint64_t level1_bytes;
  uint64_t next_file;
  uint64_t last_sequence;
  uint64_t log_number; /* logs with a smaller number are no longer needed */
  uint64_t manifest_number;
  log_writer_t *manifest; /* NULL until the first manifest is written, or after a failure */
  lsm_version_t *current;
  lsm_version_t list;                       /* dummy head of the circular list of live versions */
  uint8_t *compact_pointer[LSM_NUM_LEVELS]; /* internal keys (owned) or NULL */
  size_t compact_pointer_len[LSM_NUM_LEVELS];
  u64vec_t obsolete; /* numbers of table files whose last version went away */
  /* What recovery saw (lsm_version_set_recover): */
  int has_closed_log;          /* the manifest's last record says the database closed cleanly */
  uint64_t closed_log;         /* ...leaving this log complete */
  uint64_t closed_log_size;    /* ...at this many bytes */
  uint64_t manifest_dropped;   /* bytes of a damaged or cut-short tail of the manifest */
  uint64_t manifest_valid_end; /* where its last good record ends */
};

/* Creates an empty set for dir (copied). level1_bytes: the L1 budget (x10 per level).
   Client calls lsm_version_set_destroy. ST_OK or ST_E_NOMEM. */
int lsm_version_set_create(const char *dir, env_t *io, uint64_t level1_bytes,
                           lsm_version_set_t **vs, err_t *err);
/* Releases the current version and frees vs (every other version must be released).
   NULL allowed. */
void lsm_version_set_destroy(lsm_version_set_t *vs);

/* Loads the state from CURRENT and the manifest it names. ST_E_CORRUPT with file and
   offset; ST_E_UNSUPPORTED for a manifest of another format version. A damaged or
   cut-short last record is left out and reported in manifest_dropped: whether that loses
   anything is for the caller to decide against the files on disk (db.c, check_files). */
int lsm_version_set_recover(lsm_version_set_t *vs, err_t *err);
/* Writes a new manifest holding a snapshot of the current state and points CURRENT at it;
   the old manifest becomes obsolete. Used at open (new database and after recovery). */
int lsm_version_set_write_snapshot(lsm_version_set_t *vs, err_t *err);

/* Reserves a fresh file number. */
static inline uint64_t lsm_version_set_new_file_number(lsm_version_set_t *vs) {
  return vs->next_file++;
}

/* Applies edit to the current version, appends it to the manifest (fsynced) and installs
   the result as current. mu is held on entry and on return; it is released during the
   manifest write. The edit gets the set's next file number and last sequence, and its log
   number if it has none. On failure the current version is unchanged. */
int lsm_version_set_log_and_apply(lsm_version_set_t *vs, lsm_version_edit_t *edit,
                                  pthread_mutex_t *mu, err_t *err);

void lsm_version_ref(lsm_version_t *v);
/* At refs 0 the version is freed; files no version lists any more go to vs->obsolete. */
void lsm_version_unref(lsm_version_t *v);

/* Sorted numbers of every table file listed by a live version. ST_OK or ST_E_NOMEM. */
int lsm_version_set_live_files(const lsm_version_set_t *vs, u64vec_t *out);

/* Bytes of the files of one level of v. */
uint64_t lsm_version_level_bytes(const lsm_version_t *v, int level);
/* Max bytes for a level >= 1 (level1_bytes * 10^(level-1)). */
uint64_t lsm_version_set_max_bytes(const lsm_version_set_t *vs, int level);

/* Index of the first file of level >= 1 whose largest user key >= ukey (nfiles if none):
   the only file of the level that may hold ukey. */
size_t lsm_version_find_file(const lsm_version_t *v, int level, const void *ukey, size_t ulen);
/* 1 if some file of `level` overlaps the user-key range [lo, hi] (NULL = unbounded). */
int lsm_version_overlaps(const lsm_version_t *v, int level, const void *lo, size_t lo_len,
                         const void *hi, size_t hi_len);
/* Appends to *out the files of `level` that overlap [lo, hi] (user keys; NULL =
   unbounded). For level 0 the range grows to cover every overlapping file (as LevelDB).
   out is a malloc'd array (caller frees); ST_OK or ST_E_NOMEM. */
int lsm_version_overlapping_files(const lsm_version_t *v, int level, const void *lo, size_t lo_len,
                                  const void *hi, size_t hi_len, lsm_file_meta_t ***out, size_t *n);

#endif

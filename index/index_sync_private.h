/* What the files of index_sync share (internal to index/).
 *
 *   index_sync.c       the records of the tables index_sync knows of (their states, epochs
 *                      and pins, the removal of gone tables), creation, the pushed reports
 *                      (the own engine's table-build hook: built, added, removed), statistics
 *   index_sync_list.c  the pulled reports: a live list (LevelDB), views pinned and unpinned
 *   index_sync_run.c   reading filters: the tables marked to be read get their leaf, from the
 *                      sidecar cache or the source's read_leaf; cache files written
 *
 * State: one record per table index_sync knows of, in an array sorted by number, under mu.
 * A record is
 *   built     not live yet: a new record, or one whose filter the hook handed over
 *   to read   live, no leaf yet: index_sync_run will read its filter
 *   indexed   live, its leaf is in the value index (or queued there)
 *   unreadable  live, its filter could not be read: no leaf, always scanned
 * and, once its table left the live version, gone (gone_epoch != 0) until no pinned view
 * may list it; then its leaf and cache file are removed and the record dropped.
 * An indexed record whose leaf came from a cache file without a block filter, while block
 * filters are on, also wants its block filter (wants_blocks): a run reads the table for it.
 *
 * Lock order: run_mu (one run at a time), then mu. The value index is only called for its
 * O(1) queue operations under mu; table and cache-file reads happen with mu released: a
 * run copies the numbers it must read, reads them, and takes mu again to add the leaves of
 * the tables that are still live.
 */
#ifndef BFH_LSM_HOOKS_INDEX_INDEX_SYNC_PRIVATE_H
#define BFH_LSM_HOOKS_INDEX_INDEX_SYNC_PRIVATE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "index/index_sync.h"
#include "util/vec.h"

enum { REC_BUILT, REC_TO_READ, REC_INDEXED, REC_UNREADABLE };

typedef struct sync_record {
  uint64_t number, size;
  uint64_t id; /* index_table_t.id of the file the record is for (0: not known) */
  int state;
  index_leaf_source_t source;
  uint64_t live_ns;       /* when it was reported live */
  uint64_t gone_epoch;    /* 0 while live (or built) */
  value_filter_t *filter; /* REC_BUILT: the hook's filter (owned) */
  block_filter_t *blocks; /* REC_BUILT: the hook's block filter (owned, may be NULL) */
  int wants_blocks;       /* REC_INDEXED: a cached leaf to upgrade with a block filter */
  int met;                /* REC_TO_READ: a search's view listed it, so searches read it whole
                             until it has a leaf: due at once, whatever its age */
  int early_blocks;       /* not indexed yet, its block filter in the block index already
                             (index_sync_load_blocks): removed with the record */
  int parked;             /* REC_TO_READ: its leaf was read by a parking run and waits here
                             (filter, path, offset, cache_buf) for the next run to add it */
  index_leaf_source_t parked_source;
  char *path; /* REC_BUILT: where it is stored (owned, may be NULL) */
  uint64_t offset;
  uint8_t *cache_buf; /* leaves in memory: its cache file's bytes, not written yet */
  size_t cache_len;
} record_t;

struct index_sync {
  value_index_t *index;            /* borrowed */
  const struct value_terms *terms; /* borrowed; NULL: the whole value (index_sync_set_terms) */
  index_source_t src;              /* cache_dir copied */
  pthread_mutex_t run_mu;
  pthread_mutex_t mu; /* guards everything below */
  record_t *recs;     /* sorted by number */
  size_t n, cap;
  uint64_t epoch;
  uint64_t *pins; /* epochs of the pinned views (unsorted, with repeats) */
  size_t npins, pins_cap;
  int gone_pending; /* some record is gone but not removed yet */
  int met_new;      /* a view met a table without a leaf since index_sync_take_met */
  index_sync_stats_t stats;
  /* The loader (index_sync_load.c): its thread and state, under load_mu. */
  pthread_mutex_t load_mu;
  pthread_cond_t load_cv;
  pthread_t loader;
  int loader_running, loader_started, loader_stop;
  int loader_kick;   /* a start while it ran: it looks for tables to read once more */
  int loader_armed;  /* started, its thread not yet (index_sync_loader_go) */
  uint64_t searches; /* index_sync_loader_searched calls: the thread waits for the second */
  int loader_rc;
  char loader_msg[ERR_MSG_BYTES];
  uint64_t loader_ns;
  /* 1 while nothing is left for a search to start or wait for: no loader armed or running,
     the last one succeeded and two searches have been counted. Written under load_mu
     (loader_settle), read without it: a search's calls into the loader take no lock then. */
  _Atomic int loader_settled;
};

/* The parking run (index_sync_load_blocks for a source without read_blocks): reads the
   tables marked to be read like index_sync_run, but their block filters enter the block
   index at once and their leaves wait in the records for the next run. */
int index_sync_run_parking(index_sync_t *s, err_t *err);
/* index_sync_run over at most limit due tables; *ran (may be NULL) gets how many. */
int index_sync_run_some(index_sync_t *s, int mode, uint64_t min_age_ns, size_t limit, size_t *ran,
                        err_t *err);

/* The path of table number's cache file in the source's cache_dir, in a string of its own.
   NULL only on no memory. Client frees it with free(). */
char *index_sync_cache_path(const index_sync_t *s, uint64_t number);

/* ---- Records (index_sync.c) -------------------------------------------------------------- */
/* Every one REQUIRES mu. */

/* The record of number, or NULL. */
record_t *index_sync_find(index_sync_t *s, uint64_t number);
/* The record of number, inserted (zeroed but for the number) if absent; NULL on no memory. */
record_t *index_sync_find_or_insert(index_sync_t *s, uint64_t number);
/* Frees what r owns (filters, path, cache bytes); the record stays. */
void index_sync_record_release(record_t *r);
/* Marks r gone at the current epoch. */
void index_sync_mark_gone(index_sync_t *s, record_t *r);
/* Drops the records of tables gone before every pinned view was taken, with their leaves;
   their cache files are appended to unlink (numbers) for the caller to delete outside mu
   (index_sync_unlink_caches, which REQUIRES no mu). */
void index_sync_remove_gone(index_sync_t *s, u64vec_t *unlink);
void index_sync_unlink_caches(index_sync_t *s, u64vec_t *numbers);
/* r's table is live: the built filter becomes its leaf, or it is marked to be read. */
void index_sync_make_live(index_sync_t *s, record_t *r, uint64_t size, uint64_t now);
/* Puts a table's block filter (taking it; NULL: none) into the block index. */
void index_sync_add_blocks(index_sync_t *s, uint64_t number, block_filter_t *blocks);

#endif

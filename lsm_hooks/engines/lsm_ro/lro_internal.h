/* What the files of the own engine's read-only row share (internal to
 * lsm_hooks/engines/lsm_ro/; the row's interface is lsm_readonly.h).
 *
 *   lsm_readonly.c  the design (the refresh's consistency argument, pins), open and close, the
 *                   refused writes, the filters' source, describe, the engine_ops table
 *   lro_version.c   the live tables as the MANIFEST's edits leave them
 *   lro_refresh.c   the refresh: CURRENT, the MANIFEST and the live logs read on from where
 *                   the last read stopped, then a new state
 *   lro_state.c     a refreshed state: its tables held open (pins) and its memtables' bounds
 *   lro_view.c      views, the scans of a search, point lookups
 *   lro_iter.c      ordered iteration over a state
 *
 * Locking: lro_t.mu guards the refresh's fields (REQUIRES mu below); states are immutable
 * and reference-counted, read without it. A log's memtable grows under mu only (its one
 * writer) and is read without a lock (memtable.h: one writer, lock-free readers); a state
 * reads only the entries up to the sequence number it was made with.
 */
#ifndef BFH_LSM_HOOKS_LSM_RO_INTERNAL_H
#define BFH_LSM_HOOKS_LSM_RO_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "lsm/memtable.h"
#include "lsm/table.h"
#include "lsm/version_edit.h"
#include "lsm_hooks/engines/dir_watch.h"
#include "lsm_hooks/engines/engine.h"
#include "lsm_hooks/engines/lsm_ro/lsm_readonly.h"
#include "util/env.h"
#include "util/err.h"

#define AGAIN 2 /* internal: the database changed under the read; start over */

/* ---- lro_version.c: the live tables -------------------------------------------------------- */

typedef struct lro_file {
  uint64_t number, size;
  int level;
  uint64_t max_seq;            /* lsm_file_meta_t's */
  uint8_t *smallest, *largest; /* internal keys (owned) */
  size_t smallest_len, largest_len;
} lro_file_t;

/* The version the MANIFEST's edits read so far describe. Caller-owned: zero it, then
   lro_version_release. */
typedef struct lro_version {
  lro_file_t *files; /* sorted by number */
  size_t n, cap;
  int has_log_number;
  uint64_t log_number;
} lro_version_t;

void lro_version_release(lro_version_t *v);
/* Applies edit e: its deletions, then its additions (copied). BFH_OK, BFH_E_NOMEM, or
   BFH_E_CORRUPT naming where (a deletion of a table the version does not hold, an addition of
   one it holds). */
int lro_version_apply(lro_version_t *v, const lsm_version_edit_t *e, const char *where, err_t *err);

/* ---- The engine ------------------------------------------------------------------------------ */

/* A log read so far: its entries in a memtable of its own, appended to by each refresh. */
typedef struct lro_log {
  uint64_t number;
  uint64_t resume;   /* where the next read starts (a record boundary) */
  uint64_t last_seq; /* the sequence number of the last entry read (0: none) */
  env_rfile_t *file; /* held open from its first read: which file was read (NULL before) */
  memtable_t *mem;   /* one reference; NULL before the first entry */
} lro_log_t;

/* A table file held open from the refresh that listed it until the last state listing it
   goes (an unlinked file stays readable through its descriptor); its reader (table.h: footer,
   index, meta index read and checked) is made from that file by the first read that needs
   it. Shared by the states that list the table. */
typedef struct lro_pin {
  atomic_int refs;
  pthread_mutex_t mu; /* guards the making of the reader */
  env_rfile_t *f;     /* owned until the reader is made, then the reader's */
  _Atomic(table_t *) t;
  env_file_id_t id; /* the file's device and inode */
  uint64_t number;
  int mapped;  /* the reader reads through a mapping (bfh_options.mmap_reads) */
  char path[]; /* the table's name in messages */
} lro_pin_t;

/* A table of a state: its place in the version, and its pin. */
typedef struct lro_table {
  uint64_t number, size;
  int level;
  const uint8_t *smallest, *largest; /* user keys (borrowed from the state's copies) */
  size_t smallest_len, largest_len;
  lro_pin_t *pin; /* one reference */
  uint64_t id;    /* which file it is (index_table_t.id) */
} lro_table_t;

/* A memtable as a state sees it: the entries up to max_seq. */
typedef struct lro_mem {
  memtable_t *mem; /* one reference */
  uint64_t max_seq;
} lro_mem_t;

/* One refreshed state, immutable, shared by the views made from it; freed with its last
   reference. */
typedef struct lro_state {
  atomic_int refs;
  lro_table_t *tables;  /* sorted by number */
  engine_table_t *list; /* the same, as engine_ops_t.view_tables lists them */
  size_t ntables;
  const lro_table_t **get_order; /* tables: level 0 newest first, then by level and key */
  uint8_t *keys;                 /* the tables' user-key bounds (owned) */
  lro_mem_t *mems;               /* newest log first */
  size_t nmems;
} lro_state_t;

typedef struct lro {
  engine_t base;
  char *path;
  env_t *io;
  index_sync_t *sync;      /* borrowed; NULL with value filters off */
  uint64_t value_seed;     /* the memtables' value hash seed (the value filters') */
  size_t mem_buckets;      /* value index buckets of a log's memtable (0: none) */
  int mmap_reads;          /* bfh_options.mmap_reads: table readers read through mappings */
  atomic_ullong refreshes; /* refreshes that read the files (not spared by the watch) */
  atomic_ullong retries;   /* reads started over because the database changed under them */
  atomic_int stale;        /* something may have changed since the last refresh that succeeded */
  void (*logs_hook)(void *arg); /* tests: between a refresh's log reads and its second MANIFEST
                                   read */
  void *logs_hook_arg;

  pthread_mutex_t mu; /* guards everything below */
  dir_watch_t watch;
  char manifest[64];          /* the MANIFEST name last read ("" before the first) */
  env_rfile_t *manifest_file; /* held open: which file under that name was read */
  uint64_t manifest_resume;
  lro_version_t version;
  int version_changed; /* since the last state was made */
  lro_log_t *logs;     /* ascending numbers */
  size_t nlogs;
  int logs_changed;
  int recheck;             /* the MANIFEST was read anew: check each pin against its name */
  uint64_t missing;        /* a table the last refresh found missing (0: none), and where the */
  uint64_t missing_resume; /* MANIFEST's read stood then */
  lro_state_t *state;      /* the newest state made (a reference), NULL before the first */
} lro_t;

/* The view a search holds: a state, its epoch in index_sync, and the data blocks its value
   scans matched in, which the gets validating those matches parse from there (block_memo.h:
   the state holds every table of its blocks open, so a number names one file). One thread at
   a time, as a search uses it. */
struct engine_view {
  uint64_t epoch;
  lro_state_t *s;
  block_memo_t memo;
};

/* ---- lro_state.c ------------------------------------------------------------------------------
 */

/* Drops a reference to s (NULL: nothing); the last one frees it and its pins. */
void lro_state_unref(lro_state_t *s);
/* A new state from r's version and logs (one reference) into *out: BFH_OK, AGAIN (a table of
   the version was deleted since the MANIFEST was read), or an error. REQUIRES mu. */
int lro_state_make(lro_t *r, lro_state_t **out, err_t *err);
/* The table `number` of s, or NULL. */
const lro_table_t *lro_state_table(const lro_state_t *s, uint64_t number);
/* The reader of table t (borrowed: valid while the state is held), made at its first use. */
int lro_table_reader(const lro_table_t *t, table_t **out, err_t *err);
/* The stamp of table t's file (persisted_index_rfile_stamp: its open's fstat and its footer)
   through its pin, before its reader is made (BFH_E_BUSY after: the table is then not bound). */
int lro_table_stamp(const lro_table_t *t, uint64_t *stamp, err_t *err);

/* ---- lro_refresh.c ----------------------------------------------------------------------------
 */

/* Frees what l holds (its memtable, its file), not l. */
void lro_log_release(lro_log_t *l);
/* Brings r->state up to the newest version: BFH_OK, BFH_E_BUSY after LSM_RO_ATTEMPTS changes
   under it, or an error. REQUIRES mu. */
int lro_refresh(lro_t *r, err_t *err);
/* The newest state, refreshed first: on BFH_OK *s is a new reference (lro_state_unref). */
int lro_current_state(lro_t *r, lro_state_t **s, err_t *err);

/* ---- The engine_ops (lro_view.c, lro_iter.c): see engine_ops_t ------------------------------ */

int lro_get(engine_t *e, engine_view_t *view, const void *key, size_t key_len, void **val,
            size_t *val_len, err_t *err);
int lro_view_acquire(engine_t *e, engine_view_t **view, err_t *err);
/* Reports s's tables to index_sync as the live list (pinning *epoch; NULL: no pin).
   REQUIRES r->mu, so that index_sync sees the versions in order. */
int lro_view_index_state(lro_t *r, const lro_state_t *s, uint64_t *epoch, err_t *err);
/* Gives the tables listed and not indexed yet their filters: at open, and while the open's
   loader runs, their block filters (or map heads) now and their leaves in the background;
   otherwise their leaves now (index_sync.h "Loading at open"). */
int lro_view_load(lro_t *r, int at_open, err_t *err);
void lro_view_release(engine_t *e, engine_view_t *v);
size_t lro_view_tables(const engine_view_t *v, const engine_table_t **tables);
int lro_scan_table(engine_t *e, engine_view_t *v, uint64_t number, const engine_value_test_t *test,
                   engine_match_fn fn, void *arg, engine_scan_stats_t *st, err_t *err);
int lro_scan_blocks(engine_t *e, engine_view_t *v, uint64_t number, const block_ref_t *refs,
                    size_t n, const engine_value_test_t *test, engine_match_fn fn, void *arg,
                    engine_scan_stats_t *st, err_t *err);
int lro_scan_memtables(engine_t *e, engine_view_t *v, const engine_value_test_t *test,
                       engine_match_fn fn, void *arg, engine_scan_stats_t *st, err_t *err);
int lro_find_memtables(engine_t *e, engine_view_t *v, const engine_value_test_t *test,
                       uint64_t hash, engine_match_fn fn, void *arg, engine_scan_stats_t *st,
                       err_t *err);
int lro_table_hashes(engine_t *e, engine_view_t *v, uint64_t number, uint64_t seed,
                     void (*fn)(void *arg, uint64_t hash), void *arg, engine_scan_stats_t *st,
                     err_t *err);
int lro_read_meta(engine_t *e, engine_view_t *v, uint64_t number, const char *name, uint64_t off,
                  size_t len, void *buf, err_t *err);
int lro_iter_create(engine_t *e, engine_iter_t **it, err_t *err);

#endif

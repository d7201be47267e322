/* What the files of the read-only LevelDB engine share (internal to
 * lsm_hooks/engines/leveldb_ro/; the engine's interface is readonly.h).
 *
 *   readonly.c    the design (the refresh's consistency argument, pins, a replaced database),
 *                 open and close, the refused writes, the test hooks, the engine_ops table
 *   ro_chunk.c    chunks: what one read of a log added, indexed by value and by key
 *   ro_state.c    a refreshed state and the table files it pins (at most pin_max)
 *   ro_refresh.c  the refresh: CURRENT, the MANIFEST and the live logs read on; a MANIFEST or
 *                 log that is another file under its name (device and inode) read anew
 *   ro_get.c      point lookups in a state
 *   ro_view.c     views and the scans of a search over its view (retried: search_attempts)
 *   ro_iter.c     ordered iteration over a state read into memory
 *
 * Locking: engine_ro_t.mu guards the refresh's fields (REQUIRES mu below); states, pins and
 * chunks are immutable and reference-counted, read without it.
 */
#ifndef BFH_LSM_HOOKS_LEVELDB_RO_INTERNAL_H
#define BFH_LSM_HOOKS_LEVELDB_RO_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "lsm_hooks/engines/dir_watch.h"
#include "lsm_hooks/engines/leveldb/adapter.h"
#include "lsm_hooks/engines/leveldb_ro/readonly.h"
#include "lsm_hooks/leveldb_format/ldb_entry.h"
#include "lsm_hooks/leveldb_format/ldb_version_edit.h"
#include "util/env.h"
#include "util/err.h"

#define AGAIN STOCK_RO_AGAIN /* internal: the database changed under the read; start over */
#define KEY_HASH_SEED 0x726f6b6579733031ull /* "rokeys01" */

/* ---- Chunks: what one read of a log added ------------------------------------------------ */

/* The entries of one stretch of a log, immutable once made: their values indexed by value
   (vals, for searches) and every entry, deletions included, indexed by key (for gets).
   data: n x (type u8 | fixed32 key_len | key | fixed32 val_len | val); slots: open
   addressing by bfh_hash64(key), offset + 1 of the key's last entry in the chunk. */
typedef struct chunk {
  atomic_int refs;
  log_seg_t *vals;
  uint8_t *data;
  size_t len;
  uint64_t *slots;
  size_t mask;
} chunk_t;

typedef struct chunk_builder {
  stock_seg_builder_t vals;
  uint8_t *p;
  size_t len, cap;
  uint64_t n;
  int nomem;
} chunk_builder_t;

/* ---- The engine's state ------------------------------------------------------------------- */

typedef struct ro_log {
  uint64_t number, resume;
  env_rfile_t *file; /* held open from its first read: which file was read (NULL before) */
  chunk_t **chunks;
  size_t n, cap;
} ro_log_t;

/* One refreshed state, immutable, shared by the views made from it; freed with its last
   reference. */
typedef struct ro_state {
  atomic_int refs;
  ldb_version_t version;
  engine_table_t *tables; /* version's files, sorted by number */
  struct pin **pins;      /* parallel to tables: each file held open, or NULL (not pinned) */
  uint64_t *ids;          /* parallel to tables: which file each is (index_table_t.id) */
  size_t ntables;
  chunk_t **chunks; /* oldest first */
  log_seg_t **segs; /* chunks[i]->vals */
  size_t nchunks;
} ro_state_t;

typedef struct engine_ro {
  engine_t base;
  /* path, cache_dir, io and sync first, as in engine_leveldb_t (adapter.h): the describe of
     both engines (ldb_verify_describe) reads them through that type. */
  char *path, *cache_dir;
  env_t *io;
  index_sync_t *sync;
  void (*read_hook)(void *arg, uint64_t number);
  void *read_hook_arg;
  void (*logs_hook)(void *arg);
  void *logs_hook_arg;
  atomic_ullong retries;
  atomic_ullong refreshes; /* refreshes that read the files (not spared by the watch) */
  /* Something may have changed since the last refresh that succeeded: a watch event, a
     refresh that failed, a file found gone (dir_watch.h's rule). */
  atomic_int stale;
  atomic_ullong pinned;          /* table files held open now (pin_t) */
  unsigned long long pin_max;    /* at most this many held open at once */
  uint64_t missing;              /* a table the last refresh found missing (0: none) ... */
  char missing_manifest[64];     /* ... with this MANIFEST name ... */
  uint64_t missing_resume;       /* ... read up to here */
  char *index_dir;               /* opt->index_dir (owned), NULL: memory only */
  /* The persisted index (ro_persisted.c): the tables it bound at open (sorted, owned), and
     whether it is attached to the value index. */
  uint64_t *bound;
  size_t nbound;
  int attached;

  pthread_mutex_t mu; /* guards everything below */
  dir_watch_t watch;  /* the directory's contents (DIR_WATCH_CONTENTS) */
  char manifest[64];  /* the MANIFEST name last read ("" before the first) */
  env_rfile_t *manifest_file; /* held open: which file under that name was read */
  uint64_t manifest_resume;
  int recheck; /* the MANIFEST was read whole: check the tables' names against their files */
  ldb_version_t version;
  int version_changed; /* since the last state was made */
  ro_log_t *logs;      /* ascending numbers */
  size_t nlogs;
  int logs_changed;
  ro_state_t *state; /* the newest state made (a reference), NULL before the first */
} engine_ro_t;

/* A table file held open from the refresh that listed it until the last state listing it
   goes: an unlinked file stays readable through its descriptor, so the compaction that
   deletes it cannot take it from a search of a state that lists it (top of readonly.c). */
typedef struct pin {
  atomic_int refs;
  env_rfile_t *f;
  atomic_ullong *count; /* the engine's count of pins */
  char path[];          /* the table's name in messages */
} pin_t;

/* ---- ro_chunk.c ---------------------------------------------------------------------------- */

/* Drops a reference to c (NULL: nothing); the last one frees it. */
void ro_chunk_unref(chunk_t *c);
/* ldb_log_read's visitor: appends entry e to the builder arg; 1 (and b->nomem) without memory. */
int ro_chunk_builder_add(void *arg, const ldb_entry_t *e);
void ro_chunk_builder_release(chunk_builder_t *b);
/* A chunk of b's entries (one reference; takes b's data over), or NULL without memory. */
chunk_t *ro_chunk_make(chunk_builder_t *b);
/* The last entry of key in c: 1 (and *type, *v, *vl, borrowed from c) or 0. */
int ro_chunk_find(const chunk_t *c, const void *key, size_t key_len, int *type, const uint8_t **v,
                  uint32_t *vl);
/* The entry at p of a chunk's data: type, key, value (borrowed); returns the next one. */
const uint8_t *ro_chunk_entry_decode(const uint8_t *p, int *type, const uint8_t **k, uint32_t *kl,
                                     const uint8_t **v, uint32_t *vl);

/* ---- ro_state.c ---------------------------------------------------------------------------- */

/* The pin of table `number` in s (borrowed), or NULL (not held: read it by name). */
pin_t *ro_state_pin(const ro_state_t *s, uint64_t number);
/* Drops a reference to s (NULL: nothing); the last one frees it and its pins. */
void ro_state_unref(ro_state_t *s);
/* A new state from r's version and logs (one reference) into *out: BFH_OK, AGAIN (a table of
   the version was deleted since the MANIFEST was read), or an error. REQUIRES mu. */
int ro_state_make(engine_ro_t *r, ro_state_t **out, err_t *err);
/* A table read's status rc: BFH_NOT_FOUND (the file gone) becomes BFH_E_BUSY. */
int ro_table_status(engine_ro_t *r, int rc, uint64_t number, err_t *err);

/* ---- ro_refresh.c -------------------------------------------------------------------------- */

/* Frees what l holds (its chunks, its file), not l. */
void ro_log_release(ro_log_t *l);
/* Brings r->state up to the newest version: BFH_OK, BFH_E_BUSY after
   ENGINE_LEVELDB_RO_ATTEMPTS changes under it, or an error. REQUIRES mu. */
int ro_refresh(engine_ro_t *r, err_t *err);
/* The newest state, refreshed first: on BFH_OK *s is a new reference (ro_state_unref). */
int ro_current_state(engine_ro_t *r, ro_state_t **s, err_t *err);

/* ---- readonly.c, ro_persisted.c ------------------------------------------------------------ */

/* The stamp of table `number` (leaf_cache_stamp: an fstat of its file and its 48-byte footer,
   in place of a tag, which reads every page of the table; 0: too fresh to stamp). */
int ro_table_stamp(engine_ro_t *r, uint64_t number, uint64_t *stamp, err_t *err);
/* At open, after the first refresh: opens <index_dir>/BFH-INDEX, binds it to the live tables
   and attaches it to the value index (a damaged file is counted and left unused). */
void ro_persisted_open(engine_ro_t *r);
/* At close, before the loader stops: writes <index_dir>/BFH-INDEX when it is due (see
   ro_persisted.c) and detaches the file from the value index. */
void ro_persisted_close(engine_ro_t *r);

/* ---- The engine_ops (ro_get.c, ro_view.c, ro_iter.c): see engine_ops_t ---------------------- */

int ro_get(engine_t *e, engine_view_t *view, const void *key, size_t key_len, void **val,
           size_t *val_len, err_t *err);
int ro_view_acquire(engine_t *e, engine_view_t **view, err_t *err);
/* Reports s's tables to index_sync as the live list (pinning *epoch; NULL: no pin).
   REQUIRES r->mu, so that index_sync sees the versions in order. */
int ro_view_index_state(engine_ro_t *r, const ro_state_t *s, uint64_t *epoch, err_t *err);
void ro_view_release(engine_t *e, engine_view_t *v);
int ro_scan_table(engine_t *e, engine_view_t *v, uint64_t number, const engine_value_test_t *test,
                  engine_match_fn fn, void *arg, engine_scan_stats_t *st, err_t *err);
int ro_scan_blocks(engine_t *e, engine_view_t *v, uint64_t number, const block_ref_t *refs,
                   size_t n, const engine_value_test_t *test, engine_match_fn fn, void *arg,
                   engine_scan_stats_t *st, err_t *err);
int ro_iter_create(engine_t *e, engine_iter_t **it, err_t *err);

#endif

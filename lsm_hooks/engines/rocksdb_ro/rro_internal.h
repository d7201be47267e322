/* What the files of the read-only RocksDB engine share (internal to
 * lsm_hooks/engines/rocksdb_ro/; the engine's interface is rdb_readonly.h).
 *
 *   rdb_readonly.c  the design (the refresh's consistency argument, pins), open and close, the
 *                   refused writes, the engine_ops table
 *   rro_refresh.c   the refresh: CURRENT, the MANIFEST (rdb_manifest) and the live WALs
 *                   (rdb_log) read on; states and the table files they pin
 *   rro_get.c       chunks (what one read of a WAL added, by value and by key), each pinned
 *                   table's key index and range tombstones, and point lookups in a state
 *   rro_tombs.c     range tombstones fragmented: the largest sequence covering a key
 *   rro_view.c      views, the scans of a search over its view (retried by
 * engine_ops_t.search_attempts), and ordered iteration over a state read into memory
 *
 * Locking: rro_t.mu guards the refresh's fields (REQUIRES mu below); states and chunks are
 * immutable and reference-counted, read without it; a pin's key index is built once under the
 * pin's own mutex.
 */
#ifndef BFH_LSM_HOOKS_ROCKSDB_RO_INTERNAL_H
#define BFH_LSM_HOOKS_ROCKSDB_RO_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "lsm_hooks/engines/dir_watch.h"
#include "lsm_hooks/engines/stock/stock.h"
#include "lsm_hooks/engines/rocksdb_ro/rdb_readonly.h"
#include "lsm_hooks/rocksdb_format/rdb_entry.h"
#include "lsm_hooks/rocksdb_format/rdb_log.h"
#include "lsm_hooks/rocksdb_format/rdb_manifest.h"
#include "lsm_hooks/rocksdb_format/rdb_table.h"
#include "util/env.h"
#include "util/err.h"

#define RRO_AGAIN STOCK_RO_AGAIN /* the database changed under the read; start over */
#define RRO_KEY_HASH_SEED 0x726f6b6579733032ull /* "rokeys02" */

/* ---- Range tombstones (rro_tombs.c) ------------------------------------------------------- */

/* The range tombstones [begin, end) at seq of one source (a WAL chunk, a table), immutable:
   points (the begin and end keys, sorted, unique) keys[at[i], at[i + 1]), and for the fragment
   [point i, point i + 1) the largest sequence of the tombstones covering it (0: none). */
typedef struct rro_tombs {
  size_t n;       /* points */
  uint8_t *keys;  /* the points' bytes, back to back */
  size_t *at;     /* n + 1 offsets into keys */
  uint64_t *seq;  /* n: fragment i's largest covering sequence (the last is 0) */
  uint64_t count; /* tombstones */
} rro_tombs_t;

typedef struct rro_tomb_ref {
  size_t b, bl, e, el; /* begin and end keys in rro_tombs_builder_t.p */
  uint64_t seq;
} rro_tomb_ref_t;

/* Caller-owned, zeroed to start; rro_tombs_builder_release frees what it holds. */
typedef struct rro_tombs_builder {
  uint8_t *p;
  size_t len, cap;
  rro_tomb_ref_t *t;
  size_t n, tcap;
} rro_tombs_builder_t;

/* Copies the tombstone [begin, end) at seq in (an empty range covers nothing). BFH_OK or
   BFH_E_NOMEM. */
int rro_tombs_builder_add(rro_tombs_builder_t *b, const void *begin, size_t bl, const void *end,
                          size_t el, uint64_t seq);
void rro_tombs_builder_release(rro_tombs_builder_t *b);
/* *out: the fragments of b's tombstones (new: rro_tombs_destroy), NULL when b has none. b is
   left as it was (release it). BFH_OK or BFH_E_NOMEM. */
int rro_tombs_finish(rro_tombs_builder_t *b, rro_tombs_t **out);
void rro_tombs_destroy(rro_tombs_t *t); /* NULL allowed */
/* The largest sequence of t's tombstones that cover key (begin <= key < end), 0 when none (or
   t NULL). */
uint64_t rro_tombs_max(const rro_tombs_t *t, const void *key, size_t key_len);
size_t rro_tombs_size_in_bytes(const rro_tombs_t *t);

/* ---- Chunks: what one read of a WAL added (rro_get.c) ------------------------------------- */

/* The searched column family's entries of one stretch of a WAL, immutable once made: the puts
   indexed by value (vals, for searches) and every entry, deletions included, by key (for gets).
   data: n x (type u8 | seq fixed64 | key_len fixed32 | key | val_len fixed32 | val); slots:
   open addressing by bfh_hash64(key), offset + 1 of the key's last entry in the chunk;
   tombs: its range deletions (NULL: none). */
typedef struct rro_chunk {
  atomic_int refs;
  log_seg_t *vals;
  rro_tombs_t *tombs;
  uint8_t *data;
  size_t len;
  uint64_t *slots;
  size_t mask;
} rro_chunk_t;

typedef struct rro_chunk_builder {
  stock_seg_builder_t vals;
  rro_tombs_builder_t tombs;
  uint32_t cf; /* the column family read */
  uint8_t *p;
  size_t len, cap;
  uint64_t n;
  int nomem;
  int rc;          /* a refusal (BFH_E_UNSUPPORTED) met in the WAL */
  err_t *err;      /* where the refusal is written */
  const char *dir; /* the database, in messages */
} rro_chunk_builder_t;

void rro_chunk_unref(rro_chunk_t *c);
/* rdb_log_read's visitor: the column family's puts, deletions and range deletions into the
   builder; a merge operand, blob reference or wide-column entity of it is refused. */
int rro_chunk_builder_add(void *arg, const rdb_log_entry_t *e);
void rro_chunk_builder_release(rro_chunk_builder_t *b);
/* A chunk of b's entries (one reference; takes b's data over), or NULL without memory. */
rro_chunk_t *rro_chunk_make(rro_chunk_builder_t *b);
/* The last entry of key in c: 1 (and *type, *seq, *v, *vl, borrowed from c) or 0. */
int rro_chunk_find(const rro_chunk_t *c, const void *key, size_t key_len, int *type, uint64_t *seq,
                   const uint8_t **v, uint32_t *vl);
const uint8_t *rro_chunk_entry_decode(const uint8_t *p, int *type, uint64_t *seq, const uint8_t **k,
                                      uint32_t *kl, const uint8_t **v, uint32_t *vl);

/* ---- Pins: table files held open ---------------------------------------------------------- */

/* A data block of a table and its index entry's user key, a separator (>= every key of the
   block, < every key of the next): for a point lookup, the first block whose separator is >=
   the key holds the key's newest entry in the table. */
typedef struct rro_kblock {
  uint64_t offset, size;
  size_t key_at, key_len; /* in rro_pin_t.keys */
} rro_kblock_t;

/* A table file held open from the refresh that listed it until the last state listing it goes
   (an unlinked file stays readable through its descriptor), with its key index, built by the
   first lookup that needs it (a read of the table's index, not of its data blocks). */
typedef struct rro_pin {
  atomic_int refs;
  env_rfile_t *f;
  atomic_ullong *count;   /* the engine's count of pins */
  uint64_t largest_seqno; /* the MANIFEST's largest sequence of the file */
  /* The file's footer, read once by the first read of its blocks (rro_pin_footer): set under
     mu, then footer_known (release); read without mu once footer_known says so (acquire). */
  atomic_int footer_known;
  rdb_table_footer_t footer;
  pthread_mutex_t mu;     /* guards what follows */
  int gseq_known;         /* gseq was read from the table's properties */
  uint64_t gseq;          /* the table's global sequence number (RDB_NO_GLOBAL_SEQNO: none) */
  int built;            /* 0 not yet, 1 built, else the status of the failed build */
  rro_kblock_t *blocks;
  size_t nblocks;
  uint8_t *keys;
  rro_tombs_t *tombs; /* the table's range tombstones (NULL: none) */
  char *why;          /* the failed build's message (malloc'd) */
  char path[];        /* the table's name in messages */
} rro_pin_t;

/* A table's key index and range tombstones in the making (rro_get.c), caller-owned, zeroed to
   start: from a read of the table's index (the first lookup), or tapped from the leaf read
   that passes over the whole table anyway (rdb_readonly.c's read_leaf: rro_keys_tap_entry and
   rro_keys_tap_block as the read's rdb_leaf_tap_t), then installed in its pin. */
typedef struct rro_keys {
  rro_kblock_t *blocks;
  size_t nblocks, blocks_cap;
  uint8_t *keys;
  size_t keys_len, keys_cap;
  rro_tombs_builder_t tombs;
  uint8_t *last; /* the tap: the last user key of the block being read */
  size_t last_len, last_cap;
  int nomem;
} rro_keys_t;

void rro_keys_release(rro_keys_t *k);
int rro_keys_tap_entry(void *arg, const rdb_entry_t *e);
int rro_keys_tap_block(void *arg, uint64_t offset, uint64_t size);
/* p's footer (borrowed from p), read from its file the first time; NULL when that read
   failed (a read of blocks then reads the footer itself and reports what is wrong). */
const rdb_table_footer_t *rro_pin_footer(rro_pin_t *p);
/* Whether p's key index is still to be built. */
int rro_pin_keys_wanted(rro_pin_t *p);
/* Installs k (made from p's whole table) as p's key index unless one was built meanwhile;
   releases k. */
void rro_pin_keys_install(rro_pin_t *p, rro_keys_t *k);

/* ---- The engine's state ------------------------------------------------------------------- */

typedef struct rro_log {
  uint64_t number, resume;
  env_rfile_t *file; /* held open from its first read: which file was read */
  rro_chunk_t **chunks;
  size_t n, cap;
} rro_log_t;

/* One refreshed state, immutable, shared by the views made from it. */
typedef struct rro_state {
  atomic_int refs;
  rdb_version_t version;
  const rdb_file_t **order; /* the column family's files in lookup order: level 0 newest
                               first (by largest sequence), then each deeper level */
  size_t norder;
  engine_table_t *tables; /* the column family's files, sorted by number */
  rro_pin_t **pins;       /* parallel to tables: held open, or NULL (read by name) */
  uint64_t *ids;          /* parallel to tables: which file each is (index_table_t.id) */
  size_t ntables;
  rro_chunk_t **chunks; /* oldest first */
  log_seg_t **segs;     /* chunks[i]->vals */
  size_t nchunks;
} rro_state_t;

typedef struct rro {
  engine_t base;
  char *path, *cache_dir;
  char *cf_name; /* the column family read: bfh_options.column_family, "default" when NULL */
  env_t *io;
  index_sync_t *sync;
  void (*logs_hook)(void *arg); /* tests: between steps 2 and 3 of every refresh */
  void *logs_hook_arg;
  atomic_ullong retries;
  atomic_ullong pinned;
  atomic_ullong refreshes; /* refreshes that read the files (not spared by the watch) */
  atomic_ullong wal_bytes; /* WAL bytes read */
  /* Something may have changed since the last refresh that succeeded: a watch event, a
     refresh that failed, a file found gone (dir_watch.h's rule). */
  atomic_int stale;
  unsigned long long pin_max;
  uint64_t missing;          /* a table the last refresh found missing (0: none) ... */
  char missing_manifest[64]; /* ... with this MANIFEST ... */
  uint64_t missing_resume;   /* ... read up to here */

  pthread_mutex_t mu;
  dir_watch_t watch; /* the directory's contents (DIR_WATCH_CONTENTS) */
  uint32_t cf;       /* the id of the column family named cf_name in version */
  char manifest[64]; /* the MANIFEST name last read ("" before the first) */
  env_rfile_t *manifest_file;
  uint64_t manifest_resume;
  int recheck;
  rdb_version_t version;
  int version_changed;
  rro_log_t *logs; /* ascending numbers */
  size_t nlogs;
  int logs_changed;
  rro_state_t *state; /* the newest state made (a reference); swapped under mu and state_mu */
  /* Guards only the swap of state and the taking of a reference to it, never held while
     calling out: index_sync's reader takes it (read_leaf, through the pins) while a view
     may hold mu and call index_sync. */
  pthread_mutex_t state_mu;
} rro_t;

/* The view of a search: the engine_view_t the search reads, and the state that owns its
   tables and segments. */
typedef struct rro_view {
  engine_view_t v;
  rro_state_t *s;
} rro_view_t;

/* rro_refresh.c */
void rro_log_release(rro_log_t *l);
void rro_state_unref(rro_state_t *s);
void rro_pin_unref(rro_pin_t *p);
/* The pin of table `number` in the newest state (a new reference: rro_pin_unref), or NULL. */
rro_pin_t *rro_newest_pin(rro_t *r, uint64_t number);
rro_pin_t *rro_state_pin(const rro_state_t *s, uint64_t number);
/* Brings r->state up to the newest version. REQUIRES mu. */
int rro_refresh(rro_t *r, err_t *err);
/* The newest state, refreshed first: on BFH_OK *s is a new reference. */
int rro_current_state(rro_t *r, rro_state_t **s, err_t *err);
/* A table read's status: BFH_NOT_FOUND (the file gone) becomes BFH_E_BUSY. */
int rro_table_status(rro_t *r, int rc, uint64_t number, err_t *err);

/* rro_get.c */
void rro_pin_keys_release(rro_pin_t *p);
/* The sequence of an entry of a table whose global sequence number is gseq (an ingested
   table's entries all take it, as RocksDB's reader gives it to them). */
static inline uint64_t rro_seq(uint64_t gseq, uint64_t seq) {
  return gseq != RDB_NO_GLOBAL_SEQNO ? gseq : seq;
}
/* *gseq: the global sequence number of table f of s (rdb_table_global_seqno), from its pin
   (read once) or read by name. BFH_OK; BFH_E_BUSY when the file is gone; BFH_E_CORRUPT ... */
int rro_table_gseq(rro_t *r, const rro_state_t *s, const rdb_file_t *f, uint64_t *gseq,
                   err_t *err);
/* *t: p's range tombstones (borrowed from p; NULL: none), its key index built first. */
int rro_pin_tombs(rro_pin_t *p, const rro_tombs_t **t, err_t *err);
int rro_get(engine_t *e, engine_view_t *view, const void *key, size_t key_len, void **val,
            size_t *val_len, err_t *err);

/* rro_view.c */
int rro_view_acquire(engine_t *e, engine_view_t **view, err_t *err);
void rro_view_release(engine_t *e, engine_view_t *v);
int rro_view_index_state(rro_t *r, const rro_state_t *s, uint64_t *epoch, err_t *err);
int rro_scan_table(engine_t *e, engine_view_t *v, uint64_t number, const engine_value_test_t *test,
                   engine_match_fn fn, void *arg, engine_scan_stats_t *st, err_t *err);
int rro_scan_blocks(engine_t *e, engine_view_t *v, uint64_t number, const block_ref_t *refs,
                    size_t n, const engine_value_test_t *test, engine_match_fn fn, void *arg,
                    engine_scan_stats_t *st, err_t *err);
int rro_iter_create(engine_t *e, engine_iter_t **it, err_t *err);

#endif

/* What the files of the read-only RocksDB engine share (internal to
 * lsm_hooks/engines/rocksdb_ro/; the engine's interface is rdb_readonly.h). The engine is the
 * read-only stock core (stock/stock_ro.h) over RocksDB's format:
 *
 *   rdb_readonly.c  the design (what RocksDB adds to the core's refresh: column families, range
 *                   tombstones, its WAL), the format interface over rocksdb_format/, the open,
 *                   the engine_ops table
 *   rro_get.c       each pinned table's key index and range tombstones, and a get's read of a
 *                   table
 *   rro_iter.c      an iterator's read of a state into memory
 *
 * A pin's key index is built once under the pin's own mutex.
 */
#ifndef BFH_LSM_HOOKS_ROCKSDB_RO_INTERNAL_H
#define BFH_LSM_HOOKS_ROCKSDB_RO_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "lsm_hooks/engines/rocksdb_ro/rdb_readonly.h"
#include "lsm_hooks/engines/stock/stock_ro.h"
#include "lsm_hooks/rocksdb_format/rdb_entry.h"
#include "lsm_hooks/rocksdb_format/rdb_manifest.h"
#include "lsm_hooks/rocksdb_format/rdb_table.h"

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
  stock_pin_t base;
  uint64_t largest_seqno; /* the MANIFEST's largest sequence of the file */
  /* The file's footer, read once by the first read of its blocks (rro_pin_footer): set under
     mu, then footer_known (release); read without mu once footer_known says so (acquire). */
  atomic_int footer_known;
  rdb_table_footer_t footer;
  pthread_mutex_t mu; /* guards what follows */
  int gseq_known;     /* gseq was read from the table's properties */
  uint64_t gseq;      /* the table's global sequence number (RDB_NO_GLOBAL_SEQNO: none) */
  int built;          /* 0 not yet, 1 built, else the status of the failed build */
  rro_kblock_t *blocks;
  size_t nblocks;
  uint8_t *keys;
  stock_tombs_t *tombs; /* the table's range tombstones (NULL: none) */
  char *why;            /* the failed build's message (malloc'd) */
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
  stock_tombs_builder_t tombs;
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

/* ---- The engine and its states ------------------------------------------------------------ */

typedef struct rro {
  stock_ro_t ro;
  char *cf_name; /* the column family read: bfh_options.column_family, "default" when NULL */
  uint32_t cf;   /* the id of the column family named cf_name in version (guarded by ro.mu) */
  rdb_version_t version; /* guarded by ro.mu */
} rro_t;

/* A state: the core's, and its copy of the version (the core's order and tables: the column
   family's files). */
typedef struct rro_state {
  stock_ro_state_t base;
  rdb_version_t version;
} rro_state_t;

/* The sequence of an entry of a table whose global sequence number is gseq (an ingested
   table's entries all take it, as RocksDB's reader gives it to them). */
static inline uint64_t rro_seq(uint64_t gseq, uint64_t seq) {
  return gseq != RDB_NO_GLOBAL_SEQNO ? gseq : seq;
}

/* rro_get.c */
void rro_pin_release(stock_pin_t *p); /* the format's part of a pin (stock_ro_format_t) */
/* *gseq: the global sequence number of table t (rdb_table_global_seqno), from its pin p (read
   once) or read by name at path: BFH_OK, or the read's error (by name: BFH_NOT_FOUND when
   the file is gone). */
int rro_table_gseq(stock_ro_t *r, const stock_ro_table_t *t, rro_pin_t *p, const char *path,
                   uint64_t *gseq, err_t *err);
/* *t: p's range tombstones (borrowed from p; NULL: none), its key index built first. */
int rro_pin_tombs(rro_pin_t *p, const stock_tombs_t **t, err_t *err);
/* stock_ro_format_t.table_get and gather (rro_get.c, rro_iter.c). */
int rro_table_get(stock_ro_t *r, const stock_ro_table_t *t, stock_pin_t *p, const char *path,
                  void *lookup, err_t *err);
int rro_gather(stock_ro_t *r, const stock_ro_state_t *s, stock_sorted_t *sorted, err_t *err);

#endif

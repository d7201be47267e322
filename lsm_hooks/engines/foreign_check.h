/* foreign_check: what the checks of a LevelDB and a RocksDB directory (bfh_check: the driver
 * stock/stock_check.c over leveldb/ldb_verify.c, rocksdb/rdb_verify.c) and their repairs
 * share. Each format reads its own CURRENT, MANIFEST, tables and logs with its own readers;
 * this module keeps the tally (files, bytes, damage), turns a reader's result into a damage
 * report, checks the filter cache (bfh-filters/, leaf_cache.h) and tells which process holds
 * the database's LOCK. Nothing here writes.
 */
#ifndef BFH_LSM_HOOKS_ENGINES_FOREIGN_CHECK_H
#define BFH_LSM_HOOKS_ENGINES_FOREIGN_CHECK_H

#include <stddef.h>
#include <stdint.h>

#include "lsm_hooks/engines/engine.h"
#include "util/env.h"
#include "util/err.h"

typedef struct foreign_check {
  env_t *io;                /* borrowed */
  const char *dir;          /* the database directory; borrowed */
  engine_damage_fn damage;  /* told of every damaged file; may be NULL */
  void *arg;                /* damage's */
  engine_check_stats_t *st; /* the tally; borrowed */
  int unsupported_checked;  /* 1: a file a reader cannot decode (BFH_E_UNSUPPORTED) is reported
                               as "not checked: ..." and the check goes on (RocksDB, whose
                               options bfh does not all read); 0: it ends the check */
} foreign_check_t;

/* Counts damage at offset of file (a name relative to the directory) and tells c->damage. */
void foreign_check_report(foreign_check_t *c, const char *file, uint64_t offset, const char *what);

/* A reader's result rc (its error e) for file: BFH_OK when the file was read whole or is gone
   (deleted meanwhile), or its damage was reported; an I/O or memory failure is returned, with
   e copied into err. */
int foreign_check_result(foreign_check_t *c, const char *file, int rc, const err_t *e, err_t *err);

/* Counts the file at path (its size into *size, 0 if it cannot be had) in c->st. */
void foreign_check_count(foreign_check_t *c, const char *path, uint64_t *size);

/* How an engine names and tags its tables (leveldb/adapter.h, rocksdb/rdb_adapter.h,
   leveldb_format/ldb_table.h, rocksdb_format/rdb_table.h). */
typedef struct foreign_tables {
  void (*path)(const char *dir, uint64_t number, char *out, size_t n);
  int (*tag)(env_t *io, const char *path, uint64_t *tag, err_t *err);
} foreign_tables_t;

/* Loads every file of the filter cache (c->dir/bfh-filters/) against its table (made with m,
   k, seed; a file whose table is gone is skipped): one that does not load is harmless damage,
   built again at the next open, told with "(harmless: ...)" and counted in *cache_damaged, not
   in c->st->damaged. A table that gives no tag is not judged here: its own check reports it.
   BFH_OK, or the failure to list the directory. */
int foreign_check_cache(foreign_check_t *c, const foreign_tables_t *tables, uint64_t m, uint32_t k,
                        uint64_t seed, uint64_t *cache_damaged, err_t *err);

/* Takes a shared lock on dir (*lock, for env_unlock) so that no bfh handle opens it during
   the check, and refuses a database another process holds open: the engine's LOCK (a POSIX
   lock, foreign_lock_holder). engine names it in the messages ("LevelDB", "RocksDB"); hint,
   "" or more advice, follows "close it to check". BFH_E_BUSY with the holder named. */
int foreign_check_lock(env_t *io, const char *dir, const char *engine, const char *hint,
                       env_lock_t **lock, err_t *err);

/* The process holding the POSIX lock LevelDB and RocksDB take on dir/LOCK while the database
   is open (check and repair refuse such a database), read from /proc/locks on Linux without
   opening LOCK: closing any descriptor of it would release a lock this process holds. 0 if
   none is held or it cannot be told (no LOCK file, no /proc/locks). */
long foreign_lock_holder(const char *dir);

/* The locks a repair holds on a LevelDB or RocksDB database (dir) from its first check to its
   commit (repair_stage.h): bfh's flock on the directory, so that no bfh handle opens it, then,
   after making sure no process holds it (foreign_lock_holder), the POSIX write lock on LOCK
   that the engines' Env takes (fcntl F_SETLK), so that no LevelDB or RocksDB program opens it.
   LOCK is created if missing. engine names it in the messages. BFH_E_BUSY with the holder
   named; on BFH_OK *lock is new: release it with foreign_repair_unlock. */
typedef struct foreign_repair_lock foreign_repair_lock_t;
int foreign_repair_lock(const char *dir, const char *engine, foreign_repair_lock_t **lock,
                        err_t *err);
void foreign_repair_unlock(foreign_repair_lock_t *lock); /* NULL allowed */

#endif

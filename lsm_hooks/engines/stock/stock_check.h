/* stock_check: bfh_check, bfh_tables and the check before the library's open, for a LevelDB
 * or a RocksDB database: one driver over the format's hooks (leveldb/ldb_verify.c,
 * rocksdb/rdb_verify.c), which read the files with bfh's own readers (leveldb_format/,
 * rocksdb_format/). Nothing here writes.
 *
 *   CURRENT        names a MANIFEST that exists; a database without CURRENT whose directory
 *                  holds tables, logs or a MANIFEST is damage ("missing")
 *   MANIFEST       every record's checksum, every version edit parsed and applied: that gives
 *                  the live tables and logs
 *   tables         every live table read whole, every block's checksum; a live table missing
 *                  is damage; every table of the directory when the MANIFEST could not say
 *                  which are live (the others are obsolete: the library deletes them unread)
 *   logs           every live log read to its end (the format's CHECK_TAIL), every write batch
 *                  decoded; a record cut short at the end is a torn tail (a write in flight at
 *                  a crash), not damage
 *   bfh-filters/   each cache file loaded against its table (foreign_check_cache): a damaged
 *                  one is harmless and counted in *cache_damaged, not in st->damaged
 * Each reader stops at a file's first damage: a damaged file is reported once, at the offset
 * of its first damaged block or record.
 */
#ifndef BFH_LSM_HOOKS_STOCK_CHECK_H
#define BFH_LSM_HOOKS_STOCK_CHECK_H

#include <stddef.h>
#include <stdint.h>

#include "bfh.h"
#include "lsm_hooks/engines/engine_detect.h"
#include "lsm_hooks/engines/foreign_check.h"
#include "lsm_hooks/engines/stock/stock.h"

/* What a MANIFEST names live (stock_check_format_t.manifest fills it; the driver frees
   tables). */
typedef struct stock_check_table {
  uint64_t number;
  int away; /* 1: in another of the database's db_paths (not checked) */
} stock_check_table_t;
typedef struct stock_check_live {
  int known; /* 1: the MANIFEST names the live files (else every file is checked) */
  stock_check_table_t *tables;
  size_t ntables, cap;
  uint64_t min_log;    /* logs numbered below it are obsolete (the library ignores them) */
  uint64_t prev_log;   /* but this one, when not 0 (LevelDB's prev_log_number) */
  uint64_t needed_log; /* the log that must exist (its loss means lost edits); 0 for none */
} stock_check_live_t;

/* Adds live table number (away: outside the directory). BFH_E_NOMEM. */
int stock_check_live_add(stock_check_live_t *live, uint64_t number, int away, err_t *err);

/* What the driver asks of a format. Every reader reads through io (borrowed) and returns
   BFH_NOT_FOUND when the file is gone, BFH_E_CORRUPT with the file and offset in err. */
typedef struct stock_check_format {
  const char *engine;         /* "LevelDB", "RocksDB": in messages */
  engine_dir_kind_t dir_kind; /* engine_detect_check's */
  const char *lock_hint;      /* foreign_check_lock's */
  int unsupported_checked;    /* foreign_check_t's */
  int lost_current;           /* 1: CURRENT missing beside a table, log or MANIFEST is damage */
  const char *counted_prefix; /* files counted, not read ("OPTIONS-"); NULL for none */
  foreign_tables_t tables;    /* table paths and tags */
  int (*table_path)(const char *dir, uint64_t number, char **path, err_t *err); /* malloc'd */
  /* BFH_E_INVALID unless dir holds a database of the format (a CURRENT, or with lost_current
     stock_check_has_files). */
  int (*admit)(env_t *io, const char *dir, err_t *err);
  /* Reads dir/CURRENT into *manifest (malloc'd, client frees): stock_current_read's contract. */
  int (*current)(env_t *io, const char *dir, char **manifest, err_t *err);
  /* The MANIFEST at path read whole into *live (zeroed before); the records read are added to
   *records. */
  int (*manifest)(env_t *io, const char *path, stock_check_live_t *live, uint64_t *records,
                  err_t *err);
  /* Table at path read whole: each entry's user key into range (NULL: none), the blocks read
     added to *blocks. */
  int (*table_scan)(env_t *io, const char *path, stock_key_range_t *range, uint64_t *blocks,
                    err_t *err);
  /* Log `number` at path read to its end: *end where its last whole record ends, the records
     read added to *records, *old_bytes of a recycled log's earlier life past *end (not a torn
     tail). */
  int (*log_read)(env_t *io, const char *path, uint64_t number, uint64_t *end, uint64_t *records,
                  uint64_t *old_bytes, err_t *err);
} stock_check_format_t;

/* engine_kind_t.check over format f: the database in dir (through io), and with m != 0 the
   filter cache against its tables (made with m, k, seed). Damage goes to damage(arg, ...) and
   st; the cache's is told with "(harmless: ...)" and counted in *cache_damaged. BFH_OK when
   the check ran; BFH_E_BUSY if the database is open (foreign_check_lock); BFH_E_INVALID for a
   directory that holds no database of f, or another engine's; BFH_E_IO, BFH_E_NOMEM. */
int stock_check_dir(const stock_check_format_t *f, env_t *io, const char *dir, uint64_t m,
                    uint32_t k, uint64_t seed, engine_damage_fn damage, void *arg,
                    engine_check_stats_t *st, uint64_t *cache_damaged, err_t *err);

/* What the library's open would pass over without a word, checked before it: CURRENT (with
   f->lost_current, a database that lost it), the MANIFEST it names, and every live log read
   to its end. BFH_OK also for a directory without CURRENT (a new database); BFH_E_CORRUPT
   naming the file and offset; BFH_E_UNSUPPORTED, BFH_E_IO, BFH_E_NOMEM. */
int stock_check_precheck(const stock_check_format_t *f, env_t *io, const char *dir, err_t *err);

/* Whether dir holds what only a database has: a table, a log or a MANIFEST. */
int stock_check_has_files(env_t *io, const char *dir);

/* bfh_tables: table `number` of the database in dir read whole into info (entries, smallest
   and largest user key: malloc'd, the caller frees them whatever the result). BFH_NOT_FOUND
   when the table is gone; BFH_E_CORRUPT, BFH_E_IO, BFH_E_NOMEM with the table named. */
int stock_check_describe(const stock_check_format_t *f, env_t *io, const char *dir, uint64_t number,
                         bfh_table_info *info, err_t *err);
/* engine_kind_t.describe of an open read-write engine e (a stock_rw_t): stock_check_describe
   of its directory, a table gone being damage (the view pins the version it is in). */
int stock_check_describe_open(const stock_check_format_t *f, engine_t *e, uint64_t number,
                              bfh_table_info *info, err_t *err);

#endif

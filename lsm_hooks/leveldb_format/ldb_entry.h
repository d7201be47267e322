/* ldb_entry_t: one entry decoded from a LevelDB file (table or log), as the readers
 * leveldb_format/ldb_table.h and leveldb_format/ldb_log.h hand it to their visitors.
 *
 * The pointers are borrowed: they are valid only during the visitor call.
 */
#ifndef BFH_LSM_HOOKS_LEVELDB_ENTRY_H
#define BFH_LSM_HOOKS_LEVELDB_ENTRY_H

#include <stddef.h>
#include <stdint.h>

/* LevelDB's ValueType (db/dbformat.h). */
#define LDB_TYPE_DELETION 0
#define LDB_TYPE_VALUE 1
#define LDB_MAX_SEQUENCE ((1ull << 56) - 1)

typedef struct ldb_entry {
  const uint8_t *key; /* user key */
  size_t key_len;
  const uint8_t *val; /* empty for deletions */
  size_t val_len;
  uint64_t seq;
  int type; /* LDB_TYPE_VALUE or LDB_TYPE_DELETION */
} ldb_entry_t;

/* Visitor: return 0 to go on, nonzero to stop the read early (the read then returns BFH_OK). */
typedef int (*ldb_visit_fn)(void *arg, const ldb_entry_t *e);

/* Counters of one or more reads (added to, never reset by the readers). */
typedef struct ldb_read_stats {
  uint64_t entries;    /* entries handed to the visitor */
  uint64_t bytes_read; /* file bytes read */
  uint64_t blocks;     /* table blocks or log records decoded */
} ldb_read_stats_t;

#endif

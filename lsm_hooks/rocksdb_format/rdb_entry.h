/* rdb_entry_t: one entry decoded from a RocksDB table file, as the reader
 * rocksdb_format/rdb_table.h hands it to its visitor.
 *
 * The pointers are borrowed: they are valid only during the visitor call.
 */
#ifndef BFH_LSM_HOOKS_ROCKSDB_ENTRY_H
#define BFH_LSM_HOOKS_ROCKSDB_ENTRY_H

#include <stddef.h>
#include <stdint.h>

/* RocksDB's ValueType (the low byte of an internal key's tag), those a table can hold. A type
   outside this list is reported as damage, never guessed at. */
#define RDB_TYPE_DELETION 0x0
#define RDB_TYPE_VALUE 0x1
#define RDB_TYPE_MERGE 0x2 /* a merge operand: val is the operand */
#define RDB_TYPE_SINGLE_DELETION 0x7
#define RDB_TYPE_RANGE_DELETION                                                               \
  0xf                                         /* only in the range-deletion block: key is the \
                                                 begin user key, val the end user key */
#define RDB_TYPE_BLOB_INDEX 0x11              /* val is a reference into a blob file */
#define RDB_TYPE_DELETION_WITH_TIMESTAMP 0x14 /* user-defined timestamps */
#define RDB_TYPE_WIDE_COLUMN_ENTITY 0x16      /* val is a wide-column entity */
#define RDB_MAX_SEQUENCE ((1ull << 56) - 1)

typedef struct rdb_entry {
  const uint8_t *key; /* user key */
  size_t key_len;
  const uint8_t *val; /* empty for deletions */
  size_t val_len;
  uint64_t seq;
  int type; /* RDB_TYPE_* */
} rdb_entry_t;

/* Visitor: return 0 to go on, nonzero to stop the read early (the read then returns BFH_OK). */
typedef int (*rdb_visit_fn)(void *arg, const rdb_entry_t *e);

/* Counters of one or more reads (added to, never reset by the readers). The per-type counts
   let a caller refuse what it cannot answer (merge operands without the operator, blob
   references) without a visitor of its own. */
typedef struct rdb_read_stats {
  uint64_t entries;    /* entries handed to the visitor (range deletions included) */
  uint64_t bytes_read; /* file bytes read */
  uint64_t blocks;     /* data blocks decoded */
  uint64_t merges;     /* entries of type RDB_TYPE_MERGE */
  uint64_t blob_refs;  /* entries of type RDB_TYPE_BLOB_INDEX */
  uint64_t range_dels; /* range tombstones (RDB_TYPE_RANGE_DELETION) */
  uint64_t other;      /* wide-column entities and deletions with a timestamp */
} rdb_read_stats_t;

#endif

/* The reader of RocksDB's "rocksdb.sstables" property text: the version's DebugString, one
 * line per live table of the column family asked, under a header per level:
 *
 *   --- level 0 --- version# 5 ---
 *    13:1042[11 .. 15]['6B32' seq:11, type:1 .. '6B33' seq:15, type:1](0)
 *
 * that is " NUMBER:SIZE[SMALLEST_SEQ .. LARGEST_SEQ][keys](...)", numbers in decimal. The C
 * API's live-file list (rocksdb_livefiles) gives no sequence numbers; this text does. It is
 * informational, so a line of another shape is skipped, never an error: a table it does not
 * name simply has no bound.
 */
#ifndef BFH_LSM_HOOKS_RDB_SSTABLES_H
#define BFH_LSM_HOOKS_RDB_SSTABLES_H

#include <stdint.h>

/* Calls fn(arg, number, largest_seq) for every table line of text (NUL-terminated; may be
   NULL: nothing), in the order listed. Returns the lines reported. */
uint64_t rdb_sstables_bounds(const char *text,
                             void (*fn)(void *arg, uint64_t number, uint64_t largest_seq),
                             void *arg);

#endif

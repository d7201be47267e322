/* ldb_sstables: the live table list of a LevelDB database, parsed from the text of
 * leveldb_property_value(db, "leveldb.sstables") (LevelDB 1.23 Version::DebugString):
 *
 *   --- level 0 ---
 *    20:1273633['k0000b768660cf012' @ 203441 : 1 .. 'k7fff23492b54ce15' @ 218920 : 1]
 *   --- level 1 ---
 *   ...
 *
 * One line per file: ' ' number ':' size '[' smallest .. largest ']'. User keys are escaped
 * (bytes outside ' '..'~' become \xNN), so a newline never occurs inside a line; only the
 * number and size at the start of each line are read.
 */
#ifndef BFH_LSM_HOOKS_LEVELDB_SSTABLES_H
#define BFH_LSM_HOOKS_LEVELDB_SSTABLES_H

#include <stddef.h>
#include <stdint.h>

#include "util/err.h"

/* LevelDB 1.23's config::kNumLevels: a level outside 0..6 is not LevelDB's text. */
#define LDB_SSTABLES_LEVELS 7

typedef struct ldb_sstable {
  int level;
  uint64_t number;
  uint64_t size;
} ldb_sstable_t;

/* Parses text into *out (malloc'd array, client frees with free(); NULL when empty) and
   *n, in the order listed (level by level). BFH_E_CORRUPT for text that does not follow
   the format, a level outside 0..LDB_SSTABLES_LEVELS - 1 included (with the line number);
   BFH_E_NOMEM. */
int ldb_sstables_parse(const char *text, ldb_sstable_t **out, size_t *n, err_t *err);

#endif

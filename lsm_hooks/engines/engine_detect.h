/* engine_detect: which engine wrote a database directory, from the files it holds, so that
 * opening it with another engine is refused (BFH_E_INVALID naming the right one) before that
 * engine writes anything there.
 *
 * The marks, checked in this order:
 *   bfh's own engine  an IDENTITY file that starts with LSM_IDENTITY_MAGIC (lsm/filename.h)
 *   the tables        the magic number that ends each of the newest (up to 8) table files,
 *                     NNNNNN.sst or .ldb alike: the first known one names the engine (LevelDB's
 *                     magic beside an IDENTITY that is not bfh's is RocksDB's format_version 0)
 *   RocksDB           an OPTIONS-NNNNNN file (RocksDB writes one at every open; LevelDB and bfh
 *                     never do), or an IDENTITY file of other contents (RocksDB's is a UUID in
 *                     text)
 *   LevelDB           a CURRENT file without either of the above
 * A stray OPTIONS file beside LevelDB's tables (a RocksDB program that opened the directory)
 * leaves it LevelDB's.
 * A directory with none of them (empty, or holding other files) is ENGINE_DIR_NONE: each engine
 * says for itself what it makes of it. engine_detect_special_files tells the stock engines'
 * opens whether the directory holds anything but regular files and directories.
 */
#ifndef BFH_LSM_HOOKS_ENGINE_DETECT_H
#define BFH_LSM_HOOKS_ENGINE_DETECT_H

#include <stdint.h>

#include "util/err.h"

typedef enum engine_dir_kind {
  ENGINE_DIR_NONE = 0, /* no engine's mark (or path is not a readable directory) */
  ENGINE_DIR_LSM,
  ENGINE_DIR_LEVELDB,
  ENGINE_DIR_ROCKSDB,
} engine_dir_kind_t;

/* The engine whose marks path holds. Reads only; never fails (an unreadable file counts as
   absent). */
engine_dir_kind_t engine_detect_dir(const char *path);

/* The magic number that ends the table file at path (0 if it cannot be read, or path is not a
   regular file: it is opened without blocking, so that a FIFO in its place cannot hang). */
uint64_t engine_detect_table_magic(const char *path);

/* The engine name of a kind, as --engine takes it ("lsm", "leveldb", "rocksdb"; NULL for
   ENGINE_DIR_NONE). */
const char *engine_detect_name(engine_dir_kind_t k);

/* BFH_OK when path holds no mark of an engine other than `want`; else BFH_E_INVALID with a
   message naming the engine that wrote it ("/db is a RocksDB database (it has OPTIONS-000007);
   open it with the rocksdb engine (--engine rocksdb); nothing was written"). */
int engine_detect_check(const char *path, engine_dir_kind_t want, err_t *err);

/* BFH_OK when every entry of the directory path is a regular file or a directory (symlinks
   followed; a dangling one is left to the engine); else BFH_E_CORRUPT naming the first other
   one ("/db/000005.ldb: not a regular file (a FIFO): ..."). Stock LevelDB and RocksDB open
   their files without O_NONBLOCK and would wait forever on a FIFO in place of one (util/env.h
   says how bfh's own readers refuse it): their engines check this before handing them the
   directory. Reads only. */
int engine_detect_special_files(const char *path, err_t *err);

#endif

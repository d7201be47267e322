/* persisted_index_t: the lean value index of a database stored in one file, BFH-INDEX
 * (doc/format.md "Persisted value index", doc/search.md "Open cost"), so that a new process
 * answers its first search through the index without reading every table's filters. The file
 * lives in a directory the engine names: the own engine's database directory, the read-only
 * LevelDB engine's index directory (never a LevelDB database's own directory).
 *
 * The file holds what AUTO searches, in the form it searches it: each fold group's bit-sliced
 * rows as they lie in memory (hierarchy/sliced.h), cut into chunks of about 4 KiB that each
 * carry a CRC32C, and each table's value-to-block map head (value_block_map.h, which carries
 * its own CRC). A directory (checked by its CRC when the file is opened) binds every table
 * to its number, size and stamp (a digest of the table file's inode, size, times and footer):
 * a table made again under the same number is another file and does not bind. Whose stamps
 * they are is the file's binding (persisted_index_binding_t.kind, in its header): the own
 * engine's (persisted_index_table_stamp) or LevelDB's (leaf_cache_stamp, doc/format.md "Table
 * stamp"); a file of another binding is never opened. The engine computes each live table's
 * stamp and binds it (persisted_index_bind); a table that leaves the live set, or whose number
 * comes to name another file, is unbound (persisted_index_unbind).
 *
 * Reading: a search asks only for the tables the value index has no leaf for yet. It reads
 * the k rows it needs of each group, a chunk at a time, each chunk checked by its CRC the
 * first time a probe touches it and kept in memory from then on. A table the file does not
 * cover (newer than the file, or whose binding failed) is left as it was (read through its
 * own filters); a table of the file that is not live is never asked for. A damaged chunk is
 * counted (block_index_count_damaged) and every table of its group is then selected ("maybe"):
 * never a false negative. A damaged head is counted and its table is read whole. A map's
 * chunks are read where the engine keeps them: the own engine's from the table (the search's
 * block_map_io), LevelDB's from the table's sidecar cache file (the binding's open_map hook
 * makes the map from that file, bound by the same stamp, and checks its head against the
 * file's).
 *
 * Writing: persisted_index_write, from a handle that wrote (the own engine at close; the
 * read-only LevelDB engine at close when it read tables itself or its loader had every leaf
 * in): the file is written as BFH-INDEX.tmp, synced, renamed over BFH-INDEX and the directory
 * synced, so that a crash leaves the old file or the new one.
 *
 * Thread-safety: after bind, select and head may run concurrently (a mutex guards the chunk
 * cache); unbind needs the caller's exclusion against select (value_index's lock).
 */
#ifndef BFH_LSM_HOOKS_INDEX_PERSISTED_INDEX_H
#define BFH_LSM_HOOKS_INDEX_PERSISTED_INDEX_H

#include <stddef.h>
#include <stdint.h>

#include "filters/hash.h"
#include "index/block_index.h"
#include "index/value_index.h"
#include "util/env.h"
#include "util/err.h"

#define PERSISTED_INDEX_FILE "BFH-INDEX"
#define PERSISTED_INDEX_CHUNK_BYTES 4096 /* rows per chunk: this over a row's bytes */

typedef struct persisted_index persisted_index_t;

/* Whose stamps a file holds (its header's binding field; 0 in files of before the field). */
enum {
  PERSISTED_INDEX_OWN_TABLES = 0,     /* the own engine's: persisted_index_table_stamp */
  PERSISTED_INDEX_LEVELDB_TABLES = 1, /* LevelDB's: leaf_cache_stamp (leaf_cache.h) */
};

/* Makes the map of a bound table from its head in the file (head[0, head_len), borrowed, not
   checked yet), with the table's number, size and stamp as the file binds them. On BFH_OK *out
   is new, owned by the caller. BFH_E_CORRUPT is counted as damage; any error leaves the table
   without a map (read whole). */
typedef int (*persisted_index_map_fn)(void *arg, uint64_t number, uint64_t size, uint64_t stamp,
                                      const uint8_t *head, size_t head_len,
                                      value_block_map_t **out, err_t *err);

/* How an engine identifies its tables and makes their maps. */
typedef struct persisted_index_binding {
  uint32_t kind;                /* PERSISTED_INDEX_*_TABLES */
  persisted_index_map_fn open_map; /* NULL: value_block_map_open of the head (the own engine) */
  void *arg;                    /* open_map's (borrowed: it must outlive the index) */
} persisted_index_binding_t;

/* The stamp of the table file at path: a digest of its dev, inode, size, mtime, ctime and
   its last 64 bytes (the own engine's footer). Never 0 on BFH_OK. An error if the file
   cannot be opened, stat-ed or read. */
int persisted_index_table_stamp(env_t *io, const char *path, uint64_t *stamp, err_t *err);
/* persisted_index_table_stamp of a table file already open (f, borrowed; path names it in
   messages), as its open found it (env_rfile_stamp) and one pread of its footer: a reader
   that holds its tables open stamps them without opening them again. */
int persisted_index_rfile_stamp(env_rfile_t *f, const char *path, uint64_t *stamp, err_t *err);

/* ---- Writing -------------------------------------------------------------------------- */
typedef struct persisted_index_table {
  uint64_t number, size, stamp;
  const uint8_t *head; /* the serialized map head (borrowed) */
  size_t head_len;
} persisted_index_table_t;

/* Writes <dir>/BFH-INDEX from vi's fold groups (lean layout only: BFH_E_INVALID otherwise)
   for the tables t[0, n) (any order) that have a leaf in vi; the others are left out. Applies
   vi's queued operations first. *written (may be NULL): the tables the file covers. */
int persisted_index_write(env_t *io, const char *dir, value_index_t *vi,
                          const persisted_index_table_t *t, size_t n, size_t *written, err_t *err);
/* persisted_index_write of a file of binding `kind` (PERSISTED_INDEX_*_TABLES): the stamps in
   t are of that kind. */
int persisted_index_write_kind(env_t *io, const char *dir, uint32_t kind, value_index_t *vi,
                               const persisted_index_table_t *t, size_t n, size_t *written,
                               err_t *err);

/* ---- Reading -------------------------------------------------------------------------- */
/* Opens <dir>/BFH-INDEX and checks its header and directory. BFH_NOT_FOUND: no file (no
   message); BFH_E_INVALID: made under other parameters than p (m, k, seed, lean bits);
   BFH_E_CORRUPT: damaged or truncated (message names the file and offset); BFH_E_IO,
   BFH_E_NOMEM. On BFH_OK *out is new, owned by the caller, and covers no table until bound. */
int persisted_index_open(env_t *io, const char *dir, const value_index_params_t *p,
                         persisted_index_t **out, err_t *err);
/* persisted_index_open of a file of binding b->kind (b copied; NULL: the own engine's):
   BFH_E_INVALID for a file of another binding. */
int persisted_index_open_bound(env_t *io, const char *dir, const value_index_params_t *p,
                               const persisted_index_binding_t *b, persisted_index_t **out,
                               err_t *err);
/* Parses a whole file held in memory (the fuzz target): as open. data must outlive *out. */
int persisted_index_open_mem(const uint8_t *data, size_t len, const value_index_params_t *p,
                             persisted_index_t **out, err_t *err);
void persisted_index_destroy(persisted_index_t *x); /* NULL allowed */

/* Binds table `number` if the file has it with this size and stamp: 1 bound (the file then
   answers for it), 0 not. Before any select. */
int persisted_index_bind(persisted_index_t *x, uint64_t number, uint64_t size, uint64_t stamp);
/* The file no longer answers for table `number` (it left the live set, or its number names
   another file now): 1 if it did. Not concurrently with select (see Thread-safety). */
int persisted_index_unbind(persisted_index_t *x, uint64_t number);
/* Does the file answer for table `number` (bound)? */
int persisted_index_covers(const persisted_index_t *x, uint64_t number);
size_t persisted_index_bound(const persisted_index_t *x);   /* of those, bound */

/* For every i with ask[i] set whose table the file covers: scan[i] = whether the file's
   folded leaf says maybe for p (1 too when the chunk it needs is damaged: counted in bi).
   Others are left as they are. For a covered table selected that has no map in bi yet,
   puts its map head from the file into bi (a damaged head is counted; the table is then
   read whole). *answered (may be NULL): the tables it answered for. */
void persisted_index_select(persisted_index_t *x, const probe_t *p, const uint64_t *numbers,
                            size_t n, const uint8_t *ask, uint8_t *scan, block_index_t *bi,
                            size_t *answered);

typedef struct persisted_index_stats {
  uint64_t chunks_checked; /* chunks read and checked by their CRC */
  uint64_t chunks_damaged; /* of those, damaged */
  uint64_t heads_read;     /* map heads put into the block index */
  uint64_t heads_damaged;
} persisted_index_stats_t;
void persisted_index_get_stats(persisted_index_t *x, persisted_index_stats_t *st);
/* Bytes x holds in memory: its directory, records and the chunks read so far. */
uint64_t persisted_index_memory(persisted_index_t *x);

#endif

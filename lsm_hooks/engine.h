/* engine_t: what the public API and non-key search need from a key-value engine.
 *
 * Two implementations: engine_lsm.c (bfh's own LSM, lsm/db.h, with the value-filter
 * table-build hook) and leveldb/engine.c (stock LevelDB through its C API, with the
 * emulated hook of doc/leveldb.md). An engine reports the tables it makes live and drops to
 * the index_sync_t given at open (index_sync.h), which alone writes the value index; the
 * engine never touches the index. search.c runs the paper's Algorithms 1-3 over any engine.
 *
 * Adding an engine is adding its file and a row to the table in engines.c.
 */
#ifndef BFH_LSM_HOOKS_ENGINE_H
#define BFH_LSM_HOOKS_ENGINE_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "bfh.h"
#include "filters/block_filter.h"
#include "lsm_hooks/index_sync.h"
#include "util/err.h"

typedef struct engine engine_t;
typedef struct engine_view engine_view_t; /* engine-specific */

typedef struct engine_table {
  uint64_t number; /* file number: the value index's leaf id */
  uint64_t size;   /* bytes */
  int level;
} engine_table_t;

/* Called for each entry whose value equals the value searched; return nonzero to stop. */
typedef int (*engine_match_fn)(void *arg, const void *key, size_t key_len);

typedef struct engine_scan_stats {
  uint64_t entries;    /* entries decoded */
  uint64_t bytes_read; /* file bytes read */
} engine_scan_stats_t;

typedef struct engine_ops {
  const char *name;
  /* Frees e (not its index_sync). A failure's message (naming the file) goes to err (may be
     NULL). */
  int (*close)(engine_t *e, err_t *err);
  int (*put)(engine_t *e, const void *key, size_t key_len, const void *val, size_t val_len,
             err_t *err);
  int (*del)(engine_t *e, const void *key, size_t key_len, err_t *err);
  /* On BFH_OK *val is malloc'd (non-NULL even if empty). BFH_NOT_FOUND if no live value. */
  int (*get)(engine_t *e, const void *key, size_t key_len, void **val, size_t *val_len, err_t *err);
  int (*flush)(engine_t *e, err_t *err);
  /* Pins a consistent view of the live tables and memtables: every table it lists stays
     readable until release, and every entry acknowledged before the call is in a listed
     table or in the memtables the view scans. It reads no table: a table the value index
     has no leaf for yet is scanned by the search. On BFH_OK, release *view with
     view_release. */
  int (*view_acquire)(engine_t *e, engine_view_t **view, err_t *err);
  void (*view_release)(engine_t *e, engine_view_t *view);
  /* The view's live tables (array owned by the view). */
  size_t (*view_tables)(const engine_view_t *view, const engine_table_t **tables);
  /* Calls fn for every value entry of table `number` (in the view) whose value equals val;
     reads only that table. */
  int (*scan_table)(engine_t *e, engine_view_t *view, uint64_t number, const void *val,
                    size_t val_len, engine_match_fn fn, void *arg, engine_scan_stats_t *st,
                    err_t *err);
  /* The same over the view's memtables (for LevelDB: its live log files). */
  int (*scan_memtables)(engine_t *e, engine_view_t *view, const void *val, size_t val_len,
                        engine_match_fn fn, void *arg, engine_scan_stats_t *st, err_t *err);
  /* scan_table over the data blocks refs[0, n) of table `number` only (from its block
     filter, filters/block_filter.h). BFH_E_CORRUPT when a ref is not a data block of the
     table, or a block is damaged (the message says which). */
  int (*scan_blocks)(engine_t *e, engine_view_t *view, uint64_t number, const block_ref_t *refs,
                     size_t n, const void *val, size_t val_len, engine_match_fn fn, void *arg,
                     engine_scan_stats_t *st, err_t *err);
  /* scan_memtables through the memtables' value index: the same entries, found by a hash
     lookup instead of a scan (st->entries counts the entries compared). hash is the search's
     one hash of val, bfh_value_hash(val, val_len, seed) under the seed of the handle's value
     filters: the index hashes nothing again. */
  int (*find_memtables)(engine_t *e, engine_view_t *view, const void *val, size_t val_len,
                        uint64_t hash, engine_match_fn fn, void *arg, engine_scan_stats_t *st,
                        err_t *err);
} engine_ops_t;

/* The operations table of an engine whose file names its static functions e_close, e_put,
   e_del, e_get, e_flush, e_view_acquire, e_view_release, e_view_tables, e_scan_table,
   e_scan_memtables, e_scan_blocks and e_find_memtables:
   static const engine_ops_t ops = ENGINE_OPS("name"); */
#define ENGINE_OPS(engine_name)                                                                   \
  {                                                                                               \
    .name = engine_name, .close = e_close, .put = e_put, .del = e_del, .get = e_get,              \
    .flush = e_flush, .view_acquire = e_view_acquire, .view_release = e_view_release,             \
    .view_tables = e_view_tables, .scan_table = e_scan_table, .scan_memtables = e_scan_memtables, \
    .scan_blocks = e_scan_blocks, .find_memtables = e_find_memtables                              \
  }

struct engine {
  const engine_ops_t *ops;
};

/* Is table `number` in tables[0, n) (sorted by number)? */
static inline int engine_tables_contain(const engine_table_t *tables, size_t n, uint64_t number) {
  size_t lo = 0, hi = n;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (tables[mid].number < number)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo < n && tables[lo].number == number;
}

struct lsm_io;

/* An engine kind: how to open and repair its databases. */
typedef struct engine_kind {
  bfh_engine id;
  const char *name;
  /* On BFH_OK *e is new (close with e->ops->close). io: bfh's own file accesses (NULL: the
     real I/O layer; tests inject faults). sync is borrowed and must outlive the engine;
     NULL when value filters are off. Messages name the directory. */
  int (*open)(const char *path, const bfh_options *opt, struct lsm_io *io, index_sync_t *sync,
              engine_t **e, err_t *err);
  /* Repairs the closed database in path (bfh_repair; rep is zeroed by the caller). */
  int (*repair)(const char *path, const bfh_options *opt, bfh_repair_report *rep, err_t *err);
} engine_kind_t;

/* The kind of engine id, or NULL for an unknown id. */
const engine_kind_t *engine_kind(bfh_engine id);

/* Does an entry (type, value) of a table or memtable match the value searched for? Values
   match when they are the same bytes; deletions never match. */
static inline int engine_value_matches(int is_value, const void *val, size_t val_len,
                                       const void *want, size_t want_len) {
  return is_value && val_len == want_len && (val_len == 0 || memcmp(val, want, val_len) == 0);
}

#endif

/* engine_t: what the public API and non-key search need from a key-value engine.
 *
 * Two implementations: engine_lsm.c (bfh's own LSM, lsm/db.h, with the value-filter
 * table-build hook) and engine_leveldb.c (stock LevelDB through its C API, with the emulated
 * hook of doc/leveldb.md). Both keep the value index given at open in step with
 * their live tables. search.c runs the paper's Algorithms 1-3 over any engine.
 */
#ifndef BFH_LSM_HOOKS_ENGINE_H
#define BFH_LSM_HOOKS_ENGINE_H

#include <stddef.h>
#include <stdint.h>

#include "bfh.h"
#include "lsm_hooks/value_index.h"
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
  int (*close)(engine_t *e); /* frees e (not the value index) */
  int (*put)(engine_t *e, const void *key, size_t key_len, const void *val, size_t val_len,
             err_t *err);
  int (*del)(engine_t *e, const void *key, size_t key_len, err_t *err);
  /* On BFH_OK *val is malloc'd (non-NULL even if empty). BFH_NOT_FOUND if no live value. */
  int (*get)(engine_t *e, const void *key, size_t key_len, void **val, size_t *val_len, err_t *err);
  int (*flush)(engine_t *e, err_t *err);
  /* Brings the value index up to date with the live tables and pins a consistent view of
     the live tables and memtables: every table it lists stays readable until release, and
     every entry acknowledged before the call is in a listed table or in the memtables the
     view scans. On BFH_OK, release *view with view_release. */
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
} engine_ops_t;

struct engine {
  const engine_ops_t *ops;
  value_index_t *index; /* borrowed from the caller of the engine's open */
};

/* Opening. On BFH_OK *e is new (close with e->ops->close). index is borrowed and must outlive
   the engine; NULL when value filters are off. Messages name the directory. */
int engine_lsm_open(const char *path, const bfh_options *opt, value_index_t *index, engine_t **e,
                    err_t *err);
int engine_leveldb_open(const char *path, const bfh_options *opt, value_index_t *index,
                        engine_t **e, err_t *err);

#endif

/* The read-only LevelDB engine (bfh_options.read_only): searches a LevelDB database that
 * another program holds open, without LevelDB and without writing into its directory.
 *
 * It never calls leveldb_open (which would take the LOCK, rotate the LOG, write a MANIFEST
 * and turn the logs into a table). It reads, with bfh's own readers: CURRENT, the MANIFEST it
 * names (version_edit.h: replayed to the live file set, then read on from where it stopped),
 * the live tables (table.h) and the live logs (log.h). The value filters of the tables live in
 * memory, and with an index directory also in <index_dir>/bfh-filters/ (leaf_cache.h) next to
 * <index_dir>/BFH-PARAMS (db_params.h). The consistency argument is at the top of readonly.c.
 */
#ifndef BFH_LSM_HOOKS_LEVELDB_READONLY_H
#define BFH_LSM_HOOKS_LEVELDB_READONLY_H

#include <stdint.h>

#include "bfh.h"
#include "lsm_hooks/engines/engine.h"
#include "index/index_sync.h"
#include "lsm_hooks/engines/stock/stock_ro.h"
#include "util/err.h"

struct env;

/* Opens the LevelDB database in path read-only. opt->index_dir (may be NULL: memory only;
   REQUIRES: outside path, as bfh_open checks) is created if missing (with its parents) and
   gets the filter cache. io: bfh's file
   accesses (NULL: the real I/O layer); sync: borrowed, NULL with value filters off. On
   BFH_OK *e is new (close with e->ops->close). BFH_E_INVALID if path holds no LevelDB
   database (no CURRENT) or holds a bfh own-engine database; nothing is created in path. */
int engine_leveldb_ro_open(const char *path, const bfh_options *opt, struct env *io,
                           index_sync_t *sync, engine_t **e, err_t *err);

#endif

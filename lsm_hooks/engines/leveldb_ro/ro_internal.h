/* What the files of the read-only LevelDB engine share (internal to
 * lsm_hooks/engines/leveldb_ro/; the engine's interface is readonly.h). The engine is the
 * read-only stock core (stock/stock_ro.h) over LevelDB's format:
 *
 *   readonly.c      the design (the refresh's consistency argument, pins, a replaced
 *                   database), the format interface over leveldb_format/, the open, the
 *                   engine_ops table and the test hooks
 *   ro_get.c        point lookups in a state
 *   ro_iter.c       ordered iteration over a state read into memory
 *   ro_persisted.c  the persisted index in the index directory
 */
#ifndef BFH_LSM_HOOKS_LEVELDB_RO_INTERNAL_H
#define BFH_LSM_HOOKS_LEVELDB_RO_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "lsm_hooks/engines/leveldb/adapter.h"
#include "lsm_hooks/engines/leveldb_ro/readonly.h"
#include "lsm_hooks/engines/stock/stock_ro.h"
#include "lsm_hooks/leveldb_format/ldb_entry.h"
#include "lsm_hooks/leveldb_format/ldb_version_edit.h"

typedef struct engine_ro {
  stock_ro_t ro;
  ldb_version_t version; /* guarded by ro.mu */
  /* The persisted index (ro_persisted.c): the tables it bound at open (sorted, owned), and
     whether it is attached to the value index. */
  uint64_t *bound;
  size_t nbound;
  int attached;
} engine_ro_t;

/* A state: the core's, and its copy of the version. */
typedef struct ro_state {
  stock_ro_state_t base;
  ldb_version_t version;
} ro_state_t;

/* The stamp of table `number` (index_sync_stamp: an fstat of its file and its 48-byte footer,
   in place of a tag, which reads every page of the table; 0: too fresh to stamp). */
int ro_table_stamp(engine_ro_t *r, uint64_t number, uint64_t *stamp, err_t *err);
/* At open, after the first refresh: opens <index_dir>/BFH-INDEX, binds it to the live tables
   and attaches it to the value index (a damaged file is counted and left unused). */
void ro_persisted_open(stock_ro_t *r);
/* At close, before the loader stops: writes <index_dir>/BFH-INDEX when it is due (see
   ro_persisted.c) and detaches the file from the value index. */
void ro_persisted_close(stock_ro_t *r);

/* engine_ops_t.get and iter_create (ro_get.c, ro_iter.c). */
int ro_get(engine_t *e, engine_view_t *view, const void *key, size_t key_len, void **val,
           size_t *val_len, err_t *err);
int ro_iter_create(engine_t *e, engine_iter_t **it, err_t *err);

#endif

/* What the files of the read-only LevelDB engine share (internal to
 * lsm_hooks/engines/leveldb_ro/; the engine's interface is readonly.h). The engine is the
 * read-only stock core (stock/stock_ro.h) over LevelDB's format:
 *
 *   readonly.c      the design (the refresh's consistency argument, pins, a replaced
 *                   database), the format interface over leveldb_format/ (with a get's and an
 *                   iterator's read of a table), the table stamp (for the core's persisted
 *                   index), the open and the engine_ops table
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
} engine_ro_t;

/* A state: the core's, and its copy of the version. */
typedef struct ro_state {
  stock_ro_state_t base;
  ldb_version_t version;
} ro_state_t;

#endif

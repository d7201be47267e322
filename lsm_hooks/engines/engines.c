/* The engine kinds bfh can open: one row each (engine.h), and the public names and
 * capabilities of bfh.h (bfh_engine_info) made from them. The only file besides the engines'
 * own that names a bfh_engine value.
 */
#include <pthread.h>
#include <string.h>

#include "lsm_hooks/engines/engine.h"
#include "lsm_hooks/engines/lsm/engine_lsm.h"
#include "lsm_hooks/engines/lsm_ro/lsm_readonly.h"
#include "lsm_hooks/engines/leveldb/ldb_engine.h"
#include "lsm_hooks/engines/rocksdb/rdb_engine.h"
#include "lsm_hooks/engines/stock/stock.h"
#include "lsm_hooks/engines/stock/stock_ro_rows.h"
#include "lsm_hooks/engines/foreign_check.h"

/* engine_kind_t.repair_unlock of every stock row: drops a lock foreign_repair_lock took. */
static void stock_repair_unlock(void *lock) {
  foreign_repair_unlock(lock);
}

static const engine_kind_t kinds[] = {
    {.version = ENGINE_KIND_VERSION,
     .id = BFH_ENGINE_LSM,
     .name = "lsm",
     .row = "lsm",
     .what = "bfh's own leveled LSM engine: value filters built into its tables",
     .caps = ENGINE_CAP_WRITES | ENGINE_CAP_STANDALONE | ENGINE_CAP_REPAIR | ENGINE_CAP_CHECK |
             ENGINE_CAP_ITERATE | ENGINE_CAP_MEMTABLE_INDEX | ENGINE_CAP_OWN |
             ENGINE_CAP_REPAIR_REPORT | ENGINE_CAP_BLOCK_MAPS,
     .open = engine_lsm_open,
     .open_replaying = engine_lsm_open_replay,
     .at_rest = engine_lsm_at_rest,
     .repair_lock = engine_lsm_repair_lock,
     .repair_unlock = engine_lsm_repair_unlock,
     .repair = engine_lsm_repair,
     .check = engine_lsm_check,
     .describe = engine_lsm_describe},
    {.version = ENGINE_KIND_VERSION,
     .id = BFH_ENGINE_LSM,
     .name = "lsm",
     .row = "lsm-readonly",
     .what = "a live bfh database read beside its writer: no lock, nothing written",
     .caps = ENGINE_CAP_READ_ONLY | ENGINE_CAP_REPAIR | ENGINE_CAP_CHECK | ENGINE_CAP_ITERATE |
             ENGINE_CAP_MEMTABLE_INDEX | ENGINE_CAP_REPAIR_REPORT | ENGINE_CAP_BLOCK_MAPS |
             ENGINE_CAP_PARAMS_IN_DB,
     .open = engine_lsm_ro_open,
     .repair_lock = engine_lsm_repair_lock,
     .repair_unlock = engine_lsm_repair_unlock,
     .repair = engine_lsm_repair,
     .check = engine_lsm_check,
     .describe = engine_lsm_ro_describe},
    {.version = ENGINE_KIND_VERSION,
     .id = BFH_ENGINE_LEVELDB,
     .name = "leveldb",
     .row = "leveldb",
     .what = "stock LevelDB through its C API, value filters kept beside its tables",
     .caps = ENGINE_CAP_WRITES | ENGINE_CAP_STANDALONE | ENGINE_CAP_REPAIR | ENGINE_CAP_CHECK |
             ENGINE_CAP_ITERATE | ENGINE_CAP_BLOCK_MAPS,
     .open = engine_leveldb_open,
     .at_rest = stock_at_rest_id,
     .repair_lock = engine_leveldb_repair_lock,
     .repair_unlock = stock_repair_unlock,
     .repair = engine_leveldb_repair,
     .check = ldb_verify_check,
     .describe = ldb_verify_describe},
    {.version = ENGINE_KIND_VERSION,
     .id = BFH_ENGINE_LEVELDB,
     .name = "leveldb",
     .row = "leveldb-readonly",
     .what = "a live LevelDB database read without LevelDB: no lock, nothing written",
     .caps = ENGINE_CAP_READ_ONLY | ENGINE_CAP_REPAIR | ENGINE_CAP_CHECK | ENGINE_CAP_ITERATE |
             ENGINE_CAP_BLOCK_MAPS,
     .open = engine_leveldb_ro_open,
     .repair_lock = engine_leveldb_repair_lock,
     .repair_unlock = stock_repair_unlock,
     .repair = engine_leveldb_repair,
     .check = ldb_verify_check,
     .describe = ldb_verify_describe},
    {.version = ENGINE_KIND_VERSION,
     .id = BFH_ENGINE_ROCKSDB,
     .name = "rocksdb",
     .row = "rocksdb",
     .what = "stock RocksDB through its C API (default column family), value filters kept "
             "beside its tables",
     .caps = ENGINE_CAP_WRITES | ENGINE_CAP_STANDALONE | ENGINE_CAP_REPAIR | ENGINE_CAP_CHECK |
             ENGINE_CAP_ITERATE | ENGINE_CAP_COLUMN_FAMILY,
     .open = engine_rocksdb_open,
     .at_rest = stock_at_rest_id,
     .repair_lock = engine_rocksdb_repair_lock,
     .repair_unlock = stock_repair_unlock,
     .repair = engine_rocksdb_repair,
     .families = engine_rocksdb_families,
     .check = rdb_verify_check,
     .describe = rdb_describe},
    {.version = ENGINE_KIND_VERSION,
     .id = BFH_ENGINE_ROCKSDB,
     .name = "rocksdb",
     .row = "rocksdb-readonly",
     .what = "a live RocksDB database read without RocksDB: no lock, nothing written",
     .caps =
         ENGINE_CAP_READ_ONLY | ENGINE_CAP_REPAIR | ENGINE_CAP_ITERATE | ENGINE_CAP_COLUMN_FAMILY,
     .open = engine_rocksdb_ro_open,
     .repair_lock = engine_rocksdb_repair_lock,
     .repair_unlock = stock_repair_unlock,
     .repair = engine_rocksdb_repair,
     .families = engine_rocksdb_families,
     .describe = engine_rocksdb_ro_describe},
};

#define NKINDS (sizeof kinds / sizeof kinds[0])

const engine_kind_t *engine_kind_at(size_t i) {
  return i < NKINDS ? &kinds[i] : NULL;
}

const engine_kind_t *engine_kind_for(bfh_engine id, int read_only) {
  for (size_t i = 0; i < NKINDS; i++)
    if (kinds[i].id == id && !(kinds[i].caps & ENGINE_CAP_READ_ONLY) == !read_only)
      return &kinds[i];
  return NULL;
}

const engine_kind_t *engine_kind(bfh_engine id) {
  const engine_kind_t *k = engine_kind_for(id, 0);
  return k ? k : engine_kind_for(id, 1);
}

const engine_kind_t *engine_kind_find(const char *name) {
  for (size_t i = 0; name && i < NKINDS; i++)
    if (strcmp(kinds[i].name, name) == 0) return &kinds[i];
  return NULL;
}

/* ---- bfh.h: names and capabilities ------------------------------------------------------- */

/* One public entry per engine id: the union of its rows' capabilities. */
static bfh_engine_info infos[NKINDS];
static size_t ninfos;
static pthread_once_t infos_once = PTHREAD_ONCE_INIT;

static unsigned public_caps(unsigned caps) {
  unsigned c = 0;
  if (caps & ENGINE_CAP_WRITES) c |= BFH_ENGINE_CAN_WRITE;
  if (caps & ENGINE_CAP_READ_ONLY) c |= BFH_ENGINE_CAN_READ_ONLY;
  if (caps & ENGINE_CAP_STANDALONE) c |= BFH_ENGINE_CAN_STANDALONE;
  if (caps & ENGINE_CAP_REPAIR) c |= BFH_ENGINE_CAN_REPAIR;
  if (caps & ENGINE_CAP_CHECK) c |= BFH_ENGINE_CAN_CHECK;
  if (caps & ENGINE_CAP_ITERATE) c |= BFH_ENGINE_CAN_ITERATE;
  if (caps & ENGINE_CAP_MEMTABLE_INDEX) c |= BFH_ENGINE_CAN_MEMTABLE_INDEX;
  if (caps & ENGINE_CAP_REPAIR_REPORT) c |= BFH_ENGINE_CAN_REPAIR_REPORT;
  return c;
}

static void infos_make(void) {
  for (size_t i = 0; i < NKINDS; i++) {
    size_t j = 0;
    while (j < ninfos && infos[j].engine != kinds[i].id) j++;
    if (j == ninfos) {
      infos[ninfos++] = (bfh_engine_info){.engine = kinds[i].id,
                                          .name = kinds[i].name,
                                          .description = kinds[i].what};
    }
    infos[j].caps |= public_caps(kinds[i].caps);
  }
}

const bfh_engine_info *bfh_engine_at(size_t i) {
  pthread_once(&infos_once, infos_make);
  return i < ninfos ? &infos[i] : NULL;
}

const bfh_engine_info *bfh_engine_get(bfh_engine engine) {
  const bfh_engine_info *e;
  for (size_t i = 0; (e = bfh_engine_at(i)); i++)
    if (e->engine == engine) return e;
  return NULL;
}

const bfh_engine_info *bfh_engine_find(const char *name) {
  const bfh_engine_info *e;
  for (size_t i = 0; name && (e = bfh_engine_at(i)); i++)
    if (strcmp(e->name, name) == 0) return e;
  return NULL;
}

const char *bfh_engine_name(bfh_engine engine) {
  const bfh_engine_info *e = bfh_engine_get(engine);
  return e ? e->name : NULL;
}

/* The engines bfh can open, by bfh_engine value (engine.h). */
#include "lsm_hooks/engine.h"
#include "lsm_hooks/engine_lsm.h"
#include "lsm_hooks/leveldb/engine.h"

static const engine_kind_t kinds[] = {
    {BFH_ENGINE_LSM, "lsm", engine_lsm_open, engine_lsm_repair},
    {BFH_ENGINE_LEVELDB, "leveldb", engine_leveldb_open, engine_leveldb_repair},
};

const engine_kind_t *engine_kind(bfh_engine id) {
  for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++)
    if (kinds[i].id == id) return &kinds[i];
  return NULL;
}

/* bfh_tables of the RocksDB engine (engine_kind_t.describe): a live table's entries and key
 * range, read from its bytes (the filter facts are added above the engine: api/db_inspect.c).
 */
#include <stdlib.h>
#include <string.h>

#include "bfh.h"
#include "lsm_hooks/engines/rocksdb/rdb_adapter.h"
#include "lsm_hooks/rocksdb_format/rdb_table.h"

/* Data-block entries come in ascending internal key order (range tombstones after them). */
static int visit_range(void *arg, const rdb_entry_t *e) {
  if (e->type == RDB_TYPE_RANGE_DELETION) return 0;
  return stock_key_range_add(arg, e->key, e->key_len);
}

int rdb_describe(engine_t *e, uint64_t number, bfh_table_info *info, err_t *err) {
  engine_rocksdb_t *er = (engine_rocksdb_t *)e;
  int rc = rdb_describe_table(er->rw.io, er->rw.path, number, info, err);
  if (rc == BFH_NOT_FOUND) { /* the view holds file deletions off */
    char *path;
    if ((rc = rdb_table_path(er->rw.path, number, &path, err)) != BFH_OK) return rc;
    rc = err_set(err, BFH_E_CORRUPT, "table %s: missing", path);
    free(path);
  }
  return rc;
}

int rdb_describe_table(env_t *io, const char *dir, uint64_t number, bfh_table_info *info,
                       err_t *err) {
  char *path;
  int rc = rdb_table_path(dir, number, &path, err);
  if (rc != BFH_OK) return rc;
  stock_key_range_t r = {0};
  rc = stock_key_range_give(&r, path, rdb_table_scan(io, path, visit_range, &r, NULL, err), info,
                            err);
  free(path);
  return rc;
}

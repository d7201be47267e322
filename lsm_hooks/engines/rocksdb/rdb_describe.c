/* bfh_tables of the RocksDB engine (engine_kind_t.describe): a live table's entries and key
 * range, read from its bytes (the filter facts are added above the engine: api/db_inspect.c).
 */
#include <stdlib.h>
#include <string.h>

#include "bfh.h"
#include "lsm_hooks/engines/rocksdb/rdb_adapter.h"
#include "lsm_hooks/rocksdb_format/rdb_table.h"

typedef struct key_range {
  uint8_t *smallest, *largest; /* owned */
  size_t smallest_len, largest_len, largest_cap;
  uint64_t entries; /* data-block entries */
  int nomem;
} key_range_t;

/* Data-block entries come in ascending internal key order (range tombstones after them). */
static int visit_range(void *arg, const rdb_entry_t *e) {
  key_range_t *r = arg;
  if (e->type == RDB_TYPE_RANGE_DELETION) return 0;
  r->entries++;
  if (!r->smallest) {
    if (!(r->smallest = malloc(e->key_len ? e->key_len : 1))) return r->nomem = 1;
    memcpy(r->smallest, e->key, e->key_len);
    r->smallest_len = e->key_len;
  }
  if (e->key_len > r->largest_cap) {
    uint8_t *p = realloc(r->largest, e->key_len);
    if (!p) return r->nomem = 1;
    r->largest = p;
    r->largest_cap = e->key_len;
  }
  memcpy(r->largest, e->key, e->key_len);
  r->largest_len = e->key_len;
  return 0;
}

int rdb_describe(engine_t *e, uint64_t number, bfh_table_info *info, err_t *err) {
  engine_rocksdb_t *er = (engine_rocksdb_t *)e;
  int rc = rdb_describe_table(er->io, er->path, number, info, err);
  if (rc == BFH_NOT_FOUND) { /* the view holds file deletions off */
    char *path;
    if ((rc = rdb_table_path(er->path, number, &path, err)) != BFH_OK) return rc;
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
  key_range_t r = {0};
  rc = rdb_table_scan(io, path, visit_range, &r, NULL, err);
  if (rc == BFH_OK && r.nomem) rc = err_set(err, BFH_E_NOMEM, "table %s: out of memory", path);
  free(path);
  info->entries = r.entries;
  info->smallest = r.smallest;
  info->smallest_len = r.smallest_len;
  info->largest = r.largest;
  info->largest_len = r.largest_len;
  return rc;
}

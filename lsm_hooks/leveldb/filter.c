/* ldb_filter: the value filter of a LevelDB table; see leveldb/filter.h. */
#include "lsm_hooks/leveldb/filter.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bfh.h"
#include "lsm_hooks/leveldb/table.h"
#include "util/coding.h"
#include "util/crc32c.h"

static int add_value(void *arg, const ldb_entry_t *e) {
  if (e->type == LDB_TYPE_VALUE) value_filter_add(arg, e->val, e->val_len);
  return 0;
}

int ldb_filter_build(lsm_io_t *io, const char *path, uint64_t m, uint32_t k, uint64_t seed,
                     value_filter_t **out, ldb_read_stats_t *st, err_t *err) {
  value_filter_t *f = value_filter_create(m, k, seed);
  if (!f) return err_set(err, BFH_E_NOMEM, "table %s: cannot make a value filter", path);
  int rc = ldb_table_scan(io, path, add_value, f, st, err);
  if (rc != BFH_OK) {
    value_filter_destroy(f);
    return rc;
  }
  *out = f;
  return BFH_OK;
}

/* stock_at_rest_id (stock.h): what a closed LevelDB or RocksDB database is, as its files say
 * (at_rest.h says why such an identity holds).
 *
 * The data files of both libraries are CURRENT, the MANIFESTs, the logs, the tables and the
 * blob files. The other files (LOCK, LOG, LOG.old.*, OPTIONS-*, IDENTITY, bfh's own) are left
 * out: they change without a write, or never.
 */
#include <stdint.h>
#include <string.h>

#include "lsm_hooks/engines/at_rest.h"
#include "lsm_hooks/engines/stock/stock.h"

static int data_file(const char *name) {
  static const char *const suffixes[] = {"log", "ldb", "sst", "blob"};
  uint64_t num;
  if (strcmp(name, "CURRENT") == 0 || strncmp(name, "MANIFEST-", 9) == 0) return 1;
  for (size_t i = 0; i < sizeof suffixes / sizeof suffixes[0]; i++)
    if (stock_file_number(name, suffixes[i], &num)) return 1;
  return 0;
}

int stock_at_rest_id(const char *path, env_t *io, char **id, err_t *err) {
  return at_rest_id(path, io, data_file, id, err);
}

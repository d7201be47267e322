/* Fuzz target: the LevelDB engine's check before leveldb_open (ldb_precheck_dir in
 * lsm_hooks/engines/leveldb/ldb_engine.h, over stock/stock_check.c): CURRENT, every record and
 * version edit of the MANIFEST it names, and the logs it would replay.
 *
 * The input is a whole LevelDB MANIFEST. It is written as MANIFEST-000002 into a scratch
 * directory whose CURRENT names it, next to an empty 000003.log, and checked twice: as given,
 * and with the CRC of every log record recomputed (fuzz_fix_log_crcs: LevelDB's MANIFEST has
 * the same framing as bfh's logs), so that the version edits behind the checksums are parsed.
 * The check only reads: any status is fine, a crash or a sanitizer report is not.
 */
#include "fuzz_util.h"

#include "util/env.h"
#include "lsm_hooks/engines/leveldb/ldb_engine.h"

static void check(const uint8_t *data, size_t size) {
  char path[512];
  fuzz_write_file("CURRENT", (const uint8_t *)"MANIFEST-000002\n", 16, path, sizeof path);
  fuzz_write_file("000003.log", (const uint8_t *)"", 0, path, sizeof path);
  fuzz_write_file("MANIFEST-000002", data, size, path, sizeof path);
  err_t err;
  int rc = ldb_precheck_dir(env_default(), fuzz_dir(), &err);
  fuzz_check(rc == BFH_OK || rc == BFH_E_CORRUPT || rc == BFH_E_NOMEM);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  check(data, size);
  uint8_t *c = fuzz_copy(data, size);
  fuzz_fix_log_crcs(c, size);
  if (size && memcmp(c, data, size) != 0) check(c, size);
  free(c);
  return 0;
}

/* Fuzz target: manifest recovery (lsm_version_set_recover in lsm/version_set.c): CURRENT,
 * the log of version edits, and the versions built from them edit by edit.
 *
 * The input is a whole manifest file. It is written as MANIFEST-000002 into a scratch
 * directory whose CURRENT names it, with the CRC of every log record recomputed
 * (fuzz_fix_log_crcs) so that the edits behind the checksums are decoded and applied. The
 * input as given (mostly failing its checksums) is the log reader's job (fuzz_log).
 */
#include "fuzz_util.h"

#include "util/env.h"
#include "lsm/version_set.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  uint8_t *c = fuzz_copy(data, size);
  fuzz_fix_log_crcs(c, size);
  char path[512];
  fuzz_write_file("CURRENT", (const uint8_t *)"MANIFEST-000002\n", 16, path, sizeof path);
  fuzz_write_file("MANIFEST-000002", c, size, path, sizeof path);
  lsm_version_set_t *vs = NULL;
  err_t err;
  fuzz_check(lsm_version_set_create(fuzz_dir(), env_default(), 1 << 20, &vs, &err) == BFH_OK);
  if (lsm_version_set_recover(vs, &err) == BFH_OK) {
    u64vec_t live;
    u64vec_init(&live);
    lsm_version_set_live_files(vs, &live);
    u64vec_release(&live);
    lsm_version_t *v = vs->current;
    for (int l = 1; l < LSM_NUM_LEVELS; l++) {
      lsm_version_find_file(v, l, "k", 1);
      lsm_version_overlaps(v, l, "a", 1, "z", 1);
    }
  }
  lsm_version_set_destroy(vs);
  free(c);
  return 0;
}

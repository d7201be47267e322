/* Fuzz target: the parser of LevelDB's "leveldb.sstables" property text
 * (ldb_sstables_parse in lsm_hooks/leveldb_format/ldb_sstables.c). The input is the text (a NUL is
 * appended, as leveldb_property_value returns a C string; an embedded NUL ends the text).
 * Invariant checked: every table parsed has a level in 0..6.
 */
#include "fuzz_util.h"

#include "lsm_hooks/leveldb_format/ldb_sstables.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  uint8_t *c = fuzz_copy(data, size);
  ldb_sstable_t *t = NULL;
  size_t n = 0;
  err_t err;
  if (ldb_sstables_parse((const char *)c, &t, &n, &err) == BFH_OK) {
    for (size_t i = 0; i < n; i++) fuzz_check(t[i].level >= 0 && t[i].level < 7);
  }
  free(t);
  free(c);
  return 0;
}

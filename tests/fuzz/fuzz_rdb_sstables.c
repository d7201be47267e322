/* Fuzz target: the reader of RocksDB's "rocksdb.sstables" property text (rdb_sstables_bounds in
 * lsm_hooks/rocksdb_format/rdb_sstables.c). The input is the text (a NUL is appended, as
 * rocksdb_property_value returns a C string; an embedded NUL ends the text).
 * Invariant checked: it reports at most one table per line.
 */
#include "fuzz_util.h"

#include "lsm_hooks/rocksdb_format/rdb_sstables.h"

static void count(void *arg, uint64_t number, uint64_t largest_seq) {
  (void)number, (void)largest_seq;
  (*(uint64_t *)arg)++;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  uint8_t *c = fuzz_copy(data, size);
  uint64_t calls = 0, lines = 1;
  for (size_t i = 0; i < size && c[i]; i++) lines += c[i] == '\n';
  uint64_t n = rdb_sstables_bounds((const char *)c, count, &calls);
  fuzz_check(n == calls && n <= lines);
  free(c);
  return 0;
}

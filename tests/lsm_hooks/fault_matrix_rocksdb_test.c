/* The fault matrix of the RocksDB engine (BFH_ENGINE_ROCKSDB): the companion of
 * fault_matrix_leveldb_test.c, with the same cells, checks (fault_matrix_util.h, shared) and
 * printed matrix, over the phases in which bfh's own I/O takes part. bfh_internal_open_io routes
 * the engine's own file accesses through a faulty env_t (util/env.h): the database directory's
 * mkdir at creation and bfh-filters/'s, the filter cache files <db>/bfh-filters/NNNNNN.vf (load;
 * write: tmp file, write, fdatasync, rename, directory fsync; removal), the reads of the tables
 * (by the indexer and by searches), BFH-PARAMS, and the checks before RocksDB's open
 * (rdb_verify_precheck: CURRENT, the MANIFEST, every live WAL).
 *
 * Phases (rows of the matrix):
 *   - log append: only bfh's reads of the live WAL before RocksDB's open, after writes that only
 *     the WAL holds: the open fails naming the log (a search reads the WAL through RocksDB's
 *     rocksdb_get_updates_since, its own Env, which bfh cannot hook);
 *   - memtable flush: the indexer reads the new table after rocksdb_flush;
 *   - filter sidecar write, leaves in memory (absorbed: the file only makes a reopen faster)
 *     and leaves on disk (the flush fails naming the file, the table stays without a leaf and
 *     is scanned; the next sync gives it its leaf);
 *   - manifest write, CURRENT switch: bfh's reads of them before RocksDB's open;
 *   - value-index rebuild at open: BFH-PARAMS, bfh-filters/ mkdir, cache load, table reads
 *     (caches removed first), the removal of a stray or damaged cache file;
 *   - database create: the directory's mkdir, bfh-filters/ mkdir, BFH-PARAMS write.
 * Not applicable: every write of RocksDB's own files (its WAL, tables, MANIFEST, CURRENT,
 * OPTIONS, their syncs, renames and unlinks) goes through RocksDB's Env; the compaction row
 * as a whole (bfh reads a compaction's outputs as it reads a flush's).
 *
 * The cells, the fixture and the checks: fault_matrix_foreign.h.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "tests/lsm_hooks/fault_matrix_foreign.h"

/* The (phase, kind) pairs where bfh's own I/O runs, with the file that reaches them. A cell
   with several targets (both leaf placements, two files) passes when every one does. */
static const target_t targets[] = {
    /* bfh's checks before RocksDB's open (rdb_verify_precheck): CURRENT, the MANIFEST, the WALs */
    {PH_LOG, ENV_OP_OPEN, ACT_RECOVER, "*.log", 0},
    {PH_LOG, ENV_OP_READ, ACT_RECOVER, "*.log", 0},
    FOREIGN_TARGETS("*.sst") /* the rows every such engine shares */
};

static const foreign_engine_t engine = {
    .name = "RocksDB engine",
    .engine = BFH_ENGINE_ROCKSDB,
    .tmpdir = "fault_matrix_rocksdb",
    .table_pattern = "*.sst",
    .own_files = "RocksDB's own files (its Env)",
    .na_text =
        "n/a: every write of RocksDB's own files (WAL append, the tables of a memtable flush\n"
        "  and of a compaction, MANIFEST edits, the CURRENT switch, their fsyncs, renames and\n"
        "  unlinks) and its reads of the WAL: they go through RocksDB's Env, which bfh cannot "
        "hook\n"
        "  (bfh reads CURRENT, the MANIFEST and the WALs before RocksDB's open, and the tables);\n"
        "  compaction: bfh reads its outputs like any table (memtable flush row); ENOSPC on\n"
        "  reads and unlinks; short writes and lost fsyncs outside writes and syncs.\n"
        "abs: no call failed by design (a cache file of in-memory leaves not written or not\n"
        "  read back: rebuilt from its table at the next open; a table not read: no leaf, it\n"
        "  is scanned by every search; a stray cache file left for the next open).\n",
    .targets = targets,
    .ntargets = sizeof targets / sizeof targets[0],
    .sync = engine_stock_sync,
    .min_tried = 28,
};

static void test_fault_matrix_rocksdb_one_fault_keeps_acknowledged_writes(void **state) {
  run_matrix(state, 0);
}

static void test_fault_matrix_rocksdb_dead_disk_keeps_acknowledged_writes(void **state) {
  run_matrix(state, 1);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_prestate_setup_teardown(
          test_fault_matrix_rocksdb_one_fault_keeps_acknowledged_writes, fixture_setup,
          fixture_teardown, (void *)&engine),
      cmocka_unit_test_prestate_setup_teardown(
          test_fault_matrix_rocksdb_dead_disk_keeps_acknowledged_writes, fixture_setup,
          fixture_teardown, (void *)&engine),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

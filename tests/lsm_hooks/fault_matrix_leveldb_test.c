/* The fault matrix of the LevelDB engine (BFH_ENGINE_LEVELDB): the companion of
 * fault_matrix_test.c (the own engine), with the same cells, checks (fault_matrix_util.h,
 * shared) and printed matrix, over the phases in which bfh's own I/O takes part.
 * bfh_internal_open_io routes the engine's own file accesses through a faulty env_t (util/env.h):
 * the bfh-filters/ mkdir (and the database directory's at creation), the filter sidecar files
 * <db>/bfh-filters/NNNNNN.vf (load, write: tmp file, write, fdatasync, rename, directory fsync;
 * removal), the table reads of the indexer, and BFH-PARAMS (read at open, written at creation).
 *
 * Phases (rows of the matrix):
 *   - memtable flush: the indexer reads the new table (the emulated table-build hook);
 *   - filter sidecar write, leaves in memory: the cache file only makes a reopen faster and
 *     is written at close (or 2 s after its table was listed): a failure is absorbed;
 *   - filter sidecar write, leaves on disk: the leaf lives in the cache file, which is
 *     written before the leaf is added: a failure fails the flush with a message naming the
 *     file, the table stays without a leaf (it is scanned by every search) and the next sync
 *     tries again; never a leaf that says no wrongly;
 *   - value-index rebuild at open (both leaf placements): BFH-PARAMS read, bfh-filters/
 *     mkdir, cache load (a cache file that cannot be read is rebuilt from its table), table
 *     reads (caches removed first: an unreadable table gets no leaf and is scanned), the
 *     removal of a stray cache file or of a damaged one (absorbed: left for the next open,
 *     or overwritten by the rebuilt one; a damaged file is never trusted);
 *   - database create: the directory's mkdir, bfh-filters/ mkdir, the BFH-PARAMS write (tmp,
 *     write, fdatasync, rename, directory fsync).
 *   - log append, manifest write, CURRENT switch: only bfh's reads of these files, the
 *     checks before leveldb_open (ldb_precheck: CURRENT, the MANIFEST, the live logs, after
 *     writes that only the log holds): the open fails naming the file; and the read of the
 *     live log by a search (the memtable's entries): that search fails naming the log, the
 *     next one reads it again.
 * Not applicable: every write of LevelDB's own files (its log, tables, MANIFEST, CURRENT, and
 * their syncs, renames and unlinks) goes through LevelDB's Env, which bfh cannot hook: the
 * log append, LevelDB's memtable flush and compaction writes, the manifest write and the
 * CURRENT switch. The compaction row is n/a as a whole: bfh reads its output tables as it
 * reads a flush's (the memtable flush row). ENOSPC on reads and unlinks, short writes and
 * lost fsyncs outside writes and syncs do not exist (as for the own engine).
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
    /* bfh's checks before leveldb_open (ldb_precheck): CURRENT, the MANIFEST, the logs */
    {PH_LOG, ENV_OP_OPEN, ACT_RECOVER, "*.log", 0},
    {PH_LOG, ENV_OP_READ, ACT_RECOVER, "*.log", 0},
    {PH_LOG, ENV_OP_READ, ACT_INGEST, "*.log", 0}, /* a search reads the live log */
    FOREIGN_TARGETS("*.ldb")                       /* the rows every such engine shares */
};

static const foreign_engine_t engine = {
    .name = "LevelDB engine",
    .engine = BFH_ENGINE_LEVELDB,
    .tmpdir = "fault_matrix_leveldb",
    .table_pattern = "*.ldb",
    .own_files = "LevelDB's own files (its Env)",
    .na_text =
        "n/a: every write of LevelDB's own files (log append, the tables of a memtable flush\n"
        "  and of a compaction, MANIFEST edits, the CURRENT switch, their fsyncs, renames and\n"
        "  unlinks): they go through LevelDB's Env, which bfh cannot hook (bfh only reads "
        "CURRENT,\n"
        "  the MANIFEST and the logs before leveldb_open, and the tables to index them);\n"
        "  compaction: bfh reads its outputs like any table (memtable flush row); ENOSPC on\n"
        "  reads and unlinks; short writes and lost fsyncs outside writes and syncs.\n"
        "abs: no call failed by design (a cache file of in-memory leaves not written or not\n"
        "  read back: rebuilt from its table at the next open; a table not read: no leaf, it\n"
        "  is scanned by every search; a stray cache file left for the next open).\n",
    .targets = targets,
    .ntargets = sizeof targets / sizeof targets[0],
    .sync = engine_stock_sync,
    .min_tried = 30,
};

static void test_fault_matrix_leveldb_one_fault_keeps_acknowledged_writes(void **state) {
  run_matrix(state, 0);
}

static void test_fault_matrix_leveldb_dead_disk_keeps_acknowledged_writes(void **state) {
  run_matrix(state, 1);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_prestate_setup_teardown(
          test_fault_matrix_leveldb_one_fault_keeps_acknowledged_writes, fixture_setup,
          fixture_teardown, (void *)&engine),
      cmocka_unit_test_prestate_setup_teardown(
          test_fault_matrix_leveldb_dead_disk_keeps_acknowledged_writes, fixture_setup,
          fixture_teardown, (void *)&engine),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

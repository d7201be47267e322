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
    {PH_MANIFEST, ENV_OP_OPEN, ACT_REOPEN, "MANIFEST-*", 0},
    {PH_MANIFEST, ENV_OP_READ, ACT_REOPEN, "MANIFEST-*", 0},
    {PH_CURRENT, ENV_OP_OPEN, ACT_REOPEN, "CURRENT", 0},
    {PH_CURRENT, ENV_OP_READ, ACT_REOPEN, "CURRENT", 0},
    {PH_FLUSH, ENV_OP_OPEN, ACT_INGEST, "*.ldb", 0}, /* the indexer reads the new table */
    {PH_FLUSH, ENV_OP_READ, ACT_INGEST, "*.ldb", 0},
    {PH_FLUSH, ENV_OP_OPEN, ACT_INGEST, "*.ldb", 1},
    {PH_FLUSH, ENV_OP_READ, ACT_INGEST, "*.ldb", 1},
    {PH_SIDECAR_MEM, ENV_OP_OPEN, ACT_INGEST, "*.vf.tmp", 0},
    {PH_SIDECAR_MEM, ENV_OP_WRITE, ACT_INGEST, "*.vf.tmp", 0},
    {PH_SIDECAR_MEM, ENV_OP_SYNC, ACT_INGEST, "*.vf.tmp", 0},
    {PH_SIDECAR_MEM, ENV_OP_SYNC, ACT_INGEST, LEAF_CACHE_DIR, 0}, /* the rename's */
    {PH_SIDECAR_MEM, ENV_OP_RENAME, ACT_INGEST, "*.vf.tmp", 0},
    {PH_SIDECAR_DISK, ENV_OP_OPEN, ACT_INGEST, "*.vf.tmp", 1},
    {PH_SIDECAR_DISK, ENV_OP_WRITE, ACT_INGEST, "*.vf.tmp", 1},
    {PH_SIDECAR_DISK, ENV_OP_SYNC, ACT_INGEST, "*.vf.tmp", 1},
    {PH_SIDECAR_DISK, ENV_OP_SYNC, ACT_INGEST, LEAF_CACHE_DIR, 1},
    {PH_SIDECAR_DISK, ENV_OP_RENAME, ACT_INGEST, "*.vf.tmp", 1},
    {PH_REBUILD, ENV_OP_OPEN, ACT_REOPEN, "BFH-PARAMS", 0},
    {PH_REBUILD, ENV_OP_READ, ACT_REOPEN, "BFH-PARAMS", 0},
    {PH_REBUILD, ENV_OP_MKDIR, ACT_REOPEN, LEAF_CACHE_DIR, 0},
    {PH_REBUILD, ENV_OP_OPEN, ACT_REOPEN, "*.vf", 0}, /* the cache load */
    {PH_REBUILD, ENV_OP_READ, ACT_REOPEN, "*.vf", 0},
    {PH_REBUILD, ENV_OP_OPEN, ACT_REOPEN, "*.vf", 1},
    {PH_REBUILD, ENV_OP_READ, ACT_REOPEN, "*.vf", 1},
    {PH_REBUILD, ENV_OP_OPEN, ACT_REOPEN_NOCACHE, "*.ldb", 0}, /* the table reads */
    {PH_REBUILD, ENV_OP_READ, ACT_REOPEN_NOCACHE, "*.ldb", 0},
    {PH_REBUILD, ENV_OP_OPEN, ACT_REOPEN_NOCACHE, "*.ldb", 1},
    {PH_REBUILD, ENV_OP_READ, ACT_REOPEN_NOCACHE, "*.ldb", 1},
    {PH_REBUILD, ENV_OP_WRITE, ACT_REOPEN_NOCACHE, "*.vf.tmp", 1}, /* the rebuilt leaf */
    {PH_REBUILD, ENV_OP_UNLINK, ACT_REOPEN_STRAY, "*.vf", 0},      /* a stray cache file */
    {PH_REBUILD, ENV_OP_UNLINK, ACT_REOPEN_STALE, "*.vf", 0},      /* a damaged one */
    {PH_REBUILD, ENV_OP_UNLINK, ACT_REOPEN_STALE, "*.vf", 1},
    {PH_CREATE, ENV_OP_MKDIR, ACT_CREATE, "db", 0}, /* the database directory */
    {PH_CREATE, ENV_OP_MKDIR, ACT_CREATE, LEAF_CACHE_DIR, 0},
    {PH_CREATE, ENV_OP_OPEN, ACT_CREATE, "BFH-PARAMS.tmp", 0},
    {PH_CREATE, ENV_OP_WRITE, ACT_CREATE, "BFH-PARAMS.tmp", 0},
    {PH_CREATE, ENV_OP_SYNC, ACT_CREATE, "BFH-PARAMS.tmp", 0},
    {PH_CREATE, ENV_OP_SYNC, ACT_CREATE, "db", 0}, /* the directory, after the rename */
    {PH_CREATE, ENV_OP_RENAME, ACT_CREATE, "BFH-PARAMS.tmp", 0},
};

static const foreign_engine_t engine = {
    .name = "LevelDB engine",
    .engine = BFH_ENGINE_LEVELDB,
    .tmpdir = "fault_matrix_leveldb",
    .table_pattern = "*.ldb",
    .own_files = "LevelDB's own files (its Env)",
    .na_text = "n/a: every write of LevelDB's own files (log append, the tables of a memtable flush\n"
              "  and of a compaction, MANIFEST edits, the CURRENT switch, their fsyncs, renames and\n"
              "  unlinks): they go through LevelDB's Env, which bfh cannot hook (bfh only reads CURRENT,\n"
              "  the MANIFEST and the logs before leveldb_open, and the tables to index them);\n"
              "  compaction: bfh reads its outputs like any table (memtable flush row); ENOSPC on\n"
              "  reads and unlinks; short writes and lost fsyncs outside writes and syncs.\n"
              "abs: no call failed by design (a cache file of in-memory leaves not written or not\n"
              "  read back: rebuilt from its table at the next open; a table not read: no leaf, it\n"
              "  is scanned by every search; a stray cache file left for the next open).\n",
    .targets = targets,
    .ntargets = sizeof targets / sizeof targets[0],
    .sync = engine_leveldb_sync,
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

/* ldb_verify: what the inspection functions of include/bfh.h (bfh_tables, bfh_check) and the
 * check before leveldb_open (precheck.h) read from the files of a LevelDB database: the stock
 * check (stock/stock_check.h) over LevelDB's readers (leveldb_format/ldb_table.h, ldb_log.h,
 * ldb_version_edit.h) and the filter cache's (leaf_cache.h). It writes nothing.
 *
 * The readers stop at the first damage of a file (a LevelDB file has no intact part worth
 * reading on for bfh: repair is LevelDB's), so a damaged file is reported once, at the offset
 * of its first damaged record or block.
 */
#ifndef BFH_LSM_HOOKS_LEVELDB_VERIFY_H
#define BFH_LSM_HOOKS_LEVELDB_VERIFY_H

#include <stdint.h>

#include "bfh.h"
#include "lsm_hooks/engines/engine.h"
#include "util/err.h"

/* Describes live table `number` of the open LevelDB engine e for bfh_tables: reads the whole
   table (entries, smallest and largest user key; the filter facts are added above the engine,
   api/db_inspect.c). info->smallest and info->largest are
   malloc'd copies, which the caller frees whatever the result (NULL for a table without
   entries). BFH_E_CORRUPT, BFH_E_IO, BFH_E_NOMEM with the table named. */
int ldb_verify_describe(engine_t *e, uint64_t number, bfh_table_info *info, err_t *err);

/* engine_kind_t.check (engine.h) of both LevelDB rows: checks the LevelDB database in dir:
   CURRENT, the MANIFEST it names (every record's checksum), every table file (footer, index,
   every data block's checksum; not the meta index and key filter block, which bfh never reads)
   and every live log (every record's checksum, every write batch) of the directory, and, when
   p->m is not 0, the filter cache's files against their tables (made with p's m, k, seed).
   Damage goes to damage(arg, ...) and into st; damage of the filter cache is told with
   "(harmless: ...)" in what and counted in *cache_damaged instead. A record cut short at the
   end of a log is a torn tail (st). BFH_OK when the check ran; BFH_E_BUSY if a bfh handle has
   the database open (it flocks the directory); BFH_E_INVALID if dir has no CURRENT, or is the
   own engine's (an IDENTITY file); BFH_E_IO, BFH_E_NOMEM. */
int ldb_verify_check(const char *dir, const engine_filter_params_t *p, engine_damage_fn damage,
                     void *arg, engine_check_stats_t *st, uint64_t *cache_damaged, err_t *err);

#endif

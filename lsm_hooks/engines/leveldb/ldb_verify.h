/* ldb_verify: what the inspection functions of include/bfh.h (bfh_tables, bfh_check) and the
 * check before leveldb_open (precheck.h) read from the files of a LevelDB database: the stock
 * check (stock/stock_check.h) over LevelDB's readers (leveldb_format/ldb_table.h, ldb_log.h,
 * ldb_version_edit.h). It writes nothing.
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

/* engine_kind_t.check (engine.h) of both LevelDB rows: stock_check_dir (stock_check.h) through
   the real I/O layer with the stored parameters p (m 0: the filter cache is not checked). A
   table is read whole but for the meta index and key filter block, which bfh never reads.
   BFH_E_BUSY if a bfh handle or a LevelDB program has the database open; BFH_E_INVALID if dir
   has no CURRENT, or is the own engine's (an IDENTITY file). */
int ldb_verify_check(const char *dir, const engine_filter_params_t *p, engine_damage_fn damage,
                     void *arg, engine_check_stats_t *st, uint64_t *cache_damaged, err_t *err);

#endif

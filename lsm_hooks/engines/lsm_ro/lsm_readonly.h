/* The own engine's read-only row ("lsm-readonly", bfh_options.read_only): searches a bfh
 * own-engine database that another handle, in this process or another, holds open for writing,
 * without its LOCK and without writing anything anywhere in its directory.
 *
 * It never calls lsm_open (which takes the LOCK and may write a MANIFEST, CURRENT and a log).
 * It reads, with lsm/'s readers: CURRENT, the MANIFEST it names (version_edit.h: replayed to
 * the live tables, then read on from where it stopped), the live tables (table.h, each held
 * open) and the live write-ahead logs (log.h, read on from where the last read stopped, into a
 * memtable per log). The value filters are the ones the writer built into the tables (their
 * meta blocks) and its persisted index (BFH-INDEX, read, never written); nothing is cached
 * elsewhere, and opt->index_dir is not used. The consistency argument is at the top of
 * lsm_readonly.c.
 */
#ifndef BFH_LSM_HOOKS_LSM_READONLY_H
#define BFH_LSM_HOOKS_LSM_READONLY_H

#include <stdint.h>

#include "bfh.h"
#include "lsm_hooks/engines/engine.h"
#include "index/index_sync.h"
#include "util/err.h"

struct env;

/* Reads of the MANIFEST and the logs tried before BFH_E_BUSY: each retry follows a change the
   writer made meanwhile (a flush, a compaction), or a record it was still appending. */
#define LSM_RO_ATTEMPTS 16

/* Opens the own-engine database in path read-only. io: bfh's file accesses (NULL: the real I/O
   layer); sync: borrowed, NULL with value filters off. On BFH_OK *e is new (close with
   e->ops->close). BFH_E_INVALID if path holds no own-engine database (no CURRENT, or another
   engine's files); nothing is created anywhere. */
int engine_lsm_ro_open(const char *path, const bfh_options *opt, struct env *io, index_sync_t *sync,
                       engine_t **e, err_t *err);

/* engine_kind_t.describe of a read-only handle (bfh_tables): the table as it holds it open. */
int engine_lsm_ro_describe(engine_t *e, uint64_t number, bfh_table_info *info, err_t *err);

/* How many refreshes read CURRENT, the MANIFEST and the logs (the others found nothing new in
   the directory watch: dir_watch.h), and how many reads started over. */
uint64_t engine_lsm_ro_refreshes(engine_t *e);
uint64_t engine_lsm_ro_retries(engine_t *e);

/* Tests: fn(arg) runs in every refresh between its log reads and its second MANIFEST read
   (steps 2 and 3 at the top of lsm_readonly.c). NULL removes the hook. */
void engine_lsm_ro_set_logs_hook(engine_t *e, void (*fn)(void *arg), void *arg);

#endif

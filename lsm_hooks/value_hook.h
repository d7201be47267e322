/* value_hook_t: the own engine's table-build hook that gives every table its value filter
 * (the paper's per-SSTable filter) and keeps the value index in step with the tables.
 *
 *   begin    creates an empty value filter with the index's m, k and seed
 *   add      hashes the value of every LSM_TYPE_VALUE entry into it (deletions carry none)
 *   finish   serializes it as the meta block "bfh.value_filter" (filters/value_filter.h)
 *   end(ok)  ok = 1: hands the filter to the value index as the table's leaf, with the table
 *            path (the offset of the stored filter, needed for leaves on disk, is found
 *            later by the engine's locator; value_index.h); O(1): the index queues it
 *   table_removed  removes the table's leaf
 * With value filters off the hook is simply not installed.
 */
#ifndef BFH_LSM_HOOKS_VALUE_HOOK_H
#define BFH_LSM_HOOKS_VALUE_HOOK_H

#include "lsm/table_hook.h"
#include "lsm_hooks/value_index.h"
#include "util/err.h"

#define VALUE_HOOK_META_NAME "bfh.value_filter"

typedef struct value_hook value_hook_t;

typedef struct value_hook_stats {
  uint64_t tables_built;   /* end(ok = 1) */
  uint64_t tables_failed;  /* end(ok = 0) */
  uint64_t tables_removed; /* table_removed with a leaf */
  uint64_t add_errors;     /* leaves the index refused (those tables are always scanned) */
  uint64_t values_added;
} value_hook_stats_t;

/* Returns a new hook feeding index (borrowed; must outlive the hook) for the database in
   directory dir (copied), or NULL (message in err). Client calls value_hook_destroy() after
   the database is closed. */
value_hook_t *value_hook_create(value_index_t *index, const char *dir, err_t *err);
void value_hook_destroy(value_hook_t *h); /* NULL allowed */
/* The lsm_table_hook_t to put in lsm_options_t.hook (owned by h). */
const lsm_table_hook_t *value_hook_table_hook(value_hook_t *h);
void value_hook_get_stats(value_hook_t *h, value_hook_stats_t *st);

#endif

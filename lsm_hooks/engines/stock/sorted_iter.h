/* stock_sorted: an ordered iterator over entries gathered in memory, for the read-only stock
 * engines (stock_ro.h's iterators): they read every entry of one state while its files are
 * there, then iterate over the newest live version of each key.
 *
 * Entries are added in any order, each with a rank: of two entries of a key the one of the
 * higher rank is the newer (a sequence number; LevelDB's log entries rank after every table
 * entry, in the order added). stock_sorted_finish keeps the newest entry of each key, drops the
 * keys whose newest entry is a deletion, and sorts the rest by key (bytewise, the stock
 * engines' default comparator). Memory: every entry added, until finish keeps only the live
 * ones.
 */
#ifndef BFH_LSM_HOOKS_STOCK_SORTED_ITER_H
#define BFH_LSM_HOOKS_STOCK_SORTED_ITER_H

#include <stddef.h>
#include <stdint.h>

#include "lsm_hooks/engines/engine.h"
#include "util/err.h"

typedef struct stock_sorted stock_sorted_t;

/* A new, empty gathering (destroy with stock_sorted_destroy, unless stock_sorted_finish took it),
   or NULL without memory. */
stock_sorted_t *stock_sorted_create(void);
/* NULL is allowed. */
void stock_sorted_destroy(stock_sorted_t *s);
/* Copies the entry in. BFH_OK or BFH_E_NOMEM. */
int stock_sorted_add(stock_sorted_t *s, const void *key, size_t key_len, const void *val,
                     size_t val_len, int is_value, uint64_t rank);
/* Takes s (freed whatever the result) and makes *it, an iterator over its live entries
   (engine.h; destroy with (*it)->ops->destroy). BFH_OK or BFH_E_NOMEM. */
int stock_sorted_finish(stock_sorted_t *s, engine_iter_t **it, err_t *err);

#endif

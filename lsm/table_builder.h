/* table_builder_t: writes one table file from entries in internal-key order
 * (doc/format.md "Table"): data blocks, one blocked key filter over the table's user keys,
 * the table hook's meta blocks, a meta index, an index and a footer.
 *
 * Table hook calls (lsm/table_hook.h): begin(ctx, file_number) in table_builder_create,
 * add() for every entry in table_builder_add, finish() in table_builder_finish (its blocks
 * are stored in the file), end(state, offsets) after the file is complete, synced and closed,
 * or end(state, NULL) when the build fails or is abandoned. table_added and table_removed are the
 * db's business.
 */
#ifndef BFH_LSM_TABLE_BUILDER_H
#define BFH_LSM_TABLE_BUILDER_H

#include <stddef.h>
#include <stdint.h>

#include "util/env.h"
#include "lsm/table_hook.h"
#include "util/err.h"

typedef struct table_builder_options {
  size_t block_bytes;           /* target data block size; 0: 4096 */
  int restart_interval;         /* 0: 16 */
  double key_bits_per_key;      /* blocked key filter budget; 0: no key filter */
  const lsm_table_hook_t *hook; /* may be NULL; borrowed */
  int sync;                     /* fdatasync the file in finish (default 1 from _init) */
} table_builder_options_t;

/* block_bytes 4096, restart 16, 10 bits per key, no hook, sync 1. */
void table_builder_options_init(table_builder_options_t *o);

typedef struct table_builder table_builder_t;

/* Creates (truncates) path and calls hook->begin(ctx, file_number) (NULL -> ST_E_NOMEM,
   "table hook begin failed"). opt is copied. On ST_OK the client calls
   table_builder_finish() and/or table_builder_destroy(). */
int table_builder_create(env_t *io, const char *path, uint64_t file_number,
                         const table_builder_options_t *opt, table_builder_t **tb, err_t *err);
/* Adds an entry. REQUIRES: ikey is a valid internal key, larger than every key added before
   (internal order; the same user key may repeat with smaller seqs). val is stored and
   passed to hook->add as given (deletions carry an empty value by convention). After an
   error the builder is dead (destroy it). */
int table_builder_add(table_builder_t *tb, const void *ikey, size_t iklen, const void *val,
                      size_t vlen, err_t *err);
/* Flushes the last data block, writes filter, meta blocks, meta index, index and footer,
   syncs (if opt.sync) and closes the file, then calls hook end(state, offsets) with the
   offset of each hook meta block. On error the hook gets end(state, NULL) and the
   (partial) file stays on disk: the caller unlinks it. */
int table_builder_finish(table_builder_t *tb, err_t *err);
/* Frees tb; if it was not finished successfully, closes the file and calls hook
   end(state, NULL) (once). The file is not unlinked. NULL allowed. */
void table_builder_destroy(table_builder_t *tb);

uint64_t table_builder_entries(const table_builder_t *tb);
/* The largest sequence number of the entries added (0 if none). */
uint64_t table_builder_max_seq(const table_builder_t *tb);
/* Bytes written so far (the final file size after a successful finish). */
uint64_t table_builder_file_size(const table_builder_t *tb);
/* Smallest / largest internal key added (borrowed; *n = 0 and NULL if none). */
const uint8_t *table_builder_smallest(const table_builder_t *tb, size_t *n);
const uint8_t *table_builder_largest(const table_builder_t *tb, size_t *n);

#endif

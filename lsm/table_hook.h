/* lsm_table_hook_t: what the engine tells the outside while it builds, installs and drops
 * tables.
 *
 * The engine knows nothing of value filters: it calls these functions and stores the meta
 * blocks finish() returns inside the table file. lsm_hooks/engines/lsm/value_hook.c uses them to build
 * one value filter per table (the paper's per-SSTable filter).
 *
 * Order of calls for one table (flush or compaction output):
 *   state = begin(ctx, file_number)
 *   add(state, ...) for every entry, in table order (values and deletions)
 *   block_written(state, offset, size) after the entries of each data block: the entries
 *                                       added since the previous call are that block's,
 *                                       whose contents lie at [offset, offset + size)
 *   finish(state, &blocks, &n)       -> meta blocks to store in the table
 *   end(state, offsets)              -> offsets != NULL: the file is complete and synced,
 *                                       and offsets[i] is where the contents of blocks[i]
 *                                       start in it; NULL: the table was abandoned (error).
 *                                       state is released either way
 * Then, for a table whose end() had offsets:
 *   table_added(ctx, file_number, size)  -> a version holding the table was installed: it
 *                                       is live (searches see it from now on)
 *   table_removed(ctx, file_number)  -> the table left the live version (compacted away
 *                                       or never installed) and will never be live again
 * At open, every table of the recovered version gets table_added (with no begin/end before
 * it unless recovery built it). A table that is live when the database is closed gets no
 * table_removed. A table moved to another level keeps its number and gets neither.
 *
 * Then changed(ctx), from the background thread after each flush or compaction it installed
 * and the files it freed are dropped, without the engine's lock: the place for the slower
 * work that table_added and table_removed queued. The engine counts itself idle
 * (lsm_wait_idle) only after it returned.
 *
 * table_added is called with the engine's lock held: it must be quick and must not call
 * into the engine. Calls for one table come from one thread; calls for different tables
 * may come from different threads at once (flush and compaction), so ctx must be
 * thread-safe.
 */
#ifndef BFH_LSM_TABLE_HOOK_H
#define BFH_LSM_TABLE_HOOK_H

#include <stddef.h>
#include <stdint.h>

enum { LSM_TYPE_DELETION = 0, LSM_TYPE_VALUE = 1 };

typedef struct lsm_meta_block {
  const char *name; /* e.g. "bfh.value_filter"; stored in the table's meta index */
  const void *data; /* owned by the hook state; valid until end() */
  size_t size;
} lsm_meta_block_t;

typedef struct lsm_table_hook {
  void *ctx;
  /* Returns the per-table state, or NULL on failure (the table build then fails). */
  void *(*begin)(void *ctx, uint64_t file_number);
  void (*add)(void *state, const void *key, size_t key_len, const void *val, size_t val_len,
              uint64_t seq, int type);
  /* May be NULL. */
  void (*block_written)(void *state, uint64_t offset, uint64_t size);
  /* Sets *blocks to an array of *n meta blocks (owned by state). Returns 0, or a bfh error
     status that fails the table build. */
  int (*finish)(void *state, const lsm_meta_block_t **blocks, size_t *n);
  void (*end)(void *state, const uint64_t *block_offsets);
  void (*table_added)(void *ctx, uint64_t file_number, uint64_t size);
  void (*table_removed)(void *ctx, uint64_t file_number);
  /* May be NULL. Must not call into the engine. */
  void (*changed)(void *ctx);
} lsm_table_hook_t;

#endif

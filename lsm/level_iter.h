/* level_iter: one iterator over the files of one level >= 1 of a version, whose files are
 * sorted and disjoint: a seek opens only the file that may hold the target, and a file's
 * table iterator is made only when the entries reach it. lsm_iter merges one of these per
 * level (LevelDB's concatenating iterator, db/version_set.cc): a seek then reads one data
 * block of each level instead of one of every table, and the stand-alone index, whose every
 * search is a seek, reads a few blocks rather than one per table (doc/lsm.md "A get").
 *
 * A file whose table will not open makes the iterator invalid with that error when the
 * entries reach it, as a damaged block does inside a table.
 */
#ifndef BFH_LSM_LEVEL_ITER_H
#define BFH_LSM_LEVEL_ITER_H

#include <stddef.h>

#include "lsm/iterator.h"
#include "lsm/version_edit.h"
#include "util/err.h"

struct table;

/* Opens the table of file f into *t (a reference the iterator made from it takes its own of;
   the caller keeps *t alive while files[] lives). ST_OK or the failure, with err set. */
typedef int (*level_open_fn)(void *arg, lsm_file_meta_t *f, struct table **t, err_t *err);

/* An iterator over files[0, n) (borrowed: sorted by key and disjoint, alive while the
   iterator is), opened through open(arg, ...). NULL on no memory. Client calls
   iterator_destroy(). */
iterator_t *level_iterator_create(lsm_file_meta_t *const *files, size_t n, level_open_fn open,
                                  void *arg);

#endif

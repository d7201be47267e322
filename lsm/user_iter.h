/* user_iter_t: the live entries of an internal-key iterator, by user key (LevelDB's DBIter,
 * db/db_iter.cc): of each user key the newest entry with a sequence number <= max_seq, and no
 * key whose newest such entry is a deletion. The own engine's iterator (lsm_iter, db.c) and its
 * read-only row's (lsm_hooks/engines/lsm_ro/lro_iter.c) are this over a merge of their sources.
 *
 * Errors (a malformed internal key, the input's status, no memory) end the iteration: valid
 * becomes 0 and user_iter_status reports them. Not thread-safe.
 */
#ifndef BFH_LSM_USER_ITER_H
#define BFH_LSM_USER_ITER_H

#include <stddef.h>
#include <stdint.h>

#include "lsm/iterator.h"
#include "util/err.h"

typedef struct user_iter {
  iterator_t *in;   /* borrowed: the caller destroys it after user_iter_release */
  uint64_t max_seq; /* entries above it are not seen */
  int valid, status;
  err_t err;
  const uint8_t *key; /* user key of the current entry (borrowed from in) */
  size_t key_len;
  const void *val;
  size_t val_len;
  uint8_t *skip; /* user key whose older entries are hidden */
  size_t skip_len, skip_cap;
  uint8_t *target; /* seek target buffer */
  size_t target_cap;
} user_iter_t;

void user_iter_init(user_iter_t *u, iterator_t *in, uint64_t max_seq);
void user_iter_release(user_iter_t *u); /* its buffers; not in */

void user_iter_seek_first(user_iter_t *u);
void user_iter_seek(user_iter_t *u, const void *key, size_t key_len); /* first key >= key */
void user_iter_next(user_iter_t *u);
int user_iter_valid(const user_iter_t *u);
const void *user_iter_key(const user_iter_t *u, size_t *len);
const void *user_iter_value(const user_iter_t *u, size_t *len);
/* ST_OK, or the error that ended the iteration (its message in *err). */
int user_iter_status(const user_iter_t *u, err_t *err);

#endif

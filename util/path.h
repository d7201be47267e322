/* path: where a path really is, whether or not it exists yet, so that two directories can be
 * compared by place rather than by spelling ("DB/idx", "DB/../DB/idx" and "link-to-DB/idx" are
 * one place). A read-only open refuses an index directory inside the database's with it.
 */
#ifndef BFH_UTIL_PATH_H
#define BFH_UTIL_PATH_H

#include <stddef.h>

#include "util/err.h"

/* The absolute path that path names now, or would name once it is created, into out (cap
   bytes): each component is looked up as it is met, from the working directory for a
   relative path; one that exists is replaced by its real path (realpath(3): symlinks
   followed), one that does not is appended as written, "." is dropped and ".." takes off the
   last component (so "a/new/../link/x" follows link, as mkdir -p would). ST_OK; ST_E_INVALID
   (an empty path, a component under a file that is not a directory, a dangling or looping
   symlink, a result longer than cap) or ST_E_IO (a lookup failed, e.g. EACCES), naming path. */
int path_resolve(const char *path, char *out, size_t cap, err_t *err);

/* 1 if p is dir or lies below it, both absolute and resolved (path_resolve); else 0. */
int path_within(const char *dir, const char *p);

#endif

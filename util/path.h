/* path: building a path, and where a path really is.
 *
 * Building: path_join and path_fmt return a path in memory of its own, exactly as long as it
 * needs, so that no path is ever cut short in a fixed buffer; NULL means only that memory ran
 * out (the caller reports ST_E_NOMEM / BFH_E_NOMEM).
 *
 * Resolving: where a path really is, whether or not it exists yet, so that two directories can
 * be compared by place rather than by spelling ("DB/idx", "DB/../DB/idx" and "link-to-DB/idx"
 * are one place). A read-only open refuses an index directory inside the database's with it.
 */
#ifndef BFH_UTIL_PATH_H
#define BFH_UTIL_PATH_H

#include <stddef.h>

#include "util/err.h"

/* "dir/name" in a string of its own (a dir ending in '/' gets no second one). NULL only on no
   memory. Client frees it with free(). */
char *path_join(const char *dir, const char *name);

/* The printf-formatted string in memory of its own, e.g. path_fmt("%s/%06llu.sst", dir, n).
   NULL only on no memory (or a format printf itself refuses). Client frees it with free(). */
char *path_fmt(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* The absolute path that path names now, or would name once it is created, in *out (a string
   of its own: client frees it with free(); NULL on failure). Each component is looked up as
   it is met, from the working directory for a relative path; one that exists is replaced by
   its real path (realpath(3): symlinks followed), one that does not is appended as written,
   "." is dropped and ".." takes off the last component (so "a/new/../link/x" follows link, as
   mkdir -p would). ST_OK; ST_E_INVALID (an empty path, a component under a file that is not
   a directory, a dangling or looping symlink), ST_E_NOMEM, or ST_E_IO (a lookup failed, e.g.
   EACCES), naming path. No length limit of its own. */
int path_resolve(const char *path, char **out, err_t *err);

/* 1 if p is dir or lies below it, both absolute and resolved (path_resolve); else 0. */
int path_within(const char *dir, const char *p);

#endif

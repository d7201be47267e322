/* at_rest_id: an identity of a closed database made of the files it keeps its data in, the
 * engine_kind_t.at_rest of every engine that keeps the stand-alone index (engine.h).
 *
 * The engines bfh opens never rewrite a data file in place under the same size: a write
 * appends to a log; a flush or a compaction writes tables, appends to the MANIFEST and deletes
 * files; an open starts a new log, and CURRENT is replaced by a rename. So the names, sizes and
 * inode numbers of those files, sorted by name, are equal at two moments only if no write
 * reached the database between them, and differ too when its files were put back from a copy.
 */
#ifndef BFH_LSM_HOOKS_AT_REST_H
#define BFH_LSM_HOOKS_AT_REST_H

#include "bfh.h" /* the status codes */
#include "util/env.h"
#include "util/err.h"

/* Whether the file called name (no directory) holds the database's data or names it. */
typedef int (*at_rest_data_file_fn)(const char *name);

/* *id (malloc'd, client frees): one line "NAME SIZE DEV:INO" for each file in path that
   data_file accepts, sorted by name. BFH_OK; BFH_E_BUSY when a file went while listed;
   BFH_E_IO, BFH_E_NOMEM. */
int at_rest_id(const char *path, env_t *io, at_rest_data_file_fn data_file, char **id, err_t *err);

#endif

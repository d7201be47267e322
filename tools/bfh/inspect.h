/* The printing side of `bfh tables DIR` and `bfh check DIR` (include/bfh.h, bfh_tables and
 * bfh_check): an aligned table for people, one JSON document or CSV with a header for programs.
 *
 * Keys are binary: every printed key is escaped as bfh scan and bfh search print keys
 * (tools/bfh/cli_kv.h: \\, \n, \xHH, ...), and in JSON and CSV that text is then quoted as
 * those formats quote any string (so JSON shows "\\x00" for the byte 0).
 */
#ifndef BFH_TOOLS_BFH_INSPECT_H
#define BFH_TOOLS_BFH_INSPECT_H

#include <stddef.h>
#include <stdio.h>

#include "bfh.h"

typedef enum { INSPECT_TEXT, INSPECT_JSON, INSPECT_CSV } inspect_format;

/* Prints every live table of db (bfh_tables): number, level, entries, bytes, smallest and
   largest key, value filter fill and estimated FPR, and whether the table has a value filter
   and a block filter. Returns 0, or 2 on an error (its message in bfh_last_error(db)). */
int inspect_tables(bfh_db *db, inspect_format f, FILE *out);

/* Prints the attributes db indexes (bfh_options.attributes, as stored with the database):
   name, extractor, and the values the handle saw that gave no term of it
   (bfh_attribute_stats); a line saying there are none. Returns 0, or 2 on an error (its
   message in bfh_last_error(db)). */
int inspect_attributes(bfh_db *db, inspect_format f, FILE *out);

/* Checks the database in path (bfh_check with opt, may be NULL) and prints every damaged
   file with the offset and what is wrong, then (text and JSON) what was checked. Returns 0
   when nothing is damaged, 1 when damage was found, 2 on an error (a database open
   elsewhere, not a database, an I/O failure), whose message goes to err. As grep does. */
int inspect_check(const char *path, const bfh_options *opt, inspect_format f, FILE *out, FILE *err);

#endif

/* The declared attributes of a database (doc/query.md), stored with it at its creation in the
 * file BFH-ATTRS beside BFH-PARAMS, so that every later open hashes each value into the same
 * items (query/terms.h) the database's filters hold.
 *
 * File layout (doc/format.md "BFH-ATTRS"):
 *   magic "BFHA" (4 bytes) | the list as attr_specs_encode writes it (query/attr.h: version u8,
 *   count varint32, each declaration's canonical text with its length, crc32c fixed32 masked
 *   over every byte of the list before it)
 * Written before the engine first opens the database (and before BFH-PARAMS, the mark of a
 * database opened before), and again by bfh_index_add and bfh_index_drop (api/index_admin.c),
 * always via BFH-ATTRS.tmp + fsync + rename + fsync of the directory;
 * only when attributes are declared: a database without them has no BFH-ATTRS and is, byte for
 * byte, what it was before attributes existed. Read and written through an env_t (borrowed).
 */
#ifndef BFH_API_DB_ATTRS_H
#define BFH_API_DB_ATTRS_H

#include <stddef.h>

#include "bfh.h"
#include "query/attr.h"
#include "util/env.h"
#include "util/err.h"

#define DB_ATTRS_FILE "BFH-ATTRS"
#define DB_ATTRS_MAGIC "BFHA"

/* Parses the declarations attrs[0, n) of bfh_options ("NAME=EXTRACTOR" each). BFH_OK and
   *specs (NULL when n is 0; the caller frees it with attr_specs_free); BFH_E_INVALID naming
   the declaration and the column where it went wrong, a NULL name or extractor, a name
   declared twice or too many; BFH_E_NOMEM. */
int db_attrs_parse(const bfh_attribute *attrs, size_t n, attr_spec_t **specs, err_t *err);

/* Reads dir/BFH-ATTRS. BFH_OK, *specs and *n (the caller frees with attr_specs_free);
   BFH_NOT_FOUND if the file does not exist; BFH_E_IO, BFH_E_CORRUPT (with the offset),
   BFH_E_UNSUPPORTED with a message naming the file. */
int db_attrs_read(env_t *io, const char *dir, attr_spec_t **specs, size_t *n, err_t *err);
/* Writes dir/BFH-ATTRS atomically (tmp file, fsync, rename, fsync of dir). */
int db_attrs_write(env_t *io, const char *dir, const attr_spec_t *specs, size_t n, err_t *err);
/* Compares the stored declarations with the wanted ones, as sets by name (the order does not
   matter: an item's hash depends on its attribute's name, not its position). BFH_OK if they
   are the same; BFH_E_INVALID with a message naming the first difference otherwise. */
int db_attrs_check(const char *dir, const attr_spec_t *stored, size_t ns, const attr_spec_t *want,
                   size_t nw, err_t *err);

#endif

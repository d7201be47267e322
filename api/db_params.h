/* db_params_t: the value-filter parameters fixed for the life of a database (m, k and the
 * hash seed), stored in the file BFH-PARAMS of the database directory so that every table's
 * filter can be OR-merged with every other (the hierarchy's order and the leaf placement are
 * not stored: they only shape the in-memory index and may change between opens).
 *
 * File layout (36 bytes, little-endian, doc/format.md "BFH-PARAMS"):
 *   magic "BFHP" (4 bytes) | version fixed32 (1) | m fixed64 | k fixed32 | reserved fixed32 (0)
 *   | seed fixed64 | crc32c fixed32 (masked, over the 32 bytes before it)
 * Written once, at the first open with value filters, via BFH-PARAMS.tmp + fsync + rename.
 * Read and written through an env_t (borrowed; env_default() unless a test injects
 * faults, util/env.h).
 */
#ifndef BFH_LSM_HOOKS_DB_PARAMS_H
#define BFH_LSM_HOOKS_DB_PARAMS_H

#include <stdint.h>

#include "lsm_hooks/engines/engine.h"
#include "util/env.h"
#include "util/err.h"

#define DB_PARAMS_FILE ENGINE_PARAMS_FILE
#define DB_PARAMS_MAGIC "BFHP"
#define DB_PARAMS_VERSION 1u
#define DB_PARAMS_BYTES 36
/* The paper's k: a new database's under every layout but the lean one with value-to-block
   maps (api/options.c). */
#define DB_PARAMS_PAPER_HASHES 3

typedef struct db_params {
  uint64_t m;    /* filter bits */
  uint32_t k;    /* hash functions */
  uint64_t seed; /* value hash seed */
} db_params_t;

/* Encodes p into out (DB_PARAMS_BYTES). */
void db_params_encode(const db_params_t *p, uint8_t out[DB_PARAMS_BYTES]);
/* Decodes data read from `path` (named in messages). BFH_OK, or BFH_E_CORRUPT (size, magic,
   checksum, reserved field) / BFH_E_UNSUPPORTED (a newer version). */
int db_params_decode(const uint8_t *data, size_t n, const char *path, db_params_t *out, err_t *err);

/* Reads dir/BFH-PARAMS. BFH_OK and *out; BFH_NOT_FOUND if the file does not exist; BFH_E_IO,
   BFH_E_CORRUPT, BFH_E_UNSUPPORTED with a message naming the file. */
int db_params_read(env_t *io, const char *dir, db_params_t *out, err_t *err);
/* Writes dir/BFH-PARAMS atomically (tmp file, fsync, rename, fsync of dir). */
int db_params_write(env_t *io, const char *dir, const db_params_t *p, err_t *err);
/* Compares the stored parameters with the wanted ones. BFH_OK if m, k and seed are equal;
   BFH_E_INVALID with a message naming the stored values otherwise. */
int db_params_check(const char *dir, const db_params_t *stored, const db_params_t *want,
                    err_t *err);

#endif

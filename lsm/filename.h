/* File names inside an LSM database directory, and the IDENTITY marker.
 *
 * A directory holds (NNNNNN = a decimal file number, at least 6 digits, one number space
 * shared by logs, tables and manifests; a number is never reused):
 *   NNNNNN.log        write-ahead log
 *   NNNNNN.sst        table (table_file_path in lsm/table.h; LevelDB writes .ldb, and a
 *                     LevelDB directory is refused by its missing IDENTITY anyway)
 *   MANIFEST-NNNNNN   log of version edits
 *   CURRENT           name of the current manifest, then '\n'
 *   CURRENT.tmp       CURRENT being replaced (rename makes the switch atomic)
 *   LOCK              flock'd while the database is open
 *   IDENTITY          marks the directory as a bfh LSM database and names its format
 *                     version (doc/format.md "Manifest")
 */
#ifndef BFH_LSM_FILENAME_H
#define BFH_LSM_FILENAME_H

#include <stddef.h>
#include <stdint.h>

#include "util/env.h"
#include "util/err.h"

typedef enum lsm_file_type {
  LSM_FILE_LOG,
  LSM_FILE_TABLE,
  LSM_FILE_MANIFEST,
  LSM_FILE_CURRENT,
  LSM_FILE_TEMP,
  LSM_FILE_LOCK,
  LSM_FILE_IDENTITY
} lsm_file_type_t;

#define LSM_TABLE_EXT "sst"

/* The on-disk format version this code writes and reads. */
#define LSM_FORMAT_VERSION 1u
#define LSM_IDENTITY_MAGIC "bfhlsmdb" /* 8 bytes */
#define LSM_IDENTITY_BYTES 16         /* magic[8] | version fixed32 | masked crc32c fixed32 */

/* Each returns "dir/<name>" in a string of its own, as long as it needs to be. NULL only on
   no memory. Client frees it with free(). */
char *lsm_filename_log(const char *dir, uint64_t number);
char *lsm_filename_manifest(const char *dir, uint64_t number);
char *lsm_filename_current(const char *dir);
char *lsm_filename_temp(const char *dir);
char *lsm_filename_lock(const char *dir);
char *lsm_filename_identity(const char *dir);

/* Parses a bare file name (no directory). Returns 1 and sets *type (and *number for
   numbered files, 0 otherwise) if it is one of ours, 0 if not. */
int lsm_filename_parse(const char *name, uint64_t *number, lsm_file_type_t *type);

/* Encodes the IDENTITY contents (LSM_IDENTITY_BYTES) for the current format version. */
void lsm_identity_encode(uint8_t out[LSM_IDENTITY_BYTES]);
/* Checks IDENTITY contents read from `path`. ST_OK; ST_E_INVALID "not a bfh lsm
   database" (another engine's IDENTITY: its first bytes differ from the magic in more than
   two places); ST_E_CORRUPT (ours but damaged: empty, cut short, a magic byte or two
   flipped, a checksum mismatch); ST_E_UNSUPPORTED (a format version this code does not
   read). */
int lsm_identity_check(const uint8_t *data, size_t n, const char *path, err_t *err);
/* Reads dir/IDENTITY (through io) and checks it as lsm_identity_check does. ST_NOT_FOUND (no
   message) if the file does not exist; ST_E_IO on a failed read. */
int lsm_identity_read(env_t *io, const char *dir, err_t *err);

#endif

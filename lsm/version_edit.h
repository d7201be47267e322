/* lsm_version_edit_t: one change to the set of live tables, as stored in the manifest.
 *
 * The manifest is a log (lsm/log_writer.h) whose records are encoded edits; the log
 * format gives every record its CRC32C. An edit's encoding is a sequence of tagged fields
 * (all integers via util/coding.h; doc/format.md "Manifest"):
 *   tag varint32, then by tag:
 *   1 LOG_NUMBER      varint64            logs older than this are obsolete
 *   2 NEXT_FILE       varint64            next unused file number
 *   3 LAST_SEQUENCE   varint64
 *   4 COMPACT_POINTER varint32 level, varint32 len, internal key
 *   5 DELETED_FILE    varint32 level, varint64 number
 *   6 NEW_FILE        varint32 level, varint64 number, varint64 size,
 *                     varint32 len + smallest internal key, varint32 len + largest
 *   7 FORMAT_VERSION  varint32            (first record of every manifest)
 *   8 LOG_CLOSED      varint64 number, varint64 size: a clean close left log `number`
 *                     complete and synced at `size` bytes (its replay must see all of it)
 *   9 FILE_MAX_SEQ    varint64: the largest sequence number of the entries of the file the
 *                     NEW_FILE just before it adds (written for every table built; a file
 *                     without it has no recorded bound, LSM_SEQ_UNKNOWN)
 * Unknown tags are a corruption: an edit is never half understood.
 */
#ifndef BFH_LSM_VERSION_EDIT_H
#define BFH_LSM_VERSION_EDIT_H

#include <stddef.h>
#include <stdatomic.h>
#include <stdint.h>

#include "lsm/internal_key.h"
#include "util/err.h"

#define LSM_NUM_LEVELS 7

struct table;

/* A table file of a version. Shared by the versions that list it (refs counts them,
   changed under the version set's lock). smallest/largest are internal keys, owned.
   table: the open reader, set once on first use (lsm_file_meta_table in db.c) so that a
   get needs no cache lookup; the meta owns one reference, dropped by destroy. */
typedef struct lsm_file_meta {
  uint64_t number;
  uint64_t size;
  uint8_t *smallest;
  size_t smallest_len;
  uint8_t *largest;
  size_t largest_len;
  uint64_t max_seq; /* the largest sequence number of its entries; LSM_SEQ_UNKNOWN: not recorded */
  int refs;
  _Atomic(struct table *) table;
} lsm_file_meta_t;

/* Allocates a file meta with copies of the keys, max_seq LSM_SEQ_UNKNOWN and refs = 0; NULL
   on no memory.
   Client frees with lsm_file_meta_destroy. */
lsm_file_meta_t *lsm_file_meta_create(uint64_t number, uint64_t size, const void *smallest,
                                      size_t smallest_len, const void *largest, size_t largest_len);
void lsm_file_meta_destroy(lsm_file_meta_t *f); /* NULL allowed */

typedef struct lsm_deleted_file {
  int level;
  uint64_t number;
} lsm_deleted_file_t;

typedef struct lsm_new_file {
  int level;
  lsm_file_meta_t *meta; /* owned by the edit */
} lsm_new_file_t;

typedef struct lsm_compact_pointer {
  int level;
  uint8_t *key; /* owned */
  size_t len;
} lsm_compact_pointer_t;

/* Caller-owned struct: lsm_version_edit_init / lsm_version_edit_release. */
typedef struct lsm_version_edit {
  int has_log_number, has_next_file, has_last_sequence, has_format_version, has_log_closed;
  uint64_t log_number, next_file, last_sequence;
  uint64_t closed_log, closed_log_size; /* LOG_CLOSED */
  uint32_t format_version;
  lsm_compact_pointer_t *pointers;
  size_t npointers;
  lsm_deleted_file_t *deleted;
  size_t ndeleted;
  lsm_new_file_t *added;
  size_t nadded;
} lsm_version_edit_t;

void lsm_version_edit_init(lsm_version_edit_t *e);
void lsm_version_edit_release(lsm_version_edit_t *e);

void lsm_version_edit_set_log_number(lsm_version_edit_t *e, uint64_t n);
void lsm_version_edit_set_next_file(lsm_version_edit_t *e, uint64_t n);
void lsm_version_edit_set_last_sequence(lsm_version_edit_t *e, uint64_t s);
/* Records that log `number` was closed cleanly, synced, at `size` bytes. */
void lsm_version_edit_set_log_closed(lsm_version_edit_t *e, uint64_t number, uint64_t size);
/* These copy their arguments; ST_OK or ST_E_NOMEM. */
int lsm_version_edit_set_compact_pointer(lsm_version_edit_t *e, int level, const void *key,
                                         size_t len);
int lsm_version_edit_delete_file(lsm_version_edit_t *e, int level, uint64_t number);
int lsm_version_edit_add_file(lsm_version_edit_t *e, int level, uint64_t number, uint64_t size,
                              const void *smallest, size_t smallest_len, const void *largest,
                              size_t largest_len);
/* lsm_version_edit_add_file of a table whose entries' largest sequence number is max_seq
   (LSM_SEQ_UNKNOWN: not known). */
int lsm_version_edit_add_table(lsm_version_edit_t *e, int level, uint64_t number, uint64_t size,
                               const void *smallest, size_t smallest_len, const void *largest,
                               size_t largest_len, uint64_t max_seq);

/* Encodes e into a malloc'd buffer (*out, caller frees). ST_OK or ST_E_NOMEM. */
int lsm_version_edit_encode(const lsm_version_edit_t *e, uint8_t **out, size_t *len);
/* Decodes [p, p+n) into e (initialized by the caller, released by the caller even on
   failure). ST_E_CORRUPT names `where` (e.g. "MANIFEST-000005: record at 1234"). */
int lsm_version_edit_decode(lsm_version_edit_t *e, const uint8_t *p, size_t n, const char *where,
                            err_t *err);

#endif

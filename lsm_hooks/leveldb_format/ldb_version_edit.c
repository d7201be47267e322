/* ldb_version: see leveldb_format/ldb_version_edit.h for the edit layout. */
#include "lsm_hooks/leveldb_format/ldb_version_edit.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bfh.h"
#include "lsm_hooks/leveldb_format/ldb_log.h"
#include "util/coding.h"

static void file_release(ldb_file_t *f) {
  free(f->smallest);
  free(f->largest);
}

void ldb_version_release(ldb_version_t *v) {
  if (!v) return;
  for (size_t i = 0; i < v->nfiles; i++) file_release(&v->files[i]);
  free(v->files);
  memset(v, 0, sizeof *v);
}

static uint8_t *dup_bytes(const uint8_t *p, size_t n) {
  uint8_t *d = malloc(n ? n : 1);
  if (d && n) memcpy(d, p, n);
  return d;
}

/* Appends a copy of f (its keys copied) to v. */
static int add_file(ldb_version_t *v, const ldb_file_t *f) {
  if (v->nfiles == v->cap) {
    size_t c = v->cap ? 2 * v->cap : 64;
    ldb_file_t *nf = realloc(v->files, c * sizeof *nf);
    if (!nf) return BFH_E_NOMEM;
    v->files = nf;
    v->cap = c;
  }
  ldb_file_t d = *f;
  d.smallest = dup_bytes(f->smallest, f->smallest_len);
  d.largest = dup_bytes(f->largest, f->largest_len);
  if (!d.smallest || !d.largest) {
    file_release(&d);
    return BFH_E_NOMEM;
  }
  v->files[v->nfiles++] = d;
  return BFH_OK;
}

int ldb_version_copy(ldb_version_t *dst, const ldb_version_t *src) {
  memset(dst, 0, sizeof *dst);
  dst->has_log_number = src->has_log_number;
  dst->log_number = src->log_number;
  dst->prev_log_number = src->prev_log_number;
  dst->next_file = src->next_file;
  dst->last_sequence = src->last_sequence;
  for (size_t i = 0; i < src->nfiles; i++)
    if (add_file(dst, &src->files[i]) != BFH_OK) {
      ldb_version_release(dst);
      return BFH_E_NOMEM;
    }
  return BFH_OK;
}

static void delete_file(ldb_version_t *v, int level, uint64_t number) {
  for (size_t i = 0; i < v->nfiles; i++)
    if (v->files[i].number == number && v->files[i].level == level) {
      file_release(&v->files[i]);
      v->files[i] = v->files[--v->nfiles];
      return;
    }
}

/* A varstring at p: its bytes in *s, *n; returns the next field, NULL if cut short. */
static const uint8_t *get_slice(const uint8_t *p, const uint8_t *end, const uint8_t **s,
                                size_t *n) {
  uint32_t len;
  p = decode_varint32(p, end, &len);
  if (!p || len > (size_t)(end - p)) return NULL;
  *s = p;
  *n = len;
  return p + len;
}

/* A varstring holding an internal key: its user key; NULL if cut short or under 8 bytes. */
static const uint8_t *get_user_key(const uint8_t *p, const uint8_t *end, uint8_t **key, size_t *n) {
  const uint8_t *s;
  size_t len;
  p = get_slice(p, end, &s, &len);
  if (!p || len < 8) return NULL;
  *key = (uint8_t *)s;
  *n = len - 8;
  return p;
}

/* The new-file field at p into *f (keys borrowed from p); NULL if malformed. */
static const uint8_t *get_new_file(const uint8_t *p, const uint8_t *end, ldb_file_t *f) {
  uint32_t level;
  p = decode_varint32(p, end, &level);
  if (p) p = decode_varint64(p, end, &f->number);
  if (p) p = decode_varint64(p, end, &f->size);
  if (p) p = get_user_key(p, end, &f->smallest, &f->smallest_len);
  if (p) p = get_user_key(p, end, &f->largest, &f->largest_len);
  if (!p || level >= LDB_NUM_LEVELS) return NULL;
  f->level = (int)level;
  return p;
}

/* The max_seq of the files an edit adds until the whole edit is read (ldb_file_t.max_seq); an
   edit that fails part way leaves it, still a bound (LevelDB's sequences are under 2^56). */
#define SEQ_PENDING (LDB_SEQ_UNKNOWN - 1)

/* The bound of the files one edit added (marked SEQ_PENDING): the largest bound of the files
   it deleted (deleted: it deleted any), else its last sequence (has_last). */
static void bound_added(ldb_version_t *v, int deleted, uint64_t deleted_max, int has_last,
                        uint64_t last) {
  uint64_t bound = deleted ? deleted_max : has_last ? last : LDB_SEQ_UNKNOWN;
  for (size_t i = 0; i < v->nfiles; i++)
    if (v->files[i].max_seq == SEQ_PENDING) v->files[i].max_seq = bound;
}

/* The bound of the file (level, number) of v: LDB_SEQ_UNKNOWN if v has no such file. */
static uint64_t file_bound(const ldb_version_t *v, int level, uint64_t number) {
  for (size_t i = 0; i < v->nfiles; i++)
    if (v->files[i].number == number && v->files[i].level == level) return v->files[i].max_seq;
  return LDB_SEQ_UNKNOWN;
}

int ldb_version_apply(ldb_version_t *v, const uint8_t *p, size_t n, const char *where, err_t *err) {
  if (n == 0) return BFH_OK; /* an empty record (p may be NULL): no field */
  const uint8_t *q = p, *end = p + n;
  int deleted = 0, has_last = 0;
  uint64_t deleted_max = 0;
  while (q < end) {
    size_t field = (size_t)(q - p);
    uint32_t tag, u32;
    uint64_t u64;
    const uint8_t *s;
    size_t slen;
    ldb_file_t f;
    q = decode_varint32(q, end, &tag);
    if (!q) break;
    switch (tag) {
      case LDB_TAG_COMPARATOR:
        q = get_slice(q, end, &s, &slen);
        break;
      case LDB_TAG_LOG_NUMBER:
        if ((q = decode_varint64(q, end, &v->log_number))) v->has_log_number = 1;
        break;
      case LDB_TAG_NEXT_FILE:
        q = decode_varint64(q, end, &v->next_file);
        break;
      case LDB_TAG_LAST_SEQUENCE:
        if ((q = decode_varint64(q, end, &v->last_sequence))) has_last = 1;
        break;
      case LDB_TAG_PREV_LOG_NUMBER:
        q = decode_varint64(q, end, &v->prev_log_number);
        break;
      case LDB_TAG_COMPACT_POINTER:
        q = decode_varint32(q, end, &u32);
        if (q) q = get_slice(q, end, &s, &slen);
        break;
      case LDB_TAG_DELETED_FILE:
        q = decode_varint32(q, end, &u32);
        if (q) q = decode_varint64(q, end, &u64);
        if (q) {
          uint64_t b = file_bound(v, (int)u32, u64);
          if (!deleted || b > deleted_max) deleted_max = b;
          deleted = 1;
          delete_file(v, (int)u32, u64);
        }
        break;
      case LDB_TAG_NEW_FILE:
        q = get_new_file(q, end, &f);
        f.max_seq = SEQ_PENDING;
        if (q && add_file(v, &f) != BFH_OK)
          return err_set(err, BFH_E_NOMEM, "%s: no memory for the file list", where);
        break;
      default:
        return err_set(err, BFH_E_CORRUPT, "%s: unknown edit tag %u at +%zu", where, tag, field);
    }
    if (!q)
      return err_set(err, BFH_E_CORRUPT, "%s: edit field (tag %u) at +%zu is malformed", where, tag,
                     field);
  }
  if (!q) return err_set(err, BFH_E_CORRUPT, "%s: bad edit tag", where);
  bound_added(v, deleted, deleted_max, has_last, v->last_sequence);
  return BFH_OK;
}

typedef struct replay {
  ldb_version_t *v;
  const char *path;
} replay_t;

static int replay_edit(void *arg, const uint8_t *p, size_t n, uint64_t at, int *stopped,
                       err_t *err) {
  replay_t *r = arg;
  (void)stopped;
  char where[ERR_MSG_BYTES]; /* only a message's prefix: err_t holds no more */
  snprintf(where, sizeof where, "manifest %s: record at %llu", r->path, (unsigned long long)at);
  return ldb_version_apply(r->v, p, n, where, err);
}

int ldb_version_read(env_t *io, const char *path, uint64_t offset, ldb_version_t *v,
                     uint64_t *next_offset, err_t *err) {
  replay_t r = {v, path};
  return ldb_log_records(io, path, "manifest", offset, 0, replay_edit, &r, next_offset, NULL, err);
}

int ldb_version_check(env_t *io, const char *path, ldb_version_t *v, ldb_read_stats_t *st,
                      err_t *err) {
  replay_t r = {v, path};
  return ldb_log_records(io, path, "manifest", 0, LDB_LOG_CHECK_TAIL, replay_edit, &r, NULL, st,
                         err);
}

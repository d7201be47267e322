/* rdb_manifest: see rocksdb_format/rdb_manifest.h for the edit layout. */
#include "lsm_hooks/rocksdb_format/rdb_manifest.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bfh.h"
#include "lsm_hooks/rocksdb_format/rdb_log.h"
#include "util/coding.h"

/* ---- The version ------------------------------------------------------------------------ */

static void file_release(rdb_file_t *f) {
  free(f->smallest);
  free(f->largest);
  free(f->checksum);
  free(f->checksum_func);
}

static void cf_release(rdb_cf_t *c) {
  free(c->name);
  free(c->comparator);
}

void rdb_version_release(rdb_version_t *v) {
  if (!v) return;
  for (size_t i = 0; i < v->nfiles; i++) file_release(&v->files[i]);
  for (size_t i = 0; i < v->ncfs; i++) cf_release(&v->cfs[i]);
  free(v->files);
  free(v->cfs);
  free(v->blobs);
  free(v->db_id);
  if (v->before_group) {
    rdb_version_release(v->before_group);
    free(v->before_group);
  }
  memset(v, 0, sizeof *v);
}

static void *dup_mem(const void *p, size_t n, size_t extra) {
  uint8_t *d = malloc(n + extra ? n + extra : 1);
  if (!d) return NULL;
  if (n) memcpy(d, p, n);
  if (extra) d[n] = 0;
  return d;
}

/* Grows *arr (of *cap elements of size sz) to hold one more than n. */
static int grow(void **arr, size_t *cap, size_t n, size_t sz) {
  if (n < *cap) return BFH_OK;
  size_t c = *cap ? 2 * *cap : 16;
  void *a = realloc(*arr, c * sz);
  if (!a) return BFH_E_NOMEM;
  *arr = a;
  *cap = c;
  return BFH_OK;
}

/* Appends a deep copy of f to v. */
static int add_file(rdb_version_t *v, const rdb_file_t *f) {
  if (grow((void **)&v->files, &v->files_cap, v->nfiles, sizeof *v->files)) return BFH_E_NOMEM;
  rdb_file_t d = *f;
  d.smallest = dup_mem(f->smallest, f->smallest_len, 0);
  d.largest = dup_mem(f->largest, f->largest_len, 0);
  d.checksum = f->checksum ? dup_mem(f->checksum, f->checksum_len, 0) : NULL;
  d.checksum_func =
      f->checksum_func ? dup_mem(f->checksum_func, strlen(f->checksum_func), 1) : NULL;
  if (!d.smallest || !d.largest || (f->checksum && !d.checksum) ||
      (f->checksum_func && !d.checksum_func)) {
    file_release(&d);
    return BFH_E_NOMEM;
  }
  v->files[v->nfiles++] = d;
  return BFH_OK;
}

static int add_cf(rdb_version_t *v, uint32_t id, const char *name, size_t name_len,
                  const char *comparator) {
  if (grow((void **)&v->cfs, &v->cfs_cap, v->ncfs, sizeof *v->cfs)) return BFH_E_NOMEM;
  rdb_cf_t c = {.id = id};
  c.name = dup_mem(name, name_len, 1);
  c.comparator = comparator ? dup_mem(comparator, strlen(comparator), 1) : NULL;
  if (!c.name || (comparator && !c.comparator)) {
    cf_release(&c);
    return BFH_E_NOMEM;
  }
  v->cfs[v->ncfs++] = c;
  return BFH_OK;
}

int rdb_version_copy(rdb_version_t *dst, const rdb_version_t *src) {
  memset(dst, 0, sizeof *dst);
  dst->next_file = src->next_file;
  dst->last_sequence = src->last_sequence;
  dst->prev_log_number = src->prev_log_number;
  dst->min_log_number_to_keep = src->min_log_number_to_keep;
  dst->max_column_family = src->max_column_family;
  dst->edits = src->edits;
  if (src->db_id && !(dst->db_id = dup_mem(src->db_id, strlen(src->db_id), 1))) goto nomem;
  for (size_t i = 0; i < src->ncfs; i++) {
    const rdb_cf_t *c = &src->cfs[i];
    if (add_cf(dst, c->id, c->name, strlen(c->name), c->comparator)) goto nomem;
    dst->cfs[i].log_number = c->log_number;
  }
  for (size_t i = 0; i < src->nfiles; i++)
    if (add_file(dst, &src->files[i])) goto nomem;
  if (src->nblobs) {
    dst->blobs = dup_mem(src->blobs, src->nblobs * sizeof *src->blobs, 0);
    if (!dst->blobs) goto nomem;
    dst->nblobs = dst->blobs_cap = src->nblobs;
  }
  if (src->before_group) { /* an open atomic group is copied with it */
    dst->before_group = calloc(1, sizeof *dst->before_group);
    if (!dst->before_group || rdb_version_copy(dst->before_group, src->before_group)) goto nomem;
    dst->group_left = src->group_left;
  }
  return BFH_OK;
nomem:
  rdb_version_release(dst);
  return BFH_E_NOMEM;
}

static rdb_cf_t *find_cf(const rdb_version_t *v, uint32_t id) {
  for (size_t i = 0; i < v->ncfs; i++)
    if (v->cfs[i].id == id) return &v->cfs[i];
  return NULL;
}

const rdb_cf_t *rdb_version_cf(const rdb_version_t *v, uint32_t id) {
  return find_cf(v, id);
}

const rdb_cf_t *rdb_version_cf_by_name(const rdb_version_t *v, const char *name) {
  for (size_t i = 0; i < v->ncfs; i++)
    if (strcmp(v->cfs[i].name, name) == 0) return &v->cfs[i];
  return NULL;
}

uint64_t rdb_version_min_log(const rdb_version_t *v) {
  uint64_t m = UINT64_MAX;
  for (size_t i = 0; i < v->ncfs; i++)
    if (v->cfs[i].log_number < m) m = v->cfs[i].log_number;
  return m == UINT64_MAX ? 0 : m;
}

int rdb_version_log_wanted(const rdb_version_t *v, uint32_t cf, uint64_t log_number) {
  const rdb_cf_t *c = find_cf(v, cf);
  return c && log_number >= c->log_number;
}

size_t rdb_version_size_in_bytes(const rdb_version_t *v) {
  size_t n = sizeof *v + v->files_cap * sizeof *v->files + v->cfs_cap * sizeof *v->cfs +
             v->blobs_cap * sizeof *v->blobs + (v->db_id ? strlen(v->db_id) + 1 : 0);
  for (size_t i = 0; i < v->nfiles; i++) {
    const rdb_file_t *f = &v->files[i];
    n += f->smallest_len + f->largest_len + f->checksum_len +
         (f->checksum_func ? strlen(f->checksum_func) + 1 : 0);
  }
  for (size_t i = 0; i < v->ncfs; i++)
    n += strlen(v->cfs[i].name) + 1 + (v->cfs[i].comparator ? strlen(v->cfs[i].comparator) + 1 : 0);
  if (v->before_group) n += rdb_version_size_in_bytes(v->before_group);
  return n;
}

/* ---- Decoding one edit ------------------------------------------------------------------ */

typedef struct deleted {
  int level;
  uint64_t number;
} deleted_t;

/* One VersionEdit, decoded; its byte strings borrowed from the record. */
typedef struct edit {
  uint32_t cf;
  int cf_add, cf_drop;
  const uint8_t *cf_name, *comparator, *db_id;
  size_t cf_name_len, comparator_len, db_id_len;
  int has_comparator, has_log, has_prev_log, has_next_file, has_last_seq, has_min_log, has_max_cf,
      has_db_id, in_group;
  uint64_t log_number, prev_log, next_file, last_seq, min_log;
  uint32_t max_cf, group_left;
  deleted_t *deleted;
  size_t ndeleted, deleted_cap;
  rdb_file_t *added; /* keys, checksum borrowed; checksum_func malloc'd (NUL-terminated) */
  size_t nadded, added_cap;
  rdb_blob_file_t *blobs; /* additions (count, bytes) and garbage (garbage_*) */
  int *blob_is_garbage;
  size_t nblobs, blobs_cap, garbage_cap;
} edit_t;

static void edit_release(edit_t *e) {
  for (size_t i = 0; i < e->nadded; i++) free(e->added[i].checksum_func);
  free(e->deleted);
  free(e->added);
  free(e->blobs);
  free(e->blob_is_garbage);
}

typedef struct cursor {
  const uint8_t *p, *limit;
} cursor_t;

static int get_v32(cursor_t *c, uint32_t *v) {
  const uint8_t *q = decode_varint32(c->p, c->limit, v);
  if (!q) return 0;
  c->p = q;
  return 1;
}
static int get_v64(cursor_t *c, uint64_t *v) {
  const uint8_t *q = decode_varint64(c->p, c->limit, v);
  if (!q) return 0;
  c->p = q;
  return 1;
}
static int get_str(cursor_t *c, const uint8_t **s, size_t *n) {
  uint32_t len;
  cursor_t d = *c;
  if (!get_v32(&d, &len) || (size_t)(d.limit - d.p) < len) return 0;
  *s = d.p;
  *n = len;
  c->p = d.p + len;
  return 1;
}
/* An internal key: the user key and its trailer's sequence and type. */
static int get_ikey(cursor_t *c, uint8_t **key, size_t *n, uint64_t *seq, int *type) {
  const uint8_t *s;
  size_t len;
  if (!get_str(c, &s, &len) || len < 8) return 0;
  uint64_t t = decode_fixed64(s + len - 8);
  *key = (uint8_t *)s; /* borrowed until add_file copies it */
  *n = len - 8;
  *seq = t >> 8;
  *type = (int)(t & 0xff);
  return 1;
}

/* The custom fields of a blob addition or garbage record, up to the end marker 0. */
static const char *skip_blob_custom(cursor_t *c) {
  for (;;) {
    uint32_t tag;
    const uint8_t *s;
    size_t n;
    if (!get_v32(c, &tag)) return "blob file custom field tag";
    if (tag == 0) return NULL;
    if (tag & 64) return "blob file custom field not supported (forward incompatible)";
    if (!get_str(c, &s, &n)) return "blob file custom field";
  }
}

/* The tags of a WAL addition (WalAddition::DecodeFrom): number, then tags up to 1. */
static const char *skip_wal_addition(cursor_t *c) {
  uint64_t number, size;
  if (!get_v64(c, &number)) return "WAL addition number";
  for (;;) {
    uint32_t tag;
    if (!get_v32(c, &tag)) return "WAL addition tag";
    if (tag == 1) return NULL;
    if (tag != 2) return "WAL addition: unknown tag";
    if (!get_v64(c, &size)) return "WAL addition synced size";
  }
}

/* The fields of a new-file record (tags 7, 100, 102, 103) into f. */
static const char *get_new_file(cursor_t *c, uint32_t tag, rdb_file_t *f, edit_t *e) {
  uint32_t level, path_id = 0;
  memset(f, 0, sizeof *f);
  f->largest_seqno = UINT64_MAX;
  if (!get_v32(c, &level) || !get_v64(c, &f->number)) return "new-file entry";
  if (tag == RDB_TAG_NEW_FILE3 && !get_v32(c, &path_id)) return "new-file3 entry";
  if (!get_v64(c, &f->size) ||
      !get_ikey(c, &f->smallest, &f->smallest_len, &f->smallest_key_seq, &f->smallest_key_type) ||
      !get_ikey(c, &f->largest, &f->largest_len, &f->largest_key_seq, &f->largest_key_type))
    return "new-file entry";
  f->level = (int)level;
  f->path_id = path_id;
  if (tag == RDB_TAG_NEW_FILE) return NULL;
  if (!get_v64(c, &f->smallest_seqno) || !get_v64(c, &f->largest_seqno))
    return "new-file entry sequence numbers";
  if (tag != RDB_TAG_NEW_FILE4) return NULL;
  for (;;) {
    uint32_t ct;
    const uint8_t *s;
    size_t n;
    if (!get_v32(c, &ct)) return "new-file4 custom field";
    if (ct == RDB_NF_TERMINATE) return NULL;
    if (!get_str(c, &s, &n)) return "new-file4 custom field length prefixed slice error";
    cursor_t fc = {s, s + n};
    switch (ct) {
      case RDB_NF_PATH_ID:
        if (n != 1 || s[0] > 3) return "path_id field";
        f->path_id = s[0];
        break;
      case RDB_NF_OLDEST_ANCESTER_TIME:
        if (!get_v64(&fc, &f->oldest_ancester_time)) return "invalid oldest ancester time";
        break;
      case RDB_NF_CREATION_TIME:
        if (!get_v64(&fc, &f->file_creation_time)) return "invalid file creation time";
        break;
      case RDB_NF_CHECKSUM:
        f->checksum = (uint8_t *)s;
        f->checksum_len = n;
        break;
      case RDB_NF_CHECKSUM_FUNC:
        free(f->checksum_func);
        if (!(f->checksum_func = dup_mem(s, n, 1))) return "out of memory";
        break;
      case RDB_NF_NEED_COMPACTION:
        if (n != 1) return "need_compaction field wrong size";
        f->marked_for_compaction = s[0] == 1;
        break;
      case RDB_NF_MIN_LOG_TO_KEEP:
        if (n < 8) return "deleted log number malformatted";
        e->min_log = decode_fixed64(s);
        e->has_min_log = 1;
        break;
      case RDB_NF_OLDEST_BLOB_FILE:
        if (!get_v64(&fc, &f->oldest_blob_file)) return "invalid oldest blob file number";
        break;
      case RDB_NF_TEMPERATURE:
        if (n != 1) return "temperature field wrong size";
        f->temperature = s[0];
        break;
      case RDB_NF_UNIQUE_ID:
        if (n != 16) return "invalid unique id";
        memcpy(f->unique_id, s, 16);
        f->has_unique_id = 1;
        break;
      default: /* kMinTimestamp, kMaxTimestamp and fields from the future */
        if (ct & RDB_NF_NON_SAFE_IGNORE) return "new-file4 custom field not supported";
        break;
    }
  }
}

/* Decodes a whole edit (RocksDB's VersionEdit::DecodeFrom): NULL, or what is wrong. */
static const char *edit_decode(edit_t *e, const uint8_t *p, size_t n) {
  if (n == 0) return NULL; /* an empty edit (p may be NULL then): nothing to decode */
  cursor_t c = {p, p + n};
  uint32_t tag;
  while (c.p < c.limit) {
    if (!get_v32(&c, &tag)) return "invalid tag";
    const uint8_t *s;
    size_t sn;
    uint64_t u;
    const char *msg = NULL;
    switch (tag) {
      case RDB_TAG_DB_ID:
        if (!get_str(&c, &e->db_id, &e->db_id_len)) return "db id";
        e->has_db_id = 1;
        break;
      case RDB_TAG_COMPARATOR:
        if (!get_str(&c, &e->comparator, &e->comparator_len)) return "comparator name";
        e->has_comparator = 1;
        break;
      case RDB_TAG_LOG_NUMBER:
        if (!get_v64(&c, &e->log_number)) return "log number";
        e->has_log = 1;
        break;
      case RDB_TAG_PREV_LOG_NUMBER:
        if (!get_v64(&c, &e->prev_log)) return "previous log number";
        e->has_prev_log = 1;
        break;
      case RDB_TAG_NEXT_FILE:
        if (!get_v64(&c, &e->next_file)) return "next file number";
        e->has_next_file = 1;
        break;
      case RDB_TAG_MAX_CF:
        if (!get_v32(&c, &e->max_cf)) return "max column family";
        e->has_max_cf = 1;
        break;
      case RDB_TAG_MIN_LOG_TO_KEEP:
        if (!get_v64(&c, &e->min_log)) return "min log number to keep";
        e->has_min_log = 1;
        break;
      case RDB_TAG_LAST_SEQUENCE:
        if (!get_v64(&c, &e->last_seq)) return "last sequence number";
        e->has_last_seq = 1;
        break;
      case RDB_TAG_COMPACT_CURSOR: {
        uint32_t level;
        uint8_t *k;
        size_t kn;
        int t;
        if (!get_v32(&c, &level) || !get_ikey(&c, &k, &kn, &u, &t)) return "compaction cursor";
        break;
      }
      case RDB_TAG_DELETED_FILE: {
        deleted_t d;
        uint32_t level;
        if (!get_v32(&c, &level) || !get_v64(&c, &d.number)) return "deleted file";
        d.level = (int)level;
        if (grow((void **)&e->deleted, &e->deleted_cap, e->ndeleted, sizeof d))
          return "out of memory";
        e->deleted[e->ndeleted++] = d;
        break;
      }
      case RDB_TAG_NEW_FILE:
      case RDB_TAG_NEW_FILE2:
      case RDB_TAG_NEW_FILE3:
      case RDB_TAG_NEW_FILE4: {
        if (grow((void **)&e->added, &e->added_cap, e->nadded, sizeof *e->added))
          return "out of memory";
        rdb_file_t *f = &e->added[e->nadded];
        msg = get_new_file(&c, tag, f, e);
        e->nadded++; /* counted also on failure: its checksum_func is freed with the edit */
        if (msg) return msg;
        break;
      }
      case RDB_TAG_BLOB_ADDITION:
      case RDB_TAG_BLOB_ADDITION_OLD:
      case RDB_TAG_BLOB_GARBAGE:
      case RDB_TAG_BLOB_GARBAGE_OLD: {
        int garbage = tag == RDB_TAG_BLOB_GARBAGE || tag == RDB_TAG_BLOB_GARBAGE_OLD;
        rdb_blob_file_t b = {0};
        if (!get_v64(&c, &b.number)) return "blob file number";
        uint64_t *count = garbage ? &b.garbage_count : &b.count;
        uint64_t *bytes = garbage ? &b.garbage_bytes : &b.bytes;
        if (!get_v64(&c, count) || !get_v64(&c, bytes)) return "blob file counts";
        if (!garbage) {
          const uint8_t *m, *cv;
          size_t mn, cvn;
          if (!get_str(&c, &m, &mn) || !get_str(&c, &cv, &cvn)) return "blob file checksum";
        }
        if ((msg = skip_blob_custom(&c))) return msg;
        size_t gcap = e->blobs_cap;
        if (grow((void **)&e->blobs, &e->blobs_cap, e->nblobs, sizeof b)) return "out of memory";
        if (e->blobs_cap != gcap || !e->blob_is_garbage) {
          int *g = realloc(e->blob_is_garbage, e->blobs_cap * sizeof *g);
          if (!g) return "out of memory";
          e->blob_is_garbage = g;
        }
        e->blob_is_garbage[e->nblobs] = garbage;
        e->blobs[e->nblobs++] = b;
        break;
      }
      case RDB_TAG_WAL_ADDITION:
        if ((msg = skip_wal_addition(&c))) return msg;
        break;
      case RDB_TAG_WAL_ADDITION2:
      case RDB_TAG_WAL_DELETION2: {
        if (!get_str(&c, &s, &sn)) return "WAL edit not prefixed by length";
        cursor_t w = {s, s + sn};
        if (tag == RDB_TAG_WAL_ADDITION2 && (msg = skip_wal_addition(&w))) return msg;
        if (tag == RDB_TAG_WAL_DELETION2 && !get_v64(&w, &u)) return "WAL deletion number";
        break;
      }
      case RDB_TAG_WAL_DELETION:
        if (!get_v64(&c, &u)) return "WAL deletion number";
        break;
      case RDB_TAG_COLUMN_FAMILY:
        if (!get_v32(&c, &e->cf)) return "set column family id";
        break;
      case RDB_TAG_CF_ADD:
        if (!get_str(&c, &e->cf_name, &e->cf_name_len)) return "column family add";
        e->cf_add = 1;
        break;
      case RDB_TAG_CF_DROP:
        e->cf_drop = 1;
        break;
      case RDB_TAG_IN_ATOMIC_GROUP:
        if (!get_v32(&c, &e->group_left)) return "remaining entries";
        e->in_group = 1;
        break;
      case RDB_TAG_FULL_HISTORY_TS_LOW:
        if (!get_str(&c, &s, &sn)) return "full_history_ts_low";
        if (sn == 0) return "full_history_ts_low: empty";
        break;
      default:
        if (!(tag & RDB_TAG_SAFE_IGNORE)) return "unknown tag";
        uint32_t len;
        if (!get_v32(&c, &len) || len > (size_t)(c.limit - c.p))
          return "safely ignoreable tag length error";
        c.p += len;
        break;
    }
  }
  return NULL;
}

/* ---- Applying an edit ------------------------------------------------------------------- */

static void drop_cf(rdb_version_t *v, uint32_t id) {
  size_t j = 0;
  for (size_t i = 0; i < v->nfiles; i++) {
    if (v->files[i].cf == id)
      file_release(&v->files[i]);
    else
      v->files[j++] = v->files[i];
  }
  v->nfiles = j;
  j = 0;
  for (size_t i = 0; i < v->nblobs; i++)
    if (v->blobs[i].cf != id) v->blobs[j++] = v->blobs[i];
  v->nblobs = j;
  for (size_t i = 0; i < v->ncfs; i++)
    if (v->cfs[i].id == id) {
      cf_release(&v->cfs[i]);
      memmove(&v->cfs[i], &v->cfs[i + 1], (v->ncfs - i - 1) * sizeof *v->cfs);
      v->ncfs--;
      break;
    }
}

static int apply_decoded(rdb_version_t *v, const edit_t *e, const char *where, err_t *err) {
  if (v->edits == 0 && !find_cf(v, 0) && add_cf(v, 0, "default", 7, NULL))
    return err_set(err, BFH_E_NOMEM, "%s: out of memory", where);
  v->edits++;
  if (e->cf_add) {
    if (find_cf(v, e->cf))
      return err_set(err, BFH_E_CORRUPT, "%s: column family %u added twice", where,
                     (unsigned)e->cf);
    if (add_cf(v, e->cf, (const char *)e->cf_name, e->cf_name_len, NULL))
      return err_set(err, BFH_E_NOMEM, "%s: out of memory", where);
    if (v->max_column_family < e->cf) v->max_column_family = e->cf;
  }
  rdb_cf_t *c = find_cf(v, e->cf);
  if (!c)
    return err_set(err, BFH_E_CORRUPT, "%s: edit of column family %u, which does not exist", where,
                   (unsigned)e->cf);
  if (e->cf_drop) {
    if (e->cf == 0)
      return err_set(err, BFH_E_CORRUPT, "%s: edit drops the default column family", where);
    drop_cf(v, e->cf);
    c = NULL;
  }
  if (e->has_db_id) {
    char *id = dup_mem(e->db_id, e->db_id_len, 1);
    if (!id) return err_set(err, BFH_E_NOMEM, "%s: out of memory", where);
    free(v->db_id);
    v->db_id = id;
  }
  if (e->has_next_file) v->next_file = e->next_file;
  if (e->has_last_seq) v->last_sequence = e->last_seq;
  if (e->has_prev_log) v->prev_log_number = e->prev_log;
  if (e->has_max_cf && e->max_cf > v->max_column_family) v->max_column_family = e->max_cf;
  if (e->has_min_log && e->min_log > v->min_log_number_to_keep)
    v->min_log_number_to_keep = e->min_log;
  if (!c) return BFH_OK; /* a dropped column family's other fields are moot */
  if (e->has_comparator) {
    char *name = dup_mem(e->comparator, e->comparator_len, 1);
    if (!name) return err_set(err, BFH_E_NOMEM, "%s: out of memory", where);
    free(c->comparator);
    c->comparator = name;
  }
  if (e->has_log) c->log_number = e->log_number;
  for (size_t d = 0; d < e->ndeleted; d++) { /* deletions first: a file may move levels */
    for (size_t i = 0; i < v->nfiles; i++) {
      rdb_file_t *f = &v->files[i];
      if (f->cf == e->cf && f->level == e->deleted[d].level && f->number == e->deleted[d].number) {
        file_release(f);
        v->files[i] = v->files[--v->nfiles];
        break;
      }
    }
  }
  for (size_t a = 0; a < e->nadded; a++) {
    rdb_file_t f = e->added[a];
    f.cf = e->cf;
    if (add_file(v, &f)) return err_set(err, BFH_E_NOMEM, "%s: out of memory", where);
  }
  for (size_t b = 0; b < e->nblobs; b++) {
    const rdb_blob_file_t *nb = &e->blobs[b];
    rdb_blob_file_t *have = NULL;
    for (size_t i = 0; i < v->nblobs; i++)
      if (v->blobs[i].number == nb->number) have = &v->blobs[i];
    if (!e->blob_is_garbage[b]) {
      if (have) continue;
      if (grow((void **)&v->blobs, &v->blobs_cap, v->nblobs, sizeof *v->blobs))
        return err_set(err, BFH_E_NOMEM, "%s: out of memory", where);
      v->blobs[v->nblobs] = *nb;
      v->blobs[v->nblobs++].cf = e->cf;
    } else if (have) {
      have->garbage_count += nb->garbage_count;
      have->garbage_bytes += nb->garbage_bytes;
      if (have->garbage_count >= have->count && have->garbage_bytes >= have->bytes)
        *have = v->blobs[--v->nblobs]; /* all garbage: RocksDB drops it from the version */
    }
  }
  return BFH_OK;
}

int rdb_version_apply(rdb_version_t *v, const uint8_t *p, size_t n, const char *where, err_t *err) {
  edit_t e;
  memset(&e, 0, sizeof e);
  const char *msg = edit_decode(&e, p, n);
  if (msg) {
    int code = strcmp(msg, "out of memory") == 0 ? BFH_E_NOMEM : BFH_E_CORRUPT;
    edit_release(&e);
    return err_set(err, code, "%s: version edit: %s", where, msg);
  }
  int rc = BFH_OK;
  if (e.in_group && !v->before_group) { /* the first edit of an atomic group */
    rdb_version_t *before = calloc(1, sizeof *before);
    if (!before || rdb_version_copy(before, v) != BFH_OK) {
      free(before);
      edit_release(&e);
      return err_set(err, BFH_E_NOMEM, "%s: out of memory", where);
    }
    v->before_group = before;
  } else if (e.in_group && e.group_left + 1 != v->group_left) {
    rc =
        err_set(err, BFH_E_CORRUPT, "%s: atomic group edit says %u edits remain, %u were announced",
                where, (unsigned)e.group_left, (unsigned)(v->group_left ? v->group_left - 1 : 0));
  } else if (!e.in_group && v->before_group) {
    rc = err_set(err, BFH_E_CORRUPT, "%s: atomic group cut short by an edit outside it (%u to go)",
                 where, (unsigned)v->group_left);
  }
  if (rc == BFH_OK) rc = apply_decoded(v, &e, where, err);
  if (rc == BFH_OK && e.in_group) {
    v->group_left = e.group_left;
    if (e.group_left == 0) { /* complete: keep it */
      rdb_version_release(v->before_group);
      free(v->before_group);
      v->before_group = NULL;
    }
  }
  edit_release(&e);
  return rc;
}

/* Undoes an atomic group still open: v becomes the version before it. */
static void drop_open_group(rdb_version_t *v) {
  if (!v->before_group) return;
  rdb_version_t *before = v->before_group;
  v->before_group = NULL;
  rdb_version_release(v);
  *v = *before;
  free(before);
}

/* ---- Reading the MANIFEST --------------------------------------------------------------- */

typedef struct manifest_reader {
  const char *path;
  rdb_version_t *v;
  uint64_t group_at; /* where the open atomic group's first edit starts */
} manifest_reader_t;

static int visit_edit(void *arg, const uint8_t *p, size_t n, uint64_t at, int *stopped,
                      err_t *err) {
  (void)stopped;
  manifest_reader_t *m = arg;
  char where[ERR_MSG_BYTES]; /* only a message's prefix: err_t holds no more */
  snprintf(where, sizeof where, "manifest %s: record at %llu", m->path, (unsigned long long)at);
  int open_before = m->v->before_group != NULL;
  int rc = rdb_version_apply(m->v, p, n, where, err);
  if (rc == BFH_OK && !open_before && m->v->before_group) m->group_at = at;
  return rc;
}

int rdb_version_read(env_t *io, const char *path, uint64_t offset, int flags, rdb_version_t *v,
                     uint64_t *next_offset, err_t *err) {
  manifest_reader_t m = {path, v, offset};
  uint64_t end = offset;
  int rc = rdb_log_records(io, path, "manifest", 0, offset, flags, visit_edit, &m, &end, NULL, err);
  if (rc == BFH_OK && v->before_group) { /* a group not all written: read it again next time */
    drop_open_group(v);
    end = m.group_at;
  }
  if (next_offset) *next_offset = end;
  return rc;
}

int rdb_manifest_current(env_t *io, const char *dir, char **manifest, err_t *err) {
  *manifest = NULL;
  size_t dn = strlen(dir);
  char *cur = malloc(dn + 16);
  if (!cur) return err_set(err, BFH_E_NOMEM, "CURRENT in %s: out of memory", dir);
  snprintf(cur, dn + 16, "%s/CURRENT", dir);
  if (!env_exists(io, cur)) {
    free(cur);
    return err_set(err, BFH_NOT_FOUND, "CURRENT in %s: no such file", dir);
  }
  void *data = NULL;
  size_t n = 0;
  int rc = env_read_file(io, cur, &data, &n, err);
  free(cur);
  if (rc != BFH_OK) return err_prefix(err, "CURRENT in %s: ", dir);
  const char *s = data;
  int ok = n > 10 && n < 64 && s[n - 1] == '\n' && memcmp(s, "MANIFEST-", 9) == 0;
  for (size_t i = 9; ok && i < n - 1; i++)
    if (s[i] < '0' || s[i] > '9') ok = 0;
  if (!ok) {
    free(data);
    return err_set(err, BFH_E_CORRUPT,
                   "CURRENT in %s: does not name a MANIFEST-NNNNNN followed by a newline", dir);
  }
  size_t len = dn + 1 + (n - 1) + 1;
  char *path = malloc(len);
  if (!path) {
    free(data);
    return err_set(err, BFH_E_NOMEM, "CURRENT in %s: out of memory", dir);
  }
  snprintf(path, len, "%s/%.*s", dir, (int)(n - 1), s);
  free(data);
  *manifest = path;
  return BFH_OK;
}

int rdb_version_load(env_t *io, const char *dir, int flags, rdb_version_t *v, char **manifest,
                     uint64_t *next_offset, err_t *err) {
  memset(v, 0, sizeof *v);
  if (manifest) *manifest = NULL;
  char *path = NULL;
  int rc = rdb_manifest_current(io, dir, &path, err);
  if (rc != BFH_OK) return rc;
  rc = rdb_version_read(io, path, 0, flags, v, next_offset, err);
  if (rc == BFH_OK && !find_cf(v, 0))
    rc = err_set(err, BFH_E_CORRUPT, "manifest %s: holds no version edit", path);
  if (rc != BFH_OK) {
    rdb_version_release(v);
    free(path);
    return rc;
  }
  if (manifest)
    *manifest = path;
  else
    free(path);
  return BFH_OK;
}

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

int rdb_version_live_logs(env_t *io, const char *dir, const rdb_version_t *v, uint64_t **numbers,
                          size_t *n, err_t *err) {
  *numbers = NULL;
  *n = 0;
  char **names = NULL;
  size_t nn = 0;
  int rc = env_list_dir(io, dir, &names, &nn, err);
  if (rc != BFH_OK) return err_prefix(err, "database %s: ", dir);
  uint64_t min = rdb_version_min_log(v);
  uint64_t *out = nn ? malloc(nn * sizeof *out) : NULL;
  if (nn && !out) {
    env_names_free(names, nn);
    return err_set(err, BFH_E_NOMEM, "database %s: out of memory", dir);
  }
  size_t k = 0;
  for (size_t i = 0; i < nn; i++) {
    uint64_t num;
    if (rdb_log_number_from_name(names[i], &num) &&
        (num >= min || (v->prev_log_number && num == v->prev_log_number)))
      out[k++] = num;
  }
  env_names_free(names, nn);
  if (k == 0) {
    free(out);
    return BFH_OK;
  }
  qsort(out, k, sizeof *out, cmp_u64);
  *numbers = out;
  *n = k;
  return BFH_OK;
}

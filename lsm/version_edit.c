#include "lsm/version_edit.h"

#include <stdlib.h>
#include <string.h>

#include "lsm/internal_key.h"
#include "lsm/table.h"
#include "util/coding.h"

enum {
  TAG_LOG_NUMBER = 1,
  TAG_NEXT_FILE = 2,
  TAG_LAST_SEQUENCE = 3,
  TAG_COMPACT_POINTER = 4,
  TAG_DELETED_FILE = 5,
  TAG_NEW_FILE = 6,
  TAG_FORMAT_VERSION = 7,
  TAG_LOG_CLOSED = 8,
  TAG_FILE_MAX_SEQ = 9
};

lsm_file_meta_t *lsm_file_meta_create(uint64_t number, uint64_t size, const void *smallest,
                                      size_t smallest_len, const void *largest,
                                      size_t largest_len) {
  lsm_file_meta_t *f = calloc(1, sizeof *f);
  if (!f) return NULL;
  f->smallest = malloc(smallest_len ? smallest_len : 1);
  f->largest = malloc(largest_len ? largest_len : 1);
  if (!f->smallest || !f->largest) {
    lsm_file_meta_destroy(f);
    return NULL;
  }
  if (smallest_len) memcpy(f->smallest, smallest, smallest_len);
  if (largest_len) memcpy(f->largest, largest, largest_len);
  f->smallest_len = smallest_len;
  f->largest_len = largest_len;
  f->number = number;
  f->size = size;
  f->max_seq = LSM_SEQ_UNKNOWN;
  return f;
}

void lsm_file_meta_destroy(lsm_file_meta_t *f) {
  if (!f) return;
  table_unref(atomic_load_explicit(&f->table, memory_order_acquire));
  free(f->smallest);
  free(f->largest);
  free(f);
}

void lsm_version_edit_init(lsm_version_edit_t *e) {
  memset(e, 0, sizeof *e);
}

void lsm_version_edit_release(lsm_version_edit_t *e) {
  for (size_t i = 0; i < e->npointers; i++) free(e->pointers[i].key);
  for (size_t i = 0; i < e->nadded; i++) lsm_file_meta_destroy(e->added[i].meta);
  free(e->pointers);
  free(e->deleted);
  free(e->added);
  lsm_version_edit_init(e);
}

void lsm_version_edit_set_log_number(lsm_version_edit_t *e, uint64_t n) {
  e->has_log_number = 1;
  e->log_number = n;
}

void lsm_version_edit_set_next_file(lsm_version_edit_t *e, uint64_t n) {
  e->has_next_file = 1;
  e->next_file = n;
}

void lsm_version_edit_set_last_sequence(lsm_version_edit_t *e, uint64_t s) {
  e->has_last_sequence = 1;
  e->last_sequence = s;
}

void lsm_version_edit_set_log_closed(lsm_version_edit_t *e, uint64_t number, uint64_t size) {
  e->has_log_closed = 1;
  e->closed_log = number;
  e->closed_log_size = size;
}

int lsm_version_edit_set_compact_pointer(lsm_version_edit_t *e, int level, const void *key,
                                         size_t len) {
  lsm_compact_pointer_t *p = realloc(e->pointers, (e->npointers + 1) * sizeof *p);
  if (!p) return ST_E_NOMEM;
  e->pointers = p;
  uint8_t *k = malloc(len ? len : 1);
  if (!k) return ST_E_NOMEM;
  if (len) memcpy(k, key, len);
  p[e->npointers++] = (lsm_compact_pointer_t){level, k, len};
  return ST_OK;
}

int lsm_version_edit_delete_file(lsm_version_edit_t *e, int level, uint64_t number) {
  lsm_deleted_file_t *d = realloc(e->deleted, (e->ndeleted + 1) * sizeof *d);
  if (!d) return ST_E_NOMEM;
  e->deleted = d;
  d[e->ndeleted++] = (lsm_deleted_file_t){level, number};
  return ST_OK;
}

int lsm_version_edit_add_table(lsm_version_edit_t *e, int level, uint64_t number, uint64_t size,
                               const void *smallest, size_t smallest_len, const void *largest,
                               size_t largest_len, uint64_t max_seq) {
  lsm_new_file_t *a = realloc(e->added, (e->nadded + 1) * sizeof *a);
  if (!a) return ST_E_NOMEM;
  e->added = a;
  lsm_file_meta_t *f =
      lsm_file_meta_create(number, size, smallest, smallest_len, largest, largest_len);
  if (!f) return ST_E_NOMEM;
  f->max_seq = max_seq;
  a[e->nadded++] = (lsm_new_file_t){level, f};
  return ST_OK;
}

int lsm_version_edit_add_file(lsm_version_edit_t *e, int level, uint64_t number, uint64_t size,
                              const void *smallest, size_t smallest_len, const void *largest,
                              size_t largest_len) {
  return lsm_version_edit_add_table(e, level, number, size, smallest, smallest_len, largest,
                                    largest_len, LSM_SEQ_UNKNOWN);
}

/* ---- encoding ---------------------------------------------------------------------- */

typedef struct buf {
  uint8_t *p;
  size_t n, cap;
  int oom;
} buf_t;

static uint8_t *buf_room(buf_t *b, size_t extra) {
  if (b->oom) return NULL;
  if (b->n + extra > b->cap) {
    size_t c = b->cap ? b->cap * 2 : 64;
    while (c < b->n + extra) c *= 2;
    uint8_t *p = realloc(b->p, c);
    if (!p) {
      b->oom = 1;
      return NULL;
    }
    b->p = p;
    b->cap = c;
  }
  return b->p + b->n;
}

static void put_varint(buf_t *b, uint64_t v) {
  uint8_t *p = buf_room(b, VARINT64_MAX_BYTES);
  if (p) b->n = (size_t)(encode_varint64(p, v) - b->p);
}

static void put_bytes(buf_t *b, const void *data, size_t len) {
  put_varint(b, len);
  uint8_t *p = buf_room(b, len);
  if (!p) return;
  if (len) memcpy(p, data, len);
  b->n += len;
}

int lsm_version_edit_encode(const lsm_version_edit_t *e, uint8_t **out, size_t *len) {
  buf_t b = {0};
  if (e->has_format_version) {
    put_varint(&b, TAG_FORMAT_VERSION);
    put_varint(&b, e->format_version);
  }
  if (e->has_log_number) {
    put_varint(&b, TAG_LOG_NUMBER);
    put_varint(&b, e->log_number);
  }
  if (e->has_next_file) {
    put_varint(&b, TAG_NEXT_FILE);
    put_varint(&b, e->next_file);
  }
  if (e->has_last_sequence) {
    put_varint(&b, TAG_LAST_SEQUENCE);
    put_varint(&b, e->last_sequence);
  }
  if (e->has_log_closed) {
    put_varint(&b, TAG_LOG_CLOSED);
    put_varint(&b, e->closed_log);
    put_varint(&b, e->closed_log_size);
  }
  for (size_t i = 0; i < e->npointers; i++) {
    put_varint(&b, TAG_COMPACT_POINTER);
    put_varint(&b, (uint64_t)e->pointers[i].level);
    put_bytes(&b, e->pointers[i].key, e->pointers[i].len);
  }
  for (size_t i = 0; i < e->ndeleted; i++) {
    put_varint(&b, TAG_DELETED_FILE);
    put_varint(&b, (uint64_t)e->deleted[i].level);
    put_varint(&b, e->deleted[i].number);
  }
  for (size_t i = 0; i < e->nadded; i++) {
    const lsm_file_meta_t *f = e->added[i].meta;
    put_varint(&b, TAG_NEW_FILE);
    put_varint(&b, (uint64_t)e->added[i].level);
    put_varint(&b, f->number);
    put_varint(&b, f->size);
    put_bytes(&b, f->smallest, f->smallest_len);
    put_bytes(&b, f->largest, f->largest_len);
    if (f->max_seq != LSM_SEQ_UNKNOWN) {
      put_varint(&b, TAG_FILE_MAX_SEQ);
      put_varint(&b, f->max_seq);
    }
  }
  if (b.oom || !buf_room(&b, 1)) {
    free(b.p);
    return ST_E_NOMEM;
  }
  *out = b.p;
  *len = b.n;
  return ST_OK;
}

/* ---- decoding ---------------------------------------------------------------------- */

typedef struct reader {
  const uint8_t *base, *p, *end;
} reader_t;

static int get_varint(reader_t *r, uint64_t *v) {
  const uint8_t *q = decode_varint64(r->p, r->end, v);
  if (!q) return 0;
  r->p = q;
  return 1;
}

static int get_level(reader_t *r, int *level) {
  uint64_t v;
  if (!get_varint(r, &v) || v >= LSM_NUM_LEVELS) return 0;
  *level = (int)v;
  return 1;
}

static int get_bytes(reader_t *r, const uint8_t **data, size_t *len) {
  uint64_t n;
  if (!get_varint(r, &n) || n > (uint64_t)(r->end - r->p)) return 0;
  *data = r->p;
  *len = (size_t)n;
  r->p += n;
  return 1;
}

int lsm_version_edit_decode(lsm_version_edit_t *e, const uint8_t *p, size_t n, const char *where,
                            err_t *err) {
  /* n == 0 may come with p == NULL (an empty record), where p + n is undefined. */
  reader_t r = {p, p, n ? p + n : p};
  const char *what = NULL;
  while (r.p < r.end) {
    const uint8_t *field = r.p;
    uint64_t tag, v;
    int level, rc = ST_OK;
    const uint8_t *k1, *k2;
    size_t l1, l2;
    uint64_t number, size;
    if (!get_varint(&r, &tag)) {
      what = "tag";
      goto bad;
    }
    switch (tag) {
      case TAG_FORMAT_VERSION:
        if (!get_varint(&r, &v) || v > UINT32_MAX) {
          what = "format version";
          goto bad;
        }
        e->has_format_version = 1;
        e->format_version = (uint32_t)v;
        break;
      case TAG_LOG_NUMBER:
        if (!get_varint(&r, &v)) {
          what = "log number";
          goto bad;
        }
        lsm_version_edit_set_log_number(e, v);
        break;
      case TAG_LOG_CLOSED:
        if (!get_varint(&r, &number) || !get_varint(&r, &size)) {
          what = "closed log";
          goto bad;
        }
        lsm_version_edit_set_log_closed(e, number, size);
        break;
      case TAG_NEXT_FILE:
        if (!get_varint(&r, &v)) {
          what = "next file number";
          goto bad;
        }
        lsm_version_edit_set_next_file(e, v);
        break;
      case TAG_LAST_SEQUENCE:
        if (!get_varint(&r, &v)) {
          what = "last sequence";
          goto bad;
        }
        lsm_version_edit_set_last_sequence(e, v);
        break;
      case TAG_COMPACT_POINTER:
        /* Keys are internal keys: compared by internal_key_compare, which needs the tag. */
        if (!get_level(&r, &level) || !get_bytes(&r, &k1, &l1) || l1 < INTERNAL_KEY_TAG_BYTES) {
          what = "compact pointer";
          goto bad;
        }
        rc = lsm_version_edit_set_compact_pointer(e, level, k1, l1);
        break;
      case TAG_DELETED_FILE:
        if (!get_level(&r, &level) || !get_varint(&r, &number)) {
          what = "deleted file";
          goto bad;
        }
        rc = lsm_version_edit_delete_file(e, level, number);
        break;
      case TAG_NEW_FILE:
        if (!get_level(&r, &level) || !get_varint(&r, &number) || !get_varint(&r, &size) ||
            !get_bytes(&r, &k1, &l1) || !get_bytes(&r, &k2, &l2) || l1 < INTERNAL_KEY_TAG_BYTES ||
            l2 < INTERNAL_KEY_TAG_BYTES) {
          what = "new file";
          goto bad;
        }
        rc = lsm_version_edit_add_file(e, level, number, size, k1, l1, k2, l2);
        break;
      case TAG_FILE_MAX_SEQ: /* qualifies the NEW_FILE just before it */
        if (!get_varint(&r, &v) || e->nadded == 0 || v == LSM_SEQ_UNKNOWN ||
            e->added[e->nadded - 1].meta->max_seq != LSM_SEQ_UNKNOWN) {
          what = "file max sequence";
          goto bad;
        }
        e->added[e->nadded - 1].meta->max_seq = v;
        break;
      default:
        r.p = field;
        what = "unknown tag";
        goto bad;
    }
    if (rc != ST_OK) return err_set(err, rc, "%s: out of memory decoding a version edit", where);
    continue;
  bad:
    return err_set(err, ST_E_CORRUPT, "%s: version edit byte %zu: bad %s", where,
                   (size_t)(field - r.base), what);
  }
  return ST_OK;
}

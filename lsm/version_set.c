#include "lsm/version_set.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lsm/filename.h"
#include "lsm/internal_key.h"
#include "util/path.h"

/* ---- versions ---------------------------------------------------------------------- */

static lsm_version_t *version_new(lsm_version_set_t *vs) {
  lsm_version_t *v = calloc(1, sizeof *v);
  if (!v) return NULL;
  v->vs = vs;
  v->score_level = -1;
  return v;
}

/* Frees v's arrays and drops its references to files (v is not on the list). */
static void version_free(lsm_version_t *v) {
  for (int l = 0; l < LSM_NUM_LEVELS; l++) {
    for (size_t i = 0; i < v->nfiles[l]; i++) {
      lsm_file_meta_t *f = v->files[l][i];
      if (--f->refs == 0) {
        (void)u64vec_push(&v->vs->obsolete, f->number); /* best effort: a miss leaks a file
                                                           until the next open */
        lsm_file_meta_destroy(f);
      }
    }
    free(v->files[l]);
  }
  free(v);
}

void lsm_version_ref(lsm_version_t *v) {
  v->refs++;
}

void lsm_version_unref(lsm_version_t *v) {
  if (!v || --v->refs > 0) return;
  v->prev->next = v->next;
  v->next->prev = v->prev;
  version_free(v);
}

static void version_append(lsm_version_set_t *vs, lsm_version_t *v) {
  v->prev = vs->list.prev;
  v->next = &vs->list;
  v->prev->next = v;
  v->next->prev = v;
}

static void install(lsm_version_set_t *vs, lsm_version_t *v) {
  version_append(vs, v);
  lsm_version_ref(v);
  lsm_version_t *old = vs->current;
  vs->current = v;
  if (old) lsm_version_unref(old);
}

uint64_t lsm_version_level_bytes(const lsm_version_t *v, int level) {
  uint64_t s = 0;
  for (size_t i = 0; i < v->nfiles[level]; i++) s += v->files[level][i]->size;
  return s;
}

uint64_t lsm_version_set_max_bytes(const lsm_version_set_t *vs, int level) {
  uint64_t b = vs->level1_bytes;
  for (int l = 1; l < level; l++) b *= 10;
  return b;
}

#define L0_COMPACTION_TRIGGER 4

static void compute_score(lsm_version_t *v) {
  double best = -1;
  int best_level = -1;
  for (int l = 0; l < LSM_NUM_LEVELS - 1; l++) {
    double s;
    if (l == 0)
      s = (double)v->nfiles[0] / L0_COMPACTION_TRIGGER;
    else
      s = (double)lsm_version_level_bytes(v, l) / (double)lsm_version_set_max_bytes(v->vs, l);
    if (s > best) {
      best = s;
      best_level = l;
    }
  }
  v->score = best;
  v->score_level = best_level;
}

static int cmp_by_number(const void *a, const void *b) {
  const lsm_file_meta_t *x = *(lsm_file_meta_t *const *)a, *y = *(lsm_file_meta_t *const *)b;
  return x->number < y->number ? -1 : x->number > y->number;
}

static int cmp_by_smallest(const void *a, const void *b) {
  const lsm_file_meta_t *x = *(lsm_file_meta_t *const *)a, *y = *(lsm_file_meta_t *const *)b;
  int c = internal_key_compare(x->smallest, x->smallest_len, y->smallest, y->smallest_len);
  if (c) return c;
  return x->number < y->number ? -1 : x->number > y->number;
}

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

/* Builds into v (empty) the files of base (may be NULL) changed by edit. Takes the new
   files' metas out of edit (steal != 0) or copies them. ST_OK, ST_E_NOMEM, or
   ST_E_CORRUPT when the edit breaks the level invariants.
   A level's files are kept sorted (level 0 by number, the others by smallest key, ties by
   number: a total order), so the base's files are already in order: only the edit's added
   files are sorted, and merged in, and only the pairs an added file is in are checked for
   overlap. Replaying a manifest of E edits over T tables then costs O(E T) pointer copies and
   O(E (a log a)) key comparisons for a added files an edit, not O(E T log T) (at 100M entries,
   1,400 tables, the sort was most of an open's CPU). */
static int version_build(lsm_version_t *v, const lsm_version_t *base, lsm_version_edit_t *edit,
                         int steal, err_t *err) {
  uint64_t *del = malloc((edit->ndeleted + 1) * sizeof *del);
  lsm_file_meta_t **add = malloc((edit->nadded + 1) * sizeof *add);
  size_t *pos = malloc((edit->nadded + 1) * sizeof *pos);
  if (!del || !add || !pos) {
    free(del);
    free(add);
    free(pos);
    return err_set(err, ST_E_NOMEM, "version: out of memory");
  }
  int rc = ST_OK;
  for (int l = 0; l < LSM_NUM_LEVELS && rc == ST_OK; l++) {
    int (*cmp)(const void *, const void *) = l == 0 ? cmp_by_number : cmp_by_smallest;
    size_t nbase = base ? base->nfiles[l] : 0, nadd = 0, ndel = 0;
    for (size_t i = 0; i < edit->nadded; i++) nadd += edit->added[i].level == l;
    for (size_t j = 0; j < edit->ndeleted; j++)
      if (edit->deleted[j].level == l) del[ndel++] = edit->deleted[j].number;
    qsort(del, ndel, sizeof *del, cmp_u64);
    lsm_file_meta_t **arr = malloc((nbase + nadd + 1) * sizeof *arr);
    if (!arr) {
      rc = err_set(err, ST_E_NOMEM, "version: out of memory");
      break;
    }
    size_t n = 0, na = 0;
    for (size_t i = 0; i < nbase; i++) {
      lsm_file_meta_t *f = base->files[l][i];
      if (!ndel || !bsearch(&f->number, del, ndel, sizeof *del, cmp_u64)) arr[n++] = f;
    }
    for (size_t i = 0; i < edit->nadded && rc == ST_OK; i++) {
      if (edit->added[i].level != l) continue;
      lsm_file_meta_t *f = edit->added[i].meta;
      if (steal) {
        edit->added[i].meta = NULL;
      } else {
        uint64_t max_seq = f->max_seq;
        f = lsm_file_meta_create(f->number, f->size, f->smallest, f->smallest_len, f->largest,
                                 f->largest_len);
        if (!f) rc = err_set(err, ST_E_NOMEM, "version: out of memory");
        if (f) f->max_seq = max_seq;
      }
      if (f) add[na++] = f;
    }
    /* The kept base files are in order; the added ones are sorted, then merged in from the
       back. */
    qsort(add, na, sizeof *add, cmp);
    size_t i = n, j = na, k = n + na;
    while (j > 0) {
      if (i > 0 && cmp(&arr[i - 1], &add[j - 1]) > 0) {
        arr[--k] = arr[--i];
      } else {
        arr[--k] = add[--j];
        pos[j] = k; /* where the added file landed */
      }
    }
    n += na;
    for (size_t q = 0; q < n; q++) arr[q]->refs++;
    v->files[l] = arr;
    v->nfiles[l] = n;
    if (rc != ST_OK) break;
    /* The base's neighbours did not overlap, and a deletion cannot make two overlap: only
       the pairs an added file is in are checked. */
    for (size_t t = 0; l > 0 && t < na && rc == ST_OK; t++) {
      for (size_t q = pos[t] ? pos[t] : 1; q <= pos[t] + 1 && q < n; q++) {
        const lsm_file_meta_t *a = arr[q - 1], *b = arr[q];
        if (bytewise_compare(a->largest, a->largest_len - 8, b->smallest, b->smallest_len - 8) >=
            0) {
          rc = err_set(err, ST_E_CORRUPT,
                       "version: level %d: tables %06" PRIu64 " and %06" PRIu64 " overlap", l,
                       a->number, b->number);
          break;
        }
      }
    }
  }
  free(del);
  free(add);
  free(pos);
  if (rc != ST_OK) return rc;
  compute_score(v);
  return ST_OK;
}

/* ---- the set ----------------------------------------------------------------------- */

int lsm_version_set_create(const char *dir, env_t *io, uint64_t level1_bytes,
                           lsm_version_set_t **out, err_t *err) {
  lsm_version_set_t *vs = calloc(1, sizeof *vs);
  if (!vs || !(vs->dir = strdup(dir))) {
    free(vs);
    return err_set(err, ST_E_NOMEM, "version set: out of memory");
  }
  vs->io = io;
  vs->level1_bytes = level1_bytes;
  vs->next_file = 1;
  vs->list.prev = vs->list.next = &vs->list;
  u64vec_init(&vs->obsolete);
  lsm_version_t *v = version_new(vs);
  if (!v) {
    lsm_version_set_destroy(vs);
    return err_set(err, ST_E_NOMEM, "version set: out of memory");
  }
  compute_score(v);
  install(vs, v);
  *out = vs;
  return ST_OK;
}

void lsm_version_set_destroy(lsm_version_set_t *vs) {
  if (!vs) return;
  if (vs->current) lsm_version_unref(vs->current);
  /* Any version still listed was leaked by a reader; free them so nothing leaks here. */
  while (vs->list.next != &vs->list) {
    lsm_version_t *v = vs->list.next;
    v->prev->next = v->next;
    v->next->prev = v->prev;
    version_free(v);
  }
  (void)log_writer_close(vs->manifest, NULL);
  for (int l = 0; l < LSM_NUM_LEVELS; l++) free(vs->compact_pointer[l]);
  u64vec_release(&vs->obsolete);
  free(vs->dir);
  free(vs);
}

static int set_compact_pointer(lsm_version_set_t *vs, int level, const uint8_t *key, size_t len) {
  uint8_t *k = malloc(len ? len : 1);
  if (!k) return ST_E_NOMEM;
  if (len) memcpy(k, key, len);
  free(vs->compact_pointer[level]);
  vs->compact_pointer[level] = k;
  vs->compact_pointer_len[level] = len;
  return ST_OK;
}

/* Takes the scalar fields and compact pointers of e into vs. */
static int absorb_fields(lsm_version_set_t *vs, const lsm_version_edit_t *e) {
  if (e->has_log_number) vs->log_number = e->log_number;
  if (e->has_next_file && e->next_file > vs->next_file) vs->next_file = e->next_file;
  if (e->has_last_sequence && e->last_sequence > vs->last_sequence)
    vs->last_sequence = e->last_sequence;
  for (size_t i = 0; i < e->npointers; i++)
    if (set_compact_pointer(vs, e->pointers[i].level, e->pointers[i].key, e->pointers[i].len))
      return ST_E_NOMEM;
  return ST_OK;
}

int lsm_version_set_recover(lsm_version_set_t *vs, err_t *err) {
  char *path = lsm_filename_current(vs->dir);
  if (!path) return err_set(err, ST_E_NOMEM, "%s/CURRENT: no memory for its path", vs->dir);
  void *cur = NULL;
  size_t cur_len = 0;
  int rc = env_read_file(vs->io, path, &cur, &cur_len, err);
  if (rc != ST_OK) {
    free(path);
    return rc;
  }
  uint64_t mnum = 0;
  lsm_file_type_t type;
  char *text = cur;
  if (cur_len < 2 || text[cur_len - 1] != '\n' || memchr(text, '\0', cur_len)) {
    free(cur);
    rc = err_set(err, ST_E_CORRUPT, "%s: at offset 0: not a manifest name", path);
    free(path);
    return rc;
  }
  text[cur_len - 1] = '\0';
  if (!lsm_filename_parse(text, &mnum, &type) || type != LSM_FILE_MANIFEST) {
    free(cur);
    rc = err_set(err, ST_E_CORRUPT, "%s: at offset 0: not a manifest name", path);
    free(path);
    return rc;
  }
  free(cur);

  free(path);
  if (!(path = lsm_filename_manifest(vs->dir, mnum)))
    return err_set(err, ST_E_NOMEM, "%s: no memory for the path of MANIFEST-%06" PRIu64, vs->dir,
                   mnum);
  log_reader_t *r = NULL;
  if (!env_exists(vs->io, path))
    rc = err_set(err, ST_E_CORRUPT, "%s/CURRENT: names %s, which does not exist", vs->dir, path);
  else
    rc = log_reader_open(vs->io, path, &r, err);
  if (rc != ST_OK) {
    free(path);
    return rc;
  }

  /* Accumulate the files in a scratch version built edit by edit. */
  lsm_version_t *v = version_new(vs);
  if (!v) {
    log_reader_close(r);
    free(path);
    return err_set(err, ST_E_NOMEM, "manifest: out of memory");
  }
  int have_log = 0, have_next = 0, have_last = 0, records = 0;
  for (;;) {
    const void *data;
    size_t n;
    rc = log_reader_next(r, &data, &n, err);
    if (rc == ST_NOT_FOUND) {
      rc = ST_OK;
      break;
    }
    if (rc != ST_OK) break;
    char *where = path_fmt("%s: record at offset %" PRIu64, path, log_reader_record_offset(r));
    if (!where) {
      rc = err_set(err, ST_E_NOMEM, "manifest: out of memory");
      break;
    }
    lsm_version_edit_t e;
    lsm_version_edit_init(&e);
    rc = lsm_version_edit_decode(&e, data, n, where, err);
    if (rc == ST_OK && records == 0 && !e.has_format_version)
      rc = err_set(err, ST_E_CORRUPT, "%s: first edit has no format version", where);
    if (rc == ST_OK && e.has_format_version && e.format_version != LSM_FORMAT_VERSION)
      rc = err_set(err, ST_E_UNSUPPORTED,
                   "%s: manifest format version %u is not supported (this build reads %u)", where,
                   e.format_version, LSM_FORMAT_VERSION);
    if (rc == ST_OK) rc = absorb_fields(vs, &e);
    if (rc == ST_OK) {
      lsm_version_t *nv = version_new(vs);
      if (!nv) {
        rc = err_set(err, ST_E_NOMEM, "manifest: out of memory");
      } else {
        rc = version_build(nv, v, &e, 1, err);
        if (rc != ST_OK) err_prefix(err, "%s: ", where);
        lsm_version_t *drop = rc == ST_OK ? v : nv;
        if (rc == ST_OK) v = nv;
        version_free(drop);
      }
    }
    vs->has_closed_log = e.has_log_closed; /* only the last record can say so */
    vs->closed_log = e.closed_log;
    vs->closed_log_size = e.closed_log_size;
    have_log |= e.has_log_number;
    have_next |= e.has_next_file;
    have_last |= e.has_last_sequence;
    lsm_version_edit_release(&e);
    free(where);
    records++;
    if (rc != ST_OK) break;
  }
  vs->manifest_dropped = log_reader_dropped_bytes(r);
  vs->manifest_valid_end = log_reader_end_offset(r);
  if (vs->manifest_dropped) vs->has_closed_log = 0; /* the close record may be what is gone */
  log_reader_close(r);
  if (rc == ST_OK && (!have_log || !have_next || !have_last))
    rc = err_set(err, ST_E_CORRUPT, "%s: manifest lacks the %s", path,
                 !have_log    ? "log number"
                 : !have_next ? "next file number"
                              : "last sequence");
  free(path);
  if (rc != ST_OK) {
    version_free(v);
    vs->obsolete.n = 0;
    return rc;
  }
  vs->obsolete.n = 0; /* scratch versions dropped nothing that was ever on disk-live */
  if (vs->next_file <= mnum) vs->next_file = mnum + 1;
  vs->manifest_number = mnum;
  install(vs, v);
  return ST_OK;
}

/* The edit that describes the whole current state. */
static int snapshot_edit(lsm_version_set_t *vs, lsm_version_edit_t *e) {
  e->has_format_version = 1;
  e->format_version = LSM_FORMAT_VERSION;
  lsm_version_edit_set_log_number(e, vs->log_number);
  lsm_version_edit_set_next_file(e, vs->next_file);
  lsm_version_edit_set_last_sequence(e, vs->last_sequence);
  for (int l = 0; l < LSM_NUM_LEVELS; l++) {
    if (vs->compact_pointer[l] && lsm_version_edit_set_compact_pointer(e, l, vs->compact_pointer[l],
                                                                       vs->compact_pointer_len[l]))
      return ST_E_NOMEM;
    for (size_t i = 0; i < vs->current->nfiles[l]; i++) {
      const lsm_file_meta_t *f = vs->current->files[l][i];
      if (lsm_version_edit_add_table(e, l, f->number, f->size, f->smallest, f->smallest_len,
                                     f->largest, f->largest_len, f->max_seq))
        return ST_E_NOMEM;
    }
  }
  return ST_OK;
}

static int add_record(log_writer_t *w, const lsm_version_edit_t *e, err_t *err) {
  uint8_t *rec;
  size_t n;
  if (lsm_version_edit_encode(e, &rec, &n) != ST_OK)
    return err_set(err, ST_E_NOMEM, "manifest: out of memory");
  int rc = log_writer_add(w, rec, n, 1, err);
  free(rec);
  return rc;
}

static int set_current(lsm_version_set_t *vs, uint64_t mnum, err_t *err) {
  char *tmp = lsm_filename_temp(vs->dir), *cur = lsm_filename_current(vs->dir), text[64];
  int n = snprintf(text, sizeof text, "MANIFEST-%06" PRIu64 "\n", mnum);
  int rc = tmp && cur ? env_write_file(vs->io, tmp, text, (size_t)n, err)
                      : err_set(err, ST_E_NOMEM, "%s/CURRENT: no memory for its path", vs->dir);
  if (rc == ST_OK) rc = env_rename(vs->io, tmp, cur, err);
  if (rc == ST_OK) rc = env_sync_dir(vs->io, vs->dir, err);
  if (rc != ST_OK && tmp) (void)env_unlink(vs->io, tmp, NULL);
  free(tmp);
  free(cur);
  return rc;
}

/* Creates a new manifest with a snapshot edit and switches CURRENT to it. On success the
   set's manifest writer is the new one. */
static int new_manifest(lsm_version_set_t *vs, err_t *err) {
  uint64_t mnum = lsm_version_set_new_file_number(vs);
  char *path = lsm_filename_manifest(vs->dir, mnum);
  lsm_version_edit_t e;
  lsm_version_edit_init(&e);
  log_writer_t *w = NULL;
  int rc = path ? snapshot_edit(vs, &e) : ST_E_NOMEM;
  if (rc != ST_OK) rc = err_set(err, rc, "manifest: out of memory");
  if (rc == ST_OK) rc = log_writer_open(vs->io, path, &w, err);
  if (rc == ST_OK) rc = add_record(w, &e, err);
  if (rc == ST_OK) rc = set_current(vs, mnum, err);
  lsm_version_edit_release(&e);
  if (rc != ST_OK) {
    (void)log_writer_close(w, NULL);
    if (path) (void)env_unlink(vs->io, path, NULL);
    free(path);
    return rc;
  }
  free(path);
  (void)log_writer_close(vs->manifest, NULL);
  vs->manifest = w;
  vs->manifest_number = mnum;
  return ST_OK;
}

int lsm_version_set_write_snapshot(lsm_version_set_t *vs, err_t *err) {
  return new_manifest(vs, err);
}

int lsm_version_set_log_and_apply(lsm_version_set_t *vs, lsm_version_edit_t *edit,
                                  pthread_mutex_t *mu, err_t *err) {
  int rc = ST_OK;
  /* After a failed write the manifest may end in a partial record: start a new one (its
     snapshot holds the current state; this edit follows as the next record). */
  if (!vs->manifest) rc = new_manifest(vs, err);
  if (rc != ST_OK) return err_prefix(err, "manifest: ");
  if (!edit->has_log_number) lsm_version_edit_set_log_number(edit, vs->log_number);
  lsm_version_edit_set_next_file(edit, vs->next_file);
  lsm_version_edit_set_last_sequence(edit, vs->last_sequence);
  lsm_version_t *v = version_new(vs);
  if (!v) return err_set(err, ST_E_NOMEM, "version: out of memory");
  rc = version_build(v, vs->current, edit, 0, err);
  if (rc != ST_OK) {
    version_free(v);
    return rc;
  }
  /* The record is written and fsynced without the mutex: readers and writers go on. */
  log_writer_t *w = vs->manifest;
  pthread_mutex_unlock(mu);
  rc = add_record(w, edit, err);
  pthread_mutex_lock(mu);
  if (rc != ST_OK) {
    (void)log_writer_close(vs->manifest, NULL);
    vs->manifest = NULL;
    version_free(v);
    return err_prefix(err, "manifest: ");
  }
  for (size_t i = 0; i < edit->npointers; i++)
    (void)set_compact_pointer(vs, edit->pointers[i].level, edit->pointers[i].key,
                              edit->pointers[i].len);
  vs->log_number = edit->log_number;
  install(vs, v);
  return ST_OK;
}

int lsm_version_set_live_files(const lsm_version_set_t *vs, u64vec_t *out) {
  out->n = 0;
  for (const lsm_version_t *v = vs->list.next; v != &vs->list; v = v->next)
    for (int l = 0; l < LSM_NUM_LEVELS; l++)
      for (size_t i = 0; i < v->nfiles[l]; i++)
        if (u64vec_push(out, v->files[l][i]->number)) return ST_E_NOMEM;
  u64vec_sort(out);
  return ST_OK;
}

/* ---- lookups by key range ---------------------------------------------------------- */

size_t lsm_version_find_file(const lsm_version_t *v, int level, const void *ukey, size_t ulen) {
  size_t lo = 0, hi = v->nfiles[level];
  lsm_file_meta_t *const *files = v->files[level];
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    const lsm_file_meta_t *f = files[mid];
    if (bytewise_compare(f->largest, f->largest_len - 8, ukey, ulen) < 0)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

/* 1 if f's user-key range and [lo, hi] intersect (NULL bounds are open). */
static int file_overlaps(const lsm_file_meta_t *f, const void *lo, size_t lo_len, const void *hi,
                         size_t hi_len) {
  if (lo && bytewise_compare(f->largest, f->largest_len - 8, lo, lo_len) < 0) return 0;
  if (hi && bytewise_compare(f->smallest, f->smallest_len - 8, hi, hi_len) > 0) return 0;
  return 1;
}

int lsm_version_overlaps(const lsm_version_t *v, int level, const void *lo, size_t lo_len,
                         const void *hi, size_t hi_len) {
  if (level == 0) {
    for (size_t i = 0; i < v->nfiles[0]; i++)
      if (file_overlaps(v->files[0][i], lo, lo_len, hi, hi_len)) return 1;
    return 0;
  }
  size_t i = lo ? lsm_version_find_file(v, level, lo, lo_len) : 0;
  return i < v->nfiles[level] && file_overlaps(v->files[level][i], lo, lo_len, hi, hi_len);
}

int lsm_version_overlapping_files(const lsm_version_t *v, int level, const void *lo, size_t lo_len,
                                  const void *hi, size_t hi_len, lsm_file_meta_t ***out,
                                  size_t *n) {
  size_t cap = v->nfiles[level] + 1, k = 0;
  lsm_file_meta_t **arr = malloc(cap * sizeof *arr);
  if (!arr) return ST_E_NOMEM;
  if (level == 0) {
    /* An L0 file that overlaps widens the range; restart until it is stable. */
    const void *clo = lo, *chi = hi;
    size_t clo_len = lo_len, chi_len = hi_len;
    for (size_t i = 0; i < v->nfiles[0];) {
      const lsm_file_meta_t *f = v->files[0][i++];
      if (!file_overlaps(f, clo, clo_len, chi, chi_len)) continue;
      int restart = 0;
      if (clo && bytewise_compare(f->smallest, f->smallest_len - 8, clo, clo_len) < 0) {
        clo = f->smallest;
        clo_len = f->smallest_len - 8;
        restart = 1;
      }
      if (chi && bytewise_compare(f->largest, f->largest_len - 8, chi, chi_len) > 0) {
        chi = f->largest;
        chi_len = f->largest_len - 8;
        restart = 1;
      }
      if (restart) {
        k = 0;
        i = 0;
      } else {
        arr[k++] = (lsm_file_meta_t *)f;
      }
    }
  } else {
    size_t i = lo ? lsm_version_find_file(v, level, lo, lo_len) : 0;
    for (; i < v->nfiles[level]; i++) {
      lsm_file_meta_t *f = v->files[level][i];
      if (hi && bytewise_compare(f->smallest, f->smallest_len - 8, hi, hi_len) > 0) break;
      arr[k++] = f;
    }
  }
  *out = arr;
  *n = k;
  return ST_OK;
}

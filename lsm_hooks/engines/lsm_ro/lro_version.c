/* The live tables as the MANIFEST's edits leave them (lro_internal.h): an array sorted by
   number, changed edit by edit (a new table's number is almost always the largest: an append). */
#include <stdlib.h>
#include <string.h>

#include "lsm_hooks/engines/lsm_ro/lro_internal.h"
#include "util/sort.h"

static void file_release(lro_file_t *f) {
  free(f->smallest);
  free(f->largest);
}

void lro_version_release(lro_version_t *v) {
  for (size_t i = 0; i < v->n; i++) file_release(&v->files[i]);
  free(v->files);
  memset(v, 0, sizeof *v);
}

/* The first slot whose number is >= number. */
static size_t lower_bound(const lro_version_t *v, uint64_t number) {
  return U64_LOWER_BOUND(v->files, v->n, number, number);
}

static int add(lro_version_t *v, int level, const lsm_file_meta_t *m, const char *where,
               err_t *err) {
  size_t at = lower_bound(v, m->number);
  if (at < v->n && v->files[at].number == m->number)
    return err_set(err, BFH_E_CORRUPT, "%s: adds table %06llu, live already", where,
                   (unsigned long long)m->number);
  if (v->n == v->cap) {
    size_t cap = v->cap ? 2 * v->cap : 64;
    lro_file_t *p = realloc(v->files, cap * sizeof *p);
    if (!p) return err_set(err, BFH_E_NOMEM, "%s: no memory for the version", where);
    v->files = p;
    v->cap = cap;
  }
  lro_file_t f = {.number = m->number, .size = m->size, .level = level, .max_seq = m->max_seq};
  f.smallest = malloc(m->smallest_len ? m->smallest_len : 1);
  f.largest = malloc(m->largest_len ? m->largest_len : 1);
  if (!f.smallest || !f.largest) {
    file_release(&f);
    return err_set(err, BFH_E_NOMEM, "%s: no memory for the version", where);
  }
  memcpy(f.smallest, m->smallest, m->smallest_len);
  memcpy(f.largest, m->largest, m->largest_len);
  f.smallest_len = m->smallest_len;
  f.largest_len = m->largest_len;
  memmove(&v->files[at + 1], &v->files[at], (v->n - at) * sizeof *v->files);
  v->files[at] = f;
  v->n++;
  return BFH_OK;
}

int lro_version_apply(lro_version_t *v, const lsm_version_edit_t *e, const char *where,
                      err_t *err) {
  for (size_t i = 0; i < e->ndeleted; i++) {
    size_t j = lower_bound(v, e->deleted[i].number);
    if (j == v->n || v->files[j].number != e->deleted[i].number)
      return err_set(err, BFH_E_CORRUPT, "%s: deletes table %06llu, not live", where,
                     (unsigned long long)e->deleted[i].number);
    file_release(&v->files[j]);
    memmove(&v->files[j], &v->files[j + 1], (v->n - j - 1) * sizeof *v->files);
    v->n--;
  }
  for (size_t i = 0; i < e->nadded; i++) {
    int rc = add(v, e->added[i].level, e->added[i].meta, where, err);
    if (rc != BFH_OK) return rc;
  }
  if (e->has_log_number) {
    v->has_log_number = 1;
    v->log_number = e->log_number;
  }
  return BFH_OK;
}
